"""Pooling (Paddle's paddle/nn/functional/pooling.py)."""
import numbers

from paddle import _C
from paddle._lazy import forward_to as _forward_to
from ._args import _check_tensor, _conv_padding, _from_nchw, _ntuple, _to_nchw


def _pool_padding(padding, nd, ksize, stride, spatial, fname):
    pad = _conv_padding(padding, nd, ksize, stride, [1] * nd, spatial, fname)
    sym = []
    for i in range(nd):
        if pad[2 * i] != pad[2 * i + 1]:
            raise NotImplementedError("{}: asymmetric padding {} is not supported".format(
                fname, pad))
        sym.append(pad[2 * i])
    return sym


def avg_pool1d(x, kernel_size, stride=None, padding=0, exclusive=True, ceil_mode=False,
               name=None):
    _check_tensor(x, 'avg_pool1d')
    k = _ntuple(kernel_size, 1, 'kernel_size')[0]
    s = k if stride is None else _ntuple(stride, 1, 'stride')[0]
    pad = _pool_padding(padding, 1, [k], [s], x.shape[2:], 'avg_pool1d')[0]
    return _C.avg_pool1d(x, k, s, pad, bool(ceil_mode), bool(exclusive))


def avg_pool2d(x, kernel_size, stride=None, padding=0, ceil_mode=False, exclusive=True,
               divisor_override=None, data_format='NCHW', name=None):
    _check_tensor(x, 'avg_pool2d')
    if x.ndim != 4:
        raise ValueError("avg_pool2d: x must be 4-D [N, C, H, W], got {}".format(list(x.shape)))
    x, moved = _to_nchw(x, data_format, 2)
    k = _ntuple(kernel_size, 2, 'kernel_size')
    s = k if stride is None else _ntuple(stride, 2, 'stride')
    pad = _pool_padding(padding, 2, k, s, x.shape[2:], 'avg_pool2d')
    out = _C.avg_pool2d(x, k, s, pad, bool(ceil_mode), bool(exclusive))
    if divisor_override:
        out = _C.multiply(out, float(k[0] * k[1]) / float(divisor_override))
    return _from_nchw(out, moved)


def max_pool1d(x, kernel_size, stride=None, padding=0, return_mask=False, ceil_mode=False,
               name=None):
    _check_tensor(x, 'max_pool1d')
    k = _ntuple(kernel_size, 1, 'kernel_size')[0]
    s = k if stride is None else _ntuple(stride, 1, 'stride')[0]
    pad = _pool_padding(padding, 1, [k], [s], x.shape[2:], 'max_pool1d')[0]
    return _C.max_pool1d(x, k, s, pad, bool(ceil_mode), bool(return_mask))


def max_pool2d(x, kernel_size, stride=None, padding=0, return_mask=False, ceil_mode=False,
               data_format='NCHW', name=None):
    _check_tensor(x, 'max_pool2d')
    if x.ndim != 4:
        raise ValueError("max_pool2d: x must be 4-D [N, C, H, W], got {}".format(list(x.shape)))
    x, moved = _to_nchw(x, data_format, 2)
    k = _ntuple(kernel_size, 2, 'kernel_size')
    s = k if stride is None else _ntuple(stride, 2, 'stride')
    pad = _pool_padding(padding, 2, k, s, x.shape[2:], 'max_pool2d')
    r = _C.max_pool2d(x, k, s, pad, bool(ceil_mode), bool(return_mask))
    if return_mask:
        return _from_nchw(r[0], moved), _from_nchw(r[1], moved)
    return _from_nchw(r, moved)


def adaptive_avg_pool1d(x, output_size, name=None):
    _check_tensor(x, 'adaptive_avg_pool1d')
    return _C.adaptive_avg_pool1d(x, int(output_size))


def adaptive_avg_pool2d(x, output_size, data_format='NCHW', name=None):
    _check_tensor(x, 'adaptive_avg_pool2d')
    x, moved = _to_nchw(x, data_format, 2)
    if isinstance(output_size, numbers.Integral):
        osz = [int(output_size)] * 2
    else:
        osz = [x.shape[2 + i] if v is None else int(v) for i, v in enumerate(output_size)]
    return _from_nchw(_C.adaptive_avg_pool2d(x, osz), moved)


def adaptive_max_pool2d(x, output_size, return_mask=False, name=None):
    if isinstance(output_size, numbers.Integral):
        osz = [int(output_size)] * 2
    else:
        osz = [x.shape[2 + i] if v is None else int(v) for i, v in enumerate(output_size)]
    h, w = x.shape[2], x.shape[3]
    if h % osz[0] or w % osz[1]:
        raise NotImplementedError("adaptive_max_pool2d: input size must be divisible by "
                                  "output_size, got {} and {}".format([h, w], osz))
    k = [h // osz[0], w // osz[1]]
    return max_pool2d(x, k, k, 0, return_mask=return_mask)


# This module held every function of paddle.nn.functional before the package followed
# Paddle's module layout; those names still import from here.
__getattr__ = _forward_to(__name__, 'paddle.nn.functional')
