/*
 * fuzz_http_route.c - HTTP routing: gw__route_match() over route tables with
 * the gateway's real patterns, and gw__pct_decode() on raw bytes.
 *
 * Input: byte 0 picks the method, the rest is the raw (still
 * percent-encoded) URL path as libmicrohttpd hands it over. A match is
 * checked against the router's contract: at most GW_MAX_PARAMS parameters,
 * each a non-empty NUL-terminated string, and HEAD only ever matching GET.
 */
#include "fuzz.h"

#include "ed_arena.h"
#include "ed_error.h"
#include "gw_int.h"

#ifndef FUZZ_REAL_ROUTES
static int handler(gw_request *req, gw_response *res)
{
    (void)req;
    (void)res;
    return 0;
}

/* The gateway's patterns as of this writing (routes in gateway/ *_routes.c). */
static const gw_route table_a[] = {
    {"GET", "/healthz", handler, GW_PUBLIC, ""},
    {"GET", "/metrics", handler, GW_PUBLIC, ""},
    {"GET", "/api/v1/version", handler, GW_PUBLIC, ""},
    {"GET", "/api/v1/openapi.json", handler, GW_PUBLIC, ""},
    {"POST", "/api/v1/auth/login", handler, GW_PUBLIC, ""},
    {"POST", "/api/v1/auth/signup", handler, GW_PUBLIC, ""},
    {"GET", "/api/v1/me", handler, GW_AUTH, ""},
    {"GET", "/api/v1/keys", handler, GW_AUTH, ""},
    {"POST", "/api/v1/keys", handler, GW_AUTH, ""},
    {"DELETE", "/api/v1/keys/{id}", handler, GW_AUTH, ""},
    {"PATCH", "/api/v1/admin/users/{id}", handler, GW_AUTH, ""},
    {"POST", "/api/v1/admin/users/{id}/grants", handler, GW_AUTH, ""},
    {NULL, NULL, NULL, 0, NULL},
};
static const gw_route table_b[] = {
    {"GET", "/api/v1/projects", handler, GW_AUTH, ""},
    {"POST", "/api/v1/projects", handler, GW_AUTH, ""},
    {"GET", "/api/v1/projects/{id}", handler, GW_AUTH, ""},
    {"PATCH", "/api/v1/projects/{id}", handler, GW_AUTH, ""},
    {"DELETE", "/api/v1/projects/{id}", handler, GW_AUTH, ""},
    {"GET", "/api/v1/projects/{id}/files", handler, GW_AUTH, ""},
    {"GET", "/api/v1/projects/{id}/files/{path*}", handler, GW_AUTH, ""},
    {"PUT", "/api/v1/projects/{id}/files/{path*}", handler, GW_AUTH, ""},
    {"DELETE", "/api/v1/projects/{id}/files/{path*}", handler, GW_AUTH, ""},
    {"POST", "/api/v1/projects/{id}/versions/{vid}/restore", handler, GW_AUTH, ""},
    {"GET", "/api/v1/jobs/{id}/artifacts/{path*}", handler, GW_AUTH, ""},
    {"PUT", "/api/v1/admin/tiers/{name}", handler, GW_AUTH, ""},
    /* Synthetic: every parameter slot in use, and more parameters than slots. */
    {"GET", "/p/{a}/{b}/{c}/{d}/{e}/{f}/{g}/{h}", handler, GW_PUBLIC, ""},
    {"GET", "/q/{a}/{b}/{c}/{d}/{e}/{f}/{g}/{h}/{i}", handler, GW_PUBLIC, ""},
    {"GET", "/{x*}", handler, GW_PUBLIC, ""},
    {NULL, NULL, NULL, 0, NULL},
};
static const gw_route *const tables[] = {table_a, table_b, NULL};
#else
#define tables gw__route_tables
#endif

static const char *const methods[] = {"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS",
                                      "get"};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ed_arena *a;
    gw_route_match m;
    const char *method;
    char *path, *dec;
    int err;

    if (size < 1)
        return 0;
    if ((a = ed_arena_new(0)) == NULL)
        abort();
    method = methods[data[0] % (sizeof(methods) / sizeof(methods[0]))];
    path = fuzz_strndup(data + 1, size - 1);

    err = gw__route_match(&m, tables, method, path, a);
    if (err == 0) {
        if (m.route == NULL || m.nparams < 0 || m.nparams > GW_MAX_PARAMS)
            abort();
        for (int i = 0; i < m.nparams; i++)
            if (m.params[i] == NULL || m.params[i][0] == '\0')
                abort();
        if (strcmp(m.route->method, method) != 0 &&
            !(strcmp(method, "HEAD") == 0 && strcmp(m.route->method, "GET") == 0))
            abort();
    } else if (err != ED_ENOTFOUND && err != ED_EINVAL) {
        abort();
    } else if (memchr(m.allow, '\0', sizeof(m.allow)) == NULL) {
        abort();   /* Allow: must stay a C string */
    }

    /* The decoder alone, over the raw bytes (NULs included). */
    for (int plus = 0; plus < 2; plus++) {
        if (gw__pct_decode(&dec, a, (const char *)data + 1, size - 1, plus) == 0) {
            if (strlen(dec) > size - 1)
                abort();   /* decoding never grows the text */
        }
    }
    free(path);
    ed_arena_free(a);
    ed_error_clear();
    return 0;
}
