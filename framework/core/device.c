/*
 * device.c - fw/device.h: which devices exist, the default and current
 * ones, synchronisation and memory counters. The CPU is one always-ready
 * device (its counters come from the caching allocator, core/alloc.c);
 * FW_CUDA answers through its backend's fw_device_ops (b->dev), and has no
 * devices when the plugin did not load (core/backend_load.c says why).
 */
#include "fw_alloc.h"
#include "fw_backend.h"
#include "fw_int.h"
#include "fw_plugin.h"

#include "fw/device.h"

#include <stdatomic.h>
#include <string.h>

static _Atomic int default_device = FW_CPU;

bool fw_device_compiled(fw_device dev)
{
    if (dev == FW_CPU)
        return true;
#ifdef EDDY_FW_CUDA_BUILT
    return dev == FW_CUDA;
#else
    return false;
#endif
}

/* The device ops of a usable dev, or NULL with FW_EDEVICE set. */
static const fw_device_ops *ops_of(fw_device dev, const char *op, const fw_backend **bout)
{
    const fw_backend *b;

    if ((unsigned)dev >= FW_NDEVICES) {
        fw_error_set(FW_EDEVICE, "%s: unknown device %d", op, (int)dev);
        return NULL;
    }
    b = fw_backend_require(dev, op);
    if (b == NULL)
        return NULL;
    if (bout)
        *bout = b;
    if (b->dev == NULL)
        fw_error_set(FW_EDEVICE, "%s: %s has no device queries", op, b->name);
    return b->dev;
}

int fw_device_count(fw_device dev)
{
    const fw_backend *b;

    if (dev == FW_CPU)
        return 1;
    if ((unsigned)dev >= FW_NDEVICES)
        return 0;
    b = fw_backend_get(dev);
    if (b == NULL || b->dev == NULL || b->dev->count == NULL)
        return 0;
    int n = b->dev->count();
    return n > 0 ? n : 0;
}

const char *fw_device_unavailable_reason(fw_device dev)
{
    if (dev == FW_CPU)
        return "";
    if ((unsigned)dev >= FW_NDEVICES)
        return "unknown device";
    if (fw_backend_get(dev) != NULL)
        return fw_device_count(dev) > 0 ? "" : "no CUDA device";
    return fw__backend_load_reason(dev);
}

int fw_device_set_default(fw_device dev)
{
    if (dev != FW_CPU && fw_device_count(dev) <= 0) {
        if ((unsigned)dev >= FW_NDEVICES)
            return fw_error_set(FW_EDEVICE, "set_device: unknown device %d", (int)dev);
        return fw_error_set(FW_EDEVICE, "set_device: no CUDA device (%s)",
                            fw_device_unavailable_reason(dev));
    }
    atomic_store(&default_device, (int)dev);
    return 0;
}

fw_device fw_device_default(void) { return (fw_device)atomic_load_explicit(&default_device, memory_order_relaxed); }

/* index -1 means the current device; anything else must be in [0, count). */
static int check_index(fw_device dev, const fw_device_ops *ops, int *index, const char *op)
{
    int n = ops->count ? ops->count() : 1;

    if (*index == -1)
        *index = ops->current ? ops->current() : 0;
    if (*index < 0 || *index >= n)
        return fw_error_set(FW_EDEVICE, "%s: device index %d out of range (%d %s device%s)",
                            op, *index, n, dev == FW_CUDA ? "CUDA" : "CPU", n == 1 ? "" : "s");
    return 0;
}

int fw_device_set_current(fw_device dev, int index)
{
    const fw_device_ops *ops;
    int err;

    if (dev == FW_CPU)
        return index == 0 ? 0
                          : fw_error_set(FW_EDEVICE, "set_device: cpu has one device, not %d", index);
    if ((ops = ops_of(dev, "set_device", NULL)) == NULL)
        return FW_EDEVICE;
    if (index < 0)
        return fw_error_set(FW_EDEVICE, "set_device: device index %d out of range", index);
    if ((err = check_index(dev, ops, &index, "set_device")) < 0)
        return err;
    return ops->set_current ? ops->set_current(index) : 0;
}

int fw_device_current(fw_device dev)
{
    const fw_backend *b;

    if (dev == FW_CPU || (unsigned)dev >= FW_NDEVICES)
        return 0;
    b = fw_backend_get(dev);
    if (b == NULL || b->dev == NULL || b->dev->current == NULL)
        return 0;
    return b->dev->current();
}

int fw_device_synchronize(fw_device dev, int index)
{
    const fw_device_ops *ops;
    int err;

    if (dev == FW_CPU)
        return index == 0 || index == -1
                   ? 0 : fw_error_set(FW_EDEVICE, "synchronize: cpu has one device, not %d", index);
    if ((ops = ops_of(dev, "synchronize", NULL)) == NULL)
        return FW_EDEVICE;
    if ((err = check_index(dev, ops, &index, "synchronize")) < 0)
        return err;
    return ops->synchronize ? ops->synchronize(index) : 0;
}

int fw_device_properties(fw_device dev, int index, fw_device_props *out)
{
    const fw_device_ops *ops;
    int err;

    if (out == NULL)
        return fw_error_set(FW_EINVAL, "get_device_properties: NULL output");
    memset(out, 0, sizeof(*out));
    if (dev == FW_CPU) {
        if (index != 0 && index != -1)
            return fw_error_set(FW_EDEVICE, "get_device_properties: cpu has one device, not %d",
                                index);
        strcpy(out->name, "cpu");
        return 0;
    }
    if ((ops = ops_of(dev, "get_device_properties", NULL)) == NULL)
        return FW_EDEVICE;
    if ((err = check_index(dev, ops, &index, "get_device_properties")) < 0)
        return err;
    if (ops->properties == NULL)
        return fw_error_set(FW_EUNSUPPORTED, "get_device_properties: not supported");
    return ops->properties(index, out);
}

int fw_device_memory_stats(fw_device dev, int index, fw_device_memory *out)
{
    const fw_device_ops *ops;
    int err;

    if (out == NULL)
        return fw_error_set(FW_EINVAL, "memory_stats: NULL output");
    memset(out, 0, sizeof(*out));
    if (dev == FW_CPU) {
        fw_mem_stats st;
        if (index != 0 && index != -1)
            return fw_error_set(FW_EDEVICE, "memory_stats: cpu has one device, not %d", index);
        fw_mem_stats_get(&st, FW_CPU);
        out->allocated = out->peak_allocated = st.bytes_in_use;
        out->reserved = out->peak_reserved = st.bytes_in_use + st.bytes_cached;
        return 0;
    }
    if ((ops = ops_of(dev, "memory_stats", NULL)) == NULL)
        return FW_EDEVICE;
    if ((err = check_index(dev, ops, &index, "memory_stats")) < 0)
        return err;
    if (ops->memory_stats == NULL)
        return fw_error_set(FW_EUNSUPPORTED, "memory_stats: not supported");
    return ops->memory_stats(index, out);
}

int fw_device_reset_peak(fw_device dev, int index)
{
    const fw_device_ops *ops;
    int err;

    if (dev == FW_CPU)
        return 0;
    if ((ops = ops_of(dev, "reset_peak", NULL)) == NULL)
        return FW_EDEVICE;
    if ((err = check_index(dev, ops, &index, "reset_peak")) < 0)
        return err;
    return ops->reset_peak ? ops->reset_peak(index) : 0;
}

int fw_device_empty_cache(fw_device dev)
{
    const fw_device_ops *ops;

    if (dev == FW_CPU) {
        fw_mem_empty_cache(FW_CPU);
        return 0;
    }
    if ((ops = ops_of(dev, "empty_cache", NULL)) == NULL)
        return FW_EDEVICE;
    return ops->empty_cache ? ops->empty_cache() : 0;
}
