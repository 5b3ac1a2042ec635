/*
 * index_put.c - in-place writes into slices, index positions and masks
 * (fw/index.h): the primitives behind Python's `x[...] = v`.
 *
 * None of them records autograd; each first applies Paddle's in-place rule
 * (fw__idx_check_inplace) and checks everything before the first write, so
 * a failed call leaves x unchanged.
 */
#include "index_int.h"

#include <stdlib.h>
#include <string.h>

int fw_set_value_(fw_tensor *x, const int *axes, const int64_t *starts,
                  const int64_t *ends, const int64_t *steps, int n, fw_tensor *value)
{
    fw_tensor *view = NULL;
    bool prev;
    int err;

    if ((err = fw__idx_check_input("set_value", "x", x)) < 0 ||
        (err = fw__idx_check_input("set_value", "value", value)) < 0 ||
        (err = fw__idx_same_device("set_value", "value", value, x)) < 0)
        return err;
    if (n < 0 || (n > 0 && (axes == NULL || starts == NULL || ends == NULL)))
        return fw_error_set(FW_EINVAL, "set_value: axes/starts/ends missing for %d axes", n);
    if ((err = fw__idx_check_inplace("set_value", x)) < 0)
        return err;
    prev = fw_set_grad_enabled(false);
    if (n == 0)
        view = fw_tensor_ref(x);
    else
        err = fw_slice(&view, x, axes, starts, ends, steps, n);
    if (err >= 0)
        err = fw_tensor_assign(view, value);
    fw_set_grad_enabled(prev);
    fw_tensor_unref(view);
    return err < 0 ? err : 0;
}

typedef struct {
    int n;
    int axes[FW_MAX_DIMS];
    int64_t starts[FW_MAX_DIMS], ends[FW_MAX_DIMS], steps[FW_MAX_DIMS];
} slice_attr;

static int set_value_backward(fw_node *node, fw_tensor **gin, fw_tensor *const *gout)
{
    slice_attr *a = fw_node_attr(node);
    fw_tensor *gx = NULL, *view = NULL, *red = NULL;
    int err = 0, nd;

    if (fw_node_needs_grad(node, 0)) {
        if ((err = fw_tensor_clone(&gx, gout[0])) < 0)
            return err;
        if ((err = fw_slice(&view, gx, a->axes, a->starts, a->ends, a->steps, a->n)) < 0 ||
            (err = fw_tensor_fill(view, 0)) < 0)
            goto fail;
        fw_tensor_unref(view);
        view = NULL;
    }
    if (fw_node_needs_grad(node, 1)) {
        const int64_t *vs = fw_node_input_shape(node, 1, &nd);
        fw_dtype vdt = fw_node_input_dtype(node, 1);
        if ((err = fw_slice(&view, gout[0], a->axes, a->starts, a->ends, a->steps, a->n)) < 0 ||
            (err = fw_op_reduce_to_shape(&red, view, vs, nd)) < 0)
            goto fail;
        if (red->dtype != vdt) {
            err = fw_cast(&gin[1], red, vdt);
            fw_tensor_unref(red);
            if (err < 0)
                goto fail;
        } else {
            gin[1] = red;
        }
        red = NULL;
    }
    gin[0] = gx;
    fw_tensor_unref(view);
    return 0;
fail:
    fw_tensor_unref(gx);
    fw_tensor_unref(view);
    return err;
}

int fw_set_value(fw_tensor **out, fw_tensor *x, const int *axes, const int64_t *starts,
                 const int64_t *ends, const int64_t *steps, int n, fw_tensor *value)
{
    fw_tensor *y = NULL, *view = NULL, *in[2];
    fw_node *node;
    bool prev;
    int err;

    *out = NULL;
    if ((err = fw__idx_check_input("set_value", "x", x)) < 0 ||
        (err = fw__idx_check_input("set_value", "value", value)) < 0 ||
        (err = fw__idx_same_device("set_value", "value", value, x)) < 0)
        return err;
    if (n < 0 || n > FW_MAX_DIMS || (n > 0 && (axes == NULL || starts == NULL || ends == NULL)))
        return fw_error_set(FW_EINVAL, "set_value: axes/starts/ends missing for %d axes", n);
    prev = fw_set_grad_enabled(false);
    if ((err = fw_tensor_clone(&y, x)) >= 0) {
        if (n == 0)
            view = fw_tensor_ref(y);
        else
            err = fw_slice(&view, y, axes, starts, ends, steps, n);
        if (err >= 0)
            err = fw_tensor_assign(view, value);
    }
    fw_set_grad_enabled(prev);
    fw_tensor_unref(view);
    if (err < 0)
        goto fail;
    in[0] = x;
    in[1] = value;
    if (fw_dtype_is_float(x->dtype)) {
        if ((err = fw_node_record(&node, "set_value", set_value_backward, 2, in, 1, &y, 0,
                                  sizeof(slice_attr))) < 0)
            goto fail;
        if (node) {
            slice_attr *a = fw_node_attr(node);
            a->n = n;
            for (int i = 0; i < n; i++) {
                a->axes[i] = axes[i];
                a->starts[i] = starts[i];
                a->ends[i] = ends[i];
                a->steps[i] = steps ? steps[i] : 1;
            }
        }
    }
    *out = y;
    return 0;
fail:
    fw_tensor_unref(y);
    return err;
}

int fw_index_put_(fw_tensor *x, fw_tensor *const *indices, int n, fw_tensor *value,
                  bool accumulate)
{
    int64_t bshape[FW_MAX_DIMS], vshape[FW_MAX_DIMS], sub[FW_MAX_DIMS], *idx[FW_MAX_DIMS];
    fw_tensor *vc = NULL, *ve = NULL, *vd = NULL;
    int nb = 0, nsub, err = 0;
    int64_t nidx = 0, subn, cnt;
    size_t es;
    bool prev;
    char b1[96], b2[96];

    memset(idx, 0, sizeof(idx));
    if ((err = fw__idx_check_input("index_put", "x", x)) < 0 ||
        (err = fw__idx_check_input("index_put", "value", value)) < 0 ||
        (err = fw__idx_same_device("index_put", "value", value, x)) < 0)
        return err;
    for (int i = 0; indices != NULL && i < n && i < x->ndim; i++)
        if ((err = fw__idx_same_device("index_put", "an index", indices[i], x)) < 0)
            return err;
    if (accumulate && (x->dtype == FW_BOOL || x->dtype == FW_FLOAT16 ||
                       x->dtype == FW_BFLOAT16))
        return fw_error_set(FW_EDTYPE, "index_put: accumulate is not supported for %s",
                            fw_dtype_name(x->dtype));
    if ((err = fw__idx_check_inplace("index_put", x)) < 0)
        return err;
    if ((err = fw__idx_load_multi(idx, &nidx, bshape, &nb, "index_put", x, indices, n)) < 0)
        return err;
    nsub = x->ndim - n;
    if (nb + nsub > FW_MAX_DIMS) {
        err = fw_error_set(FW_ESHAPE, "index_put: indexed shape has %d dims (max %d)",
                           nb + nsub, FW_MAX_DIMS);
        goto done;
    }
    memcpy(vshape, bshape, (size_t)nb * sizeof(int64_t));
    memcpy(vshape + nb, x->shape + n, (size_t)nsub * sizeof(int64_t));
    memcpy(sub, x->shape + n, (size_t)nsub * sizeof(int64_t));
    {
        int64_t t[FW_MAX_DIMS];
        int nt;
        if (fw_op_broadcast_shapes(t, &nt, "index_put", value->shape, value->ndim, vshape,
                                   nb + nsub) < 0 ||
            !fw_shape_equal(t, nt, vshape, nb + nsub)) {
            err = fw_error_set(FW_ESHAPE, "index_put: value %s cannot broadcast to the "
                               "indexed shape %s",
                               fw_shape_format(b1, sizeof(b1), value->shape, value->ndim),
                               fw_shape_format(b2, sizeof(b2), vshape, nb + nsub));
            goto done;
        }
    }
    prev = fw_set_grad_enabled(false);
    if ((err = fw_cast(&vc, value, x->dtype)) >= 0 &&
        (err = fw_expand(&ve, vc, vshape, nb + nsub)) >= 0)
        err = fw_op_dense(&vd, ve);
    fw_set_grad_enabled(prev);
    if (err < 0 || (err = fw__idx_unalias(&vd, x)) < 0)
        goto done;
    es = fw_dtype_size(x->dtype);
    subn = fw__idx_prod(sub, 0, nsub);
    cnt = nidx;
    const struct fw_index_kernels *k = fw__idx_kernels("index_put", x);
    for (int64_t p = 0; p < cnt && err == 0; p++) {
        int64_t off = 0;
        for (int i = 0; i < n; i++)
            off += idx[i][p] * x->strides[i];
        char *dst = (char *)fw__ptr(x) + off * (ptrdiff_t)es;
        const char *src = (const char *)fw__ptr(vd) + (size_t)(p * subn) * es;
        const int64_t *ds = x->strides + n;
        if (!accumulate) {
            int64_t cs[FW_MAX_DIMS];
            fw__contiguous_strides(cs, sub, nsub);
            err = k->strided_write(es, dst, ds, src, cs, nsub, sub);
            continue;
        }
        err = k->strided_add(x->dtype, dst, ds, src, nsub, sub);
    }
done:
    for (int i = 0; i < FW_MAX_DIMS; i++)
        free(idx[i]);
    fw_tensor_unref(vc);
    fw_tensor_unref(ve);
    fw_tensor_unref(vd);
    return err;
}

int fw_masked_fill_(fw_tensor *x, fw_tensor *mask, fw_tensor *value)
{
    int64_t shape[FW_MAX_DIMS], ms[FW_MAX_DIMS];
    fw_tensor *vc = NULL, *vd = NULL;
    int nd, err;
    bool prev;
    char b1[96], b2[96];

    if ((err = fw__idx_check_input("masked_fill", "x", x)) < 0 ||
        (err = fw__idx_check_input("masked_fill", "mask", mask)) < 0 ||
        (err = fw__idx_check_input("masked_fill", "value", value)) < 0 ||
        (err = fw__idx_same_device("masked_fill", "mask", mask, x)) < 0)
        return err;
    if (mask->dtype != FW_BOOL)
        return fw_error_set(FW_EDTYPE, "masked_fill: mask must be bool, got %s",
                            fw_dtype_name(mask->dtype));
    if (value->numel != 1)
        return fw_error_set(FW_ESHAPE, "masked_fill: value must have one element, got shape %s",
                            fw_shape_format(b1, sizeof(b1), value->shape, value->ndim));
    if (fw_op_broadcast_shapes(shape, &nd, "masked_fill", mask->shape, mask->ndim, x->shape,
                               x->ndim) < 0 ||
        !fw_shape_equal(shape, nd, x->shape, x->ndim))
        return fw_error_set(FW_ESHAPE, "masked_fill: mask %s cannot broadcast to x %s",
                            fw_shape_format(b1, sizeof(b1), mask->shape, mask->ndim),
                            fw_shape_format(b2, sizeof(b2), x->shape, x->ndim));
    if ((err = fw__idx_check_inplace("masked_fill", x)) < 0)
        return err;
    prev = fw_set_grad_enabled(false);
    if ((err = fw_cast(&vc, value, x->dtype)) >= 0)   /* the value is a host scalar */
        err = fw_tensor_to(&vd, vc, FW_CPU);
    fw_set_grad_enabled(prev);
    if (err < 0)
        goto done;
    for (int d = 0; d < nd; d++) {
        int k = d - (nd - mask->ndim);
        ms[d] = (k < 0 || mask->shape[k] == 1) ? 0 : mask->strides[k];
    }
    err = fw__idx_kernels("masked_fill", x)->masked_fill(fw_dtype_size(x->dtype), fw__ptr(x),
                                                         x->strides, fw__ptr(mask), ms, nd,
                                                         x->shape, fw__ptr(vd));
done:
    fw_tensor_unref(vc);
    fw_tensor_unref(vd);
    return err;
}
