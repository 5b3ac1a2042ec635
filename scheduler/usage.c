/*
 * usage.c - live usage of running work (sched_job_usage): CPU and memory
 * from the job's cgroup, GPUs from NVML (gpu_usage.c), the cost so far from
 * the metering, for the notebook's meters and the kernels panel.
 *
 * CPU use is a rate: two readings of the cgroup's CPU time apart. Each job's
 * last reading is kept here (a small table, by scheduler and job id), and a
 * reading younger than SCHED_USAGE_CACHE_MS is answered as it is: however
 * many tabs poll a kernel, its cgroup is read about once a second. The
 * first reading of a job has no previous one, so its rate is the average
 * since the job started (cpu_window_ms says so).
 *
 * Locks: the scheduler's s->mu only to copy what the running entry says
 * (cgroup path, price, devices); the files and NVML are read outside it.
 * The table has its own mutex, never held while calling out.
 */
#include "sched.h"
#include "sched_int.h"

#include "ed_error.h"
#include "ed_time.h"
#include "sbx.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#define CACHE_SLOTS 64
#define MIN_WINDOW_MS 200   /* a rate over less than this is noise: keep the previous one */

typedef struct usage_slot {
    const sched *s;            /* NULL: free */
    int64_t      job_id;
    int64_t      mono_ms;      /* when read (monotonic) */
    int64_t      cpu_usec;     /* the cgroup's CPU time then, -1 unknown */
    sched_usage  u;            /* the answer given then */
    bool         internal;     /* a platform run: never its owner's to read */
} usage_slot;

static pthread_mutex_t cache_mu = PTHREAD_MUTEX_INITIALIZER;
static usage_slot cache[CACHE_SLOTS];

static int64_t mono_ms(void)
{
    return ed_mono_ns() / 1000000;
}

double sched_cpu_percent(int64_t cpu_usec, int64_t wall_ms)
{
    if (cpu_usec < 0 || wall_ms <= 0)
        return -1;
    /* usec / (ms * 1000) * 100; one decimal */
    double pct = (double)cpu_usec / (double)wall_ms / 10.0;
    return (double)(int64_t)(pct * 10.0 + 0.5) / 10.0;
}

/* The slot of (s, job_id), or NULL; cache_mu held. */
static usage_slot *slot_find(const sched *s, int64_t job_id)
{
    for (int i = 0; i < CACHE_SLOTS; i++)
        if (cache[i].s == s && cache[i].job_id == job_id)
            return &cache[i];
    return NULL;
}

/* Where a new reading of (s, job_id) goes: its own slot, a free one, or the
 * least recently read; cache_mu held. */
static usage_slot *slot_take(const sched *s, int64_t job_id)
{
    usage_slot *old = &cache[0];

    for (int i = 0; i < CACHE_SLOTS; i++) {
        if (cache[i].s == s && cache[i].job_id == job_id)
            return &cache[i];
        if (cache[i].s == NULL)
            old = &cache[i];
        else if (old->s != NULL && cache[i].mono_ms < old->mono_ms)
            old = &cache[i];
    }
    return old;
}

/* What the running entry of job `id` says, copied under s->mu. */
typedef struct run_view {
    bool    found;
    int64_t started_at, price, free_per_day;
    int     units, devices[16];
    char    cgroup[512];
} run_view;

static void run_view_get(run_view *v, sched *s, int64_t id)
{
    memset(v, 0, sizeof(*v));
    sched__lock(s);
    for (size_t i = 0; i < s->nrun; i++) {
        sched__running *r = s->run[i];
        if (r->id != id)
            continue;
        v->found = true;
        v->started_at = r->started_at;
        v->price = r->price;
        v->free_per_day = r->free_per_day;
        v->units = r->units;
        memcpy(v->devices, r->devices, sizeof(v->devices));
        if (r->job)
            snprintf(v->cgroup, sizeof(v->cgroup), "%s", sbx_job_cgroup(r->job));
        break;
    }
    sched__unlock(s);
}

/* The live part of a running job's reading: cgroup, class limits, GPUs. */
static void read_live(sched_usage *u, int64_t *cpu_usec, sched *s, const run_view *v, const usage_slot *prev,
                      int64_t now_mono)
{
    sched_resource cls;
    bool have_cls = sched_resource_get(&cls, s, u->resource) == 0;
    int units = v->units > 0 ? v->units : 1;
    sbx_live l;

    *cpu_usec = -1;
    if (sbx_cgroup_live(&l, v->cgroup) == 0) {
        *cpu_usec = l.cpu_usec;
        u->memory_bytes = l.mem_bytes;
        u->memory_limit_bytes = l.mem_limit_bytes;
        u->memory_peak_bytes = l.mem_peak_bytes;
        if (l.cpu_limit_millis > 0)
            u->cpu_limit_cores = l.cpu_limit_millis / 1000.0;
    }
    /* the class's limits where the cgroup has none to say (exec_local.c
     * sets exactly these: memory_mb and cpus per unit) */
    if (have_cls && u->memory_limit_bytes < 0 && cls.memory_mb > 0)
        u->memory_limit_bytes = ((int64_t)cls.memory_mb * units) << 20;
    if (have_cls && u->cpu_limit_cores < 0 && cls.cpus > 0)
        u->cpu_limit_cores = (double)cls.cpus * units;
    if (*cpu_usec >= 0) {
        if (prev && prev->cpu_usec >= 0 && prev->cpu_usec <= *cpu_usec && now_mono - prev->mono_ms >= MIN_WINDOW_MS) {
            u->cpu_window_ms = now_mono - prev->mono_ms;
            u->cpu_percent = sched_cpu_percent(*cpu_usec - prev->cpu_usec, u->cpu_window_ms);
        } else if (u->elapsed_ms > 0) {
            u->cpu_window_ms = u->elapsed_ms;
            u->cpu_percent = sched_cpu_percent(*cpu_usec, u->elapsed_ms);
        }
    }
    if (have_cls && cls.gpu) {
        u->n_gpus = v->units < SCHED_USAGE_MAX_GPUS ? v->units : SCHED_USAGE_MAX_GPUS;
        if (u->n_gpus < 0)
            u->n_gpus = 0;
        if (sched__simulated(s, &cls)) {
            /* simulated devices have no hardware to ask */
            for (int i = 0; i < u->n_gpus; i++)
                u->gpus[i] = (sched_gpu_usage){v->devices[i], -1, -1, -1, ""};
        } else {
            sched_gpu_read(u->gpus, v->devices, u->n_gpus, NULL);
        }
    }
}

int sched_job_usage(sched_usage *out, sched *s, int64_t user_id, int64_t job_id)
{
    sched_job_info j;
    run_view v;
    usage_slot prev, *sl;
    bool have_prev = false;
    int64_t now_mono = mono_ms(), cpu_usec = -1;
    int err;

    memset(out, 0, sizeof(*out));
    /* a recent reading: answered as it is, to its owner (or an admin) only */
    pthread_mutex_lock(&cache_mu);
    if ((sl = slot_find(s, job_id)) != NULL) {
        prev = *sl;
        have_prev = true;
    }
    pthread_mutex_unlock(&cache_mu);
    if (have_prev && now_mono - prev.mono_ms < SCHED_USAGE_CACHE_MS &&
        (user_id == 0 || (prev.u.user_id == user_id && !prev.internal))) {
        *out = prev.u;
        return 0;
    }

    if ((err = sched__job_read(&j, s, job_id)) < 0)
        return err;
    if (user_id != 0 && (j.user_id != user_id || j.internal))
        return ed_error_set(ED_ENOTFOUND, "job %lld not found", (long long)job_id);
    out->job_id = job_id;
    out->user_id = j.user_id;
    snprintf(out->status, sizeof(out->status), "%s", j.status);
    snprintf(out->resource, sizeof(out->resource), "%s", j.resource);
    out->at_ms = ed_now_ms();
    out->started_at = j.started_at;
    out->cpu_percent = -1;
    out->cpu_limit_cores = -1;
    out->memory_bytes = out->memory_limit_bytes = out->memory_peak_bytes = -1;
    out->mcoins_so_far = j.charged_mcoins;
    out->meter_interval_ms = s->cfg.meter_interval_ms;

    v.found = false;
    if (strcmp(j.status, "running") == 0)
        run_view_get(&v, s, job_id);
    if (v.found) {
        out->started_at = v.started_at;
        out->elapsed_ms = out->at_ms > v.started_at ? out->at_ms - v.started_at : 0;
        out->price_mcoins_per_hour = v.price;
        out->free = v.price == 0 || v.free_per_day < 0;
        read_live(out, &cpu_usec, s, &v, have_prev ? &prev : NULL, now_mono);
    } else {
        /* queued, ended, or ending: what the row says */
        sched_resource cls;
        int units = j.gpus > 0 ? j.gpus : 1;
        if (j.started_at > 0)
            out->elapsed_ms = (j.ended_at > j.started_at ? j.ended_at : out->at_ms) - j.started_at;
        if (j.ended_at > 0 && j.peak_mem_bytes > 0)
            out->memory_peak_bytes = j.peak_mem_bytes;
        if (sched_resource_get(&cls, s, j.resource) == 0) {
            out->price_mcoins_per_hour = j.uncharged ? 0 : cls.price_mcoins_per_hour * units;
            out->free = out->price_mcoins_per_hour == 0;
        }
    }

    pthread_mutex_lock(&cache_mu);
    sl = slot_take(s, job_id);
    sl->s = s;
    sl->job_id = job_id;
    sl->mono_ms = now_mono;
    sl->cpu_usec = cpu_usec;
    sl->u = *out;
    sl->internal = j.internal;
    pthread_mutex_unlock(&cache_mu);
    return 0;
}
