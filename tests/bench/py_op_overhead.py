"""Per-op overhead from Python: Eddy's paddle against PyTorch, side by side.

    PYTHONPATH=<build>/framework/python /usr/bin/python3 tests/bench/py_op_overhead.py [ROUNDS]

Times a small add with autograd recording (16 floats, one operand with
stop_gradient=False / requires_grad=True) called from a Python loop, plus the
same through the functional API (paddle.add / torch.add), a matmul of 4x4
matrices and a chained forward+backward of 100 adds. Rounds alternate
(paddle, torch, paddle, ...) so background load hits both alike; the medians
and their ratio are printed. Target: paddle's add at most 1 us per op.
Not a test: timings are never asserted.
"""
import statistics
import sys
import time

import paddle
import torch

ROUNDS = int(sys.argv[1]) if len(sys.argv) > 1 else 7
N = 100000
torch.set_num_threads(1)


def loop_time(fn, n=N):
    t0 = time.perf_counter()
    fn(n)
    return (time.perf_counter() - t0) / n * 1e6


def paddle_cases():
    x = paddle.ones([16])
    x.stop_gradient = False
    y = paddle.ones([16])
    a = paddle.ones([4, 4])
    a.stop_gradient = False

    def add(n):
        for _ in range(n):
            x + y

    def fadd(n):
        f = paddle.add
        for _ in range(n):
            f(x, y)

    def mm(n):
        for _ in range(n):
            a @ a

    def chain(n):
        for _ in range(n // 100):
            z = x
            for _ in range(100):
                z = z + y
            z.sum().backward()
            x.clear_grad()
    return {'add': add, 'paddle.add': fadd, 'matmul_4x4': mm, 'chain_fwd_bwd': chain}


def torch_cases():
    x = torch.ones(16, requires_grad=True)
    y = torch.ones(16)
    a = torch.ones(4, 4, requires_grad=True)

    def add(n):
        for _ in range(n):
            x + y

    def fadd(n):
        f = torch.add
        for _ in range(n):
            f(x, y)

    def mm(n):
        for _ in range(n):
            a @ a

    def chain(n):
        for _ in range(n // 100):
            z = x
            for _ in range(100):
                z = z + y
            z.sum().backward()
            x.grad = None
    return {'add': add, 'paddle.add': fadd, 'matmul_4x4': mm, 'chain_fwd_bwd': chain}


def main():
    pc, tc = paddle_cases(), torch_cases()
    res = {k: ([], []) for k in pc}
    for k in pc:  # warm up
        loop_time(pc[k], 1000)
        loop_time(tc[k], 1000)
    for _ in range(ROUNDS):
        for k in pc:
            res[k][0].append(loop_time(pc[k]))
            res[k][1].append(loop_time(tc[k]))
    print('per-op overhead from Python, median of {} rounds of {} ops (us/op)'.format(
        ROUNDS, N))
    print('{:<16} {:>10} {:>10} {:>8}'.format('case', 'paddle', 'torch', 'ratio'))
    for k, (p, t) in res.items():
        mp, mt = statistics.median(p), statistics.median(t)
        name = k if k != 'paddle.add' else 'add (function)'
        print('{:<16} {:>10.3f} {:>10.3f} {:>7.2f}x'.format(name, mp, mt, mp / mt))
    add = statistics.median(res['add'][0])
    print('py_op_add_us {:.3f} (target <= 1 us: {})'.format(add, 'met' if add <= 1.0 else
                                                            'NOT met'))


if __name__ == '__main__':
    main()
