"""paddle.device: set_device, get_device, the device lists and
paddle.device.cuda (fw/device.h through paddle._C.device_*)."""
from paddle import _C
from paddle.framework.place import (set_device, get_device, is_compiled_with_cuda,  # noqa: F401
                                    is_compiled_with_rocm, is_compiled_with_xpu,
                                    CPUPlace, CUDAPlace, _DEV_CUDA)
from paddle.framework.place import Place as _Place
from . import cuda  # noqa: F401


def get_all_device_type():
    """['cpu'], plus 'gpu' when a GPU is usable."""
    return ['cpu', 'gpu'] if is_compiled_with_cuda() else ['cpu']


def get_available_device():
    """['cpu'] plus 'gpu:0', 'gpu:1', ... for each usable GPU."""
    return ['cpu'] + ['gpu:{}'.format(i) for i in range(_C.device_count(_DEV_CUDA))]


def get_all_custom_device_type():
    return []


def get_available_custom_device():
    return []


def is_compiled_with_cinn():
    return False


def is_compiled_with_ipu():
    return False


def is_compiled_with_custom_device(device_type=None):
    return False


def get_cudnn_version():
    """None: Eddy does not report a cuDNN version (Paddle's CPU build gives None)."""
    return None


def synchronize(device=None):
    """Wait for the queued work of the device (the current GPU when one is
    in use); nothing to wait for on the CPU."""
    if isinstance(device, str) and device.strip().lower() == 'cpu':
        return None
    if isinstance(device, _Place) and device.is_cpu_place():
        return None
    if _C.device_count(_DEV_CUDA) == 0:
        return None
    return cuda.synchronize(device)
