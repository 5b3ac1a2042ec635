/*
 * jobs.c - batch jobs in the store: submit (validate, prepare the tree,
 * queue), read with queue position and ETA, list, cancel.
 */
#include "sched.h"
#include "sched_int.h"

#include "acct.h"
#include "ed_error.h"
#include "ed_json.h"
#include "ed_time.h"
#include "quota.h"

#include <assert.h>
#include <errno.h>
#include <ftw.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define JOB_COLS "id, user_id, status, project_id, IFNULL(version, ''), entry, args, resource, gpus, " \
                 "max_runtime_ms, exit_code, IFNULL(failure_reason, ''), charged_mcoins, created_at, " \
                 "IFNULL(started_at, 0), IFNULL(ended_at, 0), IFNULL(cpu_ms, 0), IFNULL(peak_mem_bytes, 0), attempt, " \
                 "IFNULL(key_id, 0), ranks, nodes, IFNULL(executor, ''), IFNULL(exec_ref, ''), network_off, uncharged, " \
                 "internal, collected, fixed_mounts, IFNULL(idem_key, '')"

static void job_from_row(sched_job_info *j, sqlite3_stmt *q)
{
    memset(j, 0, sizeof(*j));
    j->id = sqlite3_column_int64(q, 0);
    j->user_id = sqlite3_column_int64(q, 1);
    snprintf(j->status, sizeof(j->status), "%s", (const char *)sqlite3_column_text(q, 2));
    snprintf(j->project_id, sizeof(j->project_id), "%s", (const char *)sqlite3_column_text(q, 3));
    snprintf(j->version, sizeof(j->version), "%s", (const char *)sqlite3_column_text(q, 4));
    snprintf(j->entry, sizeof(j->entry), "%s", (const char *)sqlite3_column_text(q, 5));
    snprintf(j->args_json, sizeof(j->args_json), "%s", (const char *)sqlite3_column_text(q, 6));
    snprintf(j->resource, sizeof(j->resource), "%s", (const char *)sqlite3_column_text(q, 7));
    j->gpus = sqlite3_column_int(q, 8);
    j->max_runtime_ms = sqlite3_column_int64(q, 9);
    j->has_exit_code = sqlite3_column_type(q, 10) != SQLITE_NULL;
    j->exit_code = sqlite3_column_int(q, 10);
    snprintf(j->failure_reason, sizeof(j->failure_reason), "%s", (const char *)sqlite3_column_text(q, 11));
    j->charged_mcoins = sqlite3_column_int64(q, 12);
    j->created_at = sqlite3_column_int64(q, 13);
    j->started_at = sqlite3_column_int64(q, 14);
    j->ended_at = sqlite3_column_int64(q, 15);
    j->cpu_ms = sqlite3_column_int64(q, 16);
    j->peak_mem_bytes = sqlite3_column_int64(q, 17);
    j->attempt = sqlite3_column_int(q, 18);
    j->key_id = sqlite3_column_int64(q, 19);
    j->ranks = sqlite3_column_int(q, 20);
    j->nodes = sqlite3_column_int(q, 21);
    snprintf(j->executor, sizeof(j->executor), "%s", (const char *)sqlite3_column_text(q, 22));
    snprintf(j->exec_ref, sizeof(j->exec_ref), "%s", (const char *)sqlite3_column_text(q, 23));
    j->network_off = sqlite3_column_int(q, 24) != 0;
    j->uncharged = sqlite3_column_int(q, 25) != 0;
    j->internal = sqlite3_column_int(q, 26) != 0;
    j->collected = sqlite3_column_int(q, 27) != 0;
    j->fixed_mounts = sqlite3_column_int(q, 28) != 0;
    snprintf(j->idem_key, sizeof(j->idem_key), "%s", (const char *)sqlite3_column_text(q, 29));
}

int sched__job_read(sched_job_info *out, sched *s, int64_t id)
{
    sqlite3_stmt *q = NULL;
    int rc, err;

    if ((err = ed_store_prepare(&q, s->st, "SELECT " JOB_COLS " FROM jobs WHERE id = ?1 AND status != 'preparing'")) < 0)
        return err;
    sqlite3_bind_int64(q, 1, id);
    rc = sqlite3_step(q);
    if (rc == SQLITE_ROW)
        job_from_row(out, q);
    sqlite3_finalize(q);
    if (rc == SQLITE_DONE)
        return ed_error_set(ED_ENOTFOUND, "job %lld not found", (long long)id);
    return rc == SQLITE_ROW ? 0 : ed_store_error(ed_store_db(s->st), rc, "read job");
}

/* Queue position and ETA of a queued job: the policy's view of the whole
 * queue, as sched_tick sees it. */
/* Positions and ETAs of the whole queue, computed once per call. */
typedef struct positions {
    bool     done;
    size_t   n;
    int64_t *ids, *eta;
    int     *pos;
} positions;

static int positions_compute(positions *p, sched *s)
{
    sched_item *q = NULL;
    sched_run *r = NULL;
    sched_resource *cls = NULL;
    sched_pool pools[SCHED_MAX_CLASSES];
    size_t nq = 0, nr = 0, ncls = 0;
    int err;

    if ((err = sched__queue_snapshot(s, &q, &nq, &r, &nr, pools, &cls, &ncls)) < 0)
        return err;
    p->pos = calloc(nq + 1, sizeof(*p->pos));
    p->eta = calloc(nq + 1, sizeof(*p->eta));
    p->ids = calloc(nq + 1, sizeof(*p->ids));
    if (p->pos == NULL || p->eta == NULL || p->ids == NULL) {
        err = ed_error_set(ED_ENOMEM, "queue positions");
        goto out;
    }
    if (ncls > 0 && (err = sched_eta(p->pos, p->eta, q, nq, r, nr, pools, (int)ncls, ed_now_ms())) < 0)
        goto out;
    for (size_t i = 0; i < nq; i++)
        p->ids[i] = q[i].id;
    p->n = nq;
    p->done = true;
    err = 0;
out:
    free(q);
    free(r);
    free(cls);
    return err;
}

static void positions_free(positions *p)
{
    free(p->ids);
    free(p->eta);
    free(p->pos);
}

static int fill_position(sched *s, sched_job_info *j, positions *p)
{
    int err;

    j->queue_position = 0;
    j->eta_ms = 0;
    if (strcmp(j->status, "queued") != 0)
        return 0;
    if (!p->done && (err = positions_compute(p, s)) < 0)
        return err;
    for (size_t i = 0; i < p->n; i++)
        if (p->ids[i] == j->id) {
            j->queue_position = p->pos[i];
            j->eta_ms = p->eta[i];
        }
    return 0;
}

int sched_job_get(sched_job_info *out, sched *s, int64_t user_id, int64_t id)
{
    positions p = {0};
    int err;

    if ((err = sched__job_read(out, s, id)) < 0)
        return err;
    /* an internal job (a platform run) is never its owner's to read */
    if (user_id != 0 && (out->user_id != user_id || out->internal))
        return ed_error_set(ED_ENOTFOUND, "job %lld not found", (long long)id);
    sched__disk_job_fill(s, out);
    err = fill_position(s, out, &p);
    positions_free(&p);
    return err;
}

int sched_job_each(sched *s, int64_t user_id, int64_t before, int limit,
                   int (*fn)(const sched_job_info *j, void *payload), void *payload)
{
    sqlite3_stmt *q = NULL;
    sched_job_info j;
    positions p = {0};
    int rc, err = 0;

    if ((err = ed_store_prepare(&q, s->st,
                                "SELECT " JOB_COLS " FROM jobs WHERE (?1 = 0 OR (user_id = ?1 AND internal = 0)) "
                                "AND (?2 = 0 OR id < ?2) AND status != 'preparing' ORDER BY id DESC LIMIT ?3")) < 0)
        return err;
    sqlite3_bind_int64(q, 1, user_id);
    sqlite3_bind_int64(q, 2, before);
    sqlite3_bind_int(q, 3, limit);
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        job_from_row(&j, q);
        if ((err = fill_position(s, &j, &p)) < 0)
            break;
        if ((err = fn(&j, payload)) != 0)
            break;
    }
    sqlite3_finalize(q);
    positions_free(&p);
    if (err != 0)
        return err;
    return rc == SQLITE_DONE ? 0 : ed_store_error(ed_store_db(s->st), rc, "list jobs");
}

int sched_job_dir(char *out, size_t outlen, sched *s, int64_t id)
{
    int n = snprintf(out, outlen, "%s/jobs/%lld", s->cfg.data_dir, (long long)id);

    return n > 0 && (size_t)n < outlen ? 0 : ed_error_set(ED_EINVAL, "job directory path too long");
}

static int rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(path) == 0 || errno == ENOENT ? 0 : -1;
}

void sched__rm_rf(const char *path)
{
    nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* Relative, '/'-separated, no '..' or empty segments, .py or .ipynb. */
static int check_entry(const char *e)
{
    size_t n = strlen(e);
    const char *p = e;

    if (n == 0 || n > 200 || e[0] == '/')
        return ed_error_set(ED_EINVAL, "field 'entry' must be a relative path of 1-200 bytes");
    if (!((n > 3 && strcmp(e + n - 3, ".py") == 0) || (n > 6 && strcmp(e + n - 6, ".ipynb") == 0)))
        return ed_error_set(ED_EINVAL, "field 'entry' must name a .py script or an .ipynb notebook");
    for (;;) {
        const char *slash = strchr(p, '/');
        size_t len = slash ? (size_t)(slash - p) : strlen(p);
        if (len == 0 || (len == 2 && p[0] == '.' && p[1] == '.') || (len == 1 && p[0] == '.'))
            return ed_error_set(ED_EINVAL, "field 'entry' has an empty, '.' or '..' segment");
        if (!slash)
            break;
        p = slash + 1;
    }
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)e[i] < 0x20 || e[i] == '\\')
            return ed_error_set(ED_EINVAL, "field 'entry' has a control character or backslash");
    return 0;
}

static bool tier_allowed(const char *tiers, const char *tier)
{
    size_t n = strlen(tier);

    for (const char *p = tiers; *p;) {
        const char *c = strchr(p, ',');
        size_t len = c ? (size_t)(c - p) : strlen(p);
        if (len == n && strncmp(p, tier, n) == 0)
            return true;
        if (!c)
            break;
        p = c + 1;
    }
    return false;
}

int64_t sched__hold_amount(const sched *s, int64_t price_all_units)
{
    int64_t ms = 2 * s->cfg.meter_interval_ms + s->cfg.oof_grace_ms, v;

    if (price_all_units <= 0)
        return 0;
    v = price_all_units * ms / 3600000;
    return v > 0 ? v : 1;
}

/* ---- API key budgets ------------------------------------------------------ */

static _Thread_local int64_t acting_key;

void sched_acting_key_set(int64_t key_id)
{
    acting_key = key_id > 0 ? key_id : 0;
}

int64_t sched_acting_key(void)
{
    return acting_key;
}

int sched__key_budget(sched *s, int64_t key_id, int64_t now_ms)
{
    int64_t budget = -1;
    int err;

    if (key_id <= 0 || s->cfg.key_budget == NULL)
        return 0;
    if ((err = s->cfg.key_budget(&budget, key_id, s->cfg.key_budget_arg)) < 0)
        return err;
    return quota_budget_check(NULL, s->st, key_id, budget, now_ms);
}

int sched_key_budget_check(sched *s, int64_t key_id)
{
    return sched__key_budget(s, key_id, ed_now_ms());
}

int sched__user_suspended(bool *out, sched *s, int64_t user_id)
{
    acct_user u;
    int err;

    *out = false;
    if ((err = acct_user_get(&u, s->st, user_id)) == ED_ENOTFOUND)
        return 0;
    if (err < 0)
        return err;
    *out = u.suspended;
    return 0;
}

static int idem_find(int64_t *out, sched *s, int64_t user, const char *key)
{
    sqlite3_stmt *q = NULL;
    int rc, err;

    *out = 0;
    if ((err = ed_store_prepare(&q, s->st, "SELECT id FROM jobs WHERE user_id = ?1 AND idem_key = ?2")) < 0)
        return err;
    sqlite3_bind_int64(q, 1, user);
    sqlite3_bind_text(q, 2, key, -1, SQLITE_STATIC);
    rc = sqlite3_step(q);
    if (rc == SQLITE_ROW)
        *out = sqlite3_column_int64(q, 0);
    sqlite3_finalize(q);
    return rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 : ed_store_error(ed_store_db(s->st), rc, "idempotency");
}

/* A repeated Idempotency-Key: the first job if the request is the same,
 * ED_ECONFLICT if it asks for something else. */
static int replay(sched_job_info *out, sched *s, const sched_job_spec *sp, int64_t id)
{
    const char *args = sp->args_json ? sp->args_json : "[]";
    json_t *a = NULL, *b = NULL;
    bool same;
    int err;

    if ((err = sched_job_get(out, s, sp->internal ? 0 : sp->user_id, id)) < 0)   /* idem keys are per user */
        return err;
    ed_json_parse(&a, args, strlen(args), 4);
    ed_json_parse(&b, out->args_json, strlen(out->args_json), 4);
    same = strcmp(out->project_id, sp->project_id) == 0 && strcmp(out->entry, sp->entry) == 0 &&
           strcmp(out->resource, sp->resource) == 0 &&
           strcmp(out->version, sp->version ? sp->version : "") == 0 && a && b && json_equal(a, b) &&
           (sp->gpus == 0 || sp->gpus * (sp->nodes ? sp->nodes : 1) == out->gpus) &&
           (sp->ranks == 0 || sp->ranks == out->ranks) && (sp->nodes == 0 || sp->nodes == out->nodes) &&
           (sp->max_runtime_ms == 0 || sp->max_runtime_ms == out->max_runtime_ms) &&
           sp->network_off == out->network_off && sp->uncharged == out->uncharged &&
           sp->internal == out->internal && sp->fixed_mounts == out->fixed_mounts;
    json_decref(a);
    json_decref(b);
    if (!same)
        return ed_error_set(ED_ECONFLICT, "Idempotency-Key '%s' was used for a different job (%lld)",
                            sp->idem_key, (long long)id);
    return 0;
}

int sched_job_submit(sched_job_info *out, sched *s, const sched_job_spec *sp)
{
    sched_resource cls;
    quota_tier tier;
    quota_balance bal;
    int64_t max_rt, id = 0, allowance, free_left, hold, existing;
    int64_t key = sp->key_id > 0 ? sp->key_id : acting_key;
    bool suspended;
    char dir[700], sub[760], ref[48];
    const char *args = sp->args_json ? sp->args_json : "[]";
    json_t *av = NULL;
    sqlite3_stmt *q = NULL;
    sched_mount *mounts = NULL;
    size_t n_mounts = 0;
    int gpus = sp->gpus, nodes = sp->nodes ? sp->nodes : 1, ranks = sp->ranks ? sp->ranks : 1, units, rc, err;

    memset(out, 0, sizeof(*out));
    if (sp->user_id <= 0 || sp->tier == NULL || sp->project_id == NULL || sp->entry == NULL || sp->resource == NULL)
        return ed_error_set(ED_EINVAL, "a job needs a user, project_id, entry and resource");
    if (sp->idem_key && (strlen(sp->idem_key) == 0 || strlen(sp->idem_key) > 200))
        return ed_error_set(ED_EINVAL, "Idempotency-Key must be 1-200 bytes");
    if (sp->key_id < 0)
        return ed_error_set(ED_EINVAL, "key id %lld", (long long)sp->key_id);
    if (sp->idem_key) {
        if ((err = idem_find(&existing, s, sp->user_id, sp->idem_key)) < 0)
            return err;
        if (existing > 0)
            return replay(out, s, sp, existing);
    }
    if (!(sched__submitting_kernel && strcmp(sp->entry, SCHED_KERNEL_ENTRY) == 0) &&
        (err = check_entry(sp->entry)) < 0)
        return err;
    if (strlen(sp->entry) > 6 && strcmp(sp->entry + strlen(sp->entry) - 6, ".ipynb") == 0) {
        char kernel[512];
        sched__kernel_path(kernel, sizeof(kernel), s);
        if (kernel[0] == '\0')
            return ed_error_set(ED_EUNPROC, "notebook entries need eddy-kernel, which is not installed on this host");
    }
    if (strlen(sp->project_id) >= sizeof(out->project_id) ||
        (sp->version && strlen(sp->version) >= sizeof(out->version)))
        return ed_error_set(ED_EINVAL, "project_id or version is too long");
    if (strlen(args) >= sizeof(out->args_json) || ed_json_parse(&av, args, strlen(args), 2) < 0 ||
        !json_is_array(av)) {
        json_decref(av);
        return ed_error_set(ED_EINVAL, "field 'args' must be an array of strings (under 1000 bytes)");
    }
    for (size_t i = 0; i < json_array_size(av); i++)
        if (!json_is_string(json_array_get(av, i))) {
            json_decref(av);
            return ed_error_set(ED_EINVAL, "field 'args' must be an array of strings");
        }
    json_decref(av);
    if ((err = sched__user_suspended(&suspended, s, sp->user_id)) < 0)
        return err;
    if (suspended)
        return ed_error_set(ED_EPERM, "account is suspended");
    if ((err = quota_tier_get(&tier, s->st, sp->tier)) < 0 ||
        (err = sched_resource_get(&cls, s, sp->resource)) < 0)
        return err;
    if (!tier_allowed(cls.tiers, sp->tier))
        return ed_error_set(ED_EPERM, "resource class '%s' is not available to tier '%s' (allowed: %s)",
                            cls.name, sp->tier, cls.tiers);
    if (nodes < 1 || nodes > SCHED_MAX_NODES || ranks < 1 || ranks > SCHED_MAX_RANKS)
        return ed_error_set(ED_EINVAL, "'nodes' must be 1..%d and 'ranks' 1..%d", SCHED_MAX_NODES, SCHED_MAX_RANKS);
    if (cls.gpu) {
        /* one rank per GPU, gpus_per_node on each of `nodes` hosts; every
         * allocated GPU is a unit, so metering charges each of them */
        if (gpus == 0)
            gpus = 1;
        if (sp->ranks > 1)
            return ed_error_set(ED_EINVAL, "resource class '%s' has GPUs: ask for 'nodes' and 'gpus_per_node' "
                                           "(one rank per GPU), not 'ranks'", cls.name);
        if (gpus > 16 || gpus * nodes > 16)
            return ed_error_set(ED_EINVAL, "%d GPUs on %d nodes: at most 16 GPUs a job", gpus, nodes);
        gpus *= nodes;
        if (gpus < 1 || gpus > tier.max_gpus_per_job)
            return ed_error_set(ED_EPERM, "%d GPUs requested; tier '%s' allows 1 to %d per job", gpus,
                                sp->tier, tier.max_gpus_per_job);
        units = ranks = gpus;
    } else {
        if (gpus != 0)
            return ed_error_set(ED_EINVAL, "resource class '%s' has no GPUs; 'gpus' must be 0", cls.name);
        if (ranks % nodes != 0)
            return ed_error_set(ED_EINVAL, "%d ranks do not spread evenly over %d nodes", ranks, nodes);
        units = ranks;     /* one slot (the class's cpus and memory) per rank */
    }
    /* fail closed: only the local executor seals a run (exec_slurm.c leaves
     * the network to the cluster and mounts no datasets) */
    if ((sp->network_off || sp->fixed_mounts) && strcmp(s->exec->name, "local") != 0)
        return ed_error_set(ED_EPRECOND, "the %s executor cannot switch a job's network off nor mount its "
                            "inputs; platform runs need the local executor", s->exec->name);
    if (nodes > 1 && strcmp(s->exec->name, "slurm") != 0)
        return ed_error_set(ED_EUNPROC, "%d nodes requested; the %s executor runs a job on one host", nodes,
                            s->exec->name);
    if (sched__submitting_kernel && units > 1)
        return ed_error_set(ED_EINVAL, "an interactive kernel is one process");
    if (units > cls.capacity)
        return ed_error_set(ED_EUNPROC, "resource class '%s' has capacity %d on this host%s; %d requested",
                            cls.name, cls.capacity, cls.gpu && cls.capacity == 0 ? " (no GPUs found)" : "",
                            units);
    max_rt = sp->max_runtime_ms > 0 ? sp->max_runtime_ms : tier.max_session_ms;
    if (sp->max_runtime_ms < 0 || max_rt < 1000 || max_rt > tier.max_session_ms)
        return ed_error_set(ED_EPERM, "max runtime %lld s; tier '%s' allows 1 to %lld s",
                            (long long)(max_rt / 1000), sp->tier, (long long)(tier.max_session_ms / 1000));
    /* the API key's daily budget, then funds: free allowance left, or coins
     * for the first hold */
    if ((err = sched__key_budget(s, key, ed_now_ms())) < 0)
        return err;
    if ((err = sched_allowance_get(&allowance, s, sp->tier, cls.name)) < 0 ||
        (err = quota_meter_free_left(&free_left, s->st, sp->user_id, cls.name, allowance, ed_now_ms())) < 0 ||
        (err = quota_balance_get(&bal, s->st, sp->user_id)) < 0)
        return err;
    hold = sp->uncharged ? 0 : sched__hold_amount(s, cls.price_mcoins_per_hour * units);
    if (hold > 0 && free_left == 0 && bal.coins_mcoins + tier.overdraft_mcoins < hold)
        return ed_error_set(ED_EQUOTA, "insufficient funds: %lld mcoins available, %lld needed to start "
                                       "(%lld mcoins/hour on %s; no free allowance left today)",
                            (long long)bal.coins_mcoins, (long long)hold,
                            (long long)(cls.price_mcoins_per_hour * units), cls.name);

    /* the datasets it would mount: one the user cannot see refuses it now;
     * fixed mounts are the caller's, checked as hostile all the same */
    if (sp->fixed_mounts) {
        if ((err = sched__mounts_check(&mounts, sp->mounts, sp->n_mounts)) < 0)
            return err;
        n_mounts = sp->n_mounts;
    } else if (sp->n_mounts > 0) {
        return ed_error_set(ED_EINVAL, "mounts are given only with fixed_mounts");
    } else if ((err = sched__mounts_resolve(&mounts, &n_mounts, s, sp->user_id, sp->project_id)) < 0) {
        return err;
    }

    /* the row first (for its id), then the tree, then queue it */
    if ((err = ed_store_prepare(&q, s->st,
                                "INSERT INTO jobs(user_id, project_id, version, entry, args, resource, gpus, units, "
                                "max_runtime_ms, requeue, status, created_at, enqueued_at, idem_key, key_id, ranks, "
                                "nodes, network_off, uncharged, internal, fixed_mounts) VALUES (?1, ?2, ?3, ?4, ?5, ?6, "
                                "?7, ?8, ?9, ?10, 'preparing', ?11, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19)")) < 0) {
        free(mounts);
        return err;
    }
    sqlite3_bind_int64(q, 1, sp->user_id);
    sqlite3_bind_text(q, 2, sp->project_id, -1, SQLITE_STATIC);
    if (sp->version && sp->version[0])
        sqlite3_bind_text(q, 3, sp->version, -1, SQLITE_STATIC);
    sqlite3_bind_text(q, 4, sp->entry, -1, SQLITE_STATIC);
    sqlite3_bind_text(q, 5, args, -1, SQLITE_STATIC);
    sqlite3_bind_text(q, 6, cls.name, -1, SQLITE_STATIC);
    sqlite3_bind_int(q, 7, cls.gpu ? gpus : 0);
    sqlite3_bind_int(q, 8, units);
    sqlite3_bind_int64(q, 9, max_rt);
    sqlite3_bind_int(q, 10, sp->requeue);
    sqlite3_bind_int64(q, 11, ed_now_ms());
    if (sp->idem_key)
        sqlite3_bind_text(q, 12, sp->idem_key, -1, SQLITE_STATIC);
    if (key > 0)
        sqlite3_bind_int64(q, 13, key);
    sqlite3_bind_int(q, 14, ranks);
    sqlite3_bind_int(q, 15, nodes);
    sqlite3_bind_int(q, 16, sp->network_off);
    sqlite3_bind_int(q, 17, sp->uncharged);
    sqlite3_bind_int(q, 18, sp->internal);
    sqlite3_bind_int(q, 19, sp->fixed_mounts);
    rc = ed_store_step(q);
    sqlite3_finalize(q);
    if (rc != SQLITE_DONE) {
        free(mounts);
        err = ed_store_error(ed_store_db(s->st), rc, "insert job");
        if (err == ED_EEXISTS && sp->idem_key && idem_find(&existing, s, sp->user_id, sp->idem_key) == 0 &&
            existing > 0)
            return replay(out, s, sp, existing);   /* a concurrent twin won */
        return err;
    }
    id = sqlite3_last_insert_rowid(ed_store_db(s->st));
    err = sched__mounts_record(s, id, mounts, n_mounts, sp->fixed_mounts);
    free(mounts);
    if (err < 0)
        goto fail;
    /* metered against the key (or against none: the id may be reused) */
    snprintf(ref, sizeof(ref), "job:%lld", (long long)id);
    if ((err = quota_budget_ref_set(s->st, ref, key)) < 0)
        goto fail;
    if ((err = sched_job_dir(dir, sizeof(dir), s, id)) < 0)
        goto fail;
    snprintf(sub, sizeof(sub), "%s/jobs", s->cfg.data_dir);
    mkdir(sub, 0700);
    sched__disk_job_remove(s, id);   /* a stale tree of a reused id */
    sched__rm_rf(dir);
    if (mkdir(dir, 0700) < 0) {
        err = ed_error_set(ED_EIO, "cannot create %s: %s", dir, strerror(errno));
        goto fail;
    }
    if ((err = sched__disk_job_init(s, id, sp->tier)) < 0)   /* work + output: one disk quota tree */
        goto fail;
    snprintf(sub, sizeof(sub), "%s/work", dir);
    if (mkdir(sub, 0700) < 0 && errno != EEXIST) {
        err = ed_error_set(ED_EIO, "cannot create %s: %s", sub, strerror(errno));
        goto fail;
    }
    if (sp->prepare && (err = sp->prepare(sub, sp->payload)) < 0)
        goto fail;
    snprintf(sub, sizeof(sub), "%s/output", dir);
    if (mkdir(sub, 0700) < 0 && errno != EEXIST) {
        err = ed_error_set(ED_EIO, "cannot create %s: %s", sub, strerror(errno));
        goto fail;
    }
    assert(sched__job_transition_ok("preparing", "queued"));
    if ((err = ed_store_prepare(&q, s->st, "UPDATE jobs SET status = 'queued' WHERE id = ?1")) < 0)
        goto fail;
    sqlite3_bind_int64(q, 1, id);
    rc = ed_store_step(q);
    sqlite3_finalize(q);
    if (rc != SQLITE_DONE) {
        err = ed_store_error(ed_store_db(s->st), rc, "queue job");
        goto fail;
    }
    sched__lock(s);
    pthread_cond_signal(&s->cv);
    sched__unlock(s);
    return sched_job_get(out, s, sp->internal ? 0 : sp->user_id, id);
fail:
    sched__disk_job_remove(s, id);
    if (sched_job_dir(dir, sizeof(dir), s, id) == 0)
        sched__rm_rf(dir);
    if (ed_store_prepare(&q, s->st, "DELETE FROM jobs WHERE id = ?1 AND status = 'preparing'") == 0) {
        sqlite3_bind_int64(q, 1, id);
        ed_store_step(q);
        sqlite3_finalize(q);
    }
    return err;
}

int sched_job_cancel(sched_job_info *out, sched *s, int64_t user_id, int64_t id)
{
    sqlite3_stmt *q = NULL;
    int rc, err, changed;
    bool found = false;

    if ((err = sched_job_get(out, s, user_id, id)) < 0)
        return err;
    sched__lock(s);
    assert(sched__job_transition_ok("queued", "cancelled"));
    if ((err = ed_store_prepare(&q, s->st,
                                "UPDATE jobs SET status = 'cancelled', failure_reason = 'cancelled', ended_at = ?2 "
                                "WHERE id = ?1 AND status = 'queued'")) < 0)
        goto out;
    sqlite3_bind_int64(q, 1, id);
    sqlite3_bind_int64(q, 2, ed_now_ms());
    rc = ed_store_step(q);
    sqlite3_finalize(q);
    if (rc != SQLITE_DONE) {
        err = ed_store_error(ed_store_db(s->st), rc, "cancel job");
        goto out;
    }
    changed = sqlite3_changes(ed_store_db(s->st));
    if (changed == 0) {
        for (size_t i = 0; i < s->nrun; i++) {
            sched__running *r = s->run[i];
            if (r->id != id)
                continue;
            found = true;
            if (r->stop_reason[0] == '\0') {
                snprintf(r->stop_reason, sizeof(r->stop_reason), "cancelled");
                r->kill_at = ed_now_ms() + s->cfg.stop_grace_ms;
                s->exec->signal(r, SIGTERM);
            }
        }
        if (!found) {
            err = ed_error_set(ED_ECONFLICT, "job %lld has already ended (%s)", (long long)id, out->status);
            goto out;
        }
    }
    pthread_cond_signal(&s->cv);
    err = 0;
out:
    sched__unlock(s);
    if (err < 0)
        return err;
    return sched_job_get(out, s, user_id, id);
}

static int exec_id(sched *s, const char *sql, int64_t id)
{
    sqlite3_stmt *q = NULL;
    int rc, err;

    if ((err = ed_store_prepare(&q, s->st, sql)) < 0)
        return err;
    sqlite3_bind_int64(q, 1, id);
    rc = ed_store_step(q);
    sqlite3_finalize(q);
    return rc == SQLITE_DONE ? 0 : ed_store_error(ed_store_db(s->st), rc, "update job");
}

int sched_job_collect(sched *s, int64_t id)
{
    sched_job_info j;
    int err;

    if ((err = sched__job_read(&j, s, id)) < 0)
        return err;
    if (!j.internal)
        return ed_error_set(ED_ENOTFOUND, "job %lld is not an internal job", (long long)id);
    if (strcmp(j.status, "queued") == 0 || strcmp(j.status, "running") == 0)
        return ed_error_set(ED_ECONFLICT, "job %lld has not ended (%s)", (long long)id, j.status);
    return exec_id(s, "UPDATE jobs SET collected = 1 WHERE id = ?1 AND internal = 1", id);
}

int sched_job_each_uncollected(sched *s, const char *prefix, int (*fn)(const sched_job_info *j, void *payload),
                               void *payload)
{
    sqlite3_stmt *q = NULL;
    sched_job_info j;
    int rc, err = 0;

    if ((err = ed_store_prepare(&q, s->st,
                                "SELECT " JOB_COLS " FROM jobs WHERE internal = 1 AND collected = 0 "
                                "AND status != 'preparing' AND substr(IFNULL(idem_key, ''), 1, length(?1)) = ?1 "
                                "ORDER BY id")) < 0)
        return err;
    sqlite3_bind_text(q, 1, prefix ? prefix : "", -1, SQLITE_TRANSIENT);
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        job_from_row(&j, q);
        if ((err = fn(&j, payload)) != 0)
            break;
    }
    sqlite3_finalize(q);
    if (err != 0)
        return err;
    return rc == SQLITE_DONE ? 0 : ed_store_error(ed_store_db(s->st), rc, "uncollected jobs");
}
