"""Distances (Paddle's paddle/nn/functional/distance.py)."""
from paddle import _C


def pairwise_distance(x, y, p=2.0, epsilon=1e-6, keepdim=False, name=None):
    d = _C.add(_C.subtract(x, y), float(epsilon))
    return _C.pow(_C.sum(_C.pow(_C.abs(d), float(p)), -1, bool(keepdim)), 1.0 / p)
