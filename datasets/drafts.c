/*
 * drafts.c - the draft a version is published from: files put, replaced and
 * removed by path; the manifests of versions and drafts as lists.
 */
#include "ds_int.h"

#include "ed_error.h"
#include "ed_time.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void ds_file_list_free(ds_file_list *l)
{
    if (!l)
        return;
    for (size_t i = 0; i < l->count; i++)
        free(l->items[i].path);
    free(l->items);
    free(l);
}

int ds__files_load(ds_file_list **out, ds *d, const char *id, int64_t number)
{
    ds_file_list *l;
    sqlite3_stmt *q = NULL;
    size_t cap = 0;
    int rc, err;

    *out = NULL;
    if ((l = calloc(1, sizeof(*l))) == NULL)
        return ed_error_set(ED_ENOMEM, "files");
    err = ed_store_prepare(&q, d->st,
                           number > 0 ? "SELECT path, sha256, size, media_type FROM dataset_files "
                                        "WHERE dataset_id = ?1 AND number = ?2 ORDER BY path"
                                      : "SELECT path, sha256, size, media_type FROM dataset_draft_files "
                                        "WHERE dataset_id = ?1 ORDER BY path");
    if (err < 0)
        goto fail;
    sqlite3_bind_text(q, 1, id, -1, SQLITE_STATIC);
    if (number > 0)
        sqlite3_bind_int64(q, 2, number);
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        ds_file *f;
        if (l->count == cap) {
            void *p = realloc(l->items, (cap = cap ? cap * 2 : 16) * sizeof(*l->items));
            if (!p) {
                err = ed_error_set(ED_ENOMEM, "files");
                goto fail;
            }
            l->items = p;
        }
        f = &l->items[l->count];
        memset(f, 0, sizeof(*f));
        if ((f->path = strdup((const char *)sqlite3_column_text(q, 0))) == NULL) {
            err = ed_error_set(ED_ENOMEM, "files");
            goto fail;
        }
        snprintf(f->sha256, sizeof(f->sha256), "%s", (const char *)sqlite3_column_text(q, 1));
        f->size = sqlite3_column_int64(q, 2);
        snprintf(f->media_type, sizeof(f->media_type), "%s", (const char *)sqlite3_column_text(q, 3));
        l->size_bytes += f->size;
        l->count++;
    }
    if (rc != SQLITE_DONE) {
        err = ed_store_error(ed_store_db(d->st), rc, "files");
        goto fail;
    }
    sqlite3_finalize(q);
    *out = l;
    return 0;
fail:
    sqlite3_finalize(q);
    ds_file_list_free(l);
    return err;
}

typedef struct commit_ctx {
    ds *d;
    const char *id, *path, *sha, *media_type, *upload_id;
    int64_t size;
} commit_ctx;

static int run(ds *d, const char *sql, const char *what, const char *t1, const char *t2, const char *t3,
               int64_t i4, const char *t5, int64_t i6)
{
    sqlite3_stmt *q = NULL;
    int rc, err;

    if ((err = ed_store_prepare(&q, d->st, sql)) < 0)
        return err;
    sqlite3_bind_text(q, 1, t1, -1, SQLITE_STATIC);
    sqlite3_bind_text(q, 2, t2, -1, SQLITE_STATIC);
    sqlite3_bind_text(q, 3, t3, -1, SQLITE_STATIC);
    sqlite3_bind_int64(q, 4, i4);
    sqlite3_bind_text(q, 5, t5, -1, SQLITE_STATIC);
    sqlite3_bind_int64(q, 6, i6);
    rc = sqlite3_step(q);
    sqlite3_finalize(q);
    if (rc == SQLITE_DONE)
        return 0;
    if ((rc & 0xff) == SQLITE_CONSTRAINT) {
        ed_store_error(ed_store_db(d->st), rc, what);
        return ed_error_set(ED_ENOTFOUND, "%s: the dataset is gone", what);
    }
    return ed_store_error(ed_store_db(d->st), rc, what);
}

/* A file and a directory cannot share a name in a tree: "a/b" is refused
 * while "a" is a file, and "a" while "a/..." files exist. Index lookups
 * only (each ancestor, then one key range), never a scan of the draft. */
static int path_clash(ds *d, const char *id, const char *path)
{
    sqlite3_stmt *q = NULL;
    char *up = NULL;
    size_t n = strlen(path);
    int err = 0;

    if ((err = ed_store_prepare(&q, d->st,
                                "SELECT path FROM dataset_draft_files WHERE dataset_id = ?1 AND path = ?2")) < 0)
        return err;
    for (size_t i = 0; i < n && err == 0; i++) {
        if (path[i] != '/')
            continue;
        sqlite3_reset(q);
        sqlite3_bind_text(q, 1, id, -1, SQLITE_STATIC);
        sqlite3_bind_text(q, 2, path, (int)i, SQLITE_STATIC);
        if (sqlite3_step(q) == SQLITE_ROW)
            err = ed_error_set(ED_ECONFLICT, "'%.200s' would be inside '%.*s', which is a file", path, (int)i, path);
    }
    sqlite3_finalize(q);
    if (err < 0)
        return err;
    /* paths beneath "a/": from "a/" up to (not including) "a0", '0' being '/' + 1 */
    if (asprintf(&up, "%s0", path) < 0)
        return ed_error_set(ED_ENOMEM, "path");
    if ((err = ed_store_prepare(&q, d->st,
                                "SELECT path FROM dataset_draft_files WHERE dataset_id = ?1 AND path > ?2 || '/' "
                                "AND path < ?3 LIMIT 1")) < 0) {
        free(up);
        return err;
    }
    sqlite3_bind_text(q, 1, id, -1, SQLITE_STATIC);
    sqlite3_bind_text(q, 2, path, -1, SQLITE_STATIC);
    sqlite3_bind_text(q, 3, up, -1, SQLITE_STATIC);
    if (sqlite3_step(q) == SQLITE_ROW)
        err = ed_error_set(ED_ECONFLICT, "'%.200s' is a directory of the draft (it holds '%.200s')", path,
                           (const char *)sqlite3_column_text(q, 0));
    sqlite3_finalize(q);
    free(up);
    return err;
}

static int commit_body(void *p)
{
    commit_ctx *c = p;
    ds *d = c->d;
    int64_t now = ed_now_ms();
    sqlite3_stmt *q = NULL;
    int err;

    if (c->upload_id) {
        /* an upload cancelled or expired meanwhile must not land */
        if ((err = run(d, "DELETE FROM dataset_uploads WHERE id = ?1", "finish upload", c->upload_id, NULL, NULL,
                       0, NULL, 0)) < 0)
            return err;
        if (sqlite3_changes(ed_store_db(d->st)) != 1)
            return ed_error_set(ED_ENOTFOUND, "upload %s was cancelled", c->upload_id);
    }
    /* bounded: a draft holds at most DS_FILES_MAX files */
    if ((err = ed_store_prepare(&q, d->st,
                                "SELECT COUNT(*), SUM(path = ?2) FROM dataset_draft_files WHERE dataset_id = ?1")) < 0)
        return err;
    sqlite3_bind_text(q, 1, c->id, -1, SQLITE_STATIC);
    sqlite3_bind_text(q, 2, c->path, -1, SQLITE_STATIC);
    if (sqlite3_step(q) == SQLITE_ROW && sqlite3_column_int64(q, 0) >= DS_FILES_MAX &&
        sqlite3_column_int64(q, 1) == 0) {
        sqlite3_finalize(q);
        return ed_error_set(ED_ETOOBIG, "a version holds at most %d files", DS_FILES_MAX);
    }
    sqlite3_finalize(q);
    if ((err = path_clash(d, c->id, c->path)) < 0)
        return err;
    if ((err = run(d,
                   "INSERT OR IGNORE INTO dataset_blobs (sha256, size, media_type, created_at) "
                   "VALUES (?1, ?4, ?3, ?6)",
                   "blob", c->sha, NULL, c->media_type, c->size, NULL, now)) < 0)
        return err;
    return run(d,
               "INSERT OR REPLACE INTO dataset_draft_files (dataset_id, path, sha256, size, media_type, updated_at) "
               "VALUES (?1, ?2, ?5, ?4, ?3, ?6)",
               "draft file", c->id, c->path, c->media_type, c->size, c->sha, now);
}

int ds__draft_commit(ds *d, const char *id, const char *path, const char *sha, int64_t size,
                     const char *media_type, const char *upload_id)
{
    commit_ctx c = {d, id, path, sha, media_type, upload_id, size};
    return ed_store_tx(d->st, commit_body, &c);
}

int ds_draft_put_fd(ds_file *out, ds *d, int64_t user, const char *id, const char *path, int fd,
                    const char *media_type, int64_t quota_bytes)
{
    char sha[DS_SHA256_LEN];
    int64_t owner, size = 0;
    const char *mt;
    int err;

    if ((err = ds__access(d, user, id, true, &owner)) < 0 || (err = ds_path_validate(path, strlen(path))) < 0)
        return err;
    if (media_type && (strlen(media_type) >= sizeof(((ds_file *)0)->media_type) || !strchr(media_type, '/')))
        return ed_error_set(ED_EINVAL, "media type '%.80s' is not type/subtype", media_type);
    mt = media_type ? media_type : ds__media_type(path);
    pthread_rwlock_rdlock(&d->blob_lock);
    if ((err = ds__blob_from_fd(sha, &size, d, fd, d->lim.file_max_bytes)) == 0 &&
        (err = ds__quota_check_blob(d, owner, sha, size, quota_bytes)) == 0)
        err = ds__draft_commit(d, id, path, sha, size, mt, NULL);
    pthread_rwlock_unlock(&d->blob_lock);
    /* a blob placed but not committed has no row: ds_gc's next pass or the
     * next start removes it */
    if (err == 0 && out) {
        memset(out, 0, sizeof(*out));
        if ((out->path = strdup(path)) == NULL)
            return ed_error_set(ED_ENOMEM, "file");
        memcpy(out->sha256, sha, sizeof(sha));
        out->size = size;
        snprintf(out->media_type, sizeof(out->media_type), "%s", mt);
    }
    return err;
}

int ds_draft_remove(ds *d, int64_t user, const char *id, const char *path)
{
    sqlite3_stmt *q = NULL;
    int rc, err;

    if ((err = ds__access(d, user, id, true, NULL)) < 0)
        return err;
    if ((err = ed_store_prepare(&q, d->st, "DELETE FROM dataset_draft_files WHERE dataset_id = ? AND path = ?")) < 0)
        return err;
    sqlite3_bind_text(q, 1, id, -1, SQLITE_STATIC);
    sqlite3_bind_text(q, 2, path, -1, SQLITE_STATIC);
    rc = ed_store_step(q);
    sqlite3_finalize(q);
    if (rc != SQLITE_DONE)
        return ed_store_error(ed_store_db(d->st), rc, "remove draft file");
    if (sqlite3_changes(ed_store_db(d->st)) == 0)
        return ed_error_set(ED_ENOTFOUND, "no file '%.200s' in the draft", path);
    return 0;
}

int ds_draft_list(ds_file_list **out, ds *d, int64_t user, const char *id)
{
    int err;

    *out = NULL;
    if ((err = ds__access(d, user, id, true, NULL)) < 0)
        return err;
    return ds__files_load(out, d, id, 0);
}
