/*
 * common.c - argument parsing, errors, dtype/place objects and the binary-op
 * dispatch (tensor or Python scalar on either side) of paddle._C.
 */
#include "pyc.h"

#include <stdarg.h>
#include <string.h>

fw_dtype pyc_default_float = FW_FLOAT32;
static PyObject *g_dtype_objs[FW_NDTYPES];
static PyObject *g_place_obj;

PyObject *pyc_raise(int rc)
{
    const char *msg = fw_error_last();
    PyObject *exc;
    if (pyc_restore_callback_error())   /* a Python hook's own exception */
        return NULL;
    switch (rc) {
    case FW_ENOMEM: exc = PyExc_MemoryError; break;
    case FW_EDTYPE: exc = PyExc_TypeError; break;
    case FW_EAXIS:
    case FW_ERANGE: exc = PyExc_IndexError; break;
    case FW_EDEVICE:
    case FW_EGRAD:
    case FW_EINTERNAL: exc = PyExc_RuntimeError; break;
    case FW_EIO: exc = PyExc_OSError; break;
    case FW_EUNSUPPORTED: exc = PyExc_NotImplementedError; break;
    default: exc = PyExc_ValueError; break;
    }
    PyErr_SetString(exc, (msg && *msg) ? msg : fw_error_name(rc));
    return NULL;
}

int pyc_tensor_arg(PyObject *o, fw_tensor **out, const char *what)
{
    if (o && pyc_is_tensor(o)) {
        *out = pyc_t(o);
        return 0;
    }
    PyErr_Format(PyExc_TypeError, "%s must be a Tensor, got %s", what,
                 o ? Py_TYPE(o)->tp_name : "nothing");
    return -1;
}

int pyc_tensor_or_none(PyObject *o, fw_tensor **out, const char *what)
{
    if (!o || o == Py_None) {
        *out = NULL;
        return 0;
    }
    return pyc_tensor_arg(o, out, what);
}

int pyc_bool_arg(PyObject *o, bool *out)
{
    if (!o)
        return 0;
    int v = PyObject_IsTrue(o);
    if (v < 0)
        return -1;
    *out = v != 0;
    return 0;
}

static int dtype_from_str(const char *s, fw_dtype *out)
{
    if (strncmp(s, "paddle.", 7) == 0)
        s += 7;
    if (strcmp(s, "float") == 0 || strcmp(s, "fp32") == 0)
        s = "float32";
    else if (strcmp(s, "double") == 0 || strcmp(s, "fp64") == 0)
        s = "float64";
    else if (strcmp(s, "half") == 0 || strcmp(s, "fp16") == 0)
        s = "float16";
    else if (strcmp(s, "int") == 0)
        s = "int64";
    else if (strcmp(s, "bf16") == 0)
        s = "bfloat16";
    else if (strcmp(s, "bool_") == 0)
        s = "bool";
    if (fw_dtype_from_name(out, s) < 0) {
        PyErr_Format(PyExc_TypeError, "unsupported dtype '%s' (expected one of float32, "
                     "float64, float16, bfloat16, int32, int64, bool, uint8, complex64, "
                     "complex128)", s);
        return -1;
    }
    return 0;
}

int pyc_dtype_arg(PyObject *o, fw_dtype *out)
{
    for (int i = 0; i < FW_NDTYPES; i++)
        if (g_dtype_objs[i] && o == g_dtype_objs[i]) {
            *out = (fw_dtype)i;
            return 0;
        }
    if (PyLong_Check(o)) {
        long v = PyLong_AsLong(o);
        if (v < 0 || v >= FW_NDTYPES) {
            PyErr_Format(PyExc_TypeError, "unsupported dtype code %ld", v);
            return -1;
        }
        *out = (fw_dtype)v;
        return 0;
    }
    if (PyUnicode_Check(o))
        return dtype_from_str(PyUnicode_AsUTF8(o), out);
    /* paddle dtype objects carry _code; numpy dtypes have .name; numpy
     * scalar types have __name__. */
    static const char *attrs[] = {"_code", "name", "__name__"};
    for (int i = 0; i < 3; i++) {
        PyObject *a = PyObject_GetAttrString(o, attrs[i]);
        if (!a) {
            PyErr_Clear();
            continue;
        }
        int rc;
        if (PyLong_Check(a) || PyUnicode_Check(a))
            rc = pyc_dtype_arg(a, out);
        else {
            rc = -1;
            PyErr_Format(PyExc_TypeError, "unsupported dtype %R", o);
        }
        Py_DECREF(a);
        return rc;
    }
    PyErr_Format(PyExc_TypeError, "unsupported dtype %R", o);
    return -1;
}

int pyc_dtype_or(PyObject *o, fw_dtype *out, fw_dtype dflt)
{
    if (!o || o == Py_None) {
        *out = dflt;
        return 0;
    }
    return pyc_dtype_arg(o, out);
}

int pyc_int64_list(PyObject *o, int64_t *vals, int max, int *n, const char *what)
{
    if (PyLong_Check(o)) {
        vals[0] = PyLong_AsLongLong(o);
        *n = 1;
        return PyErr_Occurred() ? -1 : 0;
    }
    if (pyc_is_tensor(o)) {
        fw_tensor *t = pyc_t(o);
        int64_t k = fw_tensor_numel(t);
        if (k > max || fw_tensor_ndim(t) > 1) {
            PyErr_Format(PyExc_ValueError, "%s: expected at most %d values in a 0-D or 1-D "
                         "Tensor, got %lld", what, max, (long long)k);
            return -1;
        }
        double *d = PyMem_Malloc(sizeof(double) * (size_t)(k ? k : 1));
        if (!d) {
            PyErr_NoMemory();
            return -1;
        }
        int rc = fw_tensor_to_doubles(d, k, t);
        if (rc < 0) {
            PyMem_Free(d);
            pyc_raise(rc);
            return -1;
        }
        for (int64_t i = 0; i < k; i++)
            vals[i] = (int64_t)d[i];
        PyMem_Free(d);
        *n = (int)k;
        return 0;
    }
    PyObject *seq = PySequence_Fast(o, "expected a list or tuple of ints");
    if (!seq) {
        PyErr_Format(PyExc_TypeError, "%s must be an int or a list/tuple of ints, got %s", what,
                     Py_TYPE(o)->tp_name);
        return -1;
    }
    Py_ssize_t k = PySequence_Fast_GET_SIZE(seq);
    if (k > max) {
        Py_DECREF(seq);
        PyErr_Format(PyExc_ValueError, "%s: at most %d values, got %zd", what, max, k);
        return -1;
    }
    for (Py_ssize_t i = 0; i < k; i++) {
        PyObject *it = PySequence_Fast_GET_ITEM(seq, i);
        if (pyc_is_tensor(it)) {
            double d;
            int rc = fw_tensor_item(&d, pyc_t(it));
            if (rc < 0) {
                Py_DECREF(seq);
                pyc_raise(rc);
                return -1;
            }
            vals[i] = (int64_t)d;
            continue;
        }
        PyObject *idx = PyNumber_Index(it);
        if (!idx) {
            Py_DECREF(seq);
            PyErr_Format(PyExc_TypeError, "%s must hold ints, got %s", what, Py_TYPE(it)->tp_name);
            return -1;
        }
        vals[i] = PyLong_AsLongLong(idx);
        Py_DECREF(idx);
        if (PyErr_Occurred()) {
            Py_DECREF(seq);
            return -1;
        }
    }
    *n = (int)k;
    Py_DECREF(seq);
    return 0;
}

int pyc_shape_arg(PyObject *o, int64_t *shape, int *ndim)
{
    if (PyLong_Check(o)) {
        shape[0] = PyLong_AsLongLong(o);
        *ndim = 1;
        return PyErr_Occurred() ? -1 : 0;
    }
    return pyc_int64_list(o, shape, FW_MAX_DIMS, ndim, "shape");
}

int pyc_shape_dtype_args(pyc_args *a, PyObject *args, PyObject *kw)
{
    static char *kwl[] = {"shape", "dtype", NULL};
    return pyc_parse_args(a, pyc_default_float, args, kw, "O|O", kwl, &a->shape_o, &a->dtype_o);
}

int pyc_parse_args(pyc_args *a, fw_dtype dflt, PyObject *args, PyObject *kw, const char *fmt,
                   char **kwl, ...)
{
    va_list ap;
    int ok;

    a->shape_o = NULL;
    a->dtype_o = Py_None;
    a->ndim = 0;
    va_start(ap, kwl);
    ok = PyArg_VaParseTupleAndKeywords(args, kw, fmt, kwl, ap);
    va_end(ap);
    if (!ok)
        return -1;
    if (a->shape_o && pyc_shape_arg(a->shape_o, a->shape, &a->ndim) < 0)
        return -1;
    return pyc_dtype_or(a->dtype_o, &a->dtype, dflt);
}

int pyc_slice_args(PyObject *ax, PyObject *st, PyObject *en, PyObject *sp, int *axes,
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

int pyc_axes_arg(PyObject *o, int *axes, int *naxes)
{
    if (!o || o == Py_None) {
        *naxes = 0;
        return 0;
    }
    int64_t v[FW_MAX_DIMS];
    int n;
    if (pyc_int64_list(o, v, FW_MAX_DIMS, &n, "axis") < 0)
        return -1;
    for (int i = 0; i < n; i++)
        axes[i] = (int)v[i];
    *naxes = n;
    return 0;
}

int pyc_reduction_arg(PyObject *o, fw_reduction *out)
{
    if (!o || o == Py_None) {
        *out = FW_REDUCTION_MEAN;
        return 0;
    }
    const char *s = PyUnicode_Check(o) ? PyUnicode_AsUTF8(o) : NULL;
    if (s && strcmp(s, "mean") == 0)
        *out = FW_REDUCTION_MEAN;
    else if (s && strcmp(s, "sum") == 0)
        *out = FW_REDUCTION_SUM;
    else if (s && strcmp(s, "none") == 0)
        *out = FW_REDUCTION_NONE;
    else {
        PyErr_Format(PyExc_ValueError,
                     "reduction must be 'mean', 'sum' or 'none', got %R", o);
        return -1;
    }
    return 0;
}

/* ---- scalars ------------------------------------------------------------- */

typedef struct {
    double v;
    int kind; /* 0 bool, 1 int, 2 float */
} scalar;

/* 1 if o is a Python/numpy scalar (filled in), 0 if not, -1 on error. */
static int scalar_of(PyObject *o, scalar *s)
{
    if (PyBool_Check(o)) {
        s->v = (o == Py_True);
        s->kind = 0;
        return 1;
    }
    if (PyLong_Check(o)) {
        s->v = PyLong_AsDouble(o);
        s->kind = 1;
        return PyErr_Occurred() ? -1 : 1;
    }
    if (PyFloat_Check(o)) {
        s->v = PyFloat_AS_DOUBLE(o);
        s->kind = 2;
        return 1;
    }
    if (pyc_is_tensor(o))
        return 0;
    /* numpy scalars / 0-d arrays: 0-dim buffers */
    if (PyObject_CheckBuffer(o)) {
        Py_buffer b;
        if (PyObject_GetBuffer(o, &b, PyBUF_FORMAT | PyBUF_ND) < 0) {
            PyErr_Clear();
            return 0;
        }
        int nd = b.ndim;
        char f = b.format ? b.format[strlen(b.format) - 1] : 'B';
        bool cx = b.format && strchr(b.format, 'Z') != NULL;
        PyBuffer_Release(&b);
        if (nd != 0 || cx)      /* complex numpy scalars go the buffer way */
            return 0;
        if (f == '?') {
            int t = PyObject_IsTrue(o);
            if (t < 0)
                return -1;
            s->v = t;
            s->kind = 0;
            return 1;
        }
        s->v = PyFloat_AsDouble(o);
        if (PyErr_Occurred())
            return -1;
        s->kind = (f == 'f' || f == 'd' || f == 'e' || f == 'g') ? 2 : 1;
        return 1;
    }
    return 0;
}

int pyc_tensor_or_scalar(PyObject *o, fw_tensor **out, fw_dtype dt)
{
    if (pyc_is_tensor(o)) {
        *out = fw_tensor_ref(pyc_t(o));
        return 0;
    }
    scalar s;
    int k = scalar_of(o, &s);
    if (k < 0)
        return -1;
    if (k == 0) {
        PyErr_Format(PyExc_TypeError, "expected a Tensor or a number, got %s",
                     Py_TYPE(o)->tp_name);
        return -1;
    }
    int rc = fw_full(out, dt, NULL, 0, s.v);
    if (rc < 0) {
        pyc_raise(rc);
        return -1;
    }
    return 0;
}

static bool is_intlike(fw_dtype d) { return !fw_dtype_is_float(d) && !fw_dtype_is_complex(d); }

/* Tensor `a` adjusted for arithmetic with a scalar of kind k. New ref. */
static int arith_operand(fw_tensor **out, fw_tensor *a, int kind, int op)
{
    fw_dtype d = fw_tensor_dtype(a);
    fw_dtype want = d;
    if (is_intlike(d) && (kind == 2 || op == PYC_OP_DIV))
        want = pyc_default_float;
    else if (d == FW_BOOL && op <= PYC_OP_MIN)
        want = FW_INT64;
    if (want == d) {
        *out = fw_tensor_ref(a);
        return 0;
    }
    return fw_cast(out, a, want);
}

static int tensor_tensor(fw_tensor **r, int op, fw_tensor *x, fw_tensor *y)
{
    switch (op) {
    case PYC_OP_ADD: return fw_add(r, x, y);
    case PYC_OP_SUB: return fw_sub(r, x, y);
    case PYC_OP_MUL: return fw_mul(r, x, y);
    case PYC_OP_DIV: return fw_div(r, x, y);
    case PYC_OP_POW: return fw_pow(r, x, y);
    case PYC_OP_MAX: return fw_maximum(r, x, y);
    case PYC_OP_MIN: return fw_minimum(r, x, y);
    case PYC_OP_EQ: return fw_eq(r, x, y);
    case PYC_OP_NE: return fw_ne(r, x, y);
    case PYC_OP_LT: return fw_lt(r, x, y);
    case PYC_OP_LE: return fw_le(r, x, y);
    case PYC_OP_GT: return fw_gt(r, x, y);
    case PYC_OP_GE: return fw_ge(r, x, y);
    case PYC_OP_AND: return fw_logical_and(r, x, y);
    case PYC_OP_OR: return fw_logical_or(r, x, y);
    case PYC_OP_XOR: return fw_logical_xor(r, x, y);
    }
    return fw_error_set(FW_EINTERNAL, "binary: bad op %d", op);
}

static const char *cmp_str(int op, bool swapped)
{
    switch (op) {
    case PYC_OP_EQ: return "==";
    case PYC_OP_NE: return "!=";
    case PYC_OP_LT: return swapped ? ">" : "<";
    case PYC_OP_LE: return swapped ? ">=" : "<=";
    case PYC_OP_GT: return swapped ? "<" : ">";
    case PYC_OP_GE: return swapped ? "<=" : ">=";
    }
    return "==";
}

/* tensor (op) scalar, or scalar (op) tensor when swapped. */
static int tensor_scalar(fw_tensor **r, int op, fw_tensor *t, scalar s, bool swapped)
{
    int rc;
    if (op >= PYC_OP_EQ && op <= PYC_OP_GE)
        return fw_compare_scalar(r, t, cmp_str(op, swapped), s.v);
    if (op >= PYC_OP_AND) {
        fw_tensor *st;
        if ((rc = fw_full(&st, FW_BOOL, NULL, 0, s.v)) < 0)
            return rc;
        rc = tensor_tensor(r, op, t, st);
        fw_tensor_unref(st);
        return rc;
    }
    fw_tensor *a;
    if ((rc = arith_operand(&a, t, s.kind, op)) < 0)
        return rc;
    switch (op) {
    case PYC_OP_ADD: rc = fw_add_scalar(r, a, s.v); break;
    case PYC_OP_MUL: rc = fw_mul_scalar(r, a, s.v); break;
    case PYC_OP_SUB: rc = swapped ? fw_rsub_scalar(r, a, s.v) : fw_sub_scalar(r, a, s.v); break;
    case PYC_OP_DIV: rc = swapped ? fw_rdiv_scalar(r, a, s.v) : fw_div_scalar(r, a, s.v); break;
    case PYC_OP_POW: rc = swapped ? fw_rpow_scalar(r, a, s.v) : fw_pow_scalar(r, a, s.v); break;
    default: {
        fw_tensor *st;
        if ((rc = fw_full(&st, fw_tensor_dtype(a), NULL, 0, s.v)) < 0)
            break;
        rc = swapped ? tensor_tensor(r, op, st, a) : tensor_tensor(r, op, a, st);
        fw_tensor_unref(st);
    }
    }
    fw_tensor_unref(a);
    return rc;
}

PyObject *pyc_binary(int op, PyObject *a, PyObject *b)
{
    fw_tensor *r = NULL;
    int rc;
    bool ta = pyc_is_tensor(a), tb = pyc_is_tensor(b);
    if (ta && tb) {
        rc = tensor_tensor(&r, op, pyc_t(a), pyc_t(b));
        return rc < 0 ? pyc_raise(rc) : pyc_wrap(r);
    }
    PyObject *other = ta ? b : a;
    fw_tensor *t = ta ? pyc_t(a) : pyc_t(b);
    if (!ta && !tb)
        Py_RETURN_NOTIMPLEMENTED;
    if (PyComplex_Check(other)) {
        /* a Python complex: a 0-D complex tensor of t's precision */
        fw_dtype tdt = fw_tensor_dtype(t);
        fw_dtype cdt = tdt == FW_FLOAT64 || tdt == FW_COMPLEX128 ? FW_COMPLEX128 : FW_COMPLEX64;
        double v[2] = {PyComplex_RealAsDouble(other), PyComplex_ImagAsDouble(other)};
        float vf[2] = {(float)v[0], (float)v[1]};
        fw_tensor *c = NULL;
        if ((rc = fw_tensor_from_data(&c, cdt == FW_COMPLEX64 ? (void *)vf : (void *)v, cdt,
                                      NULL, 0)) < 0)
            return pyc_raise(rc);
        rc = ta ? tensor_tensor(&r, op, t, c) : tensor_tensor(&r, op, c, t);
        fw_tensor_unref(c);
        return rc < 0 ? pyc_raise(rc) : pyc_wrap(r);
    }
    scalar s;
    int k = scalar_of(other, &s);
    if (k < 0)
        return NULL;
    if (k == 1) {
        rc = tensor_scalar(&r, op, t, s, !ta);
        return rc < 0 ? pyc_raise(rc) : pyc_wrap(r);
    }
    /* numpy arrays and other buffers: make a tensor of it */
    fw_tensor *o = NULL;
    if (pyc_from_buffer(&o, other) < 0)
        return NULL;
    if (!o)
        Py_RETURN_NOTIMPLEMENTED;
    rc = ta ? tensor_tensor(&r, op, t, o) : tensor_tensor(&r, op, o, t);
    fw_tensor_unref(o);
    return rc < 0 ? pyc_raise(rc) : pyc_wrap(r);
}

/* ---- dtype and place objects --------------------------------------------- */

PyObject *pyc_dtype_object(fw_dtype dt)
{
    if ((int)dt >= 0 && dt < FW_NDTYPES && g_dtype_objs[dt]) {
        Py_INCREF(g_dtype_objs[dt]);
        return g_dtype_objs[dt];
    }
    return PyUnicode_FromString(fw_dtype_name(dt));
}

PyObject *pyc_place_object(void)
{
    if (g_place_obj) {
        Py_INCREF(g_place_obj);
        return g_place_obj;
    }
    return PyUnicode_FromString("Place(cpu)");
}

PyObject *pyc_register_dtypes(PyObject *self, PyObject *arg)
{
    PyObject *seq = PySequence_Fast(arg, "expected a list of 10 dtype objects");
    if (!seq)
        return NULL;
    if (PySequence_Fast_GET_SIZE(seq) != FW_NDTYPES) {
        Py_DECREF(seq);
        PyErr_Format(PyExc_ValueError, "expected %d dtype objects", FW_NDTYPES);
        return NULL;
    }
    for (int i = 0; i < FW_NDTYPES; i++) {
        PyObject *o = PySequence_Fast_GET_ITEM(seq, i);
        Py_INCREF(o);
        Py_XSETREF(g_dtype_objs[i], o);
    }
    Py_DECREF(seq);
    Py_RETURN_NONE;
}

PyObject *pyc_register_place(PyObject *self, PyObject *arg)
{
    Py_INCREF(arg);
    Py_XSETREF(g_place_obj, arg);
    Py_RETURN_NONE;
}

PyObject *pyc_set_default_float(PyObject *self, PyObject *arg)
{
    fw_dtype d;
    if (pyc_dtype_arg(arg, &d) < 0)
        return NULL;
    if (!fw_dtype_is_float(d)) {
        PyErr_Format(PyExc_TypeError, "default dtype must be a float dtype, got %s",
                     fw_dtype_name(d));
        return NULL;
    }
    pyc_default_float = d;
    Py_RETURN_NONE;
}
