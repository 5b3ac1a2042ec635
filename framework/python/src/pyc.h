/*
 * pyc.h - shared declarations of the paddle._C extension (framework/python/src).
 *
 * The extension is a thin CPython layer over the framework's C API
 * (fw/fw.h): a Tensor type holding one fw_tensor reference, and module
 * functions that parse Python arguments, call one fw_* function and wrap the
 * result. Framework errors become Python exceptions carrying
 * fw_error_last(); nothing aborts the interpreter. See BINDINGS.md.
 */
#ifndef PYC_H
#define PYC_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "fw/fw.h"

typedef struct {
    PyObject_HEAD
    fw_tensor *t;        /* one reference, never NULL after construction */
    PyObject *name;      /* str or NULL (generated lazily) */
    PyObject *dict;      /* user attributes (like Paddle's Tensor), lazily */
    PyObject *weakrefs;  /* weak references list */
    char persistable;
} PycTensor;

extern PyTypeObject *pyc_tensor_type;

/* Wrap t (reference stolen) in a new Tensor; NULL t -> NULL. */
PyObject *pyc_wrap(fw_tensor *t);
/* Raise the Python exception for framework code rc (rc < 0); returns NULL. */
PyObject *pyc_raise(int rc);
/* Whether o is a Tensor (or subclass). */
static inline int pyc_is_tensor(PyObject *o)
{
    return Py_TYPE(o) == pyc_tensor_type || PyType_IsSubtype(Py_TYPE(o), pyc_tensor_type);
}
static inline fw_tensor *pyc_t(PyObject *o) { return ((PycTensor *)o)->t; }

/* Argument helpers: 0 on success, -1 with a Python exception set. */
int pyc_tensor_arg(PyObject *o, fw_tensor **out, const char *what);     /* borrowed */
int pyc_tensor_or_none(PyObject *o, fw_tensor **out, const char *what); /* NULL for None */
int pyc_dtype_arg(PyObject *o, fw_dtype *out);
int pyc_shape_arg(PyObject *o, int64_t *shape, int *ndim);
/* None -> naxes 0; int or sequence of ints. */
int pyc_axes_arg(PyObject *o, int *axes, int *naxes);
int pyc_int64_list(PyObject *o, int64_t *vals, int max, int *n, const char *what);
/* A Tensor, or a Python scalar made into a 0-D tensor of dtype `dt`
 * (new reference in *out). */
int pyc_tensor_or_scalar(PyObject *o, fw_tensor **out, fw_dtype dt);
int pyc_reduction_arg(PyObject *o, fw_reduction *out);
int pyc_bool_arg(PyObject *o, bool *out);
PyObject *pyc_dtype_object(fw_dtype dt);
PyObject *pyc_place_object(void);
/* The dtype Python scalars become: float32 default (paddle.get_default_dtype). */
extern fw_dtype pyc_default_float;

/* Binary op with scalar support used by the number protocol and module
 * functions; op is one of the PYC_OP_* codes. */
enum {
    PYC_OP_ADD, PYC_OP_SUB, PYC_OP_MUL, PYC_OP_DIV, PYC_OP_POW, PYC_OP_MAX, PYC_OP_MIN,
    PYC_OP_EQ, PYC_OP_NE, PYC_OP_LT, PYC_OP_LE, PYC_OP_GT, PYC_OP_GE,
    PYC_OP_AND, PYC_OP_OR, PYC_OP_XOR
};
PyObject *pyc_binary(int op, PyObject *a, PyObject *b);

int pyc_tensor_type_init(PyObject *module);
int pyc_optim_init(PyObject *module);
extern PyMethodDef pyc_module_methods[];

#define PYC_FAST(fn) ((PyCFunction)(void (*)(void))(fn))

#endif
