"""python -m paddle.distributed.launch: the environment of every rank, the
"[rank N]" prefixes and workerlog.N files, --gpus, a failing rank stopping
the others (one of which would otherwise run for minutes) with its rank and
exit status named, bad options; fleet's collective API under the launcher.
The file is also the rank program (`... worker <mode>`)."""
import os
import subprocess
import sys
import tempfile
import time
import unittest

KEYS = ['PADDLE_TRAINER_ID', 'PADDLE_TRAINERS_NUM', 'PADDLE_TRAINER_ENDPOINTS',
        'PADDLE_CURRENT_ENDPOINT', 'PADDLE_RANK_IN_NODE', 'FLAGS_selected_gpus']


def worker(mode):
    if mode == 'env':
        for k in KEYS:
            print('{}={}'.format(k, os.environ.get(k)))
    elif mode == 'fail':
        if os.environ['PADDLE_TRAINER_ID'] == '2':
            print('rank two gives up', flush=True)
            sys.exit(7)
        time.sleep(300)               # the launcher must stop us
    elif mode == 'fleet':
        import paddle
        from paddle.distributed import fleet
        fleet.init(is_collective=True)
        net = fleet.distributed_model(paddle.nn.Linear(3, 2))
        opt = fleet.distributed_optimizer(paddle.optimizer.SGD(0.1, parameters=net.parameters()))
        x = paddle.full([2, 3], float(fleet.worker_index() + 1))
        net(x).sum().backward()
        # mean over ranks of the per-rank gradient sum(x) over the batch
        g = net._layers.weight.grad.numpy()
        opt.step()
        print('grad', float(g[0, 0]), 'workers', fleet.worker_num())


def launch(args, tmp):
    p = subprocess.run([sys.executable, '-m', 'paddle.distributed.launch', '--log_dir',
                        os.path.join(tmp, 'log')] + args, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=120, cwd=tmp)
    return p.returncode, p.stdout.decode(errors='replace'), p.stderr.decode(errors='replace')


ME = os.path.abspath(__file__)


class LaunchTest(unittest.TestCase):
    def test_environment_prefixes_and_logs(self):
        with tempfile.TemporaryDirectory() as tmp:
            rc, out, err = launch(['--nproc_per_node', '3', ME, 'worker', 'env'], tmp)
            self.assertEqual(rc, 0, out + err)
            eps = None
            for r in range(3):
                mine = [l[len('[rank %d] ' % r):] for l in out.splitlines()
                        if l.startswith('[rank %d] ' % r)]
                env = dict(l.split('=', 1) for l in mine)
                self.assertEqual(env['PADDLE_TRAINER_ID'], str(r))
                self.assertEqual(env['PADDLE_TRAINERS_NUM'], '3')
                self.assertEqual(env['PADDLE_RANK_IN_NODE'], str(r))
                self.assertEqual(env['FLAGS_selected_gpus'], '')
                e = env['PADDLE_TRAINER_ENDPOINTS'].split(',')
                self.assertEqual(len(set(e)), 3)
                self.assertEqual(env['PADDLE_CURRENT_ENDPOINT'], e[r])
                eps = eps or e
                self.assertEqual(e, eps)
                with open(os.path.join(tmp, 'log', 'workerlog.%d' % r)) as f:
                    self.assertEqual(f.read().splitlines(), mine)

    def test_gpus_select_one_device_per_rank(self):
        with tempfile.TemporaryDirectory() as tmp:
            rc, out, err = launch(['--gpus', '0,1', ME, 'worker', 'env'], tmp)
            self.assertEqual(rc, 0, out + err)
            self.assertIn('[rank 0] FLAGS_selected_gpus=0', out)
            self.assertIn('[rank 1] FLAGS_selected_gpus=1', out)

    def test_a_failing_rank_stops_the_others_and_is_named(self):
        with tempfile.TemporaryDirectory() as tmp:
            rc, out, err = launch(['--nproc_per_node', '3', ME, 'worker', 'fail'], tmp)
            self.assertEqual(rc, 1)
            self.assertIn('[rank 2] rank two gives up', out)
            self.assertRegex(err, r'launch: rank 2 \(pid \d+\) exited with status 7; stopped the other ranks')

    def test_bad_options(self):
        with tempfile.TemporaryDirectory() as tmp:
            rc, out, err = launch(['--nproc_per_node', '2', '--gpus', '0', ME], tmp)
            self.assertEqual(rc, 2)
            self.assertIn('--gpus names 1 devices for --nproc_per_node 2', err)
            rc, out, err = launch(['--nnodes', '2', ME], tmp)
            self.assertIn('--nnodes > 1 needs --master', err)

    def test_fleet_data_parallel(self):
        with tempfile.TemporaryDirectory() as tmp:
            rc, out, err = launch(['--nproc_per_node', '2', ME, 'worker', 'fleet'], tmp)
            self.assertEqual(rc, 0, out + err)
            # d(sum(W x + b))/dW[0,0] = sum over the batch of x = 2 * (rank + 1); mean = 3
            self.assertIn('[rank 0] grad 3.0 workers 2', out)
            self.assertIn('[rank 1] grad 3.0 workers 2', out)

    def test_two_nodes_meet_at_the_master(self):
        # two launchers on this host stand for two nodes of one rank each
        from paddle.distributed.spawn import _free_ports
        master = '127.0.0.1:{}'.format(_free_ports(1)[0])
        with tempfile.TemporaryDirectory() as tmp:
            procs = [subprocess.Popen([sys.executable, '-m', 'paddle.distributed.launch', '--nnodes', '2',
                                       '--rank', str(r), '--master', master, '--log_dir',
                                       os.path.join(tmp, 'log%d' % r), ME, 'worker', 'fleet'],
                                      stdout=subprocess.PIPE, stderr=subprocess.STDOUT, cwd=tmp)
                     for r in (1, 0)]
            outs = [p.communicate(timeout=120)[0].decode() for p in procs]
            for p, o in zip(procs, outs):
                self.assertEqual(p.returncode, 0, o)
            self.assertIn('[rank 1] grad 3.0 workers 2', outs[0])
            self.assertIn('[rank 0] grad 3.0 workers 2', outs[1])


if __name__ == '__main__' and len(sys.argv) > 1 and sys.argv[1] == 'worker':
    worker(sys.argv[2])
    sys.exit(0)
if __name__ == '__main__':
    unittest.main()
