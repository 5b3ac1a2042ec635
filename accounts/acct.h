/*
 * acct.h - accounts: users (Argon2id passwords, roles, tiers, suspension),
 * browser sessions, API keys (format, scopes, envs, budgets, rate limits),
 * the addresses users log in from, operator settings and the audit trail.
 *
 * Everything here works on an ed_store and knows nothing of HTTP: the
 * gateway's handlers (gateway/auth.c, auth_routes.c), `eddy admin` (cmd/)
 * and the unit tests call it directly. Each function uses the calling
 * thread's SQLite connection, so all are safe from any thread. A function
 * that writes and audits does both in one transaction: on failure neither
 * is left behind.
 *
 *     int64_t id;
 *     if (acct_user_create(&id, st, "alice", "alice@example.org", pw, "user", "free") < 0)
 *         fprintf(stderr, "%s\n", ed_error_last());
 *
 * Tables owned (accounts/README.md): users, sessions, api_keys,
 * login_addresses, tier_key_envs, settings, audit. Tier names are quota/'s
 * (quota_tier_exists).
 */
#ifndef ACCT_H
#define ACCT_H

#include "ed_json.h"
#include "ed_store.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- who acted, for audit rows ---------------------------------------------- */

typedef struct acct_actor {
    int64_t     user_id;     /* 0: the operator (CLI), the system or anonymous */
    const char *ip;          /* NULL when not over HTTP */
    const char *request_id;  /* NULL when not over HTTP */
} acct_actor;

/* ---- audit (audit.c, table audit) ------------------------------------------------
 * Append-only. acct_audit_append writes on the thread's connection, inside
 * the caller's transaction if one is open, so a change and its row commit
 * (or roll back) together. */

/* Append a row at now. `actor` may be NULL (the operator); `target`
 * ("user:12", "key:5") and `detail` (borrowed JSON object) may be NULL.
 * 0 or ED_EIO/ED_ENOMEM. */
int acct_audit_append(ed_store *st, const acct_actor *actor, const char *action,
                      const char *target, json_t *detail);
/* Rows newest first, `limit` of them with id < before_id (0: from the
 * newest), as {id, at, actor_id, action, target, ip, request_id, detail}
 * into a new array *items (caller owns it). *next_cursor: the id of the last
 * row returned when more follow, else 0. ED_EIO, ED_ENOMEM. */
int acct_audit_list(json_t **items, int64_t *next_cursor, ed_store *st, int limit, int64_t before_id);

/* ---- validation (accounts.c) -------------------------------------------------
 * Each returns 0 or ED_EINVAL with a message naming the rule. */
int acct_username_check(const char *username);  /* 3..32 of [a-z0-9_-], starts with a letter */
int acct_email_check(const char *email);        /* one '@', non-empty parts, <= 254, no spaces */
int acct_password_check(const char *password);  /* 8..1024 bytes */
int acct_role_check(const char *role);          /* "user"|"admin" */
int acct_tier_check(ed_store *st, const char *tier); /* a tier of quota/'s (quota_tier_exists) */

/* ---- passwords (accounts.c) ---------------------------------------------------- */

/* Argon2id parameters: OWASP's minimum (m = 19456 KiB, t = 2, p = 1). */
#define ACCT_PWHASH_OPSLIMIT  2ULL
#define ACCT_PWHASH_MEMLIMIT  ((size_t)19456 * 1024)
#define ACCT_PWHASH_STRBYTES  128   /* crypto_pwhash_STRBYTES */

/* Hash `password` into `out` ("$argon2id$v=19$m=19456,t=2,p=1$..."). 0 or
 * ED_ENOMEM (libsodium could not get the memory). */
int acct_password_hash(char out[ACCT_PWHASH_STRBYTES], const char *password);
/* True when `password` matches `hash`. With hash NULL (no such user) a dummy
 * hash is verified instead so the time taken does not tell the user exists;
 * the answer is then false. */
bool acct_password_verify(const char *hash, const char *password);
/* True when `hash` was made with other parameters than today's (rehash it at
 * the next successful login). */
bool acct_password_needs_rehash(const char *hash);

/* ---- users (accounts.c, table users) --------------------------------------------- */

typedef struct acct_user {
    int64_t id;
    char    username[33];
    char    email[256];
    char    role[8];
    char    tier[16];
    bool    suspended;
    int64_t created_at;                           /* ms */
    char    password_hash[ACCT_PWHASH_STRBYTES];
} acct_user;

/* Read a user by id / by name. ED_ENOTFOUND, ED_EIO. The by-id lookup (every
 * GET /api/v1/me) uses a statement prepared once per thread. */
int acct_user_get(acct_user *out, ed_store *st, int64_t id);
int acct_user_get_by_name(acct_user *out, ed_store *st, const char *username);
/* Copy the tier name of user `id` into tier[0..size) (""
 * on failure). ED_ENOTFOUND, ED_EIO. The ledger's quota_user_tier_fn:
 * accounts.c installs it in quota/ as the program starts. */
int acct_user_tier(char *tier, size_t size, ed_store *st, int64_t id);
/* The id of the user named `username` (0 on failure). ED_ENOTFOUND, ED_EIO. */
int acct_user_id(int64_t *out, ed_store *st, const char *username);
/* How many users there are (the admin overview). ED_EIO. */
int acct_user_count(int64_t *out, ed_store *st);

/* Users by id, `limit` of them with id > after_id, as admin-view JSON
 * objects in a new array *items (caller owns it). *next_cursor: the last id
 * returned when more follow, else 0. */
int acct_user_list(json_t **items, int64_t *next_cursor, ed_store *st, int limit, int64_t after_id);

/* Validate, hash and insert a user plus an audit row `action` ("auth.signup",
 * "user.create") in one transaction. ED_EINVAL for a bad field, ED_EEXISTS
 * when the name or email is taken; nothing is written on failure. */
int acct_user_insert(int64_t *out_id, ed_store *st, const acct_actor *actor, const char *action,
                     const char *username, const char *email, const char *password,
                     const char *role, const char *tier);
/* For operators (`eddy admin create-user`): acct_user_insert with no actor
 * and action "user.create"; role NULL is "user", tier NULL "free". */
int acct_user_create(int64_t *out_id, ed_store *st, const char *username, const char *email,
                     const char *password, const char *role, const char *tier);

/* Replace a user's password hash (rehash at login). */
int acct_user_set_password_hash(ed_store *st, int64_t id, const char *hash);

/* Fields to change; NULL / -1 leave a field as it is. */
typedef struct acct_user_patch {
    const char *role;
    const char *tier;
    int         suspended;   /* -1 unchanged, 0 or 1 */
} acct_user_patch;

/* Apply `p` to user `id` in one transaction: one audit row per field that
 * changes (user.set_role, user.set_tier, user.suspend, user.unsuspend);
 * suspending also deletes the user's sessions. ED_EINVAL, ED_ENOTFOUND. */
int acct_user_update(ed_store *st, const acct_actor *actor, int64_t id, const acct_user_patch *p);
/* For operators (`eddy admin set-role|set-tier`): change the role / tier of
 * the user named `username`, audited with no actor. ED_EINVAL, ED_ENOTFOUND. */
int acct_user_set_role(ed_store *st, const char *username, const char *role);
int acct_user_set_tier(ed_store *st, const char *username, const char *tier);

/* The API's user object {id, username, email, role, tier, created_at}
 * (+ suspended when `admin_view`). New reference, NULL when out of memory. */
json_t *acct_user_json(const acct_user *u, bool admin_view);

/* ---- settings (accounts.c, table settings) ---------------------------------------- */

/* A boolean setting ("true"/"false"), `dflt` when unset. */
int acct_setting_get_bool(bool *out, ed_store *st, const char *key, bool dflt);
/* Set a setting and write an audit row "settings.set" in one transaction. */
int acct_setting_set(ed_store *st, const acct_actor *actor, const char *key, const char *value);

/* ---- addresses logged in from (accounts.c, table login_addresses) -------------------- */

/* *out: `user_id` logged in with the right password from `ip` within the last
 * 90 days. Such addresses get past an account-wide login lock. */
int acct_login_address_known(bool *out, ed_store *st, int64_t user_id, const char *ip, int64_t now_ms);
/* Record a successful login from `ip` (keeps the user's 16 most recent). */
int acct_login_address_remember(ed_store *st, int64_t user_id, const char *ip, int64_t now_ms);

/* ---- sessions (sessions.c, table sessions) ---------------------------------------- */

#define ACCT_SESSION_TOKEN_CHARS 43   /* ~256 bits of base62 */
#define ACCT_CSRF_TOKEN_CHARS    32
#define ACCT_SESSION_TTL_DEFAULT_MS ((int64_t)7 * 24 * 3600 * 1000)

typedef struct acct_session {
    int64_t id;
    int64_t expires_at;                            /* ms */
    char    csrf[ACCT_CSRF_TOKEN_CHARS + 1];
} acct_session;

/* Create a session for `user_id` lasting `ttl_ms` (<= 0: the default); the
 * cookie value goes to `token`, the CSRF token to `s->csrf`. Only the
 * token's SHA-256 is stored. */
int acct_session_create(char token[ACCT_SESSION_TOKEN_CHARS + 1], acct_session *s, ed_store *st,
                        int64_t user_id, int64_t ttl_ms, const char *ip);
/* The live session behind a cookie value and its user. ED_EAUTH when there
 * is none, it expired (then it is deleted) or the user is suspended. */
int acct_session_lookup(acct_session *s, acct_user *u, ed_store *st, const char *token);
/* Delete a session by id / by cookie value (no error when already gone). */
int acct_session_delete(ed_store *st, int64_t id);
int acct_session_delete_token(ed_store *st, const char *token);
/* Delete `user_id`'s sessions that expired before `now_ms` (housekeeping at login). */
int acct_session_prune(ed_store *st, int64_t user_id, int64_t now_ms);
/* The CSRF token of session `id` into `csrf`. ED_ENOTFOUND when it is gone. */
int acct_session_csrf(char csrf[ACCT_CSRF_TOKEN_CHARS + 1], ed_store *st, int64_t id);

/* ---- API keys (keys.c, tables api_keys and tier_key_envs) ----------------------------
 * A key reads eddy_<env>_<32 base62 random>_<6 base62 CRC-32 of what precedes>. */

#define ACCT_KEY_RANDOM_CHARS  32
#define ACCT_KEY_CHECK_CHARS   6
#define ACCT_KEY_PREFIX_RANDOM 12   /* random chars kept in the display prefix */
#define ACCT_KEY_MAX_LEN       64   /* "eddy_test_" + 32 + "_" + 6 = 49 */

/* Scopes a key carries. The gateway's route flags GW_SCOPE_* have the same
 * values (asserted in gateway/auth.c), so a route's flags mask a key's scopes. */
enum {
    ACCT_SCOPE_READ  = 1u << 8,
    ACCT_SCOPE_WRITE = 1u << 9,
    ACCT_SCOPE_RUN   = 1u << 10,
    ACCT_SCOPE_SERVE = 1u << 11,
    ACCT_SCOPE_ADMIN = 1u << 12,   /* also requires role admin, whatever the credential */
};
#define ACCT_SCOPES_ALL (ACCT_SCOPE_READ | ACCT_SCOPE_WRITE | ACCT_SCOPE_RUN | ACCT_SCOPE_SERVE | ACCT_SCOPE_ADMIN)
#define ACCT_SCOPES_SESSION (ACCT_SCOPE_READ | ACCT_SCOPE_WRITE | ACCT_SCOPE_RUN | ACCT_SCOPE_SERVE)

/* CRC-32 (IEEE 802.3, as zlib's crc32) of `n` bytes: the key checksum's. */
uint32_t acct_key_crc32(const void *p, size_t n);
/* "dev"|"test"|"prod": 0, else ED_EINVAL. */
int acct_key_env_check(const char *env);
/* Generate a new key for `env` into `out` (ACCT_KEY_MAX_LEN + 1 bytes). */
int acct_key_generate(char out[ACCT_KEY_MAX_LEN + 1], const char *env);
/* Check a key's shape and checksum without touching the store; its env goes
 * to `env`. ED_EAUTH ("malformed API key", "API key checksum mismatch"). */
int acct_key_parse(char env[8], const char *key);
/* Scope names <-> ACCT_SCOPE_* bits. "read,write" style lists. */
int acct_scopes_parse_list(unsigned *out, const char *csv);
int acct_scopes_from_json(unsigned *out, const json_t *arr);   /* ED_EINVAL */
void acct_scopes_to_csv(char *out, size_t outlen, unsigned scopes);
json_t *acct_scopes_json(unsigned scopes);

typedef struct acct_key_new {
    const char *name;
    const char *env;
    unsigned    scopes;
    int64_t     expires_in_days;      /* 0: never */
    int64_t     daily_budget_mcoins;  /* -1: none */
    int64_t     rate_limit_per_min;   /* 0: server default */
} acct_key_new;

typedef struct acct_key_info {
    int64_t  id, user_id;
    char     name[65];
    char     env[8];
    char     prefix[32];
    unsigned scopes;
    int64_t  created_at, expires_at, revoked_at, last_used_at;  /* ms; 0: none */
    int64_t  daily_budget_mcoins;     /* -1: none */
    int64_t  rate_limit_per_min;      /* 0: server default */
} acct_key_info;

/* Create a key for `user_id` (validated: name 1..64 printable, env, scopes
 * non-empty) and audit "key.create". The secret goes to `key` (shown once).
 * Caller checks who may ask for which scopes. */
int acct_key_create(char key[ACCT_KEY_MAX_LEN + 1], acct_key_info *info, ed_store *st,
                    const acct_actor *actor, int64_t user_id, const acct_key_new *k);

/* What the hot path needs about a key and its owner. */
typedef struct acct_key_auth {
    acct_key_info key;
    char          username[33];
    char          role[8];
    char          tier[16];
    bool          suspended;
    int64_t       env_daily_budget_mcoins;  /* the env's cap for the owner's tier; -1: none */
    int64_t       env_rate_limit_per_min;   /* the env's cap; 0: none */
} acct_key_auth;

/* Look a well-formed key up by its SHA-256 with one indexed SELECT (a
 * prepared statement cached per thread). ED_EAUTH when unknown; the caller
 * judges expiry, revocation, suspension, env and scopes. */
int acct_key_lookup(acct_key_auth *out, ed_store *st, const char *key);
/* Record use at `now_ms` when the last record is a minute old or more. */
int acct_key_touch(ed_store *st, const acct_key_auth *k, int64_t now_ms);
/* True when a server whose `key_envs` setting is the given list ("dev,prod";
 * "" = no restriction) accepts keys of `env`: one of dev, test, prod and,
 * when the list is not empty, listed there. */
bool acct_key_env_accepted(const char *key_envs, const char *env);
/* The envs such a server accepts, "dev, test, prod" style, into out. */
void acct_key_envs_accepted(char *out, size_t outlen, const char *key_envs);
/* The daily budget that binds key `key_id`: the smaller of the key's own
 * daily_budget_mcoins and its env's cap for its owner's tier
 * (tier_key_envs); -1 when neither sets one. ED_ENOTFOUND, ED_EIO.
 * For whoever starts work on a key's behalf (kernels, jobs, deployments). */
int acct_key_budget(int64_t *daily_budget_mcoins, ed_store *st, int64_t key_id);

/* Revoke key `key_id` of `user_id` and audit "key.revoke". ED_ENOTFOUND when
 * the user has no such active key. */
int acct_key_revoke(ed_store *st, const acct_actor *actor, int64_t user_id, int64_t key_id);

/* A key as the API lists it: no secret. New reference, NULL when out of memory. */
json_t *acct_key_json(const acct_key_info *k);
/* The user's active keys, newest first, `limit` of them with id < before_id
 * (0: from the newest), in a new array *items. *next_cursor is 0 at the end. */
int acct_key_list(json_t **items, int64_t *next_cursor, ed_store *st, int64_t user_id, int limit,
                  int64_t before_id);

/* API key environments per tier (table tier_key_envs): each env (dev, test,
 * prod) caps the daily budget (-1: no cap) and rate limit (0: no cap) of the
 * keys made for it by users of the tier.
 * acct_tier_key_envs_json: {env: {daily_budget_mcoins, rate_limit_per_min}}
 * into *out (caller owns it). acct_tier_key_envs_put: set the fields a spec
 * {env: {daily_budget_mcoins?, rate_limit_per_min?}} gives, in one
 * transaction; the caller has checked the spec (the gateway's
 * gw__tier_key_envs_check answers 422 naming the field). */
int acct_tier_key_envs_json(json_t **out, ed_store *st, const char *tier);
int acct_tier_key_envs_put(ed_store *st, const char *tier, const json_t *spec);

#endif
