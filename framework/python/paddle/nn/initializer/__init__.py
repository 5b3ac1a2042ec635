"""paddle.nn.initializer: callables that fill a parameter in place.

Every initializer is called as init(param, block=None) and draws from the
framework's default generator (paddle.seed), through _C.init_* (fw/init.h).
"""
import math

import numpy as np

__all__ = [
    'Initializer', 'Constant', 'Normal', 'TruncatedNormal', 'Uniform', 'XavierNormal',
    'XavierUniform', 'KaimingNormal', 'KaimingUniform', 'Assign', 'Bilinear', 'Orthogonal',
    'Dirac', 'calculate_gain', 'set_global_initializer', 'XavierInitializer',
    'MSRAInitializer', 'ConstantInitializer', 'NormalInitializer', 'UniformInitializer',
]


def _C():
    from paddle import _C as c
    return c


_global_weight_init = None
_global_bias_init = None


def set_global_initializer(weight_init, bias_init=None):
    """Initializers used by create_parameter when a layer names none."""
    global _global_weight_init, _global_bias_init
    if weight_init is not None and not isinstance(weight_init, Initializer):
        raise TypeError("weight_init should be an Initializer or None")
    if bias_init is not None and not isinstance(bias_init, Initializer):
        raise TypeError("bias_init should be an Initializer or None")
    _global_weight_init = weight_init
    _global_bias_init = bias_init


def _check_param(param):
    import paddle
    if not isinstance(param, paddle.Tensor):
        raise TypeError("initializer expects a Tensor (Parameter), got {}"
                        .format(type(param).__name__))


class Initializer:
    """Base class. Subclasses implement forward(param, block)."""

    def __call__(self, param, block=None):
        _check_param(param)
        return self.forward(param, block)

    def forward(self, param, block=None):
        raise NotImplementedError

    def _compute_fans(self, var):
        return _C().init_fans(var)


class Constant(Initializer):
    def __init__(self, value=0.0, force_cpu=False):
        self._value = float(value)

    def forward(self, param, block=None):
        _C().init_constant(param, self._value)
        return param


class Uniform(Initializer):
    def __init__(self, low=-1.0, high=1.0, seed=0, diag_num=0, diag_step=0, diag_val=1.0,
                 name=None):
        if not low < high:
            raise ValueError("Uniform: low ({}) must be less than high ({})".format(low, high))
        self._low = float(low)
        self._high = float(high)

    def forward(self, param, block=None):
        _C().init_uniform(param, self._low, self._high)
        return param


class Normal(Initializer):
    def __init__(self, mean=0.0, std=1.0, name=None):
        if std < 0:
            raise ValueError("Normal: std must be >= 0, got {}".format(std))
        self._mean = float(mean)
        self._std = float(std)

    def forward(self, param, block=None):
        _C().init_normal(param, self._mean, self._std)
        return param


class TruncatedNormal(Initializer):
    def __init__(self, mean=0.0, std=1.0, a=-2.0, b=2.0, name=None):
        if std < 0:
            raise ValueError("TruncatedNormal: std must be >= 0, got {}".format(std))
        self._mean, self._std, self._a, self._b = float(mean), float(std), float(a), float(b)

    def forward(self, param, block=None):
        _C().init_truncated_normal(param, self._mean, self._std, self._a, self._b)
        return param


def _fan(v):
    return -1 if v is None else int(v)


class XavierUniform(Initializer):
    def __init__(self, fan_in=None, fan_out=None, gain=1.0, name=None):
        self._fan_in, self._fan_out, self._gain = fan_in, fan_out, float(gain)

    def forward(self, param, block=None):
        _C().init_xavier_uniform(param, self._gain, _fan(self._fan_in), _fan(self._fan_out))
        return param


class XavierNormal(Initializer):
    def __init__(self, fan_in=None, fan_out=None, gain=1.0, name=None):
        self._fan_in, self._fan_out, self._gain = fan_in, fan_out, float(gain)

    def forward(self, param, block=None):
        _C().init_xavier_normal(param, self._gain, _fan(self._fan_in), _fan(self._fan_out))
        return param


class KaimingNormal(Initializer):
    def __init__(self, fan_in=None, negative_slope=0.0, nonlinearity='relu', mode='fan_in'):
        self._fan_in = fan_in
        self._slope = float(negative_slope)
        self._nl = nonlinearity
        if mode not in ('fan_in', 'fan_out'):
            raise ValueError("mode should be 'fan_in' or 'fan_out', got {}".format(mode))
        self._use_fan_out = mode == 'fan_out'

    def forward(self, param, block=None):
        _C().init_kaiming_normal(param, self._nl, self._slope, self._use_fan_out,
                                 _fan(self._fan_in))
        return param


class KaimingUniform(Initializer):
    def __init__(self, fan_in=None, negative_slope=0.0, nonlinearity='relu', mode='fan_in'):
        self._fan_in = fan_in
        self._slope = float(negative_slope)
        self._nl = nonlinearity
        if mode not in ('fan_in', 'fan_out'):
            raise ValueError("mode should be 'fan_in' or 'fan_out', got {}".format(mode))
        self._use_fan_out = mode == 'fan_out'

    def forward(self, param, block=None):
        _C().init_kaiming_uniform(param, self._nl, self._slope, self._use_fan_out,
                                  _fan(self._fan_in))
        return param


class Assign(Initializer):
    """Assign(value): value is a numpy array, a list, a number or a Tensor
    with the parameter's number of elements."""

    def __init__(self, value, name=None):
        self._value = value

    def forward(self, param, block=None):
        import paddle
        v = self._value
        if not isinstance(v, paddle.Tensor):
            v = paddle.to_tensor(np.asarray(v))
        n = 1
        for s in param.shape:
            n *= s
        vn = 1
        for s in v.shape:
            vn *= s
        if vn != n:
            raise ValueError("Assign: value has {} elements ({}) but the parameter has {} ({})"
                             .format(vn, list(v.shape), n, list(param.shape)))
        _C().init_assign(param, v)
        return param


class Bilinear(Initializer):
    """Bilinear upsampling kernel for Conv2DTranspose weights [C, 1, K, K]."""

    def forward(self, param, block=None):
        import paddle
        shape = list(param.shape)
        if len(shape) != 4 or shape[2] != shape[3]:
            raise ValueError("Bilinear: the parameter must be 4-D with square kernels, got {}"
                             .format(shape))
        size = shape[3]
        f = math.ceil(size / 2.0)
        c = (2 * f - 1 - f % 2) / (2.0 * f)
        w = np.zeros(shape, dtype=np.float32)
        for i in range(int(np.prod(shape))):
            x = i % size
            y = (i // size) % size
            w.flat[i] = (1 - abs(x / f - c)) * (1 - abs(y / f - c))
        _C().init_assign(param, paddle.to_tensor(w))
        return param


class Orthogonal(Initializer):
    def __init__(self, gain=1.0, name=None):
        self._gain = float(gain)

    def forward(self, param, block=None):
        import paddle
        shape = list(param.shape)
        if len(shape) < 2:
            raise ValueError("Orthogonal: the parameter must be at least 2-D")
        rows = shape[0]
        cols = int(np.prod(shape[1:]))
        flat = paddle.randn([max(rows, cols), min(rows, cols)], dtype='float32').numpy()
        q, r = np.linalg.qr(flat)
        q = q * np.sign(np.diag(r))
        if rows < cols:
            q = q.T
        _C().init_assign(param, paddle.to_tensor((self._gain * q).astype(np.float32)))
        return param


class Dirac(Initializer):
    def __init__(self, groups=1, name=None):
        self._groups = groups

    def forward(self, param, block=None):
        import paddle
        shape = list(param.shape)
        w = np.zeros(shape, dtype=np.float32)
        out_per = shape[0] // self._groups
        m = min(out_per, shape[1])
        for g in range(self._groups):
            for i in range(m):
                idx = (g * out_per + i, i) + tuple(s // 2 for s in shape[2:])
                w[idx] = 1.0
        _C().init_assign(param, paddle.to_tensor(w))
        return param


def calculate_gain(nonlinearity, param=None):
    """Recommended gain for a nonlinearity (Paddle's table)."""
    if param is None:
        param = 0.01 if nonlinearity == 'leaky_relu' else None
    table = {
        'sigmoid': 1.0, 'linear': 1.0, 'conv1d': 1.0, 'conv2d': 1.0, 'conv3d': 1.0,
        'conv1d_transpose': 1.0, 'conv2d_transpose': 1.0, 'conv3d_transpose': 1.0,
        'tanh': 5.0 / 3, 'relu': math.sqrt(2.0), 'selu': 3.0 / 4,
    }
    if nonlinearity in table:
        return table[nonlinearity]
    if nonlinearity == 'leaky_relu':
        return math.sqrt(2.0 / (1 + float(param) ** 2))
    raise ValueError("nonlinearity function {} is not suppported now.".format(nonlinearity))


# Paddle 2.x names
XavierInitializer = XavierUniform
MSRAInitializer = KaimingNormal
ConstantInitializer = Constant
NormalInitializer = Normal
UniformInitializer = Uniform
