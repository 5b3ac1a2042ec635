/* The projects root: directory, libgit2 set-up, striped locks, and the
 * filesystem and store helpers the other files share. */
#include "proj_int.h"
#include "proj_ws.h"

#include "acct.h"
#include "ed_error.h"
#include "ed_fs.h"
#include "ed_log.h"
#include "ed_time.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static pthread_once_t git_once = PTHREAD_ONCE_INIT;
static int git_init_result;

/* libgit2 keeps process-wide state: initialise it exactly once and never shut
 * it down (other roots or modules may still use it). Its global and system
 * configuration is ignored so the server user's ~/.gitconfig cannot change
 * how projects are stored. */
static void git_init_once(void)
{
    if (git_libgit2_init() < 0) {
        git_init_result = -1;
        return;
    }
    git_libgit2_opts(GIT_OPT_SET_SEARCH_PATH, GIT_CONFIG_LEVEL_GLOBAL, "");
    git_libgit2_opts(GIT_OPT_SET_SEARCH_PATH, GIT_CONFIG_LEVEL_XDG, "");
    git_libgit2_opts(GIT_OPT_SET_SEARCH_PATH, GIT_CONFIG_LEVEL_SYSTEM, "");
    git_libgit2_opts(GIT_OPT_SET_SEARCH_PATH, GIT_CONFIG_LEVEL_PROGRAMDATA, "");
    git_libgit2_opts(GIT_OPT_ENABLE_FSYNC_GITDIR, 1);
    git_libgit2_opts(GIT_OPT_ENABLE_STRICT_OBJECT_CREATION, 1);
}

int proj__git_error(const char *what)
{
    const git_error *e = git_error_last();

    /* a full workspace tree (its quota): libgit2 passes strerror on */
    if (e && e->message && (strstr(e->message, strerror(ENOSPC)) || strstr(e->message, strerror(EDQUOT))))
        return ed_error_set(ED_EQUOTA, "%s: the project's workspace is full (delete files to make room): %s", what,
                            e->message);
    return ed_error_set(ED_EIO, "%s: %s", what, e && e->message ? e->message : "libgit2 failed");
}

static int mkdir_p(const char *dir)
{
    char buf[4096];
    size_t n = strlen(dir);

    if (n == 0 || n >= sizeof(buf))
        return ed_error_set(ED_EINVAL, "projects directory path of %zu bytes", n);
    memcpy(buf, dir, n + 1);
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(buf, 0755) < 0 && errno != EEXIST)
            return ed_error_set(ED_EIO, "mkdir %s: %s", buf, strerror(errno));
        *p = '/';
    }
    if (mkdir(buf, 0750) < 0 && errno != EEXIST)
        return ed_error_set(ED_EIO, "mkdir %s: %s", buf, strerror(errno));
    return 0;
}

DIR *proj__dir_open(int fd)
{
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;

    if (d == NULL && fd >= 0) {
        int e = errno;
        close(fd);
        errno = e;
    }
    return d;
}

/* Remove what an interrupted create (.tmp-*) or delete (.trash-*) left. */
static void sweep_leftovers(proj_root *r)
{
    int fd = dup(r->dirfd);
    DIR *d = proj__dir_open(fd);
    struct dirent *e;

    if (d == NULL)
        return;
    while ((e = readdir(d)) != NULL) {
        if (strncmp(e->d_name, ".tmp-", 5) == 0 || strncmp(e->d_name, ".trash-", 7) == 0) {
            ed_log_info("projects.sweep", "removing leftover %s", e->d_name);
            proj__rm_rf(r->dirfd, e->d_name);
        }
    }
    closedir(d);
}

int proj_root_open(proj_root **out, ed_store *st, const char *dir, int64_t user_storage_bytes)
{
    proj_root *r = NULL;
    int err;

    *out = NULL;
    if (st == NULL || dir == NULL || dir[0] == '\0')
        return ed_error_set(ED_EINVAL, "projects root needs a store and a directory");
    pthread_once(&git_once, git_init_once);
    if (git_init_result < 0)
        return proj__git_error("initialise libgit2");
    if ((err = mkdir_p(dir)) < 0)
        return err;
    if ((r = calloc(1, sizeof(*r))) == NULL || (r->dir = strdup(dir)) == NULL) {
        free(r);
        return ed_error_set(ED_ENOMEM, "projects root");
    }
    r->store = st;
    r->user_limit = user_storage_bytes;
    if ((r->dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
        err = ed_error_set(ED_EIO, "open %s: %s", dir, strerror(errno));
        free(r->dir);
        free(r);
        return err;
    }
    for (int i = 0; i < PROJ_LOCK_STRIPES; i++)
        pthread_mutex_init(&r->proj_locks[i], NULL);
    for (int i = 0; i < PROJ_USER_STRIPES; i++)
        pthread_mutex_init(&r->user_locks[i], NULL);
    sweep_leftovers(r);
    *out = r;
    return 0;
}

void proj_root_free(proj_root *r)
{
    if (r == NULL)
        return;
    for (int i = 0; i < PROJ_LOCK_STRIPES; i++)
        pthread_mutex_destroy(&r->proj_locks[i]);
    for (int i = 0; i < PROJ_USER_STRIPES; i++)
        pthread_mutex_destroy(&r->user_locks[i]);
    proj__ws_free(r->ws);
    close(r->dirfd);
    free(r->dir);
    free(r);
}

/* FNV-1a over the id: stripes spread evenly for random ids. */
static unsigned stripe_of(const char *id)
{
    uint32_t h = 2166136261u;

    for (const unsigned char *p = (const unsigned char *)id; *p; p++)
        h = (h ^ *p) * 16777619u;
    return h % PROJ_LOCK_STRIPES;
}

void proj__lock(proj_root *r, const char *id) { pthread_mutex_lock(&r->proj_locks[stripe_of(id)]); }
void proj__unlock(proj_root *r, const char *id) { pthread_mutex_unlock(&r->proj_locks[stripe_of(id)]); }

void proj__user_lock(proj_root *r, int64_t user_id)
{
    pthread_mutex_lock(&r->user_locks[(uint64_t)user_id % PROJ_USER_STRIPES]);
}

void proj__user_unlock(proj_root *r, int64_t user_id)
{
    pthread_mutex_unlock(&r->user_locks[(uint64_t)user_id % PROJ_USER_STRIPES]);
}

char *proj__repo_path(proj_root *r, const char *id)
{
    size_t n = strlen(r->dir) + 1 + strlen(id) + 1;
    char *p = malloc(n);

    if (p == NULL) {
        ed_error_set(ED_ENOMEM, "repository path");
        return NULL;
    }
    snprintf(p, n, "%s/%s", r->dir, id);
    return p;
}

int proj__open_dir(int *out_fd, proj_root *r, const char *id)
{
    int fd, err;

    *out_fd = -1;
    /* a workspace tree is attached (mounted again, its limit set) first:
     * under the loop mechanisms the directory is empty until then */
    if ((err = proj__ws_attach(r, id)) < 0)
        return err;
    if ((fd = openat(r->dirfd, id, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0) {
        if (errno == ENOENT)
            return ed_error_set(ED_ENOTFOUND, "project %s has no repository", id);
        return ed_error_set(ED_EIO, "open project %s: %s", id, strerror(errno));
    }
    *out_fd = fd;
    return 0;
}

/* ed_fs_walk callback: add up the apparent size of regular files. With a
 * non-NULL payload->skip, that top-level entry (".git") is left out. */
typedef struct du_sum {
    int64_t     total;
    const char *skip;
} du_sum;

static int du_entry(const char *rel, const struct stat *sb, void *payload)
{
    du_sum *d = payload;

    if (d->skip && strcmp(rel, d->skip) == 0)
        return ED_FS_WALK_SKIP;
    if (S_ISREG(sb->st_mode))
        d->total += sb->st_size;
    return 0;
}

/* Apparent size of regular files below fd (links are not followed). A path
 * is at most ED_FS_PATH_MAX bytes, so no tree is deeper than half that. */
static int64_t du_at(int fd, const char *skip)
{
    du_sum d = {0, skip};

    ed_fs_walk(fd, ED_FS_PATH_MAX / 2, SIZE_MAX, du_entry, &d);
    return d.total;
}

/* A project's size: the working tree plus the object database (its history).
 * Bookkeeping files (index, config, refs) are not counted, so an empty
 * project is 0 bytes. */
int64_t proj__du(int fd)
{
    int64_t total = du_at(fd, ".git");
    int objs;

    if (ed_fs_open_beneath(&objs, fd, ".git/objects", O_RDONLY | O_DIRECTORY, 0) == 0) {
        total += du_at(objs, NULL);
        close(objs);
    }
    return total;
}

int proj__rm_rf(int at, const char *name)
{
    struct stat sb;
    int fd, err = 0;
    DIR *d;
    struct dirent *e;

    if (fstatat(at, name, &sb, AT_SYMLINK_NOFOLLOW) < 0)
        return errno == ENOENT ? 0 : ed_error_set(ED_EIO, "stat %s: %s", name, strerror(errno));
    if (!S_ISDIR(sb.st_mode)) {
        if (unlinkat(at, name, 0) < 0 && errno != ENOENT)
            return ed_error_set(ED_EIO, "unlink %s: %s", name, strerror(errno));
        return 0;
    }
    if ((fd = openat(at, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0)
        return ed_error_set(ED_EIO, "open %s: %s", name, strerror(errno));
    if ((d = proj__dir_open(fd)) == NULL)
        return ed_error_set(ED_EIO, "read %s: %s", name, strerror(errno));
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        if (proj__rm_rf(dirfd(d), e->d_name) < 0)
            err = ED_EIO;
    }
    closedir(d);
    if (unlinkat(at, name, AT_REMOVEDIR) < 0 && errno != ENOENT)
        return ed_error_set(ED_EIO, "rmdir %s: %s", name, strerror(errno));
    return err < 0 ? ed_error_code() : 0;
}

void proj__touch(proj_root *r, const char *id)
{
    sqlite3_stmt *s = NULL;
    int64_t size = 0;
    int fd, rc;

    if (proj__open_dir(&fd, r, id) == 0) {
        size = proj__du(fd);
        close(fd);
    }
    if (ed_store_prepare(&s, r->store,
                         "UPDATE projects SET size_bytes = ?1, updated_at = ?2 WHERE id = ?3") < 0) {
        ed_log_warn("projects.size", "project %s: %s", id, ed_error_last());
        return;
    }
    sqlite3_bind_int64(s, 1, size);
    sqlite3_bind_int64(s, 2, ed_now_ms());
    sqlite3_bind_text(s, 3, id, -1, SQLITE_STATIC);
    if ((rc = sqlite3_step(s)) != SQLITE_DONE) {
        ed_store_error(sqlite3_db_handle(s), rc, "update project size");
        ed_log_warn("projects.size", "project %s: %s", id, ed_error_last());
    }
    sqlite3_finalize(s);
}

int proj__int64_row(int64_t *out, sqlite3_stmt *s, const char *what)
{
    int rc = sqlite3_step(s), err = 0;

    if (rc == SQLITE_ROW) {
        *out = sqlite3_column_int64(s, 0);
        err = 1;
    } else if (rc != SQLITE_DONE) {
        err = ed_store_error(sqlite3_db_handle(s), rc, what);
    }
    sqlite3_finalize(s);
    return err;
}

int proj_usage(int64_t *out_bytes, proj_root *r, int64_t user_id)
{
    sqlite3_stmt *s = NULL;
    int err;

    *out_bytes = 0;
    if ((err = ed_store_prepare(&s, r->store,
                                "SELECT COALESCE(SUM(size_bytes), 0) FROM projects WHERE owner_id = ?1")) < 0)
        return err;
    sqlite3_bind_int64(s, 1, user_id);
    if ((err = proj__int64_row(out_bytes, s, "storage usage")) == 0)   /* an aggregate: never */
        err = ed_error_set(ED_EIO, "storage usage: no row");
    return err < 0 ? err : 0;
}

int proj__quota_check(proj_root *r, int64_t user_id, int64_t freed, int64_t added)
{
    int64_t used;
    int err;

    if (r->user_limit <= 0)
        return 0;
    if ((err = proj_usage(&used, r, user_id)) < 0)
        return err;
    if (used - freed + added > r->user_limit)
        return ed_error_set(ED_EQUOTA,
                            "storage limit of %lld bytes reached: using %lld, this needs %lld more",
                            (long long)r->user_limit, (long long)used,
                            (long long)(added - freed));
    return 0;
}

int proj__username(char **out, proj_root *r, int64_t user_id)
{
    acct_user u;
    int err;

    *out = NULL;
    if ((err = acct_user_get(&u, r->store, user_id)) == ED_ENOTFOUND)
        return ed_error_set(ED_ENOTFOUND, "no user %lld", (long long)user_id);
    if (err < 0)
        return err;
    if ((*out = strdup(u.username)) == NULL)
        return ed_error_set(ED_ENOMEM, "username");
    return 0;
}

int proj__repo_open(git_repository **out, proj_root *r, const char *id)
{
    char *path = proj__repo_path(r, id);
    int rc;

    *out = NULL;
    if (path == NULL)
        return ED_ENOMEM;
    if ((rc = proj__ws_attach(r, id)) < 0) {
        free(path);
        return rc;
    }
    rc = git_repository_open_ext(out, path, GIT_REPOSITORY_OPEN_NO_SEARCH, NULL);
    free(path);
    if (rc == GIT_ENOTFOUND)
        return ed_error_set(ED_ENOTFOUND, "project %s has no repository", id);
    return rc < 0 ? proj__git_error("open repository") : 0;
}

int proj__repo_init(git_repository **out, const char *path)
{
    git_repository_init_options opts;
    git_repository *repo = NULL;
    git_config *cfg = NULL;

    *out = NULL;
    git_repository_init_options_init(&opts, GIT_REPOSITORY_INIT_OPTIONS_VERSION);
    opts.flags = GIT_REPOSITORY_INIT_NO_REINIT | GIT_REPOSITORY_INIT_MKDIR;
    opts.mode = GIT_REPOSITORY_INIT_SHARED_UMASK;
    opts.initial_head = "main";
    if (git_repository_init_ext(&repo, path, &opts) < 0)
        return proj__git_error("init repository");
    /* Links in a working tree could point anywhere: a checkout writes them as
     * plain files. */
    if (git_repository_config(&cfg, repo) < 0 || git_config_set_bool(cfg, "core.symlinks", 0) < 0) {
        int err = proj__git_error("configure repository");
        git_config_free(cfg);
        git_repository_free(repo);
        return err;
    }
    git_config_free(cfg);
    *out = repo;
    return 0;
}

static bool is_hex(const char *s)
{
    for (; *s; s++)
        if (!((*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'f') || (*s >= 'A' && *s <= 'F')))
            return false;
    return true;
}

int proj__commit_lookup(git_commit **out, git_repository *repo, const char *version)
{
    git_oid oid;
    git_object *obj = NULL;
    size_t n = version ? strlen(version) : 0;
    int rc;

    *out = NULL;
    if (n < 4 || n > GIT_OID_HEXSZ || !is_hex(version))
        return ed_error_set(ED_EINVAL, "version id must be 4 to 40 hex characters");
    if (git_oid_fromstrn(&oid, version, n) < 0)
        return ed_error_set(ED_EINVAL, "version id must be 4 to 40 hex characters");
    rc = git_object_lookup_prefix(&obj, repo, &oid, n, GIT_OBJECT_COMMIT);
    if (rc == GIT_ENOTFOUND || rc == GIT_EINVALIDSPEC)
        return ed_error_set(ED_ENOTFOUND, "no version %s", version);
    if (rc == GIT_EAMBIGUOUS)
        return ed_error_set(ED_EINVAL, "version prefix %s is ambiguous", version);
    if (rc < 0)
        return proj__git_error("look up version");
    *out = (git_commit *)obj;
    return 0;
}
