/*
 * cull.c - the culler thread (every KH_TICK_MS): notices kernels whose job
 * ended before their socket came, stops idle kernels (idle_timeout) and
 * those past their maximum session (max_session, warned before), and
 * deletes the journals and Jupyter sessions of dead kernels past the
 * retention time or their user's newest kernel_dead_journals_per_user
 * (README.md "Culling", "Limits").
 */
#include "kh_int.h"

#include "sched.h"

#include "ed_error.h"
#include "ed_log.h"
#include "ed_time.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define SWEEP_MS  60000          /* how often dead kernels' journals are swept (at most) */

typedef struct action {
    char    id[KH_ID_LEN];
    int64_t user_id, job_id;
    int     what;        /* 1 warn, 2 stop, 3 start failed */
    char    text[200];
} action;

/* Delete the journals (and Jupyter sessions) of kernels dead for longer
 * than kernel_journal_retention_ms, and of each user's dead kernels past the
 * newest kernel_dead_journals_per_user, a few kernels per call (culler
 * thread, no lock held). The kernels' rows stay: GET still says how they
 * ended. */
static void retention_sweep(kh_hub *h)
{
    int64_t keep = h->cfg.journal_retention_ms;
    int per_user = h->cfg.dead_journals_per_user;
    char ids[32][KH_ID_LEN];
    int n = 0, rc;
    sqlite3_stmt *q;

    if (keep > 0 && ed_store_prepare(&q, h->cfg.store,
                                     "SELECT id FROM kernels WHERE status = 'dead' AND ended_at < ?1 AND "
                                     "(EXISTS (SELECT 1 FROM kernel_journal j WHERE j.kernel_id = kernels.id) OR "
                                     "EXISTS (SELECT 1 FROM jupyter_sessions s WHERE s.kernel_id = kernels.id)) "
                                     "LIMIT 16") == 0) {
        sqlite3_bind_int64(q, 1, ed_now_ms() - keep);
        while (n < 16 && (rc = sqlite3_step(q)) == SQLITE_ROW)
            snprintf(ids[n++], KH_ID_LEN, "%s", (const char *)sqlite3_column_text(q, 0));
        sqlite3_finalize(q);
    }
    if (per_user > 0 && ed_store_prepare(&q, h->cfg.store,
                                         "SELECT id FROM (SELECT id, ROW_NUMBER() OVER (PARTITION BY user_id "
                                         "ORDER BY ended_at DESC, id) AS rn FROM kernels WHERE status = 'dead') "
                                         "WHERE rn > ?1 AND EXISTS (SELECT 1 FROM kernel_journal j WHERE "
                                         "j.kernel_id = id) LIMIT 16") == 0) {
        sqlite3_bind_int64(q, 1, per_user);
        while (n < 32 && (rc = sqlite3_step(q)) == SQLITE_ROW)
            snprintf(ids[n++], KH_ID_LEN, "%s", (const char *)sqlite3_column_text(q, 0));
        sqlite3_finalize(q);
    }
    for (int i = 0; i < n; i++) {
        if (kh__journal_delete(h, ids[i], INT64_MAX) < 0 ||
            kh__db_exec(h, "DELETE FROM jupyter_sessions WHERE kernel_id = ?1", ids[i], NULL, NULL, 0, 0) < 0) {
            ed_log_error("kernel.retention", "kernel %s: %s", ids[i], ed_error_last());
            break;
        }
        ed_log_info("kernel.retention", "kernel %s: dead past the retention time or its user's newest %d; its "
                    "journal was deleted", ids[i], per_user);
    }
}

void *kh__culler_main(void *p)
{
    kh_hub *h = p;
    action acts[64];

    kh__lock(&h->mu);
    while (!h->stopping) {
        struct timespec ts;
        int na = 0;
        int64_t now = ed_now_ms();

        for (kh__k *k = h->list; k && na < 64; k = k->next) {
            if (!kh__alive(k) || k->stopping || k->job_id == 0)
                continue;
            action *a = &acts[na];
            snprintf(a->id, sizeof(a->id), "%s", k->id);
            a->user_id = k->user_id;
            a->job_id = k->job_id;
            a->what = 0;
            if (k->fd < 0 && k->started_at == 0) {
                a->what = 3;    /* not started: check its job */
            } else if (k->started_at && now - k->started_at >= k->max_session_ms) {
                snprintf(k->stop_reason, sizeof(k->stop_reason), "max_session");
                k->stopping = true;
                a->what = 2;
            } else if (strcmp(k->state, "idle") == 0 && k->nsubs == 0 && k->idle_ms > 0 &&
                       now - k->last_activity_at >= k->idle_ms) {
                snprintf(k->stop_reason, sizeof(k->stop_reason), "idle_timeout");
                k->stopping = true;
                a->what = 2;
            } else if (!k->warned && k->started_at) {
                int64_t warn = k->max_session_ms / 4 < 60000 ? k->max_session_ms / 4 : 60000;
                if (now - k->started_at >= k->max_session_ms - warn) {
                    k->warned = true;
                    a->what = 1;
                    snprintf(a->text, sizeof(a->text),
                             "[eddy] this kernel reaches its maximum session length in %lld s and will then be "
                             "stopped; save your work.\n",
                             (long long)((k->max_session_ms - (now - k->started_at) + 999) / 1000));
                }
            }
            if (a->what)
                na++;
        }
        kh__unlock(&h->mu);
        for (int i = 0; i < na; i++) {
            action *a = &acts[i];
            if (a->what == 2) {
                ed_log_info("kernel.stop", "kernel %s: %s", a->id, "stopping (culler)");
                if (kh__stop_job(h, a->user_id, a->job_id) < 0)
                    ed_log_error("kernel.stop", "kernel %s: %s", a->id, ed_error_last());
            } else if (a->what == 1) {
                kh__lock(&h->mu);
                kh__k *k = kh__find_locked(h, a->id);
                if (k)
                    k->refs++;
                kh__unlock(&h->mu);
                if (k) {
                    kh__journal_notice(h, k, NULL, a->text);
                    kh__lock(&h->mu);
                    kh__unref_locked(h, k);
                    kh__unlock(&h->mu);
                }
            } else if (a->what == 3) {
                sched_job_info j;
                if (sched_job_get(&j, h->cfg.sched, a->user_id, a->job_id) == 0 &&
                    strcmp(j.status, "queued") != 0 && strcmp(j.status, "running") != 0) {
                    bool changed = false;
                    int64_t at = 0;
                    char why[32] = "";
                    kh__lock(&h->mu);
                    kh__k *k = kh__find_locked(h, a->id);
                    if (k && k->job_id == a->job_id && k->fd < 0 && k->started_at == 0) {
                        const char *r = strcmp(j.status, "cancelled") == 0 ? "shutdown"
                                        : strcmp(j.failure_reason, "key_budget") == 0 ||
                                                  strcmp(j.failure_reason, "suspended") == 0
                                            ? j.failure_reason   /* refused before it started */
                                            : "start_failed";
                        changed = kh__set_dead_locked(h, k, r);
                        at = k->ended_at;
                        snprintf(why, sizeof(why), "%s", k->stop_reason);
                        if (changed) {
                            k->refs++;
                            kh__unref_locked(h, k);    /* leaves the list when nobody holds it */
                        }
                    }
                    kh__unlock(&h->mu);
                    if (changed)
                        kh__persist_dead(h, a->id, why, at);
                }
            }
        }
        int64_t keep = h->cfg.journal_retention_ms;
        int64_t every = keep > 0 && keep / 4 < SWEEP_MS ? (keep / 4 > KH_TICK_MS ? keep / 4 : KH_TICK_MS) : SWEEP_MS;
        if (h->sweep_ms > 0)
            every = h->sweep_ms;   /* tests shorten it */
        if ((keep > 0 || h->cfg.dead_journals_per_user > 0) && now - h->swept_ms >= every) {
            h->swept_ms = now;
            retention_sweep(h);
        }
        kh__lock(&h->mu);
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += KH_TICK_MS * 1000000L;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        if (!h->stopping)
            kh__wait_until(&h->cv, &h->mu, &ts);
    }
    h->nthreads--;
    pthread_cond_broadcast(&h->cv);
    kh__unlock(&h->mu);
    return NULL;
}

