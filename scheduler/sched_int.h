/* sched_int.h - private to scheduler/. */
#ifndef SCHED_INT_H
#define SCHED_INT_H

#include "sched.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

struct sbx_job;
struct sbx_slot;

/* Running work, owned by the scheduler (under sched.mu). */
typedef struct sched__running {
    int64_t  id, user_id;
    int      weight;
    int      cls;                 /* index into the class snapshot of the tick */
    char     resource[32];
    char     tier[32];
    int      units;
    int      devices[16];         /* its GPUs: device minors (/dev/nvidia<k>); simulated
                                   * classes: indices among the class's devices */
    int64_t  started_at, end_by;  /* ms */
    bool     preemptible, requeue;
    int64_t  price;               /* mcoins/hour for all its units */
    int64_t  free_per_day;        /* the tier's allowance on the class, -1 unlimited */
    int64_t  hold_id, hold_mcoins;
    int64_t  seq_base, seq;       /* meter intervals before this attempt / so far */
    int64_t  charged_base, unpaid_base; /* meter totals when this attempt began */
    int64_t  prior_charged;       /* jobs.charged_mcoins when this attempt began */
    int64_t  warned_at;           /* out-of-funds warning given (ms), 0 none */
    int64_t  key_id;              /* the API key that started it, 0 none */
    int64_t  budget_warned_at;    /* key budget spent: warning given (ms), 0 none */
    char     stop_reason[24];     /* "" running; else cancelled|preempted|out_of_funds|key_budget|
                                   * suspended|timeout|platform_error */
    int64_t  kill_at;             /* SIGKILL after this (ms) once stopping */
    struct sbx_job  *job;
    struct sbx_slot *slot;
    int      log_fd;
    sched_mount *mounts;          /* start_job -> launch only: the datasets it mounts (mounts.c) */
    size_t   n_mounts;
    int      ranks, nodes;        /* processes, and the hosts they span (jobs.ranks, jobs.nodes) */
    char     exec_ref[32];        /* the executor's handle, recorded in jobs.exec_ref ("" none) */
    void    *xdata;               /* the executor's own state (exec_slurm.c) */
    bool     uncharged;           /* jobs.uncharged: price 0, never metered nor held */
    bool     kernel;              /* an interactive kernel (entry SCHED_KERNEL_ENTRY) */
    bool     gpu_real;            /* devices are this host's GPU minors (gpu_alloc.c) */
    bool     gpu_sim;             /* devices are a simulated (or Slurm) class's indices */
} sched__running;

/* One execution backend (a table of functions, so a "slurm" one can join).
 * launch() starts the job described by `r` and `j` with its tree in
 * `job_dir`/work; poll() returns 1 and fills the outcome when it ended, 0
 * while it runs; signal() delivers a signal; release() frees what launch
 * took. */
typedef struct sched__outcome {
    bool    exited;
    int     exit_code;
    int     term_signal;
    bool    oom, wall;            /* killed by the memory limit / wall time */
    int64_t cpu_ms, peak_mem_bytes;
    const char *reason;           /* the executor's verdict when it knows better than the exit
                                   * status: "platform_error" (a node failed), "preempted"
                                   * (the cluster preempted it); NULL otherwise */
} sched__outcome;

typedef struct sched__executor {
    const char *name;
    int  (*launch)(sched *s, sched__running *r, const sched_job_info *j, const sched_resource *cls,
                   bool egress, const char *job_dir);
    int  (*poll)(sched__running *r, sched__outcome *out);
    int  (*signal)(sched__running *r, int sig);
    void (*release)(sched__running *r);
    /* Optional (NULL: work cannot outlive the server). Take running job `j`
     * back after a restart through r->exec_ref: 0 when it is found (running or
     * ended: poll tells), ED_ENOTFOUND when the backend no longer knows it. */
    int  (*attach)(sched *s, sched__running *r, const sched_job_info *j, const char *job_dir);
    /* Optional: at sched_open (connect, detect versions) and sched_close. */
    int  (*open)(sched *s);
    void (*close)(sched *s);
} sched__executor;

extern const sched__executor sched__exec_local;
extern const sched__executor sched__exec_slurm;

/* The ranks' supervisor (ranks.c): a Python program, run as
 * `python3 -c RANKS_PY N entry args...` inside the job (one sandbox, or one
 * Slurm step per node), that starts N ranks with Paddle's environment, prefixes
 * each line with "[rank i] ", stops every rank when one fails and exits with
 * that rank's status, naming it. */
extern const char sched__ranks_py[];

struct sched {
    ed_store        *st;
    sched_config     cfg;
    pthread_mutex_t  mu;          /* guards everything below */
    pthread_cond_t   cv;
    pthread_t        thread;
    bool             thread_started, stopping;
    sched__running **run;
    size_t           nrun, caprun;
    int              discovered_gpus;   /* NVML at start (= ngpus), 0 on CPU hosts */
    sched_gpu        gpus[SCHED_MAX_GPUS];   /* gpu_nvml.c: found at start, minor order */
    int              ngpus;
    const sched__executor *exec;
    sched_kernel_fn  kernel_hook;       /* kernels.c: receives kernels' sockets */
    void            *kernel_hook_arg;
    struct sbx_disk *disk;              /* retention.c: the disk quota mechanism (never NULL once open) */
    int64_t          swept_at;          /* retention.c: last sweep (ms), 0 before the first */
    int              idmap;             /* kernels.c: 0 not probed, 1 idmapped binds work, -1 not */
    char             idmap_why[256];    /* kernels.c: what is missing when idmap is -1 */
    sched_mounts_fn  mounts_fn;         /* mounts.c: the datasets a start mounts (the gateway's) */
    void            *mounts_arg;
    void            *xstate;            /* the executor's (exec_slurm.c: the connection, API version) */
};

/* NVML through dlopen ($EDDY_NVML_LIB, else libnvidia-ml.so.1), opened and
 * initialised once per process; NULL when there is none, *why (may be
 * NULL) then says why (gpu_nvml.c). */
const sched_nvml *sched__nvml(const char **why);

/* The GPUs `api` (NULL: sched__nvml) reports, at most `max`, into out in
 * minor order: minor, NVML index, name, UUID, total memory (the live
 * figures -1, holders 0). 0 without NVML. Never links NVML, never touches
 * CUDA. */
int sched__gpu_discover(sched_gpu *out, int max, const sched_nvml *api);

/* Give running work `r` (not yet on s->run) r->units whole GPUs of class
 * `c` (gpu_alloc.c): real classes get the lowest device minors no running
 * work of any real GPU class holds; simulated classes the lowest indices
 * free within the class. Fills r->devices and `devs` ("1,3", for
 * jobs.devices). 0; ED_EBUSY when not enough are free now (the job waits).
 * Under s->mu. */
int sched__gpu_alloc(sched *s, sched__running *r, const sched_resource *c, char *devs, size_t devs_cap);

/* Effective capacity of a class. */
int sched__capacity(const sched *s, const sched_resource *r);
/* GPUs of this class are simulated: counted, but no device nodes. */
bool sched__simulated(const sched *s, const sched_resource *r);

/* Append a line to a job's log (the scheduler's own notices). */
void sched__log_notice(sched__running *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Read one job row. */
int sched__job_read(sched_job_info *out, sched *s, int64_t id);

/* The queue and running work as the policy sees them, from the store, with
 * every class (pools[i] matches (*out_classes)[i]). Caller frees the three
 * arrays. */
int sched__queue_snapshot(sched *s, sched_item **out_q, size_t *out_nq, sched_run **out_r, size_t *out_nr,
                          sched_pool *pools, sched_resource **out_classes, size_t *out_ncls);

/* The hold a job needs at start: its units' price for two meter intervals
 * and the out-of-funds grace period; at least 1 mcoin when it costs anything. */
int64_t sched__hold_amount(const sched *s, int64_t price_all_units);

/* The `paddle` package's folder on the host (EDDY_PADDLE_DIR, or the build
 * tree's framework/python next to `eddy`), or "" when there is none. */
void sched__paddle_dir(char *out, size_t n);

/* eddy-kernel's path on the host (EDDY_KERNEL_BIN, or next to `eddy`, or in
 * the build tree's kernel_runner/), or "" when there is none. */
void sched__kernel_path(char *out, size_t n, const sched *s);

/* kernels.c: true on the thread while sched_kernel_submit queues a kernel
 * (jobs.c then accepts the entry SCHED_KERNEL_ENTRY, which callers of
 * sched_job_submit cannot use). */
extern _Thread_local bool sched__submitting_kernel;

/* The budget state of API key `key_id` now: 0 when it may run, ED_EQUOTA
 * (message set) when its daily budget is spent, another code when the
 * budget or the spending cannot be read. */
int sched__key_budget(sched *s, int64_t key_id, int64_t now_ms);

/* Whether user `user_id` is suspended (users.suspended). */
int sched__user_suspended(bool *out, sched *s, int64_t user_id);

/* rm -rf, best effort. */
void sched__rm_rf(const char *path);

/* retention.c: a job's disk quota tree (DATA/jobs/<id>/work + output, the
 * tier's job_disk_bytes) and the sweep that deletes work directories of
 * ended jobs and whole directories past job_retention_ms. */
int  sched__disk_open(sched *s);                  /* probe at start; logs the mechanism */
void sched__disk_close(sched *s);
/* Make the job's work and output directories its tree (at submit). ED_EUNPROC
 * when the tier has a limit and the host no mechanism (fail closed). */
int  sched__disk_job_init(sched *s, int64_t id, const char *tier);
/* Attach the tree again before launch (a restart unmounted it). */
int  sched__disk_job_attach(sched *s, int64_t id);
/* Remove the tree (a submit that failed after init). */
void sched__disk_job_remove(sched *s, int64_t id);
/* Fill j's disk_* and artifacts_expired_at (live usage while running). */
void sched__disk_job_fill(sched *s, sched_job_info *j);
/* s->mu, with this thread's holding it recorded (thread-local, so reading
 * it is never a race) for asserts in functions that need the lock:
 *
 *     sched__lock(s);  ...  assert(sched__locked(s));  ...  sched__unlock(s);
 *
 * pthread_cond_(timed)wait on s->cv leaves it recorded: the caller holds the
 * lock again when the wait returns. */
void sched__lock(sched *s);
void sched__unlock(sched *s);
bool sched__locked(const sched *s);

/* The job state machine (jobs.status):
 *     preparing -> queued                      (submit; or the row is deleted)
 *     queued    -> running | failed | cancelled
 *     running   -> succeeded | failed | cancelled | preempted
 *                | queued                      (preempted and requeued)
 * Ended states never change. For asserts at every write of a status. */
bool sched__job_transition_ok(const char *from, const char *to);

/* mounts.c: what user `user_id` starting in `project_id` mounts, through
 * the resolver (nothing without one, or without a project), checked and
 * with every path made. Caller frees *out. */
int sched__mounts_resolve(sched_mount **out, size_t *out_n, sched *s, int64_t user_id, const char *project_id);
/* Replace job `job_id`'s recorded mounts (table job_datasets), with their
 * trees when `with_tree` (fixed mounts). */
int sched__mounts_record(sched *s, int64_t job_id, const sched_mount *m, size_t n, bool with_tree);
/* A spec's fixed mounts checked as the resolver's answer is (names, trees,
 * paths made): *out malloc'd copy (NULL when n is 0). */
int sched__mounts_check(sched_mount **out, const sched_mount *m, size_t n);
/* A fixed-mounts job's recorded mounts, trees included (checked again). */
int sched__mounts_fixed(sched_mount **out, size_t *out_n, sched *s, int64_t job_id);

/* From the scheduler loop, with s->mu held (released while it works). */
void sched__retention_sweep(sched *s);

#endif
