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


def _adaptive_bounds(n, out):
    """PyTorch/Paddle adaptive windows: [floor(i*n/out), ceil((i+1)*n/out))."""
    return [((i * n) // out, -((-(i + 1) * n) // out)) for i in range(out)]


def adaptive_max_pool2d(x, output_size, return_mask=False, name=None):
    """Max over adaptive windows; sizes that divide the input use the C
    max_pool2d, others a max per window row then per window column (max is
    separable over rectangles), so gradients flow through C max/slice ops.
    The mask holds each maximum's flat h*W+w index."""
    _check_tensor(x, 'adaptive_max_pool2d')
    if x.ndim != 4:
        raise ValueError("adaptive_max_pool2d: x must be 4-D, got {}".format(list(x.shape)))
    if isinstance(output_size, numbers.Integral):
        osz = [int(output_size)] * 2
    else:
        osz = [x.shape[2 + i] if v is None else int(v) for i, v in enumerate(output_size)]
    if len(osz) != 2 or min(osz) <= 0:
        raise ValueError("adaptive_max_pool2d: bad output_size {}".format(output_size))
    h, w = x.shape[2], x.shape[3]
    if h % osz[0] == 0 and w % osz[1] == 0:
        k = [h // osz[0], w // osz[1]]
        return max_pool2d(x, k, k, 0, return_mask=return_mask)
    rows = [_C.max(_C.slice(x, [2], [a], [b]), [2], True) for a, b in _adaptive_bounds(h, osz[0])]
    y = _C.concat(rows, 2)
    cols = [_C.max(_C.slice(y, [3], [a], [b]), [3], True) for a, b in _adaptive_bounds(w, osz[1])]
    out = _C.concat(cols, 3)
    if not return_mask:
        return out
    import numpy as np
    from paddle.tensor.creation import to_tensor
    a = x.numpy()
    mask = np.zeros(a.shape[:2] + tuple(osz), dtype=np.int32)
    for i, (r0, r1) in enumerate(_adaptive_bounds(h, osz[0])):
        for j, (c0, c1) in enumerate(_adaptive_bounds(w, osz[1])):
            win = a[:, :, r0:r1, c0:c1].reshape(a.shape[0], a.shape[1], -1)
            arg = win.argmax(-1)
            mask[:, :, i, j] = (r0 + arg // (c1 - c0)) * w + c0 + arg % (c1 - c0)
    return out, to_tensor(mask)


def adaptive_max_pool1d(x, output_size, return_mask=False, name=None):
    """[N, C, L] -> [N, C, output_size] maxima over adaptive windows."""
    _check_tensor(x, 'adaptive_max_pool1d')
    if x.ndim != 3:
        raise ValueError("adaptive_max_pool1d: x must be 3-D, got {}".format(list(x.shape)))
    r = adaptive_max_pool2d(_C.unsqueeze(x, [2]), [1, int(output_size)], return_mask)
    if return_mask:
        return _C.squeeze(r[0], [2]), _C.squeeze(r[1], [2])
    return _C.squeeze(r, [2])


def lp_pool2d(x, norm_type, kernel_size, stride=None, ceil_mode=False, data_format='NCHW',
              name=None):
    """Power-average pooling: (sum over each window of x^p)^(1/p)."""
    _check_tensor(x, 'lp_pool2d')
    k = _ntuple(kernel_size, 2, 'kernel_size')
    p = float(norm_type)
    if p <= 0:
        raise ValueError("lp_pool2d: norm_type must be positive, got {}".format(norm_type))
    out = avg_pool2d(_C.pow(x, p), k, stride, 0, ceil_mode, True, None, data_format)
    out = _C.multiply(out, float(k[0] * k[1]))
    return _C.pow(out, 1.0 / p)


def lp_pool1d(x, norm_type, kernel_size, stride=None, ceil_mode=False, data_format='NCL',
              name=None):
    _check_tensor(x, 'lp_pool1d')
    if data_format == 'NLC':
        x = _C.transpose(x, [0, 2, 1])
    k = _ntuple(kernel_size, 1, 'kernel_size')[0]
    s = k if stride is None else _ntuple(stride, 1, 'stride')[0]
    out = lp_pool2d(_C.unsqueeze(x, [2]), norm_type, [1, k], [1, s], ceil_mode)
    out = _C.squeeze(out, [2])
    return _C.transpose(out, [0, 2, 1]) if data_format == 'NLC' else out


def max_unpool2d(x, indices, kernel_size, stride=None, padding=0, data_format='NCHW',
                 output_size=None, name=None):
    """The inverse of max_pool2d(return_mask=True): each value goes back to
    its flat h*W+w position in a zero [N, C, H, W] output."""
    from paddle.tensor.creation import zeros
    from paddle.tensor.manipulation import put_along_axis
    _check_tensor(x, 'max_unpool2d')
    if data_format != 'NCHW':
        raise ValueError("max_unpool2d: data_format must be NCHW, got {}".format(data_format))
    if x.ndim != 4 or list(indices.shape) != list(x.shape):
        raise ValueError("max_unpool2d: x and indices must be 4-D of one shape, got {} and {}"
                         .format(list(x.shape), list(indices.shape)))
    k = _ntuple(kernel_size, 2, 'kernel_size')
    s = k if stride is None else _ntuple(stride, 2, 'stride')
    p = _ntuple(padding, 2, 'padding')
    if output_size is None:
        osz = [(x.shape[2 + i] - 1) * s[i] - 2 * p[i] + k[i] for i in range(2)]
    else:
        osz = [int(v) for v in list(output_size)[-2:]]
    n, c = x.shape[0], x.shape[1]
    idx = _C.reshape(_C.cast(indices, 'int64'), [n, c, -1])
    if idx.size and (int(idx.numpy().max()) >= osz[0] * osz[1] or int(idx.numpy().min()) < 0):
        raise ValueError("max_unpool2d: an index is outside the output of size {}".format(osz))
    flat = zeros([n, c, osz[0] * osz[1]], dtype=x.dtype)
    out = put_along_axis(flat, idx, _C.reshape(x, [n, c, -1]), 2)
    return _C.reshape(out, [n, c] + osz)


def max_unpool1d(x, indices, kernel_size, stride=None, padding=0, data_format='NCL',
                 output_size=None, name=None):
    k = _ntuple(kernel_size, 1, 'kernel_size')[0]
    s = k if stride is None else _ntuple(stride, 1, 'stride')[0]
    p = _ntuple(padding, 1, 'padding')[0]
    osz = None if output_size is None else [1, int(list(output_size)[-1])]
    out = max_unpool2d(_C.unsqueeze(x, [2]), _C.unsqueeze(indices, [2]), [1, k], [1, s],
                       [0, p], 'NCHW', osz)
    return _C.squeeze(out, [2])


# This module held every function of paddle.nn.functional before the package followed
# Paddle's module layout; those names still import from here.
__getattr__ = _forward_to(__name__, 'paddle.nn.functional')
