"""DenseNet 121/161/169/201/264 as in paddle.vision.models (Paddle's
BN-ReLU-Conv layers, block names db_conv_2 ..., transitions tr_convN_blk)."""
import math

import paddle
from paddle import nn

from ._pretrained import no_pretrained

__all__ = ['DenseNet', 'densenet121', 'densenet161', 'densenet169', 'densenet201',
           'densenet264']

_SPEC = {121: (64, 32, [6, 12, 24, 16]), 161: (96, 48, [6, 12, 36, 24]),
         169: (64, 32, [6, 12, 32, 32]), 201: (64, 32, [6, 12, 48, 32]),
         264: (64, 32, [6, 12, 64, 48])}


class BNACConvLayer(nn.Layer):
    def __init__(self, num_channels, num_filters, filter_size, stride=1, pad=0, groups=1,
                 act='relu'):
        super().__init__()
        self._batch_norm = nn.BatchNorm(num_channels, act=act)
        self._conv = nn.Conv2D(num_channels, num_filters, filter_size, stride=stride,
                               padding=pad, groups=groups, bias_attr=False)

    def forward(self, x):
        return self._conv(self._batch_norm(x))


class DenseLayer(nn.Layer):
    def __init__(self, num_channels, growth_rate, bn_size, dropout):
        super().__init__()
        self.dropout = dropout
        self.bn_ac_func1 = BNACConvLayer(num_channels, bn_size * growth_rate, 1)
        self.bn_ac_func2 = BNACConvLayer(bn_size * growth_rate, growth_rate, 3, pad=1)
        if dropout:
            self.dropout_func = nn.Dropout(p=dropout, mode='downscale_in_infer')

    def forward(self, x):
        conv = self.bn_ac_func2(self.bn_ac_func1(x))
        if self.dropout:
            conv = self.dropout_func(conv)
        return paddle.concat([x, conv], axis=1)


class DenseBlock(nn.Layer):
    def __init__(self, num_channels, num_layers, bn_size, growth_rate, dropout, name=None):
        super().__init__()
        self.dense_layer_func = []
        pre = num_channels
        for layer in range(num_layers):
            self.dense_layer_func.append(self.add_sublayer(
                '{}_{}'.format(name, layer + 1), DenseLayer(pre, growth_rate, bn_size, dropout)))
            pre += growth_rate

    def forward(self, x):
        for f in self.dense_layer_func:
            x = f(x)
        return x


class TransitionLayer(nn.Layer):
    def __init__(self, num_channels, num_output_features):
        super().__init__()
        self.conv_ac_func = BNACConvLayer(num_channels, num_output_features, 1)
        self.pool2d_avg = nn.AvgPool2D(kernel_size=2, stride=2, padding=0)

    def forward(self, x):
        return self.pool2d_avg(self.conv_ac_func(x))


class ConvBNLayer(nn.Layer):
    def __init__(self, num_channels, num_filters, filter_size, stride=1, pad=0, groups=1,
                 act='relu'):
        super().__init__()
        self._conv = nn.Conv2D(num_channels, num_filters, filter_size, stride=stride,
                               padding=pad, groups=groups, bias_attr=False)
        self._batch_norm = nn.BatchNorm(num_filters, act=act)

    def forward(self, x):
        return self._batch_norm(self._conv(x))


class DenseNet(nn.Layer):
    """DenseNet(layers=121, bn_size=4, dropout=0., num_classes=1000, with_pool=True)."""

    def __init__(self, layers=121, bn_size=4, dropout=0., num_classes=1000, with_pool=True):
        super().__init__()
        if layers not in _SPEC:
            raise ValueError("supported layers are {} but input layer is {}".format(
                sorted(_SPEC), layers))
        self.layers = layers
        self.num_classes = num_classes
        self.with_pool = with_pool
        num_init, growth, blocks = _SPEC[layers]
        self.conv1_func = ConvBNLayer(3, num_init, 7, stride=2, pad=3)
        self.pool2d_max = nn.MaxPool2D(kernel_size=3, stride=2, padding=1)
        self.block_config = blocks
        self.dense_block_func_list = []
        self.transition_func_list = []
        pre = num_features = num_init
        for i, n in enumerate(blocks):
            self.dense_block_func_list.append(self.add_sublayer(
                'db_conv_{}'.format(i + 2),
                DenseBlock(pre, n, bn_size, growth, dropout, name='conv{}'.format(i + 2))))
            num_features += n * growth
            pre = num_features
            if i != len(blocks) - 1:
                self.transition_func_list.append(self.add_sublayer(
                    'tr_conv{}_blk'.format(i + 2), TransitionLayer(pre, num_features // 2)))
                pre = num_features = num_features // 2
        self.batch_norm = nn.BatchNorm(num_features, act='relu')
        if with_pool:
            self.pool2d_avg = nn.AdaptiveAvgPool2D(1)
        if num_classes > 0:
            stdv = 1.0 / math.sqrt(num_features * 1.0)
            self.out = nn.Linear(num_features, num_classes,
                                 weight_attr=paddle.ParamAttr(
                                     initializer=nn.initializer.Uniform(-stdv, stdv)))

    def forward(self, x):
        x = self.pool2d_max(self.conv1_func(x))
        for i in range(len(self.block_config)):
            x = self.dense_block_func_list[i](x)
            if i != len(self.block_config) - 1:
                x = self.transition_func_list[i](x)
        x = self.batch_norm(x)
        if self.with_pool:
            x = self.pool2d_avg(x)
        if self.num_classes > 0:
            x = paddle.flatten(x, start_axis=1, stop_axis=-1)
            x = self.out(x)
        return x


def _densenet(layers, pretrained, **kwargs):
    no_pretrained('densenet{}'.format(layers), pretrained)
    return DenseNet(layers=layers, **kwargs)


def densenet121(pretrained=False, **kwargs):
    return _densenet(121, pretrained, **kwargs)


def densenet161(pretrained=False, **kwargs):
    return _densenet(161, pretrained, **kwargs)


def densenet169(pretrained=False, **kwargs):
    return _densenet(169, pretrained, **kwargs)


def densenet201(pretrained=False, **kwargs):
    return _densenet(201, pretrained, **kwargs)


def densenet264(pretrained=False, **kwargs):
    return _densenet(264, pretrained, **kwargs)
