/*
 * resources.c - configuration, device discovery and resource classes.
 *
 * GPUs are discovered at run time through NVML, opened with dlopen
 * (gpu_nvml.c; $EDDY_NVML_LIB, else libnvidia-ml.so.1). The binary never
 * links it, so it runs on CPU hosts, where GPU classes have capacity 0
 * unless configured with simulated devices.
 */
#include "sched.h"
#include "sched_int.h"

#include "ed_error.h"
#include "ed_time.h"
#include "quota.h"

#include <ctype.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int env_int(int64_t *out, const char *name, int64_t lo, int64_t hi)
{
    const char *v = getenv(name);
    char *end;
    long long x;

    if (v == NULL || *v == '\0')
        return 0;
    x = strtoll(v, &end, 10);
    if (*end != '\0' || x < lo || x > hi)
        return ed_error_set(ED_EINVAL, "%s=%s: expected an integer in %lld..%lld", name, v,
                            (long long)lo, (long long)hi);
    *out = x;
    return 0;
}

int sched_config_defaults(sched_config *c, const char *data_dir)
{
    int64_t v;
    const char *k;
    int err;

    memset(c, 0, sizeof(*c));
    snprintf(c->data_dir, sizeof(c->data_dir), "%s", data_dir ? data_dir : "data");
    c->meter_interval_ms = 60000;
    c->stop_grace_ms = 10000;
    snprintf(c->slot_dir, sizeof(c->slot_dir), "/run/eddy-sandbox");
    c->slot_base = 200000;
    c->slot_count = 1000;
    c->start_thread = true;
    c->job_retention_ms = INT64_C(7) * 86400000;   /* gw config job_retention_days */
    if ((err = env_int(&c->meter_interval_ms, "EDDY_METER_INTERVAL_MS", 1000, 86400000)) < 0)
        return err;
    c->oof_grace_ms = 2 * c->meter_interval_ms;
    if ((err = env_int(&c->oof_grace_ms, "EDDY_OOF_GRACE_MS", 0, 86400000)) < 0 ||
        (err = env_int(&c->stop_grace_ms, "EDDY_STOP_GRACE_MS", 0, 3600000)) < 0)
        return err;
    v = 0;
    if ((err = env_int(&v, "EDDY_SIM_GPUS", 0, 16)) < 0)
        return err;
    c->sim_gpus = (int)v;
    v = c->slot_base;
    if ((err = env_int(&v, "EDDY_SLOT_BASE", 1000, 4000000000LL)) < 0)
        return err;
    c->slot_base = (unsigned)v;
    if ((k = getenv("EDDY_KERNEL_BIN")) != NULL)
        snprintf(c->kernel_bin, sizeof(c->kernel_bin), "%s", k);
    /* the executor (README.md "Executor slurm") */
    {
        static const struct {
            const char *name;
            size_t      off, len;
        } strs[] = {
#define S(n, f) {n, offsetof(sched_config, f), sizeof(((sched_config *)0)->f)}
            S("EDDY_EXECUTOR", executor),           S("EDDY_SLURM_URL", slurm_url),
            S("EDDY_SLURM_TOKEN_FILE", slurm_token_file), S("EDDY_SLURM_USER", slurm_user),
            S("EDDY_SLURM_PARTITIONS", slurm_partitions), S("EDDY_SLURM_QOS", slurm_qos),
            S("EDDY_SLURM_API", slurm_api),         S("EDDY_SLURM_PYTHON", slurm_python),
#undef S
        };
        for (size_t i = 0; i < sizeof(strs) / sizeof(strs[0]); i++) {
            if ((k = getenv(strs[i].name)) == NULL)
                continue;
            if (strlen(k) >= strs[i].len)
                return ed_error_set(ED_EINVAL, "%s is longer than %zu bytes", strs[i].name, strs[i].len - 1);
            memcpy((char *)c + strs[i].off, k, strlen(k) + 1);
        }
    }
    return 0;
}

/* ---- capacity ------------------------------------------------------------ */

int sched__capacity(const sched *s, const sched_resource *r)
{
    int found;

    if (!r->gpu)
        return r->configured_capacity >= 0 ? r->configured_capacity : 1;
    if (r->simulated)
        return r->configured_capacity > 0 ? r->configured_capacity : 0;
    found = s->cfg.sim_gpus > 0 ? s->cfg.sim_gpus : s->discovered_gpus;
    return r->configured_capacity >= 0 && r->configured_capacity < found ? r->configured_capacity : found;
}

bool sched__simulated(const sched *s, const sched_resource *r)
{
    return r->gpu && (r->simulated || s->cfg.sim_gpus > 0);
}

/* ---- classes ------------------------------------------------------------- */

#define RES_COLS "name, cpus, memory_mb, gpu, gpu_model, price_mcoins_per_hour, configured_capacity, simulated, tiers"

static void res_from_row(sched_resource *r, sqlite3_stmt *s)
{
    memset(r, 0, sizeof(*r));
    snprintf(r->name, sizeof(r->name), "%s", (const char *)sqlite3_column_text(s, 0));
    r->cpus = sqlite3_column_int(s, 1);
    r->memory_mb = sqlite3_column_int(s, 2);
    r->gpu = sqlite3_column_int(s, 3) != 0;
    snprintf(r->gpu_model, sizeof(r->gpu_model), "%s", (const char *)sqlite3_column_text(s, 4));
    r->price_mcoins_per_hour = sqlite3_column_int64(s, 5);
    r->configured_capacity = sqlite3_column_int(s, 6);
    r->simulated = sqlite3_column_int(s, 7) != 0;
    snprintf(r->tiers, sizeof(r->tiers), "%s", (const char *)sqlite3_column_text(s, 8));
}

/* in_use and queued from the jobs table */
static int fill_usage(sched *s, sched_resource *r)
{
    sqlite3_stmt *q = NULL;
    int rc, err;

    r->capacity = sched__capacity(s, r);
    if ((err = ed_store_prepare(&q, s->st,
                                "SELECT IFNULL(SUM(CASE WHEN status = 'running' THEN units END), 0), "
                                "IFNULL(SUM(status = 'queued'), 0) FROM jobs WHERE resource = ?1 "
                                "AND status IN ('running', 'queued')")) < 0)
        return err;
    sqlite3_bind_text(q, 1, r->name, -1, SQLITE_STATIC);
    rc = sqlite3_step(q);
    if (rc == SQLITE_ROW) {
        r->in_use = sqlite3_column_int(q, 0);
        r->queued = sqlite3_column_int(q, 1);
    }
    sqlite3_finalize(q);
    return rc == SQLITE_ROW ? 0 : ed_store_error(ed_store_db(s->st), rc, "resource usage");
}

int sched_resource_list(sched_resource **out, size_t *n, sched *s)
{
    sqlite3_stmt *q = NULL;
    sched_resource *v = NULL;
    size_t cnt = 0;
    int rc, err;

    *out = NULL;
    *n = 0;
    if ((v = calloc(SCHED_MAX_CLASSES, sizeof(*v))) == NULL)
        return ed_error_set(ED_ENOMEM, "resource list");
    if ((err = ed_store_prepare(&q, s->st, "SELECT " RES_COLS " FROM sched_resources ORDER BY name")) < 0)
        goto fail;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW && cnt < SCHED_MAX_CLASSES)
        res_from_row(&v[cnt++], q);
    sqlite3_finalize(q);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
        err = ed_store_error(ed_store_db(s->st), rc, "list resources");
        goto fail;
    }
    for (size_t i = 0; i < cnt; i++)
        if ((err = fill_usage(s, &v[i])) < 0)
            goto fail;
    *out = v;
    *n = cnt;
    return 0;
fail:
    free(v);
    return err;
}

int sched_resource_get(sched_resource *out, sched *s, const char *name)
{
    sqlite3_stmt *q = NULL;
    int rc, err;

    if ((err = ed_store_prepare(&q, s->st, "SELECT " RES_COLS " FROM sched_resources WHERE name = ?1")) < 0)
        return err;
    sqlite3_bind_text(q, 1, name, -1, SQLITE_STATIC);
    rc = sqlite3_step(q);
    if (rc == SQLITE_ROW)
        res_from_row(out, q);
    sqlite3_finalize(q);
    if (rc == SQLITE_DONE)
        return ed_error_set(ED_ENOTFOUND, "resource class '%s' not found", name);
    if (rc != SQLITE_ROW)
        return ed_store_error(ed_store_db(s->st), rc, "read resource");
    return fill_usage(s, out);
}

static bool valid_name(const char *n)
{
    size_t len = strlen(n);

    if (len == 0 || len >= 32)
        return false;
    for (size_t i = 0; i < len; i++)
        if (!(islower((unsigned char)n[i]) || isdigit((unsigned char)n[i]) || n[i] == '-'))
            return false;
    return true;
}

/* "free,pro" : every name an existing tier (quota/ owns the tiers). */
static int check_tiers(sched *s, const char *tiers)
{
    char buf[128], *save = NULL;
    int exists;

    if (strlen(tiers) >= sizeof(buf))
        return ed_error_set(ED_EINVAL, "tiers list is too long");
    snprintf(buf, sizeof(buf), "%s", tiers);
    for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        if ((exists = quota_tier_exists(s->st, t)) < 0)
            return exists;
        if (exists == 0)
            return ed_error_set(ED_EINVAL, "unknown tier '%s' in tiers", t);
    }
    return 0;
}

int sched_resource_put(sched_resource *out, sched *s, const sched_resource *r)
{
    sched_resource cur;
    sqlite3_stmt *q = NULL;
    bool exists;
    int rc, err;

    if (!valid_name(r->name))
        return ed_error_set(ED_EINVAL, "resource name '%s': 1-31 of a-z, 0-9 and '-'", r->name);
    err = sched_resource_get(&cur, s, r->name);
    if (err < 0 && err != ED_ENOTFOUND)
        return err;
    exists = err == 0;
    if (!exists) {
        if (r->cpus < 0 || r->memory_mb < 0 || r->price_mcoins_per_hour < 0 || r->tiers[0] == '\0')
            return ed_error_set(ED_EINVAL, "a new resource class needs cpus, memory_mb, "
                                           "price_mcoins_per_hour and tiers");
        memset(&cur, 0, sizeof(cur));
        snprintf(cur.name, sizeof(cur.name), "%s", r->name);
        cur.configured_capacity = -1;
    }
    if (r->cpus >= 0)
        cur.cpus = r->cpus;
    if (r->memory_mb >= 0)
        cur.memory_mb = r->memory_mb;
    if (r->price_mcoins_per_hour >= 0)
        cur.price_mcoins_per_hour = r->price_mcoins_per_hour;
    if (r->configured_capacity >= -1)
        cur.configured_capacity = r->configured_capacity;
    if (r->simulated)
        cur.simulated = true;
    if (r->tiers[0])
        snprintf(cur.tiers, sizeof(cur.tiers), "%s", r->tiers);
    if (r->gpu_model[0])
        snprintf(cur.gpu_model, sizeof(cur.gpu_model), "%s", r->gpu_model);
    if (!exists)
        cur.gpu = r->gpu;
    if (cur.cpus > 1024 || cur.memory_mb > 16 * 1024 * 1024 || cur.price_mcoins_per_hour > 1000000000 ||
        cur.configured_capacity > 100000)
        return ed_error_set(ED_EINVAL, "resource values out of range");
    if ((err = check_tiers(s, cur.tiers)) < 0)
        return err;
    if ((err = ed_store_prepare(&q, s->st,
                                "INSERT INTO sched_resources(" RES_COLS ", updated_at) "
                                "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10) ON CONFLICT(name) DO UPDATE SET "
                                "cpus = ?2, memory_mb = ?3, gpu_model = ?5, price_mcoins_per_hour = ?6, "
                                "configured_capacity = ?7, tiers = ?9, updated_at = ?10")) < 0)
        return err;
    sqlite3_bind_text(q, 1, cur.name, -1, SQLITE_STATIC);
    sqlite3_bind_int(q, 2, cur.cpus);
    sqlite3_bind_int(q, 3, cur.memory_mb);
    sqlite3_bind_int(q, 4, cur.gpu);
    sqlite3_bind_text(q, 5, cur.gpu_model, -1, SQLITE_STATIC);
    sqlite3_bind_int64(q, 6, cur.price_mcoins_per_hour);
    sqlite3_bind_int(q, 7, cur.configured_capacity);
    sqlite3_bind_int(q, 8, cur.simulated);
    sqlite3_bind_text(q, 9, cur.tiers, -1, SQLITE_STATIC);
    sqlite3_bind_int64(q, 10, ed_now_ms());
    rc = ed_store_step(q);
    sqlite3_finalize(q);
    if (rc != SQLITE_DONE)
        return ed_store_error(ed_store_db(s->st), rc, "save resource");
    sched__lock(s);
    pthread_cond_signal(&s->cv);
    sched__unlock(s);
    return out ? sched_resource_get(out, s, cur.name) : 0;
}

int sched_allowance_get(int64_t *out_ms, sched *s, const char *tier, const char *resource)
{
    sqlite3_stmt *q = NULL;
    quota_tier t;
    int rc, err;

    *out_ms = 0;
    /* a GPU class without its own allowance falls back to the tier's free GPU time */
    if ((err = quota_tier_get(&t, s->st, tier)) == ED_ENOTFOUND)
        t.free_gpu_ms_per_day = 0;
    else if (err < 0)
        return err;
    if ((err = ed_store_prepare(&q, s->st,
                                "SELECT a.free_ms_per_day, (SELECT entry_gpu FROM sched_resources WHERE name = ?2) "
                                "FROM (SELECT 1) LEFT JOIN sched_allowances a ON a.tier = ?1 AND a.resource = ?2")) < 0)
        return err;
    sqlite3_bind_text(q, 1, tier, -1, SQLITE_STATIC);
    sqlite3_bind_text(q, 2, resource, -1, SQLITE_STATIC);
    rc = sqlite3_step(q);
    if (rc == SQLITE_ROW) {
        if (sqlite3_column_type(q, 0) != SQLITE_NULL)
            *out_ms = sqlite3_column_int64(q, 0);
        else if (sqlite3_column_int(q, 1) == 1)
            *out_ms = t.free_gpu_ms_per_day;
    }
    sqlite3_finalize(q);
    return rc == SQLITE_ROW ? 0 : ed_store_error(ed_store_db(s->st), rc, "read allowance");
}

int sched_allowance_set(sched *s, const char *tier, const char *resource, int64_t free_ms_per_day)
{
    sched_resource r;
    sqlite3_stmt *q = NULL;
    int rc, err;

    if (free_ms_per_day < -1 || free_ms_per_day > 86400000)
        return ed_error_set(ED_EINVAL, "free_ms_per_day %lld: -1 (unlimited) to 86400000",
                            (long long)free_ms_per_day);
    if ((err = check_tiers(s, tier)) < 0)
        return err == ED_EINVAL ? ed_error_set(ED_ENOTFOUND, "tier '%s' not found", tier) : err;
    if ((err = sched_resource_get(&r, s, resource)) < 0)
        return err;
    if ((err = ed_store_prepare(&q, s->st,
                                "INSERT INTO sched_allowances(tier, resource, free_ms_per_day) VALUES (?1, ?2, ?3) "
                                "ON CONFLICT(tier, resource) DO UPDATE SET free_ms_per_day = ?3")) < 0)
        return err;
    sqlite3_bind_text(q, 1, tier, -1, SQLITE_STATIC);
    sqlite3_bind_text(q, 2, resource, -1, SQLITE_STATIC);
    sqlite3_bind_int64(q, 3, free_ms_per_day);
    rc = ed_store_step(q);
    sqlite3_finalize(q);
    return rc == SQLITE_DONE ? 0 : ed_store_error(ed_store_db(s->st), rc, "save allowance");
}
