"""Comparisons, logical and bitwise ops, closeness tests (Paddle's
paddle/tensor/logic.py)."""
import numpy as np

from paddle import _C
from ._args import _t

Tensor = _C.Tensor


def equal(x, y, name=None):
    return _C.equal(_t(x), _t(y))


def not_equal(x, y, name=None):
    return _C.not_equal(_t(x), _t(y))


def less_than(x, y, name=None):
    return _C.less_than(_t(x), _t(y))


def less_equal(x, y, name=None):
    return _C.less_equal(_t(x), _t(y))


def greater_than(x, y, name=None):
    return _C.greater_than(_t(x), _t(y))


def greater_equal(x, y, name=None):
    return _C.greater_equal(_t(x), _t(y))


less = less_than


greater = greater_than


def logical_and(x, y, out=None, name=None):
    return _C.logical_and(_t(x), _t(y))


def logical_or(x, y, out=None, name=None):
    return _C.logical_or(_t(x), _t(y))


def logical_xor(x, y, out=None, name=None):
    return _C.logical_xor(_t(x), _t(y))


def logical_not(x, out=None, name=None):
    return _C.logical_not(x)


bitwise_and = logical_and


bitwise_or = logical_or


bitwise_xor = logical_xor


bitwise_not = logical_not


def equal_all(x, y, name=None):
    if list(x.shape) != list(y.shape):
        return _C.to_tensor(False)
    return _C.to_tensor(bool(np.array_equal(x.numpy(), y.numpy())))


def allclose(x, y, rtol=1e-05, atol=1e-08, equal_nan=False, name=None):
    """paddle.allclose -> a 0-D bool Tensor."""
    return _C.to_tensor(bool(np.allclose(x.numpy(), y.numpy(), rtol=rtol, atol=atol,
                                         equal_nan=equal_nan)))


def isclose(x, y, rtol=1e-05, atol=1e-08, equal_nan=False, name=None):
    return _C.to_tensor(np.ascontiguousarray(
        np.isclose(x.numpy(), y.numpy(), rtol=rtol, atol=atol, equal_nan=equal_nan)))


def is_tensor(x):
    return isinstance(x, Tensor)
