"""paddle.optimizer: SGD, Momentum, Adam, AdamW over the fused C kernels of
fw/optim.h (paddle._C.Optimizer). Python keeps what users configure: the
parameter list and groups, an LR scheduler (read before every step), grad
clipping objects, and the Paddle-named state_dict."""
import numbers

import numpy as np

from . import lr as lr_mod

__all__ = ['Optimizer', 'SGD', 'Momentum', 'Adam', 'AdamW']

# Paddle's accumulator names per fw state name
_STATE_KEYS = {
    'velocity': 'velocity_0',
    'moment1': 'moment1_0',
    'moment2': 'moment2_0',
    'beta1_pow_acc': 'beta1_pow_acc_0',
    'beta2_pow_acc': 'beta2_pow_acc_0',
}


def _C():
    from paddle import _C as c
    return c


def _scalar(v, what):
    if hasattr(v, 'item') and not isinstance(v, (float, int)):
        v = v.item()
    if isinstance(v, bool) or not isinstance(v, numbers.Real):
        raise TypeError("{} should be a float, got {}".format(what, type(v).__name__))
    return float(v)


class Optimizer:
    """Base class. Subclasses set self._kind and self._hyper (keyword
    arguments of _C.Optimizer)."""

    _kind = None

    def __init__(self, learning_rate, parameters=None, weight_decay=None, grad_clip=None,
                 name=None):
        import paddle
        from ..nn.clip import ClipGradBase
        from ..regularizer import L1Decay, L2Decay, WeightDecayRegularizer
        if parameters is None:
            raise AttributeError("parameters argument given to the Optimizer should not be "
                                 "None in dygraph mode.")
        if isinstance(parameters, paddle.Tensor):
            raise TypeError("`parameters` argument should be an Iterable of Tensors or dicts, "
                            "but got a Tensor")
        if not isinstance(learning_rate, (numbers.Real, lr_mod.LRScheduler)) or \
                isinstance(learning_rate, bool):
            raise TypeError("learning rate should be float or LRScheduler, got %s here"
                            % type(learning_rate))
        if isinstance(learning_rate, numbers.Real) and learning_rate < 0:
            raise ValueError("learning_rate should be >= 0, got {}".format(learning_rate))
        if grad_clip is not None and not isinstance(grad_clip, ClipGradBase):
            raise TypeError("'grad_clip' should be an instance of ClipGradBase's derived class")
        self._learning_rate = learning_rate
        self._grad_clip = grad_clip
        self._name = name
        self._l1_coeff = 0.0
        if isinstance(weight_decay, L1Decay):
            self._l1_coeff = float(weight_decay._coeff)
            wd = 0.0
        elif isinstance(weight_decay, (L2Decay, WeightDecayRegularizer)):
            wd = float(weight_decay._coeff)
        elif weight_decay is None:
            wd = None
        else:
            wd = _scalar(weight_decay, 'weight_decay')
        self.regularization = weight_decay
        self._weight_decay = wd
        # flatten parameter groups
        self._param_groups = []
        self._parameter_list = []
        self._group_of = []
        params = list(parameters)
        if params and isinstance(params[0], dict):
            for g in params:
                self._add_param_group(dict(g))
        else:
            self._add_param_group({'params': params})
        self._opt = None
        self._accumulators = {}
        self._multi_precision = False
        self._masters = {}        # index -> float32 master of a float16/bfloat16 param

    def _add_param_group(self, group):
        import paddle
        params = group['params']
        if isinstance(params, paddle.Tensor):
            params = [params]
        params = list(params)
        for p in params:
            if not isinstance(p, paddle.Tensor):
                raise TypeError("optimizer parameters must be Tensors, got {}"
                                .format(type(p).__name__))
        group['params'] = params
        self._param_groups.append(group)
        gi = len(self._param_groups) - 1
        seen = {id(p) for p in self._parameter_list}
        for p in params:
            if id(p) in seen:
                continue
            seen.add(id(p))
            self._parameter_list.append(p)
            self._group_of.append(gi)
        self._opt = None   # rebuilt on next use with the new params

    # ---- the C optimizer ---------------------------------------------------------
    def _hyper(self):
        return {}

    def _clip_norm(self):
        from ..nn.clip import ClipGradByGlobalNorm
        if isinstance(self._grad_clip, ClipGradByGlobalNorm):
            return self._grad_clip.clip_norm
        return 0.0

    def _build(self):
        if self._opt is not None:
            # Layer.to(dtype=...) recasts parameters in place (new storage):
            # the C optimizer holds the old tensors, so rebuild it
            if all(p.dtype == d for p, d in zip(self._parameter_list, self._dtypes)):
                return self._opt
            self._opt = None
        kw = self._hyper()
        kw['lr'] = self.get_lr()
        kw['weight_decay'] = self._weight_decay
        kw['clip_norm'] = self._clip_norm()
        opt = _C().Optimizer(self._kind, self._make_masters(), **kw)
        for i, p in enumerate(self._parameter_list):
            scale = 1.0
            attr = getattr(p, 'optimize_attr', None)
            if isinstance(attr, dict):
                scale = float(attr.get('learning_rate', 1.0))
            g = self._param_groups[self._group_of[i]]
            if 'learning_rate' in g:
                scale *= float(g['learning_rate'])
            if scale != 1.0:
                opt.set_lr_scale(i, scale)
            if not getattr(p, 'need_clip', True):
                opt.set_need_clip(i, False)
        self._opt = opt
        self._dtypes = [p.dtype for p in self._parameter_list]
        self._configure(opt)
        pending = self._accumulators
        self._accumulators = {}
        if pending:
            self._load_state(pending)
        return opt

    def _configure(self, opt):
        pass

    # ---- float16/bfloat16 parameters ------------------------------------------------
    # The C update runs on float32: a low-precision parameter is updated
    # through a float32 master copy (from its gradient cast to float32) and
    # the result cast back into it. With multi_precision (set by
    # paddle.amp.decorate at O2, or the constructor) the master persists
    # across steps and is saved in state_dict()['master_weights'], as
    # Paddle's; without it the master is re-read from the parameter before
    # every step, so the parameter's rounded value is the truth.
    def _make_masters(self):
        import paddle
        low = (paddle.float16, paddle.bfloat16)
        old = self._masters
        self._masters = {}
        out = []
        for i, p in enumerate(self._parameter_list):
            if p.dtype in low:
                m = old.get(i)
                if m is None or m.shape != p.shape:
                    m = p.astype('float32').detach()
                    m.stop_gradient = False
                    m.name = self._param_name(p, i) + '_fp32_master_0'
                self._masters[i] = m
                out.append(m)
            else:
                out.append(p)
        return out

    def _opt_param_name(self, i):
        """The name accumulators are saved under (Paddle names a master
        weight's accumulators after the master)."""
        m = self._masters.get(i)
        if m is not None and self._multi_precision:
            return m.name
        return self._param_name(self._parameter_list[i], i)

    def _masters_in(self):
        """Gradients of low-precision params to their masters (float32)."""
        import paddle
        with paddle.no_grad():
            for i, m in self._masters.items():
                p = self._parameter_list[i]
                if not self._multi_precision:
                    m._assign(p)
                g = p.grad
                m.grad = None if g is None else g.astype('float32')

    def _masters_out(self):
        import paddle
        with paddle.no_grad():
            for i, m in self._masters.items():
                self._parameter_list[i]._assign(m)

    # ---- learning rate ------------------------------------------------------------
    def get_lr(self):
        if isinstance(self._learning_rate, lr_mod.LRScheduler):
            return float(self._learning_rate())
        return float(self._learning_rate)

    def set_lr(self, value):
        if isinstance(self._learning_rate, lr_mod.LRScheduler):
            raise RuntimeError("optimizer's learning rate can't be LRScheduler when invoke "
                               "this API, because this will lead to conflict.")
        value = _scalar(value, 'learning_rate')
        if value < 0:
            raise ValueError("learning rate should be >= 0, got {}".format(value))
        self._learning_rate = value

    def set_lr_scheduler(self, scheduler):
        if not isinstance(scheduler, lr_mod.LRScheduler):
            raise TypeError("The type of 'scheduler' in optimizer.set_lr_schduler must be "
                            "LRScheduler, but received {}".format(type(scheduler)))
        self._learning_rate = scheduler

    # ---- stepping ---------------------------------------------------------------------
    def _apply_python_clip(self):
        from ..nn.clip import ClipGradByGlobalNorm
        if self._grad_clip is None or isinstance(self._grad_clip, ClipGradByGlobalNorm):
            return
        self._grad_clip([(p, p.grad) for p in self._parameter_list])

    def _apply_l1(self):
        if not self._l1_coeff:
            return
        for p in self._parameter_list:
            g = p.grad
            if g is not None:
                import paddle
                with paddle.no_grad():
                    g._assign(g + self._l1_coeff * paddle.sign(p) if hasattr(paddle, 'sign')
                              else g + self._l1_coeff * (p / (paddle.abs(p) + 1e-30)))

    def step(self):
        """Update every parameter that has a gradient."""
        opt = self._build()
        opt.set_lr(self.get_lr())
        self._apply_python_clip()
        self._apply_l1()
        if self._masters:
            self._masters_in()
        opt.step()
        if self._masters:
            self._masters_out()

    def minimize(self, loss, startup_program=None, parameters=None, no_grad_set=None):
        """Dygraph minimize: the gradients come from a prior loss.backward()."""
        self.step()
        return [], [(p, p.grad) for p in self._parameter_list if p.grad is not None]

    def clear_grad(self, set_to_zero=True):
        for p in self._parameter_list:
            if not p.stop_gradient:
                p.clear_grad(set_to_zero)

    clear_gradients = clear_grad

    def backward(self, loss, startup_program=None, parameters=None, no_grad_set=None,
                 callbacks=None):
        loss.backward()
        return [(p, p.grad) for p in self._parameter_list if p.grad is not None]

    def apply_gradients(self, params_grads):
        self.step()

    # ---- state dict ---------------------------------------------------------------------
    def _param_name(self, p, i):
        n = getattr(p, 'name', None)
        return n if n else 'param_{}'.format(i)

    def state_dict(self):
        """{'<param name>_<accumulator>_0': Tensor, ..., 'LR_Scheduler': {...}}"""
        out = {}
        if self._opt is not None:
            names = self._opt.state_names()
            for i, p in enumerate(self._parameter_list):
                for sn in names:
                    t = self._opt.state_get(i, sn)
                    if t is not None:
                        out['{}_{}'.format(self._opt_param_name(i),
                                           _STATE_KEYS.get(sn, sn))] = t
            if self._multi_precision and self._masters:
                out['master_weights'] = {self._param_name(self._parameter_list[i], i): m
                                         for i, m in self._masters.items()}
        else:
            out.update(self._accumulators)
        if isinstance(self._learning_rate, lr_mod.LRScheduler):
            out['LR_Scheduler'] = self._learning_rate.state_dict()
        return out

    def _saved_prefixes(self, state_dict, names):
        """Parameter names in the order their accumulators appear in state_dict."""
        sfx = ['_' + _STATE_KEYS.get(sn, sn) for sn in names]
        out = []
        for k in state_dict:
            for s in sfx:
                if isinstance(k, str) and k.endswith(s):
                    pre = k[:-len(s)]
                    if pre not in out:
                        out.append(pre)
                    break
        return out

    def _load_state(self, state_dict):
        import paddle
        names = self._opt.state_names()
        own = [self._opt_param_name(i) for i in range(len(self._parameter_list))]
        saved = self._saved_prefixes(state_dict, names)
        # Parameter names come from a process-wide counter, so a model rebuilt
        # in the same process has other names: when no saved name matches but
        # the counts agree, match accumulators by position.
        rename = {}
        if saved and not set(saved) & set(own) and len(saved) == len(own):
            rename = dict(zip(own, saved))
        for i, p in enumerate(self._parameter_list):
            for sn in names:
                key = '{}_{}'.format(rename.get(own[i], own[i]), _STATE_KEYS.get(sn, sn))
                if key in state_dict:
                    v = state_dict[key]
                    if not isinstance(v, paddle.Tensor):
                        v = paddle.to_tensor(np.asarray(v))
                    self._opt.state_set(i, sn, v)

    def set_state_dict(self, state_dict):
        """Restore accumulators (Tensors or numpy arrays, as paddle.load gives)
        and the LR scheduler's state."""
        state_dict = dict(state_dict)
        sched = state_dict.pop('LR_Scheduler', None)
        if sched is not None and isinstance(self._learning_rate, lr_mod.LRScheduler):
            self._learning_rate.set_state_dict(sched)
        masters = state_dict.pop('master_weights', None)
        if self._parameter_list:
            self._build()
            self._load_state(state_dict)
            if masters and self._masters:
                self._load_masters(masters)

    def _load_masters(self, masters):
        import paddle
        own = {self._param_name(self._parameter_list[i], i): i for i in self._masters}
        keys = list(masters)
        if not set(keys) & set(own) and len(keys) == len(own):
            pairs = zip(sorted(own.values()), keys)     # renamed model: by position
        else:
            pairs = ((own[k], k) for k in keys if k in own)
        for i, k in pairs:
            v = masters[k]
            if not isinstance(v, paddle.Tensor):
                v = paddle.to_tensor(np.asarray(v))
            with paddle.no_grad():
                self._masters[i]._assign(v)

    set_dict = set_state_dict
    load_state_dict = set_state_dict


class SGD(Optimizer):
    """p -= lr * (g + wd * p)."""
    _kind = 'sgd'

    def __init__(self, learning_rate=0.001, parameters=None, weight_decay=None, grad_clip=None,
                 multi_precision=False, name=None):
        super().__init__(learning_rate, parameters, weight_decay, grad_clip, name)
        self._multi_precision = bool(multi_precision)


class Momentum(Optimizer):
    """v = mu*v + (g + wd*p); p -= lr*v (nesterov: p -= lr*(g' + mu*v))."""
    _kind = 'momentum'

    def __init__(self, learning_rate=0.001, momentum=0.9, parameters=None, use_nesterov=False,
                 weight_decay=None, grad_clip=None, multi_precision=False, rescale_grad=1.0,
                 use_multi_tensor=False, name=None):
        m = _scalar(momentum, 'momentum')
        if m < 0:
            raise ValueError("momentum should be >= 0, got {}".format(momentum))
        self._momentum = m
        self._use_nesterov = bool(use_nesterov)
        super().__init__(learning_rate, parameters, weight_decay, grad_clip, name)
        self._multi_precision = bool(multi_precision)

    def _hyper(self):
        return {'momentum': self._momentum, 'nesterov': self._use_nesterov}


class Adam(Optimizer):
    """Adam(learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-08,
    parameters=None, weight_decay=None, grad_clip=None): Paddle's update
    lr_t = lr*sqrt(1-b2^t)/(1-b1^t); p -= lr_t*m/(sqrt(v) + eps*sqrt(1-b2^t));
    a float weight_decay is L2 added to the gradient."""
    _kind = 'adam'

    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-08,
                 parameters=None, weight_decay=None, grad_clip=None, lazy_mode=False,
                 multi_precision=False, use_multi_tensor=False, amsgrad=False, name=None):
        self._beta1 = _scalar(beta1, 'beta1')
        self._beta2 = _scalar(beta2, 'beta2')
        self._epsilon = _scalar(epsilon, 'epsilon')
        if not 0 <= self._beta1 < 1:
            raise ValueError("Invaild value of beta1, expect beta1 in [0,1).")
        if not 0 <= self._beta2 < 1:
            raise ValueError("Invaild value of beta2, expect beta2 in [0,1).")
        if self._epsilon < 0:
            raise ValueError("Invaild value of epsilon, expect epsilon >= 0.")
        if amsgrad:
            raise NotImplementedError("Adam: amsgrad is not supported")
        super().__init__(learning_rate, parameters, weight_decay, grad_clip, name)
        self._multi_precision = bool(multi_precision)

    def _hyper(self):
        return {'beta1': self._beta1, 'beta2': self._beta2, 'epsilon': self._epsilon}


class AdamW(Adam):
    """AdamW(learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-8,
    parameters=None, weight_decay=0.01, lr_ratio=None,
    apply_decay_param_fun=None, grad_clip=None): decoupled decay
    p -= lr*wd*p for the parameters apply_decay_param_fun(name) accepts."""
    _kind = 'adamw'

    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-8,
                 parameters=None, weight_decay=0.01, lr_ratio=None, apply_decay_param_fun=None,
                 grad_clip=None, lazy_mode=False, multi_precision=False, amsgrad=False,
                 name=None):
        if weight_decay is None:
            weight_decay = 0.0
        if hasattr(weight_decay, '_coeff'):
            weight_decay = weight_decay._coeff
        wd = _scalar(weight_decay, 'weight_decay')
        if wd < 0:
            raise ValueError("weight_decay should be >= 0, got {}".format(wd))
        self._apply_decay_param_fun = apply_decay_param_fun
        self._lr_ratio = lr_ratio
        super().__init__(learning_rate, beta1, beta2, epsilon, parameters, wd, grad_clip,
                         lazy_mode, multi_precision, False, amsgrad, name)
        self._coeff = wd

    def _configure(self, opt):
        for i, p in enumerate(self._parameter_list):
            decay = True
            if self._apply_decay_param_fun is not None:
                decay = bool(self._apply_decay_param_fun(self._param_name(p, i)))
            g = self._param_groups[self._group_of[i]]
            if 'weight_decay' in g and not g['weight_decay']:
                decay = False
            if not decay:
                opt.set_decay(i, False)
            if self._lr_ratio is not None:
                opt.set_lr_scale(i, float(self._lr_ratio(p)))
