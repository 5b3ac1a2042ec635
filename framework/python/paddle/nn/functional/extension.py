"""sequence_mask, temporal_shift, gather_tree (Paddle's paddle/nn/functional/extension.py)."""
import numpy as np

from paddle import _C
from paddle._lazy import paddle as _paddle
from ._args import _check_tensor

__all__ = ['sequence_mask', 'temporal_shift', 'gather_tree']


def sequence_mask(x, maxlen=None, dtype='int64', name=None):
    """mask[..., j] = j < x[...] with a new last axis of maxlen (default max(x))."""
    paddle = _paddle()
    _check_tensor(x, 'sequence_mask')
    if maxlen is None:
        maxlen = int(x.numpy().max()) if x.size else 0
    elif isinstance(maxlen, _C.Tensor):
        maxlen = int(maxlen.item())
    maxlen = int(maxlen)
    if maxlen < 0:
        raise ValueError("sequence_mask: maxlen must be non-negative, got {}".format(maxlen))
    steps = paddle.arange(maxlen, dtype='int64')
    mask = paddle.less_than(steps, paddle.unsqueeze(paddle.cast(x, 'int64'), -1))
    return paddle.cast(mask, dtype)


def temporal_shift(x, seg_num, shift_ratio=0.25, name=None, data_format='NCHW'):
    """TSM: x [N*T, C, H, W]; the first C*shift_ratio channels take the
    previous frame's values, the next C*shift_ratio the next frame's (zeros
    past either end), as Paddle's slices of the time-padded tensor."""
    paddle = _paddle()
    _check_tensor(x, 'temporal_shift')
    if data_format not in ('NCHW', 'NHWC'):
        raise ValueError("temporal_shift: data_format must be NCHW or NHWC")
    if data_format == 'NHWC':
        x = paddle.transpose(x, [0, 3, 1, 2])
    nt, c, h, w = x.shape
    seg_num = int(seg_num)
    if seg_num <= 0 or nt % seg_num:
        raise ValueError("temporal_shift: the batch ({}) must be a multiple of seg_num ({})"
                         .format(nt, seg_num))
    v = paddle.reshape(x, [nt // seg_num, seg_num, c, h, w])
    c1 = int(c * shift_ratio)
    c2 = int(c * 2 * shift_ratio)
    pad = paddle.nn.functional.pad(v, [0, 0, 1, 1, 0, 0, 0, 0, 0, 0])   # [N, T+2, C, H, W]
    a = pad[:, :seg_num, :c1]
    b = pad[:, 2:, c1:c2]
    rest = v[:, :, c2:]
    out = paddle.reshape(paddle.concat([a, b, rest], axis=2), [nt, c, h, w])
    if data_format == 'NHWC':
        out = paddle.transpose(out, [0, 2, 3, 1])
    return out



def gather_tree(ids, parents):
    """Backtrace beam-search ids [T, B, beam] through parents (the beam each
    step's entry came from): the full sequence that ends in each final beam.
    Integer bookkeeping on the host; no gradient (ids are integers)."""
    paddle = _paddle()
    _check_tensor(ids, 'gather_tree', 'ids')
    _check_tensor(parents, 'gather_tree', 'parents')
    if ids.ndim != 3 or list(ids.shape) != list(parents.shape):
        raise ValueError("gather_tree: ids and parents must both be [max_time, batch, beam], "
                         "got {} and {}".format(list(ids.shape), list(parents.shape)))
    i, par = ids.numpy(), parents.numpy().astype(np.int64)
    t_len, batch, beam = i.shape
    if par.size and (par.min() < 0 or par.max() >= beam):
        raise ValueError("gather_tree: parents must be in [0, {})".format(beam))
    out = np.empty_like(i)
    if t_len:
        out[-1] = i[-1]
        cur = par[-1]
        rows = np.arange(batch)[:, None]
        for t in range(t_len - 2, -1, -1):
            out[t] = i[t][rows, cur]
            cur = par[t][rows, cur]
    return paddle.to_tensor(out)
