"""What the kernel channel benchmarks share (ws_roundtrip.py, ws_idle_bench.py).

A cell is an execute_request of "pass" on the shell channel; it is done once
its execute_reply and the iopub idle status with its msg_id as parent have
both arrived:

    msg_id = uuid.uuid4().hex
    send(execute_msg(msg_id, session))
    seen = set()
    while not cell_done(json.loads(receive()), msg_id, seen):
        pass
"""
import json
import subprocess


def execute_msg(msg_id, session):
    """The JSON text of an execute_request of "pass" (Jupyter messaging 5.3)."""
    return json.dumps({
        "channel": "shell",
        "header": {"msg_id": msg_id, "msg_type": "execute_request", "session": session,
                   "username": "bench", "version": "5.3", "date": ""},
        "parent_header": {}, "metadata": {}, "buffers": [],
        "content": {"code": "pass", "silent": False, "store_history": False, "user_expressions": {},
                    "allow_stdin": False, "stop_on_error": True}})


def cell_done(m, msg_id, seen):
    """Note the message `m` (a dict) in `seen` (a set) when it is the
    execute_reply or the idle status of request `msg_id`; True once both came."""
    if m.get("parent_header", {}).get("msg_id") != msg_id:
        return False
    t = m["header"]["msg_type"]
    if t == "execute_reply":
        seen.add("reply")
    elif t == "status" and m["content"].get("execution_state") == "idle":
        seen.add("idle")
    return len(seen) == 2


def pct(xs, p):
    """The p-th percentile of xs (nearest rank)."""
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100.0 * (len(xs) - 1))))]


def stop_process(p, timeout):
    """SIGTERM, then SIGKILL when it has not exited within `timeout` seconds."""
    p.terminate()
    try:
        p.wait(timeout)
    except subprocess.TimeoutExpired:
        p.kill()
