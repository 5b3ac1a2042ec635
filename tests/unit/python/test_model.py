"""paddle.Model (prepare/fit/evaluate/predict/save/load), callbacks, progress
lines, paddle.summary, paddle.metric and paddle.utils.run_check."""
import io
import os
import tempfile
import unittest
from contextlib import redirect_stdout

import numpy as np

import paddle
import paddle.nn as nn
from paddle.static import InputSpec


class Blobs(paddle.io.Dataset):
    """Two well separated Gaussian blobs in 4-D, labels int64 [1]."""

    def __init__(self, n=64, seed=0):
        rs = np.random.RandomState(seed)
        self.y = rs.randint(0, 2, size=n)
        self.x = (rs.randn(n, 4) * 0.3 + self.y[:, None] * 2.0 - 1.0).astype('float32')

    def __getitem__(self, i):
        return self.x[i], np.array([self.y[i]], 'int64')

    def __len__(self):
        return len(self.y)


def make_model(lr=0.05, metrics=True, sched=None):
    paddle.seed(0)
    net = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    model = paddle.Model(net)
    opt = paddle.optimizer.Adam(learning_rate=sched or lr, parameters=net.parameters())
    model.prepare(opt, nn.CrossEntropyLoss(), paddle.metric.Accuracy() if metrics else None)
    return model


def run(fn, *a, **kw):
    buf = io.StringIO()
    with redirect_stdout(buf):
        r = fn(*a, **kw)
    return r, buf.getvalue()


class Recorder(paddle.callbacks.Callback):
    def __init__(self):
        super().__init__()
        self.events = []

    def on_train_begin(self, logs=None):
        self.events.append('train_begin')

    def on_epoch_begin(self, epoch, logs=None):
        self.events.append('epoch_begin%d' % epoch)

    def on_train_batch_end(self, step, logs=None):
        self.events.append('batch')
        self.last_logs = dict(logs)

    def on_eval_end(self, logs=None):
        self.events.append('eval_end')

    def on_train_end(self, logs=None):
        self.events.append('train_end')


class TestFit(unittest.TestCase):
    def test_fit_prints_paddle_progress_lines_verbose_2(self):
        model = make_model()
        _, out = run(model.fit, Blobs(64), epochs=2, batch_size=16, verbose=2, log_freq=2)
        lines = out.strip().split('\n')
        self.assertEqual(lines[0], 'The loss value printed in the log is the current step, '
                                   'and the metric is the average value of previous steps.')
        self.assertEqual(lines[1], 'Epoch 1/2')
        self.assertRegex(lines[2], r'^step 2/4 - loss: \d\.\d{4} - acc: \d\.\d{4} - '
                                   r'\d+(us|ms|s)/step$')
        self.assertRegex(lines[3], r'^step 4/4 - loss: ')
        self.assertEqual(lines[4], 'Epoch 2/2')

    def test_fit_verbose_1_draws_a_bar_and_eval_lines(self):
        model = make_model()
        _, out = run(model.fit, Blobs(64), Blobs(32, seed=1), epochs=1, batch_size=16,
                     verbose=1)
        self.assertRegex(out, r'step 4/4 \[={30}\] - loss: \d\.\d{4} - acc: \d\.\d{4} - '
                              r'\d+(us|ms|s)/step')
        self.assertIn('Eval begin...', out)
        self.assertIn('Eval samples: 32', out)

    def test_fit_verbose_0_is_silent_and_learns(self):
        model = make_model()
        _, out = run(model.fit, Blobs(128), epochs=5, batch_size=16, verbose=0)
        self.assertEqual(out, '')
        res, _ = run(model.evaluate, Blobs(64, seed=2), batch_size=16, verbose=0)
        self.assertEqual(sorted(res.keys()), ['acc', 'loss'])
        self.assertIsInstance(res['loss'], list)
        self.assertGreater(res['acc'], 0.9)

    def test_callbacks_called_in_order_with_logs(self):
        model = make_model()
        rec = Recorder()
        run(model.fit, Blobs(32), Blobs(16), epochs=2, batch_size=16, verbose=0,
            callbacks=[rec])
        self.assertEqual(rec.events, ['train_begin', 'epoch_begin0', 'batch', 'batch',
                                      'eval_end', 'epoch_begin1', 'batch', 'batch', 'eval_end',
                                      'train_end'])
        self.assertIn('loss', rec.last_logs)
        self.assertIn('acc', rec.last_logs)
        self.assertEqual(rec.last_logs['batch_size'], 16)

    def test_lr_scheduler_is_stepped_every_batch(self):
        sched = paddle.optimizer.lr.StepDecay(0.05, step_size=100)
        model = make_model(sched=sched)
        run(model.fit, Blobs(64), epochs=2, batch_size=16, verbose=0)
        self.assertEqual(sched.last_epoch, 8)

    def test_early_stopping_stops_training(self):
        model = make_model(lr=0.0)
        es = paddle.callbacks.EarlyStopping(monitor='loss', patience=0, verbose=0,
                                            save_best_model=False)
        rec = Recorder()
        run(model.fit, Blobs(32), Blobs(16), epochs=10, batch_size=16, verbose=0,
            callbacks=[es, rec])
        self.assertLess(rec.events.count('eval_end'), 10)

    def test_model_checkpoint_saves_every_epoch_and_final(self):
        model = make_model()
        with tempfile.TemporaryDirectory() as d:
            run(model.fit, Blobs(32), epochs=2, batch_size=16, verbose=0, save_dir=d)
            for name in ('0', '1', 'final'):
                self.assertTrue(os.path.exists(os.path.join(d, name + '.pdparams')), name)
                self.assertTrue(os.path.exists(os.path.join(d, name + '.pdopt')), name)

    def test_fit_without_prepare_or_data_raises(self):
        model = paddle.Model(nn.Linear(4, 2))
        with self.assertRaises(RuntimeError):
            model.fit(Blobs(8), verbose=0)
        with self.assertRaises(ValueError):
            make_model().fit(None)
        with self.assertRaises(TypeError):
            paddle.Model(nn.Linear(2, 2)).prepare(optimizer='adam')
        with self.assertRaises(TypeError):
            paddle.Model(42)

    def test_fit_accepts_a_dataloader(self):
        model = make_model()
        loader = paddle.io.DataLoader(Blobs(48), batch_size=16, shuffle=True)
        _, out = run(model.fit, loader, epochs=1, verbose=2, log_freq=1)
        self.assertIn('step 3/3', out)


class TestAmpConfigs(unittest.TestCase):
    def _fit(self, amp_configs):
        paddle.seed(0)
        net = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
        model = paddle.Model(net)
        opt = paddle.optimizer.Adam(learning_rate=0.05, parameters=net.parameters())
        model.prepare(opt, nn.CrossEntropyLoss(), paddle.metric.Accuracy(),
                      amp_configs=amp_configs)
        model.fit(Blobs(), epochs=3, batch_size=16, verbose=0)
        return model, model.evaluate(Blobs(seed=1), batch_size=32, verbose=0)

    def test_o1_o2_bf16_and_fp16_learn(self):
        for cfg in ('O1', {'level': 'O1', 'dtype': 'bfloat16'},
                    {'level': 'O2', 'dtype': 'bfloat16'},
                    {'level': 'O2', 'init_loss_scaling': 1024.0}):
            model, res = self._fit(cfg)
            self.assertGreater(res['acc'], 0.9, cfg)
        # O2 casts the Linear weights to the AMP dtype (master weights in float32)
        self.assertEqual(model.network[0].weight.dtype, paddle.float16)
        self.assertEqual(model._amp['scaler'].get_init_loss_scaling(), 1024.0)

    def test_o0_and_bad_configs(self):
        model, res = self._fit('O0')
        self.assertIsNone(model._amp)
        net = nn.Linear(4, 2)
        m = paddle.Model(net)
        opt = paddle.optimizer.SGD(parameters=net.parameters())
        for bad, err in (('O3', ValueError), ({'levl': 'O1'}, ValueError),
                         ({'dtype': 'int8'}, ValueError), (3, TypeError)):
            with self.assertRaises(err):
                m.prepare(opt, nn.CrossEntropyLoss(), amp_configs=bad)


class TestPredictEvaluate(unittest.TestCase):
    def test_predict_returns_per_output_lists(self):
        model = make_model()
        outs, out = run(model.predict, Blobs(40), batch_size=16, verbose=1)
        self.assertIn('Predict begin...', out)
        self.assertIn('Predict samples: 40', out)
        self.assertEqual(len(outs), 1)
        self.assertEqual([o.shape for o in outs[0]], [(16, 2), (16, 2), (8, 2)])
        stacked, _ = run(model.predict, Blobs(40), batch_size=16, stack_outputs=True,
                         verbose=0)
        self.assertEqual(stacked[0].shape, (40, 2))

    def test_batch_level_methods(self):
        model = make_model()
        ds = Blobs(8)
        x = np.stack([ds[i][0] for i in range(8)])
        y = np.stack([ds[i][1] for i in range(8)])
        loss, metrics = model.train_batch([x], [y])
        self.assertEqual(len(loss), 1)
        self.assertEqual(np.asarray(loss[0]).shape, ())
        self.assertEqual(len(metrics), 1)
        ev = model.eval_batch([x], [y])
        self.assertEqual(len(ev), 2)
        pred = model.predict_batch([x])
        self.assertEqual(pred[0].shape, (8, 2))

    def test_evaluate_with_input_specs(self):
        paddle.seed(0)
        net = nn.Linear(4, 2)
        model = paddle.Model(net, inputs=[InputSpec([None, 4], 'float32', 'x')],
                             labels=[InputSpec([None, 1], 'int64', 'label')])
        model.prepare(loss=nn.CrossEntropyLoss(),
                      metrics=paddle.metric.Accuracy(topk=(1, 2)))
        res, out = run(model.evaluate, Blobs(20), batch_size=10, verbose=2)
        self.assertEqual(sorted(res), ['acc_top1', 'acc_top2', 'loss'])
        self.assertEqual(res['acc_top2'], 1.0)
        self.assertRegex(out, r'step 2/2 - loss: [0-9.]+ - acc_top1: [0-9.]+ - acc_top2: '
                              r'1\.0000 - ')


class TestSaveLoad(unittest.TestCase):
    def test_save_load_round_trip_gives_identical_predictions(self):
        model = make_model()
        run(model.fit, Blobs(32), epochs=2, batch_size=16, verbose=0)
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, 'sub', 'ckpt')
            model.save(path)
            other = make_model(lr=0.3)
            other.load(path)
            a, _ = run(model.predict, Blobs(16), batch_size=16, stack_outputs=True, verbose=0)
            b, _ = run(other.predict, Blobs(16), batch_size=16, stack_outputs=True, verbose=0)
            np.testing.assert_array_equal(a[0], b[0])
            # the optimizer state came back too: one more identical step each
            ds = Blobs(16, seed=5)
            x = np.stack([ds[i][0] for i in range(16)])
            y = np.stack([ds[i][1] for i in range(16)])
            model.train_batch([x], [y])
            other._optimizer.set_lr(0.05)
            other.train_batch([x], [y])
            np.testing.assert_allclose(model.network[0].weight.numpy(),
                                       other.network[0].weight.numpy(), rtol=1e-5,
                                       atol=1e-6)
            with self.assertRaises(FileNotFoundError):
                other.load(os.path.join(d, 'missing'))

    def test_load_skip_mismatch(self):
        model = make_model()
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, 'm')
            paddle.save({'0.weight': np.zeros((3, 3), 'float32'),
                         '0.bias': np.ones(8, 'float32')}, path + '.pdparams')
            import warnings
            with warnings.catch_warnings():
                warnings.simplefilter('ignore')
                model.load(path, skip_mismatch=True)
            np.testing.assert_array_equal(model.network[0].bias.numpy(), np.ones(8))
            with self.assertRaises(ValueError):
                model.load(path)


class TestSummary(unittest.TestCase):
    def test_summary_table_for_lenet(self):
        net = paddle.vision.models.LeNet()
        info, out = run(paddle.summary, net, (1, 1, 28, 28))
        self.assertEqual(info, {'total_params': 61610, 'trainable_params': 61610})
        lines = out.split('\n')
        self.assertEqual(lines[0], '-' * 75)
        self.assertEqual(lines[1].split(), ['Layer', '(type)', 'Input', 'Shape', 'Output',
                                            'Shape', 'Param', '#'])
        self.assertEqual(lines[2], '=' * 75)
        rows = [l.split() for l in lines[3:12]]
        self.assertRegex(rows[0][0], r'^Conv2D-\d+$')
        self.assertEqual(' '.join(rows[0][1:]), '[[1, 1, 28, 28]] [1, 6, 28, 28] 60')
        self.assertEqual(rows[3][-1], '2,416')
        self.assertEqual(rows[6][-1], '48,120')
        self.assertIn('Total params: 61,610', out)
        self.assertIn('Trainable params: 61,610', out)
        self.assertIn('Non-trainable params: 0', out)
        self.assertIn('Params size (MB): 0.24', out)
        self.assertIn('Estimated Total Size (MB): 0.35', out)
        self.assertTrue(net.training)

    def test_summary_counts_non_trainable_batchnorm_statistics(self):
        net = nn.Sequential(nn.Conv2D(1, 2, 3), nn.BatchNorm2D(2))
        info, out = run(paddle.summary, net, input=paddle.rand([1, 1, 5, 5]))
        self.assertEqual(info['total_params'], 20 + 8)
        self.assertEqual(info['trainable_params'], 20 + 4)
        with self.assertRaises(ValueError):
            paddle.summary(net)

    def test_model_summary_uses_input_spec(self):
        net = nn.Linear(4, 2)
        model = paddle.Model(net, inputs=[InputSpec([None, 4], 'float32', 'x')])
        info, out = run(model.summary)
        self.assertEqual(info['total_params'], 10)
        self.assertIn('[[1, 4]]', out)


class TestFlops(unittest.TestCase):
    def test_flops_of_linear_and_conv(self):
        n, out = run(paddle.flops, nn.Linear(4, 3), [2, 4])
        self.assertEqual(n, 4 * 2 * 3)
        self.assertIn('Total Flops: 24     Total Params: 15', out)
        conv = nn.Sequential(nn.Conv2D(1, 2, 3), nn.ReLU())
        n, _ = run(paddle.flops, conv, [1, 1, 5, 5])
        self.assertEqual(n, 2 * 3 * 3 * (9 + 1))


class TestMetric(unittest.TestCase):
    def test_accuracy_metric_topk(self):
        m = paddle.metric.Accuracy(topk=(1, 2))
        pred = paddle.to_tensor(np.array([[0.1, 0.7, 0.2], [0.5, 0.2, 0.3],
                                          [0.2, 0.3, 0.5], [0.6, 0.3, 0.1]], 'float32'))
        label = paddle.to_tensor(np.array([[1], [2], [1], [0]], 'int64'))
        correct = m.compute(pred, label)
        self.assertEqual(correct.shape, [4, 2])
        self.assertEqual(m.update(correct), [0.5, 1.0])
        self.assertEqual(m.accumulate(), [0.5, 1.0])
        self.assertEqual(m.name(), ['acc_top1', 'acc_top2'])
        m.reset()
        self.assertEqual(m.accumulate(), [0.0, 0.0])
        single = paddle.metric.Accuracy()
        self.assertEqual(single.name(), ['acc'])
        self.assertEqual(single.update(single.compute(pred, label)), 0.5)

    def test_accuracy_function_is_0d(self):
        pred = paddle.to_tensor(np.array([[0.1, 0.9], [0.8, 0.2], [0.3, 0.7]], 'float32'))
        label = paddle.to_tensor(np.array([[1], [1], [1]], 'int64'))
        acc = paddle.metric.accuracy(pred, label)
        self.assertEqual(acc.shape, [])
        self.assertAlmostEqual(float(acc), 2.0 / 3, places=6)
        self.assertAlmostEqual(float(paddle.metric.accuracy(pred, label, k=2)), 1.0)

    def test_precision_recall(self):
        p = paddle.metric.Precision()
        r = paddle.metric.Recall()
        preds = np.array([0.9, 0.8, 0.2, 0.7])
        labels = np.array([1, 0, 1, 1])
        p.update(preds, labels)
        r.update(preds, labels)
        self.assertAlmostEqual(p.accumulate(), 2 / 3)
        self.assertAlmostEqual(r.accumulate(), 2 / 3)


class TestRunCheck(unittest.TestCase):
    def test_run_check_prints_paddle_lines(self):
        _, out = run(paddle.utils.run_check)
        lines = out.strip().split('\n')
        self.assertEqual(lines[0].strip(), 'Running verify PaddlePaddle program ...')
        self.assertRegex(lines[1], r'^PaddlePaddle works well on 1 (CPU|GPU)\.$')
        self.assertEqual(lines[2], "PaddlePaddle is installed successfully! Let's start deep "
                                   "learning with PaddlePaddle now.")


class TestInputSpec(unittest.TestCase):
    def test_input_spec(self):
        s = InputSpec([None, 784], 'float32', 'x')
        self.assertEqual(s.shape, (-1, 784))
        self.assertEqual(s.name, 'x')
        self.assertIn('InputSpec(shape=(-1, 784)', repr(s))
        self.assertEqual(InputSpec.from_numpy(np.zeros((2, 3), 'int64')).dtype, 'int64')
        with self.assertRaises(TypeError):
            InputSpec('bad')


if __name__ == '__main__':
    unittest.main()
