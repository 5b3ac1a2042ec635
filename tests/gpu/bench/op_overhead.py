#!/usr/bin/python3
"""Host time per small op on the GPU path, from Python: each op on tiny
GPU tensors runs N times back to back without a host sync and the host
time of the loop is taken before one synchronize (the GPU queue absorbs the
kernels; what is measured is Python -> paddle._C -> framework -> backend ->
kernel launch, and the allocator; a full launch queue makes the host wait,
so a GPU slower than the host shows up too).
Target: <= 5 us per op (the median over the ops). The same ops on the CPU
backend are printed alongside for scale.

    PYTHONPATH=<build>/framework/python /usr/bin/python3 tests/gpu/bench/op_overhead.py

Exit 0 when the median meets the target, 1 otherwise, 77 without a usable
GPU; a final "detail: ..." line. GPU_CHECK_CPU=1: the CPU only (dry run).
"""
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import gpucommon  # noqa: E402

import paddle  # noqa: E402
import paddle.nn.functional as F  # noqa: E402

TARGET_US = 5.0
N = 20000


def ops(x, y, m):
    return [('x + y', lambda: x + y), ('paddle.add', lambda: paddle.add(x, y)),
            ('x * 2.0', lambda: x * 2.0), ('paddle.exp', lambda: paddle.exp(x)),
            ('F.relu', lambda: F.relu(x)), ('x.sum()', lambda: x.sum()),
            ('paddle.matmul 16x16', lambda: paddle.matmul(m, m)),
            ('x[2:10]', lambda: x[2:10]), ('x.reshape', lambda: x.reshape([4, 4])),
            ('paddle.maximum', lambda: paddle.maximum(x, y))]


def measure(dev):
    paddle.set_device(dev)
    x = paddle.rand([16])
    y = paddle.rand([16])
    m = paddle.rand([16, 16])
    res = []
    for name, f in ops(x, y, m):
        for _ in range(200):
            f()
        gpucommon.sync(paddle) if dev != 'cpu' else None
        best = []
        for _ in range(3):
            t0 = time.perf_counter()
            for _ in range(N):
                f()
            t1 = time.perf_counter()        # host time: before waiting for the GPU
            if dev != 'cpu':
                gpucommon.sync(paddle)
            best.append((t1 - t0) / N * 1e6)
        res.append((name, min(best)))
    return res


def main():
    dev = gpucommon.device_or_skip(paddle, 'op_overhead')
    cpu = measure('cpu')
    gpu = cpu if dev == 'cpu' else measure(dev)
    print('| op | {} us | cpu us |'.format(dev))
    print('|---|---|---|')
    for (name, g), (_, c) in zip(gpu, cpu):
        print('| {} | {:.2f} | {:.2f} |'.format(name, g, c))
    med = float(np.median([g for _, g in gpu]))
    worst = max(gpu, key=lambda r: r[1])
    ok = med <= TARGET_US
    print('detail: {}host time per small op from Python on {}: median {:.2f} us over {} ops '
          '(CPU backend {:.2f} us), slowest {} {:.2f} us (target <= {} us){}'.format(
              'DRY RUN on the CPU: ' if gpucommon.DRY else '', dev, med, len(gpu),
              float(np.median([c for _, c in cpu])), worst[0], worst[1], TARGET_US,
              '' if ok else ': ABOVE TARGET'))
    return 0 if ok or gpucommon.DRY else 1


if __name__ == '__main__':
    sys.exit(main())
