/*
 * random.c - paddle._C functions over fw/random.h: seed and generator
 * state, rand, randn, uniform, normal, randint, randperm.
 * Each parses its arguments, calls one fw_* function of fw/random.h and wraps
 * the result (signatures: BINDINGS.md).
 */
#include "pyc.h"

static PyObject *f_seed(PyObject *self, PyObject *arg)
{
    unsigned long long s = PyLong_AsUnsignedLongLongMask(arg);
    if (PyErr_Occurred())
        return NULL;
    fw_seed((uint64_t)s);
    Py_RETURN_NONE;
}

static PyObject *f_get_rng_state(PyObject *self, PyObject *u)
{
    fw_generator *g = fw_default_generator();
    return Py_BuildValue("(KK)", (unsigned long long)fw_generator_get_seed(g),
                         (unsigned long long)fw_generator_get_offset(g));
}

static PyObject *f_set_rng_state(PyObject *self, PyObject *arg)
{
    unsigned long long s, o;
    if (!PyArg_ParseTuple(arg, "KK:set_rng_state", &s, &o))
        return NULL;
    fw_generator_set_state(fw_default_generator(), s, o);
    Py_RETURN_NONE;
}

static PyObject *rand_shaped(PyObject *args, PyObject *kw, int normal)
{
    pyc_args p;
    if (pyc_shape_dtype_args(&p, args, kw) < 0)
        return NULL;
    fw_tensor *r;
    int rc = normal ? fw_randn(&r, p.shape, p.ndim, p.dtype, NULL) : fw_rand(&r, p.shape, p.ndim, p.dtype, NULL);
    PYC_RET(rc, r);
}
static PyObject *f_rand(PyObject *s, PyObject *a, PyObject *k) { return rand_shaped(a, k, 0); }
static PyObject *f_randn(PyObject *s, PyObject *a, PyObject *k) { return rand_shaped(a, k, 1); }

static PyObject *f_uniform_normal(PyObject *args, PyObject *kw, int normal)
{
    static char *kwl[] = {"shape", "dtype", "a", "b", NULL};
    pyc_args p;
    double a = normal ? 0.0 : -1.0, b = 1.0;
    if (pyc_parse_args(&p, pyc_default_float, args, kw, "O|Odd", kwl, &p.shape_o, &p.dtype_o, &a, &b) < 0)
        return NULL;
    fw_tensor *r;
    int rc = normal ? fw_normal(&r, p.shape, p.ndim, p.dtype, a, b, NULL)
                    : fw_uniform(&r, p.shape, p.ndim, p.dtype, a, b, NULL);
    PYC_RET(rc, r);
}
static PyObject *f_uniform(PyObject *s, PyObject *a, PyObject *k) { return f_uniform_normal(a, k, 0); }
static PyObject *f_normal(PyObject *s, PyObject *a, PyObject *k) { return f_uniform_normal(a, k, 1); }

static PyObject *f_randint(PyObject *self, PyObject *args, PyObject *kw)
{
    static char *kwl[] = {"low", "high", "shape", "dtype", NULL};
    long long lo, hi;
    pyc_args p;
    if (pyc_parse_args(&p, FW_INT64, args, kw, "LLO|O:randint", kwl, &lo, &hi, &p.shape_o, &p.dtype_o) < 0)
        return NULL;
    fw_tensor *r;
    int rc = fw_randint(&r, lo, hi, p.shape, p.ndim, p.dtype, NULL);
    PYC_RET(rc, r);
}

static PyObject *f_randperm(PyObject *self, PyObject *args, PyObject *kw)
{
    static char *kwl[] = {"n", "dtype", NULL};
    long long n;
    pyc_args p;
    if (pyc_parse_args(&p, FW_INT64, args, kw, "L|O:randperm", kwl, &n, &p.dtype_o) < 0)
        return NULL;
    fw_tensor *r;
    int rc = fw_randperm(&r, n, p.dtype, NULL);
    PYC_RET(rc, r);
}

PyMethodDef pyc_random_methods[] = {
    {"seed", f_seed, METH_O, NULL},
    {"get_rng_state", f_get_rng_state, METH_NOARGS, NULL},
    {"set_rng_state", f_set_rng_state, METH_O, NULL},
    {"rand", PYC_FAST(f_rand), PYC_KW, NULL},
    {"randn", PYC_FAST(f_randn), PYC_KW, NULL},
    {"uniform", PYC_FAST(f_uniform), PYC_KW, NULL},
    {"normal", PYC_FAST(f_normal), PYC_KW, NULL},
    {"randint", PYC_FAST(f_randint), PYC_KW, NULL},
    {"randperm", PYC_FAST(f_randperm), PYC_KW, NULL},
    {NULL, NULL, 0, NULL}};
