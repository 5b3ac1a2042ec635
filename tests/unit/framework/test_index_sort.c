/*
 * test_index_sort.c - sort, argsort and topk: forward against a naive
 * stable reference (every dtype, negative axes, non-contiguous inputs,
 * ties, NaN), backward of the values against finite differences, errors.
 */
#include "test_index_util.h"

typedef struct {
    double v;
    int64_t i;
} pair;

static int g_desc;

/* NaN is the largest value; ties keep the lower index first. */
static int cmp_pair(const void *pa, const void *pb)
{
    const pair *a = pa, *b = pb;
    int c;
    if (isnan(a->v) || isnan(b->v))
        c = isnan(a->v) - isnan(b->v);
    else
        c = (a->v > b->v) - (a->v < b->v);
    if (g_desc)
        c = -c;
    if (c)
        return c;
    return (a->i > b->i) - (a->i < b->i);
}

/* Reference: the first k of each sorted lane along ax -> vals/idx of shape
 * shape with shape[ax] = k. */
static void ref_sort(double *vals, double *idx, const double *x, const int64_t *shape, int nd,
                     int ax, int64_t k, int desc)
{
    int64_t len = shape[ax], inner = 1, outer = 1;
    pair *p = malloc(sizeof(pair) * (size_t)(len + 1));
    for (int d = 0; d < ax; d++)
        outer *= shape[d];
    for (int d = ax + 1; d < nd; d++)
        inner *= shape[d];
    g_desc = desc;
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < inner; i++) {
            for (int64_t j = 0; j < len; j++) {
                p[j].v = x[(o * len + j) * inner + i];
                p[j].i = j;
            }
            qsort(p, (size_t)len, sizeof(pair), cmp_pair);
            for (int64_t j = 0; j < k; j++) {
                vals[(o * k + j) * inner + i] = p[j].v;
                idx[(o * k + j) * inner + i] = (double)p[j].i;
            }
        }
    free(p);
}

START_TEST(sort_argsort_and_topk_match_stable_reference)
{
    uint64_t st = 31;
    for (int rep = 0; rep < 48; rep++) {
        fw_dtype dt = tu_all_dtypes[rep % TU_N_DTYPES];
        int nd = (int)tu_rand_int(&st, 1, 4), desc = (rep / 8) % 2, which = (rep / 16) % 3;
        int axis = (int)tu_rand_int(&st, -nd, nd - 1), ax = axis < 0 ? axis + nd : axis;
        int64_t shape[FW_MAX_DIMS], os[FW_MAX_DIMS], k;
        fw_tensor *x, *vals = NULL, *idx = NULL;

        tu_rand_shape(shape, nd, &st, 1, 5);
        k = which == 2 ? tu_rand_int(&st, 0, shape[ax]) : shape[ax];
        x = tu_rand_view(dt, shape, nd, 1800 + (uint64_t)rep);
        if (which == 0)
            CK_OK(fw_sort(&vals, &idx, x, axis, desc, true));
        else if (which == 1)
            CK_OK(fw_argsort(&idx, x, axis, desc, true));
        else
            CK_OK(fw_topk(&vals, &idx, x, k, axis, desc, true));
        memcpy(os, shape, sizeof(shape));
        os[ax] = k;
        int64_t n = tu_numel(os, nd);
        double *xv = fw_test_doubles(x, NULL);
        double *rv = malloc(sizeof(double) * (size_t)(n + 1)),
               *ri = malloc(sizeof(double) * (size_t)(n + 1));
        ref_sort(rv, ri, xv, shape, nd, ax, k, desc);
        CK_SHAPE(idx, os, nd);
        ck_assert_int_eq(fw_tensor_dtype(idx), FW_INT64);
        CK_CLOSE(idx, ri, n, 0, 0);
        if (vals) {
            CK_SHAPE(vals, os, nd);
            ck_assert_int_eq(fw_tensor_dtype(vals), dt);
            CK_CLOSE(vals, rv, n, 0, 0);
        }
        free(xv);
        free(rv);
        free(ri);
        fw_tensor_unref(x);
        fw_tensor_unref(vals);
        fw_tensor_unref(idx);
    }
}
END_TEST

START_TEST(sort_puts_nan_last_ascending_and_first_descending)
{
    int64_t s[] = {4};
    double xv[] = {3, NAN, 1, 3};
    double up_v[] = {1, 3, 3, NAN}, up_i[] = {2, 0, 3, 1};
    double dn_v[] = {NAN, 3, 3, 1}, dn_i[] = {1, 0, 3, 2};
    fw_tensor *x = tu_tensor(xv, FW_FLOAT32, s, 1), *v = NULL, *i = NULL;
    CK_OK(fw_sort(&v, &i, x, 0, false, false));
    CK_CLOSE(v, up_v, 4, 0, 0);
    CK_CLOSE(i, up_i, 4, 0, 0);
    fw_tensor_unref(v);
    fw_tensor_unref(i);
    CK_OK(fw_topk(&v, &i, x, 4, -1, true, true));
    CK_CLOSE(v, dn_v, 4, 0, 0);
    CK_CLOSE(i, dn_i, 4, 0, 0);
    fw_tensor_unref(v);
    fw_tensor_unref(i);
    fw_tensor_unref(x);
}
END_TEST

START_TEST(topk_smallest_and_0d_input)
{
    int64_t s[] = {2, 3}, os[] = {2, 2};
    double xv[] = {5, 1, 4, 2, 9, 0}, want_v[] = {1, 4, 0, 2}, want_i[] = {1, 2, 2, 0};
    fw_tensor *x = tu_tensor(xv, FW_FLOAT64, s, 2), *v = NULL, *i = NULL;
    CK_OK(fw_topk(&v, &i, x, 2, 1, false, true));
    CK_SHAPE(v, os, 2);
    CK_CLOSE(v, want_v, 4, 0, 0);
    CK_CLOSE(i, want_i, 4, 0, 0);
    ck_assert(fw_tensor_stop_gradient(i));
    fw_tensor_unref(v);
    fw_tensor_unref(i);
    fw_tensor_unref(x);

    double one = 7, zero = 0;
    fw_tensor *s0 = tu_tensor(&one, FW_FLOAT32, NULL, 0);
    CK_OK(fw_topk(&v, &i, s0, 1, -1, true, true));
    CK_SHAPE(v, NULL, 0);
    CK_CLOSE(v, &one, 1, 0, 0);
    CK_CLOSE(i, &zero, 1, 0, 0);
    fw_tensor_unref(v);
    fw_tensor_unref(i);
    fw_tensor_unref(s0);
}
END_TEST

typedef struct {
    int op, axis;
    int64_t k;
    bool desc;
} sort_ctx;

static int sort_fn(fw_tensor **out, fw_tensor *const *in, void *ctx)
{
    sort_ctx *c = ctx;
    fw_tensor *t = NULL, *idx = NULL;
    int err = fw_swapaxes(&t, in[0], 0, 2);
    if (err < 0)
        return err;
    if (c->op == 0)
        err = fw_sort(out, &idx, t, c->axis, c->desc, true);
    else
        err = fw_topk(out, NULL, t, c->k, c->axis, c->desc, true);
    fw_tensor_unref(idx);
    fw_tensor_unref(t);
    return err;
}

START_TEST(sort_and_topk_backward_scatter_into_the_positions)
{
    int64_t s[] = {4, 3, 5};
    for (int op = 0; op < 2; op++)
        for (int axis = -3; axis < 3; axis++) {
            fw_tensor *x = fw_test_rand(FW_FLOAT64, s, 3, 19 + (uint64_t)axis, true);
            sort_ctx ctx = {op, axis, 2, axis % 2 == 0};
            ck_assert_msg(fw_gradcheck(sort_fn, &ctx, 1, &x, TU_EPS, TU_ATOL, TU_RTOL) == 0,
                          "op %d axis %d: %s", op, axis, fw_error_last());
            fw_tensor_unref(x);
        }
}
END_TEST

START_TEST(sort_family_rejects_bad_k_and_axis)
{
    int64_t s[] = {2, 3};
    fw_tensor *x = tu_rand(FW_FLOAT32, s, 2, 1), *v = NULL, *i = NULL;
    CK_ERR(fw_topk(&v, &i, x, 4, -1, true, true), FW_EINVAL, "k 4", "[2, 3]");
    CK_ERR(fw_topk(&v, &i, x, -1, -1, true, true), FW_EINVAL, "k must be >= 0");
    CK_ERR(fw_topk(&v, &i, x, 1, 2, true, true), FW_EAXIS, "axis 2", "rank 2");
    CK_ERR(fw_sort(&v, &i, x, -3, false, false), FW_EAXIS, "axis -3", "rank 2");
    CK_ERR(fw_argsort(&i, NULL, 0, false, false), FW_EINVAL, "NULL");
    ck_assert_ptr_null(v);
    ck_assert_ptr_null(i);
    fw_tensor_unref(x);
}
END_TEST

START_TEST(sort_of_many_lanes_split_across_threads_matches_reference)
{
    int64_t s[] = {300, 257};
    fw_tensor *x = tu_rand(FW_INT32, s, 2, 77), *v = NULL, *i = NULL; /* many ties */
    int64_t n = 300 * 257;
    double *xv = fw_test_doubles(x, NULL), *rv = malloc(sizeof(double) * (size_t)n),
           *ri = malloc(sizeof(double) * (size_t)n);
    CK_OK(fw_sort(&v, &i, x, 0, true, true));
    ref_sort(rv, ri, xv, s, 2, 0, 300, 1);
    CK_CLOSE(v, rv, n, 0, 0);
    CK_CLOSE(i, ri, n, 0, 0);
    free(xv);
    free(rv);
    free(ri);
    fw_tensor *all[] = {x, v, i};
    tu_free(all, 3);
}
END_TEST

static Suite *sort_suite(void)
{
    Suite *s = suite_create("fw_index_sort");
    TCase *tc = tcase_create("sort");
    tcase_add_test(tc, sort_argsort_and_topk_match_stable_reference);
    tcase_add_test(tc, sort_puts_nan_last_ascending_and_first_descending);
    tcase_add_test(tc, topk_smallest_and_0d_input);
    tcase_add_test(tc, sort_and_topk_backward_scatter_into_the_positions);
    tcase_add_test(tc, sort_family_rejects_bad_k_and_axis);
    tcase_add_test(tc, sort_of_many_lanes_split_across_threads_matches_reference);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(sort_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
