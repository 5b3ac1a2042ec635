/*
 * nn_common.c - shared helpers of the nn kernels: per-thread scratch buffers
 * and the bridge to the framework's thread pool.
 */
#include <pthread.h>
#include <stdlib.h>

#include "../core/fw_parallel.h"
#include "nn_kernels.h"

#define NN_SCRATCH_SLOTS 4

typedef struct nn_scratch {
    void *p[NN_SCRATCH_SLOTS];
    size_t cap[NN_SCRATCH_SLOTS];
} nn_scratch;

static pthread_key_t scratch_key;
static pthread_once_t scratch_once = PTHREAD_ONCE_INIT;

static void scratch_destroy(void *v)
{
    nn_scratch *s = v;
    for (int i = 0; i < NN_SCRATCH_SLOTS; i++)
        free(s->p[i]);
    free(s);
}

static void scratch_init(void)
{
    (void)pthread_key_create(&scratch_key, scratch_destroy);
}

/* Why per thread: im2col panels are rebuilt for every sample of every step;
 * keeping one buffer per pool thread avoids a malloc per sample and keeps the
 * panel hot in that core's cache. */
void *fw__nn_scratch(int slot, size_t bytes)
{
    nn_scratch *s;

    if (slot < 0 || slot >= NN_SCRATCH_SLOTS)
        return NULL;
    pthread_once(&scratch_once, scratch_init);
    s = pthread_getspecific(scratch_key);
    if (s == NULL) {
        if ((s = calloc(1, sizeof(*s))) == NULL)
            return NULL;
        if (pthread_setspecific(scratch_key, s) != 0) {
            free(s);
            return NULL;
        }
    }
    if (bytes == 0)
        bytes = 1;
    if (s->cap[slot] < bytes) {
        size_t cap = s->cap[slot] ? s->cap[slot] : 4096;
        void *p;
        while (cap < bytes)
            cap *= 2;
        free(s->p[slot]);
        s->p[slot] = NULL;
        s->cap[slot] = 0;
        if ((p = malloc(cap)) == NULL)
            return NULL;
        s->p[slot] = p;
        s->cap[slot] = cap;
    }
    return s->p[slot];
}

void fw__nn_parallel(int64_t n, int64_t grain,
                     void (*fn)(void *ctx, int64_t begin, int64_t end), void *ctx)
{
    if (n <= 0)
        return;
    if (n == 1) {
        /* one task (a batch of one): run it outside the pool so the BLAS
         * calls inside it may use all of OpenBLAS's threads */
        fn(ctx, 0, 1);
        return;
    }
    fw_parallel_for(n, grain, fn, ctx);
}

int fw__nn_num_threads(void)
{
    int n = fw_parallel_in_region() ? 1 : fw_parallel_num_threads();
    return n < 1 ? 1 : n;
}
