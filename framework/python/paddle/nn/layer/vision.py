"""PixelShuffle, PixelUnshuffle, ChannelShuffle (Paddle's paddle/nn/layer/vision.py)."""
from .. import functional as F
from .layers import Layer

__all__ = ['PixelShuffle', 'PixelUnshuffle', 'ChannelShuffle']


class PixelShuffle(Layer):
    """[N, C*r*r, H, W] -> [N, C, H*r, W*r]."""

    def __init__(self, upscale_factor, data_format='NCHW', name=None):
        super().__init__()
        F.vision._factor(upscale_factor, 'upscale_factor')
        if data_format not in ('NCHW', 'NHWC'):
            raise ValueError("data_format must be NCHW or NHWC, got {}".format(data_format))
        self._upscale_factor = upscale_factor
        self._data_format = data_format

    def forward(self, x):
        return F.pixel_shuffle(x, self._upscale_factor, self._data_format)

    def extra_repr(self):
        s = 'upscale_factor={}'.format(self._upscale_factor)
        if self._data_format != 'NCHW':
            s += ', data_format={}'.format(self._data_format)
        return s


class PixelUnshuffle(Layer):
    def __init__(self, downscale_factor, data_format='NCHW', name=None):
        super().__init__()
        F.vision._factor(downscale_factor, 'downscale_factor')
        if data_format not in ('NCHW', 'NHWC'):
            raise ValueError("data_format must be NCHW or NHWC, got {}".format(data_format))
        self._downscale_factor = downscale_factor
        self._data_format = data_format

    def forward(self, x):
        return F.pixel_unshuffle(x, self._downscale_factor, self._data_format)

    def extra_repr(self):
        return 'downscale_factor={}'.format(self._downscale_factor)


class ChannelShuffle(Layer):
    def __init__(self, groups, data_format='NCHW', name=None):
        super().__init__()
        F.vision._factor(groups, 'groups')
        self._groups = groups
        self._data_format = data_format

    def forward(self, x):
        return F.channel_shuffle(x, self._groups, self._data_format)

    def extra_repr(self):
        return 'groups={}'.format(self._groups)
