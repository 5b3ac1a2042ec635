/*
 * device.c - the CUDA backend's runtime: the host table, errors, the
 * current device, one compute stream per device, and the fw_device_ops
 * (count, current, synchronize, properties, memory counters).
 *
 * The current device is process-wide (paddle.set_device): every thread
 * that queues work first makes its CUDA context current for that device
 * (a thread-local cache of the last cudaSetDevice), so the framework's
 * threads and Python's agree.
 */
#include "cu_int.h"
#include "cu_runtime.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

const fw_plugin_host *fw__cu_host;
int fw__cu_ndev;

static _Atomic int current_dev;
static _Thread_local int thread_dev = -1;
static pthread_mutex_t stream_lock = PTHREAD_MUTEX_INITIALIZER;
static cudaStream_t _Atomic streams[FW_CU_MAX_DEVICES];

int fw__cu_error_set(int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (fw__cu_host)
        code = fw__cu_host->error_vset(code, fmt, ap);
    va_end(ap);
    return code;
}

int fw__cu_error(cudaError_t e, const char *op)
{
    if (e == cudaSuccess)
        return 0;
    (void)cudaGetLastError();            /* clear a non-sticky error */
    return fw__cu_error_set(FW_EDEVICE, "%s: %s", op, cudaGetErrorString(e));
}

int fw__cu_device(void)
{
    int d = atomic_load_explicit(&current_dev, memory_order_relaxed);
    if (thread_dev != d && cudaSetDevice(d) == cudaSuccess)
        thread_dev = d;
    return d;
}

static cudaStream_t stream_of(int d)
{
    cudaStream_t s = atomic_load_explicit(&streams[d], memory_order_acquire);

    if (s)
        return s;
    pthread_mutex_lock(&stream_lock);
    s = atomic_load_explicit(&streams[d], memory_order_relaxed);
    if (s == NULL) {
        int prev = -1;
        (void)cudaGetDevice(&prev);
        if (prev != d)
            (void)cudaSetDevice(d);
        if (cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) != cudaSuccess) {
            (void)cudaGetLastError();
            s = NULL;
        } else {
            atomic_store_explicit(&streams[d], s, memory_order_release);
        }
        if (prev != d && prev >= 0)
            (void)cudaSetDevice(prev);
    }
    pthread_mutex_unlock(&stream_lock);
    /* could not create one: the per-thread default stream (still ordered) */
    return s ? s : cudaStreamPerThread;
}

cudaStream_t fw__cu_stream(void) { return stream_of(fw__cu_device()); }

cudaStream_t fw__cu_stream_of(int index) { return stream_of(index); }

/* ---- fw_device_ops ----------------------------------------------------------------- */

static int dev_count(void) { return fw__cu_ndev; }

static int dev_set_current(int index)
{
    cudaError_t e;

    if (index < 0 || index >= fw__cu_ndev)
        return fw__cu_error_set(FW_EDEVICE, "set_device: no CUDA device %d", index);
    if ((e = cudaSetDevice(index)) != cudaSuccess)
        return fw__cu_error(e, "set_device");
    thread_dev = index;
    atomic_store(&current_dev, index);
    return 0;
}

static int dev_current(void) { return atomic_load(&current_dev); }

static int dev_synchronize(int index)
{
    cudaStream_t s = atomic_load(&streams[index]);
    cudaError_t e;

    if (s == NULL)                  /* nothing was ever queued there */
        return 0;
    e = cudaStreamSynchronize(s);
    if (e == cudaSuccess)
        e = cudaGetLastError();     /* a failed launch not yet reported */
    return fw__cu_error(e, "synchronize");
}

static int dev_properties(int index, fw_device_props *out)
{
    struct cudaDeviceProp p;
    cudaError_t e = cudaGetDeviceProperties(&p, index);

    if (e != cudaSuccess)
        return fw__cu_error(e, "get_device_properties");
    snprintf(out->name, sizeof(out->name), "%s", p.name);
    out->major = p.major;
    out->minor = p.minor;
    out->multi_processor_count = p.multiProcessorCount;
    out->total_memory = (uint64_t)p.totalGlobalMem;
    return 0;
}

static int dev_memory_stats(int index, fw_device_memory *out)
{
    fw_bp_stats st;

    fw__cu_pool_stats(index, &st);
    out->allocated = st.allocated;
    out->peak_allocated = st.peak_allocated;
    out->reserved = st.reserved;
    out->peak_reserved = st.peak_reserved;
    return 0;
}

static int dev_reset_peak(int index)
{
    fw__cu_pool_reset_peak(index);
    return 0;
}

static int dev_empty_cache(void)
{
    return fw__cu_pool_empty_cache();
}

const fw_device_ops fw__cu_device_ops = {
    .count = dev_count,
    .set_current = dev_set_current,
    .current = dev_current,
    .synchronize = dev_synchronize,
    .properties = dev_properties,
    .memory_stats = dev_memory_stats,
    .reset_peak = dev_reset_peak,
    .empty_cache = dev_empty_cache,
};
