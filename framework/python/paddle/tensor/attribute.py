"""Tensor attributes as functions (Paddle's paddle/tensor/attribute.py):
shape, rank, is_floating_point, is_integer."""
import numpy as np

from paddle import _C


def is_floating_point(x):
    return x.dtype.is_floating_point


def is_integer(x):
    return x.dtype.name in ('int32', 'int64', 'uint8')


def shape(input):  # noqa: A002
    return _C.to_tensor(np.array(input.shape, dtype=np.int64))


def rank(input):  # noqa: A002
    return _C.to_tensor(int(input.ndim))


def is_complex(x):
    """paddle.is_complex: whether x's dtype is complex64 or complex128."""
    return x.dtype.is_complex


def real(x, name=None):
    """paddle.real: the real part of x (float32 for complex64, float64 for
    complex128); x itself for a real tensor."""
    return _C.real(x)


def imag(x, name=None):
    """paddle.imag: the imaginary part of x (zeros for a real tensor)."""
    return _C.imag(x)
