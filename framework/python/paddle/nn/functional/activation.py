"""Activations (Paddle's paddle/nn/functional/activation.py)."""
from paddle import _C
from paddle.amp import _state as _amp
from paddle._lazy import forward_to as _forward_to
from ._args import _check_tensor


def relu(x, name=None):
    _check_tensor(x, 'relu')
    return _C.relu(x)


def relu_(x, name=None):
    out = relu(x)
    x._share(out)
    return x


def relu6(x, name=None):
    return _C.clip(x, 0.0, 6.0)


def sigmoid(x, name=None):
    _check_tensor(x, 'sigmoid')
    return _C.sigmoid(x)


def tanh(x, name=None):
    _check_tensor(x, 'tanh')
    return _C.tanh(x)


def tanh_(x, name=None):
    out = tanh(x)
    x._share(out)
    return x


def _cast_for(x, dtype):
    if dtype is None:
        return x
    return _C.cast(x, dtype)


def softmax(x, axis=-1, dtype=None, name=None):
    _check_tensor(x, 'softmax')
    x = _cast_for(x, dtype)
    if _amp.ON and _amp.current():
        return _amp.call('softmax', _C.softmax, (x,), int(axis))
    return _C.softmax(x, int(axis))


def softmax_(x, axis=-1, dtype=None, name=None):
    out = softmax(x, axis, dtype)
    x._share(out)
    return x


def log_softmax(x, axis=-1, dtype=None, name=None):
    _check_tensor(x, 'log_softmax')
    x = _cast_for(x, dtype)
    if _amp.ON and _amp.current():
        return _amp.call('log_softmax', _C.log_softmax, (x,), int(axis))
    return _C.log_softmax(x, int(axis))


def gelu(x, approximate=False, name=None):
    _check_tensor(x, 'gelu')
    return _C.gelu(x, bool(approximate))


def leaky_relu(x, negative_slope=0.01, name=None):
    _check_tensor(x, 'leaky_relu')
    return _C.leaky_relu(x, float(negative_slope))


def elu(x, alpha=1.0, name=None):
    neg = _C.multiply(_C.subtract(_C.exp(_C.minimum(x, 0.0)), 1.0), float(alpha))
    return _C.where(_C.greater_than(x, 0.0), x, neg)


def celu(x, alpha=1.0, name=None):
    a = float(alpha)
    neg = _C.multiply(_C.subtract(_C.exp(_C.divide(_C.minimum(x, 0.0), a)), 1.0), a)
    return _C.add(_C.maximum(x, 0.0), _C.minimum(neg, 0.0))


def selu(x, scale=1.0507009873554804934193349852946,
         alpha=1.6732632423543772848170429916717, name=None):
    return _C.multiply(elu(x, alpha), float(scale))


def silu(x, name=None):
    return _C.silu(x)


def swish(x, name=None):
    return _C.silu(x)


def softplus(x, beta=1, threshold=20, name=None):
    b = float(beta)
    bx = _C.multiply(x, b)
    # log(1 + exp(bx)) / b computed stably: max(bx,0) + log(1 + exp(-|bx|))
    soft = _C.divide(_C.add(_C.maximum(bx, 0.0),
                            _C.log(_C.add(_C.exp(_C.neg(_C.abs(bx))), 1.0))), b)
    return _C.where(_C.greater_than(bx, float(threshold)), x, soft)


def mish(x, name=None):
    return _C.multiply(x, _C.tanh(softplus(x)))


def softsign(x, name=None):
    return _C.divide(x, _C.add(_C.abs(x), 1.0))


def softshrink(x, threshold=0.5, name=None):
    t = float(threshold)
    return _C.where(_C.greater_than(x, t), _C.subtract(x, t),
                    _C.where(_C.less_than(x, -t), _C.add(x, t), _C.multiply(x, 0.0)))


def hardshrink(x, threshold=0.5, name=None):
    t = float(threshold)
    keep = _C.logical_or(_C.greater_than(x, t), _C.less_than(x, -t))
    return _C.where(keep, x, _C.multiply(x, 0.0))


def hardsigmoid(x, slope=0.1666667, offset=0.5, name=None):
    return _C.clip(_C.add(_C.multiply(x, float(slope)), float(offset)), 0.0, 1.0)


def hardswish(x, name=None):
    return _C.divide(_C.multiply(x, _C.clip(_C.add(x, 3.0), 0.0, 6.0)), 6.0)


def hardtanh(x, min=-1.0, max=1.0, name=None):
    return _C.clip(x, float(min), float(max))


def tanhshrink(x, name=None):
    return _C.subtract(x, _C.tanh(x))


def log_sigmoid(x, name=None):
    # -softplus(-x)
    return _C.neg(softplus(_C.neg(x)))


def prelu(x, weight, data_format='NCHW', name=None):
    w = weight
    if weight.shape != [1] and x.ndim >= 2:
        shape = [1] * x.ndim
        ch = 1 if data_format.startswith('NC') else x.ndim - 1
        shape[ch] = weight.shape[0]
        w = _C.reshape(weight, shape)
    return _C.where(_C.greater_than(x, 0.0), x, _C.multiply(x, w))


def glu(x, axis=-1, name=None):
    a, b = _C.split(x, 2, int(axis))
    return _C.multiply(a, _C.sigmoid(b))


def maxout(x, groups, axis=1, name=None):
    """Max over each run of `groups` consecutive channels: C -> C / groups."""
    _check_tensor(x, 'maxout')
    nd = x.ndim
    ax = axis + nd if axis < 0 else axis
    if ax not in (1, nd - 1):
        raise ValueError("maxout: axis must be 1 or -1, got {}".format(axis))
    c = x.shape[ax]
    groups = int(groups)
    if groups <= 0 or c % groups:
        raise ValueError("maxout: channels ({}) must be divisible by groups ({})".format(
            c, groups))
    shape = list(x.shape[:ax]) + [c // groups, groups] + list(x.shape[ax + 1:])
    return _C.max(_C.reshape(x, shape), [ax + 1], False)


def thresholded_relu(x, threshold=1.0, value=0.0, name=None):
    """x where x > threshold, else value."""
    _check_tensor(x, 'thresholded_relu')
    keep = _C.greater_than(x, float(threshold))
    return _C.where(keep, x, float(value))


def rrelu(x, lower=1. / 8., upper=1. / 3., training=True, name=None):
    """Randomised leaky ReLU: slope ~ U(lower, upper) per element in training,
    (lower + upper) / 2 otherwise."""
    _check_tensor(x, 'rrelu')
    if not 0 <= lower <= upper <= 1:
        raise ValueError("rrelu: need 0 <= lower <= upper <= 1, got {} and {}".format(
            lower, upper))
    if not training:
        return _C.leaky_relu(x, (lower + upper) / 2.0)
    dt = str(x.dtype).replace('paddle.', '')
    slope = _C.add(_C.multiply(_C.rand(list(x.shape), dt), float(upper - lower)), float(lower))
    return _C.where(_C.greater_equal(x, 0.0), x, _C.multiply(x, slope))


def gumbel_softmax(x, temperature=1.0, hard=False, axis=-1, name=None):
    """softmax((x + Gumbel noise) / temperature); hard=True returns one-hot
    samples with the soft sample's gradient (straight-through)."""
    _check_tensor(x, 'gumbel_softmax')
    if temperature <= 0:
        raise ValueError("gumbel_softmax: temperature must be positive, got {}".format(
            temperature))
    dt = str(x.dtype).replace('paddle.', '')
    u = _C.clip(_C.rand(list(x.shape), dt), 1e-20, 1.0)
    g = _C.neg(_C.log(_C.neg(_C.log(u))))
    y = _C.softmax(_C.divide(_C.add(x, g), float(temperature)), axis)
    if not hard:
        return y
    idx = _C.argmax(y, axis, True)
    from paddle.tensor.manipulation import put_along_axis
    hard_y = put_along_axis(_C.multiply(y.detach(), 0.0), idx, 1.0, axis)
    return _C.add(_C.subtract(hard_y, y.detach()), y)


# This module held every function of paddle.nn.functional before the package followed
# Paddle's module layout; those names still import from here.
__getattr__ = _forward_to(__name__, 'paddle.nn.functional')
