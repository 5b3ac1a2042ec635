"""parameters_to_vector / vector_to_parameters (Paddle's
paddle/nn/utils/transform_parameters.py)."""
from paddle._lazy import paddle as _paddle

__all__ = ['parameters_to_vector', 'vector_to_parameters']


def parameters_to_vector(parameters, name=None):
    """One 1-D tensor of every parameter flattened, in order (differentiable)."""
    paddle = _paddle()
    parameters = list(parameters)
    if not parameters:
        raise ValueError("parameters_to_vector: no parameters given")
    dtypes = set(str(p.dtype) for p in parameters)
    if len(dtypes) > 1:
        raise TypeError("parameters_to_vector: parameters have different dtypes {}".format(
            sorted(dtypes)))
    return paddle.concat([paddle.reshape(p, [-1]) for p in parameters], axis=0)


def vector_to_parameters(vec, parameters, name=None):
    """Copy consecutive slices of the 1-D vec into the parameters (in place)."""
    paddle = _paddle()
    parameters = list(parameters)
    if vec.ndim != 1:
        raise ValueError("vector_to_parameters: vec must be 1-D, got shape {}".format(
            list(vec.shape)))
    total = sum(int(p.numel()) for p in parameters)
    if vec.shape[0] != total:
        raise ValueError("vector_to_parameters: vec has {} elements but the parameters hold {}"
                         .format(vec.shape[0], total))
    arr = vec.numpy()
    off = 0
    with paddle.no_grad():
        for p in parameters:
            n = int(p.numel())
            p.set_value(arr[off:off + n].reshape(p.shape).astype(p.numpy().dtype))
            off += n
