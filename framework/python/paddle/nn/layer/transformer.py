"""MultiHeadAttention, the Transformer encoder and decoder and Transformer (Paddle's layouts:
[batch, seq, embed]; attn_mask is bool (True = attend) or float (added)."""
import collections
import copy

from paddle._lazy import paddle as _paddle
from .. import functional as F
from .common import Dropout, Linear
from .container import LayerList
from .layers import Layer
from .norm import LayerNorm

__all__ = ['MultiHeadAttention', 'TransformerEncoderLayer', 'TransformerEncoder',
           'TransformerDecoderLayer', 'TransformerDecoder', 'Transformer']


def _convert_attention_mask(mask, dtype):
    """bool/int masks (nonzero = keep) -> additive float masks (-1e9 elsewhere)."""
    paddle = _paddle()
    if mask is None:
        return None
    if mask.dtype in (paddle.bool, paddle.int32, paddle.int64, paddle.uint8):
        keep = paddle.cast(mask, dtype)
        return (keep - 1.0) * 1e9
    return paddle.cast(mask, dtype)


class MultiHeadAttention(Layer):
    """MultiHeadAttention(embed_dim, num_heads, dropout=0.0, kdim=None,
    vdim=None, need_weights=False): forward(query, key=None, value=None,
    attn_mask=None) -> out [B, Lq, embed_dim] (and the weights
    [B, heads, Lq, Lk] when need_weights)."""

    def __init__(self, embed_dim, num_heads, dropout=0.0, kdim=None, vdim=None,
                 need_weights=False, weight_attr=None, bias_attr=None):
        super().__init__()
        if embed_dim <= 0 or num_heads <= 0:
            raise ValueError("embed_dim and num_heads must be positive, got {} and {}".format(
                embed_dim, num_heads))
        if embed_dim % num_heads != 0:
            raise ValueError("embed_dim ({}) must be divisible by num_heads ({})".format(
                embed_dim, num_heads))
        self.embed_dim = embed_dim
        self.kdim = kdim if kdim is not None else embed_dim
        self.vdim = vdim if vdim is not None else embed_dim
        self.num_heads = num_heads
        self.dropout = dropout
        self.need_weights = need_weights
        self.head_dim = embed_dim // num_heads
        self.q_proj = Linear(embed_dim, embed_dim, weight_attr, bias_attr=bias_attr)
        self.k_proj = Linear(self.kdim, embed_dim, weight_attr, bias_attr=bias_attr)
        self.v_proj = Linear(self.vdim, embed_dim, weight_attr, bias_attr=bias_attr)
        self.out_proj = Linear(embed_dim, embed_dim, weight_attr, bias_attr=bias_attr)

    def _split_heads(self, x):
        paddle = _paddle()
        b, l = x.shape[0], x.shape[1]
        x = paddle.reshape(x, [b, l, self.num_heads, self.head_dim])
        return paddle.transpose(x, [0, 2, 1, 3])

    Cache = collections.namedtuple('Cache', ['k', 'v'])
    StaticCache = collections.namedtuple('StaticCache', ['k', 'v'])

    def compute_kv(self, key, value):
        """Projected, head-split keys and values [B, heads, L, head_dim]."""
        return self._split_heads(self.k_proj(key)), self._split_heads(self.v_proj(value))

    def gen_cache(self, key, value=None, type=Cache):  # noqa: A002 - Paddle's name
        """StaticCache: k/v computed once from key/value (cross-attention over a
        fixed memory). Cache: incremental self-attention state, empty (batch
        from key) unless value is given (then Cache(key, value) as is)."""
        paddle = _paddle()
        if type is MultiHeadAttention.StaticCache:
            k, v = self.compute_kv(key, key if value is None else value)
            return self.StaticCache(k, v)
        if value is None:
            empty = [key.shape[0], self.num_heads, 0, self.head_dim]
            return self.Cache(paddle.zeros(empty, dtype=key.dtype),
                              paddle.zeros(empty, dtype=key.dtype))
        return self.Cache(key, value)

    def forward(self, query, key=None, value=None, attn_mask=None, cache=None):
        """-> out, or (out, weights) with need_weights; with a cache the
        (updated) cache is appended: (out, cache) / (out, weights, cache)."""
        paddle = _paddle()
        key = query if key is None else key
        value = query if value is None else value
        q = self._split_heads(self.q_proj(query))
        if isinstance(cache, self.StaticCache):
            k, v = cache.k, cache.v
        else:
            k, v = self.compute_kv(key, value)
        if isinstance(cache, self.Cache):
            k = paddle.concat([cache.k, k], axis=2)
            v = paddle.concat([cache.v, v], axis=2)
            cache = self.Cache(k, v)
        elif cache is not None and not isinstance(cache, self.StaticCache):
            raise TypeError("MultiHeadAttention: cache must be a MultiHeadAttention.Cache or "
                            "StaticCache, got {}".format(type(cache).__name__))
        q = q * (self.head_dim ** -0.5)
        product = paddle.matmul(q, k, transpose_y=True)
        mask = _convert_attention_mask(attn_mask, product.dtype)
        if mask is not None:
            product = product + mask
        weights = F.softmax(product)
        if self.dropout:
            weights = F.dropout(weights, self.dropout, training=self.training,
                                mode='upscale_in_train')
        out = paddle.matmul(weights, v)
        out = paddle.transpose(out, [0, 2, 1, 3])
        out = paddle.reshape(out, [out.shape[0], out.shape[1], self.embed_dim])
        out = self.out_proj(out)
        outs = [out]
        if self.need_weights:
            outs.append(weights)
        if cache is not None:
            outs.append(cache)
        return out if len(outs) == 1 else tuple(outs)


class TransformerEncoderLayer(Layer):
    """Post-norm (or pre-norm with normalize_before) self-attention + FFN."""

    def __init__(self, d_model, nhead, dim_feedforward, dropout=0.1, activation='relu',
                 attn_dropout=None, act_dropout=None, normalize_before=False,
                 weight_attr=None, bias_attr=None, layer_norm_eps=1e-5):
        self._config = dict(d_model=d_model, nhead=nhead, dim_feedforward=dim_feedforward,
                            dropout=dropout, activation=activation, attn_dropout=attn_dropout,
                            act_dropout=act_dropout, normalize_before=normalize_before,
                            weight_attr=weight_attr, bias_attr=bias_attr,
                            layer_norm_eps=layer_norm_eps)
        super().__init__()
        if not hasattr(F, activation):
            raise ValueError("TransformerEncoderLayer: unknown activation {}".format(activation))
        attn_dropout = dropout if attn_dropout is None else attn_dropout
        act_dropout = dropout if act_dropout is None else act_dropout
        self.normalize_before = normalize_before
        self.self_attn = MultiHeadAttention(d_model, nhead, dropout=attn_dropout,
                                            weight_attr=weight_attr, bias_attr=bias_attr)
        self.linear1 = Linear(d_model, dim_feedforward, weight_attr, bias_attr=bias_attr)
        self.dropout = Dropout(act_dropout, mode='upscale_in_train')
        self.linear2 = Linear(dim_feedforward, d_model, weight_attr, bias_attr=bias_attr)
        self.norm1 = LayerNorm(d_model, layer_norm_eps)
        self.norm2 = LayerNorm(d_model, layer_norm_eps)
        self.dropout1 = Dropout(dropout, mode='upscale_in_train')
        self.dropout2 = Dropout(dropout, mode='upscale_in_train')
        self.activation = getattr(F, activation)

    def forward(self, src, src_mask=None, cache=None):
        residual = src
        if self.normalize_before:
            src = self.norm1(src)
        if cache is None:
            src = self.self_attn(src, src, src, src_mask)
        else:
            src, cache = self.self_attn(src, src, src, src_mask, cache)
        src = residual + self.dropout1(src)
        if not self.normalize_before:
            src = self.norm1(src)
        residual = src
        if self.normalize_before:
            src = self.norm2(src)
        src = self.linear2(self.dropout(self.activation(self.linear1(src))))
        src = residual + self.dropout2(src)
        if not self.normalize_before:
            src = self.norm2(src)
        return src if cache is None else (src, cache)

    def gen_cache(self, src):
        """An empty incremental cache for self-attention over src's batch."""
        return self.self_attn.gen_cache(src, type=MultiHeadAttention.Cache)


class TransformerEncoder(Layer):
    """num_layers encoder layers (the first is encoder_layer, the others new
    layers with its configuration), then an optional norm."""

    def __init__(self, encoder_layer, num_layers, norm=None):
        super().__init__()
        layers = [encoder_layer]
        for _ in range(1, num_layers):
            cfg = getattr(encoder_layer, '_config', None)
            layers.append(type(encoder_layer)(**cfg) if cfg is not None
                          else copy.deepcopy(encoder_layer))
        self.layers = LayerList(layers)
        self.num_layers = num_layers
        self.norm = norm

    def forward(self, src, src_mask=None, cache=None):
        out = src
        new_caches = []
        for i, layer in enumerate(self.layers):
            if cache is None:
                out = layer(out, src_mask)
            else:
                out, c = layer(out, src_mask, cache[i])
                new_caches.append(c)
        if self.norm is not None:
            out = self.norm(out)
        return out if cache is None else (out, new_caches)

    def gen_cache(self, src):
        return [layer.gen_cache(src) for layer in self.layers]


def _attr_list(attr, n):
    """Paddle's per-sublayer attrs: one attr for all, or a list of n (or fewer,
    repeated from the last)."""
    if isinstance(attr, (list, tuple)):
        if not attr:
            return [None] * n
        attr = list(attr)
        return attr + [attr[-1]] * (n - len(attr))
    return [attr] * n


class TransformerDecoderLayer(Layer):
    """Self-attention, cross-attention over memory, FFN; each sub-block
    residual with post-norm (or pre-norm with normalize_before).
    forward(tgt, memory, tgt_mask=None, memory_mask=None, cache=None)."""

    def __init__(self, d_model, nhead, dim_feedforward, dropout=0.1, activation='relu',
                 attn_dropout=None, act_dropout=None, normalize_before=False,
                 weight_attr=None, bias_attr=None, layer_norm_eps=1e-5):
        self._config = dict(d_model=d_model, nhead=nhead, dim_feedforward=dim_feedforward,
                            dropout=dropout, activation=activation, attn_dropout=attn_dropout,
                            act_dropout=act_dropout, normalize_before=normalize_before,
                            weight_attr=weight_attr, bias_attr=bias_attr,
                            layer_norm_eps=layer_norm_eps)
        super().__init__()
        if not hasattr(F, activation):
            raise ValueError("TransformerDecoderLayer: unknown activation {}".format(activation))
        attn_dropout = dropout if attn_dropout is None else attn_dropout
        act_dropout = dropout if act_dropout is None else act_dropout
        wa = _attr_list(weight_attr, 3)
        ba = _attr_list(bias_attr, 3)
        self.normalize_before = normalize_before
        self.self_attn = MultiHeadAttention(d_model, nhead, dropout=attn_dropout,
                                            weight_attr=wa[0], bias_attr=ba[0])
        self.cross_attn = MultiHeadAttention(d_model, nhead, dropout=attn_dropout,
                                             weight_attr=wa[1], bias_attr=ba[1])
        self.linear1 = Linear(d_model, dim_feedforward, wa[2], bias_attr=ba[2])
        self.dropout = Dropout(act_dropout, mode='upscale_in_train')
        self.linear2 = Linear(dim_feedforward, d_model, wa[2], bias_attr=ba[2])
        self.norm1 = LayerNorm(d_model, layer_norm_eps)
        self.norm2 = LayerNorm(d_model, layer_norm_eps)
        self.norm3 = LayerNorm(d_model, layer_norm_eps)
        self.dropout1 = Dropout(dropout, mode='upscale_in_train')
        self.dropout2 = Dropout(dropout, mode='upscale_in_train')
        self.dropout3 = Dropout(dropout, mode='upscale_in_train')
        self.activation = getattr(F, activation)

    def forward(self, tgt, memory, tgt_mask=None, memory_mask=None, cache=None):
        """With cache = (incremental Cache, StaticCache) from gen_cache(memory)
        returns (tgt, new cache), for step-by-step decoding."""
        residual = tgt
        if self.normalize_before:
            tgt = self.norm1(tgt)
        if cache is None:
            tgt = self.self_attn(tgt, tgt, tgt, tgt_mask)
        else:
            tgt, incremental_cache = self.self_attn(tgt, tgt, tgt, tgt_mask, cache[0])
        tgt = residual + self.dropout1(tgt)
        if not self.normalize_before:
            tgt = self.norm1(tgt)
        residual = tgt
        if self.normalize_before:
            tgt = self.norm2(tgt)
        if cache is None:
            tgt = self.cross_attn(tgt, memory, memory, memory_mask)
        else:
            tgt, static_cache = self.cross_attn(tgt, memory, memory, memory_mask, cache[1])
        tgt = residual + self.dropout2(tgt)
        if not self.normalize_before:
            tgt = self.norm2(tgt)
        residual = tgt
        if self.normalize_before:
            tgt = self.norm3(tgt)
        tgt = self.linear2(self.dropout(self.activation(self.linear1(tgt))))
        tgt = residual + self.dropout3(tgt)
        if not self.normalize_before:
            tgt = self.norm3(tgt)
        return tgt if cache is None else (tgt, (incremental_cache, static_cache))

    def gen_cache(self, memory):
        """(empty incremental Cache for self-attention, StaticCache of memory's
        projected keys/values for cross-attention)."""
        incremental = self.self_attn.gen_cache(memory, type=MultiHeadAttention.Cache)
        static = self.cross_attn.gen_cache(memory, memory, type=MultiHeadAttention.StaticCache)
        return incremental, static


class TransformerDecoder(Layer):
    """num_layers decoder layers (decoder_layer first, then new ones with its
    configuration), then an optional norm."""

    def __init__(self, decoder_layer, num_layers, norm=None):
        super().__init__()
        layers = [decoder_layer]
        for _ in range(1, num_layers):
            cfg = getattr(decoder_layer, '_config', None)
            layers.append(type(decoder_layer)(**cfg) if cfg is not None
                          else copy.deepcopy(decoder_layer))
        self.layers = LayerList(layers)
        self.num_layers = num_layers
        self.norm = norm

    def forward(self, tgt, memory, tgt_mask=None, memory_mask=None, cache=None):
        out = tgt
        new_caches = []
        for i, layer in enumerate(self.layers):
            if cache is None:
                out = layer(out, memory, tgt_mask, memory_mask)
            else:
                out, c = layer(out, memory, tgt_mask, memory_mask, cache[i])
                new_caches.append(c)
        if self.norm is not None:
            out = self.norm(out)
        return out if cache is None else (out, new_caches)

    def gen_cache(self, memory, do_zip=False):
        """Per-layer (incremental, static) caches; do_zip groups them by kind."""
        cache = [layer.gen_cache(memory) for layer in self.layers]
        return list(zip(*cache)) if do_zip else cache


class Transformer(Layer):
    """Transformer(d_model=512, nhead=8, num_encoder_layers=6,
    num_decoder_layers=6, dim_feedforward=2048, dropout=0.1, activation='relu',
    attn_dropout=None, act_dropout=None, normalize_before=False,
    weight_attr=None, bias_attr=None, custom_encoder=None, custom_decoder=None):
    forward(src, tgt, src_mask=None, tgt_mask=None, memory_mask=None). With
    normalize_before, encoder and decoder end with a LayerNorm (as Paddle's)."""

    def __init__(self, d_model=512, nhead=8, num_encoder_layers=6, num_decoder_layers=6,
                 dim_feedforward=2048, dropout=0.1, activation='relu', attn_dropout=None,
                 act_dropout=None, normalize_before=False, weight_attr=None, bias_attr=None,
                 custom_encoder=None, custom_decoder=None):
        super().__init__()
        if d_model <= 0 or nhead <= 0 or dim_feedforward <= 0:
            raise ValueError("Transformer: d_model, nhead and dim_feedforward must be positive")
        if isinstance(weight_attr, (list, tuple)) and len(weight_attr) == 2:
            enc_wa, dec_wa = weight_attr
        else:
            enc_wa = dec_wa = weight_attr
        if isinstance(bias_attr, (list, tuple)) and len(bias_attr) == 2:
            enc_ba, dec_ba = bias_attr
        else:
            enc_ba = dec_ba = bias_attr
        if custom_encoder is not None:
            self.encoder = custom_encoder
        else:
            layer = TransformerEncoderLayer(d_model, nhead, dim_feedforward, dropout, activation,
                                            attn_dropout, act_dropout, normalize_before,
                                            enc_wa, enc_ba)
            norm = LayerNorm(d_model) if normalize_before else None
            self.encoder = TransformerEncoder(layer, num_encoder_layers, norm)
        if custom_decoder is not None:
            self.decoder = custom_decoder
        else:
            layer = TransformerDecoderLayer(d_model, nhead, dim_feedforward, dropout, activation,
                                            attn_dropout, act_dropout, normalize_before,
                                            dec_wa, dec_ba)
            norm = LayerNorm(d_model) if normalize_before else None
            self.decoder = TransformerDecoder(layer, num_decoder_layers, norm)
        self.d_model = d_model
        self.nhead = nhead

    def forward(self, src, tgt, src_mask=None, tgt_mask=None, memory_mask=None):
        memory = self.encoder(src, src_mask=src_mask)
        return self.decoder(tgt, memory, tgt_mask=tgt_mask, memory_mask=memory_mask)

    def generate_square_subsequent_mask(self, length):
        """[length, length] float mask: 0 on and below the diagonal, -inf above."""
        import numpy as np
        paddle = _paddle()
        if hasattr(length, 'item'):
            length = length.item()
        length = int(length)
        m = np.triu(np.full((length, length), -np.inf), 1)
        return paddle.to_tensor(m.astype(paddle.get_default_dtype()))
