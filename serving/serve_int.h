/*
 * serve_int.h - private to serving/: the store's rows (store.c) and the
 * hub's live state (hub.c).
 */
#ifndef SERVE_INT_H
#define SERVE_INT_H

#include "serve.h"

#include <jansson.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

struct sbx_job;
struct sbx_slot;
struct sched;

typedef struct slog slog;

/* ---- store.c -------------------------------------------------------------- */

int serve__dep_insert(int64_t *out_id, ed_store *st, const serve_spec *s, const char *sha, int64_t bytes,
                      const char *inputs, const char *outputs, int64_t now);
int serve__dep_load(serve_deployment *out, ed_store *st, int64_t id);
int serve__dep_find(int64_t *out_id, ed_store *st, int64_t user_id, const char *ref);
int serve__dep_running_ids(int64_t *ids, size_t max, size_t *n, ed_store *st);
int serve__dep_list(serve_deployment *out, size_t max, size_t *n, ed_store *st, int64_t user_id, int64_t before);
/* Write the deployment's settings (replicas..status, version). */
int serve__dep_save(ed_store *st, const serve_deployment *d, int64_t now);
int serve__version_insert(ed_store *st, int64_t dep, int number, const char *source, const char *sha, int64_t bytes,
                          const char *inputs, const char *outputs, int64_t now);
int serve__rep_insert(int64_t *out_id, ed_store *st, int64_t dep, int version, int64_t now);
int serve__rep_status(ed_store *st, int64_t rid, const char *status, const char *detail, int64_t ended_at);
int serve__rep_metered(ed_store *st, int64_t rid, int64_t seq, int64_t ms);
int serve__reps_end_all(ed_store *st, int64_t now);
int serve__calls_insert(ed_store *st, slog *list);
int serve__key_spent_today(int64_t *out, ed_store *st, int64_t key_id, int64_t now);
int serve__user_unposted(int64_t *out, ed_store *st, int64_t user_id);

/* ---- hub.c ------------------------------------------------------------------- */

typedef struct sitem sitem;
typedef struct srep srep;
typedef struct sdep sdep;

enum { REP_STARTING, REP_READY, REP_DRAINING, REP_ENDED };

struct srep {
    int64_t id;
    int version;
    int state;
    bool launched;               /* the sandbox started: metered from then */
    int fd;                      /* the hub's end of the socketpair */
    struct sbx_job *job;
    struct sbx_slot *slot;
    pthread_t th;
    int64_t started_ms, metered_to_ms, meter_seq;
    char detail[256];
    sdep *d;
    struct serve_hub *h;
    srep *next;
};

typedef struct sinput {
    char name[SERVE_NAME_MAX + 1];
    fw_dtype dtype;
    int ndim;
    int64_t shape[SERVE_MAX_DIMS];    /* -1 dynamic */
} sinput;

struct sdep {
    int64_t id, user_id;
    char name[SERVE_NAME_MAX + 1];
    bool deleted;
    char resource[32], tier[32];
    int replicas, max_batch, max_delay_ms, timeout_ms;
    int64_t price;
    bool allow_nan, running;
    bool python;                 /* kind "python": predict.py in a Python worker */
    int version;                 /* the target version */
    sinput in[SERVE_MAX_TENSORS];
    int n_in;
    bool batchable;              /* every input's first dimension is dynamic */
    sitem *qhead, *qtail;
    srep *reps;
    pthread_cond_t qcv;
    int failures;                /* replicas of this version that failed in a row */
    int64_t next_spawn_ms;
    sdep *next;
};

struct sitem {
    serve_tensor in[SERVE_MAX_TENSORS];  /* owned by the item */
    int n_in;
    int64_t rows;                /* first dimension (1 when not batchable) */
    int64_t enq_ms;
    int state;                   /* 0 queued, 1 running, 2 done */
    bool abandoned;              /* the caller gave up: whoever holds it frees it */
    int err;
    char msg[512];
    serve_tensor out[SERVE_MAX_TENSORS];
    int n_out, version, batch_size;
    pthread_cond_t cv;
    sitem *next;
};

typedef struct skey {
    int64_t key_id;
    int64_t minute, count;       /* requests this minute */
    int inflight;
    serve_key_limits limits;     /* cached; serve_key_limits_put refreshes it */
    int64_t limits_read_ms;      /* 0: not read */
    int64_t day;                 /* UTC day number `spent` is of; -1 not read */
    int64_t spent;               /* mcoins logged today (from the store, then counted) */
    int64_t reserved;            /* mcoins of admitted calls not yet logged */
    struct skey *next;
} skey;

/* A caller's coins as last read (balance less calls not yet posted), and
 * what was logged or admitted since: a call is refused (402) when it would
 * take the balance below zero. Read again every second. */
typedef struct suser {
    int64_t user_id;
    int64_t avail, read_ms, since, reserved;
    struct suser *next;
} suser;

/* A call record waiting for the logger's next transaction (group commit:
 * one fsync for every call that arrived meanwhile). */
struct slog {
    serve_call_record r;
    char error[300];
    int64_t at;
    bool wait, done;
    int rc;
    struct slog *next;
};

struct serve_hub {
    ed_store *st;
    struct sched *sched;
    serve_config cfg;
    pthread_mutex_t mu;
    pthread_cond_t cv;           /* the supervisor's wake-up */
    pthread_t sup;
    bool sup_started, stop;
    sdep *deps;
    skey *keys;
    suser *users;
    int64_t last_meter_ms, last_flush_ms;
    /* the call logger (hub.c) */
    pthread_t logger;
    bool logger_started, log_stop;
    pthread_cond_t log_cv, log_done_cv;
    slog *log_head, *log_tail;
    pthread_mutex_t flush_mu;    /* one flush at a time */
};

void serve__item_free(sitem *it);

#endif
