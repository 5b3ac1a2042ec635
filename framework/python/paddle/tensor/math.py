"""Math, logic, reductions, search, linear algebra and shape functions of
the paddle namespace, over _C (paddle.tensor.math / manipulation / search /
logic / stat / linalg)."""
import builtins
import numbers

import numpy as np

from paddle import _C
from paddle.framework.dtype import convert_dtype

Tensor = _C.Tensor


def _axis(axis):
    if axis is None:
        return None
    if isinstance(axis, Tensor):
        v = axis.numpy().reshape(-1).tolist()
        return v[0] if axis.ndim == 0 else v
    if isinstance(axis, (list, tuple)):
        return [int(a) for a in axis]
    return int(axis)


def _t(x):
    return x if isinstance(x, Tensor) else _C.to_tensor(np.asarray(x)) \
        if isinstance(x, (list, tuple, np.ndarray)) else x


# ---- elementwise -------------------------------------------------------------

def add(x, y, name=None):
    return _C.add(_t(x), _t(y))


def subtract(x, y, name=None):
    return _C.subtract(_t(x), _t(y))


def multiply(x, y, name=None):
    return _C.multiply(_t(x), _t(y))


def divide(x, y, name=None):
    return _C.divide(_t(x), _t(y))


def pow(x, y, name=None):  # noqa: A001
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
    return _C.exp(x)


def log(x, name=None):
    return _C.log(x)


def log2(x, name=None):
    return _C.divide(_C.log(x), float(np.log(2.0)))


def log10(x, name=None):
    return _C.divide(_C.log(x), float(np.log(10.0)))


def log1p(x, name=None):
    return _C.log(_C.add(x, 1.0))


def expm1(x, name=None):
    return _C.subtract(_C.exp(x), 1.0)


def sqrt(x, name=None):
    return _C.sqrt(x)


def rsqrt(x, name=None):
    return _C.rsqrt(x)


def square(x, name=None):
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


# ---- comparisons and logic ------------------------------------------------------

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


def any(x, axis=None, keepdim=False, name=None):  # noqa: A001
    return _C.greater_than(_C.sum(_C.cast(x, 'bool'), _axis(axis), keepdim), 0)


def all(x, axis=None, keepdim=False, name=None):  # noqa: A001
    n = _C.sum(_C.cast(_C.logical_not(_C.cast(x, 'bool')), 'int64'), _axis(axis), keepdim)
    return _C.equal(n, 0)


def is_tensor(x):
    return isinstance(x, Tensor)


def is_floating_point(x):
    return x.dtype.is_floating_point


def is_integer(x):
    return x.dtype.name in ('int32', 'int64', 'uint8')


# ---- reductions -----------------------------------------------------------------

def _cast_opt(x, dtype):
    return x if dtype is None else _C.cast(x, convert_dtype(dtype))


def sum(x, axis=None, dtype=None, keepdim=False, name=None):  # noqa: A001
    if x.dtype.name == 'bool':
        x = _C.cast(x, 'int64')
    return _cast_opt(_C.sum(x, _axis(axis), keepdim), dtype)


def mean(x, axis=None, keepdim=False, name=None):
    return _C.mean(x, _axis(axis), keepdim)


def max(x, axis=None, keepdim=False, name=None):  # noqa: A001
    return _C.max(x, _axis(axis), keepdim)


def min(x, axis=None, keepdim=False, name=None):  # noqa: A001
    return _C.min(x, _axis(axis), keepdim)


amax = max
amin = min


def prod(x, axis=None, keepdim=False, dtype=None, name=None):
    return _cast_opt(_C.prod(x, _axis(axis), keepdim), dtype)


def var(x, axis=None, unbiased=True, keepdim=False, name=None):
    return _C.var(x, _axis(axis), unbiased, keepdim)


def std(x, axis=None, unbiased=True, keepdim=False, name=None):
    return _C.std(x, _axis(axis), unbiased, keepdim)


def logsumexp(x, axis=None, keepdim=False, name=None):
    m = _C.max(x, _axis(axis), True).detach()
    s = _C.log(_C.sum(_C.exp(_C.subtract(x, m)), _axis(axis), True))
    out = _C.add(s, m)
    if not keepdim:
        ax = _axis(axis)
        out = _C.squeeze(out, ax) if ax is not None else _C.reshape(out, [])
    return out


def norm(x, p='fro', axis=None, keepdim=False, name=None):
    if p in ('fro', 2, 2.0) or p is None:
        return _C.sqrt(_C.sum(_C.square(x), _axis(axis), keepdim))
    if p in (1, 1.0):
        return _C.sum(_C.abs(x), _axis(axis), keepdim)
    if p in (float('inf'), 'inf'):
        return _C.max(_C.abs(x), _axis(axis), keepdim)
    return _C.pow(_C.sum(_C.pow(_C.abs(x), float(p)), _axis(axis), keepdim), 1.0 / float(p))


def cumsum(x, axis=None, dtype=None, name=None):
    return _C.cumsum(x, None if axis is None else int(axis),
                     None if dtype is None else convert_dtype(dtype))


def numel(x, name=None):
    return _C.to_tensor(int(x.size))


def count_nonzero(x, axis=None, keepdim=False, name=None):
    return _C.sum(_C.cast(_C.cast(x, 'bool'), 'int64'), _axis(axis), keepdim)


# ---- search ---------------------------------------------------------------------

def argmax(x, axis=None, keepdim=False, dtype='int64', name=None):
    r = _C.argmax(x, None if axis is None else int(axis), keepdim)
    return r if convert_dtype(dtype) == 'int64' else _C.cast(r, convert_dtype(dtype))


def argmin(x, axis=None, keepdim=False, dtype='int64', name=None):
    r = _C.argmin(x, None if axis is None else int(axis), keepdim)
    return r if convert_dtype(dtype) == 'int64' else _C.cast(r, convert_dtype(dtype))


def argsort(x, axis=-1, descending=False, stable=False, name=None):
    return _C.argsort(x, int(axis), bool(descending))


def sort(x, axis=-1, descending=False, stable=False, name=None):
    return _C.sort(x, int(axis), bool(descending))[0]


def topk(x, k, axis=None, largest=True, sorted=True, name=None):  # noqa: A002
    k = int(k.item() if isinstance(k, Tensor) else k)
    return _C.topk(x, k, -1 if axis is None else int(axis), bool(largest), bool(sorted))


def where(condition, x=None, y=None, name=None):
    if x is None and y is None:
        return nonzero(condition, as_tuple=True)
    return _C.where(condition, _t(x), _t(y))


def nonzero(x, as_tuple=False):
    idx = np.nonzero(x.numpy())
    if as_tuple:
        return tuple(_C.to_tensor(np.ascontiguousarray(i.astype(np.int64)).reshape(-1, 1))
                     for i in idx)
    return _C.to_tensor(np.ascontiguousarray(np.stack(idx, axis=1).astype(np.int64)))


def masked_select(x, mask, name=None):
    return _C.masked_select(x, mask)


def masked_fill(x, mask, value, name=None):
    v = value if isinstance(value, Tensor) else _C.full([], float(value), x.dtype)
    return _C.where(mask, _C.cast(v, x.dtype) if v.dtype != x.dtype else v, x)


def index_select(x, index, axis=0, name=None):
    return _C.index_select(x, index, int(axis))


def gather(x, index, axis=None, name=None):
    return _C.gather(x, index, 0 if axis is None else int(axis))


def gather_nd(x, index, name=None):
    idx = index.numpy()
    k = idx.shape[-1]
    parts = [_C.to_tensor(np.ascontiguousarray(idx[..., i])) for i in range(k)]
    return _C.index_get(x, parts)


def take_along_axis(arr, indices, axis, broadcast=True):
    return _C.take_along_axis(arr, indices, int(axis))


def put_along_axis(arr, indices, values, axis, reduce='assign', include_self=True,
                   broadcast=True):
    return _C.put_along_axis(arr, indices, values, int(axis), reduce)


def scatter(x, index, updates, overwrite=True, name=None):
    return _C.scatter(x, index, updates, bool(overwrite))


def index_add(x, index, axis, value, name=None):
    return _C.index_add(x, index, int(axis), value)


def unique(x, return_index=False, return_inverse=False, return_counts=False, axis=None,
           dtype='int64', name=None):
    a = x.numpy()
    res = np.unique(a if axis is None else a, return_index=return_index,
                    return_inverse=return_inverse, return_counts=return_counts, axis=axis)
    if not isinstance(res, tuple):
        return _C.to_tensor(np.ascontiguousarray(res))
    out = [_C.to_tensor(np.ascontiguousarray(res[0]))]
    for r in res[1:]:
        out.append(_C.to_tensor(np.ascontiguousarray(r.astype(np.int64).reshape(-1))))
    return tuple(out)


# ---- linear algebra -----------------------------------------------------------------

def matmul(x, y, transpose_x=False, transpose_y=False, name=None):
    return _C.matmul(x, y, transpose_x, transpose_y)


def mm(input, mat2, name=None):  # noqa: A002
    return _C.matmul(input, mat2)


def bmm(x, y, name=None):
    if x.ndim != 3 or y.ndim != 3:
        raise ValueError("bmm: x and y must be 3-D, got shapes {} and {}".format(x.shape, y.shape))
    return _C.matmul(x, y)


def dot(x, y, name=None):
    return _C.sum(_C.multiply(x, y), [-1], False)


def outer(x, y, name=None):
    return _C.matmul(_C.reshape(x, [-1, 1]), _C.reshape(y, [1, -1]))


def t(input, name=None):  # noqa: A002
    if input.ndim < 2:
        return input
    return _C.transpose(input, [1, 0])


# ---- shape ops ----------------------------------------------------------------------

def _ints(v):
    if isinstance(v, Tensor):
        return [int(i) for i in v.numpy().reshape(-1)]
    if isinstance(v, numbers.Integral):
        return [int(v)]
    return [int(i.item()) if isinstance(i, Tensor) else int(i) for i in v]


def reshape(x, shape, name=None):
    return _C.reshape(x, _ints(shape))


def reshape_(x, shape, name=None):
    x._share(_C.reshape(x, _ints(shape)))
    return x


def flatten(x, start_axis=0, stop_axis=-1, name=None):
    if x.ndim == 0:
        return _C.reshape(x, [1])
    return _C.flatten(x, int(start_axis), int(stop_axis))


def squeeze(x, axis=None, name=None):
    return _C.squeeze(x, _axis(axis))


def unsqueeze(x, axis, name=None):
    return _C.unsqueeze(x, _axis(axis))


def transpose(x, perm, name=None):
    perm = _ints(perm)
    if len(perm) != x.ndim:
        raise ValueError("transpose: perm {} must have one entry per dim of x (shape {})".format(
            perm, x.shape))
    return _C.transpose(x, perm)


def moveaxis(x, source, destination, name=None):
    src = [s % x.ndim for s in _ints(source)]
    dst = [d % x.ndim for d in _ints(destination)]
    order = [i for i in range(x.ndim) if i not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return _C.transpose(x, order)


def swapaxes(x, axis0, axis1, name=None):
    return _C.swapaxes(x, int(axis0), int(axis1))


def concat(x, axis=0, name=None):
    return _C.concat(list(x), int(axis.item() if isinstance(axis, Tensor) else axis))


def stack(x, axis=0, name=None):
    return _C.stack(list(x), int(axis))


def split(x, num_or_sections, axis=0, name=None):
    if isinstance(axis, Tensor):
        axis = axis.item()
    if isinstance(num_or_sections, (list, tuple)):
        num_or_sections = _ints(num_or_sections)
    return _C.split(x, num_or_sections, int(axis))


def chunk(x, chunks, axis=0, name=None):
    return _C.split(x, int(chunks), int(axis))


def unbind(input, axis=0):  # noqa: A002
    axis = int(axis)
    n = input.shape[axis]
    return [_C.select(input, axis, i) for i in range(n)]


def tile(x, repeat_times, name=None):
    return _C.tile(x, _ints(repeat_times))


def expand(x, shape, name=None):
    return _C.expand(x, _ints(shape))


def expand_as(x, y, name=None):
    return _C.expand(x, y.shape)


def broadcast_to(x, shape, name=None):
    return _C.broadcast_to(x, _ints(shape))


def broadcast_tensors(input, name=None):  # noqa: A002
    shape = list(np.broadcast_shapes(*[tuple(t.shape) for t in input]))
    return [_C.broadcast_to(t, shape) for t in input]


def cast(x, dtype):
    return _C.cast(x, convert_dtype(dtype))


def flip(x, axis, name=None):
    axes = _ints(axis)
    big = 2 ** 62
    return _C.slice(x, axes, [-1] * len(axes), [-big] * len(axes), [-1] * len(axes))


def roll(x, shifts, axis=None, name=None):
    if axis is None:
        flat = _C.reshape(x, [-1])
        return _C.reshape(roll(flat, shifts, 0), x.shape)
    sh, ax = _ints(shifts), _ints(axis)
    out = x
    for s, a in zip(sh, ax):
        n = out.shape[a]
        if n == 0:
            continue
        s %= n
        if s:
            out = _C.concat([_C.slice(out, [a], [n - s], [n]), _C.slice(out, [a], [0], [n - s])], a)
    return out


def pad(x, pad, mode='constant', value=0.0, data_format='NCHW', name=None):
    return _C.pad(x, _ints(pad), mode, float(value))


def one_hot(x, num_classes, name=None):
    return _C.one_hot(x, int(num_classes))


def shape(input):  # noqa: A002
    return _C.to_tensor(np.array(input.shape, dtype=np.int64))


def rank(input):  # noqa: A002
    return _C.to_tensor(int(input.ndim))


def increment(x, value=1.0, name=None):
    x._assign(_C.add(x, value))
    return x


def diag(x, offset=0, padding_value=0, name=None):
    a = x.numpy()
    if a.ndim == 1:
        r = np.diag(a, offset)
        if padding_value:
            r = np.where(np.diag(np.ones_like(a, dtype=bool), offset), r, padding_value)
        return _C.to_tensor(np.ascontiguousarray(r.astype(a.dtype)))
    return _C.to_tensor(np.ascontiguousarray(np.diag(a, offset)))


def kron(x, y, name=None):
    return _C.to_tensor(np.ascontiguousarray(np.kron(x.numpy(), y.numpy())))


def einsum(equation, *operands):
    raise NotImplementedError("paddle.einsum is not supported by this build yet")


def _builtin_max(*a):
    return builtins.max(*a)
