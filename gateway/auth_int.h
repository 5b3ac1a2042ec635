/*
 * auth_int.h - private to the gateway's auth files: accounts.c, sessions.c,
 * keys.c, ratelimit.c, audit.c, auth.c, auth_routes.c (and their unit tests).
 *
 * Layering: accounts/sessions/keys/ratelimit/audit work on an ed_store and
 * know nothing of HTTP (the CLI and the unit tests call them directly);
 * auth.c (gw__auth_authenticate) and auth_routes.c (the handlers) sit on top
 * and speak gw_request/gw_response.
 */
#ifndef GW_AUTH_INT_H
#define GW_AUTH_INT_H

#include "gw_int.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- who acted, for audit rows ---------------------------------------- */

typedef struct gw__actor {
    int64_t     user_id;     /* 0: the operator (CLI), the system or anonymous */
    const char *ip;          /* NULL when not over HTTP */
    const char *request_id;  /* NULL when not over HTTP */
} gw__actor;

/* The actor of an HTTP request (borrows req's strings). */
gw__actor gw__actor_of(const gw_request *req);

/* Append an audit row on `st` (inside the caller's transaction if one is
 * open). `actor` may be NULL (the operator); `target` ("user:12") and
 * `detail` (borrowed JSON object) may be NULL. 0 or ED_EIO/ED_ENOMEM. */
int gw__audit_store(ed_store *st, const gw__actor *actor, const char *action,
                    const char *target, json_t *detail);

/* ---- validation (accounts.c) ---------------------------------------------
 * Each returns 0 or ED_EINVAL with a message naming the rule. */
int gw__username_check(const char *username);  /* 3..32 of [a-z0-9_-], starts with a letter */
int gw__email_check(const char *email);        /* one '@', non-empty parts, <= 254, no spaces */
int gw__password_check(const char *password);  /* 8..1024 bytes */
int gw__role_check(const char *role);          /* "user"|"admin" */
int gw__tier_check(ed_store *st, const char *tier); /* a tier of quota/'s tiers table */

/* ---- passwords (accounts.c) ---------------------------------------------- */

/* Argon2id parameters: OWASP's minimum (m = 19456 KiB, t = 2, p = 1). */
#define GW_PWHASH_OPSLIMIT  2ULL
#define GW_PWHASH_MEMLIMIT  ((size_t)19456 * 1024)
#define GW_PWHASH_STRBYTES  128   /* crypto_pwhash_STRBYTES */

/* Hash `password` into `out` ("$argon2id$v=19$m=19456,t=2,p=1$..."). 0 or
 * ED_ENOMEM (libsodium could not get the memory). */
int gw__password_hash(char out[GW_PWHASH_STRBYTES], const char *password);
/* True when `password` matches `hash`. With hash NULL (no such user) a dummy
 * hash is verified instead so the time taken does not tell the user exists;
 * the answer is then false. */
bool gw__password_verify(const char *hash, const char *password);
/* True when `hash` was made with other parameters than today's (rehash it at
 * the next successful login). */
bool gw__password_needs_rehash(const char *hash);

/* ---- users (accounts.c) -------------------------------------------------- */

typedef struct gw__user {
    int64_t id;
    char    username[33];
    char    email[256];
    char    role[8];
    char    tier[16];
    bool    suspended;
    int64_t created_at;                         /* ms */
    char    password_hash[GW_PWHASH_STRBYTES];
} gw__user;

/* Read a user by id / by name. ED_ENOTFOUND, ED_EIO. */
int gw__user_get(gw__user *out, ed_store *st, int64_t id);
int gw__user_by_name(gw__user *out, ed_store *st, const char *username);

/* Users by id, `limit` of them with id > after_id, as admin-view JSON
 * objects. *next_cursor: the last id returned when more follow, else 0. */
int gw__users_list(json_t **items, int64_t *next_cursor, ed_store *st, int limit, int64_t after_id);

/* ---- keyset pages (accounts.c) --------------------------------------------- */

/* Builds the JSON of the row `s` stands on and sets *id to the row's id;
 * NULL when out of memory. */
typedef json_t *(*gw__row_json_fn)(int64_t *id, sqlite3_stmt *s, void *payload);

/* One page of a listing: steps `s` (prepared and bound by the caller to
 * return at most limit + 1 rows in cursor order) and appends row()'s JSON
 * for the first `limit` rows to a new array in *items (caller owns it).
 * *next_cursor: the id of the last row returned when another row follows,
 * else 0. Finalizes s in every case. ED_ENOMEM ("<what>"), or ED_EIO
 * ("<action>: <sqlite message>"); *items stays NULL on failure. */
int gw__page_rows(json_t **items, int64_t *next_cursor, sqlite3_stmt *s, int limit,
                  gw__row_json_fn row, void *payload, const char *what, const char *action);

/* Validate, hash and insert a user plus an audit row `action` ("auth.signup",
 * "user.create") in one transaction. ED_EINVAL for a bad field, ED_EEXISTS
 * when the name or email is taken; nothing is written on failure. */
int gw__user_insert(int64_t *out_id, ed_store *st, const gw__actor *actor, const char *action,
                    const char *username, const char *email, const char *password,
                    const char *role, const char *tier);

/* Replace a user's password hash (rehash at login). */
int gw__user_set_password_hash(ed_store *st, int64_t id, const char *hash);

/* Fields to change; NULL / -1 leave a field as it is. */
typedef struct gw__user_patch {
    const char *role;
    const char *tier;
    int         suspended;   /* -1 unchanged, 0 or 1 */
} gw__user_patch;

/* Apply `p` to user `id` in one transaction: one audit row per field that
 * changes (user.set_role, user.set_tier, user.suspend, user.unsuspend);
 * suspending also deletes the user's sessions. ED_EINVAL, ED_ENOTFOUND. */
int gw__user_update(ed_store *st, const gw__actor *actor, int64_t id, const gw__user_patch *p);

/* The API's user object {id, username, email, role, tier, created_at}
 * (+ suspended when `admin_view`). New reference, NULL when out of memory. */
json_t *gw__user_json(const gw__user *u, bool admin_view);

/* ---- settings (accounts.c) ------------------------------------------------ */

/* A boolean setting from table settings ("true"/"false"), `dflt` when unset. */
int gw__setting_get_bool(bool *out, ed_store *st, const char *key, bool dflt);
/* Set a setting and write an audit row "settings.set" in one transaction. */
int gw__setting_set(ed_store *st, const gw__actor *actor, const char *key, const char *value);

/* ---- addresses logged in from (accounts.c) ------------------------------------ */

/* *out: `user_id` logged in with the right password from `ip` within the last
 * 90 days. Such addresses get past an account-wide login lock. */
int gw__login_address_known(bool *out, ed_store *st, int64_t user_id, const char *ip, int64_t now_ms);
/* Record a successful login from `ip` (keeps the user's 16 most recent). */
int gw__login_address_remember(ed_store *st, int64_t user_id, const char *ip, int64_t now_ms);

/* ---- sessions (sessions.c) ----------------------------------------------- */

#define GW_SESSION_TOKEN_CHARS 43   /* ~256 bits of base62 */
#define GW_CSRF_TOKEN_CHARS    32

typedef struct gw__session {
    int64_t id;
    int64_t expires_at;                          /* ms */
    char    csrf[GW_CSRF_TOKEN_CHARS + 1];
} gw__session;

/* Create a session for `user_id` lasting `ttl_ms`; the cookie value goes to
 * `token`, the CSRF token to `s->csrf`. Only the token's SHA-256 is stored. */
int gw__session_create(char token[GW_SESSION_TOKEN_CHARS + 1], gw__session *s, ed_store *st,
                       int64_t user_id, int64_t ttl_ms, const char *ip);
/* The live session behind a cookie value and its user. ED_EAUTH when there
 * is none, it expired (then it is deleted) or the user is suspended. */
int gw__session_lookup(gw__session *s, gw__user *u, ed_store *st, const char *token);
/* Delete a session by id / by cookie value (no error when already gone). */
int gw__session_delete(ed_store *st, int64_t id);
int gw__session_delete_token(ed_store *st, const char *token);
/* Delete `user_id`'s sessions that expired before `now_ms` (housekeeping at login). */
int gw__sessions_prune(ed_store *st, int64_t user_id, int64_t now_ms);
/* The CSRF token of session `id` into `csrf`. ED_ENOTFOUND when it is gone. */
int gw__session_csrf(char csrf[GW_CSRF_TOKEN_CHARS + 1], ed_store *st, int64_t id);

/* ---- API keys (keys.c) ---------------------------------------------------- */

#define GW_KEY_RANDOM_CHARS  32
#define GW_KEY_CHECK_CHARS   6
#define GW_KEY_PREFIX_RANDOM 12     /* random chars kept in the display prefix */
#define GW_KEY_MAX_LEN       64     /* "eddy_test_" + 32 + "_" + 6 = 49 */

#define GW_SCOPES_ALL (GW_SCOPE_READ | GW_SCOPE_WRITE | GW_SCOPE_RUN | GW_SCOPE_SERVE | GW_SCOPE_ADMIN)
#define GW_SCOPES_SESSION (GW_SCOPE_READ | GW_SCOPE_WRITE | GW_SCOPE_RUN | GW_SCOPE_SERVE)

/* CRC-32 (IEEE 802.3, as zlib's crc32) of `n` bytes. */
uint32_t gw__crc32(const void *p, size_t n);
/* "dev"|"test"|"prod": 0, else ED_EINVAL. */
int gw__env_check(const char *env);
/* Generate a new key for `env` into `out` (GW_KEY_MAX_LEN + 1 bytes). */
int gw__key_generate(char out[GW_KEY_MAX_LEN + 1], const char *env);
/* Check a key's shape and checksum without touching the store; its env goes
 * to `env`. ED_EAUTH ("malformed API key", "API key checksum mismatch"). */
int gw__key_parse(char env[8], const char *key);
/* Scope names <-> GW_SCOPE_* bits. "read,write" style lists. */
int gw__scopes_parse_list(unsigned *out, const char *csv);
int gw__scopes_from_json(unsigned *out, const json_t *arr);   /* ED_EINVAL */
void gw__scopes_to_csv(char *out, size_t outlen, unsigned scopes);
json_t *gw__scopes_json(unsigned scopes);

typedef struct gw__key_new {
    const char *name;
    const char *env;
    unsigned    scopes;
    int64_t     expires_in_days;      /* 0: never */
    int64_t     daily_budget_mcoins;  /* -1: none */
    int64_t     rate_limit_per_min;   /* 0: server default */
} gw__key_new;

typedef struct gw__key_info {
    int64_t  id, user_id;
    char     name[65];
    char     env[8];
    char     prefix[32];
    unsigned scopes;
    int64_t  created_at, expires_at, revoked_at, last_used_at;  /* 0: none */
    int64_t  daily_budget_mcoins;     /* -1: none */
    int64_t  rate_limit_per_min;      /* 0: server default */
} gw__key_info;

/* Create a key for `user_id` (validated: name 1..64 printable, env, scopes
 * non-empty) and audit "key.create". The secret goes to `key` (shown once).
 * Caller checks who may ask for which scopes. */
int gw__key_create(char key[GW_KEY_MAX_LEN + 1], gw__key_info *info, ed_store *st,
                   const gw__actor *actor, int64_t user_id, const gw__key_new *k);

/* What the hot path needs about a key and its owner. */
typedef struct gw__key_auth {
    gw__key_info key;
    char         username[33];
    char         role[8];
    char         tier[16];
    bool         suspended;
    int64_t      env_daily_budget_mcoins;  /* the env's cap for the owner's tier; -1: none */
    int64_t      env_rate_limit_per_min;   /* the env's cap; 0: none */
} gw__key_auth;

/* Look a well-formed key up by its SHA-256 with one indexed SELECT (a
 * prepared statement cached per thread). ED_EAUTH when unknown; the caller
 * judges expiry, revocation, suspension, env and scopes. */
int gw__key_lookup(gw__key_auth *out, ed_store *st, const char *key);
/* Record use at `now_ms` when the last record is a minute old or more. */
int gw__key_touch(ed_store *st, const gw__key_auth *k, int64_t now_ms);
/* True when this server accepts keys of `env`: one of dev, test, prod and,
 * when the operator set `key_envs`, listed there. */
bool gw__key_env_accepted(const gw_config *cfg, const char *env);
/* The envs this server accepts, "dev, test, prod" style, into out. */
void gw__key_envs_accepted(char *out, size_t outlen, const gw_config *cfg);
/* The daily budget that binds key `key_id`: the smaller of the key's own
 * daily_budget_mcoins and its env's cap for its owner's tier
 * (tier_key_envs); -1 when neither sets one. ED_ENOTFOUND, ED_EIO.
 * For whoever starts work on a key's behalf (kernels, jobs, deployments). */
int gw__key_budget(int64_t *daily_budget_mcoins, ed_store *st, int64_t key_id);

/* Revoke key `key_id` of `user_id` and audit "key.revoke". ED_ENOTFOUND when
 * the user has no such active key. */
int gw__key_revoke(ed_store *st, const gw__actor *actor, int64_t user_id, int64_t key_id);

/* A key as the API lists it: no secret. New reference, NULL when out of memory. */
json_t *gw__key_json(const gw__key_info *k);
/* The user's active keys, newest first, `limit` of them with id < before_id
 * (0: from the newest). *next_cursor is 0 at the end. */
int gw__keys_list(json_t **items, int64_t *next_cursor, ed_store *st, int64_t user_id, int limit,
                  int64_t before_id);

/* ---- rate limiting (ratelimit.c) -------------------------------------------
 * Keyed fixed windows of one minute that open at a key's first hit: at most
 * `limit` hits per window. Thread-safe. Keys are namespaced by the caller
 * ("login:user:alice", "login:ip:1.2.3.4", "key:12"). */
#define GW_RATELIMIT_WINDOW_MS 60000

/* Count a hit for `key` at `now_ms` (monotonic ms). 0 while within the limit;
 * ED_ELIMIT with *retry_after_s (>= 1) when the window is already full (the
 * refused hit is not counted). ED_ENOMEM. */
int gw__ratelimit_hit(struct gw_ratelimit *rl, const char *key, int limit, int64_t now_ms,
                      int *retry_after_s);
/* Like gw__ratelimit_hit without counting: ED_ELIMIT when `limit` hits are
 * already in the window. */
int gw__ratelimit_check(struct gw_ratelimit *rl, const char *key, int limit, int64_t now_ms,
                        int *retry_after_s);
/* Milliseconds on the monotonic clock, for the calls above. */
int64_t gw__ratelimit_now_ms(void);

/* Backoff after failures (login): `key` is refused (ED_ELIMIT with
 * *retry_after_s) while locked. gw__backoff_fail counts a failure at now_ms:
 * from the `free_failures`-th on, the key is locked for a minute, doubled by
 * each later failure up to GW_BACKOFF_MAX_MS; failures older than
 * GW_BACKOFF_FORGET_MS are forgotten. gw__backoff_reset clears the key. */
#define GW_BACKOFF_MAX_MS    ((int64_t)15 * 60 * 1000)
#define GW_BACKOFF_FORGET_MS ((int64_t)60 * 60 * 1000)
int  gw__backoff_check(struct gw_ratelimit *rl, const char *key, int64_t now_ms, int *retry_after_s);
int  gw__backoff_fail(struct gw_ratelimit *rl, const char *key, int free_failures, int64_t now_ms);
void gw__backoff_reset(struct gw_ratelimit *rl, const char *key);

/* Upper bounds of integer fields in request bodies. */
#define GW_MAX_MCOINS   INT64_C(1000000000000000)  /* 10^12 A-coins */
#define GW_MAX_KEY_RATE 1000000                    /* requests a minute */

/* Defaults when the configuration leaves a value at 0. */
#define GW_DEFAULT_LOGIN_ATTEMPTS 10
#define GW_DEFAULT_KEY_RATE       600
#define GW_DEFAULT_SESSION_TTL_MS ((int64_t)7 * 24 * 3600 * 1000)

#define GW_SESSION_COOKIE "eddy_session"
#define GW_CSRF_HEADER    "X-CSRF-Token"

#endif
