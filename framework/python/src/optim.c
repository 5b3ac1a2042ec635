/*
 * optim.c - paddle._C.Optimizer over fw/optim.h (fused SGD, Momentum, Adam,
 * AdamW kernels) and clip_grad_by_global_norm. Python optimizers
 * (paddle/optimizer, pylayer) hold one and call step().
 */
#include "pyc.h"

#include <string.h>

typedef struct {
    PyObject_HEAD
    fw_optim *o;
} PycOptim;

static PyObject *optim_new(PyTypeObject *type, PyObject *args, PyObject *kw)
{
    static char *kwl[] = {"kind", "params", "lr", "momentum", "nesterov", "beta1", "beta2",
                          "epsilon", "weight_decay", "clip_norm", NULL};
    const char *kind;
    PyObject *po, *wdo = Py_None;
    double lr = 0.001, mom = 0.9, b1 = 0.9, b2 = 0.999, eps = 1e-8, clip = 0.0;
    int nest = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "sO|ddpdddOd:Optimizer", kwl, &kind, &po, &lr, &mom,
                                     &nest, &b1, &b2, &eps, &wdo, &clip))
        return NULL;
    fw_optim_kind k;
    if (strcmp(kind, "sgd") == 0) k = FW_OPTIM_SGD;
    else if (strcmp(kind, "momentum") == 0) k = FW_OPTIM_MOMENTUM;
    else if (strcmp(kind, "adam") == 0) k = FW_OPTIM_ADAM;
    else if (strcmp(kind, "adamw") == 0) k = FW_OPTIM_ADAMW;
    else {
        PyErr_Format(PyExc_ValueError, "Optimizer: kind must be sgd, momentum, adam or adamw, "
                     "got '%s'", kind);
        return NULL;
    }
    fw_optim_config c;
    fw_optim_config_default(&c, k);
    c.lr = lr;
    c.momentum = mom;
    c.nesterov = nest != 0;
    c.beta1 = b1;
    c.beta2 = b2;
    c.epsilon = eps;
    c.clip_norm = clip;
    if (wdo != Py_None) {
        c.weight_decay = PyFloat_AsDouble(wdo);
        if (c.weight_decay == -1.0 && PyErr_Occurred())
            return NULL;
    }
    PyObject *seq = PySequence_Fast(po, "params must be a list of Tensors");
    if (!seq)
        return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    fw_tensor **ps = PyMem_Malloc(sizeof(fw_tensor *) * (size_t)(n ? n : 1));
    if (!ps) {
        Py_DECREF(seq);
        return PyErr_NoMemory();
    }
    for (Py_ssize_t i = 0; i < n; i++)
        if (pyc_tensor_arg(PySequence_Fast_GET_ITEM(seq, i), &ps[i], "param") < 0) {
            PyMem_Free(ps);
            Py_DECREF(seq);
            return NULL;
        }
    fw_optim *o;
    int rc = fw_optim_new(&o, &c, ps, (size_t)n);
    PyMem_Free(ps);
    Py_DECREF(seq);
    if (rc < 0)
        return pyc_raise(rc);
    PycOptim *self = (PycOptim *)type->tp_alloc(type, 0);
    if (!self) {
        fw_optim_free(o);
        return NULL;
    }
    self->o = o;
    return (PyObject *)self;
}

static void optim_dealloc(PyObject *self)
{
    PyTypeObject *tp = Py_TYPE(self);
    fw_optim_free(((PycOptim *)self)->o);
    tp->tp_free(self);
    Py_DECREF(tp);
}

#define OPT(self) (((PycOptim *)(self))->o)

static PyObject *o_step(PyObject *self, PyObject *u)
{
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = fw_optim_step(OPT(self));
    Py_END_ALLOW_THREADS
    if (rc < 0)
        return pyc_raise(rc);
    Py_RETURN_NONE;
}

static PyObject *o_clear_grad(PyObject *self, PyObject *args, PyObject *kw)
{
    static char *kwl[] = {"set_to_zero", NULL};
    int z = 1;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|p:clear_grad", kwl, &z))
        return NULL;
    fw_optim_clear_grad(OPT(self), z != 0);
    Py_RETURN_NONE;
}

static PyObject *o_get_lr(PyObject *self, PyObject *u)
{
    return PyFloat_FromDouble(fw_optim_get_lr(OPT(self)));
}

static PyObject *o_set_lr(PyObject *self, PyObject *v)
{
    double lr = PyFloat_AsDouble(v);
    if (lr == -1.0 && PyErr_Occurred())
        return NULL;
    int rc = fw_optim_set_lr(OPT(self), lr);
    if (rc < 0)
        return pyc_raise(rc);
    Py_RETURN_NONE;
}

static PyObject *o_set_flag(PyObject *self, PyObject *args, int which)
{
    Py_ssize_t i;
    PyObject *v;
    if (!PyArg_ParseTuple(args, "nO", &i, &v))
        return NULL;
    if (i < 0) {
        PyErr_SetString(PyExc_IndexError, "param index must be >= 0");
        return NULL;
    }
    int rc;
    if (which == 2) {
        double s = PyFloat_AsDouble(v);
        if (s == -1.0 && PyErr_Occurred())
            return NULL;
        rc = fw_optim_set_lr_scale(OPT(self), (size_t)i, s);
    } else {
        int b = PyObject_IsTrue(v);
        if (b < 0)
            return NULL;
        rc = which == 0 ? fw_optim_set_decay(OPT(self), (size_t)i, b != 0)
                        : fw_optim_set_need_clip(OPT(self), (size_t)i, b != 0);
    }
    if (rc < 0)
        return pyc_raise(rc);
    Py_RETURN_NONE;
}
static PyObject *o_set_decay(PyObject *s, PyObject *a) { return o_set_flag(s, a, 0); }
static PyObject *o_set_need_clip(PyObject *s, PyObject *a) { return o_set_flag(s, a, 1); }
static PyObject *o_set_lr_scale(PyObject *s, PyObject *a) { return o_set_flag(s, a, 2); }

static PyObject *o_nparams(PyObject *self, PyObject *u)
{
    return PyLong_FromSize_t(fw_optim_nparams(OPT(self)));
}

static PyObject *o_state_names(PyObject *self, PyObject *u)
{
    size_t n = 0;
    const char *const *names = fw_optim_state_names(OPT(self), &n);
    PyObject *l = PyList_New((Py_ssize_t)n);
    for (size_t i = 0; l && i < n; i++) {
        PyObject *s = PyUnicode_FromString(names[i]);
        if (!s) {
            Py_CLEAR(l);
            break;
        }
        PyList_SET_ITEM(l, (Py_ssize_t)i, s);
    }
    return l;
}

static PyObject *o_state_get(PyObject *self, PyObject *args)
{
    Py_ssize_t i;
    const char *name;
    if (!PyArg_ParseTuple(args, "ns:state_get", &i, &name))
        return NULL;
    if (i < 0 || (size_t)i >= fw_optim_nparams(OPT(self))) {
        PyErr_Format(PyExc_IndexError, "state_get: param index %zd out of range", i);
        return NULL;
    }
    fw_tensor *t;
    int rc = fw_optim_state_get(&t, OPT(self), (size_t)i, name);
    if (rc == FW_ERANGE) {
        fw_error_clear();
        Py_RETURN_NONE; /* not stepped yet */
    }
    if (rc < 0)
        return pyc_raise(rc);
    return pyc_wrap(t);
}

static PyObject *o_state_set(PyObject *self, PyObject *args)
{
    Py_ssize_t i;
    const char *name;
    PyObject *vo;
    if (!PyArg_ParseTuple(args, "nsO:state_set", &i, &name, &vo))
        return NULL;
    fw_tensor *v;
    if (i < 0) {
        PyErr_SetString(PyExc_IndexError, "param index must be >= 0");
        return NULL;
    }
    if (pyc_tensor_or_scalar(vo, &v, FW_FLOAT32) < 0)
        return NULL;
    int rc = fw_optim_state_set(OPT(self), (size_t)i, name, v);
    fw_tensor_unref(v);
    if (rc < 0)
        return pyc_raise(rc);
    Py_RETURN_NONE;
}

static PyMethodDef optim_methods[] = {
    {"step", o_step, METH_NOARGS, "update every param with a grad"},
    {"clear_grad", (PyCFunction)(void (*)(void))o_clear_grad, METH_VARARGS | METH_KEYWORDS,
     "clear_grad(set_to_zero=True)"},
    {"get_lr", o_get_lr, METH_NOARGS, "current lr"},
    {"set_lr", o_set_lr, METH_O, "set a constant lr"},
    {"set_decay", o_set_decay, METH_VARARGS, "set_decay(i, bool)"},
    {"set_need_clip", o_set_need_clip, METH_VARARGS, "set_need_clip(i, bool)"},
    {"set_lr_scale", o_set_lr_scale, METH_VARARGS, "set_lr_scale(i, scale)"},
    {"nparams", o_nparams, METH_NOARGS, "number of params"},
    {"state_names", o_state_names, METH_NOARGS, "accumulator names"},
    {"state_get", o_state_get, METH_VARARGS, "state_get(i, name) -> Tensor or None"},
    {"state_set", o_state_set, METH_VARARGS, "state_set(i, name, tensor)"},
    {NULL, NULL, 0, NULL}};

static PyType_Slot optim_slots[] = {
    {Py_tp_new, (void *)optim_new},
    {Py_tp_dealloc, (void *)optim_dealloc},
    {Py_tp_methods, optim_methods},
    {Py_tp_doc, (void *)"fused optimizer over fw/optim.h"},
    {0, NULL}};

static PyType_Spec optim_spec = {
    .name = "paddle._C.Optimizer",
    .basicsize = sizeof(PycOptim),
    .flags = Py_TPFLAGS_DEFAULT,
    .slots = optim_slots,
};

static PyObject *f_clip_global(PyObject *self, PyObject *args)
{
    PyObject *po;
    double clip;
    if (!PyArg_ParseTuple(args, "Od:clip_grad_by_global_norm", &po, &clip))
        return NULL;
    PyObject *seq = PySequence_Fast(po, "params must be a list of Tensors");
    if (!seq)
        return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    fw_tensor **ps = PyMem_Malloc(sizeof(fw_tensor *) * (size_t)(n ? n : 1));
    if (!ps) {
        Py_DECREF(seq);
        return PyErr_NoMemory();
    }
    for (Py_ssize_t i = 0; i < n; i++)
        if (pyc_tensor_arg(PySequence_Fast_GET_ITEM(seq, i), &ps[i], "param") < 0) {
            PyMem_Free(ps);
            Py_DECREF(seq);
            return NULL;
        }
    double norm = 0;
    int rc = fw_clip_grad_by_global_norm(&norm, ps, (size_t)n, clip);
    PyMem_Free(ps);
    Py_DECREF(seq);
    if (rc < 0)
        return pyc_raise(rc);
    return PyFloat_FromDouble(norm);
}

static PyMethodDef optim_funcs[] = {
    {"clip_grad_by_global_norm", f_clip_global, METH_VARARGS, NULL},
    {NULL, NULL, 0, NULL}};

int pyc_optim_init(PyObject *module)
{
    PyObject *t = PyType_FromModuleAndSpec(module, &optim_spec, NULL);
    if (!t)
        return -1;
    if (PyModule_AddObject(module, "Optimizer", t) < 0) {
        Py_DECREF(t);
        return -1;
    }
    return PyModule_AddFunctions(module, optim_funcs);
}
