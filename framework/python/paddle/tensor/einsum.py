"""paddle.einsum (Paddle's paddle/tensor/einsum.py).

An equation is reduced to the framework's differentiable ops: repeated
labels inside one operand take the diagonal (multiply by an identity and
sum), labels only one operand uses and the output does not are summed away,
and the operands are then contracted left to right, each pair as one batched
matmul (permute to [batch, free, contracted] x [batch, contracted, free],
reshape to 3-D, matmul), so the work runs in OpenBLAS, never in Python loops
over elements. Broadcasting follows NumPy (size-1 dimensions, `...`)."""
import string

import numpy as np

from paddle import _C
from paddle.amp import _state as _amp
from paddle._lazy import paddle as _paddle

__all__ = ['einsum']

_LETTERS = set(string.ascii_letters)


def _parse(equation, operands):
    eq = equation.replace(' ', '')
    if '->' in eq:
        lhs, rhs = eq.split('->', 1)
        if '->' in rhs:
            raise ValueError("einsum: the equation {!r} has more than one '->'".format(equation))
    else:
        lhs, rhs = eq, None
    terms = lhs.split(',')
    if len(terms) != len(operands):
        raise ValueError("einsum: the equation {!r} has {} operand(s) but {} were given".format(
            equation, len(terms), len(operands)))
    # ellipsis dimensions get labels '0', '1', ... aligned from the right
    ell_dims = 0
    for t, x in zip(terms, operands):
        if '...' in t:
            ell_dims = max(ell_dims, x.ndim - (len(t) - 3))
    ell = [chr(ord('0') + i) for i in range(ell_dims)] if ell_dims <= 10 else None
    if ell is None:
        raise ValueError("einsum: at most 10 broadcast (...) dimensions are supported")
    labels = []
    for t, x in zip(terms, operands):
        if t.count('...') > 1:
            raise ValueError("einsum: more than one '...' in {!r}".format(t))
        plain = t.replace('...', '')
        bad = [c for c in plain if c not in _LETTERS]
        if bad:
            raise ValueError("einsum: invalid label {!r} in {!r}".format(bad[0], equation))
        if '...' in t:
            n = x.ndim - len(plain)
            if n < 0:
                raise ValueError("einsum: operand of shape {} has fewer dims than {!r}".format(
                    list(x.shape), t))
            i = t.index('...')
            lab = list(t[:i]) + ell[ell_dims - n:] + list(t[i + 3:])
        else:
            lab = list(t)
            if len(lab) != x.ndim:
                raise ValueError("einsum: {!r} names {} dims but the operand has shape {}"
                                 .format(t, len(lab), list(x.shape)))
        labels.append(lab)
    if rhs is None:
        counts = {}
        for lab in labels:
            for c in lab:
                counts[c] = counts.get(c, 0) + 1
        out = [c for c in ell] + sorted(c for c, k in counts.items()
                                        if k == 1 and c in _LETTERS)
    else:
        if rhs.count('...') > 1:
            raise ValueError("einsum: more than one '...' in the output {!r}".format(rhs))
        plain = rhs.replace('...', '')
        if '...' in rhs:
            i = rhs.index('...')
            out = list(rhs[:i]) + ell + list(rhs[i + 3:])
        else:
            out = list(rhs)
        seen = set()
        all_labels = set(c for lab in labels for c in lab)
        for c in plain:
            if c not in _LETTERS:
                raise ValueError("einsum: invalid output label {!r}".format(c))
            if c in seen:
                raise ValueError("einsum: output label {!r} appears twice".format(c))
            if c not in all_labels:
                raise ValueError("einsum: output label {!r} is not in any input".format(c))
            seen.add(c)
    return labels, out


def _diagonal(x, lab):
    """Take the diagonal over repeated labels: x * I, summed over the second axis."""
    paddle = _paddle()
    lab = list(lab)
    while True:
        dup = next((c for c in lab if lab.count(c) > 1), None)
        if dup is None:
            return x, lab
        a = lab.index(dup)
        b = lab.index(dup, a + 1)
        n = x.shape[a]
        if x.shape[b] != n:
            raise ValueError("einsum: label {!r} has sizes {} and {}".format(dup, n, x.shape[b]))
        shape = [1] * x.ndim
        shape[a] = shape[b] = n
        eye = paddle.to_tensor(np.eye(n).reshape(shape))
        eye = _C.cast(eye, str(x.dtype).replace('paddle.', ''))
        x = _C.sum(_C.multiply(x, eye), [b], False)
        del lab[b]


def _contract(a, la, b, lb, keep):
    """Contract a (labels la) with b (labels lb), keeping labels in keep."""
    paddle = _paddle()
    size = {}
    for x, lab in ((a, la), (b, lb)):
        for c, n in zip(lab, x.shape):
            if size.get(c, 1) != 1 and n != 1 and size[c] != n:
                raise ValueError("einsum: label {!r} has sizes {} and {}".format(c, size[c], n))
            size[c] = max(size.get(c, 1), n)
    batch = [c for c in la if c in lb and c in keep]
    contr = [c for c in la if c in lb and c not in keep]
    a_only = [c for c in la if c not in lb]
    b_only = [c for c in lb if c not in la]
    a = _C.transpose(a, [la.index(c) for c in batch + a_only + contr])
    b = _C.transpose(b, [lb.index(c) for c in batch + contr + b_only])
    a_shape = [size[c] for c in batch] + list(a.shape[len(batch):len(batch) + len(a_only)]) + \
        [size[c] for c in contr]
    b_shape = [size[c] for c in batch] + [size[c] for c in contr] + \
        list(b.shape[len(batch) + len(contr):])
    # expand broadcast (size-1) shared dims so both reshape consistently
    if list(a.shape) != a_shape:
        a = paddle.expand(a, a_shape)
    if list(b.shape) != b_shape:
        b = paddle.expand(b, b_shape)
    nb = int(np.prod([size[c] for c in batch])) if batch else 1
    nc = int(np.prod([size[c] for c in contr])) if contr else 1
    a_free = list(a.shape[len(batch):len(batch) + len(a_only)])
    b_free = list(b.shape[len(batch) + len(contr):])
    na = int(np.prod(a_free)) if a_free else 1
    nbf = int(np.prod(b_free)) if b_free else 1
    a3 = _C.reshape(a, [nb, na, nc])
    b3 = _C.reshape(b, [nb, nc, nbf])
    out = _C.matmul(a3, b3)
    out = _C.reshape(out, [size[c] for c in batch] + a_free + b_free)
    return out, batch + a_only + b_only


def einsum(equation, *operands):
    """einsum('ij,jk->ik', x, y); implicit output (sorted labels used once),
    '...' broadcasting, diagonals ('ii->i') and traces, sums, outer, batched
    products."""
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    if not isinstance(equation, str):
        raise TypeError("einsum: equation must be a str, got {}".format(type(equation).__name__))
    if not operands:
        raise ValueError("einsum: at least one operand is required")
    if _amp.ON and _amp.current():
        return _amp.call('einsum', lambda *ops: einsum(equation, *ops), tuple(operands))
    for x in operands:
        if not isinstance(x, _C.Tensor):
            raise TypeError("einsum: operands must be Tensors, got {}".format(type(x).__name__))
    labels, out = _parse(equation, operands)
    ops = []
    for x, lab in zip(operands, labels):
        x, lab = _diagonal(x, lab)
        ops.append((x, lab))
    # sum labels that only this operand has and the output drops
    for i, (x, lab) in enumerate(ops):
        others = set(c for j, (_, l2) in enumerate(ops) if j != i for c in l2)
        drop = [k for k, c in enumerate(lab) if c not in out and c not in others]
        if drop:
            x = _C.sum(x, drop, False)
            lab = [c for k, c in enumerate(lab) if k not in drop]
        ops[i] = (x, lab)
    x, lab = ops[0]
    for i in range(1, len(ops)):
        later = set(c for _, l2 in ops[i + 1:] for c in l2)
        keep = set(out) | later
        x, lab = _contract(x, lab, ops[i][0], ops[i][1], keep)
        drop = [k for k, c in enumerate(lab) if c not in keep]
        if drop:
            x = _C.sum(x, drop, False)
            lab = [c for k, c in enumerate(lab) if k not in drop]
    drop = [k for k, c in enumerate(lab) if c not in out]
    if drop:
        x = _C.sum(x, drop, False)
        lab = [c for k, c in enumerate(lab) if k not in drop]
    if lab != out:
        x = _C.transpose(x, [lab.index(c) for c in out])
    return x
