/*
 * watchdog.c - no submission stays in flight past its state's deadline
 * (see comp.h): retried once, then failed with platform_error, its cap
 * slot given back and any charge refunded once (idempotency key on the row).
 */
#include "comp_int.h"

#include "ed_error.h"
#include "ed_log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct sweep_ctx {
    comp *c;
    int64_t now;
    comp_watchdog_report r;
} sweep_ctx;

static int sweep_body(void *p)
{
    sweep_ctx *x = p;
    sqlite3_stmt *s = NULL;
    int err;

    memset(&x->r, 0, sizeof(x->r));
    /* Retried once: back to the queue with a fresh deadline and a new
     * attempt (the old claim's result, if it ever comes, is dropped). */
    if ((err = comp__exec(x->c,
            "UPDATE comp_submissions SET status = 'queued', retries = retries + 1, attempt = attempt + 1, "
            "state_deadline = ?1 + ?2 WHERE state_deadline > 0 AND state_deadline <= ?1 AND retries = 0 "
            "AND status IN ('queued', 'validating', 'running', 'scoring')", "ii", x->now,
            x->c->limits.queued_ms)) < 0)
        return err;
    x->r.requeued = sqlite3_changes(ed_store_db(x->c->st));
    /* Past its deadline again: failed; the slot comes back (counted = 0)
     * and a charge is owed back (refund_state 1, paid after the commit). */
    if ((err = ed_store_prepare(&s, x->c->st,
            "UPDATE comp_submissions SET status = 'failed', error_class = 'platform_error', "
            "error_message = 'the submission was stuck in ' || status || ' past its time limit twice "
            "(a platform error); it does not count against your caps', counted = 0, state_deadline = 0, "
            "attempt = attempt + 1, "
            "refund_key = CASE WHEN charged_mcoins > 0 THEN 'comp-refund-' || id ELSE refund_key END, "
            "refund_state = CASE WHEN charged_mcoins > 0 AND refund_state = 0 THEN 1 ELSE refund_state END "
            "WHERE state_deadline > 0 AND state_deadline <= ?1 AND retries >= 1 "
            "AND status IN ('queued', 'validating', 'running', 'scoring')")) < 0)
        return err;
    sqlite3_bind_int64(s, 1, x->now);
    if ((err = comp__step_done(x->c, s, "fail stuck submissions")) < 0)
        return err;
    x->r.failed = sqlite3_changes(ed_store_db(x->c->st));
    return 0;
}

/* Pay the refunds owed; one the hook refuses stays pending for next time. */
static int pay_refunds(comp *c, int *paid)
{
    sqlite3_stmt *s = NULL;
    struct owed { char sid[COMP_ID_LEN]; int64_t user, mcoins; char key[64]; } *o = NULL;
    size_t n = 0, cap = 0;
    int rc, err;

    *paid = 0;
    if ((err = ed_store_prepare(&s, c->st, "SELECT id, user_id, charged_mcoins, refund_key FROM comp_submissions "
                                           "WHERE refund_state = 1 LIMIT 1000")) < 0)
        return err;
    while ((rc = ed_store_step(s)) == SQLITE_ROW) {
        if (n == cap) {
            struct owed *m = realloc(o, (cap = cap ? cap * 2 : 16) * sizeof(*o));
            if (m == NULL)
                break;
            o = m;
        }
        snprintf(o[n].sid, sizeof(o[n].sid), "%s", (const char *)sqlite3_column_text(s, 0));
        o[n].user = sqlite3_column_int64(s, 1);
        o[n].mcoins = sqlite3_column_int64(s, 2);
        snprintf(o[n].key, sizeof(o[n].key), "%s", (const char *)sqlite3_column_text(s, 3));
        n++;
    }
    sqlite3_finalize(s);
    for (size_t i = 0; i < n; i++) {
        if (c->hooks.refund == NULL)
            break;      /* nobody to pay through: kept pending */
        if (c->hooks.refund(c->hooks.payload, o[i].user, o[i].mcoins, o[i].key) < 0) {
            ed_log_error("comp.refund", "submission %s: %s (retried next run)", o[i].sid, ed_error_last());
            continue;
        }
        if ((err = comp__exec(c, "UPDATE comp_submissions SET refund_state = 2 WHERE id = ?1", "t", o[i].sid)) < 0)
            break;
        (*paid)++;
    }
    free(o);
    return 0;
}

int comp_watchdog_run(comp_watchdog_report *out, comp *c)
{
    sweep_ctx x = {.c = c, .now = comp__now(c)};
    int err, paid = 0;

    if (out != NULL)
        memset(out, 0, sizeof(*out));
    if ((err = ed_store_tx(c->st, sweep_body, &x)) < 0)
        return err;
    if (x.r.requeued > 0 || x.r.failed > 0)
        ed_log_info("comp.watchdog", "requeued %d, failed %d stuck submissions", x.r.requeued, x.r.failed);
    if ((err = pay_refunds(c, &paid)) < 0)
        return err;
    x.r.refunded = paid;
    if (out != NULL)
        *out = x.r;
    return 0;
}

int comp_recover(comp *c)
{
    /* validating and scoring happen inside this process: after a crash
     * nobody is working on them, so they are due now. */
    return comp__exec(c, "UPDATE comp_submissions SET state_deadline = ?1 WHERE status IN ('validating', 'scoring')",
                      "i", comp__now(c));
}
