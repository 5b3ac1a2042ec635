/*
 * sbx_check.c - what this host offers, probed rather than assumed: each
 * namespace is unshared in a throwaway child, the seccomp filter is loaded
 * in one, the cgroup hierarchies are opened for writing, a bind mount is
 * idmapped (workspaces), and finally a real launch of /bin/true runs end to
 * end.
 */
#include "sbx_int.h"
#include "ed_error.h"

#include <dirent.h>
#include <errno.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

/* 1 if a child can unshare(flags). */
static int try_unshare(int flags)
{
    pid_t pid = fork();
    int st;

    if (pid < 0)
        return 0;
    if (pid == 0)
        _exit(unshare(flags) == 0 ? 0 : 1);
    if (waitpid(pid, &st, 0) < 0)
        return 0;
    return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

/* 1 if our filter loads and denies what it should while allowing getpid. */
static int try_seccomp(void)
{
    struct sock_fprog prog;
    pid_t pid;
    int st;

    if (sbx__seccomp_build(&prog) < 0)
        return 0;
    pid = fork();
    if (pid == 0) {
        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
            prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) < 0)
            _exit(1);
        if (syscall(SYS_bpf, 0, NULL, 0) == 0 || errno != EPERM)
            _exit(2);
        if (syscall(SYS_clone3, NULL, 0) == 0 || errno != ENOSYS)
            _exit(3);
        _exit(syscall(SYS_getpid) > 0 ? 0 : 4);
    }
    free(prog.filter);
    if (pid < 0 || waitpid(pid, &st, 0) < 0)
        return 0;
    return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

static int try_launch(int degraded, char *why, size_t cap)
{
    sbx_spec s;
    sbx_job *j = NULL;
    sbx_usage u;
    char *argv[] = {"/bin/true", NULL};

    sbx_spec_init(&s);
    s.argv = argv;
    s.host_uid = s.host_gid = 299999;
    s.stdio[0] = s.stdio[1] = s.stdio[2] = -1;
    s.mem_bytes = 64 << 20;
    s.pids = 16;
    s.wall_ms = 10000;
    s.allow_degraded = degraded;
    if (sbx_launch(&j, &s) < 0) {
        snprintf(why, cap, "%s", ed_error_last());
        return 0;
    }
    int ok = sbx_job_wait(j, -1, &u) == 0 && u.exited && u.exit_code == 0;
    if (!ok)
        snprintf(why, cap, "/bin/true did not exit 0 in the sandbox");
    sbx_job_free(j);
    return ok;
}

int sbx_check(sbx_caps *out)
{
    char why[256] = "";
    DIR *d;
    struct dirent *e;

    memset(out, 0, sizeof(*out));
    out->userns = try_unshare(CLONE_NEWUSER);
    out->pidns = try_unshare(CLONE_NEWUSER | CLONE_NEWPID);
    out->mntns = try_unshare(CLONE_NEWUSER | CLONE_NEWNS);
    out->netns = try_unshare(CLONE_NEWUSER | CLONE_NEWNET);
    out->ipcns = try_unshare(CLONE_NEWUSER | CLONE_NEWIPC);
    out->utsns = try_unshare(CLONE_NEWUSER | CLONE_NEWUTS);
    out->cgroupns = try_unshare(CLONE_NEWUSER | CLONE_NEWCGROUP);
    out->seccomp = try_seccomp();
    sbx__cgroup_probe(out);
    if ((d = opendir("/dev")) != NULL) {
        while ((e = readdir(d)) != NULL)
            if (strncmp(e->d_name, "nvidia", 6) == 0 && e->d_name[6] >= '0' && e->d_name[6] <= '9')
                out->gpus++;
        closedir(d);
    }
    /* Workspaces (a project's tree as the kernel's /home/aistudio/work)
     * need idmapped bind mounts; `eddy sandbox check --data DIR` asks
     * again for the data directory's own filesystem. */
    out->idmap = sbx_idmap_probe("/var/tmp", out->idmap_detail, sizeof(out->idmap_detail));
    out->launch = try_launch(0, why, sizeof(why));
    if (!out->launch && try_launch(1, why, sizeof(why))) {
        out->launch = 1;
        out->degraded_only = 1;
    }
    size_t at = 0;
    const struct { int ok; const char *what; } parts[] = {
        {out->userns, "user namespaces"}, {out->pidns, "PID namespaces"},
        {out->mntns, "mount namespaces"}, {out->netns, "network namespaces"},
        {out->ipcns, "IPC namespaces"}, {out->utsns, "UTS namespaces"},
        {out->cgroupns, "cgroup namespaces"}, {out->seccomp, "seccomp filters"},
        {out->cgroup_v2 || out->cgroup_v1, "a writable cgroup hierarchy (v2 or v1 memory+pids+cpu)"},
    };
    for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++)
        if (!parts[i].ok && at < sizeof(out->detail))
            at += (size_t)snprintf(out->detail + at, sizeof(out->detail) - at, "%smissing: %s",
                                   at ? "; " : "", parts[i].what);
    if (!out->launch && at < sizeof(out->detail))
        snprintf(out->detail + at, sizeof(out->detail) - at, "%slaunch failed: %s",
                 at ? "; " : "", why);
    return 0;
}
