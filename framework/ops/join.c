/*
 * join.c - concat, stack, split, tile and pad (fw/index.h), with backward.
 */
#include "index_int.h"

#include <stdlib.h>
#include <string.h>

/* ---- concat / stack ------------------------------------------------------ */

typedef fw__idx_axis_attr axis_attr;

static int concat_backward(fw_node *node, fw_tensor **gin, fw_tensor *const *gout)
{
    int axis = ((axis_attr *)fw_node_attr(node))->axis;
    int n = fw_node_n_inputs(node), err;
    int64_t off = 0;

    for (int i = 0; i < n; i++) {
        int nd;
        const int64_t *shape = fw_node_input_shape(node, i, &nd);
        int64_t end = off + shape[axis];
        if (fw_node_needs_grad(node, i) &&
            (err = fw_slice(&gin[i], gout[0], &axis, &off, &end, NULL, 1)) < 0)
            return err;
        off = end;
    }
    return 0;
}

static int stack_backward(fw_node *node, fw_tensor **gin, fw_tensor *const *gout)
{
    int axis = ((axis_attr *)fw_node_attr(node))->axis;
    int n = fw_node_n_inputs(node), err;

    for (int i = 0; i < n; i++)
        if (fw_node_needs_grad(node, i) && (err = fw_select(&gin[i], gout[0], axis, i)) < 0)
            return err;
    return 0;
}

/* Shared body of concat and stack: validates, joins along `axis` of the
 * output (for stack every input contributes length 1 there). */
static int join(fw_tensor **out, const char *op, fw_tensor *const *x, int n, int axis,
                bool stack)
{
    fw_tensor *y = NULL, **dense = NULL;
    const void **ptrs = NULL;
    int64_t *lens = NULL, shape[FW_MAX_DIMS];
    int nd, ax, err;
    fw_node *node;
    char b1[96], b2[96];

    *out = NULL;
    if (x == NULL || n < 1)
        return fw_error_set(FW_EINVAL, "%s: needs at least one tensor, got %d", op, n);
    for (int i = 0; i < n; i++)
        if ((err = fw__idx_check_input(op, "an input tensor", x[i])) < 0)
            return err;
    nd = x[0]->ndim;
    if (!stack && nd == 0)
        return fw_error_set(FW_ESHAPE, "%s: cannot concatenate 0-D tensors", op);
    if (stack && nd + 1 > FW_MAX_DIMS)
        return fw_error_set(FW_ESHAPE, "%s: result would have %d dims (max %d)", op,
                            nd + 1, FW_MAX_DIMS);
    if ((err = fw_op_axis(&ax, op, axis, stack ? nd + 1 : nd)) < 0)
        return err;
    for (int i = 1; i < n; i++) {
        if ((err = fw__idx_same_device(op, "an input tensor", x[i], x[0])) < 0)
            return err;
        if (x[i]->dtype != x[0]->dtype)
            return fw_error_set(FW_EDTYPE, "%s: input %d is %s but input 0 is %s", op, i,
                                fw_dtype_name(x[i]->dtype), fw_dtype_name(x[0]->dtype));
        bool ok = x[i]->ndim == nd;
        for (int d = 0; ok && d < nd; d++)
            ok = x[i]->shape[d] == x[0]->shape[d] || (!stack && d == ax);
        if (!ok)
            return fw_error_set(FW_ESHAPE, "%s: shapes %s (input 0) and %s (input %d) %s", op,
                                fw_shape_format(b1, sizeof(b1), x[0]->shape, nd),
                                fw_shape_format(b2, sizeof(b2), x[i]->shape, x[i]->ndim),
                                i, stack ? "differ" : "differ outside the axis");
    }
    dense = calloc((size_t)n, sizeof(*dense));
    ptrs = calloc((size_t)n, sizeof(*ptrs));
    lens = calloc((size_t)n, sizeof(*lens));
    if (dense == NULL || ptrs == NULL || lens == NULL) {
        err = fw_error_set(FW_ENOMEM, "%s: %d inputs", op, n);
        goto done;
    }
    int64_t total = 0;
    for (int i = 0; i < n; i++) {
        if ((err = fw_op_dense(&dense[i], x[i])) < 0)
            goto done;
        ptrs[i] = fw__ptr(dense[i]);
        lens[i] = stack ? 1 : x[i]->shape[ax];
        total += lens[i];
    }
    if (stack) {
        for (int d = 0, s = 0; d < nd + 1; d++)
            shape[d] = d == ax ? n : x[0]->shape[s++];
        nd++;
    } else {
        memcpy(shape, x[0]->shape, (size_t)nd * sizeof(*shape));
        shape[ax] = total;
    }
    if ((err = fw_op_output(&y, x[0]->device, x[0]->dtype, shape, nd)) < 0)
        goto done;
    if ((err = fw__idx_kernels(op, y)->concat(fw_dtype_size(y->dtype), fw__ptr(y), ptrs, lens,
                                              n, fw__idx_prod(shape, 0, ax),
                                              fw__idx_prod(shape, ax + 1, nd))) < 0)
        goto done;
    if (fw_dtype_is_float(y->dtype)) {
        if ((err = fw_node_record(&node, stack ? "stack" : "concat",
                                  stack ? stack_backward : concat_backward, n, x, 1, &y, 0,
                                  sizeof(axis_attr))) < 0)
            goto done;
        if (node)
            ((axis_attr *)fw_node_attr(node))->axis = ax;
    }
    *out = y;
    y = NULL;
    err = 0;
done:
    if (dense)
        for (int i = 0; i < n; i++)
            fw_tensor_unref(dense[i]);
    free(dense);
    free(ptrs);
    free(lens);
    fw_tensor_unref(y);
    return err;
}

int fw_concat(fw_tensor **out, fw_tensor *const *x, int n, int axis)
{
    return join(out, "concat", x, n, axis, false);
}

int fw_stack(fw_tensor **out, fw_tensor *const *x, int n, int axis)
{
    return join(out, "stack", x, n, axis, true);
}

/* ---- split ---------------------------------------------------------------- */

static int split_backward(fw_node *node, fw_tensor **gin, fw_tensor *const *gout)
{
    axis_attr *a = fw_node_attr(node);
    int num = *(int *)(a + 1);
    return fw_concat(&gin[0], gout, num, a->axis);
}

int fw_split(fw_tensor **outs, fw_tensor *x, int num, const int64_t *sections, int axis)
{
    fw_tensor *xd = NULL, **res = NULL;
    void **ptrs = NULL;
    int64_t *lens = NULL, shape[FW_MAX_DIMS], len;
    int ax, err, minus = -1;
    fw_node *node;
    char b[96];

    if (outs == NULL || num < 1)
        return fw_error_set(FW_EINVAL, "split: num_or_sections must be >= 1, got %d", num);
    for (int i = 0; i < num; i++)
        outs[i] = NULL;
    if ((err = fw__idx_check_input("split", "x", x)) < 0)
        return err;
    if (x->ndim == 0)
        return fw_error_set(FW_ESHAPE, "split: cannot split a 0-D tensor");
    if ((err = fw_op_axis(&ax, "split", axis, x->ndim)) < 0)
        return err;
    len = x->shape[ax];
    if ((lens = calloc((size_t)num, sizeof(*lens))) == NULL)
        return fw_error_set(FW_ENOMEM, "split: %d sections", num);
    if (sections == NULL) {
        if (len % num != 0) {
            err = fw_error_set(FW_ESHAPE, "split: axis %d of shape %s (size %lld) is not "
                               "divisible into %d parts", ax,
                               fw_shape_format(b, sizeof(b), x->shape, x->ndim),
                               (long long)len, num);
            goto done;
        }
        for (int i = 0; i < num; i++)
            lens[i] = len / num;
    } else {
        int64_t sum = 0;
        for (int i = 0; i < num; i++) {
            if (sections[i] == -1 && minus < 0) {
                minus = i;
                continue;
            }
            if (sections[i] < 0) {
                err = fw_error_set(FW_EINVAL, "split: section %d is %lld (only one -1 is "
                                   "allowed, other sizes must be >= 0)", i,
                                   (long long)sections[i]);
                goto done;
            }
            lens[i] = sections[i];
            sum += sections[i];
        }
        if (minus >= 0) {
            if (sum > len) {
                err = fw_error_set(FW_ESHAPE, "split: sections add up to %lld, more than "
                                   "axis %d of shape %s", (long long)sum, ax,
                                   fw_shape_format(b, sizeof(b), x->shape, x->ndim));
                goto done;
            }
            lens[minus] = len - sum;
        } else if (sum != len) {
            err = fw_error_set(FW_ESHAPE, "split: sections add up to %lld but axis %d of "
                               "shape %s has size %lld", (long long)sum, ax,
                               fw_shape_format(b, sizeof(b), x->shape, x->ndim),
                               (long long)len);
            goto done;
        }
    }
    res = calloc((size_t)num, sizeof(*res));
    ptrs = calloc((size_t)num, sizeof(*ptrs));
    if (res == NULL || ptrs == NULL) {
        err = fw_error_set(FW_ENOMEM, "split: %d sections", num);
        goto done;
    }
    memcpy(shape, x->shape, (size_t)x->ndim * sizeof(*shape));
    for (int i = 0; i < num; i++) {
        shape[ax] = lens[i];
        if ((err = fw_op_output(&res[i], x->device, x->dtype, shape, x->ndim)) < 0)
            goto done;
        ptrs[i] = fw__ptr(res[i]);
    }
    if ((err = fw_op_dense(&xd, x)) < 0)
        goto done;
    if ((err = fw__idx_kernels("split", x)->split(fw_dtype_size(x->dtype), ptrs, fw__ptr(xd),
                                                  lens, num, fw__idx_prod(x->shape, 0, ax),
                                                  fw__idx_prod(x->shape, ax + 1, x->ndim))) < 0)
        goto done;
    if (fw_dtype_is_float(x->dtype)) {
        if ((err = fw_node_record(&node, "split", split_backward, 1, &x, num, res, 0,
                                  sizeof(axis_attr) + sizeof(int))) < 0)
            goto done;
        if (node) {
            axis_attr *a = fw_node_attr(node);
            a->axis = ax;
            *(int *)(a + 1) = num;
        }
    }
    for (int i = 0; i < num; i++) {
        outs[i] = res[i];
        res[i] = NULL;
    }
    err = 0;
done:
    if (res)
        for (int i = 0; i < num; i++)
            fw_tensor_unref(res[i]);
    free(res);
    free(ptrs);
    free(lens);
    fw_tensor_unref(xd);
    return err;
}

/* ---- separable index maps: tile and pad ------------------------------------ */

typedef struct {
    int ndim;                      /* rank of the mapped geometry */
    int mode;                      /* pad mode; -1 for tile */
    int64_t in_shape[FW_MAX_DIMS];
    int64_t out_shape[FW_MAX_DIMS];
    int64_t before[FW_MAX_DIMS];   /* pad: elements added before (may be < 0) */
} map_attr;

/* Build maps[d] (out_shape[d] entries each) for the geometry in `a`, in one
 * malloc'ed block (*block; caller frees). */
static int build_maps(int64_t **block, int64_t *maps[FW_MAX_DIMS], const map_attr *a)
{
    int64_t total = 0, *p;

    for (int d = 0; d < a->ndim; d++)
        total += a->out_shape[d];
    if ((p = malloc((size_t)(total > 0 ? total : 1) * sizeof(*p))) == NULL)
        return fw_error_set(FW_ENOMEM, "index map of %lld entries", (long long)total);
    *block = p;
    for (int d = 0; d < a->ndim; d++) {
        int64_t n = a->in_shape[d], m = a->out_shape[d];
        maps[d] = p;
        for (int64_t j = 0; j < m; j++) {
            int64_t i;
            if (a->mode < 0) {
                i = j % n;                       /* tile */
            } else {
                i = j - a->before[d];
                switch (a->mode) {
                case FW_PAD_CONSTANT:
                    if (i < 0 || i >= n)
                        i = -1;
                    break;
                case FW_PAD_REFLECT:
                    if (i < 0)
                        i = -i;
                    if (i >= n)
                        i = 2 * (n - 1) - i;
                    break;
                case FW_PAD_REPLICATE:
                    i = i < 0 ? 0 : i >= n ? n - 1 : i;
                    break;
                default: /* circular */
                    i = ((i % n) + n) % n;
                    break;
                }
            }
            p[j] = i;
        }
        p += m;
    }
    return 0;
}

static int map_backward(fw_node *node, fw_tensor **gin, fw_tensor *const *gout)
{
    const map_attr *a = fw_node_attr(node);
    fw_tensor *g = NULL, *gx = NULL;
    int64_t *block = NULL, *maps[FW_MAX_DIMS];
    int nd, err;
    const int64_t *xs = fw_node_input_shape(node, 0, &nd);
    fw_dtype dt = fw_node_input_dtype(node, 0);

    if ((err = fw__idx_grad_dense(&g, gout[0])) < 0)
        return err;
    if ((err = fw_op_zeros(&gx, g->device, g->dtype, xs, nd)) < 0)
        goto done;
    if ((err = build_maps(&block, maps, a)) < 0 ||
        (err = fw__idx_map_add(gx, g, a->ndim, a->out_shape, a->in_shape, block)) < 0)
        goto done;
    err = fw__idx_grad_finish(&gin[0], gx, dt);
    gx = NULL;
done:
    free(block);
    fw_tensor_unref(g);
    fw_tensor_unref(gx);
    return err;
}

/* Run the map copy described by `a` (x viewed with a->in_shape) and record
 * the backward. */
static int map_op(fw_tensor **out, const char *op, fw_tensor *x, const map_attr *a,
                  const void *fill)
{
    fw_tensor *xd = NULL, *y = NULL;
    int64_t *block = NULL, *maps[FW_MAX_DIMS];
    fw_node *node;
    int err;

    if ((err = fw_op_output(&y, x->device, x->dtype, a->out_shape, a->ndim)) < 0)
        return err;
    if ((err = build_maps(&block, maps, a)) < 0)
        goto done;
    if ((err = fw_op_dense(&xd, x)) < 0)
        goto done;
    if (y->numel > 0) {
        const int64_t *dm;
        fw_tensor *keep = NULL;
        int64_t total = 0;
        for (int d = 0; d < a->ndim; d++)
            total += a->out_shape[d];
        if ((err = fw__idx_on_device(&dm, &keep, x->device, block, total)) < 0)
            goto done;
        err = fw__idx_kernels(op, x)->map_copy(fw_dtype_size(x->dtype), fw__ptr(y),
                                               fw__ptr(xd), a->ndim, a->out_shape,
                                               a->in_shape, dm, fill);
        fw_tensor_unref(keep);
        if (err < 0)
            goto done;
    }
    if (fw_dtype_is_float(x->dtype)) {
        if ((err = fw_node_record(&node, op, map_backward, 1, &x, 1, &y, 0,
                                  sizeof(map_attr))) < 0)
            goto done;
        if (node)
            memcpy(fw_node_attr(node), a, sizeof(*a));
    }
    *out = y;
    y = NULL;
done:
    free(block);
    fw_tensor_unref(xd);
    fw_tensor_unref(y);
    return err;
}

int fw_tile(fw_tensor **out, fw_tensor *x, const int64_t *repeat_times, int n)
{
    map_attr a;
    int nd;

    *out = NULL;
    if (x == NULL || (repeat_times == NULL && n > 0) || n < 0)
        return fw_error_set(FW_EINVAL, "tile: x or repeat_times is NULL");
    int err = fw__idx_check_input("tile", "x", x);
    if (err < 0)
        return err;
    nd = n > x->ndim ? n : x->ndim;
    if (nd > FW_MAX_DIMS)
        return fw_error_set(FW_ESHAPE, "tile: %d repeat_times exceed %d dims", n, FW_MAX_DIMS);
    memset(&a, 0, sizeof(a));
    a.ndim = nd;
    a.mode = -1;
    for (int d = 0; d < nd; d++) {
        int xi = d - (nd - x->ndim), ri = d - (nd - n);
        int64_t r = ri >= 0 ? repeat_times[ri] : 1;
        if (r < 0)
            return fw_error_set(FW_EINVAL, "tile: repeat_times[%d] is %lld (must be >= 0)",
                                ri, (long long)r);
        a.in_shape[d] = xi >= 0 ? x->shape[xi] : 1;
        if (__builtin_mul_overflow(a.in_shape[d], r, &a.out_shape[d]))
            return fw_error_set(FW_ESHAPE, "tile: repeat_times[%d] = %lld overflows axis %d",
                                ri, (long long)r, d);
    }
    return map_op(out, "tile", x, &a, NULL);
}

int fw_pad(fw_tensor **out, fw_tensor *x, const int64_t *pad, int npad, fw_pad_mode mode,
           double value)
{
    map_attr a;
    unsigned char fill[8];
    int k, err;

    *out = NULL;
    if ((err = fw__idx_check_input("pad", "x", x)) < 0)
        return err;
    if (pad == NULL && npad > 0)
        return fw_error_set(FW_EINVAL, "pad: pad is NULL");
    if ((int)mode < 0 || (int)mode > FW_PAD_CIRCULAR)
        return fw_error_set(FW_EINVAL, "pad: unknown mode %d", (int)mode);
    if (npad < 0 || npad % 2 != 0)
        return fw_error_set(FW_EINVAL, "pad: pad needs an even number of entries, got %d", npad);
    k = npad / 2;
    if (k > x->ndim)
        return fw_error_set(FW_EINVAL, "pad: %d pad entries for a tensor of rank %d "
                            "(at most %d)", npad, x->ndim, 2 * x->ndim);
    memset(&a, 0, sizeof(a));
    a.ndim = x->ndim;
    a.mode = mode;
    memcpy(a.in_shape, x->shape, (size_t)x->ndim * sizeof(int64_t));
    for (int d = 0; d < x->ndim; d++) {
        int64_t before = 0, after = 0;
        if (mode == FW_PAD_CONSTANT && k == x->ndim) {
            before = pad[2 * d];            /* first axis to last */
            after = pad[2 * d + 1];
        } else if (d >= x->ndim - k) {
            int p = x->ndim - 1 - d;        /* last axis first */
            before = pad[2 * p];
            after = pad[2 * p + 1];
        }
        int64_t n = x->shape[d];
        if (mode != FW_PAD_CONSTANT && (before < 0 || after < 0))
            return fw_error_set(FW_EINVAL, "pad: negative pad %lld on axis %d needs "
                                "mode constant", (long long)(before < 0 ? before : after), d);
        if (mode == FW_PAD_REFLECT && (before > n - 1 || after > n - 1) &&
            (before > 0 || after > 0))
            return fw_error_set(FW_EINVAL, "pad: reflect pad (%lld, %lld) must be less than "
                                "the size %lld of axis %d", (long long)before,
                                (long long)after, (long long)n, d);
        if (mode == FW_PAD_CIRCULAR && (before > n || after > n))
            return fw_error_set(FW_EINVAL, "pad: circular pad (%lld, %lld) exceeds the size "
                                "%lld of axis %d", (long long)before, (long long)after,
                                (long long)n, d);
        if (mode == FW_PAD_REPLICATE && n == 0 && (before > 0 || after > 0))
            return fw_error_set(FW_EINVAL, "pad: replicate pad of empty axis %d", d);
        if (mode == FW_PAD_CIRCULAR && n == 0 && (before > 0 || after > 0))
            return fw_error_set(FW_EINVAL, "pad: circular pad of empty axis %d", d);
        int64_t m;
        if (__builtin_add_overflow(n, before, &m) || __builtin_add_overflow(m, after, &m))
            return fw_error_set(FW_EINVAL, "pad: pad (%lld, %lld) overflows axis %d",
                                (long long)before, (long long)after, d);
        if (n + before + after < 0)
            return fw_error_set(FW_EINVAL, "pad: pad (%lld, %lld) leaves axis %d of size "
                                "%lld negative", (long long)before, (long long)after, d,
                                (long long)n);
        a.before[d] = before;
        a.out_shape[d] = n + before + after;
    }
    fw__idx_scalar_bytes(fill, x->dtype, value);
    return map_op(out, "pad", x, &a, fill);
}
