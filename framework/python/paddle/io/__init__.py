"""paddle.io: datasets, samplers and the DataLoader (pure Python over paddle).

Batches are collated with numpy and turned into one Tensor per field with a
single paddle.to_tensor call, so the per-batch cost is one copy into C.
num_workers > 0 loads batches in forked worker processes that hand them back
through shared memory (worker.py).
"""
import os
import bisect
import math
import numbers
from collections.abc import Mapping, Sequence

import numpy as np

from paddle._lazy import paddle as _paddle

__all__ = [
    'Dataset', 'IterableDataset', 'TensorDataset', 'ComposeDataset', 'ChainDataset',
    'Subset', 'random_split', 'Sampler', 'SequenceSampler', 'RandomSampler',
    'WeightedRandomSampler', 'SubsetRandomSampler', 'BatchSampler',
    'DistributedBatchSampler', 'DataLoader', 'default_collate_fn',
    'get_worker_info', 'ConcatDataset',
]


class Dataset:
    """Map-style dataset: subclasses implement __getitem__ and __len__."""

    def __getitem__(self, idx):
        raise NotImplementedError(
            "'{}' not implement in class {}".format('__getitem__', self.__class__.__name__))

    def __len__(self):
        raise NotImplementedError(
            "'{}' not implement in class {}".format('__len__', self.__class__.__name__))


class IterableDataset(Dataset):
    """Iterable-style dataset: subclasses implement __iter__."""

    def __iter__(self):
        raise NotImplementedError(
            "'{}' not implement in class {}".format('__iter__', self.__class__.__name__))

    def __getitem__(self, idx):
        raise RuntimeError("'{}' should not be called for IterableDataset".format('__getitem__'))

    def __len__(self):
        raise RuntimeError("'{}' should not be called for IterableDataset".format('__len__'))


class TensorDataset(Dataset):
    """Samples are the i-th rows of each tensor; all tensors share dim 0."""

    def __init__(self, tensors):
        tensors = list(tensors)
        if not tensors:
            raise ValueError("TensorDataset: tensors must not be empty")
        n = tensors[0].shape[0]
        for t in tensors:
            if t.shape[0] != n:
                raise ValueError(
                    "TensorDataset: all tensors must have the same size on dim 0, got {} and {}"
                    .format(n, t.shape[0]))
        self.tensors = tensors

    def __getitem__(self, index):
        return tuple(t[index] for t in self.tensors)

    def __len__(self):
        return self.tensors[0].shape[0]


class ComposeDataset(Dataset):
    """Concatenates the fields of several datasets of equal length."""

    def __init__(self, datasets):
        self.datasets = list(datasets)
        if not self.datasets:
            raise ValueError("ComposeDataset: datasets must not be empty")
        n = len(self.datasets[0])
        for d in self.datasets:
            if len(d) != n:
                raise ValueError("ComposeDataset: lengths of datasets differ")

    def __len__(self):
        return len(self.datasets[0])

    def __getitem__(self, idx):
        sample = []
        for d in self.datasets:
            s = d[idx]
            if isinstance(s, (list, tuple)):
                sample.extend(s)
            else:
                sample.append(s)
        return tuple(sample)


class ChainDataset(IterableDataset):
    def __init__(self, datasets):
        self.datasets = list(datasets)

    def __iter__(self):
        for d in self.datasets:
            yield from d


class ConcatDataset(Dataset):
    def __init__(self, datasets):
        self.datasets = list(datasets)
        if not self.datasets:
            raise ValueError("ConcatDataset: datasets must not be empty")
        self.cumulative_sizes = []
        s = 0
        for d in self.datasets:
            s += len(d)
            self.cumulative_sizes.append(s)

    def __len__(self):
        return self.cumulative_sizes[-1]

    def __getitem__(self, idx):
        if idx < 0:
            idx += len(self)
        if idx < 0 or idx >= len(self):
            raise IndexError("index {} out of range for ConcatDataset of length {}".format(idx, len(self)))
        di = bisect.bisect_right(self.cumulative_sizes, idx)
        prev = self.cumulative_sizes[di - 1] if di > 0 else 0
        return self.datasets[di][idx - prev]


class Subset(Dataset):
    def __init__(self, dataset, indices):
        self.dataset = dataset
        self.indices = list(indices)

    def __getitem__(self, idx):
        return self.dataset[self.indices[idx]]

    def __len__(self):
        return len(self.indices)


def random_split(dataset, lengths, generator=None):
    """Split into non-overlapping Subsets of the given lengths (or fractions)."""
    n = len(dataset)
    lengths = list(lengths)
    if all(isinstance(x, float) for x in lengths) and math.isclose(sum(lengths), 1.0) and \
            sum(lengths) <= 1:
        counts = [int(math.floor(n * f)) for f in lengths]
        rem = n - sum(counts)
        for i in range(rem):
            counts[i % len(counts)] += 1
        lengths = counts
    if sum(lengths) != n:
        raise ValueError("Sum of input lengths does not equal the length of the input dataset!")
    perm = np.random.permutation(n).tolist()
    out, off = [], 0
    for ln in lengths:
        out.append(Subset(dataset, perm[off:off + ln]))
        off += ln
    return out


class Sampler:
    def __init__(self, data_source=None):
        self.data_source = data_source

    def __iter__(self):
        raise NotImplementedError

    def __len__(self):
        raise NotImplementedError


class SequenceSampler(Sampler):
    def __iter__(self):
        return iter(range(len(self.data_source)))

    def __len__(self):
        return len(self.data_source)


class RandomSampler(Sampler):
    def __init__(self, data_source, replacement=False, num_samples=None, generator=None):
        super().__init__(data_source)
        self.replacement = replacement
        self._num_samples = num_samples
        self.generator = generator
        if not replacement and num_samples is not None:
            raise ValueError("num_samples should not be specified while replacement is False")

    @property
    def num_samples(self):
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self):
        n = len(self.data_source)
        if self.generator is not None:
            for _ in range(self.num_samples):
                yield next(self.generator)
            return
        if self.replacement:
            yield from np.random.randint(0, n, size=(self.num_samples,)).tolist()
        else:
            yield from np.random.permutation(n).tolist()

    def __len__(self):
        return self.num_samples


class SubsetRandomSampler(Sampler):
    def __init__(self, indices):
        super().__init__(None)
        self.indices = list(indices)

    def __iter__(self):
        for i in np.random.permutation(len(self.indices)).tolist():
            yield self.indices[i]

    def __len__(self):
        return len(self.indices)


class WeightedRandomSampler(Sampler):
    def __init__(self, weights, num_samples, replacement=True):
        super().__init__(None)
        w = np.asarray(weights, dtype=np.float64).reshape(-1)
        if (w < 0).any() or w.sum() <= 0:
            raise ValueError("weights must be non-negative with a positive sum")
        if not replacement and num_samples > len(w):
            raise ValueError("num_samples should be <= len(weights) without replacement")
        self.weights = w / w.sum()
        self.num_samples = int(num_samples)
        self.replacement = replacement

    def __iter__(self):
        idx = np.random.choice(len(self.weights), self.num_samples, replace=self.replacement,
                               p=self.weights)
        return iter(idx.tolist())

    def __len__(self):
        return self.num_samples


class BatchSampler(Sampler):
    """Groups indices of a sampler (or of a dataset) into lists of batch_size."""

    def __init__(self, dataset=None, sampler=None, shuffle=False, batch_size=1, drop_last=False):
        if dataset is None and sampler is None:
            raise ValueError("either dataset or sampler should be set")
        if dataset is not None and sampler is not None:
            raise ValueError("should not set both dataset and sampler")
        if not isinstance(batch_size, numbers.Integral) or isinstance(batch_size, bool) or \
                batch_size <= 0:
            raise ValueError("batch_size should be a positive integer, but got {}".format(batch_size))
        if not isinstance(drop_last, bool):
            raise ValueError("drop_last should be a boolean value, but got {}".format(type(drop_last)))
        if sampler is not None:
            if shuffle:
                raise ValueError("should not set shuffle when sampler is set")
            self.sampler = sampler
        else:
            if isinstance(dataset, IterableDataset):
                raise ValueError("dataset should not be IterableDataset for BatchSampler")
            self.sampler = RandomSampler(dataset) if shuffle else SequenceSampler(dataset)
        self.shuffle = shuffle
        self.batch_size = int(batch_size)
        self.drop_last = drop_last

    def __iter__(self):
        batch = []
        for idx in self.sampler:
            batch.append(idx)
            if len(batch) == self.batch_size:
                yield batch
                batch = []
        if batch and not self.drop_last:
            yield batch

    def __len__(self):
        n = len(self.sampler)
        if self.drop_last:
            return n // self.batch_size
        return (n + self.batch_size - 1) // self.batch_size


class DistributedBatchSampler(BatchSampler):
    """BatchSampler over this rank's share of the dataset (one rank here unless
    num_replicas/rank are given). Pads the index list to a multiple of
    num_replicas like Paddle."""

    def __init__(self, dataset, batch_size, num_replicas=None, rank=None, shuffle=False,
                 drop_last=False):
        if not isinstance(batch_size, numbers.Integral) or batch_size <= 0:
            raise ValueError("batch_size should be a positive integer, but got {}".format(batch_size))
        self.dataset = dataset
        self.batch_size = int(batch_size)
        self.shuffle = shuffle
        self.drop_last = drop_last
        # by default the job's ranks, as the launcher sets them (Paddle's behaviour)
        self.nranks = (int(num_replicas) if num_replicas is not None
                       else int(os.environ.get('PADDLE_TRAINERS_NUM', '1')))
        self.local_rank = int(rank) if rank is not None else int(os.environ.get('PADDLE_TRAINER_ID', '0'))
        if self.nranks <= 0 or not (0 <= self.local_rank < self.nranks):
            raise ValueError("rank {} out of range for {} replicas".format(self.local_rank, self.nranks))
        self.epoch = 0
        self.num_samples = int(math.ceil(len(dataset) * 1.0 / self.nranks))
        self.total_size = self.num_samples * self.nranks

    def __iter__(self):
        n = len(self.dataset)
        indices = np.arange(n).tolist()
        if self.shuffle:
            rs = np.random.RandomState(self.epoch)
            rs.shuffle(indices)
            self.epoch += 1
        indices += indices[:(self.total_size - len(indices))]
        indices = indices[self.local_rank:self.total_size:self.nranks]
        batch = []
        for idx in indices:
            batch.append(idx)
            if len(batch) == self.batch_size:
                yield batch
                batch = []
        if batch and not self.drop_last:
            yield batch

    def __len__(self):
        if self.drop_last:
            return self.num_samples // self.batch_size
        return (self.num_samples + self.batch_size - 1) // self.batch_size

    def set_epoch(self, epoch):
        self.epoch = epoch


def _is_tensor(x):
    paddle = _paddle()
    return isinstance(x, paddle.Tensor)


def default_collate_fn(batch):
    """Stack a list of samples field by field: numpy arrays, numbers and
    Tensors become one Tensor with a leading batch dim; dicts and sequences
    are collated per key/position; strings stay lists."""
    paddle = _paddle()
    sample = batch[0]
    if isinstance(sample, np.ndarray):
        return paddle.to_tensor(np.stack(batch, axis=0))
    if isinstance(sample, paddle.Tensor):
        return paddle.stack(batch, axis=0)
    if isinstance(sample, (bool, np.bool_)):
        return paddle.to_tensor(np.array(batch, dtype=np.bool_))
    if isinstance(sample, numbers.Integral):
        return paddle.to_tensor(np.array(batch, dtype=np.int64))
    if isinstance(sample, numbers.Number):
        arr = np.array(batch)
        if arr.dtype == np.float64 and not isinstance(sample, np.floating):
            arr = arr.astype(np.float32)
        return paddle.to_tensor(arr)
    if isinstance(sample, (str, bytes)):
        return list(batch)
    if isinstance(sample, Mapping):
        return {k: default_collate_fn([d[k] for d in batch]) for k in sample}
    if isinstance(sample, Sequence):
        n = len(sample)
        for s in batch:
            if len(s) != n:
                raise RuntimeError("fields number not same among samples in a batch")
        return [default_collate_fn(list(fields)) for fields in zip(*batch)]
    raise TypeError(
        "batch data can only contains: tensor, numpy.ndarray, dict, list, number, "
        "but got {}".format(type(sample)))


from .worker import WorkerInfo, get_worker_info  # noqa: E402,F401


class _SingleProcessIter:
    """The loader's iterator in the main process (also has Paddle's .next())."""

    def __init__(self, gen):
        self._gen = gen

    def __iter__(self):
        return self

    def __next__(self):
        return next(self._gen)

    next = __next__


class DataLoader:
    """Iterates over a dataset in batches.

    DataLoader(dataset, feed_list=None, places=None, return_list=True,
               batch_sampler=None, batch_size=1, shuffle=False, drop_last=False,
               collate_fn=None, num_workers=0, use_buffer_reader=True,
               prefetch_factor=2, use_shared_memory=True, timeout=0,
               worker_init_fn=None, persistent_workers=False)
    """

    def __init__(self, dataset, feed_list=None, places=None, return_list=True,
                 batch_sampler=None, batch_size=1, shuffle=False, drop_last=False,
                 collate_fn=None, num_workers=0, use_buffer_reader=True,
                 prefetch_factor=2, use_shared_memory=True, timeout=0,
                 worker_init_fn=None, persistent_workers=False):
        if dataset is None:
            raise ValueError("DataLoader: dataset must not be None")
        if isinstance(num_workers, bool) or not isinstance(num_workers, numbers.Integral) or \
                num_workers < 0:
            raise ValueError("num_workers should be a non-negative integer")
        if num_workers > 256:
            raise ValueError("num_workers {} is over the limit of 256".format(num_workers))
        if isinstance(prefetch_factor, bool) or not isinstance(prefetch_factor, numbers.Integral) \
                or not 1 <= prefetch_factor <= 1024:
            raise ValueError("prefetch_factor should be a positive integer (at most 1024), got {!r}"
                             .format(prefetch_factor))
        if not isinstance(timeout, numbers.Real) or timeout < 0:
            raise ValueError("timeout should be a non-negative number, got {!r}".format(timeout))
        if worker_init_fn is not None and not callable(worker_init_fn):
            raise TypeError("worker_init_fn should be callable")
        self.prefetch_factor = int(prefetch_factor)
        self.timeout = float(timeout)
        self.worker_init_fn = worker_init_fn
        self.persistent_workers = bool(persistent_workers) and num_workers > 0
        self.use_shared_memory = use_shared_memory
        self._pool = None
        self.dataset = dataset
        self.return_list = return_list
        self.collate_fn = collate_fn
        self.num_workers = num_workers
        self._is_iterable = isinstance(dataset, IterableDataset)
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or drop_last:
                raise ValueError("batch_size/shuffle/drop_last should not be set when "
                                 "batch_sampler is given")
            self.batch_sampler = batch_sampler
            self.batch_size = getattr(batch_sampler, 'batch_size', None)
        elif batch_size is None:
            self.batch_sampler = None
            self.batch_size = None
        else:
            if not isinstance(batch_size, numbers.Integral) or batch_size <= 0:
                raise ValueError("batch_size should be None or a positive integer, got {}"
                                 .format(batch_size))
            self.batch_size = int(batch_size)
            if self._is_iterable:
                if shuffle:
                    raise ValueError("IterableDataset not support shuffle")
                self.batch_sampler = None
            else:
                self.batch_sampler = BatchSampler(dataset=dataset, batch_size=batch_size,
                                                  shuffle=shuffle, drop_last=drop_last)
        self.drop_last = drop_last
        self.shuffle = shuffle

    def __len__(self):
        if self._is_iterable:
            # TypeError (not Paddle's ValueError) so list(loader) and other
            # length-hint users still iterate
            raise TypeError("length of IterableDataset not supported")
        if self.batch_sampler is not None:
            return len(self.batch_sampler)
        return len(self.dataset)

    def _collate(self, samples):
        if self.collate_fn is not None:
            return self.collate_fn(samples)
        return default_collate_fn(samples)

    def _convert_single(self, sample):
        # batch_size=None: each sample is returned as is, numpy turned to Tensor
        paddle = _paddle()
        if isinstance(sample, np.ndarray):
            return paddle.to_tensor(sample)
        if isinstance(sample, (list, tuple)):
            return [self._convert_single(s) for s in sample]
        if isinstance(sample, Mapping):
            return {k: self._convert_single(v) for k, v in sample.items()}
        return sample

    def __iter__(self):
        if self.num_workers > 0:
            from .worker import MultiProcessIter, WorkerPool
            if self._pool is None:
                self._pool = WorkerPool(self)
            return MultiProcessIter(self, self._pool)
        return _SingleProcessIter(self._single_process())

    def _worker_collate(self, samples, batched):
        """In a worker: the batch (or sample) as a tree of numpy arrays."""
        from .worker import as_tree, np_collate
        if not batched:
            s = samples[0]
            return as_tree(s, True) if self.collate_fn is None else \
                as_tree(self.collate_fn(s), False)
        if self.collate_fn is None:
            return np_collate(samples)
        return as_tree(self.collate_fn(samples), False)

    def _drop_pool(self):
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.close()

    def __del__(self):
        try:
            self._drop_pool()
        except Exception:
            pass

    def _single_process(self):
        if self._is_iterable:
            if self.batch_size is None:
                for s in self.dataset:
                    yield self._convert_single(s) if self.collate_fn is None \
                        else self.collate_fn(s)
                return
            batch = []
            for s in self.dataset:
                batch.append(s)
                if len(batch) == self.batch_size:
                    yield self._collate(batch)
                    batch = []
            if batch and not self.drop_last:
                yield self._collate(batch)
            return
        if self.batch_sampler is None:
            for i in range(len(self.dataset)):
                s = self.dataset[i]
                yield self._convert_single(s) if self.collate_fn is None else self.collate_fn(s)
            return
        for indices in self.batch_sampler:
            yield self._collate([self.dataset[i] for i in indices])

    def __call__(self):
        return self.__iter__()
