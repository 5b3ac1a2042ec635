/* Unit tests for quota/: the ledger against a real SQLite store. */
#include "quota.h"
#include "quota_int.h"

#include "ed_crypto.h"
#include "ed_error.h"
#include "ed_store.h"
#include "ed_time.h"

#include <check.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ledger_fixture.h"

START_TEST(grant_credits_user_and_verifies)
{
    int64_t u = add_user("ann", "free"), t1, t2;
    ck_assert_int_eq(quota_grant(&t1, st, u, 5000, "welcome", "g1", 0), 0);
    ck_assert_int_eq(coins(u), 5000);
    /* replay: same transfer, no second credit */
    ck_assert_int_eq(quota_grant(&t2, st, u, 5000, "welcome", "g1", 0), 0);
    ck_assert_int_eq(t1, t2);
    ck_assert_int_eq(coins(u), 5000);
    /* same key, different request */
    ck_assert_int_eq(quota_grant(&t2, st, u, 6000, "welcome", "g1", 0), ED_ECONFLICT);
    ck_assert_int_eq(coins(u), 5000);
    assert_verified();
}
END_TEST

START_TEST(grant_rejects_bad_input_and_posts_nothing)
{
    int64_t u = add_user("bob", "free"), t;
    quota_verify_report r;
    ck_assert_int_eq(quota_grant(&t, st, u, 0, "zero", "k0", 0), ED_EINVAL);
    ck_assert_int_eq(quota_grant(&t, st, u, -5, "neg", "k1", 0), ED_EINVAL);
    ck_assert_int_eq(quota_grant(&t, st, u, 5, "nokey", "", 0), ED_EINVAL);
    ck_assert_int_eq(quota_grant(&t, st, 9999, 5, "ghost", "k2", 0), ED_ENOTFOUND);
    ck_assert_int_eq(quota_verify(&r, st), 0);
    ck_assert_int_eq(r.transfers_checked, 0);
}
END_TEST

START_TEST(charge_never_overdraws)
{
    int64_t u = add_user("cat", "free"), t;
    ck_assert_int_eq(quota_grant(&t, st, u, 1000, NULL, "g", 0), 0);
    ck_assert_int_eq(quota_charge(&t, st, u, 600, "job:1", "usage", "c1"), 0);
    ck_assert_int_eq(quota_charge(&t, st, u, 600, "job:2", "usage", "c2"), ED_EQUOTA);
    ck_assert(strstr(ed_error_last(), "insufficient funds") != NULL);
    ck_assert_int_eq(coins(u), 400);
    assert_verified();
}
END_TEST

START_TEST(overdraft_allowed_only_by_tier)
{
    int64_t u = add_user("dan", "pro"), t;
    ck_assert_int_eq(ed_store_exec(st, "UPDATE tiers SET overdraft_mcoins = 500 WHERE name = 'pro'"), 0);
    ck_assert_int_eq(quota_charge(&t, st, u, 400, NULL, NULL, "c1"), 0);
    ck_assert_int_eq(quota_charge(&t, st, u, 200, NULL, NULL, "c2"), ED_EQUOTA);
    ck_assert_int_eq(coins(u), -400);
    assert_verified();
}
END_TEST

START_TEST(hold_settles_exactly_once)
{
    int64_t u = add_user("eve", "free"), t, h, h2;
    quota_balance b;
    ck_assert_int_eq(quota_grant(&t, st, u, 1000, NULL, "g", 0), 0);
    ck_assert_int_eq(quota_hold_open(&h, st, u, 700, "kernel:1", "h1"), 0);
    ck_assert_int_eq(quota_hold_open(&h2, st, u, 700, "kernel:1", "h1"), 0); /* replay */
    ck_assert_int_eq(h, h2);
    ck_assert_int_eq(quota_hold_open(&h2, st, u, 400, "kernel:2", "h2"), ED_EQUOTA);
    ck_assert_int_eq(quota_balance_get(&b, st, u), 0);
    ck_assert_int_eq(b.coins_mcoins, 300);
    ck_assert_int_eq(b.held_mcoins, 700);
    assert_verified();
    ck_assert_int_eq(quota_hold_settle(st, h, 800), ED_EINVAL);
    ck_assert_int_eq(quota_hold_settle(st, h, 250), 0);
    ck_assert_int_eq(quota_hold_settle(st, h, 250), ED_ECONFLICT);
    ck_assert_int_eq(quota_balance_get(&b, st, u), 0);
    ck_assert_int_eq(b.coins_mcoins, 750);
    ck_assert_int_eq(b.held_mcoins, 0);
    assert_verified();
}
END_TEST

/* What the scheduler's crash reconciliation and the admin overview read. */
START_TEST(holds_and_revenue_are_read_through_quota)
{
    int64_t u = add_user("gus", "free"), t, h1, h2, h3, ids[4], rev;
    quota_hold_info hi;
    int n;

    ck_assert_int_eq(quota_grant(&t, st, u, 10000, NULL, "g", 0), 0);
    ck_assert_int_eq(quota_hold_open(&h1, st, u, 700, "job:1", "hj1"), 0);
    ck_assert_int_eq(quota_hold_open(&h2, st, u, 500, "kernel:k", "hk"), 0);
    ck_assert_int_eq(quota_hold_open(&h3, st, u, 300, "job:2", "hj2"), 0);
    ck_assert_int_eq(quota_holds_open(ids, &n, 4, st, "job:"), 0);
    ck_assert_int_eq(n, 2);
    ck_assert_int_eq(ids[0], h1);
    ck_assert_int_eq(ids[1], h3);
    ck_assert_int_eq(quota_holds_open(ids, &n, 1, st, "job:"), 0);   /* at most max */
    ck_assert_int_eq(n, 1);

    ck_assert_int_eq(quota_hold_get(&hi, st, h1), 0);
    ck_assert(hi.open);
    ck_assert_int_eq(hi.user_id, u);
    ck_assert_int_eq(hi.amount_mcoins, 700);
    ck_assert_int_eq(hi.settled_mcoins, 0);
    ck_assert_int_eq(quota_hold_settle(st, h1, 250), 0);
    ck_assert_int_eq(quota_hold_get(&hi, st, h1), 0);
    ck_assert(!hi.open);
    ck_assert_int_eq(hi.settled_mcoins, 250);
    ck_assert_int_eq(quota_hold_get(&hi, st, 999999), ED_ENOTFOUND);
    ck_assert_int_eq(quota_holds_open(ids, &n, 4, st, "job:"), 0);
    ck_assert_int_eq(n, 1);
    ck_assert_int_eq(ids[0], h3);

    ck_assert_int_eq(quota_charge(&t, st, u, 40, "job:9", "use", "c1"), 0);
    ck_assert_int_eq(quota_revenue_since(&rev, st, 0), 0);
    ck_assert_int_eq(rev, 290);
    ck_assert_int_eq(quota_revenue_since(&rev, st, ed_now_ms() + 86400000), 0);
    ck_assert_int_eq(rev, 0);
}
END_TEST

START_TEST(journal_is_append_only_and_verify_catches_tampering)
{
    int64_t u = add_user("fay", "free"), t;
    quota_verify_report r;
    ck_assert_int_eq(quota_grant(&t, st, u, 1000, NULL, "g", 0), 0);
    ck_assert_int_lt(ed_store_exec(st, "UPDATE ledger_entries SET amount_mcoins = 5"), 0);
    ck_assert(strstr(ed_error_last(), "append-only") != NULL);
    ck_assert_int_lt(ed_store_exec(st, "DELETE FROM ledger_transfers"), 0);
    ck_assert(strstr(ed_error_last(), "append-only") != NULL);
    ck_assert_int_eq(ed_store_exec(st, "UPDATE ledger_accounts SET balance_mcoins = 99 WHERE kind = 'user_coins'"), 0);
    ck_assert_int_eq(quota_verify(&r, st), 0);
    ck_assert(!r.ok);
    ck_assert_int_ge(r.nmismatches, 1);
    ck_assert(strstr(r.mismatches[0], "entries sum to 1000") != NULL);
}
END_TEST

/* The floor check reads each user's tier through accounts/'s lookup. */
START_TEST(verify_finds_coins_below_the_tier_floor)
{
    int64_t u = add_user("hal", "pro"), v = add_user("ivy", "free"), t;
    quota_verify_report r;
    char want[160];

    ck_assert_int_eq(ed_store_exec(st, "UPDATE tiers SET overdraft_mcoins = 500 WHERE name = 'pro'"), 0);
    ck_assert_int_eq(quota_charge(&t, st, u, 400, NULL, NULL, "c1"), 0);
    ck_assert_int_eq(quota_grant(&t, st, v, 100, NULL, "g1", 0), 0);
    assert_verified();
    /* the operator lowers pro's overdraft below what hal owes */
    ck_assert_int_eq(ed_store_exec(st, "UPDATE tiers SET overdraft_mcoins = 100 WHERE name = 'pro'"), 0);
    ck_assert_int_eq(quota_verify(&r, st), 0);
    ck_assert(!r.ok);
    ck_assert_int_eq(r.nmismatches, 1);
    snprintf(want, sizeof(want), "user %lld: coins -400 below the floor -100", (long long)u);
    ck_assert_str_eq(r.mismatches[0], want);
    /* a tier that is gone binds like no overdraft */
    ck_assert_int_eq(ed_store_exec(st, "UPDATE users SET tier = 'gone' WHERE username = 'hal'"), 0);
    ck_assert_int_eq(quota_verify(&r, st), 0);
    ck_assert_int_eq(r.nmismatches, 1);
    snprintf(want, sizeof(want), "user %lld: coins -400 below the floor 0", (long long)u);
    ck_assert_str_eq(r.mismatches[0], want);
    ck_assert_int_eq(quota_charge(&t, st, u, 1, NULL, NULL, "c2"), ED_EQUOTA);
}
END_TEST

/* Without accounts/'s lookup the ledger cannot tell a user's floor: it
 * refuses rather than guess. */
START_TEST(transfers_need_the_user_tier_lookup)
{
    int64_t u = add_user("jon", "free"), t;

    quota_user_tier_fn_set(NULL);
    ck_assert_int_eq(quota_grant(&t, st, u, 100, NULL, "g1", 0), ED_EINTERNAL);
    ck_assert(strstr(ed_error_last(), "lookup") != NULL);
    quota_user_tier_fn_set(acct_user_tier);
    ck_assert_int_eq(quota_grant(&t, st, u, 100, NULL, "g1", 0), 0);
    ck_assert_int_eq(coins(u), 100);
    assert_verified();
}
END_TEST

/* Many threads charge small amounts against small balances at once. */
typedef struct {
    int64_t users[4];
    int thread;
    int ok, refused;
} worker_arg;

static void *charge_worker(void *p)
{
    worker_arg *a = p;
    char key[64];
    for (int i = 0; i < 250; i++) {
        int64_t t;
        snprintf(key, sizeof(key), "t%d-%d", a->thread, i);
        int err = quota_charge(&t, st, a->users[i % 4], 7, "bench", "concurrent", key);
        if (err == 0)
            a->ok++;
        else if (err == ED_EQUOTA)
            a->refused++;
        else
            ck_abort_msg("charge failed: %s", ed_error_last());
        /* every fourth charge is retried with the same key: must not double */
        if (i % 4 == 0 && quota_charge(&t, st, a->users[i % 4], 7, "bench", "concurrent", key) < 0 &&
            ed_error_code() != ED_EQUOTA)
            ck_abort_msg("replay failed: %s", ed_error_last());
    }
    return NULL;
}

START_TEST(concurrent_charges_never_overdraw_or_double)
{
    enum { THREADS = 8 };
    pthread_t th[THREADS];
    worker_arg args[THREADS];
    int64_t users[4], t, total_ok = 0, spent = 0;

    for (int i = 0; i < 4; i++) {
        char name[16];
        snprintf(name, sizeof(name), "u%d", i);
        users[i] = add_user(name, "free");
        ck_assert_int_eq(quota_grant(&t, st, users[i], 1000, NULL, name, 0), 0);
    }
    for (int i = 0; i < THREADS; i++) {
        memset(&args[i], 0, sizeof(args[i]));
        memcpy(args[i].users, users, sizeof(users));
        args[i].thread = i;
        pthread_create(&th[i], NULL, charge_worker, &args[i]);
    }
    for (int i = 0; i < THREADS; i++) {
        pthread_join(th[i], NULL);
        total_ok += args[i].ok;
    }
    for (int i = 0; i < 4; i++) {
        int64_t c = coins(users[i]);
        ck_assert_int_ge(c, 0);
        ck_assert_int_lt(c, 7); /* 2000 attempts of 7 against 4x1000: every user drained */
        spent += 1000 - c;
    }
    ck_assert_int_eq(spent, total_ok * 7);
    printf("concurrent charges: %lld posted, %d attempts, balances never negative\n",
           (long long)total_ok, THREADS * 250);
    assert_verified();
}
END_TEST

/* Seeded model-based testing: random operations against an in-memory model. */
static uint64_t rng_state;
static uint64_t next_rand(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

START_TEST(random_operations_match_a_reference_model)
{
    uint64_t seed = getenv("EDDY_QUOTA_SEED") ? strtoull(getenv("EDDY_QUOTA_SEED"), 0, 10) : 20261130;
    int64_t users[3], model_coins[3] = {0}, model_held[3] = {0};
    int64_t holds[64], hold_user[64], hold_amount[64];
    int nholds = 0, ops = 0;
    char key[64];

    rng_state = seed;
    for (int i = 0; i < 3; i++) {
        char name[16];
        snprintf(name, sizeof(name), "m%d", i);
        users[i] = add_user(name, "free");
    }
    for (int step = 0; step < 600; step++) {
        int u = (int)(next_rand() % 3), op = (int)(next_rand() % 5), err;
        int64_t amount = (int64_t)(next_rand() % 500) + 1, t, h;
        snprintf(key, sizeof(key), "k%d", (int)(next_rand() % 700)); /* keys collide on purpose */
        switch (op) {
        case 0:
            err = quota_grant(&t, st, users[u], amount, "model", key, 0);
            break;
        case 1:
            err = quota_charge(&t, st, users[u], amount, "model", "model", key);
            break;
        case 2:
            err = quota_refund(&t, st, users[u], amount, "model", "model", key);
            break;
        case 3:
            err = nholds < 64 ? quota_hold_open(&h, st, users[u], amount, "model", key) : ED_EINVAL;
            break;
        default:
            if (nholds == 0)
                continue;
            {
                int i = (int)(next_rand() % (uint64_t)nholds);
                int64_t actual = (int64_t)(next_rand() % (uint64_t)(hold_amount[i] + 1));
                err = quota_hold_settle(st, holds[i], actual);
                ck_assert_msg(err == 0, "seed %llu step %d: settle failed: %s",
                              (unsigned long long)seed, step, ed_error_last());
                model_held[hold_user[i]] -= hold_amount[i];
                model_coins[hold_user[i]] += hold_amount[i] - actual;
                holds[i] = holds[--nholds];
                hold_user[i] = hold_user[nholds];
                hold_amount[i] = hold_amount[nholds];
                ops++;
                continue;
            }
        }
        /* the model: a fresh key posts if funds allow; a used key is a replay or a conflict */
        {
            sqlite3_stmt *s;
            ed_store_prepare(&s, st, "SELECT COUNT(*) FROM ledger_transfers WHERE idem_key = ?1");
            sqlite3_bind_text(s, 1, key, -1, SQLITE_STATIC);
            sqlite3_step(s);
            int used = sqlite3_column_int(s, 0);
            sqlite3_finalize(s);
            ck_assert_msg(used == 1 || err != 0, "seed %llu step %d: success without a transfer",
                          (unsigned long long)seed, step);
        }
        if (err == 0) {
            /* did this call post, or replay? compare with the model via balances below */
        } else {
            ck_assert_msg(err == ED_EQUOTA || err == ED_ECONFLICT || err == ED_EINVAL,
                          "seed %llu step %d: unexpected %s", (unsigned long long)seed, step, ed_error_last());
        }
        /* Recompute the model from what was posted for this key. */
        (void)t;
        if (err == 0) {
            quota_balance b;
            int64_t before = model_coins[u] + model_held[u];
            ck_assert_int_eq(quota_balance_get(&b, st, users[u]), 0);
            int64_t delta_coins = b.coins_mcoins - model_coins[u];
            int64_t delta_held = b.held_mcoins - model_held[u];
            /* a post moves exactly `amount` in the direction of op; a replay moves nothing */
            int posted = delta_coins != 0 || delta_held != 0;
            if (posted) {
                switch (op) {
                case 0: case 2: ck_assert_int_eq(delta_coins, amount); break;
                case 1: ck_assert_int_eq(delta_coins, -amount); break;
                case 3:
                    ck_assert_int_eq(delta_coins, -amount);
                    ck_assert_int_eq(delta_held, amount);
                    holds[nholds] = h;
                    hold_user[nholds] = u;
                    hold_amount[nholds] = amount;
                    nholds++;
                    break;
                }
                ops++;
            }
            model_coins[u] = b.coins_mcoins;
            model_held[u] = b.held_mcoins;
            ck_assert_int_ge(model_coins[u], 0);
            (void)before;
        }
        if (step % 100 == 0)
            assert_verified();
    }
    for (int i = 0; i < 3; i++) {
        quota_balance b;
        ck_assert_int_eq(quota_balance_get(&b, st, users[i]), 0);
        ck_assert_int_eq(b.coins_mcoins, model_coins[i]);
        ck_assert_int_eq(b.held_mcoins, model_held[i]);
    }
    assert_verified();
    printf("model-based ledger test: seed %llu, %d operations posted, ledger verified\n",
           (unsigned long long)seed, ops);
}
END_TEST

START_TEST(tiers_are_listed_and_checked)
{
    quota_tier t;
    ck_assert_int_eq(quota_tier_exists(st, "free"), 1);
    ck_assert_int_eq(quota_tier_exists(st, "platinum"), 0);
    ck_assert_int_eq(quota_tier_get(&t, st, "premium"), 0);
    ck_assert_int_eq(t.max_gpus_per_job, 8);
    ck_assert_int_eq(quota_tier_get(&t, st, "gold"), ED_ENOTFOUND);
}
END_TEST

START_TEST(hold_states_go_open_then_settled_only)
{
#ifdef NDEBUG
    ck_abort_msg("NDEBUG is defined: asserts are off in the test build (configure with EDDY_ASSERTS=ON)");
#endif
    ck_assert(quota__hold_transition_ok("", "open"));
    ck_assert(quota__hold_transition_ok("open", "settled"));
    ck_assert(!quota__hold_transition_ok("settled", "open"));
    ck_assert(!quota__hold_transition_ok("settled", "settled"));
    ck_assert(!quota__hold_transition_ok("", "settled"));
    ck_assert(!quota__hold_transition_ok("open", "open"));
}
END_TEST

START_TEST(tier_update_changes_only_given_fields_and_refuses_bad_values)
{
    quota_tier before, after;
    quota_tier_change u = QUOTA_TIER_KEEP;

    ck_assert_int_eq(quota_tier_get(&before, st, "pro"), 0);
    u.max_kernels = 7;
    u.job_disk_bytes = 0;                      /* 0: no limit */
    u.workspace_bytes = INT64_C(3) << 30;
    ck_assert_int_eq(quota_tier_update(st, "pro", &u), 0);
    ck_assert_int_eq(quota_tier_get(&after, st, "pro"), 0);
    ck_assert_int_eq(after.max_kernels, 7);
    ck_assert_int_eq(after.job_disk_bytes, 0);
    ck_assert_int_eq(after.workspace_bytes, INT64_C(3) << 30);
    ck_assert_int_eq(after.weight, before.weight);
    ck_assert_int_eq(after.max_session_ms, before.max_session_ms);
    ck_assert_int_eq(after.overdraft_mcoins, before.overdraft_mcoins);
    ck_assert_int_eq(after.allow_egress, before.allow_egress);

    /* refused, and nothing changed */
    u = QUOTA_TIER_KEEP;
    u.max_kernels = 1;
    u.weight = 0;
    ck_assert_int_eq(quota_tier_update(st, "pro", &u), ED_EINVAL);
    u = QUOTA_TIER_KEEP;
    u.max_kernels = 1;
    u.job_disk_bytes = 1000;                   /* under 1 MiB */
    ck_assert_int_eq(quota_tier_update(st, "pro", &u), ED_EUNPROC);
    ck_assert_ptr_nonnull(strstr(ed_error_last(), "job_disk_bytes"));
    u.job_disk_bytes = -1;
    u.workspace_bytes = (INT64_C(1) << 50) + 1;
    ck_assert_int_eq(quota_tier_update(st, "pro", &u), ED_EUNPROC);
    ck_assert_ptr_nonnull(strstr(ed_error_last(), "workspace_bytes"));
    ck_assert_int_eq(quota_tier_get(&after, st, "pro"), 0);
    ck_assert_int_eq(after.max_kernels, 7);
    u = QUOTA_TIER_KEEP;
    ck_assert_int_eq(quota_tier_update(st, "gold", &u), ED_ENOTFOUND);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("quota");
    TCase *tc = tcase_create("ledger");
    SRunner *sr;
    int failed;

    tcase_add_checked_fixture(tc, ledger_setup, ledger_teardown);
    tcase_set_timeout(tc, 240);
    tcase_add_test(tc, grant_credits_user_and_verifies);
    tcase_add_test(tc, grant_rejects_bad_input_and_posts_nothing);
    tcase_add_test(tc, charge_never_overdraws);
    tcase_add_test(tc, overdraft_allowed_only_by_tier);
    tcase_add_test(tc, hold_settles_exactly_once);
    tcase_add_test(tc, holds_and_revenue_are_read_through_quota);
    tcase_add_test(tc, journal_is_append_only_and_verify_catches_tampering);
    tcase_add_test(tc, concurrent_charges_never_overdraw_or_double);
    tcase_add_test(tc, random_operations_match_a_reference_model);
    tcase_add_test(tc, tiers_are_listed_and_checked);
    tcase_add_test(tc, tier_update_changes_only_given_fields_and_refuses_bad_values);
    tcase_add_test(tc, hold_states_go_open_then_settled_only);
    tcase_add_test(tc, verify_finds_coins_below_the_tier_floor);
    tcase_add_test(tc, transfers_need_the_user_tier_lookup);
    suite_add_tcase(s, tc);
    sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
