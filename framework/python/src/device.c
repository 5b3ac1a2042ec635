/*
 * device.c - paddle._C functions over fw/device.h: which devices exist, the
 * default and current device, synchronisation, properties and the caching
 * allocator's counters; tensor_to (fw_tensor_to) for Tensor.cuda()/.cpu();
 * and the two helpers the rest of the extension uses for tensors that may
 * live on a GPU: pyc_host (a CPU copy before reading values) and
 * pyc_place_of (the Tensor.place object). Device arguments are 0 / 'cpu'
 * (FW_CPU) or 1 / 'gpu' / 'cuda' (FW_CUDA). Signatures: BINDINGS.md.
 */
#include "pyc.h"

#include <string.h>

/* paddle.framework.place._place_of(kind, index), registered at import. */
static PyObject *g_place_fn;

static int dev_arg(PyObject *o, fw_device *out)
{
    if (PyLong_Check(o)) {
        long v = PyLong_AsLong(o);
        if (v == -1 && PyErr_Occurred())
            return -1;
        if (v == FW_CPU || v == FW_CUDA) {
            *out = (fw_device)v;
            return 0;
        }
    } else if (PyUnicode_Check(o)) {
        const char *s = PyUnicode_AsUTF8(o);
        if (!s)
            return -1;
        if (strcmp(s, "cpu") == 0) {
            *out = FW_CPU;
            return 0;
        }
        if (strcmp(s, "gpu") == 0 || strcmp(s, "cuda") == 0) {
            *out = FW_CUDA;
            return 0;
        }
    }
    PyErr_Format(PyExc_ValueError, "device must be 0/'cpu' or 1/'gpu', got %R", o);
    return -1;
}

/* (dev[, index=-1]) with index -1 meaning the current device of dev. */
static int dev_index_args(PyObject *args, const char *name, fw_device *dev, int *index)
{
    PyObject *d;
    int i = -1;
    char fmt[64];
    snprintf(fmt, sizeof fmt, "O|i:%s", name);
    if (!PyArg_ParseTuple(args, fmt, &d, &i) || dev_arg(d, dev) < 0)
        return -1;
    *index = i;
    return 0;
}

int pyc_host(fw_tensor **out, fw_tensor *t)
{
    if (fw_tensor_device(t) == FW_CPU) {
        *out = fw_tensor_ref(t);
        return 0;
    }
    bool was = fw_set_grad_enabled(false);
    int rc = fw_tensor_to(out, t, FW_CPU);
    fw_set_grad_enabled(was);
    return rc;
}

PyObject *pyc_place_of(const fw_tensor *t)
{
    fw_device dev = fw_tensor_device(t);
    if (dev == FW_CPU || !g_place_fn)
        return pyc_place_object();
    return PyObject_CallFunction(g_place_fn, "ii", (int)dev, fw_device_current(dev));
}

static PyObject *f_register_place_fn(PyObject *self, PyObject *fn)
{
    if (!PyCallable_Check(fn)) {
        PyErr_SetString(PyExc_TypeError, "_register_place_fn: expected a callable");
        return NULL;
    }
    Py_INCREF(fn);
    Py_XSETREF(g_place_fn, fn);
    Py_RETURN_NONE;
}

static PyObject *f_compiled(PyObject *self, PyObject *arg)
{
    fw_device d;
    if (dev_arg(arg, &d) < 0)
        return NULL;
    return PyBool_FromLong(fw_device_compiled(d));
}

static PyObject *f_count(PyObject *self, PyObject *arg)
{
    fw_device d;
    if (dev_arg(arg, &d) < 0)
        return NULL;
    return PyLong_FromLong(fw_device_count(d));
}

static PyObject *f_reason(PyObject *self, PyObject *arg)
{
    fw_device d;
    if (dev_arg(arg, &d) < 0)
        return NULL;
    const char *r = fw_device_unavailable_reason(d);
    return PyUnicode_DecodeUTF8(r ? r : "", r ? (Py_ssize_t)strlen(r) : 0, "replace");
}

static PyObject *f_set_default(PyObject *self, PyObject *arg)
{
    fw_device d;
    if (dev_arg(arg, &d) < 0)
        return NULL;
    int rc = fw_device_set_default(d);
    if (rc < 0)
        return pyc_raise(rc);
    Py_RETURN_NONE;
}

static PyObject *f_default(PyObject *self, PyObject *u)
{
    return PyLong_FromLong((long)fw_device_default());
}

static PyObject *f_set_current(PyObject *self, PyObject *args)
{
    fw_device d;
    int i;
    if (dev_index_args(args, "device_set_current", &d, &i) < 0)
        return NULL;
    int rc = fw_device_set_current(d, i);
    if (rc < 0)
        return pyc_raise(rc);
    Py_RETURN_NONE;
}

static PyObject *f_current(PyObject *self, PyObject *arg)
{
    fw_device d;
    if (dev_arg(arg, &d) < 0)
        return NULL;
    return PyLong_FromLong(fw_device_current(d));
}

static PyObject *f_synchronize(PyObject *self, PyObject *args)
{
    fw_device d;
    int i, rc;
    if (dev_index_args(args, "device_synchronize", &d, &i) < 0)
        return NULL;
    Py_BEGIN_ALLOW_THREADS
    rc = fw_device_synchronize(d, i);
    Py_END_ALLOW_THREADS
    if (rc < 0)
        return pyc_raise(rc);
    Py_RETURN_NONE;
}

static PyObject *f_properties(PyObject *self, PyObject *args)
{
    fw_device d;
    int i;
    fw_device_props p;
    if (dev_index_args(args, "device_properties", &d, &i) < 0)
        return NULL;
    if (i < 0)
        i = fw_device_current(d);
    memset(&p, 0, sizeof p);
    int rc = fw_device_properties(d, i, &p);
    if (rc < 0)
        return pyc_raise(rc);
    p.name[sizeof p.name - 1] = '\0';
    return Py_BuildValue("{s:N,s:i,s:i,s:i,s:K}", "name",
                         PyUnicode_DecodeUTF8(p.name, (Py_ssize_t)strlen(p.name), "replace"),
                         "major", p.major, "minor", p.minor, "multi_processor_count",
                         p.multi_processor_count, "total_memory",
                         (unsigned long long)p.total_memory);
}

static PyObject *f_memory_stats(PyObject *self, PyObject *args)
{
    fw_device d;
    int i;
    fw_device_memory m;
    if (dev_index_args(args, "device_memory_stats", &d, &i) < 0)
        return NULL;
    memset(&m, 0, sizeof m);
    int rc = fw_device_memory_stats(d, i, &m);
    if (rc < 0)
        return pyc_raise(rc);
    return Py_BuildValue("{s:K,s:K,s:K,s:K}", "allocated", (unsigned long long)m.allocated,
                         "peak_allocated", (unsigned long long)m.peak_allocated, "reserved",
                         (unsigned long long)m.reserved, "peak_reserved",
                         (unsigned long long)m.peak_reserved);
}

static PyObject *f_reset_peak(PyObject *self, PyObject *args)
{
    fw_device d;
    int i;
    if (dev_index_args(args, "device_reset_peak", &d, &i) < 0)
        return NULL;
    int rc = fw_device_reset_peak(d, i);
    if (rc < 0)
        return pyc_raise(rc);
    Py_RETURN_NONE;
}

static PyObject *f_empty_cache(PyObject *self, PyObject *arg)
{
    fw_device d;
    if (dev_arg(arg, &d) < 0)
        return NULL;
    int rc = fw_device_empty_cache(d);
    if (rc < 0)
        return pyc_raise(rc);
    Py_RETURN_NONE;
}

static PyObject *f_tensor_to(PyObject *self, PyObject *args)
{
    PyObject *xo, *d;
    fw_tensor *x, *r;
    fw_device dev;
    if (!PyArg_ParseTuple(args, "OO:tensor_to", &xo, &d) || pyc_tensor_arg(xo, &x, "x") < 0 ||
        dev_arg(d, &dev) < 0)
        return NULL;
    int rc = fw_tensor_to(&r, x, dev);
    PYC_RET(rc, r);
}

PyMethodDef pyc_device_methods[] = {
    {"_register_place_fn", f_register_place_fn, METH_O, NULL},
    {"device_compiled", f_compiled, METH_O, NULL},
    {"device_count", f_count, METH_O, NULL},
    {"device_unavailable_reason", f_reason, METH_O, NULL},
    {"device_set_default", f_set_default, METH_O, NULL},
    {"device_default", f_default, METH_NOARGS, NULL},
    {"device_set_current", f_set_current, METH_VARARGS, NULL},
    {"device_current", f_current, METH_O, NULL},
    {"device_synchronize", f_synchronize, METH_VARARGS, NULL},
    {"device_properties", f_properties, METH_VARARGS, NULL},
    {"device_memory_stats", f_memory_stats, METH_VARARGS, NULL},
    {"device_reset_peak", f_reset_peak, METH_VARARGS, NULL},
    {"device_empty_cache", f_empty_cache, METH_O, NULL},
    {"tensor_to", f_tensor_to, METH_VARARGS, NULL},
    {NULL, NULL, 0, NULL}};
