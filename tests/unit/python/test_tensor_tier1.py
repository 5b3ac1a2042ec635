"""Every Tier 1 name of PADDLE_API.md in pyc's scope exists and behaves
(the tensor namespace, framework names and Tensor members)."""
import unittest

import numpy as np

import paddle

TENSOR_NAMES = """__version__ Tensor to_tensor zeros ones full zeros_like ones_like full_like
arange linspace eye rand randn randint uniform normal seed reshape flatten squeeze unsqueeze
transpose concat stack split tile expand gather where cast matmul argmax argsort topk allclose
add subtract multiply divide pow exp log sqrt abs tanh clip sum mean max min equal not_equal
logical_and maximum minimum""".split()
FRAMEWORK_NAMES = """no_grad grad set_device get_device is_compiled_with_cuda CPUPlace CUDAPlace
set_default_dtype get_default_dtype save load ParamAttr create_parameter float32 float64
float16 bfloat16 int32 int64 bool uint8""".split()
MEMBERS = """numpy item tolist backward grad clear_grad stop_gradient shape ndim dtype place
astype reshape flatten transpose unsqueeze squeeze sum mean argmax matmul detach clone
set_value __float__ __int__ __bool__ __format__ __getitem__ __setitem__""".split()


class TestTier1Names(unittest.TestCase):
    def test_namespace_names_exist(self):
        missing = [n for n in TENSOR_NAMES + FRAMEWORK_NAMES if not hasattr(paddle, n)]
        self.assertEqual(missing, [])
        self.assertTrue(hasattr(paddle.device, 'set_device'))

    def test_tensor_members_exist(self):
        t = paddle.to_tensor([1.0])
        missing = [n for n in MEMBERS if not hasattr(t, n)]
        self.assertEqual(missing, [])

    def test_functional_forms_match_methods(self):
        x = paddle.to_tensor(np.arange(12, dtype=np.float32).reshape(3, 4))
        pairs = [
            (paddle.reshape(x, [4, 3]), x.reshape([4, 3])),
            (paddle.flatten(x), x.flatten()),
            (paddle.transpose(x, [1, 0]), x.transpose([1, 0])),
            (paddle.unsqueeze(x, 1), x.unsqueeze(1)),
            (paddle.squeeze(paddle.unsqueeze(x, 0)), x.unsqueeze(0).squeeze()),
            (paddle.sum(x, 1), x.sum(1)),
            (paddle.mean(x, 0), x.mean(0)),
            (paddle.argmax(x, 1), x.argmax(1)),
            (paddle.matmul(x, x.T), x.matmul(x.T)),
        ]
        for a, b in pairs:
            np.testing.assert_array_equal(a.numpy(), b.numpy())

    def test_create_parameter_and_param_attr(self):
        attr = paddle.ParamAttr(name='w0', learning_rate=0.5, trainable=True)
        p = paddle.create_parameter([2, 3], 'float32', attr=attr)
        self.assertEqual(p.shape, [2, 3])
        self.assertEqual(p.name, 'w0')
        self.assertFalse(p.stop_gradient)
        self.assertTrue(p.trainable)
        self.assertEqual(p.optimize_attr['learning_rate'], 0.5)
        b = paddle.create_parameter([3], 'float32', is_bias=True)
        self.assertEqual(b.numpy().tolist(), [0, 0, 0])
        self.assertIsInstance(p, paddle.Tensor)

    def test_numpy_interop(self):
        x = paddle.to_tensor([1.0, 2.0])
        r = np.array([10.0, 20.0], np.float32) + x
        self.assertIsInstance(r, paddle.Tensor)
        self.assertEqual(r.numpy().tolist(), [11, 22])
        self.assertEqual(np.asarray(x).tolist(), [1, 2])
        self.assertEqual((x * np.float32(2)).numpy().tolist(), [2, 4])
        strided = np.arange(6, dtype=np.float32).reshape(2, 3).T
        m = paddle.ones([3, 2]) + strided
        self.assertEqual(m.numpy().tolist(), (strided + 1).tolist())
        self.assertEqual(paddle.to_tensor(strided).numpy().tolist(), strided.tolist())
        t = paddle.to_tensor(np.arange(6, dtype=np.float32).reshape(2, 3)).T
        self.assertEqual(np.asarray(t).tolist(), [[0, 3], [1, 4], [2, 5]])


if __name__ == '__main__':
    unittest.main()
