/*
 * sbx_seccomp.c - the seccomp allow-list.
 *
 * It starts from Docker's default profile (moby profiles/seccomp/default.json,
 * the syscalls allowed without extra capabilities) and tightens it:
 *  - denied outright (they are simply not on the list): io_uring_*,
 *    userfaultfd, bpf, perf_event_open, keyctl/add_key/request_key, mount
 *    and the new mount API, umount, pivot_root, setns, ptrace,
 *    process_vm_*, kexec_*, *_module, open_by_handle_at, name_to_handle_at;
 *  - clone only without namespace flags, unshare only without them;
 *  - clone3 fails with ENOSYS so libc falls back to clone, whose flags a
 *    classic filter can see (clone3 passes them in memory);
 *  - socket only for AF_UNIX, AF_INET, AF_INET6 (no netlink, packet, vsock...);
 *  - ioctl TIOCSTI and TIOCLINUX denied (terminal injection), and requests
 *    with high bits set (the kernel truncates them to 32 bits);
 *  - personality only the values Docker allows;
 *  - only the native x86_64 ABI: i386 (int 0x80) and x32 calls kill the
 *    process (the bad-arch action).
 * Everything else fails with EPERM.
 */
#include "sbx_int.h"
#include "ed_error.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <seccomp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME 0x00000080
#endif

static const char *const allowed[] = {
    "accept", "accept4", "access", "alarm", "arch_prctl", "bind", "brk",
    "cachestat", "capget", "capset", "chdir", "chmod", "chown", "clock_getres",
    "clock_gettime", "clock_nanosleep", "close", "close_range", "connect",
    "copy_file_range", "creat", "dup", "dup2", "dup3", "epoll_create",
    "epoll_create1", "epoll_ctl", "epoll_pwait", "epoll_pwait2", "epoll_wait",
    "eventfd", "eventfd2", "execve", "execveat", "exit", "exit_group",
    "faccessat", "faccessat2", "fadvise64", "fallocate", "fchdir", "fchmod",
    "fchmodat", "fchmodat2", "fchown", "fchownat", "fcntl", "fdatasync",
    "fgetxattr", "flistxattr", "flock", "fork", "fremovexattr", "fsetxattr",
    "fstat", "fstatfs", "fsync", "ftruncate", "futex", "futex_requeue",
    "futex_wait", "futex_waitv", "futex_wake", "futimesat", "getcpu", "getcwd",
    "getdents", "getdents64", "getegid", "geteuid", "getgid", "getgroups",
    "getitimer", "get_mempolicy", "getpeername", "getpgid", "getpgrp", "getpid",
    "getppid", "getpriority", "getrandom", "getresgid", "getresuid",
    "getrlimit", "get_robust_list", "getrusage", "getsid", "getsockname",
    "getsockopt", "gettid", "gettimeofday", "getuid", "getxattr",
    "inotify_add_watch", "inotify_init", "inotify_init1", "inotify_rm_watch",
    "io_cancel", "io_destroy", "io_getevents", "io_pgetevents", "ioprio_get",
    "ioprio_set", "io_setup", "io_submit", "kill", "lchown", "lgetxattr",
    "link", "linkat", "listen", "listxattr", "llistxattr", "lremovexattr",
    "lseek", "lsetxattr", "lstat", "madvise", "map_shadow_stack", "membarrier",
    "memfd_create", "mincore", "mkdir", "mkdirat", "mknod", "mknodat", "mlock",
    "mlock2", "mlockall", "mmap", "mprotect", "mq_getsetattr", "mq_notify",
    "mq_open", "mq_timedreceive", "mq_timedsend", "mq_unlink", "mremap",
    "msgctl", "msgget", "msgrcv", "msgsnd", "msync", "munlock", "munlockall",
    "munmap", "nanosleep", "newfstatat", "open", "openat", "openat2", "pause",
    "pidfd_open", "pidfd_send_signal", "pipe", "pipe2", "pkey_alloc",
    "pkey_free", "pkey_mprotect", "poll", "ppoll", "prctl", "pread64", "preadv",
    "preadv2", "prlimit64", "pselect6", "pwrite64", "pwritev", "pwritev2",
    "read", "readahead", "readlink", "readlinkat", "readv", "recvfrom",
    "recvmmsg", "recvmsg", "remap_file_pages", "removexattr", "rename",
    "renameat", "renameat2", "restart_syscall", "rmdir", "rseq",
    "rt_sigaction", "rt_sigpending", "rt_sigprocmask", "rt_sigqueueinfo",
    "rt_sigreturn", "rt_sigsuspend", "rt_sigtimedwait", "rt_tgsigqueueinfo",
    "sched_getaffinity", "sched_getattr", "sched_getparam",
    "sched_get_priority_max", "sched_get_priority_min", "sched_getscheduler",
    "sched_rr_get_interval", "sched_setaffinity", "sched_setattr",
    "sched_setparam", "sched_setscheduler", "sched_yield", "seccomp", "select",
    "semctl", "semget", "semop", "semtimedop", "sendfile", "sendmmsg",
    "sendmsg", "sendto", "setfsgid", "setfsuid", "setgid", "setgroups",
    "setitimer", "setpgid", "setpriority", "setregid", "setresgid",
    "setresuid", "setreuid", "setrlimit", "set_robust_list", "setsid",
    "setsockopt", "set_tid_address", "setuid", "setxattr", "shmat", "shmctl",
    "shmdt", "shmget", "shutdown", "sigaltstack", "signalfd", "signalfd4",
    "socketpair", "splice", "stat", "statfs", "statx", "symlink", "symlinkat",
    "sync", "sync_file_range", "syncfs", "sysinfo", "tee", "tgkill", "time",
    "timer_create", "timer_delete", "timer_getoverrun", "timer_gettime",
    "timer_settime", "timerfd_create", "timerfd_gettime", "timerfd_settime",
    "times", "tkill", "truncate", "umask", "uname", "unlink", "unlinkat",
    "utime", "utimensat", "utimes", "vfork", "vmsplice", "wait4", "waitid",
    "write", "writev",
};

/* Namespace bits: clone and unshare may not make new namespaces. */
#define NS_FLAGS ((uint64_t)(CLONE_NEWNS | CLONE_NEWCGROUP | CLONE_NEWUTS | CLONE_NEWIPC | \
                             CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNET))

static int rule(scmp_filter_ctx ctx, uint32_t action, const char *name, unsigned n,
                const struct scmp_arg_cmp *cmp)
{
    int nr = seccomp_syscall_resolve_name(name);
    int rc;

    if (nr == __NR_SCMP_ERROR)
        return 0;       /* not on this architecture */
    rc = seccomp_rule_add_array(ctx, action, nr, n, cmp);
    if (rc < 0)
        return ed_error_set(ED_EIO, "seccomp rule for %s: %s", name, strerror(-rc));
    return 0;
}

/* Allow `name` when argument `arg` lies in [lo, hi), as aligned blocks. */
static int allow_range(scmp_filter_ctx ctx, const char *name, unsigned arg, uint64_t lo, uint64_t hi)
{
    int err;

    while (lo < hi) {
        uint64_t size = 1;
        while ((lo & (size * 2 - 1)) == 0 && lo + size * 2 <= hi && size < (1ULL << 32))
            size *= 2;
        struct scmp_arg_cmp c = {arg, SCMP_CMP_MASKED_EQ, ~(size - 1), lo};
        if ((err = rule(ctx, SCMP_ACT_ALLOW, name, 1, &c)) < 0)
            return err;
        lo += size;
    }
    return 0;
}

int sbx__seccomp_build(struct sock_fprog *prog)
{
    scmp_filter_ctx ctx = NULL;
    int err = 0, rc, mfd = -1;
    struct sock_filter *buf = NULL;
    off_t size;
    static const uint64_t personas[] = {0x0, 0x8, 0x20000, 0x20008, 0xffffffff};
    static const int families[] = {AF_UNIX, AF_INET, AF_INET6};

    memset(prog, 0, sizeof(*prog));
    if ((ctx = seccomp_init(SCMP_ACT_ERRNO(EPERM))) == NULL)
        return ed_error_set(ED_EIO, "seccomp_init failed");
    /* Only the native ABI: i386 and x32 calls hit the bad-arch action. */
    if ((rc = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS)) < 0 ||
        (rc = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_NNP, 0)) < 0) {
        err = ed_error_set(ED_EIO, "seccomp attributes: %s", strerror(-rc));
        goto done;
    }
    for (size_t i = 0; i < sizeof(allowed) / sizeof(allowed[0]); i++)
        if ((err = rule(ctx, SCMP_ACT_ALLOW, allowed[i], 0, NULL)) < 0)
            goto done;

    struct scmp_arg_cmp no_ns = SCMP_A0(SCMP_CMP_MASKED_EQ, NS_FLAGS, 0);
    struct scmp_arg_cmp no_ns_u = SCMP_A0(SCMP_CMP_MASKED_EQ, NS_FLAGS | CLONE_NEWTIME, 0);
    if ((err = rule(ctx, SCMP_ACT_ALLOW, "clone", 1, &no_ns)) < 0 ||
        (err = rule(ctx, SCMP_ACT_ALLOW, "unshare", 1, &no_ns_u)) < 0 ||
        (err = rule(ctx, SCMP_ACT_ERRNO(ENOSYS), "clone3", 0, NULL)) < 0)
        goto done;
    for (size_t i = 0; i < sizeof(families) / sizeof(families[0]); i++) {
        struct scmp_arg_cmp fam = SCMP_A0(SCMP_CMP_EQ, (uint64_t)families[i]);
        if ((err = rule(ctx, SCMP_ACT_ALLOW, "socket", 1, &fam)) < 0)
            goto done;
    }
    for (size_t i = 0; i < sizeof(personas) / sizeof(personas[0]); i++) {
        struct scmp_arg_cmp p = SCMP_A0(SCMP_CMP_EQ, personas[i]);
        if ((err = rule(ctx, SCMP_ACT_ALLOW, "personality", 1, &p)) < 0)
            goto done;
    }
    /* ioctl: everything but terminal injection. libseccomp takes one
     * comparison per argument per rule, so the allowed requests are written
     * as aligned blocks (MASKED_EQ) covering [0, 2^32) minus the denied
     * ones. Requests with high bits set are refused: the kernel truncates
     * them to 32 bits, so they could alias TIOCSTI. */
    {
        uint64_t deny[] = {TIOCSTI, TIOCLINUX};   /* ascending */
        uint64_t lo = 0;
        for (size_t i = 0; i <= 2 && err == 0; i++) {
            uint64_t hi = i < 2 ? deny[i] : 0x100000000ULL;
            err = allow_range(ctx, "ioctl", 1, lo, hi);
            lo = hi + 1;
        }
        if (err < 0)
            goto done;
    }

    if ((mfd = memfd_create("sbx-seccomp", MFD_CLOEXEC)) < 0) {
        err = ed_error_set(ED_EIO, "seccomp export: memfd: %s", strerror(errno));
        goto done;
    }
    if ((rc = seccomp_export_bpf(ctx, mfd)) < 0) {
        err = ed_error_set(ED_EIO, "seccomp export: %s", strerror(-rc));
        goto done;
    }
    size = lseek(mfd, 0, SEEK_END);
    if (size <= 0 || size % (off_t)sizeof(struct sock_filter) != 0 ||
        size / (off_t)sizeof(struct sock_filter) > 4096) {
        err = ed_error_set(ED_EIO, "seccomp export: bad program size %lld", (long long)size);
        goto done;
    }
    if ((buf = malloc((size_t)size)) == NULL) {
        err = ed_error_set(ED_ENOMEM, "seccomp program");
        goto done;
    }
    if (pread(mfd, buf, (size_t)size, 0) != size) {
        err = ed_error_set(ED_EIO, "seccomp export: short read");
        goto done;
    }
    prog->filter = buf;
    prog->len = (unsigned short)(size / (off_t)sizeof(struct sock_filter));
    buf = NULL;
done:
    free(buf);
    if (mfd >= 0)
        close(mfd);
    seccomp_release(ctx);
    return err;
}

/* Built once per process: the list never changes, and libseccomp takes a
 * millisecond or two to compile it. */
static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
static struct sock_fprog cached;

int sbx__seccomp_program(struct sock_fprog *out)
{
    int err = 0;

    pthread_mutex_lock(&cache_lock);
    if (!cached.filter)
        err = sbx__seccomp_build(&cached);
    *out = cached;
    pthread_mutex_unlock(&cache_lock);
    return err;
}
