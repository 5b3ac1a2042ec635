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
