/* read.c - balances, entry listings, tiers and the invariant check. */
#include "quota.h"
#include "quota_int.h"

#include "ed_error.h"
#include "ed_time.h"

#include <assert.h>
#include <stdio.h>
#include <string.h>

int quota_balance_get(quota_balance *out, ed_store *st, int64_t user_id)
{
    sqlite3_stmt *s = NULL;
    int rc, err;

    memset(out, 0, sizeof(*out));
    if ((err = ed_store_prepare(&s, st,
                                "SELECT kind, balance_mcoins FROM ledger_accounts WHERE user_id = ?1")) < 0)
        return err;
    sqlite3_bind_int64(s, 1, user_id);
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        const char *kind = (const char *)sqlite3_column_text(s, 0);
        if (strcmp(kind, "user_coins") == 0)
            out->coins_mcoins = sqlite3_column_int64(s, 1);
        else if (strcmp(kind, "user_held") == 0)
            out->held_mcoins = sqlite3_column_int64(s, 1);
    }
    sqlite3_finalize(s);
    return rc == SQLITE_DONE ? 0 : quota__step_error(st, rc, "read balance");
}

int quota_entries_each(ed_store *st, int64_t user_id, int64_t before_id, int limit,
                       int (*fn)(const quota_entry *e, void *payload), void *payload)
{
    sqlite3_stmt *s = NULL;
    int rc, err, stop = 0;

    if ((err = ed_store_prepare(&s, st,
                                "SELECT e.id, t.at, e.amount_mcoins, e.balance_after_mcoins, t.kind, t.ref, t.reason "
                                "FROM ledger_entries e JOIN ledger_transfers t ON t.id = e.transfer_id "
                                "JOIN ledger_accounts a ON a.id = e.account_id "
                                "WHERE a.user_id = ?1 AND a.kind = 'user_coins' AND (?2 = 0 OR e.id < ?2) "
                                "ORDER BY e.id DESC LIMIT ?3")) < 0)
        return err;
    sqlite3_bind_int64(s, 1, user_id);
    sqlite3_bind_int64(s, 2, before_id);
    sqlite3_bind_int(s, 3, limit);
    while (!stop && (rc = sqlite3_step(s)) == SQLITE_ROW) {
        quota_entry e = {
            .id = sqlite3_column_int64(s, 0),
            .at = sqlite3_column_int64(s, 1),
            .amount_mcoins = sqlite3_column_int64(s, 2),
            .balance_after_mcoins = sqlite3_column_int64(s, 3),
            .kind = (const char *)sqlite3_column_text(s, 4),
            .ref = (const char *)sqlite3_column_text(s, 5),
            .reason = (const char *)sqlite3_column_text(s, 6),
        };
        stop = fn(&e, payload);
    }
    sqlite3_finalize(s);
    if (stop)
        return stop;
    return rc == SQLITE_DONE ? 0 : quota__step_error(st, rc, "list entries");
}

static void tier_from_row(quota_tier *t, sqlite3_stmt *s)
{
    memset(t, 0, sizeof(*t));
    snprintf(t->name, sizeof(t->name), "%s", (const char *)sqlite3_column_text(s, 0));
    t->max_kernels = sqlite3_column_int(s, 1);
    t->max_gpus_per_job = sqlite3_column_int(s, 2);
    t->max_session_ms = sqlite3_column_int64(s, 3);
    t->idle_timeout_ms = sqlite3_column_int64(s, 4);
    t->weight = sqlite3_column_int(s, 5);
    t->allow_egress = sqlite3_column_int(s, 6) != 0;
    t->overdraft_mcoins = sqlite3_column_int64(s, 7);
    t->free_gpu_ms_per_day = sqlite3_column_int64(s, 8);
    t->job_disk_bytes = sqlite3_column_int64(s, 9);
    t->workspace_bytes = sqlite3_column_int64(s, 10);
    t->dataset_bytes = sqlite3_column_int64(s, 11);
}

#define TIER_COLUMNS                                                                         \
    "name, max_kernels, max_gpus_per_job, max_session_ms, idle_timeout_ms, weight, "         \
    "allow_egress, overdraft_mcoins, free_gpu_ms_per_day, job_disk_bytes, workspace_bytes, " \
    "dataset_bytes"

int quota_tier_get(quota_tier *out, ed_store *st, const char *name)
{
    sqlite3_stmt *s = NULL;
    int rc, err;

    if ((err = ed_store_prepare(&s, st, "SELECT " TIER_COLUMNS " FROM tiers WHERE name = ?1")) < 0)
        return err;
    sqlite3_bind_text(s, 1, name, -1, SQLITE_STATIC);
    rc = sqlite3_step(s);
    if (rc == SQLITE_ROW)
        tier_from_row(out, s);
    sqlite3_finalize(s);
    if (rc == SQLITE_DONE)
        return ed_error_set(ED_ENOTFOUND, "no tier named '%s'", name);
    return rc == SQLITE_ROW ? 0 : quota__step_error(st, rc, "read tier");
}

int quota_tier_exists(ed_store *st, const char *name)
{
    quota_tier t;
    int err = quota_tier_get(&t, st, name);

    if (err == ED_ENOTFOUND)
        return 0;
    return err < 0 ? err : 1;
}

#define PIB_MAX (INT64_C(1) << 50)   /* 1 PiB */
#define MIB     (INT64_C(1) << 20)

static int bytes_limit_check(int64_t v, const char *field)
{
    if (v > PIB_MAX || (v > 0 && v < MIB))
        return ed_error_set(ED_EUNPROC, "field '%s' must be 0 (no limit) or 1 MiB..1 PiB", field);
    return 0;
}

int quota_tier_update(ed_store *st, const char *name, const quota_tier_change *u)
{
    sqlite3_stmt *s = NULL;
    int err;

    assert(name != NULL && u != NULL);
    if ((u->max_kernels > 1000) || u->max_gpus_per_job > 64 || u->weight == 0 || u->weight > 1000 ||
        u->allow_egress > 1 || u->allow_egress < -1 ||
        (u->max_session_ms >= 0 && (u->max_session_ms < 1000 || u->max_session_ms > 30LL * 86400000)) ||
        (u->idle_timeout_ms >= 0 && (u->idle_timeout_ms < 1000 || u->idle_timeout_ms > 30LL * 86400000)) ||
        u->overdraft_mcoins > 1000000000000LL || u->free_gpu_ms_per_day > 86400000)
        return ed_error_set(ED_EINVAL, "tier values out of range (weight 1..1000, max_kernels 0..1000, "
                                       "max_gpus_per_job 0..64, times 1 s..30 days, free_gpu_ms_per_day <= 1 day)");
    if ((err = bytes_limit_check(u->job_disk_bytes, "job_disk_bytes")) < 0 ||
        (err = bytes_limit_check(u->workspace_bytes, "workspace_bytes")) < 0 ||
        (err = bytes_limit_check(u->dataset_bytes, "dataset_bytes")) < 0)
        return err;
    if ((err = ed_store_prepare(&s, st,
                                "UPDATE tiers SET "
                                "max_kernels = CASE WHEN ?2 >= 0 THEN ?2 ELSE max_kernels END, "
                                "max_gpus_per_job = CASE WHEN ?3 >= 0 THEN ?3 ELSE max_gpus_per_job END, "
                                "weight = CASE WHEN ?4 >= 0 THEN ?4 ELSE weight END, "
                                "allow_egress = CASE WHEN ?5 >= 0 THEN ?5 ELSE allow_egress END, "
                                "max_session_ms = CASE WHEN ?6 >= 0 THEN ?6 ELSE max_session_ms END, "
                                "idle_timeout_ms = CASE WHEN ?7 >= 0 THEN ?7 ELSE idle_timeout_ms END, "
                                "overdraft_mcoins = CASE WHEN ?8 >= 0 THEN ?8 ELSE overdraft_mcoins END, "
                                "free_gpu_ms_per_day = CASE WHEN ?9 >= 0 THEN ?9 ELSE free_gpu_ms_per_day END, "
                                "job_disk_bytes = CASE WHEN ?11 >= 0 THEN ?11 ELSE job_disk_bytes END, "
                                "workspace_bytes = CASE WHEN ?12 >= 0 THEN ?12 ELSE workspace_bytes END, "
                                "dataset_bytes = CASE WHEN ?13 >= 0 THEN ?13 ELSE dataset_bytes END, "
                                "updated_at = ?10 WHERE name = ?1")) < 0)
        return err;
    sqlite3_bind_text(s, 1, name, -1, SQLITE_STATIC);
    sqlite3_bind_int(s, 2, u->max_kernels);
    sqlite3_bind_int(s, 3, u->max_gpus_per_job);
    sqlite3_bind_int(s, 4, u->weight);
    sqlite3_bind_int(s, 5, u->allow_egress);
    sqlite3_bind_int64(s, 6, u->max_session_ms);
    sqlite3_bind_int64(s, 7, u->idle_timeout_ms);
    sqlite3_bind_int64(s, 8, u->overdraft_mcoins);
    sqlite3_bind_int64(s, 9, u->free_gpu_ms_per_day);
    sqlite3_bind_int64(s, 10, ed_now_ms());
    sqlite3_bind_int64(s, 11, u->job_disk_bytes);
    sqlite3_bind_int64(s, 12, u->workspace_bytes);
    sqlite3_bind_int64(s, 13, u->dataset_bytes);
    if ((err = quota__step_write(st, s, "update tier")) < 0)
        return err;
    if (sqlite3_changes(ed_store_db(st)) == 0)
        return ed_error_set(ED_ENOTFOUND, "tier '%s' not found", name);
    return 0;
}

int quota_tier_each(ed_store *st, int (*fn)(const quota_tier *t, void *payload), void *payload)
{
    sqlite3_stmt *s = NULL;
    int rc, err, stop = 0;

    if ((err = ed_store_prepare(&s, st, "SELECT " TIER_COLUMNS " FROM tiers ORDER BY weight, name")) < 0)
        return err;
    while (!stop && (rc = sqlite3_step(s)) == SQLITE_ROW) {
        quota_tier t;
        tier_from_row(&t, s);
        stop = fn(&t, payload);
    }
    sqlite3_finalize(s);
    if (stop)
        return stop;
    return rc == SQLITE_DONE ? 0 : quota__step_error(st, rc, "list tiers");
}

void quota__verify_note(quota_verify_report *r, const char *what)
{
    if (r->nmismatches < (int)(sizeof(r->mismatches) / sizeof(r->mismatches[0])))
        snprintf(r->mismatches[r->nmismatches], sizeof(r->mismatches[0]), "%s", what ? what : "");
    r->nmismatches++;
    r->ok = false;
}

/* Run a query whose rows are violations (first column: a description) and
 * add them to the report. */
static int collect(quota_verify_report *r, ed_store *st, const char *sql)
{
    sqlite3_stmt *s = NULL;
    int rc, err;

    if ((err = ed_store_prepare(&s, st, sql)) < 0)
        return err;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW)
        quota__verify_note(r, (const char *)sqlite3_column_text(s, 0));
    sqlite3_finalize(s);
    return rc == SQLITE_DONE ? 0 : quota__step_error(st, rc, "verify");
}

static int count(int64_t *out, ed_store *st, const char *sql)
{
    sqlite3_stmt *s = NULL;
    int rc, err;

    if ((err = ed_store_prepare(&s, st, sql)) < 0)
        return err;
    if ((rc = sqlite3_step(s)) == SQLITE_ROW)
        *out = sqlite3_column_int64(s, 0);
    sqlite3_finalize(s);
    return rc == SQLITE_ROW ? 0 : quota__step_error(st, rc, "verify count");
}

int quota_verify(quota_verify_report *out, ed_store *st)
{
    static const char *const checks[] = {
        /* materialised balance == sum of entries == last balance_after */
        "SELECT printf('account %d (%s): balance %d but entries sum to %d', a.id, a.kind, "
        "a.balance_mcoins, IFNULL(SUM(e.amount_mcoins), 0)) "
        "FROM ledger_accounts a LEFT JOIN ledger_entries e ON e.account_id = a.id "
        "GROUP BY a.id HAVING a.balance_mcoins != IFNULL(SUM(e.amount_mcoins), 0)",
        "SELECT printf('account %d: balance %d but last entry says %d', a.id, a.balance_mcoins, "
        "e.balance_after_mcoins) FROM ledger_accounts a JOIN ledger_entries e ON e.id = "
        "(SELECT MAX(id) FROM ledger_entries WHERE account_id = a.id) "
        "WHERE e.balance_after_mcoins != a.balance_mcoins",
        /* every transfer sums to zero over at least two entries */
        "SELECT printf('transfer %d (%s): %d entries summing to %d', t.id, t.kind, COUNT(e.id), "
        "IFNULL(SUM(e.amount_mcoins), 0)) FROM ledger_transfers t "
        "LEFT JOIN ledger_entries e ON e.transfer_id = t.id GROUP BY t.id "
        "HAVING COUNT(e.id) < 2 OR IFNULL(SUM(e.amount_mcoins), 0) != 0",
        /* no user below the tier's overdraft: floor.c (a user's tier is accounts/'s) */
        NULL,
        /* held coins == open holds */
        "SELECT printf('user %d: held %d but open holds total %d', a.user_id, a.balance_mcoins, "
        "IFNULL((SELECT SUM(amount_mcoins) FROM ledger_holds h WHERE h.user_id = a.user_id "
        "AND h.status = 'open'), 0)) FROM ledger_accounts a WHERE a.kind = 'user_held' "
        "AND a.balance_mcoins != IFNULL((SELECT SUM(amount_mcoins) FROM ledger_holds h "
        "WHERE h.user_id = a.user_id AND h.status = 'open'), 0)",
    };
    int err;

    memset(out, 0, sizeof(*out));
    out->ok = true;
    if ((err = count(&out->accounts_checked, st, "SELECT COUNT(*) FROM ledger_accounts")) < 0 ||
        (err = count(&out->transfers_checked, st, "SELECT COUNT(*) FROM ledger_transfers")) < 0)
        return err;
    for (size_t i = 0; i < sizeof(checks) / sizeof(checks[0]); i++)
        if ((err = checks[i] ? collect(out, st, checks[i]) : quota__verify_floors(out, st)) < 0)
            return err;
    return 0;
}

int quota_posting_get(quota_posting *out, ed_store *st, int64_t transfer_id, int64_t user_id)
{
    sqlite3_stmt *s = NULL;
    int rc, err;

    memset(out, 0, sizeof(*out));
    if ((err = ed_store_prepare(&s, st,
                                "SELECT t.at, e.amount_mcoins, e.balance_after_mcoins, t.kind, IFNULL(t.reason, '') "
                                "FROM ledger_transfers t JOIN ledger_entries e ON e.transfer_id = t.id "
                                "JOIN ledger_accounts a ON a.id = e.account_id "
                                "WHERE t.id = ?1 AND a.user_id = ?2 AND a.kind = 'user_coins'")) < 0)
        return err;
    sqlite3_bind_int64(s, 1, transfer_id);
    sqlite3_bind_int64(s, 2, user_id);
    rc = sqlite3_step(s);
    if (rc == SQLITE_ROW) {
        out->transfer_id = transfer_id;
        out->at = sqlite3_column_int64(s, 0);
        out->amount_mcoins = sqlite3_column_int64(s, 1);
        out->balance_after_mcoins = sqlite3_column_int64(s, 2);
        snprintf(out->kind, sizeof(out->kind), "%s", (const char *)sqlite3_column_text(s, 3));
        snprintf(out->reason, sizeof(out->reason), "%s", (const char *)sqlite3_column_text(s, 4));
    }
    sqlite3_finalize(s);
    if (rc == SQLITE_DONE)
        return ed_error_set(ED_ENOTFOUND, "transfer %lld has no entry for user %lld",
                            (long long)transfer_id, (long long)user_id);
    return rc == SQLITE_ROW ? 0 : quota__step_error(st, rc, "read posting");
}

int quota_hold_get(quota_hold_info *out, ed_store *st, int64_t hold_id)
{
    sqlite3_stmt *s = NULL;
    int rc, err;

    memset(out, 0, sizeof(*out));
    if ((err = ed_store_prepare(&s, st,
                                "SELECT user_id, amount_mcoins, IFNULL(settled_mcoins, 0), status = 'open' "
                                "FROM ledger_holds WHERE id = ?1")) < 0)
        return err;
    sqlite3_bind_int64(s, 1, hold_id);
    if ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        out->id = hold_id;
        out->user_id = sqlite3_column_int64(s, 0);
        out->amount_mcoins = sqlite3_column_int64(s, 1);
        out->settled_mcoins = sqlite3_column_int64(s, 2);
        out->open = sqlite3_column_int(s, 3) != 0;
    }
    sqlite3_finalize(s);
    if (rc == SQLITE_DONE)
        return ed_error_set(ED_ENOTFOUND, "hold %lld not found", (long long)hold_id);
    return rc == SQLITE_ROW ? 0 : quota__step_error(st, rc, "read hold");
}

int quota_holds_open(int64_t *ids, int *n, int max, ed_store *st, const char *ref_prefix)
{
    sqlite3_stmt *s = NULL;
    int rc, err;

    *n = 0;
    if ((err = ed_store_prepare(&s, st,
                                "SELECT id FROM ledger_holds WHERE status = 'open' "
                                "AND substr(ref, 1, length(?1)) = ?1 ORDER BY id LIMIT ?2")) < 0)
        return err;
    sqlite3_bind_text(s, 1, ref_prefix, -1, SQLITE_STATIC);
    sqlite3_bind_int(s, 2, max);
    while ((rc = sqlite3_step(s)) == SQLITE_ROW && *n < max)
        ids[(*n)++] = sqlite3_column_int64(s, 0);
    sqlite3_finalize(s);
    return rc == SQLITE_DONE || rc == SQLITE_ROW ? 0 : quota__step_error(st, rc, "list open holds");
}

int quota_revenue_since(int64_t *out_mcoins, ed_store *st, int64_t since_ms)
{
    sqlite3_stmt *s = NULL;
    int rc, err;

    *out_mcoins = 0;
    if ((err = ed_store_prepare(&s, st,
                                "SELECT IFNULL(SUM(e.amount_mcoins), 0) FROM ledger_entries e "
                                "JOIN ledger_transfers t ON t.id = e.transfer_id "
                                "JOIN ledger_accounts a ON a.id = e.account_id "
                                "WHERE a.kind = 'system_revenue' AND t.at >= ?1")) < 0)
        return err;
    sqlite3_bind_int64(s, 1, since_ms);
    if ((rc = sqlite3_step(s)) == SQLITE_ROW)
        *out_mcoins = sqlite3_column_int64(s, 0);
    sqlite3_finalize(s);
    return rc == SQLITE_ROW ? 0 : quota__step_error(st, rc, "revenue");
}
