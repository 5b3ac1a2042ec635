"""Argument checks and layout helpers shared by the paddle.nn.functional
modules: Tensor checks, int-or-list sizes, Paddle padding forms, NHWC<->NCHW."""
import numbers

from paddle import _C


def _check_tensor(x, fname, argname='x'):
    """TypeError naming fname and argname unless x is a Tensor."""
    if not isinstance(x, _C.Tensor):
        raise TypeError("{}: {} must be a Tensor, got {}".format(fname, argname,
                                                               type(x).__name__))


def _ntuple(v, n, what):
    """n ints from an int or a list of 1 or n ints (kernel sizes, strides)."""
    if isinstance(v, numbers.Integral):
        return [int(v)] * n
    v = [int(i) for i in v]
    if len(v) == 1:
        return v * n
    if len(v) != n:
        raise ValueError("{} should be an int or a list of {} ints, got {}".format(what, n, v))
    return v


def _conv_padding(padding, nd, ksize, stride, dilation, spatial, fname):
    """Paddle padding forms -> flat [before0, after0, before1, after1, ...]."""
    if isinstance(padding, str):
        p = padding.upper()
        if p == 'VALID':
            return [0] * (2 * nd)
        if p == 'SAME':
            out = []
            for i in range(nd):
                o = (spatial[i] + stride[i] - 1) // stride[i]
                eff = dilation[i] * (ksize[i] - 1) + 1
                total = max((o - 1) * stride[i] + eff - spatial[i], 0)
                out += [total // 2, total - total // 2]
            return out
        raise ValueError("{}: padding should be 'SAME' or 'VALID' when it is a string, got {}"
                         .format(fname, padding))
    if isinstance(padding, numbers.Integral):
        return [int(padding)] * (2 * nd)
    padding = list(padding)
    if padding and isinstance(padding[0], (list, tuple)):
        # [[0,0],[0,0],[pt,pb],[pl,pr]] (NCHW)
        pairs = [list(p) for p in padding]
        if len(pairs) == nd + 2:
            pairs = pairs[2:]
        if len(pairs) != nd:
            raise ValueError("{}: bad padding {}".format(fname, padding))
        return [int(v) for pair in pairs for v in pair]
    if len(padding) == nd:
        return [int(v) for v in padding for _ in range(2)]
    if len(padding) == 2 * nd:
        return [int(v) for v in padding]
    if len(padding) == 1:
        return [int(padding[0])] * (2 * nd)
    raise ValueError("{}: padding should be an int, a list of {} or {} ints, got {}".format(
        fname, nd, 2 * nd, padding))


def _to_nchw(x, data_format, nd):
    """(x in channels-first layout, whether it was moved) for Paddle's data_format."""
    if data_format in ('NCHW', 'NCL', 'NCDHW'):
        return x, False
    if data_format in ('NHWC', 'NLC', 'NDHWC'):
        perm = [0, x.ndim - 1] + list(range(1, x.ndim - 1))
        return _C.transpose(x, perm), True
    raise ValueError("data_format should be NCHW/NHWC (or NCL/NLC), got {}".format(data_format))


def _from_nchw(x, moved):
    """Undo _to_nchw: channels back to the last axis when moved."""
    if not moved:
        return x
    perm = [0] + list(range(2, x.ndim)) + [1]
    return _C.transpose(x, perm)
