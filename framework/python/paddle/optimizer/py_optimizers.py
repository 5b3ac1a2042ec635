"""Optimizers without a fused C kernel (RMSProp, Adagrad): the update is a
few elementwise C ops per parameter, written into the parameter in place."""
import numpy as np

from .optimizer import Optimizer, _scalar

__all__ = ['RMSProp', 'Adagrad']


class _ElementwiseOptimizer(Optimizer):
    _state_names = ()
    _fold_weight_decay = True     # L2 decay as g + wd * p before _update

    def __init__(self, learning_rate, parameters, weight_decay, grad_clip, name):
        super().__init__(learning_rate, parameters, weight_decay, grad_clip, name)
        self._state = {}        # (param index, state name) -> Tensor
        self._steps = {}        # param index -> updates made (t, from 1 in _update)
        self._t = 0

    def _lr_of(self, i, p):
        scale = 1.0
        attr = getattr(p, 'optimize_attr', None)
        if isinstance(attr, dict):
            scale = float(attr.get('learning_rate', 1.0))
        g = self._param_groups[self._group_of[i]]
        if 'learning_rate' in g:
            scale *= float(g['learning_rate'])
        return self.get_lr() * scale

    def _init_state(self, p):
        import paddle
        return {n: paddle.zeros(p.shape, dtype=p.dtype) for n in self._state_names}

    def step(self):
        import paddle
        if self._grad_clip is not None:
            self._grad_clip([(p, p.grad) for p in self._parameter_list])
        self._apply_l1()
        wd = self._weight_decay or 0.0
        with paddle.no_grad():
            for i, p in enumerate(self._parameter_list):
                g = p.grad
                if g is None or p.stop_gradient:
                    continue
                if wd and self._fold_weight_decay:
                    g = g + wd * p
                st = {n: self._state.get((i, n)) for n in self._state_names}
                if any(v is None for v in st.values()):
                    st = self._init_state(p)
                self._t = self._steps.get(i, 0) + 1
                self._steps[i] = self._t
                self._cur = (i, p)
                new_p, st = self._update(p, g, st, self._lr_of(i, p))
                p._assign(new_p)
                for n, v in st.items():
                    self._state[(i, n)] = v

    def _build(self):
        return None

    def _state_shape(self, name, p):
        return list(p.shape)

    def state_dict(self):
        from . import lr as lr_mod
        out = {}
        import paddle
        for (i, n), v in self._state.items():
            out['{}_{}_0'.format(self._param_name(self._parameter_list[i], i), n)] = v
        for i, t in self._steps.items():
            out['{}_step_0'.format(self._param_name(self._parameter_list[i], i))] = \
                paddle.to_tensor([float(t)], dtype='float32')
        if isinstance(self._learning_rate, lr_mod.LRScheduler):
            out['LR_Scheduler'] = self._learning_rate.state_dict()
        return out

    def set_state_dict(self, state_dict):
        import paddle
        from . import lr as lr_mod
        state_dict = dict(state_dict)
        sched = state_dict.pop('LR_Scheduler', None)
        if sched is not None and isinstance(self._learning_rate, lr_mod.LRScheduler):
            self._learning_rate.set_state_dict(sched)
        for i, p in enumerate(self._parameter_list):
            key = '{}_step_0'.format(self._param_name(p, i))
            if key in state_dict:
                v = state_dict[key]
                self._steps[i] = int(float(np.asarray(v.numpy() if hasattr(v, 'numpy')
                                                      else v).reshape(-1)[0]))
            for n in self._state_names:
                key = '{}_{}_0'.format(self._param_name(p, i), n)
                if key in state_dict:
                    v = state_dict[key]
                    if not isinstance(v, paddle.Tensor):
                        v = paddle.to_tensor(np.asarray(v))
                    if list(v.shape) != self._state_shape(n, p):
                        raise ValueError("{}: shape {} does not match the expected {}"
                                         .format(key, list(v.shape), self._state_shape(n, p)))
                    self._state[(i, n)] = paddle.cast(v, p.dtype)

    set_dict = set_state_dict
    load_state_dict = set_state_dict


class RMSProp(_ElementwiseOptimizer):
    """r = rho*r + (1-rho)*g^2; (centered: mg = rho*mg + (1-rho)*g, r - mg^2);
    mom = momentum*mom + lr*g/sqrt(r + eps); p -= mom."""
    _state_names = ('mean_square', 'mean_grad', 'momentum')

    def __init__(self, learning_rate, rho=0.95, epsilon=1e-06, momentum=0.0, centered=False,
                 parameters=None, weight_decay=None, grad_clip=None, name=None):
        self._rho = _scalar(rho, 'rho')
        self._epsilon = _scalar(epsilon, 'epsilon')
        self._momentum = _scalar(momentum, 'momentum')
        if not 0.0 <= self._rho:
            raise ValueError("Invalid value of rho, expect rho >= 0.")
        if not 0.0 <= self._epsilon:
            raise ValueError("Invalid value of epsilon, expect epsilon >= 0.")
        if not 0.0 <= self._momentum:
            raise ValueError("Invalid value of momentum, expect momentum >= 0.")
        self._centered = bool(centered)
        super().__init__(learning_rate, parameters, weight_decay, grad_clip, name)

    def _update(self, p, g, st, lr):
        import paddle
        rho = self._rho
        ms = st['mean_square'] * rho + (g * g) * (1 - rho)
        mg = st['mean_grad']
        if self._centered:
            mg = mg * rho + g * (1 - rho)
            denom = paddle.sqrt(ms - mg * mg + self._epsilon)
        else:
            denom = paddle.sqrt(ms + self._epsilon)
        mom = st['momentum'] * self._momentum + (g / denom) * lr
        return p - mom, {'mean_square': ms, 'mean_grad': mg, 'momentum': mom}


class Adagrad(_ElementwiseOptimizer):
    """moment += g^2; p -= lr * g / (sqrt(moment) + epsilon)."""
    _state_names = ('moment',)

    def __init__(self, learning_rate, epsilon=1e-06, parameters=None, weight_decay=None,
                 grad_clip=None, name=None, initial_accumulator_value=0.0):
        self._epsilon = _scalar(epsilon, 'epsilon')
        self._initial = _scalar(initial_accumulator_value, 'initial_accumulator_value')
        super().__init__(learning_rate, parameters, weight_decay, grad_clip, name)

    def _init_state(self, p):
        import paddle
        return {'moment': paddle.full(p.shape, self._initial, dtype=p.dtype)}

    def _update(self, p, g, st, lr):
        import paddle
        m = st['moment'] + g * g
        return p - (g / (paddle.sqrt(m) + self._epsilon)) * lr, {'moment': m}
