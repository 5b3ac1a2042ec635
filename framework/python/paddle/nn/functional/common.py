"""Linear, dropout, padding, similarity and resampling (Paddle's
paddle/nn/functional/common.py)."""
import numbers

import numpy as np

from paddle import _C
from paddle._lazy import forward_to as _forward_to
from paddle.tensor.creation import to_tensor
from ._args import _check_tensor, _from_nchw


def linear(x, weight, bias=None, name=None):
    """x @ weight + bias with weight [in, out]."""
    _check_tensor(x, 'linear')
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


def alpha_dropout(x, p=0.5, training=True, name=None):
    if not training or p == 0:
        return x
    alpha = 1.6732632423543772848170429916717
    scale = 1.0507009873554804934193349852946
    alpha_p = -alpha * scale
    a = ((1 - p) * (1 + p * alpha_p ** 2)) ** -0.5
    b = -a * alpha_p * p
    keep = _C.cast(_C.greater_equal(_C.rand(x.shape, 'float32'), float(p)), x.dtype)
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


def _interp_axis(x, axis, out_size, mode, align_corners, align_mode):
    """Resample one spatial axis of x to out_size (nearest or linear)."""
    in_size = x.shape[axis]
    if out_size == in_size:
        return x
    if mode == 'nearest':
        if align_corners:
            ratio = (in_size - 1) / (out_size - 1) if out_size > 1 else 0.0
            src = np.floor(np.arange(out_size) * ratio + 0.5)
        else:
            src = np.floor(np.arange(out_size) * (in_size / out_size))
        idx = np.clip(src, 0, in_size - 1).astype('int64')
        return _C.index_select(x, to_tensor(idx), axis)
    if align_corners:
        ratio = (in_size - 1) / (out_size - 1) if out_size > 1 else 0.0
        src = np.arange(out_size) * ratio
    elif align_mode == 0:
        src = (np.arange(out_size) + 0.5) * (in_size / out_size) - 0.5
    else:
        src = np.arange(out_size) * (in_size / out_size)
    src = np.clip(src, 0, in_size - 1)
    i0 = np.floor(src).astype('int64')
    i1 = np.minimum(i0 + 1, in_size - 1)
    lam = (src - i0).astype(np.float64 if str(x.dtype).endswith('float64') else np.float32)
    shape = [1] * x.ndim
    shape[axis] = out_size
    w1 = to_tensor(lam.reshape(shape))
    a = _C.index_select(x, to_tensor(i0), axis)
    b = _C.index_select(x, to_tensor(i1), axis)
    return _C.add(a, _C.multiply(_C.subtract(b, a), w1))


def interpolate(x, size=None, scale_factor=None, mode='nearest', align_corners=False,
                align_mode=0, data_format=None, recompute_scale_factor=None, name=None):
    """Resize the spatial axes of NCL / NCHW / NCDHW input: modes nearest,
    linear, bilinear, trilinear (separable linear interpolation)."""
    _check_tensor(x, 'interpolate')
    mode = mode.lower()
    if mode not in ('nearest', 'linear', 'bilinear', 'trilinear'):
        raise NotImplementedError("interpolate: mode {} is not supported".format(mode))
    nsp = x.ndim - 2
    if nsp < 1:
        raise ValueError("interpolate: x must be at least 3-D, got {}".format(list(x.shape)))
    if data_format is None:
        data_format = {1: 'NCW', 2: 'NCHW', 3: 'NCDHW'}.get(nsp, 'NCHW')
    moved = data_format in ('NWC', 'NLC', 'NHWC', 'NDHWC')
    if moved:
        x = _C.transpose(x, [0, x.ndim - 1] + list(range(1, x.ndim - 1)))
    spatial = list(x.shape[2:])
    if size is not None:
        if hasattr(size, 'tolist'):
            size = size.tolist()
        out = [int(size)] * nsp if isinstance(size, numbers.Integral) else [int(s) for s in size]
    elif scale_factor is not None:
        sf = [float(scale_factor)] * nsp if isinstance(scale_factor, numbers.Real) \
            else [float(s) for s in scale_factor]
        out = [int(s * f) for s, f in zip(spatial, sf)]
    else:
        raise ValueError("interpolate: one of size and scale_factor must be given")
    if len(out) != nsp or any(o <= 0 for o in out):
        raise ValueError("interpolate: bad output size {} for input {}".format(
            out, list(x.shape)))
    kind = 'nearest' if mode == 'nearest' else 'linear'
    for i in range(nsp):
        x = _interp_axis(x, 2 + i, out[i], kind, align_corners, align_mode)
    return _from_nchw(x, moved)


def upsample(x, size=None, scale_factor=None, mode='nearest', align_corners=False,
             align_mode=0, data_format=None, name=None):
    return interpolate(x, size, scale_factor, mode, align_corners, align_mode, data_format)


# This module held every function of paddle.nn.functional before the package followed
# Paddle's module layout; those names still import from here.
__getattr__ = _forward_to(__name__, 'paddle.nn.functional')
