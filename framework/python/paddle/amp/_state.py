"""The autocast state the op wrappers consult (private to paddle).

Every Python wrapper of an op on an AMP list (paddle.matmul, F.linear,
F.conv2d, paddle.exp, F.softmax, F.cross_entropy, ...) begins its C call with
one test of the module global ON, the number of threads inside an enabled
auto_cast. While it is 0 (the common case) that test is all AMP costs. When
it is set, the wrapper hands its C function and tensor inputs to call():

    if _amp.ON:
        return _amp.call('softmax', _C.softmax, (x,), axis)
    return _C.softmax(x, axis)

call() reads this thread's state (auto_cast is thread-local), picks the
dtype the op runs in (white list: the amp dtype; black list: float32; other
ops: the widest of the inputs, or at O2 without promotion the amp dtype),
casts the float32/float16/bfloat16 inputs with _C.cast (differentiable, so
gradients flow back to float32 parameters in float32) and runs the op.

Kernels without a float16/bfloat16 path (the CPU backend's conv, pooling,
normalisation, softmax and loss kernels take float32/float64 only) refuse a
low-precision input with TypeError; call() then runs the op in float32 on
the inputs already rounded to the amp dtype and rounds the float results
back (a low-precision kernel with float32 accumulation, emulated), and
remembers the (op, dtype, place) so later calls go there directly.

While any thread is in auto_cast, Tensor.__matmul__ is a Python function
(the C slot otherwise), so `x @ y` is autocast like paddle.matmul.
"""
import threading

from paddle import _C

ON = 0                 # threads inside an enabled auto_cast (the wrappers' one test)
_lock = threading.Lock()
_tls = threading.local()
_NO_LOW = set()        # (op, dtype, place) whose kernel refused a low-precision input
_ORIG = {}             # Tensor slot wrappers replaced while ON


class AmpState:
    """One auto_cast's settings, as the ops see them."""
    __slots__ = ('level', 'dtype', 'white', 'black', 'promote')

    def __init__(self, level, dtype, white, black, promote):
        self.level = level        # 'O1' | 'O2' | 'OD'
        self.dtype = dtype        # paddle.float16 or paddle.bfloat16
        self.white = white        # frozenset of op names
        self.black = black
        self.promote = promote


def current():
    """This thread's enabled AmpState, or None."""
    return getattr(_tls, 'state', None)


def saved():
    """This thread's stack of states saved by the auto_cast guards it is in."""
    st = getattr(_tls, 'saved', None)
    if st is None:
        st = _tls.saved = []
    return st


def _dtypes():
    import paddle
    return paddle.float32, paddle.float16, paddle.bfloat16


def push(state):
    """Make state this thread's (None: AMP off here); returns the previous one."""
    global ON
    prev = getattr(_tls, 'state', None)
    _tls.state = state
    with _lock:
        ON += (state is not None) - (prev is not None)
        _slots(ON > 0)
    return prev


def _slots(active):
    T = _C.Tensor
    if active and not _ORIG:
        _ORIG['__matmul__'] = T.__dict__['__matmul__']
        _ORIG['__rmatmul__'] = T.__dict__['__rmatmul__']
        T.__matmul__ = _amp_matmul
        T.__rmatmul__ = _amp_rmatmul
    elif not active and _ORIG:
        # assigning the original slot wrappers back restores the C slot
        T.__matmul__ = _ORIG.pop('__matmul__')
        T.__rmatmul__ = _ORIG.pop('__rmatmul__')


def _amp_matmul(x, y):
    if isinstance(y, _C.Tensor):
        return call(('matmul_v2', 'matmul'), _C.matmul, (x, y))
    return _orig('__matmul__')(x, y)


def _amp_rmatmul(y, x):
    if isinstance(x, _C.Tensor):
        return call(('matmul_v2', 'matmul'), _C.matmul, (x, y))
    return _orig('__rmatmul__')(y, x)


def _orig(name):
    d = _ORIG.get(name)
    return d if d is not None else getattr(_C.Tensor, name)


def target(op, st, tensors):
    """The dtype op runs in under st for these inputs, or None (leave them).
    op is a name or a tuple of names (an Eddy function standing for several
    Paddle ops, e.g. F.linear is 'linear' and 'matmul_v2')."""
    names = op if type(op) is tuple else (op,)
    for n in names:
        if n in st.black:
            return _dtypes()[0]
    for n in names:
        if n in st.white:
            return st.dtype
    if st.level == 'OD':
        return _dtypes()[0]
    f32, f16, bf16 = _dtypes()
    has32 = False
    low = None
    for t in tensors:
        if t is None:
            continue
        d = t.dtype
        if d is f32:
            has32 = True
        elif d is f16 or d is bf16:
            low = d if low is None or low is d else f32
    if low is None and not has32:
        return None
    if st.level == 'O2' and not st.promote:
        return st.dtype
    if has32 or low is f32:
        return f32
    return low


def cast_inputs(tensors, dt):
    """tensors with every float32/float16/bfloat16 one cast to dt."""
    f32, f16, bf16 = _dtypes()
    out = []
    for t in tensors:
        if t is not None:
            d = t.dtype
            if d is not dt and (d is f32 or d is f16 or d is bf16):
                t = _C.cast(t, dt)
        out.append(t)
    return out


def _round_out(out, dt):
    f32 = _dtypes()[0]
    if isinstance(out, _C.Tensor):
        return _C.cast(out, dt) if out.dtype is f32 else out
    if isinstance(out, (tuple, list)):
        return type(out)(_round_out(o, dt) for o in out)
    return out


def call(op, fn, tensors, *args, **kwargs):
    """fn(*tensors, *args, **kwargs) with tensors cast for op under this
    thread's auto_cast (plain call when this thread has none). fn may be
    the calling wrapper itself: it runs with AMP suspended."""
    st = getattr(_tls, 'state', None)
    if st is None:
        return fn(*tensors, *args, **kwargs)
    dt = target(op, st, tensors)
    if dt is None:
        return fn(*tensors, *args, **kwargs)
    ins = cast_inputs(tensors, dt)
    f32 = _dtypes()[0]
    # fn runs with this thread's AMP suspended: a wrapper that composes other
    # wrappers (group_norm, conv transpose) is cast once, as one op
    _tls.state = None
    try:
        if dt is f32:
            return fn(*ins, *args, **kwargs)
        key = None
        for t in ins:
            if t is not None and t.dtype is dt:
                key = (op, dt, str(t.place))
                break
        if key is None or key not in _NO_LOW:
            try:
                return fn(*ins, *args, **kwargs)
            except TypeError:
                if key is None:
                    raise
                _NO_LOW.add(key)
        # no low-precision kernel: float32 compute on the rounded inputs
        out = fn(*cast_inputs(ins, f32), *args, **kwargs)
        return _round_out(out, dt)
    finally:
        _tls.state = st


def cast(op, *tensors):
    """The inputs cast for op, for a wrapper that composes several C calls
    itself (no float32 fallback: use it where the kernels take every dtype);
    one tensor comes back as a tensor, several as a tuple."""
    st = getattr(_tls, 'state', None)
    if st is None:
        return tensors[0] if len(tensors) == 1 else tensors
    dt = target(op, st, tensors)
    out = tensors if dt is None else cast_inputs(tensors, dt)
    return out[0] if len(out) == 1 else tuple(out)
