"""paddle.fft: discrete Fourier transforms (Paddle 3.x's paddle.fft, NumPy's
semantics): fft, ifft, rfft, irfft, hfft, ihfft and their 2-D and N-D forms,
fftfreq, rfftfreq, fftshift, ifftshift.

Every transform is a sequence of 1-D transforms along the last axis of a
view (moveaxis), each a C op (framework/ops/fft.c, double precision inside)
whose backward is the adjoint transform, so gradients flow through all of
them. `n`/`s` pad with zeros or crop the input first; `norm` is
'backward' (no scaling forward, 1/n inverse), 'ortho' (1/sqrt(n) both ways)
or 'forward' (1/n forward, none inverse).
"""
import math as _math

import numpy as _np

from paddle import _C

__all__ = ['fft', 'ifft', 'rfft', 'irfft', 'hfft', 'ihfft', 'fft2', 'ifft2', 'rfft2', 'irfft2',
           'hfft2', 'ihfft2', 'fftn', 'ifftn', 'rfftn', 'irfftn', 'hfftn', 'ihfftn', 'fftfreq',
           'rfftfreq', 'fftshift', 'ifftshift']

_NORMS = ('backward', 'ortho', 'forward')


def _check_norm(norm):
    if norm is None:
        return 'backward'
    if norm not in _NORMS:
        raise ValueError("Unexpected norm: {}. Norm should be forward, backward or ortho"
                         .format(norm))
    return norm


def _scale(norm, n, inverse):
    if norm == 'ortho':
        return 1.0 / _math.sqrt(n)
    if (norm == 'backward') == inverse:
        return 1.0 / n
    return 1.0


def _swap(norm):
    return {'backward': 'forward', 'forward': 'backward', 'ortho': 'ortho'}[norm]


def _to_complex(x):
    if x.dtype.is_complex:
        return x
    if x.dtype.name == 'float64':
        return _C.cast(x, 'complex128')
    return _C.cast(x, 'complex64')


def _to_real(x, what):
    if x.dtype.is_complex:
        raise TypeError("{}: expected a real input, got {}".format(what, x.dtype.name))
    if x.dtype.name in ('float32', 'float64'):
        return x
    return _C.cast(x, 'float32')


def _axis(x, axis):
    nd = x.ndim
    if not isinstance(axis, int):
        raise TypeError("axis must be an int, got {}".format(type(axis).__name__))
    if axis < -nd or axis >= nd:
        raise ValueError("Attribute axis should be in range [-{}, {}), but received {}"
                         .format(nd, nd, axis))
    return axis % nd


def _last(x, axis):
    """A view with `axis` moved last (and the permutation to undo it)."""
    if axis == x.ndim - 1:
        return x, None
    perm = [d for d in range(x.ndim) if d != axis] + [axis]
    inv = [0] * x.ndim
    for i, p in enumerate(perm):
        inv[p] = i
    return _C.transpose(x, perm), inv


def _back(x, inv):
    return x if inv is None else _C.transpose(x, inv)


def _resize_last(x, n):
    """Crop or zero-pad the last axis to n (differentiable)."""
    m = x.shape[-1]
    if n == m:
        return x
    if n < m:
        return x[..., :n]
    from paddle.tensor.manipulation import concat
    if x.dtype.is_complex:      # pad the float pairs, then view them as complex again
        r = _C.as_real(x)
        shape = list(r.shape)
        shape[-2] = n - m
        return _C.as_complex(concat([r, _C.zeros(shape, r.dtype.name)], axis=-2))
    shape = list(x.shape)
    shape[-1] = n - m
    return concat([x, _C.zeros(shape, x.dtype.name)], axis=-1)


def _check_n(n, what='n'):
    if n is not None and (not isinstance(n, (int, _np.integer)) or n < 1):
        raise ValueError("Invalid number of FFT data points ({}) specified.".format(n))


def _c2c(x, n, axis, norm, inverse):
    _check_n(n)
    norm = _check_norm(norm)
    x = _to_complex(x)
    ax = _axis(x, axis)
    y, inv = _last(x, ax)
    n = y.shape[-1] if n is None else int(n)
    if n < 1:
        raise ValueError("Invalid number of FFT data points ({}) specified.".format(n))
    y = _resize_last(y, n)
    y = _C.fft_c2c(y, inverse, _scale(norm, n, inverse))
    return _back(y, inv)


def _r2c(x, n, axis, norm, what):
    _check_n(n)
    norm = _check_norm(norm)
    x = _to_real(x, what)
    ax = _axis(x, axis)
    y, inv = _last(x, ax)
    n = y.shape[-1] if n is None else int(n)
    if n < 1:
        raise ValueError("Invalid number of FFT data points ({}) specified.".format(n))
    y = _resize_last(y, n)
    y = _C.fft_r2c(y, _scale(norm, n, False))
    return _back(y, inv)


def _c2r(x, n, axis, norm):
    _check_n(n)
    norm = _check_norm(norm)
    x = _to_complex(x)
    ax = _axis(x, axis)
    y, inv = _last(x, ax)
    n = 2 * (y.shape[-1] - 1) if n is None else int(n)
    if n < 1:
        raise ValueError("Invalid number of FFT data points ({}) specified.".format(n))
    y = _resize_last(y, n // 2 + 1)
    y = _C.fft_c2r(y, n, _scale(norm, n, True))
    return _back(y, inv)


def fft(x, n=None, axis=-1, norm='backward', name=None):
    """1-D DFT of x (real inputs become complex)."""
    return _c2c(x, n, axis, norm, False)


def ifft(x, n=None, axis=-1, norm='backward', name=None):
    """1-D inverse DFT."""
    return _c2c(x, n, axis, norm, True)


def rfft(x, n=None, axis=-1, norm='backward', name=None):
    """1-D DFT of a real x: the n//2+1 non-negative frequency bins."""
    return _r2c(x, n, axis, norm, 'rfft')


def irfft(x, n=None, axis=-1, norm='backward', name=None):
    """Inverse of rfft: a real signal of length n (default 2*(m-1))."""
    return _c2r(x, n, axis, norm)


def hfft(x, n=None, axis=-1, norm='backward', name=None):
    """DFT of a signal with Hermitian symmetry given by its first half: real output."""
    norm = _check_norm(norm)
    return _c2r(_C.conj(_to_complex(x)), n, axis, _swap(norm))


def ihfft(x, n=None, axis=-1, norm='backward', name=None):
    """Inverse of hfft: the first n//2+1 bins of the inverse DFT of a real x."""
    norm = _check_norm(norm)
    return _C.conj(_r2c(x, n, axis, _swap(norm), 'ihfft'))


def _axes_and_sizes(x, s, axes, default_all):
    if s is not None and not isinstance(s, (list, tuple)):
        raise ValueError("Invalid FFT argument s ({}), it should be a sequence of integers."
                         .format(s))
    if axes is not None and not isinstance(axes, (list, tuple)):
        axes = [axes]
    if axes is None:
        if s is None:
            axes = list(range(x.ndim)) if default_all else [x.ndim - 2, x.ndim - 1]
        else:
            axes = list(range(x.ndim - len(s), x.ndim))
    axes = [_axis(x, int(a)) for a in axes]
    if len(set(axes)) != len(axes):
        raise ValueError("Invalid FFT argument axes ({}), it has duplicate axes.".format(axes))
    if s is not None:
        if len(s) != len(axes):
            raise ValueError("Length of s ({}) and length of axes ({}) do not match."
                             .format(len(s), len(axes)))
        for v in s:
            _check_n(v, 's')
        s = [int(v) for v in s]
    return list(axes), s


def _cnd(x, s, axes, norm, inverse, default_all=True):
    axes, s = _axes_and_sizes(x, s, axes, default_all)
    y = _to_complex(x)
    for i in range(len(axes) - 1, -1, -1):
        y = _c2c(y, None if s is None else s[i], axes[i], norm, inverse)
    return y


def _rnd(x, s, axes, norm, default_all=True, what='rfftn'):
    axes, s = _axes_and_sizes(x, s, axes, default_all)
    if not axes:
        raise ValueError("{}: at least one axis is needed".format(what))
    y = _r2c(x, None if s is None else s[-1], axes[-1], norm, what)
    for i in range(len(axes) - 2, -1, -1):
        y = _c2c(y, None if s is None else s[i], axes[i], norm, False)
    return y


def _irnd(x, s, axes, norm, default_all=True):
    axes, s = _axes_and_sizes(x, s, axes, default_all)
    if not axes:
        raise ValueError("irfftn: at least one axis is needed")
    y = _to_complex(x)
    for i in range(len(axes) - 1):
        y = _c2c(y, None if s is None else s[i], axes[i], norm, True)
    return _c2r(y, None if s is None else s[-1], axes[-1], norm)


def fftn(x, s=None, axes=None, norm='backward', name=None):
    return _cnd(x, s, axes, norm, False)


def ifftn(x, s=None, axes=None, norm='backward', name=None):
    return _cnd(x, s, axes, norm, True)


def rfftn(x, s=None, axes=None, norm='backward', name=None):
    return _rnd(x, s, axes, norm)


def irfftn(x, s=None, axes=None, norm='backward', name=None):
    return _irnd(x, s, axes, norm)


def hfftn(x, s=None, axes=None, norm='backward', name=None):
    norm = _check_norm(norm)
    return _irnd(_C.conj(_to_complex(x)), s, axes, _swap(norm))


def ihfftn(x, s=None, axes=None, norm='backward', name=None):
    norm = _check_norm(norm)
    return _C.conj(_rnd(x, s, axes, _swap(norm), what='ihfftn'))


def _check_2d(x, s, axes):
    if x.ndim < 2:
        raise ValueError("Input x should have at least 2 dimensions, but got {}"
                         .format(x.ndim))
    if axes is not None and len(axes) != 2:
        raise ValueError("Invalid FFT argument axes ({}), it should be a sequence of 2 "
                         "integers.".format(axes))
    if s is not None and len(s) != 2:
        raise ValueError("Invalid FFT argument s ({}), it should be a sequence of 2 integers."
                         .format(s))
    return (-2, -1) if axes is None else axes


def fft2(x, s=None, axes=(-2, -1), norm='backward', name=None):
    return fftn(x, s, _check_2d(x, s, axes), norm)


def ifft2(x, s=None, axes=(-2, -1), norm='backward', name=None):
    return ifftn(x, s, _check_2d(x, s, axes), norm)


def rfft2(x, s=None, axes=(-2, -1), norm='backward', name=None):
    return rfftn(x, s, _check_2d(x, s, axes), norm)


def irfft2(x, s=None, axes=(-2, -1), norm='backward', name=None):
    return irfftn(x, s, _check_2d(x, s, axes), norm)


def hfft2(x, s=None, axes=(-2, -1), norm='backward', name=None):
    return hfftn(x, s, _check_2d(x, s, axes), norm)


def ihfft2(x, s=None, axes=(-2, -1), norm='backward', name=None):
    return ihfftn(x, s, _check_2d(x, s, axes), norm)


def fftfreq(n, d=1.0, dtype=None, name=None):
    """Sample frequencies [0, 1, ..., n/2-1, -n/2, ..., -1] / (d*n)."""
    from paddle.tensor.creation import to_tensor
    from paddle.framework.dtype import get_default_dtype
    n = int(n)
    if n < 1:
        raise ValueError("fftfreq: n must be positive, got {}".format(n))
    dtype = dtype or get_default_dtype()
    return to_tensor(_np.fft.fftfreq(n, float(d)), dtype=dtype)


def rfftfreq(n, d=1.0, dtype=None, name=None):
    """Sample frequencies [0, 1, ..., n//2] / (d*n) of rfft."""
    from paddle.tensor.creation import to_tensor
    from paddle.framework.dtype import get_default_dtype
    n = int(n)
    if n < 1:
        raise ValueError("rfftfreq: n must be positive, got {}".format(n))
    dtype = dtype or get_default_dtype()
    return to_tensor(_np.fft.rfftfreq(n, float(d)), dtype=dtype)


def _shift(x, axes, sign):
    from paddle.tensor.manipulation import roll
    if axes is None:
        axes = list(range(x.ndim))
    elif isinstance(axes, int):
        axes = [axes]
    axes = [_axis(x, int(a)) for a in axes]
    shifts = [sign * (x.shape[a] // 2) if sign > 0 else -(x.shape[a] // 2) for a in axes]
    return roll(x, shifts, axes)


def fftshift(x, axes=None, name=None):
    """Move the zero frequency to the centre (roll by n//2 along axes)."""
    return _shift(x, axes, 1)


def ifftshift(x, axes=None, name=None):
    """Inverse of fftshift (roll by -(n//2))."""
    return _shift(x, axes, -1)
