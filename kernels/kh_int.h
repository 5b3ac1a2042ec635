/*
 * kh_int.h - private to kernels/: the hub's state and what its files share.
 *
 * Files: lifecycle.c (the hub, the kernel state machine, start, get, list,
 * send, execute, interrupt, restart, shutdown), reader.c (a kernel's socket:
 * the reader thread, output rate limits, protocol errors, writes to the
 * kernel), journal.c (the SQLite journal, the in-memory ring, publishing,
 * pruning, subscriptions and replay), fold.c (folding outputs into
 * notebooks), cull.c (the culler thread: idle and max-session culling,
 * retention of dead kernels' journals), terminal.c (terminals: a shell in
 * the kernel's sandbox, their replay rings and subscribers).
 *
 * Locks: h->mu guards the kernel list and every kernel's state; k->wmu
 * guards writes to (and the closing of) a kernel's socket; k->jmu orders the
 * journal appends of a kernel; h->tmu guards the terminals (terminal.c) and is
 * taken alone. Lock order: the scheduler's mutex, then jmu,
 * then h->mu, then wmu (the hook runs under the scheduler's lock, so the hub
 * never calls the scheduler while holding h->mu). Every `*_locked` function
 * asserts that its caller holds h->mu (kh__held); asserts are on in the
 * test and CI builds (EDDY_ASSERTS, top CMakeLists.txt).
 */
#ifndef KH_INT_H
#define KH_INT_H

#include "kh.h"

#include <assert.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

#define KH_RING       1024             /* recent messages kept in memory per kernel */
#define KH_RING_MSG_MAX (16 * 1024)    /* larger messages are read back from the journal */
#define KH_RING_BYTES (1024 * 1024)    /* bytes of messages kept in one kernel's ring */
#define KH_RL_BUCKETS 30               /* slices of the output rate window */
#define KH_MAX_PENDING 64              /* sockets that came before their kernel's row */
#define KH_TICK_MS    250              /* the culler's period */

/* ---- a mutex that knows its holder (for the asserts) ---------------------- */

typedef struct kh__mutex {
    pthread_mutex_t   m;
    _Atomic uintptr_t owner;   /* the holder's pthread_self(), 0 when free */
} kh__mutex;

static inline uintptr_t kh__self(void)
{
    return (uintptr_t)pthread_self();
}

/* Whether the calling thread holds mu. Only the holder writes `owner` while
 * it is held, so the answer is exact for the caller (a stale value is
 * another thread's or 0, never the caller's). */
static inline bool kh__held(kh__mutex *mu)
{
    return atomic_load_explicit(&mu->owner, memory_order_relaxed) == kh__self();
}

static inline void kh__mutex_init(kh__mutex *mu)
{
    pthread_mutex_init(&mu->m, NULL);
    atomic_init(&mu->owner, 0);
}

static inline void kh__mutex_destroy(kh__mutex *mu)
{
    assert(atomic_load_explicit(&mu->owner, memory_order_relaxed) == 0);
    pthread_mutex_destroy(&mu->m);
}

static inline void kh__lock(kh__mutex *mu)
{
    assert(!kh__held(mu));   /* not recursive */
    pthread_mutex_lock(&mu->m);
    atomic_store_explicit(&mu->owner, kh__self(), memory_order_relaxed);
}

/* 0 with mu held, or pthread_mutex_timedlock's error (ETIMEDOUT). */
static inline int kh__lock_until(kh__mutex *mu, const struct timespec *until)
{
    int rc;

    assert(!kh__held(mu));
    if ((rc = pthread_mutex_timedlock(&mu->m, until)) == 0)
        atomic_store_explicit(&mu->owner, kh__self(), memory_order_relaxed);
    return rc;
}

static inline void kh__unlock(kh__mutex *mu)
{
    assert(kh__held(mu));
    atomic_store_explicit(&mu->owner, 0, memory_order_relaxed);
    pthread_mutex_unlock(&mu->m);
}

/* pthread_cond_timedwait on mu (held), which it releases while waiting. */
static inline int kh__wait_until(pthread_cond_t *cv, kh__mutex *mu, const struct timespec *until)
{
    int rc;

    assert(kh__held(mu));
    atomic_store_explicit(&mu->owner, 0, memory_order_relaxed);
    rc = pthread_cond_timedwait(cv, &mu->m, until);
    atomic_store_explicit(&mu->owner, kh__self(), memory_order_relaxed);
    return rc;
}

/* ---- state ------------------------------------------------------------------ */

/* One execute_request whose outputs are folded into a notebook cell (fold.c). */
typedef struct kh__fold {
    struct kh__fold *next;
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
} kh__fold;

/* A kernel process's output rate over the configured window, in
 * KH_RL_BUCKETS slices (Jupyter's iopub rate limits). Its reader thread's own. */
typedef struct kh__rate {
    int64_t bucket;              /* number of the current slice (ms / slice) */
    int64_t msgs[KH_RL_BUCKETS], bytes[KH_RL_BUCKETS], raw[KH_RL_BUCKETS];
    int64_t sum_msgs, sum_bytes, sum_raw;   /* admitted messages, their bytes; every frame's bytes */
    bool    msgs_over, bytes_over;          /* dropping output until the rate falls */
    char    noticed[64];                    /* the request last told that its output is dropped */
    int64_t noticed_ms;                     /* when (monotonic ms): at most one notice per window */
} kh__rate;

/* One kernel in memory (alive, or dead and still referenced). */
typedef struct kh__k {
    struct kh__k *next;
    kh_hub  *hub;
    char     id[KH_ID_LEN];
    int64_t  user_id;
    char     tier[32], project_id[64], resource[32];
    int64_t  job_id;             /* current process; 0 while a restart submits */
    int      fd;                 /* gateway end of the current process's socket, -1 none */
    int64_t  fd_job;
    char     state[16];          /* queued | starting | idle | busy | dead: kh__set_state_locked */
    char     stop_reason[32];    /* requested or final reason */
    int64_t  created_at, started_at, last_activity_at, ended_at;
    int64_t  idle_ms, max_session_ms;
    bool     warned, stopping;
    bool     stuck;              /* its process stopped reading: sends fail at once (under wmu) */
    int64_t  last_seq;           /* journaled and published */
    int64_t  next_seq;           /* assigned (under jmu) */
    int64_t  ring_seq[KH_RING];
    char    *ring[KH_RING];
    size_t   ring_len[KH_RING], ring_bytes;
    int64_t  journal_bytes;      /* journaled since the last prune (under jmu) */
    int      nsubs, refs, readers;
    struct kh_sub *subs;
    kh__fold *folds;
    kh__mutex wmu, jmu;
} kh__k;

struct kh_sub {
    struct kh_sub *next;
    kh_hub  *h;
    kh__k   *k;
    int64_t  after;
    void   (*wake)(void *);
    void    *wake_arg;
    char     id_buf[KH_ID_LEN];
    int64_t  stored_last;        /* a kernel no longer in memory: its last seq */
};

/* A terminal (terminal.c), guarded by h->tmu. */
enum { KH__TERM_OPENING, KH__TERM_OPEN, KH__TERM_FAILED, KH__TERM_ENDED };

typedef struct kh__term {
    struct kh__term *next;
    char     name[KH_TERM_NAME_MAX + 1];
    char     kernel_id[KH_ID_LEN];
    int64_t  user_id;
    int64_t  job_id;             /* the kernel process it lives in */
    int64_t  created_at, last_activity_at;
    int      state;              /* KH__TERM_* */
    int      open_err;           /* FAILED: the error, and its message */
    char     open_msg[200];
    int      exit_status;        /* ENDED: the shell's code, 128 + signal, -1 unknown */
    char    *ring;               /* the last KH_TERM_RING bytes of output */
    uint64_t total;              /* output bytes ever: ring[total % KH_TERM_RING] is the next */
    int      refs;               /* the list's (while listed), subscriptions', waiters' */
    bool     listed;
    struct kh_term_sub *subs;
} kh__term;

typedef struct kh__pending_fd {
    int64_t job_id;
    int     fd;
} kh__pending_fd;

struct kh_hub {
    kh_config       cfg;
    kh__mutex       mu;
    pthread_cond_t  cv;          /* new output, a reader ended */
    kh__k          *list;
    kh__pending_fd  pend[KH_MAX_PENDING];
    int             npend;
    int             nthreads;    /* readers + culler running */
    bool            stopping;
    int64_t         swept_ms;    /* last retention sweep (culler thread) */
    int64_t         sweep_ms;    /* EDDY_KERNEL_SWEEP_MS (tests): sweep this often; 0: by the retention */
    /* terminals (terminal.c): zeroed by the hub's calloc, which is a valid
     * mutex and condition on Linux; a leaf lock, taken alone */
    kh__mutex       tmu;
    pthread_cond_t  tcv;         /* a terminal opened, failed or ended */
    kh__term       *terms;       /* newest first */
};

/* ---- lifecycle.c ------------------------------------------------------------ */

/* Whether k is not dead (under mu, or for a kernel only its caller holds). */
bool kh__alive(const kh__k *k);
/* The kernel `id` in memory, or NULL. Under mu. */
kh__k *kh__find_locked(kh_hub *h, const char *id);
/* Drop a reference; a dead kernel nobody holds leaves the list. Under mu. */
void kh__unref_locked(kh_hub *h, kh__k *k);
/* Wake k's subscribers and every waiter on h->cv. Under mu. */
void kh__wake_subs_locked(kh_hub *h, kh__k *k);
/* Move k to `state` (queued, starting, idle or busy; dead is
 * kh__set_dead_locked's), asserting the transition is one of the state
 * machine's (README.md "Status"). Under mu. */
void kh__set_state_locked(kh__k *k, const char *state);
/* Mark k dead with `reason` (a requested reason wins). Under mu. Returns
 * whether it changed (the caller then persists it outside the lock). */
bool kh__set_dead_locked(kh_hub *h, kh__k *k, const char *reason);
/* Write a kernel's death to the store (logged on failure). No lock held. */
void kh__persist_dead(kh_hub *h, const char *id, const char *reason, int64_t at);
/* Run one write with text parameters ?1..?3 and integers ?4, ?5 (those the
 * statement does not use are ignored), retrying while the store is busy. */
int kh__db_exec(kh_hub *h, const char *sql, const char *t1, const char *t2, const char *t3, int64_t n4,
                int64_t n5);
/* Cancel a kernel's job; 0 when it already ended. No lock held. */
int kh__stop_job(kh_hub *h, int64_t user_id, int64_t job_id);
/* A positive integer from the environment, else dflt. */
int64_t kh__env_ms(const char *name, int64_t dflt);

/* ---- reader.c --------------------------------------------------------------- */

/* The scheduler's hook: kernel process of job `job_id` started with its
 * socket `fd` (on the scheduler's thread, under its lock). */
void kh__on_socket(void *arg, int64_t job_id, int fd);
/* k now runs job k->job_id: take a socket that came before. Under mu. */
void kh__claim_pending_locked(kh_hub *h, kh__k *k);
/* Write one message to k's socket (at most 5 s; a process that does not
 * take it is stopped as a protocol error). No lock held. */
int kh__send_msg(kh_hub *h, kh__k *k, const json_t *msg);

/* ---- journal.c -------------------------------------------------------------- */

/* Journal `n` serialised messages of k (taken) with consecutive seqs, then
 * publish them: ring, state, folds, subscribers. jmu held, mu not. */
void kh__journal_publish(kh_hub *h, kh__k *k, char **msgs, json_t **parsed, int n);
/* Prune k's journal down to 3/4 of the cap once past it. jmu held. */
void kh__journal_prune(kh_hub *h, kh__k *k);
/* Delete kernel `id`'s journal up to seq `upto`, 2000 rows per statement. */
int kh__journal_delete(kh_hub *h, const char *id, int64_t upto);
/* A message from the hub itself into k's journal: an iopub stderr stream
 * under the request `parent` (a header; NULL: none). No lock held. */
void kh__journal_notice(kh_hub *h, kh__k *k, const json_t *parent, const char *text);
/* An iopub status the hub gives on the kernel's behalf (restarting, dead). */
void kh__journal_status(kh_hub *h, kh__k *k, const char *state);

/* ---- fold.c ----------------------------------------------------------------- */

void kh__fold_free(kh__fold *f);   /* NULL-safe */
/* Apply one published message (`len` bytes of JSON) to its fold. Under mu. */
void kh__fold_apply_locked(kh__k *k, const json_t *m, size_t len);
/* The notebook exists in the project's tree and has a code cell `cell_id`. */
int kh__fold_check_cell(kh_hub *h, int64_t user_id, const char *project, const char *path, const char *cell_id);
/* Register a fold of request `msg_id` into `path`'s cell `cell_id`; *out is
 * the fold (to kh__fold_remove on a failed send). ED_ENOMEM. */
int kh__fold_add(kh__fold **out, kh_hub *h, kh__k *k, const char *msg_id, const char *path, const char *cell_id);
/* Unregister and free a fold kh__fold_add made. */
void kh__fold_remove(kh_hub *h, kh__k *k, kh__fold *f);
/* Milliseconds until one of k's folds is due for a write (0: now), or -1
 * when none waits; with `done_only`, only finished cells' folds count. */
int kh__folds_due_ms(kh_hub *h, kh__k *k, bool done_only);
/* Write the folds that are due; with `force`, every dirty fold once. */
void kh__folds_flush(kh_hub *h, kh__k *k, bool force);
/* The kernel's process ended: write every dirty fold now, and keep trying
 * finished cells' folds until written or given up (unless the hub stops). */
void kh__folds_drain(kh_hub *h, kh__k *k);

/* ---- terminal.c ------------------------------------------------------------- */

/* Whether `name` is a terminal name ([A-Za-z0-9_-]{1,KH_TERM_NAME_MAX}). */
bool kh__term_name_ok(const char *name);
/* List a terminal (state opening) of `user_id` in kernel `kernel_id`'s
 * process `job_id`, named `name` or (NULL) the smallest free number. *out
 * holds a reference the caller drops with kh__term_release. ED_EINVAL,
 * ED_EEXISTS, ED_ELIMIT (KR_TERM_MAX in that kernel), ED_ENOMEM. */
int kh__term_add(kh__term **out, kh_hub *h, int64_t user_id, const char *kernel_id, int64_t job_id,
                 const char *name);
void kh__term_release(kh_hub *h, kh__term *t);
/* A frame on the "terminal" channel from kernel `kernel_id`'s process
 * `job_id` (reader.c): opened, error, output, exit. Untrusted: a name the
 * hub did not open in that process is ignored. No lock held. */
void kh__term_on_frame(kh_hub *h, const char *kernel_id, int64_t job_id, const json_t *msg);
/* Kernel `kernel_id`'s process `job_id` ended: so did its terminals. */
void kh__term_process_ended(kh_hub *h, const char *kernel_id, int64_t job_id);

/* ---- cull.c ----------------------------------------------------------------- */

/* The culler thread (h->nthreads counts it). */
void *kh__culler_main(void *hub);

#endif
