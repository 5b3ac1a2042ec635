/*
 * jupyter_routes.c - Jupyter Server's REST API and kernel channels, so stock
 * Jupyter clients (@jupyterlab/services, jupyter-server --gateway-url, ...)
 * drive Eddy's kernels (API.md "Jupyter Server compatibility").
 *
 *   /api, /api/status, /api/kernelspecs[/{name}]
 *   /api/kernels ...          over kernel_hub.h: one kernel, one id (the same
 *                             kernel as /api/v1/kernels/{id})
 *   /api/kernels/{id}/channels  a WebSocket (ws.c): Jupyter's default JSON
 *                             framing, or v1.kernel.websocket.jupyter.org when
 *                             the client offers it
 *   /api/sessions             {id, path, name, type, kernel}, in the store
 *                             (table jupyter_sessions: they survive a restart;
 *                             capped in size and number per user)
 *   /api/contents             over the working tree of the caller's default
 *                             project (contents.c)
 *
 * Auth is the gateway's: an API key as "Authorization: token <key>" (what
 * Jupyter clients send) or "Bearer <key>", or the session cookie with the CSRF
 * token as X-CSRF-Token or X-XSRFToken. The channels upgrade alone also takes
 * ?token=<key>, because browsers cannot set headers on a WebSocket.
 *
 * A channels connection has no thread of its own: ws.c's event loop turns
 * client frames into kh_send calls (on_message) and, woken by the hub when
 * output arrives, drains the subscription into frames (on_wake), pausing
 * while the socket's queue is long. The subscription starts from the
 * kernel's last sequence number at connect, or ?after=<seq> to resume.
 * Messages sent while the kernel is still queued or starting are held and
 * delivered once it runs.
 */
#include "gw_int.h"
#include "jupyter_int.h"
#include "kernel_hub.h"
#include "proj.h"
#include "sched.h"

#include "ed_crypto.h"
#include "ed_error.h"
#include "ed_log.h"
#include "ed_time.h"

#include <errno.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define JUP_SUBPROTOCOL "v1.kernel.websocket.jupyter.org"
#define JUP_PENDING_MAX 256   /* client messages held while a kernel starts */

static int respond(gw_response *res, int status, json_t *body)
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
    return respond(res, 200, json_pack("{s:s}", "version", JUP_SERVER_VERSION));
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
    if ((err = kh_kernel_each(req->srv, req->auth.user_id, false, count_kernel, &a)) < 0)
        return err;
    if (a.last_activity == 0)
        a.last_activity = started_ms;
    return respond(res, 200,
                   json_pack("{s:s, s:s, s:i, s:i}", "started", gw__time(req, started_ms),
                             "last_activity", gw__time(req, a.last_activity), "connections",
                             a.connections, "kernels", a.kernels));
}

/* Jupyter Server 2's identity endpoint (JupyterLab 4 asks for it). */
static int get_me_jupyter(gw_request *req, gw_response *res)
{
    const char *u = req->auth.username ? req->auth.username : "";
    char initials[3] = {u[0] ? (char)(u[0] >= 'a' && u[0] <= 'z' ? u[0] - 32 : u[0]) : '?', 0, 0};

    return respond(res, 200,
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
    return respond(res, 200,
                   json_pack("{s:s, s:{s:o}}", "default", "python3", "kernelspecs", "python3", spec));
}

static int get_kernelspec(gw_request *req, gw_response *res)
{
    if (strcmp(req->params[0], "python3") != 0)
        return ed_error_set(ED_ENOTFOUND, "no kernelspec named '%s' (Eddy has python3)",
                            req->params[0]);
    return respond(res, 200, kernelspec_json());
}

/* ---- kernels ------------------------------------------------------------------ */

json_t *jup__kernel_model(gw_request *req, const kh_kernel *k)
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
    json_t *m = jup__kernel_model(ctx[0], k);
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
    if ((err = kh_kernel_each(req->srv, req->auth.user_id, false, list_one_kernel, ctx)) < 0) {
        json_decref(arr);
        return err;
    }
    return respond(res, 200, arr);
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

int jup__kernel_start(kh_kernel *out, gw_request *req, const json_t *body)
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
        if ((err = jup__default_project(proj_id, req)) < 0)
            return err;
        project = proj_id;
    }
    if (resource == NULL || resource[0] == '\0') {
        if ((err = default_resource(res_name, req)) < 0)
            return err;
        resource = res_name;
    }
    sched_acting_key_set(req->auth.via_key ? req->auth.key_id : 0);   /* the key's daily budget applies */
    err = kh_kernel_start(out, req->srv, req->auth.user_id, req->auth.tier, project, resource);
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
    if ((err = jup__kernel_start(&k, req, body)) < 0)
        return err;
    gw_response_header(res, "Location", ed_arena_printf(req->arena, "/api/kernels/%s", k.id));
    return respond(res, 201, jup__kernel_model(req, &k));
}

static int get_kernel(gw_request *req, gw_response *res)
{
    kh_kernel k;
    int err;

    if ((err = kh_kernel_get(&k, req->srv, req->auth.user_id, req->params[0])) < 0)
        return err;
    return respond(res, 200, jup__kernel_model(req, &k));
}

static int delete_kernel(gw_request *req, gw_response *res)
{
    kh_kernel k;
    int err;

    if ((err = kh_kernel_get(&k, req->srv, req->auth.user_id, req->params[0])) < 0 ||
        (err = kh_kernel_shutdown(req->srv, req->auth.user_id, req->params[0], NULL)) < 0)
        return err;
    return gw_respond_empty(res, 204);   /* the hub deleted its sessions */
}

static int interrupt_kernel(gw_request *req, gw_response *res)
{
    int err;

    if ((err = kh_kernel_interrupt(req->srv, req->auth.user_id, req->params[0])) < 0)
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
    err = kh_kernel_restart(&k, req->srv, req->auth.user_id, req->params[0]);
    sched_acting_key_set(0);
    if (err < 0)
        return err;
    return respond(res, 200, jup__kernel_model(req, &k));
}

/* ---- channels ------------------------------------------------------------------- */

typedef struct chan {
    gw_server      *srv;
    int64_t         user_id;
    char            kid[KH_ID_LEN];
    int64_t         after;          /* subscribe after this sequence number */
    bool            v1;             /* v1.kernel.websocket.jupyter.org framing */
    gw_ws          *ws;
    kh_sub         *sub;
    bool            done;           /* closing: on_wake has nothing more to do */
    json_t         *pending;        /* array of messages held while the kernel starts */
} chan;

/* Frames one on_wake call sends before it yields the loop to other
 * connections, and the queued bytes past which it waits for the socket. */
enum { CHAN_BATCH = 256, CHAN_QUEUE_PAUSE = 1 << 20, CHAN_RETRY_MS = 50 };

/* v1 framing (jupyter_server's serialize_msg_to_ws_v1): u64le count of
 * offsets, the offsets (u64le), then channel, header, parent_header,
 * metadata, content and any buffers; each offset is where a part starts and
 * the last is where the final part ends. */
static int v1_encode(uint8_t **out, size_t *out_len, const json_t *msg)
{
    static const char *const parts[] = {"header", "parent_header", "metadata", "content"};
    const char *channel = json_string_value(json_object_get(msg, "channel"));
    const json_t *bufs = json_object_get(msg, "buffers");
    size_t nbufs = json_is_array(bufs) ? json_array_size(bufs) : 0;
    size_t nparts = 1 + 4 + nbufs, noff = nparts + 1, total, pos;
    char *text[4] = {0};
    uint8_t *b = NULL;
    size_t lens[4];
    int err = 0;

    *out = NULL;
    *out_len = 0;
    if (channel == NULL)
        channel = "iopub";
    total = 8 * (1 + noff) + strlen(channel);
    for (int i = 0; i < 4; i++) {
        const json_t *v = json_object_get(msg, parts[i]);
        json_t *empty = NULL;
        if (v == NULL)
            v = empty = json_object();
        text[i] = v ? json_dumps(v, JSON_COMPACT) : NULL;
        json_decref(empty);
        if (text[i] == NULL) {
            err = ed_error_set(ED_ENOMEM, "v1 frame");
            goto out;
        }
        lens[i] = strlen(text[i]);
        total += lens[i];
    }
    for (size_t i = 0; i < nbufs; i++) {
        const char *s = json_string_value(json_array_get(bufs, i));
        total += s ? strlen(s) : 0;   /* decoded is shorter */
    }
    if ((b = malloc(total)) == NULL) {
        err = ed_error_set(ED_ENOMEM, "v1 frame");
        goto out;
    }
    pos = 8 * (1 + noff);
#define PUT64(at, v) do { uint64_t _v = (uint64_t)(v); for (int _i = 0; _i < 8; _i++) b[(at) + (size_t)_i] = (uint8_t)(_v >> (8 * _i)); } while (0)
    PUT64(0, noff);
    PUT64(8, pos);
    memcpy(b + pos, channel, strlen(channel));
    pos += strlen(channel);
    for (int i = 0; i < 4; i++) {
        PUT64(8 * (2 + (size_t)i), pos);
        memcpy(b + pos, text[i], lens[i]);
        pos += lens[i];
    }
    for (size_t i = 0; i < nbufs; i++) {
        const char *s = json_string_value(json_array_get(bufs, i));
        size_t bin = 0;
        PUT64(8 * (6 + i), pos);
        if (s && sodium_base642bin(b + pos, total - pos, s, strlen(s), NULL, &bin, NULL,
                                   sodium_base64_VARIANT_ORIGINAL) != 0)
            bin = 0;
        pos += bin;
    }
    PUT64(8 * noff, pos);
#undef PUT64
    *out = b;
    *out_len = pos;
    b = NULL;
out:
    for (int i = 0; i < 4; i++)
        free(text[i]);
    free(b);
    return err;
}

static uint64_t get64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

/* The inverse: a v1 binary frame into a message object (new reference). */
int jup__v1_decode(json_t **out, const uint8_t *b, size_t len)
{
    static const char *const parts[] = {"header", "parent_header", "metadata", "content"};
    uint64_t noff, off[64];
    json_t *msg = NULL, *bufs = NULL;
    int err;

    *out = NULL;
    if (len < 8 || (noff = get64(b)) < 6 || noff > 64 || len < 8 * (1 + noff))
        return ed_error_set(ED_EINVAL, "v1 frame: bad offset table");
    for (uint64_t i = 0; i < noff; i++) {
        off[i] = get64(b + 8 * (1 + i));
        if (off[i] > len || (i > 0 && off[i] < off[i - 1]) || off[i] < 8 * (1 + noff))
            return ed_error_set(ED_EINVAL, "v1 frame: offset %llu out of order or range",
                                (unsigned long long)i);
    }
    if ((msg = json_object()) == NULL || (bufs = json_array()) == NULL) {
        err = ed_error_set(ED_ENOMEM, "v1 frame");
        goto fail;
    }
    if (json_object_set_new(msg, "channel",
                            json_stringn((const char *)b + off[0], (size_t)(off[1] - off[0]))) < 0) {
        err = ed_error_set(ED_EINVAL, "v1 frame: channel is not UTF-8");
        goto fail;
    }
    for (int i = 0; i < 4; i++) {
        json_error_t je;
        json_t *v = json_loadb((const char *)b + off[1 + i], (size_t)(off[2 + i] - off[1 + i]),
                               JSON_REJECT_DUPLICATES, &je);
        if (v == NULL) {
            err = ed_error_set(ED_EINVAL, "v1 frame: %s is not JSON: %s", parts[i], je.text);
            goto fail;
        }
        json_object_set_new(msg, parts[i], v);
    }
    for (uint64_t i = 5; i + 1 < noff; i++) {
        size_t n = (size_t)(off[i + 1] - off[i]);
        char *enc = malloc(sodium_base64_ENCODED_LEN(n, sodium_base64_VARIANT_ORIGINAL));
        if (enc == NULL) {
            err = ed_error_set(ED_ENOMEM, "v1 frame");
            goto fail;
        }
        sodium_bin2base64(enc, sodium_base64_ENCODED_LEN(n, sodium_base64_VARIANT_ORIGINAL),
                          b + off[i], n, sodium_base64_VARIANT_ORIGINAL);
        json_array_append_new(bufs, json_string(enc));
        free(enc);
    }
    json_object_set_new(msg, "buffers", bufs);
    *out = msg;
    return 0;
fail:
    json_decref(bufs);
    json_decref(msg);
    return err;
}

static int chan_send_msg(chan *c, json_t *msg)
{
    int err;

    if (c->v1) {
        uint8_t *b;
        size_t n;
        if ((err = v1_encode(&b, &n, msg)) < 0)
            return err;
        err = gw_ws_send(c->ws, GW_WS_BINARY, b, n);
        free(b);
    } else {
        char *s;
        json_object_del(msg, "seq");
        if ((s = json_dumps(msg, JSON_COMPACT)) == NULL)
            return ed_error_set(ED_ENOMEM, "message");
        err = gw_ws_send(c->ws, GW_WS_TEXT, s, strlen(s));
        free(s);
    }
    return err;
}

/* Deliver held client messages once the kernel runs; drop them if it died.
 * True while some are still held (the kernel is still starting). */
static bool flush_pending(chan *c)
{
    while (json_array_size(c->pending) > 0) {
        json_t *m = json_incref(json_array_get(c->pending, 0));
        int err = kh_send(c->srv, c->user_id, c->kid, m);
        json_decref(m);
        if (err == ED_ECONFLICT) {
            kh_kernel k;
            if (kh_kernel_get(&k, c->srv, c->user_id, c->kid) == 0 &&
                (strcmp(k.status, "queued") == 0 || strcmp(k.status, "starting") == 0))
                return true;   /* still starting: keep it */
        }
        if (err < 0)
            ed_log_warn("jupyter.channels", "kernel %s: message dropped: %s", c->kid,
                        ed_error_last());
        json_array_remove(c->pending, 0);
    }
    return false;
}

/* From the hub's threads: new output or the kernel ended. */
static void chan_output_ready(void *arg)
{
    chan *c = arg;

    gw_ws_wake(c->ws);
}

/* The process ended: a restart goes on under the same id, so follow the new
 * one from where we are; a dead kernel ends the connection. */
static void chan_follow_restart(gw_ws *ws, chan *c)
{
    kh_kernel k;
    kh_sub *ns = NULL;

    if (kh_kernel_get(&k, c->srv, c->user_id, c->kid) == 0 && strcmp(k.status, "dead") != 0 &&
        kh_subscribe(&ns, c->srv, c->user_id, c->kid, c->after, chan_output_ready, c) == 0) {
        kh_unsubscribe(c->sub);
        c->sub = ns;
        gw_ws_wake_after(ws, CHAN_RETRY_MS);
        return;
    }
    c->done = true;
    gw_ws_close(ws, 1000, "kernel ended");
}

/* On the connection's loop: hand held messages on, then send what the
 * kernel wrote, a batch at a time and never faster than the peer reads. */
static void chan_wake(gw_ws *ws, void *payload)
{
    chan *c = payload;

    if (c->done)
        return;
    if (flush_pending(c))
        gw_ws_wake_after(ws, CHAN_RETRY_MS);
    for (int n = 0; n < CHAN_BATCH; n++) {
        json_t *m = NULL;
        int64_t seq = 0;
        int rc;

        if (gw_ws_queued(ws) > CHAN_QUEUE_PAUSE)
            return;   /* on_wake runs again once the queue is written out */
        rc = kh_sub_next(&m, &seq, c->sub, 0);
        if (rc == 0)
            return;
        if (rc == ED_ENOTFOUND) {
            chan_follow_restart(ws, c);
            return;
        }
        if (rc < 0) {
            ed_log_warn("jupyter.channels", "kernel %s: %s", c->kid, ed_error_last());
            c->done = true;
            gw_ws_close(ws, 1011, "kernel output unavailable");
            return;
        }
        c->after = seq;
        rc = chan_send_msg(c, m);
        json_decref(m);
        if (rc < 0) {
            c->done = true;
            return;
        }
    }
    gw_ws_wake_after(ws, 0);   /* more waiting: after the other connections had a turn */
}

static int chan_open(gw_ws *ws, void *payload)
{
    chan *c = payload;
    int err;

    c->ws = ws;
    gw_ws_set_on_wake(ws, chan_wake);
    if ((err = kh_subscribe(&c->sub, c->srv, c->user_id, c->kid, c->after, chan_output_ready, c)) < 0)
        return err;
    gw_ws_wake(ws);   /* replay what the journal holds */
    return 0;
}

static int chan_message(gw_ws *ws, int opcode, const uint8_t *data, size_t len, void *payload)
{
    chan *c = payload;
    json_t *msg = NULL;
    json_error_t je;
    int err;

    if (opcode == GW_WS_BINARY) {
        if ((err = jup__v1_decode(&msg, data, len)) < 0)
            return err;
    } else if ((msg = json_loadb((const char *)data, len, JSON_REJECT_DUPLICATES, &je)) == NULL ||
               !json_is_object(msg)) {
        json_decref(msg);
        return ed_error_set(ED_EINVAL, "channels: a message must be a JSON object");
    }
    if (json_object_get(msg, "channel") == NULL) {
        json_decref(msg);
        return ed_error_set(ED_EINVAL, "channels: message without a channel");
    }
    if (json_array_size(c->pending) > 0) {
        /* Keep the order: behind what is already held. */
        err = json_array_size(c->pending) < JUP_PENDING_MAX ? json_array_append(c->pending, msg)
                                                            : ed_error_set(ED_ELIMIT, "too many held messages");
        json_decref(msg);
        return err < 0 ? ED_ELIMIT : 0;
    }
    err = kh_send(c->srv, c->user_id, c->kid, msg);
    if (err == ED_ECONFLICT) {
        kh_kernel k;
        if (kh_kernel_get(&k, c->srv, c->user_id, c->kid) == 0 &&
            (strcmp(k.status, "queued") == 0 || strcmp(k.status, "starting") == 0)) {
            json_array_append(c->pending, msg);
            gw_ws_wake_after(ws, CHAN_RETRY_MS);   /* chan_wake hands it on once the kernel runs */
            err = 0;
        }
    }
    json_decref(msg);
    if (err == ED_EINVAL) {
        ed_log_warn("jupyter.channels", "kernel %s: refused a message: %s", c->kid, ed_error_last());
        return 0;   /* one bad message does not end the connection */
    }
    if (err == ED_ECONFLICT) {
        ed_log_warn("jupyter.channels", "kernel %s is not running: %s", c->kid, ed_error_last());
        return 0;
    }
    return err;
}

static void chan_close(gw_ws *ws, void *payload)
{
    chan *c = payload;

    (void)ws;
    kh_unsubscribe(c->sub);   /* under the hub's lock: no chan_output_ready after it */
    json_decref(c->pending);
    free(c);
}

static const gw_ws_handler chan_handler = {chan_open, chan_message, chan_close};

static int kernel_channels(gw_request *req, gw_response *res)
{
    static const char *const protos[] = {JUP_SUBPROTOCOL, NULL};
    const char *after = gw_request_query(req, "after");
    const char *chosen;
    kh_kernel k;
    chan *c;
    int err;

    if ((err = kh_kernel_get(&k, req->srv, req->auth.user_id, req->params[0])) < 0)
        return err;
    if ((c = calloc(1, sizeof(*c))) == NULL || (c->pending = json_array()) == NULL) {
        free(c);
        return ed_error_set(ED_ENOMEM, "channels");
    }
    c->srv = req->srv;
    c->user_id = req->auth.user_id;
    snprintf(c->kid, sizeof(c->kid), "%s", k.id);
    c->after = k.last_seq;
    if (after != NULL) {
        char *end;
        long long v;
        errno = 0;
        v = strtoll(after, &end, 10);
        if (*after == '\0' || *end != '\0' || errno || v < 0) {
            json_decref(c->pending);
            free(c);
            return ed_error_set(ED_EINVAL, "after must be a sequence number");
        }
        c->after = v;
    }
    if ((err = gw_ws_accept(&chosen, req, res, protos, &chan_handler, c)) < 0) {
        json_decref(c->pending);
        free(c);
        return err;
    }
    c->v1 = chosen != NULL;
    return 0;
}

/* ---- sessions ------------------------------------------------------------------ */

/* Sessions live in the store (table jupyter_sessions, migration 0008): they
 * survive a restart and cost no memory. Each text field is at most
 * JUP_SESSION_FIELD_MAX bytes (413) and a user has at most
 * cfg.jupyter_sessions_per_user of them (429). The kernel hub deletes a
 * kernel's sessions when the kernel is shut down. */
#define JUP_SESSION_FIELD_MAX 4096

static void uuid4(char out[KH_ID_LEN])
{
    uint8_t b[16];

    ed_random_bytes(b, sizeof(b));
    b[6] = (uint8_t)((b[6] & 0x0F) | 0x40);
    b[8] = (uint8_t)((b[8] & 0x3F) | 0x80);
    snprintf(out, KH_ID_LEN, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
             b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
             b[14], b[15]);
}

/* A session's fields, in the request arena. */
typedef struct sess_view {
    char id[KH_ID_LEN], kernel_id[KH_ID_LEN];
    const char *path, *name, *type;
} sess_view;

static const char *col_text(gw_request *req, sqlite3_stmt *q, int i)
{
    const unsigned char *t = sqlite3_column_text(q, i);
    return ed_arena_strdup(req->arena, t ? (const char *)t : "");
}

/* Fill v from a row (id, kernel_id, path, name, type). */
static int view_of_row(sess_view *v, gw_request *req, sqlite3_stmt *q)
{
    snprintf(v->id, sizeof(v->id), "%s", (const char *)sqlite3_column_text(q, 0));
    snprintf(v->kernel_id, sizeof(v->kernel_id), "%s", (const char *)sqlite3_column_text(q, 1));
    v->path = col_text(req, q, 2);
    v->name = col_text(req, q, 3);
    v->type = col_text(req, q, 4);
    if (v->path == NULL || v->name == NULL || v->type == NULL)
        return ed_error_set(ED_ENOMEM, "session");
    return 0;
}

/* Whether the session's kernel is gone (dead, or no longer there). */
static bool session_kernel_gone(gw_request *req, const sess_view *v)
{
    kh_kernel k;

    if (kh_kernel_get(&k, req->srv, req->auth.user_id, v->kernel_id) < 0) {
        ed_error_clear();
        return true;
    }
    return strcmp(k.status, "dead") == 0;
}

/* A session as Jupyter shows it. A dead kernel (after a server restart, a
 * cull) shows as "kernel": null, which Jupyter clients answer by starting
 * one (PATCH); POSTing the same path does that too. */
static json_t *session_model(gw_request *req, const sess_view *v)
{
    kh_kernel k;
    json_t *km = NULL;

    if (kh_kernel_get(&k, req->srv, req->auth.user_id, v->kernel_id) == 0 && strcmp(k.status, "dead") != 0)
        km = jup__kernel_model(req, &k);
    else
        ed_error_clear();
    return json_pack("{s:s, s:s, s:s, s:s, s:o, s:{s:s, s:s}}", "id", v->id, "path",
                     v->path ? v->path : "", "name", v->name ? v->name : "", "type",
                     v->type ? v->type : "notebook", "kernel", km ? km : json_null(), "notebook",
                     "path", v->path ? v->path : "", "name", v->name ? v->name : "");
}

/* The caller's session whose `col` ("id" or "path") is `value`. ED_ENOTFOUND. */
static int session_find_by(sess_view *v, gw_request *req, const char *col, const char *value)
{
    sqlite3_stmt *q;
    int rc, err;

    if ((err = ed_store_prepare(&q, req->srv->store,
                                strcmp(col, "path") == 0
                                    ? "SELECT id, kernel_id, path, name, type FROM jupyter_sessions "
                                      "WHERE user_id = ?1 AND path = ?2 ORDER BY created_at LIMIT 1"
                                    : "SELECT id, kernel_id, path, name, type FROM jupyter_sessions "
                                      "WHERE user_id = ?1 AND id = ?2")) < 0)
        return err;
    sqlite3_bind_int64(q, 1, req->auth.user_id);
    sqlite3_bind_text(q, 2, value, -1, SQLITE_STATIC);
    if ((rc = sqlite3_step(q)) == SQLITE_ROW)
        err = view_of_row(v, req, q);
    else if (rc == SQLITE_DONE)
        err = ed_error_set(ED_ENOTFOUND, "no session %.64s", value);
    else
        err = ed_store_error(ed_store_db(req->srv->store), rc, "session");
    sqlite3_finalize(q);
    return err;
}

static int session_find(sess_view *v, gw_request *req, const char *id)
{
    return session_find_by(v, req, "id", id);
}

int jup__list_sessions(gw_request *req, gw_response *res)
{
    json_t *arr = json_array();
    sess_view *vs = NULL;
    size_t n = 0, cap = 0;
    sqlite3_stmt *q;
    int rc, err;

    if (arr == NULL)
        return ed_error_set(ED_ENOMEM, "sessions");
    if ((err = ed_store_prepare(&q, req->srv->store,
                                "SELECT id, kernel_id, path, name, type FROM jupyter_sessions WHERE user_id = ?1 "
                                "ORDER BY created_at, id")) < 0) {
        json_decref(arr);
        return err;
    }
    sqlite3_bind_int64(q, 1, req->auth.user_id);
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        if (n == cap) {
            size_t nc = cap ? cap * 2 : 8;
            sess_view *nv = ed_arena_alloc(req->arena, nc * sizeof(*nv));
            if (nv == NULL)
                break;
            if (n)
                memcpy(nv, vs, n * sizeof(*nv));
            vs = nv;
            cap = nc;
        }
        if (view_of_row(&vs[n], req, q) == 0)
            n++;
    }
    err = rc == SQLITE_DONE || rc == SQLITE_ROW ? 0 : ed_store_error(ed_store_db(req->srv->store), rc, "sessions");
    sqlite3_finalize(q);
    if (err < 0) {
        json_decref(arr);
        return err;
    }
    for (size_t i = 0; i < n; i++) {
        json_t *m = session_model(req, &vs[i]);
        if (m == NULL || json_array_append_new(arr, m) < 0) {
            json_decref(arr);
            return ed_error_set(ED_ENOMEM, "sessions");
        }
    }
    return respond(res, 200, arr);
}

/* An optional string field of at most JUP_SESSION_FIELD_MAX bytes. */
static int opt_string(const char **out, const json_t *body, const char *key)
{
    const json_t *v = json_object_get(body, key);

    *out = NULL;
    if (v == NULL || json_is_null(v))
        return 0;
    if (!json_is_string(v))
        return ed_error_set(ED_EINVAL, "%s must be a string", key);
    if (json_string_length(v) > JUP_SESSION_FIELD_MAX)
        return ed_error_set(ED_ETOOBIG, "session field '%s' is %zu bytes; the limit is %d", key,
                            json_string_length(v), JUP_SESSION_FIELD_MAX);
    if (strlen(json_string_value(v)) != json_string_length(v))
        return ed_error_set(ED_EINVAL, "%s must not contain NUL characters", key);
    *out = json_string_value(v);
    return 0;
}

/* The kernel a session body names: kernel.id (must be the caller's), else a
 * new kernel from kernel.name. *started tells which. */
static int session_kernel(char out[KH_ID_LEN], bool *started, gw_request *req, const json_t *body)
{
    const json_t *kobj = json_object_get(body, "kernel");
    const char *kid = NULL;
    kh_kernel k;
    int err;

    *started = false;
    if (kobj != NULL && !json_is_null(kobj) && !json_is_object(kobj))
        return ed_error_set(ED_EINVAL, "kernel must be an object {id} or {name}");
    if (kobj && (err = opt_string(&kid, kobj, "id")) < 0)
        return err;
    if (kid != NULL) {
        if ((err = kh_kernel_get(&k, req->srv, req->auth.user_id, kid)) < 0)
            return err;
    } else {
        json_t *start = json_is_object(kobj) ? json_deep_copy(kobj) : json_object();
        if (start == NULL)
            return ed_error_set(ED_ENOMEM, "session");
        if (json_object_get(start, "project_id") == NULL && json_object_get(body, "project_id"))
            json_object_set(start, "project_id", json_object_get(body, "project_id"));
        err = jup__kernel_start(&k, req, start);
        json_decref(start);
        if (err < 0)
            return err;
        *started = true;
    }
    snprintf(out, KH_ID_LEN, "%s", k.id);
    return 0;
}

/* The caller's number of sessions. */
static int session_count(int64_t *out, gw_request *req)
{
    sqlite3_stmt *q;
    int rc, err;

    if ((err = ed_store_prepare(&q, req->srv->store, "SELECT count(*) FROM jupyter_sessions WHERE user_id = ?1")) < 0)
        return err;
    sqlite3_bind_int64(q, 1, req->auth.user_id);
    rc = sqlite3_step(q);
    *out = rc == SQLITE_ROW ? sqlite3_column_int64(q, 0) : 0;
    err = rc == SQLITE_ROW ? 0 : ed_store_error(ed_store_db(req->srv->store), rc, "sessions");
    sqlite3_finalize(q);
    return err;
}

static int session_limit_error(gw_request *req)
{
    return ed_error_set(ED_ELIMIT, "you have %d Jupyter sessions, the most allowed; delete one first",
                        req->srv->cfg.jupyter_sessions_per_user);
}

int jup__create_session(gw_request *req, gw_response *res)
{
    json_t *body;
    const char *path, *name, *type;
    sess_view v;
    char kid[KH_ID_LEN], id[KH_ID_LEN];
    bool started;
    int64_t have = 0;
    sqlite3_stmt *q;
    int rc, err;

    if ((err = gw_request_json(&body, req)) < 0)
        return err;
    if ((err = opt_string(&path, body, "path")) < 0 || (err = opt_string(&name, body, "name")) < 0 ||
        (err = opt_string(&type, body, "type")) < 0)
        return err;
    if (path == NULL) {
        const json_t *nb = json_object_get(body, "notebook");   /* Jupyter's older shape */
        if (json_is_object(nb) && (err = opt_string(&path, nb, "path")) < 0)
            return err;
    }
    if (path == NULL)
        return ed_error_set(ED_EINVAL, "a session needs a path");
    /* Jupyter answers an existing session for the same path; one whose kernel
     * died gets a new kernel from this body, as Jupyter (which forgets such
     * sessions) would start with a new session. */
    if ((err = session_find_by(&v, req, "path", path)) == 0) {
        if (session_kernel_gone(req, &v)) {
            if ((err = session_kernel(kid, &started, req, body)) < 0)
                return err;
            if ((err = ed_store_prepare(&q, req->srv->store,
                                        "UPDATE jupyter_sessions SET kernel_id = ?3 WHERE id = ?1 AND user_id = ?2")) <
                0)
                return err;
            sqlite3_bind_text(q, 1, v.id, -1, SQLITE_STATIC);
            sqlite3_bind_int64(q, 2, req->auth.user_id);
            sqlite3_bind_text(q, 3, kid, -1, SQLITE_STATIC);
            rc = sqlite3_step(q);
            err = rc == SQLITE_DONE ? 0 : ed_store_error(ed_store_db(req->srv->store), rc, "session");
            sqlite3_finalize(q);
            if (err < 0)
                return err;
            snprintf(v.kernel_id, sizeof(v.kernel_id), "%s", kid);
        }
        return respond(res, 201, session_model(req, &v));
    }
    if (err != ED_ENOTFOUND)
        return err;
    ed_error_clear();
    if ((err = session_count(&have, req)) < 0)
        return err;
    if (have >= req->srv->cfg.jupyter_sessions_per_user)
        return session_limit_error(req);
    if ((err = session_kernel(kid, &started, req, body)) < 0)
        return err;
    uuid4(id);
    /* one statement: two concurrent creates cannot both take the last place */
    if ((err = ed_store_prepare(&q, req->srv->store,
                                "INSERT INTO jupyter_sessions(id, user_id, kernel_id, path, name, type, created_at) "
                                "SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7 WHERE (SELECT count(*) FROM jupyter_sessions "
                                "WHERE user_id = ?2) < ?8")) == 0) {
        sqlite3_bind_text(q, 1, id, -1, SQLITE_STATIC);
        sqlite3_bind_int64(q, 2, req->auth.user_id);
        sqlite3_bind_text(q, 3, kid, -1, SQLITE_STATIC);
        sqlite3_bind_text(q, 4, path, -1, SQLITE_STATIC);
        sqlite3_bind_text(q, 5, name ? name : "", -1, SQLITE_STATIC);
        sqlite3_bind_text(q, 6, type ? type : "notebook", -1, SQLITE_STATIC);
        sqlite3_bind_int64(q, 7, ed_now_ms());
        sqlite3_bind_int64(q, 8, req->srv->cfg.jupyter_sessions_per_user);
        rc = sqlite3_step(q);
        if (rc != SQLITE_DONE)
            err = ed_store_error(ed_store_db(req->srv->store), rc, "session");
        else if (sqlite3_changes(ed_store_db(req->srv->store)) != 1)
            err = session_limit_error(req);
        sqlite3_finalize(q);
    }
    if (err < 0) {
        if (started) {   /* the kernel was only for this session */
            char msg[512];
            snprintf(msg, sizeof(msg), "%s", ed_error_last());
            kh_kernel_shutdown(req->srv, req->auth.user_id, kid, NULL);
            err = ed_error_set(err, "%s", msg);
        }
        return err;
    }
    if ((err = session_find(&v, req, id)) < 0)
        return err;
    gw_response_header(res, "Location", ed_arena_printf(req->arena, "/api/sessions/%s", v.id));
    return respond(res, 201, session_model(req, &v));
}

int jup__get_session(gw_request *req, gw_response *res)
{
    sess_view v;
    int err;

    if ((err = session_find(&v, req, req->params[0])) < 0)
        return err;
    return respond(res, 200, session_model(req, &v));
}

int jup__update_session(gw_request *req, gw_response *res)
{
    json_t *body;
    const char *path, *name, *type;
    char kid[KH_ID_LEN] = "", old_kid[KH_ID_LEN] = "";
    bool started = false;
    sess_view v;
    sqlite3_stmt *q;
    int rc, err;

    if ((err = gw_request_json(&body, req)) < 0)
        return err;
    if ((err = opt_string(&path, body, "path")) < 0 || (err = opt_string(&name, body, "name")) < 0 ||
        (err = opt_string(&type, body, "type")) < 0)
        return err;
    if ((err = session_find(&v, req, req->params[0])) < 0)
        return err;
    if (json_object_get(body, "kernel") != NULL && (err = session_kernel(kid, &started, req, body)) < 0)
        return err;
    if (kid[0] && strcmp(kid, v.kernel_id) != 0)
        snprintf(old_kid, sizeof(old_kid), "%s", v.kernel_id);
    if ((err = ed_store_prepare(&q, req->srv->store,
                                "UPDATE jupyter_sessions SET path = coalesce(?3, path), name = coalesce(?4, name), "
                                "type = coalesce(?5, type), kernel_id = coalesce(?6, kernel_id) "
                                "WHERE id = ?1 AND user_id = ?2")) < 0)
        return err;
    sqlite3_bind_text(q, 1, req->params[0], -1, SQLITE_STATIC);
    sqlite3_bind_int64(q, 2, req->auth.user_id);
    if (path)
        sqlite3_bind_text(q, 3, path, -1, SQLITE_STATIC);
    if (name)
        sqlite3_bind_text(q, 4, name, -1, SQLITE_STATIC);
    if (type)
        sqlite3_bind_text(q, 5, type, -1, SQLITE_STATIC);
    if (kid[0])
        sqlite3_bind_text(q, 6, kid, -1, SQLITE_STATIC);
    rc = sqlite3_step(q);
    err = rc == SQLITE_DONE ? 0 : ed_store_error(ed_store_db(req->srv->store), rc, "session");
    sqlite3_finalize(q);
    if (err < 0)
        return err;
    /* A kernel replaced by a new one started by name is shut down, as Jupyter does. */
    if (old_kid[0] && started)
        if (kh_kernel_shutdown(req->srv, req->auth.user_id, old_kid, NULL) < 0)
            ed_error_clear();
    if ((err = session_find(&v, req, req->params[0])) < 0)
        return err;
    return respond(res, 200, session_model(req, &v));
}

int jup__delete_session(gw_request *req, gw_response *res)
{
    sess_view v;
    sqlite3_stmt *q;
    int rc, err;

    if ((err = session_find(&v, req, req->params[0])) < 0)
        return err;
    if ((err = ed_store_prepare(&q, req->srv->store,
                                "DELETE FROM jupyter_sessions WHERE id = ?1 AND user_id = ?2")) < 0)
        return err;
    sqlite3_bind_text(q, 1, v.id, -1, SQLITE_STATIC);
    sqlite3_bind_int64(q, 2, req->auth.user_id);
    rc = sqlite3_step(q);
    err = rc == SQLITE_DONE ? 0 : ed_store_error(ed_store_db(req->srv->store), rc, "session");
    sqlite3_finalize(q);
    if (err < 0)
        return err;
    err = kh_kernel_shutdown(req->srv, req->auth.user_id, v.kernel_id, NULL);
    if (err < 0 && err != ED_ENOTFOUND)
        return err;
    ed_error_clear();
    return gw_respond_empty(res, 204);
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
    {"GET", "/api/kernels/{id}/channels", kernel_channels, X | GW_AUTH_QUERY_TOKEN,
     "Jupyter: the kernel's channels as a WebSocket (JSON or v1.kernel.websocket.jupyter.org)"},
    {"GET", "/api/sessions", jup__list_sessions, R, "Jupyter: my sessions"},
    {"POST", "/api/sessions", jup__create_session, X, "Jupyter: create a session {path, name, type, kernel}"},
    {"GET", "/api/sessions/{id}", jup__get_session, R, "Jupyter: one session"},
    {"PATCH", "/api/sessions/{id}", jup__update_session, X, "Jupyter: rename or change a session's kernel"},
    {"DELETE", "/api/sessions/{id}", jup__delete_session, X, "Jupyter: delete a session and its kernel"},
    {"GET", "/api/contents", jup__contents_get, R, "Jupyter: the default project's root directory"},
    {"GET", "/api/contents/{path*}", jup__contents_get, R,
     "Jupyter: a file, notebook or directory model (or .../checkpoints)"},
    {"PUT", "/api/contents/{path*}", jup__contents_put, W, "Jupyter: save a model"},
    {"POST", "/api/contents", jup__contents_post, W, "Jupyter: new untitled file, notebook or folder"},
    {"POST", "/api/contents/{path*}", jup__contents_post, W,
     "Jupyter: new untitled in a folder, copy, or checkpoint (.../checkpoints[/{id}])"},
    {"PATCH", "/api/contents/{path*}", jup__contents_patch, W, "Jupyter: rename {path}"},
    {"DELETE", "/api/contents/{path*}", jup__contents_delete, W,
     "Jupyter: delete a file or directory (checkpoints are versions and stay)"},
    {NULL, NULL, NULL, 0, NULL},
};
