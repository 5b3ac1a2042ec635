/* The ledger over HTTP: admin grants with Idempotency-Key, the user's view,
 * and the invariant check. */
#include "harness.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static it_server srv;
static char dir[64];
static char admin_cookie_hdr[512], admin_csrf_hdr[256];


static void login(const char *user, const char *pw, char *cookie_hdr, size_t cl, char *csrf_hdr, size_t sl)
{
    ck_assert_int_eq(it_login(&srv, user, pw, cookie_hdr, cl, csrf_hdr, sl), 0);
}

static void setup(void)
{
    ck_assert_int_eq(it_admin_server_start(&srv, dir, sizeof(dir), "ledger", NULL, admin_cookie_hdr,
                                           sizeof(admin_cookie_hdr), admin_csrf_hdr, sizeof(admin_csrf_hdr)),
                     0);
}

static void teardown(void)
{
    ck_assert_int_eq(it_server_stop(&srv), 0);
    ck_assert_int_eq(it_dir_remove(dir), 0);
}

static int64_t signup(const char *name)
{
    char body[256];
    it_resp r;
    int64_t id;
    snprintf(body, sizeof(body), "{\"username\":\"%s\",\"email\":\"%s@example.com\",\"password\":\"pass-%s-123\"}",
             name, name, name);
    it_request(&r, &srv, "POST", "/api/v1/auth/signup", body, NULL);
    ck_assert_int_eq(r.status, 201);
    id = json_integer_value(json_object_get(r.json, "id"));
    it_resp_free(&r);
    return id;
}

START_TEST(grant_is_idempotent_and_visible_to_the_user)
{
    int64_t uid = signup("alice");
    char path[128], cookie[512], csrf[256];
    const char *hdrs[] = {admin_cookie_hdr, admin_csrf_hdr, "Idempotency-Key: grant-alice-1", NULL};
    it_resp r1, r2, r3;

    snprintf(path, sizeof(path), "/api/v1/admin/users/%lld/grants", (long long)uid);
    it_request(&r1, &srv, "POST", path, "{\"amount_mcoins\": 5000, \"reason\": \"welcome\"}", hdrs);
    ck_assert_int_eq(r1.status, 201);
    ck_assert_int_eq(json_integer_value(json_object_get(r1.json, "balance_after_mcoins")), 5000);
    /* the same key and body: the first response again, no second credit */
    it_request(&r2, &srv, "POST", path, "{\"amount_mcoins\": 5000, \"reason\": \"welcome\"}", hdrs);
    ck_assert_int_eq(r2.status, 201);
    ck_assert_str_eq(r1.body, r2.body);
    /* the same key, another body: 409 */
    it_request(&r3, &srv, "POST", path, "{\"amount_mcoins\": 9000, \"reason\": \"welcome\"}", hdrs);
    ck_assert_int_eq(r3.status, 409);
    ck_assert_str_eq(it_resp_error_code(&r3), "conflict");
    it_resp_free(&r1);
    it_resp_free(&r2);
    it_resp_free(&r3);

    login("alice", "pass-alice-123", cookie, sizeof(cookie), csrf, sizeof(csrf));
    const char *uh[] = {cookie, NULL};
    it_request(&r1, &srv, "GET", "/api/v1/quota", NULL, uh);
    ck_assert_int_eq(r1.status, 200);
    ck_assert_int_eq(json_integer_value(json_object_get(r1.json, "balance_mcoins")), 5000);
    ck_assert_str_eq(json_string_value(json_object_get(r1.json, "tier")), "free");
    it_resp_free(&r1);
    it_request(&r1, &srv, "GET", "/api/v1/ledger", NULL, uh);
    ck_assert_int_eq(r1.status, 200);
    json_t *items = json_object_get(r1.json, "items");
    ck_assert_int_eq(json_array_size(items), 1);
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(items, 0), "kind")), "grant");
    ck_assert_int_eq(json_integer_value(json_object_get(json_array_get(items, 0), "amount_mcoins")), 5000);
    it_resp_free(&r1);

    /* a user cannot grant, nor verify */
    const char *uh2[] = {cookie, csrf, NULL};
    it_request(&r1, &srv, "POST", path, "{\"amount_mcoins\": 5, \"reason\": \"me\"}", uh2);
    ck_assert_int_eq(r1.status, 403);
    it_resp_free(&r1);
    it_request(&r1, &srv, "GET", "/api/v1/admin/ledger/verify", NULL, uh);
    ck_assert_int_eq(r1.status, 403);
    it_resp_free(&r1);

    const char *ah[] = {admin_cookie_hdr, NULL};
    it_request(&r1, &srv, "GET", "/api/v1/admin/ledger/verify", NULL, ah);
    ck_assert_int_eq(r1.status, 200);
    ck_assert(json_is_true(json_object_get(r1.json, "ok")));
    it_resp_free(&r1);
}
END_TEST

START_TEST(grant_refuses_bad_input_and_posts_nothing)
{
    int64_t uid = signup("bob");
    char path[128];
    const char *hdrs[] = {admin_cookie_hdr, admin_csrf_hdr, NULL};
    const char *bad[] = {"{\"amount_mcoins\": -5, \"reason\": \"x\"}", "{\"amount_mcoins\": \"5\", \"reason\": \"x\"}",
                         "{\"reason\": \"x\"}", "{\"amount_mcoins\": 5}", "{\"amount_mcoins\": 5,", "[]"};
    it_resp r;

    snprintf(path, sizeof(path), "/api/v1/admin/users/%lld/grants", (long long)uid);
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        it_request(&r, &srv, "POST", path, bad[i], hdrs);
        /* a bad amount is 422 naming the field; a missing or malformed field 400 */
        ck_assert_msg(r.status == (i < 2 ? 422 : 400), "%s -> %ld", bad[i], r.status);
        ck_assert_str_eq(it_resp_error_code(&r), i < 2 ? "unprocessable" : "bad_request");
        it_resp_free(&r);
    }
    it_request(&r, &srv, "POST", "/api/v1/admin/users/99999/grants", "{\"amount_mcoins\": 5, \"reason\": \"x\"}", hdrs);
    ck_assert_int_eq(r.status, 404);
    it_resp_free(&r);
    /* without the CSRF token a cookie request is refused */
    const char *nocsrf[] = {admin_cookie_hdr, NULL};
    it_request(&r, &srv, "POST", path, "{\"amount_mcoins\": 5, \"reason\": \"x\"}", nocsrf);
    ck_assert_int_eq(r.status, 403);
    it_resp_free(&r);

    const char *ah[] = {admin_cookie_hdr, NULL};
    it_request(&r, &srv, "GET", "/api/v1/admin/ledger/verify", NULL, ah);
    ck_assert_int_eq(r.status, 200);
    ck_assert_int_eq(json_integer_value(json_object_get(r.json, "transfers_checked")), 0);
    it_resp_free(&r);
}
END_TEST

START_TEST(cli_grant_moves_coins_and_tiers_are_listed)
{
    char data[128];
    it_resp r;
    signup("carol");
    snprintf(data, sizeof(data), "%s/data", dir);
    char *argv[] = {"eddy", "admin", "grant", "--data", data, "--username", "carol", "--coins", "2.5",
                    "--reason", "course credit", "--idempotency-key", "course-1", NULL};
    ck_assert_int_eq(it_eddy_status(argv), 0);
    ck_assert_int_eq(it_eddy_status(argv), 0); /* a retry with the key grants nothing more */
    char *bad[] = {"eddy", "admin", "grant", "--data", data, "--username", "nobody", "--coins", "1",
                   "--reason", "x", NULL};
    ck_assert_int_eq(it_eddy_status(bad), 1);
    char *usage[] = {"eddy", "admin", "grant", "--data", data, NULL};
    ck_assert_int_eq(it_eddy_status(usage), 2);

    char cookie[512], csrf[256];
    login("carol", "pass-carol-123", cookie, sizeof(cookie), csrf, sizeof(csrf));
    const char *uh[] = {cookie, NULL};
    it_request(&r, &srv, "GET", "/api/v1/quota", NULL, uh);
    ck_assert_int_eq(json_integer_value(json_object_get(r.json, "balance_mcoins")), 2500);
    it_resp_free(&r);
    it_request(&r, &srv, "GET", "/api/v1/tiers", NULL, uh);
    ck_assert_int_eq(r.status, 200);
    ck_assert_int_eq(json_array_size(json_object_get(r.json, "items")), 3);
    it_resp_free(&r);
}
END_TEST

/* GET /api/v1/ledger pages newest first by entry id: limit, next_cursor, the
 * last page's null cursor, and a cursor the API never gave refused. */
START_TEST(ledger_pages_newest_first_with_a_cursor)
{
    int64_t uid = signup("dave");
    char path[128], key[64], cookie[512], csrf[256], next[64], url[160];
    it_resp r;

    snprintf(path, sizeof(path), "/api/v1/admin/users/%lld/grants", (long long)uid);
    for (int i = 1; i <= 3; i++) {
        char body[96];
        snprintf(key, sizeof(key), "Idempotency-Key: grant-dave-%d", i);
        snprintf(body, sizeof(body), "{\"amount_mcoins\": %d, \"reason\": \"g%d\"}", i * 100, i);
        const char *hdrs[] = {admin_cookie_hdr, admin_csrf_hdr, key, NULL};
        it_request(&r, &srv, "POST", path, body, hdrs);
        ck_assert_int_eq(r.status, 201);
        it_resp_free(&r);
    }
    login("dave", "pass-dave-123", cookie, sizeof(cookie), csrf, sizeof(csrf));
    const char *uh[] = {cookie, NULL};

    it_request(&r, &srv, "GET", "/api/v1/ledger?limit=2", NULL, uh);
    ck_assert_int_eq(r.status, 200);
    json_t *items = json_object_get(r.json, "items");
    ck_assert_int_eq(json_array_size(items), 2);
    ck_assert_int_eq(json_integer_value(json_object_get(json_array_get(items, 0), "amount_mcoins")), 300);
    ck_assert_int_eq(json_integer_value(json_object_get(json_array_get(items, 1), "amount_mcoins")), 200);
    const char *c = json_string_value(json_object_get(r.json, "next_cursor"));
    ck_assert_ptr_nonnull(c);
    ck_assert_int_eq(strtoll(c, NULL, 10), json_integer_value(json_object_get(json_array_get(items, 1), "id")));
    snprintf(next, sizeof(next), "%s", c);
    it_resp_free(&r);

    snprintf(url, sizeof(url), "/api/v1/ledger?limit=2&cursor=%s", next);
    it_request(&r, &srv, "GET", url, NULL, uh);
    ck_assert_int_eq(r.status, 200);
    items = json_object_get(r.json, "items");
    ck_assert_int_eq(json_array_size(items), 1);
    ck_assert_int_eq(json_integer_value(json_object_get(json_array_get(items, 0), "amount_mcoins")), 100);
    ck_assert(json_is_null(json_object_get(r.json, "next_cursor")));
    it_resp_free(&r);

    static const char *const bad[] = {"abc", "0", "-5", "12x"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        snprintf(url, sizeof(url), "/api/v1/ledger?cursor=%s", bad[i]);
        it_request(&r, &srv, "GET", url, NULL, uh);
        ck_assert_msg(r.status == 400, "cursor %s: %ld", bad[i], (long)r.status);
        ck_assert_str_eq(it_resp_error_code(&r), "bad_request");
        it_resp_free(&r);
    }
}
END_TEST

int main(void)
{
    const TTest *tests[] = {grant_is_idempotent_and_visible_to_the_user, grant_refuses_bad_input_and_posts_nothing,
                            cli_grant_moves_coins_and_tiers_are_listed, ledger_pages_newest_first_with_a_cursor, NULL};
    return it_tests_run("ledger", 120, setup, teardown, tests);
}
