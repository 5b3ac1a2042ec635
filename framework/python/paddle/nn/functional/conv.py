"""Convolutions (Paddle's paddle/nn/functional/conv.py): one fused C op each."""
from paddle import _C
from paddle._lazy import forward_to as _forward_to
from ._args import _check_tensor, _conv_padding, _from_nchw, _ntuple, _to_nchw


def conv1d(x, weight, bias=None, stride=1, padding=0, dilation=1, groups=1,
           data_format='NCL', name=None):
    _check_tensor(x, 'conv1d')
    if x.ndim != 3:
        raise ValueError("conv1d: x must be 3-D [N, C, L], got {}".format(list(x.shape)))
    x, moved = _to_nchw(x, data_format, 1)
    s = _ntuple(stride, 1, 'stride')
    d = _ntuple(dilation, 1, 'dilation')
    pad = _conv_padding(padding, 1, [weight.shape[2]], s, d, x.shape[2:], 'conv1d')
    out = _C.conv1d(x, weight, bias, s[0], pad, d[0], int(groups))
    return _from_nchw(out, moved)


def conv2d(x, weight, bias=None, stride=1, padding=0, dilation=1, groups=1,
           data_format='NCHW', name=None):
    """x [N, C, H, W], weight [OC, C/groups, KH, KW] -> [N, OC, OH, OW]."""
    _check_tensor(x, 'conv2d')
    if x.ndim != 4:
        raise ValueError("conv2d: x must be 4-D [N, C, H, W], got {}".format(list(x.shape)))
    x, moved = _to_nchw(x, data_format, 2)
    stride = _ntuple(stride, 2, 'stride')
    dilation = _ntuple(dilation, 2, 'dilation')
    ks = list(weight.shape[2:])
    pad = _conv_padding(padding, 2, ks, stride, dilation, x.shape[2:], 'conv2d')
    out = _C.conv2d(x, weight, bias, stride, pad, dilation, int(groups))
    return _from_nchw(out, moved)


# This module held every function of paddle.nn.functional before the package followed
# Paddle's module layout; those names still import from here.
__getattr__ = _forward_to(__name__, 'paddle.nn.functional')
