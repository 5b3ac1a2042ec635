/*
 * test_nn_loss.c - losses against hand-computed values (Paddle's
 * conventions: reductions, class weights, ignore_index, label smoothing,
 * soft labels, probabilities), against naive float64 loops on random
 * shapes, backward against finite differences, error paths.
 */
#include "test_nn_util.h"

static const double L0 = 0.4076059644443804; /* -log softmax([1,2,3])[2] */
static const double L1 = 1.0986122886681098; /* -log softmax([1,1,1])[0] = log 3 */

static fw_tensor *logits_2x3(fw_dtype dt, bool grad)
{
    double v[6] = {1, 2, 3, 1, 1, 1};
    int64_t s[2] = {2, 3};
    fw_tensor *t = NULL;
    ck_assert_int_eq(fw_tensor_from_doubles(&t, v, dt, s, 2), 0);
    if (grad)
        fw_tensor_set_stop_gradient(t, false);
    return t;
}

static fw_tensor *vec(const double *v, int64_t n, fw_dtype dt)
{
    fw_tensor *t = NULL;
    ck_assert_int_eq(fw_tensor_from_doubles(&t, v, dt, &n, 1), 0);
    return t;
}

static double item(fw_tensor *t)
{
    double v = NAN;
    ck_assert_int_eq(fw_tensor_ndim(t), 0); /* Paddle: 0-D losses */
    ck_assert_int_eq(fw_tensor_item(&v, t), 0);
    return v;
}

START_TEST(cross_entropy_hard_labels_reductions)
{
    for (int d = 0; d < NN_DTYPES; d++) {
        fw_dtype dt = nn_dtypes[d];
        double tol = nn_tol(dt);
        fw_tensor *x = logits_2x3(dt, false), *y = NULL;
        int64_t lv[2] = {2, 0}, ls[1] = {2}, ls2[2] = {2, 1};
        fw_tensor *lab = nn_labels(lv, ls, 1, FW_INT64), *lab2 = nn_labels(lv, ls2, 2, FW_INT32);
        fw_cross_entropy_opts o = FW_CROSS_ENTROPY_DEFAULTS;
        ck_assert_int_eq(fw_cross_entropy(&y, x, lab, &o), 0);
        ck_assert_double_eq_tol(item(y), (L0 + L1) / 2, tol);
        fw_tensor_unref(y);
        o.reduction = FW_REDUCTION_SUM;
        ck_assert_int_eq(fw_cross_entropy(&y, x, lab, &o), 0);
        ck_assert_double_eq_tol(item(y), L0 + L1, tol);
        fw_tensor_unref(y);
        o.reduction = FW_REDUCTION_NONE;
        ck_assert_int_eq(fw_cross_entropy(&y, x, lab, &o), 0);
        double e[2] = {L0, L1};
        int64_t s1[1] = {2}, s21[2] = {2, 1};
        ck_assert(fw_expect_shape(y, s1, 1));
        ck_assert(fw_expect_close(y, e, 2, tol, tol));
        fw_tensor_unref(y);
        /* [N, 1] labels keep their shape with reduction none */
        ck_assert_int_eq(fw_cross_entropy(&y, x, lab2, &o), 0);
        ck_assert(fw_expect_shape(y, s21, 2));
        ck_assert(fw_expect_close(y, e, 2, tol, tol));
        fw_tensor_unref(y);
        fw_tensor *ts[] = {x, lab, lab2};
        nn_unref_all(ts, 3);
    }
}
END_TEST

START_TEST(cross_entropy_weight_mean_divides_by_label_weights)
{
    fw_tensor *x = logits_2x3(FW_FLOAT64, false), *y = NULL;
    double wv[3] = {1, 2, 3};
    int64_t lv[2] = {2, 0}, ls[1] = {2};
    fw_tensor *w = vec(wv, 3, FW_FLOAT64), *lab = nn_labels(lv, ls, 1, FW_INT64);
    fw_cross_entropy_opts o = FW_CROSS_ENTROPY_DEFAULTS;
    o.weight = w;
    ck_assert_int_eq(fw_cross_entropy(&y, x, lab, &o), 0);
    ck_assert_double_eq_tol(item(y), (3 * L0 + 1 * L1) / 4, 1e-12);
    ck_assert_double_eq_tol(item(y), 0.5803575455003127, 1e-12);
    fw_tensor_unref(y);
    o.reduction = FW_REDUCTION_NONE;
    ck_assert_int_eq(fw_cross_entropy(&y, x, lab, &o), 0);
    double e[2] = {3 * L0, L1};
    ck_assert(fw_expect_close(y, e, 2, 1e-12, 1e-12));
    fw_tensor *ts[] = {x, y, w, lab};
    nn_unref_all(ts, 4);
}
END_TEST

START_TEST(cross_entropy_ignore_index_follows_paddle_mean)
{
    fw_tensor *x = logits_2x3(FW_FLOAT64, false), *y = NULL;
    int64_t ls[1] = {2}, a[2] = {2, 0}, b[2] = {2, -100};
    fw_tensor *la = nn_labels(a, ls, 1, FW_INT64), *lb = nn_labels(b, ls, 1, FW_INT64);
    fw_cross_entropy_opts o = FW_CROSS_ENTROPY_DEFAULTS;
    /* ignore_index >= 0: mean over the kept labels */
    o.ignore_index = 0;
    ck_assert_int_eq(fw_cross_entropy(&y, x, la, &o), 0);
    ck_assert_double_eq_tol(item(y), L0, 1e-12);
    fw_tensor_unref(y);
    /* default ignore_index -100: the ignored sample counts 0 but Paddle's
     * mean still divides by every label */
    o.ignore_index = -100;
    ck_assert_int_eq(fw_cross_entropy(&y, x, lb, &o), 0);
    ck_assert_double_eq_tol(item(y), L0 / 2, 1e-12);
    fw_tensor_unref(y);
    fw_tensor *ts[] = {x, la, lb};
    nn_unref_all(ts, 3);
}
END_TEST

START_TEST(cross_entropy_label_smoothing_soft_labels_and_probabilities)
{
    fw_tensor *x = logits_2x3(FW_FLOAT64, false), *y = NULL;
    int64_t ls[1] = {2}, lv[2] = {2, 0};
    fw_tensor *lab = nn_labels(lv, ls, 1, FW_INT64);
    fw_cross_entropy_opts o = FW_CROSS_ENTROPY_DEFAULTS;
    o.label_smoothing = 0.1;
    o.reduction = FW_REDUCTION_NONE;
    ck_assert_int_eq(fw_cross_entropy(&y, x, lab, &o), 0);
    double es[2] = {0.5076059644443804, L1};
    ck_assert_msg(fw_expect_close(y, es, 2, 1e-12, 1e-12), "%s", fw_error_last());
    fw_tensor_unref(y);

    /* soft labels, with class weights: loss scaled by sum_c l_c w_c and the
     * mean divided by it again */
    double sv[6] = {0.5, 0.5, 0, 0, 0, 1}, wv[3] = {1, 2, 3};
    int64_t s23[2] = {2, 3};
    fw_tensor *soft = NULL, *w = vec(wv, 3, FW_FLOAT64);
    ck_assert_int_eq(fw_tensor_from_doubles(&soft, sv, FW_FLOAT64, s23, 2), 0);
    o = (fw_cross_entropy_opts)FW_CROSS_ENTROPY_DEFAULTS;
    o.soft_label = true;
    o.reduction = FW_REDUCTION_NONE;
    ck_assert_int_eq(fw_cross_entropy(&y, x, soft, &o), 0);
    double e2[2] = {1.9076059644443806, L1};
    int64_t s21[2] = {2, 1};
    ck_assert(fw_expect_shape(y, s21, 2));
    ck_assert(fw_expect_close(y, e2, 2, 1e-12, 1e-12));
    fw_tensor_unref(y);
    o.weight = w;
    o.reduction = FW_REDUCTION_MEAN;
    ck_assert_int_eq(fw_cross_entropy(&y, x, soft, &o), 0);
    ck_assert_double_eq_tol(item(y), (1.5 * 1.9076059644443806 + 3 * L1) / 4.5, 1e-12);
    fw_tensor_unref(y);

    /* use_softmax false: the input holds probabilities */
    double pv[6] = {0.2, 0.3, 0.5, 0.6, 0.2, 0.2};
    fw_tensor *p = NULL;
    ck_assert_int_eq(fw_tensor_from_doubles(&p, pv, FW_FLOAT64, s23, 2), 0);
    o = (fw_cross_entropy_opts)FW_CROSS_ENTROPY_DEFAULTS;
    o.use_softmax = false;
    ck_assert_int_eq(fw_cross_entropy(&y, p, lab, &o), 0);
    ck_assert_double_eq_tol(item(y), (-log(0.5) - log(0.6)) / 2, 1e-12);
    fw_tensor_unref(y);
    fw_tensor *ts[] = {x, lab, soft, w, p};
    nn_unref_all(ts, 5);
}
END_TEST

/* naive CE over [N, C, D] with classes on axis 1, labels [N, D] */
START_TEST(cross_entropy_class_axis_matches_naive_reference)
{
    uint64_t st = 4;
    for (int trial = 0; trial < 6; trial++) {
        int64_t N = nn_randint(&st, 1, 4), C = nn_randint(&st, 2, 5), D = nn_randint(&st, 1, 4);
        int64_t xs[3] = {N, C, D}, ls[2] = {N, D}, *lv = malloc(sizeof(int64_t) * (size_t)(N * D));
        for (int64_t i = 0; i < N * D; i++)
            lv[i] = nn_randint(&st, 0, C - 1);
        fw_tensor *x64 = fw_test_rand_range(FW_FLOAT64, xs, 3, trial, -3, 3, false);
        fw_tensor *lab = nn_labels(lv, ls, 2, FW_INT64);
        double *x = fw_test_doubles(x64, NULL), ref = 0;
        for (int64_t n = 0; n < N; n++)
            for (int64_t dd = 0; dd < D; dd++) {
                double m = -INFINITY, s = 0;
                for (int64_t c = 0; c < C; c++)
                    m = fmax(m, x[(n * C + c) * D + dd]);
                for (int64_t c = 0; c < C; c++)
                    s += exp(x[(n * C + c) * D + dd] - m);
                ref += m + log(s) - x[(n * C + lv[n * D + dd]) * D + dd];
            }
        ref /= (double)(N * D);
        for (int d = 0; d < NN_DTYPES; d++) {
            fw_tensor *xx = nn_as(x64, nn_dtypes[d], false), *y = NULL;
            fw_cross_entropy_opts o = FW_CROSS_ENTROPY_DEFAULTS;
            o.axis = 1;
            ck_assert_msg(fw_cross_entropy(&y, xx, lab, &o) == 0, "%s", fw_error_last());
            ck_assert_double_eq_tol(item(y), ref, nn_tol(nn_dtypes[d]));
            fw_tensor_unref(xx);
            fw_tensor_unref(y);
        }
        free(x);
        free(lv);
        fw_tensor_unref(x64);
        fw_tensor_unref(lab);
    }
}
END_TEST

typedef struct ce_ctx {
    fw_cross_entropy_opts o;
    fw_tensor *label;
} ce_ctx;

static int ce_fn(fw_tensor **out, fw_tensor *const *in, void *vctx)
{
    ce_ctx *c = vctx;
    return fw_cross_entropy(out, in[0], c->label, &c->o);
}

START_TEST(cross_entropy_backward_matches_finite_differences)
{
    int64_t xs[2] = {4, 5}, ls[1] = {4}, lv[4] = {1, 4, 0, 1}, x3[3] = {2, 3, 2}, l3s[2] = {2, 2};
    int64_t l3v[4] = {2, 0, 1, 1};
    double wv[5] = {0.5, 1, 2, 1.5, 3};
    fw_tensor *w = vec(wv, 5, FW_FLOAT64), *lab = nn_labels(lv, ls, 1, FW_INT64);
    fw_tensor *x = nn_rand(FW_FLOAT64, xs, 2, 1, true), *soft = NULL, *sm = NULL;
    fw_tensor *lab3 = nn_labels(l3v, l3s, 2, FW_INT64), *x3t = nn_rand(FW_FLOAT64, x3, 3, 2, true);
    ce_ctx c = {FW_CROSS_ENTROPY_DEFAULTS, lab};
    NN_GRADCHECK(ce_fn, &c, 1, &x);                /* mean */
    c.o.weight = w;
    NN_GRADCHECK(ce_fn, &c, 1, &x);                /* weighted mean */
    c.o.ignore_index = 1;
    c.o.reduction = FW_REDUCTION_NONE;
    NN_GRADCHECK(ce_fn, &c, 1, &x);                /* ignored samples */
    c.o.ignore_index = -100;
    c.o.label_smoothing = 0.2;
    c.o.reduction = FW_REDUCTION_SUM;
    NN_GRADCHECK(ce_fn, &c, 1, &x);                /* smoothing */
    /* soft labels: a softmax of random numbers */
    fw_tensor *r = nn_rand(FW_FLOAT64, xs, 2, 3, false);
    ck_assert_int_eq(fw_softmax(&soft, r, -1), 0);
    c = (ce_ctx){FW_CROSS_ENTROPY_DEFAULTS, soft};
    c.o.soft_label = true;
    c.o.weight = w;
    NN_GRADCHECK(ce_fn, &c, 1, &x);
    /* probabilities */
    fw_tensor *pr = fw_test_rand_range(FW_FLOAT64, xs, 2, 4, 0.1, 1, true);
    c = (ce_ctx){FW_CROSS_ENTROPY_DEFAULTS, lab};
    c.o.use_softmax = false;
    NN_GRADCHECK(ce_fn, &c, 1, &pr);
    c.label = soft;
    c.o.soft_label = true;
    NN_GRADCHECK(ce_fn, &c, 1, &pr);
    /* classes on axis 1 */
    c = (ce_ctx){FW_CROSS_ENTROPY_DEFAULTS, lab3};
    c.o.axis = 1;
    NN_GRADCHECK(ce_fn, &c, 1, &x3t);
    fw_tensor *ts[] = {w, lab, x, soft, sm, lab3, x3t, r, pr};
    nn_unref_all(ts, 9);
}
END_TEST

START_TEST(cross_entropy_errors_name_label_and_shapes)
{
    fw_tensor *x = logits_2x3(FW_FLOAT32, false), *y = NULL, *fl = NULL;
    int64_t ls[1] = {2}, bad[2] = {2, 7}, l3[1] = {3}, v3[3] = {0, 1, 2};
    fw_tensor *lb = nn_labels(bad, ls, 1, FW_INT64), *l3t = nn_labels(v3, l3, 1, FW_INT64);
    double wv[2] = {1, 1};
    fw_tensor *w = vec(wv, 2, FW_FLOAT32);
    fw_cross_entropy_opts o = FW_CROSS_ENTROPY_DEFAULTS;
    NN_EXPECT_ERR(fw_cross_entropy(&y, x, lb, &o), FW_ERANGE, "label 7 out of range [0, 3)");
    NN_EXPECT_ERR(fw_cross_entropy(&y, x, l3t, &o), FW_ESHAPE, "label [3] does not fit input [2, 3]");
    ck_assert_int_eq(fw_zeros(&fl, FW_FLOAT32, ls, 1), 0);
    NN_EXPECT_ERR(fw_cross_entropy(&y, x, fl, &o), FW_EDTYPE, "hard labels must be int32 or int64");
    o.weight = w;
    int64_t ok[2] = {0, 1};
    fw_tensor *lok = nn_labels(ok, ls, 1, FW_INT64);
    NN_EXPECT_ERR(fw_cross_entropy(&y, x, lok, &o), FW_ESHAPE, "weight must be [3]");
    o.weight = NULL;
    o.axis = 2;
    NN_EXPECT_ERR(fw_cross_entropy(&y, x, lok, &o), FW_EAXIS, "axis");
    ck_assert_ptr_null(y);
    fw_tensor *ts[] = {x, fl, lb, l3t, w, lok};
    nn_unref_all(ts, 6);
}
END_TEST

/* ---- nll ---- */

START_TEST(nll_loss_hand_values_and_gradients)
{
    double xv[6] = {-1, -2, -3, -0.5, -1.5, -2.5}, wv[3] = {1, 2, 3};
    int64_t xs[2] = {2, 3}, ls[1] = {2}, lv[2] = {0, 2};
    fw_tensor *x = NULL, *y = NULL, *w = vec(wv, 3, FW_FLOAT64), *lab = nn_labels(lv, ls, 1, FW_INT32);
    ck_assert_int_eq(fw_tensor_from_doubles(&x, xv, FW_FLOAT64, xs, 2), 0);
    ck_assert_int_eq(fw_nll_loss(&y, x, lab, w, -100, FW_REDUCTION_MEAN), 0);
    ck_assert_double_eq_tol(item(y), (1 + 7.5) / 4, 1e-12);
    fw_tensor_unref(y);
    ck_assert_int_eq(fw_nll_loss(&y, x, lab, NULL, 0, FW_REDUCTION_SUM), 0);
    ck_assert_double_eq_tol(item(y), 2.5, 1e-12);
    fw_tensor_unref(y);
    int64_t bad[2] = {0, 3};
    fw_tensor *lb = nn_labels(bad, ls, 1, FW_INT64);
    NN_EXPECT_ERR(fw_nll_loss(&y, x, lb, NULL, -100, FW_REDUCTION_MEAN), FW_ERANGE,
                  "label 3 out of range [0, 3)");
    fw_tensor *ts[] = {x, w, lab, lb};
    nn_unref_all(ts, 4);
}
END_TEST

static int nll_fn(fw_tensor **out, fw_tensor *const *in, void *ctx)
{
    return fw_nll_loss(out, in[0], ctx, in[1] == NULL ? NULL : in[1], 1, FW_REDUCTION_MEAN);
}

START_TEST(nll_loss_backward_matches_finite_differences)
{
    int64_t xs[3] = {3, 4, 2}, ls[2] = {3, 2}, lv[6] = {0, 1, 3, 2, 1, 0};
    fw_tensor *lab = nn_labels(lv, ls, 2, FW_INT64);
    fw_tensor *in[2] = {nn_rand(FW_FLOAT64, xs, 3, 1, true), NULL};
    int64_t cs[1] = {4};
    in[1] = fw_test_rand_range(FW_FLOAT64, cs, 1, 2, 0.5, 2, false);
    NN_GRADCHECK(nll_fn, lab, 2, in);
    nn_unref_all(in, 2);
    fw_tensor_unref(lab);
}
END_TEST

/* ---- pointwise ---- */

START_TEST(pointwise_losses_hand_values)
{
    double xv[3] = {1, 2, 3}, yv[3] = {1.5, 2, 5};
    fw_tensor *x = vec(xv, 3, FW_FLOAT32), *y = vec(yv, 3, FW_FLOAT32), *o = NULL;
    ck_assert_int_eq(fw_mse_loss(&o, x, y, FW_REDUCTION_MEAN), 0);
    ck_assert_double_eq_tol(item(o), 4.25 / 3, 1e-6);
    fw_tensor_unref(o);
    ck_assert_int_eq(fw_l1_loss(&o, x, y, FW_REDUCTION_SUM), 0);
    ck_assert_double_eq_tol(item(o), 2.5, 1e-6);
    fw_tensor_unref(o);
    fw_tensor_unref(x);
    fw_tensor_unref(y);

    double pv[3] = {0.2, 0.9, 0}, tv[3] = {0, 1, 1};
    x = vec(pv, 3, FW_FLOAT64);
    y = vec(tv, 3, FW_FLOAT64);
    ck_assert_int_eq(fw_binary_cross_entropy(&o, x, y, NULL, FW_REDUCTION_NONE), 0);
    double eb[3] = {-log(0.8), -log(0.9), 100}; /* log(0) clamps to -100 */
    ck_assert(fw_expect_close(o, eb, 3, 1e-12, 1e-12));
    fw_tensor_unref(o);
    fw_tensor_unref(x);
    fw_tensor_unref(y);

    double lv[3] = {-1, 2, 100}, l2[3] = {1, 0, 0}, pw[1] = {3};
    x = vec(lv, 3, FW_FLOAT64);
    y = vec(l2, 3, FW_FLOAT64);
    fw_tensor *pwt = vec(pw, 1, FW_FLOAT64);
    ck_assert_int_eq(fw_binary_cross_entropy_with_logits(&o, x, y, NULL, NULL, FW_REDUCTION_NONE), 0);
    double el[3] = {1.3132616875182228, 2.1269280110429727, 100};
    ck_assert(fw_expect_close(o, el, 3, 1e-12, 1e-12));
    fw_tensor_unref(o);
    ck_assert_int_eq(fw_binary_cross_entropy_with_logits(&o, x, y, NULL, pwt, FW_REDUCTION_NONE), 0);
    double ep[3] = {3 * 1.3132616875182228, 2.1269280110429727, 100};
    ck_assert(fw_expect_close(o, ep, 3, 1e-12, 1e-12));
    fw_tensor_unref(o);
    fw_tensor *ts[] = {x, y, pwt};
    nn_unref_all(ts, 3);
}
END_TEST

typedef struct pw_ctx {
    int kind;
    fw_tensor *w, *pw;
} pw_ctx;

static int pw_fn(fw_tensor **out, fw_tensor *const *in, void *vctx)
{
    pw_ctx *c = vctx;
    switch (c->kind) {
    case 0:
        return fw_mse_loss(out, in[0], in[1], FW_REDUCTION_MEAN);
    case 1:
        return fw_l1_loss(out, in[0], in[1], FW_REDUCTION_NONE);
    case 2:
        return fw_binary_cross_entropy(out, in[0], in[1], c->w, FW_REDUCTION_MEAN);
    default:
        return fw_binary_cross_entropy_with_logits(out, in[0], in[1], c->w, c->pw,
                                                   FW_REDUCTION_SUM);
    }
}

START_TEST(pointwise_losses_backward_match_finite_differences)
{
    int64_t xs[2] = {3, 4}, cs[1] = {4};
    fw_tensor *w = fw_test_rand_range(FW_FLOAT64, cs, 1, 9, 0.5, 2, false);
    fw_tensor *pw = fw_test_rand_range(FW_FLOAT64, cs, 1, 10, 0.5, 3, false);
    for (int kind = 0; kind < 4; kind++) {
        pw_ctx c = {kind, kind >= 2 ? w : NULL, kind == 3 ? pw : NULL};
        fw_tensor *in[2];
        if (kind == 2) {
            in[0] = fw_test_rand_range(FW_FLOAT64, xs, 2, 1, 0.05, 0.95, true);
            in[1] = fw_test_rand_range(FW_FLOAT64, xs, 2, 2, 0, 1, true);
        } else {
            in[0] = fw_test_rand_range(FW_FLOAT64, xs, 2, 1, -2, 2, true);
            in[1] = fw_test_rand_range(FW_FLOAT64, xs, 2, 2, kind == 3 ? 0 : -2, kind == 3 ? 1 : 2, true);
        }
        NN_GRADCHECK(pw_fn, &c, 2, in);
        nn_unref_all(in, 2);
    }
    fw_tensor_unref(w);
    fw_tensor_unref(pw);
}
END_TEST

START_TEST(pointwise_losses_float32_match_float64)
{
    uint64_t st = 2;
    for (int trial = 0; trial < 4; trial++) {
        int64_t xs[2] = {nn_randint(&st, 1, 6), nn_randint(&st, 1, 6)}, n = xs[0] * xs[1];
        fw_tensor *x = fw_test_rand_range(FW_FLOAT64, xs, 2, trial, 0.05, 0.95, false);
        fw_tensor *y = fw_test_rand_range(FW_FLOAT64, xs, 2, trial + 9, 0, 1, false);
        fw_tensor *x32 = nn_as(x, FW_FLOAT32, false), *y32 = nn_as(y, FW_FLOAT32, false);
        double *xv = fw_test_doubles(x, NULL), *yv = fw_test_doubles(y, NULL);
        double *ref = malloc(sizeof(double) * (size_t)n);
        for (int kind = 0; kind < 4; kind++) {
            fw_tensor *o = NULL, *o32 = NULL;
            pw_ctx c = {kind, NULL, NULL};
            fw_tensor *in[2] = {x, y}, *in32[2] = {x32, y32};
            for (int64_t i = 0; i < n; i++) {
                double a = xv[i], b = yv[i];
                ref[i] = kind == 0 ? (a - b) * (a - b)
                       : kind == 1 ? fabs(a - b)
                       : kind == 2 ? -(b * log(a) + (1 - b) * log(1 - a))
                                   : fmax(a, 0) - a * b + log1p(exp(-fabs(a)));
            }
            ck_assert_int_eq(pw_fn(&o, in, &c), 0);
            ck_assert_int_eq(pw_fn(&o32, in32, &c), 0);
            if (kind == 1) {
                ck_assert(fw_expect_close(o, ref, n, 1e-12, 1e-12));
                ck_assert(fw_expect_close(o32, ref, n, 1e-5, 1e-5));
            } else {
                double s = 0;
                for (int64_t i = 0; i < n; i++)
                    s += ref[i];
                if (kind != 3)
                    s /= (double)n;
                ck_assert_double_eq_tol(item(o), s, 1e-12);
                ck_assert_double_eq_tol(item(o32), s, 1e-4);
            }
            fw_tensor_unref(o);
            fw_tensor_unref(o32);
        }
        free(xv);
        free(yv);
        free(ref);
        fw_tensor *ts[] = {x, y, x32, y32};
        nn_unref_all(ts, 4);
    }
}
END_TEST

START_TEST(pointwise_losses_reject_mismatched_shapes)
{
    int64_t a[1] = {3}, b[1] = {4};
    fw_tensor *x = nn_rand(FW_FLOAT32, a, 1, 1, false), *y = nn_rand(FW_FLOAT32, b, 1, 1, false);
    fw_tensor *y64 = nn_rand(FW_FLOAT64, a, 1, 1, false), *o = NULL;
    NN_EXPECT_ERR(fw_mse_loss(&o, x, y, FW_REDUCTION_MEAN), FW_ESHAPE, "[3]");
    NN_EXPECT_ERR(fw_l1_loss(&o, x, y64, FW_REDUCTION_MEAN), FW_EDTYPE, "float64");
    NN_EXPECT_ERR(fw_binary_cross_entropy_with_logits(&o, x, x, y, NULL, FW_REDUCTION_MEAN),
                  FW_ESHAPE, "weight [4] does not broadcast to the input [3]");
    NN_EXPECT_ERR(fw_mse_loss(&o, x, x, (fw_reduction)7), FW_EINVAL, "reduction 7");
    ck_assert_ptr_null(o);
    fw_tensor *ts[] = {x, y, y64};
    nn_unref_all(ts, 3);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("nn_loss");
    TCase *tc = tcase_create("loss");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, cross_entropy_hard_labels_reductions);
    tcase_add_test(tc, cross_entropy_weight_mean_divides_by_label_weights);
    tcase_add_test(tc, cross_entropy_ignore_index_follows_paddle_mean);
    tcase_add_test(tc, cross_entropy_label_smoothing_soft_labels_and_probabilities);
    tcase_add_test(tc, cross_entropy_class_axis_matches_naive_reference);
    tcase_add_test(tc, cross_entropy_backward_matches_finite_differences);
    tcase_add_test(tc, cross_entropy_errors_name_label_and_shapes);
    tcase_add_test(tc, nll_loss_hand_values_and_gradients);
    tcase_add_test(tc, nll_loss_backward_matches_finite_differences);
    tcase_add_test(tc, pointwise_losses_hand_values);
    tcase_add_test(tc, pointwise_losses_backward_match_finite_differences);
    tcase_add_test(tc, pointwise_losses_float32_match_float64);
    tcase_add_test(tc, pointwise_losses_reject_mismatched_shapes);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(suite());
    int failed;
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? 0 : 1;
}
