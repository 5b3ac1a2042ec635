/*
 * cu_core_kernels.h - CUDA kernels of the core ops, with exactly the
 * signatures of fw_backend's core pointers (cuda/backend.c puts them in the
 * table). Private to framework/cuda/. Every kernel is queued on
 * fw__cu_stream() and returns 0 or a negative FW_E* (launch errors through
 * fw__cu_error).
 */
#ifndef FW_CU_CORE_KERNELS_H
#define FW_CU_CORE_KERNELS_H

#include "core/fw_backend.h"

#ifdef __cplusplus
extern "C" {
#endif

int fw__cu_copy_strided(const fw_kview *dst, const fw_kview *src);
int fw__cu_fill(const fw_kview *dst, double value);
int fw__cu_binary(fw_binop op, const fw_kview *out, const fw_kview *a, const fw_kview *b);
int fw__cu_unary(fw_unop op, void *out, const void *x, int64_t n, fw_dtype dt, double alpha);
int fw__cu_unary_grad(fw_unop op, void *gx, const void *gy, const void *x, const void *y,
                      int64_t n, fw_dtype dt, double alpha);
int fw__cu_reduce(fw_redop op, const fw_kview *out, const fw_kview *x, unsigned mask);
int fw__cu_arg_reduce(bool is_max, int64_t *out, const void *x, fw_dtype dt,
                      int64_t outer, int64_t n, int64_t inner);

#ifdef __cplusplus
}
#endif

#endif
