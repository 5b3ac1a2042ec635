"""paddle dtypes: paddle.float32, ... (objects registered with _C so that
Tensor.dtype returns them)."""
import numpy as _np

from paddle import _C

_NAMES = ['float32', 'float64', 'float16', 'bfloat16', 'int32', 'int64', 'bool', 'uint8',
          'complex64', 'complex128']
_NP = {'float32': _np.float32, 'float64': _np.float64, 'float16': _np.float16,
       'bfloat16': _np.float32, 'int32': _np.int32, 'int64': _np.int64,
       'bool': _np.bool_, 'uint8': _np.uint8, 'complex64': _np.complex64,
       'complex128': _np.complex128}


class dtype:
    """A paddle data type; prints as paddle.float32 and compares equal to its
    name ('float32') and to the matching numpy dtype."""
    __slots__ = ('name', '_code')

    def __init__(self, name, code):
        self.name = name
        self._code = code

    def __repr__(self):
        return 'paddle.' + self.name

    __str__ = __repr__

    def __eq__(self, other):
        if isinstance(other, dtype):
            return self._code == other._code
        try:
            return self._code == _C.dtype_code(other)
        except (TypeError, ValueError):
            return False

    def __ne__(self, other):
        return not self.__eq__(other)

    def __hash__(self):
        return hash(self.name)

    def __reduce__(self):
        return (_by_name, (self.name,))

    @property
    def is_floating_point(self):
        return self._code in (0, 1, 2, 3)

    @property
    def is_complex(self):
        return self._code in (8, 9)

    def to_numpy(self):
        return _np.dtype(_NP[self.name])


_ALL = [dtype(n, i) for i, n in enumerate(_NAMES)]
_C._register_dtypes(_ALL)
float32, float64, float16, bfloat16, int32, int64, bool, uint8, complex64, complex128 = _ALL  # noqa: A001,E501
# Paddle has these names too; they map to the nearest dtype we store.
int8 = int32
int16 = int32


def _by_name(name):
    return _ALL[_NAMES.index(name)]


def convert_dtype(d):
    """The dtype's name ('float32') for a paddle dtype, a str or a numpy dtype."""
    if d is None:
        return None
    if isinstance(d, dtype):
        return d.name
    if isinstance(d, str):
        n = d[7:] if d.startswith('paddle.') else d
        if n in ('int8', 'int16', 'uint16', 'uint32'):
            return 'int32' if n != 'uint32' else 'int64'
        return _NAMES[_C.dtype_code(n)]
    try:
        n = _np.dtype(d).name
    except TypeError:
        n = str(d)
    if n in ('int8', 'int16', 'uint16'):
        return 'int32'
    if n in ('uint32', 'uint64'):
        return 'int64'
    return _NAMES[_C.dtype_code(n)]


def to_dtype(d):
    """The paddle dtype object for any dtype spelling."""
    if isinstance(d, dtype):
        return d
    return _by_name(convert_dtype(d))


_default_dtype = 'float32'


def set_default_dtype(d):
    """paddle.set_default_dtype: 'float32', 'float64' or 'float16'."""
    global _default_dtype
    name = convert_dtype(d)
    if name not in ('float16', 'float32', 'float64', 'bfloat16'):
        raise TypeError("set_default_dtype only supports [float16, float32, float64], "
                        "but received {}".format(name))
    _C._set_default_float(name)
    _default_dtype = name


def get_default_dtype():
    """paddle.get_default_dtype() -> 'float32' (a str, as Paddle returns)."""
    return _default_dtype
