"""Linear algebra (Paddle's paddle/tensor/linalg.py): matmul, bmm, dot, t,
transpose, norm."""
from paddle import _C
from ._args import _axis, _ints


def matmul(x, y, transpose_x=False, transpose_y=False, name=None):
    return _C.matmul(x, y, transpose_x, transpose_y)


def bmm(x, y, name=None):
    if x.ndim != 3 or y.ndim != 3:
        raise ValueError("bmm: x and y must be 3-D, got shapes {} and {}".format(x.shape, y.shape))
    return _C.matmul(x, y)


def dot(x, y, name=None):
    return _C.sum(_C.multiply(x, y), [-1], False)


def t(input, name=None):  # noqa: A002
    if input.ndim < 2:
        return input
    return _C.transpose(input, [1, 0])


def transpose(x, perm, name=None):
    perm = _ints(perm)
    if len(perm) != x.ndim:
        raise ValueError("transpose: perm {} must have one entry per dim of x (shape {})".format(
            perm, x.shape))
    return _C.transpose(x, perm)


def norm(x, p='fro', axis=None, keepdim=False, name=None):
    if p in ('fro', 2, 2.0) or p is None:
        return _C.sqrt(_C.sum(_C.square(x), _axis(axis), keepdim))
    if p in (1, 1.0):
        return _C.sum(_C.abs(x), _axis(axis), keepdim)
    if p in (float('inf'), 'inf'):
        return _C.max(_C.abs(x), _axis(axis), keepdim)
    return _C.pow(_C.sum(_C.pow(_C.abs(x), float(p)), _axis(axis), keepdim), 1.0 / float(p))
