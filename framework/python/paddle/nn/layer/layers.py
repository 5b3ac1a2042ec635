"""paddle.nn.Layer: the base class users subclass.

Attributes that are Parameters, Layers or registered buffers are kept in
ordered dicts (_parameters, _sub_layers, _buffers) so parameters(),
state_dict() and friends walk them in definition order, like Paddle.
"""
import collections
import re
import weakref

import numpy as np

from paddle._lazy import paddle as _paddle

__all__ = ['Layer']

_name_counters = collections.defaultdict(int)


def _unique_name(prefix):
    n = _name_counters[prefix]
    _name_counters[prefix] += 1
    return '{}_{}'.format(prefix, n)


def _camel_to_snake(name):
    s1 = re.sub('(.)([A-Z][a-z]+)', r'\1_\2', name)
    return re.sub('([a-z])([A-Z])', r'\1_\2', s1).lower()


class HookRemoveHelper:
    """Returned by register_forward_*_hook; remove() unregisters the hook."""
    next_hook_id = 0

    def __init__(self, hooks):
        self._hooks_ref = weakref.ref(hooks)
        self._hook_id = HookRemoveHelper.next_hook_id
        HookRemoveHelper.next_hook_id += 1

    def remove(self):
        hooks = self._hooks_ref()
        if hooks is not None and self._hook_id in hooks:
            del hooks[self._hook_id]


class Layer:
    """Base class of every network layer.

    Layer(name_scope=None, dtype='float32'). Assigning a Parameter, a Layer or
    a buffer Tensor to an attribute registers it.
    """

    def __init__(self, name_scope=None, dtype='float32'):
        self.training = True
        if name_scope is None:
            name_scope = _camel_to_snake(self.__class__.__name__)
        self._full_name = _unique_name(name_scope)
        self._name_scope = name_scope
        self._dtype = dtype
        self._parameters = collections.OrderedDict()
        self._buffers = collections.OrderedDict()
        self._non_persistable_buffer_names_set = set()
        self._sub_layers = collections.OrderedDict()
        self._forward_pre_hooks = collections.OrderedDict()
        self._forward_post_hooks = collections.OrderedDict()
        self._param_counters = collections.defaultdict(int)
        self._casted_by_pure_fp16 = False
        self._state_dict_hooks = collections.OrderedDict()
        self._init_in_dynamic_mode = True

    # ---- modes -------------------------------------------------------------
    def train(self):
        for layer in self.sublayers(include_self=True):
            object.__setattr__(layer, 'training', True)
        return self

    def eval(self):
        for layer in self.sublayers(include_self=True):
            object.__setattr__(layer, 'training', False)
        return self

    def full_name(self):
        return self._full_name

    # ---- forward --------------------------------------------------------------
    def forward(self, *inputs, **kwargs):
        raise NotImplementedError(
            "Layer {} has no forward(); subclasses must implement it".format(
                self.__class__.__name__))

    def __call__(self, *inputs, **kwargs):
        if self._forward_pre_hooks:
            for hook in list(self._forward_pre_hooks.values()):
                r = hook(self, inputs)
                if r is not None:
                    inputs = r if isinstance(r, tuple) else (r,)
        outputs = self.forward(*inputs, **kwargs)
        if self._forward_post_hooks:
            for hook in list(self._forward_post_hooks.values()):
                r = hook(self, inputs, outputs)
                if r is not None:
                    outputs = r
        return outputs

    def register_forward_pre_hook(self, hook):
        h = HookRemoveHelper(self._forward_pre_hooks)
        self._forward_pre_hooks[h._hook_id] = hook
        return h

    def register_forward_post_hook(self, hook):
        h = HookRemoveHelper(self._forward_post_hooks)
        self._forward_post_hooks[h._hook_id] = hook
        return h

    # ---- parameters ---------------------------------------------------------------
    def create_parameter(self, shape, attr=None, dtype=None, is_bias=False,
                         default_initializer=None):
        """A new Parameter of this layer (not registered until assigned to an
        attribute or passed to add_parameter). attr=False returns None."""
        from ..param import _create_parameter
        if dtype is None:
            dtype = self._dtype
        key = 'b' if is_bias else 'w'
        name = '{}.{}_{}'.format(self._full_name, key, self._param_counters[key])
        self._param_counters[key] += 1
        return _create_parameter(shape, dtype, attr=attr, is_bias=is_bias,
                                 default_initializer=default_initializer, default_name=name)

    def create_variable(self, name=None, persistable=None, dtype=None):
        paddle = _paddle()
        return paddle.zeros([1], dtype=dtype or self._dtype)

    def create_tensor(self, name=None, persistable=None, dtype=None):
        return self.create_variable(name, persistable, dtype)

    def add_parameter(self, name, parameter):
        from ..param import Parameter
        if '_parameters' not in self.__dict__:
            raise RuntimeError("super().__init__() should be called first")
        if not isinstance(name, str):
            raise TypeError("The name of parameter should be a string, but received {}"
                            .format(type(name).__name__))
        if '.' in name:
            raise KeyError("The name of parameter can not contain `.`")
        if name == '':
            raise KeyError("The name of parameter can not be empty.")
        if hasattr(self, name) and name not in self._parameters:
            raise KeyError("The parameter '{}' already exists.".format(name))
        if parameter is not None and not isinstance(parameter, Parameter):
            raise TypeError("The parameter to be added should be a Parameter, but received {}"
                            .format(type(parameter).__name__))
        self._parameters[name] = parameter
        return parameter

    def add_sublayer(self, name, sublayer):
        if sublayer is not None and not isinstance(sublayer, Layer):
            raise TypeError("The sublayer to be added should be a Layer, but received {}"
                            .format(type(sublayer).__name__))
        self._sub_layers[str(name)] = sublayer
        return sublayer

    def register_buffer(self, name, tensor, persistable=True):
        paddle = _paddle()
        if '_buffers' not in self.__dict__:
            raise ValueError("super().__init__() should be called first")
        if not isinstance(name, str):
            raise TypeError("The name of buffer should be a string, but received {}"
                            .format(type(name).__name__))
        if '.' in name:
            raise KeyError("The name of buffer can not contain `.`")
        if name == '':
            raise KeyError("The name of buffer can not be empty.")
        if hasattr(self, name) and name not in self._buffers:
            raise KeyError("attribute '{}' already exists.".format(name))
        if tensor is not None and not isinstance(tensor, paddle.Tensor):
            raise TypeError("The registered buffer should be a Paddle.Tensor, but received {}"
                            .format(type(tensor).__name__))
        self._buffers[name] = tensor
        if persistable:
            self._non_persistable_buffer_names_set.discard(name)
        else:
            self._non_persistable_buffer_names_set.add(name)

    def parameters(self, include_sublayers=True):
        return [p for _, p in self.named_parameters(include_sublayers=include_sublayers)]

    def named_parameters(self, prefix='', include_sublayers=True):
        seen = set()
        layers = self.named_sublayers(prefix=prefix, include_self=True) \
            if include_sublayers else [(prefix, self)]
        for lp, layer in layers:
            for name, p in layer._parameters.items():
                if p is None or id(p) in seen:
                    continue
                seen.add(id(p))
                yield (lp + ('.' if lp else '') + name, p)

    def buffers(self, include_sublayers=True):
        return [b for _, b in self.named_buffers(include_sublayers=include_sublayers)]

    def named_buffers(self, prefix='', include_sublayers=True):
        seen = set()
        layers = self.named_sublayers(prefix=prefix, include_self=True) \
            if include_sublayers else [(prefix, self)]
        for lp, layer in layers:
            for name, b in layer._buffers.items():
                if b is None or id(b) in seen:
                    continue
                seen.add(id(b))
                yield (lp + ('.' if lp else '') + name, b)

    def children(self):
        for _, layer in self.named_children():
            yield layer

    def named_children(self):
        seen = set()
        for name, layer in self._sub_layers.items():
            if layer is not None and id(layer) not in seen:
                seen.add(id(layer))
                yield name, layer

    def sublayers(self, include_self=False):
        return [l for _, l in self.named_sublayers(include_self=include_self)]

    def named_sublayers(self, prefix='', include_self=False, layers_set=None):
        if layers_set is None:
            layers_set = set()
        if include_self and id(self) not in layers_set:
            layers_set.add(id(self))
            yield prefix, self
        for key, layer in self._sub_layers.items():
            if layer is None:
                continue
            lp = prefix + ('.' if prefix else '') + key
            yield from layer.named_sublayers(prefix=lp, include_self=True,
                                             layers_set=layers_set)

    def apply(self, fn):
        for layer in self.children():
            layer.apply(fn)
        fn(self)
        return self

    def clear_gradients(self, set_to_zero=True):
        for p in self.parameters():
            if not p.stop_gradient:
                p.clear_grad()

    # ---- state dict -------------------------------------------------------------
    def _state_dict_impl(self, destination, include_sublayers, structured_name_prefix,
                         include_non_persistable_buffer=False):
        for name, p in self._parameters.items():
            if p is not None:
                destination[structured_name_prefix + name] = p
        for name, b in self._buffers.items():
            if b is None:
                continue
            if not include_non_persistable_buffer and \
                    name in self._non_persistable_buffer_names_set:
                continue
            destination[structured_name_prefix + name] = b
        if include_sublayers:
            for name, layer in self._sub_layers.items():
                if layer is not None:
                    layer._state_dict_impl(destination, include_sublayers,
                                           structured_name_prefix + name + '.',
                                           include_non_persistable_buffer)
        return destination

    def state_dict(self, destination=None, include_sublayers=True, structured_name_prefix='',
                   use_hook=True, keep_vars=True):
        """OrderedDict of structured name -> Parameter/buffer Tensor (shared, not
        copied); paddle.save turns them into numpy arrays."""
        if destination is None:
            destination = collections.OrderedDict()
        destination = self._state_dict_impl(destination, include_sublayers,
                                            structured_name_prefix)
        if use_hook:
            for hook in self._state_dict_hooks.values():
                r = hook(destination)
                if r is not None:
                    destination = r
        return destination

    def to_static_state_dict(self, destination=None, include_sublayers=True,
                             structured_name_prefix='', use_hook=True):
        if destination is None:
            destination = collections.OrderedDict()
        return self._state_dict_impl(destination, include_sublayers, structured_name_prefix,
                                     include_non_persistable_buffer=True)

    def set_state_dict(self, state_dict, use_structured_name=True):
        """Copy values (Tensors or numpy arrays) into this layer's parameters and
        buffers. Returns (missing_keys, unexpected_keys). A shape mismatch raises
        ValueError naming the key and both shapes, before anything is written."""
        paddle = _paddle()
        missing, matched = [], []
        own = self._state_dict_impl(collections.OrderedDict(), True, '')
        if not use_structured_name:
            # keys are parameter/buffer names (p.name), not structured names
            own = collections.OrderedDict(
                (getattr(v, 'name', None) or k, v) for k, v in own.items())
        pending = []
        for key, target in own.items():
            if key not in state_dict:
                missing.append(key)
                continue
            value = state_dict[key]
            matched.append(key)
            if isinstance(value, paddle.Tensor):
                arr = value.numpy()
            else:
                arr = np.asarray(value)
            tshape = list(target.shape)
            if list(arr.shape) != tshape:
                raise ValueError(
                    "{} receives a shape {}, but the expected shape is {}.".format(
                        key, list(arr.shape), tshape))
            pending.append((target, arr))
        for target, arr in pending:
            target.set_value(arr)
        unexpected = [k for k in state_dict.keys() if k not in own]
        return missing, unexpected

    set_dict = set_state_dict
    load_dict = set_state_dict

    def _register_state_dict_hook(self, hook):
        h = HookRemoveHelper(self._state_dict_hooks)
        self._state_dict_hooks[h._hook_id] = hook
        return h

    # ---- dtype / device ----------------------------------------------------------
    def to(self, device=None, dtype=None, blocking=None):
        if device is not None:
            self._to_device(device)
        if dtype is not None:
            self._to_dtype(dtype)
        return self

    def _to_device(self, device):
        """Move parameters and buffers to `device` in place (the same
        Parameter objects, so optimizers keep pointing at them)."""
        from paddle.framework import place as _place
        where = _place._get_place(device)
        for layer in self.sublayers(include_self=True):
            for table in (layer._parameters, layer._buffers):
                for t in table.values():
                    if t is not None and t.place != where:
                        stop = t.stop_gradient
                        t._share(_place._to_place(t.detach(), where))
                        t.stop_gradient = stop

    def _to_dtype(self, dtype):
        paddle = _paddle()
        for layer in self.sublayers(include_self=True):
            # cast in place (same Parameter objects, names and flags), so
            # optimizers and user references keep pointing at them
            for name, p in list(layer._parameters.items()):
                if p is not None and p.dtype != dtype:
                    _cast_in_place(p, dtype)
            for name, b in list(layer._buffers.items()):
                if b is not None and b.dtype != dtype and b.dtype in (
                        paddle.float32, paddle.float64, paddle.float16, paddle.bfloat16):
                    _cast_in_place(b, dtype)
            layer._dtype = dtype

    def astype(self, dtype=None):
        self._to_dtype(dtype)
        return self

    def float(self, excluded_layers=None):
        self._to_dtype('float32')
        return self

    def double(self, excluded_layers=None):
        self._to_dtype('float64')
        return self

    def float16(self, excluded_layers=None):
        self._to_dtype('float16')
        return self

    def bfloat16(self, excluded_layers=None):
        self._to_dtype('bfloat16')
        return self

    # ---- attribute registration -------------------------------------------------
    def __getattr__(self, name):
        d = self.__dict__
        if '_parameters' in d and name in d['_parameters']:
            return d['_parameters'][name]
        if '_sub_layers' in d and name in d['_sub_layers']:
            return d['_sub_layers'][name]
        if '_buffers' in d and name in d['_buffers']:
            return d['_buffers'][name]
        raise AttributeError("'{}' object has no attribute '{}'".format(
            type(self).__name__, name))

    def __setattr__(self, name, value):
        from ..param import Parameter
        d = self.__dict__

        def _remove_from(*dicts):
            for dd in dicts:
                if name in dd:
                    del dd[name]

        params = d.get('_parameters')
        if isinstance(value, Parameter):
            if params is None:
                raise ValueError("super().__init__() should be called first")
            _remove_from(d, d['_sub_layers'], d['_buffers'])
            params[name] = value
            return
        if params is not None and name in params:
            if value is not None:
                raise TypeError("assignment to parameter '{}' should be of type Parameter or "
                                "None, but got '{}'".format(name, type(value).__name__))
            params[name] = None
            return
        layers = d.get('_sub_layers')
        if isinstance(value, Layer):
            if layers is None:
                raise ValueError("super().__init__() should be called first")
            _remove_from(d, d['_parameters'], d['_buffers'])
            layers[name] = value
            return
        if layers is not None and name in layers:
            if value is not None:
                raise TypeError("assignment to sublayer '{}' should be of type Layer or None, "
                                "but got '{}'".format(name, type(value).__name__))
            layers[name] = None
            return
        buffers = d.get('_buffers')
        if buffers is not None and name in buffers:
            paddle = _paddle()
            if value is None or isinstance(value, paddle.Tensor):
                buffers[name] = value
                return
            raise TypeError("assignment to buffer '{}' should be of type Tensor or None, but "
                            "got '{}'".format(name, type(value).__name__))
        object.__setattr__(self, name, value)

    def __delattr__(self, name):
        for key in ('_parameters', '_sub_layers', '_buffers'):
            dd = self.__dict__.get(key)
            if dd is not None and name in dd:
                del dd[name]
                self.__dict__.get('_non_persistable_buffer_names_set', set()).discard(name)
                return
        object.__delattr__(self, name)

    def __dir__(self):
        keys = list(dir(self.__class__)) + list(self.__dict__.keys())
        keys += list(self._parameters.keys()) + list(self._sub_layers.keys()) + \
            list(self._buffers.keys())
        return sorted(set(keys))

    # ---- printing -------------------------------------------------------------------
    def extra_repr(self):
        return ''

    def __repr__(self):
        extra_lines = []
        extra = self.extra_repr()
        if extra:
            extra_lines = extra.split('\n')
        child_lines = []
        for key, layer in self._sub_layers.items():
            if layer is None:
                continue
            mod_str = repr(layer)
            mod_str = _addindent(mod_str, 2)
            child_lines.append('(' + key + '): ' + mod_str)
        lines = extra_lines + child_lines
        main_str = self.__class__.__name__ + '('
        if lines:
            if len(extra_lines) == 1 and not child_lines:
                main_str += extra_lines[0]
            else:
                main_str += '\n  ' + '\n  '.join(lines) + '\n'
        main_str += ')'
        return main_str


def _cast_in_place(t, dtype):
    stop = t.stop_gradient
    t._share(t.astype(dtype).detach())
    t.stop_gradient = stop


def _addindent(string, num_spaces):
    s = string.split('\n')
    if len(s) == 1:
        return string
    first = s.pop(0)
    s = [(num_spaces * ' ') + line for line in s]
    return first + '\n' + '\n'.join(s)
