/*
 * datasets_gc.c - the dataset store's housekeeping thread: ds_gc (expire
 * idle uploads, free unreferenced blobs) once at start and then every
 * GW_DS_GC_PERIOD_MS, off the request path. Stopped (and joined) before the
 * store is freed; a stop wakes it at once.
 */
#include "datasets_int.h"

#include "ed_error.h"
#include "ed_log.h"
#include "ed_time.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#define GW_DS_GC_PERIOD_MS (10 * 60 * 1000)

struct gw_ds_gc {
    ds *d;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cond;      /* CLOCK_MONOTONIC */
    bool stop;
};

static void gc_once(ds *d)
{
    ds_gc_stats st = {0};

    if (ds_gc(&st, d, ed_now_ms()) < 0) {
        ed_log_error("datasets.gc", "gc failed: %s", ed_error_last());
        return;
    }
    if (st.blobs_freed || st.uploads_expired)
        ed_log_info("datasets.gc", "freed %lld blobs (%lld bytes), expired %lld uploads",
                    (long long)st.blobs_freed, (long long)st.bytes_freed,
                    (long long)st.uploads_expired);
}

static void *gc_main(void *arg)
{
    struct gw_ds_gc *g = arg;

    pthread_mutex_lock(&g->mu);
    while (!g->stop) {
        struct timespec ts;
        pthread_mutex_unlock(&g->mu);
        gc_once(g->d);
        pthread_mutex_lock(&g->mu);
        clock_gettime(CLOCK_MONOTONIC, &ts);
        ts.tv_sec += GW_DS_GC_PERIOD_MS / 1000;
        while (!g->stop && pthread_cond_timedwait(&g->cond, &g->mu, &ts) != ETIMEDOUT)
            ;
    }
    pthread_mutex_unlock(&g->mu);
    return NULL;
}

int gw__ds_gc_start(struct gw_ds_gc **out, ds *d)
{
    struct gw_ds_gc *g;
    pthread_condattr_t ca;

    *out = NULL;
    if ((g = calloc(1, sizeof(*g))) == NULL)
        return ed_error_set(ED_ENOMEM, "dataset gc");
    g->d = d;
    pthread_mutex_init(&g->mu, NULL);
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&g->cond, &ca);
    pthread_condattr_destroy(&ca);
    if (pthread_create(&g->thread, NULL, gc_main, g) != 0) {
        pthread_cond_destroy(&g->cond);
        pthread_mutex_destroy(&g->mu);
        free(g);
        return ed_error_set(ED_ENOMEM, "cannot start the dataset gc thread");
    }
    *out = g;
    return 0;
}

void gw__ds_gc_stop(struct gw_ds_gc *g)
{
    if (g == NULL)
        return;
    pthread_mutex_lock(&g->mu);
    g->stop = true;
    pthread_cond_signal(&g->cond);
    pthread_mutex_unlock(&g->mu);
    pthread_join(g->thread, NULL);
    pthread_cond_destroy(&g->cond);
    pthread_mutex_destroy(&g->mu);
    free(g);
}
