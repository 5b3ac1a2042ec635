/*
 * blas.c - batched GEMM on cuBLAS for the backend's gemm_batched.
 *
 * The framework's matrices are row-major; cuBLAS's are column-major. A
 * row-major matrix read as column-major is its transpose, so
 *   C = op(A) op(B)   (row-major)   <=>   C^T = op(B)^T op(A)^T   (column-major)
 * and the call swaps the operands (and m with n), keeping each one's
 * transpose flag. float32 runs without TF32 (the CPU comparison needs
 * 1e-5) unless EDDY_CUDA_ALLOW_TF32=1; float16 and bfloat16 accumulate in
 * float32. Batches whose per-matrix offsets are evenly spaced (plain and
 * broadcast batches) use the strided-batched call; other patterns a
 * pointer array on the device.
 */
#include "cu_runtime.h"

#include <cublas_v2.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

static pthread_mutex_t handle_lock = PTHREAD_MUTEX_INITIALIZER;
static cublasHandle_t handles[FW_CU_MAX_DEVICES];

static int blas_error(cublasStatus_t s, const char *what)
{
    if (s == CUBLAS_STATUS_SUCCESS)
        return 0;
    return fw__cu_error_set(FW_EDEVICE, "matmul: %s: %s", what, cublasGetStatusString(s));
}

/* The cuBLAS handle of the current device, bound to its compute stream. */
static int handle_get(cublasHandle_t *out)
{
    int d = fw__cu_device();
    cublasStatus_t s = CUBLAS_STATUS_SUCCESS;

    pthread_mutex_lock(&handle_lock);
    if (handles[d] == NULL) {
        cublasHandle_t h;
        const char *tf32 = getenv("EDDY_CUDA_ALLOW_TF32");
        s = cublasCreate(&h);
        if (s == CUBLAS_STATUS_SUCCESS)
            s = cublasSetStream(h, fw__cu_stream_of(d));
        if (s == CUBLAS_STATUS_SUCCESS)
            /* the default math mode keeps float32 in full precision (no
             * TF32) and lets float16/bfloat16 use tensor cores */
            s = cublasSetMathMode(h, tf32 && strcmp(tf32, "1") == 0 ? CUBLAS_TF32_TENSOR_OP_MATH
                                                                    : CUBLAS_DEFAULT_MATH);
        if (s == CUBLAS_STATUS_SUCCESS)
            handles[d] = h;
    }
    *out = handles[d];
    pthread_mutex_unlock(&handle_lock);
    return blas_error(s, "cublasCreate");
}

/* Whether off[i] = off[0] + i * step for all i; step returned. */
static bool evenly_spaced(const int64_t *off, int64_t batch, int64_t *step)
{
    *step = batch > 1 ? off[1] - off[0] : 0;
    for (int64_t i = 2; i < batch; i++)
        if (off[i] - off[i - 1] != *step)
            return false;
    return true;
}

static size_t dtype_size(fw_dtype dt)
{
    return dt == FW_FLOAT64 ? 8 : dt == FW_FLOAT32 ? 4 : 2;
}

/* Leading dimension cuBLAS accepts: >= rows of the stored column-major
 * matrix; a one-column matrix's ld is never used, so any ld fits. */
static int64_t fix_ld(int64_t ld, int64_t rows, int64_t cols)
{
    if (rows < 1)
        rows = 1;
    return ld < rows && cols <= 1 ? rows : ld;
}

int fw__cu_gemm_batched(fw_dtype dt, bool ta, bool tb, int64_t m, int64_t n, int64_t k,
                        const void *a, int64_t lda, const int64_t *a_off,
                        const void *b, int64_t ldb, const int64_t *b_off,
                        void *c, int64_t ldc, int64_t sc, int64_t batch)
{
    cudaDataType ty;
    cublasComputeType_t ct;
    cublasHandle_t h;
    size_t es = dtype_size(dt);
    int64_t sa, sb;
    float one_f = 1.0f, zero_f = 0.0f;
    double one_d = 1.0, zero_d = 0.0;
    const void *alpha = &one_f, *beta = &zero_f;
    int err;

    switch (dt) {
    case FW_FLOAT32: ty = CUDA_R_32F; ct = CUBLAS_COMPUTE_32F; break;
    case FW_FLOAT64: ty = CUDA_R_64F; ct = CUBLAS_COMPUTE_64F; alpha = &one_d; beta = &zero_d; break;
    case FW_FLOAT16: ty = CUDA_R_16F; ct = CUBLAS_COMPUTE_32F; break;
    case FW_BFLOAT16: ty = CUDA_R_16BF; ct = CUBLAS_COMPUTE_32F; break;
    default:
        return fw__cu_error_set(FW_EDTYPE, "matmul: cuda gemm takes float32, float64, "
                                "float16 or bfloat16");
    }
    if (m == 0 || n == 0 || batch == 0)
        return 0;
    if (k == 0) {                          /* an empty sum: zeros */
        cudaStream_t st = fw__cu_stream();
        for (int64_t i = 0; i < batch; i++) {
            cudaError_t e = cudaMemset2DAsync((char *)c + (size_t)(i * sc) * es,
                                              (size_t)ldc * es, 0, (size_t)n * es, (size_t)m, st);
            if (e != cudaSuccess)
                return fw__cu_error(e, "matmul");
        }
        return 0;
    }
    /* column-major view: C^T (n x m) = op(B)^T (n x k) . op(A)^T (k x m) */
    ldb = fix_ld(ldb, tb ? k : n, tb ? n : k);
    lda = fix_ld(lda, ta ? m : k, ta ? k : m);
    ldc = fix_ld(ldc, n, m);
    if (m > INT_MAX || n > INT_MAX || k > INT_MAX || lda > INT_MAX || ldb > INT_MAX ||
        ldc > INT_MAX || batch > INT_MAX)
        return fw__cu_error_set(FW_ERANGE, "matmul: dimensions beyond cuBLAS's 32-bit sizes");
    if ((err = handle_get(&h)) < 0)
        return err;
    cublasOperation_t opb = tb ? CUBLAS_OP_T : CUBLAS_OP_N;
    cublasOperation_t opa = ta ? CUBLAS_OP_T : CUBLAS_OP_N;
    cublasGemmAlgo_t algo = CUBLAS_GEMM_DEFAULT;

    if (evenly_spaced(a_off, batch, &sa) && evenly_spaced(b_off, batch, &sb)) {
        const char *pa = (const char *)a + (size_t)a_off[0] * es;
        const char *pb = (const char *)b + (size_t)b_off[0] * es;
        return blas_error(cublasGemmStridedBatchedEx(h, opb, opa, (int)n, (int)m, (int)k, alpha,
                                                     pb, ty, (int)ldb, (long long)sb,
                                                     pa, ty, (int)lda, (long long)sa, beta,
                                                     c, ty, (int)ldc, (long long)sc,
                                                     (int)batch, ct, algo),
                          "cublasGemmStridedBatchedEx");
    }
    /* arbitrary offsets: arrays of matrix pointers on the device (their
     * block goes back to the pool at once: the stream orders its reuse) */
    size_t bytes = sizeof(void *) * 3 * (size_t)batch;
    const void **host = malloc(bytes);
    void **dev = NULL;
    if (host == NULL)
        return fw__cu_error_set(FW_ENOMEM, "matmul: out of memory");
    for (int64_t i = 0; i < batch; i++) {
        host[i] = (const char *)b + (size_t)b_off[i] * es;
        host[batch + i] = (const char *)a + (size_t)a_off[i] * es;
        host[2 * batch + i] = (char *)c + (size_t)(i * sc) * es;
    }
    dev = fw__cu_alloc(bytes);
    if (dev == NULL) {
        free(host);
        return fw__cu_error_set(FW_ENOMEM, "matmul: out of CUDA memory");
    }
    err = fw__cu_copy(dev, FW_CUDA, host, FW_CPU, bytes);
    free(host);
    if (err == 0)
        err = blas_error(cublasGemmBatchedEx(h, opb, opa, (int)n, (int)m, (int)k, alpha,
                                             (const void *const *)dev, ty, (int)ldb,
                                             (const void *const *)(dev + batch), ty, (int)lda,
                                             beta, (void *const *)(dev + 2 * batch), ty,
                                             (int)ldc, (int)batch, ct, algo),
                         "cublasGemmBatchedEx");
    fw__cu_free(dev, bytes);
    return err;
}
