/*
 * test_index_dtypes.c - the differentiable indexing/joining ops in float32,
 * float16 and bfloat16: forward and gradient agree with the float64 run on
 * exactly representable data, and the gradient has the input's dtype.
 */
#include "test_index_util.h"

typedef int (*op_fn)(fw_tensor **out, fw_tensor *x, fw_tensor *idx);

static int op_concat(fw_tensor **out, fw_tensor *x, fw_tensor *idx)
{
    fw_tensor *xs[] = {x, x};
    (void)idx;
    return fw_concat(out, xs, 2, -1);
}

static int op_stack(fw_tensor **out, fw_tensor *x, fw_tensor *idx)
{
    fw_tensor *xs[] = {x, x, x};
    (void)idx;
    return fw_stack(out, xs, 3, 1);
}

static int op_split(fw_tensor **out, fw_tensor *x, fw_tensor *idx)
{
    fw_tensor *p[3] = {NULL, NULL, NULL};
    int64_t sec[] = {1, 1, -1};
    int err = fw_split(p, x, 3, sec, 0);
    (void)idx;
    if (err == 0) {
        *out = p[2];
        p[2] = NULL;
    }
    tu_free(p, 3);
    return err;
}

static int op_gather(fw_tensor **out, fw_tensor *x, fw_tensor *idx)
{
    return fw_gather(out, x, idx, 1);
}

static int op_take(fw_tensor **out, fw_tensor *x, fw_tensor *idx)
{
    fw_tensor *i2 = NULL;
    int64_t s[] = {1, 3, 1};
    int err = fw_reshape(&i2, idx, s, 3);
    if (err == 0)
        err = fw_take_along_axis(out, x, i2, 0);
    fw_tensor_unref(i2);
    return err;
}

static int op_tile(fw_tensor **out, fw_tensor *x, fw_tensor *idx)
{
    int64_t r[] = {2, 1, 2};
    (void)idx;
    return fw_tile(out, x, r, 3);
}

static int op_pad(fw_tensor **out, fw_tensor *x, fw_tensor *idx)
{
    int64_t p[] = {1, 2, 2, 0};
    (void)idx;
    return fw_pad(out, x, p, 4, FW_PAD_REFLECT, 0);
}

static int op_sort(fw_tensor **out, fw_tensor *x, fw_tensor *idx)
{
    (void)idx;
    return fw_sort(out, NULL, x, 0, true, true);
}

static int op_topk(fw_tensor **out, fw_tensor *x, fw_tensor *idx)
{
    (void)idx;
    return fw_topk(out, NULL, x, 2, -1, false, true);
}

static int op_cumsum(fw_tensor **out, fw_tensor *x, fw_tensor *idx)
{
    int ax = -1;
    (void)idx;
    return fw_cumsum(out, x, &ax, NULL);
}

static int op_clip(fw_tensor **out, fw_tensor *x, fw_tensor *idx)
{
    double lo = -1.1, hi = 1.6;
    (void)idx;
    return fw_clip(out, x, &lo, &hi);
}

static int op_where(fw_tensor **out, fw_tensor *x, fw_tensor *idx)
{
    fw_tensor *c = NULL, *z = NULL;
    int err = fw_compare_scalar(&c, x, ">", 0);
    (void)idx;
    if (err == 0)
        err = fw_zeros_like(&z, x);
    if (err == 0)
        err = fw_where(out, c, z, x);
    fw_tensor_unref(c);
    fw_tensor_unref(z);
    return err;
}

static int op_index_add(fw_tensor **out, fw_tensor *x, fw_tensor *idx)
{
    return fw_index_add(out, x, idx, 1, x);
}

static int op_scatter(fw_tensor **out, fw_tensor *x, fw_tensor *idx)
{
    fw_tensor *u = NULL;
    int err = fw_gather(&u, x, idx, 0);       /* [3, 3, 4] rows of x as updates */
    if (err == 0)
        err = fw_scatter(out, x, idx, u, false); /* accumulate (idx repeats 2) */
    fw_tensor_unref(u);
    return err;
}

static int op_put_along(fw_tensor **out, fw_tensor *x, fw_tensor *idx)
{
    fw_tensor *i3 = NULL, *v = NULL;
    int64_t s[] = {1, 3, 1};
    int err = fw_reshape(&i3, idx, s, 3);
    if (err == 0)
        err = fw_take_along_axis(&v, x, i3, 2);
    if (err == 0)
        err = fw_put_along_axis(out, x, i3, v, 2, FW_PUT_ADD);
    fw_tensor_unref(i3);
    fw_tensor_unref(v);
    return err;
}

static int op_index_get(fw_tensor **out, fw_tensor *x, fw_tensor *idx)
{
    fw_tensor *ix[] = {idx, idx};
    return fw_index_get(out, x, ix, 2);
}

static int op_masked_select(fw_tensor **out, fw_tensor *x, fw_tensor *idx)
{
    fw_tensor *m = NULL;
    int err = fw_compare_scalar(&m, x, "<", 0.5);
    (void)idx;
    if (err == 0)
        err = fw_masked_select(out, x, m);
    fw_tensor_unref(m);
    return err;
}

static const struct {
    const char *name;
    op_fn fn;
} ops[] = {
    {"concat", op_concat}, {"stack", op_stack}, {"split", op_split},
    {"gather", op_gather}, {"take_along_axis", op_take}, {"tile", op_tile},
    {"pad", op_pad},       {"sort", op_sort},   {"topk", op_topk},
    {"cumsum", op_cumsum}, {"clip", op_clip},   {"where", op_where},
    {"index_add", op_index_add}, {"scatter", op_scatter}, {"put_along_axis", op_put_along},
    {"index_get", op_index_get}, {"masked_select", op_masked_select},
};

/* Run op on x (values xv, dtype dt), backpropagate a fixed gradient, return
 * forward values and x's gradient as doubles. */
static void run(const char *name, op_fn fn, fw_dtype dt, const double *xv, double **yv,
                int64_t *ny, double **gv)
{
    int64_t s[] = {3, 3, 4};
    double iv[] = {2, 0, 2};
    int64_t three = 3;
    fw_tensor *x = tu_tensor(xv, dt, s, 3), *idx = tu_tensor(iv, FW_INT64, &three, 1);
    fw_tensor *y = NULL, *g = NULL;

    CK_OK(fw_tensor_set_stop_gradient(x, false));
    ck_assert_msg(fn(&y, x, idx) == 0, "%s %s: %s", name, fw_dtype_name(dt), fw_error_last());
    ck_assert_int_eq(fw_tensor_dtype(y), dt);
    *ny = fw_tensor_numel(y);
    *yv = fw_test_doubles(y, NULL);
    double *gw = malloc(sizeof(double) * (size_t)(*ny + 1));
    for (int64_t i = 0; i < *ny; i++)
        gw[i] = (double)((i * 7) % 9 - 4) / 4;
    CK_OK(fw_tensor_from_doubles(&g, gw, dt, fw_tensor_shape(y), fw_tensor_ndim(y)));
    CK_OK(fw_tensor_backward(y, g, false));
    ck_assert_msg(fw_tensor_grad(x) != NULL, "%s: no gradient", name);
    ck_assert_int_eq(fw_tensor_dtype(fw_tensor_grad(x)), dt);
    *gv = fw_test_doubles(fw_tensor_grad(x), NULL);
    free(gw);
    fw_tensor *all[] = {x, idx, y, g};
    tu_free(all, 4);
}

START_TEST(low_precision_forward_and_backward_match_float64)
{
    static const fw_dtype dts[] = {FW_FLOAT32, FW_FLOAT16, FW_BFLOAT16};
    double xv[36];
    for (int i = 0; i < 36; i++) /* distinct quarters: no ties for sort/topk */
        xv[i] = (double)(i * 17 % 36 - 18) / 8;
    for (size_t k = 0; k < sizeof(ops) / sizeof(ops[0]); k++) {
        double *y64, *g64;
        int64_t n64;
        run(ops[k].name, ops[k].fn, FW_FLOAT64, xv, &y64, &n64, &g64);
        for (int d = 0; d < 3; d++) {
            double *y, *g;
            int64_t n;
            run(ops[k].name, ops[k].fn, dts[d], xv, &y, &n, &g);
            ck_assert_int_eq(n, n64);
            for (int64_t i = 0; i < n; i++)
                ck_assert_msg(fabs(y[i] - y64[i]) <= 2e-2 * (1 + fabs(y64[i])),
                              "%s %s: y[%lld] %g vs %g", ops[k].name, fw_dtype_name(dts[d]),
                              (long long)i, y[i], y64[i]);
            for (int64_t i = 0; i < 36; i++)
                ck_assert_msg(fabs(g[i] - g64[i]) <= 2e-2 * (1 + fabs(g64[i])),
                              "%s %s: grad[%lld] %g vs %g", ops[k].name,
                              fw_dtype_name(dts[d]), (long long)i, g[i], g64[i]);
            free(y);
            free(g);
        }
        free(y64);
        free(g64);
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("fw_index_dtypes");
    TCase *tc = tcase_create("dtypes");
    tcase_add_test(tc, low_precision_forward_and_backward_match_float64);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
