"""paddle.amp on the CPU backend: auto_cast (O1/O2/OD, lists, nesting,
threads, the decorator form), GradScaler (skipped steps, scale changes,
unscale_/step order, state_dict), decorate (O2 parameters, master weights,
save_dtype), and the acceptance run: an MLP on scikit-learn's digits trained
in float32 and in O1 bfloat16 reaches the same test accuracy within one point.
"""
import threading
import unittest
import warnings

import numpy as np

import paddle
import paddle.nn as nn
import paddle.nn.functional as F


def _fp32(t):
    return t.astype('float32').numpy()


class TestAutoCastDtypes(unittest.TestCase):
    def setUp(self):
        paddle.seed(3)
        self.x = paddle.randn([4, 8])
        self.lin = nn.Linear(8, 5)

    def test_o1_bfloat16_white_black_and_promoted_ops(self):
        x = self.x
        with paddle.amp.auto_cast(dtype='bfloat16'):
            y = self.lin(x)
            self.assertEqual(y.dtype, paddle.bfloat16)
            self.assertEqual(paddle.matmul(x, x, transpose_y=True).dtype, paddle.bfloat16)
            self.assertEqual((x @ paddle.randn([8, 2])).dtype, paddle.bfloat16)
            self.assertEqual(paddle.einsum('ij,kj->ik', x, x).dtype, paddle.bfloat16)
            self.assertEqual(paddle.bmm(x.reshape([1, 4, 8]), x.reshape([1, 8, 4])).dtype,
                             paddle.bfloat16)
            self.assertEqual(F.softmax(y).dtype, paddle.float32)
            self.assertEqual(F.log_softmax(y).dtype, paddle.float32)
            self.assertEqual(paddle.exp(y).dtype, paddle.float32)
            self.assertEqual(paddle.sum(y).dtype, paddle.float32)
            self.assertEqual(y.mean().dtype, paddle.float32)
            self.assertEqual(F.layer_norm(y, [5]).dtype, paddle.float32)
            loss = F.cross_entropy(y, paddle.zeros([4], 'int64'))
            self.assertEqual(loss.dtype, paddle.float32)
            # ops on neither list run in the widest input dtype
            self.assertEqual((y + paddle.ones([4, 5])).dtype, paddle.float32)
            self.assertEqual(F.relu(y).dtype, paddle.bfloat16)
        self.assertEqual(self.lin(x).dtype, paddle.float32)

    def test_o1_float16_conv_pool_batchnorm(self):
        conv = nn.Conv2D(3, 4, 3)
        bn = nn.BatchNorm2D(4)
        img = paddle.randn([2, 3, 8, 8])
        with paddle.amp.auto_cast():            # default dtype float16
            h = conv(img)
            self.assertEqual(h.dtype, paddle.float16)
            self.assertEqual(bn(h).dtype, paddle.float16)
            self.assertEqual(F.max_pool2d(h, 2).dtype, paddle.float16)
            self.assertEqual(F.adaptive_avg_pool2d(h, 1).dtype, paddle.float16)
        self.assertEqual(bn._mean.dtype, paddle.float32)

    def test_o2_conv_transpose_and_conv3d_run_in_low_precision(self):
        paddle.seed(4)
        up = nn.Conv2DTranspose(4, 2, 3, stride=2)
        c3 = nn.Conv3D(2, 3, 2)
        paddle.amp.decorate(up, level='O2', dtype='bfloat16')
        x = paddle.randn([1, 4, 5, 5]).astype('bfloat16')
        x.stop_gradient = False
        with paddle.amp.auto_cast(level='O2', dtype='bfloat16'):
            self.assertEqual(up(x.astype('float32')).dtype, paddle.float32)   # promoted
            y = up(x)
            z = c3(paddle.randn([1, 2, 4, 4, 4]))
        self.assertEqual(y.dtype, paddle.bfloat16)
        self.assertEqual(z.dtype, paddle.float32)       # float32 weights: promoted
        y.astype('float32').sum().backward()
        self.assertEqual(up.weight.grad.dtype, paddle.bfloat16)
        self.assertEqual(x.grad.dtype, paddle.bfloat16)

    def test_attention_is_white_listed(self):
        q = paddle.randn([2, 5, 2, 4])
        mask = paddle.to_tensor(np.tril(np.ones([5, 5], bool)))
        ref = F.scaled_dot_product_attention(q, q, q, attn_mask=mask)
        with paddle.amp.auto_cast(dtype='bfloat16'):
            out = F.scaled_dot_product_attention(q, q, q, attn_mask=mask)
        self.assertEqual(out.dtype, paddle.bfloat16)
        np.testing.assert_allclose(_fp32(out), ref.numpy(), rtol=0.03, atol=0.03)

    def test_emulated_conv_matches_float32_on_rounded_inputs(self):
        # the CPU conv kernel has no bfloat16 path: computed in float32 on
        # the bfloat16-rounded inputs, output rounded to bfloat16
        conv = nn.Conv2D(3, 4, 3)
        img = paddle.randn([2, 3, 8, 8])
        with paddle.amp.auto_cast(dtype='bfloat16'):
            got = conv(img)
        ref = F.conv2d(img.astype('bfloat16').astype('float32'),
                       conv.weight.astype('bfloat16').astype('float32'),
                       conv.bias.astype('bfloat16').astype('float32'))
        np.testing.assert_allclose(_fp32(got), _fp32(ref.astype('bfloat16')), rtol=0, atol=0)

    def test_custom_lists_move_ops(self):
        with paddle.amp.auto_cast(dtype='bfloat16', custom_white_list={'exp'},
                                  custom_black_list=['matmul_v2']):
            self.assertEqual(paddle.exp(self.x.astype('bfloat16')).dtype, paddle.bfloat16)
            self.assertEqual(paddle.exp(self.x).dtype, paddle.bfloat16)
            self.assertEqual(self.lin(self.x).dtype, paddle.float32)
            self.assertEqual(paddle.matmul(self.x.astype('bfloat16'), self.x,
                                           transpose_y=True).dtype, paddle.float32)

    def test_bad_arguments_raise(self):
        with self.assertRaises(ValueError):
            paddle.amp.auto_cast(custom_white_list={'exp'}, custom_black_list={'exp'})
        with self.assertRaises(ValueError):
            paddle.amp.auto_cast(level='O3')
        with self.assertRaises(ValueError):
            paddle.amp.auto_cast(dtype='float64')
        with self.assertRaises(TypeError):
            paddle.amp.auto_cast(custom_white_list='exp')
        # a disabled guard accepts any dtype, as Paddle's
        with paddle.amp.auto_cast(enable=False, dtype='float32'):
            self.assertEqual(self.lin(self.x).dtype, paddle.float32)

    def test_off_levels_and_nesting(self):
        with paddle.amp.auto_cast(level='O0', dtype='bfloat16'):
            self.assertEqual(self.lin(self.x).dtype, paddle.float32)
        with paddle.amp.auto_cast(dtype='bfloat16'):
            with paddle.amp.auto_cast(enable=False):
                self.assertEqual(self.lin(self.x).dtype, paddle.float32)
                self.assertEqual((self.x @ self.x.T).dtype, paddle.float32)
            self.assertEqual(self.lin(self.x).dtype, paddle.bfloat16)
            with paddle.amp.auto_cast(dtype='float16'):
                self.assertEqual(self.lin(self.x).dtype, paddle.float16)
            self.assertEqual(self.lin(self.x).dtype, paddle.bfloat16)
        # leaving the last guard gives Tensor its C matmul slot back
        self.assertEqual(type(paddle.Tensor.__dict__['__matmul__']).__name__,
                         'wrapper_descriptor')
        self.assertEqual((self.x @ self.x.T).dtype, paddle.float32)

    def test_exception_inside_restores_state(self):
        with self.assertRaises(KeyError):
            with paddle.amp.auto_cast(dtype='bfloat16'):
                raise KeyError('x')
        self.assertEqual(self.lin(self.x).dtype, paddle.float32)

    def test_decorator_form(self):
        @paddle.amp.auto_cast(dtype='bfloat16')
        def fwd(m, x):
            return m(x)
        self.assertEqual(fwd(self.lin, self.x).dtype, paddle.bfloat16)
        self.assertEqual(self.lin(self.x).dtype, paddle.float32)

    def test_state_is_per_thread(self):
        seen = {}
        entered, done = threading.Event(), threading.Event()

        def other():
            entered.wait(10)
            seen['dtype'] = self.lin(self.x).dtype
            seen['mm'] = (self.x @ self.x.T).dtype
            done.set()
        t = threading.Thread(target=other)
        t.start()
        with paddle.amp.auto_cast(dtype='bfloat16'):
            entered.set()
            done.wait(10)
            self.assertEqual(self.lin(self.x).dtype, paddle.bfloat16)
        t.join()
        self.assertEqual(seen, {'dtype': paddle.float32, 'mm': paddle.float32})

    def test_one_decorated_function_in_two_threads(self):
        gate = threading.Barrier(2)
        out = []

        @paddle.amp.auto_cast(dtype='bfloat16')
        def fwd():
            gate.wait(10)          # both threads inside the same auto_cast object
            r = self.lin(self.x).dtype
            gate.wait(10)
            return r
        ts = [threading.Thread(target=lambda: out.append(fwd())) for _ in range(2)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        self.assertEqual(out, [paddle.bfloat16, paddle.bfloat16])
        self.assertEqual(self.lin(self.x).dtype, paddle.float32)
        self.assertEqual(paddle.amp._state.ON, 0)

    def test_o2_and_od_levels(self):
        xb = self.x.astype('bfloat16')
        with paddle.amp.auto_cast(level='O2', dtype='bfloat16'):
            self.assertEqual(paddle.exp(xb).dtype, paddle.bfloat16)       # not O2-black
            self.assertEqual(paddle.exp(self.x).dtype, paddle.float32)    # promoted
            self.assertEqual(F.softmax(xb).dtype, paddle.bfloat16)        # emulated kernel
            self.assertEqual(F.embedding(paddle.to_tensor([1, 2]), paddle.randn([4, 3])
                                         .astype('bfloat16')).dtype,
                             paddle.float32)                              # extra black list
        with paddle.amp.auto_cast(level='O2', dtype='bfloat16', use_promote=False):
            self.assertEqual(paddle.exp(self.x).dtype, paddle.bfloat16)
        with paddle.amp.auto_cast(level='OD', dtype='bfloat16'):
            self.assertEqual(self.lin(self.x).dtype, paddle.bfloat16)
            self.assertEqual(F.relu(xb).dtype, paddle.bfloat16)           # not hooked: C
            self.assertEqual(F.dropout(xb, 0.5).dtype, paddle.float32)

    def test_gradients_reach_float32_params_in_float32(self):
        y0 = self.lin(self.x)
        F.cross_entropy(y0, paddle.to_tensor([0, 1, 2, 3])).backward()
        ref_w = self.lin.weight.grad.numpy().copy()
        self.lin.clear_gradients()
        x = self.x.detach()
        x.stop_gradient = False
        with paddle.amp.auto_cast(dtype='bfloat16'):
            loss = F.cross_entropy(self.lin(x), paddle.to_tensor([0, 1, 2, 3]))
        loss.backward()
        g = self.lin.weight.grad
        self.assertEqual(g.dtype, paddle.float32)
        self.assertEqual(x.grad.dtype, paddle.float32)
        np.testing.assert_allclose(g.numpy(), ref_w, rtol=0.05, atol=0.01)


class TestGradScaler(unittest.TestCase):
    def _model(self, seed=0):
        paddle.seed(seed)
        net = nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 3))
        opt = paddle.optimizer.Adam(learning_rate=0.01, parameters=net.parameters())
        return net, opt

    def _loss(self, net, scale_in=1.0):
        x = paddle.randn([5, 6]) * scale_in
        with paddle.amp.auto_cast(dtype='float16'):
            return F.cross_entropy(net(x), paddle.to_tensor([0, 1, 2, 0, 1]))

    def test_defaults(self):
        s = paddle.amp.GradScaler()
        self.assertTrue(s.is_enable())
        self.assertTrue(s.is_use_dynamic_loss_scaling())
        self.assertEqual(s.get_init_loss_scaling(), 65536.0)
        self.assertEqual((s.get_incr_ratio(), s.get_decr_ratio()), (2.0, 0.5))
        self.assertEqual((s.get_incr_every_n_steps(), s.get_decr_every_n_nan_or_inf()),
                         (2000, 1))
        self.assertIs(paddle.amp.AmpScaler, paddle.amp.grad_scaler.AmpScaler)
        with self.assertRaises(ValueError):
            paddle.amp.GradScaler(incr_ratio=1.0)

    def test_scale_multiplies(self):
        s = paddle.amp.GradScaler(init_loss_scaling=1024.)
        net, _ = self._model()
        loss = self._loss(net)
        self.assertAlmostEqual(s.scale(loss).item(), loss.item() * 1024., places=1)

    def test_inf_skips_step_and_halves_scale(self):
        net, opt = self._model()
        s = paddle.amp.GradScaler(init_loss_scaling=1024.)
        # one good step so Adam has moments and a step count
        s.scale(self._loss(net)).backward()
        s.step(opt)
        s.update()
        opt.clear_grad()
        before_p = [p.numpy().copy() for p in net.parameters()]
        before_s = {k: v.numpy().copy() for k, v in opt.state_dict().items()}
        s.scale(self._loss(net)).backward()
        net[0].weight.grad._assign(paddle.full(net[0].weight.shape, float('inf')))
        s.step(opt)
        s.update()
        self.assertEqual(float(s.get_loss_scaling().item()), 512.)
        for p, b in zip(net.parameters(), before_p):
            np.testing.assert_array_equal(p.numpy(), b)
        after_s = opt.state_dict()
        self.assertEqual(set(after_s), set(before_s))
        for k, v in before_s.items():
            np.testing.assert_array_equal(after_s[k].numpy(), v, err_msg=k)
        self.assertEqual(s.state_dict()['decr_count'], 0)

    def test_nan_through_minimize(self):
        net, opt = self._model()
        s = paddle.amp.GradScaler(init_loss_scaling=8., decr_every_n_nan_or_inf=2)
        for i in range(2):
            scaled = s.scale(self._loss(net))
            scaled.backward()
            net[2].bias.grad._assign(paddle.full([3], float('nan')))
            before = net[2].bias.numpy().copy()
            s.minimize(opt, scaled)
            opt.clear_grad()
            np.testing.assert_array_equal(net[2].bias.numpy(), before)
            self.assertEqual(float(s.get_loss_scaling().item()), 8. if i == 0 else 4.)

    def test_good_steps_double_scale(self):
        net, opt = self._model()
        s = paddle.amp.GradScaler(init_loss_scaling=4., incr_every_n_steps=3)
        scales = []
        for _ in range(6):
            s.scale(self._loss(net)).backward()
            s.step(opt)
            s.update()
            opt.clear_grad()
            scales.append(float(s.get_loss_scaling().item()))
        self.assertEqual(scales, [4., 4., 8., 8., 8., 16.])

    def test_unscale_then_step_matches_unscaled_training(self):
        net_a, opt_a = self._model(5)
        net_b, opt_b = self._model(5)
        s = paddle.amp.GradScaler(init_loss_scaling=256.)
        paddle.seed(9)
        la = self._loss(net_a)
        paddle.seed(9)
        lb = self._loss(net_b)
        s.scale(la).backward()
        s.unscale_(opt_a)
        lb.backward()
        for pa, pb in zip(net_a.parameters(), net_b.parameters()):
            np.testing.assert_allclose(pa.grad.numpy(), pb.grad.numpy(), rtol=1e-5, atol=1e-7)
        with self.assertRaisesRegex(RuntimeError, 'already been called'):
            s.unscale_(opt_a)
        s.step(opt_a)
        with self.assertRaisesRegex(RuntimeError, 'step\\(\\) has already been called'):
            s.step(opt_a)
        with self.assertRaisesRegex(RuntimeError, 'after step'):
            s.unscale_(opt_a)
        s.update()
        opt_b.step()
        for pa, pb in zip(net_a.parameters(), net_b.parameters()):
            np.testing.assert_allclose(pa.numpy(), pb.numpy(), rtol=1e-5, atol=1e-6)

    def test_state_dict_round_trip(self):
        s = paddle.amp.GradScaler(init_loss_scaling=128., incr_every_n_steps=7)
        net, opt = self._model()
        s.scale(self._loss(net)).backward()
        s.step(opt)
        s.update()
        sd = s.state_dict()
        self.assertEqual(sd['incr_count'], 1)
        t = paddle.amp.GradScaler()
        t.load_state_dict(sd)
        self.assertEqual(t.get_incr_every_n_steps(), 7)
        self.assertEqual(float(t.get_loss_scaling().item()), 128.)
        self.assertEqual(t.state_dict()['incr_count'], 1)
        with self.assertRaises(RuntimeError):
            t.load_state_dict({})
        self.assertEqual(paddle.amp.GradScaler(enable=False).state_dict(), {})

    def test_bfloat16_disables_dynamic_scaling_like_paddle(self):
        net, opt = self._model()
        s = paddle.amp.GradScaler()
        with paddle.amp.auto_cast(dtype='bfloat16'):
            loss = F.cross_entropy(net(paddle.randn([5, 6])), paddle.to_tensor([0, 1, 2, 0, 1]))
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter('always')
            scaled = s.scale(loss)
        self.assertTrue(any('bfloat16' in str(x.message) for x in w))
        self.assertIs(scaled, loss)
        self.assertFalse(s.is_enable())
        scaled.backward()
        before = net[0].weight.numpy().copy()
        s.step(opt)
        self.assertFalse(np.array_equal(net[0].weight.numpy(), before))


class TestDecorate(unittest.TestCase):
    def _net(self):
        paddle.seed(0)
        return nn.Sequential(nn.Linear(6, 8), nn.LayerNorm(8), nn.ReLU(), nn.Linear(8, 4),
                             nn.BatchNorm1D(4))

    def test_o1_returns_inputs(self):
        net = self._net()
        opt = paddle.optimizer.SGD(parameters=net.parameters())
        m, o = paddle.amp.decorate(net, opt, level='O1')
        self.assertIs(m, net)
        self.assertIs(o, opt)
        self.assertEqual(net[0].weight.dtype, paddle.float32)
        with self.assertRaises(ValueError):
            paddle.amp.decorate(net, level='O3')

    def test_o2_casts_all_but_norms_and_excluded(self):
        net = self._net()
        w = net[0].weight
        out = paddle.amp.decorate([net], level='O2', dtype='bfloat16',
                                  excluded_layers=[net[3]])
        self.assertIsInstance(out, list)
        self.assertIs(net[0].weight, w)
        self.assertEqual(w.dtype, paddle.bfloat16)
        self.assertFalse(w.stop_gradient)
        self.assertEqual(net[1].weight.dtype, paddle.float32)
        self.assertEqual(net[3].weight.dtype, paddle.float32)
        self.assertEqual(net[4].weight.dtype, paddle.float32)
        self.assertEqual(net[4]._mean.dtype, paddle.float32)
        with paddle.amp.auto_cast(level='O2', dtype='bfloat16'):
            y = net(paddle.randn([3, 6]))
        self.assertEqual(y.dtype, paddle.bfloat16)

    def test_o2_master_weights_and_state_dict(self):
        net = self._net()
        opt = paddle.optimizer.AdamW(learning_rate=1e-3, parameters=net.parameters())
        net, opt = paddle.amp.decorate(net, opt, level='O2', dtype='bfloat16',
                                       save_dtype='float32')
        self.assertTrue(opt._multi_precision)
        w = net[0].weight
        for _ in range(3):
            with paddle.amp.auto_cast(level='O2', dtype='bfloat16'):
                loss = net(paddle.randn([3, 6])).astype('float32').mean()
            loss.backward()
            self.assertEqual(w.grad.dtype, paddle.bfloat16)
            opt.step()
            opt.clear_grad()
        self.assertEqual(w.dtype, paddle.bfloat16)
        sd = opt.state_dict()
        mw = sd['master_weights']
        self.assertIn(w.name, mw)
        master = mw[w.name]
        self.assertEqual(master.dtype, paddle.float32)
        np.testing.assert_array_equal(_fp32(master.astype('bfloat16')), _fp32(w))
        self.assertIn(w.name + '_fp32_master_0_moment1_0', sd)
        self.assertEqual(sd[w.name + '_fp32_master_0_moment1_0'].dtype, paddle.float32)
        # save_dtype: the model's state_dict comes out float32, params stay bf16
        msd = net.state_dict()
        self.assertTrue(all(v.dtype == paddle.float32 for v in msd.values()
                            if paddle.is_floating_point(v)))
        self.assertEqual(w.dtype, paddle.bfloat16)
        # a fresh optimizer restores masters and moments
        opt2 = paddle.optimizer.AdamW(learning_rate=1e-3, parameters=net.parameters(),
                                      multi_precision=True)
        opt2.set_state_dict(sd)
        sd2 = opt2.state_dict()
        np.testing.assert_array_equal(sd2['master_weights'][w.name].numpy(), master.numpy())
        np.testing.assert_array_equal(sd2[w.name + '_fp32_master_0_moment2_0'].numpy(),
                                      sd[w.name + '_fp32_master_0_moment2_0'].numpy())

    def test_master_weight_keeps_updates_smaller_than_bfloat16_spacing(self):
        p = paddle.create_parameter([4], 'float32',
                                    default_initializer=nn.initializer.Constant(1.0))
        q = paddle.create_parameter([4], 'float32',
                                    default_initializer=nn.initializer.Constant(1.0))
        from paddle.nn.layer.layers import _cast_in_place
        _cast_in_place(p, 'bfloat16')
        _cast_in_place(q, 'bfloat16')
        with_master = paddle.optimizer.SGD(learning_rate=1e-3, parameters=[p],
                                           multi_precision=True)
        without = paddle.optimizer.SGD(learning_rate=1e-3, parameters=[q])
        for _ in range(10):
            for t, o in ((p, with_master), (q, without)):
                (t.astype('float32') * 1.0).sum().backward()
                o.step()
                o.clear_grad()
        # 1 - 10 * 1e-3 = 0.99 (bfloat16 spacing at 1 is 2**-7 ~ 0.0078): the
        # master accumulates the steps; the plain bf16 parameter rounds each away
        np.testing.assert_allclose(with_master.state_dict()['master_weights'][p.name].numpy(),
                                   np.full(4, 0.99, np.float32), rtol=1e-5)
        np.testing.assert_array_equal(_fp32(q), np.ones(4, np.float32))
        self.assertLess(float(_fp32(p)[0]), 1.0)


def _digits():
    from sklearn.datasets import load_digits
    d = load_digits()
    x = (d.data / 16.0).astype(np.float32)
    y = d.target.astype(np.int64)
    perm = np.random.RandomState(0).permutation(len(x))
    nte = len(x) // 5
    return x[perm[nte:]], y[perm[nte:]], x[perm[:nte]], y[perm[:nte]]


def _train_digits(mode, epochs=15, batch=32):
    xtr, ytr, xte, yte = _digits()
    paddle.seed(7)
    net = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10))
    opt = paddle.optimizer.Adam(learning_rate=1e-3, parameters=net.parameters())
    scaler = None
    if mode == 'o2':
        net, opt = paddle.amp.decorate(net, opt, level='O2', dtype='bfloat16')
        scaler = paddle.amp.GradScaler(init_loss_scaling=1024.)
    guard = {'fp32': dict(enable=False), 'o1': dict(dtype='bfloat16'),
             'o1_fp16': dict(dtype='float16'),
             'o2': dict(level='O2', dtype='bfloat16')}[mode]
    if mode == 'o1_fp16':
        scaler = paddle.amp.GradScaler(init_loss_scaling=1024.)
    for e in range(epochs):
        perm = np.random.RandomState(100 + e).permutation(len(xtr))
        for i in range(0, len(perm), batch):
            idx = perm[i:i + batch]
            with paddle.amp.auto_cast(**guard):
                loss = F.cross_entropy(net(paddle.to_tensor(xtr[idx])),
                                       paddle.to_tensor(ytr[idx]))
            if scaler is not None:
                scaler.scale(loss).backward()
                scaler.step(opt)
                scaler.update()
            else:
                loss.backward()
                opt.step()
            opt.clear_grad()
    with paddle.no_grad(), paddle.amp.auto_cast(**guard):
        pred = net(paddle.to_tensor(xte)).astype('float32').numpy().argmax(1)
    return float((pred == yte).mean())


class TestRecurrent(unittest.TestCase):
    def test_o2_rnn_layers_and_cells_train(self):
        paddle.seed(1)
        for cls in (paddle.nn.LSTM, paddle.nn.GRU):
            m = cls(4, 8)
            opt = paddle.optimizer.Adam(parameters=m.parameters(), learning_rate=1e-2)
            m, opt = paddle.amp.decorate(m, opt, level='O2', dtype='bfloat16')
            self.assertEqual(m.parameters()[0].dtype, paddle.bfloat16)
            before = m.parameters()[0].astype('float32').numpy().copy()
            with paddle.amp.auto_cast(level='O2', dtype='bfloat16'):
                y, _ = m(paddle.randn([2, 5, 4]))
                loss = y.astype('float32').square().mean()
            loss.backward()
            opt.step()
            self.assertFalse(np.array_equal(before, m.parameters()[0].astype('float32').numpy()))
        for cell in (paddle.nn.LSTMCell(4, 8), paddle.nn.GRUCell(4, 8)):
            cell.to(dtype='bfloat16')
            with paddle.amp.auto_cast(level='O2', dtype='bfloat16'):
                h, _ = cell(paddle.randn([2, 4]))
            self.assertEqual(h.shape, [2, 8])


class TestDigitsAcceptance(unittest.TestCase):
    def test_o1_bfloat16_matches_float32_accuracy(self):
        acc32 = _train_digits('fp32')
        acc16 = _train_digits('o1')
        print('\ndigits MLP test accuracy: float32 {:.4f}, O1 bfloat16 {:.4f}'.format(
            acc32, acc16))
        self.assertGreater(acc32, 0.93)
        self.assertLessEqual(abs(acc32 - acc16), 0.01)

    def test_o1_float16_with_grad_scaler_learns(self):
        acc = _train_digits('o1_fp16', epochs=8)
        print('\ndigits MLP O1 float16 + GradScaler: {:.4f}'.format(acc))
        self.assertGreater(acc, 0.9)

    def test_o2_bfloat16_with_grad_scaler_learns(self):
        acc = _train_digits('o2', epochs=8)
        print('\ndigits MLP O2 bfloat16 + GradScaler: {:.4f}'.format(acc))
        self.assertGreater(acc, 0.9)


if __name__ == '__main__':
    unittest.main()
