"""paddle.linalg on OpenBLAS's LAPACK (issue 18): values against PyTorch's
torch.linalg (skipped visibly without python3-torch) and the examples on
Paddle's API pages; gradients of every differentiable function against
PyTorch's and against central finite differences in float64."""
import unittest

import numpy as np

import paddle

try:
    import torch
except ImportError:  # pragma: no cover - depends on the host
    torch = None

needs_torch = unittest.skipIf(torch is None, "python3-torch is not installed")
rng = np.random.default_rng(0)
A = rng.standard_normal((3, 4, 4))
B = rng.standard_normal((3, 4, 2))
SPD = A @ np.swapaxes(A, -1, -2) + 4 * np.eye(4)
TALL = rng.standard_normal((3, 5, 3))


def _numgrad(f, a, w, eps=1e-6):
    """d/da sum(f(a) * w) by central differences (float64 numpy)."""
    g = np.zeros_like(a)
    it = np.nditer(a, flags=['multi_index'])
    for _ in it:
        i = it.multi_index
        ap, am = a.copy(), a.copy()
        ap[i] += eps
        am[i] -= eps
        g[i] = (np.sum(f(ap) * w) - np.sum(f(am) * w)) / (2 * eps)
    return g


class TestValuesAndGradients(unittest.TestCase):
    def compare(self, name, pf, tf, *arrs, tol=1e-8):
        ps = [paddle.to_tensor(a, stop_gradient=False) for a in arrs]
        ts = [torch.tensor(a, requires_grad=True) for a in arrs]
        po, to = pf(*ps), tf(*ts)
        if not isinstance(po, (list, tuple)):
            po, to = [po], [to]
        ws = [rng.standard_normal(tuple(t.shape)) for t in to]
        for p, t in zip(po, to):
            np.testing.assert_allclose(p.numpy(), t.detach().numpy(), atol=tol, err_msg=name)
        sum(paddle.sum(p * paddle.to_tensor(w)) for p, w in zip(po, ws)).backward()
        sum(torch.sum(t * torch.tensor(w)) for t, w in zip(to, ws)).backward()
        for p, t in zip(ps, ts):
            self.assertIsNotNone(p.grad, name)
            np.testing.assert_allclose(p.grad.numpy(), t.grad.numpy(), atol=tol * 10,
                                       err_msg=name + ' grad')

    @needs_torch
    def test_against_torch(self):
        tl = torch.linalg
        L = paddle.linalg
        self.compare('inv', L.inv, tl.inv, A)
        self.compare('det', L.det, tl.det, A)
        self.compare('slogdet', lambda a: L.slogdet(a)[1], lambda a: tl.slogdet(a)[1], A)
        self.compare('solve', L.solve, tl.solve, A, B)
        self.compare('solve vec', L.solve, tl.solve, A[0], B[0, :, 0].copy())
        self.compare('cholesky', L.cholesky, tl.cholesky, SPD)
        self.compare('cholesky upper', lambda a: L.cholesky(a, upper=True),
                     lambda a: tl.cholesky(a, upper=True), SPD)
        self.compare('qr', L.qr, tl.qr, TALL)
        self.compare('svd', L.svd, lambda a: tl.svd(a, full_matrices=False), TALL)
        self.compare('svd wide', L.svd, lambda a: tl.svd(a, full_matrices=False),
                     np.swapaxes(TALL, -1, -2).copy())
        self.compare('eigh', L.eigh, tl.eigh, SPD)
        self.compare('eigvalsh', L.eigvalsh, tl.eigvalsh, SPD)
        self.compare('pinv', L.pinv, tl.pinv, TALL)
        self.compare('matrix_power 3', lambda a: L.matrix_power(a, 3),
                     lambda a: tl.matrix_power(a, 3), A)
        self.compare('matrix_power -2', lambda a: L.matrix_power(a, -2),
                     lambda a: tl.matrix_power(a, -2), A, tol=1e-7)
        self.compare('cond', L.cond, tl.cond, A, tol=1e-7)
        for p in ('fro', 'nuc', 2, -2, 1, -1, np.inf, -np.inf):
            self.compare('matrix norm {}'.format(p), lambda a: L.norm(a, p=p, axis=[-2, -1]),
                         lambda a: tl.matrix_norm(a, ord=p), A)
        for p in (None, 1, 3, np.inf):
            self.compare('vector norm {}'.format(p), lambda a: L.norm(a, p=p),
                         lambda a: tl.vector_norm(a.flatten(), ord=2 if p is None else p), A)
        self.compare('vector norm axis', lambda a: L.vector_norm(a, 3, axis=1),
                     lambda a: tl.vector_norm(a, 3, dim=1), A)

    @needs_torch
    def test_statistics_exp_lu_against_torch(self):
        tl = torch.linalg
        L = paddle.linalg
        X = rng.standard_normal((3, 6))
        self.compare('cov', L.cov, torch.cov, X)
        self.compare('cov rowvar=False', lambda x: L.cov(x, rowvar=False),
                     lambda x: torch.cov(x.T), X)
        fw, aw = np.array([1, 2, 1, 3, 1, 2]), rng.random(6)
        self.compare('cov weights',
                     lambda x: L.cov(x, fweights=paddle.to_tensor(fw),
                                     aweights=paddle.to_tensor(aw)),
                     lambda x: torch.cov(x, fweights=torch.tensor(fw),
                                         aweights=torch.tensor(aw)), X)
        self.compare('corrcoef', L.corrcoef, torch.corrcoef, X)
        self.compare('matrix_exp', L.matrix_exp, tl.matrix_exp, A, tol=1e-12)
        self.compare('matrix_exp scaled', L.matrix_exp, tl.matrix_exp, 3 * A, tol=1e-11)
        chol = np.linalg.cholesky(SPD[0])
        self.compare('cholesky_inverse', L.cholesky_inverse, torch.cholesky_inverse, chol)
        self.compare('vecdot', L.vecdot, lambda a, b: (a * b).sum(-1), A, A[::-1].copy())
        lu, piv = L.lu(paddle.to_tensor(A))
        tlu, tpiv = tl.lu_factor(torch.tensor(A))
        np.testing.assert_allclose(lu.numpy(), tlu.numpy(), atol=1e-12)
        np.testing.assert_array_equal(piv.numpy(), tpiv.numpy())
        self.assertEqual(piv.dtype, paddle.int32)
        p, lo, up = L.lu_unpack(lu, piv)
        np.testing.assert_allclose((p @ lo @ up).numpy(), A, atol=1e-12)
        np.testing.assert_allclose(L.lu_solve(paddle.to_tensor(B), lu, piv).numpy(),
                                   np.linalg.solve(A, B), atol=1e-12)
        rect = rng.standard_normal((5, 3))
        lu, piv, info = L.lu(paddle.to_tensor(rect), get_infos=True)
        p, lo, up = L.lu_unpack(lu, piv)
        np.testing.assert_allclose((p @ lo @ up).numpy(), rect, atol=1e-12)
        self.assertEqual(int(info), 0)

    @needs_torch
    def test_householder_and_lowrank(self):
        h, tau = torch.geqrf(torch.tensor(TALL))
        self.compare('householder_product', paddle.linalg.householder_product,
                     torch.linalg.householder_product, h.numpy(), tau.numpy())
        x = paddle.to_tensor(TALL[0], stop_gradient=False)
        u, s, v = paddle.linalg.svd_lowrank(x, q=2)
        self.assertEqual((u.shape, s.shape, v.shape), ([5, 2], [2], [3, 2]))
        np.testing.assert_allclose(s.numpy(), np.linalg.svd(TALL[0], compute_uv=False)[:2])
        s.sum().backward()
        u0, _, vh0 = np.linalg.svd(TALL[0], full_matrices=False)
        np.testing.assert_allclose(x.grad.numpy(), u0[:, :2] @ vh0[:2], atol=1e-12)
        _, s, _ = paddle.linalg.pca_lowrank(paddle.to_tensor(TALL[0]), q=2)
        centred = TALL[0] - TALL[0].mean(0)
        np.testing.assert_allclose(s.numpy(), np.linalg.svd(centred, compute_uv=False)[:2])

    def test_gradients_by_finite_differences(self):
        L = paddle.linalg
        cases = [('inv', L.inv, np.linalg.inv, A[0]),
                 ('det', L.det, np.linalg.det, A[0]),
                 ('solve', lambda a: L.solve(a, paddle.to_tensor(B[0])),
                  lambda a: np.linalg.solve(a, B[0]), A[0]),
                 ('cholesky', L.cholesky,
                  lambda a: np.linalg.cholesky((a + a.T) / 2), SPD[0])]
        for name, pf, nf, a in cases:
            x = paddle.to_tensor(a, stop_gradient=False)
            out = pf(x)
            w = rng.standard_normal(out.shape)
            paddle.sum(out * paddle.to_tensor(w)).backward()
            np.testing.assert_allclose(x.grad.numpy(), _numgrad(nf, a, w), atol=1e-5,
                                       err_msg=name)

    def test_no_graph_without_gradients(self):
        x = paddle.to_tensor(A)
        self.assertTrue(paddle.linalg.inv(x).stop_gradient)
        y = paddle.to_tensor(A, stop_gradient=False)
        self.assertFalse(paddle.linalg.inv(y).stop_gradient)
        with paddle.no_grad():
            self.assertTrue(paddle.linalg.det(y).stop_gradient)

    def test_float32_keeps_dtype(self):
        x = paddle.to_tensor(A.astype('float32'))
        for f in (paddle.linalg.inv, paddle.linalg.det, paddle.linalg.pinv):
            self.assertEqual(f(x).dtype, paddle.float32)
        q, r = paddle.linalg.qr(paddle.to_tensor(TALL.astype('float32')))
        self.assertEqual((q.dtype, q.shape, r.shape), (paddle.float32, [3, 5, 3], [3, 3, 3]))


class TestDocExamples(unittest.TestCase):
    def test_matrix_norm(self):
        x = paddle.arange(24, dtype="float32").reshape([2, 3, 4]) - 12
        np.testing.assert_allclose(
            paddle.linalg.matrix_norm(x=x, p=2, axis=[0, 1]).numpy(),
            [15.75857544, 14.97978878, 14.69693947, 14.97978973], rtol=1e-6)
        np.testing.assert_allclose(
            paddle.linalg.matrix_norm(x=x, p='fro', axis=[0, 1]).numpy(),
            [17.43559647, 16.91153526, 16.73320007, 16.91153526], rtol=1e-6)
        np.testing.assert_allclose(
            paddle.linalg.matrix_norm(x=x, p=float('inf'), axis=[1, 2]).numpy(), [42., 38.])
        self.assertEqual(paddle.linalg.norm(x, p='fro', axis=[0, 1], keepdim=True).shape,
                         [1, 1, 4])
        np.testing.assert_allclose(float(paddle.linalg.norm(x)), np.linalg.norm(x.numpy()),
                                   rtol=1e-6)
        np.testing.assert_allclose(float(paddle.linalg.norm(x, p=0)), 23.0)

    def test_slogdet_shape_and_singular(self):
        out = paddle.linalg.slogdet(paddle.randn([3, 3, 3]))
        self.assertEqual(out.shape, [2, 3])
        sing = paddle.linalg.slogdet(paddle.zeros([2, 2])).numpy()
        self.assertEqual(sing[0], 0.0)
        self.assertEqual(sing[1], -np.inf)
        self.assertEqual(float(paddle.linalg.det(paddle.zeros([2, 2]))), 0.0)

    def test_small_examples(self):
        x = paddle.to_tensor([[2., 0.], [0., 4.]])
        np.testing.assert_allclose(paddle.linalg.inv(x).numpy(), [[0.5, 0.], [0., 0.25]])
        x = paddle.to_tensor([[3., 1.], [1., 2.]])
        y = paddle.to_tensor([9., 8.])
        np.testing.assert_allclose(paddle.linalg.solve(x, y).numpy(), [2., 3.], rtol=1e-6)
        x = paddle.to_tensor([[1, 2, 3], [1, 4, 9], [1, 8, 27]], dtype='float64')
        np.testing.assert_allclose(paddle.linalg.matrix_power(x, 2).numpy(),
                                   [[6., 34., 102.], [14., 90., 282.], [36., 250., 804.]])
        self.assertEqual(int(paddle.linalg.matrix_rank(paddle.ones([3, 4]))), 1)
        self.assertEqual(int(paddle.linalg.matrix_rank(paddle.eye(10))), 10)
        w, v = paddle.linalg.eigh(paddle.to_tensor([[1., -2.], [-2., 1.]]))
        np.testing.assert_allclose(w.numpy(), [-1., 3.], atol=1e-6)
        q, r = paddle.linalg.qr(paddle.to_tensor([[1., 2.], [3., 4.], [5., 6.]]))
        np.testing.assert_allclose((q @ r).numpy(), [[1., 2.], [3., 4.], [5., 6.]], atol=1e-5)
        self.assertEqual(paddle.linalg.qr(paddle.ones([3, 2]), mode='complete')[0].shape, [3, 3])
        u, s, vh = paddle.linalg.svd(paddle.to_tensor([[1.0, 2.0], [1.0, 3.0], [4.0, 6.0]]))
        np.testing.assert_allclose(s.numpy(), [8.14753743, 0.78589886], rtol=1e-5)
        np.testing.assert_allclose((u @ paddle.diag(s) @ vh).numpy(),
                                   [[1.0, 2.0], [1.0, 3.0], [4.0, 6.0]], atol=1e-5)
        self.assertEqual(paddle.einsum('ij->i', x).shape, [3])

    def test_errors(self):
        with self.assertRaisesRegex(ValueError, 'singular'):
            paddle.linalg.inv(paddle.zeros([3, 3]))
        with self.assertRaisesRegex(ValueError, 'positive definite'):
            paddle.linalg.cholesky(paddle.to_tensor([[1., 2.], [2., 1.]]))
        with self.assertRaisesRegex(ValueError, 'square'):
            paddle.linalg.det(paddle.ones([2, 3]))
        with self.assertRaises(TypeError):
            paddle.linalg.inv(paddle.ones([2, 2], dtype='int64'))
        with self.assertRaises(ValueError):
            paddle.linalg.solve(paddle.eye(3), paddle.ones([2, 1]))
        with self.assertRaises(ValueError):
            paddle.linalg.norm(paddle.ones([2, 2]), p='nuc')
        with self.assertRaises(TypeError):
            paddle.linalg.matrix_power(paddle.eye(2), 1.5)


class TestNamesAndMethods(unittest.TestCase):
    def test_paddle_inverse_and_tensor_methods(self):
        a = np.array([[4., 1.], [1., 3.]])
        x = paddle.to_tensor(a)
        np.testing.assert_allclose(paddle.inverse(x).numpy(), np.linalg.inv(a), rtol=1e-12)
        np.testing.assert_allclose(x.inverse().numpy(), np.linalg.inv(a), rtol=1e-12)
        np.testing.assert_allclose(x.cholesky().numpy(), np.linalg.cholesky(a), rtol=1e-12)
        np.testing.assert_allclose(x.matrix_power(3).numpy(), a @ a @ a, rtol=1e-12)
        b = paddle.to_tensor(np.array([[1.], [2.]]))
        np.testing.assert_allclose(x.solve(b).numpy(), np.linalg.solve(a, [[1.], [2.]]), rtol=1e-12)
        q, r = x.qr()
        np.testing.assert_allclose((q @ r).numpy(), a, rtol=1e-12)


if __name__ == '__main__':
    unittest.main()
