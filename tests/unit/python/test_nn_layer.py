"""paddle.nn.Layer: registration, parameters, state dicts, modes, hooks,
containers and printing."""
import collections
import unittest

import numpy as np

import paddle
import paddle.nn as nn


class Net(nn.Layer):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(4, 8)
        self.act = nn.ReLU()
        self.fc2 = nn.Linear(8, 2, bias_attr=False)
        self.register_buffer('steps', paddle.zeros([1], dtype='int64'))
        self.register_buffer('scratch', paddle.ones([2]), persistable=False)

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))


class TestRegistration(unittest.TestCase):
    def test_parameters_in_definition_order_with_structured_names(self):
        net = Net()
        names = [n for n, _ in net.named_parameters()]
        self.assertEqual(names, ['fc1.weight', 'fc1.bias', 'fc2.weight'])
        self.assertEqual(len(net.parameters()), 3)
        for p in net.parameters():
            self.assertIsInstance(p, paddle.Tensor)
            self.assertFalse(p.stop_gradient)

    def test_parameter_names_follow_paddle_scheme(self):
        net = Net()
        self.assertRegex(net.fc1.weight.name, r'^linear_\d+\.w_0$')
        self.assertRegex(net.fc1.bias.name, r'^linear_\d+\.b_0$')
        self.assertNotEqual(net.fc1.weight.name, net.fc2.weight.name)
        self.assertRegex(net.full_name(), r'^net_\d+$')

    def test_sublayers_children_and_named_sublayers(self):
        net = Net()
        self.assertEqual([type(l).__name__ for l in net.sublayers()], ['Linear', 'ReLU', 'Linear'])
        self.assertEqual([n for n, _ in net.named_sublayers()], ['fc1', 'act', 'fc2'])
        self.assertEqual(len(list(net.children())), 3)
        self.assertIs(net.sublayers(include_self=True)[0], net)

    def test_buffers_in_state_dict_only_when_persistable(self):
        net = Net()
        sd = net.state_dict()
        # Paddle's order: own parameters, own buffers, then sublayers
        self.assertEqual(list(sd.keys()), ['steps', 'fc1.weight', 'fc1.bias', 'fc2.weight'])
        self.assertEqual(len(net.buffers()), 2)

    def test_assigning_a_non_parameter_to_a_parameter_slot_raises(self):
        net = Net()
        with self.assertRaises(TypeError):
            net.fc1.weight = 3
        with self.assertRaises(TypeError):
            net.register_buffer('bad', np.zeros(3))

    def test_deleting_attributes_unregisters(self):
        net = Net()
        del net.fc2
        self.assertEqual([n for n, _ in net.named_parameters()], ['fc1.weight', 'fc1.bias'])

    def test_missing_attribute_raises_attribute_error(self):
        net = Net()
        with self.assertRaises(AttributeError):
            net.nope

    def test_create_parameter_and_add_parameter(self):
        layer = nn.Layer()
        w = layer.create_parameter([3, 2])
        self.assertEqual(w.shape, [3, 2])
        self.assertFalse(w.stop_gradient)
        layer.add_parameter('w', w)
        self.assertIs(layer.w, w)
        b = layer.create_parameter([2], is_bias=True)
        np.testing.assert_array_equal(b.numpy(), np.zeros(2, np.float32))
        self.assertIsNone(layer.create_parameter([2], attr=False))
        c = layer.create_parameter([2], default_initializer=nn.initializer.Constant(3.0))
        np.testing.assert_array_equal(c.numpy(), np.full(2, 3.0, np.float32))

    def test_add_sublayer_registers_and_returns_it(self):
        layer = nn.Layer()
        fc = layer.add_sublayer('head', nn.Linear(2, 2))
        self.assertIs(layer.head, fc)
        self.assertEqual([n for n, _ in layer.named_parameters()], ['head.weight', 'head.bias'])
        with self.assertRaises(TypeError):
            layer.add_sublayer('bad', 3)

    def test_param_attr_controls_initializer_trainable_and_name(self):
        attr = paddle.ParamAttr(name='my_w', initializer=nn.initializer.Constant(0.5),
                                trainable=False, learning_rate=0.1)
        fc = nn.Linear(2, 3, weight_attr=attr)
        self.assertEqual(fc.weight.name, 'my_w')
        np.testing.assert_array_equal(fc.weight.numpy(), np.full((2, 3), 0.5, np.float32))
        self.assertTrue(fc.weight.stop_gradient)
        self.assertEqual(fc.weight.optimize_attr['learning_rate'], 0.1)

    def test_paddle_create_parameter(self):
        p = paddle.create_parameter([2, 3], 'float32')
        self.assertEqual(p.shape, [2, 3])
        self.assertFalse(p.stop_gradient)


class TestStateDict(unittest.TestCase):
    def test_round_trip_through_numpy_gives_identical_outputs(self):
        a, b = Net(), Net()
        x = paddle.randn([5, 4])
        sd = {k: v.numpy() for k, v in a.state_dict().items()}
        missing, unexpected = b.set_state_dict(sd)
        self.assertEqual(missing, [])
        self.assertEqual(unexpected, [])
        np.testing.assert_array_equal(a(x).numpy(), b(x).numpy())

    def test_shape_mismatch_names_key_and_both_shapes_and_writes_nothing(self):
        a = Net()
        before = a.fc1.bias.numpy().copy()
        sd = {'fc1.bias': np.ones(8, np.float32), 'fc2.weight': np.zeros((3, 3), np.float32)}
        with self.assertRaises(ValueError) as cm:
            a.set_state_dict(sd)
        msg = str(cm.exception)
        self.assertIn('fc2.weight', msg)
        self.assertIn('[3, 3]', msg)
        self.assertIn('[8, 2]', msg)
        np.testing.assert_array_equal(a.fc1.bias.numpy(), before)

    def test_missing_and_unexpected_keys_are_reported(self):
        a = Net()
        sd = a.state_dict()
        sd = {k: v for k, v in sd.items() if k != 'fc1.bias'}
        sd['extra'] = np.zeros(1)
        missing, unexpected = a.set_state_dict(sd)
        self.assertEqual(missing, ['fc1.bias'])
        self.assertEqual(unexpected, ['extra'])

    def test_set_state_dict_by_parameter_names(self):
        a, b = Net(), Net()
        by_name = {pb.name: pa.numpy() for pa, pb in zip(a.parameters(), b.parameters())}
        missing, unexpected = b.set_state_dict(by_name, use_structured_name=False)
        self.assertEqual(unexpected, [])
        np.testing.assert_array_equal(a.fc1.weight.numpy(), b.fc1.weight.numpy())

    def test_set_dict_and_load_dict_are_aliases(self):
        a, b = Net(), Net()
        b.set_dict(a.state_dict())
        np.testing.assert_array_equal(a.fc2.weight.numpy(), b.fc2.weight.numpy())
        b.load_dict(a.state_dict())

    def test_paddle_save_load_of_state_dict(self):
        import os
        import tempfile
        a, b = Net(), Net()
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, 'net.pdparams')
            paddle.save(a.state_dict(), path)
            loaded = paddle.load(path)
            self.assertIsInstance(loaded['fc1.weight'], (np.ndarray, paddle.Tensor))
            b.set_state_dict(loaded)
        np.testing.assert_array_equal(a.fc1.weight.numpy(), b.fc1.weight.numpy())


class TestModesAndHooks(unittest.TestCase):
    def test_train_eval_propagate(self):
        net = nn.Sequential(nn.Linear(2, 2), nn.Dropout(0.5))
        net.eval()
        self.assertFalse(net.training)
        self.assertFalse(net[1].training)
        net.train()
        self.assertTrue(net[1].training)

    def test_forward_hooks_run_and_can_be_removed(self):
        net = nn.Linear(2, 2)
        seen = []
        h1 = net.register_forward_pre_hook(lambda layer, inp: seen.append('pre'))
        h2 = net.register_forward_post_hook(lambda layer, inp, out: out * 0)
        out = net(paddle.ones([1, 2]))
        self.assertEqual(seen, ['pre'])
        np.testing.assert_array_equal(out.numpy(), np.zeros((1, 2), np.float32))
        h1.remove()
        h2.remove()
        out = net(paddle.ones([1, 2]))
        self.assertEqual(seen, ['pre'])

    def test_apply_visits_every_layer(self):
        net = Net()
        seen = []
        net.apply(lambda l: seen.append(type(l).__name__))
        self.assertEqual(seen, ['Linear', 'ReLU', 'Linear', 'Net'])

    def test_clear_gradients(self):
        net = nn.Linear(2, 1)
        net(paddle.ones([3, 2])).sum().backward()
        self.assertIsNotNone(net.weight.grad)
        net.clear_gradients()
        g = net.weight.grad
        self.assertTrue(g is None or float(paddle.abs(g).sum()) == 0.0)

    def test_forward_not_implemented(self):
        with self.assertRaises(NotImplementedError):
            nn.Layer()(paddle.ones([1]))

    def test_to_double_casts_parameters(self):
        net = nn.Linear(2, 2)
        net.to(dtype='float64')
        self.assertEqual(net.weight.dtype, paddle.float64)
        out = net(paddle.ones([1, 2], dtype='float64'))
        self.assertEqual(out.dtype, paddle.float64)

    def test_cast_keeps_parameter_objects_and_optimizer_keeps_training(self):
        net = nn.Linear(2, 1)
        w = net.weight
        name = w.name
        opt = paddle.optimizer.SGD(0.1, parameters=net.parameters())
        net(paddle.ones([1, 2])).sum().backward()
        opt.step()
        opt.clear_grad()
        net.double()
        self.assertIs(net.weight, w)
        self.assertEqual(w.name, name)
        self.assertFalse(w.stop_gradient)
        before = w.numpy().copy()
        net(paddle.ones([1, 2], dtype='float64')).sum().backward()
        opt.step()
        np.testing.assert_allclose(w.numpy(), before - 0.1, rtol=1e-12)


class TestContainers(unittest.TestCase):
    def test_sequential_forms_and_indexing(self):
        s = nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 1))
        self.assertEqual(len(s), 3)
        self.assertIsInstance(s[-1], nn.Linear)
        self.assertEqual(len(s[:2]), 2)
        self.assertEqual(s(paddle.ones([4, 2])).shape, [4, 1])
        named = nn.Sequential(('a', nn.Linear(2, 2)), ('b', nn.ReLU()))
        self.assertIsInstance(named['a'], nn.Linear)
        od = nn.Sequential(collections.OrderedDict([('x', nn.Tanh())]))
        self.assertEqual([n for n, _ in od.named_children()], ['x'])
        with self.assertRaises(IndexError):
            s[5]

    def test_layer_list_registers_parameters(self):
        ll = nn.LayerList([nn.Linear(2, 2) for _ in range(3)])
        ll.append(nn.Linear(2, 1))
        ll.insert(0, nn.ReLU())
        self.assertEqual(len(ll), 5)
        self.assertIsInstance(ll[0], nn.ReLU)
        self.assertEqual(len(ll.parameters()), 8)
        ll.extend([nn.Linear(1, 1)])
        self.assertEqual(len(ll), 6)
        self.assertEqual([type(l).__name__ for l in ll][-1], 'Linear')

    def test_layer_dict_and_parameter_list(self):
        d = nn.LayerDict({'a': nn.Linear(1, 1)})
        d['b'] = nn.ReLU()
        self.assertEqual(list(d.keys()), ['a', 'b'])
        pl = nn.ParameterList([paddle.create_parameter([2], 'float32') for _ in range(2)])
        self.assertEqual(len(pl.parameters()), 2)


class TestPrinting(unittest.TestCase):
    def test_layer_repr_like_paddle(self):
        s = nn.Sequential(nn.Linear(2, 3), nn.ReLU())
        r = repr(s)
        self.assertIn('Sequential(', r)
        self.assertIn('(0): Linear(in_features=2, out_features=3, dtype=float32)', r)
        self.assertIn('(1): ReLU()', r)
        self.assertEqual(repr(nn.Conv2D(1, 6, 3, padding=1)),
                         'Conv2D(1, 6, kernel_size=[3, 3], padding=1, data_format=NCHW)')

    def test_parameter_prints_parameter_containing(self):
        fc = nn.Linear(2, 2)
        s = str(fc.weight)
        self.assertTrue(s.startswith('Parameter containing:\nTensor(shape=[2, 2], '
                                     'dtype=float32'), s)
        self.assertIn('stop_gradient=False', s)


if __name__ == '__main__':
    unittest.main()
