/* Unit tests for the WebSocket codec (gateway/ws.c): the handshake key,
 * SHA-1, frame headers, parsing with masking, fragmentation, control frames,
 * 16/64-bit lengths, and every malformed frame that must close 1002/1007/1009. */
#include "gw_int.h"

#include "ed_error.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const uint8_t MASK[4] = {0x37, 0xfa, 0x21, 0x3d};

/* A client frame: header (masked with MASK) and the masked payload. */
static size_t client_frame(uint8_t *out, int b0, const void *payload, size_t len, bool mask)
{
    size_t h = gw__ws_frame_header(out, b0 & 0x0F, (b0 & 0x80) != 0, len, mask ? MASK : NULL);
    out[0] = (uint8_t)b0;   /* keep reserved bits the caller set */
    for (size_t i = 0; i < len; i++)
        out[h + i] = (uint8_t)(((const uint8_t *)payload)[i] ^ (mask ? MASK[i & 3] : 0));
    return h + len;
}

static int parse1(gw_ws_event *ev, gw_ws_parser *p, uint8_t *buf, size_t len, size_t *used)
{
    return gw__ws_parse(ev, p, buf, len, used);
}

START_TEST(sha1_matches_known_digests)
{
    uint8_t d[20];
    char hex[41];
    const char *cases[][2] = {
        {"", "da39a3ee5e6b4b0d3255bfef95601890afd80709"},
        {"abc", "a9993e364706816aba3e25717850c26c9cd0d89d"},
        {"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
         "84983e441c3bd26ebaae4aa1f95129e5e54670f1"},
    };
    for (size_t c = 0; c < 3; c++) {
        gw__sha1(d, cases[c][0], strlen(cases[c][0]));
        for (int i = 0; i < 20; i++)
            snprintf(hex + 2 * i, 3, "%02x", d[i]);
        ck_assert_str_eq(hex, cases[c][1]);
    }
}
END_TEST

START_TEST(accept_key_matches_rfc6455_example)
{
    char out[29];
    ck_assert_int_eq(gw__ws_accept_key(out, "dGhlIHNhbXBsZSBub25jZQ=="), 0);
    ck_assert_str_eq(out, "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
}
END_TEST

START_TEST(accept_key_rejects_keys_that_are_not_16_bytes)
{
    char out[29];
    ck_assert_int_eq(gw__ws_accept_key(out, NULL), ED_EINVAL);
    ck_assert_int_eq(gw__ws_accept_key(out, "short"), ED_EINVAL);
    ck_assert_int_eq(gw__ws_accept_key(out, "dGhlIHNhbXBsZSBub25jZQ"), ED_EINVAL);
    ck_assert_int_eq(gw__ws_accept_key(out, "!!!!!!!!!!!!!!!!!!!!!!=="), ED_EINVAL);
}
END_TEST

START_TEST(parse_masked_text_rfc_example)
{
    /* RFC 6455 5.7: a single-frame masked text message containing "Hello". */
    uint8_t f[] = {0x81, 0x85, 0x37, 0xfa, 0x21, 0x3d, 0x7f, 0x9f, 0x4d, 0x51, 0x58};
    gw_ws_parser p = {.require_mask = true};
    gw_ws_event ev;
    size_t used;

    ck_assert_int_eq(parse1(&ev, &p, f, sizeof(f), &used), 1);
    ck_assert_uint_eq(used, sizeof(f));
    ck_assert_int_eq(ev.opcode, GW_WS_TEXT);
    ck_assert_uint_eq(ev.len, 5);
    ck_assert_int_eq(memcmp(ev.data, "Hello", 5), 0);
    gw__ws_parser_free(&p);
}
END_TEST

START_TEST(parse_waits_for_every_incomplete_prefix)
{
    uint8_t payload[300], f[400], copy[400];
    gw_ws_parser p = {.require_mask = true};
    gw_ws_event ev;
    size_t used, n;

    memset(payload, 'x', sizeof(payload));
    n = client_frame(f, 0x82, payload, sizeof(payload), true);
    for (size_t k = 0; k < n; k++) {
        memcpy(copy, f, n);
        ck_assert_int_eq(parse1(&ev, &p, copy, k, &used), 0);
        ck_assert_uint_eq(used, 0);
    }
    ck_assert_int_eq(parse1(&ev, &p, f, n, &used), 1);
    ck_assert_int_eq(ev.opcode, GW_WS_BINARY);
    ck_assert_uint_eq(ev.len, sizeof(payload));
    ck_assert_int_eq(memcmp(ev.data, payload, sizeof(payload)), 0);
    gw__ws_parser_free(&p);
}
END_TEST

START_TEST(parse_16_and_64_bit_lengths)
{
    size_t sizes[] = {125, 126, 65535, 65536, 70000};
    for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
        size_t len = sizes[s];
        uint8_t *payload = malloc(len), *f = malloc(len + 14);
        gw_ws_parser p = {.require_mask = true};
        gw_ws_event ev;
        size_t used, n;

        for (size_t i = 0; i < len; i++)
            payload[i] = (uint8_t)(i * 7);
        n = client_frame(f, 0x82, payload, len, true);
        ck_assert_uint_eq(n, len + 4 + (len < 126 ? 2 : len <= 65535 ? 4 : 10));
        ck_assert_int_eq(parse1(&ev, &p, f, n, &used), 1);
        ck_assert_uint_eq(used, n);
        ck_assert_uint_eq(ev.len, len);
        ck_assert_int_eq(memcmp(ev.data, payload, len), 0);
        gw__ws_parser_free(&p);
        free(payload);
        free(f);
    }
}
END_TEST

START_TEST(parse_reassembles_fragments_around_a_ping)
{
    uint8_t buf[256];
    size_t n = 0, off = 0, used;
    gw_ws_parser p = {.require_mask = true};
    gw_ws_event ev;

    n += client_frame(buf + n, 0x01, "Hel", 3, true);       /* text, not final */
    n += client_frame(buf + n, 0x89, "hi", 2, true);        /* ping in between */
    n += client_frame(buf + n, 0x00, "l", 1, true);         /* continuation */
    n += client_frame(buf + n, 0x80, "o", 1, true);         /* final continuation */

    ck_assert_int_eq(parse1(&ev, &p, buf + off, n - off, &used), 0);
    ck_assert_uint_gt(used, 0);
    off += used;
    ck_assert_int_eq(parse1(&ev, &p, buf + off, n - off, &used), 1);
    ck_assert_int_eq(ev.opcode, GW_WS_PING);
    ck_assert_int_eq(memcmp(ev.data, "hi", 2), 0);
    off += used;
    ck_assert_int_eq(parse1(&ev, &p, buf + off, n - off, &used), 0);
    off += used;
    ck_assert_int_eq(parse1(&ev, &p, buf + off, n - off, &used), 1);
    off += used;
    ck_assert_uint_eq(off, n);
    ck_assert_int_eq(ev.opcode, GW_WS_TEXT);
    ck_assert_uint_eq(ev.len, 5);
    ck_assert_int_eq(memcmp(ev.data, "Hello", 5), 0);
    gw__ws_parser_free(&p);
}
END_TEST

START_TEST(parse_close_reads_code_and_reason)
{
    uint8_t body[] = {0x03, 0xE8, 'b', 'y', 'e'}, f[32];
    gw_ws_parser p = {.require_mask = true};
    gw_ws_event ev;
    size_t used, n = client_frame(f, 0x88, body, sizeof(body), true);

    ck_assert_int_eq(parse1(&ev, &p, f, n, &used), 1);
    ck_assert_int_eq(ev.opcode, GW_WS_CLOSE);
    ck_assert_int_eq(ev.close_code, 1000);
    ck_assert_uint_eq(ev.len, 3);
    n = client_frame(f, 0x88, "", 0, true);
    ck_assert_int_eq(parse1(&ev, &p, f, n, &used), 1);
    ck_assert_int_eq(ev.close_code, 1005);
}
END_TEST

/* A malformed frame: the parse fails with `err` and asks to close with `code`. */
static void expect_refused(uint8_t *f, size_t n, int err, int code, size_t max)
{
    gw_ws_parser p = {.require_mask = true, .max_message = max};
    gw_ws_event ev;
    size_t used;

    ck_assert_int_eq(parse1(&ev, &p, f, n, &used), err);
    ck_assert_int_eq(ev.close_code, code);
    gw__ws_parser_free(&p);
}

START_TEST(unmasked_client_frame_closes_1002)
{
    uint8_t f[16];
    size_t n = client_frame(f, 0x81, "hi", 2, false);
    expect_refused(f, n, ED_EINVAL, 1002, 0);
}
END_TEST

START_TEST(reserved_bits_close_1002)
{
    uint8_t f[16];
    for (int rsv = 0x10; rsv <= 0x40; rsv <<= 1) {
        size_t n = client_frame(f, 0x81 | rsv, "hi", 2, true);
        expect_refused(f, n, ED_EINVAL, 1002, 0);
    }
}
END_TEST

START_TEST(unknown_opcodes_close_1002)
{
    int bad[] = {0x3, 0x4, 0x7, 0xB, 0xF};
    uint8_t f[16];
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        size_t n = client_frame(f, 0x80 | bad[i], "x", 1, true);
        expect_refused(f, n, ED_EINVAL, 1002, 0);
    }
}
END_TEST

START_TEST(fragmented_control_frame_closes_1002)
{
    uint8_t f[16];
    size_t n = client_frame(f, 0x09, "x", 1, true);   /* ping without FIN */
    expect_refused(f, n, ED_EINVAL, 1002, 0);
}
END_TEST

START_TEST(control_frame_over_125_bytes_closes_1002)
{
    uint8_t payload[126] = {0}, f[160];
    size_t n = client_frame(f, 0x89, payload, sizeof(payload), true);
    expect_refused(f, n, ED_EINVAL, 1002, 0);
}
END_TEST

START_TEST(oversized_frame_closes_1009_before_its_payload_arrives)
{
    uint8_t f[14];
    /* Only the header of a 2^40-byte frame: refused without waiting for it. */
    size_t n = gw__ws_frame_header(f, GW_WS_BINARY, true, (uint64_t)1 << 40, MASK);
    expect_refused(f, n, ED_ETOOBIG, 1009, 0);
    n = gw__ws_frame_header(f, GW_WS_BINARY, true, 2000, MASK);
    expect_refused(f, n, ED_ETOOBIG, 1009, 1000);
}
END_TEST

START_TEST(fragments_summing_past_the_limit_close_1009)
{
    uint8_t payload[600] = {0}, f[2000];
    gw_ws_parser p = {.require_mask = true, .max_message = 1000};
    gw_ws_event ev;
    size_t used, n;

    n = client_frame(f, 0x02, payload, sizeof(payload), true);
    ck_assert_int_eq(parse1(&ev, &p, f, n, &used), 0);
    n = client_frame(f, 0x80, payload, sizeof(payload), true);
    ck_assert_int_eq(parse1(&ev, &p, f, n, &used), ED_ETOOBIG);
    ck_assert_int_eq(ev.close_code, 1009);
    gw__ws_parser_free(&p);
}
END_TEST

START_TEST(top_bit_of_64_bit_length_closes_1002)
{
    uint8_t f[14];
    size_t n = gw__ws_frame_header(f, GW_WS_BINARY, true, (uint64_t)1 << 63, MASK);
    expect_refused(f, n, ED_EINVAL, 1002, 0);
}
END_TEST

START_TEST(continuation_without_a_message_closes_1002)
{
    uint8_t f[16];
    size_t n = client_frame(f, 0x80, "x", 1, true);
    expect_refused(f, n, ED_EINVAL, 1002, 0);
}
END_TEST

START_TEST(new_message_inside_a_fragmented_one_closes_1002)
{
    uint8_t f[32];
    gw_ws_parser p = {.require_mask = true};
    gw_ws_event ev;
    size_t used, n;

    n = client_frame(f, 0x01, "ab", 2, true);
    ck_assert_int_eq(parse1(&ev, &p, f, n, &used), 0);
    n = client_frame(f, 0x81, "cd", 2, true);
    ck_assert_int_eq(parse1(&ev, &p, f, n, &used), ED_EINVAL);
    ck_assert_int_eq(ev.close_code, 1002);
    gw__ws_parser_free(&p);
}
END_TEST

START_TEST(text_that_is_not_utf8_closes_1007)
{
    uint8_t bad[] = {'a', 0xC0, 0xAF}, f[16];   /* overlong '/' */
    size_t n = client_frame(f, 0x81, bad, sizeof(bad), true);
    expect_refused(f, n, ED_EINVAL, 1007, 0);
}
END_TEST

START_TEST(bad_close_frames_close_1002)
{
    uint8_t f[16], one[] = {0x03}, reserved[] = {0x03, 0xED};   /* 1005 may not be sent */
    size_t n = client_frame(f, 0x88, one, sizeof(one), true);
    expect_refused(f, n, ED_EINVAL, 1002, 0);
    n = client_frame(f, 0x88, reserved, sizeof(reserved), true);
    expect_refused(f, n, ED_EINVAL, 1002, 0);
}
END_TEST

START_TEST(utf8_validation)
{
    const uint8_t ok[] = "h\xC3\xA9llo \xE2\x82\xAC \xF0\x9F\x98\x80";
    const uint8_t surrogate[] = {0xED, 0xA0, 0x80};
    const uint8_t truncated[] = {0xE2, 0x82};
    const uint8_t too_high[] = {0xF4, 0x90, 0x80, 0x80};
    ck_assert(gw__utf8_valid(ok, sizeof(ok) - 1));
    ck_assert(!gw__utf8_valid(surrogate, sizeof(surrogate)));
    ck_assert(!gw__utf8_valid(truncated, sizeof(truncated)));
    ck_assert(!gw__utf8_valid(too_high, sizeof(too_high)));
}
END_TEST

START_TEST(server_frame_header_sizes)
{
    uint8_t h[14];
    ck_assert_uint_eq(gw__ws_frame_header(h, GW_WS_TEXT, true, 125, NULL), 2);
    ck_assert_uint_eq(h[0], 0x81);
    ck_assert_uint_eq(h[1], 125);
    ck_assert_uint_eq(gw__ws_frame_header(h, GW_WS_BINARY, true, 126, NULL), 4);
    ck_assert_uint_eq(h[1], 126);
    ck_assert_uint_eq(gw__ws_frame_header(h, GW_WS_BINARY, false, 65536, NULL), 10);
    ck_assert_uint_eq(h[0], 0x02);
    ck_assert_uint_eq(h[1], 127);
    ck_assert_uint_eq(h[7], 1);
}
END_TEST

/* ---- the event loops (gw__ws_serve_fd over a socketpair) ------------------------- */

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

typedef struct lt {
    gw_ws      *ws;
    atomic_int  opened, closed, woken;
    int         mode;          /* 0 echo, 1 wake_after on each message */
} lt;

static int lt_open(gw_ws *ws, void *payload)
{
    lt *t = payload;
    t->ws = ws;
    atomic_fetch_add(&t->opened, 1);
    return 0;
}

static int lt_message(gw_ws *ws, int opcode, const uint8_t *data, size_t len, void *payload)
{
    lt *t = payload;
    if (t->mode == 1) {
        gw_ws_wake_after(ws, 30);
        return 0;
    }
    return gw_ws_send(ws, opcode, data, len);
}

static void lt_close(gw_ws *ws, void *payload)
{
    lt *t = payload;
    (void)ws;
    atomic_fetch_add(&t->closed, 1);
}

static void lt_wake(gw_ws *ws, void *payload)
{
    lt *t = payload;
    atomic_fetch_add(&t->woken, 1);
    gw_ws_send(ws, GW_WS_TEXT, "woken", 5);
}

static int lt_open_wake(gw_ws *ws, void *payload)
{
    gw_ws_set_on_wake(ws, lt_wake);
    return lt_open(ws, payload);
}

static int64_t ms_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Serve one end of a socketpair; *client gets the other. */
static void lt_start(lt *t, int *client, const gw_ws_handler *h)
{
    int sv[2];
    memset(t, 0, sizeof(*t));
    ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    ck_assert_int_eq(gw__ws_serve_fd(sv[0], h, t), 0);
    *client = sv[1];
}

static void client_send(int fd, int opcode, const void *data, size_t len)
{
    uint8_t f[256], m[4] = {0x11, 0x22, 0x33, 0x44};
    size_t h = gw__ws_frame_header(f, opcode, true, len, m);
    ck_assert_uint_le(h + len, sizeof(f));
    for (size_t i = 0; i < len; i++)
        f[h + i] = ((const uint8_t *)data)[i] ^ m[i & 3];
    ck_assert_int_eq(send(fd, f, h + len, MSG_NOSIGNAL), (ssize_t)(h + len));
}

/* Next server frame (unmasked) into buf: its opcode, -1 on EOF, 0 on a 10 s
 * timeout (a hang detector). Big payloads are skipped (len set, data not kept). */
static int client_recv(int fd, uint8_t *buf, size_t cap, size_t *len)
{
    uint8_t h[10];
    uint64_t n;
    size_t got = 0, need = 2;
    int64_t deadline = ms_now() + 10000;

    while (got < need) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        ssize_t r;
        if (poll(&p, 1, (int)(deadline - ms_now())) != 1)
            return 0;
        r = recv(fd, h + got, need - got, 0);
        if (r <= 0)
            return -1;
        got += (size_t)r;
        if (got == 2 && (h[1] & 0x7F) == 126)
            need = 4;
        else if (got == 2 && (h[1] & 0x7F) == 127)
            need = 10;
    }
    n = h[1] & 0x7F;
    if (n == 126)
        n = (uint64_t)h[2] << 8 | h[3];
    else if (n == 127)
        for (int i = 0, k = 2; i < 8; i++, k++)
            n = (i ? n << 8 : 0) | h[k];
    *len = (size_t)n;
    for (uint64_t off = 0; off < n;) {
        uint8_t sink[65536];
        struct pollfd p = {.fd = fd, .events = POLLIN};
        size_t want = (size_t)(n - off) < sizeof(sink) ? (size_t)(n - off) : sizeof(sink);
        ssize_t r;
        if (poll(&p, 1, (int)(deadline - ms_now())) != 1)
            return 0;
        r = recv(fd, sink, want, 0);
        if (r <= 0)
            return -1;
        if (off < cap)
            memcpy(buf + off, sink, (size_t)r < cap - off ? (size_t)r : cap - off);
        off += (uint64_t)r;
    }
    return h[0] & 0x0F;
}

static void wait_for(atomic_int *v, int want)
{
    int64_t deadline = ms_now() + 10000;
    while (atomic_load(v) < want && ms_now() < deadline)
        usleep(1000);
    ck_assert_int_ge(atomic_load(v), want);
}

static const gw_ws_handler echo_h = {lt_open, lt_message, lt_close};

START_TEST(loop_echoes_pongs_and_answers_a_close)
{
    lt t;
    int c, op;
    uint8_t buf[256];
    size_t len;

    lt_start(&t, &c, &echo_h);
    client_send(c, GW_WS_TEXT, "hello", 5);
    ck_assert_int_eq(client_recv(c, buf, sizeof(buf), &len), GW_WS_TEXT);
    ck_assert_uint_eq(len, 5);
    ck_assert_int_eq(memcmp(buf, "hello", 5), 0);
    client_send(c, GW_WS_PING, "p1", 2);
    ck_assert_int_eq(client_recv(c, buf, sizeof(buf), &len), GW_WS_PONG);
    ck_assert_int_eq(memcmp(buf, "p1", 2), 0);
    client_send(c, GW_WS_CLOSE, "\x03\xe8", 2);
    ck_assert_int_eq(client_recv(c, buf, sizeof(buf), &len), GW_WS_CLOSE);
    ck_assert_int_eq(buf[0] << 8 | buf[1], 1000);
    op = client_recv(c, buf, sizeof(buf), &len);
    ck_assert_int_eq(op, -1);           /* then the server closes the socket */
    wait_for(&t.closed, 1);
    ck_assert_int_eq(atomic_load(&t.opened), 1);
    usleep(50000);
    ck_assert_int_eq(atomic_load(&t.closed), 1);
    close(c);
}
END_TEST

/* A peer that reads nothing: gw_ws_send never blocks its caller (the old
 * send waited up to 10 s per frame); past 16 MiB queued the connection
 * closes with 1008 and the rest is dropped. */
START_TEST(slow_peer_never_blocks_the_sender_and_is_closed_1008)
{
    lt t;
    int c, op, sent_ok = 0, refused = 0;
    uint8_t buf[256];
    size_t len, chunk = 1u << 20;
    char *big = calloc(1, chunk);
    int64_t t0;

    lt_start(&t, &c, &echo_h);
    wait_for(&t.opened, 1);
    t0 = ms_now();
    for (int i = 0; i < 40; i++) {
        if (gw_ws_send(t.ws, GW_WS_BINARY, big, chunk) == 0)
            sent_ok++;
        else
            refused++;
    }
    /* A generous hang bound, not a timing figure: 40 blocking sends to a
     * peer that never reads would take minutes. */
    ck_assert_msg(ms_now() - t0 < 10000, "sends blocked for %lld ms", (long long)(ms_now() - t0));
    ck_assert_int_ge(sent_ok, 16);
    ck_assert_int_gt(refused, 0);
    /* The client reads now: whole frames, then close 1008, then EOF. */
    for (;;) {
        op = client_recv(c, buf, sizeof(buf), &len);
        ck_assert_int_ne(op, 0);
        ck_assert_int_ne(op, -1);
        if (op == GW_WS_CLOSE)
            break;
        ck_assert_int_eq(op, GW_WS_BINARY);
    }
    ck_assert_int_eq(buf[0] << 8 | buf[1], 1008);
    client_send(c, GW_WS_CLOSE, "\x03\xf0", 2);
    wait_for(&t.closed, 1);
    close(c);
    free(big);
}
END_TEST

START_TEST(wake_from_another_thread_runs_on_wake_on_the_loop)
{
    static const gw_ws_handler h = {lt_open_wake, lt_message, lt_close};
    lt t;
    int c;
    uint8_t buf[256];
    size_t len;

    lt_start(&t, &c, &h);
    wait_for(&t.opened, 1);
    gw_ws_wake(t.ws);
    ck_assert_int_eq(client_recv(c, buf, sizeof(buf), &len), GW_WS_TEXT);
    ck_assert_int_eq(memcmp(buf, "woken", 5), 0);
    /* A timer set from on_message fires on_wake too. */
    t.mode = 1;
    client_send(c, GW_WS_TEXT, "later", 5);
    ck_assert_int_eq(client_recv(c, buf, sizeof(buf), &len), GW_WS_TEXT);
    ck_assert_int_eq(memcmp(buf, "woken", 5), 0);
    ck_assert_int_ge(atomic_load(&t.woken), 2);
    close(c);                     /* a dropped TCP connection ends it too */
    wait_for(&t.closed, 1);
}
END_TEST

START_TEST(protocol_error_closes_1002_and_ends_the_connection)
{
    lt t;
    int c;
    uint8_t buf[256], bad[2] = {0x81, 0x00};   /* unmasked client frame */
    size_t len;

    lt_start(&t, &c, &echo_h);
    ck_assert_int_eq(send(c, bad, 2, MSG_NOSIGNAL), 2);
    ck_assert_int_eq(client_recv(c, buf, sizeof(buf), &len), GW_WS_CLOSE);
    ck_assert_int_eq(buf[0] << 8 | buf[1], 1002);
    wait_for(&t.closed, 1);       /* within the 2 s close wait, the peer silent */
    close(c);
}
END_TEST

START_TEST(stop_all_closes_every_connection_1001)
{
    lt t[20];
    int c[20];
    uint8_t buf[256];
    size_t len;

    for (int i = 0; i < 20; i++)
        lt_start(&t[i], &c[i], &echo_h);
    for (int i = 0; i < 20; i++)
        wait_for(&t[i].opened, 1);
    gw__ws_stop_all(4000);
    for (int i = 0; i < 20; i++) {
        ck_assert_int_eq(atomic_load(&t[i].closed), 1);
        ck_assert_int_eq(client_recv(c[i], buf, sizeof(buf), &len), GW_WS_CLOSE);
        ck_assert_int_eq(buf[0] << 8 | buf[1], 1001);
        close(c[i]);
    }
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("ws");
    TCase *c = tcase_create("codec");
    tcase_add_test(c, sha1_matches_known_digests);
    tcase_add_test(c, accept_key_matches_rfc6455_example);
    tcase_add_test(c, accept_key_rejects_keys_that_are_not_16_bytes);
    tcase_add_test(c, parse_masked_text_rfc_example);
    tcase_add_test(c, parse_waits_for_every_incomplete_prefix);
    tcase_add_test(c, parse_16_and_64_bit_lengths);
    tcase_add_test(c, parse_reassembles_fragments_around_a_ping);
    tcase_add_test(c, parse_close_reads_code_and_reason);
    tcase_add_test(c, unmasked_client_frame_closes_1002);
    tcase_add_test(c, reserved_bits_close_1002);
    tcase_add_test(c, unknown_opcodes_close_1002);
    tcase_add_test(c, fragmented_control_frame_closes_1002);
    tcase_add_test(c, control_frame_over_125_bytes_closes_1002);
    tcase_add_test(c, oversized_frame_closes_1009_before_its_payload_arrives);
    tcase_add_test(c, fragments_summing_past_the_limit_close_1009);
    tcase_add_test(c, top_bit_of_64_bit_length_closes_1002);
    tcase_add_test(c, continuation_without_a_message_closes_1002);
    tcase_add_test(c, new_message_inside_a_fragmented_one_closes_1002);
    tcase_add_test(c, text_that_is_not_utf8_closes_1007);
    tcase_add_test(c, bad_close_frames_close_1002);
    tcase_add_test(c, utf8_validation);
    tcase_add_test(c, server_frame_header_sizes);
    suite_add_tcase(s, c);
    c = tcase_create("loop");
    tcase_set_timeout(c, 60);
    tcase_add_test(c, loop_echoes_pongs_and_answers_a_close);
    tcase_add_test(c, slow_peer_never_blocks_the_sender_and_is_closed_1008);
    tcase_add_test(c, wake_from_another_thread_runs_on_wake_on_the_loop);
    tcase_add_test(c, protocol_error_closes_1002_and_ends_the_connection);
    tcase_add_test(c, stop_all_closes_every_connection_1001);
    suite_add_tcase(s, c);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(suite());
    int failed;

    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
