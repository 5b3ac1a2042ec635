/*
 * nn_conv.c - linear, conv1d and conv2d ops (kernels in cpu/nn_conv.c).
 */
#include <stdint.h>

#include "fw/nn.h"
#include "nn_int.h"

/* ---- linear ---------------------------------------------------------------- */

typedef struct linear_attr {
    int64_t M, K, N;
} linear_attr;

/* With create_graph: dx = g w^T, dw = x^T g, db = sum(g) from recorded
 * matmuls over [M, K] / [M, N] views, so the gradients differentiate again. */
static int linear_backward_graph(fw_node *n, const linear_attr *a, fw_tensor **gin,
                                 fw_tensor *x, fw_tensor *w, fw_tensor *gout)
{
    fw_tensor *g2 = NULL, *x2 = NULL, *t = NULL;
    int64_t gs[2] = {a->M, a->N}, xs[2] = {a->M, a->K};
    int nd, err, ax0 = 0;
    const int64_t *shape;

    if ((err = fw_reshape(&g2, gout, gs, 2)) < 0)
        return err;
    if (fw_node_needs_grad(n, 0)) {
        shape = fw_node_input_shape(n, 0, &nd);
        if ((err = fw_matmul(&t, g2, w, false, true)) == 0)
            err = fw_reshape(&gin[0], t, shape, nd);
    }
    if (err == 0 && fw_node_needs_grad(n, 1) && (err = fw_reshape(&x2, x, xs, 2)) == 0)
        err = fw_matmul(&gin[1], x2, g2, true, false);
    if (err == 0 && fw_node_needs_grad(n, 2))
        err = fw_sum(&gin[2], g2, &ax0, 1, false);
    fw_tensor_unref(g2);
    fw_tensor_unref(x2);
    fw_tensor_unref(t);
    return err;
}

static int linear_backward(fw_node *n, fw_tensor **gin, fw_tensor *const *gout)
{
    const linear_attr *a = fw_node_attr(n);
    fw_tensor *x = fw_node_saved(n, 0), *w = fw_node_saved(n, 1), *g = NULL;
    const fw_nn_kernels *k;
    int err;

    if (fw__autograd_creating_graph())
        return linear_backward_graph(n, a, gin, x, w, gout[0]);
    if ((k = fw__nn_kernels("linear", x->device)) == NULL)
        return fw_error_code();
    if ((err = fw_op_dense(&g, gout[0])) < 0)
        return err;
    /* gin: dx, dw, db */
    if ((err = fw__nn_grads_new(gin, n, 3, x->device)) == 0 &&
        (err = k->linear_bwd(g->dtype, fw__nn_ptr(gin[0]), fw__nn_ptr(gin[1]),
                             fw__nn_ptr(gin[2]), fw__ptr(x), fw__ptr(w), fw__ptr(g), a->M, a->K,
                             a->N)) < 0)
        fw__nn_grads_drop(gin, 3);
    fw_tensor_unref(g);
    return err;
}

int fw_linear(fw_tensor **out, fw_tensor *x, fw_tensor *w, fw_tensor *b)
{
    fw_tensor *xd = NULL, *wd = NULL, *bd = NULL, *y = NULL;
    fw_tensor *ins[3] = {x, w, b};
    const fw_nn_kernels *k;
    int64_t shape[FW_MAX_DIMS];
    linear_attr a;
    char s1[128], s2[128];
    int err;

    *out = NULL;
    if ((err = fw__nn_check_float("linear", "x", x)) < 0 ||
        (err = fw__nn_check_optional_like("linear", "weight", w, x)) < 0 ||
        (err = fw__nn_check_optional_like("linear", "bias", b, x)) < 0)
        return err;
    if ((k = fw__nn_kernels("linear", x->device)) == NULL)
        return fw_error_code();
    if (w == NULL)
        return fw_error_set(FW_EINVAL, "linear: weight is NULL");
    if (x->ndim < 1)
        return fw_error_set(FW_ESHAPE, "linear: x must be at least 1-D [..., in], got []");
    if (w->ndim != 2 || w->shape[0] != x->shape[x->ndim - 1])
        return fw_error_set(FW_ESHAPE,
                            "linear: x %s does not fit weight %s (expected [%lld, out])",
                            fw_shape_format(s1, sizeof(s1), x->shape, x->ndim),
                            fw_shape_format(s2, sizeof(s2), w->shape, w->ndim),
                            (long long)x->shape[x->ndim - 1]);
    if (b != NULL && (b->ndim != 1 || b->shape[0] != w->shape[1]))
        return fw_error_set(FW_ESHAPE, "linear: bias must be [%lld], got %s",
                            (long long)w->shape[1],
                            fw_shape_format(s1, sizeof(s1), b->shape, b->ndim));
    a.K = w->shape[0];
    a.N = w->shape[1];
    a.M = a.K > 0 ? x->numel / a.K : 0;
    if (a.K == 0) {
        a.M = 1;
        for (int d = 0; d < x->ndim - 1; d++)
            a.M *= x->shape[d];
    }
    if (a.M > INT32_MAX || a.K > INT32_MAX || a.N > INT32_MAX)
        return fw_error_set(FW_EUNSUPPORTED,
                            "linear: [%lld, %lld] @ [%lld, %lld] exceeds BLAS's int sizes",
                            (long long)a.M, (long long)a.K, (long long)a.K, (long long)a.N);
    for (int d = 0; d < x->ndim - 1; d++)
        shape[d] = x->shape[d];
    shape[x->ndim - 1] = a.N;
    if ((err = fw_op_dense(&xd, x)) < 0 || (err = fw_op_dense(&wd, w)) < 0 ||
        (b != NULL && (err = fw_op_dense(&bd, b)) < 0))
        goto fail;
    if ((err = fw_op_output(&y, x->device, x->dtype, shape, x->ndim)) < 0 ||
        (err = k->linear_fwd(x->dtype, fw__ptr(y), fw__ptr(xd), fw__ptr(wd), fw__nn_ptr(bd),
                             a.M, a.K, a.N)) < 0)
        goto fail;
    if ((err = fw__nn_record("linear", linear_backward, 3, ins, y, &a, sizeof(a), 2,
                             (fw_tensor *[]){xd, wd})) < 0)
        goto fail;
    *out = y;
    y = NULL;
fail:
    fw_tensor_unref(xd);
    fw_tensor_unref(wd);
    fw_tensor_unref(bd);
    fw_tensor_unref(y);
    return err;
}

/* ---- conv ------------------------------------------------------------------ */

static int conv_backward(fw_node *n, fw_tensor **gin, fw_tensor *const *gout)
{
    const fw_nn_conv_geom *geo = fw_node_attr(n);
    fw_tensor *x = fw_node_saved(n, 0), *w = fw_node_saved(n, 1), *g = NULL;
    const fw_nn_kernels *k;
    int err;

    if (fw__autograd_creating_graph())   /* differentiable: ops/conv_grad.c */
        return fw__conv_grad_graph(n, geo, gin, x, w, gout[0]);
    if ((k = fw__nn_kernels(fw_node_name(n), x->device)) == NULL)
        return fw_error_code();
    if ((err = fw_op_dense(&g, gout[0])) < 0)
        return err;
    /* gin: dx, dw, db */
    if ((err = fw__nn_grads_new(gin, n, 3, x->device)) == 0 &&
        (err = k->conv2d_bwd(g->dtype, fw__nn_ptr(gin[0]), fw__nn_ptr(gin[1]),
                             fw__nn_ptr(gin[2]), fw__ptr(x), fw__ptr(w), fw__ptr(g), geo)) < 0)
        fw__nn_grads_drop(gin, 3);
    fw_tensor_unref(g);
    return err;
}

/* x, w already checked for rank; geometry in g (N..KW, strides, pads,
 * dilations, groups) is filled in here from the shapes. out_shape gets
 * [N, OC, OH, OW] (or [N, OC, OW] for 1-D). */
static int conv_run(fw_tensor **out, const char *op, fw_tensor *x, fw_tensor *w, fw_tensor *b,
                    fw_nn_conv_geom *g, const int64_t *out_shape, int out_ndim)
{
    fw_tensor *xd = NULL, *wd = NULL, *bd = NULL, *y = NULL;
    fw_tensor *ins[3] = {x, w, b};
    const fw_nn_kernels *k;
    int err;

    if ((k = fw__nn_kernels(op, x->device)) == NULL)
        return fw_error_code();
    /* gemm sizes are ints: the im2col panel is [C/groups*KH*KW, OH*OW] */
    if ((g->C / g->groups) * g->KH * g->KW > INT32_MAX || g->OH * g->OW > INT32_MAX / 64)
        return fw_error_set(FW_EUNSUPPORTED, "%s: kernel or output map too large for BLAS", op);
    if ((err = fw_op_dense(&xd, x)) < 0 || (err = fw_op_dense(&wd, w)) < 0 ||
        (b != NULL && (err = fw_op_dense(&bd, b)) < 0))
        goto fail;
    if ((err = fw_op_output(&y, x->device, x->dtype, out_shape, out_ndim)) < 0 ||
        (err = k->conv2d_fwd(x->dtype, fw__ptr(y), fw__ptr(xd), fw__ptr(wd), fw__nn_ptr(bd),
                             g)) < 0)
        goto fail;
    if ((err = fw__nn_record(op, conv_backward, 3, ins, y, g, sizeof(*g), 2,
                             (fw_tensor *[]){xd, wd})) < 0)
        goto fail;
    *out = y;
    y = NULL;
fail:
    fw_tensor_unref(xd);
    fw_tensor_unref(wd);
    fw_tensor_unref(bd);
    fw_tensor_unref(y);
    return err;
}

static int conv_check(const char *op, fw_tensor *x, fw_tensor *w, fw_tensor *b, int rank,
                      const char *xlayout, const char *wlayout, int64_t groups)
{
    char s1[128];
    int err;

    if ((err = fw__nn_check_float(op, "x", x)) < 0)
        return err;
    if (w == NULL)
        return fw_error_set(FW_EINVAL, "%s: weight is NULL", op);
    if ((err = fw__nn_check_optional_like(op, "weight", w, x)) < 0 ||
        (err = fw__nn_check_optional_like(op, "bias", b, x)) < 0)
        return err;
    if ((err = fw__nn_check_rank(op, "x", x, rank, xlayout)) < 0 ||
        (err = fw__nn_check_rank(op, "weight", w, rank, wlayout)) < 0)
        return err;
    if (groups < 1)
        return fw_error_set(FW_EINVAL, "%s: groups must be >= 1, got %lld", op,
                            (long long)groups);
    if (x->shape[1] % groups != 0 || w->shape[0] % groups != 0)
        return fw_error_set(FW_ESHAPE,
                            "%s: groups %lld must divide the in channels %lld and the out "
                            "channels %lld",
                            op, (long long)groups, (long long)x->shape[1],
                            (long long)w->shape[0]);
    if (w->shape[1] * groups != x->shape[1])
        return fw_error_set(FW_ESHAPE,
                            "%s: x has %lld channels but weight expects %lld (%lld per group, "
                            "groups %lld)",
                            op, (long long)x->shape[1], (long long)(w->shape[1] * groups),
                            (long long)w->shape[1], (long long)groups);
    if (b != NULL && (b->ndim != 1 || b->shape[0] != w->shape[0]))
        return fw_error_set(FW_ESHAPE, "%s: bias must be [%lld], got %s", op,
                            (long long)w->shape[0],
                            fw_shape_format(s1, sizeof(s1), b->shape, b->ndim));
    return 0;
}

static int conv_out_dim(int64_t *out, const char *op, const char *axis, int64_t in,
                        int64_t k, int64_t s, int64_t p0, int64_t p1, int64_t d)
{
    int64_t span;
    if (s < 1 || d < 1)
        return fw_error_set(FW_EINVAL, "%s: stride and dilation must be >= 1, got %lld and %lld",
                            op, (long long)s, (long long)d);
    if (p0 < 0 || p1 < 0)
        return fw_error_set(FW_EINVAL, "%s: padding must be >= 0, got %lld and %lld", op,
                            (long long)p0, (long long)p1);
    span = d * (k - 1) + 1;
    if (in + p0 + p1 < span)
        return fw_error_set(FW_ESHAPE,
                            "%s: %s size %lld (padded %lld) is smaller than the dilated kernel "
                            "%lld",
                            op, axis, (long long)in, (long long)(in + p0 + p1),
                            (long long)span);
    *out = (in + p0 + p1 - span) / s + 1;
    return 0;
}

int fw_conv2d(fw_tensor **out, fw_tensor *x, fw_tensor *w, fw_tensor *b,
              const int64_t stride[2], const int64_t padding[4], const int64_t dilation[2],
              int64_t groups)
{
    fw_nn_conv_geom g = {0};
    int64_t shape[4];
    int err;

    *out = NULL;
    if ((err = conv_check("conv2d", x, w, b, 4, "[N, C, H, W]", "[OC, C/groups, KH, KW]",
                          groups)) < 0)
        return err;
    g.N = x->shape[0];
    g.C = x->shape[1];
    g.H = x->shape[2];
    g.W = x->shape[3];
    g.OC = w->shape[0];
    g.KH = w->shape[2];
    g.KW = w->shape[3];
    g.sh = stride ? stride[0] : 1;
    g.sw = stride ? stride[1] : 1;
    g.ph0 = padding ? padding[0] : 0;
    g.ph1 = padding ? padding[1] : 0;
    g.pw0 = padding ? padding[2] : 0;
    g.pw1 = padding ? padding[3] : 0;
    g.dh = dilation ? dilation[0] : 1;
    g.dw = dilation ? dilation[1] : 1;
    g.groups = groups;
    if ((err = conv_out_dim(&g.OH, "conv2d", "height", g.H, g.KH, g.sh, g.ph0, g.ph1, g.dh)) <
            0 ||
        (err = conv_out_dim(&g.OW, "conv2d", "width", g.W, g.KW, g.sw, g.pw0, g.pw1, g.dw)) < 0)
        return err;
    shape[0] = g.N;
    shape[1] = g.OC;
    shape[2] = g.OH;
    shape[3] = g.OW;
    return conv_run(out, "conv2d", x, w, b, &g, shape, 4);
}

int fw_conv1d(fw_tensor **out, fw_tensor *x, fw_tensor *w, fw_tensor *b, int64_t stride,
              const int64_t padding[2], int64_t dilation, int64_t groups)
{
    fw_nn_conv_geom g = {0};
    int64_t shape[3];
    int err;

    *out = NULL;
    if ((err = conv_check("conv1d", x, w, b, 3, "[N, C, L]", "[OC, C/groups, K]", groups)) < 0)
        return err;
    g.N = x->shape[0];
    g.C = x->shape[1];
    g.H = 1;
    g.W = x->shape[2];
    g.OC = w->shape[0];
    g.KH = 1;
    g.KW = w->shape[2];
    g.sh = 1;
    g.sw = stride;
    g.pw0 = padding ? padding[0] : 0;
    g.pw1 = padding ? padding[1] : 0;
    g.dh = 1;
    g.dw = dilation;
    g.groups = groups;
    g.OH = 1;
    if ((err = conv_out_dim(&g.OW, "conv1d", "length", g.W, g.KW, g.sw, g.pw0, g.pw1, g.dw)) <
        0)
        return err;
    shape[0] = g.N;
    shape[1] = g.OC;
    shape[2] = g.OW;
    return conv_run(out, "conv1d", x, w, b, &g, shape, 3);
}
