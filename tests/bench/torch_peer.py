"""PyTorch peer of bench_framework.c: the same workloads, the same output
format ("name value" lines, medians in ms or us). Run by run_framework.sh
with /usr/bin/python3 (Debian's python3-torch, CPU)."""
import argparse
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


def pct(v, p):
    v = sorted(v)
    return v[int(p * (len(v) - 1) + 0.5)]


def train_bench(name, model, x, y, iters):
    opt = torch.optim.Adam(model.parameters(), lr=1e-3, eps=1e-8)
    times = []
    for i in range(-5, iters):
        t0 = time.perf_counter()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=False)
        if i >= 0:
            times.append((time.perf_counter() - t0) * 1e3)
    print(f"{name}_step_ms {pct(times, 0.5):.4f}")
    print(f"{name}_step_p90_ms {pct(times, 0.9):.4f}", flush=True)


class LeNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(1, 6, 5, padding=2)
        self.c2 = nn.Conv2d(6, 16, 5)
        self.f1 = nn.Linear(400, 120)
        self.f2 = nn.Linear(120, 84)
        self.f3 = nn.Linear(84, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.c1(x)), 2)
        x = F.max_pool2d(F.relu(self.c2(x)), 2)
        x = torch.flatten(x, 1)
        return self.f3(F.relu(self.f2(F.relu(self.f1(x)))))


def bench_ops(iters):
    n_ops = 1000
    x = torch.ones(4, requires_grad=True)
    tf, tb = [], []
    for it in range(-3, iters):
        t0 = time.perf_counter()
        y = x
        for _ in range(n_ops // 2):
            y = y * 1.0001
            y = y + 0.0001
        t1 = time.perf_counter()
        y.sum().backward()
        t2 = time.perf_counter()
        x.grad = None
        if it >= 0:
            tf.append((t1 - t0) * 1e6 / n_ops)
            tb.append((t2 - t0) * 1e6 / n_ops)
    print(f"op_fwd_us {pct(tf, 0.5):.4f}")
    print(f"op_fwd_bwd_us {pct(tb, 0.5):.4f}", flush=True)


def bench_sgemm(iters):
    a = torch.randn(1024, 1024)
    b = torch.randn(1024, 1024)
    times = []
    with torch.no_grad():
        for it in range(-2, iters):
            t0 = time.perf_counter()
            torch.matmul(a, b)
            if it >= 0:
                times.append((time.perf_counter() - t0) * 1e3)
    print(f"sgemm_ms {pct(times, 0.5):.4f}", flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--iters", type=int, default=30)
    ap.add_argument("--only", default=None)
    a = ap.parse_args()
    if a.threads > 0:
        torch.set_num_threads(a.threads)
    print(f"threads {torch.get_num_threads()}")
    torch.manual_seed(0)
    if a.only in (None, "mlp"):
        model = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 256), nn.ReLU(),
                              nn.Linear(256, 10))
        train_bench("mlp", model, torch.randn(128, 784), torch.randint(0, 10, (128,)), a.iters)
    if a.only in (None, "lenet"):
        train_bench("lenet", LeNet(), torch.randn(64, 1, 28, 28), torch.randint(0, 10, (64,)),
                    a.iters)
    if a.only in (None, "ops"):
        bench_ops(a.iters * 3)
    if a.only in (None, "sgemm"):
        bench_sgemm(a.iters)


if __name__ == "__main__":
    main()
