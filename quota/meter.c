/*
 * meter.c - metering of running work: the daily free allowance first, then
 * coins, one interval at a time, each decided and charged exactly once.
 *
 * An interval is two steps that cannot share one transaction (the ledger runs
 * its own): (1) decide it - free part, paid part, cost - and count the free
 * part, in one transaction that inserts a 'pending' row in quota_meter;
 * (2) post the charge under the key "meter:<ref>:<seq>" and mark the row.
 * A crash between the two leaves a pending row that quota_meter_recover()
 * finishes; the ledger's idempotency key makes re-posting harmless, so a
 * charge is never lost and never doubled.
 */
#include "quota.h"
#include "quota_int.h"

#include "ed_error.h"
#include "ed_time.h"

#include <stdio.h>
#include <string.h>

#define MS_PER_HOUR INT64_C(3600000)

typedef struct meter_ctx {
    ed_store   *st;
    int64_t     user, free_per_day, price, seq, ms, at;
    const char *resource, *ref;
    /* out of step 1 */
    int64_t     row_id;
    char        status[16];
    quota_meter_result r;
} meter_ctx;

static int step_done(ed_store *st, sqlite3_stmt *s, const char *what)
{
    int rc = sqlite3_step(s);

    sqlite3_finalize(s);
    return rc == SQLITE_DONE ? 0 : quota__step_error(st, rc, what);
}

/* A single int64 from a query with up to two text and two int parameters
 * (?1 ?2 text, ?3 ?4 int); `dflt` when it yields no row or NULL. */
static int query_int(int64_t *out, ed_store *st, const char *sql, const char *t1, const char *t2,
                     int64_t i3, int64_t i4, int64_t dflt)
{
    sqlite3_stmt *s = NULL;
    int rc, err;

    if ((err = ed_store_prepare(&s, st, sql)) < 0)
        return err;
    if (t1)
        sqlite3_bind_text(s, 1, t1, -1, SQLITE_STATIC);
    if (t2)
        sqlite3_bind_text(s, 2, t2, -1, SQLITE_STATIC);
    sqlite3_bind_int64(s, 3, i3);
    sqlite3_bind_int64(s, 4, i4);
    *out = dflt;
    rc = sqlite3_step(s);
    if (rc == SQLITE_ROW && sqlite3_column_type(s, 0) != SQLITE_NULL)
        *out = sqlite3_column_int64(s, 0);
    sqlite3_finalize(s);
    return rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 : quota__step_error(st, rc, "meter query");
}

/* Step 1: decide the interval (or find the earlier decision). */
static int decide_body(void *p)
{
    meter_ctx *c = p;
    sqlite3_stmt *s = NULL;
    int64_t day = ed_time_day_start_ms(c->at), used, prev_paid, free_left;
    int rc, err;

    memset(&c->r, 0, sizeof(c->r));
    if ((err = ed_store_prepare(&s, c->st,
                                "SELECT id, free_ms, paid_ms, mcoins, status FROM quota_meter "
                                "WHERE ref = ?1 AND seq = ?2")) < 0)
        return err;
    sqlite3_bind_text(s, 1, c->ref, -1, SQLITE_STATIC);
    sqlite3_bind_int64(s, 2, c->seq);
    rc = sqlite3_step(s);
    if (rc == SQLITE_ROW) {
        c->row_id = sqlite3_column_int64(s, 0);
        c->r.free_ms = sqlite3_column_int64(s, 1);
        c->r.paid_ms = sqlite3_column_int64(s, 2);
        c->r.mcoins = sqlite3_column_int64(s, 3);
        snprintf(c->status, sizeof(c->status), "%s", (const char *)sqlite3_column_text(s, 4));
    }
    sqlite3_finalize(s);
    if (rc == SQLITE_ROW)
        return 0;
    if (rc != SQLITE_DONE)
        return quota__step_error(c->st, rc, "read meter row");

    if ((err = query_int(&used, c->st,
                         "SELECT used_ms FROM quota_free_usage WHERE user_id = ?3 AND resource = ?1 AND day = ?4",
                         c->resource, NULL, c->user, day, 0)) < 0 ||
        (err = query_int(&prev_paid, c->st, "SELECT SUM(paid_ms) FROM quota_meter WHERE ref = ?1",
                         c->ref, NULL, 0, 0, 0)) < 0)
        return err;
    free_left = c->free_per_day < 0 ? c->ms : (c->free_per_day > used ? c->free_per_day - used : 0);
    c->r.free_ms = free_left < c->ms ? free_left : c->ms;
    c->r.paid_ms = c->ms - c->r.free_ms;
    /* cumulative, so per-interval rounding never drifts */
    c->r.mcoins = (prev_paid + c->r.paid_ms) * c->price / MS_PER_HOUR - prev_paid * c->price / MS_PER_HOUR;
    snprintf(c->status, sizeof(c->status), "%s", c->r.mcoins > 0 ? "pending" : "free");

    if ((err = ed_store_prepare(&s, c->st,
                                "INSERT INTO quota_meter(ref, seq, user_id, resource, day, ms, free_ms, paid_ms, "
                                "mcoins, status, at, key_id) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, "
                                "(SELECT key_id FROM quota_budget_refs WHERE ref = ?1))")) < 0)
        return err;
    sqlite3_bind_text(s, 1, c->ref, -1, SQLITE_STATIC);
    sqlite3_bind_int64(s, 2, c->seq);
    sqlite3_bind_int64(s, 3, c->user);
    sqlite3_bind_text(s, 4, c->resource, -1, SQLITE_STATIC);
    sqlite3_bind_int64(s, 5, day);
    sqlite3_bind_int64(s, 6, c->ms);
    sqlite3_bind_int64(s, 7, c->r.free_ms);
    sqlite3_bind_int64(s, 8, c->r.paid_ms);
    sqlite3_bind_int64(s, 9, c->r.mcoins);
    sqlite3_bind_text(s, 10, c->status, -1, SQLITE_STATIC);
    sqlite3_bind_int64(s, 11, c->at);
    if ((err = step_done(c->st, s, "insert meter row")) < 0)
        return err;
    c->row_id = sqlite3_last_insert_rowid(ed_store_db(c->st));
    if (c->r.free_ms > 0) {
        if ((err = ed_store_prepare(&s, c->st,
                                    "INSERT INTO quota_free_usage(user_id, resource, day, used_ms) "
                                    "VALUES (?1, ?2, ?3, ?4) ON CONFLICT(user_id, resource, day) "
                                    "DO UPDATE SET used_ms = used_ms + excluded.used_ms")) < 0)
            return err;
        sqlite3_bind_int64(s, 1, c->user);
        sqlite3_bind_text(s, 2, c->resource, -1, SQLITE_STATIC);
        sqlite3_bind_int64(s, 3, day);
        sqlite3_bind_int64(s, 4, c->r.free_ms);
        if ((err = step_done(c->st, s, "count free allowance")) < 0)
            return err;
    }
    return 0;
}

static int mark_row(ed_store *st, int64_t row, const char *status, int64_t transfer)
{
    sqlite3_stmt *s = NULL;
    int err;

    if ((err = ed_store_prepare(&s, st,
                                "UPDATE quota_meter SET status = ?2, transfer_id = ?3 "
                                "WHERE id = ?1 AND status = 'pending'")) < 0)
        return err;
    sqlite3_bind_int64(s, 1, row);
    sqlite3_bind_text(s, 2, status, -1, SQLITE_STATIC);
    if (transfer > 0)
        sqlite3_bind_int64(s, 3, transfer);
    return quota__step_write(st, s, "mark meter row");
}

/* Step 2: post a pending interval's charge (at most once) and record it.
 * *out_unpaid tells whether the user could not pay. */
static int finish_pending(bool *out_unpaid, ed_store *st, int64_t row, int64_t user, const char *ref,
                          int64_t seq, int64_t mcoins)
{
    char key[256];
    int64_t transfer = 0;
    int err;

    *out_unpaid = false;
    snprintf(key, sizeof(key), "meter:%s:%lld", ref, (long long)seq);
    err = quota_charge(&transfer, st, user, mcoins, ref, "usage", key);
    if (err == ED_EQUOTA) {
        *out_unpaid = true;
        return mark_row(st, row, "unpaid", 0);
    }
    if (err < 0)
        return err;   /* stays pending; recover retries under the same key */
    return mark_row(st, row, "charged", transfer);
}

int quota_meter_charge(quota_meter_result *out, ed_store *st, int64_t user_id, const char *resource,
                       int64_t free_ms_per_day, int64_t price_mcoins_per_hour, const char *ref,
                       int64_t seq, int64_t ms, int64_t at_ms)
{
    meter_ctx c;
    bool unpaid = false;
    int err;

    memset(out, 0, sizeof(*out));
    if (user_id <= 0 || resource == NULL || resource[0] == '\0' || ref == NULL || ref[0] == '\0' ||
        strlen(ref) > 100 || strlen(resource) > 64)
        return ed_error_set(ED_EINVAL, "meter: user, resource and ref (<= 100 bytes) are required");
    if (seq < 1 || ms <= 0 || ms > 31 * 24 * MS_PER_HOUR || price_mcoins_per_hour < 0 ||
        price_mcoins_per_hour > INT64_C(1000000000))
        return ed_error_set(ED_EINVAL, "meter: seq %lld, %lld ms at %lld mcoins/h is out of range",
                            (long long)seq, (long long)ms, (long long)price_mcoins_per_hour);
    memset(&c, 0, sizeof(c));
    c.st = st;
    c.user = user_id;
    c.free_per_day = free_ms_per_day;
    c.price = price_mcoins_per_hour;
    c.seq = seq;
    c.ms = ms;
    c.at = at_ms;
    c.resource = resource;
    c.ref = ref;
    if ((err = ed_store_tx(st, decide_body, &c)) < 0)
        return err;
    if (strcmp(c.status, "pending") == 0) {
        if ((err = finish_pending(&unpaid, st, c.row_id, user_id, ref, seq, c.r.mcoins)) < 0)
            return err;
        snprintf(c.status, sizeof(c.status), "%s", unpaid ? "unpaid" : "charged");
    }
    *out = c.r;
    out->out_of_funds = strcmp(c.status, "unpaid") == 0;
    out->charged_mcoins = strcmp(c.status, "charged") == 0 || strcmp(c.status, "refunded") == 0 ? c.r.mcoins : 0;
    return 0;
}

int quota_meter_free_left(int64_t *out_ms, ed_store *st, int64_t user_id, const char *resource,
                          int64_t free_ms_per_day, int64_t at_ms)
{
    int64_t used;
    int err;

    *out_ms = -1;
    if (free_ms_per_day < 0)
        return 0;
    if ((err = query_int(&used, st,
                         "SELECT used_ms FROM quota_free_usage WHERE user_id = ?3 AND resource = ?1 AND day = ?4",
                         resource, NULL, user_id, ed_time_day_start_ms(at_ms), 0)) < 0)
        return err;
    *out_ms = free_ms_per_day > used ? free_ms_per_day - used : 0;
    return 0;
}

int quota_meter_totals(int64_t *out_charged, int64_t *out_unpaid, ed_store *st, const char *ref)
{
    int64_t v;
    int err;

    if (out_charged) {
        if ((err = query_int(&v, st,
                             "SELECT SUM(mcoins) FROM quota_meter WHERE ref = ?1 AND status IN ('charged', 'refunded')",
                             ref, NULL, 0, 0, 0)) < 0)
            return err;
        *out_charged = v;
    }
    if (out_unpaid) {
        if ((err = query_int(&v, st, "SELECT SUM(mcoins) FROM quota_meter WHERE ref = ?1 AND status = 'unpaid'",
                             ref, NULL, 0, 0, 0)) < 0)
            return err;
        *out_unpaid = v;
    }
    return 0;
}

typedef struct pending_row {
    int64_t id, user, seq, mcoins;
    char    ref[128];
} pending_row;

/* Only the ref filter differs between recover-all and recover-one. */
static int recover_where(int *out_n, ed_store *st, const char *ref)
{
    sqlite3_stmt *s = NULL;
    pending_row rows[64];
    int n, rc, err, total = 0;
    bool unpaid;

    do {
        n = 0;
        if ((err = ed_store_prepare(&s, st,
                                    "SELECT id, user_id, seq, mcoins, ref FROM quota_meter "
                                    "WHERE status = 'pending' AND (?1 IS NULL OR ref = ?1) ORDER BY id LIMIT 64")) < 0)
            return err;
        if (ref)
            sqlite3_bind_text(s, 1, ref, -1, SQLITE_STATIC);
        while ((rc = sqlite3_step(s)) == SQLITE_ROW && n < 64) {
            rows[n].id = sqlite3_column_int64(s, 0);
            rows[n].user = sqlite3_column_int64(s, 1);
            rows[n].seq = sqlite3_column_int64(s, 2);
            rows[n].mcoins = sqlite3_column_int64(s, 3);
            snprintf(rows[n].ref, sizeof(rows[n].ref), "%s", (const char *)sqlite3_column_text(s, 4));
            n++;
        }
        sqlite3_finalize(s);
        if (rc != SQLITE_ROW && rc != SQLITE_DONE)
            return quota__step_error(st, rc, "list pending meter rows");
        for (int i = 0; i < n; i++) {
            if ((err = finish_pending(&unpaid, st, rows[i].id, rows[i].user, rows[i].ref, rows[i].seq,
                                      rows[i].mcoins)) < 0)
                return err;
            total++;
        }
    } while (n == 64);
    if (out_n)
        *out_n = total;
    return 0;
}

int quota_meter_recover(int *out_n, ed_store *st)
{
    return recover_where(out_n, st, NULL);
}

typedef struct refund_ctx {
    ed_store   *st;
    const char *ref;
} refund_ctx;

/* Give back the free allowance of every not-yet-returned interval and mark
 * them returned, in one transaction. */
static int giveback_body(void *p)
{
    refund_ctx *c = p;
    sqlite3_stmt *s = NULL;
    int err;

    if ((err = ed_store_prepare(&s, c->st,
                                "UPDATE quota_free_usage SET used_ms = MAX(0, used_ms - "
                                "(SELECT IFNULL(SUM(m.free_ms), 0) FROM quota_meter m WHERE m.ref = ?1 "
                                " AND m.status IN ('charged', 'free', 'unpaid') AND m.user_id = quota_free_usage.user_id "
                                " AND m.resource = quota_free_usage.resource AND m.day = quota_free_usage.day)) "
                                "WHERE EXISTS (SELECT 1 FROM quota_meter m WHERE m.ref = ?1 "
                                " AND m.status IN ('charged', 'free', 'unpaid') AND m.user_id = quota_free_usage.user_id "
                                " AND m.resource = quota_free_usage.resource AND m.day = quota_free_usage.day)")) < 0)
        return err;
    sqlite3_bind_text(s, 1, c->ref, -1, SQLITE_STATIC);
    if ((err = step_done(c->st, s, "give back free allowance")) < 0)
        return err;
    if ((err = ed_store_prepare(&s, c->st,
                                "UPDATE quota_meter SET status = CASE status WHEN 'charged' THEN 'refunded' "
                                "ELSE 'voided' END WHERE ref = ?1 AND status IN ('charged', 'free', 'unpaid')")) < 0)
        return err;
    sqlite3_bind_text(s, 1, c->ref, -1, SQLITE_STATIC);
    return step_done(c->st, s, "mark meter rows refunded");
}

int quota_meter_refund(int64_t *out_mcoins, ed_store *st, const char *ref)
{
    refund_ctx c = {st, ref};
    int64_t charged = 0, user = 0;
    char key[256];
    int err;

    if (out_mcoins)
        *out_mcoins = 0;
    if (ref == NULL || ref[0] == '\0' || strlen(ref) > 100)
        return ed_error_set(ED_EINVAL, "meter refund: a ref (<= 100 bytes) is required");
    /* pending intervals first, so the amount below is final */
    if ((err = recover_where(NULL, st, ref)) < 0)
        return err;
    if ((err = quota_meter_totals(&charged, NULL, st, ref)) < 0 ||
        (err = query_int(&user, st, "SELECT user_id FROM quota_meter WHERE ref = ?1 LIMIT 1", ref, NULL, 0, 0, 0)) < 0)
        return err;
    if (charged > 0) {
        snprintf(key, sizeof(key), "meter-refund:%s", ref);
        if ((err = quota_refund(NULL, st, user, charged, ref, "platform failure", key)) < 0)
            return err;
    }
    if ((err = ed_store_tx(st, giveback_body, &c)) < 0)
        return err;
    if (out_mcoins)
        *out_mcoins = charged;
    return 0;
}
