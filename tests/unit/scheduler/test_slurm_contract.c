/* test_slurm_contract.c - slurm_api.c against slurmrestd's answers recorded
 * from a real slurmrestd 22.05 (slurm_fixtures/), per API version: the
 * request the executor sends equals the recorded one the server accepted,
 * and the recorded answers parse to the right job states and outcomes. */
#include "slurm_api.h"

#include "ed_error.h"

#include <check.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *slurp(const char *name, size_t *len)
{
    char path[600];
    FILE *f;
    static char buf[1 << 16];
    snprintf(path, sizeof(path), "%s/%s", FIXTURES, name);
    ck_assert_msg((f = fopen(path, "r")) != NULL, "%s", path);
    *len = fread(buf, 1, sizeof(buf) - 1, f);
    buf[*len] = '\0';
    fclose(f);
    return buf;
}

static const char *const vers[] = {"v0.0.38", "v0.0.37"};

START_TEST(picks_the_newest_offered_version)
{
    size_t n;
    char *t = slurp("openapi_v3_paths.json", &n), v[16];
    ck_assert_int_eq(sched__slurm_pick(v, sizeof(v), t, n, NULL), 0);
    ck_assert_str_eq(v, "v0.0.38");
    ck_assert_int_eq(sched__slurm_pick(v, sizeof(v), t, n, "v0.0.37"), 0);
    ck_assert_str_eq(v, "v0.0.37");
    ck_assert_int_eq(sched__slurm_pick(v, sizeof(v), t, n, "v0.0.40"), ED_EUNPROC);
    ck_assert_int_eq(sched__slurm_pick(v, sizeof(v), "{}", 2, NULL), ED_EINVAL);
}
END_TEST

START_TEST(request_and_answers_per_version)
{
    const char *ver = vers[_i];
    char name[64], *t, *body;
    size_t n;
    json_t *rec, *mine, *job;
    sched__slurm_job j;
    sched__outcome o;
    int64_t id;

    /* the request: the same as the recorded one the server accepted */
    snprintf(name, sizeof(name), "%s_submit_request.json", ver);
    t = slurp(name, &n);
    ck_assert_ptr_nonnull(rec = json_loads(t, 0, NULL));
    job = json_object_get(rec, "job");
    const char *env[] = {"EDDY_JOB_ID=7", "PATH=/usr/bin:/bin", NULL};
    sched__slurm_req q = {.name = "eddy-7", .partition = "eddy", .qos = "",
                          .cwd = json_string_value(json_object_get(job, "current_working_directory")),
                          .output = json_string_value(json_object_get(job, "standard_output")),
                          .script = json_string_value(json_object_get(rec, "script")), .env = env, .tasks = 1,
                          .nodes = 1, .cpus_per_task = 1, .gpus_per_node = 0, .memory_per_node_mb = 100,
                          .time_limit_min = 3};
    ck_assert_ptr_nonnull(body = sched__slurm_submit_body(ver, &q));
    ck_assert_ptr_nonnull(mine = json_loads(body, 0, NULL));
    ck_assert_msg(json_equal(mine, rec), "%s: sent %s", ver, body);
    free(body);
    json_decref(mine);
    json_decref(rec);

    snprintf(name, sizeof(name), "%s_submit_response.json", ver);
    t = slurp(name, &n);
    ck_assert_int_eq(sched__slurm_parse_submit(&id, ver, t, n), 0);
    ck_assert_int_gt(id, 0);
    snprintf(name, sizeof(name), "%s_submit_refused.json", ver);
    t = slurp(name, &n);
    ck_assert_int_eq(sched__slurm_parse_submit(&id, ver, t, n), ED_EIO);
    ck_assert_ptr_nonnull(strstr(ed_error_last(), "Invalid partition"));

    snprintf(name, sizeof(name), "%s_job_running.json", ver);
    t = slurp(name, &n);
    ck_assert_int_eq(sched__slurm_parse_job(&j, ver, t, n), 0);
    ck_assert_str_eq(j.state, "RUNNING");
    ck_assert_int_eq(sched__slurm_outcome(&o, &j), 0);

    snprintf(name, sizeof(name), "%s_job_failed_exit3.json", ver);
    t = slurp(name, &n);
    ck_assert_int_eq(sched__slurm_parse_job(&j, ver, t, n), 0);
    ck_assert_str_eq(j.state, "FAILED");
    ck_assert_int_eq(sched__slurm_outcome(&o, &j), 1);
    ck_assert(o.exited);
    ck_assert_int_eq(o.exit_code, 3);
    ck_assert_ptr_null(o.reason);

    snprintf(name, sizeof(name), "%s_job_cancelled.json", ver);
    t = slurp(name, &n);
    ck_assert_int_eq(sched__slurm_parse_job(&j, ver, t, n), 0);
    ck_assert_str_eq(j.state, "CANCELLED");
    ck_assert_int_eq(sched__slurm_outcome(&o, &j), 1);
    ck_assert(!o.exited);
    ck_assert_int_ne(o.term_signal, 0);

    snprintf(name, sizeof(name), "%s_job_unknown.json", ver);
    t = slurp(name, &n);
    ck_assert_int_eq(sched__slurm_parse_job(&j, ver, t, n), ED_ENOTFOUND);

    /* states not recorded here: the mapping itself */
    j = (sched__slurm_job){.state = "NODE_FAIL"};
    ck_assert_int_eq(sched__slurm_outcome(&o, &j), 1);
    ck_assert_str_eq(o.reason, "platform_error");
    j = (sched__slurm_job){.state = "PREEMPTED"};
    sched__slurm_outcome(&o, &j);
    ck_assert_str_eq(o.reason, "preempted");
    j = (sched__slurm_job){.state = "PENDING", .restarts = 1};
    ck_assert_int_eq(sched__slurm_outcome(&o, &j), 1);
    ck_assert_str_eq(o.reason, "platform_error");
    j = (sched__slurm_job){.state = "TIMEOUT"};
    sched__slurm_outcome(&o, &j);
    ck_assert(o.wall);
}
END_TEST

START_TEST(shell_quoting)
{
    char out[64] = "x";
    ck_assert_int_eq(sched__sh_quote(out, sizeof(out), "it's"), 0);
    ck_assert_str_eq(out, "x'it'\\''s'");
    out[0] = '\0';
    ck_assert_int_eq(sched__sh_quote(out, 4, "long"), -1);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("slurm_contract");
    TCase *tc = tcase_create("contract");
    SRunner *sr;
    int failed;

    tcase_add_test(tc, picks_the_newest_offered_version);
    tcase_add_loop_test(tc, request_and_answers_per_version, 0, 2);
    tcase_add_test(tc, shell_quoting);
    suite_add_tcase(s, tc);
    sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
