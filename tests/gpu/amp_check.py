#!/usr/bin/python3
"""AMP on a CUDA device: a small CNN on scikit-learn's 8x8 digits trained in
float32, O1 float16 + GradScaler, O2 float16 + GradScaler (decorate, float32
master weights), O1 bfloat16 and O2 bfloat16, same seed, data order and
epochs. Prints each run's loss curve (mean loss per epoch), test accuracy,
time and where its tensors lived, then a final line "detail: ...".

    PYTHONPATH=<build>/framework/python /usr/bin/python3 tests/gpu/amp_check.py

Exit 0 when every AMP run ends within 2 points of float32's accuracy (and
float32 itself reaches 0.93), 1 otherwise, 77 when no CUDA device is usable
(paddle.device.cuda.device_count() == 0), printing why. AMP_CHECK_CPU=1 runs
the same on the CPU backend (a dry run of the script where no GPU is).
"""
import os
import sys
import time

import numpy as np

EPOCHS = int(os.environ.get('AMP_CHECK_EPOCHS', '10'))
BATCH = 64


def skip(why):
    print('amp_check: skipped: ' + why)
    print('detail: skipped: ' + why)
    sys.exit(77)


def device_or_skip(paddle):
    if os.environ.get('AMP_CHECK_CPU') == '1':
        paddle.set_device('cpu')
        return 'cpu'
    try:
        n = paddle.device.cuda.device_count()
    except Exception as e:  # noqa: BLE001 - no device API means no device
        skip('paddle.device.cuda.device_count() failed: {}'.format(e))
    if n == 0:
        skip('paddle.device.cuda.device_count() == 0 (no CUDA backend or no usable GPU)')
    paddle.set_device('gpu:0')
    return 'gpu:0'


def load_digits():
    from sklearn.datasets import load_digits as ld
    d = ld()
    x = (d.images / 16.0).astype(np.float32)[:, None, :, :]      # [N, 1, 8, 8]
    y = d.target.astype(np.int64)
    perm = np.random.RandomState(0).permutation(len(x))
    nte = len(x) // 5
    return x[perm[nte:]], y[perm[nte:]], x[perm[:nte]], y[perm[:nte]]


def make_net(paddle):
    nn = paddle.nn
    return nn.Sequential(
        nn.Conv2D(1, 16, 3, padding=1), nn.BatchNorm2D(16), nn.ReLU(),
        nn.Conv2D(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2D(2),      # 32 x 4 x 4
        nn.Flatten(), nn.Linear(32 * 16, 64), nn.ReLU(), nn.Linear(64, 10))


RUNS = [
    # name, auto_cast kwargs (None: float32), decorate O2, GradScaler
    ('float32', None, False, False),
    ('O1-fp16', dict(level='O1', dtype='float16'), False, True),
    ('O2-fp16', dict(level='O2', dtype='float16'), True, True),
    ('O1-bf16', dict(level='O1', dtype='bfloat16'), False, False),
    ('O2-bf16', dict(level='O2', dtype='bfloat16'), True, False),
]


def train(paddle, data, name, amp, o2, use_scaler):
    F = paddle.nn.functional
    xtr, ytr, xte, yte = data
    paddle.seed(11)
    net = make_net(paddle)
    opt = paddle.optimizer.Adam(learning_rate=2e-3, parameters=net.parameters())
    if o2:
        net, opt = paddle.amp.decorate(net, opt, level='O2', dtype=amp['dtype'])
    scaler = paddle.amp.GradScaler(init_loss_scaling=1024.) if use_scaler else None
    guard = amp or dict(enable=False)
    curve, skipped = [], 0
    place = None
    t0 = time.perf_counter()
    for e in range(EPOCHS):
        perm = np.random.RandomState(100 + e).permutation(len(xtr))
        losses = []
        for i in range(0, len(perm), BATCH):
            idx = perm[i:i + BATCH]
            x = paddle.to_tensor(xtr[idx])
            y = paddle.to_tensor(ytr[idx])
            place = place or str(x.place)
            with paddle.amp.auto_cast(**guard):
                loss = F.cross_entropy(net(x), y)
            if scaler is not None:
                scale_before = float(scaler.get_loss_scaling().item())
                scaler.scale(loss).backward()
                scaler.step(opt)
                scaler.update()
                if float(scaler.get_loss_scaling().item()) < scale_before:
                    skipped += 1
            else:
                loss.backward()
                opt.step()
            opt.clear_grad()
            losses.append(float(loss.astype('float32').item()))
        curve.append(float(np.mean(losses)))
    paddle.device.synchronize() if hasattr(paddle.device, 'synchronize') else None
    secs = time.perf_counter() - t0
    with paddle.no_grad(), paddle.amp.auto_cast(**guard):
        logits = net(paddle.to_tensor(xte))
    pred = logits.astype('float32').numpy().argmax(1)
    acc = float((pred == yte).mean())
    wdt = str(net[7].weight.dtype).replace('paddle.', '')
    return dict(name=name, acc=acc, curve=curve, secs=secs, skipped=skipped, place=place,
                weight_dtype=wdt, out_dtype=str(logits.dtype).replace('paddle.', ''))


def main():
    import paddle
    dev = device_or_skip(paddle)
    data = load_digits()
    results = []
    for name, amp, o2, sc in RUNS:
        try:
            r = train(paddle, data, name, amp, o2, sc)
        except Exception as e:  # noqa: BLE001 - report and go on with the next run
            r = dict(name=name, error='{}: {}'.format(type(e).__name__, e))
        results.append(r)
        if 'error' in r:
            print('{:8s} ERROR {}'.format(name, r['error']))
            continue
        print('{:8s} acc {:.4f}  {:6.2f}s  place {}  linear weight {}  logits {}  '
              'skipped steps {}'.format(name, r['acc'], r['secs'], r['place'],
                                        r['weight_dtype'], r['out_dtype'], r['skipped']))
        print('         loss per epoch: ' + ' '.join('{:.4f}'.format(v) for v in r['curve']))
    base = results[0].get('acc')
    bad = []
    if base is None or base < 0.93:
        bad.append('float32 accuracy {}'.format(base))
    for r in results[1:]:
        if 'error' in r:
            bad.append('{} failed'.format(r['name']))
        elif base is not None and abs(r['acc'] - base) > 0.02:
            bad.append('{} {:.4f} vs float32 {:.4f}'.format(r['name'], r['acc'], base))
    summary = ', '.join('{} {}'.format(r['name'], 'ERR' if 'error' in r else
                                       '{:.3f}/{:.1f}s'.format(r['acc'], r['secs']))
                        for r in results)
    print('detail: {} on {}: {}{}'.format('digits CNN acc/time', dev, summary,
                                          '; FAIL: ' + '; '.join(bad) if bad else ''))
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
