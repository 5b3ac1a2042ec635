"""paddle.amp.auto_cast / amp_guard and paddle.amp.decorate (Paddle 3.x
paddle/amp/auto_cast.py) over the per-thread state in _state.py.

Unlike Paddle, auto_cast is not switched off on the CPU: the CPU backend's
elementwise, reduction and matmul kernels take float16 and bfloat16 (with
float32 accumulation) and the others are emulated in float32 (_state.call),
so AMP code runs and is tested on every machine.
"""
import functools
import warnings

from . import _state
from .amp_lists import black_list, white_list

_LEVELS = ('O0', 'OD', 'O1', 'O2')


class AMPGlobalState:
    """Paddle's amp_global_state(): amp_dtype is the dtype of the last
    auto_cast entered (never restored on exit, as in Paddle); GradScaler
    reads it."""

    def __init__(self):
        self.model_parameters = []
        self.use_master_grad = False
        self.amp_dtype = 'float32'


_amp_global_state = AMPGlobalState()


def amp_global_state():
    return _amp_global_state


def _update_list(custom_white_list, custom_black_list, level='O1', dtype='float16'):
    """(white, black) sets for level/dtype with the user's lists applied:
    a custom white op leaves the black list and vice versa; one op in both
    custom lists is an error."""
    if level == 'O0':
        return set(), set()
    white = set(white_list()[dtype][level])
    black = set(black_list()[dtype][level])
    if custom_white_list and custom_black_list:
        for op in custom_white_list:
            if op in custom_black_list:
                raise ValueError("Custom white list overlap custom black list")
    for op in custom_white_list or ():
        black.discard(op)
        white.add(op)
    for op in custom_black_list or ():
        white.discard(op)
        black.add(op)
    return white, black


def _check_list(lst, what):
    if lst is None:
        return
    if isinstance(lst, str) or not isinstance(lst, (set, list, tuple, frozenset)):
        raise TypeError("{} should be a set, list or tuple of op names, got {}".format(
            what, type(lst).__name__))


class auto_cast:
    """auto_cast(enable=True, custom_white_list=None, custom_black_list=None,
    level='O1', dtype='float16', use_promote=True): a context manager (and
    decorator) under which this thread's ops pick their dtype from the AMP
    lists. O1: white-list ops (matmul, linear, conv2d, einsum) run in dtype,
    black-list ops (exp, log, softmax, cross_entropy, layer_norm, sum, mean,
    ...) in float32, others in the widest input dtype. O2: every op but the
    (short) O2 black list runs in dtype once its inputs are low precision
    (models decorated with paddle.amp.decorate); use_promote=False runs even
    float32 inputs in dtype. OD: only white-list ops run in dtype. O0 or
    enable=False: off (nested inside an enabled one too)."""

    def __init__(self, enable=True, custom_white_list=None, custom_black_list=None,
                 level='O1', dtype='float16', use_promote=True):
        if not isinstance(level, str) or level.upper() not in _LEVELS:
            raise ValueError("level should be O0, OD, O1 or O2.")
        level = level.upper()
        if not isinstance(dtype, str):
            dtype = str(dtype).replace('paddle.', '')
        dtype = dtype.lower()
        if enable and dtype not in ('float16', 'bfloat16'):
            raise ValueError("If enable amp, dtype should be 'float16' or 'bfloat16'.")
        _check_list(custom_white_list, 'custom_white_list')
        _check_list(custom_black_list, 'custom_black_list')
        white, black = _update_list(custom_white_list, custom_black_list,
                                    level, dtype if dtype in ('float16', 'bfloat16')
                                    else 'float16')
        self._enable = bool(enable) and level != 'O0'
        self._dtype = dtype
        self._level = level
        self._state = None
        if self._enable:
            import paddle
            self._state = _state.AmpState(level, getattr(paddle, dtype), frozenset(white),
                                          frozenset(black), bool(use_promote))
    def __enter__(self):
        # the previous state goes on this thread's stack, not on self: one
        # auto_cast object (a decorated function) may run in several threads
        _amp_global_state.amp_dtype = self._dtype if self._enable else 'float32'
        _state.saved().append(_state.push(self._state))
        return self

    def __exit__(self, *exc):
        _state.push(_state.saved().pop())
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self:
                return fn(*args, **kwargs)
        return wrapper


amp_guard = auto_cast


def _in_amp_guard():
    st = _state.current()
    return st is not None and st.level == 'O1'


def _in_pure_fp16_guard():
    st = _state.current()
    return st is not None and st.level == 'O2'


# ---- decorate ---------------------------------------------------------------------

def _norm_types():
    from paddle.nn.layer import norm
    return (norm._BatchNormBase, norm.LayerNorm, norm.GroupNorm, norm._InstanceNormBase)


def _excluded(models, excluded_layers):
    """ids of the layers kept in float32 by excluded_layers (instances with
    all their sublayers, or types)."""
    import paddle
    msg = ("excluded_layers must be either a nn.Layer instance/type or a list of "
           "nn.Layer instances/types.")
    if excluded_layers is None:
        items = []
    elif isinstance(excluded_layers, (paddle.nn.Layer, type)):
        items = [excluded_layers]
    elif isinstance(excluded_layers, (list, tuple)):
        items = list(excluded_layers)
    else:
        raise TypeError(msg)
    ids, types = set(), []
    for it in items:
        if isinstance(it, paddle.nn.Layer):
            ids.update(id(s) for s in it.sublayers(include_self=True))
        elif isinstance(it, type) and issubclass(it, paddle.nn.Layer):
            types.append(it)
        else:
            raise TypeError(msg)
    types = tuple(types)
    if types:
        for m in models:
            for s in m.sublayers(include_self=True):
                if isinstance(s, types):
                    ids.add(id(s))
    return ids


class _SaveDtypeHook:
    """state_dict hook: floating entries come out as save_dtype (the layer's
    own parameters keep their dtype)."""

    def __init__(self, save_dtype):
        self._save_dtype = save_dtype

    def __call__(self, state_dict):
        import paddle
        for k in list(state_dict):
            v = state_dict[k]
            if isinstance(v, paddle.Tensor) and paddle.is_floating_point(v) and \
                    str(v.dtype).replace('paddle.', '') != self._save_dtype:
                c = paddle.cast(v, self._save_dtype)
                c.name = v.name
                state_dict[k] = c


def decorate(models, optimizers=None, level='O1', dtype='float16', master_weight=None,
             save_dtype=None, master_grad=False, excluded_layers=None):
    """Paddle's paddle.amp.decorate. O1 returns the arguments unchanged. O2
    casts the models' floating parameters and buffers to dtype in place
    (same Parameter objects) except in normalization layers (BatchNorm*,
    LayerNorm, GroupNorm, InstanceNorm*) and excluded_layers, and turns on
    the optimizers' float32 master weights (multi_precision) unless
    master_weight is False. save_dtype makes the models' state_dict() return
    floating tensors in that dtype. Returns models (and optimizers) in the
    shape given: a Layer or a list."""
    import paddle
    from paddle.nn.layer.layers import _cast_in_place
    if not isinstance(level, str) or level.upper() not in ('O1', 'O2'):
        raise ValueError("level should be O1 or O2, O1 represent AMP train mode, O2 represent "
                         "Pure fp16 train mode.")
    level = level.upper()
    if not isinstance(dtype, str):
        dtype = str(dtype).replace('paddle.', '')
    dtype = dtype.lower()
    if dtype not in ('float16', 'bfloat16'):
        raise ValueError("dtype should be 'float16' or 'bfloat16'.")
    if level == 'O1':
        return models if optimizers is None else (models, optimizers)

    single_model = isinstance(models, paddle.nn.Layer)
    model_list = [models] if single_model else models
    if not isinstance(model_list, (list, tuple)):
        raise TypeError("models must be either a single model or a list of models.")
    for m in model_list:
        if not isinstance(m, paddle.nn.Layer):
            raise RuntimeError("Current train mode is pure fp16, models should be "
                               "paddle.nn.Layer, but receive {}.".format(type(m)))
    single_opt = optimizers is not None and not isinstance(optimizers, (list, tuple))
    opt_list = [] if optimizers is None else ([optimizers] if single_opt else optimizers)
    for o in opt_list:
        if not isinstance(o, paddle.optimizer.Optimizer):
            raise RuntimeError("Current train mode is pure fp16, optimizers should be "
                               "paddle.optimizer.Optimizer, but receive {}.".format(type(o)))
    if save_dtype is not None and save_dtype not in ('float16', 'bfloat16', 'float32',
                                                     'float64'):
        raise ValueError("save_dtype can only be float16 float32 or float64, but your input "
                         "save_dtype is {}.".format(save_dtype))

    keep = _excluded(model_list, excluded_layers)
    norms = _norm_types()
    floats = (paddle.float32, paddle.float64, paddle.float16, paddle.bfloat16)
    target = getattr(paddle, dtype)
    for m in model_list:
        for layer in m.sublayers(include_self=True):
            if id(layer) in keep or isinstance(layer, norms):
                continue
            for p in layer._parameters.values():
                if p is not None and p.dtype in floats and p.dtype is not target:
                    _cast_in_place(p, dtype)
            for b in layer._buffers.values():
                if b is not None and b.dtype in floats and b.dtype is not target:
                    _cast_in_place(b, dtype)
            layer._dtype = dtype
    for o in opt_list:
        o._multi_precision = master_weight is None or bool(master_weight)
        o._opt = None          # rebuilt with master weights on the next step
    if save_dtype is not None:
        for m in model_list:
            m._register_state_dict_hook(_SaveDtypeHook(save_dtype))
    if master_grad:
        warnings.warn("paddle.amp.decorate: master_grad is accepted; gradients of "
                      "low-precision parameters are cast to float32 for the update anyway")
    if optimizers is None:
        return models
    return models, optimizers


amp_decorate = decorate
