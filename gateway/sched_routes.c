/*
 * sched_routes.c - resources, jobs and the admin overview over HTTP
 * (API.md "Resources, kernels, jobs", "Admin"). The scheduling, metering
 * and execution live in scheduler/ and quota/; this file speaks HTTP, checks
 * project access, and exports the project tree a job runs on.
 *
 * Logs: GET /api/v1/jobs/{id}/logs?offset=N answers the bytes from N (plain
 * text, X-Log-Offset = the next offset, X-Job-Status). With ?follow=1 (or
 * Accept: text/event-stream) the answer is a stream of Server-Sent Events
 * (stream.c): one event per line as it is written, `id:` the byte offset
 * after it (an EventSource that reconnects resumes with Last-Event-ID), and
 * `event: end` with the job's id, status, exit_code, failure_reason and
 * charged_mcoins once it has finished and everything was sent.
 */
#include "auth_int.h"
#include "dataset_mounts.h"
#include "gw_int.h"
#include "proj.h"
#include "proj_ws.h"
#include "quota.h"
#include "sched.h"

#include "ed_buf.h"
#include "ed_error.h"
#include "ed_fs.h"
#include "ed_log.h"
#include "ed_time.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#define LOG_CHUNK_MAX (1 << 20)      /* bytes of log per response */
#define FOLLOW_WAIT_MS 1000

/* ---- lifecycle (called by server.c) --------------------------------------- */

/* sched_config.key_budget: the budget that binds an API key (its own, or its
 * env's for its owner's tier, whichever is smaller). */
static int key_budget(int64_t *out, int64_t key_id, void *arg)
{
    gw_server *srv = arg;

    return acct_key_budget(out, srv->store, key_id);
}

int gw__sched_start(gw_server *srv)
{
    sched_config cfg;
    int err;

    if ((err = sched_config_defaults(&cfg, srv->cfg.data_dir)) < 0)
        return err;
    cfg.volume_bytes = srv->cfg.volume_bytes;                           /* disk quotas */
    cfg.job_retention_ms = (int64_t)srv->cfg.job_retention_days * 86400000;
    cfg.key_budget = key_budget;
    cfg.key_budget_arg = srv;
    if ((err = sched_open(&srv->sched, srv->store, &cfg)) < 0)
        return err;
    gw__dataset_mounts_install(srv);     /* datasets in kernels and jobs (dataset_mounts.c) */
    /* workspace quotas use the mechanism the scheduler probed (proj_ws.h) */
    return srv->projects ? proj_root_set_disk(srv->projects, sched_disk(srv->sched)) : 0;
}

void gw__sched_stop(gw_server *srv)
{
    if (srv == NULL)
        return;
    sched_close(srv->sched);
    srv->sched = NULL;
}

/* ---- helpers ----------------------------------------------------------------- */

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

static json_t *tiers_array(const char *tiers)
{
    json_t *a = json_array();
    char buf[128], *save = NULL;

    snprintf(buf, sizeof(buf), "%s", tiers);
    for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save))
        json_array_append_new(a, json_string(t));
    return a;
}

static json_t *resource_json(const sched_resource *r)
{
    return json_pack("{s:s, s:i, s:i, s:i, s:s, s:I, s:o, s:i, s:i, s:i, s:b, s:o}", "name", r->name, "cpus",
                     r->cpus, "memory_mb", r->memory_mb, "gpus", r->gpu ? 1 : 0, "gpu_model", r->gpu_model,
                     "price_mcoins_per_hour", (json_int_t)r->price_mcoins_per_hour, "tiers", tiers_array(r->tiers),
                     "capacity", r->capacity, "in_use", r->in_use, "queued", r->queued, "simulated", r->simulated,
                     "configured_capacity",
                     r->configured_capacity >= 0 ? json_integer(r->configured_capacity) : json_null());
}

static json_t *time_or_null(gw_request *req, int64_t ms)
{
    return ms > 0 ? json_string(gw__time(req, ms)) : json_null();
}

/* A job's disk (sched_job_get fills it; listings leave it 0 and omit it):
 * its limit, what it uses (live while it runs), and when retention deleted
 * its directory. */
static json_t *job_disk_json(gw_request *req, const sched_job_info *j, json_t *o)
{
    if (o == NULL || j->disk_limit_bytes == 0)
        return o;
    json_object_set_new(o, "disk_limit_bytes", j->disk_limit_bytes > 0 ? json_integer(j->disk_limit_bytes) : json_null());
    json_object_set_new(o, "disk_used_bytes", j->disk_used_bytes >= 0 ? json_integer(j->disk_used_bytes) : json_null());
    json_object_set_new(o, "artifacts_expired_at", time_or_null(req, j->artifacts_expired_at));
    return o;
}

static json_t *job_json(gw_request *req, const sched_job_info *j)
{
    json_t *args = NULL, *o;
    json_error_t e;

    if ((args = json_loads(j->args_json, 0, &e)) == NULL)
        args = json_array();
    o = json_pack("{s:I, s:s, s:s, s:o, s:s, s:o, s:s, s:i, s:I, s:i, s:I, s:o, s:o, s:I, s:s, s:o, s:o, "
                     "s:I, s:I, s:i, s:o}",
                     "id", (json_int_t)j->id, "status", j->status, "project_id", j->project_id, "version",
                     j->version[0] ? json_string(j->version) : json_null(), "entry", j->entry, "args", args,
                     "resource", j->resource, "gpus", j->gpus, "max_runtime_s", (json_int_t)(j->max_runtime_ms / 1000),
                     "queue_position", j->queue_position, "eta_s",
                     (json_int_t)(j->eta_ms < 0 ? -1 : (j->eta_ms + 999) / 1000), "exit_code",
                     j->has_exit_code ? json_integer(j->exit_code) : json_null(), "failure_reason",
                     j->failure_reason[0] ? json_string(j->failure_reason) : json_null(), "charged_mcoins",
                     (json_int_t)j->charged_mcoins, "created_at", gw__time(req, j->created_at), "started_at",
                     time_or_null(req, j->started_at), "ended_at", time_or_null(req, j->ended_at), "cpu_ms",
                     (json_int_t)j->cpu_ms, "peak_mem_bytes", (json_int_t)j->peak_mem_bytes, "attempt", j->attempt,
                     "datasets", gw__job_datasets_json(req->srv, j->id));
    /* several ranks (scheduler/README.md "Ranks"), and what ran it */
    if (o && (json_object_set_new(o, "ranks", json_integer(j->ranks > 0 ? j->ranks : 1)) < 0 ||
              json_object_set_new(o, "nodes", json_integer(j->nodes > 0 ? j->nodes : 1)) < 0 ||
              json_object_set_new(o, "gpus_per_node",
                                  json_integer(j->gpus / (j->nodes > 0 ? j->nodes : 1))) < 0 ||
              json_object_set_new(o, "executor", j->executor[0] ? json_string(j->executor) : json_null()) < 0 ||
              json_object_set_new(o, "executor_ref", j->exec_ref[0] ? json_string(j->exec_ref) : json_null()) < 0)) {
        json_decref(o);
        o = NULL;
    }
    /* a platform run (scheduler/README.md "Platform runs"): only an admin
     * ever reads one; say what it is */
    if (o && j->internal &&
        json_object_set_new(o, "platform_run",
                            json_pack("{s:b, s:b, s:b, s:b}", "network_off", j->network_off, "uncharged",
                                      j->uncharged, "fixed_mounts", j->fixed_mounts, "collected", j->collected)) < 0) {
        json_decref(o);
        o = NULL;
    }
    return job_disk_json(req, j, o);
}

/* Admins (role admin, scope admin) see every job; others their own. */
static int64_t visible_user(gw_request *req)
{
    bool admin = req->auth.role && strcmp(req->auth.role, "admin") == 0 && (req->auth.scopes & GW_SCOPE_ADMIN);
    return admin ? 0 : req->auth.user_id;
}

/* ---- resources --------------------------------------------------------------- */

static int list_resources(gw_request *req, gw_response *res)
{
    sched_resource *v = NULL;
    size_t n = 0;
    json_t *items;
    int err;

    if ((err = sched_resource_list(&v, &n, req->srv->sched)) < 0)
        return err;
    items = json_array();
    for (size_t i = 0; i < n; i++) {
        json_t *o = resource_json(&v[i]);
        int64_t free_ms = 0;

        /* the caller's daily free time on the class (-1: never charged) */
        if (o && req->auth.tier && sched_allowance_get(&free_ms, req->srv->sched, req->auth.tier, v[i].name) == 0)
            json_object_set_new(o, "free_ms_per_day", json_integer(free_ms));
        json_array_append_new(items, o);
    }
    free(v);
    return gw_respond_page(res, items, 0);
}

/* PUT /api/v1/admin/resources/{name} {cpus?, memory_mb?, gpus?, gpu_model?,
 * price_mcoins_per_hour?, capacity? (null: discover), simulated?, tiers?} */
static int put_resource(gw_request *req, gw_response *res)
{
    sched_resource r, out;
    json_t *body, *tiers = NULL, *cap;
    int64_t v;
    bool b = false;
    const char *model = NULL;
    char target[64];
    int err;

    memset(&r, 0, sizeof(r));
    if (strlen(req->params[0]) >= sizeof(r.name))
        return ed_error_set(ED_EINVAL, "resource name is too long");
    snprintf(r.name, sizeof(r.name), "%s", req->params[0]);
    if ((err = gw_request_json(&body, req)) < 0)
        return err;
    r.cpus = r.memory_mb = -1;
    r.price_mcoins_per_hour = -1;
    r.configured_capacity = -2;
    /* gw_json_int: 422 naming the field for anything but an integer in range. */
#define GET_INT(field, key, lo, hi)                                                                           \
    do {                                                                                                      \
        v = -1;                                                                                               \
        if ((err = gw_json_int(&v, body, key, lo, hi, false)) < 0)                                            \
            return err;                                                                                       \
        if (v != -1)                                                                                          \
            field = v;                                                                                        \
    } while (0)
    GET_INT(r.cpus, "cpus", 0, 1024);
    GET_INT(r.memory_mb, "memory_mb", 0, 16 * 1024 * 1024);
    GET_INT(r.price_mcoins_per_hour, "price_mcoins_per_hour", 0, 1000000000);
    if ((cap = json_object_get(body, "capacity")) != NULL) {
        if (json_is_null(cap))
            r.configured_capacity = -1;
        else if ((err = gw__json_int_check(&v, cap, "capacity", 0, 100000)) < 0)
            return err;
        else
            r.configured_capacity = (int)v;
    }
    v = -1;
    if ((err = gw_json_int(&v, body, "gpus", 0, 1, false)) < 0)
        return err;
    r.gpu = v == 1;
    if ((err = ed_json_get_bool(&b, body, "simulated", false)) < 0 ||
        (err = ed_json_get_str(&model, body, "gpu_model", false)) < 0 ||
        (err = ed_json_get_array(&tiers, body, "tiers", false)) < 0)
        return err;
    r.simulated = b;
    if (model) {
        if (strlen(model) >= sizeof(r.gpu_model))
            return ed_error_set(ED_EINVAL, "field 'gpu_model' is too long");
        snprintf(r.gpu_model, sizeof(r.gpu_model), "%s", model);
    }
    if (tiers) {
        size_t len = 0;
        for (size_t i = 0; i < json_array_size(tiers); i++) {
            const char *t = json_string_value(json_array_get(tiers, i));
            if (t == NULL || strchr(t, ',') || len + strlen(t) + 2 > sizeof(r.tiers))
                return ed_error_set(ED_EINVAL, "field 'tiers' must be an array of tier names");
            len += (size_t)snprintf(r.tiers + len, sizeof(r.tiers) - len, "%s%s", i ? "," : "", t);
        }
        if (json_array_size(tiers) == 0)
            return ed_error_set(ED_EINVAL, "field 'tiers' must name at least one tier");
    }
#undef GET_INT
    if ((err = sched_resource_put(&out, req->srv->sched, &r)) < 0)
        return err;
    snprintf(target, sizeof(target), "resource:%s", out.name);
    json_t *detail = json_deep_copy(body);
    gw__audit(req, "resource.update", target, detail);
    json_decref(detail);
    return gw_respond_json(res, 200, resource_json(&out));
}

/* PUT /api/v1/admin/tiers/{name} {max_kernels?, max_gpus_per_job?,
 * max_session_ms?, idle_timeout_ms?, weight?, allow_egress?, overdraft_mcoins?,
 * free_gpu_ms_per_day?, free_ms_per_day?: {class: ms | -1}, job_disk_bytes?,
 * workspace_bytes?, dataset_bytes?} */
static int put_tier(gw_request *req, gw_response *res)
{
    quota_tier_change u = QUOTA_TIER_KEEP;
    json_t *body, *allow, *val, *keyenvs;
    const char *key;
    int64_t v;
    bool b;
    quota_tier t;
    sched_resource r;
    char target[64];
    int err;

    if ((err = quota_tier_get(&t, req->srv->store, req->params[0])) < 0 ||
        (err = gw_request_json(&body, req)) < 0)
        return err;
    /* gw_json_int: 422 naming the field for anything but an integer in the
     * range quota_tier_update accepts (so nothing is cut to fit an int). */
#define GET_INT(field, name, lo, hi)                                                           \
    do {                                                                                       \
        v = -1;                                                                                \
        if ((err = gw_json_int(&v, body, name, lo, hi, false)) < 0)                            \
            return err;                                                                        \
        field = v;                                                                             \
    } while (0)
    GET_INT(u.max_kernels, "max_kernels", 0, 1000);
    GET_INT(u.max_gpus_per_job, "max_gpus_per_job", 0, 64);
    GET_INT(u.weight, "weight", 1, 1000);
    GET_INT(u.max_session_ms, "max_session_ms", 1000, INT64_C(30) * 86400000);
    GET_INT(u.idle_timeout_ms, "idle_timeout_ms", 1000, INT64_C(30) * 86400000);
    GET_INT(u.overdraft_mcoins, "overdraft_mcoins", 0, INT64_C(1000000000000));
    GET_INT(u.free_gpu_ms_per_day, "free_gpu_ms_per_day", 0, 86400000);
    GET_INT(u.job_disk_bytes, "job_disk_bytes", 0, INT64_C(1) << 50);   /* disk quotas: 0 no limit */
    GET_INT(u.workspace_bytes, "workspace_bytes", 0, INT64_C(1) << 50); /* a project's tree: 0 no limit */
    GET_INT(u.dataset_bytes, "dataset_bytes", 0, INT64_C(1) << 50);     /* a user's datasets: 0 no limit */
#undef GET_INT
    if ((keyenvs = json_object_get(body, "key_envs")) != NULL && (err = gw__tier_key_envs_check(keyenvs)) < 0)
        return err;
    if (json_object_get(body, "allow_egress")) {
        if ((err = ed_json_get_bool(&b, body, "allow_egress", true)) < 0)
            return err;
        u.allow_egress = b;
    }
    allow = json_object_get(body, "free_ms_per_day");
    if (allow && !json_is_object(allow))
        return ed_error_set(ED_EINVAL, "field 'free_ms_per_day' must be an object {class: ms or -1}");
    /* check everything before changing anything */
    json_object_foreach(allow, key, val) {
        char label[80];
        snprintf(label, sizeof(label), "free_ms_per_day.%.40s", key);
        if ((err = gw__json_int_check(&v, val, label, -1, 86400000)) < 0)
            return err;
        if ((err = sched_resource_get(&r, req->srv->sched, key)) < 0)
            return err;
    }
    if (u.job_disk_bytes > 0 && u.job_disk_bytes < (INT64_C(1) << 20))
        return ed_error_set(ED_EUNPROC, "field 'job_disk_bytes' must be 0 (no limit) or at least 1 MiB");
    if (u.workspace_bytes > 0 && u.workspace_bytes < (INT64_C(1) << 20))
        return ed_error_set(ED_EUNPROC, "field 'workspace_bytes' must be 0 (no limit) or at least 1 MiB");
    if (u.dataset_bytes > 0 && u.dataset_bytes < (INT64_C(1) << 20))
        return ed_error_set(ED_EUNPROC, "field 'dataset_bytes' must be 0 (no limit) or at least 1 MiB");
    if ((err = quota_tier_update(req->srv->store, t.name, &u)) < 0)
        return err;
    /* a new workspace limit goes to the trees of every project whose owner is in the tier */
    if (u.workspace_bytes >= 0)
        proj_workspace_sync(req->srv->projects, 0, t.name);
    if (keyenvs && (err = acct_tier_key_envs_put(req->srv->store, t.name, keyenvs)) < 0)
        return err;
    json_object_foreach(allow, key, val)
        if ((err = sched_allowance_set(req->srv->sched, t.name, key, json_integer_value(val))) < 0)
            return err;
    snprintf(target, sizeof(target), "tier:%s", t.name);
    json_t *detail = json_deep_copy(body);
    gw__audit(req, "tier.update", target, detail);
    json_decref(detail);
    if ((err = quota_tier_get(&t, req->srv->store, t.name)) < 0 ||
        (err = acct_tier_key_envs_json(&keyenvs, req->srv->store, t.name)) < 0)
        return err;
    return gw_respond_json(
        res, 200,
        json_pack("{s:s, s:i, s:i, s:I, s:I, s:i, s:b, s:I, s:I, s:o, s:I, s:I, s:I}", "name", t.name, "max_kernels",
                  t.max_kernels, "max_gpus_per_job", t.max_gpus_per_job, "max_session_ms",
                  (json_int_t)t.max_session_ms, "idle_timeout_ms", (json_int_t)t.idle_timeout_ms, "weight",
                  t.weight, "allow_egress", t.allow_egress, "overdraft_mcoins", (json_int_t)t.overdraft_mcoins,
                  "free_gpu_ms_per_day", (json_int_t)t.free_gpu_ms_per_day, "key_envs", keyenvs,
                  "job_disk_bytes", (json_int_t)t.job_disk_bytes, "workspace_bytes", (json_int_t)t.workspace_bytes,
                  "dataset_bytes", (json_int_t)t.dataset_bytes));
}

/* ---- jobs ------------------------------------------------------------------------ */

static int mkdirs_for(const char *path)
{
    char tmp[PATH_MAX];

    snprintf(tmp, sizeof(tmp), "%s", path);
    for (char *p = strchr(tmp + 1, '/'); p; p = strchr(p + 1, '/')) {
        *p = '\0';
        if (mkdir(tmp, 0700) < 0 && errno != EEXIST)
            return ed_error_set(ED_EIO, "cannot create %s: %s", tmp, strerror(errno));
        *p = '/';
    }
    return 0;
}

/* See gw_int.h: jobs and competition code runs export their project here. */
int gw__project_export(const char *work, void *payload)
{
    gw_export_ctx *c = payload;
    proj_version *v = NULL;
    proj_file_list *l = NULL;
    char **paths = NULL;
    size_t n = 0;
    bool have_entry = false;
    int err = 0;

    if (c->version) {
        if ((err = proj_version_get(&v, c->root, c->user, c->project, c->version)) < 0)
            return err;
        paths = v->files;
        n = v->nfiles;
    } else {
        if ((err = proj_files_list(&l, c->root, c->user, c->project)) < 0)
            return err;
        if ((paths = calloc(l->count + 1, sizeof(*paths))) == NULL) {
            proj_file_list_free(l);
            return ed_error_set(ED_ENOMEM, "file list");
        }
        for (size_t i = 0; i < l->count; i++)
            paths[i] = l->items[i].path;
        n = l->count;
    }
    for (size_t i = 0; i < n && err == 0; i++) {
        char *buf = NULL, path[PATH_MAX];
        size_t len = 0;
        int fd;

        if (strcmp(paths[i], c->entry) == 0)
            have_entry = true;
        if ((err = proj_file_read(&buf, &len, c->root, c->user, c->project, paths[i],
                                  v ? v->id : NULL)) < 0)
            break;
        if (snprintf(path, sizeof(path), "%s/%s", work, paths[i]) >= (int)sizeof(path)) {
            free(buf);
            err = ed_error_set(ED_EINVAL, "path %s is too long", paths[i]);
            break;
        }
        if ((err = mkdirs_for(path)) == 0) {
            if ((fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600)) < 0 ||
                write(fd, buf, len) != (ssize_t)len) {
                err = ed_error_set(ED_EIO, "cannot write %s: %s", path, strerror(errno));
            }
            if (fd >= 0)
                close(fd);
        }
        free(buf);
    }
    if (err == 0 && !have_entry)
        err = ed_error_set(ED_EUNPROC, "entry '%s' is not a file of the project%s%s", c->entry,
                           c->version ? " at version " : "'s working tree", c->version ? c->version : "");
    if (v)
        proj_version_free(v);
    else
        free(paths);
    proj_file_list_free(l);
    return err;
}

/* POST /api/v1/jobs {project_id, version?, entry, args?, resource, gpus?,
 * max_runtime_s?, requeue?, ranks?, nodes?, gpus_per_node?} (+ Idempotency-Key).
 * CPU classes: `ranks` processes (one slot each); GPU classes: `nodes` hosts
 * with `gpus_per_node` GPUs each (`gpus` is the same as gpus_per_node). */
static int post_job(gw_request *req, gw_response *res)
{
    json_t *body, *args = NULL;
    const char *project = NULL, *version = NULL, *entry = NULL, *resource = NULL;
    int64_t gpus = 0, max_rt = 0, ranks = 0, nodes = 0, gpn = 0;
    bool requeue = false;
    char *args_text = NULL;
    proj *p = NULL;
    sched_job_info j;
    sched_job_spec sp;
    gw_export_ctx ec;
    int err;

    if ((err = gw_request_json(&body, req)) < 0 ||
        (err = ed_json_get_str(&project, body, "project_id", true)) < 0 ||
        (err = ed_json_get_str(&version, body, "version", false)) < 0 ||
        (err = ed_json_get_str(&entry, body, "entry", true)) < 0 ||
        (err = ed_json_get_str(&resource, body, "resource", true)) < 0 ||
        (err = ed_json_get_array(&args, body, "args", false)) < 0 ||
        (err = gw_json_int(&gpus, body, "gpus", 0, 64, false)) < 0 ||
        (err = gw_json_int(&max_rt, body, "max_runtime_s", 0, INT64_C(30) * 86400, false)) < 0 ||
        (err = ed_json_get_bool(&requeue, body, "requeue", false)) < 0 ||
        (err = gw_json_int(&ranks, body, "ranks", 1, SCHED_MAX_RANKS, false)) < 0 ||
        (err = gw_json_int(&nodes, body, "nodes", 1, SCHED_MAX_NODES, false)) < 0 ||
        (err = gw_json_int(&gpn, body, "gpus_per_node", 1, 16, false)) < 0)
        return err;
    if (gpus < 0 || gpus > 64)
        return ed_error_set(ED_EINVAL, "field 'gpus' must be 0..64");
    if (gpn > 0 && gpus > 0 && gpn != gpus)
        return ed_error_set(ED_EINVAL, "fields 'gpus' and 'gpus_per_node' disagree");
    if (gpn > 0)
        gpus = gpn;
    if (max_rt < 0 || max_rt > 30LL * 86400)
        return ed_error_set(ED_EINVAL, "field 'max_runtime_s' must be 1..2592000");
    if (args) {
        for (size_t i = 0; i < json_array_size(args); i++)
            if (!json_is_string(json_array_get(args, i)))
                return ed_error_set(ED_EINVAL, "field 'args' must be an array of strings");
        if ((args_text = ed_json_dumps(args)) == NULL)
            return ed_error_set(ED_ENOMEM, "args");
    }
    if ((err = proj_get(&p, req->srv->projects, req->auth.user_id, project)) < 0)
        goto out;
    ec = (gw_export_ctx){req->srv->projects, req->auth.user_id, p->id, version, entry};
    memset(&sp, 0, sizeof(sp));
    sp.user_id = req->auth.user_id;
    sp.tier = req->auth.tier;
    sp.project_id = p->id;
    sp.version = version;
    sp.entry = entry;
    sp.args_json = args_text;
    sp.resource = resource;
    sp.gpus = (int)gpus;
    sp.ranks = (int)ranks;
    sp.nodes = (int)nodes;
    sp.max_runtime_ms = max_rt * 1000;
    sp.requeue = requeue;
    sp.idem_key = gw_request_header(req, "Idempotency-Key");
    sp.prepare = gw__project_export;
    sp.payload = &ec;
    sp.key_id = req->auth.via_key ? req->auth.key_id : 0;   /* its daily budget applies */
    if ((err = sched_job_submit(&j, req->srv->sched, &sp)) < 0)
        goto out;
    err = gw_respond_json(res, 201, job_json(req, &j));
out:
    proj_free(p);
    free(args_text);
    return err;
}

static int get_job(gw_request *req, gw_response *res)
{
    sched_job_info j;
    int64_t id = 0;
    int err;

    if ((err = parse_id(&id, req->params[0], "job")) < 0 ||
        (err = sched_job_get(&j, req->srv->sched, visible_user(req), id)) < 0)
        return err;
    /* the GPUs it holds now, from NVML (gw__job_gpus_json) */
    json_t *o = job_json(req, &j);
    if (o)
        json_object_set_new(o, "gpus", gw__job_gpus_json(req->srv, j.id));
    return gw_respond_json(res, 200, o);
}

typedef struct job_page {
    gw_request *req;
    json_t     *items;
} job_page;

static int add_job(const sched_job_info *j, void *payload)
{
    job_page *p = payload;
    return json_array_append_new(p->items, job_json(p->req, j)) == 0 ? 0 : ED_ENOMEM;
}

static int list_jobs(gw_request *req, gw_response *res)
{
    job_page page = {req, json_array()};
    int64_t before;
    int limit, err;

    /* the list is the caller's own jobs, admins included */
    if ((err = gw_request_page_id(&limit, &before, req)) < 0 ||
        (err = sched_job_each(req->srv->sched, req->auth.user_id, before, limit + 1, add_job, &page)) < 0) {
        json_decref(page.items);
        return err;
    }
    return gw_respond_page(res, page.items, limit);
}

static int delete_job(gw_request *req, gw_response *res)
{
    sched_job_info j;
    int64_t id = 0;
    int err;

    if ((err = parse_id(&id, req->params[0], "job")) < 0 ||
        (err = sched_job_cancel(&j, req->srv->sched, visible_user(req), id)) < 0)
        return err;
    return gw_respond_json(res, 200, job_json(req, &j));
}

static bool job_finished(const sched_job_info *j)
{
    return strcmp(j->status, "queued") != 0 && strcmp(j->status, "running") != 0;
}

/* Read the log from `offset`, at most LOG_CHUNK_MAX bytes. */
static int read_log(char **out, size_t *out_len, int64_t *out_size, sched *s, int64_t id, int64_t offset)
{
    char dir[700], path[760];
    struct stat sb;
    char *buf;
    ssize_t n;
    size_t want;
    int fd, err;

    *out = NULL;
    *out_len = 0;
    *out_size = 0;
    if ((err = sched_job_dir(dir, sizeof(dir), s, id)) < 0)
        return err;
    snprintf(path, sizeof(path), "%s/log", dir);
    if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)) < 0) {
        if (errno == ENOENT)
            return (*out = calloc(1, 1)) ? 0 : ed_error_set(ED_ENOMEM, "log");
        return ed_error_set(ED_EIO, "cannot open the job log: %s", strerror(errno));
    }
    if (fstat(fd, &sb) < 0) {
        close(fd);
        return ed_error_set(ED_EIO, "cannot stat the job log: %s", strerror(errno));
    }
    *out_size = sb.st_size;
    want = offset < sb.st_size ? (size_t)(sb.st_size - offset) : 0;
    if (want > LOG_CHUNK_MAX)
        want = LOG_CHUNK_MAX;
    if ((buf = malloc(want + 1)) == NULL) {
        close(fd);
        return ed_error_set(ED_ENOMEM, "log");
    }
    n = want ? pread(fd, buf, want, offset) : 0;
    close(fd);
    if (n < 0) {
        free(buf);
        return ed_error_set(ED_EIO, "cannot read the job log: %s", strerror(errno));
    }
    buf[n] = '\0';
    *out = buf;
    *out_len = (size_t)n;
    return 0;
}

/* ?follow=1 as a real stream (stream.c): whole lines as they are written,
 * polled every FOLLOW_POLL_MS, then `event: end` with the job once it has
 * finished and everything was sent. */
#define FOLLOW_POLL_MS 200

typedef struct log_follow {
    gw_server *srv;
    int64_t    id, user, at;
    ed_buf     out;              /* formatted, not yet sent */
    size_t     sent;
    bool       ended;
} log_follow;

static void follow_release(void *p)
{
    log_follow *f = p;
    ed_buf_free(&f->out);
    free(f);
}

/* Format what is new into f->out: 1 something, 0 nothing now, -1 the end. */
static int follow_more(log_follow *f)
{
    sched_job_info j;
    char *buf = NULL;
    size_t len = 0, pos = 0;
    int64_t size = 0;
    bool finished;

    if (f->ended)
        return -1;
    if (sched_job_get(&j, f->srv->sched, f->user, f->id) < 0 ||
        read_log(&buf, &len, &size, f->srv->sched, f->id, f->at) < 0) {
        free(buf);
        return -1;
    }
    finished = job_finished(&j);
    ed_buf_reset(&f->out);
    f->sent = 0;
    while (pos < len) {
        char *nl = memchr(buf + pos, '\n', len - pos);
        size_t n = nl ? (size_t)(nl - (buf + pos)) : len - pos;
        if (!nl && !finished)
            break;
        f->at += (int64_t)n + (nl ? 1 : 0);
        if (ed_buf_printf(&f->out, "id: %" PRId64 "\ndata: %.*s\n\n", f->at, (int)n, buf + pos) < 0) {
            free(buf);
            return -1;
        }
        pos += n + (nl ? 1 : 0);
    }
    free(buf);
    if (finished && f->at >= size) {
        /* the end event carries the job as GET /jobs/{id} shows it */
        json_t *jj = json_pack("{s:I, s:s, s:o, s:I}", "id", (json_int_t)j.id, "status", j.status,
                               "failure_reason", j.failure_reason[0] ? json_string(j.failure_reason) : json_null(),
                               "charged_mcoins", (json_int_t)j.charged_mcoins);
        if (jj)
            json_object_set_new(jj, "exit_code", j.has_exit_code ? json_integer(j.exit_code) : json_null());
        char *done = jj ? ed_json_dumps(jj) : NULL;
        json_decref(jj);
        if (done == NULL || ed_buf_printf(&f->out, "event: end\ndata: %s\n\n", done) < 0) {
            free(done);
            return -1;
        }
        free(done);
        f->ended = true;
    }
    return f->out.len > 0 ? 1 : 0;
}

static long follow_fill(void *p, char *dst, size_t max)
{
    log_follow *f = p;
    size_t n = 0;

    while (n < max) {
        if (f->sent < f->out.len) {
            size_t k = f->out.len - f->sent < max - n ? f->out.len - f->sent : max - n;
            memcpy(dst + n, f->out.data + f->sent, k);
            f->sent += k;
            n += k;
            continue;
        }
        int r = follow_more(f);
        if (r == 0)
            break;
        if (r < 0)
            return n > 0 ? (long)n : -1;
    }
    return (long)n;
}

static int get_logs(gw_request *req, gw_response *res)
{
    sched_job_info j;
    int64_t id = 0, offset = 0, size, waited = 0;
    const char *q = gw_request_query(req, "offset"), *follow = gw_request_query(req, "follow"),
               *accept = gw_request_header(req, "Accept"), *last = gw_request_header(req, "Last-Event-ID");
    bool sse = (follow && strcmp(follow, "0") != 0) || (accept && strstr(accept, "text/event-stream"));
    char *buf = NULL, hdr[32], *end;
    size_t len;
    int err;

    if ((err = parse_id(&id, req->params[0], "job")) < 0 ||
        (err = sched_job_get(&j, req->srv->sched, visible_user(req), id)) < 0)
        return err;
    if (sse && last)
        q = last;
    if (q) {
        offset = strtoll(q, &end, 10);
        if (*q == '\0' || *end || offset < 0)
            return ed_error_set(ED_EINVAL, "offset '%s' must be a byte offset >= 0", q);
    }
    if (sse) {
        log_follow *f = calloc(1, sizeof(*f));
        gw_stream *st = NULL;
        if (f == NULL)
            return ed_error_set(ED_ENOMEM, "log events");
        *f = (log_follow){.srv = req->srv, .id = id, .user = visible_user(req), .at = offset};
        if (ed_buf_puts(&f->out, "retry: 500\n\n") < 0 ||
            (err = gw_respond_stream(&st, res, req, 200, "text/event-stream", 0, follow_fill, follow_release, f)) < 0) {
            follow_release(f);
            return err < 0 ? err : ed_error_set(ED_ENOMEM, "log events");
        }
        gw_stream_set_poll(st, FOLLOW_POLL_MS);
        snprintf(hdr, sizeof(hdr), "%" PRId64, offset);
        gw_response_header(res, "X-Log-Offset", hdr);
        gw_response_header(res, "X-Job-Status", j.status);
        gw_response_header(res, "Cache-Control", "no-cache");
        return 0;
    }
    for (;;) {
        if ((err = read_log(&buf, &len, &size, req->srv->sched, id, offset)) < 0)
            return err;
        if (!sse || len > 0 || job_finished(&j) || waited >= FOLLOW_WAIT_MS)
            break;
        free(buf);
        usleep(100000);
        waited += 100;
        if ((err = sched_job_get(&j, req->srv->sched, visible_user(req), id)) < 0)
            return err;
    }
    snprintf(hdr, sizeof(hdr), "%" PRId64, offset + (int64_t)len);
    gw_response_header(res, "X-Log-Offset", hdr);
    gw_response_header(res, "X-Job-Status", j.status);
    if (!sse)
        return gw_respond_bytes(res, 200, "text/plain; charset=utf-8", buf, len);

    /* SSE: whole lines only (a partial last line waits for the next request) */
    ed_buf b = {0};
    size_t pos = 0;
    int64_t at = offset;
    bool oom = ed_buf_puts(&b, "retry: 500\n\n") < 0;
    while (!oom && pos < len) {
        char *nl = memchr(buf + pos, '\n', len - pos);
        size_t n = nl ? (size_t)(nl - (buf + pos)) : len - pos;
        if (!nl && !job_finished(&j))
            break;
        at += (int64_t)n + (nl ? 1 : 0);
        oom = ed_buf_printf(&b, "id: %" PRId64 "\ndata: %.*s\n\n", at, (int)n, buf + pos) < 0;
        pos += n + (nl ? 1 : 0);
    }
    if (!oom && job_finished(&j) && at >= size) {
        json_t *jj = job_json(req, &j);
        char *done = ed_json_dumps(jj);
        oom = done == NULL || ed_buf_printf(&b, "event: end\ndata: %s\n\n", done) < 0;
        free(done);
        json_decref(jj);
    }
    free(buf);
    if (oom) {
        ed_buf_free(&b);
        return ed_error_set(ED_ENOMEM, "log events");
    }
    gw_response_header(res, "Cache-Control", "no-cache");
    len = b.len;
    return gw_respond_bytes(res, 200, "text/event-stream", ed_buf_steal(&b), len);
}

/* The output directory of job `job` as `user` may see it, open (*out_fd;
 * caller closes). The job directory's path is the scheduler's own; "output"
 * and everything in it the job wrote while it ran (and may still be
 * changing), so the directory is opened without following a link and read
 * only beneath this descriptor (ed_fs): a realpath() or a path-string check
 * followed by an open by name loses the race with a job swapping a
 * directory and a link (issue 11). Artifacts, datasets made from a job and
 * competition submissions from a job all open it here. */
int gw__job_output_open(int *out_fd, gw_request *req, int64_t user, int64_t job)
{
    sched_job_info j;
    char dir[700], path[760];
    int err;

    *out_fd = -1;
    if (req->srv->sched == NULL)
        return ed_error_set(ED_EBUSY, "jobs are not available on this server");
    if ((err = sched_job_get(&j, req->srv->sched, user, job)) < 0 ||
        (err = sched_job_dir(dir, sizeof(dir), req->srv->sched, job)) < 0)
        return err;
    if (j.artifacts_expired_at > 0)   /* scheduler/retention.c deleted the directory */
        return ed_error_set(ED_ENOTFOUND, "the artifacts of job %" PRId64 " expired on %s: a finished job's "
                            "directory is deleted job_retention_days after it ends", job,
                            gw__time(req, j.artifacts_expired_at));
    snprintf(path, sizeof(path), "%s/output", dir);
    if (ed_fs_open_dir(out_fd, path) < 0)
        return ed_error_set(ED_ENOTFOUND, "job %" PRId64 " has no output files", job);
    return 0;
}

/* The job of the route's {id}, its output open. */
static int output_dir(int *out_fd, gw_request *req, int64_t user, int64_t *id)
{
    int err;

    *out_fd = -1;
    if ((err = parse_id(id, req->params[0], "job")) < 0)
        return err;
    return gw__job_output_open(out_fd, req, user, *id);
}

#define ARTIFACTS_LISTED 10000          /* files in one listing */

/* ed_fs_walk callback: each regular file of the output, with its size. */
static int list_dir(const char *rel, const struct stat *sb, void *payload)
{
    json_t *items = payload;

    if (!S_ISREG(sb->st_mode))
        return 0;
    if (json_array_size(items) >= ARTIFACTS_LISTED)
        return ED_ETOOBIG;      /* the listing is cut here, as before */
    if (json_array_append_new(items, json_pack("{s:s, s:I}", "path", rel, "size", (json_int_t)sb->st_size)) < 0)
        return ed_error_set(ED_ENOMEM, "artifact list");
    return 0;
}

static int list_artifacts(gw_request *req, gw_response *res)
{
    int64_t id = 0;
    json_t *items;
    int dir, err;

    if ((err = output_dir(&dir, req, visible_user(req), &id)) < 0)
        return err;
    if ((items = json_array()) == NULL) {
        close(dir);
        return ed_error_set(ED_ENOMEM, "artifact list");
    }
    /* links, FIFOs and devices the job made are not listed nor followed */
    err = ed_fs_walk(dir, 16, 10 * ARTIFACTS_LISTED, list_dir, items);
    close(dir);
    if (err < 0 && err != ED_ETOOBIG) {
        json_decref(items);
        return err;
    }
    return gw_respond_page(res, items, 0);
}

#define ARTIFACT_INLINE_MAX ((size_t)1 << 20)   /* bytes answered from one buffer; larger are streamed */

/* A large artifact, streamed from its open descriptor in the reader's
 * chunks, so a job's multi-GiB file costs the gateway no more memory than a
 * small one. The file is cut at the size it had when opened (a job still
 * writing cannot make the answer endless). */
typedef struct artifact_stream {
    int   fd;
    off_t off, end;
} artifact_stream;

static long artifact_fill(void *payload, char *buf, size_t max)
{
    artifact_stream *a = payload;
    size_t want = (size_t)(a->end - a->off) < max ? (size_t)(a->end - a->off) : max;
    ssize_t n;

    if (want == 0)
        return -1;
    do
        n = pread(a->fd, buf, want, a->off);
    while (n < 0 && errno == EINTR);
    if (n <= 0)
        return -1;      /* shrank meanwhile or unreadable: the body ends here */
    a->off += n;
    return (long)n;
}

static void artifact_release(void *payload)
{
    artifact_stream *a = payload;

    close(a->fd);
    free(a);
}

static int get_artifact(gw_request *req, gw_response *res)
{
    const char *rel = req->params[1];
    artifact_stream *a = NULL;
    struct stat sb;
    int64_t id = 0;
    char *buf = NULL;
    size_t len = 0;
    int dir, fd, err;

    if ((err = output_dir(&dir, req, visible_user(req), &id)) < 0)
        return err;
    /* beneath the output's descriptor, no link followed at any component:
     * a path that is malformed, leads outside, crosses a link or names
     * anything but a regular file is simply not there */
    err = ed_fs_open_beneath(&fd, dir, rel, O_RDONLY, 0);
    close(dir);
    if (err == ED_EINVAL || err == ED_ENOTFOUND)
        return ed_error_set(ED_ENOTFOUND, "artifact %s not found", rel);
    if (err < 0)
        return err;
    if (fstat(fd, &sb) < 0) {
        err = ed_error_set(ED_EIO, "artifact %s: %s", rel, strerror(errno));
        close(fd);
        return err;
    }
    if ((size_t)sb.st_size <= ARTIFACT_INLINE_MAX) {
        err = ed_fs_read_fd(&buf, &len, fd, ARTIFACT_INLINE_MAX);
        close(fd);
        if (err == ED_ETOOBIG)      /* grew past the inline size since the fstat: try again */
            return ed_error_set(ED_EBUSY, "artifact %s is being written", rel);
        if (err < 0)
            return err;
        return gw_respond_bytes(res, 200, "application/octet-stream", buf, len);
    }
    if ((a = calloc(1, sizeof(*a))) == NULL) {
        close(fd);
        return ed_error_set(ED_ENOMEM, "artifact stream");
    }
    a->fd = fd;
    a->end = sb.st_size;
    if ((err = gw_respond_stream(NULL, res, req, 200, "application/octet-stream", 0, artifact_fill,
                                 artifact_release, a)) < 0)
        artifact_release(a);
    return err;
}

/* ---- copying artifacts into a project ------------------------------------------ */

/* POST /api/v1/jobs/{id}/artifacts/copy {project_id, dest_dir?, overwrite?}
 * -> 201 {job_id, project_id, dest_dir, files: [{path, artifact, size}],
 *         skipped: [{path, reason}]}
 *
 * Every regular file of the job's output goes to `dest_dir` (default
 * "jobs/<job id>") of the project's working tree, through the projects
 * module, which checks the caller's right to write, the storage limit and
 * notebooks. Only the job's owner may copy (another user's job is 404, an
 * admin's too: the copy is the owner's act); a running job's output is
 * copied as it is now; an expired job answers 404 "expired on ...".
 *
 * The output is the job's own tree: it is walked with ed_fs beneath the
 * output's descriptor, each file opened there again (a link or a directory
 * swapped in meanwhile is refused by the kernel at the open, never
 * followed), and links, FIFOs, sockets and devices are never copied: they
 * are reported in `skipped`, as are a path that a project cannot hold
 * (".git", control characters, too long), a directory deeper than
 * COPY_DEPTH_MAX, a file that went away or cannot be read while the job
 * runs, and a job-written notebook that is not valid nbformat v4 (one bad
 * notebook does not keep a job's checkpoints from being copied).
 *
 * All or nothing: when a file cannot be written (402 over the storage
 * limit, an I/O error), the files this call created are deleted again and
 * the error is the answer. Without `overwrite`, a destination that already
 * exists is 409 before anything is written, so a failed copy leaves the
 * project as it was; with `overwrite: true` existing files are replaced, and
 * a file replaced before a later failure keeps the job's bytes (the
 * project's versions hold what it was). */

#define COPY_FILES_MAX   10000   /* regular files in one copy */
#define COPY_DEPTH_MAX   16      /* directory levels entered */
#define COPY_SKIPPED_MAX 1000    /* entries listed in `skipped` */

typedef struct copy_item {
    char    *rel;        /* in the job's output */
    char    *dest;       /* in the project */
    int64_t  size;       /* at the walk */
} copy_item;

typedef struct copy_plan {
    int        root;     /* the output's descriptor (borrowed) */
    const char *dest_dir;/* "" for the project's root */
    copy_item *items;
    size_t     n, cap;
    json_t    *skipped;
    size_t     nskipped; /* also those past COPY_SKIPPED_MAX */
} copy_plan;

static void skip(copy_plan *p, const char *rel, const char *reason)
{
    if (p->nskipped++ < COPY_SKIPPED_MAX)
        json_array_append_new(p->skipped, json_pack("{s:s, s:s}", "path", rel, "reason", reason));
}

/* Report what the walk never shows (links, FIFOs, sockets, devices) in the
 * directory `rel` ("" the root). Informative only: the entries are looked
 * at with fstatat(AT_SYMLINK_NOFOLLOW) beneath the output, never opened. */
static void skip_specials(copy_plan *p, const char *rel)
{
    struct dirent *de;
    DIR *d;
    int fd;

    if (rel[0] == '\0')
        fd = fcntl(p->root, F_DUPFD_CLOEXEC, 0);
    else if (ed_fs_open_beneath(&fd, p->root, rel, O_RDONLY | O_DIRECTORY, 0) < 0)
        fd = -1;
    if (fd < 0 || (d = fdopendir(fd)) == NULL) {
        if (fd >= 0)
            close(fd);
        return;
    }
    while ((de = readdir(d)) != NULL && p->nskipped < COPY_SKIPPED_MAX) {
        struct stat sb;
        char path[ED_FS_PATH_MAX + 1];
        const char *why;

        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        if (fstatat(dirfd(d), de->d_name, &sb, AT_SYMLINK_NOFOLLOW) < 0 || S_ISREG(sb.st_mode) ||
            S_ISDIR(sb.st_mode))
            continue;
        why = S_ISLNK(sb.st_mode) ? "a symbolic link: links are never followed nor copied"
                                  : "not a regular file (FIFO, socket or device)";
        if (snprintf(path, sizeof(path), "%s%s%s", rel, rel[0] ? "/" : "", de->d_name) < (int)sizeof(path))
            skip(p, path, why);
    }
    closedir(d);
}

/* ed_fs_walk callback: plan each regular file, note what is not copied. */
static int plan_entry(const char *rel, const struct stat *sb, void *payload)
{
    copy_plan *p = payload;
    char dest[PROJ_PATH_MAX + 2];
    int depth = 0;

    for (const char *c = rel; *c; c++)
        depth += *c == '/';
    if (S_ISDIR(sb->st_mode)) {
        if (depth >= COPY_DEPTH_MAX - 1) {
            skip(p, rel, "more than 16 directory levels deep: not entered");
            return ED_FS_WALK_SKIP;
        }
        skip_specials(p, rel);
        return 0;
    }
    if (!S_ISREG(sb->st_mode))
        return 0;
    if (p->n >= COPY_FILES_MAX)
        return ed_error_set(ED_EUNPROC, "the job's output holds more than %d files: copy fewer (write an "
                            "archive in the job, or download the ones you need)", COPY_FILES_MAX);
    if (snprintf(dest, sizeof(dest), "%s%s%s", p->dest_dir, p->dest_dir[0] ? "/" : "", rel) >= (int)sizeof(dest) ||
        proj_path_validate(dest, strlen(dest)) < 0) {
        char why[300];
        snprintf(why, sizeof(why), "not a path a project can hold: %s",
                 strlen(dest) > PROJ_PATH_MAX ? "longer than 1024 bytes" : ed_error_last());
        skip(p, rel, why);
        return 0;
    }
    if (p->n == p->cap) {
        size_t cap = p->cap ? p->cap * 2 : 64;
        copy_item *v = realloc(p->items, cap * sizeof(*v));
        if (v == NULL)
            return ed_error_set(ED_ENOMEM, "artifact copy");
        p->items = v;
        p->cap = cap;
    }
    p->items[p->n] = (copy_item){strdup(rel), strdup(dest), (int64_t)sb->st_size};
    if (p->items[p->n].rel == NULL || p->items[p->n].dest == NULL) {
        free(p->items[p->n].rel);
        free(p->items[p->n].dest);
        return ed_error_set(ED_ENOMEM, "artifact copy");
    }
    p->n++;
    return 0;
}

static int cmp_item(const void *a, const void *b)
{
    return strcmp(((const copy_item *)a)->rel, ((const copy_item *)b)->rel);
}

static void plan_free(copy_plan *p)
{
    for (size_t i = 0; i < p->n; i++) {
        free(p->items[i].rel);
        free(p->items[i].dest);
    }
    free(p->items);
    json_decref(p->skipped);
}

static int cmp_file_path(const void *key, const void *elem)
{
    return strcmp(key, ((const proj_file *)elem)->path);
}

/* Without overwrite: 409 naming the first destination that exists. */
static int check_free(gw_request *req, const char *pid, const copy_plan *p)
{
    proj_file_list *l = NULL;
    int err;

    if ((err = proj_files_list(&l, req->srv->projects, req->auth.user_id, pid)) < 0)
        return err;
    for (size_t i = 0; i < p->n && err == 0; i++)
        if (l->count && bsearch(p->items[i].dest, l->items, l->count, sizeof(*l->items), cmp_file_path))
            err = ed_error_set(ED_ECONFLICT, "%s already exists in project %s: choose another dest_dir, or "
                               "pass overwrite: true to replace existing files", p->items[i].dest, pid);
    proj_file_list_free(l);
    return err;
}

/* Write the artifact open at `fd` (`size` bytes when opened) to `dest`:
 * streamed by the projects module (never held in memory, but a notebook,
 * which it validates whole), its storage check against `size` first. */
static int write_artifact(bool *out_created, gw_request *req, const char *pid, const char *dest, int fd,
                          int64_t size)
{
    return proj_file_write_fd(NULL, out_created, req->srv->projects, req->auth.user_id, pid, dest, fd, size);
}

static bool is_notebook(const char *path)
{
    size_t n = strlen(path);
    return n >= 6 && strcasecmp(path + n - 6, ".ipynb") == 0;
}

static int copy_artifacts(gw_request *req, gw_response *res)
{
    copy_plan plan = {.root = -1};
    const char *pid = NULL, *dest_in = NULL;
    char dest_dir[PROJ_PATH_MAX + 1], target[64], **created = NULL;
    size_t ncreated = 0;
    int64_t id = 0, bytes = 0;
    bool overwrite = false;
    json_t *body, *files = NULL, *detail;
    proj *p = NULL;
    int err;

    if ((err = parse_id(&id, req->params[0], "job")) < 0 ||
        (err = gw_request_json(&body, req)) < 0 ||
        (err = ed_json_get_str(&pid, body, "project_id", true)) < 0 ||
        (err = ed_json_get_str(&dest_in, body, "dest_dir", false)) < 0 ||
        (err = ed_json_get_bool(&overwrite, body, "overwrite", false)) < 0)
        return err;
    /* dest_dir: a relative directory ("." the project's root); trailing
     * slashes are dropped; the same rules as any project path */
    if (dest_in == NULL) {
        snprintf(dest_dir, sizeof(dest_dir), "jobs/%" PRId64, id);
    } else {
        size_t n = strlen(dest_in);
        while (n > 1 && dest_in[n - 1] == '/')
            n--;
        if (n == 0)
            return ed_error_set(ED_EINVAL, "field 'dest_dir' is empty: name a directory of the project, "
                                "or \".\" for its root");
        if (n >= sizeof(dest_dir))
            return ed_error_set(ED_EINVAL, "field 'dest_dir' is longer than %d bytes", PROJ_PATH_MAX);
        memcpy(dest_dir, dest_in, n);
        dest_dir[n] = '\0';
        if (strcmp(dest_dir, ".") == 0)
            dest_dir[0] = '\0';
        else if (proj_path_validate(dest_dir, strlen(dest_dir)) < 0)
            return ed_error_set(ED_EINVAL, "field 'dest_dir': %s", ed_error_last());
    }
    /* the job: the caller's own (404 otherwise, admins included; 404
     * "expired on" past retention) */
    if ((err = output_dir(&plan.root, req, req->auth.user_id, &id)) < 0)
        return err;
    /* the project: visible (404), and the caller's to write (403) */
    if ((err = proj_get(&p, req->srv->projects, req->auth.user_id, pid)) < 0)
        goto out;
    if (p->owner_id != req->auth.user_id) {
        err = ed_error_set(ED_EPERM, "project %s is not yours: only its owner can write its files", p->id);
        goto out;
    }
    plan.dest_dir = dest_dir;
    if ((plan.skipped = json_array()) == NULL || (files = json_array()) == NULL) {
        err = ed_error_set(ED_ENOMEM, "artifact copy");
        goto out;
    }
    skip_specials(&plan, "");
    err = ed_fs_walk(plan.root, COPY_DEPTH_MAX, 2 * COPY_FILES_MAX + 1000, plan_entry, &plan);
    if (err == ED_ETOOBIG)
        err = ed_error_set(ED_EUNPROC, "the job's output holds more than %d entries: copy fewer",
                           2 * COPY_FILES_MAX + 1000);
    if (err < 0)
        goto out;
    qsort(plan.items, plan.n, sizeof(*plan.items), cmp_item);
    if (!overwrite && (err = check_free(req, p->id, &plan)) < 0)
        goto out;
    if (plan.n && (created = calloc(plan.n, sizeof(*created))) == NULL) {
        err = ed_error_set(ED_ENOMEM, "artifact copy");
        goto out;
    }
    for (size_t i = 0; i < plan.n; i++) {
        copy_item *it = &plan.items[i];
        struct stat sb;
        bool was_created = false;
        int fd;

        err = ed_fs_open_beneath(&fd, plan.root, it->rel, O_RDONLY, 0);
        if (err == ED_ENOTFOUND) {      /* gone, or swapped for a link or a directory, since the walk */
            skip(&plan, it->rel, "changed while copying (removed, or replaced by a link or a directory)");
            continue;
        }
        if (err == ED_EIO && errno == EACCES) {
            skip(&plan, it->rel, "not readable while the job runs (it made the file private): copy again once "
                 "the job has ended");
            continue;
        }
        if (err < 0)
            goto rollback;
        if (fstat(fd, &sb) < 0) {
            err = ed_error_set(ED_EIO, "artifact %s: %s", it->rel, strerror(errno));
            close(fd);
            goto rollback;
        }
        err = write_artifact(&was_created, req, p->id, it->dest, fd, (int64_t)sb.st_size);
        close(fd);
        if (err == ED_EUNPROC && is_notebook(it->dest)) {
            char why[600];
            snprintf(why, sizeof(why), "not a valid notebook: %s", ed_error_last());
            skip(&plan, it->rel, why);
            continue;
        }
        if (err < 0)
            goto rollback;
        if (was_created)
            created[ncreated++] = it->dest;
        bytes += sb.st_size;
        json_array_append_new(files, json_pack("{s:s, s:s, s:I}", "path", it->dest, "artifact", it->rel, "size",
                                               (json_int_t)sb.st_size));
    }
    snprintf(target, sizeof(target), "job:%" PRId64, id);
    detail = json_pack("{s:s, s:s, s:I, s:I, s:b}", "project_id", p->id, "dest_dir", dest_dir,
                       "files", (json_int_t)json_array_size(files), "bytes", (json_int_t)bytes, "overwrite", overwrite);
    gw__audit(req, "job.artifacts_copy", target, detail);
    json_decref(detail);
    err = gw_respond_json(res, 201, json_pack("{s:I, s:s, s:s, s:O, s:O, s:I}", "job_id", (json_int_t)id,
                                              "project_id", p->id, "dest_dir", dest_dir[0] ? dest_dir : ".",
                                              "files", files, "skipped", plan.skipped, "skipped_count",
                                              (json_int_t)plan.nskipped));
    goto out;
rollback:
    /* all or nothing: remove what this call created (keeping the error's
     * message, which the deletes would overwrite) */
    {
        char msg[1024];
        snprintf(msg, sizeof(msg), "%s", ed_error_last());
        for (size_t i = ncreated; i-- > 0;)
            if (proj_file_delete(req->srv->projects, req->auth.user_id, p->id, created[i]) < 0)
                ed_log_warn("jobs.artifacts_copy", "job %" PRId64 ": cannot remove %s from project %s again: %s",
                            id, created[i], p->id, ed_error_last());
        err = ed_error_set(err, "%s%s", msg,
                           overwrite ? " (the files this copy created were removed; files it had already "
                                       "replaced keep the job's bytes)"
                                     : " (nothing was copied)");
    }
out:
    free(created);
    json_decref(files);
    plan_free(&plan);
    if (plan.root >= 0)
        close(plan.root);
    proj_free(p);
    return err;
}

/* ---- admin overview ---------------------------------------------------------- */

typedef struct overview_ctx {
    gw_request *req;
    json_t     *running, *queue;
} overview_ctx;

static int add_overview_job(const sched_job_info *j, void *payload)
{
    overview_ctx *c = payload;
    json_t *target = strcmp(j->status, "running") == 0 ? c->running : strcmp(j->status, "queued") == 0 ? c->queue : NULL;
    if (target && json_array_size(target) < 200)
        json_array_append_new(target, job_json(c->req, j));
    return 0;
}

static int get_overview(gw_request *req, gw_response *res)
{
    sched_overview o;
    overview_ctx c = {req, json_array(), json_array()};
    json_t *classes = json_array();
    int64_t cap = 0, used = 0;
    int err;

    if ((err = sched_overview_get(&o, req->srv->sched)) < 0 ||
        (err = sched_job_each(req->srv->sched, 0, 0, 500, add_overview_job, &c)) < 0) {
        json_decref(c.running);
        json_decref(c.queue);
        json_decref(classes);
        return err;
    }
    /* each GPU of the host: what it is doing (NVML) and who holds it */
    json_t *gpus = json_array();
    for (int i = 0; gpus && i < o.ngpus; i++) {
        const sched_gpu *g = &o.gpus[i];
        json_array_append_new(
            gpus, json_pack("{s:i, s:o, s:o, s:o, s:o, s:o, s:o}", "index", g->minor, "name",
                            g->name[0] ? json_string(g->name) : json_null(), "uuid",
                            g->uuid[0] ? json_string(g->uuid) : json_null(), "utilization_pct",
                            g->util_percent >= 0 ? json_integer(g->util_percent) : json_null(), "memory_used_mb",
                            g->memory_used_bytes >= 0 ? json_integer(g->memory_used_bytes >> 20) : json_null(),
                            "memory_total_mb",
                            g->memory_total_bytes >= 0 ? json_integer(g->memory_total_bytes >> 20) : json_null(),
                            "held_by",
                            g->job_id ? json_pack("{s:s, s:I, s:I}", "kind", g->kernel ? "kernel" : "job", "job_id",
                                                  (json_int_t)g->job_id, "user_id", (json_int_t)g->user_id)
                                      : json_null()));
    }
    for (int i = 0; i < o.nclasses; i++) {
        const sched_resource *r = &o.classes[i];
        json_t *cls = resource_json(r);
        json_object_set_new(cls, "utilisation",
                            json_real(r->capacity > 0 ? (double)r->in_use / r->capacity : 0.0));
        json_array_append_new(classes, cls);
        cap += r->capacity;
        used += r->in_use;
    }
    return gw_respond_json(
        res, 200,
        json_pack("{s:I, s:{s:i, s:i}, s:o, s:o, s:o, s:{s:i, s:i}, s:o, s:f, s:I}", "users", (json_int_t)o.users,
                  "jobs", "running", o.running_jobs, "queued", o.queued_jobs, "running", c.running, "queue", c.queue,
                  "resources", classes, "devices", "gpus_found", o.gpus_found, "gpus_simulated", o.gpus_simulated,
                  "gpus", gpus ? gpus : json_array(),
                  "utilisation",
                  cap > 0 ? (double)used / (double)cap : 0.0, "charged_today_mcoins",
                  (json_int_t)o.charged_today_mcoins));
}

const gw_route gw__routes_sched[] = {
    {"GET", "/api/v1/resources", list_resources, GW_AUTH | GW_SCOPE_READ,
     "Resource classes: prices, capacity, use and queue"},
    {"PUT", "/api/v1/admin/resources/{name}", put_resource, GW_AUTH | GW_SCOPE_ADMIN,
     "Create or change a resource class"},
    {"PUT", "/api/v1/admin/tiers/{name}", put_tier, GW_AUTH | GW_SCOPE_ADMIN,
     "Change a tier's limits and daily free allowances"},
    {"GET", "/api/v1/admin/overview", get_overview, GW_AUTH | GW_SCOPE_ADMIN,
     "Users, running work, queue, devices, utilisation, coins charged today"},
    {"POST", "/api/v1/jobs", post_job, GW_AUTH | GW_SCOPE_RUN, "Submit a batch job (Idempotency-Key)"},
    {"GET", "/api/v1/jobs", list_jobs, GW_AUTH | GW_SCOPE_READ, "The caller's jobs, newest first"},
    {"GET", "/api/v1/jobs/{id}", get_job, GW_AUTH | GW_SCOPE_READ, "A job with queue position, ETA and outcome"},
    {"DELETE", "/api/v1/jobs/{id}", delete_job, GW_AUTH | GW_SCOPE_RUN, "Cancel a job"},
    {"GET", "/api/v1/jobs/{id}/logs", get_logs, GW_AUTH | GW_SCOPE_READ,
     "A job's output from ?offset= (follow=1: Server-Sent Events)"},
    {"GET", "/api/v1/jobs/{id}/artifacts", list_artifacts, GW_AUTH | GW_SCOPE_READ, "Files a job wrote to its output"},
    {"GET", "/api/v1/jobs/{id}/artifacts/{path*}", get_artifact, GW_AUTH | GW_SCOPE_READ, "Download an artifact"},
    {"POST", "/api/v1/jobs/{id}/artifacts/copy", copy_artifacts, GW_AUTH | GW_SCOPE_WRITE,
     "Copy a job's artifacts into a project's working tree {project_id, dest_dir?, overwrite?}"},
    {NULL, NULL, NULL, 0, NULL},
};
