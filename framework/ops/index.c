/*
 * index.c - gather, index_select, take_along_axis, index_add, where, clip,
 * one_hot and cumsum (fw/index.h), with backward.
 */
#include "index_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef fw__idx_axis_attr axis_attr;

/* Records backward `bw` of a gather-like op with inputs ins[0..n_in) and
 * output y: the axis in the attr, the resolved indices (idx in `shape`) in
 * saved slot 0. */
static int record_axis_index(const char *op, fw_backward_fn bw, int n_in, fw_tensor *const *ins,
                             fw_tensor *y, int ax, const int64_t *idx, const int64_t *shape,
                             int ndim)
{
    fw_node *node;
    int err;

    if ((err = fw_node_record(&node, op, bw, n_in, ins, 1, &y, 1, sizeof(axis_attr))) < 0)
        return err;
    if (node == NULL)
        return 0;
    ((axis_attr *)fw_node_attr(node))->axis = ax;
    return fw__idx_save_index(node, 0, y->device, idx, shape, ndim);
}

/* ---- gather / index_select ---------------------------------------------------- */

/* create_graph: gather's gradient as an op of its own ("gather_grad", the
 * index-add into zeros), whose backward is index_select of the incoming
 * gradient with the same index. saved: 0 the index; attr: the axis. */
static int gather_grad_backward(fw_node *node, fw_tensor **gin, fw_tensor *const *gout)
{
    int axis = ((axis_attr *)fw_node_attr(node))->axis, nd, err;
    const int64_t *gs = fw_node_input_shape(node, 0, &nd);
    fw_tensor *t = NULL;

    if (!fw_node_needs_grad(node, 0))
        return 0;
    if ((err = fw_index_select(&t, gout[0], fw_node_saved(node, 0), axis)) == 0)
        err = fw_reshape(&gin[0], t, gs, nd);
    fw_tensor_unref(t);
    return err;
}

/* Backward of gather-like ops: gx = zeros(x); gx[.., idx[j], ..] += g[.., j, ..]. */
static int gather_backward(fw_node *node, fw_tensor **gin, fw_tensor *const *gout)
{
    int axis = ((axis_attr *)fw_node_attr(node))->axis, nd, err;
    const int64_t *xs = fw_node_input_shape(node, 0, &nd);
    fw_tensor *idx = fw_node_saved(node, 0), *g = NULL, *gx = NULL;
    int64_t outer = fw__idx_prod(xs, 0, axis), inner = fw__idx_prod(xs, axis + 1, nd);

    if ((err = fw__idx_grad_dense(&g, gout[0])) < 0)
        return err;
    if ((err = fw_op_zeros(&gx, g->device, g->dtype, xs, nd)) < 0)
        goto done;
    const struct fw_index_kernels *k = fw__idx_kernels("gather backward", g);
    if (k == NULL) {
        err = FW_EDEVICE;
        goto done;
    }
    if ((err = k->index_add(g->dtype, fw__ptr(gx), fw__ptr(g), fw__ptr(idx), idx->numel, outer,
                            xs[axis], inner)) < 0)
        goto done;
    err = fw__idx_grad_finish(&gin[0], gx, fw_node_input_dtype(node, 0));
    gx = NULL;
    if (err == 0 && fw__autograd_creating_graph()) {
        fw_node *n2 = NULL;
        fw_tensor *in = gout[0];
        if ((err = fw_node_record(&n2, "gather_grad", gather_grad_backward, 1, &in, 1, &gin[0],
                                  1, sizeof(axis_attr))) == 0 && n2) {
            ((axis_attr *)fw_node_attr(n2))->axis = axis;
            err = fw_node_save(n2, 0, idx);
        }
    }
done:
    fw_tensor_unref(g);
    fw_tensor_unref(gx);
    return err;
}

static int gather_impl(fw_tensor **out, const char *op, fw_tensor *x, fw_tensor *index,
                       int axis, bool allow_0d)
{
    fw_tensor *xd = NULL, *y = NULL;
    int64_t *idx = NULL, nidx, shape[FW_MAX_DIMS];
    int ax, nd, err;
    char b[96];

    *out = NULL;
    if ((err = fw__idx_check_input(op, "x", x)) < 0 ||
        (err = fw__idx_check_input(op, "index", index)) < 0 ||
        (err = fw__idx_same_device(op, "index", index, x)) < 0)
        return err;
    if (x->ndim == 0)
        return fw_error_set(FW_ESHAPE, "%s: x must have at least 1 dim, got shape []", op);
    if ((err = fw_op_axis(&ax, op, axis, x->ndim)) < 0)
        return err;
    if (index->ndim != 1 && !(allow_0d && index->ndim == 0))
        return fw_error_set(FW_ESHAPE, "%s: index must be %s, got shape %s", op,
                            allow_0d ? "1-D or 0-D" : "1-D",
                            fw_shape_format(b, sizeof(b), index->shape, index->ndim));
    if ((err = fw__idx_load_index(&idx, &nidx, op, index, x->shape[ax], ax, false)) < 0)
        return err;
    nd = 0;
    for (int d = 0; d < x->ndim; d++) {
        if (d != ax)
            shape[nd++] = x->shape[d];
        else if (index->ndim == 1)
            shape[nd++] = nidx;
    }
    if ((err = fw_op_output(&y, x->device, x->dtype, shape, nd)) < 0)
        goto done;
    if ((err = fw_op_dense(&xd, x)) < 0)
        goto done;
    {
        const int64_t *di;
        fw_tensor *keep = NULL;
        if ((err = fw__idx_on_device(&di, &keep, x->device, idx, nidx)) < 0)
            goto done;
        err = fw__idx_kernels(op, x)->gather(fw_dtype_size(x->dtype), fw__ptr(y), fw__ptr(xd),
                                             di, nidx, fw__idx_prod(x->shape, 0, ax),
                                             x->shape[ax],
                                             fw__idx_prod(x->shape, ax + 1, x->ndim));
        fw_tensor_unref(keep);
        if (err < 0)
            goto done;
    }
    if (fw_dtype_is_float(x->dtype) &&
        (err = record_axis_index(op, gather_backward, 1, &x, y, ax, idx, &nidx, 1)) < 0)
        goto done;
    *out = y;
    y = NULL;
done:
    free(idx);
    fw_tensor_unref(xd);
    fw_tensor_unref(y);
    return err;
}

int fw_gather(fw_tensor **out, fw_tensor *x, fw_tensor *index, int axis)
{
    return gather_impl(out, "gather", x, index, axis, true);
}

int fw_index_select(fw_tensor **out, fw_tensor *x, fw_tensor *index, int axis)
{
    return gather_impl(out, "index_select", x, index, axis, false);
}

/* ---- take_along_axis -------------------------------------------------------------- */

int fw_take_along_axis(fw_tensor **out, fw_tensor *arr, fw_tensor *indices, int axis)
{
    fw_tensor *ae = NULL, *ie = NULL, *ad = NULL, *y = NULL;
    int64_t *idx = NULL, nidx, ashape[FW_MAX_DIMS], ishape[FW_MAX_DIMS];
    int ax, nd, err;
    char b1[96], b2[96];

    *out = NULL;
    if ((err = fw__idx_check_input("take_along_axis", "arr", arr)) < 0 ||
        (err = fw__idx_check_input("take_along_axis", "indices", indices)) < 0 ||
        (err = fw__idx_same_device("take_along_axis", "indices", indices, arr)) < 0)
        return err;
    nd = arr->ndim;
    if (indices->ndim != nd || nd == 0)
        return fw_error_set(FW_ESHAPE, "take_along_axis: arr %s and indices %s must have "
                            "the same rank (>= 1)",
                            fw_shape_format(b1, sizeof(b1), arr->shape, nd),
                            fw_shape_format(b2, sizeof(b2), indices->shape, indices->ndim));
    if ((err = fw_op_axis(&ax, "take_along_axis", axis, nd)) < 0)
        return err;
    for (int d = 0; d < nd; d++) {
        int64_t a = arr->shape[d], i = indices->shape[d];
        if (d == ax) {
            ashape[d] = a;
            ishape[d] = i;
        } else if (a == i || a == 1 || i == 1) {
            ashape[d] = ishape[d] = a == 1 ? i : a;
        } else {
            return fw_error_set(FW_ESHAPE, "take_along_axis: arr %s and indices %s cannot "
                                "broadcast outside axis %d",
                                fw_shape_format(b1, sizeof(b1), arr->shape, nd),
                                fw_shape_format(b2, sizeof(b2), indices->shape, nd), ax);
        }
    }
    /* broadcasting arr is a (differentiable) expand; indices are plain data */
    if ((err = fw_expand(&ae, arr, ashape, nd)) < 0)
        goto done;
    {
        bool prev = fw_set_grad_enabled(false);
        err = fw_expand(&ie, indices, ishape, nd);
        fw_set_grad_enabled(prev);
        if (err < 0)
            goto done;
    }
    if ((err = fw__idx_load_index(&idx, &nidx, "take_along_axis", ie, ashape[ax], ax,
                                  false)) < 0)
        goto done;
    if ((err = fw_op_output(&y, arr->device, arr->dtype, ishape, nd)) < 0)
        goto done;
    if ((err = fw_op_dense(&ad, ae)) < 0)
        goto done;
    {
        const int64_t *di;
        fw_tensor *keep = NULL;
        if ((err = fw__idx_on_device(&di, &keep, arr->device, idx, nidx)) < 0)
            goto done;
        err = fw__idx_kernels("take_along_axis", arr)
                  ->take_along(fw_dtype_size(arr->dtype), fw__ptr(y), fw__ptr(ad), di,
                               fw__idx_prod(ishape, 0, ax), ashape[ax], ishape[ax],
                               fw__idx_prod(ishape, ax + 1, nd));
        fw_tensor_unref(keep);
        if (err < 0)
            goto done;
    }
    if (fw_dtype_is_float(arr->dtype) &&
        (err = record_axis_index("take_along_axis", fw__idx_along_backward, 1, &ae, y, ax, idx,
                                 ishape, nd)) < 0)
        goto done;
    *out = y;
    y = NULL;
done:
    free(idx);
    fw_tensor_unref(ae);
    fw_tensor_unref(ie);
    fw_tensor_unref(ad);
    fw_tensor_unref(y);
    return err;
}

/* ---- index_add ------------------------------------------------------------------------ */

/* dst (dense, x's geometry) += value rows at idx (host), typed. */
static int index_add_kernel(fw_tensor *dst, const fw_tensor *vd, const int64_t *idx,
                            int64_t nidx, int ax)
{
    int64_t outer = fw__idx_prod(dst->shape, 0, ax), len = dst->shape[ax];
    int64_t inner = fw__idx_prod(dst->shape, ax + 1, dst->ndim);
    const int64_t *di;
    fw_tensor *keep = NULL;
    int err;

    if ((err = fw__idx_on_device(&di, &keep, dst->device, idx, nidx)) < 0)
        return err;
    err = fw__idx_kernels("index_add", dst)->index_add(dst->dtype, fw__ptr(dst), fw__ptr(vd),
                                                       di, nidx, outer, len, inner);
    fw_tensor_unref(keep);
    return err;
}

/* Checks shared by index_add and index_add_: dtype, axis, value shape; loads idx. */
static int index_add_check(int *ax, int64_t **idx, int64_t *nidx, const char *op,
                           fw_tensor *x, fw_tensor *index, int axis, fw_tensor *value)
{
    char b1[96], b2[96];
    int err;
    bool ok;

    *idx = NULL;
    if ((err = fw__idx_check_input(op, "x", x)) < 0 ||
        (err = fw__idx_check_input(op, "index", index)) < 0 ||
        (err = fw__idx_check_input(op, "value", value)) < 0 ||
        (err = fw__idx_same_device(op, "index", index, x)) < 0 ||
        (err = fw__idx_same_device(op, "value", value, x)) < 0)
        return err;
    if (x->dtype == FW_BOOL)
        return fw_error_set(FW_EDTYPE, "%s: x must be numeric, got bool", op);
    if (value->dtype != x->dtype)
        return fw_error_set(FW_EDTYPE, "%s: value is %s but x is %s", op,
                            fw_dtype_name(value->dtype), fw_dtype_name(x->dtype));
    if (x->ndim == 0)
        return fw_error_set(FW_ESHAPE, "%s: x must have at least 1 dim, got shape []", op);
    if ((err = fw_op_axis(ax, op, axis, x->ndim)) < 0)
        return err;
    if (index->ndim != 1)
        return fw_error_set(FW_ESHAPE, "%s: index must be 1-D, got shape %s", op,
                            fw_shape_format(b1, sizeof(b1), index->shape, index->ndim));
    ok = value->ndim == x->ndim;
    for (int d = 0; ok && d < x->ndim; d++)
        ok = value->shape[d] == (d == *ax ? index->shape[0] : x->shape[d]);
    if (!ok)
        return fw_error_set(FW_ESHAPE, "%s: value %s does not fit x %s with %lld indices "
                            "along axis %d", op,
                            fw_shape_format(b1, sizeof(b1), value->shape, value->ndim),
                            fw_shape_format(b2, sizeof(b2), x->shape, x->ndim),
                            (long long)index->shape[0], *ax);
    return fw__idx_load_index(idx, nidx, op, index, x->shape[*ax], *ax, false);
}

static int index_add_backward(fw_node *node, fw_tensor **gin, fw_tensor *const *gout)
{
    int axis = ((axis_attr *)fw_node_attr(node))->axis, err;

    if (fw_node_needs_grad(node, 0))
        gin[0] = fw_tensor_ref(gout[0]);
    if (fw_node_needs_grad(node, 1) &&
        (err = fw_index_select(&gin[1], gout[0], fw_node_saved(node, 0), axis)) < 0)
        return err;
    return 0;
}

int fw_index_add(fw_tensor **out, fw_tensor *x, fw_tensor *index, int axis,
                 fw_tensor *value)
{
    fw_tensor *y = NULL, *vd = NULL, *in[2];
    int64_t *idx = NULL, nidx;
    int ax, err;

    *out = NULL;
    if ((err = index_add_check(&ax, &idx, &nidx, "index_add", x, index, axis, value)) < 0)
        return err;
    if (x->dtype == FW_FLOAT16 || x->dtype == FW_BFLOAT16) {
        fw_tensor *xu = NULL, *vu = NULL, *yu = NULL;
        if ((err = fw_op_upcast(&xu, x)) >= 0 && (err = fw_op_upcast(&vu, value)) >= 0 &&
            (err = fw_index_add(&yu, xu, index, axis, vu)) >= 0)
            err = fw_cast(out, yu, x->dtype);
        fw_tensor_unref(xu);
        fw_tensor_unref(vu);
        fw_tensor_unref(yu);
        free(idx);
        return err < 0 ? err : 0;
    }
    {
        bool prev = fw_set_grad_enabled(false);
        err = fw_tensor_clone(&y, x);
        fw_set_grad_enabled(prev);
        if (err < 0)
            goto done;
    }
    if ((err = fw_op_dense(&vd, value)) < 0 || (err = index_add_kernel(y, vd, idx, nidx, ax)) < 0)
        goto done;
    in[0] = x;
    in[1] = value;
    if (fw_dtype_is_float(x->dtype) &&
        (err = record_axis_index("index_add", index_add_backward, 2, in, y, ax, idx, &nidx, 1)) < 0)
        goto done;
    *out = y;
    y = NULL;
done:
    free(idx);
    fw_tensor_unref(vd);
    fw_tensor_unref(y);
    return err;
}

/* Paddle's in-place rule, shared with the slice writes (index_put.c). */
int fw__idx_check_inplace(const char *op, const fw_tensor *x)
{
    if (!fw_grad_enabled() || x->stop_gradient)
        return 0;
    if (fw_tensor_is_leaf(x))
        return fw_error_set(FW_EGRAD, "%s: leaf tensor that doesn't stop gradient can't "
                            "be written in place (use no-grad mode)", op);
    return fw_error_set(FW_EGRAD, "%s: in-place write into a tensor with grad history "
                        "is not supported", op);
}

int fw_index_add_(fw_tensor *x, fw_tensor *index, int axis, fw_tensor *value)
{
    fw_tensor *vd = NULL, *xd = NULL;
    int64_t *idx = NULL, nidx;
    int ax, err;

    if ((err = index_add_check(&ax, &idx, &nidx, "index_add_", x, index, axis, value)) < 0)
        return err;
    if ((err = fw__idx_check_inplace("index_add_", x)) < 0)
        goto done;
    if (x->dtype == FW_FLOAT16 || x->dtype == FW_BFLOAT16) {
        err = fw_error_set(FW_EDTYPE, "index_add_: %s is not supported in place",
                           fw_dtype_name(x->dtype));
        goto done;
    }
    if ((err = fw_op_dense(&vd, value)) < 0 || (err = fw__idx_unalias(&vd, x)) < 0)
        goto done;
    if (fw_tensor_is_contiguous(x)) {
        err = index_add_kernel(x, vd, idx, nidx, ax);
    } else if ((err = fw_op_dense(&xd, x)) == 0 &&
               (err = index_add_kernel(xd, vd, idx, nidx, ax)) == 0) {
        err = fw__idx_kernels("index_add_", x)
                  ->strided_write(fw_dtype_size(x->dtype), fw__ptr(x), x->strides, fw__ptr(xd),
                                  xd->strides, x->ndim, x->shape);
    }
done:
    free(idx);
    fw_tensor_unref(vd);
    fw_tensor_unref(xd);
    return err;
}

/* ---- where ---------------------------------------------------------------------------------- */

static int where_backward(fw_node *node, fw_tensor **gin, fw_tensor *const *gout)
{
    fw_tensor *cond = fw_node_saved(node, 0), *zero = NULL, *t = NULL;
    int err = 0;

    if ((err = fw_op_zeros(&zero, gout[0]->device, gout[0]->dtype, NULL, 0)) < 0)
        return err;
    for (int i = 0; i < 2; i++) {
        int nd;
        const int64_t *s;
        if (!fw_node_needs_grad(node, i))
            continue;
        s = fw_node_input_shape(node, i, &nd);
        if ((err = i == 0 ? fw_where(&t, cond, gout[0], zero)
                          : fw_where(&t, cond, zero, gout[0])) < 0)
            break;
        err = fw_op_reduce_to_shape(&gin[i], t, s, nd);
        fw_tensor_unref(t);
        t = NULL;
        if (err < 0)
            break;
    }
    fw_tensor_unref(zero);
    return err < 0 ? err : 0;
}

/* Element strides of t aligned to a broadcast result of rank nd (0 on
 * broadcast dims). */
static void bstrides(int64_t *st, const fw_tensor *t, int nd)
{
    int off = nd - t->ndim;
    for (int d = 0; d < nd; d++) {
        int k = d - off;
        st[d] = (k < 0 || t->shape[k] == 1) ? 0 : t->strides[k];
    }
}

int fw_where(fw_tensor **out, fw_tensor *condition, fw_tensor *x, fw_tensor *y)
{
    int64_t s1[FW_MAX_DIMS], shape[FW_MAX_DIMS], cs[FW_MAX_DIMS], xs[FW_MAX_DIMS],
        ys[FW_MAX_DIMS];
    int n1, nd, err;
    fw_tensor *r = NULL, *in[2];
    fw_node *node;

    *out = NULL;
    if ((err = fw__idx_check_input("where", "condition", condition)) < 0 ||
        (err = fw__idx_check_input("where", "x", x)) < 0 ||
        (err = fw__idx_check_input("where", "y", y)) < 0 ||
        (err = fw__idx_same_device("where", "condition", condition, x)) < 0 ||
        (err = fw__idx_same_device("where", "y", y, x)) < 0)
        return err;
    if (condition->dtype != FW_BOOL)
        return fw_error_set(FW_EDTYPE, "where: condition must be bool, got %s",
                            fw_dtype_name(condition->dtype));
    if (x->dtype != y->dtype)
        return fw_error_set(FW_EDTYPE, "where: x is %s but y is %s", fw_dtype_name(x->dtype),
                            fw_dtype_name(y->dtype));
    if ((err = fw_op_broadcast_shapes(s1, &n1, "where", x->shape, x->ndim, y->shape,
                                      y->ndim)) < 0 ||
        (err = fw_op_broadcast_shapes(shape, &nd, "where", condition->shape, condition->ndim,
                                      s1, n1)) < 0)
        return err;
    if ((err = fw_op_output(&r, x->device, x->dtype, shape, nd)) < 0)
        return err;
    bstrides(cs, condition, nd);
    bstrides(xs, x, nd);
    bstrides(ys, y, nd);
    if ((err = fw__idx_kernels("where", x)->where(fw_dtype_size(x->dtype), fw__ptr(r),
                                                  fw__ptr(condition), cs, fw__ptr(x), xs,
                                                  fw__ptr(y), ys, nd, shape)) < 0)
        goto fail;
    in[0] = x;
    in[1] = y;
    if (fw_dtype_is_float(x->dtype)) {
        if ((err = fw_node_record(&node, "where", where_backward, 2, in, 1, &r, 1, 0)) < 0)
            goto fail;
        if (node && (err = fw_node_save(node, 0, condition)) < 0)
            goto fail;
    }
    *out = r;
    return 0;
fail:
    fw_tensor_unref(r);
    return err;
}

/* ---- clip ---------------------------------------------------------------------------------- */

typedef struct {
    int has_lo, has_hi;
    double lo, hi;
} clip_attr;

static int clip_backward(fw_node *node, fw_tensor **gin, fw_tensor *const *gout)
{
    const clip_attr *a = fw_node_attr(node);
    fw_tensor *x = NULL, *g = NULL, *gx = NULL;
    int err;

    /* create_graph: run the kernel on ones for the 0/1 mask (a constant)
     * and multiply with a recorded op, so the gradient keeps g's history */
    bool graph = fw__autograd_creating_graph();

    if ((err = fw_op_dense(&x, fw_node_saved(node, 0))) < 0)
        return err;
    if ((err = graph ? fw_ones_like(&g, x) : fw_op_dense(&g, gout[0])) < 0)
        goto done;
    if ((err = fw_op_output(&gx, x->device, x->dtype, x->shape, x->ndim)) < 0)
        goto done;
    if ((err = fw__idx_kernels("clip backward", x)
                   ->clip_grad(x->dtype, fw__ptr(gx), fw__ptr(g), fw__ptr(x), x->numel,
                               a->has_lo, a->lo, a->has_hi, a->hi)) < 0)
        goto done;
    if (graph) {
        err = fw_mul(&gin[0], gout[0], gx);
        goto done;
    }
    gin[0] = gx;
    gx = NULL;
done:
    fw_tensor_unref(x);
    fw_tensor_unref(g);
    fw_tensor_unref(gx);
    return err;
}

int fw_clip(fw_tensor **out, fw_tensor *x, const double *min, const double *max)
{
    fw_tensor *xd = NULL, *y = NULL;
    int hl = min != NULL, hh = max != NULL, err;
    double lo = hl ? *min : 0, hi = hh ? *max : 0;
    fw_node *node;
    int64_t n;

    *out = NULL;
    if ((err = fw__idx_check_input("clip", "x", x)) < 0)
        return err;
    if (x->dtype == FW_BOOL)
        return fw_error_set(FW_EDTYPE, "clip: x must be numeric, got bool");
    if ((hl && isnan(lo)) || (hh && isnan(hi)))
        return fw_error_set(FW_EINVAL, "clip: min/max must not be NaN");
    if (hl && hh && lo > hi)
        return fw_error_set(FW_EINVAL, "clip: min %g is greater than max %g", lo, hi);
    if (x->dtype == FW_FLOAT16 || x->dtype == FW_BFLOAT16) {
        fw_tensor *xu = NULL, *yu = NULL;
        if ((err = fw_op_upcast(&xu, x)) >= 0 && (err = fw_clip(&yu, xu, min, max)) >= 0)
            err = fw_cast(out, yu, x->dtype);
        fw_tensor_unref(xu);
        fw_tensor_unref(yu);
        return err < 0 ? err : 0;
    }
    if ((err = fw_op_dense(&xd, x)) < 0)
        return err;
    if ((err = fw_op_output(&y, x->device, x->dtype, x->shape, x->ndim)) < 0)
        goto done;
    n = x->numel;
    switch (x->dtype) {   /* integer bounds outside the type's range clamp to it */
    case FW_INT32: hl = hl && lo > INT32_MIN; hh = hh && hi < INT32_MAX; break;
    case FW_INT64: hl = hl && lo > -9.2e18; hh = hh && hi < 9.2e18; break;
    case FW_UINT8: hl = hl && lo > 0; hh = hh && hi < 255; break;
    default: break;
    }
    if ((err = fw__idx_kernels("clip", x)->clip(x->dtype, fw__ptr(y), fw__ptr(xd), n, hl, lo,
                                                hh, hi)) < 0)
        goto done;
    if (fw_dtype_is_float(x->dtype)) {
        if ((err = fw_node_record(&node, "clip", clip_backward, 1, &x, 1, &y, 1,
                                  sizeof(clip_attr))) < 0)
            goto done;
        if (node) {
            clip_attr *a = fw_node_attr(node);
            a->has_lo = hl;
            a->has_hi = hh;
            a->lo = lo;
            a->hi = hi;
            if ((err = fw_node_save(node, 0, x)) < 0)
                goto done;
        }
    }
    *out = y;
    y = NULL;
done:
    fw_tensor_unref(xd);
    fw_tensor_unref(y);
    return err;
}

/* ---- one_hot -------------------------------------------------------------------------------- */

int fw_one_hot(fw_tensor **out, fw_tensor *x, int64_t num_classes)
{
    int64_t *idx = NULL, n, shape[FW_MAX_DIMS];
    fw_tensor *y = NULL;
    int err;

    *out = NULL;
    if ((err = fw__idx_check_input("one_hot", "x", x)) < 0)
        return err;
    if (num_classes < 1)
        return fw_error_set(FW_EINVAL, "one_hot: num_classes must be >= 1, got %lld",
                            (long long)num_classes);
    if (x->ndim + 1 > FW_MAX_DIMS)
        return fw_error_set(FW_ESHAPE, "one_hot: result would have %d dims (max %d)",
                            x->ndim + 1, FW_MAX_DIMS);
    if ((err = fw__idx_load_index(&idx, &n, "one_hot", x, num_classes, -1, false)) < 0)
        return err;
    memcpy(shape, x->shape, (size_t)x->ndim * sizeof(*shape));
    shape[x->ndim] = num_classes;
    if ((err = fw_op_output(&y, x->device, FW_FLOAT32, shape, x->ndim + 1)) >= 0) {
        const int64_t *di;
        fw_tensor *keep = NULL;
        if ((err = fw__idx_on_device(&di, &keep, x->device, idx, n)) == 0)
            err = fw__idx_kernels("one_hot", x)->one_hot(FW_FLOAT32, fw__ptr(y), di, n,
                                                         num_classes);
        fw_tensor_unref(keep);
    }
    free(idx);
    if (err < 0) {
        fw_tensor_unref(y);
        return err;
    }
    *out = y;
    return 0;
}

/* ---- cumsum ----------------------------------------------------------------------------------- */

/* create_graph: cumsum's gradient (a reversed cumsum) as an op of its own,
 * "cumsum_grad", whose backward is cumsum again. */
static int cumsum_grad_backward(fw_node *node, fw_tensor **gin, fw_tensor *const *gout)
{
    int axis = ((axis_attr *)fw_node_attr(node))->axis;
    return fw_node_needs_grad(node, 0) ? fw_cumsum(&gin[0], gout[0], &axis, NULL) : 0;
}

static int cumsum_backward(fw_node *node, fw_tensor **gin, fw_tensor *const *gout)
{
    int axis = ((axis_attr *)fw_node_attr(node))->axis, err;
    fw_tensor *g = NULL, *gx = NULL;

    if ((err = fw_op_dense(&g, gout[0])) < 0)
        return err;
    if ((err = fw_op_output(&gx, g->device, g->dtype, g->shape, g->ndim)) < 0)
        goto done;
    int64_t outer = fw__idx_prod(g->shape, 0, axis), len = g->shape[axis];
    int64_t inner = fw__idx_prod(g->shape, axis + 1, g->ndim);
    const struct fw_index_kernels *k = fw__idx_kernels("cumsum backward", g);
    if (k == NULL) {
        err = FW_EDEVICE;
        goto done;
    }
    if ((err = k->cumsum(g->dtype, fw__ptr(gx), fw__ptr(g), outer, len, inner, 1)) < 0)
        goto done;
    if (fw__autograd_creating_graph()) {
        fw_node *n2 = NULL;
        fw_tensor *in = gout[0];
        if ((err = fw_node_record(&n2, "cumsum_grad", cumsum_grad_backward, 1, &in, 1, &gx, 0,
                                  sizeof(axis_attr))) < 0)
            goto done;
        if (n2)
            ((axis_attr *)fw_node_attr(n2))->axis = axis;
    }
    gin[0] = gx;
    gx = NULL;
done:
    fw_tensor_unref(g);
    fw_tensor_unref(gx);
    return err;
}

int fw_cumsum(fw_tensor **out, fw_tensor *x, const int *axis, const fw_dtype *dtype)
{
    fw_tensor *xc = NULL, *xd = NULL, *y = NULL;
    fw_dtype dt;
    fw_node *node;
    int ax = 0, err;

    *out = NULL;
    if ((err = fw__idx_check_input("cumsum", "x", x)) < 0)
        return err;
    if (dtype != NULL && (!fw_dtype_is_valid(*dtype) || *dtype == FW_BOOL))
        return fw_error_set(FW_EDTYPE, "cumsum: cannot accumulate in %s",
                            fw_dtype_name(*dtype));
    dt = dtype ? *dtype : x->dtype == FW_BOOL ? FW_INT64 : x->dtype;
    if (axis == NULL) {
        int64_t m1 = -1;
        if ((err = fw_reshape(&xc, x, &m1, 1)) < 0)
            return err;
    } else {
        if ((err = fw_op_axis(&ax, "cumsum", *axis, x->ndim)) < 0)
            return err;
        xc = fw_tensor_ref(x);
    }
    if (xc->ndim == 0) { /* 0-D: axis 0/-1 is the element itself */
        int64_t one = 1;
        fw_tensor *t = NULL;
        if ((err = fw_reshape(&t, xc, &one, 1)) < 0)
            goto done;
        fw_tensor_unref(xc);
        xc = t;
    }
    if (xc->dtype != dt) {
        fw_tensor *t = NULL;
        if ((err = fw_cast(&t, xc, dt)) < 0)
            goto done;
        fw_tensor_unref(xc);
        xc = t;
    }
    if (dt == FW_FLOAT16 || dt == FW_BFLOAT16) {
        fw_tensor *t = NULL, *yu = NULL;
        int a1 = ax;
        if ((err = fw_op_upcast(&t, xc)) >= 0 && (err = fw_cumsum(&yu, t, &a1, NULL)) >= 0)
            err = fw_cast(&y, yu, dt);
        fw_tensor_unref(t);
        fw_tensor_unref(yu);
        if (err < 0)
            goto done;
    } else {
        int64_t outer = fw__idx_prod(xc->shape, 0, ax), len = xc->shape[ax];
        int64_t inner = fw__idx_prod(xc->shape, ax + 1, xc->ndim);
        if ((err = fw_op_dense(&xd, xc)) < 0 ||
            (err = fw_op_output(&y, xc->device, dt, xc->shape, xc->ndim)) < 0 ||
            (err = fw__idx_kernels("cumsum", xc)->cumsum(dt, fw__ptr(y), fw__ptr(xd), outer, len,
                                                         inner, 0)) < 0)
            goto done;
        if (fw_dtype_is_float(dt)) {
            if ((err = fw_node_record(&node, "cumsum", cumsum_backward, 1, &xc, 1, &y, 0,
                                      sizeof(axis_attr))) < 0)
                goto done;
            if (node)
                ((axis_attr *)fw_node_attr(node))->axis = ax;
        }
    }
    if (axis != NULL && x->ndim == 0) { /* back to shape [] */
        fw_tensor *t = NULL;
        if ((err = fw_reshape(&t, y, NULL, 0)) < 0)
            goto done;
        fw_tensor_unref(y);
        y = t;
    }
    *out = y;
    y = NULL;
    err = 0;
done:
    fw_tensor_unref(xc);
    fw_tensor_unref(xd);
    fw_tensor_unref(y);
    return err;
}
