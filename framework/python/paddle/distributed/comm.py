"""The CPU communicator (framework/dist/fw_dist.h) through ctypes, and the
worker thread every collective of this process runs on.

Why ctypes and not a CPython extension: the communicator is plain C with no
Python objects in its interface (pointers, counts, rank lists), ctypes drops
the GIL for the length of each call (so a bucket's all-reduce overlaps the
backward pass that keeps running in C), and the library stays usable from C
tests and a future NCCL twin without touching paddle._C's sources.

One worker thread per process runs the collectives in the order they were
submitted: the ranks' sequences of collectives stay matched even when
DataParallel launches bucket all-reduces from gradient hooks.
"""
import ctypes
import os
import queue
import threading

FLOAT32, FLOAT64, INT32, INT64 = 0, 1, 4, 5
_SUPPORTED = (FLOAT32, FLOAT64, INT32, INT64)


class CommError(RuntimeError):
    """A collective failed: a peer died, timed out or the arguments were bad."""


def _lib_path():
    env = os.environ.get('EDDY_DIST_LIB')
    if env:
        return env
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), 'libeddy_dist.so')


_lib = None


def lib():
    global _lib
    if _lib is None:
        path = _lib_path()
        try:
            L = ctypes.CDLL(path)
        except OSError as e:
            raise CommError("paddle.distributed: cannot load the communicator {}: {}".format(path, e))
        vp, sz, ip = ctypes.c_void_p, ctypes.c_size_t, ctypes.POINTER(ctypes.c_int)
        L.fwd_comm_init.argtypes = [ctypes.POINTER(vp), ctypes.c_int, ctypes.c_int, ctypes.c_char_p, ctypes.c_int]
        L.fwd_comm_free.argtypes = [vp]
        L.fwd_comm_set_timeout.argtypes = [vp, ctypes.c_int]
        L.fwd_all_reduce.argtypes = [vp, ip, ctypes.c_int, vp, sz, ctypes.c_int, ctypes.c_int]
        L.fwd_broadcast.argtypes = [vp, ip, ctypes.c_int, vp, sz, ctypes.c_int]
        L.fwd_all_gather.argtypes = [vp, ip, ctypes.c_int, vp, vp, sz]
        L.fwd_reduce_scatter.argtypes = [vp, ip, ctypes.c_int, vp, vp, sz, ctypes.c_int, ctypes.c_int]
        L.fwd_barrier.argtypes = [vp, ip, ctypes.c_int]
        L.fwd_send.argtypes = [vp, ctypes.c_int, vp, sz]
        L.fwd_recv.argtypes = [vp, ctypes.c_int, vp, sz]
        L.fwd_error_last.restype = ctypes.c_char_p
        _lib = L
    return _lib


class Future(object):
    """The result of a collective submitted to the worker: wait() re-raises
    its error in the caller."""

    def __init__(self):
        self._ev = threading.Event()
        self._err = None

    def _set(self, err):
        self._err = err
        self._ev.set()

    def is_completed(self):
        return self._ev.is_set()

    def wait(self, timeout=None):
        self._ev.wait(timeout)
        if self._err is not None:
            raise self._err
        return True


class Communicator(object):
    """rank of nranks over endpoints; every method returns a Future."""

    def __init__(self, rank, nranks, endpoints, timeout_s):
        self.rank, self.nranks = rank, nranks
        self._timeout_ms = int(timeout_s * 1000)
        h = ctypes.c_void_p()
        L = lib()
        if L.fwd_comm_init(ctypes.byref(h), rank, nranks, endpoints.encode(), self._timeout_ms) < 0:
            raise CommError("paddle.distributed: rank {}: {}".format(rank, L.fwd_error_last().decode()))
        self._h = h
        self._q = queue.Queue()
        self._broken = None
        self._t = threading.Thread(target=self._run, name='paddle-dist-comm', daemon=True)
        self._t.start()

    def _run(self):
        while True:
            item = self._q.get()
            if item is None:
                return
            fn, fut, keep = item
            if self._broken is not None:
                fut._set(CommError(self._broken))
                continue
            err = None
            try:
                rc = fn()
                if rc < 0:
                    msg = "rank {}: {}".format(self.rank, lib().fwd_error_last().decode())
                    # a failed collective leaves the byte streams out of step:
                    # every later one fails with the same reason
                    self._broken = msg
                    err = CommError(msg)
            except Exception as e:      # noqa: BLE001 - handed to the waiter
                err = e
            del keep
            fut._set(err)

    def submit(self, fn, keep=None):
        """Runs fn() (a ctypes call returning 0 or a negative code) on the
        worker; keep holds the buffers alive until it ran."""
        if self._h is None:
            raise CommError("paddle.distributed: the communicator is closed")
        fut = Future()
        self._q.put((fn, fut, keep))
        return fut

    @staticmethod
    def _ranks(ranks):
        if ranks is None:
            return None, 0
        arr = (ctypes.c_int * len(ranks))(*ranks)
        return arr, len(ranks)

    def all_reduce(self, ptr, count, dtype, op, ranks=None, keep=None):
        r, n = self._ranks(ranks)
        return self.submit(lambda: lib().fwd_all_reduce(self._h, r, n, ptr, count, dtype, op), (keep, r))

    def broadcast(self, ptr, nbytes, root_index, ranks=None, keep=None):
        r, n = self._ranks(ranks)
        return self.submit(lambda: lib().fwd_broadcast(self._h, r, n, ptr, nbytes, root_index), (keep, r))

    def all_gather(self, inp, out, nbytes, ranks=None, keep=None):
        r, n = self._ranks(ranks)
        return self.submit(lambda: lib().fwd_all_gather(self._h, r, n, inp, out, nbytes), (keep, r))

    def reduce_scatter(self, inp, out, count, dtype, op, ranks=None, keep=None):
        r, n = self._ranks(ranks)
        return self.submit(lambda: lib().fwd_reduce_scatter(self._h, r, n, inp, out, count, dtype, op),
                           (keep, r))

    def barrier(self, ranks=None):
        r, n = self._ranks(ranks)
        return self.submit(lambda: lib().fwd_barrier(self._h, r, n), r)

    def send(self, ptr, nbytes, peer, keep=None):
        return self.submit(lambda: lib().fwd_send(self._h, peer, ptr, nbytes), keep)

    def recv(self, ptr, nbytes, peer, keep=None):
        return self.submit(lambda: lib().fwd_recv(self._h, peer, ptr, nbytes), keep)

    def close(self):
        if self._h is None:
            return
        self._q.put(None)
        self._t.join()
        lib().fwd_comm_free(self._h)
        self._h = None
