/*
 * ops.c - module functions of paddle._C: creation, elementwise, unary,
 * reductions, matmul, shape ops, indexing, nn ops, initializers, random.
 * Each parses its arguments, calls one fw_* function and wraps the result
 * (see BINDINGS.md for the signatures).
 */
#include "pyc.h"

#include <string.h>

#define RET(rc, r) return (rc) < 0 ? pyc_raise(rc) : pyc_wrap(r)
#define KW (METH_VARARGS | METH_KEYWORDS)
#define KWF(fn) ((PyCFunction)(void (*)(void))(fn))

PyObject *pyc_register_dtypes(PyObject *self, PyObject *arg);
PyObject *pyc_register_place(PyObject *self, PyObject *arg);
PyObject *pyc_set_default_float(PyObject *self, PyObject *arg);
PyObject *pyc_set_getitem_fallback(PyObject *self, PyObject *fn);
int pyc_from_buffer(fw_tensor **out, PyObject *o);

static int dtype_or(PyObject *o, fw_dtype *dt, fw_dtype dflt)
{
    if (!o || o == Py_None) {
        *dt = dflt;
        return 0;
    }
    return pyc_dtype_arg(o, dt);
}

/* ---- creation ------------------------------------------------------------ */

static PyObject *f_to_tensor(PyObject *self, PyObject *args, PyObject *kw)
{
    static char *kwl[] = {"data", "dtype", "stop_gradient", NULL};
    PyObject *data, *dto = Py_None;
    int stop = 1;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|Op:to_tensor", kwl, &data, &dto, &stop))
        return NULL;
    fw_tensor *t = NULL;
    int rc;
    if (pyc_is_tensor(data)) {
        if ((rc = fw_tensor_clone(&t, pyc_t(data))) < 0)
            return pyc_raise(rc);
        fw_tensor *d;
        rc = fw_tensor_detach(&d, t);
        fw_tensor_unref(t);
        if (rc < 0)
            return pyc_raise(rc);
        t = d;
    } else {
        int k = PyFloat_Check(data) || PyLong_Check(data) ? 0 : pyc_from_buffer(&t, data);
        if (k < 0)
            return NULL;
        if (k == 0) {
            fw_dtype sd = PyBool_Check(data) ? FW_BOOL
                          : PyLong_Check(data) ? FW_INT64 : pyc_default_float;
            if (pyc_tensor_or_scalar(data, &t, sd) < 0)
                return NULL;
        }
    }
    if (dto != Py_None) {
        fw_dtype dt;
        if (pyc_dtype_arg(dto, &dt) < 0) {
            fw_tensor_unref(t);
            return NULL;
        }
        if (dt != fw_tensor_dtype(t)) {
            fw_tensor *c;
            bool g = fw_set_grad_enabled(false);
            rc = fw_cast(&c, t, dt);
            fw_set_grad_enabled(g);
            fw_tensor_unref(t);
            if (rc < 0)
                return pyc_raise(rc);
            t = c;
        }
    }
    if (!stop && (rc = fw_tensor_set_stop_gradient(t, false)) < 0) {
        fw_tensor_unref(t);
        return pyc_raise(rc);
    }
    return pyc_wrap(t);
}

static PyObject *creation(PyObject *args, PyObject *kw, int which)
{
    static char *kwl[] = {"shape", "dtype", NULL};
    PyObject *so, *dto = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|O", kwl, &so, &dto))
        return NULL;
    int64_t shape[FW_MAX_DIMS];
    int nd;
    fw_dtype dt;
    if (pyc_shape_arg(so, shape, &nd) < 0 || dtype_or(dto, &dt, pyc_default_float) < 0)
        return NULL;
    fw_tensor *r;
    int rc;
    switch (which) {
    case 0: rc = fw_zeros(&r, dt, shape, nd); break;
    case 1: rc = fw_ones(&r, dt, shape, nd); break;
    case 2: rc = fw_tensor_empty(&r, dt, shape, nd); break;
    case 3: rc = fw_rand(&r, shape, nd, dt, NULL); break;
    default: rc = fw_randn(&r, shape, nd, dt, NULL); break;
    }
    RET(rc, r);
}
static PyObject *f_zeros(PyObject *s, PyObject *a, PyObject *k) { return creation(a, k, 0); }
static PyObject *f_ones(PyObject *s, PyObject *a, PyObject *k) { return creation(a, k, 1); }
static PyObject *f_empty(PyObject *s, PyObject *a, PyObject *k) { return creation(a, k, 2); }
static PyObject *f_rand(PyObject *s, PyObject *a, PyObject *k) { return creation(a, k, 3); }
static PyObject *f_randn(PyObject *s, PyObject *a, PyObject *k) { return creation(a, k, 4); }

static PyObject *f_full(PyObject *self, PyObject *args, PyObject *kw)
{
    static char *kwl[] = {"shape", "value", "dtype", NULL};
    PyObject *so, *dto = Py_None;
    double v;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "Od|O:full", kwl, &so, &v, &dto))
        return NULL;
    int64_t shape[FW_MAX_DIMS];
    int nd;
    fw_dtype dt;
    if (pyc_shape_arg(so, shape, &nd) < 0 || dtype_or(dto, &dt, pyc_default_float) < 0)
        return NULL;
    fw_tensor *r;
    int rc = fw_full(&r, dt, shape, nd, v);
    RET(rc, r);
}

static PyObject *like(PyObject *args, PyObject *kw, int which)
{
    static char *kwl[] = {"x", "value", "dtype", NULL};
    static char *kwl2[] = {"x", "dtype", NULL};
    PyObject *xo, *dto = Py_None;
    double v = 0;
    if (which == 2) {
        if (!PyArg_ParseTupleAndKeywords(args, kw, "Od|O:full_like", kwl, &xo, &v, &dto))
            return NULL;
    } else if (!PyArg_ParseTupleAndKeywords(args, kw, "O|O", kwl2, &xo, &dto))
        return NULL;
    fw_tensor *x;
    if (pyc_tensor_arg(xo, &x, "x") < 0)
        return NULL;
    fw_dtype dt;
    if (dtype_or(dto, &dt, fw_tensor_dtype(x)) < 0)
        return NULL;
    if (which == 1)
        v = 1;
    fw_tensor *r;
    int rc = fw_full(&r, dt, fw_tensor_shape(x), fw_tensor_ndim(x), v);
    RET(rc, r);
}
static PyObject *f_zeros_like(PyObject *s, PyObject *a, PyObject *k) { return like(a, k, 0); }
static PyObject *f_ones_like(PyObject *s, PyObject *a, PyObject *k) { return like(a, k, 1); }
static PyObject *f_full_like(PyObject *s, PyObject *a, PyObject *k) { return like(a, k, 2); }

static PyObject *f_arange(PyObject *self, PyObject *args, PyObject *kw)
{
    static char *kwl[] = {"start", "end", "step", "dtype", NULL};
    double a, b, st = 1;
    PyObject *dto = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "dd|dO:arange", kwl, &a, &b, &st, &dto))
        return NULL;
    fw_dtype dt;
    if (dtype_or(dto, &dt, FW_INT64) < 0)
        return NULL;
    fw_tensor *r;
    int rc = fw_arange(&r, a, b, st, dt);
    RET(rc, r);
}

static PyObject *f_linspace(PyObject *self, PyObject *args, PyObject *kw)
{
    static char *kwl[] = {"start", "stop", "num", "dtype", NULL};
    double a, b;
    long long n;
    PyObject *dto = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "ddL|O:linspace", kwl, &a, &b, &n, &dto))
        return NULL;
    fw_dtype dt;
    if (dtype_or(dto, &dt, pyc_default_float) < 0)
        return NULL;
    fw_tensor *r;
    int rc = fw_linspace(&r, a, b, n, dt);
    RET(rc, r);
}

static PyObject *f_eye(PyObject *self, PyObject *args, PyObject *kw)
{
    static char *kwl[] = {"n", "m", "dtype", NULL};
    long long n;
    PyObject *mo = Py_None, *dto = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "L|OO:eye", kwl, &n, &mo, &dto))
        return NULL;
    long long m = -1;
    if (mo != Py_None && (m = PyLong_AsLongLong(mo)) == -1 && PyErr_Occurred())
        return NULL;
    fw_dtype dt;
    if (dtype_or(dto, &dt, pyc_default_float) < 0)
        return NULL;
    fw_tensor *r;
    int rc = fw_eye(&r, n, m, dt);
    RET(rc, r);
}

/* ---- random --------------------------------------------------------------- */

static PyObject *f_seed(PyObject *self, PyObject *arg)
{
    unsigned long long s = PyLong_AsUnsignedLongLongMask(arg);
    if (PyErr_Occurred())
        return NULL;
    fw_seed((uint64_t)s);
    Py_RETURN_NONE;
}

static PyObject *f_get_rng_state(PyObject *self, PyObject *u)
{
    fw_generator *g = fw_default_generator();
    return Py_BuildValue("(KK)", (unsigned long long)fw_generator_get_seed(g),
                         (unsigned long long)fw_generator_get_offset(g));
}

static PyObject *f_set_rng_state(PyObject *self, PyObject *arg)
{
    unsigned long long s, o;
    if (!PyArg_ParseTuple(arg, "KK:set_rng_state", &s, &o))
        return NULL;
    fw_generator_set_state(fw_default_generator(), s, o);
    Py_RETURN_NONE;
}

static PyObject *f_uniform_normal(PyObject *args, PyObject *kw, int normal)
{
    static char *kwl[] = {"shape", "dtype", "a", "b", NULL};
    PyObject *so, *dto = Py_None;
    double a = normal ? 0.0 : -1.0, b = 1.0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|Odd", kwl, &so, &dto, &a, &b))
        return NULL;
    int64_t shape[FW_MAX_DIMS];
    int nd;
    fw_dtype dt;
    if (pyc_shape_arg(so, shape, &nd) < 0 || dtype_or(dto, &dt, pyc_default_float) < 0)
        return NULL;
    fw_tensor *r;
    int rc = normal ? fw_normal(&r, shape, nd, dt, a, b, NULL)
                    : fw_uniform(&r, shape, nd, dt, a, b, NULL);
    RET(rc, r);
}
static PyObject *f_uniform(PyObject *s, PyObject *a, PyObject *k) { return f_uniform_normal(a, k, 0); }
static PyObject *f_normal(PyObject *s, PyObject *a, PyObject *k) { return f_uniform_normal(a, k, 1); }

static PyObject *f_randint(PyObject *self, PyObject *args, PyObject *kw)
{
    static char *kwl[] = {"low", "high", "shape", "dtype", NULL};
    long long lo, hi;
    PyObject *so, *dto = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "LLO|O:randint", kwl, &lo, &hi, &so, &dto))
        return NULL;
    int64_t shape[FW_MAX_DIMS];
    int nd;
    fw_dtype dt;
    if (pyc_shape_arg(so, shape, &nd) < 0 || dtype_or(dto, &dt, FW_INT64) < 0)
        return NULL;
    fw_tensor *r;
    int rc = fw_randint(&r, lo, hi, shape, nd, dt, NULL);
    RET(rc, r);
}

static PyObject *f_randperm(PyObject *self, PyObject *args, PyObject *kw)
{
    static char *kwl[] = {"n", "dtype", NULL};
    long long n;
    PyObject *dto = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "L|O:randperm", kwl, &n, &dto))
        return NULL;
    fw_dtype dt;
    if (dtype_or(dto, &dt, FW_INT64) < 0)
        return NULL;
    fw_tensor *r;
    int rc = fw_randperm(&r, n, dt, NULL);
    RET(rc, r);
}

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
        RET(rc, r);                                                                   \
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
    RET(rc, r);
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
    RET(rc, r);
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
    RET(rc, r);
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
    RET(rc, r);
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
    RET(rc, r);
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
    RET(rc, r);
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
    RET(rc, r);
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
    RET(rc, r);
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
    RET(rc, r);
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
    RET(rc, r);
}

/* Parse (axes, starts, ends, steps) lists of equal length n. */
static int slice_args(PyObject *ax, PyObject *st, PyObject *en, PyObject *sp, int *axes,
                      int64_t *starts, int64_t *ends, int64_t *steps, int *n)
{
    int64_t tmp[FW_MAX_DIMS];
    int na, ns, ne, np = 0;
    if (pyc_int64_list(ax, tmp, FW_MAX_DIMS, &na, "axes") < 0 ||
        pyc_int64_list(st, starts, FW_MAX_DIMS, &ns, "starts") < 0 ||
        pyc_int64_list(en, ends, FW_MAX_DIMS, &ne, "ends") < 0)
        return -1;
    if (sp && sp != Py_None) {
        if (pyc_int64_list(sp, steps, FW_MAX_DIMS, &np, "steps") < 0)
            return -1;
    } else {
        for (int i = 0; i < na; i++)
            steps[i] = 1;
        np = na;
    }
    if (ns != na || ne != na || np != na) {
        PyErr_Format(PyExc_ValueError, "slice: axes, starts, ends and steps must have one "
                     "length, got %d, %d, %d, %d", na, ns, ne, np);
        return -1;
    }
    for (int i = 0; i < na; i++)
        axes[i] = (int)tmp[i];
    *n = na;
    return 0;
}

static PyObject *f_slice(PyObject *self, PyObject *args)
{
    PyObject *xo, *ax, *st, *en, *sp = Py_None;
    if (!PyArg_ParseTuple(args, "OOOO|O:slice", &xo, &ax, &st, &en, &sp))
        return NULL;
    fw_tensor *x, *r;
    int axes[FW_MAX_DIMS], n;
    int64_t s[FW_MAX_DIMS], e[FW_MAX_DIMS], p[FW_MAX_DIMS];
    if (pyc_tensor_arg(xo, &x, "x") < 0 || slice_args(ax, st, en, sp, axes, s, e, p, &n) < 0)
        return NULL;
    int rc = fw_slice(&r, x, axes, s, e, p, n);
    RET(rc, r);
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
    RET(rc, r);
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
    RET(rc, r);
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
    RET(rc, r);
}

/* ---- indexing and joining --------------------------------------------------------- */

/* Borrowed tensors of a sequence into a malloc'd array. */
static fw_tensor **tensor_list(PyObject *o, int *n, PyObject **keep)
{
    PyObject *seq = PySequence_Fast(o, "expected a list or tuple of Tensors");
    if (!seq)
        return NULL;
    Py_ssize_t k = PySequence_Fast_GET_SIZE(seq);
    fw_tensor **v = PyMem_Malloc(sizeof(fw_tensor *) * (size_t)(k ? k : 1));
    if (!v) {
        Py_DECREF(seq);
        PyErr_NoMemory();
        return NULL;
    }
    for (Py_ssize_t i = 0; i < k; i++) {
        if (pyc_tensor_arg(PySequence_Fast_GET_ITEM(seq, i), &v[i], "list item") < 0) {
            PyMem_Free(v);
            Py_DECREF(seq);
            return NULL;
        }
    }
    *n = (int)k;
    *keep = seq;
    return v;
}

static PyObject *join(PyObject *args, PyObject *kw, int stack)
{
    static char *kwl[] = {"x", "axis", NULL};
    PyObject *lo, *keep;
    int axis = 0, n;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|i", kwl, &lo, &axis))
        return NULL;
    fw_tensor **v = tensor_list(lo, &n, &keep);
    if (!v)
        return NULL;
    fw_tensor *r;
    int rc = stack ? fw_stack(&r, v, n, axis) : fw_concat(&r, v, n, axis);
    PyMem_Free(v);
    Py_DECREF(keep);
    RET(rc, r);
}
static PyObject *f_concat(PyObject *s, PyObject *a, PyObject *k) { return join(a, k, 0); }
static PyObject *f_stack(PyObject *s, PyObject *a, PyObject *k) { return join(a, k, 1); }

static PyObject *f_split(PyObject *self, PyObject *args, PyObject *kw)
{
    static char *kwl[] = {"x", "num_or_sections", "axis", NULL};
    PyObject *xo, *ns;
    int axis = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OO|i:split", kwl, &xo, &ns, &axis))
        return NULL;
    fw_tensor *x;
    if (pyc_tensor_arg(xo, &x, "x") < 0)
        return NULL;
    int num;
    int64_t *sec = NULL;
    if (PyLong_Check(ns)) {
        num = (int)PyLong_AsLong(ns);
        if (num <= 0) {
            PyErr_Format(PyExc_ValueError, "split: num_or_sections must be > 0, got %d", num);
            return NULL;
        }
    } else {
        Py_ssize_t k = PySequence_Size(ns);
        if (k <= 0) {
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_ValueError, "split: sections must not be empty");
            return NULL;
        }
        sec = PyMem_Malloc(sizeof(int64_t) * (size_t)k);
        if (!sec)
            return PyErr_NoMemory();
        if (pyc_int64_list(ns, sec, (int)k, &num, "num_or_sections") < 0) {
            PyMem_Free(sec);
            return NULL;
        }
    }
    fw_tensor **outs = PyMem_Calloc((size_t)num, sizeof(fw_tensor *));
    if (!outs) {
        PyMem_Free(sec);
        return PyErr_NoMemory();
    }
    int rc = fw_split(outs, x, num, sec, axis);
    PyMem_Free(sec);
    if (rc < 0) {
        PyMem_Free(outs);
        return pyc_raise(rc);
    }
    PyObject *l = PyList_New(num);
    for (int i = 0; i < num; i++) {
        PyObject *w = l ? pyc_wrap(outs[i]) : (fw_tensor_unref(outs[i]), NULL);
        if (l && !w) {
            Py_CLEAR(l);
            continue;
        }
        if (l)
            PyList_SET_ITEM(l, i, w);
    }
    PyMem_Free(outs);
    return l;
}

static PyObject *f_gather_like(PyObject *args, PyObject *kw, int which)
{
    static char *kwl[] = {"x", "index", "axis", NULL};
    PyObject *xo, *io;
    int axis = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OO|i", kwl, &xo, &io, &axis))
        return NULL;
    fw_tensor *x, *i, *r;
    if (pyc_tensor_arg(xo, &x, "x") < 0 || pyc_tensor_arg(io, &i, "index") < 0)
        return NULL;
    int rc = which == 0   ? fw_gather(&r, x, i, axis)
             : which == 1 ? fw_index_select(&r, x, i, axis)
                          : fw_take_along_axis(&r, x, i, axis);
    RET(rc, r);
}
static PyObject *f_gather(PyObject *s, PyObject *a, PyObject *k) { return f_gather_like(a, k, 0); }
static PyObject *f_index_select(PyObject *s, PyObject *a, PyObject *k) { return f_gather_like(a, k, 1); }
static PyObject *f_take_along_axis(PyObject *s, PyObject *a, PyObject *k) { return f_gather_like(a, k, 2); }

static PyObject *f_index_add(PyObject *self, PyObject *args)
{
    PyObject *xo, *io, *vo;
    int axis;
    if (!PyArg_ParseTuple(args, "OOiO:index_add", &xo, &io, &axis, &vo))
        return NULL;
    fw_tensor *x, *i, *v, *r;
    if (pyc_tensor_arg(xo, &x, "x") < 0 || pyc_tensor_arg(io, &i, "index") < 0 ||
        pyc_tensor_arg(vo, &v, "value") < 0)
        return NULL;
    int rc = fw_index_add(&r, x, i, axis, v);
    RET(rc, r);
}

static PyObject *f_scatter(PyObject *self, PyObject *args, PyObject *kw)
{
    static char *kwl[] = {"x", "index", "updates", "overwrite", NULL};
    PyObject *xo, *io, *uo;
    int ow = 1;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OOO|p:scatter", kwl, &xo, &io, &uo, &ow))
        return NULL;
    fw_tensor *x, *i, *u, *r;
    if (pyc_tensor_arg(xo, &x, "x") < 0 || pyc_tensor_arg(io, &i, "index") < 0 ||
        pyc_tensor_arg(uo, &u, "updates") < 0)
        return NULL;
    int rc = fw_scatter(&r, x, i, u, ow != 0);
    RET(rc, r);
}

static PyObject *f_put_along_axis(PyObject *self, PyObject *args, PyObject *kw)
{
    static char *kwl[] = {"arr", "indices", "values", "axis", "reduce", NULL};
    PyObject *xo, *io, *vo;
    int axis;
    const char *red = "assign";
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OOOi|s:put_along_axis", kwl, &xo, &io, &vo,
                                     &axis, &red))
        return NULL;
    fw_tensor *x, *i, *v = NULL, *r;
    if (pyc_tensor_arg(xo, &x, "arr") < 0 || pyc_tensor_arg(io, &i, "indices") < 0 ||
        pyc_tensor_or_scalar(vo, &v, fw_tensor_dtype(x)) < 0)
        return NULL;
    fw_put_mode m;
    if (strcmp(red, "assign") == 0)
        m = FW_PUT_ASSIGN;
    else if (strcmp(red, "add") == 0)
        m = FW_PUT_ADD;
    else {
        fw_tensor_unref(v);
        PyErr_Format(PyExc_ValueError, "put_along_axis: reduce must be 'assign' or 'add', "
                     "got '%s'", red);
        return NULL;
    }
    int rc = fw_put_along_axis(&r, x, i, v, axis, m);
    fw_tensor_unref(v);
    RET(rc, r);
}

static PyObject *f_where(PyObject *self, PyObject *args)
{
    PyObject *co, *xo, *yo;
    if (!PyArg_ParseTuple(args, "OOO:where", &co, &xo, &yo))
        return NULL;
    fw_tensor *c, *x = NULL, *y = NULL, *r;
    if (pyc_tensor_arg(co, &c, "condition") < 0)
        return NULL;
    fw_dtype dt = pyc_is_tensor(xo) ? fw_tensor_dtype(pyc_t(xo))
                  : pyc_is_tensor(yo) ? fw_tensor_dtype(pyc_t(yo)) : pyc_default_float;
    if (pyc_tensor_or_scalar(xo, &x, dt) < 0)
        return NULL;
    if (pyc_tensor_or_scalar(yo, &y, dt) < 0) {
        fw_tensor_unref(x);
        return NULL;
    }
    int rc = 0;
    fw_tensor *cb = NULL;
    if (fw_tensor_dtype(c) != FW_BOOL)
        rc = fw_cast(&cb, c, FW_BOOL);
    else
        cb = fw_tensor_ref(c);
    if (rc == 0 && fw_tensor_dtype(x) != fw_tensor_dtype(y)) {
        fw_dtype p = fw_dtype_promote(fw_tensor_dtype(x), fw_tensor_dtype(y));
        fw_tensor *t;
        if (fw_tensor_dtype(x) != p && (rc = fw_cast(&t, x, p)) == 0) {
            fw_tensor_unref(x);
            x = t;
        }
        if (rc == 0 && fw_tensor_dtype(y) != p && (rc = fw_cast(&t, y, p)) == 0) {
            fw_tensor_unref(y);
            y = t;
        }
    }
    if (rc == 0)
        rc = fw_where(&r, cb, x, y);
    fw_tensor_unref(cb);
    fw_tensor_unref(x);
    fw_tensor_unref(y);
    RET(rc, r);
}

static PyObject *f_clip(PyObject *self, PyObject *args, PyObject *kw)
{
    static char *kwl[] = {"x", "min", "max", NULL};
    PyObject *xo, *mno = Py_None, *mxo = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|OO:clip", kwl, &xo, &mno, &mxo))
        return NULL;
    fw_tensor *x, *r;
    if (pyc_tensor_arg(xo, &x, "x") < 0)
        return NULL;
    double mn = 0, mx = 0;
    if (mno != Py_None && (mn = PyFloat_AsDouble(mno)) == -1.0 && PyErr_Occurred())
        return NULL;
    if (mxo != Py_None && (mx = PyFloat_AsDouble(mxo)) == -1.0 && PyErr_Occurred())
        return NULL;
    int rc = fw_clip(&r, x, mno == Py_None ? NULL : &mn, mxo == Py_None ? NULL : &mx);
    RET(rc, r);
}

static PyObject *f_one_hot(PyObject *self, PyObject *args)
{
    PyObject *xo;
    long long n;
    if (!PyArg_ParseTuple(args, "OL:one_hot", &xo, &n))
        return NULL;
    fw_tensor *x, *r;
    if (pyc_tensor_arg(xo, &x, "x") < 0)
        return NULL;
    int rc = fw_one_hot(&r, x, n);
    RET(rc, r);
}

static PyObject *pair(int rc, fw_tensor *a, fw_tensor *b)
{
    if (rc < 0)
        return pyc_raise(rc);
    PyObject *wa = pyc_wrap(a);
    PyObject *wb = pyc_wrap(b);
    if (!wa || !wb) {
        Py_XDECREF(wa);
        Py_XDECREF(wb);
        return NULL;
    }
    return Py_BuildValue("(NN)", wa, wb);
}

static PyObject *f_topk(PyObject *self, PyObject *args, PyObject *kw)
{
    static char *kwl[] = {"x", "k", "axis", "largest", "sorted", NULL};
    PyObject *xo;
    long long k;
    int axis = -1, largest = 1, sorted = 1;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OL|ipp:topk", kwl, &xo, &k, &axis, &largest,
                                     &sorted))
        return NULL;
    fw_tensor *x, *v, *i;
    if (pyc_tensor_arg(xo, &x, "x") < 0)
        return NULL;
    int rc = fw_topk(&v, &i, x, k, axis, largest, sorted);
    return pair(rc, v, i);
}

static PyObject *f_sort(PyObject *self, PyObject *args, PyObject *kw)
{
    static char *kwl[] = {"x", "axis", "descending", NULL};
    PyObject *xo;
    int axis = -1, desc = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|ip:sort", kwl, &xo, &axis, &desc))
        return NULL;
    fw_tensor *x, *v, *i;
    if (pyc_tensor_arg(xo, &x, "x") < 0)
        return NULL;
    int rc = fw_sort(&v, &i, x, axis, desc, true);
    return pair(rc, v, i);
}

static PyObject *f_argsort(PyObject *self, PyObject *args, PyObject *kw)
{
    static char *kwl[] = {"x", "axis", "descending", NULL};
    PyObject *xo;
    int axis = -1, desc = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|ip:argsort", kwl, &xo, &axis, &desc))
        return NULL;
    fw_tensor *x, *r;
    if (pyc_tensor_arg(xo, &x, "x") < 0)
        return NULL;
    int rc = fw_argsort(&r, x, axis, desc, true);
    RET(rc, r);
}

static PyObject *f_cumsum(PyObject *self, PyObject *args, PyObject *kw)
{
    static char *kwl[] = {"x", "axis", "dtype", NULL};
    PyObject *xo, *ax = Py_None, *dto = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|OO:cumsum", kwl, &xo, &ax, &dto))
        return NULL;
    fw_tensor *x, *r;
    if (pyc_tensor_arg(xo, &x, "x") < 0)
        return NULL;
    int axis = 0;
    fw_dtype dt = FW_FLOAT32;
    if (ax != Py_None && (axis = (int)PyLong_AsLong(ax)) == -1 && PyErr_Occurred())
        return NULL;
    if (dto != Py_None && pyc_dtype_arg(dto, &dt) < 0)
        return NULL;
    int rc = fw_cumsum(&r, x, ax == Py_None ? NULL : &axis, dto == Py_None ? NULL : &dt);
    RET(rc, r);
}

static PyObject *f_tile(PyObject *self, PyObject *args)
{
    PyObject *xo, *ro;
    if (!PyArg_ParseTuple(args, "OO:tile", &xo, &ro))
        return NULL;
    fw_tensor *x, *r;
    int64_t reps[FW_MAX_DIMS];
    int n;
    if (pyc_tensor_arg(xo, &x, "x") < 0 ||
        pyc_int64_list(ro, reps, FW_MAX_DIMS, &n, "repeat_times") < 0)
        return NULL;
    int rc = fw_tile(&r, x, reps, n);
    RET(rc, r);
}

static PyObject *f_pad(PyObject *self, PyObject *args, PyObject *kw)
{
    static char *kwl[] = {"x", "pad", "mode", "value", NULL};
    PyObject *xo, *po;
    const char *mode = "constant";
    double value = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OO|sd:pad", kwl, &xo, &po, &mode, &value))
        return NULL;
    fw_tensor *x, *r;
    int64_t p[FW_MAX_DIMS * 2];
    int n;
    if (pyc_tensor_arg(xo, &x, "x") < 0 ||
        pyc_int64_list(po, p, FW_MAX_DIMS * 2, &n, "pad") < 0)
        return NULL;
    fw_pad_mode m;
    if (strcmp(mode, "constant") == 0) m = FW_PAD_CONSTANT;
    else if (strcmp(mode, "reflect") == 0) m = FW_PAD_REFLECT;
    else if (strcmp(mode, "replicate") == 0) m = FW_PAD_REPLICATE;
    else if (strcmp(mode, "circular") == 0) m = FW_PAD_CIRCULAR;
    else {
        PyErr_Format(PyExc_ValueError, "pad: mode must be constant, reflect, replicate or "
                     "circular, got '%s'", mode);
        return NULL;
    }
    int rc = fw_pad(&r, x, p, n, m, value);
    RET(rc, r);
}

static PyObject *f_index_get(PyObject *self, PyObject *args)
{
    PyObject *xo, *lo, *keep;
    if (!PyArg_ParseTuple(args, "OO:index_get", &xo, &lo))
        return NULL;
    fw_tensor *x, *r;
    int n;
    if (pyc_tensor_arg(xo, &x, "x") < 0)
        return NULL;
    fw_tensor **v = tensor_list(lo, &n, &keep);
    if (!v)
        return NULL;
    int rc = fw_index_get(&r, x, v, n);
    PyMem_Free(v);
    Py_DECREF(keep);
    RET(rc, r);
}

static PyObject *f_masked_select(PyObject *self, PyObject *args)
{
    PyObject *xo, *mo;
    if (!PyArg_ParseTuple(args, "OO:masked_select", &xo, &mo))
        return NULL;
    fw_tensor *x, *m, *r;
    if (pyc_tensor_arg(xo, &x, "x") < 0 || pyc_tensor_arg(mo, &m, "mask") < 0)
        return NULL;
    int rc = fw_masked_select(&r, x, m);
    RET(rc, r);
}

static PyObject *set_value_impl(PyObject *args, int inplace)
{
    PyObject *xo, *ax, *st, *en, *sp, *vo;
    if (!PyArg_ParseTuple(args, "OOOOOO:set_value", &xo, &ax, &st, &en, &sp, &vo))
        return NULL;
    fw_tensor *x, *v = NULL, *r = NULL;
    int axes[FW_MAX_DIMS], n;
    int64_t s[FW_MAX_DIMS], e[FW_MAX_DIMS], p[FW_MAX_DIMS];
    if (pyc_tensor_arg(xo, &x, "x") < 0 || slice_args(ax, st, en, sp, axes, s, e, p, &n) < 0 ||
        pyc_tensor_or_scalar(vo, &v, fw_tensor_dtype(x)) < 0)
        return NULL;
    int rc = inplace ? fw_set_value_(x, axes, s, e, p, n, v)
                     : fw_set_value(&r, x, axes, s, e, p, n, v);
    fw_tensor_unref(v);
    if (rc < 0)
        return pyc_raise(rc);
    if (inplace)
        Py_RETURN_NONE;
    return pyc_wrap(r);
}
static PyObject *f_set_value_(PyObject *s, PyObject *a) { return set_value_impl(a, 1); }
static PyObject *f_set_value(PyObject *s, PyObject *a) { return set_value_impl(a, 0); }

static PyObject *f_index_put_(PyObject *self, PyObject *args)
{
    PyObject *xo, *lo, *vo, *keep;
    int acc = 0;
    if (!PyArg_ParseTuple(args, "OOO|p:index_put_", &xo, &lo, &vo, &acc))
        return NULL;
    fw_tensor *x, *v = NULL;
    int n;
    if (pyc_tensor_arg(xo, &x, "x") < 0 || pyc_tensor_or_scalar(vo, &v, fw_tensor_dtype(x)) < 0)
        return NULL;
    fw_tensor **ix = tensor_list(lo, &n, &keep);
    if (!ix) {
        fw_tensor_unref(v);
        return NULL;
    }
    int rc = fw_index_put_(x, ix, n, v, acc != 0);
    PyMem_Free(ix);
    Py_DECREF(keep);
    fw_tensor_unref(v);
    if (rc < 0)
        return pyc_raise(rc);
    Py_RETURN_NONE;
}

static PyObject *f_masked_fill_(PyObject *self, PyObject *args)
{
    PyObject *xo, *mo, *vo;
    if (!PyArg_ParseTuple(args, "OOO:masked_fill_", &xo, &mo, &vo))
        return NULL;
    fw_tensor *x, *m, *v = NULL;
    if (pyc_tensor_arg(xo, &x, "x") < 0 || pyc_tensor_arg(mo, &m, "mask") < 0 ||
        pyc_tensor_or_scalar(vo, &v, fw_tensor_dtype(x)) < 0)
        return NULL;
    int rc = fw_masked_fill_(x, m, v);
    fw_tensor_unref(v);
    if (rc < 0)
        return pyc_raise(rc);
    Py_RETURN_NONE;
}

/* ---- grad mode ------------------------------------------------------------------- */

static PyObject *f_is_grad_enabled(PyObject *self, PyObject *u)
{
    return PyBool_FromLong(fw_grad_enabled());
}

static PyObject *f_set_grad_enabled(PyObject *self, PyObject *arg)
{
    int b = PyObject_IsTrue(arg);
    if (b < 0)
        return NULL;
    return PyBool_FromLong(fw_set_grad_enabled(b != 0));
}

static PyObject *f_dtype_code(PyObject *self, PyObject *arg)
{
    fw_dtype dt;
    if (pyc_dtype_arg(arg, &dt) < 0)
        return NULL;
    return PyLong_FromLong((long)dt);
}

static PyObject *f_is_tensor(PyObject *self, PyObject *arg)
{
    return PyBool_FromLong(pyc_is_tensor(arg));
}

extern PyMethodDef pyc_nn_methods[];

PyMethodDef pyc_module_methods[] = {
    {"_register_dtypes", pyc_register_dtypes, METH_O, NULL},
    {"_register_place", pyc_register_place, METH_O, NULL},
    {"_set_default_float", pyc_set_default_float, METH_O, NULL},
    {"_set_getitem_fallback", pyc_set_getitem_fallback, METH_O, NULL},
    {"dtype_code", f_dtype_code, METH_O, NULL},
    {"is_tensor", f_is_tensor, METH_O, NULL},
    {"to_tensor", KWF(f_to_tensor), KW, NULL},
    {"zeros", KWF(f_zeros), KW, NULL},
    {"ones", KWF(f_ones), KW, NULL},
    {"empty", KWF(f_empty), KW, NULL},
    {"full", KWF(f_full), KW, NULL},
    {"zeros_like", KWF(f_zeros_like), KW, NULL},
    {"ones_like", KWF(f_ones_like), KW, NULL},
    {"full_like", KWF(f_full_like), KW, NULL},
    {"arange", KWF(f_arange), KW, NULL},
    {"linspace", KWF(f_linspace), KW, NULL},
    {"eye", KWF(f_eye), KW, NULL},
    {"seed", f_seed, METH_O, NULL},
    {"get_rng_state", f_get_rng_state, METH_NOARGS, NULL},
    {"set_rng_state", f_set_rng_state, METH_O, NULL},
    {"rand", KWF(f_rand), KW, NULL},
    {"randn", KWF(f_randn), KW, NULL},
    {"uniform", KWF(f_uniform), KW, NULL},
    {"normal", KWF(f_normal), KW, NULL},
    {"randint", KWF(f_randint), KW, NULL},
    {"randperm", KWF(f_randperm), KW, NULL},
#define B(n) {#n, PYC_FAST(f_##n), METH_FASTCALL, NULL}
    B(add), B(subtract), B(multiply), B(divide), B(pow), B(maximum), B(minimum),
    B(equal), B(not_equal), B(less_than), B(less_equal), B(greater_than),
    B(greater_equal), B(logical_and), B(logical_or), B(logical_xor), B(matmul),
#undef B
#define U(n) {#n, f_##n, METH_O, NULL}
    U(exp), U(log), U(sqrt), U(rsqrt), U(abs), U(neg), U(square), U(tanh), U(sigmoid),
    U(relu), U(silu), U(sin), U(cos), U(logical_not), U(contiguous),
#undef U
    {"gelu", KWF(f_gelu), KW, NULL},
    {"leaky_relu", KWF(f_leaky_relu), KW, NULL},
#define R(n) {#n, PYC_FAST(f_##n), METH_FASTCALL | METH_KEYWORDS, NULL}
    R(sum), R(mean), R(max), R(min), R(prod),
#undef R
    {"var", KWF(f_var), KW, NULL},
    {"std", KWF(f_std), KW, NULL},
    {"argmax", KWF(f_argmax), KW, NULL},
    {"argmin", KWF(f_argmin), KW, NULL},
    {"reshape", f_reshape, METH_VARARGS, NULL},
    {"flatten", KWF(f_flatten), KW, NULL},
    {"squeeze", f_squeeze, METH_VARARGS, NULL},
    {"unsqueeze", f_unsqueeze, METH_VARARGS, NULL},
    {"transpose", f_transpose, METH_VARARGS, NULL},
    {"swapaxes", f_swapaxes, METH_VARARGS, NULL},
    {"slice", f_slice, METH_VARARGS, NULL},
    {"select", f_select, METH_VARARGS, NULL},
    {"expand", f_expand, METH_VARARGS, NULL},
    {"broadcast_to", f_broadcast_to, METH_VARARGS, NULL},
    {"cast", f_cast, METH_VARARGS, NULL},
    {"concat", KWF(f_concat), KW, NULL},
    {"stack", KWF(f_stack), KW, NULL},
    {"split", KWF(f_split), KW, NULL},
    {"gather", KWF(f_gather), KW, NULL},
    {"index_select", KWF(f_index_select), KW, NULL},
    {"take_along_axis", KWF(f_take_along_axis), KW, NULL},
    {"index_add", f_index_add, METH_VARARGS, NULL},
    {"scatter", KWF(f_scatter), KW, NULL},
    {"put_along_axis", KWF(f_put_along_axis), KW, NULL},
    {"where", f_where, METH_VARARGS, NULL},
    {"clip", KWF(f_clip), KW, NULL},
    {"one_hot", f_one_hot, METH_VARARGS, NULL},
    {"topk", KWF(f_topk), KW, NULL},
    {"sort", KWF(f_sort), KW, NULL},
    {"argsort", KWF(f_argsort), KW, NULL},
    {"cumsum", KWF(f_cumsum), KW, NULL},
    {"tile", f_tile, METH_VARARGS, NULL},
    {"pad", KWF(f_pad), KW, NULL},
    {"index_get", f_index_get, METH_VARARGS, NULL},
    {"masked_select", f_masked_select, METH_VARARGS, NULL},
    {"set_value_", f_set_value_, METH_VARARGS, NULL},
    {"set_value", f_set_value, METH_VARARGS, NULL},
    {"index_put_", f_index_put_, METH_VARARGS, NULL},
    {"masked_fill_", f_masked_fill_, METH_VARARGS, NULL},
    {"is_grad_enabled", f_is_grad_enabled, METH_NOARGS, NULL},
    {"set_grad_enabled", f_set_grad_enabled, METH_O, NULL},
    {NULL, NULL, 0, NULL}};
