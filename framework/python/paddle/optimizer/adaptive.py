"""Paddle's other optimizers, each with the update rule of its API page:
Adadelta, Adamax, Lamb, NAdam, RAdam, ASGD, Rprop. Like RMSProp and Adagrad
(py_optimizers.py) the update is a few elementwise C ops per parameter,
written into the parameter in place; self._t is the parameter's step count
(1 on the first update)."""
import math

from .optimizer import _scalar
from .py_optimizers import _ElementwiseOptimizer

__all__ = ['Adadelta', 'Adamax', 'Lamb', 'NAdam', 'RAdam', 'ASGD', 'Rprop']


def _paddle():
    import paddle
    return paddle


def _check_range(v, lo, hi, what, lo_open=False):
    if not ((lo < v if lo_open else lo <= v) and v <= hi):
        raise ValueError("Invalid value of {}, expect {} {} {} <= {}".format(
            what, lo, '<' if lo_open else '<=', what, hi))


class Adadelta(_ElementwiseOptimizer):
    """E[g^2] = rho E[g^2] + (1 - rho) g^2;
    update = -sqrt((E[dx^2] + eps) / (E[g^2] + eps)) g;
    E[dx^2] = rho E[dx^2] + (1 - rho) update^2;  p += lr * update."""
    _state_names = ('avg_squared_grad', 'avg_squared_update')

    def __init__(self, learning_rate=0.001, epsilon=1.0e-6, rho=0.95, parameters=None,
                 weight_decay=None, grad_clip=None, name=None):
        if learning_rate is None:
            raise ValueError("learning_rate is not set.")
        self._epsilon = _scalar(epsilon, 'epsilon')
        self._rho = _scalar(rho, 'rho')
        if self._epsilon is None or self._rho is None:
            raise ValueError("epsilon and rho are not set.")
        super().__init__(learning_rate, parameters, weight_decay, grad_clip, name)

    def _update(self, p, g, st, lr):
        paddle = _paddle()
        rho, eps = self._rho, self._epsilon
        eg = st['avg_squared_grad'] * rho + (g * g) * (1 - rho)
        upd = -paddle.sqrt((st['avg_squared_update'] + eps) / (eg + eps)) * g
        edx = st['avg_squared_update'] * rho + (upd * upd) * (1 - rho)
        return p + upd * lr, {'avg_squared_grad': eg, 'avg_squared_update': edx}


class Adamax(_ElementwiseOptimizer):
    """m = b1 m + (1 - b1) g;  u = max(b2 u + eps, |g|);
    p -= lr / (1 - b1^t) * m / u."""
    _state_names = ('moment', 'inf_norm')

    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-08,
                 parameters=None, weight_decay=None, grad_clip=None, name=None):
        self._beta1 = _scalar(beta1, 'beta1')
        self._beta2 = _scalar(beta2, 'beta2')
        self._epsilon = _scalar(epsilon, 'epsilon')
        _check_range(self._beta1, 0, 1, 'beta1')
        _check_range(self._beta2, 0, 1, 'beta2')
        if self._epsilon < 0:
            raise ValueError("Invalid value of epsilon, expect epsilon >= 0.")
        super().__init__(learning_rate, parameters, weight_decay, grad_clip, name)

    def _update(self, p, g, st, lr):
        paddle = _paddle()
        m = st['moment'] * self._beta1 + g * (1 - self._beta1)
        u = paddle.maximum(st['inf_norm'] * self._beta2 + self._epsilon, paddle.abs(g))
        step = lr / (1 - self._beta1 ** self._t)
        return p - (m / u) * step, {'moment': m, 'inf_norm': u}


class Lamb(_ElementwiseOptimizer):
    """m, v as Adam's (bias-corrected); r = m / (sqrt(v) + eps) + wd p;
    p -= lr * (||p|| / ||r||) r  (trust ratio 1 when either norm is 0).
    lamb_weight_decay is skipped for parameters where
    exclude_from_weight_decay_fn(param) is true."""
    _state_names = ('moment1', 'moment2')

    def __init__(self, learning_rate=0.001, lamb_weight_decay=0.01, beta1=0.9, beta2=0.999,
                 epsilon=1e-6, parameters=None, grad_clip=None,
                 exclude_from_weight_decay_fn=None, multi_precision=False,
                 always_adapt=False, name=None):
        self._wd = _scalar(lamb_weight_decay, 'lamb_weight_decay')
        self._beta1 = _scalar(beta1, 'beta1')
        self._beta2 = _scalar(beta2, 'beta2')
        self._epsilon = _scalar(epsilon, 'epsilon')
        self._exclude = exclude_from_weight_decay_fn
        self._always_adapt = bool(always_adapt)
        super().__init__(learning_rate, parameters, None, grad_clip, name)

    def _update(self, p, g, st, lr):
        paddle = _paddle()
        b1, b2, t = self._beta1, self._beta2, self._t
        m = st['moment1'] * b1 + g * (1 - b1)
        v = st['moment2'] * b2 + (g * g) * (1 - b2)
        r = (m / (1 - b1 ** t)) / (paddle.sqrt(v / (1 - b2 ** t)) + self._epsilon)
        excluded = self._exclude is not None and bool(self._exclude(p))
        wd = 0.0 if excluded else self._wd
        if wd:
            r = r + p * wd
        trust = 1.0
        if not excluded or self._always_adapt:
            pn = float(paddle.sqrt((p * p).sum()).item())
            rn = float(paddle.sqrt((r * r).sum()).item())
            trust = pn / rn if pn > 0 and rn > 0 else 1.0
        return p - r * (lr * trust), {'moment1': m, 'moment2': v}


class NAdam(_ElementwiseOptimizer):
    """mu_t = b1 (1 - 0.5 * 0.96^(t psi)); m, v as Adam's;
    m^ = mu_{t+1} m / (1 - prod mu_1..t+1) + (1 - mu_t) g / (1 - prod mu_1..t);
    v^ = v / (1 - b2^t);  p -= lr m^ / (sqrt(v^) + eps)."""
    _state_names = ('moment1', 'moment2')

    def __init__(self, learning_rate=0.002, beta1=0.9, beta2=0.999, epsilon=1.0e-8,
                 momentum_decay=0.004, parameters=None, weight_decay=None, grad_clip=None,
                 name=None):
        self._beta1 = _scalar(beta1, 'beta1')
        self._beta2 = _scalar(beta2, 'beta2')
        self._epsilon = _scalar(epsilon, 'epsilon')
        self._psi = _scalar(momentum_decay, 'momentum_decay')
        _check_range(self._beta1, 0, 1, 'beta1')
        _check_range(self._beta2, 0, 1, 'beta2')
        if self._epsilon < 0 or self._psi < 0:
            raise ValueError("Invalid value of epsilon or momentum_decay, expect >= 0.")
        self._mu_product = {}
        super().__init__(learning_rate, parameters, weight_decay, grad_clip, name)

    def _update(self, p, g, st, lr):
        paddle = _paddle()
        b1, b2, t = self._beta1, self._beta2, self._t
        i = self._cur[0]
        mu_t = b1 * (1 - 0.5 * 0.96 ** (t * self._psi))
        mu_next = b1 * (1 - 0.5 * 0.96 ** ((t + 1) * self._psi))
        prod = self._mu_product.get(i, 1.0) * mu_t
        self._mu_product[i] = prod
        m = st['moment1'] * b1 + g * (1 - b1)
        v = st['moment2'] * b2 + (g * g) * (1 - b2)
        mhat = m * (mu_next / (1 - prod * mu_next)) + g * ((1 - mu_t) / (1 - prod))
        denom = paddle.sqrt(v / (1 - b2 ** t)) + self._epsilon
        return p - (mhat / denom) * lr, {'moment1': m, 'moment2': v}


class RAdam(_ElementwiseOptimizer):
    """Rectified Adam: rho_inf = 2 / (1 - b2) - 1,
    rho_t = rho_inf - 2 t b2^t / (1 - b2^t); when rho_t > 5 the step is
    lr m^ r sqrt(1 - b2^t) / (sqrt(v) + eps) with
    r = sqrt((rho_t - 4)(rho_t - 2) rho_inf / ((rho_inf - 4)(rho_inf - 2) rho_t)),
    else lr m^."""
    _state_names = ('moment1', 'moment2')

    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1.0e-8,
                 parameters=None, weight_decay=None, grad_clip=None, name=None):
        self._beta1 = _scalar(beta1, 'beta1')
        self._beta2 = _scalar(beta2, 'beta2')
        self._epsilon = _scalar(epsilon, 'epsilon')
        _check_range(self._beta1, 0, 1, 'beta1')
        _check_range(self._beta2, 0, 1, 'beta2')
        if self._epsilon < 0:
            raise ValueError("Invalid value of epsilon, expect epsilon >= 0.")
        super().__init__(learning_rate, parameters, weight_decay, grad_clip, name)

    def _update(self, p, g, st, lr):
        paddle = _paddle()
        b1, b2, t = self._beta1, self._beta2, self._t
        m = st['moment1'] * b1 + g * (1 - b1)
        v = st['moment2'] * b2 + (g * g) * (1 - b2)
        mhat = m / (1 - b1 ** t)
        rho_inf = 2 / (1 - b2) - 1
        rho_t = rho_inf - 2 * t * b2 ** t / (1 - b2 ** t)
        if rho_t > 5:
            r = math.sqrt((rho_t - 4) * (rho_t - 2) * rho_inf /
                          ((rho_inf - 4) * (rho_inf - 2) * rho_t))
            step = mhat * (lr * r * math.sqrt(1 - b2 ** t)) / (paddle.sqrt(v) + self._epsilon)
        else:
            step = mhat * lr
        return p - step, {'moment1': m, 'moment2': v}


class ASGD(_ElementwiseOptimizer):
    """Stochastic average gradient: i = m % n; d = d - y_i + g; y_i = g;
    p -= lr (d / min(m + 1, n) + wd p), n = batch_num, m the step count."""
    _state_names = ('d', 'y')
    _fold_weight_decay = False

    def __init__(self, learning_rate=0.001, batch_num=1, parameters=None, weight_decay=None,
                 grad_clip=None, multi_precision=False, name=None):
        if isinstance(batch_num, bool) or not isinstance(batch_num, int) or batch_num < 1:
            raise ValueError("batch_num should be a positive int, got {!r}".format(batch_num))
        if batch_num > 1 << 16:
            raise ValueError("batch_num {} is too large (one saved gradient per batch)"
                             .format(batch_num))
        self._n = batch_num
        super().__init__(learning_rate, parameters, weight_decay, grad_clip, name)

    def _init_state(self, p):
        paddle = _paddle()
        return {'d': paddle.zeros(p.shape, dtype=p.dtype),
                'y': paddle.zeros([self._n] + list(p.shape), dtype=p.dtype)}

    def _state_shape(self, name, p):
        return ([self._n] if name == 'y' else []) + list(p.shape)

    def _update(self, p, g, st, lr):
        m = self._t - 1
        i = m % self._n
        y = st['y']
        d = st['d'] - y[i] + g
        y[i] = g
        upd = d / float(min(m + 1, self._n))
        wd = self._weight_decay or 0.0
        if wd:
            upd = upd + p * wd
        return p - upd * lr, {'d': d, 'y': y}


class Rprop(_ElementwiseOptimizer):
    """Per element: if g_prev * g > 0 the step grows (x eta+, at most the
    range's max), if < 0 it shrinks (x eta-, at least the min) and g is taken
    as 0; p -= sign(g) * step. The steps start at learning_rate."""
    _state_names = ('prev', 'learning_rates')

    def __init__(self, learning_rate=0.001, learning_rate_range=(1e-5, 50), parameters=None,
                 etas=(0.5, 1.2), grad_clip=None, multi_precision=False, name=None):
        lo, hi = (float(v) for v in learning_rate_range)
        em, ep = (float(v) for v in etas)
        if not 0 <= lo <= hi:
            raise ValueError("'0.0 <= learning_rate_range[0] <= learning_rate_range[1]' "
                             "must be true, got {}".format(learning_rate_range))
        if not 0 < em < 1 < ep:
            raise ValueError("'0.0 < etas[0] < 1.0 < etas[1]' must be true, got {}"
                             .format(etas))
        self._range = (lo, hi)
        self._etas = (em, ep)
        super().__init__(learning_rate, parameters, None, grad_clip, name)

    def _init_state(self, p):
        paddle = _paddle()
        return {'prev': paddle.zeros(p.shape, dtype=p.dtype),
                'learning_rates': paddle.full(p.shape, self.get_lr(), dtype=p.dtype)}

    def _update(self, p, g, st, lr):
        paddle = _paddle()
        em, ep = self._etas
        s = st['prev'] * g
        one = paddle.ones_like(g)
        factor = paddle.where(s > 0, one * ep, paddle.where(s < 0, one * em, one))
        lrs = paddle.clip(st['learning_rates'] * factor, self._range[0], self._range[1])
        g = paddle.where(s < 0, paddle.zeros_like(g), g)
        return p - paddle.sign(g) * lrs, {'prev': g, 'learning_rates': lrs}
