"""Tensor creation (Paddle's paddle/tensor/creation.py): to_tensor, zeros,
ones, empty, full, *_like, arange, linspace, eye, assign, clone, tril, triu,
meshgrid, diag."""
import builtins as _builtins

import numpy as np

from paddle import _C
from paddle._lazy import forward_to as _forward_to
from paddle.framework.dtype import get_default_dtype, convert_dtype
from ._args import _dt, _shape

Tensor = _C.Tensor


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
           'uint64': np.int64, 'float128': np.float64, 'longdouble': np.float64,
           'complex256': np.complex128, 'clongdouble': np.complex128}


def _default_complex():
    return 'complex128' if get_default_dtype() == 'float64' else 'complex64'


def to_tensor(data, dtype=None, place=None, stop_gradient=True):
    """paddle.to_tensor: a new Tensor from a scalar, list, tuple, numpy array
    or Tensor (copied). Python floats take the default dtype, Python ints
    int64, numpy arrays keep their dtype; user tensors have stop_gradient=True.
    place (a Place or 'cpu'/'gpu'/'gpu:N'; None: paddle.set_device's) is
    where it lives: a leaf there, whatever stop_gradient."""
    if place is None and _C.device_default() == 0:
        return _to_tensor_here(data, dtype, stop_gradient)
    from paddle.framework.place import _get_place, _to_place
    p = _get_place(place)
    t = _to_tensor_here(data, dtype, True)
    if t.place != p:
        t = _to_place(t, p)
    if not stop_gradient:
        t.stop_gradient = False
    return t


def _to_tensor_here(data, dtype, stop_gradient):
    """to_tensor on the device creation functions use (fw_device_default)."""
    dt = None if dtype is None else convert_dtype(dtype)
    if isinstance(data, Tensor):
        return _C.to_tensor(data, dt, stop_gradient)
    if isinstance(data, np.generic):
        data = np.asarray(data)
    elif isinstance(data, (bool, int, float)):
        if isinstance(data, float) and dt is None:
            dt = get_default_dtype()
        return _C.to_tensor(data, dt, stop_gradient)
    if isinstance(data, _builtins.complex):
        data = np.array(data, dtype=np.complex128)
        if dt is None:
            dt = _default_complex()
    if isinstance(data, (str, bytes)) or data is None:
        raise TypeError("to_tensor: unsupported data type {}".format(type(data).__name__))
    a = data if isinstance(data, np.ndarray) else _np_of(data)
    if a.dtype.name in _NP_FIX:
        a = a.astype(_NP_FIX[a.dtype.name])
    elif a.dtype.kind in 'US O':
        raise TypeError("to_tensor: cannot make a Tensor of numpy dtype {}".format(a.dtype))
    if not isinstance(data, np.ndarray) and dt is None and a.dtype == np.float64:
        dt = get_default_dtype()  # Python float lists take the default dtype
    elif not isinstance(data, np.ndarray) and dt is None and a.dtype == np.complex128:
        dt = _default_complex()   # and Python complex lists its complex dtype
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


def diag(x, offset=0, padding_value=0, name=None):
    a = x.numpy()
    if a.ndim == 1:
        r = np.diag(a, offset)
        if padding_value:
            r = np.where(np.diag(np.ones_like(a, dtype=bool), offset), r, padding_value)
        return _C.to_tensor(np.ascontiguousarray(r.astype(a.dtype)))
    return _C.to_tensor(np.ascontiguousarray(np.diag(a, offset)))


# This module held the random functions too before they moved to
# paddle.tensor.random (Paddle's layout); every paddle.tensor name still
# imports from here.
__getattr__ = _forward_to(__name__, 'paddle.tensor')


def complex(real, imag, name=None):  # noqa: A001
    """paddle.complex(real, imag): a complex tensor from float32 (complex64)
    or float64 (complex128) parts; real and imag broadcast."""
    return _C.complex(real, imag)
