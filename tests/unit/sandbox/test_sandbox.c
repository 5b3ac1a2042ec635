/*
 * test_sandbox - sbx.h: spec validation, fail-closed launch errors that
 * name the step, exit statuses, signals, kill, wait timeouts, cleanup of the
 * cgroup, the seccomp program and job slots. Uses the real sandbox (root and
 * user namespaces, as CI has); the escape suite lives in
 * tests/integration/sandbox/.
 */
#include "ed_error.h"
#include "sbx.h"
#include "sbx_int.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/sysmacros.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define UID 202000

static void spec(sbx_spec *s, char **argv)
{
    sbx_spec_init(s);
    s->argv = argv;
    s->host_uid = s->host_gid = UID;
    s->stdio[0] = s->stdio[1] = s->stdio[2] = -1;
    s->wall_ms = 30000;
    s->mem_bytes = 128 << 20;
    s->pids = 64;
}

/* Launch, wait for the end and free; the usage it ended with. */
static sbx_usage run_to_end(sbx_spec *s)
{
    sbx_job *j = NULL;
    sbx_usage u;

    ck_assert_int_eq(sbx_launch(&j, s), 0);
    ck_assert_int_eq(sbx_job_wait(j, -1, &u), 0);
    sbx_job_free(j);
    return u;
}

static int launch_err(sbx_spec *s)
{
    sbx_job *j = (sbx_job *)0x1;
    int rc = sbx_launch(&j, s);
    ck_assert_ptr_null(j);
    return rc;
}

START_TEST(spec_rejects_uid_zero)
{
    char *argv[] = {"/bin/true", NULL};
    sbx_spec s;
    spec(&s, argv);
    s.host_uid = 0;
    ck_assert_int_eq(launch_err(&s), ED_EINVAL);
    ck_assert_ptr_nonnull(strstr(ed_error_last(), "unprivileged"));
    spec(&s, argv);
    s.host_gid = 0;
    ck_assert_int_eq(launch_err(&s), ED_EINVAL);
}
END_TEST

START_TEST(spec_rejects_missing_argv)
{
    sbx_spec s;
    spec(&s, NULL);
    ck_assert_int_eq(launch_err(&s), ED_EINVAL);
}
END_TEST

START_TEST(spec_rejects_bad_binds)
{
    char *argv[] = {"/bin/true", NULL};
    sbx_spec s;
    sbx_bind b;
    spec(&s, argv);
    s.ro = &b;
    s.n_ro = 1;
    b = (sbx_bind){"relative/path", "/x", 0};
    ck_assert_int_eq(launch_err(&s), ED_EINVAL);
    b = (sbx_bind){"/nonexistent-eddy-source", "/x", 0};
    ck_assert_int_eq(launch_err(&s), ED_EINVAL);
    ck_assert_ptr_nonnull(strstr(ed_error_last(), "/nonexistent-eddy-source"));
    b = (sbx_bind){"/usr", "/proc/x", 0};          /* the sandbox's own layout */
    ck_assert_int_eq(launch_err(&s), ED_EINVAL);
    b = (sbx_bind){"/usr", "/home/aistudio/../etc", 0};
    ck_assert_int_eq(launch_err(&s), ED_EINVAL);
    b = (sbx_bind){"/usr", "relative", 0};
    ck_assert_int_eq(launch_err(&s), ED_EINVAL);
    b = (sbx_bind){"/usr", "/", 0};
    ck_assert_int_eq(launch_err(&s), ED_EINVAL);
    b = (sbx_bind){"/usr", "/x", 0x80};             /* an unknown flag */
    ck_assert_int_eq(launch_err(&s), ED_EINVAL);
    b = (sbx_bind){"/usr", "/x", SBX_BIND_IDMAP};   /* only read-write binds are idmapped */
    ck_assert_int_eq(launch_err(&s), ED_EINVAL);
    s.ro = NULL;
    s.n_ro = 0;
    s.rw = &b;
    s.n_rw = 1;
    b = (sbx_bind){"/etc/hostname", "/x", SBX_BIND_HIDE_GIT};   /* a file has no .git */
    ck_assert_int_eq(launch_err(&s), ED_EINVAL);
}
END_TEST

START_TEST(spec_rejects_bad_limits)
{
    char *argv[] = {"/bin/true", NULL};
    sbx_spec s;
    spec(&s, argv);
    s.mem_bytes = -1;
    ck_assert_int_eq(launch_err(&s), ED_EINVAL);
    spec(&s, argv);
    s.mem_bytes = 1024;           /* below 4 MiB */
    ck_assert_int_eq(launch_err(&s), ED_EINVAL);
    spec(&s, argv);
    s.net = (sbx_net)7;
    ck_assert_int_eq(launch_err(&s), ED_EINVAL);
    spec(&s, argv);
    s.n_gpus = 1;
    s.gpus[0] = -3;
    ck_assert_int_eq(launch_err(&s), ED_EINVAL);
    spec(&s, argv);
    int fd = 2;
    s.pass_fds = &fd;             /* stdio is not passed this way */
    s.n_pass_fds = 1;
    ck_assert_int_eq(launch_err(&s), ED_EINVAL);
    spec(&s, argv);
    s.stdio[1] = 9999;            /* not open */
    ck_assert_int_eq(launch_err(&s), ED_EINVAL);
}
END_TEST

START_TEST(gpu_that_does_not_exist_fails_closed)
{
    char *argv[] = {"/bin/true", NULL};
    sbx_spec s;
    spec(&s, argv);
    s.n_gpus = 1;
    s.gpus[0] = 250;
    ck_assert_int_eq(launch_err(&s), ED_EINVAL);
    ck_assert_ptr_nonnull(strstr(ed_error_last(), "/dev/nvidia250"));
}
END_TEST

/* Fake GPU nodes (/dev/null's numbers, 0666) in a directory of their own,
 * as EDDY_GPU_DEV_DIR names them; 0, or -1 when mknod is not allowed. */
static int fake_gpu_nodes(char *dir, size_t n)
{
    static const char *const nodes[] = {"nvidia0", "nvidia1", "nvidiactl", "nvidia-uvm"};
    char path[128];

    snprintf(dir, n, "/var/tmp/eddy-gpudev-XXXXXX");
    if (mkdtemp(dir) == NULL || chmod(dir, 0755) < 0)
        return -1;
    for (size_t i = 0; i < sizeof(nodes) / sizeof(nodes[0]); i++) {
        snprintf(path, sizeof(path), "%s/%s", dir, nodes[i]);
        if (mknod(path, S_IFCHR | 0666, makedev(1, 3)) < 0 || chmod(path, 0666) < 0)
            return -1;
    }
    setenv("EDDY_GPU_DEV_DIR", dir, 1);
    return 0;
}

static void fake_gpu_nodes_remove(const char *dir)
{
    static const char *const nodes[] = {"nvidia0", "nvidia1", "nvidiactl", "nvidia-uvm"};
    char path[128];

    for (size_t i = 0; i < sizeof(nodes) / sizeof(nodes[0]); i++) {
        snprintf(path, sizeof(path), "%s/%s", dir, nodes[i]);
        unlink(path);
    }
    rmdir(dir);
    unsetenv("EDDY_GPU_DEV_DIR");
    unsetenv("EDDY_CUDA_LIB_DIRS");
}

/* Given GPU 1: nvidia1, nvidiactl and nvidia-uvm exist inside, nvidia0 does
 * not (absent, not refused), CUDA numbers it 0, and a CUDA library folder
 * outside /usr is there read-only; a CPU job sees no nvidia node. */
START_TEST(gpu_job_sees_only_its_nodes_and_cuda_libraries_read_only)
{
    char dev[64], lib[64], file[96], script[512], buf[512];
    char *argv[] = {"/bin/sh", "-c", script, NULL};
    sbx_spec s;
    int out = memfd_create("o", MFD_CLOEXEC), fd;
    ssize_t n;

    if (fake_gpu_nodes(dev, sizeof(dev)) < 0) {
        printf("SKIP (gpu nodes): mknod: %s\n", strerror(errno));
        return;
    }
    snprintf(lib, sizeof(lib), "/var/tmp/eddy-cudalib-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(lib));
    ck_assert_int_eq(chmod(lib, 0755), 0);
    snprintf(file, sizeof(file), "%s/libcudart.so.12", lib);
    ck_assert_int_ge(fd = open(file, O_WRONLY | O_CREAT, 0644), 0);
    ck_assert_int_eq(write(fd, "elf\n", 4), 4);
    close(fd);
    snprintf(buf, sizeof(buf), "/usr/lib:%s", lib);   /* beneath /usr: already there */
    setenv("EDDY_CUDA_LIB_DIRS", buf, 1);
    snprintf(script, sizeof(script),
             "echo $(ls /dev | grep nvidia) \"$CUDA_VISIBLE_DEVICES\"; cat %s; "
             "echo x > /dev/nvidia1 && echo opened; touch %s/x 2>/dev/null && echo writable || echo read-only",
             file, lib);
    spec(&s, argv);
    s.stdio[1] = out;
    s.n_gpus = 1;
    s.gpus[0] = 1;
    ck_assert_int_eq(run_to_end(&s).exit_code, 0);
    n = pread(out, buf, sizeof(buf) - 1, 0);
    buf[n > 0 ? n : 0] = '\0';
    ck_assert_str_eq(buf, "nvidia-uvm nvidia1 nvidiactl 0\nelf\nopened\nread-only\n");
    /* the caller's CUDA_VISIBLE_DEVICES (the scheduler's UUIDs) is kept */
    {
        char *env[] = {"PATH=/usr/bin:/bin", "CUDA_VISIBLE_DEVICES=GPU-00000000-0000-0000-0000-000000000001", NULL};
        close(out);
        s.stdio[1] = out = memfd_create("o", MFD_CLOEXEC);
        s.env = env;
        run_to_end(&s);
        n = pread(out, buf, sizeof(buf) - 1, 0);
        buf[n > 0 ? n : 0] = '\0';
        ck_assert_msg(strncmp(buf, "nvidia-uvm nvidia1 nvidiactl GPU-00000000-0000-0000-0000-000000000001\n", 70) == 0,
                      "%s", buf);
        s.env = NULL;
    }
    /* a CPU job: no node, no variable, no library folder */
    close(out);
    s.stdio[1] = out = memfd_create("o", MFD_CLOEXEC);
    s.n_gpus = 0;
    snprintf(script, sizeof(script), "echo \"[$(ls /dev | grep nvidia)]\" \"[$CUDA_VISIBLE_DEVICES]\"; ls %s", lib);
    run_to_end(&s);
    n = pread(out, buf, sizeof(buf) - 1, 0);
    buf[n > 0 ? n : 0] = '\0';
    ck_assert_str_eq(buf, "[] []\n");
    unlink(file);
    rmdir(lib);
    fake_gpu_nodes_remove(dev);
    close(out);
}
END_TEST

/* EDDY_CUDA_LIB_DIRS: absolute, canonical directories outside the
 * sandbox's own places, or the launch fails naming it. */
START_TEST(cuda_lib_dirs_are_checked)
{
    static const struct {
        const char *dirs, *why;
    } bad[] = {
        {"lib64", "not an absolute path"},      {"/opt//cuda", "not canonical"},
        {"/opt/cuda/", "not canonical"},        {"/opt/../etc", "not canonical"},
        {"/tmp/cuda", "keeps its own files"},   {"/etc/cuda", "keeps its own files"},
        {"/home/x", "keeps its own files"},     {"/nonexistent-cuda", "not a directory"},
    };
    char dev[64], *argv[] = {"/bin/true", NULL};
    sbx_spec s;

    if (fake_gpu_nodes(dev, sizeof(dev)) < 0) {
        printf("SKIP (gpu nodes): mknod: %s\n", strerror(errno));
        return;
    }
    spec(&s, argv);
    s.n_gpus = 1;
    s.gpus[0] = 0;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        setenv("EDDY_CUDA_LIB_DIRS", bad[i].dirs, 1);
        ck_assert_int_eq(launch_err(&s), ED_EINVAL);
        ck_assert_msg(strstr(ed_error_last(), bad[i].why) != NULL, "%s: %s", bad[i].dirs, ed_error_last());
    }
    /* an absent node fails closed, naming it */
    setenv("EDDY_CUDA_LIB_DIRS", "", 1);
    s.gpus[0] = 7;
    ck_assert_int_eq(launch_err(&s), ED_EINVAL);
    ck_assert_ptr_nonnull(strstr(ed_error_last(), "nvidia7"));
    fake_gpu_nodes_remove(dev);
}
END_TEST

START_TEST(missing_program_fails_naming_exec_step)
{
    char *argv[] = {"/nonexistent/program", NULL};
    sbx_spec s;
    spec(&s, argv);
    ck_assert_int_eq(launch_err(&s), ED_EIO);
    ck_assert_msg(strstr(ed_error_last(), "step 'exec /nonexistent/program'") != NULL, "%s",
                  ed_error_last());
    ck_assert_ptr_nonnull(strstr(ed_error_last(), "No such file"));
}
END_TEST

START_TEST(failing_step_inside_is_named_and_nothing_runs)
{
    /* cwd that does not exist inside: the chdir step fails before exec. */
    char *argv[] = {"/bin/sh", "-c", "touch /home/aistudio/work/ran", NULL};
    char dir[] = "/tmp/eddy-sbx-unit-XXXXXX", ran[64];
    sbx_spec s;
    sbx_bind rw;
    ck_assert_ptr_nonnull(mkdtemp(dir));
    ck_assert_int_eq(chown(dir, UID, UID), 0);
    spec(&s, argv);
    rw = (sbx_bind){dir, "/home/aistudio/work", 0};
    s.rw = &rw;
    s.n_rw = 1;
    s.cwd = "/no/such/dir";
    ck_assert_int_eq(launch_err(&s), ED_EIO);
    ck_assert_msg(strstr(ed_error_last(), "step 'chdir /no/such/dir'") != NULL, "%s", ed_error_last());
    snprintf(ran, sizeof(ran), "%s/ran", dir);
    ck_assert_int_eq(access(ran, F_OK), -1);
    /* The same spec with a good cwd runs: the test can fail. */
    s.cwd = NULL;
    run_to_end(&s);
    ck_assert_int_eq(access(ran, F_OK), 0);
    unlink(ran);
    rmdir(dir);
}
END_TEST

START_TEST(exit_code_and_usage_reported_and_cgroup_removed)
{
    char *argv[] = {"/bin/sh", "-c", "exit 7", NULL};
    sbx_spec s;
    sbx_job *j;
    sbx_usage u;
    char cg[512];
    struct stat st;
    spec(&s, argv);
    ck_assert_msg(sbx_launch(&j, &s) == 0, "%s", ed_error_last());
    ck_assert_int_gt(sbx_job_pid(j), 0);
    ck_assert_int_ge(sbx_job_pidfd(j), 0);
    snprintf(cg, sizeof(cg), "%s", sbx_job_cgroup(j));
    ck_assert_msg(cg[0] && stat(cg, &st) == 0, "cgroup '%s'", cg);
    ck_assert_int_eq(sbx_job_wait(j, -1, &u), 0);
    ck_assert_int_eq(u.exited, 1);
    ck_assert_int_eq(u.exit_code, 7);
    ck_assert_int_eq(u.limit, SBX_LIMIT_NONE);
    ck_assert_int_ge(u.cpu_ms, 0);
    ck_assert_int_gt(u.peak_mem_bytes, 0);
    sbx_job_free(j);
    ck_assert_int_eq(stat(cg, &st), -1);
}
END_TEST

START_TEST(program_killed_by_signal_reports_signal)
{
    char *argv[] = {"/bin/sh", "-c", "kill -SEGV $$", NULL};
    sbx_spec s;
    sbx_usage u;
    spec(&s, argv);
    u = run_to_end(&s);
    ck_assert_int_eq(u.exited, 0);
    ck_assert_int_eq(u.term_signal, SIGSEGV);
}
END_TEST

START_TEST(sigterm_is_forwarded_to_the_program)
{
    char *argv[] = {"/bin/sleep", "30", NULL};
    sbx_spec s;
    sbx_job *j;
    sbx_usage u;
    spec(&s, argv);
    ck_assert_int_eq(sbx_launch(&j, &s), 0);
    ck_assert_int_eq(sbx_job_wait(j, 100, &u), ED_EBUSY);
    ck_assert_int_eq(sbx_job_signal(j, SIGTERM), 0);
    ck_assert_int_eq(sbx_job_wait(j, -1, &u), 0);
    ck_assert_int_eq(u.exited, 0);
    ck_assert_int_eq(u.term_signal, SIGTERM);
    ck_assert_int_eq(u.limit, SBX_LIMIT_NONE);
    ck_assert_int_eq(sbx_job_signal(j, SIGTERM), ED_ENOTFOUND);
    ck_assert_int_eq(sbx_job_signal(j, 0), ED_EINVAL);
    sbx_job_free(j);
}
END_TEST

START_TEST(kill_ends_the_tree_and_says_so)
{
    char *argv[] = {"/bin/sh", "-c", "trap '' TERM; sleep 30 & sleep 30 & wait", NULL};
    sbx_spec s;
    sbx_job *j;
    sbx_usage u;
    spec(&s, argv);
    ck_assert_int_eq(sbx_launch(&j, &s), 0);
    usleep(100 * 1000);
    ck_assert_int_eq(sbx_job_kill(j), 0);
    ck_assert_int_eq(sbx_job_wait(j, -1, &u), 0);
    ck_assert_int_eq(u.limit, SBX_LIMIT_KILLED);
    ck_assert_str_eq(sbx_limit_name(u.limit), "killed");
    sbx_job_free(j);
}
END_TEST

START_TEST(wall_time_ends_the_job)
{
    char *argv[] = {"/bin/sleep", "30", NULL};
    sbx_spec s;
    sbx_usage u;
    spec(&s, argv);
    s.wall_ms = 300;
    u = run_to_end(&s);
    ck_assert_int_eq(u.limit, SBX_LIMIT_WALL);
}
END_TEST

START_TEST(free_of_running_job_kills_it)
{
    char *argv[] = {"/bin/sleep", "30", NULL};
    sbx_spec s;
    sbx_job *j;
    spec(&s, argv);
    ck_assert_int_eq(sbx_launch(&j, &s), 0);
    pid_t pid = sbx_job_pid(j);
    sbx_job_free(j);
    ck_assert_int_eq(kill(pid, 0), -1);
    sbx_job_free(NULL);
}
END_TEST

START_TEST(stdout_and_passed_descriptor_reach_the_program)
{
    char *argv[] = {"/bin/sh", "-c", "echo out; echo passed >&9", NULL};
    sbx_spec s;
    sbx_job *j;
    sbx_usage u;
    char buf[64];
    int out = memfd_create("o", MFD_CLOEXEC), extra = memfd_create("e", MFD_CLOEXEC);
    ck_assert_int_eq(dup2(extra, 9), 9);
    spec(&s, argv);
    s.stdio[1] = out;
    int pass[] = {9};
    s.pass_fds = pass;
    s.n_pass_fds = 1;
    ck_assert_msg(sbx_launch(&j, &s) == 0, "%s", ed_error_last());
    ck_assert_int_eq(sbx_job_wait(j, -1, &u), 0);
    ck_assert_int_eq(u.exit_code, 0);
    sbx_job_free(j);
    ssize_t n = pread(out, buf, sizeof(buf) - 1, 0);
    buf[n > 0 ? n : 0] = '\0';
    ck_assert_str_eq(buf, "out\n");
    n = pread(9, buf, sizeof(buf) - 1, 0);
    buf[n > 0 ? n : 0] = '\0';
    ck_assert_str_eq(buf, "passed\n");
}
END_TEST

START_TEST(environment_is_only_what_the_spec_gives)
{
    char *argv[] = {"/bin/sh", "-c", "env | sort", NULL};
    char *env[] = {"PATH=/usr/bin:/bin", "EDDY_X=1", NULL};
    sbx_spec s;
    char buf[512];
    int out = memfd_create("o", MFD_CLOEXEC);
    setenv("EDDY_SECRET_HOST_VAR", "leak", 1);
    spec(&s, argv);
    s.env = env;
    s.stdio[1] = out;
    run_to_end(&s);
    ssize_t n = pread(out, buf, sizeof(buf) - 1, 0);
    buf[n > 0 ? n : 0] = '\0';
    ck_assert_ptr_nonnull(strstr(buf, "EDDY_X=1"));
    ck_assert_ptr_null(strstr(buf, "EDDY_SECRET_HOST_VAR"));
}
END_TEST

static volatile int churn_stop;

static void *churn(void *arg)
{
    (void)arg;
    while (!churn_stop) {
        void *p = malloc(1 + (size_t)(rand() % 4096));
        free(p);
    }
    return NULL;
}

/* The server launches from worker threads while others allocate: the child
 * must not depend on locks another thread may hold at clone time. */
START_TEST(launch_from_threaded_process)
{
    char *argv[] = {"/bin/true", NULL};
    pthread_t t[2];
    sbx_spec s;
    for (int i = 0; i < 2; i++)
        ck_assert_int_eq(pthread_create(&t[i], NULL, churn, NULL), 0);
    spec(&s, argv);
    for (int i = 0; i < 20; i++) {
        sbx_job *j;
        sbx_usage u;
        ck_assert_msg(sbx_launch(&j, &s) == 0, "%s", ed_error_last());
        ck_assert_int_eq(sbx_job_wait(j, -1, &u), 0);
        ck_assert_int_eq(u.exit_code, 0);
        sbx_job_free(j);
    }
    churn_stop = 1;
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
}
END_TEST

/* The mount point of a cgroup v2 hierarchy, or NULL when there is none. */
static const char *v2_hierarchy(void)
{
    static const char *mounts[] = {"/sys/fs/cgroup/unified", "/sys/fs/cgroup"};
    char path[128];
    for (size_t i = 0; i < 2; i++) {
        snprintf(path, sizeof(path), "%s/cgroup.controllers", mounts[i]);
        if (access(path, F_OK) == 0)
            return mounts[i];
    }
    return NULL;
}

/* The cgroup v2 device filter (production hosts): a process in the cgroup
 * opens /dev/null but not /dev/kmsg. Runs wherever a v2 hierarchy exists
 * (here: the empty unified one), as its own CTest test
 * (`test_sandbox cgroup-v2-devices`), which exits 77 (a reported skip) where
 * there is none. */
START_TEST(v2_device_filter_allows_only_listed_nodes)
{
    const char *mount = v2_hierarchy();
    char dir[256] = "", procs[300];
    ck_assert_ptr_nonnull(mount);
    snprintf(dir, sizeof(dir), "%s/eddy-unit-dev-%d", mount, (int)getpid());
    ck_assert_int_eq(mkdir(dir, 0755), 0);
    ck_assert_msg(sbx__cgroup_v2_devices(dir, NULL, 0) == 0, "%s", ed_error_last());
    snprintf(procs, sizeof(procs), "%s/cgroup.procs", dir);
    pid_t pid = fork();
    if (pid == 0) {
        int fd = open(procs, O_WRONLY);
        if (fd < 0 || write(fd, "0", 1) != 1)
            _exit(10);
        close(fd);
        if ((fd = open("/dev/null", O_RDWR)) < 0)
            _exit(11);
        close(fd);
        fd = open("/dev/kmsg", O_RDONLY);
        _exit(fd < 0 && errno == EPERM ? 0 : 12);
    }
    int st;
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    rmdir(dir);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child status %d", st);
}
END_TEST

/* Without a usable cgroup (EDDY_SBX_CGROUP=none says so) a launch fails
 * closed unless degraded mode is allowed; then rlimits stand in. */
START_TEST(degraded_mode_needs_permission_and_keeps_rlimits)
{
    char *argv[] = {"/bin/sh", "-c", "tr -s ' ' < /proc/self/limits", NULL};
    sbx_spec s;
    sbx_job *j = NULL;
    sbx_usage u;
    char buf[4096];
    int out = memfd_create("o", MFD_CLOEXEC);
    setenv("EDDY_SBX_CGROUP", "none", 1);
    spec(&s, argv);
    ck_assert_int_eq(launch_err(&s), ED_EPERM);
    ck_assert_ptr_nonnull(strstr(ed_error_last(), "degraded"));
    s.allow_degraded = 1;
    s.stdio[1] = out;
    ck_assert_msg(sbx_launch(&j, &s) == 0, "%s", ed_error_last());
    ck_assert_str_eq(sbx_job_cgroup(j), "");
    ck_assert_int_eq(sbx_job_wait(j, -1, &u), 0);
    sbx_job_free(j);
    unsetenv("EDDY_SBX_CGROUP");
    ssize_t n = pread(out, buf, sizeof(buf) - 1, 0);
    buf[n > 0 ? n : 0] = '\0';
    ck_assert_msg(strstr(buf, "Max address space 134217728 134217728"), "%s", buf);   /* 128 MiB */
    ck_assert_msg(strstr(buf, "Max processes 64 64"), "%s", buf);
}
END_TEST

/* A server may block signals and ignore SIGCHLD; the sandbox's init and
 * the wall timer must not inherit that deafness. */
START_TEST(launch_survives_callers_signal_state)
{
    char *argv[] = {"/bin/sh", "-c", "sleep 0.2; exit 3", NULL};
    char *argv2[] = {"/bin/sleep", "30", NULL};
    sigset_t all;
    sbx_spec s;
    sbx_usage u;
    sigfillset(&all);
    sigprocmask(SIG_BLOCK, &all, NULL);
    signal(SIGCHLD, SIG_IGN);
    spec(&s, argv);
    u = run_to_end(&s);
    ck_assert_int_eq(u.exited, 1);
    ck_assert_int_eq(u.exit_code, 3);
    spec(&s, argv2);
    s.wall_ms = 300;
    u = run_to_end(&s);
    ck_assert_int_eq(u.limit, SBX_LIMIT_WALL);
}
END_TEST

/* A launcher that dies without sbx_job_free(): its job dies with it
 * (parent-death signal), and the next process to launch removes the empty
 * cgroup it left. */
START_TEST(job_dies_with_launcher_and_its_cgroup_is_swept)
{
    int pfd[2];
    char path[512] = "", procs[600], buf[64];
    ck_assert_int_eq(pipe(pfd), 0);
    pid_t helper = fork();
    if (helper == 0) {
        char *argv[] = {"/bin/sleep", "30", NULL};
        sbx_spec s;
        sbx_job *j;
        spec(&s, argv);
        if (sbx_launch(&j, &s) < 0)
            _exit(1);
        const char *cg = sbx_job_cgroup(j);
        if (write(pfd[1], cg, strlen(cg) + 1) < 0)
            _exit(2);
        for (;;)
            pause();
    }
    close(pfd[1]);
    ck_assert_int_gt(read(pfd[0], path, sizeof(path) - 1), 0);
    close(pfd[0]);
    ck_assert_int_eq(kill(helper, SIGKILL), 0);
    ck_assert_int_eq(waitpid(helper, NULL, 0), helper);
    snprintf(procs, sizeof(procs), "%s/cgroup.procs", path);
    int empty = 0;
    for (int i = 0; i < 300 && !empty; i++) {
        int fd = open(procs, O_RDONLY);
        ck_assert_int_ge(fd, 0);
        empty = read(fd, buf, sizeof(buf)) == 0;
        close(fd);
        if (!empty)
            usleep(10 * 1000);
    }
    ck_assert_msg(empty, "the job outlived its launcher");
    ck_assert_int_eq(access(path, F_OK), 0);       /* left behind */
    char *argv[] = {"/bin/true", NULL};
    sbx_spec s;
    spec(&s, argv);
    run_to_end(&s);
    ck_assert_int_eq(access(path, F_OK), -1);      /* swept */
}
END_TEST

START_TEST(seccomp_program_builds)
{
    struct sock_fprog prog;
    ck_assert_int_eq(sbx__seccomp_build(&prog), 0);
    ck_assert_ptr_nonnull(prog.filter);
    ck_assert_int_gt(prog.len, 100);
    free(prog.filter);
}
END_TEST

START_TEST(slots_give_distinct_uids)
{
    char dir[] = "/tmp/eddy-sbx-slots-XXXXXX";
    sbx_slot *a, *b, *c;
    ck_assert_ptr_nonnull(mkdtemp(dir));
    ck_assert_int_eq(sbx_slot_claim(&a, dir, 300000, 2), 0);
    ck_assert_int_eq(sbx_slot_claim(&b, dir, 300000, 2), 0);
    ck_assert_uint_ne(sbx_slot_uid(a), sbx_slot_uid(b));
    ck_assert_int_eq(sbx_slot_claim(&c, dir, 300000, 2), ED_EBUSY);
    ck_assert_ptr_null(c);
    unsigned freed = sbx_slot_uid(a);
    sbx_slot_free(a);
    ck_assert_int_eq(sbx_slot_claim(&c, dir, 300000, 2), 0);
    ck_assert_uint_eq(sbx_slot_uid(c), freed);
    ck_assert_int_eq(sbx_slot_claim(&a, dir, 0, 2), ED_EINVAL);   /* uid 0 never */
    ck_assert_int_eq(sbx_slot_claim(&a, "relative", 300000, 2), ED_EINVAL);
    sbx_slot_free(b);
    sbx_slot_free(c);
    sbx_slot_free(NULL);
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    ck_assert_int_eq(system(cmd), 0);
}
END_TEST

START_TEST(check_reports_this_host)
{
    sbx_caps c;
    ck_assert_int_eq(sbx_check(&c), 0);
    ck_assert_int_eq(c.userns, 1);
    ck_assert_int_eq(c.seccomp, 1);
    ck_assert_msg(c.launch == 1, "%s", c.detail);
    ck_assert_int_eq(c.cgroup_v1 || c.cgroup_v2, 1);
}
END_TEST

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "cgroup-v2-devices") == 0) {
        if (v2_hierarchy() == NULL) {
            fprintf(stderr, "skipped: no cgroup v2 hierarchy on this host\n");
            return 77;
        }
        Suite *s2 = suite_create("sandbox cgroup v2 devices");
        TCase *t2 = tcase_create("devices");
        tcase_add_test(t2, v2_device_filter_allows_only_listed_nodes);
        suite_add_tcase(s2, t2);
        SRunner *sr2 = srunner_create(s2);
        srunner_run_all(sr2, CK_NORMAL);
        int failed2 = srunner_ntests_failed(sr2);
        srunner_free(sr2);
        return failed2 ? 1 : 0;
    }
    Suite *s = suite_create("sandbox");
    TCase *t = tcase_create("spec");
    tcase_add_test(t, spec_rejects_uid_zero);
    tcase_add_test(t, spec_rejects_missing_argv);
    tcase_add_test(t, spec_rejects_bad_binds);
    tcase_add_test(t, spec_rejects_bad_limits);
    tcase_add_test(t, gpu_that_does_not_exist_fails_closed);
    tcase_add_test(t, seccomp_program_builds);
    tcase_add_test(t, slots_give_distinct_uids);
    suite_add_tcase(s, t);
    TCase *l = tcase_create("launch");
    tcase_set_timeout(l, 60);
    tcase_add_test(l, missing_program_fails_naming_exec_step);
    tcase_add_test(l, gpu_job_sees_only_its_nodes_and_cuda_libraries_read_only);
    tcase_add_test(l, cuda_lib_dirs_are_checked);
    tcase_add_test(l, failing_step_inside_is_named_and_nothing_runs);
    tcase_add_test(l, exit_code_and_usage_reported_and_cgroup_removed);
    tcase_add_test(l, program_killed_by_signal_reports_signal);
    tcase_add_test(l, sigterm_is_forwarded_to_the_program);
    tcase_add_test(l, kill_ends_the_tree_and_says_so);
    tcase_add_test(l, wall_time_ends_the_job);
    tcase_add_test(l, free_of_running_job_kills_it);
    tcase_add_test(l, stdout_and_passed_descriptor_reach_the_program);
    tcase_add_test(l, environment_is_only_what_the_spec_gives);
    tcase_add_test(l, check_reports_this_host);
    tcase_add_test(l, launch_from_threaded_process);
    tcase_add_test(l, launch_survives_callers_signal_state);
    tcase_add_test(l, job_dies_with_launcher_and_its_cgroup_is_swept);
    tcase_add_test(l, degraded_mode_needs_permission_and_keeps_rlimits);
    suite_add_tcase(s, l);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
