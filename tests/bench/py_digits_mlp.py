"""Digits MLP training, Eddy's paddle against PyTorch, side by side.

The same program in both: scikit-learn's digits (8x8 -> 64 features scaled to
[0, 1], 80/20 split), MLP 64-128-10 with ReLU, Adam(lr 1e-3), batch 32,
20 epochs, cross-entropy; each epoch shuffles with the same permutation in
both frameworks and feeds numpy slices as tensors. Each run is its own
process (so the two libraries' thread pools and OpenBLAS settings never
meet) and runs alternate (Eddy, PyTorch, Eddy, ...) so machine load hits
both alike; prints the median training time of each, the ratio (target:
Eddy <= 0.7x PyTorch) and both test accuracies (they must match within a
point or two). Both sides get THREADS threads (default 1: a 64-128-10 MLP
at batch 32 is too small to gain from more, and on a loaded machine
PyTorch's OpenMP spinning with 2 threads makes it several times slower).

    PYTHONPATH=<build>/framework/python /usr/bin/python3 tests/bench/py_digits_mlp.py [ROUNDS] [THREADS]
"""
import os
import statistics
import sys
import time

import numpy as np

ROUNDS = int(sys.argv[1]) if len(sys.argv) > 1 else 3
THREADS = int(sys.argv[2]) if len(sys.argv) > 2 else 1

EPOCHS, BATCH, LR = 20, 32, 1e-3


def load_data():
    from sklearn.datasets import load_digits
    d = load_digits()
    x = (d.data / 16.0).astype(np.float32)
    y = d.target.astype(np.int64)
    rs = np.random.RandomState(0)
    perm = rs.permutation(len(x))
    ntest = len(x) // 5
    te, tr = perm[:ntest], perm[ntest:]
    perms = [np.random.RandomState(100 + e).permutation(len(tr)) for e in range(EPOCHS)]
    return x[tr], y[tr], x[te], y[te], perms


def run_paddle(xtr, ytr, xte, yte, perms, seed):
    import paddle
    import paddle.nn as nn
    paddle.seed(seed)
    net = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10))
    opt = paddle.optimizer.Adam(learning_rate=LR, parameters=net.parameters())
    loss_fn = nn.CrossEntropyLoss()
    t0 = time.perf_counter()
    for perm in perms:
        for i in range(0, len(perm), BATCH):
            idx = perm[i:i + BATCH]
            x = paddle.to_tensor(xtr[idx])
            y = paddle.to_tensor(ytr[idx])
            loss = loss_fn(net(x), y)
            loss.backward()
            opt.step()
            opt.clear_grad()
    elapsed = time.perf_counter() - t0
    with paddle.no_grad():
        pred = net(paddle.to_tensor(xte)).numpy().argmax(-1)
    return elapsed, float((pred == yte).mean())


def run_torch(xtr, ytr, xte, yte, perms, seed):
    import torch
    import torch.nn as nn
    torch.set_num_threads(THREADS)
    torch.manual_seed(seed)
    net = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10))
    opt = torch.optim.Adam(net.parameters(), lr=LR)
    loss_fn = nn.CrossEntropyLoss()
    t0 = time.perf_counter()
    for perm in perms:
        for i in range(0, len(perm), BATCH):
            idx = perm[i:i + BATCH]
            x = torch.from_numpy(xtr[idx])
            y = torch.from_numpy(ytr[idx])
            loss = loss_fn(net(x), y)
            loss.backward()
            opt.step()
            opt.zero_grad()
    elapsed = time.perf_counter() - t0
    with torch.no_grad():
        pred = net(torch.from_numpy(xte)).numpy().argmax(-1)
    return elapsed, float((pred == yte).mean())


def child(side, seed):
    data = load_data()
    fn = run_paddle if side == 'eddy' else run_torch
    fn(*data, seed=0)          # warm-up: imports, allocator caches
    elapsed, acc = fn(*data, seed=seed)
    print('RESULT %.6f %.6f' % (elapsed, acc))


def spawn(side, seed):
    import subprocess
    env = dict(os.environ)
    for k in ('FW_NUM_THREADS', 'OMP_NUM_THREADS', 'OPENBLAS_NUM_THREADS', 'MKL_NUM_THREADS'):
        env[k] = str(THREADS)
    out = subprocess.run([sys.executable, os.path.abspath(__file__), str(ROUNDS), str(THREADS),
                          '--child', side, str(seed)], env=env, check=True,
                         stdout=subprocess.PIPE, text=True).stdout
    line = [l for l in out.splitlines() if l.startswith('RESULT ')][-1]
    _, t, a = line.split()
    return float(t), float(a)


def main():
    data = load_data()
    steps = EPOCHS * ((len(data[0]) + BATCH - 1) // BATCH)
    print('digits MLP 64-128-10, Adam lr %g, batch %d, %d epochs (%d steps), %d threads, '
          '%d rounds' % (LR, BATCH, EPOCHS, steps, THREADS, ROUNDS))
    te, tt, ae, at = [], [], [], []
    for r in range(ROUNDS):
        s, a = spawn('eddy', r + 1)
        te.append(s)
        ae.append(a)
        s, a = spawn('torch', r + 1)
        tt.append(s)
        at.append(a)
    me, mt = statistics.median(te), statistics.median(tt)
    print('eddy    median %.3f s (%.1f us/step)  test acc %.4f' % (me, me / steps * 1e6,
                                                                 statistics.mean(ae)))
    print('pytorch median %.3f s (%.1f us/step)  test acc %.4f' % (mt, mt / steps * 1e6,
                                                                 statistics.mean(at)))
    print('ratio eddy/pytorch %.2fx (target <= 0.70x)' % (me / mt))


if __name__ == '__main__':
    if len(sys.argv) > 3 and sys.argv[3] == '--child':
        child(sys.argv[4], int(sys.argv[5]))
    else:
        main()
