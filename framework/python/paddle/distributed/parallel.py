"""paddle.DataParallel: data-parallel training over the ranks of a group.

How gradients are reduced (the Reducer below):
- Trainable parameters are cut into buckets of about comm_buffer_size MB in
  reverse order (backward produces the last layers' gradients first), one
  flat numpy buffer per bucket.
- A gradient hook on every parameter (Tensor.register_hook: it runs when a
  gradient arrives, before it accumulates into .grad) copies the gradient,
  plus what .grad already held (no_sync accumulation), into the bucket; when
  every parameter of a bucket has its gradient the bucket's all-reduce (AVG)
  is handed to the communicator's worker thread, which runs it while the
  backward pass goes on in C (ctypes drops the GIL).
- The end of backward is found by a PyLayer-like node placed on the model's
  floating-point inputs in forward (its backward runs after every layer that
  consumed them); it waits for the buckets, reduces those still open
  (unused parameters count as zero gradients, parameters that received a
  second gradient after their bucket left are reduced again from .grad) and
  writes the averages into .grad. Without floating-point inputs (token ids)
  the last parameter's hook does it instead.
- A gradient arriving after that (a parameter not on any path to the inputs)
  is all-reduced on its own and returned by its hook, so it accumulates
  averaged. Every rank runs the same graph, so the sequence of collectives
  matches across ranks.
"""
import contextlib

import numpy as np

from . import collective as _c

_NP = {'float32': np.float32, 'float64': np.float64}


def _flat(t, dtype):
    """t's values as a flat array: a view of its memory when it is contiguous
    (the buffer protocol), a copy otherwise."""
    return np.asarray(t, dtype=dtype).reshape(-1)


def _write(t, src):
    """Copies the flat array src into tensor t in place."""
    if t.is_contiguous():
        np.copyto(np.asarray(t).reshape(-1), src)
    else:
        import paddle
        t._assign(paddle.to_tensor(src.reshape(t.shape), dtype=t.dtype))


def _np_dtype(t):
    s = str(t.dtype).replace('paddle.', '')
    if s not in _NP:
        raise TypeError("DataParallel: parameter dtype {} is not supported (float32, float64)"
                        .format(t.dtype))
    return _NP[s]


class _Bucket(object):
    def __init__(self, idx, dtype):
        self.params, self.offsets, self.sizes, self.shapes = [], [], [], []
        self.dtype = dtype
        self.numel = 0
        self.buf = None
        self.idx = idx

    def add(self, i, p):
        n = int(np.prod(p.shape)) if len(p.shape) else 1
        self.params.append(i)
        self.offsets.append(self.numel)
        self.sizes.append(n)
        self.shapes.append(tuple(p.shape))
        self.numel += n

    def slot(self, k):
        return self.buf[self.offsets[k]:self.offsets[k] + self.sizes[k]]


class _Reducer(object):
    def __init__(self, params, group, bucket_bytes, last_bucket_bytes):
        self.params = params
        self.group = group
        self.ranks = None if group.id == 0 else group.ranks
        self.buckets = []
        self.where = {}                      # param index -> (bucket, k)
        cur = None
        cap = last_bucket_bytes               # the first bucket sent is small: it starts early
        for i in reversed(range(len(params))):
            p = params[i]
            dt = _np_dtype(p)
            nbytes = (int(np.prod(p.shape)) if len(p.shape) else 1) * np.dtype(dt).itemsize
            if cur is None or cur.dtype != dt or (cur.numel * np.dtype(dt).itemsize + nbytes > cap
                                                  and cur.params):
                if cur is not None:
                    cap = bucket_bytes
                cur = _Bucket(len(self.buckets), dt)
                self.buckets.append(cur)
            self.where[i] = (cur, len(cur.params))
            cur.add(i, p)
        for b in self.buckets:
            b.buf = np.zeros(b.numel, dtype=b.dtype)
        self.hooks = [p.register_hook(self._make_hook(i)) for i, p in enumerate(params)]
        self.sync = True
        # buckets sent from a gradient hook (during backward) / at its end
        self.stats = {'buckets': len(self.buckets), 'from_hooks': 0, 'at_end': 0}
        self._reset()

    def _reset(self):
        self.arrived = [0] * len(self.params)
        self.ready = [0] * len(self.buckets)
        self.futs = [None] * len(self.buckets)
        self.dirty = [False] * len(self.buckets)
        self.n_arrived = 0
        self.active = False          # a backward pass of a synced step is running
        self.finalized = False
        self.bottom = False          # forward placed the end-of-backward node

    def prepare(self, bottom):
        """Called by forward: a new step starts."""
        if self.active and not self.finalized:
            self._wait_all()
        self._reset()
        self.bottom = bottom

    def _comm(self):
        return _c._get_comm()

    def _make_hook(self, i):
        def hook(g):
            return self._on_grad(i, g)
        return hook

    def _on_grad(self, i, g):
        if not self.sync or self._comm() is None:
            return None
        self.active = True
        p = self.params[i]
        if self.finalized:
            return self._reduce_alone(g)
        b, k = self.where[i]
        if self.futs[b.idx] is not None:     # a second gradient after the bucket left
            self.dirty[b.idx] = True
            return None
        slot = b.slot(k)
        if self.arrived[i] == 0:
            prev = p.grad
            if prev is not None:
                np.add(_flat(prev, b.dtype), _flat(g, b.dtype), out=slot)
            else:
                slot[:] = _flat(g, b.dtype)
            self.ready[b.idx] += 1
            self.n_arrived += 1
        else:
            slot += _flat(g, b.dtype)
        self.arrived[i] += 1
        if self.n_arrived == len(self.params) and not self.bottom:
            # last gradient of the step and no end-of-backward node: finish
            # here; this parameter's own sum goes back through the hook
            self._launch_ready()
            self._finalize(skip=i)
            import paddle
            R = b.slot(k).reshape(b.shapes[k]).copy()
            if p.grad is not None:
                p.grad.zero_()
            return paddle.to_tensor(R, dtype=p.dtype)
        if self.ready[b.idx] == len(b.params):
            self._launch(b)
            self.stats['from_hooks'] += 1
        return None

    def _launch(self, b):
        comm = self._comm()
        self.futs[b.idx] = comm.all_reduce(b.buf.ctypes.data, b.numel, 0 if b.dtype == np.float32 else 1,
                                           _c.ReduceOp.AVG, self.ranks, keep=b.buf)

    def _launch_ready(self):
        for b in self.buckets:
            if self.futs[b.idx] is None and self.ready[b.idx] == len(b.params):
                self._launch(b)

    def _reduce_alone(self, g):
        import paddle
        a = np.ascontiguousarray(g.numpy())
        code = 0 if a.dtype == np.float32 else 1
        self._comm().all_reduce(a.ctypes.data, a.size, code, _c.ReduceOp.AVG, self.ranks, keep=a).wait()
        return paddle.to_tensor(a, dtype=g.dtype)

    def _wait_all(self):
        for f in self.futs:
            if f is not None:
                f.wait()

    def _finalize(self, skip=None):
        """Waits for the buckets, reduces the rest, writes .grad."""
        import paddle
        for b in self.buckets:
            if self.futs[b.idx] is None or self.dirty[b.idx]:
                if self.futs[b.idx] is not None:
                    self.futs[b.idx].wait()
                for k, i in enumerate(b.params):
                    if self.dirty[b.idx] or self.arrived[i] == 0:
                        gr = self.params[i].grad
                        b.slot(k)[:] = 0 if gr is None else _flat(gr, b.dtype)
                self.dirty[b.idx] = False
                self._launch(b)
                self.stats['at_end'] += 1
        self._wait_all()
        for b in self.buckets:
            for k, i in enumerate(b.params):
                if i == skip:
                    continue
                p = self.params[i]
                if p.grad is None:
                    p.grad = paddle.to_tensor(b.slot(k).reshape(b.shapes[k]), dtype=p.dtype)
                else:
                    _write(p.grad, b.slot(k))
        self.finalized = True

    def end_of_backward(self):
        if self.sync and self.active and not self.finalized and self._comm() is not None:
            self._finalize()


def _float_tensors(obj, out):
    import paddle
    if isinstance(obj, paddle.Tensor):
        if str(obj.dtype).replace('paddle.', '') in ('float32', 'float64', 'float16', 'bfloat16'):
            out.append(obj)
    elif isinstance(obj, (list, tuple)):
        for x in obj:
            _float_tensors(x, out)
    elif isinstance(obj, dict):
        for x in obj.values():
            _float_tensors(x, out)
    return out


def _replace(obj, mapping):
    import paddle
    if isinstance(obj, paddle.Tensor):
        return mapping.get(id(obj), obj)
    if isinstance(obj, tuple):
        return tuple(_replace(x, mapping) for x in obj)
    if isinstance(obj, list):
        return [_replace(x, mapping) for x in obj]
    if isinstance(obj, dict):
        return {k: _replace(v, mapping) for k, v in obj.items()}
    return obj


def _make_layer_class():
    import paddle

    class DataParallel(paddle.nn.Layer):
        """paddle.DataParallel(layers, strategy=None, comm_buffer_size=25,
        last_comm_buffer_size=1, find_unused_parameters=False, group=None):
        runs `layers` on this rank's share of the batch and averages the
        gradients of every trainable parameter over the group's ranks during
        backward. Parameters and buffers start from rank 0's values."""

        def __init__(self, layers, strategy=None, comm_buffer_size=25, last_comm_buffer_size=1,
                     find_unused_parameters=False, group=None):
            super().__init__()
            if not isinstance(layers, paddle.nn.Layer):
                raise TypeError("DataParallel wraps a paddle.nn.Layer, got {}".format(type(layers).__name__))
            if not (comm_buffer_size > 0 and last_comm_buffer_size > 0):
                raise ValueError("comm_buffer_size and last_comm_buffer_size must be positive (MB)")
            self._layers = layers
            self.find_unused_parameters = bool(find_unused_parameters)
            self._group = group if group is not None else (_c.get_group(0) or _c.init_parallel_env())
            self._grad_need_sync = True
            params = [p for p in layers.parameters() if not p.stop_gradient]
            self._sync_params_buffers()
            self._reducer = None
            if self._group.nranks > 1 and self._group.is_member() and params:
                self._reducer = _Reducer(params, self._group, int(comm_buffer_size * 1024 * 1024),
                                         int(last_comm_buffer_size * 1024 * 1024))
            self._sentinel = paddle.zeros([1], dtype='float32')
            self._sentinel.stop_gradient = False

        def _sync_params_buffers(self):
            if self._group.nranks == 1 or not self._group.is_member():
                return
            src = self._group.ranks[0]
            with paddle.no_grad():
                for t in list(self._layers.parameters()) + list(self._layers.buffers()):
                    _c.broadcast(t, src, group=self._group)

        @contextlib.contextmanager
        def no_sync(self):
            """Gradients of the backward passes inside accumulate locally;
            the first backward after it averages the accumulated sums."""
            old = self._grad_need_sync
            self._grad_need_sync = False
            try:
                yield
            finally:
                self._grad_need_sync = old

        def forward(self, *inputs, **kwargs):
            r = self._reducer
            if r is None:
                return self._layers(*inputs, **kwargs)
            r.sync = self._grad_need_sync
            bottom = False
            if r.sync and paddle.is_grad_enabled():
                xs = _float_tensors((inputs, kwargs), [])
                if xs:
                    inputs, kwargs = self._mark_inputs(xs, inputs, kwargs)
                    bottom = True
            r.prepare(bottom)
            r.sync = self._grad_need_sync
            return self._layers(*inputs, **kwargs)

        def _mark_inputs(self, xs, inputs, kwargs):
            """Puts a node on the inputs whose backward runs once every layer
            that read them has produced its gradients: the end of backward."""
            reducer = self._reducer
            outs = [x.detach() for x in xs]
            need = [not x.stop_gradient for x in xs]

            def backward(*grads):
                reducer.end_of_backward()
                return [g if n else None for g, n in zip(grads, need)] + [None]
            if not paddle._C.custom_node(backward, list(xs) + [self._sentinel], outs):
                return inputs, kwargs
            mapping = {id(x): o for x, o in zip(xs, outs)}
            return _replace(inputs, mapping), _replace(kwargs, mapping)

        def state_dict(self, *args, **kwargs):
            return self._layers.state_dict(*args, **kwargs)

        def set_state_dict(self, state_dict, *args, **kwargs):
            return self._layers.set_state_dict(state_dict, *args, **kwargs)

        set_dict = set_state_dict
        load_dict = set_state_dict

        def scale_loss(self, loss):
            return loss

        def apply_collective_grads(self):
            return None

    return DataParallel


_cls = None


def _data_parallel_class():
    global _cls
    if _cls is None:
        _cls = _make_layer_class()
    return _cls
