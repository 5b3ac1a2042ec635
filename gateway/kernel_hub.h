/* API-STABLE */
/*
 * kernel_hub.h - private to gateway/: interactive kernels inside the gateway.
 *
 * A kernel is a scheduler job of kind "kernel" (queue, placement, tier
 * limits, holds and metering exactly as jobs) whose program is
 * `eddy-kernel serve --fd N`; the gateway holds the other end of its
 * socketpair. The hub owns that socket: one reader thread per running kernel
 * reads every frame the kernel emits, appends it with a sequence number to the
 * output journal (table kernel_journal, migration 0006) and only then makes
 * it visible to subscribers. What arrives there is untrusted (user code can
 * write to the socket): frames are capped (KR_OUT_FRAME_MAX), output is
 * rate-limited, the journal capped and expired (KERNELS.md "Limits"). Subscribers pull from a cursor, so a slow client
 * never blocks the kernel nor loses a message (what is not in memory is read
 * back from the journal).
 *
 * Kernel ids are UUID strings ("8-4-4-4-12" hex, as Jupyter Server uses and
 * as its gateway client's URL patterns require); the same id serves
 * /api/v1/kernels/{id} and /api/kernels/{id}.
 *
 *     kh_kernel k;
 *     if ((err = kh_kernel_get(&k, srv, req->auth.user_id, req->params[0])) < 0)
 *         return err;                        // ED_ENOTFOUND (404) for others' kernels
 *     kh_sub *sub;
 *     kh_subscribe(&sub, srv, req->auth.user_id, k.id, 0, wake, ws);  // replay from seq 1
 *     ...
 *     json_t *m; int64_t seq;
 *     while ((err = kh_sub_next(&m, &seq, sub, 1000)) == 1) { send(m); json_decref(m); }
 *     ...                                     // 0: nothing within the timeout; ED_ENOTFOUND: ended
 *     kh_send(srv, req->auth.user_id, k.id, msg_from_client);   // {"channel": "shell", header, ...}
 *     kh_unsubscribe(sub);
 *
 * Ownership: every lookup takes the caller's user id and answers ED_ENOTFOUND
 * (404, never 403) for a kernel of another user; user_id 0 is NOT a
 * wildcard. Every function is safe from any thread. Errors follow ed_error.h.
 */
#ifndef KERNEL_HUB_H
#define KERNEL_HUB_H

#include "gw_int.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#define KH_ID_LEN 37   /* a UUID string and its NUL */

typedef struct kh_hub kh_hub;   /* one per server: gw_server.kernels */
typedef struct kh_sub kh_sub;   /* one subscription to one kernel's output */

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

/* ---- lifecycle (called by server.c) --------------------------------------- */

/* Create the hub for `srv` once the store and the scheduler are open: marks
 * kernels a previous run left alive as dead (reason server_restart; their jobs
 * are failed and refunded as platform errors by the scheduler), registers
 * with the scheduler to receive kernel sockets, starts the culler. */
int kh_hub_start(gw_server *srv);
/* Stop every kernel (reason server_stop), join the threads, free the hub.
 * Before the scheduler closes. NULL-safe, idempotent. */
void kh_hub_stop(gw_server *srv);

/* ---- kernels ------------------------------------------------------------------ */

/* Start a kernel for `user_id` (tier `tier`) in `project_id` (the caller must
 * be allowed to read it: checked here) on resource class `resource`: queued
 * through the scheduler. ED_EINVAL, ED_ENOTFOUND (project or class), ED_EPERM
 * (class not in the tier), ED_EQUOTA (no funds), ED_ELIMIT (the tier's
 * max_kernels alive). */
int kh_kernel_start(kh_kernel *out, gw_server *srv, int64_t user_id, const char *tier,
                    const char *project_id, const char *resource);
/* One kernel of `user_id`. ED_ENOTFOUND for an unknown id or another user's. */
int kh_kernel_get(kh_kernel *out, gw_server *srv, int64_t user_id, const char *id);
/* The user's kernels, newest first, dead ones included when `with_dead`.
 * fn's non-zero return stops. */
int kh_kernel_each(gw_server *srv, int64_t user_id, bool with_dead,
                   int (*fn)(const kh_kernel *k, void *payload), void *payload);
/* interrupt_request on the control channel (eddy-kernel's reader thread acts
 * on it at once, even while a cell runs: KeyboardInterrupt in the cell).
 * ED_ENOTFOUND; ED_ECONFLICT when the kernel is not running. */
int kh_kernel_interrupt(gw_server *srv, int64_t user_id, const char *id);
/* Restart: a new process under the same id (a fresh namespace); the journal
 * continues. ED_ENOTFOUND; ED_ECONFLICT when dead. `out` may be NULL. */
int kh_kernel_restart(kh_kernel *out, gw_server *srv, int64_t user_id, const char *id);
/* Shut down (reason "shutdown" when `reason` is NULL). A dead kernel: 0.
 * Either way the kernel's Jupyter sessions (table jupyter_sessions) go. */
int kh_kernel_shutdown(gw_server *srv, int64_t user_id, const char *id, const char *reason);

/* ---- messages to the kernel ---------------------------------------------------- */

/* Send one Jupyter message (an object with "channel": shell | control |
 * stdin, and a header with msg_type and msg_id) to the kernel. Counts as
 * client activity. ED_ENOTFOUND; ED_ECONFLICT when the kernel is not running
 * (queued or dead) or stopped reading (it is then stopped: protocol_error);
 * ED_EBUSY when another send to it held the socket for 5 s; ED_EINVAL for a
 * malformed message. Never waits longer than 5 s. `msg` is borrowed. */
int kh_send(gw_server *srv, int64_t user_id, const char *id, const json_t *msg);
/* An execute_request for `code`; when `notebook_path` and `cell_id` are both
 * given, that cell's outputs and execution_count are folded into the
 * project's working-tree notebook as they arrive. out_msg_id gets the
 * request's msg_id. Errors as kh_send. */
int kh_execute(char out_msg_id[33], gw_server *srv, int64_t user_id, const char *id, const char *code,
               const char *cell_id, const char *notebook_path);

/* ---- output ------------------------------------------------------------------------ */

/* Subscribe to a kernel's output after sequence number `after_seq` (0: from
 * the first message): kh_sub_next replays the journal, then follows. `wake`
 * (may be NULL) is called with `wake_arg` from the hub's threads whenever new
 * output is available or the kernel ended; it must not block nor call into
 * the hub. An open subscription counts as a connected client (the kernel is
 * not culled while one is open). ED_ENOTFOUND as kh_kernel_get. */
int kh_subscribe(kh_sub **out, gw_server *srv, int64_t user_id, const char *id, int64_t after_seq,
                 void (*wake)(void *wake_arg), void *wake_arg);
/* The next message: 1 with *out_msg (a new reference: the Jupyter message as
 * the kernel sent it, with its "channel") and *out_seq; 0 when nothing came
 * within `timeout_ms` (0: do not wait); ED_ENOTFOUND when the kernel is dead
 * and everything was delivered; ED_EIO, ED_ENOMEM. One thread at a time per
 * subscription. */
int kh_sub_next(json_t **out_msg, int64_t *out_seq, kh_sub *sub, int timeout_ms);
/* End a subscription. NULL-safe. */
void kh_unsubscribe(kh_sub *sub);

#endif
