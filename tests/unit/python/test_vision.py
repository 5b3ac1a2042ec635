"""paddle.vision: MNIST/FashionMNIST IDX files, Cifar10 tarballs, transforms,
LeNet."""
import gzip
import io
import os
import pickle
import struct
import tarfile
import tempfile
import unittest
from unittest import mock

import numpy as np
from PIL import Image

import paddle
import paddle.vision.transforms as T
from paddle.vision.datasets import MNIST, Cifar10, FashionMNIST


def write_idx(root, prefix, images, labels):
    os.makedirs(root, exist_ok=True)
    with gzip.open(os.path.join(root, prefix + '-images-idx3-ubyte.gz'), 'wb') as f:
        f.write(struct.pack('>IIII', 2051, len(images), 28, 28))
        f.write(images.astype(np.uint8).tobytes())
    with gzip.open(os.path.join(root, prefix + '-labels-idx1-ubyte.gz'), 'wb') as f:
        f.write(struct.pack('>II', 2049, len(labels)))
        f.write(labels.astype(np.uint8).tobytes())


class TestMNIST(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.home = self.tmp.name
        rs = np.random.RandomState(0)
        self.images = rs.randint(0, 256, size=(5, 28, 28)).astype(np.uint8)
        self.labels = np.array([3, 1, 4, 1, 5], np.uint8)
        self.root = os.path.join(self.home, '.cache', 'paddle', 'dataset', 'mnist')
        write_idx(self.root, 'train', self.images, self.labels)
        write_idx(self.root, 't10k', self.images[:2], self.labels[:2])

    def tearDown(self):
        self.tmp.cleanup()

    def test_reads_default_cache_location_with_pil_backend(self):
        with mock.patch.dict(os.environ, {'HOME': self.home}):
            ds = MNIST(mode='train')
            test = MNIST(mode='test')
        self.assertEqual(len(ds), 5)
        self.assertEqual(len(test), 2)
        img, label = ds[2]
        self.assertIsInstance(img, Image.Image)
        self.assertEqual(img.size, (28, 28))
        np.testing.assert_array_equal(np.asarray(img), self.images[2])
        self.assertEqual(label.shape, (1,))
        self.assertEqual(label.dtype, np.int64)
        self.assertEqual(int(label[0]), 4)

    def test_cv2_backend_and_tutorial_transform(self):
        t = T.Normalize(mean=[127.5], std=[127.5], data_format='CHW')
        ds = MNIST(image_path=os.path.join(self.root, 'train-images-idx3-ubyte.gz'),
                   label_path=os.path.join(self.root, 'train-labels-idx1-ubyte.gz'),
                   transform=t, backend='cv2')
        img, _ = ds[0]
        self.assertEqual(img.shape, (1, 28, 28))
        self.assertEqual(img.dtype, np.float32)
        np.testing.assert_allclose(img[0], (self.images[0] - 127.5) / 127.5, rtol=1e-6)

    def test_totensor_pipeline_through_dataloader(self):
        t = T.Compose([T.ToTensor(), T.Normalize(mean=[0.5], std=[0.5])])
        with mock.patch.dict(os.environ, {'HOME': self.home}):
            ds = MNIST(mode='train', transform=t)
        x, y = next(iter(paddle.io.DataLoader(ds, batch_size=4)))
        self.assertEqual(x.shape, [4, 1, 28, 28])
        self.assertEqual(y.shape, [4, 1])
        np.testing.assert_allclose(x.numpy()[0, 0], (self.images[0] / 255.0 - 0.5) / 0.5,
                                   rtol=1e-5, atol=1e-6)

    def test_fashion_mnist_reads_its_own_directory(self):
        root = os.path.join(self.home, '.cache', 'paddle', 'dataset', 'fashion-mnist')
        write_idx(root, 't10k', self.images[1:4], np.array([9, 8, 7], np.uint8))
        with mock.patch.dict(os.environ, {'HOME': self.home}):
            ds = FashionMNIST(mode='test', backend='cv2')
        self.assertEqual(len(ds), 3)
        img, label = ds[0]
        self.assertEqual(img.shape, (28, 28))
        np.testing.assert_array_equal(img, self.images[1].astype(np.float32))
        self.assertEqual(int(label[0]), 9)

    def test_tutorial_manual_loop_over_dataloader_call(self):
        t = T.Compose([T.ToTensor()])
        with mock.patch.dict(os.environ, {'HOME': self.home}):
            ds = MNIST(mode='train', transform=t)
        loader = paddle.io.DataLoader(ds, batch_size=2, shuffle=True, drop_last=True)
        n = 0
        for batch_id, data in enumerate(loader()):
            x_data, y_data = data[0], data[1]
            self.assertEqual(x_data.shape, [2, 1, 28, 28])
            self.assertEqual(y_data.shape, [2, 1])
            n += 1
        self.assertEqual(n, 2)

    def test_missing_files_error_names_them(self):
        empty = os.path.join(self.home, 'nothing')
        with mock.patch.dict(os.environ, {'HOME': empty}):
            with self.assertRaises(FileNotFoundError) as cm:
                MNIST(mode='test')
            msg = str(cm.exception)
            self.assertIn('t10k-images-idx3-ubyte.gz', msg)
            self.assertIn('t10k-labels-idx1-ubyte.gz', msg)
            with self.assertRaises(FileNotFoundError) as cm:
                FashionMNIST(mode='train')
            self.assertIn(os.path.join('fashion-mnist', 'train-images-idx3-ubyte.gz'),
                          str(cm.exception))

    def test_bad_mode_and_corrupt_file(self):
        with self.assertRaises(ValueError):
            MNIST(mode='valid')
        bad = os.path.join(self.home, 'bad.gz')
        with gzip.open(bad, 'wb') as f:
            f.write(b'\x00' * 20)
        with self.assertRaises(ValueError):
            MNIST(image_path=bad, label_path=bad)


class TestCifar(unittest.TestCase):
    def test_reads_python_pickle_tarball(self):
        rs = np.random.RandomState(1)
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, 'cifar-10-python.tar.gz')
            with tarfile.open(path, 'w:gz') as tar:
                for name, n in (('data_batch_1', 3), ('data_batch_2', 2), ('test_batch', 4)):
                    payload = pickle.dumps({b'data': rs.randint(0, 256, (n, 3072)).astype(
                        np.uint8), b'labels': list(range(n))})
                    info = tarfile.TarInfo('cifar-10-batches-py/' + name)
                    info.size = len(payload)
                    tar.addfile(info, io.BytesIO(payload))
            train = Cifar10(data_file=path, mode='train', backend='cv2')
            test = Cifar10(data_file=path, mode='test', transform=T.ToTensor())
            self.assertEqual(len(train), 5)
            self.assertEqual(len(test), 4)
            img, label = train[0]
            self.assertEqual(img.shape, (32, 32, 3))
            self.assertEqual(label.dtype, np.int64)
            timg, _ = test[1]
            self.assertEqual(timg.shape, [3, 32, 32])
        with self.assertRaises(FileNotFoundError) as cm:
            Cifar10(data_file='/nonexistent/cifar-10-python.tar.gz')
        self.assertIn('cifar-10-python.tar.gz', str(cm.exception))


class TestTransforms(unittest.TestCase):
    def test_to_tensor_scales_uint8_and_moves_channels(self):
        arr = np.arange(24, dtype=np.uint8).reshape(2, 4, 3)
        out = T.ToTensor()(arr)
        self.assertEqual(out.shape, [3, 2, 4])
        np.testing.assert_allclose(out.numpy(), arr.transpose(2, 0, 1) / 255.0, rtol=1e-6)
        f = T.ToTensor()(np.ones((2, 2), np.float32) * 3)
        self.assertEqual(f.shape, [1, 2, 2])
        np.testing.assert_allclose(f.numpy(), 3.0)

    def test_normalize_numpy_hwc_and_tensor(self):
        arr = np.full((2, 2, 3), 10.0, np.float32)
        out = T.Normalize(mean=[1, 2, 3], std=[1, 2, 3], data_format='HWC')(arr)
        np.testing.assert_allclose(out[0, 0], [9.0, 4.0, 7.0 / 3], rtol=1e-6)
        ten = T.Normalize(mean=0.5, std=0.5)(paddle.ones([3, 2, 2]))
        np.testing.assert_allclose(ten.numpy(), 1.0)

    def test_resize_and_transpose(self):
        img = Image.fromarray(np.zeros((10, 20), np.uint8))
        self.assertEqual(T.Resize((5, 8))(img).size, (8, 5))
        self.assertEqual(T.Resize(5)(img).size, (10, 5))
        arr = np.random.rand(8, 8, 3).astype(np.float32)
        self.assertEqual(T.Resize((4, 6))(arr).shape, (4, 6, 3))
        self.assertEqual(T.Transpose()(np.zeros((4, 5, 3))).shape, (3, 4, 5))
        self.assertEqual(T.Transpose()(np.zeros((4, 5))).shape, (1, 4, 5))
        with self.assertRaises(ValueError):
            T.Resize((1, 2, 3))

    def test_compose_and_augmentations(self):
        t = T.Compose([T.Resize(12), T.CenterCrop(8), T.RandomHorizontalFlip(1.0),
                       T.ToTensor()])
        out = t(Image.fromarray(np.zeros((16, 16, 3), np.uint8)))
        self.assertEqual(out.shape, [3, 8, 8])
        self.assertEqual(T.RandomCrop(4)(np.zeros((6, 6, 3))).shape, (4, 4, 3))
        with self.assertRaises(TypeError):
            T.ToTensor()('not an image')


class TestLeNet(unittest.TestCase):
    def test_output_shape_and_parameter_count(self):
        net = paddle.vision.models.LeNet()
        self.assertEqual(net(paddle.rand([2, 1, 28, 28])).shape, [2, 10])
        n = sum(int(np.prod(p.shape)) for p in net.parameters())
        self.assertEqual(n, 61610)
        feats = paddle.vision.LeNet(num_classes=0)
        self.assertEqual(feats(paddle.rand([1, 1, 28, 28])).shape, [1, 16, 5, 5])

    def test_resnet_and_vgg(self):
        def trainable(net):
            return sum(int(np.prod(p.shape)) for p in net.parameters() if not p.stop_gradient)
        self.assertEqual(trainable(paddle.vision.models.resnet18()), 11689512)
        self.assertEqual(trainable(paddle.vision.models.resnet50()), 25557032)
        net = paddle.vision.models.resnet18(num_classes=10)
        self.assertEqual(net(paddle.rand([2, 3, 32, 32])).shape, [2, 10])
        vgg = paddle.vision.models.vgg11(num_classes=5, batch_norm=True)
        self.assertEqual(vgg(paddle.rand([1, 3, 32, 32])).shape, [1, 5])
        with self.assertRaises(ValueError) as cm:
            paddle.vision.models.resnet50(pretrained=True)
        self.assertIn('no network', str(cm.exception))


if __name__ == '__main__':
    unittest.main()
