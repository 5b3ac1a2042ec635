/*
 * creation.c - paddle._C functions over fw/tensor.h that make tensors:
 * to_tensor, zeros, ones, empty, full, *_like, arange, linspace, eye.
 * Each parses its arguments, calls one fw_* function of fw/tensor.h and wraps
 * the result (signatures: BINDINGS.md).
 */
#include "pyc.h"

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
    pyc_args p;
    if (pyc_shape_dtype_args(&p, args, kw) < 0)
        return NULL;
    fw_tensor *r;
    int rc;
    switch (which) {
    case 0: rc = fw_zeros(&r, p.dtype, p.shape, p.ndim); break;
    case 1: rc = fw_ones(&r, p.dtype, p.shape, p.ndim); break;
    default: rc = fw_tensor_empty(&r, p.dtype, p.shape, p.ndim); break;
    }
    PYC_RET(rc, r);
}
static PyObject *f_zeros(PyObject *s, PyObject *a, PyObject *k) { return creation(a, k, 0); }
static PyObject *f_ones(PyObject *s, PyObject *a, PyObject *k) { return creation(a, k, 1); }
static PyObject *f_empty(PyObject *s, PyObject *a, PyObject *k) { return creation(a, k, 2); }

static PyObject *f_full(PyObject *self, PyObject *args, PyObject *kw)
{
    static char *kwl[] = {"shape", "value", "dtype", NULL};
    pyc_args a;
    double v;
    if (pyc_parse_args(&a, pyc_default_float, args, kw, "Od|O:full", kwl, &a.shape_o, &v, &a.dtype_o) < 0)
        return NULL;
    fw_tensor *r;
    int rc = fw_full(&r, a.dtype, a.shape, a.ndim, v);
    PYC_RET(rc, r);
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
    if (pyc_dtype_or(dto, &dt, fw_tensor_dtype(x)) < 0)
        return NULL;
    if (which == 1)
        v = 1;
    fw_tensor *r;
    int rc = fw_full(&r, dt, fw_tensor_shape(x), fw_tensor_ndim(x), v);
    PYC_RET(rc, r);
}
static PyObject *f_zeros_like(PyObject *s, PyObject *a, PyObject *k) { return like(a, k, 0); }
static PyObject *f_ones_like(PyObject *s, PyObject *a, PyObject *k) { return like(a, k, 1); }
static PyObject *f_full_like(PyObject *s, PyObject *a, PyObject *k) { return like(a, k, 2); }

static PyObject *f_arange(PyObject *self, PyObject *args, PyObject *kw)
{
    static char *kwl[] = {"start", "end", "step", "dtype", NULL};
    double a, b, st = 1;
    pyc_args p;
    if (pyc_parse_args(&p, FW_INT64, args, kw, "dd|dO:arange", kwl, &a, &b, &st, &p.dtype_o) < 0)
        return NULL;
    fw_tensor *r;
    int rc = fw_arange(&r, a, b, st, p.dtype);
    PYC_RET(rc, r);
}

static PyObject *f_linspace(PyObject *self, PyObject *args, PyObject *kw)
{
    static char *kwl[] = {"start", "stop", "num", "dtype", NULL};
    double a, b;
    long long n;
    pyc_args p;
    if (pyc_parse_args(&p, pyc_default_float, args, kw, "ddL|O:linspace", kwl, &a, &b, &n, &p.dtype_o) < 0)
        return NULL;
    fw_tensor *r;
    int rc = fw_linspace(&r, a, b, n, p.dtype);
    PYC_RET(rc, r);
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
    if (pyc_dtype_or(dto, &dt, pyc_default_float) < 0)
        return NULL;
    fw_tensor *r;
    int rc = fw_eye(&r, n, m, dt);
    PYC_RET(rc, r);
}

PyMethodDef pyc_creation_methods[] = {
    {"to_tensor", PYC_FAST(f_to_tensor), PYC_KW, NULL},
    {"zeros", PYC_FAST(f_zeros), PYC_KW, NULL},
    {"ones", PYC_FAST(f_ones), PYC_KW, NULL},
    {"empty", PYC_FAST(f_empty), PYC_KW, NULL},
    {"full", PYC_FAST(f_full), PYC_KW, NULL},
    {"zeros_like", PYC_FAST(f_zeros_like), PYC_KW, NULL},
    {"ones_like", PYC_FAST(f_ones_like), PYC_KW, NULL},
    {"full_like", PYC_FAST(f_full_like), PYC_KW, NULL},
    {"arange", PYC_FAST(f_arange), PYC_KW, NULL},
    {"linspace", PYC_FAST(f_linspace), PYC_KW, NULL},
    {"eye", PYC_FAST(f_eye), PYC_KW, NULL},
    {NULL, NULL, 0, NULL}};
