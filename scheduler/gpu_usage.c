/*
 * gpu_usage.c - what a job's GPUs are doing now, from NVML, for the live
 * meters (sched_job_usage). NVML is opened at run time with dlopen (like the
 * discovery in resources.c): eddy never links it, and a host without an
 * NVIDIA driver simply has no GPU figures (-1), never made-up ones.
 *
 * A job's devices are the /dev/nvidia<k> nodes it was given; k is the
 * device's minor number, which need not be NVML's index (NVML orders by
 * PCI bus), so devices are matched by nvmlDeviceGetMinorNumber.
 */
#include "sched.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>

/* nvml.h's structs, as the library lays them out. */
typedef struct { unsigned gpu, memory; } nvml_utilization;
typedef struct { unsigned long long total, free, used; } nvml_memory;

static struct {
    int (*count)(unsigned *);
    int (*by_index)(unsigned, void **);
    int (*minor)(void *, unsigned *);
    int (*util)(void *, nvml_utilization *);
    int (*mem)(void *, nvml_memory *);
} lib;
static pthread_once_t lib_once = PTHREAD_ONCE_INIT;
static int lib_ok;

/* Open NVML and initialise it once per process; the library stays loaded
 * (nvmlShutdown would pull it from under a concurrent reading). */
static void lib_open(void)
{
    void *h = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    int (*init)(void);

    if (h == NULL)
        return;
    init = (int (*)(void))dlsym(h, "nvmlInit_v2");
    lib.count = (int (*)(unsigned *))dlsym(h, "nvmlDeviceGetCount_v2");
    lib.by_index = (int (*)(unsigned, void **))dlsym(h, "nvmlDeviceGetHandleByIndex_v2");
    lib.minor = (int (*)(void *, unsigned *))dlsym(h, "nvmlDeviceGetMinorNumber");
    lib.util = (int (*)(void *, nvml_utilization *))dlsym(h, "nvmlDeviceGetUtilizationRates");
    lib.mem = (int (*)(void *, nvml_memory *))dlsym(h, "nvmlDeviceGetMemoryInfo");
    if (!init || !lib.count || !lib.by_index || !lib.util || !lib.mem || init() != 0) {
        dlclose(h);
        return;
    }
    lib_ok = 1;
}

static int real_count(unsigned *n)
{
    return lib.count(n);
}

static int real_by_index(unsigned i, void **dev)
{
    return lib.by_index(i, dev);
}

static int real_minor(void *dev, unsigned *minor)
{
    return lib.minor ? lib.minor(dev, minor) : 999;   /* 999: NVML_ERROR_UNKNOWN */
}

static int real_util(void *dev, unsigned *gpu, unsigned *mem)
{
    nvml_utilization u;
    int rc = lib.util(dev, &u);
    if (rc == 0) {
        *gpu = u.gpu;
        *mem = u.memory;
    }
    return rc;
}

static int real_mem(void *dev, uint64_t *total, uint64_t *free_b, uint64_t *used)
{
    nvml_memory m;
    int rc = lib.mem(dev, &m);
    if (rc == 0) {
        *total = m.total;
        *free_b = m.free;
        *used = m.used;
    }
    return rc;
}

static const sched_nvml real_api = {real_count, real_by_index, real_minor, real_util, real_mem};

/* NVML's handle of /dev/nvidia<minor>: the device with that minor number,
 * else (no minor numbers: a driver that will not say) index `minor`. */
static void *find_device(const sched_nvml *api, unsigned count, int minor)
{
    void *dev = NULL;
    unsigned m;
    int any_minor = 0;

    for (unsigned i = 0; i < count && i < 256; i++) {
        if (api->device_by_index(i, &dev) != 0 || dev == NULL)
            continue;
        if (api->minor_number && api->minor_number(dev, &m) == 0) {
            any_minor = 1;
            if ((int)m == minor)
                return dev;
        }
    }
    if (!any_minor && minor >= 0 && (unsigned)minor < count && api->device_by_index((unsigned)minor, &dev) == 0)
        return dev;
    return NULL;
}

int sched_gpu_read(sched_gpu_usage *out, const int *devices, int n, const sched_nvml *api)
{
    unsigned count = 0;
    int got = 0;

    if (n > SCHED_USAGE_MAX_GPUS)
        n = SCHED_USAGE_MAX_GPUS;
    for (int i = 0; i < n; i++)
        out[i] = (sched_gpu_usage){devices[i], -1, -1, -1};
    if (api == NULL) {
        pthread_once(&lib_once, lib_open);
        if (!lib_ok)
            return 0;
        api = &real_api;
    }
    if (n <= 0 || api->device_count(&count) != 0)
        return 0;
    for (int i = 0; i < n; i++) {
        void *dev = find_device(api, count, devices[i]);
        unsigned gpu = 0, mem_pct = 0;
        uint64_t total = 0, free_b = 0, used = 0;
        int any = 0;
        if (dev == NULL)
            continue;
        if (api->utilization(dev, &gpu, &mem_pct) == 0 && gpu <= 100) {
            out[i].util_percent = (int)gpu;
            any = 1;
        }
        if (api->memory(dev, &total, &free_b, &used) == 0 && used <= total && total <= (uint64_t)INT64_MAX) {
            out[i].memory_bytes = (int64_t)used;
            out[i].memory_total_bytes = (int64_t)total;
            any = 1;
        }
        got += any;
    }
    return got;
}
