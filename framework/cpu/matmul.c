/* matmul.c - batched GEMM on OpenBLAS (cblas_sgemm / cblas_dgemm). */
#include "core_kernels.h"
#include "core/fw_int.h"
#include "core/fw_parallel.h"

#include <cblas.h>

typedef struct gemm_job {
    fw_dtype dt;
    bool ta, tb;
    int64_t m, n, k;
    const void *a, *b;
    int64_t lda, ldb, ldc, sc;
    const int64_t *a_off, *b_off;
    void *c;
} gemm_job;

static void gemm_one(const gemm_job *j, int64_t i)
{
    CBLAS_TRANSPOSE ta = j->ta ? CblasTrans : CblasNoTrans;
    CBLAS_TRANSPOSE tb = j->tb ? CblasTrans : CblasNoTrans;

    if (j->dt == FW_FLOAT32)
        cblas_sgemm(CblasRowMajor, ta, tb, (blasint)j->m, (blasint)j->n, (blasint)j->k, 1.0f,
                    (const float *)j->a + j->a_off[i], (blasint)j->lda,
                    (const float *)j->b + j->b_off[i], (blasint)j->ldb, 0.0f,
                    (float *)j->c + i * j->sc, (blasint)j->ldc);
    else
        cblas_dgemm(CblasRowMajor, ta, tb, (blasint)j->m, (blasint)j->n, (blasint)j->k, 1.0,
                    (const double *)j->a + j->a_off[i], (blasint)j->lda,
                    (const double *)j->b + j->b_off[i], (blasint)j->ldb, 0.0,
                    (double *)j->c + i * j->sc, (blasint)j->ldc);
}

static void gemm_range(void *ctx, int64_t b, int64_t e)
{
    for (int64_t i = b; i < e; i++)
        gemm_one(ctx, i);
}

int fw__cpu_gemm_batched(fw_dtype dt, bool ta, bool tb, int64_t m, int64_t n, int64_t k,
                         const void *a, int64_t lda, const int64_t *a_off,
                         const void *b, int64_t ldb, const int64_t *b_off,
                         void *c, int64_t ldc, int64_t sc, int64_t batch)
{
    gemm_job j = {dt, ta, tb, m, n, k, a, b, lda, ldb, ldc, sc, a_off, b_off, c};

    if (dt != FW_FLOAT32 && dt != FW_FLOAT64)
        return fw_error_set(FW_EDTYPE, "gemm has no %s version", fw_dtype_name(dt));
    if (m == 0 || n == 0)
        return 0;
    if (k == 0) {
        for (int64_t i = 0; i < batch; i++)
            for (int64_t r = 0; r < m; r++)
                for (int64_t q = 0; q < n; q++) {
                    if (dt == FW_FLOAT32)
                        ((float *)c)[i * sc + r * ldc + q] = 0;
                    else
                        ((double *)c)[i * sc + r * ldc + q] = 0;
                }
        return 0;
    }
    /* Many small matrices: one per pool chunk with single-threaded BLAS.
     * Few or large ones: one after another, each on all of BLAS's threads. */
    if (batch > 1 && m * n * k <= 128 * 128 * 128)
        fw_parallel_for(batch, 1, gemm_range, &j);
    else
        gemm_range(&j, 0, batch);
    return 0;
}
