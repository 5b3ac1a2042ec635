/*
 * nn_common.c - validation, reduction and autograd helpers shared by the nn ops.
 */
#include <stdlib.h>
#include <string.h>

#include "../core/fw_op.h"
#include "../cpu/nn_kernels.h"
#include "fw/nn.h"

int fw__nn_check_float(const char *op, const char *what, const fw_tensor *x)
{
    if (x == NULL)
        return fw_error_set(FW_EINVAL, "%s: %s is NULL", op, what);
    if (x->dtype != FW_FLOAT32 && x->dtype != FW_FLOAT64)
        return fw_error_set(FW_EDTYPE, "%s: %s must be float32 or float64, got %s", op, what,
                            fw_dtype_name(x->dtype));
    if (x->device != FW_CPU)
        return fw_error_set(FW_EDEVICE, "%s: %s is not on the CPU (only CPU kernels exist)",
                            op, what);
    return 0;
}

int fw__nn_check_optional_like(const char *op, const char *what, const fw_tensor *x,
                               const fw_tensor *ref)
{
    int err;
    if (x == NULL)
        return 0;
    if ((err = fw__nn_check_float(op, what, x)) < 0)
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

int fw__nn_labels(int64_t **out, const char *op, const char *what, const fw_tensor *label,
                  int64_t n, int64_t skip)
{
    fw_tensor *d = NULL;
    int64_t *ids = NULL, cnt;
    int err;

    *out = NULL;
    if (label == NULL)
        return fw_error_set(FW_EINVAL, "%s: %s is NULL", op, what);
    if (label->dtype != FW_INT64 && label->dtype != FW_INT32)
        return fw_error_set(FW_EDTYPE, "%s: %s must be int32 or int64, got %s", op, what,
                            fw_dtype_name(label->dtype));
    if (label->device != FW_CPU)
        return fw_error_set(FW_EDEVICE, "%s: %s is not on the CPU", op, what);
    cnt = label->numel;
    if ((ids = malloc((size_t)(cnt > 0 ? cnt : 1) * sizeof(int64_t))) == NULL)
        return fw_error_set(FW_ENOMEM, "%s: %s copy", op, what);
    if ((err = fw_op_dense(&d, (fw_tensor *)label)) < 0)
        goto fail;
    if (label->dtype == FW_INT64) {
        const int64_t *src = fw__ptr(d);
        for (int64_t i = 0; i < cnt; i++)
            ids[i] = src[i];
    } else {
        const int32_t *src = fw__ptr(d);
        for (int64_t i = 0; i < cnt; i++)
            ids[i] = src[i];
    }
    fw_tensor_unref(d);
    d = NULL;
    for (int64_t i = 0; i < cnt; i++) {
        if (ids[i] == skip)
            continue;
        if (ids[i] < 0 || ids[i] >= n) {
            err = fw_error_set(FW_ERANGE, "%s: %s %lld out of range [0, %lld)", op, what,
                               (long long)ids[i], (long long)n);
            goto fail;
        }
    }
    *out = ids;
    return 0;
fail:
    fw_tensor_unref(d);
    free(ids);
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

int fw__nn_grad_like(fw_tensor **out, fw_node *n, int input)
{
    int ndim;
    const int64_t *shape = fw_node_input_shape(n, input, &ndim);
    return fw_op_output(out, FW_CPU, fw_node_input_dtype(n, input), shape, ndim);
}

int fw__nn_grad1_begin(fw_tensor **g, fw_tensor **dx, fw_node *n, fw_tensor *gout)
{
    int err;

    if ((err = fw_op_dense(g, gout)) < 0)
        return err;
    if ((err = fw__nn_grad_like(dx, n, 0)) < 0) {
        fw_tensor_unref(*g);
        *g = NULL;
    }
    return err;
}

int fw__nn_grads_new(fw_tensor **d, fw_node *n, int count)
{
    int err = 0;

    for (int i = 0; i < count; i++)
        d[i] = NULL;
    for (int i = 0; i < count && err == 0; i++)
        if (fw_node_needs_grad(n, i))
            err = fw__nn_grad_like(&d[i], n, i);
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
