/* API key daily budgets against the real server, scheduler, sandbox and
 * ledger (issue 11, item 7): a key with a small budget starts a job that is
 * charged past it, and the job is warned, then stopped with failure_reason
 * key_budget; the next start with that key (a job, a kernel over both kernel
 * APIs, a restart) answers 402 quota_exceeded and leaves a running kernel
 * alive; a kernel started with a small-budget key stops with stop_reason
 * key_budget; a browser session and another key still start work; and the
 * ledger verifies with no hold left open.
 *
 * Before the fix a key with a budget of 1000 ran jobs charged 12,589. */
#include "harness.h"
#include "it_db.h"

#include <check.h>
#include <curl/curl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static it_server srv;
static char dir[64], data[128];
static char admin_cookie[512], admin_csrf[256];
/* 1 s intervals; out of funds and spent budgets stop 1 s after the warning */
static const char *const env[] = {"EDDY_METER_INTERVAL_MS=1000", "EDDY_OOF_GRACE_MS=1000",
                                  "EDDY_STOP_GRACE_MS=1000", NULL};

static const char WORK_PY[] = "import time\nprint('working', flush=True)\ntime.sleep(120)\n";

typedef struct user {
    int64_t id;
    char    cookie[512], csrf[256];
    const char *hdrs[4];
} user;

/* "Authorization: Bearer <key>" and its header list */
typedef struct key {
    int64_t id;
    char    auth[160];
    const char *hdrs[2];
} key;

static void setup(void)
{
    snprintf(dir, sizeof(dir), "/tmp/eddy-it-budget-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(data, sizeof(data), "%s/data", dir);
    mkdir(data, 0700);
    char *argv[] = {"eddy", "admin", "create-user", "--data", data, "--username", "root",
                    "--email", "root@example.com", "--password", "correct horse battery",
                    "--role", "admin", NULL};
    ck_assert_int_eq(it_eddy_status(argv), 0);
    ck_assert_int_eq(it_server_start_in(&srv, data, env), 0);
    ck_assert_int_eq(it_login(&srv, "root", "correct horse battery", admin_cookie, sizeof(admin_cookie), admin_csrf,
                              sizeof(admin_csrf)),
                     0);
}

static void teardown(void)
{
    char cmd[128];
    ck_assert_int_eq(it_server_stop(&srv), 0);
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    ck_assert_int_eq(system(cmd), 0);
}

static void admin_req(const char *method, const char *path, const char *body, long want)
{
    const char *ah[] = {admin_cookie, admin_csrf, NULL};
    it_resp r;
    it_request(&r, &srv, method, path, body, ah);
    ck_assert_msg(r.status == want, "%s %s: %ld %s", method, path, r.status, r.body);
    it_resp_free(&r);
}

static void make_user(user *u, const char *name, int64_t grant)
{
    char body[256], path[128], idem[64], pw[64];
    const char *ah[] = {admin_cookie, admin_csrf, idem, NULL};
    it_resp r;

    snprintf(pw, sizeof(pw), "pass-%s-123", name);
    snprintf(body, sizeof(body), "{\"username\":\"%s\",\"email\":\"%s@example.com\",\"password\":\"%s\"}", name,
             name, pw);
    it_request(&r, &srv, "POST", "/api/v1/auth/signup", body, NULL);
    ck_assert_msg(r.status == 201, "signup: %ld %s", r.status, r.body);
    u->id = json_integer_value(json_object_get(r.json, "id"));
    it_resp_free(&r);
    snprintf(path, sizeof(path), "/api/v1/admin/users/%lld/grants", (long long)u->id);
    snprintf(idem, sizeof(idem), "Idempotency-Key: grant-%s", name);
    snprintf(body, sizeof(body), "{\"amount_mcoins\": %lld, \"reason\": \"test\"}", (long long)grant);
    it_request(&r, &srv, "POST", path, body, ah);
    ck_assert_msg(r.status == 201, "grant: %ld %s", r.status, r.body);
    it_resp_free(&r);
    ck_assert_int_eq(it_login(&srv, name, pw, u->cookie, sizeof(u->cookie), u->csrf, sizeof(u->csrf)), 0);
    u->hdrs[0] = u->cookie;
    u->hdrs[1] = u->csrf;
    u->hdrs[2] = NULL;
}

/* A key with scopes read, write, run and `budget` mcoins a day (< 0: none). */
static void make_key(key *k, user *u, const char *name, int64_t budget)
{
    char body[256], b[64] = "";
    it_resp r;

    if (budget >= 0)
        snprintf(b, sizeof(b), ", \"daily_budget_mcoins\": %lld", (long long)budget);
    snprintf(body, sizeof(body), "{\"name\":\"%s\",\"env\":\"prod\",\"scopes\":[\"read\",\"write\",\"run\"]%s}", name,
             b);
    it_request(&r, &srv, "POST", "/api/v1/keys", body, u->hdrs);
    ck_assert_msg(r.status == 201, "key: %ld %s", r.status, r.body);
    k->id = json_integer_value(json_object_get(r.json, "id"));
    snprintf(k->auth, sizeof(k->auth), "Authorization: Bearer %s", json_string_value(json_object_get(r.json, "key")));
    it_resp_free(&r);
    k->hdrs[0] = k->auth;
    k->hdrs[1] = NULL;
}

static void make_project(char *pid, size_t n, user *u)
{
    char path[256];
    it_resp r;

    it_request(&r, &srv, "POST", "/api/v1/projects", "{\"name\":\"work\",\"visibility\":\"private\"}", u->hdrs);
    ck_assert_int_eq(r.status, 201);
    snprintf(pid, n, "%s", json_string_value(json_object_get(r.json, "id")));
    it_resp_free(&r);
    snprintf(path, sizeof(path), "/api/v1/projects/%s/files/work.py", pid);
    it_request(&r, &srv, "PUT", path, WORK_PY, u->hdrs);
    ck_assert_int_lt(r.status, 300);
    it_resp_free(&r);
}

static json_t *get_json(const char *const *hdrs, const char *path)
{
    it_resp r;
    json_t *j;
    it_request(&r, &srv, "GET", path, NULL, hdrs);
    ck_assert_msg(r.status == 200, "GET %s: %ld %s", path, r.status, r.body);
    j = json_incref(r.json);
    it_resp_free(&r);
    return j;
}

static const char *jstr(const json_t *o, const char *k)
{
    const char *v = json_string_value(json_object_get(o, k));
    return v ? v : "";
}

/* POST a job as `hdrs`; its id when 201, else 0 with *status (and the
 * error code into code). */
static int64_t post_job(long *status, char *code, size_t cn, const char *const *hdrs, const char *pid)
{
    char body[256];
    it_resp r;
    int64_t id = 0;

    snprintf(body, sizeof(body),
             "{\"project_id\":\"%s\",\"entry\":\"work.py\",\"resource\":\"cpu-basic\",\"max_runtime_s\":100}", pid);
    it_request(&r, &srv, "POST", "/api/v1/jobs", body, hdrs);
    *status = r.status;
    if (code)
        snprintf(code, cn, "%s", it_resp_error_code(&r) ? it_resp_error_code(&r) : "");
    if (r.status == 201)
        id = json_integer_value(json_object_get(r.json, "id"));
    it_resp_free(&r);
    return id;
}

/* Wait (bounded) until job `id` has ended; its JSON. */
static json_t *wait_job_end(const char *const *hdrs, int64_t id)
{
    char path[64];
    snprintf(path, sizeof(path), "/api/v1/jobs/%lld", (long long)id);
    for (int i = 0; i < 600; i++) {
        json_t *j = get_json(hdrs, path);
        if (strcmp(jstr(j, "status"), "queued") != 0 && strcmp(jstr(j, "status"), "running") != 0)
            return j;
        json_decref(j);
        usleep(100000);
    }
    ck_abort_msg("job %lld never ended", (long long)id);
    return NULL;
}

static json_t *wait_kernel(const char *const *hdrs, const char *kid, const char *status)
{
    char path[128];
    snprintf(path, sizeof(path), "/api/v1/kernels/%s", kid);
    for (int i = 0; i < 600; i++) {
        json_t *k = get_json(hdrs, path);
        if (strcmp(jstr(k, "status"), status) == 0)
            return k;
        ck_assert_msg(strcmp(jstr(k, "status"), "dead") != 0, "kernel %s died: %s", kid, jstr(k, "stop_reason"));
        json_decref(k);
        usleep(100000);
    }
    ck_abort_msg("kernel %s never became %s", kid, status);
    return NULL;
}

static long start_kernel(char *kid, size_t n, char *code, size_t cn, const char *const *hdrs, const char *api,
                         const char *pid)
{
    char body[256];
    it_resp r;
    long st;

    snprintf(body, sizeof(body), "{\"project_id\":\"%s\",\"resource\":\"cpu-basic\"}", pid);
    it_request(&r, &srv, "POST", api, body, hdrs);
    st = r.status;
    if (kid && st == 201)
        snprintf(kid, n, "%s", jstr(r.json, "id"));
    if (code)
        snprintf(code, cn, "%s", it_resp_error_code(&r) ? it_resp_error_code(&r) : "");
    it_resp_free(&r);
    return st;
}

static long post_status(const char *const *hdrs, const char *path, char *code, size_t cn)
{
    it_resp r;
    long st;
    it_request(&r, &srv, "POST", path, NULL, hdrs);
    st = r.status;
    if (code)
        snprintf(code, cn, "%s", it_resp_error_code(&r) ? it_resp_error_code(&r) : "");
    it_resp_free(&r);
    return st;
}

static void assert_ledger_verifies(void)
{
    const char *ah[] = {admin_cookie, NULL};
    json_t *j = get_json(ah, "/api/v1/admin/ledger/verify");
    ck_assert_msg(json_is_true(json_object_get(j, "ok")), "ledger does not verify: %s",
                  json_dumps(j, JSON_COMPACT));
    json_decref(j);
    ck_assert_int_eq(it_db_int(&srv, "SELECT count(*) FROM ledger_holds WHERE status = 'open'"), 0);
}

/* cpu-basic at 1000 mcoins a second, no free CPU time, room for a few items each */
static void prices(void)
{
    admin_req("PUT", "/api/v1/admin/resources/cpu-basic", "{\"price_mcoins_per_hour\": 3600000}", 200);
    admin_req("PUT", "/api/v1/admin/tiers/free", "{\"max_kernels\": 4, \"free_ms_per_day\": {\"cpu-basic\": 0}}",
              200);
}

START_TEST(a_job_charged_past_its_keys_budget_stops_and_the_key_is_refused)
{
    user u, v;
    key small, open, other;
    char pid[64], vpid[64], code[64], kid[64], path[160];
    long st;
    int64_t id, spent;
    json_t *j;

    prices();
    make_user(&u, "alice", 1000000);
    make_user(&v, "bob", 1000000);
    make_key(&small, &u, "ci", 2500);
    make_key(&open, &u, "nightly", -1);
    make_key(&other, &v, "bob-ci", 2500);
    make_project(pid, sizeof(pid), &u);
    make_project(vpid, sizeof(vpid), &v);

    /* 1000 mcoins a second against 2500 a day: warned, then stopped */
    id = post_job(&st, NULL, 0, small.hdrs, pid);
    ck_assert_int_eq(st, 201);
    j = wait_job_end(small.hdrs, id);
    ck_assert_str_eq(jstr(j, "status"), "failed");
    ck_assert_str_eq(jstr(j, "failure_reason"), "key_budget");
    ck_assert_int_ge(json_integer_value(json_object_get(j, "charged_mcoins")), 2500);
    json_decref(j);
    ck_assert_int_eq(it_db_int(&srv, "SELECT key_id FROM jobs WHERE id = %lld", (long long)id), small.id);
    spent = it_db_int(&srv, "SELECT SUM(mcoins) FROM quota_meter WHERE key_id = %lld", (long long)small.id);
    ck_assert_int_ge(spent, 2500);
    {
        it_resp r;
        snprintf(path, sizeof(path), "/api/v1/jobs/%lld/logs", (long long)id);
        it_request(&r, &srv, "GET", path, NULL, small.hdrs);
        ck_assert_int_eq(r.status, 200);
        ck_assert_msg(strstr(r.body, "daily budget of 2500 mcoins is spent") != NULL, "no warning in the log:\n%s",
                      r.body);
        it_resp_free(&r);
    }

    /* every start with the spent key: 402 quota_exceeded */
    ck_assert_int_eq(post_job(&st, code, sizeof(code), small.hdrs, pid), 0);
    ck_assert_int_eq(st, 402);
    ck_assert_str_eq(code, "quota_exceeded");
    ck_assert_int_eq(start_kernel(NULL, 0, code, sizeof(code), small.hdrs, "/api/v1/kernels", pid), 402);
    ck_assert_str_eq(code, "quota_exceeded");
    ck_assert_int_eq(start_kernel(NULL, 0, code, sizeof(code), small.hdrs, "/api/kernels", pid), 402);
    ck_assert_str_eq(code, "quota_exceeded");
    ck_assert_int_eq(it_db_int(&srv, "SELECT count(*) FROM jobs WHERE key_id = %lld", (long long)small.id), 1);

    /* a browser session and another key of the same user still start work */
    id = post_job(&st, NULL, 0, u.hdrs, pid);
    ck_assert_int_eq(st, 201);
    ck_assert_int_eq(it_db_int(&srv, "SELECT IFNULL(key_id, 0) FROM jobs WHERE id = %lld", (long long)id), 0);
    snprintf(path, sizeof(path), "/api/v1/jobs/%lld", (long long)id);
    {
        it_resp r;
        it_request(&r, &srv, "DELETE", path, NULL, u.hdrs);
        ck_assert_int_eq(r.status, 200);
        it_resp_free(&r);
    }
    id = post_job(&st, NULL, 0, open.hdrs, pid);
    ck_assert_int_eq(st, 201);
    snprintf(path, sizeof(path), "/api/v1/jobs/%lld", (long long)id);
    {
        it_resp r;
        it_request(&r, &srv, "DELETE", path, NULL, open.hdrs);
        ck_assert_int_eq(r.status, 200);
        it_resp_free(&r);
    }
    j = wait_job_end(open.hdrs, id);
    ck_assert_str_eq(jstr(j, "failure_reason"), "cancelled");
    json_decref(j);

    /* a restart with the spent key is refused and the kernel keeps running */
    ck_assert_int_eq(start_kernel(kid, sizeof(kid), NULL, 0, u.hdrs, "/api/v1/kernels", pid), 201);
    json_decref(wait_kernel(u.hdrs, kid, "idle"));
    snprintf(path, sizeof(path), "/api/v1/kernels/%s/restart", kid);
    ck_assert_int_eq(post_status(small.hdrs, path, code, sizeof(code)), 402);
    ck_assert_str_eq(code, "quota_exceeded");
    snprintf(path, sizeof(path), "/api/kernels/%s/restart", kid);
    ck_assert_int_eq(post_status(small.hdrs, path, code, sizeof(code)), 402);
    json_decref(wait_kernel(u.hdrs, kid, "idle"));
    snprintf(path, sizeof(path), "/api/v1/kernels/%s", kid);
    {
        it_resp r;
        it_request(&r, &srv, "DELETE", path, NULL, u.hdrs);
        ck_assert_int_eq(r.status, 200);
        it_resp_free(&r);
    }

    /* another user's key with the same budget is its own budget */
    id = post_job(&st, NULL, 0, other.hdrs, vpid);
    ck_assert_int_eq(st, 201);
    j = wait_job_end(other.hdrs, id);
    ck_assert_str_eq(jstr(j, "failure_reason"), "key_budget");
    json_decref(j);
    assert_ledger_verifies();
}
END_TEST

START_TEST(a_kernel_started_with_a_small_budget_key_stops_with_key_budget)
{
    user u;
    key small;
    char pid[64], kid[64], code[64];
    json_t *k;

    prices();
    make_user(&u, "carol", 1000000);
    make_key(&small, &u, "notebooks", 2500);
    make_project(pid, sizeof(pid), &u);
    ck_assert_int_eq(start_kernel(kid, sizeof(kid), code, sizeof(code), small.hdrs, "/api/v1/kernels", pid), 201);
    k = wait_kernel(small.hdrs, kid, "dead");
    ck_assert_str_eq(jstr(k, "stop_reason"), "key_budget");
    json_decref(k);
    ck_assert_int_eq(it_db_int(&srv, "SELECT count(*) FROM jobs WHERE kind = 'kernel' AND key_id = %lld",
                               (long long)small.id),
                     1);
    ck_assert_int_eq(start_kernel(NULL, 0, code, sizeof(code), small.hdrs, "/api/kernels", pid), 402);
    ck_assert_str_eq(code, "quota_exceeded");
    assert_ledger_verifies();
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("key_budget");
    TCase *tc = tcase_create("key_budget");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 180);
    tcase_add_test(tc, a_job_charged_past_its_keys_budget_stops_and_the_key_is_refused);
    tcase_add_test(tc, a_kernel_started_with_a_small_budget_key_stops_with_key_budget);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
    SRunner *sr = srunner_create(suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    curl_global_cleanup();
    return failed ? 1 : 0;
}
