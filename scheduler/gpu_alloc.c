/*
 * gpu_alloc.c - whole GPUs for running work, and who holds which.
 *
 * The unit is a device node, /dev/nvidia<minor>, found through NVML at
 * sched_open (gpu_nvml.c). Every real GPU class of the local executor draws
 * on the same devices: a GPU is held by at most one running job or kernel,
 * whatever its class, and a class's capacity (the host's count) says only
 * how many it may use at once. What a job holds is r->devices of its entry
 * on s->run, so it is free again when the entry goes: at its end, a kill,
 * or a crash of the job (reaped), and after a crash of the server (nothing
 * runs: sched_open fails what was running, see service.c reconcile).
 *
 * Simulated classes (EDDY_SIM_GPUS, `simulated`) and the Slurm executor
 * (whose devices are its nodes', not ours) count indices within the class,
 * as before: there is no device node behind them here.
 */
#include "sched.h"
#include "sched_int.h"

#include "ed_error.h"

#include <assert.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Real GPUs: device nodes on this host. */
static bool real_gpus(const sched *s, const sched_resource *c)
{
    return c->gpu && !sched__simulated(s, c) && s->exec == &sched__exec_local;
}

int sched__gpu_alloc(sched *s, sched__running *r, const sched_resource *c, char *devs, size_t devs_cap)
{
    bool used[256] = {false};
    int nd = 0, want = r->units < 16 ? r->units : 16;

    assert(sched__locked(s));
    devs[0] = '\0';
    r->gpu_real = r->gpu_sim = false;
    if (!c->gpu)
        return 0;
    if (real_gpus(s, c)) {
        for (size_t i = 0; i < s->nrun; i++)
            for (int k = 0; s->run[i]->gpu_real && k < s->run[i]->units && k < 16; k++)
                if (s->run[i]->devices[k] >= 0 && s->run[i]->devices[k] < 256)
                    used[s->run[i]->devices[k]] = true;
        for (int g = 0; g < s->ngpus && nd < want; g++)
            if (!used[s->gpus[g].minor])
                r->devices[nd++] = s->gpus[g].minor;
        if (nd < want)
            return ed_error_set(ED_EBUSY, "%d of the %d GPUs it needs are free now", nd, want);
        r->gpu_real = true;
    } else {
        r->gpu_sim = true;
        /* the lowest indices no running work of this class holds */
        for (size_t i = 0; i < s->nrun; i++)
            if (strcmp(s->run[i]->resource, c->name) == 0)
                for (int k = 0; k < s->run[i]->units && k < 16; k++)
                    if (s->run[i]->devices[k] >= 0 && s->run[i]->devices[k] < 64)
                        used[s->run[i]->devices[k]] = true;
        for (int d = 0; d < 64 && nd < want; d++)
            if (!used[d])
                r->devices[nd++] = d;
    }
    for (int k = 0; k < nd; k++)
        snprintf(devs + strlen(devs), devs_cap - strlen(devs), "%s%d", k ? "," : "", r->devices[k]);
    return 0;
}

/* The running entry holding real GPU `minor`, under s->mu; NULL when free. */
static const sched__running *holder(const sched *s, int minor)
{
    for (size_t i = 0; i < s->nrun; i++)
        for (int k = 0; s->run[i]->gpu_real && k < s->run[i]->units && k < 16; k++)
            if (s->run[i]->devices[k] == minor)
                return s->run[i];
    return NULL;
}

int sched_gpus_get(sched_gpu *out, int max, sched *s)
{
    int n = s->ngpus < max ? s->ngpus : max, minors[SCHED_MAX_GPUS];
    sched_gpu_usage live[SCHED_MAX_GPUS];

    if (n <= 0)
        return 0;
    sched__lock(s);
    for (int i = 0; i < n; i++) {
        const sched__running *r = holder(s, s->gpus[i].minor);
        out[i] = s->gpus[i];
        out[i].job_id = r ? r->id : 0;
        out[i].user_id = r ? r->user_id : 0;
        out[i].kernel = r ? r->kernel : false;
        minors[i] = s->gpus[i].minor;
    }
    sched__unlock(s);
    /* NVML outside the lock: a reading may take milliseconds */
    sched_gpu_read(live, minors, n, NULL);
    for (int i = 0; i < n; i++) {
        out[i].util_percent = live[i].util_percent;
        out[i].memory_used_bytes = live[i].memory_bytes;
        if (live[i].memory_total_bytes >= 0)
            out[i].memory_total_bytes = live[i].memory_total_bytes;
    }
    return n;
}

int sched_job_gpus(sched_gpu_usage *out, int max, sched *s, int64_t job_id)
{
    int n = 0, devices[16];
    bool real = false;

    sched__lock(s);
    for (size_t i = 0; i < s->nrun; i++) {
        const sched__running *r = s->run[i];
        if (r->id != job_id || r->units <= 0)
            continue;
        /* only GPU work has devices: gpu_real, or a simulated GPU class's
         * indices (jobs.devices is "" for CPU work) */
        real = r->gpu_real;
        if (real || r->gpu_sim)
            for (int k = 0; k < r->units && k < 16 && n < max; k++)
                devices[n++] = r->devices[k];
        break;
    }
    sched__unlock(s);
    if (n > SCHED_USAGE_MAX_GPUS)
        n = SCHED_USAGE_MAX_GPUS;
    if (real)
        sched_gpu_read(out, devices, n, NULL);
    else
        for (int i = 0; i < n; i++)   /* simulated: no hardware to ask */
            out[i] = (sched_gpu_usage){devices[i], -1, -1, -1, ""};
    return n;
}

bool sched_gpu_compute(sched *s, char *why, size_t cap)
{
    char dir[512], plugin[600];
    struct stat st;

    if (why && cap)
        why[0] = '\0';
    sched__paddle_dir(dir, sizeof(dir));
    if (dir[0] == '\0') {
        if (why)
            snprintf(why, cap, "no paddle package for jobs (EDDY_PADDLE_DIR)");
        return false;
    }
    /* framework/core/backend_load.c loads it from next to paddle/_C*.so */
    snprintf(plugin, sizeof(plugin), "%s/paddle/libeddy_fw_cuda.so", dir);
    if (stat(plugin, &st) != 0 || !S_ISREG(st.st_mode)) {
        if (why)
            snprintf(why, cap, "the framework was built without its CUDA backend (no %s)", plugin);
        return false;
    }
    if (s->ngpus <= 0) {
        const char *w = NULL;
        if (why)
            snprintf(why, cap, "NVML reports no GPU%s%s", sched__nvml(&w) ? "" : ": ", w ? w : "");
        return false;
    }
    return true;
}
