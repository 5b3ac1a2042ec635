"""Recurrent layers: LSTM, GRU (+ LSTMCell, GRUCell), over the framework's
fused sequence kernels; SimpleRNN (+ SimpleRNNCell: the input projection of
every step is one matmul, the recurrence a loop of one matmul per step); the
RNN and BiRNN wrappers that run any cell (RNNCellBase) over time. Weights per
layer/direction: weight_ih_l{k} [G*H, I], weight_hh_l{k} [G*H, H], bias_ih_l{k},
bias_hh_l{k} [G*H] (suffix _reverse for the backward direction), all
~ U(-1/sqrt(H), 1/sqrt(H))."""
import math

from .. import functional as F
from .. import initializer as I
from .layers import Layer
from paddle.amp import _state as _amp


def _amp_run(fn, tensors, *args):
    """fn(*tensors, *args), cast as the 'rnn' op under auto_cast (O2 keeps
    bfloat16/float16 weights; the kernels then run in float32)."""
    if _amp.ON and _amp.current():
        return _amp.call('rnn', fn, tensors, *args)
    return fn(*tensors, *args)

__all__ = ['LSTM', 'GRU', 'SimpleRNN', 'LSTMCell', 'GRUCell', 'SimpleRNNCell', 'RNNCellBase',
           'RNN', 'BiRNN']


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
                 bias_ih_attr=None, bias_hh_attr=None, name=None, activation='tanh'):
        super().__init__()
        if activation not in ('tanh', 'relu'):
            raise ValueError("activation for SimpleRNN should be tanh or relu, but get {}".format(
                activation))
        self.activation = activation
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
        lens = None
        if sequence_length is not None:
            lens = _lengths(sequence_length, inputs, self.time_major, self.__class__.__name__)
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
                if lens is not None:
                    y, h, c = _masked_sequence(self._kind, x, hk, ck, w_ih, w_hh, b_ih, b_hh,
                                               self.time_major, lens, d == 1,
                                               getattr(self, 'activation', 'tanh'))
                    hs.append(h)
                    if lstm:
                        cs.append(c)
                    outs.append(y)
                    continue
                xin = _flip_time(x, time_axis) if d == 1 else x
                if self._kind == 'simple':
                    y, h = _simple_sequence(xin, hk, w_ih, w_hh, b_ih, b_hh, self.time_major,
                                            self.activation)
                elif lstm:
                    y, h, c = _amp_run(_C().lstm_sequence, (xin, hk, ck, w_ih, w_hh, b_ih, b_hh),
                                         self.time_major)
                    cs.append(c)
                else:
                    y, h = _amp_run(_C().gru_sequence, (xin, hk, w_ih, w_hh, b_ih, b_hh), self.time_major)
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


def _simple_sequence(x, h0, w_ih, w_hh, b_ih, b_hh, time_major, activation):
    """Elman RNN over x ([B, T, I], or [T, B, I] when time_major) -> (y, h_T)."""
    import paddle
    act = paddle.tanh if activation == 'tanh' else F.relu
    if not time_major:
        x = paddle.transpose(x, [1, 0, 2])
    t_len, b = x.shape[0], x.shape[1]
    hsz = w_hh.shape[0]
    xw = paddle.matmul(x, w_ih, transpose_y=True)          # all steps' input projection
    if b_ih is not None:
        xw = xw + b_ih
    if b_hh is not None:
        xw = xw + b_hh
    h = h0 if h0 is not None else paddle.zeros([b, hsz], dtype=x.dtype)
    ys = []
    for t in range(t_len):
        h = act(xw[t] + paddle.matmul(h, w_hh, transpose_y=True))
        ys.append(h)
    y = paddle.stack(ys, axis=0 if time_major else 1)
    return y, h


def _lengths(sequence_length, inputs, time_major, who):
    """sequence_length as a checked int64 numpy vector [B]."""
    import numpy as np
    lens = sequence_length.numpy() if hasattr(sequence_length, 'numpy') else \
        np.asarray(sequence_length)
    lens = np.asarray(lens).astype(np.int64).reshape(-1)
    batch = inputs.shape[1 if time_major else 0]
    steps = inputs.shape[0 if time_major else 1]
    if lens.shape[0] != batch or lens.min(initial=0) < 0 or lens.max(initial=0) > steps:
        raise ValueError("{}: sequence_length must hold {} lengths in [0, {}], got {}".format(
            who, batch, steps, lens.tolist()))
    return lens


def _masked_sequence(kind, x, h0, c0, w_ih, w_hh, b_ih, b_hh, time_major, lens, reverse,
                     activation):
    """One direction of one layer over padded sequences (Paddle's rnn op with
    sequence_length): a sample's state stops changing after its length, its
    outputs there are zeros, and the reverse direction reads each sequence
    backwards within its own length. One fused cell op per time step."""
    import numpy as np
    import paddle
    if time_major:
        x = paddle.transpose(x, [1, 0, 2])
    b, t_len = x.shape[0], x.shape[1]
    hsz = w_hh.shape[1]
    idx = None
    if reverse:
        t = np.arange(t_len)[None, :]
        perm = np.where(t < lens[:, None], lens[:, None] - 1 - t, t)
        idx = paddle.to_tensor(perm.astype(np.int64))

        def permute(v):
            ind = paddle.expand(paddle.unsqueeze(idx, -1), [b, t_len, v.shape[-1]])
            return paddle.take_along_axis(v, ind, 1)
        x = permute(x)
    dt = str(x.dtype).replace('paddle.', '')
    mask = (np.arange(t_len)[:, None] < lens[None, :]).astype(dt)       # [T, B]
    h = h0 if h0 is not None else paddle.zeros([b, hsz], dtype=dt)
    c = c0 if c0 is not None else paddle.zeros([b, hsz], dtype=dt)
    act = paddle.tanh if activation == 'tanh' else F.relu
    ys = []
    for step in range(t_len):
        x_t = x[:, step]
        if kind == 'lstm':
            h_new, c_new = _amp_run(_C().lstm_cell, (x_t, h, c, w_ih, w_hh, b_ih, b_hh))
        elif kind == 'gru':
            h_new = _amp_run(_C().gru_cell, (x_t, h, w_ih, w_hh, b_ih, b_hh))
        else:
            pre = paddle.matmul(x_t, w_ih, transpose_y=True) + \
                paddle.matmul(h, w_hh, transpose_y=True)
            if b_ih is not None:
                pre = pre + b_ih
            if b_hh is not None:
                pre = pre + b_hh
            h_new = act(pre)
        m = paddle.to_tensor(mask[step][:, None])
        h = h_new * m + h * (1.0 - m)
        if kind == 'lstm':
            c = c_new * m + c * (1.0 - m)
        ys.append(h_new * m)
    y = paddle.stack(ys, axis=1)
    if reverse:
        y = permute(y)
    if time_major:
        y = paddle.transpose(y, [1, 0, 2])
    return y, h, (c if kind == 'lstm' else None)


class RNNCellBase(Layer):
    """Base of recurrent cells: forward(inputs, states) -> (outputs, new_states);
    state_shape describes one sample's state (a shape, or a nested tuple of them)
    and get_initial_states builds zero states for a batch."""

    @property
    def state_shape(self):
        raise NotImplementedError("{} must define state_shape".format(type(self).__name__))

    @property
    def state_dtype(self):
        import paddle
        return paddle.get_default_dtype()

    def get_initial_states(self, batch_ref, shape=None, dtype=None, init_value=0.0,
                           batch_dim_idx=0):
        import paddle
        batch = batch_ref.shape[batch_dim_idx] if not isinstance(batch_ref, (list, tuple)) \
            else _first(batch_ref).shape[batch_dim_idx]
        shape = self.state_shape if shape is None else shape
        dtype = self.state_dtype if dtype is None else dtype

        def build(s):
            if isinstance(s, (list, tuple)) and s and isinstance(s[0], (list, tuple)):
                return tuple(build(v) for v in s)
            dims = [batch] + [int(v) for v in s if v != -1]
            return paddle.full(dims, init_value, dtype=dtype)
        return build(shape)


def _first(nest):
    while isinstance(nest, (list, tuple)):
        nest = nest[0]
    return nest


class _CellBase(RNNCellBase):
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

    @property
    def state_shape(self):
        return ((self.hidden_size,), (self.hidden_size,))

    def forward(self, inputs, states=None):
        h0, c0 = (None, None) if states is None else states
        h, c = _amp_run(_C().lstm_cell, (inputs, h0, c0, self.weight_ih, self.weight_hh,
                                         self.bias_ih, self.bias_hh))
        return h, (h, c)


class GRUCell(_CellBase):
    _gates = 3

    @property
    def state_shape(self):
        return (self.hidden_size,)

    def forward(self, inputs, states=None):
        h = _amp_run(_C().gru_cell, (inputs, states, self.weight_ih, self.weight_hh,
                                   self.bias_ih, self.bias_hh))
        return h, h


class SimpleRNN(_RNNBase):
    """SimpleRNN(input_size, hidden_size, num_layers=1, direction='forward',
    time_major=False, dropout=0.0, activation='tanh', ...) -> (outputs, h)
    with h_t = act(W_ih x_t + b_ih + W_hh h_{t-1} + b_hh)."""
    _gates = 1
    _kind = 'simple'

    def __init__(self, input_size, hidden_size, num_layers=1, direction='forward',
                 time_major=False, dropout=0.0, activation='tanh', weight_ih_attr=None,
                 weight_hh_attr=None, bias_ih_attr=None, bias_hh_attr=None, name=None):
        super().__init__(input_size, hidden_size, num_layers, direction, time_major, dropout,
                         weight_ih_attr, weight_hh_attr, bias_ih_attr, bias_hh_attr, name,
                         activation=activation)


class SimpleRNNCell(_CellBase):
    """SimpleRNNCell(input_size, hidden_size, activation='tanh', ...):
    forward(inputs, states=None) -> (h, h)."""
    _gates = 1

    def __init__(self, input_size, hidden_size, activation='tanh', weight_ih_attr=None,
                 weight_hh_attr=None, bias_ih_attr=None, bias_hh_attr=None, name=None):
        if activation not in ('tanh', 'relu'):
            raise ValueError("activation for SimpleRNNCell should be tanh or relu, but get {}"
                             .format(activation))
        super().__init__(input_size, hidden_size, weight_ih_attr, weight_hh_attr, bias_ih_attr,
                         bias_hh_attr, name)
        self.activation = activation

    @property
    def state_shape(self):
        return (self.hidden_size,)

    def forward(self, inputs, states=None):
        import paddle
        if states is None:
            states = paddle.zeros([inputs.shape[0], self.hidden_size], dtype=inputs.dtype)
        pre = paddle.matmul(inputs, self.weight_ih, transpose_y=True) + \
            paddle.matmul(states, self.weight_hh, transpose_y=True)
        if self.bias_ih is not None:
            pre = pre + self.bias_ih
        if self.bias_hh is not None:
            pre = pre + self.bias_hh
        h = paddle.tanh(pre) if self.activation == 'tanh' else F.relu(pre)
        return h, h

    def extra_repr(self):
        s = '{}, {}'.format(self.input_size, self.hidden_size)
        if self.activation != 'tanh':
            s += ', activation={}'.format(self.activation)
        return s


def _map2(fn, a, b):
    if isinstance(a, (list, tuple)):
        return type(a)(_map2(fn, x, y) for x, y in zip(a, b))
    return fn(a, b)


class RNN(Layer):
    """RNN(cell, is_reverse=False, time_major=False): runs cell over the time
    axis. forward(inputs, initial_states=None, sequence_length=None) ->
    (outputs, final_states); with sequence_length, a sample's states stop
    changing after its length (as Paddle's dynamic-graph RNN does)."""

    def __init__(self, cell, is_reverse=False, time_major=False):
        super().__init__()
        self.cell = cell
        self.is_reverse = is_reverse
        self.time_major = time_major

    def forward(self, inputs, initial_states=None, sequence_length=None, **kwargs):
        import paddle
        if inputs.ndim < 2:
            raise ValueError("RNN: inputs must have a batch and a time axis, got {}".format(
                list(inputs.shape)))
        time_axis = 0 if self.time_major else 1
        batch_axis = 1 if self.time_major else 0
        if initial_states is None:
            initial_states = self.cell.get_initial_states(batch_ref=inputs,
                                                          batch_dim_idx=batch_axis)
        steps = inputs.shape[time_axis]
        mask = None
        if sequence_length is not None:
            lens = paddle.cast(sequence_length, inputs.dtype)
            mask = paddle.cast(paddle.unsqueeze(paddle.arange(steps, dtype=inputs.dtype), 1)
                               < paddle.unsqueeze(lens, 0), inputs.dtype)    # [T, B]
        order = range(steps - 1, -1, -1) if self.is_reverse else range(steps)
        states = initial_states
        outs = []
        for t in order:
            x_t = paddle.index_select(inputs, paddle.to_tensor([t]), time_axis)
            x_t = paddle.squeeze(x_t, [time_axis])
            out, new_states = self.cell(x_t, states, **kwargs)
            if mask is not None:
                m = paddle.unsqueeze(mask[t], 1)

                def keep(old, new, m=m):
                    return new * m + old * (1.0 - m)
                new_states = _map2(keep, states, new_states)
            states = new_states
            outs.append(out)
        if self.is_reverse:
            outs = outs[::-1]
        return paddle.stack(outs, axis=time_axis), states


class BiRNN(Layer):
    """BiRNN(cell_fw, cell_bw, time_major=False): forward(inputs,
    initial_states=None, sequence_length=None) -> (outputs with both
    directions concatenated on the last axis, (states_fw, states_bw))."""

    def __init__(self, cell_fw, cell_bw, time_major=False):
        super().__init__()
        self.cell_fw = cell_fw
        self.cell_bw = cell_bw
        in_fw = getattr(cell_fw, 'input_size', None)
        in_bw = getattr(cell_bw, 'input_size', None)
        if in_fw is not None and in_bw is not None and in_fw != in_bw:
            raise ValueError("BiRNN: input size of the two cells must be the same, got {} and {}"
                             .format(cell_fw.input_size, cell_bw.input_size))
        self.time_major = time_major
        self._fw = RNN(cell_fw, False, time_major)
        self._bw = RNN(cell_bw, True, time_major)

    def forward(self, inputs, initial_states=None, sequence_length=None, **kwargs):
        import paddle
        if isinstance(initial_states, (list, tuple)):
            if len(initial_states) != 2:
                raise ValueError("BiRNN: initial_states must be (states_fw, states_bw)")
            s_fw, s_bw = initial_states
        else:
            s_fw = s_bw = initial_states
        o_fw, st_fw = self._fw(inputs, s_fw, sequence_length, **kwargs)
        o_bw, st_bw = self._bw(inputs, s_bw, sequence_length, **kwargs)
        return paddle.concat([o_fw, o_bw], axis=-1), (st_fw, st_bw)
