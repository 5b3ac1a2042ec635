/*
 * gpu_nvml.c - the one door to NVML: opened at run time with dlopen, never
 * linked, so `eddy` runs on hosts without an NVIDIA driver (no GPUs then,
 * never made-up ones). Device discovery (sched_open) and the live figures
 * (gpu_usage.c) both come through here.
 *
 * Which library: $EDDY_NVML_LIB when set (an absolute path: the tests' fake
 * NVML, tests/integration/gpu/fake_nvml.c, or a driver installed off the
 * loader's path), else "libnvidia-ml.so.1" by the loader's search. NVML is
 * initialised once per process and stays loaded: nvmlShutdown would pull it
 * from under a concurrent reading.
 *
 * Only NVML, never libcuda: initialising CUDA in the server would make a
 * context on a device and take its memory away from the jobs.
 */
#include "sched.h"
#include "sched_int.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
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
    int (*name)(void *, char *, unsigned);
    int (*uuid)(void *, char *, unsigned);
} lib;
static pthread_once_t lib_once = PTHREAD_ONCE_INIT;
static int lib_ok;
static char lib_why[256] = "not opened";

static void lib_open(void)
{
    const char *path = getenv("EDDY_NVML_LIB");
    void *h;
    int (*init)(void);

    if (path == NULL || path[0] == '\0')
        path = "libnvidia-ml.so.1";
    if ((h = dlopen(path, RTLD_NOW | RTLD_LOCAL)) == NULL) {
        const char *e = dlerror();
        snprintf(lib_why, sizeof(lib_why), "%s", e ? e : path);
        return;
    }
    init = (int (*)(void))dlsym(h, "nvmlInit_v2");
    lib.count = (int (*)(unsigned *))dlsym(h, "nvmlDeviceGetCount_v2");
    lib.by_index = (int (*)(unsigned, void **))dlsym(h, "nvmlDeviceGetHandleByIndex_v2");
    lib.minor = (int (*)(void *, unsigned *))dlsym(h, "nvmlDeviceGetMinorNumber");
    lib.util = (int (*)(void *, nvml_utilization *))dlsym(h, "nvmlDeviceGetUtilizationRates");
    lib.mem = (int (*)(void *, nvml_memory *))dlsym(h, "nvmlDeviceGetMemoryInfo");
    lib.name = (int (*)(void *, char *, unsigned))dlsym(h, "nvmlDeviceGetName");
    lib.uuid = (int (*)(void *, char *, unsigned))dlsym(h, "nvmlDeviceGetUUID");
    if (!init || !lib.count || !lib.by_index || !lib.util || !lib.mem) {
        snprintf(lib_why, sizeof(lib_why), "%s: not NVML (a symbol is missing)", path);
        dlclose(h);
        return;
    }
    if (init() != 0) {
        snprintf(lib_why, sizeof(lib_why), "%s: nvmlInit_v2 failed (no driver loaded?)", path);
        dlclose(h);
        return;
    }
    lib_why[0] = '\0';
    lib_ok = 1;
}

static int real_count(unsigned *n) { return lib.count(n); }
static int real_by_index(unsigned i, void **dev) { return lib.by_index(i, dev); }

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

static int real_name(void *dev, char *buf, unsigned len)
{
    return lib.name ? lib.name(dev, buf, len) : 999;
}

static int real_uuid(void *dev, char *buf, unsigned len)
{
    return lib.uuid ? lib.uuid(dev, buf, len) : 999;
}

static const sched_nvml real_api = {real_count, real_by_index, real_minor, real_util,
                                    real_mem,   real_name,     real_uuid};

const sched_nvml *sched__nvml(const char **why)
{
    pthread_once(&lib_once, lib_open);
    if (why)
        *why = lib_why;
    return lib_ok ? &real_api : NULL;
}

/* A string NVML wrote into buf (cap bytes): printable ASCII only, else "". */
static void clean_text(char *buf, size_t cap)
{
    buf[cap - 1] = '\0';
    for (char *p = buf; *p; p++)
        if ((unsigned char)*p < 0x20 || (unsigned char)*p > 0x7e) {
            buf[0] = '\0';
            return;
        }
}

int sched__gpu_discover(sched_gpu *out, int max, const sched_nvml *api)
{
    unsigned count = 0, minor;
    int n = 0;

    if (api == NULL && (api = sched__nvml(NULL)) == NULL)
        return 0;
    if (api->device_count(&count) != 0)
        return 0;
    for (unsigned i = 0; i < count && n < max && i < 256; i++) {
        sched_gpu *g = &out[n];
        void *dev = NULL;
        uint64_t total = 0, free_b = 0, used = 0;
        bool dup = false;

        if (api->device_by_index(i, &dev) != 0 || dev == NULL)
            continue;
        memset(g, 0, sizeof(*g));
        g->nvml_index = (int)i;
        /* the device node's minor number; a driver that will not say has
         * them in NVML's order */
        g->minor = api->minor_number && api->minor_number(dev, &minor) == 0 && minor < 256 ? (int)minor : (int)i;
        for (int k = 0; k < n; k++)
            dup = dup || out[k].minor == g->minor;
        if (dup)
            continue;   /* two devices on one node: hand out neither twice */
        if (api->name && api->name(dev, g->name, sizeof(g->name)) == 0)
            clean_text(g->name, sizeof(g->name));
        else
            g->name[0] = '\0';
        if (api->uuid && api->uuid(dev, g->uuid, sizeof(g->uuid)) == 0)
            clean_text(g->uuid, sizeof(g->uuid));
        else
            g->uuid[0] = '\0';
        /* CUDA_VISIBLE_DEVICES takes "GPU-<hex and dashes>" only */
        if (strncmp(g->uuid, "GPU-", 4) != 0 || strspn(g->uuid + 4, "0123456789abcdefABCDEF-") != strlen(g->uuid + 4))
            g->uuid[0] = '\0';
        g->memory_total_bytes = api->memory(dev, &total, &free_b, &used) == 0 && total <= (uint64_t)INT64_MAX
                                    ? (int64_t)total
                                    : -1;
        g->util_percent = -1;
        g->memory_used_bytes = -1;
        n++;
    }
    /* in minor order: the lowest free node is handed out first */
    for (int i = 1; i < n; i++)
        for (int k = i; k > 0 && out[k - 1].minor > out[k].minor; k--) {
            sched_gpu t = out[k];
            out[k] = out[k - 1];
            out[k - 1] = t;
        }
    return n;
}
