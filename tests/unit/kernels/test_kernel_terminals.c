/* Unit tests for the hub's side of terminals (kernels/terminal.c): the
 * bounded replay ring, slow subscribers let go, names and limits, frames
 * from the wrong process ignored, a process's end ending its terminals.
 * A bare hub and frames as eddy-kernel sends them; terminals over a real
 * server and sandbox are tests/integration/test_terminals.c. */
#include "kh_int.h"

#include "kr.h"

#include "ed_error.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>

#define KID "00000000-0000-4000-8000-000000000001"

static kh_hub *bare_hub(void)
{
    kh_hub *h = calloc(1, sizeof(*h));
    ck_assert_ptr_nonnull(h);
    kh__mutex_init(&h->mu);
    pthread_cond_init(&h->cv, NULL);
    return h;   /* tmu and tcv: zeroed, as the real hub's */
}

/* A frame of `type` from the kernel about terminal `name`. */
static void frame(kh_hub *h, int64_t job, const char *type, const char *name, json_t *more)
{
    json_t *c = more ? more : json_object(), *m = NULL;
    json_object_set_new(c, "name", json_string(name));
    ck_assert_int_eq(kr_msg_new(&m, KR_TERM_CHANNEL, type, "s", NULL, c), 0);
    kh__term_on_frame(h, KID, job, m);
    json_decref(m);
}

static void output(kh_hub *h, int64_t job, const char *name, const char *data, size_t n)
{
    frame(h, job, KR_TERM_OUTPUT, name, json_pack("{s:s%}", "data", data, n));
}

/* An open terminal of user 7 in process 11. */
static kh__term *open_term(kh_hub *h, const char *name)
{
    kh__term *t;
    ck_assert_int_eq(kh__term_add(&t, h, 7, KID, 11, name), 0);
    frame(h, 11, KR_TERM_OPENED, t->name, NULL);
    ck_assert_int_eq(t->state, KH__TERM_OPEN);
    kh__term_release(h, t);
    return t;
}

static int wakes;
static void on_wake(void *arg)
{
    (void)arg;
    wakes++;
}

START_TEST(replay_keeps_the_last_64k)
{
    kh_hub *h = bare_hub();
    kh_term_sub *s;
    char *chunk = malloc(10000), *got;
    size_t n;

    open_term(h, "r");
    for (int i = 0; i < 10; i++) {   /* 100,000 bytes: digits of the chunk number */
        memset(chunk, '0' + i, 10000);
        output(h, 11, "r", chunk, 10000);
    }
    ck_assert_int_eq(kh_terminal_subscribe(&s, h, 7, "r", on_wake, NULL), 0);
    ck_assert_int_eq(kh_terminal_sub_next(&got, &n, s), 1);
    ck_assert_uint_eq(n, KH_TERM_REPLAY);
    ck_assert_int_eq(got[n - 1], '9');
    ck_assert_int_eq(got[0], '0' + (100000 - KH_TERM_REPLAY) / 10000);
    free(got);
    ck_assert_int_eq(kh_terminal_sub_next(&got, &n, s), 0);   /* nothing new */
    wakes = 0;
    output(h, 11, "r", "hi", 2);
    ck_assert_int_eq(wakes, 1);
    ck_assert_int_eq(kh_terminal_sub_next(&got, &n, s), 1);
    ck_assert_str_eq(got, "hi");
    free(got);
    /* 200,000 bytes at once: read in pieces of at most KH_TERM_CHUNK, all of them */
    char *big = malloc(200000);
    memset(big, 'b', 200000);
    output(h, 11, "r", big, 200000);
    size_t sum = 0;
    while (kh_terminal_sub_next(&got, &n, s) == 1) {
        ck_assert_uint_le(n, KH_TERM_CHUNK);
        sum += n;
        free(got);
    }
    ck_assert_uint_eq(sum, 200000);
    free(big);
    kh_terminal_unsubscribe(s);
    kh__term_process_ended(h, KID, 11);
    ck_assert_ptr_null(h->terms);
    free(chunk);
    free(h);
}
END_TEST

START_TEST(replay_starts_at_a_character)
{
    kh_hub *h = bare_hub();
    kh_term_sub *s;
    char *buf = malloc(KH_TERM_REPLAY + 1), *got;
    size_t n;

    open_term(h, "u");
    /* "é" is two bytes; one byte more than the ring cuts the first in half */
    for (size_t i = 0; i + 1 < KH_TERM_REPLAY + 1; i += 2)
        memcpy(buf + i, "\xc3\xa9", 2);
    buf[KH_TERM_REPLAY] = 'x';
    output(h, 11, "u", buf, KH_TERM_REPLAY + 1);
    ck_assert_int_eq(kh_terminal_subscribe(&s, h, 7, "u", NULL, NULL), 0);
    ck_assert_int_eq(kh_terminal_sub_next(&got, &n, s), 1);
    ck_assert_uint_eq(n, KH_TERM_REPLAY - 1);
    ck_assert_int_eq((unsigned char)got[0], 0xc3);
    free(got);
    kh_terminal_unsubscribe(s);
    kh__term_process_ended(h, KID, 11);
    free(buf);
    free(h);
}
END_TEST

START_TEST(slow_subscriber_is_dropped_and_memory_stays_bounded)
{
    kh_hub *h = bare_hub();
    kh_term_sub *slow, *again;
    char *chunk = calloc(1, 30000), *got;
    size_t n;

    memset(chunk, 'a', 29999);
    open_term(h, "s");
    ck_assert_int_eq(kh_terminal_subscribe(&slow, h, 7, "s", NULL, NULL), 0);
    output(h, 11, "s", "start", 5);
    ck_assert_int_eq(kh_terminal_sub_next(&got, &n, slow), 1);
    free(got);
    ck_assert_uint_eq(KH_TERM_REPLAY, KH_TERM_CHUNK);   /* a replay comes in one piece below */
    for (int i = 0; i < 100; i++)   /* 3 MB while it reads nothing */
        output(h, 11, "s", chunk, 29999);
    ck_assert_uint_le(h->terms->total - 5, 100u * 29999u);
    ck_assert_int_eq(kh_terminal_sub_next(&got, &n, slow), ED_ELIMIT);
    kh_terminal_unsubscribe(slow);
    /* a new connection gets the screen: the last KH_TERM_REPLAY bytes */
    ck_assert_int_eq(kh_terminal_subscribe(&again, h, 7, "s", NULL, NULL), 0);
    ck_assert_int_eq(kh_terminal_sub_next(&got, &n, again), 1);
    ck_assert_uint_eq(n, KH_TERM_REPLAY);
    free(got);
    kh_terminal_unsubscribe(again);
    kh__term_process_ended(h, KID, 11);
    free(chunk);
    free(h);
}
END_TEST

START_TEST(names_limits_and_owners)
{
    kh_hub *h = bare_hub();
    kh__term *t;
    kh_terminal info;

    ck_assert_str_eq(open_term(h, NULL)->name, "1");
    ck_assert_str_eq(open_term(h, "mine")->name, "mine");
    ck_assert_str_eq(open_term(h, NULL)->name, "2");
    ck_assert_int_eq(kh__term_add(&t, h, 7, KID, 11, "mine"), ED_EEXISTS);
    ck_assert_int_eq(kh__term_add(&t, h, 7, KID, 11, "../etc"), ED_EINVAL);
    ck_assert_int_eq(kh__term_add(&t, h, 7, KID, 11, "a-very-long-name-that-is-over-32-chars"), ED_EINVAL);
    open_term(h, NULL);
    ck_assert_int_eq(kh__term_add(&t, h, 7, KID, 11, NULL), ED_ELIMIT);   /* 4 per kernel */
    ck_assert_int_eq(kh_terminal_get(&info, h, 7, "mine"), 0);
    ck_assert_str_eq(info.kernel_id, KID);
    /* another user sees none of them */
    ck_assert_int_eq(kh_terminal_get(&info, h, 8, "mine"), ED_ENOTFOUND);
    ck_assert_int_eq(kh_terminal_get(&info, h, 8, "1"), ED_ENOTFOUND);
    kh_term_sub *s;
    ck_assert_int_eq(kh_terminal_subscribe(&s, h, 8, "1", NULL, NULL), ED_ENOTFOUND);
    ck_assert_int_eq(kh_terminal_input(h, 8, "1", "x", 1), ED_ENOTFOUND);
    ck_assert_int_eq(kh_terminal_close(h, 8, "1"), ED_ENOTFOUND);
    /* the shell's exit ends one */
    frame(h, 11, KR_TERM_EXIT, "mine", json_pack("{s:i}", "status", 0));
    ck_assert_int_eq(kh_terminal_get(&info, h, 7, "mine"), ED_ENOTFOUND);
    kh__term_process_ended(h, KID, 11);
    ck_assert_ptr_null(h->terms);
    free(h);
}
END_TEST

START_TEST(frames_from_another_process_are_ignored)
{
    kh_hub *h = bare_hub();
    kh_term_sub *s;
    char *got;
    size_t n;

    open_term(h, "p");
    ck_assert_int_eq(kh_terminal_subscribe(&s, h, 7, "p", NULL, NULL), 0);
    output(h, 12, "p", "forged", 6);       /* a later process of the same kernel */
    output(h, 11, "nope", "forged", 6);    /* a name the hub never opened */
    frame(h, 12, KR_TERM_EXIT, "p", NULL);
    ck_assert_int_eq(kh_terminal_sub_next(&got, &n, s), 0);
    /* the process's end: what was sent is read, then the end */
    output(h, 11, "p", "bye", 3);
    kh__term_process_ended(h, KID, 11);
    ck_assert_int_eq(kh_terminal_sub_next(&got, &n, s), 1);
    ck_assert_str_eq(got, "bye");
    free(got);
    ck_assert_int_eq(kh_terminal_sub_next(&got, &n, s), ED_ENOTFOUND);
    ck_assert_ptr_null(h->terms);
    kh_terminal_unsubscribe(s);   /* frees the terminal */
    free(h);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("kernel_terminals");
    TCase *tc = tcase_create("kernel_terminals");
    SRunner *sr;
    int failed;

    tcase_add_test(tc, replay_keeps_the_last_64k);
    tcase_add_test(tc, replay_starts_at_a_character);
    tcase_add_test(tc, slow_subscriber_is_dropped_and_memory_stays_bounded);
    tcase_add_test(tc, names_limits_and_owners);
    tcase_add_test(tc, frames_from_another_process_are_ignored);
    suite_add_tcase(s, tc);
    sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
