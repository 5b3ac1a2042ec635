/*
 * test_index_gather.c - gather, index_select, take_along_axis, index_add,
 * where, clip, one_hot and cumsum: forward against naive float64
 * references on random shapes, dtypes, negative axes and non-contiguous
 * inputs; backward against central finite differences; every error path.
 */
#include "test_index_util.h"

static fw_tensor *index_tensor(const int64_t *v, int64_t n, fw_dtype dt, int nd)
{
    double d[64];
    for (int64_t i = 0; i < n; i++)
        d[i] = (double)v[i];
    return tu_tensor(d, dt, &n, nd);
}

/* ---- gather / index_select ----------------------------------------------------- */

START_TEST(gather_and_index_select_match_reference_with_repeats_and_views)
{
    uint64_t st = 21;
    for (int rep = 0; rep < 32; rep++) {
        fw_dtype dt = tu_all_dtypes[rep % TU_N_DTYPES];
        int nd = (int)tu_rand_int(&st, 1, 4), sel = rep & 1;
        int axis = (int)tu_rand_int(&st, -nd, nd - 1), ax = axis < 0 ? axis + nd : axis;
        int64_t shape[FW_MAX_DIMS], os[FW_MAX_DIMS], idx[8], nidx = tu_rand_int(&st, 0, 6);
        fw_tensor *x, *it, *out = NULL;

        tu_rand_shape(shape, nd, &st, 1, 4);
        for (int64_t j = 0; j < nidx; j++)
            idx[j] = tu_rand_int(&st, 0, shape[ax] - 1);
        x = tu_rand_view(dt, shape, nd, 900 + (uint64_t)rep);
        it = index_tensor(idx, nidx, (rep / 2) % 2 ? FW_INT32 : FW_INT64, 1);
        if (sel)
            CK_OK(fw_index_select(&out, x, it, axis));
        else
            CK_OK(fw_gather(&out, x, it, axis));
        memcpy(os, shape, sizeof(shape));
        os[ax] = nidx;
        CK_SHAPE(out, os, nd);
        ck_assert_int_eq(fw_tensor_dtype(out), dt);
        double *v = fw_test_doubles(x, NULL);
        int64_t n = tu_numel(os, nd);
        double *ref = malloc(sizeof(double) * (size_t)(n + 1));
        for (int64_t i = 0; i < n; i++) {
            int64_t c[FW_MAX_DIMS] = {0};
            tu_unravel(c, i, os, nd);
            c[ax] = idx[c[ax]];
            ref[i] = v[tu_ravel(c, shape, nd)];
        }
        CK_CLOSE(out, ref, n, 0, 0);
        free(ref);
        free(v);
        fw_tensor_unref(x);
        fw_tensor_unref(it);
        fw_tensor_unref(out);
    }
}
END_TEST

START_TEST(gather_with_0d_index_drops_the_axis)
{
    int64_t s[] = {3, 2}, os[] = {2}, one = 2;
    double xv[] = {1, 2, 3, 4, 5, 6}, want[] = {5, 6};
    fw_tensor *x = tu_tensor(xv, FW_FLOAT32, s, 2), *out = NULL, *i0 = NULL;
    CK_OK(fw_tensor_from_data(&i0, &one, FW_INT64, NULL, 0));
    CK_OK(fw_gather(&out, x, i0, 0));
    CK_SHAPE(out, os, 1);
    CK_CLOSE(out, want, 2, 0, 0);
    fw_tensor_unref(out);
    CK_ERR(fw_index_select(&out, x, i0, 0), FW_ESHAPE, "1-D", "[]");
    fw_tensor_unref(x);
    fw_tensor_unref(i0);
}
END_TEST

typedef struct {
    int axis, which;
    fw_tensor *index;
} idx_ctx;

static int gather_fn(fw_tensor **out, fw_tensor *const *in, void *ctx)
{
    idx_ctx *c = ctx;
    fw_tensor *t = NULL;
    int err = fw_swapaxes(&t, in[0], 0, 2);
    if (err < 0)
        return err;
    err = c->which ? fw_index_select(out, t, c->index, c->axis)
                   : fw_gather(out, t, c->index, c->axis);
    fw_tensor_unref(t);
    return err;
}

START_TEST(gather_and_index_select_backward_accumulates_repeats)
{
    int64_t s[] = {4, 3, 2}, iv[] = {1, 0, 1, 1};
    for (int which = 0; which < 2; which++) {
        for (int axis = -3; axis < 3; axis++) {
            fw_tensor *x = fw_test_rand(FW_FLOAT64, s, 3, 10, true);
            idx_ctx ctx = {axis, which, index_tensor(iv, 4, FW_INT64, 1)};
            ck_assert_msg(fw_gradcheck(gather_fn, &ctx, 1, &x, TU_EPS, TU_ATOL, TU_RTOL) == 0,
                          "axis %d: %s", axis, fw_error_last());
            fw_tensor_unref(ctx.index);
            fw_tensor_unref(x);
        }
    }
}
END_TEST

START_TEST(gather_rejects_bad_axis_index_range_dtype_and_rank)
{
    int64_t s[] = {3, 4}, bad[] = {0, 3}, neg[] = {-1}, ok[] = {1}, s2[] = {1, 1};
    double fv[] = {0};
    fw_tensor *x = tu_rand(FW_FLOAT32, s, 2, 1), *out = NULL;
    fw_tensor *ib = index_tensor(bad, 2, FW_INT64, 1), *in = index_tensor(neg, 1, FW_INT32, 1);
    fw_tensor *io = index_tensor(ok, 1, FW_INT64, 1), *fi = tu_tensor(fv, FW_FLOAT32, ok, 1);
    fw_tensor *i2 = tu_tensor(fv, FW_INT64, s2, 2);

    CK_ERR(fw_gather(&out, x, io, 2), FW_EAXIS, "axis 2", "rank 2");
    CK_ERR(fw_gather(&out, x, io, -3), FW_EAXIS, "axis -3", "rank 2");
    CK_ERR(fw_gather(&out, x, ib, 0), FW_ERANGE, "index 3", "axis 0", "size 3");
    CK_ERR(fw_index_select(&out, x, in, 1), FW_ERANGE, "index -1", "axis 1", "size 4");
    CK_ERR(fw_gather(&out, x, fi, 0), FW_EDTYPE, "int32 or int64", "float32");
    CK_ERR(fw_gather(&out, x, i2, 0), FW_ESHAPE, "[1, 1]");
    CK_ERR(fw_gather(&out, NULL, io, 0), FW_EINVAL, "NULL");
    fw_tensor *s0 = tu_rand(FW_FLOAT32, NULL, 0, 9);
    CK_ERR(fw_gather(&out, s0, io, 0), FW_ESHAPE, "at least 1 dim");
    fw_tensor_unref(s0);
    ck_assert_ptr_null(out);
    fw_tensor *all[] = {x, ib, in, io, fi, i2};
    tu_free(all, 6);
}
END_TEST

/* ---- take_along_axis --------------------------------------------------------------- */

START_TEST(take_along_axis_matches_reference_with_broadcast_index)
{
    uint64_t st = 22;
    for (int rep = 0; rep < 24; rep++) {
        fw_dtype dt = tu_all_dtypes[rep % TU_N_DTYPES];
        int nd = (int)tu_rand_int(&st, 1, 4);
        int axis = (int)tu_rand_int(&st, -nd, nd - 1), ax = axis < 0 ? axis + nd : axis;
        int64_t shape[FW_MAX_DIMS], is[FW_MAX_DIMS], os[FW_MAX_DIMS];
        fw_tensor *x, *it, *out = NULL;

        tu_rand_shape(shape, nd, &st, 1, 4);
        for (int d = 0; d < nd; d++) {
            is[d] = d == ax ? tu_rand_int(&st, 1, 5) : (rep % 3 == 0 ? 1 : shape[d]);
            os[d] = d == ax ? is[d] : shape[d];
        }
        int64_t ni = tu_numel(is, nd);
        double *iv = malloc(sizeof(double) * (size_t)ni);
        for (int64_t i = 0; i < ni; i++)
            iv[i] = (double)tu_rand_int(&st, 0, shape[ax] - 1);
        it = tu_tensor(iv, rep % 2 ? FW_INT32 : FW_INT64, is, nd);
        x = tu_rand_view(dt, shape, nd, 1000 + (uint64_t)rep);
        CK_OK(fw_take_along_axis(&out, x, it, axis));
        CK_SHAPE(out, os, nd);
        double *v = fw_test_doubles(x, NULL);
        int64_t n = tu_numel(os, nd);
        double *ref = malloc(sizeof(double) * (size_t)n);
        for (int64_t i = 0; i < n; i++) {
            int64_t c[FW_MAX_DIMS] = {0}, ci[FW_MAX_DIMS] = {0};
            tu_unravel(c, i, os, nd);
            for (int d = 0; d < nd; d++)
                ci[d] = is[d] == 1 ? 0 : c[d];
            c[ax] = (int64_t)iv[tu_ravel(ci, is, nd)];
            ref[i] = v[tu_ravel(c, shape, nd)];
        }
        CK_CLOSE(out, ref, n, 0, 0);
        free(ref);
        free(v);
        free(iv);
        fw_tensor_unref(x);
        fw_tensor_unref(it);
        fw_tensor_unref(out);
    }
}
END_TEST

static int take_fn(fw_tensor **out, fw_tensor *const *in, void *ctx)
{
    idx_ctx *c = ctx;
    fw_tensor *t = NULL;
    int err = fw_swapaxes(&t, in[0], 0, 1);
    if (err < 0)
        return err;
    err = fw_take_along_axis(out, t, c->index, c->axis);
    fw_tensor_unref(t);
    return err;
}

START_TEST(take_along_axis_backward_matches_finite_differences)
{
    int64_t s[] = {4, 3}, is[] = {3, 5}; /* x viewed as [3, 4] */
    double iv[] = {0, 3, 3, 1, 2, 1, 1, 0, 2, 3, 2, 2, 2, 0, 1};
    int64_t s_b[] = {1, 4};              /* broadcast along axis 0 */
    double ivb[] = {2, 0, 1, 2};
    fw_tensor *x = fw_test_rand(FW_FLOAT64, s, 2, 11, true);
    idx_ctx c1 = {-1, 0, tu_tensor(iv, FW_INT64, is, 2)};
    idx_ctx c2 = {0, 0, tu_tensor(ivb, FW_INT64, s_b, 2)};
    ck_assert_msg(fw_gradcheck(take_fn, &c1, 1, &x, TU_EPS, TU_ATOL, TU_RTOL) == 0, "%s",
                  fw_error_last());
    ck_assert_msg(fw_gradcheck(take_fn, &c2, 1, &x, TU_EPS, TU_ATOL, TU_RTOL) == 0, "%s",
                  fw_error_last());
    fw_tensor_unref(c1.index);
    fw_tensor_unref(c2.index);
    fw_tensor_unref(x);
}
END_TEST

START_TEST(take_along_axis_rejects_rank_mismatch_bad_broadcast_and_range)
{
    int64_t s[] = {3, 4}, s1[] = {3}, s2[] = {2, 2}, s3[] = {3, 1};
    double z[] = {0, 0, 0, 0}, big[] = {0, 9, 0};
    fw_tensor *x = tu_rand(FW_FLOAT32, s, 2, 1), *out = NULL;
    fw_tensor *i1 = tu_tensor(z, FW_INT64, s1, 1), *i2 = tu_tensor(z, FW_INT64, s2, 2);
    fw_tensor *i3 = tu_tensor(big, FW_INT64, s3, 2);

    CK_ERR(fw_take_along_axis(&out, x, i1, 0), FW_ESHAPE, "[3, 4]", "[3]");
    CK_ERR(fw_take_along_axis(&out, x, i2, 1), FW_ESHAPE, "[3, 4]", "[2, 2]");
    CK_ERR(fw_take_along_axis(&out, x, i3, 0), FW_ERANGE, "index 9", "size 3");
    CK_ERR(fw_take_along_axis(&out, x, i3, 2), FW_EAXIS, "axis 2", "rank 2");
    ck_assert_ptr_null(out);
    fw_tensor *all[] = {x, i1, i2, i3};
    tu_free(all, 4);
}
END_TEST

/* ---- index_add ------------------------------------------------------------------------ */

START_TEST(index_add_matches_reference_for_numeric_dtypes)
{
    static const fw_dtype dts[] = {FW_FLOAT32, FW_FLOAT64, FW_INT32, FW_INT64, FW_UINT8,
                                   FW_FLOAT16, FW_BFLOAT16};
    uint64_t st = 23;
    for (int rep = 0; rep < 21; rep++) {
        fw_dtype dt = dts[rep % 7];
        int nd = (int)tu_rand_int(&st, 1, 3);
        int axis = (int)tu_rand_int(&st, -nd, nd - 1), ax = axis < 0 ? axis + nd : axis;
        int64_t shape[FW_MAX_DIMS], vs[FW_MAX_DIMS], idx[6], nidx = tu_rand_int(&st, 0, 5);
        fw_tensor *x, *val, *it, *out = NULL;

        tu_rand_shape(shape, nd, &st, 1, 4);
        for (int64_t j = 0; j < nidx; j++)
            idx[j] = tu_rand_int(&st, 0, shape[ax] - 1);
        memcpy(vs, shape, sizeof(shape));
        vs[ax] = nidx;
        x = tu_rand_view(dt, shape, nd, 1100 + (uint64_t)rep);
        val = tu_rand_view(dt, vs, nd, 1200 + (uint64_t)rep);
        it = index_tensor(idx, nidx, FW_INT64, 1);
        CK_OK(fw_index_add(&out, x, it, axis, val));
        CK_SHAPE(out, shape, nd);
        double *xv = fw_test_doubles(x, NULL), *vv = fw_test_doubles(val, NULL);
        int64_t nv = tu_numel(vs, nd);
        for (int64_t i = 0; i < nv; i++) {
            int64_t c[FW_MAX_DIMS] = {0};
            tu_unravel(c, i, vs, nd);
            c[ax] = idx[c[ax]];
            xv[tu_ravel(c, shape, nd)] += vv[i];
        }
        CK_CLOSE(out, xv, tu_numel(shape, nd), 1e-5, 1e-5);
        free(xv);
        free(vv);
        fw_tensor *all[] = {x, val, it, out};
        tu_free(all, 4);
    }
}
END_TEST

static int index_add_fn(fw_tensor **out, fw_tensor *const *in, void *ctx)
{
    idx_ctx *c = ctx;
    fw_tensor *t = NULL;
    int err = fw_swapaxes(&t, in[1], 0, 1);
    if (err < 0)
        return err;
    err = fw_index_add(out, in[0], c->index, c->axis, t);
    fw_tensor_unref(t);
    return err;
}

START_TEST(index_add_backward_reaches_x_and_value)
{
    int64_t xs[] = {3, 4}, vs[] = {3, 3}, iv[] = {2, 0, 2};
    fw_tensor *in[2] = {fw_test_rand(FW_FLOAT64, xs, 2, 12, true),
                        fw_test_rand(FW_FLOAT64, vs, 2, 13, true)};
    idx_ctx ctx = {1, 0, index_tensor(iv, 3, FW_INT32, 1)};
    ck_assert_msg(fw_gradcheck(index_add_fn, &ctx, 2, in, TU_EPS, TU_ATOL, TU_RTOL) == 0, "%s",
                  fw_error_last());
    fw_tensor_unref(ctx.index);
    tu_free(in, 2);
}
END_TEST

START_TEST(index_add_in_place_writes_through_a_view_and_respects_grad_rule)
{
    int64_t s[] = {3, 2}, vs[] = {2, 2}, iv[] = {0, 0};
    double bv[] = {1, 2, 3, 4, 5, 6}, vv[] = {10, 20, 30, 40};
    /* base [2, 3]; view = base^T [3, 2]: view[0] gets 10+30, 20+40 */
    int64_t bs[] = {2, 3};
    double want_base[] = {1 + 40, 2, 3, 4 + 60, 5, 6};
    fw_tensor *base = tu_tensor(bv, FW_FLOAT64, bs, 2), *view = NULL;
    fw_tensor *val = tu_tensor(vv, FW_FLOAT64, vs, 2), *it = index_tensor(iv, 2, FW_INT64, 1);
    (void)s;
    CK_OK(fw_swapaxes(&view, base, 0, 1));
    CK_OK(fw_index_add_(view, it, 0, val));
    CK_CLOSE(base, want_base, 6, 0, 0);

    fw_tensor *p = fw_test_rand(FW_FLOAT64, s, 2, 14, true); /* a parameter */
    double *before = fw_test_doubles(p, NULL);
    CK_ERR(fw_index_add_(p, it, 0, val), FW_EGRAD, "leaf");
    CK_CLOSE(p, before, 6, 0, 0); /* untouched */
    bool prev = fw_set_grad_enabled(false);
    CK_OK(fw_index_add_(p, it, 0, val));
    fw_set_grad_enabled(prev);
    before[0] += 40;
    before[1] += 60;
    CK_CLOSE(p, before, 6, 0, 0);
    free(before);
    fw_tensor *all[] = {base, view, val, it, p};
    tu_free(all, 5);
}
END_TEST

START_TEST(index_add_rejects_mismatched_value_and_dtypes)
{
    int64_t xs[] = {3, 4}, vs[] = {2, 3}, iv[] = {0, 1};
    fw_tensor *x = tu_rand(FW_FLOAT32, xs, 2, 1), *v = tu_rand(FW_FLOAT32, vs, 2, 2);
    fw_tensor *vd = tu_rand(FW_FLOAT64, xs, 2, 3), *it = index_tensor(iv, 2, FW_INT64, 1);
    fw_tensor *b = tu_rand(FW_BOOL, xs, 2, 4), *out = NULL;
    CK_ERR(fw_index_add(&out, x, it, 0, v), FW_ESHAPE, "[2, 3]", "[3, 4]");
    CK_ERR(fw_index_add(&out, x, it, 0, vd), FW_EDTYPE, "float64", "float32");
    CK_ERR(fw_index_add(&out, b, it, 0, b), FW_EDTYPE, "bool");
    CK_ERR(fw_index_add(&out, x, it, 5, v), FW_EAXIS, "axis 5", "rank 2");
    int64_t vs2[] = {2, 4};
    fw_tensor *h = tu_rand(FW_FLOAT16, xs, 2, 5), *hv = tu_rand(FW_FLOAT16, vs2, 2, 6);
    CK_ERR(fw_index_add_(h, it, 0, hv), FW_EDTYPE, "float16");
    CK_ERR(fw_index_add_(x, it, 0, v), FW_ESHAPE, "[2, 3]", "[3, 4]");
    fw_tensor_unref(h);
    fw_tensor_unref(hv);
    ck_assert_ptr_null(out);
    fw_tensor *all[] = {x, v, vd, it, b};
    tu_free(all, 5);
}
END_TEST

/* ---- where ------------------------------------------------------------------------------- */

START_TEST(where_matches_reference_with_three_way_broadcast)
{
    uint64_t st = 24;
    for (int rep = 0; rep < 24; rep++) {
        fw_dtype dt = tu_all_dtypes[rep % TU_N_DTYPES];
        int nd = (int)tu_rand_int(&st, 1, 4);
        int64_t os[FW_MAX_DIMS], cs[FW_MAX_DIMS], xs[FW_MAX_DIMS], ys[FW_MAX_DIMS];
        int cn = (int)tu_rand_int(&st, 0, nd), yn = (int)tu_rand_int(&st, 0, nd);

        tu_rand_shape(os, nd, &st, 1, 4);
        for (int d = 0; d < nd; d++) {
            xs[d] = tu_rand_int(&st, 0, 2) ? os[d] : 1;
            cs[d] = tu_rand_int(&st, 0, 2) ? os[d] : 1;
            ys[d] = tu_rand_int(&st, 0, 2) ? os[d] : 1;
        }
        /* cond and y may have fewer leading dims */
        fw_tensor *c = tu_rand_view(FW_BOOL, cs + (nd - cn), cn, 1300 + (uint64_t)rep);
        fw_tensor *x = tu_rand_view(dt, xs, nd, 1400 + (uint64_t)rep);
        fw_tensor *y = tu_rand(dt, ys + (nd - yn), yn, 1500 + (uint64_t)rep), *out = NULL;
        int64_t rs[FW_MAX_DIMS];
        for (int d = 0; d < nd; d++) { /* the broadcast result shape */
            int64_t m = xs[d];
            if (d >= nd - cn && cs[d] > m) m = cs[d];
            if (d >= nd - yn && ys[d] > m) m = ys[d];
            rs[d] = m;
        }
        CK_OK(fw_where(&out, c, x, y));
        CK_SHAPE(out, rs, nd);
        double *cv = fw_test_doubles(c, NULL), *xv = fw_test_doubles(x, NULL),
               *yv = fw_test_doubles(y, NULL);
        int64_t n = tu_numel(rs, nd);
        double *ref = malloc(sizeof(double) * (size_t)n);
        for (int64_t i = 0; i < n; i++) {
            int64_t k[FW_MAX_DIMS] = {0}, kc[FW_MAX_DIMS] = {0}, kx[FW_MAX_DIMS] = {0}, ky[FW_MAX_DIMS] = {0};
            tu_unravel(k, i, rs, nd);
            for (int d = 0; d < nd; d++) {
                kx[d] = xs[d] == 1 ? 0 : k[d];
                if (d >= nd - cn) kc[d - (nd - cn)] = cs[d] == 1 ? 0 : k[d];
                if (d >= nd - yn) ky[d - (nd - yn)] = ys[d] == 1 ? 0 : k[d];
            }
            ref[i] = cv[tu_ravel(kc, cs + (nd - cn), cn)] != 0
                         ? xv[tu_ravel(kx, xs, nd)]
                         : yv[tu_ravel(ky, ys + (nd - yn), yn)];
        }
        CK_CLOSE(out, ref, n, 0, 0);
        free(ref);
        free(cv);
        free(xv);
        free(yv);
        fw_tensor *all[] = {c, x, y, out};
        tu_free(all, 4);
    }
}
END_TEST

static int where_fn(fw_tensor **out, fw_tensor *const *in, void *ctx)
{
    fw_tensor *cond = ctx, *t = NULL;
    int err = fw_swapaxes(&t, in[0], 0, 1);
    if (err < 0)
        return err;
    err = fw_where(out, cond, t, in[1]);
    fw_tensor_unref(t);
    return err;
}

START_TEST(where_backward_splits_and_reduces_broadcast_gradients)
{
    int64_t xs[] = {3, 2}, ys[] = {3}, cs[] = {2, 1};   /* x viewed as [2, 3] */
    double cv[] = {1, 0};
    fw_tensor *in[2] = {fw_test_rand(FW_FLOAT64, xs, 2, 15, true),
                        fw_test_rand(FW_FLOAT64, ys, 1, 16, true)};
    fw_tensor *cond = tu_tensor(cv, FW_BOOL, cs, 2);
    ck_assert_msg(fw_gradcheck(where_fn, cond, 2, in, TU_EPS, TU_ATOL, TU_RTOL) == 0, "%s",
                  fw_error_last());
    fw_tensor_unref(cond);
    tu_free(in, 2);
}
END_TEST

START_TEST(where_rejects_non_bool_condition_mixed_dtypes_and_bad_shapes)
{
    int64_t s[] = {2, 3}, s2[] = {4};
    fw_tensor *c = tu_rand(FW_BOOL, s, 2, 1), *ci = tu_rand(FW_INT32, s, 2, 2);
    fw_tensor *x = tu_rand(FW_FLOAT32, s, 2, 3), *y = tu_rand(FW_FLOAT64, s, 2, 4);
    fw_tensor *z = tu_rand(FW_FLOAT32, s2, 1, 5), *out = NULL;
    CK_ERR(fw_where(&out, ci, x, x), FW_EDTYPE, "bool", "int32");
    CK_ERR(fw_where(&out, c, x, y), FW_EDTYPE, "float32", "float64");
    CK_ERR(fw_where(&out, c, x, z), FW_ESHAPE, "[2, 3]", "[4]");
    CK_ERR(fw_where(&out, c, NULL, z), FW_EINVAL, "NULL");
    ck_assert_ptr_null(out);
    fw_tensor *all[] = {c, ci, x, y, z};
    tu_free(all, 5);
}
END_TEST

/* ---- clip ---------------------------------------------------------------------------------- */

START_TEST(clip_matches_reference_for_numeric_dtypes_and_optional_bounds)
{
    static const fw_dtype dts[] = {FW_FLOAT32, FW_FLOAT64, FW_FLOAT16, FW_BFLOAT16, FW_INT32,
                                   FW_INT64, FW_UINT8};
    uint64_t st = 25;
    for (int rep = 0; rep < 21; rep++) {
        fw_dtype dt = dts[rep % 7];
        int nd = (int)tu_rand_int(&st, 0, 3), which = rep % 3;
        int64_t shape[FW_MAX_DIMS];
        double lo = fw_dtype_is_float(dt) ? -0.5 : 3, hi = fw_dtype_is_float(dt) ? 0.75 : 6;
        fw_tensor *x, *out = NULL;

        tu_rand_shape(shape, nd, &st, 1, 4);
        x = tu_rand_view(dt, shape, nd, 1600 + (uint64_t)rep);
        CK_OK(fw_clip(&out, x, which != 1 ? &lo : NULL, which != 2 ? &hi : NULL));
        CK_SHAPE(out, shape, nd);
        ck_assert_int_eq(fw_tensor_dtype(out), dt);
        int64_t n;
        double *v = fw_test_doubles(x, &n);
        for (int64_t i = 0; i < n; i++) {
            if (which != 1 && v[i] < lo) v[i] = lo;
            if (which != 2 && v[i] > hi) v[i] = hi;
        }
        CK_CLOSE(out, v, n, 1e-3, 0);
        free(v);
        fw_tensor_unref(x);
        fw_tensor_unref(out);
    }
}
END_TEST

START_TEST(clip_gradient_passes_inclusively_between_bounds)
{
    int64_t s[] = {5};
    double xv[] = {-1, 0, 0.5, 1, 2}, want[] = {0, 1, 1, 1, 0}, lo = 0, hi = 1;
    fw_tensor *x = tu_tensor(xv, FW_FLOAT64, s, 1), *y = NULL, *l = NULL;
    CK_OK(fw_tensor_set_stop_gradient(x, false));
    CK_OK(fw_clip(&y, x, &lo, &hi));
    CK_OK(fw_sum(&l, y, NULL, 0, false));
    CK_OK(fw_tensor_backward(l, NULL, false));
    CK_CLOSE(fw_tensor_grad(x), want, 5, 0, 0);
    fw_tensor *all[] = {x, y, l};
    tu_free(all, 3);
}
END_TEST

START_TEST(clip_casts_bounds_to_integer_dtype_like_paddle)
{
    int64_t s[] = {4};
    double xv[] = {0, 1, 2, 3}, lo = 1.5, hi = 2.7, want[] = {1, 1, 2, 2};
    fw_tensor *x = tu_tensor(xv, FW_INT32, s, 1), *y = NULL;
    CK_OK(fw_clip(&y, x, &lo, &hi));
    ck_assert_int_eq(fw_tensor_dtype(y), FW_INT32);
    CK_CLOSE(y, want, 4, 0, 0);
    fw_tensor_unref(x);
    fw_tensor_unref(y);
}
END_TEST

static int clip_fn(fw_tensor **out, fw_tensor *const *in, void *ctx)
{
    double lo = -0.3, hi = 0.4;
    fw_tensor *t = NULL;
    int err = fw_swapaxes(&t, in[0], 0, 1);
    (void)ctx;
    if (err < 0)
        return err;
    err = fw_clip(out, t, &lo, &hi);
    fw_tensor_unref(t);
    return err;
}

START_TEST(clip_backward_matches_finite_differences)
{
    int64_t s[] = {4, 5};
    tu_gradcheck1(clip_fn, NULL, s, 2, 17);
}
END_TEST

START_TEST(clip_rejects_inverted_bounds_nan_and_bool)
{
    int64_t s[] = {2};
    double lo = 1, hi = 0, nan_ = NAN;
    fw_tensor *x = tu_rand(FW_FLOAT32, s, 1, 1), *b = tu_rand(FW_BOOL, s, 1, 2), *out = NULL;
    CK_ERR(fw_clip(&out, x, &lo, &hi), FW_EINVAL, "min 1", "max 0");
    CK_ERR(fw_clip(&out, x, &nan_, NULL), FW_EINVAL, "NaN");
    CK_ERR(fw_clip(&out, b, &hi, NULL), FW_EDTYPE, "bool");
    ck_assert_ptr_null(out);
    fw_tensor_unref(x);
    fw_tensor_unref(b);
}
END_TEST

/* ---- one_hot --------------------------------------------------------------------------------- */

START_TEST(one_hot_matches_reference_and_is_float32)
{
    int64_t s[] = {2, 3}, os[] = {2, 3, 4};
    double iv[] = {0, 3, 1, 2, 2, 0};
    for (int k = 0; k < 2; k++) {
        fw_tensor *x = tu_tensor(iv, k ? FW_INT32 : FW_INT64, s, 2), *out = NULL;
        if (k)
            x = tu_transposed_view(x); /* [3, 2] view; reference below follows it */
        CK_OK(fw_one_hot(&out, x, 4));
        int64_t xs[2] = {fw_tensor_shape(x)[0], fw_tensor_shape(x)[1]};
        int64_t want_shape[] = {xs[0], xs[1], 4};
        CK_SHAPE(out, k ? want_shape : os, 3);
        ck_assert_int_eq(fw_tensor_dtype(out), FW_FLOAT32);
        double *xv = fw_test_doubles(x, NULL), ref[24];
        for (int i = 0; i < 24; i++)
            ref[i] = xv[i / 4] == (double)(i % 4) ? 1 : 0;
        CK_CLOSE(out, ref, 24, 0, 0);
        free(xv);
        fw_tensor_unref(x);
        fw_tensor_unref(out);
    }
}
END_TEST

START_TEST(one_hot_out_of_range_index_is_an_error_naming_it)
{
    int64_t s[] = {3};
    double iv[] = {0, 5, 1}, nv[] = {0, -2, 1}, fv[] = {0, 1, 2};
    fw_tensor *x = tu_tensor(iv, FW_INT64, s, 1), *xn = tu_tensor(nv, FW_INT32, s, 1);
    fw_tensor *xf = tu_tensor(fv, FW_FLOAT32, s, 1), *out = NULL;
    CK_ERR(fw_one_hot(&out, x, 4), FW_ERANGE, "index 5", "[0, 4)");
    CK_ERR(fw_one_hot(&out, xn, 4), FW_ERANGE, "index -2");
    CK_ERR(fw_one_hot(&out, xf, 4), FW_EDTYPE, "float32");
    CK_ERR(fw_one_hot(&out, x, 0), FW_EINVAL, "num_classes");
    int64_t s8[8] = {1, 1, 1, 1, 1, 1, 1, 1};
    fw_tensor *x8 = tu_rand(FW_INT64, s8, 8, 3);
    CK_ERR(fw_one_hot(&out, x8, 4), FW_ESHAPE, "9 dims");
    fw_tensor_unref(x8);
    ck_assert_ptr_null(out);
    fw_tensor *all[] = {x, xn, xf};
    tu_free(all, 3);
}
END_TEST

/* ---- cumsum ------------------------------------------------------------------------------------ */

START_TEST(cumsum_matches_reference_on_axes_flattened_and_dtypes)
{
    static const fw_dtype dts[] = {FW_FLOAT32, FW_FLOAT64, FW_INT32, FW_INT64, FW_BOOL,
                                   FW_FLOAT16};
    uint64_t st = 26;
    for (int rep = 0; rep < 24; rep++) {
        fw_dtype dt = dts[rep % 6];
        int nd = (int)tu_rand_int(&st, 1, 4), flat = rep % 4 == 3;
        int axis = (int)tu_rand_int(&st, -nd, nd - 1), ax = axis < 0 ? axis + nd : axis;
        int64_t shape[FW_MAX_DIMS];
        fw_tensor *x, *out = NULL;

        tu_rand_shape(shape, nd, &st, 1, 4);
        x = tu_rand_view(dt, shape, nd, 1700 + (uint64_t)rep);
        CK_OK(fw_cumsum(&out, x, flat ? NULL : &axis, NULL));
        ck_assert_int_eq(fw_tensor_dtype(out), dt == FW_BOOL ? FW_INT64 : dt);
        int64_t n;
        double *v = fw_test_doubles(x, &n);
        if (flat) {
            CK_SHAPE(out, &n, 1);
            for (int64_t i = 1; i < n; i++)
                v[i] += v[i - 1];
        } else {
            CK_SHAPE(out, shape, nd);
            for (int64_t i = 0; i < n; i++) { /* in C order the previous one is done */
                int64_t c[FW_MAX_DIMS] = {0};
                tu_unravel(c, i, shape, nd);
                if (c[ax] > 0) {
                    c[ax]--;
                    v[i] += v[tu_ravel(c, shape, nd)];
                }
            }
        }
        CK_CLOSE(out, v, n, 1e-4, 1e-4);
        free(v);
        fw_tensor_unref(x);
        fw_tensor_unref(out);
    }
}
END_TEST

START_TEST(cumsum_casts_to_the_requested_dtype)
{
    int64_t s[] = {4};
    double v[] = {1, 2, 3, 4}, want[] = {1, 3, 6, 10};
    fw_dtype f64 = FW_FLOAT64;
    int ax = 0;
    fw_tensor *x = tu_tensor(v, FW_INT32, s, 1), *out = NULL;
    CK_OK(fw_cumsum(&out, x, &ax, &f64));
    ck_assert_int_eq(fw_tensor_dtype(out), FW_FLOAT64);
    CK_CLOSE(out, want, 4, 0, 0);
    fw_tensor_unref(out);
    fw_dtype bad = FW_BOOL;
    CK_ERR(fw_cumsum(&out, x, &ax, &bad), FW_EDTYPE, "bool");
    int ax2 = 1;
    CK_ERR(fw_cumsum(&out, x, &ax2, NULL), FW_EAXIS, "axis 1", "rank 1");
    ck_assert_ptr_null(out);
    fw_tensor_unref(x);

    /* 0-D: with an axis the shape stays [], flattened it becomes [1] */
    double three = 3;
    int64_t one = 1;
    int m1 = -1;
    fw_tensor *s0 = tu_tensor(&three, FW_FLOAT32, NULL, 0);
    CK_OK(fw_cumsum(&out, s0, &m1, NULL));
    CK_SHAPE(out, NULL, 0);
    CK_CLOSE(out, &three, 1, 0, 0);
    fw_tensor_unref(out);
    CK_OK(fw_cumsum(&out, s0, NULL, NULL));
    CK_SHAPE(out, &one, 1);
    fw_tensor_unref(out);
    fw_tensor_unref(s0);
}
END_TEST

typedef struct {
    int axis, flat;
} cum_ctx;

static int cumsum_fn(fw_tensor **out, fw_tensor *const *in, void *ctx)
{
    cum_ctx *c = ctx;
    fw_tensor *t = NULL;
    int err = fw_swapaxes(&t, in[0], 0, 2);
    if (err < 0)
        return err;
    err = fw_cumsum(out, t, c->flat ? NULL : &c->axis, NULL);
    fw_tensor_unref(t);
    return err;
}

START_TEST(cumsum_backward_is_reverse_cumsum)
{
    int64_t s[] = {2, 3, 4};
    for (int axis = -3; axis <= 3; axis++) {
        fw_tensor *x = fw_test_rand(FW_FLOAT64, s, 3, 18, true);
        cum_ctx ctx = {axis, axis == 3};
        ck_assert_msg(fw_gradcheck(cumsum_fn, &ctx, 1, &x, TU_EPS, TU_ATOL, TU_RTOL) == 0,
                      "axis %d: %s", axis, fw_error_last());
        fw_tensor_unref(x);
    }
}
END_TEST

static Suite *gather_suite(void)
{
    Suite *s = suite_create("fw_index_gather");
    TCase *tc = tcase_create("gather");
    tcase_add_test(tc, gather_and_index_select_match_reference_with_repeats_and_views);
    tcase_add_test(tc, gather_with_0d_index_drops_the_axis);
    tcase_add_test(tc, gather_and_index_select_backward_accumulates_repeats);
    tcase_add_test(tc, gather_rejects_bad_axis_index_range_dtype_and_rank);
    tcase_add_test(tc, take_along_axis_matches_reference_with_broadcast_index);
    tcase_add_test(tc, take_along_axis_backward_matches_finite_differences);
    tcase_add_test(tc, take_along_axis_rejects_rank_mismatch_bad_broadcast_and_range);
    tcase_add_test(tc, index_add_matches_reference_for_numeric_dtypes);
    tcase_add_test(tc, index_add_backward_reaches_x_and_value);
    tcase_add_test(tc, index_add_in_place_writes_through_a_view_and_respects_grad_rule);
    tcase_add_test(tc, index_add_rejects_mismatched_value_and_dtypes);
    tcase_add_test(tc, where_matches_reference_with_three_way_broadcast);
    tcase_add_test(tc, where_backward_splits_and_reduces_broadcast_gradients);
    tcase_add_test(tc, where_rejects_non_bool_condition_mixed_dtypes_and_bad_shapes);
    tcase_add_test(tc, clip_matches_reference_for_numeric_dtypes_and_optional_bounds);
    tcase_add_test(tc, clip_gradient_passes_inclusively_between_bounds);
    tcase_add_test(tc, clip_backward_matches_finite_differences);
    tcase_add_test(tc, clip_casts_bounds_to_integer_dtype_like_paddle);
    tcase_add_test(tc, clip_rejects_inverted_bounds_nan_and_bool);
    tcase_add_test(tc, one_hot_matches_reference_and_is_float32);
    tcase_add_test(tc, one_hot_out_of_range_index_is_an_error_naming_it);
    tcase_add_test(tc, cumsum_matches_reference_on_axes_flattened_and_dtypes);
    tcase_add_test(tc, cumsum_casts_to_the_requested_dtype);
    tcase_add_test(tc, cumsum_backward_is_reverse_cumsum);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(gather_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
