/*
 * test_random.c - Philox generator: known answers, determinism across runs,
 * chunkings and thread counts, distribution moments, error paths, and the
 * random creation ops.
 */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fw/random.h"
#include "../../../framework/core/fw_parallel.h"
#include "../../../framework/random/random_int.h"

#define N_MOMENTS 200000

/* Random123's known-answer vectors for philox4x32 with 10 rounds. */
START_TEST(philox_matches_random123_known_answers)
{
    struct { uint32_t ctr[4], key[2], out[4]; } kat[] = {
        { { 0, 0, 0, 0 }, { 0, 0 }, { 0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8 } },
        { { 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff }, { 0xffffffff, 0xffffffff },
          { 0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd } },
        { { 0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344 }, { 0xa4093822, 0x299f31d0 },
          { 0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1 } },
    };
    for (size_t k = 0; k < sizeof(kat) / sizeof(kat[0]); k++) {
        uint32_t out[4];
        fw_philox4x32_10(out, kat[k].ctr, kat[k].key);
        for (int i = 0; i < 4; i++)
            ck_assert_msg(out[i] == kat[k].out[i], "vector %zu lane %d: %08x != %08x", k, i,
                          out[i], kat[k].out[i]);
    }
}
END_TEST

START_TEST(same_seed_gives_same_numbers_and_other_seed_differs)
{
    fw_generator *a, *b, *c;
    double xa[1000], xb[1000], xc[1000];
    ck_assert_int_eq(fw_generator_new(&a, 1234), 0);
    ck_assert_int_eq(fw_generator_new(&b, 1234), 0);
    ck_assert_int_eq(fw_generator_new(&c, 1235), 0);
    for (int round = 0; round < 3; round++) {   /* successive draws stay in step */
        ck_assert_int_eq(fw_random_normal_f64(a, xa, 1000, 0, 1), 0);
        ck_assert_int_eq(fw_random_normal_f64(b, xb, 1000, 0, 1), 0);
        ck_assert_int_eq(fw_random_normal_f64(c, xc, 1000, 0, 1), 0);
        ck_assert(memcmp(xa, xb, sizeof(xa)) == 0);
        int same = 0;
        for (int i = 0; i < 1000; i++)
            same += xa[i] == xc[i];
        ck_assert_int_lt(same, 5);
    }
    /* a second draw differs from the first */
    double y[1000];
    fw_generator_seed(a, 1234);
    ck_assert_int_eq(fw_random_normal_f64(a, y, 1000, 0, 1), 0);
    ck_assert_int_eq(fw_random_normal_f64(a, xa, 1000, 0, 1), 0);
    ck_assert(memcmp(xa, y, sizeof(y)) != 0);
    fw_generator_free(a);
    fw_generator_free(b);
    fw_generator_free(c);
}
END_TEST

START_TEST(fw_seed_resets_the_default_generator)
{
    float x[257], y[257];
    fw_seed(7);
    ck_assert_int_eq(fw_random_uniform_f32(NULL, x, 257, -1, 1), 0);
    ck_assert_uint_gt(fw_generator_get_offset(fw_default_generator()), 0);
    fw_seed(7);
    ck_assert_int_eq(fw_random_uniform_f32(NULL, y, 257, -1, 1), 0);
    ck_assert(memcmp(x, y, sizeof(x)) == 0);
}
END_TEST

START_TEST(generator_state_restores_the_stream)
{
    fw_generator *g;
    double x[100], y[100];
    ck_assert_int_eq(fw_generator_new(&g, 99), 0);
    ck_assert_int_eq(fw_random_uniform_f64(g, x, 33, 0, 1), 0);
    uint64_t seed = fw_generator_get_seed(g), off = fw_generator_get_offset(g);
    ck_assert_int_eq(fw_random_uniform_f64(g, x, 100, 0, 1), 0);
    fw_generator_set_state(g, seed, off);
    ck_assert_int_eq(fw_random_uniform_f64(g, y, 100, 0, 1), 0);
    ck_assert(memcmp(x, y, sizeof(x)) == 0);
    fw_generator_free(g);
}
END_TEST

START_TEST(values_do_not_depend_on_how_the_fill_is_split)
{
    enum { N = 1001 };
    double whole[N], part[N];
    const size_t cuts[] = { 0, 1, 2, 7, 300, 301, 999, N };
    for (int kind = 0; kind < 3; kind++) {
        if (kind == 0)
            fw__random_uniform_at(whole, N, 5, 17, 0);
        else if (kind == 1)
            fw__random_normal_at(whole, N, 5, 17, 0);
        else
            fw__random_truncnorm_at(whole, N, 5, 17, 0, -1.5, 0.5);
        for (size_t c = 0; c + 1 < sizeof(cuts) / sizeof(cuts[0]); c++) {
            size_t s = cuts[c], m = cuts[c + 1] - s;
            if (kind == 0)
                fw__random_uniform_at(part + s, m, 5, 17, s);
            else if (kind == 1)
                fw__random_normal_at(part + s, m, 5, 17, s);
            else
                fw__random_truncnorm_at(part + s, m, 5, 17, s, -1.5, 0.5);
        }
        ck_assert_msg(memcmp(whole, part, sizeof(whole)) == 0, "kind %d", kind);
    }
}
END_TEST

START_TEST(values_do_not_depend_on_the_thread_count)
{
    enum { N = 300000 };   /* several parallel chunks */
    float *a = malloc(N * sizeof(float)), *b = malloc(N * sizeof(float));
    uint8_t *ma = malloc(N), *mb = malloc(N);
    fw_generator *g;
    int prev = fw_parallel_num_threads();
    ck_assert_int_eq(fw_generator_new(&g, 2024), 0);

    fw_parallel_set_num_threads(1);
    ck_assert_int_eq(fw_random_normal_f32(g, a, N, 0, 1), 0);
    ck_assert_int_eq(fw_random_bernoulli_u8(g, ma, N, 0.3), 0);
    fw_generator_seed(g, 2024);
    fw_parallel_set_num_threads(4);
    ck_assert_int_eq(fw_parallel_num_threads(), 4);
    ck_assert_int_eq(fw_random_normal_f32(g, b, N, 0, 1), 0);
    ck_assert_int_eq(fw_random_bernoulli_u8(g, mb, N, 0.3), 0);
    fw_parallel_set_num_threads(prev);

    ck_assert(memcmp(a, b, N * sizeof(float)) == 0);
    ck_assert(memcmp(ma, mb, N) == 0);
    fw_generator_free(g);
    free(a);
    free(b);
    free(ma);
    free(mb);
}
END_TEST

static void moments(const double *x, size_t n, double *mean, double *var)
{
    double s = 0, ss = 0;
    for (size_t i = 0; i < n; i++)
        s += x[i];
    *mean = s / (double)n;
    for (size_t i = 0; i < n; i++)
        ss += (x[i] - *mean) * (x[i] - *mean);
    *var = ss / (double)(n - 1);
}

START_TEST(uniform_has_the_moments_and_range_of_uniform)
{
    double *x = malloc(N_MOMENTS * sizeof(double)), m, v;
    fw_generator *g;
    ck_assert_int_eq(fw_generator_new(&g, 1), 0);
    ck_assert_int_eq(fw_random_uniform_f64(g, x, N_MOMENTS, -2, 4), 0);
    for (size_t i = 0; i < N_MOMENTS; i++)
        ck_assert(x[i] >= -2 && x[i] < 4);
    moments(x, N_MOMENTS, &m, &v);
    /* mean 1, var 36/12 = 3; 5-sigma bounds */
    ck_assert_double_eq_tol(m, 1.0, 5 * sqrt(3.0 / N_MOMENTS));
    ck_assert_double_eq_tol(v, 3.0, 0.05);
    fw_generator_free(g);
    free(x);
}
END_TEST

START_TEST(normal_has_the_moments_of_normal_in_both_dtypes)
{
    double *x = malloc(N_MOMENTS * sizeof(double)), m, v;
    float *xf = malloc(N_MOMENTS * sizeof(float));
    fw_generator *g;
    ck_assert_int_eq(fw_generator_new(&g, 3), 0);
    ck_assert_int_eq(fw_random_normal_f64(g, x, N_MOMENTS, 2.0, 0.5), 0);
    moments(x, N_MOMENTS, &m, &v);
    ck_assert_double_eq_tol(m, 2.0, 5 * 0.5 / sqrt(N_MOMENTS));
    ck_assert_double_eq_tol(sqrt(v), 0.5, 0.005);
    /* the fourth standardized moment of a normal is 3 */
    double k = 0;
    for (size_t i = 0; i < N_MOMENTS; i++)
        k += pow((x[i] - m) / sqrt(v), 4);
    ck_assert_double_eq_tol(k / N_MOMENTS, 3.0, 0.1);
    /* float32 gets the same draws rounded */
    fw_generator_seed(g, 3);
    ck_assert_int_eq(fw_random_normal_f32(g, xf, N_MOMENTS, 2.0, 0.5), 0);
    for (size_t i = 0; i < N_MOMENTS; i += 997)
        ck_assert(xf[i] == (float)x[i]);
    fw_generator_free(g);
    free(x);
    free(xf);
}
END_TEST

START_TEST(truncated_normal_stays_in_bounds_with_truncated_moments)
{
    double *x = malloc(N_MOMENTS * sizeof(double)), m, v;
    fw_generator *g;
    ck_assert_int_eq(fw_generator_new(&g, 4), 0);
    ck_assert_int_eq(fw_random_truncated_normal_f64(g, x, N_MOMENTS, 1.0, 2.0, -3.0, 5.0), 0);
    for (size_t i = 0; i < N_MOMENTS; i++)
        ck_assert(x[i] >= -3.0 && x[i] <= 5.0);
    moments(x, N_MOMENTS, &m, &v);
    /* N(1, 2) cut at +-2 sigma: mean 1, std 2 * 0.87962 */
    ck_assert_double_eq_tol(m, 1.0, 0.02);
    ck_assert_double_eq_tol(sqrt(v), 2.0 * 0.87962, 0.01);
    fw_generator_free(g);
    free(x);
}
END_TEST

START_TEST(randint_covers_the_range_evenly)
{
    enum { N = 100000, K = 7 };
    int64_t *x = malloc(N * sizeof(int64_t));
    int32_t *y = malloc(N * sizeof(int32_t));
    int count[K] = { 0 };
    ck_assert_int_eq(fw_random_randint_i64(NULL, x, N, -3, 4), 0);
    for (int i = 0; i < N; i++) {
        ck_assert(x[i] >= -3 && x[i] < 4);
        count[x[i] + 3]++;
    }
    for (int k = 0; k < K; k++)
        ck_assert_int_lt(abs(count[k] - N / K), 600);   /* ~5 sigma */
    ck_assert_int_eq(fw_random_randint_i32(NULL, y, N, 10, 12), 0);
    for (int i = 0; i < N; i++)
        ck_assert(y[i] == 10 || y[i] == 11);
    free(x);
    free(y);
}
END_TEST

START_TEST(bernoulli_mask_has_probability_p)
{
    enum { N = 100000 };
    uint8_t *m = malloc(N);
    long ones = 0;
    ck_assert_int_eq(fw_random_bernoulli_u8(NULL, m, N, 0.25), 0);
    for (int i = 0; i < N; i++) {
        ck_assert(m[i] <= 1);
        ones += m[i];
    }
    ck_assert_double_eq_tol((double)ones / N, 0.25, 0.007);
    ck_assert_int_eq(fw_random_bernoulli_u8(NULL, m, N, 0.0), 0);
    for (int i = 0; i < N; i++)
        ck_assert_int_eq(m[i], 0);
    ck_assert_int_eq(fw_random_bernoulli_u8(NULL, m, N, 1.0), 0);
    for (int i = 0; i < N; i++)
        ck_assert_int_eq(m[i], 1);
    free(m);
}
END_TEST

START_TEST(randperm_is_a_deterministic_permutation)
{
    enum { N = 1000 };
    int64_t a[N], b[N];
    int seen[N] = { 0 };
    fw_generator *g;
    ck_assert_int_eq(fw_generator_new(&g, 11), 0);
    ck_assert_int_eq(fw_random_randperm_i64(g, a, N), 0);
    for (int i = 0; i < N; i++) {
        ck_assert(a[i] >= 0 && a[i] < N);
        ck_assert_int_eq(seen[a[i]]++, 0);
    }
    int fixed = 0;
    for (int i = 0; i < N; i++)
        fixed += a[i] == i;
    ck_assert_int_lt(fixed, 10);        /* expected 1 fixed point */
    fw_generator_seed(g, 11);
    ck_assert_int_eq(fw_random_randperm_i64(g, b, N), 0);
    ck_assert(memcmp(a, b, sizeof(a)) == 0);
    fw_generator_free(g);
}
END_TEST

START_TEST(bad_parameters_are_rejected_with_messages)
{
    double x[4];
    int64_t k[4];
    uint8_t m[4];
    ck_assert_int_eq(fw_random_uniform_f64(NULL, x, 4, 1, 1), FW_EINVAL);
    ck_assert_ptr_nonnull(strstr(fw_error_last(), "low < high"));
    ck_assert_int_eq(fw_random_uniform_f64(NULL, x, 4, 0, INFINITY), FW_EINVAL);
    ck_assert_int_eq(fw_random_normal_f64(NULL, x, 4, 0, -1), FW_EINVAL);
    ck_assert_int_eq(fw_random_truncated_normal_f64(NULL, x, 4, 0, 1, 2, 1), FW_EINVAL);
    ck_assert_int_eq(fw_random_truncated_normal_f64(NULL, x, 4, 0, 1, 50, 60), FW_EINVAL);
    ck_assert_ptr_nonnull(strstr(fw_error_last(), "almost none"));
    ck_assert_int_eq(fw_random_randint_i64(NULL, k, 4, 5, 5), FW_EINVAL);
    ck_assert_int_eq(fw_random_randint_i32(NULL, (int32_t *)k, 4, 0, 1ll << 40), FW_EINVAL);
    ck_assert_int_eq(fw_random_bernoulli_u8(NULL, m, 4, 1.5), FW_EINVAL);
    ck_assert_ptr_nonnull(strstr(fw_error_last(), "1.5"));
    ck_assert_int_eq(fw_random_normal_f32(NULL, NULL, 4, 0, 1), FW_EINVAL);
    ck_assert_ptr_nonnull(strstr(fw_error_last(), "NULL output"));
    ck_assert_int_eq(fw_random_randperm_i64(NULL, NULL, 0), 0);
}
END_TEST

START_TEST(creation_ops_make_tensors_of_the_given_shape)
{
    fw_tensor *t = NULL;
    int64_t shape[] = { 3, 5 };
    ck_assert_int_eq(fw_rand(&t, shape, 2, FW_FLOAT32, NULL), 0);
    ck_assert_int_eq(fw_tensor_ndim(t), 2);
    ck_assert_int_eq(fw_tensor_numel(t), 15);
    ck_assert_int_eq(fw_tensor_dtype(t), FW_FLOAT32);
    ck_assert(fw_tensor_stop_gradient(t));
    const float *p = fw_tensor_data(t);
    for (int i = 0; i < 15; i++)
        ck_assert(p[i] >= 0 && p[i] < 1);
    fw_tensor_unref(t);

    fw_generator *g;
    fw_tensor *a = NULL, *b = NULL;
    ck_assert_int_eq(fw_generator_new(&g, 8), 0);
    ck_assert_int_eq(fw_randn(&a, shape, 2, FW_FLOAT64, g), 0);
    fw_generator_seed(g, 8);
    ck_assert_int_eq(fw_normal(&b, shape, 2, FW_FLOAT64, 0.0, 1.0, g), 0);
    ck_assert(memcmp(fw_tensor_data(a), fw_tensor_data(b), 15 * sizeof(double)) == 0);
    fw_tensor_unref(a);
    fw_tensor_unref(b);

    ck_assert_int_eq(fw_uniform(&t, shape, 2, FW_FLOAT64, -5, -4, g), 0);
    for (int i = 0; i < 15; i++)
        ck_assert(((double *)fw_tensor_data(t))[i] >= -5 && ((double *)fw_tensor_data(t))[i] < -4);
    fw_tensor_unref(t);

    ck_assert_int_eq(fw_randint(&t, 0, 3, shape, 2, FW_INT32, g), 0);
    ck_assert_int_eq(fw_tensor_dtype(t), FW_INT32);
    for (int i = 0; i < 15; i++)
        ck_assert(((int32_t *)fw_tensor_data(t))[i] >= 0 && ((int32_t *)fw_tensor_data(t))[i] < 3);
    fw_tensor_unref(t);

    ck_assert_int_eq(fw_randperm(&t, 6, FW_INT64, g), 0);
    ck_assert_int_eq(fw_tensor_numel(t), 6);
    int64_t sum = 0;
    for (int i = 0; i < 6; i++)
        sum += ((int64_t *)fw_tensor_data(t))[i];
    ck_assert_int_eq(sum, 15);
    fw_tensor_unref(t);

    /* half types: float32 draws rounded */
    ck_assert_int_eq(fw_rand(&t, shape, 2, FW_FLOAT16, g), 0);
    ck_assert_int_eq(fw_tensor_dtype(t), FW_FLOAT16);
    double h[15];
    ck_assert_int_eq(fw_tensor_to_doubles(h, 15, t), 0);
    for (int i = 0; i < 15; i++)
        ck_assert(h[i] >= 0 && h[i] <= 1);
    fw_tensor_unref(t);

    t = (fw_tensor *)1;
    ck_assert_int_eq(fw_rand(&t, shape, 2, FW_INT32, g), FW_EDTYPE);
    ck_assert_ptr_null(t);
    ck_assert_int_eq(fw_randint(&t, 0, 3, shape, 2, FW_FLOAT32, g), FW_EDTYPE);
    ck_assert_int_eq(fw_randint(&t, 3, 3, shape, 2, FW_INT64, g), FW_EINVAL);
    ck_assert_int_eq(fw_randperm(&t, -1, FW_INT64, g), FW_EINVAL);
    fw_generator_free(g);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("fw_random");
    TCase *tc = tcase_create("random");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, philox_matches_random123_known_answers);
    tcase_add_test(tc, same_seed_gives_same_numbers_and_other_seed_differs);
    tcase_add_test(tc, fw_seed_resets_the_default_generator);
    tcase_add_test(tc, generator_state_restores_the_stream);
    tcase_add_test(tc, values_do_not_depend_on_how_the_fill_is_split);
    tcase_add_test(tc, values_do_not_depend_on_the_thread_count);
    tcase_add_test(tc, uniform_has_the_moments_and_range_of_uniform);
    tcase_add_test(tc, normal_has_the_moments_of_normal_in_both_dtypes);
    tcase_add_test(tc, truncated_normal_stays_in_bounds_with_truncated_moments);
    tcase_add_test(tc, randint_covers_the_range_evenly);
    tcase_add_test(tc, bernoulli_mask_has_probability_p);
    tcase_add_test(tc, randperm_is_a_deterministic_permutation);
    tcase_add_test(tc, bad_parameters_are_rejected_with_messages);
    tcase_add_test(tc, creation_ops_make_tensors_of_the_given_shape);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
