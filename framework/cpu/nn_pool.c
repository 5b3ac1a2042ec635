/*
 * nn_pool.c - max, average and adaptive-average 2-D pooling over planes
 * (1-D pooling is the H = 1 case). Windows follow Paddle: a window starts at
 * o*stride - pad and is clipped to the input; max ignores padding; exclusive
 * average divides by the clipped window's size, non-exclusive by KH*KW.
 * Planes are split across the framework's pool.
 */
#ifndef NN_T
#include <float.h>
#include <stdint.h>
#include <string.h>

#include "nn_kernels.h"

/* Output rows are short (LeNet: 14 and 5 columns): NN_NO_LIBCALLS keeps
 * their copy loops from becoming memcpy calls. */

#define NN_T float
#define NN_UT uint32_t
#define NN_S(name) name##_f32
#define NN_LOWEST (-FLT_MAX)
#include "nn_pool.c"
#undef NN_T
#undef NN_UT
#undef NN_S
#undef NN_LOWEST
#define NN_T double
#define NN_UT uint64_t
#define NN_S(name) name##_f64
#define NN_LOWEST (-DBL_MAX)
#include "nn_pool.c"
#undef NN_T
#undef NN_UT
#undef NN_S
#undef NN_LOWEST

#else /* template body ------------------------------------------------- */

struct NN_S(pool_ctx) {
    NN_T *out;
    int64_t *idx_out;
    const NN_T *in;
    const int64_t *idx_in;
    const fw_nn_pool_geom *g;
};

static int64_t NN_S(pool_grain)(const fw_nn_pool_geom *g)
{
    int64_t work = g->H * g->W + g->OH * g->OW * g->KH * g->KW;
    int64_t grain = work > 0 ? 32768 / work : 1;
    return grain < 1 ? 1 : grain;
}

/* The max of the clipped window [hs, he) x [ws, we) of plane x, and its
 * flat index; NaN wins and sticks, as in Paddle and PyTorch. An empty
 * window (ceil_mode past the input) gives the lowest value and index -1. */
static void NN_S(max_window)(NN_T *out, int64_t *out_idx, const NN_T *x, int64_t W, int64_t hs,
                             int64_t he, int64_t ws, int64_t we)
{
    NN_T m = NN_LOWEST;
    int64_t mi = -1;
    if (hs < he && ws < we) {
        m = x[hs * W + ws];
        mi = hs * W + ws;
        for (int64_t h = hs; h < he; h++) {
            for (int64_t w = ws; w < we; w++) {
                NN_T v = x[h * W + w];
                int take = (v > m) | ((v != v) & (m == m));
                m = take ? v : m;
                mi = take ? h * W + w : mi;
            }
        }
    }
    *out = m;
    *out_idx = mi;
}

/* One running-max step: take v at flat index vi when it beats m (NaN wins
 * and sticks), with bit masks rather than branches (see below). */
#define NN_MAX_STEP(m, mi, v, vi)                                                  \
    do {                                                                           \
        union { NN_T f; NN_UT u; } a_ = {(v)}, m_ = {(m)};                         \
        int take_ = (a_.f > m_.f) | ((a_.f != a_.f) & (m_.f == m_.f));             \
        NN_UT fm_ = (NN_UT)0 - (NN_UT)take_;                                       \
        int64_t im_ = -(int64_t)take_;                                             \
        m_.u = (m_.u & ~fm_) | (a_.u & fm_);                                       \
        (m) = m_.f;                                                                \
        (mi) = ((mi) & ~im_) | ((vi) & im_);                                       \
    } while (0)

/* 2x2 windows, stride 2, no padding, every window inside the plane (LeNet's
 * pools): the four cells in the generic order (row by row), kept in
 * registers. Same values and indices as the generic path. */
NN_CLONES static void NN_S(maxpool_fwd_2x2)(const struct NN_S(pool_ctx) *c, int64_t p0, int64_t p1)
{
    const fw_nn_pool_geom *g = c->g;
    const int64_t W = g->W, OH = g->OH, OW = g->OW;

    for (int64_t p = p0; p < p1; p++) {
        const NN_T *x = c->in + p * g->H * W;
        NN_T *y = c->out + p * OH * OW;
        int64_t *id = c->idx_out + p * OH * OW;
        for (int64_t oh = 0; oh < OH; oh++) {
            const int64_t base = 2 * oh * W;
            const NN_T *r0 = x + base, *r1 = r0 + W;
            NN_T *yr = y + oh * OW;
            int64_t *ir = id + oh * OW;
            for (int64_t ow = 0; ow < OW; ow++) {
                const int64_t col = 2 * ow;
                NN_T m = r0[col];
                int64_t mi = base + col;
                NN_MAX_STEP(m, mi, r0[col + 1], base + col + 1);
                NN_MAX_STEP(m, mi, r1[col], base + W + col);
                NN_MAX_STEP(m, mi, r1[col + 1], base + W + col + 1);
                yr[ow] = m;
                ir[ow] = mi;
            }
        }
    }
}
#undef NN_MAX_STEP

NN_CLONES NN_NO_LIBCALLS static void NN_S(maxpool_fwd_range)(void *vctx, int64_t p0, int64_t p1)
{
    struct NN_S(pool_ctx) *c = vctx;
    const fw_nn_pool_geom *g = c->g;
    const int64_t W = g->W, OW = g->OW, sw = g->sw;
    if (g->KH == 2 && g->KW == 2 && g->sh == 2 && g->sw == 2 && g->ph == 0 && g->pw == 0 &&
        2 * g->OH <= g->H && 2 * g->OW <= g->W) {
        NN_S(maxpool_fwd_2x2)(c, p0, p1);
        return;
    }
    /* output columns whose window lies inside [0, W): ow*sw - pw >= 0 and
     * ow*sw - pw + KW <= W */
    int64_t lo = (g->pw + sw - 1) / sw, hi = W - g->KW + g->pw >= 0 ? (W - g->KW + g->pw) / sw + 1 : 0;
    if (hi > OW)
        hi = OW;
    if (lo > hi)
        lo = hi;
    for (int64_t p = p0; p < p1; p++) {
        const NN_T *x = c->in + p * g->H * W;
        NN_T *y = c->out + p * g->OH * OW;
        int64_t *id = c->idx_out + p * g->OH * OW;
        for (int64_t oh = 0; oh < g->OH; oh++) {
            int64_t hs = oh * g->sh - g->ph, he = hs + g->KH;
            NN_T *yr = y + oh * OW;
            int64_t *ir = id + oh * OW;
            if (he > g->H)
                he = g->H;
            if (hs < 0)
                hs = 0;
            for (int64_t ow = 0; ow < lo; ow++)
                NN_S(max_window)(yr + ow, ir + ow, x, W, hs, he, ow * sw - g->pw < 0 ? 0 : ow * sw - g->pw,
                                 ow * sw - g->pw + g->KW > W ? W : ow * sw - g->pw + g->KW);
            for (int64_t ow = hi; ow < OW; ow++)
                NN_S(max_window)(yr + ow, ir + ow, x, W, hs, he, ow * sw - g->pw < 0 ? 0 : ow * sw - g->pw,
                                 ow * sw - g->pw + g->KW > W ? W : ow * sw - g->pw + g->KW);
            if (lo >= hi)
                continue;
            if (hs >= he) {
                for (int64_t ow = lo; ow < hi; ow++) {
                    yr[ow] = NN_LOWEST;
                    ir[ow] = -1;
                }
                continue;
            }
            /* interior: the windows of a block of output columns advance
             * together, one independent running max per column (no long
             * dependency chain per window). The running maxima live in
             * stack buffers, not in y/idx: those are page-aligned like x,
             * and interleaving their stores with loads of x at the same
             * page offsets (4K aliasing) measured twice as slow. */
            for (int64_t b0 = lo; b0 < hi; b0 += 128) {
                const int64_t nb = hi - b0 < 128 ? hi - b0 : 128;
                NN_T mrow[128];
                int64_t irow[128];
                for (int64_t j = 0; j < nb; j++) {
                    int64_t at = hs * W + (b0 + j) * sw - g->pw;
                    mrow[j] = x[at];
                    irow[j] = at;
                }
                for (int64_t h = hs; h < he; h++) {
                    for (int64_t kw = 0; kw < g->KW; kw++) {
                        int64_t base = h * W - g->pw + kw + b0 * sw;
                        const NN_T *xr = x + base;
                        if (h == hs && kw == 0)
                            continue;
                        for (int64_t j = 0; j < nb; j++) {
                            /* select with bit masks: compilers turn "take ?
                             * a : b" into branches here, and on random data
                             * those mispredict (measured 2x slower) */
                            union { NN_T f; NN_UT u; } a = {xr[j * sw]}, m = {mrow[j]};
                            int take = (a.f > m.f) | ((a.f != a.f) & (m.f == m.f));
                            NN_UT fm = (NN_UT)0 - (NN_UT)take;
                            int64_t im = -(int64_t)take;
                            m.u = (m.u & ~fm) | (a.u & fm);
                            mrow[j] = m.f;
                            irow[j] = (irow[j] & ~im) | ((base + j * sw) & im);
                        }
                    }
                }
                for (int64_t j = 0; j < nb; j++) {
                    yr[b0 + j] = mrow[j];
                    ir[b0 + j] = irow[j];
                }
            }
        }
    }
}

/* x [P, H, W] -> y [P, OH, OW], idx [P, OH, OW] */
void NN_S(fw__nn_maxpool2d_fwd)(NN_T *y, int64_t *idx, const NN_T *x, const fw_nn_pool_geom *g)
{
    struct NN_S(pool_ctx) c = {.out = y, .idx_out = idx, .in = x, .g = g};
    fw__nn_parallel(g->P, NN_S(pool_grain)(g), NN_S(maxpool_fwd_range), &c);
}

static void NN_S(maxpool_bwd_range)(void *vctx, int64_t p0, int64_t p1)
{
    struct NN_S(pool_ctx) *c = vctx;
    const fw_nn_pool_geom *g = c->g;
    for (int64_t p = p0; p < p1; p++) {
        NN_T *dx = c->out + p * g->H * g->W;
        const NN_T *dy = c->in + p * g->OH * g->OW;
        const int64_t *id = c->idx_in + p * g->OH * g->OW;
        memset(dx, 0, (size_t)(g->H * g->W) * sizeof(NN_T));
        for (int64_t o = 0; o < g->OH * g->OW; o++)
            if (id[o] >= 0)
                dx[id[o]] += dy[o];
    }
}

/* dy [P, OH, OW], idx -> dx [P, H, W] */
void NN_S(fw__nn_maxpool2d_bwd)(NN_T *dx, const int64_t *idx, const NN_T *dy,
                                const fw_nn_pool_geom *g)
{
    struct NN_S(pool_ctx) c = {.out = dx, .in = dy, .idx_in = idx, .g = g};
    fw__nn_parallel(g->P, NN_S(pool_grain)(g), NN_S(maxpool_bwd_range), &c);
}

static void NN_S(avgpool_range)(void *vctx, int64_t p0, int64_t p1, int backward)
{
    struct NN_S(pool_ctx) *c = vctx;
    const fw_nn_pool_geom *g = c->g;
    for (int64_t p = p0; p < p1; p++) {
        const NN_T *x = c->in + p * (backward ? g->OH * g->OW : g->H * g->W);
        NN_T *y = c->out + p * (backward ? g->H * g->W : g->OH * g->OW);
        if (backward)
            memset(y, 0, (size_t)(g->H * g->W) * sizeof(NN_T));
        for (int64_t oh = 0; oh < g->OH; oh++) {
            int64_t hs = oh * g->sh - g->ph, he = hs + g->KH;
            if (he > g->H)
                he = g->H;
            if (hs < 0)
                hs = 0;
            for (int64_t ow = 0; ow < g->OW; ow++) {
                int64_t ws = ow * g->sw - g->pw, we = ws + g->KW;
                int64_t cnt;
                if (we > g->W)
                    we = g->W;
                if (ws < 0)
                    ws = 0;
                cnt = g->exclusive ? (he - hs) * (we - ws) : g->KH * g->KW;
                if (!backward) {
                    NN_T s = 0;
                    for (int64_t h = hs; h < he; h++)
                        for (int64_t w = ws; w < we; w++)
                            s += x[h * g->W + w];
                    y[oh * g->OW + ow] = cnt > 0 ? s / (NN_T)cnt : 0;
                } else if (cnt > 0) {
                    NN_T v = x[oh * g->OW + ow] / (NN_T)cnt;
                    for (int64_t h = hs; h < he; h++)
                        for (int64_t w = ws; w < we; w++)
                            y[h * g->W + w] += v;
                }
            }
        }
    }
}

static void NN_S(avgpool_fwd_range)(void *vctx, int64_t p0, int64_t p1)
{
    NN_S(avgpool_range)(vctx, p0, p1, 0);
}

static void NN_S(avgpool_bwd_range)(void *vctx, int64_t p0, int64_t p1)
{
    NN_S(avgpool_range)(vctx, p0, p1, 1);
}

/* x [P, H, W] -> y [P, OH, OW] */
void NN_S(fw__nn_avgpool2d_fwd)(NN_T *y, const NN_T *x, const fw_nn_pool_geom *g)
{
    struct NN_S(pool_ctx) c = {.out = y, .in = x, .g = g};
    fw__nn_parallel(g->P, NN_S(pool_grain)(g), NN_S(avgpool_fwd_range), &c);
}

/* dy [P, OH, OW] -> dx [P, H, W] */
void NN_S(fw__nn_avgpool2d_bwd)(NN_T *dx, const NN_T *dy, const fw_nn_pool_geom *g)
{
    struct NN_S(pool_ctx) c = {.out = dx, .in = dy, .g = g};
    fw__nn_parallel(g->P, NN_S(pool_grain)(g), NN_S(avgpool_bwd_range), &c);
}

/* x [P, H, W] -> y [P, OH, OW] */
void NN_S(fw__nn_adaptive_avgpool2d_fwd)(NN_T *y, const NN_T *x, int64_t P, int64_t H,
                                         int64_t W, int64_t OH, int64_t OW)
{
    for (int64_t p = 0; p < P; p++) {
        const NN_T *xp = x + p * H * W;
        for (int64_t oh = 0; oh < OH; oh++) {
            int64_t hs = oh * H / OH, he = ((oh + 1) * H + OH - 1) / OH;
            for (int64_t ow = 0; ow < OW; ow++) {
                int64_t ws = ow * W / OW, we = ((ow + 1) * W + OW - 1) / OW;
                NN_T s = 0;
                for (int64_t h = hs; h < he; h++)
                    for (int64_t w = ws; w < we; w++)
                        s += xp[h * W + w];
                y[(p * OH + oh) * OW + ow] = s / (NN_T)((he - hs) * (we - ws));
            }
        }
    }
}

/* dy [P, OH, OW] -> dx [P, H, W] */
void NN_S(fw__nn_adaptive_avgpool2d_bwd)(NN_T *dx, const NN_T *dy, int64_t P, int64_t H,
                                         int64_t W, int64_t OH, int64_t OW)
{
    memset(dx, 0, (size_t)(P * H * W) * sizeof(NN_T));
    for (int64_t p = 0; p < P; p++) {
        NN_T *dp = dx + p * H * W;
        for (int64_t oh = 0; oh < OH; oh++) {
            int64_t hs = oh * H / OH, he = ((oh + 1) * H + OH - 1) / OH;
            for (int64_t ow = 0; ow < OW; ow++) {
                int64_t ws = ow * W / OW, we = ((ow + 1) * W + OW - 1) / OW;
                NN_T v = dy[(p * OH + oh) * OW + ow] / (NN_T)((he - hs) * (we - ws));
                for (int64_t h = hs; h < he; h++)
                    for (int64_t w = ws; w < we; w++)
                        dp[h * W + w] += v;
            }
        }
    }
}

#endif
