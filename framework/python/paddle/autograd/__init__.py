"""paddle.autograd: backward, PyLayer (custom forward/backward in Python),
PyLayerContext, and grad/no_grad re-exported from paddle.framework."""
from paddle.framework.autograd import grad, no_grad, enable_grad, set_grad_enabled, \
    is_grad_enabled  # noqa: F401
from .py_layer import PyLayer, PyLayerContext, once_differentiable  # noqa: F401
from .backward_mode import backward  # noqa: F401

__all__ = ['grad', 'backward', 'PyLayer', 'PyLayerContext', 'no_grad', 'enable_grad',
           'set_grad_enabled', 'is_grad_enabled']
