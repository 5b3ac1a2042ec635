/*
 * test_slurm.c - the Slurm executor against a real Slurm (label `slurm`).
 *
 * slurm_cluster.sh starts a one-node cluster of the test's own (munged,
 * slurmctld, slurmd, slurmrestd on a unix socket, local auth) in a
 * temporary directory; `eddy serve` runs with EDDY_EXECUTOR=slurm against
 * it, and everything goes through Eddy's REST API: a job, a 2-task job (and
 * a failing rank), a cancel, an interactive kernel (its eddy-kernel dials
 * back; 1+1; stopped, its Slurm job ends), a node failure (slurmd killed: Slurm ends the
 * job NODE_FAIL, Eddy fails it platform_error and refunds it) and a restart
 * of Eddy while a job runs (re-attached, it finishes). The cluster is
 * stopped at the end. Exit 77 (a skip) where the host cannot run Slurm
 * (no binaries, not root): the script says why.
 */
#include "harness.h"

#include <check.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char cluster[128];              /* the cluster's directory */
static char script[512];               /* slurm_cluster.sh */
static char url_env[200], part_env[] = "EDDY_SLURM_PARTITIONS=cpu-basic=eddy";
static const char *env[] = {"EDDY_EXECUTOR=slurm", url_env, part_env, "EDDY_METER_INTERVAL_MS=1000",
                            "EDDY_OOF_GRACE_MS=1000", "EDDY_STOP_GRACE_MS=1000", NULL};

static it_server srv;
static char dir[256], admin_cookie[600], admin_csrf[300];
static it_user u;
static char pid[64];

/* Prints its rank's view of the world; "fail" makes rank 1 exit 3, "sleep N"
 * sleeps N s between "started" and "done". */
static const char TRAIN_PY[] =
    "import os, sys, time\n"
    "rank = os.environ.get('PADDLE_TRAINER_ID', '-')\n"
    "print('started rank', rank, 'of', os.environ.get('PADDLE_TRAINERS_NUM', '-'), 'slurm', "
    "os.environ.get('SLURM_JOB_ID'), 'endpoints', os.environ.get('PADDLE_TRAINER_ENDPOINTS', '-'), flush=True)\n"
    "print('args', sys.argv[1:], flush=True)\n"
    "if 'fail' in sys.argv and rank == '1':\n"
    "    sys.exit(3)\n"
    "if 'sleep' in sys.argv:\n"
    "    time.sleep(float(sys.argv[sys.argv.index('sleep') + 1]))\n"
    "open(os.path.join(os.environ['EDDY_OUTPUT_DIR'], 'out-%s.txt' % rank), 'w').write('ok')\n"
    "print('done rank', rank, flush=True)\n";

static int cluster_cmd(const char *what)
{
    char cmd[800];
    int rc;

    if (strncmp(what, "start ", 6) == 0)
        snprintf(cmd, sizeof(cmd), "'%s' %s", script, what);     /* start 'DIR' 'USER' */
    else
        snprintf(cmd, sizeof(cmd), "'%s' %s '%s'", script, what, cluster);
    rc = system(cmd);
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

static void admin_put(const char *path, const char *body)
{
    const char *ah[] = {admin_cookie, admin_csrf, NULL};
    it_resp r;
    it_request(&r, &srv, "PUT", path, body, ah);
    ck_assert_msg(r.status == 200, "PUT %s: %ld %s", path, r.status, r.body);
    it_resp_free(&r);
}

static void setup(void)
{
    ck_assert_int_eq(it_admin_server_start(&srv, dir, sizeof(dir), "slurm", env, admin_cookie, sizeof(admin_cookie),
                                           admin_csrf, sizeof(admin_csrf)),
                     0);
    /* a rank of cpu-basic fits the test's node: 1 CPU, 100 MB */
    admin_put("/api/v1/admin/resources/cpu-basic", "{\"cpus\": 1, \"memory_mb\": 100}");
    /* paid time (100 mcoins a second, no free allowance): charges and refunds show */
    admin_put("/api/v1/admin/resources/cpu-basic", "{\"price_mcoins_per_hour\": 360000}");
    admin_put("/api/v1/admin/tiers/free", "{\"free_ms_per_day\": {\"cpu-basic\": 0}}");
    ck_assert_int_eq(it_user_make(&u, &srv, admin_cookie, admin_csrf, "alice", 1000000), 0);
    ck_assert_int_eq(it_project_make(pid, sizeof(pid), &srv, u.hdrs, "dist", "train.py", TRAIN_PY), 0);
}

static void teardown(void)
{
    ck_assert_int_eq(it_server_stop(&srv), 0);
    ck_assert_int_eq(it_dir_remove(dir), 0);
}

static int64_t submit(const char *extra, const char *args)
{
    char body[1024];
    it_resp r;
    int64_t id;

    snprintf(body, sizeof(body),
             "{\"project_id\":\"%s\",\"entry\":\"train.py\",\"args\":%s,\"resource\":\"cpu-basic\","
             "\"max_runtime_s\":300%s}", pid, args, extra);
    it_request(&r, &srv, "POST", "/api/v1/jobs", body, u.hdrs);
    ck_assert_msg(r.status == 201, "submit: %ld %s", r.status, r.body);
    id = json_integer_value(json_object_get(r.json, "id"));
    it_resp_free(&r);
    return id;
}

static json_t *job(int64_t id)
{
    char path[64];
    json_t *j;

    snprintf(path, sizeof(path), "/api/v1/jobs/%lld", (long long)id);
    j = it_get_json(&srv, u.hdrs, path);
    ck_assert_ptr_nonnull(j);
    return j;
}

static const char *jstr(json_t *o, const char *k)
{
    const char *v = json_string_value(json_object_get(o, k));
    return v ? v : "";
}

/* The job's log (plain text) into buf. */
static void job_log(char *buf, size_t n, int64_t id)
{
    char path[80];
    it_resp r;

    snprintf(path, sizeof(path), "/api/v1/jobs/%lld/logs?offset=0", (long long)id);
    it_request(&r, &srv, "GET", path, NULL, u.hdrs);
    snprintf(buf, n, "%s", r.status == 200 && r.body ? r.body : "");
    it_resp_free(&r);
}

static bool ended(const char *st)
{
    return strcmp(st, "succeeded") == 0 || strcmp(st, "failed") == 0 || strcmp(st, "cancelled") == 0 ||
           strcmp(st, "preempted") == 0;
}

/* Wait (at most `s` seconds) until the job has ended; its JSON. */
static json_t *wait_end(int64_t id, int s)
{
    for (int i = 0; i < s * 10; i++) {
        json_t *j = job(id);
        if (ended(jstr(j, "status")))
            return j;
        json_decref(j);
        usleep(100000);
    }
    ck_abort_msg("job %lld did not end within %d s", (long long)id, s);
    return NULL;
}

/* Wait until the job's log holds `text`. */
static void wait_log(int64_t id, const char *text, int s)
{
    static char log[65536];
    for (int i = 0; i < s * 10; i++) {
        job_log(log, sizeof(log), id);
        if (strstr(log, text))
            return;
        usleep(100000);
    }
    ck_abort_msg("job %lld's log never showed '%s':\n%s", (long long)id, text, log);
}

START_TEST(a_job_runs_on_slurm)
{
    static char log[65536];
    int64_t id = submit("", "[\"--lr\", \"it's 0.1\"]");
    json_t *j = wait_end(id, 60);

    job_log(log, sizeof(log), id);
    ck_assert_msg(strcmp(jstr(j, "status"), "succeeded") == 0, "%s %s\n%s", jstr(j, "status"),
                  jstr(j, "failure_reason"), log);
    ck_assert_int_eq(json_integer_value(json_object_get(j, "exit_code")), 0);
    ck_assert_str_eq(jstr(j, "executor"), "slurm");
    ck_assert_str_ne(jstr(j, "executor_ref"), "");
    ck_assert_int_eq(json_integer_value(json_object_get(j, "ranks")), 1);
    /* one rank: Slurm's own environment, arguments passed through quoting */
    ck_assert_ptr_nonnull(strstr(log, "submitted to Slurm as job"));
    ck_assert_ptr_nonnull(strstr(log, "args ['--lr', \"it's 0.1\"]"));
    ck_assert_ptr_nonnull(strstr(log, "done rank"));
    json_decref(j);
}
END_TEST

START_TEST(a_two_task_job_and_a_failing_rank)
{
    static char log[65536];
    int64_t id = submit(",\"ranks\":2", "[]"), bad;
    json_t *j = wait_end(id, 60);

    job_log(log, sizeof(log), id);
    ck_assert_msg(strcmp(jstr(j, "status"), "succeeded") == 0, "%s\n%s", jstr(j, "status"), log);
    ck_assert_int_eq(json_integer_value(json_object_get(j, "ranks")), 2);
    /* one Slurm task per rank, each line marked with its rank, Paddle's
     * environment derived from Slurm's */
    ck_assert_msg(strstr(log, "[rank 0] started rank 0 of 2") && strstr(log, "[rank 1] started rank 1 of 2"), "%s", log);
    ck_assert_ptr_nonnull(strstr(log, "[rank 1] done rank 1"));
    ck_assert_int_gt(json_integer_value(json_object_get(j, "charged_mcoins")), 0);
    json_decref(j);

    /* rank 1 exits 3: the other is stopped, the job fails as rank 1 did */
    bad = submit(",\"ranks\":2", "[\"fail\", \"sleep\", \"30\"]");
    j = wait_end(bad, 60);
    job_log(log, sizeof(log), bad);
    ck_assert_msg(strcmp(jstr(j, "status"), "failed") == 0, "%s\n%s", jstr(j, "status"), log);
    ck_assert_str_eq(jstr(j, "failure_reason"), "user_error");
    ck_assert_int_eq(json_integer_value(json_object_get(j, "exit_code")), 3);
    ck_assert_msg(strstr(log, "[eddy] rank 1 exited with status 3"), "%s", log);
    ck_assert_ptr_null(strstr(log, "done rank 0"));
    json_decref(j);
}
END_TEST

START_TEST(a_cancel_reaches_slurm)
{
    char path[64], cmd[400];
    it_resp r;
    int64_t id = submit("", "[\"sleep\", \"120\"]");
    json_t *j;
    FILE *p;
    char out[256] = "";

    wait_log(id, "started rank", 60);
    snprintf(path, sizeof(path), "/api/v1/jobs/%lld", (long long)id);
    it_request(&r, &srv, "DELETE", path, NULL, u.hdrs);
    ck_assert_msg(r.status == 200 || r.status == 202, "cancel: %ld %s", r.status, r.body);
    it_resp_free(&r);
    j = wait_end(id, 30);
    ck_assert_str_eq(jstr(j, "status"), "cancelled");
    ck_assert_str_eq(jstr(j, "failure_reason"), "cancelled");
    /* Slurm agrees: the job is no longer running there */
    snprintf(cmd, sizeof(cmd), "SLURM_CONF='%s/slurm.conf' squeue -h -j '%s' -o %%T 2>/dev/null", cluster,
             jstr(j, "executor_ref"));
    for (int i = 0; i < 50; i++) {
        out[0] = '\0';
        if ((p = popen(cmd, "r")) != NULL) {
            if (fgets(out, sizeof(out), p) == NULL)
                out[0] = '\0';
            pclose(p);
        }
        if (strncmp(out, "RUNNING", 7) != 0)
            break;
        usleep(100000);
    }
    ck_assert_msg(strncmp(out, "RUNNING", 7) != 0, "Slurm still runs job %s", jstr(j, "executor_ref"));
    json_decref(j);
}
END_TEST

START_TEST(a_node_failure_is_a_platform_error_and_refunded)
{
    static char log[65536];
    int64_t id = submit("", "[\"sleep\", \"120\"]");
    json_t *j;

    wait_log(id, "started rank", 60);
    /* slurmd dies under the job: Slurm 22.05 ends the batch job and
     * requeues it (restart_cnt 1, "requeue per user/system request") even
     * though Eddy submits requeue false; later releases may end it
     * NODE_FAIL. Either way this attempt failed because of the platform:
     * failed, platform_error, refunded, and the requeued copy cancelled. */
    ck_assert_int_eq(cluster_cmd("stop-slurmd"), 0);
    j = wait_end(id, 90);
    job_log(log, sizeof(log), id);
    ck_assert_int_eq(cluster_cmd("start-slurmd"), 0);
    ck_assert_msg(strcmp(jstr(j, "status"), "failed") == 0, "%s\n%s", jstr(j, "status"), log);
    ck_assert_str_eq(jstr(j, "failure_reason"), "platform_error");
    ck_assert_int_eq(json_integer_value(json_object_get(j, "charged_mcoins")), 0);   /* refunded */
    ck_assert_msg(strstr(log, "NODE_FAIL") || strstr(log, "after a node failure"), "%s", log);
    ck_assert_ptr_nonnull(strstr(log, "refunded"));
    json_decref(j);
    /* the node comes back (ReturnToService=2) for the tests after this one */
    for (int i = 0; i < 300; i++) {
        char cmd[300], st[64] = "";
        FILE *p;
        snprintf(cmd, sizeof(cmd), "SLURM_CONF='%s/slurm.conf' sinfo -h -o %%t 2>/dev/null", cluster);
        if ((p = popen(cmd, "r")) != NULL) {
            if (fgets(st, sizeof(st), p) == NULL)
                st[0] = '\0';
            pclose(p);
        }
        if (strncmp(st, "idle", 4) == 0)
            break;
        usleep(100000);
    }
}
END_TEST

START_TEST(a_restarted_server_reattaches_and_the_job_finishes)
{
    static char log[65536];
    char data[300];
    int64_t id = submit("", "[\"sleep\", \"6\"]");
    json_t *j;

    wait_log(id, "started rank", 60);
    /* Eddy stops while the job runs on the cluster, and comes back */
    srv.keep_data = 1;
    ck_assert_int_eq(it_server_stop(&srv), 0);
    snprintf(data, sizeof(data), "%s/data", dir);
    ck_assert_int_eq(it_server_start_in(&srv, data, env), 0);
    ck_assert_int_eq(it_login(&srv, u.name, u.pw, u.cookie, sizeof(u.cookie), u.csrf, sizeof(u.csrf)), 0);
    j = job(id);
    ck_assert_msg(strcmp(jstr(j, "status"), "running") == 0 || strcmp(jstr(j, "status"), "succeeded") == 0,
                  "after the restart: %s %s", jstr(j, "status"), jstr(j, "failure_reason"));
    json_decref(j);
    j = wait_end(id, 60);
    job_log(log, sizeof(log), id);
    ck_assert_msg(strcmp(jstr(j, "status"), "succeeded") == 0, "%s %s\n%s", jstr(j, "status"),
                  jstr(j, "failure_reason"), log);
    ck_assert_msg(strstr(log, "re-attached to slurm job"), "%s", log);
    ck_assert_ptr_nonnull(strstr(log, "done rank"));
    ck_assert_int_gt(json_integer_value(json_object_get(j, "charged_mcoins")), 0);   /* metered across the restart */
    json_decref(j);
}
END_TEST

/* squeue's answer for `args` (first line), "" when none. */
static void squeue(char *out, size_t n, const char *args)
{
    char cmd[400];
    FILE *p;

    out[0] = '\0';
    snprintf(cmd, sizeof(cmd), "SLURM_CONF='%s/slurm.conf' squeue -h %s 2>/dev/null", cluster, args);
    if ((p = popen(cmd, "r")) != NULL) {
        if (fgets(out, (int)n, p) == NULL)
            out[0] = '\0';
        pclose(p);
    }
    out[strcspn(out, "\n")] = '\0';
}

START_TEST(a_kernel_runs_on_slurm_and_dials_back)
{
    char kid[64], path[96], sid[32] = "", st[64] = "", args[96], msg[80], want[96];
    const char *got = NULL;
    it_resp r;
    json_t *k, *ev;

    /* the kernel is a Slurm job whose eddy-kernel connects back to the server */
    it_ck_kernel_start(kid, sizeof(kid), &srv, u.hdrs, pid);
    squeue(sid, sizeof(sid), "-t RUNNING -o %i");
    ck_assert_msg(sid[0] != '\0', "no running Slurm job for the kernel");
    /* 1+1 there, with Slurm's environment and without the token */
    ck_assert_int_eq(it_kernel_execute(msg, sizeof(msg), &srv, u.hdrs, kid,
                                       "import os\n(1 + 1, os.environ.get('SLURM_JOB_ID'), "
                                       "'EDDY_KERNEL_TOKEN' in os.environ)",
                                       NULL),
                     0);
    ev = it_kernel_events(&srv, u.hdrs, kid, 0, msg, IT_EV_IDLE, 60, NULL);
    ck_assert_ptr_nonnull(ev);
    for (size_t i = 0; i < json_array_size(ev); i++) {
        json_t *m = json_array_get(ev, i);
        if (strcmp(it_msg_type(m), "execute_result") == 0 && strcmp(it_msg_parent(m), msg) == 0)
            got = json_string_value(
                json_object_get(json_object_get(json_object_get(m, "content"), "data"), "text/plain"));
    }
    snprintf(want, sizeof(want), "(2, '%s', False)", sid);
    ck_assert_msg(got && strcmp(got, want) == 0, "the cell gave %s, not %s", got ? got : "nothing", want);
    json_decref(ev);

    /* stopped through Eddy: the kernel ends and so does its Slurm job */
    snprintf(path, sizeof(path), "/api/v1/kernels/%s", kid);
    it_request(&r, &srv, "DELETE", path, NULL, u.hdrs);
    ck_assert_msg(r.status == 200 || r.status == 202 || r.status == 204, "stop: %ld %s", r.status, r.body);
    it_resp_free(&r);
    k = it_kernel_wait(&srv, u.hdrs, kid, "dead", 30);
    ck_assert_ptr_nonnull(k);
    json_decref(k);
    snprintf(args, sizeof(args), "-t all -j '%s' -o %%T", sid);
    for (int i = 0; i < 100; i++) {
        squeue(st, sizeof(st), args);
        if (strcmp(st, "RUNNING") != 0 && strcmp(st, "PENDING") != 0 && strcmp(st, "COMPLETING") != 0)
            break;
        usleep(100000);
    }
    ck_assert_msg(strcmp(st, "RUNNING") != 0 && strcmp(st, "PENDING") != 0 && strcmp(st, "COMPLETING") != 0,
                  "Slurm job %s of the stopped kernel is still %s", sid, st);
}
END_TEST

int main(void)
{
    char start[400];
    int failed, rc;
    SRunner *sr;
    Suite *s = suite_create("slurm");
    TCase *tc = tcase_create("slurm");

    /* the script sits next to this test's source; CMake passes its path */
    snprintf(script, sizeof(script), "%s", SLURM_CLUSTER_SH);
    snprintf(cluster, sizeof(cluster), "/tmp/eddy-slurm-XXXXXX");
    if (mkdtemp(cluster) == NULL) {
        perror("mkdtemp");
        return 1;
    }
    /* slurmrestd's local auth takes clients of its own uid only: it runs as
     * the user eddy serve works as (harness: EDDY_USER, default eddy, root
     * where that user cannot reach this checkout) */
    snprintf(start, sizeof(start), "start '%s' '%s'", cluster,
             it_serve_user_reaches_checkout() < 0 ? "root" : getenv("EDDY_USER") ? getenv("EDDY_USER") : "eddy");
    if ((rc = cluster_cmd(start)) != 0) {
        cluster_cmd("stop");
        it_dir_remove(cluster);
        return rc == 77 ? 77 : 1;
    }
    snprintf(url_env, sizeof(url_env), "EDDY_SLURM_URL=unix:%s/rest/sock", cluster);
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 150);
    tcase_add_test(tc, a_job_runs_on_slurm);
    tcase_add_test(tc, a_two_task_job_and_a_failing_rank);
    tcase_add_test(tc, a_cancel_reaches_slurm);
    tcase_add_test(tc, a_kernel_runs_on_slurm_and_dials_back);
    tcase_add_test(tc, a_node_failure_is_a_platform_error_and_refunded);
    tcase_add_test(tc, a_restarted_server_reattaches_and_the_job_finishes);
    suite_add_tcase(s, tc);
    sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    cluster_cmd("stop");
    it_dir_remove(cluster);
    return failed == 0 ? 0 : 1;
}
