#!/usr/bin/env bash
# Configure and build with a CMake preset (default: release). Usage: deploy/build.sh [preset]
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
preset=${1:-release}
cd "$top"
cmake --preset "$preset" >/dev/null
cmake --build --preset "$preset" -j "$(nproc)"
