"""Recurrent layers: LSTM, GRU (+ LSTMCell, GRUCell), over the framework's
fused sequence kernels. Weights per layer/direction: weight_ih_l{k}
[G*H, I], weight_hh_l{k} [G*H, H], bias_ih_l{k}, bias_hh_l{k} [G*H]
(suffix _reverse for the backward direction), all ~ U(-1/sqrt(H), 1/sqrt(H))."""
import math

from .. import functional as F
from .. import initializer as I
from .layers import Layer

__all__ = ['LSTM', 'GRU', 'LSTMCell', 'GRUCell']


def _C():
    from paddle import _C as c
    return c


def _flip_time(x, time_axis):
    import paddle
    n = x.shape[time_axis]
    idx = paddle.arange(n - 1, -1, -1, dtype='int64')
    return _C().index_select(x, idx, time_axis)


class _RNNBase(Layer):
    _gates = None
    _kind = None

    def __init__(self, input_size, hidden_size, num_layers=1, direction='forward',
                 time_major=False, dropout=0.0, weight_ih_attr=None, weight_hh_attr=None,
                 bias_ih_attr=None, bias_hh_attr=None, name=None):
        super().__init__()
        if direction in ('bidirect', 'bidirectional'):
            self.num_directions = 2
        elif direction == 'forward':
            self.num_directions = 1
        else:
            raise ValueError("direction should be forward or bidirect (or bidirectional), "
                             "received direction = {}".format(direction))
        if input_size <= 0 or hidden_size <= 0 or num_layers <= 0:
            raise ValueError("input_size, hidden_size and num_layers must be positive")
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.direction = direction
        self.time_major = time_major
        self.dropout = dropout
        std = 1.0 / math.sqrt(hidden_size)
        init = I.Uniform(-std, std)
        G = self._gates
        for layer in range(num_layers):
            in_size = input_size if layer == 0 else hidden_size * self.num_directions
            for d in range(self.num_directions):
                sfx = '_l{}{}'.format(layer, '_reverse' if d == 1 else '')
                setattr(self, 'weight_ih' + sfx, self.create_parameter(
                    [G * hidden_size, in_size], weight_ih_attr, default_initializer=init))
                setattr(self, 'weight_hh' + sfx, self.create_parameter(
                    [G * hidden_size, hidden_size], weight_hh_attr, default_initializer=init))
                b1 = self.create_parameter([G * hidden_size], bias_ih_attr, is_bias=True,
                                           default_initializer=init)
                b2 = self.create_parameter([G * hidden_size], bias_hh_attr, is_bias=True,
                                           default_initializer=init)
                if b1 is not None:
                    setattr(self, 'bias_ih' + sfx, b1)
                else:
                    object.__setattr__(self, 'bias_ih' + sfx, None)
                if b2 is not None:
                    setattr(self, 'bias_hh' + sfx, b2)
                else:
                    object.__setattr__(self, 'bias_hh' + sfx, None)

    def _weights(self, layer, d):
        sfx = '_l{}{}'.format(layer, '_reverse' if d == 1 else '')
        return (getattr(self, 'weight_ih' + sfx), getattr(self, 'weight_hh' + sfx),
                getattr(self, 'bias_ih' + sfx), getattr(self, 'bias_hh' + sfx))

    def forward(self, inputs, initial_states=None, sequence_length=None):
        import paddle
        if sequence_length is not None:
            raise NotImplementedError("{}: sequence_length is not supported".format(
                self.__class__.__name__))
        if inputs.ndim != 3:
            raise ValueError("{}: inputs must be 3-D, got {}".format(self.__class__.__name__,
                                                                     list(inputs.shape)))
        lstm = self._kind == 'lstm'
        time_axis = 0 if self.time_major else 1
        h0 = c0 = None
        if initial_states is not None:
            if lstm:
                h0, c0 = initial_states
            else:
                h0 = initial_states
        x = inputs
        hs, cs = [], []
        for layer in range(self.num_layers):
            outs = []
            for d in range(self.num_directions):
                k = layer * self.num_directions + d
                hk = h0[k] if h0 is not None else None
                ck = c0[k] if c0 is not None else None
                w_ih, w_hh, b_ih, b_hh = self._weights(layer, d)
                xin = _flip_time(x, time_axis) if d == 1 else x
                if lstm:
                    y, h, c = _C().lstm_sequence(xin, hk, ck, w_ih, w_hh, b_ih, b_hh,
                                                 self.time_major)
                    cs.append(c)
                else:
                    y, h = _C().gru_sequence(xin, hk, w_ih, w_hh, b_ih, b_hh, self.time_major)
                hs.append(h)
                outs.append(_flip_time(y, time_axis) if d == 1 else y)
            x = outs[0] if len(outs) == 1 else paddle.concat(outs, axis=-1)
            if self.dropout > 0 and layer < self.num_layers - 1:
                x = F.dropout(x, self.dropout, training=self.training)
        h_n = paddle.stack(hs, axis=0)
        if lstm:
            return x, (h_n, paddle.stack(cs, axis=0))
        return x, h_n

    def extra_repr(self):
        s = '{}, {}'.format(self.input_size, self.hidden_size)
        if self.num_layers != 1:
            s += ', num_layers={}'.format(self.num_layers)
        if self.time_major:
            s += ', time_major={}'.format(self.time_major)
        if self.dropout:
            s += ', dropout={}'.format(self.dropout)
        return s


class LSTM(_RNNBase):
    """LSTM(input_size, hidden_size, num_layers=1, direction='forward',
    time_major=False, dropout=0.0, ...) -> (outputs, (h, c)); gate order
    i, f, g, o; h and c are [num_layers * num_directions, B, H]."""
    _gates = 4
    _kind = 'lstm'


class GRU(_RNNBase):
    """GRU(...) -> (outputs, h); gate order r, z, c."""
    _gates = 3
    _kind = 'gru'


class _CellBase(Layer):
    _gates = None

    def __init__(self, input_size, hidden_size, weight_ih_attr=None, weight_hh_attr=None,
                 bias_ih_attr=None, bias_hh_attr=None, name=None):
        super().__init__()
        std = 1.0 / math.sqrt(hidden_size)
        init = I.Uniform(-std, std)
        G = self._gates
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.weight_ih = self.create_parameter([G * hidden_size, input_size], weight_ih_attr,
                                               default_initializer=init)
        self.weight_hh = self.create_parameter([G * hidden_size, hidden_size], weight_hh_attr,
                                               default_initializer=init)
        self.bias_ih = self.create_parameter([G * hidden_size], bias_ih_attr, is_bias=True,
                                             default_initializer=init)
        self.bias_hh = self.create_parameter([G * hidden_size], bias_hh_attr, is_bias=True,
                                             default_initializer=init)

    def extra_repr(self):
        return '{}, {}'.format(self.input_size, self.hidden_size)


class LSTMCell(_CellBase):
    _gates = 4

    def forward(self, inputs, states=None):
        h0, c0 = (None, None) if states is None else states
        h, c = _C().lstm_cell(inputs, h0, c0, self.weight_ih, self.weight_hh, self.bias_ih,
                              self.bias_hh)
        return h, (h, c)


class GRUCell(_CellBase):
    _gates = 3

    def forward(self, inputs, states=None):
        h = _C().gru_cell(inputs, states, self.weight_ih, self.weight_hh, self.bias_ih,
                          self.bias_hh)
        return h, h
