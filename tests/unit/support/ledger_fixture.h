/*
 * ledger_fixture.h - a temporary store with users, for tests of the ledger
 * and of metering (tests/unit/quota, tests/unit/scheduler). Check fixtures:
 * ledger_setup() opens a fresh DATA/eddy.db (DATA = fixture_dir) with every migration, ledger_teardown() removes
 * it. Include it once, from one test file; it defines `st`.
 */
#ifndef LEDGER_FIXTURE_H
#define LEDGER_FIXTURE_H

#include "acct.h"
#include "ed_crypto.h"
#include "ed_store.h"
#include "quota.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>

static char fixture_dir[64];
static ed_store *st;

/* A users row, written directly (no password hashing): the ledger reads its
 * tier through accounts/'s lookup, acct_user_tier. */
__attribute__((unused)) static int64_t add_user(const char *name, const char *tier)
{
    char sql[512];
    snprintf(sql, sizeof(sql),
             "INSERT INTO users(username, email, password_hash, role, tier, created_at, updated_at) "
             "VALUES ('%s', '%s@x.org', 'x', 'user', '%s', 0, 0)", name, name, tier);
    ck_assert_int_eq(ed_store_exec(st, sql), 0);
    return sqlite3_last_insert_rowid(ed_store_db(st));
}

static void ledger_setup(void)
{
    char path[128];
    snprintf(fixture_dir, sizeof(fixture_dir), "/tmp/eddy-ledger-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(fixture_dir));
    snprintf(path, sizeof(path), "%s/eddy.db", fixture_dir);
    ck_assert_int_eq(ed_crypto_init(), 0);
    ck_assert_int_eq(ed_store_open(&st, path), 0);
    /* what accounts/ installs as it loads; said here so the test links it */
    quota_user_tier_fn_set(acct_user_tier);
}

static void ledger_teardown(void)
{
    char cmd[128];
    ed_store_close(st);
    st = NULL;
    snprintf(cmd, sizeof(cmd), "rm -rf %s", fixture_dir);
    ck_assert_int_eq(system(cmd), 0);
}

/* Fail the test with the first mismatch unless every ledger invariant holds. */
__attribute__((unused)) static void assert_verified(void)
{
    quota_verify_report r;
    ck_assert_int_eq(quota_verify(&r, st), 0);
    if (!r.ok)
        ck_abort_msg("ledger does not verify: %s", r.mismatches[0]);
}

/* A user's spendable coins. */
__attribute__((unused)) static int64_t coins(int64_t user)
{
    quota_balance b;
    ck_assert_int_eq(quota_balance_get(&b, st, user), 0);
    return b.coins_mcoins;
}

#endif
