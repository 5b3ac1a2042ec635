"""DataLoader worker processes (issue 18 item 6): num_workers > 0 loads
batches in forked workers that hand them back through shared memory, in
order, with persistent_workers, prefetch_factor, worker_init_fn,
get_worker_info, timeouts, a worker's exception (and traceback) raised in
the loader, a dead worker reported, and a clean stop on Ctrl-C; also under
the sandbox's seccomp allow-list (sandbox/sbx_seccomp.c), and the
iterator's .next()."""
import ctypes
import ctypes.util
import errno
import os
import re
import signal
import subprocess
import sys
import textwrap
import time
import unittest

import numpy as np

import paddle
from paddle.io import DataLoader, Dataset, IterableDataset, get_worker_info
from paddle.io import worker as W

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))


class Squares(Dataset):
    def __init__(self, n=37):
        self.n = n

    def __getitem__(self, i):
        info = get_worker_info()
        return (np.array([i, i * i], 'float32'), np.array([i % 3], 'int64'),
                -1 if info is None else info.id)

    def __len__(self):
        return self.n


class Failing(Squares):
    def __getitem__(self, i):
        if i == 13:
            raise KeyError('sample thirteen is missing')
        return super().__getitem__(i)


class Dying(Squares):
    def __getitem__(self, i):
        if i == 5:
            os._exit(3)
        return super().__getitem__(i)


class Slow(Squares):
    def __getitem__(self, i):
        time.sleep(5)
        return super().__getitem__(i)


class Noise(Dataset):
    def __getitem__(self, i):
        return np.random.rand(1).astype('float32')

    def __len__(self):
        return 8


class Stream(IterableDataset):
    def __iter__(self):
        info = get_worker_info()
        wid, n = (0, 1) if info is None else (info.id, info.num_workers)
        for i in range(wid, 23, n):
            yield np.array([i], 'float32')


def no_children_left():
    try:
        pid, _ = os.waitpid(-1, os.WNOHANG)
    except ChildProcessError:
        return True
    return pid == 0 and False


class TestWorkers(unittest.TestCase):
    def test_batches_in_order_like_the_main_process(self):
        ref = [b for b in DataLoader(Squares(), batch_size=5)]
        for nw in (1, 3):
            got = [b for b in DataLoader(Squares(), batch_size=5, num_workers=nw)]
            self.assertEqual(len(got), len(ref))
            for (x, y, _), (rx, ry, _) in zip(got, ref):
                self.assertIsInstance(x, paddle.Tensor)
                self.assertEqual(y.dtype, paddle.int64)
                np.testing.assert_array_equal(x.numpy(), rx.numpy())
                np.testing.assert_array_equal(y.numpy(), ry.numpy())
        wids = np.concatenate([w.numpy() for _, _, w in
                               DataLoader(Squares(), batch_size=5, num_workers=3)])
        self.assertEqual(sorted(set(wids.tolist())), [0, 1, 2])
        self.assertTrue(no_children_left())

    def test_shuffle_and_drop_last(self):
        np.random.seed(5)
        seen = np.concatenate([x.numpy()[:, 0] for x, _, _ in
                               DataLoader(Squares(40), batch_size=6, shuffle=True,
                                          drop_last=True, num_workers=2)])
        self.assertEqual(len(seen), 36)
        self.assertEqual(len(set(seen.tolist())), 36)

    def test_batch_data_travels_in_shared_memory(self):
        tree = W.np_collate([(np.ones((256, 256), 'float32'), 3)] * 4)
        layout, fd = W.pack(tree)
        try:
            self.assertIsNotNone(fd)
            flat = repr(layout)
            self.assertNotIn('array', flat)         # only offsets, dtypes, shapes
            self.assertLess(len(flat), 200)
            self.assertGreaterEqual(os.fstat(fd).st_size, 4 * 256 * 256 * 4)
        finally:
            os.close(fd)
        big = [b for b in DataLoader(Big(), batch_size=2, num_workers=2)]
        self.assertEqual(big[0].shape, [2, 1024, 1024])
        self.assertEqual(float(big[1].numpy()[1].mean()), 3.0)

    def test_worker_info_init_fn_and_seeds(self):
        self.assertIsNone(get_worker_info())
        path = '/tmp/eddy-test-init-{}'.format(os.getpid())

        def init(wid):
            with open('{}-{}'.format(path, wid), 'w') as f:
                info = get_worker_info()
                f.write('{} {} {}'.format(wid, info.id, info.num_workers))
        try:
            out = [b for b in DataLoader(Noise(), batch_size=1, num_workers=2,
                                         worker_init_fn=init)]
            for wid in (0, 1):
                with open('{}-{}'.format(path, wid)) as f:
                    self.assertEqual(f.read(), '{} {} 2'.format(wid, wid))
        finally:
            for wid in (0, 1):
                if os.path.exists('{}-{}'.format(path, wid)):
                    os.unlink('{}-{}'.format(path, wid))
        vals = [float(b.numpy()[0, 0]) for b in out]
        self.assertEqual(len(set(vals)), len(vals))   # the workers' numpy streams differ

    def test_persistent_workers_and_prefetch(self):
        dl = DataLoader(Squares(), batch_size=4, num_workers=2, persistent_workers=True,
                        prefetch_factor=3)
        it = iter(dl)
        it.next()
        self.assertLessEqual(sum(it.outstanding), 2 * 3)
        pids = list(dl._pool.pids)
        for _ in range(2):
            self.assertEqual(len(list(dl)), 10)
            self.assertEqual(dl._pool.pids, pids)
        dl._drop_pool()
        dl2 = DataLoader(Squares(), batch_size=4, num_workers=2)
        list(dl2)
        self.assertIsNone(dl2._pool)        # not persistent: stopped after the epoch
        self.assertTrue(no_children_left())

    def test_worker_exception_shows_its_traceback(self):
        with self.assertRaises(KeyError) as cm:
            list(DataLoader(Failing(), batch_size=4, num_workers=2))
        text = cm.exception.args[0]
        self.assertIn('DataLoader worker', text)
        self.assertIn('sample thirteen is missing', text)
        self.assertIn('in __getitem__', text)
        self.assertIn("raise KeyError('sample thirteen is missing')", text)
        self.assertTrue(no_children_left())

    def test_dead_worker_is_reported(self):
        with self.assertRaisesRegex(RuntimeError, 'exited with status 3 unexpectedly'):
            list(DataLoader(Dying(), batch_size=2, num_workers=2))
        self.assertTrue(no_children_left())

    def test_timeout(self):
        with self.assertRaisesRegex(RuntimeError, 'timed out'):
            next(iter(DataLoader(Slow(), batch_size=1, num_workers=1, timeout=0.3)))
        self.assertTrue(no_children_left())

    def test_iterable_dataset_split_by_worker_info(self):
        got = np.concatenate([b.numpy().ravel() for b in
                              DataLoader(Stream(), batch_size=4, num_workers=3)])
        self.assertEqual(sorted(got.tolist()), list(range(23)))

    def test_custom_collate_and_no_batching(self):
        def collate(samples):
            return {'x': np.stack([s[0] for s in samples]), 'n': len(samples),
                    't': paddle.to_tensor([s[2] for s in samples])}
        b = next(iter(DataLoader(Squares(), batch_size=3, num_workers=2, collate_fn=collate)))
        self.assertIsInstance(b['x'], np.ndarray)
        self.assertEqual(b['n'], 3)
        self.assertIsInstance(b['t'], paddle.Tensor)
        one = next(iter(DataLoader(Squares(), batch_size=None, num_workers=2)))
        self.assertIsInstance(one[0], paddle.Tensor)
        self.assertEqual(one[0].shape, [2])

    def test_bad_arguments(self):
        with self.assertRaises(ValueError):
            DataLoader(Squares(), num_workers=-1)
        with self.assertRaises(ValueError):
            DataLoader(Squares(), num_workers=2, prefetch_factor=0)
        with self.assertRaises(ValueError):
            DataLoader(Squares(), num_workers=2, timeout=-1)

    def test_next_method_single_process(self):
        it = iter(DataLoader(Squares(6), batch_size=4))
        self.assertEqual(it.next()[0].shape, [4, 2])
        self.assertEqual(next(it)[0].shape, [2, 2])
        with self.assertRaises(StopIteration):
            it.next()


class Big(Dataset):
    def __getitem__(self, i):
        return np.full((1024, 1024), i, 'float32')

    def __len__(self):
        return 4


CTRL_C = textwrap.dedent('''
    import sys, time, numpy as np
    import paddle
    from paddle.io import DataLoader, Dataset
    class D(Dataset):
        def __getitem__(self, i):
            time.sleep(0.2)
            return np.zeros(3, 'float32')
        def __len__(self):
            return 200
    dl = DataLoader(D(), batch_size=1, num_workers=2)
    it = iter(dl)
    next(it)
    print('PIDS', *dl._pool.pids, flush=True)
    for b in it:
        pass
''')


class TestCtrlC(unittest.TestCase):
    def test_sigint_stops_loader_and_workers(self):
        env = dict(os.environ)
        # SIGINT must be at its default and unblocked in the child (a test
        # runner may start us with it ignored or blocked, which exec keeps)
        def default_sigint():
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            signal.pthread_sigmask(signal.SIG_UNBLOCK, [signal.SIGINT])
        p = subprocess.Popen([sys.executable, '-c', CTRL_C], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, env=env,
                             preexec_fn=default_sigint)
        line = p.stdout.readline()
        if not line.startswith('PIDS'):
            p.kill()
            self.fail(line + p.communicate()[1])
        pids = [int(x) for x in line.split()[1:]]
        p.send_signal(signal.SIGINT)
        _, err = p.communicate(timeout=30)
        self.assertNotEqual(p.returncode, 0, err[-2000:])
        self.assertIn('KeyboardInterrupt', err)
        # only the main process's traceback: workers ignore SIGINT
        self.assertEqual(err.count('Traceback'), 1, err)
        for pid in pids:
            for _ in range(100):
                try:
                    os.kill(pid, 0)
                except ProcessLookupError:
                    break
                time.sleep(0.02)
            else:
                self.fail('worker {} still running after Ctrl-C'.format(pid))


SECCOMP_CHILD = textwrap.dedent('''
    import ctypes, errno, os, re, sys
    src, names = sys.argv[1], None
    text = open(src).read()
    body = text[text.index('allowed[] = {'):]
    body = body[:body.index('};')]
    names = re.findall(r'"([a-z0-9_]+)"', body)
    lib = ctypes.CDLL(sys.argv[2])
    lib.seccomp_init.restype = ctypes.c_void_p
    lib.seccomp_syscall_resolve_name.argtypes = [ctypes.c_char_p]
    ACT_ALLOW = 0x7fff0000
    def ERRNO(e): return 0x00050000 | e
    ctx = ctypes.c_void_p(lib.seccomp_init(ERRNO(errno.EPERM)))
    def add(action, name):
        nr = lib.seccomp_syscall_resolve_name(name.encode())
        if nr < 0:
            return
        rc = lib.seccomp_rule_add(ctx, ctypes.c_uint32(action), nr, ctypes.c_uint(0))
        assert rc == 0, (name, rc)
    # the list, plus the calls sbx_seccomp.c allows with argument checks
    # (clone without namespace flags, socket for unix/inet, ioctl, personality)
    for n in names + ['clone', 'socket', 'ioctl', 'personality']:
        add(ACT_ALLOW, n)
    add(ERRNO(errno.ENOSYS), 'clone3')
    assert lib.seccomp_load(ctx) == 0
    # under the filter: something off the list fails
    try:
        os.chroot('/')
        raise SystemExit('chroot was allowed')
    except PermissionError:
        pass
    import numpy as np
    import paddle
    from paddle.io import DataLoader, Dataset
    class D(Dataset):
        def __getitem__(self, i):
            return np.full((3, 8, 8), i, 'float32'), i
        def __len__(self):
            return 20
    out = [x.numpy()[:, 0, 0, 0] for x, _ in DataLoader(D(), batch_size=4, num_workers=2)]
    print('OK', np.concatenate(out).tolist() == list(range(20)))
''')


class TestUnderSandboxSeccomp(unittest.TestCase):
    def test_workers_run_under_the_allow_list(self):
        src = os.path.join(ROOT, 'sandbox', 'sbx_seccomp.c')
        lib = ctypes.util.find_library('seccomp')
        if not os.path.exists(src) or lib is None:
            self.skipTest('libseccomp or sandbox/sbx_seccomp.c not found')
        r = subprocess.run([sys.executable, '-c', SECCOMP_CHILD, src, lib],
                           capture_output=True, text=True, timeout=120)
        if r.returncode != 0 and 'seccomp_load' in r.stderr:
            self.skipTest('this host cannot load seccomp filters: ' + r.stderr[-300:])
        self.assertEqual(r.returncode, 0, r.stderr[-3000:])
        self.assertIn('OK True', r.stdout)


if __name__ == '__main__':
    unittest.main()


KERNEL = os.environ.get("EDDY_KERNEL_BIN")


@unittest.skipUnless(KERNEL and os.path.exists(KERNEL), "eddy-kernel was not built")
class TestThroughEddyKernel(unittest.TestCase):
    def test_workers_in_the_kernel(self):
        # eddy-kernel embeds Python and links paddle._C statically: workers
        # are forks of the kernel process itself
        src = textwrap.dedent('''
            import numpy as np
            from paddle.io import DataLoader, Dataset, get_worker_info
            class D(Dataset):
                def __getitem__(self, i):
                    return np.full((2,), i, 'float32'), get_worker_info().id
                def __len__(self):
                    return 12
            xs, ws = [], []
            for x, w in DataLoader(D(), batch_size=3, num_workers=2):
                xs += x.numpy()[:, 0].tolist()
                ws += w.numpy().tolist()
            print('RESULT', xs == list(range(12)), sorted(set(ws)))
        ''')
        import tempfile
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, 'job.py')
            with open(path, 'w') as f:
                f.write(src)
            env = {k: v for k, v in os.environ.items() if k != 'PYTHONPATH'}
            r = subprocess.run([KERNEL, 'run', path], cwd=d, env=env, capture_output=True,
                               text=True, timeout=300)
        self.assertEqual(r.returncode, 0, r.stderr[-3000:])
        self.assertIn('RESULT True [0, 1]', r.stdout)
