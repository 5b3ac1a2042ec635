#!/bin/bash
# tests/gpu/check.sh - what this tree does on an NVIDIA GPU machine, in one
# run from the repository root of a fresh copy (no build directory needed):
#
#   tests/gpu/check.sh            # or: GPU_CHECK_JOBS=16 GPU_CHECK_DIR=build/gpu tests/gpu/check.sh
#                                 #     GPU_CHECK_FRAMEWORK_ONLY=1: no server build
#
# It builds only what it needs in its own directories (GPU_CHECK_DIR,
# default build/gpu: fw/ the framework alone through tests/gpu/fw, full/ the
# whole tree when the server's packages are there), runs each check under
# `timeout`, goes on after a failure, and prints a table
# (check | result | detail | seconds). Results: PASS, FAIL, SKIP (the check
# cannot run here, with the reason: "not built" when the code does not exist
# yet). Exit 0 when nothing failed, 1 when a check failed, 0 after printing
# that it skipped when this machine has no NVIDIA GPU (77 with
# GPU_CHECK_SKIP_CODE=77). Each check's output is kept in
# GPU_CHECK_DIR/logs/<n>-<check>.log (and copied under $OUT when set).
# No network and no package installation: what is missing is reported.
# tests/gpu/README.md says what each line means.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT" || exit 1
DIR=${GPU_CHECK_DIR:-$ROOT/build/gpu}
JOBS=${GPU_CHECK_JOBS:-$(nproc)}
CUDA=${CUDA_HOME:-/usr/local/cuda}
LOGS=$DIR/logs
TABLE=$DIR/table.txt
export PATH="$CUDA/bin:$PATH"
export LD_LIBRARY_PATH="$CUDA/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
START=$(date +%s)
failed=0
n=0

# ---- no GPU: nothing to check --------------------------------------------------
# Issue 17: without a GPU the script says it skipped and exits 0 (nothing
# failed); GPU_CHECK_SKIP_CODE=77 makes it exit 77 instead (for CTest-style
# callers that report a visible skip).
SKIP_CODE=${GPU_CHECK_SKIP_CODE:-0}
if ! command -v nvidia-smi >/dev/null 2>&1; then
    echo "tests/gpu/check.sh: skipped: no nvidia-smi on this machine (no NVIDIA driver)"
    exit "$SKIP_CODE"
fi
if ! GPUS=$(timeout 30 nvidia-smi -L 2>&1) || ! printf '%s\n' "$GPUS" | grep -q '^GPU [0-9]'; then
    echo "tests/gpu/check.sh: skipped: nvidia-smi lists no GPU: $(printf '%s' "$GPUS" | head -n 2)"
    exit "$SKIP_CODE"
fi
NGPU=$(printf '%s\n' "$GPUS" | grep -c '^GPU [0-9]')

mkdir -p "$LOGS" || exit 1
: >"$TABLE"

row() { # check result detail seconds
    printf '| %s | %s | %s | %s |\n' "$1" "$2" "$(printf '%s' "$3" | tr '|\n' '/ ' | cut -c1-150)" "$4" >>"$TABLE"
    printf '%-28s %-5s %6ss  %s\n' "$1" "$2" "$4" "$(printf '%s' "$3" | tr '\n' ' ' | cut -c1-150)"
    [ "$2" = FAIL ] && failed=1
    return 0
}

# check NAME SECONDS FUNCTION: runs the function (below, exported) in a
# bash of its own under timeout, output to its log. Exit 0: PASS, 77: SKIP,
# 124: FAIL (timed out), else FAIL. The detail is the last line starting
# "detail: ", else the last line of output. Sets LAST (the result).
LAST=""
check() {
    local name=$1 limit=$2 fn=$3 t0 rc res detail log
    n=$((n + 1))
    log=$LOGS/$(printf '%02d' $n)-$(printf '%s' "$name" | tr -c 'A-Za-z0-9_.-' '_').log
    t0=$(date +%s)
    export BUILD FW_MISSING SERVER_MISSING
    timeout --kill-after=10 "$limit" bash -c "$fn" >"$log" 2>&1 </dev/null
    rc=$?
    detail=$(grep '^detail: ' "$log" | tail -n 1 | sed 's/^detail: //')
    [ -n "$detail" ] || detail=$(grep -v '^[[:space:]]*$' "$log" | tail -n 1)
    case $rc in
    0) res=PASS ;;
    77) res=SKIP ;;
    124 | 137) res=FAIL; detail="timed out after ${limit}s: $detail" ;;
    *) res=FAIL; detail="exit $rc: $detail" ;;
    esac
    LAST=$res
    row "$name" "$res" "$detail" $(($(date +%s) - t0))
}
skip_row() { n=$((n + 1)); row "$1" SKIP "$2" 0; }

# ---- the checks, each a function run by check() --------------------------------------

c_devices() {
    nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader
    echo "detail: $NGPU GPU(s): $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -n 1 | sed 's/, / driver /')"
}

c_toolkit() {
    [ -x "$CUDA/bin/nvcc" ] || { echo "detail: no $CUDA/bin/nvcc"; return 1; }
    "$CUDA/bin/nvcc" --version
    echo "detail: $("$CUDA/bin/nvcc" --version | grep -o 'release [0-9.]*, V[0-9.]*')"
}

# The packages a build needs; sets FW_OK (the framework: compiler, cmake,
# pkg-config, OpenBLAS, python3's headers, numpy) and SERVER_MISSING (the
# rest of the top-level CMakeLists.txt's pkg_check_modules).
FW_MISSING=""
SERVER_MISSING=""
probe_deps() {
    local m
    for m in cc cmake pkg-config; do command -v $m >/dev/null 2>&1 || FW_MISSING="$FW_MISSING $m"; done
    if command -v pkg-config >/dev/null 2>&1; then
        for m in openblas python3; do pkg-config --exists $m 2>/dev/null || FW_MISSING="$FW_MISSING pkg:$m"; done
        for m in libmicrohttpd sqlite3 jansson libgit2 libseccomp libcurl libsodium check; do
            pkg-config --exists $m 2>/dev/null || SERVER_MISSING="$SERVER_MISSING $m"
        done
    else
        SERVER_MISSING=" (no pkg-config)"
    fi
    # GPU_CHECK_FRAMEWORK_ONLY=1: build the framework alone even so (faster;
    # no /api/v1/version check)
    [ "${GPU_CHECK_FRAMEWORK_ONLY:-0}" = 1 ] && [ -z "$SERVER_MISSING" ] && SERVER_MISSING=" (GPU_CHECK_FRAMEWORK_ONLY=1)"
    /usr/bin/python3 -c 'import numpy' 2>/dev/null || FW_MISSING="$FW_MISSING python3-numpy"
}
c_deps() {
    echo "framework needs: cc cmake pkg-config openblas python3(-dev) numpy; missing:${FW_MISSING:- none}"
    echo "server needs: libmicrohttpd sqlite3 jansson libgit2 libseccomp libcurl libsodium check; missing:${SERVER_MISSING:- none}"
    if [ -n "$FW_MISSING" ]; then
        echo "detail: the framework cannot be built: missing$FW_MISSING"
        return 1
    fi
    if [ -n "$SERVER_MISSING" ]; then
        echo "detail: framework: all there; server: missing$SERVER_MISSING: no eddy binary"
    else
        echo "detail: framework and server: all there"
    fi
}

# A CUDA kernel compiled with nvcc for this GPU and run: the toolkit and the
# driver work together, whatever Eddy builds.
c_cuda_smoke() {
    local d=$DIR/smoke
    mkdir -p "$d"
    cat >"$d/smoke.cu" <<'CU'
#include <cstdio>
#include <cuda_runtime.h>
__global__ void axpy(int n, float a, const float *x, float *y)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        y[i] = a * x[i] + y[i];
}
int main()
{
    const int n = 1 << 20;
    float *x, *y;
    cudaDeviceProp p;
    if (cudaGetDeviceProperties(&p, 0) != cudaSuccess || cudaMallocManaged(&x, n * 4) != cudaSuccess ||
        cudaMallocManaged(&y, n * 4) != cudaSuccess) {
        printf("detail: %s\n", cudaGetErrorString(cudaGetLastError()));
        return 1;
    }
    for (int i = 0; i < n; i++) { x[i] = 1.0f; y[i] = (float)i; }
    axpy<<<(n + 255) / 256, 256>>>(n, 2.0f, x, y);
    cudaError_t e = cudaDeviceSynchronize();
    int bad = 0;
    for (int i = 0; e == cudaSuccess && i < n; i++) bad += y[i] != (float)i + 2.0f;
    printf("detail: axpy of 1M floats on %s (sm_%d%d): %s\n", p.name, p.major, p.minor,
           e != cudaSuccess ? cudaGetErrorString(e) : bad ? "WRONG RESULTS" : "correct");
    return e != cudaSuccess || bad;
}
CU
    "$CUDA/bin/nvcc" -O2 -arch=native -o "$d/smoke" "$d/smoke.cu" 2>&1 ||
        "$CUDA/bin/nvcc" -O2 -o "$d/smoke" "$d/smoke.cu" || return 1
    "$d/smoke"
}

# The build: the whole tree when the server's packages are there (it also
# gives eddy for /api/v1/version), else the framework alone (tests/gpu/fw).
# Warnings are errors, CUDA on, only the targets needed, -j$JOBS.
BUILD=""
c_configure() {
    local gen=() arch=()
    command -v ninja >/dev/null 2>&1 && gen=(-G Ninja)
    [ -x "$CUDA/bin/nvcc" ] && arch=(-DCMAKE_CUDA_COMPILER="$CUDA/bin/nvcc" -DCMAKE_CUDA_ARCHITECTURES=native)
    local src=$ROOT out=$DIR/configure.out what="whole tree in $DIR/full"
    if [ -n "$SERVER_MISSING" ]; then
        src=$ROOT/tests/gpu/fw
        what="framework alone in $DIR/fw (server packages missing:$SERVER_MISSING)"
    fi
    cmake -S "$src" -B "$BUILD" "${gen[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DEDDY_WERROR=ON "${arch[@]}" >"$out" 2>&1
    local rc=$?
    cat "$out"
    [ $rc = 0 ] || return 1
    echo "detail: $what; Eddy: $(grep -o 'CUDA backend [A-Z]*' "$out" | tail -n 1)"
}
c_build() {
    local targets=(paddle eddy_dist)
    # the whole tree also gives the C GPU tests (tests/unit/framework)
    [ -z "$SERVER_MISSING" ] && targets+=(eddy fw_test_cuda_runtime fw_test_cuda_kernels fw_test_cuda_nn)
    # a CUDA backend target, once framework/cuda/ exists (issue 17), is
    # built through the package it links into
    cmake --build "$BUILD" -j"$JOBS" --target "${targets[@]}" || return 1
    echo "detail: built ${targets[*]} with -j$JOBS (warnings are errors)"
}

c_cuda_backend() {
    local src
    src=$(grep -rlE 'cuda_runtime\.h|__global__|cublas' "$ROOT/framework" --include='*.c' --include='*.h' --include='*.cu' 2>/dev/null | head -n 5)
    if [ ! -d "$ROOT/framework/cuda" ] && [ -z "$src" ]; then
        echo "framework/ holds no CUDA code: only framework/dist/nccl.c, which dlopens libnccl and libcudart"
        echo "detail: not built: framework/cuda/ does not exist yet (issue 17's CUDA backend); no .cu, cuda_runtime.h or cuBLAS use in framework/"
        return 77
    fi
    echo "CUDA sources: $src"
    PYTHONPATH="$BUILD/framework/python" /usr/bin/python3 -c '
import paddle
print("detail: paddle.is_compiled_with_cuda() %s, device_count %d, get_device %s" % (
    paddle.is_compiled_with_cuda(), paddle.device.cuda.device_count(), paddle.device.get_device()))
import sys; sys.exit(0 if paddle.is_compiled_with_cuda() and paddle.device.cuda.device_count() > 0 else 1)'
}

c_paddle_device() {
    PYTHONPATH="$BUILD/framework/python" /usr/bin/python3 -c '
import sys
import paddle
cuda = paddle.is_compiled_with_cuda()
n = paddle.device.cuda.device_count()
print("paddle", paddle.__version__, "is_compiled_with_cuda", cuda, "device_count", n, "get_device", paddle.device.get_device())
x = paddle.to_tensor([1.0, 2.0, 3.0])
assert float((x * 2).sum()) == 12.0
if not cuda:
    print("detail: import and a CPU op work; is_compiled_with_cuda() False, device_count %d: no CUDA backend built (issue 17)" % n)
    sys.exit(77)
print("detail: is_compiled_with_cuda() True, device_count %d, get_device %s" % (n, paddle.device.get_device()))
sys.exit(0 if n > 0 else 1)'
}

c_nccl_init() {
    PYTHONPATH="$BUILD/framework/python" /usr/bin/python3 - <<'PY'
import ctypes, subprocess, sys
try:
    nccl = ctypes.CDLL("libnccl.so.2")
except OSError as e:
    print("detail: not available: libnccl.so.2 cannot be loaded (%s); the communicator reports NCCL unavailable" % e)
    r = subprocess.run([sys.executable, "tests/unit/python/test_dist_nccl.py", "-v", "NcclTest.test_init_reports_why_it_cannot_run"])
    sys.exit(77 if r.returncode == 0 else 1)
v = ctypes.c_int()
nccl.ncclGetVersion(ctypes.byref(v))
print("NCCL", v.value)
ngpu = ctypes.c_int(0)
try:
    if ctypes.CDLL("libcudart.so").cudaGetDeviceCount(ctypes.byref(ngpu)) != 0:
        ngpu.value = 0
except OSError as e:
    print("libcudart.so:", e)
r = subprocess.run([sys.executable, "tests/unit/python/test_dist_nccl.py", "-v", "NcclTest.test_init_reports_why_it_cannot_run"])
what = ("a 1-rank NCCL communicator on GPU 0" if ngpu.value else
        "no GPU usable through libcudart.so: the communicator's refusal (cudaSetDevice)")
print("detail: libnccl.so.2 version %d dlopened; %s %s" % (v.value, what, "as expected" if r.returncode == 0 else "FAILED"))
sys.exit(r.returncode if ngpu.value or r.returncode else 1)
PY
}

c_nccl_allreduce() {
    local out=$DIR/nccl2.out
    PYTHONPATH="$BUILD/framework/python" /usr/bin/python3 tests/unit/python/test_dist_nccl.py -v \
        NcclTest.test_collectives_on_two_gpus >"$out" 2>&1
    cat "$out"
    if grep -q 'skipped' "$out"; then
        echo "detail: skipped: $(grep -o "skipped '.*'" "$out" | head -n 1)"
        return 77
    fi
    grep -qx 'OK' "$out" || return 1
    echo "detail: 2 ranks (paddle.distributed.launch --gpus 0,1): all_reduce and broadcast over NCCL correct"
}

c_version() {
    local data port pid out i
    data=$(mktemp -d /tmp/eddy-gpu-check-XXXXXX)
    port=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
    EDDY_USER=root "$BUILD/cmd/eddy" serve --data "$data/data" --listen "127.0.0.1:$port" >"$data/serve.log" 2>&1 &
    pid=$!
    out=""
    for i in $(seq 1 100); do
        out=$(/usr/bin/python3 -c "import urllib.request; print(urllib.request.urlopen('http://127.0.0.1:$port/api/v1/version', timeout=2).read().decode())" 2>/dev/null) && break
        sleep 0.2
    done
    kill "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    tail -n 5 "$data/serve.log"
    rm -rf "$data"
    [ -n "$out" ] || { echo "detail: eddy serve never answered /api/v1/version"; return 1; }
    echo "$out"
    PYTHONPATH="$BUILD/framework/python" /usr/bin/python3 -c '
import json, sys
import paddle
v = json.loads(sys.argv[1])
want = paddle.is_compiled_with_cuda() and paddle.device.cuda.device_count() > 0
print("detail: /api/v1/version cuda=%s cuda_toolkit=%s; paddle can compute on a GPU: %s" % (v.get("cuda"), v.get("cuda_toolkit"), want))
sys.exit(0 if bool(v.get("cuda")) == want else 1)' "$out"
}

# A C test binary of the full build (exit 77: skip, with its reason).
c_fw_test() {
    local bin=$BUILD/tests/unit/framework/$1
    [ -x "$bin" ] || { echo "detail: not built: $bin (framework-only build)"; return 77; }
    "$bin"
    local rc=$?
    [ $rc = 0 ] && echo "detail: $1: every case passed"
    return $rc
}
c_cuda_runtime() { c_fw_test fw_test_cuda_runtime; }
c_cuda_kernels() { c_fw_test fw_test_cuda_kernels; }
c_cuda_nn() { c_fw_test fw_test_cuda_nn; }
# A Python check of tests/gpu (each prints its own "detail:" line).
c_py() { PYTHONPATH="$BUILD/framework/python" timeout 600 /usr/bin/python3 "$@"; }
c_ops_vs_cpu() { OPS_VS_CPU_HALF=1 c_py tests/gpu/ops_vs_cpu.py; }
c_lenet() { c_py tests/gpu/lenet_gpu.py; }
c_amp() { c_py tests/gpu/amp_check.py; }
c_bench_gemm() { c_py tests/gpu/bench/gemm.py; }
c_bench_train() { c_py tests/gpu/bench/train_step.py; }
c_bench_overhead() { c_py tests/gpu/bench/op_overhead.py; }
c_scrub() { bash tests/gpu/scrub_check.sh; }
c_platform() {
    [ -f "$BUILD/CTestTestfile.cmake" ] && [ -x "$BUILD/cmd/eddy" ] || { echo "detail: not built: no eddy binary"; return 77; }
    cmake --build "$BUILD" -j"$JOBS" --target it_test_gpu_platform it_test_gpu_version >/dev/null || return 1
    (cd "$BUILD" && ctest -R 'it_test_gpu' --output-on-failure) || return 1
    echo "detail: fake-NVML platform tests (allocation, nodes in the sandbox, figures, version) pass"
}

# ---- run them ------------------------------------------------------------------

export ROOT DIR JOBS CUDA LOGS NGPU
export -f c_devices c_toolkit c_deps c_cuda_smoke c_configure c_build c_cuda_backend c_paddle_device c_nccl_init \
    c_nccl_allreduce c_version c_fw_test c_cuda_runtime c_cuda_kernels c_cuda_nn c_py c_ops_vs_cpu c_lenet c_amp \
    c_bench_gemm c_bench_train c_bench_overhead c_scrub c_platform

echo "tests/gpu/check.sh: $NGPU GPU(s), $JOBS jobs, logs in $LOGS"
check "gpu devices (nvidia-smi)" 30 c_devices
check "cuda toolkit (nvcc)" 30 c_toolkit
probe_deps
check "build dependencies" 30 c_deps
if [ -x "$CUDA/bin/nvcc" ]; then
    check "cuda smoke kernel (nvcc)" 180 c_cuda_smoke
else
    skip_row "cuda smoke kernel (nvcc)" "no $CUDA/bin/nvcc"
fi
built=0
if [ -z "$SERVER_MISSING" ]; then BUILD=$DIR/full; else BUILD=$DIR/fw; fi
if [ -z "$FW_MISSING" ]; then
    check "configure (CUDA, -Werror)" 180 c_configure
    if [ "$LAST" = PASS ]; then
        check "build (CUDA, -Werror)" 420 c_build
        [ "$LAST" = PASS ] && built=1
    fi
fi
if [ $built = 1 ]; then
    check "cuda backend (framework)" 240 c_cuda_backend
    check "paddle device API" 60 c_paddle_device
    check "cuda runtime (C test)" 120 c_cuda_runtime
    check "cuda kernels vs cpu (C test)" 300 c_cuda_kernels
    check "cuda nn kernels vs cpu (C test)" 300 c_cuda_nn
    check "every op fwd+bwd vs cpu" 300 c_ops_vs_cpu
    check "lenet digits >= 0.95 on gpu" 240 c_lenet
    check "amp O1/O2 fp16/bf16" 300 c_amp
    check "bench: gemm 4096^3 vs cublas" 120 c_bench_gemm
    check "bench: lenet/resnet18 step, peak mem" 240 c_bench_train
    check "bench: host overhead per op" 60 c_bench_overhead
    check "tenant scrub (2 processes)" 120 c_scrub
    check "nccl: dlopen + 1-rank init" 120 c_nccl_init
    if [ "$NGPU" -ge 2 ]; then
        check "nccl: 2-rank all_reduce" 300 c_nccl_allreduce
    else
        skip_row "nccl: 2-rank all_reduce" "needs 2 GPUs; this machine has $NGPU"
    fi
    if [ -x "$BUILD/cmd/eddy" ]; then
        check "/api/v1/version cuda" 60 c_version
        check "platform: fake-NVML tests" 300 c_platform
    else
        skip_row "/api/v1/version cuda" "not built: no eddy binary (server packages missing:${SERVER_MISSING:- none})"
    fi
else
    for c in "cuda backend (framework)" "paddle device API" "cuda runtime (C test)" "cuda kernels vs cpu (C test)" "cuda nn kernels vs cpu (C test)" \
        "every op fwd+bwd vs cpu" "lenet digits >= 0.95 on gpu" "amp O1/O2 fp16/bf16" "bench: gemm 4096^3 vs cublas" \
        "bench: lenet/resnet18 step, peak mem" "bench: host overhead per op" "nccl: dlopen + 1-rank init" "nccl: 2-rank all_reduce" "/api/v1/version cuda"; do
        skip_row "$c" "not run: the build above did not succeed"
    done
    failed=1
fi

echo
echo "| check | result | detail | seconds |"
echo "|---|---|---|---|"
cat "$TABLE"
echo
echo "total $(($(date +%s) - START)) s; $([ $failed = 0 ] && echo 'no check failed' || echo 'SOME CHECKS FAILED')"
if [ -n "${OUT:-}" ] && [ -d "${OUT:-}" ]; then
    mkdir -p "$OUT/gpu-check" && cp "$TABLE" "$LOGS"/*.log "$OUT/gpu-check/" 2>/dev/null
fi
exit $failed
