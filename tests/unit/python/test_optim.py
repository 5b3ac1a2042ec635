"""paddle.optimizer (SGD, Momentum, Adam, AdamW) against numpy references of
Paddle's formulas, state dicts, and paddle.optimizer.lr schedulers."""
import math
import os
import tempfile
import unittest

import numpy as np

import paddle
import paddle.nn as nn
from paddle.optimizer import lr


def make_param(values):
    p = paddle.create_parameter([len(values)], 'float32')
    p.set_value(np.asarray(values, 'float32'))
    return p


def set_grad(p, g):
    # loss = sum(p * g) gives p.grad == g
    (p * paddle.to_tensor(np.asarray(g, 'float32'))).sum().backward()


class TestOptimizers(unittest.TestCase):
    def test_sgd_with_l2_weight_decay(self):
        p = make_param([1.0, -2.0])
        opt = paddle.optimizer.SGD(learning_rate=0.1, parameters=[p], weight_decay=0.01)
        set_grad(p, [0.5, 0.5])
        opt.step()
        ref = np.array([1.0, -2.0]) - 0.1 * (np.array([0.5, 0.5]) + 0.01 * np.array([1.0, -2.0]))
        np.testing.assert_allclose(p.numpy(), ref, rtol=1e-6)

    def test_regularizer_l2decay_equals_float_weight_decay(self):
        p1, p2 = make_param([1.0, 2.0]), make_param([1.0, 2.0])
        o1 = paddle.optimizer.SGD(0.1, parameters=[p1], weight_decay=0.05)
        o2 = paddle.optimizer.SGD(0.1, parameters=[p2],
                                  weight_decay=paddle.regularizer.L2Decay(0.05))
        for p, o in ((p1, o1), (p2, o2)):
            set_grad(p, [1.0, 1.0])
            o.step()
        np.testing.assert_allclose(p1.numpy(), p2.numpy(), rtol=1e-7)

    def test_momentum_two_steps(self):
        p = make_param([1.0])
        opt = paddle.optimizer.Momentum(learning_rate=0.1, momentum=0.9, parameters=[p])
        v, w = 0.0, 1.0
        for g in (1.0, 2.0):
            set_grad(p, [g])
            opt.step()
            opt.clear_grad()
            v = 0.9 * v + g
            w -= 0.1 * v
        np.testing.assert_allclose(p.numpy(), [w], rtol=1e-6)

    def test_adam_matches_paddle_formula(self):
        p = make_param([0.5, -1.0, 2.0])
        opt = paddle.optimizer.Adam(learning_rate=0.01, parameters=[p])
        w = np.array([0.5, -1.0, 2.0])
        m = np.zeros(3)
        v = np.zeros(3)
        b1, b2, eps = 0.9, 0.999, 1e-8
        for step, g in enumerate(([0.1, -0.2, 0.3], [0.4, 0.1, -0.5], [1.0, 1.0, 1.0]), 1):
            set_grad(p, g)
            opt.step()
            opt.clear_grad()
            g = np.array(g)
            m = b1 * m + (1 - b1) * g
            v = b2 * v + (1 - b2) * g * g
            lr_t = 0.01 * math.sqrt(1 - b2 ** step) / (1 - b1 ** step)
            w = w - lr_t * m / (np.sqrt(v) + eps * math.sqrt(1 - b2 ** step))
        np.testing.assert_allclose(p.numpy(), w, rtol=1e-5)

    def test_adamw_decays_decoupled_and_respects_apply_decay_param_fun(self):
        fc = nn.Linear(1, 1)
        fc.weight.set_value(np.array([[1.0]], 'float32'))
        fc.bias.set_value(np.array([1.0], 'float32'))
        opt = paddle.optimizer.AdamW(learning_rate=0.1, parameters=fc.parameters(),
                                     weight_decay=0.5,
                                     apply_decay_param_fun=lambda n: n.endswith('w_0'))
        # zero gradients: only the decay moves the weights
        set_grad(fc.weight, [[0.0]])
        set_grad(fc.bias, [0.0])
        opt.step()
        self.assertAlmostEqual(float(fc.weight.numpy()[0, 0]), 1.0 - 0.1 * 0.5 * 1.0, places=6)
        self.assertAlmostEqual(float(fc.bias.numpy()[0]), 1.0, places=6)

    def test_adamw_default_weight_decay_is_0_01(self):
        p = make_param([2.0])
        opt = paddle.optimizer.AdamW(learning_rate=1.0, parameters=[p])
        set_grad(p, [0.0])
        opt.step()
        self.assertAlmostEqual(float(p.numpy()[0]), 2.0 - 1.0 * 0.01 * 2.0, places=5)

    def test_parameters_without_grad_are_skipped(self):
        a, b = make_param([1.0]), make_param([1.0])
        opt = paddle.optimizer.Adam(0.1, parameters=[a, b])
        set_grad(a, [1.0])
        opt.step()
        self.assertNotEqual(float(a.numpy()[0]), 1.0)
        self.assertEqual(float(b.numpy()[0]), 1.0)

    def test_grad_clip_by_global_norm(self):
        p = make_param([0.0, 0.0])
        opt = paddle.optimizer.SGD(1.0, parameters=[p],
                                   grad_clip=nn.ClipGradByGlobalNorm(1.0))
        set_grad(p, [3.0, 4.0])
        opt.step()
        np.testing.assert_allclose(p.numpy(), [-0.6, -0.8], rtol=1e-6)

    def test_param_attr_learning_rate_scales_the_update(self):
        fc = nn.Linear(1, 1, weight_attr=paddle.ParamAttr(learning_rate=0.5), bias_attr=False)
        fc.weight.set_value(np.array([[0.0]], 'float32'))
        opt = paddle.optimizer.SGD(1.0, parameters=fc.parameters())
        set_grad(fc.weight, [[1.0]])
        opt.step()
        self.assertAlmostEqual(float(fc.weight.numpy()[0, 0]), -0.5, places=6)

    def test_clear_grad_minimize_get_set_lr(self):
        p = make_param([1.0])
        opt = paddle.optimizer.SGD(0.5, parameters=[p])
        self.assertEqual(opt.get_lr(), 0.5)
        opt.set_lr(0.25)
        self.assertEqual(opt.get_lr(), 0.25)
        loss = (p * 2.0).sum()
        loss.backward()
        opt.minimize(loss)
        self.assertAlmostEqual(float(p.numpy()[0]), 0.5, places=6)
        opt.clear_grad()
        g = p.grad
        self.assertTrue(g is None or float(g.numpy()[0]) == 0.0)

    def test_bad_arguments_raise(self):
        p = make_param([1.0])
        with self.assertRaises(AttributeError):
            paddle.optimizer.Adam(0.1)
        with self.assertRaises(TypeError):
            paddle.optimizer.SGD('fast', parameters=[p])
        with self.assertRaises(ValueError):
            paddle.optimizer.Adam(0.1, beta1=1.5, parameters=[p])
        with self.assertRaises(TypeError):
            paddle.optimizer.SGD(0.1, parameters=[p], grad_clip=3)

    def test_state_dict_uses_paddle_names_and_round_trips(self):
        paddle.seed(3)
        fc = nn.Linear(2, 2)
        opt = paddle.optimizer.Adam(0.01, parameters=fc.parameters())
        x = paddle.randn([4, 2])
        fc(x).sum().backward()
        opt.step()
        opt.clear_grad()
        sd = opt.state_dict()
        wname = fc.weight.name
        for k in ('moment1_0', 'moment2_0', 'beta1_pow_acc_0', 'beta2_pow_acc_0'):
            self.assertIn('{}_{}'.format(wname, k), sd)
        self.assertAlmostEqual(float(np.asarray(sd[wname + '_beta1_pow_acc_0'].numpy())
                                     .reshape(-1)[0]), 0.81, places=5)
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, 'o.pdopt')
            paddle.save(sd, path)
            loaded = paddle.load(path)
        # a fresh model + optimizer restored from the files continues identically
        fc2 = nn.Linear(2, 2)
        fc2.set_state_dict(fc.state_dict())
        opt2 = paddle.optimizer.Adam(0.01, parameters=fc2.parameters())
        opt2.set_state_dict(loaded)
        for net, o in ((fc, opt), (fc2, opt2)):
            net(x).sum().backward()
            o.step()
            o.clear_grad()
        np.testing.assert_allclose(fc.weight.numpy(), fc2.weight.numpy(), rtol=1e-6)

    def test_parameter_groups(self):
        a, b = make_param([0.0]), make_param([0.0])
        opt = paddle.optimizer.SGD(1.0, parameters=[{'params': [a]},
                                                    {'params': [b], 'learning_rate': 0.1}])
        set_grad(a, [1.0])
        set_grad(b, [1.0])
        opt.step()
        self.assertAlmostEqual(float(a.numpy()[0]), -1.0, places=6)
        self.assertAlmostEqual(float(b.numpy()[0]), -0.1, places=6)


class TestElementwiseOptimizers(unittest.TestCase):
    def test_rmsprop_matches_formula(self):
        p = make_param([1.0, -1.0])
        opt = paddle.optimizer.RMSProp(learning_rate=0.1, rho=0.9, momentum=0.5,
                                       parameters=[p])
        w, r, mom = np.array([1.0, -1.0]), np.zeros(2), np.zeros(2)
        for g in ([0.5, -0.2], [0.1, 0.3]):
            set_grad(p, g)
            opt.step()
            opt.clear_grad()
            g = np.array(g)
            r = 0.9 * r + 0.1 * g * g
            mom = 0.5 * mom + 0.1 * g / np.sqrt(r + 1e-6)
            w = w - mom
        np.testing.assert_allclose(p.numpy(), w, rtol=1e-5)
        sd = opt.state_dict()
        self.assertIn(p.name + '_mean_square_0', sd)

    def test_adagrad_matches_formula_and_restores_state(self):
        p = make_param([2.0])
        opt = paddle.optimizer.Adagrad(learning_rate=0.5, parameters=[p])
        set_grad(p, [1.0])
        opt.step()
        opt.clear_grad()
        self.assertAlmostEqual(float(p.numpy()[0]), 2.0 - 0.5 * 1.0 / (1.0 + 1e-6), places=5)
        q = make_param([float(p.numpy()[0])])
        opt2 = paddle.optimizer.Adagrad(learning_rate=0.5, parameters=[q])
        opt2.set_state_dict({q.name + '_moment_0': opt.state_dict()[p.name + '_moment_0']})
        for prm, o in ((p, opt), (q, opt2)):
            set_grad(prm, [1.0])
            o.step()
        np.testing.assert_allclose(p.numpy(), q.numpy(), rtol=1e-6)


class TestSchedulers(unittest.TestCase):
    def _run(self, s, n):
        out = []
        for _ in range(n):
            out.append(s())
            s.step()
        return out

    def test_step_decay(self):
        s = lr.StepDecay(learning_rate=0.5, step_size=2, gamma=0.1)
        np.testing.assert_allclose(self._run(s, 5), [0.5, 0.5, 0.05, 0.05, 0.005])

    def test_piecewise_decay(self):
        s = lr.PiecewiseDecay(boundaries=[2, 4], values=[1.0, 0.5, 0.1])
        np.testing.assert_allclose(self._run(s, 6), [1.0, 1.0, 0.5, 0.5, 0.1, 0.1])
        with self.assertRaises(ValueError):
            lr.PiecewiseDecay([1, 2], [1.0])

    def test_exponential_decay(self):
        s = lr.ExponentialDecay(learning_rate=1.0, gamma=0.5)
        np.testing.assert_allclose(self._run(s, 4), [1.0, 0.5, 0.25, 0.125])

    def test_cosine_annealing_recursive_and_closed_form(self):
        s = lr.CosineAnnealingDecay(learning_rate=1.0, T_max=4)
        vals = self._run(s, 5)
        closed = [0.5 * (1 + math.cos(math.pi * e / 4)) for e in range(5)]
        np.testing.assert_allclose(vals, closed, rtol=1e-6, atol=1e-12)
        s.step(2)
        self.assertAlmostEqual(s(), closed[2])

    def test_linear_warmup_then_inner_scheduler(self):
        inner = lr.StepDecay(0.1, step_size=1, gamma=0.5)
        s = lr.LinearWarmup(learning_rate=inner, warmup_steps=2, start_lr=0.0, end_lr=0.1)
        np.testing.assert_allclose(self._run(s, 5), [0.0, 0.05, 0.1, 0.05, 0.025])
        s2 = lr.LinearWarmup(learning_rate=0.1, warmup_steps=4, start_lr=0.0, end_lr=0.1)
        np.testing.assert_allclose(self._run(s2, 6), [0, 0.025, 0.05, 0.075, 0.1, 0.1])

    def test_optimizer_follows_scheduler_in_manual_loop(self):
        p = make_param([0.0])
        sched = lr.StepDecay(1.0, step_size=1, gamma=0.5)
        opt = paddle.optimizer.SGD(learning_rate=sched, parameters=[p])
        for _ in range(3):
            set_grad(p, [1.0])
            opt.step()
            opt.clear_grad()
            sched.step()
        self.assertAlmostEqual(float(p.numpy()[0]), -(1.0 + 0.5 + 0.25), places=6)
        self.assertAlmostEqual(opt.get_lr(), 0.125)
        with self.assertRaises(RuntimeError):
            opt.set_lr(0.1)
        self.assertEqual(opt.state_dict()['LR_Scheduler']['last_epoch'], 3)

    def test_scheduler_state_dict_and_user_subclass(self):
        s = lr.ExponentialDecay(1.0, 0.9)
        s.step()
        s.step()
        t = lr.ExponentialDecay(1.0, 0.9)
        t.set_state_dict(s.state_dict())
        self.assertEqual(t.last_epoch, 2)
        self.assertAlmostEqual(t(), s())

        class Halve(lr.LRScheduler):
            def get_lr(self):
                return self.base_lr / (2 ** self.last_epoch)

        h = Halve(learning_rate=4.0)
        np.testing.assert_allclose(self._run(h, 3), [4.0, 2.0, 1.0])

    def test_other_schedulers(self):
        self.assertAlmostEqual(lr.MultiStepDecay(1.0, [1, 3], 0.1).get_lr(), 1.0)
        s = lr.LambdaDecay(2.0, lambda e: 0.5 ** e)
        np.testing.assert_allclose(self._run(s, 3), [2.0, 1.0, 0.5])
        p = lr.PolynomialDecay(1.0, decay_steps=2, end_lr=0.0)
        np.testing.assert_allclose(self._run(p, 4), [1.0, 0.5, 0.0, 0.0])
        r = lr.ReduceOnPlateau(1.0, patience=0, factor=0.5)
        r.step(1.0)
        r.step(2.0)
        self.assertAlmostEqual(r(), 0.5)


if __name__ == '__main__':
    unittest.main()
