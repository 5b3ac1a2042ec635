/*
 * test_cgroup_live - sbx_cgroup_parse and sbx_cgroup_live: each cgroup
 * file's text (v2 and v1, limits written as "max" or v1's page-rounded
 * 2^63, malformed text left alone), a v2 job directory made of plain files,
 * what an absent or degraded cgroup answers, and a real sandboxed busy loop
 * read while it runs (root with user namespaces and a cgroup hierarchy, as
 * CI has; skipped with the reason otherwise).
 */
#include "ed_error.h"
#include "sbx.h"

#include <check.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static sbx_live blank(void)
{
    sbx_live l = {-1, -1, -1, -1, -1};
    return l;
}

START_TEST(cpu_stat_gives_usage_usec)
{
    sbx_live l = blank();
    ck_assert_int_eq(sbx_cgroup_parse(&l, "cpu.stat",
                                      "usage_usec 1234567\nuser_usec 1000000\nsystem_usec 234567\n"
                                      "nr_periods 0\n"), 0);
    ck_assert_int_eq(l.cpu_usec, 1234567);
    /* a key that only starts like it is not it */
    l = blank();
    ck_assert_int_eq(sbx_cgroup_parse(&l, "cpu.stat", "usage_usecs 5\n"), ED_EINVAL);
    ck_assert_int_eq(l.cpu_usec, -1);
    ck_assert_int_eq(sbx_cgroup_parse(&l, "cpu.stat", "user_usec 5\nusage_usec x\n"), ED_EINVAL);
    ck_assert_int_eq(l.cpu_usec, -1);
}
END_TEST

START_TEST(cpuacct_usage_is_nanoseconds)
{
    sbx_live l = blank();
    ck_assert_int_eq(sbx_cgroup_parse(&l, "cpuacct.usage", "2500000999\n"), 0);
    ck_assert_int_eq(l.cpu_usec, 2500000);
    ck_assert_int_eq(sbx_cgroup_parse(&l, "cpuacct.usage", "-3\n"), ED_EINVAL);
    ck_assert_int_eq(l.cpu_usec, 2500000);
}
END_TEST

START_TEST(memory_counts_and_limits)
{
    sbx_live l = blank();
    ck_assert_int_eq(sbx_cgroup_parse(&l, "memory.current", "219230208\n"), 0);
    ck_assert_int_eq(l.mem_bytes, 219230208);
    ck_assert_int_eq(sbx_cgroup_parse(&l, "memory.usage_in_bytes", "4096\n"), 0);
    ck_assert_int_eq(l.mem_bytes, 4096);
    ck_assert_int_eq(sbx_cgroup_parse(&l, "memory.peak", "300000000\n"), 0);
    ck_assert_int_eq(l.mem_peak_bytes, 300000000);
    ck_assert_int_eq(sbx_cgroup_parse(&l, "memory.max_usage_in_bytes", "8192\n"), 0);
    ck_assert_int_eq(l.mem_peak_bytes, 8192);
    ck_assert_int_eq(sbx_cgroup_parse(&l, "memory.max", "4294967296\n"), 0);
    ck_assert_int_eq(l.mem_limit_bytes, 4294967296LL);
    ck_assert_int_eq(sbx_cgroup_parse(&l, "memory.max", "max\n"), 0);
    ck_assert_int_eq(l.mem_limit_bytes, -1);
    ck_assert_int_eq(sbx_cgroup_parse(&l, "memory.limit_in_bytes", "2147483648\n"), 0);
    ck_assert_int_eq(l.mem_limit_bytes, 2147483648LL);
    /* v1's "no limit" */
    ck_assert_int_eq(sbx_cgroup_parse(&l, "memory.limit_in_bytes", "9223372036854771712\n"), 0);
    ck_assert_int_eq(l.mem_limit_bytes, -1);
    ck_assert_int_eq(sbx_cgroup_parse(&l, "memory.current", "12 kB\n"), ED_EINVAL);
    ck_assert_int_eq(sbx_cgroup_parse(&l, "memory.current", ""), ED_EINVAL);
    ck_assert_int_eq(sbx_cgroup_parse(&l, "memory.max", "maximum\n"), ED_EINVAL);
    ck_assert_int_eq(l.mem_bytes, 4096);
}
END_TEST

START_TEST(cpu_max_is_thousandths_of_a_cpu)
{
    sbx_live l = blank();
    ck_assert_int_eq(sbx_cgroup_parse(&l, "cpu.max", "200000 100000\n"), 0);
    ck_assert_int_eq(l.cpu_limit_millis, 2000);
    ck_assert_int_eq(sbx_cgroup_parse(&l, "cpu.max", "50000 100000\n"), 0);
    ck_assert_int_eq(l.cpu_limit_millis, 500);
    ck_assert_int_eq(sbx_cgroup_parse(&l, "cpu.max", "max 100000\n"), 0);
    ck_assert_int_eq(l.cpu_limit_millis, -1);
    l.cpu_limit_millis = 7;
    ck_assert_int_eq(sbx_cgroup_parse(&l, "cpu.max", "100000\n"), ED_EINVAL);
    ck_assert_int_eq(sbx_cgroup_parse(&l, "cpu.max", "100000 0\n"), ED_EINVAL);
    ck_assert_int_eq(sbx_cgroup_parse(&l, "cpu.max", "-1 100000\n"), ED_EINVAL);
    ck_assert_int_eq(l.cpu_limit_millis, 7);
    ck_assert_int_eq(sbx_cgroup_parse(&l, "cpu.weight", "100\n"), ED_EINVAL);
}
END_TEST

static void put(const char *dir, const char *file, const char *text)
{
    char path[600];
    snprintf(path, sizeof(path), "%s/%s", dir, file);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    fclose(f);
}

START_TEST(a_v2_directory_is_read_whole)
{
    char dir[] = "/tmp/eddy-cglive-XXXXXX";
    sbx_live l;

    ck_assert_ptr_nonnull(mkdtemp(dir));
    put(dir, "cpu.stat", "usage_usec 777\nuser_usec 700\n");
    put(dir, "memory.current", "1048576\n");
    put(dir, "memory.max", "4294967296\n");
    put(dir, "cpu.max", "200000 100000\n");
    /* no memory.peak: a kernel before 5.19 */
    ck_assert_int_eq(sbx_cgroup_live(&l, dir), 0);
    ck_assert_int_eq(l.cpu_usec, 777);
    ck_assert_int_eq(l.mem_bytes, 1048576);
    ck_assert_int_eq(l.mem_limit_bytes, 4294967296LL);
    ck_assert_int_eq(l.mem_peak_bytes, -1);
    ck_assert_int_eq(l.cpu_limit_millis, 2000);
    put(dir, "memory.peak", "2097152\n");
    ck_assert_int_eq(sbx_cgroup_live(&l, dir), 0);
    ck_assert_int_eq(l.mem_peak_bytes, 2097152);
    char cmd[300];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    ck_assert_int_eq(system(cmd), 0);
    /* gone: the job ended */
    ck_assert_int_eq(sbx_cgroup_live(&l, dir), ED_ENOTFOUND);
    ck_assert_int_eq(l.cpu_usec, -1);
    ck_assert_int_eq(l.mem_bytes, -1);
}
END_TEST

START_TEST(no_cgroup_is_not_found_and_relative_is_refused)
{
    sbx_live l;
    ck_assert_int_eq(sbx_cgroup_live(&l, ""), ED_ENOTFOUND);
    ck_assert_int_eq(l.cpu_usec, -1);
    ck_assert_int_eq(l.cpu_limit_millis, -1);
    ck_assert_int_eq(sbx_cgroup_live(&l, NULL), ED_ENOTFOUND);
    ck_assert_int_eq(sbx_cgroup_live(&l, "sys/fs/cgroup"), ED_EINVAL);
    /* a directory that is no job's cgroup */
    ck_assert_int_eq(sbx_cgroup_live(&l, "/tmp"), ED_ENOTFOUND);
}
END_TEST

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* A sandboxed busy loop, read while it runs: CPU time grows by about the
 * wall time, the limits are the spec's. */
START_TEST(a_running_jobs_cgroup_is_read_live)
{
    char *argv[] = {"/bin/sh", "-c", "while :; do :; done", NULL};
    sbx_spec s;
    sbx_job *j;
    sbx_live a, b;
    sbx_usage u;
    int err;

    if (geteuid() != 0)
        return;   /* main() says so */
    sbx_spec_init(&s);
    s.argv = argv;
    s.host_uid = s.host_gid = 202100;
    s.stdio[0] = s.stdio[1] = s.stdio[2] = -1;
    s.wall_ms = 30000;
    s.mem_bytes = 128 << 20;
    s.cpu_millis = 1500;
    s.pids = 64;
    ck_assert_msg((err = sbx_launch(&j, &s)) == 0, "%s", ed_error_last());
    ck_assert_int_eq(sbx_cgroup_live(&a, sbx_job_cgroup(j)), 0);
    sleep_ms(1000);
    ck_assert_int_eq(sbx_cgroup_live(&b, sbx_job_cgroup(j)), 0);
    fprintf(stderr, "live: cpu %lld -> %lld usec, memory %lld of %lld, peak %lld, cpu limit %d\n",
            (long long)a.cpu_usec, (long long)b.cpu_usec, (long long)b.mem_bytes, (long long)b.mem_limit_bytes,
            (long long)b.mem_peak_bytes, b.cpu_limit_millis);
    ck_assert_int_ge(a.cpu_usec, 0);
    ck_assert_int_gt(b.cpu_usec - a.cpu_usec, 300000);   /* a spinning shell: most of a second */
    ck_assert_int_gt(b.mem_bytes, 0);
    ck_assert_int_eq(b.mem_limit_bytes, 128 << 20);
    ck_assert_int_eq(b.cpu_limit_millis, 1500);
    /* the figure for the README: what one reading costs (no assertion on it) */
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int i = 0; i < 1000; i++)
        ck_assert_int_eq(sbx_cgroup_live(&b, sbx_job_cgroup(j)), 0);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    fprintf(stderr, "one sbx_cgroup_live: %.1f us\n",
            ((t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec)) / 1000.0 / 1000.0);
    ck_assert_int_eq(sbx_job_kill(j), 0);
    sbx_job_wait(j, -1, &u);
    sbx_job_free(j);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("cgroup_live");
    TCase *t = tcase_create("parse");
    tcase_add_test(t, cpu_stat_gives_usage_usec);
    tcase_add_test(t, cpuacct_usage_is_nanoseconds);
    tcase_add_test(t, memory_counts_and_limits);
    tcase_add_test(t, cpu_max_is_thousandths_of_a_cpu);
    tcase_add_test(t, a_v2_directory_is_read_whole);
    tcase_add_test(t, no_cgroup_is_not_found_and_relative_is_refused);
    suite_add_tcase(s, t);
    TCase *l = tcase_create("live");
    tcase_set_timeout(l, 60);
    sbx_caps caps;
    if (geteuid() != 0)
        printf("SKIP: a_running_jobs_cgroup_is_read_live needs root\n");
    else if (sbx_check(&caps) < 0 || (!caps.cgroup_v2 && !caps.cgroup_v1))
        printf("SKIP: a_running_jobs_cgroup_is_read_live: no cgroup hierarchy (%s)\n", caps.detail);
    else
        tcase_add_test(l, a_running_jobs_cgroup_is_read_live);
    suite_add_tcase(s, l);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
