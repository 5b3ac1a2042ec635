/*
 * sbx_launcher.c - the privileged half of `eddy serve`: a small loop, root,
 * that starts, waits for, signals and frees sandboxed jobs, hands out uid
 * slots and hands trees to slot uids, on behalf of the unprivileged serving
 * process at the other end of a socketpair.
 *
 * It assumes the serving process may be compromised, so a request can do no
 * more than the server could ask of the sandbox anyway:
 *   - only the serving process may ask (its uid and pid, checked on every
 *     message with SCM_CREDENTIALS);
 *   - bind sources lie beneath the data directory (read-write or read-only)
 *     or the read-only roots (the paddle package, eddy-kernel's folder): the
 *     launcher opens them itself beneath directory descriptors it opened at
 *     start, refusing "..", empty components and symbolic links anywhere, and
 *     the sandbox binds that descriptor (/proc/self/fd/N), so a link swapped
 *     in after the check changes nothing;
 *   - a job's uid is a slot this launcher handed out, never 0;
 *   - trees change hands only beneath the data directory, only to a held
 *     slot uid or back to the server, and only entries owned by the server or
 *     a slot uid (a root-owned file linked in stays root's); a job's trees go
 *     back to the server when it ends;
 *   - descriptors only as they came with the request.
 * When the serving process goes (EOF, or PR_SET_PDEATHSIG) every job is
 * killed and freed, every slot released, and the loop returns.
 */
#include "sbx_int.h"
#include "sbx_wire.h"

#include "ed_error.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "ed_openat2.h"

#define MAX_JOBS   1024
#define MAX_SLOTS  1024
#define MAX_TREES  8        /* trees handed to one slot */
#define MAX_DEPTH  128      /* tree walks go no deeper */

typedef struct ljob {
    uint32_t handle;        /* 0: free entry */
    sbx_job *job;
    uid_t uid;
    int done;
    sbx_usage usage;
} ljob;

typedef struct lslot {
    uint32_t handle;        /* 0: free entry */
    sbx_slot *slot;
    unsigned uid;
    char *trees[MAX_TREES]; /* relative to the data directory */
    size_t n_trees;
} lslot;

typedef struct launcher {
    const sbx_launcher_config *cfg;
    int sock;
    int data_fd;
    int store_fd;           /* DATA/launcher: root's, 0700; images and the volume (-1: unusable) */
    struct stat store_st;
    char store_path[32];    /* /proc/self/fd/<store_fd>: what sbx_disk.c works beneath */
    char store_why[256];    /* why store_fd is -1 */
    sbx_disk disk;          /* probed on request (DISK_PROBE) */
    int probed;
    int ro_fd[8];
    size_t data_len;
    uint32_t next_handle;
    ljob jobs[MAX_JOBS];
    lslot slots[MAX_SLOTS];
} launcher;

static volatile sig_atomic_t parent_died;

static void on_parent_death(int sig)
{
    (void)sig;
    parent_died = 1;
}

/* ---- paths and the walk beneath a root ---- */

/* Open `rel` (canonical: checked by rel_ok) beneath `root` without following
 * any symbolic link. `flags` as open(2); O_NOFOLLOW and O_CLOEXEC added. */
static int open_beneath(int root, const char *rel, int flags)
{
    struct open_how how = {0};
    char part[256];
    int fd, cur;

    how.flags = (unsigned long long)(flags | O_NOFOLLOW | O_CLOEXEC);
    how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
    fd = (int)syscall(SYS_openat2, root, rel, &how, sizeof(how));
    if (fd >= 0 || (errno != ENOSYS && errno != EPERM && errno != E2BIG))
        return fd;
    /* No openat2: one component at a time, never following a link. */
    if ((cur = fcntl(root, F_DUPFD_CLOEXEC, 3)) < 0)
        return -1;
    for (const char *p = rel;;) {
        const char *slash = strchr(p, '/');
        size_t n = slash ? (size_t)(slash - p) : strlen(p);
        if (n == 0 || n >= sizeof(part)) {
            close(cur);
            errno = EINVAL;
            return -1;
        }
        memcpy(part, p, n);
        part[n] = '\0';
        fd = openat(cur, part, slash ? O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC
                                     : flags | O_NOFOLLOW | O_CLOEXEC);
        int e = errno;
        close(cur);
        if (fd < 0) {
            errno = e;
            return -1;
        }
        if (!slash)
            return fd;
        cur = fd;
        p = slash + 1;
    }
}

/* A canonical relative path: no empty, "." or ".." component. */
static int rel_ok(const char *rel)
{
    if (!*rel)
        return 0;
    for (const char *p = rel; *p;) {
        const char *slash = strchr(p, '/');
        size_t n = slash ? (size_t)(slash - p) : strlen(p);
        if (n == 0 || (n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.'))
            return 0;
        if (!slash)
            break;
        p = slash + 1;
        if (!*p)
            return 0;       /* trailing slash */
    }
    return 1;
}

/* `path` beneath `root`: the part after it ("" for the root itself), or
 * NULL when it is not beneath or not canonical. */
static const char *under(const char *path, const char *root)
{
    size_t n = strlen(root);
    if (strncmp(path, root, n) != 0)
        return NULL;
    if (path[n] == '\0')
        return "";
    if (path[n] != '/' && !(n == 1 && root[0] == '/'))
        return NULL;
    const char *rel = path[n] == '/' ? path + n + 1 : path + n;
    return rel_ok(rel) ? rel : NULL;
}

static int owner_ok(const sbx_launcher_config *cfg, uid_t owner)
{
    if (!cfg)
        return 1;
    if (owner == cfg->server_uid && owner != 0)
        return 1;
    return owner >= cfg->slot_base && owner - cfg->slot_base < cfg->slot_count;
}

static int chown_fd(int fd, uid_t uid, gid_t gid, const sbx_launcher_config *cfg)
{
    struct stat st;
    if (fstat(fd, &st) < 0)
        return -1;
    if (!owner_ok(cfg, st.st_uid) || (st.st_uid == uid && st.st_gid == gid))
        return 0;
    return fchownat(fd, "", uid, gid, AT_EMPTY_PATH);
}

static int walk(int dfd, uid_t uid, gid_t gid, const sbx_launcher_config *cfg, int depth)
{
    DIR *d;
    struct dirent *e;
    int rc = 0, dup_fd;

    if (chown_fd(dfd, uid, gid, cfg) < 0)
        return -1;
    if (depth >= MAX_DEPTH)
        return 0;
    if ((dup_fd = fcntl(dfd, F_DUPFD_CLOEXEC, 3)) < 0)
        return -1;
    /* the dup shares dfd's offset: start from the first entry */
    if (lseek(dup_fd, 0, SEEK_SET) < 0 || (d = fdopendir(dup_fd)) == NULL) {
        close(dup_fd);
        return -1;
    }
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        /* Opened without following, then checked and changed through the
         * descriptor: what is checked is what changes hands. */
        int fd = openat(dfd, e->d_name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
        struct stat st;
        if (fd < 0 || fstat(fd, &st) < 0) {
            if (fd >= 0)
                close(fd);
            if (errno == ENOENT)
                continue;
            rc = -1;
            break;
        }
        if (S_ISDIR(st.st_mode)) {
            close(fd);
            int sub = openat(dfd, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            if (sub < 0) {
                if (errno == ENOENT || errno == ELOOP || errno == ENOTDIR)
                    continue;   /* swapped meanwhile: not followed */
                rc = -1;
                break;
            }
            rc = walk(sub, uid, gid, cfg, depth + 1);
            close(sub);
            if (rc < 0)
                break;
            continue;
        }
        rc = chown_fd(fd, uid, gid, cfg);
        close(fd);
        if (rc < 0)
            break;
    }
    int e2 = errno;
    closedir(d);
    errno = e2;
    return rc;
}

int sbx__tree_chown(int dirfd, uid_t uid, gid_t gid, const sbx_launcher_config *cfg)
{
    if (walk(dirfd, uid, gid, cfg, 0) < 0)
        return ed_error_set(ED_EIO, "cannot hand the tree to uid %u: %s", (unsigned)uid, strerror(errno));
    return 0;
}

/* ---- the state ---- */

static ljob *job_find(launcher *L, uint32_t h)
{
    for (size_t i = 0; h && i < MAX_JOBS; i++)
        if (L->jobs[i].handle == h)
            return &L->jobs[i];
    return NULL;
}

static lslot *slot_find(launcher *L, uint32_t h)
{
    for (size_t i = 0; h && i < MAX_SLOTS; i++)
        if (L->slots[i].handle == h)
            return &L->slots[i];
    return NULL;
}

static lslot *slot_of_uid(launcher *L, uid_t uid)
{
    for (size_t i = 0; uid && i < MAX_SLOTS; i++)
        if (L->slots[i].handle && L->slots[i].uid == uid)
            return &L->slots[i];
    return NULL;
}

static uint32_t handle_new(launcher *L)
{
    if (++L->next_handle == 0)
        L->next_handle = 1;
    return L->next_handle;
}

/* Give a slot's trees back to the server (after its job ended). */
static void trees_back(launcher *L, lslot *s)
{
    for (size_t i = 0; i < s->n_trees; i++) {
        int fd = open_beneath(L->data_fd, s->trees[i], O_RDONLY | O_DIRECTORY);
        if (fd >= 0) {
            if (sbx__tree_chown(fd, L->cfg->server_uid, L->cfg->server_gid, L->cfg) < 0)
                fprintf(stderr, "eddy-launcher: %s\n", ed_error_last());
            close(fd);
        }
        free(s->trees[i]);
        s->trees[i] = NULL;
    }
    s->n_trees = 0;
}

static void job_ended(launcher *L, ljob *j)
{
    lslot *s;
    if (j->done)
        return;
    j->done = 1;
    if ((s = slot_of_uid(L, j->uid)) != NULL)
        trees_back(L, s);
}

/* ---- requests ---- */

typedef struct answer {
    sbx_wire_buf b;
    int fd;                 /* to send with the reply, -1 none */
} answer;

/* The launch request's binds, checked and replaced by /proc/self/fd/N of a
 * descriptor opened here; fds[] collects them for closing. */
static int open_binds(launcher *L, sbx_bind *b, size_t n, int rw, int *fds, size_t *nfd,
                      char (*names)[32], uid_t host_uid, gid_t host_gid)
{
    for (size_t i = 0; i < n; i++) {
        const char *rel = NULL;
        int root = -1, fd;
        struct stat st;

        if (b[i].src && b[i].src[0] == '/' && (rel = under(b[i].src, L->cfg->data_dir)) != NULL)
            root = L->data_fd;
        for (size_t k = 0; root < 0 && !rw && b[i].src && k < L->cfg->n_ro_roots; k++)
            if ((rel = under(b[i].src, L->cfg->ro_roots[k])) != NULL)
                root = L->ro_fd[k];
        if (root < 0)
            return ed_error_set(ED_EPERM, "sandbox launcher: bind source '%s' is not beneath an allowed root",
                                b[i].src ? b[i].src : "");
        if (*rel == '\0')
            fd = fcntl(root, F_DUPFD_CLOEXEC, 3);
        else
            fd = open_beneath(root, rel, O_PATH);
        if (fd < 0)
            return ed_error_set(ED_EINVAL, "sandbox launcher: bind source '%s': %s", b[i].src,
                                errno == ELOOP ? "a symbolic link on the way" : strerror(errno));
        if (fstat(fd, &st) < 0 || !(S_ISDIR(st.st_mode) || S_ISREG(st.st_mode))) {
            close(fd);
            return ed_error_set(ED_EINVAL, "sandbox launcher: bind source '%s' is not a file or directory",
                                b[i].src);
        }
        /* A detached copy of its mount, rooted at it: the sandbox moves it
         * into place. Nothing is looked up by name again, and the data
         * directory (the server's, 0700) need not be searchable by the
         * sandbox's unmapped root. */
        int tree = (int)syscall(SYS_open_tree, fd, "", 1 /* OPEN_TREE_CLONE */ | O_CLOEXEC | AT_EMPTY_PATH);
        int e = errno;
        close(fd);
        if (tree < 0)
            return ed_error_set(ED_EIO, "sandbox launcher: bind source '%s': open_tree: %s", b[i].src,
                                strerror(e));
        fd = tree;
        fds[(*nfd)++] = fd;
        /* A project's working tree: seen as the job's uid through an
         * idmapped mount, while on disk everything stays the server's
         * (what the job creates included). Only read-write directories
         * beneath the data directory; the owner is the server, whatever
         * the request says. The flag is consumed here: sbx_launch binds
         * the result as any detached mount. */
        if (b[i].flags & SBX_BIND_IDMAP) {
            int err;
            if (!rw || root != L->data_fd || !S_ISDIR(st.st_mode) || strncmp(rel, "projects/", 9) != 0 ||
                !rel[9] || strchr(rel + 9, '/'))
                return ed_error_set(ED_EPERM, "sandbox launcher: only a project's tree (DATA/projects/<id>, "
                                    "read-write) is idmapped, not '%s'", b[i].src);
            if ((err = sbx__idmap_apply(fd, L->cfg->server_uid, L->cfg->server_gid, host_uid, host_gid)) < 0)
                return err;
            b[i].flags &= ~SBX_BIND_IDMAP;
        }
        snprintf(names[*nfd - 1], 32, "/proc/self/fd/%d", fd);
        b[i].src = names[*nfd - 1];
    }
    return 0;
}

static int do_launch(launcher *L, sbx_wire_req *q, int *fds, size_t n_fds, answer *a)
{
    sbx_spec *s = &q->spec;
    int bind_fds[2 * SBX_WIRE_BINDS];
    char names[2 * SBX_WIRE_BINDS][32];
    size_t n_bind = 0;
    int pass[SBX_WIRE_FDS], saved[SBX_WIRE_FDS], moved[SBX_WIRE_FDS];
    size_t n_moved = 0;
    ljob *slot = NULL;
    sbx_job *job = NULL;
    int err, hi = 3;

    for (size_t i = 0; i < SBX_WIRE_FDS; i++)
        saved[i] = moved[i] = -1;
    if (s->host_uid == 0 || s->host_gid != (gid_t)s->host_uid || !slot_of_uid(L, s->host_uid))
        return ed_error_set(ED_EPERM, "sandbox launcher: uid %u/%u is not a slot this launcher handed out",
                            (unsigned)s->host_uid, (unsigned)s->host_gid);
    for (size_t i = 0; i < MAX_JOBS && !slot; i++)
        if (!L->jobs[i].handle)
            slot = &L->jobs[i];
    if (!slot)
        return ed_error_set(ED_EBUSY, "sandbox launcher: %d jobs already", MAX_JOBS);
    s->allow_degraded = s->allow_degraded && L->cfg->allow_degraded;
    for (int i = 0; i < 3; i++)
        if (s->stdio[i] >= 0)
            s->stdio[i] = fds[s->stdio[i]];
    /* Passed descriptors must sit at their number inside. Move what came
     * with the request above every wanted number, then put each in place,
     * saving what the launcher itself holds there; it goes back after the
     * launch (single-threaded: nothing else uses it meanwhile). */
    for (size_t i = 0; i < q->n_pass; i++)
        if (q->pass_at[i] + 1 > hi)
            hi = q->pass_at[i] + 1;
    for (size_t i = 0; i < q->n_pass; i++) {
        if ((moved[i] = fcntl(fds[q->pass_idx[i]], F_DUPFD_CLOEXEC, hi)) < 0) {
            err = ed_error_set(ED_EIO, "sandbox launcher: descriptors: %s", strerror(errno));
            goto out;
        }
    }
    for (size_t i = 0; i < q->n_pass; i++) {
        int at = q->pass_at[i];
        if (fcntl(at, F_GETFD) >= 0 && (saved[i] = fcntl(at, F_DUPFD_CLOEXEC, hi)) < 0) {
            err = ed_error_set(ED_EIO, "sandbox launcher: descriptors: %s", strerror(errno));
            goto out;
        }
        if (dup3(moved[i], at, O_CLOEXEC) < 0) {
            err = ed_error_set(ED_EIO, "sandbox launcher: descriptors: %s", strerror(errno));
            goto out;
        }
        pass[i] = at;
        n_moved = i + 1;
    }
    s->pass_fds = pass;
    s->n_pass_fds = q->n_pass;
    if ((err = open_binds(L, q->ro, s->n_ro, 0, bind_fds, &n_bind, names, s->host_uid, s->host_gid)) < 0 ||
        (err = open_binds(L, q->rw, s->n_rw, 1, bind_fds, &n_bind, names, s->host_uid, s->host_gid)) < 0)
        goto out;
    if ((err = sbx_launch(&job, s)) < 0)
        goto out;
    slot->handle = handle_new(L);
    slot->job = job;
    slot->uid = s->host_uid;
    slot->done = 0;
    sbx__wire_u32(&a->b, slot->handle);
    sbx__wire_i32(&a->b, (int32_t)sbx_job_pid(job));
    sbx__wire_str(&a->b, sbx_job_cgroup(job));
    a->fd = sbx_job_pidfd(job);
out:
    for (size_t i = 0; i < n_bind; i++)
        close(bind_fds[i]);
    for (size_t i = 0; i < q->n_pass; i++) {
        if (i < n_moved) {
            if (saved[i] >= 0)
                dup3(saved[i], q->pass_at[i], O_CLOEXEC);
            else
                close(q->pass_at[i]);
        }
        if (saved[i] >= 0)
            close(saved[i]);
        if (moved[i] >= 0)
            close(moved[i]);
    }
    return err;
}

static int do_tree_give(launcher *L, sbx_wire_req *q)
{
    const sbx_launcher_config *cfg = L->cfg;
    const char *rel = under(q->path, cfg->data_dir);
    lslot *s = NULL;
    gid_t gid;
    int fd, err;

    if (q->uid == 0)
        return ed_error_set(ED_EPERM, "sandbox launcher: no tree goes to uid 0");
    if (q->uid == cfg->server_uid)
        gid = cfg->server_gid;
    else if ((s = slot_of_uid(L, q->uid)) != NULL)
        gid = (gid_t)q->uid;
    else
        return ed_error_set(ED_EPERM, "sandbox launcher: uid %u is neither the server nor a slot this "
                            "launcher handed out", (unsigned)q->uid);
    if (!rel || *rel == '\0')
        return ed_error_set(ED_EPERM, "sandbox launcher: '%s' is not a directory beneath the data directory",
                            q->path ? q->path : "");
    if ((fd = open_beneath(L->data_fd, rel, O_RDONLY | O_DIRECTORY)) < 0)
        return ed_error_set(ED_EINVAL, "sandbox launcher: '%s': %s", q->path,
                            errno == ELOOP ? "a symbolic link on the way" : strerror(errno));
    err = sbx__tree_chown(fd, (uid_t)q->uid, gid, cfg);
    close(fd);
    if (err == 0 && s) {
        size_t i;
        for (i = 0; i < s->n_trees && strcmp(s->trees[i], rel) != 0; i++)
            ;
        if (i == s->n_trees) {
            if (s->n_trees == MAX_TREES || (s->trees[s->n_trees] = strdup(rel)) == NULL)
                return ed_error_set(ED_ETOOBIG, "sandbox launcher: more than %d trees for one slot",
                                    MAX_TREES);
            s->n_trees++;
        }
    }
    return err;
}

/* ---- disk quotas ---- */

/* The store: DATA/launcher, made here, root's and 0700, used only through
 * the descriptor opened now. The serving process owns DATA and may rename
 * the directory, but cannot enter it or change what is in it, so the loop
 * images and the volume are out of its reach while they are mounted. The
 * descriptor stays open across exec (not CLOEXEC) so that mkfs.ext4 and
 * tune2fs reach the images as /proc/self/fd/N/...; sandboxed jobs close it. */
static void open_store(launcher *L)
{
    struct stat st;
    int fd;

    L->store_fd = -1;
    if (mkdirat(L->data_fd, "launcher", 0700) < 0 && errno != EEXIST) {
        snprintf(L->store_why, sizeof(L->store_why), "cannot create %.150s/launcher: %s", L->cfg->data_dir,
                 strerror(errno));
        return;
    }
    if ((fd = openat(L->data_fd, "launcher", O_RDONLY | O_DIRECTORY | O_NOFOLLOW)) < 0 || fstat(fd, &st) < 0) {
        snprintf(L->store_why, sizeof(L->store_why), "%.150s/launcher: %s", L->cfg->data_dir, strerror(errno));
        if (fd >= 0)
            close(fd);
        return;
    }
    if (st.st_uid != 0 || (st.st_mode & 077)) {
        snprintf(L->store_why, sizeof(L->store_why), "%.150s/launcher is not root's with mode 0700 (made by "
                 "someone else: remove it)", L->cfg->data_dir);
        close(fd);
        return;
    }
    L->store_fd = fd;
    L->store_st = st;
    snprintf(L->store_path, sizeof(L->store_path), "/proc/self/fd/%d", fd);
}

/* `text` with the store's /proc/self/fd/N name replaced by where it is. */
static void store_names(launcher *L, char *out, size_t n, const char *text)
{
    size_t k = strlen(L->store_path), used = 0;

    out[0] = '\0';
    while (*text && used + 1 < n) {
        if (L->store_fd >= 0 && strncmp(text, L->store_path, k) == 0 && (text[k] == '/' || text[k] == '\0' ||
                                                                          text[k] == ' ' || text[k] == ')')) {
            used += (size_t)snprintf(out + used, n - used, "%s/launcher", L->cfg->data_dir);
            if (used >= n)
                break;
            text += k;
            continue;
        }
        out[used++] = *text++;
        out[used] = '\0';
    }
}

static int disk_ready(launcher *L)
{
    if (!L->probed)
        return ed_error_set(ED_EUNPROC, "sandbox launcher: disk quotas were not probed");
    if (L->disk.mech == SBX_DISK_NONE)
        return ed_error_set(ED_EUNPROC, "no disk quota mechanism on this host: %s", L->disk.detail);
    return 0;
}

/* A project's workspace tree (projects/root.c): DATA/projects/<id>, <id>
 * "p" + 12 base62 characters, with a project id in the workspace range
 * [SBX_DISK_PROJID_PROJECTS, SBX_DISK_PROJID_JOBS) (which project holds
 * which id is in the server's store: a server could only swap its own
 * projects' trees). Opens DATA/projects beneath the data directory without
 * following a link (it must be the server's): *parent, *name the id. */
static int project_target(launcher *L, const char *rel, const char *path, uint32_t projid, int *parent,
                          const char **name)
{
    const char *id = rel + 9;
    struct stat st;
    int fd;

    if (strlen(id) != 13 || id[0] != 'p')
        return ed_error_set(ED_EPERM, "sandbox launcher: '%s' is not DATA/projects/<id>", path);
    for (int i = 1; i < 13; i++)
        if (!((id[i] >= '0' && id[i] <= '9') || (id[i] >= 'a' && id[i] <= 'z') || (id[i] >= 'A' && id[i] <= 'Z')))
            return ed_error_set(ED_EPERM, "sandbox launcher: '%s' is not DATA/projects/<id>", path);
    if (projid != 0 && (projid < SBX_DISK_PROJID_PROJECTS || projid >= SBX_DISK_PROJID_JOBS))
        return ed_error_set(ED_EPERM, "sandbox launcher: project id %u is not a workspace's", projid);
    if ((fd = open_beneath(L->data_fd, "projects", O_RDONLY | O_DIRECTORY)) < 0) {
        int e = errno, link = e == ELOOP || e == ENOTDIR || e == EXDEV;
        return ed_error_set(e == ENOENT ? ED_ENOTFOUND : link ? ED_EPERM : ED_EIO,
                            "sandbox launcher: 'projects': %s",
                            link ? "not a directory (a symbolic link?)" : strerror(e));
    }
    if (fstat(fd, &st) < 0 || st.st_uid != L->cfg->server_uid) {
        close(fd);
        return ed_error_set(ED_EPERM, "sandbox launcher: projects is not the server's directory");
    }
    *parent = fd;
    *name = id;
    return 0;
}

/* A job tree's directory: DATA/jobs/<id>/work or /output, <id> decimal
 * (1 to 18 digits, no leading zero) and `projid` that job's. Opens
 * DATA/jobs/<id> beneath the data directory without following a link
 * (it must be the server's directory): *parent, and *name the last part.
 * A project's workspace (project_target) is accepted too. */
static int job_target(launcher *L, const char *path, uint32_t projid, int *parent, const char **name)
{
    const char *rel = path && path[0] == '/' ? under(path, L->cfg->data_dir) : NULL, *p, *last;
    char jd[32];
    struct stat st;
    long long id;
    size_t nd;
    int fd;

    *parent = -1;
    if (rel && strncmp(rel, "projects/", 9) == 0)
        return project_target(L, rel, path, projid, parent, name);
    if (!rel || strncmp(rel, "jobs/", 5) != 0)
        return ed_error_set(ED_EPERM, "sandbox launcher: '%s' is not a job's directory beneath the data "
                            "directory", path ? path : "");
    p = rel + 5;
    nd = strspn(p, "0123456789");
    last = p + nd + 1;
    if (nd == 0 || nd > 18 || p[0] == '0' || p[nd] != '/' || (strcmp(last, "work") != 0 && strcmp(last, "output") != 0))
        return ed_error_set(ED_EPERM, "sandbox launcher: '%s' is not DATA/jobs/<id>/work or /output", path);
    id = strtoll(p, NULL, 10);
    if (projid != SBX_DISK_PROJID_JOBS + (uint32_t)(id & 0x3fffffff))
        return ed_error_set(ED_EPERM, "sandbox launcher: project id %u is not job %lld's", projid, id);
    snprintf(jd, sizeof(jd), "jobs/%.*s", (int)nd, p);
    if ((fd = open_beneath(L->data_fd, jd, O_RDONLY | O_DIRECTORY)) < 0) {
        if (errno == ENOENT)
            return ed_error_set(ED_ENOTFOUND, "sandbox launcher: %s: no such directory", jd);
        int e = errno, link = e == ELOOP || e == ENOTDIR || e == EXDEV;
        return ed_error_set(link ? ED_EPERM : ED_EIO, "sandbox launcher: '%s': %s", jd,
                            link ? "not a directory (a symbolic link?)" : strerror(e));
    }
    if (fstat(fd, &st) < 0 || st.st_uid != L->cfg->server_uid) {
        close(fd);
        return ed_error_set(ED_EPERM, "sandbox launcher: %s is not the server's directory", jd);
    }
    *parent = fd;
    *name = last;
    return 0;
}

/* The tree directory `name` in `parent`: a directory of the server's or a
 * slot's, not followed if a link. */
static int open_tree_dir(launcher *L, int parent, const char *name, const char *path)
{
    struct stat st;
    int fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

    if (fd < 0)
        return ed_error_set(errno == ENOENT ? ED_ENOTFOUND : errno == ELOOP || errno == ENOTDIR ? ED_EPERM : ED_EIO,
                            "sandbox launcher: '%s': %s", path,
                            errno == ELOOP ? "a symbolic link" : strerror(errno));
    if (fstat(fd, &st) < 0 || !owner_ok(L->cfg, st.st_uid)) {
        close(fd);
        return ed_error_set(ED_EPERM, "sandbox launcher: '%s' is neither the server's nor a slot's", path);
    }
    return fd;
}

/* Unmount (lazily) what the launcher mounted beneath the data directory:
 * job trees and the volume in its store, each resolved beneath the data
 * directory without following links and unmounted through its descriptor.
 * Images and the volume stay; the next start attaches them again. */
static int disk_detach(launcher *L)
{
    char **list = NULL;
    size_t n = 0;
    int err;

    if ((err = sbx__disk_mounts_beneath(L->cfg->data_dir, &list, &n)) < 0)
        return err;
    for (size_t i = 0; i < n; i++) {
        const char *rel = under(list[i], L->cfg->data_dir);
        int fd;
        if (rel && (strncmp(rel, "jobs/", 5) == 0 || strncmp(rel, "projects/", 9) == 0 ||
                    strncmp(rel, "launcher/", 9) == 0) &&
            (fd = open_beneath(L->data_fd, rel, O_PATH | O_DIRECTORY)) >= 0) {
            if (sbx__disk_umount_fd(fd) < 0 && errno != EINVAL && err == 0)
                err = ed_error_set(ED_EIO, "cannot unmount %s: %s", list[i], strerror(errno));
            close(fd);
        }
        free(list[i]);
    }
    free(list);
    return err;
}

static int do_disk(launcher *L, sbx_wire_req *q, answer *a)
{
    int parent = -1, dirs[SBX_WIRE_TREE], err = 0;
    const char *names[SBX_WIRE_TREE], *name;
    size_t nd = 0;
    char detail[sizeof(L->disk.detail)];

    for (size_t i = 0; i < SBX_WIRE_TREE; i++)
        dirs[i] = -1;
    switch (q->op) {
    case SBX_OP_DISK_PROBE:
        if ((q->flags & ~(unsigned)(SBX_DISK_SETUP | SBX_DISK_NO_PRJQUOTA | SBX_DISK_NO_VOLUME)) ||
            (q->bytes > 0 && (q->bytes < (INT64_C(64) << 20) || q->bytes > (INT64_C(1) << 50))))
            return ed_error_set(ED_EINVAL, "sandbox launcher: volume of %lld bytes or flags %#x out of range",
                                (long long)q->bytes, q->flags);
        memset(&L->disk, 0, sizeof(L->disk));
        if (L->store_fd < 0) {
            snprintf(L->disk.detail, sizeof(L->disk.detail), "%s", L->store_why);
        } else if ((err = sbx_disk_probe(&L->disk, L->store_path, q->bytes < 0 ? -1 : q->bytes, q->flags)) < 0) {
            return err;
        }
        L->probed = 1;
        store_names(L, detail, sizeof(detail), L->disk.detail);
        sbx__wire_u32(&a->b, (uint32_t)L->disk.mech);
        sbx__wire_str(&a->b, detail);
        return 0;
    case SBX_OP_DISK_INIT:
        if (q->bytes < (INT64_C(1) << 20) || q->bytes > (INT64_C(1) << 50))
            return ed_error_set(ED_EINVAL, "sandbox launcher: a disk limit of %lld bytes is outside 1 MiB..1 PiB",
                                (long long)q->bytes);
        if (q->n_paths == 0 || q->n_paths > 2)
            return ed_error_set(ED_EINVAL, "sandbox launcher: a job's tree has 1 or 2 directories");
        if (q->projid < SBX_DISK_PROJID_JOBS && q->n_paths != 1)
            return ed_error_set(ED_EINVAL, "sandbox launcher: a workspace's tree has 1 directory");
        for (nd = 0; nd < q->n_paths; nd++) {
            int p2;
            if ((err = job_target(L, q->paths[nd], q->projid, &p2, &names[nd])) < 0)
                goto out;
            if (nd > 0 && strcmp(names[nd], names[0]) == 0) {
                close(p2);
                err = ed_error_set(ED_EINVAL, "sandbox launcher: one directory twice in a tree");
                goto out;
            }
            dirs[nd] = open_tree_dir(L, p2, names[nd], q->paths[nd]);
            close(p2);
            if (dirs[nd] < 0) {
                err = dirs[nd];
                goto out;
            }
        }
        if ((err = disk_ready(L)) == 0)
            err = sbx__disk_tree_init_at(&L->disk, dirs, q->paths, names, nd, q->projid, q->bytes,
                                         L->cfg->server_uid, L->cfg->server_gid);
        goto out;
    case SBX_OP_DISK_USAGE: {
        int64_t bytes, inodes;
        if ((err = job_target(L, q->path, q->projid, &parent, &name)) < 0 || (err = disk_ready(L)) < 0)
            goto out;
        if ((dirs[0] = open_tree_dir(L, parent, name, q->path)) < 0) {
            err = dirs[0];
            goto out;
        }
        if ((err = sbx__disk_tree_usage_at(&L->disk, dirs[0], q->projid, &bytes, &inodes)) < 0)
            goto out;
        sbx__wire_i64(&a->b, bytes);
        sbx__wire_i64(&a->b, inodes);
        goto out;
    }
    case SBX_OP_DISK_EXISTS:
        if (q->projid < SBX_DISK_PROJID_PROJECTS)
            return ed_error_set(ED_EPERM, "sandbox launcher: project id %u is not a job's or a workspace's",
                                q->projid);
        sbx__wire_u32(&a->b, L->probed && L->disk.mech != SBX_DISK_NONE &&
                                 sbx_disk_tree_exists(&L->disk, q->projid) ? 1 : 0);
        return 0;
    case SBX_OP_DISK_CLEAR:
    case SBX_OP_DISK_FREEZE: {
        /* the path names its job: the project id is derived to check it */
        const char *rel = q->path && q->path[0] == '/' ? under(q->path, L->cfg->data_dir) : NULL;
        uint32_t projid = rel && strncmp(rel, "jobs/", 5) == 0
                              ? SBX_DISK_PROJID_JOBS + (uint32_t)(strtoll(rel + 5, NULL, 10) & 0x3fffffff) : 0;
        if (q->op == SBX_OP_DISK_FREEZE && rel && strncmp(rel, "projects/", 9) == 0)
            return ed_error_set(ED_EPERM, "sandbox launcher: a workspace is never frozen");
        if ((err = job_target(L, q->path, projid, &parent, &name)) < 0)
            return err == ED_ENOTFOUND ? 0 : err;
        err = q->op == SBX_OP_DISK_CLEAR ? sbx__disk_path_clear_at(parent, name, &L->store_st)
                                         : sbx__disk_path_freeze_at(parent, name, &L->store_st);
        if (err == 0 && q->op == SBX_OP_DISK_FREEZE &&
            (dirs[0] = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) >= 0)
            /* the copy keeps its owners: a slot's files (a job whose end a
             * crash hid from us) go to the server, as at a job's end */
            err = sbx__tree_chown(dirs[0], L->cfg->server_uid, L->cfg->server_gid, L->cfg);
        goto out;
    }
    case SBX_OP_DISK_REMOVE:
        if (q->projid < SBX_DISK_PROJID_PROJECTS || q->n_paths > 2)
            return ed_error_set(ED_EPERM, "sandbox launcher: project id %u is not a job's or a workspace's",
                                q->projid);
        for (size_t i = 0; i < q->n_paths; i++) {
            if ((err = job_target(L, q->paths[i], q->projid, &parent, &name)) == ED_ENOTFOUND)
                continue;
            if (err < 0)
                return err;
            err = sbx__disk_path_clear_at(parent, name, &L->store_st);
            close(parent);
            parent = -1;
            if (err < 0)
                return err;
        }
        if (L->probed && L->disk.mech != SBX_DISK_NONE)
            err = sbx_disk_tree_remove(&L->disk, NULL, 0, q->projid);
        return err;
    case SBX_OP_DISK_DETACH:
        return disk_detach(L);
    }
    return ed_error_set(ED_EINVAL, "sandbox launcher: unknown request");
out:
    if (parent >= 0)
        close(parent);
    for (size_t i = 0; i < SBX_WIRE_TREE; i++)
        if (dirs[i] >= 0)
            close(dirs[i]);
    return err;
}

static int dispatch(launcher *L, sbx_wire_req *q, int *fds, size_t n_fds, answer *a)
{
    ljob *j;
    lslot *s;
    int err;

    switch (q->op) {
    case SBX_OP_LAUNCH:
        return do_launch(L, q, fds, n_fds, a);
    case SBX_OP_WAIT:
        if (!(j = job_find(L, q->handle)))
            return ed_error_set(ED_ENOTFOUND, "sandbox launcher: no job %u", q->handle);
        if (!j->done) {
            err = sbx_job_wait(j->job, 0, &j->usage);
            if (err == ED_EBUSY) {
                sbx__wire_u32(&a->b, 0);
                return 0;
            }
            if (err < 0)
                return err;
            job_ended(L, j);
        }
        sbx__wire_u32(&a->b, 1);
        sbx__wire_i32(&a->b, j->usage.exited);
        sbx__wire_i32(&a->b, j->usage.exit_code);
        sbx__wire_i32(&a->b, j->usage.term_signal);
        sbx__wire_u32(&a->b, (uint32_t)j->usage.limit);
        sbx__wire_i64(&a->b, j->usage.cpu_ms);
        sbx__wire_i64(&a->b, j->usage.peak_mem_bytes);
        sbx__wire_i32(&a->b, j->usage.pids_limit_hit);
        return 0;
    case SBX_OP_SIGNAL:
        if (!(j = job_find(L, q->handle)))
            return ed_error_set(ED_ENOTFOUND, "sandbox launcher: no job %u", q->handle);
        return j->done ? ed_error_set(ED_ENOTFOUND, "sandbox job has ended") : sbx_job_signal(j->job, q->sig);
    case SBX_OP_KILL:
        if (!(j = job_find(L, q->handle)))
            return ed_error_set(ED_ENOTFOUND, "sandbox launcher: no job %u", q->handle);
        return j->done ? 0 : sbx_job_kill(j->job);
    case SBX_OP_FREE:
        if (!(j = job_find(L, q->handle)))
            return ed_error_set(ED_ENOTFOUND, "sandbox launcher: no job %u", q->handle);
        sbx_job_free(j->job);
        job_ended(L, j);
        memset(j, 0, sizeof(*j));
        return 0;
    case SBX_OP_SLOT_CLAIM:
        s = NULL;
        for (size_t i = 0; i < MAX_SLOTS && !s; i++)
            if (!L->slots[i].handle)
                s = &L->slots[i];
        if (!s)
            return ed_error_set(ED_EBUSY, "sandbox launcher: %d slots already", MAX_SLOTS);
        if ((err = sbx_slot_claim(&s->slot, L->cfg->slot_dir, L->cfg->slot_base, L->cfg->slot_count)) < 0)
            return err;
        s->handle = handle_new(L);
        s->uid = sbx_slot_uid(s->slot);
        s->n_trees = 0;
        sbx__wire_u32(&a->b, s->handle);
        sbx__wire_u32(&a->b, s->uid);
        return 0;
    case SBX_OP_SLOT_FREE:
        if (!(s = slot_find(L, q->handle)))
            return ed_error_set(ED_ENOTFOUND, "sandbox launcher: no slot %u", q->handle);
        trees_back(L, s);
        sbx_slot_free(s->slot);
        memset(s, 0, sizeof(*s));
        return 0;
    case SBX_OP_TREE_GIVE:
        return do_tree_give(L, q);
    case SBX_OP_IDMAP_PROBE: {
        char why[256];
        int ok = sbx__idmap_probe_fd(L->data_fd, why, sizeof(why));
        sbx__wire_u32(&a->b, ok ? 1 : 0);
        sbx__wire_str(&a->b, ok ? "" : why);
        return 0;
    }
    case SBX_OP_DISK_PROBE:
    case SBX_OP_DISK_INIT:
    case SBX_OP_DISK_USAGE:
    case SBX_OP_DISK_EXISTS:
    case SBX_OP_DISK_CLEAR:
    case SBX_OP_DISK_FREEZE:
    case SBX_OP_DISK_REMOVE:
    case SBX_OP_DISK_DETACH:
        return do_disk(L, q, a);
    }
    return ed_error_set(ED_EINVAL, "sandbox launcher: unknown request");
}

/* Reply to the message in `buf`; a malformed one gets an error reply too
 * (with sequence 0 when even the header was bad). */
static void serve_one(launcher *L, sbx_wire_req *q, const unsigned char *buf, size_t len, int *fds,
                      size_t n_fds, pid_t pid, uid_t uid)
{
    answer a = {.fd = -1};
    int err;
    unsigned op = len >= 8 ? (unsigned)(buf[6] | buf[7] << 8) : 0;
    uint32_t seq = len >= 12 ? (uint32_t)buf[8] | (uint32_t)buf[9] << 8 | (uint32_t)buf[10] << 16 |
                                   (uint32_t)buf[11] << 24
                             : 0;

    if (uid != L->cfg->server_uid || (L->cfg->server_pid && pid != L->cfg->server_pid))
        err = ed_error_set(ED_EPERM, "sandbox launcher: request from pid %d uid %d, not the server",
                           (int)pid, (int)uid);
    else
        err = sbx__wire_parse_request(q, buf, len, n_fds);
    if (err == 0) {
        sbx__wire_begin(&a.b, q->op | SBX_OP_REPLY, q->seq);
        sbx__wire_i32(&a.b, 0);
        if ((err = dispatch(L, q, fds, n_fds, &a)) < 0 || (err = sbx__wire_finish(&a.b)) < 0)
            sbx__wire_buf_free(&a.b);
    }
    if (err < 0) {
        char msg[SBX_WIRE_STR_MAX];
        snprintf(msg, sizeof(msg), "%s", ed_error_last());
        a.fd = -1;
        sbx__wire_begin(&a.b, (op & 0x7fff) | SBX_OP_REPLY, seq);
        sbx__wire_i32(&a.b, err);
        sbx__wire_str(&a.b, msg);
        sbx__wire_finish(&a.b);
    }
    if (a.b.data && sbx__wire_send(L->sock, a.b.data, a.b.len, &a.fd, a.fd >= 0 ? 1 : 0) < 0)
        fprintf(stderr, "eddy-launcher: reply: %s\n", strerror(errno));
    sbx__wire_buf_free(&a.b);
    for (size_t i = 0; i < n_fds; i++)
        close(fds[i]);
}

static int open_root(const char *path, int *fd)
{
    if (!path || path[0] != '/')
        return ed_error_set(ED_EINVAL, "sandbox launcher: root '%s' is not absolute", path ? path : "");
    if ((*fd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0)
        return ed_error_set(ED_EIO, "sandbox launcher: root %s: %s", path, strerror(errno));
    return 0;
}

int sbx_launcher_serve(int sock, const sbx_launcher_config *cfg)
{
    launcher *L;
    sbx_wire_req *q;
    unsigned char *buf;
    struct sigaction sa;
    struct rlimit rl;
    int one = 1, err;

    if (!cfg || cfg->n_ro_roots > 8 || cfg->slot_base == 0 || cfg->slot_count == 0 ||
        cfg->slot_base + cfg->slot_count < cfg->slot_base || !cfg->slot_dir ||
        (cfg->server_uid >= cfg->slot_base && cfg->server_uid - cfg->slot_base < cfg->slot_count))
        return ed_error_set(ED_EINVAL, "sandbox launcher: bad configuration");
    L = calloc(1, sizeof(*L));
    q = malloc(sizeof(*q));
    buf = malloc(SBX_WIRE_MAX);
    if (!L || !q || !buf) {
        free(L);
        free(q);
        free(buf);
        return ed_error_set(ED_ENOMEM, "sandbox launcher");
    }
    L->cfg = cfg;
    L->sock = sock;
    L->data_fd = -1;
    L->store_fd = -1;
    for (size_t i = 0; i < 8; i++)
        L->ro_fd[i] = -1;
    if ((err = open_root(cfg->data_dir, &L->data_fd)) < 0)
        goto out;
    open_store(L);
    for (size_t i = 0; i < cfg->n_ro_roots; i++)
        if ((err = open_root(cfg->ro_roots[i], &L->ro_fd[i])) < 0)
            goto out;
    if (setsockopt(sock, SOL_SOCKET, SO_PASSCRED, &one, sizeof(one)) < 0) {
        err = ed_error_set(ED_EIO, "sandbox launcher: SO_PASSCRED: %s", strerror(errno));
        goto out;
    }
    /* Room above 1023 for moving passed descriptors out of the way. */
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < 4096 && rl.rlim_max > rl.rlim_cur) {
        rl.rlim_cur = rl.rlim_max < 65536 ? rl.rlim_max : 65536;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
    /* The terminal's ^C and systemd's SIGTERM are for the server, which
     * stops its jobs through us and then closes the socket. */
    signal(SIGINT, SIG_IGN);
    signal(SIGTERM, SIG_IGN);
    signal(SIGHUP, SIG_IGN);
    signal(SIGPIPE, SIG_IGN);
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_parent_death;    /* no SA_RESTART: poll() returns */
    sigaction(SIGUSR1, &sa, NULL);
    if (cfg->server_pid) {
        prctl(PR_SET_PDEATHSIG, SIGUSR1);
        if (getppid() != cfg->server_pid)
            parent_died = 1;
    }
    prctl(PR_SET_DUMPABLE, 0);
    prctl(PR_SET_NAME, "eddy-launcher");

    while (!parent_died) {
        struct pollfd p = {sock, POLLIN, 0};
        int rc = poll(&p, 1, 500);
        /* The wall-time backstop and a job's trees going back both need a
         * look at every running job now and then, asked or not. */
        for (size_t i = 0; i < MAX_JOBS; i++) {
            ljob *j = &L->jobs[i];
            if (j->handle && !j->done && sbx_job_wait(j->job, 0, &j->usage) == 0)
                job_ended(L, j);
        }
        if (rc < 0 && errno != EINTR) {
            err = ed_error_set(ED_EIO, "sandbox launcher: poll: %s", strerror(errno));
            break;
        }
        if (rc <= 0)
            continue;
        if (p.revents & (POLLIN | POLLHUP | POLLERR)) {
            int fds[SBX_WIRE_FDS];
            size_t len = 0, n_fds = 0;
            pid_t pid;
            uid_t uid;
            rc = sbx__wire_recv(sock, buf, SBX_WIRE_MAX, &len, fds, &n_fds, &pid, &uid);
            if (rc == 0 || (rc < 0 && rc != -EMSGSIZE && rc != -EINTR))
                break;      /* the server is gone */
            if (rc == -EMSGSIZE) {
                len = 0;    /* answered as malformed */
                n_fds = 0;
            }
            if (rc != -EINTR)
                serve_one(L, q, buf, len, fds, n_fds, pid, uid);
        }
    }
    err = 0;
out:
    for (size_t i = 0; i < MAX_JOBS; i++)
        if (L->jobs[i].handle) {
            sbx_job_free(L->jobs[i].job);      /* kills what still runs */
            job_ended(L, &L->jobs[i]);
        }
    for (size_t i = 0; i < MAX_SLOTS; i++)
        if (L->slots[i].handle) {
            trees_back(L, &L->slots[i]);
            sbx_slot_free(L->slots[i].slot);
        }
    /* the server is gone (or let us go): its trees' mounts go too */
    if (L->probed && L->disk.mech != SBX_DISK_NONE && L->disk.mech != SBX_DISK_PRJQUOTA &&
        disk_detach(L) < 0)
        fprintf(stderr, "eddy-launcher: %s\n", ed_error_last());
    if (L->data_fd >= 0)
        close(L->data_fd);
    if (L->store_fd >= 0)
        close(L->store_fd);
    for (size_t i = 0; i < 8; i++)
        if (L->ro_fd[i] >= 0)
            close(L->ro_fd[i]);
    free(L);
    free(q);
    free(buf);
    return err;
}
