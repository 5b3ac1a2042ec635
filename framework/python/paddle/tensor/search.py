"""Search and selection (Paddle's paddle/tensor/search.py): argmax, argmin,
argsort, sort, topk, where, nonzero, masked_select, index_select."""
import numpy as np

from paddle import _C
from paddle.framework.dtype import convert_dtype
from ._args import _t

Tensor = _C.Tensor


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


def index_select(x, index, axis=0, name=None):
    return _C.index_select(x, index, int(axis))
