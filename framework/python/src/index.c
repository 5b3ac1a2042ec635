/*
 * index.c - paddle._C functions over fw/index.h: concat, stack, split,
 * gather/scatter, where, clip, one_hot, topk/sort, cumsum, tile, pad,
 * advanced indexing reads and writes.
 * Each parses its arguments, calls one fw_* function of fw/index.h and wraps
 * the result (signatures: BINDINGS.md).
 */
#include "pyc.h"

#include <string.h>

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
    PYC_RET(rc, r);
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
    PYC_RET(rc, r);
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
    PYC_RET(rc, r);
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
    PYC_RET(rc, r);
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
    PYC_RET(rc, r);
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
    PYC_RET(rc, r);
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
    PYC_RET(rc, r);
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
    PYC_RET(rc, r);
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
    PYC_RET(rc, r);
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
    PYC_RET(rc, r);
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
    PYC_RET(rc, r);
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
    PYC_RET(rc, r);
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
    PYC_RET(rc, r);
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
    PYC_RET(rc, r);
}

static PyObject *set_value_impl(PyObject *args, int inplace)
{
    PyObject *xo, *ax, *st, *en, *sp, *vo;
    if (!PyArg_ParseTuple(args, "OOOOOO:set_value", &xo, &ax, &st, &en, &sp, &vo))
        return NULL;
    fw_tensor *x, *v = NULL, *r = NULL;
    int axes[FW_MAX_DIMS], n;
    int64_t s[FW_MAX_DIMS], e[FW_MAX_DIMS], p[FW_MAX_DIMS];
    if (pyc_tensor_arg(xo, &x, "x") < 0 || pyc_slice_args(ax, st, en, sp, axes, s, e, p, &n) < 0 ||
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

PyMethodDef pyc_index_methods[] = {
    {"concat", PYC_FAST(f_concat), PYC_KW, NULL},
    {"stack", PYC_FAST(f_stack), PYC_KW, NULL},
    {"split", PYC_FAST(f_split), PYC_KW, NULL},
    {"gather", PYC_FAST(f_gather), PYC_KW, NULL},
    {"index_select", PYC_FAST(f_index_select), PYC_KW, NULL},
    {"take_along_axis", PYC_FAST(f_take_along_axis), PYC_KW, NULL},
    {"index_add", f_index_add, METH_VARARGS, NULL},
    {"scatter", PYC_FAST(f_scatter), PYC_KW, NULL},
    {"put_along_axis", PYC_FAST(f_put_along_axis), PYC_KW, NULL},
    {"where", f_where, METH_VARARGS, NULL},
    {"clip", PYC_FAST(f_clip), PYC_KW, NULL},
    {"one_hot", f_one_hot, METH_VARARGS, NULL},
    {"topk", PYC_FAST(f_topk), PYC_KW, NULL},
    {"sort", PYC_FAST(f_sort), PYC_KW, NULL},
    {"argsort", PYC_FAST(f_argsort), PYC_KW, NULL},
    {"cumsum", PYC_FAST(f_cumsum), PYC_KW, NULL},
    {"tile", f_tile, METH_VARARGS, NULL},
    {"pad", PYC_FAST(f_pad), PYC_KW, NULL},
    {"index_get", f_index_get, METH_VARARGS, NULL},
    {"masked_select", f_masked_select, METH_VARARGS, NULL},
    {"set_value_", f_set_value_, METH_VARARGS, NULL},
    {"set_value", f_set_value, METH_VARARGS, NULL},
    {"index_put_", f_index_put_, METH_VARARGS, NULL},
    {"masked_fill_", f_masked_fill_, METH_VARARGS, NULL},
    {NULL, NULL, 0, NULL}};
