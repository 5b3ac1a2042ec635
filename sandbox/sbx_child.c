/*
 * sbx_child.c - the cloned child: from clone to the sandbox's init.
 *
 * It waits for the parent's "go" (id maps written, cgroup joined), unshares
 * the cgroup namespace, opens every host source, becomes uid 1000 keeping
 * the namespace's capabilities, builds the root on a tmpfs and pivots into
 * it, sets the hostname, loopback and rlimits, drops every capability, sets
 * no_new_privs and stays as PID 1: it forks the program (setsid, descriptors,
 * seccomp, execve) and then forwards signals, reaps, enforces the wall time
 * and reports the program's status. Any failing step is reported over the
 * close-on-exec step pipe and the child exits: nothing runs.
 *
 * Runs in a copy of a possibly threaded process: no allocation, no stdio,
 * raw syscalls where glibc would coordinate with threads that are not here.
 */
#include "sbx_int.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/capability.h>
#include <linux/seccomp.h>
#include <net/if.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef CLONE_NEWCGROUP
#define CLONE_NEWCGROUP 0x02000000
#endif

/* ---- helpers usable in the child: no allocation, no stdio ---- */

static size_t cpy(char *dst, size_t cap, size_t at, const char *src)
{
    while (*src && at + 1 < cap)
        dst[at++] = *src++;
    dst[at] = '\0';
    return at;
}

static void fmt_int(char *buf, size_t cap, long v)
{
    char tmp[24];
    int n = 0, neg = v < 0;
    unsigned long u = neg ? (unsigned long)-v : (unsigned long)v;

    do {
        tmp[n++] = (char)('0' + u % 10);
        u /= 10;
    } while (u && n < 22);
    size_t at = 0;
    if (neg && at + 1 < cap)
        buf[at++] = '-';
    while (n && at + 1 < cap)
        buf[at++] = tmp[--n];
    buf[at] = '\0';
}

static void fd_path(char *buf, size_t cap, int fd)
{
    char num[24];
    fmt_int(num, sizeof(num), fd);
    cpy(buf, cap, cpy(buf, cap, 0, "/proc/self/fd/"), num);
}

/* Report the failed step and leave; the parent names it in its error. */
SBX_CHILD_SIDE __attribute__((noreturn)) static void fail(const sbx_plan *p, const char *step,
                                                         const char *what, int e)
{
    struct sbx_step_msg m;
    memset(&m, 0, sizeof(m));
    size_t at = cpy(m.step, sizeof(m.step), 0, step);
    if (what && *what) {
        at = cpy(m.step, sizeof(m.step), at, " ");
        cpy(m.step, sizeof(m.step), at, what);
    }
    m.err = e;
    if (write(p->err_w, &m, sizeof(m)) < 0) {
        /* nothing more to do: the parent sees EOF and a dead child */
    }
    _exit(127);
}

/* mkdir -p of `rel` under the staging root without following symlinks, so a
 * link planted in a bound tree cannot redirect a mount point. Creates the
 * last component as a directory or an empty file. */
static int make_target(const char *path, int is_dir)
{
    char comp[PATH_MAX];
    int fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC), nfd;
    const char *s = path;

    if (fd < 0)
        return -1;
    while (*s == '/')
        s++;
    while (*s) {
        size_t n = 0;
        while (s[n] && s[n] != '/')
            n++;
        if (n >= sizeof(comp)) {
            close(fd);
            errno = ENAMETOOLONG;
            return -1;
        }
        memcpy(comp, s, n);
        comp[n] = '\0';
        s += n;
        while (*s == '/')
            s++;
        int last = *s == '\0';
        if (strcmp(comp, "..") == 0 || strcmp(comp, ".") == 0) {
            close(fd);
            errno = EINVAL;
            return -1;
        }
        if (last && !is_dir) {
            nfd = openat(fd, comp, O_CREAT | O_WRONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0644);
        } else {
            if (mkdirat(fd, comp, 0755) < 0 && errno != EEXIST) {
                close(fd);
                return -1;
            }
            nfd = openat(fd, comp, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        }
        close(fd);
        if (nfd < 0)
            return -1;
        fd = nfd;
    }
    close(fd);
    return 0;
}

/* Flags a bind mount in a user namespace must keep on remount (locked). */
static unsigned long locked_flags(const char *path)
{
    struct statvfs sv;
    unsigned long f = 0;

    if (statvfs(path, &sv) < 0)
        return 0;
    if (sv.f_flag & ST_NOEXEC)
        f |= MS_NOEXEC;
    if (sv.f_flag & ST_NOATIME)
        f |= MS_NOATIME;
    if (sv.f_flag & ST_NODIRATIME)
        f |= MS_NODIRATIME;
    if (sv.f_flag & ST_RELATIME)
        f |= MS_RELATIME;
    if (sv.f_flag & ST_RDONLY)
        f |= MS_RDONLY;
    return f;
}

static int capset_raw(uint32_t eff0, uint32_t eff1, uint32_t prm0, uint32_t prm1)
{
    struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct d[2];

    memset(d, 0, sizeof(d));
    d[0].effective = eff0;
    d[1].effective = eff1;
    d[0].permitted = prm0;
    d[1].permitted = prm1;
    return (int)syscall(SYS_capset, &h, d);
}

static int capget_raw(struct __user_cap_data_struct d[2])
{
    struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
    return (int)syscall(SYS_capget, &h, d);
}

/* The init is a copy of the launching process: its command line and
 * environment (a server's configuration, tokens) would be readable through
 * /proc/1/cmdline. Zero them in this copy; the caller's are untouched. */
SBX_CHILD_SIDE static void scrub_args(void)
{
    char buf[2048];
    unsigned long v[4] = {0, 0, 0, 0};
    int fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
    ssize_t n;

    if (fd < 0)
        return;
    n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0)
        return;
    buf[n] = '\0';
    char *p = strrchr(buf, ')');
    if (!p)
        return;
    /* Fields after ")" start at 3 (state); arg_start..env_end are 48-51. */
    int field = 2;
    for (p++; *p; p++) {
        if (*p != ' ')
            continue;
        field++;
        if (field >= 48 && field <= 51) {
            unsigned long x = 0;
            for (const char *q = p + 1; *q >= '0' && *q <= '9'; q++)
                x = x * 10 + (unsigned long)(*q - '0');
            v[field - 48] = x;
        }
    }
    if (v[0] && v[1] > v[0] && v[1] - v[0] < (1UL << 20))
        memset((void *)v[0], 0, v[1] - v[0]);
    if (v[2] && v[3] > v[2] && v[3] - v[2] < (1UL << 20))
        memset((void *)v[2], 0, v[3] - v[2]);
}

/* ---- the init: PID 1 inside ---- */

static volatile sig_atomic_t prog_pid;
static volatile sig_atomic_t wall_fired;

static void on_forward(int sig)
{
    if (prog_pid > 0)
        kill((pid_t)prog_pid, sig);
}

static void on_wall(int sig)
{
    (void)sig;
    wall_fired = 1;
    kill(-1, SIGKILL);      /* from PID 1: everything in the namespace but itself */
}

static void close_except(const int *keep, size_t n)
{
    int lo = 3;
    for (;;) {
        int next = INT_MAX;
        for (size_t i = 0; i < n; i++)
            if (keep[i] >= lo && keep[i] < next)
                next = keep[i];
        if (next == INT_MAX) {
            if (syscall(SYS_close_range, (unsigned)lo, ~0U, 0) < 0)
                for (int fd = lo; fd < 65536; fd++)
                    close(fd);
            return;
        }
        if (next > lo && syscall(SYS_close_range, (unsigned)lo, (unsigned)(next - 1), 0) < 0)
            for (int fd = lo; fd < next; fd++)
                close(fd);
        lo = next + 1;
    }
}

/* In the program's process: stdio, descriptors, session, seccomp, exec. */
SBX_CHILD_SIDE __attribute__((noreturn)) static void exec_program(const sbx_plan *p, int devnull)
{
    const sbx_spec *s = p->spec;
    int tmp[3];
    int keep[64 + 1];
    size_t nk = 0;
    sigset_t none;

    sigemptyset(&none);
    for (int sig = 1; sig < NSIG; sig++)
        signal(sig, SIG_DFL);
    sigprocmask(SIG_SETMASK, &none, NULL);
    if (setsid() < 0)
        fail(p, "setsid", "", errno);
    for (int i = 0; i < 3; i++) {
        int src = s->stdio[i] >= 0 ? s->stdio[i] : devnull;
        if ((tmp[i] = fcntl(src, F_DUPFD_CLOEXEC, 3)) < 0)
            fail(p, "stdio", "", errno);
    }
    for (int i = 0; i < 3; i++)
        if (dup2(tmp[i], i) < 0)
            fail(p, "stdio", "", errno);
    keep[nk++] = p->err_w;
    for (size_t i = 0; i < s->n_pass_fds && nk < 65; i++)
        keep[nk++] = s->pass_fds[i];
    close_except(keep, nk);
    for (size_t i = 0; i < s->n_pass_fds; i++) {
        int fl = fcntl(s->pass_fds[i], F_GETFD);
        if (fl < 0 || fcntl(s->pass_fds[i], F_SETFD, fl & ~FD_CLOEXEC) < 0)
            fail(p, "pass descriptors", "", errno);
    }
    if (p->degraded) {
        /* No cgroup: per-process limits stand in, set here so the init
         * itself is not held to the job's address-space limit. */
        struct rlimit rl;
        if (s->mem_bytes > 0) {
            rl.rlim_cur = rl.rlim_max = (rlim_t)s->mem_bytes;
            if (setrlimit(RLIMIT_AS, &rl) < 0)
                fail(p, "rlimit", "as", errno);
        }
        if (s->pids > 0) {
            rl.rlim_cur = rl.rlim_max = (rlim_t)s->pids;
            if (setrlimit(RLIMIT_NPROC, &rl) < 0)
                fail(p, "rlimit", "nproc", errno);
        }
    }
    if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &p->bpf) < 0)
        fail(p, "seccomp", "", errno);
    const char *prog = p->argv[0];
    if (strchr(prog, '/')) {
        execve(prog, p->argv, p->envp);
        fail(p, "exec", prog, errno);
    }
    static const char *const dirs[] = {"/usr/local/bin/", "/usr/bin/", "/bin/"};
    int last = ENOENT;
    for (size_t i = 0; i < 3; i++) {
        char full[PATH_MAX];
        cpy(full, sizeof(full), cpy(full, sizeof(full), 0, dirs[i]), prog);
        execve(full, p->argv, p->envp);
        if (errno != ENOENT)
            last = errno;
    }
    fail(p, "exec", prog, last);
}

SBX_CHILD_SIDE __attribute__((noreturn)) static void run_init(const sbx_plan *p, int devnull)
{
    const sbx_spec *s = p->spec;
    struct sigaction sa;
    int fwd[] = {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};
    int keep[64 + 8];
    size_t nk = 0;
    pid_t child;
    int status = 0, have = 0;

    /* Descriptors the init does not need go before the program exists. */
    keep[nk++] = p->err_w;
    keep[nk++] = p->st_w;
    keep[nk++] = devnull;
    for (int i = 0; i < 3; i++)
        if (s->stdio[i] >= 0)
            keep[nk++] = s->stdio[i];
    for (size_t i = 0; i < s->n_pass_fds && nk < 64 + 8; i++)
        keep[nk++] = s->pass_fds[i];
    close_except(keep, nk);

    /* The launcher's signal state is inherited: a server that blocks
     * signals or ignores SIGCHLD would leave the init deaf to the wall
     * timer or unable to wait for the program. */
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    signal(SIGCHLD, SIG_DFL);
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_forward;
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < sizeof(fwd) / sizeof(fwd[0]); i++)
        sigaction(fwd[i], &sa, NULL);
    sa.sa_handler = on_wall;
    sigaction(SIGALRM, &sa, NULL);

    /* A raw clone, not fork(): fork runs the parent's atfork handlers,
     * whose locks another parent thread may have held at clone time. */
    child = (pid_t)syscall(SYS_clone, SIGCHLD, 0, NULL, NULL, 0);
    if (child < 0)
        fail(p, "fork", "", errno);
    if (child == 0)
        exec_program(p, devnull);
    prog_pid = child;
    /* The init is confined too; it only waits, forwards and reports. Its
     * copy of the step pipe stays open until then, so a failure here still
     * fails the launch. */
    if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &p->bpf) < 0) {
        int e = errno;
        kill(-1, SIGKILL);
        fail(p, "seccomp", "init", e);
    }
    close(p->err_w);
    if (s->wall_ms > 0) {
        struct itimerval it;
        memset(&it, 0, sizeof(it));
        it.it_value.tv_sec = s->wall_ms / 1000;
        it.it_value.tv_usec = (s->wall_ms % 1000) * 1000;
        setitimer(ITIMER_REAL, &it, NULL);
    }
    for (;;) {
        int st;
        pid_t w = waitpid(-1, &st, __WALL);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            break;      /* ECHILD: nobody left */
        }
        if (w == child) {
            status = st;
            have = 1;
            prog_pid = 0;
            kill(-1, SIGKILL);  /* the program is gone: so is what it left behind */
        }
    }
    int rec[2] = {have ? status : (SIGKILL & 0x7f), wall_fired ? SBX_LIMIT_WALL : SBX_LIMIT_NONE};
    if (write(p->st_w, rec, sizeof(rec)) < 0) {
        /* the parent falls back to the init's own status */
    }
    _exit(0);
}

/* Pseudo-terminals for the job (eddy-kernel's terminals, `script`,
 * ssh-less tools that want a tty): a devpts of its own under the /dev tmpfs
 * at `dev` (newinstance: the job sees only its own ptys, never the host's),
 * ptys 0620 and /dev/ptmx a link to pts/ptmx (0666), as in containers. The
 * filesystem is mountable in the job's user namespace; a kernel without
 * that leaves the job without ptys (posix_openpt fails), which is not fatal. */
SBX_CHILD_SIDE static void mount_devpts(const sbx_plan *p, const char *dev)
{
    char pts[PATH_MAX], ptmx[PATH_MAX];
    size_t at;

    at = cpy(pts, sizeof(pts), 0, dev);
    cpy(pts, sizeof(pts), at, "/pts");
    at = cpy(ptmx, sizeof(ptmx), 0, dev);
    cpy(ptmx, sizeof(ptmx), at, "/ptmx");
    if (make_target(pts, 1) < 0)
        fail(p, "mount target", "/dev/pts", errno);
    if (mount("devpts", pts, "devpts", MS_NOSUID | MS_NOEXEC, "newinstance,ptmxmode=0666,mode=0620") < 0)
        return;   /* no ptys in this sandbox */
    if (symlink("pts/ptmx", ptmx) < 0)
        fail(p, "symlink", "/dev/ptmx", errno);
}

/* ---- the child: from clone to init ---- */

SBX_CHILD_SIDE int sbx__child_main(void *arg)
{
    const sbx_plan *p = arg;
    const sbx_spec *s = p->spec;
    char c, path[PATH_MAX], src[64];
    int devnull;

    close(p->go_w);
    close(p->err_r);
    close(p->st_r);
    if (read(p->go_r, &c, 1) != 1)
        _exit(127);         /* the parent gave up */
    close(p->go_r);
    scrub_args();
    /* Nor the launcher's name ("eddy-launcher", sbx_launcher.c) in ps. */
    prctl(PR_SET_NAME, "sbx-init", 0, 0, 0);

    if (unshare(CLONE_NEWCGROUP) < 0)
        fail(p, "cgroup namespace", "", errno);
    if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
        fail(p, "mount propagation", "", errno);

    /* Open every host source now, before anything is mounted over it. */
    sbx_plan *pw = (sbx_plan *)p;   /* the child's own copy of the plan */
    for (size_t i = 0; i < p->n_mops; i++) {
        sbx_mop *m = &pw->mops[i];
        m->fd = -1;
        if (m->kind != SBX_MOP_BIND_RO && m->kind != SBX_MOP_BIND_RW && m->kind != SBX_MOP_DEV)
            continue;
        m->fd = open(m->src, O_PATH | O_CLOEXEC);
        if (m->fd < 0 && !(m->optional && errno == ENOENT))
            fail(p, "open", m->src, errno);
        /* The file the parent checked, not one swapped in since. */
        struct stat st;
        if (m->fd >= 0 && m->check_id && (fstat(m->fd, &st) < 0 || st.st_dev != m->dev || st.st_ino != m->ino))
            fail(p, "bind source changed", m->src, EXDEV);
    }

    /* Become aistudio (uid 1000 -> the job's host uid), keeping the
     * namespace's capabilities until the root is built. */
    /* Raw syscalls: glibc's set*id would try to broadcast to the parent's
     * other threads, which do not exist in this process. */
    if (prctl(PR_SET_KEEPCAPS, 1) < 0 || syscall(SYS_setgroups, 0, NULL) < 0 ||
        syscall(SYS_setresgid, SBX_INSIDE_UID, SBX_INSIDE_UID, SBX_INSIDE_UID) < 0 ||
        syscall(SYS_setresuid, SBX_INSIDE_UID, SBX_INSIDE_UID, SBX_INSIDE_UID) < 0)
        fail(p, "id switch", "", errno);
    {
        struct __user_cap_data_struct d[2];
        if (capget_raw(d) < 0 || capset_raw(d[0].permitted, d[1].permitted,
                                            d[0].permitted, d[1].permitted) < 0)
            fail(p, "id switch", "capabilities", errno);
    }
    /* Set after the uid change, which clears it: the job dies with the
     * thread that launched it (see sbx.h). */
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0)
        fail(p, "parent death signal", "", errno);

    if (mount("tmpfs", SBX_STAGE, "tmpfs", MS_NOSUID | MS_NODEV, "size=1m,mode=0755") < 0)
        fail(p, "mount", "root tmpfs", errno);

    for (size_t i = 0; i < p->n_mops; i++) {
        const sbx_mop *m = &p->mops[i];
        size_t at = cpy(path, sizeof(path), 0, SBX_STAGE);
        cpy(path, sizeof(path), at, m->dst);
        if ((m->kind == SBX_MOP_BIND_RO || m->kind == SBX_MOP_BIND_RW || m->kind == SBX_MOP_DEV) && m->fd < 0)
            continue;   /* optional and absent */
        switch (m->kind) {
        case SBX_MOP_BIND_RO:
        case SBX_MOP_BIND_RW:
        case SBX_MOP_DEV: {
            if (make_target(path, m->is_dir) < 0)
                fail(p, "mount target", m->dst, errno);
            fd_path(src, sizeof(src), m->fd);
            if (m->detached) {
                if (syscall(SYS_move_mount, m->fd, "", AT_FDCWD, path, 0x4 /* MOVE_MOUNT_F_EMPTY_PATH */) < 0)
                    fail(p, "mount", m->dst, errno);
            } else if (mount(src, path, NULL, MS_BIND, NULL) < 0) {
                fail(p, "mount", m->dst, errno);
            }
            if (m->kind == SBX_MOP_DEV)
                break;
            unsigned long fl = MS_REMOUNT | MS_BIND | MS_NOSUID | MS_NODEV | locked_flags(path);
            if (m->kind == SBX_MOP_BIND_RO)
                fl |= MS_RDONLY;
            if (mount(NULL, path, NULL, fl, NULL) < 0)
                fail(p, "mount read-only", m->dst, errno);
            break;
        }
        case SBX_MOP_TMPFS: {
            char opts[64], num[24];
            if (make_target(path, 1) < 0)
                fail(p, "mount target", m->dst, errno);
            fmt_int(num, sizeof(num), (long)m->bytes);
            size_t o = cpy(opts, sizeof(opts), 0, "size=");
            o = cpy(opts, sizeof(opts), o, num);
            o = cpy(opts, sizeof(opts), o, m->mode == 01777 ? ",mode=1777" : ",mode=0755");
            if (mount("tmpfs", path, "tmpfs", MS_NOSUID | MS_NODEV, opts) < 0)
                fail(p, "mount tmpfs", m->dst, errno);
            if (strcmp(m->dst, "/dev") == 0)
                mount_devpts(p, path);
            break;
        }
        case SBX_MOP_SYMLINK:
            if (symlink(m->src, path) < 0)
                fail(p, "symlink", m->dst, errno);
            break;
        case SBX_MOP_DIR:
            if (make_target(path, 1) < 0)
                fail(p, "mkdir", m->dst, errno);
            break;
        case SBX_MOP_FILE: {
            int fd = open(path, O_CREAT | O_EXCL | O_WRONLY | O_NOFOLLOW | O_CLOEXEC, 0644);
            size_t len = strlen(m->src);
            if (fd < 0 || write(fd, m->src, len) != (ssize_t)len)
                fail(p, "write", m->dst, errno);
            close(fd);
            break;
        }
        case SBX_MOP_PROC:
            if (make_target(path, 1) < 0 ||
                mount("proc", path, "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
                fail(p, "mount", "/proc", errno);
            break;
        case SBX_MOP_MASK:
            /* Over the tree's repository: empty, read-only, and a mount
             * point, which the program can neither rename, remove nor
             * unmount (no capability is left to it). */
            if (make_target(path, 1) < 0)
                fail(p, "mount target", m->dst, errno);
            if (mount("tmpfs", path, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
                      "size=4k,nr_inodes=16,mode=0555") < 0)
                fail(p, "mount mask", m->dst, errno);
            break;
        case SBX_MOP_RDONLY:
            if (mount(NULL, path, NULL, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV,
                      NULL) < 0)
                fail(p, "mount read-only", m->dst, errno);
            break;
        }
        if (m->fd >= 0)
            close(m->fd);
    }

    if (chdir(SBX_STAGE) < 0)
        fail(p, "pivot_root", "chdir", errno);
    if (syscall(SYS_pivot_root, ".", ".") < 0)
        fail(p, "pivot_root", "", errno);
    if (umount2(".", MNT_DETACH) < 0)
        fail(p, "pivot_root", "detach old root", errno);
    if (chdir("/") < 0)
        fail(p, "pivot_root", "chdir", errno);
    if (mount(NULL, "/", NULL, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV, NULL) < 0)
        fail(p, "mount read-only", "/", errno);

    if (sethostname("eddy-sandbox", 12) < 0)
        fail(p, "hostname", "", errno);
    if (s->net == SBX_NET_LOOPBACK) {
        struct ifreq ifr;
        int sk = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        memset(&ifr, 0, sizeof(ifr));
        cpy(ifr.ifr_name, sizeof(ifr.ifr_name), 0, "lo");
        if (sk < 0 || ioctl(sk, SIOCGIFFLAGS, &ifr) < 0)
            fail(p, "network", "lo", errno);
        ifr.ifr_flags |= IFF_UP | IFF_RUNNING;
        if (ioctl(sk, SIOCSIFFLAGS, &ifr) < 0)
            fail(p, "network", "lo up", errno);
        close(sk);
    }

    /* rlimits: always, cgroups or not. */
    struct rlimit rl;
    rl.rlim_cur = rl.rlim_max = 0;
    if (setrlimit(RLIMIT_CORE, &rl) < 0)
        fail(p, "rlimit", "core", errno);
    rl.rlim_cur = rl.rlim_max = (rlim_t)(s->nofile > 0 ? s->nofile : 1024);
    if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
        fail(p, "rlimit", "nofile", errno);
    if (s->fsize_bytes > 0) {
        rl.rlim_cur = rl.rlim_max = (rlim_t)s->fsize_bytes;
        if (setrlimit(RLIMIT_FSIZE, &rl) < 0)
            fail(p, "rlimit", "fsize", errno);
    }
    if (s->cpu_s > 0) {
        rl.rlim_cur = (rlim_t)s->cpu_s;
        rl.rlim_max = (rlim_t)s->cpu_s + 1;
        if (setrlimit(RLIMIT_CPU, &rl) < 0)
            fail(p, "rlimit", "cpu", errno);
    }
    if (chdir(p->cwd) < 0)
        fail(p, "chdir", p->cwd, errno);
    if ((devnull = open("/dev/null", O_RDWR | O_CLOEXEC)) < 0)
        fail(p, "open", "/dev/null", errno);
    if (setsid() < 0)
        fail(p, "setsid", "", errno);
    /* what the program writes is readable by others (the serving process
     * lists a running job's output: README.md "Privilege split"), whatever
     * umask the server had (systemd's UMask=0077) */
    umask(022);

    /* Drop every capability: bounding, ambient, then the rest. */
    for (int cap = 0; cap < 64; cap++)
        if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0 && errno != EINVAL)
            fail(p, "capability drop", "bounding", errno);
    if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
        fail(p, "capability drop", "ambient", errno);
    if (prctl(PR_SET_KEEPCAPS, 0) < 0 || capset_raw(0, 0, 0, 0) < 0)
        fail(p, "capability drop", "", errno);
    {
        struct __user_cap_data_struct d[2];
        if (capget_raw(d) < 0 || d[0].effective || d[1].effective || d[0].permitted ||
            d[1].permitted || d[0].inheritable || d[1].inheritable)
            fail(p, "capability drop", "verify", EPERM);
        for (int cap = 0; cap < 64; cap++)
            if (prctl(PR_CAPBSET_READ, cap, 0, 0, 0) == 1)
                fail(p, "capability drop", "verify bounding", EPERM);
    }
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
        fail(p, "no_new_privs", "", errno);
    run_init(p, devnull);
}
