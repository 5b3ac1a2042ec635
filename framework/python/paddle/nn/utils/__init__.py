"""paddle.nn.utils: parameter helpers."""
import numpy as np

from ..clip import clip_grad_norm_, clip_grad_value_  # noqa: F401

__all__ = ['parameters_to_vector', 'vector_to_parameters', 'clip_grad_norm_',
           'clip_grad_value_']


def parameters_to_vector(parameters, name=None):
    import paddle
    return paddle.concat([paddle.reshape(p, [-1]) for p in parameters], axis=0)


def vector_to_parameters(vec, parameters, name=None):
    arr = vec.numpy()
    off = 0
    for p in parameters:
        n = int(np.prod(p.shape))
        p.set_value(arr[off:off + n].reshape(p.shape))
        off += n
