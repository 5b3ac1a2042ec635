/*
 * nn.cu - the CUDA instance of the nn kernel family (core/fw_backend_nn.h):
 * float32 and float64, the same math as cpu/nn_*.c. Every kernel is queued
 * on the compute stream; the host never waits here.
 *
 * Layout of the work: row-wise ops (softmax, cross entropy, nll) run one
 * thread per row of [outer, C, inner], except softmax over a long last axis
 * (inner 1) and layer norm, one block per row with block reductions;
 * per-channel reductions (batch norm) one block per channel with a double
 * block reduction, as the CPU accumulates in double; elementwise ops one
 * thread per element; scatters (pool and embedding backward) atomicAdd into
 * a zeroed output (order of float additions may differ from the CPU's).
 * linear runs on cuBLAS through blas.c's fw__cu_gemm_batched.
 * conv2d runs on cuDNN where the build has it and it takes the geometry
 * (cudnn_conv.cu); otherwise im2col + cuBLAS gemm (every group of an image
 * in one batched gemm), dx gathering its columns back (col2im).
 */
#include "cu_kern.cuh"
#include "cu_nn.h"
#include "cu_runtime.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>

/* ---- helpers ------------------------------------------------------------------ */

static int nn_bad_dtype(const char *entry, fw_dtype dt)
{
    return fw__cu_error_set(FW_EDTYPE, "%s: %s not supported on cuda (float32 and float64 only)",
                            entry, cu_dtype_name(dt));
}

static int nn_zero(void *p, size_t nbytes, const char *entry)
{
    if (nbytes == 0)
        return 0;
    return fw__cu_error(cudaMemsetAsync(p, 0, nbytes, fw__cu_stream()), entry);
}

static size_t nn_es(fw_dtype dt) { return dt == FW_FLOAT64 ? 8 : 4; }

/* Launch kern<T> over n work items (grid-stride) for dt in {float32, float64};
 * T names the element type inside the argument list. */
#define NN_LAUNCH(entry, kern, n, ...)                                                    \
    do {                                                                                  \
        if ((n) <= 0)                                                                     \
            break;                                                                        \
        if (dt == FW_FLOAT32) {                                                           \
            typedef float T;                                                              \
            kern<T><<<fw__cu_blocks(n), FW_CU_THREADS, 0, fw__cu_stream()>>>(__VA_ARGS__); \
        } else if (dt == FW_FLOAT64) {                                                    \
            typedef double T;                                                             \
            kern<T><<<fw__cu_blocks(n), FW_CU_THREADS, 0, fw__cu_stream()>>>(__VA_ARGS__); \
        } else {                                                                          \
            return nn_bad_dtype(entry, dt);                                               \
        }                                                                                 \
        int rc_ = cu_launched(entry);                                                     \
        if (rc_ < 0)                                                                      \
            return rc_;                                                                   \
    } while (0)

/* One block per channel (grid-stride over channels). */
#define NN_LAUNCH_BLOCKS(entry, kern, nblk, ...)                                          \
    do {                                                                                  \
        if ((nblk) <= 0)                                                                  \
            break;                                                                        \
        unsigned g_ = (unsigned)((nblk) > 65535 ? 65535 : (nblk));                        \
        if (dt == FW_FLOAT32) {                                                           \
            typedef float T;                                                              \
            kern<T><<<g_, FW_CU_THREADS, 0, fw__cu_stream()>>>(__VA_ARGS__);              \
        } else if (dt == FW_FLOAT64) {                                                    \
            typedef double T;                                                             \
            kern<T><<<g_, FW_CU_THREADS, 0, fw__cu_stream()>>>(__VA_ARGS__);              \
        } else {                                                                          \
            return nn_bad_dtype(entry, dt);                                               \
        }                                                                                 \
        int rc_ = cu_launched(entry);                                                     \
        if (rc_ < 0)                                                                      \
            return rc_;                                                                   \
    } while (0)

#define NN_CHECK(entry)                                                                   \
    do {                                                                                  \
        if (dt != FW_FLOAT32 && dt != FW_FLOAT64)                                         \
            return nn_bad_dtype(entry, dt);                                               \
    } while (0)

__device__ __forceinline__ float nn_exp(float v) { return expf(v); }
__device__ __forceinline__ double nn_exp(double v) { return exp(v); }
__device__ __forceinline__ float nn_log(float v) { return logf(v); }
__device__ __forceinline__ double nn_log(double v) { return log(v); }
__device__ __forceinline__ float nn_log1p(float v) { return log1pf(v); }
__device__ __forceinline__ double nn_log1p(double v) { return log1p(v); }
__device__ __forceinline__ float nn_tanh(float v) { return tanhf(v); }
__device__ __forceinline__ double nn_tanh(double v) { return tanh(v); }
__device__ __forceinline__ float nn_fabs(float v) { return fabsf(v); }
__device__ __forceinline__ double nn_fabs(double v) { return fabs(v); }

template <typename T> __device__ __forceinline__ T nn_lowest();
template <> __device__ __forceinline__ float nn_lowest<float>() { return -FLT_MAX; }
template <> __device__ __forceinline__ double nn_lowest<double>() { return -DBL_MAX; }

/* The sum of v over the block (every thread gets it); blockDim.x a
 * multiple of 32, at most 1024. */
__device__ double nn_block_sum(double v)
{
    __shared__ double sh[32];
    int lane = threadIdx.x & 31, w = threadIdx.x >> 5, nw = blockDim.x >> 5;

    for (int o = 16; o > 0; o >>= 1)
        v += __shfl_down_sync(0xffffffffu, v, o);
    __syncthreads();                       /* sh may still be read from a last call */
    if (lane == 0)
        sh[w] = v;
    __syncthreads();
    if (w == 0) {
        v = lane < nw ? sh[lane] : 0.0;
        for (int o = 16; o > 0; o >>= 1)
            v += __shfl_down_sync(0xffffffffu, v, o);
        if (lane == 0)
            sh[0] = v;
    }
    __syncthreads();
    return sh[0];
}

/* The max of v over the block, NaN ignored (a NaN in the row makes the sums
 * NaN anyway, as on the CPU); every thread gets it. */
__device__ double nn_block_max(double v)
{
    __shared__ double sh[32];
    int lane = threadIdx.x & 31, w = threadIdx.x >> 5, nw = blockDim.x >> 5;

    for (int o = 16; o > 0; o >>= 1)
        v = fmax(v, __shfl_down_sync(0xffffffffu, v, o));
    __syncthreads();
    if (lane == 0)
        sh[w] = v;
    __syncthreads();
    if (w == 0) {
        v = lane < nw ? sh[lane] : -INFINITY;
        for (int o = 16; o > 0; o >>= 1)
            v = fmax(v, __shfl_down_sync(0xffffffffu, v, o));
        if (lane == 0)
            sh[0] = v;
    }
    __syncthreads();
    return sh[0];
}

/* ---- softmax ------------------------------------------------------------------ */

/* inner == 1 and a long C: one block per row, block reductions. */
template <typename T>
__global__ void k_softmax_rows(T *y, const T *x, int64_t rows, int64_t C, int log_form)
{
    for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
        const T *xr = x + r * C;
        T *yr = y + r * C;
        double m = -INFINITY, s = 0;
        for (int64_t c = threadIdx.x; c < C; c += blockDim.x)
            m = fmax(m, (double)xr[c]);
        T mt = (T)nn_block_max(m);
        for (int64_t c = threadIdx.x; c < C; c += blockDim.x)
            s += (double)nn_exp(xr[c] - mt);
        T st = (T)nn_block_sum(s);
        if (log_form) {
            T lse = mt + nn_log(st);
            for (int64_t c = threadIdx.x; c < C; c += blockDim.x)
                yr[c] = xr[c] - lse;
        } else {
            T inv = (T)1 / st;
            for (int64_t c = threadIdx.x; c < C; c += blockDim.x)
                yr[c] = nn_exp(xr[c] - mt) * inv;
        }
    }
}

template <typename T>
__global__ void k_softmax_bwd_rows(T *dx, const T *y, const T *dy, int64_t rows, int64_t C,
                                   int log_form)
{
    for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
        const T *yr = y + r * C, *dyr = dy + r * C;
        T *dxr = dx + r * C;
        double s = 0;
        for (int64_t c = threadIdx.x; c < C; c += blockDim.x)
            s += log_form ? (double)dyr[c] : (double)dyr[c] * (double)yr[c];
        T st = (T)nn_block_sum(s);
        for (int64_t c = threadIdx.x; c < C; c += blockDim.x)
            dxr[c] = log_form ? dyr[c] - nn_exp(yr[c]) * st : yr[c] * (dyr[c] - st);
    }
}

/* The row kernels pay off from this many classes. */
#define NN_ROW_BLOCK_C 64

template <typename T>
__global__ void k_softmax(T *y, const T *x, int64_t outer, int64_t C, int64_t inner,
                          int log_form)
{
    CU_FOR(r, outer * inner) {
        int64_t o = r / inner, i = r - o * inner;
        const T *xr = x + o * C * inner + i;
        T *yr = y + o * C * inner + i;
        T m = xr[0], s = 0;
        for (int64_t c = 1; c < C; c++)
            if (xr[c * inner] > m)
                m = xr[c * inner];
        for (int64_t c = 0; c < C; c++) {
            T e = nn_exp(xr[c * inner] - m);
            s += e;
            if (!log_form)
                yr[c * inner] = e;
        }
        if (log_form) {
            T lse = m + nn_log(s);
            for (int64_t c = 0; c < C; c++)
                yr[c * inner] = xr[c * inner] - lse;
        } else {
            T inv = (T)1 / s;
            for (int64_t c = 0; c < C; c++)
                yr[c * inner] *= inv;
        }
    }
}

template <typename T>
__global__ void k_softmax_bwd(T *dx, const T *y, const T *dy, int64_t outer, int64_t C,
                              int64_t inner, int log_form)
{
    CU_FOR(r, outer * inner) {
        int64_t o = r / inner, i = r - o * inner, base = o * C * inner + i;
        T s = 0;
        if (log_form) {
            for (int64_t c = 0; c < C; c++)
                s += dy[base + c * inner];
            for (int64_t c = 0; c < C; c++)
                dx[base + c * inner] = dy[base + c * inner] - nn_exp(y[base + c * inner]) * s;
        } else {
            for (int64_t c = 0; c < C; c++)
                s += dy[base + c * inner] * y[base + c * inner];
            for (int64_t c = 0; c < C; c++)
                dx[base + c * inner] = y[base + c * inner] * (dy[base + c * inner] - s);
        }
    }
}

static int cu_softmax_any(fw_dtype dt, void *y, const void *x, int64_t outer, int64_t C,
                          int64_t inner, int log_form, const char *entry)
{
    if (C <= 0)
        return dt == FW_FLOAT32 || dt == FW_FLOAT64 ? 0 : nn_bad_dtype(entry, dt);
    if (inner == 1 && C >= NN_ROW_BLOCK_C)
        NN_LAUNCH_BLOCKS(entry, k_softmax_rows, outer, (T *)y, (const T *)x, outer, C, log_form);
    else
        NN_LAUNCH(entry, k_softmax, outer * inner, (T *)y, (const T *)x, outer, C, inner,
                  log_form);
    return 0;
}

static int cu_softmax_fwd(fw_dtype dt, void *y, const void *x, int64_t outer, int64_t C,
                          int64_t inner)
{
    return cu_softmax_any(dt, y, x, outer, C, inner, 0, "softmax");
}

static int cu_log_softmax_fwd(fw_dtype dt, void *y, const void *x, int64_t outer, int64_t C,
                              int64_t inner)
{
    return cu_softmax_any(dt, y, x, outer, C, inner, 1, "log_softmax");
}

/* softmax (log 0) or log_softmax (log 1) backward: one body, as forward */
static int cu_softmax_bwd_any(fw_dtype dt, void *dx, const void *y, const void *dy,
                              int64_t outer, int64_t C, int64_t inner, int log,
                              const char *op)
{
    NN_CHECK(op);
    if (C <= 0)
        return 0;
    if (inner == 1 && C >= NN_ROW_BLOCK_C)
        NN_LAUNCH_BLOCKS(op, k_softmax_bwd_rows, outer, (T *)dx, (const T *)y, (const T *)dy,
                         outer, C, log);
    else
        NN_LAUNCH(op, k_softmax_bwd, outer * inner, (T *)dx, (const T *)y, (const T *)dy,
                  outer, C, inner, log);
    return 0;
}

static int cu_softmax_bwd(fw_dtype dt, void *dx, const void *y, const void *dy, int64_t outer,
                          int64_t C, int64_t inner)
{
    return cu_softmax_bwd_any(dt, dx, y, dy, outer, C, inner, 0, "softmax backward");
}

static int cu_log_softmax_bwd(fw_dtype dt, void *dx, const void *y, const void *dy,
                              int64_t outer, int64_t C, int64_t inner)
{
    return cu_softmax_bwd_any(dt, dx, y, dy, outer, C, inner, 1, "log_softmax backward");
}

/* ---- linear ------------------------------------------------------------------- */

template <typename T> __global__ void k_bias_add(T *y, const T *b, int64_t M, int64_t N)
{
    CU_FOR(i, M * N) y[i] += b[i % N];
}

/* db[n] = sum_m dy[m, n] */
template <typename T> __global__ void k_col_sum(T *db, const T *dy, int64_t M, int64_t N)
{
    CU_FOR(n, N) {
        double s = 0;
        for (int64_t m = 0; m < M; m++)
            s += (double)dy[m * N + n];
        db[n] = (T)s;
    }
}

static int cu_linear_fwd(fw_dtype dt, void *y, const void *x, const void *w, const void *b,
                         int64_t M, int64_t K, int64_t N)
{
    const int64_t off0 = 0;
    int rc;

    NN_CHECK("linear");
    rc = fw__cu_gemm_batched(dt, false, false, M, N, K, x, K, &off0, w, N, &off0, y, N, 0, 1);
    if (rc < 0)
        return rc;
    if (b != NULL)
        NN_LAUNCH("linear", k_bias_add, M * N, (T *)y, (const T *)b, M, N);
    return 0;
}

static int cu_linear_bwd(fw_dtype dt, void *dx, void *dw, void *db, const void *x,
                         const void *w, const void *dy, int64_t M, int64_t K, int64_t N)
{
    const int64_t off0 = 0;
    int rc;

    NN_CHECK("linear backward");
    if (dx != NULL) {                      /* dx [M, K] = dy [M, N] w^T */
        rc = fw__cu_gemm_batched(dt, false, true, M, K, N, dy, N, &off0, w, N, &off0, dx, K,
                                 0, 1);
        if (rc < 0)
            return rc;
    }
    if (dw != NULL) {                      /* dw [K, N] = x^T dy */
        rc = fw__cu_gemm_batched(dt, true, false, K, N, M, x, K, &off0, dy, N, &off0, dw, N,
                                 0, 1);
        if (rc < 0)
            return rc;
    }
    if (db != NULL)
        NN_LAUNCH("linear backward", k_col_sum, N, (T *)db, (const T *)dy, M, N);
    return 0;
}

/* ---- conv2d: im2col + cuBLAS gemm per image, all groups in one batched gemm ---- */

/* col [C*KH*KW, OH*OW] of image x [C, H, W]: row (c*KH + kh)*KW + kw, column
 * oh*OW + ow holds x[c, oh*sh - ph0 + kh*dh, ow*sw - pw0 + kw*dw] (0 outside). */
template <typename T> __global__ void k_im2col(T *col, const T *x, fw_nn_conv_geom g)
{
    const int64_t S = g.OH * g.OW;
    CU_FOR(t, g.C * g.KH * g.KW * S) {
        int64_t s = t % S, r = t / S;
        int64_t ow = s % g.OW, oh = s / g.OW;
        int64_t kw = r % g.KW, kh = (r / g.KW) % g.KH, c = r / (g.KW * g.KH);
        int64_t h = oh * g.sh - g.ph0 + kh * g.dh, w = ow * g.sw - g.pw0 + kw * g.dw;
        col[t] = h >= 0 && h < g.H && w >= 0 && w < g.W ? x[(c * g.H + h) * g.W + w] : (T)0;
    }
}

/* dx [C, H, W] of one image from col [C*KH*KW, OH*OW]: each cell gathers
 * the columns it fed (deterministic). */
template <typename T> __global__ void k_col2im(T *dx, const T *col, fw_nn_conv_geom g)
{
    const int64_t S = g.OH * g.OW;
    CU_FOR(t, g.C * g.H * g.W) {
        int64_t w = t % g.W, h = (t / g.W) % g.H, c = t / (g.W * g.H);
        T s = 0;
        for (int64_t kh = 0; kh < g.KH; kh++) {
            int64_t th = h + g.ph0 - kh * g.dh;
            if (th < 0 || th % g.sh != 0 || th / g.sh >= g.OH)
                continue;
            for (int64_t kw = 0; kw < g.KW; kw++) {
                int64_t tw = w + g.pw0 - kw * g.dw;
                if (tw < 0 || tw % g.sw != 0 || tw / g.sw >= g.OW)
                    continue;
                s += col[((c * g.KH + kh) * g.KW + kw) * S + (th / g.sh) * g.OW + tw / g.sw];
            }
        }
        dx[t] = s;
    }
}

/* y [N, OC, S] += b[oc] */
template <typename T>
__global__ void k_conv_bias(T *y, const T *b, int64_t N, int64_t OC, int64_t S)
{
    CU_FOR(t, N * OC * S) y[t] += b[(t / S) % OC];
}

/* db[oc] = sum over n, s of dy[n, oc, s]; one block per oc */
template <typename T>
__global__ void k_conv_db(T *db, const T *dy, int64_t N, int64_t OC, int64_t S)
{
    for (int64_t oc = blockIdx.x; oc < OC; oc += gridDim.x) {
        double s = 0;
        for (int64_t t = threadIdx.x; t < N * S; t += blockDim.x)
            s += (double)dy[((t / S) * OC + oc) * S + t % S];
        s = nn_block_sum(s);
        if (threadIdx.x == 0)
            db[oc] = (T)s;
    }
}

template <typename T> __global__ void k_add(T *y, const T *x, int64_t n)
{
    CU_FOR(i, n) y[i] += x[i];
}

/* Per-group offsets base + g*step (host arrays for fw__cu_gemm_batched). */
static int64_t *nn_offsets(int64_t groups, int64_t step)
{
    int64_t *o = (int64_t *)malloc((size_t)groups * sizeof(int64_t));
    if (o != NULL)
        for (int64_t g = 0; g < groups; g++)
            o[g] = g * step;
    return o;
}

static int conv_fwd_im2col(fw_dtype dt, void *y, const void *x, const void *w,
                           const fw_nn_conv_geom *g)
{
    const char *entry = "conv2d";
    const int64_t S = g->OH * g->OW, G = g->groups, Cg = g->C / G, OCg = g->OC / G;
    const int64_t Kd = Cg * g->KH * g->KW;
    const size_t es = nn_es(dt);
    int64_t *a_off = NULL, *b_off = NULL;
    void *col = NULL;
    int rc = 0;

    NN_CHECK(entry);
    if (g->N == 0 || g->OC == 0 || S == 0)
        return 0;
    a_off = nn_offsets(G, OCg * Kd);
    b_off = nn_offsets(G, Kd * S);
    if (a_off == NULL || b_off == NULL) {
        rc = fw__cu_error_set(FW_ENOMEM, "%s: out of host memory", entry);
        goto out;
    }
    if ((rc = cu_scratch(&col, (size_t)(g->C * g->KH * g->KW * S) * es, entry)) < 0)
        goto out;
    for (int64_t n = 0; n < g->N && rc == 0; n++) {
        const char *xn = (const char *)x + (size_t)(n * g->C * g->H * g->W) * es;
        char *yn = (char *)y + (size_t)(n * g->OC * S) * es;
        if (dt == FW_FLOAT32)
            k_im2col<float><<<fw__cu_blocks(g->C * g->KH * g->KW * S), FW_CU_THREADS, 0,
                              fw__cu_stream()>>>((float *)col, (const float *)xn, *g);
        else
            k_im2col<double><<<fw__cu_blocks(g->C * g->KH * g->KW * S), FW_CU_THREADS, 0,
                               fw__cu_stream()>>>((double *)col, (const double *)xn, *g);
        if ((rc = cu_launched(entry)) < 0)
            break;
        /* y_g [OCg, S] = w_g [OCg, Kd] col_g [Kd, S] */
        rc = fw__cu_gemm_batched(dt, false, false, OCg, S, Kd, w, Kd, a_off, col, S, b_off, yn,
                                 S, OCg * S, G);
    }
out:
    cu_scratch_free(col);
    free(a_off);
    free(b_off);
    return rc;
}

static int cu_conv2d_fwd(fw_dtype dt, void *y, const void *x, const void *w, const void *b,
                         const fw_nn_conv_geom *g)
{
    const char *entry = "conv2d";
    const int64_t S = g->OH * g->OW;
    int rc;

    NN_CHECK(entry);
    if (g->N == 0 || g->OC == 0 || S == 0)
        return 0;
    rc = fw__cu_cudnn_conv_fwd(dt, y, x, w, g);
    if (rc == 1)
        rc = conv_fwd_im2col(dt, y, x, w, g);
    if (rc == 0 && b != NULL) {
        if (dt == FW_FLOAT32)
            k_conv_bias<float><<<fw__cu_blocks(g->N * g->OC * S), FW_CU_THREADS, 0,
                                 fw__cu_stream()>>>((float *)y, (const float *)b, g->N, g->OC, S);
        else
            k_conv_bias<double><<<fw__cu_blocks(g->N * g->OC * S), FW_CU_THREADS, 0,
                                  fw__cu_stream()>>>((double *)y, (const double *)b, g->N, g->OC,
                                                     S);
        rc = cu_launched(entry);
    }
    return rc;
}

/* dx, dw (each may be NULL) of conv2d by im2col + gemm. */
static int conv_bwd_im2col(fw_dtype dt, void *dx, void *dw, const void *x, const void *w,
                           const void *dy, const fw_nn_conv_geom *g)
{
    const char *entry = "conv2d backward";
    const int64_t S = g->OH * g->OW, G = g->groups, Cg = g->C / G, OCg = g->OC / G;
    const int64_t Kd = Cg * g->KH * g->KW, ncol = g->C * g->KH * g->KW * S;
    const int64_t nw = g->OC * Kd;
    const size_t es = nn_es(dt);
    int64_t *w_off = NULL, *col_off = NULL, *dy_off = NULL;
    void *col = NULL, *dwt = NULL;
    int rc = 0;

    if (dx != NULL && (rc = nn_zero(dx, (size_t)(g->N * g->C * g->H * g->W) * es, entry)) < 0)
        return rc;
    if (dw != NULL && (rc = nn_zero(dw, (size_t)nw * es, entry)) < 0)
        return rc;
    if ((dx == NULL && dw == NULL) || g->N == 0 || g->OC == 0 || S == 0)
        return 0;
    w_off = nn_offsets(G, OCg * Kd);
    col_off = nn_offsets(G, Kd * S);
    dy_off = nn_offsets(G, OCg * S);
    if (w_off == NULL || col_off == NULL || dy_off == NULL) {
        rc = fw__cu_error_set(FW_ENOMEM, "%s: out of host memory", entry);
        goto out;
    }
    if ((rc = cu_scratch(&col, (size_t)ncol * es, entry)) < 0)
        goto out;
    if (dw != NULL && g->N > 1 && (rc = cu_scratch(&dwt, (size_t)nw * es, entry)) < 0)
        goto out;
    for (int64_t n = 0; n < g->N && rc == 0; n++) {
        const char *dyn = (const char *)dy + (size_t)(n * g->OC * S) * es;
        if (dw != NULL) {
            const char *xn = (const char *)x + (size_t)(n * g->C * g->H * g->W) * es;
            void *dst = n == 0 ? dw : dwt;
            if (dt == FW_FLOAT32)
                k_im2col<float><<<fw__cu_blocks(ncol), FW_CU_THREADS, 0, fw__cu_stream()>>>(
                    (float *)col, (const float *)xn, *g);
            else
                k_im2col<double><<<fw__cu_blocks(ncol), FW_CU_THREADS, 0, fw__cu_stream()>>>(
                    (double *)col, (const double *)xn, *g);
            if ((rc = cu_launched(entry)) < 0)
                break;
            /* dw_g [OCg, Kd] = dy_g [OCg, S] col_g^T [S, Kd] */
            rc = fw__cu_gemm_batched(dt, false, true, OCg, Kd, S, dyn, S, dy_off, col, S,
                                     col_off, dst, Kd, OCg * Kd, G);
            if (rc < 0)
                break;
            if (n > 0) {
                if (dt == FW_FLOAT32)
                    k_add<float><<<fw__cu_blocks(nw), FW_CU_THREADS, 0, fw__cu_stream()>>>(
                        (float *)dw, (const float *)dwt, nw);
                else
                    k_add<double><<<fw__cu_blocks(nw), FW_CU_THREADS, 0, fw__cu_stream()>>>(
                        (double *)dw, (const double *)dwt, nw);
                if ((rc = cu_launched(entry)) < 0)
                    break;
            }
        }
        if (dx != NULL) {
            char *dxn = (char *)dx + (size_t)(n * g->C * g->H * g->W) * es;
            const int64_t nx = g->C * g->H * g->W;
            /* col_g [Kd, S] = w_g^T [Kd, OCg] dy_g [OCg, S] */
            rc = fw__cu_gemm_batched(dt, true, false, Kd, S, OCg, w, Kd, w_off, dyn, S, dy_off,
                                     col, S, Kd * S, G);
            if (rc < 0)
                break;
            if (dt == FW_FLOAT32)
                k_col2im<float><<<fw__cu_blocks(nx), FW_CU_THREADS, 0, fw__cu_stream()>>>(
                    (float *)dxn, (const float *)col, *g);
            else
                k_col2im<double><<<fw__cu_blocks(nx), FW_CU_THREADS, 0, fw__cu_stream()>>>(
                    (double *)dxn, (const double *)col, *g);
            rc = cu_launched(entry);
        }
    }
out:
    cu_scratch_free(col);
    cu_scratch_free(dwt);
    free(w_off);
    free(col_off);
    free(dy_off);
    return rc;
}

static int cu_conv2d_bwd(fw_dtype dt, void *dx, void *dw, void *db, const void *x,
                         const void *w, const void *dy, const fw_nn_conv_geom *g)
{
    const char *entry = "conv2d backward";
    const int64_t S = g->OH * g->OW;
    int rc = 0;

    NN_CHECK(entry);
    if (db != NULL) {
        if (g->N * S == 0)
            rc = nn_zero(db, (size_t)g->OC * nn_es(dt), entry);
        else
            NN_LAUNCH_BLOCKS(entry, k_conv_db, g->OC, (T *)db, (const T *)dy, g->N, g->OC, S);
        if (rc < 0)
            return rc;
    }
    if (g->N > 0 && g->OC > 0 && S > 0) {      /* cuDNN first where it takes the geometry */
        if (dx != NULL && (rc = fw__cu_cudnn_conv_bwd_data(dt, dx, w, dy, g)) <= 0) {
            if (rc < 0)
                return rc;
            dx = NULL;
        }
        if (dw != NULL && (rc = fw__cu_cudnn_conv_bwd_filter(dt, dw, x, dy, g)) <= 0) {
            if (rc < 0)
                return rc;
            dw = NULL;
        }
    }
    return conv_bwd_im2col(dt, dx, dw, x, w, dy, g);
}

/* ---- pooling ------------------------------------------------------------------ */

template <typename T>
__global__ void k_maxpool(T *y, int64_t *idx, const T *x, fw_nn_pool_geom g)
{
    CU_FOR(t, g.P * g.OH * g.OW) {
        int64_t ow = t % g.OW, r = t / g.OW, oh = r % g.OH, p = r / g.OH;
        int64_t hs = oh * g.sh - g.ph, he = hs + g.KH, ws = ow * g.sw - g.pw, we = ws + g.KW;
        const T *xp = x + p * g.H * g.W;
        T m = nn_lowest<T>();
        int64_t mi = -1;
        if (hs < 0)
            hs = 0;
        if (he > g.H)
            he = g.H;
        if (ws < 0)
            ws = 0;
        if (we > g.W)
            we = g.W;
        if (hs < he && ws < we) {
            m = xp[hs * g.W + ws];
            mi = hs * g.W + ws;
            for (int64_t h = hs; h < he; h++)
                for (int64_t w = ws; w < we; w++) {
                    T v = xp[h * g.W + w];
                    if (v > m || (v != v && m == m)) {
                        m = v;
                        mi = h * g.W + w;
                    }
                }
        }
        y[t] = m;
        idx[t] = mi;
    }
}

template <typename T>
__global__ void k_maxpool_bwd(T *dx, const int64_t *idx, const T *dy, fw_nn_pool_geom g)
{
    CU_FOR(t, g.P * g.OH * g.OW) {
        int64_t p = t / (g.OH * g.OW);
        if (idx[t] >= 0)
            atomicAdd(dx + p * g.H * g.W + idx[t], dy[t]);
    }
}

/* backward 0: y[t] = mean of the window of x; 1: dy[t]/cnt added to the
 * window of dx (zeroed before). */
template <typename T>
__global__ void k_avgpool(T *out, const T *in, fw_nn_pool_geom g, int backward)
{
    CU_FOR(t, g.P * g.OH * g.OW) {
        int64_t ow = t % g.OW, r = t / g.OW, oh = r % g.OH, p = r / g.OH;
        int64_t hs = oh * g.sh - g.ph, he = hs + g.KH, ws = ow * g.sw - g.pw, we = ws + g.KW;
        int64_t cnt;
        if (hs < 0)
            hs = 0;
        if (he > g.H)
            he = g.H;
        if (ws < 0)
            ws = 0;
        if (we > g.W)
            we = g.W;
        cnt = g.exclusive ? (he - hs) * (we - ws) : g.KH * g.KW;
        if (!backward) {
            const T *xp = in + p * g.H * g.W;
            T s = 0;
            for (int64_t h = hs; h < he; h++)
                for (int64_t w = ws; w < we; w++)
                    s += xp[h * g.W + w];
            out[t] = cnt > 0 ? s / (T)cnt : (T)0;
        } else if (cnt > 0) {
            T *dp = out + p * g.H * g.W;
            T v = in[t] / (T)cnt;
            for (int64_t h = hs; h < he; h++)
                for (int64_t w = ws; w < we; w++)
                    atomicAdd(dp + h * g.W + w, v);
        }
    }
}

template <typename T>
__global__ void k_adaptive_avgpool(T *out, const T *in, int64_t P, int64_t H, int64_t W,
                                   int64_t OH, int64_t OW, int backward)
{
    CU_FOR(t, P * OH * OW) {
        int64_t ow = t % OW, r = t / OW, oh = r % OH, p = r / OH;
        int64_t hs = oh * H / OH, he = ((oh + 1) * H + OH - 1) / OH;
        int64_t ws = ow * W / OW, we = ((ow + 1) * W + OW - 1) / OW;
        T cnt = (T)((he - hs) * (we - ws));
        if (!backward) {
            const T *xp = in + p * H * W;
            T s = 0;
            for (int64_t h = hs; h < he; h++)
                for (int64_t w = ws; w < we; w++)
                    s += xp[h * W + w];
            out[t] = s / cnt;
        } else {
            T *dp = out + p * H * W;
            T v = in[t] / cnt;
            for (int64_t h = hs; h < he; h++)
                for (int64_t w = ws; w < we; w++)
                    atomicAdd(dp + h * W + w, v);
        }
    }
}

static int cu_maxpool2d_fwd(fw_dtype dt, void *y, int64_t *idx, const void *x,
                            const fw_nn_pool_geom *g)
{
    NN_CHECK("max_pool2d");
    NN_LAUNCH("max_pool2d", k_maxpool, g->P * g->OH * g->OW, (T *)y, idx, (const T *)x, *g);
    return 0;
}

static int cu_maxpool2d_bwd(fw_dtype dt, void *dx, const int64_t *idx, const void *dy,
                            const fw_nn_pool_geom *g)
{
    int rc;
    NN_CHECK("max_pool2d backward");
    if ((rc = nn_zero(dx, (size_t)(g->P * g->H * g->W) * nn_es(dt), "max_pool2d backward")) < 0)
        return rc;
    NN_LAUNCH("max_pool2d backward", k_maxpool_bwd, g->P * g->OH * g->OW, (T *)dx, idx,
              (const T *)dy, *g);
    return 0;
}

static int cu_avgpool2d_fwd(fw_dtype dt, void *y, const void *x, const fw_nn_pool_geom *g)
{
    NN_CHECK("avg_pool2d");
    NN_LAUNCH("avg_pool2d", k_avgpool, g->P * g->OH * g->OW, (T *)y, (const T *)x, *g, 0);
    return 0;
}

static int cu_avgpool2d_bwd(fw_dtype dt, void *dx, const void *dy, const fw_nn_pool_geom *g)
{
    int rc;
    NN_CHECK("avg_pool2d backward");
    if ((rc = nn_zero(dx, (size_t)(g->P * g->H * g->W) * nn_es(dt), "avg_pool2d backward")) < 0)
        return rc;
    NN_LAUNCH("avg_pool2d backward", k_avgpool, g->P * g->OH * g->OW, (T *)dx, (const T *)dy,
              *g, 1);
    return 0;
}

static int cu_adaptive_avgpool2d_fwd(fw_dtype dt, void *y, const void *x, int64_t P,
                                     int64_t H, int64_t W, int64_t OH, int64_t OW)
{
    NN_CHECK("adaptive_avg_pool2d");
    NN_LAUNCH("adaptive_avg_pool2d", k_adaptive_avgpool, P * OH * OW, (T *)y, (const T *)x,
              P, H, W, OH, OW, 0);
    return 0;
}

static int cu_adaptive_avgpool2d_bwd(fw_dtype dt, void *dx, const void *dy, int64_t P,
                                     int64_t H, int64_t W, int64_t OH, int64_t OW)
{
    int rc;
    NN_CHECK("adaptive_avg_pool2d backward");
    if ((rc = nn_zero(dx, (size_t)(P * H * W) * nn_es(dt), "adaptive_avg_pool2d backward")) < 0)
        return rc;
    NN_LAUNCH("adaptive_avg_pool2d backward", k_adaptive_avgpool, P * OH * OW, (T *)dx,
              (const T *)dy, P, H, W, OH, OW, 1);
    return 0;
}

/* ---- batch norm: one block per channel ----------------------------------------- */

template <typename T>
__global__ void k_bn_train(T *y, T *save_mean, T *save_invstd, T *run_mean, T *run_var,
                           const T *x, const T *w, const T *b, int64_t N, int64_t C, int64_t L,
                           double momentum, double eps)
{
    const int64_t M = N * L;
    for (int64_t c = blockIdx.x; c < C; c += gridDim.x) {
        double s = 0, ss = 0, mean, var, invstd, wc, bc;
        for (int64_t t = threadIdx.x; t < M; t += blockDim.x)
            s += (double)x[((t / L) * C + c) * L + t % L];
        s = nn_block_sum(s);
        mean = M > 0 ? s / (double)M : 0;
        for (int64_t t = threadIdx.x; t < M; t += blockDim.x) {
            double d = (double)x[((t / L) * C + c) * L + t % L] - mean;
            ss += d * d;
        }
        ss = nn_block_sum(ss);
        var = M > 0 ? ss / (double)M : 0;
        invstd = 1.0 / sqrt(var + eps);
        wc = w != NULL ? (double)w[c] : 1.0;
        bc = b != NULL ? (double)b[c] : 0.0;
        T a = (T)(invstd * wc), sh = (T)(bc - mean * invstd * wc);
        for (int64_t t = threadIdx.x; t < M; t += blockDim.x) {
            int64_t at = ((t / L) * C + c) * L + t % L;
            y[at] = x[at] * a + sh;
        }
        if (threadIdx.x == 0) {
            if (save_mean != NULL)
                save_mean[c] = (T)mean;
            if (save_invstd != NULL)
                save_invstd[c] = (T)invstd;
            if (run_mean != NULL)
                run_mean[c] = (T)(momentum * (double)run_mean[c] + (1 - momentum) * mean);
            if (run_var != NULL) {
                double unbiased = M > 1 ? ss / (double)(M - 1) : var;
                run_var[c] = (T)(momentum * (double)run_var[c] + (1 - momentum) * unbiased);
            }
        }
    }
}

template <typename T>
__global__ void k_bn_infer(T *y, T *save_invstd, const T *x, const T *mean, const T *var,
                           const T *w, const T *b, int64_t N, int64_t C, int64_t L, double eps)
{
    CU_FOR(t, N * C * L) {
        int64_t c = (t / L) % C;
        double invstd = 1.0 / sqrt((double)var[c] + eps);
        double wc = w != NULL ? (double)w[c] : 1.0, bc = b != NULL ? (double)b[c] : 0.0;
        T a = (T)(invstd * wc), sh = (T)(bc - (double)mean[c] * invstd * wc);
        y[t] = x[t] * a + sh;
    }
}

template <typename T>
__global__ void k_bn_invstd(T *save_invstd, const T *var, int64_t C, double eps)
{
    CU_FOR(c, C) save_invstd[c] = (T)(1.0 / sqrt((double)var[c] + eps));
}

template <typename T>
__global__ void k_bn_bwd(T *dx, T *dw, T *db, const T *x, const T *dy, const T *mean,
                         const T *invstd, const T *w, int64_t N, int64_t C, int64_t L,
                         int training)
{
    const int64_t M = N * L;
    for (int64_t c = blockIdx.x; c < C; c += gridDim.x) {
        double mu = (double)mean[c], is = (double)invstd[c];
        double sdy = 0, sdyx = 0, wc = w != NULL ? (double)w[c] : 1.0;
        for (int64_t t = threadIdx.x; t < M; t += blockDim.x) {
            int64_t at = ((t / L) * C + c) * L + t % L;
            sdy += (double)dy[at];
            sdyx += (double)dy[at] * ((double)x[at] - mu);
        }
        sdy = nn_block_sum(sdy);
        sdyx = nn_block_sum(sdyx);
        if (threadIdx.x == 0) {
            if (db != NULL)
                db[c] = (T)sdy;
            if (dw != NULL)
                dw[c] = (T)(sdyx * is);
        }
        if (dx == NULL)
            continue;
        if (training && M > 0) {
            double a = wc * is, mdy = sdy / (double)M, mdyx = sdyx * is * is / (double)M;
            for (int64_t t = threadIdx.x; t < M; t += blockDim.x) {
                int64_t at = ((t / L) * C + c) * L + t % L;
                dx[at] = (T)(a * ((double)dy[at] - mdy - ((double)x[at] - mu) * mdyx));
            }
        } else {
            T a = (T)(wc * is);
            for (int64_t t = threadIdx.x; t < M; t += blockDim.x) {
                int64_t at = ((t / L) * C + c) * L + t % L;
                dx[at] = dy[at] * a;
            }
        }
    }
}

static int cu_batch_norm_train_fwd(fw_dtype dt, void *y, void *save_mean, void *save_invstd,
                                   void *run_mean, void *run_var, const void *x, const void *w,
                                   const void *b, int64_t N, int64_t C, int64_t L,
                                   double momentum, double eps)
{
    NN_CHECK("batch_norm");
    NN_LAUNCH_BLOCKS("batch_norm", k_bn_train, C, (T *)y, (T *)save_mean, (T *)save_invstd,
                     (T *)run_mean, (T *)run_var, (const T *)x, (const T *)w, (const T *)b, N,
                     C, L, momentum, eps);
    return 0;
}

static int cu_batch_norm_infer_fwd(fw_dtype dt, void *y, void *save_invstd, const void *x,
                                   const void *mean, const void *var, const void *w,
                                   const void *b, int64_t N, int64_t C, int64_t L, double eps)
{
    NN_CHECK("batch_norm");
    NN_LAUNCH("batch_norm", k_bn_infer, N * C * L, (T *)y, (T *)save_invstd, (const T *)x,
              (const T *)mean, (const T *)var, (const T *)w, (const T *)b, N, C, L, eps);
    if (save_invstd != NULL)
        NN_LAUNCH("batch_norm", k_bn_invstd, C, (T *)save_invstd, (const T *)var, C, eps);
    return 0;
}

static int cu_batch_norm_bwd(fw_dtype dt, void *dx, void *dw, void *db, const void *x,
                             const void *dy, const void *mean, const void *invstd,
                             const void *w, int64_t N, int64_t C, int64_t L, int training)
{
    NN_CHECK("batch_norm backward");
    NN_LAUNCH_BLOCKS("batch_norm backward", k_bn_bwd, C, (T *)dx, (T *)dw, (T *)db,
                     (const T *)x, (const T *)dy, (const T *)mean, (const T *)invstd,
                     (const T *)w, N, C, L, training);
    return 0;
}

/* ---- layer norm: one block per row; dw, db one thread per column ------------- */

template <typename T>
__global__ void k_ln_fwd(T *y, T *mean, T *rstd, const T *x, const T *w, const T *b, int64_t M,
                         int64_t D, double eps)
{
    for (int64_t i = blockIdx.x; i < M; i += gridDim.x) {
        const T *xr = x + i * D;
        T *yr = y + i * D;
        double s = 0, ss = 0, mu, r;
        for (int64_t j = threadIdx.x; j < D; j += blockDim.x)
            s += (double)xr[j];
        s = nn_block_sum(s);
        mu = D > 0 ? s / (double)D : 0;
        for (int64_t j = threadIdx.x; j < D; j += blockDim.x) {
            double d = (double)xr[j] - mu;
            ss += d * d;
        }
        ss = nn_block_sum(ss);
        r = 1.0 / sqrt((D > 0 ? ss / (double)D : 0) + eps);
        for (int64_t j = threadIdx.x; j < D; j += blockDim.x) {
            T v = (T)(((double)xr[j] - mu) * r);
            if (w != NULL)
                v *= w[j];
            if (b != NULL)
                v += b[j];
            yr[j] = v;
        }
        if (threadIdx.x == 0) {
            if (mean != NULL)
                mean[i] = (T)mu;
            if (rstd != NULL)
                rstd[i] = (T)r;
        }
    }
}

template <typename T>
__global__ void k_ln_bwd_dx(T *dx, const T *x, const T *dy, const T *mean, const T *rstd,
                            const T *w, int64_t M, int64_t D)
{
    for (int64_t i = blockIdx.x; i < M; i += gridDim.x) {
        const T *xr = x + i * D, *dyr = dy + i * D;
        T *dxr = dx + i * D;
        double mu = (double)mean[i], r = (double)rstd[i], sg = 0, sgx = 0;
        for (int64_t j = threadIdx.x; j < D; j += blockDim.x) {
            double xh = ((double)xr[j] - mu) * r;
            double gj = (double)dyr[j] * (w != NULL ? (double)w[j] : 1.0);
            sg += gj;
            sgx += gj * xh;
        }
        sg = nn_block_sum(sg);
        sgx = nn_block_sum(sgx);
        double msg = sg / (double)D, msgx = sgx / (double)D;
        for (int64_t j = threadIdx.x; j < D; j += blockDim.x) {
            double xh = ((double)xr[j] - mu) * r;
            double gj = (double)dyr[j] * (w != NULL ? (double)w[j] : 1.0);
            dxr[j] = (T)(r * (gj - msg - xh * msgx));
        }
    }
}

template <typename T>
__global__ void k_ln_bwd_dwdb(T *dw, T *db, const T *x, const T *dy, const T *mean,
                              const T *rstd, int64_t M, int64_t D)
{
    CU_FOR(j, D) {
        double sw = 0, sb = 0;
        for (int64_t i = 0; i < M; i++) {
            double g = (double)dy[i * D + j];
            sw += g * ((double)x[i * D + j] - (double)mean[i]) * (double)rstd[i];
            sb += g;
        }
        if (dw != NULL)
            dw[j] = (T)sw;
        if (db != NULL)
            db[j] = (T)sb;
    }
}

static int cu_layer_norm_fwd(fw_dtype dt, void *y, void *mean, void *rstd, const void *x,
                             const void *w, const void *b, int64_t M, int64_t D, double eps)
{
    NN_CHECK("layer_norm");
    NN_LAUNCH_BLOCKS("layer_norm", k_ln_fwd, M, (T *)y, (T *)mean, (T *)rstd, (const T *)x,
                     (const T *)w, (const T *)b, M, D, eps);
    return 0;
}

static int cu_layer_norm_bwd(fw_dtype dt, void *dx, void *dw, void *db, const void *x,
                             const void *dy, const void *mean, const void *rstd,
                             const void *w, int64_t M, int64_t D)
{
    NN_CHECK("layer_norm backward");
    if (dx != NULL && D > 0)
        NN_LAUNCH_BLOCKS("layer_norm backward", k_ln_bwd_dx, M, (T *)dx, (const T *)x,
                         (const T *)dy, (const T *)mean, (const T *)rstd, (const T *)w, M, D);
    if (dw != NULL || db != NULL)
        NN_LAUNCH("layer_norm backward", k_ln_bwd_dwdb, D, (T *)dw, (T *)db, (const T *)x,
                  (const T *)dy, (const T *)mean, (const T *)rstd, M, D);
    return 0;
}

/* ---- dropout, embedding ------------------------------------------------------- */

template <typename T>
__global__ void k_dropout(T *y, const T *x, const uint8_t *mask, int64_t n, T s)
{
    CU_FOR(i, n) y[i] = mask[i] ? x[i] * s : (T)0;
}

static int cu_dropout_apply(fw_dtype dt, void *y, const void *x, const uint8_t *mask,
                            int64_t n, double scale)
{
    NN_CHECK("dropout");
    NN_LAUNCH("dropout", k_dropout, n, (T *)y, (const T *)x, mask, n, (T)scale);
    return 0;
}

template <typename T>
__global__ void k_embedding(T *y, const T *w, const int64_t *ids, int64_t n, int64_t D,
                            int64_t padding_idx)
{
    CU_FOR(t, n * D) {
        int64_t i = t / D, j = t - i * D, id = ids[i];
        y[t] = padding_idx >= 0 && id == padding_idx ? (T)0 : w[id * D + j];
    }
}

template <typename T>
__global__ void k_embedding_bwd(T *dw, const T *dy, const int64_t *ids, int64_t n, int64_t D,
                                int64_t padding_idx)
{
    CU_FOR(t, n * D) {
        int64_t i = t / D, j = t - i * D, id = ids[i];
        if (padding_idx < 0 || id != padding_idx)
            atomicAdd(dw + id * D + j, dy[t]);
    }
}

static int cu_embedding_fwd(fw_dtype dt, void *y, const void *w, const int64_t *ids, int64_t n,
                            int64_t D, int64_t padding_idx)
{
    NN_CHECK("embedding");
    NN_LAUNCH("embedding", k_embedding, n * D, (T *)y, (const T *)w, ids, n, D, padding_idx);
    return 0;
}

static int cu_embedding_bwd(fw_dtype dt, void *dw, const void *dy, const int64_t *ids,
                            int64_t n, int64_t V, int64_t D, int64_t padding_idx)
{
    int rc;
    NN_CHECK("embedding backward");
    if ((rc = nn_zero(dw, (size_t)(V * D) * nn_es(dt), "embedding backward")) < 0)
        return rc;
    NN_LAUNCH("embedding backward", k_embedding_bwd, n * D, (T *)dw, (const T *)dy, ids, n, D,
              padding_idx);
    return 0;
}

/* ---- cross entropy, nll ------------------------------------------------------- */

/* -log(p), with Paddle's 1e20 for an infinite result */
template <typename T> __device__ __forceinline__ T nn_neg_log(T p)
{
    T v = -nn_log(p);
    return isinf(v) ? (T)(v > 0 ? 1e20 : -1e20) : v;
}

template <typename T>
__global__ void k_ce_hard(T *loss, const T *lsm, const T *x, const int64_t *label, const T *w,
                          int64_t outer, int64_t C, int64_t inner, int64_t ignore_index,
                          int use_softmax)
{
    CU_FOR(s, outer * inner) {
        int64_t o = s / inner, i = s - o * inner, y = label[s];
        if (y == ignore_index) {
            loss[s] = 0;
            continue;
        }
        int64_t at = (o * C + y) * inner + i;
        T l = use_softmax ? -lsm[at] : nn_neg_log(x[at]);
        loss[s] = w != NULL ? l * w[y] : l;
    }
}

template <typename T>
__global__ void k_ce_hard_bwd(T *dx, const T *lsm, const T *x, const int64_t *label, const T *w,
                              const T *g, int64_t outer, int64_t C, int64_t inner,
                              int64_t ignore_index, int use_softmax)
{
    CU_FOR(s, outer * inner) {
        int64_t o = s / inner, i = s - o * inner, y = label[s];
        T gs = g[s];
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
                dx[at] = gs * (nn_exp(lsm[at]) - (c == y ? (T)1 : (T)0));
            }
        } else {
            for (int64_t c = 0; c < C; c++)
                dx[(o * C + c) * inner + i] = 0;
            dx[(o * C + y) * inner + i] = -gs / x[(o * C + y) * inner + i];
        }
    }
}

template <typename T>
__device__ T nn_soft_weight(const T *lab, const T *w, int64_t o, int64_t i, int64_t C,
                            int64_t inner)
{
    T wg = 0;
    if (w == NULL)
        return 1;
    for (int64_t c = 0; c < C; c++)
        wg += lab[(o * C + c) * inner + i] * w[c];
    return wg;
}

template <typename T>
__global__ void k_ce_soft(T *loss, const T *lsm, const T *x, const T *lab, const T *w,
                          int64_t outer, int64_t C, int64_t inner, int use_softmax)
{
    CU_FOR(s, outer * inner) {
        int64_t o = s / inner, i = s - o * inner;
        T acc = 0;
        for (int64_t c = 0; c < C; c++) {
            int64_t at = (o * C + c) * inner + i;
            T lp = use_softmax ? lsm[at] : -nn_neg_log(x[at]);
            acc += lab[at] * lp;
        }
        loss[s] = -acc * nn_soft_weight(lab, w, o, i, C, inner);
    }
}

template <typename T>
__global__ void k_ce_soft_bwd(T *dx, const T *lsm, const T *x, const T *lab, const T *w,
                              const T *g, int64_t outer, int64_t C, int64_t inner,
                              int use_softmax)
{
    CU_FOR(s, outer * inner) {
        int64_t o = s / inner, i = s - o * inner;
        T gs = g[s] * nn_soft_weight(lab, w, o, i, C, inner);
        T ls = 0;
        for (int64_t c = 0; c < C; c++)
            ls += lab[(o * C + c) * inner + i];
        for (int64_t c = 0; c < C; c++) {
            int64_t at = (o * C + c) * inner + i;
            if (use_softmax)
                dx[at] = gs * (nn_exp(lsm[at]) * ls - lab[at]);
            else
                dx[at] = -gs * lab[at] / x[at];
        }
    }
}

template <typename T>
__global__ void k_nll(T *loss, const T *x, const int64_t *label, const T *w, int64_t outer,
                      int64_t C, int64_t inner, int64_t ignore_index)
{
    CU_FOR(s, outer * inner) {
        int64_t o = s / inner, i = s - o * inner, y = label[s];
        loss[s] = y == ignore_index ? (T)0
                                    : -x[(o * C + y) * inner + i] * (w != NULL ? w[y] : (T)1);
    }
}

template <typename T>
__global__ void k_nll_bwd(T *dx, const int64_t *label, const T *w, const T *g, int64_t outer,
                          int64_t C, int64_t inner, int64_t ignore_index)
{
    CU_FOR(s, outer * inner) {
        int64_t o = s / inner, i = s - o * inner, y = label[s];
        for (int64_t c = 0; c < C; c++)
            dx[(o * C + c) * inner + i] = 0;
        if (y != ignore_index)
            dx[(o * C + y) * inner + i] = -g[s] * (w != NULL ? w[y] : (T)1);
    }
}

static int cu_ce_hard_fwd(fw_dtype dt, void *loss, void *lsm, const void *x,
                          const int64_t *label, const void *w, int64_t outer, int64_t C,
                          int64_t inner, int64_t ignore_index, int use_softmax)
{
    int rc;
    NN_CHECK("cross_entropy");
    if (use_softmax && (rc = cu_softmax_any(dt, lsm, x, outer, C, inner, 1, "cross_entropy")) < 0)
        return rc;
    NN_LAUNCH("cross_entropy", k_ce_hard, outer * inner, (T *)loss, (const T *)lsm,
              (const T *)x, label, (const T *)w, outer, C, inner, ignore_index, use_softmax);
    return 0;
}

static int cu_ce_hard_bwd(fw_dtype dt, void *dx, const void *lsm, const void *x,
                          const int64_t *label, const void *w, const void *g, int64_t outer,
                          int64_t C, int64_t inner, int64_t ignore_index, int use_softmax)
{
    NN_CHECK("cross_entropy backward");
    NN_LAUNCH("cross_entropy backward", k_ce_hard_bwd, outer * inner, (T *)dx, (const T *)lsm,
              (const T *)x, label, (const T *)w, (const T *)g, outer, C, inner, ignore_index,
              use_softmax);
    return 0;
}

static int cu_ce_soft_fwd(fw_dtype dt, void *loss, void *lsm, const void *x, const void *lab,
                          const void *w, int64_t outer, int64_t C, int64_t inner,
                          int use_softmax)
{
    int rc;
    NN_CHECK("cross_entropy");
    if (use_softmax && (rc = cu_softmax_any(dt, lsm, x, outer, C, inner, 1, "cross_entropy")) < 0)
        return rc;
    NN_LAUNCH("cross_entropy", k_ce_soft, outer * inner, (T *)loss, (const T *)lsm,
              (const T *)x, (const T *)lab, (const T *)w, outer, C, inner, use_softmax);
    return 0;
}

static int cu_ce_soft_bwd(fw_dtype dt, void *dx, const void *lsm, const void *x,
                          const void *lab, const void *w, const void *g, int64_t outer,
                          int64_t C, int64_t inner, int use_softmax)
{
    NN_CHECK("cross_entropy backward");
    NN_LAUNCH("cross_entropy backward", k_ce_soft_bwd, outer * inner, (T *)dx, (const T *)lsm,
              (const T *)x, (const T *)lab, (const T *)w, (const T *)g, outer, C, inner,
              use_softmax);
    return 0;
}

static int cu_nll_fwd(fw_dtype dt, void *loss, const void *x, const int64_t *label,
                      const void *w, int64_t outer, int64_t C, int64_t inner,
                      int64_t ignore_index)
{
    NN_CHECK("nll_loss");
    NN_LAUNCH("nll_loss", k_nll, outer * inner, (T *)loss, (const T *)x, label, (const T *)w,
              outer, C, inner, ignore_index);
    return 0;
}

static int cu_nll_bwd(fw_dtype dt, void *dx, const int64_t *label, const void *w, const void *g,
                      int64_t outer, int64_t C, int64_t inner, int64_t ignore_index)
{
    NN_CHECK("nll_loss backward");
    NN_LAUNCH("nll_loss backward", k_nll_bwd, outer * inner, (T *)dx, label, (const T *)w,
              (const T *)g, outer, C, inner, ignore_index);
    return 0;
}

/* ---- pointwise losses --------------------------------------------------------- */

template <typename T> __device__ __forceinline__ T nn_clamped_log(T v)
{
    T l = nn_log(v);
    return l < (T)-100 ? (T)-100 : l;
}

/* softplus(-x) = log(1 + exp(-|x|)) + max(-x, 0) */
template <typename T> __device__ __forceinline__ T nn_softplus_neg(T x)
{
    return nn_log1p(nn_exp(-nn_fabs(x))) + (x < 0 ? -x : (T)0);
}

template <typename T>
__global__ void k_pw_loss(T *loss, int kind, const T *x, const T *y, const T *w, const T *pw,
                          int64_t n)
{
    CU_FOR(i, n) {
        T l, d = x[i] - y[i];
        switch (kind) {
        case FW_NN_LOSS_MSE:
            l = d * d;
            break;
        case FW_NN_LOSS_L1:
            l = nn_fabs(d);
            break;
        case FW_NN_LOSS_BCE:
            l = -(y[i] * nn_clamped_log(x[i]) + (1 - y[i]) * nn_clamped_log(1 - x[i]));
            break;
        default: {
            T lw = pw != NULL ? (pw[i] - 1) * y[i] + 1 : (T)1;
            l = (1 - y[i]) * x[i] + lw * nn_softplus_neg(x[i]);
            break;
        }
        }
        loss[i] = w != NULL ? l * w[i] : l;
    }
}

template <typename T>
__global__ void k_pw_loss_bwd(T *dx, T *dy, int kind, const T *x, const T *y, const T *w,
                              const T *pw, const T *g, int64_t g_stride, int64_t n)
{
    CU_FOR(i, n) {
        T gi = g[i * g_stride], gx, gy;
        T d = x[i] - y[i];
        if (w != NULL)
            gi *= w[i];
        switch (kind) {
        case FW_NN_LOSS_MSE:
            gx = 2 * d;
            gy = -gx;
            break;
        case FW_NN_LOSS_L1:
            gx = (T)((d > 0) - (d < 0));
            gy = -gx;
            break;
        case FW_NN_LOSS_BCE: {
            T den = (1 - x[i]) * x[i];
            gx = d / (den > (T)1e-12 ? den : (T)1e-12);
            gy = nn_clamped_log(1 - x[i]) - nn_clamped_log(x[i]);
            break;
        }
        default: {
            T p = pw != NULL ? pw[i] : (T)1;
            T lw = (p - 1) * y[i] + 1;
            T sig = 1 / (1 + nn_exp(-x[i]));
            gx = (1 - y[i]) + lw * (sig - 1);
            gy = -x[i] + (p - 1) * nn_softplus_neg(x[i]);
            break;
        }
        }
        if (dx != NULL)
            dx[i] = gi * gx;
        if (dy != NULL)
            dy[i] = gi * gy;
    }
}

static int cu_pointwise_loss_fwd(fw_dtype dt, void *loss, fw_nn_loss_kind kind, const void *x,
                                 const void *y, const void *w, const void *pw, int64_t n)
{
    NN_CHECK("loss");
    NN_LAUNCH("loss", k_pw_loss, n, (T *)loss, (int)kind, (const T *)x, (const T *)y,
              (const T *)w, (const T *)pw, n);
    return 0;
}

static int cu_pointwise_loss_bwd(fw_dtype dt, void *dx, void *dy, fw_nn_loss_kind kind,
                                 const void *x, const void *y, const void *w, const void *pw,
                                 const void *g, int64_t g_stride, int64_t n)
{
    NN_CHECK("loss backward");
    NN_LAUNCH("loss backward", k_pw_loss_bwd, n, (T *)dx, (T *)dy, (int)kind, (const T *)x,
              (const T *)y, (const T *)w, (const T *)pw, (const T *)g, g_stride, n);
    return 0;
}

/* ---- recurrent cells ---------------------------------------------------------- */

template <typename T> __device__ __forceinline__ T nn_sig(T v) { return 1 / (1 + nn_exp(-v)); }

template <typename T>
__global__ void k_lstm(T *h, T *c, T *act, const T *G, const T *c_prev, int64_t B, int64_t H)
{
    CU_FOR(k, B * H) {
        int64_t b = k / H, j = k - b * H;
        const T *gr = G + b * 4 * H;
        T *ar = act + b * 4 * H;
        T i = nn_sig(gr[j]), f = nn_sig(gr[H + j]);
        T g = nn_tanh(gr[2 * H + j]), o = nn_sig(gr[3 * H + j]);
        T cn = f * c_prev[k] + i * g;
        ar[j] = i;
        ar[H + j] = f;
        ar[2 * H + j] = g;
        ar[3 * H + j] = o;
        c[k] = cn;
        h[k] = o * nn_tanh(cn);
    }
}

template <typename T>
__global__ void k_lstm_bwd(T *dG, T *dc_prev, const T *act, const T *c, const T *c_prev,
                           const T *dh, const T *dc, int64_t B, int64_t H)
{
    CU_FOR(k, B * H) {
        int64_t b = k / H, j = k - b * H;
        const T *ar = act + b * 4 * H;
        T i = ar[j], f = ar[H + j], g = ar[2 * H + j], o = ar[3 * H + j];
        T tc = nn_tanh(c[k]);
        T gh = dh != NULL ? dh[k] : (T)0;
        T gc = (dc != NULL ? dc[k] : (T)0) + gh * o * (1 - tc * tc);
        if (dG != NULL) {
            T *dr = dG + b * 4 * H;
            dr[j] = gc * g * i * (1 - i);
            dr[H + j] = gc * c_prev[k] * f * (1 - f);
            dr[2 * H + j] = gc * i * (1 - g * g);
            dr[3 * H + j] = gh * tc * o * (1 - o);
        }
        if (dc_prev != NULL)
            dc_prev[k] = gc * f;
    }
}

template <typename T>
__global__ void k_gru(T *h, T *act, const T *xg, const T *hg, const T *h_prev, int64_t B,
                      int64_t H)
{
    CU_FOR(k, B * H) {
        int64_t b = k / H, j = k - b * H;
        const T *xr = xg + b * 3 * H, *hr = hg + b * 3 * H;
        T *ar = act + b * 3 * H;
        T r = nn_sig(xr[j] + hr[j]);
        T z = nn_sig(xr[H + j] + hr[H + j]);
        T cc = nn_tanh(xr[2 * H + j] + r * hr[2 * H + j]);
        ar[j] = r;
        ar[H + j] = z;
        ar[2 * H + j] = cc;
        h[k] = z * h_prev[k] + (1 - z) * cc;
    }
}

template <typename T>
__global__ void k_gru_bwd(T *dxg, T *dhg, T *dh_prev, const T *act, const T *hg,
                          const T *h_prev, const T *dh, int64_t B, int64_t H)
{
    CU_FOR(k, B * H) {
        int64_t b = k / H, j = k - b * H;
        const T *ar = act + b * 3 * H, *hr = hg + b * 3 * H;
        T r = ar[j], z = ar[H + j], cc = ar[2 * H + j], g = dh[k];
        T dpc = g * (1 - z) * (1 - cc * cc);
        T dpz = g * (h_prev[k] - cc) * z * (1 - z);
        T dpr = dpc * hr[2 * H + j] * r * (1 - r);
        if (dxg != NULL) {
            dxg[b * 3 * H + j] = dpr;
            dxg[b * 3 * H + H + j] = dpz;
            dxg[b * 3 * H + 2 * H + j] = dpc;
        }
        if (dhg != NULL) {
            dhg[b * 3 * H + j] = dpr;
            dhg[b * 3 * H + H + j] = dpz;
            dhg[b * 3 * H + 2 * H + j] = dpc * r;
        }
        if (dh_prev != NULL)
            dh_prev[k] = g * z;
    }
}

static int cu_lstm_gates_fwd(fw_dtype dt, void *h, void *c, void *act, const void *G,
                             const void *c_prev, int64_t B, int64_t H)
{
    NN_CHECK("lstm");
    NN_LAUNCH("lstm", k_lstm, B * H, (T *)h, (T *)c, (T *)act, (const T *)G,
              (const T *)c_prev, B, H);
    return 0;
}

static int cu_lstm_gates_bwd(fw_dtype dt, void *dG, void *dc_prev, const void *act,
                             const void *c, const void *c_prev, const void *dh, const void *dc,
                             int64_t B, int64_t H)
{
    NN_CHECK("lstm backward");
    NN_LAUNCH("lstm backward", k_lstm_bwd, B * H, (T *)dG, (T *)dc_prev, (const T *)act,
              (const T *)c, (const T *)c_prev, (const T *)dh, (const T *)dc, B, H);
    return 0;
}

static int cu_gru_gates_fwd(fw_dtype dt, void *h, void *act, const void *xg, const void *hg,
                            const void *h_prev, int64_t B, int64_t H)
{
    NN_CHECK("gru");
    NN_LAUNCH("gru", k_gru, B * H, (T *)h, (T *)act, (const T *)xg, (const T *)hg,
              (const T *)h_prev, B, H);
    return 0;
}

static int cu_gru_gates_bwd(fw_dtype dt, void *dxg, void *dhg, void *dh_prev, const void *act,
                            const void *hg, const void *h_prev, const void *dh, int64_t B,
                            int64_t H)
{
    NN_CHECK("gru backward");
    NN_LAUNCH("gru backward", k_gru_bwd, B * H, (T *)dxg, (T *)dhg, (T *)dh_prev,
              (const T *)act, (const T *)hg, (const T *)h_prev, (const T *)dh, B, H);
    return 0;
}

/* ---- the table (field order of struct fw_nn_kernels) ---------------------------- */

extern "C" const struct fw_nn_kernels fw__cu_nn_kernels = {
    (1u << FW_FLOAT32) | (1u << FW_FLOAT64),
    cu_softmax_fwd,
    cu_log_softmax_fwd,
    cu_softmax_bwd,
    cu_log_softmax_bwd,
    cu_linear_fwd,
    cu_linear_bwd,
    cu_conv2d_fwd,
    cu_conv2d_bwd,
    cu_maxpool2d_fwd,
    cu_maxpool2d_bwd,
    cu_avgpool2d_fwd,
    cu_avgpool2d_bwd,
    cu_adaptive_avgpool2d_fwd,
    cu_adaptive_avgpool2d_bwd,
    cu_batch_norm_train_fwd,
    cu_batch_norm_infer_fwd,
    cu_batch_norm_bwd,
    cu_layer_norm_fwd,
    cu_layer_norm_bwd,
    cu_dropout_apply,
    cu_embedding_fwd,
    cu_embedding_bwd,
    cu_ce_hard_fwd,
    cu_ce_hard_bwd,
    cu_ce_soft_fwd,
    cu_ce_soft_bwd,
    cu_nll_fwd,
    cu_nll_bwd,
    cu_pointwise_loss_fwd,
    cu_pointwise_loss_bwd,
    cu_lstm_gates_fwd,
    cu_lstm_gates_bwd,
    cu_gru_gates_fwd,
    cu_gru_gates_bwd,
};
