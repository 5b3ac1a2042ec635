/*
 * sbx_disk.c - disk quotas for user-writable trees (job work and output
 * directories; project workspaces next). A tree is one or more directories
 * that share one limit. Three mechanisms, probed in this order:
 *
 *   "prjquota"     the data directory's own filesystem has project quotas on
 *                  (ext4 `-O quota,project` mounted prjquota, XFS pquota):
 *                  each directory gets the tree's project id with
 *                  FS_XFLAG_PROJINHERIT, the id a hard limit (quotactl).
 *   "loop volume"  DATA/volume.img, a sparse ext4 image made with
 *                  `-O quota,project`, loop-mounted prjquota at DATA/volume;
 *                  each tree is DATA/volume/trees/<projid>/<name> with a
 *                  project id and limit, bind-mounted onto its directories.
 *   "loop images"  for kernels without quota support (no CONFIG_QFMT_V2):
 *                  each tree is its own sparse ext4 image DATA/images/
 *                  <projid>.img sized so that an unprivileged writer gets
 *                  exactly the limit (the rest is reserved for root), its
 *                  top directories bind-mounted onto the tree's directories.
 *
 * Every function takes what it needs as arguments (no process state): the
 * privileged launcher can run each one as a request. All of them need root
 * (CAP_SYS_ADMIN in the initial namespaces) except sbx_disk_tree_usage on
 * "loop images" and the read-only part of the probe.
 */
#include "sbx_int.h"
#include "sbx_wire.h"
#include "ed_error.h"
#include "ed_log.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <linux/dqblk_xfs.h>
#include <linux/loop.h>
#include <linux/quota.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef SYS_quotactl_fd
#define SYS_quotactl_fd 443
#endif
#ifndef SYS_open_tree
#define SYS_open_tree 428
#endif
#ifndef SYS_move_mount
#define SYS_move_mount 429
#endif

/* linux/fs.h clashes with sys/mount.h on older glibc; these are stable ABI. */
struct sbx_fsxattr {
    uint32_t fsx_xflags, fsx_extsize, fsx_nextents, fsx_projid, fsx_cowextsize;
    unsigned char fsx_pad[8];
};
#define SBX_FS_IOC_FSGETXATTR _IOR('X', 31, struct sbx_fsxattr)
#define SBX_FS_IOC_FSSETXATTR _IOW('X', 32, struct sbx_fsxattr)
#define SBX_FS_XFLAG_PROJINHERIT 0x00000200

#define MAX_PATHS 8
#define PROBE_IMAGE_BYTES (INT64_C(32) << 20)

extern char **environ;

const char *sbx_disk_mech_name(sbx_disk_mech m)
{
    switch (m) {
    case SBX_DISK_PRJQUOTA: return "prjquota";
    case SBX_DISK_VOLUME:   return "loop volume";
    case SBX_DISK_IMAGES:   return "loop images";
    default:                return "none";
    }
}

/* ---- small helpers ---------------------------------------------------------- */

static void append(char *buf, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void append(char *buf, size_t n, const char *fmt, ...)
{
    size_t len = strlen(buf);
    va_list ap;

    if (len + 1 >= n)
        return;
    va_start(ap, fmt);
    vsnprintf(buf + len, n - len, fmt, ap);
    va_end(ap);
}

/* QCMD(cmd, PRJQUOTA) in unsigned arithmetic: the macro shifts the 0x80....
 * command numbers left in int, which overflows (undefined; UBSan stops). */
static unsigned quota_cmd(unsigned cmd)
{
    return (cmd << SUBCMDSHIFT) | ((unsigned)PRJQUOTA & SUBCMDMASK);
}

static int quotactl_fd(int fd, unsigned cmd, unsigned id, void *addr)
{
    return (int)syscall(SYS_quotactl_fd, fd, cmd, id, addr);
}

/* 1 when `path` is the root of a mount (its device differs from its parent's). */
static int is_mount_point(const char *path)
{
    char parent[PATH_MAX];
    struct stat a, b;

    if (snprintf(parent, sizeof(parent), "%s/..", path) >= (int)sizeof(parent))
        return 0;
    if (lstat(path, &a) < 0 || stat(parent, &b) < 0)
        return 0;
    return S_ISDIR(a.st_mode) && a.st_dev != b.st_dev;
}

/* Run an e2fsprogs tool; 0, or ED_EIO with its stderr in the message. The
 * tool's stdout goes to `out` (up to n-1 bytes) when out is not NULL. */
static int run_tool(char *out, size_t n, char *const argv[])
{
    static const char *const dirs[] = {"/usr/sbin/", "/sbin/", "/usr/bin/", "/bin/"};
    char path[128], err_buf[512] = "";
    int pout[2] = {-1, -1}, perr[2] = {-1, -1}, st = 0, found = 0;
    posix_spawn_file_actions_t fa;
    size_t nout = 0, nerr = 0;
    pid_t pid;
    ssize_t k;

    for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]) && !found; i++) {
        snprintf(path, sizeof(path), "%s%s", dirs[i], argv[0]);
        found = access(path, X_OK) == 0;
    }
    if (!found)
        return ed_error_set(ED_EIO, "%s is not installed (Debian package e2fsprogs)", argv[0]);
    if (pipe2(pout, O_CLOEXEC) < 0 || pipe2(perr, O_CLOEXEC) < 0) {
        int e = errno;
        if (pout[0] >= 0) {
            close(pout[0]);
            close(pout[1]);
        }
        return ed_error_set(ED_EIO, "pipe: %s", strerror(e));
    }
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&fa, pout[1], 1);
    posix_spawn_file_actions_adddup2(&fa, perr[1], 2);
    {
        char *const env[] = {"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "LANG=C", NULL};
        st = posix_spawn(&pid, path, &fa, NULL, argv, env);
    }
    posix_spawn_file_actions_destroy(&fa);
    close(pout[1]);
    close(perr[1]);
    if (st != 0) {
        close(pout[0]);
        close(perr[0]);
        return ed_error_set(ED_EIO, "cannot run %s: %s", path, strerror(st));
    }
    /* small outputs: read stdout fully, then stderr (tune2fs -l is ~2 KiB) */
    while ((k = read(pout[0], out ? out + nout : err_buf, out ? n - 1 - nout : sizeof(err_buf) - 1)) > 0 ||
           (k < 0 && errno == EINTR))
        if (k > 0 && out)
            nout += (size_t)k;
    if (out)
        out[nout] = '\0';
    while ((k = read(perr[0], err_buf + nerr, sizeof(err_buf) - 1 - nerr)) > 0 || (k < 0 && errno == EINTR))
        if (k > 0)
            nerr += (size_t)k;
    err_buf[nerr] = '\0';
    close(pout[0]);
    close(perr[0]);
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        for (size_t i = 0; err_buf[i]; i++)
            if (err_buf[i] == '\n')
                err_buf[i] = ' ';
        return ed_error_set(ED_EIO, "%s failed (status %d): %s", argv[0],
                            WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st), err_buf);
    }
    return 0;
}

/* A sparse file of `bytes`, created (O_EXCL) mode 0600. */
static int make_sparse(const char *path, int64_t bytes)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);

    if (fd < 0)
        return ed_error_set(ED_EIO, "cannot create %s: %s", path, strerror(errno));
    if (ftruncate(fd, bytes) < 0) {
        int e = errno;
        close(fd);
        unlink(path);
        return ed_error_set(ED_EIO, "cannot size %s to %" PRId64 " bytes: %s", path, bytes, strerror(e));
    }
    close(fd);
    return 0;
}

/* The loop device `image` is still attached to (a lazily unmounted
 * filesystem that something still holds), into dev; 0 when there is none.
 * Mounting that device again reuses the live filesystem; attaching the image
 * to a second device would run two filesystems over one image. */
static int attached_loop(char *dev, size_t n, const char *image)
{
    char path[96], back[PATH_MAX + 16], real[PATH_MAX];
    struct dirent *e;
    int found = 0;
    DIR *d;

    /* the kernel shows where the file is (d_path), not the name it was
     * attached by (the launcher's /proc/self/fd/N/...) */
    if (realpath(image, real) != NULL)
        image = real;
    if ((d = opendir("/sys/block")) == NULL)
        return 0;
    while (!found && (e = readdir(d)) != NULL) {
        FILE *f;
        if (strncmp(e->d_name, "loop", 4) != 0)
            continue;
        snprintf(path, sizeof(path), "/sys/block/%.40s/loop/backing_file", e->d_name);
        if ((f = fopen(path, "re")) == NULL)
            continue;
        if (fgets(back, sizeof(back), f)) {
            back[strcspn(back, "\n")] = '\0';
            if (strcmp(back, image) == 0) {   /* " (deleted)" when it is another file now */
                snprintf(dev, n, "/dev/%.40s", e->d_name);
                found = 1;
            }
        }
        fclose(f);
    }
    closedir(d);
    return found;
}

/* Attach `image` to a free loop device (autoclear: it detaches when the
 * filesystem on it is unmounted) and mount it at `mnt` as ext4 with `opts`. */
static int loop_mount(const char *image, const char *mnt, const char *opts)
{
    char dev[64];
    int ctl = -1, img = -1, lfd = -1, err = 0;

    if (attached_loop(dev, sizeof(dev), image) && mount(dev, mnt, "ext4", MS_NOSUID | MS_NODEV, opts) == 0)
        return 0;
    if ((img = open(image, O_RDWR | O_CLOEXEC | O_NOFOLLOW)) < 0)
        return ed_error_set(ED_EIO, "cannot open %s: %s", image, strerror(errno));
    if ((ctl = open("/dev/loop-control", O_RDWR | O_CLOEXEC)) < 0) {
        err = ed_error_set(ED_EIO, "no loop devices: /dev/loop-control: %s", strerror(errno));
        goto out;
    }
    for (int tries = 0;; tries++) {
        struct loop_config lc;
        int nr = ioctl(ctl, LOOP_CTL_GET_FREE);

        if (nr < 0) {
            err = ed_error_set(ED_EIO, "no free loop device: %s", strerror(errno));
            goto out;
        }
        snprintf(dev, sizeof(dev), "/dev/loop%d", nr);
        if ((lfd = open(dev, O_RDWR | O_CLOEXEC)) < 0 && errno == ENOENT &&
            mknod(dev, S_IFBLK | 0600, makedev(7, (unsigned)nr)) == 0)
            lfd = open(dev, O_RDWR | O_CLOEXEC);
        if (lfd < 0) {
            err = ed_error_set(ED_EIO, "cannot open %s: %s", dev, strerror(errno));
            goto out;
        }
        memset(&lc, 0, sizeof(lc));
        lc.fd = (uint32_t)img;
        lc.info.lo_flags = LO_FLAGS_AUTOCLEAR;
        snprintf((char *)lc.info.lo_file_name, sizeof(lc.info.lo_file_name), "%s", image);
        if (ioctl(lfd, LOOP_CONFIGURE, &lc) == 0)
            break;
        if (errno == EINVAL || errno == ENOTTY) {
            /* before Linux 5.8: set the file, then the flags */
            if (ioctl(lfd, LOOP_SET_FD, img) == 0) {
                if (ioctl(lfd, LOOP_SET_STATUS64, &lc.info) == 0)
                    break;
                ioctl(lfd, LOOP_CLR_FD, 0);
            }
        }
        if (errno != EBUSY || tries >= 32) {
            err = ed_error_set(ED_EIO, "cannot attach %s to %s: %s", image, dev, strerror(errno));
            goto out;
        }
        close(lfd);   /* another process took it first */
        lfd = -1;
    }
    if (mount(dev, mnt, "ext4", MS_NOSUID | MS_NODEV, opts) < 0)
        err = ed_error_set(ED_EIO, "cannot mount %s (%s) at %s with '%s': %s", image, dev, mnt, opts,
                           strerror(errno));
out:
    if (lfd >= 0)
        close(lfd);    /* the mount holds the device; without one it detaches now */
    if (ctl >= 0)
        close(ctl);
    if (img >= 0)
        close(img);
    return err;
}

/* Journal size in MiB for a filesystem of `bytes`. */
static int journal_mib(int64_t bytes)
{
    return bytes < (INT64_C(512) << 20) ? 4 : bytes < (INT64_C(8) << 30) ? 16 : 64;
}

/* A field "Name:   value" of `tune2fs -l` output, or -1. */
static int64_t tune2fs_field(const char *text, const char *name)
{
    const char *p = text;
    size_t n = strlen(name);

    while ((p = strstr(p, name)) != NULL) {
        if ((p == text || p[-1] == '\n') && p[n] == ':')
            return strtoll(p + n + 1, NULL, 10);
        p += n;
    }
    return -1;
}

/* mkfs.ext4 on `image` (a sparse file). `limit` > 0: size the root-reserved
 * blocks so an unprivileged writer gets `limit` bytes; `project`: with the
 * quota and project features. */
static int make_ext4(const char *image, int64_t limit, int project)
{
    char jsize[32], info[8192], rblocks[32];
    char *mkfs[] = {"mkfs.ext4", "-q", "-F", "-b", "4096", "-I", "256", "-i", "16384", "-m", "0", "-J", jsize,
                    "-E", "lazy_itable_init=1,lazy_journal_init=1,nodiscard,root_owner=0:0",
                    "-O", project ? "quota,project" : "^quota", (char *)image, NULL};
    struct stat sb;
    int err;

    if (stat(image, &sb) < 0)
        return ed_error_set(ED_EIO, "%s: %s", image, strerror(errno));
    snprintf(jsize, sizeof(jsize), "size=%d", journal_mib(sb.st_size));
    if ((err = run_tool(NULL, 0, mkfs)) < 0)
        return err;
    if (limit > 0) {
        char *list[] = {"tune2fs", "-l", (char *)image, NULL};
        char *setr[] = {"tune2fs", "-r", rblocks, (char *)image, NULL};
        int64_t bs, count, free_blocks, resv, want, r;

        if ((err = run_tool(info, sizeof(info), list)) < 0)
            return err;
        bs = tune2fs_field(info, "Block size");
        count = tune2fs_field(info, "Block count");
        free_blocks = tune2fs_field(info, "Free blocks");
        if (bs <= 0 || count <= 0 || free_blocks <= 0)
            return ed_error_set(ED_EIO, "tune2fs -l %s: no block counts", image);
        /* ext4 keeps min(2%, 4096) clusters back from everyone (delalloc) */
        resv = count / 50 < 4096 ? count / 50 : 4096;
        want = (limit + bs - 1) / bs;
        r = free_blocks - resv - want;
        if (r < 0)
            return ed_error_set(ED_EINTERNAL, "image %s too small for %" PRId64 " bytes", image, limit);
        if (r > count / 2)
            r = count / 2;   /* tune2fs's ceiling; only tiny limits get a little more */
        snprintf(rblocks, sizeof(rblocks), "%" PRId64, r);
        if ((err = run_tool(NULL, 0, setr)) < 0)
            return err;
    }
    return 0;
}

/* Bytes of image for a tree of `limit` bytes: the limit, inode tables and
 * bitmaps (~1/64 of the image), ext4's delalloc reserve (min(2%, 16 MiB)),
 * the journal and some slack; what is left over is reserved for root. */
static int64_t image_bytes(int64_t limit)
{
    int64_t resv = limit / 50 + (INT64_C(1) << 20);
    int64_t b;

    if (resv > (INT64_C(17) << 20))
        resv = INT64_C(17) << 20;
    b = limit + limit / 32 + resv + ((int64_t)journal_mib(limit) << 20) + (INT64_C(4) << 20);
    return (b + 4095) & ~INT64_C(4095);
}

/* Grow the image file of an unmounted tree to hold `limit` (offline
 * resize2fs, no privilege needed beyond the file). 0, or ED_EIO. */
static int image_grow_offline(const char *img, int64_t limit)
{
    char info[8192];
    char *list[] = {"tune2fs", "-l", (char *)img, NULL};
    char *fsck[] = {"e2fsck", "-f", "-p", (char *)img, NULL};
    char *rsz[] = {"resize2fs", "-f", (char *)img, NULL};
    int64_t want = image_bytes(limit), bs, count;
    struct stat sb;
    int err;

    if (stat(img, &sb) < 0)
        return ed_error_set(ED_EIO, "%s: %s", img, strerror(errno));
    if ((err = run_tool(info, sizeof(info), list)) < 0)
        return err;
    bs = tune2fs_field(info, "Block size");
    count = tune2fs_field(info, "Block count");
    if (bs <= 0 || count <= 0)
        return ed_error_set(ED_EIO, "tune2fs -l %s: no block counts", img);
    if (count * bs >= want)
        return 0;   /* the filesystem is big enough (the file may have grown before it) */
    if (sb.st_size < want && truncate(img, want) < 0)
        return ed_error_set(ED_EIO, "cannot grow %s to %" PRId64 " bytes: %s", img, want, strerror(errno));
    /* e2fsck -p: 0 clean, 1 errors corrected; resize2fs wants it checked */
    if ((err = run_tool(NULL, 0, fsck)) < 0 && !strstr(ed_error_last(), "(status 1)"))
        return err;
    return run_tool(NULL, 0, rsz);
}

/* Give an unprivileged writer `limit` bytes of the mounted image tree `img`
 * (its filesystem open at `fd`): the root-reserved blocks set again on its
 * loop device (tune2fs works on a mounted ext4). A limit past the image
 * grows it online where the host allows (LOOP_SET_CAPACITY + resize2fs,
 * needs CAP_SYS_RESOURCE), else the whole image is given now and the image
 * grows offline at its next attach. At most half the blocks can be
 * reserved, so a limit below half the image stays there. Best effort: the
 * tree works either way; 0, or ED_EIO with what failed. */
static int image_set_limit(const char *img, int fd, int64_t limit)
{
    char dev[64], info[8192], rblocks[32];
    char *list[] = {"tune2fs", "-l", dev, NULL};
    char *setr[] = {"tune2fs", "-r", rblocks, dev, NULL};
    int64_t bs, count, rcur, resv, want, r;
    struct statfs fs;
    int err;

    if (!attached_loop(dev, sizeof(dev), img))
        return ed_error_set(ED_EIO, "%s is not attached to a loop device", img);
    if ((err = run_tool(info, sizeof(info), list)) < 0)
        return err;
    bs = tune2fs_field(info, "Block size");
    count = tune2fs_field(info, "Block count");
    rcur = tune2fs_field(info, "Reserved block count");
    if (bs <= 0 || count <= 0 || rcur < 0 || fstatfs(fd, &fs) < 0)
        return ed_error_set(ED_EIO, "tune2fs -l %s: no block counts", dev);
    resv = count / 50 < 4096 ? count / 50 : 4096;
    want = (limit + bs - 1) / bs;
    r = (int64_t)fs.f_blocks - resv - want;    /* f_blocks: what is left after metadata */
    if (r < 0) {
        /* grow the image under the mounted filesystem */
        char *rsz[] = {"resize2fs", dev, NULL};
        int64_t bytes = image_bytes(limit);
        int lfd = open(dev, O_RDONLY | O_CLOEXEC);
        if (lfd >= 0 && truncate(img, bytes) == 0 && ioctl(lfd, LOOP_SET_CAPACITY, 0) == 0 &&
            run_tool(NULL, 0, rsz) == 0 && run_tool(info, sizeof(info), list) == 0 && fstatfs(fd, &fs) == 0) {
            count = tune2fs_field(info, "Block count");
            resv = count / 50 < 4096 ? count / 50 : 4096;
            r = (int64_t)fs.f_blocks - resv - want;
        }
        if (lfd >= 0)
            close(lfd);
        if (r < 0)
            r = 0;   /* all of it now; the rest at the next attach (image_grow_offline) */
    }
    if (r > count / 2)
        r = count / 2;
    if (r == rcur || (r > rcur ? r - rcur : rcur - r) <= count / 512)
        return 0;    /* the same limit (f_blocks moves a little with the journal's state) */
    snprintf(rblocks, sizeof(rblocks), "%" PRId64, r);
    return run_tool(NULL, 0, setr);
}

/* Remove everything beneath `path` without leaving its filesystem (nor
 * following symlinks); `path` itself stays. */
static int rm_entry(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    if (ftw->level == 0)
        return 0;
    if (flag == FTW_DP || flag == FTW_D)
        rmdir(p);
    else
        unlink(p);
    return 0;
}

static void empty_dir(const char *path)
{
    nftw(path, rm_entry, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
}

/* Set `projid` on one file or directory (directories also get PROJINHERIT). */
static int set_projid_fd(int fd, uint32_t projid, int is_dir)
{
    struct sbx_fsxattr fa;

    if (ioctl(fd, SBX_FS_IOC_FSGETXATTR, &fa) < 0)
        return -1;
    fa.fsx_projid = projid;
    if (is_dir)
        fa.fsx_xflags |= SBX_FS_XFLAG_PROJINHERIT;
    return ioctl(fd, SBX_FS_IOC_FSSETXATTR, &fa);
}

static uint32_t walk_projid;
static int walk_errno;

static int projid_entry(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
    int fd, is_dir = flag == FTW_D || flag == FTW_DP;

    (void)ftw;
    if (!is_dir && !S_ISREG(sb->st_mode))
        return 0;   /* symlinks, fifos: not opened (counted by inode only when new) */
    if ((fd = open(p, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | (is_dir ? O_DIRECTORY : 0))) < 0)
        return 0;
    if (set_projid_fd(fd, walk_projid, is_dir) < 0 && walk_errno == 0)
        walk_errno = errno;
    close(fd);
    return 0;
}

/* Give `path` and everything already in it `projid`. Not thread-safe across
 * concurrent calls in one process (nftw has no payload): serialized. */
static int set_projid_tree(const char *path, uint32_t projid)
{
    static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
    int e;

    pthread_mutex_lock(&mu);
    walk_projid = projid;
    walk_errno = 0;
    nftw(path, projid_entry, 16, FTW_PHYS | FTW_MOUNT);
    e = walk_errno;
    pthread_mutex_unlock(&mu);
    if (e)
        return ed_error_set(ED_EIO, "cannot set project id %u on %s: %s", projid, path, strerror(e));
    return 0;
}

/* Give the directory open at `fd` and everything in it on its filesystem
 * `projid`, through descriptors only (no link followed). -1 and errno. */
static int set_projid_at(int fd, uint32_t projid, int depth)
{
    struct stat top;
    struct dirent *e;
    DIR *d;
    int dup_fd, rc = 0;

    if (fstat(fd, &top) < 0 || set_projid_fd(fd, projid, 1) < 0)
        return -1;
    if (depth >= 128)
        return 0;
    if ((dup_fd = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
        return -1;
    if ((d = fdopendir(dup_fd)) == NULL) {
        close(dup_fd);
        return -1;
    }
    while (rc == 0 && (e = readdir(d)) != NULL) {
        struct stat st;
        int sub;
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        if (fstatat(fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || st.st_dev != top.st_dev)
            continue;
        if (S_ISDIR(st.st_mode)) {
            if ((sub = openat(fd, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0)
                continue;   /* swapped meanwhile: not followed */
            rc = set_projid_at(sub, projid, depth + 1);
            close(sub);
        } else if (S_ISREG(st.st_mode)) {
            if ((sub = openat(fd, e->d_name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)) < 0)
                continue;
            rc = set_projid_fd(sub, projid, 0);
            close(sub);
        }
    }
    int e2 = errno;
    closedir(d);
    errno = e2;
    return rc;
}

/* Hard limits for `projid` on the filesystem holding `path` (0: none). */
static int set_limit(const char *path, uint32_t projid, int64_t bytes, int64_t inodes)
{
    struct if_dqblk dq;
    int fd, rc;

    if ((fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
        return ed_error_set(ED_EIO, "%s: %s", path, strerror(errno));
    memset(&dq, 0, sizeof(dq));
    dq.dqb_bhardlimit = dq.dqb_bsoftlimit = bytes > 0 ? (uint64_t)(bytes + 1023) / 1024 : 0;
    dq.dqb_ihardlimit = dq.dqb_isoftlimit = inodes > 0 ? (uint64_t)inodes : 0;
    dq.dqb_valid = QIF_BLIMITS | QIF_ILIMITS;
    rc = quotactl_fd(fd, quota_cmd(Q_SETQUOTA), projid, &dq);
    close(fd);
    if (rc < 0)
        return ed_error_set(ED_EIO, "cannot set the project quota of %u on %s: %s", projid, path, strerror(errno));
    return 0;
}

/* 1 if the filesystem holding `path` accounts and enforces project quotas
 * (accounting alone, as ext4's quota feature without the prjquota mount
 * option or XFS pqnoenforce, would limit nothing). */
static int prjquota_on(const char *path, char *why, size_t n)
{
    struct if_dqinfo info;
    struct fs_quota_statv st;
    int fd, rc;

    if ((fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
        snprintf(why, n, "%s: %s", path, strerror(errno));
        return 0;
    }
    rc = quotactl_fd(fd, quota_cmd(Q_GETINFO), 0, &info);
    if (rc < 0) {
        snprintf(why, n, "%s", errno == ENOSYS ? "the kernel has no quotactl_fd (Linux < 5.14)"
                               : errno == ESRCH || errno == ENOENT || errno == EINVAL || errno == ENOTTY
                                   ? "project quotas are not on (ext4 needs -O quota,project and prjquota, "
                                     "XFS pquota)"
                                   : strerror(errno));
    } else {
        memset(&st, 0, sizeof(st));
        st.qs_version = FS_QSTATV_VERSION1;
        if (quotactl_fd(fd, quota_cmd(Q_XGETQSTATV), 0, &st) < 0) {
            snprintf(why, n, "cannot tell whether project quotas are enforced: %s", strerror(errno));
            rc = -1;
        } else if (!(st.qs_flags & FS_QUOTA_PDQ_ENFD)) {
            snprintf(why, n, "project quotas are counted but not enforced (mount option prjquota / pquota)");
            rc = -1;
        }
    }
    close(fd);
    return rc == 0;
}

static void image_path(char *out, size_t n, const char *data_dir, uint32_t projid, const char *suffix)
{
    snprintf(out, n, "%s/images/%u%s", data_dir, projid, suffix);
}

static const char *base_name(const char *p)
{
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

/* The name of directory i inside its tree: names[i], or the path's last
 * component. */
static const char *name_of(const char *const *paths, const char *const *names, size_t i)
{
    return names ? names[i] : base_name(paths[i]);
}

static int check_paths(const char *const *paths, const char *const *names, size_t n)
{
    if (n == 0 || n > MAX_PATHS)
        return ed_error_set(ED_EINVAL, "a tree has 1 to %d directories, not %zu", MAX_PATHS, n);
    for (size_t i = 0; i < n; i++) {
        const char *b = name_of(paths, names, i);
        if (paths[i] == NULL || paths[i][0] != '/' || strlen(paths[i]) >= 400)
            return ed_error_set(ED_EINVAL, "tree directory '%s' is not an absolute path",
                                paths[i] ? paths[i] : "(null)");
        if (b == NULL || b[0] == '\0' || b[0] == '.' || strchr(b, '/') || strlen(b) > 64)
            return ed_error_set(ED_EINVAL, "tree directory '%s' has no usable name", paths[i]);
        for (size_t k = 0; k < i; k++)
            if (strcmp(b, name_of(paths, names, k)) == 0)
                return ed_error_set(ED_EINVAL, "two directories of one tree are named '%s'", b);
    }
    return 0;
}

/* Where a tree's directories are: by path (in process, a root server), or
 * as descriptors the launcher opened beneath the data directory without
 * following links (sbx__disk_tree_init_at), so that nothing is looked up by
 * a name the serving process could swap. */
typedef struct targets {
    const char *const *paths;     /* absolute; by path, or only for messages */
    const char *const *names;     /* inside the tree; NULL: the paths' last components */
    const int *fds;               /* NULL: by path */
    int made[MAX_PATHS];          /* fds: the mounts made here (attached open_tree fds), -1 */
    uid_t owner;                  /* fds: new directories inside the tree go to owner/group */
    gid_t group;
} targets;

/* 1 when the directory open at `fd` is the root of a mount. */
static int fd_is_mount(int fd)
{
    struct stat a, b;

    if (fstat(fd, &a) < 0 || fstatat(fd, "..", &b, 0) < 0)
        return 0;
    return S_ISDIR(a.st_mode) && a.st_dev != b.st_dev;
}

static int target_is_mount(const targets *t, size_t i)
{
    return t->fds ? fd_is_mount(t->fds[i]) : is_mount_point(t->paths[i]);
}

/* Put a copy of the mount at `src` (a path in the launcher's own store, or
 * the root server's) onto target i. */
static int target_bind(targets *t, size_t i, const char *src)
{
    if (!t->fds) {
        if (mkdir(t->paths[i], 0700) < 0 && errno != EEXIST)
            return ed_error_set(ED_EIO, "cannot create %s: %s", t->paths[i], strerror(errno));
        if (is_mount_point(t->paths[i]))
            return 0;
        if (mount(src, t->paths[i], NULL, MS_BIND, NULL) < 0)
            return ed_error_set(ED_EIO, "cannot bind %s onto %s: %s", src, t->paths[i], strerror(errno));
        return 0;
    }
    if (fd_is_mount(t->fds[i]))
        return 0;
    /* a detached copy of the source's mount, moved onto the directory the
     * descriptor names, whatever its name is now */
    int tree = (int)syscall(SYS_open_tree, AT_FDCWD, src, 1 /* OPEN_TREE_CLONE */ | O_CLOEXEC);
    if (tree < 0)
        return ed_error_set(ED_EIO, "cannot bind %s onto %s: open_tree: %s", src, t->paths[i], strerror(errno));
    if (syscall(SYS_move_mount, tree, "", t->fds[i], "", 0x4 /* MOVE_MOUNT_F_EMPTY_PATH */ |
                0x40 /* MOVE_MOUNT_T_EMPTY_PATH */) < 0) {
        int e = errno;
        close(tree);
        return ed_error_set(ED_EIO, "cannot bind %s onto %s: move_mount: %s", src, t->paths[i], strerror(e));
    }
    t->made[i] = tree;
    return 0;
}

/* Undo target_bind (a failed init that created the tree). */
static void target_unbind(targets *t, size_t i)
{
    char p[64];

    if (!t->fds) {
        if (is_mount_point(t->paths[i]))
            umount2(t->paths[i], MNT_DETACH);
        return;
    }
    if (t->made[i] >= 0) {
        snprintf(p, sizeof(p), "/proc/self/fd/%d", t->made[i]);
        umount2(p, MNT_DETACH);
    }
}

static int set_projid_at(int fd, uint32_t projid, int depth);

/* Bind `src`/<name of i> onto each target that is not a mount yet (creating
 * the source directory, mode 0700, when `create`; given to t->owner in
 * descriptor mode). */
static int bind_all(const char *src, targets *t, size_t n, uint32_t projid, int create)
{
    char s[PATH_MAX];

    for (size_t i = 0; i < n; i++) {
        snprintf(s, sizeof(s), "%s/%s", src, name_of(t->paths, t->names, i));
        if (create) {
            if (mkdir(s, 0700) == 0) {
                if (t->fds && chown(s, t->owner, t->group) < 0)
                    return ed_error_set(ED_EIO, "cannot hand %s to uid %u: %s", s, (unsigned)t->owner,
                                        strerror(errno));
            } else if (errno != EEXIST) {
                return ed_error_set(ED_EIO, "cannot create %s: %s", s, strerror(errno));
            }
        }
        if (projid && create) {
            int err = set_projid_tree(s, projid);
            if (err < 0)
                return err;
        }
        int err = target_bind(t, i, s);
        if (err < 0)
            return err;
    }
    return 0;
}

/* ---- the volume --------------------------------------------------------------- */

int sbx_disk_volume_mount(const char *image, const char *mnt, int64_t bytes, int project_quota)
{
    struct stat sb;
    int created = 0, err;

    if (image == NULL || mnt == NULL || image[0] != '/' || mnt[0] != '/')
        return ed_error_set(ED_EINVAL, "volume image and mount point must be absolute paths");
    if (mkdir(mnt, 0700) < 0 && errno != EEXIST)
        return ed_error_set(ED_EIO, "cannot create %s: %s", mnt, strerror(errno));
    if (is_mount_point(mnt))
        return 0;
    if (lstat(image, &sb) < 0) {
        if (errno != ENOENT)
            return ed_error_set(ED_EIO, "%s: %s", image, strerror(errno));
        if (bytes < (INT64_C(64) << 20))
            return ed_error_set(ED_EINVAL, "volume of %" PRId64 " bytes: at least 64 MiB", bytes);
        if ((err = make_sparse(image, bytes)) < 0)
            return err;
        created = 1;
        if ((err = make_ext4(image, 0, project_quota)) < 0)
            goto fail;
    } else if (!S_ISREG(sb.st_mode)) {
        return ed_error_set(ED_EIO, "%s is not a regular file", image);
    }
    if ((err = loop_mount(image, mnt, project_quota ? "prjquota,noinit_itable" : "noinit_itable")) < 0)
        goto fail;
    chmod(mnt, 0711);
    return 0;
fail:
    if (created)
        unlink(image);   /* never a volume that held data */
    return err;
}

/* ---- probe ------------------------------------------------------------------ */

/* Make, mount and unmount a small image: the "loop images" mechanism (and,
 * with `project`, the kernel side of "loop volume") works here. */
static int try_image(const char *dir, int project, char *why, size_t n)
{
    char img[PATH_MAX], mnt[PATH_MAX];
    int err, ok = 0;

    snprintf(img, sizeof(img), "%s/.probe-%d-%d.img", dir, (int)getpid(), project);
    snprintf(mnt, sizeof(mnt), "%s/.probe-%d-%d.mnt", dir, (int)getpid(), project);
    unlink(img);
    rmdir(mnt);
    if ((err = make_sparse(img, PROBE_IMAGE_BYTES)) < 0 || (err = make_ext4(img, 0, project)) < 0) {
        snprintf(why, n, "%s", ed_error_last());
        goto out;
    }
    if (mkdir(mnt, 0700) < 0) {
        snprintf(why, n, "cannot create %.300s: %s", mnt, strerror(errno));
        goto out;
    }
    if (loop_mount(img, mnt, project ? "prjquota,noinit_itable" : "noinit_itable") < 0) {
        snprintf(why, n, "%s%s", ed_error_last(),
                 project ? " (the kernel needs CONFIG_QUOTA and CONFIG_QFMT_V2 for ext4 quotas)" : "");
        goto out;
    }
    ok = project ? prjquota_on(mnt, why, n) : 1;
    umount2(mnt, 0);
out:
    rmdir(mnt);
    unlink(img);
    return ok;
}

int sbx_disk_probe(sbx_disk *out, const char *data_dir, int64_t volume_bytes, unsigned flags)
{
    char why[400], vimg[PATH_MAX], vmnt[PATH_MAX], idir[PATH_MAX];
    struct statfs fs;

    memset(out, 0, sizeof(*out));
    if (data_dir == NULL || data_dir[0] != '/' || strlen(data_dir) >= sizeof(out->data_dir))
        return ed_error_set(ED_EINVAL, "data directory must be an absolute path under %zu bytes",
                            sizeof(out->data_dir));
    if (sbx__remote_on())
        return sbx__remote_disk_probe(out, data_dir, volume_bytes, flags);
    snprintf(out->data_dir, sizeof(out->data_dir), "%s", data_dir);
    snprintf(vimg, sizeof(vimg), "%s/volume.img", data_dir);
    snprintf(vmnt, sizeof(vmnt), "%s/volume", data_dir);
    snprintf(idir, sizeof(idir), "%s/images", data_dir);

    /* 1. project quotas on the data directory's own filesystem */
    if (!(flags & SBX_DISK_NO_PRJQUOTA)) {
        if (prjquota_on(data_dir, why, sizeof(why))) {
            out->mech = SBX_DISK_PRJQUOTA;
            snprintf(out->detail, sizeof(out->detail), "project quotas on the filesystem of %s", data_dir);
            return 0;
        }
        append(out->detail, sizeof(out->detail), "prjquota on %s: %s; ", data_dir, why);
    }
    if (geteuid() != 0) {
        append(out->detail, sizeof(out->detail), "loop volume and loop images need root");
        return 0;
    }
    /* 2. the loop volume: already mounted, or (SETUP) made and mounted */
    if (!(flags & SBX_DISK_NO_VOLUME) && volume_bytes >= 0) {
        if (is_mount_point(vmnt) && prjquota_on(vmnt, why, sizeof(why))) {
            out->mech = SBX_DISK_VOLUME;
            snprintf(out->detail, sizeof(out->detail), "%.300s mounted at %.300s with project quotas", vimg, vmnt);
            return 0;
        }
        if (flags & SBX_DISK_SETUP) {
            int64_t bytes = volume_bytes;
            struct stat sb;
            if (bytes == 0 && statfs(data_dir, &fs) == 0)
                bytes = (int64_t)fs.f_blocks * fs.f_bsize / 2;   /* sparse: costs what is used */
            if (lstat(vimg, &sb) == 0 || try_image(data_dir, 1, why, sizeof(why))) {
                if (sbx_disk_volume_mount(vimg, vmnt, bytes, 1) == 0 && prjquota_on(vmnt, why, sizeof(why))) {
                    out->mech = SBX_DISK_VOLUME;
                    snprintf(out->detail, sizeof(out->detail), "%.300s mounted at %.300s with project quotas", vimg,
                             vmnt);
                    return 0;
                }
                if (lstat(vimg, &sb) == 0) {
                    /* a volume that holds data and will not mount: never go on without it */
                    append(out->detail, sizeof(out->detail), "loop volume %s exists but cannot be used: %s",
                           vimg, is_mount_point(vmnt) ? why : ed_error_last());
                    return 0;
                }
                snprintf(why, sizeof(why), "%s", ed_error_last());
            }
            append(out->detail, sizeof(out->detail), "loop volume: %s; ", why);
        } else if (try_image(data_dir, 1, why, sizeof(why))) {
            out->mech = SBX_DISK_VOLUME;
            snprintf(out->detail, sizeof(out->detail), "%.300s would be created and mounted at %.300s", vimg, vmnt);
            return 0;
        } else {
            append(out->detail, sizeof(out->detail), "loop volume: %s; ", why);
        }
    }
    /* 3. an image per tree (tried in DATA/images when setting up, else in DATA) */
    if ((flags & SBX_DISK_SETUP) && mkdir(idir, 0700) < 0 && errno != EEXIST) {
        append(out->detail, sizeof(out->detail), "loop images: cannot create %s: %s", idir, strerror(errno));
        return 0;
    }
    if (try_image((flags & SBX_DISK_SETUP) ? idir : data_dir, 0, why, sizeof(why))) {
        char tried[sizeof(out->detail)];
        size_t len = strlen(out->detail);
        if (len >= 2 && strcmp(out->detail + len - 2, "; ") == 0)
            out->detail[len - 2] = '\0';
        snprintf(tried, sizeof(tried), "%s", out->detail);
        out->mech = SBX_DISK_IMAGES;
        snprintf(out->detail, sizeof(out->detail), "one ext4 image per tree in %.200s%s%.500s%s", idir,
                 tried[0] ? " (not better: " : "", tried, tried[0] ? ")" : "");
        return 0;
    }
    append(out->detail, sizeof(out->detail), "loop images: %s", why);
    return 0;
}

/* ---- trees ---------------------------------------------------------------------- */

/* The limit of an existing image tree set again (a tier changed it): on
 * the mounted filesystem of target 0. Logged, never fatal: the tree stays
 * usable under its previous limit. */
static int tree_image_limit(const targets *t, const char *img, int64_t limit)
{
    int fd = t->fds ? (t->made[0] >= 0 ? t->made[0] : t->fds[0])
                    : open(t->paths[0], O_RDONLY | O_DIRECTORY | O_CLOEXEC);

    if (fd < 0 || image_set_limit(img, fd, limit) < 0)
        ed_log_warn("sbx.disk", "tree %s keeps its previous limit: %s", t->paths[0],
                    fd < 0 ? strerror(errno) : ed_error_last());
    if (!t->fds && fd >= 0)
        close(fd);
    return 0;
}

/* sbx_disk_tree_init for targets by path or by descriptor. */
static int tree_init_targets(const sbx_disk *d, targets *t, size_t n, uint32_t projid, int64_t limit_bytes)
{
    char img[PATH_MAX], mnt[PATH_MAX], back[PATH_MAX];
    struct stat sb;
    int err, created = 0, staged = 0;

    if ((err = check_paths(t->paths, t->names, n)) < 0)
        return err;
    if (projid == 0 || limit_bytes <= 0)
        return ed_error_set(ED_EINVAL, "a tree needs a project id and a limit (got %u, %" PRId64 ")", projid,
                            limit_bytes);
    image_path(img, sizeof(img), d->data_dir, projid, ".img");
    snprintf(back, sizeof(back), "%s/volume/trees/%u", d->data_dir, projid);

    /* An existing tree keeps its mechanism (attach again after a restart). */
    if (lstat(img, &sb) == 0 || (d->mech == SBX_DISK_IMAGES && lstat(back, &sb) < 0)) {
        int exists = lstat(img, &sb) == 0, mounted = 1;
        char dev[64];
        for (size_t i = 0; i < n; i++)
            mounted = mounted && target_is_mount(t, i);
        if (mounted)
            return tree_image_limit(t, img, limit_bytes);
        if (exists && !attached_loop(dev, sizeof(dev), img) && (err = image_grow_offline(img, limit_bytes)) < 0)
            return err;   /* a larger limit than the image: grown before it is mounted */
        if (!exists) {
            char idir[PATH_MAX];
            snprintf(idir, sizeof(idir), "%s/images", d->data_dir);
            if (mkdir(idir, 0700) < 0 && errno != EEXIST)
                return ed_error_set(ED_EIO, "cannot create %s: %s", idir, strerror(errno));
            if ((err = make_sparse(img, image_bytes(limit_bytes))) < 0)
                return err;
            created = 1;
            if ((err = make_ext4(img, limit_bytes, 0)) < 0)
                goto fail;
        }
        image_path(mnt, sizeof(mnt), d->data_dir, projid, ".mnt");
        if (mkdir(mnt, 0700) < 0 && errno != EEXIST) {
            err = ed_error_set(ED_EIO, "cannot create %s: %s", mnt, strerror(errno));
            goto fail;
        }
        if (!is_mount_point(mnt) && (err = loop_mount(img, mnt, "noinit_itable")) < 0)
            goto fail;
        staged = 1;
        if (created)
            chmod(mnt, 0700);
        if ((err = bind_all(mnt, t, n, 0, 1)) < 0)
            goto fail;
        umount2(mnt, MNT_DETACH);   /* the binds keep the filesystem */
        rmdir(mnt);
        return created ? 0 : tree_image_limit(t, img, limit_bytes);
    fail:
        for (size_t i = 0; created && i < n; i++)
            target_unbind(t, i);
        if (staged)
            umount2(mnt, MNT_DETACH);
        rmdir(mnt);
        if (created)
            unlink(img);
        return err;
    }
    if (lstat(back, &sb) == 0 || d->mech == SBX_DISK_VOLUME) {
        char vmnt[PATH_MAX];
        snprintf(vmnt, sizeof(vmnt), "%s/volume", d->data_dir);
        if (!is_mount_point(vmnt))
            return ed_error_set(ED_EIO, "the loop volume %s is not mounted", vmnt);
        if (mkdir(back, 0700) < 0 && errno != EEXIST) {
            char trees[PATH_MAX];
            snprintf(trees, sizeof(trees), "%s/volume/trees", d->data_dir);
            mkdir(trees, 0700);
            if (mkdir(back, 0700) < 0 && errno != EEXIST)
                return ed_error_set(ED_EIO, "cannot create %s: %s", back, strerror(errno));
        }
        if ((err = set_limit(back, projid, limit_bytes, 0)) < 0 || (err = bind_all(back, t, n, projid, 1)) < 0)
            return err;
        return 0;
    }
    if (d->mech == SBX_DISK_PRJQUOTA) {
        for (size_t i = 0; i < n; i++) {
            if (t->fds) {
                if (set_projid_at(t->fds[i], projid, 0) < 0)
                    return ed_error_set(ED_EIO, "cannot set project id %u on %s: %s", projid, t->paths[i],
                                        strerror(errno));
                continue;
            }
            if (mkdir(t->paths[i], 0700) < 0 && errno != EEXIST)
                return ed_error_set(ED_EIO, "cannot create %s: %s", t->paths[i], strerror(errno));
            if ((err = set_projid_tree(t->paths[i], projid)) < 0)
                return err;
        }
        if (t->fds) {
            char p[64];
            snprintf(p, sizeof(p), "/proc/self/fd/%d", t->fds[0]);   /* opened as a directory, no name again */
            return set_limit(p, projid, limit_bytes, 0);
        }
        return set_limit(t->paths[0], projid, limit_bytes, 0);
    }
    return ed_error_set(ED_EUNPROC, "no disk quota mechanism on this host: %s", d->detail);
}

int sbx_disk_tree_init(const sbx_disk *d, const char *const *paths, size_t n, uint32_t projid,
                       int64_t limit_bytes)
{
    targets t;

    if (sbx__remote_on())
        return sbx__remote_disk_tree_init(d, paths, n, projid, limit_bytes);
    memset(&t, 0, sizeof(t));
    t.paths = paths;
    return tree_init_targets(d, &t, n, projid, limit_bytes);
}

int sbx__disk_tree_init_at(const sbx_disk *d, const int *dirs, const char *const *paths,
                           const char *const *names, size_t n, uint32_t projid, int64_t limit_bytes,
                           uid_t owner, gid_t group)
{
    targets t;
    int err;

    if (n > MAX_PATHS)
        return ed_error_set(ED_EINVAL, "a tree has 1 to %d directories, not %zu", MAX_PATHS, n);
    memset(&t, 0, sizeof(t));
    t.paths = paths;
    t.names = names;
    t.fds = dirs;
    t.owner = owner;
    t.group = group;
    for (size_t i = 0; i < MAX_PATHS; i++)
        t.made[i] = -1;
    err = tree_init_targets(d, &t, n, projid, limit_bytes);
    for (size_t i = 0; i < MAX_PATHS; i++)
        if (t.made[i] >= 0)
            close(t.made[i]);
    return err;
}

/* A tree image's usage from its filesystem's statfs: what is used beyond a
 * fresh filesystem's root and lost+found (2 blocks, 11 reserved + 2 inodes). */
static void image_usage(const struct statfs *fs, int64_t *out_bytes, int64_t *out_inodes)
{
    *out_bytes = ((int64_t)fs->f_blocks - (int64_t)fs->f_bfree) * fs->f_bsize - 2 * (int64_t)fs->f_bsize;
    *out_inodes = (int64_t)fs->f_files - (int64_t)fs->f_ffree - 13;
    if (*out_bytes < 0)
        *out_bytes = 0;
    if (*out_inodes < 0)
        *out_inodes = 0;
}

/* Project `projid`'s usage in the quota of the filesystem open at `fd`.
 * 0, or -1 with errno. */
static int quota_usage(int fd, uint32_t projid, int64_t *out_bytes, int64_t *out_inodes)
{
    struct if_dqblk dq;

    memset(&dq, 0, sizeof(dq));
    if (quotactl_fd(fd, quota_cmd(Q_GETQUOTA), projid, &dq) < 0)
        return -1;
    *out_bytes = (int64_t)dq.dqb_curspace;
    *out_inodes = (int64_t)dq.dqb_curinodes;
    return 0;
}

/* Whether tree `projid` is an image file's (its .img exists), not a
 * project-quota directory's. */
static int tree_has_image(const sbx_disk *d, uint32_t projid)
{
    char img[PATH_MAX];
    struct stat sb;

    image_path(img, sizeof(img), d->data_dir, projid, ".img");
    return lstat(img, &sb) == 0;
}

int sbx_disk_tree_usage(const sbx_disk *d, const char *path, uint32_t projid, int64_t *out_bytes,
                        int64_t *out_inodes)
{
    int fd, rc;

    *out_bytes = *out_inodes = 0;
    if (sbx__remote_on())
        return sbx__remote_disk_tree_usage(d, path, projid, out_bytes, out_inodes);
    if (tree_has_image(d, projid)) {
        struct statfs fs;
        if (!is_mount_point(path))
            return ed_error_set(ED_ENOTFOUND, "tree %s is not attached", path);
        if (statfs(path, &fs) < 0)
            return ed_error_set(ED_EIO, "%s: %s", path, strerror(errno));
        image_usage(&fs, out_bytes, out_inodes);
        return 0;
    }
    if ((fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
        return ed_error_set(ED_ENOTFOUND, "%s: %s", path, strerror(errno));
    rc = quota_usage(fd, projid, out_bytes, out_inodes);
    close(fd);
    if (rc < 0)
        return ed_error_set(ED_EIO, "project quota %u on %s: %s", projid, path, strerror(errno));
    return 0;
}

/* ---- freezing an ended tree's directory ------------------------------------------ */

typedef struct link_seen {
    dev_t dev;
    ino_t ino;
    char *rel;                    /* where its first copy went, beneath the destination root */
} link_seen;

typedef struct copy_state {
    int root;                     /* destination root directory */
    int64_t bytes, max_bytes;     /* data copied; refuse past max (sanity: the source is bounded) */
    link_seen *links;
    size_t nlinks, caplinks;
    int err;                      /* first errno */
} copy_state;

static void keep_err(copy_state *cs, int e)
{
    if (cs->err == 0)
        cs->err = e ? e : EIO;
}

/* Copy a regular file's data, holes kept as holes (SEEK_DATA/SEEK_HOLE), so
 * a sparse file costs what it held, not its size. */
static int copy_data(int in, int out, off_t size, copy_state *cs)
{
    static __thread char buf[1 << 16];
    off_t off = 0;

    for (;;) {
        off_t data = lseek(in, off, SEEK_DATA), hole;
        if (data < 0)
            break;                /* ENXIO: no data past off */
        if ((hole = lseek(in, data, SEEK_HOLE)) < 0)
            return -1;
        for (off = data; off < hole;) {
            size_t want = (size_t)(hole - off) < sizeof(buf) ? (size_t)(hole - off) : sizeof(buf);
            ssize_t n = pread(in, buf, want, off);
            if (n <= 0)
                return n == 0 ? 0 : -1;
            if (cs->bytes + n > cs->max_bytes) {
                errno = EFBIG;
                return -1;
            }
            if (pwrite(out, buf, (size_t)n, off) != n)
                return -1;
            off += n;
            cs->bytes += n;
        }
    }
    return ftruncate(out, size);
}

static void copy_dir(int sfd, int dfd, const char *rel, int depth, copy_state *cs);

static void copy_entry(int sfd, int dfd, const char *rel, const char *name, int depth, copy_state *cs)
{
    char sub[PATH_MAX];
    struct stat st;
    struct timespec times[2];

    if (fstatat(sfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
        keep_err(cs, errno);
        return;
    }
    if (snprintf(sub, sizeof(sub), "%s%s%s", rel, rel[0] ? "/" : "", name) >= (int)sizeof(sub)) {
        keep_err(cs, ENAMETOOLONG);
        return;
    }
    times[0] = st.st_atim;
    times[1] = st.st_mtim;
    if (S_ISDIR(st.st_mode)) {
        int s2, d2;
        if (depth >= 128) {
            keep_err(cs, ELOOP);
            return;
        }
        if (mkdirat(dfd, name, 0700) < 0 && errno != EEXIST) {
            keep_err(cs, errno);
            return;
        }
        if ((s2 = openat(sfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0) {
            keep_err(cs, errno);
            return;
        }
        if ((d2 = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0) {
            keep_err(cs, errno);
            close(s2);
            return;
        }
        copy_dir(s2, d2, sub, depth + 1, cs);
        if (fchown(d2, st.st_uid, st.st_gid) < 0 || fchmod(d2, st.st_mode & 07777) < 0)
            keep_err(cs, errno);
        futimens(d2, times);
        close(s2);
        close(d2);
    } else if (S_ISREG(st.st_mode)) {
        int in, out;
        if (st.st_nlink > 1) {
            /* hard links stay links: a thousand links to one file are one copy */
            for (size_t i = 0; i < cs->nlinks; i++)
                if (cs->links[i].dev == st.st_dev && cs->links[i].ino == st.st_ino) {
                    if (linkat(cs->root, cs->links[i].rel, dfd, name, 0) < 0)
                        keep_err(cs, errno);
                    return;
                }
        }
        if ((in = openat(sfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK)) < 0) {
            keep_err(cs, errno);
            return;
        }
        if ((out = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600)) < 0) {
            keep_err(cs, errno);
            close(in);
            return;
        }
        if (copy_data(in, out, st.st_size, cs) < 0 || fchown(out, st.st_uid, st.st_gid) < 0 ||
            fchmod(out, st.st_mode & 07777) < 0)
            keep_err(cs, errno);
        futimens(out, times);
        close(in);
        close(out);
        if (st.st_nlink > 1) {
            if (cs->nlinks == cs->caplinks) {
                size_t cap = cs->caplinks ? cs->caplinks * 2 : 64;
                link_seen *g = realloc(cs->links, cap * sizeof(*g));
                if (g == NULL) {
                    keep_err(cs, ENOMEM);
                    return;
                }
                cs->links = g;
                cs->caplinks = cap;
            }
            if ((cs->links[cs->nlinks].rel = strdup(sub)) == NULL) {
                keep_err(cs, ENOMEM);
                return;
            }
            cs->links[cs->nlinks].dev = st.st_dev;
            cs->links[cs->nlinks].ino = st.st_ino;
            cs->nlinks++;
        }
    } else if (S_ISLNK(st.st_mode)) {
        char target[PATH_MAX];
        ssize_t n = readlinkat(sfd, name, target, sizeof(target) - 1);
        if (n < 0) {
            keep_err(cs, errno);
            return;
        }
        target[n] = '\0';
        /* copied as a link, never followed (the gateway does not follow them either) */
        if (symlinkat(target, dfd, name) < 0 || fchownat(dfd, name, st.st_uid, st.st_gid, AT_SYMLINK_NOFOLLOW) < 0)
            keep_err(cs, errno);
    }
    /* fifos, sockets, devices: not artifacts */
}

static void copy_dir(int sfd, int dfd, const char *rel, int depth, copy_state *cs)
{
    int fd = dup(sfd);
    DIR *d;
    struct dirent *e;

    if (fd < 0 || (d = fdopendir(fd)) == NULL) {
        if (fd >= 0)
            close(fd);
        keep_err(cs, errno);
        return;
    }
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        if (strcmp(e->d_name, "lost+found") == 0 && depth == 0)
            continue;     /* the image's own */
        copy_entry(sfd, dfd, rel, e->d_name, depth, cs);
    }
    closedir(d);
}

static int freeze_swap(int parent, const char *name, const char *tmp, int *sfd, int dfd, const struct stat *st,
                       const struct stat *keep_out);

int sbx_disk_path_freeze(const char *path)
{
    char tmp[PATH_MAX];
    struct stat st;
    struct statfs fs;
    copy_state cs;
    int sfd = -1, dfd = -1, err = 0;

    if (path == NULL || path[0] != '/' || snprintf(tmp, sizeof(tmp), "%s.frozen", path) >= (int)sizeof(tmp))
        return ed_error_set(ED_EINVAL, "path must be absolute");
    if (sbx__remote_on())
        return sbx__remote_disk_path(SBX_OP_DISK_FREEZE, path);
    if (!is_mount_point(path))
        return 0;                 /* a plain directory already (prjquota, or frozen before) */
    memset(&cs, 0, sizeof(cs));
    cs.root = -1;
    /* a copy a crash interrupted starts again */
    empty_dir(tmp);
    rmdir(tmp);
    if ((sfd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0 || fstat(sfd, &st) < 0 ||
        fstatfs(sfd, &fs) < 0) {
        err = ed_error_set(ED_EIO, "%s: %s", path, strerror(errno));
        goto out;
    }
    if (mkdir(tmp, 0700) < 0 || (dfd = open(tmp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0) {
        err = ed_error_set(ED_EIO, "cannot create %s: %s", tmp, strerror(errno));
        goto out;
    }
    cs.root = dfd;
    cs.max_bytes = (int64_t)fs.f_blocks * fs.f_bsize + (INT64_C(1) << 20);   /* what the source can hold */
    copy_dir(sfd, dfd, "", 0, &cs);
    if (cs.err) {
        err = ed_error_set(ED_EIO, "cannot copy %s out of its disk quota: %s", path, strerror(cs.err));
        goto out;
    }
    if (fchown(dfd, st.st_uid, st.st_gid) < 0 || fchmod(dfd, st.st_mode & 07777) < 0 || fsync(dfd) < 0) {
        err = ed_error_set(ED_EIO, "%s: %s", tmp, strerror(errno));
        goto out;
    }
    {
        /* the swap, as the launcher does it (beneath the parent's directory) */
        const char *slash = strrchr(path, '/');
        char dir[PATH_MAX];
        int pfd;
        snprintf(dir, sizeof(dir), "%.*s", slash == path ? 1 : (int)(slash - path), path);
        if ((pfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
            err = ed_error_set(ED_EIO, "%s: %s", dir, strerror(errno));
            goto out;
        }
        err = freeze_swap(pfd, slash + 1, strrchr(tmp, '/') + 1, &sfd, dfd, &st, NULL);
        close(pfd);
    }
out:
    if (err < 0 && sfd >= 0) {    /* the mount is still there: the copy goes */
        empty_dir(tmp);
        rmdir(tmp);
    }
    if (sfd >= 0)
        close(sfd);
    if (dfd >= 0)
        close(dfd);
    for (size_t i = 0; i < cs.nlinks; i++)
        free(cs.links[i].rel);
    free(cs.links);
    return err;
}

int sbx_disk_tree_exists(const sbx_disk *d, uint32_t projid)
{
    char p[PATH_MAX];
    struct stat sb;

    if (sbx__remote_on())
        return sbx__remote_disk_tree_exists(projid);
    image_path(p, sizeof(p), d->data_dir, projid, ".img");
    if (lstat(p, &sb) == 0)
        return 1;
    snprintf(p, sizeof(p), "%s/volume/trees/%u", d->data_dir, projid);
    return lstat(p, &sb) == 0;
}

int sbx_disk_path_clear(const char *path)
{
    struct stat sb;

    if (path == NULL || path[0] != '/')
        return ed_error_set(ED_EINVAL, "path must be absolute");
    if (sbx__remote_on())
        return sbx__remote_disk_path(SBX_OP_DISK_CLEAR, path);
    if (lstat(path, &sb) < 0)
        return errno == ENOENT ? 0 : ed_error_set(ED_EIO, "%s: %s", path, strerror(errno));
    if (!S_ISDIR(sb.st_mode))
        return unlink(path) == 0 ? 0 : ed_error_set(ED_EIO, "cannot remove %s: %s", path, strerror(errno));
    empty_dir(path);      /* frees the space inside the tree's limit too */
    if (is_mount_point(path) && umount2(path, MNT_DETACH) < 0)
        return ed_error_set(ED_EIO, "cannot unmount %s: %s", path, strerror(errno));
    empty_dir(path);      /* what was beneath the mount, if anything */
    if (rmdir(path) < 0 && errno != ENOENT)
        return ed_error_set(ED_EIO, "cannot remove %s: %s", path, strerror(errno));
    return 0;
}

int sbx_disk_tree_remove(const sbx_disk *d, const char *const *paths, size_t n, uint32_t projid)
{
    char img[PATH_MAX], back[PATH_MAX], mnt[PATH_MAX];
    struct stat sb;
    int err = 0;

    if (projid == 0)
        return ed_error_set(ED_EINVAL, "project id 0 is not a tree");
    if (sbx__remote_on())
        return sbx__remote_disk_tree_remove(paths, n, projid);
    for (size_t i = 0; i < n; i++) {
        if (paths[i] == NULL || paths[i][0] != '/')
            return ed_error_set(ED_EINVAL, "tree directories must be absolute paths");
        if (lstat(paths[i], &sb) < 0)
            continue;
        if (is_mount_point(paths[i])) {
            /* the data goes with the image or the backing directory */
            if (umount2(paths[i], MNT_DETACH) < 0 && err == 0)
                err = ed_error_set(ED_EIO, "cannot unmount %s: %s", paths[i], strerror(errno));
        }
        empty_dir(paths[i]);
        if (rmdir(paths[i]) < 0 && errno != ENOENT && err == 0)
            err = ed_error_set(ED_EIO, "cannot remove %s: %s", paths[i], strerror(errno));
    }
    if (err < 0)
        return err;
    image_path(img, sizeof(img), d->data_dir, projid, ".img");
    image_path(mnt, sizeof(mnt), d->data_dir, projid, ".mnt");
    if (is_mount_point(mnt))
        umount2(mnt, MNT_DETACH);
    rmdir(mnt);
    if (unlink(img) < 0 && errno != ENOENT)
        return ed_error_set(ED_EIO, "cannot remove %s: %s", img, strerror(errno));
    snprintf(back, sizeof(back), "%s/volume/trees/%u", d->data_dir, projid);
    if (lstat(back, &sb) == 0) {
        char vmnt[PATH_MAX];
        snprintf(vmnt, sizeof(vmnt), "%s/volume", d->data_dir);
        empty_dir(back);
        rmdir(back);
        set_limit(vmnt, projid, 0, 0);   /* best effort: the id is free again */
    } else if (d->mech == SBX_DISK_PRJQUOTA) {
        set_limit(d->data_dir, projid, 0, 0);
    }
    return 0;
}

/* ---- shutdown ------------------------------------------------------------------ */

/* A mountinfo path field with its octal escapes (\040 ...) decoded in place. */
static void unescape(char *p)
{
    char *w = p;

    for (; *p; p++) {
        if (p[0] == '\\' && p[1] >= '0' && p[1] <= '3' && p[2] >= '0' && p[2] <= '7' && p[3] >= '0' && p[3] <= '7') {
            *w++ = (char)((p[1] - '0') * 64 + (p[2] - '0') * 8 + (p[3] - '0'));
            p += 3;
        } else {
            *w++ = *p;
        }
    }
    *w = '\0';
}

static int longer_first(const void *a, const void *b)
{
    size_t la = strlen(*(char *const *)a), lb = strlen(*(char *const *)b);
    return la < lb ? 1 : la > lb ? -1 : 0;
}

int sbx__disk_mounts_beneath(const char *dir, char ***out, size_t *out_n)
{
    char line[4096 + 256], **list = NULL;
    size_t n = 0, cap = 0, dlen;
    int err = 0;
    FILE *f;

    *out = NULL;
    *out_n = 0;
    dlen = strlen(dir);
    while (dlen > 1 && dir[dlen - 1] == '/')
        dlen--;
    if ((f = fopen("/proc/self/mountinfo", "re")) == NULL)
        return ed_error_set(ED_EIO, "/proc/self/mountinfo: %s", strerror(errno));
    while (fgets(line, sizeof(line), f)) {
        char *save = NULL, *tok = strtok_r(line, " ", &save);
        for (int i = 0; tok && i < 4; i++)
            tok = strtok_r(NULL, " ", &save);   /* id, parent, dev, root -> mount point */
        if (tok == NULL)
            continue;
        unescape(tok);
        if (strncmp(tok, dir, dlen) != 0 || tok[dlen] != '/')
            continue;   /* beneath dir only, never dir itself */
        if (n == cap) {
            char **g = realloc(list, (cap = cap ? cap * 2 : 32) * sizeof(*list));
            if (g == NULL) {
                err = ed_error_set(ED_ENOMEM, "mount list");
                break;
            }
            list = g;
        }
        if ((list[n] = strdup(tok)) == NULL) {
            err = ed_error_set(ED_ENOMEM, "mount list");
            break;
        }
        n++;
    }
    fclose(f);
    if (err < 0) {
        for (size_t i = 0; i < n; i++)
            free(list[i]);
        free(list);
        return err;
    }
    if (n > 0)
        qsort(list, n, sizeof(*list), longer_first);
    *out = list;
    *out_n = n;
    return 0;
}

int sbx_disk_detach(const char *dir)
{
    char **list = NULL;
    size_t n = 0;
    int err;

    if (dir == NULL || dir[0] != '/')
        return ed_error_set(ED_EINVAL, "directory must be absolute");
    if (sbx__remote_on())
        return sbx__remote_disk_detach();
    if ((err = sbx__disk_mounts_beneath(dir, &list, &n)) < 0)
        return err;
    for (size_t i = 0; i < n; i++) {
        if (err == 0 && umount2(list[i], MNT_DETACH) < 0 && errno != EINVAL && errno != ENOENT)
            err = ed_error_set(ED_EIO, "cannot unmount %s: %s", list[i], strerror(errno));
        free(list[i]);
    }
    free(list);
    return err;
}

/* ---- through descriptors: the launcher's side (sbx_int.h) ------------------------ */

/* Delete what is in the directory open at `fd`, on its filesystem only,
 * never following a link; the directory itself stays. -1 and errno at the
 * first failure (the rest is still tried). */
static int same_file(const struct stat *a, const struct stat *b)
{
    return b && a->st_dev == b->st_dev && a->st_ino == b->st_ino;
}

static int rm_contents_at(int fd, int depth, const struct stat *keep_out)
{
    struct stat top;
    struct dirent *e;
    DIR *d;
    int dup_fd, rc = 0, first = 0;

    if (fstat(fd, &top) < 0)
        return -1;
    if ((dup_fd = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
        return -1;
    if ((d = fdopendir(dup_fd)) == NULL) {
        close(dup_fd);
        return -1;
    }
    while ((e = readdir(d)) != NULL) {
        struct stat st;
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        if (fstatat(fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
            continue;
        if (S_ISDIR(st.st_mode)) {
            int sub;
            if (st.st_dev != top.st_dev || depth >= 256)
                continue;   /* another filesystem mounted here, or too deep: left alone */
            if ((sub = openat(fd, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0)
                continue;
            if (fd_is_mount(sub) || same_file(&st, keep_out)) {
                close(sub);
                continue;   /* the launcher's store, renamed in here: never emptied */
            }
            if (rm_contents_at(sub, depth + 1, keep_out) < 0 && !first)
                first = errno;
            close(sub);
            if (unlinkat(fd, e->d_name, AT_REMOVEDIR) < 0 && errno != ENOENT && !first)
                first = errno;
        } else if (unlinkat(fd, e->d_name, 0) < 0 && errno != ENOENT && !first) {
            first = errno;
        }
    }
    closedir(d);
    if (first) {
        errno = first;
        rc = -1;
    }
    return rc;
}

int sbx__disk_umount_fd(int fd)
{
    char p[64];

    snprintf(p, sizeof(p), "/proc/self/fd/%d", fd);
    return umount2(p, MNT_DETACH);
}

int sbx__disk_tree_usage_at(const sbx_disk *d, int dir, uint32_t projid, int64_t *out_bytes,
                            int64_t *out_inodes)
{
    *out_bytes = *out_inodes = 0;
    if (tree_has_image(d, projid)) {
        struct statfs fs;
        if (!fd_is_mount(dir))
            return ed_error_set(ED_ENOTFOUND, "tree %u is not attached", projid);
        if (fstatfs(dir, &fs) < 0)
            return ed_error_set(ED_EIO, "tree %u: %s", projid, strerror(errno));
        image_usage(&fs, out_bytes, out_inodes);
        return 0;
    }
    if (quota_usage(dir, projid, out_bytes, out_inodes) < 0)
        return ed_error_set(ED_EIO, "project quota %u: %s", projid, strerror(errno));
    return 0;
}

int sbx__disk_path_clear_at(int parent, const char *name, const struct stat *keep_out)
{
    struct stat sb;
    int fd;

    if (fstatat(parent, name, &sb, AT_SYMLINK_NOFOLLOW) < 0)
        return errno == ENOENT ? 0 : ed_error_set(ED_EIO, "%s: %s", name, strerror(errno));
    if (!S_ISDIR(sb.st_mode))
        return unlinkat(parent, name, 0) == 0 || errno == ENOENT
                   ? 0 : ed_error_set(ED_EIO, "cannot remove %s: %s", name, strerror(errno));
    for (int round = 0; round < 4; round++) {
        struct stat st;
        if ((fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0)
            return errno == ENOENT ? 0 : ed_error_set(ED_EIO, "%s: %s", name, strerror(errno));
        if (fstat(fd, &st) < 0 || same_file(&st, keep_out)) {
            close(fd);
            return ed_error_set(ED_EPERM, "%s is not a directory to delete", name);
        }
        rm_contents_at(fd, 0, keep_out);   /* frees the space inside the tree's limit too */
        if (!fd_is_mount(fd)) {
            close(fd);
            break;
        }
        if (sbx__disk_umount_fd(fd) < 0) {
            int e = errno;
            close(fd);
            return ed_error_set(ED_EIO, "cannot unmount %s: %s", name, strerror(e));
        }
        close(fd);   /* what was beneath the mount, next round */
    }
    if (unlinkat(parent, name, AT_REMOVEDIR) < 0 && errno != ENOENT)
        return ed_error_set(ED_EIO, "cannot remove %s: %s", name, strerror(errno));
    return 0;
}

/* 1 when the directory open at `fd` holds nothing. */
static int dir_is_empty(int fd)
{
    int dup_fd = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC), n = 0;
    struct dirent *e;
    DIR *d;

    if (dup_fd < 0 || (d = fdopendir(dup_fd)) == NULL) {
        if (dup_fd >= 0)
            close(dup_fd);
        return 0;
    }
    while ((e = readdir(d)) != NULL)
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
            n++;
    closedir(d);
    return n == 0;
}

/* Put the complete copy `tmp` (open at `dfd`, in `parent`) in place of the
 * mount at `name` (open at *sfd) so that `name` resolves to a complete tree
 * at every instant (a job's artifacts are served meanwhile): the copy's
 * entries move into the directory beneath the mount, reached through a
 * clone of the parent's mount without its submounts, then the unmount
 * uncovers them at once. Without open_tree: unmount, then exchange the two
 * names (renameat2 RENAME_EXCHANGE: empty for the span of one call), else
 * clear and rename. *sfd is closed (-1) once the mount is gone; before
 * that, an error leaves the mount as it was (what moved beneath it is
 * cleared by the next try). */
static int freeze_swap(int parent, const char *name, const char *tmp, int *sfd, int dfd, const struct stat *st,
                       const struct stat *keep_out)
{
    struct stat ps, us, ts, ds;
    int tree, under = -1, copy = -1, err = 0;

    /* both through the clone: a rename does not cross mounts */
    if ((tree = (int)syscall(SYS_open_tree, parent, "", 1 /* OPEN_TREE_CLONE */ | O_CLOEXEC | AT_EMPTY_PATH)) >= 0) {
        under = openat(tree, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        copy = openat(tree, tmp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        close(tree);   /* the clone lives while `under` and `copy` hold it */
        if (under < 0 || copy < 0 || fstat(under, &us) < 0 || fstat(parent, &ps) < 0 || fstat(copy, &ts) < 0 ||
            fstat(dfd, &ds) < 0 || us.st_dev != ps.st_dev || !same_file(&ts, &ds) || same_file(&us, keep_out)) {
            if (under >= 0)
                close(under);
            under = -1;
        }
    }
    if (under >= 0) {
        int dup_fd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        struct dirent *e;
        DIR *d = dup_fd >= 0 ? fdopendir(dup_fd) : NULL;

        rm_contents_at(under, 0, keep_out);   /* what an earlier try left */
        if (d == NULL) {
            if (dup_fd >= 0)
                close(dup_fd);
            err = ed_error_set(ED_EIO, "%s: %s", tmp, strerror(errno));
        }
        while (err == 0 && (e = readdir(d)) != NULL)
            if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0 &&
                renameat(copy, e->d_name, under, e->d_name) < 0)
                err = ed_error_set(ED_EIO, "cannot move %s beneath %s: %s", e->d_name, name, strerror(errno));
        if (d)
            closedir(d);
        if (err == 0 && (fchown(under, st->st_uid, st->st_gid) < 0 || fchmod(under, st->st_mode & 07777) < 0 ||
                         fsync(under) < 0))
            err = ed_error_set(ED_EIO, "%s: %s", name, strerror(errno));
        close(under);
        close(copy);
        if (err < 0)
            return err;
        if (sbx__disk_umount_fd(*sfd) < 0)
            return ed_error_set(ED_EIO, "cannot unmount %s: %s", name, strerror(errno));
        close(*sfd);
        *sfd = -1;
        for (int round = 0; round < 4; round++) {   /* a mount stacked beneath, if any */
            int fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC), more;
            if (fd < 0)
                break;
            more = fd_is_mount(fd) && sbx__disk_umount_fd(fd) == 0;
            close(fd);
            if (!more)
                break;
        }
        unlinkat(parent, tmp, AT_REMOVEDIR);   /* empty now */
        return 0;
    }
    if (copy >= 0)
        close(copy);
    if (sbx__disk_umount_fd(*sfd) < 0)
        return ed_error_set(ED_EIO, "cannot unmount %s: %s", name, strerror(errno));
    close(*sfd);
    *sfd = -1;
    if (renameat2(parent, tmp, parent, name, RENAME_EXCHANGE) == 0) {
        sbx__disk_path_clear_at(parent, tmp, keep_out);   /* the old one: empty */
        return 0;
    }
    /* beneath the mount: an empty directory (or a copy frozen before a crash) */
    if ((err = sbx__disk_path_clear_at(parent, name, keep_out)) < 0)
        return err;
    if (renameat(parent, tmp, parent, name) < 0)
        return ed_error_set(ED_EIO, "cannot put %s in place of %s: %s", tmp, name, strerror(errno));
    return 0;
}

int sbx__disk_path_freeze_at(int parent, const char *name, const struct stat *keep_out)
{
    char tmp[300];
    struct stat st, made;
    struct statfs fs;
    copy_state cs;
    int sfd = -1, dfd = -1, err = 0, ours = 0;

    if (snprintf(tmp, sizeof(tmp), "%s.frozen", name) >= (int)sizeof(tmp) || strchr(name, '/'))
        return ed_error_set(ED_EINVAL, "bad directory name");
    if ((sfd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0) {
        if (errno == ENOENT && renameat(parent, tmp, parent, name) == 0)
            return 0;             /* a crash came between the unmount and the rename */
        return ed_error_set(ED_EIO, "%s: %s", name, strerror(errno));
    }
    if (!fd_is_mount(sfd)) {
        close(sfd);
        unlinkat(parent, tmp, AT_REMOVEDIR);   /* left empty by a crash after the swap */
        return 0;                 /* a plain directory already (prjquota, or frozen before) */
    }
    memset(&cs, 0, sizeof(cs));
    cs.root = -1;
    /* a copy a crash interrupted starts again */
    if ((err = sbx__disk_path_clear_at(parent, tmp, keep_out)) < 0)
        goto out;
    if (fstat(sfd, &st) < 0 || fstatfs(sfd, &fs) < 0) {
        err = ed_error_set(ED_EIO, "%s: %s", name, strerror(errno));
        goto out;
    }
    /* Root's and 0700 until the copy is complete: nothing else can enter it
     * meanwhile, whoever renames it. */
    if (mkdirat(parent, tmp, 0700) < 0 ||
        (dfd = openat(parent, tmp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0 ||
        fstat(dfd, &made) < 0) {
        err = ed_error_set(ED_EIO, "cannot create %s: %s", tmp, strerror(errno));
        goto out;
    }
    /* the one we made: root's, 0700, empty, and not some other root
     * directory (the launcher's store) renamed into its place meanwhile */
    if (made.st_uid != geteuid() || (made.st_mode & 077) || !dir_is_empty(dfd) ||
        (keep_out && made.st_dev == keep_out->st_dev && made.st_ino == keep_out->st_ino)) {
        err = ed_error_set(ED_EIO, "%s was replaced while it was made", tmp);
        goto out;
    }
    ours = 1;
    cs.root = dfd;
    cs.max_bytes = (int64_t)fs.f_blocks * fs.f_bsize + (INT64_C(1) << 20);
    copy_dir(sfd, dfd, "", 0, &cs);
    if (cs.err) {
        err = ed_error_set(ED_EIO, "cannot copy %s out of its disk quota: %s", name, strerror(cs.err));
        goto out;
    }
    if (fsync(dfd) < 0 || fchmod(dfd, st.st_mode & 07777) < 0 || fchown(dfd, st.st_uid, st.st_gid) < 0) {
        err = ed_error_set(ED_EIO, "%s: %s", tmp, strerror(errno));
        goto out;
    }
    err = freeze_swap(parent, name, tmp, &sfd, dfd, &st, keep_out);
out:
    if (err < 0 && ours && sfd >= 0) {
        /* the output is still where it was: the copy goes */
        rm_contents_at(dfd, 0, keep_out);        /* ours, through its descriptor */
        unlinkat(parent, tmp, AT_REMOVEDIR);     /* by name: fails unless empty */
    }
    if (sfd >= 0)
        close(sfd);
    if (dfd >= 0)
        close(dfd);
    for (size_t i = 0; i < cs.nlinks; i++)
        free(cs.links[i].rel);
    free(cs.links);
    return err;
}
