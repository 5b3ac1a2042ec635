/*
 * nn_loss.c - loss ops: cross_entropy, nll_loss, mse_loss, l1_loss,
 * binary_cross_entropy(_with_logits). Each computes a per-element loss in
 * one autograd node (the device's nn kernels); the reduction is a sum or
 * mean op on top, so the mean/sum results are 0-D like Paddle's.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fw/nn.h"
#include "nn_int.h"

/* ---- class losses (cross entropy, nll) -------------------------------------- */

/* The class losses read weights and soft labels on the host as float or
 * double: float32/float64 only, even on a device with float16 kernels
 * (paddle.amp keeps them in float32). */
static int check_class_input(const char *op, const fw_tensor *x)
{
    int err;
    if ((err = fw__nn_check_float(op, "input", x)) < 0)
        return err;
    if (x->dtype != FW_FLOAT32 && x->dtype != FW_FLOAT64)
        return fw_error_set(FW_EDTYPE, "%s: input must be float32 or float64, got %s", op,
                            fw_dtype_name(x->dtype));
    return 0;
}

enum { CLS_CE_HARD, CLS_CE_SOFT, CLS_NLL };

typedef struct cls_attr {
    int kind;
    int use_softmax;
    int64_t outer, C, inner, ignore_index;
    int axis;          /* the class axis of the input */
} cls_attr;

/* With create_graph: the gradient from recorded ops, so it differentiates
 * again. The labels (and class weights) are constants: T holds the target
 * per element (one-hot times w[y], or the soft labels) and R its sum over
 * the class axis, so
 *   softmax CE: dx = g (softmax(x) R - T);  CE on probabilities:
 *   dx = -g T / x;  nll: dx = -g T. */
static int cls_backward_graph(fw_node *n, const cls_attr *a, fw_tensor **dx, fw_tensor *gout)
{
    fw_tensor *lab = fw_node_saved(n, 0), *w = fw_node_saved(n, 2), *x = fw_node_saved(n, 3);
    fw_tensor *T = NULL, *R = NULL, *g = NULL, *p = NULL, *u = NULL, *v = NULL;
    fw_tensor *labh = NULL, *wh = NULL;
    int64_t gshape[FW_MAX_DIMS];
    int nd, ax = a->axis, err;
    const int64_t *xs = fw_node_input_shape(n, 0, &nd);
    fw_dtype dt = x->dtype;

    if (a->kind == CLS_CE_SOFT && w != NULL)
        return fw_error_set(FW_EUNSUPPORTED, "cross_entropy: second derivatives with soft "
                            "labels and class weights are not supported");
    memcpy(gshape, xs, sizeof(int64_t) * (size_t)nd);
    gshape[ax] = 1;
    if (a->kind == CLS_CE_SOFT) {
        T = fw_tensor_ref(lab);
        if ((err = fw_sum(&R, T, &ax, 1, true)) < 0)
            goto out;
    } else {
        /* built on the host from host copies of the labels and weights */
        const int64_t *ids;
        if ((err = fw__nn_host(&labh, lab)) < 0 ||
            (w != NULL && (err = fw__nn_host(&wh, w)) < 0) ||
            (err = fw_op_zeros(&T, FW_CPU, dt, xs, nd)) < 0 ||
            (err = fw_op_zeros(&R, FW_CPU, dt, gshape, nd)) < 0)
            goto out;
        ids = fw__ptr(labh);
        for (int64_t s = 0; s < a->outer * a->inner; s++) {
            int64_t oo = s / a->inner, ii = s % a->inner, y = ids[s];
            double wy;
            if (y == a->ignore_index || y < 0 || y >= a->C)
                continue;
            wy = wh == NULL ? 1.0 : dt == FW_FLOAT32 ? (double)((float *)fw__ptr(wh))[y]
                                                     : ((double *)fw__ptr(wh))[y];
            int64_t at = (oo * a->C + y) * a->inner + ii;
            if (dt == FW_FLOAT32) {
                ((float *)fw__ptr(T))[at] = (float)wy;
                ((float *)fw__ptr(R))[s] = (float)wy;
            } else {
                ((double *)fw__ptr(T))[at] = wy;
                ((double *)fw__ptr(R))[s] = wy;
            }
        }
        if ((err = fw__nn_to_device(&T, x->device)) < 0 ||
            (err = fw__nn_to_device(&R, x->device)) < 0)
            goto out;
    }
    if ((err = fw_reshape(&g, gout, gshape, nd)) < 0)
        goto out;
    if (a->kind != CLS_NLL && a->use_softmax) {
        if ((err = fw_softmax(&p, x, ax)) == 0 && (err = fw_mul(&u, p, R)) == 0 &&
            (err = fw_sub(&v, u, T)) == 0)
            err = fw_mul(dx, g, v);
    } else if (a->kind != CLS_NLL) {
        if ((err = fw_div(&u, T, x)) == 0 && (err = fw_mul(&v, g, u)) == 0)
            err = fw_neg(dx, v);
    } else {
        if ((err = fw_mul(&v, g, T)) == 0)
            err = fw_neg(dx, v);
    }
out:
    fw_tensor_unref(labh);
    fw_tensor_unref(wh);
    fw_tensor_unref(T);
    fw_tensor_unref(R);
    fw_tensor_unref(g);
    fw_tensor_unref(p);
    fw_tensor_unref(u);
    fw_tensor_unref(v);
    return err;
}

/* saved: 0 labels (int64 [outer*inner] or soft [outer, C, inner]),
 * 1 log-softmax (use_softmax) or the dense input, 2 weight or NULL,
 * 3 the input itself (for backward with create_graph) */
static int cls_backward(fw_node *n, fw_tensor **gin, fw_tensor *const *gout)
{
    const cls_attr *a = fw_node_attr(n);
    fw_tensor *lab = fw_node_saved(n, 0), *xs = fw_node_saved(n, 1), *w = fw_node_saved(n, 2);
    fw_tensor *g = NULL, *dx = NULL;
    const fw_nn_kernels *k;
    int err;

    if (fw__autograd_creating_graph())
        return fw_node_needs_grad(n, 0) ? cls_backward_graph(n, a, &gin[0], gout[0]) : 0;
    if ((k = fw__nn_kernels(fw_node_name(n), xs->device)) == NULL)
        return fw_error_code();
    if ((err = fw__nn_grad1_begin(&g, &dx, n, gout[0])) < 0)
        return err;
    if (a->kind == CLS_CE_HARD)
        err = k->ce_hard_bwd(g->dtype, fw__ptr(dx), a->use_softmax ? fw__ptr(xs) : NULL,
                             a->use_softmax ? NULL : fw__ptr(xs), fw__ptr(lab), fw__nn_ptr(w),
                             fw__ptr(g), a->outer, a->C, a->inner, a->ignore_index,
                             a->use_softmax);
    else if (a->kind == CLS_CE_SOFT)
        err = k->ce_soft_bwd(g->dtype, fw__ptr(dx), a->use_softmax ? fw__ptr(xs) : NULL,
                             a->use_softmax ? NULL : fw__ptr(xs), fw__ptr(lab), fw__nn_ptr(w),
                             fw__ptr(g), a->outer, a->C, a->inner, a->use_softmax);
    else
        err = k->nll_bwd(g->dtype, fw__ptr(dx), fw__ptr(lab), fw__nn_ptr(w), fw__ptr(g),
                         a->outer, a->C, a->inner, a->ignore_index);
    fw_tensor_unref(g);
    if (err < 0) {
        fw_tensor_unref(dx);
        return err;
    }
    gin[0] = dx;
    return 0;
}

/* The per-sample loss op. lab: int64 tensor [outer*inner] (hard, nll) or a
 * dense soft-label tensor [outer, C, inner]; xd: dense input; w dense or
 * NULL. loss_shape: the shape of the result. */
static int cls_loss(fw_tensor **out, const char *op, fw_tensor *x, fw_tensor *xd,
                    fw_tensor *lab, fw_tensor *w, const cls_attr *a, const int64_t *loss_shape,
                    int loss_ndim)
{
    const fw_nn_kernels *k;
    fw_tensor *loss = NULL, *lsm = NULL;
    int err;

    if ((k = fw__nn_kernels(op, x->device)) == NULL)
        return fw_error_code();
    if ((err = fw_op_output(&loss, x->device, x->dtype, loss_shape, loss_ndim)) < 0)
        return err;
    if (a->kind != CLS_NLL && a->use_softmax &&
        (err = fw_op_output(&lsm, x->device, x->dtype, x->shape, x->ndim)) < 0)
        goto fail;
    if (a->kind == CLS_CE_HARD)
        err = k->ce_hard_fwd(x->dtype, fw__ptr(loss), fw__nn_ptr(lsm), fw__ptr(xd), fw__ptr(lab),
                             fw__nn_ptr(w), a->outer, a->C, a->inner, a->ignore_index,
                             a->use_softmax);
    else if (a->kind == CLS_CE_SOFT)
        err = k->ce_soft_fwd(x->dtype, fw__ptr(loss), fw__nn_ptr(lsm), fw__ptr(xd), fw__ptr(lab),
                             fw__nn_ptr(w), a->outer, a->C, a->inner, a->use_softmax);
    else
        err = k->nll_fwd(x->dtype, fw__ptr(loss), fw__ptr(xd), fw__ptr(lab), fw__nn_ptr(w),
                         a->outer, a->C, a->inner, a->ignore_index);
    if (err < 0)
        goto fail;
    if ((err = fw__nn_record(op, cls_backward, 1, &x, loss, a, sizeof(*a), 4,
                             (fw_tensor *[]){lab, lsm != NULL ? lsm : xd, w, x})) < 0)
        goto fail;
    fw_tensor_unref(lsm);
    *out = loss;
    return 0;
fail:
    fw_tensor_unref(loss);
    fw_tensor_unref(lsm);
    return err;
}

static int check_class_weight(const char *op, fw_tensor *w, fw_tensor *x, int64_t C)
{
    char buf[128];
    int err;
    if (w == NULL)
        return 0;
    if ((err = fw__nn_check_optional_like(op, "weight", w, x)) < 0)
        return err;
    if (w->ndim != 1 || w->shape[0] != C)
        return fw_error_set(FW_ESHAPE, "%s: weight must be [%lld] (one per class), got %s", op,
                            (long long)C, fw_shape_format(buf, sizeof(buf), w->shape, w->ndim));
    return 0;
}

/* sum(loss) / denom as a 0-D tensor (denom 0 becomes 1, as Paddle does). */
static int sum_div(fw_tensor **out, fw_tensor *loss, double denom)
{
    fw_tensor *s = NULL;
    int err;
    if ((err = fw_sum(&s, loss, NULL, 0, false)) < 0)
        return err;
    err = fw_div_scalar(out, s, denom == 0 ? 1 : denom);
    fw_tensor_unref(s);
    return err;
}

/* A hard label whose shape is x's without `ax` (or with it of size 1). */
static int hard_label_shape_ok(const fw_tensor *x, const fw_tensor *label, int ax)
{
    if (label->ndim == x->ndim - 1) {
        for (int d = 0, k = 0; d < x->ndim; d++) {
            if (d == ax)
                continue;
            if (label->shape[k++] != x->shape[d])
                return 0;
        }
        return 1;
    }
    if (label->ndim == x->ndim) {
        for (int d = 0; d < x->ndim; d++)
            if (label->shape[d] != (d == ax ? 1 : x->shape[d]))
                return 0;
        return 1;
    }
    return 0;
}

int fw_cross_entropy(fw_tensor **out, fw_tensor *input, fw_tensor *label,
                     const fw_cross_entropy_opts *opts)
{
    static const fw_cross_entropy_opts defaults = FW_CROSS_ENTROPY_DEFAULTS;
    const fw_cross_entropy_opts *o = opts != NULL ? opts : &defaults;
    fw_tensor *xd = NULL, *wd = NULL, *wh = NULL, *labt = NULL, *labh = NULL, *loss = NULL;
    fw_tensor *idt = NULL, *idh = NULL;
    const int64_t *ids = NULL;
    int64_t loss_shape[FW_MAX_DIMS];
    cls_attr a = {0};
    double denom = 0;
    int ax, err, loss_ndim, soft;
    char s1[128], s2[128];

    *out = NULL;
    if ((err = check_class_input("cross_entropy", input)) < 0)
        return err;
    if (input->ndim < 1)
        return fw_error_set(FW_ESHAPE, "cross_entropy: input must be at least 1-D [..., C], got []");
    if ((err = fw_op_axis(&ax, "cross_entropy", o->axis, input->ndim)) < 0)
        return err;
    if (label == NULL)
        return fw_error_set(FW_EINVAL, "cross_entropy: label is NULL");
    if (!(o->label_smoothing >= 0 && o->label_smoothing < 1))
        return fw_error_set(FW_EINVAL, "cross_entropy: label_smoothing must be in [0, 1), got %g",
                            o->label_smoothing);
    if (o->reduction != FW_REDUCTION_NONE && o->reduction != FW_REDUCTION_MEAN &&
        o->reduction != FW_REDUCTION_SUM)
        return fw_error_set(FW_EINVAL, "cross_entropy: reduction %d is not none, mean or sum",
                            (int)o->reduction);
    a.outer = 1;
    a.inner = 1;
    a.C = input->shape[ax];
    for (int d = 0; d < input->ndim; d++) {
        if (d < ax)
            a.outer *= input->shape[d];
        else if (d > ax)
            a.inner *= input->shape[d];
    }
    a.use_softmax = o->use_softmax;
    a.ignore_index = o->ignore_index;
    a.axis = ax;
    if ((err = check_class_weight("cross_entropy", o->weight, input, a.C)) < 0)
        return err;
    soft = o->soft_label;
    if (soft) {
        if ((err = fw__nn_check_optional_like("cross_entropy", "soft label", label, input)) < 0)
            return err;
        if (!fw_shape_equal(label->shape, label->ndim, input->shape, input->ndim))
            return fw_error_set(FW_ESHAPE,
                                "cross_entropy: soft label %s must have the input's shape %s",
                                fw_shape_format(s1, sizeof(s1), label->shape, label->ndim),
                                fw_shape_format(s2, sizeof(s2), input->shape, input->ndim));
    } else {
        if (label->dtype != FW_INT64 && label->dtype != FW_INT32)
            return fw_error_set(FW_EDTYPE,
                                "cross_entropy: hard labels must be int32 or int64, got %s (soft "
                                "labels need soft_label)",
                                fw_dtype_name(label->dtype));
        if (!hard_label_shape_ok(input, label, ax))
            return fw_error_set(FW_ESHAPE,
                                "cross_entropy: label %s does not fit input %s (expected the "
                                "input's shape without the class axis %d, or with it of size 1)",
                                fw_shape_format(s1, sizeof(s1), label->shape, label->ndim),
                                fw_shape_format(s2, sizeof(s2), input->shape, input->ndim), ax);
        if ((err = fw__nn_labels(&idt, &idh, "cross_entropy", "label", label, a.C,
                                 o->ignore_index, "input", input)) < 0)
            return err;
        ids = fw__nn_label_values(idt, idh);
    }
    if ((err = fw_op_dense(&xd, input)) < 0 ||
        (o->weight != NULL && (err = fw_op_dense(&wd, o->weight)) < 0))
        goto fail;

    /* the per-sample loss shape: the label's for hard labels, the input's
     * with the class axis of size 1 for soft ones */
    if (soft) {
        loss_ndim = input->ndim;
        for (int d = 0; d < input->ndim; d++)
            loss_shape[d] = d == ax ? 1 : input->shape[d];
    } else {
        loss_ndim = label->ndim;
        memcpy(loss_shape, label->shape, sizeof(int64_t) * (size_t)label->ndim);
    }

    if (soft || o->label_smoothing > 0) {
        /* dense soft labels [outer, C, inner], smoothed if asked: built on
         * the host (labh), then moved to the input's device (labt) */
        double eps = o->label_smoothing;
        int64_t total = a.outer * a.C * a.inner;
        if ((err = fw_op_output(&labh, FW_CPU, input->dtype, input->shape, input->ndim)) < 0)
            goto fail;
        if (soft) {
            fw_tensor *ld = NULL;
            if ((err = fw__nn_host(&ld, label)) < 0)
                goto fail;
            memcpy(fw__ptr(labh), fw__ptr(ld), (size_t)total * fw_dtype_size(input->dtype));
            fw_tensor_unref(ld);
            if (eps > 0) {
                for (int64_t i = 0; i < total; i++) {
                    if (input->dtype == FW_FLOAT32)
                        ((float *)fw__ptr(labh))[i] =
                            (float)((1 - eps) * ((float *)fw__ptr(labh))[i] + eps / (double)a.C);
                    else
                        ((double *)fw__ptr(labh))[i] =
                            (1 - eps) * ((double *)fw__ptr(labh))[i] + eps / (double)a.C;
                }
            }
        } else {
            for (int64_t s = 0; s < a.outer * a.inner; s++) {
                int64_t oo = s / a.inner, ii = s % a.inner, y = ids[s];
                for (int64_t c = 0; c < a.C; c++) {
                    double v = y == o->ignore_index
                                   ? 0
                                   : (1 - eps) * (c == y ? 1.0 : 0.0) + eps / (double)a.C;
                    int64_t at = (oo * a.C + c) * a.inner + ii;
                    if (input->dtype == FW_FLOAT32)
                        ((float *)fw__ptr(labh))[at] = (float)v;
                    else
                        ((double *)fw__ptr(labh))[at] = v;
                }
            }
        }
        labt = fw_tensor_ref(labh);
        if ((err = fw__nn_to_device(&labt, input->device)) < 0)
            goto fail;
        a.kind = CLS_CE_SOFT;
    } else {
        labt = idt; /* the labels move over */
        idt = NULL;
        a.kind = CLS_CE_HARD;
    }
    if ((err = cls_loss(&loss, "cross_entropy", input, xd, labt, wd, &a, loss_shape,
                        loss_ndim)) < 0)
        goto fail;

    if (o->reduction == FW_REDUCTION_MEAN &&
        (wd != NULL || (a.kind == CLS_CE_HARD && o->ignore_index >= 0))) {
        /* Paddle: with weight, divide by the summed weights of the kept
         * labels (soft and smoothed labels: sum_c l_c w_c per sample);
         * without, by the count of kept labels (ignore_index >= 0).
         * Read on the host. */
        if (wd != NULL && (err = fw__nn_host(&wh, wd)) < 0)
            goto fail;
        for (int64_t s = 0; s < a.outer * a.inner; s++) {
            if (a.kind == CLS_CE_HARD) {
                if (ids[s] == o->ignore_index)
                    continue;
                denom += wh != NULL ? (input->dtype == FW_FLOAT32
                                           ? (double)((float *)fw__ptr(wh))[ids[s]]
                                           : ((double *)fw__ptr(wh))[ids[s]])
                                    : 1.0;
            } else {
                int64_t oo = s / a.inner, ii = s % a.inner;
                for (int64_t c = 0; c < a.C; c++) {
                    int64_t at = (oo * a.C + c) * a.inner + ii;
                    double l = input->dtype == FW_FLOAT32 ? (double)((float *)fw__ptr(labh))[at]
                                                          : ((double *)fw__ptr(labh))[at];
                    double wc = input->dtype == FW_FLOAT32 ? (double)((float *)fw__ptr(wh))[c]
                                                           : ((double *)fw__ptr(wh))[c];
                    denom += l * wc;
                }
            }
        }
        err = sum_div(out, loss, denom);
    } else {
        err = fw__nn_reduce(out, loss, o->reduction, "cross_entropy");
    }
fail:
    fw_tensor_unref(idt);
    fw_tensor_unref(idh);
    fw_tensor_unref(xd);
    fw_tensor_unref(wd);
    fw_tensor_unref(wh);
    fw_tensor_unref(labt);
    fw_tensor_unref(labh);
    fw_tensor_unref(loss);
    return err;
}

int fw_nll_loss(fw_tensor **out, fw_tensor *input, fw_tensor *label, fw_tensor *weight,
                int64_t ignore_index, fw_reduction reduction)
{
    fw_tensor *xd = NULL, *wd = NULL, *wh = NULL, *labt = NULL, *idh = NULL, *loss = NULL;
    const int64_t *ids;
    int64_t n;
    cls_attr a = {0};
    double denom = 0;
    char s1[128], s2[128];
    int err, ok;

    *out = NULL;
    if ((err = check_class_input("nll_loss", input)) < 0)
        return err;
    if (input->ndim < 2)
        return fw_error_set(FW_ESHAPE, "nll_loss: input must be at least 2-D [N, C, ...], got %s",
                            fw_shape_format(s1, sizeof(s1), input->shape, input->ndim));
    if (label == NULL)
        return fw_error_set(FW_EINVAL, "nll_loss: label is NULL");
    if (reduction != FW_REDUCTION_NONE && reduction != FW_REDUCTION_MEAN &&
        reduction != FW_REDUCTION_SUM)
        return fw_error_set(FW_EINVAL, "nll_loss: reduction %d is not none, mean or sum",
                            (int)reduction);
    ok = label->ndim == input->ndim - 1 && label->shape[0] == input->shape[0];
    for (int d = 2; ok && d < input->ndim; d++)
        ok = label->shape[d - 1] == input->shape[d];
    if (!ok)
        return fw_error_set(FW_ESHAPE, "nll_loss: label %s does not fit input %s (expected [N, d1, ...])",
                            fw_shape_format(s1, sizeof(s1), label->shape, label->ndim),
                            fw_shape_format(s2, sizeof(s2), input->shape, input->ndim));
    a.kind = CLS_NLL;
    a.axis = 1;
    a.outer = input->shape[0];
    a.C = input->shape[1];
    a.inner = 1;
    for (int d = 2; d < input->ndim; d++)
        a.inner *= input->shape[d];
    a.ignore_index = ignore_index;
    if ((err = check_class_weight("nll_loss", weight, input, a.C)) < 0)
        return err;
    if ((err = fw__nn_labels(&labt, &idh, "nll_loss", "label", label, a.C, ignore_index,
                             "input", input)) < 0)
        return err;
    ids = fw__nn_label_values(labt, idh);
    n = a.outer * a.inner;
    if ((err = fw_op_dense(&xd, input)) < 0 ||
        (weight != NULL && (err = fw_op_dense(&wd, weight)) < 0))
        goto fail;
    if ((err = cls_loss(&loss, "nll_loss", input, xd, labt, wd, &a, label->shape, label->ndim)) <
        0)
        goto fail;
    if (reduction == FW_REDUCTION_MEAN) {
        fw_tensor *s = NULL;
        if (wd != NULL && (err = fw__nn_host(&wh, wd)) < 0)
            goto fail;
        for (int64_t i = 0; i < n; i++) {
            if (ids[i] == ignore_index)
                continue;
            denom += wh == NULL ? 1.0
                                : input->dtype == FW_FLOAT32 ? (double)((float *)fw__ptr(wh))[ids[i]]
                                                             : ((double *)fw__ptr(wh))[ids[i]];
        }
        /* Paddle divides by the total weight as is (0 gives nan) */
        if ((err = fw_sum(&s, loss, NULL, 0, false)) == 0) {
            err = fw_div_scalar(out, s, denom);
            fw_tensor_unref(s);
        }
    } else {
        err = fw__nn_reduce(out, loss, reduction, "nll_loss");
    }
fail:
    fw_tensor_unref(idh);
    fw_tensor_unref(xd);
    fw_tensor_unref(wd);
    fw_tensor_unref(wh);
    fw_tensor_unref(labt);
    fw_tensor_unref(loss);
    return err;
}

/* ---- pointwise losses ----------------------------------------------------------- */

typedef struct pw_attr {
    fw_nn_loss_kind kind;
} pw_attr;

/* create_graph for l1, bce and bce-with-logits: the same gradients from
 * recorded ops (w the expanded weight or 1):
 *   l1:          dx = g sign(x - y),                    dy = -dx
 *   bce:         dx = g w (x - y) / (x (1 - x)),        dy = g w (log(1-x) - log x)
 *   bce_logits:  dx = g w (sigmoid(x) - y),             dy = -g w x
 * (bce_logits with pos_weight is not supported here). */
static int pw_backward_graph(fw_node *n, fw_nn_loss_kind kind, fw_tensor **gin, fw_tensor *g)
{
    fw_tensor *x = fw_node_saved(n, 0), *y = fw_node_saved(n, 1);
    fw_tensor *w = fw_node_saved(n, 2), *pw = fw_node_saved(n, 3);
    fw_tensor *t[8] = {0}, *gw = NULL, *dx = NULL, *dy = NULL;
    int err = 0;

    if (kind == FW_NN_LOSS_BCE_LOGITS && pw != NULL)
        return fw_error_set(FW_EUNSUPPORTED, "binary_cross_entropy_with_logits: second "
                            "derivatives with pos_weight are not supported");
    if (w != NULL)
        err = fw_mul(&gw, g, w);
    else
        gw = fw_tensor_ref(g);
    if (err < 0)
        return err;
    if (kind == FW_NN_LOSS_L1) {
        if ((err = fw_sub(&t[0], x, y)) == 0 && (err = fw_sign(&t[1], t[0])) == 0 &&
            (err = fw_mul(&dx, gw, t[1])) == 0)
            err = fw_neg(&dy, dx);
    } else if (kind == FW_NN_LOSS_BCE) {
        if ((err = fw_sub(&t[0], x, y)) == 0 && (err = fw_rsub_scalar(&t[1], x, 1.0)) == 0 &&
            (err = fw_mul(&t[2], x, t[1])) == 0 && (err = fw_div(&t[3], t[0], t[2])) == 0 &&
            (err = fw_mul(&dx, gw, t[3])) == 0 && (err = fw_log(&t[4], t[1])) == 0 &&
            (err = fw_log(&t[5], x)) == 0 && (err = fw_sub(&t[6], t[4], t[5])) == 0)
            err = fw_mul(&dy, gw, t[6]);
    } else {
        if ((err = fw_sigmoid(&t[0], x)) == 0 && (err = fw_sub(&t[1], t[0], y)) == 0 &&
            (err = fw_mul(&dx, gw, t[1])) == 0 && (err = fw_mul(&t[2], gw, x)) == 0)
            err = fw_neg(&dy, t[2]);
    }
    if (err == 0) {
        if (fw_node_needs_grad(n, 0))
            gin[0] = fw_tensor_ref(dx);
        if (fw_node_needs_grad(n, 1))
            gin[1] = fw_tensor_ref(dy);
    }
    for (int i = 0; i < 8; i++)
        fw_tensor_unref(t[i]);
    fw_tensor_unref(gw);
    fw_tensor_unref(dx);
    fw_tensor_unref(dy);
    return err;
}

/* saved: 0 input, 1 label, 2 weight (expanded) or NULL, 3 pos_weight or NULL */
static int pw_backward(fw_node *n, fw_tensor **gin, fw_tensor *const *gout)
{
    const pw_attr *a = fw_node_attr(n);
    fw_tensor *x = fw_node_saved(n, 0), *y = fw_node_saved(n, 1);
    fw_tensor *w = fw_node_saved(n, 2), *pw = fw_node_saved(n, 3);
    fw_tensor *g = NULL;
    const fw_nn_kernels *k;
    int err;

    if (fw__autograd_creating_graph() && a->kind != FW_NN_LOSS_MSE)
        return pw_backward_graph(n, a->kind, gin, gout[0]);
    if (fw__autograd_creating_graph() && a->kind == FW_NN_LOSS_MSE) {
        /* differentiable: dx = 2 (x - y) g, dy = -dx */
        fw_tensor *d = NULL, *dx = NULL;
        if ((err = fw_sub(&d, x, y)) == 0 && (err = fw_mul(&g, d, gout[0])) == 0 &&
            (err = fw_mul_scalar(&dx, g, 2.0)) == 0 && fw_node_needs_grad(n, 1))
            err = fw_neg(&gin[1], dx);
        if (err == 0 && fw_node_needs_grad(n, 0))
            gin[0] = fw_tensor_ref(dx);
        fw_tensor_unref(d);
        fw_tensor_unref(g);
        fw_tensor_unref(dx);
        return err;
    }
    if ((k = fw__nn_kernels(fw_node_name(n), x->device)) == NULL)
        return fw_error_code();
    if ((err = fw_op_dense(&g, gout[0])) < 0)
        return err;
    /* gin: dx, dy */
    if ((err = fw__nn_grads_new(gin, n, 2, x->device)) == 0 &&
        (err = k->pointwise_loss_bwd(g->dtype, fw__nn_ptr(gin[0]), fw__nn_ptr(gin[1]), a->kind,
                                     fw__ptr(x), fw__ptr(y), fw__nn_ptr(w), fw__nn_ptr(pw),
                                     fw__ptr(g), 1, g->numel)) < 0)
        fw__nn_grads_drop(gin, 2);
    fw_tensor_unref(g);
    return err;
}

/* weight-like tensor broadcast to x's shape, dense; NULL stays NULL */
static int expand_dense(fw_tensor **out, const char *op, const char *what, fw_tensor *t,
                        fw_tensor *x)
{
    fw_tensor *e = NULL;
    int err;
    *out = NULL;
    if (t == NULL)
        return 0;
    if ((err = fw__nn_check_optional_like(op, what, t, x)) < 0)
        return err;
    if ((err = fw_expand(&e, t, x->shape, x->ndim)) < 0) {
        char s1[128], s2[128];
        return fw_error_set(FW_ESHAPE, "%s: %s %s does not broadcast to the input %s", op, what,
                            fw_shape_format(s1, sizeof(s1), t->shape, t->ndim),
                            fw_shape_format(s2, sizeof(s2), x->shape, x->ndim));
    }
    err = fw_op_dense(out, e);
    fw_tensor_unref(e);
    return err;
}

static int pointwise_loss(fw_tensor **out, const char *op, fw_nn_loss_kind kind, fw_tensor *x,
                          fw_tensor *y, fw_tensor *w, fw_tensor *pw, fw_reduction reduction)
{
    fw_tensor *xd = NULL, *yd = NULL, *wd = NULL, *pwd = NULL, *loss = NULL;
    fw_tensor *ins[2] = {x, y};
    const fw_nn_kernels *k;
    pw_attr a = {kind};
    int err;

    *out = NULL;
    if ((err = fw__nn_check_float(op, "input", x)) < 0)
        return err;
    if ((k = fw__nn_kernels(op, x->device)) == NULL)
        return fw_error_code();
    if (y == NULL)
        return fw_error_set(FW_EINVAL, "%s: label is NULL", op);
    if ((err = fw__nn_check_optional_like(op, "label", y, x)) < 0 ||
        (err = fw_op_check_same_shape(op, "input and label", x, y)) < 0)
        return err;
    if (reduction != FW_REDUCTION_NONE && reduction != FW_REDUCTION_MEAN &&
        reduction != FW_REDUCTION_SUM)
        return fw_error_set(FW_EINVAL, "%s: reduction %d is not none, mean or sum", op,
                            (int)reduction);
    if ((err = expand_dense(&wd, op, "weight", w, x)) < 0 ||
        (err = expand_dense(&pwd, op, "pos_weight", pw, x)) < 0 ||
        (err = fw_op_dense(&xd, x)) < 0 || (err = fw_op_dense(&yd, y)) < 0 ||
        (err = fw_op_output(&loss, x->device, x->dtype, x->shape, x->ndim)) < 0 ||
        (err = k->pointwise_loss_fwd(x->dtype, fw__ptr(loss), kind, fw__ptr(xd), fw__ptr(yd),
                                     fw__nn_ptr(wd), fw__nn_ptr(pwd), x->numel)) < 0)
        goto fail;
    if ((err = fw__nn_record(op, pw_backward, 2, ins, loss, &a, sizeof(a), 4,
                             (fw_tensor *[]){xd, yd, wd, pwd})) < 0)
        goto fail;
    err = fw__nn_reduce(out, loss, reduction, op);
fail:
    fw_tensor_unref(xd);
    fw_tensor_unref(yd);
    fw_tensor_unref(wd);
    fw_tensor_unref(pwd);
    fw_tensor_unref(loss);
    return err;
}

int fw_mse_loss(fw_tensor **out, fw_tensor *input, fw_tensor *label, fw_reduction reduction)
{
    return pointwise_loss(out, "mse_loss", FW_NN_LOSS_MSE, input, label, NULL, NULL,
                          reduction);
}

int fw_l1_loss(fw_tensor **out, fw_tensor *input, fw_tensor *label, fw_reduction reduction)
{
    return pointwise_loss(out, "l1_loss", FW_NN_LOSS_L1, input, label, NULL, NULL, reduction);
}

int fw_binary_cross_entropy(fw_tensor **out, fw_tensor *input, fw_tensor *label,
                            fw_tensor *weight, fw_reduction reduction)
{
    return pointwise_loss(out, "binary_cross_entropy", FW_NN_LOSS_BCE, input, label, weight,
                          NULL, reduction);
}

int fw_binary_cross_entropy_with_logits(fw_tensor **out, fw_tensor *logit, fw_tensor *label,
                                        fw_tensor *weight, fw_tensor *pos_weight,
                                        fw_reduction reduction)
{
    return pointwise_loss(out, "binary_cross_entropy_with_logits", FW_NN_LOSS_BCE_LOGITS, logit,
                          label, weight, pos_weight, reduction);
}
