#!/usr/bin/python3
"""Every paddle op this script can enumerate, forward AND backward, on the
CUDA backend against the CPU backend: elementwise, unary, reductions,
matmul/bmm/linear, conv/pool/norms/dropout(p=0)/embedding/softmax/losses,
RNN cells and layers, index ops, optimizers' steps, and the Philox
generator (same seed, same numbers).

Each op runs on three input layouts: contiguous, strided (a transposed or
step-2 sliced view of the leaf) and broadcast (operands that broadcast, or an
expanded zero-stride view), in float32 and, where the op takes them, float16
and bfloat16. The reference is the CPU backend in float32 on the same
(rounded) input values; the error is max|gpu - cpu| / max(max|cpu|, 1e-2)
over outputs and over the leaves' gradients of sum(out * w) (w fixed
random). Limits: float32 1e-5, float16 1e-2, bfloat16 2e-2; integer and
bool outputs must be equal. An op that raises on CUDA (unsupported), or
returns its result on the CPU, fails.

    PYTHONPATH=<build>/framework/python /usr/bin/python3 tests/gpu/ops_vs_cpu.py [name-substring]

Prints a table op | fwd | bwd | max rel err | note, the failures, and a
final "detail: ..." line. Exit 0 when nothing failed, 1 otherwise, 77 when
no CUDA device is usable. GPU_CHECK_CPU=1 runs the "device" side on the CPU
too (a dry run of the script, float32 only unless OPS_VS_CPU_HALF=1: every
row must pass with error 0). OPS_VS_CPU_TRACE=1 prints tracebacks.
"""
import os
import sys
import time
import traceback

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpucommon  # noqa: E402

import paddle  # noqa: E402
import paddle.nn.functional as F  # noqa: E402

TOL = {'float32': 1e-5, 'float16': 1e-2, 'bfloat16': 2e-2}
HALF = ('float16', 'bfloat16')
FLOAT_KINDS = ('f', 'pos', 'unit', 'prob', 'nz')


class Case:
    def __init__(self, name, fn, inputs, grad=True, half=True, bcast=None, layouts=None,
                 idx_half=True, layer=None, tol=None):
        self.name, self.fn, self.inputs = name, fn, inputs
        self.grad, self.half, self.bcast = grad, half, bcast
        self.layouts = layouts or ('contig', 'strided', 'bcast')
        self.idx_half = idx_half      # compare int outputs in half dtypes (ties can differ)
        self.layer = layer            # builds a Layer: fn(layer, *inputs)
        self.tol = tol or {}


CASES = []


def case(name, fn, *inputs, **kw):
    CASES.append(Case(name, fn, list(inputs), **kw))


# ---- the ops ----------------------------------------------------------------------
A, B = (4, 6), (4, 6)
BC = [(4, 1, 6), (3, 6)]
for nm, f, k2 in [('add', paddle.add, 'f'), ('subtract', paddle.subtract, 'f'),
                  ('multiply', paddle.multiply, 'f'), ('divide', paddle.divide, 'nz'),
                  ('pow', paddle.pow, 'unit'), ('maximum', paddle.maximum, 'f'),
                  ('minimum', paddle.minimum, 'f'), ('fmax', paddle.fmax, 'f'),
                  ('fmin', paddle.fmin, 'f'), ('floor_divide', paddle.floor_divide, 'nz'),
                  ('remainder', paddle.remainder, 'nz')]:
    k1 = 'pos' if nm == 'pow' else 'f'
    case(nm, f, (A, k1), (B, k2), bcast=BC, grad=nm not in ('floor_divide', 'remainder'))
for nm, f in [('equal', paddle.equal), ('not_equal', paddle.not_equal),
              ('less_than', paddle.less_than), ('less_equal', paddle.less_equal),
              ('greater_than', paddle.greater_than), ('greater_equal', paddle.greater_equal)]:
    case(nm, f, (A, 'f'), (B, 'f'), bcast=BC, grad=False)
for nm, f in [('logical_and', paddle.logical_and), ('logical_or', paddle.logical_or),
              ('logical_xor', paddle.logical_xor)]:
    case(nm, f, (A, 'bool'), (B, 'bool'), grad=False, half=False, layouts=('contig',))
case('logical_not', paddle.logical_not, (A, 'bool'), grad=False, half=False, layouts=('contig',))
case('x+scalar', lambda x: x + 2.5, (A, 'f'))
case('x*scalar', lambda x: x * 3, (A, 'f'))
case('scalar/x', lambda x: 2 / x, (A, 'nz'))
case('x**2', lambda x: x ** 2, (A, 'f'))
case('x**0.5', lambda x: x ** 0.5, (A, 'pos'))
case('2**x', lambda x: 2 ** x, (A, 'unit'))
case('scale', lambda x: paddle.scale(x, 2.0, 1.0), (A, 'f'))
case('dist', lambda x, y: paddle.dist(x, y), (A, 'f'), (B, 'f'))

UNARY = [('abs', paddle.abs, 'nz'), ('neg', paddle.neg, 'f'), ('exp', paddle.exp, 'f'),
         ('log', paddle.log, 'pos'), ('log2', paddle.log2, 'pos'),
         ('log10', paddle.log10, 'pos'), ('log1p', paddle.log1p, 'pos'),
         ('expm1', paddle.expm1, 'f'), ('sqrt', paddle.sqrt, 'pos'),
         ('rsqrt', paddle.rsqrt, 'pos'), ('square', paddle.square, 'f'),
         ('sin', paddle.sin, 'f'), ('cos', paddle.cos, 'f'), ('tanh', paddle.tanh, 'f'),
         ('sigmoid', paddle.sigmoid, 'f'), ('erf', paddle.erf, 'f'),
         ('reciprocal', paddle.reciprocal, 'nz'), ('floor', paddle.floor, 'f'),
         ('ceil', paddle.ceil, 'f'), ('round', paddle.round, 'f'), ('trunc', paddle.trunc, 'f'),
         ('sign', paddle.sign, 'nz'), ('relu', F.relu, 'nz'), ('relu6', F.relu6, 'f'),
         ('leaky_relu', F.leaky_relu, 'nz'), ('elu', F.elu, 'nz'), ('selu', F.selu, 'nz'),
         ('celu', F.celu, 'nz'), ('gelu', F.gelu, 'f'),
         ('gelu_tanh', lambda x: F.gelu(x, approximate=True), 'f'), ('silu', F.silu, 'f'),
         ('swish', F.swish, 'f'), ('mish', F.mish, 'f'), ('softplus', F.softplus, 'f'),
         ('softsign', F.softsign, 'f'), ('softshrink', F.softshrink, 'nz'),
         ('hardshrink', F.hardshrink, 'nz'), ('hardtanh', F.hardtanh, 'nz'),
         ('hardsigmoid', F.hardsigmoid, 'f'), ('hardswish', F.hardswish, 'f'),
         ('tanhshrink', F.tanhshrink, 'f'), ('log_sigmoid', F.log_sigmoid, 'f'),
         ('thresholded_relu', F.thresholded_relu, 'nz'),
         ('clip', lambda x: paddle.clip(x, -0.5, 0.5), 'f'),
         ('nan_to_num', paddle.nan_to_num, 'f')]
for nm, f, k in UNARY:
    case(nm, f, ((4, 6), k), grad=nm not in ('floor', 'ceil', 'round', 'trunc', 'sign'))
case('cast_f64', lambda x: paddle.cast(x, 'float64'), (A, 'f'), half=False)
case('cast_int32', lambda x: paddle.cast(x * 4, 'int32'), (A, 'f'), grad=False)
case('isnan/isinf/isfinite', lambda x: (paddle.isnan(x), paddle.isinf(x), paddle.isfinite(x)),
     (A, 'f'), grad=False)

R3 = (4, 6, 5)
for nm, f in [('sum', lambda x: paddle.sum(x)), ('sum_axis1', lambda x: paddle.sum(x, axis=1)),
              ('sum_02_keep', lambda x: paddle.sum(x, axis=[0, 2], keepdim=True)),
              ('mean', lambda x: paddle.mean(x, axis=-1)),
              ('max_axis', lambda x: paddle.max(x, axis=1)),
              ('min_axis', lambda x: paddle.min(x, axis=0)), ('max_all', lambda x: paddle.max(x)),
              ('amax', lambda x: paddle.amax(x, axis=2)), ('amin', lambda x: paddle.amin(x, axis=2)),
              ('var', lambda x: paddle.var(x, axis=1)), ('std', lambda x: paddle.std(x)),
              ('logsumexp', lambda x: paddle.logsumexp(x, axis=-1)),
              ('norm', lambda x: paddle.norm(x, p=2, axis=1)),
              ('cumsum', lambda x: paddle.cumsum(x, axis=1)),
              ('softmax', lambda x: F.softmax(x, axis=-1)),
              ('softmax_axis1', lambda x: F.softmax(x, axis=1)),
              ('log_softmax', lambda x: F.log_softmax(x, axis=-1))]:
    case(nm, f, (R3, 'f'))
case('prod', lambda x: paddle.prod(x, axis=1), (R3, 'pos'))
case('argmax', lambda x: paddle.argmax(x, axis=1), (R3, 'f'), grad=False, idx_half=False)
case('argmin', lambda x: paddle.argmin(x, axis=-1), (R3, 'f'), grad=False, idx_half=False)
case('all/any', lambda x: (paddle.all(x, axis=1), paddle.any(x)), (R3, 'bool'), grad=False,
     half=False, layouts=('contig',))

case('matmul', paddle.matmul, ((4, 5), 'f'), ((5, 3), 'f'), bcast=[(2, 1, 4, 5), (3, 5, 6)])
case('matmul_tT', lambda x, y: paddle.matmul(x, y, transpose_x=True, transpose_y=True),
     ((5, 4), 'f'), ((3, 5), 'f'))
case('matmul_vec', paddle.matmul, ((2, 4, 5), 'f'), ((5,), 'f'))
case('bmm', paddle.bmm, ((2, 4, 5), 'f'), ((2, 5, 3), 'f'))
case('mm', paddle.mm, ((4, 5), 'f'), ((5, 3), 'f'))
case('dot', paddle.dot, ((7,), 'f'), ((7,), 'f'))
case('outer', paddle.outer, ((4,), 'f'), ((3,), 'f'))
case('linear', F.linear, ((4, 5), 'f'), ((5, 3), 'f'), ((3,), 'f'))
case('einsum', lambda x, y: paddle.einsum('bij,bjk->bik', x, y), ((2, 4, 5), 'f'),
     ((2, 5, 3), 'f'))
case('matmul_big', paddle.matmul, ((64, 96), 'f'), ((96, 80), 'f'), layouts=('contig', 'strided'))

X4 = (2, 3, 8, 8)
case('conv2d', lambda x, w, b: F.conv2d(x, w, b, padding=1), (X4, 'f'), ((4, 3, 3, 3), 'f'),
     ((4,), 'f'))
case('conv2d_s2_g', lambda x, w: F.conv2d(x, w, stride=2, padding=1, groups=3),
     ((2, 6, 9, 9), 'f'), ((6, 2, 3, 3), 'f'))
case('conv2d_dil', lambda x, w: F.conv2d(x, w, dilation=2), (X4, 'f'), ((2, 3, 3, 3), 'f'))
case('conv1d', lambda x, w: F.conv1d(x, w, padding=1), ((2, 3, 10), 'f'), ((4, 3, 3), 'f'))
case('conv2d_transpose', lambda x, w: F.conv2d_transpose(x, w, stride=2, padding=1),
     ((2, 3, 5, 5), 'f'), ((3, 4, 3, 3), 'f'))
case('conv3d', lambda x, w: F.conv3d(x, w, padding=1), ((1, 2, 4, 5, 5), 'f'),
     ((3, 2, 3, 3, 3), 'f'))
case('max_pool2d', lambda x: F.max_pool2d(x, 2), (X4, 'f'), idx_half=False)
case('max_pool2d_s1p1', lambda x: F.max_pool2d(x, 3, stride=1, padding=1), (X4, 'f'))
case('avg_pool2d', lambda x: F.avg_pool2d(x, 2), (X4, 'f'))
case('avg_pool2d_pad', lambda x: F.avg_pool2d(x, 3, stride=2, padding=1), (X4, 'f'))
case('adaptive_avg_pool2d', lambda x: F.adaptive_avg_pool2d(x, 3), (X4, 'f'))
case('adaptive_max_pool2d', lambda x: F.adaptive_max_pool2d(x, 3), (X4, 'f'))
case('max_pool1d', lambda x: F.max_pool1d(x, 2), ((2, 3, 10), 'f'))
case('avg_pool1d', lambda x: F.avg_pool1d(x, 2), ((2, 3, 10), 'f'))
case('batch_norm_train', lambda x, w, b: F.batch_norm(
    x, paddle.zeros([3]), paddle.ones([3]), w, b, training=True), (X4, 'f'), ((3,), 'f'),
    ((3,), 'f'))
case('batch_norm_eval', lambda x, m, v: F.batch_norm(x, m, v, training=False), (X4, 'f'),
     ((3,), 'f'), ((3,), 'pos'))
case('layer_norm', lambda x, w, b: F.layer_norm(x, [6], w, b), ((4, 5, 6), 'f'), ((6,), 'f'),
     ((6,), 'f'))
case('group_norm', lambda x: F.group_norm(x, 2), ((2, 4, 5, 5), 'f'))
case('instance_norm', lambda x: F.instance_norm(x), (X4, 'f'))
case('local_response_norm', lambda x: F.local_response_norm(x, 3), (X4, 'f'))
case('normalize', lambda x: F.normalize(x, axis=1), (A, 'f'))
case('interp_nearest', lambda x: F.interpolate(x, scale_factor=2, mode='nearest'), (X4, 'f'))
case('interp_bilinear', lambda x: F.interpolate(x, size=[11, 13], mode='bilinear'), (X4, 'f'))
case('pad_constant', lambda x: F.pad(x, [1, 2, 0, 1], value=0.5), (X4, 'f'))
case('pad_reflect', lambda x: F.pad(x, [1, 2, 2, 1], mode='reflect'), (X4, 'f'))
case('pad_replicate', lambda x: F.pad(x, [1, 1, 1, 1], mode='replicate'), (X4, 'f'))
case('pixel_shuffle', lambda x: F.pixel_shuffle(x, 2), ((2, 8, 3, 3), 'f'))
case('unfold', lambda x: F.unfold(x, 3), (X4, 'f'))
case('dropout_p0', lambda x: F.dropout(x, p=0.0, training=True), (A, 'f'))
case('dropout_eval', lambda x: F.dropout(x, p=0.5, training=False), (A, 'f'))
case('embedding', lambda i, w: F.embedding(i, w), ((4, 3), ('int', 10)), ((10, 5), 'f'))
case('one_hot', lambda i: F.one_hot(i, 7), ((5,), ('int', 7)), grad=False, half=False)
case('cosine_similarity', lambda x, y: F.cosine_similarity(x, y), (A, 'f'), (B, 'f'))
case('glu', lambda x: F.glu(x), (A, 'f'))
case('prelu', lambda x, w: F.prelu(x, w), (X4, 'nz'), ((3,), 'prob'))
case('sdpa', lambda q, k, v: F.scaled_dot_product_attention(q, k, v),
     ((2, 5, 2, 8), 'f'), ((2, 5, 2, 8), 'f'), ((2, 5, 2, 8), 'f'))

N, C = 8, 10
case('cross_entropy', lambda x, y: F.cross_entropy(x, y), ((N, C), 'f'), ((N,), ('int', C)))
case('cross_entropy_none', lambda x, y: F.cross_entropy(x, y, reduction='none'),
     ((N, C), 'f'), ((N, 1), ('int', C)))
case('cross_entropy_soft', lambda x, y: F.cross_entropy(x, F.softmax(y), soft_label=True),
     ((N, C), 'f'), ((N, C), 'f'))
case('cross_entropy_weight', lambda x, y, w: F.cross_entropy(x, y, weight=w),
     ((N, C), 'f'), ((N,), ('int', C)), ((C,), 'prob'))
case('cross_entropy_smooth', lambda x, y: F.cross_entropy(x, y, label_smoothing=0.1),
     ((N, C), 'f'), ((N,), ('int', C)))
case('nll_loss', lambda x, y: F.nll_loss(F.log_softmax(x), y), ((N, C), 'f'),
     ((N,), ('int', C)))
case('mse_loss', F.mse_loss, (A, 'f'), (B, 'f'))
case('l1_loss', F.l1_loss, (A, 'f'), (B, 'f'))
case('smooth_l1_loss', F.smooth_l1_loss, (A, 'f'), (B, 'f'))
case('bce', F.binary_cross_entropy, (A, 'prob'), (B, 'prob'))
case('bce_with_logits', F.binary_cross_entropy_with_logits, (A, 'f'), (B, 'prob'))
case('kl_div', lambda x, y: F.kl_div(F.log_softmax(x), F.softmax(y), reduction='batchmean'),
     (A, 'f'), (B, 'f'))
case('margin_ranking', lambda x, y, z: F.margin_ranking_loss(x, y, paddle.sign(z)),
     (A, 'f'), (B, 'f'), (A, 'nz'))
case('square_error_cost', F.square_error_cost, (A, 'f'), (B, 'f'))
case('sigmoid_focal_loss', F.sigmoid_focal_loss, (A, 'f'), (B, 'prob'))

# index / shape ops
case('concat', lambda x, y: paddle.concat([x, y], axis=1), (A, 'f'), (B, 'f'))
case('stack', lambda x, y: paddle.stack([x, y], axis=0), (A, 'f'), (B, 'f'))
case('split', lambda x: paddle.split(x, [2, 4], axis=1), (A, 'f'))
case('chunk', lambda x: paddle.chunk(x, 2, axis=0), (A, 'f'))
case('unbind', lambda x: paddle.unbind(x, axis=0), (A, 'f'))
case('gather', lambda x, i: paddle.gather(x, i, axis=0), (A, 'f'), ((5,), ('int', 4)))
case('gather_nd', lambda x, i: paddle.gather_nd(x, i), (A, 'f'), ((3, 2), ('int', 4)))
case('index_select', lambda x, i: paddle.index_select(x, i, axis=1), (A, 'f'),
     ((5,), ('int', 6)))
case('take_along_axis', lambda x, i: paddle.take_along_axis(x, i, axis=1), (A, 'f'),
     ((4, 3), ('int', 6)))
case('put_along_axis', lambda x, i, v: paddle.put_along_axis(x, i, v, axis=1),
     (A, 'f'), ((4, 1), ('int', 6)), ((4, 1), 'f'))
case('put_along_axis_add', lambda x, i, v: paddle.put_along_axis(x, i, v, axis=1, reduce='add'),
     (A, 'f'), ((4, 3), ('int', 6)), ((4, 3), 'f'))
case('index_add', lambda x, i, v: paddle.index_add(x, i, 0, v), (A, 'f'), ((3,), ('int', 4)),
     ((3, 6), 'f'))
case('scatter', lambda x, i, u: paddle.scatter(x, i, u), (A, 'f'), ((2,), ('perm', 4)),
     ((2, 6), 'f'))
case('scatter_add', lambda x, i, u: paddle.scatter(x, i, u, overwrite=False), (A, 'f'),
     ((3,), ('int', 4)), ((3, 6), 'f'))
case('where', lambda c, x, y: paddle.where(c, x, y), (A, 'bool'), (A, 'f'), (B, 'f'))
case('masked_fill', lambda x, m: paddle.masked_fill(x, m, 0.5), (A, 'f'), (A, 'bool'))
case('masked_select', lambda x, m: paddle.masked_select(x, m), (A, 'f'), (A, 'bool'))
case('topk', lambda x: paddle.topk(x, 3, axis=-1), (A, 'f'), idx_half=False)
case('sort', lambda x: paddle.sort(x, axis=1, descending=True), (A, 'f'))
case('argsort', lambda x: paddle.argsort(x, axis=0), (A, 'f'), grad=False, idx_half=False)
case('tile', lambda x: paddle.tile(x, [2, 3]), (A, 'f'))
case('expand', lambda x: paddle.expand(x, [3, 4, 6]), (A, 'f'))
case('flip', lambda x: paddle.flip(x, [0, 1]), (A, 'f'))
case('roll', lambda x: paddle.roll(x, 2, axis=1), (A, 'f'))
case('tril/triu', lambda x: (paddle.tril(x), paddle.triu(x, 1)), (A, 'f'))
case('transpose+reshape', lambda x: paddle.reshape(paddle.transpose(x, [1, 0]), [3, 8]),
     (A, 'f'))
case('slice+setitem', lambda x: x[1:3, ::2] * 2, (A, 'f'))
case('getitem_int_idx', lambda x, i: x[i], (A, 'f'), ((3,), ('int', 4)))
case('diag', lambda x: paddle.diag(x), ((5,), 'f'))
case('kron', paddle.kron, ((2, 3), 'f'), ((3, 2), 'f'))
case('inverse', paddle.inverse, ((4, 4), 'spd'), half=False)


# ---- layers (float32) ------------------------------------------------------------
def lcase(name, build, fn, *inputs, **kw):
    CASES.append(Case(name, fn, list(inputs), layer=build, half=False,
                      layouts=kw.pop('layouts', ('contig',)), **kw))


nn = paddle.nn
lcase('LSTMCell', lambda: nn.LSTMCell(5, 7), lambda m, x: m(x)[0], ((3, 5), 'f'))
lcase('GRUCell', lambda: nn.GRUCell(5, 7), lambda m, x: m(x)[0], ((3, 5), 'f'))
lcase('SimpleRNNCell', lambda: nn.SimpleRNNCell(5, 7), lambda m, x: m(x)[0], ((3, 5), 'f'))
lcase('LSTM', lambda: nn.LSTM(5, 7, num_layers=2), lambda m, x: m(x)[0], ((3, 4, 5), 'f'))
lcase('GRU_bidir', lambda: nn.GRU(5, 7, direction='bidirect'), lambda m, x: m(x)[0],
      ((3, 4, 5), 'f'))
lcase('SimpleRNN', lambda: nn.SimpleRNN(5, 7), lambda m, x: m(x)[0], ((3, 4, 5), 'f'))
lcase('BatchNorm2D', lambda: nn.BatchNorm2D(3), lambda m, x: m(x), (X4, 'f'))
lcase('MultiHeadAttention', lambda: nn.MultiHeadAttention(8, 2),
      lambda m, x: m(x, x, x), ((2, 5, 8), 'f'))
lcase('TransformerEncoderLayer', lambda: nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0),
      lambda m, x: m(x), ((2, 5, 8), 'f'))
lcase('Conv2D+BN+ReLU', lambda: nn.Sequential(nn.Conv2D(3, 4, 3, padding=1), nn.BatchNorm2D(4),
                                              nn.ReLU()), lambda m, x: m(x), (X4, 'f'))


# ---- inputs ------------------------------------------------------------------------
def round_half(a, dtype):
    a = np.asarray(a, np.float32)
    if dtype == 'float16':
        return a.astype(np.float16).astype(np.float32)
    if dtype == 'bfloat16':
        b = a.view(np.uint32).astype(np.uint64)
        b = ((b + 0x7FFF + ((b >> 16) & 1)) & 0xFFFF0000).astype(np.uint32)
        return b.view(np.float32)
    return a


def gen(rng, shape, kind):
    if isinstance(kind, tuple):
        if kind[0] == 'perm':
            return rng.permutation(kind[1])[:shape[0]].astype(np.int64)
        return rng.randint(0, kind[1], size=shape).astype(np.int64)
    if kind == 'bool':
        return rng.rand(*shape) > 0.5
    if kind == 'pos':
        return rng.uniform(0.5, 2.0, shape).astype(np.float32)
    if kind == 'unit':
        return rng.uniform(-0.9, 0.9, shape).astype(np.float32)
    if kind == 'prob':
        return rng.uniform(0.05, 0.95, shape).astype(np.float32)
    if kind == 'nz':
        return (rng.choice([-1, 1], shape) * rng.uniform(0.3, 2.0, shape)).astype(np.float32)
    if kind == 'spd':
        m = rng.randn(*shape).astype(np.float32)
        return (m @ m.T + shape[0] * np.eye(shape[0])).astype(np.float32)
    return rng.randn(*shape).astype(np.float32)


def is_float_kind(kind):
    return not isinstance(kind, tuple) and kind in FLOAT_KINDS + ('spd',)


def make_inputs(c, layout, dtype, seed):
    """[(storage ndarray, kind, view)] with view None | ('T',) | ('step2',) |
    ('expand', shape); None when the layout does not apply to the case."""
    rng = np.random.RandomState(seed)
    shapes = [s for s, _ in c.inputs]
    if layout == 'bcast' and c.bcast:
        shapes = list(c.bcast) + shapes[len(c.bcast):]
    out, changed = [], False
    for shape, (_, kind) in zip(shapes, c.inputs):
        view = None
        if is_float_kind(kind) and kind != 'spd':
            if layout == 'strided' and len(shape) >= 2:
                a = gen(rng, shape, kind)
                out.append((np.ascontiguousarray(np.swapaxes(a, -1, -2)), kind, ('T',)))
                changed = True
                continue
            if layout == 'strided' and len(shape) == 1:
                a = gen(rng, shape, kind)
                st = np.zeros((2 * shape[0],), np.float32)
                st[::2] = a
                out.append((st, kind, ('step2',)))
                changed = True
                continue
            if layout == 'bcast' and not c.bcast and len(shape) >= 2 and shape[0] > 1:
                out.append((gen(rng, (1,) + tuple(shape[1:]), kind), kind, ('expand', shape)))
                changed = True
                continue
        out.append((gen(rng, shape, kind), kind, view))
    if layout == 'bcast' and c.bcast:
        changed = True
    if layout != 'contig' and not changed:
        return None
    if dtype in HALF:
        out = [(round_half(a, dtype) if is_float_kind(k) else a, k, v) for a, k, v in out]
    return out


def apply_view(t, view):
    if view is None:
        return t
    if view[0] == 'T':
        perm = list(range(t.ndim))
        perm[-1], perm[-2] = perm[-2], perm[-1]
        return paddle.transpose(t, perm)
    if view[0] == 'step2':
        return t[::2]
    return paddle.expand(t, list(view[1]))


def flat(out):
    if isinstance(out, (list, tuple)):
        r = []
        for o in out:
            r += flat(o)
        return r
    return [out]


LAYER_STATE = {}


def run(c, inputs, dtype, on_gpu, seed):
    """Outputs (float32/int numpy) and gradients of c on one device."""
    place = paddle.CUDAPlace(0) if on_gpu and not gpucommon.DRY else paddle.CPUPlace()
    paddle.set_device('gpu:0' if on_gpu and not gpucommon.DRY else 'cpu')
    leaves, views = [], []
    for a, kind, view in inputs:
        if is_float_kind(kind):
            t = paddle.to_tensor(a, dtype=dtype if on_gpu else 'float32', place=place,
                                 stop_gradient=not c.grad)
        else:
            t = paddle.to_tensor(a, place=place)
        leaves.append(t)
        views.append(apply_view(t, view))
    params = []
    if c.layer is not None:
        paddle.seed(seed)
        m = c.layer()
        if not on_gpu:
            LAYER_STATE[c.name] = {k: v.numpy() for k, v in m.state_dict().items()}
        else:
            m.set_state_dict(LAYER_STATE[c.name])
        m.train()
        params = list(m.parameters())
        outs = flat(c.fn(m, *views))
    else:
        outs = flat(c.fn(*views))
    if on_gpu and not gpucommon.DRY:
        for o in outs:
            if not o.place.is_gpu_place():
                raise RuntimeError('output on {} (expected the GPU)'.format(o.place))
    vals = [o.astype('float32').numpy() if o.dtype in (paddle.float16, paddle.bfloat16)
            else o.numpy() for o in outs]
    grads = []
    if c.grad:
        loss = None
        for i, o in enumerate(outs):
            if o.dtype.is_floating_point and not o.stop_gradient:
                w = np.asarray(np.random.RandomState(1000 + i).randn(*o.shape), np.float32)
                term = (o.astype('float32') * paddle.to_tensor(w, place=place)).sum()
                loss = term if loss is None else loss + term
        if loss is not None:
            loss.backward()
            for t in leaves + params:
                if t.dtype.is_floating_point:
                    g = t.grad
                    grads.append(None if g is None else g.astype('float32').numpy())
    paddle.set_device('cpu')
    return vals, grads


def rel_err(a, b):
    """(error, note) of device array a against reference b."""
    if a is None or b is None:
        return (0.0, '') if a is None and b is None else (np.inf, 'grad missing on one side')
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape:
        return np.inf, 'shape {} vs {}'.format(list(a.shape), list(b.shape))
    if b.dtype.kind in 'biu':
        bad = int(np.sum(a != b))
        return (0.0, '') if bad == 0 else (np.inf, '{} of {} elements differ'.format(bad, b.size))
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    if not np.array_equal(np.isnan(a64), np.isnan(b64)):
        return np.inf, 'NaN positions differ'
    m = np.isfinite(b64)
    if not np.array_equal(a64[~m], b64[~m]):
        return np.inf, 'inf values differ'
    if not m.any():
        return 0.0, ''
    d = np.abs(a64[m] - b64[m]).max() if m.any() else 0.0
    return float(d / max(np.abs(b64[m]).max(), 1e-2)), ''


def check(c, dtype, seed):
    """(fwd_ok, bwd_ok or None, max err, note) over the layouts."""
    worst, note, fwd_ok, bwd_ok = 0.0, '', True, None
    tol = c.tol.get(dtype, TOL[dtype])
    for li, layout in enumerate(c.layouts):
        inputs = make_inputs(c, layout, dtype, seed + li)
        if inputs is None:
            continue
        try:
            ref_v, ref_g = run(c, inputs, dtype, False, seed)
        except Exception as e:  # noqa: BLE001
            return False, None, np.inf, 'CPU reference failed ({}): {}'.format(layout, e)
        try:
            v, g = run(c, inputs, dtype, True, seed)
        except Exception as e:  # noqa: BLE001
            msg = str(e).strip().splitlines()[-1] if str(e).strip() else type(e).__name__
            if os.environ.get('OPS_VS_CPU_TRACE'):
                traceback.print_exc()
            return False, False if c.grad else None, np.inf, '{}: {}: {}'.format(
                layout, type(e).__name__, msg[:160])
        paddle.set_device('cpu')
        for a, b in zip(v, ref_v):
            if dtype in HALF and not c.idx_half and np.asarray(b).dtype.kind in 'iu':
                continue
            e, n = rel_err(a, b)
            worst = max(worst, e)
            if e > tol:
                fwd_ok = False
                note = note or '{} fwd: {}'.format(layout, n or 'err {:.2e}'.format(e))
        if len(v) != len(ref_v):
            fwd_ok, note = False, note or 'output count differs'
        if c.grad and ref_g:
            bwd_ok = True if bwd_ok is None else bwd_ok
            if len(g) != len(ref_g):
                bwd_ok, note = False, note or 'gradient count differs'
            for a, b in zip(g, ref_g):
                e, n = rel_err(a, b)
                worst = max(worst, e)
                if e > tol:
                    bwd_ok = False
                    note = note or '{} bwd: {}'.format(layout, n or 'err {:.2e}'.format(e))
    return fwd_ok, bwd_ok, worst, note


# ---- optimizers and the generator --------------------------------------------------
def optimizer_rows():
    rows = []
    O = paddle.optimizer
    opts = [('SGD', lambda p: O.SGD(0.1, parameters=p)),
            ('Momentum', lambda p: O.Momentum(0.1, momentum=0.9, parameters=p)),
            ('Momentum_nesterov', lambda p: O.Momentum(0.1, 0.9, parameters=p,
                                                       use_nesterov=True)),
            ('Adam', lambda p: O.Adam(0.01, parameters=p)),
            ('AdamW', lambda p: O.AdamW(0.01, parameters=p, weight_decay=0.1)),
            ('Adamax', lambda p: O.Adamax(0.01, parameters=p)),
            ('Adagrad', lambda p: O.Adagrad(0.1, parameters=p)),
            ('Adadelta', lambda p: O.Adadelta(1.0, parameters=p)),
            ('RMSProp', lambda p: O.RMSProp(0.01, parameters=p)),
            ('Lamb', lambda p: O.Lamb(0.01, parameters=p)),
            ('NAdam', lambda p: O.NAdam(0.01, parameters=p)),
            ('RAdam', lambda p: O.RAdam(0.01, parameters=p)),
            ('SGD_clip_global_norm', lambda p: O.SGD(0.1, parameters=p,
                                                     grad_clip=paddle.nn.ClipGradByGlobalNorm(0.5))),
            ('Adam_weight_decay_L2', lambda p: O.Adam(0.01, parameters=p, weight_decay=0.01))]
    rng = np.random.RandomState(7)
    xs = rng.randn(3, 8, 6).astype(np.float32)
    ys = rng.randn(3, 8, 4).astype(np.float32)
    for name, mk in opts:
        res = {}
        try:
            for dev in ('cpu', 'gpu'):
                on_gpu = dev == 'gpu' and not gpucommon.DRY
                paddle.set_device('gpu:0' if on_gpu else 'cpu')
                paddle.seed(3)
                net = paddle.nn.Sequential(paddle.nn.Linear(6, 5), paddle.nn.Tanh(),
                                           paddle.nn.Linear(5, 4))
                if dev == 'cpu':
                    state = {k: v.numpy() for k, v in net.state_dict().items()}
                else:
                    net.set_state_dict(state)
                opt = mk(net.parameters())
                losses = []
                for x, y in zip(xs, ys):
                    loss = F.mse_loss(net(paddle.to_tensor(x)), paddle.to_tensor(y))
                    loss.backward()
                    opt.step()
                    opt.clear_grad()
                    losses.append(float(loss))
                res[dev] = (np.array(losses), [p.numpy() for p in net.parameters()])
            paddle.set_device('cpu')
            fe, _ = rel_err(res['gpu'][0], res['cpu'][0])
            be = max(rel_err(a, b)[0] for a, b in zip(res['gpu'][1], res['cpu'][1]))
            rows.append(('optim.' + name, 'float32', fe <= 1e-5, be <= 1e-5, max(fe, be),
                         '' if max(fe, be) <= 1e-5 else 'params err {:.2e}'.format(be)))
        except Exception as e:  # noqa: BLE001
            paddle.set_device('cpu')
            rows.append(('optim.' + name, 'float32', False, False, np.inf,
                         '{}: {}'.format(type(e).__name__, str(e)[:160])))
    return rows


def random_rows():
    """Same seed, same numbers on both backends (Philox on the device)."""
    rows = []
    gens = [('rand', lambda: paddle.rand([1000])), ('randn', lambda: paddle.randn([1000])),
            ('uniform', lambda: paddle.uniform([1000], min=-2, max=3)),
            ('normal', lambda: paddle.normal(1.0, 2.0, [1000])),
            ('randint', lambda: paddle.randint(0, 100, [1000])),
            ('randperm', lambda: paddle.randperm(100)),
            ('bernoulli', lambda: paddle.bernoulli(paddle.full([1000], 0.3))),
            ('dropout_p0.5', lambda: F.dropout(paddle.ones([1000]), p=0.5, training=True)),
            ('init.XavierUniform', lambda: paddle.nn.Linear(20, 30).weight)]
    for name, f in gens:
        try:
            out = {}
            for dev in ('cpu', 'gpu'):
                paddle.set_device('gpu:0' if dev == 'gpu' and not gpucommon.DRY else 'cpu')
                paddle.seed(1234)
                out[dev] = f().numpy()
            paddle.set_device('cpu')
            e, n = rel_err(out['gpu'], out['cpu'])
            rows.append(('random.' + name, 'float32', e <= 1e-5, None, e, n))
        except Exception as ex:  # noqa: BLE001
            paddle.set_device('cpu')
            rows.append(('random.' + name, 'float32', False, None, np.inf,
                         '{}: {}'.format(type(ex).__name__, str(ex)[:160])))
    return rows


def main():
    gpucommon.device_or_skip(paddle, 'ops_vs_cpu')
    paddle.set_device('cpu')
    pat = sys.argv[1] if len(sys.argv) > 1 else ''
    t0 = time.time()
    rows = []
    for i, c in enumerate(CASES):
        if pat and pat not in c.name:
            continue
        half = HALF if c.half and (not gpucommon.DRY or os.environ.get('OPS_VS_CPU_HALF')) else ()
        for dtype in ('float32',) + half:
            fo, bo, err, note = check(c, dtype, 100 + i)
            rows.append((c.name, dtype, fo, bo, err, note))
    if not pat or 'optim' in pat:
        rows += optimizer_rows()
    if not pat or 'random' in pat:
        rows += random_rows()

    def mark(ok):
        return '-' if ok is None else 'ok' if ok else 'FAIL'

    print('| op | dtype | fwd | bwd | max rel err | note |')
    print('|---|---|---|---|---|---|')
    for name, dt, fo, bo, err, note in rows:
        print('| {} | {} | {} | {} | {} | {} |'.format(name, dt, mark(fo), mark(bo),
                                                  'inf' if not np.isfinite(err) else
                                                  '{:.2e}'.format(err), note.replace('|', '/')))
    failed = [r for r in rows if not r[2] or r[3] is False]
    ops = len({r[0] for r in rows})
    print()
    print('{} ops, {} rows (op x dtype; each over contiguous, strided and broadcast inputs), '
          '{} failed, {:.0f} s'.format(ops, len(rows), len(failed), time.time() - t0))
    for r in failed[:60]:
        print('FAILED {} [{}]: {}'.format(r[0], r[1], r[5]))
    worst = max((r[4] for r in rows if np.isfinite(r[4])), default=0.0)
    print('detail: {}{} ops / {} op-dtype rows vs the CPU backend, fwd+bwd over contiguous/'
          'strided/broadcast inputs: {} failed{}; worst finite rel err {:.1e}'.format(
              'DRY RUN on the CPU: ' if gpucommon.DRY else '', ops, len(rows), len(failed),
              ' (' + ', '.join(sorted({r[0] for r in failed}))[:300] + ')' if failed else '',
              worst))
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
