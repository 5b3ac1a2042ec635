/*
 * contents.c - Jupyter's /api/contents over the working tree of the caller's
 * default project (projects/, proj.h), and that default project itself.
 *
 * Paths are Jupyter's: "" is the root, "dir/nb.ipynb" a file; each is checked
 * by projects/ (proj_path_validate) before anything is read or written.
 * Directories are the working tree's folders (proj_tree_list; empty ones
 * too): a new folder is made with proj_dir_create, a rename of a file or a
 * folder is one proj_file_move (a rename(2) that never replaces), a folder
 * is deleted with proj_dir_delete. Entries whose name starts with '.' are not
 * listed (older trees hold "<folder>/.keep" files from before folders were
 * real).
 * Notebooks (.ipynb) are JSON models (format "json") and are validated as
 * nbformat v4 when saved (422 otherwise, nothing written); other files are
 * "text" when they are UTF-8, else "base64". A file's model asked with
 * ?hash=1 carries "hash" (sha256 hex of the bytes, the REST API's ETag) and
 * "hash_algorithm" "sha256", as jupyter_server 2.11+ does.
 *
 * Checkpoints are versions (git commits of the whole tree):
 *   POST   /api/contents/{path}/checkpoints        a new version -> {id, last_modified}
 *   GET    /api/contents/{path}/checkpoints        versions that hold the file
 *   POST   /api/contents/{path}/checkpoints/{id}   restore that file from the version
 *   DELETE /api/contents/{path}/checkpoints/{id}   409: versions are permanent
 * (a file or folder literally named "checkpoints" below another file cannot
 * be reached through these routes, as in Jupyter Server).
 */
#include "jupyter_int.h"
#include "proj.h"

#include "ed_error.h"
#include "ed_time.h"

#include <pthread.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_PROJECT_NAME "default"

static pthread_mutex_t default_lock = PTHREAD_MUTEX_INITIALIZER;

int gw__jupyter_default_project(char out[14], gw_request *req)
{
    proj_root *r = req->srv->projects;
    const char *cursor = NULL;
    char *cur = NULL;
    int err = 0;

    out[0] = '\0';
    /* Serialised so two first requests do not make two default projects. */
    pthread_mutex_lock(&default_lock);
    for (;;) {
        proj_page *pg = NULL;
        if ((err = proj_list(&pg, r, req->auth.user_id, PROJ_LIST_MAX, cursor)) < 0)
            break;
        for (size_t i = 0; i < pg->count && !out[0]; i++)
            if (pg->items[i]->owner_id == req->auth.user_id &&
                strcmp(pg->items[i]->name, DEFAULT_PROJECT_NAME) == 0)
                snprintf(out, 14, "%s", pg->items[i]->id);
        free(cur);
        cur = pg->next_cursor ? strdup(pg->next_cursor) : NULL;
        proj_page_free(pg);
        if (out[0] || cur == NULL)
            break;
        cursor = cur;
    }
    free(cur);
    if (err == 0 && !out[0]) {
        proj *p = NULL;
        if ((err = proj_create(&p, r, req->auth.user_id, DEFAULT_PROJECT_NAME,
                               "Jupyter's root: created on first use", PROJ_PRIVATE)) == 0)
            snprintf(out, 14, "%s", p->id);
        proj_free(p);
    }
    pthread_mutex_unlock(&default_lock);
    return err;
}

/* ---- paths and models ------------------------------------------------------ */

typedef struct ctx {
    gw_request     *req;
    char            pid[14];
    proj_file_list *files;   /* loaded on demand, with dirs */
    proj_file_list *dirs;    /* every folder of the tree, empty ones too */
} ctx;

static int ctx_open(ctx *c, gw_request *req)
{
    memset(c, 0, sizeof(*c));
    c->req = req;
    return gw__jupyter_default_project(c->pid, req);
}

static void ctx_close(ctx *c)
{
    proj_file_list_free(c->files);
    proj_file_list_free(c->dirs);
}

static int ctx_files(ctx *c)
{
    if (c->files)
        return 0;
    return proj_tree_list(&c->files, &c->dirs, c->req->srv->projects, c->req->auth.user_id,
                          c->pid);
}

/* Strip leading and trailing slashes into a new arena string. */
static char *clean_path(gw_request *req, const char *p)
{
    size_t n;

    if (p == NULL)
        return ed_arena_strdup(req->arena, "");
    while (*p == '/')
        p++;
    n = strlen(p);
    while (n > 0 && p[n - 1] == '/')
        n--;
    return ed_arena_strndup(req->arena, p, n);
}

static const char *base_name(const char *path)
{
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

static bool ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* What `path` is in the tree: 'f' a file (*fi its entry), 'd' a directory, 0 neither. */
static int kind_of(ctx *c, const char *path, const proj_file **fi)
{
    size_t n = strlen(path);

    *fi = NULL;
    if (n == 0)
        return 'd';
    for (size_t i = 0; i < c->files->count; i++) {
        const char *fp = c->files->items[i].path;
        if (strcmp(fp, path) == 0) {
            *fi = &c->files->items[i];
            return 'f';
        }
        if (strncmp(fp, path, n) == 0 && fp[n] == '/')
            return 'd';
    }
    for (size_t i = 0; c->dirs && i < c->dirs->count; i++)
        if (strcmp(c->dirs->items[i].path, path) == 0)
            return 'd';
    return 0;
}

static json_t *model(gw_request *req, const char *path, const char *type, int64_t mtime,
                     json_int_t size)
{
    const char *t = gw__time(req, mtime);
    return json_pack("{s:s, s:s, s:s, s:b, s:s, s:s, s:n, s:n, s:n, s:o}", "name", base_name(path),
                     "path", path, "type", type, "writable", 1, "created", t, "last_modified", t,
                     "mimetype", "format", "content", "size",
                     size >= 0 ? json_integer(size) : json_null());
}

static const char *file_type(const char *path)
{
    return ends_with(path, ".ipynb") ? "notebook" : "file";
}

/* Directory model; with content, its immediate children (without content). */
static int dir_model(json_t **out, ctx *c, const char *path, bool content)
{
    size_t n = strlen(path);
    int64_t newest = 0;
    json_t *m, *list = NULL, *seen = NULL;

    *out = NULL;
    if (content && ((list = json_array()) == NULL || (seen = json_object()) == NULL)) {
        json_decref(list);
        return ed_error_set(ED_ENOMEM, "directory");
    }
    for (size_t i = 0; i < c->files->count; i++) {
        const proj_file *f = &c->files->items[i];
        const char *rest, *slash;
        if (n && (strncmp(f->path, path, n) != 0 || f->path[n] != '/'))
            continue;
        if (f->modified_at > newest)
            newest = f->modified_at;
        if (!content)
            continue;
        rest = f->path + (n ? n + 1 : 0);
        slash = strchr(rest, '/');
        if (slash) {
            char *sub = ed_arena_strndup(c->req->arena, rest, (size_t)(slash - rest));
            char *full = n ? ed_arena_printf(c->req->arena, "%s/%s", path, sub) : sub;
            json_t *prev;
            if (sub == NULL || full == NULL)
                continue;
            if (sub[0] == '.')
                continue;
            if ((prev = json_object_get(seen, sub)) != NULL) {
                /* keep the newest time */
                if (f->modified_at > json_integer_value(json_object_get(prev, "_ms"))) {
                    json_object_set_new(prev, "last_modified",
                                        json_string(gw__time(c->req, f->modified_at)));
                    json_object_set_new(prev, "_ms", json_integer(f->modified_at));
                }
                continue;
            }
            m = model(c->req, full, "directory", f->modified_at, -1);
            if (m == NULL)
                continue;
            json_object_set_new(m, "_ms", json_integer(f->modified_at));
            json_object_set(seen, sub, m);
            json_array_append_new(list, m);
        } else if (rest[0] != '.') {
            m = model(c->req, f->path, file_type(f->path), f->modified_at, f->size);
            if (m)
                json_array_append_new(list, m);
        }
    }
    /* folders with no file below them (empty, or only folders) */
    for (size_t i = 0; content && c->dirs && i < c->dirs->count; i++) {
        const proj_file *d = &c->dirs->items[i];
        const char *rest;
        if (n && (strncmp(d->path, path, n) != 0 || d->path[n] != '/'))
            continue;
        rest = d->path + (n ? n + 1 : 0);
        if (rest[0] == '.' || strchr(rest, '/') || json_object_get(seen, rest))
            continue;
        if ((m = model(c->req, d->path, "directory", d->modified_at, -1)) == NULL)
            continue;
        json_object_set_new(seen, rest, json_integer(0));
        json_array_append_new(list, m);
    }
    for (size_t i = 0; list && i < json_array_size(list); i++)
        json_object_del(json_array_get(list, i), "_ms");
    json_decref(seen);
    if ((m = model(c->req, path, "directory", newest ? newest : ed_now_ms(), -1)) == NULL) {
        json_decref(list);
        return ed_error_set(ED_ENOMEM, "directory");
    }
    if (content) {
        json_object_set_new(m, "content", list);
        json_object_set_new(m, "format", json_string("json"));
    }
    *out = m;
    return 0;
}

/* File or notebook model; with content, read from the working tree. */
static int file_model(json_t **out, ctx *c, const proj_file *f, const char *want_type,
                      const char *want_format, bool content)
{
    const char *type = want_type && strcmp(want_type, "file") == 0 ? "file" : file_type(f->path);
    const char *hq;
    char etag[PROJ_ETAG_LEN + 1];
    bool want_hash;
    json_t *m;
    char *buf = NULL;
    size_t len = 0;
    int err;

    *out = NULL;
    if (want_type && strcmp(want_type, "notebook") == 0 && strcmp(type, "notebook") != 0)
        return ed_error_set(ED_EINVAL, "%s is not a notebook", f->path);
    if (want_type && strcmp(want_type, "directory") == 0)
        return ed_error_set(ED_EINVAL, "%s is not a directory", f->path);
    if (want_format && strcmp(want_format, "text") != 0 && strcmp(want_format, "base64") != 0)
        return ed_error_set(ED_EINVAL, "format must be text or base64");
    if ((m = model(c->req, f->path, type, f->modified_at, f->size)) == NULL)
        return ed_error_set(ED_ENOMEM, "model");
    /* ?hash=1 (jupyter_server 2.11+): "hash" and "hash_algorithm", sha256 of
     * the bytes, the same value as the REST API's ETag */
    want_hash = (hq = gw_request_query(c->req, "hash")) != NULL &&
                (strcmp(hq, "1") == 0 || strcmp(hq, "true") == 0);
    if (!content) {
        if (want_hash) {
            if ((err = proj_file_etag(etag, c->req->srv->projects, c->req->auth.user_id, c->pid,
                                      f->path)) < 0)
                goto fail;
            json_object_set_new(m, "hash", json_string(etag));
            json_object_set_new(m, "hash_algorithm", json_string("sha256"));
        }
        *out = m;
        return 0;
    }
    if ((err = proj_file_read_etag(&buf, &len, etag, c->req->srv->projects, c->req->auth.user_id,
                                   c->pid, f->path, NULL)) < 0)
        goto fail;
    if (want_hash) {
        json_object_set_new(m, "hash", json_string(etag));
        json_object_set_new(m, "hash_algorithm", json_string("sha256"));
    }
    if (strcmp(type, "notebook") == 0) {
        json_error_t je;
        json_t *nb = json_loadb(buf, len, 0, &je);
        if (nb == NULL) {
            err = ed_error_set(ED_EUNPROC, "%s is not JSON: %s", f->path, je.text);
            goto fail;
        }
        json_object_set_new(m, "content", nb);
        json_object_set_new(m, "format", json_string("json"));
    } else if ((want_format == NULL || strcmp(want_format, "text") == 0) &&
               gw__utf8_valid((const uint8_t *)buf, len) && memchr(buf, '\0', len) == NULL) {
        json_object_set_new(m, "content", json_stringn(buf, len));
        json_object_set_new(m, "format", json_string("text"));
        json_object_set_new(m, "mimetype", json_string("text/plain"));
    } else if (want_format && strcmp(want_format, "text") == 0) {
        err = ed_error_set(ED_EINVAL, "%s is not UTF-8 text: ask for format=base64", f->path);
        goto fail;
    } else {
        size_t elen = sodium_base64_ENCODED_LEN(len, sodium_base64_VARIANT_ORIGINAL);
        char *enc = malloc(elen);
        if (enc == NULL) {
            err = ed_error_set(ED_ENOMEM, "model");
            goto fail;
        }
        sodium_bin2base64(enc, elen, (const unsigned char *)buf, len, sodium_base64_VARIANT_ORIGINAL);
        json_object_set_new(m, "content", json_string(enc));
        json_object_set_new(m, "format", json_string("base64"));
        json_object_set_new(m, "mimetype", json_string("application/octet-stream"));
        free(enc);
    }
    free(buf);
    *out = m;
    return 0;
fail:
    free(buf);
    json_decref(m);
    return err;
}

/* "a/b.ipynb/checkpoints[/id]": split into the file and the checkpoint id
 * ("" for the list). false when the path is not a checkpoints path. */
static bool checkpoint_path(gw_request *req, const char *path, char **file, char **cid)
{
    const char *m = strstr(path, "/checkpoints");

    while (m) {
        const char *after = m + strlen("/checkpoints");
        if (*after == '\0' || (*after == '/' && after[1] && !strchr(after + 1, '/'))) {
            *file = ed_arena_strndup(req->arena, path, (size_t)(m - path));
            *cid = ed_arena_strdup(req->arena, *after ? after + 1 : "");
            return *file && *cid;
        }
        m = strstr(m + 1, "/checkpoints");
    }
    return false;
}

static json_t *checkpoint_json(gw_request *req, const proj_version *v)
{
    return json_pack("{s:s, s:s}", "id", v->id, "last_modified", gw__time(req, v->created_at));
}

/* ---- GET ----------------------------------------------------------------------- */

static int list_checkpoints(gw_request *req, gw_response *res, ctx *c, const char *file)
{
    proj_version_page *pg = NULL;
    json_t *arr;
    int err;

    if ((err = proj_version_list(&pg, req->srv->projects, req->auth.user_id, c->pid, 50, NULL)) < 0)
        return err;
    if ((arr = json_array()) == NULL) {
        proj_version_page_free(pg);
        return ed_error_set(ED_ENOMEM, "checkpoints");
    }
    for (size_t i = 0; i < pg->count; i++)
        for (size_t k = 0; k < pg->items[i]->nfiles; k++)
            if (strcmp(pg->items[i]->files[k], file) == 0) {
                json_array_append_new(arr, checkpoint_json(req, pg->items[i]));
                break;
            }
    proj_version_page_free(pg);
    return gw_respond_json(res, 200, arr);
}

int gw__jupyter_contents_get(gw_request *req, gw_response *res)
{
    const char *type = gw_request_query(req, "type");
    const char *format = gw_request_query(req, "format");
    const char *cq = gw_request_query(req, "content");
    bool content = cq == NULL || strcmp(cq, "0") != 0;
    char *path = clean_path(req, req->nparams ? req->params[0] : NULL), *file, *cid;
    const proj_file *fi;
    json_t *m = NULL;
    ctx c;
    int err, k;

    if (path == NULL)
        return ed_error_set(ED_ENOMEM, "path");
    if (type && strcmp(type, "file") && strcmp(type, "notebook") && strcmp(type, "directory"))
        return ed_error_set(ED_EINVAL, "type must be file, notebook or directory");
    if ((err = ctx_open(&c, req)) < 0)
        return err;
    if (checkpoint_path(req, path, &file, &cid) && cid[0] == '\0') {
        err = list_checkpoints(req, res, &c, file);
        ctx_close(&c);
        return err;
    }
    if ((err = ctx_files(&c)) < 0)
        goto out;
    k = kind_of(&c, path, &fi);
    if (k == 0) {
        err = ed_error_set(ED_ENOTFOUND, "no file or directory %s", path);
    } else if (k == 'd') {
        if (type && strcmp(type, "directory") != 0)
            err = ed_error_set(ED_EINVAL, "%s is a directory", path[0] ? path : "/");
        else
            err = dir_model(&m, &c, path, content);
    } else {
        err = file_model(&m, &c, fi, type, format, content);
    }
out:
    ctx_close(&c);
    if (err < 0)
        return err;
    return gw_respond_json(res, 200, m);
}

/* ---- writes ---------------------------------------------------------------------- */

/* Write `path` and answer its model without content (201 when created). */
static int write_and_answer(gw_request *req, gw_response *res, ctx *c, const char *path,
                            const void *buf, size_t len, int status_if_new)
{
    proj_file *f = NULL;
    bool created = false;
    json_t *m;
    int err;

    if ((err = proj_file_write(&f, &created, req->srv->projects, req->auth.user_id, c->pid, path,
                               buf, len)) < 0)
        return err;
    m = model(req, path, file_type(path), f->modified_at, f->size);
    proj_file_free(f);
    if (m == NULL)
        return ed_error_set(ED_ENOMEM, "model");
    gw_response_header(res, "Location", ed_arena_printf(req->arena, "/api/contents/%s", path));
    return gw_respond_json(res, created ? status_if_new : 200, m);
}

/* A new folder (201); one that exists already is answered as it is (200),
 * as Jupyter Server does for a PUT of a directory model. */
static int new_directory(gw_request *req, gw_response *res, ctx *c, const char *path)
{
    proj_file *f = NULL;
    const proj_file *fi;
    json_t *m;
    int err, status = 201;

    err = proj_dir_create(&f, req->srv->projects, req->auth.user_id, c->pid, path);
    if (err == ED_EEXISTS) {
        proj_file_list_free(c->files);
        proj_file_list_free(c->dirs);
        c->files = c->dirs = NULL;
        if ((err = ctx_files(c)) < 0)
            return err;
        if (kind_of(c, path, &fi) != 'd')
            return ed_error_set(ED_ECONFLICT, "%s exists and is not a directory", path);
        status = 200;
    } else if (err < 0) {
        return err;
    }
    m = model(req, path, "directory", f ? f->modified_at : ed_now_ms(), -1);
    proj_file_free(f);
    if (m == NULL)
        return ed_error_set(ED_ENOMEM, "model");
    return gw_respond_json(res, status, m);
}

/* The bytes a model's content stands for. *buf malloc'd. */
static int model_bytes(char **buf, size_t *len, const json_t *body, const char *path)
{
    const char *type = json_string_value(json_object_get(body, "type"));
    const char *format = json_string_value(json_object_get(body, "format"));
    const json_t *content = json_object_get(body, "content");

    *buf = NULL;
    *len = 0;
    if (content == NULL || json_is_null(content))
        return ed_error_set(ED_EINVAL, "the model has no content");
    if ((type && strcmp(type, "notebook") == 0) || (type == NULL && ends_with(path, ".ipynb"))) {
        if (!json_is_object(content))
            return ed_error_set(ED_EINVAL, "a notebook's content must be a JSON object");
        if ((*buf = json_dumps(content, JSON_INDENT(1) | JSON_PRESERVE_ORDER)) == NULL)
            return ed_error_set(ED_ENOMEM, "notebook");
        *len = strlen(*buf);
        return 0;
    }
    if (!json_is_string(content))
        return ed_error_set(ED_EINVAL, "a file's content must be a string");
    if (format && strcmp(format, "base64") == 0) {
        const char *s = json_string_value(content);
        size_t n = json_string_length(content);
        if ((*buf = malloc(n + 1)) == NULL)
            return ed_error_set(ED_ENOMEM, "file");
        if (sodium_base642bin((unsigned char *)*buf, n + 1, s, n, "\r\n", len, NULL,
                              sodium_base64_VARIANT_ORIGINAL) != 0) {
            free(*buf);
            *buf = NULL;
            return ed_error_set(ED_EINVAL, "content is not base64");
        }
        return 0;
    }
    if (format && strcmp(format, "text") != 0)
        return ed_error_set(ED_EINVAL, "format must be text, base64 or json");
    *len = json_string_length(content);
    if ((*buf = malloc(*len + 1)) == NULL)
        return ed_error_set(ED_ENOMEM, "file");
    memcpy(*buf, json_string_value(content), *len);
    return 0;
}

int gw__jupyter_contents_put(gw_request *req, gw_response *res)
{
    char *path = clean_path(req, req->params[0]);
    const char *type;
    json_t *body;
    char *buf = NULL;
    size_t len;
    ctx c;
    int err;

    if (path == NULL)
        return ed_error_set(ED_ENOMEM, "path");
    if ((err = gw_request_json(&body, req)) < 0)
        return err;
    type = json_string_value(json_object_get(body, "type"));
    if ((err = ctx_open(&c, req)) < 0)
        return err;
    if (type && strcmp(type, "directory") == 0)
        err = new_directory(req, res, &c, path);
    else if ((err = model_bytes(&buf, &len, body, path)) == 0)
        err = write_and_answer(req, res, &c, path, buf, len, 201);
    free(buf);
    ctx_close(&c);
    return err;
}

/* "Untitled.ipynb", "Untitled1.ipynb", ... in `dir`: the first free name. */
static char *free_name(ctx *c, const char *dir, const char *base, const char *ext, bool copy)
{
    for (int i = copy ? 1 : 0; i < 10000; i++) {
        const proj_file *fi;
        char *name, *full;
        if (copy)
            name = ed_arena_printf(c->req->arena, "%s-Copy%d%s", base, i, ext);
        else
            name = i ? ed_arena_printf(c->req->arena, "%s%d%s", base, i, ext)
                     : ed_arena_printf(c->req->arena, "%s%s", base, ext);
        if (name == NULL)
            return NULL;
        full = dir[0] ? ed_arena_printf(c->req->arena, "%s/%s", dir, name) : name;
        if (full == NULL)
            return NULL;
        if (kind_of(c, full, &fi) == 0)
            return full;
    }
    return NULL;
}

static const char EMPTY_NOTEBOOK[] =
    "{\n \"cells\": [],\n \"metadata\": {\n  \"kernelspec\": {\"display_name\": \"Python 3 (Eddy)\", "
    "\"language\": \"python\", \"name\": \"python3\"},\n  \"language_info\": {\"name\": \"python\"}\n },\n"
    " \"nbformat\": 4,\n \"nbformat_minor\": 5\n}\n";

static int checkpoint_post(gw_request *req, gw_response *res, ctx *c, const char *file,
                           const char *cid)
{
    proj_version *v = NULL;
    char *buf = NULL;
    size_t len;
    const proj_file *fi;
    json_t *m;
    int err;

    if ((err = ctx_files(c)) < 0)
        return err;
    if (kind_of(c, file, &fi) != 'f')
        return ed_error_set(ED_ENOTFOUND, "no file %s", file);
    if (cid[0] == '\0') {
        char *msg = ed_arena_printf(req->arena, "Checkpoint of %s", file);
        if (msg == NULL)
            return ed_error_set(ED_ENOMEM, "checkpoint");
        if ((err = proj_version_create(&v, req->srv->projects, req->auth.user_id, c->pid, msg)) < 0)
            return err;
        m = checkpoint_json(req, v);
        proj_version_free(v);
        return m ? gw_respond_json(res, 201, m) : ed_error_set(ED_ENOMEM, "checkpoint");
    }
    /* Restore only this file as it was in the version. */
    if ((err = proj_file_read(&buf, &len, req->srv->projects, req->auth.user_id, c->pid, file,
                              cid)) < 0)
        return err;
    err = proj_file_write(NULL, NULL, req->srv->projects, req->auth.user_id, c->pid, file, buf, len);
    free(buf);
    if (err < 0)
        return err;
    return gw_respond_empty(res, 204);
}

int gw__jupyter_contents_post(gw_request *req, gw_response *res)
{
    char *dir = clean_path(req, req->nparams ? req->params[0] : NULL), *file, *cid, *target;
    json_t *body = NULL;
    const char *type = NULL, *ext = NULL, *copy_from = NULL;
    const proj_file *fi;
    ctx c;
    int err, k;

    if (dir == NULL)
        return ed_error_set(ED_ENOMEM, "path");
    if (req->body && req->body_len > 0) {
        if ((err = gw_request_json(&body, req)) < 0)
            return err;
        type = json_string_value(json_object_get(body, "type"));
        ext = json_string_value(json_object_get(body, "ext"));
        copy_from = json_string_value(json_object_get(body, "copy_from"));
    }
    if ((err = ctx_open(&c, req)) < 0)
        return err;
    if (checkpoint_path(req, dir, &file, &cid)) {
        err = checkpoint_post(req, res, &c, file, cid);
        goto out;
    }
    if ((err = ctx_files(&c)) < 0)
        goto out;
    if ((k = kind_of(&c, dir, &fi)) != 'd') {
        err = k == 0 ? ed_error_set(ED_ENOTFOUND, "no directory %s", dir)
                     : ed_error_set(ED_EINVAL, "%s is not a directory", dir);
        goto out;
    }
    if (copy_from) {
        char *src = clean_path(req, copy_from), *buf = NULL, *base, *dot;
        size_t len;
        if (src == NULL || kind_of(&c, src, &fi) != 'f') {
            err = ed_error_set(ED_ENOTFOUND, "no file %s to copy", copy_from);
            goto out;
        }
        base = ed_arena_strdup(req->arena, base_name(src));
        dot = base ? strrchr(base, '.') : NULL;
        if (base == NULL) {
            err = ed_error_set(ED_ENOMEM, "path");
            goto out;
        }
        if (dot && dot != base)
            *dot = '\0';
        if ((target = free_name(&c, dir, base, dot && dot != base ? base_name(src) + (dot - base) : "",
                                true)) == NULL) {
            err = ed_error_set(ED_ECONFLICT, "no free name for a copy of %s", src);
            goto out;
        }
        if ((err = proj_file_read(&buf, &len, req->srv->projects, req->auth.user_id, c.pid, src,
                                  NULL)) == 0)
            err = write_and_answer(req, res, &c, target, buf, len, 201);
        free(buf);
        goto out;
    }
    if (type == NULL)
        type = "file";
    if (strcmp(type, "directory") == 0) {
        if ((target = free_name(&c, dir, "Untitled Folder", "", false)) == NULL)
            err = ed_error_set(ED_ECONFLICT, "no free name");
        else
            err = new_directory(req, res, &c, target);
    } else if (strcmp(type, "notebook") == 0) {
        if ((target = free_name(&c, dir, "Untitled", ".ipynb", false)) == NULL)
            err = ed_error_set(ED_ECONFLICT, "no free name");
        else
            err = write_and_answer(req, res, &c, target, EMPTY_NOTEBOOK, sizeof(EMPTY_NOTEBOOK) - 1,
                                   201);
    } else if (strcmp(type, "file") == 0) {
        if ((target = free_name(&c, dir, "untitled", ext ? ext : ".txt", false)) == NULL)
            err = ed_error_set(ED_ECONFLICT, "no free name");
        else
            err = write_and_answer(req, res, &c, target, "", 0, 201);
    } else {
        err = ed_error_set(ED_EINVAL, "type must be file, notebook or directory");
    }
out:
    ctx_close(&c);
    return err;
}

int gw__jupyter_contents_patch(gw_request *req, gw_response *res)
{
    char *from = clean_path(req, req->params[0]), *to;
    const proj_file *fi;
    json_t *body, *m = NULL;
    ctx c;
    int err, k;

    if (from == NULL)
        return ed_error_set(ED_ENOMEM, "path");
    if ((err = gw_request_json(&body, req)) < 0)
        return err;
    if (!json_is_string(json_object_get(body, "path")))
        return ed_error_set(ED_EINVAL, "a rename needs the new path");
    if ((to = clean_path(req, json_string_value(json_object_get(body, "path")))) == NULL)
        return ed_error_set(ED_ENOMEM, "path");
    if (to[0] == '\0' || from[0] == '\0')
        return ed_error_set(ED_EINVAL, "the root cannot be renamed");
    if ((err = proj_path_validate(to, strlen(to))) < 0)
        return err;
    if ((err = ctx_open(&c, req)) < 0)
        return err;
    if ((err = ctx_files(&c)) < 0)
        goto out;
    if ((k = kind_of(&c, from, &fi)) == 0) {
        err = ed_error_set(ED_ENOTFOUND, "no file or directory %s", from);
        goto out;
    }
    if (strcmp(from, to) != 0 && kind_of(&c, to, &fi) != 0) {
        err = ed_error_set(ED_ECONFLICT, "%s exists", to);
        goto out;
    }
    if (k == 'd') {
        size_t n = strlen(from);
        if (strncmp(to, from, n) == 0 && to[n] == '/') {
            err = ed_error_set(ED_EINVAL, "cannot move a directory into itself");
            goto out;
        }
    }
    /* one rename(2) for a file or a whole folder; never replaces */
    {
        proj_file *f = NULL;
        bool dir = false;
        if ((err = proj_file_move(&f, &dir, req->srv->projects, req->auth.user_id, c.pid, from,
                                  to)) < 0)
            goto out;
        m = dir ? model(req, to, "directory", f->modified_at, -1)
                : model(req, to, file_type(to), f->modified_at, f->size);
        proj_file_free(f);
    }
    err = m ? gw_respond_json(res, 200, m) : ed_error_set(ED_ENOMEM, "model");
out:
    ctx_close(&c);
    return err;
}

int gw__jupyter_contents_delete(gw_request *req, gw_response *res)
{
    char *path = clean_path(req, req->params[0]), *file, *cid;
    const proj_file *fi;
    ctx c;
    int err, k;

    if (path == NULL)
        return ed_error_set(ED_ENOMEM, "path");
    if (checkpoint_path(req, path, &file, &cid) && cid[0])
        return ed_error_set(ED_ECONFLICT,
                            "checkpoints are versions of the project and are never deleted");
    if (path[0] == '\0')
        return ed_error_set(ED_EINVAL, "the root cannot be deleted");
    if ((err = ctx_open(&c, req)) < 0)
        return err;
    if ((err = ctx_files(&c)) < 0)
        goto out;
    if ((k = kind_of(&c, path, &fi)) == 0) {
        err = ed_error_set(ED_ENOTFOUND, "no file or directory %s", path);
    } else if (k == 'f') {
        err = proj_file_delete(req->srv->projects, req->auth.user_id, c.pid, path);
    } else {
        err = proj_dir_delete(req->srv->projects, req->auth.user_id, c.pid, path);
    }
out:
    ctx_close(&c);
    if (err < 0)
        return err;
    return gw_respond_empty(res, 204);
}
