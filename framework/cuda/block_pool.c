/* block_pool.c - the CUDA backend's caching allocator (see block_pool.h). */
#include "block_pool.h"

#include <stdlib.h>
#include <string.h>

typedef struct fw_bp_block {
    char *ptr;
    size_t size;
    size_t requested;                  /* live blocks: bytes asked for */
    int pool;                          /* 0 small, 1 large */
    bool allocated;
    struct fw_bp_block *prev, *next;   /* address neighbours in the segment */
    struct fw_bp_block *fprev, *fnext; /* free list of its bucket */
    struct fw_bp_block *hnext;         /* live hash chain */
} bp_block;

size_t fw_bp_round(size_t n)
{
    if (n < FW_BP_MIN_BLOCK)
        return FW_BP_MIN_BLOCK;
    if (n > SIZE_MAX - FW_BP_MIN_BLOCK)
        return 0;
    return (n + FW_BP_MIN_BLOCK - 1) & ~(FW_BP_MIN_BLOCK - 1);
}

/* Segment size the driver is asked for to serve a rounded request. */
static size_t segment_size(size_t rounded)
{
    if (rounded <= FW_BP_SMALL_SIZE)
        return FW_BP_SMALL_SEGMENT;
    if (rounded < FW_BP_MIN_LARGE_ALLOC)
        return FW_BP_LARGE_SEGMENT;
    if (rounded > SIZE_MAX - FW_BP_ROUND_LARGE)
        return 0;
    return (rounded + FW_BP_ROUND_LARGE - 1) & ~(FW_BP_ROUND_LARGE - 1);
}

/* Bucket of a size >= 512: four per power of two. */
static int bucket(size_t s)
{
    int lg = 63 - __builtin_clzll((unsigned long long)s);
    int sub = (int)((s >> (lg - 2)) & 3);
    int b = (lg - 9) * 4 + sub;
    return b < 0 ? 0 : b >= FW_BP_NBUCKETS ? FW_BP_NBUCKETS - 1 : b;
}

static void list_push(fw_block_pool *p, bp_block *b)
{
    bp_block **head = &p->free_lists[b->pool][bucket(b->size)];
    b->fprev = NULL;
    b->fnext = *head;
    if (*head)
        (*head)->fprev = b;
    *head = b;
}

static void list_remove(fw_block_pool *p, bp_block *b)
{
    if (b->fprev)
        b->fprev->fnext = b->fnext;
    else
        p->free_lists[b->pool][bucket(b->size)] = b->fnext;
    if (b->fnext)
        b->fnext->fprev = b->fprev;
    b->fprev = b->fnext = NULL;
}

static size_t hash_ptr(const void *ptr, size_t cap)
{
    uint64_t x = (uint64_t)(uintptr_t)ptr;
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    return (size_t)(x & (cap - 1));
}

static bool live_grow(fw_block_pool *p)
{
    size_t cap = p->live_cap ? p->live_cap * 2 : 1024;
    bp_block **t = calloc(cap, sizeof(*t));
    if (t == NULL)
        return false;
    for (size_t i = 0; i < p->live_cap; i++) {
        bp_block *b = p->live[i];
        while (b) {
            bp_block *nx = b->hnext;
            size_t h = hash_ptr(b->ptr, cap);
            b->hnext = t[h];
            t[h] = b;
            b = nx;
        }
    }
    free(p->live);
    p->live = t;
    p->live_cap = cap;
    return true;
}

static bool live_add(fw_block_pool *p, bp_block *b)
{
    if (p->live_count + 1 > p->live_cap / 2 && !live_grow(p))
        return false;
    size_t h = hash_ptr(b->ptr, p->live_cap);
    b->hnext = p->live[h];
    p->live[h] = b;
    p->live_count++;
    return true;
}

static bp_block *live_take(fw_block_pool *p, const void *ptr)
{
    if (p->live_cap == 0)
        return NULL;
    bp_block **pp = &p->live[hash_ptr(ptr, p->live_cap)];
    for (; *pp; pp = &(*pp)->hnext)
        if ((*pp)->ptr == ptr) {
            bp_block *b = *pp;
            *pp = b->hnext;
            b->hnext = NULL;
            p->live_count--;
            return b;
        }
    return NULL;
}

int fw_bp_init(fw_block_pool *p, const fw_bp_ops *ops)
{
    memset(p, 0, sizeof(*p));
    p->ops = *ops;
    return pthread_mutex_init(&p->lock, NULL) == 0 ? 0 : -1;
}

/* Best fit of at least `size` in pool `pool`, removed from its list. */
static bp_block *find_free(fw_block_pool *p, int pool, size_t size)
{
    for (int k = bucket(size); k < FW_BP_NBUCKETS; k++) {
        bp_block *best = NULL;
        for (bp_block *b = p->free_lists[pool][k]; b; b = b->fnext)
            if (b->size >= size && (best == NULL || b->size < best->size ||
                                    (b->size == best->size && b->ptr < best->ptr)))
                best = b;
        if (best) {
            list_remove(p, best);
            return best;
        }
    }
    return NULL;
}

static void free_segment(fw_block_pool *p, bp_block *b)
{
    p->ops.free(p->ops.ctx, b->ptr, b->size);
    p->st.reserved -= b->size;
    p->st.segments--;
    p->st.driver_frees++;
    free(b);
}

/* Free every cached segment (a free block with no neighbours). */
static void release_cached(fw_block_pool *p)
{
    for (int pool = 0; pool < 2; pool++)
        for (int k = 0; k < FW_BP_NBUCKETS; k++) {
            bp_block *b = p->free_lists[pool][k];
            while (b) {
                bp_block *nx = b->fnext;
                if (b->prev == NULL && b->next == NULL) {
                    list_remove(p, b);
                    free_segment(p, b);
                }
                b = nx;
            }
        }
}

static bp_block *new_segment(fw_block_pool *p, int pool, size_t seg)
{
    bp_block *b = calloc(1, sizeof(*b));
    void *mem;

    if (b == NULL)
        return NULL;
    mem = p->ops.alloc(p->ops.ctx, seg);
    if (mem == NULL) {
        p->st.oom_retries++;
        release_cached(p);
        mem = p->ops.alloc(p->ops.ctx, seg);
    }
    if (mem == NULL) {
        free(b);
        return NULL;
    }
    p->st.driver_allocs++;
    if (p->ops.scrub && p->ops.scrub(p->ops.ctx, mem, seg) != 0) {
        p->ops.free(p->ops.ctx, mem, seg);
        p->st.driver_frees++;
        free(b);
        return NULL;
    }
    b->ptr = mem;
    b->size = seg;
    b->pool = pool;
    p->st.reserved += seg;
    p->st.segments++;
    if (p->st.reserved > p->st.peak_reserved)
        p->st.peak_reserved = p->st.reserved;
    return b;
}

static bool should_split(const bp_block *b, size_t size)
{
    size_t rest = b->size - size;
    return b->pool == 0 ? rest >= FW_BP_MIN_BLOCK : rest > FW_BP_SMALL_SIZE;
}

/* Merge b with its free neighbour nb (nb leaves its free list). */
static void merge(fw_block_pool *p, bp_block *b, bp_block *nb)
{
    list_remove(p, nb);
    if (nb == b->next) {
        b->size += nb->size;
        b->next = nb->next;
        if (nb->next)
            nb->next->prev = b;
    } else {                            /* nb == b->prev */
        b->ptr = nb->ptr;
        b->size += nb->size;
        b->prev = nb->prev;
        if (nb->prev)
            nb->prev->next = b;
    }
    free(nb);
}

/* A block no longer in use joins its free neighbours and its free list. */
static void release_block(fw_block_pool *p, bp_block *b)
{
    if (b->next && !b->next->allocated)
        merge(p, b, b->next);
    if (b->prev && !b->prev->allocated)
        merge(p, b, b->prev);
    list_push(p, b);
}

void *fw_bp_alloc(fw_block_pool *p, size_t n)
{
    size_t size = fw_bp_round(n), seg;
    int pool;
    bp_block *b;

    if (size == 0 || (seg = segment_size(size)) == 0)
        return NULL;
    pool = size <= FW_BP_SMALL_SIZE ? 0 : 1;
    pthread_mutex_lock(&p->lock);
    b = find_free(p, pool, size);
    if (b == NULL && (b = new_segment(p, pool, seg)) == NULL) {
        pthread_mutex_unlock(&p->lock);
        return NULL;
    }
    if (should_split(b, size)) {
        bp_block *rest = calloc(1, sizeof(*rest));
        if (rest) {                     /* no memory for the record: hand out the whole block */
            rest->ptr = b->ptr + size;
            rest->size = b->size - size;
            rest->pool = pool;
            rest->prev = b;
            rest->next = b->next;
            if (b->next)
                b->next->prev = rest;
            b->next = rest;
            b->size = size;
            list_push(p, rest);
        }
    }
    if (!live_add(p, b)) {
        release_block(p, b);            /* cannot track it: put it back */
        pthread_mutex_unlock(&p->lock);
        return NULL;
    }
    b->allocated = true;
    b->requested = n;
    p->st.allocated += b->size;
    p->st.requested += n;
    p->st.live_blocks++;
    if (p->st.allocated > p->st.peak_allocated)
        p->st.peak_allocated = p->st.allocated;
    pthread_mutex_unlock(&p->lock);
    return b->ptr;
}

bool fw_bp_free(fw_block_pool *p, void *ptr)
{
    bp_block *b;

    if (ptr == NULL)
        return true;
    pthread_mutex_lock(&p->lock);
    b = live_take(p, ptr);
    if (b == NULL) {
        pthread_mutex_unlock(&p->lock);
        return false;
    }
    b->allocated = false;
    p->st.allocated -= b->size;
    p->st.requested -= b->requested;
    p->st.live_blocks--;
    b->requested = 0;
    release_block(p, b);
    pthread_mutex_unlock(&p->lock);
    return true;
}

size_t fw_bp_block_size(fw_block_pool *p, const void *ptr)
{
    size_t n = 0;

    pthread_mutex_lock(&p->lock);
    if (p->live_cap) {
        for (bp_block *b = p->live[hash_ptr(ptr, p->live_cap)]; b; b = b->hnext)
            if (b->ptr == ptr) {
                n = b->size;
                break;
            }
    }
    pthread_mutex_unlock(&p->lock);
    return n;
}

void fw_bp_empty_cache(fw_block_pool *p)
{
    pthread_mutex_lock(&p->lock);
    release_cached(p);
    pthread_mutex_unlock(&p->lock);
}

void fw_bp_stats_get(fw_block_pool *p, fw_bp_stats *out)
{
    pthread_mutex_lock(&p->lock);
    *out = p->st;
    pthread_mutex_unlock(&p->lock);
}

void fw_bp_reset_peak(fw_block_pool *p)
{
    pthread_mutex_lock(&p->lock);
    p->st.peak_allocated = p->st.allocated;
    p->st.peak_reserved = p->st.reserved;
    pthread_mutex_unlock(&p->lock);
}

void fw_bp_destroy(fw_block_pool *p)
{
    pthread_mutex_lock(&p->lock);
    release_cached(p);
    /* live blocks: their records go, the memory stays with the driver */
    for (size_t i = 0; i < p->live_cap; i++) {
        bp_block *b = p->live[i];
        while (b) {
            bp_block *nx = b->hnext;
            free(b);
            b = nx;
        }
    }
    free(p->live);
    p->live = NULL;
    p->live_cap = p->live_count = 0;
    for (int pool = 0; pool < 2; pool++)
        for (int k = 0; k < FW_BP_NBUCKETS; k++) {
            bp_block *b = p->free_lists[pool][k];
            while (b) {
                bp_block *nx = b->fnext;
                free(b);
                b = nx;
            }
            p->free_lists[pool][k] = NULL;
        }
    pthread_mutex_unlock(&p->lock);
    pthread_mutex_destroy(&p->lock);
}
