/* unary_grad.c - differentiable gradients of the unary ops, for backward
 * with create_graph (second derivatives).
 *
 * unary.c's backward normally runs one fused kernel (be->unary_grad), whose
 * result has no grad history. When the engine builds a graph
 * (fw__autograd_creating_graph), unary_backward calls fw__unary_grad_graph
 * instead: the same derivative written with recorded ops, so the gradient
 * is itself differentiable in g, x and (through the saved output y, which
 * the engine reattaches to the node) y.
 */
#include "core/fw_backend.h"
#include "core/fw_op.h"

#include <math.h>

#define MAXTMP 24

typedef struct tmps { fw_tensor *v[MAXTMP]; int n; int err; } tmps;

/* Keeps the result of one op (or the first error) for release at the end. */
static fw_tensor *keep(tmps *t, int err, fw_tensor *r)
{
    if (err < 0 || t->err < 0) {
        if (t->err == 0)
            t->err = err < 0 ? err : FW_EINTERNAL;
        fw_tensor_unref(r);
        return NULL;
    }
    if (t->n == MAXTMP) {
        t->err = fw_error_set(FW_EINTERNAL, "unary grad: too many temporaries");
        fw_tensor_unref(r);
        return NULL;
    }
    t->v[t->n++] = r;
    return r;
}

typedef int (*un_fn)(fw_tensor **, fw_tensor *);
typedef int (*bin_fn)(fw_tensor **, fw_tensor *, fw_tensor *);
typedef int (*sc_fn)(fw_tensor **, fw_tensor *, double);

static fw_tensor *op1(tmps *t, un_fn f, fw_tensor *a)
{
    fw_tensor *r = NULL;
    if (t->err)
        return NULL;
    int err = f(&r, a);
    return keep(t, err, r);
}

static fw_tensor *op2(tmps *t, bin_fn f, fw_tensor *a, fw_tensor *b)
{
    fw_tensor *r = NULL;
    if (t->err)
        return NULL;
    int err = f(&r, a, b);
    return keep(t, err, r);
}

static fw_tensor *ops(tmps *t, sc_fn f, fw_tensor *a, double s)
{
    fw_tensor *r = NULL;
    if (t->err)
        return NULL;
    int err = f(&r, a, s);
    return keep(t, err, r);
}

/* d/dx of f at x (y = f(x)) as a recorded expression; NULL for ops whose
 * derivative is zero almost everywhere. */
static fw_tensor *deriv(tmps *tp, fw_unop op, double alpha, fw_tensor *x, fw_tensor *y)
{
    tmps *T = tp;
    fw_tensor *d = NULL, *a, *b, *c;

    switch (op) {
    case FW_UN_EXP: d = y; break;
    case FW_UN_LOG: d = ops(T, fw_rdiv_scalar, x, 1.0); break;
    case FW_UN_LOG2: d = ops(T, fw_rdiv_scalar, x, 1.0 / log(2.0)); break;
    case FW_UN_LOG10: d = ops(T, fw_rdiv_scalar, x, 1.0 / log(10.0)); break;
    case FW_UN_LOG1P: a = ops(T, fw_add_scalar, x, 1.0); d = ops(T, fw_rdiv_scalar, a, 1.0); break;
    case FW_UN_EXPM1: d = ops(T, fw_add_scalar, y, 1.0); break;
    case FW_UN_SQRT: d = ops(T, fw_rdiv_scalar, y, 0.5); break;
    case FW_UN_RSQRT:   /* -0.5 y^3 */
        a = ops(T, fw_pow_scalar, y, 3.0); d = ops(T, fw_mul_scalar, a, -0.5); break;
    case FW_UN_RECIPROCAL:
        a = op1(T, fw_square, y); d = op1(T, fw_neg, a); break;
    case FW_UN_ABS: d = op1(T, fw_sign, x); break;
    case FW_UN_NEG: break;  /* handled by the caller */
    case FW_UN_SQUARE: d = ops(T, fw_mul_scalar, x, 2.0); break;
    case FW_UN_TANH: a = op1(T, fw_square, y); d = ops(T, fw_rsub_scalar, a, 1.0); break;
    case FW_UN_SIGMOID: a = ops(T, fw_rsub_scalar, y, 1.0); d = op2(T, fw_mul, y, a); break;
    case FW_UN_RELU: d = op1(T, fw_sign, y); break;   /* 1 where x > 0; sign has zero grad */
    case FW_UN_LEAKY_RELU:
        a = op1(T, fw_sign, x); b = op1(T, fw_relu, a);   /* 1 where x > 0 */
        c = ops(T, fw_mul_scalar, b, 1.0 - alpha); d = ops(T, fw_add_scalar, c, alpha); break;
    case FW_UN_SILU: {   /* s (1 + x (1 - s)) */
        fw_tensor *s = op1(T, fw_sigmoid, x);
        a = ops(T, fw_rsub_scalar, s, 1.0); b = op2(T, fw_mul, x, a);
        c = ops(T, fw_add_scalar, b, 1.0); d = op2(T, fw_mul, s, c);
        break;
    }
    case FW_UN_GELU: {   /* Phi(x) + x phi(x) */
        fw_tensor *e, *p;
        a = ops(T, fw_mul_scalar, x, M_SQRT1_2); b = op1(T, fw_erf, a);
        c = ops(T, fw_add_scalar, b, 1.0); p = ops(T, fw_mul_scalar, c, 0.5);
        e = op1(T, fw_square, x); e = ops(T, fw_mul_scalar, e, -0.5); e = op1(T, fw_exp, e);
        e = ops(T, fw_mul_scalar, e, 0.5 * M_2_SQRTPI * M_SQRT1_2);   /* 1/sqrt(2 pi) */
        e = op2(T, fw_mul, x, e);
        d = op2(T, fw_add, p, e);
        break;
    }
    case FW_UN_GELU_TANH: {
        /* u = k (x + c x^3), t = tanh(u):
         * 0.5 (1 + t) + 0.5 x (1 - t^2) k (1 + 3 c x^2) */
        const double k = sqrt(2.0 / M_PI), cc = 0.044715;
        fw_tensor *x2, *u, *t, *l, *r;
        x2 = op1(T, fw_square, x);
        u = ops(T, fw_mul_scalar, x2, cc); u = ops(T, fw_add_scalar, u, 1.0); u = op2(T, fw_mul, x, u);
        u = ops(T, fw_mul_scalar, u, k); t = op1(T, fw_tanh, u);
        l = ops(T, fw_add_scalar, t, 1.0); l = ops(T, fw_mul_scalar, l, 0.5);
        r = op1(T, fw_square, t); r = ops(T, fw_rsub_scalar, r, 1.0); r = op2(T, fw_mul, x, r);
        a = ops(T, fw_mul_scalar, x2, 3.0 * cc); a = ops(T, fw_add_scalar, a, 1.0);
        a = ops(T, fw_mul_scalar, a, 0.5 * k); r = op2(T, fw_mul, r, a);
        d = op2(T, fw_add, l, r);
        break;
    }
    case FW_UN_SIN: d = op1(T, fw_cos, x); break;
    case FW_UN_COS: a = op1(T, fw_sin, x); d = op1(T, fw_neg, a); break;
    case FW_UN_ERF:
        a = op1(T, fw_square, x); a = op1(T, fw_neg, a); a = op1(T, fw_exp, a);
        d = ops(T, fw_mul_scalar, a, M_2_SQRTPI); break;
    case FW_UN_POW:
        a = ops(T, fw_pow_scalar, x, alpha - 1.0); d = ops(T, fw_mul_scalar, a, alpha); break;
    case FW_UN_RPOW: d = ops(T, fw_mul_scalar, y, log(alpha)); break;
    default:  /* floor, ceil, round, sign: zero */
        d = NULL;
        break;
    }
    return d;
}

int fw__unary_grad_graph(fw_tensor **out, int op_code, double alpha, fw_tensor *g,
                         fw_tensor *x, fw_tensor *y)
{
    fw_unop op = (fw_unop)op_code;
    tmps T = {.n = 0, .err = 0};
    fw_tensor *d;
    int err;

    *out = NULL;
    if (op == FW_UN_NEG)
        return fw_neg(out, g);
    d = deriv(&T, op, alpha, x, y);
    if (T.err == 0) {
        if (d == NULL)
            err = fw_mul_scalar(out, g, 0.0);
        else
            err = fw_mul(out, g, d);
    } else {
        err = T.err;
    }
    for (int i = 0; i < T.n; i++)
        fw_tensor_unref(T.v[i]);
    return err;
}
