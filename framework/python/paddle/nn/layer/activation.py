"""Activation layers."""
from .. import functional as F
from .. import initializer as I
from .layers import Layer

__all__ = ['ReLU', 'ReLU6', 'Sigmoid', 'Tanh', 'Softmax', 'LogSoftmax', 'GELU', 'LeakyReLU',
           'ELU', 'SELU', 'CELU', 'Silu', 'Swish', 'Mish', 'Softplus', 'Softsign', 'Hardswish',
           'Hardsigmoid', 'Hardtanh', 'Tanhshrink', 'LogSigmoid', 'PReLU', 'GLU',
           'Softshrink', 'Hardshrink', 'Maxout', 'Softmax2D', 'ThresholdedReLU', 'RReLU']


def _simple(cls_name, fn, doc):
    def __init__(self, name=None):
        Layer.__init__(self)
        self._name = name

    def forward(self, x):
        return fn(x)

    def extra_repr(self):
        return 'name={}'.format(self._name) if self._name else ''

    return type(cls_name, (Layer,), {'__init__': __init__, 'forward': forward,
                                      'extra_repr': extra_repr, '__doc__': doc,
                                      '__module__': __name__})


ReLU = _simple('ReLU', F.relu, "max(x, 0)")
ReLU6 = _simple('ReLU6', F.relu6, "min(max(x, 0), 6)")
Sigmoid = _simple('Sigmoid', F.sigmoid, "1 / (1 + exp(-x))")
Tanh = _simple('Tanh', F.tanh, "tanh(x)")
Silu = _simple('Silu', F.silu, "x * sigmoid(x)")
Swish = _simple('Swish', F.swish, "x * sigmoid(x)")
Mish = _simple('Mish', F.mish, "x * tanh(softplus(x))")
Softsign = _simple('Softsign', F.softsign, "x / (1 + |x|)")
Hardswish = _simple('Hardswish', F.hardswish, "x * relu6(x + 3) / 6")
Tanhshrink = _simple('Tanhshrink', F.tanhshrink, "x - tanh(x)")
LogSigmoid = _simple('LogSigmoid', F.log_sigmoid, "log(sigmoid(x))")


class Softmax(Layer):
    def __init__(self, axis=-1, name=None):
        super().__init__()
        self._axis = axis
        self._name = name

    def forward(self, x):
        return F.softmax(x, self._axis)

    def extra_repr(self):
        return 'axis={}'.format(self._axis) + (', name={}'.format(self._name)
                                              if self._name else '')


class LogSoftmax(Softmax):
    def forward(self, x):
        return F.log_softmax(x, self._axis)


class GELU(Layer):
    def __init__(self, approximate=False, name=None):
        super().__init__()
        self._approximate = approximate

    def forward(self, x):
        return F.gelu(x, self._approximate)

    def extra_repr(self):
        return 'approximate={}'.format(self._approximate) if self._approximate else ''


class LeakyReLU(Layer):
    def __init__(self, negative_slope=0.01, name=None):
        super().__init__()
        self._negative_slope = negative_slope

    def forward(self, x):
        return F.leaky_relu(x, self._negative_slope)

    def extra_repr(self):
        return 'negative_slope={}'.format(self._negative_slope)


class _Param1(Layer):
    _fn = None
    _arg = 'alpha'
    _default = 1.0

    def __init__(self, value=None, name=None):
        super().__init__()
        self._value = self._default if value is None else value

    def forward(self, x):
        return type(self)._fn(x, self._value)

    def extra_repr(self):
        return '{}={}'.format(self._arg, self._value)


class ELU(_Param1):
    _fn = staticmethod(F.elu)

    def __init__(self, alpha=1.0, name=None):
        super().__init__(alpha, name)


class CELU(_Param1):
    _fn = staticmethod(F.celu)

    def __init__(self, alpha=1.0, name=None):
        super().__init__(alpha, name)


class Softshrink(_Param1):
    _fn = staticmethod(F.softshrink)
    _arg = 'threshold'

    def __init__(self, threshold=0.5, name=None):
        super().__init__(threshold, name)


class Hardshrink(_Param1):
    _fn = staticmethod(F.hardshrink)
    _arg = 'threshold'

    def __init__(self, threshold=0.5, name=None):
        super().__init__(threshold, name)


class SELU(Layer):
    def __init__(self, scale=1.0507009873554804934193349852946,
                 alpha=1.6732632423543772848170429916717, name=None):
        super().__init__()
        self._scale, self._alpha = scale, alpha

    def forward(self, x):
        return F.selu(x, self._scale, self._alpha)

    def extra_repr(self):
        return 'scale={:.16f}, alpha={:.16f}'.format(self._scale, self._alpha)


class Softplus(Layer):
    def __init__(self, beta=1, threshold=20, name=None):
        super().__init__()
        self._beta, self._threshold = beta, threshold

    def forward(self, x):
        return F.softplus(x, self._beta, self._threshold)

    def extra_repr(self):
        return 'beta={}, threshold={}'.format(self._beta, self._threshold)


class Hardsigmoid(Layer):
    def __init__(self, name=None):
        super().__init__()

    def forward(self, x):
        return F.hardsigmoid(x)


class Hardtanh(Layer):
    def __init__(self, min=-1.0, max=1.0, name=None):
        super().__init__()
        self._min, self._max = min, max

    def forward(self, x):
        return F.hardtanh(x, self._min, self._max)

    def extra_repr(self):
        return 'min={}, max={}'.format(self._min, self._max)


class PReLU(Layer):
    def __init__(self, num_parameters=1, init=0.25, weight_attr=None, data_format='NCHW',
                 name=None):
        super().__init__()
        self._num_parameters = num_parameters
        self._init = init
        self._data_format = data_format
        self.weight = self.create_parameter([num_parameters], attr=weight_attr,
                                            default_initializer=I.Constant(init))

    def forward(self, x):
        return F.prelu(x, self.weight, self._data_format)

    def extra_repr(self):
        return 'num_parameters={}, data_format={}, init={}, dtype={}'.format(
            self._num_parameters, self._data_format, self._init, self._dtype)


class GLU(Layer):
    def __init__(self, axis=-1, name=None):
        super().__init__()
        self._axis = axis

    def forward(self, x):
        return F.glu(x, self._axis)

    def extra_repr(self):
        return 'axis={}'.format(self._axis)


class Maxout(Layer):
    """Maxout(groups, axis=1): max over each run of `groups` channels."""

    def __init__(self, groups, axis=1, name=None):
        super().__init__()
        self._groups = groups
        self._axis = axis

    def forward(self, x):
        return F.maxout(x, self._groups, self._axis)

    def extra_repr(self):
        return 'groups={}, axis={}'.format(self._groups, self._axis)


class Softmax2D(Layer):
    """Softmax over the channel axis of [N, C, H, W] or [C, H, W] input."""

    def forward(self, x):
        if x.ndim not in (3, 4):
            raise ValueError("Softmax2D: expected a 3-D or 4-D input, got {}".format(
                list(x.shape)))
        return F.softmax(x, axis=-3)


class ThresholdedReLU(Layer):
    def __init__(self, threshold=1.0, value=0.0, name=None):
        super().__init__()
        self._threshold = threshold
        self._value = value

    def forward(self, x):
        return F.thresholded_relu(x, self._threshold, self._value)

    def extra_repr(self):
        return 'threshold={}'.format(self._threshold)


class RReLU(Layer):
    def __init__(self, lower=1. / 8., upper=1. / 3., name=None):
        super().__init__()
        self._lower = lower
        self._upper = upper

    def forward(self, x):
        return F.rrelu(x, self._lower, self._upper, training=self.training)

    def extra_repr(self):
        return 'lower={}, upper={}'.format(self._lower, self._upper)
