/*
 * cu_int.h - what every file of the CUDA backend shares (private to
 * framework/cuda/). The backend is a plugin, libeddy_fw_cuda.so, that the
 * framework dlopens on first use of FW_CUDA (core/backend_load.c); it reaches
 * the framework only through the host table it is handed (fw_plugin_host),
 * so it links nothing of eddy_framework.
 */
#ifndef FW_CU_INT_H
#define FW_CU_INT_H

#include "core/fw_backend.h"

#include <cuda_runtime.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The compute stream of the current device: every kernel and copy of the
 * backend is queued on it; the host waits only where a value is needed. */
cudaStream_t fw__cu_stream(void);

/* FW_EDEVICE with "<op>: <cudaGetErrorString(e)>" set through the host
 * (0 when e == cudaSuccess). */
int fw__cu_error(cudaError_t e, const char *op);

/* Set an error message through the host's fw_error_set; returns code. */
int fw__cu_error_set(int code, const char *fmt, ...)
#ifdef __GNUC__
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* Threads per block and a grid for n elements (grid capped; kernels use
 * grid-stride loops). */
#define FW_CU_THREADS 256
static inline unsigned fw__cu_blocks(long long n)
{
    long long b = (n + FW_CU_THREADS - 1) / FW_CU_THREADS;
    return (unsigned)(b < 1 ? 1 : b > 65535LL * 8 ? 65535LL * 8 : b);
}

#ifdef __cplusplus
}
#endif

#endif
