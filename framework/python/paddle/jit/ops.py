"""The graph IR's operator vocabulary (private to paddle.jit).

Each traced `paddle._C` function maps to one graph op. SIGS gives, per
`_C` name, its parameters in order: ('t', name) a tensor input (None allowed
when optional), ('l', name) a list of tensors, ('a', name, default) an
attribute. The C runtime (framework/graph/) implements the same vocabulary;
framework/graph/README.md documents every op and attribute.
"""

_T, _L, _A = 't', 'l', 'a'

UNARY = ('relu', 'sigmoid', 'tanh', 'exp', 'log', 'sqrt', 'rsqrt', 'abs', 'neg', 'square',
         'silu', 'sin', 'cos')
BINARY = {'add': 'add', 'subtract': 'sub', 'multiply': 'mul', 'divide': 'div', 'pow': 'pow',
          'maximum': 'maximum', 'minimum': 'minimum'}
REDUCE = ('sum', 'mean', 'max', 'min')

SIGS = {
    'linear': [(_T, 'x'), (_T, 'w'), (_T, 'b', None)],
    'conv2d': [(_T, 'x'), (_T, 'w'), (_T, 'b', None), (_A, 'stride', (1, 1)),
               (_A, 'padding', (0, 0, 0, 0)), (_A, 'dilation', (1, 1)), (_A, 'groups', 1)],
    'max_pool2d': [(_T, 'x'), (_A, 'kernel', None), (_A, 'stride', None),
                   (_A, 'padding', (0, 0)), (_A, 'ceil_mode', False),
                   (_A, 'return_mask', False)],
    'avg_pool2d': [(_T, 'x'), (_A, 'kernel', None), (_A, 'stride', None),
                   (_A, 'padding', (0, 0)), (_A, 'ceil_mode', False), (_A, 'exclusive', True)],
    'adaptive_avg_pool2d': [(_T, 'x'), (_A, 'output_size', None)],
    'batch_norm': [(_T, 'x'), (_T, 'mean'), (_T, 'var'), (_T, 'w', None), (_T, 'b', None),
                   (_A, 'training', False), (_A, 'momentum', 0.9), (_A, 'epsilon', 1e-5)],
    'layer_norm': [(_T, 'x'), (_A, 'normalized_shape', None), (_T, 'w', None),
                   (_T, 'b', None), (_A, 'epsilon', 1e-5)],
    'dropout': [(_T, 'x'), (_A, 'p', 0.5), (_A, 'training', True),
                (_A, 'mode', 'upscale_in_train')],
    'softmax': [(_T, 'x'), (_A, 'axis', -1)],
    'log_softmax': [(_T, 'x'), (_A, 'axis', -1)],
    'gelu': [(_T, 'x'), (_A, 'approximate', False)],
    'leaky_relu': [(_T, 'x'), (_A, 'negative_slope', 0.01)],
    'matmul': [(_T, 'x'), (_T, 'y'), (_A, 'transpose_x', False), (_A, 'transpose_y', False)],
    'reshape': [(_T, 'x'), (_A, 'shape', None)],
    'flatten': [(_T, 'x'), (_A, 'start_axis', 0), (_A, 'stop_axis', -1)],
    'squeeze': [(_T, 'x'), (_A, 'axis', None)],
    'unsqueeze': [(_T, 'x'), (_A, 'axis', None)],
    'transpose': [(_T, 'x'), (_A, 'perm', None)],
    'concat': [(_L, 'xs'), (_A, 'axis', 0)],
    'clip': [(_T, 'x'), (_A, 'min', None), (_A, 'max', None)],
    'cast': [(_T, 'x'), (_A, 'dtype', None)],
    'contiguous': [(_T, 'x')],
}
for _n in UNARY:
    SIGS[_n] = [(_T, 'x')]
for _n in BINARY:
    SIGS[_n] = [(_T, 'x'), (_T, 'y')]
for _n in REDUCE:
    SIGS[_n] = [(_T, 'x'), (_A, 'axis', None), (_A, 'keepdim', False)]

# _C functions that never take a tensor computed from the inputs and may run
# while tracing (creation of constants, RNG, grad mode, dtype helpers).
PASSTHROUGH = frozenset((
    'to_tensor', 'zeros', 'ones', 'full', 'empty', 'arange', 'linspace', 'eye', 'seed',
    'get_rng_state', 'set_rng_state', 'is_grad_enabled', 'set_grad_enabled',
))


def bind(name, args, kwargs):
    """(tensor slots, attrs) of a call to _C.name: tensor slots is a list of
    (param name, value) in order, lists flattened into one slot of a list."""
    sig = SIGS[name]
    vals = {}
    for i, a in enumerate(args):
        if i >= len(sig):
            raise TypeError('{}: too many arguments'.format(name))
        vals[sig[i][1]] = a
    for k, v in kwargs.items():
        vals[k] = v
    tensors, attrs = [], {}
    for p in sig:
        kind, pname = p[0], p[1]
        if kind == _A:
            attrs[pname] = vals.get(pname, p[2])
        else:
            tensors.append((pname, vals.get(pname, p[2] if len(p) > 2 else None)))
    return tensors, attrs


def _ints(v, n=None):
    if v is None:
        return None
    if isinstance(v, int):
        return [int(v)] * (n or 1)
    return [int(e) for e in v]


def canonical(name, attrs, scalar_side=None, scalar=None):
    """The graph op and attributes for a traced call (raises ValueError for a
    use the inference graph cannot express)."""
    if name in BINARY:
        base = BINARY[name]
        if scalar_side is None:
            return base, {}
        if scalar_side == 'y':
            return base + '_scalar', {'s': float(scalar)}
        rev = {'add': 'add_scalar', 'mul': 'mul_scalar', 'sub': 'rsub_scalar',
               'div': 'rdiv_scalar', 'pow': 'rpow_scalar'}
        if base not in rev:
            raise ValueError('{} with a Python number as first operand'.format(name))
        return rev[base], {'s': float(scalar)}
    a = dict(attrs)
    if name == 'conv2d':
        pad = _ints(a['padding'])
        if len(pad) == 2:
            pad = [pad[0], pad[0], pad[1], pad[1]]
        return 'conv2d', {'stride': _ints(a['stride'], 2), 'padding': pad,
                          'dilation': _ints(a['dilation'], 2), 'groups': int(a['groups'])}
    if name in ('max_pool2d', 'avg_pool2d'):
        if a.get('return_mask'):
            raise ValueError('max_pool2d with return_mask=True')
        k = _ints(a['kernel'], 2)
        out = {'kernel': k, 'stride': _ints(a['stride'], 2) or k,
               'padding': _ints(a['padding'], 2), 'ceil_mode': bool(a['ceil_mode'])}
        if name == 'avg_pool2d':
            out['exclusive'] = bool(a['exclusive'])
        return name, out
    if name == 'adaptive_avg_pool2d':
        return name, {'output_size': _ints(a['output_size'], 2)}
    if name == 'batch_norm':
        if a['training']:
            raise ValueError('batch_norm in training mode (call layer.eval() first)')
        return name, {'epsilon': float(a['epsilon'])}
    if name == 'layer_norm':
        return name, {'normalized_shape': _ints(a['normalized_shape']),
                      'epsilon': float(a['epsilon'])}
    if name == 'dropout':
        if a['training'] and float(a['p']) > 0:
            raise ValueError('dropout in training mode (call layer.eval() first)')
        if a['mode'] == 'downscale_in_infer':
            return 'mul_scalar', {'s': 1.0 - float(a['p'])}
        return 'identity', {}
    if name == 'contiguous':
        return 'identity', {}
    if name in ('softmax', 'log_softmax'):
        return name, {'axis': int(a['axis'])}
    if name == 'gelu':
        return name, {'approximate': bool(a['approximate'])}
    if name == 'leaky_relu':
        return name, {'negative_slope': float(a['negative_slope'])}
    if name == 'matmul':
        return name, {'transpose_x': bool(a['transpose_x']),
                      'transpose_y': bool(a['transpose_y'])}
    if name == 'reshape':
        return name, {'shape': _ints(a['shape'])}
    if name == 'flatten':
        return name, {'start_axis': int(a['start_axis']), 'stop_axis': int(a['stop_axis'])}
    if name in ('squeeze', 'unsqueeze'):
        return name, {'axes': _ints(a['axis']) if a['axis'] is not None else []}
    if name == 'transpose':
        return name, {'perm': _ints(a['perm'])}
    if name in REDUCE:
        ax = a['axis']
        return name, {'axes': [] if ax is None else _ints(ax), 'keepdim': bool(a['keepdim'])}
    if name == 'concat':
        return name, {'axis': int(a['axis'])}
    if name == 'clip':
        out = {}
        if a['min'] is not None:
            out['min'] = float(a['min'])
        if a['max'] is not None:
            out['max'] = float(a['max'])
        return name, out
    if name == 'cast':
        from paddle.framework.dtype import convert_dtype
        return name, {'dtype': convert_dtype(a['dtype'])}
    return name, {}
