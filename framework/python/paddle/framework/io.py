"""paddle.save / paddle.load: pickle files like Paddle's .pdparams/.pdopt
(nested containers whose tensors are stored as numpy arrays)."""
import os
import pickle

import numpy as np

from paddle import _C

_STRUCT_KEY = 'StructuredToParameterName@@'


def _to_saveable(obj):
    if isinstance(obj, _C.Tensor):
        return obj.numpy()
    if isinstance(obj, dict):
        return type(obj)((k, _to_saveable(v)) for k, v in obj.items()) \
            if type(obj) is not dict else {k: _to_saveable(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_to_saveable(v) for v in obj]
    if isinstance(obj, tuple):
        return tuple(_to_saveable(v) for v in obj)
    return obj


def save(obj, path, protocol=4, **configs):
    """paddle.save(obj, path): obj is a Tensor, a (nested) dict/list/tuple of
    Tensors, numpy arrays and Python values (a Layer's or an optimizer's
    state_dict). Tensors are written as numpy arrays, with pickle protocol 4."""
    if not isinstance(protocol, int) or not 2 <= protocol <= 5:
        raise ValueError("paddle.save: protocol must be an int in [2, 5], got {!r}".format(
            protocol))
    if hasattr(path, 'write'):
        pickle.dump(_to_saveable(obj), path, protocol=protocol)
        return
    path = os.fspath(path)
    if os.path.basename(path) == '':
        raise ValueError("paddle.save: {!r} is a directory, expected a file name such as "
                         "'model.pdparams'".format(path))
    d = os.path.dirname(path)
    if d:
        os.makedirs(d, exist_ok=True)
    data = _to_saveable(obj)
    if isinstance(obj, dict) and obj and all(isinstance(v, _C.Tensor) for v in obj.values()):
        names = {k: v.name for k, v in obj.items() if getattr(v, 'persistable', False)}
        if names:
            data = dict(data)
            data[_STRUCT_KEY] = names
    tmp = path + '.tmp{}'.format(os.getpid())
    try:
        with open(tmp, 'wb') as f:
            pickle.dump(data, f, protocol=protocol)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def _from_saved(obj, return_numpy):
    if isinstance(obj, np.ndarray):
        if return_numpy:
            return obj
        return _C.to_tensor(np.ascontiguousarray(obj))
    if isinstance(obj, dict):
        return {k: _from_saved(v, return_numpy) for k, v in obj.items() if k != _STRUCT_KEY}
    if isinstance(obj, list):
        return [_from_saved(v, return_numpy) for v in obj]
    if isinstance(obj, tuple):
        if len(obj) == 2 and isinstance(obj[0], str) and isinstance(obj[1], np.ndarray):
            # how Paddle pickles a Tensor inside a general object: (name, data)
            if return_numpy:
                return obj[1]
            t = _C.to_tensor(np.ascontiguousarray(obj[1]))
            t.name = obj[0]
            return t
        return tuple(_from_saved(v, return_numpy) for v in obj)
    return obj


def load(path, return_numpy=False, **configs):
    """paddle.load(path): the object paddle.save wrote, numpy arrays turned
    back into Tensors (kept as numpy with return_numpy=True)."""
    if hasattr(path, 'read'):
        return _from_saved(pickle.load(path), return_numpy)
    path = os.fspath(path)
    if not os.path.exists(path):
        raise ValueError("The ``path`` ({}) to load model not exists.".format(path))
    if os.path.isdir(path):
        raise ValueError("paddle.load: {} is a directory, expected a file".format(path))
    with open(path, 'rb') as f:
        try:
            obj = pickle.load(f, encoding='latin1')
        except (pickle.UnpicklingError, EOFError) as e:
            raise ValueError("paddle.load: {} is not a file written by paddle.save ({})".format(
                path, e)) from None
    return _from_saved(obj, return_numpy)
