/*
 * attach.c - the datasets a project mounts (project_datasets) and resolving
 * them into trees when a kernel or job starts.
 */
#include "ds_int.h"

#include "ed_error.h"
#include "ed_time.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PROJECT_ID_MAX 64

static int project_id_check(const char *project_id)
{
    size_t n = project_id ? strlen(project_id) : 0;

    if (n == 0 || n > PROJECT_ID_MAX)
        return ed_error_set(ED_EINVAL, "project id must be 1 to %d bytes", PROJECT_ID_MAX);
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)project_id[i] <= 0x20 || (unsigned char)project_id[i] >= 0x7f)
            return ed_error_set(ED_EINVAL, "project id has a byte 0x%02x", (unsigned char)project_id[i]);
    return 0;
}

static int exec_text(ds *d, const char *sql, const char *a, const char *b, int64_t n, int64_t now)
{
    sqlite3_stmt *q = NULL;
    int rc, err;

    if ((err = ed_store_prepare(&q, d->st, sql)) < 0)
        return err;
    sqlite3_bind_text(q, 1, a, -1, SQLITE_STATIC);
    sqlite3_bind_text(q, 2, b, -1, SQLITE_STATIC);
    if (n > 0)
        sqlite3_bind_int64(q, 3, n);    /* else NULL: the latest */
    sqlite3_bind_int64(q, 4, now);
    rc = sqlite3_step(q);
    sqlite3_finalize(q);
    return rc == SQLITE_DONE ? 0 : ed_store_error(ed_store_db(d->st), rc, "project datasets");
}

typedef struct set_ctx {
    ds *d;
    const char *project_id;
    const ds_attachment *items;
    size_t n;
} set_ctx;

static int set_body(void *p)
{
    set_ctx *c = p;
    int64_t now = ed_now_ms();
    int err;

    if ((err = exec_text(c->d, "DELETE FROM project_datasets WHERE project_id = ?1", c->project_id, NULL, 0, 0)) < 0)
        return err;
    /* rowid order is the order of the list */
    for (size_t i = 0; i < c->n; i++)
        if ((err = exec_text(c->d,
                             "INSERT INTO project_datasets (project_id, dataset_id, version, created_at) "
                             "VALUES (?1, ?2, ?3, ?4)",
                             c->project_id, c->items[i].dataset_id, c->items[i].version, now)) < 0)
            return err;
    return 0;
}

int ds_project_datasets_set(ds *d, int64_t user, const char *project_id, const ds_attachment *items, size_t n)
{
    set_ctx c = {d, project_id, items, n};
    int err;

    if ((err = project_id_check(project_id)) < 0)
        return err;
    if (n > DS_ATTACH_MAX)
        return ed_error_set(ED_EINVAL, "a project mounts at most %d datasets", DS_ATTACH_MAX);
    for (size_t i = 0; i < n; i++) {
        int64_t num;
        if (items[i].version < 0)
            return ed_error_set(ED_EINVAL, "version %lld is negative", (long long)items[i].version);
        for (size_t j = 0; j < i; j++)
            if (strcmp(items[i].dataset_id, items[j].dataset_id) == 0)
                return ed_error_set(ED_EINVAL, "dataset %s is listed twice", items[i].dataset_id);
        if ((err = ds__access(d, user, items[i].dataset_id, false, NULL)) < 0)
            return err;     /* not visible: "no dataset <id>" */
        if ((err = ds__version_resolve(&num, d, items[i].dataset_id, items[i].version)) < 0)
            return items[i].version == 0
                       ? ed_error_set(ED_EUNPROC, "dataset %s has no version to mount yet", items[i].dataset_id)
                       : err;
    }
    return ed_store_tx(d->st, set_body, &c);
}

int ds_project_datasets_get(ds_attachment **out, size_t *out_count, ds *d, const char *project_id)
{
    ds_attachment *a = NULL;
    sqlite3_stmt *q = NULL;
    size_t n = 0;
    int rc, err;

    *out = NULL;
    *out_count = 0;
    if ((err = project_id_check(project_id)) < 0)
        return err;
    if ((err = ed_store_prepare(&q, d->st,
                                "SELECT dataset_id, COALESCE(version, 0) FROM project_datasets "
                                "WHERE project_id = ? ORDER BY rowid LIMIT ?")) < 0)
        return err;
    sqlite3_bind_text(q, 1, project_id, -1, SQLITE_STATIC);
    sqlite3_bind_int(q, 2, DS_ATTACH_MAX);
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        if (!a && (a = calloc(DS_ATTACH_MAX, sizeof(*a))) == NULL) {
            sqlite3_finalize(q);
            return ed_error_set(ED_ENOMEM, "project datasets");
        }
        snprintf(a[n].dataset_id, DS_ID_LEN, "%s", (const char *)sqlite3_column_text(q, 0));
        a[n++].version = sqlite3_column_int64(q, 1);
    }
    sqlite3_finalize(q);
    if (rc != SQLITE_DONE) {
        free(a);
        return ed_store_error(ed_store_db(d->st), rc, "project datasets");
    }
    *out = a;
    *out_count = n;
    return 0;
}

int ds_project_datasets_clear(ds *d, const char *project_id)
{
    int err;

    if ((err = project_id_check(project_id)) < 0)
        return err;
    return exec_text(d, "DELETE FROM project_datasets WHERE project_id = ?1", project_id, NULL, 0, 0);
}

void ds_mounts_free(ds_mount *m, size_t count)
{
    for (size_t i = 0; m && i < count; i++) {
        free(m[i].slug);
        free(m[i].tree);
    }
    free(m);
}

int ds_project_mounts(ds_mount **out, size_t *out_count, ds *d, int64_t user, const char *project_id)
{
    ds_attachment *a = NULL;
    ds_mount *m = NULL;
    size_t n = 0, done = 0;
    int err;

    *out = NULL;
    *out_count = 0;
    if ((err = ds_project_datasets_get(&a, &n, d, project_id)) < 0 || n == 0)
        return err;
    if ((m = calloc(n, sizeof(*m))) == NULL) {
        free(a);
        return ed_error_set(ED_ENOMEM, "mounts");
    }
    for (; done < n; done++) {
        ds_dataset *s = NULL;
        int64_t num = 0;
        if ((err = ds_dataset_get(&s, d, user, a[done].dataset_id)) < 0) {
            err = ed_error_set(ED_ENOTFOUND, "dataset %s attached to the project is gone or not visible to you",
                               a[done].dataset_id);
            goto fail;
        }
        err = ds__version_resolve(&num, d, s->id, a[done].version);
        if (err == 0) {
            memcpy(m[done].dataset_id, s->id, DS_ID_LEN);
            m[done].owner_id = s->owner_id;
            m[done].version = num;
            if ((m[done].slug = strdup(s->slug)) == NULL)
                err = ed_error_set(ED_ENOMEM, "mounts");
            else
                err = ds_version_tree(&m[done].tree, d, user, s->id, num);
        }
        ds_dataset_free(s);
        if (err < 0) {
            done++;         /* its slug is freed with the others */
            goto fail;
        }
    }
    free(a);
    *out = m;
    *out_count = n;
    return 0;
fail:
    free(a);
    ds_mounts_free(m, done);
    return err;
}
