/*
 * router.c - match a method and a raw URL path against the route tables.
 *
 * Matching works on the raw (still percent-encoded) path split at '/', and
 * each segment is decoded on its own, so "%2F" inside a segment never creates
 * a new segment: /files/a%2Fb matches {id} with "a/b", not two segments.
 */
#include "gw_int.h"

#include "ed_error.h"

#include <stdio.h>
#include <string.h>

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

int gw__pct_decode(char **out, ed_arena *a, const char *s, size_t n, bool plus_is_space)
{
    char *d = ed_arena_alloc(a, n + 1);
    size_t j = 0;

    *out = NULL;
    if (d == NULL)
        return ed_error_set(ED_ENOMEM, "decoding the URL");
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '%') {
            if (i + 2 >= n)
                return ed_error_set(ED_EINVAL, "malformed percent-escape in the URL");
            int hi = hexval(s[i + 1]), lo = hexval(s[i + 2]);
            if (hi < 0 || lo < 0)
                return ed_error_set(ED_EINVAL, "malformed percent-escape in the URL");
            if (hi == 0 && lo == 0)
                return ed_error_set(ED_EINVAL, "encoded NUL (%%00) in the URL");
            d[j++] = (char)(hi * 16 + lo);
            i += 2;
        } else if (s[i] == '+' && plus_is_space) {
            d[j++] = ' ';
        } else if (s[i] == '\0') {
            return ed_error_set(ED_EINVAL, "NUL in the URL");
        } else {
            d[j++] = s[i];
        }
    }
    d[j] = '\0';
    *out = d;
    return 0;
}

/* Does `pattern` match `path`? Fills params (decoded) when it does.
 * 1 match, 0 no match, <0 error (bad escape in a parameter). */
static int match_pattern(const char *pattern, const char *path, const char **params,
                         int *nparams, ed_arena *a)
{
    const char *p = pattern, *s = path;
    int np = 0, err;

    while (*p && *s) {
        if (*p != '/' || *s != '/')
            return 0;
        p++;
        s++;
        const char *pend = strchr(p, '/');
        const char *send = strchr(s, '/');
        size_t plen = pend ? (size_t)(pend - p) : strlen(p);
        size_t slen = send ? (size_t)(send - s) : strlen(s);

        if (plen >= 2 && p[0] == '{' && p[plen - 1] == '}') {
            bool rest = plen >= 3 && p[plen - 2] == '*';
            char *val;
            if (rest) {
                slen = strlen(s);      /* the rest of the path, slashes included */
                pend = NULL;
            }
            if (slen == 0 || np >= GW_MAX_PARAMS)
                return 0;
            if ((err = gw__pct_decode(&val, a, s, slen, false)) < 0)
                return err;
            params[np++] = val;
        } else {
            /* A literal segment compares decoded: /api/v%31 is /api/v1. */
            char *val;
            if ((err = gw__pct_decode(&val, a, s, slen, false)) < 0)
                return err;
            if (strlen(val) != plen || memcmp(val, p, plen) != 0)
                return 0;
        }
        p += plen;
        s += slen;
    }
    if (*p || *s)
        return 0;
    *nparams = np;
    return 1;
}

static void allow_add(char *allow, size_t cap, const char *method)
{
    size_t ml = strlen(method), len = strlen(allow);
    const char *q = allow;

    while ((q = strstr(q, method)) != NULL) {
        if ((q == allow || q[-1] == ' ') && (q[ml] == ',' || q[ml] == '\0'))
            return;  /* already listed */
        q += ml;
    }
    snprintf(allow + len, cap - len, "%s%s", len ? ", " : "", method);
}

int gw__route_match(gw_route_match *m, const gw_route *const *tables, const char *method,
                    const char *raw_path, ed_arena *a)
{
    const char *params[GW_MAX_PARAMS];
    int np = 0, r;
    bool head = strcmp(method, "HEAD") == 0;

    memset(m, 0, sizeof(*m));
    if (raw_path == NULL || raw_path[0] != '/')
        return ed_error_set(ED_EINVAL, "the URL path must start with '/'");
    for (const gw_route *const *t = tables; *t; t++) {
        for (const gw_route *rt = *t; rt->method; rt++) {
            if ((r = match_pattern(rt->pattern, raw_path, params, &np, a)) < 0)
                return r;
            if (r == 0)
                continue;
            if (strcmp(rt->method, method) == 0 || (head && strcmp(rt->method, "GET") == 0)) {
                if (m->route == NULL || (head && strcmp(rt->method, "HEAD") == 0 &&
                                         strcmp(m->route->method, "GET") == 0)) {
                    m->route = rt;
                    m->nparams = np;
                    memcpy(m->params, params, sizeof(params[0]) * (size_t)np);
                }
                if (!head)
                    return 0;
            }
            allow_add(m->allow, sizeof(m->allow), rt->method);
        }
    }
    if (m->route != NULL)
        return 0;
    if (m->allow[0])
        return ed_error_set(ED_ENOTFOUND, "method %s is not allowed here (allowed: %s)", method,
                            m->allow);
    return ed_error_set(ED_ENOTFOUND, "no route for %s", raw_path);
}
