"""paddle.distributed's process groups and collectives over the CPU
communicator (comm.py). Semantics follow Paddle 3.x: collectives work in
place on Tensors, `sync_op=False` returns a task with wait(), a rank outside
the group does nothing."""
import os

import numpy as np

from . import comm as _comm


class ReduceOp(object):
    """paddle.distributed.ReduceOp (values are the communicator's codes)."""
    SUM = 0
    MAX = 1
    MIN = 2
    PROD = 3
    AVG = 4


_OPS = (ReduceOp.SUM, ReduceOp.MAX, ReduceOp.MIN, ReduceOp.PROD, ReduceOp.AVG)


class ParallelEnv(object):
    """The launcher's environment (paddle.distributed.ParallelEnv)."""

    def __init__(self):
        self._rank = int(os.environ.get('PADDLE_TRAINER_ID', '0'))
        self._world_size = int(os.environ.get('PADDLE_TRAINERS_NUM', '1'))
        eps = os.environ.get('PADDLE_TRAINER_ENDPOINTS', '')
        self._trainer_endpoints = [e for e in eps.split(',') if e]
        self._current_endpoint = os.environ.get('PADDLE_CURRENT_ENDPOINT', '')
        self._nrings = int(os.environ.get('FLAGS_nccl_nrings', '1'))
        sel = os.environ.get('FLAGS_selected_gpus', '')
        self._device_id = int(sel.split(',')[0]) if sel else 0
        self._local_rank = int(os.environ.get('PADDLE_RANK_IN_NODE', self._rank))

    @property
    def rank(self):
        return self._rank

    local_rank = property(lambda self: self._local_rank)
    world_size = property(lambda self: self._world_size)
    nranks = world_size
    device_id = property(lambda self: self._device_id)
    dev_id = device_id
    current_endpoint = property(lambda self: self._current_endpoint)
    trainer_endpoints = property(lambda self: list(self._trainer_endpoints))
    nrings = property(lambda self: self._nrings)


class Group(object):
    """A set of global ranks (paddle.distributed.new_group's result)."""

    def __init__(self, rank_in_group, id, ranks, name=None):
        self.rank = rank_in_group         # -1: this process is not a member
        self.id = id
        self.ranks = list(ranks)
        self.nranks = len(self.ranks)
        self.world_size = self.nranks
        self.name = name or 'group_{}'.format(id)

    def is_member(self):
        return self.rank >= 0

    def get_group_rank(self, rank):
        return self.ranks.index(rank) if rank in self.ranks else -1

    @property
    def process_group(self):
        return self

    def __repr__(self):
        return 'Group(id={}, rank={}, nranks={}, ranks={})'.format(self.id, self.rank, self.nranks,
                                                                  self.ranks)


_state = {'comm': None, 'group': None, 'groups': {}, 'next_id': 1}


def _timeout_s():
    v = os.environ.get('EDDY_DIST_TIMEOUT', '300')
    try:
        t = float(v)
    except ValueError:
        raise ValueError("EDDY_DIST_TIMEOUT must be a number of seconds, got {!r}".format(v))
    if not t > 0:
        raise ValueError("EDDY_DIST_TIMEOUT must be positive, got {!r}".format(v))
    return t


def is_initialized():
    return _state['group'] is not None


def init_parallel_env():
    """Connects this rank to the others named by PADDLE_TRAINER_ENDPOINTS
    (the launcher and spawn set it) and returns the global Group. With one
    rank nothing connects."""
    if _state['group'] is not None:
        return _state['group']
    env = ParallelEnv()
    n, r = env.world_size, env.rank
    if n < 1 or not 0 <= r < n:
        raise ValueError("paddle.distributed: PADDLE_TRAINER_ID={} is out of range for "
                         "PADDLE_TRAINERS_NUM={}".format(r, n))
    if n > 1:
        eps = env.trainer_endpoints
        if len(eps) != n:
            raise ValueError("paddle.distributed: PADDLE_TRAINER_ENDPOINTS names {} endpoints for {} "
                             "ranks".format(len(eps), n))
        _state['comm'] = _comm.Communicator(r, n, ','.join(eps), _timeout_s())
    _state['group'] = Group(r, 0, range(n), name='_default_pg')
    _state['groups'][0] = _state['group']
    return _state['group']


def destroy_process_group(group=None):
    if group is None or group.id == 0:
        if _state['comm'] is not None:
            _state['comm'].close()
        _state.update(comm=None, group=None, groups={}, next_id=1)
    else:
        _state['groups'].pop(group.id, None)


def get_rank(group=None):
    if group is not None:
        return group.rank
    return _state['group'].rank if _state['group'] is not None else ParallelEnv().rank


def get_world_size(group=None):
    if group is not None:
        return group.nranks
    return _state['group'].nranks if _state['group'] is not None else ParallelEnv().world_size


def get_group(id=0):
    return _state['groups'].get(id)


def new_group(ranks=None, backend=None, timeout=None):
    """A group over `ranks` (global ranks; all of them when None). Every rank
    must call it, members or not, in the same order."""
    g = _default_group()
    if ranks is None:
        ranks = list(range(g.nranks))
    ranks = sorted(set(int(x) for x in ranks))
    if not ranks or ranks[0] < 0 or ranks[-1] >= g.nranks:
        raise ValueError("new_group: ranks {} are not ranks of a job of {}".format(ranks, g.nranks))
    gid = _state['next_id']
    _state['next_id'] += 1
    me = g.rank
    grp = Group(ranks.index(me) if me in ranks else -1, gid, ranks)
    _state['groups'][gid] = grp
    return grp


def _default_group():
    if _state['group'] is None:
        raise RuntimeError("paddle.distributed: call paddle.distributed.init_parallel_env() first")
    return _state['group']


class _Task(object):
    def __init__(self, fut, after=None):
        self._fut, self._after = fut, after

    def wait(self):
        if self._fut is not None:
            self._fut.wait()
            self._fut = None
            if self._after is not None:
                self._after()
                self._after = None
        return True

    def is_completed(self):
        return self._fut is None or self._fut.is_completed()


def _resolve(group):
    g = group if group is not None else _default_group()
    return g, (None if g.id == 0 else g.ranks)


def _dtype_code(t):
    from paddle import _C
    return _C.dtype_code(t.dtype)


def _check_op(op):
    if op not in _OPS:
        raise ValueError("unknown ReduceOp {!r}: use paddle.distributed.ReduceOp.SUM/MAX/MIN/PROD/AVG"
                         .format(op))


def _host_array(t):
    """(numpy array to communicate, writeback or None). float16/bfloat16 and
    non-contiguous tensors travel as a float32/contiguous copy."""
    code = _dtype_code(t)
    if code in _comm._SUPPORTED:
        if t.is_contiguous():
            return np.asarray(t), None      # a view of the tensor's memory
        a = np.ascontiguousarray(t.numpy())
        return a, lambda: t.set_value(a)
    if code in (2, 3):                      # float16, bfloat16
        a = np.ascontiguousarray(t.numpy().astype(np.float32))
        return a, lambda: t.set_value(a)
    raise TypeError("paddle.distributed: dtype {} cannot be communicated (float32, float64, int32, "
                    "int64, float16, bfloat16)".format(t.dtype))


_NP_CODES = {np.dtype(np.float32): 0, np.dtype(np.float64): 1, np.dtype(np.int32): 4,
             np.dtype(np.int64): 5}


def _finish(fut, sync_op, after=None):
    task = _Task(fut, after)
    if sync_op:
        task.wait()
    return task


def all_reduce(tensor, op=ReduceOp.SUM, group=None, sync_op=True):
    """tensor (in place) becomes op over every member's tensor."""
    _check_op(op)
    g, ranks = _resolve(group)
    if not g.is_member() or g.nranks == 1 or _state['comm'] is None:
        return _Task(None)
    a, back = _host_array(tensor)
    fut = _state['comm'].all_reduce(a.ctypes.data, a.size, _NP_CODES[a.dtype], op, ranks, keep=a)
    return _finish(fut, sync_op, back)


def broadcast(tensor, src, group=None, sync_op=True):
    """Every member's tensor becomes the global rank src's."""
    g, ranks = _resolve(group)
    if src not in g.ranks:
        raise ValueError("broadcast: src rank {} is not in the group {}".format(src, g.ranks))
    if not g.is_member() or g.nranks == 1 or _state['comm'] is None:
        return _Task(None)
    a, back = _host_array(tensor)
    fut = _state['comm'].broadcast(a.ctypes.data, a.nbytes, g.ranks.index(src), ranks, keep=a)
    return _finish(fut, sync_op, back)


def all_gather(tensor_list, tensor, group=None, sync_op=True):
    """Appends to tensor_list one tensor per member (member order)."""
    import paddle
    g, ranks = _resolve(group)
    if not g.is_member():
        return _Task(None)
    a = np.ascontiguousarray(tensor.numpy())
    if g.nranks == 1 or _state['comm'] is None:
        tensor_list.append(paddle.to_tensor(a.copy(), dtype=tensor.dtype))
        return _Task(None)
    out = np.empty((g.nranks,) + a.shape, dtype=a.dtype)
    fut = _state['comm'].all_gather(a.ctypes.data, out.ctypes.data, a.nbytes, ranks, keep=(a, out))

    def after():
        for i in range(g.nranks):
            tensor_list.append(paddle.to_tensor(out[i], dtype=tensor.dtype))
    return _finish(fut, sync_op, after)


def all_gather_object(object_list, obj, group=None):
    """Pickles obj; object_list gets every member's object."""
    import pickle
    g, ranks = _resolve(group)
    data = np.frombuffer(pickle.dumps(obj), dtype=np.uint8)
    if g.nranks == 1 or _state['comm'] is None:
        object_list.append(pickle.loads(data.tobytes()))
        return
    n = np.array([data.size], dtype=np.int64)
    sizes = np.empty(g.nranks, dtype=np.int64)
    _state['comm'].all_gather(n.ctypes.data, sizes.ctypes.data, 8, ranks, keep=(n, sizes)).wait()
    m = int(sizes.max())
    buf = np.zeros(m, dtype=np.uint8)
    buf[:data.size] = data
    out = np.empty((g.nranks, m), dtype=np.uint8)
    _state['comm'].all_gather(buf.ctypes.data, out.ctypes.data, m, ranks, keep=(buf, out)).wait()
    for i in range(g.nranks):
        object_list.append(pickle.loads(out[i, :sizes[i]].tobytes()))


def reduce_scatter(tensor, tensor_list, op=ReduceOp.SUM, group=None, sync_op=True):
    """tensor becomes op over every member's tensor_list[my index]."""
    _check_op(op)
    g, ranks = _resolve(group)
    if not g.is_member():
        return _Task(None)
    if len(tensor_list) != g.nranks:
        raise ValueError("reduce_scatter: tensor_list holds {} tensors for a group of {}"
                         .format(len(tensor_list), g.nranks))
    parts = [np.ascontiguousarray(t.numpy()) for t in tensor_list]
    shape = tuple(tensor.shape)
    for p in parts:
        if p.shape != shape:
            raise ValueError("reduce_scatter: every tensor of tensor_list must have the output's "
                             "shape {}, got {}".format(list(shape), list(p.shape)))
    a = np.stack(parts)
    if a.dtype not in _NP_CODES:
        a = a.astype(np.float32)
    out = np.empty(shape, dtype=a.dtype)
    if g.nranks == 1 or _state['comm'] is None:
        out[...] = a[0]
        tensor.set_value(out.astype(tensor.numpy().dtype))
        return _Task(None)
    fut = _state['comm'].reduce_scatter(a.ctypes.data, out.ctypes.data, out.size, _NP_CODES[a.dtype],
                                        op, ranks, keep=(a, out))
    return _finish(fut, sync_op, lambda: tensor.set_value(out))


def reduce(tensor, dst, op=ReduceOp.SUM, group=None, sync_op=True):
    """The global rank dst's tensor becomes op over every member's tensor;
    the others' tensors are left as they were."""
    _check_op(op)
    g, ranks = _resolve(group)
    if dst not in g.ranks:
        raise ValueError("reduce: dst rank {} is not in the group {}".format(dst, g.ranks))
    if not g.is_member() or g.nranks == 1 or _state['comm'] is None:
        return _Task(None)
    a, _ = _host_array(tensor)
    a = a.copy()
    fut = _state['comm'].all_reduce(a.ctypes.data, a.size, _NP_CODES[a.dtype], op, ranks, keep=a)
    mine = get_rank() == dst
    return _finish(fut, sync_op, (lambda: tensor.set_value(a.astype(tensor.numpy().dtype))) if mine else None)


def scatter(tensor, tensor_list=None, src=0, group=None, sync_op=True):
    """tensor becomes tensor_list[my index] of the global rank src."""
    g, ranks = _resolve(group)
    if src not in g.ranks:
        raise ValueError("scatter: src rank {} is not in the group {}".format(src, g.ranks))
    if not g.is_member():
        return _Task(None)
    shape = tuple(tensor.shape)
    dt = tensor.numpy().dtype
    if get_rank() == src:
        if tensor_list is None or len(tensor_list) != g.nranks:
            raise ValueError("scatter: src needs a tensor_list of {} tensors".format(g.nranks))
        a = np.ascontiguousarray(np.stack([np.asarray(t.numpy(), dtype=dt) for t in tensor_list]))
        if a.shape[1:] != shape:
            raise ValueError("scatter: tensors of shape {} for an output of shape {}"
                             .format(list(a.shape[1:]), list(shape)))
    else:
        a = np.empty((g.nranks,) + shape, dtype=dt)
    if g.nranks == 1 or _state['comm'] is None:
        tensor.set_value(a[0])
        return _Task(None)
    fut = _state['comm'].broadcast(a.ctypes.data, a.nbytes, g.ranks.index(src), ranks, keep=a)
    return _finish(fut, sync_op, lambda: tensor.set_value(a[g.rank]))


def _p2p(tensor, peer, sending, sync_op):
    g = _default_group()
    if not 0 <= peer < g.nranks or peer == g.rank:
        raise ValueError("{}: peer {} is not another rank of this job of {}".format(
            'send' if sending else 'recv', peer, g.nranks))
    if _state['comm'] is None:
        raise RuntimeError("paddle.distributed: send/recv need more than one rank")
    a, back = _host_array(tensor)
    c = _state['comm']
    fut = (c.send if sending else c.recv)(a.ctypes.data, a.nbytes, peer, keep=a)
    return _finish(fut, sync_op, None if sending else back)


def send(tensor, dst=0, group=None, sync_op=True):
    """Sends tensor to global rank dst (which calls recv with the same shape)."""
    return _p2p(tensor, dst, True, sync_op)


def recv(tensor, src=0, group=None, sync_op=True):
    """Fills tensor (in place) with what global rank src sends."""
    return _p2p(tensor, src, False, sync_op)


def isend(tensor, dst, group=None):
    return send(tensor, dst, group, sync_op=False)


def irecv(tensor, src=None, group=None):
    return recv(tensor, src, group, sync_op=False)


def barrier(group=None):
    """Returns once every member entered it."""
    g, ranks = _resolve(group)
    if not g.is_member() or g.nranks == 1 or _state['comm'] is None:
        return
    _state['comm'].barrier(ranks).wait()


def _get_comm():
    return _state['comm']
