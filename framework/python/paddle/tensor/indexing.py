"""Python indexing of Tensors: x[...] reads and x[...] = v writes with ints,
slices, None, Ellipsis, lists, and bool/int tensors or arrays (NumPy rules)."""
import numpy as np

from paddle import _C

Tensor = _C.Tensor
_BIG = 2 ** 62


def _to_index_tensor(k):
    """Advanced index -> list of int64 tensors (a bool mask gives one per dim)."""
    if isinstance(k, Tensor):
        if k.dtype.name == 'bool':
            return [_C.to_tensor(np.ascontiguousarray(i)) for i in np.nonzero(k.numpy())]
        if k.dtype.is_floating_point:
            raise IndexError("tensors used as indices must be int or bool, got {}".format(
                k.dtype.name))
        return [k]
    a = np.asarray(k)
    if a.dtype == bool:
        return [_C.to_tensor(np.ascontiguousarray(i)) for i in np.nonzero(a)]
    if a.dtype.kind not in 'iu':
        raise IndexError("only integers, slices (`:`), ellipsis (`...`), None and integer or "
                         "boolean arrays are valid indices, got {!r}".format(k))
    return [_C.to_tensor(np.ascontiguousarray(a.astype(np.int64)))]


def _normalize(x, idx):
    if not isinstance(idx, tuple):
        idx = (idx,)
    # count the dims the index consumes
    used = 0
    for k in idx:
        if k is None or k is Ellipsis:
            continue
        if isinstance(k, Tensor) and k.dtype.name == 'bool':
            used += k.ndim
        elif isinstance(k, (list, np.ndarray)) and np.asarray(k).dtype == bool:
            used += np.asarray(k).ndim
        else:
            used += 1
    nell = sum(1 for k in idx if k is Ellipsis)
    if nell > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    if used > x.ndim:
        raise IndexError("too many indices for Tensor of dimension {} (shape {})".format(
            x.ndim, x.shape))
    out = []
    for k in idx:
        if k is Ellipsis:
            out.extend([slice(None)] * (x.ndim - used))
        else:
            out.append(k)
    return out


def _basic(x, idx):
    """Apply ints, slices and None; return (view, advanced list of
    (dim_in_view, [index tensors]))."""
    out = x
    dim = 0
    adv = []
    for k in idx:
        if k is None:
            out = _C.unsqueeze(out, [dim])
            dim += 1
        elif isinstance(k, slice):
            if k == slice(None):
                dim += 1
                continue
            step = 1 if k.step is None else int(k.step)
            if step == 0:
                raise ValueError("slice step cannot be zero")
            start = k.start if k.start is not None else (0 if step > 0 else _BIG)
            stop = k.stop if k.stop is not None else (_BIG if step > 0 else -_BIG)
            out = _C.slice(out, [dim], [int(start)], [int(stop)], [step])
            dim += 1
        elif isinstance(k, (int, np.integer)) and not isinstance(k, bool):
            n = out.shape[dim]
            i = int(k)
            if i < -n or i >= n:
                raise IndexError("index {} is out of bounds for axis {} with size {}".format(
                    i, dim, n))
            out = _C.select(out, dim, i + n if i < 0 else i)
        elif isinstance(k, Tensor) and k.ndim == 0 and not k.dtype.is_floating_point \
                and k.dtype.name != 'bool':
            n = out.shape[dim]
            i = int(k.item())
            if i < -n or i >= n:
                raise IndexError("index {} is out of bounds for axis {} with size {}".format(
                    i, dim, n))
            out = _C.select(out, dim, i + n if i < 0 else i)
        else:
            if isinstance(k, bool):
                k = np.asarray(k)
            ts = _to_index_tensor(k)
            adv.append((dim, ts))
            dim += len(ts)
    return out, adv


def _advanced_perm(view, adv):
    """A transpose of view putting the advanced dims first; returns
    (view_t, index list, where the result dims go)."""
    dims = []
    idx = []
    for d, ts in adv:
        for j, t in enumerate(ts):
            dims.append(d + j)
            idx.append(t)
    rest = [i for i in range(view.ndim) if i not in dims]
    perm = dims + rest
    v = view if perm == list(range(view.ndim)) else _C.transpose(view, perm)
    adjacent = dims == list(range(dims[0], dims[0] + len(dims)))
    return v, idx, (dims[0] if adjacent else 0)


def getitem(x, idx):
    if isinstance(idx, int) and not isinstance(idx, bool):
        n = x.shape[0] if x.ndim else 0
        if x.ndim == 0:
            raise IndexError("too many indices for a 0-D Tensor")
        if idx < -n or idx >= n:
            raise IndexError("index {} is out of bounds for axis 0 with size {}".format(idx, n))
        return _C.select(x, 0, idx + n if idx < 0 else idx)
    if isinstance(idx, Tensor) and idx.dtype.name == 'bool' and list(idx.shape) == list(x.shape):
        return _C.masked_select(x, idx)
    view, adv = _basic(x, _normalize(x, idx))
    if not adv:
        return view
    v, ind, pos = _advanced_perm(view, adv)
    out = _C.index_get(v, ind)
    if pos > 0:
        nb = out.ndim - (v.ndim - len(ind))
        order = list(range(nb, nb + pos)) + list(range(nb)) + list(range(nb + pos, out.ndim))
        out = _C.transpose(out, order)
    return out


def _value_tensor(x, value):
    if isinstance(value, Tensor):
        return value
    if isinstance(value, (bool, int, float, np.number)):
        return value
    a = np.asarray(value)        # a Python complex, a list, an array
    if a.ndim:                   # (ascontiguousarray would make a 0-D array 1-D)
        a = np.ascontiguousarray(a)
    return _C.to_tensor(a, x.dtype.name)


def setitem(x, idx, value):
    if x.is_leaf and not x.stop_gradient and _C.is_grad_enabled():
        raise RuntimeError("Leaf Tensor ({}) that doesn't stop gradient can't use inplace "
                           "strategy (assign under paddle.no_grad())".format(x.name))
    value = _value_tensor(x, value)
    needs_graph = (not x.stop_gradient and not x.is_leaf) or (
        isinstance(value, Tensor) and not value.stop_gradient)
    if needs_graph and _C.is_grad_enabled():
        _setitem_graph(x, idx, value)
        return
    norm = _normalize(x, idx)
    prev = _C.set_grad_enabled(False)
    try:
        if isinstance(idx, Tensor) and idx.dtype.name == 'bool' and \
                list(idx.shape) == list(x.shape) and (
                    not isinstance(value, Tensor) or value.size == 1):
            _C.masked_fill_(x, idx, value)
            return
        view, adv = _basic(x, norm)
        if not adv:
            if view is x and not norm:
                x._assign(value)
            else:
                view._assign(value)
            return
        v, ind, pos = _advanced_perm(view, adv)
        if isinstance(value, Tensor) and pos > 0 and value.ndim > 0:
            # value is laid out like the read result: move the index dims first
            nb = len(np.broadcast_shapes(*[tuple(t.shape) for t in ind]))
            full = list(np.broadcast_shapes(tuple(value.shape), tuple(getitem(x, idx).shape)))
            value = _C.broadcast_to(value, full)
            order = list(range(pos, pos + nb)) + list(range(pos)) + \
                list(range(pos + nb, len(full)))
            value = _C.transpose(value, order)
        _C.index_put_(v, ind, value, False)
    finally:
        _C.set_grad_enabled(prev)


def _setitem_graph(x, idx, value):
    """x[idx] = value recorded in the graph: x's handle is rebound to an
    out-of-place copy (Paddle's set_value on a tensor with history)."""
    norm = _normalize(x, idx)
    axes, starts, ends, steps, drop = [], [], [], [], []
    dim = 0
    for k in norm:
        if k is None:
            continue
        if isinstance(k, slice):
            step = 1 if k.step is None else int(k.step)
            start = k.start if k.start is not None else (0 if step > 0 else _BIG)
            stop = k.stop if k.stop is not None else (_BIG if step > 0 else -_BIG)
            axes.append(dim)
            starts.append(int(start))
            ends.append(int(stop))
            steps.append(step)
        elif isinstance(k, (int, np.integer)) and not isinstance(k, bool):
            i = int(k)
            n = x.shape[dim]
            if i < -n or i >= n:
                raise IndexError("index {} is out of bounds for axis {} with size {}".format(
                    i, dim, n))
            i = i + n if i < 0 else i
            axes.append(dim)
            starts.append(i)
            ends.append(i + 1)
            steps.append(1)
            drop.append(dim)
        else:
            raise NotImplementedError("assigning through tensor indices to a Tensor that "
                                      "has gradient history is not supported yet")
        dim += 1
    if isinstance(value, Tensor) and drop:
        prev = _C.set_grad_enabled(False)
        try:
            region = getitem(x, idx)
            kept = list(_C.slice(x, axes, starts, ends, steps).shape) if axes else x.shape
        finally:
            _C.set_grad_enabled(prev)
        value = _C.reshape(_C.broadcast_to(value, region.shape), kept)
    if not axes:
        axes, starts, ends, steps = [0], [0], [_BIG], [1]
        if x.ndim == 0:
            out = _C.add(_C.multiply(x, 0.0), value)
            x._share(out)
            return
    out = _C.set_value(x, axes, starts, ends, steps, value)
    x._share(out)
