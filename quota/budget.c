/*
 * budget.c - daily budgets of API keys over the meter journal.
 *
 * A piece of work started with an API key has its ref ("job:12") set to
 * that key (table quota_budget_refs) before it can be metered; meter.c
 * copies the key onto every interval it decides for the ref, so what a key's
 * work was metered on a UTC day is one indexed sum over quota_meter. Which
 * budget applies (the key's own, its env's) is the caller's to say: the
 * gateway owns keys.
 */
#include "quota.h"
#include "quota_int.h"

#include "ed_error.h"
#include "ed_time.h"

#include <string.h>

int quota_budget_ref_set(ed_store *st, const char *ref, int64_t key_id)
{
    sqlite3_stmt *s = NULL;
    int err;

    if (ref == NULL || ref[0] == '\0' || strlen(ref) > 100 || key_id < 0)
        return ed_error_set(ED_EINVAL, "budget: a ref (<= 100 bytes) and a key id >= 0 are required");
    if (key_id == 0) {
        /* a reused ref (a job id freed by a failed submit) must not keep an old key */
        if ((err = ed_store_prepare(&s, st, "DELETE FROM quota_budget_refs WHERE ref = ?1")) < 0)
            return err;
        sqlite3_bind_text(s, 1, ref, -1, SQLITE_TRANSIENT);
        return quota__step_write(st, s, "clear budget ref");
    }
    if ((err = ed_store_prepare(&s, st,
                                "INSERT INTO quota_budget_refs(ref, key_id, created_at) VALUES (?1, ?2, ?3) "
                                "ON CONFLICT(ref) DO UPDATE SET key_id = excluded.key_id, "
                                "created_at = excluded.created_at")) < 0)
        return err;
    sqlite3_bind_text(s, 1, ref, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(s, 2, key_id);
    sqlite3_bind_int64(s, 3, ed_now_ms());
    return quota__step_write(st, s, "set budget ref");
}

int quota_budget_spent(int64_t *out_mcoins, ed_store *st, int64_t key_id, int64_t at_ms)
{
    sqlite3_stmt *s = NULL;
    int rc, err;

    *out_mcoins = 0;
    if (key_id <= 0)
        return 0;
    /* charged, being charged, or owed (unpaid is settled from the work's
     * hold); free intervals cost nothing, refunded and voided ones were
     * given back */
    if ((err = ed_store_prepare(&s, st,
                                "SELECT IFNULL(SUM(mcoins), 0) FROM quota_meter WHERE key_id = ?1 AND day = ?2 "
                                "AND status IN ('pending', 'charged', 'unpaid')")) < 0)
        return err;
    sqlite3_bind_int64(s, 1, key_id);
    sqlite3_bind_int64(s, 2, ed_time_day_start_ms(at_ms));
    rc = sqlite3_step(s);
    if (rc == SQLITE_ROW)
        *out_mcoins = sqlite3_column_int64(s, 0);
    sqlite3_finalize(s);
    return rc == SQLITE_ROW ? 0 : quota__step_error(st, rc, "key spending");
}

int quota_budget_check(int64_t *out_spent, ed_store *st, int64_t key_id, int64_t budget_mcoins, int64_t at_ms)
{
    int64_t spent = 0;
    int err;

    if (out_spent)
        *out_spent = 0;
    if (key_id <= 0 || budget_mcoins < 0)
        return 0;
    if ((err = quota_budget_spent(&spent, st, key_id, at_ms)) < 0)
        return err;
    if (out_spent)
        *out_spent = spent;
    if (spent >= budget_mcoins)
        return ed_error_set(ED_EQUOTA,
                            "this API key's daily budget of %lld mcoins is spent (%lld mcoins metered today, "
                            "UTC); it renews at 00:00 UTC",
                            (long long)budget_mcoins, (long long)spent);
    return 0;
}
