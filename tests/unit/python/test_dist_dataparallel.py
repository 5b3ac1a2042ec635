"""paddle.DataParallel on 2 and 4 CPU ranks (started by the launcher) gives,
after every step, the parameters one process gets on the combined batch
(within 1e-5), also with no_sync gradient accumulation and an unused
parameter; a checkpointed and resumed distributed run gives the losses of an
uninterrupted one.

The file is also the rank program: `python test_dist_dataparallel.py worker
<model> <steps> <outdir> [<start> <ckpt>]`."""
import ast
import os
import subprocess
import sys
import tempfile
import unittest

import numpy as np

STEPS = 4
GLOBAL_BATCH = 8


def build(model):
    import paddle
    import paddle.nn as nn
    paddle.seed(7)
    if model == 'mlp':
        class MLP(nn.Layer):
            def __init__(self):
                super().__init__()
                self.fc1 = nn.Linear(6, 16)
                self.fc2 = nn.Linear(16, 3)
                self.unused = nn.Linear(3, 3)      # never called: find_unused_parameters

            def forward(self, x):
                return self.fc2(paddle.tanh(self.fc1(x)))
        return MLP()
    if model == 'emb':
        # integer inputs: no end-of-backward node, the last hook finishes
        class Emb(nn.Layer):
            def __init__(self):
                super().__init__()
                self.emb = nn.Embedding(20, 8)
                self.fc2 = nn.Linear(8, 3)

            def forward(self, ids):
                return self.fc2(self.emb(ids).mean(axis=1))
        return Emb()
    return paddle.vision.models.LeNet(num_classes=4)


def batch(model, step):
    rs = np.random.RandomState(100 + step)
    if model == 'emb':
        x = rs.randint(0, 20, size=(GLOBAL_BATCH, 5)).astype('int64')
        y = rs.randint(0, 3, size=(GLOBAL_BATCH,)).astype('int64')
    elif model == 'mlp':
        x = rs.randn(GLOBAL_BATCH, 6).astype('float32')
        y = rs.randint(0, 3, size=(GLOBAL_BATCH,)).astype('int64')
    else:
        x = rs.randn(GLOBAL_BATCH, 1, 28, 28).astype('float32')
        y = rs.randint(0, 4, size=(GLOBAL_BATCH,)).astype('int64')
    return x, y


def make_opt(net, model):
    # LeNet's gradients reach ~3 on random images: a smaller step keeps float32
    # rounding (different summation orders over 1 vs n ranks, ~1e-7) from
    # growing past the 1e-5 bound over the steps
    import paddle
    lr = 0.01 if model == 'lenet' else 0.1
    return paddle.optimizer.Momentum(learning_rate=lr, momentum=0.9, parameters=net.parameters())


def params_of(net):
    return {k: v.numpy().copy() for k, v in net.state_dict().items()}


def worker(model, steps, outdir, start=0, ckpt=''):
    import paddle
    import paddle.distributed as dist
    import paddle.nn.functional as F
    dist.init_parallel_env()
    rank, n = dist.get_rank(), dist.get_world_size()
    net = build(model)
    if rank != 0:           # DataParallel must broadcast rank 0's parameters
        for p in net.parameters():
            p.set_value(np.full(p.shape, 0.5, dtype='float32'))
    # LeNet: small buckets (~12 of them) so that most leave during backward
    small = {'comm_buffer_size': 0.02, 'last_comm_buffer_size': 0.01} if model == 'lenet' else {}
    dp = paddle.DataParallel(net, find_unused_parameters=True, **small)
    opt = make_opt(dp, model)
    if start:
        net.set_state_dict(paddle.load(ckpt + '.pdparams'))
        opt.set_state_dict(paddle.load(ckpt + '.pdopt'))
    b = GLOBAL_BATCH // n
    losses = []
    for step in range(start, steps):
        x, y = batch(model, step)
        x, y = x[rank * b:(rank + 1) * b], y[rank * b:(rank + 1) * b]
        if model == 'mlp' and step % 2 == 1:
            # two micro-batches: the first under no_sync, the second reduces both
            h = b // 2
            with dp.no_sync():
                l1 = F.cross_entropy(dp(paddle.to_tensor(x[:h])), paddle.to_tensor(y[:h])) * 0.5
                l1.backward()
            l2 = F.cross_entropy(dp(paddle.to_tensor(x[h:])), paddle.to_tensor(y[h:])) * 0.5
            l2.backward()
            loss = float(l1) + float(l2)
        else:
            out = dp(paddle.to_tensor(x))
            l = F.cross_entropy(out, paddle.to_tensor(y))
            l.backward()
            loss = float(l)
        opt.step()
        opt.clear_grad()
        t = paddle.to_tensor([loss], dtype='float64')
        dist.all_reduce(t, op=dist.ReduceOp.AVG)
        losses.append(float(t.numpy()[0]))
        if rank == 0:
            np.savez(os.path.join(outdir, 'step{}.npz'.format(step)), **params_of(net))
            if ckpt and step == steps - 1 and not start:
                paddle.save(net.state_dict(), ckpt + '.pdparams')
                paddle.save(opt.state_dict(), ckpt + '.pdopt')
    if rank == 0:
        np.save(os.path.join(outdir, 'losses.npy'), np.array(losses))
        with open(os.path.join(outdir, 'stats.txt'), 'w') as f:
            f.write(repr(dp._reducer.stats))


def reference(model, steps):
    """One process, the whole batch each step."""
    import paddle
    import paddle.nn.functional as F
    net = build(model)
    opt = make_opt(net, model)
    out, losses = [], []
    for step in range(steps):
        x, y = batch(model, step)
        if model == 'mlp' and step % 2 == 1:
            # the same two micro-batches of every rank, accumulated
            l = 0.0
            n_ranks = reference.nranks
            b = GLOBAL_BATCH // n_ranks
            h = b // 2
            idx1 = np.concatenate([np.arange(r * b, r * b + h) for r in range(n_ranks)])
            idx2 = np.concatenate([np.arange(r * b + h, (r + 1) * b) for r in range(n_ranks)])
            for idx in (idx1, idx2):
                li = F.cross_entropy(net(paddle.to_tensor(x[idx])), paddle.to_tensor(y[idx])) * 0.5
                li.backward()
                l += float(li)
        else:
            li = F.cross_entropy(net(paddle.to_tensor(x)), paddle.to_tensor(y))
            li.backward()
            l = float(li)
        opt.step()
        opt.clear_grad()
        out.append(params_of(net))
        losses.append(l)
    return out, losses


def launch(nproc, args, tmp):
    env = dict(os.environ)
    env['EDDY_DIST_TIMEOUT'] = '60'
    p = subprocess.run([sys.executable, '-m', 'paddle.distributed.launch', '--nproc_per_node', str(nproc),
                        '--log_dir', os.path.join(tmp, 'log'), os.path.abspath(__file__), 'worker'] + args,
                       env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=240)
    return p.returncode, p.stdout.decode(errors='replace')


class DataParallelTest(unittest.TestCase):
    def check(self, model, nproc):
        with tempfile.TemporaryDirectory() as tmp:
            rc, out = launch(nproc, [model, str(STEPS), tmp], tmp)
            self.assertEqual(rc, 0, out)
            reference.nranks = nproc
            ref, ref_losses = reference(model, STEPS)
            for step in range(STEPS):
                got = np.load(os.path.join(tmp, 'step{}.npz'.format(step)))
                self.assertEqual(sorted(got.files), sorted(ref[step]))
                for k in ref[step]:
                    np.testing.assert_allclose(got[k], ref[step][k], rtol=0, atol=1e-5,
                                               err_msg='{} step {} {}'.format(model, step, k))
            # the parameters really moved (a test that cannot fail is a defect)
            self.assertGreater(np.abs(ref[-1]['fc.2.weight' if model == 'lenet' else 'fc2.weight']
                                      - build_params(model)).max(), 1e-3)
            np.testing.assert_allclose(np.load(os.path.join(tmp, 'losses.npy')), ref_losses, atol=1e-5)
            with open(os.path.join(tmp, 'stats.txt')) as f:
                stats = ast.literal_eval(f.read())
            if model == 'lenet':
                # every bucket left from a gradient hook, i.e. while backward
                # was still running, none waited for its end
                self.assertGreater(stats['buckets'], 4)
                self.assertEqual(stats['from_hooks'], stats['buckets'] * STEPS)
                self.assertEqual(stats['at_end'], 0)
            if model == 'mlp':
                # the unused layer's bucket is only reduced at the end
                self.assertGreater(stats['at_end'], 0)

    def test_mlp_2_ranks(self):
        self.check('mlp', 2)

    def test_mlp_4_ranks(self):
        self.check('mlp', 4)

    def test_lenet_2_ranks(self):
        self.check('lenet', 2)

    def test_lenet_4_ranks(self):
        self.check('lenet', 4)

    def test_integer_inputs_2_ranks(self):
        self.check('emb', 2)

    def test_checkpoint_resume_gives_the_same_losses(self):
        with tempfile.TemporaryDirectory() as tmp:
            full = os.path.join(tmp, 'full')
            part = os.path.join(tmp, 'part')
            os.mkdir(full)
            os.mkdir(part)
            rc, out = launch(2, ['mlp', '6', full], tmp)
            self.assertEqual(rc, 0, out)
            ck = os.path.join(tmp, 'ckpt')
            rc, out = launch(2, ['mlp', '3', part, '0', ck], tmp)
            self.assertEqual(rc, 0, out)
            first = np.load(os.path.join(part, 'losses.npy'))
            rc, out = launch(2, ['mlp', '6', part, '3', ck], tmp)
            self.assertEqual(rc, 0, out)
            second = np.load(os.path.join(part, 'losses.npy'))
            np.testing.assert_allclose(np.concatenate([first, second]),
                                       np.load(os.path.join(full, 'losses.npy')), rtol=0, atol=1e-6)


def build_params(model):
    net = build(model)
    return net.state_dict()['fc.2.weight' if model == 'lenet' else 'fc2.weight'].numpy()


if __name__ == '__main__' and len(sys.argv) > 1 and sys.argv[1] == 'worker':
    a = sys.argv[2:]
    worker(a[0], int(a[1]), a[2], int(a[3]) if len(a) > 3 else 0, a[4] if len(a) > 4 else '')
    sys.exit(0)
if __name__ == '__main__':
    unittest.main()
