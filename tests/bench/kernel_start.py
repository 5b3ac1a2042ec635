#!/usr/bin/python3
"""Kernel start to first execute_reply: Eddy vs Jupyter Server + ipykernel.

    /usr/bin/python3 tests/bench/kernel_start.py BUILD_DIR [ROUNDS]

One run, side by side, rounds alternating (eddy, jupyter, eddy, ...):

  eddy     POST /api/v1/kernels, POST .../execute {code: "1+1"} (retried while
           the kernel is not running yet: 409), then GET .../events until the
           execute_reply of that msg_id; DELETE. Through the scheduler, the
           sandbox and eddy-kernel, exactly as a user's kernel starts.
  jupyter  Debian's Jupyter Server 1.23 (python3-jupyter-server) with
           ipykernel (python3-ipykernel): POST /api/kernels, open
           /api/kernels/{id}/channels (WebSocket), send execute_request
           "1+1", wait for its execute_reply; DELETE.

Prints each round and the medians; target: eddy at most 0.25x jupyter.
Not run by ctest.
"""
import http.client
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def wait_port(port, proc, timeout=30):
    t = time.time() + timeout
    while time.time() < t:
        if proc.poll() is not None:
            raise SystemExit("server exited early")
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise SystemExit("server did not listen on %d" % port)


class Http:
    def __init__(self, port, headers):
        self.port, self.headers = port, headers

    def call(self, method, path, body=None):
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        h = dict(self.headers)
        data = None
        if body is not None:
            data = json.dumps(body)
            h["Content-Type"] = "application/json"
        c.request(method, path, data, h)
        r = c.getresponse()
        raw = r.read()
        c.close()
        return r.status, (json.loads(raw) if raw and raw[:1] in b"{[" else None)


# ---- eddy -------------------------------------------------------------------------

def eddy_api(port, user, password="bench password 1"):
    """Log `user` in on the eddy serve at `port` and make an API key with
    scopes read, write, run: an Http that calls with it."""
    c = http.client.HTTPConnection("127.0.0.1", port)
    c.request("POST", "/api/v1/auth/login", json.dumps({"username": user, "password": password}),
              {"Content-Type": "application/json"})
    r = c.getresponse()
    cookie = r.getheader("Set-Cookie").split(";")[0]
    csrf = json.loads(r.read())["csrf_token"]
    c.close()
    web = Http(port, {"Cookie": cookie, "X-CSRF-Token": csrf})
    st, key = web.call("POST", "/api/v1/keys", {"name": "bench", "env": "prod", "scopes": ["read", "write", "run"]})
    assert st == 201, key
    return Http(port, {"Authorization": "Bearer " + key["key"]})


def eddy_setup(build, tmp):
    eddy = os.path.join(build, "cmd", "eddy")
    data = os.path.join(tmp, "eddy")
    os.makedirs(data)
    subprocess.run([eddy, "admin", "create-user", "--data", data, "--username", "bench", "--email",
                    "bench@example.com", "--password", "bench password 1"], check=True,
                   stdout=subprocess.DEVNULL)
    port = free_port()
    log = open(os.path.join(tmp, "eddy.log"), "w")
    proc = subprocess.Popen([eddy, "serve", "--data", data, "--listen", "127.0.0.1:%d" % port],
                            stdout=log, stderr=log)
    wait_port(port, proc)
    api = eddy_api(port, "bench")
    st, proj = api.call("POST", "/api/v1/projects", {"name": "bench", "visibility": "private"})
    assert st == 201, proj
    return proc, api, proj["id"]


def eddy_round(api, project):
    t0 = time.perf_counter()
    st, k = api.call("POST", "/api/v1/kernels", {"project_id": project, "resource": "cpu-basic"})
    assert st == 201, k
    kid = k["id"]
    while True:
        st, r = api.call("POST", "/api/v1/kernels/%s/execute" % kid, {"code": "1+1"})
        if st == 202:
            break
        assert st == 409, (st, r)
        time.sleep(0.005)
    msg_id = r["msg_id"]
    c = http.client.HTTPConnection("127.0.0.1", api.port, timeout=60)
    c.request("GET", "/api/v1/kernels/%s/events?after=0" % kid, headers=api.headers)
    resp = c.getresponse()
    done = False
    while not done:
        line = resp.fp.readline()
        if not line:
            raise SystemExit("events ended before the execute_reply")
        if line.startswith(b"data: "):
            m = json.loads(line[6:])
            if m.get("msg_type") == "execute_reply" and m["parent_header"].get("msg_id") == msg_id:
                done = True
    dt = (time.perf_counter() - t0) * 1000
    c.close()
    st, _ = api.call("DELETE", "/api/v1/kernels/%s" % kid)
    assert st == 200
    return dt


# ---- jupyter ----------------------------------------------------------------------

def jupyter_setup(tmp):
    port = free_port()
    token = uuid.uuid4().hex
    root = os.path.join(tmp, "jroot")
    os.makedirs(root)
    log = open(os.path.join(tmp, "jupyter.log"), "w")
    env = dict(os.environ, PYDEVD_DISABLE_FILE_VALIDATION="1", JUPYTER_RUNTIME_DIR=os.path.join(tmp, "rt"))
    proc = subprocess.Popen(["/usr/bin/python3", "-m", "jupyter_server", "--no-browser", "--port=%d" % port,
                             "--ServerApp.token=" + token, "--ServerApp.root_dir=" + root,
                             "--ServerApp.allow_root=True"], stdout=log, stderr=log, env=env)
    wait_port(port, proc, 60)
    return proc, Http(port, {"Authorization": "token " + token}), token


def jupyter_round(api, token):
    from tornado import ioloop, websocket, httpclient

    t0 = time.perf_counter()
    st, k = api.call("POST", "/api/kernels", {"name": "python3"})
    assert st == 201, k
    kid = k["id"]

    async def run():
        req = httpclient.HTTPRequest("ws://127.0.0.1:%d/api/kernels/%s/channels" % (api.port, kid),
                                     headers={"Authorization": "token " + token})
        ws = await websocket.websocket_connect(req)
        msg_id = uuid.uuid4().hex
        ws.write_message(json.dumps({
            "channel": "shell",
            "header": {"msg_id": msg_id, "msg_type": "execute_request", "session": uuid.uuid4().hex,
                       "username": "bench", "version": "5.3", "date": ""},
            "parent_header": {}, "metadata": {}, "buffers": [],
            "content": {"code": "1+1", "silent": False, "store_history": True, "user_expressions": {},
                        "allow_stdin": False, "stop_on_error": True}}))
        while True:
            m = await ws.read_message()
            if m is None:
                raise SystemExit("jupyter websocket closed")
            if isinstance(m, bytes):
                continue
            m = json.loads(m)
            if m.get("msg_type") == "execute_reply" and m["parent_header"].get("msg_id") == msg_id:
                ws.close()
                return

    ioloop.IOLoop.current().run_sync(run, timeout=60)
    dt = (time.perf_counter() - t0) * 1000
    st, _ = api.call("DELETE", "/api/kernels/%s" % kid)
    assert st == 204, st
    return dt


def main():
    build = sys.argv[1] if len(sys.argv) > 1 else "build"
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    tmp = tempfile.mkdtemp(prefix="eddy-bench-kstart-")
    os.chmod(tmp, 0o711)        # the server may run as the user eddy (privilege split)
    procs = []
    try:
        eproc, eapi, project = eddy_setup(build, tmp)
        procs.append(eproc)
        jproc, japi, token = jupyter_setup(tmp)
        procs.append(jproc)
        e, j = [], []
        for i in range(rounds):
            e.append(eddy_round(eapi, project))
            j.append(jupyter_round(japi, token))
            print("round %d: eddy %.0f ms, jupyter %.0f ms" % (i + 1, e[-1], j[-1]), flush=True)
        me, mj = statistics.median(e), statistics.median(j)
        print("kernel start to first execute_reply, median of %d: eddy %.0f ms, jupyter-server 1.23 + ipykernel "
              "%.0f ms, ratio %.2fx (target <= 0.25x)" % (rounds, me, mj, me / mj))
    finally:
        for p in procs:
            p.terminate()
            try:
                p.wait(15)
            except subprocess.TimeoutExpired:
                p.kill()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
