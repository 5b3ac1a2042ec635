/*
 * nn_loss.c - loss kernels: cross entropy (hard and soft labels, with or
 * without softmax), nll, and the pointwise losses mse, l1, bce and
 * bce_with_logits. Per-element losses only; the op layer reduces.
 */
#ifndef NN_T
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "nn_kernels.h"

/* Paddle clamps -log(p) for p = 0 to this instead of returning inf. */
#define NN_APPRO_INF 1e20

#define NN_T float
#define NN_S(name) name##_f32
#define NN_EXP expf
#define NN_LOG logf
#define NN_LOG1P log1pf
#include "nn_loss.c"
#undef NN_T
#undef NN_S
#undef NN_EXP
#undef NN_LOG
#undef NN_LOG1P
#define NN_T double
#define NN_S(name) name##_f64
#define NN_EXP exp
#define NN_LOG log
#define NN_LOG1P log1p
#include "nn_loss.c"
#undef NN_T
#undef NN_S
#undef NN_EXP
#undef NN_LOG
#undef NN_LOG1P

#else /* template body ------------------------------------------------- */

static NN_T NN_S(neg_log)(NN_T p)
{
    NN_T v = -NN_LOG(p);
    return isinf(v) ? (NN_T)(v > 0 ? NN_APPRO_INF : -NN_APPRO_INF) : v;
}

/* x, lsm [outer, C, inner]; label, loss [outer, inner]; w [C] */
void NN_S(fw__nn_ce_hard_fwd)(NN_T *loss, NN_T *lsm, const NN_T *x, const int64_t *label,
                              const NN_T *w, int64_t outer, int64_t C, int64_t inner,
                              int64_t ignore_index, int use_softmax)
{
    if (use_softmax)
        NN_S(fw__nn_log_softmax_fwd)(lsm, x, outer, C, inner);
    for (int64_t o = 0; o < outer; o++) {
        for (int64_t i = 0; i < inner; i++) {
            int64_t s = o * inner + i, y = label[s];
            if (y == ignore_index) {
                loss[s] = 0;
                continue;
            }
            int64_t at = (o * C + y) * inner + i;
            NN_T l = use_softmax ? -lsm[at] : NN_S(neg_log)(x[at]);
            loss[s] = w != NULL ? l * w[y] : l;
        }
    }
}

void NN_S(fw__nn_ce_hard_bwd)(NN_T *dx, const NN_T *lsm, const NN_T *x, const int64_t *label,
                              const NN_T *w, const NN_T *g, int64_t outer, int64_t C,
                              int64_t inner, int64_t ignore_index, int use_softmax)
{
    for (int64_t o = 0; o < outer; o++) {
        for (int64_t i = 0; i < inner; i++) {
            int64_t s = o * inner + i, y = label[s];
            NN_T gs = g[s];
            if (y == ignore_index) {
                for (int64_t c = 0; c < C; c++)
                    dx[(o * C + c) * inner + i] = 0;
                continue;
            }
            if (w != NULL)
                gs *= w[y];
            if (use_softmax) {
                for (int64_t c = 0; c < C; c++) {
                    int64_t at = (o * C + c) * inner + i;
                    dx[at] = gs * (NN_EXP(lsm[at]) - (c == y ? 1 : 0));
                }
            } else {
                for (int64_t c = 0; c < C; c++)
                    dx[(o * C + c) * inner + i] = 0;
                dx[(o * C + y) * inner + i] = -gs / x[(o * C + y) * inner + i];
            }
        }
    }
}

static NN_T NN_S(soft_weight)(const NN_T *lab, const NN_T *w, int64_t o, int64_t i, int64_t C,
                              int64_t inner)
{
    NN_T wg = 0;
    if (w == NULL)
        return 1;
    for (int64_t c = 0; c < C; c++)
        wg += lab[(o * C + c) * inner + i] * w[c];
    return wg;
}

/* x, lab, lsm [outer, C, inner]; loss [outer, inner] */
void NN_S(fw__nn_ce_soft_fwd)(NN_T *loss, NN_T *lsm, const NN_T *x, const NN_T *lab,
                              const NN_T *w, int64_t outer, int64_t C, int64_t inner,
                              int use_softmax)
{
    if (use_softmax)
        NN_S(fw__nn_log_softmax_fwd)(lsm, x, outer, C, inner);
    for (int64_t o = 0; o < outer; o++) {
        for (int64_t i = 0; i < inner; i++) {
            NN_T s = 0;
            for (int64_t c = 0; c < C; c++) {
                int64_t at = (o * C + c) * inner + i;
                NN_T lp = use_softmax ? lsm[at] : -NN_S(neg_log)(x[at]);
                s += lab[at] * lp;
            }
            loss[o * inner + i] = -s * NN_S(soft_weight)(lab, w, o, i, C, inner);
        }
    }
}

void NN_S(fw__nn_ce_soft_bwd)(NN_T *dx, const NN_T *lsm, const NN_T *x, const NN_T *lab,
                              const NN_T *w, const NN_T *g, int64_t outer, int64_t C,
                              int64_t inner, int use_softmax)
{
    for (int64_t o = 0; o < outer; o++) {
        for (int64_t i = 0; i < inner; i++) {
            NN_T gs = g[o * inner + i] * NN_S(soft_weight)(lab, w, o, i, C, inner);
            NN_T ls = 0;
            for (int64_t c = 0; c < C; c++)
                ls += lab[(o * C + c) * inner + i];
            for (int64_t c = 0; c < C; c++) {
                int64_t at = (o * C + c) * inner + i;
                if (use_softmax)
                    dx[at] = gs * (NN_EXP(lsm[at]) * ls - lab[at]);
                else
                    dx[at] = -gs * lab[at] / x[at];
            }
        }
    }
}

/* x [outer, C, inner] log-probabilities; label, loss [outer, inner] */
void NN_S(fw__nn_nll_fwd)(NN_T *loss, const NN_T *x, const int64_t *label, const NN_T *w,
                          int64_t outer, int64_t C, int64_t inner, int64_t ignore_index)
{
    for (int64_t o = 0; o < outer; o++) {
        for (int64_t i = 0; i < inner; i++) {
            int64_t s = o * inner + i, y = label[s];
            if (y == ignore_index) {
                loss[s] = 0;
                continue;
            }
            loss[s] = -x[(o * C + y) * inner + i] * (w != NULL ? w[y] : 1);
        }
    }
}

void NN_S(fw__nn_nll_bwd)(NN_T *dx, const int64_t *label, const NN_T *w, const NN_T *g,
                          int64_t outer, int64_t C, int64_t inner, int64_t ignore_index)
{
    memset(dx, 0, (size_t)(outer * C * inner) * sizeof(NN_T));
    for (int64_t o = 0; o < outer; o++) {
        for (int64_t i = 0; i < inner; i++) {
            int64_t s = o * inner + i, y = label[s];
            if (y == ignore_index)
                continue;
            dx[(o * C + y) * inner + i] = -g[s] * (w != NULL ? w[y] : 1);
        }
    }
}

static NN_T NN_S(clamped_log)(NN_T v)
{
    NN_T l = NN_LOG(v);
    return l < (NN_T)-100 ? (NN_T)-100 : l;
}

/* log(1 + exp(-|x|)) + max(-x, 0) = softplus(-x), stable for any x */
static NN_T NN_S(softplus_neg)(NN_T x)
{
    return NN_LOG1P(NN_EXP(-fabs(x))) + (x < 0 ? -x : 0);
}

/* x, y, w, pw, loss [n] */
void NN_S(fw__nn_pointwise_loss_fwd)(NN_T *loss, int kind, const NN_T *x, const NN_T *y,
                                     const NN_T *w, const NN_T *pw, int64_t n)
{
    for (int64_t i = 0; i < n; i++) {
        NN_T l, d = x[i] - y[i];
        switch (kind) {
        case FW_NN_LOSS_MSE:
            l = d * d;
            break;
        case FW_NN_LOSS_L1:
            l = fabs(d);
            break;
        case FW_NN_LOSS_BCE:
            l = -(y[i] * NN_S(clamped_log)(x[i]) + (1 - y[i]) * NN_S(clamped_log)(1 - x[i]));
            break;
        default: {
            NN_T lw = pw != NULL ? (pw[i] - 1) * y[i] + 1 : 1;
            l = (1 - y[i]) * x[i] + lw * NN_S(softplus_neg)(x[i]);
            break;
        }
        }
        loss[i] = w != NULL ? l * w[i] : l;
    }
}

void NN_S(fw__nn_pointwise_loss_bwd)(NN_T *dx, NN_T *dy, int kind, const NN_T *x, const NN_T *y,
                                     const NN_T *w, const NN_T *pw, const NN_T *g,
                                     int64_t g_stride, int64_t n)
{
    for (int64_t i = 0; i < n; i++) {
        NN_T gi = g[i * g_stride], gx, gy;
        NN_T d = x[i] - y[i];
        if (w != NULL)
            gi *= w[i];
        switch (kind) {
        case FW_NN_LOSS_MSE:
            gx = 2 * d;
            gy = -gx;
            break;
        case FW_NN_LOSS_L1:
            gx = (NN_T)((d > 0) - (d < 0));
            gy = -gx;
            break;
        case FW_NN_LOSS_BCE: {
            NN_T den = (1 - x[i]) * x[i];
            gx = d / (den > (NN_T)1e-12 ? den : (NN_T)1e-12);
            gy = NN_S(clamped_log)(1 - x[i]) - NN_S(clamped_log)(x[i]);
            break;
        }
        default: {
            NN_T p = pw != NULL ? pw[i] : 1;
            NN_T lw = (p - 1) * y[i] + 1;
            NN_T sig = 1 / (1 + NN_EXP(-x[i]));
            gx = (1 - y[i]) + lw * (sig - 1);
            gy = -x[i] + (p - 1) * NN_S(softplus_neg)(x[i]);
            break;
        }
        }
        if (dx != NULL)
            dx[i] = gi * gx;
        if (dy != NULL)
            dy[i] = gi * gy;
    }
}

#endif
