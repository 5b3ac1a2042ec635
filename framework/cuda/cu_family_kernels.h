/*
 * cu_family_kernels.h - the CUDA backend's kernel family tables beyond the
 * core (private to framework/cuda/): cuda/backend.c points fw_backend's
 * index, optim and random at them.
 *   fw__cu_index_kernels   index.cu, sort.cu (core/fw_backend_index.h)
 *   fw__cu_optim_kernels   optim.cu          (core/fw_backend_optim.h)
 *   fw__cu_random_kernels  philox.cu         (core/fw_backend_random.h)
 */
#ifndef FW_CU_FAMILY_KERNELS_H
#define FW_CU_FAMILY_KERNELS_H

#include "core/fw_backend_index.h"
#include "core/fw_backend_optim.h"
#include "core/fw_backend_random.h"

#ifdef __cplusplus
extern "C" {
#endif

extern const struct fw_index_kernels fw__cu_index_kernels;
extern const struct fw_optim_kernels fw__cu_optim_kernels;
extern const struct fw_random_kernels fw__cu_random_kernels;

/* sort.cu: the index family's sort entry (fw_index_kernels.sort). */
int fw__cu_sort(fw_dtype dt, void *vals, int64_t *idx, const void *x, int64_t outer,
                int64_t len, int64_t inner, int64_t k, int descending);

#ifdef __cplusplus
}
#endif

#endif
