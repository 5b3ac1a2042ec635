/*
 * kernel_hub.c - interactive kernels inside the gateway (kernel_hub.h).
 *
 * Threads: one reader thread per kernel process (detached, counted) reads
 * frames from the kernel's socket, journals them (one transaction per burst:
 * the first frame blocks, then whatever is already readable, up to
 * BATCH_MAX), then publishes them (ring, state, folds) and wakes subscribers;
 * one culler thread (every TICK_MS) notices kernels whose job ended before
 * their socket came, culls idle kernels, warns and stops kernels past their
 * maximum session. The scheduler thread calls on_socket() when a kernel's
 * process starts.
 *
 * Locks: h->mu guards the kernel list and every kernel's state; k->wmu
 * guards writes to (and the closing of) a kernel's socket; k->jmu orders the
 * journal appends of a kernel. Lock order: the scheduler's mutex, then jmu,
 * then h->mu, then wmu (the hook runs under the scheduler's lock, so the hub
 * never calls the scheduler while holding h->mu).
 */
#include "kernel_hub.h"

#include "kr.h"
#include "proj.h"
#include "proj_ws.h"
#include "sched.h"

#include "ed_error.h"
#include "ed_json.h"
#include "ed_log.h"
#include "ed_time.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#define RING      1024           /* recent messages kept in memory per kernel */
#define RING_MSG_MAX (16 * 1024) /* larger messages are read back from the journal */
#define RING_BYTES (1024 * 1024) /* bytes of messages kept in one kernel's ring */
#define BATCH_MAX 256            /* frames journaled in one transaction */
#define BATCH_BYTES (1024 * 1024) /* bytes of frames held for one transaction */
#define DRAIN_MIN (64 * 1024)    /* while dropping output, larger output frames are read past unparsed */
#define EXEMPT_MAX (64 * 1024)   /* replies and status up to this size pass the output rate limits */
#define SEND_TIMEOUT_MS 5000     /* a caller waits at most this for a kernel to take a message */
#define FOLD_MAX  (8u << 20)     /* output bytes folded into the notebook per cell */
#define RL_BUCKETS 30            /* slices of the output rate window */
#define SWEEP_MS  60000          /* how often dead kernels' journals are swept (at most) */
#define TICK_MS   250
#define FOLD_WRITE_MS 1000       /* a folded notebook is written at most this often while a cell runs */
#define FOLD_RETRY_MAX_MS 8000   /* a failed fold write is tried again after 1, 2, 4, 8, 8... s */
#define FOLD_GIVE_UP 5           /* a finished cell's fold is dropped after this many failed writes in a row */
#define MAX_PENDING 64

typedef struct fold {
    struct fold *next;
    char     msg_id[64];
    char    *path, *cell_id;
    json_t  *outputs;            /* nbformat outputs so far */
    int      exec_count;         /* 0: none yet */
    int64_t  written_ns;
    size_t   bytes;              /* of the messages folded since the last clear_output */
    bool     dirty, done, capped;
    bool     writing;            /* a thread is writing it (outside mu): nobody else writes or frees it */
    int      fails;              /* failed writes in a row */
    int64_t  retry_ns;           /* after a failed write: not before this (monotonic) */
    int64_t  pass;               /* the folds_flush call that last took it */
    /* the last output when it is a stream: kept as growing text (appends are
     * amortised, not a copy of the whole text per message) and made an
     * nbformat output when another output comes or for a write */
    char    *stext;
    size_t   slen, scap;
    char     sname[8];           /* "" when no stream is pending */
} fold;

static void fold_free(fold *f)
{
    if (f == NULL)
        return;
    free(f->path);
    free(f->cell_id);
    json_decref(f->outputs);
    free(f->stext);
    free(f);
}

/* A kernel process's output rate over the configured window, in RL_BUCKETS
 * slices (Jupyter's iopub rate limits). Its reader thread's own. */
typedef struct rate {
    int64_t bucket;              /* number of the current slice (ms / slice) */
    int64_t msgs[RL_BUCKETS], bytes[RL_BUCKETS], raw[RL_BUCKETS];
    int64_t sum_msgs, sum_bytes, sum_raw;   /* admitted messages, their bytes; every frame's bytes */
    bool    msgs_over, bytes_over;          /* dropping output until the rate falls */
    char    noticed[64];                    /* the request last told that its output is dropped */
    int64_t noticed_ms;                     /* when (monotonic ms): at most one notice per window */
} rate;

typedef struct kh_k {
    struct kh_k *next;
    char     id[KH_ID_LEN];
    int64_t  user_id;
    char     tier[32], project_id[64], resource[32];
    int64_t  job_id;             /* current process; 0 while a restart submits */
    int      fd;                 /* gateway end of the current process's socket, -1 none */
    int64_t  fd_job;
    char     state[16];          /* queued | starting | idle | busy | dead */
    char     stop_reason[32];    /* requested or final reason */
    int64_t  created_at, started_at, last_activity_at, ended_at;
    int64_t  idle_ms, max_session_ms;
    bool     warned, stopping;
    bool     stuck;              /* its process stopped reading: sends fail at once (under wmu) */
    int64_t  last_seq;           /* journaled and published */
    int64_t  next_seq;           /* assigned (under jmu) */
    int64_t  ring_seq[RING];
    char    *ring[RING];
    size_t   ring_len[RING], ring_bytes;
    int64_t  journal_bytes;      /* journaled since the last prune (under jmu) */
    int      nsubs, refs, readers;
    struct kh_sub *subs;
    fold    *folds;
    pthread_mutex_t wmu, jmu;
} kh_k;

struct kh_sub {
    struct kh_sub *next;
    kh_hub  *h;
    kh_k    *k;
    int64_t  after;
    void   (*wake)(void *);
    void    *wake_arg;
    char     id_buf[KH_ID_LEN];
    int64_t  stored_last;        /* a kernel no longer in memory: its last seq */
};

typedef struct pending_fd {
    int64_t job_id;
    int     fd;
} pending_fd;

struct kh_hub {
    gw_server      *srv;
    pthread_mutex_t mu;
    pthread_cond_t  cv;          /* new output, a reader ended */
    kh_k           *list;
    pending_fd      pend[MAX_PENDING];
    int             npend;
    int             nthreads;    /* readers + culler running */
    bool            stopping;
    int64_t         swept_ms;    /* last retention sweep (culler thread) */
    int64_t         sweep_ms;    /* EDDY_KERNEL_SWEEP_MS (tests): sweep this often; 0: by the retention */
};

typedef struct reader_arg {
    kh_hub *h;
    kh_k   *k;
    int     fd;
    int64_t job_id;
} reader_arg;

/* ---- helpers --------------------------------------------------------------------- */

static void new_uuid(char out[KH_ID_LEN])
{
    char hex[33];
    kr_msg_new_id(hex);
    snprintf(out, KH_ID_LEN, "%.8s-%.4s-4%.3s-%c%.3s-%.12s", hex, hex + 8, hex + 13,
             "89ab"[hex[16] % 4], hex + 17, hex + 20);
}

static kh_k *find_locked(kh_hub *h, const char *id)
{
    for (kh_k *k = h->list; k; k = k->next)
        if (strcmp(k->id, id) == 0)
            return k;
    return NULL;
}

static bool alive(const kh_k *k)
{
    return strcmp(k->state, "dead") != 0;
}

static void k_free(kh_k *k)
{
    for (int i = 0; i < RING; i++)
        free(k->ring[i]);
    while (k->folds) {
        fold *f = k->folds;
        k->folds = f->next;
        fold_free(f);
    }
    pthread_mutex_destroy(&k->wmu);
    pthread_mutex_destroy(&k->jmu);
    free(k);
}

/* Drop a reference; a dead kernel nobody holds leaves the list. Under mu. */
static void unref_locked(kh_hub *h, kh_k *k)
{
    if (--k->refs > 0 || alive(k))
        return;
    for (kh_k **pp = &h->list; *pp; pp = &(*pp)->next)
        if (*pp == k) {
            *pp = k->next;
            break;
        }
    k_free(k);
}

static void wake_subs_locked(kh_hub *h, kh_k *k)
{
    for (struct kh_sub *s = k->subs; s; s = s->next)
        if (s->wake)
            s->wake(s->wake_arg);
    pthread_cond_broadcast(&h->cv);
}

/* Run one write with text parameters ?1..?3 and integers ?4, ?5 (those the
 * statement does not use are ignored), retrying while the store is busy. */
static int db_exec(kh_hub *h, const char *sql, const char *t1, const char *t2, const char *t3, int64_t n4,
                   int64_t n5)
{
    const char *t[3] = {t1, t2, t3};
    int np, rc, err;
    sqlite3_stmt *q;

    if ((err = ed_store_prepare(&q, h->srv->store, sql)) < 0)
        return err;
    np = sqlite3_bind_parameter_count(q);
    for (int i = 0; i < 3 && i < np; i++)
        if (t[i])
            sqlite3_bind_text(q, i + 1, t[i], -1, SQLITE_STATIC);
    if (np >= 4)
        sqlite3_bind_int64(q, 4, n4);
    if (np >= 5)
        sqlite3_bind_int64(q, 5, n5);
    for (int tries = 0; (rc = sqlite3_step(q)) == SQLITE_BUSY && tries < 100; tries++) {
        sqlite3_reset(q);
        usleep(10000);
    }
    err = rc == SQLITE_DONE ? 0 : ed_store_error(ed_store_db(h->srv->store), rc, "kernels");
    sqlite3_finalize(q);
    return err;
}

/* Mark k dead with `reason` (the requested one wins). Under mu. Returns
 * whether it changed (the caller then persists it outside the lock). */
static bool set_dead_locked(kh_hub *h, kh_k *k, const char *reason)
{
    if (!alive(k))
        return false;
    if (k->stop_reason[0] == '\0')
        snprintf(k->stop_reason, sizeof(k->stop_reason), "%s", reason);
    snprintf(k->state, sizeof(k->state), "dead");
    k->ended_at = ed_now_ms();
    wake_subs_locked(h, k);
    return true;
}

static void persist_dead(kh_hub *h, const char *id, const char *reason, int64_t at)
{
    if (db_exec(h, "UPDATE kernels SET status = 'dead', stop_reason = ?2, ended_at = ?4 WHERE id = ?1", id, reason,
                NULL, at, 0) < 0)
        ed_log_error("kernel.persist", "kernel %s: %s", id, ed_error_last());
}

static int send_msg(kh_hub *h, kh_k *k, const json_t *msg);
static int stop_job(kh_hub *h, int64_t user_id, int64_t job_id);
static int64_t env_ms(const char *name, int64_t dflt);

/* ---- the journal ------------------------------------------------------------------ */

/* Append `n` serialised messages for k with consecutive seqs; then publish.
 * Called with jmu held, mu not held. `msgs` are taken. */
static void journal_publish(kh_hub *h, kh_k *k, char **msgs, json_t **parsed, int n);

static int journal_append(kh_hub *h, kh_k *k, char **msgs, int n, int64_t first_seq)
{
    ed_store *st = h->srv->store;
    sqlite3_stmt *q = NULL;
    int64_t now = ed_now_ms();
    int err, rc = SQLITE_DONE;

    /* Journal commits skip the fsync (synchronous=NORMAL, this transaction
     * only): in WAL mode the rows still survive a crash of eddy itself, and
     * only an OS crash or power loss can drop the last few milliseconds of
     * output. An fsync per burst would otherwise dominate a cell's round
     * trip. Everything else on this connection stays synchronous=FULL. */
    if ((err = ed_store_exec(st, "PRAGMA synchronous=NORMAL")) < 0)
        return err;
    for (int tries = 0;; tries++) {
        if ((err = ed_store_begin(st)) == 0)
            break;
        if (err != ED_EBUSY || tries > 200)
            goto out;
        usleep(5000);
    }
    if ((err = ed_store_prepare(&q, st, "INSERT INTO kernel_journal(kernel_id, seq, at, msg) VALUES (?1, ?2, ?3, ?4)")) < 0) {
        ed_store_rollback(st);
        goto out;
    }
    for (int i = 0; i < n && rc == SQLITE_DONE; i++) {
        sqlite3_reset(q);
        sqlite3_bind_text(q, 1, k->id, -1, SQLITE_STATIC);
        sqlite3_bind_int64(q, 2, first_seq + i);
        sqlite3_bind_int64(q, 3, now);
        sqlite3_bind_text(q, 4, msgs[i], -1, SQLITE_STATIC);
        rc = sqlite3_step(q);
    }
    sqlite3_finalize(q);
    if (rc != SQLITE_DONE) {
        err = ed_store_error(ed_store_db(st), rc, "journal");
        ed_store_rollback(st);
        goto out;
    }
    err = ed_store_commit(st);   /* rolls back on failure; BEGIN IMMEDIATE holds the lock */
out:
    ed_store_exec(st, "PRAGMA synchronous=FULL");
    return err;
}

/* ---- folding outputs into the notebook ------------------------------------------- */

static json_t *nb_output(const char *type, const json_t *content)
{
    if (strcmp(type, "stream") == 0)
        return json_pack("{s:s, s:O, s:O}", "output_type", "stream", "name", json_object_get(content, "name"),
                         "text", json_object_get(content, "text"));
    if (strcmp(type, "execute_result") == 0)
        return json_pack("{s:s, s:O, s:O, s:o}", "output_type", "execute_result", "execution_count",
                         json_object_get(content, "execution_count"), "data", json_object_get(content, "data"),
                         "metadata", json_object());
    if (strcmp(type, "display_data") == 0)
        return json_pack("{s:s, s:O, s:o}", "output_type", "display_data", "data", json_object_get(content, "data"),
                         "metadata", json_object());
    if (strcmp(type, "error") == 0)
        return json_pack("{s:s, s:O, s:O, s:O}", "output_type", "error", "ename", json_object_get(content, "ename"),
                         "evalue", json_object_get(content, "evalue"), "traceback",
                         json_object_get(content, "traceback"));
    return NULL;
}

/* The pending stream of f as an nbformat output (new reference). */
static json_t *stream_output(const fold *f)
{
    return json_pack("{s:s, s:s, s:s%}", "output_type", "stream", "name", f->sname, "text", f->stext ? f->stext : "",
                     f->slen);
}

/* Make f's pending stream its last output. */
static void stream_settle(fold *f)
{
    if (f->sname[0])
        json_array_append_new(f->outputs, stream_output(f));
    f->sname[0] = '\0';
    f->slen = 0;
    if (f->scap > (1u << 20)) {
        free(f->stext);
        f->stext = NULL;
        f->scap = 0;
    }
}

/* Apply one message (`len` bytes of JSON) to its fold (under mu). A cell's
 * folded outputs stop at FOLD_MAX bytes with one note saying so. */
static void fold_apply_locked(kh_k *k, const json_t *m, size_t len)
{
    const char *parent = json_string_value(json_object_get(json_object_get(m, "parent_header"), "msg_id"));
    const char *type = kr_msg_type(m);
    const json_t *content = json_object_get(m, "content");
    fold *f;

    if (parent == NULL)
        return;
    for (f = k->folds; f; f = f->next)
        if (!f->done && strcmp(f->msg_id, parent) == 0)
            break;
    if (f == NULL)
        return;
    if (strcmp(type, "execute_input") == 0) {
        f->exec_count = (int)json_integer_value(json_object_get(content, "execution_count"));
        f->dirty = true;
    } else if (strcmp(type, "clear_output") == 0) {
        json_array_clear(f->outputs);
        f->sname[0] = '\0';
        f->slen = 0;
        f->bytes = 0;
        f->capped = false;
        f->dirty = true;
    } else if (strcmp(type, "execute_reply") == 0) {
        if (json_is_integer(json_object_get(content, "execution_count")))
            f->exec_count = (int)json_integer_value(json_object_get(content, "execution_count"));
        f->done = f->dirty = true;
        f->fails = 0;   /* the final outputs get the whole budget of tries, at once */
        f->retry_ns = 0;
    } else {
        const char *name = json_string_value(json_object_get(content, "name"));
        const json_t *text = json_object_get(content, "text");
        bool stream = strcmp(type, "stream") == 0;
        json_t *o = stream ? NULL : nb_output(type, content);
        if (f->capped || (stream ? name == NULL || strlen(name) >= sizeof(f->sname) || !json_is_string(text)
                                 : o == NULL)) {
            json_decref(o);
            return;
        }
        if (f->bytes + len > FOLD_MAX) {
            json_decref(o);
            stream_settle(f);
            f->capped = f->dirty = true;
            json_array_append_new(f->outputs,
                                  json_pack("{s:s, s:s, s:s}", "output_type", "stream", "name", "stderr", "text",
                                            "[eddy] this cell's outputs past 8 MiB are not saved in the notebook "
                                            "(the kernel's journal has them while it keeps them).\n"));
            return;
        }
        f->bytes += len;
        if (stream) {
            /* consecutive stream outputs of one name are one output in nbformat */
            size_t tl = json_string_length(text);
            if (f->sname[0] && strcmp(f->sname, name) != 0)
                stream_settle(f);
            if (f->slen + tl + 1 > f->scap) {
                size_t cap = f->scap ? f->scap : 1024;
                while (cap < f->slen + tl + 1)
                    cap *= 2;
                char *nt = realloc(f->stext, cap);
                if (nt == NULL)
                    return;   /* this piece is lost from the notebook; the journal has it */
                f->stext = nt;
                f->scap = cap;
            }
            memcpy(f->stext + f->slen, json_string_value(text), tl);
            f->slen += tl;
            f->stext[f->slen] = '\0';
            snprintf(f->sname, sizeof(f->sname), "%s", name);
        } else {
            stream_settle(f);
            json_array_append_new(f->outputs, o);
        }
        f->dirty = true;
    }
}

/* Write the cell's outputs into the working-tree notebook: 0, or an error
 * (ed_error_last() says why); the caller keeps the fold dirty and tries
 * again later. The notebook is also written by the editor (autosave) and by
 * code in the kernel: the write is conditional on the ETag read, and a
 * write that lands in between makes us read again and fold into the newer
 * text, so neither side's cells nor outputs are lost. A notebook that is not
 * valid JSON is one that kernel code is rewriting in place (truncated, half
 * written): read again too. Between tries we sleep 10, 20, 40... ms (about
 * 0.5 s in all): this runs on the kernel's reader thread, and only slows
 * that kernel's output. */
enum { FOLD_ATTEMPTS = 8, FOLD_BACKOFF_MS = 10, FOLD_BACKOFF_TOTAL_MS = 500 };

static int fold_write(kh_hub *h, int64_t user_id, const char *project, const char *path, const char *cell_id,
                      json_t *outputs, int exec_count)
{
    int err = 0, slept = 0;

    for (int attempt = 0; attempt < FOLD_ATTEMPTS; attempt++) {
        char *buf = NULL, *text = NULL, etag[PROJ_ETAG_LEN + 1];
        size_t len = 0;
        json_t *nb = NULL, *cells, *cell;
        size_t i;
        bool found = false, again = false;

        if (attempt > 0) {
            int ms = FOLD_BACKOFF_MS << (attempt - 1);
            if (ms > FOLD_BACKOFF_TOTAL_MS - slept)
                ms = FOLD_BACKOFF_TOTAL_MS - slept;
            if (ms > 0)
                usleep((useconds_t)ms * 1000);
            slept += ms;
        }
        if ((err = proj_file_read_etag(&buf, &len, etag, h->srv->projects, user_id, project, path, NULL)) < 0)
            goto next;
        if ((err = ed_json_parse_object(&nb, buf, len)) < 0) {
            again = true;   /* being rewritten in place */
            err = ed_error_set(ED_EUNPROC, "%s is not valid JSON (being rewritten?)", path);
            goto next;
        }
        cells = json_object_get(nb, "cells");
        json_array_foreach(cells, i, cell) {
            const char *cid = json_string_value(json_object_get(cell, "id"));
            if (cid && strcmp(cid, cell_id) == 0) {
                if (strcmp(json_string_value(json_object_get(cell, "cell_type")) ?: "", "code") != 0) {
                    err = ed_error_set(ED_EUNPROC, "cell %s is not a code cell", cell_id);
                    goto next;
                }
                json_object_set(cell, "outputs", outputs);
                json_object_set_new(cell, "execution_count", exec_count > 0 ? json_integer(exec_count) : json_null());
                found = true;
                break;
            }
        }
        if (!found) {
            err = ed_error_set(ED_ENOTFOUND, "no cell with id %s", cell_id);
            goto next;
        }
        if ((text = json_dumps(nb, JSON_INDENT(1) | JSON_PRESERVE_ORDER)) == NULL) {
            err = ed_error_set(ED_ENOMEM, "notebook");
            goto next;
        }
        err = proj_file_write_if(NULL, NULL, h->srv->projects, user_id, project, path, text, strlen(text), etag);
        again = err == ED_EPRECOND;
    next:
        free(buf);
        free(text);
        json_decref(nb);
        if (!again)
            break;   /* written, or failed for a reason another read now will not change */
    }
    return err;
}

/* Unlink f from k's folds and free it. Under mu. */
static void fold_drop_locked(kh_k *k, fold *f)
{
    for (fold **pp = &k->folds; *pp; pp = &(*pp)->next)
        if (*pp == f) {
            *pp = f->next;
            break;
        }
    fold_free(f);
}

/* When (monotonic ns) f is next due for a write; INT64_MAX: not now. Under mu. */
static int64_t fold_due_ns(const fold *f)
{
    int64_t due;

    if (!f->dirty || f->writing)
        return INT64_MAX;
    due = f->done ? 0 : f->written_ns + (int64_t)FOLD_WRITE_MS * 1000000;
    return f->retry_ns > due ? f->retry_ns : due;
}

/* Milliseconds until one of k's folds is due for a write (0: now), or -1
 * when none waits; with `done_only`, only finished cells' folds count. */
static int folds_due_ms(kh_hub *h, kh_k *k, bool done_only)
{
    int64_t first = INT64_MAX, now = ed_mono_ns();

    pthread_mutex_lock(&h->mu);
    for (fold *f = k->folds; f; f = f->next)
        if (!done_only || f->done) {
            int64_t due = fold_due_ns(f);
            if (due < first)
                first = due;
        }
    pthread_mutex_unlock(&h->mu);
    if (first == INT64_MAX)
        return -1;
    if (first <= now)
        return 0;
    return (first - now) / 1000000 + 1 > 60000 ? 60000 : (int)((first - now) / 1000000 + 1);
}

/* Write the folds that are due (outside mu); with `force`, every dirty fold
 * once, due or not (the kernel's process ended). A failed write leaves its
 * fold dirty, tried again after 1, 2, 4, 8... s; a finished cell's fold is
 * kept until its outputs are written, or FOLD_GIVE_UP writes in a row
 * failed (logged). Several reader threads of one kernel (a restart) may
 * flush at once: a fold being written is theirs alone (`writing`). */
static void folds_flush(kh_hub *h, kh_k *k, bool force)
{
    int64_t pass = ed_mono_ns();

    for (;;) {
        char *path = NULL, *cell = NULL, why[300];
        json_t *outs = NULL;
        int count = 0, err;
        int64_t now = ed_mono_ns();
        fold *f;

        pthread_mutex_lock(&h->mu);
        for (f = k->folds; f; f = f->next)
            if (f->dirty && !f->writing && f->pass != pass &&
                (force || fold_due_ns(f) <= now))
                break;
        if (f) {
            path = strdup(f->path);
            cell = strdup(f->cell_id);
            outs = json_deep_copy(f->outputs);
            if (outs && f->sname[0])
                json_array_append_new(outs, stream_output(f));
            count = f->exec_count;
            f->dirty = false;
            f->writing = true;
            f->written_ns = now;
            f->pass = pass;
        }
        int64_t user = k->user_id;
        char project[64];
        snprintf(project, sizeof(project), "%s", k->project_id);
        pthread_mutex_unlock(&h->mu);
        if (f == NULL)
            return;
        err = path && cell && outs ? fold_write(h, user, project, path, cell, outs, count)
                                   : ed_error_set(ED_ENOMEM, "fold");
        snprintf(why, sizeof(why), "%s", err < 0 ? ed_error_last() : "");
        pthread_mutex_lock(&h->mu);
        f->writing = false;
        if (err == 0) {
            f->fails = 0;
            f->retry_ns = 0;
            if (f->done && !f->dirty)
                fold_drop_locked(k, f);
        } else {
            f->dirty = true;   /* these outputs are not in the notebook yet */
            f->fails++;
            if (f->done && f->fails >= FOLD_GIVE_UP) {
                ed_log_warn("kernel.fold", "kernel %s: gave up folding the outputs of cell %s into %s of project %s "
                            "after %d failed writes: %s", k->id, cell, path, project, f->fails, why);
                fold_drop_locked(k, f);
            } else {
                int64_t ms = (int64_t)FOLD_WRITE_MS << (f->fails - 1 < 4 ? f->fails - 1 : 4);
                f->retry_ns = ed_mono_ns() + (ms < FOLD_RETRY_MAX_MS ? ms : FOLD_RETRY_MAX_MS) * 1000000;
                if (f->fails == 1)
                    ed_log_warn("kernel.fold", "kernel %s: cannot fold outputs into %s (cell %s) of project %s, "
                                "trying again: %s", k->id, path, cell, project, why);
            }
        }
        pthread_mutex_unlock(&h->mu);
        free(path);
        free(cell);
        json_decref(outs);
    }
}

/* The kernel's process ended: write every dirty fold now, and keep trying
 * finished cells' folds until written or given up (unless the hub stops). */
static void folds_drain(kh_hub *h, kh_k *k)
{
    int ms;

    folds_flush(h, k, true);
    while (!h->stopping && (ms = folds_due_ms(h, k, true)) >= 0) {
        if (ms > 0) {
            usleep((useconds_t)(ms < 100 ? ms : 100) * 1000);   /* a stopping hub is noticed soon */
            continue;
        }
        folds_flush(h, k, false);
    }
}

/* ---- publishing -------------------------------------------------------------------- */

static void journal_publish(kh_hub *h, kh_k *k, char **msgs, json_t **parsed, int n)
{
    int64_t first = k->next_seq + 1;
    int err;

    if ((err = journal_append(h, k, msgs, n, first)) < 0) {
        /* keep serving: the messages still go out, the gap is logged */
        ed_log_error("kernel.journal", "kernel %s: %d messages not journaled: %s", k->id, n, ed_error_last());
    }
    k->next_seq += n;
    pthread_mutex_lock(&h->mu);
    for (int i = 0; i < n; i++) {
        int64_t seq = first + i;
        int slot = (int)(seq % RING);
        const json_t *m = parsed[i];
        const char *type = kr_msg_type(m);
        size_t len = strlen(msgs[i]);

        if (err == 0)
            k->journal_bytes += (int64_t)len;
        free(k->ring[slot]);
        k->ring[slot] = NULL;
        k->ring_bytes -= k->ring_len[slot];
        k->ring_len[slot] = 0;
        /* the ring holds at most RING_BYTES; the rest is read back from the journal */
        if (len <= RING_MSG_MAX && k->ring_bytes + len <= RING_BYTES) {
            k->ring[slot] = msgs[i];
            k->ring_len[slot] = len;
            k->ring_bytes += len;
        } else {
            free(msgs[i]);
        }
        k->ring_seq[slot] = seq;
        msgs[i] = NULL;
        k->last_seq = seq;
        k->last_activity_at = ed_now_ms();
        if (strcmp(type, "status") == 0 && alive(k) && k->fd_job == k->job_id) {
            const char *es = json_string_value(json_object_get(json_object_get(m, "content"), "execution_state"));
            if (es && (strcmp(es, "busy") == 0 || strcmp(es, "idle") == 0))
                snprintf(k->state, sizeof(k->state), "%s", es);
        }
        if (k->folds)
            fold_apply_locked(k, m, len);
    }
    wake_subs_locked(h, k);
    pthread_mutex_unlock(&h->mu);
}

/* A message from the hub itself (warnings) into the journal, as an iopub
 * stream on stderr, under the request `parent` (a header; NULL: none). */
static void journal_notice(kh_hub *h, kh_k *k, const json_t *parent, const char *text)
{
    json_t *m = NULL;
    char *s;

    if (kr_msg_new(&m, "iopub", "stream", "eddy", parent, json_pack("{s:s, s:s}", "name", "stderr", "text", text)) < 0)
        return;
    if ((s = json_dumps(m, JSON_COMPACT)) != NULL) {
        pthread_mutex_lock(&k->jmu);
        journal_publish(h, k, &s, &m, 1);
        pthread_mutex_unlock(&k->jmu);
        free(s);
    }
    json_decref(m);
}

/* An iopub status the hub gives on the kernel's behalf (restarting, dead),
 * as Jupyter Server does, so clients learn of it in order. */
static void journal_status(kh_hub *h, kh_k *k, const char *state)
{
    json_t *m = NULL;
    char *s;

    if (kr_msg_new(&m, "iopub", "status", "eddy", NULL, json_pack("{s:s}", "execution_state", state)) < 0)
        return;
    if ((s = json_dumps(m, JSON_COMPACT)) != NULL) {
        pthread_mutex_lock(&k->jmu);
        journal_publish(h, k, &s, &m, 1);
        pthread_mutex_unlock(&k->jmu);
        free(s);
    }
    json_decref(m);
}

/* ---- the reader --------------------------------------------------------------------- */

static const char *reason_from_job(kh_hub *h, int64_t job_id, int64_t user_id)
{
    sched_job_info j;

    for (int i = 0; i < 40; i++) {
        if (sched_job_get(&j, h->srv->sched, user_id, job_id) < 0)
            return "died";
        if (strcmp(j.status, "running") != 0 && strcmp(j.status, "queued") != 0)
            break;
        usleep(50000);
    }
    if (strcmp(j.failure_reason, "timeout") == 0)
        return "max_session";
    static const char *const passed[] = {"out_of_funds", "out_of_memory", "preempted", "platform_error",
                                         "key_budget", "suspended"};
    for (size_t i = 0; i < sizeof(passed) / sizeof(passed[0]); i++)
        if (strcmp(j.failure_reason, passed[i]) == 0)
            return passed[i];
    if (strcmp(j.status, "succeeded") == 0)
        return "shutdown";
    return "died";
}

/* Read exactly `len` bytes: 0, 1 at a clean end before the first byte, or
 * ED_EIO (a read error, or the connection closed inside a frame). */
static int read_exact(int fd, void *buf, size_t len)
{
    char *p = buf;
    size_t got = 0;

    while (got < len) {
        ssize_t r = read(fd, p + got, len - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return ed_error_set(ED_EIO, "kernel socket: %s", strerror(errno));
        if (r == 0)
            return got == 0 ? 1 : ed_error_set(ED_EIO, "kernel socket closed inside a frame");
        got += (size_t)r;
    }
    return 0;
}

/* Move k's rate window to `now_ms`, forgetting the slices that left it. */
static void rate_advance(rate *r, int64_t now_ms, int window_ms)
{
    int64_t slice = window_ms / RL_BUCKETS > 0 ? window_ms / RL_BUCKETS : 1;
    int64_t b = now_ms / slice;

    if (b - r->bucket >= RL_BUCKETS || b < r->bucket) {
        memset(r->msgs, 0, sizeof(r->msgs));
        memset(r->bytes, 0, sizeof(r->bytes));
        memset(r->raw, 0, sizeof(r->raw));
        r->sum_msgs = r->sum_bytes = r->sum_raw = 0;
    } else {
        for (int64_t i = r->bucket + 1; i <= b; i++) {
            int s = (int)(i % RL_BUCKETS);
            r->sum_msgs -= r->msgs[s];
            r->sum_bytes -= r->bytes[s];
            r->sum_raw -= r->raw[s];
            r->msgs[s] = r->bytes[s] = r->raw[s] = 0;
        }
    }
    if (b > r->bucket)
        r->bucket = b;
}

/* Whether a message of `len` bytes goes out, Jupyter Server's way
 * (iopub_msg_rate_limit, iopub_data_rate_limit, rate_limit_window): iopub
 * output past either rate over the window is dropped until the rate falls
 * below 80% of the limit; status, execute_input, comm_open and every other
 * channel pass when at most EXEMPT_MAX bytes (and count), unless the window
 * holds ten times the limits. One difference: a message is let through
 * while the window's bytes before it are under the limit, so one large
 * image after some text still shows. When dropping starts, `notice` gets
 * the text telling the user (else ""). */
static bool rate_admit(kh_hub *h, rate *r, const char *channel, const char *type, const char *parent, size_t len,
                       char *notice, size_t nn)
{
    const gw_config *c = &h->srv->cfg;
    int w = c->kernel_output_window_ms > 0 ? c->kernel_output_window_ms : 3000;
    int64_t msg_allow = (int64_t)c->kernel_output_msgs_per_s * w / 1000;
    int64_t byte_allow = c->kernel_output_bytes_per_s * w / 1000;
    bool was = r->msgs_over || r->bytes_over;
    int slot = 0;

    notice[0] = '\0';
    rate_advance(r, ed_mono_ns() / 1000000, w);
    slot = (int)(r->bucket % RL_BUCKETS);
    if (len <= EXEMPT_MAX && (strcmp(channel, "iopub") != 0 || strcmp(type, "status") == 0 ||
                              strcmp(type, "execute_input") == 0 || strcmp(type, "comm_open") == 0)) {
        /* Replies and status always pass (clients wait for them), and count:
         * only a kernel sending ten times the limits in them loses them. */
        if ((c->kernel_output_msgs_per_s > 0 && r->sum_msgs >= 10 * msg_allow) ||
            (c->kernel_output_bytes_per_s > 0 && r->sum_bytes >= 10 * byte_allow))
            return false;
        r->msgs[slot]++;
        r->bytes[slot] += (int64_t)len;
        r->sum_msgs++;
        r->sum_bytes += (int64_t)len;
        return true;
    }
    if (c->kernel_output_msgs_per_s > 0 && r->sum_msgs + 1 > msg_allow)
        r->msgs_over = true;
    else if (r->msgs_over && (r->sum_msgs + 1) * 10 < msg_allow * 8)
        r->msgs_over = false;
    if (c->kernel_output_bytes_per_s > 0 && r->sum_bytes > byte_allow)
        r->bytes_over = true;
    else if (r->bytes_over && r->sum_bytes * 10 < byte_allow * 8)
        r->bytes_over = false;
    if (r->msgs_over || r->bytes_over) {
        /* say so once when dropping starts, and once more for each new
         * request, at most once per window (parents are the kernel's word) */
        int64_t now_ms = ed_mono_ns() / 1000000;
        if ((!was || strcmp(r->noticed, parent ? parent : "") != 0) &&
            (r->noticed_ms == 0 || now_ms - r->noticed_ms >= w)) {
            snprintf(r->noticed, sizeof(r->noticed), "%s", parent ? parent : "");
            r->noticed_ms = now_ms;
            if (r->bytes_over)
                snprintf(notice, nn,
                         "[eddy] output dropped: this kernel sent more than %lld bytes of output a second (over "
                         "%d s), so its output is dropped until the rate falls. The server's operator can raise "
                         "the limit: kernel_output_bytes_per_s in the gateway config "
                         "(EDDY_KERNEL_OUTPUT_BYTES_PER_S).\n",
                         (long long)c->kernel_output_bytes_per_s, (w + 999) / 1000);
            else
                snprintf(notice, nn,
                         "[eddy] output dropped: this kernel sent more than %d output messages a second (over %d "
                         "s), so its output is dropped until the rate falls. The server's operator can raise the "
                         "limit: kernel_output_msgs_per_s in the gateway config (EDDY_KERNEL_OUTPUT_MSGS_PER_S).\n",
                         c->kernel_output_msgs_per_s, (w + 999) / 1000);
        }
        return false;
    }
    r->msgs[slot]++;
    r->bytes[slot] += (int64_t)len;
    r->sum_msgs++;
    r->sum_bytes += (int64_t)len;
    return true;
}

/* Read and discard `len` bytes. 0 or as read_exact. */
static int drain(int fd, size_t len)
{
    char buf[65536];
    int err = 0;

    while (len > 0 && err == 0) {
        size_t n = len < sizeof(buf) ? len : sizeof(buf);
        err = read_exact(fd, buf, n);
        if (err == 1)
            err = ed_error_set(ED_EIO, "kernel socket closed inside a frame");
        len -= n;
    }
    return err;
}

/* The kernel broke the protocol (or flooded the gateway): tell the user,
 * stop its process with reason protocol_error. The caller then closes the
 * socket. */
static void protocol_error(kh_hub *h, kh_k *k, int64_t job_id, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void protocol_error(kh_hub *h, kh_k *k, int64_t job_id, const char *fmt, ...)
{
    char why[256], text[400];
    va_list ap;
    bool mine;
    int64_t user;

    va_start(ap, fmt);
    vsnprintf(why, sizeof(why), fmt, ap);
    va_end(ap);
    pthread_mutex_lock(&h->mu);
    mine = k->job_id == job_id && alive(k) && !h->stopping;
    if (mine && k->stop_reason[0] == '\0')
        snprintf(k->stop_reason, sizeof(k->stop_reason), "protocol_error");
    if (mine)
        k->stopping = true;
    user = k->user_id;
    pthread_mutex_unlock(&h->mu);
    ed_log_warn("kernel.protocol", "kernel %s (job %lld): %s; stopping it", k->id, (long long)job_id, why);
    if (!mine)
        return;
    snprintf(text, sizeof(text), "[eddy] this kernel was stopped (protocol_error): %s.\n", why);
    journal_notice(h, k, NULL, text);
    if (stop_job(h, user, job_id) < 0)
        ed_log_error("kernel.stop", "kernel %s: %s", k->id, ed_error_last());
}

/* Delete kernel `id`'s journal up to seq `upto`, 2000 rows per statement so
 * that no single write holds the store's lock for long. */
static int journal_delete(kh_hub *h, const char *id, int64_t upto)
{
    int err;

    do {
        if ((err = db_exec(h,
                           "DELETE FROM kernel_journal WHERE kernel_id = ?1 AND seq IN (SELECT seq FROM "
                           "kernel_journal WHERE kernel_id = ?1 AND seq <= ?4 ORDER BY seq LIMIT 2000)",
                           id, NULL, NULL, upto, 0)) < 0)
            return err;
    } while (sqlite3_changes(ed_store_db(h->srv->store)) > 0);
    return 0;
}

/* Prune the oldest part of k's journal once it passes the configured cap,
 * down to three quarters of it: the newest output always stays (the newest
 * message even when it alone is over the cap).
 * Called by the reader with jmu held. */
static void journal_prune(kh_hub *h, kh_k *k)
{
    int64_t cap = h->srv->cfg.kernel_journal_max_bytes, want, freed = 0, cut = 0, total = 0, newest = 0;
    sqlite3_stmt *q;
    int rc;

    if (cap <= 0 || k->journal_bytes <= cap)
        return;
    if (ed_store_prepare(&q, h->srv->store,
                         "SELECT seq, length(CAST(msg AS BLOB)) FROM kernel_journal WHERE kernel_id = ?1 "
                         "ORDER BY seq") < 0)
        goto fail;
    sqlite3_bind_text(q, 1, k->id, -1, SQLITE_STATIC);
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        newest = sqlite3_column_int64(q, 0);
        total += sqlite3_column_int64(q, 1);
    }
    sqlite3_reset(q);
    want = total - cap / 4 * 3;
    /* the newest message always stays, whatever its size */
    while (freed < want && (rc = sqlite3_step(q)) == SQLITE_ROW && sqlite3_column_int64(q, 0) < newest) {
        cut = sqlite3_column_int64(q, 0);
        freed += sqlite3_column_int64(q, 1);
    }
    sqlite3_finalize(q);
    if (cut > 0 && journal_delete(h, k->id, cut) < 0)
        goto fail;
    k->journal_bytes = total - freed;
    if (cut > 0)
        ed_log_info("kernel.journal", "kernel %s: pruned %lld bytes of its oldest output (seq <= %lld)", k->id,
                    (long long)freed, (long long)cut);
    return;
fail:
    ed_log_error("kernel.journal", "kernel %s: cannot prune its journal: %s", k->id, ed_error_last());
    k->journal_bytes = 0;   /* try again after another cap's worth */
}

/* Journal and publish the burst held in msgs/parsed, then prune. */
static void burst_flush(kh_hub *h, kh_k *k, char **msgs, json_t **parsed, int *n, size_t *nbytes)
{
    if (*n == 0)
        return;
    pthread_mutex_lock(&k->jmu);
    journal_publish(h, k, msgs, parsed, *n);
    journal_prune(h, k);
    pthread_mutex_unlock(&k->jmu);
    for (int i = 0; i < *n; i++)
        json_decref(parsed[i]);
    *n = 0;
    *nbytes = 0;
}

/* One reader per kernel process. It holds at most BATCH_BYTES of small
 * frames, or one frame of up to KR_OUT_FRAME_MAX bytes, and no lock while it
 * reads; a burst is journaled in one short transaction. */
static void *reader_main(void *p)
{
    reader_arg a = *(reader_arg *)p;
    kh_hub *h = a.h;
    kh_k *k = a.k;
    char *msgs[BATCH_MAX];
    json_t *parsed[BATCH_MAX];
    int n = 0, err = 0;
    size_t nbytes = 0;
    bool mine, died = false;
    rate rl = {0};
    const gw_config *cfg = &h->srv->cfg;
    int window = cfg->kernel_output_window_ms > 0 ? cfg->kernel_output_window_ms : 3000;
    /* never below twice what eddy-kernel itself may send (KR_OUT_RATE_MAX) */
    int64_t flood_rate = cfg->kernel_flood_bytes_per_s > 2 * (int64_t)KR_OUT_RATE_MAX ? cfg->kernel_flood_bytes_per_s
                                                                                     : 2 * (int64_t)KR_OUT_RATE_MAX;
    int64_t flood = cfg->kernel_flood_bytes_per_s > 0 ? flood_rate * window / 1000 : 0;

    free(p);
    /* ask for kernel_info: the kernel goes busy then idle once Python is
     * ready, which is when the hub reports it idle */
    json_t *info = NULL;
    if (kr_msg_new(&info, "shell", "kernel_info_request", "eddy-hub", NULL, NULL) == 0)
        send_msg(h, k, info);
    json_decref(info);
    for (;;) {
        unsigned char hdr[KR_FRAME_HDR];
        char *buf = NULL, notice[512], pre[1024];
        size_t npre = 0;
        bool counted = false;   /* rate_admit let it through already */
        uint32_t len;
        json_t *m = NULL;
        struct pollfd pfd = {a.fd, POLLIN, 0};

        if (n > 0 && (nbytes >= BATCH_BYTES || poll(&pfd, 1, 0) <= 0)) {
            /* nothing more is waiting (or enough is held): journal and publish the burst */
            burst_flush(h, k, msgs, parsed, &n, &nbytes);
            folds_flush(h, k, false);
            continue;
        }
        if (n == 0) {
            /* a fold waits to be written (its cell went quiet, or a write
             * failed): wake for it while no output comes */
            int due = folds_due_ms(h, k, false);
            if (due >= 0 && poll(&pfd, 1, due) == 0) {
                folds_flush(h, k, false);
                continue;
            }
        }
        if ((err = read_exact(a.fd, hdr, sizeof(hdr))) != 0)
            break;
        len = kr_frame_length(hdr);
        if (len > KR_OUT_FRAME_MAX) {
            protocol_error(h, k, a.job_id, "it sent a frame of %u bytes, over the limit of %u", len,
                           KR_OUT_FRAME_MAX);
            break;
        }
        rate_advance(&rl, ed_mono_ns() / 1000000, window);
        rl.raw[rl.bucket % RL_BUCKETS] += (int64_t)len + KR_FRAME_HDR;
        rl.sum_raw += (int64_t)len + KR_FRAME_HDR;
        if (flood > 0 && rl.sum_raw > flood) {
            protocol_error(h, k, a.job_id, "it sent more than %lld MiB within %d s (the limit is %lld MiB/s)",
                           (long long)(flood >> 20), (window + 999) / 1000, (long long)(flood_rate >> 20));
            break;
        }
        if (n > 0 && nbytes + len > BATCH_BYTES)
            burst_flush(h, k, msgs, parsed, &n, &nbytes);   /* a large frame is journaled alone */
        if (len > DRAIN_MIN && (rl.msgs_over || rl.bytes_over)) {
            /* Output is being dropped: a large output frame is read past,
             * unparsed, at the speed of a copy (eddy-kernel's frames name
             * their channel and type first). */
            char ch[16], type[64], parent[64];
            if ((err = read_exact(a.fd, pre, sizeof(pre))) != 0)
                break;
            kr_frame_peek(ch, sizeof(ch), pre, sizeof(pre), NULL, "channel");
            kr_frame_peek(type, sizeof(type), pre, sizeof(pre), "\"header\"", "msg_type");
            kr_frame_peek(parent, sizeof(parent), pre, sizeof(pre), "\"parent_header\"", "msg_id");
            if (ch[0] && type[0] && !(counted = rate_admit(h, &rl, ch, type, parent, len, notice, sizeof(notice)))) {
                if ((err = drain(a.fd, len - sizeof(pre))) != 0)
                    break;
                if (notice[0]) {
                    json_t *ph = parent[0] ? json_pack("{s:s}", "msg_id", parent) : NULL;
                    burst_flush(h, k, msgs, parsed, &n, &nbytes);
                    journal_notice(h, k, ph, notice);
                    json_decref(ph);
                }
                continue;
            }
            npre = sizeof(pre);   /* not dropped: read it whole after all */
        }
        if ((buf = malloc((size_t)len + 1)) == NULL) {
            ed_log_error("kernel.frame", "kernel %s: no memory for a frame of %u bytes", k->id, len);
            break;
        }
        memcpy(buf, pre, npre);
        if ((err = read_exact(a.fd, buf + npre, len - npre)) != 0) {
            free(buf);
            break;
        }
        buf[len] = '\0';
        if (ed_json_parse_object(&m, buf, len) < 0 || !json_is_object(json_object_get(m, "header")) ||
            !json_is_string(json_object_get(json_object_get(m, "header"), "msg_type"))) {
            json_decref(m);
            free(buf);
            protocol_error(h, k, a.job_id, "it sent a frame that is not a Jupyter message");
            break;
        }
        if (!counted && !rate_admit(h, &rl, kr_msg_channel(m), kr_msg_type(m),
                        json_string_value(json_object_get(json_object_get(m, "parent_header"), "msg_id")), len,
                        notice, sizeof(notice))) {
            if (notice[0]) {
                burst_flush(h, k, msgs, parsed, &n, &nbytes);   /* the notice after what came before */
                journal_notice(h, k, json_object_get(m, "parent_header"), notice);
                ed_log_info("kernel.output", "kernel %s: over its output rate; dropping output", k->id);
            }
            json_decref(m);
            free(buf);
            continue;
        }
        msgs[n] = buf;
        parsed[n] = m;
        nbytes += len;
        if (++n == BATCH_MAX)
            burst_flush(h, k, msgs, parsed, &n, &nbytes);
    }
    burst_flush(h, k, msgs, parsed, &n, &nbytes);
    folds_drain(h, k);
    /* the process ended (or the hub is stopping): close our end */
    pthread_mutex_lock(&k->wmu);
    if (k->fd == a.fd && k->fd_job == a.job_id)
        k->fd = -1;
    close(a.fd);
    pthread_mutex_unlock(&k->wmu);

    pthread_mutex_lock(&h->mu);
    mine = k->job_id == a.job_id && alive(k);
    bool requested = k->stop_reason[0] != '\0';
    pthread_mutex_unlock(&h->mu);
    const char *reason = mine && !requested && !h->stopping ? reason_from_job(h, a.job_id, k->user_id) : "";
    if (mine && !h->stopping)
        journal_status(h, k, "dead");   /* before subscribers see the end */
    char id[KH_ID_LEN], why[32];
    int64_t at = 0;
    pthread_mutex_lock(&h->mu);
    if (mine && k->job_id == a.job_id && (died = set_dead_locked(h, k, reason[0] ? reason : "died"))) {
        snprintf(id, sizeof(id), "%s", k->id);
        snprintf(why, sizeof(why), "%s", k->stop_reason);
        at = k->ended_at;
    }
    pthread_mutex_unlock(&h->mu);
    if (died) {
        persist_dead(h, id, why, at);
        ed_log_info("kernel.dead", "kernel %s: %s", id, why);
    }
    pthread_mutex_lock(&h->mu);
    k->readers--;
    unref_locked(h, k);
    h->nthreads--;
    pthread_cond_broadcast(&h->cv);
    pthread_mutex_unlock(&h->mu);
    return NULL;
}

/* Give k the socket of job `job_id` and start its reader. Under mu. */
static void attach_locked(kh_hub *h, kh_k *k, int64_t job_id, int fd)
{
    reader_arg *a = malloc(sizeof(*a));
    pthread_t t;

    if (a == NULL) {
        close(fd);
        return;
    }
    *a = (reader_arg){h, k, fd, job_id};
    pthread_mutex_lock(&k->wmu);
    k->fd = fd;
    k->fd_job = job_id;
    k->stuck = false;
    pthread_mutex_unlock(&k->wmu);
    if (strcmp(k->state, "queued") == 0 || strcmp(k->state, "starting") == 0)
        snprintf(k->state, sizeof(k->state), "starting");
    if (k->started_at == 0)
        k->started_at = ed_now_ms();
    k->last_activity_at = ed_now_ms();
    k->refs++;
    k->readers++;
    h->nthreads++;
    if (pthread_create(&t, NULL, reader_main, a) != 0) {
        free(a);
        k->refs--;
        k->readers--;
        h->nthreads--;
        pthread_mutex_lock(&k->wmu);
        k->fd = -1;
        close(fd);
        pthread_mutex_unlock(&k->wmu);
        ed_log_error("kernel.reader", "kernel %s: cannot start its reader thread", k->id);
        return;
    }
    pthread_detach(t);
}

/* The scheduler's hook (on its thread, under its lock). */
static void on_socket(void *arg, int64_t job_id, int fd)
{
    kh_hub *h = arg;
    kh_k *k;

    pthread_mutex_lock(&h->mu);
    for (k = h->list; k; k = k->next)
        if (k->job_id == job_id && alive(k))
            break;
    if (k && !h->stopping) {
        attach_locked(h, k, job_id, fd);
    } else if (!h->stopping && h->npend < MAX_PENDING) {
        h->pend[h->npend++] = (pending_fd){job_id, fd};   /* its kernel row is being made */
    } else {
        close(fd);
    }
    pthread_mutex_unlock(&h->mu);
}

/* k now runs job `job_id`: take a socket that came before. Under mu. */
static void claim_pending_locked(kh_hub *h, kh_k *k)
{
    for (int i = 0; i < h->npend; i++)
        if (h->pend[i].job_id == k->job_id) {
            int fd = h->pend[i].fd;
            h->pend[i] = h->pend[--h->npend];
            attach_locked(h, k, k->job_id, fd);
            return;
        }
}

/* ---- the culler ----------------------------------------------------------------------- */

typedef struct action {
    char    id[KH_ID_LEN];
    int64_t user_id, job_id;
    int     what;        /* 1 warn, 2 stop, 3 start failed */
    char    text[200];
} action;

static int stop_job(kh_hub *h, int64_t user_id, int64_t job_id)
{
    sched_job_info j;
    int err = sched_job_cancel(&j, h->srv->sched, user_id, job_id);
    return err == ED_ECONFLICT ? 0 : err;
}

/* Delete the journals (and Jupyter sessions) of kernels dead for longer
 * than kernel_journal_retention_ms, and of each user's dead kernels past the
 * newest kernel_dead_journals_per_user, a few kernels per call (culler
 * thread, no lock held). The kernels' rows stay: GET still says how they
 * ended. */
static void retention_sweep(kh_hub *h)
{
    int64_t keep = h->srv->cfg.kernel_journal_retention_ms;
    int per_user = h->srv->cfg.kernel_dead_journals_per_user;
    char ids[32][KH_ID_LEN];
    int n = 0, rc;
    sqlite3_stmt *q;

    if (keep > 0 && ed_store_prepare(&q, h->srv->store,
                                     "SELECT id FROM kernels WHERE status = 'dead' AND ended_at < ?1 AND "
                                     "(EXISTS (SELECT 1 FROM kernel_journal j WHERE j.kernel_id = kernels.id) OR "
                                     "EXISTS (SELECT 1 FROM jupyter_sessions s WHERE s.kernel_id = kernels.id)) "
                                     "LIMIT 16") == 0) {
        sqlite3_bind_int64(q, 1, ed_now_ms() - keep);
        while (n < 16 && (rc = sqlite3_step(q)) == SQLITE_ROW)
            snprintf(ids[n++], KH_ID_LEN, "%s", (const char *)sqlite3_column_text(q, 0));
        sqlite3_finalize(q);
    }
    if (per_user > 0 && ed_store_prepare(&q, h->srv->store,
                                         "SELECT id FROM (SELECT id, ROW_NUMBER() OVER (PARTITION BY user_id "
                                         "ORDER BY ended_at DESC, id) AS rn FROM kernels WHERE status = 'dead') "
                                         "WHERE rn > ?1 AND EXISTS (SELECT 1 FROM kernel_journal j WHERE "
                                         "j.kernel_id = id) LIMIT 16") == 0) {
        sqlite3_bind_int64(q, 1, per_user);
        while (n < 32 && (rc = sqlite3_step(q)) == SQLITE_ROW)
            snprintf(ids[n++], KH_ID_LEN, "%s", (const char *)sqlite3_column_text(q, 0));
        sqlite3_finalize(q);
    }
    for (int i = 0; i < n; i++) {
        if (journal_delete(h, ids[i], INT64_MAX) < 0 ||
            db_exec(h, "DELETE FROM jupyter_sessions WHERE kernel_id = ?1", ids[i], NULL, NULL, 0, 0) < 0) {
            ed_log_error("kernel.retention", "kernel %s: %s", ids[i], ed_error_last());
            break;
        }
        ed_log_info("kernel.retention", "kernel %s: dead past the retention time or its user's newest %d; its "
                    "journal was deleted", ids[i], per_user);
    }
}

static void *culler_main(void *p)
{
    kh_hub *h = p;
    action acts[64];

    pthread_mutex_lock(&h->mu);
    while (!h->stopping) {
        struct timespec ts;
        int na = 0;
        int64_t now = ed_now_ms();

        for (kh_k *k = h->list; k && na < 64; k = k->next) {
            if (!alive(k) || k->stopping || k->job_id == 0)
                continue;
            action *a = &acts[na];
            snprintf(a->id, sizeof(a->id), "%s", k->id);
            a->user_id = k->user_id;
            a->job_id = k->job_id;
            a->what = 0;
            if (k->fd < 0 && k->started_at == 0) {
                a->what = 3;    /* not started: check its job */
            } else if (k->started_at && now - k->started_at >= k->max_session_ms) {
                snprintf(k->stop_reason, sizeof(k->stop_reason), "max_session");
                k->stopping = true;
                a->what = 2;
            } else if (strcmp(k->state, "idle") == 0 && k->nsubs == 0 && k->idle_ms > 0 &&
                       now - k->last_activity_at >= k->idle_ms) {
                snprintf(k->stop_reason, sizeof(k->stop_reason), "idle_timeout");
                k->stopping = true;
                a->what = 2;
            } else if (!k->warned && k->started_at) {
                int64_t warn = k->max_session_ms / 4 < 60000 ? k->max_session_ms / 4 : 60000;
                if (now - k->started_at >= k->max_session_ms - warn) {
                    k->warned = true;
                    a->what = 1;
                    snprintf(a->text, sizeof(a->text),
                             "[eddy] this kernel reaches its maximum session length in %lld s and will then be "
                             "stopped; save your work.\n",
                             (long long)((k->max_session_ms - (now - k->started_at) + 999) / 1000));
                }
            }
            if (a->what)
                na++;
        }
        pthread_mutex_unlock(&h->mu);
        for (int i = 0; i < na; i++) {
            action *a = &acts[i];
            if (a->what == 2) {
                ed_log_info("kernel.stop", "kernel %s: %s", a->id, "stopping (culler)");
                if (stop_job(h, a->user_id, a->job_id) < 0)
                    ed_log_error("kernel.stop", "kernel %s: %s", a->id, ed_error_last());
            } else if (a->what == 1) {
                pthread_mutex_lock(&h->mu);
                kh_k *k = find_locked(h, a->id);
                if (k)
                    k->refs++;
                pthread_mutex_unlock(&h->mu);
                if (k) {
                    journal_notice(h, k, NULL, a->text);
                    pthread_mutex_lock(&h->mu);
                    unref_locked(h, k);
                    pthread_mutex_unlock(&h->mu);
                }
            } else if (a->what == 3) {
                sched_job_info j;
                if (sched_job_get(&j, h->srv->sched, a->user_id, a->job_id) == 0 &&
                    strcmp(j.status, "queued") != 0 && strcmp(j.status, "running") != 0) {
                    bool changed = false;
                    int64_t at = 0;
                    char why[32] = "";
                    pthread_mutex_lock(&h->mu);
                    kh_k *k = find_locked(h, a->id);
                    if (k && k->job_id == a->job_id && k->fd < 0 && k->started_at == 0) {
                        const char *r = strcmp(j.status, "cancelled") == 0 ? "shutdown"
                                        : strcmp(j.failure_reason, "key_budget") == 0 ||
                                                  strcmp(j.failure_reason, "suspended") == 0
                                            ? j.failure_reason   /* refused before it started */
                                            : "start_failed";
                        changed = set_dead_locked(h, k, r);
                        at = k->ended_at;
                        snprintf(why, sizeof(why), "%s", k->stop_reason);
                        if (changed) {
                            k->refs++;
                            unref_locked(h, k);    /* leaves the list when nobody holds it */
                        }
                    }
                    pthread_mutex_unlock(&h->mu);
                    if (changed)
                        persist_dead(h, a->id, why, at);
                }
            }
        }
        int64_t keep = h->srv->cfg.kernel_journal_retention_ms;
        int64_t every = keep > 0 && keep / 4 < SWEEP_MS ? (keep / 4 > TICK_MS ? keep / 4 : TICK_MS) : SWEEP_MS;
        if (h->sweep_ms > 0)
            every = h->sweep_ms;   /* tests shorten it */
        if ((keep > 0 || h->srv->cfg.kernel_dead_journals_per_user > 0) && now - h->swept_ms >= every) {
            h->swept_ms = now;
            retention_sweep(h);
        }
        pthread_mutex_lock(&h->mu);
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += TICK_MS * 1000000L;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        if (!h->stopping)
            pthread_cond_timedwait(&h->cv, &h->mu, &ts);
    }
    h->nthreads--;
    pthread_cond_broadcast(&h->cv);
    pthread_mutex_unlock(&h->mu);
    return NULL;
}

/* ---- lifecycle ------------------------------------------------------------------------ */

int kh_hub_start(gw_server *srv)
{
    kh_hub *h;
    pthread_t t;
    int err;

    if (srv->sched == NULL)
        return 0;   /* no scheduler: no kernels */
    if ((h = calloc(1, sizeof(*h))) == NULL)
        return ed_error_set(ED_ENOMEM, "kernel hub");
    h->srv = srv;
    h->sweep_ms = env_ms("EDDY_KERNEL_SWEEP_MS", 0);
    pthread_mutex_init(&h->mu, NULL);
    pthread_cond_init(&h->cv, NULL);
    /* kernels die with the server: whatever a previous run left is dead
     * (the scheduler failed and refunded their jobs as platform errors) */
    if ((err = db_exec(h, "UPDATE kernels SET status = 'dead', stop_reason = 'server_restart', ended_at = ?4 "
                          "WHERE status != 'dead'",
                       NULL, NULL, NULL, ed_now_ms(), 0)) < 0) {
        pthread_cond_destroy(&h->cv);
        pthread_mutex_destroy(&h->mu);
        free(h);
        return err;
    }
    h->nthreads = 1;
    if (pthread_create(&t, NULL, culler_main, h) != 0) {
        pthread_cond_destroy(&h->cv);
        pthread_mutex_destroy(&h->mu);
        free(h);
        return ed_error_set(ED_ENOMEM, "kernel culler thread");
    }
    pthread_detach(t);
    srv->kernels = h;
    sched_kernel_hook_set(srv->sched, on_socket, h);
    return 0;
}

void kh_hub_stop(gw_server *srv)
{
    kh_hub *h;
    int64_t deadline;

    if (srv == NULL || (h = srv->kernels) == NULL)
        return;
    sched_kernel_hook_set(srv->sched, NULL, NULL);
    pthread_mutex_lock(&h->mu);
    h->stopping = true;
    for (kh_k *k = h->list; k; k = k->next) {
        k->refs++;   /* kept until the end of stop: readers may finish meanwhile */
        set_dead_locked(h, k, "server_stop");
        pthread_mutex_lock(&k->wmu);
        if (k->fd >= 0)
            shutdown(k->fd, SHUT_RDWR);    /* the reader sees the end */
        pthread_mutex_unlock(&k->wmu);
    }
    for (int i = 0; i < h->npend; i++)
        close(h->pend[i].fd);
    h->npend = 0;
    pthread_cond_broadcast(&h->cv);
    /* every kernel still listed is held (refs above), so the list is stable */
    for (kh_k *k = h->list; k; k = k->next)
        persist_dead(h, k->id, k->stop_reason, k->ended_at);
    deadline = ed_mono_ns() + 10LL * 1000000000;
    while (h->nthreads > 0 && ed_mono_ns() < deadline) {
        pthread_mutex_unlock(&h->mu);
        usleep(10000);
        pthread_mutex_lock(&h->mu);
    }
    if (h->nthreads > 0) {
        /* a thread is stuck (it still holds the hub): leak rather than free under it */
        ed_log_error("kernel.stop", "%d kernel threads did not end; leaving the hub", h->nthreads);
        pthread_mutex_unlock(&h->mu);
        srv->kernels = NULL;
        return;
    }
    while (h->list) {
        kh_k *k = h->list;
        h->list = k->next;
        for (struct kh_sub *s = k->subs; s; s = s->next)
            s->k = NULL;
        k_free(k);
    }
    pthread_mutex_unlock(&h->mu);
    srv->kernels = NULL;
    /* subscriptions still open are freed by kh_unsubscribe, which must not
     * touch the hub afterwards: the server stops streams first */
    pthread_cond_destroy(&h->cv);
    pthread_mutex_destroy(&h->mu);
    free(h);
}

/* ---- kernels ------------------------------------------------------------------------ */

static int64_t env_ms(const char *name, int64_t dflt)
{
    const char *v = getenv(name);
    char *end;
    long long n;

    if (v == NULL || *v == '\0')
        return dflt;
    n = strtoll(v, &end, 10);
    return *end == '\0' && n > 0 ? n : dflt;
}

static int tier_limits(kh_hub *h, const char *tier, int *max_kernels, int64_t *max_session, int64_t *idle)
{
    sqlite3_stmt *q;
    int err, rc;

    if ((err = ed_store_prepare(&q, h->srv->store,
                                "SELECT max_kernels, max_session_ms, idle_timeout_ms FROM tiers WHERE name = ?1")) < 0)
        return err;
    sqlite3_bind_text(q, 1, tier ? tier : "", -1, SQLITE_STATIC);
    if ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        *max_kernels = sqlite3_column_int(q, 0);
        *max_session = sqlite3_column_int64(q, 1);
        *idle = sqlite3_column_int64(q, 2);
        err = 0;
    } else {
        err = rc == SQLITE_DONE ? ed_error_set(ED_ENOTFOUND, "unknown tier '%s'", tier ? tier : "")
                                : ed_store_error(ed_store_db(h->srv->store), rc, "tier");
    }
    sqlite3_finalize(q);
    /* tests and operators shorten them without editing the tier */
    *max_session = env_ms("EDDY_KERNEL_MAX_SESSION_MS", *max_session);
    *idle = env_ms("EDDY_KERNEL_IDLE_MS", *idle);
    return err;
}

/* Queue the kernel's job. Its /home/aistudio/work is the project's live
 * working tree, bound read-write (scheduler/exec_local.c): nothing is
 * copied, and a kernel can change the tree, so it runs only on a project of
 * its own user (a public project of someone else is forked first). */
static int submit_job(sched_job_info *j, kh_hub *h, const kh_k *k)
{
    sched_job_spec sp;
    proj *p = NULL;
    int err;

    if ((err = proj_get(&p, h->srv->projects, k->user_id, k->project_id)) < 0)
        return err;
    if (p->owner_id != k->user_id) {
        proj_free(p);
        return ed_error_set(ED_EPERM, "a kernel works in its project's files and may change them: start it on "
                            "a project of your own (fork this one)");
    }
    proj_free(p);
    /* its workspace quota tree attached (mounted again after a restart, its
     * tier's limit set) before the tree is bound; 422 where the tier has a
     * workspace limit and the host no disk quota mechanism (proj_ws.h) */
    if ((err = proj_workspace_attach(h->srv->projects, k->user_id, k->project_id)) < 0)
        return err;
    memset(&sp, 0, sizeof(sp));
    sp.user_id = k->user_id;
    sp.tier = k->tier;
    sp.project_id = k->project_id;
    sp.resource = k->resource;
    sp.max_runtime_ms = 0;   /* the tier's max session */
    return sched_kernel_submit(j, h->srv->sched, &sp);
}

static void fill_info_locked(kh_kernel *out, const kh_k *k)
{
    memset(out, 0, sizeof(*out));
    snprintf(out->id, sizeof(out->id), "%s", k->id);
    out->user_id = k->user_id;
    out->job_id = k->job_id;
    snprintf(out->project_id, sizeof(out->project_id), "%s", k->project_id);
    snprintf(out->resource, sizeof(out->resource), "%s", k->resource);
    snprintf(out->status, sizeof(out->status), "%s", k->state);
    if (!alive(k))
        snprintf(out->stop_reason, sizeof(out->stop_reason), "%s", k->stop_reason);
    out->created_at = k->created_at;
    out->started_at = k->started_at;
    out->last_activity_at = k->last_activity_at;
    out->ended_at = k->ended_at;
    out->connections = k->nsubs;
    out->last_seq = k->last_seq;
}

int kh_kernel_start(kh_kernel *out, gw_server *srv, int64_t user_id, const char *tier, const char *project_id,
                    const char *resource)
{
    kh_hub *h = srv->kernels;
    proj *p = NULL;
    kh_k *k;
    sched_job_info j;
    int max_kernels = 0, live = 0, err;

    if (h == NULL)
        return ed_error_set(ED_EUNPROC, "interactive kernels are not available on this server");
    if (project_id == NULL || *project_id == '\0' || resource == NULL || *resource == '\0')
        return ed_error_set(ED_EINVAL, "a kernel needs a project_id and a resource");
    if ((k = calloc(1, sizeof(*k))) == NULL)
        return ed_error_set(ED_ENOMEM, "kernel");
    pthread_mutex_init(&k->wmu, NULL);
    pthread_mutex_init(&k->jmu, NULL);
    k->fd = -1;
    k->user_id = user_id;
    if ((err = tier_limits(h, tier, &max_kernels, &k->max_session_ms, &k->idle_ms)) < 0)
        goto fail;
    if ((err = proj_get(&p, srv->projects, user_id, project_id)) < 0)
        goto fail;
    snprintf(k->tier, sizeof(k->tier), "%s", tier);
    snprintf(k->project_id, sizeof(k->project_id), "%s", p->id);
    if (strlen(resource) >= sizeof(k->resource)) {
        err = ed_error_set(ED_EINVAL, "unknown resource class '%.40s'", resource);
        goto fail;
    }
    snprintf(k->resource, sizeof(k->resource), "%s", resource);
    pthread_mutex_lock(&h->mu);
    for (kh_k *o = h->list; o; o = o->next)
        if (o->user_id == user_id && alive(o))
            live++;
    pthread_mutex_unlock(&h->mu);
    if (max_kernels >= 0 && live >= max_kernels) {
        err = ed_error_set(ED_ELIMIT, "your tier allows %d running kernel%s; stop one first", max_kernels,
                           max_kernels == 1 ? "" : "s");
        goto fail;
    }
    new_uuid(k->id);
    k->created_at = k->last_activity_at = ed_now_ms();
    snprintf(k->state, sizeof(k->state), "queued");
    if ((err = db_exec(h, "INSERT INTO kernels(id, user_id, project_id, resource, status, created_at, "
                          "last_activity_at) VALUES (?1, ?4, ?2, ?3, 'queued', ?5, ?5)",
                       k->id, k->project_id, k->resource, user_id, k->created_at)) < 0)
        goto fail;
    if ((err = submit_job(&j, h, k)) < 0) {
        char msg[512];
        snprintf(msg, sizeof(msg), "%s", ed_error_last());
        db_exec(h, "DELETE FROM kernels WHERE id = ?1", k->id, NULL, NULL, 0, 0);
        err = ed_error_set(err, "%s", msg);
        goto fail;
    }
    k->job_id = j.id;
    db_exec(h, "UPDATE kernels SET job_id = ?4 WHERE id = ?1", k->id, NULL, NULL, j.id, 0);
    pthread_mutex_lock(&h->mu);
    k->next = h->list;
    h->list = k;
    claim_pending_locked(h, k);
    fill_info_locked(out, k);
    pthread_mutex_unlock(&h->mu);
    if (strcmp(j.status, "queued") == 0 && strcmp(out->status, "queued") == 0) {
        out->queue_position = j.queue_position;
        out->eta_ms = j.eta_ms;
    }
    ed_log_info("kernel.start", "kernel %s (job %lld) for user %lld in %s on %s", k->id, (long long)j.id,
                (long long)user_id, k->project_id, k->resource);
    proj_free(p);
    return 0;
fail:
    proj_free(p);
    k_free(k);
    return err;
}

/* A dead kernel from the store. */
static int get_stored(kh_kernel *out, kh_hub *h, int64_t user_id, const char *id)
{
    sqlite3_stmt *q;
    int rc, err;

    if ((err = ed_store_prepare(&q, h->srv->store,
                                "SELECT k.id, k.project_id, k.resource, k.job_id, k.status, k.stop_reason, "
                                "k.created_at, k.started_at, k.last_activity_at, k.ended_at, "
                                "(SELECT MAX(seq) FROM kernel_journal WHERE kernel_id = k.id) "
                                "FROM kernels k WHERE k.id = ?1 AND k.user_id = ?2")) < 0)
        return err;
    sqlite3_bind_text(q, 1, id, -1, SQLITE_STATIC);
    sqlite3_bind_int64(q, 2, user_id);
    if ((rc = sqlite3_step(q)) != SQLITE_ROW) {
        err = rc == SQLITE_DONE ? ed_error_set(ED_ENOTFOUND, "no kernel %.40s", id)
                                : ed_store_error(ed_store_db(h->srv->store), rc, "kernel");
        sqlite3_finalize(q);
        return err;
    }
    memset(out, 0, sizeof(*out));
    snprintf(out->id, sizeof(out->id), "%s", (const char *)sqlite3_column_text(q, 0));
    out->user_id = user_id;
    snprintf(out->project_id, sizeof(out->project_id), "%s", (const char *)sqlite3_column_text(q, 1));
    snprintf(out->resource, sizeof(out->resource), "%s", (const char *)sqlite3_column_text(q, 2));
    out->job_id = sqlite3_column_int64(q, 3);
    snprintf(out->status, sizeof(out->status), "dead");
    snprintf(out->stop_reason, sizeof(out->stop_reason), "%s",
             sqlite3_column_text(q, 5) ? (const char *)sqlite3_column_text(q, 5) : "died");
    out->created_at = sqlite3_column_int64(q, 6);
    out->started_at = sqlite3_column_int64(q, 7);
    out->last_activity_at = sqlite3_column_int64(q, 8);
    out->ended_at = sqlite3_column_int64(q, 9);
    out->last_seq = sqlite3_column_int64(q, 10);
    sqlite3_finalize(q);
    return 0;
}

static bool valid_id(const char *id)
{
    if (id == NULL || strlen(id) != KH_ID_LEN - 1)
        return false;
    for (const char *p = id; *p; p++)
        if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f') || *p == '-'))
            return false;
    return true;
}

int kh_kernel_get(kh_kernel *out, gw_server *srv, int64_t user_id, const char *id)
{
    kh_hub *h = srv->kernels;
    kh_k *k;
    bool queued = false;

    if (h == NULL || !valid_id(id) || user_id <= 0)
        return ed_error_set(ED_ENOTFOUND, "no kernel %.40s", id ? id : "");
    pthread_mutex_lock(&h->mu);
    k = find_locked(h, id);
    if (k && k->user_id != user_id)
        k = NULL;
    if (k) {
        fill_info_locked(out, k);
        queued = strcmp(k->state, "queued") == 0;
    }
    pthread_mutex_unlock(&h->mu);
    if (k == NULL)
        return get_stored(out, h, user_id, id);
    if (queued && out->job_id > 0) {
        sched_job_info j;
        if (sched_job_get(&j, srv->sched, user_id, out->job_id) == 0 && strcmp(j.status, "queued") == 0) {
            out->queue_position = j.queue_position;
            out->eta_ms = j.eta_ms;
        } else if (strcmp(j.status, "running") == 0) {
            snprintf(out->status, sizeof(out->status), "starting");
        }
    }
    return 0;
}

int kh_kernel_each(gw_server *srv, int64_t user_id, bool with_dead,
                   int (*fn)(const kh_kernel *k, void *payload), void *payload)
{
    kh_hub *h = srv->kernels;
    sqlite3_stmt *q;
    char (*ids)[KH_ID_LEN] = NULL;
    size_t n = 0, cap = 0;
    int rc, err;

    if (h == NULL)
        return 0;
    if ((err = ed_store_prepare(&q, srv->store,
                                with_dead ? "SELECT id FROM kernels WHERE user_id = ?1 ORDER BY created_at DESC, id "
                                            "LIMIT 500"
                                          : "SELECT id FROM kernels WHERE user_id = ?1 AND status != 'dead' "
                                            "ORDER BY created_at DESC, id")) < 0)
        return err;
    sqlite3_bind_int64(q, 1, user_id);
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        if (n == cap) {
            size_t nc = cap ? cap * 2 : 16;
            void *nv = realloc(ids, nc * sizeof(*ids));
            if (nv == NULL) {
                sqlite3_finalize(q);
                free(ids);
                return ed_error_set(ED_ENOMEM, "kernel list");
            }
            ids = nv;
            cap = nc;
        }
        snprintf(ids[n++], KH_ID_LEN, "%s", (const char *)sqlite3_column_text(q, 0));
    }
    sqlite3_finalize(q);
    if (rc != SQLITE_DONE) {
        free(ids);
        return ed_store_error(ed_store_db(srv->store), rc, "kernel list");
    }
    err = 0;
    for (size_t i = 0; i < n && err == 0; i++) {
        kh_kernel k;
        if (kh_kernel_get(&k, srv, user_id, ids[i]) < 0)
            continue;
        if (!with_dead && strcmp(k.status, "dead") == 0)
            continue;
        err = fn(&k, payload);
    }
    free(ids);
    return err < 0 ? err : 0;
}

/* The live kernel `id` of user_id with a reference taken, or NULL with
 * ED_ENOTFOUND / ED_ECONFLICT set in *err. */
static kh_k *take(kh_hub *h, int64_t user_id, const char *id, int *err)
{
    kh_k *k;

    if (h == NULL || !valid_id(id)) {
        *err = ed_error_set(ED_ENOTFOUND, "no kernel %.40s", id ? id : "");
        return NULL;
    }
    pthread_mutex_lock(&h->mu);
    k = find_locked(h, id);
    if (k && k->user_id != user_id)
        k = NULL;
    if (k)
        k->refs++;
    pthread_mutex_unlock(&h->mu);
    if (k == NULL) {
        kh_kernel info;
        *err = get_stored(&info, h, user_id, id);
        if (*err == 0)
            *err = ed_error_set(ED_ECONFLICT, "kernel %s is dead (%s)", id, info.stop_reason);
    }
    return k;
}

static void drop(kh_hub *h, kh_k *k)
{
    pthread_mutex_lock(&h->mu);
    unref_locked(h, k);
    pthread_mutex_unlock(&h->mu);
}

/* Write one message to k's socket. No caller waits longer than
 * SEND_TIMEOUT_MS, for the socket or for another sender: a process that
 * does not take the message by then (eddy-kernel's reader thread always
 * reads at once; a stopped or hijacked process does not) is stopped as a
 * protocol error. */
static int send_msg(kh_hub *h, kh_k *k, const json_t *msg)
{
    char *s = json_dumps(msg, JSON_COMPACT);
    unsigned char hdr[KR_FRAME_HDR];
    size_t len, off = 0;
    int64_t deadline = ed_mono_ns() + (int64_t)SEND_TIMEOUT_MS * 1000000, stuck_job = 0;
    int err = 0;

    if (s == NULL)
        return ed_error_set(ED_ENOMEM, "message");
    len = strlen(s);
    if (len > KR_FRAME_MAX) {
        free(s);
        return ed_error_set(ED_ETOOBIG, "a message of %zu bytes is over the kernel's limit", len);
    }
    kr_frame_header(hdr, (uint32_t)len);
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += SEND_TIMEOUT_MS / 1000;
    if (pthread_mutex_timedlock(&k->wmu, &until) != 0) {
        free(s);
        return ed_error_set(ED_EBUSY, "kernel %s is not taking messages", k->id);
    }
    if (k->fd < 0) {
        err = ed_error_set(ED_ECONFLICT, "kernel %s is not running yet", k->id);
    } else if (k->stuck) {
        err = ed_error_set(ED_ECONFLICT, "kernel %s stopped reading its messages", k->id);
    } else {
        const char *parts[2] = {(const char *)hdr, s};
        size_t lens[2] = {KR_FRAME_HDR, len};
        for (int i = 0; i < 2 && err == 0; i++) {
            for (off = 0; off < lens[i];) {
                ssize_t w = send(k->fd, parts[i] + off, lens[i] - off, MSG_NOSIGNAL | MSG_DONTWAIT);
                if (w < 0 && errno == EINTR)
                    continue;
                if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
                    int64_t left_ms = (deadline - ed_mono_ns()) / 1000000;
                    struct pollfd pfd = {k->fd, POLLOUT, 0};
                    if (left_ms > 0 && poll(&pfd, 1, (int)left_ms) >= 0)
                        continue;
                    /* half a frame may be out: the stream is unusable */
                    k->stuck = true;
                    stuck_job = k->fd_job;
                    shutdown(k->fd, SHUT_RDWR);   /* its reader ends */
                    err = ed_error_set(ED_ECONFLICT, "kernel %s stopped reading its messages", k->id);
                    break;
                }
                if (w <= 0) {
                    err = ed_error_set(ED_ECONFLICT, "kernel %s is not running", k->id);
                    break;
                }
                off += (size_t)w;
            }
        }
    }
    pthread_mutex_unlock(&k->wmu);
    free(s);
    if (stuck_job > 0) {
        char msg_copy[256];
        snprintf(msg_copy, sizeof(msg_copy), "%s", ed_error_last());
        protocol_error(h, k, stuck_job, "it did not read its messages for %d s", SEND_TIMEOUT_MS / 1000);
        err = ed_error_set(err, "%s", msg_copy);
    }
    return err;
}

int kh_send(gw_server *srv, int64_t user_id, const char *id, const json_t *msg)
{
    kh_hub *h = srv->kernels;
    const char *ch;
    kh_k *k;
    int err = 0;

    if (!json_is_object(msg) || !json_is_object(json_object_get(msg, "header")) ||
        !json_is_string(json_object_get(json_object_get(msg, "header"), "msg_type")))
        return ed_error_set(ED_EINVAL, "a kernel message is an object with a header holding its msg_type");
    ch = kr_msg_channel(msg);
    if (strcmp(ch, "shell") != 0 && strcmp(ch, "control") != 0 && strcmp(ch, "stdin") != 0)
        return ed_error_set(ED_EINVAL, "messages to a kernel go on shell, control or stdin, not '%.20s'", ch);
    if ((k = take(h, user_id, id, &err)) == NULL)
        return err;
    pthread_mutex_lock(&h->mu);
    k->last_activity_at = ed_now_ms();
    bool ok = alive(k);
    pthread_mutex_unlock(&h->mu);
    err = ok ? send_msg(h, k, msg) : ed_error_set(ED_ECONFLICT, "kernel %s is dead", id);
    drop(h, k);
    return err;
}

/* The notebook exists in the project's working tree, is JSON and has a code
 * cell with that id: checked before the code runs, so a typo is an error now
 * rather than a log line later. */
static int check_cell(gw_server *srv, int64_t user_id, const char *project, const char *path, const char *cell_id)
{
    char *buf = NULL;
    size_t len = 0, i;
    json_t *nb = NULL, *cell;
    int err;

    if ((err = proj_file_read(&buf, &len, srv->projects, user_id, project, path, NULL)) < 0)
        return err;
    if ((err = ed_json_parse_object(&nb, buf, len)) < 0) {
        free(buf);
        return ed_error_set(ED_EUNPROC, "%s is not a notebook", path);
    }
    free(buf);
    err = ed_error_set(ED_ENOTFOUND, "notebook %s has no code cell with id '%s'", path, cell_id);
    json_array_foreach(json_object_get(nb, "cells"), i, cell) {
        const char *cid = json_string_value(json_object_get(cell, "id"));
        const char *type = json_string_value(json_object_get(cell, "cell_type"));
        if (cid && type && strcmp(cid, cell_id) == 0 && strcmp(type, "code") == 0) {
            err = 0;
            break;
        }
    }
    json_decref(nb);
    return err;
}

int kh_execute(char out_msg_id[33], gw_server *srv, int64_t user_id, const char *id, const char *code,
               const char *cell_id, const char *notebook_path)
{
    kh_hub *h = srv->kernels;
    json_t *m = NULL;
    fold *f = NULL;
    kh_k *k;
    int err = 0;

    if (code == NULL)
        return ed_error_set(ED_EINVAL, "field 'code' is required");
    if ((cell_id == NULL) != (notebook_path == NULL))
        return ed_error_set(ED_EINVAL, "fields 'cell_id' and 'notebook_path' go together");
    if (notebook_path && ((err = proj_path_validate(notebook_path, strlen(notebook_path))) < 0 ||
                          strlen(cell_id) == 0 || strlen(cell_id) > 64))
        return err < 0 ? err : ed_error_set(ED_EINVAL, "field 'cell_id' must be 1..64 characters");
    if ((err = kr_msg_new(&m, "shell", "execute_request", "eddy-rest", NULL,
                          json_pack("{s:s, s:b, s:b, s:{}, s:b, s:b}", "code", code, "silent", 0, "store_history", 1,
                                    "user_expressions", "allow_stdin", 0, "stop_on_error", 1))) < 0)
        return err;
    snprintf(out_msg_id, 33, "%s", kr_msg_id(m));
    if ((k = take(h, user_id, id, &err)) == NULL) {
        json_decref(m);
        return err;
    }
    if (notebook_path && (err = check_cell(srv, user_id, k->project_id, notebook_path, cell_id)) < 0) {
        json_decref(m);
        drop(h, k);
        return err;
    }
    if (notebook_path) {
        if ((f = calloc(1, sizeof(*f))) == NULL || (f->path = strdup(notebook_path)) == NULL ||
            (f->cell_id = strdup(cell_id)) == NULL || (f->outputs = json_array()) == NULL) {
            if (f) {
                free(f->path);
                free(f->cell_id);
                free(f);
            }
            json_decref(m);
            drop(h, k);
            return ed_error_set(ED_ENOMEM, "fold");
        }
        snprintf(f->msg_id, sizeof(f->msg_id), "%s", out_msg_id);
        pthread_mutex_lock(&h->mu);
        f->next = k->folds;
        k->folds = f;
        pthread_mutex_unlock(&h->mu);
    }
    pthread_mutex_lock(&h->mu);
    k->last_activity_at = ed_now_ms();
    bool ok = alive(k);
    pthread_mutex_unlock(&h->mu);
    err = ok ? send_msg(h, k, m) : ed_error_set(ED_ECONFLICT, "kernel %s is dead", id);
    if (err < 0 && f) {
        pthread_mutex_lock(&h->mu);
        for (fold **pp = &k->folds; *pp; pp = &(*pp)->next)
            if (*pp == f) {
                *pp = f->next;
                break;
            }
        pthread_mutex_unlock(&h->mu);
        fold_free(f);
    }
    json_decref(m);
    drop(h, k);
    return err;
}

int kh_kernel_interrupt(gw_server *srv, int64_t user_id, const char *id)
{
    json_t *m = NULL;
    int err;

    if ((err = kr_msg_new(&m, "control", "interrupt_request", "eddy-rest", NULL, NULL)) < 0)
        return err;
    err = kh_send(srv, user_id, id, m);
    json_decref(m);
    return err;
}

int kh_kernel_shutdown(gw_server *srv, int64_t user_id, const char *id, const char *reason)
{
    kh_hub *h = srv->kernels;
    kh_k *k;
    int64_t job = 0;
    bool queued_only, changed = false;
    char why[32];
    int err = 0;

    if ((k = take(h, user_id, id, &err)) == NULL) {
        if (err != ED_ECONFLICT)
            return err;
        /* already dead (and the caller's): its sessions go all the same */
        if (db_exec(h, "DELETE FROM jupyter_sessions WHERE kernel_id = ?1", id, NULL, NULL, 0, 0) < 0)
            ed_log_error("kernel.sessions", "kernel %s: %s", id, ed_error_last());
        ed_error_clear();
        return 0;
    }
    pthread_mutex_lock(&h->mu);
    if (alive(k) && k->stop_reason[0] == '\0')
        snprintf(k->stop_reason, sizeof(k->stop_reason), "%s", reason ? reason : "shutdown");
    k->stopping = true;
    job = k->job_id;
    queued_only = k->fd < 0;
    pthread_mutex_unlock(&h->mu);
    if (job > 0)
        err = stop_job(h, user_id, job);
    /* a kernel shut down takes its Jupyter sessions with it */
    if (db_exec(h, "DELETE FROM jupyter_sessions WHERE kernel_id = ?1", id, NULL, NULL, 0, 0) < 0)
        ed_log_error("kernel.sessions", "kernel %s: %s", id, ed_error_last());
    if (queued_only) {
        /* no process to wait for */
        pthread_mutex_lock(&h->mu);
        if (k->fd < 0 && k->readers == 0)
            changed = set_dead_locked(h, k, "shutdown");
        snprintf(why, sizeof(why), "%s", k->stop_reason);
        pthread_mutex_unlock(&h->mu);
        if (changed)
            persist_dead(h, id, why, ed_now_ms());
    } else {
        /* wait a little for the process to go, so a GET right after says dead */
        for (int i = 0; i < 100; i++) {
            pthread_mutex_lock(&h->mu);
            bool gone = !alive(k);
            pthread_mutex_unlock(&h->mu);
            if (gone)
                break;
            usleep(20000);
        }
    }
    drop(h, k);
    return err;
}

int kh_kernel_restart(kh_kernel *out, gw_server *srv, int64_t user_id, const char *id)
{
    kh_hub *h = srv->kernels;
    sched_job_info j;
    kh_k *k;
    int64_t old;
    int err = 0;

    if ((k = take(h, user_id, id, &err)) == NULL)
        return err;
    pthread_mutex_lock(&h->mu);
    if (!alive(k) || k->stopping || k->job_id == 0) {
        pthread_mutex_unlock(&h->mu);
        drop(h, k);
        return ed_error_set(ED_ECONFLICT, "kernel %s is %s", id, alive(k) ? "stopping or restarting" : "dead");
    }
    old = k->job_id;
    k->job_id = 0;     /* the old process's end is not the kernel's death */
    snprintf(k->state, sizeof(k->state), "starting");
    pthread_mutex_unlock(&h->mu);
    journal_status(h, k, "restarting");
    stop_job(h, user_id, old);
    err = submit_job(&j, h, k);
    pthread_mutex_lock(&h->mu);
    if (err < 0) {
        char why[32];
        bool changed = set_dead_locked(h, k, "restart_failed");
        snprintf(why, sizeof(why), "%s", k->stop_reason);
        pthread_mutex_unlock(&h->mu);
        if (changed)
            persist_dead(h, id, why, ed_now_ms());
        drop(h, k);
        return err;
    }
    k->job_id = j.id;
    k->started_at = 0;
    k->warned = false;
    k->last_activity_at = ed_now_ms();
    snprintf(k->state, sizeof(k->state), "%s", strcmp(j.status, "queued") == 0 ? "queued" : "starting");
    claim_pending_locked(h, k);
    if (out)
        fill_info_locked(out, k);
    pthread_mutex_unlock(&h->mu);
    db_exec(h, "UPDATE kernels SET job_id = ?4 WHERE id = ?1", id, NULL, NULL, j.id, 0);
    drop(h, k);
    return 0;
}

/* ---- subscriptions ---------------------------------------------------------------------- */

int kh_subscribe(kh_sub **out, gw_server *srv, int64_t user_id, const char *id, int64_t after_seq,
                 void (*wake)(void *wake_arg), void *wake_arg)
{
    kh_hub *h = srv->kernels;
    kh_kernel info;
    kh_sub *s;
    kh_k *k;
    int err;

    *out = NULL;
    if (after_seq < 0)
        return ed_error_set(ED_EINVAL, "'after' must be a sequence number >= 0");
    if ((err = kh_kernel_get(&info, srv, user_id, id)) < 0)
        return err;
    if ((s = calloc(1, sizeof(*s))) == NULL)
        return ed_error_set(ED_ENOMEM, "subscription");
    s->h = h;
    s->after = after_seq;
    s->wake = wake;
    s->wake_arg = wake_arg;
    pthread_mutex_lock(&h->mu);
    k = find_locked(h, info.id);
    if (k && k->user_id == user_id) {
        k->refs++;
        k->nsubs++;
        k->last_activity_at = ed_now_ms();
        s->k = k;
        s->next = k->subs;
        k->subs = s;
    }
    pthread_mutex_unlock(&h->mu);
    if (k == NULL) {
        /* dead and gone from memory: replay from the journal only */
        s->k = NULL;
    }
    snprintf(s->id_buf, sizeof(s->id_buf), "%s", info.id);
    s->stored_last = info.last_seq;
    *out = s;
    return 0;
}

/* The first journaled message of kernel `id` with seq >= want: 1 with *out
 * (malloc'd) and *seq, 0 when there is none. */
static int journal_read(char **out, int64_t *seq, kh_hub *h, const char *id, int64_t want)
{
    sqlite3_stmt *q;
    int rc, err;

    if ((err = ed_store_prepare(&q, h->srv->store, "SELECT seq, msg FROM kernel_journal WHERE kernel_id = ?1 AND "
                                                   "seq >= ?2 ORDER BY seq LIMIT 1")) < 0)
        return err;
    sqlite3_bind_text(q, 1, id, -1, SQLITE_STATIC);
    sqlite3_bind_int64(q, 2, want);
    rc = sqlite3_step(q);
    if (rc == SQLITE_ROW) {
        *seq = sqlite3_column_int64(q, 0);
        *out = strdup((const char *)sqlite3_column_text(q, 1));
        err = *out ? 1 : ed_error_set(ED_ENOMEM, "journal");
    } else {
        err = rc == SQLITE_DONE ? 0 : ed_store_error(ed_store_db(h->srv->store), rc, "journal");
    }
    sqlite3_finalize(q);
    return err;
}

int kh_sub_next(json_t **out_msg, int64_t *out_seq, kh_sub *s, int timeout_ms)
{
    kh_hub *h = s->h;
    kh_k *k = s->k;
    struct timespec deadline;

    *out_msg = NULL;
    *out_seq = 0;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += timeout_ms / 1000;
    deadline.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
    if (deadline.tv_nsec >= 1000000000L) {
        deadline.tv_sec++;
        deadline.tv_nsec -= 1000000000L;
    }
    for (;;) {
        char *copy = NULL;
        int64_t want = s->after + 1, seq = want, last;
        bool from_db = false, ended = false;
        int err;

        if (k == NULL) {
            from_db = true;
            last = s->stored_last;
        } else {
            pthread_mutex_lock(&h->mu);
            last = k->last_seq;
            if (last >= want) {
                int slot = (int)(want % RING);
                if (k->ring_seq[slot] == want && k->ring[slot]) {
                    if ((copy = strdup(k->ring[slot])) == NULL) {
                        pthread_mutex_unlock(&h->mu);
                        return ed_error_set(ED_ENOMEM, "message");
                    }
                } else {
                    from_db = true;
                }
            } else if (!alive(k) && k->readers == 0) {
                ended = true;
            } else if (timeout_ms <= 0) {
                pthread_mutex_unlock(&h->mu);
                return 0;
            } else if (pthread_cond_timedwait(&h->cv, &h->mu, &deadline) == ETIMEDOUT) {
                pthread_mutex_unlock(&h->mu);
                return 0;
            } else {
                pthread_mutex_unlock(&h->mu);
                continue;
            }
            pthread_mutex_unlock(&h->mu);
        }
        if (ended || (k == NULL && want > last))
            return ed_error_set(ED_ENOTFOUND, "the kernel ended and every message was delivered");
        if (from_db) {
            if ((err = journal_read(&copy, &seq, h, s->id_buf, want)) < 0)
                return err;
            if (err == 0 || seq > last) {
                /* a gap (a journal write failed and the ring moved on): skip it */
                free(copy);
                s->after = last;
                continue;
            }
        }
        json_t *m = NULL;
        if (ed_json_parse_object(&m, copy, strlen(copy)) < 0) {
            free(copy);
            s->after = seq;
            continue;
        }
        free(copy);
        s->after = seq;
        *out_msg = m;
        *out_seq = seq;
        return 1;
    }
}

void kh_unsubscribe(kh_sub *s)
{
    kh_hub *h;

    if (s == NULL)
        return;
    h = s->h;
    if (s->k) {
        pthread_mutex_lock(&h->mu);
        kh_k *k = s->k;
        for (kh_sub **pp = &k->subs; *pp; pp = &(*pp)->next)
            if (*pp == s) {
                *pp = s->next;
                break;
            }
        k->nsubs--;
        k->last_activity_at = ed_now_ms();   /* the idle timeout counts from the last client leaving */
        unref_locked(h, k);
        pthread_mutex_unlock(&h->mu);
    }
    free(s);
}
