/*
 * test_nn_norm.c - batch_norm, layer_norm, dropout and embedding: forward
 * against float64 loops, running statistics, backward against finite
 * differences, error paths.
 */
#include "test_nn_util.h"

/* x [N, C, L] -> y with batch statistics (biased var); mean/var out */
static void bn_ref(double *y, double *mean, double *var, const double *x, const double *w,
                   const double *b, int64_t N, int64_t C, int64_t L, double eps)
{
    for (int64_t c = 0; c < C; c++) {
        double s = 0, ss = 0;
        for (int64_t n = 0; n < N; n++)
            for (int64_t l = 0; l < L; l++)
                s += x[(n * C + c) * L + l];
        mean[c] = s / (double)(N * L);
        for (int64_t n = 0; n < N; n++)
            for (int64_t l = 0; l < L; l++) {
                double d = x[(n * C + c) * L + l] - mean[c];
                ss += d * d;
            }
        var[c] = ss / (double)(N * L);
        for (int64_t n = 0; n < N; n++)
            for (int64_t l = 0; l < L; l++) {
                int64_t i = (n * C + c) * L + l;
                y[i] = (x[i] - mean[c]) / sqrt(var[c] + eps) * (w ? w[c] : 1) + (b ? b[c] : 0);
            }
    }
}

START_TEST(batch_norm_training_normalises_and_updates_running_stats)
{
    uint64_t st = 1;
    for (int trial = 0; trial < 8; trial++) {
        int four = trial % 2;
        int64_t N = nn_randint(&st, 2, 5), C = nn_randint(&st, 1, 4);
        int64_t H = four ? nn_randint(&st, 1, 4) : 1, W = four ? nn_randint(&st, 1, 4) : 1;
        int64_t xs[4] = {N, C, H, W}, cs[1] = {C}, L = H * W, n = N * C * L;
        fw_tensor *x64 = fw_test_rand_range(FW_FLOAT64, xs, four ? 4 : 2, trial, -2, 3, false);
        fw_tensor *w64 = nn_rand(FW_FLOAT64, cs, 1, 10 + trial, false);
        fw_tensor *b64 = nn_rand(FW_FLOAT64, cs, 1, 20 + trial, false);
        fw_tensor *rm64 = nn_rand(FW_FLOAT64, cs, 1, 30 + trial, false);
        fw_tensor *rv64 = fw_test_rand_range(FW_FLOAT64, cs, 1, 40 + trial, 0.5, 2, false);
        double *x = fw_test_doubles(x64, NULL), *w = fw_test_doubles(w64, NULL);
        double *b = fw_test_doubles(b64, NULL), *rm = fw_test_doubles(rm64, NULL);
        double *rv = fw_test_doubles(rv64, NULL);
        double *ref = malloc(sizeof(double) * (size_t)n), *mean = malloc(sizeof(double) * (size_t)C);
        double *var = malloc(sizeof(double) * (size_t)C), *erm = malloc(sizeof(double) * (size_t)C);
        double *erv = malloc(sizeof(double) * (size_t)C);
        bn_ref(ref, mean, var, x, w, b, N, C, L, 1e-5);
        for (int64_t c = 0; c < C; c++) {
            /* Paddle: running = 0.9*running + 0.1*batch, unbiased variance */
            erm[c] = 0.9 * rm[c] + 0.1 * mean[c];
            erv[c] = 0.9 * rv[c] + 0.1 * var[c] * (double)(N * L) / (double)(N * L - 1);
        }
        for (int d = 0; d < NN_DTYPES; d++) {
            fw_dtype dt = nn_dtypes[d];
            fw_tensor *xx = nn_as(x64, dt, false), *ww = nn_as(w64, dt, false);
            fw_tensor *bb = nn_as(b64, dt, false), *rmt = nn_as(rm64, dt, false);
            fw_tensor *rvt = nn_as(rv64, dt, false), *y = NULL;
            ck_assert_msg(fw_batch_norm(&y, xx, rmt, rvt, ww, bb, true, 0.9, 1e-5) == 0, "%s",
                          fw_error_last());
            NN_EXPECT_CLOSE(y, ref, n, dt);
            NN_EXPECT_CLOSE(rmt, erm, C, dt);
            NN_EXPECT_CLOSE(rvt, erv, C, dt);
            fw_tensor *ts[] = {xx, ww, bb, rmt, rvt, y};
            nn_unref_all(ts, 6);
        }
        free(x); free(w); free(b); free(rm); free(rv);
        free(ref); free(mean); free(var); free(erm); free(erv);
        fw_tensor *ts[] = {x64, w64, b64, rm64, rv64};
        nn_unref_all(ts, 5);
    }
}
END_TEST

START_TEST(batch_norm_inference_uses_running_stats)
{
    double xv[6] = {1, 2, 3, 4, 5, 6}, rmv[3] = {1, 0, -1}, rvv[3] = {4, 1, 0.25};
    double wv[3] = {1, 2, 3}, bv[3] = {0, 1, 0};
    int64_t xs[2] = {2, 3}, cs[1] = {3};
    fw_tensor *x = NULL, *rm = NULL, *rv = NULL, *w = NULL, *b = NULL, *y = NULL;
    ck_assert_int_eq(fw_tensor_from_doubles(&x, xv, FW_FLOAT64, xs, 2), 0);
    ck_assert_int_eq(fw_tensor_from_doubles(&rm, rmv, FW_FLOAT64, cs, 1), 0);
    ck_assert_int_eq(fw_tensor_from_doubles(&rv, rvv, FW_FLOAT64, cs, 1), 0);
    ck_assert_int_eq(fw_tensor_from_doubles(&w, wv, FW_FLOAT64, cs, 1), 0);
    ck_assert_int_eq(fw_tensor_from_doubles(&b, bv, FW_FLOAT64, cs, 1), 0);
    ck_assert_int_eq(fw_batch_norm(&y, x, rm, rv, w, b, false, 0.9, 0), 0);
    double ey[6] = {0, 5, 24, 1.5, 11, 42};
    ck_assert_msg(fw_expect_close(y, ey, 6, 1e-12, 1e-12), "%s", fw_error_last());
    /* inference leaves the running statistics alone */
    ck_assert(fw_expect_close(rm, rmv, 3, 0, 0));
    ck_assert(fw_expect_close(rv, rvv, 3, 0, 0));
    fw_tensor *ts[] = {x, rm, rv, w, b, y};
    nn_unref_all(ts, 6);
}
END_TEST

typedef struct bn_ctx {
    int training;
    fw_tensor *rm, *rv;
} bn_ctx;

static int bn_fn(fw_tensor **out, fw_tensor *const *in, void *vctx)
{
    bn_ctx *c = vctx;
    return fw_batch_norm(out, in[0], c->training ? NULL : c->rm, c->training ? NULL : c->rv,
                         in[1], in[2], c->training, 0.9, 1e-5);
}

START_TEST(batch_norm_backward_matches_finite_differences)
{
    int64_t x4[4] = {3, 2, 2, 3}, x2[2] = {5, 3}, c2[1] = {2}, c3[1] = {3};
    for (int training = 0; training < 2; training++) {
        for (int four = 0; four < 2; four++) {
            int64_t *cs = four ? c2 : c3;
            bn_ctx ctx = {training, nn_rand(FW_FLOAT64, cs, 1, 5, false),
                          fw_test_rand_range(FW_FLOAT64, cs, 1, 6, 0.5, 2, false)};
            fw_tensor *in[3] = {fw_test_rand_range(FW_FLOAT64, four ? x4 : x2, four ? 4 : 2, 1,
                                                   -2, 2, true),
                                nn_rand(FW_FLOAT64, cs, 1, 2, true), nn_rand(FW_FLOAT64, cs, 1, 3, true)};
            NN_GRADCHECK(bn_fn, &ctx, 3, in);
            nn_unref_all(in, 3);
            fw_tensor_unref(ctx.rm);
            fw_tensor_unref(ctx.rv);
        }
    }
}
END_TEST

START_TEST(batch_norm_errors_name_rank_and_channels)
{
    int64_t x1[1] = {4}, xs[2] = {4, 3}, c4[1] = {4}, c3[1] = {3};
    fw_tensor *x = nn_rand(FW_FLOAT32, xs, 2, 1, false), *xr = nn_rand(FW_FLOAT32, x1, 1, 1, false);
    fw_tensor *r4 = nn_rand(FW_FLOAT32, c4, 1, 1, false), *r3 = nn_rand(FW_FLOAT32, c3, 1, 1, false);
    fw_tensor *r64 = nn_rand(FW_FLOAT64, c3, 1, 1, false), *y = NULL;
    NN_EXPECT_ERR(fw_batch_norm(&y, xr, r3, r3, NULL, NULL, true, 0.9, 1e-5), FW_ESHAPE,
                  "x must be 2-D [N, C] or more");
    NN_EXPECT_ERR(fw_batch_norm(&y, x, r4, r3, NULL, NULL, true, 0.9, 1e-5), FW_ESHAPE,
                  "running_mean must be [3] (x has 3 channels), got [4]");
    NN_EXPECT_ERR(fw_batch_norm(&y, x, r3, r3, r4, NULL, false, 0.9, 1e-5), FW_ESHAPE,
                  "weight must be [3]");
    NN_EXPECT_ERR(fw_batch_norm(&y, x, r64, r3, NULL, NULL, false, 0.9, 1e-5), FW_EDTYPE,
                  "running_mean is float64 but the input is float32");
    NN_EXPECT_ERR(fw_batch_norm(&y, x, NULL, NULL, NULL, NULL, false, 0.9, 1e-5), FW_EINVAL,
                  "needed when not training");
    ck_assert_ptr_null(y);
    fw_tensor *ts[] = {x, xr, r4, r3, r64};
    nn_unref_all(ts, 5);
}
END_TEST

/* ---- layer_norm ---- */

START_TEST(layer_norm_forward_matches_naive_reference)
{
    uint64_t st = 8;
    for (int trial = 0; trial < 8; trial++) {
        int64_t xs[3] = {nn_randint(&st, 1, 4), nn_randint(&st, 1, 5), nn_randint(&st, 2, 6)};
        int nn = 1 + trial % 2, use_affine = trial % 3 != 0;
        int64_t D = nn == 1 ? xs[2] : xs[1] * xs[2], M = xs[0] * xs[1] * xs[2] / D;
        fw_tensor *x64 = fw_test_rand_range(FW_FLOAT64, xs, 3, trial, -3, 3, false);
        fw_tensor *w64 = nn_rand(FW_FLOAT64, xs + 3 - nn, nn, 50 + trial, false);
        fw_tensor *b64 = nn_rand(FW_FLOAT64, xs + 3 - nn, nn, 60 + trial, false);
        double *x = fw_test_doubles(x64, NULL), *w = fw_test_doubles(w64, NULL);
        double *b = fw_test_doubles(b64, NULL), *ref = malloc(sizeof(double) * (size_t)(M * D));
        for (int64_t i = 0; i < M; i++) {
            double s = 0, ss = 0, mu, var;
            for (int64_t j = 0; j < D; j++)
                s += x[i * D + j];
            mu = s / (double)D;
            for (int64_t j = 0; j < D; j++)
                ss += (x[i * D + j] - mu) * (x[i * D + j] - mu);
            var = ss / (double)D;
            for (int64_t j = 0; j < D; j++)
                ref[i * D + j] = (x[i * D + j] - mu) / sqrt(var + 1e-5) * (use_affine ? w[j] : 1) +
                                 (use_affine ? b[j] : 0);
        }
        for (int d = 0; d < NN_DTYPES; d++) {
            fw_tensor *xx = nn_as(x64, nn_dtypes[d], false), *ww = nn_as(w64, nn_dtypes[d], false);
            fw_tensor *bb = nn_as(b64, nn_dtypes[d], false), *y = NULL;
            ck_assert_msg(fw_layer_norm(&y, xx, xs + 3 - nn, nn, use_affine ? ww : NULL,
                                        use_affine ? bb : NULL, 1e-5) == 0,
                          "%s", fw_error_last());
            NN_EXPECT_CLOSE(y, ref, M * D, nn_dtypes[d]);
            fw_tensor *ts[] = {xx, ww, bb, y};
            nn_unref_all(ts, 4);
        }
        free(x); free(w); free(b); free(ref);
        fw_tensor *ts[] = {x64, w64, b64};
        nn_unref_all(ts, 3);
    }
}
END_TEST

static int ln_fn(fw_tensor **out, fw_tensor *const *in, void *ctx)
{
    int64_t ns[2] = {3, 4};
    int n = *(int *)ctx;
    return fw_layer_norm(out, in[0], ns + 2 - n, n, in[1], in[2], 1e-5);
}

START_TEST(layer_norm_backward_matches_finite_differences)
{
    int64_t xs[3] = {2, 3, 4};
    for (int n = 1; n <= 2; n++) {
        fw_tensor *in[3] = {nn_rand(FW_FLOAT64, xs, 3, 1, true),
                            nn_rand(FW_FLOAT64, xs + 3 - n, n, 2, true),
                            nn_rand(FW_FLOAT64, xs + 3 - n, n, 3, true)};
        NN_GRADCHECK(ln_fn, &n, 3, in);
        nn_unref_all(in, 3);
    }
}
END_TEST

START_TEST(layer_norm_rejects_mismatched_normalized_shape)
{
    int64_t xs[2] = {2, 3}, ns[1] = {4}, ws[1] = {2};
    fw_tensor *x = nn_rand(FW_FLOAT32, xs, 2, 1, false), *w = nn_rand(FW_FLOAT32, ws, 1, 1, false);
    fw_tensor *y = NULL;
    NN_EXPECT_ERR(fw_layer_norm(&y, x, ns, 1, NULL, NULL, 1e-5), FW_ESHAPE,
                  "normalized_shape [4] must match the trailing dims of x [2, 3]");
    NN_EXPECT_ERR(fw_layer_norm(&y, x, xs + 1, 1, w, NULL, 1e-5), FW_ESHAPE, "3 elements");
    fw_tensor_unref(x);
    fw_tensor_unref(w);
}
END_TEST

/* ---- dropout ---- */

START_TEST(dropout_upscale_in_train_keeps_expected_fraction)
{
    int64_t xs[1] = {20000};
    fw_tensor *x = NULL, *y = NULL, *l = NULL;
    ck_assert_int_eq(fw_ones(&x, FW_FLOAT32, xs, 1), 0);
    fw_tensor_set_stop_gradient(x, false);
    fw_seed(1234);
    ck_assert_int_eq(fw_dropout(&y, x, 0.3, true, FW_DROPOUT_UPSCALE_IN_TRAIN, NULL), 0);
    const float *v = fw_tensor_data(y);
    int64_t kept = 0;
    for (int64_t i = 0; i < xs[0]; i++) {
        ck_assert(v[i] == 0.0f || fabsf(v[i] - 1.0f / 0.7f) < 1e-6f);
        kept += v[i] != 0.0f;
    }
    ck_assert_msg(fabs((double)kept / (double)xs[0] - 0.7) < 0.02, "kept %lld", (long long)kept);
    /* the gradient is the same mask and scale */
    ck_assert_int_eq(fw_sum(&l, y, NULL, 0, false), 0);
    ck_assert_int_eq(fw_tensor_backward(l, NULL, false), 0);
    const float *g = fw_tensor_data(fw_tensor_grad(x));
    for (int64_t i = 0; i < xs[0]; i++)
        ck_assert(g[i] == v[i]);
    fw_tensor *ts[] = {x, y, l};
    nn_unref_all(ts, 3);
}
END_TEST

START_TEST(dropout_modes_in_inference_and_same_seed_same_mask)
{
    int64_t xs[2] = {30, 40};
    fw_tensor *x = nn_rand(FW_FLOAT64, xs, 2, 3, false), *y = NULL, *a = NULL, *b = NULL;
    int64_t n;
    double *xv = fw_test_doubles(x, &n);
    ck_assert_int_eq(fw_dropout(&y, x, 0.4, false, FW_DROPOUT_UPSCALE_IN_TRAIN, NULL), 0);
    ck_assert(fw_expect_close(y, xv, n, 0, 0));
    fw_tensor_unref(y);
    ck_assert_int_eq(fw_dropout(&y, x, 0.4, false, FW_DROPOUT_DOWNSCALE_IN_INFER, NULL), 0);
    for (int64_t i = 0; i < n; i++)
        xv[i] *= 0.6;
    ck_assert(fw_expect_close(y, xv, n, 1e-15, 1e-15));
    fw_tensor_unref(y);
    /* downscale_in_infer trains without scaling */
    ck_assert_int_eq(fw_dropout(&y, x, 0.4, true, FW_DROPOUT_DOWNSCALE_IN_INFER, NULL), 0);
    double *yv = fw_test_doubles(y, NULL);
    for (int64_t i = 0; i < n; i++)
        ck_assert(yv[i] == 0 || fabs(yv[i] - xv[i] / 0.6) < 1e-12);
    free(yv);
    fw_tensor_unref(y);
    fw_generator *g1 = NULL, *g2 = NULL;
    ck_assert_int_eq(fw_generator_new(&g1, 77), 0);
    ck_assert_int_eq(fw_generator_new(&g2, 77), 0);
    ck_assert_int_eq(fw_dropout(&a, x, 0.5, true, FW_DROPOUT_UPSCALE_IN_TRAIN, g1), 0);
    ck_assert_int_eq(fw_dropout(&b, x, 0.5, true, FW_DROPOUT_UPSCALE_IN_TRAIN, g2), 0);
    double *av = fw_test_doubles(a, NULL);
    ck_assert(fw_expect_close(b, av, n, 0, 0));
    free(av);
    free(xv);
    fw_generator_free(g1);
    fw_generator_free(g2);
    NN_EXPECT_ERR(fw_dropout(&y, x, 1.5, true, FW_DROPOUT_UPSCALE_IN_TRAIN, NULL), FW_EINVAL,
                  "p must be in [0, 1], got 1.5");
    fw_tensor *ts[] = {x, a, b};
    nn_unref_all(ts, 3);
}
END_TEST

START_TEST(dropout_p_one_zeroes_everything)
{
    int64_t xs[1] = {100};
    fw_tensor *x = nn_rand(FW_FLOAT32, xs, 1, 1, false), *y = NULL;
    double z[100] = {0};
    ck_assert_int_eq(fw_dropout(&y, x, 1.0, true, FW_DROPOUT_UPSCALE_IN_TRAIN, NULL), 0);
    ck_assert(fw_expect_close(y, z, 100, 0, 0));
    fw_tensor_unref(x);
    fw_tensor_unref(y);
}
END_TEST

/* ---- embedding ---- */

START_TEST(embedding_looks_up_rows_and_zeroes_padding)
{
    int64_t ws[2] = {5, 3}, is[2] = {2, 3}, ids[6] = {0, 4, 2, 2, 1, 4};
    for (int d = 0; d < NN_DTYPES; d++) {
        for (int it = 0; it < 2; it++) {
            fw_tensor *w = nn_rand(nn_dtypes[d], ws, 2, 5, false);
            fw_tensor *id = nn_labels(ids, is, 2, it ? FW_INT32 : FW_INT64), *y = NULL;
            double *wv = fw_test_doubles(w, NULL), ref[18];
            int64_t ys[3] = {2, 3, 3};
            for (int i = 0; i < 6; i++)
                for (int j = 0; j < 3; j++)
                    ref[i * 3 + j] = ids[i] == 4 ? 0 : wv[ids[i] * 3 + j];
            /* padding_idx -1 is row 4 (Paddle counts negative from V) */
            ck_assert_int_eq(fw_embedding(&y, id, w, -1), 0);
            ck_assert(fw_expect_shape(y, ys, 3));
            NN_EXPECT_CLOSE(y, ref, 18, nn_dtypes[d]);
            free(wv);
            fw_tensor *ts[] = {w, id, y};
            nn_unref_all(ts, 3);
        }
    }
}
END_TEST

START_TEST(embedding_backward_accumulates_repeated_rows)
{
    int64_t ws[2] = {4, 2}, is[1] = {5}, ids[5] = {1, 3, 1, 0, 1};
    fw_tensor *w = nn_rand(FW_FLOAT64, ws, 2, 1, true), *id = nn_labels(ids, is, 1, FW_INT64);
    fw_tensor *y = NULL, *l = NULL;
    ck_assert_int_eq(fw_embedding(&y, id, w, 0), 0);
    ck_assert_int_eq(fw_sum(&l, y, NULL, 0, false), 0);
    ck_assert_int_eq(fw_tensor_backward(l, NULL, false), 0);
    /* row 1 used three times, row 3 once, row 0 is padding: no gradient */
    double eg[8] = {0, 0, 3, 3, 0, 0, 1, 1};
    ck_assert_msg(fw_expect_close(fw_tensor_grad(w), eg, 8, 0, 0), "%s", fw_error_last());
    fw_tensor *ts[] = {w, id, y, l};
    nn_unref_all(ts, 4);
}
END_TEST

static int emb_fn(fw_tensor **out, fw_tensor *const *in, void *ctx)
{
    return fw_embedding(out, ctx, in[0], FW_NO_PADDING);
}

START_TEST(embedding_backward_matches_finite_differences)
{
    int64_t ws[2] = {6, 3}, is[2] = {2, 2}, ids[4] = {5, 0, 5, 2};
    fw_tensor *w = nn_rand(FW_FLOAT64, ws, 2, 1, true), *id = nn_labels(ids, is, 2, FW_INT32);
    NN_GRADCHECK(emb_fn, id, 1, &w);
    fw_tensor_unref(w);
    fw_tensor_unref(id);
}
END_TEST

START_TEST(embedding_rejects_out_of_range_ids)
{
    int64_t ws[2] = {4, 2}, is[1] = {3}, ids[3] = {0, 4, 1}, neg[3] = {0, -1, 1};
    fw_tensor *w = nn_rand(FW_FLOAT32, ws, 2, 1, false), *id = nn_labels(ids, is, 1, FW_INT64);
    fw_tensor *idn = nn_labels(neg, is, 1, FW_INT32), *y = NULL, *f = NULL;
    NN_EXPECT_ERR(fw_embedding(&y, id, w, FW_NO_PADDING), FW_ERANGE, "id 4 out of range [0, 4)");
    NN_EXPECT_ERR(fw_embedding(&y, idn, w, FW_NO_PADDING), FW_ERANGE, "id -1 out of range");
    NN_EXPECT_ERR(fw_embedding(&y, id, w, 7), FW_ERANGE, "padding_idx 7");
    ck_assert_int_eq(fw_zeros(&f, FW_FLOAT32, is, 1), 0);
    NN_EXPECT_ERR(fw_embedding(&y, f, w, FW_NO_PADDING), FW_EDTYPE, "int32 or int64");
    ck_assert_ptr_null(y);
    fw_tensor *ts[] = {w, id, idn, f};
    nn_unref_all(ts, 4);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("nn_norm");
    TCase *tc = tcase_create("norm");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, batch_norm_training_normalises_and_updates_running_stats);
    tcase_add_test(tc, batch_norm_inference_uses_running_stats);
    tcase_add_test(tc, batch_norm_backward_matches_finite_differences);
    tcase_add_test(tc, batch_norm_errors_name_rank_and_channels);
    tcase_add_test(tc, layer_norm_forward_matches_naive_reference);
    tcase_add_test(tc, layer_norm_backward_matches_finite_differences);
    tcase_add_test(tc, layer_norm_rejects_mismatched_normalized_shape);
    tcase_add_test(tc, dropout_upscale_in_train_keeps_expected_fraction);
    tcase_add_test(tc, dropout_modes_in_inference_and_same_seed_same_mask);
    tcase_add_test(tc, dropout_p_one_zeroes_everything);
    tcase_add_test(tc, embedding_looks_up_rows_and_zeroes_padding);
    tcase_add_test(tc, embedding_backward_accumulates_repeated_rows);
    tcase_add_test(tc, embedding_backward_matches_finite_differences);
    tcase_add_test(tc, embedding_rejects_out_of_range_ids);
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
