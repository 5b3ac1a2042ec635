"""paddle.amp: automatic mixed precision (Paddle 3.x): auto_cast (amp_guard),
decorate (amp_decorate), GradScaler (AmpScaler), the default op lists
(amp_lists) and the device checks. See auto_cast.py, grad_scaler.py and
_state.py (how ops consult the autocast state)."""
from . import amp_lists  # noqa: F401
from .auto_cast import amp_decorate, amp_guard, auto_cast, decorate  # noqa: F401
from .grad_scaler import AmpScaler, GradScaler, OptimizerState  # noqa: F401

__all__ = ['auto_cast', 'GradScaler', 'decorate', 'is_float16_supported',
           'is_bfloat16_supported']


def _device_kind(device):
    import paddle
    if device is None:
        device = paddle.device.get_device()
    if not isinstance(device, str):
        device = str(device)
    return device.split(':')[0].lower()


def is_float16_supported(device=None):
    """True: every backend here runs float16 (the CPU one with float32
    accumulation, emulating the kernels it lacks)."""
    _device_kind(device)
    return True


def is_bfloat16_supported(device=None):
    """True: every backend here runs bfloat16 (see is_float16_supported)."""
    _device_kind(device)
    return True
