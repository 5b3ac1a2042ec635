"""Imikolov: the Penn Treebank language-model data (simple-examples.tgz)."""
import collections
import tarfile

import numpy as np

from ...io import Dataset
from ._common import check_mode, data_file as _data_file

_TRAIN = './simple-examples/data/ptb.train.txt'
_VALID = './simple-examples/data/ptb.valid.txt'


def _member(tf, name):
    for cand in (name, name[2:]):
        try:
            return tf.extractfile(cand)
        except KeyError:
            continue
    raise FileNotFoundError("Imikolov: {} is not in the archive".format(name))


class Imikolov(Dataset):
    """Imikolov(data_file=None, data_type='NGRAM', window_size=-1,
    mode='train', min_word_freq=50, download=True). The dictionary holds
    the words of ptb.train and ptb.valid seen more than min_word_freq times
    (with '<s>' and '<e>' counted once a line; most frequent first, '<unk>'
    last). NGRAM items are window_size word ids; SEQ items are
    (['<s>'] + ids, ids + ['<e>']), lines longer than window_size (when > 0)
    skipped. mode 'train' reads ptb.train, 'test' ptb.valid. Words are
    decoded as UTF-8. data_file defaults to
    ~/.cache/paddle/dataset/imikolov/simple-examples.tgz."""

    def __init__(self, data_file=None, data_type='NGRAM', window_size=-1, mode='train',
                 min_word_freq=50, download=True):
        self.data_type = str(data_type).upper()
        if self.data_type not in ('NGRAM', 'SEQ'):
            raise ValueError("data_type should be 'NGRAM' or 'SEQ', but got {}".format(
                data_type))
        if self.data_type == 'NGRAM' and window_size < 1:
            raise ValueError("window_size should be at least 1 for NGRAM data")
        self.window_size = window_size
        self.mode = check_mode(mode, ('train', 'test'))
        self.min_word_freq = min_word_freq
        self.data_file = _data_file('Imikolov', data_file, 'imikolov', 'simple-examples.tgz')
        self.word_idx = self._build_work_dict(min_word_freq)
        self._load_anno()

    @staticmethod
    def word_count(f, word_freq=None):
        if word_freq is None:
            word_freq = collections.defaultdict(int)
        for line in f:
            for w in line.decode('utf-8').strip().split():
                word_freq[w] += 1
            word_freq['<s>'] += 1
            word_freq['<e>'] += 1
        return word_freq

    def _build_work_dict(self, cutoff):
        with tarfile.open(self.data_file) as tf:
            word_freq = self.word_count(_member(tf, _VALID),
                                        self.word_count(_member(tf, _TRAIN)))
        word_freq.pop('<unk>', None)
        items = sorted([x for x in word_freq.items() if x[1] > cutoff],
                       key=lambda x: (-x[1], x[0]))
        word_idx = {w: i for i, (w, _) in enumerate(items)}
        word_idx['<unk>'] = len(items)
        return word_idx

    def _load_anno(self):
        self.data = []
        unk = self.word_idx['<unk>']
        with tarfile.open(self.data_file) as tf:
            f = _member(tf, _TRAIN if self.mode == 'train' else _VALID)
            for line in f:
                words = line.decode('utf-8').strip().split()
                if self.data_type == 'NGRAM':
                    words = ['<s>'] + words + ['<e>']
                    if len(words) >= self.window_size:
                        ids = [self.word_idx.get(w, unk) for w in words]
                        for i in range(self.window_size, len(ids) + 1):
                            self.data.append(tuple(ids[i - self.window_size:i]))
                else:
                    ids = [self.word_idx.get(w, unk) for w in words]
                    src = [self.word_idx['<s>']] + ids
                    trg = ids + [self.word_idx['<e>']]
                    if 0 < self.window_size < len(src):
                        continue
                    self.data.append((src, trg))

    def __getitem__(self, idx):
        return tuple(np.array(d) for d in self.data[idx])

    def __len__(self):
        return len(self.data)
