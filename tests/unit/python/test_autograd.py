"""Autograd from Python: backward, grad, stop_gradient, no_grad, paddle.grad."""
import unittest

import numpy as np

import paddle


class TestBackward(unittest.TestCase):
    def test_backward_fills_leaf_grads(self):
        x = paddle.to_tensor([1.0, 2.0, 3.0], stop_gradient=False)
        y = (x * x).sum()
        y.backward()
        np.testing.assert_allclose(x.grad.numpy(), [2, 4, 6])
        self.assertTrue(x.grad.stop_gradient)

    def test_grads_accumulate_and_clear_grad(self):
        x = paddle.to_tensor([1.0, 2.0], stop_gradient=False)
        (x * 3).sum().backward()
        (x * 3).sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), [6, 6])
        x.clear_grad()
        np.testing.assert_allclose(x.grad.numpy(), [0, 0])
        x.clear_gradient(False)
        self.assertIsNone(x.grad)

    def test_chain_through_many_ops(self):
        a = np.random.RandomState(0).randn(3, 4).astype(np.float64)
        w = np.random.RandomState(1).randn(4, 2).astype(np.float64)
        x = paddle.to_tensor(a, stop_gradient=False)
        W = paddle.to_tensor(w, stop_gradient=False)
        out = paddle.tanh(x @ W).mean()
        out.backward()
        t = np.tanh(a @ w)
        g = (1 - t ** 2) / t.size
        np.testing.assert_allclose(W.grad.numpy(), a.T @ g, rtol=1e-10)
        np.testing.assert_allclose(x.grad.numpy(), g @ w.T, rtol=1e-10)

    def test_stop_gradient_defaults(self):
        x = paddle.to_tensor([1.0])
        self.assertTrue(x.stop_gradient)
        y = x * 2
        self.assertTrue(y.stop_gradient)
        p = paddle.create_parameter([2, 2], 'float32')
        self.assertFalse(p.stop_gradient)
        self.assertFalse((p * 2).stop_gradient)
        self.assertFalse(paddle.nn.Linear(2, 3).weight.stop_gradient)

    def test_backward_without_graph_is_an_error(self):
        with self.assertRaises(RuntimeError):
            paddle.to_tensor(1.0).backward()

    def test_second_backward_needs_retain_graph(self):
        x = paddle.to_tensor([1.0, 2.0], stop_gradient=False)
        y = (x * x).sum()
        y.backward(retain_graph=True)
        y.backward()
        np.testing.assert_allclose(x.grad.numpy(), [4, 8])
        z = (x * x).sum()
        z.backward()
        with self.assertRaises(RuntimeError):
            z.backward()

    def test_non_scalar_backward_takes_grad_tensor(self):
        x = paddle.to_tensor([1.0, 2.0], stop_gradient=False)
        y = x * 3
        y.backward(paddle.to_tensor([1.0, 10.0]))
        np.testing.assert_allclose(x.grad.numpy(), [3, 30])
        # Paddle: a non-scalar tensor starts from a gradient of ones
        x.clear_grad()
        (x * 3).backward()
        np.testing.assert_allclose(x.grad.numpy(), [3, 3])

    def test_no_grad_context_and_decorator(self):
        x = paddle.to_tensor([1.0], stop_gradient=False)
        with paddle.no_grad():
            y = x * 2
        self.assertTrue(y.stop_gradient)
        self.assertTrue(paddle.is_grad_enabled())

        @paddle.no_grad()
        def f(t):
            return t * 2
        self.assertTrue(f(x).stop_gradient)

        @paddle.no_grad
        def g(t):
            return t * 2
        self.assertTrue(g(x).stop_gradient)
        self.assertFalse((x * 2).stop_gradient)

    def test_paddle_grad(self):
        x = paddle.to_tensor([1.0, 2.0], stop_gradient=False)
        y = (x ** 3).sum()
        (gx,) = paddle.grad(y, x)
        np.testing.assert_allclose(gx.numpy(), [3, 12])
        self.assertIsNone(x.grad)
        a = paddle.to_tensor([1.0], stop_gradient=False)
        b = paddle.to_tensor([1.0], stop_gradient=False)
        with self.assertRaises(RuntimeError):
            paddle.grad((a * 2).sum(), [a, b])
        ga, gb = paddle.grad((a * 2).sum(), [a, b], allow_unused=True)
        self.assertIsNone(gb)

    def test_detach_cuts_the_graph(self):
        x = paddle.to_tensor([2.0], stop_gradient=False)
        y = x * x
        z = (y.detach() * x).sum()
        z.backward()
        np.testing.assert_allclose(x.grad.numpy(), [4])

    def test_setitem_on_a_tensor_with_history_is_differentiable(self):
        x = paddle.to_tensor([1.0, 2.0, 3.0], stop_gradient=False)
        y = x * 2
        y[1] = 0.0
        y.sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), [2, 0, 2])

    def test_inplace_on_a_leaf_that_needs_grad_is_an_error(self):
        p = paddle.create_parameter([2], 'float32')
        with self.assertRaises(RuntimeError):
            p[0] = 1.0
        with paddle.no_grad():
            p[0] = 1.0
        self.assertEqual(float(p[0]), 1.0)

    def test_gradients_flow_through_indexing_and_shape_ops(self):
        x = paddle.to_tensor(np.arange(6, dtype=np.float32).reshape(2, 3), stop_gradient=False)
        y = x[:, 1:].reshape([4]).sum() + paddle.concat([x, x]).mean()
        y.backward()
        expected = np.full((2, 3), 2 / 12.0, np.float32)
        expected[:, 1:] += 1
        np.testing.assert_allclose(x.grad.numpy(), expected, rtol=1e-6)

    def test_fused_optimizer_binding(self):
        p = paddle.create_parameter([3], 'float32')
        p.set_value(np.array([1.0, 2.0, 3.0], np.float32))
        opt = paddle._C.Optimizer('sgd', [p], lr=0.1)
        (p * p).sum().backward()
        opt.step()
        np.testing.assert_allclose(p.numpy(), [0.8, 1.6, 2.4], rtol=1e-6)
        opt.clear_grad()
        np.testing.assert_allclose(p.grad.numpy(), [0, 0, 0])
        adam = paddle._C.Optimizer('adam', [p], lr=0.01)
        self.assertIsNone(adam.state_get(0, 'moment1'))
        (p * p).sum().backward()
        adam.step()
        self.assertEqual(adam.state_names(), ['moment1', 'moment2', 'beta1_pow_acc',
                                              'beta2_pow_acc'])
        self.assertEqual(adam.state_get(0, 'moment1').shape, [3])
        with self.assertRaises(ValueError):
            paddle._C.Optimizer('nope', [p])


if __name__ == '__main__':
    unittest.main()
