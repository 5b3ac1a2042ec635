"""no_grad, enable_grad, set_grad_enabled, grad."""
import contextlib
import functools

from paddle import _C


class no_grad(contextlib.ContextDecorator):
    """`with paddle.no_grad():` or `@paddle.no_grad()` (also bare
    `@paddle.no_grad`): ops record no graph inside."""

    def __new__(cls, func=None):
        self = super().__new__(cls)
        if callable(func):
            self.__init__()
            return self(func)
        return self

    def __init__(self, func=None):
        self._prev = []

    def __enter__(self):
        self._prev.append(_C.set_grad_enabled(False))
        return self

    def __exit__(self, *exc):
        _C.set_grad_enabled(self._prev.pop())
        return False

    def __call__(self, func):
        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            with no_grad():
                return func(*args, **kwargs)
        return wrapper


class enable_grad(no_grad):
    def __enter__(self):
        self._prev.append(_C.set_grad_enabled(True))
        return self

    def __call__(self, func):
        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            with enable_grad():
                return func(*args, **kwargs)
        return wrapper


class set_grad_enabled:
    """paddle.set_grad_enabled(mode): a context manager (and a plain call)."""

    def __init__(self, mode):
        self._prev = _C.set_grad_enabled(bool(mode))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        _C.set_grad_enabled(self._prev)
        return False


def is_grad_enabled():
    return _C.is_grad_enabled()


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False,
         only_inputs=True, allow_unused=False, no_grad_vars=None):
    """paddle.grad: the gradients of outputs with respect to inputs (leaves or
    results of ops), as a list; nothing accumulates into any .grad. With
    create_graph=True the results are differentiable (second derivatives);
    retain_graph defaults to create_graph. An input the outputs do not depend
    on is an error unless allow_unused=True (then its entry is None)."""
    T = _C.Tensor
    outs = [outputs] if isinstance(outputs, T) else list(outputs)
    ins = [inputs] if isinstance(inputs, T) else list(inputs)
    if not outs or not ins:
        raise ValueError("paddle.grad: outputs and inputs must not be empty")
    if grad_outputs is not None:
        gos = [grad_outputs] if isinstance(grad_outputs, T) else list(grad_outputs)
        if len(gos) != len(outs):
            raise ValueError("paddle.grad: {} grad_outputs for {} outputs".format(
                len(gos), len(outs)))
    else:
        gos = None
    for t in ins:
        if not isinstance(t, T):
            raise TypeError("paddle.grad: inputs must be Tensors, got {}".format(
                type(t).__name__))
        if t.stop_gradient:
            raise ValueError("paddle.grad: an input has stop_gradient=True")
    if no_grad_vars is not None:
        raise NotImplementedError("paddle.grad: no_grad_vars is not supported by this build")
    if retain_graph is None:
        retain_graph = create_graph
    res = _C.grad(outs, ins, gos, bool(retain_graph), bool(create_graph))
    if not allow_unused and any(r is None for r in res):
        raise RuntimeError("paddle.grad: an input is not used to compute the outputs "
                           "(pass allow_unused=True)")
    return res
