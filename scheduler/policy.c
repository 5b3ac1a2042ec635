/*
 * policy.c - the scheduling policy: queue order, caps, placement, backfill,
 * preemption choice, queue positions and ETAs. Pure functions over arrays;
 * no store, no threads, only scratch memory.
 *
 * Cost: one sort of the queue (n log n) and one pass over it; the running
 * work of a class is sorted only when that class has a blocked item.
 */
#include "sched.h"
#include "sched_int.h"

#include "ed_error.h"

#include <stdlib.h>
#include <string.h>

int sched_item_cmp(const sched_item *a, const sched_item *b)
{
    if (a->weight != b->weight)
        return a->weight > b->weight ? -1 : 1;
    if (a->usage_ms != b->usage_ms)
        return a->usage_ms < b->usage_ms ? -1 : 1;
    if (a->enqueued_at != b->enqueued_at)
        return a->enqueued_at < b->enqueued_at ? -1 : 1;
    if (a->id != b->id)
        return a->id < b->id ? -1 : 1;
    return 0;
}

/* Queue order as indices into `queue`; caller frees.
 *
 * An LSD radix sort: stable passes over the bytes of id, then age, then
 * usage, then weight (the least significant key first), each field taken
 * relative to its minimum and passes whose byte is the same for every item
 * skipped. The result is exactly sched_item_cmp's order, in O(n) per pass
 * with no comparator calls: this is most of what a decision costs. */
static int queue_order(uint32_t **out, const sched_item *queue, size_t nq)
{
    uint32_t *idx = NULL, *tmp = NULL;
    uint64_t *vals = NULL;
    size_t cnt[256];
    int err = 0;

    *out = NULL;
    idx = malloc((nq ? nq : 1) * sizeof(*idx));
    tmp = malloc((nq ? nq : 1) * sizeof(*tmp));
    vals = malloc((nq ? nq : 1) * sizeof(*vals));
    if (idx == NULL || tmp == NULL || vals == NULL) {
        err = ed_error_set(ED_ENOMEM, "queue order of %zu items", nq);
        goto out;
    }
    for (size_t i = 0; i < nq; i++)
        idx[i] = (uint32_t)i;
    for (int field = 0; field < 4 && nq > 1; field++) {
        uint64_t lo = UINT64_MAX, hi = 0;
        for (size_t i = 0; i < nq; i++) {
            const sched_item *it = &queue[i];
            /* each field as an unsigned value whose ascending order is the queue's */
            uint64_t v = field == 0 ? (uint64_t)it->id ^ (UINT64_C(1) << 63)
                       : field == 1 ? (uint64_t)it->enqueued_at ^ (UINT64_C(1) << 63)
                       : field == 2 ? (uint64_t)it->usage_ms ^ (UINT64_C(1) << 63)
                                    : (uint64_t)(-(int64_t)it->weight) ^ (UINT64_C(1) << 63);
            vals[i] = v;
            if (v < lo)
                lo = v;
            if (v > hi)
                hi = v;
        }
        for (size_t i = 0; i < nq; i++)
            vals[i] -= lo;
        hi -= lo;
        for (int shift = 0; shift < 64 && (hi >> shift) != 0; shift += 8) {
            size_t sum = 0;
            memset(cnt, 0, sizeof(cnt));
            for (size_t i = 0; i < nq; i++)
                cnt[(vals[idx[i]] >> shift) & 0xff]++;
            if (cnt[(vals[idx[0]] >> shift) & 0xff] == nq)
                continue;                   /* every item has this byte */
            for (int b = 0; b < 256; b++) {
                size_t c = cnt[b];
                cnt[b] = sum;
                sum += c;
            }
            for (size_t i = 0; i < nq; i++)
                tmp[cnt[(vals[idx[i]] >> shift) & 0xff]++] = idx[i];
            uint32_t *t = idx;
            idx = tmp;
            tmp = t;
        }
    }
    *out = idx;
    idx = NULL;
out:
    free(idx);
    free(tmp);
    free(vals);
    return err;
}

/* ---- per-user counters: open addressing over user ids ------------------- */

typedef struct user_map {
    int64_t *keys;    /* INT64_MIN: empty */
    int     *vals;
    size_t   mask;
} user_map;

static int user_map_init(user_map *m, size_t n)
{
    size_t cap = 16;

    while (cap < 2 * n + 16)
        cap <<= 1;
    m->mask = cap - 1;
    m->keys = malloc(cap * sizeof(*m->keys));
    m->vals = calloc(cap, sizeof(*m->vals));
    if (m->keys == NULL || m->vals == NULL) {
        free(m->keys);
        free(m->vals);
        return ed_error_set(ED_ENOMEM, "user map");
    }
    for (size_t i = 0; i < cap; i++)
        m->keys[i] = INT64_MIN;
    return 0;
}

static int *user_slot(user_map *m, int64_t user)
{
    size_t h = (size_t)((uint64_t)user * UINT64_C(0x9E3779B97F4A7C15) >> 17) & m->mask;

    while (m->keys[h] != INT64_MIN && m->keys[h] != user)
        h = (h + 1) & m->mask;
    m->keys[h] = user;
    return &m->vals[h];
}

static void user_map_free(user_map *m)
{
    free(m->keys);
    free(m->vals);
}

/* ---- plan ------------------------------------------------------------------ */

typedef struct class_state {
    int     free;          /* units free now */
    bool    reserved;      /* a blocked item holds the reservation */
    int64_t shadow;        /* when the reservation can start (ms) */
    int     extra;         /* units spare at the shadow time */
} class_state;

static int run_end_cmp(const void *pa, const void *pb)
{
    const sched_run *a = *(const sched_run *const *)pa, *b = *(const sched_run *const *)pb;

    return a->end_by < b->end_by ? -1 : a->end_by > b->end_by;
}

/* Victims first: the lowest weight, then the most recently started. */
static int victim_cmp(const void *pa, const void *pb)
{
    const sched_run *a = *(const sched_run *const *)pa, *b = *(const sched_run *const *)pb;

    if (a->weight != b->weight)
        return a->weight < b->weight ? -1 : 1;
    return a->started_at > b->started_at ? -1 : a->started_at < b->started_at;
}

/* Reserve for the first blocked item of class c: when do `units` become free? */
static void reserve(class_state *cs, int c, int units, const sched_run *running, size_t nr,
                    const sched_run **scratch, int64_t now)
{
    size_t n = 0;
    int avail = cs->free;

    cs->reserved = true;
    cs->shadow = INT64_MAX;
    cs->extra = 0;
    for (size_t i = 0; i < nr; i++)
        if (running[i].cls == c)
            scratch[n++] = &running[i];
    qsort(scratch, n, sizeof(*scratch), run_end_cmp);
    for (size_t i = 0; i < n; i++) {
        avail += scratch[i]->units;
        if (avail >= units) {
            cs->shadow = scratch[i]->end_by > now ? scratch[i]->end_by : now;
            cs->extra = avail - units;
            return;
        }
    }
}

/* Choose victims for an item of `weight` wanting `units` in class c. Adds
 * them to out->preempt when together with the free units they suffice;
 * returns the units they free (0: no preemption). */
static int preempt_for(sched_decision *out, class_state *cs, int c, int weight, int units,
                       const sched_run *running, size_t nr, const sched_run **scratch)
{
    size_t n = 0;
    int freeing = 0, taken = 0;

    for (size_t i = 0; i < nr; i++) {
        const sched_run *r = &running[i];
        if (r->cls != c)
            continue;
        if (r->stopping && r->weight < weight)
            freeing += r->units;       /* already on its way out for a waiter */
        else if (!r->stopping && r->preemptible && r->weight < weight)
            scratch[n++] = r;
    }
    if (cs->free + freeing >= units)
        return 0;                      /* wait for those to stop */
    qsort(scratch, n, sizeof(*scratch), victim_cmp);
    for (size_t i = 0; i < n && cs->free + freeing + taken < units; i++)
        taken += scratch[i]->units;
    if (cs->free + freeing + taken < units)
        return 0;                      /* even all of them would not do */
    taken = 0;
    for (size_t i = 0; i < n && cs->free + freeing + taken < units; i++) {
        out->preempt[out->npreempt++] = scratch[i]->id;
        taken += scratch[i]->units;
    }
    return taken;
}

int sched_plan(sched_decision *out, const sched_item *queue, size_t nq, const sched_run *running,
               size_t nr, const sched_pool *pools, int nclasses, int64_t now_ms)
{
    class_state cs[SCHED_MAX_CLASSES];
    const sched_run **scratch = NULL;
    uint32_t *order = NULL;
    user_map users = {0};
    int err;

    out->nstart = 0;
    out->npreempt = 0;
    if (nclasses <= 0 || nclasses > SCHED_MAX_CLASSES)
        return ed_error_set(ED_EINVAL, "%d resource classes (1..%d)", nclasses, SCHED_MAX_CLASSES);
    for (size_t i = 0; i < nq; i++)
        if (queue[i].cls < 0 || queue[i].cls >= nclasses || queue[i].units < 0)
            return ed_error_set(ED_EINVAL, "queued item %lld: class %d, %d units", (long long)queue[i].id,
                                queue[i].cls, queue[i].units);
    for (size_t i = 0; i < nr; i++)
        if (running[i].cls < 0 || running[i].cls >= nclasses)
            return ed_error_set(ED_EINVAL, "running item %lld: class %d", (long long)running[i].id,
                                running[i].cls);
    if ((err = queue_order(&order, queue, nq)) < 0)
        return err;
    if ((err = user_map_init(&users, nr + nq)) < 0)
        goto out;
    if ((scratch = malloc((nr ? nr : 1) * sizeof(*scratch))) == NULL) {
        err = ed_error_set(ED_ENOMEM, "plan scratch");
        goto out;
    }
    memset(cs, 0, sizeof(cs));
    for (int c = 0; c < nclasses; c++)
        cs[c].free = pools[c].capacity;
    for (size_t i = 0; i < nr; i++) {
        cs[running[i].cls].free -= running[i].units;
        (*user_slot(&users, running[i].user_id))++;
    }

    for (size_t k = 0; k < nq; k++) {
        const sched_item *it = &queue[order[k]];
        class_state *c = &cs[it->cls];
        int *count;

        if (it->units > pools[it->cls].capacity)
            continue;                                   /* can never run here */
        count = user_slot(&users, it->user_id);
        if (it->user_cap > 0 && *count >= it->user_cap)
            continue;                                   /* at the tier's cap */
        if (!c->reserved) {
            if (c->free >= it->units) {
                c->free -= it->units;
                (*count)++;
                out->start[out->nstart++] = it->id;
                continue;
            }
            reserve(c, it->cls, it->units, running, nr, scratch, now_ms);
            if (pools[it->cls].preemption) {
                int freed = preempt_for(out, c, it->cls, it->weight, it->units, running, nr, scratch);
                if (freed > 0) {
                    c->shadow = now_ms;                 /* starts once the victims stop */
                    c->extra = 0;
                }
            }
            continue;
        }
        /* backfill behind the reservation */
        if (c->free >= it->units && (now_ms + it->est_ms <= c->shadow || it->units <= c->extra)) {
            if (now_ms + it->est_ms > c->shadow)
                c->extra -= it->units;
            c->free -= it->units;
            (*count)++;
            out->start[out->nstart++] = it->id;
        }
    }
    err = 0;
out:
    free(order);
    free(scratch);
    user_map_free(&users);
    return err;
}

/* ---- ETA: a min-heap of (end time, units) per class ---------------------- */

typedef struct heap_ent {
    int64_t end;
    int     units;
} heap_ent;

static void heap_push(heap_ent *h, size_t *n, heap_ent e)
{
    size_t i = (*n)++;

    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (h[p].end <= e.end)
            break;
        h[i] = h[p];
        i = p;
    }
    h[i] = e;
}

static heap_ent heap_pop(heap_ent *h, size_t *n)
{
    heap_ent top = h[0], last = h[--*n];
    size_t i = 0;

    for (;;) {
        size_t l = 2 * i + 1, m = i;
        if (l >= *n)
            break;
        m = l;
        if (l + 1 < *n && h[l + 1].end < h[l].end)
            m = l + 1;
        if (h[m].end >= last.end)
            break;
        h[i] = h[m];
        i = m;
    }
    if (*n > 0)
        h[i] = last;
    return top;
}

int sched_eta(int *out_pos, int64_t *out_eta_ms, const sched_item *queue, size_t nq,
              const sched_run *running, size_t nr, const sched_pool *pools, int nclasses,
              int64_t now_ms)
{
    uint32_t *order = NULL;
    heap_ent *heap = NULL;
    int err;

    if (nclasses <= 0 || nclasses > SCHED_MAX_CLASSES)
        return ed_error_set(ED_EINVAL, "%d resource classes (1..%d)", nclasses, SCHED_MAX_CLASSES);
    for (size_t i = 0; i < nq; i++)
        if (queue[i].cls < 0 || queue[i].cls >= nclasses)
            return ed_error_set(ED_EINVAL, "queued item %lld: class %d", (long long)queue[i].id, queue[i].cls);
    for (size_t i = 0; i < nr; i++)
        if (running[i].cls < 0 || running[i].cls >= nclasses)
            return ed_error_set(ED_EINVAL, "running item %lld: class %d", (long long)running[i].id,
                                running[i].cls);
    if ((err = queue_order(&order, queue, nq)) < 0)
        return err;
    if ((heap = malloc((nr + nq + 1) * sizeof(*heap))) == NULL) {
        free(order);
        return ed_error_set(ED_ENOMEM, "eta heap");
    }
    for (int c = 0; c < nclasses; c++) {
        size_t hn = 0;
        int free_units = pools[c].capacity, pos = 0;
        int64_t t = now_ms;

        for (size_t i = 0; i < nr; i++) {
            if (running[i].cls != c)
                continue;
            free_units -= running[i].units;
            heap_push(heap, &hn, (heap_ent){running[i].end_by > now_ms ? running[i].end_by : now_ms,
                                            running[i].units});
        }
        for (size_t k = 0; k < nq; k++) {
            const sched_item *it = &queue[order[k]];
            if (it->cls != c)
                continue;
            out_pos[order[k]] = ++pos;
            if (it->units > pools[c].capacity) {
                out_eta_ms[order[k]] = -1;
                continue;
            }
            while (free_units < it->units && hn > 0) {
                heap_ent e = heap_pop(heap, &hn);
                if (e.end > t)
                    t = e.end;
                free_units += e.units;
            }
            out_eta_ms[order[k]] = t - now_ms;
            free_units -= it->units;
            heap_push(heap, &hn, (heap_ent){t + (it->est_ms > 0 ? it->est_ms : 0), it->units});
        }
    }
    free(order);
    free(heap);
    return 0;
}
