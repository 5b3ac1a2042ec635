/*
 * test_optim_init.c - initializers: Paddle's fan computation, each
 * initializer's bounds and standard deviation, Paddle's Linear and Conv2D
 * defaults, views, determinism and error paths.
 */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fw/init.h"
#include "fw/ops.h"

static fw_tensor *zeros(fw_dtype dt, const int64_t *shape, int nd)
{
    fw_tensor *t = NULL;
    ck_assert_int_eq(fw_zeros(&t, dt, shape, nd), 0);
    ck_assert_int_eq(fw_tensor_set_stop_gradient(t, false), 0);   /* a parameter */
    return t;
}

/* mean, std, max |x| of t. */
static void stats(const fw_tensor *t, double *mean, double *std, double *maxabs)
{
    int64_t n = fw_tensor_numel(t);
    double *x = malloc((size_t)n * sizeof(double)), s = 0, ss = 0, m = 0;
    ck_assert_int_eq(fw_tensor_to_doubles(x, n, t), 0);
    for (int64_t i = 0; i < n; i++)
        s += x[i];
    *mean = s / (double)n;
    for (int64_t i = 0; i < n; i++) {
        ss += (x[i] - *mean) * (x[i] - *mean);
        if (fabs(x[i]) > m)
            m = fabs(x[i]);
    }
    *std = sqrt(ss / (double)(n - 1));
    *maxabs = m;
    free(x);
}

START_TEST(fans_follow_paddle)
{
    int64_t fi, fo;
    const int64_t lin[2] = { 20, 30 }, conv[4] = { 8, 4, 3, 5 }, vec[1] = { 7 };
    fw_tensor *t = zeros(FW_FLOAT32, lin, 2);
    fw_init_fans(&fi, &fo, t);
    ck_assert_int_eq(fi, 20);          /* Linear weight [in, out] */
    ck_assert_int_eq(fo, 30);
    fw_tensor_unref(t);
    t = zeros(FW_FLOAT32, conv, 4);
    fw_init_fans(&fi, &fo, t);
    ck_assert_int_eq(fi, 4 * 15);      /* in/groups * kh * kw */
    ck_assert_int_eq(fo, 8 * 15);
    fw_tensor_unref(t);
    t = zeros(FW_FLOAT32, vec, 1);
    fw_init_fans(&fi, &fo, t);
    ck_assert_int_eq(fi, 7);
    ck_assert_int_eq(fo, 7);
    fw_tensor_unref(t);
    t = zeros(FW_FLOAT32, NULL, 0);
    fw_init_fans(&fi, &fo, t);
    ck_assert_int_eq(fi, 1);
    ck_assert_int_eq(fo, 1);
    fw_tensor_unref(t);
}
END_TEST

START_TEST(gains_follow_calculate_gain)
{
    ck_assert_double_eq_tol(fw_init_gain(FW_NONLIN_LINEAR, 0), 1.0, 1e-15);
    ck_assert_double_eq_tol(fw_init_gain(FW_NONLIN_TANH, 0), 5.0 / 3.0, 1e-15);
    ck_assert_double_eq_tol(fw_init_gain(FW_NONLIN_RELU, 0), sqrt(2.0), 1e-15);
    ck_assert_double_eq_tol(fw_init_gain(FW_NONLIN_LEAKY_RELU, 0.2), sqrt(2.0 / 1.04), 1e-15);
    ck_assert_double_eq_tol(fw_init_gain(FW_NONLIN_SELU, 0), 0.75, 1e-15);
}
END_TEST

START_TEST(xavier_uniform_and_normal_have_their_limits_and_std)
{
    const int64_t s[2] = { 200, 300 };
    double m, sd, mx, lim = sqrt(6.0 / 500.0);
    fw_tensor *t = zeros(FW_FLOAT32, s, 2);
    ck_assert_int_eq(fw_init_xavier_uniform(t, 1.0, 0, 0, NULL), 0);
    stats(t, &m, &sd, &mx);
    ck_assert(mx <= lim);
    ck_assert(mx > 0.99 * lim);
    ck_assert_double_eq_tol(sd, lim / sqrt(3.0), 0.01 * lim);
    ck_assert_int_eq(fw_init_xavier_uniform(t, 2.0, 10, 20, NULL), 0);   /* explicit fans */
    stats(t, &m, &sd, &mx);
    ck_assert(mx <= 2.0 * sqrt(6.0 / 30.0));
    ck_assert(mx > 0.99 * 2.0 * sqrt(6.0 / 30.0));
    ck_assert_int_eq(fw_init_xavier_normal(t, 1.0, 0, 0, NULL), 0);
    stats(t, &m, &sd, &mx);
    ck_assert_double_eq_tol(sd, sqrt(2.0 / 500.0), 0.01 * sqrt(2.0 / 500.0));
    ck_assert_double_eq_tol(m, 0.0, 0.001);
    fw_tensor_unref(t);
}
END_TEST

START_TEST(kaiming_normal_and_uniform_use_fan_in_and_gain)
{
    const int64_t conv[4] = { 64, 32, 3, 3 }, lin[2] = { 400, 100 };
    double m, sd, mx;
    fw_tensor *t = zeros(FW_FLOAT64, conv, 4);
    ck_assert_int_eq(fw_init_kaiming_normal(t, FW_NONLIN_RELU, 0, false, 0, NULL), 0);
    stats(t, &m, &sd, &mx);
    double want = sqrt(2.0) / sqrt(288.0);
    ck_assert_double_eq_tol(sd, want, 0.02 * want);
    ck_assert_int_eq(fw_init_kaiming_normal(t, FW_NONLIN_RELU, 0, true, 0, NULL), 0);
    stats(t, &m, &sd, &mx);
    want = sqrt(2.0) / sqrt(576.0);           /* fan_out = 64 * 9 */
    ck_assert_double_eq_tol(sd, want, 0.02 * want);
    fw_tensor_unref(t);

    t = zeros(FW_FLOAT32, lin, 2);
    ck_assert_int_eq(fw_init_kaiming_uniform(t, FW_NONLIN_LEAKY_RELU, 0.2, false, 0, NULL), 0);
    stats(t, &m, &sd, &mx);
    double lim = sqrt(2.0 / 1.04) * sqrt(3.0 / 400.0);
    ck_assert(mx <= lim * (1 + 1e-6));
    ck_assert(mx > 0.99 * lim);
    ck_assert_int_eq(fw_init_kaiming_uniform(t, FW_NONLIN_LINEAR, 0, false, 25, NULL), 0);
    stats(t, &m, &sd, &mx);
    ck_assert(mx <= sqrt(3.0 / 25.0) * (1 + 1e-6));
    ck_assert(mx > 0.99 * sqrt(3.0 / 25.0));
    fw_tensor_unref(t);
}
END_TEST

START_TEST(constant_uniform_normal_truncated_and_assign)
{
    const int64_t s[2] = { 100, 100 };
    double m, sd, mx;
    fw_tensor *t = zeros(FW_FLOAT64, s, 2);
    ck_assert_int_eq(fw_init_constant(t, 0.25), 0);
    stats(t, &m, &sd, &mx);
    ck_assert_double_eq(m, 0.25);
    ck_assert_double_eq(sd, 0);
    ck_assert_int_eq(fw_init_uniform(t, 1.0, 3.0, NULL), 0);
    stats(t, &m, &sd, &mx);
    ck_assert(mx < 3.0);
    ck_assert_double_eq_tol(m, 2.0, 0.02);
    ck_assert_int_eq(fw_init_normal(t, -1.0, 0.1, NULL), 0);
    stats(t, &m, &sd, &mx);
    ck_assert_double_eq_tol(m, -1.0, 0.005);
    ck_assert_double_eq_tol(sd, 0.1, 0.002);
    ck_assert_int_eq(fw_init_truncated_normal(t, 0.0, 1.0, -2.0, 2.0, NULL), 0);
    stats(t, &m, &sd, &mx);
    ck_assert(mx <= 2.0);
    ck_assert_double_eq_tol(sd, 0.87962, 0.015);

    double v[6] = { 1, 2, 3, 4, 5, 6 };
    int64_t s6[1] = { 6 }, s23[2] = { 2, 3 };
    fw_tensor *src = NULL, *dst = zeros(FW_FLOAT32, s23, 2);
    ck_assert_int_eq(fw_tensor_from_doubles(&src, v, FW_FLOAT64, s6, 1), 0);
    ck_assert_int_eq(fw_init_assign(dst, src), 0);
    const float *p = fw_tensor_data(dst);
    for (int i = 0; i < 6; i++)
        ck_assert(p[i] == (float)v[i]);
    ck_assert_int_eq(fw_init_assign(t, src), FW_ESHAPE);
    fw_tensor_unref(src);
    fw_tensor_unref(dst);
    fw_tensor_unref(t);
}
END_TEST

START_TEST(paddle_linear_and_conv_defaults)
{
    const int64_t w[2] = { 64, 32 }, b[1] = { 32 };
    fw_tensor *wt = zeros(FW_FLOAT32, w, 2), *bt = zeros(FW_FLOAT32, b, 1);
    ck_assert_int_eq(fw_init_constant(bt, 7), 0);
    ck_assert_int_eq(fw_init_linear_default(wt, bt, NULL), 0);
    double m, sd, mx;
    stats(bt, &m, &sd, &mx);
    ck_assert_double_eq(mx, 0);
    stats(wt, &m, &sd, &mx);
    ck_assert(mx <= sqrt(6.0 / 96.0));
    ck_assert(mx > 0.9 * sqrt(6.0 / 96.0));
    fw_tensor_unref(wt);
    fw_tensor_unref(bt);

    /* Conv2D(in 8, out 16, k 3, groups 2): weight [16, 4, 3, 3],
     * std sqrt(2 / (in_channels * kh * kw)) = sqrt(2/72) */
    const int64_t cw[4] = { 16, 4, 3, 3 }, cb[1] = { 16 };
    fw_tensor *c = zeros(FW_FLOAT64, cw, 4), *cbt = zeros(FW_FLOAT64, cb, 1);
    ck_assert_int_eq(fw_init_constant(cbt, 1), 0);
    ck_assert_int_eq(fw_init_conv_default(c, cbt, 2, NULL), 0);
    stats(c, &m, &sd, &mx);
    ck_assert_double_eq_tol(sd, sqrt(2.0 / 72.0), 0.1 * sqrt(2.0 / 72.0));
    stats(cbt, &m, &sd, &mx);
    ck_assert_double_eq(mx, 0);
    ck_assert_int_eq(fw_init_conv_default(c, NULL, 0, NULL), FW_EINVAL);
    fw_tensor_unref(c);
    fw_tensor_unref(cbt);
}
END_TEST

START_TEST(same_seed_same_init_and_views_are_filled)
{
    const int64_t s[2] = { 30, 40 };
    fw_tensor *a = zeros(FW_FLOAT32, s, 2), *b = zeros(FW_FLOAT32, s, 2);
    fw_generator *g;
    ck_assert_int_eq(fw_generator_new(&g, 77), 0);
    ck_assert_int_eq(fw_init_xavier_normal(a, 1.0, 0, 0, g), 0);
    fw_generator_seed(g, 77);
    ck_assert_int_eq(fw_init_xavier_normal(b, 1.0, 0, 0, g), 0);
    ck_assert(memcmp(fw_tensor_data(a), fw_tensor_data(b), 1200 * sizeof(float)) == 0);

    /* a transposed view: the base gets the values, transposed */
    fw_tensor *base = NULL, *view = NULL;
    ck_assert_int_eq(fw_zeros(&base, FW_FLOAT32, s, 2), 0);
    int perm[2] = { 1, 0 };
    ck_assert_int_eq(fw_transpose(&view, base, perm, 2), 0);
    fw_generator_seed(g, 5);
    ck_assert_int_eq(fw_init_uniform(view, 1.0, 2.0, g), 0);
    fw_generator_seed(g, 5);
    float ref[1200];
    ck_assert_int_eq(fw_random_uniform_f32(g, ref, 1200, 1.0, 2.0), 0);
    const float *bp = fw_tensor_data(base);
    for (int i = 0; i < 40; i++)          /* view[i][j] = base[j][i] */
        for (int j = 0; j < 30; j++)
            ck_assert(bp[j * 40 + i] == ref[i * 30 + j]);
    fw_tensor_unref(base);
    fw_tensor_unref(view);
    fw_generator_free(g);
    fw_tensor_unref(a);
    fw_tensor_unref(b);
}
END_TEST

START_TEST(half_precision_params_are_initialized_in_float32_and_rounded)
{
    const int64_t s[2] = { 64, 64 };
    double m, sd, mx, lim = sqrt(6.0 / 128.0);
    fw_tensor *t = zeros(FW_BFLOAT16, s, 2);
    ck_assert_int_eq(fw_init_xavier_uniform(t, 1.0, 0, 0, NULL), 0);
    stats(t, &m, &sd, &mx);
    ck_assert(mx <= lim * (1 + 1.0 / 128));     /* bf16 rounding: 8 bits */
    ck_assert_double_eq_tol(sd, lim / sqrt(3.0), 0.05 * lim);
    fw_tensor_unref(t);
    t = zeros(FW_FLOAT16, s, 2);
    ck_assert_int_eq(fw_init_normal(t, 0.5, 0.1, NULL), 0);
    stats(t, &m, &sd, &mx);
    ck_assert_double_eq_tol(m, 0.5, 0.01);
    ck_assert_double_eq_tol(sd, 0.1, 0.01);
    fw_tensor_unref(t);
}
END_TEST

START_TEST(integer_tensors_and_bad_ranges_are_refused)
{
    const int64_t s[1] = { 4 };
    fw_tensor *t = NULL;
    ck_assert_int_eq(fw_zeros(&t, FW_INT32, s, 1), 0);
    ck_assert_int_eq(fw_init_normal(t, 0, 1, NULL), FW_EDTYPE);
    ck_assert_ptr_nonnull(strstr(fw_error_last(), "int32"));
    ck_assert_int_eq(fw_init_constant(t, 3), 0);                 /* any dtype */
    ck_assert_int_eq(((int32_t *)fw_tensor_data(t))[2], 3);
    fw_tensor_unref(t);
    t = zeros(FW_FLOAT32, s, 1);
    ck_assert_int_eq(fw_init_uniform(t, 1, 0, NULL), FW_EINVAL);
    ck_assert_int_eq(fw_init_normal(t, 0, -1, NULL), FW_EINVAL);
    ck_assert_int_eq(fw_init_truncated_normal(t, 0, 1, 1, -1, NULL), FW_EINVAL);
    fw_tensor_unref(t);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("fw_init");
    TCase *tc = tcase_create("init");
    tcase_add_test(tc, fans_follow_paddle);
    tcase_add_test(tc, gains_follow_calculate_gain);
    tcase_add_test(tc, xavier_uniform_and_normal_have_their_limits_and_std);
    tcase_add_test(tc, kaiming_normal_and_uniform_use_fan_in_and_gain);
    tcase_add_test(tc, constant_uniform_normal_truncated_and_assign);
    tcase_add_test(tc, paddle_linear_and_conv_defaults);
    tcase_add_test(tc, same_seed_same_init_and_views_are_filled);
    tcase_add_test(tc, half_precision_params_are_initialized_in_float32_and_rounded);
    tcase_add_test(tc, integer_tensors_and_bad_ranges_are_refused);
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
