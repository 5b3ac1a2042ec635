/* Login lockout (issue 11 item 9): wrong passwords from one address used to
 * lock the real user out from every address. Failures now lock per (account,
 * address) and per account with exponential backoff, and the account-wide lock
 * does not apply to an address the account logged in from before: an
 * attacker elsewhere cannot lock out the owner at her usual address, and a
 * fresh address of hers gets a bounded backoff (429 with Retry-After), not a
 * permanent lock. Addresses are simulated through a trusted proxy's
 * X-Forwarded-For (as in test_proxy.c). */
#include "harness.h"
#include "it_db.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static it_server S;

/* A login of `user` with `password` from `addr`; the status, and Retry-After in *retry (0 if none). */
static long login_from(const char *addr, const char *user, const char *password, int *retry)
{
    char xff[96], body[160];
    const char *h[] = {"Content-Type: application/json", xff, NULL};
    it_resp r;
    long st;

    snprintf(xff, sizeof(xff), "X-Forwarded-For: %s", addr);
    snprintf(body, sizeof(body), "{\"username\":\"%s\",\"password\":\"%s\"}", user, password);
    it_request(&r, &S, "POST", "/api/v1/auth/login", body, h);
    st = r.status;
    if (retry)
        *retry = it_resp_header(&r, "Retry-After") ? atoi(it_resp_header(&r, "Retry-After")) : 0;
    it_resp_free(&r);
    return st;
}

START_TEST(attacker_elsewhere_cannot_lock_the_owner_out_of_a_known_address)
{
    static const char *const env[] = {"EDDY_TRUSTED_PROXIES=127.0.0.1", "EDDY_LOGIN_ATTEMPTS_PER_MIN=5", NULL};
    const char *home = "198.51.100.7", *attacker = "203.0.113.66", *travel = "192.0.2.44";
    char *cookie = NULL, *csrf = NULL;
    int retry, n401 = 0, n429 = 0;

    ck_assert_msg(it_server_start(&S, env) == 0, "server did not start");
    ck_assert_int_eq(it_signup_login(&S, "olivia", "olivia-password-1", &cookie, &csrf), 0);
    free(cookie);
    free(csrf);
    /* the owner signs in from home: that address is remembered */
    ck_assert_int_eq(login_from(home, "olivia", "olivia-password-1", NULL), 200);
    ck_assert_int_eq(it_db_int(&S, "SELECT count(*) FROM login_addresses l JOIN users u ON u.id = l.user_id"
                                   " WHERE u.username = 'olivia' AND l.ip = '%s'", home), 1);

    /* the attacker hammers from elsewhere */
    for (int i = 0; i < 30; i++) {
        long st = login_from(attacker, "olivia", "guess-password", &retry);
        if (st == 401)
            n401++;
        else if (st == 429)
            n429++;
        else
            ck_abort_msg("attacker attempt %d: %ld", i, st);
    }
    ck_assert_int_eq(n401, 5);       /* then locked: no more guesses get through */
    ck_assert_int_eq(n429, 25);
    ck_assert_int_eq(login_from(attacker, "olivia", "olivia-password-1", &retry), 429);
    ck_assert_int_ge(retry, 1);
    ck_assert_int_eq(it_db_int(&S, "SELECT count(*) FROM login_addresses WHERE ip = '%s'", attacker), 0);

    /* the owner at her known address still logs in, and again */
    ck_assert_int_eq(login_from(home, "olivia", "olivia-password-1", NULL), 200);
    ck_assert_int_eq(login_from(home, "olivia", "olivia-password-1", NULL), 200);

    /* from a fresh address she gets a bounded backoff, not a permanent lock */
    ck_assert_int_eq(login_from(travel, "olivia", "olivia-password-1", &retry), 429);
    ck_assert_int_ge(retry, 1);
    ck_assert_int_le(retry, 15 * 60);

    /* other accounts are not touched by the lock on olivia */
    ck_assert_int_eq(it_signup_login(&S, "peter", "peter-password-1", &cookie, &csrf), 0);
    free(cookie);
    free(csrf);
    ck_assert_int_eq(login_from(travel, "peter", "peter-password-1", NULL), 200);
    ck_assert_int_eq(it_server_stop(&S), 0);
}
END_TEST

START_TEST(failures_from_the_owner_address_lock_that_pair_only)
{
    static const char *const env[] = {"EDDY_TRUSTED_PROXIES=127.0.0.1", "EDDY_LOGIN_ATTEMPTS_PER_MIN=3", NULL};
    char *cookie = NULL, *csrf = NULL;
    int retry;

    ck_assert_msg(it_server_start(&S, env) == 0, "server did not start");
    ck_assert_int_eq(it_signup_login(&S, "quinn", "quinn-password-1", &cookie, &csrf), 0);
    free(cookie);
    free(csrf);
    ck_assert_int_eq(login_from("198.51.100.8", "quinn", "quinn-password-1", NULL), 200);
    ck_assert_int_eq(login_from("198.51.100.9", "quinn", "quinn-password-1", NULL), 200);
    /* three typos at one known address lock that (account, address) pair */
    for (int i = 0; i < 3; i++)
        ck_assert_int_eq(login_from("198.51.100.8", "quinn", "typo-password", NULL), 401);
    ck_assert_int_eq(login_from("198.51.100.8", "quinn", "quinn-password-1", &retry), 429);
    ck_assert_int_ge(retry, 1);
    ck_assert_int_le(retry, 60);   /* the first lock is a minute */
    /* her other known address is not locked */
    ck_assert_int_eq(login_from("198.51.100.9", "quinn", "quinn-password-1", NULL), 200);
    ck_assert_int_eq(it_server_stop(&S), 0);
}
END_TEST

int main(void)
{
    const TTest *tests[] = {attacker_elsewhere_cannot_lock_the_owner_out_of_a_known_address,
                            failures_from_the_owner_address_lock_that_pair_only, NULL};
    return it_tests_run("lockout", 120, NULL, NULL, tests);
}
