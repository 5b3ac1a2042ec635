/* Suspending a user against the real server, scheduler, sandbox, kernels and
 * ledger (issue 11, item 11): a user with a running kernel and a running job
 * is suspended (PATCH /api/v1/admin/users/{id} {"suspended": true}); both
 * stop within a bounded wait, the job with failure_reason suspended and the
 * kernel with stop_reason suspended, their holds settled and what they ran
 * charged; her key answers 401, her cookie session is gone, her login is
 * refused, and another user's work keeps running. Unsuspended, she sees
 * why her work stopped and can start work again, with her cookie and her
 * key; the ledger verifies.
 *
 * Before the fix suspension revoked sessions and refused keys but left the
 * kernels and jobs running (and charging). */
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
static const char *admin_hdrs[3];
static const char *const env[] = {"EDDY_METER_INTERVAL_MS=1000", "EDDY_OOF_GRACE_MS=1000",
                                  "EDDY_STOP_GRACE_MS=1000", NULL};

static const char WORK_PY[] = "import time\nprint('working', flush=True)\ntime.sleep(120)\n";

typedef struct user {
    int64_t id;
    char    name[32], pw[64];
    char    cookie[512], csrf[256];
    const char *hdrs[4];
    char    auth[160];            /* "Authorization: Bearer <key>" */
    const char *khdrs[2];
} user;

static void setup(void)
{
    snprintf(dir, sizeof(dir), "/tmp/eddy-it-suspend-XXXXXX");
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
    admin_hdrs[0] = admin_cookie;
    admin_hdrs[1] = admin_csrf;
    admin_hdrs[2] = NULL;
}

static void teardown(void)
{
    char cmd[128];
    ck_assert_int_eq(it_server_stop(&srv), 0);
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    ck_assert_int_eq(system(cmd), 0);
}

static long req(const char *method, const char *path, const char *body, const char *const *hdrs)
{
    it_resp r;
    long st;
    it_request(&r, &srv, method, path, body, hdrs);
    st = r.status;
    it_resp_free(&r);
    return st;
}

static void login(user *u)
{
    ck_assert_int_eq(it_login(&srv, u->name, u->pw, u->cookie, sizeof(u->cookie), u->csrf, sizeof(u->csrf)), 0);
    u->hdrs[0] = u->cookie;
    u->hdrs[1] = u->csrf;
    u->hdrs[2] = NULL;
}

/* Sign up, grant coins, log in, make a key with scopes read, write, run. */
static void make_user(user *u, const char *name)
{
    char body[256], path[128], idem[64];
    const char *ah[] = {admin_cookie, admin_csrf, idem, NULL};
    it_resp r;

    snprintf(u->name, sizeof(u->name), "%s", name);
    snprintf(u->pw, sizeof(u->pw), "pass-%s-123", name);
    snprintf(body, sizeof(body), "{\"username\":\"%s\",\"email\":\"%s@example.com\",\"password\":\"%s\"}", name,
             name, u->pw);
    it_request(&r, &srv, "POST", "/api/v1/auth/signup", body, NULL);
    ck_assert_msg(r.status == 201, "signup: %ld %s", r.status, r.body);
    u->id = json_integer_value(json_object_get(r.json, "id"));
    it_resp_free(&r);
    snprintf(path, sizeof(path), "/api/v1/admin/users/%lld/grants", (long long)u->id);
    snprintf(idem, sizeof(idem), "Idempotency-Key: grant-%s", name);
    it_request(&r, &srv, "POST", path, "{\"amount_mcoins\": 1000000, \"reason\": \"test\"}", ah);
    ck_assert_msg(r.status == 201, "grant: %ld %s", r.status, r.body);
    it_resp_free(&r);
    login(u);
    it_request(&r, &srv, "POST", "/api/v1/keys",
               "{\"name\":\"ci\",\"env\":\"prod\",\"scopes\":[\"read\",\"write\",\"run\"]}", u->hdrs);
    ck_assert_msg(r.status == 201, "key: %ld %s", r.status, r.body);
    snprintf(u->auth, sizeof(u->auth), "Authorization: Bearer %s", json_string_value(json_object_get(r.json, "key")));
    it_resp_free(&r);
    u->khdrs[0] = u->auth;
    u->khdrs[1] = NULL;
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

static int64_t post_job(const char *const *hdrs, const char *pid)
{
    char body[256];
    it_resp r;
    int64_t id;

    snprintf(body, sizeof(body),
             "{\"project_id\":\"%s\",\"entry\":\"work.py\",\"resource\":\"cpu-basic\",\"max_runtime_s\":100}", pid);
    it_request(&r, &srv, "POST", "/api/v1/jobs", body, hdrs);
    ck_assert_msg(r.status == 201, "job: %ld %s", r.status, r.body);
    id = json_integer_value(json_object_get(r.json, "id"));
    it_resp_free(&r);
    return id;
}

static json_t *wait_job(const char *const *hdrs, int64_t id, const char *status)
{
    char path[64];
    snprintf(path, sizeof(path), "/api/v1/jobs/%lld", (long long)id);
    for (int i = 0; i < 300; i++) {
        json_t *j = get_json(hdrs, path);
        if (strcmp(jstr(j, "status"), status) == 0)
            return j;
        json_decref(j);
        usleep(100000);
    }
    ck_abort_msg("job %lld never became %s", (long long)id, status);
    return NULL;
}

static void start_kernel(char *kid, size_t n, user *u, const char *pid)
{
    char body[256], path[128];
    it_resp r;

    snprintf(body, sizeof(body), "{\"project_id\":\"%s\",\"resource\":\"cpu-basic\"}", pid);
    it_request(&r, &srv, "POST", "/api/v1/kernels", body, u->hdrs);
    ck_assert_msg(r.status == 201, "kernel: %ld %s", r.status, r.body);
    snprintf(kid, n, "%s", jstr(r.json, "id"));
    it_resp_free(&r);
    snprintf(path, sizeof(path), "/api/v1/kernels/%s", kid);
    for (int i = 0; i < 300; i++) {
        json_t *k = get_json(u->hdrs, path);
        bool idle = strcmp(jstr(k, "status"), "idle") == 0;
        ck_assert_msg(strcmp(jstr(k, "status"), "dead") != 0, "kernel died: %s", jstr(k, "stop_reason"));
        json_decref(k);
        if (idle)
            return;
        usleep(100000);
    }
    ck_abort_msg("kernel %s never became idle", kid);
}

static void suspend(const user *u, bool on)
{
    char path[64];
    snprintf(path, sizeof(path), "/api/v1/admin/users/%lld", (long long)u->id);
    ck_assert_int_eq(req("PATCH", path, on ? "{\"suspended\":true}" : "{\"suspended\":false}", admin_hdrs), 200);
}

START_TEST(suspension_stops_kernels_and_jobs_and_refuses_new_starts)
{
    user u, v;
    char pid[64], vpid[64], kid[64], path[160];
    int64_t job, vjob, again;
    json_t *j;
    bool stopped = false;

    /* cpu-basic at 100 mcoins a second with no free time, so the work pays */
    ck_assert_int_eq(req("PUT", "/api/v1/admin/resources/cpu-basic", "{\"price_mcoins_per_hour\": 360000}",
                         admin_hdrs),
                     200);
    ck_assert_int_eq(req("PUT", "/api/v1/admin/tiers/free", "{\"max_kernels\": 4, \"free_ms_per_day\": "
                                                            "{\"cpu-basic\": 0}}", admin_hdrs),
                     200);
    make_user(&u, "dana");
    make_user(&v, "erin");
    make_project(pid, sizeof(pid), &u);
    make_project(vpid, sizeof(vpid), &v);
    start_kernel(kid, sizeof(kid), &u, pid);
    job = post_job(u.khdrs, pid);
    json_decref(wait_job(u.khdrs, job, "running"));
    vjob = post_job(v.hdrs, vpid);
    json_decref(wait_job(v.hdrs, vjob, "running"));
    /* let both be metered */
    for (int i = 0; i < 100 && it_db_int(&srv, "SELECT count(*) FROM quota_meter WHERE user_id = %lld AND "
                                               "status = 'charged'", (long long)u.id) < 2; i++)
        usleep(100000);

    suspend(&u, true);
    /* her key and her session are refused, her login too */
    ck_assert_int_eq(req("GET", "/api/v1/me", NULL, u.khdrs), 401);
    ck_assert_int_eq(req("GET", "/api/v1/me", NULL, u.hdrs), 401);
    {
        char c[512], x[256];
        ck_assert_int_ne(it_login(&srv, u.name, u.pw, c, sizeof(c), x, sizeof(x)), 0);
    }
    /* her kernel and her job stop within a bounded wait, each with reason suspended */
    j = wait_job(admin_hdrs, job, "failed");
    ck_assert_str_eq(jstr(j, "failure_reason"), "suspended");
    ck_assert_int_gt(json_integer_value(json_object_get(j, "charged_mcoins")), 0);
    json_decref(j);
    for (int i = 0; i < 300 && !stopped; i++) {
        stopped = it_db_int(&srv, "SELECT count(*) FROM kernels WHERE id = '%s' AND status = 'dead' "
                                  "AND stop_reason = 'suspended'", kid) == 1;
        if (!stopped)
            usleep(100000);
    }
    ck_assert_msg(stopped, "kernel %s did not stop with reason suspended", kid);
    ck_assert_int_eq(it_db_int(&srv, "SELECT count(*) FROM jobs WHERE user_id = %lld AND status IN "
                                     "('queued', 'running')", (long long)u.id),
                     0);
    ck_assert_int_eq(it_db_int(&srv, "SELECT count(*) FROM ledger_holds WHERE user_id = %lld AND status = 'open'",
                               (long long)u.id),
                     0);
    /* another user's work is untouched */
    snprintf(path, sizeof(path), "/api/v1/jobs/%lld", (long long)vjob);
    j = get_json(v.hdrs, path);
    ck_assert_str_eq(jstr(j, "status"), "running");
    json_decref(j);

    /* unsuspended: she sees why, and can start again with her cookie and her key */
    suspend(&u, false);
    login(&u);
    snprintf(path, sizeof(path), "/api/v1/kernels/%s", kid);
    j = get_json(u.hdrs, path);
    ck_assert_str_eq(jstr(j, "status"), "dead");
    ck_assert_str_eq(jstr(j, "stop_reason"), "suspended");
    json_decref(j);
    snprintf(path, sizeof(path), "/api/v1/jobs/%lld", (long long)job);
    j = get_json(u.khdrs, path);
    ck_assert_str_eq(jstr(j, "failure_reason"), "suspended");
    json_decref(j);
    again = post_job(u.hdrs, pid);
    json_decref(wait_job(u.hdrs, again, "running"));
    snprintf(path, sizeof(path), "/api/v1/jobs/%lld", (long long)again);
    ck_assert_int_eq(req("DELETE", path, NULL, u.khdrs), 200);
    json_decref(wait_job(u.hdrs, again, "cancelled"));
    start_kernel(kid, sizeof(kid), &u, pid);
    snprintf(path, sizeof(path), "/api/v1/kernels/%s", kid);
    ck_assert_int_eq(req("DELETE", path, NULL, u.hdrs), 200);
    snprintf(path, sizeof(path), "/api/v1/jobs/%lld", (long long)vjob);
    ck_assert_int_eq(req("DELETE", path, NULL, v.hdrs), 200);
    json_decref(wait_job(v.hdrs, vjob, "cancelled"));

    j = get_json(admin_hdrs, "/api/v1/admin/ledger/verify");
    ck_assert_msg(json_is_true(json_object_get(j, "ok")), "ledger does not verify");
    json_decref(j);
    ck_assert_int_eq(it_db_int(&srv, "SELECT count(*) FROM ledger_holds WHERE status = 'open'"), 0);
}
END_TEST

START_TEST(queued_work_of_a_suspended_user_ends_with_reason_suspended)
{
    user u;
    char pid[64];
    int64_t a, b;
    json_t *j;

    make_user(&u, "fay");
    make_project(pid, sizeof(pid), &u);
    /* free allows one item at a time: the second job waits in the queue */
    a = post_job(u.hdrs, pid);
    json_decref(wait_job(u.hdrs, a, "running"));
    b = post_job(u.khdrs, pid);
    suspend(&u, true);
    j = wait_job(admin_hdrs, b, "failed");
    ck_assert_str_eq(jstr(j, "failure_reason"), "suspended");
    ck_assert(json_is_null(json_object_get(j, "started_at")));
    json_decref(j);
    j = wait_job(admin_hdrs, a, "failed");
    ck_assert_str_eq(jstr(j, "failure_reason"), "suspended");
    json_decref(j);
    j = get_json(admin_hdrs, "/api/v1/admin/ledger/verify");
    ck_assert(json_is_true(json_object_get(j, "ok")));
    json_decref(j);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("suspend");
    TCase *tc = tcase_create("suspend");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 180);
    tcase_add_test(tc, suspension_stops_kernels_and_jobs_and_refuses_new_starts);
    tcase_add_test(tc, queued_work_of_a_suspended_user_ends_with_reason_suspended);
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
