/* Core ops against float64 references (forward, every supported dtype) and
 * central finite differences (backward), on random shapes including
 * broadcasting and non-contiguous views; plus their error paths. */
#include "gradcheck.h"

#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

static double tol_for(fw_dtype dt)
{
    switch (dt) {
    case FW_FLOAT64: return 1e-12;
    case FW_FLOAT32: return 2e-6;
    case FW_FLOAT16: return 2e-3;
    case FW_BFLOAT16: return 1.6e-2;
    default: return 0;
    }
}

static int64_t numel_of(const int64_t *s, int nd)
{
    int64_t n = 1;
    for (int i = 0; i < nd; i++)
        n *= s[i];
    return n;
}

/* Flat index into an operand of shape (s, nd) broadcast to (os, ond). */
static int64_t bidx(int64_t flat, const int64_t *os, int ond, const int64_t *s, int nd)
{
    int64_t idx = 0, mul = 1;
    for (int d = ond - 1; d >= 0; d--) {
        int64_t i = flat % os[d];
        flat /= os[d];
        int k = d - (ond - nd);
        if (k >= 0) {
            if (s[k] != 1)
                idx += i * mul;
            mul *= s[k];
        }
    }
    return idx;
}

/* ---- binary ops ------------------------------------------------------------------ */

typedef int (*bin_fn)(fw_tensor **, fw_tensor *, fw_tensor *);
typedef struct binop {
    const char *name;
    bin_fn fn;
    double (*ref)(double, double);
    bool float_only;
    double lo, hi;      /* input range (positive for pow/div) */
} binop;

static double r_add(double a, double b) { return a + b; }
static double r_sub(double a, double b) { return a - b; }
static double r_mul(double a, double b) { return a * b; }
static double r_div(double a, double b) { return a / b; }
static double r_pow(double a, double b) { return pow(a, b); }
static double r_max(double a, double b) { return a > b ? a : b; }
static double r_min(double a, double b) { return a < b ? a : b; }

static const binop BINOPS[] = {
    {"add", fw_add, r_add, false, -2, 2},
    {"sub", fw_sub, r_sub, false, -2, 2},
    {"mul", fw_mul, r_mul, false, -2, 2},
    {"div", fw_div, r_div, true, 0.5, 2},
    {"pow", fw_pow, r_pow, true, 0.5, 2},
    {"maximum", fw_maximum, r_max, false, -2, 2},
    {"minimum", fw_minimum, r_min, false, -2, 2},
};

typedef struct shape_pair {
    int64_t a[4], b[4], o[4];
    int na, nb, no;
} shape_pair;

static const shape_pair PAIRS[] = {
    {{3, 4}, {3, 4}, {3, 4}, 2, 2, 2},
    {{3, 1}, {1, 4}, {3, 4}, 2, 2, 2},
    {{2, 3, 4}, {4}, {2, 3, 4}, 3, 1, 3},
    {{0}, {3, 2}, {3, 2}, 0, 2, 2},            /* 0-D with 2-D */
    {{5, 1, 3}, {4, 1}, {5, 4, 3}, 3, 2, 3},
};

START_TEST(binary_ops_match_float64_reference_in_every_dtype)
{
    static const fw_dtype dts[] = {FW_FLOAT32, FW_FLOAT64, FW_FLOAT16, FW_BFLOAT16, FW_INT32,
                                   FW_INT64};
    for (size_t o = 0; o < NELEM(BINOPS); o++)
        for (size_t p = 0; p < NELEM(PAIRS); p++)
            for (size_t d = 0; d < NELEM(dts); d++) {
                const binop *op = &BINOPS[o];
                const shape_pair *sp = &PAIRS[p];
                fw_dtype dt = dts[d];
                bool is_int = dt == FW_INT32 || dt == FW_INT64;
                double lo = is_int ? (op->float_only ? 1 : -5) : op->lo;
                double hi = is_int ? (op->float_only ? 4 : 5) : op->hi;
                fw_tensor *a = fw_test_rand_range(dt, sp->a, sp->na, 10 + p, lo, hi, false);
                fw_tensor *b = fw_test_rand_range(dt, sp->b, sp->nb, 20 + p, lo, hi, false);
                fw_tensor *y = NULL;
                ck_assert_msg(op->fn(&y, a, b) == 0, "%s: %s", op->name, fw_error_last());
                ck_assert_msg(fw_expect_shape(y, sp->o, sp->no), "%s: %s", op->name, fw_error_last());
                fw_dtype want_dt = is_int && op->float_only ? FW_FLOAT32 : dt;
                ck_assert_int_eq(fw_tensor_dtype(y), want_dt);
                double *av = fw_test_doubles(a, NULL), *bv = fw_test_doubles(b, NULL);
                int64_t n = numel_of(sp->o, sp->no);
                double *ref = malloc(sizeof(double) * (size_t)n);
                for (int64_t i = 0; i < n; i++) {
                    double r = op->ref(av[bidx(i, sp->o, sp->no, sp->a, sp->na)],
                                       bv[bidx(i, sp->o, sp->no, sp->b, sp->nb)]);
                    ref[i] = is_int && !op->float_only ? trunc(r) : r;
                }
                double tol = is_int ? (op->float_only ? 2e-6 : 0) : tol_for(dt);
                ck_assert_msg(fw_expect_close(y, ref, n, tol, tol), "%s %s pair %zu: %s",
                              op->name, fw_dtype_name(dt), p, fw_error_last());
                free(av);
                free(bv);
                free(ref);
                fw_tensor_unref(a);
                fw_tensor_unref(b);
                fw_tensor_unref(y);
            }
}
END_TEST

/* View modes applied inside gradcheck callbacks to make inputs non-contiguous. */
enum { V_NONE, V_TRANSPOSE_A, V_SLICE_B, V_EXPAND_A };

typedef struct bin_ctx {
    bin_fn fn;
    int view;
} bin_ctx;

static int bin_cb(fw_tensor **out, fw_tensor *const *in, void *p)
{
    const bin_ctx *c = p;
    fw_tensor *a = fw_tensor_ref(in[0]), *b = fw_tensor_ref(in[1]), *t = NULL;
    int err = 0;

    if (c->view == V_TRANSPOSE_A) {
        int perm[2] = {1, 0};
        err = fw_transpose(&t, a, perm, 2);
        fw_tensor_unref(a);
        a = t;
    } else if (c->view == V_SLICE_B) {
        int ax = 1;
        int64_t s = 1, e = 9, st = 2;
        err = fw_slice(&t, b, &ax, &s, &e, &st, 1);
        fw_tensor_unref(b);
        b = t;
    } else if (c->view == V_EXPAND_A) {
        int64_t shape[2] = {3, 4};
        err = fw_expand(&t, a, shape, 2);
        fw_tensor_unref(a);
        a = t;
    }
    if (err == 0)
        err = c->fn(out, a, b);
    fw_tensor_unref(a);
    fw_tensor_unref(b);
    return err;
}

START_TEST(binary_ops_backward_matches_finite_differences)
{
    struct { int64_t a[3], b[3]; int na, nb, view; } cases[] = {
        {{3, 4}, {3, 4}, 2, 2, V_NONE},
        {{3, 1}, {1, 4}, 2, 2, V_NONE},
        {{2, 3, 4}, {4}, 3, 1, V_NONE},
        {{0}, {3, 2}, 0, 2, V_NONE},
        {{4, 3}, {3, 4}, 2, 2, V_TRANSPOSE_A},     /* a is a transposed view */
        {{3, 4}, {3, 9}, 2, 2, V_SLICE_B},         /* b is a strided slice */
        {{1, 4}, {3, 4}, 2, 2, V_EXPAND_A},        /* a is an expanded view */
    };
    for (size_t o = 0; o < NELEM(BINOPS); o++)
        for (size_t k = 0; k < NELEM(cases); k++) {
            bin_ctx c = {BINOPS[o].fn, cases[k].view};
            fw_tensor *in[2];
            in[0] = fw_test_rand_range(FW_FLOAT64, cases[k].a, cases[k].na, 100 + k,
                                       BINOPS[o].lo, BINOPS[o].hi, true);
            in[1] = fw_test_rand_range(FW_FLOAT64, cases[k].b, cases[k].nb, 200 + k,
                                       BINOPS[o].lo, BINOPS[o].hi, true);
            ck_assert_msg(fw_gradcheck(bin_cb, &c, 2, in, 1e-6, 1e-7, 1e-5) == 0,
                          "%s case %zu: %s", BINOPS[o].name, k, fw_error_last());
            fw_tensor_unref(in[0]);
            fw_tensor_unref(in[1]);
        }
}
END_TEST

START_TEST(maximum_minimum_and_max_follow_paddle_tie_rules)
{
    double a[3] = {1, 2, 3}, b[3] = {1, 5, 0};
    int64_t n = 3;
    fw_tensor *x = NULL, *y = NULL, *m = NULL, *l = NULL;
    ck_assert_int_eq(fw_tensor_from_doubles(&x, a, FW_FLOAT64, &n, 1), 0);
    ck_assert_int_eq(fw_tensor_from_doubles(&y, b, FW_FLOAT64, &n, 1), 0);
    ck_assert_int_eq(fw_tensor_set_stop_gradient(x, false), 0);
    ck_assert_int_eq(fw_tensor_set_stop_gradient(y, false), 0);
    ck_assert_int_eq(fw_maximum(&m, x, y), 0);
    ck_assert_int_eq(fw_sum(&l, m, NULL, 0, false), 0);
    ck_assert_int_eq(fw_tensor_backward(l, NULL, false), 0);
    double gx[3] = {0, 0, 1}, gy[3] = {1, 1, 0};          /* tie at 0 goes to y */
    ck_assert_msg(fw_expect_close(fw_tensor_grad(x), gx, 3, 0, 0), "%s", fw_error_last());
    ck_assert_msg(fw_expect_close(fw_tensor_grad(y), gy, 3, 0, 0), "%s", fw_error_last());
    fw_tensor_unref(m);
    fw_tensor_unref(l);
    fw_tensor_clear_grad(x, false);
    fw_tensor_clear_grad(y, false);
    ck_assert_int_eq(fw_minimum(&m, x, y), 0);
    ck_assert_int_eq(fw_sum(&l, m, NULL, 0, false), 0);
    ck_assert_int_eq(fw_tensor_backward(l, NULL, false), 0);
    double hx[3] = {0, 1, 0}, hy[3] = {1, 0, 1};
    ck_assert(fw_expect_close(fw_tensor_grad(x), hx, 3, 0, 0));
    ck_assert(fw_expect_close(fw_tensor_grad(y), hy, 3, 0, 0));
    fw_tensor_unref(m);
    fw_tensor_unref(l);
    fw_tensor_unref(y);
    fw_tensor_clear_grad(x, false);
    /* paddle.max: every maximal element gets the full gradient */
    double t[4] = {0.9, 0.1, 0.9, 0.5};
    int64_t n4 = 4;
    fw_tensor *z = NULL;
    ck_assert_int_eq(fw_tensor_from_doubles(&z, t, FW_FLOAT64, &n4, 1), 0);
    ck_assert_int_eq(fw_tensor_set_stop_gradient(z, false), 0);
    ck_assert_int_eq(fw_max(&m, z, NULL, 0, false), 0);
    ck_assert_int_eq(fw_tensor_backward(m, NULL, false), 0);
    double gz[4] = {1, 0, 1, 0};
    ck_assert(fw_expect_close(fw_tensor_grad(z), gz, 4, 0, 0));
    fw_tensor_unref(m);
    fw_tensor_unref(z);
    fw_tensor_unref(x);
}
END_TEST

START_TEST(scalar_variants_compute_with_the_scalar_on_either_side)
{
    double v[3] = {1, 2, 4};
    int64_t n = 3;
    fw_tensor *x = NULL, *y = NULL;
    struct { int (*fn)(fw_tensor **, fw_tensor *, double); double s; double want[3]; } cases[] = {
        {fw_add_scalar, 2, {3, 4, 6}},
        {fw_sub_scalar, 2, {-1, 0, 2}},
        {fw_rsub_scalar, 2, {1, 0, -2}},
        {fw_mul_scalar, 2, {2, 4, 8}},
        {fw_div_scalar, 2, {0.5, 1, 2}},
        {fw_rdiv_scalar, 2, {2, 1, 0.5}},
        {fw_pow_scalar, 2, {1, 4, 16}},
        {fw_pow_scalar, 0.5, {1, M_SQRT2, 2}},
        {fw_rpow_scalar, 2, {2, 4, 16}},
    };
    ck_assert_int_eq(fw_tensor_from_doubles(&x, v, FW_FLOAT32, &n, 1), 0);
    for (size_t i = 0; i < NELEM(cases); i++) {
        ck_assert_int_eq(cases[i].fn(&y, x, cases[i].s), 0);
        ck_assert_int_eq(fw_tensor_dtype(y), FW_FLOAT32);
        ck_assert_msg(fw_expect_close(y, cases[i].want, 3, 1e-6, 1e-6), "case %zu: %s", i,
                      fw_error_last());
        fw_tensor_unref(y);
    }
    fw_tensor_unref(x);
    /* int tensor + fractional scalar promotes to float32 */
    ck_assert_int_eq(fw_tensor_from_doubles(&x, v, FW_INT64, &n, 1), 0);
    ck_assert_int_eq(fw_add_scalar(&y, x, 0.5), 0);
    ck_assert_int_eq(fw_tensor_dtype(y), FW_FLOAT32);
    fw_tensor_unref(y);
    ck_assert_int_eq(fw_add_scalar(&y, x, 1), 0);
    ck_assert_int_eq(fw_tensor_dtype(y), FW_INT64);
    fw_tensor_unref(y);
    fw_tensor_unref(x);
}
END_TEST

START_TEST(scalar_pow_and_rsub_backward_match_finite_differences)
{
    int64_t s[2] = {2, 3};
    fw_tensor *x = fw_test_rand_range(FW_FLOAT64, s, 2, 5, 0.5, 2, true);
    fw_tensor *y = NULL;
    /* d/dx sum(x^3) = 3x^2 */
    ck_assert_int_eq(fw_pow_scalar(&y, x, 3.0), 0);
    fw_tensor *l = NULL;
    ck_assert_int_eq(fw_sum(&l, y, NULL, 0, false), 0);
    ck_assert_int_eq(fw_tensor_backward(l, NULL, false), 0);
    double *xv = fw_test_doubles(x, NULL), want[6];
    for (int i = 0; i < 6; i++)
        want[i] = 3 * xv[i] * xv[i];
    ck_assert(fw_expect_close(fw_tensor_grad(x), want, 6, 1e-12, 1e-12));
    free(xv);
    fw_tensor_unref(y);
    fw_tensor_unref(l);
    fw_tensor_unref(x);
}
END_TEST

START_TEST(comparisons_and_logical_ops_give_bool_with_broadcasting)
{
    double av[6] = {1, 2, 3, 4, 5, 6}, bv[3] = {2, 2, 7};
    int64_t sa[2] = {2, 3}, sb[1] = {3};
    fw_tensor *a = NULL, *b = NULL, *y = NULL;
    struct { bin_fn fn; double want[6]; } cases[] = {
        {fw_eq, {0, 1, 0, 0, 0, 0}}, {fw_ne, {1, 0, 1, 1, 1, 1}},
        {fw_lt, {1, 0, 1, 0, 0, 1}}, {fw_le, {1, 1, 1, 0, 0, 1}},
        {fw_gt, {0, 0, 0, 1, 1, 0}}, {fw_ge, {0, 1, 0, 1, 1, 0}},
    };
    ck_assert_int_eq(fw_tensor_from_doubles(&a, av, FW_FLOAT32, sa, 2), 0);
    ck_assert_int_eq(fw_tensor_from_doubles(&b, bv, FW_INT64, sb, 1), 0);  /* mixed dtypes */
    for (size_t i = 0; i < NELEM(cases); i++) {
        ck_assert_int_eq(cases[i].fn(&y, a, b), 0);
        ck_assert_int_eq(fw_tensor_dtype(y), FW_BOOL);
        ck_assert_msg(fw_expect_close(y, cases[i].want, 6, 0, 0), "case %zu: %s", i, fw_error_last());
        fw_tensor_unref(y);
    }
    ck_assert_int_eq(fw_compare_scalar(&y, a, ">", 3.5), 0);
    double gt[6] = {0, 0, 0, 1, 1, 1};
    ck_assert(fw_expect_close(y, gt, 6, 0, 0));
    fw_tensor_unref(y);
    ck_assert_int_eq(fw_compare_scalar(&y, a, "=~", 3.5), FW_EINVAL);

    double l1[4] = {0, 1, 0, 2}, l2[4] = {0, 0, 3, 1};
    int64_t s4 = 4;
    fw_tensor *p = NULL, *q = NULL;
    ck_assert_int_eq(fw_tensor_from_doubles(&p, l1, FW_INT32, &s4, 1), 0);
    ck_assert_int_eq(fw_tensor_from_doubles(&q, l2, FW_FLOAT16, &s4, 1), 0);
    double wand[4] = {0, 0, 0, 1}, wor[4] = {0, 1, 1, 1}, wxor[4] = {0, 1, 1, 0}, wnot[4] = {1, 0, 1, 0};
    ck_assert_int_eq(fw_logical_and(&y, p, q), 0);
    ck_assert(fw_expect_close(y, wand, 4, 0, 0));
    fw_tensor_unref(y);
    ck_assert_int_eq(fw_logical_or(&y, p, q), 0);
    ck_assert(fw_expect_close(y, wor, 4, 0, 0));
    fw_tensor_unref(y);
    ck_assert_int_eq(fw_logical_xor(&y, p, q), 0);
    ck_assert(fw_expect_close(y, wxor, 4, 0, 0));
    fw_tensor_unref(y);
    ck_assert_int_eq(fw_logical_not(&y, p), 0);
    ck_assert_int_eq(fw_tensor_dtype(y), FW_BOOL);
    ck_assert(fw_expect_close(y, wnot, 4, 0, 0));
    fw_tensor_unref(y);
    fw_tensor_unref(p);
    fw_tensor_unref(q);
    fw_tensor_unref(a);
    fw_tensor_unref(b);
}
END_TEST

START_TEST(binary_errors_name_both_shapes_and_dtypes)
{
    int64_t s1[2] = {2, 3}, s2[1] = {4};
    fw_tensor *a = NULL, *b = NULL, *y = (fw_tensor *)1, *bb = NULL;

    ck_assert_int_eq(fw_zeros(&a, FW_FLOAT32, s1, 2), 0);
    ck_assert_int_eq(fw_zeros(&b, FW_FLOAT32, s2, 1), 0);
    ck_assert_int_eq(fw_add(&y, a, b), FW_ESHAPE);
    ck_assert_ptr_null(y);
    ck_assert_str_eq(fw_error_last(), "add: shapes [2, 3] and [4] cannot broadcast");
    ck_assert_int_eq(fw_mul(&y, a, NULL), FW_EINVAL);
    ck_assert_int_eq(fw_zeros(&bb, FW_BOOL, s1, 2), 0);
    ck_assert_int_eq(fw_add(&y, bb, bb), FW_EDTYPE);
    ck_assert_ptr_nonnull(strstr(fw_error_last(), "bool"));
    fw_tensor_unref(a);
    fw_tensor_unref(b);
    fw_tensor_unref(bb);
}
END_TEST

/* ---- unary ops -------------------------------------------------------------------- */

typedef struct unop {
    const char *name;
    int (*fn)(fw_tensor **, fw_tensor *);
    double (*ref)(double);
    double lo, hi;
} unop;

static double r_rsqrt(double x) { return 1 / sqrt(x); }
static double r_neg(double x) { return -x; }
static double r_square(double x) { return x * x; }
static double r_sigmoid(double x) { return 1 / (1 + exp(-x)); }
static double r_relu(double x) { return x > 0 ? x : 0; }
static double r_silu(double x) { return x / (1 + exp(-x)); }
static double r_gelu(double x) { return 0.5 * x * (1 + erf(x / sqrt(2))); }
static double r_gelu_tanh(double x)
{
    return 0.5 * x * (1 + tanh(sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
}
static double r_leaky(double x) { return x > 0 ? x : 0.1 * x; }
static double r_sign(double x) { return x > 0 ? 1 : x < 0 ? -1 : 0; }
static double r_recip(double x) { return 1 / x; }
static int gelu_exact(fw_tensor **o, fw_tensor *x) { return fw_gelu(o, x, false); }
static int gelu_tanh(fw_tensor **o, fw_tensor *x) { return fw_gelu(o, x, true); }
static int leaky(fw_tensor **o, fw_tensor *x) { return fw_leaky_relu(o, x, 0.1); }

static const unop UNOPS[] = {
    {"exp", fw_exp, exp, -2, 2},
    {"log", fw_log, log, 0.1, 3},
    {"sqrt", fw_sqrt, sqrt, 0.1, 3},
    {"rsqrt", fw_rsqrt, r_rsqrt, 0.2, 3},
    {"abs", fw_abs, fabs, -2, 2},
    {"neg", fw_neg, r_neg, -2, 2},
    {"square", fw_square, r_square, -2, 2},
    {"tanh", fw_tanh, tanh, -3, 3},
    {"sigmoid", fw_sigmoid, r_sigmoid, -4, 4},
    {"relu", fw_relu, r_relu, -2, 2},
    {"gelu", gelu_exact, r_gelu, -3, 3},
    {"gelu_tanh", gelu_tanh, r_gelu_tanh, -3, 3},
    {"leaky_relu", leaky, r_leaky, -2, 2},
    {"silu", fw_silu, r_silu, -4, 4},
    {"sin", fw_sin, sin, -3, 3},
    {"cos", fw_cos, cos, -3, 3},
    {"floor", fw_floor, floor, -3, 3},
    {"ceil", fw_ceil, ceil, -3, 3},
    {"round", fw_round, round, -3, 3},
    {"sign", fw_sign, r_sign, -2, 2},
    {"reciprocal", fw_reciprocal, r_recip, 0.5, 2},
    {"log1p", fw_log1p, log1p, -0.5, 2},
    {"expm1", fw_expm1, expm1, -2, 2},
    {"erf", fw_erf, erf, -2, 2},
    {"log2", fw_log2, log2, 0.1, 3},
    {"log10", fw_log10, log10, 0.1, 3},
};

START_TEST(unary_ops_match_float64_reference_in_float_dtypes)
{
    static const fw_dtype dts[] = {FW_FLOAT32, FW_FLOAT64, FW_FLOAT16, FW_BFLOAT16};
    int64_t shape[3] = {3, 5, 7};
    for (size_t o = 0; o < NELEM(UNOPS); o++)
        for (size_t d = 0; d < NELEM(dts); d++) {
            fw_tensor *x = fw_test_rand_range(dts[d], shape, 3, o + 1, UNOPS[o].lo, UNOPS[o].hi,
                                              false);
            fw_tensor *t = NULL, *y = NULL;
            int perm[3] = {2, 0, 1};
            /* a transposed (non-contiguous) input */
            ck_assert_int_eq(fw_transpose(&t, x, perm, 3), 0);
            ck_assert_msg(UNOPS[o].fn(&y, t) == 0, "%s: %s", UNOPS[o].name, fw_error_last());
            ck_assert_int_eq(fw_tensor_dtype(y), dts[d]);
            int64_t n;
            double *tv = fw_test_doubles(t, &n);
            for (int64_t i = 0; i < n; i++)
                tv[i] = UNOPS[o].ref(tv[i]);
            double tol = tol_for(dts[d]) * 4;
            ck_assert_msg(fw_expect_close(y, tv, n, tol, tol), "%s %s: %s", UNOPS[o].name,
                          fw_dtype_name(dts[d]), fw_error_last());
            free(tv);
            fw_tensor_unref(x);
            fw_tensor_unref(t);
            fw_tensor_unref(y);
        }
}
END_TEST

typedef struct un_ctx { int (*fn)(fw_tensor **, fw_tensor *); bool slice; } un_ctx;

static int un_cb(fw_tensor **out, fw_tensor *const *in, void *p)
{
    const un_ctx *c = p;
    fw_tensor *t = NULL;
    int err;
    if (!c->slice)
        return c->fn(out, in[0]);
    int ax = 0;
    int64_t s = -1, e = -100, st = -2;        /* reversed, every other row */
    if ((err = fw_slice(&t, in[0], &ax, &s, &e, &st, 1)) < 0)
        return err;
    err = c->fn(out, t);
    fw_tensor_unref(t);
    return err;
}

START_TEST(unary_ops_backward_matches_finite_differences)
{
    int64_t shape[2] = {6, 5};
    for (size_t o = 0; o < NELEM(UNOPS); o++)
        for (int sl = 0; sl < 2; sl++) {
            un_ctx c = {UNOPS[o].fn, sl == 1};
            fw_tensor *x = fw_test_rand_range(FW_FLOAT64, shape, 2, 50 + o, UNOPS[o].lo,
                                              UNOPS[o].hi, true);
            ck_assert_msg(fw_gradcheck(un_cb, &c, 1, &x, 1e-6, 1e-7, 1e-5) == 0, "%s: %s",
                          UNOPS[o].name, fw_error_last());
            fw_tensor_unref(x);
        }
}
END_TEST

START_TEST(unary_ops_refuse_integer_inputs_except_abs_and_neg)
{
    int64_t n = 3;
    double v[3] = {-1, 0, 2};
    fw_tensor *x = NULL, *y = (fw_tensor *)1;

    ck_assert_int_eq(fw_tensor_from_doubles(&x, v, FW_INT64, &n, 1), 0);
    ck_assert_int_eq(fw_exp(&y, x), FW_EDTYPE);
    ck_assert_ptr_null(y);
    ck_assert_str_eq(fw_error_last(), "exp: expected a float tensor, got int64");
    ck_assert_int_eq(fw_abs(&y, x), 0);
    double want[3] = {1, 0, 2};
    ck_assert(fw_expect_close(y, want, 3, 0, 0));
    ck_assert_int_eq(fw_tensor_dtype(y), FW_INT64);
    fw_tensor_unref(y);
    ck_assert_int_eq(fw_neg(&y, x), 0);
    fw_tensor_unref(y);
    fw_tensor_unref(x);
}
END_TEST

START_TEST(floor_divide_and_remainder_follow_python_semantics)
{
    double a[6] = {7, -7, 7, -7, 6, 0}, b[6] = {2, 2, -2, -2, 3, 5};
    double fd[6] = {3, -4, -4, 3, 2, 0}, md[6] = {1, 1, -1, -1, 0, 0};
    int64_t n = 6;
    static const fw_dtype dts[] = {FW_INT32, FW_INT64, FW_FLOAT32, FW_FLOAT64, FW_FLOAT16};
    for (size_t d = 0; d < NELEM(dts); d++) {
        fw_tensor *x = NULL, *y = NULL, *q = NULL, *r = NULL;
        ck_assert_int_eq(fw_tensor_from_doubles(&x, a, dts[d], &n, 1), 0);
        ck_assert_int_eq(fw_tensor_from_doubles(&y, b, dts[d], &n, 1), 0);
        ck_assert_msg(fw_floor_divide(&q, x, y) == 0, "%s", fw_error_last());
        ck_assert_int_eq(fw_tensor_dtype(q), dts[d]);
        ck_assert_msg(fw_expect_close(q, fd, 6, 0, 0), "%s: %s", fw_dtype_name(dts[d]), fw_error_last());
        ck_assert_int_eq(fw_remainder(&r, x, y), 0);
        ck_assert_msg(fw_expect_close(r, md, 6, 0, 0), "%s: %s", fw_dtype_name(dts[d]), fw_error_last());
        fw_tensor_unref(q);
        fw_tensor_unref(r);
        fw_tensor_unref(x);
        fw_tensor_unref(y);
    }
    /* integer division by zero is an error, not a crash */
    double z[2] = {1, 0};
    int64_t two = 2;
    fw_tensor *x = NULL, *y = NULL, *q = (fw_tensor *)1;
    ck_assert_int_eq(fw_tensor_from_doubles(&x, z, FW_INT64, &two, 1), 0);
    ck_assert_int_eq(fw_tensor_from_doubles(&y, z, FW_INT64, &two, 1), 0);
    ck_assert_int_eq(fw_floor_divide(&q, x, y), FW_EINVAL);
    ck_assert_ptr_null(q);
    ck_assert_str_eq(fw_error_last(), "floor_divide: integer division by zero");
    ck_assert_int_eq(fw_remainder(&q, x, y), FW_EINVAL);
    fw_tensor_unref(x);
    fw_tensor_unref(y);
}
END_TEST

static int rem_cb(fw_tensor **out, fw_tensor *const *in, void *p)
{
    (void)p;
    return fw_remainder(out, in[0], in[1]);
}

START_TEST(remainder_backward_matches_finite_differences)
{
    int64_t sa[2] = {3, 4}, sb[1] = {4};
    fw_tensor *in[2];
    in[0] = fw_test_rand_range(FW_FLOAT64, sa, 2, 1, -3, 3, true);
    in[1] = fw_test_rand_range(FW_FLOAT64, sb, 1, 2, 0.7, 1.3, true);
    ck_assert_msg(fw_gradcheck(rem_cb, NULL, 2, in, 1e-6, 1e-7, 1e-5) == 0, "%s", fw_error_last());
    fw_tensor_unref(in[0]);
    fw_tensor_unref(in[1]);
}
END_TEST

START_TEST(isclose_and_allclose_broadcast_and_treat_nan)
{
    double a[3] = {1, 2, NAN}, b[3] = {1 + 1e-9, 2.1, NAN};
    int64_t n = 3;
    fw_tensor *x = NULL, *y = NULL, *c = NULL;
    bool all = true;
    ck_assert_int_eq(fw_tensor_from_doubles(&x, a, FW_FLOAT64, &n, 1), 0);
    ck_assert_int_eq(fw_tensor_from_doubles(&y, b, FW_FLOAT32, &n, 1), 0);
    ck_assert_int_eq(fw_isclose(&c, x, y, 1e-5, 1e-8, false), 0);
    double w[3] = {1, 0, 0};
    ck_assert(fw_expect_close(c, w, 3, 0, 0));
    fw_tensor_unref(c);
    ck_assert_int_eq(fw_isclose(&c, x, y, 1e-5, 1e-8, true), 0);
    double w2[3] = {1, 0, 1};
    ck_assert(fw_expect_close(c, w2, 3, 0, 0));
    fw_tensor_unref(c);
    ck_assert_int_eq(fw_allclose(&all, x, x, 1e-5, 1e-8, false), 0);
    ck_assert(!all);                                /* NaN != NaN */
    ck_assert_int_eq(fw_allclose(&all, x, x, 1e-5, 1e-8, true), 0);
    ck_assert(all);
    int64_t four = 4;
    fw_tensor *z = NULL;
    ck_assert_int_eq(fw_zeros(&z, FW_FLOAT32, &four, 1), 0);
    ck_assert_int_eq(fw_allclose(&all, x, z, 1e-5, 1e-8, false), FW_ESHAPE);
    fw_tensor_unref(z);
    fw_tensor_unref(x);
    fw_tensor_unref(y);
}
END_TEST

/* ---- reductions ------------------------------------------------------------------- */

enum { R_SUM, R_MEAN, R_MAX, R_MIN, R_PROD, R_VAR, R_STD, R_VARB };

/* Naive reduction of x (shape s, nd) over mask; returns out (numel of kept). */
static double *ref_reduce(const double *x, const int64_t *s, int nd, unsigned mask, int kind,
                          int64_t *nout)
{
    int64_t n = numel_of(s, nd), no = 1, ostr[8];
    for (int i = 0; i < nd; i++)
        if (!(mask & (1u << i)))
            no *= s[i];
    double *acc = calloc((size_t)no, sizeof(double)), *acc2 = calloc((size_t)no, sizeof(double));
    double *out = calloc((size_t)no, sizeof(double));
    int64_t *cnt = calloc((size_t)no, sizeof(int64_t));
    int64_t m = 1;
    for (int i = nd - 1; i >= 0; i--)
        if (!(mask & (1u << i))) {
            ostr[i] = m;
            m *= s[i];
        } else {
            ostr[i] = 0;
        }
    for (int64_t i = 0; i < n; i++) {
        int64_t rem = i, oi = 0;
        for (int d = nd - 1; d >= 0; d--) {
            oi += (rem % s[d]) * ostr[d];
            rem /= s[d];
        }
        double v = x[i];
        if (cnt[oi] == 0) {
            acc[oi] = kind == R_PROD ? 1 : (kind == R_MAX || kind == R_MIN) ? v : 0;
        }
        switch (kind) {
        case R_MAX: acc[oi] = v > acc[oi] ? v : acc[oi]; break;
        case R_MIN: acc[oi] = v < acc[oi] ? v : acc[oi]; break;
        case R_PROD: acc[oi] *= v; break;
        default: acc[oi] += v; acc2[oi] += v * v; break;
        }
        cnt[oi]++;
    }
    for (int64_t i = 0; i < no; i++) {
        double c = (double)cnt[i], mean = acc[i] / c;
        switch (kind) {
        case R_MEAN: out[i] = mean; break;
        case R_VAR: out[i] = (acc2[i] - c * mean * mean) / (c - 1); break;
        case R_VARB: out[i] = (acc2[i] - c * mean * mean) / c; break;
        case R_STD: out[i] = sqrt((acc2[i] - c * mean * mean) / (c - 1)); break;
        default: out[i] = acc[i]; break;
        }
    }
    free(acc);
    free(acc2);
    free(cnt);
    *nout = no;
    return out;
}

static int call_reduce(fw_tensor **y, int kind, fw_tensor *x, const int *axes, int naxes,
                       bool keep)
{
    switch (kind) {
    case R_SUM: return fw_sum(y, x, axes, naxes, keep);
    case R_MEAN: return fw_mean(y, x, axes, naxes, keep);
    case R_MAX: return fw_max(y, x, axes, naxes, keep);
    case R_MIN: return fw_min(y, x, axes, naxes, keep);
    case R_PROD: return fw_prod(y, x, axes, naxes, keep);
    case R_VAR: return fw_var(y, x, axes, naxes, true, keep);
    case R_VARB: return fw_var(y, x, axes, naxes, false, keep);
    default: return fw_std(y, x, axes, naxes, true, keep);
    }
}

static const struct { int axes[3]; int n; } AXES[] = {
    {{0}, 0}, {{0}, 1}, {{-1}, 1}, {{0, 2}, 2}, {{1}, 1}, {{2, 1}, 2}, {{0, 1, 2}, 3},
};

START_TEST(reductions_match_float64_reference_over_axes_and_keepdim)
{
    static const fw_dtype dts[] = {FW_FLOAT64, FW_FLOAT32, FW_FLOAT16, FW_BFLOAT16};
    int64_t s[3] = {3, 4, 5};
    for (int kind = R_SUM; kind <= R_VARB; kind++)
        for (size_t d = 0; d < NELEM(dts); d++)
            for (size_t a = 0; a < NELEM(AXES); a++)
                for (int keep = 0; keep < 2; keep++) {
                    double lo = kind == R_PROD ? 0.8 : -1, hi = kind == R_PROD ? 1.2 : 1;
                    fw_tensor *x = fw_test_rand_range(dts[d], s, 3, 7 + a, lo, hi, false);
                    fw_tensor *y = NULL;
                    unsigned mask = 0;
                    for (int i = 0; i < AXES[a].n; i++)
                        mask |= 1u << ((AXES[a].axes[i] + 3) % 3);
                    if (AXES[a].n == 0)
                        mask = 7;
                    ck_assert_msg(call_reduce(&y, kind, x, AXES[a].axes, AXES[a].n, keep) == 0,
                                  "kind %d: %s", kind, fw_error_last());
                    /* shape: kept dims, reduced ones as 1 with keepdim; [] for all */
                    int64_t want[3];
                    int wn = 0;
                    for (int i = 0; i < 3; i++)
                        if (!(mask & (1u << i)) || keep)
                            want[wn++] = (mask & (1u << i)) ? 1 : s[i];
                    ck_assert_msg(fw_expect_shape(y, want, wn), "%s", fw_error_last());
                    ck_assert_int_eq(fw_tensor_dtype(y), dts[d]);
                    double *xv = fw_test_doubles(x, NULL);
                    int64_t no;
                    double *ref = ref_reduce(xv, s, 3, mask, kind, &no);
                    double tol = tol_for(dts[d]) * 10;
                    ck_assert_msg(fw_expect_close(y, ref, no, tol, tol), "kind %d %s axes %zu: %s",
                                  kind, fw_dtype_name(dts[d]), a, fw_error_last());
                    free(xv);
                    free(ref);
                    fw_tensor_unref(x);
                    fw_tensor_unref(y);
                }
}
END_TEST

typedef struct red_ctx { int kind; int axes[3]; int n; bool keep; bool transpose; } red_ctx;

static int red_cb(fw_tensor **out, fw_tensor *const *in, void *p)
{
    const red_ctx *c = p;
    fw_tensor *x = fw_tensor_ref(in[0]), *t = NULL;
    int err = 0;
    if (c->transpose) {
        int perm[3] = {1, 2, 0};
        err = fw_transpose(&t, x, perm, 3);
        fw_tensor_unref(x);
        x = t;
    }
    if (err == 0)
        err = call_reduce(out, c->kind, x, c->axes, c->n, c->keep);
    fw_tensor_unref(x);
    return err;
}

START_TEST(reductions_backward_matches_finite_differences)
{
    int64_t s[3] = {3, 4, 5};
    for (int kind = R_SUM; kind <= R_VARB; kind++)
        for (size_t a = 0; a < NELEM(AXES); a++)
            for (int tr = 0; tr < 2; tr++) {
                red_ctx c = {kind, {AXES[a].axes[0], AXES[a].axes[1], AXES[a].axes[2]},
                             AXES[a].n, a % 2 == 0, tr == 1};
                double lo = kind == R_PROD ? 0.5 : -1, hi = kind == R_PROD ? 1.5 : 1;
                fw_tensor *x = fw_test_rand_range(FW_FLOAT64, s, 3, 300 + a, lo, hi, true);
                ck_assert_msg(fw_gradcheck(red_cb, &c, 1, &x, 1e-6, 1e-7, 1e-5) == 0,
                              "kind %d axes %zu transpose %d: %s", kind, a, tr, fw_error_last());
                fw_tensor_unref(x);
            }
}
END_TEST

START_TEST(large_row_reductions_split_across_threads_match_reference)
{
    int64_t s[2] = {300, 1001};
    static const fw_dtype dts[] = {FW_FLOAT32, FW_FLOAT64};
    for (size_t d = 0; d < NELEM(dts); d++)
        for (int kind = R_SUM; kind <= R_MIN; kind++) {
            fw_tensor *x = fw_test_rand(dts[d], s, 2, 40 + kind, false), *y = NULL;
            int ax = -1;
            ck_assert_int_eq(call_reduce(&y, kind, x, &ax, 1, false), 0);
            double *xv = fw_test_doubles(x, NULL);
            int64_t no;
            double *ref = ref_reduce(xv, s, 2, 2u, kind, &no);
            ck_assert_msg(fw_expect_close(y, ref, no, 1e-5, 1e-5), "kind %d %s: %s", kind,
                          fw_dtype_name(dts[d]), fw_error_last());
            free(xv);
            free(ref);
            fw_tensor_unref(x);
            fw_tensor_unref(y);
        }
}
END_TEST

START_TEST(integer_reductions_and_arg_reductions)
{
    double v[6] = {3, -1, 4, 1, 5, -9};
    int64_t s[2] = {2, 3};
    fw_tensor *x = NULL, *y = NULL;

    ck_assert_int_eq(fw_tensor_from_doubles(&x, v, FW_INT32, s, 2), 0);
    ck_assert_int_eq(fw_sum(&y, x, NULL, 0, false), 0);
    ck_assert_int_eq(fw_tensor_dtype(y), FW_INT64);     /* Paddle: int sums are int64 */
    double three = 3;
    ck_assert(fw_expect_close(y, &three, 1, 0, 0));
    fw_tensor_unref(y);
    int ax = 1;
    ck_assert_int_eq(fw_max(&y, x, &ax, 1, false), 0);
    ck_assert_int_eq(fw_tensor_dtype(y), FW_INT32);
    double mx[2] = {4, 5};
    ck_assert(fw_expect_close(y, mx, 2, 0, 0));
    fw_tensor_unref(y);
    ck_assert_int_eq(fw_mean(&y, x, NULL, 0, false), FW_EDTYPE);
    fw_tensor_unref(x);

    ck_assert_int_eq(fw_tensor_from_doubles(&x, v, FW_FLOAT32, s, 2), 0);
    ck_assert_int_eq(fw_argmax(&y, x, 1, false), 0);
    ck_assert_int_eq(fw_tensor_dtype(y), FW_INT64);
    double am[2] = {2, 1};
    ck_assert(fw_expect_close(y, am, 2, 0, 0));
    fw_tensor_unref(y);
    ck_assert_int_eq(fw_argmin(&y, x, 0, true), 0);
    int64_t ks[2] = {1, 3};
    ck_assert(fw_expect_shape(y, ks, 2));
    double amin[3] = {1, 0, 1};
    ck_assert(fw_expect_close(y, amin, 3, 0, 0));
    fw_tensor_unref(y);
    ck_assert_int_eq(fw_argmax(&y, x, FW_AXIS_NONE, false), 0);
    ck_assert_int_eq(fw_tensor_ndim(y), 0);
    double flat = 4;
    ck_assert(fw_expect_close(y, &flat, 1, 0, 0));
    fw_tensor_unref(y);
    ck_assert_int_eq(fw_argmax(&y, x, 2, false), FW_EAXIS);
    ck_assert_str_eq(fw_error_last(), "argmax: axis 2 out of range for rank 2");
    fw_tensor_unref(x);
}
END_TEST

START_TEST(reduction_errors_name_the_axis)
{
    int64_t s[2] = {2, 3};
    fw_tensor *x = NULL, *y = NULL;
    int bad[1] = {3}, rep[2] = {1, -1};

    ck_assert_int_eq(fw_zeros(&x, FW_FLOAT32, s, 2), 0);
    ck_assert_int_eq(fw_sum(&y, x, bad, 1, false), FW_EAXIS);
    ck_assert_str_eq(fw_error_last(), "sum: axis 3 out of range for rank 2");
    ck_assert_int_eq(fw_mean(&y, x, rep, 2, false), FW_EAXIS);
    ck_assert_str_eq(fw_error_last(), "mean: axis -1 repeated");
    fw_tensor_unref(x);
}
END_TEST

/* ---- matmul ------------------------------------------------------------------------ */

typedef struct mm_case {
    int64_t x[4], y[4], o[4];
    int nx, ny, no;
    bool tx, ty;
} mm_case;

static const mm_case MM[] = {
    {{2, 3}, {3, 4}, {2, 4}, 2, 2, 2, false, false},
    {{5, 2, 3}, {3, 4}, {5, 2, 4}, 3, 2, 3, false, false},
    {{2, 1, 2, 3}, {3, 3, 2}, {2, 3, 2, 2}, 4, 3, 4, false, false},
    {{3}, {3}, {0}, 1, 1, 0, false, false},
    {{3}, {3, 4}, {4}, 1, 2, 1, false, false},
    {{2, 4, 3}, {3}, {2, 4}, 3, 1, 2, false, false},
    {{3, 2}, {3, 4}, {2, 4}, 2, 2, 2, true, false},
    {{2, 3}, {4, 3}, {2, 4}, 2, 2, 2, false, true},
    {{2, 3, 2}, {2, 4, 3}, {2, 2, 4}, 3, 3, 3, true, true},
};

/* Naive reference following the same rules. */
static double *ref_mm(const mm_case *c, const double *xv, const double *yv)
{
    int64_t xs[4], ys[4];
    int nx = c->nx, ny = c->ny;
    bool tx = c->tx, ty = c->ty;
    memcpy(xs, c->x, sizeof(xs));
    memcpy(ys, c->y, sizeof(ys));
    if (nx == 1) { xs[1] = xs[0]; xs[0] = 1; nx = 2; tx = false; }
    if (ny == 1) { ys[1] = 1; ny = 2; ty = false; }
    int64_t M = tx ? xs[nx - 1] : xs[nx - 2], K = tx ? xs[nx - 2] : xs[nx - 1];
    int64_t N = ty ? ys[ny - 2] : ys[ny - 1];
    int bn = (nx > ny ? nx : ny) - 2;
    int64_t bs[4], batch = 1;
    for (int i = 0; i < bn; i++) {
        int ix = i - (bn - (nx - 2)), iy = i - (bn - (ny - 2));
        int64_t dx = ix >= 0 ? xs[ix] : 1, dy = iy >= 0 ? ys[iy] : 1;
        bs[i] = dx > dy ? dx : dy;
        batch *= bs[i];
    }
    double *out = calloc((size_t)(batch * M * N), sizeof(double));
    for (int64_t b = 0; b < batch; b++) {
        int64_t bx = bidx(b, bs, bn, xs, nx - 2), by = bidx(b, bs, bn, ys, ny - 2);
        const double *X = xv + bx * M * K, *Y = yv + by * K * N;
        for (int64_t i = 0; i < M; i++)
            for (int64_t j = 0; j < N; j++) {
                double s = 0;
                for (int64_t k = 0; k < K; k++)
                    s += (tx ? X[k * M + i] : X[i * K + k]) * (ty ? Y[j * K + k] : Y[k * N + j]);
                out[(b * M + i) * N + j] = s;
            }
    }
    return out;
}

START_TEST(matmul_matches_reference_with_batching_broadcast_and_1d)
{
    static const fw_dtype dts[] = {FW_FLOAT64, FW_FLOAT32, FW_FLOAT16, FW_BFLOAT16};
    for (size_t k = 0; k < NELEM(MM); k++)
        for (size_t d = 0; d < NELEM(dts); d++) {
            const mm_case *c = &MM[k];
            fw_tensor *x = fw_test_rand(dts[d], c->x, c->nx, k + 1, false);
            fw_tensor *y = fw_test_rand(dts[d], c->y, c->ny, k + 31, false), *z = NULL;
            ck_assert_msg(fw_matmul(&z, x, y, c->tx, c->ty) == 0, "case %zu: %s", k, fw_error_last());
            ck_assert_msg(fw_expect_shape(z, c->o, c->no), "case %zu: %s", k, fw_error_last());
            ck_assert_int_eq(fw_tensor_dtype(z), dts[d]);
            double *xv = fw_test_doubles(x, NULL), *yv = fw_test_doubles(y, NULL);
            double *ref = ref_mm(c, xv, yv);
            double tol = tol_for(dts[d]) * 10;
            ck_assert_msg(fw_expect_close(z, ref, numel_of(c->o, c->no), tol, tol), "case %zu %s: %s",
                          k, fw_dtype_name(dts[d]), fw_error_last());
            free(xv);
            free(yv);
            free(ref);
            fw_tensor_unref(x);
            fw_tensor_unref(y);
            fw_tensor_unref(z);
        }
}
END_TEST

typedef struct mm_ctx { const mm_case *c; int view; } mm_ctx;

static int mm_cb(fw_tensor **out, fw_tensor *const *in, void *p)
{
    const mm_ctx *m = p;
    fw_tensor *x = fw_tensor_ref(in[0]), *y = fw_tensor_ref(in[1]), *t = NULL;
    int err = 0;
    if (m->view == 1) {                      /* x stored transposed: a strided view */
        err = fw_swapaxes(&t, x, -1, -2);
        fw_tensor_unref(x);
        x = t;
    } else if (m->view == 2) {               /* y with a stride-2 column slice */
        int ax = -1;
        int64_t s = 0, e = 100, st = 2;
        err = fw_slice(&t, y, &ax, &s, &e, &st, 1);
        fw_tensor_unref(y);
        y = t;
    }
    if (err == 0)
        err = fw_matmul(out, x, y, m->c->tx, m->c->ty);
    fw_tensor_unref(x);
    fw_tensor_unref(y);
    return err;
}

START_TEST(matmul_backward_matches_finite_differences)
{
    for (size_t k = 0; k < NELEM(MM); k++) {
        mm_ctx m = {&MM[k], 0};
        fw_tensor *in[2];
        in[0] = fw_test_rand(FW_FLOAT64, MM[k].x, MM[k].nx, k + 7, true);
        in[1] = fw_test_rand(FW_FLOAT64, MM[k].y, MM[k].ny, k + 77, true);
        ck_assert_msg(fw_gradcheck(mm_cb, &m, 2, in, 1e-6, 1e-7, 1e-5) == 0, "case %zu: %s", k,
                      fw_error_last());
        fw_tensor_unref(in[0]);
        fw_tensor_unref(in[1]);
    }
    /* non-contiguous operands */
    static const mm_case base = {{2, 3}, {3, 4}, {2, 4}, 2, 2, 2, false, false};
    int64_t xt[2] = {3, 2}, y2[2] = {3, 8};
    mm_ctx m1 = {&base, 1}, m2 = {&base, 2};
    fw_tensor *in[2];
    in[0] = fw_test_rand(FW_FLOAT64, xt, 2, 1, true);
    in[1] = fw_test_rand(FW_FLOAT64, base.y, 2, 2, true);
    ck_assert_msg(fw_gradcheck(mm_cb, &m1, 2, in, 1e-6, 1e-7, 1e-5) == 0, "%s", fw_error_last());
    fw_tensor_unref(in[1]);
    fw_tensor_unref(in[0]);
    in[0] = fw_test_rand(FW_FLOAT64, base.x, 2, 3, true);
    in[1] = fw_test_rand(FW_FLOAT64, y2, 2, 4, true);
    ck_assert_msg(fw_gradcheck(mm_cb, &m2, 2, in, 1e-6, 1e-7, 1e-5) == 0, "%s", fw_error_last());
    fw_tensor_unref(in[0]);
    fw_tensor_unref(in[1]);
}
END_TEST

START_TEST(matmul_errors_name_shapes_and_dtypes)
{
    int64_t a[2] = {2, 3}, b[2] = {4, 5}, c[3] = {2, 3, 4}, d[3] = {3, 4, 2};
    fw_tensor *x = NULL, *y = NULL, *z = NULL, *i = NULL;

    ck_assert_int_eq(fw_zeros(&x, FW_FLOAT32, a, 2), 0);
    ck_assert_int_eq(fw_zeros(&y, FW_FLOAT32, b, 2), 0);
    ck_assert_int_eq(fw_matmul(&z, x, y, false, false), FW_ESHAPE);
    ck_assert_str_eq(fw_error_last(), "matmul: shapes [2, 3] and [4, 5] do not match (3 != 4)");
    fw_tensor_unref(x);
    fw_tensor_unref(y);
    ck_assert_int_eq(fw_zeros(&x, FW_FLOAT32, c, 3), 0);
    ck_assert_int_eq(fw_zeros(&y, FW_FLOAT32, d, 3), 0);
    ck_assert_int_eq(fw_matmul(&z, x, y, false, false), FW_ESHAPE);
    ck_assert_ptr_nonnull(strstr(fw_error_last(), "cannot broadcast"));
    ck_assert_int_eq(fw_zeros(&i, FW_INT64, a, 2), 0);
    ck_assert_int_eq(fw_matmul(&z, i, i, false, true), FW_EDTYPE);
    ck_assert_ptr_nonnull(strstr(fw_error_last(), "int64"));
    fw_tensor_unref(x);
    fw_tensor_unref(y);
    fw_tensor_unref(i);
}
END_TEST

START_TEST(matmul_large_float32_matches_double_reference)
{
    /* big enough for OpenBLAS's threaded path */
    int64_t sa[2] = {150, 130}, sb[2] = {130, 170};
    fw_tensor *a = fw_test_rand(FW_FLOAT32, sa, 2, 1, false), *b = fw_test_rand(FW_FLOAT32, sb, 2, 2, false);
    fw_tensor *z = NULL;
    mm_case c = {{150, 130}, {130, 170}, {150, 170}, 2, 2, 2, false, false};
    ck_assert_int_eq(fw_matmul(&z, a, b, false, false), 0);
    double *av = fw_test_doubles(a, NULL), *bv = fw_test_doubles(b, NULL), *ref = ref_mm(&c, av, bv);
    ck_assert_msg(fw_expect_close(z, ref, 150 * 170, 1e-4, 1e-4), "%s", fw_error_last());
    free(av);
    free(bv);
    free(ref);
    fw_tensor_unref(a);
    fw_tensor_unref(b);
    fw_tensor_unref(z);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("fw_core_ops");
    TCase *tc = tcase_create("ops");
    tcase_set_timeout(tc, 240);
    tcase_add_test(tc, binary_ops_match_float64_reference_in_every_dtype);
    tcase_add_test(tc, binary_ops_backward_matches_finite_differences);
    tcase_add_test(tc, maximum_minimum_and_max_follow_paddle_tie_rules);
    tcase_add_test(tc, scalar_variants_compute_with_the_scalar_on_either_side);
    tcase_add_test(tc, scalar_pow_and_rsub_backward_match_finite_differences);
    tcase_add_test(tc, comparisons_and_logical_ops_give_bool_with_broadcasting);
    tcase_add_test(tc, binary_errors_name_both_shapes_and_dtypes);
    tcase_add_test(tc, floor_divide_and_remainder_follow_python_semantics);
    tcase_add_test(tc, remainder_backward_matches_finite_differences);
    tcase_add_test(tc, isclose_and_allclose_broadcast_and_treat_nan);
    tcase_add_test(tc, unary_ops_match_float64_reference_in_float_dtypes);
    tcase_add_test(tc, unary_ops_backward_matches_finite_differences);
    tcase_add_test(tc, unary_ops_refuse_integer_inputs_except_abs_and_neg);
    tcase_add_test(tc, reductions_match_float64_reference_over_axes_and_keepdim);
    tcase_add_test(tc, reductions_backward_matches_finite_differences);
    tcase_add_test(tc, large_row_reductions_split_across_threads_match_reference);
    tcase_add_test(tc, integer_reductions_and_arg_reductions);
    tcase_add_test(tc, reduction_errors_name_the_axis);
    tcase_add_test(tc, matmul_matches_reference_with_batching_broadcast_and_1d);
    tcase_add_test(tc, matmul_backward_matches_finite_differences);
    tcase_add_test(tc, matmul_errors_name_shapes_and_dtypes);
    tcase_add_test(tc, matmul_large_float32_matches_double_reference);
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
