/*
 * fw_int.h - tensor internals, private to framework/ (never included by
 * other modules or by the public headers).
 *
 * A tensor is a handle: dtype, device, shape and strides (elements) and an
 * offset (elements) into a ref-counted storage. Views share the storage.
 * Element (i0, ..., in) lives at storage->data + (offset + sum ik*strides[k])
 * * dtype size. Handles and storages come from the caching allocator.
 */
#ifndef FW_INT_H
#define FW_INT_H

#include "fw/tensor.h"

#include <stdatomic.h>

struct fw_node;

typedef struct fw_storage {
    atomic_int refs;
    fw_device device;
    void *data;             /* device memory; 64-byte aligned when ours */
    size_t nbytes;          /* usable bytes at data */
    size_t block;           /* allocator block size; 0 for external memory */
    void (*release)(void *data, void *payload); /* external memory only */
    void *payload;
} fw_storage;

struct fw_tensor {
    atomic_int refs;
    fw_dtype dtype;
    fw_device device;
    int ndim;
    bool stop_gradient;             /* always true for non-float dtypes, see: */
    bool int_grad_flag;             /* stop_gradient=false asked of a non-float tensor */
    int out_idx;                    /* which output of grad_fn this is */
    int64_t numel;
    int64_t offset;                 /* elements into storage */
    int64_t shape[FW_MAX_DIMS];
    int64_t strides[FW_MAX_DIMS];   /* elements */
    fw_storage *storage;
    fw_tensor *grad;                /* accumulated gradient (leaves) */
    struct fw_node *grad_fn;        /* NULL for a leaf; owned ref */
    struct fw_hook *hooks;          /* gradient hooks of a leaf (autograd.c) */
    void *user;                     /* language binding slot */
};

/* Gradient hooks (fw_tensor_register_hook): a list on a leaf tensor or on a
 * node (per output). */
typedef struct fw_hook {
    fw_grad_hook_fn fn;
    void *ctx;
    void (*free_ctx)(void *ctx);
    int out_idx;
    struct fw_hook *next;
} fw_hook;
void fw__hooks_free(fw_hook *h);

/* Element pointer of the first element (host-addressable devices). */
static inline void *fw__ptr(const fw_tensor *t)
{
    static const unsigned char sizes[FW_NDTYPES] = {4, 8, 2, 2, 4, 8, 1, 1, 8, 16};
    return (char *)t->storage->data + t->offset * (int64_t)sizes[t->dtype];
}

/* Saturating double -> int64 (a plain cast of an out-of-range value is
 * undefined); NaN gives 0. */
static inline int64_t fw__sat_i64(double v)
{
    if (v != v)
        return 0;
    if (v >= 9223372036854775807.0)
        return INT64_MAX;
    if (v <= -9223372036854775808.0)
        return INT64_MIN;
    return (int64_t)v;
}

/* Store v as one element of dtype dt at p. Float -> int truncates toward
 * zero; out-of-range values saturate and NaN becomes 0; uint8 wraps like
 * NumPy. Shared by the core's constructors and the CPU cast-copy. */
static inline void fw__store_double(void *p, fw_dtype dt, double v)
{
    switch (dt) {
    case FW_FLOAT32: *(float *)p = (float)v; break;
    case FW_FLOAT64: *(double *)p = v; break;
    case FW_FLOAT16: *(uint16_t *)p = fw_float_to_half((float)v); break;
    case FW_BFLOAT16: *(uint16_t *)p = fw_float_to_bf16((float)v); break;
    case FW_INT32: *(int32_t *)p = v != v ? 0 : v >= 2147483647.0 ? INT32_MAX
                                 : v <= -2147483648.0 ? INT32_MIN : (int32_t)v; break;
    case FW_INT64: *(int64_t *)p = fw__sat_i64(v); break;
    case FW_BOOL: *(uint8_t *)p = v != 0; break;
    case FW_UINT8: *(uint8_t *)p = (uint8_t)fw__sat_i64(v); break;
    case FW_COMPLEX64: ((float *)p)[0] = (float)v; ((float *)p)[1] = 0; break;
    case FW_COMPLEX128: ((double *)p)[0] = v; ((double *)p)[1] = 0; break;
    default: break;
    }
}

/* Whether t requires grad under the current grad mode. */
static inline bool fw__requires_grad(const fw_tensor *t)
{
    return t != NULL && !t->stop_gradient;
}

/* Contiguous C-order strides for shape; returns numel. */
int64_t fw__contiguous_strides(int64_t *strides, const int64_t *shape, int ndim);

/* A new handle over `st` (ref taken) with the given geometry. */
int fw__tensor_view(fw_tensor **out, fw_tensor *base, const int64_t *shape,
                    const int64_t *strides, int ndim, int64_t offset);

/* Allocate a storage of nbytes on dev (refs = 1). */
int fw__storage_new(fw_storage **out, fw_device dev, size_t nbytes);
void fw__storage_unref(fw_storage *s);

/* Node refcount (the autograd engine, core/autograd.c). */
void fw__node_ref(struct fw_node *n);
void fw__node_unref(struct fw_node *n);

#endif
