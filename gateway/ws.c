/*
 * ws.c - RFC 6455 WebSocket over libmicrohttpd's upgrade, served from event
 * loops.
 *
 *   gw_ws_accept        a handler checks the handshake and sets res->upgrade
 *   gw__ws_mhd_response the core turns it into a 101 (MHD_create_response_for_upgrade)
 *   on_upgrade          libmicrohttpd hands over the socket: on_open runs on
 *                       that worker, then the connection joins a loop
 *   loop_main           a few threads, each with an epoll set: non-blocking
 *                       reads parsed by gw__ws_parse, pongs, a ping to a peer
 *                       idle for 30 s, the close handshake, on_message and
 *                       on_wake; queued frames are written when the socket
 *                       can take them
 *   reaper_main         on_close (it may block), then the socket goes back to
 *                       libmicrohttpd (MHD_UPGRADE_ACTION_CLOSE)
 *
 * Threads: WS_MAX_LOOPS loops at most (2 below 8 cores) serve every
 * connection, so 5,000 idle WebSockets cost no thread each. Handlers run on
 * a loop and must not block for long (they delay every connection on that
 * loop); on_close runs on a reaper thread (up to WS_MAX_REAPERS, started on
 * demand) because handlers join their own threads there. Sends come from any
 * thread: under the connection's mutex a frame is written at once when
 * nothing is queued and the socket takes it, else queued (copied); the loop
 * writes the queue as the socket drains. gw_ws_send never waits for the peer.
 *
 * Memory: an idle connection holds no read buffer; one being read grows to at
 * most GW_WS_MAX_MESSAGE plus a header (a frame or message over that closes
 * 1009; out of memory closes 1011). The send queue is bounded per connection
 * (WS_SENDQ_MAX): past it the queue is dropped, close 1008 goes out and the
 * event is logged (ws.slow_peer); a peer that reads nothing for
 * WS_SEND_TIMEOUT_S while frames wait is dropped.
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
#include <pthread.h>
#include <sodium.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define WS_GUID "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
#define WS_PING_EVERY_MS  30000   /* keep idle connections through proxies */
#define WS_CLOSE_WAIT_MS  2000    /* after our close frame, wait this long for the peer's */
#define WS_SEND_TIMEOUT_S 10      /* a peer that reads nothing for this long, frames waiting, is dropped */
#define WS_SENDQ_MAX      (16u << 20) /* bytes queued per connection before close 1008 */
#define WS_MAX_LOOPS      4       /* event loop threads (2 below 8 cores) */
#define WS_MAX_REAPERS    8       /* threads that run on_close */
#define WS_REAPER_IDLE_S  10      /* an idle reaper ends after this */
#define WS_SWEEP_MS       1000    /* pings, close waits and stalls are checked this often */
#define WS_READ_CHUNK     16384   /* bytes per recv */
#define WS_READ_BUDGET    (1u << 20) /* bytes read from one connection before the next is served */
#define WS_EVENTS         256     /* epoll events per wait */

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

/* One queued outgoing frame (header and payload together); `off` bytes of
 * it are already on the wire. */
typedef struct ws_frame {
    struct ws_frame *next;
    size_t           len, off;
    bool             begun;      /* part of the frame is on the wire: it must be finished */
    uint8_t          bytes[];
} ws_frame;

typedef struct ws_loop ws_loop;

struct gw_ws {
    int                               fd;          /* non-blocking */
    struct MHD_UpgradeResponseHandle *urh;
    ws_loop                          *loop;
    gw_ws_handler                     h;
    void                            (*on_wake)(gw_ws *ws, void *payload); /* set by on_open */
    void                             *payload;
    char                             *protocol;    /* malloc'd or NULL */

    /* Read side: the loop thread only. */
    gw_ws_parser                      parser;
    uint8_t                          *rbuf;        /* freed whenever it is empty */
    size_t                            rcap, rstart, rend;
    int64_t                           last_rx_ns;
    int64_t                           ping_at_ns;
    bool                              ping_out;
    bool                              draining;    /* closing: finish once the queue is out */

    /* Send side, under wlock (any thread). */
    pthread_mutex_t                   wlock;
    ws_frame                         *qhead, *qtail;
    size_t                            qbytes;      /* bytes queued, not yet written */
    int64_t                           progress_ns; /* the queue last moved (or began) */
    int64_t                           close_at_ns; /* when our close frame was queued */
    bool                              in_epoll, out_armed;
    bool                              close_sent;
    bool                              dead;        /* finished or a write failed: no more sends */

    /* The loop's list (loop thread) and its wake list (loop->lock). */
    struct gw_ws                     *lnext, *lprev;
    struct gw_ws                     *wnext;
    bool                              wake_queued, finishing;
    bool                              adopted, wake_early;
    bool                              doomed;      /* finish after this batch of events */
    int64_t                           timer_at_ns; /* gw_ws_wake_after (loop thread); 0: none */
    struct gw_ws                     *tnext;       /* the loop's timer list */

    struct gw_ws                     *next, *prev; /* registry (reg_lock) */
    struct gw_ws                     *rnext;       /* reaper queue (reap_lock) */
};

/* An event loop: one thread, one epoll set, an eventfd for new connections
 * and wakes. Connections are spread over the loops round-robin. */
struct ws_loop {
    pthread_t       th;
    int             epfd, evfd;
    pthread_mutex_t lock;       /* incoming, wakes */
    gw_ws          *incoming;   /* handed over, not yet in the epoll set */
    gw_ws          *wakes;      /* gw_ws_wake() asked for on_wake */
    gw_ws          *conns;      /* the loop thread's own list */
    gw_ws          *doomed;     /* to finish once the current batch is handled */
    gw_ws          *timers;     /* connections with timer_at_ns set */
    int64_t         next_sweep_ns;
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

static pthread_once_t  loops_once = PTHREAD_ONCE_INIT;
static ws_loop         loops[WS_MAX_LOOPS];
static int             nloops;        /* 0 when none could start */
static atomic_uint     next_loop;

static atomic_llong    n_open, n_slow_closes;   /* for /metrics */

static bool drained(gw_ws *ws);
static void doom(ws_loop *l, gw_ws *ws);

static pthread_mutex_t reap_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t  reap_cond = PTHREAD_COND_INITIALIZER;
static gw_ws          *reap_head, *reap_tail;
static int             reapers, reapers_idle;

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

void gw__ws_counts(long long *open, long long *slow_closes)
{
    *open = atomic_load(&n_open);
    *slow_closes = atomic_load(&n_slow_closes);
}

const char *gw_ws_protocol(const gw_ws *ws)
{
    return ws ? ws->protocol : NULL;
}

static void loop_signal(ws_loop *l)
{
    uint64_t one = 1;
    ssize_t n;

    do
        n = write(l->evfd, &one, sizeof(one));
    while (n < 0 && errno == EINTR);
}

/* Under wlock: watch for writability while something is queued. epoll_ctl
 * is safe from any thread while the loop waits. */
static void set_out_locked(gw_ws *ws, bool want)
{
    struct epoll_event ev = {.events = EPOLLIN | EPOLLRDHUP | (want ? EPOLLOUT : 0u),
                             .data.ptr = ws};

    if (!ws->in_epoll || ws->out_armed == want)
        return;
    if (epoll_ctl(ws->loop->epfd, EPOLL_CTL_MOD, ws->fd, &ev) == 0)
        ws->out_armed = want;
}

/* Under wlock: the socket failed; the loop sees the hang-up and finishes. */
static void fail_locked(gw_ws *ws)
{
    ws->dead = true;
    shutdown(ws->fd, SHUT_RDWR);
}

/* Under wlock: write what is queued until the socket is full. 0, or -1 when
 * the connection failed. */
static int flush_locked(gw_ws *ws)
{
    while (ws->qhead) {
        struct iovec v[16];
        int nv = 0;
        ssize_t n;
        size_t left;

        for (ws_frame *f = ws->qhead; f && nv < 16; f = f->next, nv++) {
            v[nv].iov_base = f->bytes + f->off;
            v[nv].iov_len = f->len - f->off;
        }
        {
            struct msghdr mh = {.msg_iov = v, .msg_iovlen = (size_t)nv};
            n = sendmsg(ws->fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            break;
        if (n <= 0) {
            fail_locked(ws);
            return -1;
        }
        ws->progress_ns = ed_mono_ns();
        ws->qbytes -= (size_t)n;
        left = (size_t)n;
        while (left > 0) {
            ws_frame *f = ws->qhead;
            size_t part = f->len - f->off;
            if (left < part) {
                f->off += left;
                break;
            }
            left -= part;
            ws->qhead = f->next;
            if (ws->qhead == NULL)
                ws->qtail = NULL;
            free(f);
        }
    }
    set_out_locked(ws, ws->qhead != NULL);
    return 0;
}

static int queue_frame_locked(gw_ws *ws, const uint8_t *hdr, size_t hlen, const uint8_t *data,
                              size_t len, size_t skip);

/* Under wlock: the peer does not read and the queue is over its bound. Keep
 * the frame already partly on the wire, drop the rest, queue close 1008. */
static void overflow_locked(gw_ws *ws, size_t wanted)
{
    uint8_t hdr[14], body[2] = {1008 >> 8, 1008 & 0xFF};
    ws_frame *keep = ws->qhead, *f;
    size_t hl;

    atomic_fetch_add(&n_slow_closes, 1);
    ed_log_warn("ws.slow_peer", "closing 1008: %zu bytes queued and %zu more for a peer that does "
                                "not read (limit %u)",
                ws->qbytes, wanted, (unsigned)WS_SENDQ_MAX);
    if (keep && keep->off == 0 && !keep->begun)
        keep = NULL;
    f = keep ? keep->next : ws->qhead;
    while (f) {
        ws_frame *n = f->next;
        free(f);
        f = n;
    }
    ws->qhead = ws->qtail = keep;
    ws->qbytes = keep ? keep->len - keep->off : 0;
    if (keep)
        keep->next = NULL;
    ws->close_sent = true;
    ws->close_at_ns = ed_mono_ns();
    hl = gw__ws_frame_header(hdr, GW_WS_CLOSE, true, sizeof(body), NULL);
    queue_frame_locked(ws, hdr, hl, body, sizeof(body), 0);
}

/* Under wlock: append a frame (minus the `skip` bytes already written). */
static int queue_frame_locked(gw_ws *ws, const uint8_t *hdr, size_t hlen, const uint8_t *data,
                              size_t len, size_t skip)
{
    size_t total = hlen + len - skip;
    ws_frame *f;

    if ((f = malloc(sizeof(*f) + total)) == NULL) {
        fail_locked(ws);
        return ed_error_set(ED_ENOMEM, "websocket send queue");
    }
    f->next = NULL;
    f->len = total;
    f->off = 0;
    f->begun = skip > 0;
    if (skip < hlen) {
        memcpy(f->bytes, hdr + skip, hlen - skip);
        if (len)
            memcpy(f->bytes + hlen - skip, data, len);
    } else if (total) {
        memcpy(f->bytes, data + (skip - hlen), total);
    }
    if (ws->qtail)
        ws->qtail->next = f;
    else {
        ws->qhead = f;
        ws->progress_ns = ed_mono_ns();
    }
    ws->qtail = f;
    ws->qbytes += total;
    set_out_locked(ws, true);
    return 0;
}

/* Under wlock: write a frame now if nothing is queued, queue what is left. */
static int send_locked(gw_ws *ws, int opcode, const void *data, size_t len)
{
    uint8_t hdr[14];
    size_t hlen = gw__ws_frame_header(hdr, opcode, true, len, NULL), sent = 0;

    if (ws->qhead == NULL) {
        struct iovec v[2] = {{hdr, hlen}, {(void *)data, len}};
        struct msghdr mh = {.msg_iov = v, .msg_iovlen = len ? 2 : 1};
        ssize_t n;

        do
            n = sendmsg(ws->fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
        while (n < 0 && errno == EINTR);
        if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
            int e = errno;
            fail_locked(ws);
            return ed_error_set(ED_EIO, "websocket send: %s", strerror(e));
        }
        if (n > 0)
            sent = (size_t)n;
        if (sent == hlen + len)
            return 0;
    } else if (ws->qbytes + hlen + len > WS_SENDQ_MAX && opcode != GW_WS_CLOSE) {
        overflow_locked(ws, hlen + len);
        return ed_error_set(ED_EIO, "websocket closed: the peer does not read");
    }
    return queue_frame_locked(ws, hdr, hlen, data, len, sent);
}

int gw_ws_send(gw_ws *ws, int opcode, const void *data, size_t len)
{
    int err;

    if (ws == NULL)
        return ed_error_set(ED_EIO, "websocket closed");
    pthread_mutex_lock(&ws->wlock);
    if (ws->dead)
        err = ed_error_set(ED_EIO, "websocket closed");
    else if (ws->close_sent)
        err = ed_error_set(ED_EIO, "websocket closing");
    else
        err = send_locked(ws, opcode, data, len);
    pthread_mutex_unlock(&ws->wlock);
    return err;
}

int gw_ws_close(gw_ws *ws, int code, const char *reason)
{
    uint8_t body[125];
    size_t rlen = reason ? strlen(reason) : 0;
    int err = 0;

    if (ws == NULL)
        return 0;
    if (rlen > sizeof(body) - 2)
        rlen = sizeof(body) - 2;
    /* Keep the reason valid UTF-8 when it is cut. */
    while (rlen > 0 && !gw__utf8_valid((const uint8_t *)reason, rlen))
        rlen--;
    body[0] = (uint8_t)(code >> 8);
    body[1] = (uint8_t)code;
    if (rlen)
        memcpy(body + 2, reason, rlen);
    pthread_mutex_lock(&ws->wlock);
    if (!ws->close_sent && !ws->dead) {
        ws->close_sent = true;
        ws->close_at_ns = ed_mono_ns();
        err = send_locked(ws, GW_WS_CLOSE, body, 2 + rlen);
    }
    pthread_mutex_unlock(&ws->wlock);
    return err;
}

size_t gw_ws_queued(gw_ws *ws)
{
    size_t n;

    if (ws == NULL)
        return 0;
    pthread_mutex_lock(&ws->wlock);
    n = ws->qbytes;
    pthread_mutex_unlock(&ws->wlock);
    return n;
}

void gw_ws_wake_after(gw_ws *ws, int ms)
{
    int64_t at;

    if (ws == NULL || ws->finishing)
        return;
    at = ed_mono_ns() + (int64_t)(ms > 0 ? ms : 0) * 1000000;
    if (ws->timer_at_ns == 0) {
        ws->tnext = ws->loop->timers;
        ws->loop->timers = ws;
        ws->timer_at_ns = at;
    } else if (at < ws->timer_at_ns) {
        ws->timer_at_ns = at;
    }
}

/* Loop thread: run on_wake for the timers that are due; the time of the next
 * one (INT64_MAX: none). */
static int64_t run_timers(ws_loop *l, int64_t now)
{
    int64_t next = INT64_MAX;
    gw_ws *due = NULL;

    for (gw_ws **pp = &l->timers; *pp;) {
        gw_ws *ws = *pp;
        if (ws->timer_at_ns <= now) {
            *pp = ws->tnext;
            ws->timer_at_ns = 0;
            ws->tnext = due;
            due = ws;
        } else {
            if (ws->timer_at_ns < next)
                next = ws->timer_at_ns;
            pp = &ws->tnext;
        }
    }
    while (due) {
        gw_ws *ws = due;
        due = ws->tnext;
        ws->tnext = NULL;
        if (!ws->doomed && !ws->draining && ws->on_wake)
            ws->on_wake(ws, ws->payload);
        if (drained(ws))
            doom(l, ws);
        if (ws->timer_at_ns && ws->timer_at_ns < next)
            next = ws->timer_at_ns;
    }
    return next;
}

void gw_ws_set_on_wake(gw_ws *ws, void (*on_wake)(gw_ws *ws, void *payload))
{
    if (ws)
        ws->on_wake = on_wake;   /* from on_open: the loop has not seen ws yet */
}

void gw_ws_wake(gw_ws *ws)
{
    ws_loop *l;
    bool signal = false;

    if (ws == NULL || (l = ws->loop) == NULL)
        return;
    pthread_mutex_lock(&l->lock);
    if (!ws->adopted) {
        ws->wake_early = true;   /* adopt() runs on_wake once it is in the loop */
    } else if (!ws->finishing && !ws->wake_queued) {
        ws->wake_queued = true;
        ws->wnext = l->wakes;
        l->wakes = ws;
        signal = true;
    }
    pthread_mutex_unlock(&l->lock);
    if (signal)
        loop_signal(l);
}

static void conn_free(gw_ws *ws)
{
    ws_frame *f = ws->qhead;

    while (f) {
        ws_frame *n = f->next;
        free(f);
        f = n;
    }
    gw__ws_parser_free(&ws->parser);
    free(ws->rbuf);
    pthread_mutex_destroy(&ws->wlock);
    free(ws->protocol);
    free(ws);
}

/* ---- the reaper: on_close may block (join a thread), so it runs here, off
 * the loops. A few threads at most, started on demand, gone when idle. ---- */

static void *reaper_main(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&reap_lock);
    for (;;) {
        gw_ws *ws;

        while (reap_head == NULL) {
            struct timespec ts;
            int rc;
            clock_gettime(CLOCK_REALTIME, &ts);
            ts.tv_sec += WS_REAPER_IDLE_S;
            reapers_idle++;
            rc = pthread_cond_timedwait(&reap_cond, &reap_lock, &ts);
            reapers_idle--;
            if (rc == ETIMEDOUT && reap_head == NULL) {
                reapers--;
                pthread_mutex_unlock(&reap_lock);
                return NULL;
            }
        }
        ws = reap_head;
        reap_head = ws->rnext;
        if (reap_head == NULL)
            reap_tail = NULL;
        pthread_mutex_unlock(&reap_lock);
        if (ws->h.on_close)
            ws->h.on_close(ws, ws->payload);   /* no sends on ws after this */
        reg_remove(ws);
        atomic_fetch_sub(&n_open, 1);
        if (ws->urh)
            MHD_upgrade_action(ws->urh, MHD_UPGRADE_ACTION_CLOSE);
        else
            close(ws->fd);   /* gw__ws_serve_fd */
        conn_free(ws);
        pthread_mutex_lock(&reap_lock);
    }
}

static void reap(gw_ws *ws)
{
    pthread_t th;

    pthread_mutex_lock(&reap_lock);
    ws->rnext = NULL;
    if (reap_tail)
        reap_tail->rnext = ws;
    else
        reap_head = ws;
    reap_tail = ws;
    if (reapers_idle == 0 && (reapers < WS_MAX_REAPERS || reapers == 0)) {
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        if (pthread_create(&th, &attr, reaper_main, NULL) == 0)
            reapers++;
        else if (reapers == 0)
            ed_log_error("ws.reaper", "cannot start a thread to close WebSockets");
        pthread_attr_destroy(&attr);
    }
    pthread_cond_signal(&reap_cond);
    pthread_mutex_unlock(&reap_lock);
}

/* ---- the loops -------------------------------------------------------------- */

/* Loop thread: the connection is over. It leaves the epoll set and the loop;
 * the reaper runs on_close and gives the socket back to libmicrohttpd. */
static void finish(ws_loop *l, gw_ws *ws)
{
    pthread_mutex_lock(&ws->wlock);
    ws->dead = true;
    ws->in_epoll = false;
    pthread_mutex_unlock(&ws->wlock);
    epoll_ctl(l->epfd, EPOLL_CTL_DEL, ws->fd, NULL);
    pthread_mutex_lock(&l->lock);
    ws->finishing = true;
    if (ws->wake_queued) {
        for (gw_ws **pp = &l->wakes; *pp; pp = &(*pp)->wnext)
            if (*pp == ws) {
                *pp = ws->wnext;
                break;
            }
        ws->wake_queued = false;
    }
    pthread_mutex_unlock(&l->lock);
    if (ws->timer_at_ns) {
        for (gw_ws **pp = &l->timers; *pp; pp = &(*pp)->tnext)
            if (*pp == ws) {
                *pp = ws->tnext;
                break;
            }
        ws->timer_at_ns = 0;
    }
    if (ws->lprev)
        ws->lprev->lnext = ws->lnext;
    else
        l->conns = ws->lnext;
    if (ws->lnext)
        ws->lnext->lprev = ws->lprev;
    gw__ws_parser_free(&ws->parser);
    free(ws->rbuf);
    ws->rbuf = NULL;
    reap(ws);
}

/* Grow-or-compact the read buffer so at least `want` more bytes fit. */
static int rbuf_room(gw_ws *ws, size_t want)
{
    if (ws->rstart > 0 && ws->rcap - ws->rend < want) {
        memmove(ws->rbuf, ws->rbuf + ws->rstart, ws->rend - ws->rstart);
        ws->rend -= ws->rstart;
        ws->rstart = 0;
    }
    if (ws->rcap - ws->rend < want) {
        size_t ncap = ws->rcap ? ws->rcap : WS_READ_CHUNK;
        uint8_t *nb;
        while (ncap - ws->rend < want)
            ncap *= 2;
        if ((nb = realloc(ws->rbuf, ncap)) == NULL)
            return ED_ENOMEM;
        ws->rbuf = nb;
        ws->rcap = ncap;
    }
    return 0;
}

/* Loop thread: act on every whole frame buffered. */
static void process(gw_ws *ws)
{
    while (ws->rend > ws->rstart && !ws->draining) {
        gw_ws_event ev;
        size_t used;
        int rc = gw__ws_parse(&ev, &ws->parser, ws->rbuf + ws->rstart, ws->rend - ws->rstart,
                              &used);
        bool closing;

        if (rc < 0) {
            gw_ws_close(ws, ev.close_code, ed_error_last());
            ws->draining = true;
            break;
        }
        if (used == 0)
            break;
        ws->rstart += used;
        if (rc == 0)
            continue;
        if (ev.opcode == GW_WS_PING) {
            gw_ws_send(ws, GW_WS_PONG, ev.data, ev.len);
        } else if (ev.opcode == GW_WS_PONG) {
            ws->ping_out = false;
        } else if (ev.opcode == GW_WS_CLOSE) {
            int code = ev.close_code == 1005 ? 1000 : ev.close_code;
            gw_ws_close(ws, code, NULL);   /* echo (no-op if ours went first) */
            ws->draining = true;
        } else {
            pthread_mutex_lock(&ws->wlock);
            closing = ws->close_sent || ws->dead;
            pthread_mutex_unlock(&ws->wlock);
            if (!closing && ws->h.on_message) {
                rc = ws->h.on_message(ws, ev.opcode, ev.data, ev.len, ws->payload);
                if (rc != 0)
                    gw_ws_close(ws, rc == ED_EINVAL ? 1008 : 1011, ed_error_last());
            }
        }
    }
    if (ws->rstart == ws->rend) {
        /* Idle connections hold no read buffer. */
        free(ws->rbuf);
        ws->rbuf = NULL;
        ws->rcap = ws->rstart = ws->rend = 0;
    }
}

/* Loop thread: the socket is readable (or hung up). false: finish it. */
static bool on_readable(gw_ws *ws)
{
    size_t got = 0;

    while (got < WS_READ_BUDGET) {
        ssize_t n;

        if (rbuf_room(ws, WS_READ_CHUNK) < 0) {
            gw_ws_close(ws, 1011, "out of memory");
            return false;
        }
        n = recv(ws->fd, ws->rbuf + ws->rend, ws->rcap - ws->rend, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            break;
        if (n <= 0)
            return false;
        got += (size_t)n;
        ws->last_rx_ns = ed_mono_ns();
        if (ws->draining) {         /* after a close: read and drop */
            ws->rstart = ws->rend = 0;
            continue;
        }
        ws->rend += (size_t)n;
        process(ws);
    }
    if (ws->rstart == ws->rend && ws->rbuf) {
        free(ws->rbuf);
        ws->rbuf = NULL;
        ws->rcap = ws->rstart = ws->rend = 0;
    }
    return true;
}

/* Loop thread: a draining connection ends once its queue is written. */
static bool drained(gw_ws *ws)
{
    bool done;

    if (!ws->draining)
        return false;
    pthread_mutex_lock(&ws->wlock);
    done = ws->qhead == NULL || ws->dead;
    pthread_mutex_unlock(&ws->wlock);
    return done;
}

/* Loop thread, once a second: pings, the close handshake's wait, peers that
 * stopped reading. */
static void sweep(ws_loop *l, int64_t now)
{
    gw_ws *ws = l->conns;

    while (ws) {
        gw_ws *next = ws->lnext;
        bool stalled, closing, dead;
        int64_t close_at;

        pthread_mutex_lock(&ws->wlock);
        stalled = ws->qhead && now - ws->progress_ns > (int64_t)WS_SEND_TIMEOUT_S * 1000000000;
        closing = ws->close_sent;
        close_at = ws->close_at_ns;
        dead = ws->dead;
        pthread_mutex_unlock(&ws->wlock);
        if (dead || drained(ws)) {
            finish(l, ws);
        } else if (stalled) {
            atomic_fetch_add(&n_slow_closes, 1);
            ed_log_warn("ws.slow_peer", "dropping a peer that read nothing for %d s",
                        WS_SEND_TIMEOUT_S);
            finish(l, ws);
        } else if (closing && now - close_at > (int64_t)WS_CLOSE_WAIT_MS * 1000000) {
            finish(l, ws);
        } else if (!closing) {
            int64_t idle_ms = (now - ws->last_rx_ns) / 1000000;
            if (ws->ping_out && idle_ms > 2 * WS_PING_EVERY_MS) {
                gw_ws_close(ws, 1001, "no pong");
            } else if (!ws->ping_out && idle_ms > WS_PING_EVERY_MS) {
                ws->ping_out = true;
                ws->ping_at_ns = now;
                gw_ws_send(ws, GW_WS_PING, "eddy", 4);
            }
        }
        ws = next;
    }
}

/* Loop thread: finish `ws` once the current batch of events is handled (an
 * event for it may still be in the batch). */
static void doom(ws_loop *l, gw_ws *ws)
{
    if (ws->doomed)
        return;
    ws->doomed = true;
    ws->rnext = l->doomed;
    l->doomed = ws;
}

static void adopt(ws_loop *l, gw_ws *ws)
{
    bool early;

    struct epoll_event ev = {.events = EPOLLIN | EPOLLRDHUP, .data.ptr = ws};

    ws->lprev = NULL;
    ws->lnext = l->conns;
    if (l->conns)
        l->conns->lprev = ws;
    l->conns = ws;
    pthread_mutex_lock(&ws->wlock);
    if (ws->qhead)
        ev.events |= EPOLLOUT;
    if (epoll_ctl(l->epfd, EPOLL_CTL_ADD, ws->fd, &ev) == 0) {
        ws->in_epoll = true;
        ws->out_armed = ws->qhead != NULL;
    } else {
        ed_log_error("ws.epoll", "cannot watch a WebSocket: %s", strerror(errno));
        ws->dead = true;
    }
    pthread_mutex_unlock(&ws->wlock);
    pthread_mutex_lock(&l->lock);
    ws->adopted = true;
    early = ws->wake_early;
    pthread_mutex_unlock(&l->lock);
    if (ws->dead) {
        doom(l, ws);
        return;
    }
    process(ws);   /* bytes that came with the handshake */
    if (early && ws->on_wake && !ws->draining)
        ws->on_wake(ws, ws->payload);
    if (drained(ws))
        doom(l, ws);
}

static void *loop_main(void *arg)
{
    ws_loop *l = arg;
    struct epoll_event evs[WS_EVENTS];

    int64_t next_timer = INT64_MAX;

    l->next_sweep_ns = ed_mono_ns() + WS_SWEEP_MS * INT64_C(1000000);
    for (;;) {
        int64_t now = ed_mono_ns();
        int64_t until = l->next_sweep_ns < next_timer ? l->next_sweep_ns : next_timer;
        int timeout = (int)((until - now) / 1000000) + 1;
        int n = epoll_wait(l->epfd, evs, WS_EVENTS, timeout < 0 ? 0 : timeout);

        if (n < 0 && errno != EINTR) {
            ed_log_error("ws.epoll", "epoll_wait: %s", strerror(errno));
            usleep(100000);
        }
        for (int i = 0; i < n; i++) {
            gw_ws *ws = evs[i].data.ptr;
            uint32_t e = evs[i].events;

            if (ws == NULL) {   /* the eventfd */
                uint64_t v;
                gw_ws *in, *wk;
                while (read(l->evfd, &v, sizeof(v)) < 0 && errno == EINTR)
                    ;
                pthread_mutex_lock(&l->lock);
                in = l->incoming;
                l->incoming = NULL;
                pthread_mutex_unlock(&l->lock);
                while (in) {
                    gw_ws *nx = in->lnext;
                    adopt(l, in);
                    in = nx;
                }
                for (;;) {
                    pthread_mutex_lock(&l->lock);
                    wk = l->wakes;
                    if (wk) {
                        l->wakes = wk->wnext;
                        wk->wake_queued = false;
                    }
                    pthread_mutex_unlock(&l->lock);
                    if (wk == NULL)
                        break;
                    if (wk->doomed)
                        continue;
                    if (wk->on_wake && !wk->draining)
                        wk->on_wake(wk, wk->payload);
                    if (drained(wk))
                        doom(l, wk);
                }
                continue;
            }
            if (ws->doomed)
                continue;
            if (e & EPOLLOUT) {
                int rc;
                bool emptied;
                pthread_mutex_lock(&ws->wlock);
                rc = ws->dead ? -1 : flush_locked(ws);
                emptied = rc == 0 && ws->qhead == NULL && !ws->close_sent;
                pthread_mutex_unlock(&ws->wlock);
                if (rc < 0) {
                    doom(l, ws);
                    continue;
                }
                /* A producer that paused on a full queue (gw_ws_queued) goes on. */
                if (emptied && ws->on_wake && !ws->draining)
                    ws->on_wake(ws, ws->payload);
            }
            if ((e & (EPOLLIN | EPOLLHUP | EPOLLERR | EPOLLRDHUP)) && !on_readable(ws)) {
                doom(l, ws);
                continue;
            }
            if (drained(ws))
                doom(l, ws);
        }
        while (l->doomed) {
            gw_ws *ws = l->doomed;
            l->doomed = ws->rnext;
            finish(l, ws);
        }
        now = ed_mono_ns();
        next_timer = l->timers ? run_timers(l, now) : INT64_MAX;
        while (l->doomed) {
            gw_ws *ws = l->doomed;
            l->doomed = ws->rnext;
            finish(l, ws);
        }
        if (now >= l->next_sweep_ns) {
            sweep(l, now);
            l->next_sweep_ns = now + WS_SWEEP_MS * INT64_C(1000000);
        }
    }
    return NULL;
}

static void loops_start(void)
{
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    int want = cores >= 8 ? WS_MAX_LOOPS : 2;

    for (int i = 0; i < want; i++) {
        ws_loop *l = &loops[nloops];
        struct epoll_event ev = {.events = EPOLLIN, .data.ptr = NULL};

        pthread_mutex_init(&l->lock, NULL);
        l->epfd = epoll_create1(EPOLL_CLOEXEC);
        l->evfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (l->epfd < 0 || l->evfd < 0 || epoll_ctl(l->epfd, EPOLL_CTL_ADD, l->evfd, &ev) < 0 ||
            pthread_create(&l->th, NULL, loop_main, l) != 0) {
            ed_log_error("ws.loop", "cannot start a WebSocket event loop: %s", strerror(errno));
            if (l->epfd >= 0)
                close(l->epfd);
            if (l->evfd >= 0)
                close(l->evfd);
            pthread_mutex_destroy(&l->lock);
            break;
        }
        pthread_detach(l->th);
        nloops++;
    }
}

static void pending_drop(ws_pending *pd)
{
    if (pd->h.on_close)
        pd->h.on_close(NULL, pd->payload);
    free(pd->protocol);
    free(pd);
}

/* Make a connection of `fd` and hand it to a loop, on_open first (so no
 * message reaches the handler before it). `urh` NULL: not libmicrohttpd's
 * (the reaper closes fd itself). Takes `protocol` on success; on error
 * (ED_ENOMEM, ED_EIO) the caller keeps payload, protocol and fd. */
static int ws_start(int fd, struct MHD_UpgradeResponseHandle *urh, const gw_ws_handler *h,
                    void *payload, char *protocol, const char *extra, size_t extra_len)
{
    ws_loop *l;
    gw_ws *ws;
    int one = 1, fl;

    pthread_once(&loops_once, loops_start);
    if (nloops == 0)
        return ed_error_set(ED_EIO, "no WebSocket event loop is running");
    if ((ws = calloc(1, sizeof(*ws))) == NULL)
        return ed_error_set(ED_ENOMEM, "websocket");
    if (extra_len) {
        if ((ws->rbuf = malloc(extra_len)) == NULL) {
            free(ws);
            return ed_error_set(ED_ENOMEM, "websocket");
        }
        memcpy(ws->rbuf, extra, extra_len);
        ws->rcap = ws->rend = extra_len;
    }
    l = &loops[atomic_fetch_add(&next_loop, 1u) % (unsigned)nloops];
    ws->fd = fd;
    ws->urh = urh;
    ws->loop = l;
    ws->h = *h;
    ws->payload = payload;
    ws->protocol = protocol;
    ws->parser.require_mask = true;
    ws->last_rx_ns = ed_mono_ns();
    pthread_mutex_init(&ws->wlock, NULL);
    if ((fl = fcntl(ws->fd, F_GETFL)) >= 0)
        fcntl(ws->fd, F_SETFL, fl | O_NONBLOCK);
    setsockopt(ws->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    reg_add(ws);
    atomic_fetch_add(&n_open, 1);
    if (ws->h.on_open && ws->h.on_open(ws, ws->payload) != 0) {
        ed_log_warn("ws.open", "refused: %s", ed_error_last());
        gw_ws_close(ws, 1011, "could not open");
        ws->draining = true;   /* the loop ends it once the close is out */
    }
    pthread_mutex_lock(&l->lock);
    ws->lnext = l->incoming;
    l->incoming = ws;
    pthread_mutex_unlock(&l->lock);
    loop_signal(l);
    return 0;
}

/* On a libmicrohttpd worker: the 101 went out and the socket is ours. */
static void on_upgrade(void *cls, struct MHD_Connection *conn, void *req_cls,
                       const char *extra_in, size_t extra_in_size, MHD_socket sock,
                       struct MHD_UpgradeResponseHandle *urh)
{
    ws_pending *pd = cls;

    (void)conn;
    (void)req_cls;
    if (ws_start((int)sock, urh, &pd->h, pd->payload, pd->protocol, extra_in, extra_in_size) < 0) {
        ed_log_error("ws.start", "%s", ed_error_last());
        pending_drop(pd);   /* frees the protocol too */
        MHD_upgrade_action(urh, MHD_UPGRADE_ACTION_CLOSE);
        return;
    }
    free(pd);   /* its contents moved into the connection */
}

int gw__ws_serve_fd(int fd, const gw_ws_handler *h, void *payload)
{
    return ws_start(fd, NULL, h, payload, NULL, NULL, 0);
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
    bool forced = false;

    pthread_mutex_lock(&reg_lock);
    for (gw_ws *ws = reg_head; ws; ws = ws->next) {
        /* A close frame under reg_lock is fine: senders never take reg_lock. */
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
        if (!forced && ed_mono_ns() > deadline - (int64_t)timeout_ms * 500000) {
            /* Peers that do not answer: the loops see the hang-up and finish
             * them. A socket stays open until its entry leaves the registry. */
            forced = true;
            for (gw_ws *ws = reg_head; ws; ws = ws->next)
                shutdown(ws->fd, SHUT_RDWR);
        }
    }
    pthread_mutex_unlock(&reg_lock);
}
