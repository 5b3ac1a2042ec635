"""Complex tensors and paddle.fft against numpy.fft: values (1e-5 relative
for complex64/float32, 1e-10 for complex128/float64), every norm mode, n/s
padding and cropping, axes, and gradients against central differences."""
import unittest

import numpy as np

import paddle
import paddle.fft as pfft

NORMS = ('backward', 'ortho', 'forward')
TOL = {'float32': 1e-5, 'float64': 1e-10}
CDT = {'float32': 'complex64', 'float64': 'complex128'}


def rel_err(got, want):
    got = got.numpy() if isinstance(got, paddle.Tensor) else got
    return float(np.abs(got - want).max() / max(1e-30, np.abs(want).max()))


class TestComplexTensors(unittest.TestCase):
    def test_creation_and_dtypes(self):
        x = paddle.to_tensor([[1 + 6j, 2 + 5j, 3 + 4j], [4 + 3j, 5 + 2j, 6 + 1j]])
        self.assertEqual(x.dtype, paddle.complex64)
        self.assertTrue(paddle.is_complex(x))
        self.assertEqual(paddle.to_tensor(1 + 1j).dtype, paddle.complex64)
        self.assertEqual(paddle.to_tensor(1 + 1j).shape, [])
        self.assertEqual(paddle.to_tensor(1 + 1j).item(), 1 + 1j)
        self.assertEqual(paddle.to_tensor(np.array([1j], np.complex128)).dtype,
                         paddle.complex128)
        self.assertEqual(paddle.to_tensor([1j], dtype='complex128').dtype, paddle.complex128)
        self.assertEqual(paddle.zeros([2], dtype='complex64').numpy().tolist(), [0j, 0j])
        a = np.array([[1 + 2j, -3.5j]], np.complex64)
        np.testing.assert_array_equal(paddle.to_tensor(a).numpy(), a)
        np.testing.assert_array_equal(paddle.to_tensor(a).astype('complex128').numpy(), a)
        np.testing.assert_array_equal(paddle.to_tensor(a).astype('float32').numpy(), a.real)
        np.testing.assert_array_equal(paddle.to_tensor([1.0, 2.0]).astype('complex64').numpy(),
                                      [1 + 0j, 2 + 0j])

    def test_random_complex(self):
        # randn/standard_normal/normal with complex dtypes (Paddle's documented examples):
        # CN(0, 1) has real and imaginary parts of variance 1/2
        paddle.seed(5)
        z = paddle.randn([40000], dtype='complex64')
        self.assertEqual(z.dtype, paddle.complex64)
        a = z.numpy()
        self.assertAlmostEqual(float(a.real.var()), 0.5, delta=0.03)
        self.assertAlmostEqual(float(a.imag.var()), 0.5, delta=0.03)
        self.assertEqual(paddle.standard_normal([2, 3], dtype='complex128').dtype,
                         paddle.complex128)
        n = paddle.normal(mean=1 + 2j, std=2.0, shape=[40000]).numpy()
        self.assertAlmostEqual(complex(n.mean()).real, 1, delta=0.06)
        self.assertAlmostEqual(complex(n.mean()).imag, 2, delta=0.06)
        self.assertAlmostEqual(float((np.abs(n - n.mean()) ** 2).mean()), 4, delta=0.2)
        m = paddle.to_tensor([1 + 1j, 2 + 2j], dtype='complex128')
        self.assertEqual(paddle.normal(mean=m).dtype, paddle.complex128)

    def test_printing_like_paddle(self):
        z = paddle.complex(paddle.arange(2, dtype=paddle.float32).unsqueeze(-1),
                           paddle.arange(3, dtype=paddle.float32))
        s = str(z)
        self.assertIn('dtype=complex64', s)
        self.assertIn('[[0j    , 1j    , 2j    ],', s)
        self.assertIn('[(1+0j), (1+1j), (1+2j)]]', s)

    def test_parts(self):
        a = np.array([[1 + 6j, 2 - 5j], [-4 + 3j, 0j]], np.complex128)
        x = paddle.to_tensor(a)
        np.testing.assert_array_equal(paddle.real(x).numpy(), a.real)
        np.testing.assert_array_equal(x.imag().numpy(), a.imag)
        self.assertEqual(x.real().dtype, paddle.float64)
        np.testing.assert_array_equal(paddle.conj(x).numpy(), a.conj())
        np.testing.assert_allclose(paddle.abs(x).numpy(), np.abs(a), rtol=1e-15)
        np.testing.assert_allclose(paddle.angle(x).numpy(), np.angle(a), rtol=1e-15)
        np.testing.assert_array_equal(paddle.angle(paddle.to_tensor([-1.0, 2.0])).numpy(),
                                      np.float32([np.pi, 0]))
        r = paddle.as_real(x)
        self.assertEqual(r.shape, [2, 2, 2])
        np.testing.assert_array_equal(r.numpy()[..., 0], a.real)
        np.testing.assert_array_equal(paddle.as_complex(r).numpy(), a)
        # a transposed view is copied, not misread
        t = paddle.to_tensor(np.arange(12, dtype=np.float32).reshape(2, 3, 2)).transpose([1, 0, 2])
        np.testing.assert_array_equal(paddle.as_complex(t).numpy(),
                                      t.numpy()[..., 0] + 1j * t.numpy()[..., 1])
        with self.assertRaises(ValueError):
            paddle.as_complex(paddle.ones([2, 3]))
        # paddle.complex broadcasts
        z = paddle.complex(paddle.ones([2, 1], dtype='float64'), paddle.arange(3, dtype='float64'))
        self.assertEqual(z.dtype, paddle.complex128)
        np.testing.assert_array_equal(z.numpy(), 1 + 1j * np.arange(3.0)[None].repeat(2, 0))

    def test_arithmetic(self):
        rng = np.random.default_rng(0)
        for cdt, tol in (('complex64', 1e-6), ('complex128', 1e-14)):
            a = (rng.standard_normal((3, 4)) + 1j * rng.standard_normal((3, 4))).astype(cdt)
            b = (rng.standard_normal(4) + 1j * rng.standard_normal(4)).astype(cdt)
            r = rng.standard_normal(4).astype('float32' if cdt == 'complex64' else 'float64')
            x, y, w = paddle.to_tensor(a), paddle.to_tensor(b), paddle.to_tensor(r)
            for got, want in ((x + y, a + b), (x - y, a - b), (x * y, a * b), (x / y, a / b),
                              (x * w, a * r), (w / x, r / a), (x * 2.5, a * 2.5),
                              (1 - x, 1 - a), (x * 1j, a * 1j), (-x, -a),
                              (paddle.matmul(x, x.T), a @ a.T),
                              (paddle.matmul(x, w), a @ r),
                              (x.sum(), a.sum()), (x.sum(axis=0), a.sum(0)),
                              (x.mean(axis=1, keepdim=True), a.mean(1, keepdims=True))):
                self.assertEqual(got.dtype.name, cdt)
                self.assertLess(rel_err(got, want), tol)
        with self.assertRaises(TypeError):
            paddle.maximum(paddle.to_tensor([1j]), paddle.to_tensor([2j]))
        with self.assertRaises(TypeError):
            paddle.exp(paddle.to_tensor([1j]))

    def test_compare_and_layout_ops(self):
        a = np.array([[-1 - 2j, 3.5 + 0j], [0j, -2.25j]], np.complex64)
        x = paddle.to_tensor(a)
        np.testing.assert_array_equal((x == x).numpy(), np.ones((2, 2), bool))
        np.testing.assert_array_equal((x != paddle.to_tensor(a[:1])).numpy(), a != a[:1])
        np.testing.assert_array_equal((x == 0).numpy(), a == 0)
        with self.assertRaises(TypeError):
            x > x
        for cdt in ('complex64', 'complex128'):
            y = x.astype(cdt)
            b = a.astype(cdt)
            np.testing.assert_array_equal(paddle.concat([y, y]).numpy(), np.concatenate([b, b]))
            np.testing.assert_array_equal(y.transpose([1, 0]).contiguous().numpy(), b.T)
            np.testing.assert_array_equal(y[:, 0].numpy(), b[:, 0])
            np.testing.assert_array_equal(paddle.stack([y, y]).numpy(), np.stack([b, b]))
            np.testing.assert_array_equal(y.reshape([4]).numpy(), b.reshape(4))
            i = paddle.to_tensor([1, 0])
            np.testing.assert_array_equal(paddle.gather(y, i).numpy(), b[[1, 0]])
            np.testing.assert_array_equal(paddle.flip(y, [1]).numpy(), b[:, ::-1])
            np.testing.assert_array_equal(paddle.tile(y, [2, 1]).numpy(), np.tile(b, (2, 1)))
            np.testing.assert_array_equal(y[::2, 1:].numpy(), b[::2, 1:])
            z = y.clone()
            z[0, 0] = 5 + 5j
            z[1] = paddle.to_tensor([1j, 2j], dtype=cdt)
            self.assertEqual(z[0, 0].item(), 5 + 5j)
            np.testing.assert_array_equal(z[1].numpy(), [1j, 2j])

    def test_gradients(self):
        rng = np.random.default_rng(1)
        a = rng.standard_normal((2, 3)) + 1j * rng.standard_normal((2, 3))
        b = paddle.to_tensor(rng.standard_normal(3) + 1j * rng.standard_normal(3))
        check_grad(self, lambda t: paddle.abs(t * b / (t + 2.0) - t.conj()).sum(), a)
        check_grad(self, lambda t: paddle.abs(paddle.matmul(t, t.T)).sum(), a)
        check_grad(self, lambda t: (paddle.as_real(t) ** 2 * 1.5).sum() + paddle.angle(t).sum(),
                   a)
        check_grad(self, lambda t: paddle.abs(paddle.complex(t, t * 2.0) * (1 + 2j)).sum(),
                   rng.standard_normal((2, 3)))
        check_grad(self, lambda t: paddle.abs(paddle.as_complex(t) * paddle.as_complex(t)).sum(),
                   rng.standard_normal((2, 3, 2)))
        # the gradient of |z|^2 is 2z (Paddle's and PyTorch's convention)
        z = paddle.to_tensor(a, stop_gradient=False)
        (paddle.real(z) ** 2 + paddle.imag(z) ** 2).sum().backward()
        np.testing.assert_allclose(z.grad.numpy(), 2 * a, rtol=1e-14)


def num_grad(f, x, eps=1e-6):
    g = np.zeros_like(x)
    flat, gf = x.reshape(-1), g.reshape(-1)
    parts = (1, 1j) if np.iscomplexobj(x) else (1,)
    for i in range(flat.size):
        for p in parts:
            old = flat[i]
            flat[i] = old + eps * p
            fp = f(x)
            flat[i] = old - eps * p
            fm = f(x)
            flat[i] = old
            gf[i] += (fp - fm) / (2 * eps) * (1 if p == 1 else 1j)
    return g


def check_grad(tc, fn, x):
    """fn: Tensor -> real 0-D Tensor; x: float64 or complex128 numpy."""
    xt = paddle.to_tensor(x, stop_gradient=False)
    fn(xt).backward()
    want = num_grad(lambda a: float(fn(paddle.to_tensor(a)).numpy()), x.copy())
    tc.assertLess(float(np.abs(xt.grad.numpy() - want).max()), 1e-6 * max(1, np.abs(want).max()))


class TestFFT(unittest.TestCase):
    def test_1d_against_numpy(self):
        rng = np.random.default_rng(2)
        for dt in ('float32', 'float64'):
            tol = TOL[dt]
            for n in (1, 2, 3, 5, 8, 12, 17, 30, 64, 97, 100, 1000, 1024):
                x = rng.standard_normal((3, n)).astype(dt)
                xc = (x + 1j * rng.standard_normal((3, n))).astype(CDT[dt])
                m = n // 2 + 1
                for norm in NORMS:
                    T = paddle.to_tensor
                    for got, want in (
                            (pfft.fft(T(xc), norm=norm), np.fft.fft(xc, norm=norm)),
                            (pfft.fft(T(x), norm=norm), np.fft.fft(x, norm=norm)),
                            (pfft.ifft(T(xc), norm=norm), np.fft.ifft(xc, norm=norm)),
                            (pfft.rfft(T(x), norm=norm), np.fft.rfft(x, norm=norm)),
                            (pfft.irfft(T(xc[:, :m]), n=n, norm=norm),
                             np.fft.irfft(xc[:, :m], n=n, norm=norm)),
                            (pfft.hfft(T(xc[:, :m]), n=n, norm=norm),
                             np.fft.hfft(xc[:, :m], n=n, norm=norm)),
                            (pfft.ihfft(T(x), norm=norm), np.fft.ihfft(x, norm=norm)),
                            (pfft.fft(T(xc), n=n + 3, norm=norm),
                             np.fft.fft(xc, n=n + 3, norm=norm)),
                            (pfft.rfft(T(x), n=max(1, n - 1), norm=norm),
                             np.fft.rfft(x, n=max(1, n - 1), norm=norm)),
                            (pfft.ifft(T(xc), n=2, axis=0, norm=norm),
                             np.fft.ifft(xc, n=2, axis=0, norm=norm))):
                        self.assertEqual(list(got.shape), list(want.shape))
                        self.assertLess(rel_err(got, want), tol, (dt, n, norm))
                        self.assertEqual(got.numpy().dtype.itemsize,
                                         want.astype(got.numpy().dtype).dtype.itemsize)
            self.assertEqual(pfft.fft(paddle.to_tensor(np.ones(4, dt))).dtype.name, CDT[dt])
            self.assertEqual(pfft.irfft(paddle.to_tensor(np.ones(4, CDT[dt]))).dtype.name, dt)

    def test_nd_against_numpy(self):
        rng = np.random.default_rng(3)
        for dt in ('float32', 'float64'):
            tol = TOL[dt]
            x = rng.standard_normal((4, 6, 5)).astype(dt)
            T = paddle.to_tensor
            X = np.fft.rfftn(x).astype(CDT[dt])
            X2 = np.fft.rfft2(x).astype(CDT[dt])
            for norm in NORMS:
                for got, want in (
                        (pfft.fft2(T(x), norm=norm), np.fft.fft2(x, norm=norm)),
                        (pfft.ifft2(T(x), norm=norm), np.fft.ifft2(x, norm=norm)),
                        (pfft.rfft2(T(x), norm=norm), np.fft.rfft2(x, norm=norm)),
                        (pfft.irfft2(T(X2), s=(6, 5), norm=norm),
                         np.fft.irfft2(X2, s=(6, 5), norm=norm)),
                        (pfft.fftn(T(x), norm=norm), np.fft.fftn(x, norm=norm)),
                        (pfft.ifftn(T(x), s=(3, 7), axes=(0, 2), norm=norm),
                         np.fft.ifftn(x, s=(3, 7), axes=(0, 2), norm=norm)),
                        (pfft.rfftn(T(x), norm=norm), np.fft.rfftn(x, norm=norm)),
                        (pfft.rfftn(T(x), s=(5, 4), axes=(0, 1), norm=norm),
                         np.fft.rfftn(x, s=(5, 4), axes=(0, 1), norm=norm)),
                        (pfft.irfftn(T(X), s=x.shape, norm=norm),
                         np.fft.irfftn(X, s=x.shape, norm=norm))):
                    self.assertEqual(list(got.shape), list(want.shape))
                    self.assertLess(rel_err(got, want), tol, (dt, norm))

    def test_hermitian_nd_against_scipy(self):
        try:
            import scipy.fft as sf
        except ImportError:
            self.skipTest('scipy is not installed (numpy has no hfftn/ihfftn)')
        rng = np.random.default_rng(6)
        x = rng.standard_normal((4, 6, 5))
        xc = x + 1j * rng.standard_normal((4, 6, 5))
        T = paddle.to_tensor
        for norm in NORMS:
            for got, want in ((pfft.hfftn(T(xc), s=(4, 6, 8), norm=norm),
                               sf.hfftn(xc, s=(4, 6, 8), norm=norm)),
                              (pfft.ihfftn(T(x), norm=norm), sf.ihfftn(x, norm=norm)),
                              (pfft.hfft2(T(xc), s=(6, 8), norm=norm),
                               sf.hfft2(xc, s=(6, 8), norm=norm)),
                              (pfft.ihfft2(T(x), norm=norm), sf.ihfft2(x, norm=norm))):
                self.assertEqual(list(got.shape), list(want.shape))
                self.assertLess(rel_err(got, want), 1e-10, norm)

    def test_freqs_and_shifts(self):
        np.testing.assert_allclose(pfft.fftfreq(5, 0.5).numpy(), np.fft.fftfreq(5, 0.5),
                                   rtol=1e-6)
        np.testing.assert_allclose(pfft.rfftfreq(8, 0.1, dtype='float64').numpy(),
                                   np.fft.rfftfreq(8, 0.1), rtol=1e-15)
        a = np.arange(30.0).reshape(5, 6)
        np.testing.assert_array_equal(pfft.fftshift(paddle.to_tensor(a)).numpy(),
                                      np.fft.fftshift(a))
        np.testing.assert_array_equal(pfft.ifftshift(paddle.to_tensor(a), axes=1).numpy(),
                                      np.fft.ifftshift(a, axes=1))
        c = a * 1j
        np.testing.assert_array_equal(pfft.fftshift(paddle.to_tensor(c), axes=(0,)).numpy(),
                                      np.fft.fftshift(c, axes=(0,)))

    def test_bad_input(self):
        x = paddle.to_tensor(np.ones((2, 4), np.float32))
        with self.assertRaises(ValueError):
            pfft.fft(x, norm='bogus')
        with self.assertRaises(ValueError):
            pfft.fft(x, n=0)
        with self.assertRaises(ValueError):
            pfft.fft(x, axis=2)
        with self.assertRaises(TypeError):
            pfft.rfft(paddle.to_tensor([1j]))
        with self.assertRaises(ValueError):
            pfft.fft2(paddle.to_tensor([1.0, 2.0]))
        with self.assertRaises(ValueError):
            pfft.fftn(x, s=(2, 2, 2), axes=(0, 1))

    def test_gradients(self):
        rng = np.random.default_rng(4)
        T = paddle.to_tensor
        for n in (6, 7):
            xr = rng.standard_normal((2, n))
            xc = xr + 1j * rng.standard_normal((2, n))
            h = xc[:, :n // 2 + 1].copy()
            w = T(np.arange(n) + 1.0)
            for norm in NORMS:
                check_grad(self, lambda t: (paddle.abs(pfft.fft(t, norm=norm)) * w).sum(), xc)
                check_grad(self, lambda t: paddle.real(pfft.ifft(t, n=n + 1, norm=norm)).sum() +
                           paddle.imag(pfft.ifft(t, n=n + 1, norm=norm)).sum() * 0.3, xc)
                check_grad(self, lambda t: paddle.abs(pfft.rfft(t, norm=norm)).sum(), xr)
                check_grad(self, lambda t: (pfft.irfft(t, n=n, norm=norm) * w).sum(), h)
                check_grad(self, lambda t: (pfft.hfft(t, n=n, norm=norm) ** 2).sum(), h)
                check_grad(self, lambda t: paddle.angle(pfft.ihfft(t, norm=norm) + 1.5).sum(),
                           xr)
            check_grad(self, lambda t: paddle.abs(pfft.fft2(t)).sum(),
                       rng.standard_normal((3, 4, n)))
            check_grad(self, lambda t: paddle.abs(pfft.rfftn(t, s=(3, n + 1))).sum(),
                       rng.standard_normal((3, 4, n)))
            X = np.fft.rfftn(rng.standard_normal((3, 4, n)))
            check_grad(self, lambda t: (pfft.irfftn(t, s=(3, 4, n)) ** 3).sum(), X)
        # float32 parameters train through an FFT
        p = paddle.create_parameter([8], 'float32')
        loss = paddle.abs(pfft.rfft(p)).sum()
        loss.backward()
        self.assertEqual(p.grad.dtype, paddle.float32)
        self.assertEqual(p.grad.shape, [8])


if __name__ == '__main__':
    unittest.main()
