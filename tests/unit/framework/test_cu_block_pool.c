/* The CUDA backend's caching allocator (framework/cuda/block_pool.c), run on
 * the CPU over a malloc "driver": rounding, splitting and coalescing, reuse
 * of freed blocks, counters and peaks, out-of-memory retry after emptying
 * the cache, empty_cache, scrubbing of fresh segments, and thousands of
 * random operations against a model (live blocks never overlap, their
 * bytes survive other blocks' traffic, and the counters add up). */
#include "cuda/block_pool.c"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- a fake driver ------------------------------------------------------------------ */

typedef struct drv {
    size_t limit;       /* bytes the "device" has */
    size_t used;
    int allocs, frees, scrubs, fail_scrub;
    bool light;         /* dirty and scrub only each segment's ends (speed) */
} drv;

/* Set n bytes at p to c (only the first and last 4 KiB when light). */
static void fill(const drv *d, void *p, int c, size_t n)
{
    if (!d->light || n <= 8192) {
        memset(p, c, n);
        return;
    }
    memset(p, c, 4096);
    memset((char *)p + n - 4096, c, 4096);
}

static void *drv_alloc(void *ctx, size_t n)
{
    drv *d = ctx;
    void *p = NULL;
    if (d->used + n > d->limit)
        return NULL;
    if (posix_memalign(&p, 256, n) != 0)
        return NULL;
    fill(d, p, 0xAB, n);              /* a previous tenant's bytes */
    d->used += n;
    d->allocs++;
    return p;
}

static void drv_free(void *ctx, void *p, size_t n)
{
    drv *d = ctx;
    d->used -= n;
    d->frees++;
    free(p);
}

static int drv_scrub(void *ctx, void *p, size_t n)
{
    drv *d = ctx;
    if (d->fail_scrub)
        return -1;
    fill(d, p, 0, n);
    d->scrubs++;
    return 0;
}

static void pool_make(fw_block_pool *p, drv *d, size_t limit)
{
    memset(d, 0, sizeof(*d));
    d->limit = limit;
    fw_bp_ops ops = {d, drv_alloc, drv_free, drv_scrub};
    ck_assert_int_eq(fw_bp_init(p, &ops), 0);
}

static fw_bp_stats stats(fw_block_pool *p)
{
    fw_bp_stats s;
    fw_bp_stats_get(p, &s);
    return s;
}

#define MB ((size_t)1 << 20)

/* ---- cases -------------------------------------------------------------------------- */

START_TEST(rounding_and_size_classes)
{
    ck_assert_uint_eq(fw_bp_round(0), 512);
    ck_assert_uint_eq(fw_bp_round(1), 512);
    ck_assert_uint_eq(fw_bp_round(512), 512);
    ck_assert_uint_eq(fw_bp_round(513), 1024);
    ck_assert_uint_eq(fw_bp_round(SIZE_MAX), 0);
    ck_assert_uint_eq(segment_size(512), 2 * MB);
    ck_assert_uint_eq(segment_size(MB), 2 * MB);
    ck_assert_uint_eq(segment_size(MB + 512), 20 * MB);
    ck_assert_uint_eq(segment_size(10 * MB), 10 * MB);
    ck_assert_uint_eq(segment_size(10 * MB + 512), 12 * MB);
    for (size_t s = 512; s < ((size_t)1 << 40); s = s * 3 / 2 + 512)
        ck_assert_int_le(bucket(s), bucket(s + 512));
}
END_TEST

START_TEST(small_blocks_split_one_segment_and_coalesce)
{
    fw_block_pool p;
    drv d;
    pool_make(&p, &d, 1024 * MB);
    char *a = fw_bp_alloc(&p, 100);
    char *b = fw_bp_alloc(&p, 1000);
    char *c = fw_bp_alloc(&p, 4096);
    ck_assert_ptr_nonnull(a);
    ck_assert_int_eq(d.allocs, 1);                /* one 2 MiB segment serves all three */
    ck_assert_ptr_eq(b, a + 512);                 /* carved in address order */
    ck_assert_ptr_eq(c, b + 1024);
    fw_bp_stats s = stats(&p);
    ck_assert_uint_eq(s.allocated, 512 + 1024 + 4096);
    ck_assert_uint_eq(s.requested, 100 + 1000 + 4096);
    ck_assert_uint_eq(s.reserved, 2 * MB);
    ck_assert_uint_eq(s.live_blocks, 3);
    /* free the middle, then its neighbours: everything merges into the segment */
    ck_assert(fw_bp_free(&p, b));
    char *b2 = fw_bp_alloc(&p, 600);              /* best fit: the 1 KiB hole */
    ck_assert_ptr_eq(b2, b);
    ck_assert(fw_bp_free(&p, b2));
    ck_assert(fw_bp_free(&p, a));
    ck_assert(fw_bp_free(&p, c));
    s = stats(&p);
    ck_assert_uint_eq(s.allocated, 0);
    ck_assert_uint_eq(s.live_blocks, 0);
    /* one free block spans the whole segment again */
    char *big = fw_bp_alloc(&p, MB);
    ck_assert_ptr_eq(big, a);
    ck_assert_int_eq(d.allocs, 1);
    ck_assert(fw_bp_free(&p, big));
    ck_assert(!fw_bp_free(&p, big));              /* double free: refused */
    ck_assert(!fw_bp_free(&p, a + 1));            /* not a block */
    ck_assert(fw_bp_free(&p, NULL));
    fw_bp_destroy(&p);
    ck_assert_uint_eq(d.used, 0);
}
END_TEST

START_TEST(large_pool_is_apart_and_splits_only_big_remainders)
{
    fw_block_pool p;
    drv d;
    pool_make(&p, &d, 1024 * MB);
    char *s1 = fw_bp_alloc(&p, 1000);
    char *l1 = fw_bp_alloc(&p, 3 * MB);           /* from a 20 MiB segment */
    ck_assert_int_eq(d.allocs, 2);
    ck_assert_uint_eq(stats(&p).reserved, 22 * MB);
    char *l2 = fw_bp_alloc(&p, 5 * MB);           /* the same segment's rest */
    ck_assert_int_eq(d.allocs, 2);
    ck_assert_ptr_eq(l2, l1 + 3 * MB);
    char *l3 = fw_bp_alloc(&p, 11 * MB + 512);    /* 12 MiB left: 11 MiB + 512 does not split */
    ck_assert_int_eq(d.allocs, 2);
    ck_assert_ptr_eq(l3, l2 + 5 * MB);
    ck_assert_uint_eq(stats(&p).allocated, 1024 + 3 * MB + 5 * MB + 12 * MB);
    ck_assert_uint_eq(fw_bp_block_size(&p, l3), 12 * MB);
    ck_assert_uint_eq(fw_bp_block_size(&p, l3 + 512), 0);
    char *huge = fw_bp_alloc(&p, 33 * MB);        /* its own segment, rounded to 2 MiB */
    ck_assert_uint_eq(stats(&p).reserved, 22 * MB + 34 * MB);
    char *s2 = fw_bp_alloc(&p, MB);               /* small: never from the large pool */
    ck_assert(s2 >= s1 && s2 < s1 + 2 * MB);
    ck_assert(fw_bp_free(&p, l1));
    ck_assert(fw_bp_free(&p, l2));
    ck_assert(fw_bp_free(&p, l3));
    ck_assert(fw_bp_free(&p, huge));
    ck_assert(fw_bp_free(&p, s1));
    ck_assert(fw_bp_free(&p, s2));
    /* cached: nothing went back to the driver */
    ck_assert_int_eq(d.frees, 0);
    ck_assert_uint_eq(stats(&p).allocated, 0);
    ck_assert_uint_eq(stats(&p).reserved, 56 * MB);
    /* reuse: the same request comes back from the cache */
    char *again = fw_bp_alloc(&p, 3 * MB);        /* best fit: the 20 MiB segment */
    ck_assert_ptr_eq(again, l1);
    ck_assert_int_eq(d.allocs, 3);
    ck_assert(fw_bp_free(&p, again));
    fw_bp_empty_cache(&p);
    ck_assert_uint_eq(stats(&p).reserved, 0);
    ck_assert_uint_eq(stats(&p).segments, 0);
    ck_assert_int_eq(d.frees, 3);
    ck_assert_uint_eq(d.used, 0);
    fw_bp_destroy(&p);
}
END_TEST

START_TEST(peaks_and_reset)
{
    fw_block_pool p;
    drv d;
    pool_make(&p, &d, 1024 * MB);
    void *a = fw_bp_alloc(&p, 4 * MB);
    void *b = fw_bp_alloc(&p, 4 * MB);
    ck_assert(fw_bp_free(&p, a));
    fw_bp_stats s = stats(&p);
    ck_assert_uint_eq(s.allocated, 4 * MB);
    ck_assert_uint_eq(s.peak_allocated, 8 * MB);
    ck_assert_uint_eq(s.peak_reserved, 20 * MB);
    fw_bp_reset_peak(&p);
    s = stats(&p);
    ck_assert_uint_eq(s.peak_allocated, 4 * MB);
    ck_assert_uint_eq(s.peak_reserved, 20 * MB);
    ck_assert(fw_bp_free(&p, b));
    fw_bp_empty_cache(&p);
    fw_bp_reset_peak(&p);
    s = stats(&p);
    ck_assert_uint_eq(s.peak_allocated, 0);
    ck_assert_uint_eq(s.peak_reserved, 0);
    fw_bp_destroy(&p);
}
END_TEST

START_TEST(out_of_memory_empties_the_cache_and_retries_once)
{
    fw_block_pool p;
    drv d;
    pool_make(&p, &d, 40 * MB);
    void *a = fw_bp_alloc(&p, 30 * MB);           /* 30 MiB segment */
    ck_assert_ptr_nonnull(a);
    ck_assert(fw_bp_free(&p, a));                 /* cached, still reserved */
    void *b = fw_bp_alloc(&p, 36 * MB);           /* needs the cached 30 MiB back */
    ck_assert_ptr_nonnull(b);
    fw_bp_stats s = stats(&p);
    ck_assert_uint_eq(s.oom_retries, 1);
    ck_assert_uint_eq(s.reserved, 36 * MB);
    ck_assert_int_eq(d.frees, 1);
    /* really out of memory: NULL, nothing changes */
    void *c = fw_bp_alloc(&p, 8 * MB);
    ck_assert_ptr_null(c);
    s = stats(&p);
    ck_assert_uint_eq(s.allocated, 36 * MB);
    ck_assert_uint_eq(s.live_blocks, 1);
    ck_assert(fw_bp_free(&p, b));
    /* a segment in use is not released by the retry */
    void *e = fw_bp_alloc(&p, 12 * MB);           /* reuses the 36 MiB block, split */
    ck_assert_ptr_eq(e, b);
    ck_assert_ptr_null(fw_bp_alloc(&p, 30 * MB)); /* 24 MiB free in-segment, 4 on the device */
    ck_assert(fw_bp_free(&p, e));
    fw_bp_destroy(&p);
    ck_assert_uint_eq(d.used, 0);
}
END_TEST

START_TEST(fresh_segments_are_scrubbed)
{
    fw_block_pool p;
    drv d;
    pool_make(&p, &d, 1024 * MB);
    unsigned char *a = fw_bp_alloc(&p, 3000);
    unsigned char *b = fw_bp_alloc(&p, 5 * MB);
    ck_assert_int_eq(d.scrubs, 2);
    for (size_t i = 0; i < 3000; i++)
        ck_assert_uint_eq(a[i], 0);
    for (size_t i = 0; i < 5 * MB; i += 4093)
        ck_assert_uint_eq(b[i], 0);
    ck_assert(fw_bp_free(&p, a));
    ck_assert(fw_bp_free(&p, b));
    fw_bp_empty_cache(&p);
    d.fail_scrub = 1;                             /* a segment that cannot be scrubbed is not used */
    ck_assert_ptr_null(fw_bp_alloc(&p, 100));
    ck_assert_uint_eq(d.used, 0);
    ck_assert_uint_eq(stats(&p).reserved, 0);
    fw_bp_destroy(&p);
}
END_TEST

typedef struct live_rec {
    unsigned char *p;
    size_t n;
    unsigned char tag;
} live_rec;

static int cmp_rec(const void *x, const void *y)
{
    const live_rec *a = x, *b = y;
    return a->p < b->p ? -1 : a->p > b->p;
}

/* Assertions for the hot loop below: Check reports every passing
 * ck_assert through a pipe, which millions of them make slow. */
#define Q(c) do { if (!(c)) ck_abort_msg("op %d: %s", op, #c); } while (0)
#define QEQ(a, b) Q((a) == (b))
#define QGE(a, b) Q((a) >= (b))
#define QLE(a, b) Q((a) <= (b))

START_TEST(random_operations_against_a_model)
{
    enum { NOPS = 6000, MAXLIVE = 300 };
    fw_block_pool p;
    drv d;
    live_rec live[MAXLIVE], sorted[MAXLIVE];
    int nlive = 0;
    uint64_t rnd = 0x9E3779B97F4A7C15ULL;

    pool_make(&p, &d, 400 * MB);
    d.light = true;
    for (int op = 0; op < NOPS; op++) {
        rnd ^= rnd << 13;
        rnd ^= rnd >> 7;
        rnd ^= rnd << 17;
        bool do_alloc = nlive == 0 || (nlive < MAXLIVE && (rnd & 7) < 5);
        if (op % 1000 == 999)
            fw_bp_empty_cache(&p);
        if (do_alloc) {
            size_t n;
            unsigned kind = (unsigned)(rnd >> 8) % 10;
            if (kind < 6)
                n = 1 + (size_t)((rnd >> 16) % 8192);             /* tiny */
            else if (kind < 9)
                n = 1 + (size_t)((rnd >> 16) % (2 * MB));         /* around the small limit */
            else
                n = 1 + (size_t)((rnd >> 16) % (24 * MB));        /* large */
            unsigned char *q = fw_bp_alloc(&p, n);
            if (q == NULL)
                continue;                                         /* out of the fake 400 MiB */
            unsigned char tag = (unsigned char)(1 + op % 251);
            size_t touch = n < 64 ? n : 64;
            memset(q, tag, touch);                                /* head and tail */
            memset(q + n - touch, tag, touch);
            live[nlive++] = (live_rec){q, n, tag};
        } else {
            int i = (int)((rnd >> 20) % (uint64_t)nlive);
            live_rec r = live[i];
            size_t touch = r.n < 64 ? r.n : 64;
            for (size_t k = 0; k < touch; k++) {
                QEQ(r.p[k], r.tag);
                QEQ(r.p[r.n - touch + k], r.tag);
            }
            Q(fw_bp_free(&p, r.p));
            live[i] = live[--nlive];
        }
        /* the model: live blocks never overlap; counters add up */
        memcpy(sorted, live, sizeof(live_rec) * (size_t)nlive);
        qsort(sorted, (size_t)nlive, sizeof(live_rec), cmp_rec);
        uint64_t alloc = 0, req = 0;
        for (int i = 0; i < nlive; i++) {
            size_t bs = fw_bp_block_size(&p, sorted[i].p);
            QGE(bs, fw_bp_round(sorted[i].n));
            QLE(bs, fw_bp_round(sorted[i].n) + MB);   /* unsplit remainder */
            if (i > 0)
                Q(sorted[i - 1].p + fw_bp_block_size(&p, sorted[i - 1].p) <= sorted[i].p);
            alloc += bs;
            req += sorted[i].n;
        }
        fw_bp_stats s = stats(&p);
        QEQ(s.allocated, alloc);
        QEQ(s.requested, req);
        QEQ(s.live_blocks, (uint64_t)nlive);
        QLE(s.allocated, s.reserved);
        QLE(s.allocated, s.peak_allocated);
        QLE(s.reserved, s.peak_reserved);
        QEQ(s.reserved, d.used);
    }
    while (nlive > 0)
        ck_assert(fw_bp_free(&p, live[--nlive].p));
    fw_bp_empty_cache(&p);
    ck_assert_uint_eq(stats(&p).reserved, 0);
    ck_assert_uint_eq(d.used, 0);
    ck_assert_uint_eq(d.allocs, d.frees);
    fw_bp_destroy(&p);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("fw_cu_block_pool");
    TCase *tc = tcase_create("pool");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, rounding_and_size_classes);
    tcase_add_test(tc, small_blocks_split_one_segment_and_coalesce);
    tcase_add_test(tc, large_pool_is_apart_and_splits_only_big_remainders);
    tcase_add_test(tc, peaks_and_reset);
    tcase_add_test(tc, out_of_memory_empties_the_cache_and_retries_once);
    tcase_add_test(tc, fresh_segments_are_scrubbed);
    tcase_add_test(tc, random_operations_against_a_model);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
