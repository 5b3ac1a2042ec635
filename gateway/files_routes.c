/* files_routes.c - changes to a project's working tree beyond one file's
 * bytes: rename or move, and folders (the notebook's file browser). The work
 * and every access check are projects/'s (proj.h, "tree changes"); this file
 * parses requests and shapes responses.
 *
 *   GET    /api/v1/projects/{id}/files[?dirs=1]   the tree: files, and folders with dirs=1
 *   PATCH  /api/v1/projects/{id}/files/{path*}    {"path": "new/path"}: move or rename
 *   POST   /api/v1/projects/{id}/dirs/{path*}     a new empty folder
 *   DELETE /api/v1/projects/{id}/dirs/{path*}     a folder and everything in it
 *
 * This table is matched before projects_routes.c's, so its GET .../files
 * answers that path: the same list as before (each item now says "type":
 * "file"), folders only when asked (older clients list items as files), and
 * an ETag over the body so that a browser following the tree every second
 * gets a 304 while nothing changed.
 *
 * Paths a client names that proj_path_validate refuses, and a folder moved
 * into itself, are 422 (the request is well-formed, the path is not one a
 * project can hold).
 */
#include "gw_int.h"
#include "proj.h"

#include "ed_error.h"

#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static proj_root *projects_of(gw_request *req) { return req->srv->projects; }

/* proj_path_validate with its refusal as ED_EUNPROC (422). */
static int path_ok(const char *path, const char *what)
{
    char msg[512];

    if (proj_path_validate(path, path ? strlen(path) : 0) == 0)
        return 0;
    snprintf(msg, sizeof(msg), "%s", ed_error_last());
    return ed_error_set(ED_EUNPROC, "%s: %s", what, msg);
}

/* An entry of the tree as the file list gives it. */
static json_t *entry_json(gw_request *req, const proj_file *f, bool dir)
{
    return json_pack("{s:s, s:s, s:I, s:s}", "path", f->path, "type", dir ? "directory" : "file",
                     "size", (json_int_t)(dir ? 0 : f->size), "modified_at",
                     gw__time(req, f->modified_at));
}

static bool query_on(gw_request *req, const char *name)
{
    const char *v = gw_request_query(req, name);
    return v && (strcmp(v, "1") == 0 || strcmp(v, "true") == 0);
}

/* Does If-None-Match name `etag` (quoted, as sent)? "*" matches too. */
static bool none_match(const char *inm, const char *etag)
{
    size_t n = strlen(etag);
    const char *p = inm;

    while (p && *p) {
        while (*p == ' ' || *p == ',' || *p == '\t')
            p++;
        if (*p == '*')
            return true;
        if (strncmp(p, "W/", 2) == 0)
            p += 2;
        if (strncmp(p, etag, n) == 0 && (p[n] == '\0' || p[n] == ',' || p[n] == ' '))
            return true;
        p = strchr(p, ',');
    }
    return false;
}

/* GET /api/v1/projects/{id}/files[?dirs=1]: {items: [{path, type, size,
 * modified_at}], next_cursor: null}, files then (dirs=1) folders, each
 * sorted by path. */
static int list_tree(gw_request *req, gw_response *res)
{
    proj_file_list *files = NULL, *dirs = NULL;
    bool want_dirs = query_on(req, "dirs");
    unsigned char hash[16];
    char etag[2 * sizeof(hash) + 3], *body;
    json_t *items, *out;
    size_t len;
    int err;

    if ((err = proj_tree_list(&files, want_dirs ? &dirs : NULL, projects_of(req),
                              req->auth.user_id, req->params[0])) < 0)
        return err;
    items = json_array();
    for (size_t i = 0; items && i < files->count; i++)
        if (json_array_append_new(items, entry_json(req, &files->items[i], false)) < 0)
            json_decref(items), items = NULL;
    for (size_t i = 0; items && dirs && i < dirs->count; i++)
        if (json_array_append_new(items, entry_json(req, &dirs->items[i], true)) < 0)
            json_decref(items), items = NULL;
    proj_file_list_free(files);
    proj_file_list_free(dirs);
    if (items == NULL || (out = json_pack("{s:o, s:n}", "items", items, "next_cursor")) == NULL)
        return ed_error_set(ED_ENOMEM, "file list");
    body = json_dumps(out, JSON_COMPACT);
    json_decref(out);
    if (body == NULL)
        return ed_error_set(ED_ENOMEM, "file list");
    len = strlen(body);
    /* a validator of this representation (not of the files' bytes) */
    crypto_generichash(hash, sizeof(hash), (const unsigned char *)body, len, NULL, 0);
    etag[0] = '"';
    sodium_bin2hex(etag + 1, sizeof(etag) - 2, hash, sizeof(hash));
    strcat(etag, "\"");
    gw_response_header(res, "ETag", etag);
    gw_response_header(res, "Cache-Control", "private, no-cache");
    {
        const char *inm = gw_request_header(req, "If-None-Match");
        if (inm && none_match(inm, etag)) {
            free(body);
            return gw_respond_empty(res, 304);
        }
    }
    return gw_respond_bytes(res, 200, "application/json", body, len);
}

/* PATCH /api/v1/projects/{id}/files/{path*} {"path": "new/path"} -> 200 the
 * entry at its new path. Works for folders (with everything in them). */
static int move_entry(gw_request *req, gw_response *res)
{
    const char *from = req->params[1], *to = NULL;
    proj_file *f = NULL;
    bool dir = false;
    json_t *body, *out;
    size_t n;
    int err;

    if ((err = gw_request_json(&body, req)) < 0 ||
        (err = ed_json_get_str(&to, body, "path", true)) < 0)
        return err;
    if ((err = path_ok(from, "the path")) < 0 || (err = path_ok(to, "field 'path'")) < 0)
        return err;
    n = strlen(from);
    if (strncmp(to, from, n) == 0 && to[n] == '/')
        return ed_error_set(ED_EUNPROC, "field 'path': cannot move %s into itself", from);
    if ((err = proj_file_move(&f, &dir, projects_of(req), req->auth.user_id, req->params[0], from,
                              to)) < 0)
        return err;
    out = entry_json(req, f, dir);
    proj_file_free(f);
    return out ? gw_respond_json(res, 200, out) : ed_error_set(ED_ENOMEM, "entry");
}

/* POST /api/v1/projects/{id}/dirs/{path*} -> 201 the new folder. */
static int create_dir(gw_request *req, gw_response *res)
{
    proj_file *f = NULL;
    json_t *out;
    int err;

    if ((err = path_ok(req->params[1], "the path")) < 0 ||
        (err = proj_dir_create(&f, projects_of(req), req->auth.user_id, req->params[0],
                               req->params[1])) < 0)
        return err;
    out = entry_json(req, f, true);
    proj_file_free(f);
    return out ? gw_respond_json(res, 201, out) : ed_error_set(ED_ENOMEM, "entry");
}

/* DELETE /api/v1/projects/{id}/dirs/{path*} -> 204; the folder and all in it. */
static int delete_dir(gw_request *req, gw_response *res)
{
    int err;

    if ((err = path_ok(req->params[1], "the path")) < 0 ||
        (err = proj_dir_delete(projects_of(req), req->auth.user_id, req->params[0],
                               req->params[1])) < 0)
        return err;
    return gw_respond_empty(res, 204);
}

/* DELETE /api/v1/projects/{id}/dirs: the root is the project itself. */
static int delete_root(gw_request *req, gw_response *res)
{
    (void)req;
    (void)res;
    return ed_error_set(ED_EUNPROC,
                        "the project's root folder cannot be removed (delete the project instead)");
}

#define R (GW_AUTH | GW_SCOPE_READ)
#define W (GW_AUTH | GW_SCOPE_WRITE)

const gw_route gw__routes_files[] = {
    {"GET", "/api/v1/projects/{id}/files", list_tree, GW_AUTH_OPTIONAL | GW_SCOPE_READ,
     "List the working tree (?dirs=1: folders too, empty ones included)"},
    {"PATCH", "/api/v1/projects/{id}/files/{path*}", move_entry, W,
     "Move or rename a file or folder ({\"path\": new path}; never replaces)"},
    {"POST", "/api/v1/projects/{id}/dirs/{path*}", create_dir, W, "Make an empty folder"},
    {"DELETE", "/api/v1/projects/{id}/dirs/{path*}", delete_dir, W,
     "Remove a folder and everything in it"},
    {"DELETE", "/api/v1/projects/{id}/dirs", delete_root, W, "(the root cannot be removed: 422)"},
    {NULL, NULL, NULL, 0, NULL},
};
