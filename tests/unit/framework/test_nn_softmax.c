/*
 * test_nn_softmax.c - softmax and log_softmax on every axis: forward
 * against float64 loops (including huge logits), backward against finite
 * differences, error paths.
 */
#include "test_nn_util.h"

static void softmax_ref(double *y, const double *x, const int64_t *shape, int ndim, int axis,
                        int log_form)
{
    int64_t outer = 1, C = shape[axis], inner = 1;
    for (int d = 0; d < axis; d++)
        outer *= shape[d];
    for (int d = axis + 1; d < ndim; d++)
        inner *= shape[d];
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < inner; i++) {
            double m = -INFINITY, s = 0;
            for (int64_t c = 0; c < C; c++)
                m = fmax(m, x[(o * C + c) * inner + i]);
            for (int64_t c = 0; c < C; c++)
                s += exp(x[(o * C + c) * inner + i] - m);
            for (int64_t c = 0; c < C; c++) {
                double v = x[(o * C + c) * inner + i] - m;
                y[(o * C + c) * inner + i] = log_form ? v - log(s) : exp(v) / s;
            }
        }
}

START_TEST(softmax_forward_matches_reference_on_every_axis)
{
    uint64_t st = 6;
    for (int trial = 0; trial < 12; trial++) {
        int ndim = (int)nn_randint(&st, 1, 4);
        int64_t shape[4], n = 1;
        for (int d = 0; d < ndim; d++)
            n *= (shape[d] = nn_randint(&st, 1, 5));
        fw_tensor *x64 = fw_test_rand_range(FW_FLOAT64, shape, ndim, trial, -50, 50, false);
        double *x = fw_test_doubles(x64, NULL), *ref = malloc(sizeof(double) * (size_t)n);
        for (int axis = -ndim; axis < ndim; axis++) {
            for (int lf = 0; lf < 2; lf++) {
                softmax_ref(ref, x, shape, ndim, axis < 0 ? axis + ndim : axis, lf);
                for (int d = 0; d < NN_DTYPES; d++) {
                    fw_tensor *xx = nn_as(x64, nn_dtypes[d], false), *y = NULL;
                    ck_assert_int_eq(lf ? fw_log_softmax(&y, xx, axis) : fw_softmax(&y, xx, axis),
                                     0);
                    ck_assert(fw_expect_shape(y, shape, ndim));
                    ck_assert_msg(fw_expect_close(y, ref, n, nn_tol(nn_dtypes[d]) * (lf ? 10 : 1),
                                                  nn_tol(nn_dtypes[d])),
                                  "%s", fw_error_last());
                    fw_tensor_unref(xx);
                    fw_tensor_unref(y);
                }
            }
        }
        free(x);
        free(ref);
        fw_tensor_unref(x64);
    }
}
END_TEST

START_TEST(softmax_is_stable_for_huge_logits)
{
    double xv[3] = {1000, 1001, 1002};
    int64_t s[1] = {3};
    fw_tensor *x = NULL, *y = NULL;
    ck_assert_int_eq(fw_tensor_from_doubles(&x, xv, FW_FLOAT32, s, 1), 0);
    ck_assert_int_eq(fw_softmax(&y, x, 0), 0);
    double e[3] = {0.09003057317038046, 0.24472847105479764, 0.6652409557748219};
    ck_assert(fw_expect_close(y, e, 3, 1e-6, 1e-5));
    fw_tensor_unref(y);
    ck_assert_int_eq(fw_log_softmax(&y, x, -1), 0);
    double el[3] = {-2.4076059644443806, -1.4076059644443806, -0.4076059644443806};
    ck_assert(fw_expect_close(y, el, 3, 1e-4, 1e-5));
    fw_tensor_unref(y);
    fw_tensor_unref(x);
}
END_TEST

static int sm_fn(fw_tensor **out, fw_tensor *const *in, void *ctx)
{
    int axis = *(int *)ctx;
    fw_tensor *t = NULL;
    int err;
    /* through a transposed view: non-contiguous input */
    if ((err = fw_swapaxes(&t, in[0], 0, 2)) < 0)
        return err;
    err = axis >= 10 ? fw_log_softmax(out, t, axis - 10) : fw_softmax(out, t, axis);
    fw_tensor_unref(t);
    return err;
}

START_TEST(softmax_backward_matches_finite_differences)
{
    int64_t xs[3] = {3, 2, 4};
    int axes[6] = {0, 1, -1, 10, 11, 12};
    fw_tensor *x = fw_test_rand_range(FW_FLOAT64, xs, 3, 1, -2, 2, true);
    for (int i = 0; i < 6; i++)
        NN_GRADCHECK(sm_fn, &axes[i], 1, &x);
    fw_tensor_unref(x);
}
END_TEST

START_TEST(softmax_rejects_bad_axis_and_dtype)
{
    int64_t s[2] = {2, 3};
    fw_tensor *x = nn_rand(FW_FLOAT32, s, 2, 1, false), *i = NULL, *y = NULL;
    NN_EXPECT_ERR(fw_softmax(&y, x, 2), FW_EAXIS, "axis");
    ck_assert_int_eq(fw_zeros(&i, FW_INT32, s, 2), 0);
    NN_EXPECT_ERR(fw_log_softmax(&y, i, 0), FW_EDTYPE, "must be float32 or float64, got int32");
    ck_assert_ptr_null(y);
    fw_tensor_unref(x);
    fw_tensor_unref(i);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("nn_softmax");
    TCase *tc = tcase_create("softmax");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, softmax_forward_matches_reference_on_every_axis);
    tcase_add_test(tc, softmax_is_stable_for_huge_logits);
    tcase_add_test(tc, softmax_backward_matches_finite_differences);
    tcase_add_test(tc, softmax_rejects_bad_axis_and_dtype);
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
