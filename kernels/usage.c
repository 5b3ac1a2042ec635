/*
 * usage.c - a kernel's live usage (kh_kernel_usage): the kernel's current
 * scheduler job measured by sched_job_usage (cgroup, NVML, metering), for
 * GET /api/v1/kernels/{id}/usage, the notebook's meters and the kernels
 * panel. Ownership is checked as everywhere in the hub (ED_ENOTFOUND for
 * another user's kernel); an admin may read any kernel.
 */
#include "kh.h"
#include "kh_int.h"

#include "ed_error.h"
#include "sched.h"

#include <stdio.h>
#include <string.h>

/* The owner of kernel `id` (alive in memory, or its row), 0 when none. */
static int64_t owner_of(kh_hub *h, const char *id)
{
    sqlite3_stmt *q = NULL;
    int64_t owner = 0;
    kh__k *k;

    kh__lock(&h->mu);
    if ((k = kh__find_locked(h, id)) != NULL)
        owner = k->user_id;
    kh__unlock(&h->mu);
    if (owner > 0)
        return owner;
    if (ed_store_prepare(&q, h->cfg.store, "SELECT user_id FROM kernels WHERE id = ?1") < 0)
        return 0;
    sqlite3_bind_text(q, 1, id, -1, SQLITE_STATIC);
    if (sqlite3_step(q) == SQLITE_ROW)
        owner = sqlite3_column_int64(q, 0);
    sqlite3_finalize(q);
    return owner;
}

int kh_kernel_usage(struct sched_usage *out, kh_kernel *out_k, kh_hub *h, int64_t user_id, bool any_user,
                    const char *id)
{
    kh_kernel k;
    int64_t owner = user_id;
    int err;

    memset(out, 0, sizeof(*out));
    if (h == NULL || id == NULL || strlen(id) >= KH_ID_LEN)
        return ed_error_set(ED_ENOTFOUND, "no kernel %.40s", id ? id : "");
    if (any_user && (owner = owner_of(h, id)) <= 0)
        return ed_error_set(ED_ENOTFOUND, "no kernel %.40s", id);
    if ((err = kh_kernel_get(&k, h, owner, id)) < 0)
        return err;
    if (out_k)
        *out_k = k;
    if (k.job_id > 0 && strcmp(k.status, "queued") != 0)
        return sched_job_usage(out, h->cfg.sched, owner, k.job_id);
    /* no process to measure yet */
    out->user_id = owner;
    snprintf(out->status, sizeof(out->status), "%s", k.status);
    snprintf(out->resource, sizeof(out->resource), "%s", k.resource);
    out->cpu_percent = out->cpu_limit_cores = -1;
    out->memory_bytes = out->memory_limit_bytes = out->memory_peak_bytes = -1;
    return 0;
}
