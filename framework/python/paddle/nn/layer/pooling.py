"""Pooling layers."""
from .. import functional as F
from .layers import Layer

__all__ = ['MaxPool1D', 'MaxPool2D', 'AvgPool1D', 'AvgPool2D', 'AdaptiveAvgPool1D',
           'AdaptiveAvgPool2D', 'AdaptiveMaxPool2D']


class MaxPool2D(Layer):
    def __init__(self, kernel_size, stride=None, padding=0, return_mask=False, ceil_mode=False,
                 data_format='NCHW', name=None):
        super().__init__()
        self.ksize = kernel_size
        self.stride = stride
        self.padding = padding
        self.return_mask = return_mask
        self.ceil_mode = ceil_mode
        self.data_format = data_format
        self.name = name

    def forward(self, x):
        return F.max_pool2d(x, self.ksize, self.stride, self.padding, self.return_mask,
                            self.ceil_mode, self.data_format)

    def extra_repr(self):
        return 'kernel_size={}, stride={}, padding={}'.format(self.ksize, self.stride,
                                                               self.padding)


class AvgPool2D(Layer):
    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False, exclusive=True,
                 divisor_override=None, data_format='NCHW', name=None):
        super().__init__()
        self.ksize = kernel_size
        self.stride = stride
        self.padding = padding
        self.ceil_mode = ceil_mode
        self.exclusive = exclusive
        self.divisor = divisor_override
        self.data_format = data_format
        self.name = name

    def forward(self, x):
        return F.avg_pool2d(x, self.ksize, self.stride, self.padding, self.ceil_mode,
                            self.exclusive, self.divisor, self.data_format)

    def extra_repr(self):
        return 'kernel_size={}, stride={}, padding={}'.format(self.ksize, self.stride,
                                                               self.padding)


class MaxPool1D(Layer):
    def __init__(self, kernel_size, stride=None, padding=0, return_mask=False, ceil_mode=False,
                 name=None):
        super().__init__()
        self.ksize, self.stride, self.padding = kernel_size, stride, padding
        self.return_mask, self.ceil_mode = return_mask, ceil_mode

    def forward(self, x):
        return F.max_pool1d(x, self.ksize, self.stride, self.padding, self.return_mask,
                            self.ceil_mode)

    def extra_repr(self):
        return 'kernel_size={}, stride={}, padding={}'.format(self.ksize, self.stride,
                                                               self.padding)


class AvgPool1D(Layer):
    def __init__(self, kernel_size, stride=None, padding=0, exclusive=True, ceil_mode=False,
                 name=None):
        super().__init__()
        self.ksize, self.stride, self.padding = kernel_size, stride, padding
        self.exclusive, self.ceil_mode = exclusive, ceil_mode

    def forward(self, x):
        return F.avg_pool1d(x, self.ksize, self.stride, self.padding, self.exclusive,
                            self.ceil_mode)

    def extra_repr(self):
        return 'kernel_size={}, stride={}, padding={}'.format(self.ksize, self.stride,
                                                               self.padding)


class AdaptiveAvgPool2D(Layer):
    def __init__(self, output_size, data_format='NCHW', name=None):
        super().__init__()
        self._output_size = output_size
        self._data_format = data_format

    def forward(self, x):
        return F.adaptive_avg_pool2d(x, self._output_size, self._data_format)

    def extra_repr(self):
        return 'output_size={}'.format(self._output_size)


class AdaptiveAvgPool1D(Layer):
    def __init__(self, output_size, name=None):
        super().__init__()
        self._output_size = output_size

    def forward(self, x):
        return F.adaptive_avg_pool1d(x, self._output_size)

    def extra_repr(self):
        return 'output_size={}'.format(self._output_size)


class AdaptiveMaxPool2D(Layer):
    def __init__(self, output_size, return_mask=False, name=None):
        super().__init__()
        self._output_size = output_size
        self._return_mask = return_mask

    def forward(self, x):
        return F.adaptive_max_pool2d(x, self._output_size, self._return_mask)

    def extra_repr(self):
        return 'output_size={}, return_mask={}'.format(self._output_size, self._return_mask)


class AdaptiveMaxPool1D(Layer):
    def __init__(self, output_size, return_mask=False, name=None):
        super().__init__()
        self._output_size = output_size
        self._return_mask = return_mask

    def forward(self, x):
        return F.adaptive_max_pool1d(x, self._output_size, self._return_mask)

    def extra_repr(self):
        return 'output_size={}, return_mask={}'.format(self._output_size, self._return_mask)


__all__ += ['AdaptiveMaxPool1D']


class LPPool1D(Layer):
    def __init__(self, norm_type, kernel_size, stride=None, ceil_mode=False, data_format='NCL',
                 name=None):
        super().__init__()
        self._args = (norm_type, kernel_size, stride, ceil_mode, data_format)

    def forward(self, x):
        return F.lp_pool1d(x, *self._args)

    def extra_repr(self):
        return 'norm_type={}, kernel_size={}'.format(self._args[0], self._args[1])


class LPPool2D(Layer):
    def __init__(self, norm_type, kernel_size, stride=None, ceil_mode=False, data_format='NCHW',
                 name=None):
        super().__init__()
        self._args = (norm_type, kernel_size, stride, ceil_mode, data_format)

    def forward(self, x):
        return F.lp_pool2d(x, *self._args)

    def extra_repr(self):
        return 'norm_type={}, kernel_size={}'.format(self._args[0], self._args[1])


class MaxUnPool2D(Layer):
    def __init__(self, kernel_size, stride=None, padding=0, data_format='NCHW',
                 output_size=None, name=None):
        super().__init__()
        self._args = (kernel_size, stride, padding, data_format, output_size)

    def forward(self, x, indices):
        return F.max_unpool2d(x, indices, *self._args)


class MaxUnPool1D(Layer):
    def __init__(self, kernel_size, stride=None, padding=0, data_format='NCL', output_size=None,
                 name=None):
        super().__init__()
        self._args = (kernel_size, stride, padding, data_format, output_size)

    def forward(self, x, indices):
        return F.max_unpool1d(x, indices, *self._args)


__all__ += ['LPPool1D', 'LPPool2D', 'MaxUnPool1D', 'MaxUnPool2D']


class MaxPool3D(Layer):
    def __init__(self, kernel_size, stride=None, padding=0, return_mask=False, ceil_mode=False,
                 data_format='NCDHW', name=None):
        super().__init__()
        self._args = (kernel_size, stride, padding, ceil_mode, return_mask, data_format)

    def forward(self, x):
        k, s, p, c, r, f = self._args
        return F.max_pool3d(x, k, s, p, c, r, f)

    def extra_repr(self):
        return 'kernel_size={}, stride={}, padding={}'.format(*self._args[:3])


class AvgPool3D(Layer):
    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False, exclusive=True,
                 divisor_override=None, data_format='NCDHW', name=None):
        super().__init__()
        self._args = (kernel_size, stride, padding, ceil_mode, exclusive, divisor_override,
                      data_format)

    def forward(self, x):
        return F.avg_pool3d(x, *self._args)

    def extra_repr(self):
        return 'kernel_size={}, stride={}, padding={}'.format(*self._args[:3])


class AdaptiveAvgPool3D(Layer):
    def __init__(self, output_size, data_format='NCDHW', name=None):
        super().__init__()
        self._output_size = output_size
        self._data_format = data_format

    def forward(self, x):
        return F.adaptive_avg_pool3d(x, self._output_size, self._data_format)

    def extra_repr(self):
        return 'output_size={}'.format(self._output_size)


class AdaptiveMaxPool3D(Layer):
    def __init__(self, output_size, return_mask=False, name=None):
        super().__init__()
        self._output_size = output_size
        self._return_mask = return_mask

    def forward(self, x):
        return F.adaptive_max_pool3d(x, self._output_size, self._return_mask)

    def extra_repr(self):
        return 'output_size={}'.format(self._output_size)


__all__ += ['MaxPool3D', 'AvgPool3D', 'AdaptiveAvgPool3D', 'AdaptiveMaxPool3D']
