/*
 * test_nn_conv.c - linear, conv1d and conv2d: forward against naive float64
 * loops, backward against finite differences, error paths.
 */
#include "test_nn_util.h"

/* ---- linear ---- */

START_TEST(linear_forward_matches_naive_reference)
{
    uint64_t st = 11;
    for (int trial = 0; trial < 6; trial++) {
        int64_t B = nn_randint(&st, 1, 5), T = nn_randint(&st, 1, 3);
        int64_t K = nn_randint(&st, 1, 9), N = nn_randint(&st, 1, 7);
        int64_t xs[3] = {B, T, K}, ws[2] = {K, N}, bs[1] = {N};
        fw_tensor *x64 = nn_rand(FW_FLOAT64, xs, 3, 100 + trial, false);
        fw_tensor *w64 = nn_rand(FW_FLOAT64, ws, 2, 200 + trial, false);
        fw_tensor *b64 = nn_rand(FW_FLOAT64, bs, 1, 300 + trial, false);
        double *x = fw_test_doubles(x64, NULL), *w = fw_test_doubles(w64, NULL);
        double *b = fw_test_doubles(b64, NULL);
        double *ref = malloc(sizeof(double) * (size_t)(B * T * N));
        int use_bias = trial % 2;
        for (int64_t m = 0; m < B * T; m++)
            for (int64_t j = 0; j < N; j++) {
                double s = use_bias ? b[j] : 0;
                for (int64_t k = 0; k < K; k++)
                    s += x[m * K + k] * w[k * N + j];
                ref[m * N + j] = s;
            }
        for (int d = 0; d < NN_DTYPES; d++) {
            fw_tensor *xx = nn_as(x64, nn_dtypes[d], false), *ww = nn_as(w64, nn_dtypes[d], false);
            fw_tensor *bb = nn_as(b64, nn_dtypes[d], false), *y = NULL;
            int64_t ys[3] = {B, T, N};
            ck_assert_int_eq(fw_linear(&y, xx, ww, use_bias ? bb : NULL), 0);
            ck_assert(fw_expect_shape(y, ys, 3));
            NN_EXPECT_CLOSE(y, ref, B * T * N, nn_dtypes[d]);
            fw_tensor *ts[] = {xx, ww, bb, y};
            nn_unref_all(ts, 4);
        }
        free(x);
        free(w);
        free(b);
        free(ref);
        fw_tensor *ts[] = {x64, w64, b64};
        nn_unref_all(ts, 3);
    }
}
END_TEST

static int linear_fn(fw_tensor **out, fw_tensor *const *in, void *ctx)
{
    (void)ctx;
    return fw_linear(out, in[0], in[1], in[2]);
}

/* x is given as [K, M] and transposed inside: a non-contiguous input. */
static int linear_t_fn(fw_tensor **out, fw_tensor *const *in, void *ctx)
{
    fw_tensor *xt = NULL;
    int perm[2] = {1, 0}, err;
    (void)ctx;
    if ((err = fw_transpose(&xt, in[0], perm, 2)) < 0)
        return err;
    err = fw_linear(out, xt, in[1], in[2]);
    fw_tensor_unref(xt);
    return err;
}

START_TEST(linear_backward_matches_finite_differences)
{
    int64_t xs[2] = {4, 5}, xts[2] = {5, 4}, ws[2] = {5, 3}, bs[1] = {3};
    fw_tensor *in[3] = {nn_rand(FW_FLOAT64, xs, 2, 1, true), nn_rand(FW_FLOAT64, ws, 2, 2, true),
                        nn_rand(FW_FLOAT64, bs, 1, 3, true)};
    NN_GRADCHECK(linear_fn, NULL, 3, in);
    fw_tensor_unref(in[0]);
    in[0] = nn_rand(FW_FLOAT64, xts, 2, 4, true);
    NN_GRADCHECK(linear_t_fn, NULL, 3, in);
    nn_unref_all(in, 3);
}
END_TEST

START_TEST(linear_float32_gradients_match_float64)
{
    int64_t xs[2] = {6, 7}, ws[2] = {7, 5}, bs[1] = {5};
    fw_tensor *x = nn_rand(FW_FLOAT64, xs, 2, 5, true), *w = nn_rand(FW_FLOAT64, ws, 2, 6, true);
    fw_tensor *b = nn_rand(FW_FLOAT64, bs, 1, 7, true);
    fw_tensor *x32 = nn_as(x, FW_FLOAT32, true), *w32 = nn_as(w, FW_FLOAT32, true);
    fw_tensor *b32 = nn_as(b, FW_FLOAT32, true);
    fw_tensor *y = NULL, *y32 = NULL, *l = NULL, *l32 = NULL;
    ck_assert_int_eq(fw_linear(&y, x, w, b), 0);
    ck_assert_int_eq(fw_linear(&y32, x32, w32, b32), 0);
    ck_assert_int_eq(fw_sum(&l, y, NULL, 0, false), 0);
    ck_assert_int_eq(fw_sum(&l32, y32, NULL, 0, false), 0);
    ck_assert_int_eq(fw_tensor_backward(l, NULL, false), 0);
    ck_assert_int_eq(fw_tensor_backward(l32, NULL, false), 0);
    fw_tensor *p64[3] = {x, w, b}, *p32[3] = {x32, w32, b32};
    for (int i = 0; i < 3; i++) {
        int64_t n;
        double *g = fw_test_doubles(fw_tensor_grad(p64[i]), &n);
        NN_EXPECT_CLOSE(fw_tensor_grad(p32[i]), g, n, FW_FLOAT32);
        free(g);
    }
    fw_tensor *ts[] = {x, w, b, x32, w32, b32, y, y32, l, l32};
    nn_unref_all(ts, 10);
}
END_TEST

START_TEST(linear_rejects_bad_shapes_and_dtypes)
{
    int64_t xs[2] = {2, 3}, ws[2] = {4, 5}, bs[1] = {6};
    fw_tensor *x = nn_rand(FW_FLOAT32, xs, 2, 1, false), *w = nn_rand(FW_FLOAT32, ws, 2, 2, false);
    fw_tensor *w64 = nn_rand(FW_FLOAT64, xs, 2, 2, false), *y = NULL;
    fw_tensor *b = nn_rand(FW_FLOAT32, bs, 1, 3, false), *i = NULL;
    int64_t ws2[2] = {3, 5};
    fw_tensor *w2 = nn_rand(FW_FLOAT32, ws2, 2, 4, false);
    NN_EXPECT_ERR(fw_linear(&y, x, w, NULL), FW_ESHAPE, "[2, 3]");
    ck_assert_ptr_null(y);
    NN_EXPECT_ERR(fw_linear(&y, x, w2, b), FW_ESHAPE, "bias must be [5]");
    NN_EXPECT_ERR(fw_linear(&y, x, w64, NULL), FW_EDTYPE, "float64");
    ck_assert_int_eq(fw_zeros(&i, FW_INT64, xs, 2), 0);
    NN_EXPECT_ERR(fw_linear(&y, i, w2, NULL), FW_EDTYPE, "int64");
    fw_tensor *ts[] = {x, w, w64, b, w2, i};
    nn_unref_all(ts, 6);
}
END_TEST

/* ---- conv2d ---- */

typedef struct conv_case {
    int64_t N, C, H, W, OC, KH, KW, sh, sw, pt, pb, pl, pr, dh, dw, groups;
    int bias;
} conv_case;

static void conv_out(const conv_case *c, int64_t *OH, int64_t *OW)
{
    *OH = (c->H + c->pt + c->pb - c->dh * (c->KH - 1) - 1) / c->sh + 1;
    *OW = (c->W + c->pl + c->pr - c->dw * (c->KW - 1) - 1) / c->sw + 1;
}

static void conv_ref(double *y, const double *x, const double *w, const double *b,
                     const conv_case *c)
{
    int64_t OH, OW, Cg = c->C / c->groups, OCg = c->OC / c->groups;
    conv_out(c, &OH, &OW);
    for (int64_t n = 0; n < c->N; n++)
        for (int64_t oc = 0; oc < c->OC; oc++)
            for (int64_t oh = 0; oh < OH; oh++)
                for (int64_t ow = 0; ow < OW; ow++) {
                    double s = c->bias ? b[oc] : 0;
                    int64_t g = oc / OCg;
                    for (int64_t ci = 0; ci < Cg; ci++)
                        for (int64_t kh = 0; kh < c->KH; kh++)
                            for (int64_t kw = 0; kw < c->KW; kw++) {
                                int64_t ih = oh * c->sh - c->pt + kh * c->dh;
                                int64_t iw = ow * c->sw - c->pl + kw * c->dw;
                                if (ih < 0 || ih >= c->H || iw < 0 || iw >= c->W)
                                    continue;
                                s += x[((n * c->C + g * Cg + ci) * c->H + ih) * c->W + iw] *
                                     w[((oc * Cg + ci) * c->KH + kh) * c->KW + kw];
                            }
                    y[((n * c->OC + oc) * OH + oh) * OW + ow] = s;
                }
}

static conv_case conv_random(uint64_t *st, int small)
{
    conv_case c;
    c.groups = nn_randint(st, 1, 2);
    c.N = nn_randint(st, 1, small ? 2 : 4);
    c.C = c.groups * nn_randint(st, 1, small ? 2 : 3);
    c.OC = c.groups * nn_randint(st, 1, small ? 2 : 3);
    c.KH = nn_randint(st, 1, 3);
    c.KW = nn_randint(st, 1, 3);
    c.sh = nn_randint(st, 1, 2);
    c.sw = nn_randint(st, 1, 3);
    c.dh = nn_randint(st, 1, 2);
    c.dw = nn_randint(st, 1, 2);
    c.pt = nn_randint(st, 0, 2);
    c.pb = nn_randint(st, 0, 1);
    c.pl = nn_randint(st, 0, 1);
    c.pr = nn_randint(st, 0, 2);
    c.H = c.dh * (c.KH - 1) + nn_randint(st, 1, small ? 3 : 6);
    c.W = c.dw * (c.KW - 1) + nn_randint(st, 1, small ? 3 : 7);
    c.bias = nn_randint(st, 0, 1);
    return c;
}

static int conv2d_call(fw_tensor **y, fw_tensor *x, fw_tensor *w, fw_tensor *b,
                       const conv_case *c)
{
    int64_t stride[2] = {c->sh, c->sw}, pad[4] = {c->pt, c->pb, c->pl, c->pr};
    int64_t dil[2] = {c->dh, c->dw};
    return fw_conv2d(y, x, w, c->bias ? b : NULL, stride, pad, dil, c->groups);
}

START_TEST(conv2d_forward_matches_naive_reference)
{
    uint64_t st = 42;
    for (int trial = 0; trial < 25; trial++) {
        conv_case c = conv_random(&st, 0);
        int64_t OH, OW;
        if (trial == 0) { /* a pointwise convolution takes the no-im2col path */
            c.KH = c.KW = c.sh = c.sw = c.dh = c.dw = 1;
            c.pt = c.pb = c.pl = c.pr = 0;
        }
        if (trial == 1 || trial == 2) { /* "same" padding: the block-copy im2col path */
            c.sh = c.sw = 1;
            c.KW = 3;
            c.dw = trial;
            c.pl = c.pr = trial;
            c.KH = 3;
            c.dh = 1;
            c.pt = 2; /* asymmetric: rows shift more than columns */
            c.pb = 0;
            c.W = 6;
            c.H = 5;
        }
        if (trial == 3) { /* depthwise, MobileNet style */
            c.groups = c.C = 4;
            c.OC = 8;
        }
        conv_out(&c, &OH, &OW);
        int64_t xs[4] = {c.N, c.C, c.H, c.W}, ws[4] = {c.OC, c.C / c.groups, c.KH, c.KW};
        int64_t bs[1] = {c.OC}, ys[4] = {c.N, c.OC, OH, OW};
        fw_tensor *x64 = nn_rand(FW_FLOAT64, xs, 4, 10 + trial, false);
        fw_tensor *w64 = nn_rand(FW_FLOAT64, ws, 4, 20 + trial, false);
        fw_tensor *b64 = nn_rand(FW_FLOAT64, bs, 1, 30 + trial, false);
        double *x = fw_test_doubles(x64, NULL), *w = fw_test_doubles(w64, NULL);
        double *b = fw_test_doubles(b64, NULL);
        double *ref = malloc(sizeof(double) * (size_t)(c.N * c.OC * OH * OW));
        conv_ref(ref, x, w, b, &c);
        for (int d = 0; d < NN_DTYPES; d++) {
            fw_tensor *xx = nn_as(x64, nn_dtypes[d], false), *ww = nn_as(w64, nn_dtypes[d], false);
            fw_tensor *bb = nn_as(b64, nn_dtypes[d], false), *y = NULL;
            ck_assert_msg(conv2d_call(&y, xx, ww, bb, &c) == 0, "%s", fw_error_last());
            ck_assert(fw_expect_shape(y, ys, 4));
            NN_EXPECT_CLOSE(y, ref, c.N * c.OC * OH * OW, nn_dtypes[d]);
            fw_tensor *ts[] = {xx, ww, bb, y};
            nn_unref_all(ts, 4);
        }
        free(x);
        free(w);
        free(b);
        free(ref);
        fw_tensor *ts[] = {x64, w64, b64};
        nn_unref_all(ts, 3);
    }
}
END_TEST

static int conv2d_fn(fw_tensor **out, fw_tensor *const *in, void *ctx)
{
    return conv2d_call(out, in[0], in[1], in[2], ctx);
}

START_TEST(conv2d_backward_matches_finite_differences)
{
    uint64_t st = 7;
    for (int trial = 0; trial < 6; trial++) {
        conv_case c = conv_random(&st, 1);
        c.bias = 1;
        if (trial >= 4) /* several samples per pool task: batched gemm panels */
            c.N = 7;
        if (trial == 3) { /* "same" padding, block-copy im2col */
            c.sh = c.sw = c.dh = c.dw = 1;
            c.KH = c.KW = 3;
            c.pt = c.pb = c.pl = c.pr = 1;
            c.H = 4;
            c.W = 5;
        }
        int64_t xs[4] = {c.N, c.C, c.H, c.W}, ws[4] = {c.OC, c.C / c.groups, c.KH, c.KW};
        int64_t bs[1] = {c.OC};
        fw_tensor *in[3] = {nn_rand(FW_FLOAT64, xs, 4, 50 + trial, true),
                            nn_rand(FW_FLOAT64, ws, 4, 60 + trial, true),
                            nn_rand(FW_FLOAT64, bs, 1, 70 + trial, true)};
        NN_GRADCHECK(conv2d_fn, &c, 3, in);
        nn_unref_all(in, 3);
    }
}
END_TEST

/* x is passed as [N, C, W, H] and swapped inside: a strided input. */
static int conv2d_swapped_fn(fw_tensor **out, fw_tensor *const *in, void *ctx)
{
    fw_tensor *xt = NULL;
    int err;
    if ((err = fw_swapaxes(&xt, in[0], 2, 3)) < 0)
        return err;
    err = conv2d_call(out, xt, in[1], in[2], ctx);
    fw_tensor_unref(xt);
    return err;
}

START_TEST(conv2d_backward_through_non_contiguous_input)
{
    conv_case c = {2, 2, 5, 4, 3, 3, 2, 1, 2, 1, 0, 1, 1, 1, 1, 1, 1};
    int64_t xs[4] = {c.N, c.C, c.W, c.H}, ws[4] = {c.OC, c.C, c.KH, c.KW}, bs[1] = {c.OC};
    fw_tensor *in[3] = {nn_rand(FW_FLOAT64, xs, 4, 1, true), nn_rand(FW_FLOAT64, ws, 4, 2, true),
                        nn_rand(FW_FLOAT64, bs, 1, 3, true)};
    NN_GRADCHECK(conv2d_swapped_fn, &c, 3, in);
    nn_unref_all(in, 3);
}
END_TEST

START_TEST(conv2d_float32_gradients_match_float64)
{
    uint64_t st = 99;
    conv_case c = conv_random(&st, 0);
    c.N = 5; /* several samples per pool task, so the weight partials are summed */
    c.bias = 1;
    int64_t xs[4] = {c.N, c.C, c.H, c.W}, ws[4] = {c.OC, c.C / c.groups, c.KH, c.KW};
    int64_t bs[1] = {c.OC};
    fw_tensor *p64[3] = {nn_rand(FW_FLOAT64, xs, 4, 1, true), nn_rand(FW_FLOAT64, ws, 4, 2, true),
                         nn_rand(FW_FLOAT64, bs, 1, 3, true)};
    fw_tensor *p32[3], *y[2] = {NULL, NULL}, *l[2] = {NULL, NULL};
    for (int i = 0; i < 3; i++)
        p32[i] = nn_as(p64[i], FW_FLOAT32, true);
    ck_assert_int_eq(conv2d_call(&y[0], p64[0], p64[1], p64[2], &c), 0);
    ck_assert_int_eq(conv2d_call(&y[1], p32[0], p32[1], p32[2], &c), 0);
    for (int i = 0; i < 2; i++) {
        ck_assert_int_eq(fw_sum(&l[i], y[i], NULL, 0, false), 0);
        ck_assert_int_eq(fw_tensor_backward(l[i], NULL, false), 0);
    }
    for (int i = 0; i < 3; i++) {
        int64_t n;
        double *g = fw_test_doubles(fw_tensor_grad(p64[i]), &n);
        ck_assert_msg(fw_expect_close(fw_tensor_grad(p32[i]), g, n, 1e-3, 1e-3), "%s",
                      fw_error_last());
        free(g);
    }
    nn_unref_all(p64, 3);
    nn_unref_all(p32, 3);
    nn_unref_all(y, 2);
    nn_unref_all(l, 2);
}
END_TEST

START_TEST(conv2d_errors_name_rank_channels_and_groups)
{
    int64_t xs[4] = {2, 3, 5, 5}, x3[3] = {2, 3, 5}, ws[4] = {4, 4, 3, 3}, wg[4] = {4, 3, 3, 3};
    int64_t big[4] = {4, 3, 7, 7};
    fw_tensor *x = nn_rand(FW_FLOAT32, xs, 4, 1, false), *xr = nn_rand(FW_FLOAT32, x3, 3, 2, false);
    fw_tensor *w = nn_rand(FW_FLOAT32, ws, 4, 3, false), *wok = nn_rand(FW_FLOAT32, wg, 4, 4, false);
    fw_tensor *wbig = nn_rand(FW_FLOAT32, big, 4, 5, false), *y = NULL;
    int64_t st0[2] = {0, 1};
    NN_EXPECT_ERR(fw_conv2d(&y, xr, wok, NULL, NULL, NULL, NULL, 1), FW_ESHAPE,
                  "x must be 4-D [N, C, H, W], got [2, 3, 5]");
    NN_EXPECT_ERR(fw_conv2d(&y, x, w, NULL, NULL, NULL, NULL, 1), FW_ESHAPE,
                  "x has 3 channels but weight expects 4");
    NN_EXPECT_ERR(fw_conv2d(&y, x, wok, NULL, NULL, NULL, NULL, 2), FW_ESHAPE, "groups 2");
    NN_EXPECT_ERR(fw_conv2d(&y, x, wok, NULL, NULL, NULL, NULL, 0), FW_EINVAL, "groups");
    NN_EXPECT_ERR(fw_conv2d(&y, x, wok, NULL, st0, NULL, NULL, 1), FW_EINVAL, "stride");
    NN_EXPECT_ERR(fw_conv2d(&y, x, wbig, NULL, NULL, NULL, NULL, 1), FW_ESHAPE,
                  "smaller than the dilated kernel");
    ck_assert_ptr_null(y);
    fw_tensor *ts[] = {x, xr, w, wok, wbig};
    nn_unref_all(ts, 5);
}
END_TEST

/* ---- conv1d ---- */

START_TEST(conv1d_matches_conv2d_reference_and_gradients)
{
    uint64_t st = 5;
    for (int trial = 0; trial < 8; trial++) {
        conv_case c = conv_random(&st, 1);
        c.H = c.KH = c.sh = c.dh = 1;
        c.pt = c.pb = 0;
        int64_t OH, OW;
        conv_out(&c, &OH, &OW);
        int64_t xs[3] = {c.N, c.C, c.W}, ws[3] = {c.OC, c.C / c.groups, c.KW}, bs[1] = {c.OC};
        fw_tensor *x = nn_rand(FW_FLOAT64, xs, 3, 1 + trial, true);
        fw_tensor *w = nn_rand(FW_FLOAT64, ws, 3, 2 + trial, true);
        fw_tensor *b = nn_rand(FW_FLOAT64, bs, 1, 3 + trial, true), *y = NULL;
        double *xd = fw_test_doubles(x, NULL), *wd = fw_test_doubles(w, NULL);
        double *bd = fw_test_doubles(b, NULL), *ref = malloc(sizeof(double) * (size_t)(c.N * c.OC * OW));
        int64_t pad[2] = {c.pl, c.pr}, ys[3] = {c.N, c.OC, OW};
        conv_ref(ref, xd, wd, bd, &c);
        for (int d = 0; d < NN_DTYPES; d++) {
            fw_tensor *xx = nn_as(x, nn_dtypes[d], false), *ww = nn_as(w, nn_dtypes[d], false);
            fw_tensor *bb = nn_as(b, nn_dtypes[d], false);
            ck_assert_msg(fw_conv1d(&y, xx, ww, c.bias ? bb : NULL, c.sw, pad, c.dw, c.groups) == 0,
                          "%s", fw_error_last());
            ck_assert(fw_expect_shape(y, ys, 3));
            NN_EXPECT_CLOSE(y, ref, c.N * c.OC * OW, nn_dtypes[d]);
            fw_tensor *ts[] = {xx, ww, bb, y};
            nn_unref_all(ts, 4);
        }
        free(xd);
        free(wd);
        free(bd);
        free(ref);
        fw_tensor *ts[] = {x, w, b};
        nn_unref_all(ts, 3);
    }
}
END_TEST

static int conv1d_fn(fw_tensor **out, fw_tensor *const *in, void *ctx)
{
    int64_t pad[2] = {1, 2};
    (void)ctx;
    return fw_conv1d(out, in[0], in[1], in[2], 2, pad, 2, 1);
}

START_TEST(conv1d_backward_matches_finite_differences)
{
    int64_t xs[3] = {2, 3, 9}, ws[3] = {2, 3, 3}, bs[1] = {2};
    fw_tensor *in[3] = {nn_rand(FW_FLOAT64, xs, 3, 1, true), nn_rand(FW_FLOAT64, ws, 3, 2, true),
                        nn_rand(FW_FLOAT64, bs, 1, 3, true)};
    NN_GRADCHECK(conv1d_fn, NULL, 3, in);
    nn_unref_all(in, 3);
}
END_TEST

START_TEST(conv1d_rejects_wrong_rank)
{
    int64_t xs[4] = {1, 2, 3, 4}, ws[3] = {2, 2, 1};
    fw_tensor *x = nn_rand(FW_FLOAT32, xs, 4, 1, false), *w = nn_rand(FW_FLOAT32, ws, 3, 2, false);
    fw_tensor *y = NULL;
    NN_EXPECT_ERR(fw_conv1d(&y, x, w, NULL, 1, NULL, 1, 1), FW_ESHAPE, "x must be 3-D [N, C, L]");
    fw_tensor_unref(x);
    fw_tensor_unref(w);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("nn_conv");
    TCase *tc = tcase_create("conv");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, linear_forward_matches_naive_reference);
    tcase_add_test(tc, linear_backward_matches_finite_differences);
    tcase_add_test(tc, linear_float32_gradients_match_float64);
    tcase_add_test(tc, linear_rejects_bad_shapes_and_dtypes);
    tcase_add_test(tc, conv2d_forward_matches_naive_reference);
    tcase_add_test(tc, conv2d_backward_matches_finite_differences);
    tcase_add_test(tc, conv2d_backward_through_non_contiguous_input);
    tcase_add_test(tc, conv2d_float32_gradients_match_float64);
    tcase_add_test(tc, conv2d_errors_name_rank_channels_and_groups);
    tcase_add_test(tc, conv1d_matches_conv2d_reference_and_gradients);
    tcase_add_test(tc, conv1d_backward_matches_finite_differences);
    tcase_add_test(tc, conv1d_rejects_wrong_rank);
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
