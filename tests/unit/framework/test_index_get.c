/*
 * test_index_get.c - reads for Python's x[...]: index_get (integer index
 * tensors on the leading axes, broadcast, negative) and masked_select
 * (broadcast bool mask): forward against naive references on random shapes,
 * dtypes and non-contiguous inputs, backward against finite differences,
 * and the error paths.
 */
#include "test_index_util.h"

START_TEST(index_get_matches_reference_with_broadcast_and_negative_indices)
{
    uint64_t st = 61;
    for (int rep = 0; rep < 24; rep++) {
        fw_dtype dt = tu_all_dtypes[rep % TU_N_DTYPES];
        int nd = (int)tu_rand_int(&st, 1, 4), n = (int)tu_rand_int(&st, 1, nd < 2 ? 1 : 2);
        int64_t shape[FW_MAX_DIMS], b0 = tu_rand_int(&st, 1, 4), os[FW_MAX_DIMS];
        double iv[2][8];
        int64_t ishape[2] = {b0, 1};
        fw_tensor *x, *ix[2] = {NULL, NULL}, *out = NULL;

        tu_rand_shape(shape, nd, &st, 1, 4);
        x = tu_rand_view(dt, shape, nd, 3000 + (uint64_t)rep);
        for (int i = 0; i < n; i++) {
            for (int64_t j = 0; j < ishape[i]; j++)
                iv[i][j] = (double)tu_rand_int(&st, -shape[i], shape[i] - 1);
            ix[i] = tu_tensor(iv[i], i ? FW_INT32 : FW_INT64, &ishape[i], 1);
        }
        CK_OK(fw_index_get(&out, x, ix, n));
        os[0] = b0;
        memcpy(os + 1, shape + n, sizeof(int64_t) * (size_t)(nd - n));
        CK_SHAPE(out, os, 1 + nd - n);
        double *v = fw_test_doubles(x, NULL);
        int64_t subn = tu_numel(shape + n, nd - n), total = b0 * subn;
        double *ref = malloc(sizeof(double) * (size_t)(total + 1));
        for (int64_t p = 0; p < b0; p++) {
            int64_t c[FW_MAX_DIMS] = {0};
            for (int i = 0; i < n; i++) {
                int64_t k = (int64_t)iv[i][ishape[i] == 1 ? 0 : p];
                c[i] = k < 0 ? k + shape[i] : k;
            }
            for (int64_t q = 0; q < subn; q++) {
                tu_unravel(c + n, q, shape + n, nd - n);
                ref[p * subn + q] = v[tu_ravel(c, shape, nd)];
            }
        }
        CK_CLOSE(out, ref, total, 0, 0);
        free(ref);
        free(v);
        tu_free(ix, n);
        fw_tensor_unref(x);
        fw_tensor_unref(out);
    }
}
END_TEST

static int index_get_fn(fw_tensor **out, fw_tensor *const *in, void *ctx)
{
    fw_tensor **ix = ctx, *t = NULL;
    int err = fw_swapaxes(&t, in[0], 0, 2); /* [4, 3, 2] view */
    if (err < 0)
        return err;
    err = fw_index_get(out, t, ix, 2);
    fw_tensor_unref(t);
    return err;
}

START_TEST(index_get_backward_accumulates_repeated_positions)
{
    int64_t s[] = {2, 3, 4}, is0[] = {4, 1}, is1[] = {3};
    double i0[] = {1, -1, 1, 0}, i1[] = {2, 0, 2};
    fw_tensor *ix[2] = {tu_tensor(i0, FW_INT64, is0, 2), tu_tensor(i1, FW_INT64, is1, 1)};
    tu_gradcheck1(index_get_fn, ix, s, 3, 20);
    tu_free(ix, 2);
}
END_TEST

START_TEST(index_get_rejects_bad_indices)
{
    int64_t s[] = {3, 2}, is[] = {2}, is2[] = {3};
    double bad[] = {0, -4}, ok[] = {0, 1}, ok3[] = {0, 1, 0};
    fw_tensor *x = tu_rand(FW_FLOAT32, s, 2, 1), *out = NULL;
    fw_tensor *ib = tu_tensor(bad, FW_INT64, is, 1), *fi = tu_tensor(ok, FW_FLOAT64, is, 1);
    fw_tensor *io = tu_tensor(ok, FW_INT64, is, 1), *i3 = tu_tensor(ok3, FW_INT64, is2, 1);
    fw_tensor *two[] = {io, i3}, *three[] = {io, io, io};
    CK_ERR(fw_index_get(&out, x, &ib, 1), FW_ERANGE, "index -4", "axis 0", "size 3");
    CK_ERR(fw_index_get(&out, x, &fi, 1), FW_EDTYPE, "int32 or int64", "float64");
    CK_ERR(fw_index_get(&out, x, two, 2), FW_ESHAPE, "[2]", "[3]");
    CK_ERR(fw_index_get(&out, x, three, 3), FW_EINVAL, "3 index tensors", "rank 2");
    ck_assert_ptr_null(out);
    fw_tensor *all[] = {x, ib, fi, io, i3};
    tu_free(all, 5);
}
END_TEST

START_TEST(masked_select_matches_reference_with_broadcast_mask)
{
    uint64_t st = 62;
    for (int rep = 0; rep < 16; rep++) {
        fw_dtype dt = tu_all_dtypes[rep % TU_N_DTYPES];
        int nd = (int)tu_rand_int(&st, 1, 3);
        int64_t shape[FW_MAX_DIMS], ms[FW_MAX_DIMS];
        fw_tensor *x, *m, *out = NULL;

        tu_rand_shape(shape, nd, &st, 1, 4);
        for (int d = 0; d < nd; d++)
            ms[d] = tu_rand_int(&st, 0, 1) ? shape[d] : 1;
        x = tu_rand_view(dt, shape, nd, 3100 + (uint64_t)rep);
        m = tu_rand_view(FW_BOOL, ms, nd, 3200 + (uint64_t)rep);
        CK_OK(fw_masked_select(&out, x, m));
        double *xv = fw_test_doubles(x, NULL), *mv = fw_test_doubles(m, NULL);
        int64_t n = tu_numel(shape, nd), k = 0;
        double *ref = malloc(sizeof(double) * (size_t)(n + 1));
        for (int64_t i = 0; i < n; i++) {
            int64_t c[FW_MAX_DIMS] = {0};
            tu_unravel(c, i, shape, nd);
            for (int d = 0; d < nd; d++)
                if (ms[d] == 1)
                    c[d] = 0;
            if (mv[tu_ravel(c, ms, nd)] != 0)
                ref[k++] = xv[i];
        }
        CK_SHAPE(out, &k, 1);
        CK_CLOSE(out, ref, k, 0, 0);
        free(ref);
        free(xv);
        free(mv);
        fw_tensor *all[] = {x, m, out};
        tu_free(all, 3);
    }
}
END_TEST

static int masked_select_fn(fw_tensor **out, fw_tensor *const *in, void *ctx)
{
    fw_tensor *t = NULL;
    int err = fw_swapaxes(&t, in[0], 0, 1); /* [3, 2] view; mask [2, 3, 1] broadcasts */
    if (err < 0)
        return err;
    err = fw_masked_select(out, t, ctx);
    fw_tensor_unref(t);
    return err;
}

START_TEST(masked_select_backward_puts_gradient_back_and_sums_broadcast)
{
    int64_t s[] = {2, 3}, ms[] = {2, 3, 1};
    double mv[] = {1, 0, 1, 0, 1, 1};
    fw_tensor *m = tu_tensor(mv, FW_BOOL, ms, 3);
    tu_gradcheck1(masked_select_fn, m, s, 2, 21);
    fw_tensor_unref(m);
}
END_TEST

START_TEST(masked_select_rejects_non_bool_mask_and_bad_shapes)
{
    int64_t s[] = {2, 3}, s2[] = {4};
    fw_tensor *x = tu_rand(FW_FLOAT32, s, 2, 1), *mi = tu_rand(FW_INT32, s, 2, 2);
    fw_tensor *mb = tu_rand(FW_BOOL, s2, 1, 3), *out = NULL;
    CK_ERR(fw_masked_select(&out, x, mi), FW_EDTYPE, "bool", "int32");
    CK_ERR(fw_masked_select(&out, x, mb), FW_ESHAPE, "[2, 3]", "[4]");
    CK_ERR(fw_masked_select(&out, NULL, mb), FW_EINVAL, "NULL");
    ck_assert_ptr_null(out);
    fw_tensor *all[] = {x, mi, mb};
    tu_free(all, 3);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("fw_index_get");
    TCase *tc = tcase_create("get");
    tcase_add_test(tc, index_get_matches_reference_with_broadcast_and_negative_indices);
    tcase_add_test(tc, index_get_backward_accumulates_repeated_positions);
    tcase_add_test(tc, index_get_rejects_bad_indices);
    tcase_add_test(tc, masked_select_matches_reference_with_broadcast_mask);
    tcase_add_test(tc, masked_select_backward_puts_gradient_back_and_sums_broadcast);
    tcase_add_test(tc, masked_select_rejects_non_bool_mask_and_bad_shapes);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
