"""paddle.distributed.fleet for collective (data-parallel) training:
fleet.init(is_collective=True), fleet.distributed_model (a DataParallel),
fleet.distributed_optimizer (the optimizer itself: DataParallel already
averages the gradients during backward)."""
from .. import collective as _c


class DistributedStrategy(object):
    """Accepted for compatibility; only data parallelism is implemented."""

    def __init__(self):
        self.amp = False
        self.recompute = False
        self.sharding = False
        self.pipeline = False
        self.tensor_parallel = False
        self.find_unused_parameters = False
        self.fuse_grad_size_in_MB = 25
        self.last_comm_group_size_MB = 1
        self.hybrid_configs = {}

    def __setattr__(self, k, v):
        if k in ('sharding', 'pipeline', 'tensor_parallel') and v:
            raise NotImplementedError("fleet: only data parallelism is implemented ({} = True)".format(k))
        object.__setattr__(self, k, v)


_fleet = {'strategy': None, 'inited': False}


def init(role_maker=None, is_collective=False, strategy=None, log_level='INFO'):
    if not is_collective and role_maker is None:
        raise NotImplementedError("fleet.init: parameter-server mode is not implemented; "
                                  "use fleet.init(is_collective=True)")
    _fleet['strategy'] = strategy or DistributedStrategy()
    _fleet['inited'] = True
    _c.init_parallel_env()


def _need_init():
    if not _fleet['inited']:
        raise RuntimeError("fleet: call fleet.init(is_collective=True) first")


def worker_index():
    return _c.get_rank()


def worker_num():
    return _c.get_world_size()


def is_first_worker():
    return _c.get_rank() == 0


def worker_endpoints(to_string=False):
    eps = _c.ParallelEnv().trainer_endpoints
    return ','.join(eps) if to_string else eps


def barrier_worker():
    _c.barrier()


def distributed_model(model):
    _need_init()
    from ..parallel import _data_parallel_class
    s = _fleet['strategy']
    return _data_parallel_class()(model, comm_buffer_size=s.fuse_grad_size_in_MB,
                                  last_comm_buffer_size=s.last_comm_group_size_MB,
                                  find_unused_parameters=s.find_unused_parameters)


def distributed_optimizer(optimizer, strategy=None):
    _need_init()
    if strategy is not None:
        _fleet['strategy'] = strategy
    return optimizer


def get_hybrid_communicate_group():
    raise NotImplementedError("fleet: hybrid parallelism is not implemented (data parallel only)")
