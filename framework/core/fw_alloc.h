/*
 * fw_alloc.h - the caching allocator (private to framework/).
 *
 * Blocks are rounded up to size classes (four per power of two, 64 B to
 * 256 MiB) and freed blocks go to a per-device, per-class free list instead
 * of back to the backend (up to FW_MEM_CACHE_MB, default 4096 MiB, per
 * device), so a training loop that allocates the same sizes
 * every step stops calling malloc after the first step. Larger blocks go
 * straight to the backend. When the backend is out of memory the cache is
 * emptied and the allocation retried once. Thread-safe (one mutex per
 * device; held only to push/pop a list).
 */
#ifndef FW_ALLOC_H
#define FW_ALLOC_H

#include "fw/tensor.h"

#include <stddef.h>
#include <stdint.h>

/* Allocate at least nbytes on dev (64-byte aligned); *block receives the
 * class size to hand back to fw_mem_free. NULL when out of memory (no
 * message set). */
void *fw_mem_alloc(fw_device dev, size_t nbytes, size_t *block);
void fw_mem_free(fw_device dev, void *p, size_t block);

typedef struct fw_mem_stats {
    uint64_t backend_allocs;  /* blocks obtained from the backend */
    uint64_t backend_frees;   /* blocks returned to the backend */
    uint64_t cache_hits;      /* allocations served from a free list */
    uint64_t allocs;          /* all fw_mem_alloc calls that succeeded */
    uint64_t bytes_in_use;    /* handed out, by class size */
    uint64_t bytes_cached;    /* on free lists */
} fw_mem_stats;

void fw_mem_stats_get(fw_mem_stats *out, fw_device dev);
/* Return every cached block of dev to the backend. */
void fw_mem_empty_cache(fw_device dev);

/* Small host objects (tensor handles, autograd nodes) from the same cache. */
void *fw__small_alloc(size_t nbytes, size_t *block);
void fw__small_free(void *p, size_t block);

#endif
