/* slurm_api.h - private to scheduler/: slurmrestd's REST API as data.
 *
 * What the Slurm executor (exec_slurm.c) sends to slurmrestd and reads back,
 * as pure functions over JSON text: no I/O, so the contract tests
 * (tests/unit/scheduler/test_slurm_contract.c) check them against requests
 * and responses recorded from a real slurmrestd of each version.
 *
 * Versions: slurmrestd serves one path prefix per OpenAPI plugin it loads
 * (/slurm/v0.0.38/...), listed in its /openapi/v3 document. The executor
 * speaks SCHED_SLURM_VERSIONS (newest first) and uses the newest one the
 * server offers. v0.0.38 is Debian 12's (Slurm 22.05); v0.0.37 is the one
 * before, served by the same daemon (-s openapi/v0.0.37). Their job
 * submission and job description agree in every field used here; exit codes
 * are wait statuses (an integer) in both, and an object
 * {status, return_code, signal} from v0.0.39 on, which the parser accepts
 * too.
 */
#ifndef SLURM_API_H
#define SLURM_API_H

#include "sched_int.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Newest first; NULL-terminated. */
extern const char *const sched__slurm_versions[];

/* A batch job to submit. Strings may be "" (then left out). */
typedef struct sched__slurm_req {
    const char *name;            /* "eddy-<job id>" */
    const char *partition;
    const char *qos;
    const char *cwd;             /* the job's work directory (shared) */
    const char *output;          /* stdout and stderr, appended (the job's log) */
    const char *script;          /* "#!/bin/sh\n..." */
    const char *const *env;      /* "NAME=value", NULL-terminated */
    int         tasks;           /* ranks */
    int         nodes;
    int         cpus_per_task;
    int         gpus_per_node;   /* 0: none */
    int         memory_per_node_mb;
    int         time_limit_min;
} sched__slurm_req;

/* A job as slurmrestd describes it. */
typedef struct sched__slurm_job {
    int64_t job_id;
    char    state[32];           /* job_state: PENDING, RUNNING, COMPLETED, FAILED, ... */
    char    reason[64];          /* state_reason */
    bool    has_exit;
    int     exit_status;         /* the batch script's exit status (0..255) */
    int     term_signal;         /* or the signal that ended it, 0 none */
    int64_t start_time, end_time;/* s since the epoch, 0 unknown */
    int     restarts;            /* restart_cnt: Slurm requeued it (after a node failure) */
} sched__slurm_job;

/* The newest version in SCHED_SLURM_VERSIONS whose /slurm/<v>/job/submit the
 * OpenAPI document `text` lists (or `forced` when it is listed and spoken
 * here; "" or NULL: any) into out. ED_EUNPROC naming what the server offers
 * when nothing fits; ED_EINVAL when the text is not an OpenAPI document. */
int sched__slurm_pick(char *out, size_t n, const char *text, size_t len, const char *forced);

/* The body of POST /slurm/<ver>/job/submit, malloc'd JSON text (caller
 * frees); NULL on ED_ENOMEM (error set) or ED_EINVAL (an unknown version). */
char *sched__slurm_submit_body(const char *ver, const sched__slurm_req *q);

/* The job id out of a submit response. ED_EIO with slurmrestd's errors
 * ("errors": [{"error": ...}]) when it refused. */
int sched__slurm_parse_submit(int64_t *job_id, const char *ver, const char *text, size_t len);

/* The job out of GET /slurm/<ver>/job/<id>. ED_ENOTFOUND when Slurm no
 * longer knows it (purged, or never was); ED_EIO for other errors. */
int sched__slurm_parse_job(sched__slurm_job *out, const char *ver, const char *text, size_t len);

/* 1 and *o filled when the job has ended, 0 while it is pending or running.
 * COMPLETED and FAILED: its exit status; CANCELLED: the signal (SIGTERM)
 * unless it exited; TIMEOUT: wall; OUT_OF_MEMORY: oom; NODE_FAIL, BOOT_FAIL:
 * reason platform_error; PREEMPTED: reason preempted; DEADLINE: wall.
 * A job Slurm requeued (restart_cnt > 0: Eddy submits requeue false, so
 * only the system does, when a node fails under a job or a launch fails)
 * has ended for Eddy too, whatever its state now: platform_error (the
 * caller cancels what is left of it on the cluster). A job cancelled by
 * someone else than Eddy is the caller's to tell. */
int sched__slurm_outcome(sched__outcome *o, const sched__slurm_job *j);

/* `s` quoted for /bin/sh ('...' with ' as '\''), appended to out (n bytes
 * in all). -1 when it does not fit. */
int sched__sh_quote(char *out, size_t n, const char *s);

#endif
