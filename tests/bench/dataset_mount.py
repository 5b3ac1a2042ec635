#!/usr/bin/python3
"""Kernel start with and without a 1 GiB dataset attached (issue 15, item 6).

    /usr/bin/python3 tests/bench/dataset_mount.py BUILD_DIR [ROUNDS] [FILES]

One `eddy serve` (as kernel_start.py starts it), one user, two projects:
"plain" with no dataset and "data" with a 1 GiB dataset attached
("latest"). The dataset is made through the REST API: FILES files
(default 500) sharing 1000 MiB of random bytes (2 MiB each) plus one
holding the rest of 1 GiB (24 MiB), each PUT into the draft (waiting out the API key's rate
limit when it answers 429), then published as version 1.

The first kernel start on "data" after publishing builds the version's
read-only tree (a hard link per file, directories sealed 0555), once; it is
timed and printed apart. Then rounds alternate (plain, data, plain, ...),
each timing POST /api/v1/kernels to the first execute_reply of "1+1" (as
kernel_start.py), the kernel's end awaited outside the timing. Mounting is a
read-only bind of the existing tree: nothing is read or copied per start,
so the two medians should match.

Prints each round, both medians and the ratio (target <= 1.1x). Run as root
(the sandbox). Not run by ctest.
"""
import http.client
import json
import os
import shutil
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kernel_start import eddy_setup  # noqa: E402
from kernel_start_workspace import timed_round  # noqa: E402

MIB = 1024 * 1024


def put(api, dataset, path, data):
    while True:
        c = http.client.HTTPConnection("127.0.0.1", api.port, timeout=120)
        h = dict(api.headers)
        h["Content-Type"] = "application/octet-stream"
        try:
            c.request("PUT", "/api/v1/datasets/%s/draft/files/%s" % (dataset, path), data, h)
        except BrokenPipeError:
            pass                # the server answered early (an error): read it
        r = c.getresponse()
        body = r.read()
        c.close()
        if r.status != 429:     # an API key's requests a minute: wait as told
            break
        time.sleep(float(r.getheader("Retry-After") or 1))
    assert r.status in (200, 201), (path, r.status, body[:300])


def make_dataset(api, files):
    st, d = api.call("POST", "/api/v1/datasets", {"name": "big", "slug": "big", "visibility": "private"})
    assert st == 201, d
    t0 = time.perf_counter()
    size = 1000 * MIB // files
    for i in range(files):
        put(api, d["id"], "shards/%04d.bin" % i, os.urandom(size))
    rest = 1024 * MIB - files * size
    if rest > 0:
        put(api, d["id"], "big.bin", os.urandom(rest))
    st, v = api.call("POST", "/api/v1/datasets/%s/versions" % d["id"], {"message": "1 GiB"})
    assert st == 201, v
    print("dataset %s: %d bytes in %d files, uploaded and published in %.1f s" %
          (d["id"], v.get("size_bytes", 0), files + (1 if rest > 0 else 0), time.perf_counter() - t0), flush=True)
    return d["id"]


def main():
    build = sys.argv[1] if len(sys.argv) > 1 else "build"
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 9
    files = int(sys.argv[3]) if len(sys.argv) > 3 else 500
    print("nproc %d, load %.2f" % (os.cpu_count(), os.getloadavg()[0]), flush=True)
    # the rounds poll (execute while the kernel starts, its end): more than
    # an API key's default 600 requests a minute
    os.environ.setdefault("EDDY_DEFAULT_KEY_RATE_PER_MIN", "100000")
    tmp = tempfile.mkdtemp(prefix="eddy-bench-dsm-")
    os.chmod(tmp, 0o711)        # the server may run as the user eddy (privilege split)
    proc = None
    try:
        proc, api, plain = eddy_setup(build, tmp)
        st, p = api.call("POST", "/api/v1/projects", {"name": "data", "visibility": "private"})
        assert st == 201, p
        data = p["id"]
        dataset = make_dataset(api, files)
        st, r = api.call("PUT", "/api/v1/projects/%s/datasets" % data,
                         {"items": [{"dataset_id": dataset, "version": "latest"}]})
        assert st == 200, (st, r)
        os.sync()
        timed_round(api, plain)        # warm-up: page cache, first sandbox
        first = timed_round(api, data)  # builds the version's tree
        print("first start after publishing (builds the tree of %d links): %.0f ms" % (files + 1, first),
              flush=True)
        e, big = [], []
        for i in range(rounds):
            e.append(timed_round(api, plain))
            big.append(timed_round(api, data))
            print("round %d: no dataset %.0f ms, 1 GiB dataset %.0f ms" % (i + 1, e[-1], big[-1]), flush=True)
        me, mb = statistics.median(e), statistics.median(big)
        print("kernel start to first execute_reply, median of %d: no dataset %.0f ms, 1 GiB dataset "
              "(%d files) %.0f ms, ratio %.2fx (target <= 1.1x); first start after publishing %.0f ms" %
              (rounds, me, files + 1, mb, mb / me, first))
    finally:
        if proc:
            proc.terminate()
            try:
                proc.wait(15)
            except Exception:
                proc.kill()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
