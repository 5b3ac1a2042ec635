"""Places and devices. This build computes on the CPU; CUDAPlace objects can be
made (tutorials create them) but tensors always live on the CPU."""
from paddle import _C


class Place:
    """The place a tensor lives on; prints like Paddle's: Place(cpu)."""

    def __init__(self, kind='cpu', device_id=0):
        self._kind = kind
        self._device_id = device_id

    def __repr__(self):
        if self._kind == 'cpu':
            return 'Place(cpu)'
        return 'Place({}:{})'.format(self._kind, self._device_id)

    __str__ = __repr__

    def __eq__(self, other):
        return isinstance(other, Place) and (self._kind, self._device_id) == (
            other._kind, other._device_id)

    def __hash__(self):
        return hash((self._kind, self._device_id))

    def is_cpu_place(self):
        return self._kind == 'cpu'

    def is_gpu_place(self):
        return self._kind == 'gpu'

    def is_cuda_pinned_place(self):
        return self._kind == 'gpu_pinned'

    def gpu_device_id(self):
        return self._device_id


class CPUPlace(Place):
    def __init__(self):
        super().__init__('cpu', 0)


class CUDAPlace(Place):
    def __init__(self, device_id=0):
        super().__init__('gpu', int(device_id))


class CUDAPinnedPlace(Place):
    def __init__(self):
        super().__init__('gpu_pinned', 0)


_CPU = CPUPlace()
_C._register_place(_CPU)
_current_device = 'cpu'


def is_compiled_with_cuda():
    """False: this build of Eddy's framework computes on the CPU."""
    return False


def is_compiled_with_rocm():
    return False


def is_compiled_with_xpu():
    return False


def set_device(device):
    """paddle.set_device('cpu'); a GPU name raises ValueError in a CPU build, as
    Paddle does. Returns the Place."""
    global _current_device
    if isinstance(device, Place):
        device = 'cpu' if device.is_cpu_place() else 'gpu:{}'.format(device.gpu_device_id())
    if not isinstance(device, str):
        raise ValueError("The device must be a string like 'cpu' or 'gpu:0', got {!r}".format(device))
    d = device.lower()
    if d == 'cpu':
        _current_device = 'cpu'
        return _CPU
    if d.startswith('gpu') or d.startswith('cuda'):
        raise ValueError("The device should not be '{}', since PaddlePaddle is not compiled "
                         "with CUDA".format(device))
    raise ValueError("The device must be a string which is like 'cpu', 'gpu', 'gpu:x', "
                     "'xpu', 'xpu:x', 'npu', 'npu:x', got '{}'".format(device))


def get_device():
    """paddle.get_device() -> 'cpu'."""
    return _current_device


def _get_place(place=None):
    if place is None or isinstance(place, Place):
        return _CPU
    if isinstance(place, str):
        set_device(place) if place.lower() != 'cpu' else None
        return _CPU
    raise ValueError("place must be a Place or a str, got {!r}".format(place))
