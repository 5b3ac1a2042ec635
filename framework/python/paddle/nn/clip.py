"""Gradient clipping: ClipGradByGlobalNorm (fused in C), ClipGradByNorm,
ClipGradByValue. An optimizer given grad_clip applies it before updating;
ClipGradByGlobalNorm is handed to the C optimizer as clip_norm."""
import numbers

__all__ = ['ClipGradByGlobalNorm', 'ClipGradByNorm', 'ClipGradByValue',
           'clip_grad_norm_', 'clip_grad_value_']


def _C():
    from paddle import _C as c
    return c


class ClipGradBase:
    def __call__(self, params_grads):
        return self._dygraph_clip(params_grads)

    def _dygraph_clip(self, params_grads):
        raise NotImplementedError


class ClipGradByGlobalNorm(ClipGradBase):
    """grads *= clip_norm / max(global_norm, clip_norm), global_norm over
    every parameter with a gradient (need_clip=False ones excluded)."""

    def __init__(self, clip_norm, group_name='default_group', auto_skip_clip=False):
        if isinstance(clip_norm, bool) or not isinstance(clip_norm, numbers.Real):
            raise TypeError("clip_norm should be a float, got {}".format(type(clip_norm)))
        if clip_norm <= 0:
            raise ValueError("clip_norm should be > 0, got {}".format(clip_norm))
        self.clip_norm = float(clip_norm)
        self.group_name = group_name
        self.auto_skip_clip = auto_skip_clip

    def __str__(self):
        return "Gradient Clip By GlobalNorm, global_norm=%f" % (self.clip_norm)

    def _dygraph_clip(self, params_grads):
        params = [p for p, g in params_grads
                  if g is not None and getattr(p, 'need_clip', True)]
        if params:
            _C().clip_grad_by_global_norm(params, self.clip_norm)
        return [(p, p.grad if g is not None else None) for p, g in params_grads]


class ClipGradByNorm(ClipGradBase):
    """Each grad is scaled to L2 norm at most clip_norm."""

    def __init__(self, clip_norm):
        if clip_norm <= 0:
            raise ValueError("clip_norm should be > 0, got {}".format(clip_norm))
        self.clip_norm = float(clip_norm)

    def __str__(self):
        return "Gradient Clip By Norm, clip_norm=%f" % self.clip_norm

    def _dygraph_clip(self, params_grads):
        out = []
        for p, g in params_grads:
            if g is None or not getattr(p, 'need_clip', True):
                out.append((p, g))
                continue
            _C().clip_grad_by_global_norm([p], self.clip_norm)
            out.append((p, p.grad))
        return out


class ClipGradByValue(ClipGradBase):
    def __init__(self, max, min=None):
        if min is None:
            if max <= 0:
                raise ValueError("max should be > 0 when min is None")
            min = -max
        self.max = float(max)
        self.min = float(min)

    def __str__(self):
        return "Clip Gradient By Value, min = %f, max=%f" % (self.min, self.max)

    def _dygraph_clip(self, params_grads):
        out = []
        for p, g in params_grads:
            if g is None or not getattr(p, 'need_clip', True):
                out.append((p, g))
                continue
            g._assign(_C().clip(g, self.min, self.max))
            out.append((p, g))
        return out


def clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False):
    """Scale the grads of `parameters` in place so their joint norm_type-norm
    (2 by default, inf for the largest |g|) is at most max_norm (factor
    max_norm / (norm + 1e-6), as Paddle); returns the norm before clipping."""
    import paddle
    if isinstance(parameters, paddle.Tensor):
        parameters = [parameters]
    params = [p for p in parameters if p.grad is not None]
    if not params:
        return paddle.to_tensor(0.0)
    norm_type = float(norm_type)
    if norm_type == 2.0 and not error_if_nonfinite:
        norm = _C().clip_grad_by_global_norm(params, float(max_norm))
        return paddle.to_tensor(norm, dtype='float32')
    grads = [p.grad for p in params]
    if norm_type == float('inf'):
        norms = [paddle.max(paddle.abs(g)) for g in grads]
        total = norms[0] if len(norms) == 1 else paddle.max(paddle.stack(norms))
    elif norm_type > 0:
        acc = None
        for g in grads:
            term = paddle.sum(paddle.pow(paddle.abs(paddle.cast(g, 'float64')), norm_type))
            acc = term if acc is None else acc + term
        total = paddle.pow(acc, 1.0 / norm_type)
    else:
        raise ValueError("clip_grad_norm_: norm_type must be positive or inf, got {}".format(
            norm_type))
    total = paddle.cast(total, 'float32')
    if error_if_nonfinite and not bool(paddle.isfinite(total)):
        raise RuntimeError("The total norm of {} order of the gradients from `parameters` is "
                           "non-finite, so it cannot be clipped. In any case, disable this error "
                           "and scale the gradient by non-finite norm, set "
                           "`error_if_nonfinite=False`".format(norm_type))
    coef = float(max_norm) / (float(total) + 1e-6)
    if coef < 1.0:
        for g in grads:
            g._assign(_C().multiply(g, coef))
    return total


def clip_grad_value_(parameters, clip_value):
    import paddle
    if isinstance(parameters, paddle.Tensor):
        parameters = [parameters]
    for p in parameters:
        if p.grad is not None:
            p.grad._assign(_C().clip(p.grad, -float(clip_value), float(clip_value)))
