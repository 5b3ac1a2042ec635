/*
 * nn_softmax.c - softmax and log_softmax over one axis.
 */
#include "fw/nn.h"
#include "nn_int.h"

typedef struct sm_attr {
    int64_t outer, C, inner;
    int log_form;
    int axis;
} sm_attr;

/* With create_graph: the same gradient from recorded ops (y is the saved
 * output, which the engine attaches to this node while it runs):
 * softmax dx = y (g - sum(g y)), log_softmax dx = g - exp(y) sum(g). */
static int softmax_backward_graph(const sm_attr *a, fw_tensor **dx, fw_tensor *y, fw_tensor *g)
{
    fw_tensor *t = NULL, *s = NULL, *u = NULL;
    int err;

    if (a->log_form) {
        if ((err = fw_sum(&s, g, &a->axis, 1, true)) == 0 && (err = fw_exp(&t, y)) == 0 &&
            (err = fw_mul(&u, t, s)) == 0)
            err = fw_sub(dx, g, u);
    } else {
        if ((err = fw_mul(&t, g, y)) == 0 && (err = fw_sum(&s, t, &a->axis, 1, true)) == 0 &&
            (err = fw_sub(&u, g, s)) == 0)
            err = fw_mul(dx, y, u);
    }
    fw_tensor_unref(t);
    fw_tensor_unref(s);
    fw_tensor_unref(u);
    return err;
}

static int softmax_backward(fw_node *n, fw_tensor **gin, fw_tensor *const *gout)
{
    const sm_attr *a = fw_node_attr(n);
    fw_tensor *y = fw_node_saved(n, 0), *g = NULL, *dx = NULL;
    const fw_nn_kernels *k;
    int err;

    if (fw__autograd_creating_graph())
        return fw_node_needs_grad(n, 0) ? softmax_backward_graph(a, &gin[0], y, gout[0]) : 0;
    if ((k = fw__nn_kernels(fw_node_name(n), y->device)) == NULL)
        return fw_error_code();
    if ((err = fw__nn_grad1_begin(&g, &dx, n, gout[0])) < 0)
        return err;
    err = (a->log_form ? k->log_softmax_bwd : k->softmax_bwd)(
        y->dtype, fw__ptr(dx), fw__ptr(y), fw__ptr(g), a->outer, a->C, a->inner);
    fw_tensor_unref(g);
    if (err < 0) {
        fw_tensor_unref(dx);
        return err;
    }
    gin[0] = dx;
    return 0;
}

static int softmax_common(fw_tensor **out, fw_tensor *x, int axis, int log_form)
{
    const char *op = log_form ? "log_softmax" : "softmax";
    fw_tensor *xd = NULL, *y = NULL;
    const fw_nn_kernels *k;
    sm_attr a = {1, 1, 1, log_form, 0};
    int ax, err;

    *out = NULL;
    if ((err = fw__nn_check_float(op, "x", x)) < 0)
        return err;
    if ((k = fw__nn_kernels(op, x->device)) == NULL)
        return fw_error_code();
    if ((err = fw_op_axis(&ax, op, axis, x->ndim)) < 0)
        return err;
    a.axis = ax;
    for (int d = 0; d < x->ndim; d++) {
        if (d < ax)
            a.outer *= x->shape[d];
        else if (d == ax)
            a.C = x->shape[d];
        else
            a.inner *= x->shape[d];
    }
    if ((err = fw_op_dense(&xd, x)) < 0)
        return err;
    if ((err = fw_op_output(&y, x->device, x->dtype, x->shape, x->ndim)) < 0 ||
        (err = (log_form ? k->log_softmax_fwd : k->softmax_fwd)(
             x->dtype, fw__ptr(y), fw__ptr(xd), a.outer, a.C, a.inner)) < 0)
        goto fail;
    if ((err = fw__nn_record(op, softmax_backward, 1, &x, y, &a, sizeof(a), 1,
                             (fw_tensor *[]){y})) < 0)
        goto fail;
    fw_tensor_unref(xd);
    *out = y;
    return 0;
fail:
    fw_tensor_unref(xd);
    fw_tensor_unref(y);
    return err;
}

int fw_softmax(fw_tensor **out, fw_tensor *x, int axis)
{
    return softmax_common(out, x, axis, 0);
}

int fw_log_softmax(fw_tensor **out, fw_tensor *x, int axis)
{
    return softmax_common(out, x, axis, 1);
}
