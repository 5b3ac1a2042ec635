"""UCIHousing: Boston housing prices (housing.data: 14 numbers a row)."""
import numpy as np

from ...io import Dataset
from ._common import check_mode, data_file as _data_file

FEATURE_NUM = 14


class UCIHousing(Dataset):
    """UCIHousing(data_file=None, mode='train', download=True): features
    normalised as Paddle does ((x - mean) / (max - min) per column over the
    whole file), the first 80% of rows for 'train', the rest for 'test'.
    Items: (13 features, [price]) in the default float dtype.
    data_file defaults to ~/.cache/paddle/dataset/uci_housing/housing.data."""

    def __init__(self, data_file=None, mode='train', download=True):
        self.mode = check_mode(mode, ('train', 'test'))
        self.data_file = _data_file('UCIHousing', data_file, 'uci_housing',
                                    'housing.data')
        self._load_data()
        import paddle
        self.dtype = paddle.get_default_dtype()

    def _load_data(self, feature_num=FEATURE_NUM, ratio=0.8):
        data = np.fromfile(self.data_file, sep=' ')
        if data.size == 0 or data.size % feature_num:
            raise ValueError("UCIHousing: {} does not hold rows of {} numbers".format(
                self.data_file, feature_num))
        data = data.reshape(data.shape[0] // feature_num, feature_num)
        maximums, minimums = data.max(axis=0), data.min(axis=0)
        avgs = data.sum(axis=0) / data.shape[0]
        for i in range(feature_num - 1):
            span = maximums[i] - minimums[i]
            data[:, i] = (data[:, i] - avgs[i]) / (span if span else 1.0)
        offset = int(data.shape[0] * ratio)
        self.data = data[:offset] if self.mode == 'train' else data[offset:]

    def __getitem__(self, idx):
        data = self.data[idx]
        return np.array(data[:-1]).astype(self.dtype), np.array(data[-1:]).astype(self.dtype)

    def __len__(self):
        return len(self.data)
