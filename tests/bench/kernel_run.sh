#!/bin/sh
# Benchmark: a 10-cell trivial notebook through `eddy-kernel run` against
# nbclient's `jupyter-execute` (Debian's python3-nbclient + python3-ipykernel),
# side by side in one run. Target: eddy-kernel at most 0.1x nbclient's time.
#
#   tests/bench/kernel_run.sh [BUILD_DIR] [ROUNDS]      # defaults: build, 5
#
# Rounds alternate (eddy, nbclient, eddy, ...) so background load hits both
# alike; the medians and their ratio are printed. Not run by ctest.
set -eu
BUILD=${1:-build}
ROUNDS=${2:-5}
KERNEL="$BUILD/kernel_runner/eddy-kernel"
PY=/usr/bin/python3
export PYDEVD_DISABLE_FILE_VALIDATION=1   # quiets ipykernel's debugger warning
[ -x "$KERNEL" ] || { echo "kernel_run.sh: build eddy-kernel first ($KERNEL)" >&2; exit 2; }
command -v jupyter-execute >/dev/null ||
    { echo "kernel_run.sh: jupyter-execute missing (apt-get install python3-nbclient python3-ipykernel)" >&2; exit 2; }

TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
"$PY" - "$TMP/nb.ipynb" <<'PYEOF'
import json, sys
cells = ["x = %d" % i if i % 2 == 0 else "print(x + %d)" % i for i in range(10)]
nb = {"nbformat": 4, "nbformat_minor": 5,
      "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}},
      "cells": [{"id": "c%d" % i, "cell_type": "code", "metadata": {}, "source": s,
                 "outputs": [], "execution_count": None} for i, s in enumerate(cells)]}
json.dump(nb, open(sys.argv[1], "w"), indent=1)
PYEOF

# Wall time of one command in milliseconds.
ms() {
    "$PY" - "$@" <<'PYEOF'
import subprocess, sys, time
t = time.perf_counter()
r = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
dt = (time.perf_counter() - t) * 1000
if r.returncode != 0:
    sys.stderr.write(r.stderr.decode()); sys.exit(1)
print("%.1f" % dt)
PYEOF
}

E=""; J=""
i=0
while [ $i -lt "$ROUNDS" ]; do
    E="$E $(ms "$KERNEL" run "$TMP/nb.ipynb" --out "$TMP/out-eddy.ipynb")"
    J="$J $(cd "$TMP" && ms jupyter-execute nb.ipynb)"
    i=$((i + 1))
done
# Both must produce the same outputs (jupyter-execute 0.7 does not save the
# notebook, so nbclient's API makes the reference, untimed).
"$PY" - "$TMP/out-eddy.ipynb" "$TMP/nb.ipynb" <<'PYEOF'
import json, sys, nbclient, nbformat
def outs(nb):
    return [[(o["output_type"], o.get("text")) for o in c["outputs"]] for c in nb["cells"]]
ref = nbclient.NotebookClient(nbformat.read(sys.argv[2], 4)).execute()
a, b = outs(json.load(open(sys.argv[1]))), outs(ref)
if a != b:
    print("outputs differ:\n eddy    %s\n nbclient %s" % (a, b)); sys.exit(1)
PYEOF
"$PY" - "$E" "$J" <<'PYEOF'
import statistics, sys
e = [float(x) for x in sys.argv[1].split()]
j = [float(x) for x in sys.argv[2].split()]
me, mj = statistics.median(e), statistics.median(j)
print("workload                          eddy-kernel   jupyter-execute   ratio   target")
print("10-cell notebook (median of %d)   %8.1f ms   %12.1f ms   %5.3fx   <= 0.1x  %s"
      % (len(e), me, mj, me / mj, "ok" if me / mj <= 0.1 else "MISSED"))
print("kernel_run_eddy_ms %.1f" % me)
print("kernel_run_nbclient_ms %.1f" % mj)
print("kernel_run_ratio %.4f" % (me / mj))
PYEOF
