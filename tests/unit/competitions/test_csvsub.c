/*
 * test_csvsub.c - submission validation (competitions/score.h) and the CSV
 * reader under it (csvsub.h): one test per error a participant can meet,
 * with the message, line and column checked; RFC 4180 quoting and line
 * endings; the truth's own errors.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1
#endif
#include "csvsub.h"
#include "score.h"

#include "ed_error.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static int memfd(const char *data, size_t n)
{
    int fd = memfd_create("csv", MFD_CLOEXEC);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(write(fd, data, n), (ssize_t)n);
    ck_assert_int_eq(lseek(fd, 0, SEEK_SET), 0);
    return fd;
}

static comp_truth *truth_of(const char *metric, const char *csv, int64_t sub_cap)
{
    comp_score_spec spec = {.metric = metric, .id_column = "id", .target_column = "y", .sub_max_bytes = sub_cap};
    comp_truth *t = NULL;
    int fd = memfd(csv, strlen(csv));
    int rc = comp_truth_load(&t, fd, &spec);
    close(fd);
    ck_assert_msg(rc == 0, "truth: %s", ed_error_last());
    return t;
}

/* Score sub (n bytes) against t; returns the code, fills r and e. */
static int score_n(const comp_truth *t, const char *sub, size_t n, comp_score_result *r, comp_score_error *e)
{
    int fd = memfd(sub, n);
    int rc = comp_score_submission(r, e, t, fd);
    close(fd);
    return rc;
}

static int score(const comp_truth *t, const char *sub, comp_score_result *r, comp_score_error *e)
{
    return score_n(t, sub, strlen(sub), r, e);
}

/* The submission must be refused as invalid_output with this message. */
static void refused(const char *metric, const char *truth, const char *sub, size_t n, const char *message, int64_t line,
                    int col)
{
    comp_truth *t = truth_of(metric, truth, 0);
    comp_score_result r;
    comp_score_error e;
    int rc = score_n(t, sub, n ? n : strlen(sub), &r, &e);

    ck_assert_msg(rc == ED_EUNPROC, "expected a refusal with '%s', got %d (%s)", message, rc, e.message);
    ck_assert_str_eq(e.cls, "invalid_output");
    ck_assert_str_eq(e.message, message);
    ck_assert_str_eq(ed_error_last(), message);
    ck_assert_int_eq(e.line, line);
    ck_assert_int_eq(e.column, col);
    comp_truth_free(t);
}

static const char *T4 = "id,y\n1,a\n2,b\n3,a\n4,c\n";
static const char *R4 = "id,y\n1,1.5\n2,2\n3,-1\n4,0\n";

START_TEST(valid_submission_scores_with_quotes_crlf_bom_and_any_order)
{
    comp_truth *t = truth_of("accuracy", "id,y\n\"a,1\",x\n\"b\"\"2\",y\nc3,\"multi\nline\"\n", 0);
    comp_score_result r;
    comp_score_error e;

    ck_assert_int_eq(comp_truth_rows(t), 3);
    ck_assert_int_eq(score(t, "\xEF\xBB\xBFy,id\r\nx,\"a,1\"\r\n\"multi\nline\",c3\r\nz,\"b\"\"2\"\r\n\r\n", &r, &e), 0);
    ck_assert(fabs(r.public_score - 2.0 / 3.0) < 1e-15);
    ck_assert(isnan(r.private_score));
    ck_assert_int_eq(r.public_rows, 3);
    ck_assert_int_eq(r.private_rows, 0);
    /* lone CR line ends, no final newline */
    ck_assert_int_eq(score(t, "id,y\r\"a,1\",x\r\"b\"\"2\",y\rc3,\"multi\nline\"", &r, &e), 0);
    ck_assert(r.public_score == 1.0);
    comp_truth_free(t);
}
END_TEST

START_TEST(public_and_private_scores_come_from_one_pass)
{
    comp_truth *t = truth_of("rmse", "id,y\n1,0\n2,0\n3,0\n4,0\n", 0);
    comp_score_result r;
    comp_score_error e;
    uint8_t m[4];
    double pub = 0, priv = 0;
    int i, np = 0;

    ck_assert_int_eq(comp_truth_split(t, 7, 0.5), 0);
    ck_assert_int_eq(comp_split_mask(m, 4, 7, 0.5), 0);
    ck_assert_int_eq(score(t, "id,y\n1,1\n2,2\n3,3\n4,4\n", &r, &e), 0);
    for (i = 0; i < 4; i++) {
        if (m[i]) {
            pub += (i + 1) * (i + 1);
            np++;
        } else {
            priv += (i + 1) * (i + 1);
        }
    }
    ck_assert_int_eq(np, 2);
    ck_assert(fabs(r.public_score - sqrt(pub / 2)) < 1e-12);
    ck_assert(fabs(r.private_score - sqrt(priv / 2)) < 1e-12);
    ck_assert_int_eq(r.public_rows, 2);
    ck_assert_int_eq(r.private_rows, 2);
    ck_assert_int_eq(r.metric, COMP_METRIC_RMSE);
    comp_truth_free(t);
}
END_TEST

START_TEST(empty_file_is_refused)
{
    refused("accuracy", T4, "", 0, "the file is empty", 0, 0);
    refused("accuracy", T4, "\xEF\xBB\xBF", 3, "the file is empty", 0, 0);
    refused("accuracy", T4, "\n\n\r\n", 4, "the file is empty", 0, 0);
}
END_TEST

START_TEST(utf16_and_invalid_utf8_and_nul_are_refused)
{
    refused("accuracy", T4, "\xFF\xFEi\0d\0", 6,
            "line 1: the file is UTF-16 (it starts with a UTF-16 byte order mark); save it as UTF-8", 1, 0);
    refused("accuracy", T4, "\xFE\xFF\0i\0d", 6,
            "line 1: the file is UTF-16 (it starts with a UTF-16 byte order mark); save it as UTF-8", 1, 0);
    refused("accuracy", T4, "id,y\n1,a\n2,\xE9t\xE9\n", 0, "line 3, column 2: invalid UTF-8 (save the file as UTF-8)",
            3, 2);
    refused("accuracy", T4, "id,y\n1,\xC0\xAF\n", 0, "line 2, column 2: invalid UTF-8 (save the file as UTF-8)", 2,
            2);   /* overlong '/' */
    refused("accuracy", T4, "id,y\n1,\xED\xA0\x80\n", 0, "line 2, column 2: invalid UTF-8 (save the file as UTF-8)",
            2, 2);   /* a surrogate */
    refused("accuracy", T4, "id,y\n1,a\0\n", 10, "line 2, column 2: a NUL byte (is the file UTF-16 or binary?)", 2,
            2);
}
END_TEST

START_TEST(missing_header_and_wrong_columns_are_named)
{
    refused("accuracy", T4, "1,a\n2,b\n3,a\n4,c\n", 0,
            "line 1: missing header: the first line looks like data; it must name the columns: id,y", 1, 0);
    refused("accuracy", T4, "id,label\n1,a\n", 0,
            "line 1: wrong columns: missing 'y'; unexpected 'label' (expected: id,y)", 1, 0);
    refused("accuracy", T4, "id\n1\n", 0, "line 1: wrong columns: missing 'y' (expected: id,y)", 1, 0);
    refused("accuracy", T4, "id,y,extra\n1,a,0\n", 0, "line 1: wrong columns: unexpected 'extra' (expected: id,y)", 1,
            0);
    refused("accuracy", T4, "id,y,y\n", 0, "line 1, column 3: column 'y' appears twice in the header", 1, 3);
    refused("logloss", "id,y\n1,cat\n2,dog\n3,emu\n", "id,cat,dog\n", 0,
            "line 1: wrong columns: missing 'emu' (expected: id,cat,dog,emu)", 1, 0);
}
END_TEST

START_TEST(wrong_field_count_is_refused)
{
    refused("accuracy", T4, "id,y\n1,a\n2,b,c\n", 0, "line 3: 3 fields, expected 2", 3, 0);
    refused("accuracy", T4, "id,y\n1,a\n2\n", 0, "line 3: 1 fields, expected 2", 3, 0);
}
END_TEST

START_TEST(unknown_duplicate_and_missing_ids_are_refused)
{
    refused("accuracy", T4, "id,y\n1,a\nzz,b\n", 0, "line 3, column 1: unknown id 'zz'", 3, 1);
    refused("accuracy", T4, "y,id\na,1\nb,2\nc,1\n", 0, "line 4, column 2: duplicate id '1' (first on line 2)", 4, 2);
    refused("accuracy", T4, "id,y\n1,a\n2,b\n", 0,
            "wrong row count: 2 rows, expected 4; 2 ids are missing (first: '3', '4')", 0, 0);
    refused("accuracy", T4, "id,y\n", 0,
            "wrong row count: 0 rows, expected 4; 4 ids are missing (first: '1', '2', '3', ...)", 0, 0);
    refused("accuracy", T4, "id,y\n1,a\n2,b\n4,c\n", 0,
            "wrong row count: 3 rows, expected 4; 1 id is missing (first: '3')", 0, 0);
    /* an id is compared byte for byte: " 1" is not "1" */
    refused("accuracy", T4, "id,y\n 1,a\n", 0, "line 2, column 1: unknown id ' 1'", 2, 1);
    /* integer ids are looked up by value, but only in their canonical form */
    refused("accuracy", T4, "id,y\n01,a\n", 0, "line 2, column 1: unknown id '01'", 2, 1);
    refused("accuracy", T4, "id,y\n+1,a\n", 0, "line 2, column 1: unknown id '+1'", 2, 1);
    refused("accuracy", T4, "id,y\n5,a\n", 0, "line 2, column 1: unknown id '5'", 2, 1);
    refused("accuracy", T4, "id,y\n0,a\n", 0, "line 2, column 1: unknown id '0'", 2, 1);
}
END_TEST

static void truth_refused(const char *metric, const char *csv, int code, const char *needle);

/* The three id indexes: integers in file order one apart (no array),
 * integers in a narrow range (an array by value), anything else (a hash). */
START_TEST(integer_ids_by_value_and_other_ids_by_hash_score_alike)
{
    static const char *const truths[] = {"id,y\n7,a\n8,b\n9,a\n10,c\n", "id,y\n10,a\n8,b\n9,a\n7,c\n",
                                         "id,y\n7,a\n8000000,b\n9,a\n10,c\n", "id,y\nx7,a\nx8,b\nx9,a\nx10,c\n"};
    static const char *const subs[] = {"id,y\n10,c\n9,a\n8,x\n7,a\n", "id,y\n7,c\n9,a\n8,x\n10,a\n",
                                       "id,y\n10,c\n9,a\n8000000,x\n7,a\n", "id,y\nx10,c\nx9,a\nx8,x\nx7,a\n"};
    for (int i = 0; i < 4; i++) {
        comp_truth *t = truth_of("accuracy", truths[i], 0);
        comp_score_result r;
        comp_score_error e;
        ck_assert_msg(score(t, subs[i], &r, &e) == 0, "%d: %s", i, e.message);
        ck_assert_msg(r.public_score == 0.75, "%d: %g", i, r.public_score);
        comp_truth_free(t);
    }
    truth_refused("accuracy", "id,y\n3,a\n1,b\n3,c\n", ED_EINVAL, "truth: duplicate id '3' (data rows 1 and 3)");
    truth_refused("accuracy", "id,y\n3,a\n3,b\n", ED_EINVAL, "truth: duplicate id '3' (data rows 1 and 2)");
}
END_TEST

START_TEST(nan_inf_and_unparsable_numbers_are_refused)
{
    refused("rmse", R4, "id,y\n1,1\n2,NaN\n", 0, "line 3, column 2: NaN in 'y' (every value must be a finite number)",
            3, 2);
    refused("rmse", R4, "id,y\n1,-inf\n", 0, "line 2, column 2: infinity in 'y' (every value must be a finite number)",
            2, 2);
    refused("rmse", R4, "id,y\n1,1e999\n", 0,
            "line 2, column 2: infinity in 'y' (every value must be a finite number)", 2, 2);
    refused("mae", R4, "id,y\n1,abc\n", 0, "line 2, column 2: 'abc' in 'y' is not a number", 2, 2);
    refused("mae", R4, "id,y\n1,0x1p3\n", 0, "line 2, column 2: '0x1p3' in 'y' is not a number", 2, 2);
    refused("mae", R4, "id,y\n1,\n", 0, "line 2, column 2: empty value in 'y'", 2, 2);
    refused("logloss", "id,y\n1,0\n2,1\n", "id,y\n1,1.5\n", 0, "line 2, column 2: probability 1.5 in 'y' is outside [0, 1]",
            2, 2);
    refused("auc", "id,y\n1,0\n2,1\n", "id,0,1\n1,0.5,nan\n", 0,
            "line 2, column 3: NaN in '1' (every value must be a finite number)", 2, 3);
}
END_TEST

START_TEST(size_over_the_cap_is_refused_for_files_and_pipes)
{
    comp_truth *t = truth_of("accuracy", T4, 20);
    comp_score_result r;
    comp_score_error e;
    const char *big = "id,y\n1,a\n2,b\n3,a\n4,c\n";     /* 21 bytes */
    int p[2];

    ck_assert_int_eq(score(t, big, &r, &e), ED_EUNPROC);
    ck_assert_str_eq(e.cls, "invalid_output");
    ck_assert_str_eq(e.message, "the file is 21 bytes, over the 20-byte cap");
    /* a pipe has no size up front: the reader counts */
    ck_assert_int_eq(pipe(p), 0);
    ck_assert_int_eq(write(p[1], big, strlen(big)), (ssize_t)strlen(big));
    close(p[1]);
    ck_assert_int_eq(comp_score_submission(&r, &e, t, p[0]), ED_EUNPROC);
    close(p[0]);
    ck_assert_str_eq(e.message, "the file is over the 20-byte cap");
    comp_truth_free(t);
}
END_TEST

START_TEST(bad_quoting_and_oversized_fields_are_refused)
{
    char *big;
    size_t n = COMP_CSV_MAX_FIELD + 20;

    refused("accuracy", T4, "id,y\n1,a\n2,\"b\n3,a\n", 0, "line 3, column 2: a quote opened on line 3 is never closed",
            3, 2);
    refused("accuracy", T4, "id,y\n1,a\"b\"\n", 0, "line 2, column 2: a quote inside an unquoted field", 2, 2);
    refused("accuracy", T4, "id,y\n1,\"a\"b\n", 0, "line 2, column 2: text after a closing quote", 2, 2);
    big = malloc(n + 16);
    memcpy(big, "id,y\n1,", 7);
    memset(big + 7, 'x', n - 7);
    big[n] = '\n';
    refused("accuracy", T4, big, n + 1, "line 2, column 2: a field is over 65536 bytes", 2, 2);
    free(big);
}
END_TEST

START_TEST(read_failure_is_a_platform_error)
{
    comp_truth *t = truth_of("accuracy", T4, 0);
    comp_score_result r;
    comp_score_error e;
    int fd = open("/", O_RDONLY | O_DIRECTORY);

    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(comp_score_submission(&r, &e, t, fd), ED_EIO);
    ck_assert_str_eq(e.cls, "platform_error");
    ck_assert_ptr_nonnull(strstr(e.message, "reading the file"));
    close(fd);
    comp_truth_free(t);
}
END_TEST

static void truth_refused(const char *metric, const char *csv, int code, const char *needle)
{
    comp_score_spec spec = {.metric = metric, .id_column = "id", .target_column = "y"};
    comp_truth *t = (comp_truth *)1;
    int fd = memfd(csv, strlen(csv));

    ck_assert_int_eq(comp_truth_load(&t, fd, &spec), code);
    ck_assert_ptr_null(t);
    ck_assert_msg(strstr(ed_error_last(), needle), "'%s' lacks '%s'", ed_error_last(), needle);
    close(fd);
}

START_TEST(truth_errors_are_reported_to_the_host)
{
    truth_refused("accuracy", "id,z\n1,a\n", ED_EINVAL, "truth: line 1 has no column 'y'");
    truth_refused("accuracy", "id,y\n1,a\n1,b\n", ED_EINVAL, "truth: duplicate id '1' (data rows 1 and 2)");
    truth_refused("rmse", "id,y\n1,a\n", ED_EINVAL, "truth: line 2, column 2: 'a' is not a finite number");
    truth_refused("auc", "id,y\n1,a\n2,a\n", ED_EINVAL, "auc needs at least two classes");
    {   /* one-vs-rest takes at most COMP_AUC_MAX_CLASSES classes */
        char many[4096];
        size_t n = (size_t)snprintf(many, sizeof(many), "id,y\n");
        for (int i = 0; i <= COMP_AUC_MAX_CLASSES; i++)
            n += (size_t)snprintf(many + n, sizeof(many) - n, "%d,c%d\n", i, i);
        truth_refused("auc", many, ED_ETOOBIG, "auc takes at most 100 classes");
    }
    truth_refused("accuracy", "id,y\n", ED_EINVAL, "no rows after the header");
    truth_refused("accuracy", "", ED_EINVAL, "the file is empty");
    truth_refused("f2", "id,y\n1,a\n", ED_EINVAL, "unknown metric 'f2'");
    truth_refused("accuracy", "id,y\n1,a,b\n", ED_EINVAL, "line 2 has 3 fields, the header 2");
    truth_refused("accuracy", "id,y\n1,\"a\n", ED_EINVAL, "never closed");
}
END_TEST

START_TEST(auc_split_with_a_single_class_is_refused)
{
    comp_truth *t = truth_of("auc", "id,y\n1,0\n2,1\n", 0);

    ck_assert_int_eq(comp_truth_split(t, 1, 0.5), ED_EINVAL);
    ck_assert_ptr_nonnull(strstr(ed_error_last(), "rows hold a single class"));
    ck_assert_int_eq(comp_truth_split(t, 1, 1.0), 0);
    comp_truth_free(t);
}
END_TEST

START_TEST(reader_handles_records_across_buffer_refills)
{
    /* 200,000 rows (about 2.6 MB, over the 2 MiB buffer) through a pipe-less memfd */
    size_t rows = 200000, i, o = 0, cap = rows * 32 + 64;
    char *truth = malloc(cap), *sub = malloc(cap);
    comp_truth *t;
    comp_score_result r;
    comp_score_error e;

    o = (size_t)sprintf(truth, "id,y\n");
    for (i = 0; i < rows; i++)
        o += (size_t)sprintf(truth + o, "\"row\r\n%zu\",%zu\r\n", i, i % 7);
    t = truth_of("accuracy", truth, 0);
    ck_assert_int_eq(comp_truth_rows(t), rows);
    o = (size_t)sprintf(sub, "y,id\n");
    for (i = rows; i-- > 0;)
        o += (size_t)sprintf(sub + o, "%zu,\"row\r\n%zu\"\n", i % 5 == 0 ? 99 : i % 7, i);
    ck_assert_int_eq(score_n(t, sub, o, &r, &e), 0);
    ck_assert(fabs(r.public_score - 0.8) < 1e-12);
    free(truth);
    free(sub);
    comp_truth_free(t);
}
END_TEST

START_TEST(the_first_error_in_file_order_wins_across_batches)
{
    char truth[4096], sub[4096];
    size_t o = 0, i;

    o = (size_t)sprintf(truth, "id,y\n");
    for (i = 1; i <= 100; i++)
        o += (size_t)sprintf(truth + o, "%zu,a\n", i);
    /* line 41 (row 40) has an unknown id, line 42 the wrong field count */
    o = (size_t)sprintf(sub, "id,y\n");
    for (i = 1; i <= 39; i++)
        o += (size_t)sprintf(sub + o, "%zu,a\n", i);
    o += (size_t)sprintf(sub + o, "x40,a\n41,a,extra\n");
    refused("accuracy", truth, sub, 0, "line 41, column 1: unknown id 'x40'", 41, 1);
    /* a reader error after a duplicate still in the batch: the duplicate */
    o = (size_t)sprintf(sub, "id,y\n");
    for (i = 1; i <= 70; i++)
        o += (size_t)sprintf(sub + o, "%zu,a\n", i == 66 ? 3 : i);
    o += (size_t)sprintf(sub + o, "71,\"a\n");
    refused("accuracy", truth, sub, 0, "line 67, column 1: duplicate id '3' (first on line 4)", 67, 1);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("competitions_csvsub");
    TCase *tc = tcase_create("validation");
    SRunner *sr;
    int failed;

    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, valid_submission_scores_with_quotes_crlf_bom_and_any_order);
    tcase_add_test(tc, public_and_private_scores_come_from_one_pass);
    tcase_add_test(tc, empty_file_is_refused);
    tcase_add_test(tc, utf16_and_invalid_utf8_and_nul_are_refused);
    tcase_add_test(tc, missing_header_and_wrong_columns_are_named);
    tcase_add_test(tc, wrong_field_count_is_refused);
    tcase_add_test(tc, unknown_duplicate_and_missing_ids_are_refused);
    tcase_add_test(tc, nan_inf_and_unparsable_numbers_are_refused);
    tcase_add_test(tc, size_over_the_cap_is_refused_for_files_and_pipes);
    tcase_add_test(tc, bad_quoting_and_oversized_fields_are_refused);
    tcase_add_test(tc, read_failure_is_a_platform_error);
    tcase_add_test(tc, truth_errors_are_reported_to_the_host);
    tcase_add_test(tc, auc_split_with_a_single_class_is_refused);
    tcase_add_test(tc, reader_handles_records_across_buffer_refills);
    tcase_add_test(tc, the_first_error_in_file_order_wins_across_batches);
    tcase_add_test(tc, integer_ids_by_value_and_other_ids_by_hash_score_alike);
    suite_add_tcase(s, tc);
    sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
