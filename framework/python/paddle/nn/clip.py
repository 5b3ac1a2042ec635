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
    """Clip the grads of `parameters` to global norm max_norm; returns the norm."""
    import paddle
    if norm_type != 2.0:
        raise NotImplementedError("clip_grad_norm_: only norm_type 2 is supported")
    if isinstance(parameters, paddle.Tensor):
        parameters = [parameters]
    params = [p for p in parameters if p.grad is not None]
    if not params:
        return paddle.to_tensor(0.0)
    norm = _C().clip_grad_by_global_norm(params, float(max_norm))
    return paddle.to_tensor(norm, dtype='float32')


def clip_grad_value_(parameters, clip_value):
    import paddle
    if isinstance(parameters, paddle.Tensor):
        parameters = [parameters]
    for p in parameters:
        if p.grad is not None:
            p.grad._assign(_C().clip(p.grad, -float(clip_value), float(clip_value)))
