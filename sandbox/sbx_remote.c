/*
 * sbx_remote.c - the serving process's side of the privilege split: once
 * sbx_launcher_use() is set, sbx_launch(), sbx_job_*, sbx_slot_* and
 * sbx_tree_give() send a request to the launcher and wait for its reply.
 *
 * One request at a time (a mutex around send and receive), matched to its
 * reply by sequence number. Every reply must come from the launcher's pid and
 * from root (SCM_CREDENTIALS, checked by the kernel; SO_PEERCRED would name
 * the process that made the socketpair, which is both). A job's end is
 * waited for on the pidfd the launcher passed back: poll() on a pidfd works
 * for a process that is not our child, and holding it gives no power over
 * the job (signals need the job's uid, which the server does not have).
 */
#include "sbx_wire.h"

#include "ed_error.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static atomic_int remote_fd = -1;
static pid_t remote_pid;
static int gone;                  /* the launcher closed or broke the protocol */
static uint32_t next_seq = 1;

int sbx_launcher_use(int fd, pid_t launcher_pid)
{
    int one = 1;

    if (fd >= 0 && (launcher_pid <= 0 || setsockopt(fd, SOL_SOCKET, SO_PASSCRED, &one, sizeof(one)) < 0))
        return ed_error_set(ED_EINVAL, "sandbox launcher: bad socket or pid");
    pthread_mutex_lock(&mu);
    int old = atomic_exchange(&remote_fd, fd);
    if (old >= 0)
        close(old);
    remote_pid = launcher_pid;
    gone = 0;
    pthread_mutex_unlock(&mu);
    return 0;
}

int sbx_launcher_active(void)
{
    return atomic_load(&remote_fd) >= 0;
}

int sbx__remote_on(void)
{
    return atomic_load(&remote_fd) >= 0;
}

/* Send `b` (freed here) with `fds`, read the reply into `rep`; a descriptor
 * that comes back goes to *rfd (or is closed when rfd is NULL). The
 * launcher's error comes back as this thread's error. */
static int call(sbx_wire_buf *b, unsigned op, uint32_t seq, const int *fds, size_t n_fds, sbx_wire_reply *rep,
                int *rfd)
{
    unsigned char *buf = NULL;
    int got[SBX_WIRE_FDS];
    size_t len = 0, n_got = 0;
    pid_t pid;
    uid_t uid;
    int rc, err = 0, fd;

    if (rfd)
        *rfd = -1;
    if ((buf = malloc(SBX_WIRE_MAX)) == NULL) {
        sbx__wire_buf_free(b);
        return ed_error_set(ED_ENOMEM, "sandbox launcher reply");
    }
    pthread_mutex_lock(&mu);
    fd = atomic_load(&remote_fd);
    if (fd < 0 || gone) {
        err = ed_error_set(ED_EIO, "the sandbox launcher is gone");
        goto out;
    }
    if ((rc = sbx__wire_send(fd, b->data, b->len, fds, n_fds)) < 0) {
        gone = 1;
        err = ed_error_set(ED_EIO, "the sandbox launcher is gone: send: %s", strerror(-rc));
        goto out;
    }
    rc = sbx__wire_recv(fd, buf, SBX_WIRE_MAX, &len, got, &n_got, &pid, &uid);
    if (rc <= 0) {
        gone = 1;
        err = ed_error_set(ED_EIO, "the sandbox launcher is gone%s%s", rc < 0 ? ": " : "",
                           rc < 0 ? strerror(-rc) : "");
        goto out;
    }
    if (pid != remote_pid || uid != 0) {
        gone = 1;
        err = ed_error_set(ED_EIO, "sandbox launcher: a reply from pid %d uid %d, not the launcher",
                           (int)pid, (int)uid);
        goto out;
    }
    if ((err = sbx__wire_parse_reply(rep, buf, len, op, seq)) < 0 ||
        (n_got > (op == SBX_OP_LAUNCH && rep->status == 0 ? 1u : 0u))) {
        gone = 1;
        if (err == 0)
            err = ed_error_set(ED_EIO, "sandbox launcher: unexpected descriptors in a reply");
        goto out;
    }
    if (rep->status < 0) {
        int code = rep->status >= ED_EINTERNAL ? rep->status : ED_EIO;
        err = ed_error_set(code, "%s", rep->message);
        goto out;
    }
    if (rfd && n_got == 1) {
        *rfd = got[0];
        n_got = 0;
    }
out:
    pthread_mutex_unlock(&mu);
    for (size_t i = 0; i < n_got; i++)
        close(got[i]);
    free(buf);
    sbx__wire_buf_free(b);
    return err;
}

static uint32_t seq_next(void)
{
    pthread_mutex_lock(&mu);
    uint32_t s = next_seq++;
    pthread_mutex_unlock(&mu);
    return s;
}

int sbx__remote_launch(const sbx_spec *spec, uint32_t *handle, pid_t *pid, int *pidfd, char *cgroup,
                       size_t cgroup_len)
{
    sbx_wire_buf b;
    sbx_wire_reply rep;
    int fds[SBX_WIRE_FDS];
    size_t n_fds = 0;
    uint32_t seq = seq_next();
    int err;

    if ((err = sbx__wire_encode_launch(&b, seq, spec, fds, &n_fds)) < 0) {
        sbx__wire_buf_free(&b);
        return err;
    }
    if ((err = call(&b, SBX_OP_LAUNCH, seq, fds, n_fds, &rep, pidfd)) < 0)
        return err;
    if (*pidfd < 0) {
        sbx__remote_free(rep.handle);
        return ed_error_set(ED_EIO, "sandbox launcher: no pidfd with the job");
    }
    *handle = rep.handle;
    *pid = rep.pid;
    snprintf(cgroup, cgroup_len, "%s", rep.cgroup);
    return 0;
}

static int simple(unsigned op, uint32_t handle, int with_sig, int sig, sbx_wire_reply *rep)
{
    sbx_wire_buf b;
    uint32_t seq = seq_next();
    int err;

    sbx__wire_begin(&b, op, seq);
    sbx__wire_u32(&b, handle);
    if (with_sig)
        sbx__wire_i32(&b, sig);
    if ((err = sbx__wire_finish(&b)) < 0) {
        sbx__wire_buf_free(&b);
        return err;
    }
    return call(&b, op, seq, NULL, 0, rep, NULL);
}

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int sbx__remote_wait(uint32_t handle, int pidfd, int timeout_ms, sbx_usage *out)
{
    int64_t until = timeout_ms >= 0 ? now_ms() + timeout_ms : -1;
    sbx_wire_reply rep;
    int err, ready = 0;

    for (;;) {
        if ((err = simple(SBX_OP_WAIT, handle, 0, 0, &rep)) < 0)
            return err;
        if (rep.done) {
            *out = rep.usage;
            return 0;
        }
        int64_t now = now_ms();
        if (until >= 0 && now >= until)
            return ed_error_set(ED_EBUSY, "sandbox job still running");
        /* The launcher also enforces the wall time on its own; ask again at
         * least every half second so a lost wake-up costs no more. */
        int64_t wait = until >= 0 ? until - now : 500;
        if (wait > 500)
            wait = 500;
        struct pollfd p = {pidfd, POLLIN, 0};
        if (ready) {
            /* It exited, yet the launcher did not see it end: do not spin. */
            struct timespec ts = {0, 5 * 1000 * 1000};
            nanosleep(&ts, NULL);
        }
        ready = poll(&p, 1, (int)wait) > 0;     /* exited: ask again at once */
    }
}

int sbx__remote_signal(uint32_t handle, int sig)
{
    sbx_wire_reply rep;
    return simple(SBX_OP_SIGNAL, handle, 1, sig, &rep);
}

int sbx__remote_kill(uint32_t handle)
{
    sbx_wire_reply rep;
    return simple(SBX_OP_KILL, handle, 0, 0, &rep);
}

void sbx__remote_free(uint32_t handle)
{
    sbx_wire_reply rep;
    simple(SBX_OP_FREE, handle, 0, 0, &rep);
}

int sbx__remote_slot_claim(uint32_t *handle, unsigned *uid)
{
    sbx_wire_buf b;
    sbx_wire_reply rep;
    uint32_t seq = seq_next();
    int err;

    sbx__wire_begin(&b, SBX_OP_SLOT_CLAIM, seq);
    if ((err = sbx__wire_finish(&b)) < 0 ||
        (err = call(&b, SBX_OP_SLOT_CLAIM, seq, NULL, 0, &rep, NULL)) < 0) {
        sbx__wire_buf_free(&b);
        return err;
    }
    *handle = rep.handle;
    *uid = rep.uid;
    return 0;
}

void sbx__remote_slot_free(uint32_t handle)
{
    sbx_wire_reply rep;
    simple(SBX_OP_SLOT_FREE, handle, 0, 0, &rep);
}

int sbx_tree_give(const char *path, uid_t uid, gid_t gid)
{
    sbx_wire_buf b;
    sbx_wire_reply rep;
    int err, fd;

    if (!path || path[0] != '/')
        return ed_error_set(ED_EINVAL, "sandbox: tree to hand over must be an absolute path");
    if (!sbx__remote_on()) {
        if ((fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0)
            return ed_error_set(ED_EIO, "cannot hand %s to uid %u: %s", path, (unsigned)uid, strerror(errno));
        err = sbx__tree_chown(fd, uid, gid, NULL);
        close(fd);
        return err;
    }
    if (gid != (gid_t)uid && uid != getuid())
        return ed_error_set(ED_EINVAL, "sandbox: a slot's tree goes to gid = uid");
    uint32_t seq = seq_next();
    sbx__wire_begin(&b, SBX_OP_TREE_GIVE, seq);
    sbx__wire_str(&b, path);
    sbx__wire_u32(&b, (uint32_t)uid);
    if ((err = sbx__wire_finish(&b)) < 0) {
        sbx__wire_buf_free(&b);
        return err;
    }
    return call(&b, SBX_OP_TREE_GIVE, seq, NULL, 0, &rep, NULL);
}

/* ---- disk quotas (sbx_disk.c sends every call here while a launcher is in
 * use; the launcher checks each path itself: README.md "Privilege split") ---- */

static int finish_and_call(sbx_wire_buf *b, unsigned op, uint32_t seq, sbx_wire_reply *rep)
{
    int err;

    if ((err = sbx__wire_finish(b)) < 0) {
        sbx__wire_buf_free(b);
        return err;
    }
    return call(b, op, seq, NULL, 0, rep, NULL);
}

int sbx__remote_disk_probe(sbx_disk *out, const char *data_dir, int64_t volume_bytes, unsigned flags)
{
    sbx_wire_buf b;
    sbx_wire_reply rep;
    uint32_t seq = seq_next();
    int err;

    sbx__wire_begin(&b, SBX_OP_DISK_PROBE, seq);
    sbx__wire_i64(&b, volume_bytes);
    sbx__wire_u32(&b, flags);
    if ((err = finish_and_call(&b, SBX_OP_DISK_PROBE, seq, &rep)) < 0)
        return err;
    out->mech = (sbx_disk_mech)rep.mech;
    snprintf(out->data_dir, sizeof(out->data_dir), "%s", data_dir);
    snprintf(out->detail, sizeof(out->detail), "%s", rep.detail);
    return 0;
}

static void put_paths(sbx_wire_buf *b, const char *const *paths, size_t n)
{
    sbx__wire_u32(b, (uint32_t)n);
    for (size_t i = 0; i < n; i++)
        sbx__wire_str(b, paths[i]);
}

int sbx__remote_disk_tree_init(const sbx_disk *d, const char *const *paths, size_t n, uint32_t projid,
                               int64_t limit_bytes)
{
    sbx_wire_buf b;
    sbx_wire_reply rep;
    uint32_t seq;

    (void)d;
    if (n == 0 || n > SBX_WIRE_TREE)
        return ed_error_set(ED_EINVAL, "a tree has 1 to %d directories, not %zu", SBX_WIRE_TREE, n);
    /* the directories are ours to make; the launcher mounts onto them */
    for (size_t i = 0; i < n; i++)
        if (paths[i] == NULL || paths[i][0] != '/' || (mkdir(paths[i], 0700) < 0 && errno != EEXIST))
            return ed_error_set(ED_EIO, "cannot create %s: %s", paths[i] ? paths[i] : "(null)",
                                paths[i] ? strerror(errno) : "no path");
    seq = seq_next();
    sbx__wire_begin(&b, SBX_OP_DISK_INIT, seq);
    put_paths(&b, paths, n);
    sbx__wire_u32(&b, projid);
    sbx__wire_i64(&b, limit_bytes);
    return finish_and_call(&b, SBX_OP_DISK_INIT, seq, &rep);
}

int sbx__remote_disk_tree_usage(const sbx_disk *d, const char *path, uint32_t projid, int64_t *out_bytes,
                                int64_t *out_inodes)
{
    sbx_wire_buf b;
    sbx_wire_reply rep;
    uint32_t seq = seq_next();
    int err;

    (void)d;
    sbx__wire_begin(&b, SBX_OP_DISK_USAGE, seq);
    sbx__wire_str(&b, path);
    sbx__wire_u32(&b, projid);
    if ((err = finish_and_call(&b, SBX_OP_DISK_USAGE, seq, &rep)) < 0)
        return err;
    *out_bytes = rep.bytes;
    *out_inodes = rep.inodes;
    return 0;
}

int sbx__remote_disk_tree_exists(uint32_t projid)
{
    sbx_wire_buf b;
    sbx_wire_reply rep;
    uint32_t seq = seq_next();

    sbx__wire_begin(&b, SBX_OP_DISK_EXISTS, seq);
    sbx__wire_u32(&b, projid);
    /* an error counts as "exists": the caller then tries to attach and
     * fails loudly, rather than forgetting the tree */
    return finish_and_call(&b, SBX_OP_DISK_EXISTS, seq, &rep) < 0 ? 1 : (int)rep.done;
}

int sbx__remote_disk_path(unsigned op, const char *path)
{
    sbx_wire_buf b;
    sbx_wire_reply rep;
    uint32_t seq = seq_next();

    sbx__wire_begin(&b, op, seq);
    sbx__wire_str(&b, path);
    return finish_and_call(&b, op, seq, &rep);
}

int sbx__remote_disk_tree_remove(const char *const *paths, size_t n, uint32_t projid)
{
    sbx_wire_buf b;
    sbx_wire_reply rep;
    uint32_t seq = seq_next();

    if (n > SBX_WIRE_TREE)
        return ed_error_set(ED_EINVAL, "a tree has 1 to %d directories, not %zu", SBX_WIRE_TREE, n);
    sbx__wire_begin(&b, SBX_OP_DISK_REMOVE, seq);
    put_paths(&b, paths, n);
    sbx__wire_u32(&b, projid);
    return finish_and_call(&b, SBX_OP_DISK_REMOVE, seq, &rep);
}

int sbx__remote_disk_detach(void)
{
    sbx_wire_buf b;
    sbx_wire_reply rep;
    uint32_t seq = seq_next();

    sbx__wire_begin(&b, SBX_OP_DISK_DETACH, seq);
    return finish_and_call(&b, SBX_OP_DISK_DETACH, seq, &rep);
}

int sbx__remote_idmap_probe(char *why, size_t cap)
{
    sbx_wire_buf b;
    sbx_wire_reply rep;
    uint32_t seq = seq_next();

    sbx__wire_begin(&b, SBX_OP_IDMAP_PROBE, seq);
    if (finish_and_call(&b, SBX_OP_IDMAP_PROBE, seq, &rep) < 0) {
        snprintf(why, cap, "%s", ed_error_last());
        return 0;
    }
    snprintf(why, cap, "%s", rep.done ? "" : rep.detail);
    return rep.done ? 1 : 0;
}
