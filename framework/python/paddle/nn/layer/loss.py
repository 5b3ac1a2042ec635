"""Loss layers (Paddle defaults; mean/sum reductions give 0-D tensors)."""
from .. import functional as F
from .layers import Layer

__all__ = ['CrossEntropyLoss', 'MSELoss', 'L1Loss', 'BCELoss', 'BCEWithLogitsLoss', 'NLLLoss',
           'SmoothL1Loss', 'KLDivLoss', 'MarginRankingLoss']


def _check_reduction(reduction, name):
    if reduction not in ('sum', 'mean', 'none'):
        raise ValueError("The value of 'reduction' in {} should be 'sum', 'mean' or 'none', but "
                         "received {}, which is not allowed.".format(name, reduction))


class CrossEntropyLoss(Layer):
    """CrossEntropyLoss(weight=None, ignore_index=-100, reduction='mean',
    soft_label=False, axis=-1, use_softmax=True, label_smoothing=0.0)."""

    def __init__(self, weight=None, ignore_index=-100, reduction='mean', soft_label=False,
                 axis=-1, use_softmax=True, label_smoothing=0.0, name=None):
        super().__init__()
        _check_reduction(reduction, 'CrossEntropyLoss')
        self.weight = weight
        self.ignore_index = ignore_index
        self.reduction = reduction
        self.soft_label = soft_label
        self.axis = axis
        self.use_softmax = use_softmax
        self.label_smoothing = label_smoothing
        self.name = name

    def forward(self, input, label):
        return F.cross_entropy(input, label, weight=self.weight,
                               ignore_index=self.ignore_index, reduction=self.reduction,
                               soft_label=self.soft_label, axis=self.axis,
                               use_softmax=self.use_softmax,
                               label_smoothing=self.label_smoothing)


class MSELoss(Layer):
    def __init__(self, reduction='mean'):
        super().__init__()
        _check_reduction(reduction, 'MSELoss')
        self.reduction = reduction

    def forward(self, input, label):
        return F.mse_loss(input, label, self.reduction)


class L1Loss(Layer):
    def __init__(self, reduction='mean', name=None):
        super().__init__()
        _check_reduction(reduction, 'L1Loss')
        self.reduction = reduction

    def forward(self, input, label):
        return F.l1_loss(input, label, self.reduction)


class BCELoss(Layer):
    def __init__(self, weight=None, reduction='mean', name=None):
        super().__init__()
        _check_reduction(reduction, 'BCELoss')
        self.weight = weight
        self.reduction = reduction

    def forward(self, input, label):
        return F.binary_cross_entropy(input, label, self.weight, self.reduction)


class BCEWithLogitsLoss(Layer):
    def __init__(self, weight=None, reduction='mean', pos_weight=None, name=None):
        super().__init__()
        _check_reduction(reduction, 'BCEWithLogitsLoss')
        self.weight = weight
        self.reduction = reduction
        self.pos_weight = pos_weight

    def forward(self, logit, label):
        return F.binary_cross_entropy_with_logits(logit, label, self.weight, self.reduction,
                                                  self.pos_weight)


class NLLLoss(Layer):
    def __init__(self, weight=None, ignore_index=-100, reduction='mean', name=None):
        super().__init__()
        _check_reduction(reduction, 'NLLLoss')
        self._weight = weight
        self._ignore_index = ignore_index
        self._reduction = reduction

    def forward(self, input, label):
        return F.nll_loss(input, label, self._weight, self._ignore_index, self._reduction)


class SmoothL1Loss(Layer):
    def __init__(self, reduction='mean', delta=1.0, name=None):
        super().__init__()
        _check_reduction(reduction, 'SmoothL1Loss')
        self.reduction = reduction
        self.delta = delta

    def forward(self, input, label):
        return F.smooth_l1_loss(input, label, self.reduction, self.delta)


class KLDivLoss(Layer):
    def __init__(self, reduction='mean', log_target=False):
        super().__init__()
        self.reduction = reduction
        self.log_target = log_target

    def forward(self, input, label):
        return F.kl_div(input, label, self.reduction, self.log_target)


class MarginRankingLoss(Layer):
    def __init__(self, margin=0.0, reduction='mean', name=None):
        super().__init__()
        _check_reduction(reduction, 'MarginRankingLoss')
        self.margin = margin
        self.reduction = reduction

    def forward(self, input, other, label):
        return F.margin_ranking_loss(input, other, label, self.margin, self.reduction)
