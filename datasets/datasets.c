/*
 * datasets.c - the store handle, names, and datasets: create, get, list,
 * update, delete, shares.
 */
#include "ds_int.h"

#include "ed_crypto.h"
#include "ed_error.h"
#include "ed_fs.h"
#include "ed_time.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- the handle ---------------------------------------------------------- */

static int mkdir_open(int *out, int parent, const char *name)
{
    if (mkdirat(parent, name, 0755) < 0 && errno != EEXIST)
        return ed_error_set(ED_EIO, "mkdir datasets/%s: %s", name, strerror(errno));
    if ((*out = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0)
        return ed_error_set(ED_EIO, "open datasets/%s: %s", name, strerror(errno));
    return 0;
}

int ds_open(ds **out, ed_store *store, const char *data_dir, const ds_limits *limits)
{
    ds *d;
    int err;

    *out = NULL;
    if ((d = calloc(1, sizeof(*d))) == NULL)
        return ed_error_set(ED_ENOMEM, "datasets");
    d->st = store;
    d->lim = limits ? *limits : DS_LIMITS_DEFAULT;
    d->root_fd = d->blobs_fd = d->tmp_fd = d->uploads_fd = d->trees_fd = -1;
    pthread_rwlock_init(&d->blob_lock, NULL);
    pthread_mutex_init(&d->mu, NULL);
    pthread_mutex_init(&d->tree_mu, NULL);
    if (asprintf(&d->root, "%s/datasets", data_dir) < 0) {
        d->root = NULL;
        err = ed_error_set(ED_ENOMEM, "datasets");
        goto fail;
    }
    if (mkdir(d->root, 0755) < 0 && errno != EEXIST) {
        err = ed_error_set(ED_EIO, "mkdir %s: %s", d->root, strerror(errno));
        goto fail;
    }
    if ((err = ed_fs_open_dir(&d->root_fd, d->root)) < 0 ||
        (err = mkdir_open(&d->blobs_fd, d->root_fd, "blobs")) < 0 ||
        (err = mkdir_open(&d->tmp_fd, d->root_fd, "tmp")) < 0 ||
        (err = mkdir_open(&d->uploads_fd, d->root_fd, "uploads")) < 0 ||
        (err = mkdir_open(&d->trees_fd, d->root_fd, "trees")) < 0)
        goto fail;
    if ((err = ds_recover(NULL, d)) < 0)
        goto fail;
    *out = d;
    return 0;
fail:
    ds_free(d);
    return err;
}

void ds_free(ds *d)
{
    if (!d)
        return;
    ds__previews_stop(d);       /* before the descriptors it reads through */
    int fds[] = {d->root_fd, d->blobs_fd, d->tmp_fd, d->uploads_fd, d->trees_fd};
    for (size_t i = 0; i < sizeof(fds) / sizeof(fds[0]); i++)
        if (fds[i] >= 0)
            close(fds[i]);
    while (d->open_uploads) {
        struct ds_open_upload *n = d->open_uploads->next;
        free(d->open_uploads);
        d->open_uploads = n;
    }
    pthread_rwlock_destroy(&d->blob_lock);
    pthread_mutex_destroy(&d->mu);
    pthread_mutex_destroy(&d->tree_mu);
    free(d->root);
    free(d);
}

void ds_in_use_fn_set(ds *d, ds_in_use_fn fn, void *payload)
{
    pthread_mutex_lock(&d->mu);
    d->in_use = fn;
    d->in_use_payload = payload;
    pthread_mutex_unlock(&d->mu);
}

int ds__in_use(ds *d, const char *id, int64_t number, char *why, size_t why_len)
{
    ds_in_use_fn fn;
    void *payload;

    pthread_mutex_lock(&d->mu);
    fn = d->in_use;
    payload = d->in_use_payload;
    pthread_mutex_unlock(&d->mu);
    why[0] = '\0';
    return fn ? fn(why, why_len, id, number, payload) : 0;
}

/* ---- rows ---------------------------------------------------------------- */

/* What a visible dataset is to `user` (?1): own, shared, or not private. */
#define VISIBLE_SQL                                                                                \
    "(d.owner_id = ?1 OR d.visibility <> 'private' OR EXISTS (SELECT 1 FROM dataset_shares s "     \
    "WHERE s.dataset_id = d.id AND s.user_id = ?1))"

#define COLUMNS_SQL                                                                                \
    "d.id, d.owner_id, d.slug, d.name, d.description, d.license, d.tags, d.visibility, "           \
    "d.created_at, d.updated_at, "                                                                 \
    "(SELECT COALESCE(MAX(number), 0) FROM dataset_versions v WHERE v.dataset_id = d.id)"

static int tags_from_json(ds_dataset *s, const char *text)
{
    json_t *a = json_loads(text ? text : "[]", 0, NULL);
    size_t i;
    json_t *v;

    if (!json_is_array(a)) {
        json_decref(a);
        return 0;                       /* written by us; a bad one reads as none */
    }
    if ((s->tags = calloc(json_array_size(a) + 1, sizeof(char *))) == NULL) {
        json_decref(a);
        return ed_error_set(ED_ENOMEM, "tags");
    }
    json_array_foreach(a, i, v) {
        if (json_is_string(v) && (s->tags[s->ntags] = strdup(json_string_value(v))) != NULL)
            s->ntags++;
    }
    json_decref(a);
    return 0;
}

static int row_read(ds_dataset **out, sqlite3_stmt *q, int64_t user)
{
    ds_dataset *s = calloc(1, sizeof(*s));
    const char *t;

    *out = NULL;
    if (!s)
        return ed_error_set(ED_ENOMEM, "dataset");
    snprintf(s->id, sizeof(s->id), "%s", (const char *)sqlite3_column_text(q, 0));
    s->owner_id = sqlite3_column_int64(q, 1);
    s->slug = strdup((const char *)sqlite3_column_text(q, 2));
    s->name = strdup((const char *)sqlite3_column_text(q, 3));
    s->description = strdup((const char *)sqlite3_column_text(q, 4));
    s->license = strdup((const char *)sqlite3_column_text(q, 5));
    t = (const char *)sqlite3_column_text(q, 7);
    if (ds_visibility_parse(&s->visibility, t) < 0)
        s->visibility = DS_PRIVATE;
    s->created_at = sqlite3_column_int64(q, 8);
    s->updated_at = sqlite3_column_int64(q, 9);
    s->latest_version = sqlite3_column_int64(q, 10);
    s->can_write = s->owner_id == user;
    if (!s->slug || !s->name || !s->description || !s->license ||
        tags_from_json(s, (const char *)sqlite3_column_text(q, 6)) < 0) {
        ds_dataset_free(s);
        return ed_error_set(ED_ENOMEM, "dataset");
    }
    *out = s;
    return 0;
}

void ds_dataset_free(ds_dataset *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->ntags; i++)
        free(s->tags[i]);
    free(s->tags);
    free(s->slug);
    free(s->name);
    free(s->description);
    free(s->license);
    free(s);
}

int ds__access(ds *d, int64_t user, const char *id, bool write, int64_t *out_owner)
{
    sqlite3_stmt *q = NULL;
    int rc, err = 0;

    if (!id || strlen(id) >= DS_ID_LEN)
        return ed_error_set(ED_ENOTFOUND, "no dataset %.40s", id ? id : "");
    if ((err = ed_store_prepare(&q, d->st,
                                "SELECT d.owner_id FROM datasets d WHERE d.id = ?2 AND " VISIBLE_SQL)) < 0)
        return err;
    sqlite3_bind_int64(q, 1, user);
    sqlite3_bind_text(q, 2, id, -1, SQLITE_STATIC);
    rc = sqlite3_step(q);
    if (rc == SQLITE_ROW) {
        int64_t owner = sqlite3_column_int64(q, 0);
        if (out_owner)
            *out_owner = owner;
        if (write && owner != user)
            err = ed_error_set(ED_EPERM, "only the owner may change dataset %s", id);
    } else if (rc == SQLITE_DONE) {
        err = ed_error_set(ED_ENOTFOUND, "no dataset %s", id);
    } else {
        err = ed_store_error(ed_store_db(d->st), rc, "dataset");
    }
    sqlite3_finalize(q);
    return err;
}

static int get_where(ds_dataset **out, ds *d, int64_t user, const char *where, const char *id,
                     int64_t owner, const char *slug)
{
    char sql[1024];
    sqlite3_stmt *q = NULL;
    int rc, err;

    *out = NULL;
    snprintf(sql, sizeof(sql), "SELECT " COLUMNS_SQL " FROM datasets d WHERE %s AND " VISIBLE_SQL, where);
    if ((err = ed_store_prepare(&q, d->st, sql)) < 0)
        return err;
    sqlite3_bind_int64(q, 1, user);
    if (id)
        sqlite3_bind_text(q, 2, id, -1, SQLITE_STATIC);
    else {
        sqlite3_bind_int64(q, 2, owner);
        sqlite3_bind_text(q, 3, slug, -1, SQLITE_STATIC);
    }
    rc = sqlite3_step(q);
    if (rc == SQLITE_ROW)
        err = row_read(out, q, user);
    else if (rc == SQLITE_DONE)
        err = ed_error_set(ED_ENOTFOUND, "no dataset %s", id ? id : slug);
    else
        err = ed_store_error(ed_store_db(d->st), rc, "dataset");
    sqlite3_finalize(q);
    return err;
}

int ds_dataset_get(ds_dataset **out, ds *d, int64_t user, const char *id)
{
    *out = NULL;
    if (!id || strlen(id) >= DS_ID_LEN)
        return ed_error_set(ED_ENOTFOUND, "no dataset %.40s", id ? id : "");
    return get_where(out, d, user, "d.id = ?2", id, 0, NULL);
}

int ds_dataset_get_by_slug(ds_dataset **out, ds *d, int64_t user, int64_t owner_id, const char *slug)
{
    *out = NULL;
    if (!slug || ds_slug_validate(slug, strlen(slug)) < 0)
        return ed_error_set(ED_ENOTFOUND, "no dataset %.70s", slug ? slug : "");
    return get_where(out, d, user, "d.owner_id = ?2 AND d.slug = ?3 COLLATE NOCASE", NULL, owner_id, slug);
}

/* ---- create, update ------------------------------------------------------ */

/* The fields of a spec, checked, as they go into the row. */
typedef struct fields {
    const char *name, *slug, *description, *license;
    char *tags_json;            /* owned */
    char slug_buf[DS_SLUG_MAX + 1];
    int visibility;
} fields;

static int slug_from_name(char out[DS_SLUG_MAX + 1], const char *name)
{
    size_t n = 0;

    for (const unsigned char *p = (const unsigned char *)name; *p && n < DS_SLUG_MAX; p++) {
        if (isalnum(*p))
            out[n++] = (char)tolower(*p);
        else if (n > 0 && out[n - 1] != '-')
            out[n++] = '-';
    }
    while (n > 0 && out[n - 1] == '-')
        n--;
    out[n] = '\0';
    if (n == 0)
        return ed_error_set(ED_EINVAL, "name has no letter or digit to make a slug from: give a slug");
    return 0;
}

static int fields_check(fields *f, const ds_dataset_spec *spec, bool create)
{
    int err;

    memset(f, 0, sizeof(*f));
    f->visibility = spec->visibility;
    if (spec->name && (err = ds_name_validate(spec->name, strlen(spec->name))) < 0)
        return err;
    f->name = spec->name;
    if (create && !spec->name)
        return ed_error_set(ED_EINVAL, "name is required");
    if (spec->slug) {
        if ((err = ds_slug_validate(spec->slug, strlen(spec->slug))) < 0)
            return err;
        f->slug = spec->slug;
    } else if (create) {
        if ((err = slug_from_name(f->slug_buf, spec->name)) < 0)
            return err;
        f->slug = f->slug_buf;
    }
    if (spec->description) {
        size_t n = strlen(spec->description);
        if (n > DS_DESC_MAX)
            return ed_error_set(ED_EINVAL, "description is longer than %d bytes", DS_DESC_MAX);
        if ((err = ds__text_check(spec->description, n, "description", true)) < 0)
            return err;
        f->description = spec->description;
    }
    if (spec->license) {
        size_t n = strlen(spec->license);
        if (n > DS_LICENSE_MAX)
            return ed_error_set(ED_EINVAL, "license is longer than %d bytes", DS_LICENSE_MAX);
        if ((err = ds__text_check(spec->license, n, "license", false)) < 0)
            return err;
        f->license = spec->license;
    }
    if (spec->visibility != -1 && (unsigned)spec->visibility > DS_PUBLIC)
        return ed_error_set(ED_EINVAL, "visibility must be private, unlisted or public");
    if (spec->ntags != (size_t)-1) {
        json_t *a;
        if (spec->ntags > DS_TAGS_MAX)
            return ed_error_set(ED_EINVAL, "more than %d tags", DS_TAGS_MAX);
        if ((a = json_array()) == NULL)
            return ed_error_set(ED_ENOMEM, "tags");
        for (size_t i = 0; i < spec->ntags; i++) {
            const char *t = spec->tags[i];
            size_t n = t ? strlen(t) : 0;
            if (n == 0 || n > DS_TAG_MAX) {
                json_decref(a);
                return ed_error_set(ED_EINVAL, "tag %zu must be 1 to %d bytes", i + 1, DS_TAG_MAX);
            }
            if ((err = ds__text_check(t, n, "a tag", false)) < 0) {
                json_decref(a);
                return err;
            }
            json_array_append_new(a, json_string(t));
        }
        f->tags_json = json_dumps(a, JSON_COMPACT);
        json_decref(a);
        if (!f->tags_json)
            return ed_error_set(ED_ENOMEM, "tags");
    }
    return 0;
}

int ds_dataset_create(ds_dataset **out, ds *d, int64_t user, const ds_dataset_spec *spec)
{
    fields f;
    char id[ED_UUID_LEN];
    sqlite3_stmt *q = NULL;
    int64_t now = ed_now_ms();
    int rc, err;

    *out = NULL;
    if ((err = fields_check(&f, spec, true)) < 0)
        goto done;
    ed_uuid4(id);
    if ((err = ed_store_prepare(&q, d->st,
                                "INSERT INTO datasets (id, owner_id, slug, name, description, license, tags, "
                                "visibility, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")) < 0)
        goto done;
    sqlite3_bind_text(q, 1, id, -1, SQLITE_STATIC);
    sqlite3_bind_int64(q, 2, user);
    sqlite3_bind_text(q, 3, f.slug, -1, SQLITE_STATIC);
    sqlite3_bind_text(q, 4, f.name, -1, SQLITE_STATIC);
    sqlite3_bind_text(q, 5, f.description ? f.description : "", -1, SQLITE_STATIC);
    sqlite3_bind_text(q, 6, f.license ? f.license : "", -1, SQLITE_STATIC);
    sqlite3_bind_text(q, 7, f.tags_json ? f.tags_json : "[]", -1, SQLITE_STATIC);
    sqlite3_bind_text(q, 8, ds_visibility_name(f.visibility < 0 ? DS_PRIVATE : (ds_visibility)f.visibility), -1,
                      SQLITE_STATIC);
    sqlite3_bind_int64(q, 9, now);
    sqlite3_bind_int64(q, 10, now);
    if ((rc = ed_store_step(q)) != SQLITE_DONE) {
        err = ed_store_error(ed_store_db(d->st), rc, "create dataset");
        if (err == ED_EEXISTS)
            err = ed_error_set(ED_EEXISTS, "you have a dataset with slug '%s' already", f.slug);
        goto done;
    }
    err = ds_dataset_get(out, d, user, id);
done:
    sqlite3_finalize(q);
    free(f.tags_json);
    return err;
}

int ds_dataset_update(ds_dataset **out, ds *d, int64_t user, const char *id, const ds_dataset_spec *change)
{
    fields f = {0};
    sqlite3_stmt *q = NULL;
    int rc, err;

    if (out)
        *out = NULL;
    if ((err = ds__access(d, user, id, true, NULL)) < 0 || (err = fields_check(&f, change, false)) < 0)
        goto done;
    if ((err = ed_store_prepare(&q, d->st,
                                "UPDATE datasets SET slug = COALESCE(?2, slug), name = COALESCE(?3, name), "
                                "description = COALESCE(?4, description), license = COALESCE(?5, license), "
                                "tags = COALESCE(?6, tags), visibility = COALESCE(?7, visibility), "
                                "updated_at = ?8 WHERE id = ?1")) < 0)
        goto done;
    sqlite3_bind_text(q, 1, id, -1, SQLITE_STATIC);
    sqlite3_bind_text(q, 2, f.slug, -1, SQLITE_STATIC);     /* NULL binds NULL: kept */
    sqlite3_bind_text(q, 3, f.name, -1, SQLITE_STATIC);
    sqlite3_bind_text(q, 4, f.description, -1, SQLITE_STATIC);
    sqlite3_bind_text(q, 5, f.license, -1, SQLITE_STATIC);
    sqlite3_bind_text(q, 6, f.tags_json, -1, SQLITE_STATIC);
    if (f.visibility >= 0)
        sqlite3_bind_text(q, 7, ds_visibility_name((ds_visibility)f.visibility), -1, SQLITE_STATIC);
    sqlite3_bind_int64(q, 8, ed_now_ms());
    if ((rc = ed_store_step(q)) != SQLITE_DONE) {
        err = ed_store_error(ed_store_db(d->st), rc, "update dataset");
        if (err == ED_EEXISTS)
            err = ed_error_set(ED_EEXISTS, "you have a dataset with slug '%s' already", f.slug);
        goto done;
    }
    if (out)
        err = ds_dataset_get(out, d, user, id);
done:
    sqlite3_finalize(q);
    free(f.tags_json);
    return err;
}

/* ---- delete -------------------------------------------------------------- */

static int delete_body(void *ctx)
{
    void **a = ctx;
    ds *d = a[0];
    const char *id = a[1];
    static const char *const sql[] = {
        /* the manifests first: dataset_files references versions */
        "DELETE FROM dataset_files WHERE dataset_id = ?1",
        "DELETE FROM dataset_versions WHERE dataset_id = ?1",
        "DELETE FROM dataset_draft_files WHERE dataset_id = ?1",
        "DELETE FROM dataset_uploads WHERE dataset_id = ?1",
        "DELETE FROM dataset_shares WHERE dataset_id = ?1",
        "DELETE FROM project_datasets WHERE dataset_id = ?1",
        "DELETE FROM datasets WHERE id = ?1",
    };
    for (size_t i = 0; i < sizeof(sql) / sizeof(sql[0]); i++) {
        sqlite3_stmt *q = NULL;
        int rc, err;
        if ((err = ed_store_prepare(&q, d->st, sql[i])) < 0)
            return err;
        sqlite3_bind_text(q, 1, id, -1, SQLITE_STATIC);
        rc = sqlite3_step(q);
        sqlite3_finalize(q);
        if (rc != SQLITE_DONE)
            return ed_store_error(ed_store_db(d->st), rc, "delete dataset");
    }
    return 0;
}

/* The ids of a dataset's uploads, so their files can go after the rows. */
static int upload_ids(char (**out)[DS_ID_LEN], size_t *n, ds *d, const char *id)
{
    sqlite3_stmt *q = NULL;
    char(*ids)[DS_ID_LEN] = NULL;
    size_t cap = 0;
    int rc, err;

    *out = NULL;
    *n = 0;
    if ((err = ed_store_prepare(&q, d->st, "SELECT id FROM dataset_uploads WHERE dataset_id = ?")) < 0)
        return err;
    sqlite3_bind_text(q, 1, id, -1, SQLITE_STATIC);
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        if (*n == cap) {
            void *p = realloc(ids, (cap = cap ? cap * 2 : 8) * sizeof(*ids));
            if (!p) {
                sqlite3_finalize(q);
                free(ids);
                return ed_error_set(ED_ENOMEM, "uploads");
            }
            ids = p;
        }
        snprintf(ids[(*n)++], DS_ID_LEN, "%s", (const char *)sqlite3_column_text(q, 0));
    }
    sqlite3_finalize(q);
    if (rc != SQLITE_DONE) {
        free(ids);
        return ed_store_error(ed_store_db(d->st), rc, "uploads");
    }
    *out = ids;
    return 0;
}

int ds_dataset_delete(ds *d, int64_t user, const char *id)
{
    char why[256];
    char(*ups)[DS_ID_LEN] = NULL;
    size_t nups = 0;
    void *ctx[2] = {d, (void *)id};
    int err;

    if ((err = ds__access(d, user, id, true, NULL)) < 0)
        return err;
    if ((err = ds__in_use(d, id, 0, why, sizeof(why))) < 0)
        return err;
    if (err > 0)
        return ed_error_set(ED_ECONFLICT, "dataset %s is in use: %s", id, why);
    if ((err = upload_ids(&ups, &nups, d, id)) < 0)
        return err;
    if ((err = ed_store_tx(d->st, delete_body, ctx)) < 0) {
        free(ups);
        return err;
    }
    /* Rows are gone: what is left on disk is unreachable and safe to remove
     * (a crash here leaves files that ds_recover removes). */
    for (size_t i = 0; i < nups; i++)
        ds__remove_all(d->uploads_fd, ups[i]);
    free(ups);
    ds__tree_remove(d, id, 0);
    return 0;
}

/* ---- list ---------------------------------------------------------------- */

void ds_dataset_list_free(ds_dataset_list *l)
{
    if (!l)
        return;
    for (size_t i = 0; i < l->count; i++)
        ds_dataset_free(l->items[i]);
    free(l->items);
    free(l);
}

int ds_dataset_list_get(ds_dataset_list **out, ds *d, int64_t user, const ds_list_query *query)
{
    static const ds_list_query none = {0};
    const ds_list_query *qq = query ? query : &none;
    size_t limit = qq->limit == 0 || qq->limit > DS_LIST_MAX ? DS_LIST_MAX : qq->limit;
    ds_dataset_list *l;
    sqlite3_stmt *q = NULL;
    char *like = NULL;
    int rc, err;

    *out = NULL;
    if ((l = calloc(1, sizeof(*l))) == NULL || (l->items = calloc(limit, sizeof(*l->items))) == NULL) {
        free(l);
        return ed_error_set(ED_ENOMEM, "list");
    }
    if (qq->q && qq->q[0]) {
        /* LIKE with '\' escaping the pattern characters the user typed */
        size_t n = strlen(qq->q);
        char *p;
        if (n > 200) {
            ds_dataset_list_free(l);
            return ed_error_set(ED_EINVAL, "search text is longer than 200 bytes");
        }
        if ((like = p = malloc(2 * n + 3)) == NULL) {
            ds_dataset_list_free(l);
            return ed_error_set(ED_ENOMEM, "list");
        }
        *p++ = '%';
        for (const char *s = qq->q; *s; s++) {
            if (*s == '%' || *s == '_' || *s == '\\')
                *p++ = '\\';
            *p++ = *s;
        }
        *p++ = '%';
        *p = '\0';
    }
    err = ed_store_prepare(&q, d->st,
                           "SELECT " COLUMNS_SQL " FROM datasets d WHERE "
                           "(d.owner_id = ?1 OR d.visibility = 'public' OR EXISTS (SELECT 1 FROM dataset_shares s "
                           "WHERE s.dataset_id = d.id AND s.user_id = ?1)) "
                           "AND (?2 IS NULL OR d.name LIKE ?2 ESCAPE '\\' OR d.slug LIKE ?2 ESCAPE '\\' "
                           "OR d.description LIKE ?2 ESCAPE '\\') "
                           "AND (?3 = 0 OR d.owner_id = ?3) "
                           "AND (?4 IS NULL OR EXISTS (SELECT 1 FROM json_each(d.tags) t WHERE t.value = ?4)) "
                           "ORDER BY d.updated_at DESC, d.id LIMIT ?5 OFFSET ?6");
    if (err < 0)
        goto fail;
    sqlite3_bind_int64(q, 1, user);
    sqlite3_bind_text(q, 2, like, -1, SQLITE_STATIC);
    sqlite3_bind_int64(q, 3, qq->owner_id);
    sqlite3_bind_text(q, 4, qq->tag, -1, SQLITE_STATIC);
    sqlite3_bind_int64(q, 5, (int64_t)limit);
    sqlite3_bind_int64(q, 6, (int64_t)qq->offset);
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        if ((err = row_read(&l->items[l->count], q, user)) < 0)
            goto fail;
        l->count++;
    }
    if (rc != SQLITE_DONE) {
        err = ed_store_error(ed_store_db(d->st), rc, "list datasets");
        goto fail;
    }
    sqlite3_finalize(q);
    free(like);
    *out = l;
    return 0;
fail:
    sqlite3_finalize(q);
    free(like);
    ds_dataset_list_free(l);
    return err;
}

/* ---- shares -------------------------------------------------------------- */

static int share_set(ds *d, int64_t user, const char *id, int64_t other, bool add)
{
    sqlite3_stmt *q = NULL;
    int rc, err;

    if ((err = ds__access(d, user, id, true, NULL)) < 0)
        return err;
    if (add && other == user)
        return ed_error_set(ED_EINVAL, "the owner needs no share");
    err = ed_store_prepare(&q, d->st,
                           add ? "INSERT OR IGNORE INTO dataset_shares (dataset_id, user_id, created_at) "
                                 "VALUES (?1, ?2, ?3)"
                               : "DELETE FROM dataset_shares WHERE dataset_id = ?1 AND user_id = ?2");
    if (err < 0)
        return err;
    sqlite3_bind_text(q, 1, id, -1, SQLITE_STATIC);
    sqlite3_bind_int64(q, 2, other);
    if (add)
        sqlite3_bind_int64(q, 3, ed_now_ms());
    rc = ed_store_step(q);
    if (rc != SQLITE_DONE) {
        err = ed_store_error(ed_store_db(d->st), rc, "share");
        if ((rc & 0xff) == SQLITE_CONSTRAINT)
            err = ed_error_set(ED_ENOTFOUND, "no user %lld", (long long)other);
    }
    sqlite3_finalize(q);
    return err;
}

int ds_share_add(ds *d, int64_t user, const char *id, int64_t other)
{
    return share_set(d, user, id, other, true);
}

int ds_share_remove(ds *d, int64_t user, const char *id, int64_t other)
{
    return share_set(d, user, id, other, false);
}
