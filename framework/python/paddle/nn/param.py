"""Parameter creation for nn.Layer (the Parameter class itself is
paddle.framework.Parameter, owned by the tensor layer)."""
from paddle._lazy import paddle as _paddle


def __getattr__(name):
    if name == 'Parameter':
        return _paddle().framework.Parameter
    raise AttributeError(name)


def _to_attr(attr):
    ParamAttr = _paddle().ParamAttr
    if attr is None:
        return ParamAttr()
    if attr is False:
        return False
    if isinstance(attr, ParamAttr):
        return attr
    if isinstance(attr, str):
        return ParamAttr(name=attr)
    if isinstance(attr, bool):
        return ParamAttr()
    from .initializer import Initializer
    if isinstance(attr, Initializer):
        return ParamAttr(initializer=attr)
    if hasattr(ParamAttr, '_to_attr'):
        return ParamAttr._to_attr(attr)
    raise TypeError("{} cast to ParamAttr is not supported".format(type(attr).__name__))


def _create_parameter(shape, dtype, attr=None, is_bias=False, default_initializer=None,
                      default_name=None):
    """Parameter of `shape` initialised by attr.initializer, else the global
    initializer (nn.initializer.set_global_initializer), else
    default_initializer, else Constant(0) for biases and XavierUniform for
    weights. attr=False returns None."""
    from . import initializer as I
    attr = _to_attr(attr)
    if attr is False:
        return None
    shape = [int(s) for s in shape]
    for s in shape:
        if s < 0:
            raise ValueError("create_parameter: shape {} has a negative dimension".format(shape))
    Parameter = _paddle().framework.Parameter
    name = getattr(attr, 'name', None) or default_name
    p = Parameter(shape, dtype, name=name)
    # ParamAttr's initializer, then set_global_initializer's, then the
    # layer's default, then Paddle's (zeros for biases, XavierUniform)
    init = getattr(attr, 'initializer', None)
    if init is None:
        init = I._global_bias_init if is_bias else I._global_weight_init
    if init is None:
        init = default_initializer
    if init is None:
        init = I.Constant(0.0) if is_bias else I.XavierUniform()
    init(p)
    trainable = getattr(attr, 'trainable', True)
    p.stop_gradient = not trainable
    try:
        p.trainable = trainable
        p.optimize_attr = {'learning_rate': float(getattr(attr, 'learning_rate', 1.0))}
        p.regularizer = getattr(attr, 'regularizer', None)
        p.need_clip = getattr(attr, 'need_clip', True)
    except AttributeError:
        pass
    return p
