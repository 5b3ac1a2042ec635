"""Containers: Sequential, LayerList, LayerDict, ParameterList, ParameterDict."""
import collections

from .layers import Layer

__all__ = ['Sequential', 'LayerList', 'LayerDict', 'ParameterList', 'ParameterDict']


class Sequential(Layer):
    """Sequential(*layers) or Sequential((name, layer), ...) or
    Sequential(OrderedDict); calls the layers in order."""

    def __init__(self, *layers):
        super().__init__()
        if len(layers) == 1 and isinstance(layers[0], collections.OrderedDict):
            for name, layer in layers[0].items():
                self.add_sublayer(name, layer)
        elif layers and isinstance(layers[0], (list, tuple)):
            for item in layers:
                if len(item) != 2:
                    raise ValueError("Sequential: expected (name, layer) pairs")
                self.add_sublayer(item[0], item[1])
        else:
            for idx, layer in enumerate(layers):
                self.add_sublayer(str(idx), layer)

    def __getitem__(self, name):
        if isinstance(name, slice):
            return self.__class__(*(list(self._sub_layers.values())[name]))
        if isinstance(name, str):
            return self._sub_layers[name]
        n = len(self._sub_layers)
        if name >= n or name < -n:
            raise IndexError('index {} is out of range'.format(name))
        if name < 0:
            name += n
        return list(self._sub_layers.values())[name]

    def __setitem__(self, name, layer):
        if isinstance(name, int):
            name = list(self._sub_layers.keys())[name]
        self.add_sublayer(str(name), layer)

    def __delitem__(self, name):
        if isinstance(name, int):
            name = list(self._sub_layers.keys())[name]
        del self._sub_layers[str(name)]

    def __len__(self):
        return len(self._sub_layers)

    def __iter__(self):
        return iter(self._sub_layers.values())

    def forward(self, input):
        for layer in self._sub_layers.values():
            input = layer(input)
        return input

    def append(self, layer):
        """Add layer at the end (named by its position); returns self."""
        self.add_sublayer(str(len(self._sub_layers)), layer)
        return self

    def insert(self, index, layer):
        """Insert layer before position index; positional names after it shift
        by one (named entries keep their names). Returns self."""
        if not isinstance(layer, Layer):
            raise TypeError("Sequential.insert: expected a Layer, got {}".format(
                type(layer).__name__))
        n = len(self._sub_layers)
        if not -n <= index <= n:
            raise IndexError("Index out of range: {}".format(index))
        if index < 0:
            index += n
        items = list(self._sub_layers.items())
        items.insert(index, (None, layer))
        self._sub_layers.clear()
        for i, (name, sub) in enumerate(items):
            key = str(i) if name is None or name.isdigit() else name
            self._sub_layers[key] = sub
        return self

    def extend(self, sequential):
        """Append every layer of an iterable of layers (e.g. another Sequential)."""
        for layer in sequential:
            self.append(layer)
        return self


class LayerList(Layer):
    def __init__(self, sublayers=None):
        super().__init__()
        if sublayers is not None:
            for idx, layer in enumerate(sublayers):
                self.add_sublayer(str(idx), layer)

    def _abs(self, idx):
        n = len(self)
        if not -n <= idx < n:
            raise IndexError('index {} is out of range'.format(idx))
        return idx + n if idx < 0 else idx

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return self.__class__(list(self._sub_layers.values())[idx])
        return self._sub_layers[str(self._abs(idx))]

    def __setitem__(self, idx, sublayer):
        return setattr(self, str(self._abs(idx)), sublayer)

    def __delitem__(self, idx):
        if isinstance(idx, slice):
            for k in range(len(self._sub_layers))[idx]:
                del self._sub_layers[str(k)]
        else:
            del self._sub_layers[str(self._abs(idx))]
        layers = list(self._sub_layers.values())
        self._sub_layers.clear()
        for i, l in enumerate(layers):
            self._sub_layers[str(i)] = l

    def __len__(self):
        return len(self._sub_layers)

    def __iter__(self):
        return iter(self._sub_layers.values())

    def append(self, sublayer):
        self.add_sublayer(str(len(self)), sublayer)
        return self

    def insert(self, index, sublayer):
        n = len(self)
        if not -n <= index <= n:
            raise IndexError('index {} is out of range'.format(index))
        if index < 0:
            index += n
        layers = list(self._sub_layers.values())
        layers.insert(index, sublayer)
        self._sub_layers.clear()
        for i, l in enumerate(layers):
            self.add_sublayer(str(i), l)

    def extend(self, sublayers):
        off = len(self)
        for i, layer in enumerate(sublayers):
            self.add_sublayer(str(off + i), layer)
        return self


class LayerDict(Layer):
    def __init__(self, sublayers=None):
        super().__init__()
        if sublayers is not None:
            self.update(sublayers)

    def __getitem__(self, key):
        return self._sub_layers[key]

    def __setitem__(self, key, sublayer):
        return self.add_sublayer(key, sublayer)

    def __delitem__(self, key):
        del self._sub_layers[key]

    def __len__(self):
        return len(self._sub_layers)

    def __iter__(self):
        return iter(self._sub_layers)

    def __contains__(self, key):
        return key in self._sub_layers

    def clear(self):
        self._sub_layers.clear()

    def pop(self, key):
        v = self._sub_layers[key]
        del self._sub_layers[key]
        return v

    def keys(self):
        return self._sub_layers.keys()

    def items(self):
        return self._sub_layers.items()

    def values(self):
        return self._sub_layers.values()

    def update(self, sublayers):
        items = sublayers.items() if hasattr(sublayers, 'items') else sublayers
        for k, v in items:
            self.add_sublayer(k, v)


class ParameterList(Layer):
    def __init__(self, parameters=None):
        super().__init__()
        if parameters is not None:
            for idx, p in enumerate(parameters):
                self.add_parameter(str(idx), p)

    def __getitem__(self, idx):
        return self._parameters[str(idx if idx >= 0 else len(self) + idx)]

    def __setitem__(self, idx, param):
        setattr(self, str(idx), param)

    def __len__(self):
        return len(self._parameters)

    def __iter__(self):
        return iter(self._parameters.values())

    def append(self, parameter):
        self.add_parameter(str(len(self._parameters)), parameter)
        return self


class ParameterDict(Layer):
    """ParameterDict(parameters=None): parameters by name (a dict, or (name,
    parameter) pairs); registered so parameters() and state_dict() see them."""

    def __init__(self, parameters=None):
        super().__init__()
        if parameters is not None:
            self.update(parameters)

    def __getitem__(self, key):
        return self._parameters[key]

    def __setitem__(self, key, param):
        self.add_parameter(str(key), param)

    def __delitem__(self, key):
        del self._parameters[key]

    def __contains__(self, key):
        return key in self._parameters

    def __len__(self):
        return len(self._parameters)

    def __iter__(self):
        return iter(self._parameters)

    def keys(self):
        return self._parameters.keys()

    def values(self):
        return self._parameters.values()

    def items(self):
        return self._parameters.items()

    def update(self, parameters):
        items = parameters.items() if hasattr(parameters, 'items') else parameters
        for item in items:
            if len(item) != 2:
                raise ValueError("ParameterDict.update: expected (name, parameter) pairs")
            self.add_parameter(str(item[0]), item[1])
