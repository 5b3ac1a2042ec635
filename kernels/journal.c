/*
 * journal.c - a kernel's output: the SQLite journal (table kernel_journal,
 * migration 0006), the in-memory ring of recent messages, publishing
 * (state, folds, subscribers), pruning past the cap, and subscriptions
 * that replay from the ring or the journal (README.md "Journal and
 * subscribers").
 */
#include "kh_int.h"

#include "kr.h"

#include "ed_error.h"
#include "ed_json.h"
#include "ed_log.h"
#include "ed_time.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- the journal ------------------------------------------------------------------ */

typedef struct journal_rows {
    kh__k       *k;
    char       **msgs;
    int          n;
    int64_t      first_seq;
    ed_store    *st;
} journal_rows;

/* The inserts of one append (ed_store_tx's body: it may run again after a
 * busy rollback, and keeps nothing between runs). */
static int journal_insert(void *ctx)
{
    journal_rows *r = ctx;
    sqlite3_stmt *q = NULL;
    int64_t now = ed_now_ms();
    int err, rc = SQLITE_DONE;

    if ((err = ed_store_prepare(&q, r->st, "INSERT INTO kernel_journal(kernel_id, seq, at, msg) VALUES (?1, ?2, ?3, ?4)")) < 0)
        return err;
    for (int i = 0; i < r->n && rc == SQLITE_DONE; i++) {
        sqlite3_reset(q);
        sqlite3_bind_text(q, 1, r->k->id, -1, SQLITE_STATIC);
        sqlite3_bind_int64(q, 2, r->first_seq + i);
        sqlite3_bind_int64(q, 3, now);
        sqlite3_bind_text(q, 4, r->msgs[i], -1, SQLITE_STATIC);
        rc = sqlite3_step(q);
    }
    sqlite3_finalize(q);
    return rc == SQLITE_DONE ? 0 : ed_store_error(ed_store_db(r->st), rc, "journal");
}

/* Append `n` serialised messages for k with seqs from first_seq in one
 * transaction. jmu held. */
static int journal_append(kh_hub *h, kh__k *k, char **msgs, int n, int64_t first_seq)
{
    journal_rows r = {k, msgs, n, first_seq, h->cfg.store};
    int err;

    assert(kh__held(&k->jmu));

    /* Journal commits skip the fsync (synchronous=NORMAL, this transaction
     * only): in WAL mode the rows still survive a crash of eddy itself, and
     * only an OS crash or power loss can drop the last few milliseconds of
     * output. An fsync per burst would otherwise dominate a cell's round
     * trip. Everything else on this connection stays synchronous=FULL. */
    if ((err = ed_store_exec(r.st, "PRAGMA synchronous=NORMAL")) < 0)
        return err;
    err = ed_store_tx(r.st, journal_insert, &r);
    ed_store_exec(r.st, "PRAGMA synchronous=FULL");
    return err;
}

/* ---- publishing -------------------------------------------------------------------- */

/* Published messages go to the ring (when small enough), set the kernel's
 * busy/idle state from its own iopub status (not a status of a process a
 * restart replaced), feed the folds, and wake the subscribers. */
void kh__journal_publish(kh_hub *h, kh__k *k, char **msgs, json_t **parsed, int n)
{
    int64_t first = k->next_seq + 1;
    int err;

    assert(kh__held(&k->jmu) && !kh__held(&h->mu));
    if ((err = journal_append(h, k, msgs, n, first)) < 0) {
        /* keep serving: the messages still go out, the gap is logged */
        ed_log_error("kernel.journal", "kernel %s: %d messages not journaled: %s", k->id, n, ed_error_last());
    }
    k->next_seq += n;
    kh__lock(&h->mu);
    for (int i = 0; i < n; i++) {
        int64_t seq = first + i;
        int slot = (int)(seq % KH_RING);
        const json_t *m = parsed[i];
        const char *type = kr_msg_type(m);
        size_t len = strlen(msgs[i]);

        if (err == 0)
            k->journal_bytes += (int64_t)len;
        free(k->ring[slot]);
        k->ring[slot] = NULL;
        k->ring_bytes -= k->ring_len[slot];
        k->ring_len[slot] = 0;
        /* the ring holds at most KH_RING_BYTES; the rest is read back from the journal */
        if (len <= KH_RING_MSG_MAX && k->ring_bytes + len <= KH_RING_BYTES) {
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
        if (strcmp(type, "status") == 0 && kh__alive(k) && k->fd_job == k->job_id) {
            const char *es = json_string_value(json_object_get(json_object_get(m, "content"), "execution_state"));
            if (es && (strcmp(es, "busy") == 0 || strcmp(es, "idle") == 0))
                kh__set_state_locked(k, es);
        }
        if (k->folds)
            kh__fold_apply_locked(k, m, len);
    }
    kh__wake_subs_locked(h, k);
    kh__unlock(&h->mu);
}

/* Publish an iopub message of `type` with `content` (reference stolen) that
 * the hub itself sends, under the request `parent` (NULL: none). */
static void journal_hub_iopub(kh_hub *h, kh__k *k, const char *type, const json_t *parent, json_t *content)
{
    json_t *m = NULL;
    char *s;

    if (kr_msg_new(&m, "iopub", type, "eddy", parent, content) < 0)
        return;
    if ((s = json_dumps(m, JSON_COMPACT)) != NULL) {
        kh__lock(&k->jmu);
        kh__journal_publish(h, k, &s, &m, 1);
        kh__unlock(&k->jmu);
        free(s);
    }
    json_decref(m);
}

/* A message from the hub itself (warnings) into the journal, as an iopub
 * stream on stderr, under the request `parent` (a header; NULL: none). */
void kh__journal_notice(kh_hub *h, kh__k *k, const json_t *parent, const char *text)
{
    journal_hub_iopub(h, k, "stream", parent, json_pack("{s:s, s:s}", "name", "stderr", "text", text));
}

/* An iopub status the hub gives on the kernel's behalf (restarting, dead),
 * as Jupyter Server does, so clients learn of it in order. */
void kh__journal_status(kh_hub *h, kh__k *k, const char *state)
{
    journal_hub_iopub(h, k, "status", NULL, json_pack("{s:s}", "execution_state", state));
}

/* Delete kernel `id`'s journal up to seq `upto`, 2000 rows per statement so
 * that no single write holds the store's lock for long. */
int kh__journal_delete(kh_hub *h, const char *id, int64_t upto)
{
    int err;

    do {
        if ((err = kh__db_exec(h,
                           "DELETE FROM kernel_journal WHERE kernel_id = ?1 AND seq IN (SELECT seq FROM "
                           "kernel_journal WHERE kernel_id = ?1 AND seq <= ?4 ORDER BY seq LIMIT 2000)",
                           id, NULL, NULL, upto, 0)) < 0)
            return err;
    } while (sqlite3_changes(ed_store_db(h->cfg.store)) > 0);
    return 0;
}

/* Prune the oldest part of k's journal once it passes the configured cap,
 * down to three quarters of it: the newest output always stays (the newest
 * message even when it alone is over the cap).
 * Called by the reader with jmu held. */
void kh__journal_prune(kh_hub *h, kh__k *k)
{
    int64_t cap = h->cfg.journal_max_bytes, want, freed = 0, cut = 0, total = 0, newest = 0;
    sqlite3_stmt *q;
    int rc;

    assert(kh__held(&k->jmu));
    if (cap <= 0 || k->journal_bytes <= cap)
        return;
    if (ed_store_prepare(&q, h->cfg.store,
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
    if (cut > 0 && kh__journal_delete(h, k->id, cut) < 0)
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

/* ---- subscriptions ---------------------------------------------------------------------- */

int kh_subscribe(kh_sub **out, kh_hub *h, int64_t user_id, const char *id, int64_t after_seq,
                 void (*wake)(void *wake_arg), void *wake_arg)
{
    kh_kernel info;
    kh_sub *s;
    kh__k *k;
    int err;

    *out = NULL;
    if (after_seq < 0)
        return ed_error_set(ED_EINVAL, "'after' must be a sequence number >= 0");
    if ((err = kh_kernel_get(&info, h, user_id, id)) < 0)
        return err;
    if ((s = calloc(1, sizeof(*s))) == NULL)
        return ed_error_set(ED_ENOMEM, "subscription");
    s->h = h;
    s->after = after_seq;
    s->wake = wake;
    s->wake_arg = wake_arg;
    kh__lock(&h->mu);
    k = kh__find_locked(h, info.id);
    if (k && k->user_id == user_id) {
        k->refs++;
        k->nsubs++;
        k->last_activity_at = ed_now_ms();
        s->k = k;
        s->next = k->subs;
        k->subs = s;
    }
    kh__unlock(&h->mu);
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

    if ((err = ed_store_prepare(&q, h->cfg.store, "SELECT seq, msg FROM kernel_journal WHERE kernel_id = ?1 AND "
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
        err = rc == SQLITE_DONE ? 0 : ed_store_error(ed_store_db(h->cfg.store), rc, "journal");
    }
    sqlite3_finalize(q);
    return err;
}

int kh_sub_next(json_t **out_msg, int64_t *out_seq, kh_sub *s, int timeout_ms)
{
    kh_hub *h = s->h;
    kh__k *k = s->k;
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
            kh__lock(&h->mu);
            last = k->last_seq;
            if (last >= want) {
                int slot = (int)(want % KH_RING);
                if (k->ring_seq[slot] == want && k->ring[slot]) {
                    if ((copy = strdup(k->ring[slot])) == NULL) {
                        kh__unlock(&h->mu);
                        return ed_error_set(ED_ENOMEM, "message");
                    }
                } else {
                    from_db = true;
                }
            } else if (!kh__alive(k) && k->readers == 0) {
                ended = true;
            } else if (timeout_ms <= 0) {
                kh__unlock(&h->mu);
                return 0;
            } else if (kh__wait_until(&h->cv, &h->mu, &deadline) == ETIMEDOUT) {
                kh__unlock(&h->mu);
                return 0;
            } else {
                kh__unlock(&h->mu);
                continue;
            }
            kh__unlock(&h->mu);
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
        kh__lock(&h->mu);
        kh__k *k = s->k;
        for (kh_sub **pp = &k->subs; *pp; pp = &(*pp)->next)
            if (*pp == s) {
                *pp = s->next;
                break;
            }
        k->nsubs--;
        k->last_activity_at = ed_now_ms();   /* the idle timeout counts from the last client leaving */
        kh__unref_locked(h, k);
        kh__unlock(&h->mu);
    }
    free(s);
}
