/*
 * fw/device.h - devices: which exist, the current one, memory counters.
 *
 * API-STABLE
 *
 * FW_CPU always exists (one device, index 0). FW_CUDA exists when the CUDA
 * backend was built (framework/cuda/, a plugin the framework loads on first
 * use) and the driver reports at least one GPU; otherwise its count is 0 and
 * fw_device_unavailable_reason() says why. Indices are 0-based within the
 * GPUs this process can see (CUDA_VISIBLE_DEVICES). A tensor on FW_CUDA
 * lives on the device that was current when it was made; one process is
 * expected to compute on one GPU at a time (one rank per GPU, as Paddle's
 * launcher runs it).
 *
 * All functions return 0 or a negative FW_E* with fw_error_last() set,
 * except the counts and predicates.
 */
#ifndef FW_DEVICE_H
#define FW_DEVICE_H

#include "fw/tensor.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Whether this build contains a backend for dev (FW_CPU: true; FW_CUDA:
 * framework/cuda/ was compiled), whether or not a device is usable. */
bool fw_device_compiled(fw_device dev);
/* Usable devices of this kind (0 when none or not compiled). */
int fw_device_count(fw_device dev);
/* Why fw_device_count(dev) is 0: "not compiled with CUDA", "libeddy_fw_cuda.so:
 * libcublas.so.13: cannot open shared object file", "cudaGetDeviceCount: no
 * CUDA-capable device is detected", ...; "" when devices exist. */
const char *fw_device_unavailable_reason(fw_device dev);

/* The device that creation functions without a device argument use
 * (fw_tensor_empty, zeros, from data, random; paddle.set_device): FW_CPU
 * at start; process-wide. Ops put their outputs on their inputs' device,
 * whatever the default. FW_EDEVICE when dev has no usable device. */
int fw_device_set_default(fw_device dev);
fw_device fw_device_default(void);

/* The device new FW_CUDA tensors are made on (paddle.set_device('gpu:N')).
 * FW_EDEVICE when index is not in [0, count). */
int fw_device_set_current(fw_device dev, int index);
int fw_device_current(fw_device dev);

/* Wait until the queued work of device `index` has finished (-1: current).
 * Reports an asynchronous kernel error as FW_EDEVICE. */
int fw_device_synchronize(fw_device dev, int index);

typedef struct fw_device_props {
    char name[256];            /* "NVIDIA H100 80GB HBM3" */
    int major, minor;          /* compute capability */
    int multi_processor_count;
    uint64_t total_memory;     /* bytes */
} fw_device_props;
int fw_device_properties(fw_device dev, int index, fw_device_props *out);

/* The caching allocator's counters of device `index` (-1: current), in
 * bytes: allocated = held by live tensors (rounded to the allocator's
 * blocks), reserved = obtained from the driver (allocated + cached),
 * the peaks since the start or the last reset. */
typedef struct fw_device_memory {
    uint64_t allocated, peak_allocated;
    uint64_t reserved, peak_reserved;
} fw_device_memory;
int fw_device_memory_stats(fw_device dev, int index, fw_device_memory *out);
int fw_device_reset_peak(fw_device dev, int index);
/* Give cached, unused blocks back to the driver. */
int fw_device_empty_cache(fw_device dev);

#endif
