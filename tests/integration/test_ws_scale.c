/*
 * test_ws_scale.c - WebSockets are served from event loops, not a thread
 * each (issue 11, item 12).
 *
 * Before: 600 kernel channels cost 1,199 threads in eddy serve (a reader and
 * a pump per connection). Now: 600 channels to one running kernel, opened
 * from 20 loopback addresses (127.0.0.2 ... 127.0.0.21, so the default
 * per-address limit of 64 applies as it would to real clients), and:
 *   - the serving process's thread count (/proc/PID/status Threads) stays
 *     at most 64 with all of them open;
 *   - every one still answers a ping with a pong carrying its payload;
 *   - cells executed on a few of them get their execute_reply;
 *   - closing them all (half with a close frame, half by dropping the TCP
 *     connection) leaves /healthz answering and the thread count bounded.
 * No timing assertion: 30 s per answer is a hang detector.
 */
#include "harness.h"

#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define N_WS      600
#define N_ADDRS   20
#define MAX_THR   64
#define HANG_MS   30000

static it_server S;
static char key[128];

typedef struct wsc {
    int     fd;
    uint8_t buf[65536];
    size_t  len;
} wsc;

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Threads of the serving process. */
static int server_threads(void)
{
    char path[64], line[256];
    FILE *f;
    int n = -1;

    snprintf(path, sizeof(path), "/proc/%d/status", (int)S.pid);
    if ((f = fopen(path, "r")) == NULL)
        return -1;
    while (fgets(line, sizeof(line), f))
        if (sscanf(line, "Threads: %d", &n) == 1)
            break;
    fclose(f);
    return n;
}

static void send_frame(wsc *c, int opcode, const void *data, size_t len)
{
    uint8_t f[16 + 4096], m[4] = {9, 8, 7, 6};
    size_t h = 2;

    ck_assert_uint_le(len, 4096);
    f[0] = (uint8_t)(0x80 | opcode);
    f[1] = 0x80;
    if (len < 126) {
        f[1] |= (uint8_t)len;
    } else {
        f[1] |= 126;
        f[2] = (uint8_t)(len >> 8);
        f[3] = (uint8_t)len;
        h = 4;
    }
    memcpy(f + h, m, 4);
    h += 4;
    for (size_t i = 0; i < len; i++)
        f[h + i] = ((const uint8_t *)data)[i] ^ m[i & 3];
    ck_assert_int_eq(send(c->fd, f, h + len, MSG_NOSIGNAL), (ssize_t)(h + len));
}

/* The next frame: 1 with opcode and a malloc'd payload, 0 on timeout, -1 closed. */
static int recv_frame(wsc *c, int *opcode, char **data, size_t *len, int64_t deadline)
{
    for (;;) {
        if (c->len >= 2) {
            uint64_t plen = c->buf[1] & 0x7F;
            size_t h = 2;
            bool have = true;
            if (plen == 126) {
                have = c->len >= 4;
                if (have)
                    plen = (uint64_t)c->buf[2] << 8 | c->buf[3];
                h = 4;
            } else if (plen == 127) {
                have = c->len >= 10;
                if (have) {
                    plen = 0;
                    for (int i = 0; i < 8; i++)
                        plen = plen << 8 | c->buf[2 + i];
                }
                h = 10;
            }
            ck_assert_msg(!have || h + plen <= sizeof(c->buf), "frame of %llu bytes",
                          (unsigned long long)plen);
            if (have && c->len >= h + plen) {
                *opcode = c->buf[0] & 0x0F;
                *data = malloc((size_t)plen + 1);
                memcpy(*data, c->buf + h, (size_t)plen);
                (*data)[plen] = '\0';
                *len = (size_t)plen;
                memmove(c->buf, c->buf + h + plen, c->len - h - (size_t)plen);
                c->len -= h + (size_t)plen;
                return 1;
            }
        }
        {
            struct pollfd p = {.fd = c->fd, .events = POLLIN};
            int64_t left = deadline - now_ms();
            ssize_t n;
            if (left <= 0 || poll(&p, 1, (int)left) != 1)
                return 0;
            n = recv(c->fd, c->buf + c->len, sizeof(c->buf) - c->len, 0);
            if (n <= 0)
                return -1;
            c->len += (size_t)n;
        }
    }
}

/* Open the channels of kernel `id` from address `src`: the HTTP status. */
static long ws_open(wsc *c, const char *src, const char *id)
{
    struct sockaddr_in to = {.sin_family = AF_INET, .sin_port = htons((uint16_t)S.port)};
    struct sockaddr_in from = {.sin_family = AF_INET};
    char req[1024];
    int one = 1;
    long status = 0;
    char *end = NULL;
    int64_t deadline = now_ms() + HANG_MS;

    memset(c, 0, sizeof(*c));
    inet_pton(AF_INET, "127.0.0.1", &to.sin_addr);
    inet_pton(AF_INET, src, &from.sin_addr);
    c->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    ck_assert_int_ge(c->fd, 0);
    ck_assert_int_eq(bind(c->fd, (struct sockaddr *)&from, sizeof(from)), 0);
    ck_assert_int_eq(connect(c->fd, (struct sockaddr *)&to, sizeof(to)), 0);
    setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    snprintf(req, sizeof(req),
             "GET /api/kernels/%s/channels HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\n"
             "Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
             "Sec-WebSocket-Version: 13\r\nAuthorization: token %s\r\n\r\n",
             id, key);
    ck_assert_int_eq(send(c->fd, req, strlen(req), MSG_NOSIGNAL), (ssize_t)strlen(req));
    while (end == NULL) {
        struct pollfd p = {.fd = c->fd, .events = POLLIN};
        ssize_t n;
        ck_assert_msg(now_ms() < deadline && poll(&p, 1, 1000) >= 0, "no handshake answer");
        if (!(p.revents & POLLIN))
            continue;
        n = recv(c->fd, c->buf + c->len, sizeof(c->buf) - c->len - 1, 0);
        ck_assert_int_gt(n, 0);
        c->len += (size_t)n;
        c->buf[c->len] = 0;
        end = strstr((char *)c->buf, "\r\n\r\n");
    }
    sscanf((char *)c->buf, "HTTP/1.1 %ld", &status);
    {
        size_t hl = (size_t)(end + 4 - (char *)c->buf);
        memmove(c->buf, c->buf + hl, c->len - hl);
        c->len -= hl;
    }
    return status;
}

static char *make_key(void)
{
    char *cookie = NULL, *csrf = NULL, ch[600], xh[300];
    const char *h[3];
    it_resp r;
    char *k;

    ck_assert_int_eq(it_signup_login(&S, "scaler", "correct horse 1", &cookie, &csrf), 0);
    snprintf(ch, sizeof(ch), "Cookie: %s", cookie);
    snprintf(xh, sizeof(xh), "X-CSRF-Token: %s", csrf);
    h[0] = ch;
    h[1] = xh;
    h[2] = NULL;
    ck_assert_int_eq(it_request(&r, &S, "POST", "/api/v1/keys",
                                "{\"name\":\"scale\",\"env\":\"prod\",\"scopes\":[\"read\",\"write\",\"run\"]}",
                                h),
                     0);
    ck_assert_msg(r.status == 201, "key: %ld %s", r.status, r.body);
    k = strdup(json_string_value(json_object_get(r.json, "key")));
    it_resp_free(&r);
    free(cookie);
    free(csrf);
    return k;
}

/* Execute `code` on c and wait for its execute_reply (other frames skipped). */
static void execute_on(wsc *c, const char *msg_id)
{
    char msg[512];
    int64_t deadline = now_ms() + HANG_MS;

    snprintf(msg, sizeof(msg),
             "{\"channel\":\"shell\",\"header\":{\"msg_id\":\"%s\",\"msg_type\":\"execute_request\","
             "\"session\":\"scale\",\"username\":\"t\",\"version\":\"5.3\",\"date\":\"\"},"
             "\"parent_header\":{},\"metadata\":{},\"content\":{\"code\":\"1+1\",\"silent\":false,"
             "\"store_history\":true,\"user_expressions\":{},\"allow_stdin\":false,"
             "\"stop_on_error\":true},\"buffers\":[]}",
             msg_id);
    send_frame(c, 0x1, msg, strlen(msg));
    for (;;) {
        int op;
        char *data;
        size_t len;
        int rc = recv_frame(c, &op, &data, &len, deadline);
        bool done;
        ck_assert_msg(rc == 1, "no execute_reply for %s (%d)", msg_id, rc);
        done = op == 0x1 && strstr(data, "\"execute_reply\"") && strstr(data, msg_id);
        free(data);
        if (done)
            return;
    }
}

/* Ping c and wait for the pong with the same payload (other frames skipped). */
static void ping_pong(wsc *c, int i)
{
    char tag[32];
    int64_t deadline = now_ms() + HANG_MS;

    snprintf(tag, sizeof(tag), "ws-%d", i);
    send_frame(c, 0x9, tag, strlen(tag));
    for (;;) {
        int op;
        char *data;
        size_t len;
        int rc = recv_frame(c, &op, &data, &len, deadline);
        bool done;
        ck_assert_msg(rc == 1, "WebSocket %d: no pong (%d)", i, rc);
        done = op == 0xA && len == strlen(tag) && memcmp(data, tag, len) == 0;
        free(data);
        if (done)
            return;
    }
}

START_TEST(six_hundred_websockets_share_a_few_threads)
{
    static wsc socks[N_WS];
    const char *env[] = {"EDDY_MAX_CONNS=4096", "EDDY_DEFAULT_KEY_RATE_PER_MIN=100000", NULL};
    char hdr[200], id[64], path[160];
    const char *h[3];
    it_resp r;
    int threads_before, threads_open, threads_after;
    int64_t deadline;

    ck_assert_int_eq(it_server_start(&S, env), 0);
    {
        char *k = make_key();
        snprintf(key, sizeof(key), "%s", k);
        free(k);
    }
    snprintf(hdr, sizeof(hdr), "Authorization: token %s", key);
    h[0] = hdr;
    h[1] = "Content-Type: application/json";
    h[2] = NULL;
    ck_assert_int_eq(it_request(&r, &S, "POST", "/api/kernels", "{\"name\":\"python3\"}", h), 0);
    ck_assert_msg(r.status == 201, "kernel: %ld %s", r.status, r.body);
    snprintf(id, sizeof(id), "%s", json_string_value(json_object_get(r.json, "id")));
    it_resp_free(&r);
    snprintf(path, sizeof(path), "/api/kernels/%s", id);
    deadline = now_ms() + 60000;
    for (;;) {   /* running: idle */
        bool idle;
        ck_assert_int_eq(it_request(&r, &S, "GET", path, NULL, h), 0);
        idle = r.status == 200 &&
               strcmp(json_string_value(json_object_get(r.json, "execution_state")), "idle") == 0;
        it_resp_free(&r);
        if (idle)
            break;
        ck_assert_msg(now_ms() < deadline, "kernel %s never became idle", id);
        usleep(100000);
    }
    threads_before = server_threads();
    ck_assert_int_gt(threads_before, 0);

    for (int i = 0; i < N_WS; i++) {
        char src[32];
        long st;
        snprintf(src, sizeof(src), "127.0.0.%d", 2 + i % N_ADDRS);
        st = ws_open(&socks[i], src, id);
        ck_assert_msg(st == 101, "WebSocket %d: status %ld", i, st);
    }
    threads_open = server_threads();
    fprintf(stderr, "threads: %d before, %d with %d WebSockets open\n", threads_before,
            threads_open, N_WS);
    ck_assert_msg(threads_open <= MAX_THR, "%d threads with %d WebSockets open (limit %d)",
                  threads_open, N_WS, MAX_THR);

    /* Every connection still works, and cells run on a few of them. */
    for (int i = 0; i < N_WS; i++)
        ping_pong(&socks[i], i);
    execute_on(&socks[0], "scale-first");
    execute_on(&socks[N_WS / 2], "scale-middle");
    execute_on(&socks[N_WS - 1], "scale-last");
    ck_assert_int_le(server_threads(), MAX_THR);

    /* Close them all: half politely, half by dropping the connection. */
    for (int i = 0; i < N_WS; i++) {
        if (i % 2 == 0)
            send_frame(&socks[i], 0x8, "\x03\xe8", 2);
        else
            close(socks[i].fd);
    }
    for (int i = 0; i < N_WS; i += 2) {
        int op = 0, rc;
        char *data;
        size_t len;
        deadline = now_ms() + HANG_MS;
        while ((rc = recv_frame(&socks[i], &op, &data, &len, deadline)) == 1 && op != 0x8)
            free(data);
        ck_assert_msg(rc == 1 && op == 0x8, "WebSocket %d: no close answer (%d)", i, rc);
        free(data);
        close(socks[i].fd);
    }
    ck_assert_int_eq(it_request(&r, &S, "GET", "/healthz", NULL, NULL), 0);
    ck_assert_int_eq(r.status, 200);
    it_resp_free(&r);
    threads_after = server_threads();
    ck_assert_int_le(threads_after, MAX_THR);
    ck_assert_int_eq(it_request(&r, &S, "DELETE", path, NULL, h), 0);
    it_resp_free(&r);
    ck_assert_int_eq(it_server_stop(&S), 0);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("ws_scale");
    TCase *t = tcase_create("ws_scale");

    tcase_set_timeout(t, 240);
    tcase_add_test(t, six_hundred_websockets_share_a_few_threads);
    suite_add_tcase(s, t);
    return s;
}

int main(void)
{
    struct rlimit rl;

    getrlimit(RLIMIT_NOFILE, &rl);
    if (rl.rlim_cur < N_WS + 200 && rl.rlim_max != rl.rlim_cur) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
        getrlimit(RLIMIT_NOFILE, &rl);
    }
    if (rl.rlim_cur < N_WS + 200) {
        fprintf(stderr, "SKIP: RLIMIT_NOFILE %llu is too low for %d WebSockets\n",
                (unsigned long long)rl.rlim_cur, N_WS);
        return 77;
    }
    return it_suite_run(suite());
}
