"""Index inputs (Paddle's paddle/nn/functional/input.py): one_hot, embedding."""
from paddle import _C
from paddle.amp import _state as _amp
from ._args import _check_tensor


def one_hot(x, num_classes, name=None):
    _check_tensor(x, 'one_hot')
    return _C.one_hot(x, int(num_classes))


def embedding(x, weight, padding_idx=None, max_norm=None, norm_type=2.0, sparse=False,
              scale_grad_by_freq=False, name=None):
    _check_tensor(x, 'embedding')
    if padding_idx is not None:
        v = weight.shape[0]
        if padding_idx >= v or padding_idx < -v:
            raise ValueError("padding_idx must be within [-{}, {})".format(v, v))
    if _amp.ON and _amp.current():
        return _amp.call('lookup_table_v2', _C.embedding, (x, weight), padding_idx)
    return _C.embedding(x, weight, padding_idx)
