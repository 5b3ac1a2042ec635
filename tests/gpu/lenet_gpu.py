#!/usr/bin/python3
"""LeNet (paddle.vision.models.LeNet) trained on the GPU on MNIST-format
digits, to >= 0.95 test accuracy.

No network: the digits are drawn here (gpucommon.write_mnist_files: 5x7
glyphs scaled, sheared, shifted, blurred and noised into 28x28 images) and
written as Paddle's gzipped IDX files, which paddle.vision.datasets.MNIST
reads as it reads the real ones (MNIST_DIR=<dir with the four real files>
uses those instead). 4000 training and 1000 test images, batch 64, Adam
1e-3, 8 epochs; every tensor of the step is checked to live on the GPU.

    PYTHONPATH=<build>/framework/python /usr/bin/python3 tests/gpu/lenet_gpu.py

Prints the loss per epoch, the test accuracy, time per epoch and a final
"detail: ..." line. Exit 0 when accuracy >= 0.95, 1 otherwise, 77 when no
CUDA device is usable. GPU_CHECK_CPU=1: the same on the CPU (dry run).
"""
import os
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpucommon  # noqa: E402

import paddle  # noqa: E402
import paddle.nn.functional as F  # noqa: E402

EPOCHS = int(os.environ.get('LENET_EPOCHS', '8'))
BATCH = 64


def load(root):
    from paddle.vision.datasets import MNIST
    out = []
    for mode, prefix in (('train', 'train'), ('test', 't10k')):
        ds = MNIST(image_path=os.path.join(root, prefix + '-images-idx3-ubyte.gz'),
                   label_path=os.path.join(root, prefix + '-labels-idx1-ubyte.gz'),
                   mode=mode, backend='cv2')
        x = np.stack([np.asarray(ds[i][0], np.float32) for i in range(len(ds))])
        y = np.array([int(np.asarray(ds[i][1]).reshape(-1)[0]) for i in range(len(ds))], np.int64)
        out += [((x / 255.0 - 0.5) / 0.5)[:, None].astype(np.float32), y]
    return out


def main():
    dev = gpucommon.device_or_skip(paddle, 'lenet_gpu')
    t0 = time.time()
    root = os.environ.get('MNIST_DIR')
    tmp = None
    if not root:
        tmp = tempfile.mkdtemp(prefix='eddy_lenet_')
        root = tmp
        gpucommon.write_mnist_files(root, 4000, 1000)
    xtr, ytr, xte, yte = load(root)
    print('data: {} train / {} test images from {} ({:.1f} s)'.format(
        len(xtr), len(xte), 'MNIST_DIR' if tmp is None else 'generated IDX files',
        time.time() - t0))
    paddle.seed(0)
    model = paddle.vision.models.LeNet(num_classes=10)
    for p in model.parameters():
        if dev != 'cpu' and not p.place.is_gpu_place():
            print('detail: parameter {} made on {} after set_device({!r})'.format(
                p.name, p.place, dev))
            return 1
    opt = paddle.optimizer.Adam(learning_rate=1e-3, parameters=model.parameters())
    rng = np.random.RandomState(0)
    epoch_times = []
    for epoch in range(EPOCHS):
        model.train()
        perm = rng.permutation(len(xtr))
        te = time.time()
        losses = []
        for i in range(0, len(perm) - BATCH + 1, BATCH):
            idx = perm[i:i + BATCH]
            x = paddle.to_tensor(xtr[idx])
            y = paddle.to_tensor(ytr[idx])
            loss = F.cross_entropy(model(x), y)
            if i == 0 and epoch == 0 and dev != 'cpu':
                for name, t in (('input', x), ('loss', loss)):
                    if not t.place.is_gpu_place():
                        print('detail: the {} is on {}, not the GPU'.format(name, t.place))
                        return 1
            loss.backward()
            opt.step()
            opt.clear_grad()
            losses.append(loss)
        mean_loss = float(paddle.stack(losses).mean())   # one host sync per epoch
        gpucommon.sync(paddle)
        epoch_times.append(time.time() - te)
        print('epoch {}: mean loss {:.4f}, {:.2f} s'.format(epoch + 1, mean_loss, epoch_times[-1]))
    model.eval()
    correct = 0
    with paddle.no_grad():
        for i in range(0, len(xte), 500):
            pred = paddle.argmax(model(paddle.to_tensor(xte[i:i + 500])), axis=1)
            correct += int((pred == paddle.to_tensor(yte[i:i + 500])).astype('int64').sum())
    acc = correct / len(xte)
    if tmp:
        for f in os.listdir(tmp):
            os.unlink(os.path.join(tmp, f))
        os.rmdir(tmp)
    print('test accuracy {:.4f} ({} of {})'.format(acc, correct, len(xte)))
    print('detail: {}LeNet on {} MNIST-format digits on {}: test accuracy {:.3f} (need 0.95) after '
          '{} epochs, {:.2f} s/epoch of {} steps (b{})'.format(
              'DRY RUN on the CPU: ' if gpucommon.DRY else '', len(xtr), dev, acc, EPOCHS,
              float(np.median(epoch_times)), len(xtr) // BATCH, BATCH))
    return 0 if acc >= 0.95 else 1


if __name__ == '__main__':
    sys.exit(main())
