/*
 * index_common.c - helpers shared by the indexing and joining ops.
 */
#include "index_int.h"

#include <stdlib.h>
#include <string.h>

int fw__idx_check_input(const char *op, const char *what, const fw_tensor *x)
{
    if (x == NULL)
        return fw_error_set(FW_EINVAL, "%s: %s is NULL", op, what);
    const fw_backend *b = fw_backend_require(x->device, op);
    if (b == NULL || fw_backend_family(b, b->index, op) == NULL)
        return FW_EDEVICE;
    return 0;
}

static const char *dev_name(fw_device d)
{
    const fw_backend *b = fw_backend_get(d);
    return b ? b->name : d == FW_CUDA ? "cuda" : "?";
}

int fw__idx_same_device(const char *op, const char *what, const fw_tensor *t,
                        const fw_tensor *x)
{
    if (t != NULL && t->device != x->device)
        return fw_error_set(FW_EDEVICE, "%s: %s is on %s, x on %s", op, what,
                            dev_name(t->device), dev_name(x->device));
    return 0;
}

const struct fw_index_kernels *fw__idx_kernels(const char *op, const fw_tensor *x)
{
    const fw_backend *b = fw_backend_require(x->device, op);
    return b ? fw_backend_family(b, b->index, op) : NULL;
}

int fw__idx_on_device(const int64_t **dptr, fw_tensor **keep, fw_device dev,
                      const int64_t *idx, int64_t n)
{
    const fw_backend *b = fw_backend_require(dev, "index");
    int err;

    *keep = NULL;
    *dptr = idx;
    if (b == NULL)
        return FW_EDEVICE;
    if (b->host_accessible)
        return 0;
    if ((err = fw__idx_index_tensor(keep, dev, idx, &n, 1)) < 0)
        return err;
    *dptr = fw__ptr(*keep);
    return 0;
}

int64_t fw__idx_prod(const int64_t *shape, int a, int b)
{
    int64_t p = 1;
    for (int i = a; i < b; i++)
        p *= shape[i];
    return p;
}

int fw__idx_load_index(int64_t **out, int64_t *n, const char *op, fw_tensor *index,
                       int64_t axis_len, int axis, bool allow_negative)
{
    fw_tensor *d = NULL;
    int64_t *v = NULL, cnt;
    int err;

    *out = NULL;
    *n = 0;
    if (index->dtype != FW_INT32 && index->dtype != FW_INT64)
        return fw_error_set(FW_EDTYPE, "%s: index must be int32 or int64, got %s", op,
                            fw_dtype_name(index->dtype));
    if ((err = fw_op_dense(&d, index)) < 0)
        return err;
    if (fw_tensor_data(d) == NULL) {      /* device memory: validate a host copy */
        fw_tensor *h = NULL;
        bool prev = fw_set_grad_enabled(false);
        err = fw_tensor_to(&h, d, FW_CPU);
        fw_set_grad_enabled(prev);
        fw_tensor_unref(d);
        if (err < 0)
            return err;
        d = h;
    }
    cnt = d->numel;
    if ((v = malloc((size_t)(cnt > 0 ? cnt : 1) * sizeof(*v))) == NULL) {
        fw_tensor_unref(d);
        return fw_error_set(FW_ENOMEM, "%s: index of %lld entries", op, (long long)cnt);
    }
    if (d->dtype == FW_INT32) {
        const int32_t *s = fw__ptr(d);
        for (int64_t i = 0; i < cnt; i++)
            v[i] = s[i];
    } else if (cnt > 0) {
        memcpy(v, fw__ptr(d), (size_t)cnt * sizeof(*v));
    }
    fw_tensor_unref(d);
    for (int64_t i = 0; i < cnt; i++) {
        int64_t k = v[i];
        if (allow_negative && k < 0 && k >= -axis_len)
            k += axis_len;
        if (k < 0 || k >= axis_len) {
            if (axis < 0)
                err = fw_error_set(FW_ERANGE, "%s: index %lld out of range [0, %lld)", op,
                                   (long long)v[i], (long long)axis_len);
            else
                err = fw_error_set(FW_ERANGE, "%s: index %lld out of range for axis %d of "
                                   "size %lld", op, (long long)v[i], axis, (long long)axis_len);
            free(v);
            return err;
        }
        v[i] = k;
    }
    *out = v;
    *n = cnt;
    return 0;
}

void fw__idx_scalar_bytes(void *buf, fw_dtype dt, double v)
{
    switch (dt) {
    case FW_FLOAT32: { float f = (float)v; memcpy(buf, &f, sizeof(f)); break; }
    case FW_FLOAT64: memcpy(buf, &v, sizeof(v)); break;
    case FW_FLOAT16: { uint16_t h = fw_float_to_half((float)v); memcpy(buf, &h, 2); break; }
    case FW_BFLOAT16: { uint16_t h = fw_float_to_bf16((float)v); memcpy(buf, &h, 2); break; }
    case FW_INT32: { int32_t i = (int32_t)v; memcpy(buf, &i, sizeof(i)); break; }
    case FW_INT64: { int64_t i = (int64_t)v; memcpy(buf, &i, sizeof(i)); break; }
    case FW_BOOL: *(uint8_t *)buf = v != 0; break;
    case FW_UINT8: *(uint8_t *)buf = (uint8_t)v; break;
    default: break;
    }
}

int fw__idx_index_tensor(fw_tensor **out, fw_device dev, const int64_t *idx,
                         const int64_t *shape, int ndim)
{
    const fw_backend *b = fw_backend_require(dev, "index");
    int err;

    *out = NULL;
    if (b == NULL)
        return FW_EDEVICE;
    if ((err = fw_op_output(out, dev, FW_INT64, shape, ndim)) < 0)
        return err;
    if ((*out)->numel > 0 &&
        (err = b->copy(fw__ptr(*out), dev, idx, FW_CPU,
                       (size_t)(*out)->numel * sizeof(*idx))) < 0) {
        fw_tensor_unref(*out);
        *out = NULL;
        return err;
    }
    return 0;
}

int fw__idx_save_index(fw_node *node, int slot, fw_device dev, const int64_t *idx,
                       const int64_t *shape, int ndim)
{
    fw_tensor *it = NULL;
    int err;

    if ((err = fw__idx_index_tensor(&it, dev, idx, shape, ndim)) == 0)
        err = fw_node_save(node, slot, it);
    fw_tensor_unref(it);
    return err;
}

int fw__idx_along_backward(fw_node *node, fw_tensor **gin, fw_tensor *const *gout)
{
    int axis = ((fw__idx_axis_attr *)fw_node_attr(node))->axis, nd, err;
    const int64_t *xs = fw_node_input_shape(node, 0, &nd);
    fw_tensor *idx = fw_node_saved(node, 0), *g = NULL, *gx = NULL;
    int64_t len = nd ? xs[axis] : 1, k = idx->ndim ? idx->shape[axis] : 1;
    int64_t outer = fw__idx_prod(xs, 0, axis), inner = nd ? fw__idx_prod(xs, axis + 1, nd) : 1;

    if ((err = fw__idx_grad_dense(&g, gout[0])) < 0)
        return err;
    if ((err = fw_op_zeros(&gx, g->device, g->dtype, xs, nd)) < 0)
        goto done;
    const struct fw_index_kernels *kk = fw__idx_kernels("backward", g);
    if (kk == NULL) {
        err = FW_EDEVICE;
        goto done;
    }
    if ((err = kk->scatter_add_along(g->dtype, fw__ptr(gx), fw__ptr(g), fw__ptr(idx), outer,
                                     len, k, inner)) < 0)
        goto done;
    err = fw__idx_grad_finish(&gin[0], gx, fw_node_input_dtype(node, 0));
    gx = NULL;
done:
    fw_tensor_unref(g);
    fw_tensor_unref(gx);
    return err;
}

int fw__idx_grad_dense(fw_tensor **out, fw_tensor *g)
{
    fw_tensor *c = NULL;
    int err;

    *out = NULL;
    if (g->dtype == FW_FLOAT32 || g->dtype == FW_FLOAT64)
        return fw_op_dense(out, g);
    if ((err = fw_cast(&c, g, FW_FLOAT32)) < 0)
        return err;
    err = fw_op_dense(out, c);
    fw_tensor_unref(c);
    return err;
}

int fw__idx_grad_finish(fw_tensor **out, fw_tensor *t, fw_dtype dt)
{
    int err;

    *out = NULL;
    if (t->dtype == dt) {
        *out = t;
        return 0;
    }
    err = fw_cast(out, t, dt);
    fw_tensor_unref(t);
    return err;
}

int fw__idx_map_add(fw_tensor *in, const fw_tensor *out, int ndim,
                    const int64_t *out_shape, const int64_t *in_shape, const int64_t *maps)
{
    const struct fw_index_kernels *k = fw__idx_kernels("backward", in);
    const int64_t *dm;
    fw_tensor *keep = NULL;
    int64_t nmap = 0;
    int err;

    if (k == NULL)
        return FW_EDEVICE;
    for (int d = 0; d < ndim; d++)
        nmap += out_shape[d];
    if ((err = fw__idx_on_device(&dm, &keep, in->device, maps, nmap)) < 0)
        return err;
    err = k->map_add(in->dtype, fw__ptr(in), fw__ptr(out), ndim, out_shape, in_shape, dm);
    fw_tensor_unref(keep);
    return err;
}

int fw__idx_load_multi(int64_t *idx[FW_MAX_DIMS], int64_t *count, int64_t *bshape, int *nb,
                       const char *op, const fw_tensor *x, fw_tensor *const *indices, int n)
{
    int err = 0;
    bool prev;

    for (int i = 0; i < FW_MAX_DIMS; i++)
        idx[i] = NULL;
    *count = 0;
    *nb = 0;
    if (indices == NULL || n < 1 || n > x->ndim)
        return fw_error_set(FW_EINVAL, "%s: %d index tensors for a tensor of rank %d", op, n,
                            x->ndim);
    for (int i = 0; i < n; i++) {
        if ((err = fw__idx_check_input(op, "an index", indices[i])) < 0)
            return err;
        if (indices[i]->dtype != FW_INT32 && indices[i]->dtype != FW_INT64)
            return fw_error_set(FW_EDTYPE, "%s: index %d must be int32 or int64, got %s", op,
                                i, fw_dtype_name(indices[i]->dtype));
        if (i == 0) {
            *nb = indices[0]->ndim;
            memcpy(bshape, indices[0]->shape, (size_t)*nb * sizeof(int64_t));
        } else {
            int64_t t[FW_MAX_DIMS];
            int nt;
            if ((err = fw_op_broadcast_shapes(t, &nt, op, bshape, *nb, indices[i]->shape,
                                              indices[i]->ndim)) < 0)
                return err;
            memcpy(bshape, t, (size_t)nt * sizeof(int64_t));
            *nb = nt;
        }
    }
    prev = fw_set_grad_enabled(false);
    for (int i = 0; i < n && err >= 0; i++) {
        fw_tensor *ie = NULL;
        if ((err = fw_expand(&ie, indices[i], bshape, *nb)) >= 0)
            err = fw__idx_load_index(&idx[i], count, op, ie, x->shape[i], i, true);
        fw_tensor_unref(ie);
    }
    fw_set_grad_enabled(prev);
    if (err < 0) {
        for (int i = 0; i < FW_MAX_DIMS; i++) {
            free(idx[i]);
            idx[i] = NULL;
        }
        *count = 0;
        return err;
    }
    return 0;
}

int fw__idx_unalias(fw_tensor **t, const fw_tensor *x)
{
    fw_tensor *c = NULL;
    bool prev;
    int err;

    if ((*t)->storage != x->storage)
        return 0;
    prev = fw_set_grad_enabled(false);
    err = fw_tensor_clone(&c, *t);
    fw_set_grad_enabled(prev);
    if (err < 0)
        return err;
    fw_tensor_unref(*t);
    *t = c;
    return 0;
}
