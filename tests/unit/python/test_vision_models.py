"""paddle.vision.models Tier 2 (AlexNet, MobileNetV1/V2/V3, SqueezeNet,
ShuffleNetV2, ResNeXt, DenseNet, GoogLeNet, InceptionV3 next to LeNet, VGG, ResNet) and
paddle.metric.Auc/Precision/Recall (issue 18): output shapes,
parameter counts equal to the published architectures' (so the layers are
the real ones), Paddle's layer names, a training step, the pretrained=True
error; Auc against scikit-learn's and Paddle's bucketed algorithm."""
import unittest

import numpy as np

import paddle
from paddle.vision import models as M


def n_trainable(m):
    return sum(int(np.prod(p.shape)) for p in m.parameters() if not p.stop_gradient)


class TestModels(unittest.TestCase):
    def test_parameter_counts_match_the_architectures(self):
        # the counts torchvision/Paddle publish for the 1000-class models
        self.assertEqual(n_trainable(M.alexnet()), 61100840)
        self.assertEqual(n_trainable(M.mobilenet_v1()), 4231976)
        self.assertEqual(n_trainable(M.mobilenet_v2()), 3504872)
        self.assertEqual(n_trainable(M.resnet18()), 11689512)
        self.assertEqual(n_trainable(M.resnet34()), 21797672)
        self.assertEqual(n_trainable(M.resnet50()), 25557032)
        self.assertEqual(n_trainable(M.vgg11()), 132863336)
        self.assertEqual(n_trainable(M.vgg16()), 138357544)
        self.assertEqual(n_trainable(M.resnext50_32x4d()), 25028904)
        self.assertEqual(n_trainable(M.squeezenet1_0()), 1248424)
        self.assertEqual(n_trainable(M.squeezenet1_1()), 1235496)
        self.assertEqual(n_trainable(M.shufflenet_v2_x1_0()), 2278604)
        self.assertEqual(n_trainable(M.shufflenet_v2_x0_5()), 1366792)
        self.assertEqual(n_trainable(M.mobilenet_v3_large()), 5483032)
        self.assertEqual(n_trainable(M.mobilenet_v3_small()), 2542856)
        self.assertEqual(n_trainable(M.densenet121()), 7978856)
        self.assertEqual(n_trainable(M.densenet161()), 28681000)
        self.assertEqual(n_trainable(M.inception_v3()), 23834568)     # without aux head

    def test_forward_shapes(self):
        self.assertEqual(M.AlexNet(num_classes=10)(paddle.randn([1, 3, 224, 224])).shape, [1, 10])
        self.assertEqual(M.AlexNet(num_classes=0)(paddle.randn([1, 3, 224, 224])).shape,
                         [1, 256, 6, 6])
        for net in (M.MobileNetV1(scale=0.5, num_classes=7), M.MobileNetV2(scale=0.5,
                                                                             num_classes=7),
                    M.resnet18(num_classes=7), M.LeNet(num_classes=7),
                    M.MobileNetV3Small(scale=0.5, num_classes=7), M.squeezenet1_1(num_classes=7),
                    M.shufflenet_v2_swish(num_classes=7), M.resnext50_32x4d(num_classes=7)):
            shape = [2, 1, 28, 28] if isinstance(net, M.LeNet) else [2, 3, 64, 64]
            self.assertEqual(net(paddle.randn(shape)).shape, [2, 7], type(net).__name__)
        feats = M.MobileNetV2(num_classes=0, with_pool=False)(paddle.randn([1, 3, 64, 64]))
        self.assertEqual(feats.shape, [1, 1280, 2, 2])
        self.assertEqual(M.MobileNetV1(num_classes=0)(paddle.randn([1, 3, 32, 32])).shape,
                         [1, 1024, 1, 1])

    def test_inception_v3_shape(self):
        self.assertEqual(M.InceptionV3(num_classes=3)(paddle.randn([1, 3, 299, 299])).shape,
                         [1, 3])

    def test_googlenet_returns_main_and_aux_logits(self):
        outs = M.googlenet(num_classes=10)(paddle.randn([1, 3, 224, 224]))
        self.assertEqual([o.shape for o in outs], [[1, 10], [1, 10], [1, 10]])
        feats = M.GoogLeNet(num_classes=0)(paddle.randn([1, 3, 224, 224]))
        self.assertEqual([o.shape for o in feats], [[1, 1024, 1, 1], [1, 512, 3, 3],
                                                    [1, 528, 3, 3]])

    def test_paddle_layer_names(self):
        names = [n for n, _ in M.MobileNetV1(scale=0.25).named_sublayers()]
        for want in ('conv1', 'conv2_1', 'conv5_6', 'conv6', 'fc'):
            self.assertIn(want, names)
        keys = list(M.alexnet().state_dict().keys())
        self.assertIn('_conv1._conv.weight', keys)
        self.assertIn('_fc8.bias', keys)
        keys = list(M.mobilenet_v2(scale=0.35).state_dict().keys())
        self.assertIn('features.0.0.weight', keys)
        self.assertIn('classifier.1.weight', keys)

    def test_training_step_reduces_loss(self):
        paddle.seed(0)
        net = M.MobileNetV2(scale=0.35, num_classes=4)
        opt = paddle.optimizer.Adam(learning_rate=1e-3, parameters=net.parameters())
        x = paddle.randn([8, 3, 32, 32])
        y = paddle.to_tensor(np.arange(8) % 4)
        losses = []
        for _ in range(5):
            loss = paddle.nn.functional.cross_entropy(net(x), y)
            loss.backward()
            opt.step()
            opt.clear_grad()
            losses.append(float(loss))
        self.assertLess(losses[-1], losses[0])

    def test_pretrained_is_a_clear_error(self):
        for fn in (M.alexnet, M.mobilenet_v1, M.mobilenet_v2, M.resnet18, M.vgg16,
                   M.mobilenet_v3_large, M.squeezenet1_0, M.shufflenet_v2_x1_0,
                   M.resnext50_32x4d, M.densenet121, M.googlenet, M.inception_v3):
            with self.assertRaisesRegex(ValueError, 'no network'):
                fn(pretrained=True)


class TestMetrics(unittest.TestCase):
    def test_auc_doc_example_and_reference(self):
        rs = np.random.RandomState(0)
        m = paddle.metric.Auc()
        p1 = rs.random_sample(1000)
        labels = (rs.random_sample(1000) < p1).astype('int64').reshape(-1, 1)
        preds = np.stack([1 - p1, p1], axis=1)
        m.update(preds=preds[:500], labels=labels[:500])
        m.update(preds=paddle.to_tensor(preds[500:]), labels=paddle.to_tensor(labels[500:]))
        # Paddle's own loop over the 4096 buckets
        pos, neg = np.zeros(4096), np.zeros(4096)
        for v, lab in zip(p1, labels.ravel()):
            (pos if lab else neg)[int(v * 4095)] += 1
        tp = fp = area = 0.0
        for i in range(4095, -1, -1):
            tp0, fp0 = tp, fp
            tp += pos[i]
            fp += neg[i]
            area += abs(fp - fp0) * (tp + tp0) / 2
        self.assertAlmostEqual(m.accumulate(), area / tp / fp, places=12)
        try:
            from sklearn.metrics import roc_auc_score
        except ImportError:
            return
        self.assertAlmostEqual(m.accumulate(), roc_auc_score(labels.ravel(), p1), places=3)
        self.assertEqual(m.name(), 'auc')
        m.reset()
        self.assertEqual(m.accumulate(), 0.0)

    def test_auc_perfect_and_errors(self):
        m = paddle.metric.Auc(num_thresholds=100)
        m.update(np.array([[0.9, 0.1], [0.2, 0.8], [0.7, 0.3], [0.1, 0.9]]),
                 np.array([[0], [1], [0], [1]]))
        self.assertEqual(m.accumulate(), 1.0)
        with self.assertRaises(ValueError):
            m.update(np.array([[0.5, 1.5]]), np.array([1]))
        with self.assertRaises(ValueError):
            paddle.metric.Auc(curve='XY')

    def test_precision_recall_doc_examples(self):
        x = np.array([0.1, 0.5, 0.6, 0.7])
        y = np.array([0, 1, 1, 1])
        p = paddle.metric.Precision()
        p.update(x, y)
        self.assertEqual(p.accumulate(), 1.0)
        r = paddle.metric.Recall()
        r.update(x, y)
        self.assertEqual(r.accumulate(), 1.0)
        p.update(np.array([0.9, 0.8]), np.array([0, 1]))
        self.assertAlmostEqual(p.accumulate(), 4 / 5)


if __name__ == '__main__':
    unittest.main()
