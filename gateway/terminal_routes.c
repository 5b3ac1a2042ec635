/*
 * terminal_routes.c - terminals: a shell in a kernel's sandbox (kernels/
 * terminal.c over eddy-kernel's ptys), over Eddy's REST API, Jupyter
 * Server's /api/terminals and a WebSocket speaking terminado's protocol
 * (what JupyterLab's terminal and xterm.js pages speak):
 *
 *   POST   /api/v1/kernels/{id}/terminals           {name?, cwd?, rows?, cols?} -> 201 {name, kernel_id, ...}
 *   GET    /api/v1/kernels/{id}/terminals           {items: [...]}
 *   GET    /api/v1/kernels/{id}/terminals/{name}
 *   DELETE /api/v1/kernels/{id}/terminals/{name}    204
 *   GET    /api/v1/kernels/{id}/terminals/{name}/ws WebSocket
 *   GET    /api/terminals                           [{name, last_activity}]
 *   POST   /api/terminals                           {name?, cwd?, kernel_id?}: without kernel_id the
 *                                                   caller's newest running kernel, else 409
 *   GET    /api/terminals/{name}, DELETE /api/terminals/{name}
 *   GET    /terminals/websocket/{name}              WebSocket
 *
 * The WebSocket's text frames are JSON arrays: from the client ["stdin", s]
 * and ["set_size", rows, cols, ...]; from the server ["setup", {}] first,
 * ["stdout", s] (the replay of the last 64 KiB, then what comes) and
 * ["disconnect", 1] when the shell ends. Like the kernel channels, a
 * connection has no thread: the hub's wake puts on_wake on the event loop,
 * which drains the subscription while the socket's queue is short; a client
 * that reads too slowly for the ring is closed (1008) and reconnects to
 * the screen. Auth is the kernels': cookie (+ CSRF, Origin) or an API key
 * with scope run (read to list); ?token= on the upgrades. Another user's
 * terminal is 404.
 */
#include "gw_int.h"
#include "kh.h"

#include "ed_error.h"
#include "ed_json.h"
#include "ed_log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { TERM_QUEUE_PAUSE = 256 * 1024, TERM_MSG_MAX = KH_TERM_INPUT_MAX * 6 + 64 };

/* ---- models ------------------------------------------------------------------------ */

static json_t *eddy_model(gw_request *req, const kh_terminal *t)
{
    char ws[160];
    snprintf(ws, sizeof(ws), "/api/v1/kernels/%s/terminals/%s/ws", t->kernel_id, t->name);
    return json_pack("{s:s, s:s, s:s, s:s, s:s}", "name", t->name, "kernel_id", t->kernel_id, "created_at",
                     gw__time(req, t->created_at), "last_activity", gw__time(req, t->last_activity_at), "ws_url", ws);
}

/* Jupyter Server's terminal model, plus which kernel it lives in. */
static json_t *jupyter_model(gw_request *req, const kh_terminal *t)
{
    return json_pack("{s:s, s:s, s:{s:s}}", "name", t->name, "last_activity", gw__time(req, t->last_activity_at),
                     "eddy", "kernel_id", t->kernel_id);
}

static int respond(gw_response *res, int status, json_t *body)
{
    if (body == NULL)
        return ed_error_set(ED_ENOMEM, "response body");
    return gw_respond_json(res, status, body);
}

/* The caller's terminal `name`, in kernel `kernel_id` when that is not NULL. */
static int term_get(kh_terminal *t, gw_request *req, const char *kernel_id, const char *name)
{
    int err = kh_terminal_get(t, req->srv->kernels, req->auth.user_id, name);
    if (err == 0 && kernel_id && strcmp(t->kernel_id, kernel_id) != 0)
        err = ed_error_set(ED_ENOTFOUND, "no terminal '%.40s' in kernel %.40s", name, kernel_id);
    return err;
}

/* An optional body: {name?, cwd?, rows?, cols?, kernel_id?}. */
static int read_open_body(json_t **body, const char **name, const char **cwd, int64_t *rows, int64_t *cols,
                          const char **kernel_id, gw_request *req)
{
    int err;

    *body = NULL;
    if (req->body == NULL || req->body_len == 0)
        return 0;   /* Jupyter clients often send none */
    if ((err = gw_request_json(body, req)) < 0 || (err = ed_json_get_str(name, *body, "name", false)) < 0 ||
        (err = ed_json_get_str(cwd, *body, "cwd", false)) < 0 ||
        (err = gw_json_int(rows, *body, "rows", 1, 1000, false)) < 0 ||
        (err = gw_json_int(cols, *body, "cols", 1, 1000, false)) < 0 ||
        (kernel_id && (err = ed_json_get_str(kernel_id, *body, "kernel_id", false)) < 0))
        return err;
    if (*name && **name == '\0')
        *name = NULL;
    return 0;
}

/* ---- Eddy REST ---------------------------------------------------------------------- */

static int post_terminal(gw_request *req, gw_response *res)
{
    json_t *body;
    const char *name = NULL, *cwd = NULL;
    int64_t rows = 0, cols = 0;
    kh_terminal t;
    int err;

    if ((err = read_open_body(&body, &name, &cwd, &rows, &cols, NULL, req)) < 0)
        return err;
    if ((err = kh_terminal_open(&t, req->srv->kernels, req->auth.user_id, req->params[0], name, cwd, (int)rows,
                                (int)cols)) < 0)
        return err;
    gw__audit(req, "terminal.open", t.kernel_id, NULL);
    return respond(res, 201, eddy_model(req, &t));
}

typedef struct list_ctx {
    gw_request *req;
    json_t     *items;
    bool        jupyter;
} list_ctx;

static int add_term(const kh_terminal *t, void *payload)
{
    list_ctx *c = payload;
    json_t *m = c->jupyter ? jupyter_model(c->req, t) : eddy_model(c->req, t);
    return m && json_array_append_new(c->items, m) == 0 ? 0 : ED_ENOMEM;
}

static int list_terminals(gw_request *req, gw_response *res)
{
    kh_kernel k;
    list_ctx c = {req, json_array(), false};
    int err;

    if (c.items == NULL)
        return ed_error_set(ED_ENOMEM, "terminals");
    if ((err = kh_kernel_get(&k, req->srv->kernels, req->auth.user_id, req->params[0])) < 0 ||
        (err = kh_terminal_each(req->srv->kernels, req->auth.user_id, k.id, add_term, &c)) < 0) {
        json_decref(c.items);
        return err;
    }
    return respond(res, 200, json_pack("{s:o}", "items", c.items));
}

static int get_terminal(gw_request *req, gw_response *res)
{
    kh_terminal t;
    int err;

    if ((err = term_get(&t, req, req->params[0], req->params[1])) < 0)
        return err;
    return respond(res, 200, eddy_model(req, &t));
}

static int delete_terminal(gw_request *req, gw_response *res)
{
    kh_terminal t;
    int err;

    if ((err = term_get(&t, req, req->params[0], req->params[1])) < 0 ||
        (err = kh_terminal_close(req->srv->kernels, req->auth.user_id, t.name)) < 0)
        return err;
    return gw_respond_empty(res, 204);
}

/* ---- Jupyter Server's /api/terminals -------------------------------------------------- */

typedef struct newest_ctx {
    char id[KH_ID_LEN];
    bool starting;
} newest_ctx;

static int pick_running(const kh_kernel *k, void *payload)
{
    newest_ctx *c = payload;
    if (strcmp(k->status, "idle") == 0 || strcmp(k->status, "busy") == 0) {
        snprintf(c->id, sizeof(c->id), "%s", k->id);
        return 1;   /* newest first: the first running one */
    }
    if (strcmp(k->status, "queued") == 0 || strcmp(k->status, "starting") == 0)
        c->starting = true;
    return 0;
}

static int jupyter_list(gw_request *req, gw_response *res)
{
    list_ctx c = {req, json_array(), true};
    int err;

    if (c.items == NULL)
        return ed_error_set(ED_ENOMEM, "terminals");
    if ((err = kh_terminal_each(req->srv->kernels, req->auth.user_id, NULL, add_term, &c)) < 0) {
        json_decref(c.items);
        return err;
    }
    return gw_respond_json(res, 200, c.items);
}

static int jupyter_create(gw_request *req, gw_response *res)
{
    json_t *body;
    const char *name = NULL, *cwd = NULL, *kid = NULL;
    int64_t rows = 0, cols = 0;
    newest_ctx nc = {{0}, false};
    kh_terminal t;
    int err;

    if ((err = read_open_body(&body, &name, &cwd, &rows, &cols, &kid, req)) < 0)
        return err;
    if (kid == NULL) {
        if ((err = kh_kernel_each(req->srv->kernels, req->auth.user_id, false, pick_running, &nc)) < 0)
            return err;
        if (nc.id[0] == '\0')
            return ed_error_set(ED_ECONFLICT, nc.starting ? "your kernel is still starting: try again in a moment"
                                                          : "a terminal runs inside a kernel's sandbox: start a "
                                                            "kernel first (POST /api/kernels)");
        kid = nc.id;
    }
    if ((err = kh_terminal_open(&t, req->srv->kernels, req->auth.user_id, kid, name, cwd, (int)rows,
                                (int)cols)) < 0)
        return err;
    gw__audit(req, "terminal.open", t.kernel_id, NULL);
    return respond(res, 200, jupyter_model(req, &t));   /* jupyter_server answers 200 */
}

static int jupyter_get(gw_request *req, gw_response *res)
{
    kh_terminal t;
    int err;

    if ((err = term_get(&t, req, NULL, req->params[0])) < 0)
        return err;
    return respond(res, 200, jupyter_model(req, &t));
}

static int jupyter_delete(gw_request *req, gw_response *res)
{
    int err;

    if ((err = kh_terminal_close(req->srv->kernels, req->auth.user_id, req->params[0])) < 0)
        return err;
    return gw_respond_empty(res, 204);
}

/* ---- the WebSocket (terminado's protocol) -------------------------------------------- */

typedef struct tws {
    gw_server   *srv;
    int64_t      user_id;
    char         name[KH_TERM_NAME_MAX + 1];
    gw_ws       *ws;
    kh_term_sub *sub;
    bool         done;
} tws;

static int send_array(gw_ws *ws, json_t *a)
{
    char *s;
    int err;

    if (a == NULL || (s = json_dumps(a, JSON_COMPACT)) == NULL) {
        json_decref(a);
        return ed_error_set(ED_ENOMEM, "terminal frame");
    }
    json_decref(a);
    err = gw_ws_send(ws, GW_WS_TEXT, s, strlen(s));
    free(s);
    return err;
}

static void tws_ready(void *arg)
{
    gw_ws_wake(((tws *)arg)->ws);
}

static void tws_wake(gw_ws *ws, void *payload)
{
    tws *c = payload;

    while (!c->done) {
        char *data = NULL;
        size_t n = 0;
        int rc;

        if (gw_ws_queued(ws) > TERM_QUEUE_PAUSE)
            return;   /* on_wake runs again once the queue is written out */
        rc = kh_terminal_sub_next(&data, &n, c->sub);
        if (rc == 0)
            return;
        if (rc == 1) {
            json_t *s = json_stringn(data, n);
            free(data);
            if (send_array(ws, json_pack("[s, o]", "stdout", s)) < 0)
                c->done = true;
            continue;
        }
        c->done = true;
        if (rc == ED_ENOTFOUND) {   /* the shell ended */
            send_array(ws, json_pack("[s, i]", "disconnect", 1));
            gw_ws_close(ws, 1000, "terminal ended");
        } else if (rc == ED_ELIMIT) {
            ed_log_info("terminal.slow", "terminal %s: a client fell behind; closing it", c->name);
            gw_ws_close(ws, 1008, "too slow for the terminal's output: reconnect");
        } else {
            gw_ws_close(ws, 1011, "terminal output unavailable");
        }
    }
}

static int tws_open(gw_ws *ws, void *payload)
{
    tws *c = payload;
    int err;

    c->ws = ws;
    gw_ws_set_on_wake(ws, tws_wake);
    if ((err = kh_terminal_subscribe(&c->sub, c->srv->kernels, c->user_id, c->name, tws_ready, c)) < 0)
        return err;
    if ((err = send_array(ws, json_pack("[s, {}]", "setup"))) < 0)
        return err;
    gw_ws_wake(ws);   /* the replay */
    return 0;
}

static int tws_message(gw_ws *ws, int opcode, const uint8_t *data, size_t len, void *payload)
{
    tws *c = payload;
    json_t *m;
    json_error_t je;
    const char *kind;
    int err = 0;

    (void)ws;
    if (opcode != GW_WS_TEXT || len > TERM_MSG_MAX)
        return ed_error_set(ED_EINVAL, "terminal: messages are JSON arrays of at most %d bytes", TERM_MSG_MAX);
    if ((m = json_loadb((const char *)data, len, 0, &je)) == NULL || !json_is_array(m) ||
        (kind = json_string_value(json_array_get(m, 0))) == NULL) {
        json_decref(m);
        return ed_error_set(ED_EINVAL, "terminal: a message is [\"stdin\", text] or [\"set_size\", rows, cols]");
    }
    if (strcmp(kind, "stdin") == 0) {
        const json_t *s = json_array_get(m, 1);
        if (!json_is_string(s))
            err = ed_error_set(ED_EINVAL, "terminal: stdin needs a string");
        else
            err = kh_terminal_input(c->srv->kernels, c->user_id, c->name, json_string_value(s),
                                    json_string_length(s));
    } else if (strcmp(kind, "set_size") == 0) {
        json_int_t rows = json_integer_value(json_array_get(m, 1));
        json_int_t cols = json_integer_value(json_array_get(m, 2));
        if (rows >= 1 && rows <= 1000 && cols >= 1 && cols <= 1000)
            err = kh_terminal_resize(c->srv->kernels, c->user_id, c->name, (int)rows, (int)cols);
    }   /* anything else terminado ignores too */
    json_decref(m);
    if (err == ED_ENOTFOUND || err == ED_ECONFLICT || err == ED_ELIMIT) {
        /* the terminal or its kernel is ending (on_wake says so), or the
         * shell is not reading its input: nothing to close for */
        ed_log_info("terminal.input", "terminal %s: %s", c->name, ed_error_last());
        return 0;
    }
    return err;
}

static void tws_close(gw_ws *ws, void *payload)
{
    tws *c = payload;

    (void)ws;
    kh_terminal_unsubscribe(c->sub);   /* no tws_ready after it */
    free(c);
}

static const gw_ws_handler tws_handler = {tws_open, tws_message, tws_close};

static int accept_ws(gw_request *req, gw_response *res, const char *kernel_id, const char *name)
{
    kh_terminal t;
    const char *chosen;
    tws *c;
    int err;

    if ((err = term_get(&t, req, kernel_id, name)) < 0)
        return err;
    if ((c = calloc(1, sizeof(*c))) == NULL)
        return ed_error_set(ED_ENOMEM, "terminal connection");
    c->srv = req->srv;
    c->user_id = req->auth.user_id;
    snprintf(c->name, sizeof(c->name), "%s", t.name);
    if ((err = gw_ws_accept(&chosen, req, res, NULL, &tws_handler, c)) < 0) {
        free(c);
        return err;
    }
    return 0;
}

static int eddy_ws(gw_request *req, gw_response *res)
{
    return accept_ws(req, res, req->params[0], req->params[1]);
}

static int jupyter_ws(gw_request *req, gw_response *res)
{
    return accept_ws(req, res, NULL, req->params[0]);
}

/* ---- routes ------------------------------------------------------------------------- */

#define R  (GW_AUTH | GW_SCOPE_READ)
#define X  (GW_AUTH | GW_SCOPE_RUN)
#define JR (R | GW_JUPYTER_XSRF)
#define JX (X | GW_JUPYTER_XSRF)

const gw_route gw__routes_terminals[] = {
    {"POST", "/api/v1/kernels/{id}/terminals", post_terminal, X,
     "Open a terminal (a shell in the kernel's sandbox) {name?, cwd?, rows?, cols?}"},
    {"GET", "/api/v1/kernels/{id}/terminals", list_terminals, R, "The kernel's terminals"},
    {"GET", "/api/v1/kernels/{id}/terminals/{name}", get_terminal, R, "One terminal"},
    {"DELETE", "/api/v1/kernels/{id}/terminals/{name}", delete_terminal, X,
     "Close a terminal (its shell and what it started end)"},
    {"GET", "/api/v1/kernels/{id}/terminals/{name}/ws", eddy_ws, X | GW_AUTH_QUERY_TOKEN,
     "A terminal as a WebSocket (terminado's protocol: [\"stdin\", s], [\"set_size\", rows, cols]; "
     "[\"setup\", {}], [\"stdout\", s], [\"disconnect\", 1])"},
    {"GET", "/api/terminals", jupyter_list, JR, "Jupyter: my terminals"},
    {"POST", "/api/terminals", jupyter_create, JX,
     "Jupyter: open a terminal {name?, cwd?, kernel_id?} (default: my newest running kernel)"},
    {"GET", "/api/terminals/{name}", jupyter_get, JR, "Jupyter: one terminal"},
    {"DELETE", "/api/terminals/{name}", jupyter_delete, JX, "Jupyter: close a terminal"},
    {"GET", "/terminals/websocket/{name}", jupyter_ws, JX | GW_AUTH_QUERY_TOKEN,
     "Jupyter: a terminal as a WebSocket (terminado's protocol)"},
    {NULL, NULL, NULL, 0, NULL},
};
