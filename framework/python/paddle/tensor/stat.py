"""Statistics (Paddle's paddle/tensor/stat.py): mean, var, std, numel."""
from paddle import _C
from paddle.amp import _state as _amp
from ._args import _axis


def mean(x, axis=None, keepdim=False, name=None):
    if _amp.ON and _amp.current():
        return _amp.call(('mean', 'reduce_mean'), _C.mean, (x,), _axis(axis), keepdim)
    return _C.mean(x, _axis(axis), keepdim)


def var(x, axis=None, unbiased=True, keepdim=False, name=None):
    return _C.var(x, _axis(axis), unbiased, keepdim)


def std(x, axis=None, unbiased=True, keepdim=False, name=None):
    return _C.std(x, _axis(axis), unbiased, keepdim)


def numel(x, name=None):
    return _C.to_tensor(int(x.size))
