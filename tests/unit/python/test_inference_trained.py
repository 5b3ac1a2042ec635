"""paddle.inference on a trained model: train a few steps, paddle.jit.save,
load through Config / create_predictor (the C runtime, libeddy_infer.so) and
compare with the eager model at two batch sizes (1e-5)."""
import os
import shutil
import tempfile
import unittest

import numpy as np

import paddle
import paddle.nn as nn
import paddle.nn.functional as F
from paddle import inference
from paddle.static import InputSpec


class SmallCNN(nn.Layer):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2D(1, 4, 3, padding=1)
        self.bn = nn.BatchNorm2D(4)
        self.pool = nn.MaxPool2D(2, 2)
        self.fc1 = nn.Linear(4 * 4 * 4, 16)
        self.fc2 = nn.Linear(16, 3)

    def forward(self, x):
        x = self.pool(F.relu(self.bn(self.c1(x))))
        x = paddle.flatten(x, 1)
        return self.fc2(F.gelu(self.fc1(x)))


class MLP(nn.Layer):
    def __init__(self):
        super().__init__()
        self.l1 = nn.Linear(10, 32)
        self.l2 = nn.Linear(32, 4)

    def forward(self, x):
        return F.softmax(self.l2(paddle.tanh(self.l1(x)) * 0.5 + 0.1), axis=-1)


def train(net, shape, classes, steps=5):
    rng = np.random.default_rng(0)
    opt = paddle.optimizer.Adam(learning_rate=0.01, parameters=net.parameters())
    net.train()
    losses = []
    for _ in range(steps):
        x = paddle.to_tensor(rng.standard_normal([8] + shape).astype(np.float32))
        y = paddle.to_tensor(rng.integers(0, classes, [8]).astype(np.int64))
        loss = F.cross_entropy(net(x), y)
        loss.backward()
        opt.step()
        opt.clear_grad()
        losses.append(float(loss))
    net.eval()
    return losses


class TestInferenceTrained(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix='pyc_infer_')
        paddle.seed(11)

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def _check(self, net, shape, classes):
        losses = train(net, shape, classes)
        self.assertTrue(all(np.isfinite(losses)))
        path = os.path.join(self.dir, type(net).__name__, 'inference')
        paddle.jit.save(net, path, input_spec=[InputSpec([None] + shape, 'float32', 'x')])
        self.assertTrue(os.path.exists(path + '.pdmodel'))
        self.assertTrue(os.path.exists(path + '.pdiparams'))

        config = inference.Config(path + '.pdmodel', path + '.pdiparams')
        config.set_cpu_math_library_num_threads(1)
        predictor = inference.create_predictor(config)
        names = predictor.get_input_names()
        self.assertEqual(names, ['x'])
        out_name = predictor.get_output_names()[0]
        rng = np.random.default_rng(5)
        for batch in (1, 7):
            x = rng.standard_normal([batch] + shape).astype(np.float32)
            h = predictor.get_input_handle(names[0])
            h.reshape(x.shape)
            h.copy_from_cpu(x)
            predictor.run()
            got = predictor.get_output_handle(out_name).copy_to_cpu()
            with paddle.no_grad():
                want = net(paddle.to_tensor(x)).numpy()
            self.assertEqual(got.shape, (batch, classes))
            self.assertEqual(got.dtype, np.float32)
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)

    def test_cnn(self):
        self._check(SmallCNN(), [1, 8, 8], 3)

    def test_mlp(self):
        self._check(MLP(), [10], 4)

    def test_wrong_shape_is_an_error(self):
        net = MLP()
        train(net, [10], 4, steps=1)
        path = os.path.join(self.dir, 'bad', 'inference')
        paddle.jit.save(net, path, input_spec=[InputSpec([None, 10], 'float32', 'x')])
        predictor = inference.create_predictor(inference.Config(path))
        h = predictor.get_input_handle('x')
        with self.assertRaises(ValueError):
            h.copy_from_cpu(np.zeros([2, 11], np.float32))


if __name__ == '__main__':
    unittest.main()
