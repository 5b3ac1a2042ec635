"""Convolutions (Paddle's paddle/nn/functional/conv.py): conv1d/conv2d are
one fused C op each; conv3d is one conv2d per kernel depth tap over strided
depth slices; the transposed convolutions are convolutions of the
zero-stuffed input (all on the im2col + gemm path)."""
from paddle import _C
from paddle.amp import _state as _amp
from paddle._lazy import forward_to as _forward_to
from paddle.tensor.manipulation import flip as _flip
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
    if _amp.ON and _amp.current():
        out = _amp.call(('conv1d', 'conv2d'), _C.conv1d, (x, weight, bias), s[0], pad, d[0],
                        int(groups))
    else:
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
    if _amp.ON and _amp.current():
        out = _amp.call('conv2d', _C.conv2d, (x, weight, bias), stride, pad, dilation,
                        int(groups))
    else:
        out = _C.conv2d(x, weight, bias, stride, pad, dilation, int(groups))
    return _from_nchw(out, moved)


def _transpose_padding(padding, nd, ksize, stride, dilation, spatial, fname):
    """Paddle's conv-transpose padding forms -> flat [before0, after0, ...];
    'SAME' makes out = in * stride, 'VALID' pads nothing."""
    if isinstance(padding, str):
        p = padding.upper()
        if p == 'VALID':
            return [0] * (2 * nd)
        if p == 'SAME':
            out = []
            for i in range(nd):
                total = max(dilation[i] * (ksize[i] - 1) + 1 - stride[i], 0)
                out += [total // 2, total - total // 2]
            return out
        raise ValueError("{}: padding should be 'SAME' or 'VALID' when it is a string, got {}"
                         .format(fname, padding))
    return _conv_padding(padding, nd, ksize, stride, dilation, spatial, fname)


def _conv_transpose_nd(x, weight, bias, stride, padding, output_padding, groups, dilation,
                       output_size, nd, fname):
    """Transposed convolution as a stride-1 convolution of the stride-dilated
    input with the flipped, in/out-swapped kernel, so it runs on the
    im2col + gemm path of conv2d (forward and backward) with no Python loop
    over elements. x is channels-first [N, C, *spatial] with nd spatial axes;
    weight is Paddle's [C_in, C_out / groups, *k]."""
    if _amp.ON and _amp.current():
        return _amp.call(fname, _conv_transpose_nd, (x, weight, bias), stride, padding,
                         output_padding, groups, dilation, output_size, nd, fname)
    if weight.ndim != nd + 2:
        raise ValueError("{}: weight must be {}-D [C_in, C_out/groups, *k], got {}".format(
            fname, nd + 2, list(weight.shape)))
    groups = int(groups)
    cin = x.shape[1]
    if groups <= 0 or cin % groups != 0 or weight.shape[0] != cin:
        raise ValueError("{}: x has {} channels but weight {} (groups {}) expects {}".format(
            fname, cin, list(weight.shape), groups, weight.shape[0]))
    s = _ntuple(stride, nd, 'stride')
    d = _ntuple(dilation, nd, 'dilation')
    ks = list(weight.shape[2:])
    spatial = list(x.shape[2:])
    pad = _transpose_padding(padding, nd, ks, s, d, spatial, fname)
    if any(v < 0 for v in s + d + pad):
        raise ValueError("{}: stride, dilation and padding must be non-negative".format(fname))
    base = [(spatial[i] - 1) * s[i] - pad[2 * i] - pad[2 * i + 1] + d[i] * (ks[i] - 1) + 1
            for i in range(nd)]
    if output_size is not None:
        if hasattr(output_size, 'tolist'):
            output_size = output_size.tolist()
        osz = _ntuple(output_size, nd, 'output_size')
        opad = [osz[i] - base[i] for i in range(nd)]
        for i in range(nd):
            if opad[i] < 0 or opad[i] >= max(s[i], d[i]):
                raise ValueError("{}: output_size {} is not reachable from input {} (between "
                                 "{} and {})".format(fname, osz, spatial, base,
                                                     [b + max(a, c) - 1 for b, a, c in
                                                      zip(base, s, d)]))
    else:
        opad = _ntuple(output_padding, nd, 'output_padding')
        for i in range(nd):
            if opad[i] < 0 or (opad[i] >= s[i] and opad[i] >= d[i]):
                raise ValueError("{}: output_padding {} must be smaller than stride {} or "
                                 "dilation {}".format(fname, opad, s, d))
    n = x.shape[0]
    # 1. insert stride-1 zeros between input elements (pad after a new unit axis)
    if any(v > 1 for v in s):
        shp = [n, cin]
        for i in range(nd):
            shp += [spatial[i], 1]
        z = _C.reshape(x, shp)
        zp = [0, 0, 0, 0]
        for i in range(nd):
            zp += [0, 0, 0, s[i] - 1]
        z = _C.pad(z, zp, 'constant', 0.0)
        z = _C.reshape(z, [n, cin] + [spatial[i] * s[i] for i in range(nd)])
        z = _C.slice(z, list(range(2, 2 + nd)), [0] * nd,
                     [(spatial[i] - 1) * s[i] + 1 for i in range(nd)])
    else:
        z = x
    # 2. pad (or crop) by dilation*(k-1) - padding, plus output_padding after
    full = []
    for i in range(nd):
        e = d[i] * (ks[i] - 1)
        full += [e - pad[2 * i], e - pad[2 * i + 1] + opad[i]]
    if any(v < 0 for v in full):
        starts = [max(-full[2 * i], 0) for i in range(nd)]
        ends = [z.shape[2 + i] - max(-full[2 * i + 1], 0) for i in range(nd)]
        if any(e <= b for b, e in zip(starts, ends)):
            raise ValueError("{}: padding {} leaves an empty output".format(fname, pad))
        z = _C.slice(z, list(range(2, 2 + nd)), starts, ends)
        full = [max(v, 0) for v in full]
    if any(full):
        z = _C.pad(z, [0, 0, 0, 0] + full, 'constant', 0.0)
    # 3. kernel: [C_in, C_out/g, *k] -> [C_out, C_in/g, *k], spatially flipped
    cog = weight.shape[1]
    w = _C.reshape(weight, [groups, cin // groups, cog] + ks)
    w = _C.transpose(w, [0, 2, 1] + list(range(3, 3 + nd)))
    w = _C.reshape(w, [groups * cog, cin // groups] + ks)
    w = _flip(w, list(range(2, 2 + nd)))
    if nd == 3:
        return _conv3d_nc(z, w, bias, [1, 1, 1], [0] * 6, d, groups)
    if nd == 2:
        return _C.conv2d(z, w, bias, [1, 1], [0, 0, 0, 0], d, groups)
    return _C.conv1d(z, w, bias, 1, [0, 0], d[0], groups)


def _conv3d_nc(x, weight, bias, stride, pad, dilation, groups):
    """3-D convolution of channels-first x [N, C, D, H, W] with weight
    [OC, C/groups, KD, KH, KW] and flat pad [d0, d1, h0, h1, w0, w1]: for each
    depth tap kd, the input depth slices that tap reads (strided) are batched
    into one conv2d with weight[:, :, kd]; the taps' outputs are summed."""
    n, c = x.shape[0], x.shape[1]
    kd = weight.shape[2]
    if any(pad[:2]):
        x = _C.pad(x, [0, 0, 0, 0, pad[0], pad[1], 0, 0, 0, 0], 'constant', 0.0)
    depth = x.shape[2]
    od = (depth - dilation[0] * (kd - 1) - 1) // stride[0] + 1
    if od <= 0:
        raise ValueError("conv3d: the kernel ({} deep, dilation {}) is larger than the padded "
                         "input depth {}".format(kd, dilation[0], depth))
    out = None
    for t in range(kd):
        start = t * dilation[0]
        sl = _C.slice(x, [2], [start], [start + (od - 1) * stride[0] + 1], [stride[0]])
        sl = _C.reshape(_C.transpose(sl, [0, 2, 1, 3, 4]), [n * od, c] + list(x.shape[3:]))
        wt = _C.squeeze(_C.slice(weight, [2], [t], [t + 1]), [2])
        y = _C.conv2d(sl, wt, None, stride[1:], pad[2:], dilation[1:], groups)
        out = y if out is None else _C.add(out, y)
    oc, oh, ow = out.shape[1], out.shape[2], out.shape[3]
    out = _C.transpose(_C.reshape(out, [n, od, oc, oh, ow]), [0, 2, 1, 3, 4])
    if bias is not None:
        out = _C.add(out, _C.reshape(bias, [1, oc, 1, 1, 1]))
    return out


def conv3d(x, weight, bias=None, stride=1, padding=0, dilation=1, groups=1,
           data_format='NCDHW', name=None):
    """x [N, C, D, H, W], weight [OC, C/groups, KD, KH, KW] -> [N, OC, OD, OH, OW]."""
    _check_tensor(x, 'conv3d')
    if x.ndim != 5 or weight.ndim != 5:
        raise ValueError("conv3d: x and weight must be 5-D, got {} and {}".format(
            list(x.shape), list(weight.shape)))
    x, moved = _to_nchw(x, data_format, 3)
    groups = int(groups)
    if groups <= 0 or x.shape[1] % groups or weight.shape[1] * groups != x.shape[1]:
        raise ValueError("conv3d: x has {} channels but weight {} with groups {} expects {}"
                         .format(x.shape[1], list(weight.shape), groups,
                                 weight.shape[1] * max(groups, 1)))
    s = _ntuple(stride, 3, 'stride')
    d = _ntuple(dilation, 3, 'dilation')
    pad = _conv_padding(padding, 3, list(weight.shape[2:]), s, d, x.shape[2:], 'conv3d')
    if min(s + d) <= 0 or min(pad) < 0:
        raise ValueError("conv3d: strides and dilations must be positive, padding non-negative")
    if _amp.ON and _amp.current():
        return _from_nchw(_amp.call('conv3d', _conv3d_nc, (x, weight, bias), s, pad, d, groups),
                          moved)
    return _from_nchw(_conv3d_nc(x, weight, bias, s, pad, d, groups), moved)


def conv3d_transpose(x, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1, data_format='NCDHW', output_size=None, name=None):
    """x [N, C_in, D, H, W], weight [C_in, C_out/groups, KD, KH, KW] -> [N, C_out, ...]."""
    _check_tensor(x, 'conv3d_transpose')
    if x.ndim != 5:
        raise ValueError("conv3d_transpose: x must be 5-D, got {}".format(list(x.shape)))
    x, moved = _to_nchw(x, data_format, 3)
    out = _conv_transpose_nd(x, weight, bias, stride, padding, output_padding, groups,
                             dilation, output_size, 3, 'conv3d_transpose')
    return _from_nchw(out, moved)


def conv2d_transpose(x, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1, data_format='NCHW', output_size=None, name=None):
    """x [N, C_in, H, W], weight [C_in, C_out/groups, KH, KW] -> [N, C_out, OH, OW]
    with OH = (H-1)*stride - pad_top - pad_bottom + dilation*(KH-1) + 1 + output_padding."""
    _check_tensor(x, 'conv2d_transpose')
    if x.ndim != 4:
        raise ValueError("conv2d_transpose: x must be 4-D [N, C, H, W], got {}".format(
            list(x.shape)))
    x, moved = _to_nchw(x, data_format, 2)
    out = _conv_transpose_nd(x, weight, bias, stride, padding, output_padding, groups,
                             dilation, output_size, 2, 'conv2d_transpose')
    return _from_nchw(out, moved)


def conv1d_transpose(x, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1, output_size=None, data_format='NCL', name=None):
    """x [N, C_in, L], weight [C_in, C_out/groups, K] -> [N, C_out, OL]."""
    _check_tensor(x, 'conv1d_transpose')
    if x.ndim != 3:
        raise ValueError("conv1d_transpose: x must be 3-D [N, C, L], got {}".format(
            list(x.shape)))
    x, moved = _to_nchw(x, data_format, 1)
    out = _conv_transpose_nd(x, weight, bias, stride, padding, output_padding, groups,
                             dilation, output_size, 1, 'conv1d_transpose')
    return _from_nchw(out, moved)


# This module held every function of paddle.nn.functional before the package followed
# Paddle's module layout; those names still import from here.
__getattr__ = _forward_to(__name__, 'paddle.nn.functional')
