"""paddle.io: datasets, samplers, DataLoader batching and collation."""
import unittest

import numpy as np

import paddle
from paddle.io import (BatchSampler, DataLoader, Dataset, DistributedBatchSampler,
                       IterableDataset, RandomSampler, SequenceSampler, Subset,
                       TensorDataset, random_split)


class Squares(Dataset):
    def __init__(self, n=10):
        self.n = n

    def __getitem__(self, i):
        return np.array([i, i * i], 'float32'), np.array([i % 3], 'int64')

    def __len__(self):
        return self.n


class Dicts(Dataset):
    def __getitem__(self, i):
        return {'x': np.full((2,), i, 'float32'), 'id': i, 'name': 'item%d' % i}

    def __len__(self):
        return 5


class Stream(IterableDataset):
    def __iter__(self):
        for i in range(7):
            yield np.array([i], 'float32')


class TestDataLoader(unittest.TestCase):
    def test_batches_tuples_into_tensors(self):
        loader = DataLoader(Squares(10), batch_size=4)
        batches = list(loader)
        self.assertEqual(len(loader), 3)
        self.assertEqual(len(batches), 3)
        x, y = batches[0]
        self.assertIsInstance(x, paddle.Tensor)
        self.assertEqual(x.shape, [4, 2])
        self.assertEqual(y.shape, [4, 1])
        self.assertEqual(y.dtype, paddle.int64)
        np.testing.assert_array_equal(x.numpy()[:, 0], [0, 1, 2, 3])
        self.assertEqual(batches[-1][0].shape, [2, 2])

    def test_drop_last(self):
        loader = DataLoader(Squares(10), batch_size=4, drop_last=True)
        self.assertEqual(len(loader), 2)
        self.assertEqual(len(list(loader)), 2)

    def test_shuffle_covers_every_sample_once(self):
        np.random.seed(0)
        loader = DataLoader(Squares(20), batch_size=6, shuffle=True)
        seen = np.concatenate([x.numpy()[:, 0] for x, _ in loader])
        self.assertEqual(sorted(seen.tolist()), list(range(20)))
        self.assertNotEqual(seen.tolist(), list(range(20)))

    def test_collates_dicts_numbers_and_strings(self):
        batch = next(iter(DataLoader(Dicts(), batch_size=3)))
        self.assertEqual(batch['x'].shape, [3, 2])
        self.assertEqual(batch['id'].dtype, paddle.int64)
        np.testing.assert_array_equal(batch['id'].numpy(), [0, 1, 2])
        self.assertEqual(batch['name'], ['item0', 'item1', 'item2'])

    def test_custom_collate_fn_and_batch_sampler(self):
        bs = BatchSampler(Squares(7), batch_size=3)
        self.assertEqual([len(b) for b in bs], [3, 3, 1])
        loader = DataLoader(Squares(7), batch_sampler=bs, collate_fn=lambda s: len(s))
        self.assertEqual(list(loader), [3, 3, 1])
        with self.assertRaises(ValueError):
            DataLoader(Squares(7), batch_sampler=bs, batch_size=2)

    def test_iterable_dataset(self):
        batches = list(DataLoader(Stream(), batch_size=3))
        self.assertEqual([b.shape[0] for b in batches], [3, 3, 1])
        with self.assertRaises(ValueError):
            DataLoader(Stream(), batch_size=3, shuffle=True)

    def test_batch_size_none_yields_samples(self):
        items = list(DataLoader(Squares(3), batch_size=None))
        self.assertEqual(len(items), 3)
        self.assertEqual(items[0][0].shape, [2])

    def test_bad_arguments(self):
        with self.assertRaises(ValueError):
            DataLoader(Squares(3), batch_size=0)
        with self.assertRaises(ValueError):
            BatchSampler(Squares(3), batch_size=-1)
        with self.assertRaises(ValueError):
            BatchSampler()

    def test_tensor_samples_are_stacked(self):
        ds = TensorDataset([paddle.arange(12, dtype='float32').reshape([6, 2]),
                            paddle.arange(6, dtype='int64')])
        self.assertEqual(len(ds), 6)
        x, y = next(iter(DataLoader(ds, batch_size=4)))
        self.assertEqual(x.shape, [4, 2])
        np.testing.assert_array_equal(y.numpy(), [0, 1, 2, 3])
        with self.assertRaises(ValueError):
            TensorDataset([paddle.ones([3]), paddle.ones([4])])


class TestSamplers(unittest.TestCase):
    def test_sequence_and_random_sampler(self):
        self.assertEqual(list(SequenceSampler(range(4))), [0, 1, 2, 3])
        r = list(RandomSampler(range(10)))
        self.assertEqual(sorted(r), list(range(10)))
        self.assertEqual(len(list(RandomSampler(range(3), replacement=True, num_samples=8))), 8)

    def test_distributed_batch_sampler_splits_ranks(self):
        ds = Squares(10)
        r0 = [i for b in DistributedBatchSampler(ds, 2, num_replicas=2, rank=0) for i in b]
        r1 = [i for b in DistributedBatchSampler(ds, 2, num_replicas=2, rank=1) for i in b]
        self.assertEqual(sorted(r0 + r1), list(range(10)))
        single = DistributedBatchSampler(ds, batch_size=4, shuffle=True)
        self.assertEqual(len(single), 3)
        self.assertEqual(sorted(i for b in single for i in b), list(range(10)))

    def test_subset_and_random_split(self):
        parts = random_split(Squares(10), [7, 3])
        self.assertEqual([len(p) for p in parts], [7, 3])
        idx = sorted(int(p[i][0][0]) for p in parts for i in range(len(p)))
        self.assertEqual(idx, list(range(10)))
        self.assertEqual(len(Subset(Squares(10), [1, 2])), 2)
        with self.assertRaises(ValueError):
            random_split(Squares(10), [5, 6])


if __name__ == '__main__':
    unittest.main()
