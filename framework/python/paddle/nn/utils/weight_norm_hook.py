"""weight_norm / remove_weight_norm (Paddle's paddle/nn/utils/weight_norm_hook.py):
w = g * v / ||v||, the norm taken over every axis but dim, recomputed by a
forward pre-hook from the parameters name_g and name_v."""
from paddle._lazy import paddle as _paddle

__all__ = ['weight_norm', 'remove_weight_norm']


def _norm_except_dim(p, dim):
    """||p|| over every axis but dim, shape [p.shape[dim]] (a 0-D tensor for dim -1)."""
    paddle = _paddle()
    if dim == -1:
        return paddle.sqrt(paddle.sum(paddle.square(p)) + 1e-12)
    axes = [a for a in range(p.ndim) if a != dim]
    return paddle.sqrt(paddle.sum(paddle.square(p), axis=axes))


def _weight_norm(v, g, dim):
    paddle = _paddle()
    if dim == -1:
        return v * (g / (paddle.sqrt(paddle.sum(paddle.square(v))) + 1e-12))
    axes = [a for a in range(v.ndim) if a != dim]
    n = paddle.sqrt(paddle.sum(paddle.square(v), axis=axes, keepdim=True))
    n = paddle.maximum(n, paddle.full_like(n, 1e-12))
    shape = [1] * v.ndim
    shape[dim] = v.shape[dim]
    return v / n * paddle.reshape(g, shape)


class WeightNorm:
    def __init__(self, name, dim):
        self.name = name
        self.dim = dim

    def compute_weight(self, layer):
        return _weight_norm(getattr(layer, self.name + '_v'), getattr(layer, self.name + '_g'),
                            self.dim)

    @staticmethod
    def apply(layer, name, dim):
        paddle = _paddle()
        for hook in layer._forward_pre_hooks.values():
            if isinstance(hook, WeightNorm) and hook.name == name:
                raise RuntimeError("Cannot register two weight_norm hooks on the same parameter "
                                   "{}".format(name))
        if name not in layer._parameters or layer._parameters[name] is None:
            raise ValueError("weight_norm: {} has no parameter {!r}".format(
                type(layer).__name__, name))
        w = layer._parameters[name]
        if dim is None:
            dim = -1
        if dim < -1 or dim >= w.ndim:
            raise ValueError("weight_norm: dim {} is out of range for a {}-D weight".format(
                dim, w.ndim))
        if dim == -1 and w.ndim == 1:
            dim = -1
        fn = WeightNorm(name, dim)
        g_val = _norm_except_dim(w, dim)
        del layer._parameters[name]
        v = layer.create_parameter(list(w.shape), dtype=w.dtype)
        layer.add_parameter(name + '_v', v)
        g = layer.create_parameter(list(g_val.shape), dtype=w.dtype)
        layer.add_parameter(name + '_g', g)
        with paddle.no_grad():
            v.set_value(w.numpy())
            g.set_value(g_val.numpy())
        object.__setattr__(layer, name, fn.compute_weight(layer))
        fn._hook = layer.register_forward_pre_hook(fn)
        return fn

    def remove(self, layer):
        paddle = _paddle()
        with paddle.no_grad():
            w = self.compute_weight(layer)
        layer.__dict__.pop(self.name, None)
        del layer._parameters[self.name + '_g']
        del layer._parameters[self.name + '_v']
        p = layer.create_parameter(list(w.shape), dtype=w.dtype)
        p.set_value(w.numpy())
        layer.add_parameter(self.name, p)

    def __call__(self, layer, inputs):
        object.__setattr__(layer, self.name, self.compute_weight(layer))


def weight_norm(layer, name='weight', dim=0):
    """Reparameterise layer.<name> as name_g * name_v / ||name_v|| (norm over
    every axis but dim; dim=None normalises the whole tensor). Returns layer."""
    WeightNorm.apply(layer, name, dim)
    return layer


def remove_weight_norm(layer, name='weight'):
    """Undo weight_norm: layer.<name> becomes a plain parameter again."""
    for k, hook in list(layer._forward_pre_hooks.items()):
        if isinstance(hook, WeightNorm) and hook.name == name:
            hook.remove(layer)
            del layer._forward_pre_hooks[k]
            return layer
    raise ValueError("weight_norm of '{}' not found in {}".format(name, type(layer).__name__))
