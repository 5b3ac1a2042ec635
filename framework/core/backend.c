/* backend.c - the device backend registry. */
#include "fw_backend.h"
#include "fw_int.h"
#include "fw_plugin.h"

#include <stdatomic.h>

static const fw_backend *_Atomic table[FW_NDEVICES];

int fw_backend_register(const fw_backend *b)
{
    if (b == NULL || (unsigned)b->device >= FW_NDEVICES)
        return fw_error_set(FW_EINVAL, "backend_register: bad backend");
    atomic_store(&table[b->device], b);
    return 0;
}

const fw_backend *fw_backend_get(fw_device dev)
{
    const fw_backend *b;

    if ((unsigned)dev >= FW_NDEVICES)
        return NULL;
    b = atomic_load_explicit(&table[dev], memory_order_acquire);
    if (b == NULL && dev == FW_CPU) {
        b = fw__cpu_backend();
        atomic_store(&table[FW_CPU], b);
    } else if (b == NULL && dev == FW_CUDA) {
        fw__backend_load_cuda();    /* once: registers the plugin's table */
        b = atomic_load_explicit(&table[dev], memory_order_acquire);
    }
    return b;
}

const fw_backend *fw_backend_require(fw_device dev, const char *op)
{
    const fw_backend *b = fw_backend_get(dev);
    if (b == NULL && dev == FW_CUDA)
        fw_error_set(FW_EDEVICE, "%s: no backend for cuda: %s", op, fw__backend_load_reason(dev));
    else if (b == NULL)
        fw_error_set(FW_EDEVICE, "%s: no backend for this device", op);
    return b;
}

const void *fw_backend_family(const fw_backend *b, const void *fam, const char *op)
{
    if (fam == NULL)
        fw_error_set(FW_EDEVICE, "%s: not supported on %s", op, b ? b->name : "this device");
    return fam;
}

bool fw_device_available(fw_device dev) { return fw_backend_get(dev) != NULL; }

void fw__kview(fw_kview *v, const fw_tensor *t)
{
    v->data = fw__ptr(t);
    v->dtype = t->dtype;
    v->ndim = t->ndim;
    for (int i = 0; i < t->ndim; i++) {
        v->shape[i] = t->shape[i];
        v->strides[i] = t->strides[i];
    }
}
