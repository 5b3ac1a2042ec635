/* meta.c - health, metrics, version and the OpenAPI document (all public). */
#include "gw_int.h"
#include "metrics.h"
#include "sched.h"

#include "ed_error.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef EDDY_HAVE_CUDA
#define EDDY_HAVE_CUDA 0
#endif

static int get_healthz(gw_request *req, gw_response *res)
{
    sqlite3 *db = ed_store_db(req->srv->store);
    sqlite3_stmt *st = NULL;
    int rc;

    if (db == NULL)
        return ed_error_set(ED_EBUSY, "the store is not answering: %s", ed_error_last());
    rc = sqlite3_prepare_v2(db, "SELECT 1", -1, &st, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_step(st);
    sqlite3_finalize(st);
    if (rc != SQLITE_ROW)
        return ed_error_set(ED_EBUSY, "the store is not answering: %s", sqlite3_errmsg(db));
    return gw_respond_json(res, 200, json_pack("{s:s}", "status", "ok"));
}

static int get_metrics(gw_request *req, gw_response *res)
{
    char *text;
    size_t len;
    int err;

    if ((err = gw__metrics_access_check(req)) < 0)   /* metrics_access (metrics.c) */
        return err;
    if ((err = gw__metrics_render(&text, &len, req->srv->metrics)) < 0)
        return err;
    return gw_respond_bytes(res, 200, "text/plain; version=0.0.4; charset=utf-8", text, len);
}

/* `cuda` says whether kernels can compute on a GPU: the framework's CUDA
 * backend was built (its plugin, paddle/libeddy_fw_cuda.so, is next to the
 * package jobs import) and NVML found at least one GPU (sched_gpu_compute:
 * nothing is loaded, CUDA never initialised in the server, which would
 * take device memory). `cuda_toolkit` says only that nvcc was found at
 * build time (the NCCL communicator and the CUDA sources compile);
 * `cuda_detail` what is missing when `cuda` is false. */
static int get_version(gw_request *req, gw_response *res)
{
    char why[300] = "";
    bool cuda = req->srv->sched && sched_gpu_compute(req->srv->sched, why, sizeof(why));

    if (req->srv->sched == NULL)
        snprintf(why, sizeof(why), "the scheduler is not running");
    return gw_respond_json(res, 200,
                           json_pack("{s:s,s:s,s:b,s:b,s:o}", "version", EDDY_VERSION, "framework", EDDY_VERSION,
                                     "cuda", cuda, "cuda_toolkit", EDDY_HAVE_CUDA, "cuda_detail",
                                     cuda ? json_null() : json_string(why)));
}

/* ---- OpenAPI ------------------------------------------------------------- */

static const struct {
    int         status;
    const char *name;    /* components/responses key */
    const char *desc;
} openapi_errors[] = {
    {400, "BadRequest", "Malformed request or invalid fields (bad_request)"},
    {401, "Unauthorized", "Missing or invalid credentials (unauthorized)"},
    {402, "QuotaExceeded", "Over a quota or out of funds (quota_exceeded)"},
    {403, "Forbidden", "Authenticated but not allowed (forbidden)"},
    {404, "NotFound", "No such object (not_found)"},
    {409, "Conflict", "Conflicts with existing state (conflict)"},
    {413, "PayloadTooLarge", "Request body over the limit (payload_too_large)"},
    {422, "Unprocessable", "Well-formed but refused (unprocessable)"},
    {429, "RateLimited", "Rate limited; see Retry-After (rate_limited)"},
    {500, "Internal", "Server error (internal)"},
    {503, "Unavailable", "Temporarily unavailable (unavailable)"},
};

static const struct {
    unsigned    flag;
    const char *name;
} scope_names[] = {
    {GW_SCOPE_READ, "read"},   {GW_SCOPE_WRITE, "write"}, {GW_SCOPE_RUN, "run"},
    {GW_SCOPE_SERVE, "serve"}, {GW_SCOPE_ADMIN, "admin"},
};

static json_t *error_ref(const char *name)
{
    char ref[96];
    snprintf(ref, sizeof(ref), "#/components/responses/%s", name);
    return json_pack("{s:s}", "$ref", ref);
}

/* "/files/{path*}" -> "/files/{path}" with the parameter names listed. */
static json_t *openapi_path(char *out, size_t cap, const char *pattern)
{
    json_t *params = json_array();
    size_t j = 0;

    for (const char *p = pattern; *p && j + 1 < cap; p++) {
        if (*p == '{') {
            const char *end = strchr(p, '}');
            if (end == NULL)
                break;
            size_t n = (size_t)(end - p - 1);
            bool rest = n > 0 && p[n] == '*';
            char name[64];
            snprintf(name, sizeof(name), "%.*s", (int)(rest ? n - 1 : n), p + 1);
            json_array_append_new(
                params, json_pack("{s:s,s:s,s:b,s:s,s:{s:s}}", "name", name, "in", "path",
                                  "required", 1, "description",
                                  rest ? "the rest of the path (may contain '/')" : "one path segment",
                                  "schema", "type", "string"));
            j += (size_t)snprintf(out + j, cap - j, "{%s}", name);
            if (j >= cap)
                j = cap - 1;
            p = end;
        } else {
            out[j++] = *p;
        }
    }
    out[j] = '\0';
    return params;
}

static json_t *openapi_operation(const gw_route *rt, json_t *params)
{
    json_t *op = json_object(), *responses = json_object(), *scopes = json_array();
    char lower[16], opid[300];
    size_t k = 0;

    json_object_set_new(op, "summary", json_string(rt->summary ? rt->summary : ""));
    for (const char *m = rt->method; *m && k + 1 < sizeof(lower); m++)
        lower[k++] = (char)tolower((unsigned char)*m);
    lower[k] = '\0';
    snprintf(opid, sizeof(opid), "%s %s", lower, rt->pattern);
    json_object_set_new(op, "operationId", json_string(opid));
    if (json_array_size(params))
        json_object_set(op, "parameters", params);
    json_object_set_new(responses, "200", json_pack("{s:s}", "description", "Success"));
    for (size_t i = 0; i < sizeof(openapi_errors) / sizeof(openapi_errors[0]); i++) {
        int s = openapi_errors[i].status;
        bool auth = (rt->flags & (GW_AUTH | GW_AUTH_OPTIONAL)) != 0;
        bool has_body = strcmp(rt->method, "POST") == 0 || strcmp(rt->method, "PUT") == 0 ||
                        strcmp(rt->method, "PATCH") == 0;
        if ((s == 401 || s == 403) && !auth)
            continue;
        if (s == 413 && !has_body)
            continue;
        char code[8];
        snprintf(code, sizeof(code), "%d", s);
        json_object_set_new(responses, code, error_ref(openapi_errors[i].name));
    }
    json_object_set_new(op, "responses", responses);
    for (size_t i = 0; i < sizeof(scope_names) / sizeof(scope_names[0]); i++)
        if (rt->flags & scope_names[i].flag)
            json_array_append_new(scopes, json_string(scope_names[i].name));
    if (rt->flags & GW_AUTH) {
        json_object_set_new(op, "security",
                            json_pack("[{s:[]},{s:O}]", "sessionCookie", "apiKey", scopes));
    } else if (rt->flags & GW_AUTH_OPTIONAL) {
        json_object_set_new(op, "security",
                            json_pack("[{},{s:[]},{s:O}]", "sessionCookie", "apiKey", scopes));
    } else {
        json_object_set_new(op, "security", json_array());
    }
    if (json_array_size(scopes))
        json_object_set(op, "x-eddy-scopes", scopes);
    json_decref(scopes);
    return op;
}

/* The document is built per request: route tables are static, so it is
 * cheap and always matches what the router serves. */
static json_t *openapi_document(void)
{
    json_t *doc, *paths = json_object(), *responses = json_object();

    for (const gw_route *const *t = gw__route_tables; *t; t++) {
        for (const gw_route *rt = *t; rt->method; rt++) {
            char path[512], lower[16];
            size_t k = 0;
            json_t *params = openapi_path(path, sizeof(path), rt->pattern);
            json_t *item = json_object_get(paths, path);
            if (item == NULL) {
                item = json_object();
                json_object_set_new(paths, path, item);
            }
            for (const char *m = rt->method; *m && k + 1 < sizeof(lower); m++)
                lower[k++] = (char)tolower((unsigned char)*m);
            lower[k] = '\0';
            if (json_object_get(item, lower) == NULL)
                json_object_set_new(item, lower, openapi_operation(rt, params));
            json_decref(params);
        }
    }
    for (size_t i = 0; i < sizeof(openapi_errors) / sizeof(openapi_errors[0]); i++)
        json_object_set_new(
            responses, openapi_errors[i].name,
            json_pack("{s:s,s:{s:{s:{s:s}}}}", "description", openapi_errors[i].desc, "content",
                      "application/json", "schema", "$ref", "#/components/schemas/Error"));
    doc = json_pack(
        "{s:s,s:{s:s,s:s,s:s},s:o,s:{s:o,s:{s:{s:s,s:s,s:s,s:s},s:{s:s,s:s,s:s}},"
        "s:{s:{s:s,s:[s],s:{s:{s:s,s:[s,s,s],s:{s:{s:s},s:{s:s},s:{s:s}}}}}}}}",
        "openapi", "3.0.3",
        "info", "title", "Eddy API", "version", EDDY_VERSION, "description",
        "Eddy REST API v1. Errors are {\"error\":{\"code\",\"message\",\"request_id\"}}.",
        "paths", paths,
        "components", "responses", responses, "securitySchemes",
        "sessionCookie", "type", "apiKey", "in", "cookie", "name", "eddy_session", "description",
        "Session cookie from POST /api/v1/auth/login; state-changing requests also need the "
        "X-CSRF-Token header",
        "apiKey", "type", "http", "scheme", "bearer", "description",
        "API key: Authorization: Bearer eddy_<env>_<random>_<checksum>",
        "schemas", "Error", "type", "object", "required", "error", "properties", "error", "type",
        "object", "required", "code", "message", "request_id", "properties", "code", "type",
        "string", "message", "type", "string", "request_id", "type", "string");
    return doc;
}

static int get_openapi(gw_request *req, gw_response *res)
{
    json_t *doc = openapi_document();

    (void)req;
    if (doc == NULL)
        return ed_error_set(ED_ENOMEM, "openapi document");
    return gw_respond_json(res, 200, doc);
}

const gw_route gw__routes_meta[] = {
    {"GET", "/healthz", get_healthz, GW_PUBLIC, "Liveness and store health"},
    {"GET", "/metrics", get_metrics, GW_AUTH_OPTIONAL, "Prometheus metrics (metrics_access: loopback peers, admins, or anyone)"},
    {"GET", "/api/v1/version", get_version, GW_PUBLIC, "Server, framework and CUDA versions"},
    {"GET", "/api/v1/openapi.json", get_openapi, GW_PUBLIC, "This OpenAPI 3 document"},
    {NULL, NULL, NULL, 0, NULL},
};
