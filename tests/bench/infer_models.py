"""Save the two models of the inference benchmark with paddle.jit.save and
write one input batch per size, so the C runtime and eager paddle see the
same weights and data.

    infer_models.py OUT_DIR      # writes OUT_DIR/{lenet,mlp}.pdmodel/.pdiparams
"""
import os
import sys

import numpy as np

import paddle
import paddle.nn as nn
import paddle.nn.functional as F
from paddle.static import InputSpec


class LeNet(nn.Layer):
    """LeNet-5 on 1x28x28: conv5(pad 2)-relu-pool2-conv5-relu-pool2-120-84-10."""

    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2D(1, 6, 5, padding=2)
        self.c2 = nn.Conv2D(6, 16, 5)
        self.pool = nn.MaxPool2D(2, 2)
        self.f1 = nn.Linear(16 * 5 * 5, 120)
        self.f2 = nn.Linear(120, 84)
        self.f3 = nn.Linear(84, 10)

    def forward(self, x):
        x = self.pool(F.relu(self.c1(x)))
        x = self.pool(F.relu(self.c2(x)))
        x = paddle.flatten(x, 1)
        return self.f3(F.relu(self.f2(F.relu(self.f1(x)))))


class MLP(nn.Layer):
    """784-512-256-10 with ReLU."""

    def __init__(self):
        super().__init__()
        self.l1 = nn.Linear(784, 512)
        self.l2 = nn.Linear(512, 256)
        self.l3 = nn.Linear(256, 10)

    def forward(self, x):
        return self.l3(F.relu(self.l2(F.relu(self.l1(x)))))


class Tiny(nn.Layer):
    """Linear(4, 10): almost no arithmetic, so a call measures per-call overhead."""

    def __init__(self):
        super().__init__()
        self.l = nn.Linear(4, 10)

    def forward(self, x):
        return self.l(x)


MODELS = {
    'lenet': (LeNet, [None, 1, 28, 28]),
    'mlp': (MLP, [None, 784]),
    'tiny': (Tiny, [None, 4]),
}


def build(name):
    paddle.seed(7)
    cls, shape = MODELS[name]
    net = cls()
    net.eval()
    return net, shape


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    for name in MODELS:
        net, shape = build(name)
        paddle.jit.save(net, os.path.join(out, name),
                        input_spec=[InputSpec(shape, 'float32', 'x')])
        for batch in (1, 64):
            rng = np.random.default_rng(batch)
            x = rng.standard_normal([batch] + shape[1:]).astype(np.float32)
            x.tofile(os.path.join(out, '{}_b{}.f32'.format(name, batch)))


if __name__ == '__main__':
    main()
