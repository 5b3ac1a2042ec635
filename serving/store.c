/*
 * store.c - serving/'s tables (migration 0021): deployments, versions,
 * replicas, the call log, charge batches, per-key limits and usage.
 */
#include "serve_int.h"

#include "ed_error.h"
#include "ed_store.h"

#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int fail(sqlite3_stmt *q, ed_store *st, int rc, const char *what)
{
    int err = ed_store_error(ed_store_db(st), rc, what);
    sqlite3_finalize(q);
    return err;
}

static void day_of(char out[16], int64_t ms)
{
    time_t t = (time_t)(ms / 1000);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(out, 16, "%Y-%m-%d", &tm);
}

static void col_text(char *out, size_t n, sqlite3_stmt *q, int col)
{
    const unsigned char *s = sqlite3_column_text(q, col);
    snprintf(out, n, "%s", s ? (const char *)s : "");
}

/* ---- deployments -------------------------------------------------------------- */

typedef struct ins_ctx {
    ed_store *st;
    const serve_spec *s;
    const char *sha, *inputs, *outputs;
    int64_t bytes, now, id;
} ins_ctx;

static int ins_body(void *arg)
{
    ins_ctx *c = arg;
    sqlite3_stmt *q = NULL;
    int rc, err;

    if ((err = ed_store_prepare(&q, c->st,
                                "INSERT INTO deployments (user_id, name, kind, resource, tier, replicas, max_batch, "
                                "max_delay_ms, timeout_ms, price_mcoins_per_call, allow_nan, status, version, "
                                "created_at, updated_at) VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,'running',1,?12,?12)")) < 0)
        return err;
    sqlite3_bind_int64(q, 1, c->s->user_id);
    sqlite3_bind_text(q, 2, c->s->name, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(q, 3, c->s->kind ? c->s->kind : "model", -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(q, 4, c->s->resource, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(q, 5, c->s->tier ? c->s->tier : "free", -1, SQLITE_TRANSIENT);
    sqlite3_bind_int(q, 6, c->s->replicas);
    sqlite3_bind_int(q, 7, c->s->max_batch);
    sqlite3_bind_int(q, 8, c->s->max_delay_ms);
    sqlite3_bind_int(q, 9, c->s->timeout_ms);
    sqlite3_bind_int64(q, 10, c->s->price_mcoins_per_call);
    sqlite3_bind_int(q, 11, c->s->allow_nan ? 1 : 0);
    sqlite3_bind_int64(q, 12, c->now);
    if ((rc = sqlite3_step(q)) != SQLITE_DONE) {
        err = fail(q, c->st, rc, "insert deployment");
        return err == ED_EEXISTS ? ed_error_set(ED_EEXISTS, "you have a deployment named '%s'", c->s->name) : err;
    }
    sqlite3_finalize(q);
    c->id = sqlite3_last_insert_rowid(ed_store_db(c->st));
    return serve__version_insert(c->st, c->id, 1, c->s->source_json ? c->s->source_json : "{}", c->sha, c->bytes,
                                 c->inputs, c->outputs, c->now);
}

int serve__dep_insert(int64_t *out_id, ed_store *st, const serve_spec *s, const char *sha, int64_t bytes,
                      const char *inputs, const char *outputs, int64_t now)
{
    ins_ctx c = {st, s, sha, inputs, outputs, bytes, now, 0};
    int err = ed_store_tx(st, ins_body, &c);
    *out_id = c.id;
    return err;
}

int serve__version_insert(ed_store *st, int64_t dep, int number, const char *source, const char *sha, int64_t bytes,
                          const char *inputs, const char *outputs, int64_t now)
{
    sqlite3_stmt *q = NULL;
    int rc, err;

    if ((err = ed_store_prepare(&q, st,
                                "INSERT INTO deployment_versions (deployment_id, number, source, sha256, bytes, "
                                "inputs, outputs, created_at) VALUES (?1,?2,?3,?4,?5,?6,?7,?8)")) < 0)
        return err;
    sqlite3_bind_int64(q, 1, dep);
    sqlite3_bind_int(q, 2, number);
    sqlite3_bind_text(q, 3, source, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(q, 4, sha, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(q, 5, bytes);
    sqlite3_bind_text(q, 6, inputs, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(q, 7, outputs, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(q, 8, now);
    if ((rc = ed_store_step(q)) != SQLITE_DONE)
        return fail(q, st, rc, "insert deployment version");
    sqlite3_finalize(q);
    return 0;
}

#define DEP_COLS                                                                                              \
    "d.id, d.user_id, d.name, d.kind, d.resource, d.tier, d.replicas, d.max_batch, d.max_delay_ms, "          \
    "d.timeout_ms, d.price_mcoins_per_call, d.allow_nan, d.status, d.version, d.created_at, d.updated_at, "   \
    "v.source, v.inputs, v.outputs FROM deployments d LEFT JOIN deployment_versions v ON "                    \
    "v.deployment_id = d.id AND v.number = d.version "

static void dep_row(serve_deployment *d, sqlite3_stmt *q)
{
    memset(d, 0, sizeof(*d));
    d->id = sqlite3_column_int64(q, 0);
    d->user_id = sqlite3_column_int64(q, 1);
    col_text(d->name, sizeof(d->name), q, 2);
    col_text(d->kind, sizeof(d->kind), q, 3);
    col_text(d->resource, sizeof(d->resource), q, 4);
    col_text(d->tier, sizeof(d->tier), q, 5);
    d->replicas = sqlite3_column_int(q, 6);
    d->max_batch = sqlite3_column_int(q, 7);
    d->max_delay_ms = sqlite3_column_int(q, 8);
    d->timeout_ms = sqlite3_column_int(q, 9);
    d->price_mcoins_per_call = sqlite3_column_int64(q, 10);
    d->allow_nan = sqlite3_column_int(q, 11) != 0;
    col_text(d->status, sizeof(d->status), q, 12);
    d->version = sqlite3_column_int(q, 13);
    d->created_at = sqlite3_column_int64(q, 14);
    d->updated_at = sqlite3_column_int64(q, 15);
    col_text(d->source_json, sizeof(d->source_json), q, 16);
    col_text(d->inputs_json, sizeof(d->inputs_json), q, 17);
    col_text(d->outputs_json, sizeof(d->outputs_json), q, 18);
}

int serve__dep_load(serve_deployment *out, ed_store *st, int64_t id)
{
    sqlite3_stmt *q = NULL;
    int rc, err;

    if ((err = ed_store_prepare(&q, st, "SELECT " DEP_COLS "WHERE d.id = ?1")) < 0)
        return err;
    sqlite3_bind_int64(q, 1, id);
    rc = sqlite3_step(q);
    if (rc == SQLITE_ROW) {
        dep_row(out, q);
        sqlite3_finalize(q);
        return 0;
    }
    if (rc != SQLITE_DONE)
        return fail(q, st, rc, "read deployment");
    sqlite3_finalize(q);
    return ed_error_set(ED_ENOTFOUND, "deployment %lld not found", (long long)id);
}

int serve__dep_find(int64_t *out_id, ed_store *st, int64_t user_id, const char *ref)
{
    sqlite3_stmt *q = NULL;
    char *end;
    long long id;
    int rc, err;

    *out_id = 0;
    id = strtoll(ref, &end, 10);
    if (*ref && *end == '\0' && id > 0)
        err = ed_store_prepare(&q, st, "SELECT id FROM deployments WHERE id = ?2 AND user_id = ?1 AND status != 'deleted'");
    else
        err = ed_store_prepare(&q, st,
                               "SELECT id FROM deployments WHERE name = ?3 AND user_id = ?1 AND status != 'deleted'");
    if (err < 0)
        return err;
    sqlite3_bind_int64(q, 1, user_id);
    sqlite3_bind_int64(q, 2, id);
    sqlite3_bind_text(q, 3, ref, -1, SQLITE_TRANSIENT);
    rc = sqlite3_step(q);
    if (rc == SQLITE_ROW)
        *out_id = sqlite3_column_int64(q, 0);
    else if (rc != SQLITE_DONE)
        return fail(q, st, rc, "find deployment");
    sqlite3_finalize(q);
    return *out_id ? 0 : ed_error_set(ED_ENOTFOUND, "deployment %s not found", ref);
}

int serve__dep_running_ids(int64_t *ids, size_t max, size_t *n, ed_store *st)
{
    sqlite3_stmt *q = NULL;
    int rc, err;

    *n = 0;
    if ((err = ed_store_prepare(&q, st, "SELECT id FROM deployments WHERE status = 'running' ORDER BY id")) < 0)
        return err;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW && *n < max)
        ids[(*n)++] = sqlite3_column_int64(q, 0);
    sqlite3_finalize(q);
    return 0;
}

int serve__dep_list(serve_deployment *out, size_t max, size_t *n, ed_store *st, int64_t user_id, int64_t before)
{
    sqlite3_stmt *q = NULL;
    int rc, err;

    *n = 0;
    if ((err = ed_store_prepare(&q, st,
                                "SELECT " DEP_COLS "WHERE d.user_id = ?1 AND d.status != 'deleted' AND "
                                "(?2 = 0 OR d.id < ?2) ORDER BY d.id DESC LIMIT ?3")) < 0)
        return err;
    sqlite3_bind_int64(q, 1, user_id);
    sqlite3_bind_int64(q, 2, before);
    sqlite3_bind_int64(q, 3, (int64_t)max);
    while ((rc = sqlite3_step(q)) == SQLITE_ROW)
        dep_row(&out[(*n)++], q);
    if (rc != SQLITE_DONE)
        return fail(q, st, rc, "list deployments");
    sqlite3_finalize(q);
    return 0;
}

int serve__dep_save(ed_store *st, const serve_deployment *d, int64_t now)
{
    sqlite3_stmt *q = NULL;
    int rc, err;

    if ((err = ed_store_prepare(&q, st,
                                "UPDATE deployments SET replicas=?2, max_batch=?3, max_delay_ms=?4, timeout_ms=?5, "
                                "price_mcoins_per_call=?6, allow_nan=?7, status=?8, version=?9, tier=?10, "
                                "updated_at=?11 WHERE id=?1")) < 0)
        return err;
    sqlite3_bind_int64(q, 1, d->id);
    sqlite3_bind_int(q, 2, d->replicas);
    sqlite3_bind_int(q, 3, d->max_batch);
    sqlite3_bind_int(q, 4, d->max_delay_ms);
    sqlite3_bind_int(q, 5, d->timeout_ms);
    sqlite3_bind_int64(q, 6, d->price_mcoins_per_call);
    sqlite3_bind_int(q, 7, d->allow_nan ? 1 : 0);
    sqlite3_bind_text(q, 8, d->status, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int(q, 9, d->version);
    sqlite3_bind_text(q, 10, d->tier, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(q, 11, now);
    if ((rc = ed_store_step(q)) != SQLITE_DONE)
        return fail(q, st, rc, "update deployment");
    sqlite3_finalize(q);
    return 0;
}

/* ---- replicas ------------------------------------------------------------------ */

int serve__rep_insert(int64_t *out_id, ed_store *st, int64_t dep, int version, int64_t now)
{
    sqlite3_stmt *q = NULL;
    int rc, err;

    if ((err = ed_store_prepare(&q, st,
                                "INSERT INTO deployment_replicas (deployment_id, version, status, started_at) "
                                "VALUES (?1, ?2, 'starting', ?3)")) < 0)
        return err;
    sqlite3_bind_int64(q, 1, dep);
    sqlite3_bind_int(q, 2, version);
    sqlite3_bind_int64(q, 3, now);
    if ((rc = ed_store_step(q)) != SQLITE_DONE)
        return fail(q, st, rc, "insert replica");
    sqlite3_finalize(q);
    *out_id = sqlite3_last_insert_rowid(ed_store_db(st));
    return 0;
}

int serve__rep_status(ed_store *st, int64_t rid, const char *status, const char *detail, int64_t ended_at)
{
    sqlite3_stmt *q = NULL;
    int rc, err;

    if ((err = ed_store_prepare(&q, st,
                                "UPDATE deployment_replicas SET status=?2, detail=COALESCE(?3, detail), "
                                "ended_at=CASE WHEN ?4 > 0 THEN ?4 ELSE ended_at END WHERE id=?1")) < 0)
        return err;
    sqlite3_bind_int64(q, 1, rid);
    sqlite3_bind_text(q, 2, status, -1, SQLITE_TRANSIENT);
    if (detail)
        sqlite3_bind_text(q, 3, detail, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(q, 4, ended_at);
    if ((rc = ed_store_step(q)) != SQLITE_DONE)
        return fail(q, st, rc, "update replica");
    sqlite3_finalize(q);
    return 0;
}

int serve__rep_metered(ed_store *st, int64_t rid, int64_t seq, int64_t ms)
{
    sqlite3_stmt *q = NULL;
    int rc, err;

    if ((err = ed_store_prepare(&q, st,
                                "UPDATE deployment_replicas SET meter_seq=?2, metered_ms=metered_ms+?3 WHERE id=?1")) < 0)
        return err;
    sqlite3_bind_int64(q, 1, rid);
    sqlite3_bind_int64(q, 2, seq);
    sqlite3_bind_int64(q, 3, ms);
    if ((rc = ed_store_step(q)) != SQLITE_DONE)
        return fail(q, st, rc, "meter replica");
    sqlite3_finalize(q);
    return 0;
}

int serve__reps_end_all(ed_store *st, int64_t now)
{
    sqlite3_stmt *q = NULL;
    int rc, err;

    if ((err = ed_store_prepare(&q, st,
                                "UPDATE deployment_replicas SET status='ended', detail='the server stopped', "
                                "ended_at=?1 WHERE ended_at IS NULL")) < 0)
        return err;
    sqlite3_bind_int64(q, 1, now);
    if ((rc = ed_store_step(q)) != SQLITE_DONE)
        return fail(q, st, rc, "end replicas");
    sqlite3_finalize(q);
    return 0;
}

/* Prepare `sql` (?1 the deployment, ?2 the row limit) over a deployment
 * `user_id` may read: the list readers' common start. */
static int dep_rows_prepare(sqlite3_stmt **q, serve_hub *h, int64_t user_id, int64_t id, const char *sql, int limit)
{
    int64_t have;
    char ref[32];
    int err;

    snprintf(ref, sizeof(ref), "%lld", (long long)id);
    if ((err = serve__dep_find(&have, h->st, user_id, ref)) < 0)
        return err;
    if ((err = ed_store_prepare(q, h->st, sql)) < 0)
        return err;
    sqlite3_bind_int64(*q, 1, id);
    sqlite3_bind_int(*q, 2, limit);
    return 0;
}

int serve_replicas_json(json_t **out, serve_hub *h, int64_t user_id, int64_t id, int limit)
{
    sqlite3_stmt *q = NULL;
    int rc, err;

    *out = NULL;
    if ((err = dep_rows_prepare(&q, h, user_id, id,
                                "SELECT id, version, status, detail, started_at, ended_at, metered_ms FROM "
                                "deployment_replicas WHERE deployment_id = ?1 ORDER BY ended_at IS NOT NULL, id DESC "
                                "LIMIT ?2", limit > 0 ? limit : 20)) < 0)
        return err;
    *out = json_array();
    while ((rc = sqlite3_step(q)) == SQLITE_ROW)
        json_array_append_new(*out, json_pack("{s:I, s:i, s:s, s:s, s:I, s:o, s:I}", "id",
                                              (json_int_t)sqlite3_column_int64(q, 0), "version",
                                              sqlite3_column_int(q, 1), "status", sqlite3_column_text(q, 2),
                                              "detail", sqlite3_column_text(q, 3), "started_at",
                                              (json_int_t)sqlite3_column_int64(q, 4), "ended_at",
                                              sqlite3_column_type(q, 5) == SQLITE_NULL
                                                  ? json_null()
                                                  : json_integer(sqlite3_column_int64(q, 5)),
                                              "metered_ms", (json_int_t)sqlite3_column_int64(q, 6)));
    sqlite3_finalize(q);
    return 0;
}

/* ---- calls ----------------------------------------------------------------------- */

typedef struct calls_ctx {
    ed_store *st;
    slog *list;
} calls_ctx;

static int calls_body(void *arg)
{
    calls_ctx *c = arg;
    sqlite3_stmt *q = NULL;
    int rc, err;

    if ((err = ed_store_prepare(&q, c->st,
                                "INSERT INTO serve_calls (at, day, deployment_id, key_id, user_id, version, status, "
                                "latency_ms, batch_size, cost_mcoins, error) VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11)")) < 0)
        return err;
    for (slog *l = c->list; l; l = l->next) {
        const serve_call_record *r = &l->r;
        char day[16];
        day_of(day, l->at);
        sqlite3_reset(q);
        sqlite3_clear_bindings(q);
        sqlite3_bind_int64(q, 1, l->at);
        sqlite3_bind_text(q, 2, day, -1, SQLITE_TRANSIENT);
        sqlite3_bind_int64(q, 3, r->deployment_id);
        if (r->key_id > 0)
            sqlite3_bind_int64(q, 4, r->key_id);
        sqlite3_bind_int64(q, 5, r->user_id);
        sqlite3_bind_int(q, 6, r->version);
        sqlite3_bind_int(q, 7, r->status);
        sqlite3_bind_int64(q, 8, r->latency_ms);
        sqlite3_bind_int(q, 9, r->batch_size);
        sqlite3_bind_int64(q, 10, r->cost_mcoins);
        if (l->error[0])
            sqlite3_bind_text(q, 11, l->error, -1, SQLITE_TRANSIENT);
        if ((rc = sqlite3_step(q)) != SQLITE_DONE) {
            err = ed_store_error(ed_store_db(c->st), rc, "log calls");
            sqlite3_finalize(q);
            return err;
        }
    }
    sqlite3_finalize(q);
    return 0;
}

/* Every record of `list` in one transaction. */
int serve__calls_insert(ed_store *st, slog *list)
{
    calls_ctx c = {st, list};
    return ed_store_tx(st, calls_body, &c);
}

static int one_int(int64_t *out, ed_store *st, const char *sql, int64_t a, const char *b)
{
    sqlite3_stmt *q = NULL;
    int rc, err;

    *out = 0;
    if ((err = ed_store_prepare(&q, st, sql)) < 0)
        return err;
    sqlite3_bind_int64(q, 1, a);
    if (b)
        sqlite3_bind_text(q, 2, b, -1, SQLITE_TRANSIENT);
    if ((rc = sqlite3_step(q)) == SQLITE_ROW)
        *out = sqlite3_column_int64(q, 0);
    else if (rc != SQLITE_DONE)
        return fail(q, st, rc, "sum");
    sqlite3_finalize(q);
    return 0;
}

int serve__key_spent_today(int64_t *out, ed_store *st, int64_t key_id, int64_t now)
{
    char day[16];
    day_of(day, now);
    return one_int(out, st, "SELECT COALESCE(SUM(cost_mcoins), 0) FROM serve_calls WHERE key_id = ?1 AND day = ?2",
                   key_id, day);
}

int serve__user_unposted(int64_t *out, ed_store *st, int64_t user_id)
{
    int64_t a = 0, b = 0;
    int err;

    if ((err = one_int(&a, st,
                       "SELECT COALESCE(SUM(cost_mcoins), 0) FROM serve_calls WHERE user_id = ?1 AND batch_id IS NULL "
                       "AND cost_mcoins > 0",
                       user_id, NULL)) < 0 ||
        (err = one_int(&b, st,
                       "SELECT COALESCE(SUM(amount_mcoins), 0) FROM serve_batches WHERE user_id = ?1 AND posted_at IS NULL",
                       user_id, NULL)) < 0)
        return err;
    *out = a + b;
    return 0;
}

/* ---- charge batches --------------------------------------------------------------- */

typedef struct batch_ctx {
    ed_store *st;
    int made;
} batch_ctx;

/* One transaction: every caller's unbatched calls with a cost become one
 * batch row each, and the calls point at it. */
static int batch_body(void *arg)
{
    batch_ctx *c = arg;
    sqlite3_stmt *q = NULL, *ins = NULL, *upd = NULL;
    int rc, err;

    c->made = 0;
    if ((err = ed_store_prepare(&q, c->st,
                                "SELECT user_id, SUM(cost_mcoins), COUNT(*), MAX(id) FROM serve_calls WHERE "
                                "batch_id IS NULL AND cost_mcoins > 0 GROUP BY user_id")) < 0)
        return err;
    if ((err = ed_store_prepare(&ins, c->st,
                                "INSERT INTO serve_batches (user_id, amount_mcoins, calls, created_at) VALUES "
                                "(?1, ?2, ?3, ?4)")) < 0 ||
        (err = ed_store_prepare(&upd, c->st,
                                "UPDATE serve_calls SET batch_id = ?1 WHERE batch_id IS NULL AND cost_mcoins > 0 AND "
                                "user_id = ?2 AND id <= ?3")) < 0)
        goto out;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        int64_t user = sqlite3_column_int64(q, 0), bid;
        sqlite3_reset(ins);
        sqlite3_bind_int64(ins, 1, user);
        sqlite3_bind_int64(ins, 2, sqlite3_column_int64(q, 1));
        sqlite3_bind_int64(ins, 3, sqlite3_column_int64(q, 2));
        sqlite3_bind_int64(ins, 4, (int64_t)time(NULL) * 1000);
        if ((rc = sqlite3_step(ins)) != SQLITE_DONE) {
            err = ed_store_error(ed_store_db(c->st), rc, "insert charge batch");
            goto out;
        }
        bid = sqlite3_last_insert_rowid(ed_store_db(c->st));
        sqlite3_reset(upd);
        sqlite3_bind_int64(upd, 1, bid);
        sqlite3_bind_int64(upd, 2, user);
        sqlite3_bind_int64(upd, 3, sqlite3_column_int64(q, 3));
        if ((rc = sqlite3_step(upd)) != SQLITE_DONE) {
            err = ed_store_error(ed_store_db(c->st), rc, "batch calls");
            goto out;
        }
        c->made++;
    }
    if (rc != SQLITE_DONE)
        err = ed_store_error(ed_store_db(c->st), rc, "read unbatched calls");
out:
    sqlite3_finalize(q);
    sqlite3_finalize(ins);
    sqlite3_finalize(upd);
    return err;
}

#include "quota.h"

int serve_charges_flush(serve_hub *h, int *posted)
{
    batch_ctx c = {h->st, 0};
    sqlite3_stmt *q = NULL;
    int64_t ids[64], users[64], amounts[64], calls[64];
    int n = 0, rc, err, done = 0;

    if (posted)
        *posted = 0;
    pthread_mutex_lock(&h->flush_mu);
    if ((err = ed_store_tx(h->st, batch_body, &c)) < 0)
        goto out;
    /* post every unposted batch (ones a crash left too) under its key */
    if ((err = ed_store_prepare(&q, h->st,
                                "SELECT id, user_id, amount_mcoins, calls FROM serve_batches WHERE posted_at IS NULL "
                                "ORDER BY id LIMIT 64")) < 0)
        goto out;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW && n < 64) {
        ids[n] = sqlite3_column_int64(q, 0);
        users[n] = sqlite3_column_int64(q, 1);
        amounts[n] = sqlite3_column_int64(q, 2);
        calls[n] = sqlite3_column_int64(q, 3);
        n++;
    }
    sqlite3_finalize(q);
    q = NULL;
    for (int i = 0; i < n; i++) {
        char key[64], reason[96];
        int64_t transfer = 0;
        int e;
        snprintf(key, sizeof(key), "serve-batch-%lld", (long long)ids[i]);
        snprintf(reason, sizeof(reason), "model calls (%lld)", (long long)calls[i]);
        e = quota_charge(&transfer, h->st, users[i], amounts[i], key, reason, key);
        if ((err = ed_store_prepare(&q, h->st,
                                    "UPDATE serve_batches SET posted_at = CASE WHEN ?2 > 0 THEN ?3 ELSE NULL END, "
                                    "transfer_id = NULLIF(?2, 0), last_error = ?4 WHERE id = ?1")) < 0)
            goto out;
        sqlite3_bind_int64(q, 1, ids[i]);
        sqlite3_bind_int64(q, 2, e == 0 ? transfer : 0);
        sqlite3_bind_int64(q, 3, (int64_t)time(NULL) * 1000);
        if (e < 0)
            sqlite3_bind_text(q, 4, ed_error_last(), -1, SQLITE_TRANSIENT);
        rc = ed_store_step(q);
        sqlite3_finalize(q);
        q = NULL;
        if (rc != SQLITE_DONE) {
            err = ed_store_error(ed_store_db(h->st), rc, "mark batch posted");
            goto out;
        }
        if (e == 0)
            done++;
    }
    err = 0;
out:
    pthread_mutex_unlock(&h->flush_mu);
    if (posted)
        *posted = done;
    return err;
}

/* ---- limits ------------------------------------------------------------------------ */

int serve_key_limits_get(serve_key_limits *out, serve_hub *h, int64_t key_id)
{
    sqlite3_stmt *q = NULL;
    int rc, err;

    out->requests_per_min = 0;
    out->concurrency = 0;
    out->daily_budget_mcoins = -1;
    if ((err = ed_store_prepare(&q, h->st,
                                "SELECT requests_per_min, concurrency, daily_budget_mcoins FROM serve_key_limits "
                                "WHERE key_id = ?1")) < 0)
        return err;
    sqlite3_bind_int64(q, 1, key_id);
    if ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        out->requests_per_min = sqlite3_column_int64(q, 0);
        out->concurrency = sqlite3_column_int64(q, 1);
        out->daily_budget_mcoins = sqlite3_column_int64(q, 2);
    } else if (rc != SQLITE_DONE) {
        return fail(q, h->st, rc, "read key limits");
    }
    sqlite3_finalize(q);
    return 0;
}

int serve_key_limits_put(serve_hub *h, int64_t key_id, int64_t user_id, const serve_key_limits *l)
{
    sqlite3_stmt *q = NULL;
    int rc, err;

    if (l->requests_per_min < 0 || l->requests_per_min > 1000000 || l->concurrency < 0 || l->concurrency > 1024 ||
        l->daily_budget_mcoins < -1)
        return ed_error_set(ED_EUNPROC, "serve limits out of range");
    if ((err = ed_store_prepare(&q, h->st,
                                "INSERT INTO serve_key_limits (key_id, user_id, requests_per_min, concurrency, "
                                "daily_budget_mcoins, updated_at) VALUES (?1,?2,?3,?4,?5,?6) ON CONFLICT(key_id) DO "
                                "UPDATE SET requests_per_min=?3, concurrency=?4, daily_budget_mcoins=?5, updated_at=?6")) < 0)
        return err;
    sqlite3_bind_int64(q, 1, key_id);
    sqlite3_bind_int64(q, 2, user_id);
    sqlite3_bind_int64(q, 3, l->requests_per_min);
    sqlite3_bind_int64(q, 4, l->concurrency);
    sqlite3_bind_int64(q, 5, l->daily_budget_mcoins);
    sqlite3_bind_int64(q, 6, (int64_t)time(NULL) * 1000);
    if ((rc = ed_store_step(q)) != SQLITE_DONE)
        return fail(q, h->st, rc, "write key limits");
    sqlite3_finalize(q);
    pthread_mutex_lock(&h->mu);     /* the admission cache reads them again */
    for (skey *k = h->keys; k; k = k->next)
        if (k->key_id == key_id)
            k->limits_read_ms = 0;
    pthread_mutex_unlock(&h->mu);
    return 0;
}

/* ---- usage ----------------------------------------------------------------------------- */

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

static int64_t pct(const int64_t *v, size_t n, double p)
{
    size_t i;
    if (n == 0)
        return 0;
    i = (size_t)ceil(p * (double)n) - 1;   /* nearest rank */
    return v[i >= n ? n - 1 : i];
}

#define USAGE_ROWS_MAX 2000000

static int usage(json_t **out, ed_store *st, const char *where, int64_t id, int64_t from, int64_t to)
{
    char sql[400];
    sqlite3_stmt *q = NULL;
    int64_t *lat = NULL;
    size_t n = 0, cap = 0, rows = 0;
    char day[16] = "";
    int64_t calls = 0, errors = 0, cost = 0;
    int rc, err;

    *out = json_array();
    snprintf(sql, sizeof(sql),
             "SELECT day, latency_ms, status, cost_mcoins FROM serve_calls WHERE %s = ?1 AND at >= ?2 AND at < ?3 "
             "ORDER BY day, latency_ms",
             where);
    if ((err = ed_store_prepare(&q, st, sql)) < 0)
        return err;
    sqlite3_bind_int64(q, 1, id);
    sqlite3_bind_int64(q, 2, from);
    sqlite3_bind_int64(q, 3, to);
    for (;;) {
        const char *d = NULL;
        rc = sqlite3_step(q);
        if (rc == SQLITE_ROW)
            d = (const char *)sqlite3_column_text(q, 0);
        if (day[0] && (rc != SQLITE_ROW || strcmp(d, day) != 0)) {
            qsort(lat, n, sizeof(*lat), cmp_i64);
            json_array_append_new(*out, json_pack("{s:s, s:I, s:I, s:I, s:I, s:I, s:I}", "day", day, "calls",
                                                  (json_int_t)calls, "errors", (json_int_t)errors, "p50_ms",
                                                  (json_int_t)pct(lat, n, 0.50), "p95_ms", (json_int_t)pct(lat, n, 0.95),
                                                  "p99_ms", (json_int_t)pct(lat, n, 0.99), "cost_mcoins",
                                                  (json_int_t)cost));
            n = 0;
            calls = errors = cost = 0;
        }
        if (rc != SQLITE_ROW || ++rows > USAGE_ROWS_MAX)
            break;
        snprintf(day, sizeof(day), "%s", d ? d : "");
        if (n == cap) {
            int64_t *p = realloc(lat, (cap ? cap * 2 : 256) * sizeof(*lat));
            if (p == NULL) {
                free(lat);
                sqlite3_finalize(q);
                return ed_error_set(ED_ENOMEM, "usage");
            }
            lat = p;
            cap = cap ? cap * 2 : 256;
        }
        lat[n++] = sqlite3_column_int64(q, 1);
        calls++;
        if (sqlite3_column_int(q, 2) >= 400)
            errors++;
        cost += sqlite3_column_int64(q, 3);
    }
    free(lat);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE)
        return fail(q, st, rc, "usage");
    sqlite3_finalize(q);
    return 0;
}

int serve_usage_deployment(json_t **out, serve_hub *h, int64_t user_id, int64_t id, int64_t from_ms, int64_t to_ms)
{
    int64_t have;
    char ref[32];
    int err;

    *out = NULL;
    snprintf(ref, sizeof(ref), "%lld", (long long)id);
    if ((err = serve__dep_find(&have, h->st, user_id, ref)) < 0)
        return err;
    return usage(out, h->st, "deployment_id", id, from_ms, to_ms);
}

int serve_usage_key(json_t **out, serve_hub *h, int64_t key_id, int64_t from_ms, int64_t to_ms)
{
    return usage(out, h->st, "key_id", key_id, from_ms, to_ms);
}

int serve_calls_json(json_t **out, serve_hub *h, int64_t user_id, int64_t id, int limit)
{
    sqlite3_stmt *q = NULL;
    int rc, err;

    *out = NULL;
    if ((err = dep_rows_prepare(&q, h, user_id, id,
                                "SELECT id, at, key_id, version, status, latency_ms, batch_size, cost_mcoins, error "
                                "FROM serve_calls WHERE deployment_id = ?1 ORDER BY id DESC LIMIT ?2",
                                limit > 0 && limit <= 500 ? limit : 50)) < 0)
        return err;
    *out = json_array();
    while ((rc = sqlite3_step(q)) == SQLITE_ROW)
        json_array_append_new(
            *out, json_pack("{s:I, s:I, s:o, s:i, s:i, s:I, s:i, s:I, s:o}", "id", (json_int_t)sqlite3_column_int64(q, 0),
                            "at", (json_int_t)sqlite3_column_int64(q, 1), "key_id",
                            sqlite3_column_type(q, 2) == SQLITE_NULL ? json_null()
                                                                     : json_integer(sqlite3_column_int64(q, 2)),
                            "version", sqlite3_column_int(q, 3), "status", sqlite3_column_int(q, 4), "latency_ms",
                            (json_int_t)sqlite3_column_int64(q, 5), "batch_size", sqlite3_column_int(q, 6),
                            "cost_mcoins", (json_int_t)sqlite3_column_int64(q, 7), "error",
                            sqlite3_column_type(q, 8) == SQLITE_NULL ? json_null()
                                                                     : json_string((const char *)sqlite3_column_text(q, 8))));
    sqlite3_finalize(q);
    return 0;
}
