"""ShuffleNetV2 as in paddle.vision.models (scales 0.25 ... 2.0, ReLU or
Swish; block names 2_1 ... 4_4)."""
import paddle
from paddle import nn
from paddle.nn import functional as F

from ._pretrained import no_pretrained
from ._utils import ConvNormActivation

__all__ = ['ShuffleNetV2', 'shufflenet_v2_x0_25', 'shufflenet_v2_x0_33', 'shufflenet_v2_x0_5',
           'shufflenet_v2_x1_0', 'shufflenet_v2_x1_5', 'shufflenet_v2_x2_0',
           'shufflenet_v2_swish']

_CHANNELS = {0.25: [-1, 24, 24, 48, 96, 512], 0.33: [-1, 24, 32, 64, 128, 512],
             0.5: [-1, 24, 48, 96, 192, 1024], 1.0: [-1, 24, 116, 232, 464, 1024],
             1.5: [-1, 24, 176, 352, 704, 1024], 2.0: [-1, 24, 224, 488, 976, 2048]}


def _act_layer(act):
    if act == 'relu':
        return nn.ReLU
    if act == 'swish':
        return nn.Swish
    raise ValueError("ShuffleNetV2: act must be 'relu' or 'swish', got {!r}".format(act))


class InvertedResidual(nn.Layer):
    def __init__(self, in_channels, out_channels, stride, act='relu'):
        super().__init__()
        act_layer = _act_layer(act)
        half = out_channels // 2
        self._conv_pw = ConvNormActivation(in_channels // 2, half, 1, 1, 0,
                                           activation_layer=act_layer)
        self._conv_dw = ConvNormActivation(half, half, 3, stride, 1, groups=half,
                                           activation_layer=None)
        self._conv_linear = ConvNormActivation(half, half, 1, 1, 0, activation_layer=act_layer)

    def forward(self, inputs):
        c = inputs.shape[1]
        x1, x2 = paddle.split(inputs, [c // 2, c - c // 2], axis=1)
        x2 = self._conv_linear(self._conv_dw(self._conv_pw(x2)))
        return F.channel_shuffle(paddle.concat([x1, x2], axis=1), 2)


class InvertedResidualDS(nn.Layer):
    def __init__(self, in_channels, out_channels, stride, act='relu'):
        super().__init__()
        act_layer = _act_layer(act)
        half = out_channels // 2
        self._conv_dw_1 = ConvNormActivation(in_channels, in_channels, 3, stride, 1,
                                             groups=in_channels, activation_layer=None)
        self._conv_linear_1 = ConvNormActivation(in_channels, half, 1, 1, 0,
                                                 activation_layer=act_layer)
        self._conv_pw_2 = ConvNormActivation(in_channels, half, 1, 1, 0,
                                             activation_layer=act_layer)
        self._conv_dw_2 = ConvNormActivation(half, half, 3, stride, 1, groups=half,
                                             activation_layer=None)
        self._conv_linear_2 = ConvNormActivation(half, half, 1, 1, 0, activation_layer=act_layer)

    def forward(self, inputs):
        x1 = self._conv_linear_1(self._conv_dw_1(inputs))
        x2 = self._conv_linear_2(self._conv_dw_2(self._conv_pw_2(inputs)))
        return F.channel_shuffle(paddle.concat([x1, x2], axis=1), 2)


class ShuffleNetV2(nn.Layer):
    """ShuffleNetV2(scale=1.0, act='relu', num_classes=1000, with_pool=True)."""

    def __init__(self, scale=1.0, act='relu', num_classes=1000, with_pool=True):
        super().__init__()
        if scale not in _CHANNELS:
            raise ValueError("ShuffleNetV2: scale must be one of {}, got {}".format(
                sorted(_CHANNELS), scale))
        self.scale = scale
        self.num_classes = num_classes
        self.with_pool = with_pool
        ch = _CHANNELS[scale]
        act_layer = _act_layer(act)
        self._conv1 = ConvNormActivation(3, ch[1], 3, 2, 1, activation_layer=act_layer)
        self._max_pool = nn.MaxPool2D(kernel_size=3, stride=2, padding=1)
        self._block_list = []
        for stage_id, repeat in enumerate([4, 8, 4]):
            for i in range(repeat):
                if i == 0:
                    block = InvertedResidualDS(ch[stage_id + 1], ch[stage_id + 2], 2, act)
                else:
                    block = InvertedResidual(ch[stage_id + 2], ch[stage_id + 2], 1, act)
                self._block_list.append(self.add_sublayer('{}_{}'.format(stage_id + 2, i + 1),
                                                          block))
        self._last_conv = ConvNormActivation(ch[-2], ch[-1], 1, 1, 0, activation_layer=act_layer)
        if with_pool:
            self._pool2d_avg = nn.AdaptiveAvgPool2D(1)
        if num_classes > 0:
            self._out_c = ch[-1]
            self._fc = nn.Linear(ch[-1], num_classes)

    def forward(self, inputs):
        x = self._max_pool(self._conv1(inputs))
        for block in self._block_list:
            x = block(x)
        x = self._last_conv(x)
        if self.with_pool:
            x = self._pool2d_avg(x)
        if self.num_classes > 0:
            x = paddle.flatten(x, start_axis=1, stop_axis=-1)
            x = self._fc(x)
        return x


def _shufflenet(name, scale, act, pretrained, **kwargs):
    no_pretrained(name, pretrained)
    return ShuffleNetV2(scale=scale, act=act, **kwargs)


def shufflenet_v2_x0_25(pretrained=False, **kwargs):
    return _shufflenet('shufflenet_v2_x0_25', 0.25, 'relu', pretrained, **kwargs)


def shufflenet_v2_x0_33(pretrained=False, **kwargs):
    return _shufflenet('shufflenet_v2_x0_33', 0.33, 'relu', pretrained, **kwargs)


def shufflenet_v2_x0_5(pretrained=False, **kwargs):
    return _shufflenet('shufflenet_v2_x0_5', 0.5, 'relu', pretrained, **kwargs)


def shufflenet_v2_x1_0(pretrained=False, **kwargs):
    return _shufflenet('shufflenet_v2_x1_0', 1.0, 'relu', pretrained, **kwargs)


def shufflenet_v2_x1_5(pretrained=False, **kwargs):
    return _shufflenet('shufflenet_v2_x1_5', 1.5, 'relu', pretrained, **kwargs)


def shufflenet_v2_x2_0(pretrained=False, **kwargs):
    return _shufflenet('shufflenet_v2_x2_0', 2.0, 'relu', pretrained, **kwargs)


def shufflenet_v2_swish(pretrained=False, **kwargs):
    return _shufflenet('shufflenet_v2_swish', 1.0, 'swish', pretrained, **kwargs)
