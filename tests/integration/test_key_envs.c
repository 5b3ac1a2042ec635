/* API key envs (issue 11 item 13): a key's env (dev, test, prod) is a label
 * with its own daily budget and rate limit per tier (tier_key_envs), shown by
 * GET /api/v1/tiers and set by PUT /api/v1/admin/tiers/{name}. The server
 * accepts every env unless the operator restricts them (key_envs, or the
 * older env_name), and refuses at creation (422, naming the accepted envs) a
 * key it would refuse at use: creating one used to succeed and then 401
 * everywhere. */
#include "harness.h"
#include "it_db.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static it_server S;
static char admin_cookie[512], admin_csrf[256];
static char data_dir[300];

/* A fresh data directory with an admin (root) and a user (uma), server started. */
static void start_fresh(const char *const *env)
{
    char dir[64];

    ck_assert_int_eq(it_admin_data_make(dir, sizeof(dir), data_dir, sizeof(data_dir), "keyenvs"), 0);
    char *argv2[] = {"eddy", "admin", "create-user", "--data", data_dir, "--username", "uma", "--email",
                     "uma@example.com", "--password", "uma-password-1", NULL};
    ck_assert_int_eq(it_eddy_status(argv2), 0);
    ck_assert_int_eq(it_server_start_in(&S, data_dir, env), 0);
}

/* Stop and start again on the same data with `env`. */
static void restart(const char *const *env)
{
    S.keep_data = 1;
    ck_assert_int_eq(it_server_stop(&S), 0);
    ck_assert_int_eq(it_server_start_in(&S, data_dir, env), 0);
}

static void stop_and_clean(void)
{
    S.keep_data = 0;   /* removes the temporary parent */
    ck_assert_int_eq(it_server_stop(&S), 0);
}

static void login(const char *user, const char *pw, char *cookie, size_t cl, char *csrf, size_t sl)
{
    ck_assert_int_eq(it_login(&S, user, pw, cookie, cl, csrf, sl), 0);
}

/* POST /api/v1/keys as uma; the key (malloc'd) or NULL, status in *st, body in *msg (malloc'd) when asked. */
static char *make_key(long *st, char **msg, const char *body)
{
    char c[512], t[256];
    it_resp r;
    char *key = NULL;

    login("uma", "uma-password-1", c, sizeof(c), t, sizeof(t));
    it_request(&r, &S, "POST", "/api/v1/keys", body, (const char *[]){c, t, NULL});
    *st = r.status;
    if (r.status == 201)
        key = strdup(json_string_value(json_object_get(r.json, "key")));
    if (msg)
        *msg = strdup(r.body ? r.body : "");
    it_resp_free(&r);
    return key;
}

static long key_get(const char *key, const char *path, char **msg)
{
    char h[200];
    it_resp r;
    long st;

    snprintf(h, sizeof(h), "Authorization: Bearer %s", key);
    it_request(&r, &S, "GET", path, NULL, (const char *[]){h, NULL});
    st = r.status;
    if (msg)
        *msg = strdup(r.body ? r.body : "");
    it_resp_free(&r);
    return st;
}

START_TEST(tiers_show_each_env_and_all_envs_are_accepted_by_default)
{
    char c[512], t[256], *msg;
    it_resp r;
    long st;

    start_fresh(NULL);
    login("uma", "uma-password-1", c, sizeof(c), t, sizeof(t));
    it_request(&r, &S, "GET", "/api/v1/tiers", NULL, (const char *[]){c, NULL});
    ck_assert_int_eq(r.status, 200);
    json_t *items = json_object_get(r.json, "items");
    ck_assert_int_eq(json_array_size(items), 3);
    for (size_t i = 0; i < json_array_size(items); i++) {
        json_t *envs = json_object_get(json_array_get(items, i), "key_envs");
        ck_assert_int_eq(json_object_size(envs), 3);
        ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(envs, "dev"), "daily_budget_mcoins")), -1);
        ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(envs, "prod"), "rate_limit_per_min")), 0);
    }
    it_resp_free(&r);
    static const char *const envs[] = {"dev", "test", "prod"};
    for (int i = 0; i < 3; i++) {
        char body[128], *key;
        snprintf(body, sizeof(body), "{\"name\":\"k\",\"env\":\"%s\",\"scopes\":[\"read\"]}", envs[i]);
        key = make_key(&st, NULL, body);
        ck_assert_int_eq(st, 201);
        ck_assert_int_eq(key_get(key, "/api/v1/me", NULL), 200);
        free(key);
    }
    /* not an env at all: 422 naming the accepted ones */
    ck_assert_ptr_null(make_key(&st, &msg, "{\"name\":\"k\",\"env\":\"staging\",\"scopes\":[\"read\"]}"));
    ck_assert_int_eq(st, 422);
    ck_assert_ptr_nonnull(strstr(msg, "dev, test, prod"));
    free(msg);
    stop_and_clean();
}
END_TEST

START_TEST(a_restricted_server_refuses_other_envs_at_creation_not_at_use)
{
    static const char *const restricted[] = {"EDDY_KEY_ENVS=dev,test", NULL};
    static const char *const only_dev[] = {"EDDY_KEY_ENVS=dev", NULL};
    static const char *const legacy[] = {"EDDY_ENV_NAME=test", NULL};
    char *msg, *prod, *dev;
    long st;

    start_fresh(NULL);
    prod = make_key(&st, NULL, "{\"name\":\"p\",\"env\":\"prod\",\"scopes\":[\"read\"]}");
    ck_assert_int_eq(st, 201);
    restart(restricted);
    /* the report: creation succeeded, then 401 everywhere. Now refused at creation. */
    ck_assert_ptr_null(make_key(&st, &msg, "{\"name\":\"p2\",\"env\":\"prod\",\"scopes\":[\"read\"]}"));
    ck_assert_int_eq(st, 422);
    ck_assert_ptr_nonnull(strstr(msg, "'env'"));
    ck_assert_ptr_nonnull(strstr(msg, "dev, test"));
    free(msg);
    ck_assert_int_eq(it_db_int(&S, "SELECT count(*) FROM api_keys"), 1);
    dev = make_key(&st, NULL, "{\"name\":\"d\",\"env\":\"dev\",\"scopes\":[\"read\"]}");
    ck_assert_int_eq(st, 201);
    ck_assert_int_eq(key_get(dev, "/api/v1/me", NULL), 200);
    /* a key made before the operator restricted envs is refused at use, saying why */
    ck_assert_int_eq(key_get(prod, "/api/v1/me", &msg), 401);
    ck_assert_ptr_nonnull(strstr(msg, "env"));
    free(msg);
    restart(only_dev);
    ck_assert_int_eq(key_get(dev, "/api/v1/me", NULL), 200);
    ck_assert_ptr_null(make_key(&st, NULL, "{\"name\":\"t\",\"env\":\"test\",\"scopes\":[\"read\"]}"));
    ck_assert_int_eq(st, 422);
    /* the older setting env_name restricts to its one env */
    restart(legacy);
    ck_assert_int_eq(key_get(dev, "/api/v1/me", NULL), 401);
    free(make_key(&st, NULL, "{\"name\":\"t\",\"env\":\"test\",\"scopes\":[\"read\"]}"));
    ck_assert_int_eq(st, 201);
    free(prod);
    free(dev);
    stop_and_clean();
}
END_TEST

START_TEST(an_env_caps_the_rate_limit_of_its_keys_per_tier)
{
    const char *ah[3];
    char *dev, *prod, *msg;
    it_resp r;
    long st;

    start_fresh(NULL);
    login("root", "correct horse battery", admin_cookie, sizeof(admin_cookie), admin_csrf, sizeof(admin_csrf));
    ah[0] = admin_cookie;
    ah[1] = admin_csrf;
    ah[2] = NULL;
    it_request(&r, &S, "PUT", "/api/v1/admin/tiers/free",
               "{\"key_envs\": {\"dev\": {\"rate_limit_per_min\": 2, \"daily_budget_mcoins\": 500}}}", ah);
    ck_assert_int_eq(r.status, 200);
    json_t *d = json_object_get(json_object_get(r.json, "key_envs"), "dev");
    ck_assert_int_eq(json_integer_value(json_object_get(d, "rate_limit_per_min")), 2);
    ck_assert_int_eq(json_integer_value(json_object_get(d, "daily_budget_mcoins")), 500);
    it_resp_free(&r);
    ck_assert_int_eq(it_db_int(&S, "SELECT count(*) FROM audit WHERE action = 'tier.update'"), 1);
    /* refused as a whole: an unknown env, a bad value */
    it_request(&r, &S, "PUT", "/api/v1/admin/tiers/free", "{\"key_envs\": {\"staging\": {}}}", ah);
    ck_assert_int_eq(r.status, 422);
    it_resp_free(&r);
    it_request(&r, &S, "PUT", "/api/v1/admin/tiers/free",
               "{\"max_kernels\": 5, \"key_envs\": {\"prod\": {\"rate_limit_per_min\": -3}}}", ah);
    ck_assert_int_eq(r.status, 422);
    ck_assert_ptr_nonnull(strstr(r.body, "key_envs.prod.rate_limit_per_min"));
    it_resp_free(&r);
    ck_assert_int_eq(it_db_int(&S, "SELECT max_kernels FROM tiers WHERE name = 'free'"), 1);

    /* uma (tier free): her dev key asks for 100 a minute, its env allows 2 */
    dev = make_key(&st, NULL, "{\"name\":\"d\",\"env\":\"dev\",\"scopes\":[\"read\"],\"rate_limit_per_min\":100}");
    ck_assert_int_eq(st, 201);
    prod = make_key(&st, NULL, "{\"name\":\"p\",\"env\":\"prod\",\"scopes\":[\"read\"],\"rate_limit_per_min\":100}");
    ck_assert_int_eq(st, 201);
    ck_assert_int_eq(key_get(dev, "/api/v1/me", NULL), 200);
    ck_assert_int_eq(key_get(dev, "/api/v1/me", NULL), 200);
    ck_assert_int_eq(key_get(dev, "/api/v1/me", &msg), 429);
    ck_assert_ptr_nonnull(strstr(msg, "2 requests"));
    free(msg);
    /* prod has no cap for free: the key's own 100 applies */
    for (int i = 0; i < 5; i++)
        ck_assert_int_eq(key_get(prod, "/api/v1/me", NULL), 200);
    /* the cap is per tier: GET /api/v1/tiers shows it, other tiers keep none */
    it_request(&r, &S, "GET", "/api/v1/tiers", NULL, (const char *[]){admin_cookie, NULL});
    json_t *items = json_object_get(r.json, "items");
    for (size_t i = 0; i < json_array_size(items); i++) {
        json_t *t = json_array_get(items, i);
        long long want = strcmp(json_string_value(json_object_get(t, "name")), "free") == 0 ? 2 : 0;
        ck_assert_int_eq(json_integer_value(json_object_get(
                             json_object_get(json_object_get(t, "key_envs"), "dev"), "rate_limit_per_min")),
                         want);
    }
    it_resp_free(&r);
    free(dev);
    free(prod);
    stop_and_clean();
}
END_TEST

START_TEST(bad_key_envs_or_allow_origins_settings_stop_the_server)
{
    static const char *const bad[][2] = {
        {"EDDY_KEY_ENVS=staging", "key_envs"},
        {"EDDY_KEY_ENVS=dev,prod,qa", "key_envs"},
        {"EDDY_ALLOW_ORIGINS=evil.example", "allow_origins"},
        {"EDDY_ALLOW_ORIGINS=http://a.example/path", "allow_origins"},
        {"EDDY_ALLOW_ORIGINS=http://*.example", "allow_origins"},
    };
    char tmpl[] = "/tmp/eddy-it-keyenvs-XXXXXX", data[300];
    static it_run o;

    ck_assert_ptr_nonnull(mkdtemp(tmpl));
    snprintf(data, sizeof(data), "%s/data", tmpl);
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        const char *env[] = {bad[i][0], NULL};
        const char *argv[] = {"eddy", "serve", "--data", data, "--listen", "127.0.0.1:0", NULL};
        it_run_eddy(&o, tmpl, tmpl, NULL, env, argv);
        ck_assert_msg(o.status == 2, "%s: exit %d %s", bad[i][0], o.status, o.err);
        ck_assert_msg(strstr(o.err, bad[i][1]) != NULL, "%s: %s", bad[i][0], o.err);
    }
    ck_assert_int_eq(it_dir_remove(tmpl), 0);
}
END_TEST

int main(void)
{
    const TTest *tests[] = {tiers_show_each_env_and_all_envs_are_accepted_by_default,
                            a_restricted_server_refuses_other_envs_at_creation_not_at_use,
                            an_env_caps_the_rate_limit_of_its_keys_per_tier,
                            bad_key_envs_or_allow_origins_settings_stop_the_server, NULL};
    return it_tests_run("key_envs", 120, NULL, NULL, tests);
}
