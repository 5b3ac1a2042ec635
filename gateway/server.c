/*
 * server.c - the HTTP core over libmicrohttpd: one request's life.
 *
 *   uri_log        request line read: arena + raw URI (before any decoding)
 *   on_request #1  headers read: request id, limits (431, 413), route (404,
 *                  405), authentication; an early answer is queued here so a
 *                  rejected body is never read
 *   on_request #n  body chunks, capped at max_body_bytes (413)
 *   on_request end the handler runs; its result or error becomes the response
 *   (GW_BODY_STREAM routes: the handler runs at #1, after authentication, and
 *   hands the body to a sink, chunk by chunk: see gw_request_body_sink)
 *   on_completed   access log line, metrics, the arena is freed
 *
 * Threads: libmicrohttpd's pool (cfg.threads, poll); a connection stays on
 * one worker, so a request's callbacks never run concurrently.
 */
#include "gw_int.h"
#include "metrics.h"
#include "kh.h"
#include "proj.h"
#include "ds.h"
#include "datasets_int.h"
#include "competitions_int.h"

#include "ed_buf.h"
#include "ed_crypto.h"
#include "ed_error.h"
#include "ed_log.h"
#include "ed_time.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <microhttpd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

/* How long gw_server_stop waits for in-flight requests after it stops
 * accepting; past this, libmicrohttpd closes what is left. */
#define GW_DRAIN_TIMEOUT_MS 30000
#define GW_NOFILE_MAX       1048576  /* RLIMIT_NOFILE is raised to the hard limit, at most this */
#define GW_AUTO_CONNS_MAX   32768    /* max_conns 0 (auto): at most this many connections */
#define GW_ADDR_BUCKETS     1024     /* hash buckets of the per-address connection counts */

struct gw_conn;
struct gw_addr;

typedef struct gw_srv {
    gw_server   pub;            /* first: gw_server * and gw_srv * convert */
    int         listen_fd;
    atomic_int  inflight;       /* requests between headers and completion */
    char       *tls_cert_pem;
    char       *tls_key_pem;
    /* Connections (on_connection, accept_policy, the header watchdog). */
    pthread_mutex_t conn_lock;
    pthread_cond_t  watch_cond;
    pthread_t       watch_thread;
    bool            watch_started, watch_stop;
    struct gw_conn *conns;      /* every open connection */
    int             nconns;
    struct gw_addr *addrs[GW_ADDR_BUCKETS]; /* connections per address */
    int             naddrs;     /* addresses with a connection open */
    int             refused_since_log;
    int64_t         refused_log_ns;
} gw_srv;

/* One request; lives in its own arena. */
typedef struct gw_rq {
    gw_request  req;
    gw_response res;
    ed_buf      body;
    const char *raw_path;       /* still percent-encoded */
    const char *route_label;    /* metrics/log label: a pattern or "unmatched" */
    int64_t     discarded;      /* body bytes dropped after the limit */
    /* GW_BODY_STREAM: where the body goes (gw_request_body_sink). */
    const gw_body_sink *sink;
    void       *sink_ctx;       /* until end or abort ran: then NULL with sink */
    int64_t     sink_max, sink_bytes;
    int         sink_err;       /* a write failed mid-body: answered at the end */
    const char *sink_msg;       /* its message (arena) */
    int         status;         /* what was queued */
    bool        started, queued, too_big, tried_early;
    bool        headers_phase;  /* inside on_headers */
    bool        pending;        /* answer ready, sent at the end of a bodiless request */
    char        request_id[72];
    char        ip[INET6_ADDRSTRLEN];
} gw_rq;

static void conn_request_line(struct MHD_Connection *conn, const gw_srv *s);
static int64_t secs_ns(int s) { return (int64_t)s * 1000000000; }
static void conn_set_deadline(struct MHD_Connection *conn, int64_t deadline_ns);
static void conn_mark_upgraded(struct MHD_Connection *conn);

/* ---- responses ------------------------------------------------------------ */

static bool has_header(const gw_response *res, const char *name)
{
    for (const gw_header *h = res->headers; h; h = h->next)
        if (strcasecmp(h->name, name) == 0)
            return true;
    return false;
}

/* Hand r->res to libmicrohttpd with the headers every response carries. */
static enum MHD_Result queue(gw_rq *r)
{
    gw_response *res = &r->res;
    struct MHD_Response *mr;
    enum MHD_Result ok;

    if (res->status < 100 || res->status > 599) {
        ed_log_error("http.bad_status", "handler set status %d; answering 500", res->status);
        gw__respond_error(res, &r->req, ED_EINTERNAL, "handler set no valid status");
    }
    if (res->upgrade != NULL) {
        conn_mark_upgraded(r->req.conn);  /* no header deadline on a WebSocket */
        mr = gw__ws_mhd_response(res);  /* ws.c: 101 + socket hand-over */
    }
    else if (res->stream != NULL)
        mr = gw__stream_mhd_response(res);  /* stream.c: body produced as it comes */
    else if (res->has_fd) {
        /* libmicrohttpd owns the descriptor from here (sendfile, closed when done) */
        mr = MHD_create_response_from_fd_at_offset64(res->fd_len, res->fd, res->fd_off);
        if (mr == NULL)
            close(res->fd);
        res->has_fd = false;
    }
    else if (res->body != NULL)
        mr = MHD_create_response_from_buffer_with_free_callback(res->body_len, res->body, free);
    else
        mr = MHD_create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT);
    if (mr == NULL)
        return MHD_NO;      /* out of memory: libmicrohttpd closes the connection */
    res->body = NULL;       /* libmicrohttpd frees it now */
    for (const gw_header *h = res->headers; h; h = h->next)
        if (MHD_add_response_header(mr, h->name, h->value) == MHD_NO)
            ed_log_warn("http.header", "response header %s refused (bad characters?)", h->name);
    if (res->body_len > 0 || res->content_type != NULL)
        if (!has_header(res, "Content-Type"))
            MHD_add_response_header(mr, "Content-Type",
                                    res->content_type ? res->content_type : "application/json");
    MHD_add_response_header(mr, "X-Request-Id", r->request_id);
    MHD_add_response_header(mr, "X-Content-Type-Options", "nosniff");
    MHD_add_response_header(mr, "Referrer-Policy", "same-origin");
    if (strncmp(r->raw_path, "/api/", 5) == 0 && !has_header(res, "Cache-Control"))
        MHD_add_response_header(mr, "Cache-Control", "no-store");
    ok = MHD_queue_response(r->req.conn, (unsigned)res->status, mr);
    MHD_destroy_response(mr);
    if (ok == MHD_YES) {
        r->queued = true;
        r->status = res->status;
        /* Counted here, not at completion, so a client that got its answer
         * always finds it in /metrics; the duration ends when it is queued. */
        gw__metrics_observe(r->req.srv->metrics, r->req.method, r->route_label, r->status,
                            (double)(ed_mono_ns() - r->req.start_ns) / 1e9);
    }
    return ok;
}

/* A request with no body is answered at libmicrohttpd's final call, which keeps
 * the connection alive; one with a body is answered at once so the body we
 * refuse is never read (libmicrohttpd then closes the connection). */
static enum MHD_Result answer(gw_rq *r)
{
    if (r->headers_phase) {
        const char *cl = MHD_lookup_connection_value(r->req.conn, MHD_HEADER_KIND,
                                                     MHD_HTTP_HEADER_CONTENT_LENGTH);
        const char *te = MHD_lookup_connection_value(r->req.conn, MHD_HEADER_KIND,
                                                     MHD_HTTP_HEADER_TRANSFER_ENCODING);
        if (te == NULL && (cl == NULL || strcmp(cl, "0") == 0)) {
            r->pending = true;
            return MHD_YES;
        }
    }
    return queue(r);
}

/* An error answer whose status is outside the ED_E* table (405, 431). */
static enum MHD_Result queue_status_error(gw_rq *r, int status, const char *code, const char *msg)
{
    gw_respond_json(&r->res, status,
                    json_pack("{s:{s:s,s:s,s:s}}", "error", "code", code, "message", msg,
                              "request_id", r->request_id));
    return answer(r);
}

static enum MHD_Result queue_error(gw_rq *r, int err)
{
    char msg[1024];

    snprintf(msg, sizeof(msg), "%s", ed_error_last());
    /* Headers a failed handler added (a cookie, say) do not go out. */
    r->res.headers = NULL;
    gw__respond_error(&r->res, &r->req, err, msg);
    return answer(r);
}

/* ---- request set-up --------------------------------------------------------- */

static void *uri_log(void *cls, const char *uri, struct MHD_Connection *conn)
{
    ed_arena *a = ed_arena_new(8192);
    gw_rq *r;
    const char *q;

    conn_request_line(conn, cls);
    if (a == NULL || (r = ed_arena_calloc(a, 1, sizeof(*r))) == NULL) {
        ed_arena_free(a);
        return NULL;        /* on_request answers 503 */
    }
    r->req.srv = cls;
    r->req.arena = a;
    r->res.arena = a;
    r->req.start_ns = ed_mono_ns();
    r->req.method = "?";
    r->route_label = "unmatched";
    if (uri == NULL)
        uri = "";
    q = strchr(uri, '?');
    r->raw_path = ed_arena_strndup(a, uri, q ? (size_t)(q - uri) : strlen(uri));
    if (q)
        r->req.query = ed_arena_strdup(a, q + 1);
    if (r->raw_path == NULL || (q && r->req.query == NULL)) {
        ed_arena_free(a);
        return NULL;
    }
    r->req.path = r->raw_path;
    return r;
}

static bool request_id_ok(const char *s)
{
    size_t n = 0;

    for (; s[n]; n++)
        if (!(isalnum((unsigned char)s[n]) || s[n] == '-' || s[n] == '_' || s[n] == '.'))
            return false;
    return n >= 8 && n <= 64;
}

/* 1 when `ip` is one of the comma-separated addresses in `list`. */
static int ip_in_list(const char *list, const char *ip, size_t iplen)
{
    for (const char *p = list; *p;) {
        size_t n = strcspn(p, ", ");
        if (n == iplen && n > 0 && strncmp(p, ip, n) == 0)
            return 1;
        p += n;
        p += strspn(p, ", ");
    }
    return 0;
}

/* Behind a trusted reverse proxy every peer is the proxy, so per-IP limits
 * (connections, login attempts) would lump all users together. When the peer
 * is listed in trusted_proxies, take the client from X-Forwarded-For: the
 * right-most address that is not itself a trusted proxy. Anything that does
 * not parse as an address is ignored (the peer address stays). */
static void client_behind_proxy(gw_rq *r, struct MHD_Connection *conn)
{
    const char *xff, *end;
    const char *trusted = r->req.srv->cfg.trusted_proxies;

    if (trusted[0] == '\0' || !ip_in_list(trusted, r->ip, strlen(r->ip)))
        return;
    if ((xff = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "X-Forwarded-For")) == NULL)
        return;
    end = xff + strlen(xff);
    while (end > xff) {
        const char *start = end;
        char addr[INET6_ADDRSTRLEN];
        unsigned char bin[sizeof(struct in6_addr)];
        size_t n;

        while (start > xff && start[-1] != ',')
            start--;
        while (start < end && *start == ' ')
            start++;
        n = (size_t)(end - start);
        while (n > 0 && start[n - 1] == ' ')
            n--;
        if (n == 0 || n >= sizeof(addr))
            return;
        memcpy(addr, start, n);
        addr[n] = '\0';
        if (inet_pton(AF_INET, addr, bin) != 1 && inet_pton(AF_INET6, addr, bin) != 1)
            return;
        if (!ip_in_list(trusted, addr, n)) {
            snprintf(r->ip, sizeof(r->ip), "%s", addr);
            return;
        }
        end = start > xff ? start - 1 : xff;
        while (end > xff && end[-1] == ' ')
            end--;
        if (start == xff)
            return;
    }
}

static void fill_identity(gw_rq *r, struct MHD_Connection *conn)
{
    const char *given = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "X-Request-Id");
    const union MHD_ConnectionInfo *ci;

    /* A proxy's id (nginx $request_id) is kept so logs line up end to end. */
    if (given && request_id_ok(given)) {
        snprintf(r->request_id, sizeof(r->request_id), "%s", given);
    } else {
        unsigned char raw[12];
        ed_random_bytes(raw, sizeof(raw));
        for (size_t i = 0; i < sizeof(raw); i++)
            snprintf(r->request_id + 2 * i, 3, "%02x", raw[i]);
    }
    r->req.request_id = r->request_id;
    snprintf(r->ip, sizeof(r->ip), "unknown");
    ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    if (ci && ci->client_addr) {
        const struct sockaddr *sa = ci->client_addr;
        if (sa->sa_family == AF_INET)
            inet_ntop(AF_INET, &((const struct sockaddr_in *)(const void *)sa)->sin_addr, r->ip,
                      sizeof(r->ip));
        else if (sa->sa_family == AF_INET6)
            inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr, r->ip,
                      sizeof(r->ip));
    }
    client_behind_proxy(r, conn);
    r->req.ip = r->ip;
}

/* Bytes of request line and headers as received. */
static size_t header_bytes(gw_rq *r, struct MHD_Connection *conn)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_REQUEST_HEADER_SIZE);

    return ci ? ci->header_size : strlen(r->raw_path);
}

/* ---- streamed bodies (GW_BODY_STREAM) ------------------------------------------ */

int gw_request_content_length(int64_t *out, gw_request *req)
{
    const char *cl = MHD_lookup_connection_value(req->conn, MHD_HEADER_KIND,
                                                 MHD_HTTP_HEADER_CONTENT_LENGTH);
    char *end;
    unsigned long long n;

    if (cl == NULL)
        return ed_error_set(ED_ENOTFOUND, "no Content-Length");
    errno = 0;
    n = strtoull(cl, &end, 10);
    if (errno != 0 || end == cl || *end != '\0' || n > (unsigned long long)INT64_MAX)
        return ed_error_set(ED_EINVAL, "Content-Length '%.40s' is not a number", cl);
    *out = (int64_t)n;
    return 0;
}

int gw_request_body_sink(gw_request *req, const gw_body_sink *sink, void *ctx, int64_t max_bytes)
{
    gw_rq *r = (gw_rq *)(void *)req;   /* req is gw_rq's first member */

    if (req->route == NULL || !(req->route->flags & GW_BODY_STREAM) || r->sink != NULL)
        return ed_error_set(ED_EINTERNAL, "a body sink outside a streaming route's begin step");
    r->sink = sink;
    r->sink_ctx = ctx;
    r->sink_max = max_bytes;
    return 0;
}

/* End the sink without its end step (NULL-safe, once). */
static void sink_abort(gw_rq *r)
{
    if (r->sink != NULL) {
        const gw_body_sink *sk = r->sink;
        void *ctx = r->sink_ctx;
        r->sink = NULL;
        r->sink_ctx = NULL;
        sk->abort(ctx);
    }
}

/* The begin step: the handler runs before the body (see gw_int.h). */
static enum MHD_Result stream_begin(gw_rq *r)
{
    int64_t len;
    int err;

    ed_error_clear();
    err = r->req.route->handler(&r->req, &r->res);
    if (err < 0) {
        sink_abort(r);
        return queue_error(r, err);
    }
    if (r->sink == NULL) {
        if (r->res.status == 0)
            return queue_error(r, ed_error_set(ED_EINTERNAL, "streaming handler for %s set no "
                                                             "sink and no response",
                                               r->route_label));
        return answer(r);
    }
    if (gw_request_content_length(&len, &r->req) == 0 && len > r->sink_max) {
        sink_abort(r);
        return queue_error(r, ed_error_set(ED_ETOOBIG, "request body of %lld bytes is over the "
                                                       "limit of %lld bytes",
                                           (long long)len, (long long)r->sink_max));
    }
    ed_error_clear();
    return MHD_YES;
}

/* Body bytes for the sink. A failure is answered at once when libmicrohttpd
 * lets us queue mid-body; else the rest is drained (a bounded amount) and the
 * error answered at the end, or the connection dropped. */
static enum MHD_Result stream_chunk(gw_rq *r, const char *data, size_t n)
{
    int err = 0;

    if (r->sink_err == 0 && r->sink != NULL) {
        if (r->sink_bytes + (int64_t)n > r->sink_max)
            err = ed_error_set(ED_ETOOBIG, "request body is over the limit of %lld bytes",
                               (long long)r->sink_max);
        else if ((err = r->sink->write(r->sink_ctx, &r->req, data, n)) == 0)
            r->sink_bytes += (int64_t)n;
        if (err < 0) {
            r->sink_err = err;
            r->sink_msg = ed_arena_strdup(r->req.arena, ed_error_last());
            sink_abort(r);
            if (queue_error(r, err) == MHD_YES && r->queued)
                return MHD_YES;
        }
        return MHD_YES;
    }
    r->discarded += (int64_t)n;
    return r->discarded > (INT64_C(1) << 20) ? MHD_NO : MHD_YES;
}

/* The whole body is in: the sink's end step answers. */
static enum MHD_Result stream_end(gw_rq *r)
{
    const gw_body_sink *sk = r->sink;
    void *ctx = r->sink_ctx;
    int err;

    if (r->sink_err < 0) {
        ed_error_set(r->sink_err, "%s", r->sink_msg ? r->sink_msg : "request body refused");
        return queue_error(r, r->sink_err);
    }
    if (sk == NULL)
        return queue_error(r, ed_error_set(ED_EINTERNAL, "no body sink for %s", r->route_label));
    r->sink = NULL;
    r->sink_ctx = NULL;
    ed_error_clear();
    if ((err = sk->end(ctx, &r->req, &r->res)) < 0)
        return queue_error(r, err);
    if (r->res.status == 0)
        return queue_error(r, ed_error_set(ED_EINTERNAL, "body sink for %s set no response",
                                           r->route_label));
    return queue(r);
}

/* First call, headers complete: everything that can refuse the request before
 * its body is read. MHD_YES with r->queued when it was answered already. */
static enum MHD_Result on_headers(gw_rq *r, struct MHD_Connection *conn, const char *method)
{
    gw_server *srv = r->req.srv;
    gw_route_match m;
    const char *cl;
    char *path;
    int err;

    if (header_bytes(r, conn) > (size_t)srv->cfg.max_header_bytes) {
        char msg[128];
        snprintf(msg, sizeof(msg), "request headers are larger than %d bytes",
                 srv->cfg.max_header_bytes);
        return queue_status_error(r, 431, "request_headers_too_large", msg);
    }
    if ((err = gw__pct_decode(&path, r->req.arena, r->raw_path, strlen(r->raw_path), false)) < 0)
        return queue_error(r, err);
    r->req.path = path;
    if ((err = gw__route_match(&m, gw__route_tables, method, r->raw_path, r->req.arena)) < 0) {
        if (err == ED_ENOTFOUND && m.allow[0]) {
            char msg[200];
            if (strcmp(method, "OPTIONS") == 0) {
                gw_respond_empty(&r->res, 204);
                gw_response_header(&r->res, "Allow", m.allow);
                return answer(r);
            }
            snprintf(msg, sizeof(msg), "method %s is not allowed on this path", method);
            gw_response_header(&r->res, "Allow", m.allow);
            gw_respond_json(&r->res, 405,
                            json_pack("{s:{s:s,s:s,s:s}}", "error", "code", "method_not_allowed",
                                      "message", msg, "request_id", r->request_id));
            return answer(r);
        }
        return queue_error(r, err);
    }
    r->req.route = m.route;
    r->route_label = m.route->pattern;
    memcpy(r->req.params, m.params, sizeof(m.params));
    r->req.nparams = m.nparams;
    cl = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
    if (cl != NULL && !(m.route->flags & GW_BODY_STREAM)) {
        char *end;
        errno = 0;
        unsigned long long n = strtoull(cl, &end, 10);
        if (errno == 0 && *end == '\0' && n > (unsigned long long)srv->cfg.max_body_bytes)
            return queue_error(r, ed_error_set(ED_ETOOBIG, "request body of %llu bytes is over "
                                                           "the limit of %lld bytes",
                                               n, (long long)srv->cfg.max_body_bytes));
        /* Reserve what was announced, up to 1 MiB: a client that announces a
         * large body and sends nothing must not pin that much memory. */
        if (errno == 0 && *end == '\0' && n > 0 &&
            ed_buf_reserve(&r->body, (size_t)(n < (1u << 20) ? n : (1u << 20))) < 0)
            return queue_error(r, ed_error_set(ED_EBUSY, "out of memory for the request body"));
    }
    if (m.route->flags & (GW_AUTH | GW_AUTH_OPTIONAL)) {
        ed_error_clear();
        if ((err = gw__auth_authenticate(&r->req, m.route->flags)) < 0)
            return queue_error(r, err);
    }
    if (m.route->flags & GW_BODY_STREAM)
        return stream_begin(r);
    return MHD_YES;
}

static enum MHD_Result run_handler(gw_rq *r)
{
    int err;

    if (r->too_big)
        return queue_error(r, ed_error_set(ED_ETOOBIG, "request body is over the limit of %lld "
                                                       "bytes",
                                           (long long)r->req.srv->cfg.max_body_bytes));
    if (r->body.len > 0) {
        r->req.body = r->body.data;
        r->req.body_len = r->body.len;
    }
    ed_error_clear();
    err = r->req.route->handler(&r->req, &r->res);
    if (err < 0)
        return queue_error(r, err);
    if (r->res.status == 0) {
        ed_error_set(ED_EINTERNAL, "handler for %s %s returned no response", r->req.method,
                     r->route_label);
        return queue_error(r, ED_EINTERNAL);
    }
    return queue(r);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version, const char *upload_data,
                                  size_t *upload_data_size, void **con_cls)
{
    gw_srv *s = cls;
    gw_rq *r = *con_cls;
    enum MHD_Result ret;

    (void)url;
    (void)version;
    if (r == NULL) {
        /* No arena (out of memory): answer 503 without one. */
        static const char busy[] = "{\"error\":{\"code\":\"unavailable\",\"message\":\"out of "
                                   "memory\",\"request_id\":\"\"}}";
        struct MHD_Response *mr = MHD_create_response_from_buffer(sizeof(busy) - 1, (void *)busy,
                                                                  MHD_RESPMEM_PERSISTENT);
        if (mr == NULL)
            return MHD_NO;
        ret = MHD_queue_response(conn, 503, mr);
        MHD_destroy_response(mr);
        return ret;
    }
    if (!r->started) {
        conn_set_deadline(conn, 0);   /* headers complete: the watchdog lets go */
        r->started = true;
        atomic_fetch_add(&s->inflight, 1);
        r->req.conn = conn;
        r->req.method = ed_arena_strdup(r->req.arena, method);
        if (r->req.method == NULL)
            return MHD_NO;
        fill_identity(r, conn);
        ed_log_set_request_id(r->request_id);
        r->headers_phase = true;
        ret = on_headers(r, conn, method);
        r->headers_phase = false;
        ed_log_set_request_id(NULL);
        return ret;
    }
    if (r->pending && !r->queued) {
        if (*upload_data_size > 0) {   /* not expected without a body; drop it */
            *upload_data_size = 0;
            return MHD_YES;
        }
        return queue(r);
    }
    if (r->queued) {
        /* Answered early; libmicrohttpd drops the rest of the body. */
        *upload_data_size = 0;
        return MHD_YES;
    }
    ed_log_set_request_id(r->request_id);
    if (r->req.route != NULL && (r->req.route->flags & GW_BODY_STREAM)) {
        if (*upload_data_size > 0) {
            size_t n = *upload_data_size;
            *upload_data_size = 0;
            ret = stream_chunk(r, upload_data, n);
        } else {
            ret = stream_end(r);
        }
        ed_log_set_request_id(NULL);
        return ret;
    }
    if (*upload_data_size > 0) {
        size_t n = *upload_data_size;
        *upload_data_size = 0;
        ret = MHD_YES;
        if (!r->too_big && (int64_t)(r->body.len + n) > s->pub.cfg.max_body_bytes)
            r->too_big = true;
        if (r->too_big) {
            /* A chunked body past the limit: refuse at once when libmicrohttpd
             * lets us queue mid-body; otherwise drain a bounded amount and
             * answer at the end, or drop the connection. */
            r->discarded += (int64_t)n;
            if (!r->tried_early) {
                r->tried_early = true;
                ed_error_set(ED_ETOOBIG, "request body is over the limit of %lld bytes",
                             (long long)s->pub.cfg.max_body_bytes);
                queue_error(r, ED_ETOOBIG);
            }
            if (!r->queued && r->discarded > s->pub.cfg.max_body_bytes + (INT64_C(1) << 20))
                ret = MHD_NO;
        } else if (ed_buf_append(&r->body, upload_data, n) < 0) {
            ret = queue_error(r, ed_error_set(ED_EBUSY, "out of memory reading the body"));
        }
        ed_log_set_request_id(NULL);
        return ret;
    }
    ret = run_handler(r);
    ed_log_set_request_id(NULL);
    return ret;
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    gw_srv *s = cls;
    gw_rq *r = *con_cls;

    if (r == NULL)
        return;
    *con_cls = NULL;
    if (r->sink != NULL) {
        ed_log_set_request_id(r->request_id);
        sink_abort(r);     /* the client went away (or we stopped) mid-body */
        ed_log_set_request_id(NULL);
    }
    /* Kept alive: the next request's headers are due within the idle
     * allowance, however slowly they trickle in. */
    conn_set_deadline(conn, ed_mono_ns() + secs_ns(s->pub.cfg.conn_timeout_s > s->pub.cfg.header_timeout_s
                                                       ? s->pub.cfg.conn_timeout_s
                                                       : s->pub.cfg.header_timeout_s));
    if (r->started) {
        double secs = (double)(ed_mono_ns() - r->req.start_ns) / 1e9;
        ed_log_set_request_id(r->request_id);
        if (r->queued) {
            ed_log_info("http.request", "method=%s route=%s path=%s status=%d duration_ms=%.3f ip=%s%s",
                        r->req.method, r->route_label, r->req.path, r->status, secs * 1e3, r->ip,
                        toe == MHD_REQUEST_TERMINATED_COMPLETED_OK ? "" : " (not fully sent)");
        } else {
            ed_log_info("http.aborted", "method=%s route=%s path=%s duration_ms=%.3f ip=%s "
                                        "termination=%d",
                        r->req.method, r->route_label, r->req.path, secs * 1e3, r->ip, (int)toe);
        }
        ed_log_set_request_id(NULL);
        atomic_fetch_sub(&s->inflight, 1);
    }
    ed_buf_free(&r->body);
    free(r->res.body);
    if (r->res.has_fd)            /* a file response that was never queued */
        close(r->res.fd);
    ed_arena_free(r->req.arena);  /* r lives in it */
}

/* ---- connections: header timeout, fair shares under the cap -------------------
 *
 * libmicrohttpd's own limits are not enough against many slow clients: its
 * connection timeout is an idle timeout (a client that trickles a byte every
 * few seconds keeps a connection forever), and MHD_OPTION_PER_IP_CONNECTION_LIMIT
 * is a fixed per-address cap, so a few dozen addresses at that cap fill
 * MHD_OPTION_CONNECTION_LIMIT and every new client waits in the listen
 * backlog. So:
 *   - every connection is in a registry (NOTIFY_CONNECTION); a watchdog
 *     thread shuts down one that has not completed its request headers by its
 *     deadline: header_timeout_s after it was accepted or after its request
 *     line arrived, and on a kept-alive connection conn_timeout_s after the
 *     previous answer (the idle allowance), however slowly bytes trickle;
 *   - the accept policy (MHD's apc) counts connections per address (IPv6 per
 *     /64) and refuses one when the address holds max_conns_per_ip, or the
 *     server is past half its cap and the address holds more than its fair
 *     share (the cap less a reserve, divided among the addresses connected),
 *     or the server is in the last eighth (the reserve) and the address
 *     already holds a few; so newcomers always find room. Trusted proxies are
 *     exempt (their connections carry many clients; the proxy must apply its
 *     own header timeout, as nginx's client_header_timeout does); only
 *     MHD_OPTION_CONNECTION_LIMIT (the cap) bounds them. */

#define GW_HDR_WATCH_MS   250   /* the watchdog's period */
#define GW_FAIR_MIN_SHARE 8     /* an address below this many is never refused below the cap */

typedef struct gw_addr {
    struct gw_addr *next;
    unsigned char   key[17];    /* family, then 4 (IPv4) or 8 (IPv6 /64) bytes */
    int             count;      /* connections open from it */
} gw_addr;

struct gw_conn {
    struct gw_conn *next, *prev;
    gw_addr        *addr;        /* NULL: not counted (trusted proxy, unknown family) */
    int             fd;
    atomic_llong    deadline_ns; /* complete headers by then (ed_mono_ns); 0: none */
    atomic_bool     upgraded;    /* the socket belongs to ws.c now */
};

/* The address bucket of a peer: IPv4 (or IPv4-mapped IPv6) whole, IPv6 by its
 * /64 (one host usually holds a whole /64). false for other families. */
static bool addr_key(unsigned char key[17], const struct sockaddr *sa)
{
    memset(key, 0, 17);
    if (sa == NULL)
        return false;
    if (sa->sa_family == AF_INET) {
        key[0] = 4;
        memcpy(key + 1, &((const struct sockaddr_in *)(const void *)sa)->sin_addr, 4);
        return true;
    }
    if (sa->sa_family == AF_INET6) {
        const struct in6_addr *a = &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr;
        if (IN6_IS_ADDR_V4MAPPED(a)) {
            key[0] = 4;
            memcpy(key + 1, a->s6_addr + 12, 4);
        } else {
            key[0] = 6;
            memcpy(key + 1, a->s6_addr, 8);
        }
        return true;
    }
    return false;
}

static unsigned addr_hash(const unsigned char key[17])
{
    uint32_t h = 2166136261u;
    for (int i = 0; i < 17; i++)
        h = (h ^ key[i]) * 16777619u;
    return h % GW_ADDR_BUCKETS;
}

/* Under conn_lock. */
static gw_addr *addr_find(gw_srv *s, const unsigned char key[17], bool create)
{
    unsigned b = addr_hash(key);
    gw_addr *a;

    for (a = s->addrs[b]; a; a = a->next)
        if (memcmp(a->key, key, 17) == 0)
            return a;
    if (!create || (a = calloc(1, sizeof(*a))) == NULL)
        return NULL;
    memcpy(a->key, key, 17);
    a->next = s->addrs[b];
    s->addrs[b] = a;
    s->naddrs++;
    return a;
}

/* Under conn_lock. */
static void addr_release(gw_srv *s, gw_addr *a)
{
    if (a == NULL || --a->count > 0)
        return;
    for (gw_addr **pp = &s->addrs[addr_hash(a->key)]; *pp; pp = &(*pp)->next)
        if (*pp == a) {
            *pp = a->next;
            break;
        }
    s->naddrs--;
    free(a);
}

static bool peer_is_trusted_proxy(const gw_srv *s, const struct sockaddr *sa)
{
    char ip[INET6_ADDRSTRLEN] = "";

    if (s->pub.cfg.trusted_proxies[0] == '\0' || sa == NULL)
        return false;
    if (sa->sa_family == AF_INET)
        inet_ntop(AF_INET, &((const struct sockaddr_in *)(const void *)sa)->sin_addr, ip, sizeof(ip));
    else if (sa->sa_family == AF_INET6)
        inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr, ip,
                  sizeof(ip));
    return ip[0] && ip_in_list(s->pub.cfg.trusted_proxies, ip, strlen(ip));
}

/* libmicrohttpd's accept policy: may this peer open one more connection? */
static enum MHD_Result accept_policy(void *cls, const struct sockaddr *sa, socklen_t len)
{
    gw_srv *s = cls;
    unsigned char key[17];
    const char *why = NULL;
    int cap = s->pub.cfg.max_conns, per_ip = s->pub.cfg.max_conns_per_ip;
    int reserve = cap / 8;   /* the last eighth: for addresses holding few */
    int min_share = per_ip < GW_FAIR_MIN_SHARE ? per_ip : GW_FAIR_MIN_SHARE;
    bool log_now = false;
    int held = 0, total = 0, refused = 0;

    (void)len;
    if (!addr_key(key, sa) || peer_is_trusted_proxy(s, sa))
        return MHD_YES;
    pthread_mutex_lock(&s->conn_lock);
    {
        gw_addr *a = addr_find(s, key, false);
        held = a ? a->count : 0;
        total = s->nconns;
        if (held >= per_ip) {
            why = "per-address limit";
        } else if (held >= min_share && total >= cap - reserve) {
            why = "the server is near its connection cap";
        } else if (held >= min_share && total >= cap / 2 && s->naddrs > 0) {
            int share = (cap - reserve) / s->naddrs;
            if (held >= (share > min_share ? share : min_share))
                why = "fair share of the connection cap";
        }
    }
    if (why) {
        int64_t now = ed_mono_ns();
        s->refused_since_log++;
        if (now - s->refused_log_ns > INT64_C(1000000000)) {
            log_now = true;
            s->refused_log_ns = now;
            refused = s->refused_since_log;
            s->refused_since_log = 0;
        }
    }
    pthread_mutex_unlock(&s->conn_lock);
    if (why) {
        gw__stat_add(GW_STAT_CONN_REFUSED, 1);
        if (log_now) {
            char ip[INET6_ADDRSTRLEN] = "?";
            if (sa->sa_family == AF_INET)
                inet_ntop(AF_INET, &((const struct sockaddr_in *)(const void *)sa)->sin_addr, ip,
                          sizeof(ip));
            else
                inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr,
                          ip, sizeof(ip));
            ed_log_warn("http.conn_refused", "refused a connection from %s (%s: it holds %d, %d "
                                             "open of %d); %d refused in the last second",
                        ip, why, held, total, cap, refused);
        }
        return MHD_NO;
    }
    return MHD_YES;
}

static struct gw_conn *conn_of(struct MHD_Connection *conn)
{
    const union MHD_ConnectionInfo *ci =
        conn ? MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT) : NULL;

    return ci ? ci->socket_context : NULL;
}

static void on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
                          enum MHD_ConnectionNotificationCode code)
{
    gw_srv *s = cls;
    struct gw_conn *c;

    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
        const union MHD_ConnectionInfo *fdi =
            MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
        const union MHD_ConnectionInfo *ai =
            MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
        unsigned char key[17];
        int one = 1;

        /* Small JSON answers go out at once instead of waiting for Nagle. */
        if (fdi)
            setsockopt(fdi->connect_fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        *socket_context = NULL;
        if (fdi == NULL || (c = calloc(1, sizeof(*c))) == NULL)
            return;     /* not watched: libmicrohttpd's idle timeout still applies */
        c->fd = fdi->connect_fd;
        atomic_init(&c->deadline_ns, ed_mono_ns() + secs_ns(s->pub.cfg.header_timeout_s));
        atomic_init(&c->upgraded, false);
        pthread_mutex_lock(&s->conn_lock);
        if (ai && addr_key(key, ai->client_addr) && !peer_is_trusted_proxy(s, ai->client_addr) &&
            (c->addr = addr_find(s, key, true)) != NULL)
            c->addr->count++;
        c->next = s->conns;
        if (s->conns)
            s->conns->prev = c;
        s->conns = c;
        s->nconns++;
        pthread_mutex_unlock(&s->conn_lock);
        gw__stat_add(GW_STAT_CONNECTIONS, 1);
        *socket_context = c;
    } else if (code == MHD_CONNECTION_NOTIFY_CLOSED && (c = *socket_context) != NULL) {
        /* Under conn_lock: the watchdog never shuts down a socket that
         * libmicrohttpd is about to close (and the number be reused). */
        pthread_mutex_lock(&s->conn_lock);
        if (c->prev)
            c->prev->next = c->next;
        else
            s->conns = c->next;
        if (c->next)
            c->next->prev = c->prev;
        s->nconns--;
        addr_release(s, c->addr);
        pthread_mutex_unlock(&s->conn_lock);
        gw__stat_add(GW_STAT_CONNECTIONS, -1);
        *socket_context = NULL;
        free(c);
    }
}

/* The request line arrived: its headers are due within header_timeout_s. */
static void conn_request_line(struct MHD_Connection *conn, const gw_srv *s)
{
    struct gw_conn *c = conn_of(conn);
    int64_t due;

    if (c == NULL)
        return;
    due = ed_mono_ns() + secs_ns(s->pub.cfg.header_timeout_s);
    if (atomic_load(&c->deadline_ns) == 0 || atomic_load(&c->deadline_ns) > due)
        atomic_store(&c->deadline_ns, due);
}

/* Headers complete (0) / answered on a kept-alive connection: the next
 * request's headers are due within the idle allowance. */
static void conn_set_deadline(struct MHD_Connection *conn, int64_t deadline_ns)
{
    struct gw_conn *c = conn_of(conn);

    if (c && !atomic_load(&c->upgraded))
        atomic_store(&c->deadline_ns, deadline_ns);
}

static void conn_mark_upgraded(struct MHD_Connection *conn)
{
    struct gw_conn *c = conn_of(conn);

    if (c) {
        atomic_store(&c->upgraded, true);
        atomic_store(&c->deadline_ns, 0);
    }
}

static void *watchdog_main(void *arg)
{
    gw_srv *s = arg;

    pthread_mutex_lock(&s->conn_lock);
    while (!s->watch_stop) {
        struct timespec ts;
        int64_t now;
        int closed = 0;

        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += GW_HDR_WATCH_MS * 1000000L;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&s->watch_cond, &s->conn_lock, &ts);
        now = ed_mono_ns();
        for (struct gw_conn *c = s->conns; c; c = c->next) {
            int64_t d = atomic_load(&c->deadline_ns);
            if (d != 0 && now > d && !atomic_load(&c->upgraded)) {
                /* libmicrohttpd reads EOF and closes it on its own thread. */
                shutdown(c->fd, SHUT_RDWR);
                atomic_store(&c->deadline_ns, 0);
                closed++;
            }
        }
        if (closed) {
            pthread_mutex_unlock(&s->conn_lock);
            gw__stat_add(GW_STAT_HEADER_TIMEOUTS, closed);
            ed_log_warn("http.header_timeout", "closed %d connection%s that sent no complete "
                                               "request headers in time (header_timeout_s %d)",
                        closed, closed == 1 ? "" : "s", s->pub.cfg.header_timeout_s);
            pthread_mutex_lock(&s->conn_lock);
        }
    }
    pthread_mutex_unlock(&s->conn_lock);
    return NULL;
}

/* Raise the soft RLIMIT_NOFILE to the hard one; the number of descriptors
 * this process may hold. */
static long raise_nofile(void)
{
    struct rlimit rl;

    if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
        return 1024;
    if (rl.rlim_cur != RLIM_INFINITY && (rl.rlim_max == RLIM_INFINITY || rl.rlim_cur < rl.rlim_max)) {
        struct rlimit want = rl;
        want.rlim_cur = rl.rlim_max == RLIM_INFINITY || rl.rlim_max > GW_NOFILE_MAX ? GW_NOFILE_MAX
                                                                                   : rl.rlim_max;
        if (want.rlim_cur > rl.rlim_cur && setrlimit(RLIMIT_NOFILE, &want) == 0)
            rl = want;
    }
    return rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur > GW_NOFILE_MAX ? GW_NOFILE_MAX
                                                                       : (long)rl.rlim_cur;
}

/* The connection cap: max_conns, or (0) what the descriptors allow, leaving
 * room for the store, kernels, jobs and the WebSocket loops. */
static int conn_cap(const gw_config *cfg, long nofile)
{
    long reserve = nofile / 8 > 256 ? nofile / 8 : 256;
    long budget = nofile - reserve < 64 ? 64 : nofile - reserve;

    if (cfg->max_conns == 0)
        return (int)(budget < GW_AUTO_CONNS_MAX ? budget : GW_AUTO_CONNS_MAX);
    if (cfg->max_conns > budget) {
        ed_log_warn("http.start", "max_conns %d is over what RLIMIT_NOFILE %ld allows; using %ld",
                    cfg->max_conns, nofile, budget);
        return (int)budget;
    }
    return cfg->max_conns;
}

#define GW_MHD_LOG_PER_S 20   /* libmicrohttpd lines a second; the rest are counted */

/* libmicrohttpd's messages, at most GW_MHD_LOG_PER_S a second: under a flood
 * of slow clients it says one line per closed connection. */
static void mhd_log(void *cls, const char *fmt, va_list ap)
{
    static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
    static int64_t window_ns;
    static int in_window, dropped;
    char msg[1024];
    size_t n;
    int64_t now = ed_mono_ns();
    int report = 0;
    bool show;

    (void)cls;
    pthread_mutex_lock(&mu);
    if (now - window_ns >= INT64_C(1000000000)) {
        report = dropped;
        dropped = in_window = 0;
        window_ns = now;
    }
    show = in_window++ < GW_MHD_LOG_PER_S;
    if (!show)
        dropped++;
    pthread_mutex_unlock(&mu);
    if (report)
        ed_log_warn("http.mhd", "%d more libmicrohttpd messages in the last second were not logged",
                    report);
    if (!show)
        return;
    vsnprintf(msg, sizeof(msg), fmt, ap);
    n = strlen(msg);
    while (n > 0 && (msg[n - 1] == '\n' || msg[n - 1] == '\r'))
        msg[--n] = '\0';
    ed_log_warn("http.mhd", "%s", msg);
}

/* ---- start / stop ------------------------------------------------------------ */

static int read_file(char **out, const char *path)
{
    FILE *f = fopen(path, "rb");
    ed_buf b = {0};
    char chunk[4096];
    size_t n;

    *out = NULL;
    if (f == NULL)
        return ed_error_set(ED_EINVAL, "cannot read %s: %s", path, strerror(errno));
    while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0) {
        if (ed_buf_append(&b, chunk, n) < 0 || b.len > (1u << 20)) {
            fclose(f);
            ed_buf_free(&b);
            return ed_error_set(ED_EINVAL, "%s: too large or out of memory", path);
        }
    }
    fclose(f);
    if (b.len == 0)
        return ed_error_set(ED_EINVAL, "%s is empty", path);
    *out = ed_buf_steal(&b);
    return 0;
}

static int make_dir(const char *path)
{
    struct stat st;

    if (mkdir(path, 0700) == 0)
        return 0;
    if (errno == EEXIST && stat(path, &st) == 0 && S_ISDIR(st.st_mode))
        return 0;
    return ed_error_set(ED_EIO, "cannot create directory %s: %s", path,
                        errno == EEXIST ? "exists and is not a directory" : strerror(errno));
}

/* mkdir -p: the data directory's parents are created too (0700 each). */
static int make_dir_p(const char *path)
{
    char tmp[512];
    size_t n = strlen(path);

    if (n == 0 || n >= sizeof(tmp))
        return ed_error_set(ED_EINVAL, "data directory path is empty or too long");
    memcpy(tmp, path, n + 1);
    for (char *p = tmp + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(tmp, 0700) < 0 && errno != EEXIST)
            return ed_error_set(ED_EIO, "cannot create directory %s: %s", tmp, strerror(errno));
        *p = '/';
    }
    return make_dir(path);
}

static int open_listener(int *out_fd, int *out_port, const gw_config *cfg)
{
    struct addrinfo hints = {0}, *res = NULL, *ai;
    char port[16];
    int fd = -1, rc, one = 1, saved = 0;

    *out_fd = -1;
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    snprintf(port, sizeof(port), "%d", cfg->listen_port);
    if ((rc = getaddrinfo(cfg->listen_host, port, &hints, &res)) != 0)
        return ed_error_set(ED_EINVAL, "cannot resolve listen host '%s': %s", cfg->listen_host,
                            gai_strerror(rc));
    for (ai = res; ai; ai = ai->ai_next) {
        fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, ai->ai_protocol);
        if (fd < 0) {
            saved = errno;
            continue;
        }
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
        /* Accepted sockets inherit TCP_NODELAY on Linux; on_connection sets it too. */
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        if (bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 && listen(fd, 511) == 0)
            break;
        saved = errno;
        close(fd);
        fd = -1;
    }
    freeaddrinfo(res);
    if (fd < 0)
        return ed_error_set(ED_EIO, "cannot listen on %s:%d: %s", cfg->listen_host,
                            cfg->listen_port, strerror(saved));
    struct sockaddr_storage ss;
    socklen_t sl = sizeof(ss);
    if (getsockname(fd, (struct sockaddr *)&ss, &sl) < 0) {
        close(fd);
        return ed_error_set(ED_EIO, "getsockname: %s", strerror(errno));
    }
    *out_port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                                               : ((struct sockaddr_in *)&ss)->sin_port);
    *out_fd = fd;
    return 0;
}

/* The kernels module over this server's store, projects and scheduler,
 * with the config's kernel_* limits (kernels/README.md "Limits"). */
static int kernels_start(gw_server *srv)
{
    kh_config kc = {
        .store = srv->store,
        .projects = srv->projects,
        .sched = srv->sched,
        .output_msgs_per_s = srv->cfg.kernel_output_msgs_per_s,
        .output_bytes_per_s = srv->cfg.kernel_output_bytes_per_s,
        .output_window_ms = srv->cfg.kernel_output_window_ms,
        .flood_bytes_per_s = srv->cfg.kernel_flood_bytes_per_s,
        .journal_max_bytes = srv->cfg.kernel_journal_max_bytes,
        .journal_retention_ms = srv->cfg.kernel_journal_retention_ms,
        .dead_journals_per_user = srv->cfg.kernel_dead_journals_per_user,
    };
    return kh_hub_start(&srv->kernels, &kc);
}

static void srv_free(gw_srv *s)
{
    if (s == NULL)
        return;
    if (s->watch_started) {
        pthread_mutex_lock(&s->conn_lock);
        s->watch_stop = true;
        pthread_cond_signal(&s->watch_cond);
        pthread_mutex_unlock(&s->conn_lock);
        pthread_join(s->watch_thread, NULL);
    }
    for (int i = 0; i < GW_ADDR_BUCKETS; i++)
        while (s->addrs[i]) {
            struct gw_addr *a = s->addrs[i];
            s->addrs[i] = a->next;
            free(a);
        }
    pthread_cond_destroy(&s->watch_cond);
    pthread_mutex_destroy(&s->conn_lock);
    if (s->listen_fd >= 0)
        close(s->listen_fd);
    kh_hub_stop(s->pub.kernels);  /* kernels: before the scheduler */
    s->pub.kernels = NULL;
    gw__competitions_stop(&s->pub); /* its worker: before the datasets and the store */
    gw__serving_stop(&s->pub);    /* replicas: before the scheduler and the store */
    gw__sched_stop(&s->pub);      /* before the store it uses closes */
    proj_root_free(s->pub.projects);
    gw__ds_gc_stop(s->pub.ds_gc);
    ds_free(s->pub.datasets);
    gw__ratelimit_free(s->pub.ratelimit);
    gw__metrics_free(s->pub.metrics);
    ed_store_close(s->pub.store);
    free(s->tls_cert_pem);
    free(s->tls_key_pem);
    free(s);
}

int gw_server_start(gw_server **out, const gw_config *cfg)
{
    gw_srv *s;
    char path[600];
    /* poll, not epoll: with epoll, MHD_quiesce_daemon (gw_server_stop) and a
     * worker's MHD_epoll both remove the listening socket from the worker's
     * epoll set without a lock; the loser gets ENOENT and libmicrohttpd
     * (0.9.75) aborts the process ("Failed to remove listen FD from epoll
     * set"). With poll, quiescing only wakes the workers through the ITC. */
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL | MHD_USE_ITC |
                     MHD_USE_ERROR_LOG | MHD_ALLOW_UPGRADE | MHD_ALLOW_SUSPEND_RESUME;
    struct MHD_Daemon *d;
    long nofile;
    int err;

    *out = NULL;
    if ((cfg->tls_cert[0] != '\0') != (cfg->tls_key[0] != '\0'))
        return ed_error_set(ED_EINVAL, "TLS needs both tls_cert and tls_key");
    if ((s = calloc(1, sizeof(*s))) == NULL)
        return ed_error_set(ED_ENOMEM, "server");
    s->listen_fd = -1;
    s->pub.cfg = *cfg;
    atomic_init(&s->inflight, 0);
    pthread_mutex_init(&s->conn_lock, NULL);
    pthread_cond_init(&s->watch_cond, NULL);
    nofile = raise_nofile();
    s->pub.cfg.max_conns = conn_cap(cfg, nofile);
    if ((err = make_dir_p(cfg->data_dir)) < 0)
        goto fail;
    snprintf(path, sizeof(path), "%s/projects", cfg->data_dir);
    if ((err = make_dir(path)) < 0)
        goto fail;
    snprintf(path, sizeof(path), "%s/eddy.db", cfg->data_dir);
    if ((err = ed_store_open(&s->pub.store, path)) < 0) {
        char msg[512];
        snprintf(msg, sizeof(msg), "%s", ed_error_last());
        err = ed_error_set(err, "cannot open the store %s: %s", path, msg);
        goto fail;
    }
    snprintf(path, sizeof(path), "%s/projects", cfg->data_dir);
    if ((err = proj_root_open(&s->pub.projects, s->pub.store, path, cfg->user_storage_bytes)) < 0)
        goto fail;
    proj_root_set_large_file_bytes(s->pub.projects, cfg->version_large_file_bytes);
    if ((err = ds_open(&s->pub.datasets, s->pub.store, cfg->data_dir, NULL)) < 0 ||
        (err = gw__ds_gc_start(&s->pub.ds_gc, s->pub.datasets)) < 0 ||
        (err = gw__competitions_start(&s->pub)) < 0)
        goto fail;
    if ((err = gw__sched_start(&s->pub)) < 0 || (err = kernels_start(&s->pub)) < 0 ||
        (err = gw__competitions_runner_start(&s->pub)) < 0 || (err = gw__serving_start(&s->pub)) < 0)
        goto fail;
    if ((err = gw__ratelimit_new(&s->pub.ratelimit)) < 0 ||
        (err = gw__metrics_new(&s->pub.metrics)) < 0)
        goto fail;
    if (cfg->tls_cert[0]) {
        if (MHD_is_feature_supported(MHD_FEATURE_TLS) != MHD_YES) {
            err = ed_error_set(ED_EINVAL, "this libmicrohttpd was built without TLS");
            goto fail;
        }
        if ((err = read_file(&s->tls_cert_pem, cfg->tls_cert)) < 0 ||
            (err = read_file(&s->tls_key_pem, cfg->tls_key)) < 0)
            goto fail;
        flags |= MHD_USE_TLS;
        s->pub.tls = true;
    }
    if ((err = open_listener(&s->listen_fd, &s->pub.port, cfg)) < 0)
        goto fail;
    /* The read buffer holds the request line and headers; leave room past the
     * header limit so on_headers can answer 431 itself (with X-Request-Id).
     * libmicrohttpd 0.9.x zeroes the whole pool between requests on a kept-alive
     * connection, so the pool is kept small: headers up to 1.5x the limit still
     * get our answer (32 KiB at the default 16 KiB limit). */
    size_t mem = (size_t)cfg->max_header_bytes + (size_t)cfg->max_header_bytes / 2 + 8192;
    /* No MHD_OPTION_PER_IP_CONNECTION_LIMIT: accept_policy counts per
     * address itself (fair shares, trusted proxies exempt, IPv6 per /64). */
    d = MHD_start_daemon(
        flags, 0, accept_policy, s, on_request, s,
        MHD_OPTION_EXTERNAL_LOGGER, mhd_log, (void *)NULL,
        MHD_OPTION_LISTEN_SOCKET, (MHD_socket)s->listen_fd,
        MHD_OPTION_THREAD_POOL_SIZE, (unsigned int)cfg->threads,
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, mem,
        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)cfg->conn_timeout_s,
        MHD_OPTION_CONNECTION_LIMIT, (unsigned int)s->pub.cfg.max_conns,
        MHD_OPTION_URI_LOG_CALLBACK, uri_log, (void *)s,
        MHD_OPTION_NOTIFY_COMPLETED, on_completed, (void *)s,
        MHD_OPTION_NOTIFY_CONNECTION, on_connection, (void *)s,
        s->pub.tls ? MHD_OPTION_HTTPS_MEM_CERT : MHD_OPTION_END, s->tls_cert_pem,
        MHD_OPTION_HTTPS_MEM_KEY, s->tls_key_pem,
        MHD_OPTION_END);
    if (d == NULL) {
        err = ed_error_set(ED_EIO, "libmicrohttpd did not start on %s:%d%s (see the log)",
                           cfg->listen_host, s->pub.port, s->pub.tls ? " (check the TLS files)" : "");
        goto fail;
    }
    s->pub.mhd = d;
    if (pthread_create(&s->watch_thread, NULL, watchdog_main, s) != 0) {
        err = ed_error_set(ED_ENOMEM, "cannot start the header-timeout thread");
        MHD_stop_daemon(d);
        s->pub.mhd = NULL;
        s->listen_fd = -1;   /* libmicrohttpd closed it */
        goto fail;
    }
    s->watch_started = true;
    ed_log_info("http.start", "listening on %s://%s:%d with %d threads", s->pub.tls ? "https" : "http",
                cfg->listen_host, s->pub.port, cfg->threads);
    ed_log_info("http.start", "connections: cap %d (RLIMIT_NOFILE %ld), %d per address, header "
                              "timeout %d s, idle timeout %d s",
                s->pub.cfg.max_conns, nofile, cfg->max_conns_per_ip, cfg->header_timeout_s,
                cfg->conn_timeout_s);
    *out = &s->pub;
    return 0;
fail:
    srv_free(s);
    return err;
}

int gw_server_port(const gw_server *srv)
{
    return srv ? srv->port : -1;
}

void gw_server_stop(gw_server *srv)
{
    gw_srv *s = (gw_srv *)srv;
    int64_t deadline;

    if (s == NULL)
        return;
    if (s->pub.mhd) {
        struct MHD_Daemon *d = s->pub.mhd;
        /* Stop accepting; the listening socket comes back to us to close. */
        MHD_socket fd = MHD_quiesce_daemon(d);
        if (fd != MHD_INVALID_SOCKET && fd == s->listen_fd) {
            close(s->listen_fd);
            s->listen_fd = -1;
        } else {
            s->listen_fd = -1;   /* libmicrohttpd keeps and closes it */
        }
        gw__ws_stop_all(5000);   /* WebSockets hold their requests open */
        gw__stream_stop_all();   /* so do event streams */
        deadline = ed_mono_ns() + (int64_t)GW_DRAIN_TIMEOUT_MS * 1000000;
        for (int i = 0; atomic_load(&s->inflight) > 0 && ed_mono_ns() < deadline; i++) {
            /* A handshake answered just before we stopped accepting hands its
             * socket over after gw__ws_stop_all looked: close those too. */
            if (i % 10 == 9)
                gw__ws_stop_all(0);
            usleep(10000);
        }
        if (atomic_load(&s->inflight) > 0)
            ed_log_warn("http.stop", "%d requests still running after %d ms; closing them",
                        atomic_load(&s->inflight), GW_DRAIN_TIMEOUT_MS);
        MHD_stop_daemon(d);
        s->pub.mhd = NULL;
    }
    srv_free(s);
}
