"""Random tensors (Paddle's paddle/tensor/random.py): rand, randn, uniform,
normal, randint, randperm, bernoulli, multinomial."""
import numpy as np

from paddle import _C
from paddle.framework.dtype import get_default_dtype, convert_dtype
from ._args import _dt, _shape
from .creation import to_tensor

Tensor = _C.Tensor


def rand(shape, dtype=None, name=None):
    return _C.rand(_shape(shape), _dt(dtype))


def _complex_randn(shape, cdt):
    """CN(0, 1): real and imaginary parts each N(0, 1/2), as Paddle and PyTorch."""
    real = 'float64' if cdt == 'complex128' else 'float32'
    s = 0.7071067811865476
    return _C.complex(_C.randn(shape, real) * s, _C.randn(shape, real) * s)


def randn(shape, dtype=None, name=None):
    dt = _dt(dtype)
    if dt in ('complex64', 'complex128'):
        return _complex_randn(_shape(shape), dt)
    return _C.randn(_shape(shape), dt)


standard_normal = randn


def uniform(shape, dtype=None, min=-1.0, max=1.0, seed=0, name=None):  # noqa: A002
    return _C.uniform(_shape(shape), _dt(dtype), float(min), float(max))


def normal(mean=0.0, std=1.0, shape=None, name=None):
    """paddle.normal; a complex mean (number or Tensor) gives complex normal
    samples: mean + std * CN(0, 1)."""
    if isinstance(mean, Tensor) and mean.dtype.is_complex:
        return _complex_randn(mean.shape, mean.dtype.name) * std + mean
    if isinstance(mean, complex):
        ref = std.shape if isinstance(std, Tensor) else _shape(shape if shape is not None else [1])
        return _complex_randn(ref, 'complex64') * std + mean
    if isinstance(mean, Tensor) or isinstance(std, Tensor):
        ref = mean if isinstance(mean, Tensor) else std
        z = _C.randn(ref.shape, ref.dtype)
        return z * std + mean
    return _C.normal(_shape(shape if shape is not None else [1]), get_default_dtype(),
                     float(mean), float(std))


def randint(low=0, high=None, shape=[1], dtype=None, name=None):  # noqa: B006
    if high is None:
        low, high = 0, low
    return _C.randint(int(low), int(high), _shape(shape), _dt(dtype, 'int64'))


def randperm(n, dtype='int64', name=None):
    return _C.randperm(int(n), convert_dtype(dtype))


def bernoulli(x, name=None):
    return _C.cast(_C.less_than(_C.rand(x.shape, x.dtype), x), x.dtype)


def multinomial(x, num_samples=1, replacement=False, name=None):
    p = x.numpy().astype(np.float64)
    rows = p.reshape(-1, p.shape[-1])
    u = _C.rand([rows.shape[0], num_samples], 'float64').numpy()
    out = np.zeros((rows.shape[0], num_samples), dtype=np.int64)
    for i, row in enumerate(rows):
        pr = row / row.sum()
        if replacement or num_samples == 1:
            out[i] = np.searchsorted(np.cumsum(pr), u[i], side='right').clip(0, len(pr) - 1)
        else:
            keys = np.log(np.maximum(u[i][0], 1e-30)) / np.maximum(pr, 1e-30)
            out[i] = np.argsort(-keys)[:num_samples]
    return to_tensor(out.reshape(p.shape[:-1] + (num_samples,)))
