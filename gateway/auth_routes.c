/*
 * auth_routes.c - gw__routes_auth: signup, login, logout, me, API keys, and the
 * admin routes over users, settings and the audit trail (API.md "Accounts,
 * sessions, keys" and "Admin").
 *
 * Handlers validate the whole body before writing anything; each write and
 * its audit row commit together (the accounts module, accounts/acct.h), so a
 * refused request leaves no row behind.
 */
#include "auth_int.h"
#include "proj_ws.h"
#include "sched.h"

#include "ed_error.h"
#include "ed_time.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static int respond(gw_response *res, int status, json_t *body)
{
    if (body == NULL)
        return ed_error_set(ED_ENOMEM, "response body");
    return gw_respond_json(res, status, body);
}

/* A positive decimal id from a path segment or cursor; 0 when it is not one. */
static int64_t parse_id(const char *s)
{
    char *end;
    long long v;

    if (s == NULL || *s < '0' || *s > '9')
        return 0;
    errno = 0;
    v = strtoll(s, &end, 10);
    if (*end != '\0' || errno != 0 || v <= 0)
        return 0;
    return (int64_t)v;
}

/* ed_json_get_str that also refuses a string with an embedded NUL ("\u0000"),
 * which C would silently cut short ("alice\u0000x" must not become "alice"). */
static int str_field(const char **out, const json_t *body, const char *key, bool required)
{
    json_t *v = json_object_get(body, key);
    int err;

    if ((err = ed_json_get_str(out, body, key, required)) < 0)
        return err;
    if (json_is_string(v) && strlen(json_string_value(v)) != json_string_length(v))
        return ed_error_set(ED_EINVAL, "field '%s' must not contain NUL characters", key);
    return 0;
}

/* ---- signup, login, logout, me ---------------------------------------------- */

/* Login and signup set a cookie, so they take only JSON (a cross-site form
 * can post text/plain or urlencoded bodies, never application/json without a
 * CORS preflight this server does not grant) and only from an allowed Origin. */
static int browser_entry_check(gw_request *req, const char *what)
{
    const char *ct = gw_request_header(req, "Content-Type");
    size_t n;

    if (ct == NULL)
        return ed_error_set(ED_EINVAL, "%s takes a JSON body: send Content-Type: application/json", what);
    while (*ct == ' ')
        ct++;
    n = strcspn(ct, "; ");
    if (n != strlen("application/json") || strncasecmp(ct, "application/json", n) != 0)
        return ed_error_set(ED_EINVAL, "%s takes a JSON body: Content-Type must be application/json, not '%.60s'",
                            what, ct);
    return gw__origin_check(req);
}

static int post_signup(gw_request *req, gw_response *res)
{
    ed_store *st = req->srv->store;
    const char *username = NULL, *email = NULL, *password = NULL;
    acct_actor actor = gw__actor_of(req);
    json_t *body;
    acct_user u;
    bool open;
    int64_t id;
    int err;

    if ((err = browser_entry_check(req, "sign-up")) < 0)
        return err;
    if ((err = acct_setting_get_bool(&open, st, "signup_open", req->srv->cfg.signup_open)) < 0)
        return err;
    if (!open)
        return ed_error_set(ED_EPERM, "signup is closed on this server: ask an administrator");
    if ((err = gw_request_json(&body, req)) < 0 ||
        (err = str_field(&username, body, "username", true)) < 0 ||
        (err = str_field(&email, body, "email", true)) < 0 ||
        (err = str_field(&password, body, "password", true)) < 0)
        return err;
    if ((err = acct_user_insert(&id, st, &actor, "auth.signup", username, email, password, "user",
                               "free")) < 0 ||
        (err = acct_user_get(&u, st, id)) < 0)
        return err;
    return respond(res, 201, acct_user_json(&u, false));
}

static int login_failed(gw_request *req, const acct_user *u, const char *username, const char *why)
{
    acct_actor actor = gw__actor_of(req);
    char target[32];
    json_t *detail = json_pack("{s:s%, s:s}", "username", username, strnlen(username, 64),
                               "reason", why);

    snprintf(target, sizeof(target), "user:%lld", (long long)(u ? u->id : 0));
    /* Best effort: the answer to the client does not depend on the audit row. */
    if (acct_audit_append(req->srv->store, &actor, "auth.login_failed", u ? target : NULL, detail) < 0)
        ed_error_clear();
    json_decref(detail);
    return 0;
}

static char *cookie_value(gw_request *req, const char *token, int64_t max_age_s)
{
    return ed_arena_printf(req->arena, "%s=%s; Path=/; Max-Age=%lld; HttpOnly; SameSite=Lax%s",
                           GW_SESSION_COOKIE, token, (long long)max_age_s,
                           req->srv->tls ? "; Secure" : "");
}

static int post_login(gw_request *req, gw_response *res)
{
    gw_server *srv = req->srv;
    ed_store *st = srv->store;
    const char *username = NULL, *password = NULL, *old;
    char token[ACCT_SESSION_TOKEN_CHARS + 1], ukey[96], ipkey[96], pairkey[192], target[32];
    int64_t ttl = srv->cfg.session_ttl_ms > 0 ? srv->cfg.session_ttl_ms : ACCT_SESSION_TTL_DEFAULT_MS;
    int limit = srv->cfg.login_attempts_per_min > 0 ? srv->cfg.login_attempts_per_min
                                                    : GW_DEFAULT_LOGIN_ATTEMPTS;
    int64_t now = gw__ratelimit_now_ms();
    acct_actor actor = gw__actor_of(req);
    acct_session s;
    acct_user u;
    json_t *body, *out, *detail = NULL;
    bool found, known = false;
    char *cookie;
    int err, retry_u = 0, retry_ip = 0, retry_pair = 0;

    if ((err = browser_entry_check(req, "login")) < 0 ||
        (err = gw_request_json(&body, req)) < 0 ||
        (err = str_field(&username, body, "username", true)) < 0 ||
        (err = str_field(&password, body, "password", true)) < 0)
        return err;
    /* Three limits. Per (account, address) and per account, failures lock
     * with exponential backoff; per address, a window of `limit` failures a
     * minute over all accounts. The account-wide lock does not apply to an
     * address the account logged in from before, so failures from elsewhere
     * cannot lock the owner out. */
    snprintf(ukey, sizeof(ukey), "login:user:%.64s", username);
    snprintf(ipkey, sizeof(ipkey), "login:ip:%.64s", req->ip ? req->ip : "-");
    snprintf(pairkey, sizeof(pairkey), "login:pair:%.64s|%.64s", username, req->ip ? req->ip : "-");
    err = acct_user_get_by_name(&u, st, username);
    if (err < 0 && err != ED_ENOTFOUND)
        return err;
    found = err == 0;
    if (srv->ratelimit) {
        int ep = gw__backoff_check(srv->ratelimit, pairkey, now, &retry_pair);
        int ei = gw__ratelimit_check(srv->ratelimit, ipkey, limit, now, &retry_ip);
        int eu = gw__backoff_check(srv->ratelimit, ukey, now, &retry_u);
        if (eu == ED_ELIMIT && found) {
            if ((err = acct_login_address_known(&known, st, u.id, req->ip, ed_now_ms())) < 0)
                return err;
            if (known) {
                eu = 0;
                retry_u = 0;
                ed_error_clear();
            }
        }
        if (ep < 0 || ei < 0 || eu < 0) {
            req->retry_after_s = retry_u > retry_ip ? retry_u : retry_ip;
            if (retry_pair > req->retry_after_s)
                req->retry_after_s = retry_pair;
            return ed_error_set(ED_ELIMIT, "too many failed logins%s: try again in %d s",
                                eu < 0 && ep == 0 && ei == 0 ? " for this account" : "", req->retry_after_s);
        }
    }
    if (!acct_password_verify(found ? u.password_hash : NULL, password)) {
        if (srv->ratelimit) {
            int r;
            (void)gw__backoff_fail(srv->ratelimit, pairkey, limit, now);
            (void)gw__backoff_fail(srv->ratelimit, ukey, limit, now);
            (void)gw__ratelimit_hit(srv->ratelimit, ipkey, limit, now, &r);
        }
        login_failed(req, found ? &u : NULL, username, "bad credentials");
        return ed_error_set(ED_EAUTH, "wrong username or password");
    }
    if (u.suspended) {
        login_failed(req, &u, username, "suspended");
        return ed_error_set(ED_EPERM, "account is suspended");
    }

    /* Hashes made with older parameters are upgraded while the password is at hand. */
    if (acct_password_needs_rehash(u.password_hash)) {
        char fresh[ACCT_PWHASH_STRBYTES];
        if (acct_password_hash(fresh, password) < 0 || acct_user_set_password_hash(st, u.id, fresh) < 0)
            ed_error_clear();   /* the old hash still works: try again next time */
    }

    /* Rotation: whatever session the browser came with ends here. */
    actor.user_id = u.id;
    snprintf(target, sizeof(target), "user:%lld", (long long)u.id);
    if ((err = ed_store_begin(st)) < 0)
        return err;
    if ((old = gw_request_cookie(req, GW_SESSION_COOKIE)) != NULL &&
        (err = acct_session_delete_token(st, old)) < 0)
        goto fail;
    if ((err = acct_session_prune(st, u.id, ed_now_ms())) < 0)
        goto fail;
    if ((err = acct_session_create(token, &s, st, u.id, ttl, req->ip)) < 0)
        goto fail;
    if ((detail = json_pack("{s:I}", "session_id", (json_int_t)s.id)) == NULL) {
        err = ed_error_set(ED_ENOMEM, "audit detail");
        goto fail;
    }
    if ((err = acct_audit_append(st, &actor, "auth.login", target, detail)) < 0 ||
        (err = acct_login_address_remember(st, u.id, req->ip, ed_now_ms())) < 0 ||
        (err = ed_store_commit(st)) < 0)
        goto fail;
    json_decref(detail);
    if (srv->ratelimit)
        gw__backoff_reset(srv->ratelimit, pairkey);
    if ((cookie = cookie_value(req, token, ttl / 1000)) == NULL)
        return ed_error_set(ED_ENOMEM, "cookie");
    if ((err = gw_response_header(res, "Set-Cookie", cookie)) < 0)
        return err;
    out = json_pack("{s:o, s:s}", "user", acct_user_json(&u, false), "csrf_token", s.csrf);
    return respond(res, 200, out);
fail:
    json_decref(detail);
    ed_store_rollback(st);
    return err;
}

static int post_logout(gw_request *req, gw_response *res)
{
    char target[32];
    char *cookie;
    int err;

    if (req->auth.via_key)
        return ed_error_set(ED_EINVAL,
                            "logout ends a browser session; revoke API keys with DELETE /api/v1/keys/{id}");
    if ((err = acct_session_delete(req->srv->store, req->auth.session_id)) < 0)
        return err;
    snprintf(target, sizeof(target), "user:%lld", (long long)req->auth.user_id);
    if (gw__audit(req, "auth.logout", target, NULL) < 0)
        ed_error_clear();
    if ((cookie = ed_arena_printf(req->arena, "%s=; Path=/; Max-Age=0; HttpOnly; SameSite=Lax%s",
                                  GW_SESSION_COOKIE, req->srv->tls ? "; Secure" : "")) == NULL)
        return ed_error_set(ED_ENOMEM, "cookie");
    if ((err = gw_response_header(res, "Set-Cookie", cookie)) < 0)
        return err;
    return gw_respond_empty(res, 204);
}

/* A browser session also gets its CSRF token back, so a reloaded page that
 * lost the login response can still send X-CSRF-Token. */
static int get_me(gw_request *req, gw_response *res)
{
    char csrf[ACCT_CSRF_TOKEN_CHARS + 1];
    json_t *out;
    acct_user u;
    int err;

    if ((err = acct_user_get(&u, req->srv->store, req->auth.user_id)) < 0)
        return err;
    if ((out = acct_user_json(&u, false)) == NULL)
        return ed_error_set(ED_ENOMEM, "response body");
    if (!req->auth.via_key) {
        if ((err = acct_session_csrf(csrf, req->srv->store, req->auth.session_id)) < 0 ||
            json_object_set_new(out, "csrf_token", json_string(csrf)) < 0) {
            json_decref(out);
            return err < 0 ? err : ed_error_set(ED_ENOMEM, "response body");
        }
    }
    return respond(res, 200, out);
}

/* ---- API keys ------------------------------------------------------------------ */

static int post_key(gw_request *req, gw_response *res)
{
    acct_key_new k = {.daily_budget_mcoins = -1};
    char key[ACCT_KEY_MAX_LEN + 1];
    acct_actor actor = gw__actor_of(req);
    acct_key_info info;
    json_t *body, *scopes = NULL, *out;
    int err;

    if ((err = gw_request_json(&body, req)) < 0 ||
        (err = str_field(&k.name, body, "name", true)) < 0 ||
        (err = str_field(&k.env, body, "env", true)) < 0 ||
        (err = ed_json_get_array(&scopes, body, "scopes", true)) < 0 ||
        (err = acct_scopes_from_json(&k.scopes, scopes)) < 0 ||
        (err = gw_json_int(&k.expires_in_days, body, "expires_in_days", 1, 3650, false)) < 0 ||
        (err = gw_json_int(&k.daily_budget_mcoins, body, "daily_budget_mcoins", 0, GW_MAX_MCOINS, false)) < 0 ||
        (err = gw_json_int(&k.rate_limit_per_min, body, "rate_limit_per_min", 1, GW_MAX_KEY_RATE, false)) < 0)
        return err;
    /* A key the server would refuse with 401 later is refused now. */
    if (!acct_key_env_accepted(req->srv->cfg.key_envs, k.env)) {
        char envs[32];
        acct_key_envs_accepted(envs, sizeof(envs), req->srv->cfg.key_envs);
        return ed_error_set(ED_EUNPROC, "field 'env': this server accepts API keys for env %s, not '%.16s'",
                            envs, k.env);
    }
    if ((k.scopes & GW_SCOPE_ADMIN) && strcmp(req->auth.role, "admin") != 0)
        return ed_error_set(ED_EPERM, "only administrators may create keys with scope admin");
    if (req->auth.via_key && (k.scopes & ~req->auth.scopes))
        return ed_error_set(ED_EPERM, "an API key cannot create a key with scopes it lacks");
    if ((err = acct_key_create(key, &info, req->srv->store, &actor, req->auth.user_id, &k)) < 0)
        return err;
    out = acct_key_json(&info);
    if (out && json_object_set_new(out, "key", json_string(key)) < 0) {
        json_decref(out);
        out = NULL;
    }
    memset(key, 0, sizeof(key));
    return respond(res, 201, out);
}

static int get_keys(gw_request *req, gw_response *res)
{
    json_t *items;
    int64_t cursor, next;
    int limit, err;

    if ((err = gw_request_page_id(&limit, &cursor, req)) < 0 ||
        (err = acct_key_list(&items, &next, req->srv->store, req->auth.user_id, limit, cursor)) < 0)
        return err;
    return gw_respond_items(res, items, next);
}

static int delete_key(gw_request *req, gw_response *res)
{
    acct_actor actor = gw__actor_of(req);
    int64_t id = parse_id(req->params[0]);
    int err;

    if (id == 0)
        return ed_error_set(ED_ENOTFOUND, "no API key '%.40s'", req->params[0]);
    if ((err = acct_key_revoke(req->srv->store, &actor, req->auth.user_id, id)) < 0)
        return err;
    return gw_respond_empty(res, 204);
}

/* ---- admin -------------------------------------------------------------------- */

static int get_admin_users(gw_request *req, gw_response *res)
{
    json_t *items;
    int64_t cursor, next;
    int limit, err;

    if ((err = gw_request_page_id(&limit, &cursor, req)) < 0 ||
        (err = acct_user_list(&items, &next, req->srv->store, limit, cursor)) < 0)
        return err;
    return gw_respond_items(res, items, next);
}

static int patch_admin_user(gw_request *req, gw_response *res)
{
    acct_user_patch p = {.role = NULL, .tier = NULL, .suspended = -1};
    acct_actor actor = gw__actor_of(req);
    int64_t id = parse_id(req->params[0]);
    bool suspended = false;
    json_t *body;
    acct_user u;
    int err;

    if ((err = gw_request_json(&body, req)) < 0 ||
        (err = str_field(&p.role, body, "role", false)) < 0 ||
        (err = str_field(&p.tier, body, "tier", false)) < 0)
        return err;
    if (json_object_get(body, "suspended") && !json_is_null(json_object_get(body, "suspended"))) {
        if ((err = ed_json_get_bool(&suspended, body, "suspended", true)) < 0)
            return err;
        p.suspended = suspended ? 1 : 0;
    }
    if ((p.role && (err = acct_role_check(p.role)) < 0) ||
        (p.tier && (err = acct_tier_check(req->srv->store, p.tier)) < 0))
        return err;
    if (id == 0)
        return ed_error_set(ED_ENOTFOUND, "no user '%.40s'", req->params[0]);
    if (id == req->auth.user_id && p.suspended == 1)
        return ed_error_set(ED_EINVAL, "administrators cannot suspend themselves");
    if ((err = acct_user_update(req->srv->store, &actor, id, &p)) < 0 ||
        (err = acct_user_get(&u, req->srv->store, id)) < 0)
        return err;
    /* a suspended user's kernels and jobs stop too (reason "suspended") */
    if (p.suspended == 1 && req->srv->sched && (err = sched_user_stop(NULL, req->srv->sched, id, "suspended")) < 0)
        return err;
    /* a new tier's workspace limit goes to the user's project trees (proj_ws.h) */
    if (p.tier && req->srv->projects)
        proj_workspace_sync(req->srv->projects, id, NULL);
    return respond(res, 200, acct_user_json(&u, true));
}

static int get_admin_audit(gw_request *req, gw_response *res)
{
    json_t *items = NULL;
    int64_t cursor, next = 0;
    int limit, err;

    if ((err = gw_request_page_id(&limit, &cursor, req)) < 0 ||
        (err = acct_audit_list(&items, &next, req->srv->store, limit, cursor)) < 0)
        return err;
    return gw_respond_items(res, items, next);
}

static int settings_json(gw_request *req, gw_response *res)
{
    bool open;
    int err;

    if ((err = acct_setting_get_bool(&open, req->srv->store, "signup_open",
                                    req->srv->cfg.signup_open)) < 0)
        return err;
    return respond(res, 200, json_pack("{s:b}", "signup_open", open));
}

static int get_admin_settings(gw_request *req, gw_response *res)
{
    return settings_json(req, res);
}

static int patch_admin_settings(gw_request *req, gw_response *res)
{
    acct_actor actor = gw__actor_of(req);
    bool open = false;
    json_t *body;
    int err;

    if ((err = gw_request_json(&body, req)) < 0 ||
        (err = ed_json_get_bool(&open, body, "signup_open", true)) < 0)
        return err;
    if ((err = acct_setting_set(req->srv->store, &actor, "signup_open", open ? "true" : "false")) < 0)
        return err;
    return settings_json(req, res);
}

#define ADMIN (GW_AUTH | GW_SCOPE_ADMIN)

const gw_route gw__routes_auth[] = {
    {"POST", "/api/v1/auth/signup", post_signup, GW_PUBLIC, "Create an account (when signup is open)"},
    {"POST", "/api/v1/auth/login", post_login, GW_PUBLIC, "Log in: session cookie and CSRF token"},
    {"POST", "/api/v1/auth/logout", post_logout, GW_AUTH, "End this browser session"},
    {"GET", "/api/v1/me", get_me, GW_AUTH | GW_SCOPE_READ, "The caller's account"},
    {"POST", "/api/v1/keys", post_key, GW_AUTH | GW_SCOPE_WRITE, "Create an API key (shown once)"},
    {"GET", "/api/v1/keys", get_keys, GW_AUTH | GW_SCOPE_READ, "List the caller's API keys"},
    {"DELETE", "/api/v1/keys/{id}", delete_key, GW_AUTH | GW_SCOPE_WRITE, "Revoke an API key"},
    {"GET", "/api/v1/admin/users", get_admin_users, ADMIN, "List users"},
    {"PATCH", "/api/v1/admin/users/{id}", patch_admin_user, ADMIN, "Change a user's tier, role or suspension"},
    {"GET", "/api/v1/admin/audit", get_admin_audit, ADMIN, "The audit trail, newest first"},
    {"GET", "/api/v1/admin/settings", get_admin_settings, ADMIN, "Operator settings"},
    {"PATCH", "/api/v1/admin/settings", patch_admin_settings, ADMIN, "Change operator settings"},
    {NULL, NULL, NULL, 0, NULL},
};
