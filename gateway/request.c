/* request.c - the accessors handlers read a request through. Strings are
 * borrowed for the request (libmicrohttpd's or the request arena's). */
#include "gw_int.h"

#include "ed_error.h"

#include <errno.h>
#include <microhttpd.h>
#include <stdlib.h>
#include <string.h>

const char *gw_request_header(gw_request *req, const char *name)
{
    if (req->conn == NULL)
        return NULL;
    return MHD_lookup_connection_value(req->conn, MHD_HEADER_KIND, name);
}

const char *gw_request_query(gw_request *req, const char *name)
{
    size_t nl = strlen(name);

    /* Parsed from the raw query so decoding is ours: %XX and '+' as space. */
    for (const char *p = req->query; p && *p;) {
        const char *amp = strchr(p, '&');
        size_t len = amp ? (size_t)(amp - p) : strlen(p);
        const char *eq = memchr(p, '=', len);
        size_t klen = eq ? (size_t)(eq - p) : len;
        char *key, *val;

        if (gw__pct_decode(&key, req->arena, p, klen, true) == 0 && strlen(key) == nl &&
            memcmp(key, name, nl) == 0) {
            if (eq == NULL)
                return "";
            if (gw__pct_decode(&val, req->arena, eq + 1, len - klen - 1, true) == 0)
                return val;
            return NULL;
        }
        if (amp == NULL)
            break;
        p = amp + 1;
    }
    return NULL;
}

const char *gw_request_cookie(gw_request *req, const char *name)
{
    if (req->conn == NULL)
        return NULL;
    return MHD_lookup_connection_value(req->conn, MHD_COOKIE_KIND, name);
}

int gw_request_json(json_t **out, gw_request *req)
{
    json_t *doc = NULL;
    int err;

    *out = NULL;
    if (req->body == NULL || req->body_len == 0)
        return ed_error_set(ED_EINVAL, "request body is empty: expected a JSON object");
    if ((err = ed_json_parse(&doc, req->body, req->body_len, ED_JSON_MAX_DEPTH)) < 0)
        return err;
    if (!json_is_object(doc)) {
        json_decref(doc);
        return ed_error_set(ED_EINVAL, "request body must be a JSON object");
    }
    if (ed_arena_on_free(req->arena, (ed_cleanup_fn)json_decref, doc) < 0) {
        json_decref(doc);
        return ed_error_set(ED_ENOMEM, "request body");
    }
    *out = doc;
    return 0;
}

int gw_request_page(int *limit, const char **cursor, gw_request *req)
{
    const char *l = gw_request_query(req, "limit");
    const char *c = gw_request_query(req, "cursor");

    *limit = 50;
    *cursor = NULL;
    if (l != NULL) {
        char *end;
        long v;
        errno = 0;
        v = strtol(l, &end, 10);
        if (*l == '\0' || *end != '\0' || errno != 0 || v < 1 || v > 500)
            return ed_error_set(ED_EINVAL, "limit must be an integer from 1 to 500");
        *limit = (int)v;
    }
    if (c != NULL && *c != '\0')
        *cursor = c;
    return 0;
}
