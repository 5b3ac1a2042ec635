#!/usr/bin/env bash
# The test command: install what is missing, build (warnings are errors), and
# run the whole suite through ctest. CUDA code is built when nvcc is present;
# tests that need a GPU skip themselves with a message when there is none.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
"$top/deploy/install-deps.sh"
"$top/deploy/build.sh" ci
cd "$top"
ctest --preset ci -j "$(nproc)" --timeout 900
