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

/* cudnn_conv.cu: conv2d on cuDNN. 0 done, 1 declined (run the im2col path),
 * < 0 an error set. Outputs overwritten; no bias (the caller adds it). */
int fw__cu_cudnn_conv_fwd(fw_dtype dt, void *y, const void *x, const void *w,
                          const fw_nn_conv_geom *g);
int fw__cu_cudnn_conv_bwd_data(fw_dtype dt, void *dx, const void *w, const void *dy,
                               const fw_nn_conv_geom *g);
int fw__cu_cudnn_conv_bwd_filter(fw_dtype dt, void *dw, const void *x, const void *dy,
                                 const fw_nn_conv_geom *g);

#ifdef __cplusplus
}
#endif

#endif
