/* alloc.c - the caching allocator: size-class free lists per device. */
#include "fw_alloc.h"
#include "fw_backend.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define MIN_SHIFT 6                  /* 64 B */
#define MAX_SHIFT 28                 /* 256 MiB: larger blocks are not cached */
#define SUB 4                        /* classes per power of two */
#define NCLASS ((MAX_SHIFT - MIN_SHIFT + 1) * SUB)

typedef struct free_block { struct free_block *next; } free_block;

typedef struct dev_cache {
    pthread_mutex_t lock;
    free_block *lists[NCLASS];
    fw_mem_stats stats;
} dev_cache;

#define SMALL_CLASSES 32   /* 64-byte steps up to 2 KiB */
static pthread_mutex_t small_lock = PTHREAD_MUTEX_INITIALIZER;
static free_block *small_lists[SMALL_CLASSES];

static dev_cache caches[FW_NDEVICES] = {
    {PTHREAD_MUTEX_INITIALIZER, {0}, {0}},
    {PTHREAD_MUTEX_INITIALIZER, {0}, {0}},
};

/* Class index and size for n bytes; -1 when too large to cache. */
static int size_class(size_t n, size_t *csize)
{
    if (n <= ((size_t)1 << MIN_SHIFT)) {
        *csize = (size_t)1 << MIN_SHIFT;
        return 0;
    }
    if (n > ((size_t)1 << MAX_SHIFT)) {
        *csize = (n + 4095) & ~(size_t)4095;
        return -1;
    }
    int shift = 63 - __builtin_clzll((unsigned long long)(n - 1)); /* 2^shift < n <= 2^(shift+1) */
    size_t base = (size_t)1 << shift;
    size_t step = base / SUB;
    size_t k = (n - base + step - 1) / step;          /* 1..SUB */
    *csize = base + k * step;
    int idx = (shift - MIN_SHIFT) * SUB + (int)k;     /* shift >= MIN_SHIFT here */
    return idx < NCLASS ? idx : -1;
}

/* Backend memory functions for host devices; raw malloc keeps the core
 * usable before any backend is registered. */
static void *raw_alloc(fw_device dev, size_t n)
{
    const fw_backend *b = fw_backend_get(dev);
    return b ? b->alloc(n) : NULL;
}

static void raw_free(fw_device dev, void *p, size_t n)
{
    const fw_backend *b = fw_backend_get(dev);
    if (b)
        b->free(p, n);
}

static void empty_locked(fw_device dev, dev_cache *c)
{
    for (int i = 0; i < NCLASS; i++) {
        size_t csize;
        free_block *f = c->lists[i];
        /* recover the class size from the index */
        int shift = i / SUB + MIN_SHIFT;
        int k = i % SUB;
        if (i == 0)
            csize = (size_t)1 << MIN_SHIFT;
        else if (k == 0)
            csize = (size_t)1 << shift;              /* base + SUB*step of shift-1 */
        else
            csize = ((size_t)1 << shift) + (size_t)k * (((size_t)1 << shift) / SUB);
        while (f) {
            free_block *next = f->next;
            raw_free(dev, f, csize);
            c->stats.backend_frees++;
            c->stats.bytes_cached -= csize;
            f = next;
        }
        c->lists[i] = NULL;
    }
}

void *fw_mem_alloc(fw_device dev, size_t nbytes, size_t *block)
{
    dev_cache *c;
    size_t csize;
    int idx;
    void *p = NULL;

    if ((unsigned)dev >= FW_NDEVICES)
        return NULL;
    if (dev != FW_CPU) {              /* a backend that caches itself: straight through */
        const fw_backend *b = fw_backend_get(dev);
        if (b && b->caches_itself) {
            p = b->alloc(nbytes ? nbytes : 1);
            *block = nbytes ? nbytes : 1;
            return p;
        }
    }
    c = &caches[dev];
    idx = size_class(nbytes ? nbytes : 1, &csize);
    /* one critical section on the hot path (a cache hit) */
    pthread_mutex_lock(&c->lock);
    if (idx >= 0 && c->lists[idx]) {
        free_block *f = c->lists[idx];
        c->lists[idx] = f->next;
        c->stats.cache_hits++;
        c->stats.bytes_cached -= csize;
        c->stats.allocs++;
        c->stats.bytes_in_use += csize;
        pthread_mutex_unlock(&c->lock);
        *block = csize;
        return f;
    }
    pthread_mutex_unlock(&c->lock);
    p = raw_alloc(dev, csize);
    if (p == NULL) {                              /* out of memory: drop the cache, retry */
        pthread_mutex_lock(&c->lock);
        empty_locked(dev, c);
        pthread_mutex_unlock(&c->lock);
        p = raw_alloc(dev, csize);
        if (p == NULL)
            return NULL;
    }
    pthread_mutex_lock(&c->lock);
    c->stats.backend_allocs++;
    c->stats.allocs++;
    c->stats.bytes_in_use += csize;
    pthread_mutex_unlock(&c->lock);
    *block = csize;
    return p;
}

/* Most bytes kept on free lists per device: FW_MEM_CACHE_MB (default
 * 4096 MiB); beyond it freed blocks go back to the backend. */
static uint64_t cache_limit(void)
{
    static _Atomic uint64_t limit;   /* computed once; racing threads agree */
    if (limit == 0) {
        const char *s = getenv("FW_MEM_CACHE_MB");
        long long mb = s && *s ? atoll(s) : 4096;
        limit = (uint64_t)(mb > 0 ? mb : 0) << 20;
        if (limit == 0)
            limit = 1;          /* "0": cache nothing (still nonzero: computed) */
    }
    return limit;
}

void fw_mem_free(fw_device dev, void *p, size_t block)
{
    dev_cache *c;
    size_t csize;
    int idx;

    if (p == NULL || (unsigned)dev >= FW_NDEVICES)
        return;
    if (dev != FW_CPU) {
        const fw_backend *b = fw_backend_get(dev);
        if (b && b->caches_itself) {
            b->free(p, block);
            return;
        }
    }
    c = &caches[dev];
    idx = size_class(block, &csize);
    pthread_mutex_lock(&c->lock);
    c->stats.bytes_in_use -= block;
    if (idx >= 0 && csize == block && c->stats.bytes_cached + block <= cache_limit()) {
        free_block *f = p;
        f->next = c->lists[idx];
        c->lists[idx] = f;
        c->stats.bytes_cached += block;
        p = NULL;
    } else {
        c->stats.backend_frees++;
    }
    pthread_mutex_unlock(&c->lock);
    if (p)
        raw_free(dev, p, block);
}

/* fork(): take every allocator lock before, release in both processes
 * after, so the child never inherits a lock held by a vanished thread. */
static void atfork_prepare(void)
{
    for (int d = 0; d < FW_NDEVICES; d++)
        pthread_mutex_lock(&caches[d].lock);
    pthread_mutex_lock(&small_lock);
}

static void atfork_release(void)
{
    pthread_mutex_unlock(&small_lock);
    for (int d = FW_NDEVICES - 1; d >= 0; d--)
        pthread_mutex_unlock(&caches[d].lock);
}

__attribute__((constructor)) static void register_atfork(void)
{
    pthread_atfork(atfork_prepare, atfork_release, atfork_release);
}

void fw_mem_stats_get(fw_mem_stats *out, fw_device dev)
{
    memset(out, 0, sizeof(*out));
    if ((unsigned)dev >= FW_NDEVICES)
        return;
    pthread_mutex_lock(&caches[dev].lock);
    *out = caches[dev].stats;
    pthread_mutex_unlock(&caches[dev].lock);
}

void fw_mem_empty_cache(fw_device dev)
{
    if ((unsigned)dev >= FW_NDEVICES)
        return;
    pthread_mutex_lock(&caches[dev].lock);
    empty_locked(dev, &caches[dev]);
    pthread_mutex_unlock(&caches[dev].lock);
}

/* Small host objects: a separate lock-free-enough thread-local cache would
 * be faster, but one short critical section keeps frees on other threads
 * simple. Blocks come from malloc and are never returned (handles and
 * nodes are few and recycled). */

void *fw__small_alloc(size_t nbytes, size_t *block)
{
    size_t k = (nbytes + 63) / 64;
    void *p = NULL;

    if (k == 0)
        k = 1;
    if (k > SMALL_CLASSES) {
        *block = nbytes;
        return malloc(nbytes);
    }
    *block = k * 64;
    pthread_mutex_lock(&small_lock);
    if (small_lists[k - 1]) {
        p = small_lists[k - 1];
        small_lists[k - 1] = small_lists[k - 1]->next;
    }
    pthread_mutex_unlock(&small_lock);
    if (p == NULL && posix_memalign(&p, 64, k * 64) != 0)
        return NULL;
    return p;
}

void fw__small_free(void *p, size_t block)
{
    size_t k = block / 64;

    if (p == NULL)
        return;
    if (block % 64 != 0 || k == 0 || k > SMALL_CLASSES) {
        free(p);
        return;
    }
    pthread_mutex_lock(&small_lock);
    ((free_block *)p)->next = small_lists[k - 1];
    small_lists[k - 1] = p;
    pthread_mutex_unlock(&small_lock);
}
