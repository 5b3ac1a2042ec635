/*
 * ratelimit.c - an in-memory, thread-safe, keyed rate limiter.
 *
 * Each key has a one-minute window that opens at its first hit and holds at
 * most `limit` hits; the window after it opens at the next hit. Used for login
 * failures per account and per IP, and for requests per API key.
 *
 * The table is split into shards, each behind its own mutex, so requests on
 * different keys rarely wait for each other. Entries whose window has ended
 * are swept from a shard when it grows past a threshold, so memory follows
 * the number of keys active in the last minute.
 *
 * The same table holds backoff entries (gw__backoff_*, login failures per
 * account and per account and address): from the `free`-th failure on, a key
 * is locked for a minute, and each further failure once the lock ends doubles
 * the lock, up to GW_BACKOFF_MAX_MS; a key with no failure for
 * GW_BACKOFF_FORGET_MS starts again from zero.
 */
#include "auth_int.h"

#include "ed_error.h"
#include "ed_time.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define SHARDS      16
#define BUCKETS     256      /* per shard */
#define SWEEP_FLOOR 1024     /* entries per shard before the first sweep */

typedef struct rl_entry {
    struct rl_entry *next;
    uint64_t         hash;
    int64_t          window_start;  /* monotonic ms; backoff entries: the last failure */
    int64_t          expires;       /* monotonic ms after which a sweep may drop it */
    int64_t          locked_until;  /* backoff entries: refused before this (monotonic ms) */
    int              count;         /* hits counted in the window; backoff: failures */
    char             key[];
} rl_entry;

typedef struct rl_shard {
    pthread_mutex_t lock;
    rl_entry       *buckets[BUCKETS];
    size_t          entries;
    size_t          sweep_at;       /* sweep when entries reach this */
} rl_shard;

struct gw_ratelimit {
    rl_shard shards[SHARDS];
};

static uint64_t fnv1a(const char *s)
{
    uint64_t h = 1469598103934665603ULL;

    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 1099511628211ULL;
    }
    return h;
}

int gw__ratelimit_new(struct gw_ratelimit **out)
{
    struct gw_ratelimit *rl;

    *out = NULL;
    if ((rl = calloc(1, sizeof(*rl))) == NULL)
        return ed_error_set(ED_ENOMEM, "rate limiter");
    for (int i = 0; i < SHARDS; i++) {
        pthread_mutex_init(&rl->shards[i].lock, NULL);
        rl->shards[i].sweep_at = SWEEP_FLOOR;
    }
    *out = rl;
    return 0;
}

void gw__ratelimit_free(struct gw_ratelimit *rl)
{
    if (rl == NULL)
        return;
    for (int i = 0; i < SHARDS; i++) {
        rl_shard *sh = &rl->shards[i];
        for (int b = 0; b < BUCKETS; b++) {
            rl_entry *e = sh->buckets[b];
            while (e) {
                rl_entry *next = e->next;
                free(e);
                e = next;
            }
        }
        pthread_mutex_destroy(&sh->lock);
    }
    free(rl);
}

int64_t gw__ratelimit_now_ms(void) { return ed_mono_ns() / 1000000; }

/* Drop every entry whose window ended before `now`. Called with the lock held. */
static void sweep(rl_shard *sh, int64_t now)
{
    for (int b = 0; b < BUCKETS; b++) {
        rl_entry **pp = &sh->buckets[b];
        while (*pp) {
            rl_entry *e = *pp;
            if (now >= e->expires) {
                *pp = e->next;
                free(e);
                sh->entries--;
            } else {
                pp = &e->next;
            }
        }
    }
    sh->sweep_at = sh->entries * 2 > SWEEP_FLOOR ? sh->entries * 2 : SWEEP_FLOOR;
}

/* The entry for `key` (its hash `h`) in `sh`, or NULL. Called with the lock held. */
static rl_entry *entry_find(rl_shard *sh, const char *key, uint64_t h)
{
    rl_entry *e;

    for (e = sh->buckets[(h / SHARDS) % BUCKETS]; e; e = e->next)
        if (e->hash == h && strcmp(e->key, key) == 0)
            break;
    return e;
}

/* A new entry for `key` (its hash `h`) at the head of its bucket in `sh`, no
 * hit counted, its window (or last failure) at `now` and kept by sweeps for
 * `keep_ms`; NULL when out of memory. A shard grown past its threshold is
 * swept first. Called with the lock held. */
static rl_entry *entry_add(rl_shard *sh, const char *key, uint64_t h, int64_t now, int64_t keep_ms)
{
    rl_entry **bucket = &sh->buckets[(h / SHARDS) % BUCKETS];
    size_t n = strlen(key);
    rl_entry *e;

    if (sh->entries >= sh->sweep_at)
        sweep(sh, now);
    if ((e = malloc(sizeof(*e) + n + 1)) == NULL)
        return NULL;
    memcpy(e->key, key, n + 1);
    e->hash = h;
    e->window_start = now;
    e->expires = now + keep_ms;
    e->locked_until = 0;
    e->count = 0;
    e->next = *bucket;
    *bucket = e;
    sh->entries++;
    return e;
}

static int retry_after(const rl_entry *e, int64_t now)
{
    int64_t left = e->window_start + GW_RATELIMIT_WINDOW_MS - now;
    int64_t s = (left + 999) / 1000;

    return s < 1 ? 1 : (int)s;
}

static int hit_or_check(struct gw_ratelimit *rl, const char *key, int limit, int64_t now,
                        int *retry_after_s, bool count)
{
    uint64_t h = fnv1a(key);
    rl_shard *sh = &rl->shards[h % SHARDS];
    rl_entry *e;
    int err = 0;

    *retry_after_s = 0;
    if (limit <= 0)
        limit = 1;
    pthread_mutex_lock(&sh->lock);
    e = entry_find(sh, key, h);
    if (e && now - e->window_start >= GW_RATELIMIT_WINDOW_MS) {
        e->window_start = now;   /* the old window ended: open a new one */
        e->expires = now + GW_RATELIMIT_WINDOW_MS;
        e->count = 0;
    }
    if (e && e->count >= limit) {
        *retry_after_s = retry_after(e, now);
        err = ed_error_set(ED_ELIMIT, "rate limited: try again in %d s", *retry_after_s);
    } else if (count) {
        if (e == NULL && (e = entry_add(sh, key, h, now, GW_RATELIMIT_WINDOW_MS)) == NULL) {
            pthread_mutex_unlock(&sh->lock);
            return ed_error_set(ED_ENOMEM, "rate limiter entry");
        }
        e->count++;
    }
    pthread_mutex_unlock(&sh->lock);
    return err;
}

int gw__ratelimit_hit(struct gw_ratelimit *rl, const char *key, int limit, int64_t now_ms,
                      int *retry_after_s)
{
    return hit_or_check(rl, key, limit, now_ms, retry_after_s, true);
}

int gw__ratelimit_check(struct gw_ratelimit *rl, const char *key, int limit, int64_t now_ms,
                        int *retry_after_s)
{
    return hit_or_check(rl, key, limit, now_ms, retry_after_s, false);
}

/* ---- backoff ---------------------------------------------------------------- */

/* The entry for `key` in its shard, created when `create` (NULL when it is
 * absent, or out of memory). The shard's lock is held on return either way;
 * *shp says which to unlock. */
static rl_entry *entry_locked(rl_shard **shp, struct gw_ratelimit *rl, const char *key, int64_t now,
                              bool create)
{
    uint64_t h = fnv1a(key);
    rl_shard *sh = &rl->shards[h % SHARDS];
    rl_entry *e;

    *shp = sh;
    pthread_mutex_lock(&sh->lock);
    if ((e = entry_find(sh, key, h)) != NULL || !create)
        return e;
    return entry_add(sh, key, h, now, GW_BACKOFF_FORGET_MS);
}

int gw__backoff_check(struct gw_ratelimit *rl, const char *key, int64_t now_ms, int *retry_after_s)
{
    rl_shard *sh;
    rl_entry *e = entry_locked(&sh, rl, key, now_ms, false);
    int err = 0;

    *retry_after_s = 0;
    if (e && e->locked_until > now_ms) {
        int64_t s = (e->locked_until - now_ms + 999) / 1000;
        *retry_after_s = s < 1 ? 1 : (int)s;
        err = ed_error_set(ED_ELIMIT, "locked for %d s after repeated failures", *retry_after_s);
    }
    pthread_mutex_unlock(&sh->lock);
    return err;
}

int gw__backoff_fail(struct gw_ratelimit *rl, const char *key, int free_failures, int64_t now_ms)
{
    rl_shard *sh;
    rl_entry *e = entry_locked(&sh, rl, key, now_ms, true);
    int64_t lock;

    if (e == NULL) {
        pthread_mutex_unlock(&sh->lock);
        return ed_error_set(ED_ENOMEM, "rate limiter entry");
    }
    if (free_failures < 1)
        free_failures = 1;
    if (now_ms - e->window_start >= GW_BACKOFF_FORGET_MS && e->locked_until <= now_ms)
        e->count = 0;                   /* quiet long enough: start again */
    e->count++;
    e->window_start = now_ms;
    if (e->count >= free_failures) {
        int shift = e->count - free_failures;
        lock = shift >= 20 ? GW_BACKOFF_MAX_MS : (int64_t)GW_RATELIMIT_WINDOW_MS << shift;
        if (lock > GW_BACKOFF_MAX_MS)
            lock = GW_BACKOFF_MAX_MS;
        e->locked_until = now_ms + lock;
    }
    e->expires = now_ms + GW_BACKOFF_FORGET_MS;
    if (e->locked_until > e->expires)
        e->expires = e->locked_until;
    pthread_mutex_unlock(&sh->lock);
    return 0;
}

void gw__backoff_reset(struct gw_ratelimit *rl, const char *key)
{
    rl_shard *sh;
    rl_entry *e = entry_locked(&sh, rl, key, 0, false);

    if (e) {
        e->count = 0;
        e->locked_until = 0;
    }
    pthread_mutex_unlock(&sh->lock);
}
