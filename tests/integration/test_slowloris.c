/*
 * test_slowloris.c - many slow clients from many addresses must not take the
 * server away from everyone else (issue 11, item 8).
 *
 * The attack of the report, against the real `eddy serve` with a cap of 1,024
 * connections and 64 per address: 1,250 connections from 25 loopback
 * addresses (127.0.0.2 ... 127.0.0.26, each client socket bound to one; all of
 * 127.0.0.0/8 is local on Linux) that send a request line and then either
 * nothing or one header byte a second. Before the fix they filled the cap
 * (25 x 50 > 1,024, each address under its 64) and libmicrohttpd's idle
 * timeout never closed the trickling ones, so a new client waited in the
 * listen backlog. Now:
 *   - GET /healthz from another address, on a new connection, answers;
 *   - an authenticated request on a keep-alive connection opened before the
 *     attack answers;
 *   - every attacking connection is closed, the trickling ones included,
 *     once header_timeout_s (3 s here) has passed without complete headers;
 *   - /metrics (loopback) counts the header timeouts and the refusals.
 * Also: the header deadline holds per request on a kept-alive connection, and
 * a trusted proxy is exempt from the per-address cap that others keep.
 * Bounds: 20 s per answer is a hang detector, not a timing assertion; every
 * loop ends by itself.
 */
#include "harness.h"

#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define N_ADDRS   25
#define N_CONNS   1250
#define HANG_MS   20000          /* an answer later than this is a hang */
#define HDR_TO_S  3              /* the server's header_timeout_s in this test */

static it_server S;

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* A TCP connection to the server from `src` (NULL: the kernel's choice).
 * Non-blocking; -1 when it could not even be started. */
static int connect_from(const char *src)
{
    struct sockaddr_in to = {.sin_family = AF_INET, .sin_port = htons((uint16_t)S.port)};
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

    if (fd < 0)
        return -1;
    inet_pton(AF_INET, "127.0.0.1", &to.sin_addr);
    if (src) {
        struct sockaddr_in from = {.sin_family = AF_INET};
        inet_pton(AF_INET, src, &from.sin_addr);
        if (bind(fd, (struct sockaddr *)&from, sizeof(from)) < 0) {
            close(fd);
            return -1;
        }
    }
    if (connect(fd, (struct sockaddr *)&to, sizeof(to)) < 0 && errno != EINPROGRESS) {
        close(fd);
        return -1;
    }
    return fd;
}

/* Send all of `s` on a non-blocking socket within the hang bound. */
static bool send_all(int fd, const char *s, int64_t deadline)
{
    size_t len = strlen(s), off = 0;

    while (off < len && now_ms() < deadline) {
        ssize_t n = send(fd, s + off, len - off, MSG_NOSIGNAL);
        if (n > 0) {
            off += (size_t)n;
        } else if (n < 0 && (errno == EAGAIN || errno == EINPROGRESS || errno == ENOTCONN)) {
            struct pollfd p = {.fd = fd, .events = POLLOUT};
            poll(&p, 1, 100);
        } else if (n < 0 && errno == EINTR) {
            continue;
        } else {
            return false;
        }
    }
    return off == len;
}

/* Read one HTTP answer (headers and a Content-Length body) into buf; its
 * status, or 0 when nothing whole came within the hang bound. */
static int read_answer(int fd, char *buf, size_t cap, int64_t deadline)
{
    size_t len = 0;

    while (now_ms() < deadline && len + 1 < cap) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        char *end;
        ssize_t n;

        if (poll(&p, 1, 200) <= 0)
            continue;
        n = recv(fd, buf + len, cap - 1 - len, 0);
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
            continue;
        if (n <= 0)
            return 0;
        len += (size_t)n;
        buf[len] = '\0';
        if ((end = strstr(buf, "\r\n\r\n")) != NULL) {
            const char *cl = strcasestr(buf, "\r\nContent-Length:");
            size_t want = cl && cl < end ? strtoul(cl + 17, NULL, 10) : 0;
            int status = 0;
            if (len >= (size_t)(end + 4 - buf) + want) {
                sscanf(buf, "HTTP/1.%*d %d", &status);
                return status;
            }
        }
    }
    return 0;
}

/* GET `path` on a new connection from 127.0.0.1: the status (0: no answer). */
static int get_fresh(const char *path, char *buf, size_t cap)
{
    int64_t deadline = now_ms() + HANG_MS;
    char req[256];
    int fd = connect_from("127.0.0.1"), status = 0;

    if (fd < 0)
        return 0;
    snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", path);
    if (send_all(fd, req, deadline))
        status = read_answer(fd, buf, cap, deadline);
    close(fd);
    return status;
}

/* Whether the server's kernel never took this connection: the handshake is
 * still pending, or segments we sent are still unacknowledged. That happens
 * when the burst overflowed the listen queue (511 here; a loaded 2-core host
 * accepts slower than the test connects): the SYN, or the handshake's last
 * ACK, was dropped, and the two kernels retry for up to a minute. No server
 * could close such a connection; it is not part of the property. */
static bool never_reached_server(int fd)
{
    struct tcp_info ti;
    socklen_t len = sizeof(ti);

    memset(&ti, 0, sizeof(ti));
    if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len) < 0)
        return false;
    return ti.tcpi_state == TCP_SYN_SENT || ti.tcpi_unacked > 0;
}

/* How many of the fds the server has closed (EOF or reset); closed ones are
 * set to -1. */
static int reap_closed(int *fds, int n)
{
    int closed = 0;

    for (int i = 0; i < n; i++) {
        char b[256];
        ssize_t r;
        if (fds[i] < 0) {
            closed++;
            continue;
        }
        r = recv(fds[i], b, sizeof(b), MSG_DONTWAIT);
        if (r == 0 || (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR &&
                       errno != ENOTCONN && errno != EINPROGRESS)) {
            close(fds[i]);
            fds[i] = -1;
            closed++;
        }
    }
    return closed;
}

static long metric(const char *text, const char *name)
{
    char pat[128];
    const char *p;

    snprintf(pat, sizeof(pat), "\n%s ", name);
    p = strstr(text, pat);
    return p ? strtol(p + strlen(pat), NULL, 10) : -1;
}

START_TEST(many_slow_clients_from_many_addresses_do_not_lock_others_out)
{
    static const char *const env[] = {"EDDY_MAX_CONNS=1024", "EDDY_MAX_CONNS_PER_IP=64",
                                      "EDDY_HEADER_TIMEOUT_S=3", "EDDY_CONN_TIMEOUT_S=60", NULL};
    char *cookie = NULL, *csrf = NULL, req[1024], buf[65536];
    static int fds[N_CONNS];
    int keep, opened = 0, status, closed;
    int64_t deadline;

    ck_assert_int_eq(it_server_start(&S, env), 0);
    ck_assert_int_eq(it_signup_login(&S, "victim", "correct horse 1", &cookie, &csrf), 0);

    /* The victim's keep-alive connection, opened and used before the attack. */
    keep = connect_from("127.0.0.1");
    ck_assert_int_ge(keep, 0);
    snprintf(req, sizeof(req), "GET /api/v1/me HTTP/1.1\r\nHost: 127.0.0.1\r\nCookie: %s\r\n\r\n",
             cookie);
    ck_assert(send_all(keep, req, now_ms() + HANG_MS));
    ck_assert_int_eq(read_answer(keep, buf, sizeof(buf), now_ms() + HANG_MS), 200);

    /* The attack: 50 connections from each of 25 addresses, interleaved; each
     * sends a request line and one header line begun but never ended. */
    for (int i = 0; i < N_CONNS; i++) {
        char src[32];
        snprintf(src, sizeof(src), "127.0.0.%d", 2 + i % N_ADDRS);
        fds[i] = connect_from(src);
        if (fds[i] >= 0) {
            opened++;
            send(fds[i], "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: ", 39, MSG_NOSIGNAL);
        }
        /* A breath every 50 so the server can drain its listen queue. */
        if (i % 50 == 49)
            usleep(20000);
    }
    ck_assert_msg(opened > N_CONNS / 2, "only %d of %d attack sockets opened", opened, N_CONNS);
    usleep(500000);

    /* A new client from another address is answered... */
    status = get_fresh("/healthz", buf, sizeof(buf));
    ck_assert_msg(status == 200, "/healthz under attack: status %d (0: no answer within %d s)",
                  status, HANG_MS / 1000);
    /* ...and so is the victim on the connection it already had. */
    ck_assert(send_all(keep, req, now_ms() + HANG_MS));
    status = read_answer(keep, buf, sizeof(buf), now_ms() + HANG_MS);
    ck_assert_msg(status == 200, "keep-alive /api/v1/me under attack: status %d", status);

    /* Half the attackers trickle a byte a second (an idle timeout never fires
     * for them); all must be closed once the header timeout has passed. */
    deadline = now_ms() + (HDR_TO_S + 12) * 1000;
    closed = 0;
    while (now_ms() < deadline) {
        for (int i = 0; i < N_CONNS; i += 2)
            if (fds[i] >= 0)
                send(fds[i], "a", 1, MSG_NOSIGNAL | MSG_DONTWAIT);
        closed = reap_closed(fds, N_CONNS);
        if (closed == N_CONNS)
            break;
        usleep(1000000);
    }
    if (closed < N_CONNS) {
        int unreached = 0;
        for (int i = 0; i < N_CONNS; i++)
            if (fds[i] >= 0 && never_reached_server(fds[i]))
                unreached++;
        ck_assert_msg(closed + unreached == N_CONNS,
                      "%d of %d attacking connections still open %d s after the header timeout "
                      "(%d more never reached the server)",
                      N_CONNS - closed - unreached, N_CONNS, 12, unreached);
        ck_assert_msg(unreached < N_CONNS / 4, "%d of %d attacking connections never reached the "
                      "server: the attack did not happen", unreached, N_CONNS);
        fprintf(stderr, "slowloris: %d attacking connections never left the listen queue\n",
                unreached);
    }

    /* The server says what it did. */
    status = get_fresh("/metrics", buf, sizeof(buf));
    ck_assert_int_eq(status, 200);
    ck_assert_msg(metric(buf, "eddy_http_header_timeouts_total") > 0, "%s", buf);
    ck_assert_msg(metric(buf, "eddy_http_connections_refused_total") > 0,
                  "no connection was refused: the attack never met the fair-share limit");

    /* Still serving after the attack, on the old connection too. */
    ck_assert(send_all(keep, req, now_ms() + HANG_MS));
    ck_assert_int_eq(read_answer(keep, buf, sizeof(buf), now_ms() + HANG_MS), 200);
    close(keep);
    free(cookie);
    free(csrf);
    ck_assert_int_eq(it_server_stop(&S), 0);
}
END_TEST

/* A client that completes its headers slowly but within the timeout is
 * served; the same client starting a second request on its kept-alive
 * connection and never finishing it is closed. */
START_TEST(header_deadline_applies_per_request_on_a_kept_alive_connection)
{
    static const char *const env[] = {"EDDY_HEADER_TIMEOUT_S=2", "EDDY_CONN_TIMEOUT_S=60", NULL};
    char buf[8192];
    int fd, status;
    int64_t deadline;
    bool closed = false;

    ck_assert_int_eq(it_server_start(&S, env), 0);
    fd = connect_from("127.0.0.1");
    ck_assert_int_ge(fd, 0);
    /* Complete within the 2 s: answered. */
    ck_assert(send_all(fd, "GET /healthz HTTP/1.1\r\n", now_ms() + HANG_MS));
    usleep(300000);
    ck_assert(send_all(fd, "Host: x\r\n\r\n", now_ms() + HANG_MS));
    status = read_answer(fd, buf, sizeof(buf), now_ms() + HANG_MS);
    ck_assert_int_eq(status, 200);
    /* The next request line, then a trickle that never ends the headers. */
    ck_assert(send_all(fd, "GET /healthz HTTP/1.1\r\nX-Slow: ", now_ms() + HANG_MS));
    deadline = now_ms() + HANG_MS;
    while (!closed && now_ms() < deadline) {
        char b[64];
        ssize_t n;
        send(fd, "a", 1, MSG_NOSIGNAL | MSG_DONTWAIT);
        usleep(500000);
        n = recv(fd, b, sizeof(b), MSG_DONTWAIT);
        closed = n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
    }
    ck_assert_msg(closed, "a connection trickling its headers was still open after %d s",
                  HANG_MS / 1000);
    close(fd);
    ck_assert_int_eq(it_server_stop(&S), 0);
}
END_TEST

/* A trusted proxy's connections carry many clients: the per-address cap
 * does not apply to them (libmicrohttpd's per-IP cap did), while any other
 * address keeps it. */
START_TEST(trusted_proxy_is_exempt_from_the_per_address_cap)
{
    static const char *const env[] = {"EDDY_TRUSTED_PROXIES=127.0.0.1", "EDDY_MAX_CONNS_PER_IP=2",
                                      NULL};
    char buf[8192];
    int proxy[5], other[3], served = 0;

    ck_assert_int_eq(it_server_start(&S, env), 0);
    for (int i = 0; i < 5; i++) {
        proxy[i] = connect_from("127.0.0.1");
        ck_assert_int_ge(proxy[i], 0);
    }
    for (int i = 0; i < 5; i++) {
        ck_assert(send_all(proxy[i], "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n", now_ms() + HANG_MS));
        ck_assert_int_eq(read_answer(proxy[i], buf, sizeof(buf), now_ms() + HANG_MS), 200);
    }
    for (int i = 0; i < 3; i++) {
        other[i] = connect_from("127.0.0.9");
        ck_assert_int_ge(other[i], 0);
        usleep(100000);   /* accepted (or refused) in order */
    }
    for (int i = 0; i < 3; i++) {
        if (send_all(other[i], "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n", now_ms() + HANG_MS) &&
            read_answer(other[i], buf, sizeof(buf), now_ms() + HANG_MS) == 200)
            served++;
    }
    ck_assert_int_eq(served, 2);
    for (int i = 0; i < 5; i++)
        close(proxy[i]);
    for (int i = 0; i < 3; i++)
        close(other[i]);
    ck_assert_int_eq(it_server_stop(&S), 0);
}
END_TEST

int main(void)
{
    const TTest *tests[] = {header_deadline_applies_per_request_on_a_kept_alive_connection,
                            many_slow_clients_from_many_addresses_do_not_lock_others_out,
                            trusted_proxy_is_exempt_from_the_per_address_cap, NULL};
    char why[200];
    int probe;

    /* The attack holds 1,250 client sockets in this process. */
    if (it_fds_reserve(N_CONNS + 200, why, sizeof(why)) < 0) {
        fprintf(stderr, "SKIP: %s for %d client sockets\n", why, N_CONNS);
        return 77;
    }
    /* Loopback aliases: a socket bound to 127.0.0.26 (Linux routes all of
     * 127.0.0.0/8 to lo; other systems may not). */
    {
        struct sockaddr_in from = {.sin_family = AF_INET};
        inet_pton(AF_INET, "127.0.0.26", &from.sin_addr);
        probe = socket(AF_INET, SOCK_STREAM, 0);
        if (probe < 0 || bind(probe, (struct sockaddr *)&from, sizeof(from)) < 0) {
            fprintf(stderr, "SKIP: cannot bind a client socket to 127.0.0.26: %s\n",
                    strerror(errno));
            return 77;
        }
        close(probe);
    }
    return it_tests_run("slowloris", 180, NULL, NULL, tests);
}
