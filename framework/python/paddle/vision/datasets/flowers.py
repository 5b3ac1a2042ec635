"""Flowers: Oxford 102 Flowers (102flowers.tgz, imagelabels.mat, setid.mat)."""
import io
import os

import numpy as np

from ...io import Dataset
from ..image import get_image_backend
from ._common import _data_home, find_files
from ._tar import TarMembers

# Paddle's mapping (train uses the larger 'tstid' split)
MODE_FLAG_MAP = {'train': 'tstid', 'test': 'trnid', 'valid': 'valid'}


class Flowers(Dataset):
    """Flowers(data_file=None, label_file=None, setid_file=None,
    mode='train', transform=None, download=True, backend=None): items are
    (image, [label] int64) with labels 1..102 as in imagelabels.mat; the
    files default to ~/.cache/paddle/dataset/flowers/."""

    def __init__(self, data_file=None, label_file=None, setid_file=None, mode='train',
                 transform=None, download=True, backend=None):
        if not isinstance(mode, str) or mode.lower() not in MODE_FLAG_MAP:
            raise ValueError("mode should be 'train', 'valid' or 'test', but got {}".format(
                mode))
        if backend is None:
            backend = get_image_backend()
        if backend not in ('pil', 'cv2'):
            raise ValueError("Expected backend are one of ['pil', 'cv2'], but got {}"
                             .format(backend))
        self.backend = backend
        self.flag = MODE_FLAG_MAP[mode.lower()]
        home = os.path.join(_data_home(), 'flowers')
        self.data_file = data_file or os.path.join(home, '102flowers.tgz')
        self.label_file = label_file or os.path.join(home, 'imagelabels.mat')
        self.setid_file = setid_file or os.path.join(home, 'setid.mat')
        find_files('Flowers', [self.data_file, self.label_file, self.setid_file])
        self.transform = transform
        import scipy.io as scio
        self.labels = scio.loadmat(self.label_file)['labels'][0]
        self.indexes = scio.loadmat(self.setid_file)[self.flag][0]
        self._tar = TarMembers(self.data_file)
        import paddle
        self.dtype = paddle.get_default_dtype()

    def __getitem__(self, idx):
        from PIL import Image
        index = int(self.indexes[idx])
        label = np.array([self.labels[index - 1]]).astype('int64')
        data = self._tar.read('jpg/image_%05d.jpg' % index, 'Flowers')
        image = Image.open(io.BytesIO(data))
        if self.backend == 'cv2':
            image = np.array(image)
        if self.transform is not None:
            image = self.transform(image)
        if self.backend == 'pil':
            return image, label
        return (image.astype(self.dtype) if isinstance(image, np.ndarray) else image), label

    def __len__(self):
        return len(self.indexes)
