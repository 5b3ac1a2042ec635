"""MobileNetV1 as in paddle.vision.models (depthwise-separable blocks; layer
names conv1, conv2_1 ... conv6, pool2d_avg, fc)."""
import paddle
from paddle import nn

from ._pretrained import no_pretrained

__all__ = ['MobileNetV1', 'mobilenet_v1']


class ConvBNLayer(nn.Layer):
    def __init__(self, in_channels, out_channels, kernel_size, stride, padding, num_groups=1):
        super().__init__()
        self._conv = nn.Conv2D(in_channels, out_channels, kernel_size, stride=stride,
                               padding=padding, groups=num_groups, bias_attr=False)
        self._norm_layer = nn.BatchNorm2D(out_channels)
        self._act = nn.ReLU()

    def forward(self, x):
        return self._act(self._norm_layer(self._conv(x)))


class DepthwiseSeparable(nn.Layer):
    def __init__(self, in_channels, out_channels1, out_channels2, num_groups, stride, scale):
        super().__init__()
        self._depthwise_conv = ConvBNLayer(in_channels, int(out_channels1 * scale), 3,
                                           stride=stride, padding=1,
                                           num_groups=int(num_groups * scale))
        self._pointwise_conv = ConvBNLayer(int(out_channels1 * scale),
                                           int(out_channels2 * scale), 1, stride=1, padding=0)

    def forward(self, x):
        return self._pointwise_conv(self._depthwise_conv(x))


# (name, in, out1, out2, groups, stride) with channel counts before scaling
_BLOCKS = [('conv2_1', 32, 32, 64, 32, 1), ('conv2_2', 64, 64, 128, 64, 2),
           ('conv3_1', 128, 128, 128, 128, 1), ('conv3_2', 128, 128, 256, 128, 2),
           ('conv4_1', 256, 256, 256, 256, 1), ('conv4_2', 256, 256, 512, 256, 2)] + \
    [('conv5_{}'.format(i + 1), 512, 512, 512, 512, 1) for i in range(5)] + \
    [('conv5_6', 512, 512, 1024, 512, 2), ('conv6', 1024, 1024, 1024, 1024, 1)]


class MobileNetV1(nn.Layer):
    """MobileNetV1(scale=1.0, num_classes=1000, with_pool=True)."""

    def __init__(self, scale=1.0, num_classes=1000, with_pool=True):
        super().__init__()
        self.scale = scale
        self.num_classes = num_classes
        self.with_pool = with_pool
        self.conv1 = ConvBNLayer(3, int(32 * scale), 3, stride=2, padding=1)
        self.dwsl = []
        for name, cin, oc1, oc2, groups, stride in _BLOCKS:
            dws = self.add_sublayer(name, DepthwiseSeparable(int(cin * scale), oc1, oc2, groups,
                                                             stride, scale))
            self.dwsl.append(dws)
        if with_pool:
            self.pool2d_avg = nn.AdaptiveAvgPool2D(1)
        if num_classes > 0:
            self.fc = nn.Linear(int(1024 * scale), num_classes)

    def forward(self, x):
        x = self.conv1(x)
        for dws in self.dwsl:
            x = dws(x)
        if self.with_pool:
            x = self.pool2d_avg(x)
        if self.num_classes > 0:
            x = paddle.flatten(x, 1)
            x = self.fc(x)
        return x


def mobilenet_v1(pretrained=False, scale=1.0, **kwargs):
    no_pretrained('mobilenet_v1', pretrained)
    return MobileNetV1(scale=scale, **kwargs)
