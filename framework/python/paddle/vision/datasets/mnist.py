"""MNIST and FashionMNIST from Paddle's gzipped IDX files."""
import gzip
import os
import struct

import numpy as np

from ...io import Dataset
from ..image import get_image_backend
from ._common import _data_home, find_files


class MNIST(Dataset):
    """MNIST(image_path=None, label_path=None, mode='train', transform=None,
    download=True, backend=None). Files default to
    ~/.cache/paddle/dataset/mnist/{train,t10k}-{images-idx3,labels-idx1}-ubyte.gz.
    Items are (image, label): image a PIL 'L' image (backend 'pil') or a
    float32 [28, 28] array (backend 'cv2'), after transform; label int64 (1,)."""
    NAME = 'mnist'

    def __init__(self, image_path=None, label_path=None, mode='train', transform=None,
                 download=True, backend=None):
        if not isinstance(mode, str) or mode.lower() not in ('train', 'test'):
            raise ValueError("mode should be 'train' or 'test', but got {}".format(mode))
        if backend is None:
            backend = get_image_backend()
        if backend not in ('pil', 'cv2'):
            raise ValueError("Expected backend are one of ['pil', 'cv2'], but got {}"
                             .format(backend))
        self.backend = backend
        self.mode = mode.lower()
        prefix = 'train' if self.mode == 'train' else 't10k'
        base = os.path.join(_data_home(), self.NAME)
        if image_path is None:
            image_path = os.path.join(base, prefix + '-images-idx3-ubyte.gz')
        if label_path is None:
            label_path = os.path.join(base, prefix + '-labels-idx1-ubyte.gz')
        find_files(self.__class__.__name__, [image_path, label_path])
        self.image_path = image_path
        self.label_path = label_path
        self.transform = transform
        self._parse_dataset()
        import paddle
        self.dtype = paddle.get_default_dtype()

    @staticmethod
    def _read(path):
        with open(path, 'rb') as f:
            head = f.read(2)
        opener = gzip.open if head == b'\x1f\x8b' else open
        with opener(path, 'rb') as f:
            return f.read()

    def _parse_dataset(self):
        img_buf = self._read(self.image_path)
        lab_buf = self._read(self.label_path)
        if len(img_buf) < 16 or len(lab_buf) < 8:
            raise ValueError("{}: {} or {} is too short to be an IDX file".format(
                self.__class__.__name__, self.image_path, self.label_path))
        magic_img, n_img, rows, cols = struct.unpack_from('>IIII', img_buf, 0)
        magic_lab, n_lab = struct.unpack_from('>II', lab_buf, 0)
        if magic_img != 2051:
            raise ValueError("{}: {} is not an IDX image file (magic {})".format(
                self.__class__.__name__, self.image_path, magic_img))
        if magic_lab != 2049:
            raise ValueError("{}: {} is not an IDX label file (magic {})".format(
                self.__class__.__name__, self.label_path, magic_lab))
        if n_img != n_lab:
            raise ValueError("{}: {} images but {} labels".format(self.__class__.__name__,
                                                                  n_img, n_lab))
        need = 16 + n_img * rows * cols
        if len(img_buf) < need or len(lab_buf) < 8 + n_lab:
            raise ValueError("{}: truncated IDX files {} / {}".format(
                self.__class__.__name__, self.image_path, self.label_path))
        self.rows, self.cols = rows, cols
        self.images = np.frombuffer(img_buf, dtype=np.uint8, count=n_img * rows * cols,
                                    offset=16).reshape(n_img, rows * cols).astype('float32')
        self.labels = np.frombuffer(lab_buf, dtype=np.uint8, count=n_lab,
                                    offset=8).astype('int64').reshape(n_lab, 1)

    def __getitem__(self, idx):
        image, label = self.images[idx], self.labels[idx]
        image = np.reshape(image, [self.rows, self.cols])
        if self.backend == 'pil':
            from PIL import Image
            image = Image.fromarray(image.astype('uint8'), mode='L')
        if self.transform is not None:
            image = self.transform(image)
        if self.backend == 'pil':
            return image, label.astype('int64')
        if isinstance(image, np.ndarray):
            image = image.astype(self.dtype)
        return image, label.astype('int64')

    def __len__(self):
        return len(self.labels)


class FashionMNIST(MNIST):
    """Same format as MNIST under ~/.cache/paddle/dataset/fashion-mnist/."""
    NAME = 'fashion-mnist'
