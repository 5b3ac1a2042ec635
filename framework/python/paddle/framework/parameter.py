"""paddle Parameter (Paddle's EagerParamBase): a Tensor subclass that layers
own; stop_gradient False by default; prints 'Parameter containing:'."""
import itertools

from paddle import _C

_counter = itertools.count()


def _unique_name(prefix):
    return '{}_{}'.format(prefix, next(_counter))


class Parameter(_C.Tensor):
    """Parameter(shape, dtype=None, name=None, trainable=True, ...): a
    zero-filled parameter (layers initialise it afterwards)."""

    def __init__(self, shape=None, dtype=None, name=None, trainable=True, optimize_attr=None,
                 regularizer=None, need_clip=True, do_model_average=None,
                 is_distributed=False, **kwargs):
        if shape is not None:
            from .dtype import get_default_dtype
            shape = [int(s) for s in shape]
            for s in shape:
                if s < 0:
                    raise ValueError("Parameter: shape {} has a negative dimension".format(shape))
            self._share(_C.zeros(shape, dtype if dtype is not None else get_default_dtype()))
        self.name = name if name is not None else _unique_name('create_parameter')
        self.stop_gradient = not trainable
        self.persistable = True
        self.optimize_attr = optimize_attr if optimize_attr is not None else {'learning_rate': 1.0}
        self.regularizer = regularizer
        self.need_clip = need_clip
        self.do_model_average = do_model_average
        self.is_distributed = is_distributed

    @classmethod
    def _from_tensor(cls, t, name=None, trainable=True, **kwargs):
        """A Parameter holding t's data (detached: a new leaf)."""
        p = cls(name=name, trainable=trainable, **kwargs)
        p._share(t.detach())
        p.stop_gradient = not trainable
        return p

    @property
    def trainable(self):
        return not self.stop_gradient

    @trainable.setter
    def trainable(self, v):
        self.stop_gradient = not v

    def __repr__(self):
        from paddle.tensor.to_string import tensor_to_string
        return 'Parameter containing:\n' + tensor_to_string(self)

    __str__ = __repr__

    def __deepcopy__(self, memo):
        p = Parameter._from_tensor(self.clone().detach(), name=self.name,
                                   trainable=self.trainable)
        p.optimize_attr = dict(self.optimize_attr)
        p.regularizer = self.regularizer
        p.need_clip = self.need_clip
        memo[id(self)] = p
        return p


EagerParamBase = Parameter
