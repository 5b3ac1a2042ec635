#!/usr/bin/python3
"""Training step time on the GPU: LeNet-5 at batch 64 (1x28x28) and a
ResNet-18 (paddle.vision.models.resnet18, 10 classes) on 32x32 inputs at
batch 128, each in float32 and in AMP O1 (paddle.amp.auto_cast float16 with
a GradScaler, and bfloat16); Momentum SGD, cross entropy. Each step ends
with a device synchronize; the median of >= 10 steps after 3 warm-up steps.

Memory: after warm-up the allocator's peaks are reset and one float32
ResNet-18 step runs; its peak reserved bytes (what the caching allocator
took from the driver) are compared with its peak allocated bytes (the live
tensors at the peak). Target: <= 1.3x.

    PYTHONPATH=<build>/framework/python /usr/bin/python3 tests/gpu/bench/train_step.py

Prints a table and "detail: ...". Exit 0 when the memory ratio meets the
target and every step ran, 1 otherwise, 77 without a usable GPU.
GPU_CHECK_CPU=1: the same on the CPU at batch 8 (dry run; no memory figures).
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import gpucommon  # noqa: E402

import paddle  # noqa: E402
import paddle.nn.functional as F  # noqa: E402

MEM_TARGET = 1.3


def make_step(model, x, y, amp):
    opt = paddle.optimizer.Momentum(learning_rate=0.01, momentum=0.9,
                                    parameters=model.parameters())
    scaler = paddle.amp.GradScaler(init_loss_scaling=1024) if amp == 'float16' else None

    def step():
        if amp:
            with paddle.amp.auto_cast(level='O1', dtype=amp):
                loss = F.cross_entropy(model(x), y)
            if scaler is not None:
                scaler.scale(loss).backward()
                scaler.step(opt)
                scaler.update()
            else:
                loss.backward()
                opt.step()
        else:
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
        opt.clear_grad()
        return loss
    return step


def main():
    dev = gpucommon.device_or_skip(paddle, 'train_step')
    dry = gpucommon.DRY
    rows, failed = [], []
    mem = None
    nets = [('LeNet-5 b64', lambda: paddle.vision.models.LeNet(num_classes=10), 8 if dry else 64,
             (1, 28, 28)),
            ('ResNet-18 32x32 b128', lambda: paddle.vision.models.resnet18(num_classes=10),
             8 if dry else 128, (3, 32, 32))]
    for name, build, batch, shape in nets:
        rng = np.random.RandomState(0)
        x = paddle.to_tensor(rng.randn(batch, *shape).astype(np.float32))
        y = paddle.to_tensor(rng.randint(0, 10, (batch,)).astype(np.int64))
        for amp in (None, 'float16', 'bfloat16'):
            label = 'float32' if amp is None else 'AMP O1 ' + amp
            try:
                paddle.seed(0)
                model = build()
                model.train()
                step = make_step(model, x, y, amp)
                t = gpucommon.timeit(paddle, step, warmup=3, iters=3 if dry else 10,
                                     min_time=0 if dry else 0.5)
                loss = float(step())
                if not np.isfinite(loss):
                    raise RuntimeError('loss is {}'.format(loss))
                rows.append((name, label, t * 1e3, batch / t))
                if amp is None and name.startswith('ResNet') and not dry:
                    c = paddle.device.cuda
                    c.synchronize()
                    c.reset_max_memory_allocated()
                    step()
                    c.synchronize()
                    mem = (c.max_memory_reserved(), c.max_memory_allocated())
                del model, step
            except Exception as e:  # noqa: BLE001
                failed.append('{} {}: {}: {}'.format(name, label, type(e).__name__, str(e)[:200]))
                rows.append((name, label, float('nan'), float('nan')))
    print('| model | precision | ms/step | samples/s |')
    print('|---|---|---|---|')
    for r in rows:
        print('| {} | {} | {:.2f} | {:.0f} |'.format(*r))
    for f in failed:
        print('FAILED ' + f)
    parts = ['{} {} {:.2f} ms'.format(r[0].split()[0], r[1].replace('AMP O1 ', 'O1-'), r[2])
             for r in rows]
    ok = not failed
    if mem:
        ratio = mem[0] / max(mem[1], 1)
        print('ResNet-18 step memory: peak reserved {:.1f} MiB, peak allocated {:.1f} MiB: '
              '{:.2f}x (target <= {}x)'.format(mem[0] / 2 ** 20, mem[1] / 2 ** 20, ratio,
                                               MEM_TARGET))
        parts.append('ResNet-18 peak reserved/allocated {:.2f}x (target <= {}x)'.format(
            ratio, MEM_TARGET))
        ok = ok and ratio <= MEM_TARGET
    print('detail: {}{}: {}{}'.format('DRY RUN on the CPU (batch 8): ' if dry else '', dev,
                                      '; '.join(parts),
                                      '; {} FAILED'.format(len(failed)) if failed else ''))
    return 0 if ok else 1


if __name__ == '__main__':
    sys.exit(main())
