#!/bin/sh
# Per-op overhead from Python: Eddy's paddle against PyTorch (Debian's
# python3-torch), side by side in one run. Target: <= 1 us per small add with
# autograd. Not run by ctest.
#
#   tests/bench/py_op_overhead.sh [BUILD_DIR] [ROUNDS]     # defaults: build, 7
set -eu
BUILD=${1:-build}
ROUNDS=${2:-7}
PKG="$BUILD/framework/python"
[ -d "$PKG/paddle" ] || { echo "py_op_overhead.sh: build the package first (cmake --build $BUILD --target paddle)" >&2; exit 2; }
export FW_NUM_THREADS=1 OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
PYTHONPATH="$PKG" exec /usr/bin/python3 "$(dirname "$0")/py_op_overhead.py" "$ROUNDS"
