/* Integration tests for accounts, sessions, CSRF, API keys, rate limits, admin
 * routes and the audit trail, over the real `eddy serve`. What the server
 * persisted is checked in its SQLite file. */
#include "harness.h"
#include "it_db.h"

#include <check.h>
#include <sodium.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static it_server S;

/* ---- helpers ------------------------------------------------------------------ */

static void start(const char *const *env)
{
    ck_assert_msg(it_server_start(&S, env) == 0, "server did not start");
}

static void stop(void)
{
    ck_assert_int_eq(it_server_stop(&S), 0);
}

static void db_exec(const char *sql)
{
    sqlite3 *db = it_db_open(&S);

    ck_assert_int_eq(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
}

/* A session's request headers: cookie, and the CSRF token when given. */
typedef struct sess {
    char *cookie, *csrf;
    char  h_cookie[200], h_csrf[100];
    const char *hdrs[3];      /* cookie + csrf */
    const char *hdrs_nocsrf[2];
} sess;

static void sess_init(sess *s)
{
    snprintf(s->h_cookie, sizeof(s->h_cookie), "Cookie: %s", s->cookie);
    snprintf(s->h_csrf, sizeof(s->h_csrf), "X-CSRF-Token: %s", s->csrf);
    s->hdrs[0] = s->h_cookie;
    s->hdrs[1] = s->h_csrf;
    s->hdrs[2] = NULL;
    s->hdrs_nocsrf[0] = s->h_cookie;
    s->hdrs_nocsrf[1] = NULL;
}

static void signup_login(sess *s, const char *username)
{
    memset(s, 0, sizeof(*s));
    ck_assert_int_eq(it_signup_login(&S, username, "password-123", &s->cookie, &s->csrf), 0);
    sess_init(s);
}

/* Log in an existing user; returns the status, fills `s` on 200. */
static long login(sess *s, const char *username, const char *password, const char *const *hdrs,
                  it_resp *out)
{
    char body[256];
    it_resp r;
    long status;

    memset(s, 0, sizeof(*s));
    snprintf(body, sizeof(body), "{\"username\":\"%s\",\"password\":\"%s\"}", username, password);
    it_request(&r, &S, "POST", "/api/v1/auth/login", body, hdrs);
    status = r.status;
    if (status == 200) {
        const char *sc = it_resp_header(&r, "Set-Cookie");
        ck_assert_ptr_nonnull(sc);
        s->cookie = strndup(sc, strcspn(sc, ";"));
        s->csrf = strdup(json_string_value(json_object_get(r.json, "csrf_token")));
        sess_init(s);
    }
    if (out)
        *out = r;
    else
        it_resp_free(&r);
    return status;
}

static void sess_free(sess *s)
{
    free(s->cookie);
    free(s->csrf);
    memset(s, 0, sizeof(*s));
}

static long req_status(const char *method, const char *path, const char *body,
                       const char *const *hdrs)
{
    return it_request_status(&S, method, path, body, hdrs);
}

/* Create a key through the API; returns it (malloc'd) and its id, or NULL
 * with *status set. */
static char *create_key(long *status, long long *id, const sess *s, const char *body)
{
    it_resp r;
    char *key = NULL;

    it_request(&r, &S, "POST", "/api/v1/keys", body, s->hdrs);
    *status = r.status;
    if (r.status == 201) {
        key = strdup(json_string_value(json_object_get(r.json, "key")));
        if (id)
            *id = json_integer_value(json_object_get(r.json, "id"));
    }
    it_resp_free(&r);
    return key;
}

typedef struct keyhdr {
    char h[160];
    const char *hdrs[2];
} keyhdr;

static const char *const *key_headers(keyhdr *k, const char *scheme, const char *key)
{
    snprintf(k->h, sizeof(k->h), "Authorization: %s %s", scheme, key);
    k->hdrs[0] = k->h;
    k->hdrs[1] = NULL;
    return k->hdrs;
}

/* Run `eddy admin ARGS...` on the data dir; returns its exit status. */
static int eddy_admin(const char *args)
{
    char cmd[1024];
    int st;

    snprintf(cmd, sizeof(cmd), "'%s' admin %s --data '%s' >/dev/null 2>&1", it_eddy_bin(), args,
             S.data_dir);
    st = system(cmd);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* A data directory with an admin (root / password-123), server started on it. */
static void start_with_admin(const char *const *env)
{
    char tmpl[] = "/tmp/eddy-it-auth-XXXXXX";
    char dir[200];

    ck_assert_ptr_nonnull(mkdtemp(tmpl));
    snprintf(dir, sizeof(dir), "%s/data", tmpl);
    memset(&S, 0, sizeof(S));
    snprintf(S.data_dir, sizeof(S.data_dir), "%s", dir);
    ck_assert_int_eq(eddy_admin("create-user --username root --email root@localhost "
                                "--password password-123 --role admin"),
                     0);
    ck_assert_msg(it_server_start_in(&S, dir, env) == 0, "server did not start");
    S.keep_data = 0;   /* it_server_stop removes the temporary parent */
}

/* ---- sessions -------------------------------------------------------------------- */

START_TEST(signup_login_me_logout_and_cookie_is_dead_after_logout)
{
    sess a;
    it_resp r;

    start(NULL);
    signup_login(&a, "alice");
    it_request(&r, &S, "GET", "/api/v1/me", NULL, a.hdrs_nocsrf);
    ck_assert_int_eq(r.status, 200);
    ck_assert_str_eq(json_string_value(json_object_get(r.json, "username")), "alice");
    ck_assert_str_eq(json_string_value(json_object_get(r.json, "email")), "alice@example.com");
    ck_assert_str_eq(json_string_value(json_object_get(r.json, "role")), "user");
    ck_assert_str_eq(json_string_value(json_object_get(r.json, "tier")), "free");
    ck_assert_ptr_nonnull(json_string_value(json_object_get(r.json, "created_at")));
    ck_assert_ptr_null(json_object_get(r.json, "password_hash"));
    /* a reloaded page can get the CSRF token back */
    ck_assert_str_eq(json_string_value(json_object_get(r.json, "csrf_token")), a.csrf);
    it_resp_free(&r);
    /* the stored hash is Argon2id; the cookie value itself is nowhere in the DB */
    ck_assert_int_eq(it_db_int(&S, "SELECT count(*) FROM users WHERE password_hash LIKE '$argon2id$%%'"), 1);
    ck_assert_int_eq(it_db_int(&S, "SELECT count(*) FROM sessions WHERE token_sha256 = '%s'",
                            strchr(a.cookie, '=') + 1), 0);
    ck_assert_int_eq(it_db_int(&S, "SELECT count(*) FROM audit WHERE action = 'auth.signup'"), 1);
    ck_assert_int_eq(it_db_int(&S, "SELECT count(*) FROM audit WHERE action = 'auth.login' AND ip IS NOT NULL"
                            " AND request_id IS NOT NULL"), 1);

    it_request(&r, &S, "POST", "/api/v1/auth/logout", NULL, a.hdrs);
    ck_assert_int_eq(r.status, 204);
    ck_assert(strstr(it_resp_header(&r, "Set-Cookie"), "Max-Age=0") != NULL);
    it_resp_free(&r);
    ck_assert_int_eq(it_db_int(&S, "SELECT count(*) FROM sessions"), 0);
    ck_assert_int_eq(it_db_int(&S, "SELECT count(*) FROM audit WHERE action = 'auth.logout'"), 1);
    it_request(&r, &S, "GET", "/api/v1/me", NULL, a.hdrs_nocsrf);
    ck_assert_int_eq(r.status, 401);
    ck_assert_str_eq(it_resp_error_code(&r), "unauthorized");
    it_resp_free(&r);
    ck_assert_int_eq(req_status("GET", "/api/v1/me", NULL, NULL), 401);
    sess_free(&a);
    stop();
}
END_TEST

START_TEST(login_sets_a_httponly_samesite_cookie_and_rotates_the_session)
{
    sess a, b;
    it_resp r;
    const char *sc;

    start(NULL);
    signup_login(&a, "bob");
    /* a new login presenting the old cookie ends the old session */
    ck_assert_int_eq(login(&b, "bob", "password-123", a.hdrs_nocsrf, &r), 200);
    sc = it_resp_header(&r, "Set-Cookie");
    ck_assert(strncmp(sc, "eddy_session=", 13) == 0);
    ck_assert(strstr(sc, "Path=/") && strstr(sc, "HttpOnly") && strstr(sc, "SameSite=Lax"));
    ck_assert(strstr(sc, "Max-Age=") != NULL);
    ck_assert_ptr_null(strstr(sc, "Secure"));   /* plain HTTP here */
    ck_assert_uint_ge(strlen(b.cookie) - strlen("eddy_session="), 32);
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(r.json, "user"), "username")),
                     "bob");
    it_resp_free(&r);
    ck_assert_str_ne(a.cookie, b.cookie);
    ck_assert_int_eq(req_status("GET", "/api/v1/me", NULL, a.hdrs_nocsrf), 401);
    ck_assert_int_eq(req_status("GET", "/api/v1/me", NULL, b.hdrs_nocsrf), 200);
    ck_assert_int_eq(it_db_int(&S, "SELECT count(*) FROM sessions"), 1);
    sess_free(&a);
    sess_free(&b);
    stop();
}
END_TEST

START_TEST(wrong_password_and_unknown_user_are_401_alike_and_audited)
{
    sess a, x;
    it_resp r1, r2;

    start(NULL);
    signup_login(&a, "carol");
    ck_assert_int_eq(login(&x, "carol", "wrong-password", NULL, &r1), 401);
    ck_assert_int_eq(login(&x, "nobody", "wrong-password", NULL, &r2), 401);
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(r1.json, "error"), "message")),
                     json_string_value(json_object_get(json_object_get(r2.json, "error"), "message")));
    ck_assert_ptr_null(it_resp_header(&r1, "Set-Cookie"));
    it_resp_free(&r1);
    it_resp_free(&r2);
    ck_assert_int_eq(it_db_int(&S, "SELECT count(*) FROM audit WHERE action = 'auth.login_failed'"), 2);
    ck_assert_int_eq(it_db_int(&S, "SELECT count(*) FROM sessions"), 1);
    sess_free(&a);
    stop();
}
END_TEST

START_TEST(login_upgrades_a_hash_made_with_weaker_parameters)
{
    char weak[crypto_pwhash_STRBYTES], sql[300];
    sess a, b;

    ck_assert_int_eq(sodium_init() >= 0, 1);
    start(NULL);
    signup_login(&a, "lena");
    ck_assert_int_eq(crypto_pwhash_str_alg(weak, "password-123", 12, 1, 8192 * 1024,
                                           crypto_pwhash_ALG_ARGON2ID13), 0);
    snprintf(sql, sizeof(sql), "UPDATE users SET password_hash = '%s' WHERE username = 'lena'", weak);
    db_exec(sql);
    ck_assert_int_eq(login(&b, "lena", "password-123", NULL, NULL), 200);
    ck_assert_int_eq(it_db_int(&S, "SELECT count(*) FROM users WHERE username = 'lena'"
                            " AND password_hash LIKE '$argon2id$v=19$m=19456,t=2,p=1$%%'"), 1);
    sess_free(&b);
    ck_assert_int_eq(login(&b, "lena", "password-123", NULL, NULL), 200);
    sess_free(&a);
    sess_free(&b);
    stop();
}
END_TEST

START_TEST(login_is_rate_limited_after_n_failures_with_retry_after)
{
    static const char *const env[] = {"EDDY_LOGIN_ATTEMPTS_PER_MIN=3", NULL};
    sess a, x;
    it_resp r;
    const char *ra;

    start(env);
    signup_login(&a, "dave");
    /* a successful login does not count */
    ck_assert_int_eq(login(&x, "dave", "password-123", NULL, NULL), 200);
    sess_free(&x);
    for (int i = 0; i < 3; i++)
        ck_assert_int_eq(login(&x, "dave", "wrong-password", NULL, NULL), 401);
    ck_assert_int_eq(login(&x, "dave", "wrong-password", NULL, &r), 429);
    ck_assert_str_eq(it_resp_error_code(&r), "rate_limited");
    ra = it_resp_header(&r, "Retry-After");
    ck_assert_ptr_nonnull(ra);
    ck_assert_int_ge(atoi(ra), 1);
    ck_assert_int_le(atoi(ra), 60);
    it_resp_free(&r);
    /* while limited even the right password is refused */
    ck_assert_int_eq(login(&x, "dave", "password-123", NULL, NULL), 429);
    /* the IP is limited too: another account from the same address */
    ck_assert_int_eq(login(&x, "erin", "whatever-pw", NULL, NULL), 429);
    /* an existing session keeps working */
    ck_assert_int_eq(req_status("GET", "/api/v1/me", NULL, a.hdrs_nocsrf), 200);
    sess_free(&a);
    stop();
}
END_TEST

START_TEST(cookie_post_needs_the_right_csrf_token)
{
    sess a;
    const char *wrong[] = {a.h_cookie, "X-CSRF-Token: AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", NULL};
    const char *body = "{\"name\":\"k\",\"env\":\"prod\",\"scopes\":[\"read\"]}";
    it_resp r;

    start(NULL);
    signup_login(&a, "frank");
    wrong[0] = a.h_cookie;
    it_request(&r, &S, "POST", "/api/v1/keys", body, a.hdrs_nocsrf);
    ck_assert_int_eq(r.status, 403);
    ck_assert_str_eq(it_resp_error_code(&r), "forbidden");
    it_resp_free(&r);
    ck_assert_int_eq(req_status("POST", "/api/v1/keys", body, wrong), 403);
    ck_assert_int_eq(req_status("POST", "/api/v1/auth/logout", NULL, a.hdrs_nocsrf), 403);
    ck_assert_int_eq(it_db_int(&S, "SELECT count(*) FROM api_keys"), 0);
    ck_assert_int_eq(req_status("POST", "/api/v1/keys", body, a.hdrs), 201);
    ck_assert_int_eq(it_db_int(&S, "SELECT count(*) FROM api_keys"), 1);
    /* GET needs no token */
    ck_assert_int_eq(req_status("GET", "/api/v1/keys", NULL, a.hdrs_nocsrf), 200);
    sess_free(&a);
    stop();
}
END_TEST

/* ---- API keys ---------------------------------------------------------------------- */

START_TEST(key_works_with_bearer_and_token_is_listed_without_secret_and_revoked_at_once)
{
    sess a;
    keyhdr kh;
    it_resp r;
    long st;
    long long id;
    char *key, path[64];

    start(NULL);
    signup_login(&a, "gina");
    key = create_key(&st, &id, &a,
                     "{\"name\":\"laptop\",\"env\":\"prod\",\"scopes\":[\"read\",\"write\"],"
                     "\"expires_in_days\":30,\"daily_budget_mcoins\":1000,\"rate_limit_per_min\":100}");
    ck_assert_int_eq(st, 201);
    ck_assert(strncmp(key, "eddy_prod_", 10) == 0);
    ck_assert_int_eq(it_db_int(&S, "SELECT count(*) FROM api_keys WHERE key_sha256 = '%s'", key), 0);
    ck_assert_int_eq(it_db_int(&S, "SELECT count(*) FROM audit WHERE action = 'key.create'"), 1);

    it_request(&r, &S, "GET", "/api/v1/me", NULL, key_headers(&kh, "Bearer", key));
    ck_assert_int_eq(r.status, 200);
    ck_assert_str_eq(json_string_value(json_object_get(r.json, "username")), "gina");
    it_resp_free(&r);
    ck_assert_int_eq(req_status("GET", "/api/v1/me", NULL, key_headers(&kh, "token", key)), 200);
    it_request(&r, &S, "GET", "/api/v1/me", NULL, key_headers(&kh, "Bearer", key));
    ck_assert_ptr_null(json_object_get(r.json, "csrf_token"));
    it_resp_free(&r);
    ck_assert_int_ge(it_db_int(&S, "SELECT last_used_at FROM api_keys WHERE id = %lld", id), 1);

    it_request(&r, &S, "GET", "/api/v1/keys", NULL, key_headers(&kh, "Bearer", key));
    ck_assert_int_eq(r.status, 200);
    {
        json_t *items = json_object_get(r.json, "items"), *k0 = json_array_get(items, 0);
        ck_assert_uint_eq(json_array_size(items), 1);
        ck_assert_ptr_null(json_object_get(k0, "key"));
        ck_assert_ptr_null(strstr(r.body, key));
        ck_assert_str_eq(json_string_value(json_object_get(k0, "name")), "laptop");
        ck_assert(strncmp(key, json_string_value(json_object_get(k0, "prefix")), 10) == 0);
        ck_assert(json_is_null(json_object_get(r.json, "next_cursor")));
    }
    it_resp_free(&r);

    snprintf(path, sizeof(path), "/api/v1/keys/%lld", id);
    ck_assert_int_eq(req_status("DELETE", path, NULL, key_headers(&kh, "Bearer", key)), 204);
    ck_assert_int_eq(req_status("GET", "/api/v1/me", NULL, key_headers(&kh, "Bearer", key)), 401);
    ck_assert_int_eq(req_status("DELETE", path, NULL, a.hdrs), 404);
    ck_assert_int_eq(it_db_int(&S, "SELECT count(*) FROM audit WHERE action = 'key.revoke'"), 1);
    free(key);
    sess_free(&a);
    stop();
}
END_TEST

START_TEST(tampered_expired_wrong_env_and_wrong_scope_keys_are_refused)
{
    static const char *const env[] = {"EDDY_ENV_NAME=dev", NULL};
    sess a;
    keyhdr kh;
    it_resp r;
    long st;
    long long id;
    char *ro, *rw, *prod;

    start(env);
    signup_login(&a, "hank");
    ro = create_key(&st, NULL, &a, "{\"name\":\"ro\",\"env\":\"dev\",\"scopes\":[\"read\"]}");
    ck_assert_int_eq(st, 201);
    rw = create_key(&st, &id, &a,
                    "{\"name\":\"rw\",\"env\":\"dev\",\"scopes\":[\"read\",\"write\"],\"expires_in_days\":1}");
    ck_assert_int_eq(st, 201);
    /* env_name = dev restricts keys to dev: a prod key is refused at creation
     * (422 naming the accepted envs), not 401 at every use (test_key_envs.c) */
    it_request(&r, &S, "POST", "/api/v1/keys", "{\"name\":\"p\",\"env\":\"prod\",\"scopes\":[\"read\"]}", a.hdrs);
    ck_assert_int_eq(r.status, 422);
    ck_assert(strstr(r.body, "dev") != NULL);
    it_resp_free(&r);
    prod = NULL;

    /* read-only key on a write route */
    it_request(&r, &S, "POST", "/api/v1/keys", "{\"name\":\"x\",\"env\":\"dev\",\"scopes\":[\"read\"]}",
               key_headers(&kh, "Bearer", ro));
    ck_assert_int_eq(r.status, 403);
    ck_assert(strstr(r.body, "write") != NULL);
    it_resp_free(&r);
    ck_assert_int_eq(req_status("GET", "/api/v1/me", NULL, key_headers(&kh, "Bearer", ro)), 200);

    /* a key for another env: 401 (test_key_envs.c, after a restart that restricts envs) */

    /* one character changed: checksum mismatch */
    {
        char *bad = strdup(rw);
        size_t i = strlen("eddy_dev_") + 5;
        bad[i] = bad[i] == 'x' ? 'y' : 'x';
        it_request(&r, &S, "GET", "/api/v1/me", NULL, key_headers(&kh, "Bearer", bad));
        ck_assert_int_eq(r.status, 401);
        ck_assert(strstr(r.body, "checksum") != NULL);
        it_resp_free(&r);
        free(bad);
    }
    ck_assert_int_eq(req_status("GET", "/api/v1/me", NULL, key_headers(&kh, "Basic", rw)), 401);

    /* expired */
    ck_assert_int_eq(req_status("GET", "/api/v1/me", NULL, key_headers(&kh, "Bearer", rw)), 200);
    {
        char sql[128];
        snprintf(sql, sizeof(sql), "UPDATE api_keys SET expires_at = 1000 WHERE id = %lld", id);
        db_exec(sql);
    }
    it_request(&r, &S, "GET", "/api/v1/me", NULL, key_headers(&kh, "Bearer", rw));
    ck_assert_int_eq(r.status, 401);
    ck_assert(strstr(r.body, "expired") != NULL);
    it_resp_free(&r);

    /* a non-admin may not mint an admin key */
    create_key(&st, NULL, &a, "{\"name\":\"adm\",\"env\":\"dev\",\"scopes\":[\"admin\"]}");
    ck_assert_int_eq(st, 403);
    ck_assert_int_eq(it_db_int(&S, "SELECT count(*) FROM api_keys"), 2);   /* ro, rw: not the prod one */
    free(ro);
    free(rw);
    free(prod);
    sess_free(&a);
    stop();
}
END_TEST

START_TEST(key_rate_limit_gives_429_with_retry_after)
{
    sess a;
    keyhdr kh;
    it_resp r;
    long st;
    char *key;

    start(NULL);
    signup_login(&a, "ivan");
    key = create_key(&st, NULL, &a,
                     "{\"name\":\"slow\",\"env\":\"prod\",\"scopes\":[\"read\"],\"rate_limit_per_min\":2}");
    ck_assert_int_eq(st, 201);
    ck_assert_int_eq(req_status("GET", "/api/v1/me", NULL, key_headers(&kh, "Bearer", key)), 200);
    ck_assert_int_eq(req_status("GET", "/api/v1/me", NULL, key_headers(&kh, "Bearer", key)), 200);
    it_request(&r, &S, "GET", "/api/v1/me", NULL, key_headers(&kh, "Bearer", key));
    ck_assert_int_eq(r.status, 429);
    ck_assert_ptr_nonnull(it_resp_header(&r, "Retry-After"));
    ck_assert_int_ge(atoi(it_resp_header(&r, "Retry-After")), 1);
    it_resp_free(&r);
    /* the cookie session is not affected */
    ck_assert_int_eq(req_status("GET", "/api/v1/me", NULL, a.hdrs_nocsrf), 200);
    free(key);
    sess_free(&a);
    stop();
}
END_TEST

/* ---- bad input leaves nothing behind ----------------------------------------------- */

START_TEST(malformed_wrong_type_and_missing_fields_are_400_and_write_nothing)
{
    static const char *const bodies[] = {
        "{\"username\":\"zed\",",                                               /* malformed */
        "[1,2]",                                                                /* not an object */
        "{\"username\":5,\"email\":\"z@example.com\",\"password\":\"password-123\"}",
        "{\"username\":\"zed\",\"email\":[],\"password\":\"password-123\"}",
        "{\"username\":\"zed\",\"email\":\"z@example.com\"}",                     /* missing */
        "{\"username\":\"Zed!\",\"email\":\"z@example.com\",\"password\":\"password-123\"}",
        "{\"username\":\"zed\",\"email\":\"not-email\",\"password\":\"password-123\"}",
        "{\"username\":\"zed\",\"email\":\"z@example.com\",\"password\":\"short\"}",
        "{\"username\":\"zed\\u0000x\",\"email\":\"z@example.com\",\"password\":\"password-123\"}",
        NULL,
    };
    static const char *const key_bodies[] = {
        "{\"name\":\"k\",",
        "{\"name\":\"k\",\"env\":\"prod\"}",
        "{\"name\":\"k\",\"env\":\"prod\",\"scopes\":\"read\"}",
        "{\"name\":\"k\",\"env\":\"prod\",\"scopes\":[\"root\"]}",
        "{\"name\":\"k\",\"env\":\"prod\",\"scopes\":[]}",
        "{\"name\":\"k\",\"env\":\"staging\",\"scopes\":[\"read\"]}",
        "{\"name\":7,\"env\":\"prod\",\"scopes\":[\"read\"]}",
        "{\"name\":\"k\",\"env\":\"prod\",\"scopes\":[\"read\"],\"expires_in_days\":\"7\"}",
        "{\"name\":\"k\",\"env\":\"prod\",\"scopes\":[\"read\"],\"expires_in_days\":0}",
        "{\"name\":\"k\",\"env\":\"prod\",\"scopes\":[\"read\"],\"rate_limit_per_min\":-1}",
        NULL,
    };
    sess a;
    it_resp r;

    start(NULL);
    for (int i = 0; bodies[i]; i++) {
        it_request(&r, &S, "POST", "/api/v1/auth/signup", bodies[i], NULL);
        ck_assert_msg(r.status == 400, "signup body %d: %ld %s", i, r.status, r.body);
        ck_assert_str_eq(it_resp_error_code(&r), "bad_request");
        it_resp_free(&r);
    }
    ck_assert_int_eq(req_status("POST", "/api/v1/auth/signup", NULL, NULL), 400);
    ck_assert_int_eq(it_db_int(&S, "SELECT count(*) FROM users"), 0);
    ck_assert_int_eq(it_db_int(&S, "SELECT count(*) FROM audit"), 0);
    ck_assert_int_eq(req_status("POST", "/api/v1/auth/login", "{\"username\":1}", NULL), 400);
    ck_assert_int_eq(req_status("POST", "/api/v1/auth/login", "{\"username\":\"a\"}", NULL), 400);

    signup_login(&a, "zed");
    /* taken username / email: 409, still one user */
    ck_assert_int_eq(req_status("POST", "/api/v1/auth/signup",
                                "{\"username\":\"zed\",\"email\":\"o@example.com\",\"password\":\"password-123\"}",
                                NULL), 409);
    ck_assert_int_eq(req_status("POST", "/api/v1/auth/signup",
                                "{\"username\":\"zed2\",\"email\":\"ZED@example.com\",\"password\":\"password-123\"}",
                                NULL), 409);
    ck_assert_int_eq(it_db_int(&S, "SELECT count(*) FROM users"), 1);
    for (int i = 0; key_bodies[i]; i++) {
        it_request(&r, &S, "POST", "/api/v1/keys", key_bodies[i], a.hdrs);
        /* an env the server does not accept and a bad integer field are 422 */
        ck_assert_msg(r.status == ((i == 5 || i >= 7) ? 422 : 400), "key body %d: %ld %s", i, r.status, r.body);
        it_resp_free(&r);
    }
    ck_assert_int_eq(it_db_int(&S, "SELECT count(*) FROM api_keys"), 0);
    ck_assert_int_eq(it_db_int(&S, "SELECT count(*) FROM audit WHERE action LIKE 'key.%%'"), 0);
    ck_assert_int_eq(req_status("DELETE", "/api/v1/keys/abc", NULL, a.hdrs), 404);
    sess_free(&a);
    stop();
}
END_TEST

/* ---- admin ---------------------------------------------------------------------------- */

START_TEST(non_admin_gets_403_on_admin_routes)
{
    sess a;
    keyhdr kh;
    long st;
    char *key;

    start(NULL);
    signup_login(&a, "judy");
    ck_assert_int_eq(req_status("GET", "/api/v1/admin/users", NULL, a.hdrs_nocsrf), 403);
    ck_assert_int_eq(req_status("GET", "/api/v1/admin/audit", NULL, a.hdrs_nocsrf), 403);
    ck_assert_int_eq(req_status("PATCH", "/api/v1/admin/users/1", "{\"tier\":\"premium\"}", a.hdrs), 403);
    ck_assert_int_eq(req_status("PATCH", "/api/v1/admin/settings", "{\"signup_open\":false}", a.hdrs), 403);
    key = create_key(&st, NULL, &a,
                     "{\"name\":\"k\",\"env\":\"prod\",\"scopes\":[\"read\",\"write\",\"run\",\"serve\"]}");
    ck_assert_int_eq(st, 201);
    ck_assert_int_eq(req_status("GET", "/api/v1/admin/users", NULL, key_headers(&kh, "Bearer", key)), 403);
    ck_assert_int_eq(req_status("GET", "/api/v1/admin/users", NULL, NULL), 401);
    ck_assert_int_eq(it_db_int(&S, "SELECT tier = 'free' FROM users WHERE username = 'judy'"), 1);
    free(key);
    sess_free(&a);
    stop();
}
END_TEST

START_TEST(admin_lists_users_changes_tier_and_suspends_a_user)
{
    sess adm, u, x;
    keyhdr kh;
    it_resp r;
    long st;
    long long uid;
    char *ukey, *akey, path[64];

    start_with_admin(NULL);
    ck_assert_int_eq(login(&adm, "root", "password-123", NULL, NULL), 200);
    signup_login(&u, "kate");
    uid = it_db_int(&S, "SELECT id FROM users WHERE username = 'kate'");
    ukey = create_key(&st, NULL, &u, "{\"name\":\"k\",\"env\":\"prod\",\"scopes\":[\"read\"]}");
    ck_assert_int_eq(st, 201);

    /* list, paged */
    it_request(&r, &S, "GET", "/api/v1/admin/users?limit=1", NULL, adm.hdrs_nocsrf);
    ck_assert_int_eq(r.status, 200);
    ck_assert_uint_eq(json_array_size(json_object_get(r.json, "items")), 1);
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(json_object_get(r.json, "items"), 0),
                                                       "username")), "root");
    {
        char next[128];
        snprintf(next, sizeof(next), "/api/v1/admin/users?limit=1&cursor=%s",
                 json_string_value(json_object_get(r.json, "next_cursor")));
        it_resp_free(&r);
        it_request(&r, &S, "GET", next, NULL, adm.hdrs_nocsrf);
        ck_assert_int_eq(r.status, 200);
        ck_assert_str_eq(json_string_value(json_object_get(
                             json_array_get(json_object_get(r.json, "items"), 0), "username")), "kate");
        ck_assert(json_is_null(json_object_get(r.json, "next_cursor")));
    }
    it_resp_free(&r);
    ck_assert_int_eq(req_status("GET", "/api/v1/admin/users?cursor=zz", NULL, adm.hdrs_nocsrf), 400);

    /* tier change, audited with actor, ip and request id */
    snprintf(path, sizeof(path), "/api/v1/admin/users/%lld", uid);
    it_request(&r, &S, "PATCH", path, "{\"tier\":\"premium\"}", adm.hdrs);
    ck_assert_int_eq(r.status, 200);
    ck_assert_str_eq(json_string_value(json_object_get(r.json, "tier")), "premium");
    it_resp_free(&r);
    ck_assert_int_eq(it_db_int(&S, "SELECT count(*) FROM audit WHERE action = 'user.set_tier' AND target = 'user:%lld'"
                            " AND actor_id = (SELECT id FROM users WHERE username = 'root')"
                            " AND ip IS NOT NULL AND request_id IS NOT NULL", uid), 1);
    ck_assert_int_eq(req_status("PATCH", path, "{\"tier\":\"gold\"}", adm.hdrs), 400);
    ck_assert_int_eq(req_status("PATCH", path, "{\"suspended\":\"yes\"}", adm.hdrs), 400);
    ck_assert_int_eq(req_status("PATCH", "/api/v1/admin/users/9999", "{\"tier\":\"pro\"}", adm.hdrs), 404);
    ck_assert_int_eq(it_db_int(&S, "SELECT tier = 'premium' FROM users WHERE id = %lld", uid), 1);

    /* suspension: key and session stop working, login refused */
    ck_assert_int_eq(req_status("GET", "/api/v1/me", NULL, key_headers(&kh, "Bearer", ukey)), 200);
    ck_assert_int_eq(req_status("PATCH", path, "{\"suspended\":true}", adm.hdrs), 200);
    ck_assert_int_eq(req_status("GET", "/api/v1/me", NULL, key_headers(&kh, "Bearer", ukey)), 401);
    ck_assert_int_eq(req_status("GET", "/api/v1/me", NULL, u.hdrs_nocsrf), 401);
    ck_assert_int_eq(login(&x, "kate", "password-123", NULL, NULL), 403);
    ck_assert_int_eq(it_db_int(&S, "SELECT count(*) FROM audit WHERE action = 'user.suspend'"), 1);
    ck_assert_int_eq(req_status("PATCH", path, "{\"suspended\":false}", adm.hdrs), 200);
    ck_assert_int_eq(req_status("GET", "/api/v1/me", NULL, key_headers(&kh, "Bearer", ukey)), 200);

    /* role: kate becomes admin, then can use admin routes */
    ck_assert_int_eq(req_status("PATCH", path, "{\"role\":\"admin\"}", adm.hdrs), 200);
    ck_assert_int_eq(it_db_int(&S, "SELECT count(*) FROM audit WHERE action = 'user.set_role'"), 1);

    /* an admin key works on admin routes; the audit list is newest first */
    akey = create_key(&st, NULL, &adm, "{\"name\":\"ops\",\"env\":\"prod\",\"scopes\":[\"admin\",\"read\"]}");
    ck_assert_int_eq(st, 201);
    it_request(&r, &S, "GET", "/api/v1/admin/audit?limit=2", NULL, key_headers(&kh, "Bearer", akey));
    ck_assert_int_eq(r.status, 200);
    {
        json_t *items = json_object_get(r.json, "items");
        ck_assert_uint_eq(json_array_size(items), 2);
        ck_assert_str_eq(json_string_value(json_object_get(json_array_get(items, 0), "action")), "key.create");
        ck_assert_int_gt(json_integer_value(json_object_get(json_array_get(items, 0), "id")),
                         json_integer_value(json_object_get(json_array_get(items, 1), "id")));
        ck_assert(json_is_string(json_object_get(r.json, "next_cursor")));
    }
    it_resp_free(&r);
    free(ukey);
    free(akey);
    sess_free(&adm);
    sess_free(&u);
    stop();
}
END_TEST

START_TEST(signup_closed_by_admin_is_403_and_audited)
{
    sess adm;
    it_resp r;
    const char *body = "{\"username\":\"late\",\"email\":\"late@example.com\",\"password\":\"password-123\"}";

    start_with_admin(NULL);
    ck_assert_int_eq(login(&adm, "root", "password-123", NULL, NULL), 200);
    it_request(&r, &S, "GET", "/api/v1/admin/settings", NULL, adm.hdrs_nocsrf);
    ck_assert_int_eq(r.status, 200);
    ck_assert(json_is_true(json_object_get(r.json, "signup_open")));
    it_resp_free(&r);
    ck_assert_int_eq(req_status("PATCH", "/api/v1/admin/settings", "{\"signup_open\":\"no\"}", adm.hdrs), 400);
    it_request(&r, &S, "PATCH", "/api/v1/admin/settings", "{\"signup_open\":false}", adm.hdrs);
    ck_assert_int_eq(r.status, 200);
    ck_assert(json_is_false(json_object_get(r.json, "signup_open")));
    it_resp_free(&r);
    it_request(&r, &S, "POST", "/api/v1/auth/signup", body, NULL);
    ck_assert_int_eq(r.status, 403);
    ck_assert_str_eq(it_resp_error_code(&r), "forbidden");
    it_resp_free(&r);
    ck_assert_int_eq(it_db_int(&S, "SELECT count(*) FROM users"), 1);
    ck_assert_int_eq(it_db_int(&S, "SELECT count(*) FROM audit WHERE action = 'settings.set'"), 1);
    ck_assert_int_eq(req_status("PATCH", "/api/v1/admin/settings", "{\"signup_open\":true}", adm.hdrs), 200);
    ck_assert_int_eq(req_status("POST", "/api/v1/auth/signup", body, NULL), 201);
    sess_free(&adm);
    stop();
}
END_TEST

START_TEST(signup_closed_by_config_is_403)
{
    static const char *const env[] = {"EDDY_SIGNUP_OPEN=false", NULL};

    start(env);
    ck_assert_int_eq(req_status("POST", "/api/v1/auth/signup",
                                "{\"username\":\"late\",\"email\":\"late@example.com\",\"password\":\"password-123\"}",
                                NULL), 403);
    ck_assert_int_eq(it_db_int(&S, "SELECT count(*) FROM users"), 0);
    stop();
}
END_TEST

START_TEST(admin_cli_refuses_bad_usage_and_values)
{
    char tmpl[] = "/tmp/eddy-it-cli-XXXXXX";

    ck_assert_ptr_nonnull(mkdtemp(tmpl));
    memset(&S, 0, sizeof(S));
    snprintf(S.data_dir, sizeof(S.data_dir), "%s/data", tmpl);
    ck_assert_int_eq(eddy_admin("create-user --username x1"), 2);
    ck_assert_int_eq(eddy_admin("create-user --username abc --email a@b --password password-1 "
                                "--password-file /dev/null"), 2);
    ck_assert_int_eq(eddy_admin("create-user --username abc --email a@b --password short"), 2);
    ck_assert_int_eq(eddy_admin("create-user --username abc --email a@b --password password-1 --tier gold"), 2);
    ck_assert_int_eq(eddy_admin("create-user --username abc --email a@b --password-file /nonexistent"), 1);
    ck_assert_int_eq(eddy_admin("create-user --username abc --email a@b --password password-1"), 0);
    ck_assert_int_eq(eddy_admin("create-user --username abc --email a@b --password password-1"), 1);
    ck_assert_int_eq(eddy_admin("create-user --username abc --email a@b --password password-1 --if-not-exists"), 0);
    ck_assert_int_eq(eddy_admin("set-tier --username abc --tier pro"), 0);
    ck_assert_int_eq(eddy_admin("set-role --username abc --role king"), 2);
    ck_assert_int_eq(eddy_admin("set-role --username nobody --role admin"), 1);
    ck_assert_int_eq(eddy_admin("set-role --username abc"), 2);
    ck_assert_int_eq(eddy_admin("frobnicate"), 2);
    ck_assert_int_eq(it_db_int(&S, "SELECT count(*) FROM users WHERE tier = 'pro' AND role = 'user'"), 1);
    ck_assert_int_eq(it_db_int(&S, "SELECT count(*) FROM audit WHERE action IN ('user.create', 'user.set_tier')"
                            " AND actor_id IS NULL"), 2);
    ck_assert_int_eq(it_dir_remove(tmpl), 0);
}
END_TEST

int main(void)
{
    const TTest *tests[] = {signup_login_me_logout_and_cookie_is_dead_after_logout,
                            login_sets_a_httponly_samesite_cookie_and_rotates_the_session,
                            wrong_password_and_unknown_user_are_401_alike_and_audited,
                            login_upgrades_a_hash_made_with_weaker_parameters,
                            login_is_rate_limited_after_n_failures_with_retry_after,
                            cookie_post_needs_the_right_csrf_token,
                            key_works_with_bearer_and_token_is_listed_without_secret_and_revoked_at_once,
                            tampered_expired_wrong_env_and_wrong_scope_keys_are_refused,
                            key_rate_limit_gives_429_with_retry_after,
                            malformed_wrong_type_and_missing_fields_are_400_and_write_nothing,
                            non_admin_gets_403_on_admin_routes, admin_lists_users_changes_tier_and_suspends_a_user,
                            signup_closed_by_admin_is_403_and_audited, signup_closed_by_config_is_403,
                            admin_cli_refuses_bad_usage_and_values, NULL};
    return it_tests_run("auth", 120, NULL, NULL, tests);
}
