/* unary.c - unary math ops (exp, log, ..., gelu, silu) with backward. */
#include "core/fw_backend.h"
#include "core/fw_op.h"
#include "ops_complex.h"

typedef struct unattr {
    fw_unop op;
    double alpha;
} unattr;

static int unary_backward(fw_node *n, fw_tensor **gin, fw_tensor *const *gout)
{
    const unattr *at = fw_node_attr(n);
    fw_tensor *x = fw_node_saved(n, 0), *y = fw_node_saved(n, 1), *g = NULL;
    const fw_backend *be;
    int err;

    if (!fw_node_needs_grad(n, 0))
        return 0;
    if (fw__autograd_creating_graph()) {
        /* slot 2: the input itself when slot 0 is a dense copy of it */
        fw_tensor *xo = fw_node_saved(n, 2);
        return fw__unary_grad_graph(&gin[0], at->op, at->alpha, gout[0], xo ? xo : x, y);
    }
    if ((be = fw_backend_require(x->device, fw_node_name(n))) == NULL)
        return FW_EDEVICE;
    if ((err = fw_op_dense(&g, gout[0])) < 0)
        return err;
    if ((err = fw_op_output(&gin[0], x->device, x->dtype, x->shape, x->ndim)) == 0 &&
        x->numel > 0)
        err = be->unary_grad(at->op, fw__ptr(gin[0]), fw__ptr(g), fw__ptr(x), fw__ptr(y),
                             x->numel, x->dtype, at->alpha);
    fw_tensor_unref(g);
    return err;
}

static int unary(fw_tensor **out, const char *name, fw_unop op, fw_tensor *x, double alpha)
{
    fw_tensor *xd = NULL, *y = NULL, *t = NULL;
    const fw_backend *be;
    fw_node *node;
    int err;

    *out = NULL;
    if (x == NULL)
        return fw_error_set(FW_EINVAL, "%s: input is NULL", name);
    bool int_ok = op == FW_UN_ABS || op == FW_UN_NEG || op == FW_UN_SQUARE || op == FW_UN_SIGN;
    if (!fw_dtype_is_float(x->dtype) && fw_dtype_is_complex(x->dtype) &&
        (op == FW_UN_ABS || op == FW_UN_NEG))
        return fw__complex_unary(out, op == FW_UN_ABS ? FW_CX_ABS : FW_CX_NEG, x);
    if (!fw_dtype_is_float(x->dtype) &&
        !(int_ok && (x->dtype == FW_INT32 || x->dtype == FW_INT64)))
        return fw_error_set(FW_EDTYPE, "%s: expected a float tensor, got %s", name,
                            fw_dtype_name(x->dtype));
    if (x->dtype == FW_FLOAT16 || x->dtype == FW_BFLOAT16) {
        if ((err = fw_cast(&t, x, FW_FLOAT32)) == 0 &&
            (err = unary(&y, name, op, t, alpha)) == 0)
            err = fw_cast(out, y, x->dtype);
        fw_tensor_unref(t);
        fw_tensor_unref(y);
        return err;
    }
    if ((be = fw_backend_require(x->device, name)) == NULL)
        return FW_EDEVICE;
    if ((err = fw_op_dense(&xd, x)) < 0)
        return err;
    if ((err = fw_op_output(&y, x->device, x->dtype, x->shape, x->ndim)) < 0)
        goto fail;
    if (x->numel > 0 &&
        (err = be->unary(op, fw__ptr(y), fw__ptr(xd), x->numel, x->dtype, alpha)) < 0)
        goto fail;
    if ((err = fw_node_record(&node, name, unary_backward, 1, &x, 1, &y, 3,
                              sizeof(unattr))) < 0)
        goto fail;
    if (node) {
        unattr *at = fw_node_attr(node);
        at->op = op;
        at->alpha = alpha;
        fw_node_save(node, 0, xd);
        if (xd != x)
            fw_node_save(node, 2, x);
        if ((err = fw_node_save(node, 1, y)) < 0)
            goto fail;
    }
    fw_tensor_unref(xd);
    *out = y;
    return 0;
fail:
    fw_tensor_unref(xd);
    fw_tensor_unref(y);
    return err;
}

int fw_exp(fw_tensor **out, fw_tensor *x) { return unary(out, "exp", FW_UN_EXP, x, 0); }
int fw_log(fw_tensor **out, fw_tensor *x) { return unary(out, "log", FW_UN_LOG, x, 0); }
int fw_sqrt(fw_tensor **out, fw_tensor *x) { return unary(out, "sqrt", FW_UN_SQRT, x, 0); }
int fw_rsqrt(fw_tensor **out, fw_tensor *x) { return unary(out, "rsqrt", FW_UN_RSQRT, x, 0); }
int fw_abs(fw_tensor **out, fw_tensor *x) { return unary(out, "abs", FW_UN_ABS, x, 0); }
int fw_neg(fw_tensor **out, fw_tensor *x) { return unary(out, "neg", FW_UN_NEG, x, 0); }
int fw_square(fw_tensor **out, fw_tensor *x) { return unary(out, "square", FW_UN_SQUARE, x, 0); }
int fw_tanh(fw_tensor **out, fw_tensor *x) { return unary(out, "tanh", FW_UN_TANH, x, 0); }
int fw_sigmoid(fw_tensor **out, fw_tensor *x) { return unary(out, "sigmoid", FW_UN_SIGMOID, x, 0); }
int fw_relu(fw_tensor **out, fw_tensor *x) { return unary(out, "relu", FW_UN_RELU, x, 0); }
int fw_silu(fw_tensor **out, fw_tensor *x) { return unary(out, "silu", FW_UN_SILU, x, 0); }
int fw_sin(fw_tensor **out, fw_tensor *x) { return unary(out, "sin", FW_UN_SIN, x, 0); }
int fw_cos(fw_tensor **out, fw_tensor *x) { return unary(out, "cos", FW_UN_COS, x, 0); }

int fw_floor(fw_tensor **out, fw_tensor *x) { return unary(out, "floor", FW_UN_FLOOR, x, 0); }
int fw_ceil(fw_tensor **out, fw_tensor *x) { return unary(out, "ceil", FW_UN_CEIL, x, 0); }
int fw_round(fw_tensor **out, fw_tensor *x) { return unary(out, "round", FW_UN_ROUND, x, 0); }
int fw_sign(fw_tensor **out, fw_tensor *x) { return unary(out, "sign", FW_UN_SIGN, x, 0); }
int fw_reciprocal(fw_tensor **out, fw_tensor *x) { return unary(out, "reciprocal", FW_UN_RECIPROCAL, x, 0); }
int fw_log1p(fw_tensor **out, fw_tensor *x) { return unary(out, "log1p", FW_UN_LOG1P, x, 0); }
int fw_expm1(fw_tensor **out, fw_tensor *x) { return unary(out, "expm1", FW_UN_EXPM1, x, 0); }
int fw_erf(fw_tensor **out, fw_tensor *x) { return unary(out, "erf", FW_UN_ERF, x, 0); }
int fw_log2(fw_tensor **out, fw_tensor *x) { return unary(out, "log2", FW_UN_LOG2, x, 0); }
int fw_log10(fw_tensor **out, fw_tensor *x) { return unary(out, "log10", FW_UN_LOG10, x, 0); }

int fw_gelu(fw_tensor **out, fw_tensor *x, bool approximate)
{
    return unary(out, "gelu", approximate ? FW_UN_GELU_TANH : FW_UN_GELU, x, 0);
}

int fw_leaky_relu(fw_tensor **out, fw_tensor *x, double negative_slope)
{
    return unary(out, "leaky_relu", FW_UN_LEAKY_RELU, x, negative_slope);
}

int fw_pow_scalar(fw_tensor **out, fw_tensor *x, double p)
{
    if (x && !fw_dtype_is_float(x->dtype)) {
        /* integer base: compute in float32 like paddle.pow with a float exponent */
        fw_tensor *t = NULL;
        int err = fw_cast(&t, x, FW_FLOAT32);
        if (err == 0)
            err = unary(out, "pow", FW_UN_POW, t, p);
        else
            *out = NULL;
        fw_tensor_unref(t);
        return err;
    }
    return unary(out, "pow", FW_UN_POW, x, p);
}

int fw_logical_not(fw_tensor **out, fw_tensor *x)
{
    fw_tensor *xd = NULL;
    const fw_backend *be;
    int err;

    *out = NULL;
    if (x == NULL)
        return fw_error_set(FW_EINVAL, "logical_not: input is NULL");
    if ((be = fw_backend_require(x->device, "logical_not")) == NULL)
        return FW_EDEVICE;
    if ((err = fw_op_dense(&xd, x)) < 0)
        return err;
    if ((err = fw_op_output(out, x->device, FW_BOOL, x->shape, x->ndim)) == 0 && x->numel > 0)
        err = be->unary(FW_UN_NOT, fw__ptr(*out), fw__ptr(xd), x->numel, x->dtype, 0);
    fw_tensor_unref(xd);
    if (err < 0) {
        fw_tensor_unref(*out);
        *out = NULL;
    }
    return err;
}
