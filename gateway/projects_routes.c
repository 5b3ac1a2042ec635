/*
 * projects_routes.c - git-backed projects over HTTP (API.md "Projects
 * (git-backed)"). The logic and every access check live in projects/
 * (proj.h); this file parses requests and shapes responses.
 *
 * Access: another user's private project answers 404 on every route (it does
 * not exist for the caller). A public project can be read and forked by any
 * signed-in user; changing it (PATCH, DELETE, files, versions, restore) by
 * anyone but its owner answers 403. Reading a public project (the project,
 * its file list, a file, an export) needs no sign-in at all (routes flagged
 * A below: the caller is user 0, a stranger to every project, so a private
 * one is 404 exactly as for another user, never 401 that would tell it
 * exists); writes, versions, diffs and forks always need a credential.
 */
#include "gw_int.h"
#include "proj.h"

#include "ed_error.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static proj_root *projects_of(gw_request *req) { return req->srv->projects; }

static int respond(gw_response *res, int status, json_t *body)
{
    if (body == NULL)
        return ed_error_set(ED_ENOMEM, "response body");
    return gw_respond_json(res, status, body);
}

/* can_write: whether this caller may change the project (its files, versions,
 * settings): only its owner, with a credential that carries scope write. The
 * web app shows everyone else the read-only page instead of the editor. */
static json_t *project_json(gw_request *req, const proj *p)
{
    bool can_write = req->auth.user_id != 0 && p->owner_id == req->auth.user_id &&
                     (req->auth.scopes & GW_SCOPE_WRITE) != 0;

    return json_pack("{s:s, s:s, s:s, s:s, s:s, s:I, s:s?, s:s, s:s, s:I, s:b}", "id", p->id, "name",
                     p->name, "description", p->description, "visibility",
                     p->visibility == PROJ_PUBLIC ? "public" : "private", "owner", p->owner,
                     "owner_id", (json_int_t)p->owner_id, "forked_from",
                     p->forked_from[0] ? p->forked_from : NULL, "created_at",
                     gw__time(req, p->created_at), "updated_at", gw__time(req, p->updated_at),
                     "size_bytes", (json_int_t)p->size_bytes, "can_write", can_write);
}

static json_t *version_json(gw_request *req, const proj_version *v)
{
    json_t *files = json_array(), *large = json_array();

    for (size_t i = 0; files && i < v->nfiles; i++)
        if (json_array_append_new(files, json_string(v->files[i])) < 0) {
            json_decref(files);
            files = NULL;
        }
    for (size_t i = 0; large && i < v->nlarge; i++) {
        const proj_large_file *lf = &v->large_files[i];
        if (json_array_append_new(large, json_pack("{s:s, s:I, s:s, s:s}", "path", lf->path,
                                                   "size", (json_int_t)lf->size, "sha256",
                                                   lf->sha256, "reason",
                                                   lf->ignored ? "eddyignore" : "large")) < 0) {
            json_decref(large);
            large = NULL;
        }
    }
    if (files == NULL || large == NULL) {
        json_decref(files);
        json_decref(large);
        return NULL;
    }
    return json_pack("{s:s, s:s, s:s, s:s, s:o, s:o}", "id", v->id, "message", v->message,
                     "author", v->author, "created_at", gw__time(req, v->created_at), "files",
                     files, "large_files", large);
}

static int parse_visibility(proj_visibility *out, const char *s)
{
    if (strcmp(s, "private") == 0)
        *out = PROJ_PRIVATE;
    else if (strcmp(s, "public") == 0)
        *out = PROJ_PUBLIC;
    else
        return ed_error_set(ED_EINVAL, "field 'visibility' must be \"private\" or \"public\"");
    return 0;
}

/* POST /api/v1/projects {name, description?, visibility} */
static int create_project(gw_request *req, gw_response *res)
{
    json_t *body;
    const char *name = NULL, *description = NULL, *vis = NULL;
    proj_visibility v = PROJ_PRIVATE;
    proj *p = NULL;
    json_t *out;
    int err;

    if ((err = gw_request_json(&body, req)) < 0 ||
        (err = ed_json_get_str(&name, body, "name", true)) < 0 ||
        (err = ed_json_get_str(&description, body, "description", false)) < 0 ||
        (err = ed_json_get_str(&vis, body, "visibility", true)) < 0 ||
        (err = parse_visibility(&v, vis)) < 0)
        return err;
    if ((err = proj_create(&p, projects_of(req), req->auth.user_id, name, description, v)) < 0)
        return err;
    out = project_json(req, p);
    proj_free(p);
    return respond(res, 201, out);
}

/* GET /api/v1/projects?limit=&cursor= : mine and every public one */
static int list_projects(gw_request *req, gw_response *res)
{
    proj_page *pg = NULL;
    json_t *items;
    const char *cursor;
    int limit, err;

    if ((err = gw_request_page(&limit, &cursor, req)) < 0 ||
        (err = proj_list(&pg, projects_of(req), req->auth.user_id, limit, cursor)) < 0)
        return err;
    if ((items = json_array()) == NULL) {
        proj_page_free(pg);
        return ed_error_set(ED_ENOMEM, "project list");
    }
    for (size_t i = 0; i < pg->count; i++)
        json_array_append_new(items, project_json(req, pg->items[i]));
    {
        json_t *out = json_pack("{s:o, s:s?}", "items", items, "next_cursor", pg->next_cursor);
        proj_page_free(pg);
        return respond(res, 200, out);
    }
}

static int get_project(gw_request *req, gw_response *res)
{
    proj *p = NULL;
    json_t *out;
    int err;

    if ((err = proj_get(&p, projects_of(req), req->auth.user_id, req->params[0])) < 0)
        return err;
    out = project_json(req, p);
    proj_free(p);
    return respond(res, 200, out);
}

/* PATCH /api/v1/projects/{id} {name?, description?, visibility?} */
static int update_project(gw_request *req, gw_response *res)
{
    json_t *body, *out;
    const char *vis = NULL;
    proj_changes ch = {.name = NULL, .description = NULL, .visibility = -1};
    proj_visibility v = PROJ_PRIVATE;
    proj *p = NULL;
    int err;

    if ((err = gw_request_json(&body, req)) < 0 ||
        (err = ed_json_get_str(&ch.name, body, "name", false)) < 0 ||
        (err = ed_json_get_str(&ch.description, body, "description", false)) < 0 ||
        (err = ed_json_get_str(&vis, body, "visibility", false)) < 0)
        return err;
    if (vis) {
        if ((err = parse_visibility(&v, vis)) < 0)
            return err;
        ch.visibility = (int)v;
    }
    if ((err = proj_update(&p, projects_of(req), req->auth.user_id, req->params[0], &ch)) < 0)
        return err;
    out = project_json(req, p);
    proj_free(p);
    return respond(res, 200, out);
}

static int delete_project(gw_request *req, gw_response *res)
{
    int err = proj_delete(projects_of(req), req->auth.user_id, req->params[0]);

    return err < 0 ? err : gw_respond_empty(res, 204);
}

/* The Content-Type of a file from its extension. Markup that a browser would
 * run (HTML, SVG) is served as text: these bytes come from users. */
static const char *content_type_for(const char *path)
{
    static const struct {
        const char *ext, *type;
    } types[] = {
        {".ipynb", "application/x-ipynb+json"}, {".json", "application/json"},
        {".py", "text/x-python; charset=utf-8"}, {".md", "text/markdown; charset=utf-8"},
        {".txt", "text/plain; charset=utf-8"},  {".csv", "text/csv; charset=utf-8"},
        {".tsv", "text/tab-separated-values; charset=utf-8"},
        {".yaml", "text/plain; charset=utf-8"}, {".yml", "text/plain; charset=utf-8"},
        {".toml", "text/plain; charset=utf-8"}, {".cfg", "text/plain; charset=utf-8"},
        {".sh", "text/plain; charset=utf-8"},   {".c", "text/plain; charset=utf-8"},
        {".h", "text/plain; charset=utf-8"},    {".html", "text/plain; charset=utf-8"},
        {".htm", "text/plain; charset=utf-8"},  {".svg", "text/plain; charset=utf-8"},
        {".png", "image/png"},                  {".jpg", "image/jpeg"},
        {".jpeg", "image/jpeg"},                {".gif", "image/gif"},
        {".webp", "image/webp"},                {".pdf", "application/pdf"},
        {".zip", "application/zip"},            {".gz", "application/gzip"},
        {".npy", "application/octet-stream"},   {".safetensors", "application/octet-stream"},
    };
    const char *slash = strrchr(path, '/'), *dot = strrchr(slash ? slash : path, '.');

    if (dot)
        for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++)
            if (strcasecmp(dot, types[i].ext) == 0)
                return types[i].type;
    return "application/octet-stream";
}

/* `etag` as HTTP sends it: "<hex>" */
static void quote_etag(char out[PROJ_ETAG_LEN + 3], const char *etag)
{
    snprintf(out, PROJ_ETAG_LEN + 3, "\"%s\"", etag);
}

/* Does an If-None-Match list ("*", or comma-separated entity tags, weak or
 * strong) name `etag`? Weak comparison, as RFC 9110 asks for GETs. */
static bool none_match_hits(const char *list, const char *etag)
{
    const char *p = list;

    while (*p) {
        const char *start, *end;
        while (*p == ' ' || *p == '\t' || *p == ',')
            p++;
        if (*p == '\0')
            break;
        if (*p == '*')
            return true;
        if (strncmp(p, "W/", 2) == 0)
            p += 2;
        start = p;
        end = strchr(p, ',');
        if (end == NULL)
            end = p + strlen(p);
        p = end;
        while (end > start && (end[-1] == ' ' || end[-1] == '\t'))
            end--;
        if (end - start >= 2 && start[0] == '"' && end[-1] == '"')
            start++, end--;
        if ((size_t)(end - start) == strlen(etag) && strncasecmp(start, etag, (size_t)(end - start)) == 0)
            return true;
    }
    return false;
}

/* GET /api/v1/projects/{id}/files/{path*}[?version=<id>]: the raw bytes,
 * with ETag (sha256 of the bytes); If-None-Match naming it answers 304. */
static int read_file(gw_request *req, gw_response *res)
{
    const char *version = gw_request_query(req, "version");
    const char *inm = gw_request_header(req, "If-None-Match");
    char etag[PROJ_ETAG_LEN + 1], quoted[PROJ_ETAG_LEN + 3];
    char *buf = NULL;
    size_t len = 0;
    int err;

    if ((err = proj_file_read_etag(&buf, &len, etag, projects_of(req), req->auth.user_id,
                                   req->params[0], req->params[1], version)) < 0)
        return err;
    quote_etag(quoted, etag);
    gw_response_header(res, "ETag", quoted);
    /* the working tree changes under a kernel: caches must ask again */
    gw_response_header(res, "Cache-Control", "private, no-cache");
    if (inm && none_match_hits(inm, etag)) {
        free(buf);
        return gw_respond_empty(res, 304);
    }
    /* user content on our origin: never let a browser run it */
    gw_response_header(res, "Content-Security-Policy", "sandbox");
    return gw_respond_bytes(res, 200, content_type_for(req->params[1]), buf, len);
}

/* The precondition of a PUT from If-Match / If-None-Match, as
 * proj_file_write_if takes it (NULL: unconditional). A list of several
 * entity tags is not supported (ED_EINVAL); a weak tag never matches. */
static int put_precondition(const char **out, gw_request *req)
{
    const char *im = gw_request_header(req, "If-Match");
    const char *inm = gw_request_header(req, "If-None-Match");

    *out = NULL;
    if (im && inm)
        return ed_error_set(ED_EINVAL, "send If-Match or If-None-Match, not both");
    if (inm) {
        while (*inm == ' ')
            inm++;
        if (strcmp(inm, "*") != 0)
            return ed_error_set(ED_EINVAL, "on a write, If-None-Match may only be \"*\" (create only)");
        *out = "";
        return 0;
    }
    if (im == NULL)
        return 0;
    while (*im == ' ' || *im == '\t')
        im++;
    if (strchr(im, ',') != NULL)
        return ed_error_set(ED_EINVAL, "If-Match takes one ETag (or *)");
    if (*im == '\0')
        return ed_error_set(ED_EINVAL, "If-Match is empty");
    /* a weak tag cannot pass a strong comparison; proj refuses it as stale */
    *out = im;
    return 0;
}

/* PUT /api/v1/projects/{id}/files/{path*}: the body is the file's bytes.
 * If-Match: "<etag>" (or *) makes it conditional: 412 when the file changed
 * meanwhile, with the current ETag in the ETag header ("" when the file is
 * gone). If-None-Match: * creates only. Answers the new ETag. */
static int write_file(gw_request *req, gw_response *res)
{
    proj_file *f = NULL;
    const char *if_match = NULL;
    char quoted[PROJ_ETAG_LEN + 3];
    bool created = false;
    json_t *out;
    int err;

    if ((err = put_precondition(&if_match, req)) < 0)
        return err;
    err = proj_file_write_if(&f, &created, projects_of(req), req->auth.user_id, req->params[0],
                             req->params[1], req->body, req->body_len, if_match);
    if (err == ED_EPRECOND) {
        char msg[1024], cur[PROJ_ETAG_LEN + 1];
        snprintf(msg, sizeof(msg), "%s", ed_error_last());
        if (proj_file_etag(cur, projects_of(req), req->auth.user_id, req->params[0],
                           req->params[1]) == 0) {
            quote_etag(quoted, cur);
            gw_response_header(res, "ETag", quoted);
        }
        return gw__respond_error(res, req, ED_EPRECOND, msg);
    }
    if (err < 0)
        return err;
    quote_etag(quoted, f->etag);
    gw_response_header(res, "ETag", quoted);
    out = json_pack("{s:s, s:I, s:s, s:s}", "path", f->path, "size", (json_int_t)f->size,
                    "modified_at", gw__time(req, f->modified_at), "etag", f->etag);
    proj_file_free(f);
    return respond(res, created ? 201 : 200, out);
}

static int delete_file(gw_request *req, gw_response *res)
{
    int err = proj_file_delete(projects_of(req), req->auth.user_id, req->params[0],
                               req->params[1]);

    return err < 0 ? err : gw_respond_empty(res, 204);
}

/* POST /api/v1/projects/{id}/versions {message} */
static int create_version(gw_request *req, gw_response *res)
{
    json_t *body, *out;
    const char *message = NULL;
    proj_version *v = NULL;
    int err;

    if ((err = gw_request_json(&body, req)) < 0 ||
        (err = ed_json_get_str(&message, body, "message", true)) < 0)
        return err;
    if ((err = proj_version_create(&v, projects_of(req), req->auth.user_id, req->params[0],
                                   message)) < 0)
        return err;
    out = version_json(req, v);
    proj_version_free(v);
    return respond(res, 201, out);
}

static int list_versions(gw_request *req, gw_response *res)
{
    proj_version_page *pg = NULL;
    json_t *items, *out;
    const char *cursor;
    int limit, err;

    if ((err = gw_request_page(&limit, &cursor, req)) < 0 ||
        (err = proj_version_list(&pg, projects_of(req), req->auth.user_id, req->params[0], limit,
                                 cursor)) < 0)
        return err;
    if ((items = json_array()) == NULL) {
        proj_version_page_free(pg);
        return ed_error_set(ED_ENOMEM, "version list");
    }
    for (size_t i = 0; i < pg->count; i++)
        json_array_append_new(items, version_json(req, pg->items[i]));
    out = json_pack("{s:o, s:s?}", "items", items, "next_cursor", pg->next_cursor);
    proj_version_page_free(pg);
    return respond(res, 200, out);
}

/* GET /api/v1/projects/{id}/diff?path=<file>&from=<version|working>&to=<...>:
 * the file's diff as proj_diff's JSON (notebook-aware for .ipynb). */
static int diff_file(gw_request *req, gw_response *res)
{
    const char *path = gw_request_query(req, "path");
    const char *from = gw_request_query(req, "from"), *to = gw_request_query(req, "to");
    char *json = NULL;
    int err;

    if (!path || !*path)
        return ed_error_set(ED_EINVAL, "path: the query parameter is required");
    if (!from || !*from || !to || !*to)
        return ed_error_set(ED_EINVAL, "from, to: a version id or \"working\" each");
    if ((err = proj_diff(&json, projects_of(req), req->auth.user_id, req->params[0], path, from,
                         to)) < 0)
        return err;
    gw_response_header(res, "Cache-Control", "private, no-cache");
    return gw_respond_bytes(res, 200, "application/json", json, strlen(json));
}

/* POST /api/v1/projects/{id}/versions/{vid}/restore {mode?} -> {restored,
 * autosave, mode}. mode "keep_untracked" (default) or "exact"; no body is
 * keep_untracked. */
static int restore_version(gw_request *req, gw_response *res)
{
    proj_version *restored = NULL, *autosave = NULL;
    proj_restore_mode mode = PROJ_RESTORE_KEEP_UNTRACKED;
    const char *mode_s = NULL;
    json_t *out, *body;
    int err;

    if (req->body_len > 0) {
        json_t *m;
        if ((err = gw_request_json(&body, req)) < 0)
            return err;
        m = json_object_get(body, "mode");
        if (m && !json_is_null(m)) {
            if (!json_is_string(m))
                return ed_error_set(ED_EINVAL,
                                    "field 'mode' must be \"keep_untracked\" or \"exact\"");
            mode_s = json_string_value(m);
        }
        if ((err = proj_restore_mode_parse(&mode, mode_s)) < 0)
            return ed_error_set(ED_EINVAL,
                                "field 'mode' must be \"keep_untracked\" or \"exact\"");
    }
    if ((err = proj_version_restore(&restored, &autosave, projects_of(req), req->auth.user_id,
                                    req->params[0], req->params[1], mode)) < 0)
        return err;
    out = json_pack("{s:o, s:o?, s:s}", "restored", version_json(req, restored), "autosave",
                    autosave ? version_json(req, autosave) : NULL, "mode",
                    mode == PROJ_RESTORE_EXACT ? "exact" : "keep_untracked");
    proj_version_free(restored);
    proj_version_free(autosave);
    return respond(res, 200, out);
}

/* "train.ipynb" -> Content-Disposition for "train.py": the base name with
 * the new extension, ASCII-only in filename= (anything else becomes '_') and
 * exact in filename*= (RFC 6266/8187 percent-encoding). */
static const char *disposition(gw_request *req, const char *path, const char *ext)
{
    const char *base = strrchr(path, '/');
    size_t n, cap;
    char *ascii, *pct, *out;

    base = base ? base + 1 : path;
    n = strlen(base);
    if (n > 6 && strcasecmp(base + n - 6, ".ipynb") == 0)
        n -= 6;
    cap = n + strlen(ext) + 1;
    ascii = ed_arena_alloc(req->arena, cap);
    pct = ed_arena_alloc(req->arena, cap * 3);
    out = ed_arena_alloc(req->arena, cap * 4 + 64);
    if (ascii == NULL || pct == NULL || out == NULL)
        return NULL;
    snprintf(ascii, cap, "%.*s%s", (int)n, base, ext);
    for (size_t i = 0, j = 0; i < cap; i++) {
        unsigned char c = (unsigned char)ascii[i];
        bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                     c == '.' || c == '-' || c == '_';
        if (c == '\0') {
            pct[j] = '\0';
            break;
        }
        if (plain) {
            pct[j++] = (char)c;
        } else {
            snprintf(pct + j, 4, "%%%02X", c);
            j += 3;
        }
        if (c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '%' || c == ';')
            ascii[i] = '_';
    }
    snprintf(out, cap * 4 + 64, "attachment; filename=\"%s\"; filename*=UTF-8''%s", ascii, pct);
    return out;
}

/* GET /api/v1/projects/{id}/export/{path*}?format=py|ipynb[&version=]: a
 * notebook as a download. py: the percent-format script (proj_nb_export_py);
 * ipynb: the file's bytes. HTML is rendered by the web app (it needs the
 * app's Markdown and output renderers), not here. */
static int export_notebook(gw_request *req, gw_response *res)
{
    const char *format = gw_request_query(req, "format"), *version = gw_request_query(req, "version");
    const char *path = req->params[1], *cd;
    size_t plen = strlen(path), len = 0, pylen = 0;
    char *buf = NULL, *py = NULL;
    bool as_py;
    int err;

    if (format == NULL || (strcmp(format, "py") != 0 && strcmp(format, "ipynb") != 0))
        return ed_error_set(ED_EINVAL, "format: \"py\" or \"ipynb\" (HTML is made by the web "
                                       "app: the notebook's Download menu)");
    as_py = strcmp(format, "py") == 0;
    if (plen < 6 || strcasecmp(path + plen - 6, ".ipynb") != 0)
        return ed_error_set(ED_EUNPROC, "only notebooks (.ipynb) can be exported; '%.200s' is not one",
                            path);
    if ((err = proj_file_read(&buf, &len, projects_of(req), req->auth.user_id, req->params[0],
                              path, version && *version ? version : NULL)) < 0)
        return err;
    if (as_py) {
        err = proj_nb_export_py(&py, &pylen, buf, len);
        free(buf);
        if (err < 0)
            return err;
        buf = py;
        len = pylen;
    }
    if ((cd = disposition(req, path, as_py ? ".py" : ".ipynb")) == NULL) {
        free(buf);
        return ed_error_set(ED_ENOMEM, "export");
    }
    gw_response_header(res, "Content-Disposition", cd);
    gw_response_header(res, "Cache-Control", "private, no-cache");
    gw_response_header(res, "Content-Security-Policy", "sandbox");
    return gw_respond_bytes(res, 200, as_py ? "text/x-python; charset=utf-8" : "application/x-ipynb+json",
                            buf, len);
}

/* POST /api/v1/projects/{id}/fork -> 201 a new private project */
static int fork_project(gw_request *req, gw_response *res)
{
    proj *p = NULL;
    json_t *out;
    int err;

    if ((err = proj_fork(&p, projects_of(req), req->auth.user_id, req->params[0])) < 0)
        return err;
    out = project_json(req, p);
    proj_free(p);
    return respond(res, 201, out);
}

#define R (GW_AUTH | GW_SCOPE_READ)
#define W (GW_AUTH | GW_SCOPE_WRITE)
/* Public projects read without signing in; with a credential as R. */
#define A (GW_AUTH_OPTIONAL | GW_SCOPE_READ)

const gw_route gw__routes_projects[] = {
    {"POST", "/api/v1/projects", create_project, W, "Create a project"},
    {"GET", "/api/v1/projects", list_projects, R, "List my projects and public ones"},
    {"GET", "/api/v1/projects/{id}", get_project, A, "Get a project (public ones without signing in)"},
    {"PATCH", "/api/v1/projects/{id}", update_project, W, "Change name, description, visibility"},
    {"DELETE", "/api/v1/projects/{id}", delete_project, W, "Delete a project and its repository"},
    {"GET", "/api/v1/projects/{id}/files/{path*}", read_file, A, "Read a file (?version=)"},
    {"PUT", "/api/v1/projects/{id}/files/{path*}", write_file, W, "Write a file (raw body)"},
    {"DELETE", "/api/v1/projects/{id}/files/{path*}", delete_file, W, "Delete a file"},
    {"POST", "/api/v1/projects/{id}/versions", create_version, W, "Commit the working tree"},
    {"GET", "/api/v1/projects/{id}/versions", list_versions, R, "List versions, newest first"},
    {"POST", "/api/v1/projects/{id}/versions/{vid}/restore", restore_version, W,
     "Restore a version over the working tree (autosaving first; mode keep_untracked|exact)"},
    {"GET", "/api/v1/projects/{id}/diff", diff_file, R,
     "Diff a file between two versions or the working tree (?path=&from=&to=; notebook-aware)"},
    {"POST", "/api/v1/projects/{id}/fork", fork_project, W, "Fork into a new private project"},
    {"GET", "/api/v1/projects/{id}/export/{path*}", export_notebook, A,
     "Download a notebook as a script or as itself (?format=py|ipynb, ?version=)"},
    {NULL, NULL, NULL, 0, NULL},
};
