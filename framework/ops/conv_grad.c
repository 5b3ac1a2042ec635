/* conv_grad.c - conv2d's (and conv1d's) gradients as recorded ops, for
 * backward with create_graph.
 *
 * conv_backward (nn_conv.c) normally runs the fused kernel
 * conv2d_bwd (the device's nn table), whose results have no grad history. Under
 * create_graph it calls fw__conv_grad_graph instead, which builds
 *   dx = input_grad(g, w), dw = weight_grad(x, g), db = sum(g)
 * from two ops recorded here. Both are linear in each argument, and their
 * own backwards are again convolutions and each other:
 *   input_grad(g, w):  d/dg <- conv2d(u, w),      d/dw <- weight_grad(u, g)
 *   weight_grad(x, g): d/dx <- input_grad(g, v),  d/dg <- conv2d(x, v)
 * so gradients of any order are available. Everything is computed on 4-D
 * views [N, C, H, W] (conv1d has H = 1) and reshaped back.
 */
#include "fw/nn.h"
#include "nn_int.h"

#include <string.h>

static int input_grad(fw_tensor **out, fw_tensor *g4, fw_tensor *w4, const fw_nn_conv_geom *geo);
static int weight_grad(fw_tensor **out, fw_tensor *x4, fw_tensor *g4,
                       const fw_nn_conv_geom *geo);

static void shapes(const fw_nn_conv_geom *g, int64_t xs[4], int64_t ws[4], int64_t gs[4])
{
    xs[0] = g->N; xs[1] = g->C; xs[2] = g->H; xs[3] = g->W;
    ws[0] = g->OC; ws[1] = g->C / g->groups; ws[2] = g->KH; ws[3] = g->KW;
    gs[0] = g->N; gs[1] = g->OC; gs[2] = g->OH; gs[3] = g->OW;
}

/* the forward convolution with this geometry (no bias), differentiable */
static int conv_fwd(fw_tensor **out, fw_tensor *x4, fw_tensor *w4, const fw_nn_conv_geom *g)
{
    const int64_t stride[2] = {g->sh, g->sw}, dil[2] = {g->dh, g->dw};
    const int64_t pad[4] = {g->ph0, g->ph1, g->pw0, g->pw1};
    return fw_conv2d(out, x4, w4, NULL, stride, pad, dil, g->groups);
}

/* Runs the fused kernel for one of dx / dw. */
static int run_kernel(fw_tensor **out, const char *op, fw_tensor *x4, fw_tensor *w4,
                      fw_tensor *g4, const fw_nn_conv_geom *geo, bool want_dx)
{
    int64_t xs[4], ws[4], gs[4];
    fw_tensor *xd = NULL, *wd = NULL, *gd = NULL, *r = NULL;
    const fw_nn_kernels *k;
    int err;

    shapes(geo, xs, ws, gs);
    *out = NULL;
    if ((k = fw__nn_kernels(op, g4->device)) == NULL)
        return fw_error_code();
    if ((err = fw_op_dense(&gd, g4)) < 0)
        return err;
    if (want_dx) {
        if ((err = fw_op_dense(&wd, w4)) < 0)
            goto out;
        err = fw_op_output(&r, g4->device, g4->dtype, xs, 4);
    } else {
        /* the kernel reads w only for dx; give it zeros rather than NULL */
        if ((err = fw_op_dense(&xd, x4)) < 0 ||
            (err = fw_op_zeros(&wd, g4->device, g4->dtype, ws, 4)) < 0)
            goto out;
        err = fw_op_output(&r, g4->device, g4->dtype, ws, 4);
    }
    if (err < 0)
        goto out;
    if ((err = k->conv2d_bwd(g4->dtype, want_dx ? fw__ptr(r) : NULL,
                             want_dx ? NULL : fw__ptr(r), NULL, xd ? fw__ptr(xd) : NULL,
                             fw__ptr(wd), fw__ptr(gd), geo)) < 0)
        goto out;
    *out = r;
    r = NULL;
out:
    fw_tensor_unref(xd);
    fw_tensor_unref(wd);
    fw_tensor_unref(gd);
    fw_tensor_unref(r);
    return err;
}

/* saved: 0 g4, 1 w4; upstream u has x's shape */
static int input_grad_backward(fw_node *n, fw_tensor **gin, fw_tensor *const *gout)
{
    const fw_nn_conv_geom *geo = fw_node_attr(n);
    fw_tensor *g4 = fw_node_saved(n, 0), *w4 = fw_node_saved(n, 1);
    int err = 0;

    if (fw_node_needs_grad(n, 0))
        err = conv_fwd(&gin[0], gout[0], w4, geo);
    if (err == 0 && fw_node_needs_grad(n, 1))
        err = weight_grad(&gin[1], gout[0], g4, geo);
    return err;
}

/* saved: 0 x4, 1 g4; upstream v has w's shape */
static int weight_grad_backward(fw_node *n, fw_tensor **gin, fw_tensor *const *gout)
{
    const fw_nn_conv_geom *geo = fw_node_attr(n);
    fw_tensor *x4 = fw_node_saved(n, 0), *g4 = fw_node_saved(n, 1);
    int err = 0;

    if (fw_node_needs_grad(n, 0))
        err = input_grad(&gin[0], g4, gout[0], geo);
    if (err == 0 && fw_node_needs_grad(n, 1))
        err = conv_fwd(&gin[1], x4, gout[0], geo);
    return err;
}

static int record(fw_tensor *y, const char *op, fw_backward_fn bw, fw_tensor *a, fw_tensor *b,
                  const fw_nn_conv_geom *geo)
{
    fw_tensor *ins[2] = {a, b};
    fw_node *node = NULL;
    int err;

    if ((err = fw_node_record(&node, op, bw, 2, ins, 1, &y, 2, sizeof(*geo))) < 0 || !node)
        return err;
    memcpy(fw_node_attr(node), geo, sizeof(*geo));
    if ((err = fw_node_save(node, 0, a)) == 0)
        err = fw_node_save(node, 1, b);
    return err;
}

static int input_grad(fw_tensor **out, fw_tensor *g4, fw_tensor *w4, const fw_nn_conv_geom *geo)
{
    int err = run_kernel(out, "conv2d_input_grad", NULL, w4, g4, geo, true);
    if (err == 0 && (err = record(*out, "conv2d_input_grad", input_grad_backward, g4, w4,
                                  geo)) < 0) {
        fw_tensor_unref(*out);
        *out = NULL;
    }
    return err;
}

static int weight_grad(fw_tensor **out, fw_tensor *x4, fw_tensor *g4,
                       const fw_nn_conv_geom *geo)
{
    int err = run_kernel(out, "conv2d_weight_grad", x4, NULL, g4, geo, false);
    if (err == 0 && (err = record(*out, "conv2d_weight_grad", weight_grad_backward, x4, g4,
                                  geo)) < 0) {
        fw_tensor_unref(*out);
        *out = NULL;
    }
    return err;
}

int fw__conv_grad_graph(fw_node *n, const fw_nn_conv_geom *geo, fw_tensor **gin, fw_tensor *x,
                        fw_tensor *w, fw_tensor *gout)
{
    int64_t xs[4], ws[4], gs[4];
    fw_tensor *x4 = NULL, *w4 = NULL, *g4 = NULL, *t = NULL;
    const int64_t *shape;
    int nd, err, axes[3] = {0, 2, 3};

    shapes(geo, xs, ws, gs);
    if ((err = fw_reshape(&g4, gout, gs, 4)) < 0)
        return err;
    if (fw_node_needs_grad(n, 0)) {
        shape = fw_node_input_shape(n, 0, &nd);
        if ((err = fw_reshape(&w4, w, ws, 4)) == 0 && (err = input_grad(&t, g4, w4, geo)) == 0)
            err = fw_reshape(&gin[0], t, shape, nd);
        fw_tensor_unref(t);
        t = NULL;
    }
    if (err == 0 && fw_node_needs_grad(n, 1)) {
        shape = fw_node_input_shape(n, 1, &nd);
        if ((err = fw_reshape(&x4, x, xs, 4)) == 0 && (err = weight_grad(&t, x4, g4, geo)) == 0)
            err = fw_reshape(&gin[1], t, shape, nd);
        fw_tensor_unref(t);
    }
    if (err == 0 && fw_node_input_shape(n, 2, &nd) && fw_node_needs_grad(n, 2))
        err = fw_sum(&gin[2], g4, axes, 3, false);
    fw_tensor_unref(x4);
    fw_tensor_unref(w4);
    fw_tensor_unref(g4);
    return err;
}
