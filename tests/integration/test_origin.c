/* Cross-site WebSocket/SSE hijacking and login CSRF (issue 11 item 3).
 *
 * A cookie-authenticated request that says it comes from another origin
 * (Origin header: another port, another host, "null") is refused 403 on every
 * route: the kernel channels WebSocket upgrade, the kernel event and job log
 * streams, and mutations. This server's own origin (as the Host header, or a
 * trusted proxy's X-Forwarded-Proto/Host, says) and the origins listed in
 * allow_origins pass. API keys in the Authorization header are unaffected.
 * Login and signup take only Content-Type: application/json.
 *
 * The ids below name no kernel or job: authentication (and so the Origin
 * rule) runs before the handler, so an allowed origin gets 404 and a foreign
 * one 403 without needing a sandbox on the host. The browser test of the
 * real attack (a page on another port driving a live kernel) is in
 * tests/e2e/run.mjs. */
#include "harness.h"
#include "it_db.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static it_server S;
static char own[128];
static it_user alice;   /* her headers: alice.cookie and alice.csrf */

static void start(const char *const *env)
{
    ck_assert_msg(it_server_start(&S, env) == 0, "server did not start");
    ck_assert_int_eq(it_user_make(&alice, &S, NULL, NULL, "alice", 0), 0);
    snprintf(own, sizeof(own), "Origin: http://127.0.0.1:%d", S.port);
}

/* A request with the session cookie (and CSRF token) and `origin` ("Origin:
 * ..." or NULL), plus up to four more headers. Returns the status; the body
 * goes to *body when asked (caller frees). */
static long cookie_req(const char *method, const char *path, const char *origin, const char *body_in,
                       char **body, const char *h1, const char *h2, const char *h3, const char *h4)
{
    const char *h[10];
    int n = 0;
    it_resp r;
    long st;

    if (body_in)
        h[n++] = "Content-Type: application/json";
    h[n++] = alice.cookie;
    h[n++] = alice.csrf;
    if (origin)
        h[n++] = origin;
    if (h1)
        h[n++] = h1;
    if (h2)
        h[n++] = h2;
    if (h3)
        h[n++] = h3;
    if (h4)
        h[n++] = h4;
    h[n] = NULL;
    it_request(&r, &S, method, path, body_in, h);
    st = r.status;
    if (body)
        *body = strdup(r.body ? r.body : "");
    it_resp_free(&r);
    return st;
}

#define WS_HEADERS "Connection: Upgrade", "Upgrade: websocket", "Sec-WebSocket-Version: 13", \
                   "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ=="

static long ws_upgrade(const char *origin)
{
    return cookie_req("GET", "/api/kernels/k-none/channels", origin, NULL, NULL, WS_HEADERS);
}

static long sse(const char *path, const char *origin)
{
    return cookie_req("GET", path, origin, NULL, NULL, "Accept: text/event-stream", NULL, NULL, NULL);
}

static long post_key(const char *origin)
{
    return cookie_req("POST", "/api/v1/keys", origin, "{\"name\":\"k\",\"env\":\"prod\",\"scopes\":[\"read\"]}",
                      NULL, NULL, NULL, NULL, NULL);
}

START_TEST(foreign_origin_is_refused_on_upgrades_streams_and_mutations_for_cookies)
{
    static const char *const foreign[] = {
        "Origin: http://127.0.0.1:1",          /* another port of the same host */
        "Origin: http://evil.example",
        "Origin: https://127.0.0.1",           /* another scheme */
        "Origin: null",                        /* sandboxed iframe, file: */
        "Origin: http://127.0.0.1:PORT.evil.example",
        NULL,
    };
    char *msg;

    start(NULL);
    for (int i = 0; foreign[i]; i++) {
        char o[128], port[16];
        const char *p = strstr(foreign[i], "PORT");
        snprintf(port, sizeof(port), "%d", S.port);
        if (p)
            snprintf(o, sizeof(o), "%.*s%s%s", (int)(p - foreign[i]), foreign[i], port, p + 4);
        else
            snprintf(o, sizeof(o), "%s", foreign[i]);
        ck_assert_int_eq(ws_upgrade(o), 403);
        ck_assert_int_eq(sse("/api/v1/kernels/k-none/events", o), 403);
        ck_assert_int_eq(sse("/api/v1/jobs/999999/logs?follow=1", o), 403);
        ck_assert_int_eq(cookie_req("GET", "/api/v1/me", o, NULL, NULL, NULL, NULL, NULL, NULL), 403);
        ck_assert_int_eq(post_key(o), 403);
    }
    ck_assert_int_eq(it_db_int(&S, "SELECT count(*) FROM api_keys"), 0);
    /* a clear message */
    ck_assert_int_eq(cookie_req("GET", "/api/v1/me", "Origin: http://127.0.0.1:1", NULL, &msg, NULL, NULL, NULL,
                                NULL), 403);
    ck_assert_ptr_nonnull(strstr(msg, "forbidden"));
    ck_assert_ptr_nonnull(strstr(msg, "Origin"));
    free(msg);

    /* the server's own origin (and no Origin at all) passes: 404 for the missing kernel and job */
    ck_assert_int_eq(ws_upgrade(own), 404);
    ck_assert_int_eq(ws_upgrade(NULL), 404);
    ck_assert_int_eq(sse("/api/v1/kernels/k-none/events", own), 404);
    ck_assert_int_eq(sse("/api/v1/jobs/999999/logs?follow=1", own), 404);
    ck_assert_int_eq(post_key(own), 201);
    ck_assert_int_eq(post_key(NULL), 201);
    /* case and the default port do not matter */
    {
        char o[128];
        snprintf(o, sizeof(o), "Origin: HTTP://127.0.0.1:%d", S.port);
        ck_assert_int_eq(cookie_req("GET", "/api/v1/me", o, NULL, NULL, NULL, NULL, NULL, NULL), 200);
    }
    ck_assert_int_eq(it_server_stop(&S), 0);
}
END_TEST

START_TEST(api_keys_are_not_affected_by_origin)
{
    it_key k;
    const char *hk = k.auth;
    it_resp r;

    start(NULL);
    ck_assert_int_eq(
        it_key_make(&k, &S, alice.hdrs, "{\"name\":\"k\",\"env\":\"prod\",\"scopes\":[\"read\",\"write\"]}"), 0);
    it_request(&r, &S, "GET", "/api/v1/me", NULL, (const char *[]){hk, "Origin: http://evil.example", NULL});
    ck_assert_int_eq(r.status, 200);
    it_resp_free(&r);
    it_request(&r, &S, "POST", "/api/v1/keys", "{\"name\":\"k2\",\"env\":\"prod\",\"scopes\":[\"read\"]}",
               (const char *[]){hk, "Origin: http://evil.example", NULL});
    ck_assert_int_eq(r.status, 201);
    it_resp_free(&r);
    /* a key wins over a cookie sent along, whatever the Origin */
    it_request(&r, &S, "GET", "/api/v1/kernels/k-none/events", NULL,
               (const char *[]){hk, alice.cookie, "Origin: http://evil.example", NULL});
    ck_assert_int_eq(r.status, 404);
    it_resp_free(&r);
    ck_assert_int_eq(it_server_stop(&S), 0);
}
END_TEST

START_TEST(allow_origins_lists_extra_origins_and_star_allows_any)
{
    static const char *const env[] = {"EDDY_ALLOW_ORIGINS=http://app.example.com:3000, https://lab.example.org",
                                      NULL};
    static const char *const star[] = {"EDDY_ALLOW_ORIGINS=*", NULL};

    start(env);
    ck_assert_int_eq(ws_upgrade("Origin: http://app.example.com:3000"), 404);
    ck_assert_int_eq(sse("/api/v1/kernels/k-none/events", "Origin: https://lab.example.org:443"), 404);
    ck_assert_int_eq(post_key("Origin: https://lab.example.org"), 201);
    ck_assert_int_eq(post_key("Origin: http://app.example.com:3001"), 403);
    ck_assert_int_eq(ws_upgrade("Origin: http://lab.example.org"), 403);
    ck_assert_int_eq(ws_upgrade(own), 404);
    ck_assert_int_eq(it_server_stop(&S), 0);

    start(star);
    ck_assert_int_eq(ws_upgrade("Origin: http://evil.example"), 404);
    ck_assert_int_eq(post_key("Origin: null"), 201);
    ck_assert_int_eq(it_server_stop(&S), 0);
}
END_TEST

START_TEST(behind_a_trusted_proxy_the_forwarded_scheme_and_host_are_the_origin)
{
    static const char *const env[] = {"EDDY_TRUSTED_PROXIES=127.0.0.1", NULL};
    const char *fw[] = {"X-Forwarded-Proto: https", "X-Forwarded-Host: eddy.example.org"};

    start(env);
    ck_assert_int_eq(cookie_req("GET", "/api/v1/kernels/k-none/events", "Origin: https://eddy.example.org", NULL,
                                NULL, fw[0], fw[1], "Accept: text/event-stream", NULL), 404);
    ck_assert_int_eq(cookie_req("POST", "/api/v1/keys", "Origin: https://eddy.example.org",
                                "{\"name\":\"k\",\"env\":\"prod\",\"scopes\":[\"read\"]}", NULL, fw[0], fw[1], NULL,
                                NULL), 201);
    /* the scheme matters: the browser used https */
    ck_assert_int_eq(cookie_req("GET", "/api/v1/me", "Origin: http://eddy.example.org", NULL, NULL, fw[0], fw[1],
                                NULL, NULL), 403);
    ck_assert_int_eq(it_server_stop(&S), 0);

    /* from a peer that is not a trusted proxy the forwarded headers are ignored, and the answer says so */
    start(NULL);
    {
        char *msg;
        ck_assert_int_eq(cookie_req("GET", "/api/v1/me", "Origin: https://eddy.example.org", NULL, &msg, fw[0], fw[1],
                                    NULL, NULL), 403);
        ck_assert_ptr_nonnull(strstr(msg, "trusted_proxies"));
        free(msg);
    }
    ck_assert_int_eq(it_server_stop(&S), 0);
}
END_TEST

START_TEST(login_and_signup_take_only_json)
{
    static const char login[] = "{\"username\":\"alice\",\"password\":\"pass-alice-123\"}";
    static const char signup[] = "{\"username\":\"bob\",\"email\":\"bob@example.com\",\"password\":\"password-123\"}";
    static const char *const refused[] = {"Content-Type: text/plain", "Content-Type: application/x-www-form-urlencoded",
                                          "Content-Type: multipart/form-data; boundary=x",
                                          "Content-Type: application/jsonx", NULL};
    it_resp r;

    start(NULL);
    for (int i = 0; refused[i]; i++) {
        it_request(&r, &S, "POST", "/api/v1/auth/login", login, (const char *[]){refused[i], NULL});
        ck_assert_msg(r.status == 400, "%s: %ld", refused[i], r.status);
        ck_assert_ptr_nonnull(strstr(r.body, "application/json"));
        ck_assert(it_resp_header(&r, "Set-Cookie") == NULL);
        it_resp_free(&r);
        it_request(&r, &S, "POST", "/api/v1/auth/signup", signup, (const char *[]){refused[i], NULL});
        ck_assert_msg(r.status == 400, "%s: %ld", refused[i], r.status);
        it_resp_free(&r);
    }
    ck_assert_int_eq(it_db_int(&S, "SELECT count(*) FROM users WHERE username = 'bob'"), 0);
    /* a login from another site's page is refused even as JSON */
    it_request(&r, &S, "POST", "/api/v1/auth/login", login,
               (const char *[]){"Content-Type: application/json", "Origin: http://evil.example", NULL});
    ck_assert_int_eq(r.status, 403);
    it_resp_free(&r);
    /* JSON with parameters, from the app's own page */
    it_request(&r, &S, "POST", "/api/v1/auth/login", login,
               (const char *[]){"Content-Type: Application/JSON; charset=utf-8", own, NULL});
    ck_assert_int_eq(r.status, 200);
    ck_assert_ptr_nonnull(it_resp_header(&r, "Set-Cookie"));
    it_resp_free(&r);
    it_request(&r, &S, "POST", "/api/v1/auth/signup", signup, (const char *[]){"Content-Type: application/json", NULL});
    ck_assert_int_eq(r.status, 201);
    it_resp_free(&r);
    ck_assert_int_eq(it_server_stop(&S), 0);
}
END_TEST

int main(void)
{
    const TTest *tests[] = {foreign_origin_is_refused_on_upgrades_streams_and_mutations_for_cookies,
                            api_keys_are_not_affected_by_origin,
                            allow_origins_lists_extra_origins_and_star_allows_any,
                            behind_a_trusted_proxy_the_forwarded_scheme_and_host_are_the_origin,
                            login_and_signup_take_only_json, NULL};
    return it_tests_run("origin", 120, NULL, NULL, tests);
}
