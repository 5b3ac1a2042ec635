"""Normalisation (Paddle's paddle/nn/functional/norm.py)."""
import numbers

from paddle import _C
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
    out = _C.batch_norm(x, running_mean, running_var, weight, bias, train, float(momentum),
                        float(epsilon))
    return _from_nchw(out, moved)


def layer_norm(x, normalized_shape, weight=None, bias=None, epsilon=1e-05, name=None):
    _check_tensor(x, 'layer_norm')
    if isinstance(normalized_shape, numbers.Integral):
        normalized_shape = [int(normalized_shape)]
    return _C.layer_norm(x, list(normalized_shape), weight, bias, float(epsilon))


def normalize(x, p=2, axis=1, epsilon=1e-12, name=None):
    if p == 2:
        norm = _C.sqrt(_C.sum(_C.square(x), axis, True))
    elif p == 1:
        norm = _C.sum(_C.abs(x), axis, True)
    else:
        norm = _C.pow(_C.sum(_C.pow(_C.abs(x), float(p)), axis, True), 1.0 / p)
    return _C.divide(x, _C.maximum(norm, float(epsilon)))


# This module held every function of paddle.nn.functional before the package followed
# Paddle's module layout; those names still import from here.
__getattr__ = _forward_to(__name__, 'paddle.nn.functional')
