/* Unit tests for the datasets a job mounts (scheduler/mounts.c) over a real
 * store and the real sandbox, with a resolver standing in for the
 * gateway's: paths made and collisions numbered, a hostile answer refused,
 * the record written at submit and replaced at start, the in-use question,
 * a dataset that became invisible failing the start with user_error, and a
 * job reading a read-only bind (writes: EROFS) with EDDY_DATASETS set. The
 * scheduler thread is off: each test drives sched_tick itself. */
#include "sched.h"
#include "sched_int.h"

#include "ed_error.h"
#include "ed_store.h"
#include "ed_time.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ledger_fixture.h"
#include "../support/unit_util.h"

static sched *s;
static sched_config cfg;

/* What the resolver answers: `answer` (n_answer of them), or `fail_with`. */
static sched_mount answer[24];
static size_t n_answer;
static int fail_with;
static int calls;

static int resolver(sched_mount **out, size_t *out_n, int64_t user_id, const char *project_id, void *arg)
{
    (void)user_id;
    (void)arg;
    calls++;
    if (strcmp(project_id, "p1") != 0)
        return 0;
    if (fail_with)
        return ed_error_set(fail_with, "dataset d1 attached to the project is gone or not visible to you");
    if (n_answer == 0)
        return 0;
    *out = calloc(n_answer, sizeof(**out));
    memcpy(*out, answer, n_answer * sizeof(**out));
    *out_n = n_answer;
    return 0;
}

static void set_mount(size_t i, const char *id, const char *name, int64_t version, const char *tree)
{
    memset(&answer[i], 0, sizeof(answer[i]));
    snprintf(answer[i].dataset_id, sizeof(answer[i].dataset_id), "%s", id);
    snprintf(answer[i].name, sizeof(answer[i].name), "%s", name);
    answer[i].version = version;
    snprintf(answer[i].tree, sizeof(answer[i].tree), "%s", tree);
}

static void setup(void)
{
    ledger_setup();
    ck_assert_int_eq(sched_config_defaults(&cfg, fixture_dir), 0);
    cfg.start_thread = false;
    cfg.stop_grace_ms = 1000;
    snprintf(cfg.slot_dir, sizeof(cfg.slot_dir), "/run/eddy-sandbox");
    snprintf(cfg.kernel_bin, sizeof(cfg.kernel_bin), "/nonexistent/eddy-kernel");   /* python3 runs .py */
    ck_assert_msg(sched_open(&s, st, &cfg) == 0, "%s", ed_error_last());
    sched_mounts_fn_set(s, resolver, NULL);
    n_answer = 0;
    fail_with = 0;
    calls = 0;
}

static void teardown(void)
{
    sched_close(s);
    s = NULL;
    ledger_teardown();
}

static const char *script_src;

static int write_script(const char *work, void *payload)
{
    char path[800];
    FILE *f;

    snprintf(path, sizeof(path), "%s/%s", work, (const char *)payload);
    if ((f = fopen(path, "w")) == NULL)
        return ed_error_set(ED_EIO, "write %s", path);
    fputs(script_src, f);
    fclose(f);
    return 0;
}

static sched_job_spec spec(int64_t user, const char *src)
{
    sched_job_spec sp = {.user_id = user, .tier = "free", .project_id = "p1", .entry = "train.py",
                         .resource = "cpu-basic", .max_runtime_ms = 60000, .prepare = write_script,
                         .payload = (void *)"train.py"};
    script_src = src;
    return sp;
}

static void wait_status(sched_job_info *j, int64_t id, const char *status, int64_t ms)
{
    int64_t end = ed_now_ms() + ms;
    do {
        ck_assert_int_eq(sched_tick(s), 0);
        ck_assert_int_eq(sched_job_get(j, s, 0, id), 0);
        if (strcmp(j->status, status) == 0)
            return;
        usleep(20000);
    } while (ed_now_ms() < end);
    ck_abort_msg("job %lld is %s, not %s", (long long)id, j->status, status);
}

static char *read_log(int64_t id)
{
    static char buf[8192];
    char path[200];
    FILE *f;
    size_t n;

    snprintf(path, sizeof(path), "%s/jobs/%lld/log", fixture_dir, (long long)id);
    buf[0] = '\0';
    if ((f = fopen(path, "r")) == NULL)
        return buf;
    n = fread(buf, 1, sizeof(buf) - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

START_TEST(paths_are_made_and_collisions_numbered)
{
    sched_mount *m = NULL;
    size_t n = 0;

    set_mount(0, "d1", "a-b/c", 1, "/srv/t/1");
    set_mount(1, "d2", "a/b-c", 2, "/srv/t/2");
    set_mount(2, "d3", "a/b-c2", 3, "/srv/t/3");
    set_mount(3, "d4", "bob/X.y_z", 4, "/srv/t/4");
    n_answer = 4;
    ck_assert_int_eq(sched__mounts_resolve(&m, &n, s, 1, "p1"), 0);
    ck_assert_uint_eq(n, 4);
    ck_assert_str_eq(m[0].path, "/home/aistudio/data/a-b-c");
    ck_assert_str_eq(m[1].path, "/home/aistudio/data/a-b-c-2");
    ck_assert_str_eq(m[2].path, "/home/aistudio/data/a-b-c2");
    ck_assert_str_eq(m[3].path, "/home/aistudio/data/bob-X.y_z");
    free(m);
    /* no project, or no resolver: nothing, without asking */
    calls = 0;
    ck_assert_int_eq(sched__mounts_resolve(&m, &n, s, 1, ""), 0);
    ck_assert_ptr_null(m);
    ck_assert_int_eq(calls, 0);
}
END_TEST

START_TEST(a_hostile_answer_is_refused)
{
    const char *bad_names[] = {"ab", "/x", "a/", "a/../b", "a/b/c", "a/.hidden", "a/b c", "a/b\n", ".a/b"};
    const char *bad_trees[] = {"relative/t", "/srv/../etc", "/srv/t/..", "/", ""};
    sched_mount *m = NULL;
    size_t n = 0;

    n_answer = 1;
    for (size_t i = 0; i < sizeof(bad_names) / sizeof(*bad_names); i++) {
        set_mount(0, "d1", bad_names[i], 1, "/srv/t/1");
        ck_assert_msg(sched__mounts_resolve(&m, &n, s, 1, "p1") == ED_EIO, "name '%s' accepted", bad_names[i]);
    }
    for (size_t i = 0; i < sizeof(bad_trees) / sizeof(*bad_trees); i++) {
        set_mount(0, "d1", "a/b", 1, bad_trees[i]);
        ck_assert_msg(sched__mounts_resolve(&m, &n, s, 1, "p1") == ED_EIO, "tree '%s' accepted", bad_trees[i]);
    }
    set_mount(0, "d1", "a/b", 0, "/srv/t/1");
    ck_assert_int_eq(sched__mounts_resolve(&m, &n, s, 1, "p1"), ED_EIO);
    for (size_t i = 0; i < 21; i++)
        set_mount(i, "d1", "a/b", 1, "/srv/t/1");
    n_answer = 21;
    ck_assert_int_eq(sched__mounts_resolve(&m, &n, s, 1, "p1"), ED_EINVAL);
}
END_TEST

START_TEST(submit_records_and_in_use_answers_until_the_job_ends)
{
    int64_t u = add_user("ann", "free"), job = 0;
    sched_job_info j;
    sched_job_spec sp = spec(u, "import time\ntime.sleep(60)\n");
    sched_mount *m = NULL;
    size_t n = 0;
    bool kernel = true;

    mkdir("/tmp/eddy-sched-mounts-t", 0755);
    set_mount(0, "d1", "ann/tab", 3, "/tmp/eddy-sched-mounts-t");
    n_answer = 1;
    ck_assert_int_eq(sched_job_submit(&j, s, &sp), 0);
    ck_assert_int_eq(sched_job_datasets(&m, &n, s, j.id), 0);
    ck_assert_uint_eq(n, 1);
    ck_assert_str_eq(m[0].dataset_id, "d1");
    ck_assert_str_eq(m[0].name, "ann/tab");
    ck_assert_int_eq(m[0].version, 3);
    ck_assert_str_eq(m[0].path, "/home/aistudio/data/ann-tab");
    ck_assert_str_eq(m[0].tree, "");
    free(m);
    /* queued: in use, by version and for the whole dataset */
    ck_assert_int_eq(sched_dataset_in_use(&job, &kernel, s, "d1", 3), 1);
    ck_assert_int_eq(job, j.id);
    ck_assert(!kernel);
    ck_assert_int_eq(sched_dataset_in_use(&job, &kernel, s, "d1", 0), 1);
    ck_assert_int_eq(sched_dataset_in_use(&job, &kernel, s, "d1", 2), 0);
    ck_assert_int_eq(sched_dataset_in_use(&job, &kernel, s, "d2", 0), 0);
    /* version 4 was published meanwhile: the start runs with it */
    set_mount(0, "d1", "ann/tab", 4, "/tmp/eddy-sched-mounts-t");
    wait_status(&j, j.id, "running", 10000);
    ck_assert_int_eq(sched_job_datasets(&m, &n, s, j.id), 0);
    ck_assert_uint_eq(n, 1);
    ck_assert_int_eq(m[0].version, 4);
    free(m);
    ck_assert_int_eq(sched_dataset_in_use(&job, &kernel, s, "d1", 4), 1);
    ck_assert_int_eq(sched_dataset_in_use(&job, &kernel, s, "d1", 3), 0);
    ck_assert_int_eq(sched_job_cancel(&j, s, u, j.id), 0);
    wait_status(&j, j.id, "cancelled", 10000);
    ck_assert_int_eq(sched_dataset_in_use(&job, &kernel, s, "d1", 0), 0);
    /* the record stays */
    ck_assert_int_eq(sched_job_datasets(&m, &n, s, j.id), 0);
    ck_assert_uint_eq(n, 1);
    ck_assert_int_eq(m[0].version, 4);
    free(m);
    rmdir("/tmp/eddy-sched-mounts-t");
}
END_TEST

START_TEST(an_invisible_dataset_refuses_the_submit_and_fails_the_start)
{
    int64_t u = add_user("bo", "free");
    sched_job_info j;
    sched_job_spec sp = spec(u, "print('ran')\n");

    fail_with = ED_EUNPROC;
    ck_assert_int_eq(sched_job_submit(&j, s, &sp), ED_EUNPROC);
    ck_assert_ptr_nonnull(strstr(ed_error_last(), "not visible"));
    ck_assert_int_eq(unit_store_int(st, "SELECT COUNT(*) FROM jobs"), 0);
    /* visible at submit, gone at start */
    fail_with = 0;
    ck_assert_int_eq(sched_job_submit(&j, s, &sp), 0);
    fail_with = ED_EUNPROC;
    wait_status(&j, j.id, "failed", 10000);
    ck_assert_str_eq(j.failure_reason, "user_error");
    ck_assert_ptr_nonnull(strstr(read_log(j.id), "could not start: dataset d1"));
    ck_assert_ptr_null(strstr(read_log(j.id), "ran"));
}
END_TEST

START_TEST(a_job_reads_its_dataset_read_only)
{
    int64_t u = add_user("cy", "free");
    char tree[200], file[260];
    sched_job_info j;
    FILE *f;
    sched_job_spec sp =
        spec(u, "import os, errno\n"
                "p = '/home/aistudio/data/cy-nums'\n"
                "print('env', os.environ['EDDY_DATASETS'], os.environ['EDDY_DATA_DIR'])\n"
                "print('read', open(p + '/n.txt').read())\n"
                "for what, f in (('creat', lambda: os.open(p + '/x', os.O_WRONLY | os.O_CREAT, 0o644)),\n"
                "                ('unlink', lambda: os.unlink(p + '/n.txt')),\n"
                "                ('mkdir', lambda: os.mkdir(p + '/d'))):\n"
                "    try:\n"
                "        f()\n"
                "        print(what, 'ok')\n"
                "    except OSError as e:\n"
                "        print(what, errno.errorcode[e.errno])\n");

    snprintf(tree, sizeof(tree), "%s/tree", fixture_dir);
    ck_assert_int_eq(mkdir(tree, 0755), 0);
    snprintf(file, sizeof(file), "%s/n.txt", tree);
    ck_assert_ptr_nonnull(f = fopen(file, "w"));
    fputs("1 2 3", f);
    fclose(f);
    chmod(fixture_dir, 0755);     /* the sandbox opens the source as root of its namespace */
    set_mount(0, "d9", "cy/nums", 2, tree);
    n_answer = 1;
    ck_assert_int_eq(sched_job_submit(&j, s, &sp), 0);
    wait_status(&j, j.id, "succeeded", 20000);
    const char *log = read_log(j.id);
    ck_assert_msg(strstr(log, "env [{\"name\":\"cy/nums\",\"version\":2,\"path\":\"/home/aistudio/data/cy-nums\"}] "
                              "/home/aistudio/data") != NULL, "%s", log);
    ck_assert_msg(strstr(log, "read 1 2 3") != NULL, "%s", log);
    ck_assert_msg(strstr(log, "creat EROFS") && strstr(log, "unlink EROFS") && strstr(log, "mkdir EROFS"), "%s", log);
    /* nothing changed on the host */
    ck_assert_int_eq(access(file, F_OK), 0);
}
END_TEST

/* Fixed mounts (a platform run's: the caller resolved them): these and not
 * the project's, checked as hostile, recorded with their trees at submit and
 * mounted at start read-only even though the resolver would answer
 * otherwise by then. */
START_TEST(fixed_mounts_replace_the_projects_datasets)
{
    int64_t u = add_user("di", "free");
    char tree[200], file[260];
    sched_job_info j;
    sched_mount fixed, *m = NULL;
    size_t n = 0;
    FILE *f;
    sched_job_spec sp = spec(u, "import os\n"
                                "print('sees', sorted(os.listdir('/home/aistudio/data')))\n"
                                "print('read', open('/home/aistudio/data/host-inputs/in.txt').read())\n");

    snprintf(tree, sizeof(tree), "%s/inputs", fixture_dir);
    ck_assert_int_eq(mkdir(tree, 0755), 0);
    snprintf(file, sizeof(file), "%s/in.txt", tree);
    ck_assert_ptr_nonnull(f = fopen(file, "w"));
    fputs("hidden 42", f);
    fclose(f);
    chmod(fixture_dir, 0755);
    set_mount(0, "d1", "di/tab", 3, tree);          /* the project's: not mounted */
    n_answer = 1;
    memset(&fixed, 0, sizeof(fixed));
    snprintf(fixed.dataset_id, sizeof(fixed.dataset_id), "ds-in");
    snprintf(fixed.name, sizeof(fixed.name), "host/inputs");
    fixed.version = 4;
    snprintf(fixed.path, sizeof(fixed.path), "/etc");   /* ignored: made by the scheduler */
    /* hostile: a relative tree, mounts without fixed_mounts */
    snprintf(fixed.tree, sizeof(fixed.tree), "relative/t");
    sp.mounts = &fixed;
    sp.n_mounts = 1;
    sp.fixed_mounts = true;
    ck_assert_int_eq(sched_job_submit(&j, s, &sp), ED_EIO);
    snprintf(fixed.tree, sizeof(fixed.tree), "%s", tree);
    sp.fixed_mounts = false;
    ck_assert_int_eq(sched_job_submit(&j, s, &sp), ED_EINVAL);
    sp.fixed_mounts = true;
    calls = 0;
    ck_assert_int_eq(sched_job_submit(&j, s, &sp), 0);
    ck_assert(j.fixed_mounts);
    ck_assert_int_eq(sched_job_datasets(&m, &n, s, j.id), 0);
    ck_assert_uint_eq(n, 1);
    ck_assert_str_eq(m[0].dataset_id, "ds-in");
    ck_assert_str_eq(m[0].path, "/home/aistudio/data/host-inputs");
    ck_assert_str_eq(m[0].tree, "");
    free(m);
    wait_status(&j, j.id, "succeeded", 20000);
    ck_assert_int_eq(calls, 0);                         /* the resolver was never asked */
    const char *log = read_log(j.id);
    ck_assert_msg(strstr(log, "sees ['host-inputs']") != NULL, "%s", log);
    ck_assert_msg(strstr(log, "read hidden 42") != NULL, "%s", log);
    /* in use while queued or running only; kept as what it ran with */
    ck_assert_int_eq(sched_job_datasets(&m, &n, s, j.id), 0);
    ck_assert_uint_eq(n, 1);
    ck_assert_int_eq(m[0].version, 4);
    free(m);
}
END_TEST

int main(void)
{
    const TTest *tests[] = {
        paths_are_made_and_collisions_numbered,
        a_hostile_answer_is_refused,
        submit_records_and_in_use_answers_until_the_job_ends,
        an_invisible_dataset_refuses_the_submit_and_fails_the_start,
        a_job_reads_its_dataset_read_only,
        fixed_mounts_replace_the_projects_datasets,
        NULL,
    };

    return unit_tests_run("sched_mounts", 120, setup, teardown, tests);
}
