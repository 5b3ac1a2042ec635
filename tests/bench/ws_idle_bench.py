#!/usr/bin/python3
"""Idle-connection load: threads, RSS and a cell's round trip under it.

    /usr/bin/python3 tests/bench/ws_idle_bench.py BUILD_DIR [WS] [SSE] [CELLS] [JUPYTER_WS]
    # defaults: 5000 5000 300 200

Eddy (`eddy serve` from BUILD_DIR): kernel A gets WS idle WebSockets on
/api/kernels/{A}/channels and SSE followers of /api/v1/kernels/{A}/events;
kernel B gets one more WebSocket on which CELLS cells run one after another
(execute_request "pass" until its execute_reply and the idle status), after
20 warm-up cells. The idle clients come from 127.0.1.1, 127.0.1.2, ... (50
connections each, so the default per-address limits hold) and answer the
server's pings. Printed: the server's threads and RSS (VmRSS, VmHWM from
/proc/PID/status) before and with the load, and the round trip's p50, p99
and max. Targets: at most 64 threads and 1 GiB RSS with 5,000 + 5,000 open,
p99 <= 5 ms.

Jupyter Server 1.23 + ipykernel (the peer) gets the same shape with
JUPYTER_WS idle WebSockets (default 200; 0 skips it) and no SSE (it has no
event stream), and the round trips are measured before and under that load
the same way. Not 5,000: each of its channels connections opens ZeroMQ
sockets to the kernel (pyzmq's default context allows 1,023), and with 1,000
idle connections it reset the measuring connection on the development VM.

The client is one asyncio process (idle sockets cost it nothing); it raises
its own RLIMIT_NOFILE to the hard limit. Not run by ctest: figures depend on
the machine.
"""
import asyncio
import base64
import json
import os
import resource
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cells import cell_done, execute_msg, pct, stop_process  # noqa: E402
from kernel_start import eddy_api, free_port, jupyter_setup, wait_port  # noqa: E402

PER_ADDR = 50
OPEN_CONCURRENCY = 200


def proc_status(pid):
    out = {}
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            k, _, v = line.partition(":")
            if k in ("Threads", "VmRSS", "VmHWM"):
                out[k] = int(v.split()[0])
    return out


def fmt_status(s):
    return "threads %d, RSS %.1f MiB (peak %.1f MiB)" % (s["Threads"], s["VmRSS"] / 1024.0, s["VmHWM"] / 1024.0)


def src_addr(i):
    n = i // PER_ADDR
    return "127.0.%d.%d" % (1 + n // 250, 1 + n % 250)


def frame(opcode, payload):
    payload = payload.encode() if isinstance(payload, str) else payload
    mask = os.urandom(4)
    n = len(payload)
    if n < 126:
        head = bytes([0x80 | opcode, 0x80 | n])
    elif n < 65536:
        head = bytes([0x80 | opcode, 0x80 | 126]) + n.to_bytes(2, "big")
    else:
        head = bytes([0x80 | opcode, 0x80 | 127]) + n.to_bytes(8, "big")
    return head + mask + bytes(b ^ mask[i & 3] for i, b in enumerate(payload))


async def read_frame(reader):
    h = await reader.readexactly(2)
    n = h[1] & 0x7F
    if n == 126:
        n = int.from_bytes(await reader.readexactly(2), "big")
    elif n == 127:
        n = int.from_bytes(await reader.readexactly(8), "big")
    return h[0] & 0x0F, await reader.readexactly(n)


async def ws_connect(port, path, auth, src=None):
    reader, writer = await asyncio.open_connection("127.0.0.1", port, local_addr=(src, 0) if src else None,
                                                   limit=1 << 22)
    key = base64.b64encode(os.urandom(16)).decode()
    writer.write(("GET %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                  "Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\nAuthorization: %s\r\n\r\n"
                  % (path, port, key, auth)).encode())
    head = await reader.readuntil(b"\r\n\r\n")
    if not head.startswith(b"HTTP/1.1 101"):
        raise SystemExit("%s: %s" % (path, head[:200]))
    sock = writer.get_extra_info("socket")
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return reader, writer


async def idle_ws(port, path, auth, src, ready, stop):
    """Open, then answer pings (and drop everything else) until stopped."""
    reader, writer = await ws_connect(port, path, auth, src)
    if not ready.done():
        ready.set_result(None)
    try:
        while not stop.is_set():
            op, data = await read_frame(reader)
            if op == 0x9:
                writer.write(frame(0xA, data))
            elif op == 0x8:
                return
    except (asyncio.IncompleteReadError, ConnectionError):
        return
    finally:
        writer.close()


async def idle_sse(port, path, auth, src, ready, stop):
    reader, writer = await asyncio.open_connection("127.0.0.1", port, local_addr=(src, 0))
    writer.write(("GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\nAuthorization: %s\r\n\r\n"
                  % (path, auth)).encode())
    head = await reader.readuntil(b"\r\n\r\n")
    if not head.startswith(b"HTTP/1.1 200"):
        raise SystemExit("%s: %s" % (path, head[:200]))
    ready.set_result(None)
    try:
        while not stop.is_set():
            if not await reader.read(65536):
                return
    except ConnectionError:
        return
    finally:
        writer.close()


async def open_many(n, make, first_index):
    """Start n idle clients; wait until all are open. Returns their tasks."""
    sem = asyncio.Semaphore(OPEN_CONCURRENCY)
    tasks = []

    async def one(i):
        async with sem:
            ready = asyncio.get_running_loop().create_future()
            t = asyncio.ensure_future(make(src_addr(first_index + i), ready))
            tasks.append(t)
            done, _ = await asyncio.wait([ready, t], return_when=asyncio.FIRST_COMPLETED)
            if t in done and t.exception():
                raise t.exception()

    await asyncio.gather(*(one(i) for i in range(n)))
    return tasks


async def round_trips(port, kid, auth, cells):
    reader, writer = await ws_connect(port, "/api/kernels/%s/channels" % kid, auth)
    session = uuid.uuid4().hex
    times = []
    for i in range(cells + 20):
        msg_id = uuid.uuid4().hex
        t0 = time.perf_counter()
        writer.write(frame(0x1, execute_msg(msg_id, session)))
        seen = set()
        while True:
            op, data = await read_frame(reader)
            if op == 0x9:
                writer.write(frame(0xA, data))
            elif op == 0x1 and cell_done(json.loads(data), msg_id, seen):
                break
        if i >= 20:
            times.append((time.perf_counter() - t0) * 1000)
    writer.close()
    return times


def summary(name, times):
    return ("%-8s cell round trip over %d cells: p50 %.3f ms, p99 %.3f ms, max %.3f ms"
            % (name, len(times), statistics.median(times), pct(times, 99), max(times)))


async def wait_idle(api, prefix, kid, timeout=120):
    deadline = time.time() + timeout
    while time.time() < deadline:
        st, k = api.call("GET", "%s/%s" % (prefix, kid))
        if st == 200 and k.get("execution_state") == "idle":
            return
        await asyncio.sleep(0.1)
    raise SystemExit("kernel %s never became idle" % kid)


def eddy_start(build, tmp):
    """`eddy serve` with two users (the free tier runs one kernel each): one
    for the idle load's kernel, one for the round trips'."""
    eddy = os.environ.get("EDDY_BIN") or os.path.join(build, "cmd", "eddy")
    data = os.path.join(tmp, "eddy")
    os.makedirs(data)
    for user in ("bench", "bench2"):
        subprocess.run([eddy, "admin", "create-user", "--data", data, "--username", user, "--email",
                        user + "@example.com", "--password", "bench password 1"],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    port = free_port()
    log = open(os.path.join(tmp, "eddy.log"), "w")
    env = dict(os.environ, EDDY_DEFAULT_KEY_RATE_PER_MIN="100000000")
    proc = subprocess.Popen([eddy, "serve", "--data", data, "--listen", "127.0.0.1:%d" % port],
                            stdout=log, stderr=log, env=env)
    wait_port(port, proc)
    return proc, [eddy_api(port, "bench"), eddy_api(port, "bench2")], port


async def eddy_side(build, tmp, n_ws, n_sse, cells):
    proc, apis, port = eddy_start(build, tmp)
    auth = apis[0].headers["Authorization"]
    try:
        kids = []
        for api in apis:
            st, k = api.call("POST", "/api/kernels", {"name": "python3"})
            assert st == 201, (st, k)
            kids.append(k["id"])
            await wait_idle(api, "/api/kernels", k["id"])
        base = proc_status(proc.pid)
        quiet = await round_trips(port, kids[1], apis[1].headers["Authorization"], cells)
        stop = asyncio.Event()
        t0 = time.time()
        ws_tasks = await open_many(n_ws, lambda src, ready: idle_ws(
            port, "/api/kernels/%s/channels" % kids[0], auth, src, ready, stop), 0)
        sse_tasks = await open_many(n_sse, lambda src, ready: idle_sse(
            port, "/api/v1/kernels/%s/events" % kids[0], auth, src, ready, stop), n_ws)
        opened = time.time() - t0
        await asyncio.sleep(2)
        loaded = proc_status(proc.pid)
        times = await round_trips(port, kids[1], apis[1].headers["Authorization"], cells)
        after = proc_status(proc.pid)
        alive = sum(1 for t in ws_tasks + sse_tasks if not t.done())
        print("eddy     idle: %d WebSockets + %d SSE followers opened in %.1f s, %d still open after the cells"
              % (n_ws, n_sse, opened, alive))
        print("eddy     before the load: %s" % fmt_status(base))
        print("eddy     with the load:   %s" % fmt_status(loaded))
        print("eddy     after the cells: %s" % fmt_status(after))
        print(summary("eddy", quiet) + "  (no idle load)")
        print(summary("eddy", times) + "  (under the idle load)", flush=True)
        stop.set()
        for t in ws_tasks + sse_tasks:
            t.cancel()
        await asyncio.gather(*ws_tasks, *sse_tasks, return_exceptions=True)
        return loaded, times
    finally:
        stop_process(proc, 30)


async def jupyter_side(tmp, n_ws, cells):
    proc, api, token = jupyter_setup(tmp)
    auth = "token " + token
    try:
        kids = []
        for _ in range(2):
            st, k = api.call("POST", "/api/kernels", {"name": "python3"})
            assert st == 201, (st, k)
            kids.append(k["id"])
        # Jupyter reports "starting" until a client connects: the warm-up
        # cells of round_trips wait for the kernel instead.
        base = proc_status(proc.pid)
        quiet = await round_trips(api.port, kids[1], auth, cells)
        stop = asyncio.Event()
        t0 = time.time()
        ws_tasks = await open_many(n_ws, lambda src, ready: idle_ws(
            api.port, "/api/kernels/%s/channels" % kids[0], auth, src, ready, stop), 0)
        opened = time.time() - t0
        await asyncio.sleep(2)
        loaded = proc_status(proc.pid)
        times = await round_trips(api.port, kids[1], auth, cells)
        print("jupyter  idle: %d WebSockets opened in %.1f s (no SSE: Jupyter Server has no event stream)"
              % (n_ws, opened))
        print("jupyter  before the load: %s" % fmt_status(base))
        print("jupyter  with the load:   %s" % fmt_status(loaded))
        print(summary("jupyter", quiet) + "  (no idle load)")
        print(summary("jupyter", times) + "  (under the idle load)", flush=True)
        stop.set()
        for t in ws_tasks:
            t.cancel()
        await asyncio.gather(*ws_tasks, return_exceptions=True)
        for kid in kids:
            api.call("DELETE", "/api/kernels/%s" % kid)
        return loaded, times
    finally:
        stop_process(proc, 30)


def main():
    build = sys.argv[1] if len(sys.argv) > 1 else "build"
    n_ws = int(sys.argv[2]) if len(sys.argv) > 2 else 5000
    n_sse = int(sys.argv[3]) if len(sys.argv) > 3 else 5000
    cells = int(sys.argv[4]) if len(sys.argv) > 4 else 300
    n_jws = int(sys.argv[5]) if len(sys.argv) > 5 else 200
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    need = n_ws + n_sse + 100
    if hard < need:
        raise SystemExit("RLIMIT_NOFILE hard limit %d is below the %d sockets this client needs" % (hard, need))
    print("ws_idle_bench: %d idle WebSockets + %d SSE followers, %d cells; nproc %d; load average %.2f; "
          "RLIMIT_NOFILE %d; OPENBLAS_CORETYPE=%s OPENBLAS_L2_SIZE=%s (as found, not changed)"
          % (n_ws, n_sse, cells, os.cpu_count(), os.getloadavg()[0], hard,
             os.environ.get("OPENBLAS_CORETYPE", "(unset)"), os.environ.get("OPENBLAS_L2_SIZE", "(unset)")),
          flush=True)
    tmp = tempfile.mkdtemp(prefix="eddy-bench-idle-")
    os.chmod(tmp, 0o755)   # `eddy serve` started as root serves as user eddy: it must reach the data dir
    try:
        loaded, times = asyncio.run(eddy_side(build, tmp, n_ws, n_sse, cells))
        ok = loaded["Threads"] <= 64 and loaded["VmRSS"] <= 1 << 20 and pct(times, 99) <= 5.0
        print("eddy     targets (<= 64 threads, <= 1 GiB RSS, p99 <= 5 ms): %s" % ("met" if ok else "NOT met"))
        if n_jws > 0:
            asyncio.run(jupyter_side(tmp, n_jws, cells))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
