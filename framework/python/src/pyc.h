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
    char is_grad;        /* returned by .grad: prints stop_gradient=False like Paddle */
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
/* (axes, starts, ends, steps=None) lists of one length n (steps default 1). */
int pyc_slice_args(PyObject *ax, PyObject *st, PyObject *en, PyObject *sp, int *axes,
                   int64_t *starts, int64_t *ends, int64_t *steps, int *n);
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

/* `dtype=None` arguments: None (or NULL) -> dflt, else pyc_dtype_arg. */
int pyc_dtype_or(PyObject *o, fw_dtype *out, fw_dtype dflt);
/* Parsed arguments with a dtype and, for some functions, a shape. */
typedef struct {
    PyObject *shape_o;           /* filled by the format when it has a shape */
    PyObject *dtype_o;           /* filled by the format; None when not given */
    int64_t shape[FW_MAX_DIMS];
    int ndim;
    fw_dtype dtype;
} pyc_args;
/* PyArg_ParseTupleAndKeywords(args, kw, fmt, kwl, ...), where the pointers
 * `...` include &a->dtype_o and, for a shape, &a->shape_o; then the shape (if
 * the format filled one) as pyc_shape_arg into a->shape/a->ndim, then the
 * dtype as pyc_dtype_or(a->dtype_o, &a->dtype, dflt). 0, or -1 with an
 * exception set. */
int pyc_parse_args(pyc_args *a, fw_dtype dflt, PyObject *args, PyObject *kw, const char *fmt,
                   char **kwl, ...);
/* The (shape, dtype=None) arguments of zeros, ones, empty, rand and randn;
 * dtype None is pyc_default_float. */
int pyc_shape_dtype_args(pyc_args *a, PyObject *args, PyObject *kw);
/* A Tensor from an object with the buffer protocol (numpy arrays): 1 and a new
 * reference in *out, 0 when o has no buffer, -1 with an exception set. */
int pyc_from_buffer(fw_tensor **out, PyObject *o);

/* Module hooks paddle/framework calls once at import (common.c, tensor.c). */
PyObject *pyc_register_dtypes(PyObject *self, PyObject *arg);
PyObject *pyc_register_place(PyObject *self, PyObject *arg);
PyObject *pyc_set_default_float(PyObject *self, PyObject *arg);
PyObject *pyc_set_getitem_fallback(PyObject *self, PyObject *fn);

/* The module's functions, one table per framework header (module.c adds
 * them all): creation.c (fw/tensor.h), random.c, ops.c, index.c, nn.c
 * (fw/nn.h and fw/init.h); optim.c adds the Optimizer type and its functions. */
extern PyMethodDef pyc_module_methods[];
extern PyMethodDef pyc_creation_methods[];
extern PyMethodDef pyc_random_methods[];
extern PyMethodDef pyc_ops_methods[];
extern PyMethodDef pyc_index_methods[];
extern PyMethodDef pyc_nn_methods[];
extern PyMethodDef pyc_autograd_methods[];
extern PyMethodDef pyc_complex_methods[];   /* complex.c (fw/complex.h) */
extern PyMethodDef pyc_device_methods[];    /* device.c (fw/device.h) */
/* device.c: a CPU tensor with t's values (t itself, or a copy of a device
 * tensor made without autograd): read values through it, never through
 * fw_tensor_data of a tensor that may live on a GPU. 0 or a framework rc. */
int pyc_host(fw_tensor **out, fw_tensor *t);
/* device.c: the Place object of t's device (Tensor.place). */
PyObject *pyc_place_of(const fw_tensor *t);
/* autograd.c: re-raise an exception a Python hook or PyLayer.backward raised
 * inside the engine (1 when one was pending). */
int pyc_restore_callback_error(void);
int pyc_tensor_type_init(PyObject *module);
int pyc_optim_init(PyObject *module);

/* Return the wrapped result, or raise for a negative framework code. */
#define PYC_RET(rc, r) return (rc) < 0 ? pyc_raise(rc) : pyc_wrap(r)
/* Method-table flags and cast for functions that take keywords or use the
 * fast-call convention. */
#define PYC_KW (METH_VARARGS | METH_KEYWORDS)
#define PYC_FAST(fn) ((PyCFunction)(void (*)(void))(fn))

#endif
