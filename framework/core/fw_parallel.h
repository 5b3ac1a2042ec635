/*
 * fw_parallel.h - the framework's one thread pool (private to framework/).
 *
 * API-STABLE
 *
 * A persistent pool sized to the online cores (FW_NUM_THREADS or
 * OMP_NUM_THREADS override), started on first use. Idle workers sleep on a
 * condition variable after a short spin, so they do not steal cores from
 * OpenBLAS between our kernels.
 *
 * OpenBLAS: a BLAS call made outside a parallel region uses all of
 * OpenBLAS's threads; inside fw_parallel_for (on any worker, or the caller
 * while it runs its share) OpenBLAS is limited to 1 thread, so the two pools
 * never oversubscribe the cores. See framework/README.md ("Threads").
 */
#ifndef FW_PARALLEL_H
#define FW_PARALLEL_H

#include <stdbool.h>
#include <stdint.h>

/* Body of a parallel loop: handle indices [begin, end). Must not fail
 * (record errors in ctx) and must not call fw_error_set expecting the
 * caller to see it (messages are thread-local). */
typedef void (*fw_parallel_fn)(void *ctx, int64_t begin, int64_t end);

/* Run fn over [0, n) split into chunks of at least `grain` indices across
 * the pool; the caller runs a share and returns when all are done. Runs
 * inline when n <= grain, when the pool has one thread, or when called from
 * inside a parallel region (no nesting). grain <= 0 means 1. */
void fw_parallel_for(int64_t n, int64_t grain, fw_parallel_fn fn, void *ctx);

/* Threads the pool uses (including the caller). */
int fw_parallel_num_threads(void);

/* Resize the pool (n >= 1; clamps); waits for a running loop. Also sets
 * the OpenBLAS thread count used outside parallel regions to n (initially
 * OPENBLAS_NUM_THREADS when set, else the pool's size). Must not be called
 * from inside a loop body. */
void fw_parallel_set_num_threads(int n);

/* Run fn(ctx, 0, n) on the calling thread as a parallel region of one:
 * OpenBLAS single-threaded and nested loops inline. For small BLAS calls
 * outside any loop (a batch-1 convolution's gemm), where waking OpenBLAS's
 * threads costs more than the work. Plain fn(ctx, 0, n) when already in a
 * region, when the pool has one thread, or while another thread's loop
 * holds the pool. */
void fw_parallel_run_serial(int64_t n, fw_parallel_fn fn, void *ctx);

/* True on a pool worker or in the caller while it runs a parallel loop. */
bool fw_parallel_in_region(void);

/* Suggested grain for elementwise loops (elements per chunk). */
#define FW_GRAIN_ELEMENTWISE 32768

#endif
