"""DataParallel step time: 2 CPU ranks (1 thread each) against 1 rank (2
threads, the same 2 cores; and 1 thread) on the same total batch: an MLP
784-2048-2048-10, total batch 256, SGD; mean of 20 steps after 3 warm-up
steps. Also the time of the gradient all-reduce alone (6.3 M float32 = 25 MiB)
and, as a control, 2 ranks on half batches each without DataParallel (the
cost of running two processes on these cores, with no gradient exchange).

  PYTHONPATH=build/ci/framework/python /usr/bin/python3 tests/bench/dist_dp_step.py"""
import json
import os
import subprocess
import sys
import time

import numpy as np

BATCH, STEPS, WARM = 256, 20, 3


def train():
    import paddle
    import paddle.distributed as dist
    import paddle.nn as nn
    import paddle.nn.functional as F
    n = int(os.environ.get('PADDLE_TRAINERS_NUM', '1'))
    if n > 1:
        dist.init_parallel_env()
    r = dist.get_rank()
    paddle.seed(0)
    net = nn.Sequential(nn.Linear(784, 2048), nn.ReLU(), nn.Linear(2048, 2048), nn.ReLU(),
                        nn.Linear(2048, 10))
    model = paddle.DataParallel(net) if n > 1 and not os.environ.get('X_NODP') else net
    opt = paddle.optimizer.SGD(0.01, parameters=model.parameters())
    rs = np.random.RandomState(0)
    x = rs.randn(BATCH, 784).astype('float32')
    y = rs.randint(0, 10, size=(BATCH,)).astype('int64')
    b = BATCH // n
    xs, ys = paddle.to_tensor(x[r * b:(r + 1) * b]), paddle.to_tensor(y[r * b:(r + 1) * b])
    times = []
    for i in range(WARM + STEPS):
        if n > 1:
            dist.barrier()
        t = time.perf_counter()
        loss = F.cross_entropy(model(xs), ys)
        loss.backward()
        opt.step()
        opt.clear_grad()
        times.append(time.perf_counter() - t)
    res = {'step_ms': 1e3 * float(np.mean(times[WARM:]))}
    if n > 1:
        from paddle.distributed import collective as C
        flat = np.ones(sum(int(np.prod(p.shape)) for p in net.parameters()), dtype=np.float32)
        comm = C._get_comm()
        comm.all_reduce(flat.ctypes.data, flat.size, 0, 4, keep=flat).wait()
        t = time.perf_counter()
        for _ in range(5):
            comm.all_reduce(flat.ctypes.data, flat.size, 0, 4, keep=flat).wait()
        res['allreduce_ms'] = 1e3 * (time.perf_counter() - t) / 5
    if r == 0:
        print('RESULT ' + json.dumps(res), flush=True)


def run(nranks, threads, nodp=False):
    env = dict(os.environ, FW_NUM_THREADS=str(threads), OPENBLAS_NUM_THREADS=str(threads))
    if nodp:
        env['X_NODP'] = '1'
    if nranks == 1:
        cmd = [sys.executable, os.path.abspath(__file__), 'rank']
    else:
        cmd = [sys.executable, '-m', 'paddle.distributed.launch', '--nproc_per_node', str(nranks),
               '--log_dir', '/tmp/dist_dp_step_log', os.path.abspath(__file__), 'rank']
    out = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, check=True).stdout.decode()
    return json.loads([l for l in out.splitlines() if 'RESULT ' in l][0].split('RESULT ', 1)[1])


def main():
    if len(sys.argv) > 1 and sys.argv[1] == 'rank':
        train()
        return
    one2 = run(1, 2)
    one1 = run(1, 1)
    two = run(2, 1)
    bare = run(2, 1, nodp=True)
    print('total batch {}, MLP 784-2048-2048-10 ({} cores here)'.format(BATCH, os.cpu_count()))
    print('1 rank x 2 threads : {:8.1f} ms/step'.format(one2['step_ms']))
    print('1 rank x 1 thread  : {:8.1f} ms/step'.format(one1['step_ms']))
    print('2 ranks x 1 thread : {:8.1f} ms/step  (speed-up {:.2f}x over 1x2, {:.2f}x over 1x1)'.format(
        two['step_ms'], one2['step_ms'] / two['step_ms'], one1['step_ms'] / two['step_ms']))
    print('2 ranks x 1 thread, no gradient sync (control: what the cores give two processes): '
          '{:.1f} ms/step'.format(bare['step_ms']))
    print('gradient all-reduce alone (25 MiB, 2 ranks): {:.1f} ms'.format(two['allreduce_ms']))


if __name__ == '__main__':
    main()
