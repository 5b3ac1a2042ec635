/*
 * datasets_routes.c - datasets over HTTP (API.md "Datasets"): the datasets
 * themselves, their draft, resumable uploads, versions, shares and the
 * datasets a project mounts. The logic and every access check live in
 * datasets/ (ds.h); this file parses requests and shapes responses
 * (datasets_json.c).
 *
 * Access: another user's private dataset answers 404 on every route (it does
 * not exist for the caller); changing one the caller can only read is 403.
 * An upload is its user's: anyone else's, or an unknown one, is 404.
 *
 * Bodies that carry file bytes (a draft file's PUT, an upload's chunk) are
 * GW_BODY_STREAM routes: the handler checks the request before any byte is
 * read, then the body streams to disk a read buffer at a time (server.c,
 * gw_request_body_sink), bounded by the dataset file limit rather than
 * max_body_bytes.
 */
#include "datasets_int.h"
#include "acct.h"
#include "proj.h"
#include "quota.h"

#include "ed_error.h"
#include "ed_log.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static ds *ds_of(gw_request *req) { return req->srv->datasets; }

static int respond(gw_response *res, int status, json_t *body)
{
    if (body == NULL)
        return ed_error_set(ED_ENOMEM, "response body");
    return gw_respond_json(res, status, body);
}

/* The storage limit of the caller's tier for datasets (quota/), 0: none. */
static int64_t quota_of(gw_request *req)
{
    quota_tier t;

    if (req->auth.tier == NULL || quota_tier_get(&t, req->srv->store, req->auth.tier) < 0) {
        ed_error_clear();
        return 0;
    }
    return t.dataset_bytes;
}

/* ---- datasets -------------------------------------------------------------- */

/* The fields of a create or update body into `spec` (strings borrowed from
 * the body, tags in the arena). */
static int parse_spec(ds_dataset_spec *spec, gw_request *req, const json_t *body)
{
    const char *vis = NULL;
    json_t *tags = NULL;
    int err;

    if ((err = ed_json_get_str(&spec->name, body, "name", false)) < 0 ||
        (err = ed_json_get_str(&spec->slug, body, "slug", false)) < 0 ||
        (err = ed_json_get_str(&spec->description, body, "description", false)) < 0 ||
        (err = ed_json_get_str(&spec->license, body, "license", false)) < 0 ||
        (err = ed_json_get_str(&vis, body, "visibility", false)) < 0 ||
        (err = ed_json_get_array(&tags, body, "tags", false)) < 0)
        return err;
    if (vis) {
        ds_visibility v;
        if ((err = ds_visibility_parse(&v, vis)) < 0)
            return ed_error_set(ED_EINVAL, "field 'visibility' must be \"private\", \"unlisted\" "
                                           "or \"public\"");
        spec->visibility = (int)v;
    }
    if (tags) {
        size_t n = json_array_size(tags);
        const char **t;
        if (n > DS_TAGS_MAX)
            return ed_error_set(ED_EINVAL, "field 'tags' has %zu tags; at most %d", n, DS_TAGS_MAX);
        if ((t = ed_arena_calloc(req->arena, n + 1, sizeof(*t))) == NULL)
            return ed_error_set(ED_ENOMEM, "tags");
        for (size_t i = 0; i < n; i++) {
            const json_t *v = json_array_get(tags, i);
            if (!json_is_string(v))
                return ed_error_set(ED_EINVAL, "field 'tags' must be an array of strings");
            t[i] = json_string_value(v);
        }
        spec->tags = t;
        spec->ntags = n;
    }
    return 0;
}

/* POST /api/v1/datasets {name, slug?, description?, license?, tags?, visibility?} */
static int create_dataset(gw_request *req, gw_response *res)
{
    ds_dataset_spec spec = DS_SPEC_KEEP;
    ds_dataset *s = NULL;
    json_t *body, *out;
    int err;

    if ((err = gw_request_json(&body, req)) < 0 || (err = parse_spec(&spec, req, body)) < 0)
        return err;
    if (spec.name == NULL)
        return ed_error_set(ED_EINVAL, "field 'name' is required");
    if ((err = ds_dataset_create(&s, ds_of(req), req->auth.user_id, &spec)) < 0)
        return err;
    out = gw__ds_dataset_json(req->srv, s);
    ds_dataset_free(s);
    return respond(res, 201, out);
}

/* A non-negative integer query parameter, `dflt` when absent. */
static int query_size(size_t *out, gw_request *req, const char *name, size_t dflt, size_t max)
{
    const char *v = gw_request_query(req, name);
    char *end;
    long long n;

    *out = dflt;
    if (v == NULL)
        return 0;
    errno = 0;
    n = strtoll(v, &end, 10);
    if (*v == '\0' || *end != '\0' || errno != 0 || n < 0 || (unsigned long long)n > max)
        return ed_error_set(ED_EINVAL, "%s must be an integer from 0 to %zu", name, max);
    *out = (size_t)n;
    return 0;
}

/* GET /api/v1/datasets?q=&owner=<username>&tag=&limit=&offset= ->
 * {items, next_offset}: next_offset null on the last page. */
static int list_datasets(gw_request *req, gw_response *res)
{
    ds_list_query q = {0};
    ds_dataset_list *l = NULL;
    const char *owner = gw_request_query(req, "owner");
    json_t *items;
    size_t limit;
    int err;

    if ((err = query_size(&limit, req, "limit", 50, DS_LIST_MAX)) < 0 ||
        (err = query_size(&q.offset, req, "offset", 0, (size_t)1 << 40)) < 0)
        return err;
    if (limit == 0)
        return ed_error_set(ED_EINVAL, "limit must be an integer from 1 to %d", DS_LIST_MAX);
    q.q = gw_request_query(req, "q");
    q.tag = gw_request_query(req, "tag");
    if (q.q && q.q[0] == '\0')
        q.q = NULL;
    if (q.tag && q.tag[0] == '\0')
        q.tag = NULL;
    if ((items = json_array()) == NULL)
        return ed_error_set(ED_ENOMEM, "dataset list");
    if (owner && owner[0]) {
        int64_t oid = 0;
        if (acct_user_id(&oid, req->srv->store, owner) < 0) {
            ed_error_clear();   /* nobody of that name owns anything */
            return respond(res, 200, json_pack("{s:o, s:n}", "items", items, "next_offset"));
        }
        q.owner_id = oid;
    }
    q.limit = limit + 1;   /* one more: is there a next page? */
    if ((err = ds_dataset_list_get(&l, ds_of(req), req->auth.user_id, &q)) < 0) {
        json_decref(items);
        return err;
    }
    for (size_t i = 0; i < l->count && i < limit; i++)
        json_array_append_new(items, gw__ds_dataset_json(req->srv, l->items[i]));
    {
        json_t *out = l->count > limit
                          ? json_pack("{s:o, s:I}", "items", items, "next_offset",
                                      (json_int_t)(q.offset + limit))
                          : json_pack("{s:o, s:n}", "items", items, "next_offset");
        ds_dataset_list_free(l);
        return respond(res, 200, out);
    }
}

static int get_dataset(gw_request *req, gw_response *res)
{
    ds_dataset *s = NULL;
    json_t *out;
    int err;

    if ((err = ds_dataset_get(&s, ds_of(req), req->auth.user_id, req->params[0])) < 0)
        return err;
    out = gw__ds_dataset_json(req->srv, s);
    ds_dataset_free(s);
    return respond(res, 200, out);
}

/* PATCH /api/v1/datasets/{id}: the fields given change, the rest stay. */
static int update_dataset(gw_request *req, gw_response *res)
{
    ds_dataset_spec spec = DS_SPEC_KEEP;
    ds_dataset *s = NULL;
    json_t *body, *out;
    int err;

    if ((err = gw_request_json(&body, req)) < 0 || (err = parse_spec(&spec, req, body)) < 0)
        return err;
    if ((err = ds_dataset_update(&s, ds_of(req), req->auth.user_id, req->params[0], &spec)) < 0)
        return err;
    out = gw__ds_dataset_json(req->srv, s);
    ds_dataset_free(s);
    return respond(res, 200, out);
}

/* DELETE /api/v1/datasets/{id}: 409 naming the reason while a version is used. */
static int delete_dataset(gw_request *req, gw_response *res)
{
    int err = ds_dataset_delete(ds_of(req), req->auth.user_id, req->params[0]);

    return err < 0 ? err : gw_respond_empty(res, 204);
}

/* POST|DELETE /api/v1/datasets/{id}/shares/{username} */
static int share_user(gw_request *req, int64_t *out)
{
    if (acct_user_id(out, req->srv->store, req->params[1]) < 0)
        return ed_error_set(ED_ENOTFOUND, "no user named '%s'", req->params[1]);
    return 0;
}

static int add_share(gw_request *req, gw_response *res)
{
    int64_t other;
    int err;

    if ((err = share_user(req, &other)) < 0 ||
        (err = ds_share_add(ds_of(req), req->auth.user_id, req->params[0], other)) < 0)
        return err;
    return gw_respond_empty(res, 204);
}

static int remove_share(gw_request *req, gw_response *res)
{
    int64_t other;
    int err;

    if ((err = share_user(req, &other)) < 0 ||
        (err = ds_share_remove(ds_of(req), req->auth.user_id, req->params[0], other)) < 0)
        return err;
    return gw_respond_empty(res, 204);
}

/* ---- the draft ---------------------------------------------------------------- */

static json_t *file_list_json(const ds_file_list *l)
{
    json_t *files = gw__ds_files_json(l);

    if (files == NULL)
        return NULL;
    return json_pack("{s:o, s:I, s:I}", "files", files, "file_count",
                     (json_int_t)(l ? l->count : 0), "size_bytes",
                     (json_int_t)(l ? l->size_bytes : 0));
}

/* GET /api/v1/datasets/{id}/draft -> {files, file_count, size_bytes} (owner) */
static int get_draft(gw_request *req, gw_response *res)
{
    ds_file_list *l = NULL;
    json_t *out;
    int err;

    if ((err = ds_draft_list(&l, ds_of(req), req->auth.user_id, req->params[0])) < 0)
        return err;
    out = file_list_json(l);
    ds_file_list_free(l);
    return respond(res, 200, out);
}

/* A draft file's PUT: the body goes to an unnamed file under DATA/datasets/tmp
 * (O_TMPFILE: nothing to clean up after a crash), then ds_draft_put_fd moves
 * it into the blob store. */
typedef struct put_ctx {
    int fd;
    const char *id, *path;
    int64_t quota;
} put_ctx;

static int put_write(void *ctx, gw_request *req, const char *data, size_t n)
{
    put_ctx *c = ctx;

    (void)req;
    return gw__spool_write(c->fd, data, n);
}

static int put_end(void *ctx, gw_request *req, gw_response *res)
{
    put_ctx *c = ctx;
    ds_file f = {0};
    json_t *out;
    int err;

    if (lseek(c->fd, 0, SEEK_SET) < 0)
        err = ed_error_set(ED_EIO, "rewinding the file: %s", strerror(errno));
    else
        err = ds_draft_put_fd(&f, ds_of(req), req->auth.user_id, c->id, c->path, c->fd, NULL,
                              c->quota);
    close(c->fd);
    free(c);
    if (err < 0)
        return err;
    out = gw__ds_file_json(&f);
    free(f.path);
    return respond(res, 200, out);
}

static void put_abort(void *ctx)
{
    put_ctx *c = ctx;

    close(c->fd);
    free(c);
}

static const gw_body_sink put_sink = {put_write, put_end, put_abort};

/* The caller must own dataset `id`: 404 when it cannot see it, 403 when it
 * only reads it. Checked before any body byte. */
static int check_writer(gw_request *req, const char *id)
{
    ds_dataset *s = NULL;
    int err;

    if ((err = ds_dataset_get(&s, ds_of(req), req->auth.user_id, id)) < 0)
        return err;
    err = s->can_write ? 0 : ed_error_set(ED_EPERM, "only the owner changes dataset %s", id);
    ds_dataset_free(s);
    return err;
}

/* PUT /api/v1/datasets/{id}/draft/files/{path*} (raw body, streamed) */
static int put_draft_file(gw_request *req, gw_response *res)
{
    const char *path = req->params[1];
    char tmp[700];
    put_ctx *c;
    int err;

    (void)res;
    if ((err = ds_path_validate(path, strlen(path))) < 0 || (err = check_writer(req, req->params[0])) < 0)
        return err;
    if ((c = calloc(1, sizeof(*c))) == NULL)
        return ed_error_set(ED_ENOMEM, "upload");
    snprintf(tmp, sizeof(tmp), "%s/datasets/tmp", req->srv->cfg.data_dir);
    if ((err = gw__spool_open(&c->fd, tmp)) < 0) {
        free(c);
        return err;
    }
    c->id = req->params[0];
    c->path = path;
    c->quota = quota_of(req);
    if ((err = gw_request_body_sink(req, &put_sink, c, DS_LIMITS_DEFAULT.file_max_bytes)) < 0)
        put_abort(c);
    return err;
}

/* DELETE /api/v1/datasets/{id}/draft/files/{path*} */
static int delete_draft_file(gw_request *req, gw_response *res)
{
    int err = ds_draft_remove(ds_of(req), req->auth.user_id, req->params[0], req->params[1]);

    return err < 0 ? err : gw_respond_empty(res, 204);
}

/* ---- versions ----------------------------------------------------------------- */

/* {n} of a version route: a positive number or "latest" (0 for ds.h). */
static int parse_number(int64_t *out, const char *s)
{
    char *end;
    long long n;

    if (strcmp(s, "latest") == 0) {
        *out = 0;
        return 0;
    }
    errno = 0;
    n = strtoll(s, &end, 10);
    if (*s < '0' || *s > '9' || *end != '\0' || errno != 0 || n < 1)
        return ed_error_set(ED_EINVAL, "version '%.40s' is not a positive number or \"latest\"", s);
    *out = n;
    return 0;
}

/* POST /api/v1/datasets/{id}/versions {message, unpack?: [paths]}: each
 * archive named is unpacked in the draft, then the draft is published. */
static int publish_version(gw_request *req, gw_response *res)
{
    const char *message = NULL;
    json_t *body, *unpack = NULL, *out;
    ds_version *v = NULL;
    int err;

    if ((err = gw_request_json(&body, req)) < 0 ||
        (err = ed_json_get_str(&message, body, "message", false)) < 0 ||
        (err = ed_json_get_array(&unpack, body, "unpack", false)) < 0)
        return err;
    if (message && strlen(message) > DS_MESSAGE_MAX)
        return ed_error_set(ED_EINVAL, "field 'message' is longer than %d bytes", DS_MESSAGE_MAX);
    if (unpack && json_array_size(unpack) > DS_ATTACH_MAX * 5)
        return ed_error_set(ED_EINVAL, "field 'unpack' names more than %d archives",
                            DS_ATTACH_MAX * 5);
    for (size_t i = 0; unpack && i < json_array_size(unpack); i++)
        if (!json_is_string(json_array_get(unpack, i)))
            return ed_error_set(ED_EINVAL, "field 'unpack' must be an array of paths");
    for (size_t i = 0; unpack && i < json_array_size(unpack); i++) {
        const char *p = json_string_value(json_array_get(unpack, i));
        if ((err = ds_draft_unpack(NULL, ds_of(req), req->auth.user_id, req->params[0], p, NULL,
                                   quota_of(req))) < 0)
            return err;
    }
    if ((err = ds_version_publish(&v, ds_of(req), req->auth.user_id, req->params[0],
                                  message ? message : "", NULL)) < 0)
        return err;
    /* previews computed before anyone asks (a background worker; returns at once) */
    if (ds_previews_enqueue_version(ds_of(req), req->params[0], v->number) < 0) {
        ed_log_warn("datasets.preview", "cannot queue the previews of %s v%lld: %s", req->params[0],
                    (long long)v->number, ed_error_last());
        ed_error_clear();
    }
    out = gw__ds_version_json(v);
    ds_version_free(v);
    return respond(res, 201, out);
}

/* GET /api/v1/datasets/{id}/versions -> {items} newest first, no manifests */
static int list_versions(gw_request *req, gw_response *res)
{
    ds_version **v = NULL;
    size_t n = 0;
    json_t *items;
    int err;

    if ((err = ds_version_list(&v, &n, ds_of(req), req->auth.user_id, req->params[0])) < 0)
        return err;
    if ((items = json_array()) == NULL) {
        ds_version_list_free(v, n);
        return ed_error_set(ED_ENOMEM, "version list");
    }
    for (size_t i = 0; i < n; i++)
        json_array_append_new(items, gw__ds_version_json(v[i]));
    ds_version_list_free(v, n);
    return respond(res, 200, json_pack("{s:o}", "items", items));
}

/* GET /api/v1/datasets/{id}/versions/{n} (n or "latest"): with its manifest */
static int get_version(gw_request *req, gw_response *res)
{
    ds_version *v = NULL;
    int64_t n = 0;
    json_t *out;
    int err;

    if ((err = parse_number(&n, req->params[1])) < 0 ||
        (err = ds_version_get(&v, ds_of(req), req->auth.user_id, req->params[0], n)) < 0)
        return err;
    out = gw__ds_version_json(v);
    ds_version_free(v);
    return respond(res, 200, out);
}

static int delete_version(gw_request *req, gw_response *res)
{
    int64_t n = 0;
    int err;

    if ((err = parse_number(&n, req->params[1])) < 0)
        return err;
    if (n == 0) {
        ds_dataset *s = NULL;
        if ((err = ds_dataset_get(&s, ds_of(req), req->auth.user_id, req->params[0])) < 0)
            return err;
        n = s->latest_version;
        ds_dataset_free(s);
        if (n == 0)
            return ed_error_set(ED_ENOTFOUND, "dataset %s has no version", req->params[0]);
    }
    if ((err = ds_version_delete(ds_of(req), req->auth.user_id, req->params[0], n)) < 0)
        return err;
    return gw_respond_empty(res, 204);
}

/* ---- resumable uploads -------------------------------------------------------- */

/* POST /api/v1/datasets/{id}/uploads {path, size, sha256} -> 201 {upload_id, offset, size} */
static int open_upload(gw_request *req, gw_response *res)
{
    const char *path = NULL, *sha = NULL;
    char uid[DS_ID_LEN];
    int64_t size = -1;
    json_t *body;
    int err;

    if ((err = gw_request_json(&body, req)) < 0 ||
        (err = ed_json_get_str(&path, body, "path", true)) < 0 ||
        (err = ed_json_get_str(&sha, body, "sha256", true)) < 0 ||
        (err = gw_json_int(&size, body, "size", 0, INT64_MAX, true)) < 0)
        return err;
    if ((err = ds_upload_open(uid, ds_of(req), req->auth.user_id, req->params[0], path, size, sha,
                              quota_of(req))) < 0)
        return err;
    return respond(res, 201, json_pack("{s:s, s:I, s:I}", "upload_id", uid, "offset",
                                       (json_int_t)0, "size", (json_int_t)size));
}

/* GET /api/v1/uploads/{upload_id} -> {offset, size} */
static int upload_status(gw_request *req, gw_response *res)
{
    int64_t off, size;
    int err;

    if ((err = ds_upload_status(&off, &size, ds_of(req), req->auth.user_id, req->params[0])) < 0)
        return err;
    return respond(res, 200, json_pack("{s:s, s:I, s:I}", "upload_id", req->params[0], "offset",
                                       (json_int_t)off, "size", (json_int_t)size));
}

static int cancel_upload(gw_request *req, gw_response *res)
{
    int err = ds_upload_cancel(ds_of(req), req->auth.user_id, req->params[0]);

    return err < 0 ? err : gw_respond_empty(res, 204);
}

/* "bytes a-b/size" (b inclusive), or "bytes STAR/0" for an empty file (STAR
 * being '*'). ED_EINVAL for anything else. */
static int parse_content_range(int64_t *a, int64_t *b, int64_t *size, const char *s)
{
    unsigned long long x, y, z;
    int n = 0;

    if (s == NULL)
        return ed_error_set(ED_EINVAL, "a chunk needs a Content-Range: bytes <first>-<last>/<size>");
    if (sscanf(s, "bytes */%llu%n", &z, &n) == 1 && s[n] == '\0' && z == 0) {
        *a = 0;
        *b = -1;
        *size = 0;
        return 0;
    }
    n = 0;
    if (sscanf(s, "bytes %llu-%llu/%llu%n", &x, &y, &z, &n) != 3 || s[n] != '\0' ||
        strchr(s, '+') != NULL || strstr(s, "--") != NULL || strstr(s, " -") != NULL)
        return ed_error_set(ED_EINVAL, "Content-Range '%.80s' is not bytes <first>-<last>/<size>", s);
    if (x > y || y >= z || z > (unsigned long long)INT64_MAX)
        return ed_error_set(ED_EINVAL, "Content-Range '%.80s' is inconsistent (first <= last < size)",
                            s);
    *a = (int64_t)x;
    *b = (int64_t)y;
    *size = (int64_t)z;
    return 0;
}

typedef struct chunk_ctx {
    ds_upload_chunk *c;
    int64_t want, got;      /* bytes the Content-Range announced, bytes received */
} chunk_ctx;

static int chunk_write(void *ctx, gw_request *req, const char *data, size_t n)
{
    chunk_ctx *c = ctx;

    (void)req;
    if (c->got + (int64_t)n > c->want)
        return ed_error_set(ED_EINVAL, "the body is longer than the Content-Range's %lld bytes",
                            (long long)c->want);
    c->got += (int64_t)n;
    return ds_upload_chunk_write(c->c, data, n);
}

static int chunk_end(void *ctx, gw_request *req, gw_response *res)
{
    chunk_ctx *c = ctx;
    ds_file f = {0};
    int64_t off = 0;
    bool done = false;
    json_t *out;
    int err;

    if (c->got != c->want) {
        ds_upload_chunk_abort(c->c);
        err = ed_error_set(ED_EINVAL, "the body has %lld bytes but the Content-Range says %lld",
                           (long long)c->got, (long long)c->want);
        free(c);
        return err;
    }
    err = ds_upload_chunk_end(&off, &done, &f, c->c);
    free(c);
    if (err < 0)
        return err;
    out = json_pack("{s:s, s:I, s:b}", "upload_id", req->params[0], "offset", (json_int_t)off,
                    "done", (int)done);
    if (out && done)
        json_object_set_new(out, "file", gw__ds_file_json(&f));
    free(f.path);
    return respond(res, 200, out);
}

static void chunk_abort(void *ctx)
{
    chunk_ctx *c = ctx;

    ds_upload_chunk_abort(c->c);
    free(c);
}

static const gw_body_sink chunk_sink = {chunk_write, chunk_end, chunk_abort};

/* 409 {error, offset, size}: the chunk does not start where the upload is. */
static int respond_offset_conflict(gw_request *req, gw_response *res, int64_t start, int64_t off,
                                   int64_t size)
{
    char msg[200];

    snprintf(msg, sizeof(msg), "the chunk starts at byte %lld but the upload's offset is %lld: "
                               "send from there",
             (long long)start, (long long)off);
    return respond(res, 409, json_pack("{s:{s:s, s:s, s:s}, s:I, s:I}", "error", "code", "conflict",
                                       "message", msg, "request_id", req->request_id, "offset",
                                       (json_int_t)off, "size", (json_int_t)size));
}

/* PUT /api/v1/uploads/{upload_id} with Content-Range (streamed): the begin
 * step checks the upload, the range and the offset before any byte. */
static int put_chunk(gw_request *req, gw_response *res)
{
    int64_t a = 0, b = 0, size = 0, off = 0, have = 0, len = 0;
    chunk_ctx *c;
    int err;

    if ((err = ds_upload_status(&off, &have, ds_of(req), req->auth.user_id, req->params[0])) < 0 ||
        (err = parse_content_range(&a, &b, &size, gw_request_header(req, "Content-Range"))) < 0)
        return err;
    if (size != have)
        return ed_error_set(ED_EINVAL, "Content-Range says the file has %lld bytes; the upload was "
                                       "opened for %lld",
                            (long long)size, (long long)have);
    if (gw_request_content_length(&len, req) == 0 && len != b - a + 1)
        return ed_error_set(ED_EINVAL, "Content-Length %lld does not match the Content-Range's %lld "
                                       "bytes",
                            (long long)len, (long long)(b - a + 1));
    if (a != off)
        return respond_offset_conflict(req, res, a, off, have);
    if ((c = calloc(1, sizeof(*c))) == NULL)
        return ed_error_set(ED_ENOMEM, "chunk");
    c->want = b - a + 1;
    if ((err = ds_upload_chunk_begin(&c->c, ds_of(req), req->auth.user_id, req->params[0], a)) < 0) {
        free(c);
        if (err == ED_ECONFLICT && ds_upload_status(&off, &have, ds_of(req), req->auth.user_id,
                                                    req->params[0]) == 0 && off != a)
            return respond_offset_conflict(req, res, a, off, have);
        return err;
    }
    if ((err = gw_request_body_sink(req, &chunk_sink, c, c->want)) < 0)
        chunk_abort(c);
    return err;
}

/* ---- what a project mounts ---------------------------------------------------- */

/* 0 when `user` may change project `pid` (its owner, as projects/ decides
 * for every write); ED_ENOTFOUND when it cannot see it, ED_EPERM else. */
static int check_project(gw_request *req, const char *pid, bool write)
{
    proj *p = NULL;
    int err;

    if ((err = proj_get(&p, req->srv->projects, req->auth.user_id, pid)) < 0)
        return err;
    err = !write || p->owner_id == req->auth.user_id
              ? 0
              : ed_error_set(ED_EPERM, "only the owner of project %s changes its datasets", pid);
    proj_free(p);
    return err;
}

/* The list as GET answers it: each item with its dataset's owner, slug, name
 * and mount path (null when the dataset is no longer visible to the caller). */
static int attachments_json(json_t **out, gw_request *req, const char *pid)
{
    ds_attachment *a = NULL;
    size_t n = 0;
    json_t *items;
    int err;

    *out = NULL;
    if ((err = ds_project_datasets_get(&a, &n, ds_of(req), pid)) < 0)
        return err;
    if ((items = json_array()) == NULL) {
        free(a);
        return ed_error_set(ED_ENOMEM, "attachments");
    }
    for (size_t i = 0; i < n; i++) {
        ds_dataset *s = NULL;
        json_t *it = json_pack("{s:s}", "dataset_id", a[i].dataset_id);
        if (it == NULL)
            continue;
        json_object_set_new(it, "version", a[i].version > 0 ? json_integer(a[i].version)
                                                            : json_string("latest"));
        if (ds_dataset_get(&s, ds_of(req), req->auth.user_id, a[i].dataset_id) == 0) {
            char owner[40], mount[200];
            gw__ds_owner_name(owner, sizeof(owner), req->srv, s->owner_id);
            snprintf(mount, sizeof(mount), GW_DS_MOUNT_ROOT "/%s-%s", owner, s->slug);
            json_object_set_new(it, "owner", json_string(owner));
            json_object_set_new(it, "slug", json_string(s->slug));
            json_object_set_new(it, "name", json_string(s->name));
            json_object_set_new(it, "latest_version", json_integer(s->latest_version));
            json_object_set_new(it, "mount_path", json_string(mount));
            json_object_set_new(it, "available", json_true());
            ds_dataset_free(s);
        } else {
            ed_error_clear();
            json_object_set_new(it, "available", json_false());
        }
        json_array_append_new(items, it);
    }
    free(a);
    *out = json_pack("{s:o}", "items", items);
    return *out ? 0 : ed_error_set(ED_ENOMEM, "attachments");
}

static int get_project_datasets(gw_request *req, gw_response *res)
{
    json_t *out;
    int err;

    if ((err = check_project(req, req->params[0], false)) < 0 ||
        (err = attachments_json(&out, req, req->params[0])) < 0)
        return err;
    return respond(res, 200, out);
}

/* PUT /api/v1/projects/{id}/datasets {items: [{dataset_id, version: N|"latest"}]} */
static int put_project_datasets(gw_request *req, gw_response *res)
{
    ds_attachment at[DS_ATTACH_MAX];
    json_t *body, *items = NULL, *out;
    size_t n;
    int err;

    if ((err = gw_request_json(&body, req)) < 0 ||
        (err = ed_json_get_array(&items, body, "items", true)) < 0 ||
        (err = check_project(req, req->params[0], true)) < 0)
        return err;
    if ((n = json_array_size(items)) > DS_ATTACH_MAX)
        return ed_error_set(ED_EINVAL, "a project mounts at most %d datasets", DS_ATTACH_MAX);
    for (size_t i = 0; i < n; i++) {
        const json_t *it = json_array_get(items, i), *ver;
        const char *id = NULL;
        if (!json_is_object(it))
            return ed_error_set(ED_EINVAL, "items[%zu] must be an object {dataset_id, version}", i);
        if ((err = ed_json_get_str(&id, it, "dataset_id", true)) < 0)
            return err;
        if (strlen(id) >= DS_ID_LEN)
            return ed_error_set(ED_ENOTFOUND, "no dataset %.40s", id);
        snprintf(at[i].dataset_id, sizeof(at[i].dataset_id), "%s", id);
        ver = json_object_get(it, "version");
        if (ver == NULL || json_is_null(ver) ||
            (json_is_string(ver) && strcmp(json_string_value(ver), "latest") == 0))
            at[i].version = 0;
        else if ((err = gw__json_int_check(&at[i].version, ver, "version", 1, INT64_MAX)) < 0)
            return ed_error_set(err, "items[%zu].version must be a version number or \"latest\"", i);
    }
    if ((err = ds_project_datasets_set(ds_of(req), req->auth.user_id, req->params[0], at, n)) < 0 ||
        (err = attachments_json(&out, req, req->params[0])) < 0)
        return err;
    return respond(res, 200, out);
}

#define R (GW_AUTH | GW_SCOPE_READ)
#define W (GW_AUTH | GW_SCOPE_WRITE)
#define A (GW_AUTH_OPTIONAL | GW_SCOPE_READ)
#define S (GW_AUTH | GW_SCOPE_WRITE | GW_BODY_STREAM)

const gw_route gw__routes_datasets[] = {
    {"POST", "/api/v1/datasets", create_dataset, W, "Create a dataset"},
    {"GET", "/api/v1/datasets", list_datasets, A,
     "List datasets I may see (?q=&owner=<username>&tag=&limit=&offset=)"},
    {"GET", "/api/v1/datasets/{id}", get_dataset, A, "Get a dataset (public ones without signing in)"},
    {"PATCH", "/api/v1/datasets/{id}", update_dataset, W, "Change a dataset's card and visibility"},
    {"DELETE", "/api/v1/datasets/{id}", delete_dataset, W, "Delete a dataset (409 while in use)"},
    {"POST", "/api/v1/datasets/{id}/shares/{username}", add_share, W, "Share a private dataset"},
    {"DELETE", "/api/v1/datasets/{id}/shares/{username}", remove_share, W, "Stop sharing"},
    {"GET", "/api/v1/datasets/{id}/draft", get_draft, R, "The draft's files (owner)"},
    {"PUT", "/api/v1/datasets/{id}/draft/files/{path*}", put_draft_file, S,
     "Put a file in the draft (raw body, streamed)"},
    {"DELETE", "/api/v1/datasets/{id}/draft/files/{path*}", delete_draft_file, W,
     "Remove a file from the draft"},
    {"POST", "/api/v1/datasets/{id}/versions", publish_version, W,
     "Publish the draft as a new version (unpacking archives first)"},
    {"GET", "/api/v1/datasets/{id}/versions", list_versions, A, "Versions, newest first"},
    {"GET", "/api/v1/datasets/{id}/versions/{n}", get_version, A, "A version with its manifest"},
    {"DELETE", "/api/v1/datasets/{id}/versions/{n}", delete_version, W, "Delete a version"},
    {"POST", "/api/v1/datasets/{id}/uploads", open_upload, W, "Open a resumable upload"},
    {"GET", "/api/v1/uploads/{upload_id}", upload_status, R, "An upload's durable offset"},
    {"PUT", "/api/v1/uploads/{upload_id}", put_chunk, S, "Send a chunk (Content-Range, streamed)"},
    {"DELETE", "/api/v1/uploads/{upload_id}", cancel_upload, W, "Cancel an upload"},
    {"GET", "/api/v1/projects/{id}/datasets", get_project_datasets, R,
     "The datasets a project mounts"},
    {"PUT", "/api/v1/projects/{id}/datasets", put_project_datasets, W,
     "Set the datasets a project mounts"},
    {NULL, NULL, NULL, 0, NULL},
};
