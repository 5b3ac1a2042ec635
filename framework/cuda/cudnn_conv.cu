/*
 * cudnn_conv.cu - conv2d on cuDNN's legacy convolution API (cuDNN 9), the
 * first choice of nn.cu's conv2d entries when the plugin is built with
 * cuDNN (EDDY_HAVE_CUDNN). Each entry returns 0 (done), 1 (declined: the
 * caller runs its im2col + gemm path) or a negative FW_E* after an error.
 *
 * Declined: a build without cuDNN, asymmetric padding (cuDNN pads both
 * sides alike; the fallback handles it exactly), sizes beyond int, a
 * geometry whose cuDNN output size differs from the op's, or any cuDNN
 * status other than success while setting up or running (no algorithm,
 * unsupported configuration). float32 runs without TF32 (CUDNN_FMA_MATH,
 * tensor-op candidates skipped) unless EDDY_CUDA_ALLOW_TF32=1, as blas.c.
 * Algorithms come from cuDNN's heuristics (the _v7 queries): the first one
 * that succeeds and whose workspace the device can give (stream-ordered
 * scratch).
 */
#include "cu_kern.cuh"
#include "cu_nn.h"
#include "cu_runtime.h"

#ifdef EDDY_HAVE_CUDNN

#include <cudnn.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static pthread_mutex_t dnn_lock = PTHREAD_MUTEX_INITIALIZER;
static cudnnHandle_t dnn_handles[FW_CU_MAX_DEVICES];
static int dnn_failed[FW_CU_MAX_DEVICES];

/* The cuDNN handle of the current device on its compute stream, or NULL
 * (cuDNN unusable here: declined for good on this device). */
static cudnnHandle_t dnn_handle(void)
{
    int d = fw__cu_device();
    cudnnHandle_t h = NULL;

    if (d < 0 || d >= FW_CU_MAX_DEVICES)
        return NULL;
    pthread_mutex_lock(&dnn_lock);
    if (dnn_handles[d] == NULL && !dnn_failed[d]) {
        if (cudnnCreate(&h) == CUDNN_STATUS_SUCCESS)
            dnn_handles[d] = h;
        else
            dnn_failed[d] = 1;
    }
    h = dnn_handles[d];
    pthread_mutex_unlock(&dnn_lock);
    if (h != NULL && cudnnSetStream(h, fw__cu_stream()) != CUDNN_STATUS_SUCCESS)
        return NULL;
    return h;
}

struct dnn_conv {
    cudnnHandle_t h;
    cudnnTensorDescriptor_t x, y;
    cudnnFilterDescriptor_t w;
    cudnnConvolutionDescriptor_t conv;
};

static void dnn_conv_done(struct dnn_conv *c)
{
    if (c->x != NULL)
        cudnnDestroyTensorDescriptor(c->x);
    if (c->y != NULL)
        cudnnDestroyTensorDescriptor(c->y);
    if (c->w != NULL)
        cudnnDestroyFilterDescriptor(c->w);
    if (c->conv != NULL)
        cudnnDestroyConvolutionDescriptor(c->conv);
}

/* Whether float32 must stay in full precision (no TF32). */
static bool dnn_fma_only(fw_dtype dt)
{
    const char *tf32 = getenv("EDDY_CUDA_ALLOW_TF32");
    return dt == FW_FLOAT32 && !(tf32 && strcmp(tf32, "1") == 0);
}

static bool fits_int(int64_t v) { return v >= 0 && v <= INT_MAX; }

/* Descriptors of geometry g; false: declined (c cleaned by the caller). */
static bool dnn_conv_setup(struct dnn_conv *c, fw_dtype dt, const fw_nn_conv_geom *g)
{
    cudnnDataType_t ty = dt == FW_FLOAT64 ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT;
    int on, oc, oh, ow;

    memset(c, 0, sizeof(*c));
    if (g->ph0 != g->ph1 || g->pw0 != g->pw1 || g->groups < 1)
        return false;
    if (!fits_int(g->N) || !fits_int(g->C) || !fits_int(g->H) || !fits_int(g->W) ||
        !fits_int(g->OC) || !fits_int(g->KH) || !fits_int(g->KW) || !fits_int(g->OH) ||
        !fits_int(g->OW) || !fits_int(g->sh) || !fits_int(g->sw) || !fits_int(g->ph0) ||
        !fits_int(g->pw0) || !fits_int(g->dh) || !fits_int(g->dw) || !fits_int(g->groups) ||
        !fits_int(g->N * g->C * g->H * g->W) || !fits_int(g->N * g->OC * g->OH * g->OW))
        return false;
    if (g->N == 0 || g->C == 0 || g->OC == 0 || g->OH == 0 || g->OW == 0)
        return false;
    if ((c->h = dnn_handle()) == NULL)
        return false;
    if (cudnnCreateTensorDescriptor(&c->x) != CUDNN_STATUS_SUCCESS ||
        cudnnCreateTensorDescriptor(&c->y) != CUDNN_STATUS_SUCCESS ||
        cudnnCreateFilterDescriptor(&c->w) != CUDNN_STATUS_SUCCESS ||
        cudnnCreateConvolutionDescriptor(&c->conv) != CUDNN_STATUS_SUCCESS)
        return false;
    if (cudnnSetTensor4dDescriptor(c->x, CUDNN_TENSOR_NCHW, ty, (int)g->N, (int)g->C, (int)g->H,
                                   (int)g->W) != CUDNN_STATUS_SUCCESS ||
        cudnnSetTensor4dDescriptor(c->y, CUDNN_TENSOR_NCHW, ty, (int)g->N, (int)g->OC,
                                   (int)g->OH, (int)g->OW) != CUDNN_STATUS_SUCCESS ||
        cudnnSetFilter4dDescriptor(c->w, ty, CUDNN_TENSOR_NCHW, (int)g->OC,
                                   (int)(g->C / g->groups), (int)g->KH,
                                   (int)g->KW) != CUDNN_STATUS_SUCCESS ||
        cudnnSetConvolution2dDescriptor(c->conv, (int)g->ph0, (int)g->pw0, (int)g->sh,
                                        (int)g->sw, (int)g->dh, (int)g->dw,
                                        CUDNN_CROSS_CORRELATION, ty) != CUDNN_STATUS_SUCCESS ||
        cudnnSetConvolutionGroupCount(c->conv, (int)g->groups) != CUDNN_STATUS_SUCCESS ||
        cudnnSetConvolutionMathType(c->conv, dnn_fma_only(dt) ? CUDNN_FMA_MATH
                                                              : CUDNN_DEFAULT_MATH) !=
            CUDNN_STATUS_SUCCESS)
        return false;
    if (cudnnGetConvolution2dForwardOutputDim(c->conv, c->x, c->w, &on, &oc, &oh, &ow) !=
            CUDNN_STATUS_SUCCESS ||
        on != g->N || oc != g->OC || oh != g->OH || ow != g->OW)
        return false;
    return true;
}

#define DNN_MAX_ALGOS 16

/* Run one of the candidate algorithms; 0 done, 1 none worked. float32
 * without TF32 skips the tensor-op candidates and keeps CUDNN_FMA_MATH;
 * otherwise each candidate runs under the math type it was ranked with. */
template <typename Perf, typename Run>
static int dnn_try(const struct dnn_conv *c, fw_dtype dt, const Perf *perf, int n, Run run,
                   const char *entry)
{
    const bool fma_only = dnn_fma_only(dt);

    for (int i = 0; i < n; i++) {
        void *ws = NULL;
        if (perf[i].status != CUDNN_STATUS_SUCCESS)
            continue;
        if (fma_only) {
            if (perf[i].mathType == CUDNN_TENSOR_OP_MATH ||
                perf[i].mathType == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION)
                continue;
        } else if (cudnnSetConvolutionMathType(c->conv, perf[i].mathType) !=
                   CUDNN_STATUS_SUCCESS) {
            continue;
        }
        if (perf[i].memory > 0) {
            if (cudaMallocAsync(&ws, perf[i].memory, fw__cu_stream()) != cudaSuccess) {
                (void)cudaGetLastError();
                continue;
            }
        }
        cudnnStatus_t s = run(perf[i].algo, ws, perf[i].memory);
        if (ws != NULL)
            (void)cudaFreeAsync(ws, fw__cu_stream());
        if (s == CUDNN_STATUS_SUCCESS) {
            int e = cu_launched(entry);
            return e < 0 ? e : 0;
        }
    }
    return 1;
}

/* cuDNN's alpha (1) and beta (0: overwrite) in the scaling type of dt:
 * double for float64, float otherwise. */
static const void *dnn_scalar(fw_dtype dt, int one)
{
    static const float f[2] = {0.0f, 1.0f};
    static const double d[2] = {0.0, 1.0};
    return dt == FW_FLOAT64 ? (const void *)&d[one] : (const void *)&f[one];
}

extern "C" int fw__cu_cudnn_conv_fwd(fw_dtype dt, void *y, const void *x, const void *w,
                                     const fw_nn_conv_geom *g)
{
    struct dnn_conv c;
    cudnnConvolutionFwdAlgoPerf_t perf[DNN_MAX_ALGOS];
    int n = 0, rc = 1;
    const void *alpha = dnn_scalar(dt, 1), *beta = dnn_scalar(dt, 0);

    if (dnn_conv_setup(&c, dt, g) &&
        cudnnGetConvolutionForwardAlgorithm_v7(c.h, c.x, c.w, c.conv, c.y, DNN_MAX_ALGOS, &n,
                                               perf) == CUDNN_STATUS_SUCCESS) {
        rc = dnn_try(&c, dt, perf, n, [&](cudnnConvolutionFwdAlgo_t algo, void *ws, size_t wsz) {
            return cudnnConvolutionForward(c.h, alpha, c.x, x, c.w, w, c.conv, algo, ws, wsz,
                                           beta, c.y, y);
        }, "conv2d");
    }
    dnn_conv_done(&c);
    return rc;
}

extern "C" int fw__cu_cudnn_conv_bwd_data(fw_dtype dt, void *dx, const void *w, const void *dy,
                                          const fw_nn_conv_geom *g)
{
    struct dnn_conv c;
    cudnnConvolutionBwdDataAlgoPerf_t perf[DNN_MAX_ALGOS];
    int n = 0, rc = 1;
    const void *alpha = dnn_scalar(dt, 1), *beta = dnn_scalar(dt, 0);

    if (dnn_conv_setup(&c, dt, g) &&
        cudnnGetConvolutionBackwardDataAlgorithm_v7(c.h, c.w, c.y, c.conv, c.x, DNN_MAX_ALGOS,
                                                    &n, perf) == CUDNN_STATUS_SUCCESS) {
        rc = dnn_try(&c, dt, perf, n,
                     [&](cudnnConvolutionBwdDataAlgo_t algo, void *ws, size_t wsz) {
            return cudnnConvolutionBackwardData(c.h, alpha, c.w, w, c.y, dy, c.conv, algo, ws,
                                                wsz, beta, c.x, dx);
        }, "conv2d backward");
    }
    dnn_conv_done(&c);
    return rc;
}

extern "C" int fw__cu_cudnn_conv_bwd_filter(fw_dtype dt, void *dw, const void *x,
                                            const void *dy, const fw_nn_conv_geom *g)
{
    struct dnn_conv c;
    cudnnConvolutionBwdFilterAlgoPerf_t perf[DNN_MAX_ALGOS];
    int n = 0, rc = 1;
    const void *alpha = dnn_scalar(dt, 1), *beta = dnn_scalar(dt, 0);

    if (dnn_conv_setup(&c, dt, g) &&
        cudnnGetConvolutionBackwardFilterAlgorithm_v7(c.h, c.x, c.y, c.conv, c.w,
                                                      DNN_MAX_ALGOS, &n,
                                                      perf) == CUDNN_STATUS_SUCCESS) {
        rc = dnn_try(&c, dt, perf, n,
                     [&](cudnnConvolutionBwdFilterAlgo_t algo, void *ws, size_t wsz) {
            return cudnnConvolutionBackwardFilter(c.h, alpha, c.x, x, c.y, dy, c.conv, algo, ws,
                                                  wsz, beta, c.w, dw);
        }, "conv2d backward");
    }
    dnn_conv_done(&c);
    return rc;
}

#else /* no cuDNN: always declined */

extern "C" int fw__cu_cudnn_conv_fwd(fw_dtype, void *, const void *, const void *,
                                     const fw_nn_conv_geom *)
{
    return 1;
}

extern "C" int fw__cu_cudnn_conv_bwd_data(fw_dtype, void *, const void *, const void *,
                                          const fw_nn_conv_geom *)
{
    return 1;
}

extern "C" int fw__cu_cudnn_conv_bwd_filter(fw_dtype, void *, const void *, const void *,
                                            const fw_nn_conv_geom *)
{
    return 1;
}

#endif
