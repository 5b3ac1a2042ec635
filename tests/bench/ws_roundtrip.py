#!/usr/bin/python3
"""Cell round trip over the kernel channels WebSocket: Eddy vs Jupyter Server.

    /usr/bin/python3 tests/bench/ws_roundtrip.py BUILD_DIR [ROUNDS]

One run, side by side, the same client (tornado's WebSocket client) for both:

  eddy     POST /api/kernels {name: python3} on `eddy serve` (the scheduler,
           the sandbox, eddy-kernel), then /api/kernels/{id}/channels
  jupyter  Debian's Jupyter Server 1.23 with ipykernel, /api/kernels/{id}/channels

A round trip is one cell: send execute_request "pass" on shell, wait for its
execute_reply and the iopub idle status. 20 warm-up cells, then ROUNDS
(default 300) timed cells per side, alternating in blocks of 10 so background
load hits both alike. Prints median, p90 and p99; target: Eddy's median at
most 1 ms. Not run by ctest.
"""
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
import uuid

sys.dont_write_bytecode = True   # no __pycache__ in the tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cells import cell_done, execute_msg, pct, stop_process  # noqa: E402
from kernel_start import eddy_setup, jupyter_setup  # noqa: E402

from tornado import httpclient, ioloop, websocket  # noqa: E402


class Side:
    def __init__(self, name, port, auth, start_path, start_body, api):
        self.name, self.port, self.auth = name, port, auth
        self.start_path, self.start_body, self.api = start_path, start_body, api
        self.session = uuid.uuid4().hex
        self.times = []

    async def open(self):
        deadline = time.time() + 120
        while True:
            st, k = self.api.call("POST", self.start_path, self.start_body)
            if st == 201:
                break
            if st == 429 and time.time() < deadline:   # a previous kernel still stopping
                time.sleep(0.2)
                continue
            raise SystemExit("%s: start %s %s" % (self.name, st, k))
        self.kid = k["id"]
        req = httpclient.HTTPRequest("ws://127.0.0.1:%d/api/kernels/%s/channels" % (self.port, self.kid),
                                     headers={"Authorization": self.auth})
        self.ws = await websocket.websocket_connect(req)

    async def cell(self):
        msg_id = uuid.uuid4().hex
        t0 = time.perf_counter()
        self.ws.write_message(execute_msg(msg_id, self.session))
        seen = set()
        while True:
            m = await self.ws.read_message()
            if m is None:
                raise SystemExit("%s: websocket closed" % self.name)
            if not isinstance(m, bytes) and cell_done(json.loads(m), msg_id, seen):
                break
        return (time.perf_counter() - t0) * 1000


def main():
    build = sys.argv[1] if len(sys.argv) > 1 else "build"
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 300
    tmp = tempfile.mkdtemp(prefix="eddy-bench-ws-")
    os.chmod(tmp, 0o711)        # the server may run as the user eddy (privilege split)
    procs = []
    try:
        eproc, eapi, project = eddy_setup(build, tmp)
        procs.append(eproc)
        jproc, japi, token = jupyter_setup(tmp)
        procs.append(jproc)
        sides = [Side("eddy", eapi.port, eapi.headers["Authorization"], "/api/kernels",
                      {"name": "python3", "project_id": project}, eapi),
                 Side("jupyter", japi.port, "token " + token, "/api/kernels", {"name": "python3"}, japi)]

        async def run():
            for s in sides:
                await s.open()
                for _ in range(20):
                    await s.cell()
            done = 0
            while done < rounds:
                for s in sides:
                    for _ in range(10):
                        s.times.append(await s.cell())
                done += 10

        ioloop.IOLoop.current().run_sync(run, timeout=600)
        for s in sides:
            print("%-8s cells %d: median %.3f ms, p90 %.3f ms, p99 %.3f ms" %
                  (s.name, len(s.times), statistics.median(s.times), pct(s.times, 90), pct(s.times, 99)))
        me, mj = statistics.median(sides[0].times), statistics.median(sides[1].times)
        print("cell round trip over the WebSocket, median: eddy %.3f ms (target <= 1 ms), "
              "jupyter-server 1.23 + ipykernel %.3f ms, ratio %.2fx" % (me, mj, me / mj))
        for s in sides:
            s.api.call("DELETE", "/api/kernels/%s" % s.kid)
    finally:
        for p in procs:
            stop_process(p, 15)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
