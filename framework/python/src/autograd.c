/*
 * autograd.c - paddle._C functions over the autograd engine's extras in
 * fw/tensor.h: grad (paddle.grad, with create_graph), backward with
 * create_graph, Tensor.register_hook, and custom nodes whose backward is a
 * Python callable (paddle.autograd.PyLayer).
 *
 * Python callbacks run inside the engine, which runs with the GIL released:
 * they take it back with PyGILState_Ensure. An exception a callback raises
 * is kept (thread-local) and re-raised by pyc_raise when the engine returns
 * the error, so users see their own traceback.
 */
#include "pyc.h"

static _Thread_local PyObject *cb_type, *cb_value, *cb_tb;

/* Called with the GIL held and a Python exception set. */
static int keep_callback_error(const char *what)
{
    Py_XDECREF(cb_type);
    Py_XDECREF(cb_value);
    Py_XDECREF(cb_tb);
    PyErr_Fetch(&cb_type, &cb_value, &cb_tb);
    return fw_error_set(FW_EINTERNAL, "%s raised an exception", what);
}

int pyc_restore_callback_error(void)
{
    if (cb_type == NULL)
        return 0;
    PyErr_Restore(cb_type, cb_value, cb_tb);
    cb_type = cb_value = cb_tb = NULL;
    return 1;
}

static void decref_ctx(void *ctx)
{
    PyGILState_STATE st = PyGILState_Ensure();
    Py_XDECREF((PyObject *)ctx);
    PyGILState_Release(st);
}

/* Tensor arguments: a Tensor or a sequence of Tensors -> new array of
 * borrowed pointers (free it). */
static fw_tensor **tensor_list(PyObject *o, int *n, const char *what, int none_ok)
{
    PyObject *seq;
    fw_tensor **v;
    Py_ssize_t len;

    if (pyc_is_tensor(o)) {
        v = PyMem_Malloc(sizeof(*v));
        if (v == NULL)
            return (fw_tensor **)PyErr_NoMemory();
        v[0] = pyc_t(o);
        *n = 1;
        return v;
    }
    if ((seq = PySequence_Fast(o, "expected a Tensor or a list of Tensors")) == NULL)
        return NULL;
    len = PySequence_Fast_GET_SIZE(seq);
    if (len > 1 << 20) {
        Py_DECREF(seq);
        PyErr_Format(PyExc_ValueError, "%s: too many tensors (%zd)", what, len);
        return NULL;
    }
    v = PyMem_Malloc(sizeof(*v) * (size_t)(len ? len : 1));
    if (v == NULL) {
        Py_DECREF(seq);
        return (fw_tensor **)PyErr_NoMemory();
    }
    for (Py_ssize_t i = 0; i < len; i++) {
        PyObject *it = PySequence_Fast_GET_ITEM(seq, i);
        if (none_ok && it == Py_None) {
            v[i] = NULL;
        } else if (pyc_is_tensor(it)) {
            v[i] = pyc_t(it);
        } else {
            PyErr_Format(PyExc_TypeError, "%s[%zd] must be a Tensor, got %s", what, i,
                         Py_TYPE(it)->tp_name);
            PyMem_Free(v);
            Py_DECREF(seq);
            return NULL;
        }
    }
    Py_DECREF(seq);
    *n = (int)len;
    return v;
}

/* grad(outputs, inputs, grad_outputs=None, retain_graph=False,
 *      create_graph=False) -> list (None where an input is not reached) */
static PyObject *f_grad(PyObject *self, PyObject *args, PyObject *kw)
{
    static char *kwl[] = {"outputs", "inputs", "grad_outputs", "retain_graph", "create_graph",
                          NULL};
    PyObject *po, *pi, *pg = Py_None, *res = NULL;
    int retain = 0, create = 0, no = 0, ni = 0, ng = 0, rc;
    fw_tensor **outs = NULL, **ins = NULL, **gos = NULL, **grads = NULL;

    if (!PyArg_ParseTupleAndKeywords(args, kw, "OO|Opp:grad", kwl, &po, &pi, &pg, &retain,
                                     &create))
        return NULL;
    if ((outs = tensor_list(po, &no, "outputs", 0)) == NULL ||
        (ins = tensor_list(pi, &ni, "inputs", 0)) == NULL)
        goto done;
    if (no == 0 || ni == 0) {
        PyErr_SetString(PyExc_ValueError, "grad: outputs and inputs must not be empty");
        goto done;
    }
    if (pg != Py_None) {
        if ((gos = tensor_list(pg, &ng, "grad_outputs", 1)) == NULL)
            goto done;
        if (ng != no) {
            PyErr_Format(PyExc_ValueError, "grad: %d grad_outputs for %d outputs", ng, no);
            goto done;
        }
    }
    if ((grads = PyMem_Calloc((size_t)ni, sizeof(*grads))) == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (int i = 0; i < no; i++)
        fw_tensor_ref(outs[i]);
    for (int i = 0; i < ni; i++)
        fw_tensor_ref(ins[i]);
    for (int i = 0; gos && i < no; i++)
        fw_tensor_ref(gos[i]);
    Py_BEGIN_ALLOW_THREADS
    rc = fw_autograd_grad(grads, no, outs, gos, ni, ins, retain != 0, create != 0);
    Py_END_ALLOW_THREADS
    for (int i = 0; i < no; i++)
        fw_tensor_unref(outs[i]);
    for (int i = 0; i < ni; i++)
        fw_tensor_unref(ins[i]);
    for (int i = 0; gos && i < no; i++)
        fw_tensor_unref(gos[i]);
    if (rc < 0) {
        pyc_raise(rc);
        goto done;
    }
    if ((res = PyList_New(ni)) == NULL)
        goto done;
    for (int i = 0; i < ni; i++) {
        PyObject *t;
        if (grads[i] == NULL) {
            t = Py_NewRef(Py_None);
        } else {
            t = pyc_wrap(grads[i]);
            grads[i] = NULL;
            if (t == NULL) {
                Py_CLEAR(res);
                goto done;
            }
        }
        PyList_SET_ITEM(res, i, t);
    }
done:
    if (grads)
        for (int i = 0; i < ni; i++)
            fw_tensor_unref(grads[i]);
    PyMem_Free(grads);
    PyMem_Free(outs);
    PyMem_Free(ins);
    PyMem_Free(gos);
    return res;
}

/* backward_ex(tensor, grad_tensor=None, retain_graph=False, create_graph=False) */
static PyObject *f_backward_ex(PyObject *self, PyObject *args, PyObject *kw)
{
    static char *kwl[] = {"tensor", "grad_tensor", "retain_graph", "create_graph", NULL};
    PyObject *to, *g = Py_None;
    int retain = 0, create = 0, rc;
    fw_tensor *t, *gt = NULL;

    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|Opp:backward", kwl, &to, &g, &retain,
                                     &create))
        return NULL;
    if (pyc_tensor_arg(to, &t, "tensor") < 0 || pyc_tensor_or_none(g, &gt, "grad_tensor") < 0)
        return NULL;
    fw_tensor_ref(t);
    fw_tensor_ref(gt);
    Py_BEGIN_ALLOW_THREADS
    rc = fw_tensor_backward_ex(t, gt, retain != 0, create != 0);
    fw_tensor_unref(t);
    fw_tensor_unref(gt);
    Py_END_ALLOW_THREADS
    if (rc < 0)
        return pyc_raise(rc);
    Py_RETURN_NONE;
}

/* ---- hooks ----------------------------------------------------------------- */

/* ctx: a list [callable]; the remove helper sets its item to None. */
static int run_py_hook(void *ctx, fw_tensor *grad, fw_tensor **replacement)
{
    PyGILState_STATE st = PyGILState_Ensure();
    PyObject *cell = ctx, *fn = PyList_GET_ITEM(cell, 0), *arg, *r;
    int err = 0;

    if (fn == Py_None)
        goto out;
    if ((arg = pyc_wrap(fw_tensor_ref(grad))) == NULL) {
        err = keep_callback_error("a gradient hook");
        goto out;
    }
    Py_INCREF(fn);
    r = PyObject_CallOneArg(fn, arg);
    Py_DECREF(fn);
    Py_DECREF(arg);
    if (r == NULL) {
        err = keep_callback_error("a gradient hook");
        goto out;
    }
    if (r != Py_None) {
        if (!pyc_is_tensor(r)) {
            PyErr_Format(PyExc_TypeError, "a gradient hook must return a Tensor or None, "
                         "not %s", Py_TYPE(r)->tp_name);
            Py_DECREF(r);
            err = keep_callback_error("a gradient hook");
            goto out;
        }
        *replacement = fw_tensor_ref(pyc_t(r));
    }
    Py_DECREF(r);
out:
    PyGILState_Release(st);
    return err;
}

/* register_hook(tensor, hook) -> the cell list (its [0] = None removes it) */
static PyObject *f_register_hook(PyObject *self, PyObject *args)
{
    PyObject *to, *fn, *cell;
    fw_tensor *t;
    int rc;

    if (!PyArg_ParseTuple(args, "OO:register_hook", &to, &fn))
        return NULL;
    if (pyc_tensor_arg(to, &t, "tensor") < 0)
        return NULL;
    if (!PyCallable_Check(fn)) {
        PyErr_Format(PyExc_TypeError, "register_hook: hook must be callable, got %s",
                     Py_TYPE(fn)->tp_name);
        return NULL;
    }
    if ((cell = PyList_New(1)) == NULL)
        return NULL;
    PyList_SET_ITEM(cell, 0, Py_NewRef(fn));
    Py_INCREF(cell);                       /* the hook's reference */
    if ((rc = fw_tensor_register_hook(t, run_py_hook, cell, decref_ctx)) < 0) {
        Py_DECREF(cell);
        Py_DECREF(cell);
        return pyc_raise(rc);
    }
    return cell;
}

/* ---- custom nodes (PyLayer) ------------------------------------------------ */

/* ctx: a callable backward(*grads) -> Tensor, None, or a tuple/list with
 * one entry (Tensor or None) per input. */
static int run_py_backward(void *ctx, int n_out, fw_tensor *const *gout, int n_in,
                           fw_tensor **gin)
{
    PyGILState_STATE st = PyGILState_Ensure();
    PyObject *args = NULL, *r = NULL, *seq = NULL;
    int err = 0;

    if ((args = PyTuple_New(n_out)) == NULL)
        goto fail;
    for (int j = 0; j < n_out; j++) {
        PyObject *g = pyc_wrap(fw_tensor_ref(gout[j]));
        if (g == NULL)
            goto fail;
        PyTuple_SET_ITEM(args, j, g);
    }
    if ((r = PyObject_Call((PyObject *)ctx, args, NULL)) == NULL)
        goto fail;
    if (pyc_is_tensor(r) || r == Py_None) {
        if ((seq = PyTuple_Pack(1, r)) == NULL)
            goto fail;
    } else if ((seq = PySequence_Tuple(r)) == NULL) {
        goto fail;
    }
    if (PyTuple_GET_SIZE(seq) != n_in) {
        PyErr_Format(PyExc_ValueError, "PyLayer.backward returned %zd gradients for %d "
                     "Tensor inputs of forward", PyTuple_GET_SIZE(seq), n_in);
        goto fail;
    }
    for (int i = 0; i < n_in; i++) {
        PyObject *g = PyTuple_GET_ITEM(seq, i);
        if (g == Py_None)
            continue;
        if (!pyc_is_tensor(g)) {
            PyErr_Format(PyExc_TypeError, "PyLayer.backward: gradient %d must be a Tensor or "
                         "None, not %s", i, Py_TYPE(g)->tp_name);
            goto fail;
        }
        gin[i] = fw_tensor_ref(pyc_t(g));
    }
    goto out;
fail:
    for (int i = 0; i < n_in; i++) {
        fw_tensor_unref(gin[i]);
        gin[i] = NULL;
    }
    err = keep_callback_error("PyLayer.backward");
out:
    Py_XDECREF(args);
    Py_XDECREF(r);
    Py_XDECREF(seq);
    PyGILState_Release(st);
    return err;
}

/* custom_node(backward, inputs, outputs) -> True when recorded */
static PyObject *f_custom_node(PyObject *self, PyObject *args)
{
    PyObject *fn, *pi, *po;
    fw_tensor **ins = NULL, **outs = NULL;
    int ni = 0, no = 0, rc;
    PyObject *res = NULL;

    if (!PyArg_ParseTuple(args, "OOO:custom_node", &fn, &pi, &po))
        return NULL;
    if (!PyCallable_Check(fn)) {
        PyErr_SetString(PyExc_TypeError, "custom_node: backward must be callable");
        return NULL;
    }
    if ((ins = tensor_list(pi, &ni, "inputs", 0)) == NULL ||
        (outs = tensor_list(po, &no, "outputs", 0)) == NULL)
        goto done;
    Py_INCREF(fn);
    rc = fw_custom_node(ni, ins, no, outs, run_py_backward, fn, decref_ctx);
    if (rc <= 0)
        Py_DECREF(fn);
    if (rc < 0)
        pyc_raise(rc);
    else
        res = PyBool_FromLong(rc);
done:
    PyMem_Free(ins);
    PyMem_Free(outs);
    return res;
}

PyMethodDef pyc_autograd_methods[] = {
    {"grad", (PyCFunction)(void (*)(void))f_grad, METH_VARARGS | METH_KEYWORDS,
     "grad(outputs, inputs, grad_outputs=None, retain_graph=False, create_graph=False)"},
    {"backward_ex", (PyCFunction)(void (*)(void))f_backward_ex, METH_VARARGS | METH_KEYWORDS,
     "backward_ex(tensor, grad_tensor=None, retain_graph=False, create_graph=False)"},
    {"register_hook", f_register_hook, METH_VARARGS, "register_hook(tensor, hook) -> handle"},
    {"custom_node", f_custom_node, METH_VARARGS, "custom_node(backward, inputs, outputs)"},
    {NULL, NULL, 0, NULL}};
