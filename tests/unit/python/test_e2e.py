"""End-to-end Paddle programs on Eddy's framework: a linear regression, and
an MLP and a LeNet on scikit-learn's digits written as MNIST IDX files
(upsampled to 28x28), trained with paddle.Model and with a manual loop to
>= 95% test accuracy; save/load round trips give identical predictions."""
import gzip
import io
import os
import shutil
import struct
import tempfile
import unittest
from contextlib import redirect_stdout

import numpy as np

import paddle
import paddle.nn as nn
import paddle.nn.functional as F
from paddle.vision.datasets import MNIST
from paddle.vision.transforms import Normalize


def _write_idx(path, images=None, labels=None):
    with gzip.open(path, 'wb') as f:
        if images is not None:
            n, r, c = images.shape
            f.write(struct.pack('>IIII', 2051, n, r, c))
            f.write(images.astype(np.uint8).tobytes())
        else:
            f.write(struct.pack('>II', 2049, len(labels)))
            f.write(labels.astype(np.uint8).tobytes())


def write_digits_as_mnist(root):
    """sklearn digits (8x8, 0..16) -> 28x28 uint8 images, 80/20 split,
    written as Paddle's MNIST files under root; returns (train, test) counts."""
    from PIL import Image
    from sklearn.datasets import load_digits
    d = load_digits()
    imgs = (d.images / 16.0 * 255.0).clip(0, 255).astype(np.uint8)
    big = np.stack([np.asarray(Image.fromarray(im).resize((28, 28), Image.BILINEAR))
                    for im in imgs])
    rs = np.random.RandomState(0)
    perm = rs.permutation(len(big))
    ntest = len(big) // 5
    test_idx, train_idx = perm[:ntest], perm[ntest:]
    os.makedirs(root, exist_ok=True)
    _write_idx(os.path.join(root, 'train-images-idx3-ubyte.gz'), images=big[train_idx])
    _write_idx(os.path.join(root, 'train-labels-idx1-ubyte.gz'), labels=d.target[train_idx])
    _write_idx(os.path.join(root, 't10k-images-idx3-ubyte.gz'), images=big[test_idx])
    _write_idx(os.path.join(root, 't10k-labels-idx1-ubyte.gz'), labels=d.target[test_idx])
    return len(train_idx), len(test_idx)


def mnist_pair(root):
    t = Normalize(mean=[127.5], std=[127.5], data_format='CHW')
    train = MNIST(image_path=os.path.join(root, 'train-images-idx3-ubyte.gz'),
                  label_path=os.path.join(root, 'train-labels-idx1-ubyte.gz'),
                  mode='train', transform=t, backend='cv2')
    test = MNIST(image_path=os.path.join(root, 't10k-images-idx3-ubyte.gz'),
                 label_path=os.path.join(root, 't10k-labels-idx1-ubyte.gz'),
                 mode='test', transform=t, backend='cv2')
    return train, test


class MLP(nn.Layer):
    def __init__(self):
        super().__init__()
        self.flatten = nn.Flatten()
        self.fc1 = nn.Linear(784, 128)
        self.fc2 = nn.Linear(128, 10)

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(self.flatten(x))))


def manual_accuracy(net, dataset):
    net.eval()
    loader = paddle.io.DataLoader(dataset, batch_size=128, shuffle=False)
    correct = total = 0
    with paddle.no_grad():
        for x, y in loader:
            pred = net(x).numpy().argmax(-1)
            correct += int((pred == y.numpy().reshape(-1)).sum())
            total += len(pred)
    net.train()
    return correct / total


def manual_train(net, dataset, epochs, lr=1e-3, batch_size=32):
    opt = paddle.optimizer.Adam(learning_rate=lr, parameters=net.parameters())
    loss_fn = nn.CrossEntropyLoss()
    loader = paddle.io.DataLoader(dataset, batch_size=batch_size, shuffle=True)
    net.train()
    last = None
    for _ in range(epochs):
        for x, y in loader:
            loss = loss_fn(net(x), y)
            loss.backward()
            opt.step()
            opt.clear_grad()
            last = float(loss)
    return opt, last


class TestLinearRegression(unittest.TestCase):
    def test_learns_y_equals_2x_plus_10(self):
        paddle.seed(1)
        np.random.seed(1)
        x = np.random.uniform(-1, 1, (256, 1)).astype('float32')
        y = 2 * x + 10
        net = nn.Linear(1, 1)
        opt = paddle.optimizer.SGD(learning_rate=0.1, parameters=net.parameters())
        mse = nn.MSELoss()
        xt, yt = paddle.to_tensor(x), paddle.to_tensor(y)
        for _ in range(500):
            loss = mse(net(xt), yt)
            loss.backward()
            opt.step()
            opt.clear_grad()
        self.assertEqual(loss.shape, [])
        w = float(net.weight.numpy().reshape(-1)[0])
        b = float(net.bias.numpy().reshape(-1)[0])
        self.assertAlmostEqual(w, 2.0, delta=0.05)
        self.assertAlmostEqual(b, 10.0, delta=0.05)


class TestDigits(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix='eddy_digits_')
        cls.ntrain, cls.ntest = write_digits_as_mnist(cls.tmp)
        cls.train, cls.test = mnist_pair(cls.tmp)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_dataset_reads_the_written_files(self):
        self.assertEqual(len(self.train), self.ntrain)
        self.assertEqual(len(self.test), self.ntest)
        img, label = self.train[0]
        self.assertEqual(img.shape, (1, 28, 28))
        self.assertEqual(img.dtype, np.float32)
        self.assertEqual(label.shape, (1,))
        self.assertEqual(label.dtype, np.int64)
        self.assertGreaterEqual(img.min(), -1.0)
        self.assertLessEqual(img.max(), 1.0)

    def _save_load_same_predictions(self, model_fn, net, x):
        path = os.path.join(self.tmp, 'ckpt', type(net).__name__)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        paddle.save(net.state_dict(), path + '.pdparams')
        net.eval()
        with paddle.no_grad():
            before = net(x).numpy()
        other = model_fn()
        other.set_state_dict(paddle.load(path + '.pdparams'))
        other.eval()
        with paddle.no_grad():
            after = other(x).numpy()
        np.testing.assert_array_equal(before, after)

    def _first_test_batch(self):
        x = np.stack([self.test[i][0] for i in range(16)])
        return paddle.to_tensor(x)

    def test_mlp_manual_loop_reaches_95_percent(self):
        paddle.seed(2)
        np.random.seed(2)
        net = MLP()
        manual_train(net, self.train, epochs=15)
        acc = manual_accuracy(net, self.test)
        self.assertGreaterEqual(acc, 0.95, "MLP manual loop test accuracy {}".format(acc))
        self._save_load_same_predictions(MLP, net, self._first_test_batch())

    def test_mlp_with_paddle_model_reaches_95_percent(self):
        paddle.seed(3)
        np.random.seed(3)
        net = MLP()
        model = paddle.Model(net)
        model.prepare(paddle.optimizer.Adam(learning_rate=1e-3, parameters=net.parameters()),
                      nn.CrossEntropyLoss(), paddle.metric.Accuracy())
        buf = io.StringIO()
        with redirect_stdout(buf):
            model.fit(self.train, epochs=15, batch_size=32, verbose=2, log_freq=1000)
            result = model.evaluate(self.test, batch_size=64, verbose=0)
        out = buf.getvalue()
        self.assertIn('Epoch 1/15', out)
        self.assertIn('Epoch 15/15', out)
        self.assertRegex(out, r'step \d+/\d+ - loss: [0-9.e+-]+ - acc: [0-9.]+ - \d+[mu]?s/step')
        self.assertGreaterEqual(result['acc'], 0.95, "Model test accuracy {}".format(result))
        self.assertEqual(len(result['loss']), 1)
        # Model.save / Model.load round trip: identical predictions
        path = os.path.join(self.tmp, 'model', 'mlp')
        model.save(path)
        self.assertTrue(os.path.exists(path + '.pdparams'))
        self.assertTrue(os.path.exists(path + '.pdopt'))
        preds = model.predict(self.test, batch_size=64, stack_outputs=True, verbose=0)
        net2 = MLP()
        model2 = paddle.Model(net2)
        model2.prepare(paddle.optimizer.Adam(learning_rate=1e-3, parameters=net2.parameters()),
                       nn.CrossEntropyLoss(), paddle.metric.Accuracy())
        model2.load(path)
        preds2 = model2.predict(self.test, batch_size=64, stack_outputs=True, verbose=0)
        self.assertEqual(preds[0].shape, (self.ntest, 10))
        np.testing.assert_array_equal(preds[0], preds2[0])

    def test_lenet_manual_loop_reaches_95_percent(self):
        paddle.seed(4)
        np.random.seed(4)
        net = paddle.vision.models.LeNet()
        manual_train(net, self.train, epochs=8, batch_size=32)
        acc = manual_accuracy(net, self.test)
        self.assertGreaterEqual(acc, 0.95, "LeNet manual loop test accuracy {}".format(acc))
        self._save_load_same_predictions(paddle.vision.models.LeNet, net,
                                         self._first_test_batch())

    def test_lenet_with_paddle_model_reaches_95_percent(self):
        paddle.seed(5)
        np.random.seed(5)
        net = paddle.vision.models.LeNet()
        model = paddle.Model(net, inputs=[paddle.static.InputSpec([None, 1, 28, 28],
                                                                  'float32', 'x')],
                             labels=[paddle.static.InputSpec([None, 1], 'int64', 'label')])
        model.prepare(paddle.optimizer.Adam(learning_rate=1e-3, parameters=net.parameters()),
                      nn.CrossEntropyLoss(), paddle.metric.Accuracy())
        buf = io.StringIO()
        with redirect_stdout(buf):
            model.fit(self.train, self.test, epochs=8, batch_size=32, verbose=1)
            result = model.evaluate(self.test, batch_size=64, verbose=0)
        out = buf.getvalue()
        self.assertIn('Eval begin...', out)
        self.assertIn('Eval samples: {}'.format(self.ntest), out)
        self.assertRegex(out, r'step +\d+/\d+ \[=+\] - loss: [0-9.e+-]+ - acc: [0-9.]+')
        self.assertGreaterEqual(result['acc'], 0.95, "LeNet Model accuracy {}".format(result))


class TestQuickStartUnmodified(unittest.TestCase):
    """Paddle's 'quick start' program as its docs print it, with the data in
    the default cache directory (~/.cache/paddle/dataset/mnist)."""

    def test_quick_start_program_runs(self):
        from unittest import mock
        with tempfile.TemporaryDirectory() as home:
            write_digits_as_mnist(os.path.join(home, '.cache', 'paddle', 'dataset', 'mnist'))
            buf = io.StringIO()
            with mock.patch.dict(os.environ, {'HOME': home}), redirect_stdout(buf):
                paddle.seed(7)
                transform = Normalize(mean=[127.5], std=[127.5], data_format='CHW')
                train_dataset = paddle.vision.datasets.MNIST(mode='train', transform=transform)
                test_dataset = paddle.vision.datasets.MNIST(mode='test', transform=transform)
                lenet = paddle.vision.models.LeNet(num_classes=10)
                model = paddle.Model(lenet)
                model.prepare(paddle.optimizer.Adam(parameters=model.parameters()),
                              paddle.nn.CrossEntropyLoss(),
                              paddle.metric.Accuracy())
                model.fit(train_dataset, epochs=3, batch_size=64, verbose=1)
                result = model.evaluate(test_dataset, batch_size=64, verbose=1)
                model.save(os.path.join(home, 'output', 'mnist'))
                model.load(os.path.join(home, 'output', 'mnist'))
                img, label = test_dataset[0]
                img_batch = np.expand_dims(img.astype('float32'), axis=0)
                out = model.predict_batch(img_batch)[0]
                pred_label = out.argmax()
                print('true label: {}, pred label: {}'.format(label[0], pred_label))
            text = buf.getvalue()
        self.assertIn('Epoch 3/3', text)
        self.assertIn('Eval samples: {}'.format(len(test_dataset)), text)
        self.assertEqual(out.shape, (1, 10))
        self.assertGreater(result['acc'], 0.8)
        self.assertRegex(text, r'true label: \d, pred label: \d')


if __name__ == '__main__':
    unittest.main()
