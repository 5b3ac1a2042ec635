"""Argument normalisation shared by the paddle.tensor modules (axes, shapes,
dtypes, Python scalars and sequences as Tensors)."""
import numbers

import numpy as np

from paddle import _C
from paddle.framework.dtype import get_default_dtype, convert_dtype

Tensor = _C.Tensor


def _axis(axis):
    """axis argument: None, an int, a list of ints (a Tensor gives its values)."""
    if axis is None:
        return None
    if isinstance(axis, Tensor):
        v = axis.numpy().reshape(-1).tolist()
        return v[0] if axis.ndim == 0 else v
    if isinstance(axis, (list, tuple)):
        return [int(a) for a in axis]
    return int(axis)


def _t(x):
    """Lists, tuples and arrays as Tensors; Tensors and Python scalars unchanged."""
    return x if isinstance(x, Tensor) else _C.to_tensor(np.asarray(x)) \
        if isinstance(x, (list, tuple, np.ndarray)) else x


def _ints(v):
    """A list of ints from an int, a sequence (of ints or 1-element Tensors) or a Tensor."""
    if isinstance(v, Tensor):
        return [int(i) for i in v.numpy().reshape(-1)]
    if isinstance(v, numbers.Integral):
        return [int(v)]
    return [int(i.item()) if isinstance(i, Tensor) else int(i) for i in v]


def _dt(dtype, default=None):
    """dtype argument by name; None is `default`, else the default dtype."""
    if dtype is None:
        return default if default is not None else get_default_dtype()
    return convert_dtype(dtype)


def _shape(shape):
    """shape argument: an int, a sequence, a numpy array or a Tensor -> list of ints."""
    if isinstance(shape, Tensor):
        return [int(v) for v in shape.numpy().reshape(-1)]
    if isinstance(shape, numbers.Integral):
        return [int(shape)]
    if isinstance(shape, np.ndarray):
        return [int(v) for v in shape.reshape(-1)]
    return [int(s) for s in shape]
