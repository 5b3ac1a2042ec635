/*
 * kr_frame.c - length-prefixed JSON frames and Jupyter message envelopes.
 *
 * Kept free of Python so the gateway (and the tests) can link it alone.
 */
#include "kr.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "ed_error.h"

void kr_frame_header(unsigned char hdr[KR_FRAME_HDR], uint32_t len)
{
    hdr[0] = (unsigned char)(len >> 24);
    hdr[1] = (unsigned char)(len >> 16);
    hdr[2] = (unsigned char)(len >> 8);
    hdr[3] = (unsigned char)len;
}

uint32_t kr_frame_length(const unsigned char hdr[KR_FRAME_HDR])
{
    return ((uint32_t)hdr[0] << 24) | ((uint32_t)hdr[1] << 16) | ((uint32_t)hdr[2] << 8) |
           (uint32_t)hdr[3];
}

static int write_all(int fd, const void *buf, size_t len)
{
    const char *p = buf;

    while (len > 0) {
        ssize_t n = write(fd, p, len);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return ed_error_set(ED_EIO, "frame write: %s", strerror(errno));
        }
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

int kr_frame_write(int fd, const void *buf, size_t len)
{
    unsigned char hdr[KR_FRAME_HDR];
    int err;

    if (len > KR_FRAME_MAX)
        return ed_error_set(ED_ETOOBIG, "frame of %zu bytes (limit %u)", len, KR_FRAME_MAX);
    kr_frame_header(hdr, (uint32_t)len);
    /* Small frames go out in one write so a reader never sees a lone prefix. */
    if (len <= 4096) {
        char tmp[KR_FRAME_HDR + 4096];
        memcpy(tmp, hdr, KR_FRAME_HDR);
        memcpy(tmp + KR_FRAME_HDR, buf, len);
        return write_all(fd, tmp, KR_FRAME_HDR + len);
    }
    if ((err = write_all(fd, hdr, KR_FRAME_HDR)) < 0)
        return err;
    return write_all(fd, buf, len);
}

/* Read exactly `len` bytes. Returns 0, 1 for EOF before the first byte, or
 * ED_EIO. */
static int read_all(int fd, void *buf, size_t len)
{
    char *p = buf;
    size_t got = 0;

    while (got < len) {
        ssize_t n = read(fd, p + got, len - got);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return ed_error_set(ED_EIO, "frame read: %s", strerror(errno));
        }
        if (n == 0) {
            if (got == 0)
                return 1;
            return ed_error_set(ED_EIO, "connection closed inside a frame (%zu of %zu bytes)",
                                got, len);
        }
        got += (size_t)n;
    }
    return 0;
}

int kr_frame_read(char **out, size_t *out_len, int fd, size_t max)
{
    unsigned char hdr[KR_FRAME_HDR];
    uint32_t len;
    char *buf;
    int rc;

    *out = NULL;
    *out_len = 0;
    if ((rc = read_all(fd, hdr, sizeof(hdr))) < 0)
        return rc;
    if (rc == 1)
        return ed_error_set(ED_ENOTFOUND, "connection closed");
    len = kr_frame_length(hdr);
    if (len > max)
        return ed_error_set(ED_ETOOBIG, "frame of %u bytes (limit %zu)", len, max);
    if ((buf = malloc((size_t)len + 1)) == NULL)
        return ed_error_set(ED_ENOMEM, "frame of %u bytes", len);
    if ((rc = read_all(fd, buf, len)) != 0) {
        free(buf);
        return rc < 0 ? rc : ed_error_set(ED_EIO, "connection closed inside a frame");
    }
    buf[len] = '\0';
    *out = buf;
    *out_len = len;
    return 0;
}

static int is_ws(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

void kr_frame_peek(char *out, size_t outn, const char *p, size_t n, const char *after, const char *key)
{
    const char *end = p + n, *q = p;
    size_t kl = strlen(key);

    if (outn == 0)
        return;
    out[0] = '\0';
    if (after && (q = memmem(p, n, after, strlen(after))) == NULL)
        return;
    for (; kl > 0 && (q = memmem(q, (size_t)(end - q), key, kl)) != NULL; q += kl) {
        const char *v = q + kl, *e;
        if (q == p || q[-1] != '"' || v >= end || *v != '"')
            continue;
        for (v++; v < end && is_ws(*v); v++)
            ;
        if (v >= end || *v != ':')
            continue;
        for (v++; v < end && is_ws(*v); v++)
            ;
        if (v >= end || *v != '"')
            return;
        for (e = ++v; e < end && *e != '"' && *e != '\\'; e++)
            ;
        if (e >= end || *e != '"' || (size_t)(e - v) >= outn)
            return;
        memcpy(out, v, (size_t)(e - v));
        out[e - v] = '\0';
        return;
    }
}

void kr_msg_new_id(char out[33])
{
    unsigned char r[16];
    static const char hex[] = "0123456789abcdef";
    size_t got = 0;

    while (got < sizeof(r)) {
        ssize_t n = getrandom(r + got, sizeof(r) - got, 0);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            /* getrandom cannot fail on a booted Linux; ids need only be unique. */
            struct timespec ts;
            clock_gettime(CLOCK_MONOTONIC, &ts);
            for (; got < sizeof(r); got++)
                r[got] = (unsigned char)((ts.tv_nsec >> (got % 4 * 8)) ^ (uintptr_t)&ts ^ got);
            break;
        }
        got += (size_t)n;
    }
    r[6] = (unsigned char)((r[6] & 0x0f) | 0x40);  /* version 4 */
    r[8] = (unsigned char)((r[8] & 0x3f) | 0x80);  /* variant */
    for (int i = 0; i < 16; i++) {
        out[2 * i] = hex[r[i] >> 4];
        out[2 * i + 1] = hex[r[i] & 15];
    }
    out[32] = '\0';
}

static void iso_now(char out[64])
{
    struct timespec ts;
    struct tm tm;

    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    snprintf(out, 64, "%04d-%02d-%02dT%02d:%02d:%02d.%06ldZ", (tm.tm_year + 1900) % 10000,
             (tm.tm_mon + 1) % 100, tm.tm_mday % 100, tm.tm_hour % 100, tm.tm_min % 100,
             tm.tm_sec % 100, (long)(ts.tv_nsec / 1000) % 1000000);
}

int kr_msg_new(json_t **out, const char *channel, const char *msg_type, const char *session,
               const json_t *parent_header, json_t *content)
{
    char id[33], date[64];
    json_t *m = NULL, *hdr = NULL, *parent = NULL;

    *out = NULL;
    if (channel == NULL || msg_type == NULL) {
        json_decref(content);
        return ed_error_set(ED_EINVAL, "message needs a channel and a type");
    }
    if (content == NULL && (content = json_object()) == NULL)
        return ed_error_set(ED_ENOMEM, "message content");
    kr_msg_new_id(id);
    iso_now(date);
    hdr = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s}", "msg_id", id, "msg_type", msg_type,
                    "session", session ? session : "", "username", "eddy", "date", date,
                    "version", KR_PROTOCOL_VERSION);
    parent = parent_header ? json_deep_copy(parent_header) : json_object();
    if (hdr == NULL || parent == NULL)
        goto nomem;
    m = json_pack("{s:s, s:o, s:o, s:{}, s:o, s:s, s:s, s:[]}", "channel", channel, "header", hdr,
                  "parent_header", parent, "metadata", "content", content, "msg_id", id,
                  "msg_type", msg_type, "buffers");
    hdr = parent = content = NULL;  /* json_pack "o" steals, even on failure */
    if (m == NULL)
        return ed_error_set(ED_ENOMEM, "message %s", msg_type);
    *out = m;
    return 0;
nomem:
    json_decref(hdr);
    json_decref(parent);
    json_decref(content);
    return ed_error_set(ED_ENOMEM, "message %s", msg_type);
}

int kr_msg_send(int fd, const json_t *msg)
{
    char *s = json_dumps(msg, JSON_COMPACT);
    int err;

    if (s == NULL)
        return ed_error_set(ED_ENOMEM, "serialising message %s", kr_msg_type(msg));
    err = kr_frame_write(fd, s, strlen(s));
    free(s);
    return err;
}

int kr_msg_recv(json_t **out, int fd, size_t max)
{
    char *buf;
    size_t len;
    json_t *m, *hdr, *t;
    json_error_t je;
    int err;

    *out = NULL;
    if ((err = kr_frame_read(&buf, &len, fd, max)) < 0)
        return err;
    m = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &je);
    free(buf);
    if (m == NULL)
        return ed_error_set(ED_EINVAL, "frame is not JSON: %s at byte %d", je.text, je.position);
    if (!json_is_object(m) || !json_is_object(hdr = json_object_get(m, "header")) ||
        !json_is_string(t = json_object_get(hdr, "msg_type"))) {
        json_decref(m);
        return ed_error_set(ED_EINVAL, "frame is not a message: it needs a header with a msg_type");
    }
    *out = m;
    return 0;
}

const char *kr_msg_type(const json_t *msg)
{
    const char *s = json_string_value(json_object_get(json_object_get(msg, "header"), "msg_type"));
    return s ? s : "";
}

const char *kr_msg_channel(const json_t *msg)
{
    const char *s = json_string_value(json_object_get(msg, "channel"));
    return s ? s : "shell";
}

const char *kr_msg_id(const json_t *msg)
{
    const char *s = json_string_value(json_object_get(json_object_get(msg, "header"), "msg_id"));
    return s ? s : "";
}
