/*
 * ed_buf.h - a growable byte/string buffer (in the spirit of Redis' sds).
 *
 * The buffer is always NUL-terminated so `b.data` can be used as a C string.
 * A zero-initialised ed_buf is empty and valid.
 *
 *     ed_buf b = {0};
 *     ed_buf_printf(&b, "%d items", n);
 *     puts(b.data);
 *     ed_buf_free(&b);
 */
#ifndef ED_BUF_H
#define ED_BUF_H

#include <stdarg.h>
#include <stddef.h>

typedef struct ed_buf {
    char  *data;  /* NUL-terminated; NULL while nothing was ever appended */
    size_t len;   /* bytes used, excluding the terminator */
    size_t cap;   /* bytes allocated */
} ed_buf;

/* Make room for `extra` more bytes (plus the terminator). ED_ENOMEM on failure. */
int ed_buf_reserve(ed_buf *b, size_t extra);
/* Append bytes / a C string / formatted text. 0 or ED_ENOMEM. */
int ed_buf_append(ed_buf *b, const void *p, size_t n);
int ed_buf_puts(ed_buf *b, const char *s);
int ed_buf_printf(ed_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int ed_buf_vprintf(ed_buf *b, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));
/* Empty the buffer, keeping its memory. */
void ed_buf_reset(ed_buf *b);
/* Hand the bytes to the caller (who frees them with free()); the buffer is left
 * empty. Never NULL unless out of memory. */
char *ed_buf_steal(ed_buf *b);
void ed_buf_free(ed_buf *b);

#endif
