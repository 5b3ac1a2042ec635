/*
 * gpu_usage.c - what a job's GPUs are doing now, from NVML, for the live
 * meters (sched_job_usage) and the GPU figures of a job, a kernel and the
 * admin overview. NVML comes through gpu_nvml.c (dlopen, $EDDY_NVML_LIB):
 * eddy never links it, and a host without an NVIDIA driver simply has no GPU
 * figures (-1), never made-up ones.
 *
 * A job's devices are the /dev/nvidia<k> nodes it was given; k is the
 * device's minor number, which need not be NVML's index (NVML orders by
 * PCI bus), so devices are matched by nvmlDeviceGetMinorNumber.
 */
#include "sched.h"
#include "sched_int.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

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
        out[i] = (sched_gpu_usage){devices[i], -1, -1, -1, ""};
    if (api == NULL && (api = sched__nvml(NULL)) == NULL)
        return 0;
    if (n <= 0 || api->device_count(&count) != 0)
        return 0;
    for (int i = 0; i < n; i++) {
        void *dev = find_device(api, count, devices[i]);
        unsigned gpu = 0, mem_pct = 0;
        uint64_t total = 0, free_b = 0, used = 0;
        int any = 0;
        if (dev == NULL)
            continue;
        if (api->name && api->name(dev, out[i].name, sizeof(out[i].name)) == 0) {
            out[i].name[sizeof(out[i].name) - 1] = '\0';
            for (char *p = out[i].name; *p; p++)
                if ((unsigned char)*p < 0x20 || (unsigned char)*p > 0x7e)
                    *p = '?';
        } else {
            out[i].name[0] = '\0';
        }
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
