/*
 * fake_nvml.c - a stand-in for the NVIDIA driver's libnvidia-ml.so.1, built
 * as a shared library of that name in the build tree, for testing GPU
 * discovery, allocation and figures on hosts without a GPU. The server
 * loads it through EDDY_NVML_LIB=<path> (scheduler/gpu_nvml.c), exactly as
 * it would load the real one: a legitimate mock, since NVML cannot run
 * without the driver.
 *
 * What it reports comes from the environment, read at nvmlInit_v2:
 *   FAKE_NVML_GPUS=N          devices (0..16; default 0)
 *   FAKE_NVML_MINORS=1,0      each device's minor number (default: its index)
 *   FAKE_NVML_UTIL=37         GPU utilisation % of every device (default 0)
 *   FAKE_NVML_MEM_USED_MB=M   memory in use (default 1024)
 *   FAKE_NVML_MEM_TOTAL_MB=T  memory in all (default 16384)
 *   FAKE_NVML_INIT_FAIL=1     nvmlInit_v2 fails (a driver that is not loaded)
 * Device i is named "Fake GPU i" with UUID GPU-00000000-0000-0000-0000-00000000000i
 * (i in hex, 12 digits).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DEV 16
#define NVML_SUCCESS 0
#define NVML_ERROR_INVALID_ARGUMENT 2
#define NVML_ERROR_UNINITIALIZED 1
#define NVML_ERROR_INSUFFICIENT_SIZE 7
#define NVML_ERROR_DRIVER_NOT_LOADED 9

typedef struct { unsigned gpu, memory; } nvml_utilization;
typedef struct { unsigned long long total, free, used; } nvml_memory;
typedef struct { int index; unsigned minor; } fake_dev;

/* NVML's entry points the server uses (nvml.h's names and shapes) */
int nvmlInit_v2(void);
int nvmlShutdown(void);
int nvmlDeviceGetCount_v2(unsigned *n);
int nvmlDeviceGetHandleByIndex_v2(unsigned i, void **dev);
int nvmlDeviceGetMinorNumber(void *dev, unsigned *minor);
int nvmlDeviceGetUtilizationRates(void *dev, nvml_utilization *u);
int nvmlDeviceGetMemoryInfo(void *dev, nvml_memory *m);
int nvmlDeviceGetName(void *dev, char *buf, unsigned len);
int nvmlDeviceGetUUID(void *dev, char *buf, unsigned len);

static fake_dev devs[MAX_DEV];
static unsigned ndev;
static int inited;
static unsigned util;
static unsigned long long used_mb = 1024, total_mb = 16384;

static long env_num(const char *name, long dflt, long lo, long hi)
{
    const char *v = getenv(name);
    char *end;
    long x;

    if (v == NULL || *v == '\0')
        return dflt;
    x = strtol(v, &end, 10);
    return *end == '\0' && x >= lo && x <= hi ? x : dflt;
}

int nvmlInit_v2(void)
{
    const char *minors = getenv("FAKE_NVML_MINORS");

    if (env_num("FAKE_NVML_INIT_FAIL", 0, 0, 1))
        return NVML_ERROR_DRIVER_NOT_LOADED;
    ndev = (unsigned)env_num("FAKE_NVML_GPUS", 0, 0, MAX_DEV);
    util = (unsigned)env_num("FAKE_NVML_UTIL", 0, 0, 100);
    used_mb = (unsigned long long)env_num("FAKE_NVML_MEM_USED_MB", 1024, 0, 1L << 30);
    total_mb = (unsigned long long)env_num("FAKE_NVML_MEM_TOTAL_MB", 16384, 0, 1L << 30);
    for (unsigned i = 0; i < ndev; i++) {
        devs[i].index = (int)i;
        devs[i].minor = i;
    }
    for (unsigned i = 0; minors && *minors && i < ndev; i++) {
        char *end;
        devs[i].minor = (unsigned)strtoul(minors, &end, 10);
        minors = *end == ',' ? end + 1 : end;
    }
    inited = 1;
    return NVML_SUCCESS;
}

int nvmlShutdown(void)
{
    inited = 0;
    return NVML_SUCCESS;
}

int nvmlDeviceGetCount_v2(unsigned *n)
{
    if (!inited)
        return NVML_ERROR_UNINITIALIZED;
    *n = ndev;
    return NVML_SUCCESS;
}

int nvmlDeviceGetHandleByIndex_v2(unsigned i, void **dev)
{
    if (!inited)
        return NVML_ERROR_UNINITIALIZED;
    if (i >= ndev)
        return NVML_ERROR_INVALID_ARGUMENT;
    *dev = &devs[i];
    return NVML_SUCCESS;
}

int nvmlDeviceGetMinorNumber(void *dev, unsigned *minor)
{
    *minor = ((fake_dev *)dev)->minor;
    return NVML_SUCCESS;
}

int nvmlDeviceGetUtilizationRates(void *dev, nvml_utilization *u)
{
    (void)dev;
    u->gpu = util;
    u->memory = util / 2;
    return NVML_SUCCESS;
}

int nvmlDeviceGetMemoryInfo(void *dev, nvml_memory *m)
{
    (void)dev;
    m->total = total_mb << 20;
    m->used = (used_mb < total_mb ? used_mb : total_mb) << 20;
    m->free = m->total - m->used;
    return NVML_SUCCESS;
}

int nvmlDeviceGetName(void *dev, char *buf, unsigned len)
{
    if ((unsigned)snprintf(buf, len, "Fake GPU %d", ((fake_dev *)dev)->index) >= len)
        return NVML_ERROR_INSUFFICIENT_SIZE;
    return NVML_SUCCESS;
}

int nvmlDeviceGetUUID(void *dev, char *buf, unsigned len)
{
    if ((unsigned)snprintf(buf, len, "GPU-00000000-0000-0000-0000-%012x", ((fake_dev *)dev)->index) >= len)
        return NVML_ERROR_INSUFFICIENT_SIZE;
    return NVML_SUCCESS;
}
