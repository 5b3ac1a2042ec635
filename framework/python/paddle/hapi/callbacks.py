"""Callbacks for paddle.Model: Callback, ProgBarLogger, ModelCheckpoint,
LRScheduler, EarlyStopping, ReduceLROnPlateau."""
import numbers
import os
import time
import warnings

import numpy as np

from .progressbar import ProgressBar

__all__ = ['Callback', 'ProgBarLogger', 'ModelCheckpoint', 'LRScheduler', 'EarlyStopping',
           'ReduceLROnPlateau', 'VisualDL']


def config_callbacks(callbacks=None, model=None, batch_size=None, epochs=None, steps=None,
                     log_freq=2, verbose=2, save_freq=1, save_dir=None, metrics=None,
                     mode='train'):
    cbks = callbacks or []
    cbks = cbks if isinstance(cbks, (list, tuple)) else [cbks]
    cbks = list(cbks)
    if not any(isinstance(k, ProgBarLogger) for k in cbks) and verbose:
        cbks = [ProgBarLogger(log_freq, verbose=verbose)] + cbks
    if not any(isinstance(k, ModelCheckpoint) for k in cbks):
        cbks = cbks + [ModelCheckpoint(save_freq, save_dir)]
    for k in cbks:
        if isinstance(k, EarlyStopping):
            k.save_dir = save_dir
    if not any(isinstance(k, LRScheduler) for k in cbks):
        cbks = cbks + [LRScheduler()]
    cbk_list = CallbackList(cbks)
    cbk_list.set_model(model)
    metrics = metrics or [] if mode != 'test' else []
    params = {
        'batch_size': batch_size,
        'epochs': epochs,
        'steps': steps,
        'verbose': verbose,
        'metrics': metrics,
    }
    cbk_list.set_params(params)
    return cbk_list


class CallbackList:
    def __init__(self, callbacks=None):
        self.callbacks = [c for c in callbacks or []]
        self.params = {}
        self.model = None

    def append(self, callback):
        self.callbacks.append(callback)

    def __iter__(self):
        return iter(self.callbacks)

    def set_params(self, params):
        for c in self.callbacks:
            c.set_params(params)

    def set_model(self, model):
        for c in self.callbacks:
            c.set_model(model)

    def _call(self, name, *args):
        for c in self.callbacks:
            func = getattr(c, name)
            func(*args)

    def _check_mode(self, mode):
        if mode not in ('train', 'eval', 'predict'):
            raise ValueError("mode should be train, eval or predict, got {}".format(mode))

    def on_begin(self, mode, logs=None):
        self._check_mode(mode)
        self._call('on_{}_begin'.format(mode), logs)

    def on_end(self, mode, logs=None):
        self._check_mode(mode)
        self._call('on_{}_end'.format(mode), logs)

    def on_epoch_begin(self, epoch=None, logs=None):
        self._call('on_epoch_begin', epoch, logs)

    def on_epoch_end(self, epoch=None, logs=None):
        self._call('on_epoch_end', epoch, logs)

    def on_batch_begin(self, mode, step=None, logs=None):
        self._check_mode(mode)
        self._call('on_{}_batch_begin'.format(mode), step, logs)

    def on_batch_end(self, mode, step=None, logs=None):
        self._check_mode(mode)
        self._call('on_{}_batch_end'.format(mode), step, logs)


class Callback:
    """Base class: override any of the on_* hooks. self.model is the
    paddle.Model, self.params has batch_size, epochs, steps, verbose, metrics."""

    def __init__(self):
        self.model = None
        self.params = {}

    def set_params(self, params):
        self.params = params

    def set_model(self, model):
        self.model = model

    def on_train_begin(self, logs=None):
        pass

    def on_train_end(self, logs=None):
        pass

    def on_eval_begin(self, logs=None):
        pass

    def on_eval_end(self, logs=None):
        pass

    def on_predict_begin(self, logs=None):
        pass

    def on_predict_end(self, logs=None):
        pass

    def on_epoch_begin(self, epoch, logs=None):
        pass

    def on_epoch_end(self, epoch, logs=None):
        pass

    def on_train_batch_begin(self, step, logs=None):
        pass

    def on_train_batch_end(self, step, logs=None):
        pass

    def on_eval_batch_begin(self, step, logs=None):
        pass

    def on_eval_batch_end(self, step, logs=None):
        pass

    def on_predict_batch_begin(self, step, logs=None):
        pass

    def on_predict_batch_end(self, step, logs=None):
        pass


class ProgBarLogger(Callback):
    """Prints 'Epoch i/n' and a progress line every log_freq steps (verbose
    0 silent, 1 bar, 2 one line per log, 3 with timings)."""

    def __init__(self, log_freq=1, verbose=2):
        super().__init__()
        self.epochs = None
        self.steps = None
        self.progbar = None
        self.verbose = verbose
        self.log_freq = log_freq

    def _is_print(self):
        return self.verbose

    def on_train_begin(self, logs=None):
        self.epochs = self.params['epochs']
        self.train_metrics = self.params['metrics']
        self._train_timer = {'data_time': 0, 'batch_time': 0, 'count': 0, 'samples': 0}
        if self._is_print():
            print("The loss value printed in the log is the current step, and the metric is "
                  "the average value of previous steps.")

    def on_epoch_begin(self, epoch=None, logs=None):
        self.steps = self.params['steps']
        self.epoch = epoch
        self.train_step = 0
        if self.epochs and self._is_print():
            print('Epoch %d/%d' % (epoch + 1, self.epochs))
        self.train_progbar = ProgressBar(num=self.steps, verbose=self.verbose)
        self._train_timer['batch_start_time'] = time.time()

    def _updates(self, logs, mode):
        values = []
        metrics = getattr(self, '%s_metrics' % mode)
        progbar = getattr(self, '%s_progbar' % mode)
        steps = getattr(self, '%s_step' % mode)
        for k in metrics:
            if k in logs:
                values.append((k, logs[k]))
        if self.verbose == 3 and hasattr(self, '_%s_timer' % mode):
            timer = getattr(self, '_%s_timer' % mode)
            cnt = timer['count'] if timer['count'] > 0 else 1.0
            samples = timer['samples'] if timer['samples'] > 0 else 1.0
            values.append(('avg_reader_cost', "%.5f sec" % (timer['data_time'] / cnt)))
            values.append(('avg_batch_cost', "%.5f sec" % (timer['batch_time'] / cnt)))
            values.append(('ips', "%.5f samples/sec" % (samples / max(timer['batch_time'],
                                                                      1e-12))))
        progbar.update(steps, values)

    def on_train_batch_begin(self, step, logs=None):
        t = self._train_timer
        t['batch_data_end_time'] = time.time()
        t['data_time'] += t['batch_data_end_time'] - t['batch_start_time']

    def on_train_batch_end(self, step, logs=None):
        logs = logs or {}
        self.train_step += 1
        t = self._train_timer
        t['batch_time'] += time.time() - t['batch_data_end_time']
        t['count'] += 1
        t['samples'] += logs.get('batch_size', 1)
        if self._is_print() and self.train_step % self.log_freq == 0:
            if self.steps is None or self.train_step < self.steps:
                self._updates(logs, 'train')
        t['batch_start_time'] = time.time()

    def on_epoch_end(self, epoch, logs=None):
        logs = logs or {}
        if self._is_print() and self.steps is not None:
            self._updates(logs, 'train')

    def on_eval_begin(self, logs=None):
        logs = logs or {}
        self.eval_steps = logs.get('steps', None)
        self.eval_metrics = logs.get('metrics', [])
        self.eval_step = 0
        self.evaled_samples = 0
        self._eval_timer = {'data_time': 0, 'batch_time': 0, 'count': 0, 'samples': 0}
        self.eval_progbar = ProgressBar(num=self.eval_steps, verbose=self.verbose)
        if self._is_print():
            print('Eval begin...')
        self._eval_timer['batch_start_time'] = time.time()

    def on_eval_batch_begin(self, step, logs=None):
        t = self._eval_timer
        t['batch_data_end_time'] = time.time()
        t['data_time'] += t['batch_data_end_time'] - t['batch_start_time']

    def on_eval_batch_end(self, step, logs=None):
        logs = logs or {}
        self.eval_step += 1
        samples = logs.get('batch_size', 1)
        self.evaled_samples += samples
        t = self._eval_timer
        t['batch_time'] += time.time() - t['batch_data_end_time']
        t['count'] += 1
        t['samples'] += samples
        if self._is_print() and self.eval_step % self.log_freq == 0:
            if self.eval_steps is None or self.eval_step < self.eval_steps:
                self._updates(logs, 'eval')
        t['batch_start_time'] = time.time()

    def on_predict_begin(self, logs=None):
        logs = logs or {}
        self.test_steps = logs.get('steps', None)
        self.test_metrics = logs.get('metrics', [])
        self.test_step = 0
        self.tested_samples = 0
        self._test_timer = {'data_time': 0, 'batch_time': 0, 'count': 0, 'samples': 0}
        self.test_progbar = ProgressBar(num=self.test_steps, verbose=self.verbose)
        if self._is_print():
            print('Predict begin...')
        self._test_timer['batch_start_time'] = time.time()

    def on_predict_batch_begin(self, step, logs=None):
        t = self._test_timer
        t['batch_data_end_time'] = time.time()
        t['data_time'] += t['batch_data_end_time'] - t['batch_start_time']

    def on_predict_batch_end(self, step, logs=None):
        logs = logs or {}
        self.test_step += 1
        samples = logs.get('batch_size', 1)
        self.tested_samples += samples
        t = self._test_timer
        t['batch_time'] += time.time() - t['batch_data_end_time']
        t['count'] += 1
        t['samples'] += samples
        if self.test_step % self.log_freq == 0 and self._is_print():
            if self.test_steps is None or self.test_step < self.test_steps:
                self._updates(logs, 'test')
        t['batch_start_time'] = time.time()

    def on_eval_end(self, logs=None):
        logs = logs or {}
        if self._is_print() and self.eval_steps is not None:
            self._updates(logs, 'eval')
            print('Eval samples: %d' % self.evaled_samples)

    def on_predict_end(self, logs=None):
        logs = logs or {}
        if self._is_print():
            if self.test_step % self.log_freq != 0 or self.verbose == 1:
                self._updates(logs, 'test')
            print('Predict samples: %d' % self.tested_samples)


class ModelCheckpoint(Callback):
    """Save the model to save_dir/<epoch> every save_freq epochs and to
    save_dir/final at the end (nothing when save_dir is None)."""

    def __init__(self, save_freq=1, save_dir=None):
        super().__init__()
        self.save_freq = save_freq
        self.save_dir = save_dir

    def on_epoch_begin(self, epoch=None, logs=None):
        self.epoch = epoch

    def _is_save(self):
        return self.model and self.save_dir

    def on_epoch_end(self, epoch, logs=None):
        if self._is_save() and self.epoch % self.save_freq == 0:
            path = '{}/{}'.format(self.save_dir, epoch)
            print('save checkpoint at {}'.format(os.path.abspath(path)))
            self.model.save(path)

    def on_train_end(self, logs=None):
        if self._is_save():
            path = '{}/final'.format(self.save_dir)
            print('save checkpoint at {}'.format(os.path.abspath(path)))
            self.model.save(path)


def _sched_of(model):
    from ..optimizer.lr import LRScheduler as Sched
    opt = getattr(model, '_optimizer', None)
    lr = getattr(opt, '_learning_rate', None) if opt is not None else None
    return lr if isinstance(lr, Sched) else None


class LRScheduler(Callback):
    """Steps the optimizer's LR scheduler after every batch (by_step, the
    default) or every epoch."""

    def __init__(self, by_step=True, by_epoch=False):
        super().__init__()
        if by_step and by_epoch:
            raise ValueError("by_step option is mutually exclusive with by_epoch")
        self.by_step = by_step
        self.by_epoch = by_epoch

    def on_epoch_end(self, epoch, logs=None):
        if self.by_epoch:
            s = _sched_of(self.model)
            if s is not None:
                s.step()

    def on_train_batch_end(self, step, logs=None):
        if self.by_step:
            s = _sched_of(self.model)
            if s is not None:
                s.step()


class EarlyStopping(Callback):
    """Stop fit when `monitor` (from evaluation) stops improving for
    `patience` evaluations; optionally save the best model to save_dir/best_model."""

    def __init__(self, monitor='loss', mode='auto', patience=0, verbose=1, min_delta=0,
                 baseline=None, save_best_model=True):
        super().__init__()
        self.monitor = monitor
        self.patience = patience
        self.verbose = verbose
        self.baseline = baseline
        self.min_delta = abs(min_delta)
        self.wait_epoch = 0
        self.best_weights = None
        self.stopped_epoch = 0
        self.save_best_model = save_best_model
        self.save_dir = None
        if mode not in ('auto', 'min', 'max'):
            warnings.warn('EarlyStopping mode %s is unknown, fallback to auto mode.' % mode)
            mode = 'auto'
        if mode == 'min':
            self.monitor_op = np.less
        elif mode == 'max':
            self.monitor_op = np.greater
        else:
            self.monitor_op = np.greater if 'acc' in self.monitor else np.less
        if self.monitor_op == np.greater:
            self.min_delta *= 1
        else:
            self.min_delta *= -1

    def on_train_begin(self, logs=None):
        self.wait_epoch = 0
        if self.baseline is not None:
            self.best_value = self.baseline
        else:
            self.best_value = np.inf if self.monitor_op == np.less else -np.inf
            self.best_weights = None

    def on_eval_end(self, logs=None):
        if logs is None or self.monitor not in logs:
            warnings.warn('Monitor of EarlyStopping should be loss or metric name.')
            return
        current = logs[self.monitor]
        if isinstance(current, (list, tuple)):
            current = current[0]
        elif isinstance(current, numbers.Number):
            current = current
        else:
            return
        if self.monitor_op(current - self.min_delta, self.best_value):
            self.best_value = current
            self.wait_epoch = 0
            if self.save_best_model and self.save_dir is not None:
                path = os.path.join(self.save_dir, 'best_model')
                self.model.save(path)
        else:
            self.wait_epoch += 1
        if self.wait_epoch > self.patience:
            self.model.stop_training = True
            if self.verbose > 0:
                print('Epoch %d: Early stopping.' % (self.stopped_epoch + 1))
                if self.save_best_model and self.save_dir is not None:
                    print('Best checkpoint has been saved at %s' % (os.path.abspath(
                        os.path.join(self.save_dir, 'best_model'))))
        self.stopped_epoch += 1


class ReduceLROnPlateau(Callback):
    """Multiply a float learning rate by factor when `monitor` (from
    evaluation) has not improved for `patience` evaluations."""

    def __init__(self, monitor='loss', factor=0.1, patience=10, verbose=1, mode='auto',
                 min_delta=1e-4, cooldown=0, min_lr=0):
        super().__init__()
        if factor >= 1.0:
            raise ValueError('ReduceLROnPlateau does not support a factor >= 1.0.')
        self.monitor = monitor
        self.factor = factor
        self.min_lr = min_lr
        self.min_delta = min_delta
        self.patience = patience
        self.verbose = verbose
        self.cooldown = cooldown
        self.cooldown_counter = 0
        self.wait = 0
        self.best = 0
        self.mode = mode
        self.epoch = 0
        self._reset()

    def _reset(self):
        if self.mode not in ('auto', 'min', 'max'):
            warnings.warn('Learning rate reduction mode %s is unknown, fallback to auto mode.'
                          % self.mode)
            self.mode = 'auto'
        if self.mode == 'min' or (self.mode == 'auto' and 'acc' not in self.monitor):
            self.monitor_op = lambda a, b: np.less(a, b - self.min_delta)
            self.best = np.inf
        else:
            self.monitor_op = lambda a, b: np.greater(a, b + self.min_delta)
            self.best = -np.inf
        self.cooldown_counter = 0
        self.wait = 0

    def on_train_begin(self, logs=None):
        self._reset()

    def on_eval_end(self, logs=None):
        if logs is None or self.monitor not in logs:
            warnings.warn('Monitor of ReduceLROnPlateau should be loss or metric name.')
            return
        current = logs[self.monitor]
        if isinstance(current, (list, tuple)):
            current = current[0]
        if self.cooldown_counter > 0:
            self.cooldown_counter -= 1
            self.wait = 0
        if self.monitor_op(current, self.best):
            self.best = current
            self.wait = 0
        elif self.cooldown_counter <= 0:
            self.wait += 1
            if self.wait >= self.patience:
                opt = self.model._optimizer
                if _sched_of(self.model) is not None:
                    warnings.warn("ReduceLROnPlateau: the learning rate is a scheduler; "
                                  "not changed")
                    return
                old_lr = opt.get_lr()
                if old_lr > np.float32(self.min_lr):
                    new_lr = max(old_lr * self.factor, self.min_lr)
                    opt.set_lr(new_lr)
                    if self.verbose > 0:
                        print('Epoch %d: ReduceLROnPlateau reducing learning rate to %s.'
                              % (self.epoch + 1, new_lr))
                    self.cooldown_counter = self.cooldown
                    self.wait = 0
        self.epoch += 1


class VisualDL(Callback):
    """Accepted for compatibility; VisualDL is not available in Eddy kernels,
    so nothing is logged."""

    def __init__(self, log_dir):
        super().__init__()
        self.log_dir = log_dir
