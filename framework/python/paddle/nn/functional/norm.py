"""Normalisation (Paddle's paddle/nn/functional/norm.py)."""
import numbers

from paddle import _C
from paddle.amp import _state as _amp
from paddle._lazy import forward_to as _forward_to
from ._args import _check_tensor, _from_nchw, _to_nchw


def batch_norm(x, running_mean, running_var, weight=None, bias=None, training=False,
               momentum=0.9, epsilon=1e-05, data_format='NCHW', use_global_stats=None,
               name=None):
    _check_tensor(x, 'batch_norm')
    moved = False
    if data_format in ('NHWC', 'NLC', 'NDHWC') and x.ndim > 2:
        x, moved = _to_nchw(x, data_format, x.ndim - 2)
    train = bool(training)
    if use_global_stats is True:
        train = False
    elif use_global_stats is False:
        train = True
    if _amp.ON and _amp.current():
        # only x is cast: the statistics are updated in place, in float32
        out = _amp.call('batch_norm', _C.batch_norm, (x,), running_mean, running_var, weight,
                        bias, train, float(momentum), float(epsilon))
    else:
        out = _C.batch_norm(x, running_mean, running_var, weight, bias, train,
                            float(momentum), float(epsilon))
    return _from_nchw(out, moved)


def layer_norm(x, normalized_shape, weight=None, bias=None, epsilon=1e-05, name=None):
    _check_tensor(x, 'layer_norm')
    if isinstance(normalized_shape, numbers.Integral):
        normalized_shape = [int(normalized_shape)]
    if _amp.ON and _amp.current():
        return _amp.call('layer_norm', _C.layer_norm, (x,), list(normalized_shape), weight, bias,
                         float(epsilon))
    return _C.layer_norm(x, list(normalized_shape), weight, bias, float(epsilon))


def normalize(x, p=2, axis=1, epsilon=1e-12, name=None):
    if p == 2:
        norm = _C.sqrt(_C.sum(_C.square(x), axis, True))
    elif p == 1:
        norm = _C.sum(_C.abs(x), axis, True)
    else:
        norm = _C.pow(_C.sum(_C.pow(_C.abs(x), float(p)), axis, True), 1.0 / p)
    return _C.divide(x, _C.maximum(norm, float(epsilon)))


def _affine_channels(out, weight, bias, nsp):
    shape = [1, out.shape[1]] + [1] * nsp
    if weight is not None:
        out = _C.multiply(out, _C.reshape(weight, shape))
    if bias is not None:
        out = _C.add(out, _C.reshape(bias, shape))
    return out


def group_norm(x, num_groups, epsilon=1e-05, weight=None, bias=None, data_format='NCHW',
               name=None):
    """Normalise each group of num_groups channel groups over (channels of the
    group, spatial axes), then scale/shift per channel."""
    _check_tensor(x, 'group_norm')
    if _amp.ON and _amp.current():
        return _amp.call('group_norm', group_norm, (x,), num_groups, epsilon, weight, bias,
                         data_format)
    if x.ndim < 2:
        raise ValueError("group_norm: x must be at least 2-D, got {}".format(list(x.shape)))
    moved = False
    if data_format in ('NHWC', 'NLC', 'NDHWC', 'NWC'):
        x, moved = _to_nchw(x, data_format, x.ndim - 2)
    elif data_format not in ('NCHW', 'NCL', 'NCDHW', 'NCW'):
        raise ValueError("group_norm: data_format must be channels-first or -last, got {}"
                         .format(data_format))
    n, c = x.shape[0], x.shape[1]
    num_groups = int(num_groups)
    if num_groups <= 0 or c % num_groups != 0:
        raise ValueError("group_norm: channels ({}) must be divisible by num_groups ({})".format(
            c, num_groups))
    rest = list(x.shape[2:])
    g = _C.reshape(x, [n, num_groups, -1])
    g = _C.layer_norm(g, [g.shape[-1]], None, None, float(epsilon))
    out = _affine_channels(_C.reshape(g, [n, c] + rest), weight, bias, len(rest))
    return _from_nchw(out, moved)


def instance_norm(x, running_mean=None, running_var=None, weight=None, bias=None,
                  use_input_stats=True, momentum=0.9, eps=1e-05, data_format='NCHW',
                  name=None):
    """Normalise every (sample, channel) over its spatial axes (biased
    variance), then scale/shift per channel. With use_input_stats=False the
    given running statistics are used instead."""
    _check_tensor(x, 'instance_norm')
    if _amp.ON and _amp.current():
        return _amp.call('instance_norm', instance_norm, (x,), running_mean, running_var, weight,
                         bias, use_input_stats, momentum, eps, data_format)
    if x.ndim < 3:
        raise ValueError("instance_norm: x must be at least 3-D [N, C, ...], got {}".format(
            list(x.shape)))
    moved = False
    if data_format in ('NHWC', 'NLC', 'NDHWC', 'NWC'):
        x, moved = _to_nchw(x, data_format, x.ndim - 2)
    n, c = x.shape[0], x.shape[1]
    rest = list(x.shape[2:])
    if not use_input_stats:
        if running_mean is None or running_var is None:
            raise ValueError("instance_norm: use_input_stats=False needs running_mean and "
                             "running_var")
        shape = [1, c] + [1] * len(rest)
        out = _C.divide(_C.subtract(x, _C.reshape(running_mean, shape)),
                        _C.sqrt(_C.add(_C.reshape(running_var, shape), float(eps))))
    else:
        g = _C.reshape(x, [n, c, -1])
        g = _C.layer_norm(g, [g.shape[-1]], None, None, float(eps))
        out = _C.reshape(g, [n, c] + rest)
    out = _affine_channels(out, weight, bias, len(rest))
    return _from_nchw(out, moved)


def local_response_norm(x, size, alpha=1e-4, beta=0.75, k=1.0, data_format='NCHW',
                        name=None):
    """x / (k + alpha/size * sum of x^2 over `size` neighbouring channels)^beta
    (the window is centred, zero-padded: size//2 before, (size-1)//2 after)."""
    _check_tensor(x, 'local_response_norm')
    if x.ndim < 3:
        raise ValueError("local_response_norm: x must be at least 3-D, got {}".format(
            list(x.shape)))
    size = int(size)
    if size <= 0:
        raise ValueError("local_response_norm: size must be positive, got {}".format(size))
    moved = False
    if data_format in ('NHWC', 'NLC', 'NDHWC'):
        x, moved = _to_nchw(x, data_format, x.ndim - 2)
    c = x.shape[1]
    sq = _C.square(x)
    pads = [0, 0] * x.ndim
    pads[2], pads[3] = size // 2, (size - 1) // 2
    sq = _C.pad(sq, pads, 'constant', 0.0)
    acc = None
    for i in range(size):          # a window of `size` channel slices, not a loop over elements
        part = _C.slice(sq, [1], [i], [i + c])
        acc = part if acc is None else _C.add(acc, part)
    div = _C.pow(_C.add(_C.multiply(acc, float(alpha) / size), float(k)), float(beta))
    return _from_nchw(_C.divide(x, div), moved)


# This module held every function of paddle.nn.functional before the package followed
# Paddle's module layout; those names still import from here.
__getattr__ = _forward_to(__name__, 'paddle.nn.functional')
