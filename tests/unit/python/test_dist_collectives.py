"""paddle.distributed's collectives on 3 CPU ranks: every reduce op and dtype
of all_reduce (also a buffer not divisible by the ranks, an empty one and
1 MiB), reduce_scatter, broadcast, all_gather, barrier, new_group over a
subset; a rank that dies or hangs makes the others fail with an error naming
a peer, within the timeout; spawn; DistributedBatchSampler shards without
overlap. The file is also the rank program (`... worker <mode> <outdir>`)."""
import json
import os
import subprocess
import sys
import tempfile
import time
import unittest

import numpy as np

DTYPES = ['float32', 'float64', 'int32', 'int64']


def vals(rank, n, dtype):
    # small integers: sums, products, averages are exact in every dtype
    return (np.arange(n) % 5 + rank + 1).astype(dtype)


def worker_collectives(outdir):
    import paddle
    import paddle.distributed as dist
    dist.init_parallel_env()
    r, n = dist.get_rank(), dist.get_world_size()
    res = {}
    ops = {'sum': dist.ReduceOp.SUM, 'max': dist.ReduceOp.MAX, 'min': dist.ReduceOp.MIN,
           'prod': dist.ReduceOp.PROD, 'avg': dist.ReduceOp.AVG}
    for dt in DTYPES:
        for name, op in ops.items():
            for count in (0, 1, 7, 1 << 18):
                t = paddle.to_tensor(vals(r, count, dt))
                dist.all_reduce(t, op=op)
                res['ar/{}/{}/{}'.format(dt, name, count)] = t.numpy().tolist() if count < 100 else \
                    float(np.asarray(t.numpy(), dtype='float64').sum())
        parts = [paddle.to_tensor(vals(r + i, 5, dt)) for i in range(n)]
        out = paddle.zeros([5], dtype=dt)
        dist.reduce_scatter(out, parts)
        res['rs/' + dt] = out.numpy().tolist()
        t = paddle.to_tensor(vals(r, 6, dt))
        dist.broadcast(t, src=n - 1)
        res['bc/' + dt] = t.numpy().tolist()
        lst = []
        dist.all_gather(lst, paddle.to_tensor(vals(r, 3, dt)))
        res['ag/' + dt] = [x.numpy().tolist() for x in lst]
    # half precision travels as float32
    for dt in ('float16', 'bfloat16'):
        t = paddle.to_tensor(vals(r, 5, 'float32'), dtype=dt)
        dist.all_reduce(t)
        res['half/' + dt] = [str(t.dtype), np.asarray(t.numpy(), dtype='float64').tolist()]
    # async task
    t = paddle.to_tensor(vals(r, 4, 'float32'))
    task = dist.all_reduce(t, sync_op=False)
    task.wait()
    res['async'] = t.numpy().tolist()
    # a group of ranks 0 and 2 (rank 1 is not a member: a no-op there)
    g = dist.new_group([0, 2])
    t = paddle.to_tensor(vals(r, 4, 'float32'))
    dist.all_reduce(t, group=g)
    res['group'] = t.numpy().tolist()
    res['group_rank'] = g.rank
    t = paddle.to_tensor(vals(r, 4, 'int64'))
    dist.reduce(t, dst=1)
    res['reduce'] = t.numpy().tolist()
    t = paddle.zeros([3], dtype='float64')
    dist.scatter(t, [paddle.full([3], 10.0 * k, dtype='float64') for k in range(n)] if r == 2 else None, src=2)
    res['scatter'] = t.numpy().tolist()
    # a ring of sends: rank r sends to r+1 and receives from r-1 (isend first:
    # both travel on the worker thread, in order)
    t = paddle.full([1000], float(r))
    got = paddle.zeros([1000])
    if r % 2 == 0:
        dist.send(t, dst=(r + 1) % n)
        dist.recv(got, src=(r - 1) % n)
    else:
        dist.recv(got, src=(r - 1) % n)
        dist.send(t, dst=(r + 1) % n)
    res['p2p'] = float(got.numpy()[0])
    objs = []
    dist.all_gather_object(objs, {'rank': r})
    res['objects'] = objs
    dist.barrier()
    with open(os.path.join(outdir, 'rank{}.json'.format(r)), 'w') as f:
        json.dump(res, f)


def worker_die(outdir):
    import paddle
    import paddle.distributed as dist
    dist.init_parallel_env()
    r = dist.get_rank()
    t = paddle.ones([1 << 16])
    dist.all_reduce(t)
    if r == 1:
        if os.environ.get('X_MODE') == 'hang':
            time.sleep(8)      # longer than EDDY_DIST_TIMEOUT=3
        os._exit(3)
    dist.all_reduce(t)          # must raise, not hang
    print('UNEXPECTED: all_reduce returned')


def spawned(outdir):
    import paddle
    import paddle.distributed as dist
    dist.init_parallel_env()
    t = paddle.to_tensor([float(dist.get_rank() + 1)])
    dist.all_reduce(t)
    with open(os.path.join(outdir, 'spawn{}.txt'.format(dist.get_rank())), 'w') as f:
        f.write(str(float(t.numpy()[0])))


def spawned_fail(outdir):
    import paddle.distributed as dist
    if dist.ParallelEnv().rank == 1:
        sys.exit(5)


def env_for(rank, n, eps, extra=None):
    env = dict(os.environ)
    env.update({'PADDLE_TRAINER_ID': str(rank), 'PADDLE_TRAINERS_NUM': str(n),
                'PADDLE_TRAINER_ENDPOINTS': ','.join(eps), 'PADDLE_CURRENT_ENDPOINT': eps[rank]})
    env.update(extra or {})
    return env


def free_eps(n):
    from paddle.distributed.spawn import _free_ports
    return ['127.0.0.1:{}'.format(p) for p in _free_ports(n)]


def start_ranks(n, mode, outdir, extra=None):
    """The ranks without the launcher (which would stop the survivors)."""
    eps = free_eps(n)
    return [subprocess.Popen([sys.executable, os.path.abspath(__file__), 'worker', mode, outdir],
                             env=env_for(r, n, eps, extra), stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT) for r in range(n)]


class CollectivesTest(unittest.TestCase):
    def test_every_op_and_dtype_on_3_ranks(self):
        self.check_collectives({})

    def test_every_op_and_dtype_on_3_ranks_over_tcp(self):
        # local ranks use Unix sockets; EDDY_DIST_TCP forces the TCP path of
        # multi-host jobs
        self.check_collectives({'EDDY_DIST_TCP': '1'})

    def check_collectives(self, extra):
        n = 3
        with tempfile.TemporaryDirectory() as tmp:
            procs = start_ranks(n, 'collectives', tmp, dict(extra, EDDY_DIST_TIMEOUT='60'))
            outs = [p.communicate(timeout=120)[0].decode() for p in procs]
            for p, o in zip(procs, outs):
                self.assertEqual(p.returncode, 0, o)
            res = []
            for r in range(n):
                with open(os.path.join(tmp, 'rank{}.json'.format(r))) as f:
                    res.append(json.load(f))
        for dt in DTYPES:
            for count in (0, 1, 7, 1 << 18):
                stack = np.stack([vals(r, count, dt).astype('float64') for r in range(n)])
                want = {'sum': stack.sum(0), 'max': stack.max(0), 'min': stack.min(0),
                        'prod': stack.prod(0), 'avg': stack.sum(0) / n}
                if dt.startswith('int'):
                    want['avg'] = np.floor_divide(stack.sum(0), n)
                for name, w in want.items():
                    for r in range(n):
                        got = res[r]['ar/{}/{}/{}'.format(dt, name, count)]
                        if count < 100:
                            np.testing.assert_allclose(got, w, err_msg='{} {} {}'.format(dt, name, count))
                        else:
                            self.assertAlmostEqual(got, float(w.sum()), delta=abs(float(w.sum())) * 1e-6,
                                                   msg='{} {} {}'.format(dt, name, count))
            for r in range(n):
                want_rs = sum(vals(k + r, 5, dt).astype('float64') for k in range(n))
                np.testing.assert_array_equal(res[r]['rs/' + dt], want_rs)
                np.testing.assert_array_equal(res[r]['bc/' + dt], vals(n - 1, 6, dt))
                self.assertEqual(res[r]['ag/' + dt], [vals(k, 3, dt).tolist() for k in range(n)])
        for r in range(n):
            for dt in ('float16', 'bfloat16'):
                self.assertIn(dt, res[r]['half/' + dt][0])
                self.assertEqual(res[r]['half/' + dt][1],
                                 sum(vals(k, 5, 'float64') for k in range(n)).tolist())
        for r in range(n):
            self.assertEqual(res[r]['async'], (sum(vals(k, 4, 'float32') for k in range(n))).tolist())
            self.assertEqual(res[r]['objects'], [{'rank': k} for k in range(n)])
        np.testing.assert_array_equal(res[0]['group'], vals(0, 4, 'float32') + vals(2, 4, 'float32'))
        np.testing.assert_array_equal(res[2]['group'], res[0]['group'])
        np.testing.assert_array_equal(res[1]['group'], vals(1, 4, 'float32'))
        self.assertEqual([res[r]['group_rank'] for r in range(n)], [0, -1, 1])
        self.assertEqual(res[1]['reduce'], sum(vals(k, 4, 'int64') for k in range(n)).tolist())
        for r in (0, 2):
            self.assertEqual(res[r]['reduce'], vals(r, 4, 'int64').tolist())
        for r in range(n):
            self.assertEqual(res[r]['scatter'], [10.0 * r] * 3)
            self.assertEqual(res[r]['p2p'], float((r - 1) % n))

    def check_failure(self, mode, want):
        with tempfile.TemporaryDirectory() as tmp:
            procs = start_ranks(3, 'die', tmp, {'X_MODE': mode, 'EDDY_DIST_TIMEOUT': '3'})
            outs = [p.communicate(timeout=60)[0].decode() for p in procs]
        self.assertEqual(procs[1].returncode, 3, outs[1])
        for r in (0, 2):
            self.assertNotEqual(procs[r].returncode, 0, outs[r])
            self.assertIn('CommError', outs[r])
            self.assertNotIn('UNEXPECTED', outs[r])
        # rank 2 receives from rank 1 in the ring: it names it
        self.assertRegex(outs[2], want)

    def test_a_dead_rank_fails_the_others(self):
        self.check_failure('die', r'rank 2: rank 1 closed the connection')

    def test_a_hung_rank_times_out_the_others(self):
        self.check_failure('hang', r'rank 2: timed out after 3000 ms waiting for rank 1')

    def test_bad_environment_is_a_clear_error(self):
        env = env_for(0, 2, ['127.0.0.1:1'])
        p = subprocess.run([sys.executable, '-c', 'import paddle.distributed as d; d.init_parallel_env()'],
                           env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn('names 1 endpoints for 2 ranks', p.stdout.decode())
        env = env_for(0, 2, ['nonsense', '127.0.0.1:1'])
        p = subprocess.run([sys.executable, '-c', 'import paddle.distributed as d; d.init_parallel_env()'],
                           env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        self.assertIn('is not host:port', p.stdout.decode())

    def test_spawn(self):
        import paddle.distributed as dist
        with tempfile.TemporaryDirectory() as tmp:
            dist.spawn(spawned, args=(tmp,), nprocs=2)
            for r in range(2):
                with open(os.path.join(tmp, 'spawn{}.txt'.format(r))) as f:
                    self.assertEqual(f.read(), '3.0')
            with self.assertRaisesRegex(Exception, r'rank 1 \(pid \d+\) exited with status 5'):
                dist.spawn(spawned_fail, args=(tmp,), nprocs=2)

    def test_distributed_batch_sampler_shards_without_overlap(self):
        from paddle.distributed.sampler import DistributedBatchSampler
        data = list(range(23))
        for shuffle in (False, True):
            seen = []
            for r in range(4):
                s = DistributedBatchSampler(data, batch_size=3, num_replicas=4, rank=r, shuffle=shuffle)
                mine = [i for b in s for i in b]
                self.assertEqual(len(mine), 6)             # ceil(23 / 4), padded
                seen.append(mine)
            flat = [i for m in seen for i in m]
            self.assertEqual(sorted(set(flat)), data)      # every sample once (+1 pad)
            self.assertEqual(len(flat) - len(set(flat)), 1)
        os.environ.update({'PADDLE_TRAINER_ID': '2', 'PADDLE_TRAINERS_NUM': '4'})
        try:
            s = DistributedBatchSampler(data, batch_size=2)
            self.assertEqual((s.nranks, s.local_rank), (4, 2))
        finally:
            del os.environ['PADDLE_TRAINER_ID'], os.environ['PADDLE_TRAINERS_NUM']


if __name__ == '__main__' and len(sys.argv) > 1 and sys.argv[1] == 'worker':
    {'collectives': worker_collectives, 'die': worker_die}[sys.argv[2]](sys.argv[3])
    sys.exit(0)
if __name__ == '__main__':
    unittest.main()
