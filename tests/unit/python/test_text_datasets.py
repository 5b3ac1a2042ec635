"""paddle.text datasets (issue 18 item 2) read from small files written here
in Paddle's formats (the archives' member names and line formats of
Paddle's paddle.text.datasets), with the items checked by hand; a missing
file is a FileNotFoundError naming it (no download)."""
import gzip
import io
import os
import tarfile
import tempfile
import unittest
import zipfile

import numpy as np

import paddle
from paddle.text import WMT14, WMT16, Conll05st, Imdb, Imikolov, Movielens, UCIHousing


def add(tf, name, data):
    info = tarfile.TarInfo(name)
    info.size = len(data)
    tf.addfile(info, io.BytesIO(data))


class TextDatasets(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.d = cls.tmp.name

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def path(self, name):
        return os.path.join(self.d, name)

    def test_missing_file_is_named(self):
        with self.assertRaisesRegex(FileNotFoundError, 'nothing-here.tar.gz'):
            Imdb(data_file=self.path('nothing-here.tar.gz'))
        with self.assertRaises(ValueError):
            UCIHousing(data_file=self.path('x'), mode='dev')

    def test_uci_housing(self):
        rows = np.arange(10 * 14, dtype=np.float64).reshape(10, 14) % 17
        with open(self.path('housing.data'), 'w') as f:
            for r in rows:
                f.write(' '.join('%g' % v for v in r) + '\n')
        train = UCIHousing(data_file=self.path('housing.data'), mode='train')
        test = UCIHousing(data_file=self.path('housing.data'), mode='test')
        self.assertEqual((len(train), len(test)), (8, 2))
        x, y = train[1]
        self.assertEqual(x.shape, (13,))
        self.assertEqual(x.dtype, np.float32)
        span = rows.max(0) - rows.min(0)
        want = (rows[1, :13] - rows.mean(0)[:13]) / span[:13]
        np.testing.assert_allclose(x, want, rtol=1e-6)
        np.testing.assert_allclose(y, [rows[1, 13]])
        # the page's use: a DataLoader over it
        xb, yb = next(iter(paddle.io.DataLoader(train, batch_size=4)))
        self.assertEqual(xb.shape, [4, 13])

    def test_imdb(self):
        docs = {'train/pos/0_9.txt': b'Good good movie!\n', 'train/neg/1_2.txt': b'bad, bad film',
                'test/pos/2_8.txt': b'good film', 'test/neg/3_1.txt': b'awful movie'}
        with tarfile.open(self.path('imdb.tar.gz'), 'w:gz') as tf:
            for k, v in docs.items():
                add(tf, 'aclImdb/' + k, v)
        ds = Imdb(data_file=self.path('imdb.tar.gz'), mode='train', cutoff=1)
        # counts over train and test: good 3, bad 2, film 2, movie 2 (> 1 kept)
        self.assertEqual([w for w, _ in sorted(ds.word_idx.items(), key=lambda x: x[1])],
                         [b'good', b'bad', b'film', b'movie', '<unk>'])
        self.assertEqual(len(ds), 2)
        doc, label = ds[0]
        np.testing.assert_array_equal(doc, [0, 0, 3])
        np.testing.assert_array_equal(label, [0])
        doc, label = ds[1]
        np.testing.assert_array_equal(doc, [1, 1, 2])
        np.testing.assert_array_equal(label, [1])
        test = Imdb(data_file=self.path('imdb.tar.gz'), mode='test', cutoff=1)
        np.testing.assert_array_equal(test[1][0], [4, 3])     # 'awful' is unknown

    def test_imikolov(self):
        train = b'a b c\na b\n'
        valid = b'a c\n'
        with tarfile.open(self.path('ptb.tgz'), 'w:gz') as tf:
            add(tf, './simple-examples/data/ptb.train.txt', train)
            add(tf, './simple-examples/data/ptb.valid.txt', valid)
        ng = Imikolov(data_file=self.path('ptb.tgz'), data_type='NGRAM', window_size=2,
                      min_word_freq=1)
        # counts: a 3, <s> 3, <e> 3, b 2, c 2 -> sorted by (-count, word)
        self.assertEqual(ng.word_idx, {'<e>': 0, '<s>': 1, 'a': 2, 'b': 3, 'c': 4, '<unk>': 5})
        self.assertEqual([int(x) for x in ng[0]], [1, 2])      # <s> a
        self.assertEqual(len(ng), 4 + 3)
        seq = Imikolov(data_file=self.path('ptb.tgz'), data_type='SEQ', mode='test',
                       min_word_freq=1)
        src, trg = seq[0]
        np.testing.assert_array_equal(src, [1, 2, 4])
        np.testing.assert_array_equal(trg, [2, 4, 0])

    def test_movielens(self):
        with zipfile.ZipFile(self.path('ml-1m.zip'), 'w') as z:
            z.writestr('ml-1m/movies.dat', '1::Toy Story (1995)::Animation|Comedy\n'
                                           '2::Heat (1995)::Action\n')
            z.writestr('ml-1m/users.dat', '1::F::1::10::48067\n2::M::56::16::70072\n')
            z.writestr('ml-1m/ratings.dat', '1::1::5::978300760\n2::2::3::978302109\n'
                                            '1::2::4::978301968\n')
        ds = Movielens(data_file=self.path('ml-1m.zip'), mode='train', test_ratio=0.0)
        self.assertEqual(len(ds), 3)
        item = ds[0]
        self.assertEqual(len(item), 8)
        uid, gender, age, job, mid, cats, title, rating = [x.tolist() for x in item]
        self.assertEqual((uid, gender, age, job, mid), ([1], [1], [0], [10], [1]))
        self.assertEqual(cats, [ds.categories_dict['Animation'], ds.categories_dict['Comedy']])
        self.assertEqual(title, [ds.movie_title_dict['toy'], ds.movie_title_dict['story']])
        self.assertEqual(rating, [5.0])
        self.assertEqual(ds[1][2].tolist(), [6])    # age 56 is the 7th bracket
        empty = Movielens(data_file=self.path('ml-1m.zip'), mode='test', test_ratio=0.0)
        self.assertEqual(len(empty), 0)

    def test_wmt14(self):
        with tarfile.open(self.path('wmt14.tgz'), 'w:gz') as tf:
            add(tf, 'wmt14/src.dict', b'<s>\n<e>\n<unk>\nhello\nworld\n')
            add(tf, 'wmt14/trg.dict', b'<s>\n<e>\n<unk>\nbonjour\nmonde\n')
            add(tf, 'wmt14/train/train', b'hello world\tbonjour monde\nhello there\tsalut\n'
                                         b'no tab here\n')
        ds = WMT14(data_file=self.path('wmt14.tgz'), mode='train', dict_size=5)
        self.assertEqual(len(ds), 2)
        src, trg, nxt = ds[0]
        np.testing.assert_array_equal(src, [0, 3, 4, 1])
        np.testing.assert_array_equal(trg, [0, 3, 4])
        np.testing.assert_array_equal(nxt, [3, 4, 1])
        np.testing.assert_array_equal(ds[1][0], [0, 3, 2, 1])
        self.assertEqual(ds.get_dict(reverse=True)[1][4], 'monde')

    def test_wmt16(self):
        lines = b'a cat\teine katze\na dog\tein hund\na cat sat\teine katze sass\n'
        with tarfile.open(self.path('wmt16.tar.gz'), 'w:gz') as tf:
            for mode in ('train', 'test', 'val'):
                add(tf, 'wmt16/' + mode, lines)
        ds = WMT16(data_file=self.path('wmt16.tar.gz'), mode='val', src_dict_size=5,
                   trg_dict_size=-1, lang='en')
        # en counts: a 3, cat 2, dog 1, sat 1 -> <s> <e> <unk> a cat
        self.assertEqual(ds.src_dict, {'<s>': 0, '<e>': 1, '<unk>': 2, 'a': 3, 'cat': 4})
        self.assertEqual(ds.trg_dict['eine'], 3)
        self.assertEqual(ds.trg_dict['katze'], 4)
        src, trg, nxt = ds[1]
        np.testing.assert_array_equal(src, [0, 3, 2, 1])
        np.testing.assert_array_equal(trg, [0, ds.trg_dict['ein'], ds.trg_dict['hund']])
        np.testing.assert_array_equal(nxt, [ds.trg_dict['ein'], ds.trg_dict['hund'], 1])
        with self.assertRaises(ValueError):
            WMT16(data_file=self.path('wmt16.tar.gz'), lang='fr')

    def test_conll05st(self):
        words = b'The\ncat\nsat\ndown\n\n'
        props = (b'-\t*\n'
                 b'-\t(A0*\n'
                 b'sit\t(V*)\n'
                 b'-\t(AM-DIR*)\n'
                 b'\n')
        buf_w, buf_p = io.BytesIO(), io.BytesIO()
        with gzip.GzipFile(fileobj=buf_w, mode='wb') as g:
            g.write(words)
        with gzip.GzipFile(fileobj=buf_p, mode='wb') as g:
            g.write(props)
        with tarfile.open(self.path('conll.tar.gz'), 'w:gz') as tf:
            add(tf, 'conll05st-release/test.wsj/words/test.wsj.words.gz', buf_w.getvalue())
            add(tf, 'conll05st-release/test.wsj/props/test.wsj.props.gz', buf_p.getvalue())
        for name, text in (('w.txt', 'bos\neos\nThe\ncat\nsat\ndown\n'), ('v.txt', 'sit\n'),
                           ('t.txt', 'B-A0\nI-A0\nB-V\nI-V\nB-AM-DIR\nI-AM-DIR\nO\n')):
            with open(self.path(name), 'w') as f:
                f.write(text)
        ds = Conll05st(data_file=self.path('conll.tar.gz'), word_dict_file=self.path('w.txt'),
                       verb_dict_file=self.path('v.txt'), target_dict_file=self.path('t.txt'))
        self.assertEqual(len(ds), 1)
        self.assertEqual(ds.labels[0], ['O', 'B-A0', 'B-V', 'B-AM-DIR'])
        item = [x.tolist() for x in ds[0]]
        self.assertEqual(len(item), 9)
        self.assertEqual(item[0], [2, 3, 4, 5])
        self.assertEqual(item[1], [2] * 4)          # two before the verb: 'The'
        self.assertEqual(item[3], [4] * 4)          # the verb itself
        self.assertEqual(item[5], [1] * 4)          # two after: past the end -> 'eos'
        self.assertEqual(item[6], [0] * 4)          # predicate 'sit'
        self.assertEqual(item[7], [1, 1, 1, 1])
        ld = ds.label_dict
        self.assertEqual(item[8], [ld['O'], ld['B-A0'], ld['B-V'], ld['B-AM-DIR']])


if __name__ == '__main__':
    unittest.main()
