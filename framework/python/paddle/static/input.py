"""InputSpec: the shape, dtype and name of a model input."""
import numpy as np


class InputSpec:
    """InputSpec(shape, dtype='float32', name=None, stop_gradient=False);
    None or -1 in shape is a free dimension (the batch)."""

    def __init__(self, shape, dtype='float32', name=None, stop_gradient=False):
        if isinstance(shape, int):
            shape = [shape]
        if not isinstance(shape, (list, tuple)):
            raise TypeError("Type of `shape` in InputSpec should be one of (tuple, list), but "
                            "received {}.".format(type(shape).__name__))
        self.shape = tuple(-1 if s is None else int(s) for s in shape)
        self.dtype = dtype if isinstance(dtype, str) else str(dtype).replace('paddle.', '')
        self.name = name
        self.stop_gradient = stop_gradient

    @classmethod
    def from_tensor(cls, tensor, name=None):
        return cls(tensor.shape, str(tensor.dtype).replace('paddle.', ''),
                   name or getattr(tensor, 'name', None))

    @classmethod
    def from_numpy(cls, ndarray, name=None):
        return cls(ndarray.shape, str(np.asarray(ndarray).dtype), name)

    def batch(self, batch_size):
        self.shape = (int(batch_size),) + tuple(self.shape)
        return self

    def unbatch(self):
        if not self.shape:
            raise ValueError("Not support to unbatch a InputSpec when len(shape) == 0.")
        self.shape = tuple(self.shape[1:])
        return self

    def __repr__(self):
        return '{}(shape={}, dtype={}, name={}, stop_gradient={})'.format(
            type(self).__name__, self.shape, 'paddle.' + self.dtype, self.name,
            self.stop_gradient)

    def __eq__(self, other):
        return isinstance(other, InputSpec) and (self.shape, self.dtype, self.name) == \
            (other.shape, other.dtype, other.name)

    def __hash__(self):
        return hash((self.shape, self.dtype, self.name))
