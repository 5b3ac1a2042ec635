/*
 * test_metrics.c - competitions/ metrics (score.h) against sklearn.
 *
 * ref_metrics.py (REF_METRICS_PY, run with /usr/bin/python3) writes random
 * cases and sklearn's public and private scores; every case is loaded,
 * split and scored here and must agree to 1e-9 relative, with the row
 * counts exact. Also: metric names, directions and versions; the split's
 * exact count and determinism; Kaggle's apk examples; the number parser.
 * Skips (77) when numpy or sklearn is missing.
 */
#include "csvsub.h"
#include "score.h"
#include "score_int.h"

#include "ed_error.h"

#include <check.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef REF_METRICS_PY
#error "REF_METRICS_PY must name tests/unit/competitions/ref_metrics.py"
#endif

static char refdir[] = "/tmp/eddy-test-metrics-XXXXXX";
static int ref_status = -1;     /* exit status of ref_metrics.py */

static int run_ref(void)
{
    char cmd[512];
    int st;

    if (ref_status >= 0)
        return ref_status;
    if (!mkdtemp(refdir))
        return ref_status = 1;
    snprintf(cmd, sizeof(cmd), "/usr/bin/python3 %s %s 8 >/dev/null", REF_METRICS_PY, refdir);
    st = system(cmd);
    ref_status = WIFEXITED(st) ? WEXITSTATUS(st) : 1;
    return ref_status;
}

static int close_rel(double want, double got)
{
    if (isnan(want) || isnan(got))
        return isnan(want) && isnan(got);
    return fabs(want - got) <= 1e-9 * fmax(1.0, fabs(want));
}

START_TEST(metrics_match_sklearn_on_random_cases)
{
    char path[600], name[128], metric[32], idc[32], tc[32], pub[64], priv[64];
    unsigned long long seed;
    double frac;
    FILE *m;
    int ncase = 0, nerr = 0;

    ck_assert_int_eq(run_ref(), 0);
    snprintf(path, sizeof(path), "%s/manifest.txt", refdir);
    ck_assert_ptr_nonnull(m = fopen(path, "r"));
    while (fscanf(m, "%127s %31s %31s %31s %llu %lf %63s %63s", name, metric, idc, tc, &seed, &frac, pub, priv) == 8) {
        comp_score_spec spec = {.metric = metric, .id_column = idc, .target_column = tc};
        comp_truth *t = NULL;
        comp_score_result r;
        comp_score_error e;
        uint8_t *mask;
        size_t i, npub = 0;
        int fd, rc;

        snprintf(path, sizeof(path), "%s/%s.truth.csv", refdir, name);
        ck_assert_int_ge(fd = open(path, O_RDONLY), 0);
        rc = comp_truth_load(&t, fd, &spec);
        close(fd);
        if (!strcmp(pub, "truth_error")) {
            ck_assert_msg(rc == ED_EINVAL, "%s: truth should be refused", name);
            nerr++;
            continue;
        }
        ck_assert_msg(rc == 0, "%s: %s", name, ed_error_last());
        rc = comp_truth_split(t, seed, frac);
        if (!strcmp(pub, "split_error")) {
            ck_assert_msg(rc == ED_EINVAL, "%s: split should be refused", name);
            ck_assert_ptr_nonnull(strstr(ed_error_last(), "single class"));
            comp_truth_free(t);
            nerr++;
            continue;
        }
        ck_assert_msg(rc == 0, "%s: %s", name, ed_error_last());
        snprintf(path, sizeof(path), "%s/%s.sub.csv", refdir, name);
        ck_assert_int_ge(fd = open(path, O_RDONLY), 0);
        rc = comp_score_submission(&r, &e, t, fd);
        close(fd);
        ck_assert_msg(rc == 0, "%s: %s", name, e.message);
        ck_assert_msg(close_rel(strtod(pub, NULL), r.public_score), "%s public: sklearn %s, eddy %.17g", name, pub,
                      r.public_score);
        ck_assert_msg(close_rel(strtod(priv, NULL), r.private_score), "%s private: sklearn %s, eddy %.17g", name,
                      priv, r.private_score);
        mask = malloc(comp_truth_rows(t));
        ck_assert_int_eq(comp_split_mask(mask, comp_truth_rows(t), seed, frac), 0);
        for (i = 0; i < comp_truth_rows(t); i++)
            npub += mask[i];
        ck_assert_int_eq(r.public_rows, (int64_t)npub);
        ck_assert_int_eq(r.private_rows, (int64_t)(comp_truth_rows(t) - npub));
        ck_assert_int_eq(r.metric_version, 1);
        free(mask);
        comp_truth_free(t);
        ncase++;
    }
    fclose(m);
    ck_assert_int_ge(ncase, 150);
    ck_assert_int_ge(nerr, 1);      /* the degenerate auc cases were generated */
}
END_TEST

START_TEST(metric_names_directions_versions)
{
    comp_metric_kind k;
    int kk;

    ck_assert_int_eq(comp_metric_parse(&k, &kk, "accuracy"), 0);
    ck_assert_int_eq(k, COMP_METRIC_ACCURACY);
    ck_assert_int_eq(comp_metric_parse(&k, &kk, "map@12"), 0);
    ck_assert_int_eq(k, COMP_METRIC_MAPK);
    ck_assert_int_eq(kk, 12);
    ck_assert_int_eq(comp_metric_parse(&k, &kk, "map@0"), ED_EINVAL);
    ck_assert_int_eq(comp_metric_parse(&k, &kk, "map@1001"), ED_EINVAL);
    ck_assert_int_eq(comp_metric_parse(&k, &kk, "map@5x"), ED_EINVAL);
    ck_assert_int_eq(comp_metric_parse(&k, &kk, "r2"), ED_EINVAL);
    ck_assert_ptr_nonnull(strstr(ed_error_last(), "known: accuracy"));
    ck_assert_int_eq(comp_metric_higher_is_better(COMP_METRIC_ACCURACY), 1);
    ck_assert_int_eq(comp_metric_higher_is_better(COMP_METRIC_F1_MACRO), 1);
    ck_assert_int_eq(comp_metric_higher_is_better(COMP_METRIC_AUC), 1);
    ck_assert_int_eq(comp_metric_higher_is_better(COMP_METRIC_MAPK), 1);
    ck_assert_int_eq(comp_metric_higher_is_better(COMP_METRIC_RMSE), 0);
    ck_assert_int_eq(comp_metric_higher_is_better(COMP_METRIC_MAE), 0);
    ck_assert_int_eq(comp_metric_higher_is_better(COMP_METRIC_LOGLOSS), 0);
    for (int i = 0; i < COMP_METRIC_COUNT; i++) {
        ck_assert_int_ge(comp_metric_version((comp_metric_kind)i), 1);
        if (i != COMP_METRIC_MAPK) {
            ck_assert_int_eq(comp_metric_parse(&k, NULL, comp_metric_name((comp_metric_kind)i)), 0);
            ck_assert_int_eq(k, i);
        }
    }
    ck_assert_str_eq(comp_metric_name(COMP_METRIC_COUNT), "?");
}
END_TEST

START_TEST(split_is_exact_and_deterministic)
{
    uint8_t a[1000], b[1000];
    size_t i, n = 0, diff = 0;

    ck_assert_int_eq(comp_split_mask(a, 1000, 42, 0.3), 0);
    ck_assert_int_eq(comp_split_mask(b, 1000, 42, 0.3), 0);
    ck_assert_mem_eq(a, b, sizeof(a));
    for (i = 0; i < 1000; i++)
        n += a[i];
    ck_assert_int_eq(n, 300);
    ck_assert_int_eq(comp_split_mask(b, 1000, 43, 0.3), 0);
    for (i = 0; i < 1000; i++)
        diff += a[i] != b[i];
    ck_assert_int_gt(diff, 100);
    ck_assert_int_eq(comp_split_mask(a, 7, 1, 0.5), 0);     /* 3.5 rounds half up: 4 */
    for (n = 0, i = 0; i < 7; i++)
        n += a[i];
    ck_assert_int_eq(n, 4);
    ck_assert_int_eq(comp_split_mask(a, 10, 1, 0.0), 0);
    for (n = 0, i = 0; i < 10; i++)
        n += a[i];
    ck_assert_int_eq(n, 0);
    ck_assert_int_eq(comp_split_mask(a, 10, 1, 1.0), 0);
    for (n = 0, i = 0; i < 10; i++)
        n += a[i];
    ck_assert_int_eq(n, 10);
    ck_assert_int_eq(comp_split_mask(a, 10, 1, -0.1), ED_EINVAL);
    ck_assert_int_eq(comp_split_mask(a, 10, 1, 1.5), ED_EINVAL);
    ck_assert_int_eq(comp_split_mask(a, 10, 1, NAN), ED_EINVAL);
    ck_assert_int_eq(comp_split_mask(a, 0, 1, 0.5), 0);
}
END_TEST

static double apk_s(const char *a, const char *p, int k) { return comp__apk(a, strlen(a), p, strlen(p), k); }

START_TEST(apk_matches_kaggle_examples)
{
    /* ml_metrics' own test cases (average_precision_test.py) */
    ck_assert(fabs(apk_s("1 2 3 4 5", "6 4 7 1 2", 2) - 0.25) < 1e-15);
    ck_assert(fabs(apk_s("1 2 3 4 5", "1 1 1 1 1", 5) - 0.2) < 1e-15);
    ck_assert(fabs(apk_s("1 2 3", "1 2 3", 3) - 1.0) < 1e-15);
    ck_assert(fabs(apk_s("1 3 4", "1 2 3 4 5", 3) - (1.0 + 2.0 / 3.0) / 3.0) < 1e-15);
    ck_assert(fabs(apk_s("", "1 2", 3) - 0.0) < 1e-15);
    ck_assert(fabs(apk_s("1", "", 3) - 0.0) < 1e-15);
    ck_assert(fabs(apk_s("  1   2 ", " 2  1 ", 2) - 1.0) < 1e-15);   /* runs of spaces split like str.split() */
}
END_TEST

START_TEST(number_parser_is_exact_and_strict)
{
    double v;

    ck_assert_int_eq(comp__parse_double(&v, "0.1", 3), 0);
    ck_assert(v == 0.1);
    ck_assert_int_eq(comp__parse_double(&v, " -2.5e3 ", 8), 0);
    ck_assert(v == -2500.0);
    ck_assert_int_eq(comp__parse_double(&v, "123456789012345678901234567890", 30), 0);
    ck_assert(v == 123456789012345678901234567890.0);
    ck_assert_int_eq(comp__parse_double(&v, "0.000000000000000000000000000123", 32), 0);
    ck_assert(v == 1.23e-28);
    ck_assert_int_eq(comp__parse_double(&v, "2.2250738585072011e-308", 23), 0);
    ck_assert(v == 2.2250738585072011e-308);
    ck_assert_int_eq(comp__parse_double(&v, "1e-400", 6), 0);
    ck_assert(v == 0.0);
    ck_assert_int_eq(comp__parse_double(&v, ".5", 2), 0);
    ck_assert(v == 0.5);
    ck_assert_int_eq(comp__parse_double(&v, "5.", 2), 0);
    ck_assert(v == 5.0);
    ck_assert_int_eq(comp__parse_double(&v, "NaN", 3), 1);
    ck_assert_int_eq(comp__parse_double(&v, "-nan", 4), 1);
    ck_assert_int_eq(comp__parse_double(&v, "inf", 3), 2);
    ck_assert_int_eq(comp__parse_double(&v, "-Infinity", 9), 2);
    ck_assert_int_eq(comp__parse_double(&v, "1e999", 5), 2);
    ck_assert_int_eq(comp__parse_double(&v, "  ", 2), 3);
    ck_assert_int_eq(comp__parse_double(&v, "0x10", 4), 4);
    ck_assert_int_eq(comp__parse_double(&v, "1e", 2), 4);
    ck_assert_int_eq(comp__parse_double(&v, ".", 1), 4);
    ck_assert_int_eq(comp__parse_double(&v, "1,5", 3), 4);
    ck_assert_int_eq(comp__parse_double(&v, "1 2", 3), 4);
    ck_assert_int_eq(comp__parse_double(&v, "--1", 3), 4);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("competitions_metrics");
    TCase *tc = tcase_create("metrics");
    SRunner *sr;
    int failed;

    if (run_ref() == 77) {
        printf("SKIP: numpy or sklearn missing for ref_metrics.py\n");
        return 77;
    }
    tcase_set_timeout(tc, 240);
    tcase_add_test(tc, metrics_match_sklearn_on_random_cases);
    tcase_add_test(tc, metric_names_directions_versions);
    tcase_add_test(tc, split_is_exact_and_deterministic);
    tcase_add_test(tc, apk_matches_kaggle_examples);
    tcase_add_test(tc, number_parser_is_exact_and_strict);
    suite_add_tcase(s, tc);
    sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    if (ref_status >= 0 && refdir[sizeof(refdir) - 7] != 'X') {
        char cmd[600];
        snprintf(cmd, sizeof(cmd), "rm -rf %s", refdir);
        if (system(cmd) != 0)
            fprintf(stderr, "could not remove %s\n", refdir);
    }
    return failed ? 1 : 0;
}
