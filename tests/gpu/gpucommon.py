"""Shared by tests/gpu/*.py and tests/gpu/bench/*.py: the skip rule (exit 77
with the reason when no CUDA device is usable), the CPU dry run
(GPU_CHECK_CPU=1 runs a script's "device" side on the CPU backend, to check
the script itself where no GPU is), timing, and MNIST-format digits made
offline."""
import gzip
import os
import struct
import sys
import time

import numpy as np

DRY = os.environ.get('GPU_CHECK_CPU') == '1'


def skip(name, why):
    print('{}: skipped: {}'.format(name, why))
    print('detail: skipped: ' + why)
    sys.exit(77)


def device_or_skip(paddle, name):
    """'gpu:0' after paddle.set_device('gpu:0'), or 'cpu' in a dry run;
    exits 77 when no GPU is usable."""
    if DRY:
        paddle.set_device('cpu')
        return 'cpu'
    n = paddle.device.cuda.device_count()
    if n == 0:
        from paddle import _C
        skip(name, 'no usable CUDA device: ' + (_C.device_unavailable_reason(1) or '?'))
    paddle.set_device('gpu:0')
    return 'gpu:0'


def sync(paddle):
    if not DRY:
        paddle.device.cuda.synchronize()


def timeit(paddle, fn, warmup=3, iters=10, min_time=0.2):
    """Median seconds per call of fn (synchronised), over >= iters calls."""
    for _ in range(warmup):
        fn()
    sync(paddle)
    times = []
    t_end = time.perf_counter() + min_time
    while len(times) < iters or time.perf_counter() < t_end:
        t0 = time.perf_counter()
        fn()
        sync(paddle)
        times.append(time.perf_counter() - t0)
        if len(times) > 1000:
            break
    times.sort()
    return times[len(times) // 2]


# ---- digits in MNIST's format, offline -------------------------------------------

_GLYPHS = {  # 5x7 bitmaps
    0: ["01110", "10001", "10011", "10101", "11001", "10001", "01110"],
    1: ["00100", "01100", "00100", "00100", "00100", "00100", "01110"],
    2: ["01110", "10001", "00001", "00010", "00100", "01000", "11111"],
    3: ["11110", "00001", "00001", "01110", "00001", "00001", "11110"],
    4: ["00010", "00110", "01010", "10010", "11111", "00010", "00010"],
    5: ["11111", "10000", "11110", "00001", "00001", "10001", "01110"],
    6: ["00110", "01000", "10000", "11110", "10001", "10001", "01110"],
    7: ["11111", "00001", "00010", "00100", "01000", "01000", "01000"],
    8: ["01110", "10001", "10001", "01110", "10001", "10001", "01110"],
    9: ["01110", "10001", "10001", "01111", "00001", "00010", "01100"],
}


def _render(rng, digit):
    """A 28x28 uint8 image of `digit`: the glyph scaled to a random size,
    sheared, shifted, blurred and noised (MNIST-like ink on black)."""
    g = np.array([[c == '1' for c in row] for row in _GLYPHS[digit]], np.float32)
    h = rng.randint(15, 22)
    w = rng.randint(10, 17)
    shear = rng.uniform(-0.3, 0.3)
    ys = (np.arange(h) + 0.5) * 7.0 / h
    img = np.zeros((28, 28), np.float32)
    top = rng.randint(1, 28 - h)
    left = rng.randint(2, 28 - w - 2)
    for i, yy in enumerate(ys):
        off = shear * (i - h / 2)
        for j in range(w):
            xx = (j + 0.5) * 5.0 / w
            c = int(np.clip(np.round(j + left + off), 0, 27))
            img[top + i, c] = max(img[top + i, c], g[min(int(yy), 6), min(int(xx), 4)])
    # thicken and blur a little
    k = np.array([0.25, 0.5, 0.25], np.float32)
    img = np.apply_along_axis(lambda r: np.convolve(r, k, 'same'), 1, img)
    img = np.apply_along_axis(lambda r: np.convolve(r, k, 'same'), 0, img)
    img = np.clip(img * rng.uniform(1.6, 2.4) + rng.normal(0, 0.08, img.shape), 0, 1)
    return (img * 255).astype(np.uint8)


def _digits(n, seed):
    rng = np.random.RandomState(seed)
    y = rng.randint(0, 10, n).astype(np.uint8)
    x = np.stack([_render(rng, int(d)) for d in y])
    return x, y


def write_mnist_files(root, ntrain=6000, ntest=1000):
    """Write train/t10k IDX files (gzipped, Paddle's names) of generated
    digits under root; returns the four paths."""
    os.makedirs(root, exist_ok=True)
    paths = []
    for prefix, n, seed in (('train', ntrain, 1), ('t10k', ntest, 2)):
        x, y = _digits(n, seed)
        ip = os.path.join(root, prefix + '-images-idx3-ubyte.gz')
        lp = os.path.join(root, prefix + '-labels-idx1-ubyte.gz')
        with gzip.open(ip, 'wb') as f:
            f.write(struct.pack('>IIII', 2051, n, 28, 28) + x.tobytes())
        with gzip.open(lp, 'wb') as f:
            f.write(struct.pack('>II', 2049, n) + y.tobytes())
        paths += [ip, lp]
    return paths
