/*
 * sbx_launch.c - the parent side of a launch, and the job handle.
 *
 * Parent (the caller):                   Child (PID 1 of the new namespaces):
 *   plan: argv, env, mounts, BPF            wait for "go"
 *   cgroup create + limits                  cgroup namespace, private mounts
 *   clone(NEWUSER|NEWPID|NEWNS|...) ------> open sources, become uid 1000
 *   uid_map/gid_map, cgroup attach          build the root on a tmpfs, pivot_root
 *   "go" ---------------------------------> hostname, lo, rlimits, drop caps, NNP
 *   read the step pipe until EOF <--------- fork the program: setsid, fds,
 *                                            seccomp, execve (the pipe closes)
 *                                           stay as init: forward signals, reap,
 *                                            wall time, report the status
 * Any failing step writes {step, errno, detail} to the close-on-exec pipe and
 * exits; the parent kills and reaps what is left, removes the cgroup and
 * returns an error naming the step. The child (sbx_child.c) never allocates:
 * the plan is complete before clone, so a threaded caller is safe.
 */
#include "sbx_int.h"
#include "sbx_wire.h"
#include "ed_error.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef CLONE_PIDFD
#define CLONE_PIDFD 0x00001000
#endif

struct sbx_job {
    pid_t pid;
    int pidfd;
    int status_fd;            /* init's report: {wait status, limit} */
    sbx_cgroup cg;
    int64_t start_ms;
    int wall_ms;
    int cpu_s;
    int killed;               /* sbx_job_kill() was called */
    int wall_killed;          /* the parent's backstop fired */
    int done;
    sbx_usage usage;
    uint32_t remote;          /* the launcher's handle (sbx_remote.c); 0: run here */
};

/* ---- the parent ---- */

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Append a mount step. Bind sources are copied; a SBX_MOP_SYMLINK target is
 * taken over (freed with the plan, or here on error). */
static int add_mop(sbx_plan *p, enum sbx_mop_kind kind, const char *src, const char *dst)
{
    int copy = src && (kind == SBX_MOP_BIND_RO || kind == SBX_MOP_BIND_RW || kind == SBX_MOP_DEV);
    sbx_mop *m;

    if (p->n_mops >= SBX_MAX_MOPS) {
        if (kind == SBX_MOP_SYMLINK)
            free((char *)src);
        return ed_error_set(ED_ETOOBIG, "sandbox: more than %d mounts", SBX_MAX_MOPS);
    }
    m = &p->mops[p->n_mops];
    memset(m, 0, sizeof(*m));
    m->kind = kind;
    m->fd = -1;
    m->tree_fd = -1;
    m->is_dir = 1;
    m->src = copy ? strdup(src) : src;
    m->owned = copy || kind == SBX_MOP_SYMLINK;
    m->dst = strdup(dst);
    if (!m->dst || (copy && !m->src) || (kind == SBX_MOP_SYMLINK && !src)) {
        free(m->dst);
        if (m->owned)
            free((char *)m->src);
        return ed_error_set(ED_ENOMEM, "sandbox plan");
    }
    p->n_mops++;
    return 0;
}

static int valid_inside(const char *path)
{
    if (!path || path[0] != '/' || strlen(path) >= 512)
        return 0;
    for (const char *s = path; *s; s++)
        if (s[0] == '/' && s[1] == '.' && s[2] == '.' && (s[3] == '/' || s[3] == '\0'))
            return 0;
    return strcmp(path, "/") != 0;
}

/* Inside paths the caller may not mount over: the sandbox's own layout. */
static int reserved_dst(const char *dst)
{
    static const char *const res[] = {"/proc", "/dev", "/usr", "/etc", "/bin", "/sbin", "/lib",
                                      "/lib64", "/lib32"};
    for (size_t i = 0; i < sizeof(res) / sizeof(res[0]); i++) {
        size_t n = strlen(res[i]);
        if (strncmp(dst, res[i], n) == 0 && (dst[n] == '/' || dst[n] == '\0'))
            return 1;
    }
    return 0;
}

static char *sym_target(const char *path)
{
    char buf[PATH_MAX];
    ssize_t n = readlink(path, buf, sizeof(buf) - 1);
    if (n <= 0)
        return NULL;
    buf[n] = '\0';
    return strdup(buf);
}

static const char passwd_text[] =
    "root:x:0:0:root:/root:/usr/sbin/nologin\n"
    "aistudio:x:1000:1000:aistudio:/home/aistudio:/bin/bash\n"
    "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n";
static const char group_text[] = "root:x:0:\naistudio:x:1000:\nnogroup:x:65534:\n";
static const char hosts_text[] = "127.0.0.1\tlocalhost eddy-sandbox\n::1\tlocalhost ip6-localhost\n";

/* Host /etc entries programs need (Debian python3, numpy, matplotlib, TLS). */
static const char *const etc_files[] = {
    "ld.so.cache", "nsswitch.conf", "host.conf", "gai.conf", "protocols", "services",
    "localtime", "ssl", "alternatives", "fonts", "matplotlibrc", "python3", "python3.11",
    "mime.types", "os-release",
};

static void plan_free(sbx_plan *p)
{
    for (size_t i = 0; i < p->n_mops; i++) {
        free(p->mops[i].dst);
        if (p->mops[i].owned)
            free((char *)p->mops[i].src);
        if (p->mops[i].tree_fd >= 0)
            close(p->mops[i].tree_fd);
    }
    char **lists[] = {p->envp, p->argv};
    for (size_t i = 0; i < 2; i++) {
        if (!lists[i])
            continue;
        for (char **e = lists[i]; *e; e++)
            free(*e);
        free(lists[i]);
    }
    free(p->cwd_copy);
    int *fds[] = {&p->go_r, &p->go_w, &p->err_r, &p->err_w, &p->st_r, &p->st_w};
    for (size_t i = 0; i < 6; i++)
        if (*fds[i] >= 0) {
            close(*fds[i]);
            *fds[i] = -1;
        }
}

static int build_env(sbx_plan *p, const sbx_spec *s)
{
    static const char *const defaults[] = {
        "PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/home/aistudio", "USER=aistudio",
        "LOGNAME=aistudio", "LANG=C.UTF-8", "TMPDIR=/tmp", NULL};
    const char *const *src = s->env ? (const char *const *)s->env : defaults;
    size_t n = 0, k = 0;
    char gpus[16 * 4 + 32];

    for (n = 0; s->argv[n]; n++)
        ;
    if ((p->argv = calloc(n + 1, sizeof(char *))) == NULL)
        return ed_error_set(ED_ENOMEM, "sandbox argv");
    for (size_t i = 0; i < n; i++)
        if ((p->argv[i] = strdup(s->argv[i])) == NULL)
            return ed_error_set(ED_ENOMEM, "sandbox argv");
    n = 0;
    while (src[n])
        n++;
    if ((p->envp = calloc(n + 2, sizeof(char *))) == NULL)
        return ed_error_set(ED_ENOMEM, "sandbox env");
    for (size_t i = 0; i < n; i++)
        if ((p->envp[k++] = strdup(src[i])) == NULL)
            return ed_error_set(ED_ENOMEM, "sandbox env");
    for (size_t i = 0; i < n && s->n_gpus; i++)
        if (strncmp(src[i], "CUDA_VISIBLE_DEVICES=", 21) == 0)
            return 0;   /* the caller's (the scheduler names the GPUs by UUID) */
    if (s->n_gpus) {
        /* A convenience for CUDA; the boundary is the device nodes and
         * cgroup. Inside only the allocated nodes exist, so the driver
         * numbers those GPUs from 0: /dev/nvidia3 alone is CUDA device 0,
         * and "3" would hide it. */
        size_t at = (size_t)snprintf(gpus, sizeof(gpus), "CUDA_VISIBLE_DEVICES=");
        for (size_t i = 0; i < s->n_gpus && at < sizeof(gpus); i++)
            at += (size_t)snprintf(gpus + at, sizeof(gpus) - at, "%s%zu", i ? "," : "", i);
        if ((p->envp[k++] = strdup(gpus)) == NULL)
            return ed_error_set(ED_ENOMEM, "sandbox env");
    }
    return 0;
}

/* `src` may be /proc/self/fd/N, a detached copy of a mount (open_tree) the
 * launcher made of a file it opened beneath one of its roots without
 * following links (*detached). The child checks that what it opens is the
 * file checked here (st_out's st_dev, st_ino). */
static int check_bind(const sbx_bind *b, const char *kind, int *is_dir, struct stat *st_out, int *detached)
{
    struct stat st;
    *detached = b->src && strncmp(b->src, "/proc/self/fd/", 14) == 0;
    if (!b->src || b->src[0] != '/')
        return ed_error_set(ED_EINVAL, "sandbox: %s bind source must be an absolute path", kind);
    if (!valid_inside(b->dst) || reserved_dst(b->dst))
        return ed_error_set(ED_EINVAL, "sandbox: %s bind destination '%s' is not allowed", kind,
                            b->dst ? b->dst : "(null)");
    if (stat(b->src, &st) < 0)
        return ed_error_set(ED_EINVAL, "sandbox: %s bind source '%s': %s", kind, b->src,
                            strerror(errno));
    *is_dir = S_ISDIR(st.st_mode);
    *st_out = st;
    return 0;
}

/* SBX_BIND_IDMAP in process (the server keeps root): a detached copy of
 * the mount at `src`, idmapped from the tree's owner on disk (spec
 * tree_uid/tree_gid, default this process's effective ids) to the job's
 * host ids. Its descriptor, *st its root as the child will check it; or a
 * negative code. Through the launcher this happens there (sbx_launcher.c). */
static int idmap_tree(const char *src, const sbx_spec *s, struct stat *st)
{
    uid_t owner = s->tree_uid != (uid_t)-1 ? s->tree_uid : geteuid();
    gid_t group = s->tree_gid != (gid_t)-1 ? s->tree_gid : getegid();
    int fd = open(src, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC), tree;

    if (fd < 0)
        return ed_error_set(ED_EINVAL, "sandbox: bind source '%s': %s", src, strerror(errno));
    tree = sbx__idmap_clone(fd, owner, group, s->host_uid, s->host_gid);
    close(fd);
    if (tree < 0) {
        char msg[300];
        snprintf(msg, sizeof(msg), "%s", ed_error_last());
        return ed_error_set(tree, "sandbox: %s: %s", src, msg);
    }
    if (fstat(tree, st) < 0) {
        int e = errno;
        close(tree);
        return ed_error_set(ED_EIO, "sandbox: bind source '%s': %s", src, strerror(e));
    }
    return tree;
}

/* The allocated GPUs' nodes and what CUDA needs beside them (only when the
 * job has GPUs; a CPU job sees no /dev/nvidia* at all):
 * - /dev/nvidia<k> for each allocated k, /dev/nvidiactl (the driver's
 *   control node every process opens) and /dev/nvidia-uvm (cudaMalloc's
 *   unified memory). Nothing else: not the other GPUs' nodes (absent, so
 *   the driver enumerates only these, renumbered from 0), not
 *   nvidia-uvm-tools (profilers, CUPTI), nvidia-modeset or nvidia-caps.
 *   Taken from $EDDY_GPU_DEV_DIR (tests: char nodes made with mknod) or
 *   /dev, each a character device, its number allowed by the device filter.
 * - read-only, at their own paths, the directories in $EDDY_CUDA_LIB_DIRS
 *   (colon-separated, absolute, canonical): a CUDA toolkit or driver
 *   installed outside /usr and /lib*, which every sandbox already sees
 *   read-only (/usr/local/cuda included; /etc/alternatives and
 *   ld.so.cache are bound too). */
static int add_gpus(sbx_plan *p, const sbx_spec *s, dev_t *gpu_devs, size_t *n_gpu_devs)
{
    static const char *const sysdirs[] = {"/usr/", "/lib/", "/lib64/", "/lib32/", "/bin/", "/sbin/"};
    const char *devdir = getenv("EDDY_GPU_DEV_DIR"), *libs = getenv("EDDY_CUDA_LIB_DIRS");
    char src[PATH_MAX], dst[64];
    struct stat st;
    int err;

    *n_gpu_devs = 0;
    if (s->n_gpus == 0)
        return 0;
    if (devdir == NULL || devdir[0] == '\0')
        devdir = "/dev";
    if (devdir[0] != '/' || strlen(devdir) > 256)
        return ed_error_set(ED_EINVAL, "sandbox: EDDY_GPU_DEV_DIR must be an absolute path");
    for (size_t i = 0; i < s->n_gpus + 2; i++) {
        if (i < s->n_gpus)
            snprintf(dst, sizeof(dst), "/dev/nvidia%d", s->gpus[i]);
        else
            snprintf(dst, sizeof(dst), "%s", i == s->n_gpus ? "/dev/nvidiactl" : "/dev/nvidia-uvm");
        snprintf(src, sizeof(src), "%s/%s", devdir, dst + 5);
        if (stat(src, &st) < 0 || !S_ISCHR(st.st_mode))
            return ed_error_set(ED_EINVAL, "sandbox: GPU device %s not found on this host", src);
        gpu_devs[(*n_gpu_devs)++] = st.st_rdev;
        if ((err = add_mop(p, SBX_MOP_DEV, src, dst)) < 0)
            return err;
        p->mops[p->n_mops - 1].is_dir = 0;
    }
    while (libs && *libs) {
        size_t len = strcspn(libs, ":");
        int seen = 0;
        if (len > 0) {
            if (len >= sizeof(src) || libs[0] != '/')
                return ed_error_set(ED_EINVAL, "sandbox: EDDY_CUDA_LIB_DIRS: '%.*s' is not an absolute path",
                                    (int)(len < 200 ? len : 200), libs);
            memcpy(src, libs, len);
            src[len] = '\0';
            for (size_t k = 0; k < sizeof(sysdirs) / sizeof(sysdirs[0]); k++)
                seen = seen || strncmp(src, sysdirs[k], strlen(sysdirs[k])) == 0;
            if (!seen && (!valid_inside(src) || strstr(src, "/./") || strstr(src, "//") || src[len - 1] == '/'))
                return ed_error_set(ED_EINVAL, "sandbox: EDDY_CUDA_LIB_DIRS: '%s' is not canonical", src);
            if (!seen && (reserved_dst(src) || strncmp(src, "/tmp", 4) == 0 || strncmp(src, "/home", 5) == 0))
                return ed_error_set(ED_EINVAL, "sandbox: EDDY_CUDA_LIB_DIRS: %s is where the sandbox "
                                    "keeps its own files", src);
            if (!seen && (lstat(src, &st) < 0 || !S_ISDIR(st.st_mode)))
                return ed_error_set(ED_EINVAL, "sandbox: EDDY_CUDA_LIB_DIRS: %s is not a directory", src);
            if (!seen && (err = add_mop(p, SBX_MOP_BIND_RO, src, src)) < 0)
                return err;
        }
        libs += len;
        libs += *libs == ':';
    }
    return 0;
}

static int build_plan(sbx_plan *p, const sbx_spec *s, dev_t *gpu_devs, size_t *n_gpu_devs)
{
    static const char *const sysdirs[] = {"/usr", "/bin", "/sbin", "/lib", "/lib64", "/lib32"};
    int err, is_dir = 0;
    struct stat st;
    char path[PATH_MAX];

    (void)path;
    for (size_t i = 0; i < sizeof(sysdirs) / sizeof(sysdirs[0]); i++) {
        if (lstat(sysdirs[i], &st) < 0)
            continue;
        if (S_ISLNK(st.st_mode)) {
            char *t = sym_target(sysdirs[i]);
            if (!t)
                return ed_error_set(ED_EIO, "sandbox: readlink %s: %s", sysdirs[i], strerror(errno));
            if ((err = add_mop(p, SBX_MOP_SYMLINK, t, sysdirs[i])) < 0)
                return err;
        } else if (S_ISDIR(st.st_mode) && (err = add_mop(p, SBX_MOP_BIND_RO, sysdirs[i], sysdirs[i])) < 0) {
            return err;
        }
    }
    if ((err = add_mop(p, SBX_MOP_DIR, NULL, "/etc")) < 0 ||
        (err = add_mop(p, SBX_MOP_FILE, passwd_text, "/etc/passwd")) < 0 ||
        (err = add_mop(p, SBX_MOP_FILE, group_text, "/etc/group")) < 0 ||
        (err = add_mop(p, SBX_MOP_FILE, hosts_text, "/etc/hosts")) < 0 ||
        (err = add_mop(p, SBX_MOP_FILE, "eddy-sandbox\n", "/etc/hostname")) < 0)
        return err;
    for (size_t i = 0; i < sizeof(etc_files) / sizeof(etc_files[0]); i++) {
        char host[128];
        snprintf(host, sizeof(host), "/etc/%s", etc_files[i]);
        if (stat(host, &st) < 0)
            continue;
        if ((err = add_mop(p, SBX_MOP_BIND_RO, host, host)) < 0)
            return err;
        p->mops[p->n_mops - 1].is_dir = S_ISDIR(st.st_mode);
        p->mops[p->n_mops - 1].optional = 1;
    }
    if (s->net == SBX_NET_HOST && stat("/etc/resolv.conf", &st) == 0) {
        if ((err = add_mop(p, SBX_MOP_BIND_RO, "/etc/resolv.conf", "/etc/resolv.conf")) < 0)
            return err;
        p->mops[p->n_mops - 1].is_dir = 0;
        p->mops[p->n_mops - 1].optional = 1;
    }
    if ((err = add_mop(p, SBX_MOP_PROC, NULL, "/proc")) < 0)
        return err;

    /* /dev: a small tmpfs with only what programs need. */
    if ((err = add_mop(p, SBX_MOP_TMPFS, NULL, "/dev")) < 0)
        return err;
    p->mops[p->n_mops - 1].bytes = 64 * 1024;
    p->mops[p->n_mops - 1].mode = 0755;
    static const char *const devs[] = {"/dev/null", "/dev/zero", "/dev/full", "/dev/random",
                                       "/dev/urandom", "/dev/tty"};
    for (size_t i = 0; i < sizeof(devs) / sizeof(devs[0]); i++) {
        if ((err = add_mop(p, SBX_MOP_DEV, devs[i], devs[i])) < 0)
            return err;
        p->mops[p->n_mops - 1].is_dir = 0;
    }
    if ((err = add_gpus(p, s, gpu_devs, n_gpu_devs)) < 0)
        return err;
    if ((err = add_mop(p, SBX_MOP_SYMLINK, strdup("/proc/self/fd"), "/dev/fd")) < 0 ||
        (err = add_mop(p, SBX_MOP_SYMLINK, strdup("/proc/self/fd/0"), "/dev/stdin")) < 0 ||
        (err = add_mop(p, SBX_MOP_SYMLINK, strdup("/proc/self/fd/1"), "/dev/stdout")) < 0 ||
        (err = add_mop(p, SBX_MOP_SYMLINK, strdup("/proc/self/fd/2"), "/dev/stderr")) < 0 ||
        (err = add_mop(p, SBX_MOP_TMPFS, NULL, "/dev/shm")) < 0)
        return err;
    p->mops[p->n_mops - 1].bytes = s->tmp_bytes;
    p->mops[p->n_mops - 1].mode = 01777;
    if ((err = add_mop(p, SBX_MOP_RDONLY, NULL, "/dev")) < 0)
        return err;

    if ((err = add_mop(p, SBX_MOP_TMPFS, NULL, "/tmp")) < 0)
        return err;
    p->mops[p->n_mops - 1].bytes = s->tmp_bytes;
    p->mops[p->n_mops - 1].mode = 01777;
    if ((err = add_mop(p, SBX_MOP_TMPFS, NULL, "/home/aistudio")) < 0)
        return err;
    p->mops[p->n_mops - 1].bytes = 16 << 20;
    p->mops[p->n_mops - 1].mode = 0755;
    /* where datasets are bound (read-only binds beneath it, made after
     * it); there in every sandbox so EDDY_DATA_DIR always names a folder */
    if ((err = add_mop(p, SBX_MOP_DIR, NULL, "/home/aistudio/data")) < 0)
        return err;

    for (size_t i = 0; i < s->n_tmpfs; i++) {
        if (!valid_inside(s->tmpfs[i].dst) || reserved_dst(s->tmpfs[i].dst) || s->tmpfs[i].bytes <= 0)
            return ed_error_set(ED_EINVAL, "sandbox: tmpfs '%s' needs an allowed absolute path "
                                "and a positive size", s->tmpfs[i].dst ? s->tmpfs[i].dst : "(null)");
        if ((err = add_mop(p, SBX_MOP_TMPFS, NULL, s->tmpfs[i].dst)) < 0)
            return err;
        p->mops[p->n_mops - 1].bytes = s->tmpfs[i].bytes;
        p->mops[p->n_mops - 1].mode = 01777;
    }
    /* Caller binds, shallowest destination first, so a bind nested in
     * another (a dataset inside the work tree) lands on top of its parent
     * instead of being hidden by it. */
    size_t n = s->n_ro + s->n_rw;
    if (n > SBX_MAX_MOPS)
        return ed_error_set(ED_ETOOBIG, "sandbox: more than %d binds", SBX_MAX_MOPS);
    struct { const sbx_bind *b; int rw; size_t len; } order[SBX_MAX_MOPS];
    for (size_t i = 0; i < n; i++) {
        order[i].rw = i >= s->n_ro;
        order[i].b = order[i].rw ? &s->rw[i - s->n_ro] : &s->ro[i];
        order[i].len = order[i].b->dst ? strlen(order[i].b->dst) : 0;
    }
    for (size_t i = 1; i < n; i++)
        for (size_t k = i; k > 0 && order[k - 1].len > order[k].len; k--) {
            __typeof__(order[0]) t = order[k];
            order[k] = order[k - 1];
            order[k - 1] = t;
        }
    for (size_t i = 0; i < n; i++) {
        const sbx_bind *b = order[i].b;
        struct stat bst = {0};
        int detached = 0, tree = -1;
        if ((err = check_bind(b, order[i].rw ? "read-write" : "read-only", &is_dir, &bst, &detached)) < 0)
            return err;
        if ((b->flags & (SBX_BIND_IDMAP | SBX_BIND_HIDE_GIT)) && !is_dir)
            return ed_error_set(ED_EINVAL, "sandbox: bind '%s' is idmapped or hides .git but is not a directory",
                                b->src);
        if ((b->flags & SBX_BIND_IDMAP) && (tree = idmap_tree(b->src, s, &bst)) < 0)
            return tree;
        if (tree >= 0) {
            char *name = malloc(32);
            if (!name) {
                close(tree);
                return ed_error_set(ED_ENOMEM, "sandbox plan");
            }
            snprintf(name, 32, "/proc/self/fd/%d", tree);
            err = add_mop(p, SBX_MOP_BIND_RW, name, b->dst);
            free(name);     /* add_mop copied it */
            if (err < 0) {
                close(tree);
                return err;
            }
            p->mops[p->n_mops - 1].tree_fd = tree;
            detached = 1;
        } else if ((err = add_mop(p, order[i].rw ? SBX_MOP_BIND_RW : SBX_MOP_BIND_RO, b->src, b->dst)) < 0) {
            return err;
        }
        p->mops[p->n_mops - 1].detached = detached;
        p->mops[p->n_mops - 1].is_dir = is_dir;
        p->mops[p->n_mops - 1].check_id = 1;
        p->mops[p->n_mops - 1].dev = bst.st_dev;
        p->mops[p->n_mops - 1].ino = bst.st_ino;
        if (b->flags & SBX_BIND_HIDE_GIT) {
            char git[600];
            if (snprintf(git, sizeof(git), "%s/.git", b->dst) >= (int)sizeof(git))
                return ed_error_set(ED_EINVAL, "sandbox: bind destination '%s' is too long", b->dst);
            if ((err = add_mop(p, SBX_MOP_MASK, NULL, git)) < 0)
                return err;
        }
    }
    return 0;
}

static int validate(const sbx_spec *s)
{
    if (!s->argv || !s->argv[0] || !s->argv[0][0])
        return ed_error_set(ED_EINVAL, "sandbox: no program to run");
    if (s->host_uid == 0 || s->host_gid == 0 || s->host_uid == (uid_t)-1 || s->host_gid == (gid_t)-1)
        return ed_error_set(ED_EINVAL, "sandbox: the job's host uid/gid must be unprivileged "
                            "(got %u/%u)", (unsigned)s->host_uid, (unsigned)s->host_gid);
    if (s->mem_bytes < 0 || s->cpu_millis < 0 || s->pids < 0 || s->nofile < 0 ||
        s->fsize_bytes < 0 || s->wall_ms < 0 || s->cpu_s < 0 || s->tmp_bytes <= 0)
        return ed_error_set(ED_EINVAL, "sandbox: negative limit");
    if (s->mem_bytes > 0 && s->mem_bytes < (4 << 20))
        return ed_error_set(ED_EINVAL, "sandbox: memory limit below 4 MiB");
    if (s->net != SBX_NET_NONE && s->net != SBX_NET_LOOPBACK && s->net != SBX_NET_HOST)
        return ed_error_set(ED_EINVAL, "sandbox: unknown network mode %d", (int)s->net);
    if (s->n_gpus > SBX_MAX_GPUS)
        return ed_error_set(ED_EINVAL, "sandbox: more than %d GPUs", SBX_MAX_GPUS);
    for (size_t i = 0; i < s->n_gpus; i++)
        if (s->gpus[i] < 0 || s->gpus[i] > 255)
            return ed_error_set(ED_EINVAL, "sandbox: GPU index %d out of range", s->gpus[i]);
    if (s->cwd && !(s->cwd[0] == '/' && strlen(s->cwd) < 512))
        return ed_error_set(ED_EINVAL, "sandbox: cwd must be an absolute path inside");
    for (size_t i = 0; i < s->n_ro + s->n_rw; i++) {
        const sbx_bind *b = i < s->n_ro ? &s->ro[i] : &s->rw[i - s->n_ro];
        if (b->flags & ~SBX_BIND_FLAGS)
            return ed_error_set(ED_EINVAL, "sandbox: bind flags %#x unknown", b->flags);
        if (i < s->n_ro && (b->flags & SBX_BIND_IDMAP))
            return ed_error_set(ED_EINVAL, "sandbox: only read-write binds are idmapped");
    }
    if (s->n_pass_fds > 64)
        return ed_error_set(ED_EINVAL, "sandbox: more than 64 passed descriptors");
    for (size_t i = 0; i < s->n_pass_fds; i++)
        if (s->pass_fds[i] < 3 || fcntl(s->pass_fds[i], F_GETFD) < 0)
            return ed_error_set(ED_EINVAL, "sandbox: passed descriptor %d is not open or is stdio",
                                s->pass_fds[i]);
    for (int i = 0; i < 3; i++)
        if (s->stdio[i] >= 0 && fcntl(s->stdio[i], F_GETFD) < 0)
            return ed_error_set(ED_EINVAL, "sandbox: stdio descriptor %d is not open", s->stdio[i]);
    return 0;
}

void sbx_spec_init(sbx_spec *spec)
{
    memset(spec, 0, sizeof(*spec));
    spec->tmp_bytes = 64 << 20;
    spec->nofile = 1024;
    spec->net = SBX_NET_NONE;
    spec->stdio[0] = 0;
    spec->stdio[1] = 1;
    spec->stdio[2] = 2;
    spec->tree_uid = (uid_t)-1;
    spec->tree_gid = (gid_t)-1;
}

static int cloexec_pipe(int *r, int *w)
{
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) < 0)
        return -1;
    /* Keep them off 0..2 so the program's stdio never collides. */
    for (int i = 0; i < 2; i++)
        if (fds[i] < 3) {
            int n = fcntl(fds[i], F_DUPFD_CLOEXEC, 3);
            close(fds[i]);
            fds[i] = n;
        }
    *r = fds[0];
    *w = fds[1];
    return (*r < 0 || *w < 0) ? -1 : 0;
}

static int write_map(pid_t pid, const char *file, unsigned host)
{
    char path[64], line[64];
    int fd, n;

    snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, file);
    n = snprintf(line, sizeof(line), "%u %u 1\n", SBX_INSIDE_UID, host);
    if ((fd = open(path, O_WRONLY | O_CLOEXEC)) < 0)
        return -errno;
    if (write(fd, line, (size_t)n) != n) {
        int e = errno;
        close(fd);
        return -e;
    }
    close(fd);
    return 0;
}

static void reap(sbx_job *j, int *status, struct rusage *ru)
{
    int st = 0;
    memset(ru, 0, sizeof(*ru));
    while (wait4(j->pid, &st, __WALL, ru) < 0 && errno == EINTR)
        ;
    *status = st;
}

int sbx_launch(sbx_job **out, const sbx_spec *spec)
{
    static atomic_uint counter;
    sbx_plan *p = NULL;
    sbx_job *j = NULL;
    void *stack = MAP_FAILED;
    const size_t stack_size = 1 << 20;
    dev_t gpu_devs[SBX_MAX_GPUS + 2];
    size_t n_gpu_devs = 0;
    char name[96];
    int err, rc, flags;
    struct sbx_step_msg m;
    ssize_t n;

    *out = NULL;
    if (!spec)
        return ed_error_set(ED_EINVAL, "sandbox: no spec");
    if ((err = validate(spec)) < 0)
        return err;
    if (sbx__remote_on()) {
        if ((j = calloc(1, sizeof(*j))) == NULL)
            return ed_error_set(ED_ENOMEM, "sandbox launch");
        j->status_fd = -1;
        if ((err = sbx__remote_launch(spec, &j->remote, &j->pid, &j->pidfd, j->cg.v2, sizeof(j->cg.v2))) < 0) {
            free(j);
            return err;
        }
        *out = j;
        return 0;
    }
    if ((p = calloc(1, sizeof(*p))) == NULL || (j = calloc(1, sizeof(*j))) == NULL) {
        free(p);
        return ed_error_set(ED_ENOMEM, "sandbox launch");
    }
    j->pid = -1;
    j->pidfd = -1;
    j->status_fd = -1;
    p->go_r = p->go_w = p->err_r = p->err_w = p->st_r = p->st_w = -1;
    p->spec = spec;
    if ((err = build_plan(p, spec, gpu_devs, &n_gpu_devs)) < 0 || (err = build_env(p, spec)) < 0 ||
        (err = sbx__seccomp_program(&p->bpf)) < 0)
        goto fail;
    if (spec->cwd && (p->cwd = p->cwd_copy = strdup(spec->cwd)) == NULL) {
        err = ed_error_set(ED_ENOMEM, "sandbox cwd");
        goto fail;
    }
    if (!p->cwd) {
        p->cwd = "/";
        for (size_t i = 0; i < spec->n_rw; i++)
            if (strcmp(spec->rw[i].dst, "/home/aistudio/work") == 0)
                p->cwd = "/home/aistudio/work";
    }
    if (cloexec_pipe(&p->go_r, &p->go_w) < 0 || cloexec_pipe(&p->err_r, &p->err_w) < 0 ||
        cloexec_pipe(&p->st_r, &p->st_w) < 0) {
        err = ed_error_set(ED_EIO, "sandbox: pipe: %s", strerror(errno));
        goto fail;
    }
    snprintf(name, sizeof(name), "job-%u-%d-%u", (unsigned)spec->host_uid, (int)getpid(),
             atomic_fetch_add(&counter, 1));
    if ((err = sbx__cgroup_create(&j->cg, name, spec, gpu_devs, n_gpu_devs)) < 0)
        goto fail;
    p->degraded = j->cg.version == 0;

    stack = mmap(NULL, stack_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK,
                 -1, 0);
    if (stack == MAP_FAILED) {
        err = ed_error_set(ED_ENOMEM, "sandbox: clone stack");
        goto fail;
    }
    flags = CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNS | CLONE_NEWIPC | CLONE_NEWUTS |
            CLONE_PIDFD | SIGCHLD;
    if (spec->net != SBX_NET_HOST)
        flags |= CLONE_NEWNET;
    j->pid = clone(sbx__child_main, (char *)stack + stack_size, flags, p, &j->pidfd);
    if (j->pid < 0) {
        err = ed_error_set(ED_EIO, "sandbox step 'clone namespaces': %s", strerror(errno));
        j->pid = -1;
        goto fail;
    }
    j->start_ms = now_ms();
    close(p->go_r);
    p->go_r = -1;
    close(p->err_w);
    p->err_w = -1;
    close(p->st_w);
    p->st_w = -1;

    if ((rc = write_map(j->pid, "uid_map", spec->host_uid)) < 0 ||
        (rc = write_map(j->pid, "gid_map", spec->host_gid)) < 0) {
        err = ed_error_set(ED_EIO, "sandbox step 'id maps': %s", strerror(-rc));
        goto fail;
    }
    if (j->cg.version && (err = sbx__cgroup_attach(&j->cg, j->pid)) < 0)
        goto fail;
    if (write(p->go_w, "g", 1) != 1) {
        err = ed_error_set(ED_EIO, "sandbox step 'start': %s", strerror(errno));
        goto fail;
    }
    close(p->go_w);
    p->go_w = -1;

    /* EOF: the program exec'd (the pipe closed on exec). A record: a step failed. */
    while ((n = read(p->err_r, &m, sizeof(m))) < 0 && errno == EINTR)
        ;
    if (n > 0) {
        m.step[sizeof(m.step) - 1] = '\0';
        err = ed_error_set(ED_EIO, "sandbox step '%s': %s", m.step,
                           n == (ssize_t)sizeof(m) ? strerror(m.err) : "short report");
        goto fail;
    }
    j->status_fd = p->st_r;
    p->st_r = -1;
    j->wall_ms = spec->wall_ms;
    j->cpu_s = spec->cpu_s;
    munmap(stack, stack_size);
    plan_free(p);
    free(p);
    *out = j;
    return 0;
fail:
    if (j->pid > 0) {
        int st;
        struct rusage ru;
        if (j->pidfd >= 0)
            syscall(SYS_pidfd_send_signal, j->pidfd, SIGKILL, NULL, 0);
        else
            kill(j->pid, SIGKILL);
        if (j->cg.version)
            sbx__cgroup_kill(&j->cg);
        reap(j, &st, &ru);
    }
    if (j->cg.version)
        sbx__cgroup_destroy(&j->cg);
    if (j->pidfd >= 0)
        close(j->pidfd);
    if (stack != MAP_FAILED)
        munmap(stack, stack_size);
    plan_free(p);
    free(p);
    free(j);
    return err;
}

pid_t sbx_job_pid(const sbx_job *j)
{
    return j->pid;
}

int sbx_job_pidfd(const sbx_job *j)
{
    return j->pidfd;
}

const char *sbx_job_cgroup(const sbx_job *j)
{
    if (j->remote)
        return j->cg.v2;
    if (j->cg.version == 2)
        return j->cg.v2;
    if (j->cg.version == 1)
        return j->cg.mem;
    return "";
}

/* The init is gone: collect the status, usage, and what ended it. */
static void finish(sbx_job *j)
{
    int st, rec[2] = {0, 0}, oom = 0, pids_hit = 0;
    struct rusage ru;
    int64_t cpu_ms, peak;
    sbx_usage *u = &j->usage;
    ssize_t n;

    reap(j, &st, &ru);
    /* The init wrote its report before exiting; it is in the pipe now. */
    while ((n = read(j->status_fd, rec, sizeof(rec))) < 0 && errno == EINTR)
        ;
    if (n != (ssize_t)sizeof(rec)) {
        rec[0] = st;
        rec[1] = SBX_LIMIT_NONE;
    }
    if (j->cg.version)
        sbx__cgroup_kill(&j->cg);
    sbx__cgroup_usage(&j->cg, &cpu_ms, &peak, &oom, &pids_hit);
    memset(u, 0, sizeof(*u));
    if (WIFEXITED(rec[0])) {
        u->exited = 1;
        u->exit_code = WEXITSTATUS(rec[0]);
    } else {
        u->term_signal = WIFSIGNALED(rec[0]) ? WTERMSIG(rec[0]) : SIGKILL;
    }
    u->cpu_ms = cpu_ms >= 0 ? cpu_ms
                            : (int64_t)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000 +
                                  (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1000;
    u->peak_mem_bytes = peak >= 0 ? peak : (int64_t)ru.ru_maxrss * 1024;
    u->pids_limit_hit = pids_hit;
    if (rec[1] == SBX_LIMIT_WALL || j->wall_killed)
        u->limit = SBX_LIMIT_WALL;
    else if (j->killed)
        u->limit = SBX_LIMIT_KILLED;
    else if (oom > 0 && !(u->exited && u->exit_code == 0))
        u->limit = SBX_LIMIT_MEMORY;
    else if (!u->exited && u->term_signal == SIGXCPU)
        u->limit = SBX_LIMIT_CPU;
    else if (!u->exited && u->term_signal == SIGKILL && j->cpu_s > 0 && u->cpu_ms >= j->cpu_s * 1000LL)
        u->limit = SBX_LIMIT_CPU;
    else if (!u->exited && u->term_signal == SIGXFSZ)
        u->limit = SBX_LIMIT_FSIZE;
    j->done = 1;
}

int sbx_job_wait(sbx_job *j, int timeout_ms, sbx_usage *out)
{
    int64_t until = timeout_ms >= 0 ? now_ms() + timeout_ms : -1;
    /* Backstop for the in-sandbox wall timer: one second of grace. */
    int64_t wall_at = j->wall_ms > 0 ? j->start_ms + j->wall_ms + 1000 : -1;

    if (j->remote && !j->done) {
        int err = sbx__remote_wait(j->remote, j->pidfd, timeout_ms, &j->usage);
        if (err < 0)
            return err;
        j->done = 1;
    }
    while (!j->done) {
        int64_t now = now_ms(), wait = -1;
        if (wall_at >= 0 && now >= wall_at && !j->wall_killed) {
            j->wall_killed = 1;
            syscall(SYS_pidfd_send_signal, j->pidfd, SIGKILL, NULL, 0);
            if (j->cg.version)
                sbx__cgroup_kill(&j->cg);
        }
        if (until >= 0)
            wait = until > now ? until - now : 0;
        if (wall_at >= 0 && !j->wall_killed && (wait < 0 || wall_at - now < wait))
            wait = wall_at - now;
        struct pollfd pfd = {j->pidfd, POLLIN, 0};
        int rc = poll(&pfd, 1, wait < 0 ? -1 : (int)(wait > INT_MAX ? INT_MAX : wait));
        if (rc < 0 && errno != EINTR)
            return ed_error_set(ED_EIO, "sandbox wait: %s", strerror(errno));
        if (rc > 0) {
            finish(j);
            break;
        }
        if (until >= 0 && now_ms() >= until)
            return ed_error_set(ED_EBUSY, "sandbox job %d still running", (int)j->pid);
    }
    if (out)
        *out = j->usage;
    return 0;
}

int sbx_job_signal(sbx_job *j, int sig)
{
    if (sig == SIGKILL)
        return sbx_job_kill(j);
    if (sig <= 0 || sig >= NSIG)
        return ed_error_set(ED_EINVAL, "sandbox: bad signal %d", sig);
    if (j->done)
        return ed_error_set(ED_ENOTFOUND, "sandbox job has ended");
    if (j->remote)
        return sbx__remote_signal(j->remote, sig);
    if (syscall(SYS_pidfd_send_signal, j->pidfd, sig, NULL, 0) < 0 && errno != ESRCH)
        return ed_error_set(ED_EIO, "sandbox signal: %s", strerror(errno));
    return 0;
}

int sbx_job_kill(sbx_job *j)
{
    if (j->done)
        return 0;
    if (j->remote)
        return sbx__remote_kill(j->remote);
    j->killed = 1;
    /* The init's death ends the PID namespace; the cgroup catches anything
     * caught mid-fork. */
    syscall(SYS_pidfd_send_signal, j->pidfd, SIGKILL, NULL, 0);
    if (j->cg.version)
        sbx__cgroup_kill(&j->cg);
    return 0;
}

void sbx_job_free(sbx_job *j)
{
    if (!j)
        return;
    if (j->remote) {
        sbx__remote_free(j->remote);
        if (j->pidfd >= 0)
            close(j->pidfd);
        free(j);
        return;
    }
    if (!j->done) {
        sbx_job_kill(j);
        sbx_job_wait(j, -1, NULL);
    }
    sbx__cgroup_destroy(&j->cg);
    if (j->pidfd >= 0)
        close(j->pidfd);
    if (j->status_fd >= 0)
        close(j->status_fd);
    free(j);
}

const char *sbx_limit_name(sbx_limit l)
{
    switch (l) {
    case SBX_LIMIT_NONE: return "none";
    case SBX_LIMIT_MEMORY: return "memory";
    case SBX_LIMIT_WALL: return "wall";
    case SBX_LIMIT_CPU: return "cpu";
    case SBX_LIMIT_FSIZE: return "fsize";
    case SBX_LIMIT_KILLED: return "killed";
    }
    return "unknown";
}
