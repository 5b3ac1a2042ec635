/*
 * gw_int.h - private to gateway/: requests, responses, routes, auth context.
 *
 * A handler is a plain function over a parsed request:
 *
 *     static int get_me(gw_request *req, gw_response *res)
 *     {
 *         json_t *body = json_pack("{s:I}", "id", (json_int_t)req->auth.user_id);
 *         return gw_respond_json(res, 200, body);
 *     }
 *
 * It returns 0 after filling `res`, or a negative ED_E* code after
 * ed_error_set(); the core then answers with API.md's error body, mapping the
 * code to a status in one table (gw__status_for). Everything a handler
 * allocates for the request lives in req->arena.
 *
 * Routes are declared in per-area tables (gw__routes_meta, gw__routes_auth,
 * ...), listed once in routes.c. The core matches the route, authenticates the
 * caller according to the route's flags (gw__auth_authenticate, in auth.c),
 * then calls the handler.
 */
#ifndef GW_INT_H
#define GW_INT_H

#include "gw.h"

#include "ed_arena.h"
#include "ed_json.h"
#include "ed_store.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct MHD_Connection;
struct proj_root;

#define GW_MAX_PARAMS 8

/* Route flags: who may call it. */
enum {
    GW_PUBLIC       = 0,        /* no authentication (healthz, login, signup) */
    GW_AUTH         = 1u << 0,  /* a session cookie or an API key is required */
    GW_AUTH_OPTIONAL = 1u << 1, /* authenticate if credentials are given; without: user_id 0 (a stranger), limited per address (auth.c) */
    GW_AUTH_QUERY_TOKEN = 1u << 2, /* also ?token=<api key> (WebSocket upgrades only: browsers cannot set headers) */
    GW_JUPYTER_XSRF = 1u << 3,  /* cookie callers may send the CSRF token as X-XSRFToken (Jupyter's clients) */
    GW_BODY_STREAM  = 1u << 4,  /* the body is streamed to a sink, never buffered (gw_request_body_sink) */
    GW_SCOPE_READ   = 1u << 8,  /* API keys need this scope (= ACCT_SCOPE_*, checked in auth.c) */
    GW_SCOPE_WRITE  = 1u << 9,
    GW_SCOPE_RUN    = 1u << 10,
    GW_SCOPE_SERVE  = 1u << 11,
    GW_SCOPE_ADMIN  = 1u << 12, /* also requires role admin, whatever the credential */
};

/* Who is calling, filled by gw__auth_authenticate. */
typedef struct gw_auth {
    int64_t     user_id;      /* 0: anonymous */
    const char *username;     /* in req->arena */
    const char *role;         /* "user"|"admin" */
    const char *tier;         /* a tier name (quota/'s tiers table) */
    bool        via_key;      /* API key (true) or session cookie (false) */
    int64_t     key_id;       /* when via_key */
    unsigned    scopes;       /* GW_SCOPE_* the credential carries (cookie: all but admin unless role admin) */
    int64_t     session_id;   /* when !via_key */
} gw_auth;

typedef struct gw_request {
    gw_server              *srv;
    ed_arena               *arena;        /* freed when the response is sent */
    struct MHD_Connection  *conn;
    const char             *method;       /* "GET", "POST", ... */
    const char             *path;         /* URL path, percent-decoded */
    const char             *request_id;   /* also sent as X-Request-Id */
    const char             *ip;           /* client address */
    const char             *body;         /* NUL-terminated copy, or NULL */
    size_t                  body_len;
    const char             *params[GW_MAX_PARAMS]; /* path parameters in pattern order */
    int                     nparams;
    const struct gw_route  *route;
    gw_auth                 auth;
    int                     retry_after_s; /* set with ED_ELIMIT: becomes Retry-After */
    /* Added by the core (server.c); handlers use the accessors instead. */
    const char             *query;        /* raw query string after '?', or NULL */
    int64_t                 start_ns;     /* ed_mono_ns() when the request line arrived */
} gw_request;

typedef struct gw_header {
    struct gw_header *next;
    const char       *name, *value;   /* in the request arena */
} gw_header;

typedef struct gw_response {
    int          status;
    const char  *content_type;   /* default application/json */
    char        *body;           /* malloc'd; handed to libmicrohttpd */
    size_t       body_len;
    gw_header   *headers;
    ed_arena    *arena;          /* the request's */
    void        *upgrade;        /* ws.c: set by gw_ws_accept, the core answers 101 and hands over the socket */
    struct gw_stream *stream;    /* stream.c: set by gw_respond_stream, the body is produced as it comes */
    bool         has_fd;         /* gw_respond_fd: the body is fd_len bytes of fd from fd_off */
    int          fd;             /* owned by the response: closed once sent, or when never queued */
    uint64_t     fd_off, fd_len;
} gw_response;

typedef int (*gw_handler)(gw_request *req, gw_response *res);

typedef struct gw_route {
    const char *method;      /* "GET", ...; NULL ends a table */
    const char *pattern;     /* "/api/v1/projects/{id}/files/{path*}": {x} one segment, {x*} the rest */
    gw_handler  handler;
    unsigned    flags;       /* GW_PUBLIC, GW_AUTH | GW_SCOPE_WRITE, ... */
    const char *summary;     /* one line for /api/v1/openapi.json */
} gw_route;

/* The server's state, shared by every handler (read-only after start, except
 * through the thread-safe objects it points to). */
struct gw_server {
    gw_config          cfg;
    ed_store          *store;
    struct proj_root  *projects;
    void              *mhd;          /* struct MHD_Daemon * */
    int                port;
    bool               tls;          /* serving HTTPS: cookies get Secure */
    struct gw_metrics *metrics;
    struct gw_ratelimit *ratelimit;  /* login and per-key limiters (auth.c) */
    struct sched       *sched;       /* scheduler (sched_routes.c: gw__sched_start/stop) */
    struct kh_hub      *kernels;     /* interactive kernels (kernels/kh.h; server.c: kh_hub_start/stop) */
    struct comp        *competitions; /* competitions/comp.h: opened after datasets (its in-use hook), freed before them */
    struct ds          *datasets;    /* datasets/ds.h: opened before the scheduler (it mounts them), freed after it */
    struct gw_ds_gc    *ds_gc;       /* datasets_gc.c: the store's periodic gc */
    struct serve_hub   *serving;     /* serving/serve.h: deployments (deployments_routes.c: gw__serving_start/stop) */
};

/* sched_routes.c: the output directory of job `job` as `user` may see it,
 * opened without following links (read beneath it with ed_fs). ED_ENOTFOUND
 * for an unknown, invisible or expired job, or one without output. */
int gw__job_output_open(int *out_fd, gw_request *req, int64_t user, int64_t job);

/* sched_routes.c: a job's prepare step (sched_job_spec.prepare): write the
 * project's files, at `version` or (NULL) its working tree, under `work`;
 * the entry must be among them (ED_EUNPROC). */
typedef struct gw_export_ctx {
    struct proj_root *root;
    int64_t           user;
    const char       *project, *version, *entry;
} gw_export_ctx;
int gw__project_export(const char *work, void *payload);

/* body_spool.c: a streamed body spooled to an unnamed file (O_TMPFILE) in
 * `dir`, for routes that hand a whole file to a module once it is in.
 * Writing maps a full disk or quota to ED_EQUOTA, other failures ED_EIO. */
int gw__spool_open(int *out_fd, const char *dir);
int gw__spool_write(int fd, const char *data, size_t n);

/* ---- request accessors (all strings borrowed for the request) ---------- */
const char *gw_request_header(gw_request *req, const char *name);
const char *gw_request_query(gw_request *req, const char *name);
const char *gw_request_cookie(gw_request *req, const char *name);
/* Parse the body as a JSON object; the document is freed with the request.
 * ED_EINVAL with a clear message for a missing, malformed or non-object body. */
int gw_request_json(json_t **out, gw_request *req);
/* ?limit= (default 50, max 500) and ?cursor= for lists. ED_EINVAL if bad. */
int gw_request_page(int *limit, const char **cursor, gw_request *req);
/* gw_request_page for lists paged by id, newest first: the cursor is the id
 * of the last item of the previous page; *before is 0 when there is none.
 * ED_EINVAL "cursor '...' is not one this API gave" for anything but a
 * positive decimal id. Fetch limit + 1 items and answer gw_respond_page. */
int gw_request_page_id(int *limit, int64_t *before, gw_request *req);
/* The checked integer reader every route uses for JSON bodies: member `name`
 * of `obj` as an integer in [min, max] into *out. Absent or null: *out is
 * left as it is and 0 is returned, or ED_EINVAL "field 'name' is required"
 * when `required`. A real (1.5, 1e12), a string ("7"), a boolean, or an
 * integer outside the range: ED_EUNPROC (422) naming the field and the range.
 * (Integers beyond 64 bits never reach it: gw_request_json answers those 422
 * naming the field.) */
int gw_json_int(int64_t *out, const json_t *obj, const char *name, int64_t min, int64_t max,
                bool required);
/* The same check for a value already in hand (`name` labels it in the message). */
int gw__json_int_check(int64_t *out, const json_t *v, const char *name, int64_t min, int64_t max);

/* ---- streamed request bodies (server.c) ---------------------------------- */
/* A route flagged GW_BODY_STREAM has its handler called right after route
 * matching and authentication, before any byte of the body is read (the
 * begin step). The handler checks what it can (the resource exists, the
 * caller may write, Content-Range fits) and either fails (< 0: the error is
 * answered and the body is never read; libmicrohttpd then closes the
 * connection) or calls gw_request_body_sink() and returns 0 without filling
 * `res`. The body then goes to sink->write as libmicrohttpd delivers it (a
 * read buffer at a time: memory is O(chunk) whatever the body's size), and
 * sink->end fills the response once it is all in. sink->abort is called
 * instead of end when the request ends early: the client dropped the
 * connection, a write failed, the server is stopping. Exactly one of end
 * and abort runs, on the connection's thread. The body is bounded by
 * `max_bytes` (413), not by max_body_bytes; the idle and header timeouts
 * apply as to every request. */
typedef struct gw_body_sink {
    /* n > 0 bytes of the body, in order. < 0 (ED_E*, ed_error_set): answered
     * with that error, the rest of the body is not kept. */
    int  (*write)(void *ctx, gw_request *req, const char *data, size_t n);
    /* The whole body arrived: fill `res` like a handler (0, or < 0 ED_E*)
     * and free ctx. */
    int  (*end)(void *ctx, gw_request *req, gw_response *res);
    /* The request ended before end: undo what is half done, free ctx. */
    void (*abort)(void *ctx);
} gw_body_sink;
/* From a GW_BODY_STREAM handler's begin step only: send the body to `sink`
 * with `ctx`. A Content-Length over max_bytes is answered 413 at once (abort
 * is called). ED_EINVAL when the route is not GW_BODY_STREAM. */
int gw_request_body_sink(gw_request *req, const gw_body_sink *sink, void *ctx, int64_t max_bytes);
/* The request's Content-Length: 0 with *out set, or ED_ENOTFOUND when the
 * request has none (chunked), ED_EINVAL when it is not a number. */
int gw_request_content_length(int64_t *out, gw_request *req);

/* ---- responses --------------------------------------------------------- */
/* Each returns 0 so a handler can `return gw_respond_json(...)`. */
int gw_respond_json(gw_response *res, int status, json_t *body);   /* steals body */
int gw_respond_bytes(gw_response *res, int status, const char *content_type,
                     char *buf, size_t len);                       /* takes buf (malloc'd) */
int gw_respond_empty(gw_response *res, int status);
/* Answer `len` bytes of the open regular file `fd` from `off` (takes fd:
 * closed when the response is done, whatever happens). libmicrohttpd sends
 * them with sendfile() where it can (MHD_create_response_from_fd_at_offset64),
 * so the bytes never pass through the server's memory, with a
 * Content-Length; a slow reader costs nothing but the socket. */
int gw_respond_fd(gw_response *res, int status, const char *content_type, int fd, uint64_t off, uint64_t len);
/* 200 {items, next_cursor} for a list paged by id (gw_request_page_id).
 * `items` (taken) was fetched with limit + 1: when it holds more than
 * `limit`, the extra one is dropped and next_cursor is the "id" member of the
 * last kept item, else null. limit <= 0: a complete list, next_cursor null. */
int gw_respond_page(gw_response *res, json_t *items, int limit);
/* 200 {items (taken), next_cursor}: "<next>" when next > 0, else null; for
 * listings that compute their own next id (accounts/'s acct_*_list).
 * ED_ENOMEM when items is NULL or the body cannot be built. */
int gw_respond_items(gw_response *res, json_t *items, int64_t next);
/* Add a response header (name and value copied into the request arena). */
int gw_response_header(gw_response *res, const char *name, const char *value);

/* ---- errors ------------------------------------------------------------ */
/* The HTTP status and API.md code name for an ED_E* code. */
int gw__status_for(int ed_code, const char **api_code);

/* ---- auth (auth.c) ------------------------------------------------------ */
/* Authenticate `req` as its route's flags require: session cookie (+ CSRF
 * token on state-changing methods) or API key (checksum, hash lookup, expiry,
 * revocation, env, scopes, rate limit). Fills req->auth. ED_EAUTH, ED_EPERM or
 * ED_ELIMIT (with req->retry_after_s) with a message. */
int gw__auth_authenticate(gw_request *req, unsigned flags);
/* The Origin rule for cookie callers (run by gw__auth_authenticate for every
 * cookie-authenticated request, and by login and signup): a request without
 * Origin passes; one whose Origin is this server's own (scheme from TLS or,
 * from a trusted proxy, X-Forwarded-Proto; host:port from Host or
 * X-Forwarded-Host) or listed in cfg.allow_origins ("*": any) passes; any
 * other, "null" included, is ED_EPERM (403) saying why. */
int gw__origin_check(gw_request *req);
int  gw__ratelimit_new(struct gw_ratelimit **out);
void gw__ratelimit_free(struct gw_ratelimit *rl);

/* Append an audit row. `detail` (may be NULL) is borrowed JSON. */
int gw__audit(gw_request *req, const char *action, const char *target, json_t *detail);

/* A body's API key env caps per tier {env: {daily_budget_mcoins?,
 * rate_limit_per_min?}} checked before anything is written (quota_routes.c):
 * ED_EUNPROC naming the field. The accounts module stores them
 * (acct_tier_key_envs_put / _json, table tier_key_envs). */
int gw__tier_key_envs_check(const json_t *spec);

/* The GPUs running job or kernel `job_id` holds now, from NVML
 * (kernels_routes.c): [{index, name, utilization_pct, memory_used_mb,
 * memory_total_mb}], unknown figures null, [] when it holds none. */
json_t *gw__job_gpus_json(gw_server *srv, int64_t job_id);

/* Times in responses: RFC 3339 string in the request arena. */
const char *gw__time(gw_request *req, int64_t ms);

/* ---- route tables (NULL-method terminated), listed in routes.c ---------- */
extern const gw_route gw__routes_meta[];      /* meta.c: healthz, metrics, version, openapi */
extern const gw_route gw__routes_auth[];      /* auth_routes.c: signup, login, logout, me, keys, admin users */
extern const gw_route gw__routes_projects[];  /* projects_routes.c */
extern const gw_route gw__routes_files[];     /* files_routes.c: rename and new folders in a project's tree */
extern const gw_route gw__routes_terminals[]; /* terminal_routes.c: terminals in a kernel's sandbox (REST, Jupyter, WebSocket) */
extern const gw_route gw__routes_quota[];     /* quota_routes.c: quota, ledger, grants, verify, tiers */
extern const gw_route gw__routes_sched[];     /* sched_routes.c: resources, jobs, admin overview/tiers/resources */
extern const gw_route gw__routes_static[];    /* static.c: the web app (index.html, assets) */
extern const gw_route gw__routes_datasets[];  /* datasets_routes.c: datasets, draft, uploads, versions, project attachments */
extern const gw_route gw__routes_dataset_files[]; /* dataset_files_routes.c: file downloads (Range, ETag), archives, versions from a job or project */
extern const gw_route gw__routes_competitions[]; /* competitions_routes.c: competitions, truth, teams, submissions, leaderboards, hosts */
extern const gw_route gw__routes_dataset_previews[]; /* dataset_preview_routes.c: previews and stats of a version's files */
extern const gw_route gw__routes_deployments[]; /* deployments_routes.c: deployments, usage, key serve limits */
extern const gw_route gw__routes_serve[];     /* serve_routes.c: POST /serve/{deployment}/predict */
extern const gw_route *const gw__route_tables[];

/* deployments_routes.c: open the serving hub once the scheduler is (it
 * prices replicas by resource class); stop it before the scheduler. */
int  gw__serving_start(gw_server *srv);
void gw__serving_stop(gw_server *srv);

/* sched_routes.c: open the scheduler over srv->store (reconciling what a
 * crash left) once the store is open; close it before the store closes
 * (NULL-safe, idempotent). */
int  gw__sched_start(gw_server *srv);
void gw__sched_stop(gw_server *srv);

/* ---- core internals (router.c, errors.c, config.c) ------------------------ */

/* The outcome of matching a method and raw path against route tables. */
typedef struct gw_route_match {
    const gw_route *route;                 /* NULL when nothing matched */
    const char     *params[GW_MAX_PARAMS]; /* percent-decoded, in the arena */
    int             nparams;
    char            allow[96];             /* methods the path exists under: "GET, PUT" */
} gw_route_match;

/* Match `method` and `raw_path` (still percent-encoded, no query) against the
 * NULL-terminated list of route tables, in order; the first match wins. HEAD
 * also matches GET routes. {x} takes one non-empty segment, {x*} the
 * (non-empty) rest of the path; each is percent-decoded into `a`.
 * 0 with m->route set; ED_ENOTFOUND when no route matches, with m->allow
 * non-empty when the path exists under other methods (405); ED_EINVAL for a
 * malformed escape or an encoded NUL. */
int gw__route_match(gw_route_match *m, const gw_route *const *tables, const char *method,
                    const char *raw_path, ed_arena *a);
/* Percent-decode `n` bytes of `s` into a new arena string; '+' becomes a space
 * when `plus_is_space`. ED_EINVAL for a bad escape or %00, ED_ENOMEM. */
int gw__pct_decode(char **out, ed_arena *a, const char *s, size_t n, bool plus_is_space);

/* Fill `res` with API.md's error body for `ed_code` and `message` (for 500s
 * the message is replaced by a generic one). Sets Retry-After for ED_ELIMIT. */
int gw__respond_error(gw_response *res, gw_request *req, int ed_code, const char *message);

/* config.c: one "key = value" setting (also used for EDDY_* variables).
 * ED_EINVAL naming the key for an unknown key or a bad value. */
int gw__config_set(gw_config *c, const char *key, const char *value);

/* ---- WebSocket (ws.c) ----------------------------------------------------- */
/* RFC 6455 over libmicrohttpd's upgrade. A handler that accepts a WebSocket
 * calls gw_ws_accept(); the core answers 101 with MHD_create_response_for_upgrade
 * (res->upgrade) and hands the socket to ws.c, whose few event-loop threads
 * serve every connection (read frames, answer pings, call the gw_ws_handler).
 * Sends are thread-safe and never wait for the peer. */
typedef struct gw_ws gw_ws;

enum {
    GW_WS_CONT = 0x0, GW_WS_TEXT = 0x1, GW_WS_BINARY = 0x2,
    GW_WS_CLOSE = 0x8, GW_WS_PING = 0x9, GW_WS_PONG = 0xA,
};

typedef struct gw_ws_handler {
    /* Once, before the first message (on the libmicrohttpd worker that
     * upgraded the connection). Non-zero: close 1011. */
    int  (*on_open)(gw_ws *ws, void *payload);
    /* One whole message (GW_WS_TEXT or GW_WS_BINARY), borrowed for the call,
     * on the connection's event loop: must not block for long (it delays the
     * other connections on that loop). Non-zero: close (1008 for ED_EINVAL,
     * else 1011). */
    int  (*on_message)(gw_ws *ws, int opcode, const uint8_t *data, size_t len, void *payload);
    /* Exactly once, last, whether or not the connection ever opened (ws is
     * then NULL); frees payload. On a reaper thread: it may block (join a
     * thread). No gw_ws_send or gw_ws_wake on this ws after it returns. */
    void (*on_close)(gw_ws *ws, void *payload);
} gw_ws_handler;

/* Check `req` is a WebSocket handshake (GET, Upgrade: websocket, Connection:
 * upgrade, Sec-WebSocket-Version 13, a 16-byte base64 Sec-WebSocket-Key) and
 * fill `res` with the 101 answer. `subprotocols` (NULL-terminated, may be NULL)
 * are ours in order of preference; the first one the client offers is chosen
 * and put in *chosen (NULL when none: the answer has no Sec-WebSocket-Protocol).
 * On success the connection owns `payload` and h->on_close will be called; on
 * error (ED_EINVAL: not a valid handshake; ED_ENOMEM) the caller keeps it. */
int gw_ws_accept(const char **chosen, gw_request *req, gw_response *res,
                 const char *const *subprotocols, const gw_ws_handler *h, void *payload);
/* Send one whole message or a control frame. Thread-safe; never waits for the
 * peer: what the socket does not take at once is copied to the connection's
 * queue and written by its loop. ED_EIO when the connection is closing or
 * gone, or when the queue is over its bound (16 MiB): the queue is then
 * dropped and the connection closed with 1008 (logged as ws.slow_peer). A
 * peer that reads nothing for 10 s while frames wait is dropped. */
int gw_ws_send(gw_ws *ws, int opcode, const void *data, size_t len);
/* Event-driven producers, instead of a thread per connection: on_open sets
 * `on_wake` (NULL: none); afterwards gw_ws_wake() (thread-safe, cheap, never
 * blocks: fit for kh_subscribe's wake) asks for on_wake(ws, payload) on the
 * connection's loop, never before on_open returned nor while on_message runs;
 * wakes that arrive before it runs are merged into one call. on_wake also
 * runs when the send queue has been written out. It drains without waiting
 * (kh_sub_next with timeout 0) and gw_ws_send()s, pausing while
 * gw_ws_queued() is large (say over 1 MiB: a slow reader) until the next
 * call; it must not block. */
void gw_ws_set_on_wake(gw_ws *ws, void (*on_wake)(gw_ws *ws, void *payload));
void gw_ws_wake(gw_ws *ws);
/* Run on_wake again in `ms` (for a producer that must poll: a kernel still
 * starting). Only from the connection's own on_wake or on_message. */
void gw_ws_wake_after(gw_ws *ws, int ms);
/* Bytes sent but not yet taken by the socket. Thread-safe. */
size_t gw_ws_queued(gw_ws *ws);
/* Start the close handshake with `code` and a short `reason` (may be NULL);
 * the reader ends once the peer answers or goes away. Thread-safe, idempotent. */
int gw_ws_close(gw_ws *ws, int code, const char *reason);
/* The subprotocol chosen at the handshake, or NULL. */
const char *gw_ws_protocol(const gw_ws *ws);
/* Close every open WebSocket (1001 going away) and wait up to `timeout_ms`
 * for them to end (their on_close to return); past half of it, sockets whose
 * peer did not answer are shut down. gw_server_stop calls it before the
 * daemon stops. */
void gw__ws_stop_all(int timeout_ms);
/* WebSockets open now, and closed so far because the peer did not read (for /metrics). */
void gw__ws_counts(long long *open, long long *slow_closes);
/* For tests: serve the connected stream socket `fd` as an upgraded WebSocket
 * (no handshake; client frames must be masked) on the event loops, as if
 * libmicrohttpd had handed it over; the connection closes fd at the end. On
 * error (ED_ENOMEM, ED_EIO) the caller keeps fd and payload. */
int gw__ws_serve_fd(int fd, const gw_ws_handler *h, void *payload);
/* server.c: answer a request whose res->upgrade is set (101 + hand-over). */
struct MHD_Response *gw__ws_mhd_response(gw_response *res);

/* The codec, exposed for the unit tests. */
#define GW_WS_MAX_MESSAGE (16u << 20)   /* bytes; larger frames or messages close 1009 */
typedef struct gw_ws_parser {
    size_t   max_message;   /* bytes; 0 means GW_WS_MAX_MESSAGE */
    bool     require_mask;  /* server side: an unmasked client frame is 1002 */
    int      msg_opcode;    /* opcode of a fragmented message in progress, 0 if none */
    uint8_t *msg;           /* its bytes so far (malloc'd) */
    size_t   msg_len, msg_cap;
} gw_ws_parser;

typedef struct gw_ws_event {
    int            opcode;      /* GW_WS_TEXT|BINARY (a whole message), CLOSE, PING, PONG */
    const uint8_t *data;        /* borrowed until the next parse or gw__ws_parser_free */
    size_t         len;
    int            close_code;  /* CLOSE: the peer's code (1005 if none); on error: the code to send */
} gw_ws_event;

/* Parse at most one frame from buf[0..len) (unmasked in place). *consumed is
 * what was used (0 when the frame is incomplete). 1: *ev holds an event; 0:
 * nothing yet (incomplete, or a non-final fragment was absorbed); ED_EINVAL
 * (ev->close_code 1002 protocol error or 1007 bad UTF-8) or ED_ETOOBIG (1009). */
int gw__ws_parse(gw_ws_event *ev, gw_ws_parser *p, uint8_t *buf, size_t len, size_t *consumed);
void gw__ws_parser_free(gw_ws_parser *p);
/* Write a frame header for `len` payload bytes into out (2..14 bytes); mask
 * NULL for a server frame, else the 4 masking bytes. Returns its length. */
size_t gw__ws_frame_header(uint8_t out[14], int opcode, bool fin, uint64_t len, const uint8_t *mask);
/* Sec-WebSocket-Accept for a client key: base64(SHA-1(key + GUID)).
 * ED_EINVAL unless the key is base64 of 16 bytes. */
int gw__ws_accept_key(char out[29], const char *client_key);
/* SHA-1 (for the handshake only). */
void gw__sha1(uint8_t out[20], const void *data, size_t n);
/* True when s[0..n) is valid UTF-8. */
bool gw__utf8_valid(const uint8_t *s, size_t n);

/* ---- streaming responses (stream.c) ------------------------------------------- */
/* A response whose body is produced as it comes (Server-Sent Events): the
 * core answers with MHD_create_response_from_callback; when the producer has
 * nothing, the connection is suspended (no thread is held) until
 * gw_stream_wake() or the next heartbeat (an SSE comment ": hb" every
 * `heartbeat_ms`, 15 s when 0), which is also how a client that went away is
 * noticed. */
typedef struct gw_stream gw_stream;
/* Write at most `max` bytes of body into `buf`: > 0 bytes written, 0 nothing
 * now (suspend until woken), < 0 the end of the body. On an MHD thread, one
 * call at a time per stream. */
typedef long (*gw_stream_fill)(void *payload, char *buf, size_t max);
/* Make `res` a streaming response. `release(payload)` is called exactly
 * once, when the response is done (the client went away or the body ended);
 * after it returns no wake may reach the stream. *out (may be NULL) gets the
 * stream for gw_stream_wake. On error the caller keeps payload. */
int gw_respond_stream(gw_stream **out, gw_response *res, gw_request *req, int status,
                      const char *content_type, int heartbeat_ms, gw_stream_fill fill,
                      void (*release)(void *payload), void *payload);
/* New data for the stream: resume it if suspended. Thread-safe. */
void gw_stream_wake(gw_stream *st);
/* For producers that cannot signal new data (a growing file): ask again
 * every `poll_ms` while there is nothing (0: only on wakes). Thread-safe. */
void gw_stream_set_poll(gw_stream *st, int poll_ms);
/* server.c: the MHD response for res->stream. */
struct MHD_Response *gw__stream_mhd_response(gw_response *res);
/* End every open stream (their producers are released); gw_server_stop
 * calls it before the daemon stops. */
void gw__stream_stop_all(void);

/* kernels_routes.c: /api/v1/kernels (the kernels module, kernels/kh.h, does the work). */
extern const gw_route gw__routes_kernels[];

/* jupyter_routes.c: Jupyter Server's REST API and kernel channels. */
extern const gw_route gw__routes_jupyter[];

#endif
