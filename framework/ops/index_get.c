/*
 * index_get.c - the read side of Python's x[...] beyond slices: advanced
 * indexing with integer tensors (fw_index_get) and boolean masks
 * (fw_masked_select), with backward.
 */
#include "index_int.h"

#include <stdlib.h>
#include <string.h>

/* ---- index_get ------------------------------------------------------------ */

typedef struct {
    int n; /* index tensors */
} get_attr;

static int index_get_backward(fw_node *node, fw_tensor **gin, fw_tensor *const *gout)
{
    int n = ((get_attr *)fw_node_attr(node))->n, nd, err;
    const int64_t *xs = fw_node_input_shape(node, 0, &nd);
    fw_tensor *it = fw_node_saved(node, 0), *g = NULL, *gx = NULL;
    const int64_t *idx = fw__ptr(it);       /* host: the positions are launch parameters */
    int64_t cnt = it->shape[1], xst[FW_MAX_DIMS], subn = fw__idx_prod(xs, n, nd);

    if ((err = fw__idx_grad_dense(&g, gout[0])) < 0)
        return err;
    if ((err = fw_op_zeros(&gx, g->device, g->dtype, xs, nd)) < 0)
        goto done;
    const struct fw_index_kernels *k = fw__idx_kernels("index_get backward", g);
    if (k == NULL) {
        err = FW_EDEVICE;
        goto done;
    }
    size_t es = fw_dtype_size(g->dtype);
    fw__contiguous_strides(xst, xs, nd);
    for (int64_t p = 0; p < cnt && err == 0; p++) {
        int64_t off = 0;
        for (int i = 0; i < n; i++)
            off += idx[i * cnt + p] * xst[i];
        err = k->strided_add(g->dtype, (char *)fw__ptr(gx) + (size_t)off * es, xst + n,
                             (const char *)fw__ptr(g) + (size_t)(p * subn) * es, nd - n, xs + n);
    }
    if (err < 0)
        goto done;
    err = fw__idx_grad_finish(&gin[0], gx, fw_node_input_dtype(node, 0));
    gx = NULL;
done:
    fw_tensor_unref(g);
    fw_tensor_unref(gx);
    return err;
}

int fw_index_get(fw_tensor **out, fw_tensor *x, fw_tensor *const *indices, int n)
{
    int64_t *idx[FW_MAX_DIMS], cnt, bshape[FW_MAX_DIMS], oshape[FW_MAX_DIMS], subn;
    fw_tensor *y = NULL, *it = NULL;
    int nb, nsub, err;
    size_t es;
    fw_node *node;

    *out = NULL;
    if ((err = fw__idx_check_input("index_get", "x", x)) < 0)
        return err;
    for (int i = 0; indices != NULL && i < n && i < x->ndim; i++)
        if ((err = fw__idx_same_device("index_get", "an index", indices[i], x)) < 0)
            return err;
    if ((err = fw__idx_load_multi(idx, &cnt, bshape, &nb, "index_get", x, indices, n)) < 0)
        return err;
    nsub = x->ndim - n;
    if (nb + nsub > FW_MAX_DIMS) {
        err = fw_error_set(FW_ESHAPE, "index_get: result would have %d dims (max %d)",
                           nb + nsub, FW_MAX_DIMS);
        goto done;
    }
    memcpy(oshape, bshape, (size_t)nb * sizeof(int64_t));
    memcpy(oshape + nb, x->shape + n, (size_t)nsub * sizeof(int64_t));
    if ((err = fw_op_output(&y, x->device, x->dtype, oshape, nb + nsub)) < 0)
        goto done;
    es = fw_dtype_size(x->dtype);
    subn = fw__idx_prod(x->shape, n, x->ndim);
    const struct fw_index_kernels *k = fw__idx_kernels("index_get", x);
    for (int64_t p = 0; p < cnt && err == 0; p++) {
        int64_t off = 0;
        for (int i = 0; i < n; i++)
            off += idx[i][p] * x->strides[i];
        err = k->strided_copy(es, (char *)fw__ptr(y) + (size_t)(p * subn) * es,
                              (const char *)fw__ptr(x) + off * (ptrdiff_t)es, x->strides + n,
                              nsub, x->shape + n);
    }
    if (err < 0)
        goto done;
    if (fw_dtype_is_float(x->dtype)) {
        if ((err = fw_node_record(&node, "index_get", index_get_backward, 1, &x, 1, &y, 1,
                                  sizeof(get_attr))) < 0)
            goto done;
        if (node) {
            int64_t is[2] = {n, cnt};
            ((get_attr *)fw_node_attr(node))->n = n;
            if ((err = fw_op_output(&it, FW_CPU, FW_INT64, is, 2)) < 0)
                goto done;
            for (int i = 0; i < n; i++)
                if (cnt > 0)
                    memcpy((int64_t *)fw__ptr(it) + i * cnt, idx[i],
                           (size_t)cnt * sizeof(int64_t));
            if ((err = fw_node_save(node, 0, it)) < 0)
                goto done;
        }
    }
    *out = y;
    y = NULL;
    err = 0;
done:
    for (int i = 0; i < FW_MAX_DIMS; i++)
        free(idx[i]);
    fw_tensor_unref(it);
    fw_tensor_unref(y);
    return err;
}

/* ---- masked_select ---------------------------------------------------------- */

static int masked_select_backward(fw_node *node, fw_tensor **gin, fw_tensor *const *gout)
{
    fw_tensor *mask = fw_node_saved(node, 0), *g = NULL, *gx = NULL;
    int nd, err;
    const int64_t *xs = fw_node_input_shape(node, 0, &nd);

    if ((err = fw_op_dense(&g, gout[0])) < 0)
        return err;
    if ((err = fw_op_zeros(&gx, g->device, g->dtype, xs, nd)) < 0)
        goto done;
    const struct fw_index_kernels *k = fw__idx_kernels("masked_select backward", g);
    if (k == NULL ||
        (err = k->masked_scatter(fw_dtype_size(g->dtype), fw__ptr(gx), fw__ptr(g),
                                 fw__ptr(mask), mask->numel)) < 0) {
        err = k == NULL ? FW_EDEVICE : err;
        goto done;
    }
    gin[0] = gx;
    gx = NULL;
done:
    fw_tensor_unref(g);
    fw_tensor_unref(gx);
    return err;
}

int fw_masked_select(fw_tensor **out, fw_tensor *x, fw_tensor *mask)
{
    int64_t shape[FW_MAX_DIMS], cnt = 0;
    fw_tensor *xe = NULL, *me = NULL, *xd = NULL, *md = NULL, *y = NULL, *yall = NULL;
    fw_node *node;
    int nd, err;

    *out = NULL;
    if ((err = fw__idx_check_input("masked_select", "x", x)) < 0 ||
        (err = fw__idx_check_input("masked_select", "mask", mask)) < 0 ||
        (err = fw__idx_same_device("masked_select", "mask", mask, x)) < 0)
        return err;
    if (mask->dtype != FW_BOOL)
        return fw_error_set(FW_EDTYPE, "masked_select: mask must be bool, got %s",
                            fw_dtype_name(mask->dtype));
    if ((err = fw_op_broadcast_shapes(shape, &nd, "masked_select", x->shape, x->ndim,
                                      mask->shape, mask->ndim)) < 0)
        return err;
    /* broadcasting x is a (differentiable) expand; the mask is plain data */
    if ((err = fw_expand(&xe, x, shape, nd)) < 0)
        goto done;
    {
        bool prev = fw_set_grad_enabled(false);
        if ((err = fw_expand(&me, mask, shape, nd)) >= 0)
            err = fw_op_dense(&md, me);
        fw_set_grad_enabled(prev);
        if (err < 0)
            goto done;
    }
    if ((err = fw_op_dense(&xd, xe)) < 0)
        goto done;
    /* room for every element; the kernel says how many it wrote and y
     * becomes a view of that prefix */
    if ((err = fw_op_output(&yall, x->device, x->dtype, &md->numel, 1)) < 0 ||
        (err = fw__idx_kernels("masked_select", x)
                   ->masked_select(fw_dtype_size(x->dtype), fw__ptr(yall), fw__ptr(xd),
                                   fw__ptr(md), md->numel, &cnt)) < 0)
        goto done;
    {
        int64_t one = 1;
        if ((err = fw__tensor_view(&y, yall, &cnt, &one, 1, yall->offset)) < 0)
            goto done;
    }
    if (fw_dtype_is_float(x->dtype)) {
        if ((err = fw_node_record(&node, "masked_select", masked_select_backward, 1, &xe, 1,
                                  &y, 1, 0)) < 0)
            goto done;
        if (node && (err = fw_node_save(node, 0, md)) < 0)
            goto done;
    }
    *out = y;
    y = NULL;
done:
    fw_tensor_unref(xe);
    fw_tensor_unref(me);
    fw_tensor_unref(xd);
    fw_tensor_unref(md);
    fw_tensor_unref(yall);
    fw_tensor_unref(y);
    return err;
}
