"""scaled_dot_product_attention (Paddle's paddle/nn/functional/flash_attention.py),
on batched matmuls and the C softmax (no fused kernel on CPU)."""
import math

from paddle import _C
from paddle.amp import _state as _amp
from paddle._lazy import paddle as _paddle
from ._args import _check_tensor

__all__ = ['scaled_dot_product_attention', 'flash_attention']


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0,
                                 is_causal=False, training=True, name=None, scale=None):
    """query [B, Lq, H, D], key/value [B, Lk, H, D] (Paddle's layout) ->
    [B, Lq, H, D]. attn_mask: bool (True = attend) or additive float,
    broadcastable to [B, H, Lq, Lk]; is_causal masks keys after each query."""
    paddle = _paddle()
    for t, n in ((query, 'query'), (key, 'key'), (value, 'value')):
        _check_tensor(t, 'scaled_dot_product_attention', n)
        if t.ndim != 4:
            raise ValueError("scaled_dot_product_attention: {} must be 4-D [batch, seq, heads, "
                             "head_dim], got {}".format(n, list(t.shape)))
    if key.shape[1] != value.shape[1] or query.shape[-1] != key.shape[-1]:
        raise ValueError("scaled_dot_product_attention: shapes query {}, key {}, value {} do "
                         "not match".format(list(query.shape), list(key.shape),
                                            list(value.shape)))
    if _amp.ON and _amp.current():
        return _amp.call('flash_attn', scaled_dot_product_attention,
                         (query, key, value, attn_mask), dropout_p, is_causal, training, name,
                         scale)
    q = _C.transpose(query, [0, 2, 1, 3])
    k = _C.transpose(key, [0, 2, 1, 3])
    v = _C.transpose(value, [0, 2, 1, 3])
    s = float(scale) if scale is not None else 1.0 / math.sqrt(query.shape[-1])
    scores = _C.multiply(_C.matmul(q, k, False, True), s)
    lq, lk = query.shape[1], key.shape[1]
    dt = str(scores.dtype).replace('paddle.', '')
    if is_causal:
        keep = paddle.tril(paddle.ones([lq, lk], dtype='bool'))
        scores = paddle.where(keep, scores, paddle.full_like(scores, float('-inf')))
    if attn_mask is not None:
        if attn_mask.dtype == paddle.bool:
            scores = paddle.where(attn_mask, scores, paddle.full_like(scores, float('-inf')))
        else:
            scores = _C.add(scores, _C.cast(attn_mask, dt))
    weights = _C.softmax(scores, -1)
    if dropout_p and training:
        weights = _C.dropout(weights, float(dropout_p), True, 'upscale_in_train')
    out = _C.matmul(weights, v)
    return _C.transpose(out, [0, 2, 1, 3])


def flash_attention(query, key, value, dropout=0.0, causal=False, return_softmax=False,
                    *, fixed_seed_offset=None, rng_name='', training=True, name=None):
    """Paddle's flash_attention signature on the same (unfused, CPU) math:
    [B, L, H, D] in and out -> (out, softmax or None)."""
    out = scaled_dot_product_attention(query, key, value, None, dropout, causal, training)
    if not return_softmax:
        return out, None
    q = _C.transpose(query, [0, 2, 1, 3])
    k = _C.transpose(key, [0, 2, 1, 3])
    scores = _C.multiply(_C.matmul(q, k, False, True), 1.0 / math.sqrt(query.shape[-1]))
    if causal:
        paddle = _paddle()
        keep = paddle.tril(paddle.ones([query.shape[1], key.shape[1]], dtype='bool'))
        scores = paddle.where(keep, scores, paddle.full_like(scores, float('-inf')))
    return out, _C.softmax(scores, -1)
