/* The workspace quota: each project's working tree <root>/<id> is one
 * disk-quota tree (sandbox/sbx_disk.c) with project id
 * SBX_DISK_PROJID_PROJECTS + its workspaces.disk_id, limited to the owner's
 * tier's workspace_bytes. README.md "Workspace quota".
 *
 * States of a project's workspace (the `workspaces` row is the truth):
 *   no row                 made before migration 0012: a plain directory
 *   row, limit_bytes 0     a plain directory (its tier had no limit, or the
 *                          host no mechanism)
 *   row, limit_bytes > 0   a tree: under the loop mechanisms <root>/<id> is a
 *                          mount, an empty directory until attached
 *   .conv-<id> exists      a conversion of the plain directory into a tree:
 *                          .conv-<id> is the original; the copy in the tree
 *                          counts once limit_bytes > 0 (the commit point)
 *   row, no project        what a crashed create or delete left: swept
 */
#include "proj_int.h"
#include "proj_ws.h"

#include "acct.h"
#include "ed_error.h"
#include "ed_fs.h"
#include "ed_log.h"
#include "ed_time.h"
#include "quota.h"
#include "sbx.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#define DISK_ID_MAX ((int64_t)(SBX_DISK_PROJID_JOBS - SBX_DISK_PROJID_PROJECTS) - 1)

struct proj_ws {
    const sbx_disk *disk;        /* borrowed; NULL: no quotas */
    char            absdir[PATH_MAX - 64];   /* the root, canonical (the launcher wants DATA/projects/<id>) */
    pthread_mutex_t lock;        /* the attached set */
    pthread_mutex_t attach_lock; /* one attach (mount, conversion) at a time */
    char          (*attached)[PROJ_ID_LEN + 1];   /* sorted */
    size_t          n, cap;
};

void proj__ws_free(struct proj_ws *ws)
{
    if (ws == NULL)
        return;
    pthread_mutex_destroy(&ws->lock);
    pthread_mutex_destroy(&ws->attach_lock);
    free(ws->attached);
    free(ws);
}

static bool quotas_on(proj_root *r) { return r->ws && r->ws->disk; }

static bool mech_ok(proj_root *r) { return quotas_on(r) && r->ws->disk->mech != SBX_DISK_NONE; }

const char *proj_workspace_mechanism(proj_root *r)
{
    return quotas_on(r) ? sbx_disk_mech_name(r->ws->disk->mech) : "off";
}

/* ---- the set of projects attached by this process ---------------------------- */

static size_t find_pos(struct proj_ws *ws, const char *id, bool *found)
{
    size_t lo = 0, hi = ws->n;

    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        int c = strcmp(ws->attached[mid], id);
        if (c == 0) {
            *found = true;
            return mid;
        }
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    *found = false;
    return lo;
}

static bool is_attached(struct proj_ws *ws, const char *id)
{
    bool found;

    pthread_mutex_lock(&ws->lock);
    find_pos(ws, id, &found);
    pthread_mutex_unlock(&ws->lock);
    return found;
}

static void set_attached(struct proj_ws *ws, const char *id, bool on)
{
    bool found;
    size_t pos;

    pthread_mutex_lock(&ws->lock);
    pos = find_pos(ws, id, &found);
    if (on && !found) {
        if (ws->n == ws->cap) {
            size_t cap = ws->cap ? ws->cap * 2 : 64;
            void *p = realloc(ws->attached, cap * sizeof(*ws->attached));
            if (p == NULL)
                goto out;   /* not remembered: attached again next time (idempotent) */
            ws->attached = p;
            ws->cap = cap;
        }
        memmove(ws->attached + pos + 1, ws->attached + pos, (ws->n - pos) * sizeof(*ws->attached));
        snprintf(ws->attached[pos], sizeof(ws->attached[pos]), "%s", id);
        ws->n++;
    } else if (!on && found) {
        memmove(ws->attached + pos, ws->attached + pos + 1, (ws->n - pos - 1) * sizeof(*ws->attached));
        ws->n--;
    }
out:
    pthread_mutex_unlock(&ws->lock);
}

/* ---- store ---------------------------------------------------------------------- */

typedef struct ws_row {
    bool    have_project;
    bool    have_row;
    int64_t owner;
    int64_t disk_id;
    int64_t limit_bytes;   /* the tree's */
    int64_t tier_limit;    /* the owner's tier's workspace_bytes */
} ws_row;

static int load_ws(ws_row *w, proj_root *r, const char *id)
{
    sqlite3_stmt *s = NULL;
    int err, rc;

    memset(w, 0, sizeof(*w));
    if ((err = ed_store_prepare(&s, r->store,
                                "SELECT p.owner_id, w.disk_id, IFNULL(w.limit_bytes, 0)"
                                " FROM projects p LEFT JOIN workspaces w ON w.project_id = p.id WHERE p.id = ?1")) < 0)
        return err;
    sqlite3_bind_text(s, 1, id, -1, SQLITE_STATIC);
    if ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        w->have_project = true;
        w->owner = sqlite3_column_int64(s, 0);
        w->have_row = sqlite3_column_type(s, 1) != SQLITE_NULL;
        w->disk_id = sqlite3_column_int64(s, 1);
        w->limit_bytes = sqlite3_column_int64(s, 2);
        err = 0;
    } else if (rc == SQLITE_DONE) {
        err = 0;
    } else {
        err = ed_store_error(sqlite3_db_handle(s), rc, "load workspace");
    }
    sqlite3_finalize(s);
    if (err == 0 && w->have_project)
        err = proj_workspace_limit(&w->tier_limit, r, w->owner);
    return err;
}

/* The tiers are quota/'s and a user's tier is accounts/'s: read through them. */
int proj_workspace_limit(int64_t *out, proj_root *r, int64_t user_id)
{
    acct_user u;
    quota_tier t;
    int err;

    *out = 0;
    if ((err = acct_user_get(&u, r->store, user_id)) == ED_ENOTFOUND ||
        (err == 0 && (err = quota_tier_get(&t, r->store, u.tier)) == ED_ENOTFOUND))
        return 0;
    if (err < 0)
        return err;
    *out = t.workspace_bytes;
    return 0;
}

int proj_workspace_tier_get(int64_t *out, proj_root *r, const char *tier)
{
    quota_tier t;
    int err;

    *out = 0;
    if ((err = quota_tier_get(&t, r->store, tier ? tier : "")) == ED_ENOTFOUND)
        return ed_error_set(ED_ENOTFOUND, "tier '%s' not found", tier ? tier : "");
    if (err < 0)
        return err;
    *out = t.workspace_bytes;
    return 0;
}

int proj_workspace_tier_set(proj_root *r, const char *tier, int64_t workspace_bytes)
{
    quota_tier_change u = QUOTA_TIER_KEEP;

    if (workspace_bytes < 0)   /* quota_tier_update would read it as "keep" */
        return ed_error_set(ED_EUNPROC, "field 'workspace_bytes' must be 0 (no limit) or 1 MiB..1 PiB");
    u.workspace_bytes = workspace_bytes;
    return quota_tier_update(r->store, tier ? tier : "", &u);
}

static int exec_id(proj_root *r, const char *sql, const char *id, int64_t v, const char *what)
{
    sqlite3_stmt *s = NULL;
    int err, rc;

    if ((err = ed_store_prepare(&s, r->store, sql)) < 0)
        return err;
    sqlite3_bind_text(s, 1, id, -1, SQLITE_STATIC);
    sqlite3_bind_int64(s, 2, v);
    if ((rc = sqlite3_step(s)) != SQLITE_DONE)
        err = ed_store_error(sqlite3_db_handle(s), rc, what);
    sqlite3_finalize(s);
    return err;
}

/* A new workspaces row for `id` (limit 0): *disk_id. */
static int insert_row(int64_t *disk_id, proj_root *r, const char *id)
{
    int err = exec_id(r, "INSERT OR IGNORE INTO workspaces (project_id, limit_bytes, created_at) VALUES (?1, 0, ?2)",
                      id, ed_now_ms(), "add workspace");
    sqlite3_stmt *s = NULL;

    if (err < 0)
        return err;
    if ((err = ed_store_prepare(&s, r->store, "SELECT disk_id FROM workspaces WHERE project_id = ?1")) < 0)
        return err;
    sqlite3_bind_text(s, 1, id, -1, SQLITE_STATIC);
    if ((err = proj__int64_row(disk_id, s, "add workspace")) == 0)
        err = ed_error_set(ED_EINTERNAL, "workspace row of %s vanished", id);
    else if (err > 0 && (*disk_id <= 0 || *disk_id > DISK_ID_MAX))
        err = ed_error_set(ED_EINTERNAL, "workspace disk id %" PRId64 " is out of range", *disk_id);
    return err < 0 ? err : 0;
}

static int set_row_limit(proj_root *r, const char *id, int64_t limit)
{
    return exec_id(r, "UPDATE workspaces SET limit_bytes = ?2 WHERE project_id = ?1", id, limit,
                   "workspace limit");
}

int proj__ws_mark(proj_root *r, const char *id)
{
    return exec_id(r, "INSERT OR IGNORE INTO workspaces (project_id, limit_bytes, created_at) VALUES (?1, 0, ?2)",
                   id, ed_now_ms(), "mark workspace");
}

/* ---- paths ------------------------------------------------------------------------ */

static uint32_t projid_of(int64_t disk_id) { return SBX_DISK_PROJID_PROJECTS + (uint32_t)disk_id; }

static void tree_path(char out[PATH_MAX], proj_root *r, const char *id)
{
    snprintf(out, PATH_MAX, "%s/%s", r->ws->absdir, id);
}

static int tree_init(proj_root *r, const char *id, int64_t disk_id, int64_t limit)
{
    char path[PATH_MAX];
    const char *paths[1] = {path};

    tree_path(path, r, id);
    return sbx_disk_tree_init(r->ws->disk, paths, 1, projid_of(disk_id), limit);
}

static int tree_remove(proj_root *r, const char *id, int64_t disk_id)
{
    char path[PATH_MAX];
    const char *paths[1] = {path};

    tree_path(path, r, id);
    return sbx_disk_tree_remove(r->ws->disk, paths, 1, projid_of(disk_id));
}

static int no_mechanism(int64_t limit)
{
    return ed_error_set(ED_EUNPROC,
                        "the owner's tier limits a project's workspace to %" PRId64 " bytes, but this host has no "
                        "disk quota mechanism (none of prjquota, loop volume, loop images; see `eddy sandbox "
                        "check`), so it cannot be enforced: set the tier's workspace_bytes to 0 to run unlimited",
                        limit);
}

/* ---- copying a plain directory into a tree ------------------------------------------ */

/* Copy the directory `src` into `dst` (both open): directories, regular
 * files (fsync'd) and symbolic links as links; nothing is followed. */
static int copy_tree(int src, int dst, int depth)
{
    int fd = dup(src), err = 0;
    DIR *d = proj__dir_open(fd);
    struct dirent *e;

    if (d == NULL)
        return ed_error_set(ED_EIO, "read directory: %s", strerror(errno));
    rewinddir(d);
    if (depth > ED_FS_PATH_MAX / 2) {
        closedir(d);
        return ed_error_set(ED_EIO, "directory tree too deep");
    }
    while (err == 0 && (e = readdir(d)) != NULL) {
        struct stat sb;
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        if (fstatat(src, e->d_name, &sb, AT_SYMLINK_NOFOLLOW) < 0) {
            err = ed_error_set(ED_EIO, "stat %s: %s", e->d_name, strerror(errno));
            break;
        }
        if (S_ISDIR(sb.st_mode)) {
            int s2, d2;
            if (mkdirat(dst, e->d_name, 0700) < 0 && errno != EEXIST) {
                err = ed_error_set(errno == ENOSPC || errno == EDQUOT ? ED_EQUOTA : ED_EIO, "mkdir %s: %s",
                                   e->d_name, strerror(errno));
                break;
            }
            if ((s2 = openat(src, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0 ||
                (d2 = openat(dst, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0) {
                err = ed_error_set(ED_EIO, "open %s: %s", e->d_name, strerror(errno));
                if (s2 >= 0)
                    close(s2);
                break;
            }
            err = copy_tree(s2, d2, depth + 1);
            if (err == 0 && (fchmod(d2, sb.st_mode & 07777) < 0 || fsync(d2) < 0))
                err = ed_error_set(ED_EIO, "finish %s: %s", e->d_name, strerror(errno));
            close(s2);
            close(d2);
        } else if (S_ISREG(sb.st_mode)) {
            int in = openat(src, e->d_name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC), out;
            char buf[1 << 16];
            ssize_t k;
            if (in < 0) {
                err = ed_error_set(ED_EIO, "open %s: %s", e->d_name, strerror(errno));
                break;
            }
            out = openat(dst, e->d_name, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, sb.st_mode & 0777);
            if (out < 0) {
                err = ed_error_set(errno == ENOSPC || errno == EDQUOT ? ED_EQUOTA : ED_EIO, "create %s: %s",
                                   e->d_name, strerror(errno));
                close(in);
                break;
            }
            while (err == 0 && (k = read(in, buf, sizeof(buf))) != 0) {
                if (k < 0) {
                    if (errno == EINTR)
                        continue;
                    err = ed_error_set(ED_EIO, "read %s: %s", e->d_name, strerror(errno));
                    break;
                }
                for (ssize_t off = 0; off < k;) {
                    ssize_t w = write(out, buf + off, (size_t)(k - off));
                    if (w < 0 && errno == EINTR)
                        continue;
                    if (w < 0) {
                        err = ed_error_set(errno == ENOSPC || errno == EDQUOT ? ED_EQUOTA : ED_EIO, "write %s: %s",
                                           e->d_name, strerror(errno));
                        break;
                    }
                    off += w;
                }
            }
            if (err == 0 && fsync(out) < 0)
                err = ed_error_set(errno == ENOSPC || errno == EDQUOT ? ED_EQUOTA : ED_EIO, "fsync %s: %s",
                                   e->d_name, strerror(errno));
            if (err == 0) {
                struct timespec ts[2] = {sb.st_atim, sb.st_mtim};
                futimens(out, ts);
            }
            close(in);
            close(out);
        } else if (S_ISLNK(sb.st_mode)) {
            char target[PATH_MAX];
            ssize_t n = readlinkat(src, e->d_name, target, sizeof(target) - 1);
            if (n >= 0) {
                target[n] = '\0';
                if (symlinkat(target, dst, e->d_name) < 0 && errno != EEXIST)
                    err = ed_error_set(errno == ENOSPC || errno == EDQUOT ? ED_EQUOTA : ED_EIO, "link %s: %s",
                                       e->d_name, strerror(errno));
            }
        } /* fifos, sockets, devices: not project files */
    }
    closedir(d);
    return err;
}

/* Empty the directory `name` under `at` (what a crashed copy left). */
static void empty_at(int at, const char *name)
{
    int fd = openat(at, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    DIR *d = proj__dir_open(fd);
    struct dirent *e;

    if (d == NULL)
        return;
    while ((e = readdir(d)) != NULL)
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
            proj__rm_rf(dirfd(d), e->d_name);
    closedir(d);
}

/* Put a conversion's original back (no tree, or a tier without a limit now). */
static int unconvert(proj_root *r, const char *id, int64_t disk_id)
{
    char conv[32];

    snprintf(conv, sizeof(conv), ".conv-%s", id);
    if (mech_ok(r) && tree_remove(r, id, disk_id) < 0)
        ed_log_warn("projects.workspace", "project %s: %s", id, ed_error_last());
    proj__rm_rf(r->dirfd, id);
    if (renameat(r->dirfd, conv, r->dirfd, id) < 0)
        return ed_error_set(ED_EIO, "project %s: cannot move %s back: %s", id, conv, strerror(errno));
    fsync(r->dirfd);
    return 0;
}

/* Convert the plain directory of `id` into a tree of `limit` bytes: move
 * it to .conv-<id>, make the tree at <id>, copy, fsync, record the limit
 * (the commit point), remove .conv-<id>. Resumes what a crash interrupted;
 * a project that does not fit stays a plain directory (logged). */
static int convert(proj_root *r, const char *id, int64_t disk_id, int64_t limit)
{
    char conv[32];
    struct stat sb;
    int src = -1, dst = -1, err;

    snprintf(conv, sizeof(conv), ".conv-%s", id);
    if (r->ws->disk->mech == SBX_DISK_PRJQUOTA && fstatat(r->dirfd, conv, &sb, AT_SYMLINK_NOFOLLOW) < 0) {
        /* project ids on the directory as it is: what is in it counts, nothing moves */
        if ((err = tree_init(r, id, disk_id, limit)) < 0 || (err = set_row_limit(r, id, limit)) < 0)
            return err;
        ed_log_info("projects.workspace", "project %s: a workspace tree of %" PRId64 " bytes", id, limit);
        return 0;
    }
    if (fstatat(r->dirfd, conv, &sb, AT_SYMLINK_NOFOLLOW) < 0) {
        if (errno != ENOENT)
            return ed_error_set(ED_EIO, "stat %s: %s", conv, strerror(errno));
        if (renameat(r->dirfd, id, r->dirfd, conv) < 0 && errno != ENOENT)
            return ed_error_set(ED_EIO, "move %s aside: %s", id, strerror(errno));
        ed_log_info("projects.workspace", "project %s: moving its files into a workspace tree of %" PRId64 " bytes",
                    id, limit);
    } else {
        ed_log_info("projects.workspace", "project %s: resuming an interrupted move into a workspace tree", id);
    }
    if (mkdirat(r->dirfd, id, 0750) < 0 && errno != EEXIST)
        return ed_error_set(ED_EIO, "mkdir %s: %s", id, strerror(errno));
    if ((err = tree_init(r, id, disk_id, limit)) < 0)
        goto undo;
    empty_at(r->dirfd, id);   /* a crashed copy's leftovers */
    if ((src = openat(r->dirfd, conv, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0 ||
        (dst = openat(r->dirfd, id, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0) {
        err = ed_error_set(ED_EIO, "open %s: %s", src < 0 ? conv : id, strerror(errno));
        goto undo;
    }
    if ((err = copy_tree(src, dst, 0)) < 0)
        goto undo;
    if (fsync(dst) < 0) {
        err = ed_error_set(ED_EIO, "fsync %s: %s", id, strerror(errno));
        goto undo;
    }
    if ((err = set_row_limit(r, id, limit)) < 0)
        goto undo;
    close(src);
    close(dst);
    if (proj__rm_rf(r->dirfd, conv) < 0)
        ed_log_warn("projects.workspace", "%s: %s (removed at its next attach)", conv, ed_error_last());
    fsync(r->dirfd);
    return 0;
undo: {
        char msg[512];
        snprintf(msg, sizeof(msg), "%s", ed_error_last());
        if (src >= 0)
            close(src);
        if (dst >= 0)
            close(dst);
        if (unconvert(r, id, disk_id) < 0) {
            ed_log_error("projects.workspace", "%s", ed_error_last());
            return ED_EIO;
        }
        ed_log_warn("projects.workspace",
                    "project %s stays a plain directory without a workspace limit: %s", id, msg);
        return 0;
    }
}

/* ---- attach ------------------------------------------------------------------------ */

static int attach_locked(proj_root *r, const char *id, bool fail_closed)
{
    ws_row w;
    char conv[32];
    struct stat sb;
    bool converting;
    int err;

    if ((err = load_ws(&w, r, id)) < 0)
        return err;
    if (!w.have_project)
        return 1;   /* not (or no longer) a project: nothing to remember */
    if (!w.have_row && (err = insert_row(&w.disk_id, r, id)) < 0)
        return err;
    snprintf(conv, sizeof(conv), ".conv-%s", id);
    converting = fstatat(r->dirfd, conv, &sb, AT_SYMLINK_NOFOLLOW) == 0;
    if (w.limit_bytes > 0) {
        /* a tree */
        int64_t limit = w.tier_limit > 0 ? w.tier_limit : w.limit_bytes;
        if (!mech_ok(r))
            return ed_error_set(ED_EUNPROC,
                                "project %s's workspace is a disk-quota tree, but this host has no disk quota "
                                "mechanism now (%s)", id, r->ws->disk->detail);
        if ((err = tree_init(r, id, w.disk_id, limit)) < 0)
            return err;
        if (converting && proj__rm_rf(r->dirfd, conv) < 0)   /* a finished conversion */
            ed_log_warn("projects.workspace", "%s: %s", conv, ed_error_last());
        /* tree_init set the limit again (loop images: the reserved blocks,
         * the image grown where needed; sandbox/sbx_disk.c) */
        if (limit != w.limit_bytes && (err = set_row_limit(r, id, limit)) < 0)
            return err;
        return 0;
    }
    /* a plain directory */
    if (w.tier_limit <= 0 && !converting)
        return 0;
    if (converting && (!mech_ok(r) || w.tier_limit <= 0) && (err = unconvert(r, id, w.disk_id)) < 0)
        return err;   /* a conversion that cannot or need not finish now: the original back */
    if (w.tier_limit <= 0)
        return 0;
    if (!mech_ok(r)) {
        if (w.tier_limit > 0) {
            if (fail_closed)
                return no_mechanism(w.tier_limit);
            ed_log_warn("projects.workspace", "project %s has no workspace limit: %s", id,
                        r->ws->disk->detail);
        }
        return 0;
    }
    return convert(r, id, w.disk_id, w.tier_limit);
}

int proj__ws_attach(proj_root *r, const char *id)
{
    int err;

    if (!quotas_on(r) || is_attached(r->ws, id))
        return 0;
    pthread_mutex_lock(&r->ws->attach_lock);
    if (is_attached(r->ws, id)) {
        pthread_mutex_unlock(&r->ws->attach_lock);
        return 0;
    }
    err = attach_locked(r, id, false);
    if (err == 0)
        set_attached(r->ws, id, true);
    pthread_mutex_unlock(&r->ws->attach_lock);
    return err < 0 ? err : 0;
}

int proj_workspace_attach(proj_root *r, int64_t user_id, const char *id)
{
    proj *p = NULL;
    int err;

    proj__lock(r, id);
    if ((err = proj__load(&p, r, user_id, id, PROJ__READ)) == 0 && quotas_on(r)) {
        pthread_mutex_lock(&r->ws->attach_lock);
        set_attached(r->ws, id, false);
        if ((err = attach_locked(r, id, true)) == 0)
            set_attached(r->ws, id, true);
        pthread_mutex_unlock(&r->ws->attach_lock);
        if (err > 0)
            err = 0;
    }
    proj__unlock(r, id);
    proj_free(p);
    return err;
}

/* ---- create and delete --------------------------------------------------------------- */

int proj__ws_prepare(proj_root *r, int64_t owner, const char *id, int64_t *disk_id)
{
    int64_t limit = 0;
    int err;

    *disk_id = 0;
    if (quotas_on(r) && (err = proj_workspace_limit(&limit, r, owner)) < 0)
        return err;
    if (limit > 0 && !mech_ok(r))
        return no_mechanism(limit);
    if ((err = insert_row(disk_id, r, id)) < 0)
        return err;
    if (mkdirat(r->dirfd, id, 0750) < 0) {
        err = ed_error_set(ED_EIO, "mkdir %s: %s", id, strerror(errno));
        exec_id(r, "DELETE FROM workspaces WHERE project_id = ?1 AND ?2 = ?2", id, 0, "drop workspace");
        return err;
    }
    if (limit > 0) {
        if ((err = tree_init(r, id, *disk_id, limit)) < 0 || (err = set_row_limit(r, id, limit)) < 0) {
            char msg[512];
            snprintf(msg, sizeof(msg), "%s", ed_error_last());
            proj__ws_remove(r, id);
            return ed_error_set(err, "%s", msg);
        }
    }
    if (quotas_on(r))
        set_attached(r->ws, id, true);   /* made with the current limit (proj__ws_remove forgets it) */
    return 0;
}

void proj__ws_remove(proj_root *r, const char *id)
{
    sqlite3_stmt *s = NULL;
    int64_t disk_id = 0, limit = 0;
    char conv[32];
    bool have = false, keep = false;

    if (ed_store_prepare(&s, r->store, "SELECT disk_id, limit_bytes FROM workspaces WHERE project_id = ?1") == 0) {
        sqlite3_bind_text(s, 1, id, -1, SQLITE_STATIC);
        if (sqlite3_step(s) == SQLITE_ROW) {
            have = true;
            disk_id = sqlite3_column_int64(s, 0);
            limit = sqlite3_column_int64(s, 1);
        }
        sqlite3_finalize(s);
    }
    if (r->ws)
        set_attached(r->ws, id, false);
    snprintf(conv, sizeof(conv), ".conv-%s", id);
    if (have && mech_ok(r)) {
        /* even a plain row may have an image (a conversion that a crash cut) */
        if (tree_remove(r, id, disk_id) < 0) {
            ed_log_warn("projects.workspace", "project %s: %s (retried at the next start)", id, ed_error_last());
            keep = true;
        }
    } else if (have && limit > 0) {
        ed_log_warn("projects.workspace", "project %s: its tree stays until a disk quota mechanism is back", id);
        keep = true;
    }
    if (proj__rm_rf(r->dirfd, id) < 0 || proj__rm_rf(r->dirfd, conv) < 0) {
        ed_log_warn("projects.workspace", "project %s: %s (retried at the next start)", id, ed_error_last());
        keep = true;
    }
    if (have && !keep)
        exec_id(r, "DELETE FROM workspaces WHERE project_id = ?1 AND ?2 = ?2", id, 0, "drop workspace");
}

/* ---- start --------------------------------------------------------------------------- */

/* The largest workspace_bytes of any tier (quota_tier_each). */
static int most_workspace(const quota_tier *t, void *payload)
{
    int64_t *most = payload;

    if (t->workspace_bytes > *most)
        *most = t->workspace_bytes;
    return 0;
}

int proj_root_set_disk(proj_root *r, const sbx_disk *disk)
{
    sqlite3_stmt *s = NULL;
    char (*ids)[PROJ_ID_LEN + 1] = NULL;
    size_t n = 0, cap = 0;
    int err, rc;

    if (r->ws == NULL) {
        if ((r->ws = calloc(1, sizeof(*r->ws))) == NULL)
            return ed_error_set(ED_ENOMEM, "workspaces");
        pthread_mutex_init(&r->ws->lock, NULL);
        pthread_mutex_init(&r->ws->attach_lock, NULL);
    }
    {
        char abs[PATH_MAX];
        if (realpath(r->dir, abs) == NULL)   /* our own directory, made at open */
            return ed_error_set(ED_EIO, "projects directory %s: %s", r->dir, strerror(errno));
        if (strlen(abs) >= sizeof(r->ws->absdir))
            return ed_error_set(ED_EINVAL, "projects directory %s: path too long", abs);
        memcpy(r->ws->absdir, abs, strlen(abs) + 1);
    }
    r->ws->disk = disk;
    pthread_mutex_lock(&r->ws->lock);
    r->ws->n = 0;
    pthread_mutex_unlock(&r->ws->lock);
    /* what crashed creates and deletes left */
    if ((err = ed_store_prepare(&s, r->store,
                                "SELECT w.project_id FROM workspaces w LEFT JOIN projects p ON p.id = w.project_id"
                                " WHERE p.id IS NULL")) < 0)
        return err;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        const char *id = (const char *)sqlite3_column_text(s, 0);
        if (id == NULL || strlen(id) != PROJ_ID_LEN || strchr(id, '/') || id[0] != 'p')
            continue;
        if (n == cap) {
            void *p = realloc(ids, (cap = cap ? cap * 2 : 16) * sizeof(*ids));
            if (p == NULL)
                break;
            ids = p;
        }
        snprintf(ids[n++], PROJ_ID_LEN + 1, "%s", id);
    }
    sqlite3_finalize(s);
    for (size_t i = 0; i < n; i++) {
        ed_log_info("projects.sweep", "removing the workspace of project %s (an interrupted create or delete)",
                    ids[i]);
        proj__ws_remove(r, ids[i]);
    }
    free(ids);
    if (disk) {
        int64_t most = 0;
        quota_tier_each(r->store, most_workspace, &most);   /* only for the message */
        if (disk->mech == SBX_DISK_NONE && most > 0)
            ed_log_error("projects.workspace", "workspace quotas: no mechanism, so projects of tiers with a "
                         "workspace_bytes limit cannot be created and their kernels will not start (set "
                         "workspace_bytes 0 to run them unlimited): %s", disk->detail);
        else
            ed_log_info("projects.workspace", "workspace quotas: %s (trees attached at first use)",
                        sbx_disk_mech_name(disk->mech));
    }
    return 0;
}

/* ---- tier changes ---------------------------------------------------------------------- */

/* 1 when project `id` is `user_id`'s (> 0) or its owner is on `tier` (not
 * NULL), else 0 (also when the project or its owner is gone). The owner's
 * tier is accounts/'s. */
static int sync_wanted(proj_root *r, const char *id, int64_t user_id, const char *tier)
{
    sqlite3_stmt *s = NULL;
    int64_t owner;
    acct_user u;
    int err;

    if ((err = ed_store_prepare(&s, r->store, "SELECT owner_id FROM projects WHERE id = ?1")) < 0)
        return err;
    sqlite3_bind_text(s, 1, id, -1, SQLITE_STATIC);
    if ((err = proj__int64_row(&owner, s, "workspace sync")) <= 0)
        return err;
    if ((err = acct_user_get(&u, r->store, owner)) == ED_ENOTFOUND)
        return 0;
    if (err < 0)
        return err;
    return (user_id > 0 && owner == user_id) || (tier && strcmp(u.tier, tier) == 0);
}

int proj_workspace_sync(proj_root *r, int64_t user_id, const char *tier)
{
    char (*ids)[PROJ_ID_LEN + 1] = NULL;
    size_t n = 0, k = 0;
    int err, done = 0;

    if (!quotas_on(r))
        return 0;
    /* a tree not attached by this process gets the tier's limit when it is
     * (attach reads it): only those in use need it now */
    pthread_mutex_lock(&r->ws->lock);
    if ((n = r->ws->n) > 0 && (ids = malloc(n * sizeof(*ids))) != NULL)
        memcpy(ids, r->ws->attached, n * sizeof(*ids));
    pthread_mutex_unlock(&r->ws->lock);
    if (n > 0 && ids == NULL)
        return ed_error_set(ED_ENOMEM, "workspace sync");
    for (size_t i = 0; i < n; i++) {
        if ((err = sync_wanted(r, ids[i], user_id, tier)) < 0) {
            free(ids);
            return err;
        }
        if (err)
            memmove(ids[k++], ids[i], sizeof(ids[i]));
    }
    n = k;
    for (size_t i = 0; i < n; i++) {
        if (!is_attached(r->ws, ids[i]))   /* detached meanwhile */
            continue;
        proj__lock(r, ids[i]);
        pthread_mutex_lock(&r->ws->attach_lock);
        set_attached(r->ws, ids[i], false);
        if ((err = attach_locked(r, ids[i], false)) < 0)
            ed_log_warn("projects.workspace", "project %s: %s", ids[i], ed_error_last());
        else if (err == 0) {
            set_attached(r->ws, ids[i], true);
            done++;
        }
        pthread_mutex_unlock(&r->ws->attach_lock);
        proj__unlock(r, ids[i]);
    }
    free(ids);
    return done;
}

/* ---- usage ------------------------------------------------------------------------------ */

void proj_ws_usage_free(proj_ws_usage *u)
{
    if (u == NULL)
        return;
    free(u->items);
    free(u);
}

int proj_workspace_usage(proj_ws_usage **out, proj_root *r, int64_t user_id)
{
    sqlite3_stmt *s = NULL;
    proj_ws_usage *u;
    size_t cap = 0;
    int err, rc;

    *out = NULL;
    if ((u = calloc(1, sizeof(*u))) == NULL)
        return ed_error_set(ED_ENOMEM, "workspace usage");
    if ((err = proj_workspace_limit(&u->limit_bytes, r, user_id)) < 0 ||
        (err = ed_store_prepare(&s, r->store,
                                "SELECT p.id, p.size_bytes, IFNULL(w.disk_id, 0), IFNULL(w.limit_bytes, 0)"
                                " FROM projects p LEFT JOIN workspaces w ON w.project_id = p.id"
                                " WHERE p.owner_id = ?1 ORDER BY p.created_at DESC, p.id DESC")) < 0) {
        proj_ws_usage_free(u);
        return err;
    }
    sqlite3_bind_int64(s, 1, user_id);
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        const char *id = (const char *)sqlite3_column_text(s, 0);
        int64_t used = sqlite3_column_int64(s, 1), disk_id = sqlite3_column_int64(s, 2);
        int64_t limit = sqlite3_column_int64(s, 3);
        if (id == NULL || strlen(id) != PROJ_ID_LEN)
            continue;
        if (u->count == cap) {
            void *p = realloc(u->items, (cap = cap ? cap * 2 : 8) * sizeof(*u->items));
            if (p == NULL) {
                sqlite3_finalize(s);
                proj_ws_usage_free(u);
                return ed_error_set(ED_ENOMEM, "workspace usage");
            }
            u->items = p;
        }
        if (limit > 0 && mech_ok(r) && is_attached(r->ws, id)) {
            char path[PATH_MAX];
            int64_t bytes, inodes;
            tree_path(path, r, id);
            if (sbx_disk_tree_usage(r->ws->disk, path, projid_of(disk_id), &bytes, &inodes) == 0)
                used = bytes;
        }
        snprintf(u->items[u->count].id, sizeof(u->items[u->count].id), "%s", id);
        u->items[u->count].used_bytes = used;
        u->used_bytes += used;
        u->count++;
    }
    sqlite3_finalize(s);
    if (rc != SQLITE_DONE) {
        err = ed_store_error(ed_store_db(r->store), rc, "workspace usage");
        proj_ws_usage_free(u);
        return err;
    }
    *out = u;
    return 0;
}
