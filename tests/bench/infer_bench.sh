#!/bin/sh
# The C inference runtime (libeddy_infer.so) against eager paddle in Python on
# LeNet-5 and an MLP 784-512-256-10 at batch 1 and 64, same threads, same
# weights. Target: >= 3x faster at batch 1. Not run by ctest.
#
#   tests/bench/infer_bench.sh [BUILD_DIR] [ITERS] [THREADS]   # build/ci 2000 1
set -eu
BUILD=${1:-build/ci}
ITERS=${2:-2000}
THREADS=${3:-1}
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
PKG="$BUILD/framework/python"
LIB="$PKG/paddle/inference"
[ -f "$LIB/libeddy_infer.so" ] || { echo "infer_bench.sh: build the paddle package first" >&2; exit 2; }
WORK=$(mktemp -d /tmp/eddy-infer-bench.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
# The bench program links only libeddy_infer.so (no CMake target: built here).
cc -O2 -std=c11 -D_POSIX_C_SOURCE=200809L -I"$ROOT/framework/infer" -I"$ROOT/framework/include" \
   "$HERE/infer_bench.c" -o "$WORK/infer_bench" -L"$LIB" -leddy_infer -Wl,-rpath,"$(cd "$LIB" && pwd)"
NPROC=$(nproc)
export FW_NUM_THREADS="$THREADS" OMP_NUM_THREADS="$THREADS" OPENBLAS_NUM_THREADS="$THREADS"
echo "# nproc $NPROC, load $(cut -d' ' -f1 /proc/loadavg), threads $THREADS, iters $ITERS," \
     "OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-unset} OPENBLAS_L2_SIZE=${OPENBLAS_L2_SIZE:-unset}"
PYTHONPATH="$PKG" /usr/bin/python3 "$HERE/infer_models.py" "$WORK"
"$WORK/infer_bench" "$WORK" "$ITERS" "$THREADS" > "$WORK/c.txt"
PYTHONPATH="$PKG" /usr/bin/python3 "$HERE/infer_peer.py" "$WORK" "$ITERS" > "$WORK/py.txt"
/usr/bin/python3 - "$WORK" <<'PY'
import sys, numpy as np
d = sys.argv[1]
c = dict(l.split() for l in open(d + '/c.txt'))
p = dict(l.split() for l in open(d + '/py.txt'))
print('{:<10} {:>6} {:>12} {:>14} {:>8} {:>10}'.format('model', 'batch', 'C runtime us',
                                                       'eager paddle us', 'speedup', 'max |diff|'))
for k in c:
    name, b = k.split('_')[0], k.split('_')[1]
    y = np.fromfile('{}/{}_{}_c.f32'.format(d, name, b), dtype=np.float32)
    e = np.load('{}/{}_{}_eager.npy'.format(d, name, b)).ravel()
    print('{:<10} {:>6} {:>12} {:>14} {:>7.2f}x {:>10.2e}'.format(
        name, b[1:], c[k], p[k], float(p[k]) / float(c[k]), float(np.abs(y - e).max())))
PY
