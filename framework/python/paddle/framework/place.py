"""Places and devices over fw/device.h (paddle._C.device_*): CPUPlace always;
CUDAPlace(i) computes on GPU i when the CUDA backend is built and a device is
usable (is_compiled_with_cuda()). paddle.set_device picks the device that
creation functions use; ops put their outputs on their inputs' device."""
import os

from paddle import _C

_DEV_CPU, _DEV_CUDA = 0, 1


class Place:
    """The place a tensor lives on; prints like Paddle's: Place(cpu), Place(gpu:0)."""

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

    def get_device_id(self):
        return self._device_id


class CPUPlace(Place):
    def __init__(self):
        super().__init__('cpu', 0)


class CUDAPlace(Place):
    def __init__(self, device_id=0):
        device_id = int(device_id)
        if device_id < 0:
            raise ValueError("CUDAPlace: the device id must be >= 0, got {}".format(device_id))
        super().__init__('gpu', device_id)


class CUDAPinnedPlace(Place):
    def __init__(self):
        super().__init__('gpu_pinned', 0)


_CPU = CPUPlace()
_GPU_PLACES = {}


def _place_of(kind, index):
    """Tensor.place of a tensor on device `kind` (the C side calls this)."""
    if kind == _DEV_CPU:
        return _CPU
    p = _GPU_PLACES.get(index)
    if p is None:
        p = _GPU_PLACES[index] = CUDAPlace(max(int(index), 0))
    return p


_C._register_place(_CPU)
_C._register_place_fn(_place_of)


def is_compiled_with_cuda():
    """True when the CUDA backend is built AND a GPU is usable here (so code
    that branches on it, as Paddle's tutorials do, runs where it can)."""
    return bool(_C.device_compiled(_DEV_CUDA)) and _C.device_count(_DEV_CUDA) > 0


def is_compiled_with_rocm():
    return False


def is_compiled_with_xpu():
    return False


def _gpu_unavailable():
    """Why no GPU can be used: the framework's reason."""
    return _C.device_unavailable_reason(_DEV_CUDA) or 'no usable CUDA device'


def _default_gpu():
    """The GPU 'gpu' means: the first of FLAGS_selected_gpus (set by
    paddle.distributed.launch per rank), else 0 (Paddle's ParallelEnv().dev_id)."""
    sel = os.environ.get('FLAGS_selected_gpus', '').split(',')[0].strip()
    return int(sel) if sel.isdigit() else 0


def _parse_device(device):
    """('cpu', 0) or ('gpu', index) from a Place or a name like 'gpu:1'."""
    if isinstance(device, Place):
        if device.is_gpu_place():
            return 'gpu', device.gpu_device_id()
        return 'cpu', 0
    if not isinstance(device, str):
        raise ValueError("The device must be a string like 'cpu' or 'gpu:0', got {!r}".format(device))
    d = device.strip().lower()
    if d == 'cpu':
        return 'cpu', 0
    for pre in ('gpu', 'cuda'):
        if d == pre:
            return 'gpu', _default_gpu()
        if d.startswith(pre + ':') and d[len(pre) + 1:].isdigit():
            return 'gpu', int(d[len(pre) + 1:])
    raise ValueError("The device must be a string which is like 'cpu', 'gpu', 'gpu:x', "
                     "'xpu', 'xpu:x', 'npu', 'npu:x', got '{}'".format(device))


def _require_gpu(index, what):
    """Raise ValueError when GPU `index` cannot be used (with the reason)."""
    n = _C.device_count(_DEV_CUDA)
    if n == 0:
        raise ValueError("The device should not be '{}', since PaddlePaddle cannot use a GPU "
                         "here: {}".format(what, _gpu_unavailable()))
    if not 0 <= index < n:
        raise ValueError("The device id {} exceeds gpu card number {} ('{}')".format(
            index, n, what))


def set_device(device):
    """paddle.set_device('cpu' | 'gpu' | 'gpu:N' | a Place): the device that
    creation functions (to_tensor, zeros, rand, layers' parameters) use from
    now on. ValueError with the reason when no GPU is usable. Returns the Place."""
    kind, index = _parse_device(device)
    if kind == 'cpu':
        _C.device_set_default(_DEV_CPU)
        return _CPU
    _require_gpu(index, device if isinstance(device, str) else 'gpu:{}'.format(index))
    _C.device_set_current(_DEV_CUDA, index)
    _C.device_set_default(_DEV_CUDA)
    return _place_of(_DEV_CUDA, index)


def get_device():
    """paddle.get_device(): 'cpu' or 'gpu:N'."""
    if _C.device_default() == _DEV_CUDA:
        return 'gpu:{}'.format(_C.device_current(_DEV_CUDA))
    return 'cpu'


def _get_place(place=None):
    """The Place `place` names (None: the default device's); GPU places are
    checked for a usable device (ValueError with the reason otherwise)."""
    if place is None:
        return _place_of(_C.device_default(), _C.device_current(_DEV_CUDA)
                         if _C.device_default() == _DEV_CUDA else 0)
    if isinstance(place, CUDAPinnedPlace):
        return _CPU
    if isinstance(place, (Place, str)):
        kind, index = _parse_device(place)
        if kind == 'cpu':
            return _CPU
        _require_gpu(index, place if isinstance(place, str) else 'gpu:{}'.format(index))
        return _place_of(_DEV_CUDA, index)
    raise ValueError("place must be a Place or a str, got {!r}".format(place))


def _to_place(t, place):
    """Tensor t on `place` (a Place from _get_place): itself when already
    there, else a differentiable copy (fw_tensor_to). One process computes
    on one GPU: moving to a GPU other than the current one makes it current."""
    if place.is_gpu_place():
        index = place.gpu_device_id()
        if _C.device_current(_DEV_CUDA) != index:
            if t.place.is_gpu_place():
                raise ValueError("cannot move a Tensor from {} to {}: one process computes on "
                                 "one GPU".format(t.place, place))
            _C.device_set_current(_DEV_CUDA, index)
        return _C.tensor_to(t, _DEV_CUDA)
    return _C.tensor_to(t, _DEV_CPU)
