/*
 * service.c - the scheduler thread: reap, meter, enforce limits, place and
 * start; reconciliation at open; orderly stop at close.
 *
 * One thread owns the running work (s->run, under s->mu). API threads read
 * the store directly and take s->mu only to signal running work (cancel).
 *
 * Money: a job's hold is opened when it starts (reserving two intervals and
 * the out-of-funds grace period), every interval is metered through
 * quota/meter.c (free allowance first, then coins, each interval exactly
 * once), and at the end the hold pays what the coins could not (capped at
 * the hold) and the rest is released. A platform failure refunds what the
 * job was charged.
 */
#include "sched.h"
#include "sched_int.h"

#include "acct.h"
#include "ed_error.h"
#include "ed_log.h"
#include "ed_time.h"
#include "quota.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

void sched__log_notice(sched__running *r, const char *fmt, ...)
{
    char buf[512];
    va_list ap;
    int n;

    if (r->log_fd < 0)
        return;
    n = snprintf(buf, sizeof(buf), "[eddy] ");
    va_start(ap, fmt);
    n += vsnprintf(buf + n, sizeof(buf) - (size_t)n - 1, fmt, ap);
    va_end(ap);
    if (n > (int)sizeof(buf) - 2)
        n = (int)sizeof(buf) - 2;
    buf[n++] = '\n';
    if (write(r->log_fd, buf, (size_t)n) < 0)
        ed_log_warn("sched.log", "job %lld: cannot write its log: %s", (long long)r->id, strerror(errno));
}

/* ---- the lock and the job state machine ------------------------------------ */

static _Thread_local const sched *held;   /* the sched whose mu this thread holds */

void sched__lock(sched *s)
{
    assert(held != s);   /* not recursive */
    pthread_mutex_lock(&s->mu);
    held = s;
}

void sched__unlock(sched *s)
{
    assert(held == s);
    held = NULL;
    pthread_mutex_unlock(&s->mu);
}

bool sched__locked(const sched *s)
{
    return held == s;
}

bool sched__job_transition_ok(const char *from, const char *to)
{
    static const struct {
        const char *from, *to;
    } ok[] = {
        {"preparing", "queued"}, {"queued", "running"},    {"queued", "failed"},
        {"queued", "cancelled"}, {"running", "succeeded"}, {"running", "failed"},
        {"running", "cancelled"}, {"running", "preempted"}, {"running", "queued"},
    };

    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
        if (strcmp(ok[i].from, from) == 0 && strcmp(ok[i].to, to) == 0)
            return true;
    return false;
}

static int exec_sql_id(sched *s, const char *sql, int64_t id)
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

/* ---- the queue as the policy sees it ------------------------------------ */

static int class_index(const sched_resource *cls, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(cls[i].name, name) == 0)
            return (int)i;
    return -1;
}

/* ---- users' terms for one pass ---------------------------------------------
 * The queue's rows are the scheduler's (jobs); a user's tier is accounts/'s
 * and a tier's weight and cap quota/'s. Each pass reads every tier once and
 * each distinct user once, through their owners. */

typedef struct user_terms {
    int64_t user_id;
    int     weight;    /* the tier's; 1 when the tier is gone */
    int     cap;       /* the tier's max_kernels; 1 when the tier is gone */
    bool    found;     /* false: no such user, the work is left out */
} user_terms;

typedef struct tier_list {
    quota_tier *t;
    size_t      n, cap;
} tier_list;

static int add_tier(const quota_tier *t, void *payload)
{
    tier_list *l = payload;

    if (l->n == l->cap) {
        quota_tier *nv = realloc(l->t, (l->cap = l->cap ? 2 * l->cap : 8) * sizeof(*nv));
        if (nv == NULL)
            return ed_error_set(ED_ENOMEM, "tiers");
        l->t = nv;
    }
    l->t[l->n++] = *t;
    return 0;
}

static int cmp_user_id(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

/* The terms of `user_id`, which is among terms[0..n) (sorted by user). */
static const user_terms *terms_of(const user_terms *terms, size_t n, int64_t user_id)
{
    const user_terms *t = bsearch(&user_id, terms, n, sizeof(*terms), cmp_user_id);

    assert(t != NULL);
    return t;
}

/* Fill in each item's and run's weight (and each item's user cap) from its
 * user's tier, and drop work whose user does not exist. */
static int apply_user_terms(sched *s, sched_item *q, size_t *nq, sched_run *r, size_t *nr)
{
    tier_list tiers = {0};
    user_terms *terms = NULL;
    size_t n = 0, k = 0;
    int err = 0;

    if (*nq + *nr == 0)
        return 0;
    if ((terms = malloc((*nq + *nr) * sizeof(*terms))) == NULL)
        return ed_error_set(ED_ENOMEM, "queue snapshot");
    for (size_t i = 0; i < *nq; i++)
        terms[n++].user_id = q[i].user_id;
    for (size_t i = 0; i < *nr; i++)
        terms[n++].user_id = r[i].user_id;
    qsort(terms, n, sizeof(*terms), cmp_user_id);
    for (size_t i = 0; i < n; i++)   /* distinct users */
        if (k == 0 || terms[k - 1].user_id != terms[i].user_id)
            terms[k++].user_id = terms[i].user_id;
    n = k;
    if ((err = quota_tier_each(s->st, add_tier, &tiers)) < 0)
        goto done;
    for (size_t i = 0; i < n; i++) {
        acct_user u;
        terms[i].weight = terms[i].cap = 1;
        terms[i].found = false;
        if ((err = acct_user_get(&u, s->st, terms[i].user_id)) == ED_ENOTFOUND)
            continue;
        if (err < 0)
            goto done;
        terms[i].found = true;
        for (size_t t = 0; t < tiers.n; t++)
            if (strcmp(tiers.t[t].name, u.tier) == 0) {
                terms[i].weight = tiers.t[t].weight;
                terms[i].cap = tiers.t[t].max_kernels;
                break;
            }
    }
    err = 0;
    k = 0;
    for (size_t i = 0; i < *nq; i++) {
        const user_terms *t = terms_of(terms, n, q[i].user_id);
        if (!t->found)
            continue;
        q[k] = q[i];
        q[k].weight = t->weight;
        q[k++].user_cap = t->cap;
    }
    *nq = k;
    k = 0;
    for (size_t i = 0; i < *nr; i++) {
        const user_terms *t = terms_of(terms, n, r[i].user_id);
        if (!t->found)
            continue;
        r[k] = r[i];
        r[k++].weight = t->weight;
    }
    *nr = k;
done:
    free(tiers.t);
    free(terms);
    return err;
}

int sched__queue_snapshot(sched *s, sched_item **out_q, size_t *out_nq, sched_run **out_r, size_t *out_nr,
                          sched_pool *pools, sched_resource **out_classes, size_t *out_ncls)
{
    sched_resource *cls = NULL;
    sched_item *q = NULL;
    sched_run *r = NULL;
    size_t ncls = 0, nq = 0, capq = 0, nr = 0, capr = 0, nint = 0, capint = 0;
    int64_t *internal = NULL;
    sqlite3_stmt *st = NULL;
    int64_t now = ed_now_ms();
    int rc, err;

    *out_q = NULL;
    *out_r = NULL;
    *out_classes = NULL;
    *out_nq = *out_nr = *out_ncls = 0;
    if ((err = sched_resource_list(&cls, &ncls, s)) < 0)
        return err;
    for (size_t i = 0; i < ncls; i++) {
        pools[i].capacity = cls[i].capacity;
        pools[i].preemption = cls[i].gpu;
    }
    if ((err = ed_store_prepare(&st, s->st,
                                "SELECT j.id, j.user_id, j.resource, j.units, "
                                "j.enqueued_at, j.max_runtime_ms, j.status, IFNULL(j.started_at, 0), j.preemptible, "
                                "IFNULL(f.used, 0), j.internal FROM jobs j "
                                "LEFT JOIN (SELECT user_id, SUM((CASE WHEN status = 'running' THEN ?1 "
                                "  ELSE IFNULL(ended_at, started_at) END - started_at) * units) AS used "
                                "  FROM jobs WHERE started_at > ?1 - 86400000 GROUP BY user_id) f ON f.user_id = j.user_id "
                                "WHERE j.status IN ('queued', 'running')")) < 0)
        goto fail;
    sqlite3_bind_int64(st, 1, now);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        int c = class_index(cls, ncls, (const char *)sqlite3_column_text(st, 2));
        bool running = strcmp((const char *)sqlite3_column_text(st, 6), "running") == 0;
        if (c < 0)
            continue;
        if (sqlite3_column_int(st, 10) != 0) {
            if (nint == capint) {
                int64_t *nv = realloc(internal, (capint = capint ? 2 * capint : 16) * sizeof(*internal));
                if (nv == NULL) {
                    err = ed_error_set(ED_ENOMEM, "queue snapshot");
                    goto fail;
                }
                internal = nv;
            }
            internal[nint++] = sqlite3_column_int64(st, 0);
        }
        if (running) {
            if (nr == capr) {
                sched_run *nv = realloc(r, (capr = capr ? 2 * capr : 64) * sizeof(*r));
                if (nv == NULL) {
                    err = ed_error_set(ED_ENOMEM, "running snapshot");
                    goto fail;
                }
                r = nv;
            }
            memset(&r[nr], 0, sizeof(r[nr]));
            r[nr].id = sqlite3_column_int64(st, 0);
            r[nr].user_id = sqlite3_column_int64(st, 1);
            r[nr].cls = c;
            r[nr].units = sqlite3_column_int(st, 3);
            r[nr].started_at = sqlite3_column_int64(st, 7);
            r[nr].end_by = r[nr].started_at + sqlite3_column_int64(st, 5);
            r[nr].preemptible = sqlite3_column_int(st, 8) != 0;
            nr++;
        } else {
            if (nq == capq) {
                sched_item *nv = realloc(q, (capq = capq ? 2 * capq : 64) * sizeof(*q));
                if (nv == NULL) {
                    err = ed_error_set(ED_ENOMEM, "queue snapshot");
                    goto fail;
                }
                q = nv;
            }
            memset(&q[nq], 0, sizeof(q[nq]));
            q[nq].id = sqlite3_column_int64(st, 0);
            q[nq].user_id = sqlite3_column_int64(st, 1);
            q[nq].cls = c;
            q[nq].units = sqlite3_column_int(st, 3);
            q[nq].enqueued_at = sqlite3_column_int64(st, 4);
            q[nq].est_ms = sqlite3_column_int64(st, 5);
            q[nq].usage_ms = sqlite3_column_int64(st, 9);
            nq++;
        }
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) {
        err = ed_store_error(ed_store_db(s->st), rc, "queue snapshot");
        goto fail;
    }
    if ((err = apply_user_terms(s, q, &nq, r, &nr)) < 0)
        goto fail;
    /* platform runs (internal) are bounded by their starter and the class's
     * capacity, not by their owner's concurrency cap: neither held back by
     * the owner's kernels and jobs nor holding those back (a user of their
     * own, -id, for the cap; their tier's weight stays) */
    for (size_t k = 0; k < nint; k++) {
        for (size_t i = 0; i < nq; i++)
            if (q[i].id == internal[k]) {
                q[i].user_id = -q[i].id;
                q[i].user_cap = 0;
            }
        for (size_t i = 0; i < nr; i++)
            if (r[i].id == internal[k])
                r[i].user_id = -r[i].id;
    }
    free(internal);
    *out_q = q;
    *out_nq = nq;
    *out_r = r;
    *out_nr = nr;
    *out_classes = cls;
    *out_ncls = ncls;
    return 0;
fail:
    free(internal);
    free(cls);
    free(q);
    free(r);
    return err;
}

/* ---- stopping, finishing --------------------------------------------------- */

static void stop_run(sched *s, sched__running *r, const char *reason, int64_t now)
{
    assert(sched__locked(s));   /* r is on s->run */
    if (r->stop_reason[0])
        return;
    snprintf(r->stop_reason, sizeof(r->stop_reason), "%s", reason);
    r->kill_at = now + s->cfg.stop_grace_ms;
    sched__log_notice(r, "stopping this job: %s", reason);
    s->exec->signal(r, SIGTERM);
}

static void ref_of(char *out, size_t n, int64_t id)
{
    snprintf(out, n, "job:%lld", (long long)id);
}

/* Meter every whole interval that is due, then enforce the funds rule. */
static void meter_run(sched *s, sched__running *r, int64_t now)
{
    int64_t iv = s->cfg.meter_interval_ms, due = (now - r->started_at) / iv, charged;
    char ref[48];
    quota_meter_result m;
    sqlite3_stmt *q = NULL;
    bool metered = false;
    int err;

    if (r->uncharged)
        return;     /* never metered: no charge, no free allowance used */
    ref_of(ref, sizeof(ref), r->id);
    while (r->seq - r->seq_base < due) {
        int64_t seq = r->seq + 1;
        if ((err = quota_meter_charge(&m, s->st, r->user_id, r->resource, r->free_per_day, r->price, ref, seq,
                                      iv, r->started_at + (seq - r->seq_base) * iv)) < 0) {
            ed_log_warn("sched.meter", "job %lld interval %lld: %s", (long long)r->id, (long long)seq,
                        ed_error_last());
            return;     /* retried next tick under the same (ref, seq) */
        }
        r->seq = seq;
        metered = true;
        if (m.out_of_funds && r->warned_at == 0) {
            r->warned_at = now;
            sched__log_notice(r, "out of funds: this job will be stopped in %lld s unless coins are added",
                              (long long)(s->cfg.oof_grace_ms / 1000));
        } else if (!m.out_of_funds && m.paid_ms > 0 && r->warned_at) {
            r->warned_at = 0;
        }
        if (quota_meter_totals(&charged, NULL, s->st, ref) == 0 &&
            ed_store_prepare(&q, s->st,
                             "UPDATE jobs SET metered_seq = ?2, charged_mcoins = ?3, warned_at = ?4 WHERE id = ?1") == 0) {
            sqlite3_bind_int64(q, 1, r->id);
            sqlite3_bind_int64(q, 2, r->seq);
            sqlite3_bind_int64(q, 3, r->prior_charged + charged - r->charged_base);
            if (r->warned_at)
                sqlite3_bind_int64(q, 4, r->warned_at);
            ed_store_step(q);
            sqlite3_finalize(q);
        }
    }
    if (r->warned_at && now - r->warned_at >= s->cfg.oof_grace_ms)
        stop_run(s, r, "out_of_funds", now);
    /* the API key's daily budget: spending only moves when an interval is
     * metered, so that is when it is looked at; spent -> the same warning
     * and grace as out of funds, then stop */
    if (metered && r->key_id && !r->stop_reason[0]) {
        err = sched__key_budget(s, r->key_id, now);
        if (err == ED_EQUOTA && r->budget_warned_at == 0) {
            r->budget_warned_at = now;
            sched__log_notice(r, "%s: this job will be stopped in %lld s", ed_error_last(),
                              (long long)(s->cfg.oof_grace_ms / 1000));
        } else if (err == 0) {
            r->budget_warned_at = 0;     /* a raised budget, or a new day */
        } else if (err != ED_EQUOTA) {
            ed_log_warn("sched.budget", "job %lld key %lld: %s", (long long)r->id, (long long)r->key_id,
                        ed_error_last());
        }
    }
    if (r->budget_warned_at && now - r->budget_warned_at >= s->cfg.oof_grace_ms)
        stop_run(s, r, "key_budget", now);
}

/* The work ended (or is abandoned at close with platform_error): meter the
 * last partial interval, settle the hold, record the outcome. */
static void finish_run(sched *s, sched__running *r, const sched__outcome *o, int64_t now)
{
    char ref[48], key[64];
    const char *status, *reason = NULL;
    int64_t partial, charged = 0, unpaid = 0, settle = 0, total;
    quota_meter_result m;
    sqlite3_stmt *q = NULL;
    bool platform, requeue = false;
    int exit_code = o->exited ? o->exit_code : 128 + o->term_signal;

    ref_of(ref, sizeof(ref), r->id);
    meter_run(s, r, now);
    partial = (now - r->started_at) - (r->seq - r->seq_base) * s->cfg.meter_interval_ms;
    if (partial > 0 && !r->uncharged && quota_meter_charge(&m, s->st, r->user_id, r->resource, r->free_per_day, r->price, ref,
                                          r->seq + 1, partial, now) == 0)
        r->seq++;
    if (strcmp(r->stop_reason, "cancelled") == 0) {
        status = "cancelled", reason = "cancelled";
    } else if (strcmp(r->stop_reason, "preempted") == 0) {
        status = "preempted", reason = "preempted";
        requeue = r->requeue;
    } else if (r->stop_reason[0]) {
        status = "failed", reason = r->stop_reason;      /* out_of_funds, key_budget, suspended, timeout, ... */
    } else if (o->reason && strcmp(o->reason, "preempted") == 0) {
        status = "preempted", reason = "preempted";      /* the cluster preempted it (Slurm) */
        requeue = r->requeue;
    } else if (o->reason) {
        status = "failed", reason = o->reason;           /* platform_error: a node failed (Slurm) */
    } else if (o->oom) {
        status = "failed", reason = "out_of_memory";
    } else if (o->wall) {
        status = "failed", reason = "timeout";
    } else if (o->exited && o->exit_code == 0) {
        status = "succeeded";
    } else {
        status = "failed", reason = "user_error";
    }
    assert(sched__locked(s));
    assert(sched__job_transition_ok("running", requeue ? "queued" : status));
    platform = reason && strcmp(reason, "platform_error") == 0;
    quota_meter_totals(&charged, &unpaid, s->st, ref);
    if (r->hold_id) {
        settle = unpaid - r->unpaid_base;
        if (settle > r->hold_mcoins)
            settle = r->hold_mcoins;
        if (settle < 0)
            settle = 0;
        if (quota_hold_settle(s->st, r->hold_id, settle) < 0) {
            ed_log_error("sched.settle", "job %lld hold %lld: %s", (long long)r->id, (long long)r->hold_id,
                         ed_error_last());
            settle = 0;
        }
    }
    total = r->prior_charged + (charged - r->charged_base) + settle;
    if (platform) {
        if (quota_meter_refund(NULL, s->st, ref) < 0)
            ed_log_error("sched.refund", "job %lld: %s", (long long)r->id, ed_error_last());
        if (settle > 0) {
            snprintf(key, sizeof(key), "hold-refund:%lld", (long long)r->hold_id);
            quota_refund(NULL, s->st, r->user_id, settle, ref, "platform failure", key);
        }
        total = 0;
        sched__log_notice(r, "platform error: the job was stopped by the platform and its charges refunded");
    }
    if (requeue)
        sched__log_notice(r, "preempted by higher-tier work; requeued");
    if (ed_store_prepare(&q, s->st,
                         "UPDATE jobs SET status = ?2, failure_reason = ?3, exit_code = ?4, ended_at = ?5, "
                         "cpu_ms = ?6, peak_mem_bytes = ?7, charged_mcoins = ?8, metered_seq = ?9, stop_reason = NULL "
                         "WHERE id = ?1") == 0) {
        sqlite3_bind_int64(q, 1, r->id);
        sqlite3_bind_text(q, 2, requeue ? "queued" : status, -1, SQLITE_STATIC);
        if (reason && !requeue)
            sqlite3_bind_text(q, 3, reason, -1, SQLITE_STATIC);
        if (!requeue && !platform)
            sqlite3_bind_int(q, 4, exit_code);
        if (!requeue)
            sqlite3_bind_int64(q, 5, now);
        sqlite3_bind_int64(q, 6, o->cpu_ms);
        sqlite3_bind_int64(q, 7, o->peak_mem_bytes);
        sqlite3_bind_int64(q, 8, total);
        sqlite3_bind_int64(q, 9, r->seq);
        if (ed_store_step(q) != SQLITE_DONE)
            ed_log_error("sched.finish", "job %lld: %s", (long long)r->id, sqlite3_errmsg(ed_store_db(s->st)));
        sqlite3_finalize(q);
    }
    ed_log_info("sched.finish", "job %lld %s%s%s exit %d, %lld mcoins", (long long)r->id, requeue ? "requeued" : status,
                reason ? ": " : "", reason ? reason : "", exit_code, (long long)total);
    s->exec->release(r);
    if (r->log_fd >= 0)
        close(r->log_fd);
    free(r);
}

/* ---- starting ----------------------------------------------------------- */

static void fail_queued(sched *s, int64_t id, const char *reason)
{
    sqlite3_stmt *q = NULL;

    assert(sched__job_transition_ok("queued", "failed"));

    if (ed_store_prepare(&q, s->st,
                         "UPDATE jobs SET status = 'failed', failure_reason = ?2, ended_at = ?3 "
                         "WHERE id = ?1 AND status = 'queued'") == 0) {
        sqlite3_bind_int64(q, 1, id);
        sqlite3_bind_text(q, 2, reason, -1, SQLITE_STATIC);
        sqlite3_bind_int64(q, 3, ed_now_ms());
        ed_store_step(q);
        sqlite3_finalize(q);
    }
}

/* Which executor runs this attempt, and its handle (a restart re-attaches
 * through it). */
static void record_exec(sched *s, sched__running *r)
{
    sqlite3_stmt *q = NULL;

    if (ed_store_prepare(&q, s->st,
                         "UPDATE jobs SET executor = ?2, exec_ref = ?3, attempt_seq_base = ?4, "
                         "attempt_charged_base = ?5, attempt_unpaid_base = ?6, attempt_prior_charged = ?7 "
                         "WHERE id = ?1") < 0) {
        ed_log_warn("sched.start", "job %lld: %s", (long long)r->id, ed_error_last());
        return;
    }
    sqlite3_bind_int64(q, 1, r->id);
    sqlite3_bind_text(q, 2, s->exec->name, -1, SQLITE_STATIC);
    if (r->exec_ref[0])
        sqlite3_bind_text(q, 3, r->exec_ref, -1, SQLITE_STATIC);
    sqlite3_bind_int64(q, 4, r->seq_base);
    sqlite3_bind_int64(q, 5, r->charged_base);
    sqlite3_bind_int64(q, 6, r->unpaid_base);
    sqlite3_bind_int64(q, 7, r->prior_charged);
    if (ed_store_step(q) != SQLITE_DONE)
        ed_log_warn("sched.start", "job %lld: record executor: %s", (long long)r->id,
                    sqlite3_errmsg(ed_store_db(s->st)));
    sqlite3_finalize(q);
}

static int start_job(sched *s, int64_t id, const sched_resource *cls, size_t ncls)
{
    sched_job_info j;
    sched__running *r = NULL;
    quota_tier tier;
    acct_user owner;
    char tier_name[32] = "", ref[48], key[64], dir[700], path[760], devs[128] = "";
    int64_t free_left, hold, now = ed_now_ms(), seq_base = 0, prior = 0;
    const sched_resource *c;
    sqlite3_stmt *q = NULL;
    bool suspended;
    int ci, rc, err;

    if ((err = sched__job_read(&j, s, id)) < 0)
        return err;
    if ((ci = class_index(cls, ncls, j.resource)) < 0)
        return ed_error_set(ED_ENOTFOUND, "resource class %s vanished", j.resource);
    c = &cls[ci];
    /* the owner's tier and suspension are accounts/'s (users) */
    if ((err = acct_user_get(&owner, s->st, j.user_id)) < 0)
        return err;
    if ((err = ed_store_prepare(&q, s->st,
                                "SELECT metered_seq, charged_mcoins, requeue, preemptible, units, "
                                "IFNULL(key_id, 0), ranks, nodes FROM jobs WHERE id = ?1")) < 0)
        return err;
    sqlite3_bind_int64(q, 1, id);
    if ((rc = sqlite3_step(q)) != SQLITE_ROW) {
        sqlite3_finalize(q);
        return ed_store_error(ed_store_db(s->st), rc, "read job tier");
    }
    if ((r = calloc(1, sizeof(*r))) == NULL) {
        sqlite3_finalize(q);
        return ed_error_set(ED_ENOMEM, "running job");
    }
    snprintf(tier_name, sizeof(tier_name), "%s", owner.tier);
    seq_base = sqlite3_column_int64(q, 0);
    prior = sqlite3_column_int64(q, 1);
    r->requeue = sqlite3_column_int(q, 2) != 0;
    r->preemptible = sqlite3_column_int(q, 3) != 0;
    r->units = sqlite3_column_int(q, 4);
    r->key_id = sqlite3_column_int64(q, 5);
    r->ranks = sqlite3_column_int(q, 6);
    r->nodes = sqlite3_column_int(q, 7);
    suspended = owner.suspended;
    sqlite3_finalize(q);
    /* nothing of a suspended user starts (a submit that raced the
     * suspension, a requeued job); nothing of a key whose budget is spent */
    if (suspended) {
        fail_queued(s, id, "suspended");
        free(r);
        return 0;
    }
    if (r->key_id && (err = sched__key_budget(s, r->key_id, now)) < 0) {
        if (err == ED_EQUOTA) {
            fail_queued(s, id, "key_budget");
            ed_log_info("sched.start", "job %lld: %s", (long long)id, ed_error_last());
            free(r);
            return 0;
        }
        ed_log_warn("sched.budget", "job %lld key %lld: %s", (long long)id, (long long)r->key_id, ed_error_last());
    }
    r->log_fd = -1;
    r->id = id;
    r->user_id = j.user_id;
    r->cls = ci;
    r->kernel = strcmp(j.entry, SCHED_KERNEL_ENTRY) == 0;
    /* whole GPUs (gpu_alloc.c), before any money moves: when another
     * class's work holds the devices it needs, it waits in the queue */
    if ((err = sched__gpu_alloc(s, r, c, devs, sizeof(devs))) == ED_EBUSY) {
        free(r);
        return 0;
    }
    snprintf(r->resource, sizeof(r->resource), "%s", c->name);
    snprintf(r->tier, sizeof(r->tier), "%s", tier_name);
    r->uncharged = j.uncharged;
    r->price = r->uncharged ? 0 : c->price_mcoins_per_hour * r->units;
    r->seq_base = r->seq = seq_base;
    r->prior_charged = prior;
    if ((err = quota_tier_get(&tier, s->st, tier_name)) < 0 ||
        (err = sched_allowance_get(&r->free_per_day, s, tier_name, c->name)) < 0 ||
        (err = quota_meter_free_left(&free_left, s->st, j.user_id, c->name, r->free_per_day, now)) < 0)
        goto fail;
    r->weight = tier.weight;
    ref_of(ref, sizeof(ref), id);
    if ((err = quota_meter_totals(&r->charged_base, &r->unpaid_base, s->st, ref)) < 0)
        goto fail;
    hold = sched__hold_amount(s, r->price);     /* 0 when uncharged: nothing reserved */
    if (hold > 0) {
        snprintf(key, sizeof(key), "hold:job:%lld:%d", (long long)id, j.attempt + 1);
        err = quota_hold_open(&r->hold_id, s->st, j.user_id, hold, ref, key);
        if (err == ED_EQUOTA && free_left == 0) {
            fail_queued(s, id, "out_of_funds");
            ed_log_info("sched.start", "job %lld: out of funds at start", (long long)id);
            free(r);
            return 0;
        }
        if (err == 0)
            r->hold_mcoins = hold;
        else if (err != ED_EQUOTA)
            goto fail;
    }
    r->started_at = now;
    r->end_by = now + j.max_runtime_ms;
    assert(sched__locked(s));   /* r goes onto s->run */
    assert(sched__job_transition_ok("queued", "running"));
    if ((err = ed_store_prepare(&q, s->st,
                                "UPDATE jobs SET status = 'running', started_at = ?2, attempt = attempt + 1, hold_id = ?3, "
                                "devices = ?4, warned_at = NULL, ended_at = NULL WHERE id = ?1 AND status = 'queued'")) < 0)
        goto fail;
    sqlite3_bind_int64(q, 1, id);
    sqlite3_bind_int64(q, 2, now);
    if (r->hold_id)
        sqlite3_bind_int64(q, 3, r->hold_id);
    sqlite3_bind_text(q, 4, devs, -1, SQLITE_STATIC);
    rc = ed_store_step(q);
    sqlite3_finalize(q);
    if (rc != SQLITE_DONE) {
        err = ed_store_error(ed_store_db(s->st), rc, "mark job running");
        goto fail;
    }
    if (sqlite3_changes(ed_store_db(s->st)) == 0) {     /* cancelled meanwhile */
        if (r->hold_id)
            quota_hold_settle(s->st, r->hold_id, 0);
        free(r);
        return 0;
    }
    sched_job_dir(dir, sizeof(dir), s, id);
    snprintf(path, sizeof(path), "%s/log", dir);
    r->log_fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
    if (j.attempt > 0)
        sched__log_notice(r, "attempt %d", j.attempt + 1);
    /* its datasets: "latest" resolved now, and recorded as what it runs
     * with; one the user can no longer see fails the start, never a run
     * without its data */
    if ((err = j.fixed_mounts ? sched__mounts_fixed(&r->mounts, &r->n_mounts, s, id)
                              : sched__mounts_resolve(&r->mounts, &r->n_mounts, s, j.user_id, j.project_id)) < 0 ||
        (!j.fixed_mounts && (err = sched__mounts_record(s, id, r->mounts, r->n_mounts, false)) < 0)) {
        sched__outcome o = {0};
        bool platform = err == ED_EIO || err == ED_ENOMEM || err == ED_EBUSY;
        sched__log_notice(r, "could not start: %s", ed_error_last());
        ed_log_info("sched.start", "job %lld: datasets: %s", (long long)id, ed_error_last());
        free(r->mounts);
        r->mounts = NULL;
        snprintf(r->stop_reason, sizeof(r->stop_reason), "%s", platform ? "platform_error" : "user_error");
        finish_run(s, r, &o, ed_now_ms());
        return 0;
    }
    err = s->exec->launch(s, r, &j, c, tier.allow_egress && !j.network_off, dir);
    free(r->mounts);    /* recorded; the sandbox has its binds */
    r->mounts = NULL;
    r->n_mounts = 0;
    if (err < 0) {
        sched__outcome o = {0};
        sched__log_notice(r, "could not start: %s", ed_error_last());
        ed_log_error("sched.start", "job %lld: %s", (long long)id, ed_error_last());
        snprintf(r->stop_reason, sizeof(r->stop_reason), "platform_error");
        finish_run(s, r, &o, ed_now_ms());
        return 0;
    }
    record_exec(s, r);
    if (s->nrun == s->caprun) {
        size_t cap = s->caprun ? 2 * s->caprun : 16;
        sched__running **nv = realloc(s->run, cap * sizeof(*nv));
        if (nv == NULL) {
            sched__outcome o = {0};
            s->exec->signal(r, SIGKILL);
            snprintf(r->stop_reason, sizeof(r->stop_reason), "platform_error");
            while (s->exec->poll(r, &o) == 0)
                usleep(10000);
            finish_run(s, r, &o, ed_now_ms());
            return ed_error_set(ED_ENOMEM, "running list");
        }
        s->run = nv;
        s->caprun = cap;
    }
    s->run[s->nrun++] = r;
    ed_log_info("sched.start", "job %lld on %s (%d units) for user %lld", (long long)id, c->name, r->units,
                (long long)j.user_id);
    return 0;
fail:
    if (r->hold_id)
        quota_hold_settle(s->st, r->hold_id, 0);
    free(r);
    return err;
}

/* ---- stopping a user's work -------------------------------------------------- */

int sched_user_stop(int *out_n, sched *s, int64_t user_id, const char *reason)
{
    sqlite3_stmt *q = NULL;
    size_t len = reason ? strlen(reason) : 0;
    int64_t now = ed_now_ms();
    int n = 0, rc, err;

    if (out_n)
        *out_n = 0;
    if (user_id <= 0 || len == 0 || len >= sizeof(((sched__running *)NULL)->stop_reason) ||
        strspn(reason, "abcdefghijklmnopqrstuvwxyz_") != len)
        return ed_error_set(ED_EINVAL, "stop reason must be 1-23 of [a-z_] and the user an id");
    /* under mu: the scheduler thread cannot start a queued item between the
     * UPDATE and the walk over running work */
    sched__lock(s);
    assert(sched__job_transition_ok("queued", "failed"));
    if ((err = ed_store_prepare(&q, s->st,
                                "UPDATE jobs SET status = 'failed', failure_reason = ?2, ended_at = ?3 "
                                "WHERE user_id = ?1 AND status = 'queued'")) < 0)
        goto out;
    sqlite3_bind_int64(q, 1, user_id);
    sqlite3_bind_text(q, 2, reason, -1, SQLITE_STATIC);
    sqlite3_bind_int64(q, 3, now);
    rc = ed_store_step(q);
    sqlite3_finalize(q);
    if (rc != SQLITE_DONE) {
        err = ed_store_error(ed_store_db(s->st), rc, "stop queued work");
        goto out;
    }
    n = sqlite3_changes(ed_store_db(s->st));
    for (size_t i = 0; i < s->nrun; i++) {
        sched__running *r = s->run[i];
        if (r->user_id != user_id)
            continue;
        if (r->stop_reason[0] == '\0') {
            stop_run(s, r, reason, now);
            n++;
        } else if (strcmp(r->stop_reason, "preempted") == 0) {
            /* already stopping, but it would go back to the queue: it ends */
            snprintf(r->stop_reason, sizeof(r->stop_reason), "%s", reason);
            n++;
        }
    }
    pthread_cond_signal(&s->cv);
    err = 0;
    ed_log_info("sched.stop", "user %lld: %d item%s stopped: %s", (long long)user_id, n, n == 1 ? "" : "s", reason);
out:
    sched__unlock(s);
    if (err == 0 && out_n)
        *out_n = n;
    return err;
}

/* ---- the tick ------------------------------------------------------------- */

static int tick_locked(sched *s)
{
    sched_item *q = NULL;
    sched_run *rr = NULL;
    sched_resource *cls = NULL;
    sched_pool pools[SCHED_MAX_CLASSES];
    size_t nq = 0, nr = 0, ncls = 0;
    sched_decision d = {0};
    int64_t now = ed_now_ms();
    int err;

    assert(sched__locked(s));
    /* reap */
    for (size_t i = 0; i < s->nrun;) {
        sched__running *r = s->run[i];
        sched__outcome o;
        memset(&o, 0, sizeof(o));
        if (s->exec->poll(r, &o) == 1) {
            s->run[i] = s->run[--s->nrun];
            finish_run(s, r, &o, ed_now_ms());
            continue;
        }
        i++;
    }
    /* meter and limits */
    now = ed_now_ms();
    for (size_t i = 0; i < s->nrun; i++) {
        sched__running *r = s->run[i];
        meter_run(s, r, now);
        if (!r->stop_reason[0] && now >= r->end_by)
            stop_run(s, r, "timeout", now);
        if (r->stop_reason[0] && now >= r->kill_at)
            s->exec->signal(r, SIGKILL);
    }
    if (s->stopping)
        return 0;
    /* place */
    if ((err = sched__queue_snapshot(s, &q, &nq, &rr, &nr, pools, &cls, &ncls)) < 0)
        return err;
    if (nq == 0 || ncls == 0)
        goto out;
    for (size_t i = 0; i < nr; i++)
        for (size_t k = 0; k < s->nrun; k++)
            if (s->run[k]->id == rr[i].id)
                rr[i].stopping = s->run[k]->stop_reason[0] != '\0';
    d.start = malloc(nq * sizeof(*d.start));
    d.preempt = malloc((nr ? nr : 1) * sizeof(*d.preempt));
    if (d.start == NULL || d.preempt == NULL) {
        err = ed_error_set(ED_ENOMEM, "decision");
        goto out;
    }
    if ((err = sched_plan(&d, q, nq, rr, nr, pools, (int)ncls, now)) < 0)
        goto out;
    for (size_t i = 0; i < d.npreempt; i++)
        for (size_t k = 0; k < s->nrun; k++)
            if (s->run[k]->id == d.preempt[i])
                stop_run(s, s->run[k], "preempted", now);
    for (size_t i = 0; i < d.nstart; i++)
        if (start_job(s, d.start[i], cls, ncls) < 0)
            ed_log_error("sched.start", "job %lld: %s", (long long)d.start[i], ed_error_last());
    err = 0;
out:
    free(d.start);
    free(d.preempt);
    free(q);
    free(rr);
    free(cls);
    return err;
}

int sched_tick(sched *s)
{
    int err;

    sched__lock(s);
    err = tick_locked(s);
    sched__unlock(s);
    return err;
}

static void *thread_main(void *p)
{
    sched *s = p;
    struct timespec ts;

    sched__lock(s);
    while (!s->stopping) {
        if (tick_locked(s) < 0)
            ed_log_warn("sched.tick", "%s", ed_error_last());
        sched__retention_sweep(s);   /* retention.c: ended jobs' work dirs, expired job dirs */
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 100 * 1000000L;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        if (!s->stopping)
            pthread_cond_timedwait(&s->cv, &s->mu, &ts);
    }
    sched__unlock(s);
    return NULL;
}

/* ---- reconcile -------------------------------------------------------------- */

/* A running job whose executor keeps work going without the server (Slurm):
 * take it back as start_job left it (its hold, its metering from where this
 * attempt began, its log) instead of failing it. 0 and *hold the hold it
 * keeps when it is running again under this server (or ended meanwhile: the
 * next tick's poll reaps it); ED_ENOTFOUND when it cannot be (another
 * executor, no handle, the backend lost it): the caller fails it. */
static int reattach(sched *s, int64_t id, int64_t *hold)
{
    sched_job_info j;
    sched_resource c;
    quota_tier tier;
    quota_hold_info h;
    acct_user owner;
    sched__running *r;
    sqlite3_stmt *q = NULL;
    char dir[700], path[760];
    int rc, err;

    *hold = 0;
    if (s->exec->attach == NULL)
        return ED_ENOTFOUND;
    if ((err = sched__job_read(&j, s, id)) < 0)
        return err;
    if (strcmp(j.executor, s->exec->name) != 0 || j.exec_ref[0] == '\0')
        return ED_ENOTFOUND;
    if ((r = calloc(1, sizeof(*r))) == NULL)
        return ed_error_set(ED_ENOMEM, "running job");
    r->log_fd = -1;
    if ((err = ed_store_prepare(&q, s->st,
                                "SELECT metered_seq, requeue, preemptible, units, ranks, nodes, IFNULL(hold_id, 0), "
                                "IFNULL(attempt_seq_base, 0), IFNULL(attempt_charged_base, 0), "
                                "IFNULL(attempt_unpaid_base, 0), IFNULL(attempt_prior_charged, 0), "
                                "IFNULL(warned_at, 0), IFNULL(devices, '') FROM jobs WHERE id = ?1")) < 0)
        goto fail;
    sqlite3_bind_int64(q, 1, id);
    if ((rc = sqlite3_step(q)) != SQLITE_ROW) {
        err = ed_store_error(ed_store_db(s->st), rc, "read running job");
        sqlite3_finalize(q);
        goto fail;
    }
    r->seq = sqlite3_column_int64(q, 0);
    r->requeue = sqlite3_column_int(q, 1) != 0;
    r->preemptible = sqlite3_column_int(q, 2) != 0;
    r->units = sqlite3_column_int(q, 3);
    r->ranks = sqlite3_column_int(q, 4);
    r->nodes = sqlite3_column_int(q, 5);
    r->hold_id = sqlite3_column_int64(q, 6);
    r->seq_base = sqlite3_column_int64(q, 7);
    r->charged_base = sqlite3_column_int64(q, 8);
    r->unpaid_base = sqlite3_column_int64(q, 9);
    r->prior_charged = sqlite3_column_int64(q, 10);
    r->warned_at = sqlite3_column_int64(q, 11);
    {
        const char *d = (const char *)sqlite3_column_text(q, 12);
        int n = 0;
        for (char *e; d && *d && n < 16; d = *e ? e + 1 : e)
            r->devices[n++] = (int)strtol(d, &e, 10);
        r->gpu_sim = n > 0;   /* the executor's devices (Slurm's nodes'), not this host's (gpu_alloc.c) */
    }
    sqlite3_finalize(q);
    r->id = id;
    r->user_id = j.user_id;
    r->key_id = j.key_id;
    r->started_at = j.started_at;
    r->end_by = j.started_at + j.max_runtime_ms;
    snprintf(r->exec_ref, sizeof(r->exec_ref), "%s", j.exec_ref);
    snprintf(r->resource, sizeof(r->resource), "%s", j.resource);
    if ((err = acct_user_get(&owner, s->st, j.user_id)) < 0 || (err = sched_resource_get(&c, s, j.resource)) < 0 ||
        (err = quota_tier_get(&tier, s->st, owner.tier)) < 0 ||
        (err = sched_allowance_get(&r->free_per_day, s, owner.tier, c.name)) < 0)
        goto fail;
    snprintf(r->tier, sizeof(r->tier), "%s", owner.tier);
    r->weight = tier.weight;
    r->uncharged = j.uncharged;
    r->price = r->uncharged ? 0 : c.price_mcoins_per_hour * r->units;
    if (r->hold_id > 0 && quota_hold_get(&h, s->st, r->hold_id) == 0 && h.open)
        r->hold_mcoins = h.amount_mcoins;
    else
        r->hold_id = 0;
    sched_job_dir(dir, sizeof(dir), s, id);
    if ((err = s->exec->attach(s, r, &j, dir)) < 0)
        goto fail;
    snprintf(path, sizeof(path), "%s/log", dir);
    r->log_fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
    sched__log_notice(r, "the server restarted: re-attached to %s job %s", s->exec->name, r->exec_ref);
    if (s->nrun == s->caprun) {
        size_t cap = s->caprun ? 2 * s->caprun : 16;
        sched__running **nv = realloc(s->run, cap * sizeof(*nv));
        if (nv == NULL) {
            s->exec->release(r);
            err = ed_error_set(ED_ENOMEM, "running list");
            goto fail;
        }
        s->run = nv;
        s->caprun = cap;
    }
    s->run[s->nrun++] = r;
    *hold = r->hold_id;
    ed_log_info("sched.reconcile", "job %lld re-attached (%s job %s)", (long long)id, s->exec->name, r->exec_ref);
    return 0;
fail:
    if (r->log_fd >= 0)
        close(r->log_fd);
    free(r);
    return err;
}

/* Work the store says is running cannot be: its sandboxes died with the old
 * server (they are killed when their parent goes). Fail it with
 * platform_error and refund it; release every hold of work that is not
 * running; finish meter charges a crash interrupted. */
static int reconcile(sched *s)
{
    sqlite3_stmt *q = NULL;
    int64_t ids[256], holds[256], *kept = NULL;
    size_t nkept = 0, capkept = 0;
    int n, rc, err, recovered = 0;
    char ref[48], key[64], dir[700];

    if ((err = quota_meter_recover(&recovered, s->st)) < 0)
        return err;
    /* half-submitted jobs */
    do {
        n = 0;
        if ((err = ed_store_prepare(&q, s->st, "SELECT id FROM jobs WHERE status = 'preparing' LIMIT 256")) < 0)
            return err;
        while ((rc = sqlite3_step(q)) == SQLITE_ROW && n < 256)
            ids[n++] = sqlite3_column_int64(q, 0);
        sqlite3_finalize(q);
        for (int i = 0; i < n; i++) {
            if (sched_job_dir(dir, sizeof(dir), s, ids[i]) == 0)
                sched__rm_rf(dir);
            if ((err = exec_sql_id(s, "DELETE FROM jobs WHERE id = ?1", ids[i])) < 0)
                return err;
        }
    } while (n == 256);
    /* running work: re-attached where the executor kept it going (Slurm),
     * else failed */
    do {
        n = 0;
        if ((err = ed_store_prepare(&q, s->st,
                                    "SELECT id, IFNULL(hold_id, 0) FROM jobs WHERE status = 'running' AND id > ?1 "
                                    "ORDER BY id LIMIT 256")) < 0)
            goto out;
        sqlite3_bind_int64(q, 1, nkept ? kept[nkept - 2] : 0);
        while ((rc = sqlite3_step(q)) == SQLITE_ROW && n < 256) {
            ids[n] = sqlite3_column_int64(q, 0);
            holds[n++] = sqlite3_column_int64(q, 1);
        }
        sqlite3_finalize(q);
        for (int i = 0; i < n; i++) {
            int64_t settled = 0, user = 0, kept_hold = 0;
            bool is_open = false;
            if ((err = reattach(s, ids[i], &kept_hold)) == 0) {
                if (nkept + 2 > capkept) {
                    int64_t *nv = realloc(kept, (capkept = capkept ? 2 * capkept : 64) * sizeof(*nv));
                    if (nv == NULL) {
                        err = ed_error_set(ED_ENOMEM, "reconcile");
                        goto out;
                    }
                    kept = nv;
                }
                kept[nkept++] = ids[i];           /* ids, then its hold, in pairs */
                kept[nkept++] = kept_hold;
                continue;
            }
            if (err != ED_ENOTFOUND)
                ed_log_warn("sched.reconcile", "job %lld: cannot re-attach: %s", (long long)ids[i], ed_error_last());
            ref_of(ref, sizeof(ref), ids[i]);
            if ((err = quota_meter_refund(NULL, s->st, ref)) < 0)
                goto out;
            if (holds[i] > 0) {
                quota_hold_info h;
                if ((err = quota_hold_get(&h, s->st, holds[i])) < 0 && err != ED_ENOTFOUND)
                    goto out;
                if (err == 0) {
                    is_open = h.open;
                    settled = h.settled_mcoins;
                    user = h.user_id;
                }
                if (is_open && (err = quota_hold_settle(s->st, holds[i], 0)) < 0)
                    goto out;
                if (!is_open && settled > 0) {
                    snprintf(key, sizeof(key), "hold-refund:%lld", (long long)holds[i]);
                    if ((err = quota_refund(NULL, s->st, user, settled, ref, "platform failure", key)) < 0)
                        goto out;
                }
            }
            assert(sched__job_transition_ok("running", "failed"));
            if ((err = exec_sql_id(s,
                                   "UPDATE jobs SET status = 'failed', failure_reason = 'platform_error', "
                                   "ended_at = CAST(strftime('%s', 'now') AS INTEGER) * 1000, charged_mcoins = 0 "
                                   "WHERE id = ?1", ids[i])) < 0)
                goto out;
            if (sched_job_dir(dir, sizeof(dir), s, ids[i]) == 0) {
                char path[760];
                int fd;
                snprintf(path, sizeof(path), "%s/log", dir);
                if ((fd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC)) >= 0) {
                    static const char msg[] = "[eddy] the server restarted while this job ran: "
                                              "failed with platform_error, charges refunded\n";
                    if (write(fd, msg, sizeof(msg) - 1) < 0)
                        ed_log_warn("sched.reconcile", "job log: %s", strerror(errno));
                    close(fd);
                }
            }
            ed_log_warn("sched.reconcile", "job %lld was running: failed with platform_error, refunded",
                        (long long)ids[i]);
        }
    } while (n == 256);
    /* holds of work that is not running (opened just before a crash): every
     * open hold of a job but those of re-attached work */
    do {
        int settled_now = 0;
        if ((err = quota_holds_open(ids, &n, 256, s->st, "job:")) < 0)
            goto out;
        for (int i = 0; i < n; i++) {
            bool keep = false;
            for (size_t k = 1; k < nkept && !keep; k += 2)
                keep = kept[k] == ids[i];
            if (keep)
                continue;
            if ((err = quota_hold_settle(s->st, ids[i], 0)) < 0)
                goto out;
            settled_now++;
        }
        if (settled_now == 0)
            break;
    } while (n == 256);
    if (recovered)
        ed_log_warn("sched.reconcile", "finished %d interrupted meter charges", recovered);
    err = 0;
out:
    free(kept);
    return err;
}

/* ---- open / close ---------------------------------------------------------- */

int sched_open(sched **out, ed_store *st, const sched_config *cfg)
{
    sched *s;
    char path[600];
    int err;

    *out = NULL;
    if (cfg->meter_interval_ms < 1000)
        return ed_error_set(ED_EINVAL, "meter interval %lld ms is below 1000", (long long)cfg->meter_interval_ms);
    if ((s = calloc(1, sizeof(*s))) == NULL)
        return ed_error_set(ED_ENOMEM, "scheduler");
    s->st = st;
    s->cfg = *cfg;
    if (cfg->executor[0] == '\0' || strcmp(cfg->executor, "local") == 0) {
        s->exec = &sched__exec_local;
    } else if (strcmp(cfg->executor, "slurm") == 0) {
        s->exec = &sched__exec_slurm;
    } else {
        free(s);
        return ed_error_set(ED_EINVAL, "EDDY_EXECUTOR '%.16s' is not an executor (local, slurm)", cfg->executor);
    }
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cv, NULL);
    s->ngpus = sched__gpu_discover(s->gpus, SCHED_MAX_GPUS, NULL);   /* gpu_nvml.c */
    s->discovered_gpus = s->ngpus;
    snprintf(path, sizeof(path), "%s/jobs", cfg->data_dir);
    if (mkdir(path, 0700) < 0 && errno != EEXIST) {
        err = ed_error_set(ED_EIO, "cannot create %s: %s", path, strerror(errno));
        goto fail;
    }
    if (s->exec->open && (err = s->exec->open(s)) < 0)      /* exec_slurm.c: reach slurmrestd */
        goto fail;
    if ((err = sched__disk_open(s)) < 0 || (err = reconcile(s)) < 0) {  /* retention.c: disk quotas */
        if (s->exec->close)
            s->exec->close(s);
        goto fail;
    }
    if (cfg->start_thread) {
        if (pthread_create(&s->thread, NULL, thread_main, s) != 0) {
            err = ed_error_set(ED_EIO, "cannot start the scheduler thread");
            goto fail;
        }
        s->thread_started = true;
    }
    ed_log_info("sched.start", "scheduler up: %d GPUs found%s, meter interval %lld ms", s->discovered_gpus,
                cfg->sim_gpus ? " (simulated devices configured)" : "", (long long)cfg->meter_interval_ms);
    *out = s;
    return 0;
fail:
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->cv);
    free(s);
    return err;
}

void sched_close(sched *s)
{
    int64_t deadline;

    if (s == NULL)
        return;
    sched__lock(s);
    s->stopping = true;
    pthread_cond_signal(&s->cv);
    sched__unlock(s);
    if (s->thread_started)
        pthread_join(s->thread, NULL);
    /* what still runs is stopped by the platform: platform_error, refunded.
     * Under mu like every other walk over s->run (a cancel may still come in
     * from an API thread while the server shuts down). An executor whose
     * work outlives the server (Slurm) leaves it running: the rows stay
     * 'running' with their holds, and the next sched_open re-attaches. */
    sched__lock(s);
    if (s->exec->attach) {
        for (size_t i = 0; i < s->nrun; i++) {
            sched__log_notice(s->run[i], "the server stops; this job goes on under %s (%s)", s->exec->name,
                              s->run[i]->exec_ref);
            s->exec->release(s->run[i]);
            if (s->run[i]->log_fd >= 0)
                close(s->run[i]->log_fd);
            free(s->run[i]);
        }
        s->nrun = 0;
    }
    for (size_t i = 0; i < s->nrun; i++) {
        snprintf(s->run[i]->stop_reason, sizeof(s->run[i]->stop_reason), "platform_error");
        s->exec->signal(s->run[i], SIGTERM);
    }
    deadline = ed_now_ms() + (s->cfg.stop_grace_ms < 5000 ? s->cfg.stop_grace_ms : 5000);
    while (s->nrun > 0) {
        for (size_t i = 0; i < s->nrun;) {
            sched__outcome o;
            memset(&o, 0, sizeof(o));
            if (s->exec->poll(s->run[i], &o) == 1) {
                sched__running *r = s->run[i];
                s->run[i] = s->run[--s->nrun];
                finish_run(s, r, &o, ed_now_ms());
                continue;
            }
            if (ed_now_ms() >= deadline)
                s->exec->signal(s->run[i], SIGKILL);
            i++;
        }
        if (s->nrun > 0)
            usleep(10000);
    }
    sched__unlock(s);
    if (s->exec->close)
        s->exec->close(s);
    sched__disk_close(s);
    free(s->run);
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->cv);
    free(s);
}

/* ---- overview ------------------------------------------------------------- */

int sched_overview_get(sched_overview *out, sched *s)
{
    sched_resource *cls = NULL;
    size_t n = 0;
    sqlite3_stmt *q = NULL;
    int rc, err;

    memset(out, 0, sizeof(*out));
    if ((err = sched_resource_list(&cls, &n, s)) < 0)
        return err;
    out->nclasses = (int)n;
    out->gpus_found = s->discovered_gpus;
    out->gpus_simulated = s->cfg.sim_gpus;
    out->ngpus = sched_gpus_get(out->gpus, SCHED_MAX_GPUS, s);   /* gpu_alloc.c: figures, holders */
    memcpy(out->classes, cls, n * sizeof(*cls));
    free(cls);
    /* users are accounts/'s, revenue quota/'s; the jobs are ours */
    if ((err = acct_user_count(&out->users, s->st)) < 0 ||
        (err = quota_revenue_since(&out->charged_today_mcoins, s->st, ed_time_day_start_ms(ed_now_ms()))) < 0)
        return err;
    if ((err = ed_store_prepare(&q, s->st,
                                "SELECT (SELECT COUNT(*) FROM jobs WHERE status = 'running'), "
                                "(SELECT COUNT(*) FROM jobs WHERE status = 'queued')")) < 0)
        return err;
    rc = sqlite3_step(q);
    if (rc == SQLITE_ROW) {
        out->running_jobs = sqlite3_column_int(q, 0);
        out->queued_jobs = sqlite3_column_int(q, 1);
    }
    sqlite3_finalize(q);
    return rc == SQLITE_ROW ? 0 : ed_store_error(ed_store_db(s->st), rc, "overview");
}

int sched_burn_rate(int64_t *out, sched *s, int64_t user_id)
{
    sqlite3_stmt *q = NULL;
    int rc, err;

    *out = 0;
    if ((err = ed_store_prepare(&q, s->st,
                                "SELECT IFNULL(SUM(r.price_mcoins_per_hour * j.units), 0) FROM jobs j "
                                "JOIN sched_resources r ON r.name = j.resource "
                                "WHERE j.user_id = ?1 AND j.status = 'running' AND j.uncharged = 0")) < 0)
        return err;
    sqlite3_bind_int64(q, 1, user_id);
    rc = sqlite3_step(q);
    if (rc == SQLITE_ROW)
        *out = sqlite3_column_int64(q, 0);
    sqlite3_finalize(q);
    return rc == SQLITE_ROW ? 0 : ed_store_error(ed_store_db(s->st), rc, "burn rate");
}

int sched_quota_view_get(sched_quota_view *out, sched *s, int64_t user_id, const char *tier)
{
    sqlite3_stmt *q = NULL;
    quota_balance b;
    quota_tier t;
    int64_t now = ed_now_ms(), allowance, left;
    char entry[32] = "";
    int rc, err;

    out->burn_mcoins_per_hour = 0;
    out->free_ms_left_today = 0;
    out->ms_remaining = -1;
    if ((err = quota_tier_get(&t, s->st, tier)) < 0 || (err = quota_balance_get(&b, s->st, user_id)) < 0)
        return err;
    /* running work burns coins once its class's free allowance is used up */
    if ((err = ed_store_prepare(&q, s->st,
                                "SELECT j.resource, r.price_mcoins_per_hour * j.units FROM jobs j "
                                "JOIN sched_resources r ON r.name = j.resource "
                                "WHERE j.user_id = ?1 AND j.status = 'running' AND j.uncharged = 0")) < 0)
        return err;
    sqlite3_bind_int64(q, 1, user_id);
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        const char *res = (const char *)sqlite3_column_text(q, 0);
        if (sched_allowance_get(&allowance, s, tier, res) == 0 &&
            quota_meter_free_left(&left, s->st, user_id, res, allowance, now) == 0 && left != 0)
            continue;
        out->burn_mcoins_per_hour += sqlite3_column_int64(q, 1);
    }
    sqlite3_finalize(q);
    if (rc != SQLITE_DONE)
        return ed_store_error(ed_store_db(s->st), rc, "burn rate");
    if ((err = ed_store_prepare(&q, s->st, "SELECT name FROM sched_resources WHERE entry_gpu = 1 LIMIT 1")) < 0)
        return err;
    if (sqlite3_step(q) == SQLITE_ROW)
        snprintf(entry, sizeof(entry), "%s", (const char *)sqlite3_column_text(q, 0));
    sqlite3_finalize(q);
    if (entry[0] && (err = sched_allowance_get(&allowance, s, tier, entry)) == 0 &&
        (err = quota_meter_free_left(&left, s->st, user_id, entry, allowance, now)) == 0)
        out->free_ms_left_today = left;
    if (err < 0)
        return err;
    if (out->burn_mcoins_per_hour > 0) {
        int64_t spendable = b.coins_mcoins + t.overdraft_mcoins;
        out->ms_remaining = spendable > 0 ? spendable * 3600000 / out->burn_mcoins_per_hour : 0;
    }
    return 0;
}
