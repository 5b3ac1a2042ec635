"""paddle's device API (paddle.set_device, paddle.device, paddle.device.cuda),
Tensor.cuda()/.cpu()/.to()/.place and to_tensor(place=) over fw/device.h.

NoGpuTest runs where no GPU is usable (this is what CI checks): counts 0,
is_compiled_with_cuda() False, GPU requests raise ValueError naming the
framework's reason, memory queries raise as Paddle's CPU-only build does,
run_check prints the CPU lines. GpuTest runs only where a GPU is usable
(tests/gpu/ scripts go much further there)."""
import contextlib
import io
import unittest

import numpy as np

import paddle
from paddle import _C

HAVE_GPU = paddle.device.cuda.device_count() > 0
REASON = _C.device_unavailable_reason(1)


@unittest.skipIf(HAVE_GPU, "a GPU is usable here: GpuTest covers it")
class NoGpuTest(unittest.TestCase):
    def tearDown(self):
        paddle.set_device('cpu')

    def test_counts_and_predicates(self):
        self.assertEqual(paddle.device.cuda.device_count(), 0)
        self.assertFalse(paddle.is_compiled_with_cuda())
        self.assertFalse(paddle.device.is_compiled_with_cuda())
        self.assertEqual(paddle.device.get_all_device_type(), ['cpu'])
        self.assertEqual(paddle.device.get_available_device(), ['cpu'])
        self.assertIsInstance(_C.device_compiled(1), bool)
        self.assertTrue(_C.device_compiled(0))
        self.assertEqual(_C.device_count(0), 1)
        self.assertEqual(_C.device_unavailable_reason(0), '')
        self.assertTrue(REASON, "no GPU but no reason given")

    def test_set_device_gpu_raises_with_the_reason(self):
        for name in ('gpu', 'gpu:0', 'gpu:1', 'cuda'):
            with self.assertRaises(ValueError) as cm:
                paddle.set_device(name)
            self.assertIn(REASON, str(cm.exception))
            self.assertIn(name, str(cm.exception))
        with self.assertRaises(ValueError):
            paddle.device.set_device(paddle.CUDAPlace(0))
        for bad in ('xpu:x', 'gpu:-1', 'tpu', 3, None):
            with self.assertRaises(ValueError):
                paddle.set_device(bad)
        self.assertEqual(paddle.get_device(), 'cpu')
        self.assertEqual(paddle.device.get_device(), 'cpu')

    def test_set_device_cpu(self):
        self.assertEqual(repr(paddle.set_device('cpu')), 'Place(cpu)')
        self.assertEqual(repr(paddle.set_device('CPU')), 'Place(cpu)')
        self.assertEqual(repr(paddle.device.set_device(paddle.CPUPlace())), 'Place(cpu)')
        self.assertEqual(paddle.get_device(), 'cpu')
        self.assertEqual(_C.device_default(), 0)

    def test_places(self):
        self.assertEqual(repr(paddle.CUDAPlace(0)), 'Place(gpu:0)')
        self.assertEqual(str(paddle.CUDAPlace(2)), 'Place(gpu:2)')
        self.assertEqual(repr(paddle.CPUPlace()), 'Place(cpu)')
        self.assertEqual(paddle.CUDAPlace(1).get_device_id(), 1)
        self.assertTrue(paddle.CUDAPlace(0).is_gpu_place())
        self.assertFalse(paddle.CUDAPlace(0).is_cpu_place())
        self.assertEqual(paddle.CUDAPlace(0), paddle.CUDAPlace(0))
        self.assertNotEqual(paddle.CUDAPlace(0), paddle.CUDAPlace(1))
        self.assertNotEqual(paddle.CUDAPlace(0), paddle.CPUPlace())
        with self.assertRaises(ValueError):
            paddle.CUDAPlace(-1)
        x = paddle.ones([2])
        self.assertEqual(x.place, paddle.CPUPlace())
        self.assertTrue(x.place.is_cpu_place())
        self.assertIn('place=Place(cpu)', repr(x))

    def test_tensor_to_gpu_raises_clearly(self):
        x = paddle.ones([2, 3])
        calls = [lambda: x.cuda(), lambda: x.cuda(0), lambda: x.to('gpu'),
                 lambda: x.to(paddle.CUDAPlace(0)), lambda: x.to('gpu:0', 'float16'),
                 lambda: paddle.to_tensor([1.0], place=paddle.CUDAPlace(0)),
                 lambda: paddle.to_tensor(np.zeros(3), place='gpu')]
        for f in calls:
            with self.assertRaises(ValueError) as cm:
                f()
            self.assertIn(REASON, str(cm.exception))

    def test_to_cpu_and_dtype(self):
        a = np.arange(6, dtype=np.float32).reshape(2, 3)
        x = paddle.to_tensor(a)
        for y in (x.cpu(), x.to('cpu'), x.to(paddle.CPUPlace()), x.to(device='cpu')):
            self.assertTrue(y.place.is_cpu_place())
            np.testing.assert_array_equal(y.numpy(), a)
        self.assertEqual(x.to('float64').dtype, paddle.float64)
        self.assertEqual(x.to(paddle.float16).dtype, paddle.float16)
        self.assertEqual(x.to(dtype='int32').dtype, paddle.int32)
        self.assertEqual(x.to(np.float64).dtype, paddle.float64)
        y = x.to('cpu', 'bfloat16')
        self.assertEqual(y.dtype, paddle.bfloat16)
        np.testing.assert_array_equal(y.numpy(), a)
        y = x.to('cpu', paddle.float64, True)
        self.assertEqual(y.dtype, paddle.float64)
        other = paddle.zeros([1], dtype='int64')
        self.assertEqual(x.to(other).dtype, paddle.int64)
        self.assertIs(x.to(), x)
        with self.assertRaises(ValueError):
            x.to('nonsense')
        with self.assertRaises(TypeError):
            x.to(place='cpu')

    def test_transfers_are_differentiable(self):
        x = paddle.to_tensor([1.0, 2.0, 3.0], stop_gradient=False)
        (x.cpu() * 2).sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), [2.0, 2.0, 2.0])
        x.clear_grad()
        (x.to('cpu', 'float64') ** 2).sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), [2.0, 4.0, 6.0])

    def test_to_tensor_place_keeps_a_leaf(self):
        for place in (paddle.CPUPlace(), 'cpu', paddle.CUDAPinnedPlace()):
            t = paddle.to_tensor([1.0, 2.0], place=place, stop_gradient=False)
            self.assertTrue(t.is_leaf)
            self.assertFalse(t.stop_gradient)
            self.assertTrue(t.place.is_cpu_place())
        self.assertTrue(paddle.ones([2]).pin_memory().place.is_cpu_place())

    def test_memory_queries_raise_like_cpu_only_paddle(self):
        c = paddle.device.cuda
        for f in (c.memory_allocated, c.max_memory_allocated, c.memory_reserved,
                  c.max_memory_reserved, c.reset_max_memory_allocated,
                  c.reset_max_memory_reserved, c.get_device_properties, c.get_device_name,
                  c.get_device_capability, c.current_device):
            with self.assertRaises(ValueError) as cm:
                f()
            self.assertIn('not supported', str(cm.exception))
            self.assertIn(REASON, str(cm.exception))
        with self.assertRaises(ValueError):
            c.memory_allocated(0)
        self.assertIsNone(c.empty_cache())
        self.assertIsNone(c.synchronize())
        self.assertIsNone(paddle.device.synchronize())
        self.assertIsNone(paddle.device.synchronize('cpu'))

    def test_c_queries_fail_cleanly(self):
        for f in (lambda: _C.device_set_default(1), lambda: _C.device_set_current(1, 0),
                  lambda: _C.device_properties(1, 0), lambda: _C.device_memory_stats(1),
                  lambda: _C.tensor_to(paddle.ones([1]), 1)):
            with self.assertRaises((RuntimeError, ValueError)):
                f()
        for bad in (2, -1, 'tpu', None, 1.5):
            with self.assertRaises((ValueError, TypeError)):
                _C.device_count(bad)
        with self.assertRaises(TypeError):
            _C.tensor_to([1.0], 0)
        self.assertEqual(_C.device_default(), 0)

    def test_layer_to(self):
        m = paddle.nn.Linear(3, 2)
        w = m.weight
        m.to('cpu', 'float64')
        self.assertIs(m.weight, w)                  # moved in place
        self.assertEqual((w.dtype, w.stop_gradient), (paddle.float64, False))
        with self.assertRaises(ValueError):
            m.to('gpu')
        self.assertTrue(m.weight.place.is_cpu_place())

    def test_run_check_prints_the_cpu_lines(self):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            paddle.utils.run_check()
        lines = out.getvalue().splitlines()
        self.assertEqual(lines[0].strip(), 'Running verify PaddlePaddle program ...')
        self.assertIn('PaddlePaddle works well on 1 CPU.', lines)
        self.assertEqual(lines[-1], "PaddlePaddle is installed successfully! Let's start deep "
                                    "learning with PaddlePaddle now.")


@unittest.skipUnless(HAVE_GPU, "no usable GPU: {}".format(REASON))
class GpuTest(unittest.TestCase):
    def tearDown(self):
        paddle.set_device('cpu')

    def test_set_device_and_creation(self):
        self.assertTrue(paddle.is_compiled_with_cuda())
        self.assertEqual(repr(paddle.set_device('gpu')), 'Place(gpu:0)')
        self.assertEqual(paddle.get_device(), 'gpu:0')
        self.assertIn('gpu', paddle.device.get_all_device_type())
        self.assertIn('gpu:0', paddle.device.get_available_device())
        x = paddle.to_tensor([1.0, 2.0, 3.0])
        self.assertEqual(repr(x.place), 'Place(gpu:0)')
        self.assertIn('place=Place(gpu:0)', repr(x))
        paddle.set_device('cpu')
        self.assertEqual(paddle.get_device(), 'cpu')
        self.assertTrue(paddle.to_tensor([1.0]).place.is_cpu_place())

    def test_values_come_back_to_the_host(self):
        a = np.arange(12, dtype=np.float32).reshape(3, 4)
        x = paddle.to_tensor(a, place=paddle.CUDAPlace(0))
        self.assertTrue(x.place.is_gpu_place())
        np.testing.assert_array_equal(x.numpy(), a)
        np.testing.assert_array_equal(np.asarray(x), a)
        np.testing.assert_array_equal(x.T.numpy(), a.T)          # strided view
        self.assertEqual(x.tolist(), a.tolist())
        self.assertEqual(x[1, 2].item(), 6.0)
        self.assertEqual(float(x.sum()), float(a.sum()))
        self.assertTrue(bool(x.sum() > 0))
        b = x.astype('bfloat16')
        np.testing.assert_array_equal(b.numpy(), a)
        for dt in ('float16', 'int64', 'bool', 'int32', 'float64'):
            np.testing.assert_array_equal(x.astype(dt).numpy(), a.astype(dt))

    def test_cuda_cpu_to_and_gradients(self):
        x = paddle.to_tensor([1.0, 2.0, 3.0], stop_gradient=False)
        g = x.cuda()
        self.assertTrue(g.place.is_gpu_place())
        self.assertTrue(g.cpu().place.is_cpu_place())
        ((g * g).sum()).backward()
        self.assertTrue(x.grad.place.is_cpu_place())
        np.testing.assert_allclose(x.grad.numpy(), [2.0, 4.0, 6.0])
        y = x.to('gpu', 'float64')
        self.assertEqual((y.place.is_gpu_place(), y.dtype), (True, paddle.float64))
        leaf = paddle.to_tensor([1.0], place='gpu:0', stop_gradient=False)
        self.assertTrue(leaf.is_leaf)
        (leaf * 3).sum().backward()
        self.assertTrue(leaf.grad.place.is_gpu_place())
        self.assertEqual(leaf.grad.item(), 3.0)

    def test_layer_to_moves_parameters(self):
        m = paddle.nn.Linear(3, 2)
        w = m.weight
        m.to('gpu')
        self.assertIs(m.weight, w)
        self.assertTrue(w.place.is_gpu_place())
        self.assertFalse(w.stop_gradient)
        m(paddle.ones([4, 3]).cuda()).sum().backward()
        self.assertTrue(w.grad.place.is_gpu_place())
        m.to('cpu')
        self.assertTrue(w.place.is_cpu_place())

    def test_memory_and_properties(self):
        c = paddle.device.cuda
        c.synchronize()
        c.empty_cache()
        c.reset_max_memory_allocated()
        base = c.memory_allocated()
        x = paddle.zeros([1 << 20], dtype='float32').cuda()
        self.assertGreaterEqual(c.memory_allocated() - base, 4 << 20)
        self.assertGreaterEqual(c.max_memory_allocated(), c.memory_allocated())
        self.assertGreaterEqual(c.memory_reserved(), c.memory_allocated())
        self.assertGreaterEqual(c.max_memory_reserved(), c.memory_reserved())
        del x
        self.assertLess(c.memory_allocated(), base + (4 << 20))
        p = c.get_device_properties()
        self.assertTrue(repr(p).startswith("_gpuDeviceProperties(name='"))
        self.assertGreater(p.total_memory, 0)
        self.assertGreater(p.multi_processor_count, 0)
        self.assertEqual(c.get_device_name(0), p.name)
        self.assertEqual(c.get_device_capability('gpu:0'), (p.major, p.minor))
        self.assertEqual(c.current_device(), 0)
        with self.assertRaises(ValueError):
            c.memory_allocated(c.device_count())

    def test_run_check_prints_the_gpu_lines(self):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            paddle.utils.run_check()
        self.assertIn('PaddlePaddle works well on 1 GPU.', out.getvalue().splitlines())
        self.assertEqual(paddle.get_device(), 'cpu')


if __name__ == '__main__':
    unittest.main()
