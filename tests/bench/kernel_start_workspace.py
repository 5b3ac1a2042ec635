#!/usr/bin/python3
"""Kernel start time does not depend on the project's size (issue 12).

    /usr/bin/python3 tests/bench/kernel_start_workspace.py BUILD_DIR [ROUNDS] [MIB] [FILES]

One `eddy serve` (as kernel_start.py starts it), two projects of one user:
an empty one, and one holding MIB MiB (default 1024) in FILES files
(default 2000), written straight into its working tree in the data
directory (DATA/projects/<id>/data/NNNN.bin, owned like the tree) and
checked through GET /api/v1/projects/{id}/files. Rounds alternate (empty,
large, empty, ...); each times POST /api/v1/kernels to the first
execute_reply of "1+1" (as kernel_start.py), then the kernel is shut down
and its end awaited outside the timing. The kernel's /home/aistudio/work is
the project's live tree, bound through an idmapped mount: nothing is read
or copied at start, so the two medians should match.

Prints each round, both medians and the ratio (target <= 1.1x), and the
OPENBLAS_* settings found in the environment (not changed). Run as root
(the sandbox). Not run by ctest.
"""
import os
import shutil
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kernel_start import eddy_round, eddy_setup  # noqa: E402


def fill(tree, mib, files):
    """MIB MiB in FILES files under tree/data, owned as the tree is."""
    st = os.stat(tree)
    d = os.path.join(tree, "data")
    os.makedirs(d)
    os.chown(d, st.st_uid, st.st_gid)
    size = mib * 1024 * 1024 // files
    block = bytes(range(256)) * (size // 256 + 1)
    for i in range(files):
        p = os.path.join(d, "%04d.bin" % i)
        with open(p, "wb") as f:
            f.write(block[:size])
        os.chown(p, st.st_uid, st.st_gid)
    os.sync()
    return size * files


def wait_dead(api, kid):
    for _ in range(600):
        st, k = api.call("GET", "/api/v1/kernels/%s" % kid)
        if st == 200 and k["status"] == "dead":
            return
        time.sleep(0.05)
    raise SystemExit("kernel %s did not end" % kid)


def timed_round(api, project):
    """kernel_start.eddy_round, then wait for the kernel's end (untimed)."""
    before = {k["id"] for k in (api.call("GET", "/api/v1/kernels")[1] or {}).get("items", [])}
    dt = eddy_round(api, project)
    st, ks = api.call("GET", "/api/v1/kernels")
    for k in (ks or {}).get("items", []):
        if k["id"] not in before:
            wait_dead(api, k["id"])
    return dt


def main():
    build = sys.argv[1] if len(sys.argv) > 1 else "build"
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 7
    mib = int(sys.argv[3]) if len(sys.argv) > 3 else 1024
    files = int(sys.argv[4]) if len(sys.argv) > 4 else 2000
    blas = " ".join("%s=%s" % (k, v) for k, v in sorted(os.environ.items()) if k.startswith("OPENBLAS_"))
    print("nproc %d, load %.2f, OPENBLAS_* settings: %s" % (os.cpu_count(), os.getloadavg()[0], blas or "none set"),
          flush=True)
    tmp = tempfile.mkdtemp(prefix="eddy-bench-kws-")
    os.chmod(tmp, 0o711)        # the server may run as the user eddy (privilege split)
    proc = None
    try:
        proc, api, empty = eddy_setup(build, tmp)
        st, p = api.call("POST", "/api/v1/projects", {"name": "large", "visibility": "private"})
        assert st == 201, p
        large = p["id"]
        t0 = time.perf_counter()
        total = fill(os.path.join(tmp, "eddy", "projects", large), mib, files)
        print("large project %s: %d bytes in %d files, written in %.1f s" % (large, total, files,
                                                                              time.perf_counter() - t0), flush=True)
        st, listing = api.call("GET", "/api/v1/projects/%s/files" % large)
        assert st == 200 and len(listing["items"]) == files, (st, len((listing or {}).get("items", [])))
        timed_round(api, empty)        # warm-up: page cache, first sandbox
        e, big = [], []
        for i in range(rounds):
            e.append(timed_round(api, empty))
            big.append(timed_round(api, large))
            print("round %d: empty project %.0f ms, %d MiB project %.0f ms" % (i + 1, e[-1], mib, big[-1]),
                  flush=True)
        me, mb = statistics.median(e), statistics.median(big)
        print("kernel start to first execute_reply, median of %d: empty project %.0f ms, %d MiB in %d files "
              "%.0f ms, ratio %.2fx (target <= 1.1x)" % (rounds, me, mib, files, mb, mb / me))
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
