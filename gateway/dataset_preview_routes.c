/* dataset_preview_routes.c - previews and stats of a version's files (see
 * gw_int.h, gw__routes_dataset_previews). The work is datasets/'s (ds.h,
 * "previews and stats"); this file parses requests and shapes responses.
 *
 *   GET /api/v1/datasets/{id}/versions/{n}/preview/{path*}
 *       200 {kind: "table"|"image"|"text"|"json"|"none", size, media_type,
 *            columns?: [{name, type}], rows?, row_count?, width?, height?,
 *            thumbnail?: "data:image/png;base64,...", text?, truncated?, error?}
 *       202 {pending: true} with Retry-After: 1 while the worker computes it
 *   GET /api/v1/datasets/{id}/versions/{n}/stats
 *       200 {version, files, size_bytes, by_type: [{media_type, files, bytes}],
 *            by_extension: [{extension, files, bytes}]}
 *
 * {n} is a version number or "latest". Access is the dataset's: anyone who
 * may see it (anonymous callers too, for a public one); a dataset the caller
 * cannot see, an unknown version or path is 404. A preview never changes
 * (it is of a blob), so a 200 may be cached by the browser.
 */
#include "gw_int.h"
#include "ds.h"

#include "ed_error.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static ds *ds_of(gw_request *req) { return req->srv->datasets; }

/* {n}: a positive number or "latest" (0 for ds.h). */
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

static int get_preview(gw_request *req, gw_response *res)
{
    char *json = NULL;
    bool pending = false;
    int64_t n = 0;
    int err;

    if (!ds_of(req))
        return ed_error_set(ED_EBUSY, "datasets are not available");
    if ((err = parse_number(&n, req->params[1])) < 0 ||
        (err = ds_preview_get(&json, &pending, ds_of(req), req->auth.user_id, req->params[0], n,
                              req->params[2])) < 0)
        return err;
    if (pending) {
        gw_response_header(res, "Retry-After", "1");
        return gw_respond_json(res, 202, json_pack("{s:b}", "pending", 1));
    }
    /* of a blob: the same bytes give the same preview forever */
    gw_response_header(res, "Cache-Control", n > 0 ? "private, max-age=86400" : "private, no-cache");
    return gw_respond_bytes(res, 200, "application/json", json, strlen(json));
}

static int get_stats(gw_request *req, gw_response *res)
{
    char *json = NULL;
    int64_t n = 0;
    int err;

    if (!ds_of(req))
        return ed_error_set(ED_EBUSY, "datasets are not available");
    if ((err = parse_number(&n, req->params[1])) < 0 ||
        (err = ds_version_stats(&json, ds_of(req), req->auth.user_id, req->params[0], n)) < 0)
        return err;
    return gw_respond_bytes(res, 200, "application/json", json, strlen(json));
}

#define R (GW_AUTH_OPTIONAL | GW_SCOPE_READ)

const gw_route gw__routes_dataset_previews[] = {
    {"GET", "/api/v1/datasets/{id}/versions/{n}/preview/{path*}", get_preview, R,
     "A file's preview: table, image thumbnail, text or JSON head (202 while it is computed)"},
    {"GET", "/api/v1/datasets/{id}/versions/{n}/stats", get_stats, R,
     "A version's totals by media type and extension"},
    {NULL, NULL, NULL, 0, NULL},
};
