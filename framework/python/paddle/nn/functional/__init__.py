"""paddle.nn.functional: stateless neural-network functions.

Each function checks and normalises Paddle's argument forms (int or list
kernel sizes, 'SAME'/'VALID' padding, data_format) and calls one fused C op
of paddle._C (fw/nn.h); composite activations are built from C ops.
"""
import numbers

import numpy as np

from paddle import _C

__all__ = [
    'relu', 'relu_', 'relu6', 'sigmoid', 'tanh', 'tanh_', 'softmax', 'softmax_', 'log_softmax',
    'gelu', 'leaky_relu', 'elu', 'selu', 'celu', 'silu', 'swish', 'mish', 'softplus',
    'softsign', 'softshrink', 'hardshrink', 'hardswish', 'hardsigmoid', 'hardtanh',
    'tanhshrink', 'log_sigmoid', 'prelu', 'glu', 'cross_entropy',
    'softmax_with_cross_entropy', 'mse_loss', 'l1_loss', 'nll_loss', 'binary_cross_entropy',
    'binary_cross_entropy_with_logits', 'smooth_l1_loss', 'kl_div', 'margin_ranking_loss',
    'dropout', 'dropout2d', 'alpha_dropout', 'one_hot', 'linear', 'conv1d', 'conv2d',
    'max_pool1d', 'max_pool2d', 'avg_pool1d', 'avg_pool2d', 'adaptive_avg_pool1d',
    'adaptive_avg_pool2d', 'adaptive_max_pool2d', 'batch_norm', 'layer_norm', 'embedding',
    'pad', 'normalize', 'cosine_similarity', 'label_smooth', 'square_error_cost',
    'sigmoid_focal_loss', 'flatten', 'pairwise_distance',
]


def _paddle():
    import paddle
    return paddle


def _check_tensor(x, fname, argname='x'):
    paddle = _paddle()
    if not isinstance(x, paddle.Tensor):
        raise TypeError("{}: {} must be a Tensor, got {}".format(fname, argname,
                                                               type(x).__name__))


def _reduction(reduction, fname):
    if reduction not in ('none', 'mean', 'sum'):
        raise ValueError("The value of 'reduction' in {} should be 'sum', 'mean' or 'none', "
                         "but received {}, which is not allowed.".format(fname, reduction))
    return reduction


# ---- activations ----------------------------------------------------------------
def relu(x, name=None):
    _check_tensor(x, 'relu')
    return _C.relu(x)


def relu_(x, name=None):
    out = relu(x)
    x._share(out)
    return x


def relu6(x, name=None):
    return _C.clip(x, 0.0, 6.0)


def sigmoid(x, name=None):
    _check_tensor(x, 'sigmoid')
    return _C.sigmoid(x)


def tanh(x, name=None):
    _check_tensor(x, 'tanh')
    return _C.tanh(x)


def tanh_(x, name=None):
    out = tanh(x)
    x._share(out)
    return x


def _cast_for(x, dtype):
    if dtype is None:
        return x
    return _C.cast(x, dtype)


def softmax(x, axis=-1, dtype=None, name=None):
    _check_tensor(x, 'softmax')
    return _C.softmax(_cast_for(x, dtype), int(axis))


def softmax_(x, axis=-1, dtype=None, name=None):
    out = softmax(x, axis, dtype)
    x._share(out)
    return x


def log_softmax(x, axis=-1, dtype=None, name=None):
    _check_tensor(x, 'log_softmax')
    return _C.log_softmax(_cast_for(x, dtype), int(axis))


def gelu(x, approximate=False, name=None):
    _check_tensor(x, 'gelu')
    return _C.gelu(x, bool(approximate))


def leaky_relu(x, negative_slope=0.01, name=None):
    _check_tensor(x, 'leaky_relu')
    return _C.leaky_relu(x, float(negative_slope))


def elu(x, alpha=1.0, name=None):
    neg = _C.multiply(_C.subtract(_C.exp(_C.minimum(x, 0.0)), 1.0), float(alpha))
    return _C.where(_C.greater_than(x, 0.0), x, neg)


def celu(x, alpha=1.0, name=None):
    a = float(alpha)
    neg = _C.multiply(_C.subtract(_C.exp(_C.divide(_C.minimum(x, 0.0), a)), 1.0), a)
    return _C.add(_C.maximum(x, 0.0), _C.minimum(neg, 0.0))


def selu(x, scale=1.0507009873554804934193349852946,
         alpha=1.6732632423543772848170429916717, name=None):
    return _C.multiply(elu(x, alpha), float(scale))


def silu(x, name=None):
    return _C.silu(x)


def swish(x, name=None):
    return _C.silu(x)


def softplus(x, beta=1, threshold=20, name=None):
    b = float(beta)
    bx = _C.multiply(x, b)
    # log(1 + exp(bx)) / b computed stably: max(bx,0) + log(1 + exp(-|bx|))
    soft = _C.divide(_C.add(_C.maximum(bx, 0.0),
                            _C.log(_C.add(_C.exp(_C.neg(_C.abs(bx))), 1.0))), b)
    return _C.where(_C.greater_than(bx, float(threshold)), x, soft)


def mish(x, name=None):
    return _C.multiply(x, _C.tanh(softplus(x)))


def softsign(x, name=None):
    return _C.divide(x, _C.add(_C.abs(x), 1.0))


def softshrink(x, threshold=0.5, name=None):
    t = float(threshold)
    return _C.where(_C.greater_than(x, t), _C.subtract(x, t),
                    _C.where(_C.less_than(x, -t), _C.add(x, t), _C.multiply(x, 0.0)))


def hardshrink(x, threshold=0.5, name=None):
    t = float(threshold)
    keep = _C.logical_or(_C.greater_than(x, t), _C.less_than(x, -t))
    return _C.where(keep, x, _C.multiply(x, 0.0))


def hardsigmoid(x, slope=0.1666667, offset=0.5, name=None):
    return _C.clip(_C.add(_C.multiply(x, float(slope)), float(offset)), 0.0, 1.0)


def hardswish(x, name=None):
    return _C.divide(_C.multiply(x, _C.clip(_C.add(x, 3.0), 0.0, 6.0)), 6.0)


def hardtanh(x, min=-1.0, max=1.0, name=None):
    return _C.clip(x, float(min), float(max))


def tanhshrink(x, name=None):
    return _C.subtract(x, _C.tanh(x))


def log_sigmoid(x, name=None):
    # -softplus(-x)
    return _C.neg(softplus(_C.neg(x)))


def prelu(x, weight, data_format='NCHW', name=None):
    w = weight
    if weight.shape != [1] and x.ndim >= 2:
        shape = [1] * x.ndim
        ch = 1 if data_format.startswith('NC') else x.ndim - 1
        shape[ch] = weight.shape[0]
        w = _C.reshape(weight, shape)
    return _C.where(_C.greater_than(x, 0.0), x, _C.multiply(x, w))


def glu(x, axis=-1, name=None):
    a, b = _C.split(x, 2, int(axis))
    return _C.multiply(a, _C.sigmoid(b))


# ---- losses ---------------------------------------------------------------------
def cross_entropy(input, label, weight=None, ignore_index=-100, reduction='mean',
                  soft_label=False, axis=-1, use_softmax=True, label_smoothing=0.0, name=None):
    """Paddle's cross_entropy: logits (use_softmax) or probabilities; hard
    int labels of shape [N] or [N, 1], or soft labels; 0-D for mean/sum."""
    _check_tensor(input, 'cross_entropy', 'input')
    _check_tensor(label, 'cross_entropy', 'label')
    _reduction(reduction, 'softmax_cross_entropy')
    return _C.cross_entropy(input, label, weight, int(ignore_index), reduction,
                            bool(soft_label), int(axis), bool(use_softmax),
                            float(label_smoothing))


def softmax_with_cross_entropy(logits, label, soft_label=False, ignore_index=-100,
                               numeric_stable_mode=True, return_softmax=False, axis=-1):
    loss = _C.cross_entropy(logits, label, None, int(ignore_index), 'none', bool(soft_label),
                            int(axis), True, 0.0)
    if not soft_label and loss.ndim == logits.ndim - 1:
        loss = _C.unsqueeze(loss, int(axis) if axis >= 0 else logits.ndim + axis)
    if return_softmax:
        return loss, _C.softmax(logits, int(axis))
    return loss


def mse_loss(input, label, reduction='mean', name=None):
    _check_tensor(input, 'mse_loss', 'input')
    _check_tensor(label, 'mse_loss', 'label')
    _reduction(reduction, 'MSELoss')
    return _C.mse_loss(input, label, reduction)


def square_error_cost(input, label):
    return _C.square(_C.subtract(input, label))


def l1_loss(input, label, reduction='mean', name=None):
    _check_tensor(input, 'l1_loss', 'input')
    _check_tensor(label, 'l1_loss', 'label')
    _reduction(reduction, 'L1Loss')
    return _C.l1_loss(input, label, reduction)


def nll_loss(input, label, weight=None, ignore_index=-100, reduction='mean', name=None):
    _check_tensor(input, 'nll_loss', 'input')
    _check_tensor(label, 'nll_loss', 'label')
    _reduction(reduction, 'nll_loss')
    return _C.nll_loss(input, label, weight, int(ignore_index), reduction)


def binary_cross_entropy(input, label, weight=None, reduction='mean', name=None):
    _check_tensor(input, 'binary_cross_entropy', 'input')
    _check_tensor(label, 'binary_cross_entropy', 'label')
    _reduction(reduction, 'bce_loss')
    return _C.binary_cross_entropy(input, label, weight, reduction)


def binary_cross_entropy_with_logits(logit, label, weight=None, reduction='mean',
                                     pos_weight=None, name=None):
    _check_tensor(logit, 'binary_cross_entropy_with_logits', 'logit')
    _check_tensor(label, 'binary_cross_entropy_with_logits', 'label')
    _reduction(reduction, 'bce_with_logits_loss')
    return _C.binary_cross_entropy_with_logits(logit, label, weight, pos_weight, reduction)


def _reduce(loss, reduction):
    if reduction == 'mean':
        return _C.mean(loss)
    if reduction == 'sum':
        return _C.sum(loss)
    return loss


def smooth_l1_loss(input, label, reduction='mean', delta=1.0, name=None):
    _reduction(reduction, 'smooth_l1_loss')
    d = float(delta)
    diff = _C.abs(_C.subtract(input, label))
    quad = _C.multiply(_C.square(diff), 0.5)
    lin = _C.multiply(_C.subtract(diff, 0.5 * d), d)
    return _reduce(_C.where(_C.less_than(diff, d), quad, lin), reduction)


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


def margin_ranking_loss(input, other, label, margin=0.0, reduction='mean', name=None):
    _reduction(reduction, 'margin_ranking_loss')
    out = _C.add(_C.multiply(_C.neg(label), _C.subtract(input, other)), float(margin))
    return _reduce(_C.relu(out), reduction)


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


# ---- dropout / one_hot / linear / embedding -----------------------------------------
def dropout(x, p=0.5, axis=None, training=True, mode='upscale_in_train', name=None):
    """Drop elements with probability p; Paddle's modes upscale_in_train
    (default) and downscale_in_infer. axis drops whole slices along it."""
    _check_tensor(x, 'dropout')
    if isinstance(p, bool) or not isinstance(p, numbers.Real):
        raise TypeError("p argument should be a number")
    if p < 0 or p > 1:
        raise ValueError("p argument should between 0 and 1, got {}".format(p))
    if mode not in ('downscale_in_infer', 'upscale_in_train'):
        raise ValueError("mode argument should be 'downscale_in_infer' or 'upscale_in_train'")
    if axis is None:
        return _C.dropout(x, float(p), bool(training), mode)
    axes = [axis] if isinstance(axis, int) else list(axis)
    axes = [a + x.ndim if a < 0 else a for a in axes]
    if not training:
        return x if mode == 'upscale_in_train' else _C.multiply(x, 1.0 - float(p))
    if p == 0:
        return x
    mshape = [x.shape[i] if i in axes else 1 for i in range(x.ndim)]
    keep = _C.cast(_C.greater_equal(_C.rand(mshape, 'float32'), float(p)), x.dtype)
    out = _C.multiply(x, keep)
    if mode == 'upscale_in_train':
        out = _C.divide(out, 1.0 - float(p)) if p < 1 else _C.multiply(out, 0.0)
    return out


def dropout2d(x, p=0.5, training=True, data_format='NCHW', name=None):
    return dropout(x, p, axis=[0, 1] if data_format == 'NCHW' else [0, 3], training=training)


def alpha_dropout(x, p=0.5, training=True, name=None):
    if not training or p == 0:
        return x
    alpha = 1.6732632423543772848170429916717
    scale = 1.0507009873554804934193349852946
    alpha_p = -alpha * scale
    a = ((1 - p) * (1 + p * alpha_p ** 2)) ** -0.5
    b = -a * alpha_p * p
    keep = _C.cast(_C.greater_equal(_C.rand(x.shape, 'float32'), float(p)), x.dtype)
    y = _C.add(_C.multiply(x, keep), _C.multiply(_C.subtract(1.0, keep), alpha_p))
    return _C.add(_C.multiply(y, a), b)


def one_hot(x, num_classes, name=None):
    _check_tensor(x, 'one_hot')
    return _C.one_hot(x, int(num_classes))


def label_smooth(label, prior_dist=None, epsilon=0.1, name=None):
    n = label.shape[-1]
    if prior_dist is None:
        return _C.add(_C.multiply(label, 1.0 - float(epsilon)), float(epsilon) / n)
    return _C.add(_C.multiply(label, 1.0 - float(epsilon)),
                  _C.multiply(prior_dist, float(epsilon)))


def linear(x, weight, bias=None, name=None):
    """x @ weight + bias with weight [in, out]."""
    _check_tensor(x, 'linear')
    return _C.linear(x, weight, bias)


def embedding(x, weight, padding_idx=None, max_norm=None, norm_type=2.0, sparse=False,
              scale_grad_by_freq=False, name=None):
    _check_tensor(x, 'embedding')
    if padding_idx is not None:
        v = weight.shape[0]
        if padding_idx >= v or padding_idx < -v:
            raise ValueError("padding_idx must be within [-{}, {})".format(v, v))
    return _C.embedding(x, weight, padding_idx)


def flatten(x, start_axis=0, stop_axis=-1, name=None):
    return _C.flatten(x, int(start_axis), int(stop_axis))


# ---- convolution / pooling --------------------------------------------------------
def _ntuple(v, n, what):
    if isinstance(v, numbers.Integral):
        return [int(v)] * n
    v = [int(i) for i in v]
    if len(v) == 1:
        return v * n
    if len(v) != n:
        raise ValueError("{} should be an int or a list of {} ints, got {}".format(what, n, v))
    return v


def _conv_padding(padding, nd, ksize, stride, dilation, spatial, fname):
    """Paddle padding forms -> flat [before0, after0, before1, after1, ...]."""
    if isinstance(padding, str):
        p = padding.upper()
        if p == 'VALID':
            return [0] * (2 * nd)
        if p == 'SAME':
            out = []
            for i in range(nd):
                o = (spatial[i] + stride[i] - 1) // stride[i]
                eff = dilation[i] * (ksize[i] - 1) + 1
                total = max((o - 1) * stride[i] + eff - spatial[i], 0)
                out += [total // 2, total - total // 2]
            return out
        raise ValueError("{}: padding should be 'SAME' or 'VALID' when it is a string, got {}"
                         .format(fname, padding))
    if isinstance(padding, numbers.Integral):
        return [int(padding)] * (2 * nd)
    padding = list(padding)
    if padding and isinstance(padding[0], (list, tuple)):
        # [[0,0],[0,0],[pt,pb],[pl,pr]] (NCHW)
        pairs = [list(p) for p in padding]
        if len(pairs) == nd + 2:
            pairs = pairs[2:]
        if len(pairs) != nd:
            raise ValueError("{}: bad padding {}".format(fname, padding))
        return [int(v) for pair in pairs for v in pair]
    if len(padding) == nd:
        return [int(v) for v in padding for _ in range(2)]
    if len(padding) == 2 * nd:
        return [int(v) for v in padding]
    if len(padding) == 1:
        return [int(padding[0])] * (2 * nd)
    raise ValueError("{}: padding should be an int, a list of {} or {} ints, got {}".format(
        fname, nd, 2 * nd, padding))


def _to_nchw(x, data_format, nd):
    if data_format in ('NCHW', 'NCL', 'NCDHW'):
        return x, False
    if data_format in ('NHWC', 'NLC', 'NDHWC'):
        perm = [0, x.ndim - 1] + list(range(1, x.ndim - 1))
        return _C.transpose(x, perm), True
    raise ValueError("data_format should be NCHW/NHWC (or NCL/NLC), got {}".format(data_format))


def _from_nchw(x, moved):
    if not moved:
        return x
    perm = [0] + list(range(2, x.ndim)) + [1]
    return _C.transpose(x, perm)


def conv2d(x, weight, bias=None, stride=1, padding=0, dilation=1, groups=1,
           data_format='NCHW', name=None):
    """x [N, C, H, W], weight [OC, C/groups, KH, KW] -> [N, OC, OH, OW]."""
    _check_tensor(x, 'conv2d')
    if x.ndim != 4:
        raise ValueError("conv2d: x must be 4-D [N, C, H, W], got {}".format(list(x.shape)))
    x, moved = _to_nchw(x, data_format, 2)
    stride = _ntuple(stride, 2, 'stride')
    dilation = _ntuple(dilation, 2, 'dilation')
    ks = list(weight.shape[2:])
    pad = _conv_padding(padding, 2, ks, stride, dilation, x.shape[2:], 'conv2d')
    out = _C.conv2d(x, weight, bias, stride, pad, dilation, int(groups))
    return _from_nchw(out, moved)


def conv1d(x, weight, bias=None, stride=1, padding=0, dilation=1, groups=1,
           data_format='NCL', name=None):
    _check_tensor(x, 'conv1d')
    if x.ndim != 3:
        raise ValueError("conv1d: x must be 3-D [N, C, L], got {}".format(list(x.shape)))
    x, moved = _to_nchw(x, data_format, 1)
    s = _ntuple(stride, 1, 'stride')
    d = _ntuple(dilation, 1, 'dilation')
    pad = _conv_padding(padding, 1, [weight.shape[2]], s, d, x.shape[2:], 'conv1d')
    out = _C.conv1d(x, weight, bias, s[0], pad, d[0], int(groups))
    return _from_nchw(out, moved)


def _pool_padding(padding, nd, ksize, stride, spatial, fname):
    pad = _conv_padding(padding, nd, ksize, stride, [1] * nd, spatial, fname)
    sym = []
    for i in range(nd):
        if pad[2 * i] != pad[2 * i + 1]:
            raise NotImplementedError("{}: asymmetric padding {} is not supported".format(
                fname, pad))
        sym.append(pad[2 * i])
    return sym


def max_pool2d(x, kernel_size, stride=None, padding=0, return_mask=False, ceil_mode=False,
               data_format='NCHW', name=None):
    _check_tensor(x, 'max_pool2d')
    if x.ndim != 4:
        raise ValueError("max_pool2d: x must be 4-D [N, C, H, W], got {}".format(list(x.shape)))
    x, moved = _to_nchw(x, data_format, 2)
    k = _ntuple(kernel_size, 2, 'kernel_size')
    s = k if stride is None else _ntuple(stride, 2, 'stride')
    pad = _pool_padding(padding, 2, k, s, x.shape[2:], 'max_pool2d')
    r = _C.max_pool2d(x, k, s, pad, bool(ceil_mode), bool(return_mask))
    if return_mask:
        return _from_nchw(r[0], moved), _from_nchw(r[1], moved)
    return _from_nchw(r, moved)


def avg_pool2d(x, kernel_size, stride=None, padding=0, ceil_mode=False, exclusive=True,
               divisor_override=None, data_format='NCHW', name=None):
    _check_tensor(x, 'avg_pool2d')
    if x.ndim != 4:
        raise ValueError("avg_pool2d: x must be 4-D [N, C, H, W], got {}".format(list(x.shape)))
    x, moved = _to_nchw(x, data_format, 2)
    k = _ntuple(kernel_size, 2, 'kernel_size')
    s = k if stride is None else _ntuple(stride, 2, 'stride')
    pad = _pool_padding(padding, 2, k, s, x.shape[2:], 'avg_pool2d')
    out = _C.avg_pool2d(x, k, s, pad, bool(ceil_mode), bool(exclusive))
    if divisor_override:
        out = _C.multiply(out, float(k[0] * k[1]) / float(divisor_override))
    return _from_nchw(out, moved)


def adaptive_avg_pool2d(x, output_size, data_format='NCHW', name=None):
    _check_tensor(x, 'adaptive_avg_pool2d')
    x, moved = _to_nchw(x, data_format, 2)
    if isinstance(output_size, numbers.Integral):
        osz = [int(output_size)] * 2
    else:
        osz = [x.shape[2 + i] if v is None else int(v) for i, v in enumerate(output_size)]
    return _from_nchw(_C.adaptive_avg_pool2d(x, osz), moved)


def adaptive_max_pool2d(x, output_size, return_mask=False, name=None):
    if isinstance(output_size, numbers.Integral):
        osz = [int(output_size)] * 2
    else:
        osz = [x.shape[2 + i] if v is None else int(v) for i, v in enumerate(output_size)]
    h, w = x.shape[2], x.shape[3]
    if h % osz[0] or w % osz[1]:
        raise NotImplementedError("adaptive_max_pool2d: input size must be divisible by "
                                  "output_size, got {} and {}".format([h, w], osz))
    k = [h // osz[0], w // osz[1]]
    return max_pool2d(x, k, k, 0, return_mask=return_mask)


def max_pool1d(x, kernel_size, stride=None, padding=0, return_mask=False, ceil_mode=False,
               name=None):
    _check_tensor(x, 'max_pool1d')
    k = _ntuple(kernel_size, 1, 'kernel_size')[0]
    s = k if stride is None else _ntuple(stride, 1, 'stride')[0]
    pad = _pool_padding(padding, 1, [k], [s], x.shape[2:], 'max_pool1d')[0]
    return _C.max_pool1d(x, k, s, pad, bool(ceil_mode), bool(return_mask))


def avg_pool1d(x, kernel_size, stride=None, padding=0, exclusive=True, ceil_mode=False,
               name=None):
    _check_tensor(x, 'avg_pool1d')
    k = _ntuple(kernel_size, 1, 'kernel_size')[0]
    s = k if stride is None else _ntuple(stride, 1, 'stride')[0]
    pad = _pool_padding(padding, 1, [k], [s], x.shape[2:], 'avg_pool1d')[0]
    return _C.avg_pool1d(x, k, s, pad, bool(ceil_mode), bool(exclusive))


def adaptive_avg_pool1d(x, output_size, name=None):
    _check_tensor(x, 'adaptive_avg_pool1d')
    return _C.adaptive_avg_pool1d(x, int(output_size))


# ---- normalisation ------------------------------------------------------------------
def batch_norm(x, running_mean, running_var, weight=None, bias=None, training=False,
               momentum=0.9, epsilon=1e-05, data_format='NCHW', use_global_stats=None,
               name=None):
    _check_tensor(x, 'batch_norm')
    moved = False
    if data_format in ('NHWC', 'NLC', 'NDHWC') and x.ndim > 2:
        x, moved = _to_nchw(x, data_format, x.ndim - 2)
    train = bool(training)
    if use_global_stats is True:
        train = False
    elif use_global_stats is False:
        train = True
    out = _C.batch_norm(x, running_mean, running_var, weight, bias, train, float(momentum),
                        float(epsilon))
    return _from_nchw(out, moved)


def layer_norm(x, normalized_shape, weight=None, bias=None, epsilon=1e-05, name=None):
    _check_tensor(x, 'layer_norm')
    if isinstance(normalized_shape, numbers.Integral):
        normalized_shape = [int(normalized_shape)]
    return _C.layer_norm(x, list(normalized_shape), weight, bias, float(epsilon))


def normalize(x, p=2, axis=1, epsilon=1e-12, name=None):
    if p == 2:
        norm = _C.sqrt(_C.sum(_C.square(x), axis, True))
    elif p == 1:
        norm = _C.sum(_C.abs(x), axis, True)
    else:
        norm = _C.pow(_C.sum(_C.pow(_C.abs(x), float(p)), axis, True), 1.0 / p)
    return _C.divide(x, _C.maximum(norm, float(epsilon)))


def cosine_similarity(x1, x2, axis=1, eps=1e-8):
    dot = _C.sum(_C.multiply(x1, x2), axis)
    n1 = _C.sqrt(_C.sum(_C.square(x1), axis))
    n2 = _C.sqrt(_C.sum(_C.square(x2), axis))
    return _C.divide(dot, _C.maximum(_C.multiply(n1, n2), float(eps)))


def pairwise_distance(x, y, p=2.0, epsilon=1e-6, keepdim=False, name=None):
    d = _C.add(_C.subtract(x, y), float(epsilon))
    return _C.pow(_C.sum(_C.pow(_C.abs(d), float(p)), -1, bool(keepdim)), 1.0 / p)


def pad(x, pad, mode='constant', value=0.0, data_format='NCHW', pad_from_left_axis=True,
        name=None):
    """Paddle's pad: a list of 2*ndim (from the first axis) or of 2*k pairs for
    the last k spatial axes (last axis first, like torch) in NCHW."""
    _check_tensor(x, 'pad')
    if hasattr(pad, 'tolist'):
        pad = pad.tolist()
    pad = [int(v) for v in pad]
    if mode not in ('constant', 'reflect', 'replicate', 'circular'):
        raise ValueError("pad: mode should be constant, reflect, replicate or circular, got {}"
                         .format(mode))
    return _C.pad(x, pad, mode, float(value))


from . import activation, common, conv, loss, norm, pooling  # noqa: E402,F401


# ---- resampling (after the submodule imports: uses only names above) ---------------
def _interp_axis(x, axis, out_size, mode, align_corners, align_mode):
    """Resample one spatial axis of x to out_size (nearest or linear)."""
    import paddle
    in_size = x.shape[axis]
    if out_size == in_size:
        return x
    if mode == 'nearest':
        if align_corners:
            ratio = (in_size - 1) / (out_size - 1) if out_size > 1 else 0.0
            src = np.floor(np.arange(out_size) * ratio + 0.5)
        else:
            src = np.floor(np.arange(out_size) * (in_size / out_size))
        idx = np.clip(src, 0, in_size - 1).astype('int64')
        return _C.index_select(x, paddle.to_tensor(idx), axis)
    if align_corners:
        ratio = (in_size - 1) / (out_size - 1) if out_size > 1 else 0.0
        src = np.arange(out_size) * ratio
    elif align_mode == 0:
        src = (np.arange(out_size) + 0.5) * (in_size / out_size) - 0.5
    else:
        src = np.arange(out_size) * (in_size / out_size)
    src = np.clip(src, 0, in_size - 1)
    i0 = np.floor(src).astype('int64')
    i1 = np.minimum(i0 + 1, in_size - 1)
    lam = (src - i0).astype(np.float64 if str(x.dtype).endswith('float64') else np.float32)
    shape = [1] * x.ndim
    shape[axis] = out_size
    w1 = paddle.to_tensor(lam.reshape(shape))
    a = _C.index_select(x, paddle.to_tensor(i0), axis)
    b = _C.index_select(x, paddle.to_tensor(i1), axis)
    return _C.add(a, _C.multiply(_C.subtract(b, a), w1))


def interpolate(x, size=None, scale_factor=None, mode='nearest', align_corners=False,
                align_mode=0, data_format=None, recompute_scale_factor=None, name=None):
    """Resize the spatial axes of NCL / NCHW / NCDHW input: modes nearest,
    linear, bilinear, trilinear (separable linear interpolation)."""
    _check_tensor(x, 'interpolate')
    mode = mode.lower()
    if mode not in ('nearest', 'linear', 'bilinear', 'trilinear'):
        raise NotImplementedError("interpolate: mode {} is not supported".format(mode))
    nsp = x.ndim - 2
    if nsp < 1:
        raise ValueError("interpolate: x must be at least 3-D, got {}".format(list(x.shape)))
    if data_format is None:
        data_format = {1: 'NCW', 2: 'NCHW', 3: 'NCDHW'}.get(nsp, 'NCHW')
    moved = data_format in ('NWC', 'NLC', 'NHWC', 'NDHWC')
    if moved:
        x = _C.transpose(x, [0, x.ndim - 1] + list(range(1, x.ndim - 1)))
    spatial = list(x.shape[2:])
    if size is not None:
        if hasattr(size, 'tolist'):
            size = size.tolist()
        out = [int(size)] * nsp if isinstance(size, numbers.Integral) else [int(s) for s in size]
    elif scale_factor is not None:
        sf = [float(scale_factor)] * nsp if isinstance(scale_factor, numbers.Real) \
            else [float(s) for s in scale_factor]
        out = [int(s * f) for s, f in zip(spatial, sf)]
    else:
        raise ValueError("interpolate: one of size and scale_factor must be given")
    if len(out) != nsp or any(o <= 0 for o in out):
        raise ValueError("interpolate: bad output size {} for input {}".format(
            out, list(x.shape)))
    kind = 'nearest' if mode == 'nearest' else 'linear'
    for i in range(nsp):
        x = _interp_axis(x, 2 + i, out[i], kind, align_corners, align_mode)
    return _from_nchw(x, moved)


def upsample(x, size=None, scale_factor=None, mode='nearest', align_corners=False,
             align_mode=0, data_format=None, name=None):
    return interpolate(x, size, scale_factor, mode, align_corners, align_mode, data_format)


__all__ += ['interpolate', 'upsample']
