/*
 * gc.c - what storage costs (usage per owner), garbage collection and
 * start-up recovery.
 *
 * A blob is live while a row of dataset_files or dataset_draft_files names
 * it: liveness is a query, never a counter that can drift. ds_gc holds the
 * blob lock exclusive, so no put or upload is between placing a blob file
 * and committing its row: a blob file without a row is then garbage, and a
 * dead row's file can go without racing a writer that just deduplicated
 * against it.
 */
#include "ds_int.h"

#include "ed_error.h"
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

/* ---- usage --------------------------------------------------------------- */

int ds__usage(int64_t *out, ds *d, int64_t owner)
{
    sqlite3_stmt *q = NULL;
    int rc, err;

    *out = 0;
    if ((err = ed_store_prepare(&q, d->st,
                                "SELECT COALESCE(SUM(b.size), 0) FROM dataset_blobs b WHERE b.sha256 IN ("
                                "SELECT f.sha256 FROM dataset_files f JOIN datasets s ON s.id = f.dataset_id "
                                "WHERE s.owner_id = ?1 UNION SELECT f.sha256 FROM dataset_draft_files f "
                                "JOIN datasets s ON s.id = f.dataset_id WHERE s.owner_id = ?1)")) < 0)
        return err;
    sqlite3_bind_int64(q, 1, owner);
    rc = sqlite3_step(q);
    if (rc == SQLITE_ROW)
        *out = sqlite3_column_int64(q, 0);
    else
        err = ed_store_error(ed_store_db(d->st), rc, "dataset usage");
    sqlite3_finalize(q);
    return err;
}

int ds_usage_bytes(int64_t *out, ds *d, int64_t user)
{
    return ds__usage(out, d, user);
}

int ds__quota_check(ds *d, int64_t owner, int64_t add, int64_t quota)
{
    int64_t used;
    int err;

    if (quota <= 0)
        return 0;
    if ((err = ds__usage(&used, d, owner)) < 0)
        return err;
    if (used + add > quota)
        return ed_error_set(ED_EQUOTA, "datasets would hold %lld bytes, over the quota of %lld bytes (%lld used)",
                            (long long)(used + add), (long long)quota, (long long)used);
    return 0;
}

int ds__quota_check_blob(ds *d, int64_t owner, const char *sha, int64_t size, int64_t quota)
{
    sqlite3_stmt *q = NULL;
    int rc, err;

    if (quota <= 0)
        return 0;
    if ((err = ed_store_prepare(&q, d->st,
                                "SELECT 1 FROM dataset_files f JOIN datasets s ON s.id = f.dataset_id "
                                "WHERE s.owner_id = ?1 AND f.sha256 = ?2 UNION ALL SELECT 1 FROM "
                                "dataset_draft_files f JOIN datasets s ON s.id = f.dataset_id "
                                "WHERE s.owner_id = ?1 AND f.sha256 = ?2 LIMIT 1")) < 0)
        return err;
    sqlite3_bind_int64(q, 1, owner);
    sqlite3_bind_text(q, 2, sha, -1, SQLITE_STATIC);
    rc = sqlite3_step(q);
    sqlite3_finalize(q);
    if (rc == SQLITE_ROW)
        return 0;           /* held already: it costs nothing more */
    if (rc != SQLITE_DONE)
        return ed_store_error(ed_store_db(d->st), rc, "dataset usage");
    return ds__quota_check(d, owner, size, quota);
}

/* ---- blob files without rows --------------------------------------------- */

static bool blob_row_exists(sqlite3_stmt *q, const char *sha)
{
    bool yes;

    sqlite3_reset(q);
    sqlite3_bind_text(q, 1, sha, -1, SQLITE_TRANSIENT);
    yes = sqlite3_step(q) == SQLITE_ROW;
    sqlite3_reset(q);
    return yes;
}

/* Remove blob files that no row names. Caller holds blob_lock exclusive. */
static int sweep_orphan_blobs(ds *d, int64_t *count)
{
    sqlite3_stmt *q = NULL;
    DIR *top;
    struct dirent *e;
    int fd, err;

    if ((err = ed_store_prepare(&q, d->st, "SELECT 1 FROM dataset_blobs WHERE sha256 = ?")) < 0)
        return err;
    if ((fd = dup(d->blobs_fd)) < 0 || (top = fdopendir(fd)) == NULL) {
        if (fd >= 0)
            close(fd);
        sqlite3_finalize(q);
        return ed_error_set(ED_EIO, "read blobs/: %s", strerror(errno));
    }
    rewinddir(top);
    while ((e = readdir(top)) != NULL) {
        DIR *sub;
        struct dirent *f;
        int sfd;
        if (e->d_name[0] == '.')
            continue;
        if ((sfd = openat(d->blobs_fd, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0)
            continue;
        if ((sub = fdopendir(sfd)) == NULL) {
            close(sfd);
            continue;
        }
        while ((f = readdir(sub)) != NULL) {
            if (f->d_name[0] == '.')
                continue;
            if (!blob_row_exists(q, f->d_name) && unlinkat(sfd, f->d_name, 0) == 0)
                (*count)++;
        }
        closedir(sub);
    }
    closedir(top);
    sqlite3_finalize(q);
    return 0;
}

/* ---- gc ------------------------------------------------------------------ */

typedef struct dead_blob {
    char sha[DS_SHA256_LEN];
    int64_t size;
} dead_blob;

typedef struct gc_ctx {
    ds *d;
    dead_blob *dead;
    size_t count;
} gc_ctx;

static int gc_body(void *p)
{
    gc_ctx *c = p;
    sqlite3_stmt *q = NULL;
    size_t cap = 0;
    int rc, err;

    free(c->dead);      /* a retried transaction starts over */
    c->dead = NULL;
    c->count = 0;
    if ((err = ed_store_prepare(&q, c->d->st,
                                "SELECT sha256, size FROM dataset_blobs b WHERE NOT EXISTS (SELECT 1 FROM "
                                "dataset_files f WHERE f.sha256 = b.sha256) AND NOT EXISTS (SELECT 1 FROM "
                                "dataset_draft_files g WHERE g.sha256 = b.sha256)")) < 0)
        return err;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        if (c->count == cap) {
            void *n = realloc(c->dead, (cap = cap ? cap * 2 : 64) * sizeof(*c->dead));
            if (!n) {
                sqlite3_finalize(q);
                return ed_error_set(ED_ENOMEM, "gc");
            }
            c->dead = n;
        }
        snprintf(c->dead[c->count].sha, DS_SHA256_LEN, "%s", (const char *)sqlite3_column_text(q, 0));
        c->dead[c->count++].size = sqlite3_column_int64(q, 1);
    }
    sqlite3_finalize(q);
    if (rc != SQLITE_DONE)
        return ed_store_error(ed_store_db(c->d->st), rc, "gc");
    if ((err = ed_store_prepare(&q, c->d->st, "DELETE FROM dataset_blobs WHERE sha256 = ?")) < 0)
        return err;
    for (size_t i = 0; i < c->count; i++) {
        sqlite3_reset(q);
        sqlite3_bind_text(q, 1, c->dead[i].sha, -1, SQLITE_STATIC);
        if ((rc = sqlite3_step(q)) != SQLITE_DONE) {
            sqlite3_finalize(q);
            return ed_store_error(ed_store_db(c->d->st), rc, "gc delete");
        }
    }
    sqlite3_finalize(q);
    return 0;
}

static int expire_uploads(ds *d, int64_t now_ms, int64_t *count)
{
    sqlite3_stmt *q = NULL, *del = NULL;
    int64_t cutoff = now_ms - d->lim.upload_ttl_ms;
    int rc, err;

    if ((err = ed_store_prepare(&q, d->st, "SELECT id FROM dataset_uploads WHERE updated_at < ?")) < 0)
        return err;
    if ((err = ed_store_prepare(&del, d->st, "DELETE FROM dataset_uploads WHERE id = ? AND updated_at < ?")) < 0) {
        sqlite3_finalize(q);
        return err;
    }
    sqlite3_bind_int64(q, 1, cutoff);
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        const char *id = (const char *)sqlite3_column_text(q, 0);
        bool open = false;
        pthread_mutex_lock(&d->mu);
        for (struct ds_open_upload *u = d->open_uploads; u; u = u->next)
            open |= strcmp(u->id, id) == 0;
        pthread_mutex_unlock(&d->mu);
        if (open)
            continue;       /* a chunk is being written: not idle */
        sqlite3_reset(del);
        sqlite3_bind_text(del, 1, id, -1, SQLITE_TRANSIENT);
        sqlite3_bind_int64(del, 2, cutoff);
        if (ed_store_step(del) == SQLITE_DONE && sqlite3_changes(ed_store_db(d->st)) == 1) {
            unlinkat(d->uploads_fd, id, 0);
            (*count)++;
        }
    }
    sqlite3_finalize(q);
    sqlite3_finalize(del);
    return rc == SQLITE_DONE ? 0 : ed_store_error(ed_store_db(d->st), rc, "expire uploads");
}

int ds_gc(ds_gc_stats *out, ds *d, int64_t now_ms)
{
    ds_gc_stats st = {0};
    gc_ctx c = {d, NULL, 0};
    int64_t orphans = 0;
    int err;

    if ((err = expire_uploads(d, now_ms, &st.uploads_expired)) < 0)
        return err;
    pthread_rwlock_wrlock(&d->blob_lock);
    if ((err = ed_store_tx(d->st, gc_body, &c)) == 0) {
        /* rows are gone: nothing can reference these files any more */
        for (size_t i = 0; i < c.count; i++) {
            char rel[4 + DS_SHA256_LEN];
            snprintf(rel, sizeof(rel), "%.2s/%s", c.dead[i].sha, c.dead[i].sha);
            if (unlinkat(d->blobs_fd, rel, 0) == 0 || errno == ENOENT) {
                st.blobs_freed++;
                st.bytes_freed += c.dead[i].size;
            }
        }
        /* files placed by a put that failed before its row (over quota, a
         * dataset deleted meanwhile) */
        err = sweep_orphan_blobs(d, &orphans);
        st.blobs_freed += orphans;
    }
    pthread_rwlock_unlock(&d->blob_lock);
    free(c.dead);
    if (err == 0 && (st.blobs_freed || st.uploads_expired))
        ed_log(ED_LOG_INFO, "datasets.gc", "freed %lld blobs (%lld bytes), expired %lld uploads",
               (long long)st.blobs_freed, (long long)st.bytes_freed, (long long)st.uploads_expired);
    if (out)
        *out = st;
    return err;
}

/* ---- recovery ------------------------------------------------------------ */

/* 1 when `sql` (binding ?1 text, ?2 integer) answers a row. */
static int row_exists(ds *d, const char *sql, const char *t, int64_t i)
{
    sqlite3_stmt *q = NULL;
    int rc;

    if (ed_store_prepare(&q, d->st, sql) < 0)
        return -1;
    sqlite3_bind_text(q, 1, t, -1, SQLITE_STATIC);
    sqlite3_bind_int64(q, 2, i);
    rc = sqlite3_step(q);
    sqlite3_finalize(q);
    return rc == SQLITE_ROW ? 1 : rc == SQLITE_DONE ? 0 : -1;
}

/* Call fn for each entry of the directory dir_fd (not "." nor ".."). */
static int each_entry(int dir_fd, int (*fn)(ds *d, int dir_fd, const char *name, void *p), ds *d, void *p)
{
    DIR *dir;
    struct dirent *e;
    int fd = openat(dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

    if (fd < 0 || (dir = fdopendir(fd)) == NULL) {
        if (fd >= 0)
            close(fd);
        return ed_error_set(ED_EIO, "read datasets directory: %s", strerror(errno));
    }
    while ((e = readdir(dir)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        fn(d, dir_fd, e->d_name, p);
    }
    closedir(dir);
    return 0;
}

static int rm_tmp(ds *d, int dir_fd, const char *name, void *p)
{
    (void)d;
    if (ds__remove_all(dir_fd, name) == 0)
        ++*(int64_t *)p;
    return 0;
}

static int rm_orphan_upload(ds *d, int dir_fd, const char *name, void *p)
{
    if (row_exists(d, "SELECT 1 FROM dataset_uploads WHERE id = ?1", name, 0) == 0 &&
        unlinkat(dir_fd, name, 0) == 0)
        ++*(int64_t *)p;
    return 0;
}

typedef struct tree_walk {
    const char *id;
    int64_t *count;
} tree_walk;

static int rm_orphan_version_tree(ds *d, int dir_fd, const char *name, void *p)
{
    tree_walk *w = p;
    char *end;
    long long n = strtoll(name, &end, 10);

    if (*end != '\0' || n <= 0 ||
        row_exists(d, "SELECT 1 FROM dataset_versions WHERE dataset_id = ?1 AND number = ?2", w->id, n) == 0) {
        if (ds__remove_all(dir_fd, name) == 0)
            ++*w->count;
    }
    return 0;
}

static int rm_orphan_tree(ds *d, int dir_fd, const char *name, void *p)
{
    if (strncmp(name, ".tmp-", 5) == 0 ||
        row_exists(d, "SELECT 1 FROM datasets WHERE id = ?1", name, 0) == 0) {
        if (ds__remove_all(dir_fd, name) == 0)
            ++*(int64_t *)p;
    } else {
        tree_walk w = {name, p};
        int fd = openat(dir_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd >= 0) {
            each_entry(fd, rm_orphan_version_tree, d, &w);
            close(fd);
        }
    }
    return 0;
}

int ds_recover(ds_recover_stats *out, ds *d)
{
    ds_recover_stats st = {0};
    sqlite3_stmt *q = NULL;
    int rc, err;

    if ((err = each_entry(d->tmp_fd, rm_tmp, d, &st.tmp_removed)) < 0 ||
        (err = each_entry(d->uploads_fd, rm_orphan_upload, d, &st.orphan_uploads)) < 0 ||
        (err = each_entry(d->trees_fd, rm_orphan_tree, d, &st.orphan_trees)) < 0)
        return err;
    pthread_rwlock_wrlock(&d->blob_lock);
    err = sweep_orphan_blobs(d, &st.orphan_blobs);
    pthread_rwlock_unlock(&d->blob_lock);
    if (err < 0)
        return err;
    /* a row whose file is missing: the disk lost it (or someone removed
     * it). Never dropped silently: every one is logged as an error, and the
     * versions that hold it fail to read with ED_EIO naming it. */
    if ((err = ed_store_prepare(&q, d->st, "SELECT sha256 FROM dataset_blobs")) < 0)
        return err;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        const char *sha = (const char *)sqlite3_column_text(q, 0);
        char rel[4 + DS_SHA256_LEN];
        struct stat sb;
        snprintf(rel, sizeof(rel), "%.2s/%s", sha, sha);
        if (fstatat(d->blobs_fd, rel, &sb, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(sb.st_mode)) {
            st.missing_blobs++;
            ed_log(ED_LOG_ERROR, "datasets.blob_missing", "blob %s has a row but no file under %s/blobs", sha,
                   d->root);
        }
    }
    sqlite3_finalize(q);
    if (rc != SQLITE_DONE)
        return ed_store_error(ed_store_db(d->st), rc, "recover");
    if (st.tmp_removed || st.orphan_blobs || st.orphan_uploads || st.orphan_trees)
        ed_log(ED_LOG_INFO, "datasets.recover",
               "removed %lld temporary files, %lld orphan blobs, %lld orphan uploads, %lld orphan trees",
               (long long)st.tmp_removed, (long long)st.orphan_blobs, (long long)st.orphan_uploads,
               (long long)st.orphan_trees);
    if (out)
        *out = st;
    return 0;
}
