"""VOC2012: the segmentation split of VOCtrainval_11-May-2012.tar."""
import io
import os

import numpy as np

from ...io import Dataset
from ..image import get_image_backend
from ._common import _data_home, find_files
from ._tar import TarMembers

SET_FILE = 'VOCdevkit/VOC2012/ImageSets/Segmentation/{}.txt'
DATA_FILE = 'VOCdevkit/VOC2012/JPEGImages/{}.jpg'
LABEL_FILE = 'VOCdevkit/VOC2012/SegmentationClass/{}.png'
# Paddle's mapping
MODE_FLAG_MAP = {'train': 'trainval', 'test': 'train', 'valid': 'val'}


class VOC2012(Dataset):
    """VOC2012(data_file=None, mode='train', transform=None, download=True,
    backend=None): items are (image, label map) — PIL images, or float
    arrays with backend 'cv2'. data_file defaults to
    ~/.cache/paddle/dataset/voc2012/VOCtrainval_11-May-2012.tar."""

    def __init__(self, data_file=None, mode='train', transform=None, download=True,
                 backend=None):
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
        self.data_file = data_file or os.path.join(_data_home(), 'voc2012',
                                                   'VOCtrainval_11-May-2012.tar')
        find_files('VOC2012', [self.data_file])
        self.transform = transform
        self._tar = TarMembers(self.data_file)
        names = self._tar.read(SET_FILE.format(self.flag), 'VOC2012').decode('utf-8').split()
        self.data = [DATA_FILE.format(n) for n in names]
        self.labels = [LABEL_FILE.format(n) for n in names]
        import paddle
        self.dtype = paddle.get_default_dtype()

    def __getitem__(self, idx):
        from PIL import Image
        data = Image.open(io.BytesIO(self._tar.read(self.data[idx], 'VOC2012')))
        label = Image.open(io.BytesIO(self._tar.read(self.labels[idx], 'VOC2012')))
        if self.backend == 'cv2':
            data, label = np.array(data), np.array(label)
        if self.transform is not None:
            data = self.transform(data)
        if self.backend == 'cv2':
            return data.astype(self.dtype), label.astype(self.dtype)
        return data, label

    def __len__(self):
        return len(self.data)
