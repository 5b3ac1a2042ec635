"""Paddle's other optimizers (issue 18 item 2): Adadelta, Adamax, Lamb, NAdam,
RAdam, ASGD, Rprop and LBFGS, each run for a few steps on a small
least-squares problem and compared with torch.optim's equivalent where the
update rules coincide (Adadelta, NAdam, RAdam, Rprop, LBFGS), otherwise with
the formula on Paddle's API page written out in numpy (Adamax, Lamb, ASGD).
Also the examples of those pages run."""
import unittest

import numpy as np

import paddle

try:
    import torch
except ImportError:
    torch = None

RNG = np.random.default_rng(11)
X = RNG.standard_normal((8, 3))
Y = RNG.standard_normal((8, 2))
W0 = RNG.standard_normal((3, 2))


def loss_grad_np(w):
    r = X @ w - Y
    return float((r * r).sum()), 2 * X.T @ r


def run_paddle(make, steps=5):
    w = paddle.to_tensor(W0.copy(), stop_gradient=False)
    opt = make([w])
    for _ in range(steps):
        loss = ((paddle.matmul(paddle.to_tensor(X), w) - paddle.to_tensor(Y)) ** 2).sum()
        loss.backward()
        opt.step()
        opt.clear_grad()
    return w.numpy()


def run_torch(make, steps=5):
    w = torch.tensor(W0.copy(), requires_grad=True)
    opt = make([w])
    for _ in range(steps):
        opt.zero_grad()
        loss = ((torch.tensor(X) @ w - torch.tensor(Y)) ** 2).sum()
        loss.backward()
        opt.step()
    return w.detach().numpy()


@unittest.skipIf(torch is None, "PyTorch is not installed")
class TestAgainstTorch(unittest.TestCase):
    def check(self, mp, mt, steps=5):
        got = run_paddle(mp, steps)
        want = run_torch(mt, steps)
        self.assertFalse(np.allclose(got, W0))
        np.testing.assert_allclose(got, want, rtol=1e-7, atol=1e-9)

    def test_adadelta(self):
        self.check(lambda ps: paddle.optimizer.Adadelta(0.5, epsilon=1e-6, rho=0.9,
                                                        parameters=ps),
                   lambda ps: torch.optim.Adadelta(ps, lr=0.5, rho=0.9, eps=1e-6))

    def test_radam_both_branches(self):
        # rho_t > 5 only from step 6 on with beta2=0.999
        self.check(lambda ps: paddle.optimizer.RAdam(0.05, parameters=ps),
                   lambda ps: torch.optim.RAdam(ps, lr=0.05), steps=9)

    def test_rprop(self):
        self.check(lambda ps: paddle.optimizer.Rprop(0.01, parameters=ps),
                   lambda ps: torch.optim.Rprop(ps, lr=0.01, step_sizes=(1e-5, 50)), steps=10)

    def test_lbfgs_fixed_step(self):
        def paddle_run():
            w = paddle.to_tensor(W0.copy(), stop_gradient=False)
            opt = paddle.optimizer.LBFGS(learning_rate=0.2, max_iter=6, parameters=[w])

            def closure():
                opt.clear_grad()
                loss = ((paddle.matmul(paddle.to_tensor(X), w) - paddle.to_tensor(Y)) ** 2).sum()
                loss.backward()
                return loss
            for _ in range(2):
                opt.step(closure)
            return w.numpy()

        def torch_run():
            w = torch.tensor(W0.copy(), requires_grad=True)
            opt = torch.optim.LBFGS([w], lr=0.2, max_iter=6)

            def closure():
                opt.zero_grad()
                loss = ((torch.tensor(X) @ w - torch.tensor(Y)) ** 2).sum()
                loss.backward()
                return loss
            for _ in range(2):
                opt.step(closure)
            return w.detach().numpy()
        np.testing.assert_allclose(paddle_run(), torch_run(), rtol=1e-7, atol=1e-9)


class TestAgainstFormula(unittest.TestCase):
    def test_adamax(self):
        lr, b1, b2, eps = 0.1, 0.9, 0.999, 1e-8
        w, m, u = W0.copy(), np.zeros_like(W0), np.zeros_like(W0)
        for t in range(1, 6):
            _, g = loss_grad_np(w)
            m = b1 * m + (1 - b1) * g
            u = np.maximum(b2 * u + eps, np.abs(g))
            w = w - lr / (1 - b1 ** t) * m / u
        got = run_paddle(lambda ps: paddle.optimizer.Adamax(lr, parameters=ps))
        np.testing.assert_allclose(got, w, rtol=1e-10)

    def test_nadam(self):
        # Paddle's page; torch 1.13's NAdam multiplies mu_t twice into the
        # product for the next step (fixed in later torch), so no torch here
        lr, b1, b2, eps, psi = 0.05, 0.9, 0.999, 1e-8, 0.004
        w, m, v, prod = W0.copy(), np.zeros_like(W0), np.zeros_like(W0), 1.0
        for t in range(1, 9):
            _, g = loss_grad_np(w)
            mu = b1 * (1 - 0.5 * 0.96 ** (t * psi))
            mu1 = b1 * (1 - 0.5 * 0.96 ** ((t + 1) * psi))
            prod *= mu
            m = b1 * m + (1 - b1) * g
            v = b2 * v + (1 - b2) * g * g
            mh = mu1 * m / (1 - prod * mu1) + (1 - mu) * g / (1 - prod)
            w = w - lr * mh / (np.sqrt(v / (1 - b2 ** t)) + eps)
        got = run_paddle(lambda ps: paddle.optimizer.NAdam(lr, parameters=ps), steps=8)
        np.testing.assert_allclose(got, w, rtol=1e-10)

    def test_lamb(self):
        lr, wd, b1, b2, eps = 0.05, 0.01, 0.9, 0.999, 1e-6
        w, m, v = W0.copy(), np.zeros_like(W0), np.zeros_like(W0)
        for t in range(1, 6):
            _, g = loss_grad_np(w)
            m = b1 * m + (1 - b1) * g
            v = b2 * v + (1 - b2) * g * g
            r = (m / (1 - b1 ** t)) / (np.sqrt(v / (1 - b2 ** t)) + eps) + wd * w
            w = w - lr * (np.linalg.norm(w) / np.linalg.norm(r)) * r
        got = run_paddle(lambda ps: paddle.optimizer.Lamb(lr, lamb_weight_decay=wd,
                                                          parameters=ps))
        np.testing.assert_allclose(got, w, rtol=1e-10)

    def test_asgd(self):
        lr, n, wd = 0.01, 3, 0.1
        w, d, ys = W0.copy(), np.zeros_like(W0), np.zeros((n,) + W0.shape)
        for m in range(7):
            _, g = loss_grad_np(w)
            i = m % n
            d = d - ys[i] + g
            ys[i] = g
            w = w - lr * (d / min(m + 1, n) + wd * w)
        got = run_paddle(lambda ps: paddle.optimizer.ASGD(lr, batch_num=n, parameters=ps,
                                                          weight_decay=wd), steps=7)
        np.testing.assert_allclose(got, w, rtol=1e-10)

    def test_lbfgs_strong_wolfe_finds_the_least_squares_solution(self):
        w = paddle.to_tensor(W0.copy(), stop_gradient=False)
        opt = paddle.optimizer.LBFGS(learning_rate=1, max_iter=50, line_search_fn='strong_wolfe',
                                     parameters=[w])

        def closure():
            opt.clear_grad()
            loss = ((paddle.matmul(paddle.to_tensor(X), w) - paddle.to_tensor(Y)) ** 2).sum()
            loss.backward()
            return loss
        opt.step(closure)
        best = np.linalg.lstsq(X, Y, rcond=None)[0]
        np.testing.assert_allclose(w.numpy(), best, rtol=1e-5, atol=1e-6)


class TestPageExamples(unittest.TestCase):
    def test_examples_run(self):
        for cls, kw in ((paddle.optimizer.Adadelta, {'weight_decay': 0.01}),
                        (paddle.optimizer.Adamax, {'beta1': 0.9, 'beta2': 0.99}),
                        (paddle.optimizer.Lamb, {'lamb_weight_decay': 0.01}),
                        (paddle.optimizer.NAdam, {}), (paddle.optimizer.RAdam, {}),
                        (paddle.optimizer.ASGD, {'batch_num': 2}),
                        (paddle.optimizer.Rprop, {'learning_rate_range': (0.0001, 0.1)})):
            with self.subTest(opt=cls.__name__):
                inp = paddle.uniform(shape=[10, 10], min=-0.1, max=0.1)
                linear = paddle.nn.Linear(10, 10)
                out = linear(inp)
                loss = paddle.mean(out)
                opt = cls(learning_rate=0.1, parameters=linear.parameters(), **kw)
                before = linear.weight.numpy().copy()
                loss.backward()
                opt.step()
                opt.clear_grad()
                self.assertFalse(np.allclose(before, linear.weight.numpy()))
                sd = opt.state_dict()
                opt2 = cls(learning_rate=0.1, parameters=linear.parameters(), **kw)
                opt2.set_state_dict(sd)

    def test_bad_arguments(self):
        p = [paddle.to_tensor([1.0], stop_gradient=False)]
        with self.assertRaises(ValueError):
            paddle.optimizer.Rprop(0.1, etas=(1.5, 1.2), parameters=p)
        with self.assertRaises(ValueError):
            paddle.optimizer.ASGD(0.1, batch_num=0, parameters=p)
        with self.assertRaises(ValueError):
            paddle.optimizer.LBFGS(parameters=p, line_search_fn='armijo')
        with self.assertRaises(ValueError):
            paddle.optimizer.Adamax(0.1, beta1=1.5, parameters=p)


if __name__ == '__main__':
    unittest.main()
