"""paddle.save / paddle.load round trips (pickle files like .pdparams)."""
import os
import pickle
import shutil
import tempfile
import unittest

import numpy as np

import paddle


class TestSaveLoad(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix='pyc_saveload_')

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def test_state_dict_round_trip_gives_identical_predictions(self):
        paddle.seed(1)
        net = paddle.nn.Linear(4, 3)
        x = paddle.randn([5, 4])
        before = net(x).numpy()
        path = os.path.join(self.dir, 'sub', 'model.pdparams')
        paddle.save(net.state_dict(), path)
        loaded = paddle.load(path)
        self.assertEqual(sorted(loaded.keys()), sorted(net.state_dict().keys()))
        self.assertIsInstance(loaded['weight'], paddle.Tensor)
        net2 = paddle.nn.Linear(4, 3)
        net2.set_state_dict(loaded)
        np.testing.assert_array_equal(net2(x).numpy(), before)

    def test_file_is_a_pickle_of_numpy_arrays(self):
        path = os.path.join(self.dir, 't.pdparams')
        paddle.save({'w': paddle.ones([2, 2]), 'step': 3}, path)
        with open(path, 'rb') as f:
            raw = pickle.load(f)
        self.assertIsInstance(raw['w'], np.ndarray)
        self.assertEqual(raw['step'], 3)
        back = paddle.load(path, return_numpy=True)
        self.assertIsInstance(back['w'], np.ndarray)

    def test_nested_containers_and_plain_tensor(self):
        path = os.path.join(self.dir, 'opt.pdopt')
        obj = {'a': [paddle.to_tensor([1, 2]), (paddle.to_tensor(3.5), 'x')],
               'LR_Scheduler': {'last_epoch': 2, 'last_lr': 0.1}}
        paddle.save(obj, path)
        back = paddle.load(path)
        self.assertEqual(back['a'][0].numpy().tolist(), [1, 2])
        self.assertEqual(back['a'][0].dtype, paddle.int64)
        self.assertEqual(float(back['a'][1][0]), 3.5)
        self.assertEqual(back['a'][1][1], 'x')
        self.assertEqual(back['LR_Scheduler'], {'last_epoch': 2, 'last_lr': 0.1})
        tpath = os.path.join(self.dir, 'x.pdtensor')
        paddle.save(paddle.to_tensor([[1.5, 2.5]]), tpath)
        self.assertEqual(paddle.load(tpath).numpy().tolist(), [[1.5, 2.5]])

    def test_missing_and_bad_files_are_clear_errors(self):
        with self.assertRaises(ValueError) as cm:
            paddle.load(os.path.join(self.dir, 'nope.pdparams'))
        self.assertIn('nope.pdparams', str(cm.exception))
        bad = os.path.join(self.dir, 'bad.pdparams')
        with open(bad, 'wb') as f:
            f.write(b'not a pickle')
        with self.assertRaises(ValueError):
            paddle.load(bad)
        with self.assertRaises(ValueError):
            paddle.save({}, self.dir + os.sep)
        # no partial file left behind by a failed save
        with self.assertRaises(Exception):
            paddle.save({'f': lambda: 0}, os.path.join(self.dir, 'lam.pdparams'))
        self.assertEqual(sorted(os.listdir(self.dir)), ['bad.pdparams'])

    def test_reads_paddles_name_data_tuples(self):
        # real Paddle pickles a Tensor inside a general object as (name, ndarray)
        path = os.path.join(self.dir, 'paddle_made.pdparams')
        with open(path, 'wb') as f:
            pickle.dump({'t': ('linear_0.w_0', np.ones((2, 2), np.float32)),
                         'StructuredToParameterName@@': {'t': 'linear_0.w_0'}}, f, protocol=4)
        back = paddle.load(path)
        self.assertEqual(list(back.keys()), ['t'])
        self.assertEqual(back['t'].name, 'linear_0.w_0')
        self.assertEqual(back['t'].shape, [2, 2])

    def test_tensors_pickle_and_deepcopy(self):
        import copy
        t = paddle.to_tensor([1.0, 2.0], stop_gradient=False)
        u = pickle.loads(pickle.dumps(t))
        self.assertEqual(u.numpy().tolist(), [1.0, 2.0])
        self.assertFalse(u.stop_gradient)
        c = copy.deepcopy(t)
        self.assertFalse(c.stop_gradient)
        with paddle.no_grad():
            c[0] = 5.0
        self.assertEqual(t.numpy().tolist(), [1.0, 2.0])


if __name__ == '__main__':
    unittest.main()
