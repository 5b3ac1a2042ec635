/* API-STABLE */
/*
 * kh.h - interactive kernels (the kernels module, prefix kh_).
 *
 * A kernel is a scheduler job of kind "kernel" (queue, placement, tier
 * limits, holds and metering exactly as jobs) whose program is
 * `eddy-kernel serve --fd N`; the hub holds the other end of its
 * socketpair. The hub owns that socket: one reader thread per running kernel
 * reads every frame the kernel emits, appends it with a sequence number to the
 * output journal (table kernel_journal, migration 0006) and only then makes
 * it visible to subscribers. What arrives there is untrusted (user code can
 * write to the socket): frames are capped (KR_OUT_FRAME_MAX), output is
 * rate-limited, the journal capped and expired (README.md "Limits").
 * Subscribers pull from a cursor, so a slow client never blocks the kernel
 * nor loses a message (what is not in memory is read back from the journal).
 *
 * Kernel ids are UUID strings ("8-4-4-4-12" hex, as Jupyter Server uses and
 * as its gateway client's URL patterns require); the same id serves
 * /api/v1/kernels/{id} and /api/kernels/{id}.
 *
 * The module knows nothing of HTTP: the gateway makes one hub at start
 * (kh_hub_start with its store, scheduler and projects root) and its routes
 * call the functions below.
 *
 *     kh_kernel k;
 *     if ((err = kh_kernel_get(&k, hub, user_id, id)) < 0)
 *         return err;                        // ED_ENOTFOUND (404) for others' kernels
 *     kh_sub *sub;
 *     kh_subscribe(&sub, hub, user_id, k.id, 0, wake, ws);  // replay from seq 1
 *     ...
 *     json_t *m; int64_t seq;
 *     while ((err = kh_sub_next(&m, &seq, sub, 1000)) == 1) { send(m); json_decref(m); }
 *     ...                                     // 0: nothing within the timeout; ED_ENOTFOUND: ended
 *     kh_send(hub, user_id, k.id, msg_from_client);   // {"channel": "shell", header, ...}
 *     kh_unsubscribe(sub);
 *
 * Ownership: every lookup takes the caller's user id and answers ED_ENOTFOUND
 * (404, never 403) for a kernel of another user; user_id 0 is NOT a
 * wildcard. A NULL hub (a server without a scheduler) has no kernels: lookups
 * answer ED_ENOTFOUND, kh_kernel_start ED_EUNPROC, kh_kernel_each nothing.
 * Every function is safe from any thread. Errors follow ed_error.h.
 */
#ifndef KH_H
#define KH_H

#include "ed_store.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#define KH_ID_LEN 37   /* a UUID string and its NUL */

struct proj_root;
struct sched;

typedef struct kh_hub kh_hub;   /* one per server */
typedef struct kh_sub kh_sub;   /* one subscription to one kernel's output */

/* What the hub works with, given at kh_hub_start and copied. The handles are
 * borrowed: they must outlive the hub (stop the hub first). The limits are
 * the gateway config's kernel_* keys (README.md "Limits"); 0 turns a rate or
 * a cap off. */
typedef struct kh_config {
    ed_store         *store;               /* tables kernels, kernel_journal; tiers through quota/ */
    struct proj_root *projects;            /* the kernels' projects (workspaces, folds) */
    struct sched     *sched;               /* runs the kernels' jobs; NULL: no kernels (no hub) */
    int               output_msgs_per_s;   /* iopub output messages a second, over the window */
    int64_t           output_bytes_per_s;  /* iopub output bytes a second, over the window */
    int               output_window_ms;    /* the window both rates are averaged over (<= 0: 3000) */
    int64_t           flood_bytes_per_s;   /* frame bytes a second past which a kernel is stopped */
    int64_t           journal_max_bytes;   /* per kernel; oldest output pruned past it */
    int64_t           journal_retention_ms; /* dead kernels' journals deleted after this (0: kept) */
    int               dead_journals_per_user; /* dead kernels' journals a user keeps (0: no cap) */
} kh_config;

/* A kernel as the APIs show it. Times are ms since the epoch, 0 when not yet. */
typedef struct kh_kernel {
    char    id[KH_ID_LEN];
    int64_t user_id;
    int64_t job_id;               /* the scheduler job of its current process */
    char    project_id[64];
    char    resource[32];
    char    status[16];           /* queued | starting | idle | busy | dead */
    char    stop_reason[32];      /* "" while alive; else shutdown | idle_timeout | max_session |
                                   * died | server_restart | out_of_funds | start_failed |
                                   * protocol_error (it broke the framing or flooded) | ... */
    int     queue_position;       /* queued: 1-based; else 0 */
    int64_t eta_ms;               /* queued: estimated wait, -1 never; else 0 */
    int64_t created_at, started_at, last_activity_at, ended_at;
    int     connections;          /* open subscriptions (clients) */
    int64_t last_seq;             /* the journal's last sequence number, 0 when empty */
} kh_kernel;

/* ---- the hub ---------------------------------------------------------------- */

/* Create the hub once the store, the projects root and the scheduler are
 * open: marks kernels a previous run left alive as dead (reason
 * server_restart; their jobs are failed and refunded as platform errors by
 * the scheduler), registers with the scheduler to receive kernel sockets,
 * starts the culler. *out gets the hub (caller stops it with kh_hub_stop),
 * or NULL with 0 when cfg->sched is NULL (no scheduler: no kernels).
 * ED_ENOMEM; a store error. */
int kh_hub_start(kh_hub **out, const kh_config *cfg);
/* Stop every kernel (reason server_stop), join the threads, free the hub.
 * Before the scheduler closes and after every stream that follows a
 * subscription has stopped. NULL-safe. */
void kh_hub_stop(kh_hub *h);

/* ---- kernels ------------------------------------------------------------------ */

/* Start a kernel for `user_id` (tier `tier`) in `project_id` (the caller must
 * be allowed to read it: checked here) on resource class `resource`: queued
 * through the scheduler. ED_EINVAL, ED_ENOTFOUND (project, class or tier),
 * ED_EPERM (class not in the tier, or someone else's project), ED_EQUOTA (no
 * funds), ED_ELIMIT (the tier's max_kernels alive). */
int kh_kernel_start(kh_kernel *out, kh_hub *h, int64_t user_id, const char *tier,
                    const char *project_id, const char *resource);
/* One kernel of `user_id`. ED_ENOTFOUND for an unknown id or another user's. */
int kh_kernel_get(kh_kernel *out, kh_hub *h, int64_t user_id, const char *id);
/* The user's kernels, newest first, dead ones included when `with_dead`.
 * fn's non-zero return stops. */
int kh_kernel_each(kh_hub *h, int64_t user_id, bool with_dead,
                   int (*fn)(const kh_kernel *k, void *payload), void *payload);
/* interrupt_request on the control channel (eddy-kernel's reader thread acts
 * on it at once, even while a cell runs: KeyboardInterrupt in the cell).
 * ED_ENOTFOUND; ED_ECONFLICT when the kernel is not running. */
int kh_kernel_interrupt(kh_hub *h, int64_t user_id, const char *id);
/* Restart: a new process under the same id (a fresh namespace); the journal
 * continues. ED_ENOTFOUND; ED_ECONFLICT when dead. `out` may be NULL. */
int kh_kernel_restart(kh_kernel *out, kh_hub *h, int64_t user_id, const char *id);
/* Shut down (reason "shutdown" when `reason` is NULL). A dead kernel: 0.
 * Either way the kernel's Jupyter sessions (table jupyter_sessions) go. */
int kh_kernel_shutdown(kh_hub *h, int64_t user_id, const char *id, const char *reason);

/* The id of the kernel whose current or a past process is scheduler job
 * `job_id` into out (for "running kernel <id>" when a dataset it mounts
 * cannot be deleted). ED_ENOTFOUND when no kernel ran as that job, or the
 * hub is NULL. */
int kh_kernel_of_job(char out[KH_ID_LEN], kh_hub *h, int64_t job_id);

/* ---- live usage (usage.c) ------------------------------------------------------ */

struct sched_usage;

/* What kernel `id` uses now: its current process's sched_job_usage (CPU,
 * memory, GPUs, coins so far; a reading at most SCHED_USAGE_CACHE_MS old)
 * into *out, and the kernel as kh_kernel_get shows it into *out_k (may be
 * NULL). Only `user_id`'s kernels (ED_ENOTFOUND for another's), or any
 * kernel when `any_user` (an admin). A kernel without a process yet
 * (queued, or between a restart's two) answers 0 with out->job_id 0 and
 * nothing measured; a dead one its last process's final figures. */
int kh_kernel_usage(struct sched_usage *out, kh_kernel *out_k, kh_hub *h, int64_t user_id, bool any_user,
                    const char *id);

/* ---- messages to the kernel ---------------------------------------------------- */

/* Send one Jupyter message (an object with "channel": shell | control |
 * stdin, and a header with msg_type and msg_id) to the kernel. Counts as
 * client activity. ED_ENOTFOUND; ED_ECONFLICT when the kernel is not running
 * (queued or dead) or stopped reading (it is then stopped: protocol_error);
 * ED_EBUSY when another send to it held the socket for 5 s; ED_EINVAL for a
 * malformed message. Never waits longer than 5 s. `msg` is borrowed. */
int kh_send(kh_hub *h, int64_t user_id, const char *id, const json_t *msg);
/* An execute_request for `code`; when `notebook_path` and `cell_id` are both
 * given, that cell's outputs and execution_count are folded into the
 * project's working-tree notebook as they arrive. out_msg_id gets the
 * request's msg_id. Errors as kh_send. */
int kh_execute(char out_msg_id[33], kh_hub *h, int64_t user_id, const char *id, const char *code,
               const char *cell_id, const char *notebook_path);

/* ---- output ------------------------------------------------------------------------ */

/* Subscribe to a kernel's output after sequence number `after_seq` (0: from
 * the first message): kh_sub_next replays the journal, then follows. `wake`
 * (may be NULL) is called with `wake_arg` from the hub's threads whenever new
 * output is available or the kernel ended; it must not block nor call into
 * the hub. An open subscription counts as a connected client (the kernel is
 * not culled while one is open). ED_ENOTFOUND as kh_kernel_get. *out is
 * freed with kh_unsubscribe. */
int kh_subscribe(kh_sub **out, kh_hub *h, int64_t user_id, const char *id, int64_t after_seq,
                 void (*wake)(void *wake_arg), void *wake_arg);
/* The next message: 1 with *out_msg (a new reference: the Jupyter message as
 * the kernel sent it, with its "channel") and *out_seq; 0 when nothing came
 * within `timeout_ms` (0: do not wait); ED_ENOTFOUND when the kernel is dead
 * and everything was delivered; ED_EIO, ED_ENOMEM. One thread at a time per
 * subscription. */
int kh_sub_next(json_t **out_msg, int64_t *out_seq, kh_sub *sub, int timeout_ms);
/* End a subscription (under the hub's lock: no wake comes after it).
 * NULL-safe. */
void kh_unsubscribe(kh_sub *sub);

/* ---- Jupyter sessions (table jupyter_sessions) ---------------------------------- */

/* A Jupyter session: a path (a notebook, a console) bound to a kernel of the
 * same user. Rows survive a restart; a kernel shut down takes its sessions,
 * and a dead kernel's go with its journal (README.md "Jupyter sessions").
 * Validating field sizes (KH_SESSION_FIELD_MAX) is the caller's. */
#define KH_SESSION_FIELD_MAX 4096   /* bytes of path, name and type each */

typedef struct kh_session {
    char        id[KH_ID_LEN];        /* a UUID */
    char        kernel_id[KH_ID_LEN]; /* the kernel (it may be dead or gone) */
    const char *path, *name, *type;   /* within the session's allocation */
} kh_session;

/* The user's session `id`, or the oldest with that `path`. *out is freed
 * with kh_session_free. ED_ENOTFOUND (another user's too), ED_ENOMEM. */
int kh_session_find(kh_session **out, kh_hub *h, int64_t user_id, const char *id);
int kh_session_find_path(kh_session **out, kh_hub *h, int64_t user_id, const char *path);
void kh_session_free(kh_session *s);   /* NULL-safe */
/* The user's sessions, oldest first; `s` is borrowed for the call, and fn's
 * non-zero return stops (a negative one is returned). fn must not write
 * to the store. */
int kh_session_each(kh_hub *h, int64_t user_id, int (*fn)(const kh_session *s, void *payload), void *payload);
/* The number of the user's sessions into *out. */
int kh_session_count(int64_t *out, kh_hub *h, int64_t user_id);
/* A new session (type "notebook" and name "" when NULL) of `kernel_id`;
 * out_id gets its id. ED_ELIMIT when the user already has `max_per_user`
 * (checked in the insert itself, so two creates cannot both take the last
 * place). */
int kh_session_create(char out_id[KH_ID_LEN], kh_hub *h, int64_t user_id, const char *kernel_id, const char *path,
                      const char *name, const char *type, int max_per_user);
/* Change the fields given (NULL or "" kernel_id: keep each). A session that
 * is not the user's is left alone (0). */
int kh_session_update(kh_hub *h, int64_t user_id, const char *id, const char *path, const char *name,
                      const char *type, const char *kernel_id);
/* Delete the user's session `id` (its kernel stays: the caller decides). */
int kh_session_delete(kh_hub *h, int64_t user_id, const char *id);
/* Set and return ED_ELIMIT with the message for a user at `max_per_user`. */
int kh_session_limit_error(int max_per_user);

/* ---- terminals (terminal.c) ------------------------------------------------------ */

/* A terminal: a login shell on a pty inside a kernel's sandbox (eddy-kernel
 * runs it: kernel_runner/README.md "Terminals"), so with the kernel's uid,
 * limits and workspace. It lives as long as its shell and the kernel
 * process it was opened in (a restart or a shutdown ends it). Names are the
 * user's own: [A-Za-z0-9_-]{1,32}, "1", "2", ... when not given. The hub
 * keeps the last KH_TERM_REPLAY bytes of output for a page that reconnects;
 * nothing of a terminal enters the journal or a notebook. Every lookup is
 * by the caller's user id: another user's terminal is ED_ENOTFOUND. */
#define KH_TERM_NAME_MAX   32
#define KH_TERM_REPLAY     (64 * 1024)   /* bytes of output a (re)connecting client gets */
#define KH_TERM_RING       (256 * 1024)  /* bytes kept: a client this far behind is let go */
#define KH_TERM_CHUNK      (64 * 1024)   /* bytes of output kh_terminal_sub_next gives at most */
#define KH_TERM_INPUT_MAX  (64 * 1024)   /* bytes of one input */
#define KH_TERM_SUBS_MAX   8             /* connections to one terminal */

typedef struct kh_terminal {
    char    name[KH_TERM_NAME_MAX + 1];
    char    kernel_id[KH_ID_LEN];
    int64_t created_at, last_activity_at;   /* ms since the epoch (output or input) */
} kh_terminal;

typedef struct kh_term_sub kh_term_sub;   /* one client of one terminal's output */

/* Open a terminal in the user's running kernel `kernel_id` (idle or busy),
 * named `name` (NULL: the smallest free number), starting in `cwd` (NULL:
 * the kernel's starting folder; else relative to it), `rows` x `cols` (0:
 * 24 x 80). Waits up to 5 s for the kernel's answer. ED_ENOTFOUND (kernel,
 * or a cwd that is not a folder), ED_ECONFLICT (the kernel is not running,
 * or cannot open a pty: the message says why), ED_EEXISTS (name taken),
 * ED_ELIMIT (4 per kernel), ED_EINVAL (name, size), ED_EBUSY (no answer). */
int kh_terminal_open(kh_terminal *out, kh_hub *h, int64_t user_id, const char *kernel_id, const char *name,
                     const char *cwd, int rows, int cols);
/* The user's open terminal `name`. ED_ENOTFOUND. */
int kh_terminal_get(kh_terminal *out, kh_hub *h, int64_t user_id, const char *name);
/* The user's open terminals (only kernel `kernel_id`'s when not NULL),
 * oldest first; fn's non-zero return stops (a negative one is returned). */
int kh_terminal_each(kh_hub *h, int64_t user_id, const char *kernel_id,
                     int (*fn)(const kh_terminal *t, void *payload), void *payload);
/* Bytes for the shell (UTF-8 text, at most KH_TERM_INPUT_MAX): ED_ENOTFOUND,
 * ED_ETOOBIG, ED_EINVAL (not UTF-8), kh_send's errors. Counts as activity. */
int kh_terminal_input(kh_hub *h, int64_t user_id, const char *name, const char *data, size_t len);
/* The terminal's size (1-1000 each; the shell gets SIGWINCH). */
int kh_terminal_resize(kh_hub *h, int64_t user_id, const char *name, int rows, int cols);
/* End the shell and what it started (SIGHUP, then SIGKILL); waits up to 2 s
 * for it, and forgets the terminal either way. ED_ENOTFOUND. */
int kh_terminal_close(kh_hub *h, int64_t user_id, const char *name);

/* Follow a terminal's output from its last KH_TERM_REPLAY bytes (the
 * screen, replayed). `wake` as kh_subscribe's (called under the hub's terminal lock:
 * it must not block nor call into the hub). ED_ENOTFOUND, ED_ELIMIT (more
 * than KH_TERM_SUBS_MAX). Freed with kh_terminal_unsubscribe. */
int kh_terminal_subscribe(kh_term_sub **out, kh_hub *h, int64_t user_id, const char *name,
                          void (*wake)(void *wake_arg), void *wake_arg);
/* Never waits: 1 with *out (malloc'd UTF-8 text, NUL-terminated; free it)
 * of *out_len bytes, what came since the last call (at most KH_TERM_CHUNK,
 * whole characters); 0 when nothing
 * new; ED_ENOTFOUND once the terminal ended and everything was read;
 * ED_ELIMIT when this reader fell more than KH_TERM_RING bytes behind
 * (it is dropped: unsubscribe; a new subscription gets the screen again). */
int kh_terminal_sub_next(char **out, size_t *out_len, kh_term_sub *sub);
void kh_terminal_unsubscribe(kh_term_sub *sub);   /* NULL-safe */

#endif
