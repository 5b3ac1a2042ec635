/*
 * complex.c - paddle._C functions over fw/complex.h: complex parts and
 * views, conj, angle, and the last-axis DFTs that paddle.fft composes.
 */
#include "pyc.h"

#define CX_UNARY(name, call)                                                          \
    static PyObject *f_##name(PyObject *self, PyObject *x)                            \
    {                                                                                 \
        fw_tensor *t, *r = NULL;                                                      \
        if (pyc_tensor_arg(x, &t, "x") < 0)                                           \
            return NULL;                                                              \
        int rc = call(&r, t);                                                         \
        PYC_RET(rc, r);                                                               \
    }
CX_UNARY(real, fw_real)
CX_UNARY(imag, fw_imag)
CX_UNARY(as_real, fw_as_real)
CX_UNARY(as_complex, fw_as_complex)
CX_UNARY(conj, fw_conj)
CX_UNARY(angle, fw_angle)

static PyObject *f_complex(PyObject *self, PyObject *args)
{
    PyObject *a, *b;
    fw_tensor *re, *im, *r = NULL;
    if (!PyArg_ParseTuple(args, "OO:complex", &a, &b) || pyc_tensor_arg(a, &re, "real") < 0 ||
        pyc_tensor_arg(b, &im, "imag") < 0)
        return NULL;
    int rc = fw_complex(&r, re, im);
    PYC_RET(rc, r);
}

static PyObject *f_fft_c2c(PyObject *self, PyObject *args)
{
    PyObject *a;
    int inverse;
    double scale;
    fw_tensor *x, *r = NULL;
    if (!PyArg_ParseTuple(args, "Opd:fft_c2c", &a, &inverse, &scale) ||
        pyc_tensor_arg(a, &x, "x") < 0)
        return NULL;
    int rc = fw_fft_c2c(&r, x, inverse != 0, scale);
    PYC_RET(rc, r);
}

static PyObject *f_fft_r2c(PyObject *self, PyObject *args)
{
    PyObject *a;
    double scale;
    fw_tensor *x, *r = NULL;
    if (!PyArg_ParseTuple(args, "Od:fft_r2c", &a, &scale) || pyc_tensor_arg(a, &x, "x") < 0)
        return NULL;
    int rc = fw_fft_r2c(&r, x, scale);
    PYC_RET(rc, r);
}

static PyObject *f_fft_c2r(PyObject *self, PyObject *args)
{
    PyObject *a;
    long long n;
    double scale;
    fw_tensor *x, *r = NULL;
    if (!PyArg_ParseTuple(args, "OLd:fft_c2r", &a, &n, &scale) || pyc_tensor_arg(a, &x, "x") < 0)
        return NULL;
    int rc = fw_fft_c2r(&r, x, (int64_t)n, scale);
    PYC_RET(rc, r);
}

PyMethodDef pyc_complex_methods[] = {
    {"real", f_real, METH_O, "real(x): real part (a view)"},
    {"imag", f_imag, METH_O, "imag(x): imaginary part (a view)"},
    {"as_real", f_as_real, METH_O, "as_real(x): complex [..] -> float [.., 2]"},
    {"as_complex", f_as_complex, METH_O, "as_complex(x): float [.., 2] -> complex [..]"},
    {"conj", f_conj, METH_O, "conj(x)"},
    {"angle", f_angle, METH_O, "angle(x)"},
    {"complex", f_complex, METH_VARARGS, "complex(real, imag)"},
    {"fft_c2c", f_fft_c2c, METH_VARARGS, "fft_c2c(x, inverse, scale): last axis"},
    {"fft_r2c", f_fft_r2c, METH_VARARGS, "fft_r2c(x, scale): last axis, n/2+1 bins"},
    {"fft_c2r", f_fft_c2r, METH_VARARGS, "fft_c2r(x, n, scale): last axis"},
    {NULL, NULL, 0, NULL}};
