"""Conll05st: semantic role labelling, the CoNLL-2005 test.wsj section
(conll05st-tests.tar.gz) with Paddle's word, verb and label dictionaries."""
import gzip
import tarfile

import numpy as np

from ...io import Dataset
from ._common import data_file as _data_file

UNK_IDX = 0
_WORDS = 'conll05st-release/test.wsj/words/test.wsj.words.gz'
_PROPS = 'conll05st-release/test.wsj/props/test.wsj.props.gz'


class Conll05st(Dataset):
    """Conll05st(data_file=None, word_dict_file=None, verb_dict_file=None,
    target_dict_file=None, emb_file=None, download=True): one item per
    (sentence, predicate): word ids, the five context words' ids around the
    verb (each repeated over the sentence), the predicate id, the mark of
    the verb's window, and the BIO label ids. Files default to
    ~/.cache/paddle/dataset/conll05st/ (conll05st-tests.tar.gz,
    wordDict.txt, verbDict.txt, targetDict.txt, emb). Label tags are
    numbered in sorted order (Paddle numbers a set)."""

    def __init__(self, data_file=None, word_dict_file=None, verb_dict_file=None,
                 target_dict_file=None, emb_file=None, download=True):
        self.data_file = _data_file('Conll05st', data_file, 'conll05st',
                                    'conll05st-tests.tar.gz')
        self.word_dict_file = _data_file('Conll05st', word_dict_file, 'conll05st',
                                         'wordDict.txt')
        self.verb_dict_file = _data_file('Conll05st', verb_dict_file, 'conll05st',
                                         'verbDict.txt')
        self.target_dict_file = _data_file('Conll05st', target_dict_file, 'conll05st',
                                           'targetDict.txt')
        self.emb_file = emb_file
        self.word_dict = self._load_dict(self.word_dict_file)
        self.predicate_dict = self._load_dict(self.verb_dict_file)
        self.label_dict = self._load_label_dict(self.target_dict_file)
        self._load_anno()

    @staticmethod
    def _load_dict(filename):
        with open(filename) as f:
            return {line.strip(): i for i, line in enumerate(f)}

    @staticmethod
    def _load_label_dict(filename):
        tags = set()
        with open(filename) as f:
            for line in f:
                line = line.strip()
                if line.startswith('B-') or line.startswith('I-'):
                    tags.add(line[2:])
        d = {}
        for tag in sorted(tags):
            d['B-' + tag] = len(d)
            d['I-' + tag] = len(d)
        d['O'] = len(d)
        return d

    def _load_anno(self):
        self.sentences, self.predicates, self.labels = [], [], []
        with tarfile.open(self.data_file) as tf:
            wf, pf = tf.extractfile(_WORDS), tf.extractfile(_PROPS)
            with gzip.GzipFile(fileobj=wf) as words_file, gzip.GzipFile(fileobj=pf) as props:
                sentence, one_seg = [], []
                for word, label in zip(words_file, props):
                    word = word.strip().decode()
                    label = label.strip().decode().split()
                    if label:
                        sentence.append(word)
                        one_seg.append(label)
                        continue
                    self._sentence(sentence, one_seg)
                    sentence, one_seg = [], []
                if one_seg:
                    self._sentence(sentence, one_seg)

    def _sentence(self, sentence, one_seg):
        """Columns of one sentence's props: the verbs, then one column of
        bracketed roles per verb, turned into BIO tags."""
        if not one_seg:
            return
        labels = [[row[i] for row in one_seg] for i in range(len(one_seg[0]))]
        verbs = [x for x in labels[0] if x != '-']
        for i, col in enumerate(labels[1:]):
            cur, inside, seq = 'O', False, []
            for tag in col:
                if tag == '*' and not inside:
                    seq.append('O')
                elif tag == '*' and inside:
                    seq.append('I-' + cur)
                elif tag == '*)':
                    seq.append('I-' + cur)
                    inside = False
                elif '(' in tag and ')' in tag:
                    cur = tag[1:tag.find('*')]
                    seq.append('B-' + cur)
                    inside = False
                elif '(' in tag:
                    cur = tag[1:tag.find('*')]
                    seq.append('B-' + cur)
                    inside = True
                else:
                    raise RuntimeError('Conll05st: unexpected label {!r}'.format(tag))
            if i >= len(verbs):
                raise RuntimeError('Conll05st: a sentence has more role columns than verbs')
            self.sentences.append(sentence)
            self.predicates.append(verbs[i])
            self.labels.append(seq)

    def __getitem__(self, idx):
        sentence, predicate, labels = self.sentences[idx], self.predicates[idx], self.labels[idx]
        n = len(sentence)
        if 'B-V' not in labels:
            raise ValueError("Conll05st: item {} has no verb (B-V) label".format(idx))
        v = labels.index('B-V')
        mark = [0] * len(labels)
        ctx = {}
        for off, name in ((-2, 'n2'), (-1, 'n1'), (0, '0'), (1, 'p1'), (2, 'p2')):
            k = v + off
            if 0 <= k < len(labels):
                mark[k] = 1
                ctx[name] = sentence[k]
            else:
                ctx[name] = 'bos' if off < 0 else 'eos'
        wd = self.word_dict
        word_idx = [wd.get(w, UNK_IDX) for w in sentence]
        ctx_ids = [[wd.get(ctx[k], UNK_IDX)] * n for k in ('n2', 'n1', '0', 'p1', 'p2')]
        pred_idx = [self.predicate_dict.get(predicate)] * n
        label_idx = [self.label_dict.get(w) for w in labels]
        return (np.array(word_idx), *[np.array(c) for c in ctx_ids], np.array(pred_idx),
                np.array(mark), np.array(label_idx))

    def __len__(self):
        return len(self.sentences)

    def get_dict(self):
        return self.word_dict, self.predicate_dict, self.label_dict

    def get_embedding(self):
        return self.emb_file
