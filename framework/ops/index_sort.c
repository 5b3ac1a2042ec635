/*
 * index_sort.c - topk, sort and argsort (fw/index.h), with backward for the
 * values (the gradient scatters back to the positions the indices name).
 */
#include "index_int.h"

#include <stdlib.h>
#include <string.h>

typedef fw__idx_axis_attr axis_attr;

/* k < 0: the whole axis. Either out may be NULL. */
static int sort_impl(fw_tensor **values, fw_tensor **indices, const char *op, fw_tensor *x,
                     int64_t k, int axis, bool descending)
{
    fw_tensor *xd = NULL, *v = NULL, *ix = NULL;
    int64_t shape[FW_MAX_DIMS], len, outer, inner;
    int ax = 0, err;
    fw_node *node;
    char b[96];

    if (values)
        *values = NULL;
    if (indices)
        *indices = NULL;
    if ((err = fw__idx_check_input(op, "x", x)) < 0)
        return err;
    if ((err = fw_op_axis(&ax, op, axis, x->ndim)) < 0)
        return err;
    if (x->ndim == 0)
        ax = 0;
    len = x->ndim ? x->shape[ax] : 1;
    if (k < 0)
        k = len;
    else if (k > len)
        return fw_error_set(FW_EINVAL, "%s: k %lld is larger than axis %d of shape %s", op,
                            (long long)k, ax, fw_shape_format(b, sizeof(b), x->shape, x->ndim));
    if (x->dtype == FW_FLOAT16 || x->dtype == FW_BFLOAT16) {
        /* compare in float32; the values go back to x's dtype */
        fw_tensor *xu = NULL, *vu = NULL;
        if ((err = fw_op_upcast(&xu, x)) >= 0 &&
            (err = sort_impl(values ? &vu : NULL, indices, op, xu, k, axis, descending)) >= 0 &&
            values)
            err = fw_cast(values, vu, x->dtype);
        fw_tensor_unref(xu);
        fw_tensor_unref(vu);
        if (err < 0 && indices) {
            fw_tensor_unref(*indices);
            *indices = NULL;
        }
        return err < 0 ? err : 0;
    }
    memcpy(shape, x->shape, (size_t)x->ndim * sizeof(*shape));
    if (x->ndim)
        shape[ax] = k;
    outer = fw__idx_prod(x->shape, 0, ax);
    inner = x->ndim ? fw__idx_prod(x->shape, ax + 1, x->ndim) : 1;
    if ((err = fw_op_output(&ix, x->device, FW_INT64, shape, x->ndim)) < 0)
        goto done;
    if (values && (err = fw_op_output(&v, x->device, x->dtype, shape, x->ndim)) < 0)
        goto done;
    if ((err = fw_op_dense(&xd, x)) < 0)
        goto done;
    /* the backend sorts the lanes (the CPU in parallel, scratch per chunk) */
    if ((err = fw__idx_kernels(op, x)->sort(x->dtype, v ? fw__ptr(v) : NULL, fw__ptr(ix),
                                            fw__ptr(xd), outer, len, inner, k,
                                            descending)) < 0)
        goto done;
    if (v && fw_dtype_is_float(x->dtype)) {
        if ((err = fw_node_record(&node, op, fw__idx_along_backward, 1, &x, 1, &v, 1,
                                  sizeof(axis_attr))) < 0)
            goto done;
        if (node) {
            ((axis_attr *)fw_node_attr(node))->axis = ax;
            if ((err = fw_node_save(node, 0, ix)) < 0)
                goto done;
        }
    }
    if (values) {
        *values = v;
        v = NULL;
    }
    if (indices) {
        *indices = ix;
        ix = NULL;
    }
    err = 0;
done:
    fw_tensor_unref(xd);
    fw_tensor_unref(v);
    fw_tensor_unref(ix);
    return err;
}

int fw_topk(fw_tensor **values, fw_tensor **indices, fw_tensor *x, int64_t k, int axis,
            bool largest, bool sorted)
{
    (void)sorted; /* results are always sorted */
    if (k < 0) {
        if (values)
            *values = NULL;
        if (indices)
            *indices = NULL;
        return fw_error_set(FW_EINVAL, "topk: k must be >= 0, got %lld", (long long)k);
    }
    return sort_impl(values, indices, "topk", x, k, axis, largest);
}

int fw_sort(fw_tensor **values, fw_tensor **indices, fw_tensor *x, int axis,
            bool descending, bool stable)
{
    (void)stable; /* always stable */
    return sort_impl(values, indices, "sort", x, -1, axis, descending);
}

int fw_argsort(fw_tensor **out, fw_tensor *x, int axis, bool descending, bool stable)
{
    (void)stable;
    if (out == NULL)
        return fw_error_set(FW_EINVAL, "argsort: out is NULL");
    return sort_impl(NULL, out, "argsort", x, -1, axis, descending);
}
