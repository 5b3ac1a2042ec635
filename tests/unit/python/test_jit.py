"""paddle.jit: to_static tracing, jit.save/load round trips, what tracing refuses."""
import json
import os
import shutil
import struct
import tempfile
import unittest

import numpy as np

import paddle
import paddle.nn as nn
import paddle.nn.functional as F
from paddle.static import InputSpec


class LeNet(nn.Layer):
    """LeNet for 8x8 digits (sklearn's), with batch norm and dropout."""

    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2D(1, 6, 3, padding=1)
        self.bn = nn.BatchNorm2D(6)
        self.pool = nn.MaxPool2D(2, 2)
        self.c2 = nn.Conv2D(6, 16, 3)
        self.fc1 = nn.Linear(16, 32)
        self.drop = nn.Dropout(0.3)
        self.fc2 = nn.Linear(32, 10)

    def forward(self, x):
        x = self.pool(F.relu(self.bn(self.c1(x))))
        x = self.pool(F.relu(self.c2(x)))
        x = paddle.flatten(x, 1)
        return self.fc2(self.drop(F.relu(self.fc1(x))))


class MLP(nn.Layer):
    def __init__(self):
        super().__init__()
        self.l1 = nn.Linear(12, 24)
        self.l2 = nn.Linear(24, 5)

    def forward(self, x):
        h = paddle.tanh(self.l1(x)) * 0.5 + 1.0
        h = F.gelu(h) - paddle.sigmoid(h) / 2
        return F.softmax(self.l2(h), axis=-1)


class DataDependent(nn.Layer):
    def forward(self, x):
        if x.mean() > 0:          # the line the error must name
            return x * 2
        return x


class LoopOverValues(nn.Layer):
    def forward(self, x):
        n = int(x.sum())          # the line the error must name
        return x + n


class ShapeUser(nn.Layer):
    def forward(self, x):
        return paddle.reshape(x, [x.shape[0], -1]).sum(axis=1, keepdim=True)


class TestJit(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix='pyc_jit_')
        paddle.seed(3)

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def _roundtrip(self, net, spec, shapes):
        net.eval()
        path = os.path.join(self.dir, 'm', 'model')
        paddle.jit.save(net, path, input_spec=spec)
        loaded = paddle.jit.load(path)
        for shape in shapes:
            x = paddle.randn(shape)
            want = net(x).numpy()
            got = loaded(x).numpy()
            self.assertEqual(got.shape, want.shape)
            np.testing.assert_allclose(got, want, rtol=0, atol=1e-6)
        return path, loaded

    def test_lenet_saved_equals_eager_for_several_batch_sizes(self):
        net = LeNet()
        # give batch norm non-trivial running statistics
        net.train()
        for _ in range(3):
            net(paddle.randn([16, 1, 8, 8]) * 2 + 0.5)
        path, loaded = self._roundtrip(net, [InputSpec([None, 1, 8, 8], 'float32', 'img')],
                                       [[1, 1, 8, 8], [3, 1, 8, 8], [64, 1, 8, 8]])
        with open(path + '.pdmodel') as f:
            g = json.load(f)
        self.assertEqual(g['format'], 'eddy-graph')
        self.assertEqual(g['inputs'], [{'name': 'img', 'dtype': 'float32',
                                        'shape': [-1, 1, 8, 8]}])
        ops = [n['op'] for n in g['nodes']]
        self.assertEqual(ops.count('conv2d'), 2)
        self.assertIn('batch_norm', ops)
        self.assertEqual(g['values'][g['outputs'][0]['value']]['shape'], [-1, 10])
        self.assertTrue(net.training is False)

    def test_mlp_with_scalars_and_activations(self):
        self._roundtrip(MLP(), [InputSpec([-1, 12], 'float32', 'x')],
                        [[1, 12], [2, 12], [64, 12]])

    def test_batch_dim_used_in_reshape_stays_symbolic(self):
        path, loaded = self._roundtrip(ShapeUser(), [InputSpec([None, 2, 3])],
                                       [[1, 2, 3], [5, 2, 3], [9, 2, 3]])
        with open(path + '.pdmodel') as f:
            g = json.load(f)
        reshape = [n for n in g['nodes'] if n['op'] == 'reshape'][0]
        self.assertEqual(reshape['attrs']['shape'], ['$0', -1])

    def test_parameters_are_safetensors(self):
        net = MLP()
        path, _ = self._roundtrip(net, [InputSpec([None, 12])], [[2, 12]])
        with open(path + '.pdiparams', 'rb') as f:
            data = f.read()
        n = struct.unpack('<Q', data[:8])[0]
        self.assertEqual((8 + n) % 8, 0)
        header = json.loads(data[8:8 + n])
        self.assertEqual(header['l1.weight']['dtype'], 'F32')
        self.assertEqual(header['l1.weight']['shape'], [12, 24])
        b, e = header['l1.weight']['data_offsets']
        w = np.frombuffer(data[8 + n + b:8 + n + e], '<f4').reshape(12, 24)
        np.testing.assert_array_equal(w, net.l1.weight.numpy())

    def test_data_dependent_if_is_reported_with_its_line(self):
        for cls, needle in ((DataDependent, 'if x.mean() > 0'),
                            (LoopOverValues, 'n = int(x.sum())')):
            with self.assertRaises(paddle.jit.TracingError) as cm:
                paddle.jit.save(cls(), os.path.join(self.dir, 'bad'),
                                input_spec=[InputSpec([None, 3])])
            line = [i + 1 for i, s in enumerate(open(__file__).read().splitlines())
                    if needle in s][0]
            self.assertIn('{}:{}'.format(__file__, line), str(cm.exception))
            self.assertIn('data-dependent control flow', str(cm.exception))
            self.assertFalse(os.path.exists(os.path.join(self.dir, 'bad.pdmodel')))

    def test_unsupported_op_is_reported(self):
        def f(x):
            return paddle.cumsum(x, axis=0) + 1
        with self.assertRaises(paddle.jit.TracingError) as cm:
            paddle.jit.save(f, os.path.join(self.dir, 'f'), input_spec=[InputSpec([4])])
        self.assertIn('cumsum', str(cm.exception))

    def test_tracing_restores_tensor_operators(self):
        paddle.jit.save(MLP(), os.path.join(self.dir, 'x'), input_spec=[InputSpec([None, 12])])
        a = paddle.to_tensor([1.0, -2.0])
        self.assertEqual(bool((a > 0).any()), True)
        self.assertEqual(float(a.sum()), -1.0)
        np.testing.assert_array_equal((a + 1).numpy(), [2.0, -1.0])
        self.assertIs(paddle._C.add, paddle._C.add)
        self.assertFalse(hasattr(paddle._C.add, '__wrapped__'))

    def test_to_static_keeps_eager_calls_and_exposes_the_program(self):
        net = paddle.jit.to_static(MLP(), input_spec=[InputSpec([None, 12], 'float32', 'x')])
        y = net(paddle.randn([3, 12]))
        self.assertEqual(y.shape, [3, 5])
        prog = net.forward.concrete_program
        self.assertEqual(prog['inputs'][0]['name'], 'x')
        path = os.path.join(self.dir, 'ts')
        paddle.jit.save(net, path)   # the input_spec given to to_static
        self.assertTrue(os.path.exists(path + '.pdmodel'))

    def test_to_static_function(self):
        @paddle.jit.to_static(input_spec=[InputSpec([None, 4]), InputSpec([None, 4])])
        def f(a, b):
            return paddle.maximum(a, b) * 3 - paddle.exp(a)
        path = os.path.join(self.dir, 'fn')
        paddle.jit.save(f, path)
        g = paddle.jit.load(path)
        a, b = paddle.randn([6, 4]), paddle.randn([6, 4])
        np.testing.assert_allclose(g(a, b).numpy(), f(a, b).numpy(), atol=1e-6)

    def test_loaded_layer_checks_inputs(self):
        path = os.path.join(self.dir, 'chk')
        paddle.jit.save(MLP(), path, input_spec=[InputSpec([None, 12], 'float32', 'x')])
        g = paddle.jit.load(path)
        with self.assertRaisesRegex(ValueError, r"expected shape \[-1, 12\]"):
            g(paddle.randn([2, 13]))
        with self.assertRaisesRegex(TypeError, 'expected dtype float32'):
            g(paddle.ones([2, 12], dtype='float64'))
        with self.assertRaisesRegex(ValueError, 'takes 1 inputs'):
            g()

    def test_missing_input_spec_is_a_clear_error(self):
        with self.assertRaisesRegex(ValueError, 'input_spec'):
            paddle.jit.save(MLP(), os.path.join(self.dir, 'n'))

    def test_model_save_training_false_writes_an_inference_model(self):
        net = MLP()
        model = paddle.Model(net, inputs=[InputSpec([None, 12], 'float32', 'x')])
        path = os.path.join(self.dir, 'hapi', 'inf')
        model.save(path, training=False)
        loaded = paddle.jit.load(path)
        x = paddle.randn([4, 12])
        net.eval()
        np.testing.assert_allclose(loaded(x).numpy(), net(x).numpy(), atol=1e-6)


if __name__ == '__main__':
    unittest.main()
