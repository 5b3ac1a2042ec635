#include "ed_buf.h"
#include "ed_error.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int ed_buf_reserve(ed_buf *b, size_t extra)
{
    size_t need = b->len + extra + 1, cap;
    char *p;

    if (need < b->len)
        return ed_error_set(ED_ENOMEM, "buffer size overflow");
    if (need <= b->cap)
        return 0;
    cap = b->cap ? b->cap : 64;
    while (cap < need)
        cap = cap * 2 > cap ? cap * 2 : need;
    if ((p = realloc(b->data, cap)) == NULL)
        return ed_error_set(ED_ENOMEM, "buffer of %zu bytes", cap);
    b->data = p;
    b->cap = cap;
    return 0;
}

int ed_buf_append(ed_buf *b, const void *p, size_t n)
{
    int err;

    if ((err = ed_buf_reserve(b, n)) < 0)
        return err;
    if (n)
        memcpy(b->data + b->len, p, n);
    b->len += n;
    b->data[b->len] = '\0';
    return 0;
}

int ed_buf_puts(ed_buf *b, const char *s) { return ed_buf_append(b, s, strlen(s)); }

int ed_buf_vprintf(ed_buf *b, const char *fmt, va_list ap)
{
    va_list ap2;
    int n, err;

    va_copy(ap2, ap);
    n = vsnprintf(NULL, 0, fmt, ap2);
    va_end(ap2);
    if (n < 0)
        return ed_error_set(ED_EINVAL, "bad format");
    if ((err = ed_buf_reserve(b, (size_t)n)) < 0)
        return err;
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    b->len += (size_t)n;
    return 0;
}

int ed_buf_printf(ed_buf *b, const char *fmt, ...)
{
    va_list ap;
    int err;

    va_start(ap, fmt);
    err = ed_buf_vprintf(b, fmt, ap);
    va_end(ap);
    return err;
}

void ed_buf_reset(ed_buf *b)
{
    b->len = 0;
    if (b->data)
        b->data[0] = '\0';
}

char *ed_buf_steal(ed_buf *b)
{
    char *p;

    if (b->data == NULL && ed_buf_reserve(b, 0) < 0)
        return NULL;
    b->data[b->len] = '\0';
    p = b->data;
    b->data = NULL;
    b->len = b->cap = 0;
    return p;
}

void ed_buf_free(ed_buf *b)
{
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}
