/*
 * core_kernels.h - CPU kernels of the core ops (fwcore), registered in the
 * CPU backend table (cpu/backend.c). Private to framework/.
 */
#ifndef FW_CORE_KERNELS_H
#define FW_CORE_KERNELS_H

#include "core/fw_backend.h"

int fw__cpu_copy_strided(const fw_kview *dst, const fw_kview *src);
int fw__cpu_fill(const fw_kview *dst, double value);
int fw__cpu_binary(fw_binop op, const fw_kview *out, const fw_kview *a, const fw_kview *b);
int fw__cpu_unary(fw_unop op, void *out, const void *x, int64_t n, fw_dtype dt, double alpha);
int fw__cpu_unary_grad(fw_unop op, void *gx, const void *gy, const void *x, const void *y,
                       int64_t n, fw_dtype dt, double alpha);
int fw__cpu_reduce(fw_redop op, const fw_kview *out, const fw_kview *x, unsigned mask);
int fw__cpu_arg_reduce(bool is_max, int64_t *out, const void *x, fw_dtype dt,
                       int64_t outer, int64_t n, int64_t inner);
int fw__cpu_gemm_batched(fw_dtype dt, bool ta, bool tb, int64_t m, int64_t n, int64_t k,
                         const void *a, int64_t lda, const int64_t *a_off,
                         const void *b, int64_t ldb, const int64_t *b_off,
                         void *c, int64_t ldc, int64_t sc, int64_t batch);

/* The CPU tables of the kernel families (cpu/{index,optim,random,fft}_backend.c). */
extern const struct fw_index_kernels fw__cpu_index;
extern const struct fw_optim_kernels fw__cpu_optim;
extern const struct fw_random_kernels fw__cpu_random;
extern const struct fw_fft_kernels fw__cpu_fft;

/* The CPU nn table (cpu/nn_backend.c, core/fw_backend_nn.h). */
extern const struct fw_nn_kernels fw__cpu_nn_kernels;

/* Merge adjacent dims that are contiguous with each other in every one of
 * nops stride arrays (strides[op][dim]); shape/strides are rewritten in
 * place; returns the new ndim (>= 1). */
int fw__coalesce(int ndim, int64_t *shape, int nops, int64_t (*strides)[FW_MAX_DIMS]);

#endif
