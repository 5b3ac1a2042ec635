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

#include <check.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define N_WS      600
#define N_ADDRS   20
#define MAX_THR   64
#define HANG_MS   30000

static it_server S;
static char key[160];

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

static void send_frame(it_ws *c, int opcode, const void *data, size_t len)
{
    ck_assert_int_eq(it_ws_send(c, 0x80 | opcode, data, len, 1), 0);
}

/* Open the channels of kernel `id` from address `src`: the HTTP status. */
static long ws_open(it_ws *c, const char *src, const char *id)
{
    char path[160], auth[200];
    const char *h[] = {auth, NULL};

    snprintf(path, sizeof(path), "/api/kernels/%s/channels", id);
    snprintf(auth, sizeof(auth), "Authorization: token %s", key);
    return it_ws_open(c, &S, src, path, h, 65536, HANG_MS);
}

/* A user and an API key of theirs with scopes read, write, run. */
static void make_key(void)
{
    static const char body[] = "{\"name\":\"scale\",\"env\":\"prod\",\"scopes\":[\"read\",\"write\",\"run\"]}";
    it_user u;
    it_key k;

    ck_assert_int_eq(it_user_make(&u, &S, NULL, NULL, "scaler", 0), 0);
    ck_assert_int_eq(it_key_make(&k, &S, u.hdrs, body), 0);
    snprintf(key, sizeof(key), "%s", k.auth + strlen("Authorization: Bearer "));
}

/* Read frames from c (within HANG_MS) until one of opcode `op` whose
 * payload is `want` (`exact`) or holds `want` and `also`; others are
 * skipped. */
static void await_frame(it_ws *c, int op, const char *want, bool exact, const char *also, const char *what)
{
    int64_t deadline = now_ms() + HANG_MS;

    for (;;) {
        int got;
        char *data;
        size_t len;
        int rc = it_ws_recv(c, &got, &data, &len, (int)(deadline - now_ms()));
        bool done;
        ck_assert_msg(rc == 1, "%s (%d)", what, rc);
        done = got == op && (exact ? len == strlen(want) && memcmp(data, want, len) == 0
                                   : strstr(data, want) && (!also || strstr(data, also)));
        free(data);
        if (done)
            return;
    }
}

/* Execute 1+1 on c and wait for its execute_reply (other frames skipped). */
static void execute_on(it_ws *c, const char *msg_id)
{
    char msg[512], what[96];

    snprintf(msg, sizeof(msg),
             "{\"channel\":\"shell\",\"header\":{\"msg_id\":\"%s\",\"msg_type\":\"execute_request\","
             "\"session\":\"scale\",\"username\":\"t\",\"version\":\"5.3\",\"date\":\"\"},"
             "\"parent_header\":{},\"metadata\":{},\"content\":{\"code\":\"1+1\",\"silent\":false,"
             "\"store_history\":true,\"user_expressions\":{},\"allow_stdin\":false,"
             "\"stop_on_error\":true},\"buffers\":[]}",
             msg_id);
    send_frame(c, 0x1, msg, strlen(msg));
    snprintf(what, sizeof(what), "no execute_reply for %s", msg_id);
    await_frame(c, 0x1, "\"execute_reply\"", false, msg_id, what);
}

/* Ping c and wait for the pong with the same payload (other frames skipped). */
static void ping_pong(it_ws *c, int i)
{
    char tag[32], what[64];

    snprintf(tag, sizeof(tag), "ws-%d", i);
    send_frame(c, 0x9, tag, strlen(tag));
    snprintf(what, sizeof(what), "WebSocket %d: no pong", i);
    await_frame(c, 0xA, tag, true, NULL, what);
}

START_TEST(six_hundred_websockets_share_a_few_threads)
{
    static it_ws socks[N_WS];
    const char *env[] = {"EDDY_MAX_CONNS=4096", "EDDY_DEFAULT_KEY_RATE_PER_MIN=100000", NULL};
    char hdr[200], id[64], path[160];
    const char *h[3];
    it_resp r;
    int threads_before, threads_open, threads_after;
    int64_t deadline;

    ck_assert_int_eq(it_server_start(&S, env), 0);
    make_key();
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
            it_ws_close(&socks[i]);
    }
    for (int i = 0; i < N_WS; i += 2) {
        int op = 0, rc;
        char *data;
        size_t len;
        deadline = now_ms() + HANG_MS;
        while ((rc = it_ws_recv(&socks[i], &op, &data, &len, (int)(deadline - now_ms()))) == 1 && op != 0x8)
            free(data);
        ck_assert_msg(rc == 1 && op == 0x8, "WebSocket %d: no close answer (%d)", i, rc);
        free(data);
        it_ws_close(&socks[i]);
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

int main(void)
{
    const TTest *tests[] = {six_hundred_websockets_share_a_few_threads, NULL};
    char why[200];

    if (it_fds_reserve(N_WS + 200, why, sizeof(why)) < 0) {
        fprintf(stderr, "SKIP: %s for %d WebSockets\n", why, N_WS);
        return 77;
    }
    return it_tests_run("ws_scale", 240, NULL, NULL, tests);
}
