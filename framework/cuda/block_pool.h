/*
 * block_pool.h - the CUDA backend's caching allocator, in plain C (private
 * to framework/cuda/). It never calls CUDA itself: it gets raw alloc, free
 * and scrub callbacks (cudaMalloc, cudaFree, cudaMemsetAsync on the compute
 * stream in cuda/memory.c), so tests/unit/framework/test_cu_block_pool.c
 * runs it on the CPU over malloc.
 *
 * Modelled on PyTorch's CUDACachingAllocator:
 * - requests round up to 512 B; those up to 1 MiB ("small") are carved from
 *   2 MiB segments, larger ones from 20 MiB segments (requests under
 *   10 MiB) or segments of the request rounded up to 2 MiB;
 * - a free block larger than the request is split (small pool: when the
 *   rest is >= 512 B; large pool: when the rest is > 1 MiB), and a freed
 *   block merges with free neighbours of the same segment;
 * - best fit from size-bucketed free lists; small and large pools apart;
 * - stream-ordered reuse: one pool per device, and every kernel and copy
 *   of the device is queued on its one compute stream, so a block freed by
 *   the host after queueing work that uses it can be handed out at once:
 *   the next user's work runs after that work on the same stream;
 * - out of memory: free every cached (wholly free) segment, retry once;
 * - each fresh segment from the driver is scrubbed (zeroed) before its
 *   first use, so no tenant reads bytes it did not write;
 * - counters: allocated (live blocks, rounded sizes), reserved (segments),
 *   and their peaks.
 * Thread-safe (one mutex per pool).
 */
#ifndef FW_CU_BLOCK_POOL_H
#define FW_CU_BLOCK_POOL_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define FW_BP_MIN_BLOCK ((size_t)512)
#define FW_BP_SMALL_SIZE ((size_t)1 << 20)       /* largest "small" request */
#define FW_BP_SMALL_SEGMENT ((size_t)2 << 20)
#define FW_BP_LARGE_SEGMENT ((size_t)20 << 20)
#define FW_BP_MIN_LARGE_ALLOC ((size_t)10 << 20)
#define FW_BP_ROUND_LARGE ((size_t)2 << 20)
#define FW_BP_NBUCKETS 160

typedef struct fw_bp_ops {
    void *ctx;
    /* n bytes from the device (NULL: out of memory). */
    void *(*alloc)(void *ctx, size_t n);
    void (*free)(void *ctx, void *p, size_t n);
    /* Zero n bytes of a fresh segment before its first use (queued work is
     * fine); nonzero: failed (the segment is given back). May be NULL. */
    int (*scrub)(void *ctx, void *p, size_t n);
} fw_bp_ops;

typedef struct fw_bp_stats {
    uint64_t allocated, peak_allocated;   /* live blocks (rounded sizes) */
    uint64_t reserved, peak_reserved;     /* segments from the driver */
    uint64_t requested;                   /* live bytes as asked */
    uint64_t segments;                    /* segments held */
    uint64_t driver_allocs, driver_frees; /* alloc/free callbacks made */
    uint64_t oom_retries;                 /* cache flushes after a failed alloc */
    uint64_t live_blocks;
} fw_bp_stats;

struct fw_bp_block;

typedef struct fw_block_pool {
    pthread_mutex_t lock;
    fw_bp_ops ops;
    /* free blocks by size bucket, one array per pool (0 small, 1 large) */
    struct fw_bp_block *free_lists[2][FW_BP_NBUCKETS];
    /* live blocks by address (chained hash) */
    struct fw_bp_block **live;
    size_t live_cap, live_count;
    fw_bp_stats st;
} fw_block_pool;

int fw_bp_init(fw_block_pool *p, const fw_bp_ops *ops);
/* Frees every cached segment and the pool's records; segments that still
 * hold live blocks stay with the driver (process exit). */
void fw_bp_destroy(fw_block_pool *p);

/* The rounded size a request of n bytes is served with. */
size_t fw_bp_round(size_t n);
/* A block of at least n bytes (256-byte aligned when the driver's
 * segments are), or NULL when the driver is out of memory even after
 * emptying the cache. */
void *fw_bp_alloc(fw_block_pool *p, size_t n);
/* Hand back a block from fw_bp_alloc (NULL: nothing). false when p is not
 * a live block of this pool (nothing changes). */
bool fw_bp_free(fw_block_pool *p, void *ptr);
/* The size of live block ptr (its rounded size or more: a remainder too
 * small to split stays with it); 0 when ptr is not one. */
size_t fw_bp_block_size(fw_block_pool *p, const void *ptr);
/* Give every wholly free segment back to the driver. */
void fw_bp_empty_cache(fw_block_pool *p);
void fw_bp_stats_get(fw_block_pool *p, fw_bp_stats *out);
/* Peaks := current values. */
void fw_bp_reset_peak(fw_block_pool *p);

#ifdef __cplusplus
}
#endif

#endif
