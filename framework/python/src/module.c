/*
 * module.c - the paddle._C module: the Tensor type (tensor.c), one function
 * table per framework header (creation.c, random.c, ops.c, index.c, nn.c),
 * the Optimizer type (optim.c), and the functions below (grad mode, dtype
 * codes, the hooks paddle/framework registers at import).
 */
#include "pyc.h"

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

PyMethodDef pyc_module_methods[] = {
    {"_register_dtypes", pyc_register_dtypes, METH_O, NULL},
    {"_register_place", pyc_register_place, METH_O, NULL},
    {"_set_default_float", pyc_set_default_float, METH_O, NULL},
    {"_set_getitem_fallback", pyc_set_getitem_fallback, METH_O, NULL},
    {"dtype_code", f_dtype_code, METH_O, NULL},
    {"is_tensor", f_is_tensor, METH_O, NULL},
    {"is_grad_enabled", f_is_grad_enabled, METH_NOARGS, NULL},
    {"set_grad_enabled", f_set_grad_enabled, METH_O, NULL},
    {NULL, NULL, 0, NULL}};


static struct PyModuleDef pyc_module = {
    PyModuleDef_HEAD_INIT, "paddle._C",
    "Eddy's paddle C extension over the framework (fw_*): see BINDINGS.md", -1,
    pyc_module_methods, NULL, NULL, NULL, NULL};

/*
 * The same sources are linked two ways: as the extension file paddle/_C*.so
 * (Debian's python3) and into eddy-kernel as the built-in "paddle._C". Each
 * copy has its own statics (the Tensor type, the default dtype), and an
 * extension file loaded into eddy-kernel could bind its eddy_framework calls
 * to the executable's exported ones, so two copies must never both run in a
 * process. The first copy to initialise records the address of its marker
 * in the main interpreter's dict; any other copy then fails with ImportError.
 * eddy-kernel never gets there (its import finder resolves "paddle._C" to
 * the built-in); this turns a mistake into a clear error instead of two
 * diverging Tensor types.
 */
static const char pyc_copy_marker = 0;

static int claim_process(void)
{
    PyObject *d = PyInterpreterState_GetDict(PyInterpreterState_Main());
    PyObject *mine, *owner;
    int rc = 0;

    if (d == NULL) {
        PyErr_SetString(PyExc_ImportError, "paddle._C: no interpreter dict to register in");
        return -1;
    }
    if ((mine = PyLong_FromVoidPtr((void *)&pyc_copy_marker)) == NULL)
        return -1;
    owner = PyDict_GetItemString(d, "paddle._C.copy");   /* borrowed */
    if (owner == NULL) {
        rc = PyDict_SetItemString(d, "paddle._C.copy", mine);
    } else if (PyObject_RichCompareBool(owner, mine, Py_EQ) != 1) {
        PyErr_SetString(PyExc_ImportError,
                        "paddle._C: another copy of the extension is already initialised in "
                        "this process (eddy-kernel has it built in); not loading a second one");
        rc = -1;
    }
    Py_DECREF(mine);
    return rc;
}

PyMODINIT_FUNC PyInit__C(void);
PyMODINIT_FUNC PyInit__C(void)
{
    PyObject *m;

    if (claim_process() < 0)
        return NULL;
    m = PyModule_Create(&pyc_module);
    if (!m)
        return NULL;
    if (PyModule_AddFunctions(m, pyc_creation_methods) < 0 ||
        PyModule_AddFunctions(m, pyc_random_methods) < 0 ||
        PyModule_AddFunctions(m, pyc_ops_methods) < 0 ||
        PyModule_AddFunctions(m, pyc_index_methods) < 0 ||
        PyModule_AddFunctions(m, pyc_nn_methods) < 0 ||
        PyModule_AddFunctions(m, pyc_autograd_methods) < 0 ||
        PyModule_AddFunctions(m, pyc_complex_methods) < 0 ||
        PyModule_AddFunctions(m, pyc_device_methods) < 0 || pyc_tensor_type_init(m) < 0 ||
        pyc_optim_init(m) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
