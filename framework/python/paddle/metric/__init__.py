"""paddle.metric: Metric, Accuracy, Precision, Recall, Auc, accuracy().

Metric objects follow Paddle's protocol used by paddle.Model:
compute(pred, label) runs on Tensors (in C), update(*numpy) accumulates on the
host, accumulate() gives the running value, name() the log keys."""
import abc

import numpy as np

from paddle._lazy import paddle as _paddle

__all__ = ['Metric', 'Accuracy', 'Precision', 'Recall', 'Auc', 'accuracy']


def _to_numpy(x):
    paddle = _paddle()
    if isinstance(x, paddle.Tensor):
        return x.numpy()
    return np.asarray(x)


class Metric(metaclass=abc.ABCMeta):
    def __init__(self):
        pass

    @abc.abstractmethod
    def reset(self):
        raise NotImplementedError(
            "function 'reset' not implemented in {}.".format(self.__class__.__name__))

    @abc.abstractmethod
    def update(self, *args):
        raise NotImplementedError(
            "function 'update' not implemented in {}.".format(self.__class__.__name__))

    @abc.abstractmethod
    def accumulate(self):
        raise NotImplementedError(
            "function 'accumulate' not implemented in {}.".format(self.__class__.__name__))

    @abc.abstractmethod
    def name(self):
        raise NotImplementedError(
            "function 'name' not implemented in {}.".format(self.__class__.__name__))

    def compute(self, *args):
        return args


class Accuracy(Metric):
    """Top-k accuracy. compute(pred [N, C], label [N] / [N, 1] / one-hot)
    returns a float32 [N, maxk] correctness matrix; update() returns the
    batch accuracy; accumulate() the running one (a float, or a list for
    several k)."""

    def __init__(self, topk=(1,), name=None, *args, **kwargs):
        super().__init__()
        self.topk = topk if isinstance(topk, (list, tuple)) else (topk,)
        self.maxk = max(self.topk)
        self._init_name(name)
        self.reset()

    def compute(self, pred, label, *args):
        paddle = _paddle()
        if not isinstance(pred, paddle.Tensor):
            pred = paddle.to_tensor(np.asarray(pred))
        if not isinstance(label, paddle.Tensor):
            label = paddle.to_tensor(np.asarray(label))
        if self.maxk > pred.shape[-1]:
            raise ValueError("Accuracy: top-{} asked for {} classes".format(self.maxk,
                                                                            pred.shape[-1]))
        _, idx = paddle.topk(pred, self.maxk, axis=-1)
        if label.ndim == 1 or (label.ndim == 2 and label.shape[-1] == 1):
            label = paddle.reshape(label, [-1, 1])
        elif label.shape[-1] != 1:
            label = paddle.argmax(label, axis=-1, keepdim=True)
        label = paddle.cast(label, idx.dtype)
        correct = paddle.equal(idx, label)
        return paddle.cast(correct, 'float32')

    def update(self, correct, *args):
        correct = _to_numpy(correct)
        num_samples = int(np.prod(np.array(correct.shape[:-1])))
        accs = []
        for i, k in enumerate(self.topk):
            num_corrects = float(correct[..., :k].sum())
            accs.append(num_corrects / num_samples if num_samples else 0.0)
            self.total[i] += num_corrects
            self.count[i] += num_samples
        return accs[0] if len(self.topk) == 1 else accs

    def reset(self):
        self.total = [0.] * len(self.topk)
        self.count = [0] * len(self.topk)

    def accumulate(self):
        res = []
        for t, c in zip(self.total, self.count):
            res.append(float(t) / c if c > 0 else 0.0)
        return res[0] if len(self.topk) == 1 else res

    def _init_name(self, name):
        name = name or 'acc'
        if self.maxk != 1:
            self._name = ['{}_top{}'.format(name, k) for k in self.topk]
        else:
            self._name = [name]

    def name(self):
        return self._name


def _binary_preds(preds):
    """Probabilities -> 0/1 predictions, rounding 0.5 up (Paddle's floor(p + 0.5))."""
    p = _to_numpy(preds)
    if p.dtype.kind not in 'fiub':
        raise ValueError("The 'preds' must be a numpy ndarray or Tensor of numbers")
    return np.floor(p.astype(np.float64) + 0.5).astype('int32').reshape(-1)


class Precision(Metric):
    """Binary precision over predictions > 0.5."""

    def __init__(self, name='precision', *args, **kwargs):
        super().__init__()
        self.tp = 0
        self.fp = 0
        self._name = name

    def update(self, preds, labels):
        preds = _binary_preds(preds)
        labels = _to_numpy(labels).astype('int32').reshape(-1)
        self.tp += int(np.sum((preds == 1) & (labels == 1)))
        self.fp += int(np.sum((preds == 1) & (labels == 0)))

    def reset(self):
        self.tp = 0
        self.fp = 0

    def accumulate(self):
        ap = self.tp + self.fp
        return float(self.tp) / ap if ap != 0 else 0.0

    def name(self):
        return self._name


class Recall(Metric):
    """Binary recall over predictions > 0.5."""

    def __init__(self, name='recall', *args, **kwargs):
        super().__init__()
        self.tp = 0
        self.fn = 0
        self._name = name

    def update(self, preds, labels):
        preds = _binary_preds(preds)
        labels = _to_numpy(labels).astype('int32').reshape(-1)
        self.tp += int(np.sum((preds == 1) & (labels == 1)))
        self.fn += int(np.sum((preds == 0) & (labels == 1)))

    def accumulate(self):
        recall = self.tp + self.fn
        return float(self.tp) / recall if recall != 0 else 0.0

    def reset(self):
        self.tp = 0
        self.fn = 0

    def name(self):
        return self._name


class Auc(Metric):
    """Area under the ROC (or PR) curve from binned probabilities, as
    Paddle's: update(preds [N, 2] class probabilities (column 1 is the
    positive class; [N] or [N, 1] is taken as that column), labels [N] or
    [N, 1]) counts each sample into one of num_thresholds + 1 buckets;
    accumulate() integrates the curve with the trapezoid rule."""

    def __init__(self, curve='ROC', num_thresholds=4095, name='auc', *args, **kwargs):
        super().__init__()
        if curve not in ('ROC', 'PR'):
            raise ValueError("Auc: curve must be 'ROC' or 'PR', got {!r}".format(curve))
        if int(num_thresholds) <= 0:
            raise ValueError("Auc: num_thresholds must be positive, got {}".format(
                num_thresholds))
        self._curve = curve
        self._num_thresholds = int(num_thresholds)
        self._name = name
        self.reset()

    def update(self, preds, labels):
        preds = _to_numpy(preds).astype(np.float64)
        labels = _to_numpy(labels).reshape(-1)
        if preds.ndim == 2 and preds.shape[1] >= 2:
            pos = preds[:, 1]
        elif preds.ndim == 2 and preds.shape[1] == 1 or preds.ndim == 1:
            pos = preds.reshape(-1)
        else:
            raise ValueError("Auc: preds must be [N, 2] (or [N] / [N, 1]), got shape {}".format(
                list(preds.shape)))
        if pos.shape[0] != labels.shape[0]:
            raise ValueError("Auc: {} predictions but {} labels".format(pos.shape[0],
                                                                        labels.shape[0]))
        if pos.size and (np.nanmin(pos) < 0 or np.nanmax(pos) > 1 or np.isnan(pos).any()):
            raise ValueError("Auc: predicted probabilities must be in [0, 1]")
        bins = (pos * self._num_thresholds).astype(np.int64)
        n = self._num_thresholds + 1
        is_pos = labels.astype(bool)
        self._stat_pos += np.bincount(bins[is_pos], minlength=n)[:n]
        self._stat_neg += np.bincount(bins[~is_pos], minlength=n)[:n]

    @staticmethod
    def trapezoid_area(x1, x2, y1, y2):
        return abs(x1 - x2) * (y1 + y2) / 2.0

    def accumulate(self):
        # walk the thresholds from high to low: cumulative positives/negatives
        tp = np.cumsum(self._stat_pos[::-1])
        fp = np.cumsum(self._stat_neg[::-1])
        tot_pos, tot_neg = (tp[-1], fp[-1]) if tp.size else (0.0, 0.0)
        if tot_pos <= 0 or tot_neg <= 0:
            return 0.0
        tp_prev = np.concatenate([[0.0], tp[:-1]])
        fp_prev = np.concatenate([[0.0], fp[:-1]])
        if self._curve == 'ROC':
            area = np.sum(np.abs(fp - fp_prev) * (tp + tp_prev) / 2.0)
            return float(area / tot_pos / tot_neg)
        # PR: recall on x, precision on y
        prec = np.where(tp + fp > 0, tp / np.maximum(tp + fp, 1), 1.0)
        prec_prev = np.concatenate([[1.0], prec[:-1]])
        rec = tp / tot_pos
        rec_prev = np.concatenate([[0.0], rec[:-1]])
        return float(np.sum(np.abs(rec - rec_prev) * (prec + prec_prev) / 2.0))

    def reset(self):
        self._stat_pos = np.zeros(self._num_thresholds + 1)
        self._stat_neg = np.zeros(self._num_thresholds + 1)

    def name(self):
        return self._name


def accuracy(input, label, k=1, correct=None, total=None, name=None):
    """Top-k accuracy of input [N, C] against label [N, 1] or [N] as a 0-D
    float32 Tensor."""
    paddle = _paddle()
    if label.ndim == 1:
        label = paddle.unsqueeze(label, -1)
    if label.ndim != 2 or label.shape[-1] != 1:
        raise ValueError("accuracy: label must be [N] or [N, 1], got {}".format(
            list(label.shape)))
    if input.shape[0] != label.shape[0]:
        raise ValueError("accuracy: input has {} samples but label has {}".format(
            input.shape[0], label.shape[0]))
    _, idx = paddle.topk(input, k, axis=-1)
    hit = paddle.cast(paddle.equal(idx, paddle.cast(label, idx.dtype)), 'float32')
    n_correct = paddle.sum(hit)
    n = input.shape[0]
    if correct is not None:
        correct._assign(paddle.cast(n_correct, correct.dtype))
    if total is not None:
        total._assign(paddle.full([], n, total.dtype))
    return paddle.divide(n_correct, paddle.full([], float(n), 'float32'))
