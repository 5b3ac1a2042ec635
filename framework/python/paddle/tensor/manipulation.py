"""Shape and layout ops, joining, gathering and scattering (Paddle's
paddle/tensor/manipulation.py)."""
import numpy as np

from paddle import _C
from paddle.framework.dtype import convert_dtype
from ._args import _axis, _ints

Tensor = _C.Tensor


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


def masked_fill(x, mask, value, name=None):
    v = value if isinstance(value, Tensor) else _C.full([], float(value), x.dtype)
    return _C.where(mask, _C.cast(v, x.dtype) if v.dtype != x.dtype else v, x)


def tolist(x):
    """paddle.tolist: the tensor's values as (nested) Python lists."""
    return x._numpy().tolist()


def as_complex(x, name=None):
    """paddle.as_complex: float [..., 2] -> complex [...] (shares memory)."""
    return _C.as_complex(x)


def as_real(x, name=None):
    """paddle.as_real: complex [...] -> float [..., 2] (shares memory)."""
    return _C.as_real(x)
