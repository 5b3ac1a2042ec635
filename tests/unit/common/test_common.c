/* Unit tests for common/: buffers, arenas, JSON limits, time, the store. */
#include "ed_arena.h"
#include "ed_buf.h"
#include "ed_crypto.h"
#include "ed_error.h"
#include "ed_json.h"
#include "ed_log.h"
#include "ed_store.h"
#include "ed_time.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

START_TEST(buf_grows_and_stays_terminated)
{
    ed_buf b = {0};
    for (int i = 0; i < 1000; i++)
        ck_assert_int_eq(ed_buf_printf(&b, "%d,", i), 0);
    ck_assert_uint_eq(b.len, strlen(b.data));
    ck_assert(strncmp(b.data, "0,1,2,", 6) == 0);
    char *s = ed_buf_steal(&b);
    ck_assert_ptr_null(b.data);
    free(s);
    ed_buf_free(&b);
}
END_TEST

static int cleanup_calls;
static void count_cleanup(void *p) { cleanup_calls += *(int *)p; }

START_TEST(arena_allocates_aligned_and_runs_cleanups_once)
{
    ed_arena *a = ed_arena_new(256);
    int weight = 3;
    cleanup_calls = 0;
    for (int i = 0; i < 100; i++) {
        void *p = ed_arena_alloc(a, (size_t)(i * 7 + 1));
        ck_assert_ptr_nonnull(p);
        ck_assert_uint_eq((uintptr_t)p % 16, 0);
        memset(p, 0xab, (size_t)(i * 7 + 1));
    }
    ck_assert_str_eq(ed_arena_printf(a, "%s-%d", "x", 42), "x-42");
    ck_assert_ptr_nonnull(ed_arena_alloc(a, 100000)); /* larger than a block */
    ck_assert_int_eq(ed_arena_on_free(a, count_cleanup, &weight), 0);
    ed_arena_free(a);
    ck_assert_int_eq(cleanup_calls, 3);
    ed_arena_free(NULL);
}
END_TEST

START_TEST(json_refuses_malformed_deep_and_wrong_types)
{
    json_t *v = NULL;
    const char *s = "x";
    int64_t n = 7;
    char deep[200];

    ck_assert_int_eq(ed_json_parse_object(&v, "{\"a\":", 5), ED_EINVAL);
    ck_assert(strstr(ed_error_last(), "malformed JSON") != NULL);
    ck_assert_int_eq(ed_json_parse_object(&v, "[1]", 3), ED_EINVAL);
    ck_assert_int_eq(ed_json_parse_object(&v, "{\"a\":1,\"a\":2}", 13), ED_EINVAL);
    memset(deep, '[', 100);
    memset(deep + 100, ']', 100);
    ck_assert_int_eq(ed_json_parse(&v, deep, 200, ED_JSON_MAX_DEPTH), ED_EINVAL);
    ck_assert(strstr(ed_error_last(), "deeper") != NULL);
    /* brackets inside strings do not count */
    {
        const char *str = "{\"a\":\"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[\"}";
        ck_assert_int_eq(ed_json_parse_object(&v, str, strlen(str)), 0);
    }
    json_decref(v);

    ck_assert_int_eq(ed_json_parse_object(&v, "{\"name\":5,\"n\":\"x\"}", 18), 0);
    ck_assert_int_eq(ed_json_get_str(&s, v, "name", true), ED_EINVAL);
    ck_assert_str_eq(ed_error_last(), "field 'name' must be a string");
    ck_assert_int_eq(ed_json_get_int(&n, v, "n", false), ED_EINVAL);
    ck_assert_int_eq(ed_json_get_str(&s, v, "missing", true), ED_EINVAL);
    ck_assert_int_eq(ed_json_get_str(&s, v, "missing", false), 0);
    ck_assert_str_eq(s, "x");
    json_decref(v);
}
END_TEST

START_TEST(time_formats_rfc3339_and_day_start)
{
    char out[ED_RFC3339_LEN];
    ck_assert_str_eq(ed_time_rfc3339(out, sizeof(out), 1790000000123LL), "2026-09-21T14:13:20.123Z");
    ck_assert_int_eq(ed_time_day_start_ms(1790000000123LL), 1789948800000LL);
}
END_TEST

START_TEST(crypto_tokens_and_hashes)
{
    char t1[33], t2[33], hex[65];
    ck_assert_int_eq(ed_crypto_init(), 0);
    ed_random_token(t1, 32);
    ed_random_token(t2, 32);
    ck_assert_uint_eq(strlen(t1), 32);
    ck_assert_str_ne(t1, t2);
    ed_sha256_hex(hex, "abc", 3);
    ck_assert_str_eq(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    ck_assert(ed_ct_equal("abcd", "abcd", 4));
    ck_assert(!ed_ct_equal("abcd", "abce", 4));
}
END_TEST

START_TEST(uuid4_is_version_4_lowercase_and_fresh)
{
    char a[ED_UUID_LEN], b[ED_UUID_LEN];

    ed_uuid4(a);
    ed_uuid4(b);
    ck_assert_uint_eq(strlen(a), 36);
    ck_assert_str_ne(a, b);
    for (int i = 0; i < 36; i++) {
        if (i == 8 || i == 13 || i == 18 || i == 23)
            ck_assert_int_eq(a[i], '-');
        else
            ck_assert_msg(strchr("0123456789abcdef", a[i]) != NULL, "char %d of %s", i, a);
    }
    ck_assert_int_eq(a[14], '4');
    ck_assert_ptr_nonnull(strchr("89ab", a[19]));
}
END_TEST

typedef struct tx_ctx {
    ed_store *st;
    int       fail;    /* the body's return after its insert */
    int       calls;
} tx_ctx;

static int tx_body(void *p)
{
    tx_ctx *c = p;

    c->calls++;
    ck_assert_int_eq(ed_store_exec(c->st, "INSERT INTO t VALUES (1)"), 0);
    return c->fail;
}

static int64_t tx_rows(ed_store *st)
{
    sqlite3_stmt *s = NULL;
    int64_t n;

    ck_assert_int_eq(ed_store_prepare(&s, st, "SELECT count(*) FROM t"), 0);
    ck_assert_int_eq(ed_store_step(s), SQLITE_ROW);
    n = sqlite3_column_int64(s, 0);
    sqlite3_finalize(s);
    return n;
}

START_TEST(store_tx_commits_or_rolls_back_and_retries_busy)
{
    char dir[] = "/tmp/eddy-store-XXXXXX", path[256];
    ed_store *st = NULL;
    tx_ctx c;

    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/eddy.db", dir);
    ck_assert_int_eq(ed_store_open(&st, path), 0);
    ck_assert_int_eq(ed_store_exec(st, "CREATE TABLE t(x INTEGER)"), 0);

    c = (tx_ctx){st, 0, 0};
    ck_assert_int_eq(ed_store_tx(st, tx_body, &c), 0);
    ck_assert_int_eq(c.calls, 1);
    ck_assert_int_eq(tx_rows(st), 1);

    /* a failing body: its code comes back, its insert is rolled back, no retry */
    c = (tx_ctx){st, ED_EINVAL, 0};
    ck_assert_int_eq(ed_store_tx(st, tx_body, &c), ED_EINVAL);
    ck_assert_int_eq(c.calls, 1);
    ck_assert_int_eq(tx_rows(st), 1);

    /* a body answering busy is run again, up to the limit, then gives up */
    c = (tx_ctx){st, ED_EBUSY, 0};
    ck_assert_int_eq(ed_store_tx(st, tx_body, &c), ED_EBUSY);
    ck_assert_int_gt(c.calls, 1);
    ck_assert_int_eq(tx_rows(st), 1);

    ed_store_close(st);
}
END_TEST

START_TEST(store_migrates_once_and_sets_pragmas)
{
    char dir[] = "/tmp/eddy-store-XXXXXX", path[256];
    ed_store *st = NULL;
    sqlite3_stmt *s = NULL;

    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/eddy.db", dir);
    ck_assert_int_eq(ed_store_open(&st, path), 0);
    ck_assert_int_eq(ed_store_schema_version(st), ed_migrations_count);
    ck_assert_int_eq(ed_store_prepare(&s, st, "PRAGMA journal_mode"), 0);
    ck_assert_int_eq(sqlite3_step(s), SQLITE_ROW);
    ck_assert_str_eq((const char *)sqlite3_column_text(s, 0), "wal");
    sqlite3_finalize(s);
    ck_assert_int_eq(ed_store_prepare(&s, st, "PRAGMA foreign_keys"), 0);
    ck_assert_int_eq(sqlite3_step(s), SQLITE_ROW);
    ck_assert_int_eq(sqlite3_column_int(s, 0), 1);
    sqlite3_finalize(s);
    ck_assert_int_eq(ed_store_prepare(&s, st, "PRAGMA synchronous"), 0);
    ck_assert_int_eq(sqlite3_step(s), SQLITE_ROW);
    ck_assert_int_eq(sqlite3_column_int(s, 0), 2); /* FULL */
    sqlite3_finalize(s);

    /* a failed statement reports SQLite's message */
    ck_assert_int_eq(ed_store_exec(st, "INSERT INTO nope VALUES (1)"), ED_EIO);
    ck_assert(strstr(ed_error_last(), "no such table") != NULL);

    /* a rolled-back transaction leaves nothing */
    ck_assert_int_eq(ed_store_begin(st), 0);
    ck_assert_int_eq(ed_store_exec(st, "INSERT INTO settings VALUES ('k','v',1)"), 0);
    ed_store_rollback(st);
    ck_assert_int_eq(ed_store_prepare(&s, st, "SELECT count(*) FROM settings"), 0);
    ck_assert_int_eq(sqlite3_step(s), SQLITE_ROW);
    ck_assert_int_eq(sqlite3_column_int(s, 0), 0);
    sqlite3_finalize(s);
    ed_store_close(st);

    /* reopening applies nothing twice */
    ck_assert_int_eq(ed_store_open(&st, path), 0);
    ck_assert_int_eq(ed_store_schema_version(st), ed_migrations_count);
    ed_store_close(st);
}
END_TEST

START_TEST(store_refuses_a_newer_schema)
{
    char dir[] = "/tmp/eddy-store-XXXXXX", path[256];
    ed_store *st = NULL;
    sqlite3 *db;

    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/eddy.db", dir);
    ck_assert_int_eq(sqlite3_open(path, &db), SQLITE_OK);
    ck_assert_int_eq(sqlite3_exec(db, "PRAGMA user_version=9999", 0, 0, 0), SQLITE_OK);
    sqlite3_close(db);
    ck_assert_int_eq(ed_store_open(&st, path), ED_EIO);
    ck_assert(strstr(ed_error_last(), "newer") != NULL);
    ck_assert_ptr_null(st);
}
END_TEST

/* Lines are JSON objects, one per line, in the order they were logged
 * (batched info lines before a later warning), and a process that exits
 * with lines still batched loses none of them. */
START_TEST(log_lines_are_json_in_order_and_survive_exit)
{
    char path[] = "/tmp/eddy-log-XXXXXX";
    int fd = mkstemp(path), status;
    pid_t pid;

    ck_assert_int_ge(fd, 0);
    pid = fork();
    if (pid == 0) {
        ed_log_init(fd);
        ed_log_set_request_id("req-\"7\"");
        for (int i = 0; i < 200; i++)
            ed_log_info("test.line", "line %d with \"quotes\" and\na newline", i);
        ed_log_set_request_id(NULL);
        ed_log_warn("test.warn", "after the batch");
        ed_log_info("test.last", "batched at exit");
        exit(0);   /* atexit flushes what is still batched */
    }
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);

    FILE *f = fopen(path, "r");
    char line[4096];
    int n = 0;
    ck_assert_ptr_nonnull(f);
    while (fgets(line, sizeof(line), f)) {
        json_t *v = NULL;
        ck_assert_msg(ed_json_parse_object(&v, line, strlen(line)) == 0, "not JSON: %s", line);
        ck_assert_ptr_nonnull(json_string_value(json_object_get(v, "ts")));
        if (n < 200) {
            char want[64];
            snprintf(want, sizeof(want), "line %d with \"quotes\" and\na newline", n);
            ck_assert_str_eq(json_string_value(json_object_get(v, "msg")), want);
            ck_assert_str_eq(json_string_value(json_object_get(v, "level")), "info");
            ck_assert_str_eq(json_string_value(json_object_get(v, "request_id")), "req-\"7\"");
        } else if (n == 200) {
            ck_assert_str_eq(json_string_value(json_object_get(v, "event")), "test.warn");
            ck_assert_ptr_null(json_object_get(v, "request_id"));
        } else {
            ck_assert_str_eq(json_string_value(json_object_get(v, "event")), "test.last");
        }
        json_decref(v);
        n++;
    }
    fclose(f);
    unlink(path);
    ck_assert_int_eq(n, 202);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("common");
    TCase *tc = tcase_create("core");
    SRunner *sr;
    int failed;

    tcase_add_test(tc, buf_grows_and_stays_terminated);
    tcase_add_test(tc, arena_allocates_aligned_and_runs_cleanups_once);
    tcase_add_test(tc, json_refuses_malformed_deep_and_wrong_types);
    tcase_add_test(tc, time_formats_rfc3339_and_day_start);
    tcase_add_test(tc, crypto_tokens_and_hashes);
    tcase_add_test(tc, uuid4_is_version_4_lowercase_and_fresh);
    tcase_add_test(tc, store_tx_commits_or_rolls_back_and_retries_busy);
    tcase_add_test(tc, store_migrates_once_and_sets_pragmas);
    tcase_add_test(tc, store_refuses_a_newer_schema);
    tcase_add_test(tc, log_lines_are_json_in_order_and_survive_exit);
    suite_add_tcase(s, tc);
    sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
