/*
 * nn_conv.c - linear and conv2d kernels on OpenBLAS.
 *
 * conv2d is im2col + gemm per sample, the batch split across the framework's
 * pool (BLAS runs single-threaded inside pool work, so the two do not fight
 * for cores). The im2col panel lives in a per-thread scratch buffer that is
 * reused across samples and steps. 1x1 convolutions with unit stride and no
 * padding skip im2col and feed x to gemm directly.
 */
#ifndef NN_T
#include <cblas.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/fw_parallel.h"
#include "nn_kernels.h"

/* Multiply-adds below which a batch-1 convolution or a linear layer runs
 * its BLAS call on one thread: waking OpenBLAS's threads costs more (2
 * threads, LeNet-5's batch-1 forward: 50 -> 28 us). */
#define SMALL_GEMM ((int64_t)1 << 22)

/* im2col copies and zeroes rows of 10-30 elements: NN_NO_LIBCALLS keeps
 * them loops (measured: LeNet conv1 forward 0.47 -> 0.39 ms). */

#define NN_T float
#define NN_S(name) name##_f32
#define NN_GEMM cblas_sgemm
#define NN_GEMV cblas_sgemv
#include "nn_conv.c"
#undef NN_T
#undef NN_S
#undef NN_GEMM
#undef NN_GEMV
#define NN_T double
#define NN_S(name) name##_f64
#define NN_GEMM cblas_dgemm
#define NN_GEMV cblas_dgemv
#include "nn_conv.c"
#undef NN_T
#undef NN_S
#undef NN_GEMM
#undef NN_GEMV

#else /* template body ------------------------------------------------- */

static void NN_S(linear_fwd_blas)(NN_T *y, const NN_T *x, const NN_T *w, const NN_T *b,
                                  int64_t M, int64_t K, int64_t N);

struct NN_S(linear_ctx) {
    NN_T *y;
    const NN_T *x, *w, *b;
    int64_t M, K, N;
};

static void NN_S(linear_serial)(void *vctx, int64_t b0, int64_t b1)
{
    const struct NN_S(linear_ctx) *c = vctx;
    (void)b0;
    (void)b1;
    NN_S(linear_fwd_blas)(c->y, c->x, c->w, c->b, c->M, c->K, c->N);
}

/* x [M, K] @ w [K, N] + b [N] -> y [M, N] */
void NN_S(fw__nn_linear_fwd)(NN_T *y, const NN_T *x, const NN_T *w, const NN_T *b,
                             int64_t M, int64_t K, int64_t N)
{
    if (M * K * N < SMALL_GEMM) {
        struct NN_S(linear_ctx) c = {y, x, w, b, M, K, N};
        fw_parallel_run_serial(1, NN_S(linear_serial), &c);
        return;
    }
    NN_S(linear_fwd_blas)(y, x, w, b, M, K, N);
}

static void NN_S(linear_fwd_blas)(NN_T *y, const NN_T *x, const NN_T *w, const NN_T *b,
                                  int64_t M, int64_t K, int64_t N)
{
    if (b != NULL) {
        for (int64_t i = 0; i < M; i++)
            memcpy(y + i * N, b, (size_t)N * sizeof(NN_T));
    }
    if (K == 0) {
        if (b == NULL)
            memset(y, 0, (size_t)(M * N) * sizeof(NN_T));
        return;
    }
    if (M == 0 || N == 0)
        return;
    if (M == 1) {
        /* one row: gemv reads w once; gemm would first pack all of it */
        NN_GEMV(CblasRowMajor, CblasTrans, (int)K, (int)N, 1, w, (int)N, x, 1,
                b != NULL ? 1 : 0, y, 1);
        return;
    }
    NN_GEMM(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)M, (int)N, (int)K, 1, x, (int)K, w,
            (int)N, b != NULL ? 1 : 0, y, (int)N);
}

/* dy [M, N] -> dx [M, K], dw [K, N], db [N] */
void NN_S(fw__nn_linear_bwd)(NN_T *dx, NN_T *dw, NN_T *db, const NN_T *x, const NN_T *w,
                             const NN_T *dy, int64_t M, int64_t K, int64_t N)
{
    if (dx != NULL) {
        if (N == 0 || K == 0 || M == 0)
            memset(dx, 0, (size_t)(M * K) * sizeof(NN_T));
        else
            NN_GEMM(CblasRowMajor, CblasNoTrans, CblasTrans, (int)M, (int)K, (int)N, 1, dy,
                    (int)N, w, (int)N, 0, dx, (int)K);
    }
    if (dw != NULL) {
        if (M == 0 || K == 0 || N == 0)
            memset(dw, 0, (size_t)(K * N) * sizeof(NN_T));
        else
            NN_GEMM(CblasRowMajor, CblasTrans, CblasNoTrans, (int)K, (int)N, (int)M, 1, x,
                    (int)K, dy, (int)N, 0, dw, (int)N);
    }
    if (db != NULL) {
        memset(db, 0, (size_t)N * sizeof(NN_T));
        for (int64_t i = 0; i < M; i++) {
            const NN_T *r = dy + i * N;
            for (int64_t j = 0; j < N; j++)
                db[j] += r[j];
        }
    }
}

/* One sample's channels [Cg, H, W] -> col [Cg*KH*KW, OH*OW], rows ldc
 * apart (ldc > OH*OW when several samples share one wide panel). */
NN_CLONES NN_NO_LIBCALLS static void NN_S(im2col)(NN_T *restrict col, int64_t ldc, const NN_T *restrict x, int64_t Cg,
                         const fw_nn_conv_geom *g)
{
    const int64_t H = g->H, W = g->W, OH = g->OH, OW = g->OW, sw = g->sw;
    const int same = g->sw == 1 && g->sh == 1 && OW == W;
    for (int64_t c = 0; c < Cg; c++) {
        const NN_T *xc = x + c * H * W;
        for (int64_t kh = 0; kh < g->KH; kh++) {
            for (int64_t kw = 0; kw < g->KW; kw++) {
                NN_T *row = col + ((c * g->KH + kh) * g->KW + kw) * ldc;
                int64_t woff = kw * g->dw - g->pw0;
                /* the ow range whose iw = ow*sw + woff lies inside [0, W) */
                int64_t lo = woff >= 0 ? 0 : (-woff + g->sw - 1) / g->sw;
                int64_t hi = W - woff <= 0 ? 0 : (W - woff + g->sw - 1) / g->sw;
                if (hi > OW)
                    hi = OW;
                if (lo > hi)
                    lo = hi;
                if (same) {
                    /* unit strides and OW == W: the valid rows of this
                     * kernel tap are the plane shifted by hoff rows and
                     * woff columns, so copy them as one block and zero the
                     * wrapped border columns afterwards (one memcpy
                     * instead of a short loop per output row) */
                    int64_t hoff = kh * g->dh - g->ph0;
                    int64_t olo = hoff < 0 ? -hoff : 0, ohi = H - hoff < OH ? H - hoff : OH;
                    if (ohi < olo)
                        ohi = olo;
                    for (int64_t i = 0; i < olo * OW; i++)
                        row[i] = 0;
                    for (int64_t i = ohi * OW; i < OH * OW; i++)
                        row[i] = 0;
                    if (ohi > olo) {
                        int64_t n = (ohi - olo) * W, start = (olo + hoff) * W + woff;
                        int64_t i0 = start < 0 ? -start : 0;
                        int64_t i1 = H * W - start < n ? H * W - start : n;
                        NN_T *d = row + olo * OW;
                        if (i1 < i0)
                            i1 = i0;
                        for (int64_t i = 0; i < i0; i++)
                            d[i] = 0;
                        memcpy(d + i0, xc + start + i0, (size_t)(i1 - i0) * sizeof(NN_T));
                        for (int64_t i = i1; i < n; i++)
                            d[i] = 0;
                        for (int64_t oh = 0; oh < ohi - olo; oh++) {
                            for (int64_t ow = 0; ow < lo; ow++)
                                d[oh * OW + ow] = 0;
                            for (int64_t ow = hi; ow < OW; ow++)
                                d[oh * OW + ow] = 0;
                        }
                    }
                    continue;
                }
                for (int64_t oh = 0; oh < OH; oh++) {
                    int64_t ih = oh * g->sh - g->ph0 + kh * g->dh;
                    NN_T *r = row + oh * OW;
                    if (ih < 0 || ih >= H) {
                        for (int64_t ow = 0; ow < OW; ow++)
                            r[ow] = 0;
                        continue;
                    }
                    const NN_T *xr = xc + ih * W + woff;
                    for (int64_t ow = 0; ow < lo; ow++)
                        r[ow] = 0;
                    if (sw == 1) {
                        for (int64_t ow = lo; ow < hi; ow++)
                            r[ow] = xr[ow];
                    } else {
                        for (int64_t ow = lo; ow < hi; ow++)
                            r[ow] = xr[ow * sw];
                    }
                    for (int64_t ow = hi; ow < OW; ow++)
                        r[ow] = 0;
                }
            }
        }
    }
}

/* col [Cg*KH*KW, OH*OW] (rows ldc apart) accumulated into dx [Cg, H, W]
 * (dx zeroed by the caller). */
NN_CLONES static void NN_S(col2im)(NN_T *restrict dx, const NN_T *restrict col, int64_t ldc, int64_t Cg,
                         const fw_nn_conv_geom *g)
{
    const int64_t H = g->H, W = g->W, OH = g->OH, OW = g->OW;
    for (int64_t c = 0; c < Cg; c++) {
        NN_T *dc = dx + c * H * W;
        for (int64_t kh = 0; kh < g->KH; kh++) {
            for (int64_t kw = 0; kw < g->KW; kw++) {
                const NN_T *row = col + ((c * g->KH + kh) * g->KW + kw) * ldc;
                int64_t woff = kw * g->dw - g->pw0;
                int64_t lo = woff >= 0 ? 0 : (-woff + g->sw - 1) / g->sw;
                int64_t hi = W - woff <= 0 ? 0 : (W - woff + g->sw - 1) / g->sw;
                if (hi > OW)
                    hi = OW;
                if (lo > hi)
                    lo = hi;
                for (int64_t oh = 0; oh < OH; oh++) {
                    int64_t ih = oh * g->sh - g->ph0 + kh * g->dh;
                    if (ih < 0 || ih >= H)
                        continue;
                    const NN_T *r = row + oh * OW;
                    NN_T *dr = dc + ih * W + woff;
                    if (g->sw == 1) {
                        for (int64_t ow = lo; ow < hi; ow++)
                            dr[ow] += r[ow];
                    } else {
                        for (int64_t ow = lo; ow < hi; ow++)
                            dr[ow * g->sw] += r[ow];
                    }
                }
            }
        }
    }
}

static int NN_S(is_pointwise)(const fw_nn_conv_geom *g)
{
    return g->KH == 1 && g->KW == 1 && g->sh == 1 && g->sw == 1 && g->ph0 == 0 &&
           g->ph1 == 0 && g->pw0 == 0 && g->pw1 == 0 && g->OH == g->H && g->OW == g->W;
}

struct NN_S(conv_ctx) {
    NN_T *y, *dx, *dw_parts, *db;
    const NN_T *x, *w, *b, *dy;
    const fw_nn_conv_geom *g;
    int64_t chunk;           /* samples per task (backward) */
    int failed;
};

/* Samples per gemm panel. Tiny output maps (under 64 positions, e.g. 4x4)
 * make per-sample gemms too thin, so several samples share one wide panel
 * (about 2048 columns; the im2col panel stays under 2 MiB). From 64
 * positions up, per-sample gemms measured faster on this machine (LeNet's
 * 10x10: 2.5 vs 2.7 ms per fwd+bwd; 4x4 maps: 1.6 vs 2.4 ms with panels),
 * because batching costs a gather of dy and a scatter of y. */
static int64_t NN_S(panel_samples)(const fw_nn_conv_geom *g, int64_t K, int64_t P, int64_t avail)
{
    int64_t nb = P > 0 && P < 64 ? (2048 + P - 1) / P : 1;
    int64_t cap = (int64_t)(((size_t)2 << 20) / sizeof(NN_T)) / (K * P > 0 ? K * P : 1);
    if (nb > cap)
        nb = cap;
    if (nb > avail)
        nb = avail;
    return nb < 1 ? 1 : nb;
}

static void NN_S(conv_fwd_range)(void *vctx, int64_t n0, int64_t n1)
{
    struct NN_S(conv_ctx) *ctx = vctx;
    const fw_nn_conv_geom *g = ctx->g;
    const int64_t Cg = g->C / g->groups, OCg = g->OC / g->groups;
    const int64_t K = Cg * g->KH * g->KW, P = g->OH * g->OW, HW = g->H * g->W;
    const int pointwise = NN_S(is_pointwise)(g);
    const int64_t nb_max = pointwise ? 1 : NN_S(panel_samples)(g, K, P, n1 - n0);
    NN_T *col = NULL, *tmp = NULL;

    if (!pointwise && (col = fw__nn_scratch(0, (size_t)(K * P * nb_max) * sizeof(NN_T))) == NULL)
        goto oom;
    if (nb_max > 1 && (tmp = fw__nn_scratch(1, (size_t)(OCg * P * nb_max) * sizeof(NN_T))) == NULL)
        goto oom;
    for (int64_t n = n0; n < n1; n += nb_max) {
        const int64_t nb = n1 - n < nb_max ? n1 - n : nb_max, ldc = nb * P;
        for (int64_t gi = 0; gi < g->groups; gi++) {
            const NN_T *wg = ctx->w + gi * OCg * K;
            if (nb == 1) {
                /* one sample: gemm straight into y */
                const NN_T *src = ctx->x + (n * g->C + gi * Cg) * HW;
                NN_T *yg = ctx->y + (n * g->OC + gi * OCg) * P;
                if (!pointwise) {
                    NN_S(im2col)(col, P, src, Cg, g);
                    src = col;
                }
                if (ctx->b != NULL)
                    for (int64_t oc = 0; oc < OCg; oc++)
                        for (int64_t p = 0; p < P; p++)
                            yg[oc * P + p] = ctx->b[gi * OCg + oc];
                NN_GEMM(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)OCg, (int)P, (int)K, 1,
                        wg, (int)K, src, (int)P, ctx->b != NULL ? 1 : 0, yg, (int)P);
                continue;
            }
            for (int64_t s = 0; s < nb; s++)
                NN_S(im2col)(col + s * P, ldc, ctx->x + ((n + s) * g->C + gi * Cg) * HW, Cg, g);
            NN_GEMM(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)OCg, (int)ldc, (int)K, 1, wg,
                    (int)K, col, (int)ldc, 0, tmp, (int)ldc);
            for (int64_t s = 0; s < nb; s++) {
                for (int64_t oc = 0; oc < OCg; oc++) {
                    NN_T *yr = ctx->y + ((n + s) * g->OC + gi * OCg + oc) * P;
                    const NN_T *tr = tmp + oc * ldc + s * P;
                    NN_T bv = ctx->b != NULL ? ctx->b[gi * OCg + oc] : 0;
                    for (int64_t p = 0; p < P; p++)
                        yr[p] = tr[p] + bv;
                }
            }
        }
    }
    return;
oom:
    __atomic_store_n(&ctx->failed, 1, __ATOMIC_RELAXED);
}

/* x [N, C, H, W], w [OC, C/groups, KH, KW], b [OC] or NULL -> y [N, OC, OH, OW] */
int NN_S(fw__nn_conv2d_fwd)(NN_T *y, const NN_T *x, const NN_T *w, const NN_T *b,
                            const fw_nn_conv_geom *g)
{
    struct NN_S(conv_ctx) ctx = {0};
    const int64_t K = (g->C / g->groups) * g->KH * g->KW, P = g->OH * g->OW;

    if (g->N == 0 || g->OC == 0 || P == 0)
        return 0;
    if (K == 0) {
        for (int64_t i = 0; i < g->N * g->OC; i++)
            for (int64_t p = 0; p < P; p++)
                y[i * P + p] = b != NULL ? b[i % g->OC] : 0;
        return 0;
    }
    ctx.y = y;
    ctx.x = x;
    ctx.w = w;
    ctx.b = b;
    ctx.g = g;
    if (g->N == 1 && g->OC * P * K < SMALL_GEMM)
        fw_parallel_run_serial(1, NN_S(conv_fwd_range), &ctx);   /* one small sample */
    else
        fw__nn_parallel(g->N, 1, NN_S(conv_fwd_range), &ctx);
    return ctx.failed ? -1 : 0;
}

/* Task t handles samples [t*chunk, (t+1)*chunk) and owns its slice of
 * dw_parts, so weight gradients need no locks; they are summed afterwards.
 * Within a task, samples are batched into wide panels like the forward. */
static void NN_S(conv_bwd_range)(void *vctx, int64_t t0, int64_t t1)
{
    struct NN_S(conv_ctx) *ctx = vctx;
    const fw_nn_conv_geom *g = ctx->g;
    const int64_t Cg = g->C / g->groups, OCg = g->OC / g->groups;
    const int64_t K = Cg * g->KH * g->KW, P = g->OH * g->OW, HW = g->H * g->W;
    const int pointwise = NN_S(is_pointwise)(g);
    const int64_t nb_max = pointwise ? 1 : NN_S(panel_samples)(g, K, P, ctx->chunk);
    NN_T *col = NULL, *dyp = NULL;

    if (!pointwise && (col = fw__nn_scratch(0, (size_t)(K * P * nb_max) * sizeof(NN_T))) == NULL)
        goto oom;
    if (nb_max > 1 && (dyp = fw__nn_scratch(1, (size_t)(OCg * P * nb_max) * sizeof(NN_T))) == NULL)
        goto oom;
    for (int64_t t = t0; t < t1; t++) {
        NN_T *dw = ctx->dw_parts != NULL ? ctx->dw_parts + t * g->OC * K : NULL;
        int64_t n_end = (t + 1) * ctx->chunk < g->N ? (t + 1) * ctx->chunk : g->N;
        if (dw != NULL)
            memset(dw, 0, (size_t)(g->OC * K) * sizeof(NN_T));
        for (int64_t n = t * ctx->chunk; n < n_end; n += nb_max) {
            const int64_t nb = n_end - n < nb_max ? n_end - n : nb_max, ldc = nb * P;
            if (ctx->dx != NULL && !pointwise)
                memset(ctx->dx + n * g->C * HW, 0, (size_t)(nb * g->C * HW) * sizeof(NN_T));
            for (int64_t gi = 0; gi < g->groups; gi++) {
                const NN_T *wg = ctx->w + gi * OCg * K;
                const NN_T *dyg; /* [OCg, ldc] */
                if (nb == 1) {
                    dyg = ctx->dy + (n * g->OC + gi * OCg) * P;
                } else {
                    for (int64_t s = 0; s < nb; s++)
                        for (int64_t oc = 0; oc < OCg; oc++)
                            memcpy(dyp + oc * ldc + s * P,
                                   ctx->dy + ((n + s) * g->OC + gi * OCg + oc) * P,
                                   (size_t)P * sizeof(NN_T));
                    dyg = dyp;
                }
                if (dw != NULL) {
                    const NN_T *src = ctx->x + (n * g->C + gi * Cg) * HW;
                    if (!pointwise) {
                        for (int64_t s = 0; s < nb; s++)
                            NN_S(im2col)(col + s * P, ldc,
                                         ctx->x + ((n + s) * g->C + gi * Cg) * HW, Cg, g);
                        src = col;
                    }
                    NN_GEMM(CblasRowMajor, CblasNoTrans, CblasTrans, (int)OCg, (int)K, (int)ldc,
                            1, dyg, (int)ldc, src, (int)ldc, 1, dw + gi * OCg * K, (int)K);
                }
                if (ctx->dx != NULL) {
                    /* col is free again: it receives W^T dy */
                    NN_T *dst = pointwise ? ctx->dx + (n * g->C + gi * Cg) * HW : col;
                    NN_GEMM(CblasRowMajor, CblasTrans, CblasNoTrans, (int)K, (int)ldc, (int)OCg,
                            1, wg, (int)K, dyg, (int)ldc, 0, dst, (int)ldc);
                    if (!pointwise)
                        for (int64_t s = 0; s < nb; s++)
                            NN_S(col2im)(ctx->dx + ((n + s) * g->C + gi * Cg) * HW, col + s * P,
                                         ldc, Cg, g);
                }
            }
        }
    }
    return;
oom:
    __atomic_store_n(&ctx->failed, 1, __ATOMIC_RELAXED);
}

/* dy [N, OC, OH, OW] -> dx [N, C, H, W], dw [OC, C/groups, KH, KW], db [OC] */
int NN_S(fw__nn_conv2d_bwd)(NN_T *dx, NN_T *dw, NN_T *db, const NN_T *x, const NN_T *w,
                            const NN_T *dy, const fw_nn_conv_geom *g)
{
    struct NN_S(conv_ctx) ctx = {0};
    const int64_t K = (g->C / g->groups) * g->KH * g->KW, P = g->OH * g->OW;
    int64_t tasks, wsize = g->OC * K;

    if (db != NULL) {
        for (int64_t oc = 0; oc < g->OC; oc++) {
            /* 8 independent partial sums: a single running sum is one long
             * dependency chain the compiler may not reorder (no fast-math) */
            NN_T acc[8] = {0, 0, 0, 0, 0, 0, 0, 0}, s = 0;
            for (int64_t n = 0; n < g->N; n++) {
                const NN_T *r = dy + (n * g->OC + oc) * P;
                int64_t p = 0;
                for (; p + 8 <= P; p += 8)
                    for (int k = 0; k < 8; k++)
                        acc[k] += r[p + k];
                for (; p < P; p++)
                    s += r[p];
            }
            for (int k = 0; k < 8; k++)
                s += acc[k];
            db[oc] = s;
        }
    }
    if (dw != NULL)
        memset(dw, 0, (size_t)wsize * sizeof(NN_T));
    if (g->N == 0 || P == 0 || K == 0 || g->OC == 0 || (dx == NULL && dw == NULL)) {
        if (dx != NULL)
            memset(dx, 0, (size_t)(g->N * g->C * g->H * g->W) * sizeof(NN_T));
        return 0;
    }

    tasks = fw__nn_num_threads();
    if (tasks > g->N)
        tasks = g->N;
    if (tasks < 1)
        tasks = 1;
    ctx.chunk = (g->N + tasks - 1) / tasks;
    tasks = (g->N + ctx.chunk - 1) / ctx.chunk;
    ctx.dx = dx;
    ctx.x = x;
    ctx.w = w;
    ctx.dy = dy;
    ctx.g = g;
    if (dw != NULL) {
        if (tasks == 1) {
            ctx.dw_parts = dw;
        } else if ((ctx.dw_parts = malloc((size_t)(tasks * wsize) * sizeof(NN_T))) == NULL) {
            return -1;
        }
    }
    fw__nn_parallel(tasks, 1, NN_S(conv_bwd_range), &ctx);
    if (dw != NULL && tasks > 1) {
        for (int64_t t = 0; t < tasks; t++) {
            const NN_T *part = ctx.dw_parts + t * wsize;
            for (int64_t i = 0; i < wsize; i++)
                dw[i] += part[i];
        }
        free(ctx.dw_parts);
    }
    return ctx.failed ? -1 : 0;
}

#endif
