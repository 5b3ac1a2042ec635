"""Pooling (Paddle's paddle/nn/functional/pooling.py)."""
import numbers

from paddle import _C
from paddle.amp import _state as _amp
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
    if _amp.ON and _amp.current():
        return _amp.call('pool2d', _C.avg_pool1d, (x,), k, s, pad, bool(ceil_mode),
                         bool(exclusive))
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
    if _amp.ON and _amp.current():
        out = _amp.call('pool2d', _C.avg_pool2d, (x,), k, s, pad, bool(ceil_mode),
                        bool(exclusive))
    else:
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
    if _amp.ON and _amp.current():
        return _amp.call('max_pool2d_with_index' if return_mask else 'pool2d', _C.max_pool1d,
                         (x,), k, s, pad, bool(ceil_mode), bool(return_mask))
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
    if _amp.ON and _amp.current():
        r = _amp.call('max_pool2d_with_index' if return_mask else 'pool2d', _C.max_pool2d,
                      (x,), k, s, pad, bool(ceil_mode), bool(return_mask))
    else:
        r = _C.max_pool2d(x, k, s, pad, bool(ceil_mode), bool(return_mask))
    if return_mask:
        return _from_nchw(r[0], moved), _from_nchw(r[1], moved)
    return _from_nchw(r, moved)


def adaptive_avg_pool1d(x, output_size, name=None):
    _check_tensor(x, 'adaptive_avg_pool1d')
    if _amp.ON and _amp.current():
        return _amp.call('pool2d', _C.adaptive_avg_pool1d, (x,), int(output_size))
    return _C.adaptive_avg_pool1d(x, int(output_size))


def adaptive_avg_pool2d(x, output_size, data_format='NCHW', name=None):
    _check_tensor(x, 'adaptive_avg_pool2d')
    x, moved = _to_nchw(x, data_format, 2)
    if isinstance(output_size, numbers.Integral):
        osz = [int(output_size)] * 2
    else:
        osz = [x.shape[2 + i] if v is None else int(v) for i, v in enumerate(output_size)]
    if _amp.ON and _amp.current():
        return _from_nchw(_amp.call('pool2d', _C.adaptive_avg_pool2d, (x,), osz), moved)
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


def _depth_windows(depth, k, s, p, ceil_mode):
    """[start, end) of each pooling window along depth in padded coordinates,
    clipped to the padded extent (PyTorch's/Paddle's output-size rule)."""
    span = depth + 2 * p - k
    if span < 0:
        raise ValueError("pool3d: kernel depth {} is larger than the padded depth {}".format(
            k, depth + 2 * p))
    out = (-(-span // s) if ceil_mode else span // s) + 1
    if ceil_mode and (out - 1) * s >= depth + p:
        out -= 1
    return [(i * s, min(i * s + k, depth + 2 * p)) for i in range(out)]


def _pool3d_args(x, kernel_size, stride, padding, fname):
    _check_tensor(x, fname)
    if x.ndim != 5:
        raise ValueError("{}: x must be 5-D [N, C, D, H, W], got {}".format(fname,
                                                                          list(x.shape)))
    k = _ntuple(kernel_size, 3, 'kernel_size')
    st = k if stride is None else _ntuple(stride, 3, 'stride')
    if isinstance(padding, str):
        raise ValueError("{}: string padding is not supported for 3-D pooling; give ints"
                         .format(fname))
    p = _ntuple(padding, 3, 'padding')
    if min(k + st) <= 0 or min(p) < 0 or any(2 * p[i] > k[i] for i in range(3)):
        raise ValueError("{}: bad kernel_size {}, stride {} or padding {}".format(
            fname, k, st, p))
    return k, st, p


def max_pool3d(x, kernel_size, stride=None, padding=0, ceil_mode=False, return_mask=False,
               data_format='NCDHW', name=None):
    """Max pooling over [D, H, W]: max_pool2d over (H, W) of every depth slice,
    then a max over each depth window (max is separable)."""
    if return_mask:
        raise NotImplementedError("max_pool3d: return_mask is not supported")
    x, moved = _to_nchw(x, data_format, 3)
    k, st, p = _pool3d_args(x, kernel_size, stride, padding, 'max_pool3d')
    n, c, d = x.shape[0], x.shape[1], x.shape[2]
    y = max_pool2d(_C.reshape(x, [n, c * d] + list(x.shape[3:])), k[1:], st[1:], p[1:],
                   ceil_mode=ceil_mode)
    y = _C.reshape(y, [n, c, d] + list(y.shape[2:]))
    if p[0]:
        y = _C.pad(y, [0, 0, 0, 0, p[0], p[0], 0, 0, 0, 0], 'constant', float('-inf'))
    wins = [_C.max(_C.slice(y, [2], [a], [b]), [2], True)
            for a, b in _depth_windows(d, k[0], st[0], p[0], ceil_mode)]
    return _from_nchw(_C.concat(wins, 2), moved)


def avg_pool3d(x, kernel_size, stride=None, padding=0, ceil_mode=False, exclusive=True,
               divisor_override=None, data_format='NCDHW', name=None):
    """Average pooling over [D, H, W], separable: avg_pool2d over (H, W), then
    the mean of each depth window (padding excluded from counts when exclusive)."""
    x, moved = _to_nchw(x, data_format, 3)
    k, st, p = _pool3d_args(x, kernel_size, stride, padding, 'avg_pool3d')
    n, c, d = x.shape[0], x.shape[1], x.shape[2]
    y = avg_pool2d(_C.reshape(x, [n, c * d] + list(x.shape[3:])), k[1:], st[1:], p[1:],
                   ceil_mode, exclusive)
    y = _C.reshape(y, [n, c, d] + list(y.shape[2:]))
    if p[0]:
        y = _C.pad(y, [0, 0, 0, 0, p[0], p[0], 0, 0, 0, 0], 'constant', 0.0)
    wins = []
    for a, b in _depth_windows(d, k[0], st[0], p[0], ceil_mode):
        total = _C.sum(_C.slice(y, [2], [a], [b]), [2], True)
        # exclusive: real elements only; otherwise the whole kernel (Paddle's pool kernels
        # divide by ksize even for windows that ceil_mode cuts short)
        valid = min(b, d + p[0]) - max(a, p[0]) if exclusive else k[0]
        wins.append(_C.divide(total, float(max(valid, 1))))
    out = _C.concat(wins, 2)
    if divisor_override:
        out = _C.multiply(out, float(k[0] * k[1] * k[2]) / float(divisor_override))
    return _from_nchw(out, moved)


def _adaptive3d(x, output_size, fname):
    _check_tensor(x, fname)
    if x.ndim != 5:
        raise ValueError("{}: x must be 5-D, got {}".format(fname, list(x.shape)))
    if isinstance(output_size, numbers.Integral):
        osz = [int(output_size)] * 3
    else:
        osz = [x.shape[2 + i] if v is None else int(v) for i, v in enumerate(output_size)]
    if len(osz) != 3 or min(osz) <= 0:
        raise ValueError("{}: bad output_size {}".format(fname, output_size))
    return osz


def adaptive_avg_pool3d(x, output_size, data_format='NCDHW', name=None):
    x, moved = _to_nchw(x, data_format, 3)
    osz = _adaptive3d(x, output_size, 'adaptive_avg_pool3d')
    n, c, d = x.shape[0], x.shape[1], x.shape[2]
    y = _C.adaptive_avg_pool2d(_C.reshape(x, [n, c * d] + list(x.shape[3:])), osz[1:])
    y = _C.reshape(y, [n, c, d] + osz[1:])
    wins = [_C.mean(_C.slice(y, [2], [a], [b]), [2], True)
            for a, b in _adaptive_bounds(d, osz[0])]
    return _from_nchw(_C.concat(wins, 2), moved)


def adaptive_max_pool3d(x, output_size, return_mask=False, name=None):
    if return_mask:
        raise NotImplementedError("adaptive_max_pool3d: return_mask is not supported")
    osz = _adaptive3d(x, output_size, 'adaptive_max_pool3d')
    n, c, d = x.shape[0], x.shape[1], x.shape[2]
    y = adaptive_max_pool2d(_C.reshape(x, [n, c * d] + list(x.shape[3:])), osz[1:])
    y = _C.reshape(y, [n, c, d] + osz[1:])
    wins = [_C.max(_C.slice(y, [2], [a], [b]), [2], True)
            for a, b in _adaptive_bounds(d, osz[0])]
    return _C.concat(wins, 2)


# This module held every function of paddle.nn.functional before the package followed
# Paddle's module layout; those names still import from here.
__getattr__ = _forward_to(__name__, 'paddle.nn.functional')
