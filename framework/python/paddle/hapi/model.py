"""paddle.Model: prepare / fit / evaluate / predict / save / load over a
dygraph network, with Paddle's callbacks and progress lines."""
import contextlib
import inspect
import numbers
import os

import numpy as np

from paddle._lazy import paddle as _paddle
from ..io import DataLoader, Dataset, IterableDataset
from .callbacks import config_callbacks

__all__ = ['Model']


def to_list(value):
    if value is None:
        return []
    if isinstance(value, (list, tuple)):
        return list(value)
    return [value]


def _to_numpy(x):
    paddle = _paddle()
    if isinstance(x, paddle.Tensor):
        return x.numpy()
    return np.asarray(x)


def _to_tensor(x):
    paddle = _paddle()
    if isinstance(x, paddle.Tensor):
        return x
    return paddle.to_tensor(np.asarray(x))


def _flatten(nest):
    out = []
    for x in nest if isinstance(nest, (list, tuple)) else [nest]:
        if isinstance(x, (list, tuple)):
            out.extend(_flatten(x))
        else:
            out.append(x)
    return out


def _loss_value(l):
    a = np.asarray(l)
    return float(a.reshape(-1)[0]) if a.size else float('nan')


class Model:
    """Model(network, inputs=None, labels=None): a high-level wrapper that
    trains, evaluates and predicts with a Layer. inputs/labels are
    InputSpecs (optional in dygraph: without them the number of forward()
    arguments decides how a batch splits into inputs and labels)."""

    def __init__(self, network, inputs=None, labels=None):
        paddle = _paddle()
        if not isinstance(network, paddle.nn.Layer):
            raise TypeError("network should be a paddle.nn.Layer, got {}".format(
                type(network).__name__))
        self.network = network
        self._inputs = self._verify_spec(inputs, True)
        self._labels = self._verify_spec(labels, False)
        self._loss = None
        self._loss_weights = None
        self._optimizer = None
        self._metrics = []
        self._accumulate = 1
        self.stop_training = False
        self._test_dataloader = None
        self.mode = 'train'

    def _verify_spec(self, specs, is_input):
        if specs is None:
            if not is_input:
                return []
            n = 0
            try:
                sig = inspect.signature(self.network.forward)
                for p in sig.parameters.values():
                    if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and \
                            p.default is p.empty:
                        n += 1
                    elif p.kind == p.VAR_POSITIONAL:
                        n = max(n, 1)
            except (TypeError, ValueError):
                n = 1
            return [None] * max(n, 1)
        if isinstance(specs, dict):
            return list(specs.values())
        return to_list(specs)

    # ---- configuration ------------------------------------------------------------
    _amp = None

    def prepare(self, optimizer=None, loss=None, metrics=None, amp_configs=None):
        """Set the optimizer, the loss (a Layer or callable of
        (*outputs, *labels)) and the metrics (paddle.metric.Metric objects)."""
        from ..metric import Metric
        from ..optimizer import Optimizer
        if optimizer is not None and not isinstance(optimizer, Optimizer):
            raise TypeError("'optimizer' must be object of class `paddle.optimizer.Optimizer`")
        if loss is not None and not callable(loss):
            raise TypeError("'loss' must be sub classes of `paddle.nn.Layer` or any callable "
                            "function.")
        self._amp = _amp_settings(amp_configs)
        if self._amp is not None:
            from .. import amp
            if self._amp['level'] == 'O2':
                if optimizer is None:
                    self.network = amp.decorate(self.network, level='O2', dtype=self._amp['dtype'])
                else:
                    self.network, optimizer = amp.decorate(self.network, optimizer, level='O2',
                                                           dtype=self._amp['dtype'])
            # bfloat16 keeps float32's exponent range: no loss scaling (Paddle)
            self._amp['scaler'] = amp.GradScaler(enable=self._amp['dtype'] == 'float16',
                                                 **self._amp['scaling'])
        self._optimizer = optimizer
        self._loss = loss
        metrics = metrics or []
        for m in to_list(metrics):
            if not isinstance(m, Metric):
                raise TypeError("{} is not sub class of Metric".format(m.__class__.__name__))
        self._metrics = to_list(metrics)

    def _amp_scope(self):
        """auto_cast as prepare(amp_configs=...) asked (train, eval and
        predict alike, as Paddle's adapter), else a no-op context."""
        amp = self._amp
        if amp is None:
            return contextlib.nullcontext()
        return _paddle().amp.auto_cast(level=amp['level'], dtype=amp['dtype'],
                                       custom_white_list=amp['white'],
                                       custom_black_list=amp['black'])

    def parameters(self, *args, **kwargs):
        return self.network.parameters(*args, **kwargs)

    def _metrics_name(self):
        names = ['loss'] if self._loss else []
        for m in self._metrics:
            names.extend(to_list(m.name()))
        return names

    # ---- single batches ------------------------------------------------------------------
    def _split(self, data):
        data = _flatten(data)
        n = len(self._inputs)
        return data[:n], data[n:]

    def train_batch(self, inputs, labels=None, update=True):
        """One training step; returns [loss arrays] (and the metric values
        when metrics are set)."""
        paddle = _paddle()
        if self._optimizer is None or self._loss is None:
            raise RuntimeError("model not ready, please call `model.prepare()` first")
        self.network.train()
        self.mode = 'train'
        inputs = [_to_tensor(x) for x in to_list(inputs)]
        labels = [_to_tensor(x) for x in to_list(labels)]
        amp = self._amp
        with self._amp_scope():
            outputs = self.network(*inputs)
            losses = to_list(self._loss(*(to_list(outputs) + labels)))
        final_loss = losses[0]
        for l in losses[1:]:
            final_loss = final_loss + l
        if amp is None:
            final_loss.backward()
            if update:
                self._optimizer.step()
                self._optimizer.clear_grad()
        else:
            amp['scaler'].scale(final_loss).backward()
            if update:
                amp['scaler'].step(self._optimizer)
                amp['scaler'].update()
                self._optimizer.clear_grad()
        metrics = []
        with paddle.no_grad():
            for metric in self._metrics:
                outs = metric.compute(*(to_list(outputs) + labels))
                metrics.append(metric.update(*[_to_numpy(m) for m in to_list(outs)]))
        loss_np = [_to_numpy(l) for l in losses]
        return (loss_np, metrics) if metrics else loss_np

    def eval_batch(self, inputs, labels=None):
        paddle = _paddle()
        self.network.eval()
        self.mode = 'eval'
        inputs = [_to_tensor(x) for x in to_list(inputs)]
        labels = [_to_tensor(x) for x in to_list(labels)]
        with paddle.no_grad(), self._amp_scope():
            outputs = self.network(*inputs)
            losses = []
            if self._loss and labels:
                losses = to_list(self._loss(*(to_list(outputs) + labels)))
            metrics = []
            for metric in self._metrics:
                outs = metric.compute(*(to_list(outputs) + labels))
                metrics.append(metric.update(*[_to_numpy(m) for m in to_list(outs)]))
        loss_np = [_to_numpy(l) for l in losses]
        if self._metrics and self._loss:
            return loss_np, metrics
        if self._metrics:
            return metrics
        return loss_np

    def predict_batch(self, inputs):
        paddle = _paddle()
        self.network.eval()
        self.mode = 'test'
        inputs = [_to_tensor(x) for x in to_list(inputs)]
        with paddle.no_grad(), self._amp_scope():
            outputs = self.network(*inputs)
        return [_to_numpy(o) for o in to_list(outputs)]

    # ---- loops ------------------------------------------------------------------------------
    def _make_loader(self, data, batch_size, shuffle, drop_last, num_workers):
        if data is None:
            return None
        if isinstance(data, Dataset) and not isinstance(data, IterableDataset):
            return DataLoader(data, batch_size=batch_size, shuffle=shuffle,
                              drop_last=drop_last, num_workers=num_workers)
        if isinstance(data, IterableDataset):
            return DataLoader(data, batch_size=batch_size, drop_last=drop_last,
                              num_workers=num_workers)
        return data

    @staticmethod
    def _len_data_loader(loader):
        try:
            return len(loader)
        except Exception:
            return None

    def _run_one_epoch(self, data_loader, callbacks, mode, logs=None):
        logs = {} if logs is None else logs
        outputs = []
        steps = self._len_data_loader(data_loader)
        for step, data in enumerate(data_loader):
            data = _flatten(data)
            first = data[0]
            batch_size = first.shape[0] if hasattr(first, 'shape') and len(first.shape) else 1
            callbacks.on_batch_begin(mode, step, logs)
            if mode != 'predict':
                ins, labs = self._split(data)
                if mode == 'train':
                    update = (step + 1) % self._accumulate == 0 or \
                        (steps is not None and step + 1 == steps)
                    outs = self.train_batch(ins, labs, update)
                else:
                    outs = self.eval_batch(ins, labs)
                if self._metrics and self._loss:
                    metrics = [[_loss_value(l) for l in outs[0]]]
                elif self._loss:
                    metrics = [[_loss_value(l) for l in outs]]
                else:
                    metrics = []
                for metric in self._metrics:
                    metrics.extend(to_list(metric.accumulate()))
                for k, v in zip(self._metrics_name(), metrics):
                    logs[k] = v
            else:
                ins = data[:len(self._inputs)]
                outputs.append(self.predict_batch(ins))
            logs['step'] = step
            logs['batch_size'] = batch_size
            callbacks.on_batch_end(mode, step, logs)
            if self._num_iters is not None and step + 1 >= self._num_iters:
                break
        self._reset_metrics()
        if mode == 'predict':
            return logs, outputs
        return logs

    def _reset_metrics(self):
        for m in self._metrics:
            m.reset()

    _num_iters = None

    def fit(self, train_data=None, eval_data=None, batch_size=1, epochs=1, eval_freq=1,
            log_freq=10, save_dir=None, save_freq=1, verbose=2, drop_last=False, shuffle=True,
            num_workers=0, callbacks=None, accumulate_grad_batches=1, num_iters=None):
        """Train for `epochs` epochs, evaluating on eval_data every eval_freq
        epochs. An LR scheduler given to the optimizer is stepped every batch."""
        if train_data is None:
            raise ValueError("train_data must be given!")
        if isinstance(batch_size, bool) or not isinstance(batch_size, numbers.Integral) or \
                batch_size <= 0:
            raise ValueError("batch_size should be a positive integer, got {}".format(
                batch_size))
        if self._optimizer is None or self._loss is None:
            raise RuntimeError("model not ready, please call `model.prepare()` first")
        train_loader = self._make_loader(train_data, batch_size, shuffle, drop_last,
                                         num_workers)
        eval_loader = self._make_loader(eval_data, batch_size, False, False, num_workers)
        do_eval = eval_loader is not None
        self._test_dataloader = eval_loader
        self._accumulate = max(int(accumulate_grad_batches), 1)
        steps = self._len_data_loader(train_loader)
        self._num_iters = num_iters
        if num_iters is not None and steps is not None:
            steps = min(steps, num_iters)
        cbks = config_callbacks(callbacks, model=self, epochs=epochs, steps=steps,
                                log_freq=log_freq, save_freq=save_freq, save_dir=save_dir,
                                verbose=verbose, metrics=self._metrics_name())
        self.stop_training = False
        cbks.on_begin('train')
        logs = {}
        try:
            for epoch in range(epochs):
                cbks.on_epoch_begin(epoch)
                logs = self._run_one_epoch(train_loader, cbks, 'train')
                cbks.on_epoch_end(epoch, logs)
                if do_eval and epoch % eval_freq == 0:
                    eval_steps = self._len_data_loader(eval_loader)
                    cbks.on_begin('eval', {'steps': eval_steps,
                                           'metrics': self._metrics_name()})
                    eval_logs = self._run_one_epoch(eval_loader, cbks, 'eval')
                    cbks.on_end('eval', eval_logs)
                if self.stop_training:
                    break
            cbks.on_end('train', logs)
        finally:
            self._test_dataloader = None
            self._num_iters = None

    def evaluate(self, eval_data, batch_size=1, log_freq=10, verbose=2, num_workers=0,
                 callbacks=None, num_iters=None):
        """Returns {'loss': [value], '<metric>': value, ...}."""
        if self._loss is None and not self._metrics:
            raise RuntimeError("model not ready, please call `model.prepare()` first")
        eval_loader = self._make_loader(eval_data, batch_size, False, False, num_workers)
        self._test_dataloader = eval_loader
        self._num_iters = num_iters
        cbks = config_callbacks(callbacks, model=self, log_freq=log_freq, verbose=verbose,
                                metrics=self._metrics_name())
        eval_steps = self._len_data_loader(eval_loader)
        if num_iters is not None and eval_steps is not None:
            eval_steps = min(eval_steps, num_iters)
        try:
            cbks.on_begin('eval', {'steps': eval_steps, 'metrics': self._metrics_name()})
            logs = self._run_one_epoch(eval_loader, cbks, 'eval')
            cbks.on_end('eval', logs)
        finally:
            self._test_dataloader = None
            self._num_iters = None
        return {k: logs[k] for k in self._metrics_name() if k in logs}

    def predict(self, test_data, batch_size=1, num_workers=0, stack_outputs=False, verbose=1,
                callbacks=None):
        """Returns one list per network output, each holding one numpy array
        per batch (or a single stacked array with stack_outputs=True)."""
        test_loader = self._make_loader(test_data, batch_size, False, False, num_workers)
        self._test_dataloader = test_loader
        cbks = config_callbacks(callbacks, model=self, verbose=verbose)
        test_steps = self._len_data_loader(test_loader)
        logs = {'steps': test_steps}
        try:
            cbks.on_begin('predict', logs)
            logs, outputs = self._run_one_epoch(test_loader, cbks, 'predict')
            outputs = [list(o) for o in zip(*outputs)]
            if stack_outputs:
                outputs = [np.vstack(outs) for outs in outputs]
            cbks.on_end('predict', logs)
        finally:
            self._test_dataloader = None
        return outputs

    # ---- persistence ------------------------------------------------------------------------
    @staticmethod
    def _strip(path):
        for sfx in ('.pdparams', '.pdopt'):
            if path.endswith(sfx):
                return path[:-len(sfx)]
        return path

    def save(self, path, training=True):
        """training=True: path.pdparams (network state dict) and path.pdopt
        (optimizer state) with paddle.save."""
        paddle = _paddle()
        if not training:
            # An inference model: path.pdmodel + path.pdiparams (paddle.jit.save),
            # traced with the Model's input specs.
            if not self._inputs:
                raise ValueError("Model.save(training=False) needs the Model's inputs "
                                 "(paddle.Model(net, inputs=[InputSpec(...)]))")
            if not os.path.basename(path):
                raise ValueError("The input path MUST be format of dirname/file_prefix, but "
                                 "received file_prefix is empty string.")
            paddle.jit.save(self.network, path, input_spec=list(self._inputs))
            return
        base = os.path.basename(path)
        if base == '':
            raise ValueError("The input path MUST be format of dirname/file_prefix "
                             "[dirname\\file_prefix in Windows system], but received "
                             "file_prefix is empty string.")
        d = os.path.dirname(path)
        if d and not os.path.exists(d):
            os.makedirs(d)
        paddle.save(self.network.state_dict(), path + '.pdparams')
        if self._optimizer is not None:
            paddle.save(self._optimizer.state_dict(), path + '.pdopt')

    def load(self, path, skip_mismatch=False, reset_optimizer=False):
        """Load path.pdparams into the network (and path.pdopt into the
        optimizer unless reset_optimizer)."""
        paddle = _paddle()
        path = self._strip(path)
        param_path = path + '.pdparams'
        if not os.path.exists(param_path):
            raise FileNotFoundError("parameters file not found: {}".format(param_path))
        state = paddle.load(param_path)
        if skip_mismatch:
            own = self.network.state_dict()
            filtered = {}
            for k, v in state.items():
                if k in own and list(np.shape(_to_numpy(v))) == list(own[k].shape):
                    filtered[k] = v
                elif k in own:
                    import warnings
                    warnings.warn("Skip loading for {}: shape {} does not match {}".format(
                        k, list(np.shape(_to_numpy(v))), list(own[k].shape)))
            state = filtered
        self.network.set_state_dict(state)
        opt_path = path + '.pdopt'
        if self._optimizer is not None and not reset_optimizer and os.path.exists(opt_path):
            self._optimizer.set_state_dict(paddle.load(opt_path))

    def summary(self, input_size=None, dtype=None):
        from .model_summary import summary
        if input_size is None:
            shapes = []
            for spec in self._inputs:
                if spec is None or not hasattr(spec, 'shape'):
                    raise ValueError("Model.summary needs input_size when the Model was "
                                     "made without InputSpecs")
                shapes.append(tuple(spec.shape))
            input_size = shapes[0] if len(shapes) == 1 else shapes
        return summary(self.network, input_size, dtypes=dtype)


_AMP_SCALING_KEYS = ('init_loss_scaling', 'incr_ratio', 'decr_ratio', 'incr_every_n_steps',
                     'decr_every_n_nan_or_inf', 'use_dynamic_loss_scaling')


def _amp_settings(configs):
    """Model.prepare's amp_configs ('O0' | 'O1' | 'O2' or a dict with
    'level', 'dtype', 'custom_white_list', 'custom_black_list' and
    GradScaler's arguments) as a dict, or None when AMP is off."""
    if configs is None:
        return None
    if isinstance(configs, str):
        configs = {'level': configs}
    if not isinstance(configs, dict):
        raise TypeError("amp_configs must be None, a str ('O0', 'O1', 'O2') or a dict, "
                        "got {}".format(type(configs).__name__))
    known = ('level', 'dtype', 'custom_white_list', 'custom_black_list', 'use_fp16_guard',
             'use_promote') + _AMP_SCALING_KEYS
    unknown = sorted(k for k in configs if k not in known)
    if unknown:
        raise ValueError("amp_configs: unknown key(s) {}; known: {}".format(
            ', '.join(unknown), ', '.join(known)))
    level = str(configs.get('level', 'O1')).upper()
    if level not in ('O0', 'O1', 'O2'):
        raise ValueError("amp_configs: level must be 'O0', 'O1' or 'O2', got {!r}".format(
            configs.get('level')))
    dtype = configs.get('dtype', 'float16')
    if dtype not in ('float16', 'bfloat16'):
        raise ValueError("amp_configs: dtype must be 'float16' or 'bfloat16', got {!r}".format(
            dtype))
    if level == 'O0':
        return None
    return {'level': level, 'dtype': dtype,
            'white': configs.get('custom_white_list'), 'black': configs.get('custom_black_list'),
            'scaling': {k: configs[k] for k in _AMP_SCALING_KEYS if k in configs}}
