"""paddle.device: set_device, get_device and the CUDA queries (a CPU build)."""
from paddle.framework.place import (set_device, get_device, is_compiled_with_cuda,  # noqa: F401
                                    is_compiled_with_rocm, is_compiled_with_xpu,
                                    CPUPlace, CUDAPlace)


def get_all_device_type():
    return ['cpu']


def get_available_device():
    return ['cpu']


def is_compiled_with_cinn():
    return False


def is_compiled_with_custom_device(device_type=None):
    return False


def synchronize(device=None):
    return None


class _Cuda:
    """paddle.device.cuda: no GPUs in this build."""

    @staticmethod
    def device_count():
        return 0

    @staticmethod
    def synchronize(device=None):
        return None

    @staticmethod
    def empty_cache():
        return None

    @staticmethod
    def max_memory_allocated(device=None):
        return 0

    @staticmethod
    def memory_allocated(device=None):
        return 0


cuda = _Cuda()
