"""paddle.distributed.DistributedBatchSampler: paddle.io's, with the number of
replicas and the rank defaulting to this job's (Paddle's behaviour)."""
from .. import io as _io
from . import collective as _c


class DistributedBatchSampler(_io.DistributedBatchSampler):
    def __init__(self, dataset, batch_size, num_replicas=None, rank=None, shuffle=False,
                 drop_last=False):
        if num_replicas is None:
            num_replicas = _c.get_world_size()
        if rank is None:
            rank = _c.get_rank()
        super().__init__(dataset, batch_size, num_replicas=num_replicas, rank=rank, shuffle=shuffle,
                         drop_last=drop_last)
