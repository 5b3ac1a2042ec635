#!/usr/bin/python3
"""A deployment under load vs a minimal Python HTTP server calling eager paddle.

    /usr/bin/python3 tests/bench/serve_deploy.py BUILD_DIR [SECONDS] [CONNS...]   # as root; 5 s; 1 4 16 64

One run, side by side:

  eddy   `eddy serve`; an MLP 784-512-256-10 trained a few steps with the
         framework's paddle, paddle.jit.save'd into a project, versioned,
         deployed (POST /api/v1/deployments: one replica on cpu-basic,
         max_batch 32, max_delay_ms 0: a replica takes what queued while it
         ran the last batch) and called at POST /serve/{id}/predict
         with an API key of scope serve. The replica is eddy-serve-replica
         (the C inference runtime) in its sandbox; calls are batched.
  python http.server's ThreadingHTTPServer in one process with the same MLP
         as an eager paddle.nn.Layer (the same weights, paddle.load), parsing
         the same JSON body and answering the same JSON: what one writes
         without a serving system.

Each is driven by wrk (Debian's) with the same body (one 784-float row), at
each connection count for SECONDS; prints requests/s and p50/p95/p99 latency
(wrk's own histogram, through a small Lua `done`). Also: cold start (POST
/api/v1/deployments to the first 200) and the replica's peak memory (VmHWM of
eddy-serve-replica) against the Python server's. Not run by ctest.
"""
import http.client
import json
import os
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kernel_start import Http, free_port, wait_port  # noqa: E402

LUA = r"""
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
local f = io.open(os.getenv("BENCH_BODY"), "r")
wrk.body = f:read("*a")
f:close()
local auth = os.getenv("BENCH_AUTH")
if auth and #auth > 0 then wrk.headers["Authorization"] = auth end
function done(summary, latency, requests)
  io.write(string.format("RESULT %d %d %.3f %.3f %.3f %d\n", summary.requests, summary.duration,
    latency:percentile(50) / 1000, latency:percentile(95) / 1000, latency:percentile(99) / 1000,
    summary.errors.status + summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout))
end
"""

TRAIN = r"""
import sys, numpy as np, paddle
out = sys.argv[1]
paddle.seed(1)
class MLP(paddle.nn.Layer):
    def __init__(self):
        super().__init__()
        self.l1 = paddle.nn.Linear(784, 512)
        self.l2 = paddle.nn.Linear(512, 256)
        self.l3 = paddle.nn.Linear(256, 10)
    def forward(self, x):
        r = paddle.nn.functional.relu
        return self.l3(r(self.l2(r(self.l1(x)))))
m = MLP()
opt = paddle.optimizer.Adam(learning_rate=1e-3, parameters=m.parameters())
x = paddle.to_tensor(np.random.RandomState(0).rand(64, 784).astype('float32'))
y = paddle.to_tensor(np.random.RandomState(1).randint(0, 10, 64).astype('int64'))
for _ in range(3):
    loss = paddle.nn.functional.cross_entropy(m(x), y)
    loss.backward(); opt.step(); opt.clear_grad()
paddle.jit.save(m, out + '/mlp', input_spec=[paddle.static.InputSpec([None, 784], 'float32', 'x')])
paddle.save(m.state_dict(), out + '/mlp.pdparams')
"""

PEER = r"""
import json, sys, numpy as np, paddle
from http.server import ThreadingHTTPServer, BaseHTTPRequestHandler
class MLP(paddle.nn.Layer):
    def __init__(self):
        super().__init__()
        self.l1 = paddle.nn.Linear(784, 512)
        self.l2 = paddle.nn.Linear(512, 256)
        self.l3 = paddle.nn.Linear(256, 10)
    def forward(self, x):
        r = paddle.nn.functional.relu
        return self.l3(r(self.l2(r(self.l1(x)))))
m = MLP()
m.set_state_dict(paddle.load(sys.argv[2] + '/mlp.pdparams'))
m.eval()
class H(BaseHTTPRequestHandler):
    protocol_version = 'HTTP/1.1'
    disable_nagle_algorithm = True   # one response is two writes: no 40 ms delayed-ACK stall
    def log_message(self, *a): pass
    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers['Content-Length'])))
        x = body['inputs']['x']
        with paddle.no_grad():
            y = m(paddle.to_tensor(np.asarray(x['data'], dtype='float32').reshape(x['shape']))).numpy()
        out = json.dumps({'outputs': {'out': {'shape': list(y.shape), 'dtype': 'float32', 'data': y.tolist()}}}).encode()
        self.send_response(200)
        self.send_header('Content-Type', 'application/json')
        self.send_header('Content-Length', str(len(out)))
        self.end_headers()
        self.wfile.write(out)
ThreadingHTTPServer(('127.0.0.1', int(sys.argv[1])), H).serve_forever()
"""


def wrk(port, path, conns, seconds, body_file, auth, tmp):
    lua = os.path.join(tmp, "post.lua")
    with open(lua, "w") as f:
        f.write(LUA)
    env = dict(os.environ, BENCH_BODY=body_file, BENCH_AUTH=auth or "")
    out = subprocess.run(["wrk", "-t", str(min(conns, 2)), "-c", str(conns), "-d", "%ds" % seconds, "--timeout", "10s",
                          "-s", lua, "http://127.0.0.1:%d%s" % (port, path)], env=env, capture_output=True, text=True)
    for line in out.stdout.splitlines():
        if line.startswith("RESULT "):
            n, dur_us, p50, p95, p99, errs = line.split()[1:]
            return int(n) / (int(dur_us) / 1e6), float(p50), float(p95), float(p99), int(errs)
    raise SystemExit("wrk: " + out.stdout + out.stderr)


def vmhwm_kib(name, only=None):
    best = 0
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or (only is not None and int(pid) != only):
            continue
        try:
            if name and open("/proc/%s/comm" % pid).read().strip() != name[:15]:
                continue
            for line in open("/proc/%s/status" % pid):
                if line.startswith("VmHWM:"):
                    best = max(best, int(line.split()[1]))
        except OSError:
            pass
    return best


def main():
    build = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build/ci")
    seconds = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    conns = [int(c) for c in sys.argv[3:]] or [1, 4, 16, 64]
    pypath = os.path.join(build, "framework", "python")
    tmp = tempfile.mkdtemp(prefix="eddy-bench-serve-")
    os.chmod(tmp, 0o755)
    env = dict(os.environ, PYTHONPATH=pypath)
    mdir = os.path.join(tmp, "model")
    os.makedirs(mdir)
    subprocess.run(["/usr/bin/python3", "-c", TRAIN, mdir], env=env, check=True)
    body = {"inputs": {"x": {"shape": [1, 784], "dtype": "float32", "data": [[0.5] * 784]}}}
    body_file = os.path.join(tmp, "body.json")
    with open(body_file, "w") as f:
        json.dump(body, f)

    # eddy
    eddy = os.path.join(build, "cmd", "eddy")
    data = os.path.join(tmp, "eddy")
    os.makedirs(data)
    subprocess.run([eddy, "admin", "create-user", "--data", data, "--username", "bench", "--email",
                    "bench@example.com", "--password", "bench password 1"], check=True, stdout=subprocess.DEVNULL)
    port = free_port()
    log = open(os.path.join(tmp, "eddy.log"), "w")
    proc = subprocess.Popen([eddy, "serve", "--data", data, "--listen", "127.0.0.1:%d" % port], stdout=log,
                            stderr=log, env=dict(os.environ, EDDY_THREADS="96", EDDY_MAX_CONNS_PER_IP="4096"))
    peer = None
    try:
        wait_port(port, proc)
        c = http.client.HTTPConnection("127.0.0.1", port)
        c.request("POST", "/api/v1/auth/login", json.dumps({"username": "bench", "password": "bench password 1"}),
                  {"Content-Type": "application/json"})
        r = c.getresponse()
        web = Http(port, {"Cookie": r.getheader("Set-Cookie").split(";")[0],
                          "X-CSRF-Token": json.loads(r.read())["csrf_token"]})
        st, key = web.call("POST", "/api/v1/keys", {"name": "b", "env": "prod", "scopes": ["serve"],
                                                    "rate_limit_per_min": 1000000})
        assert st == 201, key
        st, _ = web.call("PUT", "/api/v1/keys/%d/serve-limits" % key["id"], {"concurrency": 1024})
        assert st == 200
        st, proj = web.call("POST", "/api/v1/projects", {"name": "bench", "visibility": "private"})
        assert st == 201, proj
        for ext in ("pdmodel", "pdiparams"):
            cc = http.client.HTTPConnection("127.0.0.1", port)
            cc.request("PUT", "/api/v1/projects/%s/files/model/mlp.%s" % (proj["id"], ext),
                       open(os.path.join(mdir, "mlp." + ext), "rb").read(), web.headers)
            assert cc.getresponse().status in (200, 201)
        st, ver = web.call("POST", "/api/v1/projects/%s/versions" % proj["id"], {"message": "m"})
        assert st == 201, ver
        api = Http(port, {"Authorization": "Bearer " + key["key"]})
        t0 = time.perf_counter()
        st, dep = web.call("POST", "/api/v1/deployments",
                           {"name": "mlp", "source": {"project_id": proj["id"], "version": ver["id"], "path": "model/mlp"},
                            "resource": "cpu-basic", "replicas": 1, "max_batch": 32, "max_delay_ms": 0,
                            "timeout_ms": 30000})
        assert st == 201, dep
        while True:
            st, r = api.call("POST", "/serve/%d/predict" % dep["id"], body)
            if st == 200:
                break
            time.sleep(0.01)
        cold = (time.perf_counter() - t0) * 1000
        print("eddy cold start (POST /deployments -> first 200): %.0f ms" % cold)

        # peer
        pport = free_port()
        peer = subprocess.Popen(["/usr/bin/python3", "-c", PEER, str(pport), mdir], env=env)
        wait_port(pport, peer)

        print("%-8s %6s %10s %8s %8s %8s %6s" % ("server", "conns", "req/s", "p50 ms", "p95 ms", "p99 ms", "errors"))
        rows = []
        for n in conns:
            for name, p, path, auth in (("eddy", port, "/serve/%d/predict" % dep["id"], "Bearer " + key["key"]),
                                        ("python", pport, "/predict", None)):
                res = wrk(p, path, n, seconds, body_file, auth, tmp)
                rows.append((name, n) + res)
                print("%-8s %6d %10.1f %8.2f %8.2f %8.2f %6d" % ((name, n) + res))
        print("peak memory: eddy-serve-replica %.1f MiB, python server %.1f MiB" %
              (vmhwm_kib("eddy-serve-replica") / 1024, vmhwm_kib(None, peer.pid) / 1024))
        best_e = max(r[2] for r in rows if r[0] == "eddy")
        best_p = max(r[2] for r in rows if r[0] == "python")
        print("best throughput: eddy %.1f req/s, python %.1f req/s (%.1fx)" % (best_e, best_p, best_e / best_p))
        print("OPENBLAS_CORETYPE=%s OPENBLAS_L2_SIZE=%s" % (os.environ.get("OPENBLAS_CORETYPE", "(unset)"),
                                                          os.environ.get("OPENBLAS_L2_SIZE", "(unset)")))
    finally:
        if peer:
            peer.terminate()
            peer.wait()
        proc.terminate()
        proc.wait(timeout=30)
        if not os.environ.get("BENCH_KEEP"):
            subprocess.run(["rm", "-rf", tmp])
        else:
            print("kept", tmp)


if __name__ == "__main__":
    main()
