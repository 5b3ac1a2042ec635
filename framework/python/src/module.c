/*
 * module.c - the paddle._C module: functions from ops.c, nn.c and optim.c
 * and the Tensor type from tensor.c.
 */
#include "pyc.h"

extern PyMethodDef pyc_nn_methods[];

static struct PyModuleDef pyc_module = {
    PyModuleDef_HEAD_INIT, "paddle._C",
    "Eddy's paddle C extension over the framework (fw_*): see BINDINGS.md", -1,
    pyc_module_methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__C(void);
PyMODINIT_FUNC PyInit__C(void)
{
    PyObject *m = PyModule_Create(&pyc_module);
    if (!m)
        return NULL;
    if (PyModule_AddFunctions(m, pyc_nn_methods) < 0 || pyc_tensor_type_init(m) < 0 ||
        pyc_optim_init(m) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
