/*
 * versions.c - publishing the draft as an immutable version, listing,
 * reading manifests and files, deleting a version.
 */
#include "ds_int.h"

#include "ed_error.h"
#include "ed_time.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static atomic_bool fail_publish;

void ds__fail_publish_before_commit(bool on)
{
    atomic_store(&fail_publish, on);
}

void ds_version_free(ds_version *v)
{
    if (!v)
        return;
    free(v->message);
    free(v->source);
    ds_file_list_free(v->files);
    free(v);
}

void ds_version_list_free(ds_version **v, size_t count)
{
    for (size_t i = 0; v && i < count; i++)
        ds_version_free(v[i]);
    free(v);
}

/* One integer that `sql` (binding ?1 = id, ?2 = n) answers; 0 when no row. */
static int query_int(int64_t *out, ds *d, const char *sql, const char *id, int64_t n)
{
    sqlite3_stmt *q = NULL;
    int rc, err;

    *out = 0;
    if ((err = ed_store_prepare(&q, d->st, sql)) < 0)
        return err;
    sqlite3_bind_text(q, 1, id, -1, SQLITE_STATIC);
    sqlite3_bind_int64(q, 2, n);
    rc = sqlite3_step(q);
    if (rc == SQLITE_ROW)
        *out = sqlite3_column_int64(q, 0);
    else if (rc != SQLITE_DONE)
        err = ed_store_error(ed_store_db(d->st), rc, "version");
    sqlite3_finalize(q);
    return err;
}

static int exec_id(ds *d, const char *sql, const char *id, int64_t n, const char *what)
{
    sqlite3_stmt *q = NULL;
    int rc, err;

    if ((err = ed_store_prepare(&q, d->st, sql)) < 0)
        return err;
    sqlite3_bind_text(q, 1, id, -1, SQLITE_STATIC);
    sqlite3_bind_int64(q, 2, n);
    rc = sqlite3_step(q);
    sqlite3_finalize(q);
    return rc == SQLITE_DONE ? 0 : ed_store_error(ed_store_db(d->st), rc, what);
}

/* ---- publish ------------------------------------------------------------- */

typedef struct publish_ctx {
    ds *d;
    const char *id, *message, *source;
    int64_t user;
    int64_t number;             /* out */
} publish_ctx;

static int publish_body(void *p)
{
    publish_ctx *c = p;
    ds *d = c->d;
    int64_t latest, seq, count, diff;
    sqlite3_stmt *q = NULL;
    int rc, err;

    c->number = 0;
    if ((err = query_int(&count, d, "SELECT COUNT(*) FROM dataset_draft_files WHERE dataset_id = ?1", c->id, 0)) < 0)
        return err;
    if (count == 0)
        return ed_error_set(ED_EUNPROC, "the draft has no files: upload some before publishing");
    if ((err = query_int(&latest, d, "SELECT COALESCE(MAX(number), 0) FROM dataset_versions WHERE dataset_id = ?1",
                         c->id, 0)) < 0 ||
        (err = query_int(&seq, d, "SELECT version_seq FROM datasets WHERE id = ?1", c->id, 0)) < 0)
        return err;
    if (latest > 0) {
        err = query_int(&diff, d,
                        "SELECT (SELECT COUNT(*) FROM (SELECT path, sha256 FROM dataset_draft_files "
                        "WHERE dataset_id = ?1 EXCEPT SELECT path, sha256 FROM dataset_files "
                        "WHERE dataset_id = ?1 AND number = ?2)) + (SELECT COUNT(*) FROM (SELECT path, sha256 "
                        "FROM dataset_files WHERE dataset_id = ?1 AND number = ?2 EXCEPT SELECT path, sha256 "
                        "FROM dataset_draft_files WHERE dataset_id = ?1))",
                        c->id, latest);
        if (err < 0)
            return err;
        if (diff == 0)
            return ed_error_set(ED_EUNPROC, "the draft has no change since version %lld", (long long)latest);
    }
    c->number = (seq > latest ? seq : latest) + 1;
    if ((err = ed_store_prepare(&q, d->st,
                                "INSERT INTO dataset_versions (dataset_id, number, message, size_bytes, file_count, "
                                "created_by, created_at, source) SELECT ?1, ?2, ?3, COALESCE(SUM(size), 0), "
                                "COUNT(*), ?4, ?5, ?6 FROM dataset_draft_files WHERE dataset_id = ?1")) < 0)
        return err;
    sqlite3_bind_text(q, 1, c->id, -1, SQLITE_STATIC);
    sqlite3_bind_int64(q, 2, c->number);
    sqlite3_bind_text(q, 3, c->message ? c->message : "", -1, SQLITE_STATIC);
    sqlite3_bind_int64(q, 4, c->user);
    sqlite3_bind_int64(q, 5, ed_now_ms());
    sqlite3_bind_text(q, 6, c->source, -1, SQLITE_STATIC);
    rc = sqlite3_step(q);
    sqlite3_finalize(q);
    if (rc != SQLITE_DONE)
        return ed_store_error(ed_store_db(d->st), rc, "publish version");
    if ((err = exec_id(d,
                       "INSERT INTO dataset_files (dataset_id, number, path, sha256, size, media_type) "
                       "SELECT dataset_id, ?2, path, sha256, size, media_type FROM dataset_draft_files "
                       "WHERE dataset_id = ?1",
                       c->id, c->number, "publish manifest")) < 0 ||
        (err = exec_id(d, "UPDATE datasets SET version_seq = ?2, "
                       "updated_at = CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER) WHERE id = ?1",
                       c->id, c->number, "publish")) < 0)
        return err;
    if (atomic_load(&fail_publish))
        return ed_error_set(ED_EIO, "publish: failure injected before commit");
    {
        /* Test-only, off unless the test server's environment sets it: hold
         * the publish transaction open (everything written, nothing
         * committed) so a test can kill -9 the server mid-publish. */
        const char *ms = getenv("EDDY_TEST_DS_PUBLISH_SLEEP_MS");
        if (ms != NULL && atoi(ms) > 0)
            usleep((useconds_t)atoi(ms) * 1000);
    }
    return 0;
}

static int check_source(const char *source)
{
    json_t *v;

    if (!source)
        return 0;
    if (strlen(source) > DS_SOURCE_MAX)
        return ed_error_set(ED_EINVAL, "source is longer than %d bytes", DS_SOURCE_MAX);
    v = json_loads(source, JSON_REJECT_DUPLICATES, NULL);
    if (!json_is_object(v)) {
        json_decref(v);
        return ed_error_set(ED_EINVAL, "source must be a JSON object");
    }
    json_decref(v);
    return 0;
}

int ds_version_publish(ds_version **out, ds *d, int64_t user, const char *id, const char *message,
                       const char *source)
{
    publish_ctx c = {d, id, message, source, user, 0};
    int err;

    if (out)
        *out = NULL;
    if ((err = ds__access(d, user, id, true, NULL)) < 0)
        return err;
    if (message && strlen(message) > DS_MESSAGE_MAX)
        return ed_error_set(ED_EINVAL, "message is longer than %d bytes", DS_MESSAGE_MAX);
    if ((err = check_source(source)) < 0)
        return err;
    if ((err = ed_store_tx(d->st, publish_body, &c)) < 0)
        return err;
    return out ? ds_version_get(out, d, user, id, c.number) : 0;
}

/* ---- read ---------------------------------------------------------------- */

static int version_read(ds_version **out, sqlite3_stmt *q)
{
    ds_version *v = calloc(1, sizeof(*v));
    const char *src = (const char *)sqlite3_column_text(q, 2);

    if (!v)
        return ed_error_set(ED_ENOMEM, "version");
    v->number = sqlite3_column_int64(q, 0);
    v->message = strdup((const char *)sqlite3_column_text(q, 1));
    v->source = src ? strdup(src) : NULL;
    v->size_bytes = sqlite3_column_int64(q, 3);
    v->file_count = sqlite3_column_int64(q, 4);
    v->created_by = sqlite3_column_int64(q, 5);
    v->created_at = sqlite3_column_int64(q, 6);
    if (!v->message || (src && !v->source)) {
        ds_version_free(v);
        return ed_error_set(ED_ENOMEM, "version");
    }
    *out = v;
    return 0;
}

#define VERSION_COLUMNS "number, message, source, size_bytes, file_count, created_by, created_at"

int ds_version_list(ds_version ***out, size_t *out_count, ds *d, int64_t user, const char *id)
{
    ds_version **v = NULL;
    size_t n = 0, cap = 0;
    sqlite3_stmt *q = NULL;
    int rc, err;

    *out = NULL;
    *out_count = 0;
    if ((err = ds__access(d, user, id, false, NULL)) < 0)
        return err;
    if ((err = ed_store_prepare(&q, d->st,
                                "SELECT " VERSION_COLUMNS " FROM dataset_versions WHERE dataset_id = ? "
                                "ORDER BY number DESC")) < 0)
        return err;
    sqlite3_bind_text(q, 1, id, -1, SQLITE_STATIC);
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        if (n == cap) {
            void *p = realloc(v, (cap = cap ? cap * 2 : 8) * sizeof(*v));
            if (!p) {
                err = ed_error_set(ED_ENOMEM, "versions");
                goto fail;
            }
            v = p;
        }
        if ((err = version_read(&v[n], q)) < 0)
            goto fail;
        n++;
    }
    if (rc != SQLITE_DONE) {
        err = ed_store_error(ed_store_db(d->st), rc, "versions");
        goto fail;
    }
    sqlite3_finalize(q);
    *out = v;
    *out_count = n;
    return 0;
fail:
    sqlite3_finalize(q);
    ds_version_list_free(v, n);
    return err;
}

int ds__version_resolve(int64_t *out, ds *d, const char *id, int64_t number)
{
    int err;

    if (number < 0)
        return ed_error_set(ED_ENOTFOUND, "no version %lld", (long long)number);
    if (number == 0) {
        if ((err = query_int(out, d, "SELECT COALESCE(MAX(number), 0) FROM dataset_versions WHERE dataset_id = ?1",
                             id, 0)) < 0)
            return err;
        return *out ? 0 : ed_error_set(ED_ENOTFOUND, "dataset %s has no version yet", id);
    }
    if ((err = query_int(out, d, "SELECT number FROM dataset_versions WHERE dataset_id = ?1 AND number = ?2", id,
                         number)) < 0)
        return err;
    return *out ? 0 : ed_error_set(ED_ENOTFOUND, "dataset %s has no version %lld", id, (long long)number);
}

int ds_version_get(ds_version **out, ds *d, int64_t user, const char *id, int64_t number)
{
    sqlite3_stmt *q = NULL;
    int64_t n;
    int rc, err;

    *out = NULL;
    if ((err = ds__access(d, user, id, false, NULL)) < 0 || (err = ds__version_resolve(&n, d, id, number)) < 0)
        return err;
    if ((err = ed_store_prepare(&q, d->st,
                                "SELECT " VERSION_COLUMNS " FROM dataset_versions WHERE dataset_id = ? AND number = ?")) < 0)
        return err;
    sqlite3_bind_text(q, 1, id, -1, SQLITE_STATIC);
    sqlite3_bind_int64(q, 2, n);
    rc = sqlite3_step(q);
    if (rc == SQLITE_ROW)
        err = version_read(out, q);
    else if (rc == SQLITE_DONE)
        err = ed_error_set(ED_ENOTFOUND, "dataset %s has no version %lld", id, (long long)n);
    else
        err = ed_store_error(ed_store_db(d->st), rc, "version");
    sqlite3_finalize(q);
    if (err == 0 && (err = ds__files_load(&(*out)->files, d, id, n)) < 0) {
        ds_version_free(*out);
        *out = NULL;
    }
    return err;
}

int ds_version_file_open(int *out_fd, ds_file *out_file, ds *d, int64_t user, const char *id, int64_t number,
                         const char *path)
{
    sqlite3_stmt *q = NULL;
    char rel[4 + DS_SHA256_LEN];
    int64_t n;
    int rc, err;

    *out_fd = -1;
    if ((err = ds__access(d, user, id, false, NULL)) < 0 || (err = ds__version_resolve(&n, d, id, number)) < 0)
        return err;
    if ((err = ed_store_prepare(&q, d->st,
                                "SELECT sha256, size, media_type FROM dataset_files WHERE dataset_id = ? "
                                "AND number = ? AND path = ?")) < 0)
        return err;
    sqlite3_bind_text(q, 1, id, -1, SQLITE_STATIC);
    sqlite3_bind_int64(q, 2, n);
    sqlite3_bind_text(q, 3, path, -1, SQLITE_STATIC);
    rc = sqlite3_step(q);
    if (rc != SQLITE_ROW) {
        err = rc == SQLITE_DONE ? ed_error_set(ED_ENOTFOUND, "version %lld has no file '%.200s'", (long long)n, path)
                                : ed_store_error(ed_store_db(d->st), rc, "file");
        sqlite3_finalize(q);
        return err;
    }
    const char *sha = (const char *)sqlite3_column_text(q, 0);
    snprintf(rel, sizeof(rel), "%.2s/%s", sha, sha);
    if (out_file) {
        memset(out_file, 0, sizeof(*out_file));
        snprintf(out_file->sha256, sizeof(out_file->sha256), "%s", sha);
        out_file->size = sqlite3_column_int64(q, 1);
        snprintf(out_file->media_type, sizeof(out_file->media_type), "%s", (const char *)sqlite3_column_text(q, 2));
        out_file->path = strdup(path);
    }
    sqlite3_finalize(q);
    if ((*out_fd = openat(d->blobs_fd, rel, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)) < 0) {
        err = ed_error_set(ED_EIO, "blob %s of '%.200s' is missing: %s", rel + 3, path, strerror(errno));
        if (out_file) {
            free(out_file->path);
            out_file->path = NULL;
        }
        return err;
    }
    if (out_file && !out_file->path) {
        close(*out_fd);
        *out_fd = -1;
        return ed_error_set(ED_ENOMEM, "file");
    }
    return 0;
}

/* ---- delete -------------------------------------------------------------- */

typedef struct delete_ctx {
    ds *d;
    const char *id;
    int64_t number;
} delete_ctx;

static int delete_body(void *p)
{
    delete_ctx *c = p;
    int err;

    if ((err = exec_id(c->d, "DELETE FROM dataset_files WHERE dataset_id = ?1 AND number = ?2", c->id, c->number,
                       "delete version")) < 0 ||
        (err = exec_id(c->d, "DELETE FROM dataset_versions WHERE dataset_id = ?1 AND number = ?2", c->id, c->number,
                       "delete version")) < 0)
        return err;
    return 0;
}

int ds_version_delete(ds *d, int64_t user, const char *id, int64_t number)
{
    char why[256];
    sqlite3_stmt *q = NULL;
    delete_ctx c = {d, id, number};
    int64_t n;
    int err;

    if ((err = ds__access(d, user, id, true, NULL)) < 0)
        return err;
    if (number <= 0)
        return ed_error_set(ED_EINVAL, "name the version to delete by its number");
    if ((err = ds__version_resolve(&n, d, id, number)) < 0)
        return err;
    if ((err = ds__in_use(d, id, number, why, sizeof(why))) < 0)
        return err;
    if (err > 0)
        return ed_error_set(ED_ECONFLICT, "version %lld is in use: %s", (long long)number, why);
    if ((err = ed_store_prepare(&q, d->st,
                                "SELECT project_id FROM project_datasets WHERE dataset_id = ? AND version = ? "
                                "LIMIT 1")) < 0)
        return err;
    sqlite3_bind_text(q, 1, id, -1, SQLITE_STATIC);
    sqlite3_bind_int64(q, 2, number);
    if (sqlite3_step(q) == SQLITE_ROW) {
        err = ed_error_set(ED_ECONFLICT, "version %lld is attached to project %s", (long long)number,
                           (const char *)sqlite3_column_text(q, 0));
        sqlite3_finalize(q);
        return err;
    }
    sqlite3_finalize(q);
    if ((err = ed_store_tx(d->st, delete_body, &c)) < 0)
        return err;
    ds__tree_remove(d, id, number);     /* a crash before this: ds_recover removes it */
    return 0;
}
