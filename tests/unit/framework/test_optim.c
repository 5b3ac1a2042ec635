/*
 * test_optim.c - optimizers against Paddle's formulas written out by hand
 * for three steps, clipping by global norm, state export/import, LR
 * schedulers against hand values, and error paths.
 */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fw/optim.h"

#define NP 3
static const double P0[NP] = { 1.0, -2.0, 0.5 };
static const double G[3][NP] = { { 0.1, -0.2, 0.3 }, { -0.5, 0.4, 0.05 }, { 0.2, 0.2, -0.7 } };

static fw_tensor *param(fw_dtype dt, const double *v, int64_t n)
{
    fw_tensor *p = NULL;
    ck_assert_int_eq(fw_tensor_from_doubles(&p, v, dt, &n, 1), 0);
    ck_assert_int_eq(fw_tensor_set_stop_gradient(p, false), 0);
    return p;
}

static void set_grad(fw_tensor *p, const double *g)
{
    fw_tensor *t = NULL;
    int64_t n = fw_tensor_numel(p);
    ck_assert_int_eq(fw_tensor_from_doubles(&t, g, fw_tensor_dtype(p), &n, 1), 0);
    ck_assert_int_eq(fw_tensor_set_grad(p, t), 0);
    fw_tensor_unref(t);
}

static void expect_values(fw_tensor *p, const double *want, double tol)
{
    double got[16];
    int64_t n = fw_tensor_numel(p);
    ck_assert_int_eq(fw_tensor_to_doubles(got, n, p), 0);
    for (int64_t i = 0; i < n; i++)
        ck_assert_msg(fabs(got[i] - want[i]) <= tol * (1 + fabs(want[i])),
                      "element %lld: got %.15g want %.15g", (long long)i, got[i], want[i]);
}

/* Run `steps` steps of cfg on one param from P0 with grads G. */
static fw_tensor *run(const fw_optim_config *c, fw_dtype dt, int steps)
{
    fw_tensor *p = param(dt, P0, NP);
    fw_optim *o = NULL;
    ck_assert_int_eq(fw_optim_new(&o, c, &p, 1), 0);
    for (int t = 0; t < steps; t++) {
        set_grad(p, G[t]);
        ck_assert_int_eq(fw_optim_step(o), 0);
    }
    fw_optim_free(o);
    return p;
}

START_TEST(sgd_with_l2_matches_hand_formula)
{
    fw_optim_config c;
    fw_optim_config_default(&c, FW_OPTIM_SGD);
    c.lr = 0.1;
    c.weight_decay = 0.01;
    double want[NP];
    memcpy(want, P0, sizeof(want));
    for (int t = 0; t < 3; t++)
        for (int i = 0; i < NP; i++)
            want[i] -= 0.1 * (G[t][i] + 0.01 * want[i]);
    fw_tensor *p = run(&c, FW_FLOAT64, 3);
    expect_values(p, want, 1e-14);
    fw_tensor_unref(p);
    p = run(&c, FW_FLOAT32, 3);
    expect_values(p, want, 1e-6);
    fw_tensor_unref(p);
}
END_TEST

static void momentum_case(bool nesterov)
{
    fw_optim_config c;
    fw_optim_config_default(&c, FW_OPTIM_MOMENTUM);
    c.lr = 0.05;
    c.momentum = 0.8;
    c.nesterov = nesterov;
    c.weight_decay = 0.1;
    double want[NP], v[NP] = { 0 };
    memcpy(want, P0, sizeof(want));
    for (int t = 0; t < 3; t++)
        for (int i = 0; i < NP; i++) {
            double g = G[t][i] + 0.1 * want[i];
            v[i] = 0.8 * v[i] + g;
            want[i] -= nesterov ? 0.05 * (g + 0.8 * v[i]) : 0.05 * v[i];
        }
    fw_tensor *p = run(&c, FW_FLOAT64, 3);
    expect_values(p, want, 1e-14);
    fw_tensor_unref(p);
    p = run(&c, FW_FLOAT32, 3);
    expect_values(p, want, 1e-6);
    fw_tensor_unref(p);
}

START_TEST(momentum_matches_paddle_formula)
{
    momentum_case(false);
}
END_TEST

START_TEST(nesterov_momentum_matches_paddle_formula)
{
    momentum_case(true);
}
END_TEST

/* Adam by hand. l2: coupled; decay: AdamW decoupled. */
static void adam_by_hand(double *want, double lr, double b1, double b2, double eps, double l2,
                         double decay, int steps)
{
    double m[NP] = { 0 }, v[NP] = { 0 };
    memcpy(want, P0, NP * sizeof(double));
    for (int t = 1; t <= steps; t++) {
        double lr_t = lr * sqrt(1 - pow(b2, t)) / (1 - pow(b1, t));
        for (int i = 0; i < NP; i++) {
            want[i] -= lr * decay * want[i];
            double g = G[t - 1][i] + l2 * want[i];
            m[i] = b1 * m[i] + (1 - b1) * g;
            v[i] = b2 * v[i] + (1 - b2) * g * g;
            want[i] -= lr_t * m[i] / (sqrt(v[i]) + eps * sqrt(1 - pow(b2, t)));
        }
    }
}

START_TEST(adam_matches_paddle_formula_with_scaled_epsilon)
{
    fw_optim_config c;
    fw_optim_config_default(&c, FW_OPTIM_ADAM);
    ck_assert_double_eq(c.lr, 0.001);
    ck_assert_double_eq(c.beta1, 0.9);
    ck_assert_double_eq(c.beta2, 0.999);
    ck_assert_double_eq(c.epsilon, 1e-8);
    ck_assert_double_eq(c.weight_decay, 0.0);
    c.lr = 0.01;
    c.epsilon = 0.05;   /* big, so where epsilon sits shows in the result */
    double want[NP], other[NP];
    adam_by_hand(want, 0.01, 0.9, 0.999, 0.05, 0, 0, 3);
    fw_tensor *p = run(&c, FW_FLOAT64, 3);
    expect_values(p, want, 1e-13);
    /* epsilon added unscaled to sqrt(v) (the usual slip) gives other numbers */
    double m[NP] = { 0 }, v[NP] = { 0 };
    memcpy(other, P0, sizeof(other));
    for (int t = 1; t <= 3; t++)
        for (int i = 0; i < NP; i++) {
            m[i] = 0.9 * m[i] + 0.1 * G[t - 1][i];
            v[i] = 0.999 * v[i] + 0.001 * G[t - 1][i] * G[t - 1][i];
            other[i] -= 0.01 * sqrt(1 - pow(0.999, t)) / (1 - pow(0.9, t)) * m[i] /
                        (sqrt(v[i]) + 0.05);
        }
    double got[NP];
    ck_assert_int_eq(fw_tensor_to_doubles(got, NP, p), 0);
    ck_assert(fabs(got[0] - other[0]) > 1e-6);
    fw_tensor_unref(p);
    p = run(&c, FW_FLOAT32, 3);
    expect_values(p, want, 1e-6);
    fw_tensor_unref(p);
}
END_TEST

/* Long params run the vector paths of the fused kernel (the 3-element cases
 * above only reach its scalar tail): check every element of 1003. */
START_TEST(adam_vector_path_matches_formula_on_long_params)
{
    enum { N = 1003 };
    static double p0[N], g[3][N], want[N], m[N], v[N], got[N];
    for (int i = 0; i < N; i++) {
        p0[i] = sin(i * 0.37);
        for (int t = 0; t < 3; t++)
            g[t][i] = cos(i * 0.11 + t) * (1 + t);
    }
    const double lr = 0.01, b1 = 0.9, b2 = 0.999, eps = 1e-3, wd = 0.05;
    for (int dt = 0; dt < 2; dt++) {
        for (int kind = 0; kind < 2; kind++) {     /* Adam with L2, AdamW */
            fw_optim_config c;
            fw_optim_config_default(&c, kind ? FW_OPTIM_ADAMW : FW_OPTIM_ADAM);
            c.lr = lr;
            c.epsilon = eps;
            c.weight_decay = wd;
            fw_tensor *p = param(dt ? FW_FLOAT64 : FW_FLOAT32, p0, N);
            fw_optim *o = NULL;
            ck_assert_int_eq(fw_optim_new(&o, &c, &p, 1), 0);
            memcpy(want, p0, sizeof(want));
            memset(m, 0, sizeof(m));
            memset(v, 0, sizeof(v));
            for (int t = 1; t <= 3; t++) {
                set_grad(p, g[t - 1]);
                ck_assert_int_eq(fw_optim_step(o), 0);
                double lr_t = lr * sqrt(1 - pow(b2, t)) / (1 - pow(b1, t));
                for (int i = 0; i < N; i++) {
                    if (kind)
                        want[i] -= lr * wd * want[i];
                    double gi = g[t - 1][i] + (kind ? 0 : wd * want[i]);
                    m[i] = b1 * m[i] + (1 - b1) * gi;
                    v[i] = b2 * v[i] + (1 - b2) * gi * gi;
                    want[i] -= lr_t * m[i] / (sqrt(v[i]) + eps * sqrt(1 - pow(b2, t)));
                }
            }
            ck_assert_int_eq(fw_tensor_to_doubles(got, N, p), 0);
            for (int i = 0; i < N; i++)
                ck_assert_msg(fabs(got[i] - want[i]) <= (dt ? 1e-13 : 2e-6) * (1 + fabs(want[i])),
                              "dtype %d kind %d element %d: %.12g want %.12g", dt, kind, i,
                              got[i], want[i]);
            fw_optim_free(o);
            fw_tensor_unref(p);
        }
    }
}
END_TEST

START_TEST(adam_float_weight_decay_is_coupled_l2)
{
    fw_optim_config c;
    fw_optim_config_default(&c, FW_OPTIM_ADAM);
    c.lr = 0.02;
    c.weight_decay = 0.5;
    double want[NP];
    adam_by_hand(want, 0.02, 0.9, 0.999, 1e-8, 0.5, 0, 3);
    fw_tensor *p = run(&c, FW_FLOAT64, 3);
    expect_values(p, want, 1e-13);
    fw_tensor_unref(p);
}
END_TEST

START_TEST(adamw_decays_decoupled_and_only_chosen_params)
{
    fw_optim_config c;
    fw_optim_config_default(&c, FW_OPTIM_ADAMW);
    ck_assert_double_eq(c.weight_decay, 0.01);
    c.lr = 0.05;
    c.weight_decay = 0.3;
    double want[NP], nodecay[NP];
    adam_by_hand(want, 0.05, 0.9, 0.999, 1e-8, 0, 0.3, 3);
    adam_by_hand(nodecay, 0.05, 0.9, 0.999, 1e-8, 0, 0, 3);
    fw_tensor *ps[2] = { param(FW_FLOAT64, P0, NP), param(FW_FLOAT64, P0, NP) };
    fw_optim *o = NULL;
    ck_assert_int_eq(fw_optim_new(&o, &c, ps, 2), 0);
    ck_assert_int_eq(fw_optim_set_decay(o, 1, false), 0);   /* apply_decay_param_fun */
    ck_assert_int_eq(fw_optim_set_decay(o, 2, false), FW_ERANGE);
    for (int t = 0; t < 3; t++) {
        set_grad(ps[0], G[t]);
        set_grad(ps[1], G[t]);
        ck_assert_int_eq(fw_optim_step(o), 0);
    }
    expect_values(ps[0], want, 1e-13);
    expect_values(ps[1], nodecay, 1e-13);
    /* decoupled differs from coupled L2 */
    double l2[NP];
    adam_by_hand(l2, 0.05, 0.9, 0.999, 1e-8, 0.3, 0, 3);
    ck_assert(fabs(l2[0] - want[0]) > 1e-6);
    fw_optim_free(o);
    fw_tensor_unref(ps[0]);
    fw_tensor_unref(ps[1]);
}
END_TEST

START_TEST(params_without_grad_are_skipped_and_keep_no_state)
{
    fw_optim_config c;
    fw_optim_config_default(&c, FW_OPTIM_ADAM);
    fw_tensor *ps[2] = { param(FW_FLOAT32, P0, NP), param(FW_FLOAT32, P0, NP) };
    fw_optim *o = NULL;
    ck_assert_int_eq(fw_optim_new(&o, &c, ps, 2), 0);
    set_grad(ps[0], G[0]);
    ck_assert_int_eq(fw_optim_step(o), 0);
    expect_values(ps[1], P0, 0);
    fw_tensor *s = NULL;
    ck_assert_int_eq(fw_optim_state_get(&s, o, 1, "moment1"), FW_ERANGE);
    ck_assert_int_eq(fw_optim_state_get(&s, o, 0, "moment1"), 0);
    fw_tensor_unref(s);
    fw_optim_clear_grad(o, false);
    ck_assert_ptr_null(fw_tensor_grad(ps[0]));
    fw_optim_free(o);
    fw_tensor_unref(ps[0]);
    fw_tensor_unref(ps[1]);
}
END_TEST

START_TEST(clip_by_global_norm_scales_all_grads)
{
    double a[2] = { 3, 4 }, b[1] = { 12 }, ga[2] = { 3, 4 }, gb[1] = { 12 };
    fw_tensor *ps[3] = { param(FW_FLOAT32, a, 2), param(FW_FLOAT64, b, 1),
                         param(FW_FLOAT64, b, 1) };   /* the third has no grad */
    set_grad(ps[0], ga);
    set_grad(ps[1], gb);
    double norm;
    ck_assert_int_eq(fw_clip_grad_by_global_norm(&norm, ps, 3, 6.5), 0);
    ck_assert_double_eq_tol(norm, 13.0, 1e-12);
    double want_a[2] = { 1.5, 2.0 }, want_b[1] = { 6.0 };
    expect_values(fw_tensor_grad(ps[0]), want_a, 1e-7);
    expect_values(fw_tensor_grad(ps[1]), want_b, 1e-14);
    /* under the bound: unchanged */
    ck_assert_int_eq(fw_clip_grad_by_global_norm(&norm, ps, 3, 100), 0);
    ck_assert_double_eq_tol(norm, 6.5, 1e-6);
    expect_values(fw_tensor_grad(ps[1]), want_b, 1e-14);
    ck_assert_int_eq(fw_clip_grad_by_global_norm(&norm, ps, 3, 0), FW_EINVAL);
    for (int i = 0; i < 3; i++)
        fw_tensor_unref(ps[i]);
}
END_TEST

START_TEST(optimizer_clips_before_adding_l2)
{
    fw_optim_config c;
    fw_optim_config_default(&c, FW_OPTIM_SGD);
    c.lr = 1.0;
    c.weight_decay = 0.1;
    c.clip_norm = 0.5;
    double p0[2] = { 1.0, 2.0 }, g[2] = { 3.0, 4.0 };
    fw_tensor *p = param(FW_FLOAT64, p0, 2);
    fw_optim *o = NULL;
    ck_assert_int_eq(fw_optim_new(&o, &c, &p, 1), 0);
    set_grad(p, g);
    ck_assert_int_eq(fw_optim_step(o), 0);
    /* grad clipped to norm 0.5: (0.3, 0.4); then + 0.1 * p */
    double want[2] = { 1.0 - (0.3 + 0.1), 2.0 - (0.4 + 0.2) };
    expect_values(p, want, 1e-14);
    fw_optim_free(o);
    fw_tensor_unref(p);
}
END_TEST

START_TEST(state_export_import_continues_identically)
{
    fw_optim_config c;
    fw_optim_config_default(&c, FW_OPTIM_ADAM);
    c.lr = 0.1;
    fw_tensor *p = param(FW_FLOAT64, P0, NP), *q = NULL;
    fw_optim *o = NULL, *o2 = NULL;
    ck_assert_int_eq(fw_optim_new(&o, &c, &p, 1), 0);
    for (int t = 0; t < 2; t++) {
        set_grad(p, G[t]);
        ck_assert_int_eq(fw_optim_step(o), 0);
    }
    size_t ns;
    const char *const *names = fw_optim_state_names(o, &ns);
    ck_assert_uint_eq(ns, 4);
    ck_assert_str_eq(names[0], "moment1");
    fw_tensor *b1 = NULL;
    ck_assert_int_eq(fw_optim_state_get(&b1, o, 0, "beta1_pow_acc"), 0);
    ck_assert_int_eq(fw_tensor_dtype(b1), FW_FLOAT32);
    double v;
    ck_assert_int_eq(fw_tensor_item(&v, b1), 0);
    ck_assert_double_eq_tol(v, 0.9 * 0.9 * 0.9, 1e-7);   /* beta1^t of the next step */
    fw_tensor_unref(b1);

    /* a fresh optimizer on a copy of p, given o's state */
    double pv[NP];
    ck_assert_int_eq(fw_tensor_to_doubles(pv, NP, p), 0);
    q = param(FW_FLOAT64, pv, NP);
    ck_assert_int_eq(fw_optim_new(&o2, &c, &q, 1), 0);
    for (size_t k = 0; k < ns; k++) {
        fw_tensor *s = NULL;
        ck_assert_int_eq(fw_optim_state_get(&s, o, 0, names[k]), 0);
        ck_assert_int_eq(fw_optim_state_set(o2, 0, names[k], s), 0);
        fw_tensor_unref(s);
    }
    set_grad(p, G[2]);
    set_grad(q, G[2]);
    ck_assert_int_eq(fw_optim_step(o), 0);
    ck_assert_int_eq(fw_optim_step(o2), 0);
    double a[NP], b[NP];
    ck_assert_int_eq(fw_tensor_to_doubles(a, NP, p), 0);
    ck_assert_int_eq(fw_tensor_to_doubles(b, NP, q), 0);
    /* beta pows pass through float32 like Paddle's accumulators: 1 - beta2^t
     * keeps about 5 digits, so the continued step agrees to ~1e-5 */
    for (int i = 0; i < NP; i++)
        ck_assert_double_eq_tol(a[i], b[i], 1e-5 * (1 + fabs(a[i])));
    double want[NP];
    adam_by_hand(want, 0.1, 0.9, 0.999, 1e-8, 0, 0, 3);
    expect_values(p, want, 1e-13);

    /* bad state */
    fw_tensor *bad = NULL;
    int64_t two = 2;
    double z[2] = { 0, 0 };
    ck_assert_int_eq(fw_tensor_from_doubles(&bad, z, FW_FLOAT64, &two, 1), 0);
    ck_assert_int_eq(fw_optim_state_set(o2, 0, "moment1", bad), FW_ESHAPE);
    ck_assert_int_eq(fw_optim_state_set(o2, 0, "velocity", bad), FW_EINVAL);
    ck_assert_int_eq(fw_optim_state_set(o2, 5, "moment1", bad), FW_ERANGE);
    fw_tensor_unref(bad);
    fw_optim_free(o);
    fw_optim_free(o2);
    fw_tensor_unref(p);
    fw_tensor_unref(q);
}
END_TEST

START_TEST(bad_configs_params_and_grads_are_rejected)
{
    fw_optim_config c;
    fw_optim *o = (fw_optim *)1;
    fw_tensor *p = param(FW_FLOAT32, P0, NP);
    fw_optim_config_default(&c, FW_OPTIM_ADAM);
    c.beta1 = 1.0;
    ck_assert_int_eq(fw_optim_new(&o, &c, &p, 1), FW_EINVAL);
    ck_assert_ptr_null(o);
    ck_assert_ptr_nonnull(strstr(fw_error_last(), "beta1"));
    fw_optim_config_default(&c, FW_OPTIM_SGD);
    c.lr = -1;
    ck_assert_int_eq(fw_optim_new(&o, &c, &p, 1), FW_EINVAL);
    fw_optim_config_default(&c, FW_OPTIM_SGD);
    fw_tensor *twice[2] = { p, p };
    ck_assert_int_eq(fw_optim_new(&o, &c, twice, 2), FW_EINVAL);
    fw_tensor *ip = NULL;
    int64_t n = 3;
    ck_assert_int_eq(fw_zeros(&ip, FW_INT64, &n, 1), 0);
    ck_assert_int_eq(fw_optim_new(&o, &c, &ip, 1), FW_EDTYPE);
    fw_tensor_unref(ip);

    /* grads must match params (set_grad refuses others); a step with one
     * grad set leaves the other param alone */
    fw_tensor *q = param(FW_FLOAT64, P0, NP), *ps[2] = { p, q };
    ck_assert_int_eq(fw_optim_new(&o, &c, ps, 2), 0);
    fw_tensor *g32 = NULL;
    ck_assert_int_eq(fw_tensor_from_doubles(&g32, G[0], FW_FLOAT32, &n, 1), 0);
    ck_assert_int_eq(fw_tensor_set_grad(q, g32), FW_EDTYPE);
    fw_tensor_unref(g32);
    set_grad(p, G[0]);
    ck_assert_int_eq(fw_optim_step(o), 0);
    expect_values(q, P0, 0);
    ck_assert_int_eq(fw_optim_set_lr(o, 0.5), 0);
    ck_assert_double_eq(fw_optim_get_lr(o), 0.5);
    ck_assert_int_eq(fw_optim_set_lr(o, -0.5), FW_EINVAL);
    fw_optim_free(o);
    fw_tensor_unref(p);
    fw_tensor_unref(q);
}
END_TEST

START_TEST(optimizer_follows_its_scheduler)
{
    fw_lr_sched *s = NULL;
    ck_assert_int_eq(fw_lr_step_decay_new(&s, 1.0, 1, 0.5), 0);
    fw_optim_config c;
    fw_optim_config_default(&c, FW_OPTIM_SGD);
    c.sched = s;
    double p0[1] = { 0 }, g[1] = { 1 };
    fw_tensor *p = param(FW_FLOAT64, p0, 1);
    fw_optim *o = NULL;
    ck_assert_int_eq(fw_optim_new(&o, &c, &p, 1), 0);
    ck_assert_int_eq(fw_optim_set_lr(o, 0.1), FW_EINVAL);
    for (int t = 0; t < 3; t++) {
        set_grad(p, g);
        ck_assert_int_eq(fw_optim_step(o), 0);
        fw_lr_sched_step(s);
    }
    double want[1] = { -(1.0 + 0.5 + 0.25) };
    expect_values(p, want, 1e-15);
    fw_optim_free(o);
    fw_lr_sched_free(s);
    fw_tensor_unref(p);
}
END_TEST

START_TEST(param_lr_scale_and_need_clip_apply_per_param)
{
    fw_optim_config c;
    fw_optim_config_default(&c, FW_OPTIM_SGD);
    c.lr = 0.1;
    c.clip_norm = 1.0;
    double z[2] = { 0, 0 }, g0[2] = { 3, 4 }, g1[2] = { 30, 40 };
    fw_tensor *ps[2] = { param(FW_FLOAT64, z, 2), param(FW_FLOAT64, z, 2) };
    fw_optim *o = NULL;
    ck_assert_int_eq(fw_optim_new(&o, &c, ps, 2), 0);
    ck_assert_int_eq(fw_optim_set_lr_scale(o, 0, 2.0), 0);
    ck_assert_int_eq(fw_optim_set_need_clip(o, 1, false), 0);
    ck_assert_int_eq(fw_optim_set_lr_scale(o, 0, -1), FW_EINVAL);
    ck_assert_int_eq(fw_optim_set_need_clip(o, 9, false), FW_ERANGE);
    set_grad(ps[0], g0);
    set_grad(ps[1], g1);
    ck_assert_int_eq(fw_optim_step(o), 0);
    /* param 0: norm 5 (param 1 not counted) -> grad (0.6, 0.8), lr 0.2 */
    double w0[2] = { -0.12, -0.16 }, w1[2] = { -3.0, -4.0 };
    expect_values(ps[0], w0, 1e-14);
    expect_values(ps[1], w1, 1e-14);
    ck_assert_int_eq(fw_optim_step(NULL), FW_EINVAL);
    fw_optim_free(o);
    fw_tensor_unref(ps[0]);
    fw_tensor_unref(ps[1]);
}
END_TEST

START_TEST(scheduler_state_restores_and_continues)
{
    fw_lr_sched *a = NULL, *b = NULL;
    ck_assert_int_eq(fw_lr_cosine_annealing_new(&a, 0.5, 4, 0.1), 0);
    ck_assert_int_eq(fw_lr_cosine_annealing_new(&b, 0.5, 4, 0.1), 0);
    for (int e = 0; e < 6; e++)
        fw_lr_sched_step(a);
    ck_assert_int_eq(fw_lr_sched_set_state(b, fw_lr_sched_epoch(a), fw_lr_sched_get(a)), 0);
    for (int e = 0; e < 5; e++) {
        fw_lr_sched_step(a);
        fw_lr_sched_step(b);
        ck_assert_double_eq_tol(fw_lr_sched_get(a), fw_lr_sched_get(b), 1e-15);
    }
    ck_assert_int_eq(fw_lr_sched_set_state(b, -2, 0.1), FW_EINVAL);
    fw_lr_sched_free(a);
    fw_lr_sched_free(b);
}
END_TEST

static void expect_sequence(fw_lr_sched *s, const double *want, int n)
{
    for (int e = 0; e < n; e++) {
        ck_assert_int_eq(fw_lr_sched_epoch(s), e);
        ck_assert_msg(fabs(fw_lr_sched_get(s) - want[e]) < 1e-10, "epoch %d: %.12g want %.12g",
                      e, fw_lr_sched_get(s), want[e]);
        fw_lr_sched_step(s);
    }
}

START_TEST(step_decay_sequence)
{
    fw_lr_sched *s = NULL;
    ck_assert_int_eq(fw_lr_step_decay_new(&s, 0.5, 2, 0.1), 0);
    const double want[] = { 0.5, 0.5, 0.05, 0.05, 0.005, 0.005 };
    expect_sequence(s, want, 6);
    ck_assert_int_eq(fw_lr_sched_step_to(s, 1), 0);
    ck_assert_double_eq_tol(fw_lr_sched_get(s), 0.5, 1e-15);
    fw_lr_sched_free(s);
    ck_assert_int_eq(fw_lr_step_decay_new(&s, 0.5, 0, 0.1), FW_EINVAL);
}
END_TEST

START_TEST(piecewise_decay_sequence)
{
    fw_lr_sched *s = NULL;
    const int64_t b[] = { 3, 6 };
    const double v[] = { 1.0, 0.5, 0.1 };
    ck_assert_int_eq(fw_lr_piecewise_decay_new(&s, b, 2, v, 3), 0);
    const double want[] = { 1, 1, 1, 0.5, 0.5, 0.5, 0.1, 0.1 };
    expect_sequence(s, want, 8);
    fw_lr_sched_free(s);
    ck_assert_int_eq(fw_lr_piecewise_decay_new(&s, b, 2, v, 2), FW_EINVAL);
    const int64_t down[] = { 6, 3 };
    ck_assert_int_eq(fw_lr_piecewise_decay_new(&s, down, 2, v, 3), FW_EINVAL);
}
END_TEST

START_TEST(cosine_annealing_recursive_sequence)
{
    fw_lr_sched *s = NULL;
    ck_assert_int_eq(fw_lr_cosine_annealing_new(&s, 0.5, 4, 0.1), 0);
    /* Paddle's recursive form, past T_max it climbs back */
    const double want[] = { 0.5, 0.441421356237, 0.3, 0.158578643763, 0.1, 0.158578643763,
                            0.3, 0.441421356237, 0.5, 0.441421356237, 0.3 };
    for (int e = 0; e < 11; e++) {
        ck_assert_msg(fabs(fw_lr_sched_get(s) - want[e]) < 1e-11, "epoch %d: %.12f", e,
                      fw_lr_sched_get(s));
        fw_lr_sched_step(s);
    }
    ck_assert_int_eq(fw_lr_sched_step_to(s, 2), 0);   /* closed form */
    ck_assert_double_eq_tol(fw_lr_sched_get(s), 0.3, 1e-12);
    ck_assert_int_eq(fw_lr_sched_step_to(s, -1), FW_EINVAL);
    fw_lr_sched_free(s);
    ck_assert_int_eq(fw_lr_cosine_annealing_new(&s, 0.5, 0, 0), FW_EINVAL);
}
END_TEST

START_TEST(exponential_decay_sequence)
{
    fw_lr_sched *s = NULL;
    ck_assert_int_eq(fw_lr_exponential_decay_new(&s, 0.5, 0.9), 0);
    const double want[] = { 0.5, 0.45, 0.405, 0.3645, 0.32805 };
    expect_sequence(s, want, 5);
    fw_lr_sched_free(s);
}
END_TEST

START_TEST(linear_warmup_sequence_over_float_and_scheduler)
{
    fw_lr_sched *s = NULL, *inner = NULL;
    ck_assert_int_eq(fw_lr_linear_warmup_new(&s, NULL, 0.1, 2, 0.0, 0.1), 0);
    const double w1[] = { 0.0, 0.05, 0.1, 0.1, 0.1 };
    expect_sequence(s, w1, 5);
    fw_lr_sched_free(s);

    ck_assert_int_eq(fw_lr_cosine_annealing_new(&inner, 0.5, 4, 0.0), 0);
    ck_assert_int_eq(fw_lr_linear_warmup_new(&s, inner, 0, 3, 0.0, 0.5), 0);
    const double w2[] = { 0.0, 0.5 / 3, 1.0 / 3, 0.5, 0.426776695297, 0.25, 0.073223304703 };
    expect_sequence(s, w2, 7);
    fw_lr_sched_free(s);     /* frees inner */

    ck_assert_int_eq(fw_lr_cosine_annealing_new(&inner, 0.5, 4, 0.0), 0);
    ck_assert_int_eq(fw_lr_linear_warmup_new(&s, inner, 0, 0, 0.0, 0.5), FW_EINVAL);
    ck_assert_ptr_null(s);   /* inner was taken and freed (ASan/valgrind would see a leak) */
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("fw_optim");
    TCase *tc = tcase_create("optimizers");
    tcase_add_test(tc, sgd_with_l2_matches_hand_formula);
    tcase_add_test(tc, momentum_matches_paddle_formula);
    tcase_add_test(tc, nesterov_momentum_matches_paddle_formula);
    tcase_add_test(tc, adam_matches_paddle_formula_with_scaled_epsilon);
    tcase_add_test(tc, adam_float_weight_decay_is_coupled_l2);
    tcase_add_test(tc, adam_vector_path_matches_formula_on_long_params);
    tcase_add_test(tc, adamw_decays_decoupled_and_only_chosen_params);
    tcase_add_test(tc, params_without_grad_are_skipped_and_keep_no_state);
    tcase_add_test(tc, clip_by_global_norm_scales_all_grads);
    tcase_add_test(tc, optimizer_clips_before_adding_l2);
    tcase_add_test(tc, state_export_import_continues_identically);
    tcase_add_test(tc, bad_configs_params_and_grads_are_rejected);
    tcase_add_test(tc, optimizer_follows_its_scheduler);
    tcase_add_test(tc, param_lr_scale_and_need_clip_apply_per_param);
    suite_add_tcase(s, tc);
    TCase *ts = tcase_create("schedulers");
    tcase_add_test(ts, step_decay_sequence);
    tcase_add_test(ts, piecewise_decay_sequence);
    tcase_add_test(ts, cosine_annealing_recursive_sequence);
    tcase_add_test(ts, exponential_decay_sequence);
    tcase_add_test(ts, linear_warmup_sequence_over_float_and_scheduler);
    tcase_add_test(ts, scheduler_state_restores_and_continues);
    suite_add_tcase(s, ts);
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
