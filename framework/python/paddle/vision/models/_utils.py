"""Helpers shared by the vision models (Paddle's paddle/vision/models/_utils.py
and paddle.vision.ops.ConvNormActivation)."""
from paddle import nn


def _make_divisible(v, divisor=8, min_value=None):
    """Round v to the nearest multiple of divisor, never going below 90% of v."""
    if min_value is None:
        min_value = divisor
    new_v = max(min_value, int(v + divisor / 2) // divisor * divisor)
    if new_v < 0.9 * v:
        new_v += divisor
    return new_v


class ConvNormActivation(nn.Sequential):
    """Conv2D (padding (k-1)//2 * dilation, bias only without a norm), norm
    layer, activation layer."""

    def __init__(self, in_channels, out_channels, kernel_size=3, stride=1, padding=None,
                 groups=1, norm_layer=nn.BatchNorm2D, activation_layer=nn.ReLU, dilation=1,
                 bias=None):
        if padding is None:
            padding = (kernel_size - 1) // 2 * dilation
        if bias is None:
            bias = norm_layer is None
        layers = [nn.Conv2D(in_channels, out_channels, kernel_size, stride, padding,
                            dilation=dilation, groups=groups,
                            bias_attr=None if bias else False)]
        if norm_layer is not None:
            layers.append(norm_layer(out_channels))
        if activation_layer is not None:
            layers.append(activation_layer())
        super().__init__(*layers)
