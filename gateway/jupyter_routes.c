/*
 * jupyter_routes.c - Jupyter Server's REST API and kernel channels, so stock
 * Jupyter clients (@jupyterlab/services, jupyter-server --gateway-url, ...)
 * drive Eddy's kernels (API.md "Jupyter Server compatibility"). This file
 * holds the meta, kernelspec and kernel routes and the route table; the
 * channels are jupyter_channels.c, the sessions jupyter_sessions.c, the
 * contents contents.c.
 *
 *   /api, /api/status, /api/kernelspecs[/{name}]
 *   /api/kernels ...          over kernels/kh.h: one kernel, one id (the same
 *                             kernel as /api/v1/kernels/{id})
 *   /api/kernels/{id}/channels  a WebSocket (ws.c, jupyter_channels.c):
 *                             Jupyter's default JSON framing, or
 *                             v1.kernel.websocket.jupyter.org when the client
 *                             offers it
 *   /api/sessions             {id, path, name, type, kernel}
 *                             (jupyter_sessions.c over kh_session_*: they
 *                             survive a restart; capped in size and number
 *                             per user)
 *   /api/contents             over the working tree of the caller's default
 *                             project (contents.c)
 *
 * Auth is the gateway's: an API key as "Authorization: token <key>" (what
 * Jupyter clients send) or "Bearer <key>", or the session cookie with the CSRF
 * token as X-CSRF-Token or X-XSRFToken. The channels upgrade alone also takes
 * ?token=<key>, because browsers cannot set headers on a WebSocket.
 */
#include "gw_int.h"
#include "jupyter_int.h"
#include "kh.h"
#include "proj.h"
#include "sched.h"

#include "ed_error.h"
#include "ed_time.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Answer `body` (stolen) with `status`; ED_ENOMEM when body is NULL (its
 * building ran out of memory). */
int gw__jupyter_respond(gw_response *res, int status, json_t *body)
{
    if (body == NULL)
        return ed_error_set(ED_ENOMEM, "response body");
    return gw_respond_json(res, status, body);
}

/* ---- meta ------------------------------------------------------------------- */

static _Atomic int64_t started_ms;   /* first request served: Jupyter's "started" */

static int get_api(gw_request *req, gw_response *res)
{
    (void)req;
    return gw__jupyter_respond(res, 200, json_pack("{s:s}", "version", GW_JUPYTER_SERVER_VERSION));
}

typedef struct status_acc {
    int     kernels, connections;
    int64_t last_activity;   /* ms */
} status_acc;

static int count_kernel(const kh_kernel *k, void *payload)
{
    status_acc *a = payload;
    a->kernels++;
    a->connections += k->connections;
    if (k->last_activity_at > a->last_activity)
        a->last_activity = k->last_activity_at;
    return 0;
}

static int get_status(gw_request *req, gw_response *res)
{
    status_acc a = {0};
    int err;

    if (started_ms == 0)
        started_ms = ed_now_ms();
    if ((err = kh_kernel_each(req->srv->kernels, req->auth.user_id, false, count_kernel, &a)) < 0)
        return err;
    if (a.last_activity == 0)
        a.last_activity = started_ms;
    return gw__jupyter_respond(res, 200,
                   json_pack("{s:s, s:s, s:i, s:i}", "started", gw__time(req, started_ms),
                             "last_activity", gw__time(req, a.last_activity), "connections",
                             a.connections, "kernels", a.kernels));
}

/* Jupyter Server 2's identity endpoint (JupyterLab 4 asks for it). */
static int get_me_jupyter(gw_request *req, gw_response *res)
{
    const char *u = req->auth.username ? req->auth.username : "";
    char initials[3] = {u[0] ? (char)(u[0] >= 'a' && u[0] <= 'z' ? u[0] - 32 : u[0]) : '?', 0, 0};

    return gw__jupyter_respond(res, 200,
                   json_pack("{s:{s:s, s:s, s:s, s:s, s:n, s:n}, s:{}}", "identity", "username", u,
                             "name", u, "display_name", u, "initials", initials, "avatar_url",
                             "color", "permissions"));
}

/* ---- kernelspecs ------------------------------------------------------------- */

static json_t *kernelspec_json(void)
{
    return json_pack("{s:s, s:{s:[s,s,s,s,s], s:{}, s:s, s:s, s:s, s:{}}, s:{}}", "name", "python3",
                     "spec", "argv", "eddy-kernel", "serve", "--fd", "N", "{connection_file}",
                     "env", "display_name", "Python 3 (Eddy)", "language", "python",
                     "interrupt_mode", "message", "metadata", "resources");
}

static int get_kernelspecs(gw_request *req, gw_response *res)
{
    json_t *spec = kernelspec_json();
    (void)req;
    if (spec == NULL)
        return ed_error_set(ED_ENOMEM, "kernelspec");
    return gw__jupyter_respond(res, 200,
                   json_pack("{s:s, s:{s:o}}", "default", "python3", "kernelspecs", "python3", spec));
}

static int get_kernelspec(gw_request *req, gw_response *res)
{
    if (strcmp(req->params[0], "python3") != 0)
        return ed_error_set(ED_ENOTFOUND, "no kernelspec named '%s' (Eddy has python3)",
                            req->params[0]);
    return gw__jupyter_respond(res, 200, kernelspec_json());
}

/* ---- kernels ------------------------------------------------------------------ */

json_t *gw__jupyter_kernel_model(gw_request *req, const kh_kernel *k)
{
    const char *state = strcmp(k->status, "queued") == 0 ? "starting" : k->status;
    int64_t last = k->last_activity_at ? k->last_activity_at : k->created_at;

    return json_pack("{s:s, s:s, s:s, s:s, s:i, s:{s:s, s:s, s:s, s:i, s:s?}}", "id", k->id, "name",
                     "python3", "last_activity", gw__time(req, last), "execution_state", state,
                     "connections", k->connections, "eddy", "status", k->status, "project_id",
                     k->project_id, "resource", k->resource, "queue_position", k->queue_position,
                     "stop_reason", k->stop_reason[0] ? k->stop_reason : NULL);
}

static int list_one_kernel(const kh_kernel *k, void *payload)
{
    void **ctx = payload;
    json_t *m = gw__jupyter_kernel_model(ctx[0], k);
    if (m == NULL || json_array_append_new(ctx[1], m) < 0)
        return ed_error_set(ED_ENOMEM, "kernel list");
    return 0;
}

static int list_kernels(gw_request *req, gw_response *res)
{
    json_t *arr = json_array();
    void *ctx[2] = {req, arr};
    int err;

    if (arr == NULL)
        return ed_error_set(ED_ENOMEM, "kernel list");
    if ((err = kh_kernel_each(req->srv->kernels, req->auth.user_id, false, list_one_kernel, ctx)) < 0) {
        json_decref(arr);
        return err;
    }
    return gw__jupyter_respond(res, 200, arr);
}

/* The tier's default class: the cheapest CPU class the tier may use. */
static int default_resource(char out[32], gw_request *req)
{
    sched_resource *rs = NULL;
    size_t n = 0;
    int best = -1, err;

    if ((err = sched_resource_list(&rs, &n, req->srv->sched)) < 0)
        return err;
    for (size_t i = 0; i < n; i++) {
        char tiers[160];
        snprintf(tiers, sizeof(tiers), ",%s,", rs[i].tiers);
        char want[48];
        snprintf(want, sizeof(want), ",%s,", req->auth.tier ? req->auth.tier : "free");
        if (rs[i].gpu || strstr(tiers, want) == NULL)
            continue;
        if (best < 0 || rs[i].price_mcoins_per_hour < rs[best].price_mcoins_per_hour)
            best = (int)i;
    }
    if (best < 0) {
        free(rs);
        return ed_error_set(ED_ENOTFOUND, "no CPU resource class is open to tier %s",
                            req->auth.tier ? req->auth.tier : "free");
    }
    snprintf(out, 32, "%s", rs[best].name);
    free(rs);
    return 0;
}

int gw__jupyter_kernel_start(kh_kernel *out, gw_request *req, const json_t *body)
{
    const char *name = json_string_value(json_object_get(body, "name"));
    const json_t *env = json_object_get(body, "env");
    const char *project = NULL, *resource = NULL;
    char proj_id[PROJ_ID_LEN + 1], res_name[32];
    int err;

    if (name != NULL && name[0] != '\0' && strcmp(name, "python3") != 0)
        return ed_error_set(ED_ENOTFOUND, "no kernelspec named '%s' (Eddy has python3)", name);
    if (env != NULL && !json_is_object(env))
        return ed_error_set(ED_EINVAL, "env must be an object");
    if (env) {
        project = json_string_value(json_object_get(env, "EDDY_PROJECT_ID"));
        resource = json_string_value(json_object_get(env, "EDDY_RESOURCE"));
    }
    if (project == NULL || project[0] == '\0')
        project = json_string_value(json_object_get(body, "project_id"));
    if (project == NULL || project[0] == '\0') {
        if ((err = gw__jupyter_default_project(proj_id, req)) < 0)
            return err;
        project = proj_id;
    }
    if (resource == NULL || resource[0] == '\0') {
        if ((err = default_resource(res_name, req)) < 0)
            return err;
        resource = res_name;
    }
    sched_acting_key_set(req->auth.via_key ? req->auth.key_id : 0);   /* the key's daily budget applies */
    err = kh_kernel_start(out, req->srv->kernels, req->auth.user_id, req->auth.tier, project, resource);
    sched_acting_key_set(0);
    return err;
}

static int start_kernel(gw_request *req, gw_response *res)
{
    json_t *body = NULL;
    kh_kernel k;
    int err;

    if (req->body != NULL && req->body_len > 0 && (err = gw_request_json(&body, req)) < 0)
        return err;
    if ((err = gw__jupyter_kernel_start(&k, req, body)) < 0)
        return err;
    gw_response_header(res, "Location", ed_arena_printf(req->arena, "/api/kernels/%s", k.id));
    return gw__jupyter_respond(res, 201, gw__jupyter_kernel_model(req, &k));
}

static int get_kernel(gw_request *req, gw_response *res)
{
    kh_kernel k;
    int err;

    if ((err = kh_kernel_get(&k, req->srv->kernels, req->auth.user_id, req->params[0])) < 0)
        return err;
    return gw__jupyter_respond(res, 200, gw__jupyter_kernel_model(req, &k));
}

static int delete_kernel(gw_request *req, gw_response *res)
{
    kh_kernel k;
    int err;

    if ((err = kh_kernel_get(&k, req->srv->kernels, req->auth.user_id, req->params[0])) < 0 ||
        (err = kh_kernel_shutdown(req->srv->kernels, req->auth.user_id, req->params[0], NULL)) < 0)
        return err;
    return gw_respond_empty(res, 204);   /* the hub deleted its sessions */
}

static int interrupt_kernel(gw_request *req, gw_response *res)
{
    int err;

    if ((err = kh_kernel_interrupt(req->srv->kernels, req->auth.user_id, req->params[0])) < 0)
        return err;
    return gw_respond_empty(res, 204);
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
    return gw__jupyter_respond(res, 200, gw__jupyter_kernel_model(req, &k));
}

/* ---- routes -------------------------------------------------------------------- */

#define R  (GW_AUTH | GW_SCOPE_READ | GW_JUPYTER_XSRF)
#define W  (GW_AUTH | GW_SCOPE_WRITE | GW_JUPYTER_XSRF)
#define X  (GW_AUTH | GW_SCOPE_RUN | GW_JUPYTER_XSRF)

const gw_route gw__routes_jupyter[] = {
    {"GET", "/api", get_api, GW_PUBLIC, "Jupyter Server API version"},
    {"GET", "/api/status", get_status, R, "Jupyter: server status for the caller"},
    {"GET", "/api/me", get_me_jupyter, R, "Jupyter: the caller's identity"},
    {"GET", "/api/kernelspecs", get_kernelspecs, R, "Jupyter: kernel specs (python3)"},
    {"GET", "/api/kernelspecs/{name}", get_kernelspec, R, "Jupyter: one kernel spec"},
    {"GET", "/api/kernels", list_kernels, R, "Jupyter: my running kernels"},
    {"POST", "/api/kernels", start_kernel, X,
     "Jupyter: start a kernel {name, path?, env?: {EDDY_PROJECT_ID, EDDY_RESOURCE}}"},
    {"GET", "/api/kernels/{id}", get_kernel, R, "Jupyter: one kernel"},
    {"DELETE", "/api/kernels/{id}", delete_kernel, X, "Jupyter: shut a kernel down"},
    {"POST", "/api/kernels/{id}/interrupt", interrupt_kernel, X, "Jupyter: interrupt a kernel"},
    {"POST", "/api/kernels/{id}/restart", restart_kernel, X, "Jupyter: restart (same id)"},
    {"GET", "/api/kernels/{id}/channels", gw__jupyter_kernel_channels, X | GW_AUTH_QUERY_TOKEN,
     "Jupyter: the kernel's channels as a WebSocket (JSON or v1.kernel.websocket.jupyter.org)"},
    {"GET", "/api/sessions", gw__jupyter_list_sessions, R, "Jupyter: my sessions"},
    {"POST", "/api/sessions", gw__jupyter_create_session, X, "Jupyter: create a session {path, name, type, kernel}"},
    {"GET", "/api/sessions/{id}", gw__jupyter_get_session, R, "Jupyter: one session"},
    {"PATCH", "/api/sessions/{id}", gw__jupyter_update_session, X, "Jupyter: rename or change a session's kernel"},
    {"DELETE", "/api/sessions/{id}", gw__jupyter_delete_session, X, "Jupyter: delete a session and its kernel"},
    {"GET", "/api/contents", gw__jupyter_contents_get, R, "Jupyter: the default project's root directory"},
    {"GET", "/api/contents/{path*}", gw__jupyter_contents_get, R,
     "Jupyter: a file, notebook or directory model (or .../checkpoints)"},
    {"PUT", "/api/contents/{path*}", gw__jupyter_contents_put, W, "Jupyter: save a model"},
    {"POST", "/api/contents", gw__jupyter_contents_post, W, "Jupyter: new untitled file, notebook or folder"},
    {"POST", "/api/contents/{path*}", gw__jupyter_contents_post, W,
     "Jupyter: new untitled in a folder, copy, or checkpoint (.../checkpoints[/{id}])"},
    {"PATCH", "/api/contents/{path*}", gw__jupyter_contents_patch, W, "Jupyter: rename {path}"},
    {"DELETE", "/api/contents/{path*}", gw__jupyter_contents_delete, W,
     "Jupyter: delete a file or directory (checkpoints are versions and stay)"},
    {NULL, NULL, NULL, 0, NULL},
};

