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

/* The name of the object member whose value starts before body[pos]: the
 * last "name": ahead of it, or NULL. Used to name the field of an integer too
 * large for jansson, which refuses the whole document. */
static char *member_before(ed_arena *a, const char *body, size_t pos)
{
    size_t i = pos, end;

    while (i > 0 && body[i - 1] != ':')
        i--;
    if (i == 0)
        return NULL;
    i--;                                            /* on the ':' */
    while (i > 0 && (body[i - 1] == ' ' || body[i - 1] == '\t' || body[i - 1] == '\n' ||
                     body[i - 1] == '\r'))
        i--;
    if (i == 0 || body[i - 1] != '"')
        return NULL;
    end = --i;                                      /* on the closing quote */
    while (i > 0 && body[i - 1] != '"')
        i--;
    if (i == 0 || end - i > 64)
        return NULL;
    for (size_t k = i; k < end; k++)
        if (body[k] == '\\' || (unsigned char)body[k] < 0x20)
            return NULL;
    return ed_arena_printf(a, "%.*s", (int)(end - i), body + i);
}

int gw_request_json(json_t **out, gw_request *req)
{
    json_t *doc = NULL;
    int err;

    *out = NULL;
    if (req->body == NULL || req->body_len == 0)
        return ed_error_set(ED_EINVAL, "request body is empty: expected a JSON object");
    if ((err = ed_json_parse(&doc, req->body, req->body_len, ED_JSON_MAX_DEPTH)) < 0) {
        /* jansson refuses integers beyond 64 bits for the whole body: answer as
         * the checked reader would for a value out of its range. */
        json_error_t jerr;
        json_t *again = json_loadb(req->body, req->body_len, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, &jerr);
        json_decref(again);
        if (again == NULL && strstr(jerr.text, "too big") != NULL) {
            const char *name = member_before(req->arena, req->body,
                                             jerr.position > 0 && (size_t)jerr.position <= req->body_len
                                                 ? (size_t)jerr.position : 0);
            if (name != NULL)
                return ed_error_set(ED_EUNPROC, "field '%s' is out of range: an integer of 64 bits at most",
                                    name);
            return ed_error_set(ED_EUNPROC, "an integer in the body is out of range (64 bits at most)");
        }
        return err;
    }
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

int gw_request_page_id(int *limit, int64_t *before, gw_request *req)
{
    const char *c;
    char *end;
    long long v;
    int err;

    *before = 0;
    if ((err = gw_request_page(limit, &c, req)) < 0 || c == NULL)
        return err;
    errno = 0;
    v = strtoll(c, &end, 10);
    if (*c < '0' || *c > '9' || *end != '\0' || errno != 0 || v <= 0)
        return ed_error_set(ED_EINVAL, "cursor '%s' is not one this API gave", c);
    *before = v;
    return 0;
}

int gw__json_int_check(int64_t *out, const json_t *v, const char *name, int64_t min, int64_t max)
{
    json_int_t n;

    /* jansson keeps 1.0, 1e12 and 1.5 as reals: none of them is an integer here. */
    if (!json_is_integer(v))
        return ed_error_set(ED_EUNPROC, "field '%s' must be an integer from %lld to %lld, not %s", name,
                            (long long)min, (long long)max,
                            json_is_real(v) ? "a number with a fraction or exponent"
                            : json_is_string(v) ? "a string"
                            : json_is_boolean(v) ? "a boolean"
                            : json_is_null(v) ? "null"
                            : "an object or array");
    n = json_integer_value(v);
    if (n < min || n > max)
        return ed_error_set(ED_EUNPROC, "field '%s' must be an integer from %lld to %lld (got %lld)", name,
                            (long long)min, (long long)max, (long long)n);
    *out = (int64_t)n;
    return 0;
}

int gw_json_int(int64_t *out, const json_t *obj, const char *name, int64_t min, int64_t max,
                bool required)
{
    const json_t *v = json_object_get(obj, name);

    if (v == NULL || json_is_null(v)) {
        if (required)
            return ed_error_set(ED_EINVAL, "field '%s' is required", name);
        return 0;
    }
    return gw__json_int_check(out, v, name, min, max);
}
