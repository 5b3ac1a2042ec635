"""Higher-order gradients, hooks and PyLayer (issue 18 items 1, 4, 5), from
Paddle's API pages: paddle.grad (create_graph), Tensor.register_hook,
Tensor.retain_grads, paddle.autograd.PyLayer, backward on non-scalar
tensors, stop_gradient=False on integer tensors, and x.grad's repr.

Second derivatives are checked against central finite differences of the
first derivative (float64) and against torch.autograd.grad where PyTorch is
installed."""
import unittest

import numpy as np

import paddle
import paddle.nn.functional as F

try:
    import torch
    import torch.nn.functional as TF
except ImportError:      # the finite-difference checks still run
    torch = None

RNG = np.random.default_rng(7)


def first_grad(fn, xa):
    """d sum(fn(x)) / dx as a differentiable paddle tensor and x."""
    x = paddle.to_tensor(xa, stop_gradient=False)
    y = fn(x)
    (g,) = paddle.grad(y.sum() if y.ndim else y, x, create_graph=True)
    return g, x


def second_numeric(fn, xa, eps=1e-6):
    """central differences of sum(d fn / dx) along each element of x"""
    out = np.zeros_like(xa)
    flat = out.reshape(-1)
    for i in range(xa.size):
        vals = []
        for s in (1, -1):
            w = xa.copy().reshape(-1)
            w[i] += s * eps
            g, _ = first_grad(fn, w.reshape(xa.shape))
            vals.append(float(g.numpy().sum()))
        flat[i] = (vals[0] - vals[1]) / (2 * eps)
    return out


# (name, paddle fn, torch fn): each a scalar-or-tensor function of one input
W = RNG.standard_normal((3, 4))
LAB = RNG.integers(0, 4, size=(5,))
SOFT = RNG.random((5, 4))
SOFT /= SOFT.sum(1, keepdims=True)
TARGET = RNG.standard_normal((5, 4))
CASES = [
    ('mul_div_pow', lambda x: (x * x * x) / (x * x + 2.0) + x ** 3,
     lambda x: (x * x * x) / (x * x + 2.0) + x ** 3),
    ('exp_log_sqrt', lambda x: paddle.exp(x) + paddle.log(x * x + 1) + paddle.sqrt(x * x + 1),
     lambda x: torch.exp(x) + torch.log(x * x + 1) + torch.sqrt(x * x + 1)),
    ('matmul', lambda x: paddle.matmul(paddle.matmul(x, paddle.to_tensor(W)),
                                       paddle.to_tensor(W.T)) ** 2,
     lambda x: torch.matmul(torch.matmul(x, torch.tensor(W)), torch.tensor(W.T)) ** 2),
    ('linear', lambda x: F.linear(x, paddle.to_tensor(W), paddle.to_tensor(W[0])) ** 3,
     lambda x: (x @ torch.tensor(W) + torch.tensor(W[0])) ** 3),
    ('relu', lambda x: F.relu(x) ** 3, lambda x: torch.relu(x) ** 3),
    ('sigmoid', F.sigmoid, torch.sigmoid if torch else None),
    ('tanh', paddle.tanh, torch.tanh if torch else None),
    ('gelu', F.gelu, TF.gelu if torch else None),
    ('gelu_tanh', lambda x: F.gelu(x, approximate=True),
     (lambda x: TF.gelu(x, approximate='tanh')) if torch else None),
    ('softplus', F.softplus, TF.softplus if torch else None),
    ('silu_leaky', lambda x: F.silu(x) + F.leaky_relu(x, 0.2) * x,
     (lambda x: TF.silu(x) + TF.leaky_relu(x, 0.2) * x) if torch else None),
    ('sum_mean', lambda x: paddle.sum(x, axis=1) ** 2 + paddle.mean(x * x, axis=0).sum() ** 2,
     lambda x: torch.sum(x, dim=1) ** 2 + torch.mean(x * x, dim=0).sum() ** 2),
    ('mse', lambda x: F.mse_loss(paddle.tanh(x), paddle.to_tensor(TARGET)) * 10,
     lambda x: TF.mse_loss(torch.tanh(x), torch.tensor(TARGET)) * 10),
    ('softmax', lambda x: F.softmax(x, axis=1) ** 2, lambda x: torch.softmax(x, 1) ** 2),
    ('cross_entropy', lambda x: F.cross_entropy(x * x, paddle.to_tensor(LAB)),
     lambda x: TF.cross_entropy(x * x, torch.tensor(LAB))),
    ('cross_entropy_soft', lambda x: F.cross_entropy(x * x, paddle.to_tensor(SOFT),
                                                    soft_label=True),
     lambda x: TF.cross_entropy(x * x, torch.tensor(SOFT))),
]


class TestSecondDerivatives(unittest.TestCase):
    def check(self, name, fn, tfn):
        xa = RNG.standard_normal((5, 4)) if name not in ('matmul', 'linear') else \
            RNG.standard_normal((2, 3))
        if name == 'exp_log_sqrt':
            xa = xa * 0.5
        g, x = first_grad(fn, xa)
        self.assertFalse(g.stop_gradient, name)
        (h,) = paddle.grad(g.sum(), x)
        num = second_numeric(fn, xa)
        np.testing.assert_allclose(h.numpy(), num, rtol=1e-4, atol=1e-5, err_msg=name)
        if torch is not None and tfn is not None:
            tx = torch.tensor(xa, requires_grad=True)
            ty = tfn(tx)
            (tg,) = torch.autograd.grad(ty.sum(), tx, create_graph=True)
            (th,) = torch.autograd.grad(tg.sum(), tx)
            np.testing.assert_allclose(g.numpy(), tg.detach().numpy(), rtol=1e-6, atol=1e-8,
                                       err_msg=name)
            np.testing.assert_allclose(h.numpy(), th.numpy(), rtol=1e-6, atol=1e-8,
                                       err_msg=name)

    def test_each_op(self):
        paddle.set_default_dtype('float64')
        try:
            for name, fn, tfn in CASES:
                with self.subTest(op=name):
                    self.check(name, fn, tfn)
        finally:
            paddle.set_default_dtype('float32')

    def test_unary_on_a_transposed_view(self):
        # the unary op saves a dense copy of a non-contiguous input: the
        # second derivative must still flow to the input
        xa = RNG.standard_normal((3, 2))
        x = paddle.to_tensor(xa, stop_gradient=False)
        (g,) = paddle.grad(paddle.sin(x.T).sum(), x, create_graph=True)
        (h,) = paddle.grad(g.sum(), x)
        np.testing.assert_allclose(h.numpy(), -np.sin(xa), rtol=1e-6)

    def test_more_ops_against_finite_differences(self):
        # views, indexing, joins, clip, pow with a tensor exponent, losses,
        # statistics: the second derivative of sum(f) against central
        # differences of the first
        paddle.set_default_dtype('float64')
        xa = RNG.standard_normal((4, 5))
        lab = paddle.to_tensor((xa > 0).astype('float64'))
        ops = {
            'slice': lambda x: x[:, 1:3] ** 2, 'index': lambda x: x[1] ** 3,
            'flip': lambda x: paddle.flip(x, [0]) * x,
            'expand': lambda x: x[:1].expand([3, 5]) ** 2,
            'concat': lambda x: paddle.concat([x, x * 2], 0) ** 2,
            'stack_split': lambda x: paddle.split(paddle.stack([x, x * x], 0), 2)[1] ** 2,
            'where': lambda x: paddle.where(x > 0, x, x * 3) ** 2,
            'clip': lambda x: paddle.clip(x, -0.5, 0.5) ** 2 * x,
            'hardswish': lambda x: F.hardswish(x) ** 2,
            'transpose_reshape': lambda x: x.T.reshape([20]) ** 3,
            'maximum': lambda x: paddle.maximum(x, x * 0.5) ** 2,
            'pow_tensor': lambda x: paddle.pow(x * x + 1, paddle.to_tensor(1.5)),
            'broadcast_sub': lambda x: (x - x.mean(0)) ** 2,
            'var_std': lambda x: paddle.var(x, 1).sum() + paddle.std(x, 0).sum(),
            'logsumexp': lambda x: paddle.logsumexp(x, 1) ** 2,
            'log_softmax': lambda x: F.log_softmax(x, 1) ** 2,
            'max': lambda x: paddle.max(x * x, 1) ** 2,
            'prod': lambda x: paddle.prod(x, 1),
            'l1': lambda x: F.l1_loss(x * x, paddle.zeros([4, 5])),
            'bce': lambda x: F.binary_cross_entropy(F.sigmoid(x), lab),
            'bce_logits': lambda x: F.binary_cross_entropy_with_logits(
                x, lab, weight=paddle.to_tensor(np.arange(5.0))),
            'elu_mish': lambda x: F.elu(x) ** 2 + F.mish(x),
            'gather': lambda x: paddle.gather(x, paddle.to_tensor([0, 2, 2])) ** 3,
            'index_select': lambda x: paddle.index_select(x, paddle.to_tensor([1, 3]), 1) * x[:, :2],
            'cumsum': lambda x: paddle.cumsum(x * x, 1) ** 2,
        }
        try:
            for name, fn in ops.items():
                with self.subTest(op=name):
                    g, x = first_grad(fn, xa)
                    (h,) = paddle.grad(g.sum(), x, allow_unused=True)
                    hv = np.zeros_like(xa) if h is None else h.numpy()
                    np.testing.assert_allclose(hv, second_numeric(fn, xa), rtol=1e-4,
                                               atol=1e-5, err_msg=name)
            for name, fn in (('tile', lambda x: paddle.tile(x, [2, 1])),
                             ('pad', lambda x: F.pad(x.unsqueeze(0).unsqueeze(0), [1, 1, 1, 1]))):
                with self.subTest(unsupported=name):
                    x = paddle.to_tensor(xa, stop_gradient=False)
                    with self.assertRaisesRegex(NotImplementedError, name):
                        paddle.grad((fn(paddle.tanh(x)) ** 2).sum(), x, create_graph=True)
        finally:
            paddle.set_default_dtype('float32')

    def test_conv_double_backward_against_torch(self):
        # gradient penalty through conv2d (stride, padding, groups) and conv1d
        if torch is None:
            self.skipTest('PyTorch is not installed')
        paddle.set_default_dtype('float64')
        try:
            xa = RNG.standard_normal((2, 4, 6, 5))
            wa = RNG.standard_normal((6, 2, 3, 2))
            x = paddle.to_tensor(xa, stop_gradient=False)
            w = paddle.to_tensor(wa, stop_gradient=False)
            y = F.conv2d(paddle.tanh(x), w, stride=[2, 1], padding=[1, 0], groups=2)
            gx, gw = paddle.grad((y ** 2).sum(), [x, w], create_graph=True)
            hx, hw = paddle.grad((gx * gx).sum() + (gw ** 3).sum(), [x, w])
            tx = torch.tensor(xa, requires_grad=True)
            tw = torch.tensor(wa, requires_grad=True)
            ty = TF.conv2d(torch.tanh(tx), tw, stride=(2, 1), padding=(1, 0), groups=2)
            tgx, tgw = torch.autograd.grad((ty ** 2).sum(), [tx, tw], create_graph=True)
            thx, thw = torch.autograd.grad((tgx * tgx).sum() + (tgw ** 3).sum(), [tx, tw])
            np.testing.assert_allclose(hx.numpy(), thx.numpy(), rtol=1e-7, atol=1e-9)
            np.testing.assert_allclose(hw.numpy(), thw.numpy(), rtol=1e-7, atol=1e-9)
            x1 = paddle.to_tensor(RNG.standard_normal((2, 3, 7)), stop_gradient=False)
            w1 = paddle.to_tensor(RNG.standard_normal((4, 3, 3)), stop_gradient=False)
            (g1,) = paddle.grad((F.conv1d(x1, w1, padding=1) ** 2).sum(), x1, create_graph=True)
            (h1,) = paddle.grad(g1.sum(), w1)
            t1 = torch.tensor(x1.numpy(), requires_grad=True)
            tw1 = torch.tensor(w1.numpy(), requires_grad=True)
            (tg1,) = torch.autograd.grad((TF.conv1d(t1, tw1, padding=1) ** 2).sum(), t1,
                                         create_graph=True)
            (th1,) = torch.autograd.grad(tg1.sum(), tw1)
            np.testing.assert_allclose(h1.numpy(), th1.numpy(), rtol=1e-7, atol=1e-9)
        finally:
            paddle.set_default_dtype('float32')

    def test_unsupported_double_backward_is_an_error(self):
        # max_pool2d's backward is a fused kernel: differentiating through it
        # twice must fail, not give a second derivative with terms missing
        x = paddle.randn([1, 1, 4, 4])
        x.stop_gradient = False
        # first derivatives with create_graph still work where the incoming
        # gradient is a constant
        (gx,) = paddle.grad(F.max_pool2d(x, 2).sum(), x, create_graph=True)
        self.assertEqual(gx.shape, [1, 1, 4, 4])
        y = F.max_pool2d(paddle.tanh(x), 2)
        with self.assertRaisesRegex(NotImplementedError,
                                    "second derivatives through 'max_pool2d'"):
            paddle.grad((y * y).sum(), x, create_graph=True)

    def test_paddle_grad_page_example(self):
        # paddle.grad's page: y = x * x, dx = 2x with create_graph; z = y + dx,
        # z.backward() -> x.grad = 2x + 2
        x = paddle.to_tensor(2.0, stop_gradient=False)
        y = x * x
        (dx,) = paddle.grad(outputs=[y], inputs=[x], create_graph=True, retain_graph=True)
        z = y + dx
        z.backward()
        self.assertAlmostEqual(dx.item(), 4.0)
        self.assertAlmostEqual(x.grad.item(), 6.0)

    def test_backward_with_create_graph_on_a_model(self):
        # gradient penalty: ||d loss / d x||^2 differentiated w.r.t. weights
        paddle.seed(3)
        lin = paddle.nn.Linear(4, 3)
        x = paddle.randn([6, 4])
        x.stop_gradient = False
        out = paddle.tanh(lin(x)).sum()
        (gx,) = paddle.grad(out, x, create_graph=True)
        pen = (gx * gx).sum()
        pen.backward()
        self.assertIsNotNone(lin.weight.grad)
        if torch is not None:
            tw = torch.tensor(lin.weight.numpy(), requires_grad=True)
            tb = torch.tensor(lin.bias.numpy(), requires_grad=True)
            tx = torch.tensor(x.numpy(), requires_grad=True)
            tout = torch.tanh(tx @ tw + tb).sum()
            (tgx,) = torch.autograd.grad(tout, tx, create_graph=True)
            (tgx * tgx).sum().backward()
            np.testing.assert_allclose(lin.weight.grad.numpy(), tw.grad.numpy(), rtol=1e-4,
                                       atol=1e-5)

    def test_grad_of_intermediate_unused_and_no_accumulation(self):
        x = paddle.to_tensor([1.0, 2.0], stop_gradient=False)
        z = paddle.to_tensor([1.0], stop_gradient=False)
        y = x * 3
        out = (y * y).sum()
        gy, gx = paddle.grad(out, [y, x], retain_graph=True)
        np.testing.assert_allclose(gy.numpy(), [6, 12])
        np.testing.assert_allclose(gx.numpy(), [18, 36])
        self.assertIsNone(x.grad)
        with self.assertRaises(RuntimeError):
            paddle.grad(out, [x, z], retain_graph=True)
        gx2, gz = paddle.grad(out, [x, z], allow_unused=True)
        self.assertIsNone(gz)


class TestNonScalarBackward(unittest.TestCase):
    def test_optimizer_page_example_runs(self):
        # the SGD/Adam pages: loss = paddle.mean(out) — and Tensor.clear_grad's
        # page uses a non-scalar backward: y = x * x... here linear(inp) itself
        linear = paddle.nn.Linear(10, 10)
        inp = paddle.uniform(shape=[10, 10], min=-0.1, max=0.1)
        out = linear(inp)
        out.backward()     # Paddle: starts from ones
        np.testing.assert_allclose(linear.bias.grad.numpy(), np.full([10], 10.0), rtol=1e-6)
        sgd = paddle.optimizer.SGD(learning_rate=0.1, parameters=linear.parameters())
        sgd.step()
        sgd.clear_grad()

    def test_optimizer_pages_examples(self):
        # SGD, Momentum, Adam, AdamW, Optimizer.step/clear_grad/get_lr and
        # L2Decay pages: loss = paddle.mean(out) or out.backward() on a
        # non-scalar
        for make in (lambda ps: paddle.optimizer.SGD(learning_rate=0.1, parameters=ps,
                                                     weight_decay=0.01),
                     lambda ps: paddle.optimizer.Momentum(learning_rate=0.1, momentum=0.9,
                                                          parameters=ps, weight_decay=0.01),
                     lambda ps: paddle.optimizer.Adam(learning_rate=0.1, parameters=ps,
                                                      beta1=0.9, beta2=0.99),
                     lambda ps: paddle.optimizer.AdamW(learning_rate=0.1, parameters=ps,
                                                       weight_decay=0.01),
                     lambda ps: paddle.optimizer.Momentum(
                         learning_rate=0.1, parameters=ps,
                         weight_decay=paddle.regularizer.L2Decay(0.0001))):
            linear = paddle.nn.Linear(10, 10)
            inp = paddle.to_tensor(np.random.uniform(-0.1, 0.1, [10, 10]).astype('float32'))
            out = linear(inp)
            opt = make(linear.parameters())
            before = linear.weight.numpy().copy()
            out.backward()
            opt.step()
            opt.clear_grad()
            self.assertFalse(np.allclose(before, linear.weight.numpy()))
            self.assertAlmostEqual(opt.get_lr(), 0.1)
            self.assertTrue((linear.weight.grad is None) or
                            not linear.weight.grad.numpy().any())

    def test_min_page_example(self):
        x = paddle.to_tensor([[0.2, 0.3, 0.5, 0.9], [0.1, 0.2, 0.6, 0.7]],
                             dtype='float64', stop_gradient=False)
        result1 = paddle.min(x)
        result1.backward()
        np.testing.assert_allclose(x.grad.numpy(), [[0, 0, 0, 0], [1, 0, 0, 0]])
        x.clear_grad()
        result3 = paddle.min(x, axis=-1)
        result3.backward()
        np.testing.assert_allclose(x.grad.numpy(), [[1, 0, 0, 0], [1, 0, 0, 0]])

    def test_max_page_example(self):
        # paddle.max's page: gradient flows to every maximal element
        x = paddle.to_tensor([[0.2, 0.3, 0.5, 0.9], [0.1, 0.2, 0.6, 0.7]],
                             dtype='float64', stop_gradient=False)
        result2 = paddle.max(x, axis=0)
        result2.backward()
        np.testing.assert_allclose(x.grad.numpy(), [[1, 1, 0, 1], [0, 0, 1, 0]])

    def test_clear_grad_page_example(self):
        input = paddle.uniform([10, 2])
        linear = paddle.nn.Linear(2, 3)
        out = linear(input)
        out.backward()
        linear.weight.clear_grad()
        np.testing.assert_allclose(linear.weight.grad.numpy(), np.zeros([2, 3]))

    def test_no_grad_page_example(self):
        data = np.array([[2, 3], [4, 5]]).astype('float32')
        l0 = paddle.nn.Linear(2, 2)
        l1 = paddle.nn.Linear(2, 2)
        with paddle.no_grad():
            tmp = l1.weight * 2
        x = paddle.to_tensor(data)
        y = l0(x) + tmp
        o = l1(y)
        o.backward()
        self.assertIsNone(tmp.grad)
        self.assertIsNotNone(l0.weight.grad)

    def test_grad_repr_shows_stop_gradient_false(self):
        x = paddle.to_tensor([1.0, 2.0], stop_gradient=False)
        (x * x).backward()
        self.assertIn('stop_gradient=False', repr(x.grad))


class TestIntegerStopGradient(unittest.TestCase):
    def test_accepted_and_no_gradient_flows(self):
        i = paddle.to_tensor([1, 2, 3], stop_gradient=False)
        self.assertFalse(i.stop_gradient)
        f = paddle.to_tensor([1.0, 1.0, 1.0], stop_gradient=False)
        y = (f * paddle.cast(i, 'float32')).sum()
        y.backward()
        np.testing.assert_allclose(f.grad.numpy(), [1, 2, 3])
        self.assertIsNone(i.grad)
        j = paddle.to_tensor([4], dtype='int32')
        j.stop_gradient = False
        self.assertFalse(j.stop_gradient)


class TestHooks(unittest.TestCase):
    def test_register_hook_page_example(self):
        # Tensor.register_hook's page
        def hook_fn(grad):
            grad = grad * 2
            return grad
        x = paddle.to_tensor([0., 1., 2., 3.], stop_gradient=False)
        y = paddle.to_tensor([4., 5., 6., 7.], stop_gradient=False)
        z = paddle.to_tensor([1., 2., 3., 4.])
        h = y.register_hook(hook_fn)
        w = x + y
        w.register_hook(hook_fn)
        o = z.matmul(w)
        o.backward()
        np.testing.assert_allclose(x.grad.numpy(), [2., 4., 6., 8.])
        np.testing.assert_allclose(y.grad.numpy(), [4., 8., 12., 16.])
        self.assertTrue(h.remove())
        x.clear_grad()
        y.clear_grad()
        o2 = z.matmul(x + y)
        o2.backward()
        np.testing.assert_allclose(y.grad.numpy(), [1., 2., 3., 4.])

    def test_hook_exception_reaches_the_caller(self):
        x = paddle.to_tensor([1.0], stop_gradient=False)
        y = x * 2

        def bad(g):
            raise KeyError('from the hook')
        y.register_hook(bad)
        with self.assertRaises(KeyError):
            y.sum().backward()
        with self.assertRaises(RuntimeError):
            paddle.to_tensor([1.0]).register_hook(bad)

    def test_retain_grads(self):
        x = paddle.to_tensor([1.0, 2.0], stop_gradient=False)
        y = x * x
        y.retain_grads()
        (y * 3).sum().backward()
        np.testing.assert_allclose(y.grad.numpy(), [3, 3])
        np.testing.assert_allclose(x.grad.numpy(), [6, 12])


class cus_tanh(paddle.autograd.PyLayer):
    @staticmethod
    def forward(ctx, x, func1, func2=paddle.square):
        ctx.func = func2
        y = func1(x)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, dy):
        y, = ctx.saved_tensor()
        grad = dy * (1 - ctx.func(y))
        return grad


class TwoOut(paddle.autograd.PyLayer):
    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return a * b, a + b

    @staticmethod
    def backward(ctx, d1, d2):
        a, b = ctx.saved_tensor()
        return d1 * b + d2, d1 * a + d2


class TestPyLayer(unittest.TestCase):
    def test_page_example(self):
        data = paddle.randn([2, 3], dtype="float64")
        data.stop_gradient = False
        z = cus_tanh.apply(data, func1=paddle.tanh)
        self.assertFalse(z.stop_gradient)
        z.mean().backward()
        want = (1 - np.tanh(data.numpy()) ** 2) / 6
        np.testing.assert_allclose(data.grad.numpy(), want, rtol=1e-12)

    def test_two_inputs_two_outputs(self):
        a = paddle.to_tensor([1.0, 2.0], stop_gradient=False)
        b = paddle.to_tensor([3.0, 5.0], stop_gradient=False)
        p, s = TwoOut.apply(a, b)
        (p * 2 + s).sum().backward()
        np.testing.assert_allclose(a.grad.numpy(), [7, 11])
        np.testing.assert_allclose(b.grad.numpy(), [3, 5])

    def test_no_graph_when_nothing_needs_grad_and_bad_backward(self):
        z = cus_tanh.apply(paddle.randn([2]), func1=paddle.tanh)
        self.assertTrue(z.stop_gradient)

        class Wrong(paddle.autograd.PyLayer):
            @staticmethod
            def forward(ctx, x):
                return x * 2

            @staticmethod
            def backward(ctx, dy):
                return dy, dy
        x = paddle.to_tensor([1.0], stop_gradient=False)
        with self.assertRaises(ValueError):
            Wrong.apply(x).sum().backward()


class TestDistTolist(unittest.TestCase):
    def test_dist_page_example(self):
        x = paddle.to_tensor([[3, 3], [3, 3]], dtype="float32")
        y = paddle.to_tensor([[3, 3], [3, 1]], dtype="float32")
        self.assertAlmostEqual(paddle.dist(x, y, 0).item(), 1.0)
        self.assertAlmostEqual(paddle.dist(x, y, 2).item(), 2.0)
        self.assertAlmostEqual(x.dist(y, float("inf")).item(), 2.0)
        self.assertAlmostEqual(paddle.dist(x, y, float("-inf")).item(), 0.0)
        self.assertAlmostEqual(paddle.dist(x, y, 3).item(), 2.0, places=5)
        a = paddle.to_tensor([1.0, 2.0], stop_gradient=False)
        paddle.dist(a, paddle.to_tensor([0.0, 0.0])).backward()
        np.testing.assert_allclose(a.grad.numpy(), np.array([1, 2]) / np.sqrt(5), rtol=1e-6)

    def test_tolist(self):
        t = paddle.to_tensor([0, 1, 2, 3, 4])
        self.assertEqual(paddle.tolist(t), [0, 1, 2, 3, 4])
        self.assertEqual(t.tolist(), [0, 1, 2, 3, 4])


class TestCrossEntropySmoothing(unittest.TestCase):
    def test_soft_float_labels_with_smoothing(self):
        x = RNG.standard_normal((4, 5)).astype('float32')
        lab = RNG.random((4, 5)).astype('float32')
        lab /= lab.sum(1, keepdims=True)
        loss = paddle.nn.CrossEntropyLoss(label_smoothing=0.1)(paddle.to_tensor(x),
                                                               paddle.to_tensor(lab))
        sm = 0.9 * lab + 0.1 / 5
        lsm = x - np.log(np.exp(x).sum(1, keepdims=True))
        want = -(sm * lsm).sum(1).mean()
        self.assertAlmostEqual(loss.item(), float(want), places=5)
        if torch is not None:
            t = TF.cross_entropy(torch.tensor(x), torch.tensor(lab), label_smoothing=0.1)
            self.assertAlmostEqual(loss.item(), t.item(), places=5)


class TestNormalizeToRgb(unittest.TestCase):
    def test_tensor_input(self):
        from paddle.vision.transforms import Normalize
        img = paddle.rand([3, 4, 4])
        out = Normalize(mean=[0.5, 0.5, 0.5], std=[0.5, 0.5, 0.5], to_rgb=True)(img)
        np.testing.assert_allclose(out.numpy(), (img.numpy() - 0.5) / 0.5, rtol=1e-6)


if __name__ == '__main__':
    unittest.main()
