"""Imdb: movie review sentiment from aclImdb_v1.tar.gz."""
import collections
import re
import string
import tarfile

import numpy as np

from ...io import Dataset
from ._common import check_mode, data_file as _data_file


class Imdb(Dataset):
    """Imdb(data_file=None, mode='train', cutoff=150, download=True): the
    dictionary holds words seen more than `cutoff` times in train and test
    (most frequent first, then alphabetical; '<unk>' last). Items:
    (word ids int64, [label]) with label 0 for pos and 1 for neg reviews.
    data_file defaults to ~/.cache/paddle/dataset/imdb/aclImdb_v1.tar.gz."""

    def __init__(self, data_file=None, mode='train', cutoff=150, download=True):
        self.mode = check_mode(mode, ('train', 'test'))
        self.data_file = _data_file('Imdb', data_file, 'imdb', 'aclImdb_v1.tar.gz')
        self.cutoff = cutoff
        self.word_idx = self._build_work_dict(cutoff)
        self._load_anno()

    def _tokenize(self, pattern):
        data = []
        punct = string.punctuation.encode('latin-1')
        with tarfile.open(self.data_file) as tarf:
            tf = tarf.next()
            while tf is not None:
                if tf.isfile() and pattern.match(tf.name):
                    data.append(tarf.extractfile(tf).read().rstrip(b"\n\r")
                                .translate(None, punct).lower().split())
                tf = tarf.next()
        return data

    def _build_work_dict(self, cutoff):
        word_freq = collections.defaultdict(int)
        pattern = re.compile(r"aclImdb/((train)|(test))/((pos)|(neg))/.*\.txt$")
        for doc in self._tokenize(pattern):
            for word in doc:
                word_freq[word] += 1
        word_freq = [x for x in word_freq.items() if x[1] > cutoff]
        dictionary = sorted(word_freq, key=lambda x: (-x[1], x[0]))
        words = [w for w, _ in dictionary]
        word_idx = dict(zip(words, range(len(words))))
        word_idx['<unk>'] = len(words)
        return word_idx

    def _load_anno(self):
        unk = self.word_idx['<unk>']
        self.docs, self.labels = [], []
        for label, kind in ((0, 'pos'), (1, 'neg')):
            pattern = re.compile(r"aclImdb/{}/{}/.*\.txt$".format(self.mode, kind))
            for doc in self._tokenize(pattern):
                self.docs.append([self.word_idx.get(w, unk) for w in doc])
                self.labels.append(label)

    def __getitem__(self, idx):
        return np.array(self.docs[idx]), np.array([self.labels[idx]])

    def __len__(self):
        return len(self.docs)
