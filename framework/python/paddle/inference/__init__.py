"""paddle.inference: Paddle Inference's Python API over Eddy's C runtime.

Config, create_predictor, Predictor (get_input_names, get_input_handle,
get_output_names, get_output_handle, run, clone) and Tensor handles
(reshape, copy_from_cpu, copy_to_cpu, shape) call libeddy_infer.so
(framework/infer/eddy_infer.h) through ctypes: the model runs in C with the
framework's CPU kernels, not in Python. Models are what paddle.jit.save
writes (PATH.pdmodel + PATH.pdiparams).
"""
import ctypes
import os

import numpy as np

__all__ = ['Config', 'create_predictor', 'Predictor', 'Tensor', 'PrecisionType', 'PlaceType',
           'get_version']

_LIB = None
_MAX_DIMS = 8
_DTYPES = {0: np.float32, 1: np.float64, 2: np.float16, 4: np.int32, 5: np.int64, 6: np.bool_,
           7: np.uint8}


class PrecisionType:
    Float32 = 0
    Half = 1
    Int8 = 2


class PlaceType:
    UNK = -1
    CPU = 0
    GPU = 1


def get_version():
    return 'eddy-infer 1'


def _lib():
    global _LIB
    if _LIB is None:
        path = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'libeddy_infer.so')
        if not os.path.exists(path):
            raise RuntimeError('paddle.inference: {} is missing (build the eddy_infer '
                               'target)'.format(path))
        lib = ctypes.CDLL(path)
        P, I, S, L = ctypes.c_void_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_int64
        sigs = {
            'fw_infer_last_error': (S, []),
            'fw_infer_config_new': (P, []),
            'fw_infer_config_free': (None, [P]),
            'fw_infer_config_set_model': (I, [P, S, S]),
            'fw_infer_config_set_cpu_threads': (I, [P, I]),
            'fw_infer_config_enable_gpu': (I, [P, I, I]),
            'fw_infer_config_disable_gpu': (None, [P]),
            'fw_infer_config_switch_ir_optim': (None, [P, I]),
            'fw_infer_predictor_create': (I, [ctypes.POINTER(P), P]),
            'fw_infer_predictor_clone': (I, [ctypes.POINTER(P), P]),
            'fw_infer_predictor_free': (None, [P]),
            'fw_infer_num_inputs': (I, [P]),
            'fw_infer_num_outputs': (I, [P]),
            'fw_infer_input_name': (S, [P, I]),
            'fw_infer_output_name': (S, [P, I]),
            'fw_infer_get_input_handle': (P, [P, S]),
            'fw_infer_get_output_handle': (P, [P, S]),
            'fw_infer_predictor_run': (I, [P]),
            'fw_infer_predictor_memory_plan': (I, [P, ctypes.POINTER(L), ctypes.POINTER(L)]),
            'fw_infer_tensor_reshape': (I, [P, I, ctypes.POINTER(L)]),
            'fw_infer_tensor_copy_from_cpu': (I, [P, P, ctypes.c_size_t]),
            'fw_infer_tensor_copy_to_cpu': (I, [P, P, ctypes.c_size_t]),
            'fw_infer_tensor_shape': (I, [P, ctypes.POINTER(L)]),
            'fw_infer_tensor_dtype': (I, [P]),
            'fw_infer_tensor_nbytes': (ctypes.c_size_t, [P]),
        }
        for name, (res, args) in sigs.items():
            fn = getattr(lib, name)
            fn.restype = res
            fn.argtypes = args
        _LIB = lib
    return _LIB


def _check(rc, what):
    if rc < 0:
        msg = _lib().fw_infer_last_error().decode('utf-8', 'replace')
        exc = {-1: ValueError, -3: ValueError, -4: TypeError, -8: OSError, -9: ValueError,
               -11: NotImplementedError}.get(rc, RuntimeError)
        raise exc('{}: {}'.format(what, msg))
    return rc


class Config:
    """Config(model_file, params_file) or Config(prefix): what to load and how."""

    def __init__(self, model_file=None, params_file=None):
        self._model = None
        self._params = None
        self._threads = None
        self._gpu = None
        self._ir_optim = True
        if model_file is not None:
            self.set_model(model_file, params_file)

    def set_model(self, model_file, params_file=None):
        model_file = os.fspath(model_file)
        if params_file is None and os.path.isdir(model_file):
            params_file = os.path.join(model_file, 'inference.pdiparams')
            model_file = os.path.join(model_file, 'inference.pdmodel')
        elif params_file is None and model_file.endswith('.pdmodel'):
            params_file = model_file[:-len('.pdmodel')] + '.pdiparams'
        elif params_file is None:
            model_file, params_file = model_file + '.pdmodel', model_file + '.pdiparams'
        self._model, self._params = model_file, os.fspath(params_file)

    def set_prog_file(self, f):
        self._model = os.fspath(f)

    def set_params_file(self, f):
        self._params = os.fspath(f)

    def prog_file(self):
        return self._model

    def params_file(self):
        return self._params

    model_dir = prog_file

    def set_cpu_math_library_num_threads(self, n):
        if int(n) < 1:
            raise ValueError('threads must be >= 1, got {}'.format(n))
        self._threads = int(n)

    def cpu_math_library_num_threads(self):
        return self._threads or 1

    def enable_use_gpu(self, memory_pool_init_size_mb=100, device_id=0, precision_mode=None):
        self._gpu = (int(memory_pool_init_size_mb), int(device_id))

    def disable_gpu(self):
        self._gpu = None

    def use_gpu(self):
        return self._gpu is not None

    def switch_ir_optim(self, x=True):
        self._ir_optim = bool(x)

    def ir_optim(self):
        return self._ir_optim

    def enable_mkldnn(self):
        return None

    def disable_glog_info(self):
        return None

    def enable_memory_optim(self, x=True):
        return None

    def switch_use_feed_fetch_ops(self, x=False):
        return None

    def _build(self):
        lib = _lib()
        c = lib.fw_infer_config_new()
        if not c:
            raise MemoryError('paddle.inference: config')
        try:
            if self._model is None or self._params is None:
                raise ValueError('Config: set the model first (Config(model_file, params_file))')
            _check(lib.fw_infer_config_set_model(c, self._model.encode(), self._params.encode()),
                   'Config')
            if self._threads:
                _check(lib.fw_infer_config_set_cpu_threads(c, self._threads), 'Config')
            if self._gpu:
                _check(lib.fw_infer_config_enable_gpu(c, self._gpu[0], self._gpu[1]), 'Config')
            lib.fw_infer_config_switch_ir_optim(c, 1 if self._ir_optim else 0)
        except BaseException:
            lib.fw_infer_config_free(c)
            raise
        return c


class Tensor:
    """An input or output handle of a Predictor."""

    def __init__(self, pred, ptr, name, is_input):
        self._pred = pred   # keeps the predictor (and the handle's memory) alive
        self._ptr = ptr
        self._name = name
        self._input = is_input

    def name(self):
        return self._name

    def reshape(self, shape):
        shape = [int(d) for d in shape]
        arr = (ctypes.c_int64 * max(1, len(shape)))(*shape)
        _check(_lib().fw_infer_tensor_reshape(self._ptr, len(shape), arr),
               'reshape {}'.format(self._name))

    def copy_from_cpu(self, data):
        a = np.asarray(data)
        want = _DTYPES.get(_lib().fw_infer_tensor_dtype(self._ptr))
        if want is not None and a.dtype != want:
            raise TypeError('copy_from_cpu {}: expected {} data, got {}'.format(
                self._name, np.dtype(want).name, a.dtype.name))
        a = np.ascontiguousarray(a)
        self.reshape(a.shape)
        _check(_lib().fw_infer_tensor_copy_from_cpu(self._ptr, a.ctypes.data, a.nbytes),
               'copy_from_cpu {}'.format(self._name))

    def shape(self):
        buf = (ctypes.c_int64 * _MAX_DIMS)()
        nd = _check(_lib().fw_infer_tensor_shape(self._ptr, buf), 'shape {}'.format(self._name))
        return [int(buf[i]) for i in range(nd)]

    def type(self):
        return np.dtype(_DTYPES[_lib().fw_infer_tensor_dtype(self._ptr)])

    def copy_to_cpu(self):
        shape = self.shape()
        out = np.empty(shape, dtype=self.type())
        _check(_lib().fw_infer_tensor_copy_to_cpu(self._ptr, out.ctypes.data, out.nbytes),
               'copy_to_cpu {}'.format(self._name))
        return out


class Predictor:
    """A loaded model (create_predictor(config)); clone() shares the weights."""

    def __init__(self, ptr):
        self._ptr = ptr

    def __del__(self):
        if getattr(self, '_ptr', None) and _LIB is not None:
            _LIB.fw_infer_predictor_free(self._ptr)
            self._ptr = None

    def get_input_names(self):
        lib = _lib()
        return [lib.fw_infer_input_name(self._ptr, i).decode()
                for i in range(lib.fw_infer_num_inputs(self._ptr))]

    def get_output_names(self):
        lib = _lib()
        return [lib.fw_infer_output_name(self._ptr, i).decode()
                for i in range(lib.fw_infer_num_outputs(self._ptr))]

    def get_input_handle(self, name):
        h = _lib().fw_infer_get_input_handle(self._ptr, str(name).encode())
        if not h:
            _check(-1, 'get_input_handle')
        return Tensor(self, h, str(name), True)

    def get_output_handle(self, name):
        h = _lib().fw_infer_get_output_handle(self._ptr, str(name).encode())
        if not h:
            _check(-1, 'get_output_handle')
        return Tensor(self, h, str(name), False)

    def run(self, inputs=None):
        """Run on the handles' data; with a list of numpy arrays (Paddle's
        other form) copy them in first and return the outputs as arrays."""
        if inputs is not None:
            names = self.get_input_names()
            if len(inputs) != len(names):
                raise ValueError('run: the model takes {} inputs, got {}'.format(
                    len(names), len(inputs)))
            for n, a in zip(names, inputs):
                self.get_input_handle(n).copy_from_cpu(a)
        _check(_lib().fw_infer_predictor_run(self._ptr), 'run')
        if inputs is not None:
            return [self.get_output_handle(n).copy_to_cpu() for n in self.get_output_names()]
        return True

    def clone(self):
        out = ctypes.c_void_p()
        _check(_lib().fw_infer_predictor_clone(ctypes.byref(out), self._ptr), 'clone')
        return Predictor(out.value)

    def memory_plan(self):
        """(planned arena bytes, bytes without reuse) for the current inputs."""
        a, t = ctypes.c_int64(), ctypes.c_int64()
        _check(_lib().fw_infer_predictor_memory_plan(self._ptr, ctypes.byref(a),
                                                     ctypes.byref(t)), 'memory_plan')
        return a.value, t.value

    def try_shrink_memory(self):
        return 0


def create_predictor(config):
    if not isinstance(config, Config):
        raise TypeError('create_predictor expects a paddle.inference.Config')
    lib = _lib()
    c = config._build()
    try:
        out = ctypes.c_void_p()
        _check(lib.fw_infer_predictor_create(ctypes.byref(out), c), 'create_predictor')
    finally:
        lib.fw_infer_config_free(c)
    return Predictor(out.value)
