/* response.c - what handlers fill: status, body, content type, headers. The
 * core (server.c) turns it into a libmicrohttpd response. */
#include "gw_int.h"

#include "ed_error.h"

#include <stdlib.h>
#include <string.h>

static void set_body(gw_response *res, char *buf, size_t len)
{
    free(res->body);
    res->body = buf;
    res->body_len = len;
}

int gw_respond_json(gw_response *res, int status, json_t *body)
{
    char *text = NULL;

    if (body != NULL) {
        text = json_dumps(body, JSON_COMPACT | JSON_ENCODE_ANY);
        json_decref(body);
    }
    res->status = status;
    res->content_type = "application/json";
    /* Out of memory (json_pack or json_dumps): an empty body, same status. */
    set_body(res, text, text ? strlen(text) : 0);
    return 0;
}

int gw_respond_bytes(gw_response *res, int status, const char *content_type, char *buf,
                     size_t len)
{
    res->status = status;
    res->content_type = content_type ? content_type : "application/octet-stream";
    set_body(res, buf, buf ? len : 0);
    return 0;
}

int gw_respond_empty(gw_response *res, int status)
{
    res->status = status;
    set_body(res, NULL, 0);
    return 0;
}

int gw_response_header(gw_response *res, const char *name, const char *value)
{
    gw_header *h, **tail;

    if (res->arena == NULL || (h = ed_arena_calloc(res->arena, 1, sizeof(*h))) == NULL ||
        (h->name = ed_arena_strdup(res->arena, name)) == NULL ||
        (h->value = ed_arena_strdup(res->arena, value)) == NULL)
        return ed_error_set(ED_ENOMEM, "response header %s", name);
    /* Keep the order handlers add them in (several Set-Cookie, say). */
    for (tail = &res->headers; *tail; tail = &(*tail)->next)
        ;
    *tail = h;
    return 0;
}
