/*
 * test_index_put.c - in-place writes for Python's x[...] = v: set_value_
 * (slices), index_put_ (integer index tensors, with accumulate) and
 * masked_fill_; Paddle's rule that a leaf needing grad cannot be written in
 * place; failed calls leave x unchanged.
 */
#include "test_index_util.h"

START_TEST(set_value_writes_a_slice_seen_through_the_base)
{
    int64_t s[] = {4, 3}, vs[] = {3};
    double xv[12], vv[] = {7, 8, 9};
    for (int i = 0; i < 12; i++)
        xv[i] = i;
    fw_tensor *x = tu_tensor(xv, FW_FLOAT32, s, 2), *v = tu_tensor(vv, FW_FLOAT64, vs, 1);
    int axes[] = {0};
    int64_t st[] = {1}, en[] = {3};
    /* x[1:3] = v (broadcast over rows, cast to float32) */
    CK_OK(fw_set_value_(x, axes, st, en, NULL, 1, v));
    double want[12] = {0, 1, 2, 7, 8, 9, 7, 8, 9, 9, 10, 11};
    CK_CLOSE(x, want, 12, 0, 0);

    /* x[::-2, 1] = 5 through a 1-element value; negative step */
    int axes2[] = {0, 1};
    int64_t st2[] = {-1, 1}, en2[] = {-5, 2}, sp2[] = {-2, 1};
    double five = 5;
    fw_tensor *f = tu_tensor(&five, FW_INT64, NULL, 0);
    CK_OK(fw_set_value_(x, axes2, st2, en2, sp2, 2, f));
    want[10] = 5; /* row 3 */
    want[4] = 5;  /* row 1 */
    CK_CLOSE(x, want, 12, 0, 0);
    fw_tensor *all[] = {x, v, f};
    tu_free(all, 3);
}
END_TEST

START_TEST(set_value_refuses_leaves_that_need_grad_unless_no_grad)
{
    int64_t s[] = {2, 2};
    double zero = 0;
    fw_tensor *p = fw_test_rand(FW_FLOAT64, s, 2, 1, true), *z = tu_tensor(&zero, FW_FLOAT64, NULL, 0);
    fw_tensor *view = NULL;
    double *before = fw_test_doubles(p, NULL);
    int axes[] = {0};
    int64_t st[] = {0}, en[] = {1};

    CK_ERR(fw_set_value_(p, axes, st, en, NULL, 1, z), FW_EGRAD, "leaf");
    CK_CLOSE(p, before, 4, 0, 0);
    CK_OK(fw_slice(&view, p, axes, st, en, NULL, 1)); /* a view with grad history */
    CK_ERR(fw_set_value_(view, NULL, NULL, NULL, NULL, 0, z), FW_EGRAD, "grad");
    CK_ERR(fw_masked_fill_(p, z, z), FW_EDTYPE, "bool");
    CK_CLOSE(p, before, 4, 0, 0);

    bool prev = fw_set_grad_enabled(false);
    CK_OK(fw_set_value_(p, axes, st, en, NULL, 1, z));
    fw_set_grad_enabled(prev);
    before[0] = before[1] = 0;
    CK_CLOSE(p, before, 4, 0, 0);
    free(before);
    fw_tensor *all[] = {p, z, view};
    tu_free(all, 3);
}
END_TEST

START_TEST(index_put_matches_reference_with_broadcast_negative_and_accumulate)
{
    static const fw_dtype dts[] = {FW_FLOAT32, FW_FLOAT64, FW_INT32, FW_INT64, FW_UINT8};
    uint64_t st = 41;
    for (int rep = 0; rep < 20; rep++) {
        fw_dtype dt = dts[rep % 5];
        int acc = (rep / 5) % 2, nd = (int)tu_rand_int(&st, 2, 4);
        int n = (int)tu_rand_int(&st, 1, 2);
        int64_t shape[FW_MAX_DIMS], b[2] = {(int64_t)tu_rand_int(&st, 1, 4), 0};
        fw_tensor *x, *ix[2], *val, *x0;

        tu_rand_shape(shape, nd, &st, 2, 4);
        x0 = tu_rand(dt, shape, nd, 2000 + (uint64_t)rep);
        /* write into a transposed view of a copy */
        fw_tensor *bt = NULL;
        CK_OK(fw_swapaxes(&bt, x0, 0, nd - 1));
        CK_OK(fw_tensor_clone(&x, bt));
        fw_tensor_unref(bt);
        bt = x;
        CK_OK(fw_swapaxes(&x, bt, 0, nd - 1)); /* x: view of bt, logical shape `shape` */
        double iv[2][8];
        int64_t ishape[2][1];
        for (int i = 0; i < n; i++) {
            ishape[i][0] = i == 0 ? b[0] : 1; /* second index broadcasts */
            for (int64_t j = 0; j < ishape[i][0]; j++)
                iv[i][j] = (double)tu_rand_int(&st, -shape[i], shape[i] - 1);
            ix[i] = tu_tensor(iv[i], FW_INT64, ishape[i], 1);
        }
        int64_t vshape[FW_MAX_DIMS];
        vshape[0] = b[0];
        memcpy(vshape + 1, shape + n, sizeof(int64_t) * (size_t)(nd - n));
        val = tu_rand(dt, vshape, 1 + nd - n, 2100 + (uint64_t)rep);
        double *ref = fw_test_doubles(x, NULL), *vv = fw_test_doubles(val, NULL);
        int64_t subn = tu_numel(shape + n, nd - n);
        for (int64_t p = 0; p < b[0]; p++) {
            int64_t c[FW_MAX_DIMS] = {0};
            for (int i = 0; i < n; i++) {
                int64_t k = (int64_t)iv[i][ishape[i][0] == 1 ? 0 : p];
                c[i] = k < 0 ? k + shape[i] : k;
            }
            for (int64_t q = 0; q < subn; q++) {
                tu_unravel(c + n, q, shape + n, nd - n);
                int64_t lin = tu_ravel(c, shape, nd);
                ref[lin] = acc ? ref[lin] + vv[p * subn + q] : vv[p * subn + q];
            }
        }
        /* both write positions in order, so with repeats the last write wins */
        CK_OK(fw_index_put_(x, ix, n, val, acc));
        CK_CLOSE(x, ref, tu_numel(shape, nd), 1e-5, 1e-5);
        free(ref);
        free(vv);
        tu_free(ix, n);
        fw_tensor *all[] = {val, x, bt, x0};
        tu_free(all, 4);
    }
}
END_TEST

START_TEST(index_put_last_write_wins_and_broadcasts_value_rows)
{
    int64_t s[] = {3, 2}, is[] = {2};
    double xv[] = {0, 0, 0, 0, 0, 0}, i0[] = {-1, 0}, one = 4;
    fw_tensor *x = tu_tensor(xv, FW_FLOAT32, s, 2), *ix = tu_tensor(i0, FW_INT32, is, 1);
    fw_tensor *v = tu_tensor(&one, FW_FLOAT64, NULL, 0);
    CK_OK(fw_index_put_(x, &ix, 1, v, false)); /* x[[-1, 0]] = 4 */
    double want[] = {4, 4, 0, 0, 4, 4};
    CK_CLOSE(x, want, 6, 0, 0);
    fw_tensor *all[] = {x, ix, v};
    tu_free(all, 3);
}
END_TEST

START_TEST(index_put_rejects_bad_indices_and_values_and_leaves_x_unchanged)
{
    int64_t s[] = {3, 2}, is[] = {2}, vs[] = {3};
    double xv[] = {1, 2, 3, 4, 5, 6}, bad[] = {0, 3}, ok[] = {0, 1}, vv[] = {1, 2, 3};
    fw_tensor *x = tu_tensor(xv, FW_FLOAT32, s, 2), *ib = tu_tensor(bad, FW_INT64, is, 1);
    fw_tensor *io = tu_tensor(ok, FW_INT64, is, 1), *fi = tu_tensor(ok, FW_FLOAT32, is, 1);
    fw_tensor *v = tu_tensor(vv, FW_FLOAT32, vs, 1);
    fw_tensor *three[] = {io, io, io};

    double z = 0;
    fw_tensor *z0 = tu_tensor(&z, FW_FLOAT32, NULL, 0);
    CK_ERR(fw_index_put_(x, &ib, 1, z0, false), FW_ERANGE, "index 3", "axis 0", "size 3");
    fw_tensor_unref(z0);
    CK_ERR(fw_index_put_(x, &io, 1, v, false), FW_ESHAPE, "[3]", "[2, 2]");
    CK_ERR(fw_index_put_(x, &fi, 1, v, false), FW_EDTYPE, "int32 or int64");
    CK_ERR(fw_index_put_(x, three, 3, v, false), FW_EINVAL, "3 index tensors", "rank 2");
    fw_tensor *b = tu_rand(FW_BOOL, s, 2, 3);
    CK_ERR(fw_index_put_(b, &io, 1, b, true), FW_EDTYPE, "accumulate", "bool");
    CK_ERR(fw_set_value_(x, NULL, NULL, NULL, NULL, 1, v), FW_EINVAL, "axes");
    fw_tensor_unref(b);
    CK_CLOSE(x, xv, 6, 0, 0);
    fw_tensor *all[] = {x, ib, io, fi, v};
    tu_free(all, 5);
}
END_TEST

START_TEST(masked_fill_writes_where_the_broadcast_mask_is_true)
{
    int64_t s[] = {2, 3}, ms[] = {3};
    double xv[] = {1, 2, 3, 4, 5, 6}, mv[] = {1, 0, 1}, val = -1;
    fw_tensor *base = tu_tensor(xv, FW_INT32, s, 2), *x = NULL;
    fw_tensor *m = tu_tensor(mv, FW_BOOL, ms, 1), *v = tu_tensor(&val, FW_FLOAT64, NULL, 0);
    CK_OK(fw_masked_fill_(base, m, v));
    double want[] = {-1, 2, -1, -1, 5, -1};
    CK_CLOSE(base, want, 6, 0, 0);

    /* through a transposed view: x is [3, 2], mask [3, 1] */
    int64_t m2s[] = {3, 1};
    double m2v[] = {0, 1, 0}, nine = 9;
    fw_tensor *m2 = tu_tensor(m2v, FW_BOOL, m2s, 2), *v9 = tu_tensor(&nine, FW_INT64, NULL, 0);
    CK_OK(fw_swapaxes(&x, base, 0, 1));
    CK_OK(fw_masked_fill_(x, m2, v9));
    double want2[] = {-1, 9, -1, -1, 9, -1};
    CK_CLOSE(base, want2, 6, 0, 0);

    int64_t bad_s[] = {2};
    fw_tensor *mb = tu_tensor(mv, FW_BOOL, bad_s, 1), *two = tu_tensor(mv, FW_FLOAT32, bad_s, 1);
    CK_ERR(fw_masked_fill_(base, mb, v), FW_ESHAPE, "[2]", "[2, 3]");
    CK_ERR(fw_masked_fill_(base, m, two), FW_ESHAPE, "one element");
    CK_CLOSE(base, want2, 6, 0, 0);
    fw_tensor *all[] = {base, x, m, v, m2, v9, mb, two};
    tu_free(all, 8);
}
END_TEST

static int set_value_fn(fw_tensor **out, fw_tensor *const *in, void *ctx)
{
    int axes[] = {0, 1};
    int64_t st[] = {-1, 0}, en[] = {0, 3}, sp[] = {-2, 1}; /* rows 3 and 1, all cols */
    fw_tensor *t = NULL, *y = NULL;
    int err = fw_swapaxes(&t, in[0], 0, 1); /* [4, 3] view */
    (void)ctx;
    if (err < 0)
        return err;
    if ((err = fw_set_value(&y, t, axes, st, en, sp, 2, in[1])) == 0)
        err = fw_mul(out, y, y); /* make both gradients depend on the values */
    fw_tensor_unref(t);
    fw_tensor_unref(y);
    return err;
}

START_TEST(set_value_out_of_place_matches_reference_and_finite_differences)
{
    int64_t xs[] = {3, 4}, vs[] = {3}, ys[] = {4, 3};
    fw_tensor *in[2] = {fw_test_rand(FW_FLOAT64, xs, 2, 3, true),
                        fw_test_rand(FW_FLOAT64, vs, 1, 4, true)};
    fw_tensor *t = NULL, *y = NULL;
    int axes[] = {0, 1};
    int64_t st[] = {-1, 0}, en[] = {0, 3}, sp[] = {-2, 1};

    CK_OK(fw_swapaxes(&t, in[0], 0, 1));
    CK_OK(fw_set_value(&y, t, axes, st, en, sp, 2, in[1]));
    CK_SHAPE(y, ys, 2);
    double *ref = fw_test_doubles(t, NULL), *vv = fw_test_doubles(in[1], NULL);
    for (int c = 0; c < 3; c++)
        ref[3 * 3 + c] = ref[1 * 3 + c] = vv[c];
    CK_CLOSE(y, ref, 12, 0, 0);
    free(ref);
    free(vv);
    fw_tensor_unref(t);
    fw_tensor_unref(y);
    ck_assert_msg(fw_gradcheck(set_value_fn, NULL, 2, in, TU_EPS, TU_ATOL, TU_RTOL) == 0, "%s",
                  fw_error_last());
    tu_free(in, 2);
}
END_TEST

START_TEST(writes_and_reads_through_negative_stride_views)
{
    int64_t s[] = {5};
    double xv[] = {0, 1, 2, 3, 4}, mv[] = {1, 0, 0, 0, 1}, seven = 7, i1 = 1;
    int axes[] = {0};
    int64_t st[] = {-1}, en[] = {-6}, sp[] = {-1}, one = 1;
    fw_tensor *x = tu_tensor(xv, FW_FLOAT64, s, 1), *r = NULL, *w = NULL;
    fw_tensor *m = tu_tensor(mv, FW_BOOL, s, 1), *v = tu_tensor(&seven, FW_FLOAT64, NULL, 0);
    fw_tensor *ix = tu_tensor(&i1, FW_INT64, &one, 1);

    CK_OK(fw_slice(&r, x, axes, st, en, sp, 1)); /* r = x[::-1] = 4 3 2 1 0 */
    double want_r[] = {4, 3, 2, 1, 0};
    CK_CLOSE(r, want_r, 5, 0, 0);
    CK_OK(fw_where(&w, m, r, x)); /* 4 1 2 3 0 */
    double want_w[] = {4, 1, 2, 3, 0};
    CK_CLOSE(w, want_w, 5, 0, 0);
    CK_OK(fw_masked_fill_(r, m, v)); /* r[0], r[4] = 7 -> x[4], x[0] = 7 */
    CK_OK(fw_index_put_(r, &ix, 1, v, true)); /* r[1] += 7 -> x[3] = 10 */
    double want_x[] = {7, 1, 2, 10, 7};
    CK_CLOSE(x, want_x, 5, 0, 0);
    fw_tensor *all[] = {x, r, w, m, v, ix};
    tu_free(all, 6);
}
END_TEST

START_TEST(writes_read_the_old_values_when_value_aliases_x)
{
    int64_t s[] = {4}, three = 3;
    double xv[] = {1, 2, 3, 4}, iv[] = {1, 2, 3};
    int axes[] = {0};
    int64_t st[] = {0}, en[] = {3};
    fw_tensor *x = tu_tensor(xv, FW_FLOAT64, s, 1), *head = NULL;
    fw_tensor *ix = tu_tensor(iv, FW_INT64, &three, 1);

    CK_OK(fw_slice(&head, x, axes, st, en, NULL, 1)); /* x[0:3], shares storage */
    CK_OK(fw_index_put_(x, &ix, 1, head, false));     /* x[1:] = old x[:3] */
    double want[] = {1, 1, 2, 3};
    CK_CLOSE(x, want, 4, 0, 0);
    CK_OK(fw_index_add_(x, ix, 0, head));             /* x[1:] += old x[:3] */
    double want2[] = {1, 2, 3, 5};
    CK_CLOSE(x, want2, 4, 0, 0);
    fw_tensor *all[] = {x, head, ix};
    tu_free(all, 3);
}
END_TEST

static Suite *put_suite(void)
{
    Suite *s = suite_create("fw_index_put");
    TCase *tc = tcase_create("put");
    tcase_add_test(tc, set_value_writes_a_slice_seen_through_the_base);
    tcase_add_test(tc, set_value_refuses_leaves_that_need_grad_unless_no_grad);
    tcase_add_test(tc, index_put_matches_reference_with_broadcast_negative_and_accumulate);
    tcase_add_test(tc, index_put_last_write_wins_and_broadcasts_value_rows);
    tcase_add_test(tc, index_put_rejects_bad_indices_and_values_and_leaves_x_unchanged);
    tcase_add_test(tc, masked_fill_writes_where_the_broadcast_mask_is_true);
    tcase_add_test(tc, set_value_out_of_place_matches_reference_and_finite_differences);
    tcase_add_test(tc, writes_and_reads_through_negative_stride_views);
    tcase_add_test(tc, writes_read_the_old_values_when_value_aliases_x);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(put_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
