"""Convolution layers (NCHW / NCL): Conv1D, Conv2D."""
import math
import numbers

from .. import functional as F
from .. import initializer as I
from .layers import Layer

__all__ = ['Conv1D', 'Conv2D', 'Conv3D', 'Conv1DTranspose', 'Conv2DTranspose', 'Conv3DTranspose']


def _ntuple(v, n, what):
    if isinstance(v, numbers.Integral):
        return [int(v)] * n
    v = [int(i) for i in v]
    if len(v) != n:
        raise ValueError("{} should be an int or a list of {} ints, got {}".format(what, n, v))
    return v


class _ConvNd(Layer):
    def __init__(self, in_channels, out_channels, kernel_size, nd, stride=1, padding=0,
                 dilation=1, groups=1, padding_mode='zeros', weight_attr=None, bias_attr=None,
                 data_format='NCHW', transposed=False, output_padding=0):
        super().__init__()
        import paddle
        for v, what in ((in_channels, 'in_channels'), (out_channels, 'out_channels'),
                        (groups, 'groups')):
            if isinstance(v, bool) or not isinstance(v, numbers.Integral) or v <= 0:
                raise ValueError("{}: {} must be a positive int, got {}".format(
                    self.__class__.__name__, what, v))
        if in_channels % groups != 0:
            raise ValueError("in_channels ({}) must be divisible by groups ({})".format(
                in_channels, groups))
        if out_channels % groups != 0:
            raise ValueError("out_channels ({}) must be divisible by groups ({})".format(
                out_channels, groups))
        if padding_mode not in ('zeros', 'reflect', 'replicate', 'circular'):
            raise ValueError("padding_mode must be one of zeros, reflect, replicate, circular, "
                             "got {}".format(padding_mode))
        self._in_channels = in_channels
        self._out_channels = out_channels
        self._groups = groups
        self._kernel_size = _ntuple(kernel_size, nd, 'kernel_size')
        self._stride = _ntuple(stride, nd, 'stride')
        self._dilation = _ntuple(dilation, nd, 'dilation')
        self._padding = padding
        self._padding_mode = padding_mode
        self._data_format = data_format
        self._nd = nd
        self._dtype = paddle.get_default_dtype()
        self._transposed = transposed
        self._output_padding = output_padding
        if transposed:
            if padding_mode != 'zeros':
                raise ValueError("{}: padding_mode must be zeros".format(
                    self.__class__.__name__))
            filter_shape = [in_channels, out_channels // groups] + self._kernel_size
        else:
            filter_shape = [out_channels, in_channels // groups] + self._kernel_size
        fan_in = in_channels * int(math.prod(self._kernel_size))
        std = (2.0 / fan_in) ** 0.5
        self.weight = self.create_parameter(shape=filter_shape, attr=weight_attr,
                                            default_initializer=I.Normal(0.0, std))
        self.bias = self.create_parameter(shape=[out_channels], attr=bias_attr, is_bias=True)

    def _pad_input(self, x):
        if self._padding_mode == 'zeros':
            return x, self._padding
        p = self._padding
        if isinstance(p, numbers.Integral):
            p = [int(p)] * (2 * self._nd)
        elif len(p) == self._nd:
            p = [int(v) for v in p for _ in range(2)]
        # F.pad takes the last axis first for spatial pads
        pads = []
        for i in reversed(range(self._nd)):
            pads += [p[2 * i], p[2 * i + 1]]
        return F.pad(x, pads, mode=self._padding_mode), 0

    def extra_repr(self):
        s = '{}, {}, kernel_size={}'.format(self._in_channels, self._out_channels,
                                            self._kernel_size)
        if self._stride != [1] * self._nd:
            s += ', stride={}'.format(self._stride)
        if self._padding != 0:
            s += ', padding={}'.format(self._padding)
        if self._padding_mode != 'zeros':
            s += ', padding_mode={}'.format(self._padding_mode)
        if self._dilation != [1] * self._nd:
            s += ', dilation={}'.format(self._dilation)
        if self._groups != 1:
            s += ', groups={}'.format(self._groups)
        s += ', data_format={}'.format(self._data_format)
        return s


class Conv2D(_ConvNd):
    """Conv2D(in_channels, out_channels, kernel_size, stride=1, padding=0,
    dilation=1, groups=1, padding_mode='zeros', weight_attr=None,
    bias_attr=None, data_format='NCHW'); weight [out, in/groups, kh, kw] ~
    Normal(0, sqrt(2 / (in_channels * kh * kw))), bias zeros."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1,
                 groups=1, padding_mode='zeros', weight_attr=None, bias_attr=None,
                 data_format='NCHW'):
        super().__init__(in_channels, out_channels, kernel_size, 2, stride, padding, dilation,
                         groups, padding_mode, weight_attr, bias_attr, data_format)

    def forward(self, x):
        x, pad = self._pad_input(x)
        return F.conv2d(x, self.weight, self.bias, stride=self._stride, padding=pad,
                        dilation=self._dilation, groups=self._groups,
                        data_format=self._data_format)


class Conv1D(_ConvNd):
    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1,
                 groups=1, padding_mode='zeros', weight_attr=None, bias_attr=None,
                 data_format='NCL'):
        super().__init__(in_channels, out_channels, kernel_size, 1, stride, padding, dilation,
                         groups, padding_mode, weight_attr, bias_attr, data_format)

    def forward(self, x):
        x, pad = self._pad_input(x)
        return F.conv1d(x, self.weight, self.bias, stride=self._stride, padding=pad,
                        dilation=self._dilation, groups=self._groups,
                        data_format=self._data_format)


class Conv2DTranspose(_ConvNd):
    """Conv2DTranspose(in_channels, out_channels, kernel_size, stride=1,
    padding=0, output_padding=0, groups=1, dilation=1, weight_attr=None,
    bias_attr=None, data_format='NCHW'); weight [in, out/groups, kh, kw];
    forward(x, output_size=None)."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0,
                 output_padding=0, groups=1, dilation=1, weight_attr=None, bias_attr=None,
                 data_format='NCHW'):
        super().__init__(in_channels, out_channels, kernel_size, 2, stride, padding, dilation,
                         groups, 'zeros', weight_attr, bias_attr, data_format,
                         transposed=True, output_padding=output_padding)

    def forward(self, x, output_size=None):
        return F.conv2d_transpose(x, self.weight, self.bias, stride=self._stride,
                                  padding=self._padding, output_padding=self._output_padding,
                                  groups=self._groups, dilation=self._dilation,
                                  data_format=self._data_format, output_size=output_size)


class Conv1DTranspose(_ConvNd):
    """Conv1DTranspose(in_channels, out_channels, kernel_size, stride=1,
    padding=0, output_padding=0, groups=1, dilation=1, weight_attr=None,
    bias_attr=None, data_format='NCL'); weight [in, out/groups, k]."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0,
                 output_padding=0, groups=1, dilation=1, weight_attr=None, bias_attr=None,
                 data_format='NCL'):
        super().__init__(in_channels, out_channels, kernel_size, 1, stride, padding, dilation,
                         groups, 'zeros', weight_attr, bias_attr, data_format,
                         transposed=True, output_padding=output_padding)

    def forward(self, x, output_size=None):
        return F.conv1d_transpose(x, self.weight, self.bias, stride=self._stride,
                                  padding=self._padding, output_padding=self._output_padding,
                                  groups=self._groups, dilation=self._dilation,
                                  output_size=output_size, data_format=self._data_format)


class Conv3D(_ConvNd):
    """Conv3D(in_channels, out_channels, kernel_size, stride=1, padding=0,
    dilation=1, groups=1, padding_mode='zeros', weight_attr=None,
    bias_attr=None, data_format='NCDHW'); weight [out, in/groups, kd, kh, kw]."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1,
                 groups=1, padding_mode='zeros', weight_attr=None, bias_attr=None,
                 data_format='NCDHW'):
        super().__init__(in_channels, out_channels, kernel_size, 3, stride, padding, dilation,
                         groups, padding_mode, weight_attr, bias_attr, data_format)

    def forward(self, x):
        x, pad = self._pad_input(x)
        return F.conv3d(x, self.weight, self.bias, stride=self._stride, padding=pad,
                        dilation=self._dilation, groups=self._groups,
                        data_format=self._data_format)


class Conv3DTranspose(_ConvNd):
    """Conv3DTranspose(in_channels, out_channels, kernel_size, stride=1,
    padding=0, output_padding=0, groups=1, dilation=1, weight_attr=None,
    bias_attr=None, data_format='NCDHW'); weight [in, out/groups, kd, kh, kw]."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0,
                 output_padding=0, groups=1, dilation=1, weight_attr=None, bias_attr=None,
                 data_format='NCDHW'):
        super().__init__(in_channels, out_channels, kernel_size, 3, stride, padding, dilation,
                         groups, 'zeros', weight_attr, bias_attr, data_format,
                         transposed=True, output_padding=output_padding)

    def forward(self, x, output_size=None):
        return F.conv3d_transpose(x, self.weight, self.bias, stride=self._stride,
                                  padding=self._padding, output_padding=self._output_padding,
                                  groups=self._groups, dilation=self._dilation,
                                  data_format=self._data_format, output_size=output_size)
