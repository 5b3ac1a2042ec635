"""paddle.amp.GradScaler / AmpScaler: dynamic loss scaling (Paddle 3.x
paddle/amp/grad_scaler.py).

scale(loss) multiplies the loss by the scale; unscale_(opt) divides the
optimizer's gradients by it and checks them for inf/nan in one fused pass
(the gradients flattened into one float32 tensor: one multiply, one
isfinite/all, one host read); step(opt) skips the update when any was not
finite, so parameters and optimizer state (moments, step count) stay as they
were; update() lowers the scale after decr_every_n_nan_or_inf bad steps and
raises it after incr_every_n_steps good ones. minimize = step + update.

As in Paddle, dynamic scaling is for float16: when scale() runs after a
bfloat16 auto_cast the scaler disables itself with a warning (bfloat16 has
float32's range). Unlike Paddle, a scaler on the CPU stays enabled.
"""
import warnings
from enum import Enum

import numpy as np

from .auto_cast import amp_global_state


class OptimizerState(Enum):
    INIT = 0
    UNSCALED = 1
    STEPPED = 2


class AmpScaler:
    """AmpScaler(enable=True, init_loss_scaling=2.**15, incr_ratio=2.0,
    decr_ratio=0.5, incr_every_n_steps=1000, decr_every_n_nan_or_inf=1,
    use_dynamic_loss_scaling=True)."""

    def __init__(self, enable=True, init_loss_scaling=2.0 ** 15, incr_ratio=2.0,
                 decr_ratio=0.5, incr_every_n_steps=1000, decr_every_n_nan_or_inf=1,
                 use_dynamic_loss_scaling=True):
        import paddle
        self._enable = bool(enable)
        self._use_dynamic_loss_scaling = False
        self._init_loss_scaling = 1.0
        self._scale = None
        self._found_inf = False
        self._cache_found_inf = None
        self._optimizer_states = {}
        if self._enable:
            if not incr_ratio > 1.0:
                raise ValueError("The incr_ratio must be > 1.0.")
            if not decr_ratio < 1.0:
                raise ValueError("The decr_ratio must be < 1.0.")
            self._init_loss_scaling = init_loss_scaling
            self._incr_ratio = incr_ratio
            self._decr_ratio = decr_ratio
            self._incr_every_n_steps = incr_every_n_steps
            self._decr_every_n_nan_or_inf = decr_every_n_nan_or_inf
            self._incr_count = 0
            self._decr_count = 0
            self._use_dynamic_loss_scaling = bool(use_dynamic_loss_scaling)
            self._scale = paddle.to_tensor(np.array([init_loss_scaling], np.float32))

    def _opt_state(self, optimizer):
        return self._optimizer_states.get(id(optimizer), OptimizerState.INIT)

    def _reset_states(self):
        self._optimizer_states = {}

    def scale(self, var):
        """var * the loss scale (var itself when the scaler is disabled)."""
        import paddle
        if not isinstance(var, paddle.Tensor):
            raise TypeError("The type of 'var' in AmpScaler.scale() must be Tensor, but "
                            "received {}.".format(type(var).__name__))
        dt = amp_global_state().amp_dtype
        if self._enable and dt != 'float16' and self._use_dynamic_loss_scaling:
            self._enable = False
            self._use_dynamic_loss_scaling = False
            self._init_loss_scaling = 1.0
            warnings.warn("It is not recommended to use dynamic loss scaling for {}, so "
                          "GradScaler is disable by default.".format(dt))
        if not self._enable:
            return var
        return var * self._scale

    def _grads(self, optimizer):
        return [p.grad for p in optimizer._parameter_list
                if not p.stop_gradient and p.grad is not None]

    def _unscale(self, optimizer):
        """Divide the gradients by the scale in place; _found_inf says
        whether any was inf or nan (one host read for all of them)."""
        import paddle
        if not self._enable:
            return
        st = self._opt_state(optimizer)
        if st is OptimizerState.UNSCALED:
            raise RuntimeError("unscale_() has already been called on this optimizer since "
                               "the last update().")
        if st is OptimizerState.STEPPED:
            raise RuntimeError("unscale_() is being called after step().")
        grads = self._grads(optimizer)
        found = False
        if grads:
            with paddle.no_grad():
                flat = paddle.concat([g.reshape([-1]).astype('float32') for g in grads])
                flat = flat / self._scale
                found = not bool(paddle.isfinite(flat).all().item())
                pieces = paddle.split(flat, [int(g.size) for g in grads])
                for g, piece in zip(grads, pieces):
                    g._assign(piece.reshape(g.shape))
        self._found_inf = found
        self._optimizer_states[id(optimizer)] = OptimizerState.UNSCALED

    def minimize(self, optimizer, *args, **kwargs):
        """optimizer.minimize(*args, **kwargs) unless a gradient is inf/nan
        (unscaling first if unscale_ was not called), then update the scale.
        Returns what optimizer.minimize returns, (None, None) when skipped."""
        if not self._enable:
            return optimizer.minimize(*args, **kwargs)
        if self._opt_state(optimizer) is OptimizerState.INIT:
            self._unscale(optimizer)
        ops, params_grads = None, None
        if self._found_inf:
            self._cache_found_inf = True
        else:
            ops, params_grads = optimizer.minimize(*args, **kwargs)
            self._cache_found_inf = False
        if self._use_dynamic_loss_scaling:
            self._update()
        self._reset_states()
        return ops, params_grads

    def _update(self):
        if not self._enable:
            return
        if self._cache_found_inf:
            self._incr_count = 0
            self._decr_count += 1
            if self._decr_count == self._decr_every_n_nan_or_inf:
                print('Found inf or nan, current scale is: {}, decrease to: {}*{}'.format(
                    float(self._scale.item()), float(self._scale.item()),
                    float(self._decr_ratio)))
                self._scale = self._scale * self._decr_ratio
                self._decr_count = 0
        else:
            self._decr_count = 0
            self._incr_count += 1
            if self._incr_count == self._incr_every_n_steps:
                self._scale = self._scale * self._incr_ratio
                self._incr_count = 0

    # ---- getters / setters ------------------------------------------------------------
    def is_enable(self):
        return self._enable

    def is_use_dynamic_loss_scaling(self):
        return self._use_dynamic_loss_scaling

    def get_init_loss_scaling(self):
        return self._init_loss_scaling

    def set_init_loss_scaling(self, new_init_loss_scaling):
        import paddle
        self._init_loss_scaling = new_init_loss_scaling
        self._scale = paddle.to_tensor(np.array([new_init_loss_scaling], np.float32))

    def get_incr_ratio(self):
        return self._incr_ratio

    def set_incr_ratio(self, new_incr_ratio):
        if not new_incr_ratio > 1.0:
            raise ValueError("The new_incr_ratio must be > 1.0.")
        self._incr_ratio = new_incr_ratio

    def get_decr_ratio(self):
        return self._decr_ratio

    def set_decr_ratio(self, new_decr_ratio):
        if not new_decr_ratio < 1.0:
            raise ValueError("The new_decr_ratio must be < 1.0.")
        self._decr_ratio = new_decr_ratio

    def get_incr_every_n_steps(self):
        return self._incr_every_n_steps

    def set_incr_every_n_steps(self, new_incr_every_n_steps):
        self._incr_every_n_steps = new_incr_every_n_steps

    def get_decr_every_n_nan_or_inf(self):
        return self._decr_every_n_nan_or_inf

    def set_decr_every_n_nan_or_inf(self, new_decr_every_n_nan_or_inf):
        self._decr_every_n_nan_or_inf = new_decr_every_n_nan_or_inf

    def get_loss_scaling(self):
        """The current scale (a 1-element float32 Tensor)."""
        return self._scale

    # ---- state ------------------------------------------------------------------------
    def state_dict(self):
        """{'scale': ndarray [1], incr/decr ratios and counts,
        use_dynamic_loss_scaling}; {} when disabled."""
        if not self._enable:
            return {}
        return {
            'scale': self._scale.numpy(),
            'incr_ratio': self._incr_ratio,
            'decr_ratio': self._decr_ratio,
            'incr_every_n_steps': self._incr_every_n_steps,
            'decr_every_n_nan_or_inf': self._decr_every_n_nan_or_inf,
            'incr_count': self._incr_count,
            'decr_count': self._decr_count,
            'use_dynamic_loss_scaling': self._use_dynamic_loss_scaling,
        }

    def load_state_dict(self, state_dict):
        import paddle
        if not self._enable:
            return
        if len(state_dict) == 0:
            raise RuntimeError("The input state dict is empty, possibly because it was saved "
                               "from a disabled instance of GradScaler.")
        scale = np.asarray(state_dict['scale'].numpy() if isinstance(
            state_dict['scale'], paddle.Tensor) else state_dict['scale'], np.float32)
        self._init_loss_scaling = float(scale.reshape(-1)[0])
        self._scale = paddle.to_tensor(scale.reshape([1]))
        self._incr_ratio = state_dict['incr_ratio']
        self._decr_ratio = state_dict['decr_ratio']
        self._incr_every_n_steps = state_dict['incr_every_n_steps']
        self._decr_every_n_nan_or_inf = state_dict['decr_every_n_nan_or_inf']
        self._incr_count = state_dict['incr_count']
        self._decr_count = state_dict['decr_count']
        self._use_dynamic_loss_scaling = state_dict['use_dynamic_loss_scaling']

    set_state_dict = load_state_dict


class GradScaler(AmpScaler):
    """GradScaler(enable=True, init_loss_scaling=65536.0, incr_ratio=2.0,
    decr_ratio=0.5, incr_every_n_steps=2000, decr_every_n_nan_or_inf=1,
    use_dynamic_loss_scaling=True): AmpScaler plus step/update/unscale_.

        with paddle.amp.auto_cast():
            loss = model(x).mean()
        scaler.scale(loss).backward()
        scaler.step(opt)            # or scaler.minimize(opt, scaled)
        scaler.update()
        opt.clear_grad()
    """

    def __init__(self, enable=True, init_loss_scaling=2.0 ** 16, incr_ratio=2.0,
                 decr_ratio=0.5, incr_every_n_steps=2000, decr_every_n_nan_or_inf=1,
                 use_dynamic_loss_scaling=True):
        super().__init__(enable, init_loss_scaling, incr_ratio, decr_ratio,
                         incr_every_n_steps, decr_every_n_nan_or_inf,
                         use_dynamic_loss_scaling)

    def step(self, optimizer):
        """optimizer.step() unless a gradient is inf/nan (unscaling first if
        unscale_ was not called). A second step() before update() raises."""
        if not self._enable:
            return optimizer.step()
        st = self._opt_state(optimizer)
        if st is OptimizerState.STEPPED:
            raise RuntimeError("step() has already been called since the last update().")
        if st is OptimizerState.INIT:
            self._unscale(optimizer)
        if self._found_inf:
            self._cache_found_inf = True
        else:
            optimizer.step()
            self._cache_found_inf = False
        self._optimizer_states[id(optimizer)] = OptimizerState.STEPPED
        if not self._use_dynamic_loss_scaling:
            self._reset_states()

    def update(self):
        """Adjust the scale after step() (dynamic scaling only)."""
        if not self._enable:
            return
        if self._use_dynamic_loss_scaling:
            self._update()
            self._reset_states()

    def unscale_(self, optimizer):
        """Divide optimizer's gradients by the scale now (to clip them before
        step()); once per step: a second call raises RuntimeError."""
        return self._unscale(optimizer)
