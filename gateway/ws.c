/*
 * ws.c - RFC 6455 WebSocket over libmicrohttpd's upgrade.
 *
 *   gw_ws_accept        a handler checks the handshake and sets res->upgrade
 *   gw__ws_mhd_response the core turns it into a 101 (MHD_create_response_for_upgrade)
 *   on_upgrade          libmicrohttpd hands over the socket: one thread per
 *                       connection starts (conn_main)
 *   conn_main           reads frames (gw__ws_parse), answers pings, pings an
 *                       idle peer every 30 s, calls the handler; on the way out
 *                       calls on_close, then gives the socket back to
 *                       libmicrohttpd (MHD_UPGRADE_ACTION_CLOSE)
 *
 * Threads: one reader thread per connection (documented choice: a kernel's
 * channels are few and long-lived; a thread keeps the read path a plain
 * blocking loop with no extra latency). Sends come from any thread (the
 * reader for pongs and close, a kernel hub's thread for output) and are
 * serialised by a per-connection mutex, one frame per writev. A registry of
 * live connections lets gw_server_stop close them all before the daemon stops.
 *
 * Memory: a connection's read buffer grows to at most GW_WS_MAX_MESSAGE plus a
 * header; a frame or message over that closes with 1009. Out of memory while
 * reading closes with 1011.
 */
#include "gw_int.h"

#include "ed_error.h"
#include "ed_log.h"
#include "ed_time.h"

#include <errno.h>
#include <fcntl.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <sodium.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define WS_GUID "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
#define WS_PING_EVERY_MS  30000   /* keep idle connections through proxies */
#define WS_CLOSE_WAIT_MS  2000    /* after our close frame, wait this long for the peer's */
#define WS_SEND_TIMEOUT_S 10      /* a peer that reads nothing for this long is dropped */

/* ---- SHA-1 (handshake only; RFC 3174) ------------------------------------ */

static uint32_t rol32(uint32_t x, int n) { return (x << n) | (x >> (32 - n)); }

static void sha1_block(uint32_t h[5], const uint8_t *p)
{
    uint32_t w[80], a, b, c, d, e, f, k, t;

    for (int i = 0; i < 16; i++)
        w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 |
               (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
    for (int i = 16; i < 80; i++)
        w[i] = rol32(w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16], 1);
    a = h[0]; b = h[1]; c = h[2]; d = h[3]; e = h[4];
    for (int i = 0; i < 80; i++) {
        if (i < 20)      { f = (b & c) | (~b & d);           k = 0x5A827999; }
        else if (i < 40) { f = b ^ c ^ d;                    k = 0x6ED9EBA1; }
        else if (i < 60) { f = (b & c) | (b & d) | (c & d);  k = 0x8F1BBCDC; }
        else             { f = b ^ c ^ d;                    k = 0xCA62C1D6; }
        t = rol32(a, 5) + f + e + k + w[i];
        e = d; d = c; c = rol32(b, 30); b = a; a = t;
    }
    h[0] += a; h[1] += b; h[2] += c; h[3] += d; h[4] += e;
}

void gw__sha1(uint8_t out[20], const void *data, size_t n)
{
    uint32_t h[5] = {0x67452301, 0xEFCDAB89, 0x98BADCFE, 0x10325476, 0xC3D2E1F0};
    const uint8_t *p = data;
    uint8_t last[128];
    size_t rest = n % 64, tail;
    uint64_t bits = (uint64_t)n * 8;

    for (size_t i = 0; i + 64 <= n; i += 64)
        sha1_block(h, p + i);
    memset(last, 0, sizeof(last));
    memcpy(last, p + (n - rest), rest);
    last[rest] = 0x80;
    tail = rest + 1 + 8 <= 64 ? 64 : 128;
    for (int i = 0; i < 8; i++)
        last[tail - 1 - i] = (uint8_t)(bits >> (8 * i));
    sha1_block(h, last);
    if (tail == 128)
        sha1_block(h, last + 64);
    for (int i = 0; i < 5; i++) {
        out[4 * i] = (uint8_t)(h[i] >> 24);
        out[4 * i + 1] = (uint8_t)(h[i] >> 16);
        out[4 * i + 2] = (uint8_t)(h[i] >> 8);
        out[4 * i + 3] = (uint8_t)h[i];
    }
}

int gw__ws_accept_key(char out[29], const char *client_key)
{
    uint8_t raw[32], digest[20];
    size_t raw_len = 0;
    char cat[128];
    size_t klen;

    out[0] = '\0';
    if (client_key == NULL || (klen = strlen(client_key)) != 24)
        return ed_error_set(ED_EINVAL, "Sec-WebSocket-Key must be base64 of 16 bytes");
    if (sodium_base642bin(raw, sizeof(raw), client_key, klen, NULL, &raw_len, NULL,
                          sodium_base64_VARIANT_ORIGINAL) != 0 || raw_len != 16)
        return ed_error_set(ED_EINVAL, "Sec-WebSocket-Key must be base64 of 16 bytes");
    memcpy(cat, client_key, klen);
    memcpy(cat + klen, WS_GUID, sizeof(WS_GUID));   /* with its NUL */
    gw__sha1(digest, cat, klen + sizeof(WS_GUID) - 1);
    sodium_bin2base64(out, 29, digest, sizeof(digest), sodium_base64_VARIANT_ORIGINAL);
    return 0;
}

/* ---- UTF-8 ---------------------------------------------------------------- */

bool gw__utf8_valid(const uint8_t *s, size_t n)
{
    size_t i = 0;

    while (i < n) {
        uint8_t c = s[i];
        uint32_t cp;
        int more;

        if (c < 0x80) { i++; continue; }
        if (c >= 0xC2 && c <= 0xDF)      { more = 1; cp = c & 0x1F; }
        else if (c >= 0xE0 && c <= 0xEF) { more = 2; cp = c & 0x0F; }
        else if (c >= 0xF0 && c <= 0xF4) { more = 3; cp = c & 0x07; }
        else return false;
        if (i + (size_t)more >= n)
            return false;
        for (int k = 1; k <= more; k++) {
            if ((s[i + (size_t)k] & 0xC0) != 0x80)
                return false;
            cp = (cp << 6) | (s[i + (size_t)k] & 0x3F);
        }
        if ((more == 2 && cp < 0x800) || (more == 3 && (cp < 0x10000 || cp > 0x10FFFF)) ||
            (cp >= 0xD800 && cp <= 0xDFFF))
            return false;
        i += (size_t)more + 1;
    }
    return true;
}

/* ---- frames --------------------------------------------------------------- */

size_t gw__ws_frame_header(uint8_t out[14], int opcode, bool fin, uint64_t len, const uint8_t *mask)
{
    size_t n = 2;

    out[0] = (uint8_t)((fin ? 0x80 : 0) | (opcode & 0x0F));
    out[1] = mask ? 0x80 : 0;
    if (len < 126) {
        out[1] |= (uint8_t)len;
    } else if (len <= 0xFFFF) {
        out[1] |= 126;
        out[2] = (uint8_t)(len >> 8);
        out[3] = (uint8_t)len;
        n = 4;
    } else {
        out[1] |= 127;
        for (int i = 0; i < 8; i++)
            out[2 + i] = (uint8_t)(len >> (56 - 8 * i));
        n = 10;
    }
    if (mask) {
        memcpy(out + n, mask, 4);
        n += 4;
    }
    return n;
}

static int proto_error(gw_ws_event *ev, int code, const char *what)
{
    ev->close_code = code;
    if (code == 1009)
        return ed_error_set(ED_ETOOBIG, "websocket: %s", what);
    return ed_error_set(ED_EINVAL, "websocket: %s", what);
}

static bool close_code_ok(int code)
{
    if (code >= 3000 && code <= 4999)
        return true;
    return code >= 1000 && code <= 1014 && code != 1004 && code != 1005 && code != 1006;
}

int gw__ws_parse(gw_ws_event *ev, gw_ws_parser *p, uint8_t *buf, size_t len, size_t *consumed)
{
    size_t max = p->max_message ? p->max_message : GW_WS_MAX_MESSAGE;
    size_t hdr = 2;
    uint64_t plen;
    bool fin, masked;
    int op;
    uint8_t *data;

    *consumed = 0;
    memset(ev, 0, sizeof(*ev));
    if (len < 2)
        return 0;
    fin = (buf[0] & 0x80) != 0;
    op = buf[0] & 0x0F;
    masked = (buf[1] & 0x80) != 0;
    plen = buf[1] & 0x7F;
    if (buf[0] & 0x70)
        return proto_error(ev, 1002, "reserved bits set without an extension");
    if (op != GW_WS_CONT && op != GW_WS_TEXT && op != GW_WS_BINARY && op != GW_WS_CLOSE &&
        op != GW_WS_PING && op != GW_WS_PONG)
        return proto_error(ev, 1002, "unknown opcode");
    if (p->require_mask && !masked)
        return proto_error(ev, 1002, "client frame not masked");
    if (op & 0x8) {
        if (!fin)
            return proto_error(ev, 1002, "fragmented control frame");
        if (plen > 125)
            return proto_error(ev, 1002, "control frame over 125 bytes");
    }
    if (plen == 126) {
        if (len < 4)
            return 0;
        plen = (uint64_t)buf[2] << 8 | buf[3];
        hdr = 4;
    } else if (plen == 127) {
        if (len < 10)
            return 0;
        plen = 0;
        for (int i = 0; i < 8; i++)
            plen = plen << 8 | buf[2 + i];
        if (plen >> 63)
            return proto_error(ev, 1002, "64-bit length with the top bit set");
        hdr = 10;
    }
    if (plen > max || (op == GW_WS_CONT && p->msg_len + plen > max))
        return proto_error(ev, 1009, "message over the size limit");
    if (masked)
        hdr += 4;
    if (len - hdr < plen || len < hdr)
        return 0;
    data = buf + hdr;
    if (masked) {
        const uint8_t *m = buf + hdr - 4;
        for (uint64_t i = 0; i < plen; i++)
            data[i] ^= m[i & 3];
    }
    *consumed = hdr + (size_t)plen;

    switch (op) {
    case GW_WS_PING:
    case GW_WS_PONG:
        ev->opcode = op;
        ev->data = data;
        ev->len = (size_t)plen;
        return 1;
    case GW_WS_CLOSE:
        ev->opcode = op;
        ev->close_code = 1005;
        if (plen == 1)
            return proto_error(ev, 1002, "close frame with a 1-byte body");
        if (plen >= 2) {
            int code = data[0] << 8 | data[1];
            if (!close_code_ok(code))
                return proto_error(ev, 1002, "invalid close code");
            if (!gw__utf8_valid(data + 2, (size_t)plen - 2))
                return proto_error(ev, 1007, "close reason is not UTF-8");
            ev->close_code = code;
            ev->data = data + 2;
            ev->len = (size_t)plen - 2;
        }
        return 1;
    case GW_WS_CONT:
        if (p->msg_opcode == 0)
            return proto_error(ev, 1002, "continuation frame without a message");
        if (p->msg_len + plen > p->msg_cap) {
            size_t cap = p->msg_cap ? p->msg_cap : 4096;
            uint8_t *nm;
            while (cap < p->msg_len + plen)
                cap *= 2;
            if ((nm = realloc(p->msg, cap)) == NULL) {
                ev->close_code = 1011;
                return ed_error_set(ED_ENOMEM, "websocket message");
            }
            p->msg = nm;
            p->msg_cap = cap;
        }
        if (plen) /* empty fragments may leave p->msg NULL */
            memcpy(p->msg + p->msg_len, data, (size_t)plen);
        p->msg_len += (size_t)plen;
        if (!fin)
            return 0;
        ev->opcode = p->msg_opcode;
        ev->data = p->msg;
        ev->len = p->msg_len;
        p->msg_opcode = 0;
        break;
    default: /* TEXT, BINARY */
        if (p->msg_opcode != 0)
            return proto_error(ev, 1002, "new message inside a fragmented one");
        if (!fin) {
            p->msg_opcode = op;
            p->msg_len = 0;
            if (plen > p->msg_cap) {
                uint8_t *nm = realloc(p->msg, (size_t)plen);
                if (nm == NULL) {
                    ev->close_code = 1011;
                    return ed_error_set(ED_ENOMEM, "websocket message");
                }
                p->msg = nm;
                p->msg_cap = (size_t)plen;
            }
            if (plen)
                memcpy(p->msg, data, (size_t)plen);
            p->msg_len = (size_t)plen;
            return 0;
        }
        ev->opcode = op;
        ev->data = data;
        ev->len = (size_t)plen;
        break;
    }
    if (ev->opcode == GW_WS_TEXT && !gw__utf8_valid(ev->data, ev->len))
        return proto_error(ev, 1007, "text message is not UTF-8");
    return 1;
}

void gw__ws_parser_free(gw_ws_parser *p)
{
    if (p == NULL)
        return;
    free(p->msg);
    p->msg = NULL;
    p->msg_len = p->msg_cap = 0;
    p->msg_opcode = 0;
}

/* ---- connections ---------------------------------------------------------- */

struct gw_ws {
    int                               fd;
    struct MHD_UpgradeResponseHandle *urh;
    pthread_mutex_t                   wlock;     /* one frame at a time on the socket */
    gw_ws_handler                     h;
    void                             *payload;
    char                             *protocol;  /* malloc'd or NULL */
    char                             *extra;     /* bytes read past the handshake */
    size_t                            extra_len;
    atomic_bool                       close_sent;
    atomic_bool                       dead;      /* a write failed */
    atomic_llong                      close_at_ns; /* when our close went out */
    struct gw_ws                     *next, *prev; /* registry */
};

/* What gw_ws_accept leaves in res->upgrade until the socket arrives. */
typedef struct ws_pending {
    gw_ws_handler h;
    void         *payload;
    char         *protocol;
} ws_pending;

static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t  reg_cond = PTHREAD_COND_INITIALIZER;
static gw_ws          *reg_head;
static int             reg_count;

static void reg_add(gw_ws *ws)
{
    pthread_mutex_lock(&reg_lock);
    ws->next = reg_head;
    if (reg_head)
        reg_head->prev = ws;
    reg_head = ws;
    reg_count++;
    pthread_mutex_unlock(&reg_lock);
}

static void reg_remove(gw_ws *ws)
{
    pthread_mutex_lock(&reg_lock);
    if (ws->prev)
        ws->prev->next = ws->next;
    else
        reg_head = ws->next;
    if (ws->next)
        ws->next->prev = ws->prev;
    reg_count--;
    pthread_cond_broadcast(&reg_cond);
    pthread_mutex_unlock(&reg_lock);
}

const char *gw_ws_protocol(const gw_ws *ws)
{
    return ws ? ws->protocol : NULL;
}

int gw_ws_send(gw_ws *ws, int opcode, const void *data, size_t len)
{
    uint8_t hdr[14];
    struct iovec iov[2];
    struct msghdr mh;
    size_t total, sent = 0;
    int err = 0;

    if (ws == NULL || atomic_load(&ws->dead))
        return ed_error_set(ED_EIO, "websocket closed");
    iov[0].iov_base = hdr;
    iov[0].iov_len = gw__ws_frame_header(hdr, opcode, true, len, NULL);
    iov[1].iov_base = (void *)data;
    iov[1].iov_len = len;
    total = iov[0].iov_len + len;
    pthread_mutex_lock(&ws->wlock);
    if (atomic_load(&ws->close_sent) && opcode != GW_WS_CLOSE) {
        pthread_mutex_unlock(&ws->wlock);
        return ed_error_set(ED_EIO, "websocket closing");
    }
    while (sent < total) {
        ssize_t n;
        size_t skip = sent;
        struct iovec v[2];
        int nv = 0;

        for (int i = 0; i < 2; i++) {
            if (skip >= iov[i].iov_len) {
                skip -= iov[i].iov_len;
                continue;
            }
            v[nv].iov_base = (uint8_t *)iov[i].iov_base + skip;
            v[nv].iov_len = iov[i].iov_len - skip;
            skip = 0;
            nv++;
        }
        memset(&mh, 0, sizeof(mh));
        mh.msg_iov = v;
        mh.msg_iovlen = (size_t)nv;
        n = sendmsg(ws->fd, &mh, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            atomic_store(&ws->dead, true);
            shutdown(ws->fd, SHUT_RDWR);   /* wakes the reader */
            err = ed_error_set(ED_EIO, "websocket send: %s", n < 0 ? strerror(errno) : "closed");
            break;
        }
        sent += (size_t)n;
    }
    pthread_mutex_unlock(&ws->wlock);
    return err;
}

int gw_ws_close(gw_ws *ws, int code, const char *reason)
{
    uint8_t body[125];
    size_t rlen = reason ? strlen(reason) : 0;
    bool expected = false;
    int err;

    if (ws == NULL)
        return 0;
    if (rlen > sizeof(body) - 2)
        rlen = sizeof(body) - 2;
    body[0] = (uint8_t)(code >> 8);
    body[1] = (uint8_t)code;
    if (rlen)
        memcpy(body + 2, reason, rlen);
    pthread_mutex_lock(&ws->wlock);
    if (!atomic_compare_exchange_strong(&ws->close_sent, &expected, true)) {
        pthread_mutex_unlock(&ws->wlock);
        return 0;
    }
    pthread_mutex_unlock(&ws->wlock);
    atomic_store(&ws->close_at_ns, (long long)ed_mono_ns());
    err = gw_ws_send(ws, GW_WS_CLOSE, body, 2 + rlen);
    return err;
}

static void conn_free(gw_ws *ws)
{
    pthread_mutex_destroy(&ws->wlock);
    free(ws->protocol);
    free(ws->extra);
    free(ws);
}

/* Grow-or-compact the read buffer so at least `want` more bytes fit. */
static int rbuf_room(uint8_t **buf, size_t *cap, size_t *start, size_t *end, size_t want)
{
    if (*start > 0 && *cap - *end < want) {
        memmove(*buf, *buf + *start, *end - *start);
        *end -= *start;
        *start = 0;
    }
    if (*cap - *end < want) {
        size_t ncap = *cap ? *cap : 16384;
        uint8_t *nb;
        while (ncap - *end < want)
            ncap *= 2;
        if ((nb = realloc(*buf, ncap)) == NULL)
            return ED_ENOMEM;
        *buf = nb;
        *cap = ncap;
    }
    return 0;
}

static void *conn_main(void *arg)
{
    gw_ws *ws = arg;
    gw_ws_parser p = {.require_mask = true};
    uint8_t *buf = NULL;
    size_t cap = 0, start = 0, end = 0;
    int64_t last_rx = ed_mono_ns();
    bool ping_out = false;

    if (ws->extra_len) {
        if (rbuf_room(&buf, &cap, &start, &end, ws->extra_len) == 0) {
            memcpy(buf, ws->extra, ws->extra_len);
            end = ws->extra_len;
        }
    }
    if (ws->h.on_open && ws->h.on_open(ws, ws->payload) != 0) {
        ed_log_warn("ws.open", "refused: %s", ed_error_last());
        gw_ws_close(ws, 1011, "could not open");
        goto out;
    }
    for (;;) {
        gw_ws_event ev;
        size_t used;
        int rc;
        struct pollfd pfd = {.fd = ws->fd, .events = POLLIN};
        ssize_t n;

        /* Everything already buffered first. */
        while (end > start) {
            rc = gw__ws_parse(&ev, &p, buf + start, end - start, &used);
            if (rc < 0) {
                gw_ws_close(ws, ev.close_code, ed_error_last());
                goto out;
            }
            if (used == 0)
                break;
            start += used;
            if (rc == 0)
                continue;
            if (ev.opcode == GW_WS_PING) {
                gw_ws_send(ws, GW_WS_PONG, ev.data, ev.len);
            } else if (ev.opcode == GW_WS_PONG) {
                ping_out = false;
            } else if (ev.opcode == GW_WS_CLOSE) {
                int code = ev.close_code == 1005 ? 1000 : ev.close_code;
                gw_ws_close(ws, code, NULL);   /* echo (no-op if ours went first) */
                goto out;
            } else if (!atomic_load(&ws->close_sent) && ws->h.on_message) {
                rc = ws->h.on_message(ws, ev.opcode, ev.data, ev.len, ws->payload);
                if (rc != 0) {
                    gw_ws_close(ws, rc == ED_EINVAL ? 1008 : 1011, ed_error_last());
                }
            }
        }
        if (start == end)
            start = end = 0;
        if (atomic_load(&ws->dead))
            goto out;
        if (atomic_load(&ws->close_sent) &&
            ed_mono_ns() - atomic_load(&ws->close_at_ns) > (int64_t)WS_CLOSE_WAIT_MS * 1000000)
            goto out;
        rc = poll(&pfd, 1, 500);
        if (rc < 0 && errno != EINTR)
            goto out;
        if (rc <= 0) {
            int64_t idle_ms = (ed_mono_ns() - last_rx) / 1000000;
            if (idle_ms > 2 * WS_PING_EVERY_MS && ping_out) {
                gw_ws_close(ws, 1001, "no pong");
                goto out;
            }
            if (idle_ms > WS_PING_EVERY_MS && !ping_out) {
                ping_out = true;
                gw_ws_send(ws, GW_WS_PING, "eddy", 4);
            }
            continue;
        }
        if (rbuf_room(&buf, &cap, &start, &end, 16384) < 0) {
            gw_ws_close(ws, 1011, "out of memory");
            goto out;
        }
        n = recv(ws->fd, buf + end, cap - end, 0);
        if (n < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK))
            continue;
        if (n <= 0)
            goto out;
        end += (size_t)n;
        last_rx = ed_mono_ns();
    }
out:
    gw__ws_parser_free(&p);
    free(buf);
    if (ws->h.on_close)
        ws->h.on_close(ws, ws->payload);  /* no sends on ws after this */
    atomic_store(&ws->dead, true);
    reg_remove(ws);
    MHD_upgrade_action(ws->urh, MHD_UPGRADE_ACTION_CLOSE);
    conn_free(ws);
    return NULL;
}

static void pending_drop(ws_pending *pd)
{
    if (pd->h.on_close)
        pd->h.on_close(NULL, pd->payload);
    free(pd->protocol);
    free(pd);
}

static void on_upgrade(void *cls, struct MHD_Connection *conn, void *req_cls,
                       const char *extra_in, size_t extra_in_size, MHD_socket sock,
                       struct MHD_UpgradeResponseHandle *urh)
{
    ws_pending *pd = cls;
    gw_ws *ws;
    pthread_t th;
    pthread_attr_t attr;
    int one = 1, fl;
    struct timeval tv = {.tv_sec = WS_SEND_TIMEOUT_S};

    (void)conn;
    (void)req_cls;
    if ((ws = calloc(1, sizeof(*ws))) == NULL)
        goto fail;
    if (extra_in_size) {
        if ((ws->extra = malloc(extra_in_size)) == NULL)
            goto fail;
        memcpy(ws->extra, extra_in, extra_in_size);
        ws->extra_len = extra_in_size;
    }
    ws->fd = (int)sock;
    ws->urh = urh;
    ws->h = pd->h;
    ws->payload = pd->payload;
    ws->protocol = pd->protocol;
    pthread_mutex_init(&ws->wlock, NULL);
    /* The reader polls; writes block (bounded by SO_SNDTIMEO). */
    if ((fl = fcntl(ws->fd, F_GETFL)) >= 0)
        fcntl(ws->fd, F_SETFL, fl & ~O_NONBLOCK);
    setsockopt(ws->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    setsockopt(ws->fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    reg_add(ws);
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    if (pthread_create(&th, &attr, conn_main, ws) != 0) {
        pthread_attr_destroy(&attr);
        reg_remove(ws);
        ws->protocol = NULL;
        pthread_mutex_destroy(&ws->wlock);
        free(ws->extra);
        free(ws);
        ws = NULL;
        ed_log_error("ws.thread", "cannot start a WebSocket thread");
        goto fail_owned;
    }
    pthread_attr_destroy(&attr);
    free(pd);   /* its contents moved into ws */
    return;
fail:
    if (ws) {
        free(ws->extra);
        free(ws);
    }
fail_owned:
    pending_drop(pd);
    MHD_upgrade_action(urh, MHD_UPGRADE_ACTION_CLOSE);
}

struct MHD_Response *gw__ws_mhd_response(gw_response *res)
{
    ws_pending *pd = res->upgrade;
    struct MHD_Response *mr;

    res->upgrade = NULL;
    res->status = MHD_HTTP_SWITCHING_PROTOCOLS;
    if ((mr = MHD_create_response_for_upgrade(on_upgrade, pd)) == NULL)
        pending_drop(pd);
    return mr;
}

/* True when the comma-separated header value `list` has `token` (case-insensitive). */
static bool header_has_token(const char *list, const char *token)
{
    size_t tl = strlen(token);

    while (list && *list) {
        const char *e;
        while (*list == ' ' || *list == '\t' || *list == ',')
            list++;
        e = list;
        while (*e && *e != ',')
            e++;
        {
            const char *t = e;
            while (t > list && (t[-1] == ' ' || t[-1] == '\t'))
                t--;
            if ((size_t)(t - list) == tl && strncasecmp(list, token, tl) == 0)
                return true;
        }
        list = e;
    }
    return false;
}

int gw_ws_accept(const char **chosen, gw_request *req, gw_response *res,
                 const char *const *subprotocols, const gw_ws_handler *h, void *payload)
{
    const char *up = gw_request_header(req, "Upgrade");
    const char *conn = gw_request_header(req, "Connection");
    const char *ver = gw_request_header(req, "Sec-WebSocket-Version");
    const char *key = gw_request_header(req, "Sec-WebSocket-Key");
    const char *offered = gw_request_header(req, "Sec-WebSocket-Protocol");
    const char *proto = NULL;
    char accept[29];
    ws_pending *pd;
    int err;

    *chosen = NULL;
    if (strcmp(req->method, "GET") != 0)
        return ed_error_set(ED_EINVAL, "a WebSocket handshake is a GET");
    if (up == NULL || !header_has_token(up, "websocket"))
        return ed_error_set(ED_EINVAL, "this endpoint is a WebSocket: send Upgrade: websocket");
    if (conn == NULL || !header_has_token(conn, "upgrade"))
        return ed_error_set(ED_EINVAL, "a WebSocket handshake needs Connection: Upgrade");
    if (ver == NULL || strcmp(ver, "13") != 0) {
        gw_response_header(res, "Sec-WebSocket-Version", "13");
        return ed_error_set(ED_EINVAL, "Sec-WebSocket-Version must be 13");
    }
    if ((err = gw__ws_accept_key(accept, key)) < 0)
        return err;
    for (int i = 0; subprotocols && subprotocols[i] && proto == NULL; i++)
        if (offered && header_has_token(offered, subprotocols[i]))
            proto = subprotocols[i];
    if ((pd = calloc(1, sizeof(*pd))) == NULL)
        return ed_error_set(ED_ENOMEM, "websocket");
    if (proto && (pd->protocol = strdup(proto)) == NULL) {
        free(pd);
        return ed_error_set(ED_ENOMEM, "websocket");
    }
    pd->h = *h;
    pd->payload = payload;
    if (gw_response_header(res, "Upgrade", "websocket") < 0 ||
        gw_response_header(res, "Sec-WebSocket-Accept", accept) < 0 ||
        (proto && gw_response_header(res, "Sec-WebSocket-Protocol", proto) < 0)) {
        free(pd->protocol);
        free(pd);
        return ed_error_set(ED_ENOMEM, "websocket");
    }
    res->status = 101;
    res->upgrade = pd;
    *chosen = proto;
    return 0;
}

void gw__ws_stop_all(int timeout_ms)
{
    int64_t deadline = ed_mono_ns() + (int64_t)timeout_ms * 1000000;
    struct timespec ts;

    pthread_mutex_lock(&reg_lock);
    for (gw_ws *ws = reg_head; ws; ws = ws->next) {
        /* A close frame under reg_lock is fine: sends never take reg_lock. */
        gw_ws_close(ws, 1001, "server shutting down");
    }
    while (reg_count > 0 && ed_mono_ns() < deadline) {
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 50 * 1000000;
        if (ts.tv_nsec >= 1000000000) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000;
        }
        pthread_cond_timedwait(&reg_cond, &reg_lock, &ts);
        if (ed_mono_ns() > deadline - (int64_t)timeout_ms * 500000)
            for (gw_ws *ws = reg_head; ws; ws = ws->next)
                shutdown(ws->fd, SHUT_RDWR);   /* peers that do not answer */
    }
    pthread_mutex_unlock(&reg_lock);
}
