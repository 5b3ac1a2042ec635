/*
 * index_scatter.c - scatter and put_along_axis (fw/index.h): out-of-place
 * writes at index positions, with backward.
 */
#include "index_int.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
    int axis;
    int mode; /* scatter: overwrite flag; put_along_axis: fw_put_mode */
} scatter_attr;

/* ---- scatter ------------------------------------------------------------------ */

static int scatter_backward(fw_node *node, fw_tensor **gin, fw_tensor *const *gout)
{
    fw_tensor *it = fw_node_saved(node, 0), *gx = NULL;
    int err;

    if (fw_node_needs_grad(node, 0)) {
        unsigned char zero[8];
        fw_tensor *g = gout[0];
        if ((err = fw_tensor_clone(&gx, g)) < 0)
            return err;
        fw__idx_scalar_bytes(zero, gx->dtype, 0);
        if ((err = fw__idx_kernels("scatter backward", gx)
                       ->index_copy(fw_dtype_size(gx->dtype), fw__ptr(gx), NULL, fw__ptr(it),
                                    it->numel, 1, gx->shape[0],
                                    fw__idx_prod(gx->shape, 1, gx->ndim), zero)) < 0) {
            fw_tensor_unref(gx);
            return err;
        }
    }
    if (fw_node_needs_grad(node, 1) && (err = fw_index_select(&gin[1], gout[0], it, 0)) < 0) {
        fw_tensor_unref(gx);
        return err;
    }
    gin[0] = gx;
    return 0;
}

int fw_scatter(fw_tensor **out, fw_tensor *x, fw_tensor *index, fw_tensor *updates,
               bool overwrite)
{
    fw_tensor *y = NULL, *ud = NULL, *in[2];
    int64_t *idx = NULL, nidx, inner;
    fw_node *node;
    int err;
    bool ok;
    char b1[96], b2[96];

    *out = NULL;
    if ((err = fw__idx_check_input("scatter", "x", x)) < 0 ||
        (err = fw__idx_check_input("scatter", "index", index)) < 0 ||
        (err = fw__idx_check_input("scatter", "updates", updates)) < 0 ||
        (err = fw__idx_same_device("scatter", "index", index, x)) < 0 ||
        (err = fw__idx_same_device("scatter", "updates", updates, x)) < 0)
        return err;
    if (x->ndim == 0)
        return fw_error_set(FW_ESHAPE, "scatter: x must have at least 1 dim, got shape []");
    if (updates->dtype != x->dtype)
        return fw_error_set(FW_EDTYPE, "scatter: updates is %s but x is %s",
                            fw_dtype_name(updates->dtype), fw_dtype_name(x->dtype));
    if (!overwrite && x->dtype == FW_BOOL)
        return fw_error_set(FW_EDTYPE, "scatter: overwrite=false needs a numeric x, got bool");
    if (index->ndim != 1)
        return fw_error_set(FW_ESHAPE, "scatter: index must be 1-D, got shape %s",
                            fw_shape_format(b1, sizeof(b1), index->shape, index->ndim));
    ok = updates->ndim == x->ndim;
    for (int d = 0; ok && d < x->ndim; d++)
        ok = updates->shape[d] == (d == 0 ? index->shape[0] : x->shape[d]);
    if (!ok)
        return fw_error_set(FW_ESHAPE, "scatter: updates %s do not fit x %s with %lld indices",
                            fw_shape_format(b1, sizeof(b1), updates->shape, updates->ndim),
                            fw_shape_format(b2, sizeof(b2), x->shape, x->ndim),
                            (long long)index->shape[0]);
    if (!overwrite && (x->dtype == FW_FLOAT16 || x->dtype == FW_BFLOAT16)) {
        fw_tensor *xu = NULL, *uu = NULL, *yu = NULL;
        if ((err = fw_op_upcast(&xu, x)) >= 0 && (err = fw_op_upcast(&uu, updates)) >= 0 &&
            (err = fw_scatter(&yu, xu, index, uu, overwrite)) >= 0)
            err = fw_cast(out, yu, x->dtype);
        fw_tensor_unref(xu);
        fw_tensor_unref(uu);
        fw_tensor_unref(yu);
        return err < 0 ? err : 0;
    }
    if ((err = fw__idx_load_index(&idx, &nidx, "scatter", index, x->shape[0], 0, false)) < 0)
        return err;
    {
        bool prev = fw_set_grad_enabled(false);
        err = fw_tensor_clone(&y, x);
        fw_set_grad_enabled(prev);
        if (err < 0)
            goto done;
    }
    if ((err = fw_op_dense(&ud, updates)) < 0)
        goto done;
    inner = fw__idx_prod(x->shape, 1, x->ndim);
    {
        const struct fw_index_kernels *k = fw__idx_kernels("scatter", x);
        const int64_t *di;
        fw_tensor *keep = NULL;
        size_t es = fw_dtype_size(x->dtype);
        void *o = fw__ptr(y);
        int64_t len = x->shape[0];
        if ((err = fw__idx_on_device(&di, &keep, x->device, idx, nidx)) < 0)
            goto done;
        if (overwrite) {
            err = k->index_copy(es, o, fw__ptr(ud), di, nidx, 1, len, inner, NULL);
        } else {
            unsigned char zero[8];
            fw__idx_scalar_bytes(zero, x->dtype, 0);
            if ((err = k->index_copy(es, o, NULL, di, nidx, 1, len, inner, zero)) == 0)
                err = k->index_add(x->dtype, o, fw__ptr(ud), di, nidx, 1, len, inner);
        }
        fw_tensor_unref(keep);
        if (err < 0)
            goto done;
    }
    in[0] = x;
    in[1] = updates;
    if (fw_dtype_is_float(x->dtype)) {
        if ((err = fw_node_record(&node, "scatter", scatter_backward, 2, in, 1, &y, 1,
                                  sizeof(scatter_attr))) < 0)
            goto done;
        if (node) {
            ((scatter_attr *)fw_node_attr(node))->mode = overwrite;
            if ((err = fw__idx_save_index(node, 0, y->device, idx, &nidx, 1)) < 0)
                goto done;
        }
    }
    *out = y;
    y = NULL;
    err = 0;
done:
    free(idx);
    fw_tensor_unref(ud);
    fw_tensor_unref(y);
    return err;
}

/* ---- put_along_axis ------------------------------------------------------------- */

static int put_along_backward(fw_node *node, fw_tensor **gin, fw_tensor *const *gout)
{
    const scatter_attr *a = fw_node_attr(node);
    fw_tensor *it = fw_node_saved(node, 0), *gx = NULL, *t = NULL;
    int ax = a->axis, err, nd;

    if (fw_node_needs_grad(node, 0)) {
        if (a->mode == FW_PUT_ADD) {
            gx = fw_tensor_ref(gout[0]);
        } else {
            unsigned char zero[8];
            if ((err = fw_tensor_clone(&gx, gout[0])) < 0)
                return err;
            fw__idx_scalar_bytes(zero, gx->dtype, 0);
            if ((err = fw__idx_kernels("put_along_axis backward", gx)
                           ->scatter_along(fw_dtype_size(gx->dtype), fw__ptr(gx), NULL,
                                           fw__ptr(it), fw__idx_prod(gx->shape, 0, ax),
                                           gx->shape[ax], it->shape[ax],
                                           fw__idx_prod(gx->shape, ax + 1, gx->ndim),
                                           zero)) < 0)
                goto fail;
        }
    }
    if (fw_node_needs_grad(node, 1)) {
        const int64_t *vs = fw_node_input_shape(node, 1, &nd);
        fw_dtype vdt = fw_node_input_dtype(node, 1);
        fw_tensor *r = NULL;
        if ((err = fw_take_along_axis(&t, gout[0], it, ax)) < 0 ||
            (err = fw_op_reduce_to_shape(&r, t, vs, nd)) < 0)
            goto fail;
        if (r->dtype != vdt) {
            err = fw_cast(&gin[1], r, vdt);
            fw_tensor_unref(r);
            if (err < 0)
                goto fail;
        } else {
            gin[1] = r;
        }
    }
    fw_tensor_unref(t);
    gin[0] = gx;
    return 0;
fail:
    fw_tensor_unref(t);
    fw_tensor_unref(gx);
    return err;
}

int fw_put_along_axis(fw_tensor **out, fw_tensor *arr, fw_tensor *indices, fw_tensor *values,
                      int axis, fw_put_mode reduce)
{
    fw_tensor *ie = NULL, *vc = NULL, *ve = NULL, *vd = NULL, *y = NULL, *in[2];
    int64_t *idx = NULL, nidx, ishape[FW_MAX_DIMS], outer, inner, len;
    int ax, nd, err;
    fw_node *node;
    char b1[96], b2[96];

    *out = NULL;
    if ((err = fw__idx_check_input("put_along_axis", "arr", arr)) < 0 ||
        (err = fw__idx_check_input("put_along_axis", "indices", indices)) < 0 ||
        (err = fw__idx_check_input("put_along_axis", "values", values)) < 0 ||
        (err = fw__idx_same_device("put_along_axis", "indices", indices, arr)) < 0 ||
        (err = fw__idx_same_device("put_along_axis", "values", values, arr)) < 0)
        return err;
    if ((int)reduce != FW_PUT_ASSIGN && (int)reduce != FW_PUT_ADD)
        return fw_error_set(FW_EINVAL, "put_along_axis: unknown reduce %d", (int)reduce);
    if (reduce == FW_PUT_ADD && arr->dtype == FW_BOOL)
        return fw_error_set(FW_EDTYPE, "put_along_axis: reduce add needs a numeric arr, got bool");
    nd = arr->ndim;
    if (indices->ndim != nd || nd == 0)
        return fw_error_set(FW_ESHAPE, "put_along_axis: arr %s and indices %s must have the "
                            "same rank (>= 1)",
                            fw_shape_format(b1, sizeof(b1), arr->shape, nd),
                            fw_shape_format(b2, sizeof(b2), indices->shape, indices->ndim));
    if ((err = fw_op_axis(&ax, "put_along_axis", axis, nd)) < 0)
        return err;
    for (int d = 0; d < nd; d++) {
        int64_t i = indices->shape[d];
        if (d != ax && i != arr->shape[d] && i != 1)
            return fw_error_set(FW_ESHAPE, "put_along_axis: indices %s do not fit arr %s "
                                "outside axis %d",
                                fw_shape_format(b1, sizeof(b1), indices->shape, nd),
                                fw_shape_format(b2, sizeof(b2), arr->shape, nd), ax);
        ishape[d] = d == ax ? i : arr->shape[d];
    }
    if (reduce == FW_PUT_ADD && (arr->dtype == FW_FLOAT16 || arr->dtype == FW_BFLOAT16)) {
        fw_tensor *au = NULL, *yu = NULL;
        if ((err = fw_op_upcast(&au, arr)) >= 0 &&
            (err = fw_put_along_axis(&yu, au, indices, values, axis, reduce)) >= 0)
            err = fw_cast(out, yu, arr->dtype);
        fw_tensor_unref(au);
        fw_tensor_unref(yu);
        return err < 0 ? err : 0;
    }
    {
        int64_t t[FW_MAX_DIMS];
        int nt;
        if (fw_op_broadcast_shapes(t, &nt, "put_along_axis", values->shape, values->ndim,
                                   ishape, nd) < 0 ||
            !fw_shape_equal(t, nt, ishape, nd))
            return fw_error_set(FW_ESHAPE, "put_along_axis: values %s cannot broadcast to "
                                "the indices shape %s",
                                fw_shape_format(b1, sizeof(b1), values->shape, values->ndim),
                                fw_shape_format(b2, sizeof(b2), ishape, nd));
    }
    {
        /* data only: the backward computes the values' gradient itself */
        bool prev = fw_set_grad_enabled(false);
        if ((err = fw_expand(&ie, indices, ishape, nd)) >= 0 &&
            (err = fw__idx_load_index(&idx, &nidx, "put_along_axis", ie, arr->shape[ax], ax,
                                      false)) >= 0 &&
            (err = fw_cast(&vc, values, arr->dtype)) >= 0 &&
            (err = fw_expand(&ve, vc, ishape, nd)) >= 0 && (err = fw_op_dense(&vd, ve)) >= 0)
            err = fw_tensor_clone(&y, arr);
        fw_set_grad_enabled(prev);
        if (err < 0)
            goto done;
    }
    outer = fw__idx_prod(arr->shape, 0, ax);
    inner = fw__idx_prod(arr->shape, ax + 1, nd);
    len = arr->shape[ax];
    {
        const struct fw_index_kernels *k = fw__idx_kernels("put_along_axis", arr);
        const int64_t *di;
        fw_tensor *keep = NULL;
        if ((err = fw__idx_on_device(&di, &keep, arr->device, idx, nidx)) < 0)
            goto done;
        if (reduce == FW_PUT_ASSIGN)
            err = k->scatter_along(fw_dtype_size(arr->dtype), fw__ptr(y), fw__ptr(vd), di,
                                   outer, len, ishape[ax], inner, NULL);
        else
            err = k->scatter_add_along(arr->dtype, fw__ptr(y), fw__ptr(vd), di, outer, len,
                                       ishape[ax], inner);
        fw_tensor_unref(keep);
        if (err < 0)
            goto done;
    }
    in[0] = arr;
    in[1] = values;
    if (fw_dtype_is_float(arr->dtype)) {
        if ((err = fw_node_record(&node, "put_along_axis", put_along_backward, 2, in, 1, &y, 1,
                                  sizeof(scatter_attr))) < 0)
            goto done;
        if (node) {
            scatter_attr *a = fw_node_attr(node);
            a->axis = ax;
            a->mode = reduce;
            if ((err = fw__idx_save_index(node, 0, y->device, idx, ishape, nd)) < 0)
                goto done;
        }
    }
    *out = y;
    y = NULL;
    err = 0;
done:
    free(idx);
    fw_tensor_unref(ie);
    fw_tensor_unref(vc);
    fw_tensor_unref(ve);
    fw_tensor_unref(vd);
    fw_tensor_unref(y);
    return err;
}
