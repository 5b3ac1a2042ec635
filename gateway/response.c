/* response.c - what handlers fill: status, body, content type, headers. The
 * core (server.c) turns it into a libmicrohttpd response. */
#include "gw_int.h"

#include "ed_error.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void set_body(gw_response *res, char *buf, size_t len)
{
    free(res->body);
    res->body = buf;
    res->body_len = len;
    if (res->has_fd) {          /* another answer replaces a file (an error after gw_respond_fd) */
        close(res->fd);
        res->has_fd = false;
    }
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

int gw_respond_items(gw_response *res, json_t *items, int64_t next)
{
    char buf[32];
    json_t *body;

    if (items == NULL)
        return ed_error_set(ED_ENOMEM, "list");
    snprintf(buf, sizeof(buf), "%" PRId64, next);
    body = next > 0 ? json_pack("{s:o, s:s}", "items", items, "next_cursor", buf)
                    : json_pack("{s:o, s:n}", "items", items, "next_cursor");
    if (body == NULL)
        return ed_error_set(ED_ENOMEM, "list");
    return gw_respond_json(res, 200, body);
}

int gw_respond_page(gw_response *res, json_t *items, int limit)
{
    int64_t next = 0;

    if (items && limit > 0 && json_array_size(items) > (size_t)limit) {
        json_array_remove(items, (size_t)limit);
        next = json_integer_value(json_object_get(json_array_get(items, (size_t)limit - 1), "id"));
    }
    return gw_respond_items(res, items, next);
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

int gw_respond_fd(gw_response *res, int status, const char *content_type, int fd, uint64_t off, uint64_t len)
{
    res->status = status;
    res->content_type = content_type ? content_type : "application/octet-stream";
    set_body(res, NULL, 0);
    res->has_fd = true;
    res->fd = fd;
    res->fd_off = off;
    res->fd_len = len;
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
