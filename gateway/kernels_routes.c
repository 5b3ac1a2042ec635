/*
 * kernels_routes.c - /api/v1/kernels (API.md "Kernels"): start, list, get,
 * shut down, interrupt, restart, execute, and the output as Server-Sent
 * Events. The work is the kernels module's (kernels/kh.h); this file speaks HTTP.
 *
 * Events: GET /api/v1/kernels/{id}/events?after=SEQ (or Last-Event-ID, which
 * an EventSource sends when it reconnects) replays the journal after SEQ,
 * then follows. Each event is `id: SEQ` and `data: ` the Jupyter message as
 * the kernel sent it plus "seq". When the kernel is dead and everything was
 * sent: `event: end` with data {"status":"dead","stop_reason":...}, and the
 * response ends. Comments (": hb") every 15 s keep the connection alive.
 */
#include "dataset_mounts.h"
#include "gw_int.h"
#include "kh.h"
#include "sched.h"

#include "ed_buf.h"
#include "ed_error.h"
#include "ed_json.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static json_t *time_or_null(gw_request *req, int64_t ms)
{
    return ms > 0 ? json_string(gw__time(req, ms)) : json_null();
}

static json_t *kernel_json(gw_request *req, const kh_kernel *k)
{
    return json_pack("{s:s, s:s, s:s, s:s, s:i, s:I, s:o, s:s, s:o, s:o, s:o, s:i, s:I, s:s, s:s}", "id", k->id,
                     "status", k->status, "project_id", k->project_id, "resource", k->resource, "queue_position",
                     k->queue_position, "eta_s", (json_int_t)(k->eta_ms < 0 ? -1 : (k->eta_ms + 999) / 1000),
                     "stop_reason", k->stop_reason[0] ? json_string(k->stop_reason) : json_null(), "created_at",
                     gw__time(req, k->created_at), "started_at", time_or_null(req, k->started_at),
                     "last_activity_at", time_or_null(req, k->last_activity_at), "ended_at",
                     time_or_null(req, k->ended_at), "connections", k->connections, "last_seq",
                     (json_int_t)k->last_seq, "name", "python3", "execution_state", k->status);
}

/* POST /api/v1/kernels {project_id, resource} */
static int post_kernel(gw_request *req, gw_response *res)
{
    json_t *body;
    const char *project = NULL, *resource = NULL;
    kh_kernel k;
    int err;

    if ((err = gw_request_json(&body, req)) < 0 ||
        (err = ed_json_get_str(&project, body, "project_id", true)) < 0 ||
        (err = ed_json_get_str(&resource, body, "resource", false)) < 0)
        return err;
    if (resource == NULL)
        resource = "cpu-basic";
    sched_acting_key_set(req->auth.via_key ? req->auth.key_id : 0);   /* the key's daily budget applies */
    err = kh_kernel_start(&k, req->srv->kernels, req->auth.user_id, req->auth.tier, project, resource);
    sched_acting_key_set(0);
    if (err < 0)
        return err;
    gw__audit(req, "kernel.start", k.id, NULL);
    return gw_respond_json(res, 201, kernel_json(req, &k));
}

typedef struct list_ctx {
    gw_request *req;
    json_t     *items;
} list_ctx;

static int add_kernel(const kh_kernel *k, void *payload)
{
    list_ctx *c = payload;
    return json_array_append_new(c->items, kernel_json(c->req, k)) == 0 ? 0 : ED_ENOMEM;
}

/* GET /api/v1/kernels[?all=1] */
static int list_kernels(gw_request *req, gw_response *res)
{
    const char *all = gw_request_query(req, "all");
    list_ctx c = {req, json_array()};
    int err;

    if (c.items == NULL)
        return ed_error_set(ED_ENOMEM, "kernels");
    if ((err = kh_kernel_each(req->srv->kernels, req->auth.user_id, all && strcmp(all, "1") == 0, add_kernel, &c)) < 0) {
        json_decref(c.items);
        return err;
    }
    return gw_respond_json(res, 200, json_pack("{s:o, s:n}", "items", c.items, "next_cursor"));
}

static int get_kernel(gw_request *req, gw_response *res)
{
    kh_kernel k;
    json_t *o;
    int err;

    if ((err = kh_kernel_get(&k, req->srv->kernels, req->auth.user_id, req->params[0])) < 0)
        return err;
    /* the datasets its current process mounts, with their versions, and
     * the GPUs it holds */
    if ((o = kernel_json(req, &k)) != NULL) {
        json_object_set_new(o, "datasets", gw__job_datasets_json(req->srv, k.job_id));
        json_object_set_new(o, "gpus", gw__job_gpus_json(req->srv, k.job_id));
    }
    return gw_respond_json(res, 200, o);
}

static int delete_kernel(gw_request *req, gw_response *res)
{
    kh_kernel k;
    int err;

    if ((err = kh_kernel_shutdown(req->srv->kernels, req->auth.user_id, req->params[0], NULL)) < 0 ||
        (err = kh_kernel_get(&k, req->srv->kernels, req->auth.user_id, req->params[0])) < 0)
        return err;
    gw__audit(req, "kernel.stop", k.id, NULL);
    return gw_respond_json(res, 200, kernel_json(req, &k));
}

static int interrupt_kernel(gw_request *req, gw_response *res)
{
    kh_kernel k;
    int err;

    if ((err = kh_kernel_interrupt(req->srv->kernels, req->auth.user_id, req->params[0])) < 0 ||
        (err = kh_kernel_get(&k, req->srv->kernels, req->auth.user_id, req->params[0])) < 0)
        return err;
    return gw_respond_json(res, 200, kernel_json(req, &k));
}

static int restart_kernel(gw_request *req, gw_response *res)
{
    kh_kernel k;
    int err;

    /* a spent key budget refuses the restart before the running process stops */
    if (req->auth.via_key && (err = sched_key_budget_check(req->srv->sched, req->auth.key_id)) < 0)
        return err;
    sched_acting_key_set(req->auth.via_key ? req->auth.key_id : 0);
    err = kh_kernel_restart(&k, req->srv->kernels, req->auth.user_id, req->params[0]);
    sched_acting_key_set(0);
    if (err < 0)
        return err;
    gw__audit(req, "kernel.restart", k.id, NULL);
    return gw_respond_json(res, 200, kernel_json(req, &k));
}

/* A figure that may be unknown: the number, or null. */
static json_t *int_or_null(int64_t v)
{
    return v >= 0 ? json_integer((json_int_t)v) : json_null();
}

static json_t *real_or_null(double v)
{
    return v >= 0 ? json_real(v) : json_null();
}

static json_t *mb_or_null(int64_t bytes)
{
    return bytes >= 0 ? json_integer((json_int_t)(bytes >> 20)) : json_null();
}

json_t *gw__job_gpus_json(gw_server *srv, int64_t job_id)
{
    sched_gpu_usage g[SCHED_USAGE_MAX_GPUS];
    int n = job_id > 0 ? sched_job_gpus(g, SCHED_USAGE_MAX_GPUS, srv->sched, job_id) : 0;
    json_t *a = json_array();

    for (int i = 0; a && i < n; i++)
        json_array_append_new(a, json_pack("{s:i, s:o, s:o, s:o, s:o}", "index", g[i].index, "name",
                                           g[i].name[0] ? json_string(g[i].name) : json_null(), "utilization_pct",
                                           int_or_null(g[i].util_percent), "memory_used_mb",
                                           mb_or_null(g[i].memory_bytes), "memory_total_mb",
                                           mb_or_null(g[i].memory_total_bytes)));
    return a;
}

/* GET /api/v1/kernels/{id}/usage: live meters (kernels/usage.c). The
 * owner's, or any kernel for an admin; a reading is at most 1 s old. */
static int get_usage(gw_request *req, gw_response *res)
{
    bool admin = req->auth.role && strcmp(req->auth.role, "admin") == 0 && (req->auth.scopes & GW_SCOPE_ADMIN);
    sched_usage u;
    kh_kernel k;
    json_t *gpus, *o;
    int err;

    if ((err = kh_kernel_usage(&u, &k, req->srv->kernels, req->auth.user_id, admin, req->params[0])) < 0)
        return err;
    if ((gpus = json_array()) == NULL)
        return ed_error_set(ED_ENOMEM, "usage");
    for (int i = 0; i < u.n_gpus && i < SCHED_USAGE_MAX_GPUS; i++)
        json_array_append_new(gpus, json_pack("{s:i, s:o, s:o, s:o, s:o}", "index", u.gpus[i].index, "name",
                                              u.gpus[i].name[0] ? json_string(u.gpus[i].name) : json_null(),
                                              "util_percent", int_or_null(u.gpus[i].util_percent), "memory_bytes",
                                              int_or_null(u.gpus[i].memory_bytes), "memory_total_bytes",
                                              int_or_null(u.gpus[i].memory_total_bytes)));
    o = json_pack("{s:s, s:s, s:s, s:I, s:o, s:I, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:I, s:I, s:I, s:b}",
                  "kernel_id", k.id, "status", k.status, "resource", k.resource, "at_ms", (json_int_t)u.at_ms,
                  "started_at", time_or_null(req, u.started_at), "elapsed_ms", (json_int_t)u.elapsed_ms,
                  "cpu_percent", u.cpu_percent >= 0 ? json_integer((json_int_t)(u.cpu_percent + 0.5)) : json_null(),
                  "cpu_window_ms",
                  u.cpu_percent >= 0 ? json_integer((json_int_t)u.cpu_window_ms) : json_null(), "cpu_limit_cores",
                  real_or_null(u.cpu_limit_cores), "memory_bytes", int_or_null(u.memory_bytes),
                  "memory_limit_bytes", int_or_null(u.memory_limit_bytes), "memory_peak_bytes",
                  int_or_null(u.memory_peak_bytes), "gpus", gpus, "job_id",
                  u.job_id > 0 ? json_integer((json_int_t)u.job_id) : json_null(), "mcoins_so_far",
                  (json_int_t)u.mcoins_so_far, "price_mcoins_per_hour", (json_int_t)u.price_mcoins_per_hour,
                  "meter_interval_ms", (json_int_t)u.meter_interval_ms, "free", u.free);
    if (o == NULL)
        return ed_error_set(ED_ENOMEM, "usage");
    gw_response_header(res, "Cache-Control", "no-store");
    return gw_respond_json(res, 200, o);
}

/* POST /api/v1/kernels/{id}/execute {code, cell_id?, notebook_path?} */
static int execute(gw_request *req, gw_response *res)
{
    json_t *body;
    const char *code = NULL, *cell = NULL, *nb = NULL;
    char msg_id[33];
    int err;

    if ((err = gw_request_json(&body, req)) < 0 || (err = ed_json_get_str(&code, body, "code", true)) < 0 ||
        (err = ed_json_get_str(&cell, body, "cell_id", false)) < 0 ||
        (err = ed_json_get_str(&nb, body, "notebook_path", false)) < 0)
        return err;
    if ((err = kh_execute(msg_id, req->srv->kernels, req->auth.user_id, req->params[0], code, cell, nb)) < 0)
        return err;
    return gw_respond_json(res, 202, json_pack("{s:s}", "msg_id", msg_id));
}

/* ---- events ------------------------------------------------------------------------ */

typedef struct events {
    pthread_mutex_t mu;
    gw_stream *st;               /* set once the stream exists */
    kh_sub    *sub;
    gw_server *srv;
    int64_t    user_id;
    char       id[KH_ID_LEN];
    char      *pending;          /* formatted bytes not yet sent */
    size_t     plen, poff;
    bool       ended;
} events;

static void ev_wake(void *arg)
{
    events *e = arg;
    pthread_mutex_lock(&e->mu);
    gw_stream *st = e->st;
    pthread_mutex_unlock(&e->mu);
    gw_stream_wake(st);
}

static void ev_release(void *payload)
{
    events *e = payload;
    kh_unsubscribe(e->sub);   /* no wake after this */
    pthread_mutex_destroy(&e->mu);
    free(e->pending);
    free(e);
}

/* Format the next event into e->pending: 1 done, 0 nothing now, <0 the end. */
static int ev_next(events *e)
{
    json_t *m = NULL;
    int64_t seq = 0;
    ed_buf b = {0};
    char *data;
    int r;

    if (e->ended)
        return -1;
    r = kh_sub_next(&m, &seq, e->sub, 0);
    if (r == 0)
        return 0;
    if (r < 0) {
        kh_kernel k;
        e->ended = true;
        if (kh_kernel_get(&k, e->srv->kernels, e->user_id, e->id) < 0)
            snprintf(k.stop_reason, sizeof(k.stop_reason), "died");
        json_t *end = json_pack("{s:s, s:s}", "status", "dead", "stop_reason", k.stop_reason);
        data = end ? json_dumps(end, JSON_COMPACT) : NULL;
        json_decref(end);
        if (data == NULL || ed_buf_printf(&b, "event: end\ndata: %s\n\n", data) < 0) {
            free(data);
            ed_buf_free(&b);
            return -1;
        }
    } else {
        json_object_set_new(m, "seq", json_integer(seq));
        data = json_dumps(m, JSON_COMPACT);
        json_decref(m);
        /* compact JSON has no raw newline: one data line */
        if (data == NULL || ed_buf_printf(&b, "id: %lld\ndata: %s\n\n", (long long)seq, data) < 0) {
            free(data);
            ed_buf_free(&b);
            return -1;
        }
    }
    free(data);
    free(e->pending);
    e->plen = b.len;
    e->poff = 0;
    e->pending = ed_buf_steal(&b);
    return 1;
}

static long ev_fill(void *payload, char *buf, size_t max)
{
    events *e = payload;
    size_t n = 0;

    while (n < max) {
        if (e->poff < e->plen) {
            size_t k = e->plen - e->poff < max - n ? e->plen - e->poff : max - n;
            memcpy(buf + n, e->pending + e->poff, k);
            e->poff += k;
            n += k;
            continue;
        }
        int r = ev_next(e);
        if (r == 0)
            break;
        if (r < 0) {
            if (n > 0)
                break;   /* send what we have; the end comes next call */
            return -1;
        }
    }
    return (long)n;
}

static int parse_seq(int64_t *out, const char *s)
{
    char *end;
    long long v;

    if (s == NULL || *s == '\0') {
        *out = 0;
        return 0;
    }
    v = strtoll(s, &end, 10);
    if (*end != '\0' || v < 0)
        return ed_error_set(ED_EINVAL, "'after' must be a sequence number >= 0");
    *out = v;
    return 0;
}

static int get_events(gw_request *req, gw_response *res)
{
    const char *last = gw_request_header(req, "Last-Event-ID");
    int64_t after = 0;
    events *e;
    gw_stream *st = NULL;
    int err;

    if ((err = parse_seq(&after, gw_request_query(req, "after"))) < 0)
        return err;
    if (last && *last) {
        int64_t l = 0;
        if (parse_seq(&l, last) == 0 && l > after)
            after = l;
    }
    if ((e = calloc(1, sizeof(*e))) == NULL)
        return ed_error_set(ED_ENOMEM, "events");
    pthread_mutex_init(&e->mu, NULL);
    e->srv = req->srv;
    e->user_id = req->auth.user_id;
    snprintf(e->id, sizeof(e->id), "%.36s", req->params[0]);
    if ((err = kh_subscribe(&e->sub, req->srv->kernels, req->auth.user_id, req->params[0], after, ev_wake, e)) < 0) {
        pthread_mutex_destroy(&e->mu);
        free(e);
        return err;
    }
    if ((err = gw_respond_stream(&st, res, req, 200, "text/event-stream", 0, ev_fill, ev_release, e)) < 0) {
        ev_release(e);
        return err;
    }
    pthread_mutex_lock(&e->mu);
    e->st = st;
    pthread_mutex_unlock(&e->mu);
    gw_response_header(res, "Cache-Control", "no-store");
    gw_response_header(res, "X-Accel-Buffering", "no");
    return 0;
}

const gw_route gw__routes_kernels[] = {
    {"POST", "/api/v1/kernels", post_kernel, GW_AUTH | GW_SCOPE_RUN,
     "Start a kernel for a project on a resource class"},
    {"GET", "/api/v1/kernels", list_kernels, GW_AUTH | GW_SCOPE_READ, "The caller's kernels (all=1: dead ones too)"},
    {"GET", "/api/v1/kernels/{id}", get_kernel, GW_AUTH | GW_SCOPE_READ,
     "A kernel: status, queue position, ETA, stop reason"},
    {"DELETE", "/api/v1/kernels/{id}", delete_kernel, GW_AUTH | GW_SCOPE_RUN, "Shut a kernel down"},
    {"POST", "/api/v1/kernels/{id}/interrupt", interrupt_kernel, GW_AUTH | GW_SCOPE_RUN, "Interrupt the running cell"},
    {"POST", "/api/v1/kernels/{id}/restart", restart_kernel, GW_AUTH | GW_SCOPE_RUN,
     "Restart: a new process under the same id"},
    {"POST", "/api/v1/kernels/{id}/execute", execute, GW_AUTH | GW_SCOPE_RUN,
     "Run code (optionally folding outputs into a notebook cell)"},
    {"GET", "/api/v1/kernels/{id}/usage", get_usage, GW_AUTH | GW_SCOPE_READ,
     "Live meters: CPU, memory, GPUs and coins so far (the owner's; an admin's any)"},
    {"GET", "/api/v1/kernels/{id}/events", get_events, GW_AUTH | GW_SCOPE_READ,
     "The kernel's messages as Server-Sent Events (after=SEQ replays)"},
    {NULL, NULL, NULL, 0, NULL},
};
