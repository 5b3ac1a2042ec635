"""WMT16: the Multi30k English-German set (wmt16.tar.gz)."""
import collections
import tarfile

import numpy as np

from ...io import Dataset
from ._common import check_mode, data_file as _data_file

START_MARK = "<s>"
END_MARK = "<e>"
UNK_MARK = "<unk>"


class WMT16(Dataset):
    """WMT16(data_file=None, mode='train', src_dict_size=-1,
    trg_dict_size=-1, lang='en', download=True): the archive holds
    wmt16/train, wmt16/test and wmt16/val with "english\\tgerman" lines.
    Each dictionary is <s>, <e>, <unk> and then the training words of its
    language by falling count, cut at the dict size (all when -1); Paddle
    builds both from the source language by mistake, this build uses each
    side's own words. Items: (<s> + source ids + <e>, <s> + target ids,
    target ids + <e>). data_file defaults to
    ~/.cache/paddle/dataset/wmt16/wmt16.tar.gz."""

    def __init__(self, data_file=None, mode='train', src_dict_size=-1, trg_dict_size=-1,
                 lang='en', download=True):
        self.mode = check_mode(mode, ('train', 'test', 'val'))
        if lang not in ('en', 'de'):
            raise ValueError("lang should be 'en' or 'de', but got {!r}".format(lang))
        self.lang = lang
        self.data_file = _data_file('WMT16', data_file, 'wmt16', 'wmt16.tar.gz')
        self.src_dict_size = src_dict_size
        self.trg_dict_size = trg_dict_size
        self.src_dict = self._build_dict(src_dict_size, lang)
        self.trg_dict = self._build_dict(trg_dict_size, 'de' if lang == 'en' else 'en')
        self._load_data()

    def _build_dict(self, dict_size, lang):
        counts = collections.defaultdict(int)
        col = 0 if lang == 'en' else 1
        with tarfile.open(self.data_file, mode='r') as f:
            for line in f.extractfile('wmt16/train'):
                parts = line.decode().strip().split('\t')
                if len(parts) != 2:
                    continue
                for w in parts[col].split():
                    counts[w] += 1
        words = [START_MARK, END_MARK, UNK_MARK]
        for w, _ in sorted(counts.items(), key=lambda x: x[1], reverse=True):
            if len(words) == dict_size:
                break
            words.append(w)
        return {w: i for i, w in enumerate(words)}

    def _load_data(self):
        start, end = self.src_dict[START_MARK], self.src_dict[END_MARK]
        unk = self.src_dict[UNK_MARK]
        src_col = 0 if self.lang == 'en' else 1
        self.src_ids, self.trg_ids, self.trg_ids_next = [], [], []
        with tarfile.open(self.data_file, mode='r') as f:
            for line in f.extractfile('wmt16/{}'.format(self.mode)):
                parts = line.decode().strip().split('\t')
                if len(parts) != 2:
                    continue
                src = [start] + [self.src_dict.get(w, unk) for w in parts[src_col].split()] + \
                    [end]
                trg = [self.trg_dict.get(w, unk) for w in parts[1 - src_col].split()]
                self.src_ids.append(src)
                self.trg_ids.append([start] + trg)
                self.trg_ids_next.append(trg + [end])

    def __getitem__(self, idx):
        return (np.array(self.src_ids[idx]), np.array(self.trg_ids[idx]),
                np.array(self.trg_ids_next[idx]))

    def __len__(self):
        return len(self.src_ids)

    def get_dict(self, lang, reverse=False):
        d = self.src_dict if lang == self.lang else self.trg_dict
        return {v: k for k, v in d.items()} if reverse else d
