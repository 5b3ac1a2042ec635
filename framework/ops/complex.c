/*
 * complex.c - complex64/complex128 tensors (fw/complex.h): the part views
 * (real, imag, as_real, as_complex), fw_complex, and complex arithmetic
 * built from them and the real ops, which elementwise.c, unary.c,
 * reduce.c and matmul.c call when an operand is complex.
 */
#include <math.h>

#include "core/fw_op.h"
#include "fw/complex.h"
#include "ops_complex.h"

/* ---- part views --------------------------------------------------------------- */

static int complex_from_grad(fw_tensor **out, fw_tensor *g, bool imag_part)
{
    fw_tensor *z = NULL;
    int err;

    if ((err = fw_op_scalar(&z, g->device, g->dtype, 0.0)) < 0)
        return err;
    err = imag_part ? fw_complex(out, z, g) : fw_complex(out, g, z);
    fw_tensor_unref(z);
    return err;
}

static int real_backward(fw_node *n, fw_tensor **gin, fw_tensor *const *gout)
{
    return fw_node_needs_grad(n, 0) ? complex_from_grad(&gin[0], gout[0], false) : 0;
}

static int imag_backward(fw_node *n, fw_tensor **gin, fw_tensor *const *gout)
{
    return fw_node_needs_grad(n, 0) ? complex_from_grad(&gin[0], gout[0], true) : 0;
}

/* The float view of x's real (part 0) or imaginary (part 1) components. */
static int part_view(fw_tensor **out, fw_tensor *x, int part)
{
    int64_t st[FW_MAX_DIMS];
    fw_tensor *y = NULL;
    int err;

    for (int d = 0; d < x->ndim; d++)
        st[d] = 2 * x->strides[d];
    if ((err = fw__tensor_view(&y, x, x->shape, st, x->ndim, 2 * x->offset + part)) < 0)
        return err;
    y->dtype = fw_dtype_real_part(x->dtype);
    *out = y;
    return 0;
}

static int part(fw_tensor **out, fw_tensor *x, int which, const char *name)
{
    fw_tensor *y = NULL;
    fw_node *node;
    int err;

    *out = NULL;
    if (x == NULL)
        return fw_error_set(FW_EINVAL, "%s: input is NULL", name);
    if (!fw_dtype_is_complex(x->dtype)) {
        if (which == 0) {
            *out = fw_tensor_ref(x);
            return 0;
        }
        return fw_zeros_like(out, x);
    }
    if ((err = part_view(&y, x, which)) < 0)
        return err;
    if ((err = fw_node_record(&node, name, which ? imag_backward : real_backward, 1, &x, 1, &y,
                              0, 0)) < 0) {
        fw_tensor_unref(y);
        return err;
    }
    *out = y;
    return 0;
}

int fw_real(fw_tensor **out, fw_tensor *x) { return part(out, x, 0, "real"); }
int fw_imag(fw_tensor **out, fw_tensor *x) { return part(out, x, 1, "imag"); }

static int as_real_backward(fw_node *n, fw_tensor **gin, fw_tensor *const *gout)
{
    return fw_node_needs_grad(n, 0) ? fw_as_complex(&gin[0], gout[0]) : 0;
}

static int as_complex_backward(fw_node *n, fw_tensor **gin, fw_tensor *const *gout)
{
    return fw_node_needs_grad(n, 0) ? fw_as_real(&gin[0], gout[0]) : 0;
}

int fw_as_real(fw_tensor **out, fw_tensor *x)
{
    int64_t shape[FW_MAX_DIMS], st[FW_MAX_DIMS];
    fw_tensor *y = NULL;
    fw_node *node;
    int err;

    *out = NULL;
    if (x == NULL)
        return fw_error_set(FW_EINVAL, "as_real: input is NULL");
    if (!fw_dtype_is_complex(x->dtype))
        return fw_error_set(FW_EDTYPE, "as_real: expected a complex tensor, got %s",
                            fw_dtype_name(x->dtype));
    if (x->ndim >= FW_MAX_DIMS)
        return fw_error_set(FW_ESHAPE, "as_real: rank %d leaves no room for the last "
                            "dimension of 2", x->ndim);
    for (int d = 0; d < x->ndim; d++) {
        shape[d] = x->shape[d];
        st[d] = 2 * x->strides[d];
    }
    shape[x->ndim] = 2;
    st[x->ndim] = 1;
    if ((err = fw__tensor_view(&y, x, shape, st, x->ndim + 1, 2 * x->offset)) < 0)
        return err;
    y->dtype = fw_dtype_real_part(x->dtype);
    if ((err = fw_node_record(&node, "as_real", as_real_backward, 1, &x, 1, &y, 0, 0)) < 0) {
        fw_tensor_unref(y);
        return err;
    }
    *out = y;
    return 0;
}

int fw_as_complex(fw_tensor **out, fw_tensor *x)
{
    int64_t st[FW_MAX_DIMS];
    fw_tensor *src = NULL, *y = NULL;
    fw_node *node;
    bool adjacent;
    int err;

    *out = NULL;
    if (x == NULL)
        return fw_error_set(FW_EINVAL, "as_complex: input is NULL");
    if (x->dtype != FW_FLOAT32 && x->dtype != FW_FLOAT64)
        return fw_error_set(FW_EDTYPE, "as_complex: expected float32 or float64, got %s",
                            fw_dtype_name(x->dtype));
    if (x->ndim < 1 || x->shape[x->ndim - 1] != 2)
        return fw_error_set(FW_ESHAPE, "as_complex: the last dimension must be 2");
    adjacent = x->strides[x->ndim - 1] == 1 && x->offset % 2 == 0;
    for (int d = 0; d < x->ndim - 1; d++)
        adjacent = adjacent && (x->strides[d] % 2 == 0 || x->shape[d] == 1);
    if (adjacent) {
        src = fw_tensor_ref(x);
    } else {
        bool was = fw_set_grad_enabled(false);
        err = fw_contiguous(&src, x);
        fw_set_grad_enabled(was);
        if (err < 0)
            return err;
    }
    for (int d = 0; d < x->ndim - 1; d++)
        st[d] = src->shape[d] == 1 ? 1 : src->strides[d] / 2;
    err = fw__tensor_view(&y, src, src->shape, st, x->ndim - 1, src->offset / 2);
    fw_tensor_unref(src);
    if (err < 0)
        return err;
    y->dtype = fw_dtype_to_complex(x->dtype);
    if ((err = fw_node_record(&node, "as_complex", as_complex_backward, 1, &x, 1, &y, 0, 0)) < 0) {
        fw_tensor_unref(y);
        return err;
    }
    *out = y;
    return 0;
}

/* ---- complex(re, im) ------------------------------------------------------------ */

static int complex_backward(fw_node *n, fw_tensor **gin, fw_tensor *const *gout)
{
    int err = 0;

    for (int i = 0; i < 2 && err == 0; i++) {
        fw_tensor *p = NULL, *c = NULL;
        int nd;
        const int64_t *shape = fw_node_input_shape(n, i, &nd);
        if (!fw_node_needs_grad(n, i))
            continue;
        if ((err = part(&p, gout[0], i, i ? "imag" : "real")) == 0 &&
            (err = fw_op_reduce_to_shape(&c, p, shape, nd)) == 0)
            err = fw_cast(&gin[i], c, fw_node_input_dtype(n, i));
        fw_tensor_unref(p);
        fw_tensor_unref(c);
    }
    return err;
}

int fw_complex(fw_tensor **out, fw_tensor *re, fw_tensor *im)
{
    int64_t shape[FW_MAX_DIMS];
    fw_tensor *r = NULL, *i = NULL, *er = NULL, *ei = NULL, *y = NULL;
    fw_node *node;
    fw_dtype dt;
    int nd, err;

    *out = NULL;
    if (re == NULL || im == NULL)
        return fw_error_set(FW_EINVAL, "complex: input is NULL");
    if ((err = fw_op_check_same_device("complex", re, im)) < 0)
        return err;
    if (fw_dtype_is_complex(re->dtype) || fw_dtype_is_complex(im->dtype))
        return fw_error_set(FW_EDTYPE, "complex: real and imag must be real tensors, got %s "
                            "and %s", fw_dtype_name(re->dtype), fw_dtype_name(im->dtype));
    if (re->device != FW_CPU)
        return fw_error_set(FW_EDEVICE, "complex: CPU tensors only");
    dt = re->dtype == FW_FLOAT64 || im->dtype == FW_FLOAT64 ? FW_FLOAT64 : FW_FLOAT32;
    if ((err = fw_op_broadcast_shapes(shape, &nd, "complex", re->shape, re->ndim, im->shape,
                                      im->ndim)) < 0)
        return err;
    bool was = fw_set_grad_enabled(false);
    if ((err = fw_cast(&r, re, dt)) == 0 && (err = fw_cast(&i, im, dt)) == 0 &&
        (err = fw_expand(&er, r, shape, nd)) == 0 && (err = fw_expand(&ei, i, shape, nd)) == 0) {
        fw_tensor_unref(r);
        fw_tensor_unref(i);
        r = i = NULL;
        if ((err = fw_contiguous(&r, er)) == 0 && (err = fw_contiguous(&i, ei)) == 0)
            err = fw_op_output(&y, FW_CPU, fw_dtype_to_complex(dt), shape, nd);
    }
    fw_set_grad_enabled(was);
    if (err == 0) {
        int64_t n = y->numel;
        if (dt == FW_FLOAT32) {
            const float *pr = fw__ptr(r), *pi = fw__ptr(i);
            float *py = fw__ptr(y);
            for (int64_t k = 0; k < n; k++) {
                py[2 * k] = pr[k];
                py[2 * k + 1] = pi[k];
            }
        } else {
            const double *pr = fw__ptr(r), *pi = fw__ptr(i);
            double *py = fw__ptr(y);
            for (int64_t k = 0; k < n; k++) {
                py[2 * k] = pr[k];
                py[2 * k + 1] = pi[k];
            }
        }
        fw_tensor *ins[2] = {re, im};
        err = fw_node_record(&node, "complex", complex_backward, 2, ins, 1, &y, 0, 0);
    }
    fw_tensor_unref(r);
    fw_tensor_unref(i);
    fw_tensor_unref(er);
    fw_tensor_unref(ei);
    if (err < 0) {
        fw_tensor_unref(y);
        return err;
    }
    *out = y;
    return 0;
}

/* ---- arithmetic from parts -------------------------------------------------------- */

/* Parts of an operand: re (a new ref) and im (NULL for a real operand). */
static int parts(fw_tensor **re, fw_tensor **im, fw_tensor *x)
{
    *re = *im = NULL;
    if (!fw_dtype_is_complex(x->dtype)) {
        if (fw_dtype_is_float(x->dtype)) {
            *re = fw_tensor_ref(x);
            return 0;
        }
        return fw_cast(re, x, FW_FLOAT32);
    }
    int err = fw_real(re, x);
    if (err == 0 && (err = fw_imag(im, x)) < 0) {
        fw_tensor_unref(*re);
        *re = NULL;
    }
    return err;
}

/* a + b or a - b where either may be NULL (zero); *out NULL when both are. */
static int add_opt(fw_tensor **out, fw_tensor *a, fw_tensor *b, bool minus)
{
    *out = NULL;
    if (a && b)
        return minus ? fw_sub(out, a, b) : fw_add(out, a, b);
    if (a) {
        *out = fw_tensor_ref(a);
        return 0;
    }
    if (b) {
        if (minus)
            return fw_neg(out, b);
        *out = fw_tensor_ref(b);
    }
    return 0;
}

/* a * b, NULL when either is NULL (zero). */
static int mul_opt(fw_tensor **out, fw_tensor *a, fw_tensor *b)
{
    *out = NULL;
    return a && b ? fw_mul(out, a, b) : 0;
}

/* re + i im, with a NULL im meaning zero; the result's precision is `dt`'s. */
static int assemble(fw_tensor **out, fw_tensor *re, fw_tensor *im, fw_dtype dt)
{
    fw_tensor *z = NULL, *y = NULL;
    int err;

    if (im == NULL) {
        if ((err = fw_op_scalar(&z, re->device, fw_dtype_real_part(dt), 0.0)) < 0)
            return err;
        im = z;
    }
    err = fw_complex(&y, re, im);
    fw_tensor_unref(z);
    if (err == 0 && y->dtype != dt) {
        err = fw_cast(out, y, dt);
        fw_tensor_unref(y);
        return err;
    }
    *out = y;
    return err;
}

int fw__complex_arith(fw_tensor **out, int op, fw_tensor *a, fw_tensor *b)
{
    fw_tensor *ar = NULL, *ai = NULL, *br = NULL, *bi = NULL;
    fw_tensor *t[8] = {NULL};
    fw_tensor *re = NULL, *im = NULL;
    fw_dtype dt = fw_dtype_promote(a->dtype, b->dtype);
    int err;

    *out = NULL;
    if ((err = parts(&ar, &ai, a)) < 0 || (err = parts(&br, &bi, b)) < 0)
        goto done;
    switch (op) {
    case FW_CX_ADD:
    case FW_CX_SUB:
        if ((err = add_opt(&re, ar, br, op == FW_CX_SUB)) == 0)
            err = add_opt(&im, ai, bi, op == FW_CX_SUB);
        break;
    case FW_CX_MUL:
        /* (ar + i ai)(br + i bi) = ar br - ai bi + i (ar bi + ai br) */
        if ((err = fw_mul(&t[0], ar, br)) == 0 && (err = mul_opt(&t[1], ai, bi)) == 0 &&
            (err = mul_opt(&t[2], ar, bi)) == 0 && (err = mul_opt(&t[3], ai, br)) == 0 &&
            (err = add_opt(&re, t[0], t[1], true)) == 0)
            err = add_opt(&im, t[2], t[3], false);
        break;
    case FW_CX_DIV:
        if (bi == NULL) {
            if ((err = fw_div(&re, ar, br)) == 0 && ai)
                err = fw_div(&im, ai, br);
            break;
        }
        /* (ar br + ai bi + i (ai br - ar bi)) / (br^2 + bi^2) */
        if ((err = fw_mul(&t[0], br, br)) == 0 && (err = fw_mul(&t[1], bi, bi)) == 0 &&
            (err = fw_add(&t[2], t[0], t[1])) == 0 && (err = fw_mul(&t[3], ar, br)) == 0 &&
            (err = mul_opt(&t[4], ai, bi)) == 0 && (err = mul_opt(&t[5], ai, br)) == 0 &&
            (err = fw_mul(&t[6], ar, bi)) == 0 && (err = add_opt(&t[7], t[3], t[4], false)) == 0 &&
            (err = fw_div(&re, t[7], t[2])) == 0) {
            fw_tensor *num = NULL;
            if ((err = add_opt(&num, t[5], t[6], true)) == 0)
                err = fw_div(&im, num, t[2]);
            fw_tensor_unref(num);
        }
        break;
    default:
        err = fw_error_set(FW_EDTYPE, "this op is not defined for complex tensors");
        goto done;
    }
    if (err == 0)
        err = assemble(out, re, im, dt);
done:
    for (int k = 0; k < 8; k++)
        fw_tensor_unref(t[k]);
    fw_tensor_unref(ar);
    fw_tensor_unref(ai);
    fw_tensor_unref(br);
    fw_tensor_unref(bi);
    fw_tensor_unref(re);
    fw_tensor_unref(im);
    return err;
}

int fw__complex_unary(fw_tensor **out, int op, fw_tensor *x)
{
    fw_tensor *r = NULL, *i = NULL, *a = NULL, *b = NULL, *c = NULL;
    int err;

    *out = NULL;
    if ((err = parts(&r, &i, x)) < 0)
        return err;
    switch (op) {
    case FW_CX_NEG:
        if ((err = fw_neg(&a, r)) == 0 && (err = fw_neg(&b, i)) == 0)
            err = assemble(out, a, b, x->dtype);
        break;
    case FW_CX_CONJ:
        if ((err = fw_neg(&b, i)) == 0)
            err = assemble(out, r, b, x->dtype);
        break;
    case FW_CX_ABS:
        /* |z| = sqrt(re^2 + im^2) */
        if ((err = fw_mul(&a, r, r)) == 0 && (err = fw_mul(&b, i, i)) == 0 &&
            (err = fw_add(&c, a, b)) == 0)
            err = fw_sqrt(out, c);
        break;
    default:
        err = fw_error_set(FW_EDTYPE, "this op is not defined for complex tensors");
    }
    fw_tensor_unref(r);
    fw_tensor_unref(i);
    fw_tensor_unref(a);
    fw_tensor_unref(b);
    fw_tensor_unref(c);
    return err;
}

int fw__complex_sum(fw_tensor **out, fw_tensor *x, const int *axes, int naxes, bool keepdim,
                    bool mean)
{
    fw_tensor *r = NULL, *i = NULL, *a = NULL, *b = NULL;
    int err;

    *out = NULL;
    if ((err = parts(&r, &i, x)) < 0)
        return err;
    if (mean)
        err = fw_mean(&a, r, axes, naxes, keepdim);
    else
        err = fw_sum(&a, r, axes, naxes, keepdim);
    if (err == 0)
        err = mean ? fw_mean(&b, i, axes, naxes, keepdim) : fw_sum(&b, i, axes, naxes, keepdim);
    if (err == 0)
        err = assemble(out, a, b, x->dtype);
    fw_tensor_unref(r);
    fw_tensor_unref(i);
    fw_tensor_unref(a);
    fw_tensor_unref(b);
    return err;
}

int fw__complex_matmul(fw_tensor **out, fw_tensor *x, fw_tensor *y, bool tx, bool ty)
{
    fw_tensor *xr = NULL, *xi = NULL, *yr = NULL, *yi = NULL;
    fw_tensor *t[4] = {NULL}, *re = NULL, *im = NULL;
    fw_dtype dt = fw_dtype_promote(x->dtype, y->dtype);
    int err;

    *out = NULL;
    if ((err = parts(&xr, &xi, x)) == 0 && (err = parts(&yr, &yi, y)) == 0 &&
        (err = fw_matmul(&t[0], xr, yr, tx, ty)) == 0 &&
        (xi == NULL || yi == NULL || (err = fw_matmul(&t[1], xi, yi, tx, ty)) == 0) &&
        (yi == NULL || (err = fw_matmul(&t[2], xr, yi, tx, ty)) == 0) &&
        (xi == NULL || (err = fw_matmul(&t[3], xi, yr, tx, ty)) == 0) &&
        (err = add_opt(&re, t[0], t[1], true)) == 0 && (err = add_opt(&im, t[2], t[3], false)) == 0)
        err = assemble(out, re, im, dt);
    for (int k = 0; k < 4; k++)
        fw_tensor_unref(t[k]);
    fw_tensor_unref(xr);
    fw_tensor_unref(xi);
    fw_tensor_unref(yr);
    fw_tensor_unref(yi);
    fw_tensor_unref(re);
    fw_tensor_unref(im);
    return err;
}

int fw__complex_equal(fw_tensor **out, fw_tensor *a, fw_tensor *b, bool ne)
{
    fw_tensor *ar = NULL, *ai = NULL, *br = NULL, *bi = NULL, *er = NULL, *ei = NULL;
    int err;

    *out = NULL;
    bool was = fw_set_grad_enabled(false);
    if ((err = fw_real(&ar, a)) == 0 && (err = fw_imag(&ai, a)) == 0 &&
        (err = fw_real(&br, b)) == 0 && (err = fw_imag(&bi, b)) == 0) {
        if (ne && (err = fw_ne(&er, ar, br)) == 0 && (err = fw_ne(&ei, ai, bi)) == 0)
            err = fw_logical_or(out, er, ei);
        else if (!ne && (err = fw_eq(&er, ar, br)) == 0 && (err = fw_eq(&ei, ai, bi)) == 0)
            err = fw_logical_and(out, er, ei);
    }
    fw_set_grad_enabled(was);
    fw_tensor_unref(ar);
    fw_tensor_unref(ai);
    fw_tensor_unref(br);
    fw_tensor_unref(bi);
    fw_tensor_unref(er);
    fw_tensor_unref(ei);
    return err;
}

int fw_conj(fw_tensor **out, fw_tensor *x)
{
    *out = NULL;
    if (x == NULL)
        return fw_error_set(FW_EINVAL, "conj: input is NULL");
    if (!fw_dtype_is_complex(x->dtype)) {
        *out = fw_tensor_ref(x);
        return 0;
    }
    return fw__complex_unary(out, FW_CX_CONJ, x);
}

/* ---- angle ------------------------------------------------------------------------ */

/* d atan2(b, a) = (a db - b da) / (a^2 + b^2): the gradient g (-b + i a) / |z|^2 */
static int angle_backward(fw_node *n, fw_tensor **gin, fw_tensor *const *gout)
{
    fw_tensor *x = fw_node_saved(n, 0), *y = NULL;
    int err;

    if (!fw_node_needs_grad(n, 0))
        return 0;
    if ((err = fw_op_output(&y, FW_CPU, x->dtype, x->shape, x->ndim)) < 0)
        return err;
    fw_tensor *g = NULL;
    if ((err = fw_contiguous(&g, gout[0])) < 0 || (err = fw_cast(&gin[0], g, FW_FLOAT64)) < 0) {
        fw_tensor_unref(g);
        fw_tensor_unref(y);
        return err;
    }
    fw_tensor_unref(g);
    const double *gp = fw__ptr(gin[0]);
    for (int64_t k = 0; k < x->numel; k++) {
        double a, b;
        if (x->dtype == FW_COMPLEX64) {
            a = ((const float *)fw__ptr(x))[2 * k];
            b = ((const float *)fw__ptr(x))[2 * k + 1];
        } else {
            a = ((const double *)fw__ptr(x))[2 * k];
            b = ((const double *)fw__ptr(x))[2 * k + 1];
        }
        double d = a * a + b * b, s = d > 0 ? gp[k] / d : 0;
        if (x->dtype == FW_COMPLEX64) {
            ((float *)fw__ptr(y))[2 * k] = (float)(-b * s);
            ((float *)fw__ptr(y))[2 * k + 1] = (float)(a * s);
        } else {
            ((double *)fw__ptr(y))[2 * k] = -b * s;
            ((double *)fw__ptr(y))[2 * k + 1] = a * s;
        }
    }
    fw_tensor_unref(gin[0]);
    gin[0] = y;
    return 0;
}

int fw_angle(fw_tensor **out, fw_tensor *x)
{
    fw_tensor *xd = NULL, *y = NULL;
    fw_node *node;
    int err;

    *out = NULL;
    if (x == NULL)
        return fw_error_set(FW_EINVAL, "angle: input is NULL");
    if (x->device != FW_CPU)
        return fw_error_set(FW_EDEVICE, "angle: CPU tensors only");
    if (!fw_dtype_is_complex(x->dtype)) {
        /* pi where x < 0, else 0 (NaN stays NaN); no gradient (zero a.e.) */
        fw_dtype dt = fw_dtype_is_float(x->dtype) ? x->dtype : FW_FLOAT32;
        fw_tensor *xf = NULL;
        if ((err = fw_cast(&xf, x, FW_FLOAT64)) < 0)
            return err;
        bool was = fw_set_grad_enabled(false);
        err = fw_contiguous(&xd, xf);
        fw_set_grad_enabled(was);
        fw_tensor_unref(xf);
        if (err == 0 && (err = fw_op_output(&y, FW_CPU, FW_FLOAT64, x->shape, x->ndim)) == 0) {
            const double *p = fw__ptr(xd);
            double *q = fw__ptr(y);
            for (int64_t k = 0; k < x->numel; k++)
                q[k] = p[k] < 0 ? M_PI : p[k] != p[k] ? p[k] : 0.0;
            err = fw_cast(out, y, dt);
        }
        fw_tensor_unref(xd);
        fw_tensor_unref(y);
        return err;
    }
    bool was = fw_set_grad_enabled(false);
    err = fw_contiguous(&xd, x);
    fw_set_grad_enabled(was);
    if (err < 0)
        return err;
    if ((err = fw_op_output(&y, FW_CPU, fw_dtype_real_part(x->dtype), x->shape, x->ndim)) < 0)
        goto fail;
    for (int64_t k = 0; k < x->numel; k++) {
        if (x->dtype == FW_COMPLEX64) {
            const float *p = fw__ptr(xd);
            ((float *)fw__ptr(y))[k] = atan2f(p[2 * k + 1], p[2 * k]);
        } else {
            const double *p = fw__ptr(xd);
            ((double *)fw__ptr(y))[k] = atan2(p[2 * k + 1], p[2 * k]);
        }
    }
    if ((err = fw_node_record(&node, "angle", angle_backward, 1, &x, 1, &y, 1, 0)) < 0)
        goto fail;
    if (node)
        fw_node_save(node, 0, xd);
    fw_tensor_unref(xd);
    *out = y;
    return 0;
fail:
    fw_tensor_unref(xd);
    fw_tensor_unref(y);
    return err;
}
