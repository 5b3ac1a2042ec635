"""Cifar10 / Cifar100 from the python-pickle tarballs."""
import os
import pickle
import tarfile

import numpy as np

from ...io import Dataset
from ..image import get_image_backend
from ._common import _data_home, find_files


class Cifar10(Dataset):
    """Cifar10(data_file=None, mode='train', transform=None, download=True,
    backend=None); data_file defaults to
    ~/.cache/paddle/dataset/cifar/cifar-10-python.tar.gz. Items are
    (image HWC uint8 as PIL or float32 array, label int64 scalar)."""
    FILE = 'cifar-10-python.tar.gz'
    _train_flag = 'data_batch'
    _test_flag = 'test_batch'
    _label_key = b'labels'

    def __init__(self, data_file=None, mode='train', transform=None, download=True,
                 backend=None):
        if not isinstance(mode, str) or mode.lower() not in ('train', 'test'):
            raise ValueError("mode should be 'train' or 'test', but got {}".format(mode))
        self.mode = mode.lower()
        if backend is None:
            backend = get_image_backend()
        if backend not in ('pil', 'cv2'):
            raise ValueError("Expected backend are one of ['pil', 'cv2'], but got {}"
                             .format(backend))
        self.backend = backend
        if data_file is None:
            data_file = os.path.join(_data_home(), 'cifar', self.FILE)
        find_files(self.__class__.__name__, [data_file])
        self.data_file = data_file
        self.transform = transform
        self._load_data()
        import paddle
        self.dtype = paddle.get_default_dtype()

    def _load_data(self):
        flag = self._train_flag if self.mode == 'train' else self._test_flag
        images, labels = [], []
        try:
            with tarfile.open(self.data_file, mode='r') as f:
                names = sorted(m.name for m in f if flag in m.name)
                for name in names:
                    batch = pickle.load(f.extractfile(name), encoding='bytes')
                    data = batch[b'data']
                    labs = batch.get(self._label_key, batch.get(b'labels',
                                                                batch.get(b'fine_labels')))
                    if labs is None:
                        raise ValueError("{}: {} has no labels".format(self.__class__.__name__,
                                                                        name))
                    images.append(np.asarray(data, dtype=np.uint8).reshape(-1, 3072))
                    labels.append(np.asarray(labs, dtype=np.int64))
        except (tarfile.TarError, pickle.UnpicklingError, EOFError) as e:
            raise ValueError("{}: cannot read {}: {}".format(self.__class__.__name__,
                                                              self.data_file, e))
        if not images:
            raise ValueError("{}: no '{}' members in {}".format(self.__class__.__name__, flag,
                                                                 self.data_file))
        self.images = np.concatenate(images, 0)
        self.labels = np.concatenate(labels, 0)
        self.data = list(range(len(self.labels)))

    def __getitem__(self, idx):
        image = self.images[idx].reshape(3, 32, 32).transpose(1, 2, 0)
        label = np.array(self.labels[idx]).astype('int64')
        if self.backend == 'pil':
            from PIL import Image
            image = Image.fromarray(image.astype('uint8'))
        if self.transform is not None:
            image = self.transform(image)
        if self.backend == 'pil':
            return image, label
        if isinstance(image, np.ndarray):
            image = image.astype(self.dtype)
        return image, label

    def __len__(self):
        return len(self.labels)


class Cifar100(Cifar10):
    FILE = 'cifar-100-python.tar.gz'
    _train_flag = 'train'
    _test_flag = 'test'
    _label_key = b'fine_labels'
