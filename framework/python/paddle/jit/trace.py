"""Tracing a forward into the graph IR (private to paddle.jit).

While a trace runs, every function of `paddle._C` (which all of paddle's
Python layers call through the module attribute) and the Tensor operators
implemented in C are wrapped: a call whose arguments include a tensor
computed from the inputs is recorded as a graph node (ops.py) and then run
eagerly, so the trace also computes real values. Converting such a tensor to
a Python bool/int/float/list/array (an `if` or `for` over tensor values) raises
TracingError naming the user's file:line: the branch taken would otherwise be
frozen into the graph silently.

Dynamic dimensions (-1/None in an InputSpec) are kept symbolic by tracing
twice, with two different sizes for every dynamic dimension: the two graphs
must have the same nodes; an integer attribute that equals the dynamic size
in both traces (x.reshape([x.shape[0], -1])) becomes the symbol "$k" (the
k-th dynamic dimension); any other difference is reported as a shape
dependence the graph cannot express.
"""
import os
import sys

import numpy as np

from paddle import _C

from . import ops as _ops

_PKG_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Sizes given to dynamic dimensions in the two traces (unlikely to coincide
# with a model's fixed sizes).
TRACE_SIZES = (7, 11)


class TracingError(RuntimeError):
    """A forward cannot be captured as a static graph."""


def user_location():
    """'file:line' of the innermost frame outside the paddle package."""
    f = sys._getframe(1)
    while f is not None:
        fn = os.path.abspath(f.f_code.co_filename)
        if not fn.startswith(_PKG_DIR + os.sep):
            return '{}:{}'.format(f.f_code.co_filename, f.f_lineno)
        f = f.f_back
    return '<unknown>'


class _Trace:
    def __init__(self, params):
        self.nodes = []          # dicts: op, inputs, outputs, attrs, loc
        self.values = {}         # id(tensor) -> value name
        self.keep = []           # tensors kept alive so ids stay unique
        self.meta = {}           # value name -> (dtype, shape)
        self.consts = {}         # value name -> numpy array
        self.params = params     # id(tensor) -> parameter name
        self.used_params = {}    # parameter name -> tensor
        self.tainted = {}        # id(tensor) -> (operation, loc) the graph cannot hold
        self.n = 0

    def is_traced(self, t):
        return isinstance(t, _C.Tensor) and (id(t) in self.values or id(t) in self.tainted)

    def taint(self, out, what, loc):
        """Mark the results of an operation the graph cannot hold: an error
        when they reach the graph, a control-flow error when converted."""
        for o in out if isinstance(out, (list, tuple)) else [out]:
            if isinstance(o, _C.Tensor):
                self.tainted[id(o)] = (what, loc)
                self.keep.append(o)
        return out

    def ref(self, t):
        """The value name of an operand tensor (a parameter or a constant
        when it was not computed from the inputs)."""
        if id(t) in self.values:
            return self.values[id(t)]
        if id(t) in self.tainted:
            what, loc = self.tainted[id(t)]
            raise TracingError('{}: paddle.jit cannot save the operation {} (not in the '
                               'inference graph\'s operator set)'.format(loc, what))
        if id(t) in self.params:
            name = self.params[id(t)]
            self.used_params[name] = t
        else:
            name = 'const{}'.format(len(self.consts))
            self.consts[name] = t.numpy()
        self.values[id(t)] = name
        self.keep.append(t)
        self.meta[name] = (str(t.dtype).replace('paddle.', ''), list(t.shape))
        return name

    def new_value(self, t):
        name = 't{}'.format(self.n)
        self.n += 1
        self.values[id(t)] = name
        self.keep.append(t)
        self.meta[name] = (str(t.dtype).replace('paddle.', ''), list(t.shape))
        return name

    def record(self, cname, args, kwargs, fn):
        loc = user_location()
        try:
            tensors, attrs = _ops.bind(cname, args, kwargs)
        except TypeError as e:
            raise TracingError('{}: {}'.format(loc, e))
        scalar_side, scalar = None, None
        if cname in _ops.BINARY:
            x, y = tensors[0][1], tensors[1][1]
            if not isinstance(x, _C.Tensor):
                scalar_side, scalar, tensors = 'x', x, [tensors[1]]
            elif not isinstance(y, _C.Tensor):
                scalar_side, scalar, tensors = 'y', y, [tensors[0]]
        try:
            op, cattrs = _ops.canonical(cname, attrs, scalar_side, scalar)
        except (ValueError, TypeError) as e:
            raise TracingError('{}: paddle.jit cannot save {}'.format(loc, e))
        ins = []
        for pname, v in tensors:
            if v is None:
                ins.append('')
            elif isinstance(v, (list, tuple)):
                ins.extend(self.ref(e) for e in v)
            elif isinstance(v, _C.Tensor):
                ins.append(self.ref(v))
            else:
                raise TracingError('{}: {}: argument {} is a {}, expected a Tensor'.format(
                    loc, cname, pname, type(v).__name__))
        out = fn(*args, **kwargs)
        if not isinstance(out, _C.Tensor):
            raise TracingError('{}: {} returned a {}, not a Tensor'.format(
                loc, cname, type(out).__name__))
        # An op may return its input (a no-op reshape): give the result a new
        # name only when it is a new object.
        if id(out) in self.values:
            name = self.values[id(out)]
            self.nodes.append({'op': 'identity', 'inputs': [ins[0]], 'outputs': [name + '_'],
                               'attrs': {}, 'loc': loc})
            self.values[id(out)] = name + '_'
            self.meta[name + '_'] = self.meta[name]
            return out
        self.nodes.append({'op': op, 'inputs': ins, 'outputs': [self.new_value(out)],
                           'attrs': cattrs, 'loc': loc})
        return out


_current = None


def _any_traced(objs):
    for o in objs:
        if isinstance(o, _C.Tensor):
            if _current.is_traced(o):
                return True
        elif isinstance(o, (list, tuple)):
            if _any_traced(o):
                return True
    return False


def _wrap_c(name, fn):
    def wrapper(*args, **kwargs):
        if _current is None or not (_any_traced(args) or _any_traced(kwargs.values())):
            return fn(*args, **kwargs)
        if name not in _ops.SIGS:
            return _current.taint(fn(*args, **kwargs), repr(name), user_location())
        return _current.record(name, args, kwargs, fn)
    wrapper.__name__ = name
    wrapper.__wrapped__ = fn
    return wrapper


# Tensor operators implemented in C: name -> (_C function, reflected?)
_DUNDERS = {
    '__add__': ('add', False), '__radd__': ('add', True),
    '__sub__': ('subtract', False), '__rsub__': ('subtract', True),
    '__mul__': ('multiply', False), '__rmul__': ('multiply', True),
    '__truediv__': ('divide', False), '__rtruediv__': ('divide', True),
    '__pow__': ('pow', False), '__rpow__': ('pow', True),
    '__matmul__': ('matmul', False), '__rmatmul__': ('matmul', True),
}
_CONVERSIONS = ('__bool__', '__int__', '__float__', '__index__', 'item', '_numpy', 'tolist',
                'numpy', '__array__', '__iter__', '__len__')


def _wrap_dunder(attr, cname, reflected, orig):
    def wrapper(self, other, *rest):
        if _current is None or not (_current.is_traced(self) or _any_traced([other])):
            return orig(self, other, *rest)
        cfn = getattr(_C, cname).__wrapped__
        a, b = (other, self) if reflected else (self, other)
        return _current.record(cname, (a, b), {}, cfn)
    wrapper.__name__ = attr
    return wrapper


def _wrap_conversion(attr, orig):
    def wrapper(self, *args, **kwargs):
        if _current is not None and _current.is_traced(self):
            what = {'__bool__': 'a Python bool (an if/while on a tensor value)',
                    '__int__': 'a Python int', '__index__': 'a Python int',
                    '__float__': 'a Python float', 'item': 'a Python number (item())',
                    '__iter__': 'an iterator (a for loop over a tensor)',
                    '__len__': 'len() of a tensor computed from the inputs'}.get(
                        attr, 'a numpy array or list')
            raise TracingError(
                '{}: data-dependent control flow: a tensor computed from the inputs is '
                'converted to {} while tracing; a static graph would freeze the value seen '
                'here. Use tensor operations (paddle.where, masks) instead.'.format(
                    user_location(), what))
        return orig(self, *args, **kwargs)
    wrapper.__name__ = attr
    return wrapper


def _wrap_method(attr, cname, orig):
    """Tensor methods implemented in C that compute (reshape, astype)."""
    def wrapper(self, *args, **kwargs):
        if _current is None or not _current.is_traced(self):
            return orig(self, *args, **kwargs)
        cfn = getattr(_C, cname).__wrapped__
        if cname == 'reshape' and len(args) > 1:
            args = (list(args),)
        return _current.record(cname, (self,) + tuple(args), kwargs, cfn)
    wrapper.__name__ = attr
    return wrapper


def _wrap_other(attr, orig):
    """Any other C operator or method: its results are tainted."""
    def wrapper(self, *args, **kwargs):
        out = orig(self, *args, **kwargs)
        if _current is not None and (_current.is_traced(self) or _any_traced(args)):
            what = 'x[...] (indexing)' if attr == '__getitem__' else repr(attr)
            return _current.taint(out, what, user_location())
        return out
    wrapper.__name__ = attr
    return wrapper


def _wrap_inplace(attr, orig):
    def wrapper(self, *args, **kwargs):
        if _current is not None and _current.is_traced(self):
            raise TracingError('{}: paddle.jit cannot save an in-place write ({}) to a tensor '
                               'computed from the inputs'.format(user_location(), attr))
        return orig(self, *args, **kwargs)
    wrapper.__name__ = attr
    return wrapper


_OTHER = ('__getitem__', '__lt__', '__le__', '__gt__', '__ge__', '__eq__', '__ne__', '__and__',
          '__rand__', '__or__', '__ror__', '__xor__', '__rxor__', '__invert__', '__abs__',
          '__mod__', '__rmod__', '__floordiv__', '__rfloordiv__')
_INPLACE = ('__setitem__', '_assign', '_share', 'fill_', 'zero_')


class _Patched:
    """Installs the wrappers for the duration of a trace."""

    def __enter__(self):
        self.saved_c = {}
        for name in dir(_C):
            fn = getattr(_C, name)
            if name.startswith('_') or isinstance(fn, type) or not callable(fn):
                continue
            self.saved_c[name] = fn
            setattr(_C, name, _wrap_c(name, fn))
        T = _C.Tensor
        self.saved_t = {}
        for attr, (cname, refl) in _DUNDERS.items():
            orig = getattr(T, attr, None)
            if orig is not None:
                self.saved_t[attr] = T.__dict__.get(attr)
                setattr(T, attr, _wrap_dunder(attr, cname, refl, orig))
        for attr in _CONVERSIONS:
            orig = getattr(T, attr, None)
            if orig is not None:
                self.saved_t[attr] = T.__dict__.get(attr)
                setattr(T, attr, _wrap_conversion(attr, orig))
        for attr, cname in (('reshape', 'reshape'), ('astype', 'cast'), ('cast', 'cast'),
                            ('contiguous', 'contiguous'), ('clone', 'contiguous'),
                            ('detach', 'contiguous')):
            orig = getattr(T, attr, None)
            if orig is not None:
                self.saved_t[attr] = T.__dict__.get(attr)
                setattr(T, attr, _wrap_method(attr, cname, orig))
        for attr in _OTHER:
            orig = getattr(T, attr, None)
            if orig is not None and attr not in self.saved_t:
                self.saved_t[attr] = T.__dict__.get(attr)
                setattr(T, attr, _wrap_other(attr, orig))
        for attr in _INPLACE:
            orig = getattr(T, attr, None)
            if orig is not None:
                self.saved_t[attr] = T.__dict__.get(attr)
                setattr(T, attr, _wrap_inplace(attr, orig))
        self.saved_t['__neg__'] = T.__dict__.get('__neg__')
        neg = T.__neg__

        def _neg(self):
            if _current is not None and _current.is_traced(self):
                return _current.record('neg', (self,), {}, self_neg)
            return neg(self)
        self_neg = self.saved_c['neg']
        setattr(T, '__neg__', _neg)
        return self

    def __exit__(self, *exc):
        for name, fn in self.saved_c.items():
            setattr(_C, name, fn)
        T = _C.Tensor
        for attr, orig in self.saved_t.items():
            if orig is None:
                try:
                    delattr(T, attr)
                except AttributeError:
                    pass
            else:
                setattr(T, attr, orig)
        return False


def _example(spec, sizes):
    """A random input for spec, dynamic dims taking sizes in order."""
    shape, k = [], 0
    for d in spec.shape:
        if d is None or d < 0:
            shape.append(sizes[k])
            k += 1
        else:
            shape.append(int(d))
    dt = spec.dtype
    rng = np.random.default_rng(len(shape) + sum(shape))
    if dt.startswith('float') or dt == 'bfloat16':
        a = rng.standard_normal(shape).astype('float32')
    elif dt == 'bool':
        a = rng.integers(0, 2, shape).astype(bool)
    else:
        a = rng.integers(0, 4, shape).astype(dt)
    t = _C.to_tensor(np.ascontiguousarray(a))
    if dt != str(t.dtype).replace('paddle.', ''):
        t = _C.cast(t, dt)
    return t


def trace_once(fn, specs, params, sizes):
    """One trace of fn over inputs built from specs: a _Trace and the
    outputs' value names."""
    global _current
    if _current is not None:
        raise TracingError('paddle.jit: nested tracing is not supported')
    tr = _Trace(params)
    inputs = []
    k = 0
    for i, s in enumerate(specs):
        ndyn = sum(1 for d in s.shape if d is None or d < 0)
        x = _example(s, sizes[k:k + ndyn])
        k += ndyn
        name = s.name or 'x{}'.format(i)
        tr.values[id(x)] = name
        tr.keep.append(x)
        tr.meta[name] = (s.dtype, list(x.shape))
        inputs.append(x)
    from paddle.framework.autograd import no_grad
    with _Patched():
        _current = tr
        try:
            with no_grad():
                out = fn(*inputs)
        finally:
            _current = None
    outs = out if isinstance(out, (list, tuple)) else [out]
    names = []
    for o in outs:
        if not isinstance(o, _C.Tensor):
            raise TracingError('paddle.jit: the forward returned a {}; outputs must be Tensors '
                               '(or a list/tuple of Tensors)'.format(type(o).__name__))
        names.append(tr.ref(o))
    return tr, names
