/*
 * deployments_routes.c - model deployments (API.md "Models and
 * deployments", issue 19 items 4-5): create from a project version's saved
 * model or a job's artifact, list, show, change (a new source rolls the
 * replicas), scale, stop, start, delete, usage, call logs; per-key usage
 * and serve limits. The serving hub (serving/serve.h) does the work; this
 * file reads the model's bytes (projects/ or beneath the job's output
 * directory fd) and speaks HTTP. The hub starts and stops here too
 * (gw__serving_start/stop, from server.c).
 */
#include "gw_int.h"

#include "acct.h"
#include "proj.h"
#include "serve.h"

#include "ed_error.h"
#include "ed_fs.h"
#include "ed_log.h"
#include "ed_time.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define W (GW_AUTH | GW_SCOPE_WRITE)
#define R (GW_AUTH | GW_SCOPE_READ)
#define LIST_MAX 100

/* ---- lifecycle -------------------------------------------------------------- */

int gw__serving_start(gw_server *srv)
{
    serve_config cfg;
    int err;

    if ((err = serve_config_defaults(&cfg, srv->cfg.data_dir)) < 0)
        return err;
    return serve_hub_open(&srv->serving, srv->store, srv->sched, &cfg);
}

void gw__serving_stop(gw_server *srv)
{
    if (srv == NULL)
        return;
    serve_hub_free(srv->serving);
    srv->serving = NULL;
}

/* ---- helpers ------------------------------------------------------------------ */

static serve_hub *hub(gw_request *req)
{
    return req->srv->serving;
}

static int no_hub(void)
{
    return ed_error_set(ED_EBUSY, "deployments are not available on this server");
}

static int parse_id(int64_t *out, const char *s, const char *what)
{
    char *end;
    long long v;

    errno = 0;
    v = strtoll(s, &end, 10);
    if (*s == '\0' || *end || v <= 0 || errno)
        return ed_error_set(ED_ENOTFOUND, "%s %s not found", what, s);
    *out = v;
    return 0;
}

static json_t *parse_or_null(const char *text)
{
    json_t *v = text && *text ? json_loads(text, 0, NULL) : NULL;
    return v ? v : json_null();
}

static json_t *dep_json(gw_request *req, const serve_deployment *d)
{
    char url[128];

    snprintf(url, sizeof(url), "/serve/%" PRId64 "/predict", d->id);
    return json_pack("{s:I, s:s, s:s, s:s, s:s, s:i, s:i, s:i, s:i, s:i, s:I, s:b, s:i, s:o, s:o, s:o, s:s, s:s, "
                     "s:s}",
                     "id", (json_int_t)d->id, "name", d->name, "kind", d->kind, "status", d->status, "resource",
                     d->resource, "replicas", d->replicas, "replicas_ready", d->replicas_ready, "max_batch",
                     d->max_batch, "max_delay_ms", d->max_delay_ms, "timeout_ms", d->timeout_ms,
                     "price_mcoins_per_call", (json_int_t)d->price_mcoins_per_call, "allow_nan", d->allow_nan,
                     "model_version", d->version, "source", parse_or_null(d->source_json), "inputs",
                     parse_or_null(d->inputs_json), "outputs", parse_or_null(d->outputs_json), "predict_url", url,
                     "created_at", gw__time(req, d->created_at), "updated_at", gw__time(req, d->updated_at));
}

/* The model's two files: `path` is the prefix paddle.jit.save was given
 * ("model/lenet"; a trailing ".pdmodel" is dropped). From a project (the
 * caller's own; at `version`, or the working tree when it is absent) or
 * from beneath a job's output directory. */
typedef struct model_bytes {
    char *model, *params;
    size_t model_len, params_len;
    json_t *source;        /* what is recorded */
} model_bytes;

static void model_bytes_free(model_bytes *m)
{
    free(m->model);
    free(m->params);
    json_decref(m->source);
    memset(m, 0, sizeof(*m));
}

static int read_source(model_bytes *m, gw_request *req, const json_t *src, bool python)
{
    const char *pid = NULL, *ver = NULL, *path = NULL;
    char prefix[ED_FS_PATH_MAX + 1], file[ED_FS_PATH_MAX + 16];
    int64_t job = 0;
    size_t n;
    int err;

    memset(m, 0, sizeof(*m));
    if (!json_is_object(src))
        return ed_error_set(ED_EINVAL, "field 'source' is required: {project_id, version, path} or {job_id, path}");
    if ((err = ed_json_get_str(&path, src, "path", true)) < 0)
        return ed_error_set(ED_EINVAL, "field 'source.path' is required (the prefix given to paddle.jit.save)");
    n = strlen(path);
    if (!python && n > 8 && strcmp(path + n - 8, ".pdmodel") == 0)
        n -= 8;
    if (python && (n < 4 || strcmp(path + n - 3, ".py") != 0))
        return ed_error_set(ED_EUNPROC, "field 'source.path' of a python deployment names its handler file "
                            "(predict.py with load() and predict(inputs))");
    if (n == 0 || n > ED_FS_PATH_MAX - 16 || ed_fs_path_check(path, n) < 0)
        return ed_error_set(ED_EUNPROC, "field 'source.path': a relative path inside the project or output");
    snprintf(prefix, sizeof(prefix), "%.*s", (int)n, path);
    if (json_object_get(src, "job_id")) {
        int dfd = -1;
        if ((err = gw_json_int(&job, src, "job_id", 1, INT64_MAX, true)) < 0)
            return err;
        if ((err = gw__job_output_open(&dfd, req, req->auth.user_id, job)) < 0)
            return err;
        snprintf(file, sizeof(file), python ? "%s" : "%s.pdmodel", prefix);
        err = ed_fs_read_beneath(&m->model, &m->model_len, dfd, file, SERVE_MODEL_MAX);
        if (err == 0 && !python) {
            snprintf(file, sizeof(file), "%s.pdiparams", prefix);
            err = ed_fs_read_beneath(&m->params, &m->params_len, dfd, file, SERVE_PARAMS_MAX);
        }
        close(dfd);
        if (err == ED_ENOTFOUND)
            err = ed_error_set(ED_EUNPROC, "job %" PRId64 "'s output has no %s%s", job, file,
                               python ? "" : " (paddle.jit.save writes PATH.pdmodel and PATH.pdiparams)");
        if (err == ED_ETOOBIG)
            err = ed_error_set(ED_ETOOBIG, "%s is too large to deploy", file);
        if (err == 0)
            m->source = json_pack("{s:I, s:s}", "job_id", (json_int_t)job, "path", prefix);
    } else {
        proj *p = NULL;
        if ((err = ed_json_get_str(&pid, src, "project_id", true)) < 0)
            return ed_error_set(ED_EINVAL, "field 'source' needs project_id or job_id");
        if (json_object_get(src, "version") && !json_is_null(json_object_get(src, "version")) &&
            (err = ed_json_get_str(&ver, src, "version", true)) < 0)
            return err;
        /* only the owner deploys a project's model (a public project is readable, not deployable) */
        if ((err = proj_get(&p, req->srv->projects, req->auth.user_id, pid)) < 0)
            return err;
        if (p->owner_id != req->auth.user_id) {
            proj_free(p);
            return ed_error_set(ED_ENOTFOUND, "project %s not found", pid);
        }
        proj_free(p);
        snprintf(file, sizeof(file), python ? "%s" : "%s.pdmodel", prefix);
        err = proj_file_read(&m->model, &m->model_len, req->srv->projects, req->auth.user_id, pid, file, ver);
        if (err == 0 && m->model_len > SERVE_MODEL_MAX)
            err = ed_error_set(ED_ETOOBIG, "%s is over %u bytes", file, SERVE_MODEL_MAX);
        if (err == 0 && !python) {
            snprintf(file, sizeof(file), "%s.pdiparams", prefix);
            err = proj_file_read(&m->params, &m->params_len, req->srv->projects, req->auth.user_id, pid, file, ver);
        }
        if (err == ED_ENOTFOUND)
            err = ed_error_set(ED_EUNPROC, "the project has no %s%s%s%s", file, ver ? " in version " : "",
                               ver ? ver : "",
                               python ? "" : " (paddle.jit.save writes PATH.pdmodel and PATH.pdiparams)");
        if (err == 0)
            m->source = json_pack("{s:s, s:o, s:s}", "project_id", pid, "version", ver ? json_string(ver) : json_null(),
                                  "path", prefix);
    }
    if (err < 0)
        model_bytes_free(m);
    return err;
}

static int int_field(int *out, const json_t *body, const char *name, int64_t min, int64_t max)
{
    int64_t v = *out;
    int err = gw_json_int(&v, body, name, min, max, false);
    if (err == 0)
        *out = (int)v;
    return err;
}

/* ---- routes ---------------------------------------------------------------------- */

static int create_deployment(gw_request *req, gw_response *res)
{
    json_t *body;
    serve_spec s;
    serve_deployment d;
    model_bytes m;
    acct_user u;
    char *src = NULL;
    int err;

    if (hub(req) == NULL)
        return no_hub();
    if ((err = gw_request_json(&body, req)) < 0)
        return err;
    memset(&s, 0, sizeof(s));
    s.user_id = req->auth.user_id;
    s.replicas = 1;
    s.max_batch = 8;
    s.max_delay_ms = 5;
    s.timeout_ms = 30000;
    s.resource = "cpu-basic";
    if ((err = ed_json_get_str(&s.name, body, "name", true)) < 0)
        return err;
    if (json_object_get(body, "kind") && (err = ed_json_get_str(&s.kind, body, "kind", true)) < 0)
        return err;
    if (json_object_get(body, "resource") && (err = ed_json_get_str(&s.resource, body, "resource", true)) < 0)
        return err;
    if ((err = int_field(&s.replicas, body, "replicas", 0, SERVE_MAX_REPLICAS)) < 0 ||
        (err = int_field(&s.max_batch, body, "max_batch", 1, SERVE_MAX_BATCH)) < 0 ||
        (err = int_field(&s.max_delay_ms, body, "max_delay_ms", 0, 10000)) < 0 ||
        (err = int_field(&s.timeout_ms, body, "timeout_ms", 1, 600000)) < 0 ||
        (err = gw_json_int(&s.price_mcoins_per_call, body, "price_mcoins_per_call", 0, 1000000, false)) < 0)
        return err;
    if (json_object_get(body, "allow_nan") && (err = ed_json_get_bool(&s.allow_nan, body, "allow_nan", true)) < 0)
        return err;
    if (s.kind && strcmp(s.kind, "model") != 0 && strcmp(s.kind, "python") != 0)
        return ed_error_set(ED_EUNPROC, "field 'kind' must be \"model\" or \"python\"");
    if ((err = acct_user_get(&u, req->srv->store, req->auth.user_id)) < 0)
        return err;
    s.tier = u.tier;
    if ((err = read_source(&m, req, json_object_get(body, "source"), s.kind && strcmp(s.kind, "python") == 0)) < 0)
        return err;
    src = json_dumps(m.source, JSON_COMPACT);
    s.source_json = src;
    err = serve_deployment_create(&d, hub(req), &s, m.model, m.model_len, m.params, m.params_len);
    free(src);
    model_bytes_free(&m);
    if (err < 0)
        return err;
    gw__audit(req, "deployment.create", d.name, NULL);
    return gw_respond_json(res, 201, dep_json(req, &d));
}

static int list_deployments(gw_request *req, gw_response *res)
{
    serve_deployment *items;
    int limit;
    int64_t before;
    size_t n = 0;
    json_t *a;
    int err;

    if (hub(req) == NULL)
        return no_hub();
    if ((err = gw_request_page_id(&limit, &before, req)) < 0)
        return err;
    if (limit > LIST_MAX)
        limit = LIST_MAX;
    if ((items = calloc((size_t)limit + 1, sizeof(*items))) == NULL)
        return ed_error_set(ED_ENOMEM, "deployments");
    if ((err = serve_deployment_list(items, (size_t)limit + 1, &n, hub(req), req->auth.user_id, before)) < 0) {
        free(items);
        return err;
    }
    a = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(a, dep_json(req, &items[i]));
    free(items);
    return gw_respond_page(res, a, limit);
}

static int get_deployment(gw_request *req, gw_response *res)
{
    serve_deployment d;
    json_t *o, *reps = NULL;
    int err;

    if (hub(req) == NULL)
        return no_hub();
    if ((err = serve_deployment_get(&d, hub(req), req->auth.user_id, req->params[0])) < 0)
        return err;
    o = dep_json(req, &d);
    if (serve_replicas_json(&reps, hub(req), req->auth.user_id, d.id, 20) == 0)
        json_object_set_new(o, "replica_list", reps);
    ed_error_clear();
    return gw_respond_json(res, 200, o);
}

/* PATCH, scale, stop and start: one change. */
static int apply_change(gw_request *req, gw_response *res, serve_change *c, const json_t *source)
{
    serve_deployment d, cur;
    model_bytes m = {0};
    acct_user u;
    char *src = NULL;
    int err;

    if ((err = serve_deployment_get(&cur, hub(req), req->auth.user_id, req->params[0])) < 0)
        return err;
    if (acct_user_get(&u, req->srv->store, req->auth.user_id) == 0)
        c->tier = u.tier;
    ed_error_clear();
    if (source) {
        if ((err = read_source(&m, req, source, strcmp(cur.kind, "python") == 0)) < 0)
            return err;
        src = json_dumps(m.source, JSON_COMPACT);
        c->model = m.model;
        c->model_len = m.model_len;
        c->params = m.params;
        c->params_len = m.params_len;
        c->source_json = src;
    }
    err = serve_deployment_update(&d, hub(req), req->auth.user_id, cur.id, c);
    free(src);
    model_bytes_free(&m);
    if (err < 0)
        return err;
    gw__audit(req, "deployment.update", d.name, NULL);
    return gw_respond_json(res, 200, dep_json(req, &d));
}

static void change_init(serve_change *c)
{
    memset(c, 0, sizeof(*c));
    c->replicas = c->max_batch = c->max_delay_ms = c->timeout_ms = -1;
    c->price_mcoins_per_call = -1;
    c->allow_nan = -1;
}

static int patch_deployment(gw_request *req, gw_response *res)
{
    json_t *body;
    serve_change c;
    const char *status = NULL;
    bool nan;
    int err;

    if (hub(req) == NULL)
        return no_hub();
    if ((err = gw_request_json(&body, req)) < 0)
        return err;
    change_init(&c);
    if ((err = int_field(&c.replicas, body, "replicas", 0, SERVE_MAX_REPLICAS)) < 0 ||
        (err = int_field(&c.max_batch, body, "max_batch", 1, SERVE_MAX_BATCH)) < 0 ||
        (err = int_field(&c.max_delay_ms, body, "max_delay_ms", 0, 10000)) < 0 ||
        (err = int_field(&c.timeout_ms, body, "timeout_ms", 1, 600000)) < 0 ||
        (err = gw_json_int(&c.price_mcoins_per_call, body, "price_mcoins_per_call", 0, 1000000, false)) < 0)
        return err;
    if (json_object_get(body, "allow_nan")) {
        if ((err = ed_json_get_bool(&nan, body, "allow_nan", true)) < 0)
            return err;
        c.allow_nan = nan;
    }
    if (json_object_get(body, "status") && (err = ed_json_get_str(&status, body, "status", true)) < 0)
        return err;
    c.status = status;
    return apply_change(req, res, &c, json_object_get(body, "source"));
}

static int scale_deployment(gw_request *req, gw_response *res)
{
    json_t *body;
    serve_change c;
    int err;

    if (hub(req) == NULL)
        return no_hub();
    if ((err = gw_request_json(&body, req)) < 0)
        return err;
    change_init(&c);
    if (!json_object_get(body, "replicas"))
        return ed_error_set(ED_EINVAL, "field 'replicas' is required");
    if ((err = int_field(&c.replicas, body, "replicas", 0, SERVE_MAX_REPLICAS)) < 0)
        return err;
    return apply_change(req, res, &c, NULL);
}

static int stop_deployment(gw_request *req, gw_response *res)
{
    serve_change c;

    if (hub(req) == NULL)
        return no_hub();
    change_init(&c);
    c.status = "stopped";
    return apply_change(req, res, &c, NULL);
}

static int start_deployment(gw_request *req, gw_response *res)
{
    serve_change c;

    if (hub(req) == NULL)
        return no_hub();
    change_init(&c);
    c.status = "running";
    return apply_change(req, res, &c, NULL);
}

static int delete_deployment(gw_request *req, gw_response *res)
{
    serve_deployment d;
    int err;

    if (hub(req) == NULL)
        return no_hub();
    if ((err = serve_deployment_get(&d, hub(req), req->auth.user_id, req->params[0])) < 0 ||
        (err = serve_deployment_delete(hub(req), req->auth.user_id, d.id)) < 0)
        return err;
    gw__audit(req, "deployment.delete", d.name, NULL);
    return gw_respond_empty(res, 204);
}

/* ?from= and ?to= as YYYY-MM-DD (UTC days, `to` inclusive) or ms; default
 * the last 30 days. At most 366 days. */
static int range(int64_t *from, int64_t *to, gw_request *req)
{
    const char *names[2] = {"from", "to"};
    int64_t *outs[2] = {from, to};
    int64_t now = ed_now_ms();

    *to = now + 1;
    *from = (now / 86400000 - 29) * 86400000;
    for (int i = 0; i < 2; i++) {
        const char *v = gw_request_query(req, names[i]);
        struct tm tm;
        char *end;
        if (v == NULL || *v == '\0')
            continue;
        memset(&tm, 0, sizeof(tm));
        end = strptime(v, "%Y-%m-%d", &tm);
        if (end && (*end == '\0' || *end == 'T')) {
            *outs[i] = (int64_t)timegm(&tm) * 1000 + (i == 1 ? 86400000 : 0);
        } else {
            long long ms = strtoll(v, &end, 10);
            if (*end || ms < 0)
                return ed_error_set(ED_EINVAL, "?%s= must be YYYY-MM-DD or milliseconds", names[i]);
            *outs[i] = ms;
        }
    }
    if (*to < *from || *to - *from > 366LL * 86400000)
        return ed_error_set(ED_EINVAL, "?from= and ?to= must span 0..366 days");
    return 0;
}

static int deployment_usage(gw_request *req, gw_response *res)
{
    serve_deployment d;
    int64_t from, to;
    json_t *a;
    int err;

    if (hub(req) == NULL)
        return no_hub();
    if ((err = range(&from, &to, req)) < 0 ||
        (err = serve_deployment_get(&d, hub(req), req->auth.user_id, req->params[0])) < 0 ||
        (err = serve_usage_deployment(&a, hub(req), req->auth.user_id, d.id, from, to)) < 0)
        return err;
    return gw_respond_json(res, 200, a);
}

static int deployment_logs(gw_request *req, gw_response *res)
{
    serve_deployment d;
    json_t *calls = NULL, *reps = NULL;
    int limit;
    const char *cursor;
    int err;

    if (hub(req) == NULL)
        return no_hub();
    if ((err = gw_request_page(&limit, &cursor, req)) < 0 ||
        (err = serve_deployment_get(&d, hub(req), req->auth.user_id, req->params[0])) < 0 ||
        (err = serve_calls_json(&calls, hub(req), req->auth.user_id, d.id, limit)) < 0 ||
        (err = serve_replicas_json(&reps, hub(req), req->auth.user_id, d.id, 50)) < 0) {
        json_decref(calls);
        return err;
    }
    return gw_respond_json(res, 200, json_pack("{s:o, s:o}", "calls", calls, "replicas", reps));
}

/* The caller's own key `s` (404 otherwise). */
static int own_key(int64_t *out, gw_request *req, const char *s)
{
    json_t *items = NULL, *k;
    int64_t next = 0, id = 0;
    size_t i;
    int err;

    if ((err = parse_id(&id, s, "key")) < 0)
        return err;
    if ((err = acct_key_list(&items, &next, req->srv->store, req->auth.user_id, 500, 0)) < 0)
        return err;
    err = ed_error_set(ED_ENOTFOUND, "key %s not found", s);
    json_array_foreach(items, i, k) if (json_integer_value(json_object_get(k, "id")) == id) {
        ed_error_clear();
        err = 0;
    }
    json_decref(items);
    *out = id;
    return err;
}

static int key_usage(gw_request *req, gw_response *res)
{
    int64_t key, from, to;
    json_t *a;
    int err;

    if (hub(req) == NULL)
        return no_hub();
    if ((err = range(&from, &to, req)) < 0 || (err = own_key(&key, req, req->params[0])) < 0 ||
        (err = serve_usage_key(&a, hub(req), key, from, to)) < 0)
        return err;
    return gw_respond_json(res, 200, a);
}

static json_t *limits_json(const serve_key_limits *l)
{
    return json_pack("{s:I, s:I, s:I}", "requests_per_min", (json_int_t)l->requests_per_min, "concurrency",
                     (json_int_t)l->concurrency, "daily_budget_mcoins", (json_int_t)l->daily_budget_mcoins);
}

static int get_key_limits(gw_request *req, gw_response *res)
{
    serve_key_limits l;
    int64_t key;
    int err;

    if (hub(req) == NULL)
        return no_hub();
    if ((err = own_key(&key, req, req->params[0])) < 0 || (err = serve_key_limits_get(&l, hub(req), key)) < 0)
        return err;
    return gw_respond_json(res, 200, limits_json(&l));
}

static int put_key_limits(gw_request *req, gw_response *res)
{
    serve_key_limits l;
    json_t *body;
    int64_t key;
    int err;

    if (hub(req) == NULL)
        return no_hub();
    if ((err = own_key(&key, req, req->params[0])) < 0 || (err = gw_request_json(&body, req)) < 0 ||
        (err = serve_key_limits_get(&l, hub(req), key)) < 0)
        return err;
    if ((err = gw_json_int(&l.requests_per_min, body, "requests_per_min", 0, 1000000, false)) < 0 ||
        (err = gw_json_int(&l.concurrency, body, "concurrency", 0, 1024, false)) < 0 ||
        (err = gw_json_int(&l.daily_budget_mcoins, body, "daily_budget_mcoins", -1, INT64_C(1) << 50, false)) < 0 ||
        (err = serve_key_limits_put(hub(req), key, req->auth.user_id, &l)) < 0)
        return err;
    gw__audit(req, "key.serve_limits", req->params[0], NULL);
    return gw_respond_json(res, 200, limits_json(&l));
}

const gw_route gw__routes_deployments[] = {
    {"POST", "/api/v1/deployments", create_deployment, W,
     "Deploy a saved model {name, source: {project_id, version, path} | {job_id, path}, resource, replicas, "
     "max_batch, max_delay_ms, timeout_ms, price_mcoins_per_call}"},
    {"GET", "/api/v1/deployments", list_deployments, R, "My deployments, newest first"},
    {"GET", "/api/v1/deployments/{id}", get_deployment, R, "A deployment with its replicas"},
    {"PATCH", "/api/v1/deployments/{id}", patch_deployment, W,
     "Change settings; a new source rolls the replicas without dropping calls"},
    {"DELETE", "/api/v1/deployments/{id}", delete_deployment, W, "Stop and delete a deployment"},
    {"POST", "/api/v1/deployments/{id}/scale", scale_deployment, W, "Set the number of replicas {replicas}"},
    {"POST", "/api/v1/deployments/{id}/stop", stop_deployment, W, "Stop every replica (calls answer 503)"},
    {"POST", "/api/v1/deployments/{id}/start", start_deployment, W, "Start a stopped deployment again"},
    {"GET", "/api/v1/deployments/{id}/usage", deployment_usage, R,
     "Calls, errors, p50/p95/p99 latency and cost per UTC day (?from=&to=)"},
    {"GET", "/api/v1/deployments/{id}/logs", deployment_logs, R, "The last calls and replicas (?limit=)"},
    {"GET", "/api/v1/keys/{id}/usage", key_usage, R, "A key's model calls per UTC day (?from=&to=)"},
    {"GET", "/api/v1/keys/{id}/serve-limits", get_key_limits, R, "A key's limits on model calls"},
    {"PUT", "/api/v1/keys/{id}/serve-limits", put_key_limits, W,
     "Set a key's limits on model calls {requests_per_min, concurrency, daily_budget_mcoins}"},
    {NULL, NULL, NULL, 0, NULL},
};
