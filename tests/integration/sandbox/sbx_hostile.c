/*
 * sbx_hostile - small hostile programs run inside the sandbox by
 * test_sandbox_escape. Each mode tries one class of escape and exits 0 only
 * when every attempt was denied the way the sandbox should deny it; it
 * prints one line per attempt ("DENIED what" / "ESCAPED what ...").
 *
 *   sbx_hostile syscalls [int80=H] [x32=H]
 *                                   denied syscalls, also via int 0x80 and x32;
 *                                   H is what `abi` printed on the host
 *   sbx_hostile abi                 on the host, outside any sandbox: can this
 *                                   kernel make i386 and x32 calls at all?
 *   sbx_hostile read PATH...        each open must fail
 *   sbx_hostile write PATH...       each create/write must fail
 *   sbx_hostile tricks WORKDIR      symlink, hardlink and .. tricks
 *   sbx_hostile mknod DIR           device nodes
 *   sbx_hostile euid                exit 0 when not root (run as a setuid copy)
 *   sbx_hostile signal HOSTPID      signals and ptrace to processes outside
 *   sbx_hostile abstract NAME       connect to a host abstract UNIX socket
 *   sbx_hostile connect PORT        connect to the host's 127.0.0.1:PORT and elsewhere
 *   sbx_hostile forkbomb            fork until refused
 *   sbx_hostile memhog              allocate and touch until killed
 *   sbx_hostile diskfill PATH       write until refused
 *   sbx_hostile spin                burn CPU forever
 *   sbx_hostile fds                 open descriptors until refused
 *   sbx_hostile tree                double-forked tree that ignores SIGTERM
 *   sbx_hostile sleep S             stay alive (a peer for "peer")
 *   sbx_hostile peer HOSTPID        look for and signal another job
 *   sbx_hostile attest N            N threads check their own /proc status, then sleep
 */
#include <errno.h>
#include <fcntl.h>
#include <dirent.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <poll.h>
#include <stddef.h>
#include <unistd.h>

static int failures;

static void verdict(int denied, const char *what, long rc, int err)
{
    if (denied) {
        printf("DENIED %s\n", what);
    } else {
        printf("ESCAPED %s rc=%ld errno=%d (%s)\n", what, rc, err, strerror(err));
        failures++;
    }
    fflush(stdout);
}

/* ---- syscalls ---- */

typedef long (*probe_fn)(void);

#define NS_CLONE_NEWUSER 0x10000000L
#define NS_CLONE_NEWNS   0x00020000L
#define NS_CLONE_NEWNET  0x40000000L

static long p_io_uring_setup(void) { char buf[128] = {0}; return syscall(SYS_io_uring_setup, 8, buf); }
static long p_io_uring_enter(void) { return syscall(SYS_io_uring_enter, 0, 0, 0, 0, NULL, 0); }
static long p_io_uring_register(void) { return syscall(SYS_io_uring_register, 0, 0, NULL, 0); }
static long p_userfaultfd(void) { return syscall(SYS_userfaultfd, 0); }
static long p_bpf(void) { char attr[128] = {0}; return syscall(SYS_bpf, 0, attr, sizeof(attr)); }
static long p_perf(void) { char attr[128] = {0}; return syscall(SYS_perf_event_open, attr, 0, -1, -1, 0); }
static long p_keyctl(void) { return syscall(SYS_keyctl, 0, 0, 0, 0, 0); }
static long p_add_key(void) { return syscall(SYS_add_key, "user", "x", "y", 1, -2); }
static long p_request_key(void) { return syscall(SYS_request_key, "user", "x", NULL, 0); }
static long p_mount(void) { return syscall(SYS_mount, "none", "/tmp", "tmpfs", 0, NULL); }
static long p_umount(void) { return syscall(SYS_umount2, "/proc", 2); }
static long p_pivot_root(void) { return syscall(SYS_pivot_root, "/tmp", "/tmp"); }
static long p_fsopen(void) { return syscall(SYS_fsopen, "tmpfs", 0); }
static long p_open_tree(void) { return syscall(SYS_open_tree, -100, "/", 1); }
static long p_move_mount(void) { return syscall(SYS_move_mount, -1, "", -100, "/tmp", 4); }
static long p_clone_newuser(void)
{
    long r = syscall(SYS_clone, NS_CLONE_NEWUSER | SIGCHLD, 0, NULL, NULL, 0);
    if (r == 0)
        _exit(0);
    return r;
}
static long p_clone_newnet(void)
{
    long r = syscall(SYS_clone, NS_CLONE_NEWNET | SIGCHLD, 0, NULL, NULL, 0);
    if (r == 0)
        _exit(0);
    return r;
}
static long p_unshare_user(void) { return syscall(SYS_unshare, NS_CLONE_NEWUSER); }
static long p_unshare_ns(void) { return syscall(SYS_unshare, NS_CLONE_NEWNS); }
static long p_clone3(void) { char args[88] = {0}; return syscall(SYS_clone3, args, sizeof(args)); }
static long p_setns(void) { return syscall(SYS_setns, 0, 0); }
static long p_ptrace(void) { return syscall(SYS_ptrace, PTRACE_TRACEME, 0, 0, 0); }
static long p_ptrace_attach(void) { return syscall(SYS_ptrace, PTRACE_ATTACH, 1, 0, 0); }
static long p_process_vm_readv(void)
{
    char buf[8];
    struct iovec l = {buf, 8}, r = {buf, 8};
    return syscall(SYS_process_vm_readv, 1, &l, 1, &r, 1, 0);
}
static long p_kexec_load(void) { return syscall(SYS_kexec_load, 0, 0, NULL, 0); }
static long p_kexec_file_load(void) { return syscall(SYS_kexec_file_load, -1, -1, 0, "", 0); }
static long p_init_module(void) { return syscall(SYS_init_module, "", 0, ""); }
static long p_finit_module(void) { return syscall(SYS_finit_module, 0, "", 0); }
static long p_delete_module(void) { return syscall(SYS_delete_module, "x", 0); }
static long p_open_by_handle_at(void) { char h[64] = {0}; return syscall(SYS_open_by_handle_at, -100, h, 0); }
static long p_name_to_handle_at(void) { char h[64] = {0}; int id; return syscall(SYS_name_to_handle_at, -100, "/", h, &id, 0); }
static long p_sock_netlink(void) { return syscall(SYS_socket, AF_NETLINK, SOCK_RAW, 0); }
static long p_sock_packet(void) { return syscall(SYS_socket, AF_PACKET, SOCK_RAW, 0); }
static long p_sock_vsock(void) { return syscall(SYS_socket, 40 /* AF_VSOCK */, SOCK_STREAM, 0); }
static long p_sock_alg(void) { return syscall(SYS_socket, AF_ALG, SOCK_SEQPACKET, 0); }
static long p_sock_highbits(void) { return syscall(SYS_socket, (1ULL << 32) | AF_NETLINK, SOCK_RAW, 0); }
static long p_tiocsti(void) { char c = 'x'; return syscall(SYS_ioctl, 0, TIOCSTI, &c); }
static long p_tiocsti_high(void) { char c = 'x'; return syscall(SYS_ioctl, 0, (1ULL << 32) | TIOCSTI, &c); }
static long p_tioclinux(void) { char c = 0; return syscall(SYS_ioctl, 0, TIOCLINUX, &c); }
static long p_chroot(void) { return syscall(SYS_chroot, "/tmp"); }
static long p_personality(void) { return syscall(SYS_personality, 0x0040000 /* ADDR_NO_RANDOMIZE */); }
static long p_acct(void) { return syscall(SYS_acct, "/tmp/a"); }
static long p_swapon(void) { return syscall(SYS_swapon, "/tmp/s", 0); }
static long p_reboot(void) { return syscall(SYS_reboot, 0xfee1dead, 672274793, 0x4321fedc, NULL); }
static long p_settimeofday(void) { return syscall(SYS_settimeofday, NULL, NULL); }
static long p_iopl(void) { return syscall(SYS_iopl, 3); }
static long p_syslog(void) { return syscall(SYS_syslog, 3, NULL, 0); }
static long p_quotactl(void) { return syscall(SYS_quotactl, 0, "", 0, NULL); }

/* i386 getpid (20) through int 0x80: the i386 ABI is not on the list. */
static long p_int80(void)
{
    long ret = 20;
    __asm__ volatile("int $0x80" : "+a"(ret) : : "memory");
    if (ret < 0) {
        errno = (int)-ret;
        return -1;
    }
    return ret;
}

/* x32 getpid (39 | __X32_SYSCALL_BIT): the x32 ABI is not on the list. */
static long p_x32(void)
{
    long ret = 39 | 0x40000000L;
    __asm__ volatile("syscall" : "+a"(ret) : : "rcx", "r11", "memory");
    if (ret < 0) {
        errno = (int)-ret;
        return -1;
    }
    return ret;
}

/* x32 mount: a denied call under the other ABI. */
static long p_x32_mount(void)
{
    long ret = 165 | 0x40000000L;
    __asm__ volatile("syscall" : "+a"(ret) : : "rcx", "r11", "memory");
    if (ret < 0) {
        errno = (int)-ret;
        return -1;
    }
    return ret;
}

/* Denied calls again through the other ABIs, by number. Any i386 or x32
 * call must kill the process (the filter's bad-arch action). */
static long abi_nr;
static long p_int80_nr(void)
{
    long ret = abi_nr;
    __asm__ volatile("int $0x80" : "+a"(ret) : "b"(0), "c"(0), "d"(0) : "memory");
    if (ret < 0) {
        errno = (int)-ret;
        return -1;
    }
    return ret;
}
static long p_x32_nr(void)
{
    long ret = abi_nr | 0x40000000L;
    __asm__ volatile("xor %%edi, %%edi\n\txor %%esi, %%esi\n\txor %%edx, %%edx\n\tsyscall"
                     : "+a"(ret) : : "rcx", "r11", "rdi", "rsi", "rdx", "memory");
    if (ret < 0) {
        errno = (int)-ret;
        return -1;
    }
    return ret;
}

static const struct { const char *name; long i386, x86_64; } abi_calls[] = {
    {"mount", 21, 165},           {"umount2", 52, 166},        {"ptrace", 26, 101},
    {"ioctl", 54, 16},            {"socketcall/socket", 102, 41}, {"init_module", 128, 175},
    {"kexec_load", 283, 246},     {"keyctl", 288, 250},        {"unshare", 310, 272},
    {"perf_event_open", 336, 298}, {"open_by_handle_at", 342, 304}, {"setns", 346, 308},
    {"bpf", 357, 321},            {"userfaultfd", 374, 323},   {"io_uring_setup", 425, 425},
    {"clone3", 435, 435},         {"pivot_root", 217, 155},    {"getpid", 20, 39},
};

/* Other ABIs: 1 i386 (int 0x80), 2 x32. */
#define ABI_I386 1
#define ABI_X32  2

static const struct {
    const char *name;
    probe_fn fn;
    int want_errno;     /* EPERM, ENOSYS, or 0 for "killed by SIGSYS" */
} probes[] = {
    {"io_uring_setup", p_io_uring_setup, EPERM},
    {"io_uring_enter", p_io_uring_enter, EPERM},
    {"io_uring_register", p_io_uring_register, EPERM},
    {"userfaultfd", p_userfaultfd, EPERM},
    {"bpf", p_bpf, EPERM},
    {"perf_event_open", p_perf, EPERM},
    {"keyctl", p_keyctl, EPERM},
    {"add_key", p_add_key, EPERM},
    {"request_key", p_request_key, EPERM},
    {"mount", p_mount, EPERM},
    {"umount2", p_umount, EPERM},
    {"pivot_root", p_pivot_root, EPERM},
    {"fsopen", p_fsopen, EPERM},
    {"open_tree", p_open_tree, EPERM},
    {"move_mount", p_move_mount, EPERM},
    {"clone(CLONE_NEWUSER)", p_clone_newuser, EPERM},
    {"clone(CLONE_NEWNET)", p_clone_newnet, EPERM},
    {"unshare(CLONE_NEWUSER)", p_unshare_user, EPERM},
    {"unshare(CLONE_NEWNS)", p_unshare_ns, EPERM},
    {"clone3", p_clone3, ENOSYS},
    {"setns", p_setns, EPERM},
    {"ptrace(TRACEME)", p_ptrace, EPERM},
    {"ptrace(ATTACH, 1)", p_ptrace_attach, EPERM},
    {"process_vm_readv", p_process_vm_readv, EPERM},
    {"kexec_load", p_kexec_load, EPERM},
    {"kexec_file_load", p_kexec_file_load, EPERM},
    {"init_module", p_init_module, EPERM},
    {"finit_module", p_finit_module, EPERM},
    {"delete_module", p_delete_module, EPERM},
    {"open_by_handle_at", p_open_by_handle_at, EPERM},
    {"name_to_handle_at", p_name_to_handle_at, EPERM},
    {"socket(AF_NETLINK)", p_sock_netlink, EPERM},
    {"socket(AF_PACKET)", p_sock_packet, EPERM},
    {"socket(AF_VSOCK)", p_sock_vsock, EPERM},
    {"socket(AF_ALG)", p_sock_alg, EPERM},
    {"socket(high bits|AF_NETLINK)", p_sock_highbits, EPERM},
    {"ioctl(TIOCSTI)", p_tiocsti, EPERM},
    {"ioctl(high bits|TIOCSTI)", p_tiocsti_high, EPERM},
    {"ioctl(TIOCLINUX)", p_tioclinux, EPERM},
    {"chroot", p_chroot, EPERM},
    {"personality(ADDR_NO_RANDOMIZE)", p_personality, EPERM},
    {"acct", p_acct, EPERM},
    {"swapon", p_swapon, EPERM},
    {"reboot", p_reboot, EPERM},
    {"settimeofday", p_settimeofday, EPERM},
    {"iopl", p_iopl, EPERM},
    {"syslog", p_syslog, EPERM},
    {"quotactl", p_quotactl, EPERM},
    {"int 0x80 getpid (i386 ABI)", p_int80, 0},
    {"x32 getpid", p_x32, 0},
    {"x32 mount", p_x32_mount, 0},
};

/* The other ABI a probe of the table uses, or 0. */
static int probe_abi(probe_fn fn)
{
    return fn == p_int80 ? ABI_I386 : fn == p_x32 || fn == p_x32_mount ? ABI_X32 : 0;
}

/* What the host kernel itself does with an i386 / x32 call, outside any
 * sandbox ("yes" when it makes it; else "SIGSEGV", "ENOSYS", ...), as the
 * driver measured with `abi` and passed in. A kernel built without IA32
 * emulation raises SIGSEGV on int 0x80 (and one without the x32 ABI answers
 * ENOSYS) before seccomp ever sees the call: only there does that outcome
 * count as denied, reported as "not reachable on this host". Where the ABI
 * exists, only the filter's SIGSYS counts. */
static char host_i386[32] = "yes", host_x32[32] = "yes";

static const char *host_outcome(int abi)
{
    return abi == ABI_I386 ? host_i386 : abi == ABI_X32 ? host_x32 : "yes";
}

/* Inside: is this outcome the host's own inability to make the call? */
static int unreachable_here(int abi, int sig, long rc, int err)
{
    const char *h = host_outcome(abi);
    if (abi == 0 || strcmp(h, "yes") == 0)
        return 0;
    if (sig)
        return strcmp(h, strsignal(sig)) == 0 || (sig == SIGSEGV && strcmp(h, "SIGSEGV") == 0);
    return rc == -1 && err == ENOSYS && strcmp(h, "ENOSYS") == 0;
}

static void verdict_unreachable(const char *what)
{
    char buf[160];
    snprintf(buf, sizeof(buf), "%s (not reachable on this host)", what);
    verdict(1, buf, 0, 0);
}

/* Run one probe in a child: denial is the wanted errno, or death by SIGSYS. */
static void run_probe(size_t i)
{
    int pfd[2], st;
    pid_t pid;

    if (pipe(pfd) < 0)
        exit(3);
    pid = fork();
    if (pid == 0) {
        long r = probes[i].fn();
        int rec[2] = {(int)r, errno};
        if (write(pfd[1], rec, sizeof(rec)) < 0)
            _exit(4);
        _exit(0);
    }
    close(pfd[1]);
    int rec[2] = {0, 0};
    ssize_t n = read(pfd[0], rec, sizeof(rec));
    close(pfd[0]);
    waitpid(pid, &st, 0);
    if (WIFSIGNALED(st) && WTERMSIG(st) == SIGSYS) {
        verdict(1, probes[i].name, -1, 0);
        return;
    }
    if (WIFSIGNALED(st) && unreachable_here(probe_abi(probes[i].fn), WTERMSIG(st), 0, 0)) {
        verdict_unreachable(probes[i].name);
        return;
    }
    if (n != (ssize_t)sizeof(rec)) {
        verdict(0, probes[i].name, WIFSIGNALED(st) ? -WTERMSIG(st) : -2, 0);
        return;
    }
    if (unreachable_here(probe_abi(probes[i].fn), 0, rec[0], rec[1])) {
        verdict_unreachable(probes[i].name);
        return;
    }
    int denied = rec[0] == -1 && probes[i].want_errno && rec[1] == probes[i].want_errno;
    verdict(denied, probes[i].name, rec[0], rec[1]);
}

/* Other-ABI probes: death by SIGSYS counts as denied, or the host's own
 * inability to make the call (see host_outcome). */
static void run_abi_probe(const char *what, probe_fn fn, int abi)
{
    int st;
    pid_t pid = fork();
    if (pid == 0) {
        long r = fn();
        _exit(r == -1 ? (errno == ENOSYS ? 5 : 3) : 4);
    }
    waitpid(pid, &st, 0);
    if (WIFSIGNALED(st) && WTERMSIG(st) == SIGSYS)
        verdict(1, what, 0, 0);
    else if ((WIFSIGNALED(st) && unreachable_here(abi, WTERMSIG(st), 0, 0)) ||
             (WIFEXITED(st) && WEXITSTATUS(st) == 5 && unreachable_here(abi, 0, -1, ENOSYS)))
        verdict_unreachable(what);
    else
        verdict(0, what, WIFEXITED(st) ? WEXITSTATUS(st) : -WTERMSIG(st), 0);
}

/* On the host: what the kernel does with one other-ABI getpid. */
static void abi_outcome(char *out, size_t n, probe_fn fn)
{
    int pfd[2], st;
    long rec[2] = {0, 0};
    pid_t pid;

    if (pipe(pfd) < 0)
        exit(3);
    if ((pid = fork()) == 0) {
        long r = fn();
        rec[0] = r;
        rec[1] = errno;
        if (write(pfd[1], rec, sizeof(rec)) < 0)
            _exit(4);
        _exit(0);
    }
    close(pfd[1]);
    ssize_t got = read(pfd[0], rec, sizeof(rec));
    close(pfd[0]);
    waitpid(pid, &st, 0);
    if (WIFSIGNALED(st))
        snprintf(out, n, "%s", WTERMSIG(st) == SIGSEGV ? "SIGSEGV" : strsignal(WTERMSIG(st)));
    else if (got == (ssize_t)sizeof(rec) && rec[0] == pid)
        snprintf(out, n, "yes");
    else if (got == (ssize_t)sizeof(rec) && rec[0] == -1 && rec[1] == ENOSYS)
        snprintf(out, n, "ENOSYS");
    else
        snprintf(out, n, "rc%ld/errno%ld", rec[0], rec[1]);
}

static int mode_abi(void)
{
    char i386[32], x32[32];
    abi_outcome(i386, sizeof(i386), p_int80);
    abi_outcome(x32, sizeof(x32), p_x32);
    printf("int80=%s\nx32=%s\n", i386, x32);
    return 0;
}

static int mode_syscalls(int argc, char **argv)
{
    for (int i = 2; i < argc; i++) {
        if (strncmp(argv[i], "int80=", 6) == 0)
            snprintf(host_i386, sizeof(host_i386), "%s", argv[i] + 6);
        else if (strncmp(argv[i], "x32=", 4) == 0)
            snprintf(host_x32, sizeof(host_x32), "%s", argv[i] + 4);
    }
    if (strcmp(host_i386, "yes") != 0)
        printf("int 0x80: not reachable on this host (%s outside any sandbox); "
               "that outcome counts as denied only for the i386 probes\n", host_i386);
    if (strcmp(host_x32, "yes") != 0)
        printf("x32: not reachable on this host (%s outside any sandbox); "
               "that outcome counts as denied only for the x32 probes\n", host_x32);

    /* The test must be able to fail: what the list allows still works. */
    if (syscall(SYS_getpid) <= 0 || socket(AF_INET, SOCK_STREAM, 0) < 0 ||
        socket(AF_UNIX, SOCK_STREAM, 0) < 0) {
        printf("ESCAPED sanity: allowed calls fail too (errno %d)\n", errno);
        return 2;
    }
    for (size_t i = 0; i < sizeof(probes) / sizeof(probes[0]); i++)
        run_probe(i);
    size_t n_abi = 0;
    for (size_t i = 0; i < sizeof(abi_calls) / sizeof(abi_calls[0]); i++) {
        char what[96];
        abi_nr = abi_calls[i].i386;
        snprintf(what, sizeof(what), "int 0x80 %s (i386 %ld)", abi_calls[i].name, abi_nr);
        run_abi_probe(what, p_int80_nr, ABI_I386);
        abi_nr = abi_calls[i].x86_64;
        snprintf(what, sizeof(what), "x32 %s (%ld|x32)", abi_calls[i].name, abi_nr);
        run_abi_probe(what, p_x32_nr, ABI_X32);
        n_abi += 2;
    }
    printf("probes %zu\n", sizeof(probes) / sizeof(probes[0]) + n_abi);
    return failures ? 1 : 0;
}

/* ---- files ---- */

static int mode_read(int argc, char **argv)
{
    for (int i = 2; i < argc; i++) {
        int fd = open(argv[i], O_RDONLY);
        char what[512];
        snprintf(what, sizeof(what), "read %s", argv[i]);
        verdict(fd < 0, what, fd, errno);
        if (fd >= 0)
            close(fd);
    }
    return failures ? 1 : 0;
}

static int mode_write(int argc, char **argv)
{
    for (int i = 2; i < argc; i++) {
        int fd = open(argv[i], O_WRONLY | O_CREAT | O_TRUNC, 0644);
        char what[512];
        snprintf(what, sizeof(what), "write %s", argv[i]);
        if (fd >= 0) {
            ssize_t n = write(fd, "x", 1);
            verdict(0, what, n, errno);
            close(fd);
        } else {
            verdict(errno == EROFS || errno == EACCES || errno == EPERM || errno == ENOENT || errno == ETXTBSY, what,
                    fd, errno);
        }
    }
    return failures ? 1 : 0;
}

static int mode_tricks(const char *work)
{
    char a[512], b[512];
    int fd;

    /* A symlink to a host file resolves inside the sandbox's root. */
    snprintf(a, sizeof(a), "%s/link-shadow", work);
    unlink(a);
    if (symlink("/etc/shadow", a) == 0) {
        fd = open(a, O_RDONLY);
        verdict(fd < 0, "symlink to /etc/shadow", fd, errno);
        if (fd >= 0)
            close(fd);
    }
    snprintf(a, sizeof(a), "%s/link-root", work);
    unlink(a);
    if (symlink("/proc/1/root/../../../etc/shadow", a) == 0) {
        fd = open(a, O_RDONLY);
        verdict(fd < 0, "symlink through /proc/1/root/..", fd, errno);
        if (fd >= 0)
            close(fd);
    }
    /* A hardlink across mounts is refused. */
    snprintf(a, sizeof(a), "%s/hard-passwd", work);
    unlink(a);
    int r = link("/etc/passwd", a);
    verdict(r < 0 && errno == EXDEV, "hardlink /etc/passwd into work", r, errno);
    snprintf(a, sizeof(a), "%s/hard-ld", work);
    r = link("/usr/bin/env", a);
    verdict(r < 0 && errno == EXDEV, "hardlink /usr/bin/env into work", r, errno);
    /* .. stops at the sandbox's root. */
    snprintf(a, sizeof(a), "%s/../../../../../../etc/shadow", work);
    fd = open(a, O_RDONLY);
    verdict(fd < 0, "work/../../../etc/shadow", fd, errno);
    if (fd >= 0)
        close(fd);
    snprintf(b, sizeof(b), "%s/../../../../../../root/.bashrc", work);
    fd = open(b, O_RDONLY);
    verdict(fd < 0, "work/../../../root/.bashrc", fd, errno);
    if (fd >= 0)
        close(fd);
    fd = open("/proc/1/root/../../etc/shadow", O_RDONLY);
    verdict(fd < 0, "/proc/1/root/../../etc/shadow", fd, errno);
    if (fd >= 0)
        close(fd);
    /* /proc/1/cwd and /proc/self/root lead back into the sandbox, never out. */
    DIR *d = opendir("/proc/1/root/work");
    verdict(d == NULL, "/proc/1/root/work (host /work)", d ? 0 : -1, errno);
    if (d)
        closedir(d);
    return failures ? 1 : 0;
}

static int mode_mknod(const char *dir)
{
    char p[512];
    snprintf(p, sizeof(p), "%s/null2", dir);
    int r = mknod(p, S_IFCHR | 0666, makedev(1, 3));
    verdict(r < 0, "mknod char 1:3", r, errno);
    snprintf(p, sizeof(p), "%s/sda", dir);
    r = mknod(p, S_IFBLK | 0666, makedev(8, 0));
    verdict(r < 0, "mknod block 8:0", r, errno);
    r = mknod("/dev/mem2", S_IFCHR | 0666, makedev(1, 1));
    verdict(r < 0, "mknod /dev/mem2", r, errno);
    int fd = open("/dev/mem", O_RDONLY);
    verdict(fd < 0, "open /dev/mem", fd, errno);
    return failures ? 1 : 0;
}

/* ---- processes ---- */

static int mode_signal(pid_t host)
{
    int r = kill(host, 0);
    verdict(r < 0 && errno == ESRCH, "kill(host pid, 0)", r, errno);
    r = kill(host, SIGTERM);
    verdict(r < 0 && errno == ESRCH, "kill(host pid, SIGTERM)", r, errno);
    r = (int)syscall(SYS_tgkill, host, host, SIGTERM);
    verdict(r < 0, "tgkill(host pid)", r, errno);
    r = (int)ptrace(PTRACE_ATTACH, host, 0, 0);
    verdict(r < 0, "ptrace(ATTACH, host pid)", r, errno);
    r = (int)ptrace(PTRACE_ATTACH, 1, 0, 0);
    verdict(r < 0, "ptrace(ATTACH, init)", r, errno);
    /* The init ignores SIGKILL from inside; we must still be here after. */
    kill(1, SIGKILL);
    usleep(100 * 1000);
    verdict(getppid() == 1, "kill(1, SIGKILL) ends the sandbox", 0, 0);
    r = kill(-1, 0);            /* only our own namespace */
    int fd = open("/proc/1/mem", O_RDONLY);
    verdict(fd < 0, "open /proc/1/mem", fd, errno);
    fd = open("/proc/1/environ", O_RDONLY);
    verdict(fd < 0, "open /proc/1/environ (the launcher's environment)", fd, errno);
    fd = open("/proc/1/maps", O_RDONLY);
    verdict(fd < 0, "open /proc/1/maps", fd, errno);
    /* The init's command line is the launcher's, scrubbed. */
    char cmd[512];
    ssize_t n = 0;
    fd = open("/proc/1/cmdline", O_RDONLY);
    if (fd >= 0) {
        n = read(fd, cmd, sizeof(cmd));
        close(fd);
    }
    int printable = 0;
    for (ssize_t i = 0; i < n; i++)
        printable += cmd[i] > ' ' && cmd[i] < 127;
    verdict(printable == 0, "read the launcher's command line in /proc/1/cmdline", printable, 0);
    (void)r;
    return failures ? 1 : 0;
}

static int mode_abstract(const char *name)
{
    struct sockaddr_un sa;
    int s = socket(AF_UNIX, SOCK_STREAM, 0);
    socklen_t len;

    memset(&sa, 0, sizeof(sa));
    sa.sun_family = AF_UNIX;
    sa.sun_path[0] = '\0';
    snprintf(sa.sun_path + 1, sizeof(sa.sun_path) - 1, "%s", name);
    len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + strlen(name));
    int r = connect(s, (struct sockaddr *)&sa, len);
    verdict(r < 0, "connect abstract @host socket", r, errno);
    close(s);
    return failures ? 1 : 0;
}

static int try_connect(const char *ip, int port)
{
    struct sockaddr_in sa;
    int s = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    memset(&sa, 0, sizeof(sa));
    sa.sin_family = AF_INET;
    sa.sin_port = htons((uint16_t)port);
    inet_pton(AF_INET, ip, &sa.sin_addr);
    int r = connect(s, (struct sockaddr *)&sa, sizeof(sa));
    if (r < 0 && errno == EINPROGRESS) {
        struct pollfd p = {s, POLLOUT, 0};
        int err = 0;
        socklen_t el = sizeof(err);
        if (poll(&p, 1, 1500) <= 0) {
            close(s);
            errno = ETIMEDOUT;
            return -1;
        }
        getsockopt(s, SOL_SOCKET, SO_ERROR, &err, &el);
        r = err ? -1 : 0;
        errno = err;
    }
    close(s);
    return r;
}

static int mode_connect(int port)
{
    char what[128];
    snprintf(what, sizeof(what), "connect 127.0.0.1:%d (host listener)", port);
    int r = try_connect("127.0.0.1", port);
    verdict(r < 0, what, r, errno);
    r = try_connect("10.0.2.2", 80);
    verdict(r < 0, "connect 10.0.2.2:80", r, errno);
    r = try_connect("1.1.1.1", 53);
    verdict(r < 0, "connect 1.1.1.1:53", r, errno);
    r = try_connect("169.254.169.254", 80);
    verdict(r < 0, "connect 169.254.169.254:80 (metadata)", r, errno);
    return failures ? 1 : 0;
}

static int mode_forkbomb(void)
{
    int n = 0;
    for (; n < 100000; n++) {
        pid_t p = fork();
        if (p == 0) {
            for (;;)
                pause();
        }
        if (p < 0)
            break;
    }
    printf("forked %d before refusal (errno %d)\n", n, errno);
    verdict(n < 100000, "fork bomb", n, errno);
    return failures ? 1 : 0;
}

static int mode_memhog(void)
{
    size_t total = 0;
    for (int i = 0; i < 4096; i++) {       /* up to 4 GiB */
        char *p = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED)
            break;
        memset(p, 1, 1 << 20);
        total += 1 << 20;
    }
    printf("ESCAPED memhog allocated %zu bytes\n", total);
    return 1;
}

static int mode_diskfill(const char *path)
{
    static char buf[1 << 16];
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    long long total = 0;

    signal(SIGXFSZ, SIG_IGN);
    memset(buf, 'x', sizeof(buf));
    if (fd < 0) {
        printf("cannot open %s: %s\n", path, strerror(errno));
        return 2;
    }
    for (;;) {
        ssize_t n = write(fd, buf, sizeof(buf));
        if (n < 0)
            break;
        total += n;
        if (total > (4LL << 30))
            break;
    }
    int e = errno;
    printf("wrote %lld bytes, then errno %d (%s)\n", total, e, strerror(e));
    verdict(total <= (4LL << 30) && (e == ENOSPC || e == EFBIG || e == EDQUOT), "disk filler", total, e);
    close(fd);
    unlink(path);
    return failures ? 1 : 0;
}

static int mode_spin(void)
{
    volatile unsigned long x = 0;
    for (;;)
        x++;
    return 0;
}

static int mode_fds(void)
{
    int n = 0;
    for (; n < 1 << 20; n++)
        if (open("/dev/null", O_RDONLY) < 0)
            break;
    printf("opened %d descriptors, then errno %d\n", n, errno);
    verdict(n < (1 << 20) && errno == EMFILE, "descriptor exhaustion", n, errno);
    return failures ? 1 : 0;
}

static int mode_tree(void)
{
    signal(SIGTERM, SIG_IGN);
    signal(SIGHUP, SIG_IGN);
    for (int i = 0; i < 3; i++) {
        pid_t p = fork();
        if (p == 0) {
            if (fork() == 0) {          /* the grandchild: orphaned, own session */
                setsid();
                signal(SIGTERM, SIG_IGN);
                for (;;)
                    pause();
            }
            _exit(0);
        }
        waitpid(p, NULL, 0);
    }
    printf("tree started\n");
    fflush(stdout);
    for (;;)
        pause();
    return 0;
}

static int mode_peer(pid_t other)
{
    int r = kill(other, 0);
    verdict(r < 0 && errno == ESRCH, "kill(peer job, 0)", r, errno);
    r = kill(other, SIGKILL);
    verdict(r < 0 && errno == ESRCH, "kill(peer job, SIGKILL)", r, errno);
    DIR *d = opendir("/proc");
    struct dirent *e;
    int seen = 0, count = 0;
    while (d && (e = readdir(d)) != NULL) {
        if (e->d_name[0] < '0' || e->d_name[0] > '9')
            continue;
        count++;
        char p[300], cmd[256] = "";
        snprintf(p, sizeof(p), "/proc/%s/cmdline", e->d_name);
        int fd = open(p, O_RDONLY);
        if (fd >= 0) {
            ssize_t n = read(fd, cmd, sizeof(cmd) - 1);
            cmd[n > 0 ? n : 0] = '\0';
            for (ssize_t i = 0; i < n; i++)
                if (cmd[i] == '\0')
                    cmd[i] = ' ';
            close(fd);
        }
        if (strstr(cmd, "sleep 30"))
            seen = 1;
    }
    if (d)
        closedir(d);
    printf("processes visible: %d\n", count);
    verdict(!seen && count <= 3, "see the peer job in /proc", count, 0);
    return failures ? 1 : 0;
}

static void *attest_thread(void *arg)
{
    (void)arg;
    for (;;)
        pause();
    return NULL;
}

/* Every thread: Seccomp 2, NoNewPrivs 1, every capability set empty. */
static int check_status_file(const char *path)
{
    FILE *f = fopen(path, "r");
    char line[256];
    int seccomp = 0, nnp = 0, caps_zero = 0;

    if (!f)
        return 0;
    while (fgets(line, sizeof(line), f)) {
        if (strcmp(line, "Seccomp:\t2\n") == 0)
            seccomp = 1;
        if (strcmp(line, "NoNewPrivs:\t1\n") == 0)
            nnp = 1;
        if (strncmp(line, "Cap", 3) == 0 && strstr(line, "\t0000000000000000\n"))
            caps_zero++;
    }
    fclose(f);
    return seccomp && nnp && caps_zero == 5;
}

static int mode_attest(int n)
{
    pthread_t t;
    for (int i = 0; i < n; i++)
        pthread_create(&t, NULL, attest_thread, NULL);
    usleep(50 * 1000);
    DIR *d = opendir("/proc/self/task");
    struct dirent *e;
    int threads = 0;
    while (d && (e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        char p[300];
        snprintf(p, sizeof(p), "/proc/self/task/%s/status", e->d_name);
        threads++;
        verdict(check_status_file(p), "thread attestation (inside)", threads, 0);
    }
    if (d)
        closedir(d);
    printf("threads %d\nready\n", threads);
    fflush(stdout);
    if (failures || threads != n + 1)
        return 1;
    sleep(30);
    return 0;
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc < 2)
        return 2;
    const char *m = argv[1];
    if (strcmp(m, "syscalls") == 0) return mode_syscalls(argc, argv);
    if (strcmp(m, "abi") == 0) return mode_abi();
    if (strcmp(m, "read") == 0) return mode_read(argc, argv);
    if (strcmp(m, "write") == 0) return mode_write(argc, argv);
    if (strcmp(m, "tricks") == 0 && argc > 2) return mode_tricks(argv[2]);
    if (strcmp(m, "mknod") == 0 && argc > 2) return mode_mknod(argv[2]);
    if (strcmp(m, "euid") == 0) { printf("euid %d\n", (int)geteuid()); return geteuid() == 0 ? 1 : 0; }
    if (strcmp(m, "signal") == 0 && argc > 2) return mode_signal((pid_t)atoi(argv[2]));
    if (strcmp(m, "abstract") == 0 && argc > 2) return mode_abstract(argv[2]);
    if (strcmp(m, "connect") == 0 && argc > 2) return mode_connect(atoi(argv[2]));
    if (strcmp(m, "forkbomb") == 0) return mode_forkbomb();
    if (strcmp(m, "memhog") == 0) return mode_memhog();
    if (strcmp(m, "diskfill") == 0 && argc > 2) return mode_diskfill(argv[2]);
    if (strcmp(m, "spin") == 0) return mode_spin();
    if (strcmp(m, "fds") == 0) return mode_fds();
    if (strcmp(m, "tree") == 0) return mode_tree();
    if (strcmp(m, "sleep") == 0 && argc > 2) { sleep((unsigned)atoi(argv[2])); return 0; }
    if (strcmp(m, "peer") == 0 && argc > 2) return mode_peer((pid_t)atoi(argv[2]));
    if (strcmp(m, "attest") == 0 && argc > 2) return mode_attest(atoi(argv[2]));
    return 2;
}
