"""paddle: PaddlePaddle's Python API on Eddy's framework (a C extension,
paddle._C, over framework/include/fw/*.h). Subpackages users configure or
subclass (nn, optimizer, io, vision, metric, hapi, ...) load on first use."""
import importlib as _importlib

__version__ = '3.0.0'
version = type('version', (), {
    'full_version': __version__, 'major': '3', 'minor': '0', 'patch': '0', 'rc': '0',
    'istaged': True, 'commit': 'eddy',
    'show': staticmethod(lambda: print('full_version: {}\nmajor: 3\nminor: 0\npatch: 0\n'
                                       'cuda: False\ncudnn: False'.format(__version__))),
    'cuda': staticmethod(lambda: 'False'), 'cudnn': staticmethod(lambda: 'False')})

from paddle import _C  # noqa: E402
from paddle._C import Tensor  # noqa: E402,F401

from paddle.framework import (  # noqa: E402,F401
    dtype, float32, float64, float16, bfloat16, int32, int64, bool, uint8, int8, int16,
    complex64, complex128,
    set_default_dtype, get_default_dtype, CPUPlace, CUDAPlace, CUDAPinnedPlace,
    set_device, get_device, is_compiled_with_cuda, is_compiled_with_rocm,
    is_compiled_with_xpu, ParamAttr, no_grad, enable_grad, set_grad_enabled,
    is_grad_enabled, grad, save, load, seed, get_rng_state, set_rng_state, in_dynamic_mode)
from paddle.framework.parameter import Parameter as _Parameter  # noqa: E402,F401
from paddle import framework, device, tensor  # noqa: E402,F401
from paddle.tensor import set_printoptions  # noqa: E402,F401
from paddle.tensor import (  # noqa: E402,F401
    to_tensor, zeros, ones, empty, full, zeros_like, ones_like, full_like, empty_like, arange,
    linspace, eye, assign, clone, tril, triu, meshgrid, rand, randn, standard_normal, uniform,
    normal, randint, randperm, bernoulli, multinomial)
from paddle.tensor import (  # noqa: E402,F401
    add, subtract, multiply, divide, pow, maximum, minimum, fmax, fmin, floor_divide,
    remainder, mod, floor_mod, exp, log, log2, log10, log1p, expm1, sqrt, rsqrt, square, abs,
    neg, tanh, sigmoid, sin, cos, reciprocal, sign, floor, ceil, round, trunc, scale, clip,
    erf, isnan, isinf, isfinite, nan_to_num, equal, not_equal, less_than, less_equal,
    greater_than, greater_equal, less, greater, logical_and, logical_or, logical_xor,
    logical_not, bitwise_and, bitwise_or, bitwise_xor, bitwise_not, equal_all, allclose,
    isclose, any, all, is_tensor, is_floating_point, is_integer, sum, mean, max, min, amax,
    amin, prod, var, std, logsumexp, norm, cumsum, numel, count_nonzero, argmax, argmin,
    argsort, sort, topk, where, nonzero, masked_select, masked_fill, index_select, gather,
    gather_nd, take_along_axis, put_along_axis, scatter, index_add, unique, matmul, mm, bmm,
    dot, outer, t, reshape, reshape_, flatten, squeeze, unsqueeze, transpose, moveaxis,
    swapaxes, concat, stack, split, chunk, unbind, tile, expand, expand_as, broadcast_to,
    broadcast_tensors, cast, flip, roll, shape, rank, increment, diag, kron, einsum, dist,
    tolist, inverse, real, imag, conj, angle, complex, as_complex, as_real, is_complex)

CUDAPinnedPlace = CUDAPinnedPlace
dtype = dtype

_LAZY_MODULES = ('nn', 'optimizer', 'io', 'vision', 'metric', 'hapi', 'callbacks', 'utils',
                 'static', 'regularizer', 'amp', 'jit', 'distributed', 'inference', 'text',
                 'autograd', 'linalg', 'fft', 'signal', 'incubate', 'sparse', 'onnx',
                 'profiler', 'distribution')
_LAZY_NAMES = {'Model': ('paddle.hapi', 'Model'), 'summary': ('paddle.hapi', 'summary'),
               'flops': ('paddle.hapi', 'flops'), 'DataParallel': ('paddle.distributed',
                                                                   'DataParallel')}


def create_parameter(shape, dtype, name=None, attr=None, is_bias=False,
                     default_initializer=None):
    """paddle.create_parameter: a Parameter (stop_gradient False) initialised
    by attr.initializer / default_initializer / Constant(0) for biases /
    XavierUniform for weights."""
    from paddle.nn import param as _param
    if name is not None:
        attr = ParamAttr._to_attr(attr)
        if attr is not False and attr.name is None:
            attr.name = name
    return _param._create_parameter(shape, dtype, attr=attr, is_bias=is_bias,
                                    default_initializer=default_initializer,
                                    default_name=name)


def get_cudnn_version():
    return None


def disable_static(place=None):
    return None


def enable_static():
    raise NotImplementedError("static graph mode is not supported by this build: Eddy's "
                              "paddle runs in dynamic (eager) mode only")


def in_static_mode():
    return False


def disable_signal_handler():
    return None


def __getattr__(name):
    if name in _LAZY_MODULES:
        try:
            return _importlib.import_module('paddle.' + name)
        except ModuleNotFoundError as e:
            if e.name == 'paddle.' + name:
                raise AttributeError("module 'paddle' has no attribute '{}' (paddle.{} is not "
                                     "part of this build yet)".format(name, name)) from None
            raise
    if name in _LAZY_NAMES:
        mod, attr = _LAZY_NAMES[name]
        try:
            return getattr(_importlib.import_module(mod), attr)
        except ModuleNotFoundError as e:
            if e.name == mod:
                raise AttributeError("module 'paddle' has no attribute '{}' ({} is not part "
                                     "of this build yet)".format(name, mod)) from None
            raise
    raise AttributeError("module 'paddle' has no attribute '{}'".format(name))


def __dir__():
    return sorted(list(globals().keys()) + list(_LAZY_MODULES) + list(_LAZY_NAMES))
