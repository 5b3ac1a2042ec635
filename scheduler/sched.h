/*
 * sched.h - the scheduler: who runs what, where, and in which order.
 *
 * Two layers:
 *
 *  1. The policy core (sched_plan, sched_eta): pure functions over arrays of
 *     queued and running work and the capacity of each resource class. They
 *     allocate only scratch memory, touch no store, and are what the unit
 *     tests and the 10,000-item benchmark drive.
 *
 *  2. The service (sched_open ... sched_close): resource classes and jobs in
 *     the store (tables sched_resources, sched_allowances, jobs; migration
 *     0005), one scheduler thread that places queued work, starts it through
 *     the local executor (sandbox/ + eddy-kernel), meters it (quota/meter.c),
 *     enforces limits, and settles its hold; reconciliation of whatever a
 *     crash left behind when it opens.
 *
 *     sched *s;
 *     sched_config cfg;
 *     sched_config_defaults(&cfg, "/var/lib/eddy");
 *     if ((err = sched_open(&s, store, &cfg)) < 0) ...
 *     sched_job_info j;
 *     err = sched_job_submit(&j, s, &spec);    // queued; j.queue_position, j.eta_ms
 *     ...
 *     sched_close(s);
 *
 * Order of the queue: tier weight (higher first), then fair share (less
 * recent usage first), then age (older first). Per-user concurrency caps come
 * from the tier. A higher-tier item that waits for a GPU class may preempt
 * lower-tier preemptible (batch) work; backfill lets a later item run now when
 * it does not delay the reservation of the first blocked item of its class.
 *
 * Errors follow ed_error.h. Every function is safe from any thread.
 */
#ifndef SCHED_H
#define SCHED_H

#include "ed_store.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SCHED_MAX_CLASSES 64
#define SCHED_MAX_RANKS   64      /* processes a job may start */
#define SCHED_MAX_NODES   16      /* hosts a job may span (Slurm) */

/* ---- the policy core ------------------------------------------------------ */

/* A queued item, as the policy sees it. */
typedef struct sched_item {
    int64_t id;
    int64_t user_id;
    int     weight;        /* tier scheduling weight: higher goes first */
    int     cls;           /* resource class index, 0..nclasses-1 */
    int     units;         /* capacity units wanted: GPUs, or 1 slot */
    int     user_cap;      /* the user's max concurrent work (tier); <= 0 unlimited */
    int64_t usage_ms;      /* the user's recent usage (fair share): less goes first */
    int64_t enqueued_at;   /* ms: older goes first */
    int64_t est_ms;        /* expected run time (its max runtime), for ETA and backfill */
} sched_item;

/* Running work. */
typedef struct sched_run {
    int64_t id;
    int64_t user_id;
    int     weight;
    int     cls;
    int     units;
    int64_t started_at;    /* ms */
    int64_t end_by;        /* ms: started_at + max runtime */
    bool    preemptible;   /* batch work that may be preempted */
    bool    stopping;      /* already being stopped: counts as busy, never a victim */
} sched_run;

/* One resource class's capacity. */
typedef struct sched_pool {
    int  capacity;         /* units */
    bool preemption;       /* higher-tier waiters may preempt here (GPU classes) */
} sched_pool;

/* What to do now. The arrays are caller-provided: start needs room for nq
 * ids, preempt for nr. */
typedef struct sched_decision {
    int64_t *start;   size_t nstart;    /* queued ids to start, in priority order */
    int64_t *preempt; size_t npreempt;  /* running ids to preempt */
} sched_decision;

/* Decide which queued items start now and which running items are preempted.
 * Items are taken in queue order; an item whose user is at its cap is
 * skipped; the first item of a class that does not fit gets a reservation at
 * the time enough running work ends (by end_by), and may preempt lower-weight
 * preemptible work of a class with preemption (lowest weight first, then the
 * most recently started); later items of that class backfill only if they
 * fit now and end before the reservation or use units it does not need.
 * Items wanting more units than their class has never start.
 * 0, ED_EINVAL (class index out of range), ED_ENOMEM (scratch). */
int sched_plan(sched_decision *out, const sched_item *queue, size_t nq, const sched_run *running,
               size_t nr, const sched_pool *pools, int nclasses, int64_t now_ms);

/* For each queued item (indexed like `queue`): its 1-based position in its
 * class's queue order and its estimated wait in ms, simulating the queue in
 * order against the running work's end_by and each item's est_ms (-1: never,
 * it wants more units than the class has). 0, ED_EINVAL, ED_ENOMEM. */
int sched_eta(int *out_pos, int64_t *out_eta_ms, const sched_item *queue, size_t nq,
              const sched_run *running, size_t nr, const sched_pool *pools, int nclasses,
              int64_t now_ms);

/* The comparison sched_plan orders the queue by (<0: a goes first). */
int sched_item_cmp(const sched_item *a, const sched_item *b);

/* ---- the service ------------------------------------------------------------ */

typedef struct sched sched;

typedef struct sched_config {
    char     data_dir[512];       /* jobs live in DATA/jobs/<id>/ */
    int64_t  meter_interval_ms;   /* EDDY_METER_INTERVAL_MS: 60000 by default, >= 1000 */
    int64_t  oof_grace_ms;        /* EDDY_OOF_GRACE_MS: out of funds -> stop; 2 intervals */
    int64_t  stop_grace_ms;       /* EDDY_STOP_GRACE_MS: SIGTERM -> SIGKILL; 10000 */
    int      sim_gpus;            /* EDDY_SIM_GPUS: simulated devices per GPU class (tests) */
    char     kernel_bin[512];     /* EDDY_KERNEL_BIN: eddy-kernel; "" = next to eddy, else python3 */
    char     slot_dir[256];       /* sandbox uid slot locks: /run/eddy-sandbox */
    unsigned slot_base, slot_count; /* host uids base..base+count-1 */
    bool     start_thread;        /* false: no scheduler thread (unit tests drive sched_tick) */
    int64_t  volume_bytes;        /* loop volume for disk quotas (sbx_disk_probe): 0 auto, < 0 none */
    int64_t  job_retention_ms;    /* ended jobs' directories are deleted after this; 0 keeps them */
    /* The effective daily budget of API key `key_id` in mcoins into *out
     * (-1: none), e.g. the smaller of the key's own and its env's; 0 or a
     * negative ED_E* code. Called from any thread, with the scheduler's lock
     * possibly held: must not call into the scheduler. NULL: keys have no
     * budget. The gateway supplies it (it owns keys). */
    int    (*key_budget)(int64_t *out_mcoins, int64_t key_id, void *arg);
    void    *key_budget_arg;
    /* The executor (README.md "Executors"): EDDY_EXECUTOR "local" (default:
     * sandboxes on this host) or "slurm" (a Slurm cluster through slurmrestd). */
    char     executor[16];
    char     slurm_url[256];      /* EDDY_SLURM_URL: http://host:port, or unix:/path (slurmrestd's socket) */
    char     slurm_token_file[256]; /* EDDY_SLURM_TOKEN_FILE: a JWT for auth/jwt; "" = local auth (unix socket) */
    char     slurm_user[64];      /* EDDY_SLURM_USER: the user the token is for (X-SLURM-USER-NAME) */
    char     slurm_partitions[512]; /* EDDY_SLURM_PARTITIONS: "class=partition,..."; unlisted: the default */
    char     slurm_qos[512];      /* EDDY_SLURM_QOS: "tier=qos,..."; unlisted: none */
    char     slurm_api[16];       /* EDDY_SLURM_API: "v0.0.38"...; "" = the newest both sides speak */
    char     slurm_python[256];   /* EDDY_SLURM_PYTHON: python3 on the nodes (/usr/bin/python3) */
} sched_config;

/* Defaults, then EDDY_* overrides from the environment. ED_EINVAL names a
 * bad variable. */
int sched_config_defaults(sched_config *c, const char *data_dir);

/* Open the scheduler over `st` (borrowed; must outlive it): discover devices,
 * reconcile what a crash left (running work fails with platform_error and is
 * refunded; open holds of work that is not running are released; unfinished
 * meter charges are finished), then start the scheduler thread. Caller
 * closes with sched_close(). */
int sched_open(sched **out, ed_store *st, const sched_config *cfg);

/* Stop the thread; running work is stopped (SIGTERM, grace, kill), metered to
 * the end and fails with platform_error, refunded. NULL-safe. */
void sched_close(sched *s);

/* Run one scheduling round now (what the thread does each tick): reap,
 * meter, enforce limits, place and start. */
int sched_tick(sched *s);

/* ---- resource classes ---- */

typedef struct sched_resource {
    char    name[32];
    int     cpus;
    int     memory_mb;
    bool    gpu;                     /* units are GPUs */
    char    gpu_model[64];
    int64_t price_mcoins_per_hour;   /* per unit */
    int     configured_capacity;     /* -1: discover */
    bool    simulated;               /* capacity without device nodes (tests) */
    int     capacity;                /* effective units */
    char    tiers[128];              /* "free,pro,premium" */
    int     in_use;                  /* units taken by running work */
    int     queued;                  /* queued items */
} sched_resource;

/* Every class, by name. *out is malloc'd (caller frees), *n its length. */
int sched_resource_list(sched_resource **out, size_t *n, sched *s);
/* One class. ED_ENOTFOUND. */
int sched_resource_get(sched_resource *out, sched *s, const char *name);
/* Create or change a class: fields of `r` with a negative value (-2 for
 * configured_capacity, where -1 means "discover"; an empty string for tiers
 * and gpu_model) keep the current value; simulated true marks the class
 * simulated; gpu is taken only when the class is new; a new class needs cpus,
 * memory_mb, price and tiers. ED_EINVAL for a bad name or value. */
int sched_resource_put(sched_resource *out, sched *s, const sched_resource *r);
/* A tier's daily free allowance on a class, ms (-1 unlimited). */
int sched_allowance_get(int64_t *out_ms, sched *s, const char *tier, const char *resource);
/* Set it (-1 unlimited). ED_ENOTFOUND for an unknown tier or class. */
int sched_allowance_set(sched *s, const char *tier, const char *resource, int64_t free_ms_per_day);

/* A tier's limits (the tiers table, job_disk_bytes included) are quota/'s:
 * quota_tier_get / quota_tier_update. */

/* The disk quota mechanism probed at sched_open (sandbox/sbx.h), for other
 * trees of the same data directory (project workspaces); NULL before. */
const struct sbx_disk *sched_disk(sched *s);

/* ---- jobs ---- */

#define SCHED_FAILURE_REASONS "user_error, timeout, out_of_memory, out_of_funds, key_budget, suspended, preempted, " \
                              "cancelled, platform_error"

typedef struct sched_job_spec {
    int64_t     user_id;
    const char *tier;            /* the user's tier */
    const char *project_id;
    const char *version;         /* NULL: the working tree */
    const char *entry;           /* "train.py" | "nb.ipynb" */
    const char *args_json;       /* JSON array of strings, or NULL */
    const char *resource;        /* class name */
    int         gpus;            /* GPU classes: GPUs per node, >= 1 (default 1); CPU classes: 0 */
    int64_t     max_runtime_ms;  /* 0: the tier's max session */
    bool        requeue;         /* requeue when preempted */
    const char *idem_key;        /* Idempotency-Key, or NULL */
    /* Fill `work_dir` (exists, empty) with the project's tree; called once,
     * before the job is queued. */
    int       (*prepare)(const char *work_dir, void *payload);
    void       *payload;
    int64_t     key_id;          /* the API key that starts it (0: a browser session, or the
                                  * thread's acting key, sched_acting_key_set): its daily
                                  * budget is checked before start and while it runs */
    int         nodes;           /* GPU classes: hosts (0 = 1) with `gpus` each; one rank per GPU.
                                  * The local executor has one host: more is ED_EUNPROC */
    int         ranks;           /* CPU classes: processes (0 = 1), one slot each; GPU classes: 0 */
    /* Platform runs (README.md "Platform runs": code competitions). */
    bool        network_off;     /* its own network namespace, loopback only, whatever the tier allows */
    bool        uncharged;       /* never charged nor reserved: no funds check, hold, meter or allowance */
    bool        internal;        /* the platform's: its owner neither lists nor reads it (ED_ENOTFOUND
                                  * for their user id); the caller reads it with user 0 and
                                  * sched_job_collect's it once handled */
    const struct sched_mount *mounts; /* with fixed_mounts: what it mounts instead of its project's
                                  * datasets (tree set: the caller resolved them with its own
                                  * authority); at most SCHED_MOUNTS_MAX */
    size_t      n_mounts;
    bool        fixed_mounts;
} sched_job_spec;

typedef struct sched_job_info {
    int64_t id;
    int64_t user_id;
    char    status[16];          /* queued|running|succeeded|failed|cancelled|preempted */
    char    project_id[64];
    char    version[64];         /* "" when the working tree */
    char    entry[256];
    char    args_json[1024];
    char    resource[32];
    int     gpus;                /* all its GPUs (nodes * GPUs per node) */
    int     ranks;               /* processes it starts (a GPU job: one per GPU) */
    int     nodes;               /* hosts they span */
    char    executor[8];         /* "local" | "slurm": what ran its last attempt ("" not yet) */
    char    exec_ref[32];        /* the executor's handle (Slurm's job id), "" none */
    int64_t max_runtime_ms;
    int     queue_position;      /* queued: 1-based in its class; else 0 */
    int64_t eta_ms;              /* queued: estimated wait; -1 never; else 0 */
    bool    has_exit_code;
    int     exit_code;
    char    failure_reason[24];  /* "" unless failed/cancelled/preempted */
    int64_t charged_mcoins;
    int64_t created_at, started_at, ended_at;   /* ms; 0 when not yet */
    int64_t cpu_ms, peak_mem_bytes;
    int     attempt;
    int64_t disk_limit_bytes;    /* work + output limit; -1 none (sched_job_get only) */
    int64_t disk_used_bytes;     /* live while running, at the end after; -1 unknown */
    int64_t artifacts_expired_at;/* ms: retention deleted its directory; 0 kept */
    int64_t key_id;              /* the API key that started it; 0 none */
    bool    network_off, uncharged, internal, fixed_mounts; /* sched_job_spec's flags */
    bool    collected;           /* internal: sched_job_collect was called */
    char    idem_key[208];       /* the submit's Idempotency-Key, "" none */
} sched_job_info;

/* Validate and queue a job: the class exists and the tier may use it, GPUs
 * within the tier's max_gpus_per_job and the class's capacity, runtime within
 * the tier's max session, the user can pay for a first interval (or has free
 * allowance). The work tree is prepared in DATA/jobs/<id>/work. A repeated
 * idem_key returns the first job. ED_EINVAL, ED_EPERM (class not in the
 * tier, or the user is suspended), ED_EQUOTA (no funds, or the API key's
 * daily budget is spent), ED_ENOTFOUND (no such class). */
int sched_job_submit(sched_job_info *out, sched *s, const sched_job_spec *spec);
/* One job. user_id 0 sees every job (admin); others only their own
 * (ED_ENOTFOUND otherwise). */
int sched_job_get(sched_job_info *out, sched *s, int64_t user_id, int64_t id);
/* The user's jobs (0: all), newest first, id < before (0: from newest), at
 * most `limit`. fn's non-zero return stops. */
int sched_job_each(sched *s, int64_t user_id, int64_t before, int limit,
                   int (*fn)(const sched_job_info *j, void *payload), void *payload);
/* Cancel: a queued job ends at once, a running one is stopped (SIGTERM,
 * grace, kill) and ends cancelled. A finished job is ED_ECONFLICT. */
int sched_job_cancel(sched_job_info *out, sched *s, int64_t user_id, int64_t id);
/* DATA/jobs/<id> into `out`. */
int sched_job_dir(char *out, size_t outlen, sched *s, int64_t id);
/* An internal job's outcome has been handled by whoever started it (a
 * restart no longer lists it). ED_ENOTFOUND, ED_ECONFLICT while it has not
 * ended. */
int sched_job_collect(sched *s, int64_t id);
/* Every internal job not yet collected whose idem_key begins with `prefix`
 * (after a restart: the runs to take back), oldest first. fn's non-zero
 * return stops. */
int sched_job_each_uncollected(sched *s, const char *prefix, int (*fn)(const sched_job_info *j, void *payload),
                               void *payload);

/* ---- API key budgets ----
 *
 * Work started with an API key (spec key_id, or the acting key below) is
 * recorded with the key (jobs.key_id) and metered against it
 * (quota_budget_*). Its effective daily budget comes from
 * sched_config.key_budget. When today's spending (UTC day) has reached it:
 * a start is refused with ED_EQUOTA (HTTP 402 quota_exceeded), a queued item
 * fails with failure_reason key_budget, and running work gets a notice in
 * its log, then is stopped after EDDY_OOF_GRACE_MS and fails with
 * key_budget, exactly as out_of_funds. Work without a key is unaffected.
 *
 *     sched_acting_key_set(req->auth.via_key ? req->auth.key_id : 0);
 *     err = kh_kernel_start(...);            // sched_kernel_submit inside
 *     sched_acting_key_set(0);
 */

/* The API key on whose behalf the calling thread starts work (0: none): a
 * submit whose spec has key_id 0 uses it. For callers that cannot pass a
 * spec (the kernel hub submits kernels): set it around the call, reset to 0
 * after. Thread-local. */
void sched_acting_key_set(int64_t key_id);
/* The calling thread's acting key (0: none). */
int64_t sched_acting_key(void);

/* 0 when API key `key_id` (0: no key, always 0) may start work now;
 * ED_EQUOTA naming the budget and today's spending when it is spent. For
 * every route that starts paid work with a key (also deployments and
 * submissions), before it starts. */
int sched_key_budget_check(sched *s, int64_t key_id);

/* ---- stopping a user's work ---- */

/* Stop every piece of work of `user_id` (jobs and kernels) with `reason`
 * ("suspended"; [a-z_], 1..23 bytes): queued items end at once (failed,
 * failure_reason `reason`); running ones are stopped (SIGTERM, grace, kill),
 * metered to the end, their holds settled, and end failed with that reason.
 * Returns at once; *out_n (may be NULL) gets how many items it stopped.
 * While the user is suspended (users.suspended) nothing of theirs starts:
 * submits are ED_EPERM, queued items fail with "suspended". ED_EINVAL. */
int sched_user_stop(int *out_n, sched *s, int64_t user_id, const char *reason);

/* ---- interactive kernels (kernels.c) ---- */

/* A kernel is a job (kind 'kernel') whose entry is SCHED_KERNEL_ENTRY: the
 * executor runs `eddy-kernel serve --fd N` in the sandbox with one end of a
 * socketpair and hands the other end to the kernel hook. Queue, placement,
 * tier limits, holds and metering are the jobs'. It ends like a job: a
 * shutdown exits 0 (succeeded), sched_job_cancel stops it (cancelled), its
 * max runtime (the tier's max session) stops it (timeout). */
#define SCHED_KERNEL_ENTRY "@kernel"

/* Called on the scheduler thread when a kernel's process has started, with
 * its job id and the gateway's end of the socket (the hook owns it: close it
 * when done). Must not block nor call into the scheduler. */
typedef void (*sched_kernel_fn)(void *arg, int64_t job_id, int fd);
/* Set (or clear, fn NULL) the hook. Without one a kernel's socket is closed
 * at start, which ends the kernel. */
void sched_kernel_hook_set(sched *s, sched_kernel_fn fn, void *arg);

/* Queue a kernel: as sched_job_submit with entry SCHED_KERNEL_ENTRY (spec's
 * entry, args, version and prepare are ignored; max_runtime_ms 0 is the
 * tier's max session; requeue is off). Its /home/aistudio/work is the
 * project's live tree, DATA/projects/<project_id>, bound through an
 * idmapped mount (README.md "Kernels"): the caller checks the project is
 * the user's. Errors as sched_job_submit, plus ED_EUNPROC when eddy-kernel
 * or idmapped bind mounts are missing (the message says which). */
int sched_kernel_submit(sched_job_info *out, sched *s, const sched_job_spec *spec);

/* ---- datasets a job or kernel mounts (mounts.c) ----------------------------
 *
 * A project lists datasets (datasets/ds.h, project_datasets); every kernel
 * and job of it sees each read-only at /home/aistudio/data/<owner>-<slug>/.
 * The scheduler knows nothing of datasets: the gateway installs a resolver
 * (sched_mounts_fn_set) that answers, for a user and a project, what to
 * mount, "latest" resolved to a number then. It is called at submit (a
 * dataset the user cannot see refuses the submit with the resolver's error)
 * and again when the job starts (a version published meanwhile is what it
 * runs with; a dataset that became invisible fails the start: failure
 * reason user_error, the log says which). What a job ran with is recorded
 * (table job_datasets, migration 0015) and never changes afterwards.
 *
 * Inside: EDDY_DATA_DIR=/home/aistudio/data and EDDY_DATASETS, a JSON list
 * [{"name":"owner/slug","version":3,"path":"/home/aistudio/data/owner-slug"}].
 */
#define SCHED_MOUNTS_MAX   20                      /* = DS_ATTACH_MAX */
#define SCHED_DATA_DIR     "/home/aistudio/data"

typedef struct sched_mount {
    char    dataset_id[40];
    char    name[100];        /* "owner/slug" */
    int64_t version;          /* the number it runs with */
    char    path[200];        /* inside: /home/aistudio/data/<owner>-<slug> */
    char    tree[700];        /* on the host: the version's read-only tree (absolute, beneath the
                               * data directory); "" in a recorded job's list */
} sched_mount;

/* What user `user_id` starting work in `project_id` mounts: *out (malloc'd,
 * NULL when nothing; the scheduler frees it) and its length (at most
 * SCHED_MOUNTS_MAX). The resolver fills name, version, dataset_id and tree;
 * path too, or leaves it "" for the scheduler to make from name
 * ("owner/slug" -> SCHED_DATA_DIR/owner-slug, "-2", "-3" ... when two names
 * make one directory). 0 or an ED_E* code with the error set (the submit
 * answers it). Called from any thread, with the scheduler's lock possibly
 * held: it must not call into the scheduler. */
typedef int (*sched_mounts_fn)(sched_mount **out, size_t *out_n, int64_t user_id, const char *project_id,
                               void *arg);
/* Install the resolver (NULL: nothing is mounted). Set once at start. */
void sched_mounts_fn_set(sched *s, sched_mounts_fn fn, void *arg);

/* What job `job_id` mounts (queued: what it would mount if it started now;
 * started: exactly what it ran with), tree "". *out malloc'd (NULL when
 * none). No ownership check: the caller has read the job or kernel. */
int sched_job_datasets(sched_mount **out, size_t *out_n, sched *s, int64_t job_id);

/* Whether a queued or running job or kernel mounts version `version` of
 * dataset `dataset_id` (0: any version): 1 with *out_job the first such
 * job's id and *out_kernel true when it is a kernel's; 0 when none. For the
 * datasets' in-use hook (deleting a version in use is refused). */
int sched_dataset_in_use(int64_t *out_job, bool *out_kernel, sched *s, const char *dataset_id, int64_t version);

/* ---- live usage of running work (usage.c, gpu_usage.c) ----
 *
 * What a job or kernel uses now, for live meters: CPU and memory from its
 * cgroup (sandbox/ sbx_cgroup_live), its GPUs from NVML (dlopen'd at run
 * time, never linked), and what it cost so far from the metering. A reading
 * is kept SCHED_USAGE_CACHE_MS per job: many clients polling one kernel
 * cost one reading a second. Unknown figures are -1 (never made up): a
 * degraded sandbox has no cgroup, a host without NVML no GPU figures.
 *
 *     sched_usage u;
 *     if ((err = sched_job_usage(&u, s, user_id, job_id)) == 0)
 *         printf("%.0f%% of %.1f cores\n", u.cpu_percent, u.cpu_limit_cores);
 */
#define SCHED_USAGE_CACHE_MS 1000
#define SCHED_USAGE_MAX_GPUS 16

typedef struct sched_gpu_usage {
    int     index;                /* the device (/dev/nvidia<index>) */
    int     util_percent;         /* busy over NVML's last sample period; -1 unknown */
    int64_t memory_bytes;         /* device memory in use; -1 unknown */
    int64_t memory_total_bytes;   /* -1 unknown */
    char    name[96];             /* NVML's product name; "" unknown */
} sched_gpu_usage;

typedef struct sched_usage {
    int64_t job_id;
    int64_t user_id;              /* the job's owner */
    char    status[16];           /* the job's: running, or how it ended (queued: nothing measured) */
    char    resource[32];
    int64_t at_ms;                /* when measured, ms since the epoch */
    int64_t started_at;           /* this run's start (ms since the epoch), 0 when not started */
    int64_t elapsed_ms;           /* since started_at (to its end once ended) */
    double  cpu_percent;          /* of one core over cpu_window_ms (200: two busy cores); < 0 unknown */
    int64_t cpu_window_ms;        /* the window: since the previous reading, or the start */
    double  cpu_limit_cores;      /* the cgroup's quota, else the class's; < 0 unknown */
    int64_t memory_bytes;         /* charged to its cgroup now; -1 unknown */
    int64_t memory_limit_bytes;   /* the cgroup's limit, else the class's; -1 unknown */
    int64_t memory_peak_bytes;    /* -1 unknown */
    int     n_gpus;               /* its GPUs (0 on a CPU class) */
    sched_gpu_usage gpus[SCHED_USAGE_MAX_GPUS];
    int64_t mcoins_so_far;        /* charged to coins so far (whole metered intervals) */
    int64_t meter_interval_ms;    /* how often it is metered (EDDY_METER_INTERVAL_MS) */
    int64_t price_mcoins_per_hour;/* all its units at the class's price */
    bool    free;                 /* never charged: price 0, or the tier's allowance on the
                                   * class is unlimited */
} sched_usage;

/* Usage of job `job_id` now (a reading at most SCHED_USAGE_CACHE_MS old).
 * user_id 0 reads any job (admin); others only their own (ED_ENOTFOUND
 * otherwise, as sched_job_get). An ended job answers its final figures
 * (elapsed, peak memory, cost) with the live ones -1. 0, ED_ENOTFOUND, a
 * store error. */
int sched_job_usage(sched_usage *out, sched *s, int64_t user_id, int64_t job_id);

/* CPU use as a percentage of one core: `cpu_usec` microseconds of CPU time
 * over `wall_ms` of wall time (100: one core busy, 250: two and a half);
 * -1 when either is negative or the window is empty. */
double sched_cpu_percent(int64_t cpu_usec, int64_t wall_ms);

/* The NVML calls a GPU reading makes (nvml.h's types as plain C: a device
 * handle is a pointer; each returns 0, NVML_SUCCESS, or an error number). */
typedef struct sched_nvml {
    int (*device_count)(unsigned *n);
    int (*device_by_index)(unsigned i, void **dev);
    int (*minor_number)(void *dev, unsigned *minor);
    int (*utilization)(void *dev, unsigned *gpu_percent, unsigned *mem_percent);
    int (*memory)(void *dev, uint64_t *total, uint64_t *free, uint64_t *used);
    int (*name)(void *dev, char *buf, unsigned len);    /* optional (NULL) */
    int (*uuid)(void *dev, char *buf, unsigned len);    /* optional (NULL) */
} sched_nvml;

/* The GPUs /dev/nvidia<devices[i]> (i < n, n <= SCHED_USAGE_MAX_GPUS) into
 * out[i], matched to NVML's devices by minor number. `api` NULL: NVML
 * through dlopen ($EDDY_NVML_LIB, else "libnvidia-ml.so.1"), initialised
 * once per process (scheduler/gpu_nvml.c). What
 * cannot be read is -1 (every figure when there is no NVML). Returns how
 * many devices had figures. */
int sched_gpu_read(sched_gpu_usage *out, const int *devices, int n, const sched_nvml *api);

/* ---- the host's GPUs (gpu_nvml.c, gpu_alloc.c) ----
 *
 * Found once at sched_open through NVML (never libcuda: CUDA is not
 * initialised in the server). A GPU is the unit work is given, whole, by its
 * device node /dev/nvidia<minor>: never to two running jobs or kernels at
 * once, whatever their classes (every real GPU class draws on the same
 * devices), and free again as soon as the work is reaped. */
#define SCHED_MAX_GPUS 16

typedef struct sched_gpu {
    int     minor;                /* /dev/nvidia<minor> */
    int     nvml_index;           /* NVML's index (PCI order), not the minor */
    char    name[96];             /* "NVIDIA H100 80GB HBM3"; "" unknown */
    char    uuid[96];             /* "GPU-<hex>"; "" unknown */
    int     util_percent;         /* now; -1 unknown */
    int64_t memory_used_bytes;    /* now; -1 unknown */
    int64_t memory_total_bytes;   /* -1 unknown */
    int64_t job_id;               /* the running job or kernel holding it; 0 free */
    int64_t user_id;              /* its owner; 0 free */
    bool    kernel;               /* the holder is an interactive kernel */
} sched_gpu;

/* The host's GPUs (at most `max`) into out, in minor order, with what
 * each is doing now and who holds it; the count (0 on a CPU host). */
int sched_gpus_get(sched_gpu *out, int max, sched *s);

/* The GPUs running job or kernel `job_id` holds now, at most `max`, with
 * NVML's figures (-1/"" where unknown: simulated devices, no NVML). 0 when
 * it holds none or is not running. No ownership check: the caller has
 * read the job. */
int sched_job_gpus(sched_gpu_usage *out, int max, sched *s, int64_t job_id);

/* Whether work here can compute on a GPU: the framework's CUDA backend was
 * built (the plugin paddle/libeddy_fw_cuda.so next to the package jobs
 * import) and NVML found at least one GPU. Nothing is loaded to find out.
 * `why` (may be NULL, cap bytes) says what is missing when false. */
bool sched_gpu_compute(sched *s, char *why, size_t cap);

/* ---- overview ---- */

typedef struct sched_overview {
    int64_t users;
    int     running_jobs, queued_jobs;
    int64_t charged_today_mcoins;
    int     gpus_found;          /* NVML at start; 0 on CPU hosts */
    int     gpus_simulated;      /* EDDY_SIM_GPUS */
    int     nclasses;
    sched_resource classes[SCHED_MAX_CLASSES];   /* capacity, in_use, queued */
    int     ngpus;               /* the host's GPUs (sched_gpus_get) */
    sched_gpu gpus[SCHED_MAX_GPUS];
} sched_overview;
int sched_overview_get(sched_overview *out, sched *s);

/* Burn rate of a user's running work (mcoins/hour at current prices,
 * ignoring free allowance). */
int sched_burn_rate(int64_t *out_mcoins_per_hour, sched *s, int64_t user_id);

/* What GET /api/v1/quota shows beyond the ledger's balances. */
typedef struct sched_quota_view {
    int64_t burn_mcoins_per_hour;  /* running work that is paying coins now */
    int64_t free_ms_left_today;    /* on the entry GPU class; -1 unlimited */
    int64_t ms_remaining;          /* spendable coins / burn; -1 when nothing burns */
} sched_quota_view;
int sched_quota_view_get(sched_quota_view *out, sched *s, int64_t user_id, const char *tier);

#endif
