/* The index/join ops, the optimizers, the random creation ops and the FFT
 * reach their kernels only through the family tables of their tensors'
 * device (core/fw_backend_{index,optim,random,fft}.h). A stand-in FW_CUDA
 * backend backed by host memory (host_accessible false, so the ops may not
 * read its data on the host) shows it: with no tables every op fails with
 * FW_EDEVICE "<op>: not supported on cuda"; with tables that record their
 * calls (and check their pointers are device memory) the ops run through
 * them and give the CPU's results. Inputs on two devices are refused with
 * both devices named. The real CUDA table, if any, is restored. */
#include "gradcheck.h"

#include "fw/complex.h"
#include "fw/device.h"
#include "fw/index.h"
#include "fw/optim.h"
#include "fw/random.h"
#include "fw_backend.h"
#include "fw_backend_fft.h"
#include "fw_backend_index.h"
#include "fw_backend_optim.h"
#include "fw_backend_random.h"
#include "fake_device.h"

#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static void register_fake(const struct fw_index_kernels *ix, const struct fw_optim_kernels *op,
                          const struct fw_random_kernels *rn, const struct fw_fft_kernels *ft)
{
    fake_register();
    fake.nn = NULL;
    fake.index = ix;
    fake.optim = op;
    fake.random = rn;
    fake.fft = ft;
}

static fw_tensor *to_dev(fw_tensor *t, fw_device dev)
{
    fw_tensor *d = NULL;
    ck_assert_int_eq(fw_tensor_to(&d, t, dev), 0);
    return d;
}

static fw_tensor *ints(const double *v, int64_t n)
{
    fw_tensor *t = NULL;
    ck_assert_int_eq(fw_tensor_from_doubles(&t, v, FW_INT64, &n, 1), 0);
    return t;
}

/* a (CPU) equals b (any device), elementwise as doubles */
static void assert_same(fw_tensor *a, fw_tensor *b)
{
    fw_tensor *bc = to_dev(b, FW_CPU);
    int64_t n = fw_tensor_numel(a);
    double *x = malloc(sizeof(double) * (size_t)(n ? n : 1));
    double *y = malloc(sizeof(double) * (size_t)(n ? n : 1));
    ck_assert_int_eq(fw_tensor_numel(bc), n);
    ck_assert_int_eq(fw_tensor_to_doubles(x, n, a), 0);
    ck_assert_int_eq(fw_tensor_to_doubles(y, n, bc), 0);
    for (int64_t i = 0; i < n; i++)
        ck_assert_msg(x[i] == y[i], "element %lld: %g vs %g", (long long)i, x[i], y[i]);
    free(x);
    free(y);
    fw_tensor_unref(bc);
}

/* ---- no tables: FW_EDEVICE ---- */

START_TEST(no_tables_is_an_edevice_error)
{
    int64_t s[2] = {3, 4};
    double iv[2] = {2, 0};
    fw_tensor *x = fw_test_rand(FW_FLOAT32, s, 2, 1, false), *idx = ints(iv, 2);
    fw_tensor *xd, *id, *y = (fw_tensor *)1, *p;
    fw_optim *o = (fw_optim *)1;
    fw_optim_config c;

    register_fake(NULL, NULL, NULL, NULL);
    xd = to_dev(x, FW_CUDA);
    id = to_dev(idx, FW_CUDA);
    ck_assert_int_eq(fw_gather(&y, xd, id, 0), FW_EDEVICE);
    ck_assert_ptr_null(y);
    ck_assert_str_eq(fw_error_last(), "gather: not supported on cuda");
    ck_assert_int_eq(fw_concat(&y, &xd, 1, 0), FW_EDEVICE);
    ck_assert_str_eq(fw_error_last(), "concat: not supported on cuda");
    ck_assert_int_eq(fw_cumsum(&y, xd, NULL, NULL), FW_EDEVICE);
    ck_assert_ptr_nonnull(strstr(fw_error_last(), "not supported on cuda"));
    ck_assert_int_eq(fw_argsort(&y, xd, -1, false, true), FW_EDEVICE);
    ck_assert_ptr_nonnull(strstr(fw_error_last(), "not supported on cuda"));

    p = to_dev(x, FW_CUDA);
    fw_optim_config_default(&c, FW_OPTIM_ADAM);
    ck_assert_int_eq(fw_optim_new(&o, &c, &p, 1), FW_EDEVICE);
    ck_assert_ptr_null(o);
    ck_assert_str_eq(fw_error_last(), "optimizer: not supported on cuda");

    ck_assert_int_eq(fw_device_set_default(FW_CUDA), 0);
    ck_assert_int_eq(fw_rand(&y, s, 2, FW_FLOAT32, NULL), FW_EDEVICE);
    ck_assert_str_eq(fw_error_last(), "rand: not supported on cuda");
    ck_assert_int_eq(fw_randperm(&y, 5, FW_INT64, NULL), FW_EDEVICE);
    ck_assert_int_eq(fw_device_set_default(FW_CPU), 0);

    {
        fw_tensor *xc = NULL, *xcd;
        ck_assert_int_eq(fw_cast(&xc, x, FW_COMPLEX64), 0);
        xcd = to_dev(xc, FW_CUDA);
        ck_assert_int_eq(fw_fft_c2c(&y, xcd, false, 1.0), FW_EDEVICE);
        ck_assert_str_eq(fw_error_last(), "fft_c2c: not supported on cuda");
        fw_tensor_unref(xc);
        fw_tensor_unref(xcd);
    }
    fw_tensor_unref(x);
    fw_tensor_unref(idx);
    fw_tensor_unref(xd);
    fw_tensor_unref(id);
    fw_tensor_unref(p);
    fake_restore();
}
END_TEST

/* ---- recording tables ---- */

static struct fw_index_kernels rix;
static struct fw_optim_kernels rop;
static struct fw_random_kernels rrn;
static struct fw_fft_kernels rft;
static const struct fw_index_kernels *cix;
static const struct fw_optim_kernels *cop;
static const struct fw_random_kernels *crn;
static const struct fw_fft_kernels *cft;
static int n_gather, n_concat, n_sort, n_index_add, n_masked_select, n_where, n_map_copy;
static int n_adam, n_sumsq, n_scale, n_uniform, n_randint, n_fft;

static int r_gather(size_t es, void *out, const void *in, const int64_t *idx, int64_t nidx,
                    int64_t outer, int64_t axis_len, int64_t inner)
{
    n_gather++;
    ck_assert(on_device(out) && on_device(in) && (nidx == 0 || on_device(idx)));
    return cix->gather(es, out, in, idx, nidx, outer, axis_len, inner);
}

static int r_concat(size_t es, void *out, const void *const *ins, const int64_t *len, int n,
                    int64_t outer, int64_t inner)
{
    n_concat++;
    ck_assert(on_device(out));
    for (int i = 0; i < n; i++)
        ck_assert(on_device(ins[i]));
    ck_assert(!on_device(len));          /* sizes are launch parameters (host) */
    return cix->concat(es, out, ins, len, n, outer, inner);
}

static int r_sort(fw_dtype dt, void *vals, int64_t *idx, const void *x, int64_t outer,
                  int64_t len, int64_t inner, int64_t k, int desc)
{
    n_sort++;
    ck_assert(on_device(idx) && on_device(x) && (vals == NULL || on_device(vals)));
    return cix->sort(dt, vals, idx, x, outer, len, inner, k, desc);
}

static int r_index_add(fw_dtype dt, void *out, const void *src, const int64_t *idx,
                       int64_t nidx, int64_t outer, int64_t axis_len, int64_t inner)
{
    n_index_add++;
    ck_assert(on_device(out) && on_device(src) && on_device(idx));
    return cix->index_add(dt, out, src, idx, nidx, outer, axis_len, inner);
}

static int r_masked_select(size_t es, void *out, const void *x, const uint8_t *mask, int64_t n,
                           int64_t *count)
{
    n_masked_select++;
    ck_assert(on_device(out) && on_device(x) && on_device(mask) && !on_device(count));
    return cix->masked_select(es, out, x, mask, n, count);
}

static int r_where(size_t es, void *out, const uint8_t *cond, const int64_t *cs, const void *x,
                   const int64_t *xs, const void *y, const int64_t *ys, int ndim,
                   const int64_t *shape)
{
    n_where++;
    ck_assert(on_device(out) && on_device(cond) && on_device(x) && on_device(y));
    return cix->where(es, out, cond, cs, x, xs, y, ys, ndim, shape);
}

static int r_map_copy(size_t es, void *out, const void *in, int ndim, const int64_t *os,
                      const int64_t *is, const int64_t *maps, const void *fill)
{
    n_map_copy++;
    ck_assert(on_device(out) && on_device(in) && on_device(maps));
    return cix->map_copy(es, out, in, ndim, os, is, maps, fill);
}

static int r_adam(fw_dtype dt, void *p, const void *g, void *m, void *v, size_t n, double lr,
                  double b1, double b2, double eps, double b1p, double b2p, double l2,
                  double decay)
{
    n_adam++;
    ck_assert(on_device(p) && on_device(g) && on_device(m) && on_device(v));
    return cop->adam(dt, p, g, m, v, n, lr, b1, b2, eps, b1p, b2p, l2, decay);
}

static int r_sumsq(fw_dtype dt, const void *x, size_t n, double *out)
{
    n_sumsq++;
    ck_assert(on_device(x) && !on_device(out));
    return cop->sumsq(dt, x, n, out);
}

static int r_scale(fw_dtype dt, void *x, size_t n, double s)
{
    n_scale++;
    ck_assert(on_device(x));
    return cop->scale(dt, x, n, s);
}

static int r_uniform(fw_dtype dt, void *out, size_t n, uint64_t seed, uint64_t base, double lo,
                     double hi)
{
    n_uniform++;
    ck_assert(on_device(out));
    return crn->uniform(dt, out, n, seed, base, lo, hi);
}

static int r_randint(fw_dtype dt, void *out, size_t n, uint64_t seed, uint64_t base,
                     int64_t low, uint64_t range)
{
    n_randint++;
    ck_assert(on_device(out));
    return crn->randint(dt, out, n, seed, base, low, range);
}

static int r_lines(fw_fft_kind kind, int64_t n, bool inverse, double scale, fw_dtype xdt,
                   const void *x, int64_t in_len, fw_dtype ydt, void *y, int64_t out_len,
                   int64_t rows)
{
    n_fft++;
    ck_assert(on_device(x) && on_device(y));
    return cft->lines(kind, n, inverse, scale, xdt, x, in_len, ydt, y, out_len, rows);
}

static void register_recording(void)
{
    const fw_backend *cpu = fw__cpu_backend();
    cix = cpu->index;
    cop = cpu->optim;
    crn = cpu->random;
    cft = cpu->fft;
    ck_assert(cix && cop && crn && cft);
    rix = *cix;
    rix.gather = r_gather;
    rix.concat = r_concat;
    rix.sort = r_sort;
    rix.index_add = r_index_add;
    rix.masked_select = r_masked_select;
    rix.where = r_where;
    rix.map_copy = r_map_copy;
    rop = *cop;
    rop.adam = r_adam;
    rop.sumsq = r_sumsq;
    rop.scale = r_scale;
    rrn = *crn;
    rrn.uniform = r_uniform;
    rrn.randint = r_randint;
    rft.lines = r_lines;
    register_fake(&rix, &rop, &rrn, &rft);
}

START_TEST(index_ops_dispatch_through_the_device_table)
{
    int64_t s[2] = {4, 3};
    double iv[3] = {3, 0, 3};
    fw_tensor *x = fw_test_rand(FW_FLOAT64, s, 2, 7, true), *idx = ints(iv, 3);
    fw_tensor *xd, *id, *y = NULL, *yc = NULL, *sum = NULL, *gx = NULL, *gxd = NULL;
    fw_tensor *v = NULL, *vc = NULL, *ix = NULL, *ixc = NULL, *mask = NULL, *md;
    fw_tensor *ms = NULL, *msc = NULL, *w = NULL, *wc = NULL, *cat = NULL, *catc = NULL;
    fw_tensor *t = NULL, *tc = NULL;
    int64_t reps[2] = {2, 1};

    register_recording();
    {
        fw_tensor *xn = fw_test_rand(FW_FLOAT64, s, 2, 7, false);   /* x's values, no grad */
        xd = to_dev(xn, FW_CUDA);                                  /* a leaf on the device */
        ck_assert_int_eq(fw_tensor_set_stop_gradient(xd, false), 0);
        fw_tensor_unref(xn);
    }
    id = to_dev(idx, FW_CUDA);

    /* gather forward and backward (index_add into zeros) */
    ck_assert_int_eq(fw_gather(&yc, x, idx, 0), 0);
    ck_assert_int_eq(n_gather, 0);                  /* the CPU never sees the fake table */
    ck_assert_int_eq(fw_gather(&y, xd, id, 0), 0);
    ck_assert_int_eq(fw_tensor_device(y), FW_CUDA);
    ck_assert_int_eq(n_gather, 1);
    assert_same(yc, y);
    ck_assert_int_eq(fw_sum(&sum, y, NULL, 0, false), 0);
    ck_assert_int_eq(fw_tensor_backward(sum, NULL, false), 0);
    ck_assert_int_eq(n_index_add, 1);
    ck_assert_ptr_nonnull(gxd = fw_tensor_grad(xd));
    {
        fw_tensor *sc = NULL;
        ck_assert_int_eq(fw_sum(&sc, yc, NULL, 0, false), 0);
        ck_assert_int_eq(fw_tensor_backward(sc, NULL, false), 0);
        gx = fw_tensor_grad(x);
        assert_same(gx, gxd);
        fw_tensor_unref(sc);
    }

    /* sort, masked_select, where, concat, tile */
    ck_assert_int_eq(fw_sort(&vc, &ixc, x, 0, true, true), 0);
    ck_assert_int_eq(fw_sort(&v, &ix, xd, 0, true, true), 0);
    ck_assert_int_eq(n_sort, 1);
    assert_same(vc, v);
    assert_same(ixc, ix);
    {
        double mv[12] = {1, 0, 1, 0, 0, 1, 1, 1, 0, 0, 0, 1};
        ck_assert_int_eq(fw_tensor_from_doubles(&mask, mv, FW_BOOL, s, 2), 0);
    }
    md = to_dev(mask, FW_CUDA);
    ck_assert_int_eq(fw_masked_select(&msc, x, mask), 0);
    ck_assert_int_eq(fw_masked_select(&ms, xd, md), 0);
    ck_assert_int_eq(n_masked_select, 1);
    ck_assert_int_eq(fw_tensor_numel(ms), 6);
    assert_same(msc, ms);
    ck_assert_int_eq(fw_where(&wc, mask, x, x), 0);
    ck_assert_int_eq(fw_where(&w, md, xd, xd), 0);
    ck_assert_int_eq(n_where, 1);
    assert_same(wc, w);
    {
        fw_tensor *two[2] = {xd, xd}, *twoc[2] = {x, x};
        ck_assert_int_eq(fw_concat(&catc, twoc, 2, 1), 0);
        ck_assert_int_eq(fw_concat(&cat, two, 2, 1), 0);
        ck_assert_int_eq(n_concat, 1);
        assert_same(catc, cat);
    }
    ck_assert_int_eq(fw_tile(&tc, x, reps, 2), 0);
    ck_assert_int_eq(fw_tile(&t, xd, reps, 2), 0);
    ck_assert_int_eq(n_map_copy, 1);
    assert_same(tc, t);

    /* two devices: refused with both named */
    {
        fw_tensor *bad = (fw_tensor *)1;
        ck_assert_int_eq(fw_gather(&bad, xd, idx, 0), FW_EDEVICE);
        ck_assert_ptr_null(bad);
        ck_assert_str_eq(fw_error_last(), "gather: index is on cpu, x on cuda");
        ck_assert_int_eq(fw_where(&bad, mask, xd, xd), FW_EDEVICE);
        ck_assert_str_eq(fw_error_last(), "where: condition is on cpu, x on cuda");
    }

    fw_tensor *all[] = {x, idx, xd, id, y, yc, sum, v, vc, ix, ixc, mask, md, ms, msc, w, wc,
                        cat, catc, t, tc};
    for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
        fw_tensor_unref(all[i]);
    fake_restore();
}
END_TEST

START_TEST(optimizer_dispatches_through_the_device_table)
{
    int64_t s[1] = {37};
    fw_tensor *p = fw_test_rand(FW_FLOAT32, s, 1, 3, false);
    fw_tensor *g = fw_test_rand(FW_FLOAT32, s, 1, 4, false);
    fw_tensor *pd, *gd, *m = NULL, *mc = NULL;
    fw_optim *o = NULL, *oc = NULL;
    fw_optim_config c;

    register_recording();
    pd = to_dev(p, FW_CUDA);
    gd = to_dev(g, FW_CUDA);
    ck_assert_int_eq(fw_tensor_set_grad(pd, gd), 0);
    ck_assert_int_eq(fw_tensor_set_grad(p, g), 0);
    fw_optim_config_default(&c, FW_OPTIM_ADAM);
    c.clip_norm = 0.5;
    ck_assert_int_eq(fw_optim_new(&oc, &c, &p, 1), 0);
    ck_assert_int_eq(fw_optim_new(&o, &c, &pd, 1), 0);
    for (int step = 0; step < 2; step++) {
        ck_assert_int_eq(fw_optim_step(oc), 0);
        ck_assert_int_eq(fw_optim_step(o), 0);
    }
    ck_assert_int_eq(n_adam, 2);
    ck_assert_int_eq(n_sumsq, 2);
    ck_assert_int_ge(n_scale, 1);
    assert_same(p, pd);
    ck_assert_int_eq(fw_optim_state_get(&mc, oc, 0, "moment1"), 0);
    ck_assert_int_eq(fw_optim_state_get(&m, o, 0, "moment1"), 0);
    ck_assert_int_eq(fw_tensor_device(m), FW_CUDA);
    assert_same(mc, m);
    /* state set from a CPU tensor lands on the param's device */
    ck_assert_int_eq(fw_optim_state_set(o, 0, "moment2", mc), 0);
    fw_optim_free(o);
    fw_optim_free(oc);
    fw_tensor_unref(m);
    fw_tensor_unref(mc);
    fw_tensor_unref(p);
    fw_tensor_unref(g);
    fw_tensor_unref(pd);
    fw_tensor_unref(gd);
    fake_restore();
}
END_TEST

START_TEST(random_and_fft_dispatch_through_the_device_table)
{
    int64_t s[2] = {5, 7};
    fw_tensor *r = NULL, *rc = NULL, *ri = NULL, *ric = NULL;

    register_recording();
    fw_seed(1234);
    ck_assert_int_eq(fw_rand(&rc, s, 2, FW_FLOAT32, NULL), 0);
    ck_assert_int_eq(fw_randint(&ric, -3, 9, s, 2, FW_INT64, NULL), 0);
    ck_assert_int_eq(n_uniform + n_randint, 0);
    fw_seed(1234);
    ck_assert_int_eq(fw_device_set_default(FW_CUDA), 0);
    ck_assert_int_eq(fw_rand(&r, s, 2, FW_FLOAT32, NULL), 0);
    ck_assert_int_eq(fw_randint(&ri, -3, 9, s, 2, FW_INT64, NULL), 0);
    ck_assert_int_eq(fw_device_set_default(FW_CPU), 0);
    ck_assert_int_eq(n_uniform, 1);
    ck_assert_int_eq(n_randint, 1);
    ck_assert_int_eq(fw_tensor_device(r), FW_CUDA);
    assert_same(rc, r);              /* the same stream for the same seed */
    assert_same(ric, ri);

    {
        fw_tensor *xc = NULL, *xd, *y = NULL, *yc = NULL;
        ck_assert_int_eq(fw_cast(&xc, rc, FW_COMPLEX64), 0);
        xd = to_dev(xc, FW_CUDA);
        ck_assert_int_eq(fw_fft_c2c(&yc, xc, false, 1.0), 0);
        ck_assert_int_eq(fw_fft_c2c(&y, xd, false, 1.0), 0);
        ck_assert_int_eq(n_fft, 1);
        {
            fw_tensor *a = NULL, *b = NULL, *bd = NULL;
            ck_assert_int_eq(fw_as_real(&a, yc), 0);
            ck_assert_int_eq(fw_tensor_to(&bd, y, FW_CPU), 0);
            ck_assert_int_eq(fw_as_real(&b, bd), 0);
            assert_same(a, b);
            fw_tensor_unref(a);
            fw_tensor_unref(b);
            fw_tensor_unref(bd);
        }
        fw_tensor_unref(xc);
        fw_tensor_unref(xd);
        fw_tensor_unref(y);
        fw_tensor_unref(yc);
    }
    fw_tensor_unref(r);
    fw_tensor_unref(rc);
    fw_tensor_unref(ri);
    fw_tensor_unref(ric);
    fake_restore();
}
END_TEST

int main(void)
{
    Suite *s = suite_create("fw_seam_rest");
    TCase *tc = tcase_create("seam");
    SRunner *sr;
    int failed;

    tcase_add_test(tc, no_tables_is_an_edevice_error);
    tcase_add_test(tc, index_ops_dispatch_through_the_device_table);
    tcase_add_test(tc, optimizer_dispatches_through_the_device_table);
    tcase_add_test(tc, random_and_fft_dispatch_through_the_device_table);
    suite_add_tcase(s, tc);
    sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
