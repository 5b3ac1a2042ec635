/*
 * nn_norm.c - batch_norm, layer_norm, dropout and embedding kernels.
 * Statistics are accumulated in double for both dtypes.
 */
#ifndef NN_T
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "nn_kernels.h"

#define NN_T float
#define NN_S(name) name##_f32
#include "nn_norm.c"
#undef NN_T
#undef NN_S
#define NN_T double
#define NN_S(name) name##_f64
#include "nn_norm.c"
#undef NN_T
#undef NN_S

#else /* template body ------------------------------------------------- */

struct NN_S(bn_ctx) {
    NN_T *y, *save_mean, *save_invstd, *run_mean, *run_var, *dx, *dw, *db;
    const NN_T *x, *w, *b, *dy, *mean, *var, *invstd;
    int64_t N, C, L;
    double momentum, eps;
    int training;
};

static void NN_S(bn_train_range)(void *vctx, int64_t c0, int64_t c1)
{
    struct NN_S(bn_ctx) *k = vctx;
    const int64_t N = k->N, C = k->C, L = k->L, M = N * L;
    for (int64_t c = c0; c < c1; c++) {
        double s = 0, ss = 0, mean, var, invstd, wc, bc;
        for (int64_t n = 0; n < N; n++) {
            const NN_T *xr = k->x + (n * C + c) * L;
            for (int64_t l = 0; l < L; l++)
                s += xr[l];
        }
        mean = M > 0 ? s / (double)M : 0;
        for (int64_t n = 0; n < N; n++) {
            const NN_T *xr = k->x + (n * C + c) * L;
            for (int64_t l = 0; l < L; l++) {
                double d = xr[l] - mean;
                ss += d * d;
            }
        }
        var = M > 0 ? ss / (double)M : 0;
        invstd = 1.0 / sqrt(var + k->eps);
        wc = k->w != NULL ? (double)k->w[c] : 1.0;
        bc = k->b != NULL ? (double)k->b[c] : 0.0;
        for (int64_t n = 0; n < N; n++) {
            const NN_T *xr = k->x + (n * C + c) * L;
            NN_T *yr = k->y + (n * C + c) * L;
            NN_T a = (NN_T)(invstd * wc), sh = (NN_T)(bc - mean * invstd * wc);
            for (int64_t l = 0; l < L; l++)
                yr[l] = xr[l] * a + sh;
        }
        if (k->save_mean != NULL)
            k->save_mean[c] = (NN_T)mean;
        if (k->save_invstd != NULL)
            k->save_invstd[c] = (NN_T)invstd;
        if (k->run_mean != NULL)
            k->run_mean[c] = (NN_T)(k->momentum * k->run_mean[c] + (1 - k->momentum) * mean);
        if (k->run_var != NULL) {
            double unbiased = M > 1 ? ss / (double)(M - 1) : var;
            k->run_var[c] = (NN_T)(k->momentum * k->run_var[c] + (1 - k->momentum) * unbiased);
        }
    }
}

static int64_t NN_S(bn_grain)(int64_t N, int64_t L)
{
    int64_t per = N * L > 0 ? N * L : 1;
    int64_t g = 16384 / per;
    return g < 1 ? 1 : g;
}

/* x, y [N, C, L]; w, b, run_* [C] */
void NN_S(fw__nn_batch_norm_train_fwd)(NN_T *y, NN_T *save_mean, NN_T *save_invstd,
                                       NN_T *run_mean, NN_T *run_var, const NN_T *x,
                                       const NN_T *w, const NN_T *b, int64_t N, int64_t C,
                                       int64_t L, double momentum, double eps)
{
    struct NN_S(bn_ctx) k = {.y = y, .save_mean = save_mean, .save_invstd = save_invstd,
                             .run_mean = run_mean, .run_var = run_var, .x = x, .w = w,
                             .b = b, .N = N, .C = C, .L = L, .momentum = momentum,
                             .eps = eps};
    fw__nn_parallel(C, NN_S(bn_grain)(N, L), NN_S(bn_train_range), &k);
}

/* x, y [N, C, L]; mean, var, w, b [C] */
void NN_S(fw__nn_batch_norm_infer_fwd)(NN_T *y, NN_T *save_invstd, const NN_T *x,
                                       const NN_T *mean, const NN_T *var, const NN_T *w,
                                       const NN_T *b, int64_t N, int64_t C, int64_t L,
                                       double eps)
{
    for (int64_t c = 0; c < C; c++) {
        double invstd = 1.0 / sqrt((double)var[c] + eps);
        double wc = w != NULL ? (double)w[c] : 1.0, bc = b != NULL ? (double)b[c] : 0.0;
        NN_T a = (NN_T)(invstd * wc), sh = (NN_T)(bc - (double)mean[c] * invstd * wc);
        if (save_invstd != NULL)
            save_invstd[c] = (NN_T)invstd;
        for (int64_t n = 0; n < N; n++) {
            const NN_T *xr = x + (n * C + c) * L;
            NN_T *yr = y + (n * C + c) * L;
            for (int64_t l = 0; l < L; l++)
                yr[l] = xr[l] * a + sh;
        }
    }
}

static void NN_S(bn_bwd_range)(void *vctx, int64_t c0, int64_t c1)
{
    struct NN_S(bn_ctx) *k = vctx;
    const int64_t N = k->N, C = k->C, L = k->L, M = N * L;
    for (int64_t c = c0; c < c1; c++) {
        double mean = k->mean[c], invstd = k->invstd[c];
        double sdy = 0, sdyx = 0, wc = k->w != NULL ? (double)k->w[c] : 1.0;
        for (int64_t n = 0; n < N; n++) {
            const NN_T *xr = k->x + (n * C + c) * L, *dyr = k->dy + (n * C + c) * L;
            for (int64_t l = 0; l < L; l++) {
                sdy += dyr[l];
                sdyx += dyr[l] * (xr[l] - mean);
            }
        }
        if (k->db != NULL)
            k->db[c] = (NN_T)sdy;
        if (k->dw != NULL)
            k->dw[c] = (NN_T)(sdyx * invstd);
        if (k->dx == NULL)
            continue;
        for (int64_t n = 0; n < N; n++) {
            const NN_T *xr = k->x + (n * C + c) * L, *dyr = k->dy + (n * C + c) * L;
            NN_T *dxr = k->dx + (n * C + c) * L;
            if (k->training && M > 0) {
                /* dx = w*invstd*(dy - mean(dy) - xhat*mean(dy*xhat)) */
                double a = wc * invstd, mdy = sdy / (double)M;
                double mdyx = sdyx * invstd * invstd / (double)M;
                for (int64_t l = 0; l < L; l++)
                    dxr[l] = (NN_T)(a * ((double)dyr[l] - mdy - ((double)xr[l] - mean) * mdyx));
            } else {
                NN_T a = (NN_T)(wc * invstd);
                for (int64_t l = 0; l < L; l++)
                    dxr[l] = dyr[l] * a;
            }
        }
    }
}

/* dy, x [N, C, L]; mean, invstd, w [C] -> dx [N, C, L], dw, db [C] */
void NN_S(fw__nn_batch_norm_bwd)(NN_T *dx, NN_T *dw, NN_T *db, const NN_T *x, const NN_T *dy,
                                 const NN_T *mean, const NN_T *invstd, const NN_T *w, int64_t N,
                                 int64_t C, int64_t L, int training)
{
    struct NN_S(bn_ctx) k = {.dx = dx, .dw = dw, .db = db, .x = x, .dy = dy, .mean = mean,
                             .invstd = invstd, .w = w, .N = N, .C = C, .L = L,
                             .training = training};
    fw__nn_parallel(C, NN_S(bn_grain)(N, L), NN_S(bn_bwd_range), &k);
}

/* x, y [M, D]; w, b [D] (NULL: 1, 0); mean, rstd [M] */
void NN_S(fw__nn_layer_norm_fwd)(NN_T *y, NN_T *mean, NN_T *rstd, const NN_T *x, const NN_T *w,
                                 const NN_T *b, int64_t M, int64_t D, double eps)
{
    for (int64_t i = 0; i < M; i++) {
        const NN_T *xr = x + i * D;
        NN_T *yr = y + i * D;
        double s = 0, ss = 0, mu, r;
        for (int64_t j = 0; j < D; j++)
            s += xr[j];
        mu = D > 0 ? s / (double)D : 0;
        for (int64_t j = 0; j < D; j++) {
            double d = xr[j] - mu;
            ss += d * d;
        }
        r = 1.0 / sqrt((D > 0 ? ss / (double)D : 0) + eps);
        for (int64_t j = 0; j < D; j++) {
            NN_T v = (NN_T)(((double)xr[j] - mu) * r);
            if (w != NULL)
                v *= w[j];
            if (b != NULL)
                v += b[j];
            yr[j] = v;
        }
        if (mean != NULL)
            mean[i] = (NN_T)mu;
        if (rstd != NULL)
            rstd[i] = (NN_T)r;
    }
}

/* dy, x [M, D]; mean, rstd [M]; w [D] -> dx [M, D], dw, db [D] */
void NN_S(fw__nn_layer_norm_bwd)(NN_T *dx, NN_T *dw, NN_T *db, const NN_T *x, const NN_T *dy,
                                 const NN_T *mean, const NN_T *rstd, const NN_T *w, int64_t M,
                                 int64_t D)
{
    if (dw != NULL)
        memset(dw, 0, (size_t)D * sizeof(NN_T));
    if (db != NULL)
        memset(db, 0, (size_t)D * sizeof(NN_T));
    for (int64_t i = 0; i < M; i++) {
        const NN_T *xr = x + i * D, *dyr = dy + i * D;
        double mu = mean[i], r = rstd[i], sg = 0, sgx = 0;
        for (int64_t j = 0; j < D; j++) {
            double xh = ((double)xr[j] - mu) * r;
            double gj = (double)dyr[j] * (w != NULL ? (double)w[j] : 1.0);
            sg += gj;
            sgx += gj * xh;
            if (dw != NULL)
                dw[j] += (NN_T)(dyr[j] * xh);
            if (db != NULL)
                db[j] += dyr[j];
        }
        if (dx != NULL) {
            NN_T *dxr = dx + i * D;
            double msg = sg / (double)D, msgx = sgx / (double)D;
            for (int64_t j = 0; j < D; j++) {
                double xh = ((double)xr[j] - mu) * r;
                double gj = (double)dyr[j] * (w != NULL ? (double)w[j] : 1.0);
                dxr[j] = (NN_T)(r * (gj - msg - xh * msgx));
            }
        }
    }
}

/* x, y, mask [n] */
void NN_S(fw__nn_dropout_apply)(NN_T *y, const NN_T *x, const uint8_t *mask, int64_t n,
                                double scale)
{
    const NN_T s = (NN_T)scale;
    for (int64_t i = 0; i < n; i++)
        y[i] = mask[i] ? x[i] * s : 0;
}

/* w [V, D], ids [n] -> y [n, D] */
void NN_S(fw__nn_embedding_fwd)(NN_T *y, const NN_T *w, const int64_t *ids, int64_t n,
                                int64_t D, int64_t padding_idx)
{
    for (int64_t i = 0; i < n; i++) {
        if (padding_idx >= 0 && ids[i] == padding_idx)
            memset(y + i * D, 0, (size_t)D * sizeof(NN_T));
        else
            memcpy(y + i * D, w + ids[i] * D, (size_t)D * sizeof(NN_T));
    }
}

/* dy [n, D], ids [n] -> dw [V, D] */
void NN_S(fw__nn_embedding_bwd)(NN_T *dw, const NN_T *dy, const int64_t *ids, int64_t n,
                                int64_t V, int64_t D, int64_t padding_idx)
{
    memset(dw, 0, (size_t)(V * D) * sizeof(NN_T));
    for (int64_t i = 0; i < n; i++) {
        NN_T *r;
        const NN_T *g = dy + i * D;
        if (padding_idx >= 0 && ids[i] == padding_idx)
            continue;
        r = dw + ids[i] * D;
        for (int64_t j = 0; j < D; j++)
            r[j] += g[j];
    }
}

#endif
