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
    GW_AUTH_OPTIONAL = 1u << 1, /* authenticate if credentials are given */
    GW_SCOPE_READ   = 1u << 8,  /* API keys need this scope */
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
    const char *tier;         /* "free"|"pro"|"premium" */
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
};

/* ---- request accessors (all strings borrowed for the request) ---------- */
const char *gw_request_header(gw_request *req, const char *name);
const char *gw_request_query(gw_request *req, const char *name);
const char *gw_request_cookie(gw_request *req, const char *name);
/* Parse the body as a JSON object; the document is freed with the request.
 * ED_EINVAL with a clear message for a missing, malformed or non-object body. */
int gw_request_json(json_t **out, gw_request *req);
/* ?limit= (default 50, max 500) and ?cursor= for lists. ED_EINVAL if bad. */
int gw_request_page(int *limit, const char **cursor, gw_request *req);

/* ---- responses --------------------------------------------------------- */
/* Each returns 0 so a handler can `return gw_respond_json(...)`. */
int gw_respond_json(gw_response *res, int status, json_t *body);   /* steals body */
int gw_respond_bytes(gw_response *res, int status, const char *content_type,
                     char *buf, size_t len);                       /* takes buf (malloc'd) */
int gw_respond_empty(gw_response *res, int status);
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
int  gw__ratelimit_new(struct gw_ratelimit **out);
void gw__ratelimit_free(struct gw_ratelimit *rl);

/* Append an audit row. `detail` (may be NULL) is borrowed JSON. */
int gw__audit(gw_request *req, const char *action, const char *target, json_t *detail);

/* Times in responses: RFC 3339 string in the request arena. */
const char *gw__time(gw_request *req, int64_t ms);

/* ---- route tables (NULL-method terminated), listed in routes.c ---------- */
extern const gw_route gw__routes_meta[];      /* meta.c: healthz, metrics, version, openapi */
extern const gw_route gw__routes_auth[];      /* auth_routes.c: signup, login, logout, me, keys, admin users */
extern const gw_route gw__routes_projects[];  /* projects_routes.c */
extern const gw_route gw__routes_quota[];     /* quota_routes.c: quota, ledger, grants, verify, tiers */
extern const gw_route gw__routes_sched[];     /* sched_routes.c: resources, jobs, admin overview/tiers/resources */
extern const gw_route gw__routes_static[];    /* static.c: the web app (index.html, assets) */
extern const gw_route *const gw__route_tables[];

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

#endif
