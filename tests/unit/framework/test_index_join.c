/*
 * test_index_join.c - concat, stack, split, tile and pad: forward against
 * naive float64 references on random shapes, every dtype, negative axes and
 * non-contiguous inputs; backward against central finite differences; every
 * error path.
 */
#include "test_index_util.h"

/* ---- concat ---------------------------------------------------------------- */

START_TEST(concat_matches_reference_for_every_dtype_axis_and_view)
{
    uint64_t st = 11;
    for (int rep = 0; rep < 24; rep++) {
        fw_dtype dt = tu_all_dtypes[rep % TU_N_DTYPES];
        int nd = (int)tu_rand_int(&st, 1, 4);
        int axis = (int)tu_rand_int(&st, -nd, nd - 1), ax = axis < 0 ? axis + nd : axis;
        int64_t base[FW_MAX_DIMS], shapes[3][FW_MAX_DIMS], oshape[FW_MAX_DIMS];
        fw_tensor *in[3], *out = NULL;
        double *v[3];

        tu_rand_shape(base, nd, &st, 1, 4);
        memcpy(oshape, base, sizeof(base));
        oshape[ax] = 0;
        for (int k = 0; k < 3; k++) {
            memcpy(shapes[k], base, sizeof(base));
            shapes[k][ax] = tu_rand_int(&st, 0, 3);
            oshape[ax] += shapes[k][ax];
            in[k] = k == 1 ? tu_rand_view(dt, shapes[k], nd, 100 + (uint64_t)rep)
                           : tu_rand(dt, shapes[k], nd, 200 + (uint64_t)(rep * 3 + k));
            v[k] = fw_test_doubles(in[k], NULL);
        }
        CK_OK(fw_concat(&out, in, 3, axis));
        CK_SHAPE(out, oshape, nd);
        ck_assert_int_eq(fw_tensor_dtype(out), dt);
        int64_t n = tu_numel(oshape, nd);
        double *ref = malloc(sizeof(double) * (size_t)(n + 1));
        for (int64_t i = 0; i < n; i++) {
            int64_t c[FW_MAX_DIMS] = {0};
            int k = 0;
            tu_unravel(c, i, oshape, nd);
            while (c[ax] >= shapes[k][ax]) {
                c[ax] -= shapes[k][ax];
                k++;
            }
            ref[i] = v[k][tu_ravel(c, shapes[k], nd)];
        }
        CK_CLOSE(out, ref, n, 0, 0);
        free(ref);
        for (int k = 0; k < 3; k++)
            free(v[k]);
        tu_free(in, 3);
        fw_tensor_unref(out);
    }
}
END_TEST

typedef struct {
    int axis;
} axis_ctx;

static int concat_fn(fw_tensor **out, fw_tensor *const *in, void *ctx)
{
    axis_ctx *c = ctx;
    fw_tensor *t = NULL, *ins[3];
    int err = fw_swapaxes(&t, in[3], 0, fw_tensor_ndim(in[3]) - 1); /* non-contiguous */
    if (err < 0)
        return err;
    ins[0] = in[0];
    ins[1] = t;
    ins[2] = in[2];
    err = fw_concat(out, ins, 3, c->axis);
    fw_tensor_unref(t);
    return err;
}

START_TEST(concat_backward_matches_finite_differences)
{
    int64_t a[] = {2, 3, 4}, b[] = {2, 3, 2}, c[] = {2, 3, 1}, bt[] = {2, 3, 2};
    fw_tensor *in[4];
    axis_ctx ctx = {-1};

    in[0] = fw_test_rand(FW_FLOAT64, a, 3, 1, true);
    in[1] = fw_test_rand(FW_FLOAT64, b, 3, 2, false); /* unused slot (see concat_fn) */
    in[2] = fw_test_rand(FW_FLOAT64, c, 3, 3, true);
    in[3] = fw_test_rand(FW_FLOAT64, bt, 3, 4, true);  /* swapped -> [2, 3, 2] */
    ck_assert_msg(fw_gradcheck(concat_fn, &ctx, 4, in, TU_EPS, TU_ATOL, TU_RTOL) == 0, "%s",
                  fw_error_last());
    tu_free(in, 4);
}
END_TEST

START_TEST(concat_rejects_bad_axis_shapes_dtypes_and_counts)
{
    int64_t s1[] = {2, 3}, s2[] = {3, 4}, s3[] = {2, 3, 1};
    fw_tensor *a = tu_rand(FW_FLOAT32, s1, 2, 1), *b = tu_rand(FW_FLOAT32, s2, 2, 2);
    fw_tensor *c = tu_rand(FW_FLOAT64, s1, 2, 3), *d = tu_rand(FW_FLOAT32, s3, 3, 4);
    fw_tensor *s = tu_rand(FW_FLOAT32, NULL, 0, 5), *out = (fw_tensor *)1;
    fw_tensor *ab[] = {a, b}, *ac[] = {a, c}, *ad[] = {a, d}, *ss[] = {s, s}, *an[] = {a, NULL};

    CK_ERR(fw_concat(&out, ab, 2, 2), FW_EAXIS, "axis 2", "rank 2");
    ck_assert_ptr_null(out);
    CK_ERR(fw_concat(&out, ab, 2, -3), FW_EAXIS, "axis -3", "rank 2");
    CK_ERR(fw_concat(&out, ab, 2, 1), FW_ESHAPE, "[2, 3]", "[3, 4]");
    CK_ERR(fw_concat(&out, ad, 2, 0), FW_ESHAPE, "[2, 3]", "[2, 3, 1]");
    CK_ERR(fw_concat(&out, ac, 2, 0), FW_EDTYPE, "float64", "float32");
    CK_ERR(fw_concat(&out, ab, 0, 0), FW_EINVAL, "at least one");
    CK_ERR(fw_concat(&out, an, 2, 0), FW_EINVAL, "NULL");
    CK_ERR(fw_concat(&out, ss, 2, 0), FW_ESHAPE, "0-D");
    ck_assert_ptr_null(out);
    fw_tensor_unref(a);
    fw_tensor_unref(b);
    fw_tensor_unref(c);
    fw_tensor_unref(d);
    fw_tensor_unref(s);
}
END_TEST

/* ---- stack ------------------------------------------------------------------- */

START_TEST(stack_matches_reference_for_every_dtype_axis_and_view)
{
    uint64_t st = 12;
    for (int rep = 0; rep < 16; rep++) {
        fw_dtype dt = tu_all_dtypes[rep % TU_N_DTYPES];
        int nd = (int)tu_rand_int(&st, 0, 3);
        int axis = (int)tu_rand_int(&st, -(nd + 1), nd), ax = axis < 0 ? axis + nd + 1 : axis;
        int64_t shape[FW_MAX_DIMS], oshape[FW_MAX_DIMS];
        fw_tensor *in[3], *out = NULL;
        double *v[3];

        tu_rand_shape(shape, nd, &st, 1, 4);
        for (int d = 0, s = 0; d <= nd; d++)
            oshape[d] = d == ax ? 3 : shape[s++];
        for (int k = 0; k < 3; k++) {
            in[k] = k == 2 ? tu_rand_view(dt, shape, nd, 300 + (uint64_t)rep)
                           : tu_rand(dt, shape, nd, 400 + (uint64_t)(rep * 3 + k));
            v[k] = fw_test_doubles(in[k], NULL);
        }
        CK_OK(fw_stack(&out, in, 3, axis));
        CK_SHAPE(out, oshape, nd + 1);
        int64_t n = tu_numel(oshape, nd + 1);
        double *ref = malloc(sizeof(double) * (size_t)n);
        for (int64_t i = 0; i < n; i++) {
            int64_t c[FW_MAX_DIMS] = {0}, ci[FW_MAX_DIMS] = {0};
            tu_unravel(c, i, oshape, nd + 1);
            for (int d = 0, s = 0; d <= nd; d++)
                if (d != ax)
                    ci[s++] = c[d];
            ref[i] = v[c[ax]][tu_ravel(ci, shape, nd)];
        }
        CK_CLOSE(out, ref, n, 0, 0);
        free(ref);
        for (int k = 0; k < 3; k++)
            free(v[k]);
        tu_free(in, 3);
        fw_tensor_unref(out);
    }
}
END_TEST

static int stack_fn(fw_tensor **out, fw_tensor *const *in, void *ctx)
{
    axis_ctx *c = ctx;
    fw_tensor *t = NULL, *ins[2];
    int err = fw_swapaxes(&t, in[1], 0, 1);
    if (err < 0)
        return err;
    ins[0] = in[0];
    ins[1] = t;
    err = fw_stack(out, ins, 2, c->axis);
    fw_tensor_unref(t);
    return err;
}

START_TEST(stack_backward_matches_finite_differences)
{
    int64_t a[] = {3, 2}, b[] = {2, 3};
    for (int axis = -3; axis <= 2; axis++) {
        fw_tensor *in[2] = {fw_test_rand(FW_FLOAT64, a, 2, 5, true),
                            fw_test_rand(FW_FLOAT64, b, 2, 6, true)};
        axis_ctx ctx = {axis};
        ck_assert_msg(fw_gradcheck(stack_fn, &ctx, 2, in, TU_EPS, TU_ATOL, TU_RTOL) == 0,
                      "axis %d: %s", axis, fw_error_last());
        tu_free(in, 2);
    }
}
END_TEST

START_TEST(stack_rejects_bad_axis_and_shapes)
{
    int64_t s1[] = {2, 3}, s2[] = {3, 2};
    fw_tensor *a = tu_rand(FW_FLOAT32, s1, 2, 1), *b = tu_rand(FW_FLOAT32, s2, 2, 2);
    fw_tensor *c = tu_rand(FW_INT64, s1, 2, 3), *out = NULL;
    fw_tensor *ab[] = {a, b}, *ac[] = {a, c}, *aa[] = {a, a};

    CK_ERR(fw_stack(&out, aa, 2, 3), FW_EAXIS, "axis 3", "rank 3");
    CK_ERR(fw_stack(&out, aa, 2, -4), FW_EAXIS, "axis -4");
    CK_ERR(fw_stack(&out, ab, 2, 0), FW_ESHAPE, "[2, 3]", "[3, 2]");
    CK_ERR(fw_stack(&out, ac, 2, 0), FW_EDTYPE, "int64", "float32");
    CK_ERR(fw_stack(&out, NULL, 0, 0), FW_EINVAL, "at least one");
    int64_t s8[8] = {1, 1, 1, 1, 1, 1, 1, 1};
    fw_tensor *e8 = tu_rand(FW_FLOAT32, s8, 8, 4), *ee[] = {e8, e8};
    CK_ERR(fw_stack(&out, ee, 2, 0), FW_ESHAPE, "9 dims");
    fw_tensor_unref(e8);
    ck_assert_ptr_null(out);
    fw_tensor_unref(a);
    fw_tensor_unref(b);
    fw_tensor_unref(c);
}
END_TEST

/* ---- split --------------------------------------------------------------------- */

static void check_split(fw_tensor *x, fw_tensor **outs, int num, const int64_t *lens, int ax)
{
    int nd = fw_tensor_ndim(x);
    const int64_t *xs = fw_tensor_shape(x);
    double *v = fw_test_doubles(x, NULL);
    int64_t off = 0;

    for (int k = 0; k < num; k++) {
        int64_t os[FW_MAX_DIMS];
        memcpy(os, xs, sizeof(int64_t) * (size_t)nd);
        os[ax] = lens[k];
        CK_SHAPE(outs[k], os, nd);
        ck_assert_int_eq(fw_tensor_dtype(outs[k]), fw_tensor_dtype(x));
        int64_t n = tu_numel(os, nd);
        double *ref = malloc(sizeof(double) * (size_t)(n + 1));
        for (int64_t i = 0; i < n; i++) {
            int64_t c[FW_MAX_DIMS] = {0};
            tu_unravel(c, i, os, nd);
            c[ax] += off;
            ref[i] = v[tu_ravel(c, xs, nd)];
        }
        CK_CLOSE(outs[k], ref, n, 0, 0);
        free(ref);
        off += lens[k];
    }
    free(v);
}

START_TEST(split_matches_reference_for_parts_sections_and_minus_one)
{
    uint64_t st = 13;
    for (int rep = 0; rep < 24; rep++) {
        fw_dtype dt = tu_all_dtypes[rep % TU_N_DTYPES];
        int nd = (int)tu_rand_int(&st, 1, 4), num = (int)tu_rand_int(&st, 1, 3);
        int axis = (int)tu_rand_int(&st, -nd, nd - 1), ax = axis < 0 ? axis + nd : axis;
        int64_t shape[FW_MAX_DIMS], lens[3], sec[3];
        fw_tensor *outs[3] = {NULL, NULL, NULL}, *x;

        tu_rand_shape(shape, nd, &st, 1, 3);
        if (rep % 3 == 0) { /* equal parts */
            shape[ax] = num * tu_rand_int(&st, 1, 2);
            x = tu_rand_view(dt, shape, nd, 500 + (uint64_t)rep);
            for (int k = 0; k < num; k++)
                lens[k] = shape[ax] / num;
            CK_OK(fw_split(outs, x, num, NULL, axis));
        } else {
            shape[ax] = 0;
            for (int k = 0; k < num; k++) {
                lens[k] = sec[k] = tu_rand_int(&st, 0, 3);
                shape[ax] += lens[k];
            }
            if (rep % 3 == 2)
                sec[num - 1] = -1; /* "the rest" */
            x = tu_rand_view(dt, shape, nd, 600 + (uint64_t)rep);
            CK_OK(fw_split(outs, x, num, sec, axis));
        }
        check_split(x, outs, num, lens, ax);
        tu_free(outs, num);
        fw_tensor_unref(x);
    }
}
END_TEST

static int split_fn(fw_tensor **out, fw_tensor *const *in, void *ctx)
{
    int64_t sec[] = {1, -1, 2};
    fw_tensor *parts[3] = {NULL, NULL, NULL}, *t = NULL;
    int err;
    (void)ctx;
    if ((err = fw_swapaxes(&t, in[0], 0, 1)) < 0)             /* [5, 2] view */
        return err;
    if ((err = fw_split(parts, t, 3, sec, -2)) == 0) {
        fw_tensor *use[2] = {parts[2], parts[0]};                /* parts[1] unused */
        err = fw_concat(out, use, 2, 0);
    }
    tu_free(parts, 3);
    fw_tensor_unref(t);
    return err;
}

START_TEST(split_backward_matches_finite_differences_with_unused_part)
{
    int64_t s[] = {2, 5};
    tu_gradcheck1(split_fn, NULL, s, 2, 7);
}
END_TEST

START_TEST(split_rejects_bad_sections_and_axis)
{
    int64_t s[] = {4, 6};
    fw_tensor *x = tu_rand(FW_FLOAT32, s, 2, 1), *o[4] = {NULL, NULL, NULL, NULL};
    int64_t two_minus[] = {-1, -1, 6}, neg[] = {2, -3, 4}, short_sum[] = {1, 2, 2},
            over[] = {4, 4, -1};

    CK_ERR(fw_split(o, x, 4, NULL, 1), FW_ESHAPE, "not divisible", "[4, 6]");
    CK_ERR(fw_split(o, x, 3, two_minus, 1), FW_EINVAL, "section 1");
    CK_ERR(fw_split(o, x, 3, neg, 1), FW_EINVAL, "section 1", "-3");
    CK_ERR(fw_split(o, x, 3, short_sum, 1), FW_ESHAPE, "add up to 5", "[4, 6]");
    CK_ERR(fw_split(o, x, 3, over, 1), FW_ESHAPE, "8", "[4, 6]");
    CK_ERR(fw_split(o, x, 2, NULL, 2), FW_EAXIS, "axis 2", "rank 2");
    CK_ERR(fw_split(o, x, 0, NULL, 0), FW_EINVAL, ">= 1");
    fw_tensor *s0 = tu_rand(FW_FLOAT32, NULL, 0, 2);
    CK_ERR(fw_split(o, s0, 1, NULL, 0), FW_ESHAPE, "0-D");
    fw_tensor_unref(s0);
    for (int k = 0; k < 3; k++)
        ck_assert_ptr_null(o[k]);
    fw_tensor_unref(x);
}
END_TEST

/* ---- tile ------------------------------------------------------------------------ */

START_TEST(tile_matches_reference_with_more_fewer_and_zero_repeats)
{
    uint64_t st = 14;
    for (int rep = 0; rep < 24; rep++) {
        fw_dtype dt = tu_all_dtypes[rep % TU_N_DTYPES];
        int nd = (int)tu_rand_int(&st, 0, 3), nr = (int)tu_rand_int(&st, 0, 4);
        int ond = nd > nr ? nd : nr;
        int64_t shape[FW_MAX_DIMS], r[FW_MAX_DIMS], xs[FW_MAX_DIMS], os[FW_MAX_DIMS];
        fw_tensor *x, *out = NULL;

        tu_rand_shape(shape, nd, &st, 1, 3);
        for (int k = 0; k < nr; k++)
            r[k] = tu_rand_int(&st, rep == 5 ? 0 : 1, 3);
        x = tu_rand_view(dt, shape, nd, 700 + (uint64_t)rep);
        for (int d = 0; d < ond; d++) {
            int xi = d - (ond - nd), ri = d - (ond - nr);
            xs[d] = xi >= 0 ? shape[xi] : 1;
            os[d] = xs[d] * (ri >= 0 ? r[ri] : 1);
        }
        CK_OK(fw_tile(&out, x, r, nr));
        CK_SHAPE(out, os, ond);
        double *v = fw_test_doubles(x, NULL);
        int64_t n = tu_numel(os, ond);
        double *ref = malloc(sizeof(double) * (size_t)(n + 1));
        for (int64_t i = 0; i < n; i++) {
            int64_t c[FW_MAX_DIMS] = {0};
            tu_unravel(c, i, os, ond);
            for (int d = 0; d < ond; d++)
                c[d] %= xs[d];
            ref[i] = v[tu_ravel(c, xs, ond)];
        }
        CK_CLOSE(out, ref, n, 0, 0);
        free(ref);
        free(v);
        fw_tensor_unref(x);
        fw_tensor_unref(out);
    }
}
END_TEST

static int tile_fn(fw_tensor **out, fw_tensor *const *in, void *ctx)
{
    int64_t r[] = {2, 1, 3};
    fw_tensor *t = NULL;
    int err;
    (void)ctx;
    if ((err = fw_swapaxes(&t, in[0], 0, 1)) < 0)
        return err;
    err = fw_tile(out, t, r, 3);
    fw_tensor_unref(t);
    return err;
}

START_TEST(tile_backward_sums_the_copies)
{
    int64_t s[] = {3, 2};
    tu_gradcheck1(tile_fn, NULL, s, 2, 8);
}
END_TEST

START_TEST(tile_rejects_negative_repeats_and_too_many_dims)
{
    int64_t s[] = {2, 3}, neg[] = {1, -2}, many[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
    fw_tensor *x = tu_rand(FW_FLOAT32, s, 2, 1), *out = NULL;
    CK_ERR(fw_tile(&out, x, neg, 2), FW_EINVAL, "repeat_times[1]", "-2");
    CK_ERR(fw_tile(&out, x, many, 9), FW_ESHAPE, "9");
    CK_ERR(fw_tile(&out, NULL, neg, 2), FW_EINVAL, "NULL");
    int64_t huge[] = {1, INT64_MAX / 2};
    CK_ERR(fw_tile(&out, x, huge, 2), FW_ESHAPE, "overflows axis 1");
    ck_assert_ptr_null(out);
    fw_tensor_unref(x);
}
END_TEST

/* ---- pad ---------------------------------------------------------------------------- */

START_TEST(pad_known_answers_for_each_mode)
{
    int64_t s[] = {1, 1, 3}, os[] = {1, 1, 7}, p[] = {2, 2};
    double xv[] = {1, 2, 3};
    double want[4][7] = {
        {9, 9, 1, 2, 3, 9, 9}, /* constant 9 */
        {3, 2, 1, 2, 3, 2, 1}, /* reflect */
        {1, 1, 1, 2, 3, 3, 3}, /* replicate */
        {2, 3, 1, 2, 3, 1, 2}, /* circular */
    };
    fw_tensor *x = tu_tensor(xv, FW_FLOAT32, s, 3);
    for (int m = 0; m < 4; m++) {
        fw_tensor *out = NULL;
        CK_OK(fw_pad(&out, x, p, 2, (fw_pad_mode)m, 9));
        CK_SHAPE(out, os, 3);
        CK_CLOSE(out, want[m], 7, 0, 0);
        fw_tensor_unref(out);
    }
    fw_tensor_unref(x);
}
END_TEST

START_TEST(pad_list_runs_from_last_axis_and_full_constant_list_from_first)
{
    int64_t s[] = {2, 3}, last[] = {1, 0}, full[] = {1, 0, 0, 2};
    int64_t s_last[] = {2, 4}, s_full[] = {3, 5};
    double xv[] = {1, 2, 3, 4, 5, 6};
    double want_last[] = {0, 1, 2, 3, 0, 4, 5, 6};
    double want_full[] = {0, 0, 0, 0, 0, 1, 2, 3, 0, 0, 4, 5, 6, 0, 0};
    fw_tensor *x = tu_tensor(xv, FW_FLOAT64, s, 2), *out = NULL;

    CK_OK(fw_pad(&out, x, last, 2, FW_PAD_CONSTANT, 0));
    CK_SHAPE(out, s_last, 2);
    CK_CLOSE(out, want_last, 8, 0, 0);
    fw_tensor_unref(out);
    CK_OK(fw_pad(&out, x, full, 4, FW_PAD_CONSTANT, 0));
    CK_SHAPE(out, s_full, 2);
    CK_CLOSE(out, want_full, 15, 0, 0);
    fw_tensor_unref(out);
    fw_tensor_unref(x);
}
END_TEST

/* Independent reference: the source coordinate along one axis, or -1. */
static int64_t pad_src(int64_t j, int64_t before, int64_t n, int mode)
{
    int64_t i = j - before;
    switch (mode) {
    case FW_PAD_CONSTANT: return i >= 0 && i < n ? i : -1;
    case FW_PAD_REFLECT:
        while (i < 0 || i >= n)
            i = i < 0 ? -i : 2 * (n - 1) - i;
        return i;
    case FW_PAD_REPLICATE: return i < 0 ? 0 : i >= n ? n - 1 : i;
    default: return ((i % n) + n) % n;
    }
}

START_TEST(pad_matches_reference_on_random_shapes_modes_and_dtypes)
{
    uint64_t st = 15;
    for (int rep = 0; rep < 32; rep++) {
        fw_dtype dt = tu_all_dtypes[rep % TU_N_DTYPES];
        int mode = (rep / 2) % 4, nd = (int)tu_rand_int(&st, 1, 4);
        int k = (int)tu_rand_int(&st, 1, nd);
        int64_t shape[FW_MAX_DIMS], pad[2 * FW_MAX_DIMS], before[FW_MAX_DIMS] = {0},
            os[FW_MAX_DIMS];
        fw_tensor *x, *out = NULL;

        tu_rand_shape(shape, nd, &st, 2, 4);
        for (int p = 0; p < k; p++) {
            int d = nd - 1 - p;
            int64_t lim = mode == FW_PAD_REFLECT ? shape[d] - 1 : shape[d];
            pad[2 * p] = tu_rand_int(&st, mode == FW_PAD_CONSTANT ? -1 : 0, lim);
            pad[2 * p + 1] = tu_rand_int(&st, 0, lim);
        }
        memcpy(os, shape, sizeof(shape));
        for (int p = 0; p < k; p++) {
            int d = nd - 1 - p;
            before[d] = pad[2 * p];
            os[d] = shape[d] + pad[2 * p] + pad[2 * p + 1];
        }
        if (mode == FW_PAD_CONSTANT && k == nd) { /* keep the last-axis-first reading */
            k = nd - 1;
            for (int d = 0; d < nd - k; d++) {
                os[d] = shape[d];
                before[d] = 0;
            }
        }
        x = tu_rand_view(dt, shape, nd, 800 + (uint64_t)rep);
        CK_OK(fw_pad(&out, x, pad, 2 * k, (fw_pad_mode)mode, 1.5));
        CK_SHAPE(out, os, nd);
        double *v = fw_test_doubles(x, NULL), fill;
        fw_tensor *ft = NULL;
        CK_OK(fw_full(&ft, dt, NULL, 0, 1.5));
        CK_OK(fw_tensor_item(&fill, ft));
        fw_tensor_unref(ft);
        int64_t n = tu_numel(os, nd);
        double *ref = malloc(sizeof(double) * (size_t)(n + 1));
        for (int64_t i = 0; i < n; i++) {
            int64_t c[FW_MAX_DIMS] = {0};
            bool filled = false;
            tu_unravel(c, i, os, nd);
            for (int d = 0; d < nd; d++) {
                c[d] = pad_src(c[d], before[d], shape[d], mode);
                filled |= c[d] < 0;
            }
            ref[i] = filled ? fill : v[tu_ravel(c, shape, nd)];
        }
        CK_CLOSE(out, ref, n, 0, 0);
        free(ref);
        free(v);
        fw_tensor_unref(x);
        fw_tensor_unref(out);
    }
}
END_TEST

typedef struct {
    int mode;
} pad_ctx;

static int pad_fn(fw_tensor **out, fw_tensor *const *in, void *ctx)
{
    pad_ctx *c = ctx;
    int64_t p[] = {2, 1, 1, 2};
    fw_tensor *t = NULL;
    int err;
    if ((err = fw_swapaxes(&t, in[0], 1, 2)) < 0) /* [2, 4, 3] view */
        return err;
    err = fw_pad(out, t, p, 4, (fw_pad_mode)c->mode, 0.5);
    fw_tensor_unref(t);
    return err;
}

START_TEST(pad_backward_matches_finite_differences_for_each_mode)
{
    int64_t s[] = {2, 3, 4};
    for (int m = 0; m < 4; m++) {
        fw_tensor *x = fw_test_rand(FW_FLOAT64, s, 3, 9, true);
        pad_ctx ctx = {m};
        ck_assert_msg(fw_gradcheck(pad_fn, &ctx, 1, &x, TU_EPS, TU_ATOL, TU_RTOL) == 0,
                      "mode %d: %s", m, fw_error_last());
        fw_tensor_unref(x);
    }
}
END_TEST

START_TEST(pad_rejects_odd_lists_too_long_lists_and_oversized_pads)
{
    int64_t s[] = {1, 2, 3}, odd[] = {1, 1, 1}, big[] = {3, 0}, neg[] = {-1, 0},
            circ[] = {4, 0}, many[8] = {0};
    fw_tensor *x = tu_rand(FW_FLOAT32, s, 3, 1), *out = NULL;

    CK_ERR(fw_pad(&out, x, odd, 3, FW_PAD_CONSTANT, 0), FW_EINVAL, "even");
    CK_ERR(fw_pad(&out, x, many, 8, FW_PAD_CONSTANT, 0), FW_EINVAL, "rank 3");
    CK_ERR(fw_pad(&out, x, big, 2, FW_PAD_REFLECT, 0), FW_EINVAL, "reflect", "axis 2");
    CK_ERR(fw_pad(&out, x, circ, 2, FW_PAD_CIRCULAR, 0), FW_EINVAL, "circular", "axis 2");
    CK_ERR(fw_pad(&out, x, neg, 2, FW_PAD_REPLICATE, 0), FW_EINVAL, "negative");
    CK_ERR(fw_pad(&out, x, big, 2, (fw_pad_mode)7, 0), FW_EINVAL, "mode 7");
    int64_t huge[] = {INT64_MAX, 1};
    CK_ERR(fw_pad(&out, x, huge, 2, FW_PAD_CONSTANT, 0), FW_EINVAL, "overflows axis 2");
    ck_assert_ptr_null(out);
    fw_tensor_unref(x);
}
END_TEST

static Suite *join_suite(void)
{
    Suite *s = suite_create("fw_index_join");
    TCase *tc = tcase_create("join");
    tcase_add_test(tc, concat_matches_reference_for_every_dtype_axis_and_view);
    tcase_add_test(tc, concat_backward_matches_finite_differences);
    tcase_add_test(tc, concat_rejects_bad_axis_shapes_dtypes_and_counts);
    tcase_add_test(tc, stack_matches_reference_for_every_dtype_axis_and_view);
    tcase_add_test(tc, stack_backward_matches_finite_differences);
    tcase_add_test(tc, stack_rejects_bad_axis_and_shapes);
    tcase_add_test(tc, split_matches_reference_for_parts_sections_and_minus_one);
    tcase_add_test(tc, split_backward_matches_finite_differences_with_unused_part);
    tcase_add_test(tc, split_rejects_bad_sections_and_axis);
    tcase_add_test(tc, tile_matches_reference_with_more_fewer_and_zero_repeats);
    tcase_add_test(tc, tile_backward_sums_the_copies);
    tcase_add_test(tc, tile_rejects_negative_repeats_and_too_many_dims);
    tcase_add_test(tc, pad_known_answers_for_each_mode);
    tcase_add_test(tc, pad_list_runs_from_last_axis_and_full_constant_list_from_first);
    tcase_add_test(tc, pad_matches_reference_on_random_shapes_modes_and_dtypes);
    tcase_add_test(tc, pad_backward_matches_finite_differences_for_each_mode);
    tcase_add_test(tc, pad_rejects_odd_lists_too_long_lists_and_oversized_pads);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(join_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
