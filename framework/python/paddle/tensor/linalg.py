"""Linear algebra (Paddle's paddle/tensor/linalg.py): matmul, bmm, dot, t,
transpose, norms, and the LAPACK-backed decompositions and solvers of
paddle.linalg (inv, det, slogdet, solve, cholesky, qr, svd, eigh, pinv, ...).

The factorisations run in LAPACK through numpy.linalg, which Debian's numpy
links against liblapack.so.3 -- OpenBLAS's LAPACK here (the alternatives
point liblapack.so.3 at openblas-pthread). Gradients: a result r = f(A)
whose derivative is L_A(dA) (a linear map built from the factors) is returned
as r0 + L_A(A - stop_gradient(A)). Its value is exactly r0 (A - A is 0), and
backpropagation through the framework's own matmul/multiply/sum gives
the adjoint of L_A, i.e. the exact gradient of f, for every op below that
Paddle differentiates (inv, det, slogdet, solve, cholesky, triangular_solve,
qr, svd, eigh, eigvalsh, pinv, matrix norms). Without a tensor that needs a
gradient (or under no_grad) only the constant r0 is built."""
import numbers

import numpy as np

from paddle import _C
from paddle.amp import _state as _amp
from paddle._lazy import paddle as _paddle
from ._args import _axis, _ints


def matmul(x, y, transpose_x=False, transpose_y=False, name=None):
    if _amp.ON and _amp.current():
        return _amp.call(('matmul_v2', 'matmul'), _C.matmul, (x, y), transpose_x,
                         transpose_y)
    return _C.matmul(x, y, transpose_x, transpose_y)


def bmm(x, y, name=None):
    if x.ndim != 3 or y.ndim != 3:
        raise ValueError("bmm: x and y must be 3-D, got shapes {} and {}".format(x.shape, y.shape))
    if _amp.ON and _amp.current():
        return _amp.call(('bmm', 'matmul_v2'), _C.matmul, (x, y))
    return _C.matmul(x, y)


def dot(x, y, name=None):
    return _C.sum(_C.multiply(x, y), [-1], False)


def t(input, name=None):  # noqa: A002
    if input.ndim < 2:
        return input
    return _C.transpose(input, [1, 0])


def transpose(x, perm, name=None):
    perm = _ints(perm)
    if len(perm) != x.ndim:
        raise ValueError("transpose: perm {} must have one entry per dim of x (shape {})".format(
            perm, x.shape))
    return _C.transpose(x, perm)


# ---------------------------------------------------------------- helpers

_NP_DTYPES = {'float32': np.float32, 'float64': np.float64}


def _dtype_name(x):
    return str(x.dtype).replace('paddle.', '')


def _check(x, fname, square=True, min_ndim=2):
    """TypeError/ValueError unless x is a float Tensor of >= min_ndim dims
    (square in its last two when square)."""
    if not isinstance(x, _C.Tensor):
        raise TypeError("{}: x must be a Tensor, got {}".format(fname, type(x).__name__))
    dt = _dtype_name(x)
    if dt not in ('float32', 'float64', 'float16', 'bfloat16'):
        raise TypeError("{}: expected a float32 or float64 tensor, got {}".format(fname, dt))
    if x.ndim < min_ndim:
        raise ValueError("{}: x must be at least {}-D, got shape {}".format(
            fname, min_ndim, list(x.shape)))
    if square and x.shape[-1] != x.shape[-2]:
        raise ValueError("{}: expected square matrices in the last two dimensions, got shape {}"
                         .format(fname, list(x.shape)))


def _np_of(x):
    """x's data for LAPACK: float32/float64 as is, half types as float32."""
    a = x.numpy()
    if a.dtype not in (np.float32, np.float64):
        a = a.astype(np.float32)
    return a


def _const(arr, like):
    """A constant Tensor of like's dtype from a numpy array."""
    paddle = _paddle()
    t = paddle.to_tensor(np.ascontiguousarray(arr))
    dt = _dtype_name(like)
    if _dtype_name(t) != dt:
        t = _C.cast(t, dt)
    return t


def _tracks(*xs):
    """Whether a result must carry a gradient to one of xs."""
    paddle = _paddle()
    return paddle.is_grad_enabled() and any(
        isinstance(x, _C.Tensor) and not x.stop_gradient for x in xs)


def _delta(x):
    """x - stop_gradient(x): zero-valued, with x's gradient."""
    return _C.subtract(x, x.detach())


def _mT(x):
    return _C.swapaxes(x, -1, -2)


def _mm(a, b):
    return _C.matmul(a, b)


def _lapack(fname, fn, *args):
    try:
        with np.errstate(all='ignore'):
            return fn(*args)
    except np.linalg.LinAlgError as e:
        raise ValueError("{}: {} ({})".format(fname, _lapack_reason(fname), e)) from None


def _lapack_reason(fname):
    if fname in ('cholesky', 'cholesky_solve'):
        return "the input is not symmetric positive definite"
    if fname in ('inv', 'solve', 'triangular_solve', 'matrix_power'):
        return "the input matrix is singular"
    return "LAPACK did not converge"


def _eye_like(n, like):
    return _const(np.eye(n), like)


# ---------------------------------------------------------------- norms

def vector_norm(x, p=2.0, axis=None, keepdim=False, name=None):
    """sum(|x|^p)^(1/p) over axis (all elements when None); p inf/-inf are
    max/min |x|, p 0 counts non-zeros."""
    ax = _axis(axis)
    if isinstance(p, str):
        raise ValueError("vector_norm: p must be a number, got {!r}".format(p))
    p = float(p)
    if p == float('inf'):
        return _C.max(_C.abs(x), ax, keepdim)
    if p == float('-inf'):
        return _C.min(_C.abs(x), ax, keepdim)
    if p == 0:
        return _C.sum(_C.cast(_C.not_equal(x, 0.0), _dtype_name(x)), ax, keepdim)
    if p == 2:
        return _C.sqrt(_C.sum(_C.square(x), ax, keepdim))
    if p == 1:
        return _C.sum(_C.abs(x), ax, keepdim)
    return _C.pow(_C.sum(_C.pow(_C.abs(x), p), ax, keepdim), 1.0 / p)


def matrix_norm(x, p='fro', axis=(-2, -1), keepdim=False, name=None):
    """Matrix norms over the two axes: fro, nuc, inf/-inf (max/min row sum of
    |x|), 1/-1 (max/min column sum), 2/-2 (largest/smallest singular value)."""
    paddle = _paddle()
    axis = _ints(axis)
    if len(axis) != 2:
        raise ValueError("matrix_norm: axis must hold two axes, got {}".format(axis))
    nd = x.ndim
    a0, a1 = [a + nd if a < 0 else a for a in axis]
    if a0 == a1 or not (0 <= a0 < nd and 0 <= a1 < nd):
        raise ValueError("matrix_norm: bad axis {} for a {}-D tensor".format(axis, nd))
    if p == 'fro':
        return _C.sqrt(_C.sum(_C.square(x), [a0, a1], keepdim))
    if p in ('nuc', 2, -2, 2.0, -2.0):
        y = paddle.moveaxis(x, [a0, a1], [-2, -1])
        s = svdvals(y)
        if p == 'nuc':
            out = _C.sum(s, [-1], False)
        elif p in (2, 2.0):
            out = _C.max(s, [-1], False)
        else:
            out = _C.min(s, [-1], False)
        if keepdim:
            for a in sorted((a0, a1)):
                out = _C.unsqueeze(out, [a])
        return out
    if p in (float('inf'), float('-inf'), 1, -1, 1.0, -1.0):
        rows = p in (float('inf'), float('-inf'))
        sum_ax, red_ax = (a1, a0) if rows else (a0, a1)
        s = _C.sum(_C.abs(x), [sum_ax], True)
        out = _C.max(s, [red_ax], True) if p > 0 else _C.min(s, [red_ax], True)
        if not keepdim:
            out = _C.squeeze(out, sorted([a0, a1]))
        return out
    raise ValueError("matrix_norm: unsupported p {!r}: use 'fro', 'nuc', inf, -inf, 1, -1, 2 "
                     "or -2".format(p))


def norm(x, p=None, axis=None, keepdim=False, name=None):
    """Paddle 3's norm: axis None -> vector norm of the flattened x (p None
    or 'fro' is the 2-norm); int axis -> vector norm; two axes -> matrix
    norm (p None/'fro', 'nuc', +-inf, +-1, +-2)."""
    if isinstance(axis, (list, tuple)) and len(axis) == 1:
        axis = axis[0]
    if isinstance(axis, (list, tuple)):
        if len(axis) != 2:
            raise ValueError("norm: axis must be an int or two ints, got {}".format(axis))
        return matrix_norm(x, 'fro' if p is None else p, axis, keepdim)
    if p is None or p == 'fro':
        p = 2.0
    elif isinstance(p, str):
        if p == 'inf':
            p = float('inf')
        elif p == '-inf':
            p = float('-inf')
        else:
            raise ValueError("norm: p {!r} needs two axes (a matrix norm)".format(p))
    return vector_norm(x, p, axis, keepdim)


# ---------------------------------------------------------------- inverse, determinants

def inv(x, name=None):
    """Inverse of square matrices [*, n, n]; d(A^-1) = -A^-1 dA A^-1."""
    _check(x, 'inv')
    x0 = _lapack('inv', np.linalg.inv, _np_of(x))
    if not np.all(np.isfinite(x0)):
        raise ValueError("inv: the input matrix is singular")
    out = _const(x0, x)
    if _tracks(x):
        out = _C.subtract(out, _mm(_mm(out.detach(), _delta(x)), out.detach()))
    return out


inverse = inv


def _adjugate_T(a):
    """adj(A)^T for a batch (the gradient of det), through the SVD so it is
    right for singular matrices too."""
    u, s, vh = np.linalg.svd(a)
    n = s.shape[-1]
    prods = np.empty_like(s)
    for i in range(n):
        prods[..., i] = np.prod(np.delete(s, i, axis=-1), axis=-1) if n > 1 else 1.0
    sign = np.linalg.det(u) * np.linalg.det(vh)
    adj = np.einsum('...ji,...j,...kj->...ik', vh, prods, u) * sign[..., None, None]
    return np.swapaxes(adj, -1, -2)


def det(x, name=None):
    """Determinant of [*, n, n] -> [*]; d det = sum(adj(A)^T * dA)."""
    _check(x, 'det')
    a = _np_of(x)
    out = _const(_lapack('det', np.linalg.det, a), x)
    if _tracks(x):
        g = _const(_adjugate_T(a.astype(np.float64)), x)
        out = _C.add(out, _C.sum(_C.multiply(g, _delta(x)), [-2, -1], False))
    return out


def slogdet(x, name=None):
    """[2, *]: the signs of the determinants and log|det| (0 and -inf for
    singular matrices); d log|det| = sum(A^-T * dA)."""
    paddle = _paddle()
    _check(x, 'slogdet')
    a = _np_of(x)
    sign, logabs = _lapack('slogdet', np.linalg.slogdet, a)
    s = _const(np.asarray(sign), x)
    la = _const(np.asarray(logabs), x)
    if _tracks(x) and np.all(sign != 0):
        ginv = _const(np.swapaxes(np.linalg.inv(a), -1, -2), x)
        la = _C.add(la, _C.sum(_C.multiply(ginv, _delta(x)), [-2, -1], False))
    return paddle.stack([s, la], axis=0)


def matrix_power(x, n, name=None):
    """A^n by repeated squaring of differentiable matmuls (n < 0 inverts first)."""
    paddle = _paddle()
    _check(x, 'matrix_power')
    if isinstance(n, bool) or not isinstance(n, numbers.Integral):
        raise TypeError("matrix_power: n must be an int, got {}".format(type(n).__name__))
    n = int(n)
    if n == 0:
        e = _eye_like(x.shape[-1], x)
        return paddle.expand(e, list(x.shape)) if x.ndim > 2 else e
    if n < 0:
        x = inv(x)
        n = -n
    result, base = None, x
    while n:
        if n & 1:
            result = base if result is None else _mm(result, base)
        n >>= 1
        if n:
            base = _mm(base, base)
    return result


# ---------------------------------------------------------------- solvers

def solve(x, y, left=True, name=None):
    """X with A X = B (A = x [*, n, n], B = y [*, n, k] or [n]);
    dX = A^-1 (dB - dA X). left=False solves X A = B."""
    paddle = _paddle()
    _check(x, 'solve')
    if not isinstance(y, _C.Tensor):
        raise TypeError("solve: y must be a Tensor, got {}".format(type(y).__name__))
    if not left:
        return _mT(solve(_mT(x), _mT(y)))
    vec = y.ndim == 1
    if vec:
        y = _C.unsqueeze(y, [-1])
    if y.shape[-2] != x.shape[-1]:
        raise ValueError("solve: x {} and y {} do not match (A is {}x{}, B has {} rows)".format(
            list(x.shape), list(y.shape), x.shape[-1], x.shape[-1], y.shape[-2]))
    a, b = _np_of(x), _np_of(y)
    x0 = _lapack('solve', np.linalg.solve, a, b)
    out = _const(x0, x)
    if _tracks(x, y):
        ainv = _const(_lapack('solve', np.linalg.inv, a), x)
        rhs = _C.subtract(_delta(y), _mm(_delta(x), out.detach()))
        out = _C.add(out, _mm(ainv, rhs))
    if vec:
        out = paddle.squeeze(out, [-1])
    return out


def triangular_solve(x, y, upper=True, transpose=False, unitriangular=False, name=None):
    """X with op(A) X = B for triangular A (only its upper/lower part is read)."""
    _check(x, 'triangular_solve')
    n = x.shape[-1]
    mask = np.triu(np.ones((n, n))) if upper else np.tril(np.ones((n, n)))
    if unitriangular:
        np.fill_diagonal(mask, 0.0)
    a = _C.multiply(x, _const(mask, x))
    if unitriangular:
        a = _C.add(a, _eye_like(n, x))
    if transpose:
        a = _mT(a)
    return solve(a, y)


def cholesky(x, upper=False, name=None):
    """L with A = L L^T (or U = L^T with upper) for symmetric positive
    definite [*, n, n]; dL = L Phi(L^-1 sym(dA) L^-T), Phi = lower triangle
    with half the diagonal."""
    _check(x, 'cholesky')
    a = _np_of(x)
    l0 = _lapack('cholesky', np.linalg.cholesky, a)
    out = _const(l0, x)
    if _tracks(x):
        n = a.shape[-1]
        phi = np.tril(np.ones((n, n))) - 0.5 * np.eye(n)
        linv = _const(np.linalg.inv(l0), x)
        d = _delta(x)
        d = _C.multiply(_C.add(d, _mT(d)), 0.5)
        inner = _C.multiply(_mm(_mm(linv, d), _mT(linv)), _const(phi, x))
        out = _C.add(out, _mm(out.detach(), inner))
    return _mT(out) if upper else out


def cholesky_solve(x, y, upper=False, name=None):
    """X with A X = x where A = y y^T (y the Cholesky factor, lower unless upper)."""
    u = y if not upper else _mT(y)
    return solve(_mm(u, _mT(u)), x)


def lstsq(x, y, rcond=None, driver=None, name=None):
    """Least squares min |A X - B| -> (solution, residuals, rank, singular
    values), computed by LAPACK (gelsd); no gradient."""
    paddle = _paddle()
    _check(x, 'lstsq', square=False)
    a, b = _np_of(x), _np_of(y)
    if a.ndim != 2:
        sols, res, ranks, svs = [], [], [], []
        for i in range(a.shape[0]):
            r = lstsq(paddle.to_tensor(a[i]), paddle.to_tensor(b[i]), rcond)
            sols.append(r[0].numpy()), res.append(r[1].numpy()), ranks.append(r[2].numpy())
            svs.append(r[3].numpy())
        return (_const(np.stack(sols), x), _const(np.stack(res), x),
                paddle.to_tensor(np.stack(ranks)), _const(np.stack(svs), x))
    sol, res, rank, sv = _lapack('lstsq', np.linalg.lstsq, a, b, rcond)
    return (_const(sol, x), _const(np.asarray(res), x), paddle.to_tensor(np.int32(rank)),
            _const(sv, x))


# ---------------------------------------------------------------- decompositions

def qr(x, mode='reduced', name=None):
    """A = Q R: mode 'reduced' (Q [*, m, k], R [*, k, n], k = min(m, n)),
    'complete' (Q [*, m, m]) or 'r' (R only). Gradients for reduced QR of
    matrices with m >= n and full column rank."""
    _check(x, 'qr', square=False)
    if mode not in ('reduced', 'complete', 'r'):
        raise ValueError("qr: mode must be 'reduced', 'complete' or 'r', got {!r}".format(mode))
    a = _np_of(x)
    m, n = a.shape[-2], a.shape[-1]
    if mode == 'r':
        return _const(_lapack('qr', np.linalg.qr, a, 'r'), x)
    q0, r0 = _lapack('qr', np.linalg.qr, a, mode)
    q, r = _const(q0, x), _const(r0, x)
    if _tracks(x):
        if mode != 'reduced' or m < n:
            raise NotImplementedError(
                "qr: gradients are implemented for mode='reduced' with rows >= columns, "
                "got shape {} and mode {!r}".format(list(x.shape), mode))
        rinv = _const(np.linalg.inv(r0), x)
        d = _delta(x)
        mm = _mm(_mm(_mT(q.detach()), d), rinv)                 # Q^T dA R^-1
        low = _C.multiply(mm, _const(np.tril(np.ones((n, n)), -1), x))
        omega = _C.subtract(low, _mT(low))                     # Q^T dQ (antisymmetric)
        dr_rinv = _C.subtract(mm, omega)                       # dR R^-1 (upper)
        r = _C.add(r, _mm(dr_rinv, r.detach()))
        q = _C.add(q, _C.subtract(_mm(d, rinv), _mm(q.detach(), dr_rinv)))
    return q, r


def _svd_parts(x, fname):
    a = _np_of(x)
    u0, s0, vh0 = _lapack(fname, np.linalg.svd, a, False)
    return u0, s0, vh0


def svdvals(x, name=None):
    """Singular values [*, k], descending; ds = diag(U^T dA V)."""
    _check(x, 'svdvals', square=False)
    if not _tracks(x):
        return _const(_lapack('svdvals', np.linalg.svd, _np_of(x), False, False), x)
    return svd(x)[1]


def svd(x, full_matrices=False, name=None):
    """x = U diag(S) VH -> (U, S, VH). Gradients (reduced SVD, distinct
    singular values) through dS = diag(U^T dA V) and Paddle's/PyTorch's
    formulas for dU, dV."""
    _check(x, 'svd', square=False)
    a = _np_of(x)
    if full_matrices:
        u0, s0, vh0 = _lapack('svd', np.linalg.svd, a, True)
        if _tracks(x) and a.shape[-1] != a.shape[-2]:
            raise NotImplementedError("svd: gradients need full_matrices=False for non-square "
                                      "input")
        if not _tracks(x):
            return _const(u0, x), _const(s0, x), _const(vh0, x)
    else:
        u0, s0, vh0 = _svd_parts(x, 'svd')
    u, s, vh = _const(u0, x), _const(s0, x), _const(vh0, x)
    if not _tracks(x):
        return u, s, vh
    k = s0.shape[-1]
    m, n = a.shape[-2], a.shape[-1]
    eye_k = np.eye(k)
    ud, vd = u.detach(), _mT(vh.detach())                      # U [m,k], V [n,k]
    d = _delta(x)
    e = _mm(_mm(_mT(ud), d), vd)                                # U^T dA V [k,k]
    ds = _C.sum(_C.multiply(e, _const(eye_k, x)), [-1], False)
    s_new = _C.add(s, ds)
    s2 = s0[..., None, :] ** 2 - s0[..., :, None] ** 2           # s_j^2 - s_i^2
    with np.errstate(divide='ignore'):
        f = np.where(np.abs(s2) > 0, 1.0 / np.where(s2 == 0, 1.0, s2), 0.0) * (1 - eye_k)
    ft = _const(f, x)
    sm = _C.unsqueeze(_const(s0, x), [-2])                     # row vector of s_j
    sc = _C.unsqueeze(_const(s0, x), [-1])                     # column of s_i
    # dU = U (F o (E S + S E^T)) + (I - U U^T) dA V S^-1
    es = _C.add(_C.multiply(e, sm), _C.multiply(_mT(e), sc))
    du = _mm(ud, _C.multiply(ft, es))
    sinv = _const(np.where(s0 > 0, 1.0 / np.where(s0 > 0, s0, 1.0), 0.0), x)
    if m > k:
        proj = _C.subtract(_eye_like(m, x), _mm(ud, _mT(ud)))
        du = _C.add(du, _C.multiply(_mm(_mm(proj, d), vd), _C.unsqueeze(sinv, [-2])))
    # dV = V (F o (S E + E^T S)) + (I - V V^T) dA^T U S^-1
    se = _C.add(_C.multiply(e, sc), _C.multiply(_mT(e), sm))
    dv = _mm(vd, _C.multiply(ft, se))
    if n > k:
        proj = _C.subtract(_eye_like(n, x), _mm(vd, _mT(vd)))
        dv = _C.add(dv, _C.multiply(_mm(_mm(proj, _mT(d)), ud), _C.unsqueeze(sinv, [-2])))
    return _C.add(u, du), s_new, _C.add(vh, _mT(dv))


def eigh(x, UPLO='L', name=None):
    """Eigenvalues (ascending) and eigenvectors of symmetric matrices, reading
    the UPLO triangle; with E = V^T sym(dA) V: dw = diag(E), dV = V (F o E),
    F_ij = 1 / (w_j - w_i)."""
    _check(x, 'eigh')
    if UPLO not in ('L', 'U'):
        raise ValueError("eigh: UPLO must be 'L' or 'U', got {!r}".format(UPLO))
    w0, v0 = _lapack('eigh', np.linalg.eigh, _np_of(x), UPLO)
    w, v = _const(w0, x), _const(v0, x)
    if _tracks(x):
        n = w0.shape[-1]
        d = _delta(x)
        d = _C.multiply(_C.add(d, _mT(d)), 0.5)       # symmetric gradient, as PyTorch's
        e = _mm(_mm(_mT(v.detach()), d), v.detach())
        w = _C.add(w, _C.sum(_C.multiply(e, _const(np.eye(n), x)), [-1], False))
        gap = w0[..., None, :] - w0[..., :, None]
        f = np.where(gap != 0, 1.0 / np.where(gap == 0, 1.0, gap), 0.0) * (1 - np.eye(n))
        v = _C.add(v, _mm(v.detach(), _C.multiply(_const(f, x), e)))
    return w, v


def eigvalsh(x, UPLO='L', name=None):
    """Eigenvalues of symmetric matrices (ascending), with gradients."""
    if not _tracks(x):
        _check(x, 'eigvalsh')
        if UPLO not in ('L', 'U'):
            raise ValueError("eigvalsh: UPLO must be 'L' or 'U', got {!r}".format(UPLO))
        return _const(_lapack('eigvalsh', np.linalg.eigvalsh, _np_of(x), UPLO), x)
    return eigh(x, UPLO)[0]


def pinv(x, rcond=1e-15, hermitian=False, name=None):
    """Moore-Penrose pseudo-inverse (singular values <= rcond * largest are
    dropped); gradient by the constant-rank formula
    dA+ = -A+ dA A+ + A+ A+^T dA^T (I - A A+) + (I - A+ A) dA^T A+^T A+."""
    _check(x, 'pinv', square=False)
    p0 = _lapack('pinv', np.linalg.pinv, _np_of(x), rcond, bool(hermitian))
    out = _const(p0, x)
    if _tracks(x):
        m, n = x.shape[-2], x.shape[-1]
        pp = out.detach()
        xd = x.detach()
        d = _delta(x)
        dt = _mT(d)
        t1 = _C.neg(_mm(_mm(pp, d), pp))
        t2 = _mm(_mm(_mm(pp, _mT(pp)), dt), _C.subtract(_eye_like(m, x), _mm(xd, pp)))
        t3 = _mm(_mm(_C.subtract(_eye_like(n, x), _mm(pp, xd)), dt), _mm(_mT(pp), pp))
        out = _C.add(out, _C.add(t1, _C.add(t2, t3)))
    return out


def matrix_rank(x, tol=None, hermitian=False, atol=None, rtol=None, name=None):
    """Number of singular values above the tolerance (int64, no gradient)."""
    paddle = _paddle()
    _check(x, 'matrix_rank', square=False)
    a = _np_of(x)
    if isinstance(tol, _C.Tensor):
        tol = tol.numpy()
    if tol is None and (atol is not None or rtol is not None):
        s = np.linalg.svd(a, compute_uv=False)
        smax = s.max(axis=-1) if s.size else 0.0
        tol = np.maximum(atol or 0.0, (rtol or 0.0) * smax)
    r = _lapack('matrix_rank', np.linalg.matrix_rank, a, tol, bool(hermitian))
    return paddle.to_tensor(np.asarray(r, dtype=np.int64))


def cond(x, p=None, name=None):
    """Condition number: sigma_max / sigma_min for p None/2 (-2 inverts it),
    else norm(A, p) * norm(A^-1, p) for square A."""
    _check(x, 'cond', square=p not in (None, 2, -2))
    if p in (None, 2, -2):
        s = svdvals(x)
        big, small = _C.max(s, [-1], False), _C.min(s, [-1], False)
        return _C.divide(big, small) if p != -2 else _C.divide(small, big)
    return _C.multiply(matrix_norm(x, p), matrix_norm(inv(x), p))


def multi_dot(x, name=None):
    """Chained matmul of a list of matrices (1-D first/last become row/column)."""
    paddle = _paddle()
    if not isinstance(x, (list, tuple)) or len(x) < 2:
        raise ValueError("multi_dot: expected a list of at least two tensors")
    mats = list(x)
    first_vec = mats[0].ndim == 1
    last_vec = mats[-1].ndim == 1
    if first_vec:
        mats[0] = paddle.unsqueeze(mats[0], 0)
    if last_vec:
        mats[-1] = paddle.unsqueeze(mats[-1], 1)
    out = mats[0]
    for m in mats[1:]:
        out = _mm(out, m)
    if first_vec:
        out = paddle.squeeze(out, [0])
    if last_vec:
        out = paddle.squeeze(out, [-1])
    return out


# ---------------------------------------------------------------- statistics, LU, exp

def vecdot(x, y, axis=-1, name=None):
    """sum(x * y) over axis (broadcast)."""
    return _C.sum(_C.multiply(x, y), [axis], False)


def cov(x, rowvar=True, ddof=True, fweights=None, aweights=None, name=None):
    """Covariance of the variables (rows, or columns when rowvar=False) of a
    1-D/2-D x, as numpy.cov: ddof=True divides by N - 1 (weighted: the
    frequency/analytic weights' effective count); differentiable in x."""
    paddle = _paddle()
    if not isinstance(x, _C.Tensor):
        raise TypeError("cov: x must be a Tensor, got {}".format(type(x).__name__))
    if x.ndim > 2:
        raise ValueError("cov: x must be 1-D or 2-D, got shape {}".format(list(x.shape)))
    dt = _dtype_name(x)
    if dt not in ('float32', 'float64'):
        x = _C.cast(x, 'float32')
        dt = 'float32'
    if x.ndim == 1:
        x = _C.unsqueeze(x, [0])
    if not rowvar and x.shape[0] != 1:
        x = _mT(x)
    n = x.shape[1]
    w = None
    if fweights is not None:
        fw = fweights.numpy() if isinstance(fweights, _C.Tensor) else np.asarray(fweights)
        if fw.ndim != 1 or fw.shape[0] != n or np.any(fw < 0) or \
                not np.all(np.equal(np.mod(fw, 1), 0)):
            raise ValueError("cov: fweights must be {} non-negative integers".format(n))
        w = fw.astype(np.float64)
    if aweights is not None:
        aw = aweights.numpy() if isinstance(aweights, _C.Tensor) else np.asarray(aweights)
        if aw.ndim != 1 or aw.shape[0] != n or np.any(aw < 0):
            raise ValueError("cov: aweights must be {} non-negative numbers".format(n))
        aw = aw.astype(np.float64)
        w = aw if w is None else w * aw
    d = 1 if ddof is True else (0 if ddof is False else int(ddof))
    if w is None:
        mean = _C.mean(x, [1], True)
        fact = n - d
        xm = _C.subtract(x, mean)
        c = _C.divide(_mm(xm, _mT(xm)), float(fact))
    else:
        wsum = w.sum()
        wt = _const(w[None, :], x)
        mean = _C.divide(_C.sum(_C.multiply(x, wt), [1], True), float(wsum))
        if d == 0:
            fact = wsum
        elif aweights is None:
            fact = wsum - d
        else:
            fact = wsum - d * (w * aw).sum() / wsum
        xm = _C.subtract(x, mean)
        c = _C.divide(_mm(_C.multiply(xm, wt), _mT(xm)), float(fact))
    if c.shape == [1, 1]:
        return paddle.reshape(c, [])
    return c


def corrcoef(x, rowvar=True, name=None):
    """Pearson correlation coefficients: cov / sqrt(var_i var_j), clipped to [-1, 1]."""
    c = cov(x, rowvar)
    if c.ndim == 0:
        return _C.divide(c, c)
    d = _C.sum(_C.multiply(c, _eye_like(c.shape[0], c)), [-1], False)
    s = _C.sqrt(d)
    c = _C.divide(_C.divide(c, _C.unsqueeze(s, [-1])), _C.unsqueeze(s, [-2]))
    return _C.clip(c, -1.0, 1.0)


def cholesky_inverse(x, upper=False, name=None):
    """Inverse of A from its Cholesky factor (A = L L^T, or U^T U with upper)."""
    _check(x, 'cholesky_inverse')
    a = _mm(_mT(x), x) if upper else _mm(x, _mT(x))
    return inv(a)


def _getrf(a):
    """LU with partial pivoting of a batch [..., m, n] (the pivots LAPACK's
    getrf picks: the largest |value| of each column, first on ties).
    Returns the packed LU, 1-based pivots [..., k] and infos [...]."""
    a = np.array(a, dtype=a.dtype, copy=True)
    m, n = a.shape[-2], a.shape[-1]
    k = min(m, n)
    batch = a.shape[:-2]
    a = a.reshape((-1, m, n))
    piv = np.zeros((a.shape[0], k), dtype=np.int32)
    info = np.zeros(a.shape[0], dtype=np.int32)
    rows = np.arange(a.shape[0])
    for j in range(k):
        p = j + np.argmax(np.abs(a[:, j:, j]), axis=1)
        piv[:, j] = p + 1
        swap = p != j
        if np.any(swap):
            tmp = a[rows[swap], j, :].copy()
            a[rows[swap], j, :] = a[rows[swap], p[swap], :]
            a[rows[swap], p[swap], :] = tmp
        pivot = a[:, j, j]
        zero = pivot == 0
        info[(info == 0) & zero] = j + 1
        safe = np.where(zero, 1.0, pivot)
        a[:, j + 1:, j] = np.where(zero[:, None], a[:, j + 1:, j], a[:, j + 1:, j] / safe[:, None])
        a[:, j + 1:, j + 1:] -= a[:, j + 1:, j:j + 1] * a[:, j:j + 1, j + 1:]
    return (a.reshape(batch + (m, n)), piv.reshape(batch + (k,)), info.reshape(batch))


def lu(x, pivot=True, get_infos=False, name=None):
    """LU factorisation with partial pivoting -> (LU packed, pivots [*, k]
    int32, 1-based as LAPACK's getrf) and infos when get_infos; no gradient."""
    paddle = _paddle()
    _check(x, 'lu', square=False)
    if not pivot:
        raise NotImplementedError("lu: pivot=False is not supported on CPU (as in Paddle)")
    packed, piv, info = _getrf(_np_of(x).astype(np.float64))
    out = (_const(packed, x), paddle.to_tensor(piv))
    if get_infos:
        out = out + (paddle.to_tensor(info),)
    return out


def lu_unpack(x, y, unpack_ludata=True, unpack_pivots=True, name=None):
    """(P, L, U) from lu()'s packed factors x and pivots y, with A = P L U."""
    m, n = x.shape[-2], x.shape[-1]
    k = min(m, n)
    p = l_ = u = None
    if unpack_ludata:
        lower = np.tril(np.ones((m, k)), -1)
        l_ = _C.add(_C.multiply(_C.slice(x, [x.ndim - 1], [0], [k]), _const(lower, x)),
                    _const(np.eye(m, k), x))
        u = _C.multiply(_C.slice(x, [x.ndim - 2], [0], [k]), _const(np.triu(np.ones((k, n))), x))
    if unpack_pivots:
        piv = y.numpy().astype(np.int64) - 1
        batch = piv.shape[:-1]
        flat = piv.reshape(-1, piv.shape[-1])
        perms = np.tile(np.arange(m), (flat.shape[0], 1))
        for b in range(flat.shape[0]):
            for j, pj in enumerate(flat[b]):
                perms[b, [j, pj]] = perms[b, [pj, j]]
        pm = np.zeros((flat.shape[0], m, m))
        for b in range(flat.shape[0]):
            pm[b, perms[b], np.arange(m)] = 1.0
        p = _const(pm.reshape(batch + (m, m)), x)
    return p, l_, u


def lu_solve(b, lu_data, pivots, trans='N', name=None):
    """X with A X = b (trans 'N'), A^T X = b ('T' or 'C'), from lu()'s factors."""
    p, l_, u = lu_unpack(lu_data, pivots)
    if trans == 'N':
        a = _mm(p, _mm(l_, u))
    elif trans in ('T', 'C'):
        a = _mT(_mm(p, _mm(l_, u)))
    else:
        raise ValueError("lu_solve: trans must be 'N', 'T' or 'C', got {!r}".format(trans))
    return solve(a, b)


def matrix_exp(x, name=None):
    """exp(A) by scaling and squaring a degree-18 Taylor polynomial (Horner);
    every step is a differentiable matmul."""
    _check(x, 'matrix_exp')
    a = _np_of(x)
    nrm = float(np.max(np.abs(a).sum(axis=-1))) if a.size else 0.0
    s = max(0, int(np.ceil(np.log2(nrm / 0.5)))) if nrm > 0.5 else 0
    y = _C.multiply(x, 1.0 / (2 ** s))
    n = x.shape[-1]
    eye = _eye_like(n, x)
    r = eye
    for k in range(18, 0, -1):
        r = _C.add(eye, _C.divide(_mm(y, r), float(k)))
    for _ in range(s):
        r = _mm(r, r)
    return r


def svd_lowrank(x, q=None, niter=2, M=None, name=None):
    """(U [*, m, q], S [*, q], V [*, n, q]) of x - M: the q leading singular
    triplets, computed exactly (a full SVD, truncated) rather than by random
    projection, so niter has nothing to do; differentiable like svd."""
    _check(x, 'svd_lowrank', square=False)
    if M is not None:
        x = _C.subtract(x, M)
    k = min(x.shape[-2], x.shape[-1])
    q = min(6, k) if q is None else int(q)
    if not 0 < q <= k:
        raise ValueError("svd_lowrank: q must be in [1, {}], got {}".format(k, q))
    u, s, vh = svd(x)
    nd = x.ndim
    return (_C.slice(u, [nd - 1], [0], [q]), _C.slice(s, [nd - 2], [0], [q]),
            _mT(_C.slice(vh, [nd - 2], [0], [q])))


def pca_lowrank(x, q=None, center=True, niter=2, name=None):
    """PCA of the rows of x: svd_lowrank of x minus its column means (when center)."""
    _check(x, 'pca_lowrank', square=False)
    if q is None:
        q = min(6, x.shape[-2], x.shape[-1])
    if center:
        x = _C.subtract(x, _C.mean(x, [-2], True))
    return svd_lowrank(x, q, niter)


def householder_product(x, tau, name=None):
    """Q = H_1 ... H_k from the Householder vectors below the diagonal of x
    [*, m, n] (unit diagonal implied) and the scalars tau [*, k], as LAPACK's
    orgqr; differentiable through matmuls."""
    paddle = _paddle()
    _check(x, 'householder_product', square=False)
    m, n = x.shape[-2], x.shape[-1]
    k = tau.shape[-1]
    if m < n or k > n or list(tau.shape[:-1]) != list(x.shape[:-2]):
        raise ValueError("householder_product: x {} and tau {} do not match (need rows >= "
                         "columns >= len(tau))".format(list(x.shape), list(tau.shape)))
    nd = x.ndim
    eye = _eye_like(m, x)
    q = None
    for i in range(k):
        col = _C.slice(x, [nd - 1], [i], [i + 1])                       # [*, m, 1]
        below = np.zeros((m, 1))
        below[i + 1:] = 1.0
        unit = np.zeros((m, 1))
        unit[i] = 1.0
        v = _C.add(_C.multiply(col, _const(below, x)), _const(unit, x))
        t = _C.unsqueeze(_C.slice(tau, [nd - 2], [i], [i + 1]), [-1])    # [*, 1, 1]
        h = _C.subtract(eye, _C.multiply(_mm(v, _mT(v)), t))
        q = h if q is None else _mm(q, h)
    q = eye if q is None else q
    if q.ndim < nd:
        q = paddle.expand(q, list(x.shape[:-2]) + [m, m])
    return _C.slice(q, [nd - 1], [0], [n])
