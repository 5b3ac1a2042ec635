"""Ring all-reduce bandwidth of paddle.distributed's CPU communicator between
2 processes on this host, 1-64 MiB float32 buffers, against the memcpy-bound
limit measured here.

  PYTHONPATH=build/ci/framework/python /usr/bin/python3 tests/bench/dist_allreduce.py

Why memcpy bounds it: over loopback TCP every byte a rank sends is copied
into the kernel by the sender and out of it by the receiver. In a 2-rank
ring all-reduce of S bytes each rank sends S/2 and receives S/2 in the
reduce-scatter, and again in the all-gather: 2S bytes of copies per rank,
on its own core. So the all-reduce cannot beat S / (2S / memcpy_bw), i.e.
an algorithm bandwidth (S / time) of memcpy_bw / 2."""
import json
import os
import subprocess
import sys
import time

import numpy as np

SIZES_MIB = [1, 2, 4, 8, 16, 32, 64]


def memcpy_bw():
    a = np.ones(64 << 18, dtype=np.float32)        # 64 MiB
    b = np.empty_like(a)
    best = 0.0
    for _ in range(10):
        t = time.perf_counter()
        np.copyto(b, a)
        best = max(best, a.nbytes / (time.perf_counter() - t))
    return best


def rank_main():
    import paddle  # noqa: F401  (the package path)
    import paddle.distributed as dist
    from paddle.distributed import collective as C
    dist.init_parallel_env()
    comm = C._get_comm()
    out = {}
    for mib in SIZES_MIB:
        a = np.ones(mib << 18, dtype=np.float32)
        iters = max(3, 64 // mib)
        comm.all_reduce(a.ctypes.data, a.size, 0, 0, keep=a).wait()     # warm
        dist.barrier()
        t = time.perf_counter()
        for _ in range(iters):
            comm.all_reduce(a.ctypes.data, a.size, 0, 0, keep=a).wait()
        out[mib] = (time.perf_counter() - t) / iters
    if dist.get_rank() == 0:
        print('RESULT ' + json.dumps(out), flush=True)


def main():
    if len(sys.argv) > 1 and sys.argv[1] == 'rank':
        rank_main()
        return
    bw = memcpy_bw()
    p = subprocess.run([sys.executable, '-m', 'paddle.distributed.launch', '--nproc_per_node', '2',
                        '--log_dir', '/tmp/dist_allreduce_log', os.path.abspath(__file__), 'rank'],
                       stdout=subprocess.PIPE, check=True)
    line = [l for l in p.stdout.decode().splitlines() if 'RESULT ' in l][0]
    res = json.loads(line.split('RESULT ', 1)[1])
    limit = bw / 2
    print('memcpy (one core, 64 MiB): {:.2f} GB/s -> all-reduce limit {:.2f} GB/s'.format(bw / 1e9,
                                                                                       limit / 1e9))
    print('{:>8} {:>10} {:>12} {:>10}'.format('MiB', 'ms', 'algbw GB/s', 'of limit'))
    for mib in SIZES_MIB:
        t = res[str(mib)]
        alg = (mib << 20) / t
        print('{:>8} {:>10.2f} {:>12.2f} {:>9.0f}%'.format(mib, t * 1e3, alg / 1e9, 100 * alg / limit))


if __name__ == '__main__':
    main()
