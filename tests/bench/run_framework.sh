#!/bin/sh
# run_framework.sh - Eddy's framework against PyTorch, side by side, in one
# run, with the same thread count and the same OpenBLAS settings, and the
# ratios (Eddy time / PyTorch time; < 1 means Eddy is faster).
#
#   tests/bench/run_framework.sh [BUILD_DIR] [THREADS] [ITERS]
#
# BUILD_DIR defaults to ./build (it must hold tests/bench/bench_framework:
# cmake --build BUILD_DIR --target bench_framework). THREADS defaults to the
# number of online cores. OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE are passed
# through unchanged to both sides when set, and printed.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
# nproc honours OMP_NUM_THREADS; count the cores without it
cores=$(env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc)
build=${1:-build}
threads=${2:-$cores}
iters=${3:-30}
bin=$(find "$build" -type f -name bench_framework -perm -u+x 2>/dev/null | head -n 1)
if [ -z "$bin" ]; then
    echo "run_framework.sh: no bench_framework under $build (build the bench_framework target)" >&2
    exit 2
fi
py=/usr/bin/python3

# One setting for both: each side's pool and OpenBLAS get the same threads.
export OPENBLAS_NUM_THREADS="$threads" OMP_NUM_THREADS="$threads" FW_NUM_THREADS="$threads"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

echo "threads=$threads iters=$iters OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-unset}" \
     "OPENBLAS_L2_SIZE=${OPENBLAS_L2_SIZE:-unset} host=$(uname -n) cores=$cores"
# Interleave workloads (eddy, torch, eddy, torch, ...) so background load
# drifts hit both sides alike.
for w in mlp lenet ops sgemm; do
    "$bin" --threads "$threads" --iters "$iters" --only "$w" >>"$out/eddy" || \
        echo "run_framework.sh: eddy $w failed" >&2
    "$py" "$here/torch_peer.py" --threads "$threads" --iters "$iters" --only "$w" >>"$out/torch" || \
        echo "run_framework.sh: torch $w failed" >&2
done

"$py" - "$out/eddy" "$out/torch" <<'EOF'
import sys
def read(p):
    d = {}
    for line in open(p):
        k, _, v = line.strip().partition(" ")
        try:
            d[k] = float(v)
        except ValueError:
            pass
    return d
e, t = read(sys.argv[1]), read(sys.argv[2])
rows = [("mlp_step_ms", "MLP 784-512-256-10 b128 Adam, ms/step", t, "mlp_step_ms", 0.7),
        ("mlp_step_p90_ms", "  p90", t, "mlp_step_p90_ms", None),
        ("lenet_step_ms", "LeNet-5 b64 Adam, ms/step", t, "lenet_step_ms", 0.8),
        ("lenet_step_p90_ms", "  p90", t, "lenet_step_p90_ms", None),
        ("op_fwd_us", "small op + autograd record, us/op", t, "op_fwd_us", None),
        ("op_fwd_bwd_us", "small op fwd+bwd, us/op", t, "op_fwd_bwd_us", None),
        ("sgemm_ms", "SGEMM 1024 fw_matmul vs torch, ms", t, "sgemm_ms", None),
        ("sgemm_ms", "SGEMM 1024 fw_matmul vs cblas_sgemm, ms", e, "sgemm_openblas_ms", 1.05)]
print(f"{'workload':44s} {'eddy':>10s} {'peer':>10s} {'ratio':>7s}  target")
for key, label, peer, pkey, target in rows:
    a, b = e.get(key), peer.get(pkey)
    if a is None or b is None:
        print(f"{label:44s} {'n/a':>10s} {'n/a':>10s}")
        continue
    r = a / b if b else float("nan")
    tgt = "" if target is None else (f"<= {target:.2f}x " + ("ok" if r <= target else "MISSED"))
    print(f"{label:44s} {a:10.4f} {b:10.4f} {r:7.3f}  {tgt}")
op = e.get("op_fwd_us")
if op is not None:
    print(f"per-op overhead from C: {op:.3f} us (target < 0.5 us): " + ("ok" if op < 0.5 else "MISSED"))
EOF
