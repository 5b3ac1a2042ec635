/* Behind a trusted reverse proxy, per-IP limits apply to the client named in
 * X-Forwarded-For; from any other peer that header is ignored. */
#include "harness.h"

#include <check.h>
#include <stdio.h>
#include <string.h>

/* Three failed logins (of different accounts, so only the per-IP limit can
 * trip) from `from`, then one more from `from` and one from `other`.
 * Returns the two statuses. */
static void fail_logins(it_server *s, const char *from, const char *other, long *again, long *fresh)
{
    char xff[128], body[128];
    it_resp r;

    snprintf(xff, sizeof(xff), "X-Forwarded-For: %s", from);
    const char *h[] = {xff, NULL};
    for (int i = 0; i < 3; i++) {
        snprintf(body, sizeof(body), "{\"username\":\"nobody%d\",\"password\":\"wrong-password\"}", i);
        it_request(&r, s, "POST", "/api/v1/auth/login", body, h);
        ck_assert_int_eq(r.status, 401);
        it_resp_free(&r);
    }
    it_request(&r, s, "POST", "/api/v1/auth/login", "{\"username\":\"nobody9\",\"password\":\"wrong-password\"}", h);
    *again = r.status;
    it_resp_free(&r);
    snprintf(xff, sizeof(xff), "X-Forwarded-For: %s", other);
    it_request(&r, s, "POST", "/api/v1/auth/login", "{\"username\":\"nobody8\",\"password\":\"wrong-password\"}", h);
    *fresh = r.status;
    it_resp_free(&r);
}

START_TEST(forwarded_client_is_used_only_from_a_trusted_proxy)
{
    it_server s;
    long again, fresh;
    const char *env[] = {"EDDY_TRUSTED_PROXIES=127.0.0.1", "EDDY_LOGIN_ATTEMPTS_PER_MIN=3", NULL};

    ck_assert_int_eq(it_server_start(&s, env), 0);
    /* the proxy appends the client it saw; a forged left-most entry is not believed */
    fail_logins(&s, "203.0.113.9, 192.0.2.1", "192.0.2.2", &again, &fresh);
    ck_assert_int_eq(again, 429);
    ck_assert_int_eq(fresh, 401);
    ck_assert_int_eq(it_server_stop(&s), 0);
}
END_TEST

START_TEST(forwarded_header_is_ignored_from_other_peers)
{
    it_server s;
    long again, fresh;
    const char *env[] = {"EDDY_LOGIN_ATTEMPTS_PER_MIN=3", NULL};

    ck_assert_int_eq(it_server_start(&s, env), 0);
    fail_logins(&s, "192.0.2.1", "192.0.2.2", &again, &fresh);
    ck_assert_int_eq(again, 429);
    ck_assert_int_eq(fresh, 429); /* same peer, whatever the header says */
    ck_assert_int_eq(it_server_stop(&s), 0);
}
END_TEST

int main(void)
{
    const TTest *tests[] = {forwarded_client_is_used_only_from_a_trusted_proxy,
                            forwarded_header_is_ignored_from_other_peers, NULL};
    return it_tests_run("proxy", 60, NULL, NULL, tests);
}
