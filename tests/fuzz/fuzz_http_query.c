/*
 * fuzz_http_query.c - what a handler reads from a request without
 * libmicrohttpd: the query string (gw_request_query, gw_request_page, which
 * do their own %XX and '+' decoding) and the JSON body (gw_request_json).
 *
 * Headers and cookies are not covered here: the gateway has no parser of
 * its own for them, it asks libmicrohttpd (MHD_lookup_connection_value).
 *
 * Input: "QUERY\nBODY" - everything before the first newline is the raw
 * query string after '?', the rest the request body.
 */
#include "fuzz.h"

#include "ed_arena.h"
#include "ed_error.h"
#include "gw_int.h"

static const char *const names[] = {"limit", "cursor", "q", "owner", "", "a b", "state", "x"};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *nl = memchr(data, '\n', size);
    size_t qlen = nl ? (size_t)(nl - data) : size;
    gw_request req;
    char *query, *body = NULL;
    json_t *doc;
    const char *cursor;
    int limit;

    memset(&req, 0, sizeof(req));
    if ((req.arena = ed_arena_new(0)) == NULL)
        abort();
    query = fuzz_strndup(data, qlen);
    req.query = query;
    req.method = "GET";
    req.path = "/api/v1/projects";
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        const char *v = gw_request_query(&req, names[i]);
        if (v != NULL)
            (void)strlen(v);
    }
    if (gw_request_page(&limit, &cursor, &req) == 0 && (limit < 1 || limit > 500))
        abort();

    if (nl != NULL) {
        size_t blen = size - qlen - 1;
        body = fuzz_strndup(nl + 1, blen);
        req.body = body;
        req.body_len = blen;
        if (gw_request_json(&doc, &req) == 0 && !json_is_object(doc))
            abort();
    }
    ed_arena_free(req.arena);   /* drops the parsed body too */
    free(body);
    free(query);
    ed_error_clear();
    return 0;
}
