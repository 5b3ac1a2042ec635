"""Losses (Paddle's paddle/nn/functional/loss.py)."""
from paddle import _C
from paddle.amp import _state as _amp
from paddle._lazy import forward_to as _forward_to
from ._args import _check_tensor


def _reduction(reduction, fname):
    if reduction not in ('none', 'mean', 'sum'):
        raise ValueError("The value of 'reduction' in {} should be 'sum', 'mean' or 'none', "
                         "but received {}, which is not allowed.".format(fname, reduction))
    return reduction


def _reduce(loss, reduction):
    if reduction == 'mean':
        return _C.mean(loss)
    if reduction == 'sum':
        return _C.sum(loss)
    return loss


def binary_cross_entropy(input, label, weight=None, reduction='mean', name=None):
    _check_tensor(input, 'binary_cross_entropy', 'input')
    _check_tensor(label, 'binary_cross_entropy', 'label')
    _reduction(reduction, 'bce_loss')
    if _amp.ON and _amp.current():
        return _amp.call('bce_loss', _C.binary_cross_entropy, (input, label, weight), reduction)
    return _C.binary_cross_entropy(input, label, weight, reduction)


def binary_cross_entropy_with_logits(logit, label, weight=None, reduction='mean',
                                     pos_weight=None, name=None):
    _check_tensor(logit, 'binary_cross_entropy_with_logits', 'logit')
    _check_tensor(label, 'binary_cross_entropy_with_logits', 'label')
    _reduction(reduction, 'bce_with_logits_loss')
    if _amp.ON and _amp.current():
        return _amp.call('sigmoid_cross_entropy_with_logits', _C.binary_cross_entropy_with_logits,
                         (logit, label, weight, pos_weight), reduction)
    return _C.binary_cross_entropy_with_logits(logit, label, weight, pos_weight, reduction)


def cross_entropy(input, label, weight=None, ignore_index=-100, reduction='mean',
                  soft_label=False, axis=-1, use_softmax=True, label_smoothing=0.0, name=None):
    """Paddle's cross_entropy: logits (use_softmax) or probabilities; hard
    int labels of shape [N] or [N, 1], or soft labels; 0-D for mean/sum."""
    _check_tensor(input, 'cross_entropy', 'input')
    _check_tensor(label, 'cross_entropy', 'label')
    _reduction(reduction, 'softmax_cross_entropy')
    if label_smoothing > 0 and not soft_label and label.dtype.is_floating_point and \
            list(label.shape) == list(input.shape):
        # Paddle: with label_smoothing the labels become soft (one-hot for hard
        # ones); float labels of the input's shape already are, and get smoothed
        soft_label = True
    if _amp.ON and _amp.current():
        return _amp.call(('cross_entropy', 'softmax_with_cross_entropy'), _C.cross_entropy,
                         (input, label, weight), int(ignore_index), reduction,
                         bool(soft_label), int(axis), bool(use_softmax),
                         float(label_smoothing))
    return _C.cross_entropy(input, label, weight, int(ignore_index), reduction,
                            bool(soft_label), int(axis), bool(use_softmax),
                            float(label_smoothing))


def softmax_with_cross_entropy(logits, label, soft_label=False, ignore_index=-100,
                               numeric_stable_mode=True, return_softmax=False, axis=-1):
    if _amp.ON and _amp.current():
        return _amp.call('softmax_with_cross_entropy', softmax_with_cross_entropy, (logits, label),
                         soft_label, ignore_index, numeric_stable_mode, return_softmax, axis)
    loss = _C.cross_entropy(logits, label, None, int(ignore_index), 'none', bool(soft_label),
                            int(axis), True, 0.0)
    if not soft_label and loss.ndim == logits.ndim - 1:
        loss = _C.unsqueeze(loss, int(axis) if axis >= 0 else logits.ndim + axis)
    if return_softmax:
        return loss, _C.softmax(logits, int(axis))
    return loss


def kl_div(input, label, reduction='mean', log_target=False, name=None):
    if reduction not in ('none', 'mean', 'sum', 'batchmean'):
        raise ValueError("reduction should be 'none', 'mean', 'sum' or 'batchmean', got {}"
                         .format(reduction))
    if log_target:
        loss = _C.multiply(_C.exp(label), _C.subtract(label, input))
    else:
        safe = _C.where(_C.greater_than(label, 0.0), label, _C.ones_like(label))
        loss = _C.multiply(label, _C.subtract(_C.log(safe), input))
        loss = _C.where(_C.greater_than(label, 0.0), loss, _C.zeros_like(loss))
    if reduction == 'batchmean':
        return _C.divide(_C.sum(loss), float(input.shape[0]) if input.ndim else 1.0)
    return _reduce(loss, reduction)


def l1_loss(input, label, reduction='mean', name=None):
    _check_tensor(input, 'l1_loss', 'input')
    _check_tensor(label, 'l1_loss', 'label')
    _reduction(reduction, 'L1Loss')
    if _amp.ON and _amp.current():
        return _amp.call('l1_loss', _C.l1_loss, (input, label), reduction)
    return _C.l1_loss(input, label, reduction)


def margin_ranking_loss(input, other, label, margin=0.0, reduction='mean', name=None):
    _reduction(reduction, 'margin_ranking_loss')
    out = _C.add(_C.multiply(_C.neg(label), _C.subtract(input, other)), float(margin))
    return _reduce(_C.relu(out), reduction)


def mse_loss(input, label, reduction='mean', name=None):
    _check_tensor(input, 'mse_loss', 'input')
    _check_tensor(label, 'mse_loss', 'label')
    _reduction(reduction, 'MSELoss')
    if _amp.ON and _amp.current():
        return _amp.call('mse_loss', _C.mse_loss, (input, label), reduction)
    return _C.mse_loss(input, label, reduction)


def nll_loss(input, label, weight=None, ignore_index=-100, reduction='mean', name=None):
    _check_tensor(input, 'nll_loss', 'input')
    _check_tensor(label, 'nll_loss', 'label')
    _reduction(reduction, 'nll_loss')
    if _amp.ON and _amp.current():
        return _amp.call('nll_loss', _C.nll_loss, (input, label, weight), int(ignore_index),
                         reduction)
    return _C.nll_loss(input, label, weight, int(ignore_index), reduction)


def sigmoid_focal_loss(logit, label, normalizer=None, alpha=0.25, gamma=2.0,
                       reduction='sum', name=None):
    _reduction(reduction, 'sigmoid_focal_loss')
    p = _C.sigmoid(logit)
    ce = _C.binary_cross_entropy_with_logits(logit, label, None, None, 'none')
    p_t = _C.add(_C.multiply(p, label), _C.multiply(_C.subtract(1.0, p), _C.subtract(1.0, label)))
    loss = _C.multiply(ce, _C.pow(_C.subtract(1.0, p_t), float(gamma)))
    if alpha >= 0:
        a_t = _C.add(_C.multiply(label, float(alpha)),
                     _C.multiply(_C.subtract(1.0, label), 1.0 - float(alpha)))
        loss = _C.multiply(a_t, loss)
    if normalizer is not None:
        loss = _C.divide(loss, normalizer)
    return _reduce(loss, reduction)


def smooth_l1_loss(input, label, reduction='mean', delta=1.0, name=None):
    _reduction(reduction, 'smooth_l1_loss')
    if _amp.ON and _amp.current():
        return _amp.call('huber_loss', smooth_l1_loss, (input, label), reduction, delta)
    d = float(delta)
    diff = _C.abs(_C.subtract(input, label))
    quad = _C.multiply(_C.square(diff), 0.5)
    lin = _C.multiply(_C.subtract(diff, 0.5 * d), d)
    return _reduce(_C.where(_C.less_than(diff, d), quad, lin), reduction)


def square_error_cost(input, label):
    return _C.square(_C.subtract(input, label))


# This module held every function of paddle.nn.functional before the package followed
# Paddle's module layout; those names still import from here.
__getattr__ = _forward_to(__name__, 'paddle.nn.functional')
