"""paddle.framework: dtypes, places, Parameter, ParamAttr, grad mode, save/load."""
from .dtype import (dtype, float32, float64, float16, bfloat16, int32, int64, bool, uint8,  # noqa: F401,A004
                    int8, int16, complex64, complex128, convert_dtype, to_dtype, set_default_dtype, get_default_dtype)
from .place import (Place, CPUPlace, CUDAPlace, CUDAPinnedPlace, set_device, get_device,  # noqa: F401
                    is_compiled_with_cuda, is_compiled_with_rocm, is_compiled_with_xpu)
from .param_attr import ParamAttr  # noqa: F401
from .parameter import Parameter, EagerParamBase  # noqa: F401
from .autograd import no_grad, enable_grad, set_grad_enabled, is_grad_enabled, grad  # noqa: F401
from .io import save, load  # noqa: F401
from paddle import _C


def seed(s):
    """paddle.seed(s): reseed the default generator; returns it."""
    if not isinstance(s, int) or isinstance(s, type(True)):
        raise TypeError("paddle.seed: seed must be an int, got {}".format(type(s).__name__))
    _C.seed(s & 0xFFFFFFFFFFFFFFFF)
    return _Generator()


class _Generator:
    def manual_seed(self, s):
        seed(s)
        return self

    def get_state(self):
        return _C.get_rng_state()

    def set_state(self, st):
        _C.set_rng_state(tuple(st))


def get_rng_state(device=None):
    return [_C.get_rng_state()]


def set_rng_state(state_list, device=None):
    st = state_list[0] if isinstance(state_list, list) else state_list
    _C.set_rng_state(tuple(st))


def in_dynamic_mode():
    return True
