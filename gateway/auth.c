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
 */
#include "auth_int.h"

#include "ed_crypto.h"
#include "ed_error.h"
#include "ed_time.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

static const char *server_env(const gw_request *req)
{
    return req->srv->cfg.env_name[0] ? req->srv->cfg.env_name : "dev";
}

/* GW_SCOPE_* the route asks for, against what the credential carries. */
static int check_scopes(gw_request *req, unsigned flags)
{
    unsigned need = flags & GW_SCOPES_ALL, missing;

    if ((need & GW_SCOPE_ADMIN) && strcmp(req->auth.role, "admin") != 0)
        return ed_error_set(ED_EPERM, "this needs an administrator");
    if ((missing = need & ~req->auth.scopes) != 0) {
        char names[64];
        gw__scopes_to_csv(names, sizeof(names), missing);
        return ed_error_set(ED_EPERM, "this API key lacks scope %s", names);
    }
    return 0;
}

static int auth_key(gw_request *req, unsigned flags, const char *key)
{
    gw_server *srv = req->srv;
    gw__key_auth k;
    char env[8];
    int64_t now;
    int err, limit;

    /* Shape, env and checksum: no database work for a mistyped or forged key. */
    if ((err = gw__key_parse(env, key)) < 0)
        return err;
    if (strcmp(env, server_env(req)) != 0)
        return ed_error_set(ED_EAUTH, "API key is for env '%s' but this server accepts '%s' keys",
                            env, server_env(req));
    if ((err = gw__key_lookup(&k, srv->store, key)) < 0)
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
    if (gw__key_touch(srv->store, &k, now) < 0)
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
    gw__session s;
    gw__user u;
    int err;

    if ((err = gw__session_lookup(&s, &u, req->srv->store, token)) < 0)
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
    req->auth.scopes = GW_SCOPES_SESSION;
    if (strcmp(u.role, "admin") == 0)
        req->auth.scopes |= GW_SCOPE_ADMIN;
    return check_scopes(req, flags);
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
            memset(&req->auth, 0, sizeof(req->auth));
            ed_error_clear();
            return 0;
        }
    } else if (flags & GW_AUTH) {
        err = ed_error_set(ED_EAUTH, "authentication required: log in or send an API key");
    } else {
        return 0;   /* GW_AUTH_OPTIONAL and no credentials: anonymous */
    }
done:
    if (err < 0) {
        int retry = req->retry_after_s;
        memset(&req->auth, 0, sizeof(req->auth));
        req->retry_after_s = retry;
    }
    return err;
}
