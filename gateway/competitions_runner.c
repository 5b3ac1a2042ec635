/*
 * competitions_runner.c - code submissions as scheduler jobs (issue 16
 * items 5 and 7), through sched.h's public API only.
 *
 * One thread: it claims queued code submissions (comp_code_claim: ->
 * running, with the competition's max_runtime_s + a margin as the
 * watchdog's deadline), starts each as a platform run of its participant
 * (sched.h "Platform runs"), polls the jobs, and reports: the file the run
 * wrote at the competition's output_path, opened beneath the job's output
 * with ed_fs_open_beneath, goes to comp_code_output_fd (validated and
 * scored like a CSV); otherwise comp_code_fail with the class and the tail
 * of the job's log (its own output, bounded: COMP_LOG_TAIL_MAX).
 *
 * The run:
 *   - internal: the participant never lists nor reads the job (its log,
 *     its output, its mounts); all they see is the submission's outcome
 *     and, for a failed run, the log tail;
 *   - network_off: its own network namespace with loopback only, whatever
 *     the participant's tier allows;
 *   - fixed_mounts: the competition's hidden test inputs (a dataset version
 *     of the host's, code_competition.inputs) read-only under
 *     /home/aistudio/data/<host>-<slug>, resolved here with the host's
 *     authority (gw__dataset_version_mount); nothing else, and never the
 *     truth (stored outside every dataset and mount);
 *   - uncharged when the competition is free: nothing reserved nor charged;
 *     a charged run goes through the ledger like any job (the scheduler
 *     refunds its own platform failures; a scoring failure of the platform
 *     is refunded by comp's refund hook);
 *   - the competition's resource class (CPU/GPU/memory) and max_runtime_s.
 *
 * A run whose job fails with platform_error (a restart killed it, a node
 * failed) is started again once, then reported as platform_error. Jobs are
 * sched_job_collect'ed once reported; at start the runner takes back every
 * uncollected run (a restart, kill -9 included): still running, it is
 * followed; ended, it is reported, so every in-flight code submission
 * reaches a final state without waiting for the watchdog.
 */
#include "competitions_int.h"
#include "acct.h"
#include "dataset_mounts.h"
#include "proj.h"
#include "quota.h"
#include "sched.h"

#include "ed_error.h"
#include "ed_fs.h"
#include "ed_log.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define RUNS_MAX   8      /* code submissions started at once */
#define RUNS_CAP   64     /* followed at once (more only after a restart) */
#define POLL_MS    500
#define IDEM_PREFIX "comp-code:"

typedef struct run {
    char sid[COMP_ID_LEN], cid[COMP_ID_LEN];
    int64_t user, job;
    int attempt;          /* the submission's retries when claimed (its idem key) */
    int rerun;            /* 0, or 1 once started again after a platform failure */
    bool stale;           /* the submission is no longer this run's: collect the job, report nothing */
} run;

static struct {
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool started, stop;
    gw_server *srv;
    run runs[RUNS_CAP];
    size_t nruns;
} R = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};

/* ---- starting a run ------------------------------------------------------- */

static void fail(comp *c, const char *sid, const char *cls, const char *msg, const char *tail, int64_t charged)
{
    int err = comp_code_fail(c, sid, cls, msg, tail, charged);

    if (err < 0 && err != ED_ECONFLICT)
        ed_log_warn("comp.runner", "sid=%s cannot record the failure: %s", sid, ed_error_last());
    ed_error_clear();
}

static void idem_of(char *out, size_t n, const run *r)
{
    snprintf(out, n, IDEM_PREFIX "%s:%s:%d%s", r->cid, r->sid, r->attempt, r->rerun ? ":r" : "");
}

/* Submit run `r`'s job: the project's version and entry into the work tree,
 * the competition's class, runtime, inputs and charging. 0, or the submit's
 * error with *cls the failure class it means. */
static int submit(gw_server *srv, run *r, const comp_competition *k, const char *pid, const char *ver,
                  const char *entry, const char **cls)
{
    sched_mount m;
    sched_job_spec sp;
    sched_job_info j;
    acct_user u;
    gw_export_ctx ec = {srv->projects, r->user, pid, ver, entry};
    char idem[200];
    int err;

    *cls = COMP_ERR_PLATFORM;
    if ((err = acct_user_get(&u, srv->store, r->user)) < 0)
        return err;
    memset(&sp, 0, sizeof(sp));
    if (k->code_inputs_dataset_id != NULL &&
        (err = gw__dataset_version_mount(&m, srv, k->host_id, k->code_inputs_dataset_id, k->code_inputs_version)) <
            0) {
        /* the host's side: never the participant's fault */
        ed_log_warn("comp.runner", "sid=%s inputs %s v%" PRId64 ": %s", r->sid, k->code_inputs_dataset_id,
                    k->code_inputs_version, ed_error_last());
        return ed_error_set(err, "the competition's test inputs are not available");
    }
    idem_of(idem, sizeof(idem), r);
    sp.user_id = r->user;
    sp.tier = u.tier;
    sp.project_id = pid;
    sp.version = ver;
    sp.entry = entry;
    sp.resource = k->code_resource ? k->code_resource : "cpu-basic";
    sp.max_runtime_ms = k->code_max_runtime_s * 1000;
    sp.idem_key = idem;
    sp.prepare = gw__project_export;
    sp.payload = &ec;
    sp.network_off = true;
    sp.internal = true;
    sp.uncharged = !k->code_charged;
    sp.fixed_mounts = true;
    sp.mounts = k->code_inputs_dataset_id != NULL ? &m : NULL;
    sp.n_mounts = k->code_inputs_dataset_id != NULL ? 1 : 0;
    if ((err = sched_job_submit(&j, srv->sched, &sp)) < 0) {
        /* the participant's side (no funds, a missing entry) or ours */
        *cls = err == ED_EQUOTA || err == ED_EPERM ? COMP_ERR_COMPUTE
               : err == ED_EUNPROC || err == ED_EINVAL || err == ED_ENOTFOUND ? COMP_ERR_EXCEPTION
                                                                                : COMP_ERR_PLATFORM;
        return err;
    }
    r->job = j.id;
    return 0;
}

static void runs_add(const run *r)
{
    pthread_mutex_lock(&R.mu);
    if (R.nruns < RUNS_CAP)
        R.runs[R.nruns++] = *r;
    pthread_mutex_unlock(&R.mu);
}

/* Claim one queued code submission and start its job: 1 when one was
 * claimed (started or failed), 0 when none is queued. */
static int start_one(gw_server *srv)
{
    comp *c = srv->competitions;
    comp_submission *s = NULL;
    comp_competition *k = NULL;
    char *source = NULL;
    const char *cid = NULL, *pid = NULL, *ver = NULL, *entry = NULL, *cls;
    json_t *src = NULL;
    run r = {0};
    int err;

    if ((err = comp_code_claim(&s, &source, c)) < 0 || s == NULL) {
        if (err < 0) {
            ed_log_warn("comp.runner", "claim: %s", ed_error_last());
            ed_error_clear();
        }
        free(source);
        return 0;
    }
    if ((src = json_loads(source ? source : "", 0, NULL)) == NULL ||
        ed_json_get_str(&cid, src, "competition_id", true) < 0 || ed_json_get_str(&pid, src, "project_id", true) < 0 ||
        ed_json_get_str(&ver, src, "version", true) < 0 || ed_json_get_str(&entry, src, "entry", true) < 0) {
        fail(c, s->id, COMP_ERR_PLATFORM, "the submission's source is unreadable", NULL, 0);
        goto out;
    }
    if ((err = comp_competition_get(&k, c, s->user_id, cid)) < 0) {
        fail(c, s->id, COMP_ERR_PLATFORM, ed_error_last(), NULL, 0);
        goto out;
    }
    r.user = s->user_id;
    r.attempt = s->retries;
    snprintf(r.sid, sizeof(r.sid), "%s", s->id);
    snprintf(r.cid, sizeof(r.cid), "%s", k->id);
    if ((err = submit(srv, &r, k, pid, ver, entry, &cls)) < 0) {
        fail(c, s->id, cls, ed_error_last(), NULL, 0);
        goto out;
    }
    runs_add(&r);
    ed_log_info("comp.runner", "sid=%s job=%" PRId64 " started", s->id, r.job);
out:
    json_decref(src);
    comp_competition_free(k);
    comp_submission_free(s);
    free(source);
    return 1;
}

/* ---- finishing a run ------------------------------------------------------- */

/* The last bytes of the job's log (its own output) into `out`. */
static void log_tail(char *out, size_t n, const char *dir)
{
    int root = -1, fd = -1;
    off_t end;
    ssize_t got;

    out[0] = '\0';
    if (dir[0] == '\0' || ed_fs_open_dir(&root, dir) < 0 || ed_fs_open_beneath(&fd, root, "log", O_RDONLY, 0) < 0) {
        ed_error_clear();
        if (root >= 0)
            close(root);
        return;
    }
    close(root);
    end = lseek(fd, 0, SEEK_END);
    if (end > (off_t)(n - 1))
        lseek(fd, end - (off_t)(n - 1), SEEK_SET);
    else
        lseek(fd, 0, SEEK_SET);
    got = read(fd, out, n - 1);
    out[got > 0 ? got : 0] = '\0';
    close(fd);
}

static const char *class_of(const sched_job_info *j)
{
    if (strcmp(j->failure_reason, "timeout") == 0)
        return COMP_ERR_TIMEOUT;
    if (strcmp(j->failure_reason, "out_of_memory") == 0 || strcmp(j->failure_reason, "out_of_funds") == 0 ||
        strcmp(j->failure_reason, "key_budget") == 0 || strcmp(j->failure_reason, "suspended") == 0)
        return COMP_ERR_COMPUTE;
    if (strcmp(j->failure_reason, "user_error") == 0 || (j->has_exit_code && j->exit_code != 0))
        return COMP_ERR_EXCEPTION;
    return COMP_ERR_PLATFORM;
}

static void collect(gw_server *srv, const run *r)
{
    if (sched_job_collect(srv->sched, r->job) < 0) {
        ed_log_warn("comp.runner", "sid=%s job=%" PRId64 " collect: %s", r->sid, r->job, ed_error_last());
        ed_error_clear();
    }
}

/* A platform failure of the first try: the same run again, once. 1 when it
 * was started again (r->job is the new job), 0 otherwise. */
static int rerun(gw_server *srv, run *r, const sched_job_info *j)
{
    comp_competition *k = NULL;
    const char *cls;
    int err;

    if (r->rerun || comp_competition_get(&k, srv->competitions, r->user, r->cid) < 0) {
        ed_error_clear();
        return 0;
    }
    r->rerun = 1;
    err = submit(srv, r, k, j->project_id, j->version[0] ? j->version : NULL, j->entry, &cls);
    comp_competition_free(k);
    if (err < 0) {
        ed_log_warn("comp.runner", "sid=%s rerun: %s", r->sid, ed_error_last());
        ed_error_clear();
        return 0;
    }
    ed_log_info("comp.runner", "sid=%s job=%" PRId64 " failed with platform_error; started again as job %" PRId64,
                r->sid, j->id, r->job);
    return 1;
}

/* Whether submission r->sid is still running this run's attempt (a read
 * that fails says yes: the report decides then). */
static bool still_ours(comp *c, const run *r)
{
    comp_submission *s = NULL;
    bool ours;

    if (comp_submission_get(&s, c, r->user, r->cid, r->sid) < 0) {
        ed_error_clear();
        return true;
    }
    ours = s->status == COMP_RUNNING && s->retries == r->attempt;
    comp_submission_free(s);
    return ours;
}

/* 1 when the run's job ended and was reported, 0 while it runs (r->job may
 * change: a rerun). */
static int finish_one(gw_server *srv, run *r)
{
    comp *c = srv->competitions;
    sched_job_info j;
    comp_competition *k = NULL;
    char dir[700], path[760], msg[400];
    static __thread char tail[COMP_LOG_TAIL_MAX];
    int root = -1, fd = -1, err;

    if (sched_job_get(&j, srv->sched, 0, r->job) < 0) {
        if (!r->stale)
            fail(c, r->sid, COMP_ERR_PLATFORM, "the run's job is gone", NULL, 0);
        ed_error_clear();
        return 1;
    }
    if (strcmp(j.status, "queued") == 0 || strcmp(j.status, "running") == 0) {
        /* the watchdog gave up on this attempt (requeued or failed it): stop
         * its job rather than run it for nothing */
        if (!r->stale && !still_ours(c, r)) {
            sched_job_info x;
            r->stale = true;
            ed_log_info("comp.runner", "sid=%s job=%" PRId64 " superseded: cancelled", r->sid, r->job);
            if (sched_job_cancel(&x, srv->sched, 0, r->job) < 0)
                ed_error_clear();
        }
        return 0;
    }
    if (r->stale) {
        collect(srv, r);
        return 1;
    }
    if (strcmp(j.failure_reason, "platform_error") == 0 && rerun(srv, r, &j)) {
        sched_job_collect(srv->sched, j.id);
        ed_error_clear();
        return 0;
    }
    if (sched_job_dir(dir, sizeof(dir), srv->sched, r->job) < 0) {
        ed_error_clear();
        dir[0] = '\0';
    }
    if (strcmp(j.status, "succeeded") != 0) {
        const char *st = strcmp(j.status, "failed") == 0 ? "failed" : j.status;
        log_tail(tail, sizeof(tail), dir);
        if (j.has_exit_code)
            snprintf(msg, sizeof(msg), "the run %s (%s, exit code %d)", st,
                     j.failure_reason[0] ? j.failure_reason : "error", j.exit_code);
        else
            snprintf(msg, sizeof(msg), "the run %s (%s)", st, j.failure_reason[0] ? j.failure_reason : "error");
        fail(c, r->sid, class_of(&j), msg, tail, j.charged_mcoins);
        collect(srv, r);
        return 1;
    }
    if ((err = comp_competition_get(&k, c, r->user, r->cid)) < 0) {
        fail(c, r->sid, COMP_ERR_PLATFORM, "the competition cannot be read", NULL, j.charged_mcoins);
        collect(srv, r);
        return 1;
    }
    snprintf(path, sizeof(path), "%s/output", dir);
    if (dir[0] == '\0' || ed_fs_open_dir(&root, path) < 0 ||
        ed_fs_open_beneath(&fd, root, k->code_output_path ? k->code_output_path : "submission.csv", O_RDONLY, 0) <
            0) {
        snprintf(msg, sizeof(msg), "the run wrote no %s in its output directory ($EDDY_OUTPUT_DIR)",
                 k->code_output_path ? k->code_output_path : "submission.csv");
        ed_error_clear();
        if (root >= 0)
            close(root);
        log_tail(tail, sizeof(tail), dir);
        fail(c, r->sid, COMP_ERR_MISSING_OUTPUT, msg, tail, j.charged_mcoins);
    } else {
        close(root);
        if ((err = comp_code_output_fd(c, r->sid, fd, j.charged_mcoins)) < 0 && err != ED_ECONFLICT)
            ed_log_warn("comp.runner", "sid=%s output: %s", r->sid, ed_error_last());
        ed_error_clear();
        close(fd);
    }
    comp_competition_free(k);
    collect(srv, r);
    return 1;
}

/* ---- taking runs back after a restart -------------------------------------- */

/* An uncollected run: IDEM_PREFIX "<cid>:<sid>:<attempt>[:r]". Followed when
 * its submission is still running this attempt; otherwise stale (cancelled
 * if it still runs, collected once it ended). */
static int adopt(const sched_job_info *j, void *payload)
{
    gw_server *srv = payload;
    comp_submission *s = NULL;
    run r = {.user = j->user_id, .job = j->id};
    const char *p = j->idem_key + strlen(IDEM_PREFIX), *a, *b;
    char *end = NULL;

    if ((a = strchr(p, ':')) == NULL || (b = strchr(a + 1, ':')) == NULL || (size_t)(a - p) >= sizeof(r.cid) ||
        (size_t)(b - a - 1) >= sizeof(r.sid))
        return 0;
    snprintf(r.cid, sizeof(r.cid), "%.*s", (int)(a - p), p);
    snprintf(r.sid, sizeof(r.sid), "%.*s", (int)(b - a - 1), a + 1);
    r.attempt = (int)strtol(b + 1, &end, 10);
    r.rerun = end != NULL && strcmp(end, ":r") == 0;
    if (comp_submission_get(&s, srv->competitions, r.user, r.cid, r.sid) < 0 || s->status != COMP_RUNNING ||
        s->retries != r.attempt) {
        sched_job_info x;
        ed_error_clear();
        r.stale = true;     /* gone, or the watchdog moved it on */
        if ((strcmp(j->status, "queued") == 0 || strcmp(j->status, "running") == 0) &&
            sched_job_cancel(&x, srv->sched, 0, j->id) < 0)
            ed_error_clear();
    }
    comp_submission_free(s);
    pthread_mutex_lock(&R.mu);
    if (R.nruns >= RUNS_CAP) {
        pthread_mutex_unlock(&R.mu);
        return 1;   /* the rest after these: the watchdog's deadline covers them meanwhile */
    }
    R.runs[R.nruns++] = r;
    pthread_mutex_unlock(&R.mu);
    ed_log_info("comp.runner", "sid=%s job=%" PRId64 " taken back after a restart (%s, %s)", r.sid, r.job, j->status,
                r.stale ? "stale" : "followed");
    return 0;
}

static void *runner_main(void *arg)
{
    gw_server *srv = arg;

    if (sched_job_each_uncollected(srv->sched, IDEM_PREFIX, adopt, srv) < 0) {
        ed_log_warn("comp.runner", "taking runs back: %s", ed_error_last());
        ed_error_clear();
    }
    pthread_mutex_lock(&R.mu);
    while (!R.stop) {
        struct timespec until;
        size_t n = R.nruns, active = 0;
        pthread_mutex_unlock(&R.mu);
        /* the runs: report those that ended (the list only this thread changes) */
        for (size_t i = 0; i < n;) {
            run r;
            pthread_mutex_lock(&R.mu);
            r = R.runs[i];
            pthread_mutex_unlock(&R.mu);
            if (finish_one(srv, &r)) {
                pthread_mutex_lock(&R.mu);
                R.runs[i] = R.runs[--R.nruns];
                pthread_mutex_unlock(&R.mu);
                n--;
            } else {
                pthread_mutex_lock(&R.mu);
                R.runs[i] = r;      /* a rerun's new job */
                pthread_mutex_unlock(&R.mu);
                i++;
            }
        }
        pthread_mutex_lock(&R.mu);
        active = R.nruns;
        pthread_mutex_unlock(&R.mu);
        while (active < RUNS_MAX && start_one(srv) > 0) {
            pthread_mutex_lock(&R.mu);
            active = R.nruns;
            pthread_mutex_unlock(&R.mu);
        }
        pthread_mutex_lock(&R.mu);
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_nsec += POLL_MS * 1000000L;
        if (until.tv_nsec >= 1000000000L) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000L;
        }
        if (!R.stop)
            pthread_cond_timedwait(&R.cv, &R.mu, &until);
    }
    pthread_mutex_unlock(&R.mu);
    return NULL;
}

int gw__competitions_runner_start(gw_server *srv)
{
    if (srv->competitions == NULL || srv->sched == NULL || R.started)
        return 0;
    R.srv = srv;
    R.stop = false;
    R.nruns = 0;
    if (pthread_create(&R.thread, NULL, runner_main, srv) != 0)
        return ed_error_set(ED_EIO, "cannot start the code submissions' runner");
    R.started = true;
    return 0;
}

void gw__competitions_runner_stop(gw_server *srv)
{
    if (!R.started || R.srv != srv)
        return;
    pthread_mutex_lock(&R.mu);
    R.stop = true;
    pthread_cond_signal(&R.cv);
    pthread_mutex_unlock(&R.mu);
    pthread_join(R.thread, NULL);
    R.started = false;
    R.nruns = 0;   /* their jobs stay uncollected: the next start takes them back */
}
