/*
 * wire.c - the hub <-> replica frames (serve_wire.h). Plain libc.
 */
#include "serve_wire.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

void serve__wbuf_put(serve_wbuf *b, const void *p, size_t n)
{
    if (b->oom)
        return;
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        char *q;
        while (cap < b->len + n)
            cap *= 2;
        if ((q = realloc(b->p, cap)) == NULL) {
            b->oom = 1;
            return;
        }
        b->p = q;
        b->cap = cap;
    }
    memcpy(b->p + b->len, p, n);
    b->len += n;
}

void serve__wbuf_u32(serve_wbuf *b, uint32_t v)
{
    serve__wbuf_put(b, &v, 4);   /* x86_64 and aarch64: little-endian */
}

void serve__wbuf_tensors(serve_wbuf *b, const serve_tensor *t, int n)
{
    serve__wbuf_u32(b, (uint32_t)n);
    for (int i = 0; i < n; i++) {
        uint16_t nl = (uint16_t)strlen(t[i].name);
        uint8_t dt = (uint8_t)t[i].dtype, nd = (uint8_t)t[i].ndim;
        uint64_t nb = t[i].nbytes;
        serve__wbuf_put(b, &nl, 2);
        serve__wbuf_put(b, t[i].name, nl);
        serve__wbuf_put(b, &dt, 1);
        serve__wbuf_put(b, &nd, 1);
        serve__wbuf_put(b, t[i].shape, sizeof(int64_t) * (size_t)t[i].ndim);
        serve__wbuf_put(b, &nb, 8);
        if (nb)
            serve__wbuf_put(b, t[i].data, nb);
    }
}

static int write_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

int serve__frame_write(int fd, uint32_t type, const void *payload, size_t len)
{
    uint32_t hdr[3] = {SERVE_WIRE_MAGIC, type, (uint32_t)len};

    if (len > SERVE_FRAME_MAX) {
        errno = EMSGSIZE;
        return -1;
    }
    if (write_all(fd, (const char *)hdr, sizeof(hdr)) < 0)
        return -1;
    return len ? write_all(fd, payload, len) : 0;
}

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int read_all(int fd, char *p, size_t n, int64_t deadline)
{
    while (n > 0) {
        ssize_t r;
        if (deadline >= 0) {
            struct pollfd pf = {fd, POLLIN, 0};
            int64_t left = deadline - mono_ms();
            int pr;
            if (left <= 0) {
                errno = ETIMEDOUT;
                return -1;
            }
            pr = poll(&pf, 1, (int)(left > 1000000 ? 1000000 : left));
            if (pr < 0 && errno == EINTR)
                continue;
            if (pr < 0)
                return -1;
            if (pr == 0)
                continue;
        }
        r = read(fd, p, n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            if (r == 0)
                errno = EPIPE;
            return -1;
        }
        p += r;
        n -= (size_t)r;
    }
    return 0;
}

int serve__frame_read(int fd, uint32_t *type, char **out, size_t *len, size_t max, int timeout_ms)
{
    uint32_t hdr[3];
    int64_t deadline = timeout_ms < 0 ? -1 : mono_ms() + timeout_ms;
    char *buf;

    *out = NULL;
    *len = 0;
    if (read_all(fd, (char *)hdr, sizeof(hdr), deadline) < 0)
        return -1;
    if (hdr[0] != SERVE_WIRE_MAGIC || hdr[2] > max || hdr[2] > SERVE_FRAME_MAX) {
        errno = EPROTO;
        return -1;
    }
    if ((buf = malloc(hdr[2] + 1u)) == NULL)
        return -1;
    if (read_all(fd, buf, hdr[2], deadline) < 0) {
        free(buf);
        return -1;
    }
    buf[hdr[2]] = '\0';
    *type = hdr[1];
    *out = buf;
    *len = hdr[2];
    return 0;
}

int serve__decode_u32(uint32_t *v, const char *p, size_t len, size_t *off)
{
    if (len - *off < 4 || *off > len)
        return -1;
    memcpy(v, p + *off, 4);
    *off += 4;
    return 0;
}

size_t serve__tensor_bytes(fw_dtype dtype, int ndim, const int64_t *shape, size_t limit, int *bad)
{
    size_t n = 1, es;

    *bad = 0;
    switch (dtype) {
    case FW_FLOAT32: case FW_INT32: es = 4; break;
    case FW_FLOAT64: case FW_INT64: es = 8; break;
    case FW_FLOAT16: case FW_BFLOAT16: es = 2; break;
    case FW_BOOL: case FW_UINT8: es = 1; break;
    default: *bad = 1; return 0;
    }
    if (ndim < 0 || ndim > SERVE_MAX_DIMS) {
        *bad = 1;
        return 0;
    }
    for (int i = 0; i < ndim; i++) {
        if (shape[i] < 0 || (shape[i] > 0 && n > limit / (size_t)shape[i])) {
            *bad = 1;
            return 0;
        }
        n *= (size_t)shape[i];
    }
    if (n > limit / es) {
        *bad = 1;
        return 0;
    }
    return n * es;
}

int serve__decode_tensors(serve_tensor *t, int *n, int max, const char *p, size_t len, size_t *off, char *err,
                          size_t cap)
{
    uint32_t cnt;

    *n = 0;
    if (serve__decode_u32(&cnt, p, len, off) < 0 || cnt > (uint32_t)max) {
        snprintf(err, cap, "bad tensor count");
        return -1;
    }
    for (uint32_t i = 0; i < cnt; i++) {
        serve_tensor *x = &t[i];
        uint16_t nl;
        uint8_t dt, nd;
        uint64_t nb;
        size_t want;
        int bad;

        memset(x, 0, sizeof(*x));
        if (len - *off < 2 || *off > len)
            goto trunc;
        memcpy(&nl, p + *off, 2);
        *off += 2;
        if (nl == 0 || nl > SERVE_NAME_MAX || len - *off < (size_t)nl + 2)
            goto trunc;
        memcpy(x->name, p + *off, nl);
        x->name[nl] = '\0';
        if (memchr(x->name, '\0', nl))
            goto trunc;
        *off += nl;
        dt = (uint8_t)p[(*off)++];
        nd = (uint8_t)p[(*off)++];
        if (dt >= FW_NDTYPES || nd > SERVE_MAX_DIMS || len - *off < (size_t)nd * 8 + 8)
            goto trunc;
        x->dtype = (fw_dtype)dt;
        x->ndim = nd;
        memcpy(x->shape, p + *off, (size_t)nd * 8);
        *off += (size_t)nd * 8;
        memcpy(&nb, p + *off, 8);
        *off += 8;
        want = serve__tensor_bytes(x->dtype, x->ndim, x->shape, SERVE_FRAME_MAX, &bad);
        if (bad || nb != want || len - *off < nb)
            goto trunc;
        if ((x->data = malloc(nb ? nb : 1)) == NULL) {
            snprintf(err, cap, "out of memory");
            return -1;
        }
        memcpy(x->data, p + *off, nb);
        x->nbytes = nb;
        *off += nb;
        (*n)++;
    }
    return 0;
trunc:
    for (int k = 0; k < *n; k++) {
        free(t[k].data);
        t[k].data = NULL;
    }
    *n = 0;
    snprintf(err, cap, "malformed tensor frame");
    return -1;
}

size_t serve_tensor_bytes(fw_dtype dtype, int ndim, const int64_t *shape, size_t limit, int *bad)
{
    return serve__tensor_bytes(dtype, ndim, shape, limit, bad);
}
