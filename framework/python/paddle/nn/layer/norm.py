"""Normalisation layers: BatchNorm1D/2D/3D, BatchNorm, LayerNorm, GroupNorm."""
import numbers

from .. import functional as F
from .. import initializer as I
from .layers import Layer

__all__ = ['BatchNorm', 'BatchNorm1D', 'BatchNorm2D', 'BatchNorm3D', 'LayerNorm', 'GroupNorm',
           'InstanceNorm1D', 'InstanceNorm2D', 'InstanceNorm3D', 'SpectralNorm',
           'LocalResponseNorm', 'SyncBatchNorm']


class _BatchNormBase(Layer):
    """weight (ones) and bias (zeros) are trainable; _mean and _variance are
    non-trainable parameters (Paddle keeps them as such) updated in place in
    training with running = momentum*running + (1-momentum)*batch."""

    _expected_ndim = None

    def __init__(self, num_features, momentum=0.9, epsilon=1e-05, weight_attr=None,
                 bias_attr=None, data_format='NCHW', use_global_stats=None, name=None):
        super().__init__()
        import paddle
        if isinstance(num_features, bool) or not isinstance(num_features, numbers.Integral) or \
                num_features <= 0:
            raise ValueError("{}: num_features must be a positive int, got {}".format(
                self.__class__.__name__, num_features))
        self._num_features = num_features
        self._momentum = momentum
        self._epsilon = epsilon
        self._data_format = data_format
        self._use_global_stats = use_global_stats
        self._name = name
        self._dtype = paddle.get_default_dtype()
        if weight_attr is False:
            self.weight = self.create_parameter([num_features],
                                                attr=paddle.ParamAttr(trainable=False),
                                                default_initializer=I.Constant(1.0))
            self.weight.stop_gradient = True
        else:
            self.weight = self.create_parameter([num_features], attr=weight_attr,
                                                default_initializer=I.Constant(1.0))
        if bias_attr is False:
            self.bias = self.create_parameter([num_features],
                                              attr=paddle.ParamAttr(trainable=False),
                                              default_initializer=I.Constant(0.0), is_bias=True)
            self.bias.stop_gradient = True
        else:
            self.bias = self.create_parameter([num_features], attr=bias_attr, is_bias=True,
                                              default_initializer=I.Constant(0.0))
        self._mean = self.create_parameter([num_features],
                                           attr=paddle.ParamAttr(
                                               initializer=I.Constant(0.0), trainable=False))
        self._mean.stop_gradient = True
        self._variance = self.create_parameter([num_features],
                                               attr=paddle.ParamAttr(
                                                   initializer=I.Constant(1.0),
                                                   trainable=False))
        self._variance.stop_gradient = True

    def _check_input_dim(self, x):
        if self._expected_ndim is not None and x.ndim not in self._expected_ndim:
            raise ValueError("{}: expected {}-D input, got {}-D with shape {}".format(
                self.__class__.__name__, ' or '.join(str(n) for n in self._expected_ndim),
                x.ndim, list(x.shape)))

    def forward(self, input):
        self._check_input_dim(input)
        return F.batch_norm(input, self._mean, self._variance, weight=self.weight,
                            bias=self.bias, training=self.training, momentum=self._momentum,
                            epsilon=self._epsilon, data_format=self._data_format,
                            use_global_stats=self._use_global_stats)

    def extra_repr(self):
        s = 'num_features={}, momentum={}, epsilon={}'.format(self._num_features,
                                                             self._momentum, self._epsilon)
        if self._data_format != 'NCHW':
            s += ', data_format={}'.format(self._data_format)
        if self._name is not None:
            s += ', name={}'.format(self._name)
        return s


class BatchNorm1D(_BatchNormBase):
    _expected_ndim = (2, 3)

    def __init__(self, num_features, momentum=0.9, epsilon=1e-05, weight_attr=None,
                 bias_attr=None, data_format='NCL', use_global_stats=None, name=None):
        super().__init__(num_features, momentum, epsilon, weight_attr, bias_attr,
                         'NCHW' if data_format in ('NC', 'NCL') else 'NHWC',
                         use_global_stats, name)


class BatchNorm2D(_BatchNormBase):
    _expected_ndim = (4,)


class BatchNorm3D(_BatchNormBase):
    _expected_ndim = (5,)

    def __init__(self, num_features, momentum=0.9, epsilon=1e-05, weight_attr=None,
                 bias_attr=None, data_format='NCDHW', use_global_stats=None, name=None):
        super().__init__(num_features, momentum, epsilon, weight_attr, bias_attr,
                         'NCHW' if data_format == 'NCDHW' else 'NHWC', use_global_stats, name)


class BatchNorm(_BatchNormBase):
    """Paddle 1.x style BatchNorm(num_channels, act=None, is_test=False, ...)."""

    def __init__(self, num_channels, act=None, is_test=False, momentum=0.9, epsilon=1e-05,
                 param_attr=None, bias_attr=None, dtype='float32', data_layout='NCHW',
                 in_place=False, moving_mean_name=None, moving_variance_name=None,
                 do_model_average_for_mean_and_var=True, use_global_stats=False,
                 trainable_statistics=False):
        super().__init__(num_channels, momentum, epsilon, param_attr, bias_attr,
                         data_layout, use_global_stats if use_global_stats else None)
        self._act = act

    def forward(self, input):
        out = super().forward(input)
        if self._act:
            out = getattr(F, self._act)(out)
        return out


class LayerNorm(Layer):
    """Normalise over the trailing normalized_shape dims; weight ones, bias zeros."""

    def __init__(self, normalized_shape, epsilon=1e-05, weight_attr=None, bias_attr=None,
                 name=None):
        super().__init__()
        if isinstance(normalized_shape, numbers.Integral):
            normalized_shape = [normalized_shape]
        self._normalized_shape = list(normalized_shape)
        self._epsilon = epsilon
        n = 1
        for s in self._normalized_shape:
            n *= s
        self.weight = self.create_parameter([n], attr=weight_attr,
                                            default_initializer=I.Constant(1.0)) \
            if weight_attr is not False else None
        self.bias = self.create_parameter([n], attr=bias_attr, is_bias=True) \
            if bias_attr is not False else None

    def forward(self, input):
        return F.layer_norm(input, self._normalized_shape, self.weight, self.bias,
                            self._epsilon)

    def extra_repr(self):
        return 'normalized_shape={}, epsilon={}'.format(self._normalized_shape, self._epsilon)


class GroupNorm(Layer):
    def __init__(self, num_groups, num_channels, epsilon=1e-05, weight_attr=None,
                 bias_attr=None, data_format='NCHW', name=None):
        super().__init__()
        if num_channels % num_groups != 0:
            raise ValueError("num_channels ({}) must be divisible by num_groups ({})".format(
                num_channels, num_groups))
        self._num_groups = num_groups
        self._num_channels = num_channels
        self._epsilon = epsilon
        self._data_format = data_format
        self.weight = self.create_parameter([num_channels], attr=weight_attr,
                                            default_initializer=I.Constant(1.0)) \
            if weight_attr is not False else None
        self.bias = self.create_parameter([num_channels], attr=bias_attr, is_bias=True) \
            if bias_attr is not False else None

    def forward(self, x):
        return F.group_norm(x, self._num_groups, self._epsilon, self.weight, self.bias,
                            self._data_format)

    def extra_repr(self):
        return 'num_groups={}, num_channels={}, epsilon={}'.format(
            self._num_groups, self._num_channels, self._epsilon)


class _InstanceNormBase(Layer):
    """InstanceNormND(num_features, epsilon=1e-05, momentum=0.9,
    weight_attr=None, bias_attr=None, data_format): per-channel `scale`
    (ones) and `bias` (zeros) as in Paddle; weight_attr=False / bias_attr=False
    drop them. Statistics always come from the input (Paddle keeps none)."""

    _ndim = None

    def __init__(self, num_features, epsilon=1e-05, momentum=0.9, weight_attr=None,
                 bias_attr=None, data_format='NCHW', name=None):
        super().__init__()
        if isinstance(num_features, bool) or not isinstance(num_features, numbers.Integral) or \
                num_features <= 0:
            raise ValueError("{}: num_features must be a positive int, got {}".format(
                self.__class__.__name__, num_features))
        self._num_features = num_features
        self._epsilon = epsilon
        self._momentum = momentum
        self._data_format = data_format
        if weight_attr is False or bias_attr is False:
            self.scale = None
            self.bias = None
        else:
            self.scale = self.create_parameter([num_features], attr=weight_attr,
                                               default_initializer=I.Constant(1.0))
            self.bias = self.create_parameter([num_features], attr=bias_attr, is_bias=True,
                                              default_initializer=I.Constant(0.0))

    def forward(self, x):
        if x.ndim != self._ndim:
            raise ValueError("{}: expected a {}-D input, got {}".format(
                self.__class__.__name__, self._ndim, list(x.shape)))
        return F.instance_norm(x, weight=self.scale, bias=self.bias, eps=self._epsilon,
                               data_format=self._data_format)

    def extra_repr(self):
        return 'num_features={}, epsilon={}'.format(self._num_features, self._epsilon)


class InstanceNorm1D(_InstanceNormBase):
    _ndim = 3

    def __init__(self, num_features, epsilon=1e-05, momentum=0.9, weight_attr=None,
                 bias_attr=None, data_format='NCL', name=None):
        super().__init__(num_features, epsilon, momentum, weight_attr, bias_attr, data_format)


class InstanceNorm2D(_InstanceNormBase):
    _ndim = 4


class InstanceNorm3D(_InstanceNormBase):
    _ndim = 5

    def __init__(self, num_features, epsilon=1e-05, momentum=0.9, weight_attr=None,
                 bias_attr=None, data_format='NCDHW', name=None):
        super().__init__(num_features, epsilon, momentum, weight_attr, bias_attr, data_format)


class SpectralNorm(Layer):
    """SpectralNorm(weight_shape, dim=0, power_iters=1, eps=1e-12,
    dtype='float32'): forward(weight) -> weight / sigma, sigma estimated by
    power_iters power iterations on the non-trainable weight_u [h] and
    weight_v [w] (h = weight_shape[dim], w the product of the others),
    updated on every call."""

    def __init__(self, weight_shape, dim=0, power_iters=1, eps=1e-12, dtype='float32'):
        super().__init__()
        import numpy as np
        import paddle
        weight_shape = [int(v) for v in weight_shape]
        if not weight_shape or any(v <= 0 for v in weight_shape):
            raise ValueError("SpectralNorm: bad weight_shape {}".format(weight_shape))
        if dim < 0:
            dim += len(weight_shape)
        if not 0 <= dim < len(weight_shape):
            raise ValueError("SpectralNorm: dim is out of range for weight_shape {}".format(
                weight_shape))
        self._power_iters = int(power_iters)
        self._eps = float(eps)
        self._dim = dim
        self._weight_shape = weight_shape
        h = weight_shape[dim]
        w = int(np.prod(weight_shape)) // h
        self.weight_u = self.create_parameter([h], attr=paddle.ParamAttr(trainable=False),
                                              dtype=dtype, default_initializer=I.Normal(0., 1.))
        self.weight_u.stop_gradient = True
        self.weight_v = self.create_parameter([w], attr=paddle.ParamAttr(trainable=False),
                                              dtype=dtype, default_initializer=I.Normal(0., 1.))
        self.weight_v.stop_gradient = True

    def forward(self, weight):
        import paddle
        if list(weight.shape) != self._weight_shape:
            raise ValueError("SpectralNorm: expected a weight of shape {}, got {}".format(
                self._weight_shape, list(weight.shape)))
        mat = weight
        if self._dim != 0:
            perm = [self._dim] + [d for d in range(weight.ndim) if d != self._dim]
            mat = paddle.transpose(mat, perm)
        mat = paddle.reshape(mat, [mat.shape[0], -1])
        with paddle.no_grad():
            m = mat.detach()
            u, v = self.weight_u.detach(), self.weight_v.detach()
            for _ in range(self._power_iters):
                v = F.normalize(paddle.matmul(m, u, transpose_x=True), axis=0, epsilon=self._eps)
                u = F.normalize(paddle.matmul(m, v), axis=0, epsilon=self._eps)
            self.weight_u.set_value(u.numpy())
            self.weight_v.set_value(v.numpy())
        sigma = paddle.sum(u * paddle.matmul(mat, v))
        return weight / sigma


class LocalResponseNorm(Layer):
    """LocalResponseNorm(size, alpha=1e-4, beta=0.75, k=1.0, data_format='NCHW')."""

    def __init__(self, size, alpha=1e-4, beta=0.75, k=1.0, data_format='NCHW', name=None):
        super().__init__()
        self.size, self.alpha, self.beta, self.k = size, alpha, beta, k
        self.data_format = data_format

    def forward(self, x):
        return F.local_response_norm(x, self.size, self.alpha, self.beta, self.k,
                                     self.data_format)

    def extra_repr(self):
        return 'size={}, alpha={}, beta={}, k={}'.format(self.size, self.alpha, self.beta,
                                                         self.k)


class SyncBatchNorm(_BatchNormBase):
    """SyncBatchNorm(num_features, momentum=0.9, epsilon=1e-05, weight_attr=None,
    bias_attr=None, data_format='NCHW'): batch norm whose statistics would be
    reduced across devices; Eddy trains in one process, so it is BatchNorm
    over any N-D input."""

    @classmethod
    def convert_sync_batchnorm(cls, layer):
        """Replace every BatchNorm*D inside layer (or layer itself) by a
        SyncBatchNorm holding the same parameters and statistics."""
        if isinstance(layer, _BatchNormBase) and not isinstance(layer, SyncBatchNorm):
            new = cls(layer._num_features, layer._momentum, layer._epsilon,
                      data_format=layer._data_format)
            for name in ('weight', 'bias', '_mean', '_variance'):
                setattr(new, name, getattr(layer, name))
            return new
        for name, sub in list(layer._sub_layers.items()):
            layer._sub_layers[name] = cls.convert_sync_batchnorm(sub)
        return layer
