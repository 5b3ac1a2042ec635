/*
 * test_nn_pool.c - max/avg/adaptive pooling (2-D and 1-D): forward against
 * naive float64 loops with Paddle's window rules, backward against finite
 * differences, the max mask, error paths.
 */
#include "test_nn_util.h"

typedef struct pool_case {
    int64_t N, C, H, W, kh, kw, sh, sw, ph, pw;
    int ceil_mode, exclusive;
} pool_case;

static int64_t out_dim(int64_t in, int64_t k, int64_t s, int64_t p, int ceil_mode)
{
    int64_t num = in + 2 * p - k;
    return (ceil_mode ? (num + s - 1) / s : num / s) + 1;
}

/* kind 0 max, 1 avg; mask receives argmax h*W+w for max */
static void pool_ref(double *y, int64_t *mask, const double *x, const pool_case *c, int kind)
{
    int64_t OH = out_dim(c->H, c->kh, c->sh, c->ph, c->ceil_mode);
    int64_t OW = out_dim(c->W, c->kw, c->sw, c->pw, c->ceil_mode);
    for (int64_t p = 0; p < c->N * c->C; p++)
        for (int64_t oh = 0; oh < OH; oh++)
            for (int64_t ow = 0; ow < OW; ow++) {
                double best = -INFINITY, sum = 0;
                int64_t arg = -1, cnt = 0;
                for (int64_t i = 0; i < c->kh; i++)
                    for (int64_t j = 0; j < c->kw; j++) {
                        int64_t h = oh * c->sh - c->ph + i, w = ow * c->sw - c->pw + j;
                        if (h < 0 || h >= c->H || w < 0 || w >= c->W)
                            continue;
                        double v = x[(p * c->H + h) * c->W + w];
                        if (v > best) {
                            best = v;
                            arg = h * c->W + w;
                        }
                        sum += v;
                        cnt++;
                    }
                int64_t at = (p * OH + oh) * OW + ow;
                if (kind == 0) {
                    y[at] = best;
                    mask[at] = arg;
                } else {
                    int64_t div = c->exclusive ? cnt : c->kh * c->kw;
                    y[at] = div ? sum / (double)div : 0;
                }
            }
}

static pool_case pool_random(uint64_t *st, int small)
{
    pool_case c;
    c.N = nn_randint(st, 1, 2);
    c.C = nn_randint(st, 1, small ? 2 : 3);
    c.kh = nn_randint(st, 1, 3);
    c.kw = nn_randint(st, 1, 3);
    c.sh = nn_randint(st, 1, 3);
    c.sw = nn_randint(st, 1, 2);
    c.ph = nn_randint(st, 0, c.kh / 2);
    c.pw = nn_randint(st, 0, c.kw / 2);
    c.H = c.kh + nn_randint(st, 0, small ? 3 : 6);
    c.W = c.kw + nn_randint(st, 0, small ? 3 : 6);
    c.ceil_mode = nn_randint(st, 0, 1);
    c.exclusive = nn_randint(st, 0, 1);
    return c;
}

static int pool_call(fw_tensor **y, fw_tensor **mask, fw_tensor *x, const pool_case *c, int kind)
{
    int64_t k[2] = {c->kh, c->kw}, s[2] = {c->sh, c->sw}, p[2] = {c->ph, c->pw};
    if (kind == 0)
        return fw_max_pool2d(y, mask, x, k, s, p, c->ceil_mode);
    return fw_avg_pool2d(y, x, k, s, p, c->ceil_mode, c->exclusive);
}

START_TEST(pool2d_forward_matches_naive_reference)
{
    uint64_t st = 3;
    for (int trial = 0; trial < 30; trial++) {
        pool_case c = pool_random(&st, 0);
        int kind = trial % 2;
        int64_t OH = out_dim(c.H, c.kh, c.sh, c.ph, c.ceil_mode);
        int64_t OW = out_dim(c.W, c.kw, c.sw, c.pw, c.ceil_mode);
        int64_t xs[4] = {c.N, c.C, c.H, c.W}, ys[4] = {c.N, c.C, OH, OW}, n = c.N * c.C * OH * OW;
        fw_tensor *x64 = nn_rand(FW_FLOAT64, xs, 4, 100 + trial, false);
        double *x = fw_test_doubles(x64, NULL), *ref = malloc(sizeof(double) * (size_t)n);
        int64_t *mref = malloc(sizeof(int64_t) * (size_t)n);
        pool_ref(ref, mref, x, &c, kind);
        for (int d = 0; d < NN_DTYPES; d++) {
            fw_tensor *xx = nn_as(x64, nn_dtypes[d], false), *y = NULL, *mask = NULL;
            ck_assert_msg(pool_call(&y, kind == 0 ? &mask : NULL, xx, &c, kind) == 0, "%s",
                          fw_error_last());
            ck_assert(fw_expect_shape(y, ys, 4));
            if (kind == 0) {
                /* windows starting past the input (ceil_mode) hold the
                 * lowest finite value, like Paddle; compare the others */
                double *got = fw_test_doubles(y, NULL);
                const int64_t *m = fw_tensor_data(mask);
                ck_assert_int_eq(fw_tensor_dtype(mask), FW_INT64);
                for (int64_t i = 0; i < n; i++) {
                    ck_assert_int_eq(m[i], mref[i]);
                    if (mref[i] >= 0)
                        ck_assert_msg(fabs(got[i] - ref[i]) <= nn_tol(nn_dtypes[d]), "at %lld",
                                      (long long)i);
                }
                free(got);
            } else {
                NN_EXPECT_CLOSE(y, ref, n, nn_dtypes[d]);
            }
            fw_tensor_unref(xx);
            fw_tensor_unref(y);
            fw_tensor_unref(mask);
        }
        free(x);
        free(ref);
        free(mref);
        fw_tensor_unref(x64);
    }
}
END_TEST

START_TEST(avg_pool2d_exclusive_and_inclusive_hand_values)
{
    /* 1x1x2x2 input, kernel 2, stride 1, padding 1: the corner window sees
     * one cell; exclusive divides by 1, inclusive by 4. */
    double xv[4] = {1, 2, 3, 4};
    int64_t xs[4] = {1, 1, 2, 2}, k[2] = {2, 2}, s[2] = {1, 1}, p[2] = {1, 1};
    fw_tensor *x = NULL, *y = NULL;
    ck_assert_int_eq(fw_tensor_from_doubles(&x, xv, FW_FLOAT64, xs, 4), 0);
    ck_assert_int_eq(fw_avg_pool2d(&y, x, k, s, p, false, true), 0);
    double ex[9] = {1, 1.5, 2, 2, 2.5, 3, 3, 3.5, 4};
    ck_assert(fw_expect_close(y, ex, 9, 1e-12, 0));
    fw_tensor_unref(y);
    ck_assert_int_eq(fw_avg_pool2d(&y, x, k, s, p, false, false), 0);
    double in[9] = {0.25, 0.75, 0.5, 1, 2.5, 1.5, 0.75, 1.75, 1};
    ck_assert(fw_expect_close(y, in, 9, 1e-12, 0));
    fw_tensor_unref(y);
    fw_tensor_unref(x);
}
END_TEST

static int pool_fn(fw_tensor **out, fw_tensor *const *in, void *ctx)
{
    const pool_case *c = ctx;
    return pool_call(out, NULL, in[0], c, c->exclusive & 2 ? 0 : 1);
}

START_TEST(pool2d_backward_matches_finite_differences)
{
    uint64_t st = 17;
    for (int trial = 0; trial < 8; trial++) {
        pool_case c = pool_random(&st, 1);
        if (trial % 2) {
            c.exclusive |= 2; /* bit 1 selects max pooling */
            c.ceil_mode = 0;  /* no window past the input (Paddle gives -FLT_MAX there) */
        }
        int64_t xs[4] = {c.N, c.C, c.H, c.W};
        fw_tensor *x = nn_rand(FW_FLOAT64, xs, 4, 40 + trial, true);
        NN_GRADCHECK(pool_fn, &c, 1, &x);
        fw_tensor_unref(x);
    }
}
END_TEST

START_TEST(max_pool2d_backward_routes_to_the_maximum)
{
    double xv[8] = {1, 5, 2, 0, 7, 3, 4, 6};
    int64_t xs[4] = {1, 1, 2, 4}, k[2] = {2, 2};
    fw_tensor *x = NULL, *y = NULL, *l = NULL;
    ck_assert_int_eq(fw_tensor_from_doubles(&x, xv, FW_FLOAT32, xs, 4), 0);
    fw_tensor_set_stop_gradient(x, false);
    ck_assert_int_eq(fw_max_pool2d(&y, NULL, x, k, NULL, NULL, false), 0);
    double ey[2] = {7, 6};
    ck_assert(fw_expect_close(y, ey, 2, 0, 0));
    ck_assert_int_eq(fw_sum(&l, y, NULL, 0, false), 0);
    ck_assert_int_eq(fw_tensor_backward(l, NULL, false), 0);
    double eg[8] = {0, 0, 0, 0, 1, 0, 0, 1};
    ck_assert(fw_expect_close(fw_tensor_grad(x), eg, 8, 0, 0));
    fw_tensor *ts[] = {x, y, l};
    nn_unref_all(ts, 3);
}
END_TEST

START_TEST(max_pool2d_propagates_nan)
{
    /* a NaN anywhere in a window wins, at the interior and at the padded
     * edge, like Paddle and PyTorch */
    double xv[16] = {1, 2, 3, 4, 5, NAN, 7, 8, 9, 10, 11, 12, 13, 14, 15, NAN};
    int64_t xs[4] = {1, 1, 4, 4}, k[2] = {2, 2}, s2[2] = {2, 2}, p1[2] = {1, 1};
    fw_tensor *x = NULL, *y = NULL, *m = NULL;
    ck_assert_int_eq(fw_tensor_from_doubles(&x, xv, FW_FLOAT32, xs, 4), 0);
    ck_assert_int_eq(fw_max_pool2d(&y, &m, x, k, s2, NULL, false), 0);
    double e[4] = {NAN, 8, 14, NAN};
    ck_assert_msg(fw_expect_close(y, e, 4, 0, 0), "%s", fw_error_last());
    const int64_t *mi = fw_tensor_data(m);
    ck_assert_int_eq(mi[0], 5);
    ck_assert_int_eq(mi[3], 15);
    fw_tensor_unref(y);
    fw_tensor_unref(m);
    ck_assert_int_eq(fw_max_pool2d(&y, &m, x, k, s2, p1, false), 0);
    double e2[9] = {1, 3, 4, 9, NAN, 12, 13, 15, NAN};
    ck_assert_msg(fw_expect_close(y, e2, 9, 0, 0), "%s", fw_error_last());
    fw_tensor *ts[] = {x, y, m};
    nn_unref_all(ts, 3);
}
END_TEST

static void adaptive_ref(double *y, const double *x, int64_t P, int64_t H, int64_t W, int64_t OH,
                         int64_t OW)
{
    for (int64_t p = 0; p < P; p++)
        for (int64_t i = 0; i < OH; i++)
            for (int64_t j = 0; j < OW; j++) {
                int64_t hs = (int64_t)floor((double)(i * H) / (double)OH);
                int64_t he = (int64_t)ceil((double)((i + 1) * H) / (double)OH);
                int64_t ws = (int64_t)floor((double)(j * W) / (double)OW);
                int64_t we = (int64_t)ceil((double)((j + 1) * W) / (double)OW);
                double s = 0;
                for (int64_t h = hs; h < he; h++)
                    for (int64_t w = ws; w < we; w++)
                        s += x[(p * H + h) * W + w];
                y[(p * OH + i) * OW + j] = s / (double)((he - hs) * (we - ws));
            }
}

START_TEST(adaptive_avg_pool2d_matches_paddle_bins)
{
    uint64_t st = 23;
    for (int trial = 0; trial < 12; trial++) {
        int64_t N = nn_randint(&st, 1, 2), C = nn_randint(&st, 1, 3);
        int64_t H = nn_randint(&st, 1, 9), W = nn_randint(&st, 1, 9);
        int64_t os[2] = {nn_randint(&st, 1, 5), nn_randint(&st, 1, 5)};
        int64_t xs[4] = {N, C, H, W}, ys[4] = {N, C, os[0], os[1]}, n = N * C * os[0] * os[1];
        fw_tensor *x64 = nn_rand(FW_FLOAT64, xs, 4, trial, false);
        double *x = fw_test_doubles(x64, NULL), *ref = malloc(sizeof(double) * (size_t)n);
        adaptive_ref(ref, x, N * C, H, W, os[0], os[1]);
        for (int d = 0; d < NN_DTYPES; d++) {
            fw_tensor *xx = nn_as(x64, nn_dtypes[d], false), *y = NULL;
            ck_assert_int_eq(fw_adaptive_avg_pool2d(&y, xx, os), 0);
            ck_assert(fw_expect_shape(y, ys, 4));
            NN_EXPECT_CLOSE(y, ref, n, nn_dtypes[d]);
            fw_tensor_unref(xx);
            fw_tensor_unref(y);
        }
        free(x);
        free(ref);
        fw_tensor_unref(x64);
    }
}
END_TEST

static int adaptive_fn(fw_tensor **out, fw_tensor *const *in, void *ctx)
{
    int64_t os[2] = {3, 2};
    (void)ctx;
    return fw_adaptive_avg_pool2d(out, in[0], os);
}

START_TEST(adaptive_avg_pool2d_backward_matches_finite_differences)
{
    int64_t xs[4] = {2, 2, 5, 7};
    fw_tensor *x = nn_rand(FW_FLOAT64, xs, 4, 9, true);
    NN_GRADCHECK(adaptive_fn, NULL, 1, &x);
    fw_tensor_unref(x);
}
END_TEST

static int pool1d_fn(fw_tensor **out, fw_tensor *const *in, void *ctx)
{
    int kind = *(int *)ctx;
    if (kind == 0)
        return fw_max_pool1d(out, NULL, in[0], 3, 2, 1, true);
    if (kind == 1)
        return fw_avg_pool1d(out, in[0], 3, 2, 1, false, true);
    return fw_adaptive_avg_pool1d(out, in[0], 4);
}

START_TEST(pool1d_matches_2d_pooling_and_gradients)
{
    int64_t xs[3] = {2, 3, 10}, x4[4] = {2, 3, 1, 10};
    fw_tensor *x = nn_rand(FW_FLOAT64, xs, 3, 5, true), *x2 = NULL;
    ck_assert_int_eq(fw_reshape(&x2, x, x4, 4), 0);
    for (int kind = 0; kind < 3; kind++) {
        fw_tensor *y1 = NULL, *y2 = NULL;
        int64_t k[2] = {1, 3}, s[2] = {1, 2}, p[2] = {0, 1}, os[2] = {1, 4};
        ck_assert_int_eq(pool1d_fn(&y1, &x, &kind), 0);
        if (kind == 0)
            ck_assert_int_eq(fw_max_pool2d(&y2, NULL, x2, k, s, p, true), 0);
        else if (kind == 1)
            ck_assert_int_eq(fw_avg_pool2d(&y2, x2, k, s, p, false, true), 0);
        else
            ck_assert_int_eq(fw_adaptive_avg_pool2d(&y2, x2, os), 0);
        ck_assert_int_eq(fw_tensor_ndim(y1), 3);
        int64_t n;
        double *r = fw_test_doubles(y2, &n);
        ck_assert(fw_expect_close(y1, r, n, 0, 0));
        free(r);
        NN_GRADCHECK(pool1d_fn, &kind, 1, &x);
        fw_tensor_unref(y1);
        fw_tensor_unref(y2);
    }
    fw_tensor_unref(x);
    fw_tensor_unref(x2);
}
END_TEST

START_TEST(pool_errors_name_rank_and_kernel)
{
    int64_t xs[3] = {1, 2, 3}, x4[4] = {1, 1, 2, 2}, k[2] = {3, 3}, k0[2] = {0, 1};
    fw_tensor *x = nn_rand(FW_FLOAT32, xs, 3, 1, false), *x2 = nn_rand(FW_FLOAT32, x4, 4, 1, false);
    fw_tensor *y = NULL;
    int64_t os[2] = {0, 1};
    NN_EXPECT_ERR(fw_max_pool2d(&y, NULL, x, k, NULL, NULL, false), FW_ESHAPE,
                  "x must be 4-D [N, C, H, W], got [1, 2, 3]");
    NN_EXPECT_ERR(fw_avg_pool2d(&y, x2, k, NULL, NULL, false, true), FW_ESHAPE,
                  "kernel 3 is larger than the padded height 2");
    NN_EXPECT_ERR(fw_max_pool2d(&y, NULL, x2, k0, NULL, NULL, false), FW_EINVAL, "kernel");
    NN_EXPECT_ERR(fw_adaptive_avg_pool2d(&y, x2, os), FW_EINVAL, "output_size");
    NN_EXPECT_ERR(fw_max_pool1d(&y, NULL, x2, 2, 0, 0, false), FW_ESHAPE, "x must be 3-D");
    ck_assert_ptr_null(y);
    fw_tensor_unref(x);
    fw_tensor_unref(x2);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("nn_pool");
    TCase *tc = tcase_create("pool");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, pool2d_forward_matches_naive_reference);
    tcase_add_test(tc, avg_pool2d_exclusive_and_inclusive_hand_values);
    tcase_add_test(tc, pool2d_backward_matches_finite_differences);
    tcase_add_test(tc, max_pool2d_backward_routes_to_the_maximum);
    tcase_add_test(tc, max_pool2d_propagates_nan);
    tcase_add_test(tc, adaptive_avg_pool2d_matches_paddle_bins);
    tcase_add_test(tc, adaptive_avg_pool2d_backward_matches_finite_differences);
    tcase_add_test(tc, pool1d_matches_2d_pooling_and_gradients);
    tcase_add_test(tc, pool_errors_name_rank_and_kernel);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(suite());
    int failed;
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? 0 : 1;
}
