/* Unit tests for the gateway's rate limiter and login backoff (ratelimit.c):
 * in memory, no store, no HTTP. */
#include "auth_int.h"

#include "ed_error.h"

#include <check.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../support/unit_util.h"

/* ---- rate limiter ----------------------------------------------------------------- */

START_TEST(ratelimit_allows_limit_hits_per_window_then_refuses_with_retry_after)
{
    struct gw_ratelimit *rl = NULL;
    int retry = -1;

    ck_assert_int_eq(gw__ratelimit_new(&rl), 0);
    for (int i = 0; i < 3; i++)
        ck_assert_int_eq(gw__ratelimit_hit(rl, "login:user:alice", 3, 1000 + i, &retry), 0);
    ck_assert_int_eq(gw__ratelimit_hit(rl, "login:user:alice", 3, 1003, &retry), ED_ELIMIT);
    ck_assert_int_eq(retry, 60);
    /* the window opened at t=1000: near its end the wait is short but >= 1 s */
    ck_assert_int_eq(gw__ratelimit_check(rl, "login:user:alice", 3, 1000 + 59500, &retry), ED_ELIMIT);
    ck_assert_int_eq(retry, 1);
    /* another key is independent */
    ck_assert_int_eq(gw__ratelimit_hit(rl, "login:user:bob", 3, 1003, &retry), 0);
    /* a new window opens once the old one ended */
    ck_assert_int_eq(gw__ratelimit_hit(rl, "login:user:alice", 3, 1000 + 60000, &retry), 0);
    ck_assert_int_eq(retry, 0);
    ck_assert_int_eq(gw__ratelimit_hit(rl, "login:user:alice", 3, 1000 + 60001, &retry), 0);
    ck_assert_int_eq(gw__ratelimit_hit(rl, "login:user:alice", 3, 1000 + 60002, &retry), 0);
    ck_assert_int_eq(gw__ratelimit_hit(rl, "login:user:alice", 3, 1000 + 60003, &retry), ED_ELIMIT);
    gw__ratelimit_free(rl);
    gw__ratelimit_free(NULL);
}
END_TEST

START_TEST(ratelimit_check_does_not_count_and_refused_hits_do_not_extend)
{
    struct gw_ratelimit *rl = NULL;
    int retry;

    ck_assert_int_eq(gw__ratelimit_new(&rl), 0);
    for (int i = 0; i < 10; i++)
        ck_assert_int_eq(gw__ratelimit_check(rl, "k", 1, 5, &retry), 0);
    ck_assert_int_eq(gw__ratelimit_hit(rl, "k", 1, 5, &retry), 0);
    ck_assert_int_eq(gw__ratelimit_check(rl, "k", 1, 6, &retry), ED_ELIMIT);
    for (int i = 0; i < 100; i++)
        ck_assert_int_eq(gw__ratelimit_hit(rl, "k", 1, 10 + i, &retry), ED_ELIMIT);
    ck_assert_int_eq(gw__ratelimit_hit(rl, "k", 1, 5 + 60000, &retry), 0);
    gw__ratelimit_free(rl);
}
END_TEST

START_TEST(ratelimit_sweeps_ended_windows_and_keeps_live_ones)
{
    struct gw_ratelimit *rl = NULL;
    char key[32];
    int retry;

    ck_assert_int_eq(gw__ratelimit_new(&rl), 0);
    /* enough distinct keys to force sweeps in every shard */
    for (int i = 0; i < 40000; i++) {
        snprintf(key, sizeof(key), "ip:%d", i);
        ck_assert_int_eq(gw__ratelimit_hit(rl, key, 1, (int64_t)i * 10, &retry), 0);
    }
    /* the latest keys are still limited, an early one starts afresh */
    ck_assert_int_eq(gw__ratelimit_hit(rl, "ip:39999", 1, 399990 + 1, &retry), ED_ELIMIT);
    ck_assert_int_eq(gw__ratelimit_hit(rl, "ip:0", 1, 399990 + 2, &retry), 0);
    gw__ratelimit_free(rl);
}
END_TEST

typedef struct hammer {
    struct gw_ratelimit *rl;
    int                  allowed;
} hammer;

static void *hammer_run(void *p)
{
    hammer *h = p;
    int retry;

    for (int i = 0; i < 5000; i++)
        if (gw__ratelimit_hit(h->rl, i % 2 ? "shared" : "shared2", 3000, 1000, &retry) == 0)
            h->allowed++;
    return NULL;
}

START_TEST(ratelimit_admits_exactly_the_limit_under_concurrent_hits)
{
    struct gw_ratelimit *rl = NULL;
    pthread_t th[4];
    hammer h[4];
    int total = 0;

    ck_assert_int_eq(gw__ratelimit_new(&rl), 0);
    for (int i = 0; i < 4; i++) {
        h[i].rl = rl;
        h[i].allowed = 0;
        ck_assert_int_eq(pthread_create(&th[i], NULL, hammer_run, &h[i]), 0);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        total += h[i].allowed;
    }
    /* 20000 hits over two keys of 3000 each */
    ck_assert_int_eq(total, 6000);
    gw__ratelimit_free(rl);
}
END_TEST

/* ---- login backoff ------------------------------------------------------------- */

START_TEST(backoff_locks_after_free_failures_doubles_and_caps)
{
    struct gw_ratelimit *rl = NULL;
    int64_t t = 5000;
    int retry = -1;

    ck_assert_int_eq(gw__ratelimit_new(&rl), 0);
    /* two free failures, the third locks for a minute */
    ck_assert_int_eq(gw__backoff_fail(rl, "login:user:ann", 3, t), 0);
    ck_assert_int_eq(gw__backoff_fail(rl, "login:user:ann", 3, t), 0);
    ck_assert_int_eq(gw__backoff_check(rl, "login:user:ann", t, &retry), 0);
    ck_assert_int_eq(gw__backoff_fail(rl, "login:user:ann", 3, t), 0);
    ck_assert_int_eq(gw__backoff_check(rl, "login:user:ann", t, &retry), ED_ELIMIT);
    ck_assert_int_eq(retry, 60);
    ck_assert_int_eq(gw__backoff_check(rl, "login:user:ann", t + 59999, &retry), ED_ELIMIT);
    ck_assert_int_eq(retry, 1);
    ck_assert_int_eq(gw__backoff_check(rl, "login:user:ann", t + 60000, &retry), 0);
    /* each failure after a lock doubles it: 2, 4, 8 min, then the 15 min cap */
    t += 60000;
    for (int i = 0, want[] = {120, 240, 480, 900, 900}; i < 5; i++) {
        ck_assert_int_eq(gw__backoff_fail(rl, "login:user:ann", 3, t), 0);
        ck_assert_int_eq(gw__backoff_check(rl, "login:user:ann", t, &retry), ED_ELIMIT);
        ck_assert_int_eq(retry, want[i]);
        t += (int64_t)want[i] * 1000;
    }
    /* an hour without failures: forgotten, two free failures again */
    t += GW_BACKOFF_FORGET_MS;
    ck_assert_int_eq(gw__backoff_fail(rl, "login:user:ann", 3, t), 0);
    ck_assert_int_eq(gw__backoff_check(rl, "login:user:ann", t, &retry), 0);
    /* reset clears a lock; other keys are independent */
    ck_assert_int_eq(gw__backoff_fail(rl, "login:user:ann", 1, t), 0);
    ck_assert_int_eq(gw__backoff_check(rl, "login:user:ann", t, &retry), ED_ELIMIT);
    ck_assert_int_eq(gw__backoff_check(rl, "login:user:bo", t, &retry), 0);
    gw__backoff_reset(rl, "login:user:ann");
    gw__backoff_reset(rl, "login:user:nobody");
    ck_assert_int_eq(gw__backoff_check(rl, "login:user:ann", t, &retry), 0);
    gw__ratelimit_free(rl);
}
END_TEST

int main(void)
{
    const TTest *tests[] = {
        ratelimit_allows_limit_hits_per_window_then_refuses_with_retry_after,
        ratelimit_check_does_not_count_and_refused_hits_do_not_extend,
        ratelimit_sweeps_ended_windows_and_keeps_live_ones,
        ratelimit_admits_exactly_the_limit_under_concurrent_hits,
        backoff_locks_after_free_failures_doubles_and_caps,
        NULL,
    };

    return unit_tests_run("gateway_ratelimit", 0, NULL, NULL, tests);
}
