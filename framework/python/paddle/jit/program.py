"""Building the graph from two traces, its files, and running it in Python
(private to paddle.jit).

Files (framework/graph/README.md is the reference):
  PATH.pdmodel   JSON: {"format": "eddy-graph", "version": 1, "inputs",
                 "outputs", "values", "nodes"}
  PATH.pdiparams safetensors (little-endian, 8-byte aligned header) holding
                 every parameter and constant the nodes read.
"""
import json
import os
import struct

import numpy as np

from paddle import _C

from . import trace as _trace

FORMAT = 'eddy-graph'
VERSION = 1
MODEL_SUFFIX = '.pdmodel'
PARAMS_SUFFIX = '.pdiparams'

_ST_DTYPES = {'float32': 'F32', 'float64': 'F64', 'int32': 'I32', 'int64': 'I64',
              'bool': 'BOOL', 'float16': 'F16', 'uint8': 'U8'}
_NP_DTYPES = {v: k for k, v in _ST_DTYPES.items()}


def _sym_attr(a1, a2, syms, where):
    """Merge an attribute of the two traces (see trace.py)."""
    if isinstance(a1, list) and isinstance(a2, list) and len(a1) == len(a2):
        return [_sym_attr(x, y, syms, where) for x, y in zip(a1, a2)]
    if a1 == a2:
        return a1
    if isinstance(a1, int) and isinstance(a2, int) and not isinstance(a1, bool):
        hits = [k for k, (s1, s2) in enumerate(syms) if (s1, s2) == (a1, a2)]
        if hits:   # equal sizes in both traces: any of them (checked at run time)
            return '${}'.format(hits[0])
    raise _trace.TracingError(
        '{}: the traced graph depends on the size of a dynamic input dimension in a way '
        'the graph cannot express ({} vs {} for sizes {} and {}); give the InputSpec a '
        'fixed size or compute the shape with tensor ops'.format(
            where, a1, a2, _trace.TRACE_SIZES[0], _trace.TRACE_SIZES[1]))


def build(fn, specs, params):
    """Trace fn twice and return the graph (a dict) and its tensors
    {name: numpy array}."""
    # Dynamic batch dimensions (axis 0) share one size per trace (inputs of
    # one batch must broadcast together); other dynamic dimensions get sizes
    # of their own.
    axes = [a for s in specs for a, d in enumerate(s.shape) if d is None or d < 0]
    s1, s2 = _trace.TRACE_SIZES
    sizes1 = [s1 if a == 0 else s1 + 6 + i for i, a in enumerate(axes)]
    sizes2 = [s2 if a == 0 else s2 + 6 + i for i, a in enumerate(axes)]
    t1, out1 = _trace.trace_once(fn, specs, params, sizes1)
    if axes:
        t2, out2 = _trace.trace_once(fn, specs, params, sizes2)
    else:
        t2, out2 = t1, out1
    syms = list(zip(sizes1, sizes2))
    if len(t1.nodes) != len(t2.nodes) or out1 != out2:
        raise _trace.TracingError(
            'paddle.jit: the forward runs different operations for different sizes of the '
            'dynamic input dimensions ({} vs {} ops); shape-dependent Python control flow '
            'cannot be saved'.format(len(t1.nodes), len(t2.nodes)))
    nodes = []
    for n1, n2 in zip(t1.nodes, t2.nodes):
        if n1['op'] != n2['op'] or n1['inputs'] != n2['inputs']:
            raise _trace.TracingError(
                '{}: the forward runs a different operation ({} vs {}) for another size of '
                'a dynamic input dimension'.format(n1['loc'], n1['op'], n2['op']))
        attrs = {k: _sym_attr(v, n2['attrs'].get(k), syms, n1['loc'])
                 for k, v in n1['attrs'].items()}
        nodes.append(dict(n1, attrs=attrs))
    values = {}
    for name, (dt, shape) in t1.meta.items():
        shape2 = t2.meta.get(name, (dt, shape))[1]
        values[name] = {'dtype': dt,
                        'shape': [a if a == b else -1 for a, b in zip(shape, shape2)]}
    tensors = {k: np.ascontiguousarray(v.numpy()) for k, v in t1.used_params.items()}
    for k, v in t1.consts.items():
        if k in t2.consts and not np.array_equal(v, t2.consts[k]):
            raise _trace.TracingError(
                'paddle.jit: a constant computed in the forward depends on the input size')
        tensors[k] = np.ascontiguousarray(v)
    inputs = []
    for i, s in enumerate(specs):
        inputs.append({'name': s.name or 'x{}'.format(i), 'dtype': s.dtype,
                       'shape': [-1 if d is None or d < 0 else int(d) for d in s.shape]})
    graph = {'format': FORMAT, 'version': VERSION, 'inputs': inputs,
             'outputs': [{'name': 'out{}'.format(i) if len(out1) > 1 else 'out', 'value': v}
                         for i, v in enumerate(out1)],
             'values': values, 'nodes': nodes}
    return graph, tensors


# ---- safetensors --------------------------------------------------------

def write_safetensors(path, tensors, metadata=None):
    header, off, blobs = {}, 0, []
    if metadata:
        header['__metadata__'] = {str(k): str(v) for k, v in metadata.items()}
    for name in sorted(tensors):
        a = np.ascontiguousarray(tensors[name])
        dt = a.dtype.name
        if dt not in _ST_DTYPES:
            raise TypeError('jit.save: cannot store a {} tensor ({})'.format(dt, name))
        b = a.astype(a.dtype.newbyteorder('<'), copy=False).tobytes()
        header[name] = {'dtype': _ST_DTYPES[dt], 'shape': list(a.shape),
                        'data_offsets': [off, off + len(b)]}
        off += len(b)
        blobs.append(b)
    h = json.dumps(header, separators=(',', ':')).encode()
    h += b' ' * ((8 - len(h) % 8) % 8)
    tmp = path + '.tmp'
    with open(tmp, 'wb') as f:
        f.write(struct.pack('<Q', len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)
    os.replace(tmp, path)


def read_safetensors(path):
    with open(path, 'rb') as f:
        data = f.read()
    if len(data) < 8:
        raise ValueError('{}: truncated safetensors file'.format(path))
    n = struct.unpack('<Q', data[:8])[0]
    if n > len(data) - 8:
        raise ValueError('{}: safetensors header runs past the end of the file'.format(path))
    header = json.loads(data[8:8 + n])
    body = memoryview(data)[8 + n:]
    out = {}
    for name, e in header.items():
        if name == '__metadata__':
            continue
        b, e_ = e['data_offsets']
        if not 0 <= b <= e_ <= len(body):
            raise ValueError('{}: tensor {} lies outside the file'.format(path, name))
        dt = np.dtype(_NP_DTYPES[e['dtype']]).newbyteorder('<')
        out[name] = np.frombuffer(body[b:e_], dtype=dt).reshape(e['shape']).astype(
            dt.newbyteorder('='))
    return out


def save(graph, tensors, path):
    d = os.path.dirname(path)
    if d:
        os.makedirs(d, exist_ok=True)
    write_safetensors(path + PARAMS_SUFFIX, tensors, {'format': FORMAT})
    tmp = path + MODEL_SUFFIX + '.tmp'
    with open(tmp, 'w') as f:
        json.dump(graph, f, indent=1)
    os.replace(tmp, path + MODEL_SUFFIX)


def load(path):
    with open(path + MODEL_SUFFIX) as f:
        graph = json.load(f)
    if graph.get('format') != FORMAT or graph.get('version') != VERSION:
        raise ValueError('{}{}: not an Eddy graph (format {!r} version {!r})'.format(
            path, MODEL_SUFFIX, graph.get('format'), graph.get('version')))
    return graph, read_safetensors(path + PARAMS_SUFFIX)


# ---- the Python executor (paddle.jit.load) ------------------------------

def _resolve(v, syms):
    if isinstance(v, dict):
        return {k: _resolve(e, syms) for k, e in v.items()}
    if isinstance(v, list):
        return [_resolve(e, syms) for e in v]
    if isinstance(v, str) and v.startswith('$'):
        return syms[int(v[1:])]
    return v


_C_NAMES = {'sub': 'subtract', 'mul': 'multiply', 'div': 'divide'}


def run_node(op, ins, a):
    """Run one graph node with paddle._C (the same kernels the C runtime calls)."""
    if op == 'identity':
        return ins[0]
    if op.endswith('_scalar'):
        base = op[:-7]
        s = a['s']
        if base.startswith('r'):
            return getattr(_C, _C_NAMES.get(base[1:], base[1:]))(s, ins[0])
        return getattr(_C, _C_NAMES.get(base, base))(ins[0], s)
    if op in ('add', 'sub', 'mul', 'div', 'pow', 'maximum', 'minimum'):
        return getattr(_C, _C_NAMES.get(op, op))(ins[0], ins[1])
    if op == 'linear':
        return _C.linear(ins[0], ins[1], ins[2])
    if op == 'conv2d':
        return _C.conv2d(ins[0], ins[1], ins[2], a['stride'], a['padding'], a['dilation'],
                         a['groups'])
    if op == 'max_pool2d':
        return _C.max_pool2d(ins[0], a['kernel'], a['stride'], a['padding'], a['ceil_mode'],
                             False)
    if op == 'avg_pool2d':
        return _C.avg_pool2d(ins[0], a['kernel'], a['stride'], a['padding'], a['ceil_mode'],
                             a['exclusive'])
    if op == 'adaptive_avg_pool2d':
        return _C.adaptive_avg_pool2d(ins[0], a['output_size'])
    if op == 'batch_norm':
        return _C.batch_norm(ins[0], ins[1], ins[2], ins[3], ins[4], False, 0.9, a['epsilon'])
    if op == 'layer_norm':
        return _C.layer_norm(ins[0], a['normalized_shape'], ins[1], ins[2], a['epsilon'])
    if op in ('softmax', 'log_softmax'):
        return getattr(_C, op)(ins[0], a['axis'])
    if op == 'gelu':
        return _C.gelu(ins[0], a['approximate'])
    if op == 'leaky_relu':
        return _C.leaky_relu(ins[0], a['negative_slope'])
    if op == 'matmul':
        return _C.matmul(ins[0], ins[1], a['transpose_x'], a['transpose_y'])
    if op == 'reshape':
        return _C.reshape(ins[0], a['shape'])
    if op == 'flatten':
        return _C.flatten(ins[0], a['start_axis'], a['stop_axis'])
    if op in ('squeeze', 'unsqueeze'):
        return getattr(_C, op)(ins[0], a['axes'] or None)
    if op == 'transpose':
        return _C.transpose(ins[0], a['perm'])
    if op in ('sum', 'mean', 'max', 'min'):
        return getattr(_C, op)(ins[0], a['axes'] or None, a['keepdim'])
    if op == 'concat':
        return _C.concat(list(ins), a['axis'])
    if op == 'clip':
        return _C.clip(ins[0], a.get('min'), a.get('max'))
    if op == 'cast':
        return _C.cast(ins[0], a['dtype'])
    if op in ('relu', 'sigmoid', 'tanh', 'exp', 'log', 'sqrt', 'rsqrt', 'abs', 'neg', 'square',
              'silu', 'sin', 'cos'):
        return getattr(_C, op)(ins[0])
    raise ValueError('paddle.jit.load: unknown graph op {!r}'.format(op))


def check_inputs(graph, args):
    """The symbol values (dynamic dims) for args, checking dtypes and shapes."""
    specs = graph['inputs']
    if len(args) != len(specs):
        raise ValueError('the saved model takes {} inputs, got {}'.format(len(specs), len(args)))
    syms = []
    for s, x in zip(specs, args):
        if not isinstance(x, _C.Tensor):
            raise TypeError('input {!r}: expected a Tensor, got {}'.format(
                s['name'], type(x).__name__))
        dt = str(x.dtype).replace('paddle.', '')
        if dt != s['dtype']:
            raise TypeError('input {!r}: expected dtype {}, got {}'.format(s['name'], s['dtype'],
                                                                          dt))
        shape = list(x.shape)
        if len(shape) != len(s['shape']) or any(
                d >= 0 and d != e for d, e in zip(s['shape'], shape)):
            raise ValueError('input {!r}: expected shape {}, got {}'.format(
                s['name'], s['shape'], shape))
        syms.extend(e for d, e in zip(s['shape'], shape) if d < 0)
    return syms


def run(graph, params, args):
    """Run the graph on args (Tensors); params maps names to Tensors."""
    syms = check_inputs(graph, args)
    env = dict(params)
    for s, x in zip(graph['inputs'], args):
        env[s['name']] = x
    for n in graph['nodes']:
        ins = [env[i] if i else None for i in n['inputs']]
        env[n['outputs'][0]] = run_node(n['op'], ins, _resolve(n['attrs'], syms))
    outs = [env[o['value']] for o in graph['outputs']]
    return outs[0] if len(outs) == 1 else outs
