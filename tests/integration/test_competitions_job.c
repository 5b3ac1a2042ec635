/* Competition submissions from a job's output (issue 16 item 4) against the
 * real `eddy serve`: a participant's job writes a CSV and a link to
 * /etc/passwd; the CSV is submitted with {job_id, path} and scored; the
 * link is refused (never followed), another user's job is 404, a path out
 * of the output 404/422; a code submission is 422 (no runner yet). The job
 * looks for the competition's truth (a canary label in it) everywhere it
 * can see and prints what it finds: its log never holds the canary.
 * Jobs need the sandbox, which needs root here: skips (77) otherwise. */
#include "harness.h"

#include <check.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define CANARY "CANARY-job-5be1f00d-91c2-4e0f-a7d3-0badc0de0042"

static it_server srv;
static char dir[256], admin_cookie[600], admin_csrf[300];
static const char *const env[] = {"EDDY_METER_INTERVAL_MS=1000", "EDDY_STOP_GRACE_MS=1000", NULL};

static const char JOB_PY[] =
    "import os\n"
    "out = os.environ['EDDY_OUTPUT_DIR']\n"
    "rows = ['id,label'] + ['%d,%s' % (i, 'cat' if i % 3 else 'dog') for i in range(60)]\n"
    "open(out + '/sub.csv', 'w').write('\\n'.join(rows) + '\\n')\n"
    "os.symlink('/etc/passwd', out + '/link.csv')\n"
    "needle = b'CANARY-' + b'job'   # not spelled whole here: this file is searched too\n"
    "hits = []\n"
    "for top in ['/home', '/tmp', '/var', '/srv', '/mnt', '/opt', '/root']:\n"
    "    for d, _, fs in os.walk(top):\n"
    "        for f in fs:\n"
    "            try:\n"
    "                if needle in open(os.path.join(d, f), 'rb').read(1 << 20):\n"
    "                    hits.append(os.path.join(d, f))\n"
    "            except Exception:\n"
    "                pass\n"
    "print('files with the canary:', hits, flush=True)\n";

static void setup(void)
{
    const char *ah[] = {admin_cookie, admin_csrf, NULL};

    ck_assert_int_eq(it_admin_server_start(&srv, dir, sizeof(dir), "compjob", env, admin_cookie,
                                           sizeof(admin_cookie), admin_csrf, sizeof(admin_csrf)),
                     0);
    ck_assert_int_eq(it_request_status(&srv, "PUT", "/api/v1/admin/tiers/free", "{\"job_disk_bytes\": 0}", ah), 200);
}

static void teardown(void)
{
    ck_assert_int_eq(it_server_stop(&srv), 0);
    ck_assert_int_eq(it_dir_remove(dir), 0);
}

static const char *at(char *buf, size_t n, int64_t ms_ahead)
{
    struct timeval tv;
    struct tm tm;
    int64_t ms;
    time_t t;

    gettimeofday(&tv, NULL);
    ms = (int64_t)tv.tv_sec * 1000 + tv.tv_usec / 1000 + ms_ahead;
    t = (time_t)(ms / 1000);
    gmtime_r(&t, &tm);
    strftime(buf, n, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(buf + strlen(buf), n - strlen(buf), ".%03dZ", (int)(ms % 1000));
    return buf;
}

static long post(it_resp *r, it_user *u, const char *cid, const char *body)
{
    char path[200];

    snprintf(path, sizeof(path), "/api/v1/competitions/%s/submissions", cid);
    it_request(r, &srv, "POST", path, body, u->hdrs);
    return r->status;
}

START_TEST(submit_from_a_job)
{
    const char *ah[] = {admin_cookie, admin_csrf, NULL};
    const char *csvh[4];
    it_user host, alice, bob;
    char pid[64], cid[64], body[1024], path[300], s[64], e[64], truth[4096], logp[400], sid[64];
    static char log[1 << 20];
    size_t n = 0;
    int64_t job;
    it_resp r;
    json_t *j;

    ck_assert_int_eq(it_user_make(&host, &srv, admin_cookie, admin_csrf, "hoster", 0), 0);
    ck_assert_int_eq(it_user_make(&alice, &srv, admin_cookie, admin_csrf, "alice", 1000000), 0);
    ck_assert_int_eq(it_user_make(&bob, &srv, admin_cookie, admin_csrf, "bobby", 0), 0);
    ck_assert_int_eq(it_request_status(&srv, "POST", "/api/v1/admin/hosts", "{\"username\":\"hoster\"}", ah), 201);
    snprintf(body, sizeof(body),
             "{\"title\":\"Pets\",\"slug\":\"pets\",\"start_at\":\"%s\",\"end_at\":\"%s\",\"id_column\":\"id\","
             "\"target_columns\":[\"label\"],\"metric\":\"accuracy\",\"public_fraction\":0.5,\"daily_cap\":5,"
             "\"max_team_size\":2,\"leaderboard\":\"public\"}",
             at(s, sizeof(s), 3600000), at(e, sizeof(e), 7200000));
    it_request(&r, &srv, "POST", "/api/v1/competitions", body, host.hdrs);
    ck_assert_msg(r.status == 201, "%ld %s", r.status, r.body);
    snprintf(cid, sizeof(cid), "%s", it_json_str(r.json, "id"));
    it_resp_free(&r);
    n += (size_t)snprintf(truth + n, sizeof(truth) - n, "id,label\n");
    for (int i = 0; i < 60; i++)
        n += (size_t)snprintf(truth + n, sizeof(truth) - n, "%d,%s\n", i, i == 7 ? CANARY : i % 3 ? "cat" : "dog");
    csvh[0] = "Content-Type: text/csv";
    csvh[1] = host.cookie;
    csvh[2] = host.csrf;
    csvh[3] = NULL;
    snprintf(path, sizeof(path), "/api/v1/competitions/%s/truth", cid);
    ck_assert_int_eq(it_request_status(&srv, "PUT", path, truth, csvh), 200);
    snprintf(path, sizeof(path), "/api/v1/competitions/%s", cid);
    snprintf(body, sizeof(body), "{\"start_at\":\"%s\"}", at(s, sizeof(s), 500));
    ck_assert_int_eq(it_request_status(&srv, "PUT", path, body, host.hdrs), 200);

    /* alice's job writes the CSV */
    ck_assert_int_eq(it_project_make(pid, sizeof(pid), &srv, alice.hdrs, "pets", "job.py", JOB_PY), 0);
    snprintf(body, sizeof(body),
             "{\"project_id\":\"%s\",\"entry\":\"job.py\",\"resource\":\"cpu-basic\",\"max_runtime_s\":180}", pid);
    it_request(&r, &srv, "POST", "/api/v1/jobs", body, alice.hdrs);
    ck_assert_msg(r.status == 201, "job: %ld %s", r.status, r.body);
    job = json_integer_value(json_object_get(r.json, "id"));
    it_resp_free(&r);
    j = it_job_wait(&srv, alice.hdrs, job, NULL, 150);
    ck_assert_ptr_nonnull(j);
    ck_assert_str_eq(it_json_str(j, "status"), "succeeded");
    json_decref(j);

    snprintf(path, sizeof(path), "/api/v1/competitions/%s/accept-rules", cid);
    ck_assert_int_eq(it_request_status(&srv, "POST", path, NULL, alice.hdrs), 200);
    ck_assert_int_eq(it_request_status(&srv, "POST", path, NULL, bob.hdrs), 200);

    /* refused: a link, another user's job, a path out of the output, code */
    snprintf(body, sizeof(body), "{\"job_id\":%lld,\"path\":\"link.csv\"}", (long long)job);
    ck_assert_int_eq(post(&r, &alice, cid, body), 422);
    it_resp_free(&r);
    snprintf(body, sizeof(body), "{\"job_id\":%lld,\"path\":\"sub.csv\"}", (long long)job);
    ck_assert_int_eq(post(&r, &bob, cid, body), 404);
    it_resp_free(&r);
    snprintf(body, sizeof(body), "{\"job_id\":%lld,\"path\":\"../log\"}", (long long)job);
    {
        long st = post(&r, &alice, cid, body);
        ck_assert_msg(st == 404 || st == 422, "../log answered %ld", st);
        it_resp_free(&r);
    }

    /* the CSV it wrote, scored (once the competition has started) */
    snprintf(path, sizeof(path), "/api/v1/competitions/%s", cid);
    for (int i = 0; i < 100; i++) {
        bool active;
        j = it_get_json(&srv, alice.hdrs, path);
        ck_assert_ptr_nonnull(j);
        active = strcmp(it_json_str(j, "phase"), "active") == 0;
        json_decref(j);
        if (active)
            break;
        usleep(50000);
    }
    snprintf(body, sizeof(body), "{\"job_id\":%lld,\"path\":\"sub.csv\"}", (long long)job);
    ck_assert_int_eq(post(&r, &alice, cid, body), 201);
    snprintf(sid, sizeof(sid), "%s", it_json_str(r.json, "id"));
    it_resp_free(&r);
    snprintf(path, sizeof(path), "/api/v1/competitions/%s/submissions/%s", cid, sid);
    for (int i = 0; i < 300; i++) {
        j = it_get_json(&srv, alice.hdrs, path);
        ck_assert_ptr_nonnull(j);
        if (strcmp(it_json_str(j, "status"), "queued") != 0 && strcmp(it_json_str(j, "status"), "validating") != 0)
            break;
        json_decref(j);
        j = NULL;
        usleep(100000);
    }
    ck_assert_ptr_nonnull(j);
    ck_assert_str_eq(it_json_str(j, "status"), "scored");
    ck_assert(json_real_value(json_object_get(j, "public_score")) > 0.9);
    json_decref(j);
    /* code, in a CSV competition */
    {
        char vid[64];
        ck_assert_int_eq(it_version_make(vid, sizeof(vid), &srv, alice.hdrs, pid, "v1"), 0);
        snprintf(body, sizeof(body), "{\"project_id\":\"%s\",\"version\":\"%s\",\"entry\":\"job.py\"}", pid, vid);
        ck_assert_int_eq(post(&r, &alice, cid, body), 422);   /* not a code competition */
        it_resp_free(&r);
    }

    /* the job looked everywhere it could: no canary in its log */
    snprintf(logp, sizeof(logp), "%s/jobs/%lld/log", srv.data_dir, (long long)job);
    it_slurp(log, sizeof(log), logp);
    ck_assert_msg(strstr(log, "files with the canary: []") != NULL, "job log: %s", log);
    ck_assert_ptr_null(strstr(log, CANARY));
}
END_TEST

static const char SOLVE_PY[] =
    "import os, sys\n"
    "mode = sys.argv[0]\n"
    "rows = ['id,label'] + ['%d,%s' % (i, 'cat' if i % 3 else 'dog') for i in range(60)]\n"
    "open(os.environ['EDDY_OUTPUT_DIR'] + '/submission.csv', 'w').write('\\n'.join(rows) + '\\n')\n"
    "print('wrote the submission', flush=True)\n";
static const char CRASH_PY[] = "print('about to fail', flush=True)\nraise ValueError('model exploded')\n";
static const char NOTHING_PY[] = "print('writing nothing', flush=True)\n";

/* Wait for a submission's final state: its JSON. */
static json_t *final_of(it_user *u, const char *cid, const char *sid)
{
    char path[300];

    snprintf(path, sizeof(path), "/api/v1/competitions/%s/submissions/%s", cid, sid);
    for (int i = 0; i < 1800; i++) {
        json_t *j = it_get_json(&srv, u->hdrs, path);
        const char *st;
        ck_assert_ptr_nonnull(j);
        st = it_json_str(j, "status");
        if (strcmp(st, "scored") == 0 || strcmp(st, "invalid") == 0 || strcmp(st, "failed") == 0)
            return j;
        json_decref(j);
        usleep(100000);
    }
    ck_abort_msg("submission %s did not end", sid);
    return NULL;
}

static int64_t balance(it_user *u)
{
    json_t *q = it_get_json(&srv, u->hdrs, "/api/v1/quota");
    int64_t b;

    ck_assert_ptr_nonnull(q);
    b = json_integer_value(json_object_get(q, "balance_mcoins"));
    json_decref(q);
    return b;
}

START_TEST(code_submissions)
{
    const char *ah[] = {admin_cookie, admin_csrf, NULL};
    const char *csvh[4];
    it_user host, alice;
    char pid[64], vid[64], cid[64], body[1024], path[300], s[64], e[64], truth[4096], sid[64];
    const char *entries[] = {"solve.py", "crash.py", "nothing.py"};
    const char *want[] = {"scored", "failed", "failed"};
    const char *cls[] = {"", "exception", "missing_output"};
    size_t n = 0;
    int64_t before;
    it_resp r;
    json_t *j;

    ck_assert_int_eq(it_user_make(&host, &srv, admin_cookie, admin_csrf, "hoster", 0), 0);
    ck_assert_int_eq(it_user_make(&alice, &srv, admin_cookie, admin_csrf, "alice", 1000000), 0);
    ck_assert_int_eq(it_request_status(&srv, "POST", "/api/v1/admin/hosts", "{\"username\":\"hoster\"}", ah), 201);
    snprintf(body, sizeof(body),
             "{\"title\":\"Pets code\",\"slug\":\"pets-code\",\"start_at\":\"%s\",\"end_at\":\"%s\",\"id_column\":\"id\","
             "\"target_columns\":[\"label\"],\"metric\":\"accuracy\",\"public_fraction\":0.5,\"daily_cap\":5,"
             "\"max_team_size\":2,\"leaderboard\":\"public\",\"code_competition\":{\"resource\":\"cpu-basic\","
             "\"max_runtime_s\":120,\"output_path\":\"submission.csv\",\"charged\":false}}",
             at(s, sizeof(s), 3600000), at(e, sizeof(e), 7200000));
    it_request(&r, &srv, "POST", "/api/v1/competitions", body, host.hdrs);
    ck_assert_msg(r.status == 201, "%ld %s", r.status, r.body);
    snprintf(cid, sizeof(cid), "%s", it_json_str(r.json, "id"));
    it_resp_free(&r);
    n += (size_t)snprintf(truth + n, sizeof(truth) - n, "id,label\n");
    for (int i = 0; i < 60; i++)
        n += (size_t)snprintf(truth + n, sizeof(truth) - n, "%d,%s\n", i, i == 7 ? CANARY : i % 3 ? "cat" : "dog");
    csvh[0] = "Content-Type: text/csv";
    csvh[1] = host.cookie;
    csvh[2] = host.csrf;
    csvh[3] = NULL;
    snprintf(path, sizeof(path), "/api/v1/competitions/%s/truth", cid);
    ck_assert_int_eq(it_request_status(&srv, "PUT", path, truth, csvh), 200);
    snprintf(path, sizeof(path), "/api/v1/competitions/%s", cid);
    snprintf(body, sizeof(body), "{\"start_at\":\"%s\"}", at(s, sizeof(s), 300));
    ck_assert_int_eq(it_request_status(&srv, "PUT", path, body, host.hdrs), 200);

    ck_assert_int_eq(it_project_make(pid, sizeof(pid), &srv, alice.hdrs, "pets-code", "solve.py", SOLVE_PY), 0);
    snprintf(path, sizeof(path), "/api/v1/projects/%s/files/crash.py", pid);
    ck_assert_int_eq(it_request_status(&srv, "PUT", path, CRASH_PY, alice.hdrs), 201);
    snprintf(path, sizeof(path), "/api/v1/projects/%s/files/nothing.py", pid);
    ck_assert_int_eq(it_request_status(&srv, "PUT", path, NOTHING_PY, alice.hdrs), 201);
    ck_assert_int_eq(it_version_make(vid, sizeof(vid), &srv, alice.hdrs, pid, "entries"), 0);
    snprintf(path, sizeof(path), "/api/v1/competitions/%s/accept-rules", cid);
    ck_assert_int_eq(it_request_status(&srv, "POST", path, NULL, alice.hdrs), 200);
    for (int i = 0; i < 50; i++) {
        bool active;
        snprintf(path, sizeof(path), "/api/v1/competitions/%s", cid);
        j = it_get_json(&srv, alice.hdrs, path);
        active = strcmp(it_json_str(j, "phase"), "active") == 0;
        json_decref(j);
        if (active)
            break;
        usleep(50000);
    }
    before = balance(&alice);

    /* an entry the version does not have: 422 at once */
    snprintf(body, sizeof(body), "{\"project_id\":\"%s\",\"version\":\"%s\",\"entry\":\"missing.py\"}", pid, vid);
    ck_assert_int_eq(post(&r, &alice, cid, body), 422);
    it_resp_free(&r);
    for (int k = 0; k < 3; k++) {
        snprintf(body, sizeof(body), "{\"project_id\":\"%s\",\"version\":\"%s\",\"entry\":\"%s\"}", pid, vid, entries[k]);
        ck_assert_int_eq(post(&r, &alice, cid, body), 201);
        ck_assert_str_eq(it_json_str(r.json, "kind"), "code");
        snprintf(sid, sizeof(sid), "%s", it_json_str(r.json, "id"));
        it_resp_free(&r);
        j = final_of(&alice, cid, sid);
        ck_assert_msg(strcmp(it_json_str(j, "status"), want[k]) == 0, "%s: %s", entries[k], it_json_str(j, "status"));
        if (k == 0) {
            ck_assert(json_real_value(json_object_get(j, "public_score")) > 0.9);
        } else {
            json_t *err = json_object_get(j, "error");
            ck_assert_str_eq(it_json_str(err, "class"), cls[k]);
            ck_assert(json_is_false(json_object_get(j, "counted")));
            if (k == 1)
                ck_assert_ptr_nonnull(strstr(it_json_str(err, "log_tail"), "model exploded"));
            ck_assert_ptr_null(strstr(json_dumps(j, 0), CANARY));
        }
        json_decref(j);
    }
    /* a free competition: each run's charge is given back */
    ck_assert_int_eq(balance(&alice), before);
}
END_TEST

int main(void)
{
    const TTest *tests[] = {submit_from_a_job, code_submissions, NULL};

    if (geteuid() != 0) {
        printf("SKIP: jobs need the sandbox, which needs root here\n");
        return 77;
    }
    return it_tests_run("competitions_job", 240, setup, teardown, tests);
}
