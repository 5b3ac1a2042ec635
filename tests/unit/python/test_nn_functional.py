"""paddle.nn.functional against numpy references (float64 math)."""
import unittest

import numpy as np

import paddle
import paddle.nn.functional as F


def t(a, **kw):
    return paddle.to_tensor(np.asarray(a), **kw)


def np_softmax(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def np_conv2d(x, w, b, stride, pad):
    n, c, h, wd = x.shape
    oc, _, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    oh = (h + 2 * pad - kh) // stride + 1
    ow = (wd + 2 * pad - kw) // stride + 1
    out = np.zeros((n, oc, oh, ow))
    for i in range(oh):
        for j in range(ow):
            patch = xp[:, :, i * stride:i * stride + kh, j * stride:j * stride + kw]
            out[:, :, i, j] = np.tensordot(patch, w, axes=([1, 2, 3], [1, 2, 3]))
    return out + b.reshape(1, -1, 1, 1)


class TestActivations(unittest.TestCase):
    def setUp(self):
        self.x = np.random.RandomState(0).randn(3, 5).astype('float32')

    def test_elementwise_activations_match_numpy(self):
        x = self.x
        cases = {
            'relu': np.maximum(x, 0),
            'sigmoid': 1 / (1 + np.exp(-x)),
            'tanh': np.tanh(x),
            'silu': x / (1 + np.exp(-x)),
            'softsign': x / (1 + np.abs(x)),
            'relu6': np.clip(x, 0, 6),
            'hardtanh': np.clip(x, -1, 1),
            'softplus': np.log1p(np.exp(x)),
            'log_sigmoid': -np.log1p(np.exp(-x)),
            'elu': np.where(x > 0, x, np.exp(x) - 1),
            'mish': x * np.tanh(np.log1p(np.exp(x))),
        }
        for name, ref in cases.items():
            got = getattr(F, name)(t(x)).numpy()
            np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-6, err_msg=name)

    def test_leaky_relu_and_gelu(self):
        x = self.x
        np.testing.assert_allclose(F.leaky_relu(t(x), 0.2).numpy(), np.where(x > 0, x, 0.2 * x),
                                   rtol=1e-6)
        from math import erf
        ref = np.vectorize(lambda v: 0.5 * v * (1 + erf(v / np.sqrt(2))))(x.astype('float64'))
        np.testing.assert_allclose(F.gelu(t(x)).numpy(), ref, rtol=1e-5, atol=1e-6)

    def test_softmax_and_log_softmax_on_an_axis(self):
        x = self.x
        np.testing.assert_allclose(F.softmax(t(x)).numpy(), np_softmax(x), rtol=1e-5)
        np.testing.assert_allclose(F.softmax(t(x), axis=0).numpy(), np_softmax(x, 0), rtol=1e-5)
        np.testing.assert_allclose(F.log_softmax(t(x)).numpy(), np.log(np_softmax(x)),
                                   rtol=1e-5, atol=1e-6)

    def test_activation_rejects_non_tensor(self):
        with self.assertRaises(TypeError):
            F.relu([1.0, 2.0])


class TestLosses(unittest.TestCase):
    def setUp(self):
        rs = np.random.RandomState(1)
        self.logits = rs.randn(6, 4).astype('float32')
        self.labels = rs.randint(0, 4, size=(6,)).astype('int64')

    def _ce_ref(self, weight=None):
        logp = np.log(np_softmax(self.logits.astype('float64')))
        per = -logp[np.arange(6), self.labels]
        if weight is None:
            return per.mean()
        w = weight[self.labels]
        return (per * w).sum() / w.sum()

    def test_cross_entropy_defaults_are_0d_mean_over_logits(self):
        out = F.cross_entropy(t(self.logits), t(self.labels))
        self.assertEqual(out.shape, [])
        self.assertAlmostEqual(float(out), self._ce_ref(), places=5)

    def test_cross_entropy_accepts_n_by_1_labels(self):
        out = F.cross_entropy(t(self.logits), t(self.labels.reshape(6, 1)))
        self.assertAlmostEqual(float(out), self._ce_ref(), places=5)

    def test_cross_entropy_weighted_mean_divides_by_label_weights(self):
        w = np.array([1.0, 2.0, 0.5, 3.0], 'float32')
        out = F.cross_entropy(t(self.logits), t(self.labels), weight=t(w))
        self.assertAlmostEqual(float(out), self._ce_ref(w.astype('float64')), places=5)

    def test_cross_entropy_reduction_none_and_sum(self):
        none = F.cross_entropy(t(self.logits), t(self.labels), reduction='none')
        self.assertEqual(none.shape[0], 6)
        s = F.cross_entropy(t(self.logits), t(self.labels), reduction='sum')
        self.assertAlmostEqual(float(s), self._ce_ref() * 6, places=4)
        with self.assertRaises(ValueError):
            F.cross_entropy(t(self.logits), t(self.labels), reduction='avg')

    def test_cross_entropy_soft_labels_and_out_of_range_label(self):
        soft = np_softmax(np.random.RandomState(2).randn(6, 4)).astype('float32')
        out = F.cross_entropy(t(self.logits), t(soft), soft_label=True)
        ref = -(soft * np.log(np_softmax(self.logits.astype('float64')))).sum(-1).mean()
        self.assertAlmostEqual(float(out), ref, places=5)
        with self.assertRaises(Exception) as cm:
            F.cross_entropy(t(self.logits), t(np.array([7, 0, 0, 0, 0, 0], 'int64')))
        self.assertIn('7', str(cm.exception))

    def test_cross_entropy_backward_gives_softmax_minus_onehot(self):
        x = t(self.logits, stop_gradient=False)
        F.cross_entropy(x, t(self.labels)).backward()
        ref = np_softmax(self.logits)
        ref[np.arange(6), self.labels] -= 1
        np.testing.assert_allclose(x.grad.numpy(), ref / 6, rtol=1e-4, atol=1e-6)

    def test_pointwise_losses(self):
        a = np.random.RandomState(3).rand(4, 3).astype('float32')
        b = np.random.RandomState(4).rand(4, 3).astype('float32')
        self.assertAlmostEqual(float(F.mse_loss(t(a), t(b))), ((a - b) ** 2).mean(), places=6)
        self.assertAlmostEqual(float(F.l1_loss(t(a), t(b), 'sum')), np.abs(a - b).sum(), places=5)
        bce = -(b * np.log(a) + (1 - b) * np.log(1 - a)).mean()
        self.assertAlmostEqual(float(F.binary_cross_entropy(t(a), t(b))), bce, places=5)
        z = a * 4 - 2
        sig = 1 / (1 + np.exp(-z))
        bcel = -(b * np.log(sig) + (1 - b) * np.log(1 - sig)).mean()
        self.assertAlmostEqual(float(F.binary_cross_entropy_with_logits(t(z), t(b))), bcel,
                               places=5)
        self.assertEqual(F.mse_loss(t(a), t(b)).shape, [])

    def test_nll_loss_on_log_softmax_equals_cross_entropy(self):
        logp = F.log_softmax(t(self.logits))
        self.assertAlmostEqual(float(F.nll_loss(logp, t(self.labels))), self._ce_ref(), places=5)

    def test_shape_mismatch_names_both_shapes(self):
        with self.assertRaises(ValueError) as cm:
            F.mse_loss(paddle.ones([2, 3]), paddle.ones([4]))
        self.assertIn('[2, 3]', str(cm.exception))
        self.assertIn('[4]', str(cm.exception))


class TestLayersFunctional(unittest.TestCase):
    def test_linear_uses_in_out_weight(self):
        x = np.random.RandomState(5).randn(2, 3).astype('float32')
        w = np.random.RandomState(6).randn(3, 4).astype('float32')
        b = np.arange(4, dtype='float32')
        np.testing.assert_allclose(F.linear(t(x), t(w), t(b)).numpy(), x @ w + b, rtol=1e-5)
        np.testing.assert_allclose(F.linear(t(x), t(w)).numpy(), x @ w, rtol=1e-5)

    def test_conv2d_matches_direct_convolution(self):
        rs = np.random.RandomState(7)
        x = rs.randn(2, 3, 7, 7).astype('float32')
        w = rs.randn(4, 3, 3, 3).astype('float32')
        b = rs.randn(4).astype('float32')
        got = F.conv2d(t(x), t(w), t(b), stride=2, padding=1).numpy()
        ref = np_conv2d(x.astype('float64'), w.astype('float64'), b, 2, 1)
        np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-4)
        same = F.conv2d(t(x), t(w), None, padding='SAME')
        self.assertEqual(same.shape, [2, 4, 7, 7])
        valid = F.conv2d(t(x), t(w), None, padding='VALID')
        self.assertEqual(valid.shape, [2, 4, 5, 5])

    def test_conv2d_nhwc(self):
        rs = np.random.RandomState(8)
        x = rs.randn(1, 5, 5, 2).astype('float32')
        w = rs.randn(3, 2, 3, 3).astype('float32')
        got = F.conv2d(t(x), t(w), data_format='NHWC').numpy()
        ref = F.conv2d(t(x.transpose(0, 3, 1, 2).copy()), t(w)).numpy().transpose(0, 2, 3, 1)
        np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5)

    def test_conv2d_rejects_bad_rank_with_shape(self):
        with self.assertRaises(ValueError) as cm:
            F.conv2d(paddle.ones([3, 4]), paddle.ones([1, 1, 1, 1]))
        self.assertIn('[3, 4]', str(cm.exception))

    def test_pooling(self):
        x = np.arange(32, dtype='float32').reshape(1, 2, 4, 4)
        mp = F.max_pool2d(t(x), 2).numpy()
        np.testing.assert_array_equal(mp, x.reshape(1, 2, 2, 2, 2, 2).max(axis=(3, 5)))
        ap = F.avg_pool2d(t(x), kernel_size=2, stride=2).numpy()
        np.testing.assert_allclose(ap, x.reshape(1, 2, 2, 2, 2, 2).mean(axis=(3, 5)))
        aap = F.adaptive_avg_pool2d(t(x), 1).numpy()
        np.testing.assert_allclose(aap.reshape(2), x.mean(axis=(2, 3)).reshape(2))
        out, mask = F.max_pool2d(t(x), 2, return_mask=True)
        self.assertEqual(mask.shape, [1, 2, 2, 2])

    def test_dropout_modes(self):
        x = paddle.ones([1000])
        paddle.seed(10)
        y = F.dropout(x, 0.5).numpy()
        self.assertTrue(set(np.unique(y)).issubset({0.0, 2.0}))
        self.assertTrue(0.35 < (y == 0).mean() < 0.65)
        np.testing.assert_array_equal(F.dropout(x, 0.5, training=False).numpy(), x.numpy())
        np.testing.assert_allclose(F.dropout(x, 0.25, training=False,
                                             mode='downscale_in_infer').numpy(), 0.75)
        with self.assertRaises(ValueError):
            F.dropout(x, 1.5)

    def test_one_hot_and_embedding(self):
        oh = F.one_hot(t(np.array([0, 2, 1], 'int64')), 3).numpy()
        np.testing.assert_array_equal(oh, np.eye(3, dtype='float32')[[0, 2, 1]])
        w = np.random.RandomState(9).randn(5, 2).astype('float32')
        e = F.embedding(t(np.array([[1, 4]], 'int64')), t(w)).numpy()
        np.testing.assert_array_equal(e, w[[[1, 4]]])

    def test_batch_norm_and_layer_norm(self):
        x = np.random.RandomState(11).randn(8, 3).astype('float32')
        rm, rv = paddle.zeros([3]), paddle.ones([3])
        out = F.batch_norm(t(x), rm, rv, training=True).numpy()
        ref = (x - x.mean(0)) / np.sqrt(x.var(0) + 1e-5)
        np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(rm.numpy(), 0.1 * x.mean(0), rtol=1e-4, atol=1e-6)
        ln = F.layer_norm(t(x), 3).numpy()
        lref = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-5)
        np.testing.assert_allclose(ln, lref, rtol=1e-4, atol=1e-5)

    def test_pad_and_normalize(self):
        x = paddle.ones([1, 1, 2, 2])
        p = F.pad(x, [1, 0, 0, 2])     # left, right, top, bottom
        self.assertEqual(p.shape, [1, 1, 4, 3])
        v = np.array([[3.0, 4.0]], 'float32')
        np.testing.assert_allclose(F.normalize(t(v)).numpy(), [[0.6, 0.8]], rtol=1e-6)


if __name__ == '__main__':
    unittest.main()
