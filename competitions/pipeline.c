/*
 * pipeline.c - a submission's way through the states: claimed (queued ->
 * validating, or running for code), scored through score.h, stored; and the
 * worker thread (see comp.h).
 *
 * Every claim bumps `attempt`; every later write says WHERE attempt = the
 * claimed one AND status = the claimed state, so a worker the watchdog gave
 * up on (and requeued) cannot overwrite the newer attempt's outcome.
 */
#include "comp_int.h"

#include "ed_error.h"
#include "ed_fs.h"
#include "ed_log.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef struct claim_ctx {
    comp *c;
    const char *kind;           /* "csv" or "code" */
    char sid[COMP_ID_LEN], id[COMP_ID_LEN];
    int64_t attempt;
    char *source;
    bool found;
} claim_ctx;

static int claim_body(void *p)
{
    claim_ctx *x = p;
    sqlite3_stmt *s = NULL;
    int64_t now = comp__now(x->c), deadline, runtime = 0;
    int rc, err;

    x->found = false;
    free(x->source);
    x->source = NULL;
    if ((err = ed_store_prepare(&s, x->c->st,
            "SELECT s.id, s.comp_id, s.attempt, s.source, k.code_max_runtime_s FROM comp_submissions s "
            "JOIN competitions k ON k.id = s.comp_id WHERE s.status = 'queued' AND s.kind = ?1 "
            "ORDER BY s.created_at, s.id LIMIT 1")) < 0)
        return err;
    sqlite3_bind_text(s, 1, x->kind, -1, SQLITE_STATIC);
    rc = ed_store_step(s);
    if (rc == SQLITE_ROW) {
        snprintf(x->sid, sizeof(x->sid), "%s", (const char *)sqlite3_column_text(s, 0));
        snprintf(x->id, sizeof(x->id), "%s", (const char *)sqlite3_column_text(s, 1));
        x->attempt = sqlite3_column_int64(s, 2) + 1;
        if (sqlite3_column_text(s, 3) != NULL)
            x->source = strdup((const char *)sqlite3_column_text(s, 3));
        runtime = sqlite3_column_int64(s, 4);
    }
    sqlite3_finalize(s);
    if (rc == SQLITE_DONE)
        return 0;
    if (rc != SQLITE_ROW)
        return comp__db_error(x->c, rc, "claim a submission");
    deadline = strcmp(x->kind, "code") == 0 ? now + runtime * 1000 + x->c->limits.running_margin_ms
                                            : now + x->c->limits.validating_ms;
    if ((err = comp__exec(x->c, "UPDATE comp_submissions SET status = ?2, attempt = ?3, state_deadline = ?4 "
                                "WHERE id = ?1 AND status = 'queued'", "ttii", x->sid,
                          strcmp(x->kind, "code") == 0 ? "running" : "validating", x->attempt, deadline)) < 0)
        return err;
    x->found = true;
    return 0;
}

typedef struct finish_ctx {
    comp *c;
    const char *sid, *id;
    int64_t attempt;
    const char *from;           /* the state the claim holds */
    comp_status to;
    const char *cls, *message, *log_tail;
    bool has_scores;
    comp_score_result r;
    bool counted;
    int64_t charged;
    bool refund;
    bool stale;
} finish_ctx;

static int finish_body(void *p)
{
    finish_ctx *x = p;
    sqlite3_stmt *s = NULL;
    char key[64];
    int rc, err;

    x->stale = false;
    snprintf(key, sizeof(key), "comp-refund-%s", x->sid);
    if ((err = ed_store_prepare(&s, x->c->st,
            "UPDATE comp_submissions SET status = ?4, error_class = ?5, error_message = ?6, log_tail = ?7, "
            "public_score = ?8, private_score = ?9, metric_version = ?10, counted = ?11, state_deadline = 0, "
            "charged_mcoins = ?12, refund_key = ?13, refund_state = ?14 "
            "WHERE id = ?1 AND attempt = ?2 AND status = ?3")) < 0)
        return err;
    sqlite3_bind_text(s, 1, x->sid, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(s, 2, x->attempt);
    sqlite3_bind_text(s, 3, x->from, -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 4, comp_status_name(x->to), -1, SQLITE_STATIC);
    if (x->cls != NULL)
        sqlite3_bind_text(s, 5, x->cls, -1, SQLITE_TRANSIENT);
    if (x->message != NULL)
        sqlite3_bind_text(s, 6, x->message, (int)strnlen(x->message, COMP_MESSAGE_MAX), SQLITE_TRANSIENT);
    if (x->log_tail != NULL) {
        size_t n = strlen(x->log_tail);
        const char *t = n > COMP_LOG_TAIL_MAX ? x->log_tail + n - COMP_LOG_TAIL_MAX : x->log_tail;
        sqlite3_bind_text(s, 7, t, -1, SQLITE_TRANSIENT);
    }
    if (x->has_scores && !isnan(x->r.public_score))
        sqlite3_bind_double(s, 8, x->r.public_score);
    if (x->has_scores && !isnan(x->r.private_score))
        sqlite3_bind_double(s, 9, x->r.private_score);
    sqlite3_bind_int(s, 10, x->has_scores ? x->r.metric_version : 0);
    sqlite3_bind_int(s, 11, x->counted);
    sqlite3_bind_int64(s, 12, x->charged);
    if (x->refund && x->charged > 0) {
        sqlite3_bind_text(s, 13, key, -1, SQLITE_TRANSIENT);
        sqlite3_bind_int(s, 14, 1);
    } else {
        sqlite3_bind_int(s, 14, 0);
    }
    rc = ed_store_step(s);
    sqlite3_finalize(s);
    if (rc != SQLITE_DONE)
        return comp__db_error(x->c, rc, "store the outcome");
    if (sqlite3_changes(ed_store_db(x->c->st)) == 0) {
        x->stale = true;    /* the watchdog took it meanwhile */
        return 0;
    }
    if (x->to == COMP_SCORED) {
        int64_t team = 0;
        if ((err = comp__int(&team, x->c, 0, "SELECT team_id FROM comp_submissions WHERE id = ?1", "t", x->sid)) < 0)
            return err;
        return comp__best_refresh(x->c, x->id, team);
    }
    return 0;
}

/* Score the file at `fd` for a claimed submission and store the outcome. */
static int score_and_finish(comp *c, const char *id, const char *sid, int64_t attempt, const char *from, int fd,
                            int64_t charged)
{
    const comp_truth *t = NULL;
    comp_score_error e;
    comp__info k;
    finish_ctx f = {.c = c, .sid = sid, .id = id, .attempt = attempt, .from = from, .charged = charged};
    char scorer_msg[200];
    off_t off = lseek(fd, 0, SEEK_CUR);
    int err;

    memset(&e, 0, sizeof(e));
    if (off < 0)
        off = 0;
    if ((err = comp__info_get(&k, c, id)) < 0)
        return err;
    if ((err = comp__truth_get(&t, c, id)) < 0) {
        /* The host's side (a missing truth): never the participant's fault. */
        ed_log_error("comp.score", "submission %s: truth: %s", sid, ed_error_last());
        f.to = COMP_FAILED;
        f.cls = COMP_ERR_SCORING;
        f.message = "the competition's ground truth could not be loaded";
    } else if ((err = comp_score_submission(&f.r, &e, t, fd)) == 0 && k.scorer_direction[0] == '\0') {
        f.to = COMP_SCORED;
        f.has_scores = true;
        f.counted = true;
    } else if (err == 0) {
        /* Valid: the host's program scores it (scorer.c); nothing of its
         * output passes but the score, or a fixed message. */
        const char *fail = NULL;
        if ((err = comp__scorer_score(&f.r, &fail, scorer_msg, sizeof(scorer_msg), c, id, &k, t, fd, off)) < 0) {
            ed_log_error("comp.score", "submission %s: scoring program: %s", sid, ed_error_last());
            f.to = COMP_FAILED;
            f.cls = COMP_ERR_PLATFORM;
            f.message = "the scoring program could not be run (a platform error); it does not count";
            f.refund = true;
        } else if (fail != NULL) {
            f.to = COMP_FAILED;
            f.cls = COMP_ERR_SCORING;
            f.message = fail;
        } else {
            f.to = COMP_SCORED;
            f.has_scores = true;
            f.counted = true;
        }
    } else if (err == ED_EUNPROC) {
        /* score.h's message quotes only the submission, never the truth */
        f.to = COMP_INVALID;
        f.cls = COMP_ERR_INVALID_OUTPUT;
        f.message = e.message;
        f.counted = k.invalid_counts;
    } else {
        f.to = COMP_FAILED;
        f.cls = COMP_ERR_PLATFORM;
        f.message = "the submission could not be scored (a platform error); it does not count";
        f.refund = true;
    }
    if ((err = ed_store_tx(c->st, finish_body, &f)) < 0)
        return err;
    if (f.stale)
        ed_log_info("comp.score", "submission %s: result dropped, the watchdog took it", sid);
    return 0;
}

int comp_work_once(comp *c)
{
    claim_ctx x = {.c = c, .kind = "csv"};
    int dir = -1, fd = -1, err;
    char name[64];

    if ((err = ed_store_tx(c->st, claim_body, &x)) < 0) {
        free(x.source);
        return err;
    }
    free(x.source);
    if (!x.found)
        return 0;
    snprintf(name, sizeof(name), "%s.csv", x.sid);
    if ((err = comp__sub_dir(&dir, c, x.id, false)) == 0) {
        err = ed_fs_open_beneath(&fd, dir, name, O_RDONLY, 0);
        close(dir);
    }
    if (err < 0) {
        finish_ctx f = {.c = c, .sid = x.sid, .id = x.id, .attempt = x.attempt, .from = "validating",
                        .to = COMP_FAILED, .cls = COMP_ERR_PLATFORM,
                        .message = "the submitted file is missing (a platform error); it does not count"};
        ed_log_error("comp.score", "submission %s: %s", x.sid, ed_error_last());
        if ((err = ed_store_tx(c->st, finish_body, &f)) < 0)
            return err;
        return 1;
    }
    err = score_and_finish(c, x.id, x.sid, x.attempt, "validating", fd, 0);
    close(fd);
    return err < 0 ? err : 1;
}

/* ---- code submissions ---------------------------------------------------- */

int comp_code_claim(comp_submission **out, char **out_source, comp *c)
{
    claim_ctx x = {.c = c, .kind = "code"};
    sqlite3_stmt *s = NULL;
    int rc, err;

    *out = NULL;
    *out_source = NULL;
    if ((err = ed_store_tx(c->st, claim_body, &x)) < 0) {
        free(x.source);
        return err;
    }
    if (!x.found) {
        free(x.source);
        return 0;
    }
    if ((err = ed_store_prepare(&s, c->st, "SELECT " COMP__SUB_COLS " FROM comp_submissions WHERE id = ?1")) < 0) {
        free(x.source);
        return err;
    }
    sqlite3_bind_text(s, 1, x.sid, -1, SQLITE_TRANSIENT);
    rc = ed_store_step(s);
    err = rc == SQLITE_ROW ? comp__submission_row(out, s) : comp__db_error(c, rc, "read submission");
    sqlite3_finalize(s);
    if (err < 0) {
        free(x.source);
        return err;
    }
    *out_source = x.source;
    return 0;
}

/* The running claim of a code submission: its competition and attempt. */
static int running_of(char id[COMP_ID_LEN], int64_t *attempt, comp *c, const char *sid)
{
    sqlite3_stmt *s = NULL;
    int rc, err;

    if ((err = ed_store_prepare(&s, c->st, "SELECT comp_id, attempt FROM comp_submissions WHERE id = ?1 AND "
                                           "kind = 'code' AND status = 'running'")) < 0)
        return err;
    sqlite3_bind_text(s, 1, sid != NULL ? sid : "", -1, SQLITE_TRANSIENT);
    rc = ed_store_step(s);
    if (rc == SQLITE_ROW) {
        snprintf(id, COMP_ID_LEN, "%s", (const char *)sqlite3_column_text(s, 0));
        *attempt = sqlite3_column_int64(s, 1);
    }
    sqlite3_finalize(s);
    if (rc == SQLITE_DONE)
        return ed_error_set(ED_ECONFLICT, "submission %.40s is not running", sid != NULL ? sid : "");
    return rc == SQLITE_ROW ? 0 : comp__db_error(c, rc, "read submission");
}

int comp_code_output_fd(comp *c, const char *sid, int fd, int64_t charged_mcoins)
{
    char id[COMP_ID_LEN];
    int64_t attempt = 0;
    int err;

    if ((err = running_of(id, &attempt, c, sid)) < 0)
        return err;
    if ((err = comp__exec(c, "UPDATE comp_submissions SET status = 'scoring', state_deadline = ?3, "
                             "charged_mcoins = ?4 WHERE id = ?1 AND attempt = ?2 AND status = 'running'", "tiii",
                          sid, attempt, comp__now(c) + c->limits.scoring_ms, charged_mcoins)) < 0)
        return err;
    if (sqlite3_changes(ed_store_db(c->st)) == 0)
        return ed_error_set(ED_ECONFLICT, "submission %s is not running", sid);
    return score_and_finish(c, id, sid, attempt, "scoring", fd, charged_mcoins);
}

int comp_code_fail(comp *c, const char *sid, const char *error_class, const char *message, const char *log_tail,
                   int64_t charged_mcoins)
{
    static const char *const classes[] = {COMP_ERR_TIMEOUT, COMP_ERR_EXCEPTION, COMP_ERR_MISSING_OUTPUT,
                                          COMP_ERR_INVALID_OUTPUT, COMP_ERR_SCORING, COMP_ERR_COMPUTE,
                                          COMP_ERR_PLATFORM};
    char id[COMP_ID_LEN];
    finish_ctx f = {.c = c, .sid = sid, .from = "running", .to = COMP_FAILED, .message = message,
                    .log_tail = log_tail, .charged = charged_mcoins};
    bool known = false;
    int err;

    for (size_t i = 0; error_class != NULL && i < sizeof(classes) / sizeof(classes[0]); i++)
        known = known || strcmp(error_class, classes[i]) == 0;
    if (!known)
        return ed_error_set(ED_EINVAL, "unknown failure class '%.40s'", error_class != NULL ? error_class : "");
    if ((err = running_of(id, &f.attempt, c, sid)) < 0)
        return err;
    f.id = id;
    f.cls = error_class;
    /* A failure gives the slot back; the charge only when the platform is at fault. */
    f.refund = strcmp(error_class, COMP_ERR_PLATFORM) == 0;
    if ((err = ed_store_tx(c->st, finish_body, &f)) < 0)
        return err;
    return f.stale ? ed_error_set(ED_ECONFLICT, "submission %s is not running", sid) : 0;
}

/* ---- the worker ---------------------------------------------------------- */

static void *worker_main(void *p)
{
    comp *c = p;
    int64_t next_watchdog = 0;

    pthread_mutex_lock(&c->mu);
    while (!c->stop) {
        pthread_mutex_unlock(&c->mu);
        int64_t now = comp__now(c);
        if (now >= next_watchdog) {
            if (comp_watchdog_run(NULL, c) < 0)
                ed_log_error("comp.watchdog", "%s", ed_error_last());
            next_watchdog = now + c->watchdog_ms;
        }
        int n = comp_work_once(c);
        if (n < 0)
            ed_log_error("comp.score", "%s", ed_error_last());
        pthread_mutex_lock(&c->mu);
        if (n == 1 || c->stop)
            continue;
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        int64_t wait_ms = c->watchdog_ms < 1000 ? c->watchdog_ms : 1000;
        ts.tv_sec += wait_ms / 1000;
        ts.tv_nsec += (long)(wait_ms % 1000) * 1000000L;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&c->cv, &c->mu, &ts);
    }
    pthread_mutex_unlock(&c->mu);
    return NULL;
}

int comp_worker_start(comp *c, int64_t watchdog_ms)
{
    int rc;

    pthread_mutex_lock(&c->mu);
    if (c->worker_running) {
        pthread_mutex_unlock(&c->mu);
        return ed_error_set(ED_ECONFLICT, "the worker is already running");
    }
    c->watchdog_ms = watchdog_ms > 0 ? watchdog_ms : 30000;
    c->stop = false;
    if ((rc = pthread_create(&c->worker, NULL, worker_main, c)) != 0) {
        pthread_mutex_unlock(&c->mu);
        return ed_error_set(ED_EIO, "start the competitions worker: %s", strerror(rc));
    }
    c->worker_running = true;
    pthread_mutex_unlock(&c->mu);
    return 0;
}

void comp__worker_stop(comp *c)
{
    pthread_mutex_lock(&c->mu);
    if (!c->worker_running) {
        pthread_mutex_unlock(&c->mu);
        return;
    }
    c->stop = true;
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
    pthread_join(c->worker, NULL);
    c->worker_running = false;
}
