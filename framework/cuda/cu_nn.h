/*
 * cu_nn.h - the CUDA backend's nn kernel family (private to framework/cuda/):
 * cuda/backend.c points fw_backend.nn at fw__cu_nn_kernels (nn.cu), the
 * CUDA instance of core/fw_backend_nn.h (float32 and float64).
 */
#ifndef FW_CU_NN_H
#define FW_CU_NN_H

#include "core/fw_backend_nn.h"

#ifdef __cplusplus
extern "C" {
#endif

extern const struct fw_nn_kernels fw__cu_nn_kernels;

#ifdef __cplusplus
}
#endif

#endif
