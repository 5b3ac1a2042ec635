#!/bin/bash
# tests/gpu/scrub_check.sh - a GPU handed to the next tenant holds nothing of
# the previous one's (issue 17 item 5: users of AI Studio reported seeing
# another user's GPU memory).
#
#   tests/gpu/scrub_check.sh          # GPU 0; SCRUB_GPU=N picks another
#
# Tenant A, a small CUDA program compiled here with nvcc, takes as much of
# the GPU's free memory as it can get (in 256 MiB blocks, then smaller), fills
# every byte with a canary pattern, checks it reads back, and exits. Tenant B,
# a new process (a new CUDA context, as the next job's would be), takes the
# same amount again and scans all of it without writing: no canary word may
# appear (the driver zeroes memory it hands to a new context; the framework's
# caching allocator also scrubs fresh segments, framework/cuda/). B also
# counts words that are not zero, reported, not failed on (a driver may keep
# its own bookkeeping there). Prints "detail: ..." (tests/gpu/check.sh's
# table line). Exit 0 clean, 1 a canary was seen or a step failed, 77 (with
# the reason) without an NVIDIA GPU or nvcc.
set -u
CUDA=${CUDA_HOME:-/usr/local/cuda}
GPU=${SCRUB_GPU:-0}
export PATH="$CUDA/bin:$PATH"
export LD_LIBRARY_PATH="$CUDA/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

if ! command -v nvidia-smi >/dev/null 2>&1 || ! timeout 30 nvidia-smi -L 2>/dev/null | grep -q '^GPU [0-9]'; then
    echo "detail: skipped: no NVIDIA GPU on this machine"
    exit 77
fi
if [ ! -x "$CUDA/bin/nvcc" ]; then
    echo "detail: skipped: no $CUDA/bin/nvcc to build the tenants"
    exit 77
fi
case $GPU in *[!0-9]* | '') echo "detail: SCRUB_GPU=$GPU is not a GPU index"; exit 1 ;; esac

d=$(mktemp -d /tmp/eddy-scrub-XXXXXX) || exit 1
trap 'rm -rf "$d"' EXIT
cat >"$d/tenant.cu" <<'CU'
// tenant fill|scan: fill takes free memory and writes the canary; scan
// takes as much and counts canary and non-zero words.
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CANARY 0x5CA7C0DEu
#define MAX_BLOCKS 4096

static int check(cudaError_t e, const char *what)
{
    if (e != cudaSuccess) {
        printf("detail: %s: %s\n", what, cudaGetErrorString(e));
        exit(1);
    }
    return 0;
}

__global__ void fill(unsigned *p, size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        p[i] = CANARY;
}

__global__ void scan(const unsigned *p, size_t n, unsigned long long *canary, unsigned long long *nonzero)
{
    unsigned long long c = 0, z = 0;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        c += p[i] == CANARY;
        z += p[i] != 0;
    }
    if (c)
        atomicAdd(canary, c);
    if (z)
        atomicAdd(nonzero, z);
}

int main(int argc, char **argv)
{
    static void *blocks[MAX_BLOCKS];
    static size_t sizes[MAX_BLOCKS];
    int fill_mode = argc > 1 && strcmp(argv[1], "fill") == 0, nb = 0;
    size_t freeb = 0, total = 0, got = 0, step = (size_t)256 << 20;
    unsigned long long *counts, host[2] = {0, 0};

    check(cudaSetDevice(0), "cudaSetDevice");
    check(cudaMemGetInfo(&freeb, &total), "cudaMemGetInfo");
    check(cudaMalloc((void **)&counts, 2 * sizeof(*counts)), "cudaMalloc counters");
    check(cudaMemset(counts, 0, 2 * sizeof(*counts)), "cudaMemset counters");
    // as much as the driver gives: big blocks first, then smaller ones
    while (nb < MAX_BLOCKS && step >= ((size_t)1 << 20)) {
        void *p = NULL;
        if (cudaMalloc(&p, step) != cudaSuccess) {
            cudaGetLastError();
            step /= 2;
            continue;
        }
        blocks[nb] = p;
        sizes[nb++] = step;
        got += step;
    }
    for (int i = 0; i < nb; i++) {
        size_t n = sizes[i] / sizeof(unsigned);
        if (fill_mode)
            fill<<<1024, 256>>>((unsigned *)blocks[i], n);
        else
            scan<<<1024, 256>>>((const unsigned *)blocks[i], n, &counts[0], &counts[1]);
    }
    check(cudaGetLastError(), "launch");
    check(cudaDeviceSynchronize(), "synchronize");
    if (fill_mode) {
        // the canary is really there: scan what was written
        for (int i = 0; i < nb; i++)
            scan<<<1024, 256>>>((const unsigned *)blocks[i], sizes[i] / sizeof(unsigned), &counts[0], &counts[1]);
        check(cudaDeviceSynchronize(), "synchronize");
    }
    check(cudaMemcpy(host, counts, sizeof(host), cudaMemcpyDeviceToHost), "cudaMemcpy counters");
    printf("%s %zu MiB of %zu MiB free (%zu total) canary_words %llu nonzero_words %llu\n", fill_mode ? "filled" : "scanned",
           got >> 20, freeb >> 20, total >> 20, host[0], host[1]);
    if (fill_mode && host[0] != got / sizeof(unsigned)) {
        printf("detail: tenant A wrote %zu words but read back %llu canaries\n", got / sizeof(unsigned), host[0]);
        return 1;
    }
    return 0;
}
CU
if ! "$CUDA/bin/nvcc" -O2 -arch=native -o "$d/tenant" "$d/tenant.cu" >"$d/nvcc.log" 2>&1 &&
    ! "$CUDA/bin/nvcc" -O2 -o "$d/tenant" "$d/tenant.cu" >>"$d/nvcc.log" 2>&1; then
    cat "$d/nvcc.log"
    echo "detail: nvcc could not build the tenants: $(tail -n 1 "$d/nvcc.log")"
    exit 1
fi

a=$(CUDA_VISIBLE_DEVICES=$GPU "$d/tenant" fill 2>&1) || { echo "$a"; echo "detail: tenant A failed: $(echo "$a" | tail -n 1)"; exit 1; }
echo "tenant A: $a"
b=$(CUDA_VISIBLE_DEVICES=$GPU "$d/tenant" scan 2>&1) || { echo "$b"; echo "detail: tenant B failed: $(echo "$b" | tail -n 1)"; exit 1; }
echo "tenant B: $b"
filled=$(echo "$a" | awk '/^filled/ {print $2}')
scanned=$(echo "$b" | awk '/^scanned/ {print $2}')
canary=$(echo "$b" | awk '/^scanned/ {print $(NF-2)}')
nonzero=$(echo "$b" | awk '/^scanned/ {print $NF}')
if [ -z "$canary" ] || [ -z "$filled" ]; then
    echo "detail: could not read the tenants' counts"
    exit 1
fi
if [ "$canary" != 0 ]; then
    echo "detail: LEAK: tenant B found $canary canary words of tenant A in $scanned MiB on GPU $GPU"
    exit 1
fi
echo "detail: GPU $GPU: A filled $filled MiB with a canary, B took $scanned MiB and found 0 canary words ($nonzero non-zero words)"
exit 0
