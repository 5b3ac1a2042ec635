/*
 * ledger.c - the double-entry A-coin ledger: transfers, holds, balances.
 *
 * Each public function runs one BEGIN IMMEDIATE transaction: look up the
 * idempotency key, resolve (or create) the accounts, post every leg with its
 * balance_after, commit. BEGIN IMMEDIATE takes SQLite's write lock first, so
 * the balance read and the balance written can't interleave with another
 * writer's: no overdraft is possible under concurrency.
 */
#include "quota.h"
#include "quota_int.h"

#include "ed_crypto.h"
#include "ed_error.h"
#include "ed_time.h"

#include <assert.h>
#include <stdio.h>
#include <string.h>

#define IDEM_KEY_MAX 200

static const char *const kind_names[] = {"grant", "charge", "refund", "hold", "release", "purchase"};

const char *quota_kind_name(quota_kind kind)
{
    return (unsigned)kind < sizeof(kind_names) / sizeof(kind_names[0]) ? kind_names[kind] : "?";
}

bool quota__hold_transition_ok(const char *from, const char *to)
{
    return (strcmp(from, "") == 0 && strcmp(to, "open") == 0) ||
           (strcmp(from, "open") == 0 && strcmp(to, "settled") == 0);
}

int quota__step_error(ed_store *st, int rc, const char *what)
{
    return ed_store_error(ed_store_db(st), rc, what);
}

int quota__step_write(ed_store *st, sqlite3_stmt *s, const char *what)
{
    int rc = ed_store_step(s);

    sqlite3_finalize(s);
    return rc == SQLITE_DONE ? 0 : quota__step_error(st, rc, what);
}

/* The id of the `kind` account of `user_id` (0: a system account), creating a
 * user's account on first use. Must run inside a transaction. */
static int account_id(int64_t *out, ed_store *st, const char *kind, int64_t user_id)
{
    sqlite3_stmt *s = NULL;
    int rc, err;

    if ((err = ed_store_prepare(&s, st,
                                "SELECT id FROM ledger_accounts WHERE kind = ?1 AND IFNULL(user_id, 0) = ?2")) < 0)
        return err;
    sqlite3_bind_text(s, 1, kind, -1, SQLITE_STATIC);
    sqlite3_bind_int64(s, 2, user_id);
    rc = sqlite3_step(s);
    if (rc == SQLITE_ROW) {
        *out = sqlite3_column_int64(s, 0);
        sqlite3_finalize(s);
        return 0;
    }
    sqlite3_finalize(s);
    if (rc != SQLITE_DONE)
        return quota__step_error(st, rc, "find ledger account");
    if (user_id == 0)
        return ed_error_set(ED_EINTERNAL, "system account %s is missing", kind);
    if ((err = ed_store_prepare(&s, st,
                                "INSERT INTO ledger_accounts(kind, user_id, balance_mcoins, created_at) "
                                "VALUES (?1, ?2, 0, ?3)")) < 0)
        return err;
    sqlite3_bind_text(s, 1, kind, -1, SQLITE_STATIC);
    sqlite3_bind_int64(s, 2, user_id);
    sqlite3_bind_int64(s, 3, ed_now_ms());
    rc = sqlite3_step(s);
    sqlite3_finalize(s);
    if (rc != SQLITE_DONE)
        return quota__step_error(st, rc, "create ledger account");
    *out = sqlite3_last_insert_rowid(ed_store_db(st));
    return 0;
}

/* 1 and the transfer id when `key` was used for the same request before;
 * 0 when unused; ED_ECONFLICT when used for a different request. */
static int idem_lookup(int64_t *out, ed_store *st, const char *key, const char *hash)
{
    sqlite3_stmt *s = NULL;
    int rc, err, found = 0;

    if ((err = ed_store_prepare(&s, st,
                                "SELECT id, request_hash FROM ledger_transfers WHERE idem_key = ?1")) < 0)
        return err;
    sqlite3_bind_text(s, 1, key, -1, SQLITE_STATIC);
    rc = sqlite3_step(s);
    if (rc == SQLITE_ROW) {
        *out = sqlite3_column_int64(s, 0);
        found = strcmp((const char *)sqlite3_column_text(s, 1), hash) == 0 ? 1 : -1;
    }
    sqlite3_finalize(s);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE)
        return quota__step_error(st, rc, "look up idempotency key");
    if (found < 0)
        return ed_error_set(ED_ECONFLICT, "idempotency key '%s' was used for a different request", key);
    return found;
}

/* Insert the transfer row and post each leg, checking floors.
 * ED_EQUOTA names the account that would go below its floor. */
static int post(int64_t *out, ed_store *st, quota_kind kind, const char *key, const char *hash,
                const char *ref, const char *reason, int64_t actor, const quota__leg *legs, int nlegs)
{
    sqlite3_stmt *s = NULL, *bal = NULL, *ent = NULL;
    int64_t transfer, sum = 0;
    int rc, err;

    for (int i = 0; i < nlegs; i++)
        sum += legs[i].amount;
    if (sum != 0)
        return ed_error_set(ED_EINTERNAL, "transfer legs sum to %lld, not 0", (long long)sum);
    if ((err = ed_store_prepare(&s, st,
                                "INSERT INTO ledger_transfers(at, kind, idem_key, request_hash, ref, reason, actor_id) "
                                "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)")) < 0)
        return err;
    sqlite3_bind_int64(s, 1, ed_now_ms());
    sqlite3_bind_text(s, 2, quota_kind_name(kind), -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 3, key, -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 4, hash, -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 5, ref, -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 6, reason, -1, SQLITE_STATIC);
    if (actor > 0)
        sqlite3_bind_int64(s, 7, actor);
    rc = sqlite3_step(s);
    sqlite3_finalize(s);
    if (rc != SQLITE_DONE)
        return quota__step_error(st, rc, "insert transfer");
    transfer = sqlite3_last_insert_rowid(ed_store_db(st));

    if ((err = ed_store_prepare(&bal, st,
                                "UPDATE ledger_accounts SET balance_mcoins = balance_mcoins + ?2 "
                                "WHERE id = ?1 RETURNING balance_mcoins")) < 0)
        return err;
    if ((err = ed_store_prepare(&ent, st,
                                "INSERT INTO ledger_entries(transfer_id, account_id, amount_mcoins, balance_after_mcoins) "
                                "VALUES (?1, ?2, ?3, ?4)")) < 0)
        goto out;
    for (int i = 0; i < nlegs; i++) {
        int64_t after;

        sqlite3_reset(bal);
        sqlite3_bind_int64(bal, 1, legs[i].account);
        sqlite3_bind_int64(bal, 2, legs[i].amount);
        if ((rc = sqlite3_step(bal)) != SQLITE_ROW) {
            err = quota__step_error(st, rc, "update balance");
            goto out;
        }
        after = sqlite3_column_int64(bal, 0);
        sqlite3_step(bal); /* finish the RETURNING statement */
        if (legs[i].has_floor && after < legs[i].floor) {
            err = ed_error_set(ED_EQUOTA, "insufficient funds: %lld mcoins available, %lld needed",
                               (long long)(after - legs[i].amount - legs[i].floor),
                               (long long)-legs[i].amount);
            goto out;
        }
        sqlite3_reset(ent);
        sqlite3_bind_int64(ent, 1, transfer);
        sqlite3_bind_int64(ent, 2, legs[i].account);
        sqlite3_bind_int64(ent, 3, legs[i].amount);
        sqlite3_bind_int64(ent, 4, after);
        if ((rc = sqlite3_step(ent)) != SQLITE_DONE) {
            err = quota__step_error(st, rc, "insert entry");
            goto out;
        }
    }
    *out = transfer;
    err = 0;
out:
    sqlite3_finalize(bal);
    sqlite3_finalize(ent);
    return err;
}

/* Hash of what a request asked for, so a reused key with another body is
 * told apart from a retry. */
static void request_hash(char hex[65], const char *what, int64_t user, int64_t mcoins,
                         const char *ref, const char *reason)
{
    char buf[1024];
    int n = snprintf(buf, sizeof(buf), "%s|%lld|%lld|%s|%s", what, (long long)user, (long long)mcoins,
                     ref ? ref : "", reason ? reason : "");

    ed_sha256_hex(hex, buf, (size_t)(n < (int)sizeof(buf) ? n : (int)sizeof(buf) - 1));
}

static int check_key(const char *key)
{
    if (key == NULL || key[0] == '\0')
        return ed_error_set(ED_EINVAL, "an idempotency key is required");
    if (strlen(key) > IDEM_KEY_MAX)
        return ed_error_set(ED_EINVAL, "idempotency key longer than %d bytes", IDEM_KEY_MAX);
    return 0;
}

/* A simple transfer between a user's coins and a system account. */
typedef struct simple_ctx {
    int64_t    *out;
    ed_store   *st;
    quota_kind  kind;
    const char *system;     /* system account kind */
    int64_t     user, mcoins; /* + credits the user */
    const char *ref, *reason, *key;
    int64_t     actor;
} simple_ctx;

static int simple_body(void *p)
{
    simple_ctx *c = p;
    char hash[65];
    quota__leg legs[2] = {{0}};
    int64_t floor;
    int err;

    request_hash(hash, quota_kind_name(c->kind), c->user, c->mcoins, c->ref, c->reason);
    if ((err = idem_lookup(c->out, c->st, c->key, hash)) != 0)
        return err < 0 ? err : 0;
    if ((err = quota__user_floor(&floor, c->st, c->user)) < 0 ||
        (err = account_id(&legs[0].account, c->st, "user_coins", c->user)) < 0 ||
        (err = account_id(&legs[1].account, c->st, c->system, 0)) < 0)
        return err;
    legs[0].amount = c->mcoins;
    legs[0].has_floor = c->mcoins < 0;
    legs[0].floor = floor;
    legs[1].amount = -c->mcoins;
    return post(c->out, c->st, c->kind, c->key, hash, c->ref, c->reason, c->actor, legs, 2);
}

static int simple_transfer(int64_t *out, ed_store *st, quota_kind kind, const char *system,
                           int64_t user, int64_t mcoins, const char *ref, const char *reason,
                           const char *key, int64_t actor)
{
    simple_ctx c = {out, st, kind, system, user, mcoins, ref, reason, key, actor};
    int64_t dummy;
    int err;

    if (out == NULL)
        c.out = &dummy;
    if ((err = check_key(key)) < 0)
        return err;
    return ed_store_tx(st, simple_body, &c);
}

static int check_amount(int64_t mcoins)
{
    if (mcoins <= 0)
        return ed_error_set(ED_EINVAL, "amount must be a positive number of mcoins, not %lld",
                            (long long)mcoins);
    if (mcoins > INT64_C(1000000000000000))
        return ed_error_set(ED_EINVAL, "amount %lld mcoins is too large", (long long)mcoins);
    return 0;
}

int quota_grant(int64_t *out_transfer, ed_store *st, int64_t user_id, int64_t mcoins,
                const char *reason, const char *idem_key, int64_t actor_id)
{
    int err;

    if ((err = check_amount(mcoins)) < 0)
        return err;
    return simple_transfer(out_transfer, st, QUOTA_KIND_GRANT, "system_grants", user_id, mcoins,
                           NULL, reason, idem_key, actor_id);
}

int quota_charge(int64_t *out_transfer, ed_store *st, int64_t user_id, int64_t mcoins,
                 const char *ref, const char *reason, const char *idem_key)
{
    int err;

    if ((err = check_amount(mcoins)) < 0)
        return err;
    return simple_transfer(out_transfer, st, QUOTA_KIND_CHARGE, "system_revenue", user_id, -mcoins,
                           ref, reason, idem_key, 0);
}

int quota_refund(int64_t *out_transfer, ed_store *st, int64_t user_id, int64_t mcoins,
                 const char *ref, const char *reason, const char *idem_key)
{
    int err;

    if ((err = check_amount(mcoins)) < 0)
        return err;
    return simple_transfer(out_transfer, st, QUOTA_KIND_REFUND, "system_refunds", user_id, mcoins,
                           ref, reason, idem_key, 0);
}

/* ---- holds ------------------------------------------------------------------ */

typedef struct hold_ctx {
    int64_t    *out_hold;
    ed_store   *st;
    int64_t     user, mcoins, hold_id, actual;
    const char *ref, *key;
} hold_ctx;

static int hold_open_body(void *p)
{
    hold_ctx *c = p;
    char hash[65];
    quota__leg legs[2] = {{0}};
    int64_t floor, transfer;
    sqlite3_stmt *s = NULL;
    int rc, err;

    request_hash(hash, "hold", c->user, c->mcoins, c->ref, NULL);
    if ((err = idem_lookup(&transfer, c->st, c->key, hash)) < 0)
        return err;
    if (err == 0) {
        if ((err = quota__user_floor(&floor, c->st, c->user)) < 0 ||
            (err = account_id(&legs[0].account, c->st, "user_coins", c->user)) < 0 ||
            (err = account_id(&legs[1].account, c->st, "user_held", c->user)) < 0)
            return err;
        legs[0].amount = -c->mcoins;
        legs[0].has_floor = true;
        legs[0].floor = floor;
        legs[1].amount = c->mcoins;
        if ((err = post(&transfer, c->st, QUOTA_KIND_HOLD, c->key, hash, c->ref, "hold", 0, legs, 2)) < 0)
            return err;
        assert(quota__hold_transition_ok("", "open"));
        if ((err = ed_store_prepare(&s, c->st,
                                    "INSERT INTO ledger_holds(user_id, amount_mcoins, status, ref, open_transfer, created_at) "
                                    "VALUES (?1, ?2, 'open', ?3, ?4, ?5)")) < 0)
            return err;
        sqlite3_bind_int64(s, 1, c->user);
        sqlite3_bind_int64(s, 2, c->mcoins);
        sqlite3_bind_text(s, 3, c->ref, -1, SQLITE_STATIC);
        sqlite3_bind_int64(s, 4, transfer);
        sqlite3_bind_int64(s, 5, ed_now_ms());
        rc = sqlite3_step(s);
        sqlite3_finalize(s);
        if (rc != SQLITE_DONE)
            return quota__step_error(c->st, rc, "insert hold");
        *c->out_hold = sqlite3_last_insert_rowid(ed_store_db(c->st));
        return 0;
    }
    /* a replay: the hold opened by that transfer */
    if ((err = ed_store_prepare(&s, c->st, "SELECT id FROM ledger_holds WHERE open_transfer = ?1")) < 0)
        return err;
    sqlite3_bind_int64(s, 1, transfer);
    rc = sqlite3_step(s);
    if (rc == SQLITE_ROW)
        *c->out_hold = sqlite3_column_int64(s, 0);
    sqlite3_finalize(s);
    return rc == SQLITE_ROW ? 0 : ed_error_set(ED_ECONFLICT, "idempotency key '%s' belongs to another kind of transfer", c->key);
}

int quota_hold_open(int64_t *out_hold, ed_store *st, int64_t user_id, int64_t mcoins,
                    const char *ref, const char *idem_key)
{
    hold_ctx c = {out_hold, st, user_id, mcoins, 0, 0, ref, idem_key};
    int err;

    *out_hold = 0;
    if ((err = check_amount(mcoins)) < 0 || (err = check_key(idem_key)) < 0)
        return err;
    return ed_store_tx(st, hold_open_body, &c);
}

static int hold_settle_body(void *p)
{
    hold_ctx *c = p;
    sqlite3_stmt *s = NULL;
    int64_t user = 0, amount = 0, coins, held, revenue, transfer;
    char status[16] = "", key[96], hash[65], ref[64];
    int rc, err;

    if ((err = ed_store_prepare(&s, c->st,
                                "SELECT user_id, amount_mcoins, status FROM ledger_holds WHERE id = ?1")) < 0)
        return err;
    sqlite3_bind_int64(s, 1, c->hold_id);
    rc = sqlite3_step(s);
    if (rc == SQLITE_ROW) {
        user = sqlite3_column_int64(s, 0);
        amount = sqlite3_column_int64(s, 1);
        snprintf(status, sizeof(status), "%s", (const char *)sqlite3_column_text(s, 2));
    }
    sqlite3_finalize(s);
    if (rc == SQLITE_DONE)
        return ed_error_set(ED_ENOTFOUND, "hold %lld not found", (long long)c->hold_id);
    if (rc != SQLITE_ROW)
        return quota__step_error(c->st, rc, "read hold");
    if (strcmp(status, "open") != 0)
        return ed_error_set(ED_ECONFLICT, "hold %lld is already settled", (long long)c->hold_id);
    assert(quota__hold_transition_ok(status, "settled"));
    if (c->actual < 0 || c->actual > amount)
        return ed_error_set(ED_EINVAL, "settle %lld of a hold of %lld mcoins", (long long)c->actual,
                            (long long)amount);
    if ((err = account_id(&coins, c->st, "user_coins", user)) < 0 ||
        (err = account_id(&held, c->st, "user_held", user)) < 0 ||
        (err = account_id(&revenue, c->st, "system_revenue", 0)) < 0)
        return err;
    snprintf(ref, sizeof(ref), "hold:%lld", (long long)c->hold_id);
    if (c->actual > 0) {
        quota__leg legs[2] = {{held, -c->actual, false, 0}, {revenue, c->actual, false, 0}};
        snprintf(key, sizeof(key), "hold:%lld:charge", (long long)c->hold_id);
        request_hash(hash, "settle-charge", user, c->actual, ref, NULL);
        if ((err = post(&transfer, c->st, QUOTA_KIND_CHARGE, key, hash, ref, "usage", 0, legs, 2)) < 0)
            return err;
    }
    if (amount - c->actual > 0) {
        quota__leg legs[2] = {{held, -(amount - c->actual), false, 0}, {coins, amount - c->actual, false, 0}};
        snprintf(key, sizeof(key), "hold:%lld:release", (long long)c->hold_id);
        request_hash(hash, "settle-release", user, amount - c->actual, ref, NULL);
        if ((err = post(&transfer, c->st, QUOTA_KIND_RELEASE, key, hash, ref, "unused hold", 0, legs, 2)) < 0)
            return err;
    }
    if ((err = ed_store_prepare(&s, c->st,
                                "UPDATE ledger_holds SET status = 'settled', settled_mcoins = ?2, resolved_at = ?3 "
                                "WHERE id = ?1 AND status = 'open'")) < 0)
        return err;
    sqlite3_bind_int64(s, 1, c->hold_id);
    sqlite3_bind_int64(s, 2, c->actual);
    sqlite3_bind_int64(s, 3, ed_now_ms());
    rc = sqlite3_step(s);
    sqlite3_finalize(s);
    if (rc != SQLITE_DONE)
        return quota__step_error(c->st, rc, "settle hold");
    /* we read it open inside this write transaction: exactly this row flips */
    assert(sqlite3_changes(ed_store_db(c->st)) == 1);
    return 0;
}

int quota_hold_settle(ed_store *st, int64_t hold_id, int64_t actual_mcoins)
{
    hold_ctx c = {NULL, st, 0, 0, hold_id, actual_mcoins, NULL, NULL};

    return ed_store_tx(st, hold_settle_body, &c);
}
