"""The launcher: python -m paddle.distributed.launch [options] train.py args

  --nproc_per_node N   ranks on this node (default: one per --gpus entry, else 1)
  --gpus 0,1           GPUs of this node, one per rank (FLAGS_selected_gpus)
  --nnodes N           nodes of the job (default 1)
  --master host:port   rendezvous of a multi-node job (node rank 0 serves it)
  --rank R             this node's rank (multi-node)
  --log_dir DIR        where workerlog.<rank> files go (default ./log)

Each rank runs `python -u train.py args` with PADDLE_TRAINER_ID,
PADDLE_TRAINERS_NUM, PADDLE_TRAINER_ENDPOINTS, PADDLE_CURRENT_ENDPOINT,
PADDLE_RANK_IN_NODE, PADDLE_LOCAL_SIZE, PADDLE_NNODES, PADDLE_MASTER and
FLAGS_selected_gpus set. Its output is copied to the launcher's stdout with
a "[rank N] " prefix and to log_dir/workerlog.N. When a rank fails the others
are stopped (SIGTERM, then SIGKILL after 5 s) and the launcher exits with
status 1 after naming the rank and its exit status."""
import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time


def _parse(argv):
    ap = argparse.ArgumentParser(prog='python -m paddle.distributed.launch')
    ap.add_argument('--nproc_per_node', type=int, default=None)
    ap.add_argument('--gpus', '--devices', dest='gpus', default=None)
    ap.add_argument('--nnodes', type=int, default=1)
    ap.add_argument('--master', default=None)
    ap.add_argument('--rank', type=int, default=0)
    ap.add_argument('--log_dir', default='log')
    ap.add_argument('training_script')
    ap.add_argument('training_script_args', nargs=argparse.REMAINDER)
    a = ap.parse_args(argv)
    gpus = [g for g in a.gpus.split(',') if g != ''] if a.gpus else []
    if a.nproc_per_node is None:
        a.nproc_per_node = len(gpus) or 1
    if a.nproc_per_node < 1:
        ap.error('--nproc_per_node must be at least 1')
    if gpus and len(gpus) != a.nproc_per_node:
        ap.error('--gpus names {} devices for --nproc_per_node {}'.format(len(gpus), a.nproc_per_node))
    if a.nnodes < 1 or not 0 <= a.rank < a.nnodes:
        ap.error('--rank {} is out of range for --nnodes {}'.format(a.rank, a.nnodes))
    if a.nnodes > 1 and not a.master:
        ap.error('--nnodes > 1 needs --master host:port')
    a.gpus = gpus
    return a


def _free_ports(host, n):
    socks, ports = [], []
    for _ in range(n):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.bind((host, 0))
        socks.append(s)
        ports.append(s.getsockname()[1])
    for s in socks:
        s.close()
    return ports


def _recv_json(conn):
    data = b''
    while not data.endswith(b'\n'):
        chunk = conn.recv(65536)
        if not chunk:
            raise RuntimeError('launch: the rendezvous connection closed')
        data += chunk
    return json.loads(data.decode())


def _rendezvous(a):
    """Every node's endpoints, in node-rank order. Node 0 serves --master."""
    host, port = a.master.rsplit(':', 1)
    port = int(port)
    server = None
    if a.rank == 0:
        server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        server.bind(('', port))
        server.listen(a.nnodes)
    deadline = time.monotonic() + 600
    while True:
        try:
            c = socket.create_connection((host, port), timeout=5)
            break
        except OSError:
            if time.monotonic() > deadline:
                raise RuntimeError('launch: cannot reach the master {}'.format(a.master))
            time.sleep(0.5)
    my_ip = c.getsockname()[0]
    eps = ['{}:{}'.format(my_ip, p) for p in _free_ports(my_ip, a.nproc_per_node)]
    c.sendall((json.dumps({'rank': a.rank, 'endpoints': eps}) + '\n').encode())
    if server is not None:
        conns, nodes = [], {}
        while len(nodes) < a.nnodes:
            s, _ = server.accept()
            msg = _recv_json(s)
            nodes[int(msg['rank'])] = msg['endpoints']
            conns.append(s)
        full = [e for r in range(a.nnodes) for e in nodes[r]]
        for s in conns:
            s.sendall((json.dumps(full) + '\n').encode())
            s.close()
        server.close()
    full = _recv_json(c)
    c.close()
    return full


def _pump(proc, rank, logf, lock):
    for line in iter(proc.stdout.readline, b''):
        logf.write(line)
        logf.flush()
        with lock:
            sys.stdout.buffer.write(b'[rank %d] ' % rank + line)
            sys.stdout.buffer.flush()
    logf.close()


def _stop(procs):
    for p in procs:
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + 5
    for p in procs:
        left = deadline - time.monotonic()
        try:
            p.wait(max(left, 0.01))
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def launch(argv=None):
    a = _parse(sys.argv[1:] if argv is None else argv)
    n = a.nproc_per_node
    world = n * a.nnodes
    if a.nnodes == 1:
        eps = ['127.0.0.1:{}'.format(p) for p in _free_ports('127.0.0.1', n)]
    else:
        eps = _rendezvous(a)
    os.makedirs(a.log_dir, exist_ok=True)
    procs, pumps, ranks = [], [], []
    lock = threading.Lock()
    for i in range(n):
        rank = a.rank * n + i
        env = dict(os.environ)
        env.update({'PADDLE_TRAINER_ID': str(rank), 'PADDLE_TRAINERS_NUM': str(world),
                    'PADDLE_TRAINER_ENDPOINTS': ','.join(eps), 'PADDLE_CURRENT_ENDPOINT': eps[rank],
                    'PADDLE_RANK_IN_NODE': str(i), 'PADDLE_LOCAL_SIZE': str(n),
                    'PADDLE_NNODES': str(a.nnodes), 'PADDLE_MASTER': a.master or eps[0],
                    'FLAGS_selected_gpus': a.gpus[i] if a.gpus else '',
                    'PADDLE_DISTRI_BACKEND': 'nccl' if a.gpus else 'gloo',
                    'PYTHONUNBUFFERED': '1'})
        logf = open(os.path.join(a.log_dir, 'workerlog.{}'.format(rank)), 'wb')
        p = subprocess.Popen([sys.executable, '-u', a.training_script] + a.training_script_args, env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        t = threading.Thread(target=_pump, args=(p, rank, logf, lock), daemon=True)
        t.start()
        procs.append(p)
        pumps.append(t)
        ranks.append(rank)

    def on_signal(signum, frame):
        _stop(procs)
        sys.exit(128 + signum)
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)

    failed = None
    while failed is None:
        running = False
        for rank, p in zip(ranks, procs):
            rc = p.poll()
            if rc is None:
                running = True
            elif rc != 0:
                failed = (rank, p.pid, rc)
                break
        if not running:
            break
        time.sleep(0.05)
    if failed is not None:
        _stop(procs)
    for t in pumps:
        t.join(5)
    if failed is not None:
        rank, pid, rc = failed
        how = 'was killed by signal {}'.format(-rc) if rc < 0 else 'exited with status {}'.format(rc)
        sys.stderr.write('launch: rank {} (pid {}) {}; stopped the other ranks; its log is {}\n'.format(
            rank, pid, how, os.path.join(a.log_dir, 'workerlog.{}'.format(rank))))
        return 1
    return 0
