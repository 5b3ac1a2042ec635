/* reduce.c - reductions over axes with keepdim: sum, mean, max, min, prod,
 * var, std, argmax, argmin. Reducing everything gives a 0-D tensor. */
#include "core/fw_backend.h"
#include "core/fw_op.h"
#include "ops_complex.h"

#include <string.h>

typedef struct red_attr {
    unsigned mask;
    double scale;        /* mean: 1/count */
} red_attr;

/* Shapes of the result with and without the reduced dims kept. */
static void red_shapes(const fw_tensor *x, unsigned mask, bool keepdim, int64_t *out,
                       int *nout, int64_t *keep)
{
    int n = 0;
    for (int i = 0; i < x->ndim; i++) {
        bool r = mask & (1u << i);
        keep[i] = r ? 1 : x->shape[i];
        if (!r || keepdim)
            out[n++] = keep[i];
    }
    *nout = n;
}

/* The gradient of the reduced output spread back over x's shape (a view). */
static int spread(fw_tensor **out, fw_node *n, fw_tensor *g)
{
    int nd;
    const int64_t *shape = fw_node_input_shape(n, 0, &nd);
    const red_attr *a = fw_node_attr(n);
    int64_t keep[FW_MAX_DIMS];
    fw_tensor *r = NULL;
    int err;

    for (int i = 0; i < nd; i++)
        keep[i] = (a->mask & (1u << i)) ? 1 : shape[i];
    if ((err = fw_op_reshape(&r, g, keep, nd)) < 0)
        return err;
    err = fw_expand(out, r, shape, nd);
    fw_tensor_unref(r);
    return err;
}

static int sum_backward(fw_node *n, fw_tensor **gin, fw_tensor *const *gout)
{
    if (!fw_node_needs_grad(n, 0))
        return 0;
    return spread(&gin[0], n, gout[0]);
}

static int mean_backward(fw_node *n, fw_tensor **gin, fw_tensor *const *gout)
{
    const red_attr *a = fw_node_attr(n);
    fw_tensor *g = NULL;
    int err;

    if (!fw_node_needs_grad(n, 0))
        return 0;
    if ((err = fw_mul_scalar(&g, gout[0], a->scale)) == 0)
        err = spread(&gin[0], n, g);
    fw_tensor_unref(g);
    return err;
}

/* max/min: Paddle's rule, every element equal to the result gets the grad. */
static int extreme_backward(fw_node *n, fw_tensor **gin, fw_tensor *const *gout)
{
    fw_tensor *x = fw_node_saved(n, 0), *y = fw_node_saved(n, 1);
    fw_tensor *ye = NULL, *ge = NULL, *m = NULL, *mf = NULL;
    int err;

    if (!fw_node_needs_grad(n, 0))
        return 0;
    if ((err = spread(&ye, n, y)) == 0 && (err = spread(&ge, n, gout[0])) == 0 &&
        (err = fw_eq(&m, x, ye)) == 0 && (err = fw_cast(&mf, m, x->dtype)) == 0)
        err = fw_mul(&gin[0], ge, mf);
    fw_tensor_unref(ye);
    fw_tensor_unref(ge);
    fw_tensor_unref(m);
    fw_tensor_unref(mf);
    return err;
}

/* prod: d/dx_i = prod / x_i (inputs with zeros give inf/nan, as in the
 * simple formula; documented). */
static int prod_backward(fw_node *n, fw_tensor **gin, fw_tensor *const *gout)
{
    fw_tensor *x = fw_node_saved(n, 0), *y = fw_node_saved(n, 1);
    fw_tensor *ye = NULL, *ge = NULL, *t = NULL;
    int err;

    if (!fw_node_needs_grad(n, 0))
        return 0;
    if ((err = spread(&ye, n, y)) == 0 && (err = spread(&ge, n, gout[0])) == 0 &&
        (err = fw_mul(&t, ge, ye)) == 0)
        err = fw_div(&gin[0], t, x);
    fw_tensor_unref(ye);
    fw_tensor_unref(ge);
    fw_tensor_unref(t);
    return err;
}

static int reduce(fw_tensor **out, const char *name, fw_redop op, bool mean, fw_tensor *x,
                  const int *axes, int naxes, bool keepdim)
{
    int64_t oshape[FW_MAX_DIMS], keep[FW_MAX_DIMS];
    fw_tensor *xd = NULL, *y = NULL, *t = NULL, *r = NULL;
    const fw_backend *be;
    fw_node *node;
    unsigned mask;
    int nout, err;
    fw_dtype odt;

    *out = NULL;
    if (x == NULL)
        return fw_error_set(FW_EINVAL, "%s: input is NULL", name);
    if ((err = fw_op_axes_mask(&mask, name, axes, naxes, x->ndim)) < 0)
        return err;
    if (!fw_dtype_is_float(x->dtype) && fw_dtype_is_complex(x->dtype)) {
        if (op == FW_RED_SUM)
            return fw__complex_sum(out, x, axes, naxes, keepdim, mean);
        return fw_error_set(FW_EDTYPE, "%s: not defined for complex tensors", name);
    }
    if (mean && !fw_dtype_is_float(x->dtype))
        return fw_error_set(FW_EDTYPE, "%s: expected a float tensor, got %s", name,
                            fw_dtype_name(x->dtype));
    if ((op == FW_RED_MAX || op == FW_RED_MIN) && x->dtype == FW_BOOL)
        return fw_error_set(FW_EDTYPE, "%s: not defined for bool tensors", name);
    if ((op == FW_RED_MAX || op == FW_RED_MIN) && x->numel == 0)
        return fw_error_set(FW_ESHAPE, "%s: empty tensor has no %s", name, name);
    if (x->dtype == FW_FLOAT16 || x->dtype == FW_BFLOAT16) {
        if ((err = fw_cast(&t, x, FW_FLOAT32)) == 0 &&
            (err = reduce(&r, name, op, mean, t, axes, naxes, keepdim)) == 0)
            err = fw_cast(out, r, x->dtype);
        fw_tensor_unref(t);
        fw_tensor_unref(r);
        return err;
    }
    if ((be = fw_backend_require(x->device, name)) == NULL)
        return FW_EDEVICE;
    odt = x->dtype;
    if (!fw_dtype_is_float(x->dtype) && (op == FW_RED_SUM || op == FW_RED_PROD))
        odt = FW_INT64;
    red_shapes(x, mask, keepdim, oshape, &nout, keep);
    if ((err = fw_op_dense(&xd, x)) < 0)
        return err;
    if ((err = fw_op_output(&y, x->device, odt, oshape, nout)) < 0)
        goto fail;
    fw_kview ov, xv;
    fw__kview(&ov, y);
    fw__kview(&xv, xd);
    if ((err = be->reduce(op, &ov, &xv, mask)) < 0)
        goto fail;
    double count = 1;
    for (int i = 0; i < x->ndim; i++)
        if (mask & (1u << i))
            count *= (double)x->shape[i];
    if (mean) {
        /* scale in place, no autograd: y *= 1/count */
        fw_tensor *s = NULL;
        double inv = count > 0 ? 1.0 / count : 0.0 / 0.0;
        if ((err = fw_op_scalar(&s, y->device, y->dtype, inv)) == 0) {
            fw_kview sv;
            fw__kview(&sv, s);
            sv.ndim = ov.ndim;
            for (int i = 0; i < sv.ndim; i++) {
                sv.shape[i] = ov.shape[i];
                sv.strides[i] = 0;
            }
            if (y->numel > 0)
                err = be->binary(FW_BIN_MUL, &ov, &ov, &sv);
            fw_tensor_unref(s);
        }
        if (err < 0)
            goto fail;
    }
    fw_backward_fn bw = mean ? mean_backward
                      : op == FW_RED_SUM ? sum_backward
                      : op == FW_RED_PROD ? prod_backward : extreme_backward;
    if ((err = fw_node_record(&node, name, bw, 1, &x, 1, &y, 2, sizeof(red_attr))) < 0)
        goto fail;
    if (node) {
        red_attr *a = fw_node_attr(node);
        a->mask = mask;
        a->scale = count > 0 ? 1.0 / count : 0.0;
        if (op == FW_RED_MAX || op == FW_RED_MIN || op == FW_RED_PROD) {
            fw_node_save(node, 0, xd);
            if ((err = fw_node_save(node, 1, y)) < 0)
                goto fail;
        }
    }
    fw_tensor_unref(xd);
    *out = y;
    return 0;
fail:
    fw_tensor_unref(xd);
    fw_tensor_unref(y);
    return err;
}

int fw_sum(fw_tensor **out, fw_tensor *x, const int *axes, int naxes, bool keepdim)
{
    return reduce(out, "sum", FW_RED_SUM, false, x, axes, naxes, keepdim);
}

int fw_mean(fw_tensor **out, fw_tensor *x, const int *axes, int naxes, bool keepdim)
{
    return reduce(out, "mean", FW_RED_SUM, true, x, axes, naxes, keepdim);
}

int fw_max(fw_tensor **out, fw_tensor *x, const int *axes, int naxes, bool keepdim)
{
    return reduce(out, "max", FW_RED_MAX, false, x, axes, naxes, keepdim);
}

int fw_min(fw_tensor **out, fw_tensor *x, const int *axes, int naxes, bool keepdim)
{
    return reduce(out, "min", FW_RED_MIN, false, x, axes, naxes, keepdim);
}

int fw_prod(fw_tensor **out, fw_tensor *x, const int *axes, int naxes, bool keepdim)
{
    return reduce(out, "prod", FW_RED_PROD, false, x, axes, naxes, keepdim);
}

/* var = sum((x - mean)^2) / (N - unbiased), composed from differentiable ops. */
int fw_var(fw_tensor **out, fw_tensor *x, const int *axes, int naxes, bool unbiased,
           bool keepdim)
{
    fw_tensor *m = NULL, *d = NULL, *sq = NULL, *s = NULL;
    unsigned mask;
    int err;

    *out = NULL;
    if ((err = fw_op_check_float("var", x)) < 0)
        return err;
    if ((err = fw_op_axes_mask(&mask, "var", axes, naxes, x->ndim)) < 0)
        return err;
    double count = 1;
    for (int i = 0; i < x->ndim; i++)
        if (mask & (1u << i))
            count *= (double)x->shape[i];
    double denom = count - (unbiased ? 1 : 0);
    if ((err = fw_mean(&m, x, axes, naxes, true)) == 0 && (err = fw_sub(&d, x, m)) == 0 &&
        (err = fw_square(&sq, d)) == 0 && (err = fw_sum(&s, sq, axes, naxes, keepdim)) == 0)
        err = fw_mul_scalar(out, s, denom > 0 ? 1.0 / denom : 0.0 / 0.0);
    fw_tensor_unref(m);
    fw_tensor_unref(d);
    fw_tensor_unref(sq);
    fw_tensor_unref(s);
    return err;
}

int fw_std(fw_tensor **out, fw_tensor *x, const int *axes, int naxes, bool unbiased,
           bool keepdim)
{
    fw_tensor *v = NULL;
    int err;

    *out = NULL;
    if ((err = fw_var(&v, x, axes, naxes, unbiased, keepdim)) == 0)
        err = fw_sqrt(out, v);
    fw_tensor_unref(v);
    return err;
}

static int arg_reduce(fw_tensor **out, const char *name, bool is_max, fw_tensor *x, int axis,
                      bool keepdim)
{
    int64_t oshape[FW_MAX_DIMS], outer = 1, n = 1, inner = 1;
    fw_tensor *xd = NULL, *t = NULL;
    const fw_backend *be;
    int nout = 0, a = 0, err;

    *out = NULL;
    if (x == NULL)
        return fw_error_set(FW_EINVAL, "%s: input is NULL", name);
    if (x->dtype == FW_BOOL)
        return fw_error_set(FW_EDTYPE, "%s: not defined for bool tensors", name);
    if (x->numel == 0)
        return fw_error_set(FW_ESHAPE, "%s: empty tensor", name);
    if (axis != FW_AXIS_NONE && (err = fw_op_axis(&a, name, axis, x->ndim)) < 0)
        return err;
    if (x->dtype == FW_FLOAT16 || x->dtype == FW_BFLOAT16) {
        bool was = fw_set_grad_enabled(false);
        if ((err = fw_cast(&t, x, FW_FLOAT32)) == 0)
            err = arg_reduce(out, name, is_max, t, axis, keepdim);
        fw_set_grad_enabled(was);
        fw_tensor_unref(t);
        return err;
    }
    if ((be = fw_backend_require(x->device, name)) == NULL)
        return FW_EDEVICE;
    if (axis == FW_AXIS_NONE || x->ndim == 0) {
        n = x->numel;
        if (keepdim)
            for (int i = 0; i < x->ndim; i++)
                oshape[nout++] = 1;
    } else {
        for (int i = 0; i < x->ndim; i++) {
            if (i < a) outer *= x->shape[i];
            else if (i > a) inner *= x->shape[i];
            else n = x->shape[i];
            if (i != a || keepdim)
                oshape[nout++] = i == a ? 1 : x->shape[i];
        }
    }
    if ((err = fw_op_dense(&xd, x)) < 0)
        return err;
    if ((err = fw_op_output(out, x->device, FW_INT64, oshape, nout)) == 0)
        err = be->arg_reduce(is_max, fw__ptr(*out), fw__ptr(xd), x->dtype, outer, n, inner);
    fw_tensor_unref(xd);
    if (err < 0) {
        fw_tensor_unref(*out);
        *out = NULL;
    }
    return err;
}

int fw_argmax(fw_tensor **out, fw_tensor *x, int axis, bool keepdim)
{
    return arg_reduce(out, "argmax", true, x, axis, keepdim);
}

int fw_argmin(fw_tensor **out, fw_tensor *x, int axis, bool keepdim)
{
    return arg_reduce(out, "argmin", false, x, axis, keepdim);
}
