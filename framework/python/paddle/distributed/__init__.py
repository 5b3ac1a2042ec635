"""paddle.distributed: data-parallel training on several processes (CPU ranks
over framework/dist's TCP communicator). See framework/README.md
"Distributed training"."""
from .collective import (ReduceOp, ParallelEnv, Group, init_parallel_env, get_rank,  # noqa: F401
                         get_world_size, new_group, get_group, all_reduce, broadcast, all_gather,
                         all_gather_object, reduce_scatter, barrier, is_initialized, reduce,
                         scatter, send, recv, isend, irecv,
                         destroy_process_group)
from .comm import CommError  # noqa: F401
from .spawn import spawn  # noqa: F401
from . import fleet  # noqa: F401


def __getattr__(name):
    if name == 'DataParallel':
        from .parallel import _data_parallel_class
        return _data_parallel_class()
    if name == 'DistributedBatchSampler':
        from .sampler import DistributedBatchSampler
        return DistributedBatchSampler
    raise AttributeError("module 'paddle.distributed' has no attribute {!r}".format(name))


def is_available():
    return True


__all__ = ['ReduceOp', 'ParallelEnv', 'init_parallel_env', 'get_rank', 'get_world_size',
           'new_group', 'all_reduce', 'broadcast', 'all_gather', 'reduce_scatter', 'barrier',
           'reduce', 'scatter', 'send', 'recv', 'isend', 'irecv',
           'DataParallel', 'spawn', 'fleet', 'DistributedBatchSampler']
