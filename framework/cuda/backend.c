/*
 * backend.c - the FW_CUDA backend table and the plugin's entry point,
 * eddy_fw_cuda_open (see core/fw_plugin.h), the one symbol the plugin
 * exports.
 */
#include "cu_core_kernels.h"
#include "cu_family_kernels.h"
#include "cu_nn.h"
#include "cu_runtime.h"

#include <stdio.h>

static const fw_backend cuda_backend = {
    .name = "cuda",
    .device = FW_CUDA,
    .host_accessible = false,
    .alloc = fw__cu_alloc,
    .free = fw__cu_free,
    .copy = fw__cu_copy,
    .memset = fw__cu_memset,
    .copy_strided = fw__cu_copy_strided,
    .fill = fw__cu_fill,
    .binary = fw__cu_binary,
    .unary = fw__cu_unary,
    .unary_grad = fw__cu_unary_grad,
    .reduce = fw__cu_reduce,
    .arg_reduce = fw__cu_arg_reduce,
    .gemm_batched = fw__cu_gemm_batched,
    .nn = &fw__cu_nn_kernels,
    .index = &fw__cu_index_kernels,
    .optim = &fw__cu_optim_kernels,
    .random = &fw__cu_random_kernels,
    .dev = &fw__cu_device_ops,
    .caches_itself = true,
};

__attribute__((visibility("default"))) int
eddy_fw_cuda_open(const fw_plugin_host *host, int abi, const fw_backend **out, char *why,
                  size_t why_len);

int eddy_fw_cuda_open(const fw_plugin_host *host, int abi, const fw_backend **out, char *why,
                      size_t why_len)
{
    int n = 0;
    cudaError_t e;

    *out = NULL;
    if (abi != FW_PLUGIN_ABI || host == NULL || host->abi != FW_PLUGIN_ABI) {
        snprintf(why, why_len, "%s: built for plugin ABI %d, the framework has %d",
                 FW_CUDA_PLUGIN_FILE, FW_PLUGIN_ABI, abi);
        return FW_EDEVICE;
    }
    fw__cu_host = host;
    e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        snprintf(why, why_len, "cudaGetDeviceCount: %s", cudaGetErrorString(e));
        return FW_EDEVICE;
    }
    if (n <= 0) {
        snprintf(why, why_len, "cudaGetDeviceCount: no CUDA-capable device is detected");
        return FW_EDEVICE;
    }
    fw__cu_ndev = n < FW_CU_MAX_DEVICES ? n : FW_CU_MAX_DEVICES;
    if (fw__cu_pools_init(fw__cu_ndev) != 0) {
        snprintf(why, why_len, "%s: cannot initialise the allocator", FW_CUDA_PLUGIN_FILE);
        return FW_EDEVICE;
    }
    *out = &cuda_backend;
    return 0;
}
