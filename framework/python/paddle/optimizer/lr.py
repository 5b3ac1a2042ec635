"""paddle.optimizer.lr: learning-rate schedulers (Paddle 3.x semantics).

A scheduler is a scalar state machine: the constructor steps once from
last_epoch -1 (so last_epoch is 0 and last_lr the epoch-0 rate), step()
advances one epoch, step(epoch) jumps. An optimizer given a scheduler as
learning_rate reads scheduler() before every update; in a manual loop the
user calls scheduler.step(), paddle.Model.fit steps it after every batch.
Users subclass LRScheduler and override get_lr().
"""
import math
import numbers
import warnings

__all__ = [
    'LRScheduler', 'NoamDecay', 'PiecewiseDecay', 'NaturalExpDecay', 'InverseTimeDecay',
    'PolynomialDecay', 'LinearWarmup', 'ExponentialDecay', 'MultiStepDecay', 'StepDecay',
    'LambdaDecay', 'ReduceOnPlateau', 'CosineAnnealingDecay', 'MultiplicativeDecay',
]


def _check_number(name, v):
    if isinstance(v, bool) or not isinstance(v, numbers.Real):
        raise TypeError("The type of '{}' must be float or int, but received {}"
                        .format(name, type(v)))
    if not math.isfinite(float(v)):
        raise ValueError("'{}' must be finite, got {}".format(name, v))
    return float(v)


class LRScheduler:
    """Base class: subclasses implement get_lr() from self.last_epoch and
    self.base_lr."""

    def __init__(self, learning_rate=0.1, last_epoch=-1, verbose=False):
        self.base_lr = _check_number('learning_rate', learning_rate)
        self.last_lr = self.base_lr
        self.last_epoch = last_epoch
        self.verbose = verbose
        self._var_name = None
        self.step()

    def __call__(self):
        return self.last_lr

    def step(self, epoch=None):
        if epoch is None:
            self.last_epoch += 1
            self.last_lr = self.get_lr()
        else:
            self.last_epoch = epoch
            if hasattr(self, '_get_closed_form_lr'):
                self.last_lr = self._get_closed_form_lr()
            else:
                self.last_lr = self.get_lr()
        if self.verbose:
            print('Epoch {}: {} set learning rate to {}.'.format(
                self.last_epoch, self.__class__.__name__, self.last_lr))

    def state_dict(self):
        self.state_keys()
        out = {}
        for k in self.keys:
            if k not in self.__dict__:
                continue
            v = self.__dict__[k]
            if hasattr(v, 'numpy') and hasattr(v, 'shape'):
                v = float(v)
            out[k] = v
        return out

    def state_keys(self):
        self.keys = ['last_epoch', 'last_lr']

    def set_state_dict(self, state_dict):
        self.state_keys()
        for k in self.keys:
            if k in state_dict:
                self.__dict__[k] = state_dict[k]
            else:
                raise RuntimeError(
                    "Please check whether state_dict is correct for optimizer. Can't find [ {} ] "
                    "in state_dict".format(k))
        if len(state_dict) > len(self.keys):
            warnings.warn("There are some unused values in state_dict. Maybe the optimizer have "
                          "different 'LearningRateDecay' when invoking state_dict and "
                          "set_dict")

    set_dict = set_state_dict

    def get_lr(self):
        raise NotImplementedError


class NoamDecay(LRScheduler):
    def __init__(self, d_model, warmup_steps, learning_rate=1.0, last_epoch=-1, verbose=False):
        if d_model <= 0:
            raise ValueError("d_model should be grater than 0")
        self.d_model = d_model
        self.warmup_steps = warmup_steps
        super().__init__(learning_rate, last_epoch, verbose)

    def get_lr(self):
        if self.last_epoch == 0:
            a = 1
        else:
            a = self.last_epoch ** -0.5
        b = self.warmup_steps ** -1.5 * self.last_epoch
        return self.base_lr * (self.d_model ** -0.5) * min(a, b)


class PiecewiseDecay(LRScheduler):
    """lr = values[i] for the first boundary with epoch < boundaries[i]."""

    def __init__(self, boundaries, values, last_epoch=-1, verbose=False):
        boundaries = list(boundaries)
        values = list(values)
        if len(values) != len(boundaries) + 1:
            raise ValueError("The length of values should be len(boundaries) + 1, got {} and {}"
                             .format(len(values), len(boundaries)))
        for i in range(1, len(boundaries)):
            if boundaries[i] <= boundaries[i - 1]:
                raise ValueError("boundaries must be strictly increasing")
        self.boundaries = boundaries
        self.values = [float(v) for v in values]
        super().__init__(last_epoch=last_epoch, verbose=verbose)

    def get_lr(self):
        for i, b in enumerate(self.boundaries):
            if self.last_epoch < b:
                return self.values[i]
        return self.values[len(self.values) - 1]


class NaturalExpDecay(LRScheduler):
    def __init__(self, learning_rate, gamma, last_epoch=-1, verbose=False):
        self.gamma = _check_number('gamma', gamma)
        super().__init__(learning_rate, last_epoch, verbose)

    def get_lr(self):
        return self.base_lr * math.exp(-1 * self.gamma * self.last_epoch)


class InverseTimeDecay(LRScheduler):
    def __init__(self, learning_rate, gamma, last_epoch=-1, verbose=False):
        self.gamma = _check_number('gamma', gamma)
        super().__init__(learning_rate, last_epoch, verbose)

    def get_lr(self):
        return self.base_lr / (1 + self.gamma * self.last_epoch)


class PolynomialDecay(LRScheduler):
    def __init__(self, learning_rate, decay_steps, end_lr=0.0001, power=1.0, cycle=False,
                 last_epoch=-1, verbose=False):
        if not isinstance(decay_steps, numbers.Integral) or decay_steps <= 0:
            raise ValueError("decay_steps should be a positive integer")
        self.decay_steps = decay_steps
        self.end_lr = float(end_lr)
        self.power = float(power)
        self.cycle = cycle
        super().__init__(learning_rate, last_epoch, verbose)

    def get_lr(self):
        t = self.last_epoch
        steps = self.decay_steps
        if self.cycle:
            div = math.ceil(t / float(steps))
            if t == 0:
                div = 1
            steps = steps * div
        else:
            t = min(t, steps)
        return (self.base_lr - self.end_lr) * ((1 - float(t) / float(steps)) ** self.power) + \
            self.end_lr


class LinearWarmup(LRScheduler):
    """Linear ramp start_lr -> end_lr over warmup_steps, then learning_rate
    (a float or a scheduler stepped to epoch - warmup_steps)."""

    def __init__(self, learning_rate, warmup_steps, start_lr, end_lr, last_epoch=-1,
                 verbose=False):
        if not isinstance(learning_rate, (numbers.Real, LRScheduler)) or \
                isinstance(learning_rate, bool):
            raise TypeError("the type of learning_rate should be [int, float or LRScheduler], "
                            "the current type is {}".format(learning_rate))
        if not isinstance(warmup_steps, numbers.Integral) or warmup_steps <= 0:
            raise ValueError("warmup_steps should be a positive integer, got {}"
                             .format(warmup_steps))
        self.learning_rate = learning_rate
        self.warmup_steps = warmup_steps
        self.start_lr = float(start_lr)
        self.end_lr = float(end_lr)
        if end_lr <= start_lr:
            raise ValueError("end_lr {} must be greater than start_lr {}".format(end_lr, start_lr))
        super().__init__(start_lr, last_epoch, verbose)

    def state_dict(self):
        d = super().state_dict()
        if isinstance(self.learning_rate, LRScheduler):
            d["LinearWarmup_LR"] = self.learning_rate.state_dict()
        return d

    def set_state_dict(self, state_dict):
        state_dict = dict(state_dict)
        inner = state_dict.pop("LinearWarmup_LR", None)
        super().set_state_dict(state_dict)
        if isinstance(self.learning_rate, LRScheduler) and inner is not None:
            self.learning_rate.set_state_dict(inner)

    def get_lr(self):
        if self.last_epoch < self.warmup_steps:
            return (self.end_lr - self.start_lr) * float(self.last_epoch) / \
                float(self.warmup_steps) + self.start_lr
        if isinstance(self.learning_rate, LRScheduler):
            self.learning_rate.step(self.last_epoch - self.warmup_steps)
            return self.learning_rate()
        return float(self.learning_rate)


class ExponentialDecay(LRScheduler):
    """lr = base * gamma ** epoch."""

    def __init__(self, learning_rate, gamma, last_epoch=-1, verbose=False):
        self.gamma = _check_number('gamma', gamma)
        if not 0.0 < self.gamma < 1.0:
            raise ValueError("gamma should be in interval (0.0, 1.0), got {}".format(gamma))
        super().__init__(learning_rate, last_epoch, verbose)

    def get_lr(self):
        return self.base_lr * (self.gamma ** self.last_epoch)


class MultiStepDecay(LRScheduler):
    def __init__(self, learning_rate, milestones, gamma=0.1, last_epoch=-1, verbose=False):
        milestones = list(milestones)
        if not all(milestones[i] < milestones[i + 1] for i in range(len(milestones) - 1)):
            raise ValueError("The elements of milestones must be incremented")
        if gamma >= 1.0:
            raise ValueError("gamma should be < 1.0.")
        self.milestones = milestones
        self.gamma = float(gamma)
        super().__init__(learning_rate, last_epoch, verbose)

    def get_lr(self):
        for i, m in enumerate(self.milestones):
            if self.last_epoch < m:
                return self.base_lr * (self.gamma ** i)
        return self.base_lr * (self.gamma ** len(self.milestones))


class StepDecay(LRScheduler):
    """lr = base * gamma ** (epoch // step_size)."""

    def __init__(self, learning_rate, step_size, gamma=0.1, last_epoch=-1, verbose=False):
        if not isinstance(step_size, numbers.Integral) or isinstance(step_size, bool):
            raise TypeError("The type of 'step_size' must be 'int', but received {}"
                            .format(type(step_size)))
        if step_size <= 0:
            raise ValueError("step_size should be a positive integer, got {}".format(step_size))
        if gamma >= 1.0:
            raise ValueError("gamma should be < 1.0.")
        self.step_size = step_size
        self.gamma = float(gamma)
        super().__init__(learning_rate, last_epoch, verbose)

    def get_lr(self):
        return self.base_lr * (self.gamma ** (self.last_epoch // self.step_size))


class LambdaDecay(LRScheduler):
    def __init__(self, learning_rate, lr_lambda, last_epoch=-1, verbose=False):
        if not callable(lr_lambda):
            raise TypeError("The type of 'lr_lambda' in 'LambdaDecay' must be 'function', "
                            "but received {}".format(type(lr_lambda)))
        self.lr_lambda = lr_lambda
        super().__init__(learning_rate, last_epoch, verbose)

    def get_lr(self):
        return self.base_lr * self.lr_lambda(self.last_epoch)


class MultiplicativeDecay(LRScheduler):
    def __init__(self, learning_rate, lr_lambda, last_epoch=-1, verbose=False):
        if not callable(lr_lambda):
            raise TypeError("lr_lambda must be callable")
        self.lr_lambda = lr_lambda
        super().__init__(learning_rate, last_epoch, verbose)

    def get_lr(self):
        cur = self.base_lr
        for epoch in range(1, self.last_epoch + 1):
            cur = cur * self.lr_lambda(epoch)
        return cur


class CosineAnnealingDecay(LRScheduler):
    """Paddle's recursive cosine annealing on step(); closed form on step(epoch)."""

    def __init__(self, learning_rate, T_max, eta_min=0, last_epoch=-1, verbose=False):
        if not isinstance(T_max, numbers.Integral) or isinstance(T_max, bool):
            raise TypeError("The type of 'T_max' in 'CosineAnnealingDecay' must be 'int', "
                            "but received {}".format(type(T_max)))
        if T_max <= 0:
            raise ValueError("T_max should be a positive integer, got {}".format(T_max))
        self.T_max = T_max
        self.eta_min = _check_number('eta_min', eta_min)
        super().__init__(learning_rate, last_epoch, verbose)

    def get_lr(self):
        if self.last_epoch == 0:
            return self.base_lr
        if (self.last_epoch - 1 - self.T_max) % (2 * self.T_max) == 0:
            return self.last_lr + (self.base_lr - self.eta_min) * \
                (1 - math.cos(math.pi / self.T_max)) / 2
        return (1 + math.cos(math.pi * self.last_epoch / self.T_max)) / \
            (1 + math.cos(math.pi * (self.last_epoch - 1) / self.T_max)) * \
            (self.last_lr - self.eta_min) + self.eta_min

    def _get_closed_form_lr(self):
        return self.eta_min + (self.base_lr - self.eta_min) * \
            (1 + math.cos(math.pi * self.last_epoch / self.T_max)) / 2


class ReduceOnPlateau(LRScheduler):
    """Reduce the lr by factor when `metrics` passed to step() stops improving."""

    def __init__(self, learning_rate, mode='min', factor=0.1, patience=10, threshold=1e-4,
                 threshold_mode='rel', cooldown=0, min_lr=0, epsilon=1e-8, verbose=False):
        mode = mode.lower()
        if mode not in ('min', 'max'):
            raise ValueError('mode: ' + mode + ' is unknown!')
        if factor >= 1.0:
            raise ValueError('new_lr = origin_lr * gamma and gamma should be < 1.0.')
        threshold_mode = threshold_mode.lower()
        if threshold_mode not in ('rel', 'abs'):
            raise ValueError('threshold mode: ' + threshold_mode + ' is unknown!')
        self.mode = mode
        self.factor = float(factor)
        self.patience = patience
        self.threshold = threshold
        self.threshold_mode = threshold_mode
        self.cooldown = cooldown
        self.min_lr = float(min_lr)
        self.epsilon = epsilon
        self.cooldown_counter = 0
        self.best = None
        self.num_bad_epochs = 0
        self.base_lr = _check_number('learning_rate', learning_rate)
        self.last_lr = self.base_lr
        self.last_epoch = 0
        self.verbose = verbose
        self._var_name = None

    def state_keys(self):
        self.keys = ['cooldown_counter', 'best', 'num_bad_epochs', 'last_epoch', 'last_lr']

    def step(self, metrics, epoch=None):
        if epoch is None:
            self.last_epoch = self.last_epoch + 1
        else:
            self.last_epoch = epoch
        if hasattr(metrics, 'numpy'):
            metrics = float(metrics)
        current = float(metrics)
        if self.cooldown_counter > 0:
            self.cooldown_counter -= 1
            return
        if self.best is None or self._is_better(current, self.best):
            self.best = current
            self.num_bad_epochs = 0
        else:
            self.num_bad_epochs += 1
        if self.num_bad_epochs > self.patience:
            self.cooldown_counter = self.cooldown
            self.num_bad_epochs = 0
            new_lr = max(self.last_lr * self.factor, self.min_lr)
            if self.last_lr - new_lr > self.epsilon:
                self.last_lr = new_lr
                if self.verbose:
                    print('Epoch {}: {} set learning rate to {}.'.format(
                        self.last_epoch, self.__class__.__name__, self.last_lr))

    def _is_better(self, current, best):
        if self.mode == 'min' and self.threshold_mode == 'rel':
            return current < best - best * self.threshold
        if self.mode == 'min' and self.threshold_mode == 'abs':
            return current < best - self.threshold
        if self.mode == 'max' and self.threshold_mode == 'rel':
            return current > best + best * self.threshold
        return current > best + self.threshold
