"""Tensor methods written in Python, attached to _C.Tensor (a heap type)."""
import weakref

import numpy as np

from paddle import _C
from paddle.framework.dtype import convert_dtype
from . import (attribute, creation, indexing, linalg, logic, manipulation, math, random, search,
               stat)
from .to_string import tensor_to_string

Tensor = _C.Tensor


def _numpy(self, force=False):
    """A numpy copy of the data (bfloat16 comes out as float32)."""
    return self._numpy()


def _tolist(self):
    return self._numpy().tolist()


def _repr(self):
    return tensor_to_string(self)


def _format(self, spec):
    # Paddle: a 0-D tensor formats as its value ('%.2f' % loss, f'{loss:.3f}')
    if self.ndim == 0 or (spec and self.size == 1):
        return format(self.item(), spec)
    return format(tensor_to_string(self), spec)


def _array(self, dtype=None, copy=None):
    a = self._numpy()
    return a if dtype is None else a.astype(dtype)


def _iter(self):
    if self.ndim == 0:
        raise TypeError("iteration over a 0-D Tensor")
    for i in range(self.shape[0]):
        yield _C.select(self, 0, i)


def _set_value(self, value):
    """Overwrite the data in place (no autograd), e.g. a parameter's value:
    value is a numpy array, a Tensor or a number of the same shape."""
    if isinstance(value, Tensor):
        src = value
    else:
        a = np.asarray(value)
        if list(a.shape) != list(self.shape) and a.size != 1:
            raise ValueError("set_value: the shape {} of value does not match the Tensor's "
                             "shape {}".format(list(a.shape), self.shape))
        src = _C.to_tensor(np.ascontiguousarray(a))
    if list(src.shape) != list(self.shape) and src.size != 1:
        raise ValueError("set_value: the shape {} of value does not match the Tensor's shape "
                         "{}".format(src.shape, self.shape))
    prev = _C.set_grad_enabled(False)
    try:
        if src.place != self.place:     # a GPU parameter set from host values
            from paddle.framework import place as P
            src = P._to_place(src, self.place)
        self._assign(src)
    finally:
        _C.set_grad_enabled(prev)
    return self


def _floordiv(self, other):
    return math.floor_divide(self, other)


def _rfloordiv(self, other):
    return math.floor_divide(other, self)


def _mod(self, other):
    return math.remainder(self, other)


def _rmod(self, other):
    return math.remainder(creation.full_like(self, other) if not isinstance(other, Tensor)
                       else other, self)


def _gradient(self):
    g = self.grad
    return None if g is None else g.numpy()


def _inplace(fn):
    def method(self, *args, **kwargs):
        out = fn(self, *args, **kwargs)
        if self.is_leaf and not self.stop_gradient and _C.is_grad_enabled():
            raise RuntimeError("Leaf Tensor ({}) that doesn't stop gradient can't use inplace "
                               "strategy.".format(self.name))
        if self.is_leaf or self.stop_gradient:
            prev = _C.set_grad_enabled(False)
            try:
                self._assign(out)
            finally:
                _C.set_grad_enabled(prev)
        else:
            self._share(out)
        return self
    method.__name__ = fn.__name__ + '_'
    return method


def _uniform_(self, min=-1.0, max=1.0, seed=0, name=None):  # noqa: A002
    _C.init_uniform(self, float(min), float(max))
    return self


def _normal_(self, mean=0.0, std=1.0, name=None):
    _C.init_normal(self, float(mean), float(std))
    return self


def _cuda(self, device_id=None, blocking=True):
    """A copy on GPU device_id (None: the current GPU); self when already
    there. Differentiable. ValueError naming why when no GPU is usable."""
    from paddle.framework import place as P
    if device_id is None:
        n = _C.device_count(P._DEV_CUDA)
        device_id = _C.device_current(P._DEV_CUDA) if n > 0 else 0
    elif isinstance(device_id, P.Place):
        device_id = device_id.gpu_device_id()
    return P._to_place(self, P._get_place(P.CUDAPlace(int(device_id))))


def _cpu(self):
    """A copy on the CPU (self when already there); differentiable."""
    from paddle.framework import place as P
    return P._to_place(self, P._CPU)


def _to(self, *args, **kwargs):
    """Tensor.to(device=None, dtype=None, blocking=None): device a Place or
    'cpu'/'gpu'/'gpu:N', dtype a paddle/numpy dtype or name, or another
    Tensor (its place and dtype); positional in any order."""
    from paddle.framework import place as P
    device = kwargs.get('device')
    dtype = kwargs.get('dtype')
    unknown = [k for k in kwargs if k not in ('device', 'dtype', 'blocking')]
    if unknown:
        raise TypeError("to() got an unexpected keyword argument '{}'".format(unknown[0]))
    for a in args:
        if a is None or isinstance(a, bool):
            continue
        if isinstance(a, Tensor):
            device, dtype = a.place, a.dtype
        elif isinstance(a, P.Place):
            device = a
        elif isinstance(a, str) and a.strip().lower().split(':')[0] in ('cpu', 'gpu', 'cuda'):
            device = a
        else:
            try:
                dtype = convert_dtype(a)
            except (TypeError, ValueError):
                raise ValueError("to(): {!r} is neither a device nor a dtype".format(a)) from None
    out = self
    if device is not None:
        out = P._to_place(out, P._get_place(device))
    if dtype is not None and convert_dtype(dtype) != out.dtype.name:
        out = out.astype(dtype)
    return out


def _element_size(self):
    return {'float32': 4, 'float64': 8, 'float16': 2, 'bfloat16': 2, 'int32': 4,
            'int64': 8, 'bool': 1, 'uint8': 1}[self.dtype.name]


class TensorHookRemoveHelper:
    """What Tensor.register_hook returns: remove() unregisters the hook."""

    def __init__(self, cell):
        self._cell = cell

    def remove(self):
        removed = self._cell[0] is not None
        self._cell[0] = None
        return removed


def _register_hook(self, hook):
    """hook(grad) runs when this tensor's gradient is computed and may
    return a Tensor to use instead (None keeps grad)."""
    if self.stop_gradient:
        raise RuntimeError("Cannot register hook on a tensor that stop gradient.")
    return TensorHookRemoveHelper(_C.register_hook(self, hook))


def _retain_grads(self):
    """Keep this (non-leaf) tensor's gradient in .grad after backward."""
    if self.stop_gradient:
        raise RuntimeError("retain_grads: the tensor has stop_gradient=True")
    if self.is_leaf or getattr(self, '_retains_grad', False):
        return
    ref = weakref.ref(self)      # the hook lives in the graph: no cycle back to self

    def keep(g):
        t = ref()
        if t is not None:
            prev = _C.set_grad_enabled(False)
            try:
                t.grad = g.detach() if t.grad is None else t.grad + g
            finally:
                _C.set_grad_enabled(prev)
        return None
    _C.register_hook(self, keep)
    self._retains_grad = True




def _expand_as(self, y, name=None):
    return _C.expand(self, y.shape)


_METHODS = {
    'numpy': _numpy, 'tolist': _tolist, '__repr__': _repr, '__str__': _repr,
    '__format__': _format, '__array__': _array, '__iter__': _iter,
    '__setitem__': indexing.setitem,
    'set_value': _set_value, '__floordiv__': _floordiv, '__rfloordiv__': _rfloordiv,
    '__mod__': _mod, '__rmod__': _rmod, 'gradient': _gradient,
    'uniform_': _uniform_, 'normal_': _normal_, 'to': _to, 'element_size': _element_size,
    'register_hook': _register_hook, 'retain_grads': _retain_grads, 'expand_as': _expand_as,
    'cpu': _cpu, 'cuda': _cuda,
    'pin_memory': lambda self, blocking=True: self, 'value': lambda self: self,
    'get_tensor': lambda self: self, '_is_initialized': lambda self: True,
    'is_floating_point': lambda self: self.dtype.is_floating_point,
    'dim': lambda self: self.ndim, 'rank': lambda self: self.ndim,
    'ndimension': lambda self: self.ndim,
    '__deepcopy__': lambda self, memo: _deepcopy(self, memo),
    '__array_priority__': 100,
    '__reduce_ex__': lambda self, proto: (_rebuild, (self.numpy(), self.stop_gradient)),
}


def _deepcopy(self, memo):
    t = self.clone().detach()
    t.stop_gradient = self.stop_gradient
    memo[id(self)] = t
    return t


def _rebuild(a, stop_gradient):
    return _C.to_tensor(np.ascontiguousarray(a), None, stop_gradient)


# Methods that forward to a namespace function with self first.
_FORWARD = [
    'add', 'subtract', 'multiply', 'divide', 'pow', 'maximum', 'minimum', 'floor_divide',
    'remainder', 'mod', 'exp', 'log', 'log2', 'log10', 'log1p', 'sqrt', 'rsqrt', 'square',
    'abs', 'neg', 'tanh', 'sigmoid', 'sin', 'cos', 'reciprocal', 'sign', 'floor', 'ceil',
    'round', 'trunc', 'scale', 'clip', 'isnan', 'isinf', 'isfinite', 'equal', 'not_equal',
    'less_than', 'less_equal', 'greater_than', 'greater_equal', 'logical_and', 'logical_or',
    'logical_xor', 'logical_not', 'equal_all', 'allclose', 'isclose', 'any', 'all', 'sum',
    'mean', 'max', 'min', 'amax', 'amin', 'prod', 'var', 'std', 'logsumexp', 'norm', 'cumsum',
    'count_nonzero', 'argmax', 'argmin', 'argsort', 'sort', 'topk', 'nonzero',
    'masked_select', 'masked_fill', 'index_select', 'gather', 'gather_nd',
    'take_along_axis', 'put_along_axis', 'scatter', 'index_add', 'unique', 'matmul', 'mm',
    'bmm', 'dot', 'outer', 't', 'flatten', 'squeeze', 'unsqueeze', 'transpose', 'moveaxis',
    'swapaxes', 'split', 'chunk', 'unbind', 'tile', 'expand', 'broadcast_to', 'flip', 'roll',
    'erf', 'diag', 'kron', 'tril', 'triu', 'where', 'pad', 'one_hot', 'dist',
    'real', 'imag', 'conj', 'angle', 'as_complex', 'as_real', 'is_complex',
    # paddle.linalg's functions that Paddle also has as Tensor methods
    'inverse', 'cholesky', 'cholesky_solve', 'cond', 'cov', 'corrcoef', 'lstsq', 'lu',
    'lu_unpack', 'matrix_power', 'multi_dot', 'qr', 'solve', 'triangular_solve', 'eigvalsh',
]


def _make_forward(fn):
    def method(self, *args, **kwargs):
        return fn(self, *args, **kwargs)
    method.__name__ = fn.__name__
    method.__doc__ = fn.__doc__
    return method


def _where_method(self, x=None, y=None, name=None):
    return search.where(self, x, y)


def _namespace():
    """The public functions of the paddle.tensor modules by name."""
    ns = {}
    for m in (attribute, creation, linalg, logic, manipulation, math, random, search, stat):
        ns.update((k, v) for k, v in vars(m).items() if not k.startswith('_'))
    return ns


def install():
    # x[...] reads: ints/slices/None/Ellipsis in C, the rest in indexing.getitem
    _C._set_getitem_fallback(indexing.getitem)
    for name, fn in _METHODS.items():
        setattr(Tensor, name, fn)
    ns = _namespace()
    for name in _FORWARD:
        fn = ns[name]
        if name == 'where':
            setattr(Tensor, name, _where_method)
            continue
        setattr(Tensor, name, _make_forward(fn))
    # reshape/astype/cast stay the C versions; in-place variants:
    for name in ('add', 'subtract', 'multiply', 'divide', 'scale', 'clip', 'exp', 'sqrt',
                 'pow', 'floor', 'ceil', 'round', 'abs', 'tanh', 'sigmoid', 'square',
                 'reciprocal'):
        setattr(Tensor, name + '_', _inplace(ns[name]))
    Tensor.unsqueeze_ = _inplace(manipulation.unsqueeze)
    Tensor.squeeze_ = _inplace(manipulation.squeeze)
    Tensor.flatten_ = _inplace(manipulation.flatten)
    Tensor.reshape_ = manipulation.reshape_
    Tensor.clone = Tensor.clone  # C
