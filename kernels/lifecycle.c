/*
 * lifecycle.c - the hub and the kernel state machine: start, get, list,
 * send, execute, interrupt, restart, shutdown (kh.h).
 *
 * A kernel's state (k->state, under h->mu) moves only through
 * kh__set_state_locked and kh__set_dead_locked, which assert the
 * transition:
 *
 *     queued --> starting --> idle <--> busy
 *        |          ^  |        |        |
 *        |          '--+--------'--------'   (restart: a new process)
 *        v             v
 *       dead <---------'  (from every state; final)
 *
 * A restart of a queued or starting kernel goes back to queued when its new
 * job waits in the queue.
 */
#include "kh_int.h"

#include "kr.h"
#include "proj.h"
#include "proj_ws.h"
#include "quota.h"
#include "sched.h"

#include "ed_crypto.h"
#include "ed_error.h"
#include "ed_json.h"
#include "ed_log.h"
#include "ed_time.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* ---- helpers --------------------------------------------------------------------- */

_Static_assert(KH_ID_LEN == ED_UUID_LEN, "a kernel id is a UUID (ed_uuid4)");

kh__k *kh__find_locked(kh_hub *h, const char *id)
{
    assert(kh__held(&h->mu));
    for (kh__k *k = h->list; k; k = k->next)
        if (strcmp(k->id, id) == 0)
            return k;
    return NULL;
}

bool kh__alive(const kh__k *k)
{
    return strcmp(k->state, "dead") != 0;
}

static void k_free(kh__k *k)
{
    for (int i = 0; i < KH_RING; i++)
        free(k->ring[i]);
    while (k->folds) {
        kh__fold *f = k->folds;
        k->folds = f->next;
        kh__fold_free(f);
    }
    kh__mutex_destroy(&k->wmu);
    kh__mutex_destroy(&k->jmu);
    free(k);
}

void kh__unref_locked(kh_hub *h, kh__k *k)
{
    assert(kh__held(&h->mu));
    assert(k->refs > 0);
    if (--k->refs > 0 || kh__alive(k))
        return;
    for (kh__k **pp = &h->list; *pp; pp = &(*pp)->next)
        if (*pp == k) {
            *pp = k->next;
            break;
        }
    k_free(k);
}

void kh__wake_subs_locked(kh_hub *h, kh__k *k)
{
    assert(kh__held(&h->mu));
    for (struct kh_sub *s = k->subs; s; s = s->next)
        if (s->wake)
            s->wake(s->wake_arg);
    pthread_cond_broadcast(&h->cv);
}

int kh__db_exec(kh_hub *h, const char *sql, const char *t1, const char *t2, const char *t3, int64_t n4,
                int64_t n5)
{
    const char *t[3] = {t1, t2, t3};
    int np, rc, err;
    sqlite3_stmt *q;

    if ((err = ed_store_prepare(&q, h->cfg.store, sql)) < 0)
        return err;
    np = sqlite3_bind_parameter_count(q);
    for (int i = 0; i < 3 && i < np; i++)
        if (t[i])
            sqlite3_bind_text(q, i + 1, t[i], -1, SQLITE_STATIC);
    if (np >= 4)
        sqlite3_bind_int64(q, 4, n4);
    if (np >= 5)
        sqlite3_bind_int64(q, 5, n5);
    rc = ed_store_step(q);
    err = rc == SQLITE_DONE ? 0 : ed_store_error(ed_store_db(h->cfg.store), rc, "kernels");
    sqlite3_finalize(q);
    return err;
}

/* ---- the state machine ------------------------------------------------------------ */

/* Whether a kernel may go from state `from` to `to` (neither "dead"; see
 * the diagram above). */
static bool transition_ok(const char *from, const char *to)
{
    bool live_to = strcmp(to, "starting") == 0 || strcmp(to, "idle") == 0 || strcmp(to, "busy") == 0;

    if (strcmp(from, "queued") == 0)
        return strcmp(to, "starting") == 0;
    if (strcmp(from, "starting") == 0)
        return live_to || strcmp(to, "queued") == 0;
    if (strcmp(from, "idle") == 0 || strcmp(from, "busy") == 0)
        return live_to;
    return false;   /* dead is final; anything else is not a state */
}

void kh__set_state_locked(kh__k *k, const char *state)
{
    assert(kh__held(&k->hub->mu));
    assert(transition_ok(k->state, state));
    snprintf(k->state, sizeof(k->state), "%s", state);
}

bool kh__set_dead_locked(kh_hub *h, kh__k *k, const char *reason)
{
    assert(kh__held(&h->mu));
    assert(reason != NULL && reason[0] != '\0');
    if (!kh__alive(k))
        return false;
    if (k->stop_reason[0] == '\0')
        snprintf(k->stop_reason, sizeof(k->stop_reason), "%s", reason);
    snprintf(k->state, sizeof(k->state), "dead");
    k->ended_at = ed_now_ms();
    kh__wake_subs_locked(h, k);
    return true;
}

void kh__persist_dead(kh_hub *h, const char *id, const char *reason, int64_t at)
{
    if (kh__db_exec(h, "UPDATE kernels SET status = 'dead', stop_reason = ?2, ended_at = ?4 WHERE id = ?1", id,
                    reason, NULL, at, 0) < 0)
        ed_log_error("kernel.persist", "kernel %s: %s", id, ed_error_last());
}

int kh__stop_job(kh_hub *h, int64_t user_id, int64_t job_id)
{
    sched_job_info j;
    int err = sched_job_cancel(&j, h->cfg.sched, user_id, job_id);
    return err == ED_ECONFLICT ? 0 : err;
}

/* ---- the hub ---------------------------------------------------------------------- */

int kh_hub_start(kh_hub **out, const kh_config *cfg)
{
    kh_hub *h;
    pthread_t t;
    int err;

    *out = NULL;
    if (cfg->sched == NULL)
        return 0;   /* no scheduler: no kernels */
    assert(cfg->store != NULL && cfg->projects != NULL);
    if ((h = calloc(1, sizeof(*h))) == NULL)
        return ed_error_set(ED_ENOMEM, "kernel hub");
    h->cfg = *cfg;
    h->sweep_ms = kh__env_ms("EDDY_KERNEL_SWEEP_MS", 0);
    kh__mutex_init(&h->mu);
    pthread_cond_init(&h->cv, NULL);
    /* kernels die with the server: whatever a previous run left is dead
     * (the scheduler failed and refunded their jobs as platform errors) */
    if ((err = kh__db_exec(h, "UPDATE kernels SET status = 'dead', stop_reason = 'server_restart', ended_at = ?4 "
                              "WHERE status != 'dead'",
                           NULL, NULL, NULL, ed_now_ms(), 0)) < 0) {
        pthread_cond_destroy(&h->cv);
        kh__mutex_destroy(&h->mu);
        free(h);
        return err;
    }
    h->nthreads = 1;
    if (pthread_create(&t, NULL, kh__culler_main, h) != 0) {
        pthread_cond_destroy(&h->cv);
        kh__mutex_destroy(&h->mu);
        free(h);
        return ed_error_set(ED_ENOMEM, "kernel culler thread");
    }
    pthread_detach(t);
    sched_kernel_hook_set(h->cfg.sched, kh__on_socket, h);
    *out = h;
    return 0;
}

void kh_hub_stop(kh_hub *h)
{
    int64_t deadline;

    if (h == NULL)
        return;
    sched_kernel_hook_set(h->cfg.sched, NULL, NULL);
    kh__lock(&h->mu);
    h->stopping = true;
    for (kh__k *k = h->list; k; k = k->next) {
        k->refs++;   /* kept until the end of stop: readers may finish meanwhile */
        kh__set_dead_locked(h, k, "server_stop");
        kh__lock(&k->wmu);
        if (k->fd >= 0)
            shutdown(k->fd, SHUT_RDWR);    /* the reader sees the end */
        kh__unlock(&k->wmu);
    }
    for (int i = 0; i < h->npend; i++)
        close(h->pend[i].fd);
    h->npend = 0;
    pthread_cond_broadcast(&h->cv);
    /* every kernel still listed is held (refs above), so the list is stable */
    for (kh__k *k = h->list; k; k = k->next)
        kh__persist_dead(h, k->id, k->stop_reason, k->ended_at);
    deadline = ed_mono_ns() + 10LL * 1000000000;
    while (h->nthreads > 0 && ed_mono_ns() < deadline) {
        kh__unlock(&h->mu);
        usleep(10000);
        kh__lock(&h->mu);
    }
    if (h->nthreads > 0) {
        /* a thread is stuck (it still holds the hub): leak rather than free under it */
        ed_log_error("kernel.stop", "%d kernel threads did not end; leaving the hub", h->nthreads);
        kh__unlock(&h->mu);
        return;
    }
    while (h->list) {
        kh__k *k = h->list;
        h->list = k->next;
        for (struct kh_sub *s = k->subs; s; s = s->next)
            s->k = NULL;
        k_free(k);
    }
    kh__unlock(&h->mu);
    /* subscriptions still open are freed by kh_unsubscribe, which must not
     * touch the hub afterwards: the server stops streams first */
    pthread_cond_destroy(&h->cv);
    kh__mutex_destroy(&h->mu);
    free(h);
}

/* ---- kernels ------------------------------------------------------------------------ */

int64_t kh__env_ms(const char *name, int64_t dflt)
{
    const char *v = getenv(name);
    char *end;
    long long n;

    if (v == NULL || *v == '\0')
        return dflt;
    n = strtoll(v, &end, 10);
    return *end == '\0' && n > 0 ? n : dflt;
}

/* The tier's kernel limits (quota/ owns the tiers). */
static int tier_limits(kh_hub *h, const char *tier, int *max_kernels, int64_t *max_session, int64_t *idle)
{
    quota_tier t;
    int err;

    if ((err = quota_tier_get(&t, h->cfg.store, tier ? tier : "")) < 0)
        return err == ED_ENOTFOUND ? ed_error_set(ED_ENOTFOUND, "unknown tier '%s'", tier ? tier : "") : err;
    *max_kernels = t.max_kernels;
    /* tests and operators shorten them without editing the tier */
    *max_session = kh__env_ms("EDDY_KERNEL_MAX_SESSION_MS", t.max_session_ms);
    *idle = kh__env_ms("EDDY_KERNEL_IDLE_MS", t.idle_timeout_ms);
    return 0;
}

/* Queue the kernel's job. Its /home/aistudio/work is the project's live
 * working tree, bound read-write (scheduler/exec_local.c): nothing is
 * copied, and a kernel can change the tree, so it runs only on a project of
 * its own user (a public project of someone else is forked first). */
static int submit_job(sched_job_info *j, kh_hub *h, const kh__k *k)
{
    sched_job_spec sp;
    proj *p = NULL;
    int err;

    if ((err = proj_get(&p, h->cfg.projects, k->user_id, k->project_id)) < 0)
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
    if ((err = proj_workspace_attach(h->cfg.projects, k->user_id, k->project_id)) < 0)
        return err;
    memset(&sp, 0, sizeof(sp));
    sp.user_id = k->user_id;
    sp.tier = k->tier;
    sp.project_id = k->project_id;
    sp.resource = k->resource;
    sp.max_runtime_ms = 0;   /* the tier's max session */
    return sched_kernel_submit(j, h->cfg.sched, &sp);
}

static void fill_info_locked(kh_kernel *out, const kh__k *k)
{
    assert(kh__held(&k->hub->mu));
    memset(out, 0, sizeof(*out));
    snprintf(out->id, sizeof(out->id), "%s", k->id);
    out->user_id = k->user_id;
    out->job_id = k->job_id;
    snprintf(out->project_id, sizeof(out->project_id), "%s", k->project_id);
    snprintf(out->resource, sizeof(out->resource), "%s", k->resource);
    snprintf(out->status, sizeof(out->status), "%s", k->state);
    if (!kh__alive(k))
        snprintf(out->stop_reason, sizeof(out->stop_reason), "%s", k->stop_reason);
    out->created_at = k->created_at;
    out->started_at = k->started_at;
    out->last_activity_at = k->last_activity_at;
    out->ended_at = k->ended_at;
    out->connections = k->nsubs;
    out->last_seq = k->last_seq;
}

int kh_kernel_start(kh_kernel *out, kh_hub *h, int64_t user_id, const char *tier, const char *project_id,
                    const char *resource)
{
    proj *p = NULL;
    kh__k *k;
    sched_job_info j;
    int max_kernels = 0, live = 0, err;

    if (h == NULL)
        return ed_error_set(ED_EUNPROC, "interactive kernels are not available on this server");
    if (project_id == NULL || *project_id == '\0' || resource == NULL || *resource == '\0')
        return ed_error_set(ED_EINVAL, "a kernel needs a project_id and a resource");
    if ((k = calloc(1, sizeof(*k))) == NULL)
        return ed_error_set(ED_ENOMEM, "kernel");
    kh__mutex_init(&k->wmu);
    kh__mutex_init(&k->jmu);
    k->hub = h;
    k->fd = -1;
    k->user_id = user_id;
    if ((err = tier_limits(h, tier, &max_kernels, &k->max_session_ms, &k->idle_ms)) < 0)
        goto fail;
    if ((err = proj_get(&p, h->cfg.projects, user_id, project_id)) < 0)
        goto fail;
    snprintf(k->tier, sizeof(k->tier), "%s", tier);
    snprintf(k->project_id, sizeof(k->project_id), "%s", p->id);
    if (strlen(resource) >= sizeof(k->resource)) {
        err = ed_error_set(ED_EINVAL, "unknown resource class '%.40s'", resource);
        goto fail;
    }
    snprintf(k->resource, sizeof(k->resource), "%s", resource);
    kh__lock(&h->mu);
    for (kh__k *o = h->list; o; o = o->next)
        if (o->user_id == user_id && kh__alive(o))
            live++;
    kh__unlock(&h->mu);
    if (max_kernels >= 0 && live >= max_kernels) {
        err = ed_error_set(ED_ELIMIT, "your tier allows %d running kernel%s; stop one first", max_kernels,
                           max_kernels == 1 ? "" : "s");
        goto fail;
    }
    ed_uuid4(k->id);
    k->created_at = k->last_activity_at = ed_now_ms();
    snprintf(k->state, sizeof(k->state), "queued");   /* its first state (nobody else sees it yet) */
    if ((err = kh__db_exec(h, "INSERT INTO kernels(id, user_id, project_id, resource, status, created_at, "
                          "last_activity_at) VALUES (?1, ?4, ?2, ?3, 'queued', ?5, ?5)",
                       k->id, k->project_id, k->resource, user_id, k->created_at)) < 0)
        goto fail;
    if ((err = submit_job(&j, h, k)) < 0) {
        char msg[512];
        snprintf(msg, sizeof(msg), "%s", ed_error_last());
        kh__db_exec(h, "DELETE FROM kernels WHERE id = ?1", k->id, NULL, NULL, 0, 0);
        err = ed_error_set(err, "%s", msg);
        goto fail;
    }
    k->job_id = j.id;
    kh__db_exec(h, "UPDATE kernels SET job_id = ?4 WHERE id = ?1", k->id, NULL, NULL, j.id, 0);
    kh__lock(&h->mu);
    k->next = h->list;
    h->list = k;
    kh__claim_pending_locked(h, k);
    fill_info_locked(out, k);
    kh__unlock(&h->mu);
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

    if ((err = ed_store_prepare(&q, h->cfg.store,
                                "SELECT k.id, k.project_id, k.resource, k.job_id, k.status, k.stop_reason, "
                                "k.created_at, k.started_at, k.last_activity_at, k.ended_at, "
                                "(SELECT MAX(seq) FROM kernel_journal WHERE kernel_id = k.id) "
                                "FROM kernels k WHERE k.id = ?1 AND k.user_id = ?2")) < 0)
        return err;
    sqlite3_bind_text(q, 1, id, -1, SQLITE_STATIC);
    sqlite3_bind_int64(q, 2, user_id);
    if ((rc = sqlite3_step(q)) != SQLITE_ROW) {
        err = rc == SQLITE_DONE ? ed_error_set(ED_ENOTFOUND, "no kernel %.40s", id)
                                : ed_store_error(ed_store_db(h->cfg.store), rc, "kernel");
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

int kh_kernel_get(kh_kernel *out, kh_hub *h, int64_t user_id, const char *id)
{
    kh__k *k;
    bool queued = false;

    if (h == NULL || !valid_id(id) || user_id <= 0)
        return ed_error_set(ED_ENOTFOUND, "no kernel %.40s", id ? id : "");
    kh__lock(&h->mu);
    k = kh__find_locked(h, id);
    if (k && k->user_id != user_id)
        k = NULL;
    if (k) {
        fill_info_locked(out, k);
        queued = strcmp(k->state, "queued") == 0;
    }
    kh__unlock(&h->mu);
    if (k == NULL)
        return get_stored(out, h, user_id, id);
    if (queued && out->job_id > 0) {
        sched_job_info j;
        if (sched_job_get(&j, h->cfg.sched, user_id, out->job_id) == 0 && strcmp(j.status, "queued") == 0) {
            out->queue_position = j.queue_position;
            out->eta_ms = j.eta_ms;
        } else if (strcmp(j.status, "running") == 0) {
            snprintf(out->status, sizeof(out->status), "starting");
        }
    }
    return 0;
}

int kh_kernel_each(kh_hub *h, int64_t user_id, bool with_dead,
                   int (*fn)(const kh_kernel *k, void *payload), void *payload)
{
    sqlite3_stmt *q;
    char (*ids)[KH_ID_LEN] = NULL;
    size_t n = 0, cap = 0;
    int rc, err;

    if (h == NULL)
        return 0;
    if ((err = ed_store_prepare(&q, h->cfg.store,
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
        return ed_store_error(ed_store_db(h->cfg.store), rc, "kernel list");
    }
    err = 0;
    for (size_t i = 0; i < n && err == 0; i++) {
        kh_kernel k;
        if (kh_kernel_get(&k, h, user_id, ids[i]) < 0)
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
static kh__k *take(kh_hub *h, int64_t user_id, const char *id, int *err)
{
    kh__k *k;

    if (h == NULL || !valid_id(id)) {
        *err = ed_error_set(ED_ENOTFOUND, "no kernel %.40s", id ? id : "");
        return NULL;
    }
    kh__lock(&h->mu);
    k = kh__find_locked(h, id);
    if (k && k->user_id != user_id)
        k = NULL;
    if (k)
        k->refs++;
    kh__unlock(&h->mu);
    if (k == NULL) {
        kh_kernel info;
        *err = get_stored(&info, h, user_id, id);
        if (*err == 0)
            *err = ed_error_set(ED_ECONFLICT, "kernel %s is dead (%s)", id, info.stop_reason);
    }
    return k;
}

static void drop(kh_hub *h, kh__k *k)
{
    kh__lock(&h->mu);
    kh__unref_locked(h, k);
    kh__unlock(&h->mu);
}

int kh_send(kh_hub *h, int64_t user_id, const char *id, const json_t *msg)
{
    const char *ch;
    kh__k *k;
    int err = 0;

    if (!json_is_object(msg) || !json_is_object(json_object_get(msg, "header")) ||
        !json_is_string(json_object_get(json_object_get(msg, "header"), "msg_type")))
        return ed_error_set(ED_EINVAL, "a kernel message is an object with a header holding its msg_type");
    ch = kr_msg_channel(msg);
    if (strcmp(ch, "shell") != 0 && strcmp(ch, "control") != 0 && strcmp(ch, "stdin") != 0)
        return ed_error_set(ED_EINVAL, "messages to a kernel go on shell, control or stdin, not '%.20s'", ch);
    if ((k = take(h, user_id, id, &err)) == NULL)
        return err;
    kh__lock(&h->mu);
    k->last_activity_at = ed_now_ms();
    bool ok = kh__alive(k);
    kh__unlock(&h->mu);
    err = ok ? kh__send_msg(h, k, msg) : ed_error_set(ED_ECONFLICT, "kernel %s is dead", id);
    drop(h, k);
    return err;
}

int kh_execute(char out_msg_id[33], kh_hub *h, int64_t user_id, const char *id, const char *code,
               const char *cell_id, const char *notebook_path)
{
    json_t *m = NULL;
    kh__fold *f = NULL;
    kh__k *k;
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
    if (notebook_path && ((err = kh__fold_check_cell(h, user_id, k->project_id, notebook_path, cell_id)) < 0 ||
                          (err = kh__fold_add(&f, h, k, out_msg_id, notebook_path, cell_id)) < 0)) {
        json_decref(m);
        drop(h, k);
        return err;
    }
    kh__lock(&h->mu);
    k->last_activity_at = ed_now_ms();
    bool ok = kh__alive(k);
    kh__unlock(&h->mu);
    err = ok ? kh__send_msg(h, k, m) : ed_error_set(ED_ECONFLICT, "kernel %s is dead", id);
    if (err < 0 && f)
        kh__fold_remove(h, k, f);
    json_decref(m);
    drop(h, k);
    return err;
}

int kh_kernel_interrupt(kh_hub *h, int64_t user_id, const char *id)
{
    json_t *m = NULL;
    int err;

    if ((err = kr_msg_new(&m, "control", "interrupt_request", "eddy-rest", NULL, NULL)) < 0)
        return err;
    err = kh_send(h, user_id, id, m);
    json_decref(m);
    return err;
}

int kh_kernel_shutdown(kh_hub *h, int64_t user_id, const char *id, const char *reason)
{
    kh__k *k;
    int64_t job = 0;
    bool queued_only, changed = false;
    char why[32];
    int err = 0;

    if ((k = take(h, user_id, id, &err)) == NULL) {
        if (err != ED_ECONFLICT)
            return err;
        /* already dead (and the caller's): its sessions go all the same */
        if (kh__db_exec(h, "DELETE FROM jupyter_sessions WHERE kernel_id = ?1", id, NULL, NULL, 0, 0) < 0)
            ed_log_error("kernel.sessions", "kernel %s: %s", id, ed_error_last());
        ed_error_clear();
        return 0;
    }
    kh__lock(&h->mu);
    if (kh__alive(k) && k->stop_reason[0] == '\0')
        snprintf(k->stop_reason, sizeof(k->stop_reason), "%s", reason ? reason : "shutdown");
    k->stopping = true;
    job = k->job_id;
    queued_only = k->fd < 0;
    kh__unlock(&h->mu);
    if (job > 0)
        err = kh__stop_job(h, user_id, job);
    /* a kernel shut down takes its Jupyter sessions with it */
    if (kh__db_exec(h, "DELETE FROM jupyter_sessions WHERE kernel_id = ?1", id, NULL, NULL, 0, 0) < 0)
        ed_log_error("kernel.sessions", "kernel %s: %s", id, ed_error_last());
    if (queued_only) {
        /* no process to wait for */
        kh__lock(&h->mu);
        if (k->fd < 0 && k->readers == 0)
            changed = kh__set_dead_locked(h, k, "shutdown");
        snprintf(why, sizeof(why), "%s", k->stop_reason);
        kh__unlock(&h->mu);
        if (changed)
            kh__persist_dead(h, id, why, ed_now_ms());
    } else {
        /* wait a little for the process to go, so a GET right after says dead */
        for (int i = 0; i < 100; i++) {
            kh__lock(&h->mu);
            bool gone = !kh__alive(k);
            kh__unlock(&h->mu);
            if (gone)
                break;
            usleep(20000);
        }
    }
    drop(h, k);
    return err;
}

int kh_kernel_restart(kh_kernel *out, kh_hub *h, int64_t user_id, const char *id)
{
    sched_job_info j;
    kh__k *k;
    int64_t old;
    int err = 0;

    if ((k = take(h, user_id, id, &err)) == NULL)
        return err;
    kh__lock(&h->mu);
    if (!kh__alive(k) || k->stopping || k->job_id == 0) {
        kh__unlock(&h->mu);
        drop(h, k);
        return ed_error_set(ED_ECONFLICT, "kernel %s is %s", id, kh__alive(k) ? "stopping or restarting" : "dead");
    }
    old = k->job_id;
    k->job_id = 0;     /* the old process's end is not the kernel's death */
    kh__set_state_locked(k, "starting");
    kh__unlock(&h->mu);
    kh__journal_status(h, k, "restarting");
    kh__stop_job(h, user_id, old);
    err = submit_job(&j, h, k);
    kh__lock(&h->mu);
    if (err < 0) {
        char why[32];
        bool changed = kh__set_dead_locked(h, k, "restart_failed");
        snprintf(why, sizeof(why), "%s", k->stop_reason);
        kh__unlock(&h->mu);
        if (changed)
            kh__persist_dead(h, id, why, ed_now_ms());
        drop(h, k);
        return err;
    }
    if (!kh__alive(k)) {
        /* shut down (or the hub stopped) while the new job was submitted:
         * dead is final, so the new process goes */
        kh__unlock(&h->mu);
        kh__stop_job(h, user_id, j.id);
        drop(h, k);
        return ed_error_set(ED_ECONFLICT, "kernel %s was stopped while it restarted", id);
    }
    k->job_id = j.id;
    k->started_at = 0;
    k->warned = false;
    k->last_activity_at = ed_now_ms();
    kh__set_state_locked(k, strcmp(j.status, "queued") == 0 ? "queued" : "starting");
    kh__claim_pending_locked(h, k);
    if (out)
        fill_info_locked(out, k);
    kh__unlock(&h->mu);
    kh__db_exec(h, "UPDATE kernels SET job_id = ?4 WHERE id = ?1", id, NULL, NULL, j.id, 0);
    drop(h, k);
    return 0;
}


int kh_kernel_of_job(char out[KH_ID_LEN], kh_hub *h, int64_t job_id)
{
    sqlite3_stmt *q = NULL;
    int rc, err;

    out[0] = '\0';
    if (h == NULL)
        return ed_error_set(ED_ENOTFOUND, "no kernel ran as job %lld", (long long)job_id);
    /* jobs.id is the current process's: a restart moves kernels.job_id on */
    if ((err = ed_store_prepare(&q, h->cfg.store, "SELECT id FROM kernels WHERE job_id = ?1 LIMIT 1")) < 0)
        return err;
    sqlite3_bind_int64(q, 1, job_id);
    rc = sqlite3_step(q);
    if (rc == SQLITE_ROW)
        snprintf(out, KH_ID_LEN, "%s", (const char *)sqlite3_column_text(q, 0));
    sqlite3_finalize(q);
    if (rc == SQLITE_ROW)
        return 0;
    if (rc != SQLITE_DONE)
        return ed_store_error(ed_store_db(h->cfg.store), rc, "kernel of job");
    return ed_error_set(ED_ENOTFOUND, "no kernel ran as job %lld", (long long)job_id);
}
