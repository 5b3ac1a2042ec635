"""paddle Tensor and tensor-level functions on Eddy's framework (pyc)."""
import math
import unittest

import numpy as np

import paddle


def T(data, **kw):
    return paddle.to_tensor(data, **kw)


class TestCreation(unittest.TestCase):
    def test_to_tensor_infers_dtypes_like_paddle(self):
        self.assertEqual(T(1).dtype, paddle.int64)
        self.assertEqual(T(1.5).dtype, paddle.float32)
        self.assertEqual(T([1.0, 2.0]).dtype, paddle.float32)
        self.assertEqual(T([1, 2]).dtype, paddle.int64)
        self.assertEqual(T([True, False]).dtype, paddle.bool)
        self.assertEqual(T(np.zeros(3, np.float64)).dtype, paddle.float64)
        self.assertEqual(T(np.zeros(3, np.int32)).dtype, paddle.int32)
        self.assertEqual(T(np.zeros(3, np.uint8)).dtype, paddle.uint8)
        self.assertEqual(T([1, 2], dtype='float64').dtype, paddle.float64)
        self.assertEqual(T([1, 2], dtype=paddle.float16).dtype, paddle.float16)

    def test_to_tensor_scalar_is_0d_and_stop_gradient_default(self):
        t = T(3.0)
        self.assertEqual(t.shape, [])
        self.assertTrue(t.stop_gradient)
        self.assertFalse(T(3.0, stop_gradient=False).stop_gradient)

    def test_to_tensor_copies_numpy_and_tensor(self):
        a = np.arange(6, dtype=np.float32).reshape(2, 3)
        t = T(a)
        a[0, 0] = 100
        self.assertEqual(t.numpy()[0, 0], 0)
        u = T(t)
        u[0, 0] = 7
        self.assertEqual(t.numpy()[0, 0], 0)
        # non-contiguous numpy input
        self.assertTrue(np.array_equal(T(a.T).numpy(), a.T))

    def test_to_tensor_rejects_ragged_lists_and_strings(self):
        with self.assertRaises(ValueError):
            T([[1, 2], [3]])
        with self.assertRaises(TypeError):
            T('abc')

    def test_creation_functions(self):
        self.assertEqual(paddle.zeros([2, 3]).numpy().tolist(), [[0, 0, 0], [0, 0, 0]])
        self.assertEqual(paddle.ones([2], dtype='int64').numpy().tolist(), [1, 1])
        self.assertEqual(paddle.full([2], 7.5).numpy().tolist(), [7.5, 7.5])
        x = T([[1.0, 2.0]])
        self.assertEqual(paddle.zeros_like(x).shape, [1, 2])
        self.assertEqual(paddle.ones_like(x, dtype='int32').dtype, paddle.int32)
        self.assertEqual(paddle.full_like(x, 3).numpy().tolist(), [[3, 3]])
        self.assertEqual(paddle.arange(5).numpy().tolist(), [0, 1, 2, 3, 4])
        self.assertEqual(paddle.arange(5).dtype, paddle.int64)
        self.assertEqual(paddle.arange(0, 1, 0.25).dtype, paddle.float32)
        np.testing.assert_allclose(paddle.linspace(0, 1, 5).numpy(), [0, .25, .5, .75, 1])
        np.testing.assert_array_equal(paddle.eye(3).numpy(), np.eye(3))
        self.assertEqual(paddle.eye(2, 3).shape, [2, 3])

    def test_random_functions_and_seed(self):
        paddle.seed(42)
        a = paddle.rand([100])
        paddle.seed(42)
        b = paddle.rand([100])
        np.testing.assert_array_equal(a.numpy(), b.numpy())
        self.assertTrue(((a.numpy() >= 0) & (a.numpy() < 1)).all())
        n = paddle.randn([2000])
        self.assertLess(abs(float(n.mean())), 0.15)
        r = paddle.randint(0, 5, [200])
        self.assertEqual(r.dtype, paddle.int64)
        self.assertTrue(set(r.numpy().tolist()) <= set(range(5)))
        u = paddle.uniform([500], min=2.0, max=3.0)
        self.assertTrue(((u.numpy() >= 2) & (u.numpy() < 3)).all())
        nm = paddle.normal(10.0, 0.1, [500])
        self.assertLess(abs(float(nm.mean()) - 10.0), 0.05)
        self.assertEqual(sorted(paddle.randperm(6).numpy().tolist()), list(range(6)))

    def test_bad_shape_is_a_clear_error(self):
        with self.assertRaises(ValueError) as cm:
            paddle.zeros([2, -3])
        self.assertIn('-3', str(cm.exception))


class TestArithmetic(unittest.TestCase):
    def test_operators_with_tensors_and_scalars(self):
        x = T([1.0, 2.0, 3.0])
        y = T([4.0, 5.0, 6.0])
        np.testing.assert_allclose((x + y).numpy(), [5, 7, 9])
        np.testing.assert_allclose((x - 1).numpy(), [0, 1, 2])
        np.testing.assert_allclose((1 - x).numpy(), [0, -1, -2])
        np.testing.assert_allclose((x * 2).numpy(), [2, 4, 6])
        np.testing.assert_allclose((6 / x).numpy(), [6, 3, 2])
        np.testing.assert_allclose((x ** 2).numpy(), [1, 4, 9])
        np.testing.assert_allclose((2 ** x).numpy(), [2, 4, 8])
        np.testing.assert_allclose((-x).numpy(), [-1, -2, -3])
        np.testing.assert_allclose(abs(-x).numpy(), [1, 2, 3])
        np.testing.assert_allclose((y // 4).numpy(), [1, 1, 1])
        np.testing.assert_allclose((y % 4).numpy(), [0, 1, 2])
        self.assertEqual((x + 1).dtype, paddle.float32)

    def test_int_tensor_with_float_scalar_promotes_to_float(self):
        i = T([1, 2])
        self.assertEqual((i + 1).dtype, paddle.int64)
        self.assertEqual((i * 0.5).dtype, paddle.float32)
        np.testing.assert_allclose((i / 2).numpy(), [0.5, 1.0])

    def test_matmul_and_broadcasting(self):
        a = np.random.RandomState(0).randn(2, 3).astype(np.float32)
        b = np.random.RandomState(1).randn(3, 4).astype(np.float32)
        np.testing.assert_allclose((T(a) @ T(b)).numpy(), a @ b, rtol=1e-5)
        np.testing.assert_allclose(paddle.matmul(T(a), T(a), transpose_y=True).numpy(),
                                   a @ a.T, rtol=1e-5)
        np.testing.assert_allclose((T(a) + T([1.0, 2.0, 3.0])).numpy(), a + [1, 2, 3])

    def test_shape_mismatch_names_both_shapes(self):
        with self.assertRaises(ValueError) as cm:
            paddle.add(paddle.ones([2, 3]), paddle.ones([4]))
        self.assertIn('[2, 3]', str(cm.exception))
        self.assertIn('[4]', str(cm.exception))
        with self.assertRaises(ValueError) as cm:
            paddle.matmul(paddle.ones([2, 3]), paddle.ones([4, 5]))
        self.assertIn('[2, 3]', str(cm.exception))
        self.assertIn('[4, 5]', str(cm.exception))

    def test_unary_math(self):
        x = T([0.25, 1.0, 4.0])
        np.testing.assert_allclose(paddle.sqrt(x).numpy(), [0.5, 1, 2])
        np.testing.assert_allclose(paddle.exp(T([0.0])).numpy(), [1])
        np.testing.assert_allclose(paddle.log(x).numpy(), np.log([0.25, 1, 4]), rtol=1e-6)
        np.testing.assert_allclose(paddle.abs(T([-1.0, 2.0])).numpy(), [1, 2])
        np.testing.assert_allclose(paddle.tanh(T([0.0])).numpy(), [0])
        np.testing.assert_allclose(paddle.pow(x, 2).numpy(), [0.0625, 1, 16])
        np.testing.assert_allclose(paddle.clip(T([-2.0, 0.5, 3.0]), -1, 1).numpy(), [-1, .5, 1])
        np.testing.assert_allclose(paddle.maximum(x, T([1.0, 1.0, 1.0])).numpy(), [1, 1, 4])
        np.testing.assert_allclose(paddle.minimum(x, T([1.0, 1.0, 1.0])).numpy(), [.25, 1, 1])
        np.testing.assert_allclose(paddle.subtract(x, x).numpy(), [0, 0, 0])
        np.testing.assert_allclose(paddle.multiply(x, x).numpy(), [0.0625, 1, 16])
        np.testing.assert_allclose(paddle.divide(x, x).numpy(), [1, 1, 1])

    def test_exp_on_int_is_a_type_error(self):
        with self.assertRaises(TypeError):
            paddle.exp(T([1, 2]))

    def test_comparisons_and_logic(self):
        x = T([1.0, 2.0, 3.0])
        self.assertEqual((x > 1.5).numpy().tolist(), [False, True, True])
        self.assertEqual((x == 2).numpy().tolist(), [False, True, False])
        self.assertEqual((1.5 < x).numpy().tolist(), [False, True, True])
        self.assertEqual(paddle.equal(x, x).numpy().tolist(), [True] * 3)
        self.assertEqual(paddle.not_equal(x, x).numpy().tolist(), [False] * 3)
        a, b = T([True, False]), T([True, True])
        self.assertEqual(paddle.logical_and(a, b).numpy().tolist(), [True, False])
        self.assertEqual((a | b).numpy().tolist(), [True, True])
        self.assertEqual((~a).numpy().tolist(), [False, True])
        self.assertTrue(bool(paddle.allclose(x, x + 1e-9)))
        self.assertFalse(bool(paddle.allclose(x, x + 1)))
        self.assertFalse(x == None)  # noqa: E711

    def test_python_conversions(self):
        loss = T(0.12345)
        self.assertEqual('%.2f' % loss, '0.12')
        self.assertEqual('{:.3f}'.format(loss), '0.123')
        self.assertEqual(f'{loss:.1f}', '0.1')
        self.assertAlmostEqual(float(loss), 0.12345, places=6)
        self.assertEqual(int(T(3.7)), 3)
        self.assertTrue(T(0.7) > 0.5)
        if T(0.7) > 0.5:
            pass
        self.assertFalse(bool(T(0.0)))
        self.assertEqual(T([5]).item(), 5)
        self.assertIsInstance(T(5).item(), int)
        self.assertIsInstance(T(True).item(), bool)
        self.assertEqual([1, 2, 3][T(1)], 2)
        with self.assertRaises(ValueError):
            bool(T([1.0, 2.0]))
        with self.assertRaises(ValueError):
            T([1.0, 2.0]).item()


class TestReductions(unittest.TestCase):
    def test_full_reductions_are_0d(self):
        x = T([[1.0, 2.0], [3.0, 4.0]])
        for fn in (paddle.sum, paddle.mean, paddle.max, paddle.min):
            self.assertEqual(fn(x).shape, [])
        self.assertEqual(float(x.sum()), 10)
        self.assertEqual(float(x.mean()), 2.5)
        self.assertEqual(float(paddle.max(x)), 4)
        self.assertEqual(float(paddle.min(x)), 1)

    def test_axis_and_keepdim(self):
        x = T([[1.0, 2.0], [3.0, 4.0]])
        self.assertEqual(paddle.sum(x, axis=0).numpy().tolist(), [4, 6])
        self.assertEqual(paddle.sum(x, axis=1, keepdim=True).shape, [2, 1])
        self.assertEqual(x.mean(axis=[0, 1]).shape, [])
        self.assertEqual(paddle.max(x, axis=-1).numpy().tolist(), [2, 4])
        self.assertEqual(paddle.argmax(x, axis=1).numpy().tolist(), [1, 1])
        self.assertEqual(paddle.argmax(x).shape, [])
        self.assertEqual(int(x.argmax()), 3)
        self.assertEqual(paddle.sum(T([1, 2])).dtype, paddle.int64)

    def test_axis_out_of_range_is_an_error(self):
        with self.assertRaises(IndexError) as cm:
            paddle.sum(paddle.ones([2, 3]), axis=3)
        self.assertIn('3', str(cm.exception))

    def test_sort_topk(self):
        x = T([3.0, 1.0, 2.0])
        self.assertEqual(paddle.argsort(x).numpy().tolist(), [1, 2, 0])
        self.assertEqual(paddle.argsort(x, descending=True).numpy().tolist(), [0, 2, 1])
        v, i = paddle.topk(x, 2)
        self.assertEqual(v.numpy().tolist(), [3, 2])
        self.assertEqual(i.numpy().tolist(), [0, 2])
        self.assertEqual(paddle.sort(x).numpy().tolist(), [1, 2, 3])
        np.testing.assert_allclose(paddle.cumsum(T([1.0, 2.0, 3.0])).numpy(), [1, 3, 6])


class TestShapeOps(unittest.TestCase):
    def test_reshape_flatten_squeeze_unsqueeze_transpose(self):
        x = paddle.arange(6).astype('float32')
        self.assertEqual(paddle.reshape(x, [2, 3]).shape, [2, 3])
        self.assertEqual(x.reshape([3, -1]).shape, [3, 2])
        self.assertEqual(x.reshape((2, 3)).shape, [2, 3])
        self.assertEqual(x.reshape(shape=[6, 1]).shape, [6, 1])
        self.assertEqual(x.reshape(3, 2).shape, [3, 2])
        self.assertEqual(x.astype(dtype='int32').dtype, paddle.int32)
        y = x.reshape([1, 2, 3])
        self.assertEqual(paddle.flatten(y).shape, [6])
        self.assertEqual(y.flatten(start_axis=1).shape, [1, 6])
        self.assertEqual(paddle.squeeze(y).shape, [2, 3])
        self.assertEqual(y.squeeze(0).shape, [2, 3])
        self.assertEqual(paddle.unsqueeze(x, 0).shape, [1, 6])
        self.assertEqual(x.unsqueeze([0, 2]).shape, [1, 6, 1])
        z = paddle.transpose(y, [2, 0, 1])
        self.assertEqual(z.shape, [3, 1, 2])
        np.testing.assert_array_equal(z.numpy(), y.numpy().transpose(2, 0, 1))
        self.assertEqual(y.reshape([2, 3]).T.shape, [3, 2])

    def test_reshape_error_names_shapes(self):
        with self.assertRaises(ValueError) as cm:
            paddle.reshape(paddle.ones([2, 3]), [4])
        self.assertIn('[2, 3]', str(cm.exception))

    def test_concat_stack_split_tile_expand(self):
        a, b = T([[1.0, 2.0]]), T([[3.0, 4.0]])
        self.assertEqual(paddle.concat([a, b]).numpy().tolist(), [[1, 2], [3, 4]])
        self.assertEqual(paddle.concat([a, b], axis=1).shape, [1, 4])
        self.assertEqual(paddle.stack([a, b]).shape, [2, 1, 2])
        self.assertEqual(paddle.stack([a, b], axis=1).shape, [1, 2, 2])
        parts = paddle.split(paddle.arange(6), 3)
        self.assertEqual([p.numpy().tolist() for p in parts], [[0, 1], [2, 3], [4, 5]])
        parts = paddle.split(paddle.arange(6), [1, -1])
        self.assertEqual([p.shape for p in parts], [[1], [5]])
        self.assertEqual(paddle.tile(a, [2, 1]).shape, [2, 2])
        self.assertEqual(paddle.expand(a, [3, 2]).numpy().tolist(), [[1, 2]] * 3)
        with self.assertRaises(ValueError):
            paddle.concat([a, T([1.0])])

    def test_gather_where_cast(self):
        x = T([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
        self.assertEqual(paddle.gather(x, T([2, 0])).numpy().tolist(), [[5, 6], [1, 2]])
        self.assertEqual(paddle.gather(x, T([1]), axis=1).numpy().tolist(), [[2], [4], [6]])
        w = paddle.where(x > 3, x, paddle.zeros_like(x))
        self.assertEqual(w.numpy().tolist(), [[0, 0], [0, 4], [5, 6]])
        self.assertEqual(paddle.where(x > 3, x, 0.0).numpy().tolist(), [[0, 0], [0, 4], [5, 6]])
        c = paddle.cast(x, 'int32')
        self.assertEqual(c.dtype, paddle.int32)
        self.assertEqual(x.astype('int64').dtype, paddle.int64)
        self.assertEqual(x.astype(paddle.float64).dtype, paddle.float64)
        with self.assertRaises(IndexError):
            paddle.gather(x, T([5]))


class TestIndexing(unittest.TestCase):
    def setUp(self):
        self.a = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
        self.x = T(self.a)

    def check(self, idx):
        np.testing.assert_array_equal(self.x[idx].numpy(), self.a[idx], err_msg=repr(idx))

    def test_read_basic(self):
        for idx in [0, -1, (1, 2), (1, 2, 3), slice(None), (slice(None), 1),
                    (Ellipsis, 2), (None, 0), (slice(0, 1), None, slice(1, 3)),
                    (slice(None, None, -1),), (0, slice(None, None, 2)), (Ellipsis,),
                    (1, Ellipsis, slice(1, None))]:
            self.check(idx)

    def test_read_basic_pairs_match_numpy(self):
        a = np.arange(64 * 32, dtype=np.float32).reshape(64, 32)
        x = T(a)
        keys = [slice(None), slice(1, 5), slice(-1, -70, -3), slice(5, 2), slice(None, None, -1),
                slice(-3, None), slice(None, -100), slice(100, None, -2), 0, -1, 31, None,
                Ellipsis]
        for i in keys:
            for j in keys:
                try:
                    want = a[i, j]
                except IndexError:
                    with self.assertRaises(IndexError, msg=repr((i, j))):
                        x[i, j]
                    continue
                got = x[i, j].numpy()
                self.assertEqual(got.shape, want.shape, msg=repr((i, j)))
                np.testing.assert_array_equal(got, want, err_msg=repr((i, j)))

    def test_read_advanced(self):
        np.testing.assert_array_equal(self.x[T([1, 0])].numpy(), self.a[[1, 0]])
        np.testing.assert_array_equal(self.x[:, [0, 2]].numpy(), self.a[:, [0, 2]])
        np.testing.assert_array_equal(self.x[self.x > 10].numpy(), self.a[self.a > 10])
        m = np.array([True, False, True])
        np.testing.assert_array_equal(self.x[:, T(m)].numpy(), self.a[:, m])
        np.testing.assert_array_equal(self.x[0, T([2, 1])].numpy(), self.a[0, [2, 1]])

    def test_read_out_of_range(self):
        with self.assertRaises(IndexError):
            self.x[5]
        with self.assertRaises(IndexError):
            self.x[0, 0, 0, 0]

    def test_write(self):
        a = self.a.copy()
        x = T(a)
        x[0] = 1.0
        a[0] = 1.0
        x[1, :, 2] = T([7.0, 8.0, 9.0])
        a[1, :, 2] = [7, 8, 9]
        x[..., 0] = 5
        a[..., 0] = 5
        x[x > 20] = -1.0
        a[a > 20] = -1
        x[:, [0, 2]] = 0.5
        a[:, [0, 2]] = 0.5
        x[1, 1] = np.array([1, 2, 3, 4], dtype=np.float32)
        a[1, 1] = [1, 2, 3, 4]
        np.testing.assert_array_equal(x.numpy(), a)

    def test_write_views_share_storage(self):
        x = paddle.zeros([3, 3])
        row = x[1]
        x[1, 1] = 4.0
        self.assertEqual(float(row[1]), 4.0)

    def test_iter_and_len(self):
        self.assertEqual(len(self.x), 2)
        self.assertEqual([r.shape for r in self.x], [[3, 4], [3, 4]])


class TestTensorMembers(unittest.TestCase):
    def test_members(self):
        x = T([[1.0, 2.0], [3.0, 4.0]])
        self.assertEqual(x.ndim, 2)
        self.assertEqual(x.dim(), 2)
        self.assertEqual(x.size, 4)
        self.assertEqual(x.numel(), 4)
        self.assertEqual(str(x.place), 'Place(cpu)')
        self.assertEqual(x.tolist(), [[1.0, 2.0], [3.0, 4.0]])
        self.assertIsInstance(x.numpy(), np.ndarray)
        self.assertEqual(x.matmul(x).numpy().tolist(), [[7, 10], [15, 22]])
        self.assertEqual(x.sum().item(), 10)
        self.assertEqual(x.transpose([1, 0]).numpy().tolist(), [[1, 3], [2, 4]])
        c = x.clone()
        c[0, 0] = 9
        self.assertEqual(x.numpy()[0, 0], 1)
        d = x.detach()
        self.assertTrue(d.stop_gradient)
        x.set_value(np.zeros((2, 2), np.float32))
        self.assertEqual(x.numpy().sum(), 0)
        with self.assertRaises(ValueError):
            x.set_value(np.zeros((3,), np.float32))
        self.assertIsInstance(x, paddle.Tensor)
        self.assertTrue(paddle.is_tensor(x))
        self.assertEqual(np.asarray(x).shape, (2, 2))

    def test_user_attributes_and_weakrefs(self):
        import weakref
        t = T([1.0])
        t.tag = 'x'
        self.assertEqual(t.tag, 'x')
        self.assertEqual(t.__dict__, {'tag': 'x'})
        r = weakref.ref(t)
        self.assertIs(r(), t)
        del t
        self.assertIsNone(r())
        with self.assertRaises(AttributeError):
            T([1.0]).no_such_attribute

    def test_dtype_objects(self):
        self.assertEqual(str(paddle.float32), 'paddle.float32')
        self.assertEqual(T([1.0]).dtype, 'float32')
        self.assertEqual(paddle.get_default_dtype(), 'float32')
        paddle.set_default_dtype('float64')
        try:
            self.assertEqual(T([1.0]).dtype, paddle.float64)
            self.assertEqual(paddle.zeros([1]).dtype, paddle.float64)
        finally:
            paddle.set_default_dtype('float32')
        with self.assertRaises(TypeError):
            paddle.set_default_dtype('int32')

    def test_devices(self):
        self.assertEqual(paddle.get_device(), 'cpu')
        self.assertEqual(str(paddle.set_device('cpu')), 'Place(cpu)')
        self.assertEqual(paddle.device.get_device(), 'cpu')
        paddle.device.set_device('cpu')
        if paddle.device.cuda.device_count() == 0:   # test_device.py covers a GPU
            self.assertFalse(paddle.is_compiled_with_cuda())
            with self.assertRaises(ValueError):
                paddle.set_device('gpu')
        self.assertEqual(str(paddle.CPUPlace()), 'Place(cpu)')
        paddle.CUDAPlace(0)
        self.assertEqual(T([1.0], place=paddle.CPUPlace()).shape, [1])
        self.assertTrue(isinstance(paddle.__version__, str))


class TestPrinting(unittest.TestCase):
    def test_paddle_format(self):
        x = T([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
        self.assertEqual(str(x),
                         'Tensor(shape=[2, 3], dtype=float32, place=Place(cpu), '
                         'stop_gradient=True,\n'
                         '       [[1., 2., 3.],\n'
                         '        [4., 5., 6.]])')
        self.assertEqual(repr(T(1)),
                         'Tensor(shape=[], dtype=int64, place=Place(cpu), stop_gradient=True,\n'
                         '       1)')
        self.assertIn('[0.10000000, 0.20000000]', str(T([0.1, 0.2])))
        self.assertIn('[True , False]', str(T([True, False])))
        s = str(paddle.arange(2000))
        self.assertIn('...', s)

    def test_parameter_printing(self):
        p = paddle.create_parameter([2], 'float32')
        self.assertTrue(str(p).startswith('Parameter containing:\nTensor(shape=[2], '
                                          'dtype=float32, place=Place(cpu), '
                                          'stop_gradient=False,'))


if __name__ == '__main__':
    unittest.main()
