"""paddle.nn: Layer, the Tier-1 layers, functional, initializer, clipping."""
from . import functional  # noqa: F401
from . import initializer  # noqa: F401
from .clip import ClipGradByGlobalNorm, ClipGradByNorm, ClipGradByValue  # noqa: F401
from .layer import *  # noqa: F401,F403
from .layer import Layer  # noqa: F401
from .layer import activation, common, container, conv, loss, norm, pooling, rnn  # noqa: F401
from . import utils  # noqa: F401
from .decode import BeamSearchDecoder, dynamic_decode  # noqa: F401


def __getattr__(name):
    # Parameter lives in paddle.framework (owned by the tensor layer)
    if name == 'Parameter':
        import paddle.framework
        return paddle.framework.Parameter
    raise AttributeError("module 'paddle.nn' has no attribute '{}'".format(name))
