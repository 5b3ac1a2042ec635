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
static char dir[64];
static char admin_cookie[512], admin_csrf[256];
static const char *admin_hdrs[3];
static const char *const env[] = {"EDDY_METER_INTERVAL_MS=1000", "EDDY_OOF_GRACE_MS=1000",
                                  "EDDY_STOP_GRACE_MS=1000", NULL};

static const char WORK_PY[] = "import time\nprint('working', flush=True)\ntime.sleep(120)\n";

static void setup(void)
{
    ck_assert_int_eq(it_admin_server_start(&srv, dir, sizeof(dir), "suspend", env, admin_cookie, sizeof(admin_cookie),
                                           admin_csrf, sizeof(admin_csrf)),
                     0);
    admin_hdrs[0] = admin_cookie;
    admin_hdrs[1] = admin_csrf;
    admin_hdrs[2] = NULL;
}

static void teardown(void)
{
    ck_assert_int_eq(it_server_stop(&srv), 0);
    ck_assert_int_eq(it_dir_remove(dir), 0);
}

static long req(const char *method, const char *path, const char *body, const char *const *hdrs)
{
    return it_request_status(&srv, method, path, body, hdrs);
}

/* Sign up, grant coins, log in, make a key `k` with scopes read, write, run. */
static void make_user(it_user *u, it_key *k, const char *name)
{
    static const char body[] = "{\"name\":\"ci\",\"env\":\"prod\",\"scopes\":[\"read\",\"write\",\"run\"]}";

    ck_assert_int_eq(it_user_make(u, &srv, admin_cookie, admin_csrf, name, 1000000), 0);
    ck_assert_int_eq(it_key_make(k, &srv, u->hdrs, body), 0);
}

static json_t *get_json(const char *const *hdrs, const char *path)
{
    json_t *j = it_get_json(&srv, hdrs, path);
    ck_assert_msg(j != NULL, "GET %s: not 200 with JSON", path);
    return j;
}

static int64_t post_job(const char *const *hdrs, const char *pid)
{
    int64_t id;
    ck_assert_int_eq(it_job_submit(&id, NULL, 0, &srv, hdrs, pid, NULL, "work.py", 100, NULL), 201);
    return id;
}

static json_t *wait_job(const char *const *hdrs, int64_t id, const char *status)
{
    json_t *j = it_job_wait(&srv, hdrs, id, status, 30);
    ck_assert_msg(j != NULL, "job %lld never became %s", (long long)id, status);
    return j;
}

static void start_kernel(char *kid, size_t n, it_user *u, const char *pid)
{
    ck_assert_msg(it_kernel_start(kid, n, &srv, u->hdrs, pid, 30) == 0, "kernel %s never became idle", kid);
}

static void suspend(const it_user *u, bool on)
{
    char path[64];
    snprintf(path, sizeof(path), "/api/v1/admin/users/%lld", (long long)u->id);
    ck_assert_int_eq(req("PATCH", path, on ? "{\"suspended\":true}" : "{\"suspended\":false}", admin_hdrs), 200);
}

START_TEST(suspension_stops_kernels_and_jobs_and_refuses_new_starts)
{
    it_user u, v;
    it_key uk, vk;
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
    make_user(&u, &uk, "dana");
    make_user(&v, &vk, "erin");
    ck_assert_int_eq(it_project_make(pid, sizeof(pid), &srv, u.hdrs, "work", "work.py", WORK_PY), 0);
    ck_assert_int_eq(it_project_make(vpid, sizeof(vpid), &srv, v.hdrs, "work", "work.py", WORK_PY), 0);
    start_kernel(kid, sizeof(kid), &u, pid);
    job = post_job(uk.hdrs, pid);
    json_decref(wait_job(uk.hdrs, job, "running"));
    vjob = post_job(v.hdrs, vpid);
    json_decref(wait_job(v.hdrs, vjob, "running"));
    /* let both be metered */
    for (int i = 0; i < 100 && it_db_int(&srv, "SELECT count(*) FROM quota_meter WHERE user_id = %lld AND "
                                               "status = 'charged'", (long long)u.id) < 2; i++)
        usleep(100000);

    suspend(&u, true);
    /* her key and her session are refused, her login too */
    ck_assert_int_eq(req("GET", "/api/v1/me", NULL, uk.hdrs), 401);
    ck_assert_int_eq(req("GET", "/api/v1/me", NULL, u.hdrs), 401);
    {
        char c[512], x[256];
        ck_assert_int_ne(it_login(&srv, u.name, u.pw, c, sizeof(c), x, sizeof(x)), 0);
    }
    /* her kernel and her job stop within a bounded wait, each with reason suspended */
    j = wait_job(admin_hdrs, job, "failed");
    ck_assert_str_eq(it_json_str(j, "failure_reason"), "suspended");
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
    ck_assert_str_eq(it_json_str(j, "status"), "running");
    json_decref(j);

    /* unsuspended: she sees why, and can start again with her cookie and her key */
    suspend(&u, false);
    ck_assert_int_eq(it_login(&srv, u.name, u.pw, u.cookie, sizeof(u.cookie), u.csrf, sizeof(u.csrf)), 0);
    snprintf(path, sizeof(path), "/api/v1/kernels/%s", kid);
    j = get_json(u.hdrs, path);
    ck_assert_str_eq(it_json_str(j, "status"), "dead");
    ck_assert_str_eq(it_json_str(j, "stop_reason"), "suspended");
    json_decref(j);
    snprintf(path, sizeof(path), "/api/v1/jobs/%lld", (long long)job);
    j = get_json(uk.hdrs, path);
    ck_assert_str_eq(it_json_str(j, "failure_reason"), "suspended");
    json_decref(j);
    again = post_job(u.hdrs, pid);
    json_decref(wait_job(u.hdrs, again, "running"));
    snprintf(path, sizeof(path), "/api/v1/jobs/%lld", (long long)again);
    ck_assert_int_eq(req("DELETE", path, NULL, uk.hdrs), 200);
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
    it_user u;
    it_key uk;
    char pid[64];
    int64_t a, b;
    json_t *j;

    make_user(&u, &uk, "fay");
    ck_assert_int_eq(it_project_make(pid, sizeof(pid), &srv, u.hdrs, "work", "work.py", WORK_PY), 0);
    /* free allows one item at a time: the second job waits in the queue */
    a = post_job(u.hdrs, pid);
    json_decref(wait_job(u.hdrs, a, "running"));
    b = post_job(uk.hdrs, pid);
    suspend(&u, true);
    j = wait_job(admin_hdrs, b, "failed");
    ck_assert_str_eq(it_json_str(j, "failure_reason"), "suspended");
    ck_assert(json_is_null(json_object_get(j, "started_at")));
    json_decref(j);
    j = wait_job(admin_hdrs, a, "failed");
    ck_assert_str_eq(it_json_str(j, "failure_reason"), "suspended");
    json_decref(j);
    j = get_json(admin_hdrs, "/api/v1/admin/ledger/verify");
    ck_assert(json_is_true(json_object_get(j, "ok")));
    json_decref(j);
}
END_TEST

int main(void)
{
    const TTest *tests[] = {suspension_stops_kernels_and_jobs_and_refuses_new_starts,
                            queued_work_of_a_suspended_user_ends_with_reason_suspended, NULL};
    return it_tests_run("suspend", 180, setup, teardown, tests);
}
