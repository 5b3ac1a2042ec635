"""DataLoader worker processes (num_workers > 0).

Each worker is a fork()ed child connected to the loader by one AF_UNIX stream
socketpair. The loader sends small pickled messages (which indices make
batch k); the worker loads the samples, collates them with numpy, and writes
every array of the batch into one fresh memfd (shared memory that needs no
name, so nothing can leak in /dev/shm and no resource tracker is involved);
the descriptor travels back beside a small pickled layout (SCM_RIGHTS). The
loader maps it, makes Tensors from the views and closes it: batch data is
never pickled. Where memfd_create is refused, a file created and unlinked at
once in /dev/shm (or the temp directory) does the same job.

Batches come back in order (results that arrive early wait in a dict), at
most prefetch_factor per worker in flight. A worker that raises sends its
formatted traceback, which the loader raises again (same exception type when
it can be rebuilt from a message, else RuntimeError); a worker that dies is
reported with its exit status. Workers ignore SIGINT, so Ctrl-C interrupts
the loader, whose cleanup closes the sockets (workers exit on EOF) and reaps
them. persistent_workers keeps the processes between epochs.
"""
import mmap
import os
import pickle
import random
import selectors
import signal
import socket
import struct
import sys
import tempfile
import time
import traceback
from collections.abc import Mapping, Sequence
import numbers

import numpy as np

_HDR = struct.Struct('<Q')
_MAX_MSG = 256 << 20           # bound on one pickled message (layouts, tracebacks)
_ALIGN = 64


class WorkerInfo:
    """What get_worker_info() returns inside a worker."""

    def __init__(self, id, num_workers, dataset, seed):  # noqa: A002
        self.id = id
        self.num_workers = num_workers
        self.dataset = dataset
        self.seed = seed

    def __repr__(self):
        return 'WorkerInfo(id={}, num_workers={}, seed={})'.format(self.id, self.num_workers,
                                                                    self.seed)


_worker_info = None


def get_worker_info():
    """In a DataLoader worker: its WorkerInfo (id, num_workers, dataset,
    seed); in the main process: None."""
    return _worker_info


# ---- framing -------------------------------------------------------------------

def _send(sock, obj, fd=None):
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    if len(data) > _MAX_MSG:
        raise ValueError("DataLoader: a message of {} bytes is over the {} byte limit"
                         .format(len(data), _MAX_MSG))
    hdr = _HDR.pack(len(data))
    if fd is not None:
        socket.send_fds(sock, [hdr], [fd])
    else:
        sock.sendall(hdr)
    sock.sendall(data)


def _recv_exact(sock, n):
    buf = bytearray(n)
    view = memoryview(buf)
    got = 0
    while got < n:
        k = sock.recv_into(view[got:], n - got)
        if k == 0:
            raise EOFError
        got += k
    return bytes(buf)


def _recv(sock):
    """(object, fd or None); EOFError when the peer closed."""
    msg, fds, _flags, _addr = socket.recv_fds(sock, _HDR.size, 1)
    fd = fds[0] if fds else None
    try:
        if len(msg) == 0:
            raise EOFError
        if len(msg) < _HDR.size:
            msg += _recv_exact(sock, _HDR.size - len(msg))
        (n,) = _HDR.unpack(msg)
        if n > _MAX_MSG:
            raise RuntimeError("DataLoader: a worker sent a message of {} bytes".format(n))
        return pickle.loads(_recv_exact(sock, n)), fd
    except BaseException:
        if fd is not None:
            os.close(fd)
        raise


# ---- batches as shared memory ------------------------------------------------------

def _is_tensor(x):
    import paddle
    return isinstance(x, paddle.Tensor)


def np_collate(batch):
    """default_collate_fn's rules with numpy results (the loader makes the
    Tensors): arrays, Tensors and numbers stack along a new axis 0; dicts and
    sequences collate per field; strings stay lists."""
    sample = batch[0]
    if isinstance(sample, np.ndarray):
        return ('T', np.stack(batch, axis=0))
    if _is_tensor(sample):
        return ('T', np.stack([s.numpy() for s in batch], axis=0))
    if isinstance(sample, (bool, np.bool_)):
        return ('T', np.array(batch, dtype=np.bool_))
    if isinstance(sample, numbers.Integral):
        return ('T', np.array(batch, dtype=np.int64))
    if isinstance(sample, numbers.Number):
        arr = np.array(batch)
        if arr.dtype == np.float64 and not isinstance(sample, np.floating):
            arr = arr.astype(np.float32)
        return ('T', arr)
    if isinstance(sample, (str, bytes)):
        return ('O', list(batch))
    if isinstance(sample, Mapping):
        return ('D', [(k, np_collate([d[k] for d in batch])) for k in sample])
    if isinstance(sample, Sequence):
        n = len(sample)
        for s in batch:
            if len(s) != n:
                raise RuntimeError("fields number not same among samples in a batch")
        return ('L', [np_collate(list(f)) for f in zip(*batch)])
    raise TypeError("batch data can only contains: tensor, numpy.ndarray, dict, list, number, "
                    "but got {}".format(type(sample)))


def as_tree(obj, to_tensor):
    """A user collate_fn's result (to_tensor False) or an unbatched sample
    (True: numpy arrays become Tensors and tuples lists, as the
    single-process loader does) as a tree: 'T' leaves become Tensors, 'A'
    leaves stay numpy arrays."""
    if _is_tensor(obj):
        return ('T', obj.numpy())
    if isinstance(obj, np.ndarray):
        return ('T' if to_tensor else 'A', obj)
    if isinstance(obj, Mapping):
        return ('D', [(k, as_tree(v, to_tensor)) for k, v in obj.items()])
    if isinstance(obj, (list, tuple)):
        kind = 'L' if isinstance(obj, list) or to_tensor else 'U'
        return (kind, [as_tree(v, to_tensor) for v in obj])
    return ('O', obj)


def _arrays(tree, out):
    kind, v = tree
    if kind in ('T', 'A'):
        out.append(v)
    elif kind == 'D':
        for _, t in v:
            _arrays(t, out)
    elif kind in ('L', 'U'):
        for t in v:
            _arrays(t, out)


def _layout(tree, offs):
    """The tree with arrays replaced by (offset, dtype, shape)."""
    kind, v = tree
    if kind in ('T', 'A'):
        off = offs.pop(0)
        return (kind, (off, v.dtype.str, v.shape))
    if kind == 'D':
        return ('D', [(k, _layout(t, offs)) for k, t in v])
    if kind in ('L', 'U'):
        return (kind, [_layout(t, offs) for t in v])
    return tree


def _shm_fd(size):
    """An anonymous shared-memory file of `size` bytes."""
    try:
        fd = os.memfd_create('eddy-dataloader', os.MFD_CLOEXEC)
    except (AttributeError, OSError):
        d = '/dev/shm' if os.path.isdir('/dev/shm') and os.access('/dev/shm', os.W_OK) \
            else tempfile.gettempdir()
        fd, path = tempfile.mkstemp(prefix='eddy-dataloader-', dir=d)
        os.unlink(path)
    try:
        os.ftruncate(fd, max(size, 1))
    except BaseException:
        os.close(fd)
        raise
    return fd


def pack(tree):
    """(layout, fd or None): the tree's arrays copied into one shared-memory
    file, the layout naming each array's place."""
    arrays = []
    _arrays(tree, arrays)
    if not arrays:
        return tree, None
    offs, total = [], 0
    for a in arrays:
        total = (total + _ALIGN - 1) // _ALIGN * _ALIGN
        offs.append(total)
        total += a.nbytes
    fd = _shm_fd(total)
    try:
        with mmap.mmap(fd, max(total, 1)) as m:
            for a, off in zip(arrays, offs):
                if a.nbytes:
                    dst = np.ndarray(a.shape, dtype=a.dtype, buffer=m, offset=off)
                    np.copyto(dst, a, casting='no')
                    del dst
    except BaseException:
        os.close(fd)
        raise
    return _layout(tree, offs), fd


def unpack(layout, fd):
    """The batch from a layout and its shared memory: 'T' leaves become
    Tensors (one copy out of the mapping), 'A' leaves numpy copies."""
    import paddle
    m = None
    try:
        if fd is not None:
            size = os.fstat(fd).st_size
            m = mmap.mmap(fd, size, prot=mmap.PROT_READ)

        def build(t):
            kind, v = t
            if kind in ('T', 'A'):
                off, dt, shape = v
                dtype = np.dtype(dt)
                n = int(np.prod(shape)) * dtype.itemsize
                if off < 0 or off + n > len(m):
                    raise RuntimeError("DataLoader: a worker's batch layout is out of range")
                view = np.frombuffer(m, dtype=dtype, count=int(np.prod(shape)), offset=off)
                view = view.reshape(shape)
                r = paddle.to_tensor(view) if kind == 'T' else view.copy()
                del view
                return r
            if kind == 'D':
                return {k: build(x) for k, x in v}
            if kind == 'L':
                return [build(x) for x in v]
            if kind == 'U':
                return tuple(build(x) for x in v)
            return v
        return build(layout)
    finally:
        if m is not None:
            m.close()
        if fd is not None:
            os.close(fd)


# ---- the worker process ---------------------------------------------------------------

def _worker_main(sock, wid, loader, seed):
    global _worker_info
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    random.seed(seed)
    np.random.seed(seed % (1 << 32))
    import paddle
    paddle.seed(seed % (1 << 63))
    dataset = loader.dataset
    _worker_info = WorkerInfo(wid, loader.num_workers, dataset, seed)
    it = None
    try:
        if loader.worker_init_fn is not None:
            loader.worker_init_fn(wid)
    except BaseException as e:  # reported with the first task
        init_error = e
        init_tb = traceback.format_exc()
    else:
        init_error = None
    while True:
        try:
            msg, _ = _recv(sock)
        except (EOFError, OSError):
            return
        if msg[0] == 'exit':
            return
        _op, epoch, bid, indices = msg
        try:
            if init_error is not None:
                raise init_error
            if _op == 'iter_start':
                it = iter(dataset)
                continue
            if _op == 'task':
                samples = [dataset[i] for i in indices]
                tree = loader._worker_collate(samples, batched=loader.batch_size is not None)
            else:   # 'next' of an IterableDataset
                samples = []
                n = 1 if loader.batch_size is None else loader.batch_size
                for _ in range(n):
                    try:
                        samples.append(next(it))
                    except StopIteration:
                        break
                if not samples or (loader.drop_last and loader.batch_size is not None and
                                   len(samples) < loader.batch_size):
                    _send(sock, ('end', epoch, bid))
                    continue
                tree = loader._worker_collate(samples, batched=loader.batch_size is not None)
            layout, fd = pack(tree)
            try:
                _send(sock, ('ok', epoch, bid, layout), fd)
            finally:
                if fd is not None:
                    os.close(fd)
        except (BrokenPipeError, ConnectionResetError):
            return
        except BaseException as e:
            text = init_tb if init_error is not None and e is init_error else \
                traceback.format_exc()
            cls = type(e)
            try:
                _send(sock, ('err', epoch, bid, cls.__module__, cls.__qualname__,
                             text[-65536:]))
            except OSError:
                return


def _rebuild_error(module, qualname, text, wid, pid):
    msg = "DataLoader worker {} (pid {}) raised:\n{}".format(wid, pid, text.rstrip())
    cls = None
    mod = sys.modules.get(module)
    if mod is not None and '.' not in qualname:
        cls = getattr(mod, qualname, None)
    if isinstance(cls, type) and issubclass(cls, Exception):
        try:
            return cls(msg)
        except Exception:
            pass
    return RuntimeError(msg)


class WorkerPool:
    """num_workers forked processes serving one loader."""

    def __init__(self, loader):
        self.loader = loader
        self.n = loader.num_workers
        self.socks, self.pids = [], []
        self.sel = selectors.DefaultSelector()
        self.epoch = 0
        base = int(np.random.randint(0, 1 << 31)) * 1000003
        try:
            for wid in range(self.n):
                parent, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
                sys.stdout.flush()
                sys.stderr.flush()
                pid = os.fork()
                if pid == 0:     # the worker
                    code = 0
                    try:
                        parent.close()
                        for s in self.socks:
                            s.close()
                        _worker_main(child, wid, loader, base + wid)
                    except BaseException:
                        code = 1
                        try:
                            traceback.print_exc()
                        except BaseException:
                            pass
                    finally:
                        os._exit(code)
                child.close()
                self.socks.append(parent)
                self.pids.append(pid)
                self.sel.register(parent, selectors.EVENT_READ, wid)
        except BaseException:
            self.close()
            raise

    def send(self, wid, msg):
        try:
            _send(self.socks[wid], msg)
        except OSError:
            raise self.dead(wid) from None

    def dead(self, wid):
        pid = self.pids[wid]
        status = None
        for _ in range(50):
            try:
                p, st = os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                break
            if p == pid:
                status = st
                self.pids[wid] = None
                break
            time.sleep(0.01)
        if status is None:
            how = 'closed its connection'
        elif os.WIFSIGNALED(status):
            how = 'was killed by signal {} ({})'.format(
                os.WTERMSIG(status), signal.Signals(os.WTERMSIG(status)).name)
        else:
            how = 'exited with status {}'.format(os.WEXITSTATUS(status))
        return RuntimeError("DataLoader worker {} (pid {}) {} unexpectedly".format(wid, pid, how))

    def recv(self, timeout):
        """(wid, message, fd) from whichever worker answers first."""
        deadline = None if not timeout else time.monotonic() + timeout
        while True:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            events = self.sel.select(left)
            if not events:
                if deadline is not None and time.monotonic() >= deadline:
                    raise RuntimeError("DataLoader timed out: no batch from the workers in "
                                       "{} seconds".format(timeout))
                continue
            key, _ = events[0]
            wid = key.data
            try:
                msg, fd = _recv(self.socks[wid])
            except (EOFError, OSError):
                raise self.dead(wid) from None
            return wid, msg, fd

    def close(self):
        for s in self.socks:
            try:
                _send(s, ('exit',))
            except (OSError, ValueError):
                pass
        try:
            self.sel.close()
        except Exception:
            pass
        for s in self.socks:
            try:
                s.close()
            except OSError:
                pass
        self.socks = []
        # reap: workers exit on EOF; kill the ones that do not within a second
        deadline = time.monotonic() + 1.0
        for i, pid in enumerate(self.pids):
            if pid is None:
                continue
            while True:
                try:
                    p, _ = os.waitpid(pid, os.WNOHANG)
                except ChildProcessError:
                    break
                if p == pid:
                    break
                if time.monotonic() > deadline:
                    try:
                        os.kill(pid, signal.SIGKILL)
                        os.waitpid(pid, 0)
                    except (ProcessLookupError, ChildProcessError):
                        pass
                    break
                time.sleep(0.005)
            self.pids[i] = None
        self.pids = []

    def __del__(self):
        if self.pids:
            self.close()


class MultiProcessIter:
    """One epoch over a WorkerPool, batches in order."""

    def __init__(self, loader, pool):
        self.loader = loader
        self.pool = pool
        pool.epoch += 1
        self.epoch = pool.epoch
        self.pending = {}          # bid -> (layout, fd) or exception
        self.next_bid = 0
        self.sent = 0
        self.outstanding = [0] * pool.n
        self.done = False
        self.iterable = loader._is_iterable
        self.ended = set()         # iterable workers that ran dry
        self.bid_worker = {}
        if self.iterable:
            for w in range(pool.n):
                pool.send(w, ('iter_start', self.epoch, -1, None))
            self.tasks = None
        elif loader.batch_sampler is not None:
            self.tasks = iter(loader.batch_sampler)
        else:
            self.tasks = ([i] for i in range(len(loader.dataset)))
        self._fill()

    def _fill(self):
        cap = self.loader.prefetch_factor
        while True:
            live = [w for w in range(self.pool.n) if w not in self.ended]
            if not live:
                return
            if self.iterable:      # round robin: batch k from worker k mod n
                w = live[self.sent % len(live)]
            else:                  # the least busy worker
                w = min(live, key=lambda k: (self.outstanding[k], k))
            if self.outstanding[w] >= cap:
                return
            if self.iterable:
                msg = ('next', self.epoch, self.sent, None)
            else:
                try:
                    idx = next(self.tasks)
                except StopIteration:
                    return
                msg = ('task', self.epoch, self.sent, list(idx))
            self.pool.send(w, msg)
            self.bid_worker[self.sent] = w
            self.outstanding[w] += 1
            self.sent += 1

    def __iter__(self):
        return self

    def __next__(self):
        if self.done:
            raise StopIteration
        try:
            while True:
                if self.next_bid in self.pending:
                    item = self.pending.pop(self.next_bid)
                    self.next_bid += 1
                    if isinstance(item, BaseException):
                        raise item
                    if item is None:         # an iterable worker's end marker
                        self._fill()
                        continue
                    self._fill()
                    return unpack(*item)
                if self.next_bid >= self.sent:
                    self._finish()
                    raise StopIteration
                wid, msg, fd = self.pool.recv(self.loader.timeout)
                kind, epoch, bid = msg[0], msg[1], msg[2]
                if epoch != self.epoch:      # left over from an abandoned epoch
                    if fd is not None:
                        os.close(fd)
                    continue
                self.outstanding[wid] -= 1
                if kind == 'ok':
                    self.pending[bid] = (msg[3], fd)
                elif kind == 'end':
                    self.ended.add(wid)
                    self.pending[bid] = None
                else:
                    self.pending[bid] = _rebuild_error(msg[3], msg[4], msg[5], wid,
                                                       self.pool.pids[wid])
        except StopIteration:
            raise
        except BaseException:
            self._abort()
            raise

    next = __next__

    def _finish(self):
        self.done = True
        if not self.loader.persistent_workers:
            self.loader._drop_pool()

    def _abort(self):
        """An error or Ctrl-C: drop pending shared memory, stop the workers
        (persistent ones too: their queues hold this epoch's work)."""
        self.done = True
        for item in self.pending.values():
            if isinstance(item, tuple) and item[1] is not None:
                try:
                    os.close(item[1])
                except OSError:
                    pass
        self.pending.clear()
        self.loader._drop_pool()

    def __del__(self):
        if not self.done:
            for item in self.pending.values():
                if isinstance(item, tuple) and item[1] is not None:
                    try:
                        os.close(item[1])
                    except OSError:
                        pass
            if not self.loader.persistent_workers:
                self.loader._drop_pool()
