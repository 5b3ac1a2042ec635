"""WMT14: the shrunk English-French set Paddle ships (wmt14.tgz)."""
import tarfile

import numpy as np

from ...io import Dataset
from ._common import check_mode, data_file as _data_file

START = "<s>"
END = "<e>"
UNK = "<unk>"
UNK_IDX = 2


class WMT14(Dataset):
    """WMT14(data_file=None, mode='train', dict_size=-1, download=True):
    the archive holds src.dict, trg.dict (one word a line, the line number
    its id) and train/train, test/test, gen/gen ("source\\ttarget" lines).
    The first dict_size words of each dictionary are used (all when
    dict_size <= 0); in 'train' sequences over 80 ids are dropped. Items:
    (source ids with <s>/<e>, <s> + target ids, target ids + <e>).
    data_file defaults to ~/.cache/paddle/dataset/wmt14/wmt14.tgz."""

    def __init__(self, data_file=None, mode='train', dict_size=-1, download=True):
        self.mode = check_mode(mode, ('train', 'test', 'gen'))
        self.data_file = _data_file('WMT14', data_file, 'wmt14', 'wmt14.tgz')
        self.dict_size = dict_size
        self._load_data()

    def _load_data(self):
        def to_dict(fd, size):
            out = {}
            for n, line in enumerate(fd):
                if size > 0 and n >= size:
                    break
                out[line.strip().decode()] = n
            return out
        self.src_ids, self.trg_ids, self.trg_ids_next = [], [], []
        with tarfile.open(self.data_file, mode='r') as f:
            names = [m.name for m in f if m.name.endswith('src.dict')]
            if len(names) != 1:
                raise ValueError("WMT14: the archive should hold one src.dict, found {}".format(
                    len(names)))
            self.src_dict = to_dict(f.extractfile(names[0]), self.dict_size)
            names = [m.name for m in f if m.name.endswith('trg.dict')]
            if len(names) != 1:
                raise ValueError("WMT14: the archive should hold one trg.dict, found {}".format(
                    len(names)))
            self.trg_dict = to_dict(f.extractfile(names[0]), self.dict_size)
            for name in [m.name for m in f if m.name.endswith('{0}/{0}'.format(self.mode))]:
                for line in f.extractfile(name):
                    parts = line.decode().strip().split('\t')
                    if len(parts) != 2:
                        continue
                    src = [self.src_dict.get(w, UNK_IDX)
                           for w in [START] + parts[0].split() + [END]]
                    trg = [self.trg_dict.get(w, UNK_IDX) for w in parts[1].split()]
                    if self.mode == 'train' and (len(src) > 80 or len(trg) > 80):
                        continue
                    self.src_ids.append(src)
                    self.trg_ids.append([self.trg_dict.get(START, UNK_IDX)] + trg)
                    self.trg_ids_next.append(trg + [self.trg_dict.get(END, UNK_IDX)])

    def __getitem__(self, idx):
        return (np.array(self.src_ids[idx]), np.array(self.trg_ids[idx]),
                np.array(self.trg_ids_next[idx]))

    def __len__(self):
        return len(self.src_ids)

    def get_dict(self, reverse=False):
        src, trg = self.src_dict, self.trg_dict
        if reverse:
            src = {v: k for k, v in src.items()}
            trg = {v: k for k, v in trg.items()}
        return src, trg
