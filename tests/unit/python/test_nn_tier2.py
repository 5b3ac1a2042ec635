"""Tier-2 paddle.nn names (issue 18): transposed convolutions, pixel
shuffles, grid_sample/affine_grid, interpolate (nearest/bilinear/bicubic,
align_corners), pad modes, group/instance norm, SimpleRNN and the RNN/BiRNN
wrappers, the Transformer decoder and Transformer, nn.utils (weight_norm,
spectral_norm, clip_grad_norm_, parameters_to_vector), einsum.

Forward values and gradients are compared with PyTorch (Debian's
python3-torch) where the ops coincide -- those tests skip, visibly, without
it -- and with the numbers printed on Paddle's API pages where they give some."""
import itertools
import unittest

import numpy as np

import paddle
import paddle.nn.functional as F

try:
    import torch
    import torch.nn.functional as TF
except ImportError:  # pragma: no cover - depends on the host
    torch = None

needs_torch = unittest.skipIf(torch is None, "python3-torch is not installed")


def _pair(arrs):
    ps = [paddle.to_tensor(a, stop_gradient=False) for a in arrs]
    ts = [torch.tensor(a, requires_grad=True) for a in arrs]
    return ps, ts


class TorchCase(unittest.TestCase):
    rng = np.random.default_rng(0)

    def assertClose(self, a, b, tol=1e-5, msg=None):
        a = a.numpy() if hasattr(a, 'numpy') and not isinstance(a, np.ndarray) else a
        b = b.detach().numpy() if hasattr(b, 'detach') else b
        self.assertEqual(list(np.shape(a)), list(np.shape(b)), msg)
        np.testing.assert_allclose(a, b, rtol=tol, atol=tol, err_msg=msg or '')

    def check(self, pf, tf, arrs, tol=1e-5, msg=None):
        """pf(*paddle) vs tf(*torch): values and the gradients of a random
        weighted sum of the outputs."""
        ps, ts = _pair(arrs)
        po, to = pf(*ps), tf(*ts)
        if not isinstance(po, (list, tuple)):
            po, to = [po], [to]
        ws = [self.rng.standard_normal(tuple(t.shape)).astype(t.detach().numpy().dtype)
              for t in to]
        for p, t in zip(po, to):
            self.assertClose(p, t, tol, msg)
        sum(paddle.sum(p * paddle.to_tensor(w)) for p, w in zip(po, ws)).backward()
        sum(torch.sum(t * torch.tensor(w)) for t, w in zip(to, ws)).backward()
        for p, t in zip(ps, ts):
            self.assertIsNotNone(p.grad, msg)
            self.assertClose(p.grad, t.grad, tol * 10, msg)


@needs_torch
class TestConvTranspose(TorchCase):
    def test_conv2d_transpose_against_torch(self):
        for cin, cout, k, s, p, op, g, d in [(4, 6, 3, 2, 1, 1, 2, 1), (3, 2, 4, 1, 0, 0, 1, 1),
                                              (2, 4, 3, 3, 2, 0, 1, 2), (4, 4, 3, 2, 0, 1, 4, 1),
                                              (2, 3, 5, 2, 4, 1, 1, 1)]:
            x = self.rng.standard_normal((2, cin, 5, 6)).astype('float32')
            w = self.rng.standard_normal((cin, cout // g, k, k)).astype('float32')
            b = self.rng.standard_normal((cout,)).astype('float32')
            self.check(lambda x, w, b: F.conv2d_transpose(x, w, b, s, p, op, g, d),
                       lambda x, w, b: TF.conv_transpose2d(x, w, b, s, p, op, g, d),
                       [x, w, b], 1e-4, msg=str((cin, cout, k, s, p, op, g, d)))

    def test_conv1d_transpose_against_torch(self):
        x = self.rng.standard_normal((2, 3, 9)).astype('float32')
        w = self.rng.standard_normal((3, 5, 3)).astype('float32')
        self.check(lambda x, w: F.conv1d_transpose(x, w, stride=2, padding=1),
                   lambda x, w: TF.conv_transpose1d(x, w, stride=2, padding=1), [x, w], 1e-4)

    def test_layer_shapes_from_paddle_docs(self):
        conv = paddle.nn.Conv2DTranspose(4, 6, (3, 3))
        self.assertEqual(conv.weight.shape, [4, 6, 3, 3])
        self.assertEqual(conv(paddle.uniform((2, 4, 8, 8))).shape, [2, 6, 10, 10])
        up = paddle.nn.Conv2DTranspose(4, 6, 3, stride=2, padding=1)
        self.assertEqual(up(paddle.randn([1, 4, 8, 8]), output_size=[16, 16]).shape,
                         [1, 6, 16, 16])
        self.assertEqual(up(paddle.randn([1, 4, 8, 8])).shape, [1, 6, 15, 15])
        same = F.conv2d_transpose(paddle.randn([1, 4, 5, 5]), paddle.randn([4, 2, 3, 3]),
                                  stride=2, padding='SAME')
        self.assertEqual(same.shape, [1, 2, 10, 10])
        c1 = paddle.nn.Conv1DTranspose(2, 3, 3, stride=2)
        self.assertEqual(c1(paddle.randn([1, 2, 4])).shape, [1, 3, 9])
        nhwc = F.conv2d_transpose(paddle.randn([1, 5, 5, 4]), paddle.randn([4, 2, 3, 3]),
                                  data_format='NHWC')
        self.assertEqual(nhwc.shape, [1, 7, 7, 2])

    def test_bad_arguments(self):
        x = paddle.randn([1, 4, 5, 5])
        with self.assertRaises(ValueError):
            F.conv2d_transpose(x, paddle.randn([3, 2, 3, 3]))        # channel mismatch
        with self.assertRaises(ValueError):
            F.conv2d_transpose(x, paddle.randn([4, 2, 3, 3]), stride=2, output_padding=2)
        with self.assertRaises(ValueError):
            F.conv2d_transpose(x, paddle.randn([4, 2, 3, 3]), output_size=[40, 40])
        with self.assertRaises(ValueError):
            F.conv2d_transpose(paddle.randn([4, 5, 5]), paddle.randn([4, 2, 3, 3]))


class TestVisionFunctional(TorchCase):
    def test_grid_sample_paddle_doc_example(self):
        x = paddle.to_tensor([[[[-0.6, 0.8, -0.5], [-0.5, 0.2, 1.2], [1.4, 0.3, -0.2]]]],
                             dtype='float64')
        grid = paddle.to_tensor([[[[0.2, 0.3], [-0.4, -0.3], [-0.9, 0.3], [-0.9, -0.6]],
                                  [[0.4, 0.1], [0.9, -0.8], [0.4, 0.5], [0.5, -0.2]],
                                  [[0.1, -0.8], [-0.3, -1.], [0.7, 0.4], [0.2, 0.8]]]],
                                dtype='float64')
        y = F.grid_sample(x, grid, mode='bilinear', padding_mode='border', align_corners=True)
        np.testing.assert_allclose(y.numpy(), [[[[0.34, 0.016, 0.086, -0.448],
                                                 [0.55, -0.076, 0.35, 0.59],
                                                 [0.596, 0.38, 0.52, 0.24]]]], atol=1e-6)

    @needs_torch
    def test_grid_sample_against_torch(self):
        x = self.rng.standard_normal((2, 3, 5, 6)).astype('float32')
        g = (self.rng.random((2, 4, 7, 2)) * 2.6 - 1.3).astype('float32')
        for pm in ('zeros', 'border', 'reflection'):
            for ac in (True, False):
                self.check(lambda x, g: F.grid_sample(x, g, 'bilinear', pm, ac),
                           lambda x, g: TF.grid_sample(x, g, 'bilinear', pm, ac), [x, g], 1e-5,
                           msg='bilinear {} {}'.format(pm, ac))
                px = paddle.to_tensor(x)
                self.assertClose(F.grid_sample(px, paddle.to_tensor(g), 'nearest', pm, ac),
                                 TF.grid_sample(torch.tensor(x), torch.tensor(g), 'nearest', pm,
                                                ac))

    @needs_torch
    def test_affine_grid_against_torch(self):
        th = self.rng.standard_normal((2, 2, 3)).astype('float32')
        for ac in (True, False):
            self.check(lambda t: F.affine_grid(t, [2, 3, 4, 5], ac),
                       lambda t: TF.affine_grid(t, [2, 3, 4, 5], ac), [th])

    @needs_torch
    def test_pixel_shuffle_against_torch(self):
        x = self.rng.standard_normal((2, 9, 4, 4)).astype('float32')
        self.check(lambda x: F.pixel_shuffle(x, 3), lambda x: TF.pixel_shuffle(x, 3), [x])
        self.check(lambda x: F.pixel_unshuffle(x, 2), lambda x: TF.pixel_unshuffle(x, 2), [x])
        # torch 1.13 has no channel_shuffle backward: compare values only
        self.assertClose(F.channel_shuffle(paddle.to_tensor(x), 3),
                         TF.channel_shuffle(torch.tensor(x), 3))
        self.assertEqual(paddle.nn.PixelShuffle(3)(paddle.randn([2, 9, 4, 4])).shape,
                         [2, 1, 12, 12])
        nhwc = F.pixel_shuffle(paddle.to_tensor(np.transpose(x, (0, 2, 3, 1))), 3, 'NHWC')
        self.assertClose(np.transpose(nhwc.numpy(), (0, 3, 1, 2)),
                         TF.pixel_shuffle(torch.tensor(x), 3))
        with self.assertRaises(ValueError):
            F.pixel_shuffle(paddle.randn([1, 8, 2, 2]), 3)

    @needs_torch
    def test_interpolate_against_torch(self):
        x = self.rng.standard_normal((2, 3, 5, 7)).astype('float32')
        for mode in ('nearest', 'bilinear', 'bicubic'):
            for ac in ((False,) if mode == 'nearest' else (False, True)):
                for kw in (dict(size=[8, 11]), dict(size=[3, 4]), dict(scale_factor=2),
                           dict(scale_factor=1.7)):
                    self.check(lambda x: F.interpolate(x, mode=mode, align_corners=ac, **kw),
                               lambda x: TF.interpolate(
                                   x, mode=mode, align_corners=None if mode == 'nearest' else ac,
                                   **kw), [x], 1e-5, msg='{} {} {}'.format(mode, ac, kw))
        up = paddle.nn.Upsample(scale_factor=2, mode='bicubic', align_corners=True)
        self.assertEqual(up(paddle.to_tensor(x)).shape, [2, 3, 10, 14])
        with self.assertRaises(ValueError):
            F.interpolate(paddle.to_tensor(x), size=[4, 4], mode='nearest', align_corners=True)
        with self.assertRaises(ValueError):
            F.interpolate(paddle.to_tensor(x), size=[4], mode='linear')

    @needs_torch
    def test_pad_modes_against_torch(self):
        x = self.rng.standard_normal((2, 3, 5, 7)).astype('float32')
        for mode in ('constant', 'reflect', 'replicate', 'circular'):
            kw = {'value': 0.5} if mode == 'constant' else {}
            self.check(lambda x: F.pad(x, [1, 2, 2, 1], mode=mode, **kw),
                       lambda x: TF.pad(x, [1, 2, 2, 1], mode=mode, **kw), [x], msg=mode)


class TestNorms(TorchCase):
    @needs_torch
    def test_group_and_instance_norm_against_torch(self):
        x = self.rng.standard_normal((2, 6, 4, 5)).astype('float32')
        w = self.rng.standard_normal(6).astype('float32')
        b = self.rng.standard_normal(6).astype('float32')
        self.check(lambda x, w, b: F.group_norm(x, 3, 1e-5, w, b),
                   lambda x, w, b: TF.group_norm(x, 3, w, b), [x, w, b], 1e-4)
        self.check(lambda x, w, b: F.instance_norm(x, weight=w, bias=b),
                   lambda x, w, b: TF.instance_norm(x, weight=w, bias=b), [x, w, b], 1e-4)

    def test_layers(self):
        m = paddle.nn.InstanceNorm2D(6)
        self.assertEqual([n for n, _ in m.named_parameters()], ['scale', 'bias'])
        y = m(paddle.randn([2, 6, 4, 5]))
        self.assertAlmostEqual(float(y.numpy()[0, 0].mean()), 0.0, places=5)
        self.assertAlmostEqual(float(y.numpy()[1, 3].std()), 1.0, places=3)
        self.assertEqual(paddle.nn.InstanceNorm1D(3)(paddle.randn([2, 3, 7])).shape, [2, 3, 7])
        self.assertEqual(paddle.nn.InstanceNorm3D(3)(paddle.randn([2, 3, 2, 3, 4])).shape,
                         [2, 3, 2, 3, 4])
        with self.assertRaises(ValueError):
            m(paddle.randn([2, 6, 4]))
        g = paddle.nn.GroupNorm(3, 6, data_format='NHWC')
        self.assertEqual(g(paddle.randn([2, 4, 5, 6])).shape, [2, 4, 5, 6])
        with self.assertRaises(ValueError):
            F.group_norm(paddle.randn([2, 6, 3]), 4)


class TestRNN(TorchCase):
    @needs_torch
    def test_simple_rnn_against_torch(self):
        for direction, layers, act in (('forward', 1, 'tanh'), ('bidirect', 2, 'relu')):
            r = paddle.nn.SimpleRNN(5, 7, num_layers=layers, direction=direction,
                                    activation=act)
            t = torch.nn.RNN(5, 7, num_layers=layers, batch_first=True, nonlinearity=act,
                             bidirectional=direction != 'forward')
            t.load_state_dict({k: torch.tensor(v.numpy()) for k, v in r.state_dict().items()})
            x = self.rng.standard_normal((3, 4, 5)).astype('float32')
            y, h = r(paddle.to_tensor(x))
            ty, th = t(torch.tensor(x))
            self.assertClose(y, ty, 1e-5)
            self.assertClose(h, th, 1e-5)

    @needs_torch
    def test_sequence_length_against_torch_packed_sequences(self):
        for P, T, lstm in ((paddle.nn.LSTM, torch.nn.LSTM, True),
                           (paddle.nn.GRU, torch.nn.GRU, False),
                           (paddle.nn.SimpleRNN, torch.nn.RNN, False)):
            for direction, layers in (('forward', 1), ('bidirect', 2)):
                r = P(5, 7, num_layers=layers, direction=direction)
                t = T(5, 7, num_layers=layers, batch_first=True,
                      bidirectional=direction != 'forward')
                t.load_state_dict({k: torch.tensor(v.numpy())
                                   for k, v in r.state_dict().items()})
                x = self.rng.standard_normal((3, 6, 5)).astype('float32')
                lens = [6, 4, 1]
                px = paddle.to_tensor(x, stop_gradient=False)
                y, st = r(px, sequence_length=paddle.to_tensor(lens))
                packed = torch.nn.utils.rnn.pack_padded_sequence(
                    torch.tensor(x), torch.tensor(lens), batch_first=True, enforce_sorted=False)
                ty, tst = t(packed)
                ty, _ = torch.nn.utils.rnn.pad_packed_sequence(ty, batch_first=True,
                                                               total_length=6)
                msg = '{} {}'.format(P.__name__, direction)
                self.assertClose(y, ty, 1e-5, msg)
                if lstm:
                    self.assertClose(st[0], tst[0], 1e-5, msg)
                    self.assertClose(st[1], tst[1], 1e-5, msg)
                else:
                    self.assertClose(st, tst, 1e-5, msg)
                y.sum().backward()
                self.assertEqual(px.grad.shape, [3, 6, 5])
                np.testing.assert_array_equal(px.grad.numpy()[2, 1:], 0.0)   # padding
        with self.assertRaises(ValueError):
            paddle.nn.LSTM(5, 7)(paddle.randn([3, 6, 5]),
                                 sequence_length=paddle.to_tensor([7, 1, 1]))

    def test_simple_rnn_doc_shapes(self):
        rnn = paddle.nn.SimpleRNN(16, 32, 2)
        y, h = rnn(paddle.randn((4, 23, 16)), paddle.randn((2, 4, 32)))
        self.assertEqual((y.shape, h.shape), ([4, 23, 32], [2, 4, 32]))
        cell = paddle.nn.SimpleRNNCell(16, 32)
        y, h = cell(paddle.randn((4, 16)), paddle.randn((4, 32)))
        self.assertEqual((y.shape, h.shape), ([4, 32], [4, 32]))

    def test_rnn_wrapper_matches_sequence_layer(self):
        cell = paddle.nn.SimpleRNNCell(5, 7)
        x = paddle.randn([3, 4, 5])
        y, h = paddle.nn.RNN(cell)(x)
        ref = paddle.nn.SimpleRNN(5, 7)
        ref.set_state_dict({'weight_ih_l0': cell.weight_ih, 'weight_hh_l0': cell.weight_hh,
                            'bias_ih_l0': cell.bias_ih, 'bias_hh_l0': cell.bias_hh})
        ry, rh = ref(x)
        np.testing.assert_allclose(y.numpy(), ry.numpy(), atol=1e-6)
        np.testing.assert_allclose(h.numpy(), rh.numpy()[0], atol=1e-6)
        # sequence_length freezes a sample's state after its length
        y2, h2 = paddle.nn.RNN(cell)(x, sequence_length=paddle.to_tensor([4, 2, 1]))
        np.testing.assert_allclose(h2.numpy()[1], y.numpy()[1, 1], atol=1e-6)
        np.testing.assert_allclose(h2.numpy()[2], y.numpy()[2, 0], atol=1e-6)
        # reverse direction = the forward cell on the flipped sequence
        yr, hr = paddle.nn.RNN(cell, is_reverse=True)(x)
        yf, hf = paddle.nn.RNN(cell)(paddle.flip(x, [1]))
        np.testing.assert_allclose(yr.numpy(), paddle.flip(yf, [1]).numpy(), atol=1e-6)

    def test_birnn_with_lstm_cells(self):
        bi = paddle.nn.BiRNN(paddle.nn.LSTMCell(5, 6), paddle.nn.LSTMCell(5, 6))
        x = paddle.randn([3, 4, 5])
        x.stop_gradient = False
        y, (sf, sb) = bi(x)
        self.assertEqual(y.shape, [3, 4, 12])
        self.assertEqual((sf[0].shape, sf[1].shape, sb[0].shape), ([3, 6], [3, 6], [3, 6]))
        y.sum().backward()
        self.assertEqual(x.grad.shape, [3, 4, 5])
        self.assertIsNotNone(bi.cell_bw.weight_ih.grad)


class TestTransformer(TorchCase):
    def test_doc_example_shapes(self):
        enc_input = paddle.rand((2, 4, 128))
        dec_input = paddle.rand((2, 6, 128))
        transformer = paddle.nn.Transformer(128, 2, 4, 4, 512)
        out = transformer(enc_input, dec_input, paddle.rand((2, 2, 4, 4)),
                          paddle.rand((2, 2, 6, 6)), paddle.rand((2, 2, 6, 4)))
        self.assertEqual(out.shape, [2, 6, 128])
        layer = paddle.nn.TransformerDecoderLayer(128, 2, 512)
        dec = paddle.nn.TransformerDecoder(layer, 2)
        self.assertEqual(dec(dec_input, enc_input).shape, [2, 6, 128])
        self.assertEqual(len(dec.layers), 2)
        self.assertIsNot(dec.layers[0].linear1.weight, dec.layers[1].linear1.weight)
        mask = transformer.generate_square_subsequent_mask(3).numpy()
        self.assertEqual(mask.tolist(), [[0, -np.inf, -np.inf], [0, 0, -np.inf], [0, 0, 0]])
        pre = paddle.nn.Transformer(16, 2, 1, 1, 32, normalize_before=True)
        self.assertIsNotNone(pre.encoder.norm)
        self.assertIsNotNone(pre.decoder.norm)

    def test_incremental_decoding_with_caches(self):
        paddle.seed(0)
        dec = paddle.nn.TransformerDecoder(paddle.nn.TransformerDecoderLayer(16, 4, 32, 0.0), 2)
        dec.eval()
        mem, tgt = paddle.randn([2, 5, 16]), paddle.randn([2, 4, 16])
        mask = paddle.nn.Transformer(16, 4, 1, 1, 32).generate_square_subsequent_mask(4)
        full = dec(tgt, mem, tgt_mask=mask)
        cache = dec.gen_cache(mem)
        steps = []
        for t in range(4):
            out, cache = dec(tgt[:, t:t + 1], mem, cache=cache)
            steps.append(out)
        np.testing.assert_allclose(paddle.concat(steps, axis=1).numpy(), full.numpy(),
                                   atol=1e-6)
        self.assertEqual(cache[0][0].k.shape, [2, 4, 4, 4])     # 4 steps of keys
        self.assertEqual(cache[0][1].k.shape, [2, 4, 5, 4])     # memory's keys
        unmasked = dec(tgt, mem)
        self.assertGreater(float(np.abs(unmasked.numpy() - full.numpy()).max()), 1e-3)
        mha = paddle.nn.MultiHeadAttention(16, 4, need_weights=True)
        out, w, c = mha(tgt, tgt, tgt, None, mha.gen_cache(tgt, type=mha.Cache))
        self.assertEqual((out.shape, w.shape, c.k.shape), ([2, 4, 16], [2, 4, 4, 4],
                                                           [2, 4, 4, 4]))
        enc = paddle.nn.TransformerEncoder(paddle.nn.TransformerEncoderLayer(16, 4, 32), 2)
        out, caches = enc(tgt, cache=enc.gen_cache(tgt))
        self.assertEqual((out.shape, len(caches)), ([2, 4, 16], 2))

    @needs_torch
    def test_against_torch(self):
        paddle.seed(1)
        m = paddle.nn.Transformer(16, 4, 2, 2, 32, dropout=0.0)
        m.eval()
        t = torch.nn.Transformer(16, 4, 2, 2, 32, dropout=0.0, batch_first=True)
        t.eval()
        t.encoder.norm = None
        t.decoder.norm = None
        ps = {k: v.numpy() for k, v in m.state_dict().items()}
        sd = {}

        def mha(pp, tp):
            sd[tp + '.in_proj_weight'] = np.concatenate(
                [ps[pp + '.{}_proj.weight'.format(c)].T for c in 'qkv'])
            sd[tp + '.in_proj_bias'] = np.concatenate(
                [ps[pp + '.{}_proj.bias'.format(c)] for c in 'qkv'])
            sd[tp + '.out_proj.weight'] = ps[pp + '.out_proj.weight'].T
            sd[tp + '.out_proj.bias'] = ps[pp + '.out_proj.bias']
        for part in ('encoder', 'decoder'):
            for i in range(2):
                pp = '{}.layers.{}'.format(part, i)
                mha(pp + '.self_attn', pp + '.self_attn')
                if part == 'decoder':
                    mha(pp + '.cross_attn', pp + '.multihead_attn')
                for lin in ('linear1', 'linear2'):
                    sd[pp + '.' + lin + '.weight'] = ps[pp + '.' + lin + '.weight'].T
                    sd[pp + '.' + lin + '.bias'] = ps[pp + '.' + lin + '.bias']
                for nm in ('norm1', 'norm2', 'norm3')[:3 if part == 'decoder' else 2]:
                    sd[pp + '.' + nm + '.weight'] = ps[pp + '.' + nm + '.weight']
                    sd[pp + '.' + nm + '.bias'] = ps[pp + '.' + nm + '.bias']
        t.load_state_dict({k: torch.tensor(np.ascontiguousarray(v)) for k, v in sd.items()})
        src = self.rng.standard_normal((2, 5, 16)).astype('float32')
        tgt = self.rng.standard_normal((2, 4, 16)).astype('float32')
        mask = m.generate_square_subsequent_mask(4)
        y = m(paddle.to_tensor(src), paddle.to_tensor(tgt), tgt_mask=mask)
        ty = t(torch.tensor(src), torch.tensor(tgt), tgt_mask=torch.tensor(mask.numpy()))
        self.assertClose(y, ty, 1e-5)


class TestUtils(TorchCase):
    @needs_torch
    def test_weight_norm_against_torch(self):
        lin = paddle.nn.Linear(4, 3)
        paddle.nn.utils.weight_norm(lin, dim=0)
        self.assertEqual(sorted(n for n, _ in lin.named_parameters()),
                         ['bias', 'weight_g', 'weight_v'])
        self.assertEqual(lin.weight_g.shape, [4])
        tl = torch.nn.Linear(4, 3)
        tl.weight.data = torch.tensor(lin.weight_v.numpy().T.copy())
        tl.bias.data = torch.tensor(lin.bias.numpy())
        tl = torch.nn.utils.weight_norm(tl, dim=1)     # Paddle's [in, out] axis 0 is torch's 1
        x = self.rng.standard_normal((2, 4)).astype('float32')
        y, ty = lin(paddle.to_tensor(x)), tl(torch.tensor(x))
        self.assertClose(y, ty)
        y.sum().backward()
        ty.sum().backward()
        self.assertClose(lin.weight_g.grad, tl.weight_g.grad.reshape(-1), 1e-5)
        self.assertClose(lin.weight_v.grad, tl.weight_v.grad.T, 1e-5)
        paddle.nn.utils.remove_weight_norm(lin)
        self.assertEqual(sorted(n for n, _ in lin.named_parameters()), ['bias', 'weight'])
        self.assertClose(lin(paddle.to_tensor(x)), ty)
        with self.assertRaises(ValueError):
            paddle.nn.utils.remove_weight_norm(lin)

    def test_spectral_norm(self):
        lin = paddle.nn.utils.spectral_norm(paddle.nn.Linear(6, 5), n_power_iterations=30)
        y = lin(paddle.randn([2, 6]))
        self.assertAlmostEqual(float(np.linalg.norm(lin.weight.numpy(), 2)), 1.0, places=4)
        self.assertEqual(sorted(n for n, _ in lin.named_buffers()), ['weight_u', 'weight_v'])
        y.sum().backward()
        self.assertEqual(lin.weight_orig.grad.shape, [6, 5])
        x = paddle.rand((2, 8, 8, 8))
        sn = paddle.nn.SpectralNorm(x.shape, dim=1, power_iters=30)
        out = np.transpose(sn(x).numpy(), (1, 0, 2, 3)).reshape(8, -1)
        self.assertAlmostEqual(float(np.linalg.norm(out, 2)), 1.0, places=4)

    @needs_torch
    def test_clip_grad_norm_against_torch(self):
        for nt in (2.0, 1.0, float('inf'), 3.0):
            arrs = [self.rng.standard_normal((3, 4)).astype('float32') for _ in range(2)]
            ps, ts = _pair(arrs)
            gs = [self.rng.standard_normal((3, 4)).astype('float32') for _ in range(2)]
            sum(paddle.sum(p * paddle.to_tensor(g)) for p, g in zip(ps, gs)).backward()
            sum(torch.sum(t * torch.tensor(g)) for t, g in zip(ts, gs)).backward()
            n1 = paddle.nn.utils.clip_grad_norm_(ps, 1.0, nt)
            n2 = torch.nn.utils.clip_grad_norm_(ts, 1.0, nt)
            self.assertAlmostEqual(float(n1), float(n2), places=4)
            for p, t in zip(ps, ts):
                self.assertClose(p.grad, t.grad, 1e-5)
        p = paddle.to_tensor([1.0, 2.0], stop_gradient=False)
        (p * float('inf')).sum().backward()
        with self.assertRaises(RuntimeError):
            paddle.nn.utils.clip_grad_norm_([p], 1.0, error_if_nonfinite=True)

    def test_parameters_to_vector(self):
        m = paddle.nn.Linear(3, 2)
        v = paddle.nn.utils.parameters_to_vector(m.parameters())
        self.assertEqual(v.shape, [8])
        paddle.nn.utils.vector_to_parameters(v * 2, m.parameters())
        np.testing.assert_allclose(paddle.nn.utils.parameters_to_vector(m.parameters()).numpy(),
                                   2 * v.numpy())
        with self.assertRaises(ValueError):
            paddle.nn.utils.vector_to_parameters(paddle.ones([5]), m.parameters())


class TestEinsum(TorchCase):
    def test_doc_examples_against_numpy(self):
        x, y = paddle.rand([4]), paddle.rand([5])
        a, b = paddle.rand([2, 3, 2]), paddle.rand([2, 2, 3])
        cases = [('i->', [x]), ('i,i->', [x, x]), ('i,j->ij', [x, y]), ('ijk->kji', [a]),
                 ('ijk, ikl->ijl', [a, b]), ('...jk->...kj', [a]), ('...jk, ...kl->...jl', [a, b])]
        for eq, ops in cases:
            got = paddle.einsum(eq, *ops)
            want = np.einsum(eq.replace(' ', ''), *[o.numpy() for o in ops])
            np.testing.assert_allclose(got.numpy(), want, rtol=1e-5, atol=1e-6, err_msg=eq)

    @needs_torch
    def test_against_torch_with_gradients(self):
        cases = [('ii->i', [(4, 4)]), ('ii', [(4, 4)]), ('bij,bjk->bik', [(2, 3, 4), (2, 4, 5)]),
                 ('...ij,...jk', [(2, 1, 3, 4), (5, 4, 2)]), ('ijk->', [(2, 3, 4)]),
                 ('bhqd,bhkd->bhqk', [(2, 3, 5, 4), (2, 3, 6, 4)]),
                 ('i,ij,jk->k', [(3,), (3, 4), (4, 5)]),
                 ('abc,cd,bd->a', [(2, 3, 4), (4, 5), (3, 5)]),
                 ('ij,kj', [(3, 4), (5, 4)]), ('iij->j', [(3, 3, 2)]), ('ij,jk', [(1, 4), (4, 5)])]
        for eq, shapes in cases:
            arrs = [self.rng.standard_normal(s) for s in shapes]
            self.check(lambda *o: paddle.einsum(eq, *o), lambda *o: torch.einsum(eq, *o), arrs,
                       1e-10, msg=eq)

    def test_errors(self):
        for eq, ops in (('ij,jk', [paddle.rand([2, 3])]), ('ij->k', [paddle.rand([2, 3])]),
                        ('ij', [paddle.rand([2])]),
                        ('ij,jk', [paddle.rand([2, 3]), paddle.rand([4, 5])]),
                        ('i$', [paddle.rand([2, 3])])):
            with self.assertRaises(ValueError, msg=eq):
                paddle.einsum(eq, *ops)


class TestMoreFunctional(TorchCase):
    @needs_torch
    def test_unfold_fold_against_torch(self):
        x = self.rng.standard_normal((2, 3, 7, 8)).astype('float32')
        for k, st, p, d in ((3, 1, 0, 1), ((2, 3), 2, 1, 2)):
            self.check(lambda x: F.unfold(x, k, st, p, d),
                       lambda x: TF.unfold(x, k, dilation=d, padding=p, stride=st), [x])
            cols = TF.unfold(torch.tensor(x), k, dilation=d, padding=p, stride=st).numpy()
            self.check(lambda c: F.fold(c, [7, 8], k, st, p, d),
                       lambda c: TF.fold(c, (7, 8), k, dilation=d, padding=p, stride=st), [cols])
        self.assertEqual(paddle.nn.Unfold(2)(paddle.rand([1, 3, 4, 4])).shape, [1, 12, 9])
        with self.assertRaises(ValueError):
            F.fold(paddle.rand([1, 12, 8]), [4, 4], 2)

    @needs_torch
    def test_adaptive_max_pool_any_size_against_torch(self):
        x = self.rng.standard_normal((2, 3, 7, 10)).astype('float32')
        self.check(lambda x: F.adaptive_max_pool2d(x, [3, 4]),
                   lambda x: TF.adaptive_max_pool2d(x, (3, 4)), [x])
        _, mask = F.adaptive_max_pool2d(paddle.to_tensor(x), [3, 4], return_mask=True)
        _, tmask = TF.adaptive_max_pool2d(torch.tensor(x), (3, 4), return_indices=True)
        np.testing.assert_array_equal(mask.numpy(), tmask.numpy())
        x1 = x[:, :, 0].copy()
        self.check(lambda x: F.adaptive_max_pool1d(x, 4), lambda x: TF.adaptive_max_pool1d(x, 4),
                   [x1])
        self.assertEqual(paddle.nn.AdaptiveMaxPool1D(3)(paddle.to_tensor(x1)).shape, [2, 3, 3])

    @needs_torch
    def test_lp_pool_unpool_bilinear_against_torch(self):
        x = self.rng.standard_normal((2, 3, 8, 9)).astype('float32')
        self.check(lambda x: F.lp_pool2d(x, 2, 3, 2), lambda x: TF.lp_pool2d(x, 2, 3, 2), [x],
                   1e-4)
        x1 = np.abs(x[:, :, 0]) + 0.1
        self.check(lambda x: F.lp_pool1d(x, 3, 2), lambda x: TF.lp_pool1d(x, 3, 2), [x1], 1e-4)
        y, m = F.max_pool2d(paddle.to_tensor(x), 2, 2, return_mask=True)
        ty, tm = TF.max_pool2d(torch.tensor(x), 2, 2, return_indices=True)
        self.assertClose(F.max_unpool2d(y, m, 2, 2, output_size=[8, 9]),
                         TF.max_unpool2d(ty, tm, 2, 2, output_size=[8, 9]))
        y8, m8 = F.max_pool2d(paddle.to_tensor(x[:, :, :, :8].copy()), 2, 2, return_mask=True)
        self.assertEqual(paddle.nn.MaxUnPool2D(2)(y8, m8).shape, [2, 3, 8, 8])
        with self.assertRaises(ValueError):
            F.max_unpool2d(y, m, 2, 2, output_size=[2, 2])
        w = self.rng.standard_normal((5, 3, 4)).astype('float32')
        a = self.rng.standard_normal((2, 3)).astype('float32')
        b = self.rng.standard_normal((2, 4)).astype('float32')
        bias = self.rng.standard_normal((5,)).astype('float32')
        self.check(F.bilinear, TF.bilinear, [a, b, w, bias], 1e-5)

    def test_sync_batch_norm_flash_attention_pad3d(self):
        net = paddle.nn.Sequential(paddle.nn.Conv2D(3, 4, 3), paddle.nn.BatchNorm2D(4))
        bn = net[1]
        net = paddle.nn.SyncBatchNorm.convert_sync_batchnorm(net)
        self.assertIsInstance(net[1], paddle.nn.SyncBatchNorm)
        self.assertIs(net[1].weight, bn.weight)
        self.assertEqual(net(paddle.randn([2, 3, 5, 5])).shape, [2, 4, 3, 3])
        q = paddle.randn([2, 5, 2, 4])
        out, sm = F.flash_attention(q, q, q, causal=True, return_softmax=True)
        ref = F.scaled_dot_product_attention(q, q, q, is_causal=True)
        np.testing.assert_allclose(out.numpy(), ref.numpy(), atol=1e-6)
        self.assertEqual(sm.shape, [2, 2, 5, 5])
        self.assertEqual(float(sm.numpy()[0, 0, 0, 1:].sum()), 0.0)
        from paddle.nn.functional.flash_attention import flash_attention
        self.assertIs(flash_attention, F.flash_attention)
        self.assertEqual(paddle.nn.Pad3D([1, 1, 0, 0, 2, 0])(paddle.rand([1, 1, 2, 3, 4])).shape,
                         [1, 1, 4, 3, 6])

    @needs_torch
    def test_local_response_norm_against_torch(self):
        x = self.rng.standard_normal((2, 6, 4, 5)).astype('float32')
        for size in (2, 3, 5):
            self.check(lambda x: F.local_response_norm(x, size),
                       lambda x: TF.local_response_norm(x, size), [x], 1e-5)

    def test_scaled_dot_product_attention(self):
        q = self.rng.standard_normal((2, 5, 3, 4)).astype('float32')
        k = self.rng.standard_normal((2, 6, 3, 4)).astype('float32')
        v = self.rng.standard_normal((2, 6, 3, 4)).astype('float32')
        for causal in (False, True):
            out = F.scaled_dot_product_attention(paddle.to_tensor(q), paddle.to_tensor(k),
                                                 paddle.to_tensor(v), is_causal=causal)
            s = np.einsum('bqhd,bkhd->bhqk', q, k) / 2.0
            if causal:
                s = np.where(np.tril(np.ones((5, 6))) > 0, s, -np.inf)
            w = np.exp(s - s.max(-1, keepdims=True))
            w /= w.sum(-1, keepdims=True)
            np.testing.assert_allclose(out.numpy(), np.einsum('bhqk,bkhd->bqhd', w, v),
                                       atol=1e-5)

    def test_small_functions(self):
        np.testing.assert_array_equal(
            F.sequence_mask(paddle.to_tensor([3, 1]), 4).numpy(), [[1, 1, 1, 0], [1, 0, 0, 0]])
        self.assertEqual(F.sequence_mask(paddle.to_tensor([10, 9, 8])).shape, [3, 10])
        x = paddle.to_tensor(np.arange(8, dtype='float32').reshape(1, 4, 1, 2))
        np.testing.assert_array_equal(F.maxout(x, 2).numpy().ravel(), [2, 3, 6, 7])
        np.testing.assert_array_equal(F.thresholded_relu(paddle.to_tensor([2., 0., 1.])).numpy(),
                                      [2., 0., 0.])
        hard = F.gumbel_softmax(paddle.randn([4, 5]), hard=True).numpy()
        np.testing.assert_array_equal(hard.sum(1), np.ones(4))
        self.assertEqual(set(np.unique(hard)), {0.0, 1.0})
        np.testing.assert_allclose(
            paddle.nn.Softmax2D()(paddle.rand([1, 2, 3, 3])).sum(1).numpy(), np.ones((1, 3, 3)),
            rtol=1e-6)
        self.assertEqual(paddle.nn.ZeroPad2D([1, 0, 2, 0])(paddle.rand([1, 3, 4, 4])).shape,
                         [1, 3, 6, 5])
        ev = paddle.nn.RReLU(0.1, 0.3)
        ev.eval()
        np.testing.assert_allclose(ev(paddle.to_tensor([-1.0, 2.0])).numpy(), [-0.2, 2.0])
        pd = paddle.nn.ParameterDict({'a': paddle.create_parameter([2], 'float32')})
        self.assertEqual((len(pd), len(pd.parameters())), (1, 1))
        t = F.temporal_shift(paddle.to_tensor(np.arange(1, 9, dtype='float32')
                                              .reshape(2, 4, 1, 1)), 2, 0.25)
        np.testing.assert_array_equal(t.numpy().reshape(2, 4), [[0, 6, 3, 4], [1, 0, 7, 8]])

    def test_sequential_append_insert_extend(self):
        s = paddle.nn.Sequential(paddle.nn.Linear(2, 3), paddle.nn.ReLU())
        s.append(paddle.nn.Linear(3, 4))
        s.insert(1, paddle.nn.Tanh())
        s.extend(paddle.nn.Sequential(paddle.nn.Sigmoid()))
        self.assertEqual([type(m).__name__ for m in s],
                         ['Linear', 'Tanh', 'ReLU', 'Linear', 'Sigmoid'])
        self.assertEqual(list(s.state_dict().keys()), ['0.weight', '0.bias', '3.weight',
                                                       '3.bias'])
        self.assertEqual(s(paddle.ones([1, 2])).shape, [1, 4])
        with self.assertRaises(IndexError):
            s.insert(9, paddle.nn.ReLU())


@needs_torch
class TestThreeD(TorchCase):
    def test_conv3d_against_torch(self):
        x = self.rng.standard_normal((2, 4, 6, 7, 8)).astype('float32')
        for oc, k, st, p, d, g in ((6, 3, 1, 1, 1, 1), (4, (2, 3, 2), (2, 1, 2), (1, 0, 1),
                                                        (1, 2, 1), 2), (8, 3, 2, 0, 1, 4)):
            kk = (k,) * 3 if isinstance(k, int) else k
            w = (self.rng.standard_normal((oc, 4 // g) + kk) * 0.2).astype('float32')
            b = self.rng.standard_normal(oc).astype('float32')
            self.check(lambda x, w, b: F.conv3d(x, w, b, st, p, d, g),
                       lambda x, w, b: TF.conv3d(x, w, b, st, p, d, g), [x, w, b], 1e-4,
                       msg=str((oc, k, st, p, d, g)))
        w = (self.rng.standard_normal((4, 3, 3, 3, 3)) * 0.2).astype('float32')
        self.check(lambda x, w: F.conv3d_transpose(x, w, stride=2, padding=1, output_padding=1),
                   lambda x, w: TF.conv_transpose3d(x, w, stride=2, padding=1, output_padding=1),
                   [x, w], 1e-4)
        m = paddle.nn.Conv3D(4, 6, 3, padding=1)
        self.assertEqual(m(paddle.to_tensor(x)).shape, [2, 6, 6, 7, 8])
        self.assertEqual(paddle.nn.Conv3DTranspose(4, 2, 2, stride=2)(paddle.to_tensor(x)).shape,
                         [2, 2, 12, 14, 16])
        with self.assertRaises(ValueError):
            F.conv3d(paddle.to_tensor(x), paddle.randn([2, 3, 3, 3, 3]))

    def test_pool3d_against_torch(self):
        x = self.rng.standard_normal((2, 4, 6, 7, 8)).astype('float32')
        for kw in (dict(kernel_size=2), dict(kernel_size=3, stride=2, padding=1),
                   dict(kernel_size=(3, 2, 3), stride=(2, 1, 2), padding=(1, 0, 1),
                        ceil_mode=True)):
            self.check(lambda x: F.max_pool3d(x, **kw), lambda x: TF.max_pool3d(x, **kw), [x],
                       msg=str(kw))
            self.check(lambda x: F.avg_pool3d(x, **kw), lambda x: TF.avg_pool3d(
                x, count_include_pad=False, **kw), [x], msg=str(kw))
            if not kw.get('ceil_mode'):
                self.check(lambda x: F.avg_pool3d(x, exclusive=False, **kw),
                           lambda x: TF.avg_pool3d(x, count_include_pad=True, **kw), [x])
        self.check(lambda x: F.adaptive_avg_pool3d(x, [4, 3, 5]),
                   lambda x: TF.adaptive_avg_pool3d(x, (4, 3, 5)), [x])
        self.check(lambda x: F.adaptive_max_pool3d(x, [4, 3, 5]),
                   lambda x: TF.adaptive_max_pool3d(x, (4, 3, 5)), [x])
        self.assertEqual(paddle.nn.MaxPool3D(2)(paddle.to_tensor(x)).shape, [2, 4, 3, 3, 4])
        self.assertEqual(paddle.nn.AdaptiveAvgPool3D(1)(paddle.to_tensor(x)).shape,
                         [2, 4, 1, 1, 1])

    def test_avg_pool3d_ceil_mode_divides_by_the_kernel(self):
        # Paddle divides by the whole kernel when exclusive=False, even for windows
        # that ceil_mode cuts short (PyTorch does not)
        x = self.rng.standard_normal((1, 1, 5, 5, 5)).astype('float32')
        y = F.avg_pool3d(paddle.to_tensor(x), 2, 2, 0, ceil_mode=True, exclusive=False).numpy()
        ref = np.zeros((3, 3, 3))
        for i in range(3):
            for j in range(3):
                for k in range(3):
                    ref[i, j, k] = x[0, 0, 2 * i:2 * i + 2, 2 * j:2 * j + 2,
                                     2 * k:2 * k + 2].sum() / 8
        np.testing.assert_allclose(y[0, 0], ref, atol=1e-6)


class TestBeamSearch(unittest.TestCase):
    def test_doc_example_shape(self):
        emb = paddle.nn.Embedding(100, 32)
        cell = paddle.nn.GRUCell(input_size=32, hidden_size=32)
        decoder = paddle.nn.BeamSearchDecoder(cell, start_token=0, end_token=1, beam_size=4,
                                              embedding_fn=emb,
                                              output_fn=paddle.nn.Linear(32, 32))
        enc = paddle.ones((4, 8, 32), dtype=paddle.get_default_dtype())
        outputs = paddle.nn.dynamic_decode(decoder=decoder,
                                           inits=cell.get_initial_states(enc), max_step_num=10)
        self.assertEqual(outputs[0].shape, [4, 11, 4])
        ids, states, lengths = paddle.nn.dynamic_decode(
            decoder, inits=cell.get_initial_states(enc), max_step_num=3, return_length=True)
        self.assertEqual((ids.shape, lengths.shape), ([4, 4, 4], [4, 4]))

    def test_exhaustive_beam_equals_brute_force(self):
        # a beam as wide as every 3-token sequence must find the best ones
        paddle.seed(3)
        vocab, end = 5, 4
        emb, out = paddle.nn.Embedding(vocab, 8), paddle.nn.Linear(8, vocab)
        cell = paddle.nn.GRUCell(8, 8)
        dec = paddle.nn.BeamSearchDecoder(cell, 0, end, beam_size=vocab ** 3, embedding_fn=emb,
                                          output_fn=out)
        h0 = paddle.randn([1, 8])
        ids, st = paddle.nn.dynamic_decode(dec, inits=h0, max_step_num=2)

        def score(seq):
            h, inp, total = h0, paddle.to_tensor([0]), 0.0
            for tok in seq:
                o, h = cell(emb(inp), h)
                total += F.log_softmax(out(o)).numpy()[0][tok]
                inp = paddle.to_tensor([tok])
                if tok == end:
                    break
            return total
        seqs = [s for s in itertools.product(range(vocab), repeat=3)
                if all(s[j] == end for j in range(3) if end in s[:j])]
        ranked = sorted(seqs, key=score, reverse=True)
        got = ids.numpy()[0].T                                   # [beam, time]
        for k in range(5):
            self.assertEqual(tuple(got[k]), ranked[k])
            self.assertAlmostEqual(float(st.log_probs.numpy()[0, k]), score(ranked[k]), places=4)

    def test_gather_tree_doc_example(self):
        ids = paddle.to_tensor([[[2, 2], [6, 1]], [[3, 9], [6, 1]], [[0, 1], [9, 0]]])
        parents = paddle.to_tensor([[[0, 0], [1, 1]], [[1, 0], [1, 0]], [[0, 0], [0, 1]]])
        self.assertEqual(F.gather_tree(ids, parents).numpy().tolist(),
                         [[[2, 2], [1, 6]], [[3, 3], [6, 1]], [[0, 1], [9, 0]]])
        with self.assertRaises(ValueError):
            F.gather_tree(ids, paddle.to_tensor([[[5, 0], [0, 0]]] * 3))


if __name__ == '__main__':
    unittest.main()
