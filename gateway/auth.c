/*
 * auth.c - who is calling: gw__auth_authenticate, run by the router before
 * the handler of every route flagged GW_AUTH or GW_AUTH_OPTIONAL.
 *
 * Two credentials:
 *  - `Authorization: Bearer <key>` (or `token <key>`, as Jupyter clients send):
 *    shape and checksum first, with no database work, then one indexed SELECT
 *    by the key's SHA-256; expiry, revocation, owner suspension, env, scopes
 *    and the per-key rate limit are judged here.
 *  - the `eddy_session` cookie: one SELECT by the token's SHA-256; requests
 *    that change state must echo the session's CSRF token in X-CSRF-Token,
 *    which a cross-site form or script cannot read.
 * When both are present the Authorization header wins (and needs no CSRF
 * token: browsers never attach it on their own).
 *
 * Cookie callers must also come from this server's own origin (or one the
 * operator allowed in `allow_origins`) whenever the browser says where it
 * comes from: a WebSocket upgrade or a cross-site stream cannot carry the
 * CSRF token, but browsers always send Origin on those (and on every
 * cross-origin request), so a page on another site or another port cannot
 * open a user's kernel channels or event streams with her cookie.
 */
#include "auth_int.h"

#include "ed_crypto.h"
#include "ed_error.h"
#include "ed_time.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

/* A route's scope flags are the scopes keys carry (acct.h). */
_Static_assert((unsigned)GW_SCOPE_READ == (unsigned)ACCT_SCOPE_READ &&
               (unsigned)GW_SCOPE_WRITE == (unsigned)ACCT_SCOPE_WRITE &&
               (unsigned)GW_SCOPE_RUN == (unsigned)ACCT_SCOPE_RUN &&
               (unsigned)GW_SCOPE_SERVE == (unsigned)ACCT_SCOPE_SERVE &&
               (unsigned)GW_SCOPE_ADMIN == (unsigned)ACCT_SCOPE_ADMIN, "route scope flags match acct.h");

/* ---- Origin ------------------------------------------------------------------ */

/* "scheme://host:port" in lower case with the port always written (80/443
 * when absent) into out; -1 when `scheme` is not http(s) or the host part is
 * empty, has a path, user info or spaces. `hostport` is n bytes. */
static int origin_norm(char *out, size_t outlen, const char *scheme, size_t slen, const char *hostport,
                       size_t n)
{
    const char *port = NULL, *host_end = hostport + n;
    size_t hlen, plen = 0;
    bool https;
    char host[256];

    if (slen == 4 && strncasecmp(scheme, "http", 4) == 0)
        https = false;
    else if (slen == 5 && strncasecmp(scheme, "https", 5) == 0)
        https = true;
    else
        return -1;
    if (n == 0)
        return -1;
    for (size_t i = 0; i < n; i++)
        if (hostport[i] == '/' || hostport[i] == '@' || hostport[i] == '?' || hostport[i] == '#' ||
            isspace((unsigned char)hostport[i]))
            return -1;
    if (hostport[0] == '[') {                           /* [v6]:port */
        const char *rb = memchr(hostport, ']', n);
        if (rb == NULL)
            return -1;
        host_end = rb + 1;
        if (host_end < hostport + n) {
            if (*host_end != ':')
                return -1;
            port = host_end + 1;
        }
    } else {
        const char *colon = memchr(hostport, ':', n);
        if (colon) {
            host_end = colon;
            port = colon + 1;
        }
    }
    hlen = (size_t)(host_end - hostport);
    if (hlen == 0 || hlen >= sizeof(host))
        return -1;
    for (size_t i = 0; i < hlen; i++)
        host[i] = (char)tolower((unsigned char)hostport[i]);
    host[hlen] = '\0';
    if (port) {
        plen = (size_t)(hostport + n - port);
        if (plen == 0 || plen > 5)
            return -1;
        for (size_t i = 0; i < plen; i++)
            if (!isdigit((unsigned char)port[i]))
                return -1;
    }
    if (port)
        snprintf(out, outlen, "%s://%s:%d", https ? "https" : "http", host, atoi(port));
    else
        snprintf(out, outlen, "%s://%s:%d", https ? "https" : "http", host, https ? 443 : 80);
    return 0;
}

/* An Origin header value ("https://host:port") normalized; -1 for "null" or
 * anything else that is not an http(s) origin. */
static int origin_parse(char *out, size_t outlen, const char *v, size_t n)
{
    const char *sep = n >= 3 ? strstr(v, "://") : NULL;

    if (sep == NULL || (size_t)(sep - v) + 3 > n)
        return -1;
    return origin_norm(out, outlen, v, (size_t)(sep - v), sep + 3, n - (size_t)(sep - v) - 3);
}

/* 1 when the peer (not the forwarded client) is one of trusted_proxies. */
static bool peer_is_trusted_proxy(gw_request *req)
{
    const char *list = req->srv->cfg.trusted_proxies;
    const union MHD_ConnectionInfo *ci;
    char addr[INET6_ADDRSTRLEN] = "";
    size_t n;

    if (list[0] == '\0' || req->conn == NULL ||
        (ci = MHD_get_connection_info(req->conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS)) == NULL ||
        ci->client_addr == NULL)
        return false;
    if (ci->client_addr->sa_family == AF_INET)
        inet_ntop(AF_INET, &((const struct sockaddr_in *)(const void *)ci->client_addr)->sin_addr, addr,
                  sizeof(addr));
    else if (ci->client_addr->sa_family == AF_INET6)
        inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)(const void *)ci->client_addr)->sin6_addr, addr,
                  sizeof(addr));
    n = strlen(addr);
    for (const char *p = list; n && *p;) {
        size_t k = strcspn(p, ", ");
        if (k == n && strncmp(p, addr, n) == 0)
            return true;
        p += k;
        p += strspn(p, ", ");
    }
    return false;
}

/* The first comma-separated value of a header, trimmed: *n bytes at the result. */
static const char *first_value(const char *h, size_t *n)
{
    while (*h == ' ')
        h++;
    *n = strcspn(h, ",");
    while (*n > 0 && h[*n - 1] == ' ')
        (*n)--;
    return h;
}

/* This server's origin as the request reached it: the scheme is https under
 * TLS, the host what the Host header says. Behind a trusted proxy its
 * X-Forwarded-Proto and X-Forwarded-Host say what the browser used. */
static int own_origin(char *out, size_t outlen, gw_request *req)
{
    const char *scheme = req->srv->tls ? "https" : "http", *host = gw_request_header(req, "Host");
    size_t slen = strlen(scheme), hlen;

    if (peer_is_trusted_proxy(req)) {
        const char *fp = gw_request_header(req, "X-Forwarded-Proto");
        const char *fh = gw_request_header(req, "X-Forwarded-Host");
        if (fp && *fp)
            scheme = first_value(fp, &slen);
        if (fh && *fh)
            host = fh;
    }
    if (host == NULL)
        return -1;
    host = first_value(host, &hlen);
    return origin_norm(out, outlen, scheme, slen, host, hlen);
}

int gw__origin_check(gw_request *req)
{
    const char *origin = gw_request_header(req, "Origin");
    const char *allow = req->srv->cfg.allow_origins;
    char got[300], own[300];

    /* No Origin: not a browser's cross-origin request (curl, CLI, same-origin GET). */
    if (origin == NULL)
        return 0;
    if (strcmp(allow, "*") == 0)
        return 0;
    if (origin_parse(got, sizeof(got), origin, strlen(origin)) == 0) {
        if (own_origin(own, sizeof(own), req) == 0 && strcmp(got, own) == 0)
            return 0;
        for (const char *p = allow; *p;) {
            size_t k = strcspn(p, ",");
            const char *a = p;
            size_t len = k;
            char ok[300];
            while (len > 0 && *a == ' ')
                a++, len--;
            while (len > 0 && a[len - 1] == ' ')
                len--;
            if (origin_parse(ok, sizeof(ok), a, len) == 0 && strcmp(ok, got) == 0)
                return 0;
            p += k;
            if (*p == ',')
                p++;
        }
    }
    /* An operator behind a TLS proxy that is not in trusted_proxies sees every
     * browser refused: say so. */
    if ((gw_request_header(req, "X-Forwarded-Proto") || gw_request_header(req, "X-Forwarded-Host")) &&
        !peer_is_trusted_proxy(req))
        return ed_error_set(ED_EPERM,
                            "cross-origin request refused: Origin '%.100s' is not this server's origin (%s) nor "
                            "in allow_origins; X-Forwarded-Proto/-Host were ignored: the peer is not in "
                            "trusted_proxies", origin, own_origin(own, sizeof(own), req) == 0 ? own : "unknown");
    return ed_error_set(ED_EPERM,
                        "cross-origin request refused: Origin '%.100s' is not this server's origin nor in "
                        "allow_origins (API keys in the Authorization header are not affected)",
                        origin);
}

/* ---- credentials ----------------------------------------------------------------- */

/* GW_SCOPE_* the route asks for, against what the credential carries. */
static int check_scopes(gw_request *req, unsigned flags)
{
    unsigned need = flags & ACCT_SCOPES_ALL, missing;

    if ((need & GW_SCOPE_ADMIN) && strcmp(req->auth.role, "admin") != 0)
        return ed_error_set(ED_EPERM, "this needs an administrator");
    if ((missing = need & ~req->auth.scopes) != 0) {
        char names[64];
        acct_scopes_to_csv(names, sizeof(names), missing);
        return ed_error_set(ED_EPERM, "this API key lacks scope %s", names);
    }
    return 0;
}

static int auth_key(gw_request *req, unsigned flags, const char *key)
{
    gw_server *srv = req->srv;
    acct_key_auth k;
    char env[8];
    int64_t now;
    int err, limit;

    /* Shape, env and checksum: no database work for a mistyped or forged key. */
    if ((err = acct_key_parse(env, key)) < 0)
        return err;
    if (!acct_key_env_accepted(srv->cfg.key_envs, env)) {
        char envs[32];
        acct_key_envs_accepted(envs, sizeof(envs), srv->cfg.key_envs);
        return ed_error_set(ED_EAUTH, "API key is for env '%s' but this server accepts keys for env %s",
                            env, envs);
    }
    if ((err = acct_key_lookup(&k, srv->store, key)) < 0)
        return err;
    now = ed_now_ms();
    if (k.key.revoked_at)
        return ed_error_set(ED_EAUTH, "API key was revoked");
    if (k.key.expires_at && k.key.expires_at <= now)
        return ed_error_set(ED_EAUTH, "API key expired");
    if (k.suspended)
        return ed_error_set(ED_EAUTH, "account is suspended");
    if (strcmp(k.key.env, env) != 0)
        return ed_error_set(ED_EAUTH, "API key env does not match its record");

    req->auth.user_id = k.key.user_id;
    req->auth.username = ed_arena_strdup(req->arena, k.username);
    req->auth.role = ed_arena_strdup(req->arena, k.role);
    req->auth.tier = ed_arena_strdup(req->arena, k.tier);
    if (!req->auth.username || !req->auth.role || !req->auth.tier)
        return ed_error_set(ED_ENOMEM, "auth");
    req->auth.via_key = true;
    req->auth.key_id = k.key.id;
    /* An admin-scoped key of a user who is no longer admin grants nothing more. */
    req->auth.scopes = k.key.scopes;
    if (strcmp(k.role, "admin") != 0)
        req->auth.scopes &= ~(unsigned)GW_SCOPE_ADMIN;
    if ((err = check_scopes(req, flags)) < 0)
        return err;

    if (srv->ratelimit) {
        char rlkey[32];
        limit = k.key.rate_limit_per_min > 0 ? (int)k.key.rate_limit_per_min
                                             : srv->cfg.default_key_rate_per_min;
        if (limit <= 0)
            limit = GW_DEFAULT_KEY_RATE;
        /* The key's env caps it for the owner's tier (tier_key_envs). */
        if (k.env_rate_limit_per_min > 0 && limit > k.env_rate_limit_per_min)
            limit = (int)k.env_rate_limit_per_min;
        snprintf(rlkey, sizeof(rlkey), "key:%lld", (long long)k.key.id);
        if ((err = gw__ratelimit_hit(srv->ratelimit, rlkey, limit, gw__ratelimit_now_ms(),
                                     &req->retry_after_s)) < 0) {
            if (err == ED_ELIMIT)
                return ed_error_set(ED_ELIMIT, "API key rate limit of %d requests a minute reached",
                                    limit);
            return err;
        }
    }
    /* Best effort: a failed last-used stamp must not fail the request. */
    if (acct_key_touch(srv->store, &k, now) < 0)
        ed_error_clear();
    return 0;
}

static bool changes_state(const char *method)
{
    return strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0 &&
           strcmp(method, "OPTIONS") != 0;
}

static int auth_session(gw_request *req, unsigned flags, const char *token)
{
    acct_session s;
    acct_user u;
    int err;

    if ((err = acct_session_lookup(&s, &u, req->srv->store, token)) < 0)
        return err;
    if ((err = gw__origin_check(req)) < 0)
        return err;
    if (changes_state(req->method)) {
        const char *sent = gw_request_header(req, GW_CSRF_HEADER);
        /* Jupyter's clients send the same token as X-XSRFToken (jupyter_routes.c). */
        if (sent == NULL && (flags & GW_JUPYTER_XSRF))
            sent = gw_request_header(req, "X-XSRFToken");
        if (sent == NULL || sent[0] == '\0')
            return ed_error_set(ED_EPERM, "missing X-CSRF-Token header (returned by login)");
        if (strlen(sent) != strlen(s.csrf) || !ed_ct_equal(sent, s.csrf, strlen(s.csrf)))
            return ed_error_set(ED_EPERM, "wrong X-CSRF-Token header");
    }
    req->auth.user_id = u.id;
    req->auth.username = ed_arena_strdup(req->arena, u.username);
    req->auth.role = ed_arena_strdup(req->arena, u.role);
    req->auth.tier = ed_arena_strdup(req->arena, u.tier);
    if (!req->auth.username || !req->auth.role || !req->auth.tier)
        return ed_error_set(ED_ENOMEM, "auth");
    req->auth.via_key = false;
    req->auth.session_id = s.id;
    req->auth.scopes = ACCT_SCOPES_SESSION;
    if (strcmp(u.role, "admin") == 0)
        req->auth.scopes |= GW_SCOPE_ADMIN;
    return check_scopes(req, flags);
}

/* A caller without credentials on a GW_AUTH_OPTIONAL route (a public
 * project's files, metrics): every such request of one client address
 * counts against one budget, what an API key gets by default a minute
 * (default_key_rate_per_min), so reading public projects anonymously cannot
 * cost more than reading them with a key. Over it: 429 with Retry-After. */
static int anonymous(gw_request *req)
{
    gw_server *srv = req->srv;
    int limit = srv->cfg.default_key_rate_per_min > 0 ? srv->cfg.default_key_rate_per_min
                                                      : GW_DEFAULT_KEY_RATE;
    char key[96];
    int err;

    memset(&req->auth, 0, sizeof(req->auth));
    if (srv->ratelimit == NULL)
        return 0;
    snprintf(key, sizeof(key), "anon:ip:%.64s", req->ip ? req->ip : "-");
    err = gw__ratelimit_hit(srv->ratelimit, key, limit, gw__ratelimit_now_ms(), &req->retry_after_s);
    if (err == ED_ELIMIT)
        return ed_error_set(ED_ELIMIT, "more than %d requests a minute without signing in from "
                            "this address: sign in or send an API key", limit);
    return err;
}

/* The key of an Authorization header "Bearer <key>" or "token <key>". */
static const char *authorization_key(const char *h)
{
    static const char *const schemes[] = {"Bearer", "token"};

    for (size_t i = 0; i < sizeof(schemes) / sizeof(schemes[0]); i++) {
        size_t n = strlen(schemes[i]);
        if (strncasecmp(h, schemes[i], n) == 0 && h[n] == ' ') {
            h += n;
            while (*h == ' ')
                h++;
            return *h ? h : NULL;
        }
    }
    return NULL;
}

int gw__auth_authenticate(gw_request *req, unsigned flags)
{
    const char *authz = gw_request_header(req, "Authorization");
    const char *cookie;
    int err;

    memset(&req->auth, 0, sizeof(req->auth));
    /* Browsers cannot set headers on a WebSocket upgrade: routes flagged
     * GW_AUTH_QUERY_TOKEN (only /api/kernels/{id}/channels) also take ?token=<key>. */
    if (authz == NULL && (flags & GW_AUTH_QUERY_TOKEN)) {
        const char *qt = gw_request_query(req, "token");
        if (qt != NULL && qt[0] != '\0') {
            err = auth_key(req, flags, qt);
            goto done;
        }
    }
    if (authz) {
        const char *key = authorization_key(authz);
        if (key == NULL)
            err = ed_error_set(ED_EAUTH, "Authorization must be 'Bearer <api key>' or 'token <api key>'");
        else
            err = auth_key(req, flags, key);
    } else if ((cookie = gw_request_cookie(req, GW_SESSION_COOKIE)) != NULL && cookie[0]) {
        err = auth_session(req, flags, cookie);
        /* A stale cookie on a page anyone may see: serve it anonymously. */
        if (err == ED_EAUTH && !(flags & GW_AUTH)) {
            ed_error_clear();
            err = anonymous(req);
        }
    } else if (flags & GW_AUTH) {
        err = ed_error_set(ED_EAUTH, "authentication required: log in or send an API key");
    } else {
        err = anonymous(req);   /* GW_AUTH_OPTIONAL and no credentials */
    }
done:
    if (err < 0) {
        int retry = req->retry_after_s;
        memset(&req->auth, 0, sizeof(req->auth));
        req->retry_after_s = retry;
    }
    return err;
}
