/*
 * sbx_idmap.c - idmapped bind mounts (SBX_BIND_IDMAP): a project's working
 * tree bound read-write into a sandbox without changing who owns it on disk.
 *
 * The tree belongs to the serving user on disk (eddy, or root when the
 * server keeps root). A detached copy of its mount (open_tree
 * OPEN_TREE_CLONE) gets mount_setattr(MOUNT_ATTR_IDMAP) with a user
 * namespace whose uid_map and gid_map are "<owner on disk> <job's host id>
 * 1": through that mount the owner's files appear as the job's host uid
 * (aistudio, 1000, inside the sandbox) and what the job creates is written
 * as the owner. So the gateway reads and serves every file a kernel wrote,
 * and no file of a project ever belongs to a slot uid. Files of any other
 * owner appear as the overflow uid (nobody) and cannot be changed.
 *
 * The user namespace comes from a throwaway child (a raw clone with
 * CLONE_NEWUSER that waits on a pipe): its maps are written, its
 * /proc/<pid>/ns/user opened, then it is let go and reaped. Raw clone, not
 * fork: a threaded server's atfork handlers are not run in the child, which
 * only reads a pipe and exits.
 */
#include "sbx_int.h"
#include "sbx_wire.h"

#include "ed_error.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef SYS_open_tree
#define SYS_open_tree 428
#endif
#ifndef SYS_mount_setattr
#define SYS_mount_setattr 442
#endif
#ifndef OPEN_TREE_CLONE
#define OPEN_TREE_CLONE 1
#endif
#ifndef MOUNT_ATTR_IDMAP
#define MOUNT_ATTR_IDMAP 0x00100000
#endif

/* struct mount_attr from <linux/mount.h>, which clashes with <sys/mount.h>. */
struct sbx_mount_attr {
    unsigned long long attr_set, attr_clr, propagation, userns_fd;
};

static int write_file(const char *path, const char *text)
{
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    ssize_t n;
    int e;

    if (fd < 0)
        return -errno;
    n = write(fd, text, strlen(text));
    e = errno;
    close(fd);
    return n == (ssize_t)strlen(text) ? 0 : n < 0 ? -e : -EIO;
}

/* A user namespace mapping uid `from_uid` to `to_uid` and gid `from_gid`
 * to `to_gid` (one id each): its descriptor, or -errno. */
static int userns_fd(uid_t from_uid, gid_t from_gid, uid_t to_uid, gid_t to_gid, const char **step)
{
    char path[64], line[64];
    int p[2], fd = -1, rc = 0, st;
    pid_t pid;

    *step = "pipe";
    if (pipe2(p, O_CLOEXEC) < 0)
        return -errno;
    *step = "clone a user namespace";
    pid = (pid_t)syscall(SYS_clone, CLONE_NEWUSER | SIGCHLD, 0, NULL, NULL, 0);
    if (pid < 0) {
        rc = -errno;
        close(p[0]);
        close(p[1]);
        return rc;
    }
    if (pid == 0) {
        char c;
        close(p[1]);
        while (read(p[0], &c, 1) < 0 && errno == EINTR)
            ;
        _exit(0);
    }
    close(p[0]);
    snprintf(line, sizeof(line), "%u %u 1\n", (unsigned)from_uid, (unsigned)to_uid);
    snprintf(path, sizeof(path), "/proc/%d/uid_map", (int)pid);
    *step = "uid_map";
    if ((rc = write_file(path, line)) == 0) {
        snprintf(path, sizeof(path), "/proc/%d/setgroups", (int)pid);
        *step = "setgroups";
        rc = write_file(path, "deny");
    }
    if (rc == 0) {
        snprintf(line, sizeof(line), "%u %u 1\n", (unsigned)from_gid, (unsigned)to_gid);
        snprintf(path, sizeof(path), "/proc/%d/gid_map", (int)pid);
        *step = "gid_map";
        rc = write_file(path, line);
    }
    if (rc == 0) {
        snprintf(path, sizeof(path), "/proc/%d/ns/user", (int)pid);
        *step = "open the user namespace";
        if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
            rc = -errno;
    }
    close(p[1]);            /* the child's read returns: it exits */
    kill(pid, SIGKILL);
    while (waitpid(pid, &st, __WALL) < 0 && errno == EINTR)
        ;
    return rc < 0 ? rc : fd;
}

int sbx__idmap_apply(int tree_fd, uid_t disk_uid, gid_t disk_gid, uid_t host_uid, gid_t host_gid)
{
    struct sbx_mount_attr a;
    const char *step = "";
    int ns, e;

    if (host_uid == 0 || host_gid == 0 || disk_uid == (uid_t)-1 || disk_gid == (gid_t)-1)
        return ed_error_set(ED_EINVAL, "idmapped mount: uid %u/%u onto %u/%u is not allowed",
                            (unsigned)disk_uid, (unsigned)disk_gid, (unsigned)host_uid, (unsigned)host_gid);
    if ((ns = userns_fd(disk_uid, disk_gid, host_uid, host_gid, &step)) < 0)
        return ed_error_set(ED_EIO, "idmapped mount: %s: %s", step, strerror(-ns));
    memset(&a, 0, sizeof(a));
    a.attr_set = MOUNT_ATTR_IDMAP;
    a.userns_fd = (unsigned long long)ns;
    if (syscall(SYS_mount_setattr, tree_fd, "", AT_EMPTY_PATH, &a, sizeof(a)) < 0) {
        e = errno;
        close(ns);
        return ed_error_set(e == ENOSYS || e == EINVAL ? ED_EUNPROC : ED_EIO, "idmapped mount: %s",
                            e == ENOSYS ? "this kernel has no mount_setattr (Linux 5.12 or later is needed)"
                            : e == EINVAL ? "the filesystem does not support idmapped mounts"
                                          : strerror(e));
    }
    close(ns);
    return 0;
}

int sbx__idmap_clone(int dirfd, uid_t disk_uid, gid_t disk_gid, uid_t host_uid, gid_t host_gid)
{
    int tree, err;

    tree = (int)syscall(SYS_open_tree, dirfd, "", OPEN_TREE_CLONE | O_CLOEXEC | AT_EMPTY_PATH);
    if (tree < 0)
        return ed_error_set(errno == ENOSYS ? ED_EUNPROC : ED_EIO, "idmapped mount: open_tree: %s",
                            errno == ENOSYS ? "this kernel has no open_tree (Linux 5.12 or later is needed)"
                                            : strerror(errno));
    if ((err = sbx__idmap_apply(tree, disk_uid, disk_gid, host_uid, host_gid)) < 0) {
        close(tree);
        return err;
    }
    return tree;
}

int sbx__idmap_probe_fd(int dirfd, char *why, size_t cap)
{
    struct utsname u;
    struct statfs sf;
    int maj = 0, min = 0, tree;

    if (uname(&u) == 0 && sscanf(u.release, "%d.%d", &maj, &min) == 2 && (maj < 5 || (maj == 5 && min < 12))) {
        snprintf(why, cap, "Linux %s is older than 5.12 (no idmapped mounts)", u.release);
        return 0;
    }
    if (geteuid() != 0) {
        snprintf(why, cap, "probing needs root (the server or its launcher runs as root)");
        return 0;
    }
    /* The probe maps an id no file has onto nobody: nothing is mounted
     * anywhere, the clone goes with its descriptor. */
    tree = sbx__idmap_clone(dirfd, 0, 0, 65534, 65534);
    if (tree < 0) {
        char fs[48] = "";
        if (fstatfs(dirfd, &sf) == 0)
            snprintf(fs, sizeof(fs), " (filesystem magic %#lx)", (unsigned long)sf.f_type);
        snprintf(why, cap, "%s%s", ed_error_last(), fs);
        return 0;
    }
    close(tree);
    why[0] = '\0';
    return 1;
}

int sbx_idmap_probe(const char *dir, char *why, size_t cap)
{
    int fd, ok;

    if (sbx__remote_on())
        return sbx__remote_idmap_probe(why, cap);
    if (!dir || (fd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0) {
        snprintf(why, cap, "%s: %s", dir ? dir : "(no directory)", dir ? strerror(errno) : "");
        return 0;
    }
    ok = sbx__idmap_probe_fd(fd, why, cap);
    close(fd);
    return ok;
}
