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
static char dir[64];
static char admin_cookie[512], admin_csrf[256];
/* 1 s intervals; out of funds and spent budgets stop 1 s after the warning */
static const char *const env[] = {"EDDY_METER_INTERVAL_MS=1000", "EDDY_OOF_GRACE_MS=1000",
                                  "EDDY_STOP_GRACE_MS=1000", NULL};

static const char WORK_PY[] = "import time\nprint('working', flush=True)\ntime.sleep(120)\n";

static void setup(void)
{
    ck_assert_int_eq(it_admin_server_start(&srv, dir, sizeof(dir), "budget", env, admin_cookie, sizeof(admin_cookie),
                                           admin_csrf, sizeof(admin_csrf)),
                     0);
}

static void teardown(void)
{
    ck_assert_int_eq(it_server_stop(&srv), 0);
    ck_assert_int_eq(it_dir_remove(dir), 0);
}

static void admin_req(const char *method, const char *path, const char *body, long want)
{
    const char *ah[] = {admin_cookie, admin_csrf, NULL};
    it_resp r;
    it_request(&r, &srv, method, path, body, ah);
    ck_assert_msg(r.status == want, "%s %s: %ld %s", method, path, r.status, r.body);
    it_resp_free(&r);
}

/* A key with scopes read, write, run and `budget` mcoins a day (< 0: none). */
static void make_key(it_key *k, it_user *u, const char *name, int64_t budget)
{
    char body[256], b[64] = "";

    if (budget >= 0)
        snprintf(b, sizeof(b), ", \"daily_budget_mcoins\": %lld", (long long)budget);
    snprintf(body, sizeof(body), "{\"name\":\"%s\",\"env\":\"prod\",\"scopes\":[\"read\",\"write\",\"run\"]%s}", name,
             b);
    ck_assert_int_eq(it_key_make(k, &srv, u->hdrs, body), 0);
}

static json_t *get_json(const char *const *hdrs, const char *path)
{
    json_t *j = it_get_json(&srv, hdrs, path);
    ck_assert_msg(j != NULL, "GET %s: not 200 with JSON", path);
    return j;
}

/* POST a job as `hdrs`; its id when 201, else 0 with *status (and the
 * error code into code). */
static int64_t post_job(long *status, char *code, size_t cn, const char *const *hdrs, const char *pid)
{
    int64_t id;
    *status = it_job_submit(&id, code, cn, &srv, hdrs, pid, NULL, "work.py", 100, NULL);
    return id;
}

/* Wait (bounded) until job `id` has ended; its JSON. */
static json_t *wait_job_end(const char *const *hdrs, int64_t id)
{
    json_t *j = it_job_wait(&srv, hdrs, id, NULL, 60);
    ck_assert_msg(j != NULL, "job %lld never ended", (long long)id);
    return j;
}

static json_t *wait_kernel(const char *const *hdrs, const char *kid, const char *status)
{
    json_t *k = it_kernel_wait(&srv, hdrs, kid, status, 60);
    ck_assert_msg(k != NULL, "kernel %s never became %s", kid, status);
    return k;
}

static long start_kernel(char *kid, size_t n, char *code, size_t cn, const char *const *hdrs, const char *api,
                         const char *pid)
{
    return it_kernel_post(kid, n, code, cn, &srv, hdrs, api, pid);
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
    it_user u, v;
    it_key small, open, other;
    char pid[64], vpid[64], code[64], kid[64], path[160];
    long st;
    int64_t id, spent;
    json_t *j;

    prices();
    ck_assert_int_eq(it_user_make(&u, &srv, admin_cookie, admin_csrf, "alice", 1000000), 0);
    ck_assert_int_eq(it_user_make(&v, &srv, admin_cookie, admin_csrf, "bob", 1000000), 0);
    make_key(&small, &u, "ci", 2500);
    make_key(&open, &u, "nightly", -1);
    make_key(&other, &v, "bob-ci", 2500);
    ck_assert_int_eq(it_project_make(pid, sizeof(pid), &srv, u.hdrs, "work", "work.py", WORK_PY), 0);
    ck_assert_int_eq(it_project_make(vpid, sizeof(vpid), &srv, v.hdrs, "work", "work.py", WORK_PY), 0);

    /* 1000 mcoins a second against 2500 a day: warned, then stopped */
    id = post_job(&st, NULL, 0, small.hdrs, pid);
    ck_assert_int_eq(st, 201);
    j = wait_job_end(small.hdrs, id);
    ck_assert_str_eq(it_json_str(j, "status"), "failed");
    ck_assert_str_eq(it_json_str(j, "failure_reason"), "key_budget");
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
    ck_assert_int_eq(it_request_status(&srv, "DELETE", path, NULL, u.hdrs), 200);
    id = post_job(&st, NULL, 0, open.hdrs, pid);
    ck_assert_int_eq(st, 201);
    snprintf(path, sizeof(path), "/api/v1/jobs/%lld", (long long)id);
    ck_assert_int_eq(it_request_status(&srv, "DELETE", path, NULL, open.hdrs), 200);
    j = wait_job_end(open.hdrs, id);
    ck_assert_str_eq(it_json_str(j, "failure_reason"), "cancelled");
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
    ck_assert_int_eq(it_request_status(&srv, "DELETE", path, NULL, u.hdrs), 200);

    /* another user's key with the same budget is its own budget */
    id = post_job(&st, NULL, 0, other.hdrs, vpid);
    ck_assert_int_eq(st, 201);
    j = wait_job_end(other.hdrs, id);
    ck_assert_str_eq(it_json_str(j, "failure_reason"), "key_budget");
    json_decref(j);
    assert_ledger_verifies();
}
END_TEST

START_TEST(a_kernel_started_with_a_small_budget_key_stops_with_key_budget)
{
    it_user u;
    it_key small;
    char pid[64], kid[64], code[64];
    json_t *k;

    prices();
    ck_assert_int_eq(it_user_make(&u, &srv, admin_cookie, admin_csrf, "carol", 1000000), 0);
    make_key(&small, &u, "notebooks", 2500);
    ck_assert_int_eq(it_project_make(pid, sizeof(pid), &srv, u.hdrs, "work", "work.py", WORK_PY), 0);
    ck_assert_int_eq(start_kernel(kid, sizeof(kid), code, sizeof(code), small.hdrs, "/api/v1/kernels", pid), 201);
    k = wait_kernel(small.hdrs, kid, "dead");
    ck_assert_str_eq(it_json_str(k, "stop_reason"), "key_budget");
    json_decref(k);
    ck_assert_int_eq(it_db_int(&srv, "SELECT count(*) FROM jobs WHERE kind = 'kernel' AND key_id = %lld",
                               (long long)small.id),
                     1);
    ck_assert_int_eq(start_kernel(NULL, 0, code, sizeof(code), small.hdrs, "/api/kernels", pid), 402);
    ck_assert_str_eq(code, "quota_exceeded");
    assert_ledger_verifies();
}
END_TEST

int main(void)
{
    const TTest *tests[] = {a_job_charged_past_its_keys_budget_stops_and_the_key_is_refused,
                            a_kernel_started_with_a_small_budget_key_stops_with_key_budget, NULL};
    return it_tests_run("key_budget", 180, setup, teardown, tests);
}
