/*
 * floor.c - how low a user's coins may go: minus the overdraft of the
 * user's tier.
 *
 * Tiers are quota/'s, but which tier a user is on is accounts/'s (table
 * users), and accounts/ depends on quota/ (a user's tier must name a tier),
 * so quota/ cannot call accounts/. accounts/ hands the ledger its lookup
 * instead (quota_user_tier_fn_set, done as accounts/ is loaded): the
 * dependency stays one way and no SQL here touches users.
 */
#include "quota.h"
#include "quota_int.h"

#include "ed_error.h"

#include <stdatomic.h>
#include <stdio.h>

static _Atomic(quota_user_tier_fn) user_tier_fn;

void quota_user_tier_fn_set(quota_user_tier_fn fn)
{
    atomic_store(&user_tier_fn, fn);
}

int quota__user_floor(int64_t *out, ed_store *st, int64_t user_id)
{
    quota_user_tier_fn fn = atomic_load(&user_tier_fn);
    char name[sizeof(((quota_tier *)0)->name)];
    quota_tier t;
    int err;

    *out = 0;
    if (fn == NULL)
        return ed_error_set(ED_EINTERNAL, "no user lookup installed in quota/ (accounts/ installs it)");
    if ((err = fn(name, sizeof(name), st, user_id)) == ED_ENOTFOUND)
        return ed_error_set(ED_ENOTFOUND, "user %lld not found", (long long)user_id);
    if (err < 0)
        return err;
    /* a tier that has gone since binds like no overdraft */
    if ((err = quota_tier_get(&t, st, name)) == ED_ENOTFOUND)
        return 0;
    if (err < 0)
        return err;
    *out = -t.overdraft_mcoins;
    return 0;
}

/* The highest floor any user can have: the smallest overdraft of any tier,
 * and 0 (the floor of a user whose tier is gone). */
static int highest_floor(const quota_tier *t, void *payload)
{
    int64_t *most = payload;

    if (-t->overdraft_mcoins > *most)
        *most = -t->overdraft_mcoins;
    return 0;
}

int quota__verify_floors(quota_verify_report *r, ed_store *st)
{
    sqlite3_stmt *s = NULL;
    int64_t most = 0;
    int rc, err;

    /* only a balance below the highest floor can be below its own: read
     * those, then ask each one's tier */
    if ((err = quota_tier_each(st, highest_floor, &most)) < 0 ||
        (err = ed_store_prepare(&s, st,
                                "SELECT user_id, balance_mcoins FROM ledger_accounts "
                                "WHERE kind = 'user_coins' AND balance_mcoins < ?1 ORDER BY id")) < 0)
        return err;
    sqlite3_bind_int64(s, 1, most);
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        int64_t user = sqlite3_column_int64(s, 0), balance = sqlite3_column_int64(s, 1), floor;
        char msg[sizeof(r->mismatches[0])];
        if ((err = quota__user_floor(&floor, st, user)) == ED_ENOTFOUND)
            continue;   /* not a user's: nothing binds it */
        if (err < 0) {
            sqlite3_finalize(s);
            return err;
        }
        if (balance < floor) {
            snprintf(msg, sizeof(msg), "user %lld: coins %lld below the floor %lld", (long long)user,
                     (long long)balance, (long long)floor);
            quota__verify_note(r, msg);
        }
    }
    sqlite3_finalize(s);
    return rc == SQLITE_DONE ? 0 : quota__step_error(st, rc, "verify floors");
}
