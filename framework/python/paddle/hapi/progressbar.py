"""The progress lines paddle.Model prints (Paddle's ProgressBar format):
verbose 1: 'step  3/10 [======>.......] - loss: 0.1234 - ETA: 1s - 5ms/step'
rewritten in place; verbose 2: 'step  3/10 - loss: 0.1234 - 5ms/step' per line."""
import os
import sys
import time

import numpy as np


def _fmt_value(v):
    if isinstance(v, (float, np.floating)):
        return ' %.4f' % v if abs(v) > 1e-3 else ' %.4e' % v
    if isinstance(v, np.ndarray) and v.size == 1 and v.dtype in (np.float32, np.float64):
        x = float(v.reshape(-1)[0])
        return ' %.4f' % x if abs(x) > 1e-3 else ' %.4e' % x
    return ' %s' % v


class ProgressBar:
    def __init__(self, num=None, width=30, verbose=1, start=True, file=None, name='step'):
        self._num = num
        if isinstance(num, int) and num <= 0:
            raise TypeError('num should be None or integer (> 0)')
        max_width = self._get_max_width()
        self._width = width if width <= max_width else max_width
        self._total_width = 0
        self._verbose = verbose
        self.file = file if file is not None else sys.stdout
        self._values = {}
        self._values_order = []
        self._start = time.time() if start else None
        self._last_update = 0
        self.name = name
        self._dynamic_display = (
            (hasattr(self.file, 'isatty') and self.file.isatty())
            or 'ipykernel' in sys.modules or 'posix' in sys.modules
            or 'PYCHARM_HOSTED' in os.environ)

    def _get_max_width(self):
        from shutil import get_terminal_size
        terminal_width, _ = get_terminal_size()
        terminal_width = terminal_width if terminal_width > 0 else 80
        return min(int(terminal_width * 0.6), terminal_width - 50)

    def start(self):
        self.file.flush()
        self._start = time.time()

    def update(self, current_num, values=()):
        now = time.time()
        if self._start is None:
            self._start = now
        time_per_unit = (now - self._start) / current_num if current_num else 0
        if time_per_unit >= 1 or time_per_unit == 0:
            fps = ' - %.0fs/%s' % (time_per_unit, self.name)
        elif time_per_unit >= 1e-3:
            fps = ' - %.0fms/%s' % (time_per_unit * 1e3, self.name)
        else:
            fps = ' - %.0fus/%s' % (time_per_unit * 1e6, self.name)
        out = self.file
        info = ''
        if self._verbose == 1:
            prev_total_width = self._total_width
            if self._dynamic_display:
                out.write('\b' * prev_total_width)
                out.write('\r')
            else:
                out.write('\n')
            if self._num is not None:
                numdigits = int(np.log10(self._num)) + 1
                bar_chars = (self.name + ' %' + str(numdigits) + 'd/%d [') % (current_num,
                                                                              self._num)
                prog = float(current_num) / self._num
                prog_width = int(self._width * prog)
                if prog_width > 0:
                    bar_chars += '=' * (prog_width - 1)
                    bar_chars += '>' if current_num < self._num else '='
                bar_chars += '.' * (self._width - prog_width)
                bar_chars += ']'
            else:
                bar_chars = self.name + ' %3d' % current_num
            self._total_width = len(bar_chars)
            out.write(bar_chars)
            for k, val in values:
                info += ' - %s:' % k
                for v in (val if isinstance(val, list) else [val]):
                    info += _fmt_value(v)
            if self._num is not None and current_num < self._num:
                eta = time_per_unit * (self._num - current_num)
                if eta > 3600:
                    eta_format = '%d:%02d:%02d' % (eta // 3600, (eta % 3600) // 60, eta % 60)
                elif eta > 60:
                    eta_format = '%d:%02d' % (eta // 60, eta % 60)
                else:
                    eta_format = '%ds' % eta
                info += ' - ETA: %s' % eta_format
            info += fps
            self._total_width += len(info)
            if prev_total_width > self._total_width:
                info += ' ' * (prev_total_width - self._total_width)
            if self._num is None or current_num >= self._num:
                info += '\n'
            out.write(info)
            out.flush()
            self._last_update = now
        elif self._verbose in (2, 3):
            if self._num:
                numdigits = int(np.log10(self._num)) + 1
                count = (self.name + ' %' + str(numdigits) + 'd/%d') % (current_num, self._num)
            else:
                count = self.name + ' %3d' % current_num
            info = count + info
            for k, val in values:
                info += ' - %s:' % k
                for v in (val if isinstance(val, list) else [val]):
                    info += _fmt_value(v)
            info += fps
            info += '\n'
            out.write(info)
            out.flush()
