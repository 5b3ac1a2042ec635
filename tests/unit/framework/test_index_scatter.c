/*
 * test_index_scatter.c - scatter (overwrite / accumulate) and
 * put_along_axis (assign / add): forward against naive references on
 * random shapes, dtypes, negative axes and non-contiguous inputs; backward
 * against finite differences; error paths.
 */
#include "test_index_util.h"

START_TEST(scatter_matches_reference_for_overwrite_and_accumulate)
{
    uint64_t st = 71;
    for (int rep = 0; rep < 32; rep++) {
        fw_dtype dt = tu_all_dtypes[rep % TU_N_DTYPES];
        int overwrite = (rep / 8) % 2 == 0 || dt == FW_BOOL;
        int nd = (int)tu_rand_int(&st, 1, 3);
        int64_t shape[FW_MAX_DIMS], us[FW_MAX_DIMS], nidx = tu_rand_int(&st, 0, 5);
        double iv[8];
        fw_tensor *x, *u, *it, *out = NULL;

        tu_rand_shape(shape, nd, &st, 1, 4);
        for (int64_t j = 0; j < nidx; j++)
            iv[j] = (double)tu_rand_int(&st, 0, shape[0] - 1); /* repeats allowed */
        memcpy(us, shape, sizeof(shape));
        us[0] = nidx;
        x = tu_rand_view(dt, shape, nd, 4000 + (uint64_t)rep);
        u = tu_rand_view(dt, us, nd, 4100 + (uint64_t)rep);
        it = tu_tensor(iv, rep % 2 ? FW_INT32 : FW_INT64, &nidx, 1);
        CK_OK(fw_scatter(&out, x, it, u, overwrite));
        CK_SHAPE(out, shape, nd);
        ck_assert_int_eq(fw_tensor_dtype(out), dt);
        double *ref = fw_test_doubles(x, NULL), *uv = fw_test_doubles(u, NULL);
        int64_t inner = tu_numel(shape + 1, nd - 1);
        if (!overwrite)
            for (int64_t j = 0; j < nidx; j++)
                for (int64_t i = 0; i < inner; i++)
                    ref[(int64_t)iv[j] * inner + i] = 0;
        for (int64_t j = 0; j < nidx; j++)
            for (int64_t i = 0; i < inner; i++) {
                double *r = &ref[(int64_t)iv[j] * inner + i];
                *r = overwrite ? uv[j * inner + i] : *r + uv[j * inner + i];
            }
        CK_CLOSE(out, ref, tu_numel(shape, nd), 1e-5, 1e-5);
        free(ref);
        free(uv);
        fw_tensor *all[] = {x, u, it, out};
        tu_free(all, 4);
    }
}
END_TEST

typedef struct {
    fw_tensor *index;
    int mode, axis;
} sc_ctx;

static int scatter_fn(fw_tensor **out, fw_tensor *const *in, void *ctx)
{
    sc_ctx *c = ctx;
    fw_tensor *t = NULL;
    int err = fw_swapaxes(&t, in[1], 0, 1); /* updates view [3, 2] */
    if (err < 0)
        return err;
    err = fw_scatter(out, in[0], c->index, t, c->mode);
    fw_tensor_unref(t);
    return err;
}

START_TEST(scatter_backward_zeroes_x_rows_and_gathers_updates)
{
    int64_t xs[] = {4, 2}, usb[] = {2, 3}, three = 3;
    double distinct[] = {3, 0, 2}, repeats[] = {1, 3, 1};
    for (int mode = 0; mode < 2; mode++) {
        fw_tensor *in[2] = {fw_test_rand(FW_FLOAT64, xs, 2, 22, true),
                            fw_test_rand(FW_FLOAT64, usb, 2, 23, true)};
        /* overwrite with repeats has an ill-defined gradient (Paddle gathers) */
        sc_ctx ctx = {tu_tensor(mode ? distinct : repeats, FW_INT64, &three, 1), mode, 0};
        ck_assert_msg(fw_gradcheck(scatter_fn, &ctx, 2, in, TU_EPS, TU_ATOL, TU_RTOL) == 0,
                      "overwrite %d: %s", mode, fw_error_last());
        fw_tensor_unref(ctx.index);
        tu_free(in, 2);
    }
}
END_TEST

START_TEST(scatter_rejects_bad_updates_index_and_dtypes)
{
    int64_t xs[] = {3, 2}, us[] = {2, 3}, two = 2;
    double iv[] = {0, 3}, ok[] = {0, 1};
    fw_tensor *x = tu_rand(FW_FLOAT32, xs, 2, 1), *u = tu_rand(FW_FLOAT32, us, 2, 2);
    fw_tensor *u2 = NULL, *ib = tu_tensor(iv, FW_INT64, &two, 1), *io = tu_tensor(ok, FW_INT64, &two, 1);
    fw_tensor *ud = tu_rand(FW_FLOAT64, xs, 2, 3), *b = tu_rand(FW_BOOL, xs, 2, 4), *out = NULL;
    int64_t s22[] = {2, 2};
    u2 = tu_rand(FW_FLOAT32, s22, 2, 5);
    CK_ERR(fw_scatter(&out, x, io, u, true), FW_ESHAPE, "[2, 3]", "[3, 2]");
    CK_ERR(fw_scatter(&out, x, ib, u2, true), FW_ERANGE, "index 3", "size 3");
    CK_ERR(fw_scatter(&out, x, io, ud, true), FW_EDTYPE, "float64", "float32");
    CK_ERR(fw_scatter(&out, b, io, b, false), FW_EDTYPE, "bool");
    ck_assert_ptr_null(out);
    fw_tensor *all[] = {x, u, u2, ib, io, ud, b};
    tu_free(all, 7);
}
END_TEST

START_TEST(put_along_axis_matches_reference_for_assign_and_add)
{
    uint64_t st = 72;
    for (int rep = 0; rep < 32; rep++) {
        fw_dtype dt = tu_all_dtypes[rep % TU_N_DTYPES];
        int add = (rep / 8) % 2 && dt != FW_BOOL, nd = (int)tu_rand_int(&st, 1, 3);
        int axis = (int)tu_rand_int(&st, -nd, nd - 1), ax = axis < 0 ? axis + nd : axis;
        int64_t shape[FW_MAX_DIMS], is[FW_MAX_DIMS], full[FW_MAX_DIMS], vs[FW_MAX_DIMS];
        fw_tensor *x, *it, *v, *out = NULL;

        tu_rand_shape(shape, nd, &st, 1, 4);
        for (int d = 0; d < nd; d++) {
            is[d] = d == ax ? tu_rand_int(&st, 1, 4) : (tu_rand_int(&st, 0, 1) ? shape[d] : 1);
            full[d] = d == ax ? is[d] : shape[d];
            vs[d] = tu_rand_int(&st, 0, 1) ? full[d] : 1;  /* values broadcast */
        }
        int64_t ni = tu_numel(is, nd);
        double *iv = malloc(sizeof(double) * (size_t)ni);
        for (int64_t i = 0; i < ni; i++)
            iv[i] = (double)tu_rand_int(&st, 0, shape[ax] - 1);
        it = tu_tensor(iv, rep % 2 ? FW_INT32 : FW_INT64, is, nd);
        x = tu_rand_view(dt, shape, nd, 4200 + (uint64_t)rep);
        v = tu_rand(dt, vs, nd, 4300 + (uint64_t)rep);
        CK_OK(fw_put_along_axis(&out, x, it, v, axis, add ? FW_PUT_ADD : FW_PUT_ASSIGN));
        CK_SHAPE(out, shape, nd);
        double *ref = fw_test_doubles(x, NULL), *vv = fw_test_doubles(v, NULL);
        int64_t nf = tu_numel(full, nd);
        for (int64_t e = 0; e < nf; e++) { /* C order = the kernel's write order */
            int64_t c[FW_MAX_DIMS] = {0}, ci[FW_MAX_DIMS] = {0}, cv[FW_MAX_DIMS] = {0};
            tu_unravel(c, e, full, nd);
            for (int d = 0; d < nd; d++) {
                ci[d] = is[d] == 1 ? 0 : c[d];
                cv[d] = vs[d] == 1 ? 0 : c[d];
            }
            double val = vv[tu_ravel(cv, vs, nd)];
            c[ax] = (int64_t)iv[tu_ravel(ci, is, nd)];
            double *r = &ref[tu_ravel(c, shape, nd)];
            *r = add ? *r + val : val;
        }
        CK_CLOSE(out, ref, tu_numel(shape, nd), 1e-5, 1e-5);
        free(ref);
        free(vv);
        free(iv);
        fw_tensor *all[] = {x, it, v, out};
        tu_free(all, 4);
    }
}
END_TEST

static int put_fn(fw_tensor **out, fw_tensor *const *in, void *ctx)
{
    sc_ctx *c = ctx;
    fw_tensor *t = NULL;
    int err = fw_swapaxes(&t, in[0], 0, 1); /* arr view [3, 4] */
    if (err < 0)
        return err;
    err = fw_put_along_axis(out, t, c->index, in[1], c->axis, (fw_put_mode)c->mode);
    fw_tensor_unref(t);
    return err;
}

START_TEST(put_along_axis_backward_matches_finite_differences)
{
    int64_t xs[] = {4, 3}, is[] = {3, 2}, vs[] = {1, 2};
    double distinct[] = {0, 3, 2, 1, 3, 0}, repeats[] = {1, 1, 2, 2, 0, 1};
    for (int mode = 0; mode < 2; mode++) {
        fw_tensor *in[2] = {fw_test_rand(FW_FLOAT64, xs, 2, 24, true),
                            fw_test_rand(FW_FLOAT64, vs, 2, 25, true)}; /* broadcast rows */
        sc_ctx ctx = {tu_tensor(mode == FW_PUT_ADD ? repeats : distinct, FW_INT64, is, 2),
                      mode, -1};
        ck_assert_msg(fw_gradcheck(put_fn, &ctx, 2, in, TU_EPS, TU_ATOL, TU_RTOL) == 0,
                      "mode %d: %s", mode, fw_error_last());
        fw_tensor_unref(ctx.index);
        tu_free(in, 2);
    }
}
END_TEST

START_TEST(put_along_axis_rejects_bad_shapes_range_and_mode)
{
    int64_t s[] = {3, 4}, s1[] = {3}, s2[] = {2, 2}, s3[] = {3, 1}, vs[] = {2};
    double z[] = {0, 0, 0, 0}, big[] = {0, 9, 0};
    fw_tensor *x = tu_rand(FW_FLOAT32, s, 2, 1), *out = NULL, *v = tu_rand(FW_FLOAT32, NULL, 0, 2);
    fw_tensor *i1 = tu_tensor(z, FW_INT64, s1, 1), *i2 = tu_tensor(z, FW_INT64, s2, 2);
    fw_tensor *i3 = tu_tensor(big, FW_INT64, s3, 2), *v2 = tu_rand(FW_FLOAT32, vs, 1, 3);
    fw_tensor *iz = tu_tensor(z, FW_INT64, s3, 2);
    CK_ERR(fw_put_along_axis(&out, x, i1, v, 0, FW_PUT_ASSIGN), FW_ESHAPE, "[3, 4]", "[3]");
    CK_ERR(fw_put_along_axis(&out, x, i2, v, 1, FW_PUT_ASSIGN), FW_ESHAPE, "[2, 2]", "[3, 4]");
    CK_ERR(fw_put_along_axis(&out, x, i3, v, 1, FW_PUT_ASSIGN), FW_ERANGE, "index 9", "size 4");
    CK_ERR(fw_put_along_axis(&out, x, iz, v2, 1, FW_PUT_ADD), FW_ESHAPE, "[2]", "[3, 1]");
    CK_ERR(fw_put_along_axis(&out, x, iz, v, 2, FW_PUT_ADD), FW_EAXIS, "axis 2", "rank 2");
    CK_ERR(fw_put_along_axis(&out, x, iz, v, 1, (fw_put_mode)5), FW_EINVAL, "reduce 5");
    ck_assert_ptr_null(out);
    fw_tensor *all[] = {x, v, i1, i2, i3, v2, iz};
    tu_free(all, 7);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("fw_index_scatter");
    TCase *tc = tcase_create("scatter");
    tcase_add_test(tc, scatter_matches_reference_for_overwrite_and_accumulate);
    tcase_add_test(tc, scatter_backward_zeroes_x_rows_and_gathers_updates);
    tcase_add_test(tc, scatter_rejects_bad_updates_index_and_dtypes);
    tcase_add_test(tc, put_along_axis_matches_reference_for_assign_and_add);
    tcase_add_test(tc, put_along_axis_backward_matches_finite_differences);
    tcase_add_test(tc, put_along_axis_rejects_bad_shapes_range_and_mode);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
