"""Creation functions: to_tensor, zeros, ones, full, arange, linspace, eye,
random tensors (paddle.tensor.creation / paddle.tensor.random)."""
import numbers

import numpy as np

from paddle import _C
from paddle.framework.dtype import get_default_dtype, convert_dtype

Tensor = _C.Tensor


def _dt(dtype, default=None):
    if dtype is None:
        return default if default is not None else get_default_dtype()
    return convert_dtype(dtype)


def _shape(shape):
    if isinstance(shape, Tensor):
        return [int(v) for v in shape.numpy().reshape(-1)]
    if isinstance(shape, numbers.Integral):
        return [int(shape)]
    if isinstance(shape, np.ndarray):
        return [int(v) for v in shape.reshape(-1)]
    return [int(s) for s in shape]


def _np_of(data):
    """numpy array of nested lists/tuples of numbers, Tensors or arrays."""
    if isinstance(data, (list, tuple)) and any(isinstance(x, Tensor) for x in data):
        data = [x.numpy() if isinstance(x, Tensor) else _np_of(x) if isinstance(
            x, (list, tuple)) else x for x in data]
    try:
        a = np.array(data)
    except ValueError as e:
        raise ValueError("to_tensor: nested lists must have the same lengths ({})".format(
            e)) from None
    if a.dtype == object:
        raise TypeError("to_tensor: cannot make a Tensor from {}".format(type(data).__name__))
    return a


_NP_FIX = {'int8': np.int32, 'int16': np.int32, 'uint16': np.int32, 'uint32': np.int64,
           'uint64': np.int64, 'float128': np.float64, 'longdouble': np.float64}


def to_tensor(data, dtype=None, place=None, stop_gradient=True):
    """paddle.to_tensor: a new Tensor from a scalar, list, tuple, numpy array
    or Tensor (copied). Python floats take the default dtype, Python ints
    int64, numpy arrays keep their dtype; user tensors have stop_gradient=True."""
    if place is not None:
        from paddle.framework.place import _get_place
        _get_place(place)
    dt = None if dtype is None else convert_dtype(dtype)
    if isinstance(data, Tensor):
        return _C.to_tensor(data, dt, stop_gradient)
    if isinstance(data, np.generic):
        data = np.asarray(data)
    elif isinstance(data, (bool, int, float)):
        if isinstance(data, float) and dt is None:
            dt = get_default_dtype()
        return _C.to_tensor(data, dt, stop_gradient)
    if isinstance(data, (complex, str, bytes)) or data is None:
        raise TypeError("to_tensor: unsupported data type {}".format(type(data).__name__))
    a = data if isinstance(data, np.ndarray) else _np_of(data)
    if a.dtype.name in _NP_FIX:
        a = a.astype(_NP_FIX[a.dtype.name])
    elif a.dtype.kind in 'US O':
        raise TypeError("to_tensor: cannot make a Tensor of numpy dtype {}".format(a.dtype))
    elif a.dtype.kind == 'c':
        raise TypeError("to_tensor: complex Tensors are not supported by this build")
    if not isinstance(data, np.ndarray) and dt is None and a.dtype == np.float64:
        dt = get_default_dtype()  # Python float lists take the default dtype
    if not a.flags.c_contiguous or not a.flags.aligned:
        a = np.ascontiguousarray(a)
    return _C.to_tensor(a, dt, stop_gradient)


def zeros(shape, dtype=None, name=None):
    return _C.zeros(_shape(shape), _dt(dtype))


def ones(shape, dtype=None, name=None):
    return _C.ones(_shape(shape), _dt(dtype))


def empty(shape, dtype=None, name=None):
    return _C.empty(_shape(shape), _dt(dtype))


def _fill_value(v):
    if isinstance(v, Tensor):
        return v.item()
    return v


def full(shape, fill_value, dtype=None, name=None):
    fill_value = _fill_value(fill_value)
    if dtype is None:
        dtype = 'bool' if isinstance(fill_value, bool) else get_default_dtype()
    return _C.full(_shape(shape), float(fill_value), convert_dtype(dtype))


def zeros_like(x, dtype=None, name=None):
    return _C.zeros_like(x, None if dtype is None else convert_dtype(dtype))


def ones_like(x, dtype=None, name=None):
    return _C.ones_like(x, None if dtype is None else convert_dtype(dtype))


def full_like(x, fill_value, dtype=None, name=None):
    return _C.full_like(x, float(_fill_value(fill_value)),
                        None if dtype is None else convert_dtype(dtype))


def empty_like(x, dtype=None, name=None):
    return _C.zeros_like(x, None if dtype is None else convert_dtype(dtype))


def arange(start=0, end=None, step=1, dtype=None, name=None):
    """paddle.arange(start=0, end=None, step=1, dtype=None): int64 when all of
    start/end/step are ints, else the default float dtype."""
    start, end, step = _fill_value(start), _fill_value(end), _fill_value(step)
    if end is None:
        start, end = 0, start
    if dtype is None:
        allint = all(isinstance(v, (int, np.integer)) for v in (start, end, step))
        dtype = 'int64' if allint else get_default_dtype()
    return _C.arange(float(start), float(end), float(step), convert_dtype(dtype))


def linspace(start, stop, num, dtype=None, name=None):
    return _C.linspace(float(_fill_value(start)), float(_fill_value(stop)),
                       int(_fill_value(num)), _dt(dtype))


def eye(num_rows, num_columns=None, dtype=None, name=None):
    return _C.eye(int(num_rows), None if num_columns is None else int(num_columns), _dt(dtype))


def assign(x, output=None):
    """paddle.assign: a copy of x (Tensor, numpy array, list or scalar)."""
    t = x.clone() if isinstance(x, Tensor) else to_tensor(x)
    if output is not None:
        output._assign(t)
        return output
    return t


def clone(x, name=None):
    return x.clone()


def tril(x, diagonal=0, name=None):
    r, c = x.shape[-2], x.shape[-1]
    m = np.tril(np.ones((r, c), dtype=bool), diagonal)
    return _C.where(_C.to_tensor(m), x, 0)


def triu(x, diagonal=0, name=None):
    r, c = x.shape[-2], x.shape[-1]
    m = np.triu(np.ones((r, c), dtype=bool), diagonal)
    return _C.where(_C.to_tensor(m), x, 0)


def meshgrid(*args, **kwargs):
    if len(args) == 1 and isinstance(args[0], (list, tuple)):
        args = args[0]
    shape = [int(a.shape[0]) for a in args]
    outs = []
    for i, a in enumerate(args):
        s = [1] * len(args)
        s[i] = shape[i]
        outs.append(_C.expand(_C.reshape(a, s), shape))
    return outs


# ---- random ----------------------------------------------------------------

def rand(shape, dtype=None, name=None):
    return _C.rand(_shape(shape), _dt(dtype))


def randn(shape, dtype=None, name=None):
    return _C.randn(_shape(shape), _dt(dtype))


standard_normal = randn


def uniform(shape, dtype=None, min=-1.0, max=1.0, seed=0, name=None):  # noqa: A002
    return _C.uniform(_shape(shape), _dt(dtype), float(min), float(max))


def normal(mean=0.0, std=1.0, shape=None, name=None):
    if isinstance(mean, Tensor) or isinstance(std, Tensor):
        ref = mean if isinstance(mean, Tensor) else std
        z = _C.randn(ref.shape, ref.dtype)
        return z * std + mean
    return _C.normal(_shape(shape if shape is not None else [1]), get_default_dtype(),
                     float(mean), float(std))


def randint(low=0, high=None, shape=[1], dtype=None, name=None):  # noqa: B006
    if high is None:
        low, high = 0, low
    return _C.randint(int(low), int(high), _shape(shape), _dt(dtype, 'int64'))


def randperm(n, dtype='int64', name=None):
    return _C.randperm(int(n), convert_dtype(dtype))


def bernoulli(x, name=None):
    return _C.cast(_C.less_than(_C.rand(x.shape, x.dtype), x), x.dtype)


def multinomial(x, num_samples=1, replacement=False, name=None):
    p = x.numpy().astype(np.float64)
    rows = p.reshape(-1, p.shape[-1])
    u = _C.rand([rows.shape[0], num_samples], 'float64').numpy()
    out = np.zeros((rows.shape[0], num_samples), dtype=np.int64)
    for i, row in enumerate(rows):
        pr = row / row.sum()
        if replacement or num_samples == 1:
            out[i] = np.searchsorted(np.cumsum(pr), u[i], side='right').clip(0, len(pr) - 1)
        else:
            keys = np.log(np.maximum(u[i][0], 1e-30)) / np.maximum(pr, 1e-30)
            out[i] = np.argsort(-keys)[:num_samples]
    return to_tensor(out.reshape(p.shape[:-1] + (num_samples,)))
