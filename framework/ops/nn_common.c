/*
 * nn_common.c - validation, reduction and autograd helpers shared by the nn ops.
 */
#include <string.h>

#include "fw/nn.h"
#include "nn_int.h"

static const char *dev_name(fw_device d)
{
    const fw_backend *b = fw_backend_get(d);
    if (b != NULL && b->name != NULL)
        return b->name;
    return d == FW_CPU ? "cpu" : d == FW_CUDA ? "cuda" : "an unknown device";
}

const fw_nn_kernels *fw__nn_kernels_missing(const char *op, fw_device dev)
{
    const fw_backend *b = fw_backend_require(dev, op);
    return b != NULL ? fw_backend_family(b, b->nn, op) : NULL;
}

int fw__nn_check_float(const char *op, const char *what, const fw_tensor *x)
{
    if (x == NULL)
        return fw_error_set(FW_EINVAL, "%s: %s is NULL", op, what);
    if (x->dtype != FW_FLOAT32 && x->dtype != FW_FLOAT64) {
        /* float16/bfloat16 only where the device computes them natively */
        const fw_backend *b = fw_dtype_is_float(x->dtype) ? fw_backend_get(x->device) : NULL;
        if (b == NULL || b->nn == NULL || !(b->nn->dtypes & (1u << x->dtype)))
            return fw_error_set(FW_EDTYPE, "%s: %s must be float32 or float64, got %s", op,
                                what, fw_dtype_name(x->dtype));
    }
    return 0;
}

int fw__nn_check_device(const char *op, const char *what, const fw_tensor *x,
                        const char *ref_what, const fw_tensor *ref)
{
    if (x->device == ref->device)
        return 0;
    return fw_error_set(FW_EDEVICE, "%s: %s is on %s, %s on %s", op, ref_what,
                        dev_name(ref->device), what, dev_name(x->device));
}

int fw__nn_check_optional_like(const char *op, const char *what, const fw_tensor *x,
                               const fw_tensor *ref)
{
    int err;
    if (x == NULL)
        return 0;
    if ((err = fw__nn_check_float(op, what, x)) < 0 ||
        (err = fw__nn_check_device(op, what, x, "input", ref)) < 0)
        return err;
    if (x->dtype != ref->dtype)
        return fw_error_set(FW_EDTYPE, "%s: %s is %s but the input is %s", op, what,
                            fw_dtype_name(x->dtype), fw_dtype_name(ref->dtype));
    return 0;
}

int fw__nn_check_rank(const char *op, const char *what, const fw_tensor *x, int rank,
                      const char *layout)
{
    char buf[128];
    if (x->ndim == rank)
        return 0;
    return fw_error_set(FW_ESHAPE, "%s: %s must be %d-D %s, got %s", op, what, rank, layout,
                        fw_shape_format(buf, sizeof(buf), x->shape, x->ndim));
}

int fw__nn_host(fw_tensor **out, fw_tensor *t)
{
    const fw_backend *b = fw_backend_get(t->device);
    fw_tensor *d = NULL;
    int err;

    *out = NULL;
    if ((err = fw_op_dense(&d, t)) < 0)
        return err;
    if (t->device == FW_CPU || (b != NULL && b->host_accessible)) {
        *out = d;
        return 0;
    }
    err = fw__nn_to_device(&d, FW_CPU);
    if (err < 0) {
        fw_tensor_unref(d);
        return err;
    }
    *out = d;
    return 0;
}

int fw__nn_to_device(fw_tensor **t, fw_device dev)
{
    fw_tensor *m = NULL;
    bool grad;
    int err;

    if ((*t)->device == dev)
        return 0;
    /* a constant the op made: no history to carry */
    grad = fw_set_grad_enabled(false);
    err = fw_tensor_to(&m, *t, dev);
    fw_set_grad_enabled(grad);
    if (err < 0)
        return err;
    fw_tensor_unref(*t);
    *t = m;
    return 0;
}

int fw__nn_copy(fw_tensor *dst, const fw_tensor *src, size_t nbytes)
{
    const fw_backend *b = fw_backend_require(dst->device, "copy");
    if (b == NULL)
        return fw_error_code();
    return b->copy(fw__ptr(dst), dst->device, fw__ptr(src), src->device, nbytes);
}

int fw__nn_labels(fw_tensor **out, fw_tensor **host, const char *op, const char *what,
                  const fw_tensor *label, int64_t n, int64_t skip, const char *ref_what,
                  const fw_tensor *ref)
{
    fw_tensor *h = NULL, *ids = NULL;
    const void *src;
    int64_t cnt, *v;
    int err;

    *out = NULL;
    if (host != NULL)
        *host = NULL;
    if (label == NULL)
        return fw_error_set(FW_EINVAL, "%s: %s is NULL", op, what);
    if (label->dtype != FW_INT64 && label->dtype != FW_INT32)
        return fw_error_set(FW_EDTYPE, "%s: %s must be int32 or int64, got %s", op, what,
                            fw_dtype_name(label->dtype));
    if ((err = fw__nn_check_device(op, what, label, ref_what, ref)) < 0)
        return err;
    cnt = label->numel;
    if ((err = fw_op_output(&ids, FW_CPU, FW_INT64, &cnt, 1)) < 0)
        return err;
    /* a dense label on the CPU is read in place (no copy, no refs) */
    if (label->device != FW_CPU || !fw_tensor_is_contiguous(label)) {
        if ((err = fw__nn_host(&h, (fw_tensor *)label)) < 0)
            goto fail;
        src = fw__ptr(h);
    } else {
        src = fw__ptr(label);
    }
    v = fw__ptr(ids);
    if (label->dtype == FW_INT64) {
        if (cnt > 0)
            memcpy(v, src, (size_t)cnt * sizeof(int64_t));
    } else {
        for (int64_t i = 0; i < cnt; i++)
            v[i] = ((const int32_t *)src)[i];
    }
    for (int64_t i = 0; i < cnt; i++) {
        if (v[i] == skip)
            continue;
        if (v[i] < 0 || v[i] >= n) {
            err = fw_error_set(FW_ERANGE, "%s: %s %lld out of range [0, %lld)", op, what,
                               (long long)v[i], (long long)n);
            goto fail;
        }
    }
    fw_tensor_unref(h);
    h = NULL;
    if (ref->device != FW_CPU) {
        fw_tensor *m = fw_tensor_ref(ids);
        if ((err = fw__nn_to_device(&m, ref->device)) < 0) {
            fw_tensor_unref(m);
            goto fail;
        }
        if (host != NULL)
            *host = ids; /* the CPU copy */
        else
            fw_tensor_unref(ids);
        ids = m;
    }
    *out = ids;
    return 0;
fail:
    fw_tensor_unref(h);
    fw_tensor_unref(ids);
    return err;
}

int fw__nn_reduce(fw_tensor **out, fw_tensor *loss, int reduction, const char *op)
{
    *out = NULL;
    switch (reduction) {
    case FW_REDUCTION_NONE:
        *out = fw_tensor_ref(loss);
        return 0;
    case FW_REDUCTION_SUM:
        return fw_sum(out, loss, NULL, 0, false);
    case FW_REDUCTION_MEAN:
        return fw_mean(out, loss, NULL, 0, false);
    default:
        return fw_error_set(FW_EINVAL, "%s: reduction %d is not none, mean or sum", op,
                            reduction);
    }
}

int fw__nn_grad_like(fw_tensor **out, fw_node *n, int input, fw_device dev)
{
    int ndim;
    const int64_t *shape = fw_node_input_shape(n, input, &ndim);
    return fw_op_output(out, dev, fw_node_input_dtype(n, input), shape, ndim);
}

int fw__nn_grad1_begin(fw_tensor **g, fw_tensor **dx, fw_node *n, fw_tensor *gout)
{
    int err;

    if ((err = fw_op_dense(g, gout)) < 0)
        return err;
    if ((err = fw__nn_grad_like(dx, n, 0, gout->device)) < 0) {
        fw_tensor_unref(*g);
        *g = NULL;
    }
    return err;
}

int fw__nn_grads_new(fw_tensor **d, fw_node *n, int count, fw_device dev)
{
    int err = 0;

    for (int i = 0; i < count; i++)
        d[i] = NULL;
    for (int i = 0; i < count && err == 0; i++)
        if (fw_node_needs_grad(n, i))
            err = fw__nn_grad_like(&d[i], n, i, dev);
    if (err < 0)
        fw__nn_grads_drop(d, count);
    return err;
}

int fw__nn_record(const char *op, fw_backward_fn backward, int n_in, fw_tensor *const *ins,
                  fw_tensor *y, const void *attr, size_t attr_size, int n_saved,
                  fw_tensor *const *saved)
{
    fw_node *node;
    int err;

    if ((err = fw_node_record(&node, op, backward, n_in, ins, 1, &y, n_saved, attr_size)) < 0)
        return err;
    if (node == NULL)
        return 0;
    memcpy(fw_node_attr(node), attr, attr_size);
    for (int i = 0; i < n_saved; i++)
        if (saved[i] != NULL && (err = fw_node_save(node, i, saved[i])) < 0)
            return err;
    return 0;
}

void fw__nn_grads_drop(fw_tensor **d, int count)
{
    for (int i = 0; i < count; i++) {
        fw_tensor_unref(d[i]);
        d[i] = NULL;
    }
}

void *fw__nn_ptr(const fw_tensor *t)
{
    return t != NULL ? fw__ptr(t) : NULL;
}
