/* comm.c: the CPU communicator (see fw_dist.h): a full mesh of TCP sockets
 * and ring collectives over poll()ed non-blocking sockets. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "fw_dist.h"
#include "fwd_int.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define HELLO_MAGIC 0x45444459u          /* "EDDY" */
#define RECV_CHUNK  (256u << 10)         /* staging for reduce-on-receive */
#define BCAST_CHUNK (1u << 20)           /* pipeline unit of broadcast */

struct fwd_comm {
    int rank, nranks;
    int timeout_ms;
    int *fd;                 /* fd[r]: socket to rank r, -1 for self */
    unsigned char *stage;    /* RECV_CHUNK bytes */
};

static __thread char err_msg[512];

const char *fwd_error_last(void) { return err_msg; }

int fwd__error_set(int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err_msg, sizeof(err_msg), fmt, ap);
    va_end(ap);
    return code;
}
#define fail fwd__error_set

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static size_t dtype_size(int dtype)
{
    switch (dtype) {
    case FWD_FLOAT32: case FWD_INT32: return 4;
    case FWD_FLOAT64: case FWD_INT64: return 8;
    default: return 0;
    }
}

/* ---- reductions: dst[i] = dst[i] op src[i] ---------------------------------- */
#define DEF_REDUCE(name, T)                                                       \
    static void name(void *dv, const void *sv, size_t n, int op)                  \
    {                                                                             \
        T *d = dv;                                                                \
        const T *s = sv;                                                          \
        switch (op) {                                                             \
        case FWD_MAX: for (size_t i = 0; i < n; i++) if (s[i] > d[i]) d[i] = s[i]; break; \
        case FWD_MIN: for (size_t i = 0; i < n; i++) if (s[i] < d[i]) d[i] = s[i]; break; \
        case FWD_PROD: for (size_t i = 0; i < n; i++) d[i] *= s[i]; break;        \
        default: for (size_t i = 0; i < n; i++) d[i] += s[i]; break;              \
        }                                                                         \
    }
DEF_REDUCE(reduce_f32, float)
DEF_REDUCE(reduce_f64, double)
DEF_REDUCE(reduce_i32, int32_t)
DEF_REDUCE(reduce_i64, int64_t)

static void reduce(void *d, const void *s, size_t n, int dtype, int op)
{
    switch (dtype) {
    case FWD_FLOAT32: reduce_f32(d, s, n, op); break;
    case FWD_FLOAT64: reduce_f64(d, s, n, op); break;
    case FWD_INT32: reduce_i32(d, s, n, op); break;
    default: reduce_i64(d, s, n, op); break;
    }
}

static void divide(void *buf, size_t n, int dtype, int by)
{
    switch (dtype) {
    case FWD_FLOAT32: { float *p = buf; for (size_t i = 0; i < n; i++) p[i] /= (float)by; break; }
    case FWD_FLOAT64: { double *p = buf; for (size_t i = 0; i < n; i++) p[i] /= by; break; }
    case FWD_INT32: { int32_t *p = buf; for (size_t i = 0; i < n; i++) p[i] /= by; break; }
    default: { int64_t *p = buf; for (size_t i = 0; i < n; i++) p[i] /= by; break; }
    }
}

/* ---- setup -------------------------------------------------------------------- */
static int parse_endpoint(const char *list, int idx, char *host, size_t hl, char *port,
                          size_t pl)
{
    const char *p = list;
    for (int i = 0; i < idx; i++) {
        p = strchr(p, ',');
        if (p == NULL)
            return fail(FWD_EINVAL, "endpoints \"%s\" name fewer than %d ranks", list, idx + 1);
        p++;
    }
    const char *end = strchr(p, ',');
    size_t len = end ? (size_t)(end - p) : strlen(p);
    const char *colon = memrchr(p, ':', len);
    if (colon == NULL || colon == p || (size_t)(colon - p) >= hl ||
        len - (size_t)(colon - p) - 1 >= pl || len - (size_t)(colon - p) - 1 == 0)
        return fail(FWD_EINVAL, "endpoint %d of \"%s\" is not host:port", idx, list);
    memcpy(host, p, (size_t)(colon - p));
    host[colon - p] = 0;
    memcpy(port, colon + 1, len - (size_t)(colon - p) - 1);
    port[len - (size_t)(colon - p) - 1] = 0;
    return 0;
}

static int resolve(struct addrinfo **out, const char *host, const char *port, int passive)
{
    struct addrinfo hints = {0};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = passive ? AI_PASSIVE : 0;
    int rc = getaddrinfo(host, port, &hints, out);
    if (rc != 0)
        return fail(FWD_ECONNECT, "cannot resolve %s:%s: %s", host, port, gai_strerror(rc));
    return 0;
}

static void tune(int fd)
{
    int one = 1, buf = 4 << 20;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));   /* fails harmlessly on AF_UNIX */
    setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &buf, sizeof(buf));
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &buf, sizeof(buf));
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
}

/* Blocking-with-deadline exact read/write used during setup only. */
static int io_exact(int fd, void *buf, size_t n, int writing, int64_t deadline, int peer)
{
    unsigned char *p = buf;
    while (n > 0) {
        int left = (int)(deadline - now_ms());
        if (left <= 0)
            return fail(FWD_ETIMEOUT, "setup timed out talking to rank %d", peer);
        struct pollfd pf = { .fd = fd, .events = writing ? POLLOUT : POLLIN };
        if (poll(&pf, 1, left) < 0 && errno != EINTR)
            return fail(FWD_EIO, "poll: %s", strerror(errno));
        ssize_t k = writing ? send(fd, p, n, MSG_NOSIGNAL) : recv(fd, p, n, 0);
        if (k == 0)
            return fail(FWD_EPEER, "rank %d closed the connection during setup", peer);
        if (k < 0) {
            if (errno == EAGAIN || errno == EINTR)
                continue;
            return fail(FWD_EPEER, "rank %d: %s during setup", peer, strerror(errno));
        }
        p += k;
        n -= (size_t)k;
    }
    return 0;
}

static int listen_on(int *out, const char *host, const char *port, int backlog)
{
    struct addrinfo *ai = NULL;
    int err, fd = -1, one = 1;
    *out = -1;
    if ((err = resolve(&ai, host, port, 1)) < 0)
        return err;
    for (struct addrinfo *a = ai; a; a = a->ai_next) {
        fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, 0);
        if (fd < 0)
            continue;
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
        if (bind(fd, a->ai_addr, a->ai_addrlen) == 0 && listen(fd, backlog) == 0)
            break;
        close(fd);
        fd = -1;
    }
    freeaddrinfo(ai);
    if (fd < 0)
        return fail(FWD_ECONNECT, "cannot listen on %s:%s: %s", host, port, strerror(errno));
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    *out = fd;
    return 0;
}

/* Connects to rank peer at host:port, retrying until the deadline (the peer
 * may not listen yet). */
static int connect_to(int *out, const char *host, const char *port, int64_t deadline, int peer)
{
    struct addrinfo *ai = NULL;
    int err;
    *out = -1;
    if ((err = resolve(&ai, host, port, 0)) < 0)
        return err;
    for (;;) {
        for (struct addrinfo *a = ai; a; a = a->ai_next) {
            int fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, 0);
            if (fd < 0)
                continue;
            if (connect(fd, a->ai_addr, a->ai_addrlen) == 0) {
                freeaddrinfo(ai);
                *out = fd;
                return 0;
            }
            close(fd);
        }
        if (now_ms() >= deadline) {
            freeaddrinfo(ai);
            return fail(FWD_ECONNECT, "cannot connect to rank %d at %s:%s within the timeout",
                        peer, host, port);
        }
        usleep(20000);
    }
}

/* All ranks on this host (every endpoint is a loopback address): Unix
 * sockets in the abstract namespace, named after the endpoint, skip the TCP
 * stack (about twice the bandwidth on loopback). */
static int all_loopback(const char *endpoints, int nranks)
{
    char h[256], p[32];
    for (int r = 0; r < nranks; r++) {
        if (parse_endpoint(endpoints, r, h, sizeof(h), p, sizeof(p)) < 0)
            return 0;
        if (strncmp(h, "127.", 4) != 0 && strcmp(h, "localhost") != 0)
            return 0;
    }
    return 1;
}

static socklen_t unix_addr(struct sockaddr_un *a, const char *host, const char *port)
{
    memset(a, 0, sizeof(*a));
    a->sun_family = AF_UNIX;
    int n = snprintf(a->sun_path + 1, sizeof(a->sun_path) - 1, "eddy-dist/%s:%s", host, port);
    return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n);
}

static int listen_unix(int *out, const char *host, const char *port, int backlog)
{
    struct sockaddr_un a;
    socklen_t len = unix_addr(&a, host, port);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    *out = -1;
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, len) < 0 || listen(fd, backlog) < 0) {
        int e = errno;
        if (fd >= 0)
            close(fd);
        return fail(FWD_ECONNECT, "cannot listen on unix socket @%s: %s", a.sun_path + 1, strerror(e));
    }
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    *out = fd;
    return 0;
}

static int connect_unix(int *out, const char *host, const char *port, int64_t deadline, int peer)
{
    struct sockaddr_un a;
    socklen_t len = unix_addr(&a, host, port);
    *out = -1;
    for (;;) {
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd >= 0 && connect(fd, (struct sockaddr *)&a, len) == 0) {
            *out = fd;
            return 0;
        }
        if (fd >= 0)
            close(fd);
        if (now_ms() >= deadline)
            return fail(FWD_ECONNECT, "cannot connect to rank %d at unix socket @%s within the timeout",
                        peer, a.sun_path + 1);
        usleep(20000);
    }
}

int fwd_comm_init(fwd_comm **out, int rank, int nranks, const char *endpoints,
                  int timeout_ms)
{
    fwd_comm *c = NULL;
    char host[256], port[32];
    int lfd = -1, err;
    int64_t deadline = now_ms() + (timeout_ms > 0 ? timeout_ms : 30000);

    *out = NULL;
    if (nranks < 1 || nranks > 4096 || rank < 0 || rank >= nranks || endpoints == NULL)
        return fail(FWD_EINVAL, "rank %d of %d ranks is out of range", rank, nranks);
    if ((c = calloc(1, sizeof(*c))) == NULL || (c->fd = malloc(sizeof(int) * (size_t)nranks)) == NULL ||
        (c->stage = malloc(RECV_CHUNK)) == NULL) {
        fwd_comm_free(c);
        return fail(FWD_ENOMEM, "communicator of %d ranks", nranks);
    }
    c->rank = rank;
    c->nranks = nranks;
    c->timeout_ms = timeout_ms > 0 ? timeout_ms : 30000;
    for (int r = 0; r < nranks; r++)
        c->fd[r] = -1;
    if (nranks == 1) {
        *out = c;
        return 0;
    }
    /* Listen first, then dial every lower rank (their backlog completes the
     * connection even before they accept), then accept every higher rank. */
    if ((err = parse_endpoint(endpoints, rank, host, sizeof(host), port, sizeof(port))) < 0)
        goto fail;
    int local = all_loopback(endpoints, nranks) && getenv("EDDY_DIST_TCP") == NULL;
    if (rank < nranks - 1 &&
        (err = local ? listen_unix(&lfd, host, port, nranks) : listen_on(&lfd, host, port, nranks)) < 0)
        goto fail;
    for (int r = 0; r < rank; r++) {
        uint32_t hello[2] = { HELLO_MAGIC, (uint32_t)rank };
        char h[256], p[32];
        if ((err = parse_endpoint(endpoints, r, h, sizeof(h), p, sizeof(p))) < 0 ||
            (err = local ? connect_unix(&c->fd[r], h, p, deadline, r)
                         : connect_to(&c->fd[r], h, p, deadline, r)) < 0)
            goto fail;
        tune(c->fd[r]);
        if ((err = io_exact(c->fd[r], hello, sizeof(hello), 1, deadline, r)) < 0)
            goto fail;
    }
    for (int got = 0; got < nranks - 1 - rank;) {
        int left = (int)(deadline - now_ms());
        struct pollfd pf = { .fd = lfd, .events = POLLIN };
        if (left <= 0) {
            int missing = -1;
            for (int r = nranks - 1; r > rank; r--)
                if (c->fd[r] < 0)
                    missing = r;
            err = fail(FWD_ETIMEOUT, "timed out after %d ms waiting for rank %d to connect",
                       c->timeout_ms, missing);
            goto fail;
        }
        poll(&pf, 1, left);
        int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
        if (fd < 0)
            continue;
        uint32_t hello[2];
        tune(fd);
        if (io_exact(fd, hello, sizeof(hello), 0, deadline, -1) < 0 || hello[0] != HELLO_MAGIC ||
            hello[1] <= (uint32_t)rank || hello[1] >= (uint32_t)nranks || c->fd[hello[1]] >= 0) {
            close(fd);              /* a stray client, not one of our ranks */
            continue;
        }
        c->fd[hello[1]] = fd;
        got++;
    }
    if (lfd >= 0)
        close(lfd);
    *out = c;
    return 0;
fail:
    if (lfd >= 0)
        close(lfd);
    fwd_comm_free(c);
    return err;
}

void fwd_comm_free(fwd_comm *c)
{
    if (c == NULL)
        return;
    if (c->fd)
        for (int r = 0; r < c->nranks; r++)
            if (c->fd[r] >= 0)
                close(c->fd[r]);
    free(c->fd);
    free(c->stage);
    free(c);
}

int fwd_comm_rank(const fwd_comm *c) { return c->rank; }
int fwd_comm_size(const fwd_comm *c) { return c->nranks; }
void fwd_comm_set_timeout(fwd_comm *c, int timeout_ms) { c->timeout_ms = timeout_ms > 0 ? timeout_ms : 30000; }

/* ---- the exchange: send sbytes to rank sp while receiving rbytes from rank
 * rp (either may be 0). With esz > 0 the received elements are reduced into
 * rbuf (op, dtype) as they arrive; otherwise they are copied into rbuf. */
static int exchange(fwd_comm *c, int sp, const void *sbuf, size_t sbytes, int rp, void *rbuf,
                    size_t rbytes, int dtype, int op, int reducing)
{
    const unsigned char *s = sbuf;
    unsigned char *r = rbuf;
    size_t sent = 0, got = 0, fill = 0, esz = dtype_size(dtype);

    while (sent < sbytes || got < rbytes) {
        struct pollfd pf[2];
        int n = 0, si = -1, ri = -1;
        if (sent < sbytes) {
            pf[n] = (struct pollfd){ .fd = c->fd[sp], .events = POLLOUT };
            si = n++;
        }
        if (got < rbytes) {
            if (si >= 0 && c->fd[rp] == c->fd[sp]) {
                pf[si].events |= POLLIN;
                ri = si;
            } else {
                pf[n] = (struct pollfd){ .fd = c->fd[rp], .events = POLLIN };
                ri = n++;
            }
        }
        int k = poll(pf, (nfds_t)n, c->timeout_ms);
        if (k < 0) {
            if (errno == EINTR)
                continue;
            return fail(FWD_EIO, "poll: %s", strerror(errno));
        }
        if (k == 0)
            return fail(FWD_ETIMEOUT, "timed out after %d ms waiting for rank %d",
                        c->timeout_ms, got < rbytes ? rp : sp);
        if (ri >= 0 && (pf[ri].revents & (POLLIN | POLLHUP | POLLERR))) {
            ssize_t m;
            if (reducing) {
                size_t want = rbytes - got - fill;
                if (want > RECV_CHUNK - fill)
                    want = RECV_CHUNK - fill;
                m = recv(c->fd[rp], c->stage + fill, want, 0);
            } else {
                m = recv(c->fd[rp], r + got, rbytes - got, 0);
            }
            if (m == 0)
                return fail(FWD_EPEER, "rank %d closed the connection (did it exit?)", rp);
            if (m < 0 && errno != EAGAIN && errno != EINTR)
                return fail(FWD_EPEER, "receiving from rank %d: %s", rp, strerror(errno));
            if (m > 0 && reducing) {
                fill += (size_t)m;
                size_t ne = fill / esz;
                reduce(r + got, c->stage, ne, dtype, op);
                got += ne * esz;
                fill -= ne * esz;
                if (fill)
                    memmove(c->stage, c->stage + ne * esz, fill);
            } else if (m > 0) {
                got += (size_t)m;
            }
        }
        if (si >= 0 && (pf[si].revents & (POLLOUT | POLLERR | POLLHUP))) {
            ssize_t m = send(c->fd[sp], s + sent, sbytes - sent, MSG_NOSIGNAL);
            if (m < 0 && errno != EAGAIN && errno != EINTR)
                return fail(FWD_EPEER, "sending to rank %d: %s (did it exit?)", sp, strerror(errno));
            if (m > 0)
                sent += (size_t)m;
        }
    }
    return 0;
}

/* ---- groups ------------------------------------------------------------------- */
typedef struct {
    int n, me;           /* members, this rank's index */
    int next, prev;      /* global ranks of the ring neighbours */
} ring;

static int ring_of(ring *g, const fwd_comm *c, const int *ranks, int nr)
{
    if (ranks == NULL)
        nr = c->nranks;
    if (nr < 1 || nr > c->nranks)
        return fail(FWD_EINVAL, "group of %d ranks in a job of %d", nr, c->nranks);
    g->me = -1;
    for (int i = 0; i < nr; i++) {
        int r = ranks ? ranks[i] : i;
        if (r < 0 || r >= c->nranks)
            return fail(FWD_EINVAL, "group member %d is not a rank of this job", r);
        if (r == c->rank)
            g->me = i;
    }
    if (g->me < 0)
        return fail(FWD_EINVAL, "rank %d is not a member of this group", c->rank);
    g->n = nr;
    g->next = ranks ? ranks[(g->me + 1) % nr] : (g->me + 1) % nr;
    g->prev = ranks ? ranks[(g->me + nr - 1) % nr] : (g->me + nr - 1) % nr;
    return 0;
}

static int check_type(int dtype, int op)
{
    if (dtype_size(dtype) == 0)
        return fail(FWD_EINVAL, "dtype code %d is not supported (float32, float64, int32, int64)", dtype);
    if (op < FWD_SUM || op > FWD_AVG)
        return fail(FWD_EINVAL, "reduce op %d is not one of SUM, MAX, MIN, PROD, AVG", op);
    return 0;
}

static size_t seg_start(size_t count, int n, int i) { return count * (size_t)i / (size_t)n; }

/* Ring reduce-scatter of buf (count elements cut in n segments): after it,
 * this member holds the full reduction of segment owned = me + 1 - sh. */
static int ring_reduce_scatter(fwd_comm *c, const ring *g, unsigned char *buf, size_t count,
                               int dtype, int op, int sh)
{
    size_t esz = dtype_size(dtype);
    int n = g->n;
    for (int s = 0; s < n - 1; s++) {
        int so = ((g->me - s - sh) % n + 2 * n) % n, ro = ((g->me - s - 1 - sh) % n + 2 * n) % n;
        size_t s0 = seg_start(count, n, so), s1 = seg_start(count, n, so + 1);
        size_t r0 = seg_start(count, n, ro), r1 = seg_start(count, n, ro + 1);
        int err = exchange(c, g->next, buf + s0 * esz, (s1 - s0) * esz, g->prev,
                           buf + r0 * esz, (r1 - r0) * esz, dtype, op, 1);
        if (err < 0)
            return err;
    }
    return 0;
}

/* Ring all-gather of segments (byte offsets off[0..n]); this member starts
 * holding segment `owned`. */
static int ring_all_gather(fwd_comm *c, const ring *g, unsigned char *buf, const size_t *off,
                           int owned)
{
    int n = g->n;
    for (int s = 0; s < n - 1; s++) {
        int so = ((owned - s) % n + n) % n, ro = ((owned - s - 1) % n + n) % n;
        int err = exchange(c, g->next, buf + off[so], off[so + 1] - off[so], g->prev,
                           buf + off[ro], off[ro + 1] - off[ro], FWD_INT32, 0, 0);
        if (err < 0)
            return err;
    }
    return 0;
}

int fwd_all_reduce(fwd_comm *c, const int *ranks, int nr, void *buf, size_t count, int dtype,
                   int op)
{
    ring g;
    int err;
    if ((err = ring_of(&g, c, ranks, nr)) < 0 || (err = check_type(dtype, op)) < 0)
        return err;
    if (g.n > 1 && count > 0) {
        size_t esz = dtype_size(dtype), *off = malloc(sizeof(size_t) * (size_t)(g.n + 1));
        if (off == NULL)
            return fail(FWD_ENOMEM, "all_reduce");
        for (int i = 0; i <= g.n; i++)
            off[i] = seg_start(count, g.n, i) * esz;
        err = ring_reduce_scatter(c, &g, buf, count, dtype, op, 0);
        if (err == 0)
            err = ring_all_gather(c, &g, buf, off, (g.me + 1) % g.n);
        free(off);
        if (err < 0)
            return err;
    }
    if (op == FWD_AVG)
        divide(buf, count, dtype, g.n);
    return 0;
}

int fwd_reduce_scatter(fwd_comm *c, const int *ranks, int nr, const void *in, void *out,
                       size_t count, int dtype, int op)
{
    ring g;
    int err;
    if ((err = ring_of(&g, c, ranks, nr)) < 0 || (err = check_type(dtype, op)) < 0)
        return err;
    size_t esz = dtype_size(dtype), total = count * (size_t)g.n;
    unsigned char *tmp = malloc(total > 0 ? total * esz : 1);
    if (tmp == NULL)
        return fail(FWD_ENOMEM, "reduce_scatter of %zu elements", total);
    memcpy(tmp, in, total * esz);
    /* segments of the ring are exactly the count-sized blocks; sh = 1 makes
     * member me end up owning block me */
    err = g.n > 1 ? ring_reduce_scatter(c, &g, tmp, total, dtype, op, 1) : 0;
    if (err == 0) {
        memcpy(out, tmp + (size_t)g.me * count * esz, count * esz);
        if (op == FWD_AVG)
            divide(out, count, dtype, g.n);
    }
    free(tmp);
    return err;
}

int fwd_all_gather(fwd_comm *c, const int *ranks, int nr, const void *in, void *out,
                   size_t bytes)
{
    ring g;
    int err;
    if ((err = ring_of(&g, c, ranks, nr)) < 0)
        return err;
    size_t *off = malloc(sizeof(size_t) * (size_t)(g.n + 1));
    if (off == NULL)
        return fail(FWD_ENOMEM, "all_gather");
    for (int i = 0; i <= g.n; i++)
        off[i] = (size_t)i * bytes;
    unsigned char *o = out;
    if (o + off[g.me] != in)
        memmove(o + off[g.me], in, bytes);
    err = ring_all_gather(c, &g, o, off, g.me);
    free(off);
    return err;
}

int fwd_broadcast(fwd_comm *c, const int *ranks, int nr, void *buf, size_t bytes, int root)
{
    ring g;
    int err;
    if ((err = ring_of(&g, c, ranks, nr)) < 0)
        return err;
    if (root < 0 || root >= g.n)
        return fail(FWD_EINVAL, "broadcast root %d is not a member index of a group of %d", root, g.n);
    if (g.n == 1)
        return 0;
    /* a chain root -> root+1 -> ... in chunks, so every hop works at once */
    int pos = (g.me - root + g.n) % g.n;       /* 0 = root, n-1 = tail */
    unsigned char *p = buf;
    for (size_t o = 0; o < bytes; o += BCAST_CHUNK) {
        size_t k = bytes - o < BCAST_CHUNK ? bytes - o : BCAST_CHUNK;
        if (pos > 0 && (err = exchange(c, g.next, NULL, 0, g.prev, p + o, k, FWD_INT32, 0, 0)) < 0)
            return err;
        if (pos < g.n - 1 && (err = exchange(c, g.next, p + o, k, g.prev, NULL, 0, FWD_INT32, 0, 0)) < 0)
            return err;
    }
    return 0;
}

int fwd_barrier(fwd_comm *c, const int *ranks, int nr)
{
    int32_t one = 1;
    return fwd_all_reduce(c, ranks, nr, &one, 1, FWD_INT32, FWD_SUM);
}

static int check_peer(const fwd_comm *c, int peer)
{
    if (peer < 0 || peer >= c->nranks || peer == c->rank)
        return fail(FWD_EINVAL, "peer %d is not another rank of this job of %d", peer, c->nranks);
    return 0;
}

int fwd_send(fwd_comm *c, int peer, const void *buf, size_t bytes)
{
    int err = check_peer(c, peer);
    return err < 0 ? err : exchange(c, peer, buf, bytes, peer, NULL, 0, FWD_INT32, 0, 0);
}

int fwd_recv(fwd_comm *c, int peer, void *buf, size_t bytes)
{
    int err = check_peer(c, peer);
    return err < 0 ? err : exchange(c, peer, NULL, 0, peer, buf, bytes, FWD_INT32, 0, 0);
}
