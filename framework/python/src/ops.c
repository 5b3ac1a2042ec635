/*
 * ops.c - paddle._C functions over fw/ops.h: elementwise (+scalar),
 * comparisons, logical, unary math and activations, reductions, matmul,
 * views and shape ops, cast.
 * Each parses its arguments, calls one fw_* function of fw/ops.h and wraps
 * the result (signatures: BINDINGS.md).
 */
#include "pyc.h"

/* ---- elementwise ----------------------------------------------------------- */

#define BINARY(name, op)                                                              \
    static PyObject *f_##name(PyObject *self, PyObject *const *a, Py_ssize_t n)       \
    {                                                                                 \
        if (n != 2) {                                                                 \
            PyErr_SetString(PyExc_TypeError, #name "(x, y) takes 2 arguments");      \
            return NULL;                                                              \
        }                                                                             \
        PyObject *r = pyc_binary(op, a[0], a[1]);                                     \
        if (r == Py_NotImplemented) {                                                 \
            Py_DECREF(r);                                                             \
            PyErr_Format(PyExc_TypeError, #name ": unsupported operand types %s and %s", \
                         Py_TYPE(a[0])->tp_name, Py_TYPE(a[1])->tp_name);             \
            return NULL;                                                              \
        }                                                                             \
        return r;                                                                     \
    }
BINARY(add, PYC_OP_ADD)
BINARY(subtract, PYC_OP_SUB)
BINARY(multiply, PYC_OP_MUL)
BINARY(divide, PYC_OP_DIV)
BINARY(pow, PYC_OP_POW)
BINARY(maximum, PYC_OP_MAX)
BINARY(minimum, PYC_OP_MIN)
BINARY(equal, PYC_OP_EQ)
BINARY(not_equal, PYC_OP_NE)
BINARY(less_than, PYC_OP_LT)
BINARY(less_equal, PYC_OP_LE)
BINARY(greater_than, PYC_OP_GT)
BINARY(greater_equal, PYC_OP_GE)
BINARY(logical_and, PYC_OP_AND)
BINARY(logical_or, PYC_OP_OR)
BINARY(logical_xor, PYC_OP_XOR)

#define UNARY(name, call)                                                             \
    static PyObject *f_##name(PyObject *self, PyObject *arg)                          \
    {                                                                                 \
        fw_tensor *x, *r;                                                             \
        if (pyc_tensor_arg(arg, &x, "x") < 0)                                         \
            return NULL;                                                              \
        int rc = call(&r, x);                                                         \
        PYC_RET(rc, r);                                                                   \
    }
UNARY(exp, fw_exp)
UNARY(log, fw_log)
UNARY(sqrt, fw_sqrt)
UNARY(rsqrt, fw_rsqrt)
UNARY(abs, fw_abs)
UNARY(neg, fw_neg)
UNARY(square, fw_square)
UNARY(tanh, fw_tanh)
UNARY(sigmoid, fw_sigmoid)
UNARY(relu, fw_relu)
UNARY(silu, fw_silu)
UNARY(sin, fw_sin)
UNARY(cos, fw_cos)
UNARY(logical_not, fw_logical_not)
UNARY(contiguous, fw_contiguous)

static PyObject *f_gelu(PyObject *self, PyObject *args, PyObject *kw)
{
    static char *kwl[] = {"x", "approximate", NULL};
    PyObject *xo;
    int ap = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|p:gelu", kwl, &xo, &ap))
        return NULL;
    fw_tensor *x, *r;
    if (pyc_tensor_arg(xo, &x, "x") < 0)
        return NULL;
    int rc = fw_gelu(&r, x, ap != 0);
    PYC_RET(rc, r);
}

static PyObject *f_leaky_relu(PyObject *self, PyObject *args, PyObject *kw)
{
    static char *kwl[] = {"x", "negative_slope", NULL};
    PyObject *xo;
    double s = 0.01;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|d:leaky_relu", kwl, &xo, &s))
        return NULL;
    fw_tensor *x, *r;
    if (pyc_tensor_arg(xo, &x, "x") < 0)
        return NULL;
    int rc = fw_leaky_relu(&r, x, s);
    PYC_RET(rc, r);
}

/* ---- reductions ------------------------------------------------------------- */

typedef int (*reduce_fn)(fw_tensor **, fw_tensor *, const int *, int, bool);

static PyObject *reduce(PyObject *const *a, Py_ssize_t n, PyObject *kwn, reduce_fn fn,
                        const char *name)
{
    /* (x, axis=None, keepdim=False), positional or keyword */
    PyObject *xo = n > 0 ? a[0] : NULL, *ax = n > 1 ? a[1] : Py_None,
             *kd = n > 2 ? a[2] : Py_False;
    if (kwn) {
        for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(kwn); i++) {
            const char *k = PyUnicode_AsUTF8(PyTuple_GET_ITEM(kwn, i));
            PyObject *v = a[n + i];
            if (strcmp(k, "x") == 0) xo = v;
            else if (strcmp(k, "axis") == 0) ax = v;
            else if (strcmp(k, "keepdim") == 0) kd = v;
            else {
                PyErr_Format(PyExc_TypeError, "%s: unexpected argument '%s'", name, k);
                return NULL;
            }
        }
    }
    fw_tensor *x, *r;
    int axes[FW_MAX_DIMS], na;
    bool keep = false;
    if (pyc_tensor_arg(xo, &x, "x") < 0 || pyc_axes_arg(ax, axes, &na) < 0 ||
        pyc_bool_arg(kd, &keep) < 0)
        return NULL;
    if (na == 0 && ax != Py_None && PySequence_Check(ax) && fw_tensor_ndim(x) > 0) {
        /* an empty axis list means "all axes" too */
    }
    int rc = fn(&r, x, axes, na, keep);
    PYC_RET(rc, r);
}

#define REDUCE(name)                                                                    \
    static PyObject *f_##name(PyObject *s, PyObject *const *a, Py_ssize_t n, PyObject *k) \
    {                                                                                   \
        return reduce(a, PyVectorcall_NARGS(n), k, fw_##name, #name);                   \
    }
REDUCE(sum)
REDUCE(mean)
REDUCE(max)
REDUCE(min)
REDUCE(prod)

static PyObject *var_std(PyObject *args, PyObject *kw, int sd)
{
    static char *kwl[] = {"x", "axis", "unbiased", "keepdim", NULL};
    PyObject *xo, *ax = Py_None;
    int unb = 1, keep = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|Opp", kwl, &xo, &ax, &unb, &keep))
        return NULL;
    fw_tensor *x, *r;
    int axes[FW_MAX_DIMS], na;
    if (pyc_tensor_arg(xo, &x, "x") < 0 || pyc_axes_arg(ax, axes, &na) < 0)
        return NULL;
    int rc = sd ? fw_std(&r, x, axes, na, unb, keep) : fw_var(&r, x, axes, na, unb, keep);
    PYC_RET(rc, r);
}
static PyObject *f_var(PyObject *s, PyObject *a, PyObject *k) { return var_std(a, k, 0); }
static PyObject *f_std(PyObject *s, PyObject *a, PyObject *k) { return var_std(a, k, 1); }

static PyObject *argm(PyObject *args, PyObject *kw, int mn)
{
    static char *kwl[] = {"x", "axis", "keepdim", NULL};
    PyObject *xo, *ax = Py_None;
    int keep = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|Op", kwl, &xo, &ax, &keep))
        return NULL;
    fw_tensor *x, *r;
    if (pyc_tensor_arg(xo, &x, "x") < 0)
        return NULL;
    int axis = FW_AXIS_NONE;
    if (ax != Py_None) {
        axis = (int)PyLong_AsLong(ax);
        if (axis == -1 && PyErr_Occurred())
            return NULL;
    }
    int rc = mn ? fw_argmin(&r, x, axis, keep) : fw_argmax(&r, x, axis, keep);
    PYC_RET(rc, r);
}
static PyObject *f_argmax(PyObject *s, PyObject *a, PyObject *k) { return argm(a, k, 0); }
static PyObject *f_argmin(PyObject *s, PyObject *a, PyObject *k) { return argm(a, k, 1); }

/* ---- matmul and shape ops ------------------------------------------------------ */

static PyObject *f_matmul(PyObject *self, PyObject *const *a, Py_ssize_t n)
{
    if (n < 2 || n > 4) {
        PyErr_SetString(PyExc_TypeError, "matmul(x, y, transpose_x=False, transpose_y=False)");
        return NULL;
    }
    fw_tensor *x, *y, *r;
    bool tx = false, ty = false;
    if (pyc_tensor_arg(a[0], &x, "x") < 0 || pyc_tensor_arg(a[1], &y, "y") < 0 ||
        (n > 2 && pyc_bool_arg(a[2], &tx) < 0) || (n > 3 && pyc_bool_arg(a[3], &ty) < 0))
        return NULL;
    int rc = fw_matmul(&r, x, y, tx, ty);
    PYC_RET(rc, r);
}

static PyObject *f_reshape(PyObject *self, PyObject *args)
{
    PyObject *xo, *so;
    if (!PyArg_ParseTuple(args, "OO:reshape", &xo, &so))
        return NULL;
    fw_tensor *x, *r;
    int64_t shape[FW_MAX_DIMS];
    int nd;
    if (pyc_tensor_arg(xo, &x, "x") < 0 || pyc_shape_arg(so, shape, &nd) < 0)
        return NULL;
    int rc = fw_reshape(&r, x, shape, nd);
    PYC_RET(rc, r);
}

static PyObject *f_flatten(PyObject *self, PyObject *args, PyObject *kw)
{
    static char *kwl[] = {"x", "start_axis", "stop_axis", NULL};
    PyObject *xo;
    int a = 0, b = -1;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|ii:flatten", kwl, &xo, &a, &b))
        return NULL;
    fw_tensor *x, *r;
    if (pyc_tensor_arg(xo, &x, "x") < 0)
        return NULL;
    int rc = fw_flatten(&r, x, a, b);
    PYC_RET(rc, r);
}

static PyObject *axes_op(PyObject *args, int which)
{
    PyObject *xo, *ax = Py_None;
    if (!PyArg_ParseTuple(args, "O|O", &xo, &ax))
        return NULL;
    fw_tensor *x, *r;
    int axes[FW_MAX_DIMS], na;
    if (pyc_tensor_arg(xo, &x, "x") < 0 || pyc_axes_arg(ax, axes, &na) < 0)
        return NULL;
    int rc;
    if (which == 0)
        rc = fw_squeeze(&r, x, axes, na);
    else if (which == 1)
        rc = fw_unsqueeze(&r, x, axes, na);
    else
        rc = fw_transpose(&r, x, axes, na);
    PYC_RET(rc, r);
}
static PyObject *f_squeeze(PyObject *s, PyObject *a) { return axes_op(a, 0); }
static PyObject *f_unsqueeze(PyObject *s, PyObject *a) { return axes_op(a, 1); }
static PyObject *f_transpose(PyObject *s, PyObject *a) { return axes_op(a, 2); }

static PyObject *f_swapaxes(PyObject *self, PyObject *args)
{
    PyObject *xo;
    int a0, a1;
    if (!PyArg_ParseTuple(args, "Oii:swapaxes", &xo, &a0, &a1))
        return NULL;
    fw_tensor *x, *r;
    if (pyc_tensor_arg(xo, &x, "x") < 0)
        return NULL;
    int rc = fw_swapaxes(&r, x, a0, a1);
    PYC_RET(rc, r);
}

static PyObject *f_slice(PyObject *self, PyObject *args)
{
    PyObject *xo, *ax, *st, *en, *sp = Py_None;
    if (!PyArg_ParseTuple(args, "OOOO|O:slice", &xo, &ax, &st, &en, &sp))
        return NULL;
    fw_tensor *x, *r;
    int axes[FW_MAX_DIMS], n;
    int64_t s[FW_MAX_DIMS], e[FW_MAX_DIMS], p[FW_MAX_DIMS];
    if (pyc_tensor_arg(xo, &x, "x") < 0 || pyc_slice_args(ax, st, en, sp, axes, s, e, p, &n) < 0)
        return NULL;
    int rc = fw_slice(&r, x, axes, s, e, p, n);
    PYC_RET(rc, r);
}

static PyObject *f_select(PyObject *self, PyObject *args)
{
    PyObject *xo;
    int axis;
    long long idx;
    if (!PyArg_ParseTuple(args, "OiL:select", &xo, &axis, &idx))
        return NULL;
    fw_tensor *x, *r;
    if (pyc_tensor_arg(xo, &x, "x") < 0)
        return NULL;
    int rc = fw_select(&r, x, axis, idx);
    PYC_RET(rc, r);
}

static PyObject *expand_op(PyObject *args, int bc)
{
    PyObject *xo, *so;
    if (!PyArg_ParseTuple(args, "OO", &xo, &so))
        return NULL;
    fw_tensor *x, *r;
    int64_t shape[FW_MAX_DIMS];
    int nd;
    if (pyc_tensor_arg(xo, &x, "x") < 0 || pyc_shape_arg(so, shape, &nd) < 0)
        return NULL;
    int rc = bc ? fw_broadcast_to(&r, x, shape, nd) : fw_expand(&r, x, shape, nd);
    PYC_RET(rc, r);
}
static PyObject *f_expand(PyObject *s, PyObject *a) { return expand_op(a, 0); }
static PyObject *f_broadcast_to(PyObject *s, PyObject *a) { return expand_op(a, 1); }

static PyObject *f_cast(PyObject *self, PyObject *args)
{
    PyObject *xo, *dto;
    if (!PyArg_ParseTuple(args, "OO:cast", &xo, &dto))
        return NULL;
    fw_tensor *x, *r;
    fw_dtype dt;
    if (pyc_tensor_arg(xo, &x, "x") < 0 || pyc_dtype_arg(dto, &dt) < 0)
        return NULL;
    int rc = fw_cast(&r, x, dt);
    PYC_RET(rc, r);
}

PyMethodDef pyc_ops_methods[] = {
#define B(n) {#n, PYC_FAST(f_##n), METH_FASTCALL, NULL}
    B(add), B(subtract), B(multiply), B(divide), B(pow), B(maximum), B(minimum),
    B(equal), B(not_equal), B(less_than), B(less_equal), B(greater_than),
    B(greater_equal), B(logical_and), B(logical_or), B(logical_xor), B(matmul),
#undef B
#define U(n) {#n, f_##n, METH_O, NULL}
    U(exp), U(log), U(sqrt), U(rsqrt), U(abs), U(neg), U(square), U(tanh), U(sigmoid),
    U(relu), U(silu), U(sin), U(cos), U(logical_not), U(contiguous),
#undef U
    {"gelu", PYC_FAST(f_gelu), PYC_KW, NULL},
    {"leaky_relu", PYC_FAST(f_leaky_relu), PYC_KW, NULL},
#define R(n) {#n, PYC_FAST(f_##n), METH_FASTCALL | METH_KEYWORDS, NULL}
    R(sum), R(mean), R(max), R(min), R(prod),
#undef R
    {"var", PYC_FAST(f_var), PYC_KW, NULL},
    {"std", PYC_FAST(f_std), PYC_KW, NULL},
    {"argmax", PYC_FAST(f_argmax), PYC_KW, NULL},
    {"argmin", PYC_FAST(f_argmin), PYC_KW, NULL},
    {"reshape", f_reshape, METH_VARARGS, NULL},
    {"flatten", PYC_FAST(f_flatten), PYC_KW, NULL},
    {"squeeze", f_squeeze, METH_VARARGS, NULL},
    {"unsqueeze", f_unsqueeze, METH_VARARGS, NULL},
    {"transpose", f_transpose, METH_VARARGS, NULL},
    {"swapaxes", f_swapaxes, METH_VARARGS, NULL},
    {"slice", f_slice, METH_VARARGS, NULL},
    {"select", f_select, METH_VARARGS, NULL},
    {"expand", f_expand, METH_VARARGS, NULL},
    {"broadcast_to", f_broadcast_to, METH_VARARGS, NULL},
    {"cast", f_cast, METH_VARARGS, NULL},
    {NULL, NULL, 0, NULL}};
