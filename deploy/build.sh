#!/usr/bin/env bash
# Configure and build with a CMake preset (default: release). Usage: deploy/build.sh [preset]
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
preset=${1:-release}
cd "$top"
cmake --preset "$preset" >/dev/null
cmake --build --preset "$preset" -j "$(nproc)"
# The web app (web/, served by `eddy serve` from web/dist): npm is required.
if ! command -v npm >/dev/null 2>&1; then
  echo "deploy/build.sh: npm is not installed; it is needed to build the web app in web/" >&2
  exit 1
fi
(cd "$top/web" && npm ci --no-audit --no-fund && npm run build)
