#!/usr/bin/python3
"""GEMM at 4096^3: paddle.matmul on the GPU against cuBLAS called directly
(ctypes on libcublas/libcudart, the same math modes Eddy's backend uses:
float32 without TF32 (cublasSgemm, CUBLAS_DEFAULT_MATH), float16 and
bfloat16 through cublasGemmEx with float32 accumulation). Target: Eddy
>= 0.95x cuBLAS's throughput in each dtype.

    PYTHONPATH=<build>/framework/python /usr/bin/python3 tests/gpu/bench/gemm.py

Prints TFLOP/s of both and the ratio per dtype, then "detail: ...". Exit 0
when every ratio meets the target, 1 otherwise, 77 without a usable GPU.
GEMM_N=<n> changes the size; GPU_CHECK_CPU=1 times paddle.matmul on the
CPU at n=512 only (a dry run: no cuBLAS).
"""
import ctypes
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import gpucommon  # noqa: E402

import paddle  # noqa: E402

TARGET = 0.95
CUDA_R_32F, CUDA_R_16F, CUDA_R_16BF = 0, 2, 14
CUBLAS_COMPUTE_32F = 68
CUBLAS_GEMM_DEFAULT = -1


def load(names):
    err = None
    for n in names:
        try:
            return ctypes.CDLL(n)
        except OSError as e:
            err = e
    raise OSError('cannot load any of {}: {}'.format(names, err))


class Cublas:
    def __init__(self):
        self.rt = load(['libcudart.so', 'libcudart.so.13', 'libcudart.so.12'])
        self.bl = load(['libcublas.so', 'libcublas.so.13', 'libcublas.so.12'])
        self.h = ctypes.c_void_p()
        self._ok(self.bl.cublasCreate_v2(ctypes.byref(self.h)), 'cublasCreate')
        self._ok(self.bl.cublasSetMathMode(self.h, 0), 'cublasSetMathMode')

    @staticmethod
    def _ok(rc, what):
        if rc != 0:
            raise RuntimeError('{} failed: {}'.format(what, rc))

    def malloc(self, nbytes):
        p = ctypes.c_void_p()
        self._ok(self.rt.cudaMalloc(ctypes.byref(p), ctypes.c_size_t(nbytes)), 'cudaMalloc')
        self._ok(self.rt.cudaMemset(p, 0, ctypes.c_size_t(nbytes)), 'cudaMemset')
        return p

    def sync(self):
        self._ok(self.rt.cudaDeviceSynchronize(), 'cudaDeviceSynchronize')

    def gemm_fn(self, dtype, n):
        esz = 4 if dtype == 'float32' else 2
        a, b, c = (self.malloc(n * n * esz) for _ in range(3))
        one, zero = ctypes.c_float(1.0), ctypes.c_float(0.0)
        if dtype == 'float32':
            def f():
                self._ok(self.bl.cublasSgemm_v2(self.h, 0, 0, n, n, n, ctypes.byref(one), a, n, b,
                                                n, ctypes.byref(zero), c, n), 'cublasSgemm')
        else:
            t = CUDA_R_16F if dtype == 'float16' else CUDA_R_16BF
            def f():
                self._ok(self.bl.cublasGemmEx(self.h, 0, 0, n, n, n, ctypes.byref(one), a, t, n,
                                              b, t, n, ctypes.byref(zero), c, t, n,
                                              CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
                         'cublasGemmEx')
        return f, (a, b, c)

    def free(self, ptrs):
        for p in ptrs:
            self.rt.cudaFree(p)


def time_fn(fn, sync, iters):
    import time
    for _ in range(3):
        fn()
    sync()
    best = []
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(iters):
            fn()
        sync()
        best.append((time.perf_counter() - t0) / iters)
    return float(np.median(best))


def main():
    dev = gpucommon.device_or_skip(paddle, 'gemm')
    n = int(os.environ.get('GEMM_N', '512' if gpucommon.DRY else '4096'))
    flops = 2.0 * n ** 3
    cb = None if gpucommon.DRY else Cublas()
    rows, ok = [], True
    for dtype in ('float32', 'float16', 'bfloat16'):
        a = paddle.randn([n, n]).astype(dtype)
        b = paddle.randn([n, n]).astype(dtype)
        te = time_fn(lambda: paddle.matmul(a, b), lambda: gpucommon.sync(paddle),
                     10 if dtype == 'float32' else 30)
        if cb is None:
            rows.append((dtype, flops / te / 1e12, None, None))
            print('{}: Eddy {:.3f} TFLOP/s (dry run, no cuBLAS)'.format(dtype, flops / te / 1e12))
            continue
        f, ptrs = cb.gemm_fn(dtype, n)
        tc = time_fn(f, cb.sync, 10 if dtype == 'float32' else 30)
        cb.free(ptrs)
        ratio = tc / te
        ok = ok and ratio >= TARGET
        rows.append((dtype, flops / te / 1e12, flops / tc / 1e12, ratio))
        print('{}: Eddy {:.1f} TFLOP/s ({:.2f} ms), cuBLAS {:.1f} TFLOP/s ({:.2f} ms): {:.3f}x'.format(
            dtype, flops / te / 1e12, te * 1e3, flops / tc / 1e12, tc * 1e3, ratio))
        del a, b
    if cb is None:
        print('detail: DRY RUN on the CPU: matmul {}^3 '.format(n) + ', '.join(
            '{} {:.3f} TFLOP/s'.format(r[0], r[1]) for r in rows))
        return 0
    print('detail: GEMM {}^3 on {} vs cuBLAS: '.format(n, paddle.device.cuda.get_device_name()) +
          ', '.join('{} {:.1f} vs {:.1f} TFLOP/s = {:.2f}x'.format(*r) for r in rows) +
          ' (target >= {}x){}'.format(TARGET, '' if ok else ': BELOW TARGET'))
    return 0 if ok else 1


if __name__ == '__main__':
    sys.exit(main())
