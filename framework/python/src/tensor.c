/*
 * tensor.c - the paddle._C.Tensor type: a heap type (so paddle/tensor/ Python files
 * can add methods) holding one fw_tensor reference; properties, C methods,
 * the number protocol and the buffer protocol.
 */
#include "pyc.h"

#include <stddef.h>
#include <string.h>

#include <structmember.h>

PyTypeObject *pyc_tensor_type;
static unsigned long long g_name_counter;

PyObject *pyc_wrap(fw_tensor *t)
{
    if (!t)
        return NULL;
    PycTensor *o = PyObject_New(PycTensor, pyc_tensor_type);
    if (!o) {
        fw_tensor_unref(t);
        return NULL;
    }
    o->t = t;
    o->name = NULL;
    o->dict = NULL;
    o->weakrefs = NULL;
    o->persistable = 0;
    o->is_grad = 0;
    return (PyObject *)o;
}

/* ---- buffers ------------------------------------------------------------- */

static int format_dtype(const char *fmt, Py_ssize_t itemsize, fw_dtype *dt)
{
    char c = fmt ? fmt[strlen(fmt) - 1] : 'B';
    if (fmt && strlen(fmt) >= 2 && fmt[strlen(fmt) - 2] == 'Z') {   /* PEP 3118 complex */
        if (c == 'f') { *dt = FW_COMPLEX64; return 0; }
        if (c == 'd') { *dt = FW_COMPLEX128; return 0; }
        return -1;
    }
    switch (c) {
    case 'f': *dt = FW_FLOAT32; return 0;
    case 'd': *dt = FW_FLOAT64; return 0;
    case 'e': *dt = FW_FLOAT16; return 0;
    case '?': *dt = FW_BOOL; return 0;
    case 'B': *dt = FW_UINT8; return 0;
    case 'i': case 'l': case 'q':
        if (itemsize == 4) { *dt = FW_INT32; return 0; }
        if (itemsize == 8) { *dt = FW_INT64; return 0; }
        break;
    }
    return -1;
}

int pyc_from_buffer(fw_tensor **out, PyObject *o)
{
    *out = NULL;
    if (!PyObject_CheckBuffer(o))
        return 0;
    Py_buffer b;
    if (PyObject_GetBuffer(o, &b, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) {
        /* a strided numpy array: take a C-contiguous copy first */
        if (!PyErr_ExceptionMatches(PyExc_BufferError) && !PyErr_ExceptionMatches(PyExc_ValueError))
            return -1;
        PyErr_Clear();
        PyObject *np = PyImport_ImportModule("numpy");
        if (!np)
            return -1;
        PyObject *c = PyObject_CallMethod(np, "ascontiguousarray", "O", o);
        Py_DECREF(np);
        if (!c)
            return -1;
        int rc = PyObject_GetBuffer(c, &b, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT);
        Py_DECREF(c); /* the buffer keeps c alive */
        if (rc < 0)
            return -1;
    }
    fw_dtype dt;
    if (format_dtype(b.format, b.itemsize, &dt) < 0) {
        PyErr_Format(PyExc_TypeError, "cannot make a Tensor from buffer format '%s'",
                     b.format ? b.format : "B");
        PyBuffer_Release(&b);
        return -1;
    }
    if (b.ndim > FW_MAX_DIMS) {
        PyErr_Format(PyExc_ValueError, "at most %d dimensions, got %d", FW_MAX_DIMS, b.ndim);
        PyBuffer_Release(&b);
        return -1;
    }
    int64_t shape[FW_MAX_DIMS];
    for (int i = 0; i < b.ndim; i++)
        shape[i] = b.shape[i];
    int rc = fw_tensor_from_data(out, b.buf, dt, shape, b.ndim);
    PyBuffer_Release(&b);
    if (rc < 0) {
        pyc_raise(rc);
        return -1;
    }
    return 1;
}

static const char *dtype_format(fw_dtype dt)
{
    switch (dt) {
    case FW_FLOAT32: return "f";
    case FW_FLOAT64: return "d";
    case FW_FLOAT16: return "e";
    case FW_BFLOAT16: return "H";
    case FW_INT32: return "i";
    case FW_INT64: return "q";
    case FW_BOOL: return "?";
    case FW_UINT8: return "B";
    case FW_COMPLEX64: return "Zf";
    case FW_COMPLEX128: return "Zd";
    default: return "B";
    }
}

static int tensor_getbuffer(PyObject *self, Py_buffer *view, int flags)
{
    fw_tensor *t = pyc_t(self);
    PyObject *owner = self;
    Py_INCREF(owner);
    if (fw_tensor_device(t) != FW_CPU || !fw_tensor_is_contiguous(t) ||
        fw_tensor_data(t) == NULL) {
        /* a device tensor is copied to the host (contiguous) first */
        fw_tensor *c;
        int rc = fw_tensor_device(t) != FW_CPU ? pyc_host(&c, t) : fw_contiguous(&c, t);
        if (rc < 0) {
            Py_DECREF(owner);
            pyc_raise(rc);
            return -1;
        }
        Py_DECREF(owner);
        owner = pyc_wrap(c);
        if (!owner)
            return -1;
        t = c;
    }
    int nd = fw_tensor_ndim(t);
    Py_ssize_t *dims = PyMem_Malloc(sizeof(Py_ssize_t) * 2 * (nd ? nd : 1));
    if (!dims) {
        Py_DECREF(owner);
        PyErr_NoMemory();
        return -1;
    }
    size_t isz = fw_dtype_size(fw_tensor_dtype(t));
    const int64_t *sh = fw_tensor_shape(t);
    Py_ssize_t stride = (Py_ssize_t)isz;
    for (int i = nd - 1; i >= 0; i--) {
        dims[i] = (Py_ssize_t)sh[i];
        dims[nd + i] = stride;
        stride *= (Py_ssize_t)sh[i];
    }
    view->obj = owner; /* reference handed over */
    view->buf = fw_tensor_data(t);
    view->len = (Py_ssize_t)(fw_tensor_numel(t) * (int64_t)isz);
    view->readonly = 0;
    view->itemsize = (Py_ssize_t)isz;
    view->format = (char *)dtype_format(fw_tensor_dtype(t));
    view->ndim = nd;
    view->shape = dims;
    view->strides = dims + nd;
    view->suboffsets = NULL;
    view->internal = dims;
    return 0;
}

static void tensor_releasebuffer(PyObject *self, Py_buffer *view)
{
    PyMem_Free(view->internal);
}

/* ---- construction -------------------------------------------------------- */

static PyObject *tensor_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    fw_tensor *t = NULL;
    int rc;
    PyObject *data = NULL;
    if (type == pyc_tensor_type && PyTuple_GET_SIZE(args) > 0)
        data = PyTuple_GET_ITEM(args, 0);
    if (data && pyc_is_tensor(data)) {
        t = fw_tensor_ref(pyc_t(data));
    } else if (data && data != Py_None) {
        int k = pyc_from_buffer(&t, data);
        if (k < 0)
            return NULL;
        if (k == 0 && pyc_tensor_or_scalar(data, &t, pyc_default_float) < 0)
            return NULL;
    } else {
        if ((rc = fw_zeros(&t, FW_FLOAT32, NULL, 0)) < 0)
            return pyc_raise(rc);
    }
    PycTensor *o = (PycTensor *)type->tp_alloc(type, 0);
    if (!o) {
        fw_tensor_unref(t);
        return NULL;
    }
    o->t = t;
    return (PyObject *)o;
}

static void tensor_dealloc(PyObject *self)
{
    PyTypeObject *tp = Py_TYPE(self);
    PycTensor *o = (PycTensor *)self;
    if (o->weakrefs)
        PyObject_ClearWeakRefs(self);
    fw_tensor_unref(o->t);
    o->t = NULL;
    Py_CLEAR(o->name);
    Py_CLEAR(o->dict);
    tp->tp_free(self);
    Py_DECREF(tp);
}

/* ---- properties ---------------------------------------------------------- */

static PyObject *shape_list(fw_tensor *t)
{
    int nd = fw_tensor_ndim(t);
    const int64_t *sh = fw_tensor_shape(t);
    PyObject *l = PyList_New(nd);
    if (!l)
        return NULL;
    for (int i = 0; i < nd; i++) {
        PyObject *v = PyLong_FromLongLong(sh[i]);
        if (!v) {
            Py_DECREF(l);
            return NULL;
        }
        PyList_SET_ITEM(l, i, v);
    }
    return l;
}

static PyObject *get_shape(PyObject *self, void *c) { return shape_list(pyc_t(self)); }
static PyObject *get_ndim(PyObject *self, void *c) { return PyLong_FromLong(fw_tensor_ndim(pyc_t(self))); }
static PyObject *get_size(PyObject *self, void *c) { return PyLong_FromLongLong(fw_tensor_numel(pyc_t(self))); }
static PyObject *get_dtype(PyObject *self, void *c) { return pyc_dtype_object(fw_tensor_dtype(pyc_t(self))); }
static PyObject *get_place(PyObject *self, void *c) { return pyc_place_of(pyc_t(self)); }
static PyObject *get_is_leaf(PyObject *self, void *c) { return PyBool_FromLong(fw_tensor_is_leaf(pyc_t(self))); }

static PyObject *get_stop_gradient(PyObject *self, void *c)
{
    return PyBool_FromLong(fw_tensor_stop_gradient(pyc_t(self)));
}

static int set_stop_gradient(PyObject *self, PyObject *v, void *c)
{
    if (!v) {
        PyErr_SetString(PyExc_AttributeError, "cannot delete stop_gradient");
        return -1;
    }
    int b = PyObject_IsTrue(v);
    if (b < 0)
        return -1;
    int rc = fw_tensor_set_stop_gradient(pyc_t(self), b != 0);
    if (rc < 0) {
        pyc_raise(rc);
        return -1;
    }
    return 0;
}

static PyObject *get_grad(PyObject *self, void *c)
{
    fw_tensor *g = fw_tensor_grad(pyc_t(self));
    if (!g)
        Py_RETURN_NONE;
    PyObject *r = pyc_wrap(fw_tensor_ref(g));
    if (r)
        ((PycTensor *)r)->is_grad = 1;
    return r;
}

static PyObject *get_is_grad(PyObject *self, void *c)
{
    return PyBool_FromLong(((PycTensor *)self)->is_grad);
}

static int set_grad(PyObject *self, PyObject *v, void *c)
{
    fw_tensor *g = NULL;
    if (v && v != Py_None && pyc_tensor_arg(v, &g, "grad") < 0)
        return -1;
    int rc = fw_tensor_set_grad(pyc_t(self), g);
    if (rc < 0) {
        pyc_raise(rc);
        return -1;
    }
    return 0;
}

static PyObject *get_name(PyObject *self, void *c)
{
    PycTensor *o = (PycTensor *)self;
    if (!o->name) {
        o->name = PyUnicode_FromFormat("generated_tensor_%llu", g_name_counter++);
        if (!o->name)
            return NULL;
    }
    Py_INCREF(o->name);
    return o->name;
}

static int set_name(PyObject *self, PyObject *v, void *c)
{
    PycTensor *o = (PycTensor *)self;
    if (!v || v == Py_None) {
        Py_CLEAR(o->name);
        return 0;
    }
    if (!PyUnicode_Check(v)) {
        PyErr_SetString(PyExc_TypeError, "name must be a str");
        return -1;
    }
    Py_INCREF(v);
    Py_XSETREF(o->name, v);
    return 0;
}

static PyObject *get_persistable(PyObject *self, void *c)
{
    return PyBool_FromLong(((PycTensor *)self)->persistable);
}

static int set_persistable(PyObject *self, PyObject *v, void *c)
{
    int b = v ? PyObject_IsTrue(v) : 0;
    if (b < 0)
        return -1;
    ((PycTensor *)self)->persistable = (char)b;
    return 0;
}

static PyObject *get_T(PyObject *self, void *c)
{
    fw_tensor *t = pyc_t(self), *r;
    int nd = fw_tensor_ndim(t);
    int perm[FW_MAX_DIMS];
    for (int i = 0; i < nd; i++)
        perm[i] = nd - 1 - i;
    int rc = fw_transpose(&r, t, perm, nd);
    return rc < 0 ? pyc_raise(rc) : pyc_wrap(r);
}

static PyGetSetDef tensor_getset[] = {
    {"shape", get_shape, NULL, "list of dims", NULL},
    {"ndim", get_ndim, NULL, "number of dims", NULL},
    {"size", get_size, NULL, "number of elements", NULL},
    {"dtype", get_dtype, NULL, "data type", NULL},
    {"place", get_place, NULL, "device place", NULL},
    {"is_leaf", get_is_leaf, NULL, "no grad history", NULL},
    {"stop_gradient", get_stop_gradient, set_stop_gradient, "no gradient when True", NULL},
    {"grad", get_grad, set_grad, "accumulated gradient or None", NULL},
    {"_is_grad", get_is_grad, NULL, "whether this came from .grad (printing)", NULL},
    {"name", get_name, set_name, "tensor name", NULL},
    {"persistable", get_persistable, set_persistable, "persistable flag", NULL},
    {"T", get_T, NULL, "axes reversed", NULL},
    {"__dict__", PyObject_GenericGetDict, PyObject_GenericSetDict, "user attributes", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

/* ---- methods ------------------------------------------------------------- */

static PyObject *m_numel(PyObject *self, PyObject *u) { return get_size(self, NULL); }
static PyObject *m_dim(PyObject *self, PyObject *u) { return get_ndim(self, NULL); }
static PyObject *m_is_contiguous(PyObject *self, PyObject *u)
{
    return PyBool_FromLong(fw_tensor_is_contiguous(pyc_t(self)));
}

static PyObject *m_backward(PyObject *self, PyObject *args, PyObject *kw)
{
    static char *kwl[] = {"grad_tensor", "retain_graph", NULL};
    PyObject *g = Py_None;
    int retain = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|Op:backward", kwl, &g, &retain))
        return NULL;
    fw_tensor *gt = NULL;
    if (pyc_tensor_or_none(g, &gt, "grad_tensor") < 0)
        return NULL;
    int rc;
    fw_tensor *t = fw_tensor_ref(pyc_t(self)); /* kept while the GIL is released */
    fw_tensor_ref(gt);
    Py_BEGIN_ALLOW_THREADS
    rc = fw_tensor_backward(t, gt, retain != 0);
    fw_tensor_unref(t);
    fw_tensor_unref(gt);
    Py_END_ALLOW_THREADS
    if (rc < 0)
        return pyc_raise(rc);
    Py_RETURN_NONE;
}

static PyObject *m_clear_grad(PyObject *self, PyObject *args, PyObject *kw)
{
    static char *kwl[] = {"set_to_zero", NULL};
    int z = 1;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|p:clear_grad", kwl, &z))
        return NULL;
    fw_tensor_clear_grad(pyc_t(self), z != 0);
    Py_RETURN_NONE;
}

static PyObject *m_detach(PyObject *self, PyObject *u)
{
    fw_tensor *r;
    int rc = fw_tensor_detach(&r, pyc_t(self));
    return rc < 0 ? pyc_raise(rc) : pyc_wrap(r);
}

static PyObject *m_clone(PyObject *self, PyObject *u)
{
    fw_tensor *r;
    int rc = fw_tensor_clone(&r, pyc_t(self));
    return rc < 0 ? pyc_raise(rc) : pyc_wrap(r);
}

static PyObject *m_contiguous(PyObject *self, PyObject *u)
{
    fw_tensor *r;
    int rc = fw_contiguous(&r, pyc_t(self));
    return rc < 0 ? pyc_raise(rc) : pyc_wrap(r);
}

static PyObject *host_item_of(fw_tensor *t);

/* The value of a 1-element tensor; a device tensor's is copied to the host. */
static PyObject *item_of(fw_tensor *t)
{
    fw_tensor *h;
    int rc = pyc_host(&h, t);
    if (rc < 0)
        return pyc_raise(rc);
    PyObject *r = host_item_of(h);
    fw_tensor_unref(h);
    return r;
}

static PyObject *host_item_of(fw_tensor *t)
{
    if (fw_tensor_numel(t) != 1) {
        char b[128];
        PyErr_Format(PyExc_ValueError,
                     "only a Tensor with exactly one element can be converted to a "
                     "Python scalar, got shape %s", fw_tensor_shape_str(b, sizeof b, t));
        return NULL;
    }
    fw_dtype dt = fw_tensor_dtype(t);
    if (dt == FW_INT64) {
        int64_t v;
        int rc = fw_tensor_copy_to(&v, sizeof v, t);
        return rc < 0 ? pyc_raise(rc) : PyLong_FromLongLong(v);
    }
    if (fw_dtype_is_complex(dt)) {
        double v[2];
        fw_tensor *c = NULL;
        int rc = fw_cast(&c, t, FW_COMPLEX128);
        if (rc == 0)
            rc = fw_tensor_copy_to(v, sizeof v, c);
        fw_tensor_unref(c);
        return rc < 0 ? pyc_raise(rc) : PyComplex_FromDoubles(v[0], v[1]);
    }
    double d;
    int rc = fw_tensor_item(&d, t);
    if (rc < 0)
        return pyc_raise(rc);
    if (dt == FW_BOOL)
        return PyBool_FromLong(d != 0);
    if (!fw_dtype_is_float(dt))
        return PyLong_FromLongLong((long long)d);
    return PyFloat_FromDouble(d);
}

static PyObject *m_item(PyObject *self, PyObject *args)
{
    fw_tensor *t = pyc_t(self);
    if (PyTuple_GET_SIZE(args) > 0) {
        /* item(i): the i-th element in flat order */
        Py_ssize_t i = PyLong_AsSsize_t(PyTuple_GET_ITEM(args, 0));
        if (i == -1 && PyErr_Occurred())
            return NULL;
        int64_t n = fw_tensor_numel(t);
        if (i < 0)
            i += n;
        if (i < 0 || i >= n) {
            PyErr_Format(PyExc_IndexError, "item: index out of range for %lld elements",
                         (long long)n);
            return NULL;
        }
        fw_tensor *flat, *sel;
        int64_t m1 = -1;
        int rc = fw_reshape(&flat, t, &m1, 1);
        if (rc < 0)
            return pyc_raise(rc);
        rc = fw_select(&sel, flat, 0, i);
        fw_tensor_unref(flat);
        if (rc < 0)
            return pyc_raise(rc);
        PyObject *r = item_of(sel);
        fw_tensor_unref(sel);
        return r;
    }
    return item_of(t);
}

static PyObject *m_share(PyObject *self, PyObject *other)
{
    fw_tensor *o;
    if (pyc_tensor_arg(other, &o, "other") < 0)
        return NULL;
    fw_tensor *old = pyc_t(self);
    ((PycTensor *)self)->t = fw_tensor_ref(o);
    fw_tensor_unref(old);
    Py_RETURN_NONE;
}

static PyObject *m_assign(PyObject *self, PyObject *src)
{
    fw_tensor *s = NULL;
    if (pyc_tensor_or_scalar(src, &s, fw_tensor_dtype(pyc_t(self))) < 0)
        return NULL;
    int rc = fw_tensor_assign(pyc_t(self), s);
    fw_tensor_unref(s);
    if (rc < 0)
        return pyc_raise(rc);
    Py_INCREF(self);
    return self;
}

static PyObject *m_fill(PyObject *self, PyObject *v)
{
    double d = PyFloat_AsDouble(v);
    if (d == -1.0 && PyErr_Occurred())
        return NULL;
    int rc = fw_tensor_fill(pyc_t(self), d);
    if (rc < 0)
        return pyc_raise(rc);
    Py_INCREF(self);
    return self;
}

static PyObject *m_zero(PyObject *self, PyObject *u)
{
    int rc = fw_tensor_fill(pyc_t(self), 0.0);
    if (rc < 0)
        return pyc_raise(rc);
    Py_INCREF(self);
    return self;
}

/* The value of the single argument `name`, positional or keyword. */
static PyObject *one_arg(PyObject *const *args, Py_ssize_t nargs, PyObject *kwn,
                         const char *name, const char *fn)
{
    Py_ssize_t nk = kwn ? PyTuple_GET_SIZE(kwn) : 0;
    if (nargs == 1 && nk == 0)
        return args[0];
    if (nargs == 0 && nk == 1 &&
        PyUnicode_CompareWithASCIIString(PyTuple_GET_ITEM(kwn, 0), name) == 0)
        return args[0];
    PyErr_Format(PyExc_TypeError, "%s() takes one argument '%s'", fn, name);
    return NULL;
}

static PyObject *m_astype(PyObject *self, PyObject *const *args, Py_ssize_t n, PyObject *kwn)
{
    PyObject *d = one_arg(args, PyVectorcall_NARGS(n), kwn, "dtype", "astype");
    if (!d)
        return NULL;
    fw_dtype dt;
    if (pyc_dtype_arg(d, &dt) < 0)
        return NULL;
    fw_tensor *r;
    int rc = fw_cast(&r, pyc_t(self), dt);
    return rc < 0 ? pyc_raise(rc) : pyc_wrap(r);
}

static PyObject *m_data_ptr(PyObject *self, PyObject *u)
{
    return PyLong_FromVoidPtr(fw_tensor_data(pyc_t(self)));
}

static PyObject *m_numpy(PyObject *self, PyObject *u)
{
    /* numpy.array(memoryview(t), copy=True); bfloat16 goes through float32 */
    static PyObject *np_array;
    if (!np_array) {
        PyObject *np = PyImport_ImportModule("numpy");
        if (!np)
            return NULL;
        np_array = PyObject_GetAttrString(np, "array");
        Py_DECREF(np);
        if (!np_array)
            return NULL;
    }
    PyObject *src = self;
    Py_INCREF(src);
    if (fw_tensor_device(pyc_t(self)) != FW_CPU) {   /* one copy to the host */
        fw_tensor *h;
        int rc = pyc_host(&h, pyc_t(self));
        Py_DECREF(src);
        if (rc < 0)
            return pyc_raise(rc);
        if (!(src = pyc_wrap(h)))
            return NULL;
    }
    if (fw_tensor_dtype(pyc_t(src)) == FW_BFLOAT16) {
        fw_tensor *f;
        int rc = fw_cast(&f, pyc_t(src), FW_FLOAT32);
        Py_DECREF(src);
        if (rc < 0)
            return pyc_raise(rc);
        src = pyc_wrap(f);
        if (!src)
            return NULL;
    }
    PyObject *mv = PyMemoryView_FromObject(src);
    Py_DECREF(src);
    if (!mv)
        return NULL;
    PyObject *r = PyObject_CallOneArg(np_array, mv);
    Py_DECREF(mv);
    return r;
}

static PyObject *m_reshape(PyObject *self, PyObject *const *args, Py_ssize_t n, PyObject *kwn)
{
    int64_t shape[FW_MAX_DIMS];
    int nd = 0;
    n = PyVectorcall_NARGS(n);
    if (kwn || n == 1) {
        PyObject *so = one_arg(args, n, kwn, "shape", "reshape");
        if (!so || pyc_shape_arg(so, shape, &nd) < 0)
            return NULL;
    } else {
        if (n > FW_MAX_DIMS) {
            PyErr_SetString(PyExc_ValueError, "reshape: too many dims");
            return NULL;
        }
        for (Py_ssize_t i = 0; i < n; i++) {
            shape[i] = PyLong_AsLongLong(args[i]);
            if (PyErr_Occurred())
                return NULL;
        }
        nd = (int)n;
    }
    fw_tensor *r;
    int rc = fw_reshape(&r, pyc_t(self), shape, nd);
    return rc < 0 ? pyc_raise(rc) : pyc_wrap(r);
}

static PyMethodDef tensor_methods[] = {
    {"numel", m_numel, METH_NOARGS, "number of elements"},
    {"dim", m_dim, METH_NOARGS, "number of dims"},
    {"is_contiguous", m_is_contiguous, METH_NOARGS, "contiguous?"},
    {"backward", (PyCFunction)(void (*)(void))m_backward, METH_VARARGS | METH_KEYWORDS,
     "backward(grad_tensor=None, retain_graph=False)"},
    {"clear_grad", (PyCFunction)(void (*)(void))m_clear_grad, METH_VARARGS | METH_KEYWORDS,
     "clear_grad(set_to_zero=True)"},
    {"clear_gradient", (PyCFunction)(void (*)(void))m_clear_grad, METH_VARARGS | METH_KEYWORDS,
     "clear_gradient(set_to_zero=True)"},
    {"detach", m_detach, METH_NOARGS, "detached view"},
    {"clone", m_clone, METH_NOARGS, "differentiable copy"},
    {"contiguous", m_contiguous, METH_NOARGS, "contiguous tensor"},
    {"item", m_item, METH_VARARGS, "Python scalar"},
    {"_share", m_share, METH_O, "rebind to other's data"},
    {"_assign", m_assign, METH_O, "copy values in place"},
    {"fill_", m_fill, METH_O, "fill in place"},
    {"zero_", m_zero, METH_NOARGS, "zero in place"},
    {"astype", PYC_FAST(m_astype), METH_FASTCALL | METH_KEYWORDS, "astype(dtype)"},
    {"cast", PYC_FAST(m_astype), METH_FASTCALL | METH_KEYWORDS, "cast(dtype)"},
    {"_numpy", m_numpy, METH_NOARGS, "numpy copy"},
    {"data_ptr", m_data_ptr, METH_NOARGS, "data address"},
    {"reshape", PYC_FAST(m_reshape), METH_FASTCALL | METH_KEYWORDS, "reshape(shape)"},
    {NULL, NULL, 0, NULL}};

/* ---- number protocol ----------------------------------------------------- */

static PyObject *nb_add(PyObject *a, PyObject *b) { return pyc_binary(PYC_OP_ADD, a, b); }
static PyObject *nb_sub(PyObject *a, PyObject *b) { return pyc_binary(PYC_OP_SUB, a, b); }
static PyObject *nb_mul(PyObject *a, PyObject *b) { return pyc_binary(PYC_OP_MUL, a, b); }
static PyObject *nb_div(PyObject *a, PyObject *b) { return pyc_binary(PYC_OP_DIV, a, b); }
static PyObject *nb_and(PyObject *a, PyObject *b) { return pyc_binary(PYC_OP_AND, a, b); }
static PyObject *nb_or(PyObject *a, PyObject *b) { return pyc_binary(PYC_OP_OR, a, b); }
static PyObject *nb_xor(PyObject *a, PyObject *b) { return pyc_binary(PYC_OP_XOR, a, b); }
static PyObject *nb_pow(PyObject *a, PyObject *b, PyObject *m)
{
    if (m != Py_None)
        Py_RETURN_NOTIMPLEMENTED;
    return pyc_binary(PYC_OP_POW, a, b);
}

static PyObject *nb_matmul(PyObject *a, PyObject *b)
{
    if (!pyc_is_tensor(a) || !pyc_is_tensor(b))
        Py_RETURN_NOTIMPLEMENTED;
    fw_tensor *r;
    int rc = fw_matmul(&r, pyc_t(a), pyc_t(b), false, false);
    return rc < 0 ? pyc_raise(rc) : pyc_wrap(r);
}

static PyObject *nb_neg(PyObject *a)
{
    fw_tensor *r;
    int rc = fw_neg(&r, pyc_t(a));
    return rc < 0 ? pyc_raise(rc) : pyc_wrap(r);
}

static PyObject *nb_pos(PyObject *a)
{
    Py_INCREF(a);
    return a;
}

static PyObject *nb_abs(PyObject *a)
{
    fw_tensor *r;
    int rc = fw_abs(&r, pyc_t(a));
    return rc < 0 ? pyc_raise(rc) : pyc_wrap(r);
}

static PyObject *nb_invert(PyObject *a)
{
    fw_tensor *r;
    int rc = fw_logical_not(&r, pyc_t(a));
    return rc < 0 ? pyc_raise(rc) : pyc_wrap(r);
}

static int nb_bool(PyObject *a)
{
    fw_tensor *t = pyc_t(a);
    if (fw_tensor_numel(t) != 1) {
        char b[128];
        PyErr_Format(PyExc_ValueError,
                     "the truth value of a Tensor with shape %s is ambiguous (use .any() "
                     "or .all())", fw_tensor_shape_str(b, sizeof b, t));
        return -1;
    }
    double d;
    fw_tensor *h;
    int rc = pyc_host(&h, t);
    if (rc == 0) {
        rc = fw_tensor_item(&d, h);
        fw_tensor_unref(h);
    }
    if (rc < 0) {
        pyc_raise(rc);
        return -1;
    }
    return d != 0;
}

static PyObject *nb_float(PyObject *a)
{
    PyObject *v = item_of(pyc_t(a));
    if (!v || PyFloat_CheckExact(v))
        return v;
    PyObject *f = PyNumber_Float(v);
    Py_DECREF(v);
    return f;
}

static PyObject *nb_int(PyObject *a)
{
    PyObject *v = item_of(pyc_t(a));
    if (!v || PyLong_CheckExact(v))
        return v;
    PyObject *i = PyNumber_Long(v);
    Py_DECREF(v);
    return i;
}

static PyObject *nb_index(PyObject *a)
{
    fw_dtype dt = fw_tensor_dtype(pyc_t(a));
    if (fw_dtype_is_float(dt) || dt == FW_BOOL) {
        PyErr_Format(PyExc_TypeError, "only integer Tensors with one element can be used as "
                     "an index, got %s", fw_dtype_name(dt));
        return NULL;
    }
    return nb_int(a);
}

static PyObject *tensor_richcompare(PyObject *a, PyObject *b, int op)
{
    int o;
    switch (op) {
    case Py_EQ: o = PYC_OP_EQ; break;
    case Py_NE: o = PYC_OP_NE; break;
    case Py_LT: o = PYC_OP_LT; break;
    case Py_LE: o = PYC_OP_LE; break;
    case Py_GT: o = PYC_OP_GT; break;
    default: o = PYC_OP_GE; break;
    }
    if (!pyc_is_tensor(a)) {
        /* reflected: b is the tensor; swap the operands and the comparison */
        PyObject *t = a;
        a = b;
        b = t;
        if (o == PYC_OP_LT) o = PYC_OP_GT;
        else if (o == PYC_OP_GT) o = PYC_OP_LT;
        else if (o == PYC_OP_LE) o = PYC_OP_GE;
        else if (o == PYC_OP_GE) o = PYC_OP_LE;
    }
    if (b == Py_None) {
        if (o == PYC_OP_EQ)
            Py_RETURN_FALSE;
        if (o == PYC_OP_NE)
            Py_RETURN_TRUE;
    }
    return pyc_binary(o, a, b);
}

static Py_hash_t tensor_hash(PyObject *a)
{
    Py_hash_t h = (Py_hash_t)((uintptr_t)a >> 4);
    return h == -1 ? -2 : h;
}

static Py_ssize_t tensor_len(PyObject *a)
{
    fw_tensor *t = pyc_t(a);
    if (fw_tensor_ndim(t) == 0) {
        PyErr_SetString(PyExc_TypeError, "len() of a 0-D Tensor");
        return -1;
    }
    return (Py_ssize_t)fw_tensor_shape(t)[0];
}

/* ---- x[idx] for ints, slices, None and Ellipsis --------------------------
 * The common reads run here; anything else (tensors, lists, arrays, bools)
 * goes to the Python fallback (paddle/tensor/indexing.py) registered with
 * _set_getitem_fallback. */

static PyObject *g_getitem_fallback;

PyObject *pyc_set_getitem_fallback(PyObject *self, PyObject *fn)
{
    if (!PyCallable_Check(fn)) {
        PyErr_SetString(PyExc_TypeError, "_set_getitem_fallback expects a callable");
        return NULL;
    }
    Py_INCREF(fn);
    Py_XSETREF(g_getitem_fallback, fn);
    Py_RETURN_NONE;
}

static int is_basic_index(PyObject *k)
{
    return k == Py_None || k == Py_Ellipsis || PySlice_Check(k) ||
           (PyLong_CheckExact(k));
}

/* 1 handled (*out set), 0 not basic, -1 error. */
static int getitem_basic(PyObject **out, fw_tensor *t, PyObject *idx)
{
    PyObject *single[1] = {idx};
    PyObject *const *items = single;
    Py_ssize_t n = 1;
    if (PyTuple_CheckExact(idx)) {
        items = &PyTuple_GET_ITEM(idx, 0);
        n = PyTuple_GET_SIZE(idx);
    }
    int ndim = fw_tensor_ndim(t), consumed = 0, nell = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (!is_basic_index(items[i]))
            return 0;
        if (items[i] == Py_Ellipsis)
            nell++;
        else if (items[i] != Py_None)
            consumed++;
    }
    if (nell > 1 || consumed > ndim)
        return 0; /* the fallback raises the right IndexError */
    fw_tensor *cur = fw_tensor_ref(t), *next;
    int dim = 0, rc = 0;
    for (Py_ssize_t i = 0; i < n && rc == 0; i++) {
        PyObject *k = items[i];
        next = NULL;
        if (k == Py_Ellipsis) {
            dim += ndim - consumed;
            continue;
        }
        if (k == Py_None) {
            rc = fw_unsqueeze(&next, cur, &dim, 1);
            dim++;
        } else if (PySlice_Check(k)) {
            Py_ssize_t start, stop, step;
            if (PySlice_Unpack(k, &start, &stop, &step) < 0) {
                fw_tensor_unref(cur);
                return -1;
            }
            Py_ssize_t len = (Py_ssize_t)fw_tensor_shape(cur)[dim];
            Py_ssize_t cnt = PySlice_AdjustIndices(len, &start, &stop, step);
            if (step == 1 && start == 0 && cnt == len) {
                dim++;
                continue;
            }
            int64_t s0 = start, s1 = stop, st = step;
            if (cnt == 0) {
                s0 = 0;
                s1 = 0;
                st = 1;
            } else if (step < 0 && stop < 0) {
                s1 = -(int64_t)len - 1; /* before the first element */
            }
            rc = fw_slice(&next, cur, &dim, &s0, &s1, &st, 1);
            dim++;
        } else {
            long long v = PyLong_AsLongLong(k);
            if (v == -1 && PyErr_Occurred()) {
                fw_tensor_unref(cur);
                return -1;
            }
            int64_t len = fw_tensor_shape(cur)[dim];
            if (v < -len || v >= len) {
                fw_tensor_unref(cur);
                PyErr_Format(PyExc_IndexError, "index %lld is out of bounds for axis %d with "
                             "size %lld", v, dim, (long long)len);
                return -1;
            }
            rc = fw_select(&next, cur, dim, v < 0 ? v + len : v);
        }
        fw_tensor_unref(cur);
        cur = next;
    }
    if (rc < 0) {
        fw_tensor_unref(cur);
        pyc_raise(rc);
        return -1;
    }
    *out = pyc_wrap(cur);
    return *out ? 1 : -1;
}

static PyObject *tensor_subscript(PyObject *self, PyObject *idx)
{
    PyObject *r = NULL;
    int k = getitem_basic(&r, pyc_t(self), idx);
    if (k != 0)
        return r;
    if (!g_getitem_fallback) {
        PyErr_SetString(PyExc_IndexError, "unsupported index (import paddle first)");
        return NULL;
    }
    return PyObject_CallFunctionObjArgs(g_getitem_fallback, self, idx, NULL);
}

static PyMemberDef tensor_members[] = {
    {"__dictoffset__", T_PYSSIZET, offsetof(PycTensor, dict), READONLY, NULL},
    {"__weaklistoffset__", T_PYSSIZET, offsetof(PycTensor, weakrefs), READONLY, NULL},
    {NULL, 0, 0, 0, NULL}};

static PyType_Slot tensor_slots[] = {
    {Py_tp_members, tensor_members},
    {Py_tp_new, (void *)tensor_new},
    {Py_tp_dealloc, (void *)tensor_dealloc},
    {Py_tp_getset, tensor_getset},
    {Py_tp_methods, tensor_methods},
    {Py_tp_richcompare, (void *)tensor_richcompare},
    {Py_tp_hash, (void *)tensor_hash},
    {Py_tp_doc, (void *)"paddle.Tensor: an n-D array on Eddy's framework"},
    {Py_nb_add, (void *)nb_add},
    {Py_nb_subtract, (void *)nb_sub},
    {Py_nb_multiply, (void *)nb_mul},
    {Py_nb_true_divide, (void *)nb_div},
    {Py_nb_power, (void *)nb_pow},
    {Py_nb_matrix_multiply, (void *)nb_matmul},
    {Py_nb_negative, (void *)nb_neg},
    {Py_nb_positive, (void *)nb_pos},
    {Py_nb_absolute, (void *)nb_abs},
    {Py_nb_invert, (void *)nb_invert},
    {Py_nb_and, (void *)nb_and},
    {Py_nb_or, (void *)nb_or},
    {Py_nb_xor, (void *)nb_xor},
    {Py_nb_bool, (void *)nb_bool},
    {Py_nb_float, (void *)nb_float},
    {Py_nb_int, (void *)nb_int},
    {Py_nb_index, (void *)nb_index},
    {Py_mp_length, (void *)tensor_len},
    {Py_mp_subscript, (void *)tensor_subscript},
    {Py_sq_length, (void *)tensor_len},
    {Py_bf_getbuffer, (void *)tensor_getbuffer},
    {Py_bf_releasebuffer, (void *)tensor_releasebuffer},
    {0, NULL}};

static PyType_Spec tensor_spec = {
    .name = "paddle.Tensor",
    .basicsize = sizeof(PycTensor),
    .itemsize = 0,
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .slots = tensor_slots,
};

int pyc_tensor_type_init(PyObject *module)
{
    PyObject *t = PyType_FromModuleAndSpec(module, &tensor_spec, NULL);
    if (!t)
        return -1;
    pyc_tensor_type = (PyTypeObject *)t;
    Py_INCREF(t); /* the global keeps one */
    if (PyModule_AddObject(module, "Tensor", t) < 0) {
        Py_DECREF(t);
        return -1;
    }
    return 0;
}
