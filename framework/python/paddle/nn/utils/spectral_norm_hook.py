"""spectral_norm (Paddle's paddle/nn/utils/spectral_norm_hook.py): w / sigma(w),
sigma estimated by power iteration on the buffers name_u, name_v (updated in
training mode before each forward), the raw weight kept as name_orig."""
from paddle._lazy import paddle as _paddle

__all__ = ['spectral_norm']


def _normalize(x, eps):
    paddle = _paddle()
    n = paddle.sqrt(paddle.sum(paddle.square(x)))
    return x / paddle.maximum(n, paddle.full_like(n, eps))


class SpectralNorm:
    def __init__(self, name='weight', n_power_iterations=1, dim=0, eps=1e-12):
        if n_power_iterations <= 0:
            raise ValueError("Expected n_power_iterations to be positive, but got "
                             "n_power_iterations={}".format(n_power_iterations))
        self.name = name
        self.dim = dim
        self.n_power_iterations = n_power_iterations
        self.eps = eps

    def reshape_weight_to_matrix(self, weight):
        paddle = _paddle()
        if self.dim != 0:
            perm = [self.dim] + [d for d in range(weight.ndim) if d != self.dim]
            weight = paddle.transpose(weight, perm)
        return paddle.reshape(weight, [weight.shape[0], -1])

    def compute_weight(self, layer, do_power_iteration):
        paddle = _paddle()
        weight = getattr(layer, self.name + '_orig')
        u = getattr(layer, self.name + '_u')
        v = getattr(layer, self.name + '_v')
        mat = self.reshape_weight_to_matrix(weight)
        if do_power_iteration:
            with paddle.no_grad():
                m = mat.detach()
                for _ in range(self.n_power_iterations):
                    v_new = _normalize(paddle.matmul(m, u, transpose_x=True), self.eps)
                    u_new = _normalize(paddle.matmul(m, v_new), self.eps)
                    v.set_value(v_new.numpy())
                    u.set_value(u_new.numpy())
        u = u.detach()
        v = v.detach()
        sigma = paddle.sum(u * paddle.matmul(mat, v))
        return weight / sigma

    def __call__(self, layer, inputs):
        object.__setattr__(layer, self.name,
                           self.compute_weight(layer, do_power_iteration=layer.training))

    @staticmethod
    def apply(layer, name, n_power_iterations, dim, eps):
        paddle = _paddle()
        for hook in layer._forward_pre_hooks.values():
            if isinstance(hook, SpectralNorm) and hook.name == name:
                raise RuntimeError("Cannot register two spectral_norm hooks on the same "
                                   "parameter {}".format(name))
        if name not in layer._parameters or layer._parameters[name] is None:
            raise ValueError("spectral_norm: {} has no parameter {!r}".format(
                type(layer).__name__, name))
        weight = layer._parameters[name]
        if dim < 0:
            dim += weight.ndim
        if not 0 <= dim < weight.ndim:
            raise ValueError("spectral_norm: dim is out of range for a {}-D weight".format(
                weight.ndim))
        fn = SpectralNorm(name, n_power_iterations, dim, eps)
        with paddle.no_grad():
            mat = fn.reshape_weight_to_matrix(weight)
            h, w = mat.shape
            u = _normalize(paddle.normal(0.0, 1.0, [h]).astype(weight.dtype), eps)
            v = _normalize(paddle.normal(0.0, 1.0, [w]).astype(weight.dtype), eps)
        del layer._parameters[name]
        layer.add_parameter(name + '_orig', weight)
        layer.register_buffer(name + '_u', u)
        layer.register_buffer(name + '_v', v)
        object.__setattr__(layer, name, weight * 1.0)
        layer.register_forward_pre_hook(fn)
        return fn


def spectral_norm(layer, name='weight', n_power_iterations=1, eps=1e-12, dim=None):
    """Divide layer.<name> by its spectral norm before every forward. dim is
    the output axis (1 for Linear and transposed convs, whose weights are
    [in, out, ...]; 0 otherwise). Returns layer."""
    from ..layer.common import Linear
    from ..layer.conv import Conv1DTranspose, Conv2DTranspose
    if dim is None:
        dim = 1 if isinstance(layer, (Linear, Conv1DTranspose, Conv2DTranspose)) else 0
    SpectralNorm.apply(layer, name, n_power_iterations, dim, eps)
    return layer
