/*
 * cu_runtime.h - the CUDA backend's runtime between its own files
 * (device.c, memory.c, blas.c, backend.c); private to framework/cuda/.
 * Kernel files need only cu_int.h.
 */
#ifndef FW_CU_RUNTIME_H
#define FW_CU_RUNTIME_H

#include "block_pool.h"
#include "core/fw_plugin.h"
#include "cu_int.h"

#ifdef __cplusplus
extern "C" {
#endif

#define FW_CU_MAX_DEVICES 64

/* The framework's table, set by eddy_fw_cuda_open (backend.c). */
extern const fw_plugin_host *fw__cu_host;
/* Devices this process sees (at most FW_CU_MAX_DEVICES). */
extern int fw__cu_ndev;

/* The current device index, made current on the calling thread. */
int fw__cu_device(void);
/* The compute stream of device index (created on first use). */
cudaStream_t fw__cu_stream_of(int index);

extern const fw_device_ops fw__cu_device_ops;

/* memory.c: the caching allocator, one block pool per device. */
int fw__cu_pools_init(int ndev);
void *fw__cu_alloc(size_t nbytes);
void fw__cu_free(void *p, size_t nbytes);
int fw__cu_copy(void *dst, fw_device dst_dev, const void *src, fw_device src_dev,
                size_t nbytes);
int fw__cu_memset(void *dst, int byte, size_t nbytes);
void fw__cu_pool_stats(int index, fw_bp_stats *out);
void fw__cu_pool_reset_peak(int index);
int fw__cu_pool_empty_cache(void);

/* blas.c */
int fw__cu_gemm_batched(fw_dtype dt, bool ta, bool tb, int64_t m, int64_t n, int64_t k,
                        const void *a, int64_t lda, const int64_t *a_off,
                        const void *b, int64_t ldb, const int64_t *b_off,
                        void *c, int64_t ldc, int64_t sc, int64_t batch);

#ifdef __cplusplus
}
#endif

#endif
