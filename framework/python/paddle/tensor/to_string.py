"""Tensor printing like Paddle's (paddle/tensor/to_string.py): precision 8,
threshold 1000, edgeitems 3, linewidth 80, aligned items."""
import numpy as np


class _PrintOptions:
    precision = 8
    threshold = 1000
    edgeitems = 3
    linewidth = 80
    sci_mode = False


DEFAULT_PRINT_OPTIONS = _PrintOptions()


def set_printoptions(precision=None, threshold=None, edgeitems=None, sci_mode=None,
                     linewidth=None):
    """paddle.set_printoptions."""
    o = DEFAULT_PRINT_OPTIONS
    if precision is not None:
        o.precision = int(precision)
    if threshold is not None:
        o.threshold = int(threshold)
    if edgeitems is not None:
        o.edgeitems = int(edgeitems)
    if linewidth is not None:
        o.linewidth = int(linewidth)
    if sci_mode is not None:
        o.sci_mode = bool(sci_mode)


_FLOATS = (np.float16, np.float32, np.float64)


def _format_item(v, max_width=0, signed=False):
    o = DEFAULT_PRINT_OPTIONS
    if isinstance(v, np.ndarray):
        v = v[()]
    if isinstance(v, _FLOATS) or isinstance(v, float):
        if o.sci_mode:
            s = '{:.{}e}'.format(v, o.precision)
        elif np.ceil(v) == v:
            s = '{:.0f}.'.format(v)
        else:
            s = '{:.{}f}'.format(v, o.precision)
    else:
        s = '{}'.format(v)
    if max_width > len(s):
        if signed:
            if v < 0:
                return s.ljust(max_width)
            return ' ' + s.ljust(max_width - 1)
        return s.ljust(max_width)
    return s


def _to_summary(a):
    e = DEFAULT_PRINT_OPTIONS.edgeitems
    if a.ndim == 0:
        return a
    if a.shape[0] > 2 * e:
        a = np.concatenate([a[:e], a[-e:]])
    if a.ndim == 1:
        return a
    return np.stack([_to_summary(x) for x in a]) if len(a) else a


def _get_max_width(a):
    max_width, signed = 0, False
    cx = np.iscomplexobj(a)     # complex items print as Python's repr, unsigned
    for item in a.flatten():
        if not signed and not cx and item < 0:
            signed = True
        max_width = max(max_width, len(_format_item(item)))
    return max_width, signed


def _format_tensor(a, summary, indent=0, max_width=0, signed=False):
    o = DEFAULT_PRINT_OPTIONS
    e = o.edgeitems
    if a.ndim == 0:
        return _format_item(a, max_width, signed)
    if a.ndim == 1:
        items_per_line = max(1, (o.linewidth - indent) // (max_width + 2))
        if summary and a.shape[0] > 2 * e:
            items = [_format_item(x, max_width, signed) for x in a[:e]] + ['...'] + \
                    [_format_item(x, max_width, signed) for x in a[-e:]]
        else:
            items = [_format_item(x, max_width, signed) for x in a]
        lines = [items[i:i + items_per_line] for i in range(0, len(items), items_per_line)]
        s = (',\n' + ' ' * (indent + 1)).join(', '.join(line) for line in lines)
        return '[' + s + ']'
    if summary and a.shape[0] > 2 * e:
        parts = [_format_tensor(x, summary, indent + 1, max_width, signed) for x in a[:e]] + \
                ['...'] + \
                [_format_tensor(x, summary, indent + 1, max_width, signed) for x in a[-e:]]
    else:
        parts = [_format_tensor(x, summary, indent + 1, max_width, signed) for x in a]
    return '[' + (',' + '\n' * (a.ndim - 1) + ' ' * (indent + 1)).join(parts) + ']'


def tensor_to_string(t, prefix='Tensor'):
    indent = len(prefix) + 1
    a = t.numpy()
    shape = list(t.shape)
    size = int(np.prod(shape)) if shape else 0
    summary = size > DEFAULT_PRINT_OPTIONS.threshold
    if a.size:
        max_width, signed = _get_max_width(_to_summary(a))
    else:
        max_width, signed = 0, False
    data = _format_tensor(a, summary, indent=indent, max_width=max_width, signed=signed)
    # a gradient read from .grad prints stop_gradient=False, as Paddle's does
    sg = t.stop_gradient and not getattr(t, '_is_grad', False)
    return ('{prefix}(shape={shape}, dtype={dtype}, place={place}, stop_gradient={sg},\n'
            '{indent}{data})').format(prefix=prefix, shape=shape, dtype=t.dtype.name
                                      if hasattr(t.dtype, 'name') else t.dtype,
                                      place=t.place, sg=sg, indent=' ' * indent,
                                      data=data)
