"""AlexNet as in paddle.vision.models (its layer names and initialisation:
every weight and bias ~ U(-1/sqrt(fan_in), 1/sqrt(fan_in)))."""
import math

import paddle
from paddle import nn
from paddle.nn import functional as F

from ._pretrained import no_pretrained

__all__ = ['AlexNet', 'alexnet']


def _uniform_attrs(stdv):
    init = nn.initializer.Uniform(-stdv, stdv)
    return paddle.ParamAttr(initializer=init), paddle.ParamAttr(initializer=init)


class ConvPoolLayer(nn.Layer):
    def __init__(self, input_channels, output_channels, filter_size, stride, padding, stdv,
                 groups=1, act=None):
        super().__init__()
        self.relu = nn.ReLU() if act == 'relu' else None
        w, b = _uniform_attrs(stdv)
        self._conv = nn.Conv2D(input_channels, output_channels, filter_size, stride=stride,
                               padding=padding, groups=groups, weight_attr=w, bias_attr=b)
        self._pool = nn.MaxPool2D(kernel_size=3, stride=2, padding=0)

    def forward(self, inputs):
        x = self._conv(inputs)
        if self.relu is not None:
            x = self.relu(x)
        return self._pool(x)


class AlexNet(nn.Layer):
    """AlexNet(num_classes=1000): [N, 3, 224, 224] -> [N, num_classes]
    (num_classes <= 0 returns the [N, 256, 6, 6] features)."""

    def __init__(self, num_classes=1000):
        super().__init__()
        self.num_classes = num_classes
        self._conv1 = ConvPoolLayer(3, 64, 11, 4, 2, 1.0 / math.sqrt(3 * 11 * 11), act='relu')
        self._conv2 = ConvPoolLayer(64, 192, 5, 1, 2, 1.0 / math.sqrt(64 * 5 * 5), act='relu')
        w, b = _uniform_attrs(1.0 / math.sqrt(192 * 3 * 3))
        self._conv3 = nn.Conv2D(192, 384, 3, stride=1, padding=1, weight_attr=w, bias_attr=b)
        w, b = _uniform_attrs(1.0 / math.sqrt(384 * 3 * 3))
        self._conv4 = nn.Conv2D(384, 256, 3, stride=1, padding=1, weight_attr=w, bias_attr=b)
        self._conv5 = ConvPoolLayer(256, 256, 3, 1, 1, 1.0 / math.sqrt(256 * 3 * 3), act='relu')
        if num_classes > 0:
            stdv = 1.0 / math.sqrt(256 * 6 * 6)
            self._drop1 = nn.Dropout(p=0.5, mode='downscale_in_infer')
            w, b = _uniform_attrs(stdv)
            self._fc6 = nn.Linear(256 * 6 * 6, 4096, weight_attr=w, bias_attr=b)
            self._drop2 = nn.Dropout(p=0.5, mode='downscale_in_infer')
            w, b = _uniform_attrs(stdv)
            self._fc7 = nn.Linear(4096, 4096, weight_attr=w, bias_attr=b)
            w, b = _uniform_attrs(stdv)
            self._fc8 = nn.Linear(4096, num_classes, weight_attr=w, bias_attr=b)

    def forward(self, inputs):
        x = self._conv1(inputs)
        x = self._conv2(x)
        x = F.relu(self._conv3(x))
        x = F.relu(self._conv4(x))
        x = self._conv5(x)
        if self.num_classes > 0:
            x = paddle.flatten(x, start_axis=1, stop_axis=-1)
            x = self._drop1(x)
            x = F.relu(self._fc6(x))
            x = self._drop2(x)
            x = F.relu(self._fc7(x))
            x = self._fc8(x)
        return x


def alexnet(pretrained=False, **kwargs):
    no_pretrained('alexnet', pretrained)
    return AlexNet(**kwargs)
