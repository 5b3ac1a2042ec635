"""Spatial rearrangement and sampling (Paddle's paddle/nn/functional/vision.py):
pixel_shuffle, pixel_unshuffle, channel_shuffle, affine_grid, grid_sample.
Everything is a few reshapes/transposes or gathers over whole tensors, so
gradients flow through the framework's ops (to x and to grid)."""
import numbers

from paddle import _C
from paddle._lazy import paddle as _paddle
from ._args import _check_tensor

__all__ = ['pixel_shuffle', 'pixel_unshuffle', 'channel_shuffle', 'affine_grid', 'grid_sample']


def _factor(v, what):
    if isinstance(v, bool) or not isinstance(v, numbers.Integral) or v <= 0:
        raise ValueError("{} must be a positive int, got {}".format(what, v))
    return int(v)


def pixel_shuffle(x, upscale_factor, data_format='NCHW', name=None):
    """[N, C*r*r, H, W] -> [N, C, H*r, W*r]."""
    _check_tensor(x, 'pixel_shuffle')
    r = _factor(upscale_factor, 'upscale_factor')
    if x.ndim != 4:
        raise ValueError("pixel_shuffle: x must be 4-D, got {}".format(list(x.shape)))
    if data_format not in ('NCHW', 'NHWC'):
        raise ValueError("pixel_shuffle: data_format must be NCHW or NHWC, got {}".format(
            data_format))
    if data_format == 'NHWC':
        n, h, w, c = x.shape
    else:
        n, c, h, w = x.shape
    if c % (r * r) != 0:
        raise ValueError("pixel_shuffle: channels ({}) must be divisible by the square of "
                         "upscale_factor ({})".format(c, r * r))
    oc = c // (r * r)
    if data_format == 'NCHW':
        y = _C.reshape(x, [n, oc, r, r, h, w])
        y = _C.transpose(y, [0, 1, 4, 2, 5, 3])
        return _C.reshape(y, [n, oc, h * r, w * r])
    y = _C.reshape(x, [n, h, w, oc, r, r])
    y = _C.transpose(y, [0, 1, 4, 2, 5, 3])
    return _C.reshape(y, [n, h * r, w * r, oc])


def pixel_unshuffle(x, downscale_factor, data_format='NCHW', name=None):
    """[N, C, H*r, W*r] -> [N, C*r*r, H, W] (the inverse of pixel_shuffle)."""
    _check_tensor(x, 'pixel_unshuffle')
    r = _factor(downscale_factor, 'downscale_factor')
    if x.ndim != 4:
        raise ValueError("pixel_unshuffle: x must be 4-D, got {}".format(list(x.shape)))
    if data_format not in ('NCHW', 'NHWC'):
        raise ValueError("pixel_unshuffle: data_format must be NCHW or NHWC, got {}".format(
            data_format))
    if data_format == 'NHWC':
        n, h, w, c = x.shape
    else:
        n, c, h, w = x.shape
    if h % r or w % r:
        raise ValueError("pixel_unshuffle: height and width ({}, {}) must be divisible by "
                         "downscale_factor ({})".format(h, w, r))
    oh, ow = h // r, w // r
    if data_format == 'NCHW':
        y = _C.reshape(x, [n, c, oh, r, ow, r])
        y = _C.transpose(y, [0, 1, 3, 5, 2, 4])
        return _C.reshape(y, [n, c * r * r, oh, ow])
    y = _C.reshape(x, [n, oh, r, ow, r, c])
    y = _C.transpose(y, [0, 1, 3, 5, 2, 4])
    return _C.reshape(y, [n, oh, ow, c * r * r])


def channel_shuffle(x, groups, data_format='NCHW', name=None):
    _check_tensor(x, 'channel_shuffle')
    g = _factor(groups, 'groups')
    if x.ndim != 4:
        raise ValueError("channel_shuffle: x must be 4-D, got {}".format(list(x.shape)))
    if data_format == 'NCHW':
        n, c, h, w = x.shape
        if c % g:
            raise ValueError("channel_shuffle: channels ({}) must be divisible by groups ({})"
                             .format(c, g))
        y = _C.transpose(_C.reshape(x, [n, g, c // g, h, w]), [0, 2, 1, 3, 4])
        return _C.reshape(y, [n, c, h, w])
    if data_format != 'NHWC':
        raise ValueError("channel_shuffle: data_format must be NCHW or NHWC")
    n, h, w, c = x.shape
    if c % g:
        raise ValueError("channel_shuffle: channels ({}) must be divisible by groups ({})"
                         .format(c, g))
    y = _C.transpose(_C.reshape(x, [n, h, w, g, c // g]), [0, 1, 2, 4, 3])
    return _C.reshape(y, [n, h, w, c])


def affine_grid(theta, out_shape, align_corners=True, name=None):
    """theta [N, 2, 3] and out_shape [N, C, H, W] -> grid [N, H, W, 2] of
    normalised (x, y) source coordinates (differentiable in theta)."""
    paddle = _paddle()
    _check_tensor(theta, 'affine_grid', 'theta')
    if hasattr(out_shape, 'tolist'):
        out_shape = out_shape.tolist()
    out_shape = [int(v) for v in out_shape]
    if len(out_shape) != 4 or theta.ndim != 3 or list(theta.shape[1:]) != [2, 3] or \
            theta.shape[0] != out_shape[0]:
        raise ValueError("affine_grid: theta must be [N, 2, 3] and out_shape [N, C, H, W], got "
                         "{} and {}".format(list(theta.shape), out_shape))
    n, _, h, w = out_shape

    def lin(k):
        if k == 1:
            return paddle.zeros([1], dtype=theta.dtype)
        t = paddle.linspace(-1.0, 1.0, k, dtype=theta.dtype)
        return t if align_corners else t * ((k - 1) / k)
    ys, xs = paddle.meshgrid(lin(h), lin(w))
    base = paddle.stack([xs, ys, paddle.ones_like(xs)], axis=-1)      # [H, W, 3]
    base = paddle.reshape(base, [1, h * w, 3])
    grid = paddle.matmul(paddle.expand(base, [n, h * w, 3]), theta, transpose_y=True)
    return paddle.reshape(grid, [n, h, w, 2])


def _unnormalize(coord, size, align_corners):
    if align_corners:
        return (coord + 1.0) * ((size - 1) / 2.0)
    return ((coord + 1.0) * size - 1.0) / 2.0


def _reflect(coord, size, align_corners):
    """torch/Paddle reflect_coordinates then clip, for padding_mode='reflection'."""
    paddle = _paddle()
    if align_corners:
        lo, hi = 0.0, 2.0 * (size - 1)
    else:
        lo, hi = -1.0, 2.0 * size - 1.0
    if hi <= lo:
        return paddle.zeros_like(coord)
    mn, span = lo / 2.0, (hi - lo) / 2.0
    c = paddle.abs(coord - mn)
    flips = paddle.floor(c.detach() / span)
    extra = c - flips * span
    even = paddle.equal(paddle.remainder(flips, paddle.full_like(flips, 2.0)),
                        paddle.zeros_like(flips))
    out = paddle.where(even, extra + mn, (span - extra) + mn)
    return paddle.clip(out, 0.0, float(size - 1))


def grid_sample(x, grid, mode='bilinear', padding_mode='zeros', align_corners=True, name=None):
    """Sample x [N, C, H, W] at grid [N, Ho, Wo, 2] (x, y in [-1, 1]) ->
    [N, C, Ho, Wo]; mode bilinear|nearest, padding_mode zeros|border|reflection."""
    paddle = _paddle()
    _check_tensor(x, 'grid_sample')
    _check_tensor(grid, 'grid_sample', 'grid')
    if mode not in ('bilinear', 'nearest'):
        raise ValueError("grid_sample: mode must be bilinear or nearest, got {}".format(mode))
    if padding_mode not in ('zeros', 'border', 'reflection'):
        raise ValueError("grid_sample: padding_mode must be zeros, border or reflection, got {}"
                         .format(padding_mode))
    if x.ndim != 4 or grid.ndim != 4 or grid.shape[-1] != 2 or grid.shape[0] != x.shape[0]:
        raise ValueError("grid_sample: x must be [N, C, H, W] and grid [N, Ho, Wo, 2], got {} "
                         "and {}".format(list(x.shape), list(grid.shape)))
    n, c, h, w = x.shape
    ho, wo = grid.shape[1], grid.shape[2]
    grid = paddle.cast(grid, x.dtype)
    ix = _unnormalize(grid[:, :, :, 0], w, align_corners)
    iy = _unnormalize(grid[:, :, :, 1], h, align_corners)
    if padding_mode == 'border':
        ix = paddle.clip(ix, 0.0, float(w - 1))
        iy = paddle.clip(iy, 0.0, float(h - 1))
    elif padding_mode == 'reflection':
        ix = _reflect(ix, w, align_corners)
        iy = _reflect(iy, h, align_corners)
    flat = paddle.reshape(x, [n, c, h * w])

    def tap(xi, yi):
        """x at integer (xi, yi) [N, Ho, Wo] (float tensors, no grad), zero outside."""
        inside = paddle.logical_and(
            paddle.logical_and(xi >= 0, xi <= w - 1),
            paddle.logical_and(yi >= 0, yi <= h - 1))
        xc = paddle.clip(xi, 0, w - 1)
        yc = paddle.clip(yi, 0, h - 1)
        idx = paddle.cast(yc * w + xc, 'int64')
        idx = paddle.expand(paddle.reshape(idx, [n, 1, ho * wo]), [n, c, ho * wo])
        v = paddle.take_along_axis(flat, idx, 2)
        v = paddle.reshape(v, [n, c, ho, wo])
        return v * paddle.unsqueeze(paddle.cast(inside, x.dtype), 1)

    if mode == 'nearest':
        return tap(paddle.round(ix.detach()), paddle.round(iy.detach()))
    x0 = paddle.floor(ix.detach())
    y0 = paddle.floor(iy.detach())
    x1, y1 = x0 + 1.0, y0 + 1.0
    wx1 = paddle.unsqueeze(ix - x0, 1)
    wy1 = paddle.unsqueeze(iy - y0, 1)
    wx0, wy0 = 1.0 - wx1, 1.0 - wy1
    return (tap(x0, y0) * wx0 * wy0 + tap(x1, y0) * wx1 * wy0 +
            tap(x0, y1) * wx0 * wy1 + tap(x1, y1) * wx1 * wy1)
