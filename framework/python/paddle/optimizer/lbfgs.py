"""paddle.optimizer.LBFGS: limited-memory BFGS over all parameters as one
flat vector (Nocedal & Wright, Numerical Optimization, algorithms 7.4 and
3.5/3.6 for the strong-Wolfe line search), as Paddle's LBFGS: step(closure)
re-evaluates the loss and gradients through closure (which calls
backward), up to max_iter iterations per step. The vectors are numpy
float64 copies; parameters are written back in place."""
import numpy as np

from .optimizer import Optimizer, _scalar

__all__ = ['LBFGS']


def _cubic_min(x1, f1, g1, x2, f2, g2, lo=None, hi=None):
    """Minimiser of the cubic through (x1, f1, g1), (x2, f2, g2), clamped to
    [lo, hi] (default: the interval between the points)."""
    if lo is None:
        lo, hi = min(x1, x2), max(x1, x2)
    d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2)
    sq = d1 * d1 - g1 * g2
    if sq >= 0:
        d2 = np.sqrt(sq)
        if x1 > x2:
            d2 = -d2
        x = x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
        return float(min(max(x, lo), hi))
    return (lo + hi) / 2.0


def _strong_wolfe(evaluate, t, d, f, g, gtd, c1=1e-4, c2=0.9, tol=1e-9, max_ls=25):
    """Line search along d from the current point (loss f, gradient g,
    directional derivative gtd) for a step t meeting the strong Wolfe
    conditions. evaluate(t) -> (loss, flat grad) at x + t d.
    Returns (loss, grad, t, evaluations)."""
    dmax = float(np.abs(d).max())
    f_new, g_new = evaluate(t)
    evals = 1
    gtd_new = float(g_new.dot(d))
    t_prev, f_prev, g_prev, gtd_prev = 0.0, f, g, gtd
    done = False
    it = 0
    # bracketing phase
    while it < max_ls:
        if f_new > f + c1 * t * gtd or (it > 1 and f_new >= f_prev):
            br = [t_prev, t]
            bf = [f_prev, f_new]
            bg = [g_prev, g_new]
            bgtd = [gtd_prev, gtd_new]
            break
        if abs(gtd_new) <= -c2 * gtd:
            br, bf, bg = [t], [f_new], [g_new]
            done = True
            break
        if gtd_new >= 0:
            br = [t_prev, t]
            bf = [f_prev, f_new]
            bg = [g_prev, g_new]
            bgtd = [gtd_prev, gtd_new]
            break
        lo, hi = t + 0.01 * (t - t_prev), t * 10
        t_next = _cubic_min(t_prev, f_prev, gtd_prev, t, f_new, gtd_new, lo, hi)
        t_prev, f_prev, g_prev, gtd_prev = t, f_new, g_new, gtd_new
        t = t_next
        f_new, g_new = evaluate(t)
        evals += 1
        gtd_new = float(g_new.dot(d))
        it += 1
    if it == max_ls:
        br, bf, bg = [0.0, t], [f, f_new], [g, g_new]
        bgtd = [gtd, gtd_new]
    # zoom phase
    insuf = False
    lo_i, hi_i = (0, 1) if len(bf) < 2 or bf[0] <= bf[-1] else (1, 0)
    while not done and it < max_ls:
        if abs(br[1] - br[0]) * dmax < tol:
            break
        t = _cubic_min(br[0], bf[0], bgtd[0], br[1], bf[1], bgtd[1])
        # keep away from the bracket's ends
        a, b = min(br), max(br)
        eps = 0.1 * (b - a)
        if min(b - t, t - a) < eps:
            if insuf or t >= b or t <= a:
                t = b - eps if abs(t - b) < abs(t - a) else a + eps
                insuf = False
            else:
                insuf = True
        else:
            insuf = False
        f_new, g_new = evaluate(t)
        evals += 1
        gtd_new = float(g_new.dot(d))
        it += 1
        if f_new > f + c1 * t * gtd or f_new >= bf[lo_i]:
            br[hi_i], bf[hi_i], bg[hi_i], bgtd[hi_i] = t, f_new, g_new, gtd_new
            lo_i, hi_i = (0, 1) if bf[0] <= bf[1] else (1, 0)
        else:
            if abs(gtd_new) <= -c2 * gtd:
                done = True
            elif gtd_new * (br[hi_i] - br[lo_i]) >= 0:
                br[hi_i], bf[hi_i], bg[hi_i], bgtd[hi_i] = \
                    br[lo_i], bf[lo_i], bg[lo_i], bgtd[lo_i]
            br[lo_i], bf[lo_i], bg[lo_i], bgtd[lo_i] = t, f_new, g_new, gtd_new
    i = lo_i if len(br) > 1 else 0
    return bf[i], bg[i], br[i], evals


class LBFGS(Optimizer):
    """paddle.optimizer.LBFGS(learning_rate=1.0, max_iter=20, max_eval=None,
    tolerance_grad=1e-7, tolerance_change=1e-9, history_size=100,
    line_search_fn=None, parameters=None, weight_decay=None,
    grad_clip=None, name=None); use opt.step(closure)."""

    def __init__(self, learning_rate=1.0, max_iter=20, max_eval=None, tolerance_grad=1e-7,
                 tolerance_change=1e-9, history_size=100, line_search_fn=None,
                 parameters=None, weight_decay=None, grad_clip=None, name=None):
        if max_eval is None:
            max_eval = max_iter * 5 // 4
        if line_search_fn not in (None, 'strong_wolfe'):
            raise ValueError("LBFGS: line_search_fn must be None or 'strong_wolfe', got {!r}"
                             .format(line_search_fn))
        for v, n in ((max_iter, 'max_iter'), (max_eval, 'max_eval'),
                     (history_size, 'history_size')):
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError("LBFGS: {} must be a positive int, got {!r}".format(n, v))
        self._max_iter = max_iter
        self._max_eval = max_eval
        self._tol_grad = _scalar(tolerance_grad, 'tolerance_grad')
        self._tol_change = _scalar(tolerance_change, 'tolerance_change')
        self._history = history_size
        self._line_search = line_search_fn
        super().__init__(learning_rate, parameters, weight_decay, grad_clip, name)
        self._st = {'func_evals': 0, 'n_iter': 0}

    # ---- flat views of the parameters ------------------------------------------
    def _params(self):
        return [p for p in self._parameter_list if not p.stop_gradient]

    def _flat_grad(self):
        wd = self._weight_decay or 0.0
        if self._grad_clip is not None:
            self._grad_clip([(p, p.grad) for p in self._params()])
        parts = []
        for p in self._params():
            g = np.zeros(p.shape, 'float64') if p.grad is None else \
                p.grad.numpy().astype('float64')
            if wd:
                g = g + wd * p.numpy().astype('float64')
            parts.append(g.reshape(-1))
        return np.concatenate(parts) if parts else np.zeros(0)

    def _get_flat(self):
        return np.concatenate([p.numpy().astype('float64').reshape(-1) for p in self._params()])

    def _set_flat(self, x):
        import paddle
        off = 0
        with paddle.no_grad():
            for p in self._params():
                n = int(np.prod(p.shape)) if p.shape else 1
                p.set_value(x[off:off + n].reshape(p.shape).astype(p.numpy().dtype))
                off += n

    def _eval(self, closure):
        import paddle
        with paddle.enable_grad():
            loss = closure()
        return float(loss), self._flat_grad()

    def step(self, closure):
        """Up to max_iter L-BFGS iterations; closure() clears the gradients,
        computes the loss, calls backward and returns the loss."""
        if closure is None or not callable(closure):
            raise TypeError("LBFGS.step needs a closure that returns the loss")
        st = self._st
        lr = self.get_lr()
        orig_loss = None
        import paddle
        with paddle.enable_grad():
            orig_loss = closure()
        loss = float(orig_loss)
        g = self._flat_grad()
        evals = 1
        st['func_evals'] += 1
        if g.size == 0 or np.abs(g).max() <= self._tol_grad:
            return orig_loss
        d, t = st.get('d'), st.get('t')
        dirs, stps, ro = st.get('old_dirs'), st.get('old_stps'), st.get('ro')
        h_diag, g_prev, loss_prev = st.get('H_diag'), st.get('prev_flat_grad'), \
            st.get('prev_loss')
        n_iter = 0
        while n_iter < self._max_iter:
            n_iter += 1
            st['n_iter'] += 1
            if st['n_iter'] == 1:
                d = -g
                dirs, stps, ro = [], [], []
                h_diag = 1.0
            else:
                y = g - g_prev
                s = d * t
                ys = float(y.dot(s))
                if ys > 1e-10:
                    if len(dirs) == self._history:
                        dirs.pop(0)
                        stps.pop(0)
                        ro.pop(0)
                    dirs.append(y)
                    stps.append(s)
                    ro.append(1.0 / ys)
                    h_diag = ys / float(y.dot(y))
                # two-loop recursion: d = -H g
                q = -g
                al = [0.0] * len(dirs)
                for i in range(len(dirs) - 1, -1, -1):
                    al[i] = float(stps[i].dot(q)) * ro[i]
                    q = q - al[i] * dirs[i]
                d = q * h_diag
                for i in range(len(dirs)):
                    be = float(dirs[i].dot(d)) * ro[i]
                    d = d + stps[i] * (al[i] - be)
            g_prev = g.copy()
            loss_prev = loss
            t = min(1.0, 1.0 / float(np.abs(g).sum())) * lr if st['n_iter'] == 1 else lr
            gtd = float(g.dot(d))
            if gtd > -self._tol_change:
                break
            if self._line_search == 'strong_wolfe':
                x0 = self._get_flat()

                def evaluate(step):
                    self._set_flat(x0 + step * d)
                    return self._eval(closure)
                loss, g, t, ls_evals = _strong_wolfe(evaluate, t, d, loss, g, gtd)
                self._set_flat(x0 + t * d)
            else:
                self._set_flat(self._get_flat() + t * d)
                ls_evals = 0
                if n_iter != self._max_iter:
                    loss, g = self._eval(closure)
                    ls_evals = 1
            evals += ls_evals
            st['func_evals'] += ls_evals
            if n_iter == self._max_iter or evals >= self._max_eval:
                break
            if np.abs(g).max() <= self._tol_grad:
                break
            if np.abs(d * t).max() <= self._tol_change:
                break
            if abs(loss - loss_prev) < self._tol_change:
                break
        st.update(d=d, t=t, old_dirs=dirs, old_stps=stps, ro=ro, H_diag=h_diag,
                  prev_flat_grad=g_prev, prev_loss=loss_prev)
        return orig_loss

    def minimize(self, loss, startup_program=None, parameters=None, no_grad_set=None):
        raise NotImplementedError("LBFGS.minimize: use step(closure)")

    def state_dict(self):
        return {'state': dict(self._st)}

    def set_state_dict(self, state_dict):
        self._st = dict(state_dict.get('state', state_dict))

    set_dict = set_state_dict
    load_state_dict = set_state_dict
