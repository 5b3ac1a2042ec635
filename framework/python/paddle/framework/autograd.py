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
    """paddle.grad: gradients of outputs with respect to inputs (leaf tensors
    with stop_gradient=False), returned as a list; inputs' own .grad is left
    as it was. create_graph=True (higher-order) is not supported yet."""
    if create_graph:
        raise NotImplementedError("paddle.grad: create_graph=True (higher-order gradients) "
                                  "is not supported by this build")
    T = _C.Tensor
    outs = [outputs] if isinstance(outputs, T) else list(outputs)
    ins = [inputs] if isinstance(inputs, T) else list(inputs)
    if grad_outputs is None:
        gos = [None] * len(outs)
    else:
        gos = [grad_outputs] if isinstance(grad_outputs, T) else list(grad_outputs)
        if len(gos) != len(outs):
            raise ValueError("paddle.grad: {} grad_outputs for {} outputs".format(
                len(gos), len(outs)))
    for t in ins:
        if not isinstance(t, T):
            raise TypeError("paddle.grad: inputs must be Tensors, got {}".format(
                type(t).__name__))
        if not t.is_leaf:
            raise NotImplementedError("paddle.grad: only leaf inputs are supported by this "
                                      "build (got a Tensor computed by an op)")
        if t.stop_gradient:
            raise ValueError("paddle.grad: an input has stop_gradient=True")
    saved = [t.grad for t in ins]
    for t in ins:
        t.grad = None
    try:
        for i, (o, g) in enumerate(zip(outs, gos)):
            keep = bool(retain_graph) or i < len(outs) - 1
            o.backward(g, retain_graph=keep)
        res = [t.grad for t in ins]
    finally:
        for t, s in zip(ins, saved):
            t.grad = s
    for r in res:
        if r is None and not allow_unused:
            raise RuntimeError("paddle.grad: an input is not used to compute the outputs "
                               "(pass allow_unused=True)")
    return res
