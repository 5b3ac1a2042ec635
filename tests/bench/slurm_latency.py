#!/usr/bin/python3
"""Slurm submit-to-running latency: a job through Eddy's REST API against
`sbatch` directly, on the same one-node Slurm (slurm_latency.sh starts it
with tests/integration/slurm/slurm_cluster.sh, as it_test_slurm does).

    /usr/bin/python3 tests/bench/slurm_latency.py BUILD_DIR CLUSTER_DIR SERVE_USER [ROUNDS]

SLURM_BENCH_JOB_DISK=0 sets the free tier's job_disk_bytes to 0 (no disk
limit per job), to see what making the job's quota tree costs the submit.

Both sides run the same program, `python3 t0.py`, whose first statement
prints time.time(): the latency of a round ("to running") is that time
minus the moment just before the submission (POST /api/v1/jobs, or the fork
of `sbatch`). Eddy's includes the project's export into the job's tree, the
scheduler's tick, the REST call to slurmrestd and Slurm's own start;
sbatch's its own process start and RPC. Slurm allocates pending batch jobs
on its own clock (a pass about every second here, with
batch_sched_delay=0; every 3 s by default), which adds 0-1 s of noise to
both sides alike, so each round also gives "to slurmctld": the time until
slurmctld logged the submission RPC (`_slurm_rpc_submit_batch_job`, ms
timestamps in DIR/log/slurmctld.log). What Eddy adds is the difference of
the medians of that; the "to running" figures show it end to end.
Rounds alternate (eddy, sbatch, ...); each waits for its job to end before
the next. Prints each round, then median and p95 of both (target: Eddy
adds < 100 ms).
"""
import json
import os
import pwd
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kernel_start import Http, free_port, wait_port  # noqa: E402

T0_PY = "import time\nprint('T0 %.6f' % time.time(), flush=True)\n"
PASSWORD = "bench password 1"


def login(port, user):
    """The admin's web session (cookie + CSRF): admin routes take no API key."""
    import http.client
    c = http.client.HTTPConnection("127.0.0.1", port)
    c.request("POST", "/api/v1/auth/login", json.dumps({"username": user, "password": PASSWORD}),
              {"Content-Type": "application/json"})
    r = c.getresponse()
    cookie = r.getheader("Set-Cookie").split(";")[0]
    csrf = json.loads(r.read())["csrf_token"]
    c.close()
    return Http(port, {"Cookie": cookie, "X-CSRF-Token": csrf})


def put_file(api, project, name, text):
    import http.client
    c = http.client.HTTPConnection("127.0.0.1", api.port, timeout=60)
    c.request("PUT", "/api/v1/projects/%s/files/%s" % (project, name), text.encode(), api.headers)
    r = c.getresponse()
    r.read()
    c.close()
    assert r.status in (200, 201), r.status


def ctld_times(cluster):
    """slurmctld's log: job id -> [the time its submission RPC was handled,
    the time it was allocated the node]."""
    out = {}
    pat = re.compile(r"\[(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)\.(\d{3})\] "
                     r"(_slurm_rpc_submit_batch_job: |sched: Allocate |backfill: Started )JobId=(\d+) ")
    with open(os.path.join(cluster, "log", "slurmctld.log"), errors="replace") as f:
        for line in f:
            m = pat.match(line)
            if m:
                t = time.mktime(time.strptime(m.group(1), "%Y-%m-%dT%H:%M:%S")) + int(m.group(2)) / 1000
                out.setdefault(m.group(4), [None, None])[0 if m.group(3).startswith("_slurm") else 1] = t
    return out


def t0_of(text):
    for line in text.splitlines():
        if line.startswith("T0 "):
            return float(line[3:])
    return None


def settle():
    """Before a submission: the node idle again (a job that just ended may
    still be completing there), then a random pause (no fixed phase against
    Slurm's scheduling pass)."""
    deadline = time.time() + 30
    while time.time() < deadline:
        st = subprocess.run(["sinfo", "-h", "-o", "%t"], stdout=subprocess.PIPE, text=True).stdout.strip()
        if st == "idle":
            break
        time.sleep(0.05)
    time.sleep(random.uniform(0, 1))


def wait_t0(path):
    """The T0 a job's program printed into `path`, watched from the file
    itself: nothing asks Slurm anything until the job runs (a query could
    wake its scheduler early)."""
    deadline = time.time() + 120
    while time.time() < deadline:
        try:
            with open(path) as f:
                t0 = t0_of(f.read())
            if t0 is not None:
                return t0
        except FileNotFoundError:
            pass
        time.sleep(0.01)
    raise SystemExit("no job start seen in %s" % path)


def eddy_round(api, project, data):
    settle()
    t = time.time()
    st, j = api.call("POST", "/api/v1/jobs", {"project_id": project, "entry": "t0.py", "resource": "cpu-basic",
                                              "max_runtime_s": 300})
    assert st == 201, j
    posted = time.time()
    jid = j["id"]
    t0 = wait_t0(os.path.join(data, "jobs", str(jid), "log"))
    deadline = time.time() + 120
    while time.time() < deadline:
        st, j = api.call("GET", "/api/v1/jobs/%d" % jid)
        if j["status"] in ("succeeded", "failed", "cancelled", "preempted"):
            break
        time.sleep(0.05)
    assert j["status"] == "succeeded", j
    return (t0 - t) * 1000, t, j["executor_ref"], (posted - t) * 1000


def sbatch_round(work, i, user):
    out = os.path.join(work, "sbatch-%d.log" % i)
    script = os.path.join(work, "job.sh")
    settle()
    t = time.time()
    # as the user Eddy's jobs run as (slurmrestd's): the same launch on the node
    as_user = [] if user == "root" else ["setpriv", "--reuid=" + user, "--regid=%d" % pwd.getpwnam(user).pw_gid,
                                         "--init-groups"]
    r = subprocess.run(as_user + ["sbatch", "--parsable", "-p", "eddy", "-c", "1", "--mem=100", "-D", work, "-o", out,
                                  "--open-mode=append", script], stdout=subprocess.PIPE, text=True, check=True)
    sid = r.stdout.strip().split(";")[0]
    t0 = wait_t0(out)
    deadline = time.time() + 120
    while time.time() < deadline:
        st = subprocess.run(["squeue", "-h", "-j", sid, "-o", "%T"], stdout=subprocess.PIPE, text=True).stdout.strip()
        if st in ("", "COMPLETED"):
            break
        time.sleep(0.05)
    return (t0 - t) * 1000, t, sid


def pct(xs, p):
    xs = sorted(xs)
    k = min(len(xs) - 1, max(0, int(round(p / 100 * len(xs) + 0.5)) - 1))
    return xs[k]


def main():
    build, cluster, user = sys.argv[1], sys.argv[2], sys.argv[3]
    rounds = int(sys.argv[4]) if len(sys.argv) > 4 else 20
    os.environ["SLURM_CONF"] = os.path.join(cluster, "slurm.conf")
    tmp = tempfile.mkdtemp(prefix="eddy-bench-slurm-")
    os.chmod(tmp, 0o711)        # the server may run as the user eddy (privilege split)
    proc = None
    try:
        eddy = os.path.join(build, "cmd", "eddy")
        data = os.path.join(tmp, "eddy")
        os.makedirs(data)
        subprocess.run([eddy, "admin", "create-user", "--data", data, "--username", "bench", "--email",
                        "bench@example.com", "--password", PASSWORD, "--role", "admin"], check=True,
                       stdout=subprocess.DEVNULL)
        port = free_port()
        env = dict(os.environ, EDDY_EXECUTOR="slurm", EDDY_SLURM_URL="unix:%s/rest/sock" % cluster,
                   EDDY_SLURM_PARTITIONS="cpu-basic=eddy", EDDY_USER=user)
        log = open(os.path.join(tmp, "eddy.log"), "w")
        proc = subprocess.Popen([eddy, "serve", "--data", data, "--listen", "127.0.0.1:%d" % port],
                                stdout=log, stderr=log, env=env)
        wait_port(port, proc)
        api = login(port, "bench")
        st, r = api.call("PUT", "/api/v1/admin/resources/cpu-basic", {"cpus": 1, "memory_mb": 100})
        assert st == 200, r
        if os.environ.get("SLURM_BENCH_JOB_DISK") == "0":
            # no per-job disk limit: the submit makes no quota tree (on a host
            # without project quotas that is an ext4 image, made and mounted)
            st, r = api.call("PUT", "/api/v1/admin/tiers/free", {"job_disk_bytes": 0})
            assert st == 200, r
        st, proj = api.call("POST", "/api/v1/projects", {"name": "bench", "visibility": "private"})
        assert st == 201, proj
        put_file(api, proj["id"], "t0.py", T0_PY)
        # sbatch's side: the same program in a directory of its own
        work = os.path.join(tmp, "sbatch")
        os.makedirs(work)
        with open(os.path.join(work, "t0.py"), "w") as f:
            f.write(T0_PY)
        with open(os.path.join(work, "job.sh"), "w") as f:
            f.write("#!/bin/sh\nexec /usr/bin/python3 t0.py\n")
        # one of each first (warm caches, the cluster's first scheduling)
        if user != "root":
            for p in (work, os.path.join(work, "t0.py"), os.path.join(work, "job.sh")):
                shutil.chown(p, user, pwd.getpwnam(user).pw_gid)
        eddy_round(api, proj["id"], data)
        sbatch_round(work, 0, user)
        # per side: to slurmctld (submit RPC handled), Slurm's wait for its
        # scheduling pass (not Eddy's doing: noise), launch (allocated to
        # the program's first line), and the total
        res = {"eddy": {"ctld": [], "wait": [], "launch": [], "total": []},
               "sbatch": {"ctld": [], "wait": [], "launch": [], "total": []}}
        posted = []
        for i in range(rounds):
            er = eddy_round(api, proj["id"], data)
            sr = sbatch_round(work, i + 1, user)
            ctld = ctld_times(cluster)
            posted.append(er[3])
            for side, (total, t, ref) in (("eddy", er[:3]), ("sbatch", sr)):
                got, alloc = ctld[ref]
                r = res[side]
                r["ctld"].append((got - t) * 1000)
                r["wait"].append((alloc - got) * 1000)
                r["launch"].append((t + total / 1000 - alloc) * 1000)
                r["total"].append(total)
            print("round %2d: eddy %5.0f ms (to slurmctld %3.0f, POST answered %3.0f, launch %3.0f); "
                  "sbatch %5.0f ms (to slurmctld %3.0f, launch %3.0f)"
                  % (i + 1, er[0], res["eddy"]["ctld"][-1], posted[-1], res["eddy"]["launch"][-1], sr[0],
                     res["sbatch"]["ctld"][-1], res["sbatch"]["launch"][-1]), flush=True)
        med = {side: {k: statistics.median(v) for k, v in r.items()} for side, r in res.items()}
        for k, what in (("ctld", "submit to slurmctld"), ("wait", "Slurm's scheduling wait"),
                        ("launch", "allocated to running"), ("total", "submit to running")):
            print("%-24s eddy median %5.0f p95 %5.0f | sbatch median %5.0f p95 %5.0f | difference %4.0f ms"
                  % (what, med["eddy"][k], pct(res["eddy"][k], 95), med["sbatch"][k], pct(res["sbatch"][k], 95),
                     med["eddy"][k] - med["sbatch"][k]))
        print("POST /api/v1/jobs answered after %.0f ms (median); eddy adds %.0f ms to the submission and %.0f ms to "
              "the launch: %.0f ms (target < 100 ms)"
              % (statistics.median(posted), med["eddy"]["ctld"] - med["sbatch"]["ctld"],
                 med["eddy"]["launch"] - med["sbatch"]["launch"],
                 med["eddy"]["ctld"] - med["sbatch"]["ctld"] + med["eddy"]["launch"] - med["sbatch"]["launch"]))
    finally:
        if proc:
            proc.terminate()
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                proc.kill()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
