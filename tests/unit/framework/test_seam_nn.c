/* The nn ops reach their kernels only through the nn table of their
 * inputs' device (core/fw_backend_nn.h). A stand-in FW_CUDA backend backed
 * by host memory shows it: with no nn table every nn op fails with
 * FW_EDEVICE "<op>: not supported on cuda"; with a table that records its
 * calls, the ops (forward and backward) run through it, labels and ids
 * arrive as device data allocated by that backend, and the results equal
 * the CPU's. Inputs on two devices are refused. */
#include "gradcheck.h"

#include "fw/nn.h"
#include "fw/random.h"
#include "fw_backend.h"
#include "fw_backend_nn.h"
#include "fw_backend_random.h"
#include "fake_device.h"

#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static fw_nn_kernels rec;
static const fw_nn_kernels *cpu_nn;

/* calls seen by the recording table */
static int n_softmax, n_linear_fwd, n_linear_bwd, n_ce_fwd, n_ce_bwd, n_emb_fwd, n_emb_bwd;
static int n_conv_fwd, n_pool_fwd;
static int labels_on_device, ids_on_device;

static int rec_softmax_fwd(fw_dtype dt, void *y, const void *x, int64_t o, int64_t C, int64_t i)
{
    n_softmax++;
    return cpu_nn->softmax_fwd(dt, y, x, o, C, i);
}

static int rec_linear_fwd(fw_dtype dt, void *y, const void *x, const void *w, const void *b,
                          int64_t M, int64_t K, int64_t N)
{
    n_linear_fwd++;
    ck_assert(on_device(y) && on_device(x) && on_device(w));
    return cpu_nn->linear_fwd(dt, y, x, w, b, M, K, N);
}

static int rec_linear_bwd(fw_dtype dt, void *dx, void *dw, void *db, const void *x,
                          const void *w, const void *dy, int64_t M, int64_t K, int64_t N)
{
    n_linear_bwd++;
    return cpu_nn->linear_bwd(dt, dx, dw, db, x, w, dy, M, K, N);
}

static int rec_conv2d_fwd(fw_dtype dt, void *y, const void *x, const void *w, const void *b,
                          const fw_nn_conv_geom *g)
{
    n_conv_fwd++;
    return cpu_nn->conv2d_fwd(dt, y, x, w, b, g);
}

static int rec_maxpool2d_fwd(fw_dtype dt, void *y, int64_t *idx, const void *x,
                             const fw_nn_pool_geom *g)
{
    n_pool_fwd++;
    ck_assert(on_device(idx));
    return cpu_nn->maxpool2d_fwd(dt, y, idx, x, g);
}

static int rec_ce_hard_fwd(fw_dtype dt, void *loss, void *lsm, const void *x,
                           const int64_t *label, const void *w, int64_t outer, int64_t C,
                           int64_t inner, int64_t ignore_index, int use_softmax)
{
    n_ce_fwd++;
    labels_on_device = on_device(label);
    return cpu_nn->ce_hard_fwd(dt, loss, lsm, x, label, w, outer, C, inner, ignore_index,
                               use_softmax);
}

static int rec_ce_hard_bwd(fw_dtype dt, void *dx, const void *lsm, const void *x,
                           const int64_t *label, const void *w, const void *g, int64_t outer,
                           int64_t C, int64_t inner, int64_t ignore_index, int use_softmax)
{
    n_ce_bwd++;
    ck_assert(on_device(label) && on_device(dx));
    return cpu_nn->ce_hard_bwd(dt, dx, lsm, x, label, w, g, outer, C, inner, ignore_index,
                               use_softmax);
}

static int rec_embedding_fwd(fw_dtype dt, void *y, const void *w, const int64_t *ids, int64_t n,
                             int64_t D, int64_t padding_idx)
{
    n_emb_fwd++;
    ids_on_device = on_device(ids);
    return cpu_nn->embedding_fwd(dt, y, w, ids, n, D, padding_idx);
}

static int rec_embedding_bwd(fw_dtype dt, void *dw, const void *dy, const int64_t *ids,
                             int64_t n, int64_t V, int64_t D, int64_t padding_idx)
{
    n_emb_bwd++;
    ck_assert(on_device(ids));
    return cpu_nn->embedding_bwd(dt, dw, dy, ids, n, V, D, padding_idx);
}

/* nn: NULL (no family) or the recording table */
static void register_fake(const fw_nn_kernels *nn)
{
    fake_register();
    fake.nn = nn;
}

static fw_tensor *on_fake(fw_tensor *t)
{
    fw_tensor *d = NULL;
    ck_assert_int_eq(fw_tensor_to(&d, t, FW_CUDA), 0);
    return d;
}

static fw_tensor *on_cpu(fw_tensor *t)
{
    fw_tensor *d = NULL;
    ck_assert_int_eq(fw_tensor_to(&d, t, FW_CPU), 0);
    return d;
}

START_TEST(no_nn_table_is_an_edevice_error)
{
    int64_t s[2] = {2, 3};
    fw_tensor *x = fw_test_rand(FW_FLOAT32, s, 2, 1, false), *xd, *y = (fw_tensor *)1;

    register_fake(NULL);
    xd = on_fake(x);
    ck_assert_int_eq(fw_softmax(&y, xd, -1), FW_EDEVICE);
    ck_assert_ptr_null(y);
    ck_assert_str_eq(fw_error_last(), "softmax: not supported on cuda");
    ck_assert_int_eq(fw_layer_norm(&y, xd, &s[1], 1, NULL, NULL, 1e-5), FW_EDEVICE);
    ck_assert_ptr_nonnull(strstr(fw_error_last(), "not supported on cuda"));
    ck_assert_int_eq(fw_dropout(&y, xd, 0.5, true, FW_DROPOUT_UPSCALE_IN_TRAIN, NULL),
                     FW_EDEVICE);
    ck_assert_ptr_nonnull(strstr(fw_error_last(), "not supported on cuda"));
    fw_tensor_unref(x);
    fw_tensor_unref(xd);
    fake_restore();
}
END_TEST

START_TEST(ops_dispatch_through_the_device_table)
{
    int64_t xs[2] = {4, 5}, ws[2] = {5, 3}, es[2] = {6, 3}, ids_s[1] = {4};
    double labv[4] = {0, 2, 1, 2}, idv[4] = {5, 0, 5, 2};
    fw_tensor *x = fw_test_rand(FW_FLOAT64, xs, 2, 1, true);
    fw_tensor *w = fw_test_rand(FW_FLOAT64, ws, 2, 2, true);
    fw_tensor *e = fw_test_rand(FW_FLOAT64, es, 2, 3, true);
    fw_tensor *lab = NULL, *ids = NULL;
    fw_tensor *xd, *wd, *ed, *labd, *idsd;
    fw_tensor *h = NULL, *l = NULL, *hc = NULL, *lc = NULL, *emb = NULL, *embc = NULL;
    fw_tensor *s = NULL, *t = NULL, *tot = NULL, *totc = NULL, *r = NULL;
    fw_tensor *gx = NULL, *gw = NULL, *ge = NULL;
    fw_cross_entropy_opts o = FW_CROSS_ENTROPY_DEFAULTS;

    /* sum, not mean: the core's *_scalar ops (mean's backward) still make
     * their scalar on the CPU */
    o.reduction = FW_REDUCTION_SUM;
    cpu_nn = fw__cpu_backend()->nn;
    ck_assert_ptr_nonnull(cpu_nn);
    rec = *cpu_nn;
    rec.softmax_fwd = rec_softmax_fwd;
    rec.linear_fwd = rec_linear_fwd;
    rec.linear_bwd = rec_linear_bwd;
    rec.conv2d_fwd = rec_conv2d_fwd;
    rec.maxpool2d_fwd = rec_maxpool2d_fwd;
    rec.ce_hard_fwd = rec_ce_hard_fwd;
    rec.ce_hard_bwd = rec_ce_hard_bwd;
    rec.embedding_fwd = rec_embedding_fwd;
    rec.embedding_bwd = rec_embedding_bwd;
    register_fake(&rec);

    ck_assert_int_eq(fw_tensor_from_doubles(&lab, labv, FW_INT64, ids_s, 1), 0);
    ck_assert_int_eq(fw_tensor_from_doubles(&ids, idv, FW_INT32, ids_s, 1), 0);
    xd = on_fake(x);
    wd = on_fake(w);
    ed = on_fake(e);
    labd = on_fake(lab);
    idsd = on_fake(ids);

    /* the CPU reference first (it must not touch the recording table) */
    ck_assert_int_eq(fw_linear(&hc, x, w, NULL), 0);
    ck_assert_int_eq(fw_cross_entropy(&lc, hc, lab, &o), 0);
    ck_assert_int_eq(fw_embedding(&embc, ids, e, FW_NO_PADDING), 0);
    ck_assert_int_eq(n_linear_fwd + n_ce_fwd + n_emb_fwd, 0);

    /* loss = cross_entropy(linear(x, w), lab) + sum(embedding(ids, e)) on the device */
    ck_assert_int_eq(fw_linear(&h, xd, wd, NULL), 0);
    ck_assert_int_eq(fw_tensor_device(h), FW_CUDA);
    ck_assert_int_eq(fw_cross_entropy(&l, h, labd, &o), 0);
    ck_assert_int_eq(fw_embedding(&emb, idsd, ed, FW_NO_PADDING), 0);
    ck_assert_int_eq(fw_tensor_device(emb), FW_CUDA);
    ck_assert_int_eq(n_linear_fwd, 1);
    ck_assert_int_eq(n_ce_fwd, 1);
    ck_assert_int_eq(n_emb_fwd, 1);
    ck_assert_int_eq(n_softmax, 0);
    ck_assert_msg(labels_on_device, "labels were not handed over as device data");
    ck_assert_msg(ids_on_device, "ids were not handed over as device data");
    ck_assert_int_eq(fw_sum(&s, emb, NULL, 0, false), 0);
    ck_assert_int_eq(fw_add(&tot, l, s), 0);
    ck_assert_msg(fw_tensor_backward(tot, NULL, false) == 0, "%s", fw_error_last());
    ck_assert_int_eq(n_linear_bwd, 1);
    ck_assert_int_eq(n_ce_bwd, 1);
    ck_assert_int_eq(n_emb_bwd, 1);

    /* same numbers as the CPU */
    {
        double want;
        fw_tensor *sc = NULL, *tc = NULL;
        r = on_cpu(l);
        ck_assert_int_eq(fw_tensor_item(&want, lc), 0);
        ck_assert_msg(fw_expect_close(r, &want, 1, 1e-12, 1e-12), "%s", fw_error_last());
        fw_tensor_unref(r);
        r = on_cpu(emb);
        double *ev = fw_test_doubles(embc, NULL);
        ck_assert_msg(fw_expect_close(r, ev, 12, 0, 0), "%s", fw_error_last());
        free(ev);
        fw_tensor_unref(r);
        r = NULL;
        /* gradients reached the CPU leaves through the device ops */
        gx = fw_tensor_grad(x);
        gw = fw_tensor_grad(w);
        ge = fw_tensor_grad(e);
        ck_assert_ptr_nonnull(gx);
        ck_assert_ptr_nonnull(gw);
        ck_assert_ptr_nonnull(ge);
        double *gxv = fw_test_doubles(gx, NULL), *gwv = fw_test_doubles(gw, NULL);
        double *gev = fw_test_doubles(ge, NULL);
        fw_tensor_clear_grad(x, false);
        fw_tensor_clear_grad(w, false);
        fw_tensor_clear_grad(e, false);
        ck_assert_int_eq(fw_sum(&sc, embc, NULL, 0, false), 0);
        ck_assert_int_eq(fw_add(&totc, lc, sc), 0);
        ck_assert_int_eq(fw_tensor_backward(totc, NULL, false), 0);
        ck_assert_msg(fw_expect_close(fw_tensor_grad(x), gxv, 20, 1e-12, 1e-12), "%s",
                      fw_error_last());
        ck_assert_msg(fw_expect_close(fw_tensor_grad(w), gwv, 15, 1e-12, 1e-12), "%s",
                      fw_error_last());
        ck_assert_msg(fw_expect_close(fw_tensor_grad(e), gev, 18, 1e-12, 1e-12), "%s",
                      fw_error_last());
        free(gxv);
        free(gwv);
        free(gev);
        fw_tensor_unref(sc);
        fw_tensor_unref(tc);
    }

    /* out-of-range labels are caught from a host copy of device labels */
    {
        double bad[4] = {0, 3, 1, 2};
        fw_tensor *lb = NULL, *lbd, *q = (fw_tensor *)1;
        ck_assert_int_eq(fw_tensor_from_doubles(&lb, bad, FW_INT64, ids_s, 1), 0);
        lbd = on_fake(lb);
        ck_assert_int_eq(fw_cross_entropy(&q, h, lbd, &o), FW_ERANGE);
        ck_assert_ptr_null(q);
        ck_assert_str_eq(fw_error_last(), "cross_entropy: label 3 out of range [0, 3)");
        fw_tensor_unref(lb);
        fw_tensor_unref(lbd);
    }

    /* conv2d and pooling go through the table too (their int64 mask on the device) */
    {
        int64_t cs[4] = {1, 2, 4, 4}, ks[4] = {3, 2, 3, 3}, st[2] = {1, 1}, pd[4] = {1, 1, 1, 1};
        int64_t dl[2] = {1, 1}, pk[2] = {2, 2}, pp[2] = {0, 0};
        fw_tensor *ci = fw_test_rand(FW_FLOAT32, cs, 4, 4, false);
        fw_tensor *ck = fw_test_rand(FW_FLOAT32, ks, 4, 5, false);
        fw_tensor *cid = on_fake(ci), *ckd = on_fake(ck), *cy = NULL, *py = NULL;
        ck_assert_int_eq(fw_conv2d(&cy, cid, ckd, NULL, st, pd, dl, 1), 0);
        ck_assert_int_eq(n_conv_fwd, 1);
        ck_assert_int_eq(fw_max_pool2d(&py, NULL, cy, pk, pk, pp, false), 0);
        ck_assert_int_eq(n_pool_fwd, 1);
        ck_assert_int_eq(fw_tensor_device(py), FW_CUDA);

        /* inputs on two devices are refused, naming both */
        fw_tensor *q = (fw_tensor *)1;
        ck_assert_int_eq(fw_conv2d(&q, cid, ck, NULL, st, pd, dl, 1), FW_EDEVICE);
        ck_assert_ptr_null(q);
        ck_assert_str_eq(fw_error_last(), "conv2d: input is on cuda, weight on cpu");
        ck_assert_int_eq(fw_cross_entropy(&q, hc, labd, &o), FW_EDEVICE);
        ck_assert_str_eq(fw_error_last(), "cross_entropy: input is on cpu, label on cuda");
        ck_assert_int_eq(fw_embedding(&q, ids, ed, FW_NO_PADDING), FW_EDEVICE);
        ck_assert_str_eq(fw_error_last(), "embedding: weight is on cuda, id on cpu");
        fw_tensor_unref(ci);
        fw_tensor_unref(ck);
        fw_tensor_unref(cid);
        fw_tensor_unref(ckd);
        fw_tensor_unref(cy);
        fw_tensor_unref(py);
    }

    fw_tensor *all[] = {x, w, e, lab, ids, xd, wd, ed, labd, idsd, h, l, hc, lc,
                        emb, embc, s, t, tot, totc};
    for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
        fw_tensor_unref(all[i]);
    fake_restore();
}
END_TEST

/* create_graph: cross_entropy's and nll_loss's differentiable backward
 * build their one-hot targets from host copies of device labels and
 * weights, then move them back; the gradients equal the CPU's. */
START_TEST(create_graph_gradients_on_the_device)
{
    int64_t xs[2] = {4, 3}, ls[1] = {4}, cs[1] = {3};
    double labv[4] = {0, 2, 1, 2}, wv[3] = {0.5, 1.0, 2.0};
    fw_tensor *x = fw_test_rand(FW_FLOAT64, xs, 2, 7, true), *lab = NULL, *w = NULL;
    fw_tensor *xd, *labd, *wd;
    fw_cross_entropy_opts o = FW_CROSS_ENTROPY_DEFAULTS;

    register_fake(fw__cpu_backend()->nn);
    ck_assert_int_eq(fw_tensor_from_doubles(&lab, labv, FW_INT64, ls, 1), 0);
    ck_assert_int_eq(fw_tensor_from_doubles(&w, wv, FW_FLOAT64, cs, 1), 0);
    xd = on_fake(x);
    labd = on_fake(lab);
    wd = on_fake(w);
    o.weight = NULL;
    o.reduction = FW_REDUCTION_SUM;
    for (int which = 0; which < 2; which++) {
        fw_tensor *lc = NULL, *ld = NULL, *gc = NULL, *gd = NULL, *gdc;
        fw_cross_entropy_opts oc = o, od = o;
        if (which == 0) {
            oc.weight = w;
            od.weight = wd;
            ck_assert_int_eq(fw_cross_entropy(&lc, x, lab, &oc), 0);
            ck_assert_int_eq(fw_cross_entropy(&ld, xd, labd, &od), 0);
        } else {
            ck_assert_int_eq(fw_nll_loss(&lc, x, lab, w, -100, FW_REDUCTION_SUM), 0);
            ck_assert_int_eq(fw_nll_loss(&ld, xd, labd, wd, -100, FW_REDUCTION_SUM), 0);
        }
        ck_assert_msg(fw_autograd_grad(&gc, 1, &lc, NULL, 1, &x, false, true) == 0, "%s",
                      fw_error_last());
        ck_assert_msg(fw_autograd_grad(&gd, 1, &ld, NULL, 1, &x, false, true) == 0, "%s",
                      fw_error_last());
        ck_assert_ptr_nonnull(gd);
        gdc = on_cpu(gd);
        double *want = fw_test_doubles(gc, NULL);
        ck_assert_msg(fw_expect_close(gdc, want, 12, 1e-12, 1e-12), "%s", fw_error_last());
        free(want);
        fw_tensor_unref(lc);
        fw_tensor_unref(ld);
        fw_tensor_unref(gc);
        fw_tensor_unref(gd);
        fw_tensor_unref(gdc);
    }
    fw_tensor *all[] = {x, lab, w, xd, labd, wd};
    for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
        fw_tensor_unref(all[i]);
    fake_restore();
}
END_TEST

/* dropout on a device draws its mask with the device's random family (the
 * same Philox bits as the CPU for a generator state) into device memory. */
static int n_bernoulli, mask_on_device;
static const struct fw_random_kernels *cpu_random;
static struct fw_random_kernels rec_random;

static int rec_bernoulli(uint8_t *out, size_t n, uint64_t seed, uint64_t base, double p)
{
    n_bernoulli++;
    mask_on_device = on_device(out);
    return cpu_random->bernoulli(out, n, seed, base, p);
}

START_TEST(dropout_mask_is_drawn_on_the_device)
{
    int64_t xs[2] = {7, 9};
    fw_tensor *x = fw_test_rand(FW_FLOAT32, xs, 2, 9, false), *xd, *yc = NULL, *yd = NULL, *ydc;
    fw_generator *g1 = NULL, *g2 = NULL;

    cpu_random = fw__cpu_backend()->random;
    ck_assert_ptr_nonnull(cpu_random);
    rec_random = *cpu_random;
    rec_random.bernoulli = rec_bernoulli;
    register_fake(fw__cpu_backend()->nn);
    fake.random = &rec_random;
    xd = on_fake(x);
    ck_assert_int_eq(fw_generator_new(&g1, 1234), 0);
    ck_assert_int_eq(fw_generator_new(&g2, 1234), 0);
    ck_assert_int_eq(fw_dropout(&yc, x, 0.4, true, FW_DROPOUT_UPSCALE_IN_TRAIN, g1), 0);
    ck_assert_int_eq(n_bernoulli, 0);
    ck_assert_int_eq(fw_dropout(&yd, xd, 0.4, true, FW_DROPOUT_UPSCALE_IN_TRAIN, g2), 0);
    ck_assert_int_eq(n_bernoulli, 1);
    ck_assert(mask_on_device);
    ck_assert_uint_eq(fw_generator_get_offset(g1), fw_generator_get_offset(g2));
    ydc = on_cpu(yd);
    double *want = fw_test_doubles(yc, NULL);
    ck_assert_msg(fw_expect_close(ydc, want, 63, 0, 0), "%s", fw_error_last());
    free(want);
    fw_generator_free(g1);
    fw_generator_free(g2);
    fw_tensor *all[] = {x, xd, yc, yd, ydc};
    for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
        fw_tensor_unref(all[i]);
    fake_restore();
}
END_TEST

/* The table's dtypes decide: bfloat16 reaches a table that lists it, with
 * dt = FW_BFLOAT16; the CPU (float32|float64) refuses it as before. */
static fw_dtype seen_dt = FW_NDTYPES;

static int half_softmax_fwd(fw_dtype dt, void *y, const void *x, int64_t o, int64_t C,
                            int64_t i)
{
    seen_dt = dt;
    (void)x;
    memset(y, 0, (size_t)(o * C * i) * 2);
    return 0;
}

START_TEST(native_dtypes_come_from_the_table)
{
    int64_t xs[2] = {2, 3};
    double v[6] = {1, 2, 3, 4, 5, 6};
    fw_tensor *x = NULL, *xd, *y = (fw_tensor *)1;

    ck_assert_int_eq(fw_tensor_from_doubles(&x, v, FW_BFLOAT16, xs, 2), 0);
    ck_assert_int_eq(fw_softmax(&y, x, -1), FW_EDTYPE);
    ck_assert_str_eq(fw_error_last(), "softmax: x must be float32 or float64, got bfloat16");
    rec = *fw__cpu_backend()->nn;
    rec.dtypes |= 1u << FW_BFLOAT16;
    rec.softmax_fwd = half_softmax_fwd;
    register_fake(&rec);
    xd = on_fake(x);
    ck_assert_msg(fw_softmax(&y, xd, -1) == 0, "%s", fw_error_last());
    ck_assert_int_eq(seen_dt, FW_BFLOAT16);
    ck_assert_int_eq(fw_tensor_dtype(y), FW_BFLOAT16);
    fw_tensor_unref(y);
    /* the class losses stay float32/float64 even there */
    fw_tensor *lab = NULL, *labd, *q = (fw_tensor *)1;
    double lv[2] = {0, 1};
    int64_t ls[1] = {2};
    ck_assert_int_eq(fw_tensor_from_doubles(&lab, lv, FW_INT64, ls, 1), 0);
    labd = on_fake(lab);
    ck_assert_int_eq(fw_cross_entropy(&q, xd, labd, NULL), FW_EDTYPE);
    ck_assert_str_eq(fw_error_last(),
                     "cross_entropy: input must be float32 or float64, got bfloat16");
    fw_tensor_unref(lab);
    fw_tensor_unref(labd);
    fw_tensor_unref(x);
    fw_tensor_unref(xd);
    fake_restore();
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("fw_seam_nn");
    TCase *tc = tcase_create("seam");
    tcase_add_test(tc, no_nn_table_is_an_edevice_error);
    tcase_add_test(tc, ops_dispatch_through_the_device_table);
    tcase_add_test(tc, create_graph_gradients_on_the_device);
    tcase_add_test(tc, dropout_mask_is_drawn_on_the_device);
    tcase_add_test(tc, native_dtypes_come_from_the_table);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
