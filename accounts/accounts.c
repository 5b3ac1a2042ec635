/*
 * accounts.c - users (Argon2id passwords, roles, tiers, suspension), the
 * operator settings table, API key env caps per tier and the addresses users
 * logged in from, over the store. No HTTP here: `eddy admin` (cmd/admin.c),
 * the gateway's handlers (gateway/auth_routes.c) and the unit tests all call
 * these.
 */
#include "acct_int.h"
#include "quota.h"

#include "ed_crypto.h"
#include "ed_error.h"
#include "ed_time.h"

#include <assert.h>
#include <pthread.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

_Static_assert(ACCT_PWHASH_STRBYTES == crypto_pwhash_STRBYTES, "password hash buffer size");
_Static_assert(ACCT_PWHASH_OPSLIMIT >= 2, "OWASP: t >= 2");
_Static_assert(ACCT_PWHASH_MEMLIMIT >= (size_t)19456 * 1024, "OWASP: m >= 19456 KiB");

/* ---- validation ---------------------------------------------------------- */

int acct_username_check(const char *u)
{
    size_t n = u ? strlen(u) : 0;

    if (n < 3 || n > 32)
        return ed_error_set(ED_EINVAL, "username must be 3 to 32 characters");
    if (!(u[0] >= 'a' && u[0] <= 'z'))
        return ed_error_set(ED_EINVAL, "username must start with a lower-case letter");
    for (size_t i = 0; i < n; i++) {
        char c = u[i];
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-'))
            return ed_error_set(ED_EINVAL, "username may only hold a-z, 0-9, '_' and '-'");
    }
    return 0;
}

int acct_email_check(const char *e)
{
    size_t n = e ? strlen(e) : 0;
    const char *at = e ? strchr(e, '@') : NULL;

    if (n < 3 || n > 254 || at == NULL || at == e || at[1] == '\0' || strchr(at + 1, '@'))
        return ed_error_set(ED_EINVAL, "email must look like name@domain");
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)e[i];
        if (c <= ' ' || c == 0x7f || c == '<' || c == '>' || c == '"' || c == ',')
            return ed_error_set(ED_EINVAL, "email must not contain spaces, control characters or <>\",");
    }
    if (at[1] == '.' || e[n - 1] == '.')
        return ed_error_set(ED_EINVAL, "email domain is malformed");
    return 0;
}

int acct_password_check(const char *p)
{
    size_t n = p ? strlen(p) : 0;

    if (n < 8)
        return ed_error_set(ED_EINVAL, "password must be at least 8 bytes");
    if (n > 1024)
        return ed_error_set(ED_EINVAL, "password must be at most 1024 bytes");
    return 0;
}

int acct_role_check(const char *role)
{
    if (role && (strcmp(role, "user") == 0 || strcmp(role, "admin") == 0))
        return 0;
    return ed_error_set(ED_EINVAL, "role must be \"user\" or \"admin\"");
}

/* Tiers are quota/'s (table tiers): a user's tier must name one of them. */
int acct_tier_check(ed_store *st, const char *tier)
{
    int exists;

    if (tier == NULL || tier[0] == '\0')
        return ed_error_set(ED_EINVAL, "tier must not be empty");
    if ((exists = quota_tier_exists(st, tier)) < 0)
        return exists;
    if (!exists)
        return ed_error_set(ED_EINVAL, "no tier named '%.40s' (see GET /api/v1/tiers)", tier);
    return 0;
}

/* ---- passwords ------------------------------------------------------------ */

int acct_password_hash(char out[ACCT_PWHASH_STRBYTES], const char *password)
{
    if (crypto_pwhash_str_alg(out, password, strlen(password), ACCT_PWHASH_OPSLIMIT,
                              ACCT_PWHASH_MEMLIMIT, crypto_pwhash_ALG_ARGON2ID13) != 0)
        return ed_error_set(ED_ENOMEM, "password hashing ran out of memory");
    return 0;
}

static pthread_once_t dummy_once = PTHREAD_ONCE_INIT;
static char dummy_hash[ACCT_PWHASH_STRBYTES];

static void make_dummy_hash(void)
{
    char pw[33];

    ed_random_token(pw, 32);
    if (acct_password_hash(dummy_hash, pw) < 0)
        dummy_hash[0] = '\0';
}

bool acct_password_verify(const char *hash, const char *password)
{
    size_t n = strlen(password);

    if (hash == NULL || hash[0] == '\0') {
        pthread_once(&dummy_once, make_dummy_hash);
        if (dummy_hash[0] && crypto_pwhash_str_verify(dummy_hash, password, n) == 0)
            return false;   /* same work as a real check; never a match */
        return false;
    }
    return crypto_pwhash_str_verify(hash, password, n) == 0;
}

bool acct_password_needs_rehash(const char *hash)
{
    return crypto_pwhash_str_needs_rehash(hash, ACCT_PWHASH_OPSLIMIT, ACCT_PWHASH_MEMLIMIT) != 0;
}

/* ---- users ----------------------------------------------------------------- */

#define USER_COLS "id, username, email, role, tier, suspended, created_at, password_hash"

static void col_copy(char *dst, size_t cap, sqlite3_stmt *s, int col)
{
    const unsigned char *v = sqlite3_column_text(s, col);

    snprintf(dst, cap, "%s", v ? (const char *)v : "");
}

static void read_user(acct_user *u, sqlite3_stmt *s)
{
    memset(u, 0, sizeof(*u));
    u->id = sqlite3_column_int64(s, 0);
    col_copy(u->username, sizeof(u->username), s, 1);
    col_copy(u->email, sizeof(u->email), s, 2);
    col_copy(u->role, sizeof(u->role), s, 3);
    col_copy(u->tier, sizeof(u->tier), s, 4);
    u->suspended = sqlite3_column_int(s, 5) != 0;
    u->created_at = sqlite3_column_int64(s, 6);
    col_copy(u->password_hash, sizeof(u->password_hash), s, 7);
}

static int user_query(acct_user *out, ed_store *st, const char *sql, int64_t id, const char *name)
{
    sqlite3_stmt *s = NULL;
    int err, rc;

    if ((err = ed_store_prepare(&s, st, sql)) < 0)
        return err;
    if (name)
        sqlite3_bind_text(s, 1, name, -1, SQLITE_STATIC);
    else
        sqlite3_bind_int64(s, 1, id);
    rc = sqlite3_step(s);
    if (rc == SQLITE_ROW)
        read_user(out, s);
    else if (rc == SQLITE_DONE)
        err = name ? ed_error_set(ED_ENOTFOUND, "no user named '%s'", name)
                   : ed_error_set(ED_ENOTFOUND, "no user %lld", (long long)id);
    else
        err = ed_store_error(ed_store_db(st), rc, "read user");
    sqlite3_finalize(s);
    return err;
}

/* The by-id lookup runs on every GET /api/v1/me: its statement is prepared
 * once per thread and connection, like the key lookup in keys.c (the cached
 * statement keeps its connection from being freed, so a new connection
 * cannot reuse the address; the thread-exit destructor finalizes it). */
typedef struct user_stmt_cache {
    sqlite3      *db;
    sqlite3_stmt *stmt;
} user_stmt_cache;

static pthread_key_t user_stmt_key;
static pthread_once_t user_stmt_once = PTHREAD_ONCE_INIT;

static void user_stmt_free(void *p)
{
    user_stmt_cache *c = p;

    if (c) {
        sqlite3_finalize(c->stmt);
        free(c);
    }
}

static void user_stmt_init(void) { pthread_key_create(&user_stmt_key, user_stmt_free); }

int acct_user_get(acct_user *out, ed_store *st, int64_t id)
{
    sqlite3 *db = ed_store_db(st);
    user_stmt_cache *c;
    int err = 0, rc;

    if (db == NULL)
        return ed_error_code();
    pthread_once(&user_stmt_once, user_stmt_init);
    if ((c = pthread_getspecific(user_stmt_key)) == NULL) {
        if ((c = calloc(1, sizeof(*c))) == NULL)
            return ed_error_set(ED_ENOMEM, "statement cache");
        pthread_setspecific(user_stmt_key, c);
    }
    if (c->db != db || c->stmt == NULL) {
        sqlite3_finalize(c->stmt);
        c->stmt = NULL;
        c->db = NULL;
        rc = sqlite3_prepare_v3(db, "SELECT " USER_COLS " FROM users WHERE id = ?", -1,
                                SQLITE_PREPARE_PERSISTENT, &c->stmt, NULL);
        if (rc != SQLITE_OK)
            return ed_store_error(db, rc, "prepare user lookup");
        c->db = db;
    }
    sqlite3_bind_int64(c->stmt, 1, id);
    rc = sqlite3_step(c->stmt);
    if (rc == SQLITE_ROW)
        read_user(out, c->stmt);
    else if (rc == SQLITE_DONE)
        err = ed_error_set(ED_ENOTFOUND, "no user %lld", (long long)id);
    else
        err = ed_store_error(db, rc, "read user");
    sqlite3_reset(c->stmt);
    sqlite3_clear_bindings(c->stmt);
    return err;
}

int acct_user_tier(char *tier, size_t size, ed_store *st, int64_t id)
{
    acct_user u;
    int err;

    assert(tier != NULL && size > 0);
    tier[0] = '\0';
    if ((err = acct_user_get(&u, st, id)) < 0)
        return err;
    if ((size_t)snprintf(tier, size, "%s", u.tier) >= size) {
        tier[0] = '\0';
        return ed_error_set(ED_EINTERNAL, "tier of user %lld does not fit", (long long)id);
    }
    return 0;
}

/* The ledger (quota/) needs users' tiers but cannot call accounts/, which
 * depends on it: hand it the lookup before main() runs, so every program
 * that links accounts/ (the server, `eddy admin`, the tests) has it. */
__attribute__((constructor)) static void install_user_tier_lookup(void)
{
    quota_user_tier_fn_set(acct_user_tier);
}

int acct_user_get_by_name(acct_user *out, ed_store *st, const char *username)
{
    return user_query(out, st, "SELECT " USER_COLS " FROM users WHERE username = ?", 0, username);
}

int acct_user_id(int64_t *out, ed_store *st, const char *username)
{
    acct_user u;
    int err = acct_user_get_by_name(&u, st, username);

    *out = err < 0 ? 0 : u.id;
    return err;
}

int acct_user_count(int64_t *out, ed_store *st)
{
    sqlite3_stmt *s = NULL;
    int rc, err;

    *out = 0;
    if ((err = ed_store_prepare(&s, st, "SELECT COUNT(*) FROM users")) < 0)
        return err;
    if ((rc = sqlite3_step(s)) == SQLITE_ROW)
        *out = sqlite3_column_int64(s, 0);
    sqlite3_finalize(s);
    return rc == SQLITE_ROW ? 0 : ed_store_error(ed_store_db(st), rc, "count users");
}

int acct__page_rows(json_t **items, int64_t *next_cursor, sqlite3_stmt *s, int limit,
                  acct__row_json_fn row, void *payload, const char *what, const char *action)
{
    json_t *arr;
    int64_t id = 0;
    int err, rc, n = 0;

    *items = NULL;
    *next_cursor = 0;
    if ((arr = json_array()) == NULL) {
        err = ed_error_set(ED_ENOMEM, "%s", what);
        goto fail;
    }
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        json_t *j;
        if (n == limit) {
            *next_cursor = id;   /* the last one returned */
            break;
        }
        if ((j = row(&id, s, payload)) == NULL || json_array_append_new(arr, j) < 0) {
            err = ed_error_set(ED_ENOMEM, "%s", what);
            goto fail;
        }
        n++;
    }
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
        err = ed_store_error(sqlite3_db_handle(s), rc, action);
        goto fail;
    }
    sqlite3_finalize(s);
    *items = arr;
    return 0;
fail:
    sqlite3_finalize(s);
    json_decref(arr);
    return err;
}

static json_t *user_row_json(int64_t *id, sqlite3_stmt *s, void *payload)
{
    acct_user u;

    (void)payload;
    read_user(&u, s);
    *id = u.id;
    return acct_user_json(&u, true);
}

int acct_user_list(json_t **items, int64_t *next_cursor, ed_store *st, int limit, int64_t after_id)
{
    sqlite3_stmt *s = NULL;
    int err;

    *items = NULL;
    *next_cursor = 0;
    if ((err = ed_store_prepare(&s, st, "SELECT " USER_COLS " FROM users WHERE id > ?"
                                        " ORDER BY id LIMIT ?")) < 0)
        return err;
    sqlite3_bind_int64(s, 1, after_id);
    sqlite3_bind_int(s, 2, limit + 1);
    return acct__page_rows(items, next_cursor, s, limit, user_row_json, NULL, "user list",
                         "list users");
}

/* ED_EEXISTS naming what is taken, 0 when neither is. */
static int check_taken(ed_store *st, const char *username, const char *email)
{
    sqlite3_stmt *s = NULL;
    int err, rc;

    if ((err = ed_store_prepare(&s, st,
                                "SELECT username = ?1 FROM users WHERE username = ?1 OR email = ?2"
                                " ORDER BY 1 DESC LIMIT 1")) < 0)
        return err;
    sqlite3_bind_text(s, 1, username, -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 2, email, -1, SQLITE_STATIC);
    rc = sqlite3_step(s);
    if (rc == SQLITE_ROW)
        err = sqlite3_column_int(s, 0) ? ed_error_set(ED_EEXISTS, "username '%s' is taken", username)
                                       : ed_error_set(ED_EEXISTS, "email is already registered");
    else if (rc != SQLITE_DONE)
        err = ed_store_error(ed_store_db(st), rc, "check user");
    sqlite3_finalize(s);
    return err;
}

int acct_user_insert(int64_t *out_id, ed_store *st, const acct_actor *actor, const char *action,
                    const char *username, const char *email, const char *password,
                    const char *role, const char *tier)
{
    char hash[ACCT_PWHASH_STRBYTES], target[32];
    sqlite3_stmt *s = NULL;
    json_t *detail = NULL;
    int64_t now = ed_now_ms(), id;
    int err, rc;

    *out_id = 0;
    if ((err = acct_username_check(username)) < 0 || (err = acct_email_check(email)) < 0 ||
        (err = acct_password_check(password)) < 0 || (err = acct_role_check(role)) < 0 ||
        (err = acct_tier_check(st, tier)) < 0)
        return err;
    /* Hash before taking the write lock: it takes tens of milliseconds. */
    if ((err = acct_password_hash(hash, password)) < 0)
        return err;
    if ((err = ed_store_begin(st)) < 0)
        return err;
    if ((err = check_taken(st, username, email)) < 0)
        goto fail;
    if ((err = ed_store_prepare(&s, st,
                                "INSERT INTO users (username, email, password_hash, role, tier,"
                                " suspended, created_at, updated_at) VALUES (?, ?, ?, ?, ?, 0, ?, ?)")) < 0)
        goto fail;
    sqlite3_bind_text(s, 1, username, -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 2, email, -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 3, hash, -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 4, role, -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 5, tier, -1, SQLITE_STATIC);
    sqlite3_bind_int64(s, 6, now);
    sqlite3_bind_int64(s, 7, now);
    if ((rc = sqlite3_step(s)) != SQLITE_DONE) {
        err = ed_store_error(ed_store_db(st), rc, "insert user");
        goto fail;
    }
    id = sqlite3_last_insert_rowid(ed_store_db(st));
    sqlite3_finalize(s);
    s = NULL;
    snprintf(target, sizeof(target), "user:%lld", (long long)id);
    if ((detail = json_pack("{s:s, s:s, s:s}", "username", username, "role", role, "tier", tier)) == NULL) {
        err = ed_error_set(ED_ENOMEM, "audit detail");
        goto fail;
    }
    if ((err = acct_audit_append(st, actor, action, target, detail)) < 0)
        goto fail;
    if ((err = ed_store_commit(st)) < 0)
        goto fail;
    json_decref(detail);
    sodium_memzero(hash, sizeof(hash));
    *out_id = id;
    return 0;
fail:
    sqlite3_finalize(s);
    json_decref(detail);
    ed_store_rollback(st);
    sodium_memzero(hash, sizeof(hash));
    return err;
}

static int exec_bound(ed_store *st, const char *sql, const char *text, int64_t a, int64_t b)
{
    sqlite3_stmt *s = NULL;
    int err, rc, i = 1;

    if ((err = ed_store_prepare(&s, st, sql)) < 0)
        return err;
    if (text)
        sqlite3_bind_text(s, i++, text, -1, SQLITE_STATIC);
    sqlite3_bind_int64(s, i++, a);
    if (sqlite3_bind_parameter_count(s) >= i)
        sqlite3_bind_int64(s, i, b);
    if ((rc = sqlite3_step(s)) != SQLITE_DONE)
        err = ed_store_error(ed_store_db(st), rc, "update");
    sqlite3_finalize(s);
    return err;
}

int acct_user_set_password_hash(ed_store *st, int64_t id, const char *hash)
{
    return exec_bound(st, "UPDATE users SET password_hash = ?, updated_at = ? WHERE id = ?", hash,
                      ed_now_ms(), id);
}

static int audit_change(ed_store *st, const acct_actor *actor, const char *action, int64_t id,
                        json_t *from, json_t *to)
{
    char target[32];
    json_t *detail = json_pack("{s:o, s:o}", "from", from, "to", to);
    int err;

    if (detail == NULL)
        return ed_error_set(ED_ENOMEM, "audit detail");
    snprintf(target, sizeof(target), "user:%lld", (long long)id);
    err = acct_audit_append(st, actor, action, target, detail);
    json_decref(detail);
    return err;
}

int acct_user_update(ed_store *st, const acct_actor *actor, int64_t id, const acct_user_patch *p)
{
    acct_user u;
    int64_t now = ed_now_ms();
    int err;

    if ((p->role && (err = acct_role_check(p->role)) < 0) ||
        (p->tier && (err = acct_tier_check(st, p->tier)) < 0))
        return err;
    if (p->suspended < -1 || p->suspended > 1)
        return ed_error_set(ED_EINVAL, "suspended must be true or false");
    if ((err = ed_store_begin(st)) < 0)
        return err;
    if ((err = acct_user_get(&u, st, id)) < 0)
        goto fail;
    if (p->role && strcmp(p->role, u.role) != 0) {
        if ((err = exec_bound(st, "UPDATE users SET role = ?, updated_at = ? WHERE id = ?", p->role,
                              now, id)) < 0 ||
            (err = audit_change(st, actor, "user.set_role", id, json_string(u.role),
                                json_string(p->role))) < 0)
            goto fail;
    }
    if (p->tier && strcmp(p->tier, u.tier) != 0) {
        if ((err = exec_bound(st, "UPDATE users SET tier = ?, updated_at = ? WHERE id = ?", p->tier,
                              now, id)) < 0 ||
            (err = audit_change(st, actor, "user.set_tier", id, json_string(u.tier),
                                json_string(p->tier))) < 0)
            goto fail;
    }
    if (p->suspended >= 0 && (p->suspended == 1) != u.suspended) {
        const char *sql = p->suspended ? "UPDATE users SET suspended = 1, updated_at = ? WHERE id = ?"
                                       : "UPDATE users SET suspended = 0, updated_at = ? WHERE id = ?";
        if ((err = exec_bound(st, sql, NULL, now, id)) < 0 ||
            (err = audit_change(st, actor, p->suspended ? "user.suspend" : "user.unsuspend", id,
                                json_boolean(u.suspended),
                                json_boolean(p->suspended))) < 0)
            goto fail;
        /* A suspended user's browser sessions end now; keys are refused at
         * use (and work again after unsuspension). */
        if (p->suspended && (err = exec_bound(st, "DELETE FROM sessions WHERE user_id = ?", NULL, id,
                                              0)) < 0)
            goto fail;
    }
    return ed_store_commit(st);
fail:
    ed_store_rollback(st);
    return err;
}

json_t *acct_user_json(const acct_user *u, bool admin_view)
{
    char at[ED_RFC3339_LEN];
    json_t *j = json_pack("{s:I, s:s, s:s, s:s, s:s, s:s}", "id", (json_int_t)u->id, "username",
                          u->username, "email", u->email, "role", u->role, "tier", u->tier,
                          "created_at", ed_time_rfc3339(at, sizeof(at), u->created_at));

    if (j && admin_view && json_object_set_new(j, "suspended", json_boolean(u->suspended)) < 0) {
        json_decref(j);
        return NULL;
    }
    return j;
}

/* ---- for operators (`eddy admin`) ------------------------------------------- */

int acct_user_create(int64_t *out_id, ed_store *st, const char *username, const char *email,
                   const char *password, const char *role, const char *tier)
{
    return acct_user_insert(out_id, st, NULL, "user.create", username, email, password,
                           role ? role : "user", tier ? tier : "free");
}

static int set_by_name(ed_store *st, const char *username, const acct_user_patch *p)
{
    acct_user u;
    int err;

    if ((err = acct_user_get_by_name(&u, st, username)) < 0)
        return err;
    return acct_user_update(st, NULL, u.id, p);
}

int acct_user_set_role(ed_store *st, const char *username, const char *role)
{
    acct_user_patch p = {.role = role, .tier = NULL, .suspended = -1};
    int err;

    if ((err = acct_role_check(role)) < 0)
        return err;
    return set_by_name(st, username, &p);
}

int acct_user_set_tier(ed_store *st, const char *username, const char *tier)
{
    acct_user_patch p = {.role = NULL, .tier = tier, .suspended = -1};
    int err;

    if ((err = acct_tier_check(st, tier)) < 0)
        return err;
    return set_by_name(st, username, &p);
}

/* ---- settings --------------------------------------------------------------- */

int acct_setting_get_bool(bool *out, ed_store *st, const char *key, bool dflt)
{
    sqlite3_stmt *s = NULL;
    int err, rc;

    *out = dflt;
    if ((err = ed_store_prepare(&s, st, "SELECT value FROM settings WHERE key = ?")) < 0)
        return err;
    sqlite3_bind_text(s, 1, key, -1, SQLITE_STATIC);
    rc = sqlite3_step(s);
    if (rc == SQLITE_ROW) {
        const char *v = (const char *)sqlite3_column_text(s, 0);
        *out = v && strcmp(v, "true") == 0;
    } else if (rc != SQLITE_DONE) {
        err = ed_store_error(ed_store_db(st), rc, "read setting");
    }
    sqlite3_finalize(s);
    return err;
}

int acct_setting_set(ed_store *st, const acct_actor *actor, const char *key, const char *value)
{
    sqlite3_stmt *s = NULL;
    json_t *detail = NULL;
    int err, rc;

    if ((err = ed_store_begin(st)) < 0)
        return err;
    if ((err = ed_store_prepare(&s, st,
                                "INSERT INTO settings (key, value, updated_at) VALUES (?, ?, ?)"
                                " ON CONFLICT(key) DO UPDATE SET value = excluded.value,"
                                " updated_at = excluded.updated_at")) < 0)
        goto fail;
    sqlite3_bind_text(s, 1, key, -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 2, value, -1, SQLITE_STATIC);
    sqlite3_bind_int64(s, 3, ed_now_ms());
    if ((rc = sqlite3_step(s)) != SQLITE_DONE) {
        err = ed_store_error(ed_store_db(st), rc, "write setting");
        goto fail;
    }
    if ((detail = json_pack("{s:s, s:s}", "key", key, "value", value)) == NULL) {
        err = ed_error_set(ED_ENOMEM, "audit detail");
        goto fail;
    }
    if ((err = acct_audit_append(st, actor, "settings.set", key, detail)) < 0)
        goto fail;
    sqlite3_finalize(s);
    json_decref(detail);
    return ed_store_commit(st);
fail:
    sqlite3_finalize(s);
    json_decref(detail);
    ed_store_rollback(st);
    return err;
}

/* ---- API key environments per tier (table tier_key_envs) ------------------- */

int acct_tier_key_envs_json(json_t **out, ed_store *st, const char *tier)
{
    sqlite3_stmt *s = NULL;
    json_t *o = json_object();
    int err, rc;

    *out = NULL;
    if (o == NULL)
        return ed_error_set(ED_ENOMEM, "key envs");
    if ((err = ed_store_prepare(&s, st,
                                "SELECT env, daily_budget_mcoins, rate_limit_per_min FROM tier_key_envs"
                                " WHERE tier = ? ORDER BY env")) < 0)
        goto fail;
    sqlite3_bind_text(s, 1, tier, -1, SQLITE_TRANSIENT);
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        json_t *e = json_pack("{s:I, s:I}", "daily_budget_mcoins", (json_int_t)sqlite3_column_int64(s, 1),
                              "rate_limit_per_min", (json_int_t)sqlite3_column_int64(s, 2));
        if (e == NULL || json_object_set_new(o, (const char *)sqlite3_column_text(s, 0), e) < 0) {
            err = ed_error_set(ED_ENOMEM, "key envs");
            goto fail;
        }
    }
    if (rc != SQLITE_DONE) {
        err = ed_store_error(ed_store_db(st), rc, "read key envs");
        goto fail;
    }
    sqlite3_finalize(s);
    *out = o;
    return 0;
fail:
    sqlite3_finalize(s);
    json_decref(o);
    return err;
}

int acct_tier_key_envs_put(ed_store *st, const char *tier, const json_t *spec)
{
    sqlite3_stmt *s = NULL;
    const char *env;
    json_t *v;
    int err, rc;

    if ((err = ed_store_begin(st)) < 0)
        return err;
    if ((err = ed_store_prepare(&s, st,
                                "INSERT INTO tier_key_envs (tier, env, daily_budget_mcoins, rate_limit_per_min,"
                                " updated_at) VALUES (?1, ?2, IFNULL(?3, -1), IFNULL(?4, 0), ?5)"
                                " ON CONFLICT (tier, env) DO UPDATE SET"
                                " daily_budget_mcoins = IFNULL(?3, daily_budget_mcoins),"
                                " rate_limit_per_min = IFNULL(?4, rate_limit_per_min), updated_at = ?5")) < 0)
        goto fail;
    json_object_foreach((json_t *)spec, env, v) {
        json_t *b = json_object_get(v, "daily_budget_mcoins"), *r = json_object_get(v, "rate_limit_per_min");

        sqlite3_reset(s);
        sqlite3_clear_bindings(s);
        sqlite3_bind_text(s, 1, tier, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(s, 2, env, -1, SQLITE_TRANSIENT);
        if (json_is_integer(b))
            sqlite3_bind_int64(s, 3, json_integer_value(b));
        if (json_is_integer(r))
            sqlite3_bind_int64(s, 4, json_integer_value(r));
        sqlite3_bind_int64(s, 5, ed_now_ms());
        if ((rc = sqlite3_step(s)) != SQLITE_DONE) {
            err = ed_store_error(ed_store_db(st), rc, "set key env limits");
            goto fail;
        }
    }
    sqlite3_finalize(s);
    return ed_store_commit(st);
fail:
    sqlite3_finalize(s);
    ed_store_rollback(st);
    return err;
}

/* ---- addresses a user logged in from (table login_addresses) --------------------- */

#define LOGIN_ADDRESSES_KEPT 16                              /* per user, most recent */
#define LOGIN_ADDRESS_TTL_MS ((int64_t)90 * 24 * 3600 * 1000) /* "recent": 90 days */

int acct_login_address_known(bool *out, ed_store *st, int64_t user_id, const char *ip, int64_t now_ms)
{
    sqlite3_stmt *s = NULL;
    int err, rc;

    *out = false;
    if (ip == NULL || *ip == '\0')
        return 0;
    if ((err = ed_store_prepare(&s, st,
                                "SELECT 1 FROM login_addresses WHERE user_id = ? AND ip = ?"
                                " AND last_success_at > ?")) < 0)
        return err;
    sqlite3_bind_int64(s, 1, user_id);
    sqlite3_bind_text(s, 2, ip, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(s, 3, now_ms - LOGIN_ADDRESS_TTL_MS);
    rc = sqlite3_step(s);
    if (rc == SQLITE_ROW)
        *out = true;
    else if (rc != SQLITE_DONE)
        err = ed_store_error(ed_store_db(st), rc, "read login addresses");
    sqlite3_finalize(s);
    return err;
}

int acct_login_address_remember(ed_store *st, int64_t user_id, const char *ip, int64_t now_ms)
{
    sqlite3_stmt *s = NULL;
    int err, rc;

    if (ip == NULL || *ip == '\0')
        return 0;
    if ((err = ed_store_prepare(&s, st,
                                "INSERT INTO login_addresses (user_id, ip, last_success_at) VALUES (?1, ?2, ?3)"
                                " ON CONFLICT (user_id, ip) DO UPDATE SET last_success_at = ?3")) < 0)
        return err;
    sqlite3_bind_int64(s, 1, user_id);
    sqlite3_bind_text(s, 2, ip, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(s, 3, now_ms);
    if ((rc = sqlite3_step(s)) != SQLITE_DONE)
        err = ed_store_error(ed_store_db(st), rc, "remember login address");
    sqlite3_finalize(s);
    if (err < 0)
        return err;
    /* Keep the most recent few, and none older than the TTL. */
    if ((err = ed_store_prepare(&s, st,
                                "DELETE FROM login_addresses WHERE user_id = ?1 AND (last_success_at <= ?2"
                                " OR ip NOT IN (SELECT ip FROM login_addresses WHERE user_id = ?1"
                                " ORDER BY last_success_at DESC LIMIT ?3))")) < 0)
        return err;
    sqlite3_bind_int64(s, 1, user_id);
    sqlite3_bind_int64(s, 2, now_ms - LOGIN_ADDRESS_TTL_MS);
    sqlite3_bind_int(s, 3, LOGIN_ADDRESSES_KEPT);
    if ((rc = sqlite3_step(s)) != SQLITE_DONE)
        err = ed_store_error(ed_store_db(st), rc, "prune login addresses");
    sqlite3_finalize(s);
    return err;
}
