"""paddle.distributed.spawn(func, args=(), nprocs=-1, join=True, daemon=False):
starts nprocs processes (multiprocessing's "spawn" start method) with the
launcher's environment, each running func(*args) after
paddle.distributed.init_parallel_env() can connect them."""
import multiprocessing
import os
import socket


def _free_ports(n):
    socks, ports = [], []
    for _ in range(n):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.bind(('127.0.0.1', 0))
        socks.append(s)
        ports.append(s.getsockname()[1])
    for s in socks:
        s.close()
    return ports


def _entry(func, args, env):
    os.environ.update(env)
    func(*args)


class MultiprocessContext(object):
    def __init__(self, procs):
        self.processes = procs

    def join(self, timeout=None):
        """Waits for every process; when one fails the others are stopped and
        an Exception names the failing rank and its exit status."""
        import time
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            alive = False
            for rank, p in enumerate(self.processes):
                if p.exitcode is None:
                    alive = True
                elif p.exitcode != 0:
                    for q in self.processes:
                        if q.exitcode is None:
                            q.terminate()
                    for q in self.processes:
                        q.join(5)
                        if q.exitcode is None:
                            q.kill()
                    code = p.exitcode
                    how = "was killed by signal {}".format(-code) if code < 0 else \
                        "exited with status {}".format(code)
                    raise Exception("paddle.distributed.spawn: rank {} (pid {}) {}".format(rank, p.pid, how))
            if not alive:
                return True
            if deadline is not None and time.monotonic() > deadline:
                return False
            self.processes[0].join(0.05)


def spawn(func, args=(), nprocs=-1, join=True, daemon=False, **options):
    if nprocs == -1:
        sel = os.environ.get('FLAGS_selected_gpus') or options.get('gpus')
        nprocs = len(str(sel).split(',')) if sel else min(os.cpu_count() or 1, 8)
    if not isinstance(nprocs, int) or nprocs < 1:
        raise ValueError("spawn: nprocs must be a positive int, got {!r}".format(nprocs))
    ips = options.get('ips', '127.0.0.1')
    ports = _free_ports(nprocs)
    eps = ','.join('{}:{}'.format(ips, p) for p in ports)
    ctx = multiprocessing.get_context('spawn')
    procs = []
    for rank in range(nprocs):
        env = {'PADDLE_TRAINER_ID': str(rank), 'PADDLE_TRAINERS_NUM': str(nprocs),
               'PADDLE_TRAINER_ENDPOINTS': eps, 'PADDLE_CURRENT_ENDPOINT': eps.split(',')[rank],
               'PADDLE_RANK_IN_NODE': str(rank), 'PADDLE_LOCAL_SIZE': str(nprocs)}
        p = ctx.Process(target=_entry, args=(func, tuple(args), env), daemon=daemon)
        p.start()
        procs.append(p)
    mc = MultiprocessContext(procs)
    if join:
        mc.join()
    return mc
