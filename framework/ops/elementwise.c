/* elementwise.c - binary arithmetic, comparisons and logical ops with NumPy
 * broadcasting; backward reduces over broadcast dims. */
#include "core/fw_backend.h"
#include "core/fw_op.h"
#include "ops_complex.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* View of t broadcast to (shape, nd): leading and size-1 dims get stride 0. */
static void bview(fw_kview *v, const fw_tensor *t, const int64_t *shape, int nd)
{
    int lead = nd - t->ndim;
    v->data = fw__ptr(t);
    v->dtype = t->dtype;
    v->ndim = nd;
    for (int i = 0; i < nd; i++) {
        v->shape[i] = shape[i];
        if (i < lead || t->shape[i - lead] == 1)
            v->strides[i] = 0;
        else
            v->strides[i] = t->strides[i - lead];
    }
}

/* out = a op b without autograd; a and b share a dtype; out dtype given. */
static int raw_binary(fw_tensor **out, const char *name, fw_binop op, fw_tensor *a,
                      fw_tensor *b, fw_dtype odt)
{
    int64_t shape[FW_MAX_DIMS];
    int nd, err;
    const fw_backend *be;
    fw_kview o, av, bv;

    *out = NULL;
    if ((err = fw_op_broadcast_shapes(shape, &nd, name, a->shape, a->ndim, b->shape,
                                      b->ndim)) < 0)
        return err;
    if ((be = fw_backend_require(a->device, name)) == NULL)
        return FW_EDEVICE;
    if ((err = fw_op_output(out, a->device, odt, shape, nd)) < 0)
        return err;
    if ((*out)->numel == 0)
        return 0;
    fw__kview(&o, *out);
    bview(&av, a, shape, nd);
    bview(&bv, b, shape, nd);
    if ((err = be->binary(op, &o, &av, &bv)) < 0) {
        fw_tensor_unref(*out);
        *out = NULL;
    }
    return err;
}

/* ---- backward ----------------------------------------------------------------------- */

static int reduce_in(fw_tensor **gin, fw_node *n, int i, fw_tensor *g)
{
    int nd;
    const int64_t *shape = fw_node_input_shape(n, i, &nd);
    return fw_op_reduce_to_shape(gin, g, shape, nd);
}

/* gin[i] = reduce(g * m) */
static int reduce_mul(fw_tensor **gin, fw_node *n, int i, fw_tensor *g, fw_tensor *m)
{
    fw_tensor *t = NULL;
    int err = fw_mul(&t, g, m);
    if (err == 0)
        err = reduce_in(gin, n, i, t);
    fw_tensor_unref(t);
    return err;
}

static int add_backward(fw_node *n, fw_tensor **gin, fw_tensor *const *gout)
{
    int err = 0;
    if (fw_node_needs_grad(n, 0))
        err = reduce_in(&gin[0], n, 0, gout[0]);
    if (err == 0 && fw_node_needs_grad(n, 1))
        err = reduce_in(&gin[1], n, 1, gout[0]);
    return err;
}

static int sub_backward(fw_node *n, fw_tensor **gin, fw_tensor *const *gout)
{
    int err = 0;
    if (fw_node_needs_grad(n, 0))
        err = reduce_in(&gin[0], n, 0, gout[0]);
    if (err == 0 && fw_node_needs_grad(n, 1)) {
        fw_tensor *t = NULL;
        if ((err = fw_neg(&t, gout[0])) == 0)
            err = reduce_in(&gin[1], n, 1, t);
        fw_tensor_unref(t);
    }
    return err;
}

static int mul_backward(fw_node *n, fw_tensor **gin, fw_tensor *const *gout)
{
    int err = 0;
    if (fw_node_needs_grad(n, 0))
        err = reduce_mul(&gin[0], n, 0, gout[0], fw_node_saved(n, 1));
    if (err == 0 && fw_node_needs_grad(n, 1))
        err = reduce_mul(&gin[1], n, 1, gout[0], fw_node_saved(n, 0));
    return err;
}

static int div_backward(fw_node *n, fw_tensor **gin, fw_tensor *const *gout)
{
    fw_tensor *b = fw_node_saved(n, 1), *t = NULL, *u = NULL;
    int err = 0;

    if (fw_node_needs_grad(n, 0)) {
        if ((err = fw_div(&t, gout[0], b)) == 0)
            err = reduce_in(&gin[0], n, 0, t);
        fw_tensor_unref(t);
        t = NULL;
    }
    if (err == 0 && fw_node_needs_grad(n, 1)) {
        /* d(a/b)/db = -out / b */
        if ((err = fw_mul(&t, gout[0], fw_node_saved(n, 2))) == 0 &&
            (err = fw_div(&u, t, b)) == 0) {
            fw_tensor_unref(t);
            t = NULL;
            if ((err = fw_neg(&t, u)) == 0)
                err = reduce_in(&gin[1], n, 1, t);
        }
        fw_tensor_unref(t);
        fw_tensor_unref(u);
    }
    return err;
}

static int mask_backward(fw_node *n, fw_tensor **gin, fw_tensor *const *gout, fw_binop op0,
                         fw_binop op1, bool swap)
{
    fw_tensor *a = fw_node_saved(n, 0), *b = fw_node_saved(n, 1), *m = NULL;
    fw_binop ops[2] = {op0, op1};
    int err = 0;

    for (int i = 0; i < 2 && err == 0; i++) {
        if (!fw_node_needs_grad(n, i))
            continue;
        if ((err = raw_binary(&m, fw_node_name(n), ops[i], swap ? b : a, swap ? a : b,
                              a->dtype)) == 0)
            err = reduce_mul(&gin[i], n, i, gout[0], m);
        fw_tensor_unref(m);
        m = NULL;
    }
    return err;
}

/* create_graph: da = g b a^(b-1), db = g a^b log(a) from recorded ops */
static int pow_backward_graph(fw_node *n, fw_tensor **gin, fw_tensor *g)
{
    fw_tensor *a = fw_node_saved(n, 0), *b = fw_node_saved(n, 1);
    fw_tensor *t = NULL, *p = NULL, *q = NULL, *r = NULL;
    int err = 0;

    if (fw_node_needs_grad(n, 0) &&
        (err = fw_sub_scalar(&t, b, 1.0)) == 0 && (err = fw_pow(&p, a, t)) == 0 &&
        (err = fw_mul(&q, p, b)) == 0 && (err = fw_mul(&r, g, q)) == 0)
        err = reduce_in(&gin[0], n, 0, r);
    fw_tensor_unref(t);
    fw_tensor_unref(p);
    fw_tensor_unref(q);
    fw_tensor_unref(r);
    t = p = q = r = NULL;
    if (err == 0 && fw_node_needs_grad(n, 1) &&
        (err = fw_log(&t, a)) == 0 && (err = fw_pow(&p, a, b)) == 0 &&
        (err = fw_mul(&q, p, t)) == 0 && (err = fw_mul(&r, g, q)) == 0)
        err = reduce_in(&gin[1], n, 1, r);
    fw_tensor_unref(t);
    fw_tensor_unref(p);
    fw_tensor_unref(q);
    fw_tensor_unref(r);
    return err;
}

static int pow_backward(fw_node *n, fw_tensor **gin, fw_tensor *const *gout)
{
    if (fw__autograd_creating_graph())
        return pow_backward_graph(n, gin, gout[0]);
    return mask_backward(n, gin, gout, FW_BIN_POW_GRAD_A, FW_BIN_POW_GRAD_B, false);
}

/* Paddle's rule for ties: the gradient goes to b.
 * maximum: da = g * (a > b) = (b < a), db = g * (a <= b) = (b >= a). */
static int max_backward(fw_node *n, fw_tensor **gin, fw_tensor *const *gout)
{
    return mask_backward(n, gin, gout, FW_BIN_LT_MASK, FW_BIN_GE_MASK, true);
}

/* minimum: da = g * (a < b), db = g * (a >= b). */
static int min_backward(fw_node *n, fw_tensor **gin, fw_tensor *const *gout)
{
    return mask_backward(n, gin, gout, FW_BIN_LT_MASK, FW_BIN_GE_MASK, false);
}

/* ---- forward ------------------------------------------------------------------------- */

typedef struct binspec {
    const char *name;
    fw_binop op;
    fw_backward_fn backward;
    bool float_only;     /* ints compute in float32 */
    int save;            /* 0 none, 1 a+b, 2 a+b+out */
} binspec;

static const binspec ADD = {"add", FW_BIN_ADD, add_backward, false, 0};
static const binspec SUB = {"subtract", FW_BIN_SUB, sub_backward, false, 0};
static const binspec MUL = {"multiply", FW_BIN_MUL, mul_backward, false, 1};
static const binspec DIV = {"divide", FW_BIN_DIV, div_backward, true, 2};
static const binspec POW = {"pow", FW_BIN_POW, pow_backward, true, 1};
static const binspec MAXIMUM = {"maximum", FW_BIN_MAX, max_backward, false, 1};
static const binspec MINIMUM = {"minimum", FW_BIN_MIN, min_backward, false, 1};

static int arith(fw_tensor **out, const binspec *s, fw_tensor *a, fw_tensor *b)
{
    fw_tensor *a2 = NULL, *b2 = NULL, *y = NULL, *y2 = NULL;
    fw_node *node;
    fw_dtype dt;
    int err;

    *out = NULL;
    if (a == NULL || b == NULL)
        return fw_error_set(FW_EINVAL, "%s: input is NULL", s->name);
    if ((err = fw_op_check_same_device(s->name, a, b)) < 0)
        return err;
    dt = fw_dtype_promote(a->dtype, b->dtype);
    if (dt == FW_BOOL)
        return fw_error_set(FW_EDTYPE, "%s: not defined for bool tensors", s->name);
    if (!fw_dtype_is_float(dt) && fw_dtype_is_complex(dt)) {
        static const int cx[] = {[FW_BIN_ADD] = FW_CX_ADD + 1, [FW_BIN_SUB] = FW_CX_SUB + 1,
                                 [FW_BIN_MUL] = FW_CX_MUL + 1, [FW_BIN_DIV] = FW_CX_DIV + 1};
        if ((unsigned)s->op < sizeof(cx) / sizeof(cx[0]) && cx[s->op])
            return fw__complex_arith(out, cx[s->op] - 1, a, b);
        return fw_error_set(FW_EDTYPE, "%s: not defined for complex tensors", s->name);
    }
    if (s->float_only && !fw_dtype_is_float(dt))
        dt = FW_FLOAT32;
    if (dt == FW_FLOAT16 || dt == FW_BFLOAT16) {
        /* store as such, compute in float32 */
        if ((err = fw_cast(&a2, a, FW_FLOAT32)) == 0 && (err = fw_cast(&b2, b, FW_FLOAT32)) == 0 &&
            (err = arith(&y, s, a2, b2)) == 0)
            err = fw_cast(out, y, dt);
        goto done;
    }
    if (a->dtype == dt)
        a2 = fw_tensor_ref(a);
    else if ((err = fw_cast(&a2, a, dt)) < 0)
        goto done;
    if (b->dtype == dt)
        b2 = fw_tensor_ref(b);
    else if ((err = fw_cast(&b2, b, dt)) < 0)
        goto done;
    if ((err = raw_binary(&y2, s->name, s->op, a2, b2, dt)) < 0)
        goto done;
    fw_tensor *ins[2] = {a2, b2};
    if ((err = fw_node_record(&node, s->name, s->backward, 2, ins, 1, &y2, 3, 0)) < 0)
        goto done;
    if (node && s->save >= 1) {
        fw_node_save(node, 0, a2);
        fw_node_save(node, 1, b2);
        if (s->save == 2 && (err = fw_node_save(node, 2, y2)) < 0)
            goto done;
    }
    *out = y2;
    y2 = NULL;
done:
    fw_tensor_unref(a2);
    fw_tensor_unref(b2);
    fw_tensor_unref(y);
    fw_tensor_unref(y2);
    return err;
}

int fw_add(fw_tensor **out, fw_tensor *a, fw_tensor *b) { return arith(out, &ADD, a, b); }
int fw_sub(fw_tensor **out, fw_tensor *a, fw_tensor *b) { return arith(out, &SUB, a, b); }
int fw_mul(fw_tensor **out, fw_tensor *a, fw_tensor *b) { return arith(out, &MUL, a, b); }
int fw_div(fw_tensor **out, fw_tensor *a, fw_tensor *b) { return arith(out, &DIV, a, b); }
int fw_pow(fw_tensor **out, fw_tensor *a, fw_tensor *b) { return arith(out, &POW, a, b); }
int fw_maximum(fw_tensor **out, fw_tensor *a, fw_tensor *b) { return arith(out, &MAXIMUM, a, b); }
int fw_minimum(fw_tensor **out, fw_tensor *a, fw_tensor *b) { return arith(out, &MINIMUM, a, b); }

/* ---- floor division and remainder -------------------------------------------------------- */

static int rem_backward(fw_node *n, fw_tensor **gin, fw_tensor *const *gout)
{
    fw_tensor *a = fw_node_saved(n, 0), *b = fw_node_saved(n, 1), *q = NULL, *t = NULL;
    int err = 0;

    if (fw_node_needs_grad(n, 0))
        err = reduce_in(&gin[0], n, 0, gout[0]);
    if (err == 0 && fw_node_needs_grad(n, 1)) {
        /* d(a - floor(a/b) b)/db = -floor(a/b) */
        if ((err = raw_binary(&q, "remainder", FW_BIN_FLOORDIV, a, b, a->dtype)) == 0 &&
            (err = fw_neg(&t, q)) == 0)
            err = reduce_mul(&gin[1], n, 1, gout[0], t);
        fw_tensor_unref(q);
        fw_tensor_unref(t);
    }
    return err;
}

static int int_divisor_nonzero(const char *name, fw_tensor *b)
{
    fw_tensor *z = NULL, *zero = NULL, *any = NULL;
    double v = 0, nz = 0;
    int err;

    bool was = fw_set_grad_enabled(false);
    if ((err = fw_op_scalar(&zero, b->device, b->dtype, v)) == 0 &&
        (err = fw_eq(&z, b, zero)) == 0 && (err = fw_sum(&any, z, NULL, 0, false)) == 0)
        err = fw_tensor_item(&nz, any);
    fw_set_grad_enabled(was);
    fw_tensor_unref(z);
    fw_tensor_unref(zero);
    fw_tensor_unref(any);
    if (err == 0 && nz > 0)
        err = fw_error_set(FW_EINVAL, "%s: integer division by zero", name);
    return err;
}

static int divmod(fw_tensor **out, const char *name, fw_binop op, fw_tensor *a, fw_tensor *b)
{
    fw_tensor *a2 = NULL, *b2 = NULL, *y = NULL;
    fw_node *node;
    fw_dtype dt, cdt;
    int err;

    *out = NULL;
    if (a == NULL || b == NULL)
        return fw_error_set(FW_EINVAL, "%s: input is NULL", name);
    if ((err = fw_op_check_same_device(name, a, b)) < 0)
        return err;
    dt = fw_dtype_promote(a->dtype, b->dtype);
    if (dt == FW_BOOL)
        return fw_error_set(FW_EDTYPE, "%s: not defined for bool tensors", name);
    cdt = fw_op_compute_dtype(dt);
    if ((err = fw_cast(&a2, a, cdt)) < 0 || (err = fw_cast(&b2, b, cdt)) < 0)
        goto done;
    if (!fw_dtype_is_float(cdt) && (err = int_divisor_nonzero(name, b2)) < 0)
        goto done;
    if ((err = raw_binary(&y, name, op, a2, b2, cdt)) < 0)
        goto done;
    if (op == FW_BIN_MOD && fw_dtype_is_float(cdt)) {
        fw_tensor *ins[2] = {a2, b2};
        if ((err = fw_node_record(&node, name, rem_backward, 2, ins, 1, &y, 2, 0)) < 0)
            goto done;
        if (node) {
            fw_node_save(node, 0, a2);
            fw_node_save(node, 1, b2);
        }
    }
    if (cdt != dt) {
        err = fw_cast(out, y, dt);
        goto done;
    }
    *out = y;
    y = NULL;
done:
    fw_tensor_unref(a2);
    fw_tensor_unref(b2);
    fw_tensor_unref(y);
    return err;
}

int fw_floor_divide(fw_tensor **out, fw_tensor *a, fw_tensor *b)
{
    return divmod(out, "floor_divide", FW_BIN_FLOORDIV, a, b);
}

int fw_remainder(fw_tensor **out, fw_tensor *a, fw_tensor *b)
{
    return divmod(out, "remainder", FW_BIN_MOD, a, b);
}

/* ---- isclose / allclose ------------------------------------------------------------------ */

/* isclose computed on the host (inputs on any one device), result on the CPU. */
static int isclose_host(fw_tensor **out, fw_tensor *a, fw_tensor *b, double rtol, double atol,
                        bool equal_nan)
{
    int64_t shape[FW_MAX_DIMS];
    fw_tensor *ea = NULL, *eb = NULL, *y = NULL;
    double *av = NULL, *bv = NULL;
    int nd, err;

    *out = NULL;
    if (a == NULL || b == NULL)
        return fw_error_set(FW_EINVAL, "isclose: input is NULL");
    if ((err = fw_op_check_same_device("isclose", a, b)) < 0)
        return err;
    if ((err = fw_op_broadcast_shapes(shape, &nd, "isclose", a->shape, a->ndim, b->shape,
                                      b->ndim)) < 0)
        return err;
    bool was = fw_set_grad_enabled(false);
    if ((err = fw_expand(&ea, a, shape, nd)) == 0 && (err = fw_expand(&eb, b, shape, nd)) == 0 &&
        (err = fw_op_output(&y, FW_CPU, FW_BOOL, shape, nd)) == 0) {
        av = malloc(sizeof(double) * (size_t)(y->numel > 0 ? y->numel : 1));
        bv = malloc(sizeof(double) * (size_t)(y->numel > 0 ? y->numel : 1));
        if (av == NULL || bv == NULL)
            err = fw_error_set(FW_ENOMEM, "isclose: out of memory");
        else if ((err = fw_tensor_to_doubles(av, y->numel, ea)) == 0 &&
                 (err = fw_tensor_to_doubles(bv, y->numel, eb)) == 0) {
            uint8_t *o = fw__ptr(y);
            for (int64_t i = 0; i < y->numel; i++) {
                double x = av[i], r = bv[i];
                if (x != x || r != r)
                    o[i] = equal_nan && x != x && r != r;
                else if (x == r)
                    o[i] = 1;
                else
                    o[i] = fabs(x - r) <= atol + rtol * fabs(r);
            }
        }
    }
    fw_set_grad_enabled(was);
    free(av);
    free(bv);
    fw_tensor_unref(ea);
    fw_tensor_unref(eb);
    if (err < 0) {
        fw_tensor_unref(y);
        return err;
    }
    *out = y;
    return 0;
}

int fw_isclose(fw_tensor **out, fw_tensor *a, fw_tensor *b, double rtol, double atol,
               bool equal_nan)
{
    fw_tensor *y = NULL;
    int err;

    if ((err = isclose_host(&y, a, b, rtol, atol, equal_nan)) < 0 || a->device == FW_CPU) {
        *out = y;
        return err;
    }
    err = fw_tensor_to(out, y, a->device);     /* on the inputs' device */
    fw_tensor_unref(y);
    return err;
}

int fw_allclose(bool *out, fw_tensor *a, fw_tensor *b, double rtol, double atol, bool equal_nan)
{
    fw_tensor *c = NULL;
    int err;

    *out = false;
    if ((err = isclose_host(&c, a, b, rtol, atol, equal_nan)) < 0)
        return err;
    const uint8_t *p = fw__ptr(c);
    bool all = true;
    for (int64_t i = 0; i < c->numel && all; i++)
        all = p[i] != 0;
    fw_tensor_unref(c);
    *out = all;
    return 0;
}

/* ---- scalar variants -------------------------------------------------------------------- */

/* A 0-D tensor holding s, in a's dtype (float32 when a is integral and s is
 * not a whole number, so int + 0.5 promotes like Paddle). */
static int scalar_like(fw_tensor **out, const fw_tensor *a, double s)
{
    fw_dtype dt = a->dtype;
    if (!fw_dtype_is_float(dt) && !fw_dtype_is_complex(dt) && s != floor(s))
        dt = FW_FLOAT32;
    if (dt == FW_BOOL)
        dt = FW_INT64;
    return fw_op_scalar(out, a->device, dt, s);
}

typedef int (*bin_fn)(fw_tensor **, fw_tensor *, fw_tensor *);

static int with_scalar(fw_tensor **out, bin_fn fn, fw_tensor *a, double s, bool reversed)
{
    fw_tensor *st = NULL;
    int err;

    *out = NULL;
    if (a == NULL)
        return fw_error_set(FW_EINVAL, "scalar op: input is NULL");
    if ((err = scalar_like(&st, a, s)) < 0)
        return err;
    err = reversed ? fn(out, st, a) : fn(out, a, st);
    fw_tensor_unref(st);
    return err;
}

int fw_add_scalar(fw_tensor **out, fw_tensor *a, double s) { return with_scalar(out, fw_add, a, s, false); }
int fw_sub_scalar(fw_tensor **out, fw_tensor *a, double s) { return with_scalar(out, fw_sub, a, s, false); }
int fw_rsub_scalar(fw_tensor **out, fw_tensor *a, double s) { return with_scalar(out, fw_sub, a, s, true); }
int fw_mul_scalar(fw_tensor **out, fw_tensor *a, double s) { return with_scalar(out, fw_mul, a, s, false); }
int fw_div_scalar(fw_tensor **out, fw_tensor *a, double s) { return with_scalar(out, fw_div, a, s, false); }
int fw_rdiv_scalar(fw_tensor **out, fw_tensor *a, double s) { return with_scalar(out, fw_div, a, s, true); }
int fw_rpow_scalar(fw_tensor **out, fw_tensor *a, double s) { return with_scalar(out, fw_pow, a, s, true); }

/* ---- comparisons and logical ops ---------------------------------------------------------- */

static int compare(fw_tensor **out, const char *name, fw_binop op, fw_tensor *a, fw_tensor *b)
{
    fw_tensor *a2 = NULL, *b2 = NULL;
    fw_dtype dt;
    int err;

    *out = NULL;
    if (a == NULL || b == NULL)
        return fw_error_set(FW_EINVAL, "%s: input is NULL", name);
    if ((err = fw_op_check_same_device(name, a, b)) < 0)
        return err;
    dt = fw_op_compute_dtype(fw_dtype_promote(a->dtype, b->dtype));
    if (!fw_dtype_is_float(dt) && fw_dtype_is_complex(dt)) {
        if (op == FW_BIN_EQ || op == FW_BIN_NE)
            return fw__complex_equal(out, a, b, op == FW_BIN_NE);
        return fw_error_set(FW_EDTYPE, "%s: not defined for complex tensors", name);
    }
    bool was = fw_set_grad_enabled(false);
    if ((err = fw_cast(&a2, a, dt)) == 0 && (err = fw_cast(&b2, b, dt)) == 0)
        err = raw_binary(out, name, op, a2, b2, FW_BOOL);
    fw_set_grad_enabled(was);
    fw_tensor_unref(a2);
    fw_tensor_unref(b2);
    return err;
}

int fw_eq(fw_tensor **out, fw_tensor *a, fw_tensor *b) { return compare(out, "equal", FW_BIN_EQ, a, b); }
int fw_ne(fw_tensor **out, fw_tensor *a, fw_tensor *b) { return compare(out, "not_equal", FW_BIN_NE, a, b); }
int fw_lt(fw_tensor **out, fw_tensor *a, fw_tensor *b) { return compare(out, "less_than", FW_BIN_LT, a, b); }
int fw_le(fw_tensor **out, fw_tensor *a, fw_tensor *b) { return compare(out, "less_equal", FW_BIN_LE, a, b); }
int fw_gt(fw_tensor **out, fw_tensor *a, fw_tensor *b) { return compare(out, "greater_than", FW_BIN_GT, a, b); }
int fw_ge(fw_tensor **out, fw_tensor *a, fw_tensor *b) { return compare(out, "greater_equal", FW_BIN_GE, a, b); }
int fw_logical_and(fw_tensor **out, fw_tensor *a, fw_tensor *b) { return compare(out, "logical_and", FW_BIN_AND, a, b); }
int fw_logical_or(fw_tensor **out, fw_tensor *a, fw_tensor *b) { return compare(out, "logical_or", FW_BIN_OR, a, b); }
int fw_logical_xor(fw_tensor **out, fw_tensor *a, fw_tensor *b) { return compare(out, "logical_xor", FW_BIN_XOR, a, b); }

int fw_compare_scalar(fw_tensor **out, fw_tensor *a, const char *op, double s)
{
    static const struct { const char *sym; bin_fn fn; } ops[] = {
        {"==", fw_eq}, {"!=", fw_ne}, {"<", fw_lt}, {"<=", fw_le}, {">", fw_gt}, {">=", fw_ge}};
    fw_tensor *st = NULL;
    int err;

    *out = NULL;
    if (a == NULL || op == NULL)
        return fw_error_set(FW_EINVAL, "compare_scalar: input is NULL");
    for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
        if (strcmp(op, ops[i].sym) == 0) {
            fw_dtype dt = fw_dtype_is_float(a->dtype) ? a->dtype : FW_FLOAT64;
            if ((err = fw_op_scalar(&st, a->device, dt, s)) < 0)
                return err;
            err = ops[i].fn(out, a, st);
            fw_tensor_unref(st);
            return err;
        }
    return fw_error_set(FW_EINVAL, "compare_scalar: unknown operator '%s'", op);
}
