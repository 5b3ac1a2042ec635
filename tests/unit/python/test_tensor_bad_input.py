"""Bad input to every paddle._C function raises a Python exception and never
aborts the interpreter (a crash would fail this file's process)."""
import unittest

import numpy as np

import paddle
from paddle import _C


class TestBadInput(unittest.TestCase):
    def test_every_C_function_rejects_garbage_with_an_exception(self):
        t = paddle.to_tensor([[1.0, 2.0], [3.0, 4.0]])
        i = paddle.to_tensor([0, 1])
        garbage = [(), (None,), ('x',), (1.5,), (t,), (t, 'x'), (t, None), (t, -7),
                   (t, [100]), (t, t), (i, t), (t, i, 99), ([t, i],), ([],), ({},),
                   (t, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10), (t, [1, 2, 3, 4, 5, 6, 7, 8, 9]),
                   (object(),), (t, 2 ** 70)]
        skip = {'_register_dtypes', '_register_place', '_set_default_float', 'seed',
                'set_rng_state', 'set_grad_enabled'}
        names = [n for n in dir(_C) if callable(getattr(_C, n)) and not n.startswith('__')
                 and n not in skip]
        self.assertGreater(len(names), 100)
        for n in names:
            f = getattr(_C, n)
            for args in garbage:
                try:
                    f(*args)
                except (TypeError, ValueError, IndexError, RuntimeError, MemoryError,
                        NotImplementedError, OverflowError):
                    pass
        # the interpreter is still fine and grad mode is still on
        self.assertTrue(paddle.is_grad_enabled())
        u = paddle.to_tensor([[1.0, 2.0], [3.0, 4.0]])
        self.assertEqual(float((u * 2).sum()), 20.0)

    def test_messages_name_the_problem(self):
        with self.assertRaisesRegex(TypeError, 'unsupported dtype'):
            paddle.zeros([2], dtype='complex256')
        with self.assertRaisesRegex(TypeError, 'must be a Tensor'):
            _C.matmul([1, 2], paddle.ones([2]))
        with self.assertRaisesRegex(ValueError, 'reduction'):
            _C.mse_loss(paddle.ones([2]), paddle.ones([2]), 'avg')
        with self.assertRaisesRegex(IndexError, 'out of range'):
            paddle.gather(paddle.ones([3]), paddle.to_tensor([7]))

    def test_out_of_memory_is_an_exception(self):
        with self.assertRaises((MemoryError, ValueError)):
            paddle.zeros([2 ** 40, 2 ** 20])


if __name__ == '__main__':
    unittest.main()
