"""Linear, dropout, padding, similarity and resampling (Paddle's
paddle/nn/functional/common.py)."""
import numbers

import numpy as np

from paddle import _C
from paddle.amp import _state as _amp
from paddle._lazy import forward_to as _forward_to
from paddle.tensor.creation import to_tensor
from ._args import _check_tensor, _from_nchw


def linear(x, weight, bias=None, name=None):
    """x @ weight + bias with weight [in, out]."""
    _check_tensor(x, 'linear')
    if _amp.ON and _amp.current():
        return _amp.call(('linear', 'matmul_v2'), _C.linear, (x, weight, bias))
    return _C.linear(x, weight, bias)


def dropout(x, p=0.5, axis=None, training=True, mode='upscale_in_train', name=None):
    """Drop elements with probability p; Paddle's modes upscale_in_train
    (default) and downscale_in_infer. axis drops whole slices along it."""
    _check_tensor(x, 'dropout')
    if isinstance(p, bool) or not isinstance(p, numbers.Real):
        raise TypeError("p argument should be a number")
    if p < 0 or p > 1:
        raise ValueError("p argument should between 0 and 1, got {}".format(p))
    if mode not in ('downscale_in_infer', 'upscale_in_train'):
        raise ValueError("mode argument should be 'downscale_in_infer' or 'upscale_in_train'")
    if axis is None:
        if _amp.ON and _amp.current():
            return _amp.call('dropout', _C.dropout, (x,), float(p), bool(training), mode)
        return _C.dropout(x, float(p), bool(training), mode)
    axes = [axis] if isinstance(axis, int) else list(axis)
    axes = [a + x.ndim if a < 0 else a for a in axes]
    if not training:
        return x if mode == 'upscale_in_train' else _C.multiply(x, 1.0 - float(p))
    if p == 0:
        return x
    mshape = [x.shape[i] if i in axes else 1 for i in range(x.ndim)]
    keep = _C.cast(_C.greater_equal(_C.rand(mshape, 'float32'), float(p)), x.dtype)
    out = _C.multiply(x, keep)
    if mode == 'upscale_in_train':
        out = _C.divide(out, 1.0 - float(p)) if p < 1 else _C.multiply(out, 0.0)
    return out


def dropout2d(x, p=0.5, training=True, data_format='NCHW', name=None):
    return dropout(x, p, axis=[0, 1] if data_format == 'NCHW' else [0, 3], training=training)


def alpha_dropout(x, p=0.5, training=True, name=None, _mask_shape=None):
    if not training or p == 0:
        return x
    if p < 0 or p > 1:
        raise ValueError("p argument should between 0 and 1, got {}".format(p))
    alpha = 1.6732632423543772848170429916717
    scale = 1.0507009873554804934193349852946
    alpha_p = -alpha * scale
    a = ((1 - p) * (1 + p * alpha_p ** 2)) ** -0.5
    b = -a * alpha_p * p
    shape = list(x.shape) if _mask_shape is None else _mask_shape
    keep = _C.cast(_C.greater_equal(_C.rand(shape, 'float32'), float(p)), x.dtype)
    y = _C.add(_C.multiply(x, keep), _C.multiply(_C.subtract(1.0, keep), alpha_p))
    return _C.add(_C.multiply(y, a), b)


def label_smooth(label, prior_dist=None, epsilon=0.1, name=None):
    n = label.shape[-1]
    if prior_dist is None:
        return _C.add(_C.multiply(label, 1.0 - float(epsilon)), float(epsilon) / n)
    return _C.add(_C.multiply(label, 1.0 - float(epsilon)),
                  _C.multiply(prior_dist, float(epsilon)))


def pad(x, pad, mode='constant', value=0.0, data_format='NCHW', pad_from_left_axis=True,
        name=None):
    """Paddle's pad: a list of 2*ndim (from the first axis) or of 2*k pairs for
    the last k spatial axes (last axis first, like torch) in NCHW."""
    _check_tensor(x, 'pad')
    if hasattr(pad, 'tolist'):
        pad = pad.tolist()
    pad = [int(v) for v in pad]
    if mode not in ('constant', 'reflect', 'replicate', 'circular'):
        raise ValueError("pad: mode should be constant, reflect, replicate or circular, got {}"
                         .format(mode))
    return _C.pad(x, pad, mode, float(value))


def cosine_similarity(x1, x2, axis=1, eps=1e-8):
    dot = _C.sum(_C.multiply(x1, x2), axis)
    n1 = _C.sqrt(_C.sum(_C.square(x1), axis))
    n2 = _C.sqrt(_C.sum(_C.square(x2), axis))
    return _C.divide(dot, _C.maximum(_C.multiply(n1, n2), float(eps)))


def _src_coords(in_size, out_size, align_corners, align_mode, ratio):
    """Source coordinates of the output samples along one axis (Paddle's and
    PyTorch's convention: half-pixel centres unless align_corners)."""
    i = np.arange(out_size, dtype=np.float64)
    if align_corners:
        r = (in_size - 1) / (out_size - 1) if out_size > 1 else 0.0
        return i * r
    r = ratio if ratio is not None else in_size / out_size
    if align_mode == 0:
        return (i + 0.5) * r - 0.5
    return i * r


def _cubic_weights(t, a=-0.75):
    """Keys' cubic convolution weights of the four taps at -1, 0, 1, 2 for
    fractional offsets t (A = -0.75, as Paddle and PyTorch)."""
    def near(d):
        return ((a + 2) * d - (a + 3)) * d * d + 1

    def far(d):
        return ((a * d - 5 * a) * d + 8 * a) * d - 4 * a
    return [far(t + 1), near(t), near(1 - t), far(2 - t)]


def _interp_axis(x, axis, out_size, mode, align_corners, align_mode, ratio=None):
    """Resample one spatial axis of x to out_size (nearest, linear or cubic):
    gathers of whole slices (index_select) and weighted sums, so gradients
    flow to x."""
    in_size = x.shape[axis]
    if out_size == in_size and ratio in (None, 1.0):
        return x
    npdt = np.float64 if str(x.dtype).endswith('float64') else np.float32
    shape = [1] * x.ndim
    shape[axis] = out_size

    def take(idx):
        return _C.index_select(x, to_tensor(np.clip(idx, 0, in_size - 1).astype('int64')), axis)

    def weight(w):
        return to_tensor(np.asarray(w, dtype=npdt).reshape(shape))

    if mode == 'nearest':
        if align_corners:
            r = (in_size - 1) / (out_size - 1) if out_size > 1 else 0.0
            src = np.floor(np.arange(out_size) * r + 0.5)
        else:
            r = ratio if ratio is not None else in_size / out_size
            src = np.floor(np.arange(out_size) * r)
        return take(src)
    src = _src_coords(in_size, out_size, align_corners, align_mode, ratio)
    if mode == 'cubic':
        i0 = np.floor(src)
        t = src - i0
        out = None
        for k, w in zip(range(-1, 3), _cubic_weights(t)):
            term = _C.multiply(take(i0 + k), weight(w))
            out = term if out is None else _C.add(out, term)
        return out
    src = np.clip(src, 0, in_size - 1)
    i0 = np.floor(src)
    i1 = np.minimum(i0 + 1, in_size - 1)
    a = take(i0)
    b = take(i1)
    return _C.add(a, _C.multiply(_C.subtract(b, a), weight(src - i0)))


def interpolate(x, size=None, scale_factor=None, mode='nearest', align_corners=False,
                align_mode=0, data_format=None, recompute_scale_factor=None, name=None):
    """Resize the spatial axes of NCL / NCHW / NCDHW input: modes nearest,
    linear, bilinear, trilinear (separable linear interpolation) and bicubic
    (separable Keys cubic, A = -0.75). With scale_factor (and no
    recompute_scale_factor) the source step is 1/scale_factor, as in Paddle."""
    if _amp.ON and _amp.current():
        return _amp.call(('linear_interp_v2', 'nearest_interp_v2', 'bilinear_interp_v2',
                          'bicubic_interp_v2', 'trilinear_interp_v2'), interpolate, (x,), size,
                         scale_factor, mode, align_corners, align_mode, data_format,
                         recompute_scale_factor)
    _check_tensor(x, 'interpolate')
    mode = mode.lower()
    if mode not in ('nearest', 'linear', 'bilinear', 'trilinear', 'bicubic'):
        raise ValueError("interpolate: mode should be nearest, linear, bilinear, trilinear or "
                         "bicubic, got {}".format(mode))
    nsp = x.ndim - 2
    if nsp < 1:
        raise ValueError("interpolate: x must be at least 3-D, got {}".format(list(x.shape)))
    want = {'linear': 1, 'bilinear': 2, 'bicubic': 2, 'trilinear': 3}.get(mode)
    if want is not None and want != nsp:
        raise ValueError("interpolate: mode {} needs a {}-D input, got {}".format(
            mode, want + 2, list(x.shape)))
    if align_corners and mode == 'nearest':
        raise ValueError("interpolate: align_corners is only valid for linear, bilinear, "
                         "trilinear and bicubic modes")
    if data_format is None:
        data_format = {1: 'NCW', 2: 'NCHW', 3: 'NCDHW'}.get(nsp, 'NCHW')
    moved = data_format in ('NWC', 'NLC', 'NHWC', 'NDHWC')
    if moved:
        x = _C.transpose(x, [0, x.ndim - 1] + list(range(1, x.ndim - 1)))
    spatial = list(x.shape[2:])
    ratios = [None] * nsp
    if size is not None:
        if hasattr(size, 'tolist'):
            size = size.tolist()
        if isinstance(size, numbers.Integral):
            out = [int(size)] * nsp
        else:
            out = [int(s.item()) if hasattr(s, 'item') else int(s) for s in size]
    elif scale_factor is not None:
        if hasattr(scale_factor, 'tolist'):
            scale_factor = scale_factor.tolist()
        sf = [float(scale_factor)] * nsp if isinstance(scale_factor, numbers.Real) \
            else [float(s) for s in scale_factor]
        if len(sf) != nsp or any(f <= 0 for f in sf):
            raise ValueError("interpolate: scale_factor {} must hold {} positive numbers".format(
                scale_factor, nsp))
        out = [int(s * f) for s, f in zip(spatial, sf)]
        if not recompute_scale_factor:
            ratios = [1.0 / f for f in sf]
    else:
        raise ValueError("interpolate: one of size and scale_factor must be given")
    if len(out) != nsp or any(o <= 0 for o in out):
        raise ValueError("interpolate: bad output size {} for input {}".format(
            out, list(x.shape)))
    kind = {'nearest': 'nearest', 'bicubic': 'cubic'}.get(mode, 'linear')
    for i in range(nsp):
        x = _interp_axis(x, 2 + i, out[i], kind, align_corners, align_mode, ratios[i])
    return _from_nchw(x, moved)


def upsample(x, size=None, scale_factor=None, mode='nearest', align_corners=False,
             align_mode=0, data_format=None, name=None):
    return interpolate(x, size, scale_factor, mode, align_corners, align_mode, data_format)


def _unfold_args(kernel_sizes, strides, paddings, dilations, fname):
    from ._args import _ntuple
    k = _ntuple(kernel_sizes, 2, 'kernel_sizes')
    s = _ntuple(strides, 2, 'strides')
    d = _ntuple(dilations, 2, 'dilations')
    if isinstance(paddings, numbers.Integral):
        p = [int(paddings)] * 4
    else:
        p = [int(v) for v in paddings]
        if len(p) == 2:
            p = [p[0], p[1], p[0], p[1]]
        elif len(p) != 4:
            raise ValueError("{}: paddings should be an int, or a list of 2 or 4 ints, got {}"
                             .format(fname, paddings))
    if min(k + s + d) <= 0 or min(p) < 0:
        raise ValueError("{}: kernel sizes, strides and dilations must be positive and "
                         "paddings non-negative".format(fname))
    # Paddle's 4-int order is [top, left, bottom, right]; conv2d takes {top, bottom, left, right}
    return k, s, d, [p[0], p[2], p[1], p[3]]


def _patch_kernel(c, k, dtype):
    """[c*kh*kw, 1, kh, kw] one-hot kernels: a grouped conv with them copies
    every kernel position of every channel into its own output channel."""
    eye = np.eye(k[0] * k[1]).reshape(k[0] * k[1], 1, k[0], k[1])
    w = to_tensor(np.tile(eye, (c, 1, 1, 1)))
    return _C.cast(w, str(dtype).replace('paddle.', ''))


def unfold(x, kernel_sizes, strides=1, paddings=0, dilations=1, name=None):
    """im2col: x [N, C, H, W] -> [N, C*kh*kw, L] sliding blocks (as a grouped
    convolution with one-hot kernels, so it runs on the conv path)."""
    _check_tensor(x, 'unfold')
    if x.ndim != 4:
        raise ValueError("unfold: x must be 4-D [N, C, H, W], got {}".format(list(x.shape)))
    k, s, d, p = _unfold_args(kernel_sizes, strides, paddings, dilations, 'unfold')
    n, c = x.shape[0], x.shape[1]
    out = _C.conv2d(x, _patch_kernel(c, k, x.dtype), None, s, p, d, c)
    return _C.reshape(out, [n, c * k[0] * k[1], -1])


def fold(x, output_sizes, kernel_sizes, strides=1, paddings=0, dilations=1, name=None):
    """col2im, the adjoint of unfold: x [N, C*kh*kw, L] -> [N, C, H, W],
    overlapping values summed (a transposed grouped convolution)."""
    from ._args import _ntuple
    from .conv import _conv_transpose_nd
    _check_tensor(x, 'fold')
    if x.ndim != 3:
        raise ValueError("fold: x must be 3-D [N, C*kh*kw, L], got {}".format(list(x.shape)))
    k, s, d, p = _unfold_args(kernel_sizes, strides, paddings, dilations, 'fold')
    osz = _ntuple(output_sizes, 2, 'output_sizes')
    n, ckk, length = x.shape
    if ckk % (k[0] * k[1]):
        raise ValueError("fold: x.shape[1] ({}) must be divisible by kh*kw ({})".format(
            ckk, k[0] * k[1]))
    c = ckk // (k[0] * k[1])
    blocks = [(osz[i] + p[2 * i] + p[2 * i + 1] - d[i] * (k[i] - 1) - 1) // s[i] + 1
              for i in range(2)]
    if blocks[0] * blocks[1] != length:
        raise ValueError("fold: expected {} blocks for output {} but x has {}".format(
            blocks[0] * blocks[1], osz, length))
    cols = _C.reshape(x, [n, ckk] + blocks)
    return _conv_transpose_nd(cols, _patch_kernel(c, k, x.dtype), None, s, p, 0, c, d, osz, 2,
                              'fold')


def zeropad2d(x, padding, data_format='NCHW', name=None):
    """Zero padding of the last two spatial axes: padding int or
    [left, right, top, bottom]."""
    if isinstance(padding, numbers.Integral):
        padding = [int(padding)] * 4
    return pad(x, list(padding), mode='constant', value=0.0, data_format=data_format)


def dropout3d(x, p=0.5, training=True, data_format='NCDHW', name=None):
    if x.ndim != 5:
        raise ValueError("dropout3d: x must be 5-D, got {}".format(list(x.shape)))
    return dropout(x, p, axis=[0, 1] if data_format == 'NCDHW' else [0, 4], training=training)


def bilinear(x1, x2, weight, bias=None, name=None):
    """out[b, k] = x1[b] @ weight[k] @ x2[b] + bias[k]; weight [out, in1, in2]."""
    _check_tensor(x1, 'bilinear', 'x1')
    _check_tensor(x2, 'bilinear', 'x2')
    if x1.ndim != 2 or x2.ndim != 2 or weight.ndim != 3 or x1.shape[1] != weight.shape[1] or \
            x2.shape[1] != weight.shape[2] or x1.shape[0] != x2.shape[0]:
        raise ValueError("bilinear: shapes x1 {}, x2 {} and weight {} do not match".format(
            list(x1.shape), list(x2.shape), list(weight.shape)))
    # [B, 1, 1, in1] x [1, out, in1, in2] -> [B, out, 1, in2]
    t = _C.matmul(_C.unsqueeze(x1, [1, 2]), _C.unsqueeze(weight, [0]))
    out = _C.sum(_C.multiply(_C.squeeze(t, [2]), _C.unsqueeze(x2, [1])), [-1], False)
    if bias is not None:
        out = _C.add(out, bias)
    return out


def feature_alpha_dropout(x, p=0.5, training=True, name=None):
    """alpha_dropout that drops whole channels (one draw per [N, C] entry)."""
    _check_tensor(x, 'feature_alpha_dropout')
    if x.ndim < 2:
        raise ValueError("feature_alpha_dropout: x must be at least 2-D, got {}".format(
            list(x.shape)))
    return alpha_dropout(x, p, training, _mask_shape=list(x.shape[:2]) + [1] * (x.ndim - 2))


# This module held every function of paddle.nn.functional before the package followed
# Paddle's module layout; those names still import from here.
__getattr__ = _forward_to(__name__, 'paddle.nn.functional')
