"""Elementwise math, reductions and their helpers (Paddle's
paddle/tensor/math.py)."""
import numpy as np

from paddle import _C
from paddle.amp import _state as _amp
from paddle._lazy import forward_to as _forward_to
from paddle.framework.dtype import convert_dtype
from ._args import _axis, _t

Tensor = _C.Tensor


def add(x, y, name=None):
    return _C.add(_t(x), _t(y))


def subtract(x, y, name=None):
    return _C.subtract(_t(x), _t(y))


def multiply(x, y, name=None):
    return _C.multiply(_t(x), _t(y))


def divide(x, y, name=None):
    return _C.divide(_t(x), _t(y))


def pow(x, y, name=None):  # noqa: A001
    if _amp.ON and _amp.current():
        return _amp.call('pow', _C.pow, (_t(x), _t(y)))
    return _C.pow(_t(x), _t(y))


def maximum(x, y, name=None):
    return _C.maximum(_t(x), _t(y))


def minimum(x, y, name=None):
    return _C.minimum(_t(x), _t(y))


fmax = maximum


fmin = minimum


def _np_unary(x, fn, keep_dtype=True):
    a = fn(x.numpy())
    return _C.to_tensor(np.ascontiguousarray(a.astype(x.numpy().dtype) if keep_dtype else a))


def floor_divide(x, y, name=None):
    """Integer-style floor division (no gradient), computed elementwise."""
    xa = x.numpy() if isinstance(x, Tensor) else np.asarray(x)
    ya = y.numpy() if isinstance(y, Tensor) else np.asarray(y)
    if np.issubdtype(xa.dtype, np.integer) and np.issubdtype(np.asarray(ya).dtype, np.integer) \
            and np.any(ya == 0):
        raise ZeroDivisionError("floor_divide: integer division by zero")
    r = np.floor_divide(xa, ya)
    ref = x if isinstance(x, Tensor) else y
    return _C.to_tensor(np.ascontiguousarray(r.astype(ref.numpy().dtype)))


def remainder(x, y, name=None):
    """x mod y with Python's sign rule (Paddle's remainder): x - floor(x/y)*y."""
    if isinstance(x, Tensor) and x.dtype.is_floating_point:
        q = floor(_C.divide(x, _t(y)))
        return _C.subtract(x, _C.multiply(q, _t(y)))
    xa = x.numpy() if isinstance(x, Tensor) else np.asarray(x)
    ya = y.numpy() if isinstance(y, Tensor) else np.asarray(y)
    if np.issubdtype(xa.dtype, np.integer) and np.any(np.asarray(ya) == 0):
        raise ZeroDivisionError("remainder: integer division by zero")
    ref = x if isinstance(x, Tensor) else y
    return _C.to_tensor(np.ascontiguousarray(np.mod(xa, ya).astype(ref.numpy().dtype)))


mod = remainder


floor_mod = remainder


def exp(x, name=None):
    if _amp.ON and _amp.current():
        return _amp.call('exp', _C.exp, (x,))
    return _C.exp(x)


def log(x, name=None):
    if _amp.ON and _amp.current():
        return _amp.call('log', _C.log, (x,))
    return _C.log(x)


def log2(x, name=None):
    if _amp.ON and _amp.current():
        return _amp.call('log2', log2, (x,))
    return _C.divide(_C.log(x), float(np.log(2.0)))


def log10(x, name=None):
    if _amp.ON and _amp.current():
        return _amp.call('log10', log10, (x,))
    return _C.divide(_C.log(x), float(np.log(10.0)))


def log1p(x, name=None):
    return _C.log(_C.add(x, 1.0))


def expm1(x, name=None):
    if _amp.ON and _amp.current():
        return _amp.call('expm1', expm1, (x,))
    return _C.subtract(_C.exp(x), 1.0)


def sqrt(x, name=None):
    return _C.sqrt(x)


def rsqrt(x, name=None):
    if _amp.ON and _amp.current():
        return _amp.call('rsqrt', _C.rsqrt, (x,))
    return _C.rsqrt(x)


def square(x, name=None):
    if _amp.ON and _amp.current():
        return _amp.call('square', _C.square, (x,))
    return _C.square(x)


def abs(x, name=None):  # noqa: A001
    return _C.abs(x)


def neg(x, name=None):
    return _C.neg(x)


def tanh(x, name=None):
    return _C.tanh(x)


def sigmoid(x, name=None):
    return _C.sigmoid(x)


def sin(x, name=None):
    return _C.sin(x)


def cos(x, name=None):
    return _C.cos(x)


def reciprocal(x, name=None):
    if _amp.ON and _amp.current():
        return _amp.call('reciprocal', reciprocal, (x,))
    return _C.divide(1.0, x)


def sign(x, name=None):
    pos = _C.cast(_C.greater_than(x, 0), x.dtype)
    neg_ = _C.cast(_C.less_than(x, 0), x.dtype)
    return _C.subtract(pos, neg_)


def floor(x, name=None):
    if not x.dtype.is_floating_point:
        return x.clone()
    return _np_unary(x, np.floor)


def ceil(x, name=None):
    if not x.dtype.is_floating_point:
        return x.clone()
    return _np_unary(x, np.ceil)


def round(x, decimals=0, name=None):  # noqa: A001
    if not x.dtype.is_floating_point:
        return x.clone()
    return _np_unary(x, lambda a: np.round(a, decimals))


def trunc(x, name=None):
    if not x.dtype.is_floating_point:
        return x.clone()
    return _np_unary(x, np.trunc)


def scale(x, scale=1.0, bias=0.0, bias_after_scale=True, act=None, name=None):
    s = scale.item() if isinstance(scale, Tensor) else scale
    if bias_after_scale:
        out = _C.add(_C.multiply(x, s), bias)
    else:
        out = _C.multiply(_C.add(x, bias), s)
    if act is not None:
        out = getattr(_C, act)(out)
    return out


def clip(x, min=None, max=None, name=None):  # noqa: A002
    mn = min.item() if isinstance(min, Tensor) else min
    mx = max.item() if isinstance(max, Tensor) else max
    return _C.clip(x, mn, mx)


def erf(x, name=None):
    import math as _m
    return _np_unary(x, np.vectorize(_m.erf))


def isnan(x, name=None):
    if not x.dtype.is_floating_point:
        return _C.zeros(x.shape, 'bool')
    return _C.not_equal(x, x)


def isinf(x, name=None):
    if not x.dtype.is_floating_point:
        return _C.zeros(x.shape, 'bool')
    return _C.equal(_C.abs(x), float('inf'))


def isfinite(x, name=None):
    if not x.dtype.is_floating_point:
        return _C.ones(x.shape, 'bool')
    return _C.logical_not(_C.logical_or(isnan(x), isinf(x)))


def nan_to_num(x, nan=0.0, posinf=None, neginf=None, name=None):
    return _np_unary(x, lambda a: np.nan_to_num(a, nan=nan, posinf=posinf, neginf=neginf))


def any(x, axis=None, keepdim=False, name=None):  # noqa: A001
    return _C.greater_than(_C.sum(_C.cast(x, 'bool'), _axis(axis), keepdim), 0)


def all(x, axis=None, keepdim=False, name=None):  # noqa: A001
    n = _C.sum(_C.cast(_C.logical_not(_C.cast(x, 'bool')), 'int64'), _axis(axis), keepdim)
    return _C.equal(n, 0)


def _cast_opt(x, dtype):
    return x if dtype is None else _C.cast(x, convert_dtype(dtype))


def sum(x, axis=None, dtype=None, keepdim=False, name=None):  # noqa: A001
    if x.dtype.name == 'bool':
        x = _C.cast(x, 'int64')
    if _amp.ON and _amp.current():
        return _cast_opt(_amp.call('reduce_sum', _C.sum, (x,), _axis(axis), keepdim), dtype)
    return _cast_opt(_C.sum(x, _axis(axis), keepdim), dtype)


def max(x, axis=None, keepdim=False, name=None):  # noqa: A001
    return _C.max(x, _axis(axis), keepdim)


def min(x, axis=None, keepdim=False, name=None):  # noqa: A001
    return _C.min(x, _axis(axis), keepdim)


amax = max


amin = min


def prod(x, axis=None, keepdim=False, dtype=None, name=None):
    if _amp.ON and _amp.current():
        return _amp.call('reduce_prod', prod, (x,), axis, keepdim, dtype)
    return _cast_opt(_C.prod(x, _axis(axis), keepdim), dtype)


def logsumexp(x, axis=None, keepdim=False, name=None):
    m = _C.max(x, _axis(axis), True).detach()
    s = _C.log(_C.sum(_C.exp(_C.subtract(x, m)), _axis(axis), True))
    out = _C.add(s, m)
    if not keepdim:
        ax = _axis(axis)
        out = _C.squeeze(out, ax) if ax is not None else _C.reshape(out, [])
    return out


def cumsum(x, axis=None, dtype=None, name=None):
    if _amp.ON and _amp.current():
        return _amp.call('cumsum', cumsum, (x,), axis, dtype)
    return _C.cumsum(x, None if axis is None else int(axis),
                     None if dtype is None else convert_dtype(dtype))


def count_nonzero(x, axis=None, keepdim=False, name=None):
    return _C.sum(_C.cast(_C.cast(x, 'bool'), 'int64'), _axis(axis), keepdim)


def increment(x, value=1.0, name=None):
    x._assign(_C.add(x, value))
    return x


def kron(x, y, name=None):
    return _C.to_tensor(np.ascontiguousarray(np.kron(x.numpy(), y.numpy())))


def outer(x, y, name=None):
    return _C.matmul(_C.reshape(x, [-1, 1]), _C.reshape(y, [1, -1]))


def mm(input, mat2, name=None):  # noqa: A002
    if _amp.ON and _amp.current():
        return _amp.call(('matmul_v2', 'matmul'), _C.matmul, (input, mat2))
    return _C.matmul(input, mat2)


# This module held every function of paddle.tensor before the package followed
# Paddle's module layout; those names still import from here.
__getattr__ = _forward_to(__name__, 'paddle.tensor')


def dist(x, y, p=2, name=None):
    """The p-norm of x - y (broadcast), a 0-D tensor: p=0 counts the nonzero
    elements, inf/-inf take the largest/smallest |x - y|, otherwise
    (sum |x - y|^p)^(1/p). Differentiable in x and y (Paddle's paddle.dist)."""
    z = _C.abs(_C.subtract(_t(x), _t(y)))
    p = float(p)
    if p == 0:
        return _C.sum(_C.cast(_C.not_equal(z, _t(0.0)), z.dtype), None, False)
    if p == float('inf'):
        return _C.max(z, None, False)
    if p == float('-inf'):
        return _C.min(z, None, False)
    if p == 1:
        return _C.sum(z, None, False)
    s = _C.sum(_C.pow(z, _t(p)), None, False) if p != 2 else \
        _C.sum(_C.multiply(z, z), None, False)
    return _C.pow(s, _t(1.0 / p))


def conj(x, name=None):
    """paddle.conj: the complex conjugate (x itself for real tensors)."""
    return _C.conj(x)


def angle(x, name=None):
    """paddle.angle: atan2(imag, real) elementwise (for real x: 0 or pi)."""
    return _C.angle(x)
