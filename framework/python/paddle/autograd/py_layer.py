"""paddle.autograd.PyLayer: an op with forward and backward written in Python.

    class cus_tanh(PyLayer):
        @staticmethod
        def forward(ctx, x):
            y = paddle.tanh(x)
            ctx.save_for_backward(y)
            return y

        @staticmethod
        def backward(ctx, dy):
            y, = ctx.saved_tensor()
            return dy * (1 - paddle.square(y))

forward runs with grad recording off; its Tensor results become the outputs
of one graph node (fw_custom_node) whose backward calls the class's
backward with one gradient per output and expects one gradient (or None) per
Tensor argument of forward.
"""
from paddle import _C


class PyLayerContext:
    """The ctx of forward and backward: save_for_backward/saved_tensor and
    any attributes forward sets."""

    def __init__(self):
        self.container = ()
        self._non_differentiable = ()
        self._materialize_grads = True

    def save_for_backward(self, *tensors):
        self.container = tensors

    def saved_tensor(self):
        return self.container

    # PyTorch's spelling, also accepted by Paddle's examples
    @property
    def saved_tensors(self):
        return self.container

    def mark_not_inplace(self, *args):
        return None

    def mark_non_differentiable(self, *tensors):
        self._non_differentiable = tensors

    def set_materialize_grads(self, value):
        self._materialize_grads = bool(value)


def once_differentiable(backward):
    return backward


def _flatten(out):
    if isinstance(out, _C.Tensor):
        return [out], True
    if isinstance(out, (tuple, list)):
        return list(out), False
    raise TypeError("PyLayer.forward must return a Tensor or a tuple of Tensors, got {}"
                    .format(type(out).__name__))


class PyLayer:
    """Subclass with static forward(ctx, *args, **kwargs) and backward(ctx,
    *grads); call it with Cls.apply(*args, **kwargs)."""

    @staticmethod
    def forward(ctx, *args, **kwargs):
        raise NotImplementedError("PyLayer subclasses must define a static forward")

    @staticmethod
    def backward(ctx, *args):
        raise NotImplementedError("PyLayer subclasses must define a static backward")

    @classmethod
    def apply(cls, *args, **kwargs):
        ctx = PyLayerContext()
        inputs = [a for a in args if isinstance(a, _C.Tensor)]
        prev = _C.set_grad_enabled(False)
        try:
            out = cls.forward(ctx, *args, **kwargs)
        finally:
            _C.set_grad_enabled(prev)
        outs, single = _flatten(out)
        # Outputs get this node as history: fresh aliases (an output may be an
        # input returned as it is, or a tensor ctx saved: no reference cycle).
        tensor_pos = [i for i, o in enumerate(outs) if isinstance(o, _C.Tensor)]
        for i in tensor_pos:
            outs[i] = outs[i].detach()
        diff = [outs[i] for i in tensor_pos if outs[i].dtype.is_floating_point and
                not any(outs[i] is t for t in ctx._non_differentiable)]
        if diff and inputs and prev:
            n_in = len(inputs)
            backward = cls.backward

            def run_backward(*grads):
                res = backward(ctx, *grads)
                if isinstance(res, (tuple, list)):
                    res = tuple(res)
                else:
                    res = (res,)
                if len(res) != n_in:
                    raise ValueError("PyLayer.backward of {} returned {} gradients; forward "
                                     "had {} Tensor inputs".format(cls.__name__, len(res), n_in))
                return res
            if _C.custom_node(run_backward, inputs, diff):
                for t in diff:
                    t.stop_gradient = False
        return outs[0] if single else type(out)(outs) if isinstance(out, tuple) else outs


# Paddle 2.x names
LegacyPyLayer = PyLayer
