"""paddle.jit: to_static, save, load (Paddle 3.x names) over Eddy's graph IR.

to_static(layer_or_fn, input_spec) returns the layer (or a callable) whose
forward still runs eagerly (so it trains as before) and whose static graph is
traced on demand (`.concrete_program`, jit.save). jit.save writes
PATH.pdmodel (the graph, JSON) and PATH.pdiparams (parameters, safetensors);
jit.load returns a TranslatedLayer running that graph; the C runtime
(paddle.inference, framework/infer/) runs the same files without Python.
See framework/graph/README.md for the format and trace.py for how tracing
works and what it refuses.
"""
import functools

from paddle import _C
from paddle.nn import Layer as _Layer

from . import program as _program
from .trace import TracingError  # noqa: F401

__all__ = ['to_static', 'save', 'load', 'not_to_static', 'TranslatedLayer', 'TracingError',
           'enable_to_static', 'ignore_module']

_enabled = True


def enable_to_static(enable_to_static_bool):
    global _enabled
    _enabled = bool(enable_to_static_bool)


def ignore_module(modules):
    return None


def not_to_static(func=None):
    return func


def _specs(input_spec):
    from paddle.static import InputSpec
    out = []
    for i, s in enumerate(input_spec or []):
        if isinstance(s, InputSpec):
            out.append(s)
        elif isinstance(s, _C.Tensor):
            out.append(InputSpec.from_tensor(s, name='x{}'.format(i)))
        else:
            raise TypeError('input_spec entries must be paddle.static.InputSpec or Tensor, got '
                            '{}'.format(type(s).__name__))
    names = [s.name or 'x{}'.format(i) for i, s in enumerate(out)]
    if len(set(names)) != len(names):
        raise ValueError('input_spec names must be distinct: {}'.format(names))
    return out


def _param_names(layer):
    if layer is None or not hasattr(layer, 'state_dict'):
        return {}
    return {id(t): name for name, t in layer.state_dict().items()}


class StaticFunction:
    """A function (or a layer's forward) converted by to_static."""

    def __init__(self, fn, input_spec=None, layer=None):
        self._fn = fn
        self._input_spec = input_spec
        self._layer = layer
        functools.update_wrapper(self, fn)

    def __get__(self, instance, owner):
        if instance is None:
            return self
        return StaticFunction(self._fn.__get__(instance, owner), self._input_spec, instance)

    def __call__(self, *args, **kwargs):
        return self._fn(*args, **kwargs)

    @property
    def input_spec(self):
        return self._input_spec

    def get_program(self, input_spec=None):
        """(graph, tensors) traced from the forward, in eval mode."""
        specs = _specs(input_spec if input_spec is not None else self._input_spec)
        if not specs:
            raise ValueError('paddle.jit: an input_spec is needed to trace {} (give it to '
                             'to_static or jit.save)'.format(getattr(self._fn, '__name__', 'the '
                                                                     'function')))
        layer = self._layer
        modes = None
        if layer is not None and hasattr(layer, 'sublayers'):
            modes = [(m, m.training) for m in [layer] + list(layer.sublayers())]
            layer.eval()
        try:
            return _program.build(self._fn, specs, _param_names(layer))
        finally:
            for m, tr in modes or []:
                m.training = tr

    @property
    def concrete_program(self):
        return self.get_program()[0]


def to_static(function=None, input_spec=None, build_strategy=None, backend=None,
              full_graph=True, **kwargs):
    """Convert a Layer or a function for static saving (decorator or call)."""
    if function is None:
        return lambda f: to_static(f, input_spec, build_strategy, backend, full_graph, **kwargs)
    if hasattr(function, 'forward') and hasattr(function, 'sublayers'):
        fwd = function.forward
        if isinstance(fwd, StaticFunction):
            if input_spec is not None:
                fwd._input_spec = input_spec
            return function
        function.forward = StaticFunction(fwd, input_spec, function)
        return function
    if isinstance(function, StaticFunction):
        return function
    if not callable(function):
        raise TypeError('to_static expects a Layer or a function, got {}'.format(
            type(function).__name__))
    return StaticFunction(function, input_spec)


def _static_of(layer):
    if isinstance(layer, StaticFunction):
        return layer
    if hasattr(layer, 'forward') and hasattr(layer, 'sublayers'):
        fwd = layer.forward
        if isinstance(fwd, StaticFunction):
            return StaticFunction(fwd._fn, fwd._input_spec, layer)
        return StaticFunction(fwd, None, layer)
    if callable(layer):
        return StaticFunction(layer)
    raise TypeError('jit.save expects a Layer or a function, got {}'.format(
        type(layer).__name__))


def save(layer, path, input_spec=None, **configs):
    """Write path.pdmodel and path.pdiparams (see the module docstring).
    Raises TracingError naming file:line for what a graph cannot hold."""
    if not isinstance(path, str) or not path or path.endswith('/'):
        raise ValueError('jit.save: path must be a file prefix like "dir/model", got '
                         '{!r}'.format(path))
    sf = _static_of(layer)
    graph, tensors = sf.get_program(input_spec)
    _program.save(graph, tensors, path)


def load(path, **configs):
    """A TranslatedLayer running the saved graph."""
    graph, arrays = _program.load(path)
    return TranslatedLayer(graph, arrays)


class TranslatedLayer(_Layer):
    """A loaded static graph: call it like the original layer (inputs as in
    its input_spec). Parameters and constants are in state_dict()."""

    def __init__(self, graph, arrays):
        super().__init__()
        self._graph = graph
        self._tensors = {k: _C.to_tensor(v) for k, v in arrays.items()}
        known = set(self._tensors) | {s['name'] for s in graph['inputs']}
        known |= {o for n in graph['nodes'] for o in n['outputs']}
        missing = {i for n in graph['nodes'] for i in n['inputs'] if i and i not in known}
        missing |= {o['value'] for o in graph['outputs'] if o['value'] not in known}
        if missing:
            raise ValueError('jit.load: the graph reads values nothing defines: {}'.format(
                sorted(missing)))

    def forward(self, *args):
        return _program.run(self._graph, self._tensors, args)

    def state_dict(self, *a, **k):
        return dict(self._tensors)

    @property
    def program(self):
        return self._graph
