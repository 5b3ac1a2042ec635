"""Tier-1 layers of paddle.nn and paddle.nn.initializer."""
import math
import unittest

import numpy as np

import paddle
import paddle.nn as nn
import paddle.nn.initializer as I


def t(a, **kw):
    return paddle.to_tensor(np.asarray(a), **kw)


class TestLinearConv(unittest.TestCase):
    def test_linear_weight_is_in_out_xavier_and_bias_zero(self):
        paddle.seed(0)
        fc = nn.Linear(300, 200)
        self.assertEqual(fc.weight.shape, [300, 200])
        self.assertEqual(fc.bias.shape, [200])
        np.testing.assert_array_equal(fc.bias.numpy(), np.zeros(200, 'float32'))
        limit = math.sqrt(6.0 / (300 + 200))
        w = fc.weight.numpy()
        self.assertLessEqual(np.abs(w).max(), limit + 1e-6)
        self.assertGreater(np.abs(w).max(), 0.9 * limit)
        self.assertEqual(fc(paddle.ones([7, 300])).shape, [7, 200])

    def test_linear_without_bias_and_bad_sizes(self):
        fc = nn.Linear(3, 2, bias_attr=False)
        self.assertIsNone(fc.bias)
        self.assertEqual(len(fc.parameters()), 1)
        with self.assertRaises(ValueError):
            nn.Linear(0, 2)
        with self.assertRaises(ValueError) as cm:
            fc(paddle.ones([4, 5]))
        self.assertIn('[4, 5]', str(cm.exception))

    def test_conv2d_shapes_and_default_init(self):
        paddle.seed(1)
        conv = nn.Conv2D(16, 32, 3, stride=2, padding=1)
        self.assertEqual(conv.weight.shape, [32, 16, 3, 3])
        std = conv.weight.numpy().std()
        self.assertAlmostEqual(std, math.sqrt(2.0 / (16 * 9)), delta=0.01)
        np.testing.assert_array_equal(conv.bias.numpy(), np.zeros(32, 'float32'))
        self.assertEqual(conv(paddle.ones([2, 16, 9, 9])).shape, [2, 32, 5, 5])
        g = nn.Conv2D(4, 8, (3, 1), groups=2, bias_attr=False)
        self.assertEqual(g.weight.shape, [8, 2, 3, 1])
        self.assertIsNone(g.bias)
        with self.assertRaises(ValueError):
            nn.Conv2D(3, 4, 3, groups=2)

    def test_conv2d_padding_modes(self):
        conv = nn.Conv2D(1, 1, 3, padding=1, padding_mode='reflect')
        self.assertEqual(conv(paddle.ones([1, 1, 5, 5])).shape, [1, 1, 5, 5])

    def test_conv1d(self):
        conv = nn.Conv1D(3, 5, 3, padding=1)
        self.assertEqual(conv(paddle.ones([2, 3, 10])).shape, [2, 5, 10])

    def test_pool_layers(self):
        x = paddle.rand([2, 3, 8, 8])
        self.assertEqual(nn.MaxPool2D(2)(x).shape, [2, 3, 4, 4])
        self.assertEqual(nn.MaxPool2D(3, 2, 1)(x).shape, [2, 3, 4, 4])
        self.assertEqual(nn.AvgPool2D(2, 2)(x).shape, [2, 3, 4, 4])
        self.assertEqual(nn.AdaptiveAvgPool2D((2, 1))(x).shape, [2, 3, 2, 1])
        self.assertEqual(nn.Flatten()(x).shape, [2, 192])


class TestNormDropoutEmbedding(unittest.TestCase):
    def test_batchnorm2d_updates_running_stats_in_train_only(self):
        bn = nn.BatchNorm2D(3)
        x = np.random.RandomState(2).randn(4, 3, 5, 5).astype('float32') * 2 + 1
        out = bn(t(x)).numpy()
        self.assertAlmostEqual(float(out.mean()), 0.0, places=4)
        mean = bn._mean.numpy()
        np.testing.assert_allclose(mean, 0.1 * x.mean(axis=(0, 2, 3)), rtol=1e-4, atol=1e-6)
        bn.eval()
        bn(t(x))
        np.testing.assert_array_equal(bn._mean.numpy(), mean)
        names = [n for n, _ in bn.named_parameters()]
        self.assertEqual(names, ['weight', 'bias', '_mean', '_variance'])
        self.assertTrue(bn._mean.stop_gradient)
        self.assertIn('_variance', bn.state_dict())
        with self.assertRaises(ValueError):
            bn(paddle.ones([2, 3]))

    def test_batchnorm1d(self):
        bn = nn.BatchNorm1D(4)
        self.assertEqual(bn(paddle.rand([8, 4])).shape, [8, 4])
        self.assertEqual(bn(paddle.rand([8, 4, 6])).shape, [8, 4, 6])

    def test_layer_norm(self):
        ln = nn.LayerNorm([4])
        x = np.random.RandomState(3).randn(2, 4).astype('float32')
        out = ln(t(x)).numpy()
        np.testing.assert_allclose(out.mean(-1), 0, atol=1e-5)
        self.assertEqual(len(ln.parameters()), 2)

    def test_dropout_layer_follows_train_eval(self):
        d = nn.Dropout(0.5)
        x = paddle.ones([200])
        self.assertTrue((d(x).numpy() == 0).any())
        d.eval()
        np.testing.assert_array_equal(d(x).numpy(), np.ones(200, 'float32'))
        self.assertEqual(repr(d), 'Dropout(p=0.5, axis=None, mode=upscale_in_train)')

    def test_embedding_with_padding_idx(self):
        emb = nn.Embedding(10, 3, padding_idx=0)
        self.assertEqual(emb.weight.shape, [10, 3])
        np.testing.assert_array_equal(emb.weight.numpy()[0], np.zeros(3, 'float32'))
        out = emb(t(np.array([[0, 5]], 'int64')))
        self.assertEqual(out.shape, [1, 2, 3])
        out.sum().backward()
        np.testing.assert_array_equal(emb.weight.grad.numpy()[0], np.zeros(3, 'float32'))
        with self.assertRaises(ValueError):
            nn.Embedding(5, 2, padding_idx=7)


class TestActivationAndLossLayers(unittest.TestCase):
    def test_activation_layers(self):
        x = t(np.array([-1.0, 0.5], 'float32'))
        np.testing.assert_allclose(nn.ReLU()(x).numpy(), [0, 0.5])
        np.testing.assert_allclose(nn.Sigmoid()(x).numpy(), 1 / (1 + np.exp([1.0, -0.5])),
                                   rtol=1e-6)
        np.testing.assert_allclose(nn.Tanh()(x).numpy(), np.tanh([-1.0, 0.5]), rtol=1e-6)
        np.testing.assert_allclose(nn.LeakyReLU(0.1)(x).numpy(), [-0.1, 0.5], rtol=1e-6)
        np.testing.assert_allclose(nn.Softmax()(x).numpy().sum(), 1.0, rtol=1e-6)
        self.assertEqual(nn.GELU()(x).shape, [2])
        self.assertEqual(nn.LogSoftmax()(x).shape, [2])
        p = nn.PReLU()
        np.testing.assert_allclose(p(x).numpy(), [-0.25, 0.5])
        self.assertEqual(len(p.parameters()), 1)

    def test_loss_layers_are_0d_with_paddle_defaults(self):
        logits = paddle.randn([4, 3])
        label = t(np.array([[0], [2], [1], [1]], 'int64'))
        ce = nn.CrossEntropyLoss()
        self.assertEqual(ce.ignore_index, -100)
        self.assertTrue(ce.use_softmax)
        loss = ce(logits, label)
        self.assertEqual(loss.shape, [])
        a, b = paddle.rand([3, 2]), paddle.rand([3, 2])
        for layer in (nn.MSELoss(), nn.L1Loss(), nn.BCELoss(), nn.BCEWithLogitsLoss(),
                      nn.SmoothL1Loss()):
            self.assertEqual(layer(a, b).shape, [], type(layer).__name__)
        logp = nn.functional.log_softmax(logits)
        self.assertEqual(nn.NLLLoss()(logp, t(np.array([0, 2, 1, 1], 'int64'))).shape, [])
        self.assertEqual(nn.MSELoss(reduction='none')(a, b).shape, [3, 2])
        with self.assertRaises(ValueError):
            nn.MSELoss(reduction='bad')

    def test_ignore_index(self):
        logits = paddle.randn([3, 4])
        label = t(np.array([1, -100, 2], 'int64'))
        full = nn.CrossEntropyLoss(reduction='none')(logits, label).numpy().reshape(-1)
        self.assertEqual(full[1], 0.0)


class TestRNN(unittest.TestCase):
    def test_lstm_shapes_and_backward(self):
        lstm = nn.LSTM(4, 6, num_layers=2)
        x = paddle.randn([3, 5, 4])
        y, (h, c) = lstm(x)
        self.assertEqual(y.shape, [3, 5, 6])
        self.assertEqual(h.shape, [2, 3, 6])
        self.assertEqual(c.shape, [2, 3, 6])
        y.sum().backward()
        self.assertIsNotNone(lstm.weight_ih_l0.grad)
        self.assertEqual(lstm.weight_ih_l0.shape, [24, 4])
        self.assertEqual(lstm.weight_ih_l1.shape, [24, 6])

    def test_bidirectional_gru_and_time_major(self):
        gru = nn.GRU(4, 5, direction='bidirect', time_major=True)
        y, h = gru(paddle.randn([7, 2, 4]))
        self.assertEqual(y.shape, [7, 2, 10])
        self.assertEqual(h.shape, [2, 2, 5])
        with self.assertRaises(ValueError):
            nn.GRU(4, 5, direction='sideways')

    def test_cells(self):
        cell = nn.LSTMCell(3, 4)
        out, (h, c) = cell(paddle.randn([2, 3]))
        self.assertEqual(out.shape, [2, 4])
        gcell = nn.GRUCell(3, 4)
        out, h = gcell(paddle.randn([2, 3]))
        self.assertEqual(h.shape, [2, 4])


class TestTier2Layers(unittest.TestCase):
    def test_multi_head_attention_matches_numpy(self):
        paddle.seed(5)
        mha = nn.MultiHeadAttention(8, 2)
        x = np.random.RandomState(6).randn(2, 3, 8).astype('float32')
        mask = np.tril(np.ones((3, 3), bool))
        out = mha(t(x), attn_mask=t(mask)).numpy()

        def proj(layer, v):
            return v @ layer.weight.numpy() + layer.bias.numpy()

        def heads(v):
            return v.reshape(2, 3, 2, 4).transpose(0, 2, 1, 3)
        q, k, v = heads(proj(mha.q_proj, x)), heads(proj(mha.k_proj, x)), heads(proj(mha.v_proj, x))
        s = q @ k.transpose(0, 1, 3, 2) / 2.0 + np.where(mask, 0.0, -1e9)
        w = np.exp(s - s.max(-1, keepdims=True))
        w /= w.sum(-1, keepdims=True)
        o = (w @ v).transpose(0, 2, 1, 3).reshape(2, 3, 8)
        np.testing.assert_allclose(out, proj(mha.out_proj, o), rtol=1e-4, atol=1e-5)
        with self.assertRaises(ValueError):
            nn.MultiHeadAttention(10, 3)

    def test_transformer_encoder_stack_trains(self):
        layer = nn.TransformerEncoderLayer(16, 4, 32, dropout=0.0)
        enc = nn.TransformerEncoder(layer, 2)
        self.assertEqual(len(enc.layers), 2)
        self.assertIsNot(enc.layers[0].linear1.weight, enc.layers[1].linear1.weight)
        y = enc(paddle.rand([2, 5, 16]))
        self.assertEqual(y.shape, [2, 5, 16])
        y.mean().backward()
        self.assertIsNotNone(enc.layers[1].self_attn.q_proj.weight.grad)

    def test_interpolate_and_upsample(self):
        x = np.arange(4, dtype='float32').reshape(1, 1, 2, 2)
        near = nn.Upsample(scale_factor=2)(t(x)).numpy()
        np.testing.assert_array_equal(near[0, 0], np.repeat(np.repeat(x[0, 0], 2, 0), 2, 1))
        bil = nn.functional.interpolate(t(x), size=[3, 3], mode='bilinear',
                                        align_corners=True).numpy()
        np.testing.assert_allclose(bil[0, 0], [[0, 0.5, 1], [1, 1.5, 2], [2, 2.5, 3]])
        half = nn.functional.interpolate(t(x), scale_factor=2, mode='bilinear').numpy()
        np.testing.assert_allclose(half[0, 0, 0], [0, 0.25, 0.75, 1.0])
        with self.assertRaises(ValueError):
            nn.functional.interpolate(t(x))


class TestInitializers(unittest.TestCase):
    def _p(self, shape):
        return paddle.create_parameter(shape, 'float32')

    def test_constant_uniform_normal(self):
        p = self._p([1000])
        I.Constant(2.5)(p)
        np.testing.assert_array_equal(p.numpy(), np.full(1000, 2.5, 'float32'))
        I.Uniform(-0.5, 0.25)(p)
        self.assertGreaterEqual(p.numpy().min(), -0.5)
        self.assertLessEqual(p.numpy().max(), 0.25)
        I.Normal(1.0, 0.1)(p)
        self.assertAlmostEqual(float(p.numpy().mean()), 1.0, delta=0.02)
        self.assertAlmostEqual(float(p.numpy().std()), 0.1, delta=0.02)
        with self.assertRaises(ValueError):
            I.Uniform(1.0, 0.0)

    def test_xavier_and_kaiming(self):
        p = self._p([200, 300])
        I.XavierNormal()(p)
        self.assertAlmostEqual(float(p.numpy().std()), math.sqrt(2.0 / 500), delta=0.005)
        I.XavierUniform()(p)
        self.assertLessEqual(np.abs(p.numpy()).max(), math.sqrt(6.0 / 500) + 1e-6)
        I.KaimingNormal()(p)
        self.assertAlmostEqual(float(p.numpy().std()), math.sqrt(2.0 / 200), delta=0.005)

    def test_assign_and_calculate_gain(self):
        p = self._p([2, 2])
        I.Assign(np.array([[1, 2], [3, 4]], 'float32'))(p)
        np.testing.assert_array_equal(p.numpy(), [[1, 2], [3, 4]])
        with self.assertRaises(ValueError):
            I.Assign(np.ones(3))(p)
        self.assertAlmostEqual(I.calculate_gain('relu'), math.sqrt(2.0))
        self.assertAlmostEqual(I.calculate_gain('tanh'), 5.0 / 3)

    def test_initializer_through_param_attr(self):
        fc = nn.Linear(2, 2, weight_attr=paddle.ParamAttr(initializer=I.Constant(0.3)),
                       bias_attr=paddle.ParamAttr(initializer=I.Constant(-1.0)))
        np.testing.assert_allclose(fc.weight.numpy(), 0.3)
        np.testing.assert_allclose(fc.bias.numpy(), -1.0)

    def test_set_global_initializer_beats_layer_defaults_not_param_attr(self):
        I.set_global_initializer(I.Constant(0.7), I.Constant(0.2))
        try:
            conv = nn.Conv2D(1, 2, 3)
            fc = nn.Linear(2, 2, weight_attr=paddle.ParamAttr(initializer=I.Constant(1.0)))
        finally:
            I.set_global_initializer(None, None)
        np.testing.assert_allclose(conv.weight.numpy(), 0.7)
        np.testing.assert_allclose(conv.bias.numpy(), 0.2)
        np.testing.assert_allclose(fc.weight.numpy(), 1.0)
        np.testing.assert_allclose(fc.bias.numpy(), 0.2)
        self.assertNotEqual(float(nn.Linear(2, 2).weight.numpy()[0, 0]), 0.7)

    def test_seed_makes_init_reproducible(self):
        paddle.seed(42)
        a = nn.Linear(5, 5).weight.numpy()
        paddle.seed(42)
        b = nn.Linear(5, 5).weight.numpy()
        np.testing.assert_array_equal(a, b)


class TestClip(unittest.TestCase):
    def test_clip_grad_by_global_norm(self):
        p = paddle.create_parameter([2], 'float32')
        I.Assign(np.array([1.0, 1.0], 'float32'))(p)
        (p * t(np.array([3.0, 4.0], 'float32'))).sum().backward()
        clip = nn.ClipGradByGlobalNorm(1.0)
        out = clip([(p, p.grad)])
        np.testing.assert_allclose(out[0][1].numpy(), [0.6, 0.8], rtol=1e-6)
        with self.assertRaises(ValueError):
            nn.ClipGradByGlobalNorm(0)


if __name__ == '__main__':
    unittest.main()
