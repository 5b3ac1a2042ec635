/*
 * competitions_runner.c - code submissions as scheduler jobs (issue 16
 * item 5), through sched.h's public API only.
 *
 * One thread: it claims queued code submissions (comp_code_claim: ->
 * running, with the competition's max_runtime_s + a margin as the
 * watchdog's deadline), starts each as a job of its participant (the
 * project's version exported into the job's work tree, the competition's
 * resource class and runtime), polls the jobs, and reports: the file the
 * run wrote at the competition's output_path, opened beneath the job's
 * output with ed_fs_open_beneath, goes to comp_code_output_fd (validated and
 * scored like a CSV); otherwise comp_code_fail with the class and the tail
 * of the job's log (the participant's own output; the truth is never in
 * the job: it is stored outside every dataset and mount).
 *
 * What the scheduler's public API cannot do yet (gateway/README.md
 * "Competitions"): switch the network off per job (egress follows the
 * tier), mount inputs other than the project's attached datasets, run
 * uncharged (a free competition's run is charged, then refunded here with
 * the ledger key "comp-free-<sid>-<try>"), and keep the submission's job
 * across a restart (the claim is in memory: after a crash the watchdog
 * requeues the submission past its deadline and it runs again).
 */
#include "competitions_int.h"
#include "acct.h"
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

#define RUNS_MAX 8      /* code submissions running at once */
#define POLL_MS  500

typedef struct run {
    char sid[COMP_ID_LEN];
    int64_t user, job;
    int attempt;
    bool charged;
    char output_path[256];
} run;

static struct {
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool started, stop;
    gw_server *srv;
    run runs[RUNS_MAX];
    size_t nruns;
} R = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};

/* ---- starting a run ------------------------------------------------------- */

static void fail(comp *c, const char *sid, const char *cls, const char *msg, const char *tail)
{
    if (comp_code_fail(c, sid, cls, msg, tail, 0) < 0) {
        ed_log_warn("comp.runner", "sid=%s cannot record the failure: %s", sid, ed_error_last());
        ed_error_clear();
    }
}

/* Claim one queued code submission and start its job: 1 when one was
 * claimed (started or failed), 0 when none is queued. */
static int start_one(gw_server *srv)
{
    comp *c = srv->competitions;
    comp_submission *s = NULL;
    comp_competition *k = NULL;
    char *source = NULL, idem[96];
    const char *cid = NULL, *pid = NULL, *ver = NULL, *entry = NULL;
    json_t *src = NULL;
    acct_user u;
    sched_job_info j;
    sched_job_spec sp;
    gw_export_ctx ec;
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
        fail(c, s->id, COMP_ERR_PLATFORM, "the submission's source is unreadable", NULL);
        goto out;
    }
    if ((err = comp_competition_get(&k, c, s->user_id, cid)) < 0 || (err = acct_user_get(&u, srv->store, s->user_id)) < 0) {
        fail(c, s->id, COMP_ERR_PLATFORM, ed_error_last(), NULL);
        goto out;
    }
    ec = (gw_export_ctx){srv->projects, s->user_id, pid, ver, entry};
    snprintf(idem, sizeof(idem), "comp-code-%s-%d", s->id, s->retries);
    memset(&sp, 0, sizeof(sp));
    sp.user_id = s->user_id;
    sp.tier = u.tier;
    sp.project_id = pid;
    sp.version = ver;
    sp.entry = entry;
    sp.resource = k->code_resource ? k->code_resource : "cpu-basic";
    sp.max_runtime_ms = k->code_max_runtime_s * 1000;
    sp.idem_key = idem;
    sp.prepare = gw__project_export;
    sp.payload = &ec;
    if ((err = sched_job_submit(&j, srv->sched, &sp)) < 0) {
        /* the participant's side (no funds, a missing entry) or ours */
        fail(c, s->id,
             err == ED_EQUOTA || err == ED_EPERM ? COMP_ERR_COMPUTE
             : err == ED_EUNPROC || err == ED_EINVAL || err == ED_ENOTFOUND ? COMP_ERR_EXCEPTION
                                                                              : COMP_ERR_PLATFORM,
             ed_error_last(), NULL);
        ed_error_clear();
        goto out;
    }
    pthread_mutex_lock(&R.mu);
    R.runs[R.nruns++] = (run){.user = s->user_id, .job = j.id, .attempt = s->retries, .charged = k->code_charged};
    snprintf(R.runs[R.nruns - 1].sid, COMP_ID_LEN, "%s", s->id);
    snprintf(R.runs[R.nruns - 1].output_path, sizeof(R.runs[0].output_path), "%s",
             k->code_output_path ? k->code_output_path : "submission.csv");
    pthread_mutex_unlock(&R.mu);
    ed_log_info("comp.runner", "sid=%s job=%" PRId64 " started", s->id, j.id);
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
    char path[800];
    int fd;
    off_t end;
    ssize_t got;

    out[0] = '\0';
    snprintf(path, sizeof(path), "%s/log", dir);
    if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)) < 0)
        return;
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

/* 1 when the run's job ended and was reported, 0 while it runs. */
static int finish_one(gw_server *srv, const run *r)
{
    comp *c = srv->competitions;
    sched_job_info j;
    char dir[700], path[760], msg[400];
    static __thread char tail[COMP_LOG_TAIL_MAX];
    int root = -1, fd = -1, err;

    if (sched_job_get(&j, srv->sched, r->user, r->job) < 0) {
        fail(c, r->sid, COMP_ERR_PLATFORM, "the run's job is gone", NULL);
        ed_error_clear();
        return 1;
    }
    if (strcmp(j.status, "queued") == 0 || strcmp(j.status, "running") == 0)
        return 0;
    if (sched_job_dir(dir, sizeof(dir), srv->sched, r->job) < 0) {
        ed_error_clear();
        dir[0] = '\0';
    }
    log_tail(tail, sizeof(tail), dir);
    /* A free competition: give the run's charge back, once (the ledger's key). */
    if (!r->charged && j.charged_mcoins > 0) {
        char key[96];
        int64_t transfer = 0;
        snprintf(key, sizeof(key), "comp-free-%s-%d", r->sid, r->attempt);
        if (quota_refund(&transfer, srv->store, r->user, j.charged_mcoins, key, "free competition code run", key) < 0) {
            ed_log_warn("comp.runner", "sid=%s refund of the free run: %s", r->sid, ed_error_last());
            ed_error_clear();
        }
    }
    if (strcmp(j.status, "succeeded") != 0) {
        const char *st = strcmp(j.status, "failed") == 0 ? "failed" : j.status;
        if (j.has_exit_code)
            snprintf(msg, sizeof(msg), "the run %s (%s, exit code %d)", st,
                     j.failure_reason[0] ? j.failure_reason : "error", j.exit_code);
        else
            snprintf(msg, sizeof(msg), "the run %s (%s)", st, j.failure_reason[0] ? j.failure_reason : "error");
        fail(c, r->sid, class_of(&j), msg, tail);
        return 1;
    }
    snprintf(path, sizeof(path), "%s/output", dir);
    if (dir[0] == '\0' || ed_fs_open_dir(&root, path) < 0 ||
        ed_fs_open_beneath(&fd, root, r->output_path, O_RDONLY, 0) < 0) {
        snprintf(msg, sizeof(msg), "the run wrote no %s in its output directory ($EDDY_OUTPUT_DIR)", r->output_path);
        ed_error_clear();
        if (root >= 0)
            close(root);
        fail(c, r->sid, COMP_ERR_MISSING_OUTPUT, msg, tail);
        return 1;
    }
    close(root);
    if ((err = comp_code_output_fd(c, r->sid, fd, 0)) < 0) {
        ed_log_warn("comp.runner", "sid=%s output: %s", r->sid, ed_error_last());
        ed_error_clear();
    }
    close(fd);
    return 1;
}

static void *runner_main(void *arg)
{
    gw_server *srv = arg;

    pthread_mutex_lock(&R.mu);
    while (!R.stop) {
        struct timespec until;
        size_t n = R.nruns;
        pthread_mutex_unlock(&R.mu);
        /* the runs: report those that ended (the list only this thread shrinks) */
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
                i++;
            }
        }
        while (R.nruns < RUNS_MAX && start_one(srv) > 0)
            ;
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
    R.nruns = 0;   /* their submissions stay running: the watchdog requeues them past the deadline */
}
