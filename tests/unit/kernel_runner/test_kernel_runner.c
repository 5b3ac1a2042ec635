/* Unit tests for kernel_runner/'s framing and message envelopes (kr.h):
 * frames through a real socketpair, every error path of the reader. */
#include "kr.h"

#include "ed_error.h"

#include <check.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static int sv[2];

static void setup(void)
{
    signal(SIGPIPE, SIG_IGN);
    ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
}

static void teardown(void)
{
    close(sv[0]);
    close(sv[1]);
}

START_TEST(frame_header_is_big_endian)
{
    unsigned char h[KR_FRAME_HDR];
    kr_frame_header(h, 0x01020304u);
    ck_assert_int_eq(h[0], 1);
    ck_assert_int_eq(h[1], 2);
    ck_assert_int_eq(h[2], 3);
    ck_assert_int_eq(h[3], 4);
    ck_assert_uint_eq(kr_frame_length(h), 0x01020304u);
}
END_TEST

START_TEST(frame_round_trips_small_and_large)
{
    char *got;
    size_t n, big = 100000;
    char *buf = malloc(big);
    for (size_t i = 0; i < big; i++)
        buf[i] = (char)('a' + i % 26);

    ck_assert_int_eq(kr_frame_write(sv[0], "{\"a\":1}", 7), 0);
    ck_assert_int_eq(kr_frame_read(&got, &n, sv[1], KR_FRAME_MAX), 0);
    ck_assert_uint_eq(n, 7);
    ck_assert_str_eq(got, "{\"a\":1}");
    free(got);

    /* Larger than the socket buffer: the writer must run beside the reader. */
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0)
        _exit(kr_frame_write(sv[0], buf, big) == 0 ? 0 : 1);
    ck_assert_int_eq(kr_frame_read(&got, &n, sv[1], KR_FRAME_MAX), 0);
    ck_assert_uint_eq(n, big);
    ck_assert_int_eq(memcmp(got, buf, big), 0);
    free(got);
    free(buf);
}
END_TEST

START_TEST(frame_empty_payload_is_allowed)
{
    char *got;
    size_t n = 99;
    ck_assert_int_eq(kr_frame_write(sv[0], "", 0), 0);
    ck_assert_int_eq(kr_frame_read(&got, &n, sv[1], KR_FRAME_MAX), 0);
    ck_assert_uint_eq(n, 0);
    ck_assert_str_eq(got, "");
    free(got);
}
END_TEST

START_TEST(frame_read_reports_clean_eof)
{
    char *got = (char *)1;
    size_t n;
    close(sv[0]);
    sv[0] = -1;
    ck_assert_int_eq(kr_frame_read(&got, &n, sv[1], KR_FRAME_MAX), ED_ENOTFOUND);
    ck_assert_ptr_null(got);
}
END_TEST

START_TEST(frame_read_rejects_truncated_frame)
{
    unsigned char h[KR_FRAME_HDR];
    char *got;
    size_t n;
    kr_frame_header(h, 10);
    ck_assert_int_eq(write(sv[0], h, 4), 4);
    ck_assert_int_eq(write(sv[0], "abc", 3), 3);
    close(sv[0]);
    sv[0] = -1;
    ck_assert_int_eq(kr_frame_read(&got, &n, sv[1], KR_FRAME_MAX), ED_EIO);
    ck_assert_ptr_nonnull(strstr(ed_error_last(), "inside a frame"));
}
END_TEST

START_TEST(frame_read_rejects_oversized_prefix)
{
    unsigned char h[KR_FRAME_HDR];
    char *got;
    size_t n;
    kr_frame_header(h, 2000);
    ck_assert_int_eq(write(sv[0], h, 4), 4);
    ck_assert_int_eq(kr_frame_read(&got, &n, sv[1], 1000), ED_ETOOBIG);
    ck_assert_ptr_null(got);
}
END_TEST

START_TEST(frame_write_rejects_oversized_payload)
{
    ck_assert_int_eq(kr_frame_write(sv[0], "", (size_t)KR_FRAME_MAX + 1), ED_ETOOBIG);
}
END_TEST

START_TEST(frame_write_to_closed_peer_is_eio)
{
    close(sv[1]);
    sv[1] = -1;
    ck_assert_int_eq(kr_frame_write(sv[0], "x", 1), ED_EIO);
}
END_TEST

START_TEST(msg_new_fills_jupyter_envelope)
{
    json_t *m, *parent = json_pack("{s:s, s:s}", "msg_id", "p1", "msg_type", "execute_request");
    ck_assert_int_eq(kr_msg_new(&m, "iopub", "stream", "sess", parent,
                                json_pack("{s:s, s:s}", "name", "stdout", "text", "hi")), 0);
    json_t *h = json_object_get(m, "header");
    ck_assert_str_eq(json_string_value(json_object_get(m, "channel")), "iopub");
    ck_assert_str_eq(json_string_value(json_object_get(h, "msg_type")), "stream");
    ck_assert_str_eq(json_string_value(json_object_get(h, "session")), "sess");
    ck_assert_str_eq(json_string_value(json_object_get(h, "version")), "5.3");
    ck_assert_uint_eq(strlen(json_string_value(json_object_get(h, "msg_id"))), 32);
    ck_assert_str_eq(json_string_value(json_object_get(h, "msg_id")),
                     json_string_value(json_object_get(m, "msg_id")));
    ck_assert_str_eq(json_string_value(json_object_get(m, "msg_type")), "stream");
    const char *date = json_string_value(json_object_get(h, "date"));
    ck_assert_uint_eq(strlen(date), 27);   /* 2026-01-02T03:04:05.123456Z */
    ck_assert_int_eq(date[26], 'Z');
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(m, "parent_header"),
                                                       "msg_id")), "p1");
    ck_assert(json_is_object(json_object_get(m, "metadata")));
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(m, "content"), "text")),
                     "hi");
    ck_assert_str_eq(kr_msg_type(m), "stream");
    ck_assert_str_eq(kr_msg_channel(m), "iopub");
    json_decref(m);
    json_decref(parent);
}
END_TEST

START_TEST(msg_new_rejects_missing_type)
{
    json_t *m = (json_t *)1;
    ck_assert_int_eq(kr_msg_new(&m, "shell", NULL, "s", NULL, json_object()), ED_EINVAL);
    ck_assert_ptr_null(m);
}
END_TEST

START_TEST(msg_ids_are_uuid4_hex_and_distinct)
{
    char a[33], b[33];
    kr_msg_new_id(a);
    kr_msg_new_id(b);
    ck_assert_uint_eq(strspn(a, "0123456789abcdef"), 32);
    ck_assert_int_eq(a[12], '4');
    ck_assert_str_ne(a, b);
}
END_TEST

START_TEST(msg_send_recv_round_trip)
{
    json_t *m, *got;
    ck_assert_int_eq(kr_msg_new(&m, "shell", "kernel_info_request", "s", NULL, NULL), 0);
    ck_assert_int_eq(kr_msg_send(sv[0], m), 0);
    ck_assert_int_eq(kr_msg_recv(&got, sv[1], KR_FRAME_MAX), 0);
    ck_assert_str_eq(kr_msg_type(got), "kernel_info_request");
    ck_assert_str_eq(kr_msg_id(got), kr_msg_id(m));
    json_decref(m);
    json_decref(got);
}
END_TEST

START_TEST(msg_recv_rejects_non_messages_and_stays_usable)
{
    json_t *got;
    ck_assert_int_eq(kr_frame_write(sv[0], "not json", 8), 0);
    ck_assert_int_eq(kr_frame_write(sv[0], "[1,2]", 5), 0);
    ck_assert_int_eq(kr_frame_write(sv[0], "{\"header\":{}}", 13), 0);
    ck_assert_int_eq(kr_frame_write(sv[0], "{\"header\":{\"msg_type\":\"x\"}}", 27), 0);
    ck_assert_int_eq(kr_msg_recv(&got, sv[1], KR_FRAME_MAX), ED_EINVAL);
    ck_assert_ptr_nonnull(strstr(ed_error_last(), "not JSON"));
    ck_assert_int_eq(kr_msg_recv(&got, sv[1], KR_FRAME_MAX), ED_EINVAL);
    ck_assert_int_eq(kr_msg_recv(&got, sv[1], KR_FRAME_MAX), ED_EINVAL);
    ck_assert_int_eq(kr_msg_recv(&got, sv[1], KR_FRAME_MAX), 0);
    ck_assert_str_eq(kr_msg_type(got), "x");
    ck_assert_str_eq(kr_msg_channel(got), "shell");   /* the default */
    json_decref(got);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("kernel_runner");
    TCase *t = tcase_create("frames");
    tcase_add_checked_fixture(t, setup, teardown);
    tcase_add_test(t, frame_header_is_big_endian);
    tcase_add_test(t, frame_round_trips_small_and_large);
    tcase_add_test(t, frame_empty_payload_is_allowed);
    tcase_add_test(t, frame_read_reports_clean_eof);
    tcase_add_test(t, frame_read_rejects_truncated_frame);
    tcase_add_test(t, frame_read_rejects_oversized_prefix);
    tcase_add_test(t, frame_write_rejects_oversized_payload);
    tcase_add_test(t, frame_write_to_closed_peer_is_eio);
    suite_add_tcase(s, t);
    t = tcase_create("messages");
    tcase_add_checked_fixture(t, setup, teardown);
    tcase_add_test(t, msg_new_fills_jupyter_envelope);
    tcase_add_test(t, msg_new_rejects_missing_type);
    tcase_add_test(t, msg_ids_are_uuid4_hex_and_distinct);
    tcase_add_test(t, msg_send_recv_round_trip);
    tcase_add_test(t, msg_recv_rejects_non_messages_and_stays_usable);
    suite_add_tcase(s, t);
    return s;
}

int main(void)
{
    SRunner *r = srunner_create(suite());
    srunner_run_all(r, CK_NORMAL);
    int failed = srunner_ntests_failed(r);
    srunner_free(r);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
