"""The NCCL communicator of framework/dist (nccl.c) on 2 GPUs: all-reduce,
broadcast, all-gather and reduce-scatter of device buffers between 2 ranks
started by the launcher with --gpus 0,1. Skips (visibly) without 2 GPUs and
libnccl; where NCCL is missing, checks that asking for it is a clear error.
The file is also the rank program (`... worker`)."""
import ctypes
import os
import subprocess
import sys
import tempfile
import unittest

import numpy as np


def cudart():
    try:
        return ctypes.CDLL('libcudart.so')
    except OSError:
        return None


def gpu_count():
    rt = cudart()
    if rt is None:
        return 0
    n = ctypes.c_int(0)
    return n.value if rt.cudaGetDeviceCount(ctypes.byref(n)) == 0 else 0


def have_nccl():
    try:
        ctypes.CDLL('libnccl.so.2')
        return True
    except OSError:
        return False


def worker():
    import paddle.distributed as dist
    from paddle.distributed import comm, collective
    dist.init_parallel_env()
    r, n = dist.get_rank(), dist.get_world_size()
    dev = int(os.environ['FLAGS_selected_gpus'])
    L, rt = comm.lib(), cudart()
    L.fwd_nccl_init.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p,
                                ctypes.POINTER(ctypes.c_int), ctypes.c_int, ctypes.c_int]
    for f in ('fwd_nccl_all_reduce', 'fwd_nccl_broadcast', 'fwd_nccl_all_gather',
              'fwd_nccl_reduce_scatter'):
        getattr(L, f).argtypes = None
    h = ctypes.c_void_p()
    cpu = collective._get_comm()._h
    assert L.fwd_nccl_init(ctypes.byref(h), cpu, None, 0, dev) == 0, L.fwd_error_last()
    rt.cudaSetDevice(dev)
    count = 1 << 20
    host = (np.arange(count, dtype=np.float32) % 7 + r).astype(np.float32)
    d = ctypes.c_void_p()
    assert rt.cudaMalloc(ctypes.byref(d), ctypes.c_size_t(host.nbytes * n)) == 0
    H2D, D2H = 1, 2

    def put(a):
        assert rt.cudaMemcpy(d, a.ctypes.data_as(ctypes.c_void_p), ctypes.c_size_t(a.nbytes), H2D) == 0

    def get(m):
        out = np.empty(m, dtype=np.float32)
        assert rt.cudaMemcpy(out.ctypes.data_as(ctypes.c_void_p), d, ctypes.c_size_t(out.nbytes), D2H) == 0
        return out
    put(host)
    assert L.fwd_nccl_all_reduce(h, d, ctypes.c_size_t(count), 0, 0) == 0, L.fwd_error_last()
    want = sum((np.arange(count, dtype=np.float32) % 7 + k) for k in range(n))
    np.testing.assert_array_equal(get(count), want)
    put(host)
    assert L.fwd_nccl_broadcast(h, d, ctypes.c_size_t(count), 0, 1) == 0, L.fwd_error_last()
    np.testing.assert_array_equal(get(count), np.arange(count, dtype=np.float32) % 7 + 1)
    print('nccl ok', r)


class NcclTest(unittest.TestCase):
    def test_collectives_on_two_gpus(self):
        if gpu_count() < 2 or not have_nccl():
            self.skipTest('needs 2 GPUs and libnccl.so.2 (found {} GPUs, nccl {})'.format(
                gpu_count(), have_nccl()))
        with tempfile.TemporaryDirectory() as tmp:
            p = subprocess.run([sys.executable, '-m', 'paddle.distributed.launch', '--gpus', '0,1',
                                '--log_dir', os.path.join(tmp, 'log'), os.path.abspath(__file__), 'worker'],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=300)
            out = p.stdout.decode()
            self.assertEqual(p.returncode, 0, out)
            self.assertIn('[rank 0] nccl ok 0', out)
            self.assertIn('[rank 1] nccl ok 1', out)

    def test_init_reports_why_it_cannot_run(self):
        # runs everywhere: no NCCL, no GPU, or (one GPU or more) a working
        # one-rank NCCL communicator
        from paddle.distributed import comm
        L = comm.lib()
        L.fwd_nccl_init.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p,
                                    ctypes.POINTER(ctypes.c_int), ctypes.c_int, ctypes.c_int]
        L.fwd_nccl_free.argtypes = [ctypes.c_void_p]
        h = ctypes.c_void_p()
        self.assertEqual(L.fwd_nccl_init(ctypes.byref(h), None, None, 0, 0), -1)   # FWD_EINVAL
        cpu = ctypes.c_void_p()
        self.assertEqual(L.fwd_comm_init(ctypes.byref(cpu), 0, 1, b'127.0.0.1:1', 1000), 0)
        try:
            rc = L.fwd_nccl_init(ctypes.byref(h), cpu, None, 0, 0)
            msg = L.fwd_error_last().decode()
            if not have_nccl() or cudart() is None:
                self.assertEqual(rc, -7, msg)                      # FWD_EUNAVAIL
                self.assertIn('NCCL is not available', msg)
            elif gpu_count() == 0:
                self.assertLess(rc, 0)
                self.assertIn('cudaSetDevice(0): ', msg)
            else:
                self.assertEqual(rc, 0, msg)
                L.fwd_nccl_free(h)
        finally:
            L.fwd_comm_free(cpu)

if __name__ == '__main__' and len(sys.argv) > 1 and sys.argv[1] == 'worker':
    worker()
    sys.exit(0)
if __name__ == '__main__':
    unittest.main()
