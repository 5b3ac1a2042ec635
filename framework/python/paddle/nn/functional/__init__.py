"""paddle.nn.functional: stateless neural-network functions.

Each function lives in the module where Paddle defines it (activation,
common, conv, distance, input, loss, norm, pooling) and is imported here, as
Paddle's own __init__ does. Functions check and normalise Paddle's argument
forms (int or list kernel sizes, 'SAME'/'VALID' padding, data_format) and
call one fused C op of paddle._C (fw/nn.h); composite activations are built
from C ops.
"""
from ...tensor.manipulation import flatten  # noqa: F401
from . import vision  # noqa: F401
from .activation import (  # noqa: F401
    celu, elu, gelu, glu, gumbel_softmax, hardshrink, hardsigmoid, hardswish, hardtanh,
    leaky_relu, log_sigmoid, log_softmax, maxout, mish, prelu, relu, relu6, relu_, rrelu, selu,
    sigmoid, silu, softmax, softmax_, softplus, softshrink, softsign, swish, tanh, tanh_,
    tanhshrink, thresholded_relu)
from .common import (  # noqa: F401
    alpha_dropout, bilinear, cosine_similarity, dropout, dropout2d, dropout3d,
    feature_alpha_dropout, fold, interpolate, label_smooth, linear, pad, unfold, upsample,
    zeropad2d)
from .conv import (  # noqa: F401
    conv1d, conv1d_transpose, conv2d, conv2d_transpose, conv3d, conv3d_transpose)
from .distance import pairwise_distance  # noqa: F401
from .extension import gather_tree, sequence_mask, temporal_shift  # noqa: F401
from .flash_attention import flash_attention, scaled_dot_product_attention  # noqa: F401
from .input import embedding, one_hot  # noqa: F401
from .loss import (  # noqa: F401
    binary_cross_entropy, binary_cross_entropy_with_logits, cross_entropy, kl_div, l1_loss,
    margin_ranking_loss, mse_loss, nll_loss, sigmoid_focal_loss, smooth_l1_loss,
    softmax_with_cross_entropy, square_error_cost)
from .norm import (  # noqa: F401
    batch_norm, group_norm, instance_norm, layer_norm, local_response_norm, normalize)
from .pooling import (  # noqa: F401
    adaptive_avg_pool1d, adaptive_avg_pool2d, adaptive_avg_pool3d, adaptive_max_pool1d,
    adaptive_max_pool2d, adaptive_max_pool3d, avg_pool1d, avg_pool2d, avg_pool3d, lp_pool1d,
    lp_pool2d, max_pool1d, max_pool2d, max_pool3d, max_unpool1d, max_unpool2d)
from .vision import (  # noqa: F401
    affine_grid, channel_shuffle, grid_sample, pixel_shuffle, pixel_unshuffle)

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
    'sigmoid_focal_loss', 'flatten', 'pairwise_distance', 'interpolate', 'upsample',
    'conv1d_transpose', 'conv2d_transpose', 'affine_grid', 'channel_shuffle', 'grid_sample',
    'pixel_shuffle', 'pixel_unshuffle', 'group_norm', 'instance_norm', 'gumbel_softmax',
    'maxout', 'rrelu', 'thresholded_relu', 'dropout3d', 'fold', 'unfold', 'zeropad2d',
    'local_response_norm', 'sequence_mask', 'temporal_shift', 'scaled_dot_product_attention',
    'adaptive_max_pool1d', 'bilinear', 'flash_attention', 'lp_pool1d', 'lp_pool2d',
    'max_unpool1d', 'max_unpool2d', 'conv3d', 'conv3d_transpose', 'max_pool3d', 'avg_pool3d',
    'adaptive_avg_pool3d', 'adaptive_max_pool3d', 'feature_alpha_dropout', 'gather_tree',
]


def _export_new_losses():
    """Losses added to loss.py (owned by another module) are exported here
    without editing this file: every public function defined in loss.py."""
    from . import loss as mod
    names = sorted(n for n, v in vars(mod).items()
                   if not n.startswith('_') and callable(v)
                   and getattr(v, '__module__', None) == mod.__name__)
    g = globals()
    for n in names:
        g.setdefault(n, getattr(mod, n))
        if n not in __all__:
            __all__.append(n)


_export_new_losses()
