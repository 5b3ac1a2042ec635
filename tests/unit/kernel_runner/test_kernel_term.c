/* Unit tests for eddy-kernel's terminals (kernel_runner/kr_term.c), driven
 * directly as kr_serve.c's reader thread drives them: real shells on real
 * ptys (no sandbox: tests/integration/test_terminals.c runs them inside
 * one). Skips (77) on a host without /dev/ptmx or /bin/sh. */
#include "kr_term.h"

#include "ed_error.h"

#include <check.h>
#include <errno.h>
#include <stdbool.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* What the terminals sent, as kr_serve.c would frame it. */
typedef struct sink {
    pthread_mutex_t mu;
    pthread_cond_t  cv;
    json_t         *msgs;   /* [{type, content}] */
} sink;

static sink S;

static int collect(void *payload, const char *type, json_t *content)
{
    sink *s = payload;
    ck_assert_ptr_nonnull(content);
    pthread_mutex_lock(&s->mu);
    json_array_append_new(s->msgs, json_pack("{s:s, s:o}", "type", type, "content", content));
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
    return 0;
}

static void setup(void)
{
    pthread_mutex_init(&S.mu, NULL);
    pthread_cond_init(&S.cv, NULL);
    S.msgs = json_array();
}

static void teardown(void)
{
    json_decref(S.msgs);
}

/* All output of terminal `name` so far. */
static char *output_of(const char *name)
{
    size_t i;
    json_t *m;
    char *out = calloc(1, 1);
    size_t len = 0;

    pthread_mutex_lock(&S.mu);
    json_array_foreach(S.msgs, i, m) {
        json_t *c = json_object_get(m, "content");
        if (strcmp(json_string_value(json_object_get(m, "type")), KR_TERM_OUTPUT) != 0 ||
            strcmp(json_string_value(json_object_get(c, "name")), name) != 0)
            continue;
        const char *d = json_string_value(json_object_get(c, "data"));
        out = realloc(out, len + strlen(d) + 1);
        memcpy(out + len, d, strlen(d) + 1);
        len += strlen(d);
    }
    pthread_mutex_unlock(&S.mu);
    return out;
}

/* Wait up to 20 s for terminal `name`'s output to contain `text`. */
static bool wait_output(const char *name, const char *text)
{
    for (int i = 0; i < 400; i++) {
        char *o = output_of(name);
        bool found = strstr(o, text) != NULL;
        free(o);
        if (found)
            return true;
        usleep(50000);
    }
    char *o = output_of(name);
    fprintf(stderr, "terminal %s never said '%s'; it said:\n%s\n", name, text, o);
    free(o);
    return false;
}

/* Wait for a message of `type` about `name`: its content (borrowed from S). */
static json_t *wait_msg(const char *type, const char *name)
{
    for (int i = 0; i < 400; i++) {
        size_t j;
        json_t *m, *found = NULL;
        pthread_mutex_lock(&S.mu);
        json_array_foreach(S.msgs, j, m) {
            json_t *c = json_object_get(m, "content");
            const char *n = json_string_value(json_object_get(c, "name"));
            if (strcmp(json_string_value(json_object_get(m, "type")), type) == 0 && n && strcmp(n, name) == 0)
                found = c;
        }
        pthread_mutex_unlock(&S.mu);
        if (found)
            return found;
        usleep(50000);
    }
    return NULL;
}

static int handle(kr__terms *ts, const char *type, const char *name, const char *data, int rows, int cols)
{
    json_t *c = json_pack("{s:s}", "name", name);
    if (data)
        json_object_set_new(c, "data", json_string(data));
    if (rows)
        json_object_set_new(c, "rows", json_integer(rows)), json_object_set_new(c, "cols", json_integer(cols));
    int err = kr__terms_handle(ts, type, c);
    json_decref(c);
    return err;
}

static void need_pty(void)
{
    if (access("/dev/ptmx", R_OK | W_OK) != 0 || access("/bin/sh", X_OK) != 0) {
        printf("SKIP: no /dev/ptmx or /bin/sh on this host\n");
        exit(77);
    }
}

START_TEST(utf8_clean_replaces_bad_bytes_and_keeps_cut_characters)
{
    char out[64];
    unsigned char tail[4];
    size_t tl, n;

    n = kr__utf8_clean(out, (const unsigned char *)"h\xc3\xa9!", 4, tail, &tl);
    ck_assert_uint_eq(n, 4);
    ck_assert_mem_eq(out, "h\xc3\xa9!", 4);
    ck_assert_uint_eq(tl, 0);
    n = kr__utf8_clean(out, (const unsigned char *)"a\xff" "b", 3, tail, &tl);
    ck_assert_uint_eq(n, 5);
    ck_assert_mem_eq(out, "a\xef\xbf\xbd" "b", 5);
    /* a euro sign cut after two of its three bytes waits for the third */
    n = kr__utf8_clean(out, (const unsigned char *)"x\xe2\x82", 3, tail, &tl);
    ck_assert_uint_eq(n, 1);
    ck_assert_uint_eq(tl, 2);
    ck_assert_mem_eq(tail, "\xe2\x82", 2);
    /* a surrogate (ED A0 80) is not UTF-8 */
    n = kr__utf8_clean(out, (const unsigned char *)"\xed\xa0\x80", 3, tail, &tl);
    ck_assert_uint_eq(tl, 0);
    ck_assert_uint_eq(n, 9);
}
END_TEST

START_TEST(shell_echoes_resizes_and_closes)
{
    kr__terms *ts;
    char dir[] = "/tmp/eddy-kt-XXXXXX", cmd[300];

    need_pty();
    ck_assert_ptr_nonnull(mkdtemp(dir));
    ck_assert_int_eq(kr__terms_new(&ts, dir, collect, &S), 0);
    ck_assert_int_eq(handle(ts, KR_TERM_OPEN, "t1", NULL, 24, 80), 0);
    ck_assert_ptr_nonnull(wait_msg(KR_TERM_OPENED, "t1"));
    ck_assert_int_eq(kr__terms_count(ts), 1);
    ck_assert_int_eq(handle(ts, KR_TERM_INPUT, "t1", "echo hi $((6*7))\r", 0, 0), 0);
    ck_assert(wait_output("t1", "hi 42"));
    ck_assert_int_eq(handle(ts, KR_TERM_RESIZE, "t1", NULL, 31, 101), 0);
    ck_assert_int_eq(handle(ts, KR_TERM_INPUT, "t1", "stty size; echo \"TERM=$TERM\"\r", 0, 0), 0);
    ck_assert(wait_output("t1", "31 101"));
    ck_assert(wait_output("t1", "TERM=xterm-256color"));
    snprintf(cmd, sizeof(cmd), "echo \"at:$(pwd)\"\r");
    ck_assert_int_eq(handle(ts, KR_TERM_INPUT, "t1", cmd, 0, 0), 0);
    snprintf(cmd, sizeof(cmd), "at:%s", dir);
    ck_assert(wait_output("t1", cmd));
    /* non-UTF-8 output arrives replaced, never breaking the frame */
    ck_assert_int_eq(handle(ts, KR_TERM_INPUT, "t1", "printf 'A\\377B\\n'\r", 0, 0), 0);
    ck_assert(wait_output("t1", "A\xef\xbf\xbd" "B"));
    ck_assert_int_eq(handle(ts, KR_TERM_CLOSE, "t1", NULL, 0, 0), 0);
    ck_assert_ptr_nonnull(wait_msg(KR_TERM_EXIT, "t1"));
    ck_assert_int_eq(kr__terms_count(ts), 0);
    ck_assert_int_eq(handle(ts, KR_TERM_INPUT, "t1", "x", 0, 0), ED_ENOTFOUND);
    kr__terms_free(ts);
    rmdir(dir);
}
END_TEST

START_TEST(exit_reports_the_status)
{
    kr__terms *ts;

    need_pty();
    ck_assert_int_eq(kr__terms_new(&ts, "/", collect, &S), 0);
    ck_assert_int_eq(handle(ts, KR_TERM_OPEN, "e", NULL, 0, 0), 0);
    ck_assert_int_eq(handle(ts, KR_TERM_INPUT, "e", "exit 3\r", 0, 0), 0);
    json_t *c = wait_msg(KR_TERM_EXIT, "e");
    ck_assert_ptr_nonnull(c);
    ck_assert_int_eq(json_integer_value(json_object_get(c, "status")), 3);
    kr__terms_free(ts);
}
END_TEST

START_TEST(at_most_four_and_names_unique)
{
    kr__terms *ts;
    char name[8];

    need_pty();
    ck_assert_int_eq(kr__terms_new(&ts, "/", collect, &S), 0);
    for (int i = 0; i < KR_TERM_MAX; i++) {
        snprintf(name, sizeof(name), "n%d", i);
        ck_assert_int_eq(handle(ts, KR_TERM_OPEN, name, NULL, 0, 0), 0);
    }
    ck_assert_int_eq(handle(ts, KR_TERM_OPEN, "n0", NULL, 0, 0), ED_EEXISTS);
    ck_assert_int_eq(handle(ts, KR_TERM_OPEN, "extra", NULL, 0, 0), ED_ELIMIT);
    json_t *e = wait_msg(KR_TERM_ERROR, "extra");
    ck_assert_ptr_nonnull(e);
    ck_assert_int_eq(json_integer_value(json_object_get(e, "code")), ED_ELIMIT);
    ck_assert_int_eq(handle(ts, KR_TERM_OPEN, "../x", NULL, 0, 0), ED_EINVAL);
    ck_assert_int_eq(kr__terms_count(ts), KR_TERM_MAX);
    kr__terms_free(ts);
}
END_TEST

START_TEST(free_kills_the_shells_and_their_jobs)
{
    kr__terms *ts;
    int st;

    need_pty();
    /* orphans come to us, so we can see how the job ended */
    ck_assert_int_eq(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
    ck_assert_int_eq(kr__terms_new(&ts, "/", collect, &S), 0);
    ck_assert_int_eq(handle(ts, KR_TERM_OPEN, "k", NULL, 0, 0), 0);
    ck_assert_int_eq(handle(ts, KR_TERM_INPUT, "k", "trap '' HUP; sleep 1000 & echo \"J\"\"OB=$!=\"\r", 0, 0), 0);
    ck_assert(wait_output("k", "JOB="));
    char *o = output_of("k"), *p = strstr(o, "JOB=");
    long job = 0;
    if (p)   /* the echoed line says J""OB: this is the answer */
        job = strtol(p + 4, NULL, 10);
    free(o);
    ck_assert_int_gt(job, 0);
    ck_assert_int_eq(kill((pid_t)job, 0), 0);
    kr__terms_free(ts);
    ck_assert_int_eq(waitpid((pid_t)job, &st, 0), job);
    ck_assert(WIFSIGNALED(st));
}
END_TEST

int main(void)
{
    Suite *s = suite_create("kernel_term");
    TCase *tc = tcase_create("kernel_term");
    SRunner *sr;
    int failed;

    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, utf8_clean_replaces_bad_bytes_and_keeps_cut_characters);
    tcase_add_test(tc, shell_echoes_resizes_and_closes);
    tcase_add_test(tc, exit_reports_the_status);
    tcase_add_test(tc, at_most_four_and_names_unique);
    tcase_add_test(tc, free_kills_the_shells_and_their_jobs);
    suite_add_tcase(s, tc);
    sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
