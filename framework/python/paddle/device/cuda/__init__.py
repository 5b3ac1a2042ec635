"""paddle.device.cuda: GPU count, synchronisation, the caching allocator's
counters and device properties (fw/device.h through paddle._C.device_*).

Without a usable GPU (no CUDA backend built, no driver, no device):
device_count() is 0, synchronize() and empty_cache() do nothing, and the
memory and property queries raise ValueError as Paddle's CPU-only build
does, naming why no GPU can be used."""
import contextlib

from paddle import _C
from paddle.framework.place import CUDAPlace as _CUDAPlace, Place as _Place
from paddle.framework.place import _DEV_CUDA, _gpu_unavailable

__all__ = ['device_count', 'synchronize', 'empty_cache', 'memory_allocated',
           'max_memory_allocated', 'memory_reserved', 'max_memory_reserved',
           'reset_max_memory_allocated', 'reset_max_memory_reserved', 'get_device_name',
           'get_device_properties', 'get_device_capability', 'current_device',
           'current_stream', 'stream_guard', 'Stream', 'Event']


def device_count():
    """The number of usable GPUs (0 without the CUDA backend or a device)."""
    return _C.device_count(_DEV_CUDA)


def _unsupported(name):
    raise ValueError("The API paddle.device.cuda.{} is not supported without a usable GPU "
                     "(as in CPU-only PaddlePaddle): {}".format(name, _gpu_unavailable()))


def _device_id(device, name):
    """The GPU index `device` names (None: the current one); ValueError when
    no GPU is usable or the index is out of range."""
    n = device_count()
    if n == 0:
        _unsupported(name)
    if device is None:
        return _C.device_current(_DEV_CUDA)
    if isinstance(device, bool):
        raise ValueError("The device type {} is not expected. Because {} only support int, str "
                         "or paddle.CUDAPlace.".format(type(device).__name__, name))
    if isinstance(device, int):
        index = device
    elif isinstance(device, _Place):
        if not device.is_gpu_place():
            raise ValueError("{}: {} is not a GPU place".format(name, device))
        index = device.gpu_device_id()
    elif isinstance(device, str):
        d = device.strip().lower()
        if not (d.startswith('gpu:') and d[4:].isdigit()):
            raise ValueError("The current string {} is not expected. Because {} only support "
                             "string which is like 'gpu:x'.".format(device, name))
        index = int(d[4:])
    else:
        raise ValueError("The device type {} is not expected. Because {} only support int, str "
                         "or paddle.CUDAPlace.".format(type(device).__name__, name))
    if not 0 <= index < n:
        raise ValueError("The device id {} is out of range: {} GPU(s) ({})".format(index, n, name))
    return index


def current_device():
    """The index of the GPU in use (paddle.set_device('gpu:N'))."""
    n = device_count()
    if n == 0:
        _unsupported('current_device')
    return _C.device_current(_DEV_CUDA)


def synchronize(device=None):
    """Wait until the GPU's queued work has finished; reports an asynchronous
    kernel error as RuntimeError. Nothing to do without a GPU."""
    if device_count() == 0:
        return None
    _C.device_synchronize(_DEV_CUDA, _device_id(device, 'synchronize'))
    return None


def empty_cache():
    """Give the caching allocator's unused blocks back to the driver (they
    then leave memory_reserved and nvidia-smi). Nothing to do without a GPU."""
    if device_count() == 0:
        return None
    _C.device_empty_cache(_DEV_CUDA)
    return None


def _stat(device, key, name):
    return int(_C.device_memory_stats(_DEV_CUDA, _device_id(device, name))[key])


def memory_allocated(device=None):
    """Bytes held by live tensors on the GPU (rounded to the allocator's blocks)."""
    return _stat(device, 'allocated', 'memory_allocated')


def max_memory_allocated(device=None):
    """The peak of memory_allocated since the start or the last reset."""
    return _stat(device, 'peak_allocated', 'max_memory_allocated')


def memory_reserved(device=None):
    """Bytes the allocator holds from the driver (allocated + cached)."""
    return _stat(device, 'reserved', 'memory_reserved')


def max_memory_reserved(device=None):
    """The peak of memory_reserved since the start or the last reset."""
    return _stat(device, 'peak_reserved', 'max_memory_reserved')


def reset_max_memory_allocated(device=None):
    """Restart the peaks (max_memory_allocated and max_memory_reserved) from now."""
    _C.device_reset_peak(_DEV_CUDA, _device_id(device, 'reset_max_memory_allocated'))


def reset_max_memory_reserved(device=None):
    """Restart the peaks (one reset covers both counters' peaks)."""
    _C.device_reset_peak(_DEV_CUDA, _device_id(device, 'reset_max_memory_reserved'))


class _gpuDeviceProperties:  # noqa: N801 (Paddle's name)
    """What get_device_properties returns; prints like Paddle's."""

    def __init__(self, d):
        self.name = d['name']
        self.major = d['major']
        self.minor = d['minor']
        self.total_memory = d['total_memory']
        self.multi_processor_count = d['multi_processor_count']

    def __repr__(self):
        return ("_gpuDeviceProperties(name='{}', major={}, minor={}, total_memory={}MB, "
                "multi_processor_count={})".format(self.name, self.major, self.minor,
                                                   self.total_memory // (1024 * 1024),
                                                   self.multi_processor_count))


def get_device_properties(device=None):
    """name, major, minor, total_memory (bytes), multi_processor_count."""
    return _gpuDeviceProperties(_C.device_properties(
        _DEV_CUDA, _device_id(device, 'get_device_properties')))


def get_device_name(device=None):
    """The GPU's name: 'NVIDIA H100 80GB HBM3'."""
    return get_device_properties(device).name


def get_device_capability(device=None):
    """(major, minor) compute capability."""
    p = get_device_properties(device)
    return p.major, p.minor


class Stream:
    """The device's one compute stream (Eddy runs every op on it)."""

    def __init__(self, device=None, priority=None):
        self.device = _CUDAPlace(_device_id(device, 'Stream'))

    def synchronize(self):
        synchronize(self.device)

    def query(self):
        synchronize(self.device)
        return True

    def wait_stream(self, stream):
        return None

    def wait_event(self, event):
        return None

    def record_event(self, event=None):
        event = event or Event()
        event.record(self)
        return event


class Event:
    """An event on the compute stream: record() synchronises (Eddy has one stream)."""

    def __init__(self, enable_timing=False, blocking=False, interprocess=False):
        self._t = None

    def record(self, stream=None):
        import time
        synchronize()
        self._t = time.perf_counter()

    def query(self):
        return True

    def synchronize(self):
        return None

    def elapsed_time(self, end_event):
        """Milliseconds between this event and end_event."""
        if self._t is None or end_event._t is None:
            raise RuntimeError("elapsed_time: both events must be recorded")
        return (end_event._t - self._t) * 1000.0


def current_stream(device=None):
    return Stream(device)


@contextlib.contextmanager
def stream_guard(stream):
    """Eddy runs every op on the device's one stream: nothing to switch."""
    yield
