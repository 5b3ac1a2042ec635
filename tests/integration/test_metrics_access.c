/*
 * test_metrics_access.c - who may read GET /metrics (issue 11, item 14):
 * config `metrics_access` = "loopback" (the default: peers on 127.0.0.0/8 or
 * ::1, and admins), "admin" (admins only) or "public".
 *
 * A remote client is made with a trusted proxy: the server trusts 127.0.0.1
 * (trusted_proxies), so a request carrying X-Forwarded-For: 203.0.113.7 is
 * from 203.0.113.7, exactly as behind nginx. Before the fix /metrics answered
 * 200 to that anonymous remote client.
 */
#include "harness.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static it_server S;
static char user_cookie[600], admin_cookie[600], admin_key_hdr[200];

#define REMOTE "X-Forwarded-For: 203.0.113.7"
#define LOCAL  NULL

/* GET /metrics from `from` (REMOTE, or LOCAL: a loopback peer) with the
 * credential header `who` (NULL: anonymous); the status. A 200 must be the
 * metrics. */
static long get_metrics(const char *from, const char *who)
{
    const char *h[3] = {NULL, NULL, NULL};
    int n = 0;
    it_resp r;
    long status;

    if (from)
        h[n++] = from;
    if (who)
        h[n++] = who;
    ck_assert_int_eq(it_request(&r, &S, "GET", "/metrics", NULL, h), 0);
    status = r.status;
    if (status == 200)
        ck_assert_ptr_nonnull(strstr(r.body, "eddy_http_requests_total"));
    it_resp_free(&r);
    return status;
}

/* Start a server with `mode` ("" for the default), a user and an admin
 * (cookie and an admin-scoped API key). */
static void start(const char *mode)
{
    char env_mode[64];
    const char *env[] = {"EDDY_TRUSTED_PROXIES=127.0.0.1", NULL, NULL};
    char *const argv[] = {"eddy", "admin", "set-role", "--data", S.data_dir, "--username", "boss", "--role", "admin",
                          NULL};
    it_user plain, boss;
    it_key k;

    snprintf(env_mode, sizeof(env_mode), "%s%s", mode[0] ? "EDDY_METRICS_ACCESS=" : "", mode);
    env[1] = mode[0] ? env_mode : NULL;
    ck_assert_int_eq(it_server_start(&S, env), 0);
    ck_assert_int_eq(it_user_make(&plain, &S, NULL, NULL, "plain", 0), 0);
    snprintf(user_cookie, sizeof(user_cookie), "%s", plain.cookie);
    ck_assert_int_eq(it_user_make(&boss, &S, NULL, NULL, "boss", 0), 0);
    ck_assert_int_eq(it_eddy_status(argv), 0);
    /* logged in again as the admin it now is */
    ck_assert_int_eq(it_login(&S, boss.name, boss.pw, boss.cookie, sizeof(boss.cookie), boss.csrf, sizeof(boss.csrf)),
                     0);
    snprintf(admin_cookie, sizeof(admin_cookie), "%s", boss.cookie);
    ck_assert_int_eq(
        it_key_make(&k, &S, boss.hdrs, "{\"name\":\"ops\",\"env\":\"prod\",\"scopes\":[\"read\",\"admin\"]}"), 0);
    snprintf(admin_key_hdr, sizeof(admin_key_hdr), "%s", k.auth);
}

/* One caller of GET /metrics and the status it must get. */
typedef struct probe {
    const char *from, *who;   /* as get_metrics() takes them */
    long        want;
} probe;

/* Start a server with `mode`, then each probe of `p` (up to one whose
 * `want` is 0) must get its status. */
static void expect(const char *mode, const probe *p)
{
    start(mode);
    for (; p->want; p++) {
        long st = get_metrics(p->from, p->who);
        ck_assert_msg(st == p->want, "metrics_access \"%s\": %s %s got %ld, not %ld", mode,
                      p->from ? "remote" : "local", p->who ? p->who : "anonymous", st, p->want);
    }
    ck_assert_int_eq(it_server_stop(&S), 0);
}

START_TEST(loopback_default_refuses_remote_anonymous_and_users_serves_admins)
{
    const probe p[] = {
        {LOCAL, NULL, 200},           /* Prometheus on the same host */
        {LOCAL, user_cookie, 200},    /* loopback is enough */
        {REMOTE, NULL, 401},
        {REMOTE, user_cookie, 403},
        {REMOTE, admin_cookie, 200},
        {REMOTE, admin_key_hdr, 200},
        {NULL, NULL, 0},
    };
    expect("", p);
}
END_TEST

START_TEST(admin_mode_refuses_even_loopback_without_an_admin)
{
    const probe p[] = {
        {LOCAL, NULL, 401},
        {LOCAL, user_cookie, 403},
        {LOCAL, admin_cookie, 200},
        {REMOTE, admin_key_hdr, 200},
        {NULL, NULL, 0},
    };
    expect("admin", p);
}
END_TEST

START_TEST(public_mode_serves_anyone)
{
    const probe p[] = {{REMOTE, NULL, 200}, {NULL, NULL, 0}};
    expect("public", p);
}
END_TEST

START_TEST(a_bad_metrics_access_value_stops_the_server_from_starting)
{
    const char *env[] = {"EDDY_METRICS_ACCESS=everyone", NULL};
    it_server t;

    memset(&t, 0, sizeof(t));
    ck_assert_int_ne(it_server_start(&t, env), 0);
    it_server_stop(&t);
}
END_TEST

int main(void)
{
    const TTest *tests[] = {loopback_default_refuses_remote_anonymous_and_users_serves_admins,
                            admin_mode_refuses_even_loopback_without_an_admin, public_mode_serves_anyone,
                            a_bad_metrics_access_value_stops_the_server_from_starting, NULL};
    return it_tests_run("metrics_access", 120, NULL, NULL, tests);
}
