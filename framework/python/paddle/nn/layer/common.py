"""Common layers: Linear, Flatten, Dropout, Embedding, Identity, Pad, ...

Layers hold parameters and call paddle.nn.functional."""
import numbers

from .. import functional as F
from .layers import Layer

__all__ = ['Linear', 'Identity', 'Flatten', 'Dropout', 'Dropout2D', 'AlphaDropout',
           'Embedding', 'Pad1D', 'Pad2D', 'Unflatten', 'CosineSimilarity', 'Bilinear']


class Identity(Layer):
    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, input):
        return input


class Linear(Layer):
    """y = x @ weight + bias, weight [in_features, out_features] (XavierUniform),
    bias [out_features] (zeros); bias_attr=False drops the bias."""

    def __init__(self, in_features, out_features, weight_attr=None, bias_attr=None, name=None):
        super().__init__()
        for v, what in ((in_features, 'in_features'), (out_features, 'out_features')):
            if isinstance(v, bool) or not isinstance(v, numbers.Integral) or v <= 0:
                raise ValueError("Linear: {} must be a positive int, got {}".format(what, v))
        self._dtype = self._helper_dtype()
        self._weight_attr = weight_attr
        self._bias_attr = bias_attr
        self.in_features = int(in_features)
        self.out_features = int(out_features)
        self.weight = self.create_parameter(shape=[self.in_features, self.out_features],
                                            attr=weight_attr, dtype=self._dtype, is_bias=False)
        self.bias = self.create_parameter(shape=[self.out_features], attr=bias_attr,
                                          dtype=self._dtype, is_bias=True)
        self.name = name

    def _helper_dtype(self):
        import paddle
        return paddle.get_default_dtype()

    def forward(self, input):
        return F.linear(input, self.weight, self.bias)

    def extra_repr(self):
        name_str = ', name={}'.format(self.name) if self.name else ''
        return 'in_features={}, out_features={}, dtype={}{}'.format(
            self.weight.shape[0], self.weight.shape[1], self._dtype, name_str)


class Flatten(Layer):
    def __init__(self, start_axis=1, stop_axis=-1):
        super().__init__()
        self.start_axis = start_axis
        self.stop_axis = stop_axis

    def forward(self, input):
        return F.flatten(input, self.start_axis, self.stop_axis)


class Unflatten(Layer):
    def __init__(self, axis, shape, name=None):
        super().__init__()
        self.axis = axis
        self.shape = list(shape)

    def forward(self, input):
        import paddle
        axis = self.axis if self.axis >= 0 else input.ndim + self.axis
        new_shape = list(input.shape[:axis]) + self.shape + list(input.shape[axis + 1:])
        return paddle.reshape(input, new_shape)


class Dropout(Layer):
    def __init__(self, p=0.5, axis=None, mode="upscale_in_train", name=None):
        super().__init__()
        if isinstance(p, bool) or not isinstance(p, numbers.Real):
            raise TypeError("p argument should be a number")
        if p < 0 or p > 1:
            raise ValueError("p argument should between 0 and 1, got {}".format(p))
        self.p = p
        self.axis = axis
        self.mode = mode
        self.name = name

    def forward(self, input):
        return F.dropout(input, p=self.p, axis=self.axis, training=self.training, mode=self.mode)

    def extra_repr(self):
        name_str = ', name={}'.format(self.name) if self.name else ''
        return 'p={}, axis={}, mode={}{}'.format(self.p, self.axis, self.mode, name_str)


class Dropout2D(Layer):
    def __init__(self, p=0.5, data_format='NCHW', name=None):
        super().__init__()
        self.p = p
        self.data_format = data_format

    def forward(self, input):
        return F.dropout2d(input, p=self.p, training=self.training, data_format=self.data_format)

    def extra_repr(self):
        return 'p={}, data_format={}'.format(self.p, self.data_format)


class AlphaDropout(Layer):
    def __init__(self, p=0.5, name=None):
        super().__init__()
        self.p = p

    def forward(self, input):
        return F.alpha_dropout(input, p=self.p, training=self.training)

    def extra_repr(self):
        return 'p={}'.format(self.p)


class Embedding(Layer):
    """Lookup table weight [num_embeddings, embedding_dim] (XavierUniform);
    rows at padding_idx are zeros and get no gradient."""

    def __init__(self, num_embeddings, embedding_dim, padding_idx=None, max_norm=None,
                 norm_type=2.0, sparse=False, weight_attr=None, scale_grad_by_freq=False,
                 name=None):
        super().__init__()
        if num_embeddings <= 0 or embedding_dim <= 0:
            raise ValueError("Embedding: num_embeddings and embedding_dim must be positive, "
                             "got {} and {}".format(num_embeddings, embedding_dim))
        if padding_idx is not None and not (-num_embeddings <= padding_idx < num_embeddings):
            raise ValueError("padding_idx must be within [-{}, {})".format(num_embeddings,
                                                                          num_embeddings))
        self._num_embeddings = num_embeddings
        self._embedding_dim = embedding_dim
        self._sparse = sparse
        self._padding_idx = None if padding_idx is None else \
            (padding_idx if padding_idx >= 0 else num_embeddings + padding_idx)
        import paddle
        self._dtype = paddle.get_default_dtype()
        self.weight = self.create_parameter(shape=[num_embeddings, embedding_dim],
                                            attr=weight_attr, dtype=self._dtype, is_bias=False)
        if self._padding_idx is not None:
            w = self.weight.numpy()
            w[self._padding_idx] = 0
            self.weight.set_value(w)
        self._name = name

    def forward(self, x):
        return F.embedding(x, self.weight, padding_idx=self._padding_idx, sparse=self._sparse)

    def extra_repr(self):
        s = '{}, {}'.format(self._num_embeddings, self._embedding_dim)
        if self._padding_idx is not None:
            s += ', padding_idx={}'.format(self._padding_idx)
        if self._sparse:
            s += ', sparse={}'.format(self._sparse)
        return s


class Pad1D(Layer):
    def __init__(self, padding, mode='constant', value=0.0, data_format='NCL', name=None):
        super().__init__()
        self._pad = [padding] * 2 if isinstance(padding, int) else list(padding)
        self._mode = mode
        self._value = value

    def forward(self, x):
        return F.pad(x, self._pad, mode=self._mode, value=self._value)


class Pad2D(Layer):
    def __init__(self, padding, mode='constant', value=0.0, data_format='NCHW', name=None):
        super().__init__()
        self._pad = [padding] * 4 if isinstance(padding, int) else list(padding)
        self._mode = mode
        self._value = value

    def forward(self, x):
        return F.pad(x, self._pad, mode=self._mode, value=self._value)


class CosineSimilarity(Layer):
    def __init__(self, axis=1, eps=1e-8):
        super().__init__()
        self._axis = axis
        self._eps = eps

    def forward(self, x1, x2):
        return F.cosine_similarity(x1, x2, axis=self._axis, eps=self._eps)


class Bilinear(Layer):
    """out_k = x1 W_k x2^T + b_k, weight [out, in1, in2]."""

    def __init__(self, in1_features, in2_features, out_features, weight_attr=None,
                 bias_attr=None, name=None):
        super().__init__()
        self.weight = self.create_parameter([out_features, in1_features, in2_features],
                                            attr=weight_attr)
        self.bias = self.create_parameter([1, out_features], attr=bias_attr, is_bias=True)

    def forward(self, x1, x2):
        return F.bilinear(x1, x2, self.weight, self.bias)


class Upsample(Layer):
    """Upsample(size=None, scale_factor=None, mode='nearest',
    align_corners=False, align_mode=0, data_format=None)."""

    def __init__(self, size=None, scale_factor=None, mode='nearest', align_corners=False,
                 align_mode=0, data_format=None, name=None):
        super().__init__()
        self.size = size
        self.scale_factor = scale_factor
        self.mode = mode.lower()
        self.align_corners = align_corners
        self.align_mode = align_mode
        self.data_format = data_format

    def forward(self, x):
        return F.interpolate(x, self.size, self.scale_factor, self.mode, self.align_corners,
                             self.align_mode, self.data_format)

    def extra_repr(self):
        if self.scale_factor is not None:
            main = 'scale_factor={}'.format(self.scale_factor)
        else:
            main = 'size={}'.format(self.size)
        return '{}, mode={}, align_corners={}, align_mode={}, data_format={}'.format(
            main, self.mode, self.align_corners, self.align_mode, self.data_format)


class UpsamplingNearest2D(Upsample):
    def __init__(self, size=None, scale_factor=None, data_format='NCHW', name=None):
        super().__init__(size, scale_factor, 'nearest', False, 0, data_format)


class UpsamplingBilinear2D(Upsample):
    def __init__(self, size=None, scale_factor=None, data_format='NCHW', name=None):
        super().__init__(size, scale_factor, 'bilinear', True, 0, data_format)


__all__ += ['Upsample', 'UpsamplingNearest2D', 'UpsamplingBilinear2D']


class Dropout3D(Layer):
    def __init__(self, p=0.5, data_format='NCDHW', name=None):
        super().__init__()
        self.p = p
        self.data_format = data_format

    def forward(self, input):
        return F.dropout3d(input, p=self.p, training=self.training, data_format=self.data_format)

    def extra_repr(self):
        return 'p={}, data_format={}'.format(self.p, self.data_format)


class ZeroPad2D(Layer):
    """ZeroPad2D(padding): int or [left, right, top, bottom]."""

    def __init__(self, padding, data_format='NCHW', name=None):
        super().__init__()
        self._pad = [int(padding)] * 4 if isinstance(padding, int) else list(padding)
        self._data_format = data_format

    def forward(self, x):
        return F.zeropad2d(x, self._pad, self._data_format)

    def extra_repr(self):
        return 'padding={}'.format(self._pad)


class Unfold(Layer):
    """Unfold(kernel_sizes, dilations=1, paddings=0, strides=1): im2col."""

    def __init__(self, kernel_sizes, dilations=1, paddings=0, strides=1, name=None):
        super().__init__()
        self._args = (kernel_sizes, strides, paddings, dilations)

    def forward(self, x):
        k, s, p, d = self._args
        return F.unfold(x, k, s, p, d)

    def extra_repr(self):
        return 'kernel_sizes={}, dilations={}, paddings={}, strides={}'.format(
            self._args[0], self._args[3], self._args[2], self._args[1])


class Fold(Layer):
    """Fold(output_sizes, kernel_sizes, dilations=1, paddings=0, strides=1): col2im."""

    def __init__(self, output_sizes, kernel_sizes, dilations=1, paddings=0, strides=1,
                 name=None):
        super().__init__()
        self._args = (output_sizes, kernel_sizes, strides, paddings, dilations)

    def forward(self, x):
        o, k, s, p, d = self._args
        return F.fold(x, o, k, s, p, d)

    def extra_repr(self):
        return 'output_sizes={}, kernel_sizes={}'.format(self._args[0], self._args[1])


class Pad3D(Layer):
    """Pad3D(padding, mode='constant', value=0.0, data_format='NCDHW'): padding
    int or [left, right, top, bottom, front, back]."""

    def __init__(self, padding, mode='constant', value=0.0, data_format='NCDHW', name=None):
        super().__init__()
        self._pad = [padding] * 6 if isinstance(padding, int) else list(padding)
        self._mode = mode
        self._value = value
        self._data_format = data_format

    def forward(self, x):
        return F.pad(x, self._pad, mode=self._mode, value=self._value,
                     data_format=self._data_format)


class PairwiseDistance(Layer):
    """PairwiseDistance(p=2.0, epsilon=1e-6, keepdim=False): ||x - y + eps||_p
    over the last axis."""

    def __init__(self, p=2.0, epsilon=1e-6, keepdim=False, name=None):
        super().__init__()
        self.p = p
        self.epsilon = epsilon
        self.keepdim = keepdim

    def forward(self, x, y):
        return F.pairwise_distance(x, y, self.p, self.epsilon, self.keepdim)

    def extra_repr(self):
        return 'p={}'.format(self.p)




class FeatureAlphaDropout(Layer):
    def __init__(self, p=0.5, name=None):
        super().__init__()
        self.p = p

    def forward(self, input):
        return F.feature_alpha_dropout(input, p=self.p, training=self.training)

    def extra_repr(self):
        return 'p={}'.format(self.p)


__all__ += ['Dropout3D', 'ZeroPad2D', 'Unfold', 'Fold', 'PairwiseDistance', 'Pad3D',
            'FeatureAlphaDropout']
