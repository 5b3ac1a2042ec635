/*
 * fw_plugin.h - the contract between the framework and a backend plugin
 * (private to framework/).
 *
 * A device backend that links libraries the framework must not depend on
 * (the CUDA runtime, cuBLAS, cuDNN) is built as a shared object the
 * framework dlopens on first use of its device (core/backend_load.c):
 * libeddy_fw_cuda.so for FW_CUDA. The plugin links nothing of
 * eddy_framework; everything it needs from the framework comes through the
 * fw_plugin_host table below, so one plugin works with the framework linked
 * into paddle/_C*.so, into eddy-kernel, or into a test binary.
 *
 * Entry point (exported, C linkage):
 *   int eddy_fw_cuda_open(const fw_plugin_host *host, int abi,
 *                         const fw_backend **out, char *why, size_t why_len);
 * returns 0 with *out set to the backend table (the framework registers it),
 * or a negative FW_E* with a reason in why ("cudaGetDeviceCount: no
 * CUDA-capable device is detected"); the framework keeps that reason for
 * fw_device_unavailable_reason(). abi must equal FW_PLUGIN_ABI; bump it
 * whenever fw_backend, a family table or this header changes layout.
 */
#ifndef FW_PLUGIN_H
#define FW_PLUGIN_H

#include "core/fw_backend.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#define FW_PLUGIN_ABI 1
#define FW_CUDA_PLUGIN_FILE "libeddy_fw_cuda.so"
#define FW_CUDA_PLUGIN_ENTRY "eddy_fw_cuda_open"

typedef struct fw_plugin_host {
    int abi;                                   /* FW_PLUGIN_ABI */
    /* fw_error_set with a va_list; returns code. */
    int (*error_vset)(int code, const char *fmt, va_list ap);
    uint16_t (*float_to_half)(float f);
    float (*half_to_float)(uint16_t h);
    uint16_t (*float_to_bf16)(float f);
    float (*bf16_to_float)(uint16_t h);
} fw_plugin_host;

typedef int (*fw_plugin_open_fn)(const fw_plugin_host *host, int abi,
                                 const fw_backend **out, char *why, size_t why_len);

/* Load the FW_CUDA plugin once (pthread_once) and register its table when
 * it reports a usable device (core/backend_load.c). */
void fw__backend_load_cuda(void);
/* Why FW_CUDA has no backend ("" when it has one); valid after the load. */
const char *fw__backend_load_reason(fw_device dev);

#endif
