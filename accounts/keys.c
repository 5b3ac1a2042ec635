/*
 * keys.c - API keys: format, checksum, storage, lookup, revocation.
 *
 * A key reads  eddy_<env>_<32 base62 random>_<6 base62 CRC-32>
 *   e.g.       eddy_dev_Zt4kq9V0bq1Lr3m8XwP2aYc7NfG5hJd6_2bQx9A
 * The checksum covers everything before the last '_', so a mistyped or
 * truncated key is refused before any database work, and secret scanners can
 * recognise a real key. Only the SHA-256 of the whole key is stored, with a
 * display prefix (env + the first 12 random characters).
 */
#include "acct_int.h"

#include "ed_crypto.h"
#include "ed_error.h"
#include "ed_time.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char base62[] = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

static bool is_base62(char c)
{
    return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z');
}

uint32_t acct_key_crc32(const void *p, size_t n)
{
    const unsigned char *b = p;
    uint32_t crc = 0xffffffffu;

    for (size_t i = 0; i < n; i++) {
        crc ^= b[i];
        for (int k = 0; k < 8; k++)
            crc = (crc >> 1) ^ (0xedb88320u & (0u - (crc & 1u)));
    }
    return crc ^ 0xffffffffu;
}

/* CRC-32 of `n` bytes as exactly 6 base62 digits (62^6 > 2^32), most
 * significant first. */
static void checksum6(char out[ACCT_KEY_CHECK_CHARS + 1], const char *p, size_t n)
{
    uint32_t v = acct_key_crc32(p, n);

    for (int i = ACCT_KEY_CHECK_CHARS - 1; i >= 0; i--) {
        out[i] = base62[v % 62];
        v /= 62;
    }
    out[ACCT_KEY_CHECK_CHARS] = '\0';
}

int acct_key_env_check(const char *env)
{
    if (env && (strcmp(env, "dev") == 0 || strcmp(env, "test") == 0 || strcmp(env, "prod") == 0))
        return 0;
    return ed_error_set(ED_EINVAL, "env must be \"dev\", \"test\" or \"prod\"");
}

int acct_key_generate(char out[ACCT_KEY_MAX_LEN + 1], const char *env)
{
    char rnd[ACCT_KEY_RANDOM_CHARS + 1], check[ACCT_KEY_CHECK_CHARS + 1];
    int n, err;

    out[0] = '\0';
    if ((err = acct_key_env_check(env)) < 0)
        return err;
    ed_random_token(rnd, ACCT_KEY_RANDOM_CHARS);
    n = snprintf(out, ACCT_KEY_MAX_LEN + 1, "eddy_%s_%s", env, rnd);
    checksum6(check, out, (size_t)n);
    snprintf(out + n, (size_t)(ACCT_KEY_MAX_LEN + 1 - n), "_%s", check);
    return 0;
}

int acct_key_parse(char env[8], const char *key)
{
    char check[ACCT_KEY_CHECK_CHARS + 1];
    const char *p, *us;
    size_t envlen, len;

    env[0] = '\0';
    if (key == NULL || (len = strlen(key)) > ACCT_KEY_MAX_LEN || strncmp(key, "eddy_", 5) != 0)
        return ed_error_set(ED_EAUTH, "malformed API key");
    p = key + 5;
    if ((us = strchr(p, '_')) == NULL || (envlen = (size_t)(us - p)) == 0 || envlen > 4)
        return ed_error_set(ED_EAUTH, "malformed API key");
    memcpy(env, p, envlen);
    env[envlen] = '\0';
    if (acct_key_env_check(env) < 0) {
        env[0] = '\0';
        return ed_error_set(ED_EAUTH, "malformed API key (unknown env)");
    }
    p = us + 1;
    if (len != (size_t)(p - key) + ACCT_KEY_RANDOM_CHARS + 1 + ACCT_KEY_CHECK_CHARS ||
        p[ACCT_KEY_RANDOM_CHARS] != '_')
        return ed_error_set(ED_EAUTH, "malformed API key");
    for (int i = 0; i < ACCT_KEY_RANDOM_CHARS; i++)
        if (!is_base62(p[i]))
            return ed_error_set(ED_EAUTH, "malformed API key");
    checksum6(check, key, (size_t)(p - key) + ACCT_KEY_RANDOM_CHARS);
    if (!ed_ct_equal(check, p + ACCT_KEY_RANDOM_CHARS + 1, ACCT_KEY_CHECK_CHARS))
        return ed_error_set(ED_EAUTH, "API key checksum mismatch (mistyped or truncated key)");
    return 0;
}

/* ---- scopes ------------------------------------------------------------------ */

static const struct {
    const char *name;
    unsigned    bit;
} scope_names[] = {
    {"read", ACCT_SCOPE_READ}, {"write", ACCT_SCOPE_WRITE}, {"run", ACCT_SCOPE_RUN},
    {"serve", ACCT_SCOPE_SERVE}, {"admin", ACCT_SCOPE_ADMIN},
};
#define NSCOPES (sizeof(scope_names) / sizeof(scope_names[0]))

static unsigned scope_bit(const char *name, size_t n)
{
    for (size_t i = 0; i < NSCOPES; i++)
        if (strlen(scope_names[i].name) == n && strncmp(scope_names[i].name, name, n) == 0)
            return scope_names[i].bit;
    return 0;
}

int acct_scopes_parse_list(unsigned *out, const char *csv)
{
    unsigned bits = 0;

    *out = 0;
    for (const char *p = csv; p && *p;) {
        size_t n = strcspn(p, ",");
        unsigned b = scope_bit(p, n);
        if (b == 0)
            return ed_error_set(ED_EINVAL, "unknown scope '%.*s'", (int)n, p);
        bits |= b;
        p += n;
        if (*p == ',')
            p++;
    }
    *out = bits;
    return 0;
}

int acct_scopes_from_json(unsigned *out, const json_t *arr)
{
    unsigned bits = 0;
    size_t i;
    json_t *v;

    *out = 0;
    if (!json_is_array(arr))
        return ed_error_set(ED_EINVAL, "field 'scopes' must be an array");
    json_array_foreach(arr, i, v) {
        const char *name = json_string_value(v);
        unsigned b;
        if (name == NULL)
            return ed_error_set(ED_EINVAL, "field 'scopes' must hold strings");
        if ((b = scope_bit(name, strlen(name))) == 0)
            return ed_error_set(ED_EINVAL,
                                "unknown scope '%.40s' (read, write, run, serve, admin)", name);
        bits |= b;
    }
    if (bits == 0)
        return ed_error_set(ED_EINVAL, "field 'scopes' must name at least one scope");
    *out = bits;
    return 0;
}

void acct_scopes_to_csv(char *out, size_t outlen, unsigned scopes)
{
    size_t used = 0;

    out[0] = '\0';
    for (size_t i = 0; i < NSCOPES; i++) {
        if (!(scopes & scope_names[i].bit))
            continue;
        int n = snprintf(out + used, outlen - used, "%s%s", used ? "," : "", scope_names[i].name);
        if (n < 0 || (size_t)n >= outlen - used)
            break;
        used += (size_t)n;
    }
}

json_t *acct_scopes_json(unsigned scopes)
{
    json_t *a = json_array();

    for (size_t i = 0; a && i < NSCOPES; i++)
        if ((scopes & scope_names[i].bit) && json_array_append_new(a, json_string(scope_names[i].name)) < 0) {
            json_decref(a);
            return NULL;
        }
    return a;
}

/* ---- storage ----------------------------------------------------------------- */

static int name_check(const char *name)
{
    size_t n = name ? strlen(name) : 0;

    if (n < 1 || n > 64)
        return ed_error_set(ED_EINVAL, "key name must be 1 to 64 bytes");
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)name[i] < ' ' || name[i] == 0x7f)
            return ed_error_set(ED_EINVAL, "key name must not contain control characters");
    return 0;
}

int acct_key_create(char key[ACCT_KEY_MAX_LEN + 1], acct_key_info *info, ed_store *st,
                   const acct_actor *actor, int64_t user_id, const acct_key_new *k)
{
    char hash[65], scopes[64], target[32];
    sqlite3_stmt *s = NULL;
    json_t *detail = NULL;
    int64_t now = ed_now_ms();
    size_t plen;
    int err, rc;

    key[0] = '\0';
    memset(info, 0, sizeof(*info));
    if ((err = name_check(k->name)) < 0 || (err = acct_key_env_check(k->env)) < 0)
        return err;
    if (k->scopes == 0 || (k->scopes & ~(unsigned)ACCT_SCOPES_ALL))
        return ed_error_set(ED_EINVAL, "a key needs at least one known scope");
    if (k->expires_in_days < 0 || k->expires_in_days > 3650)
        return ed_error_set(ED_EINVAL, "expires_in_days must be between 1 and 3650");
    if (k->daily_budget_mcoins < -1)
        return ed_error_set(ED_EINVAL, "daily_budget_mcoins must not be negative");
    if (k->rate_limit_per_min < 0 || k->rate_limit_per_min > 1000000)
        return ed_error_set(ED_EINVAL, "rate_limit_per_min must be between 1 and 1000000");
    if ((err = acct_key_generate(key, k->env)) < 0)
        return err;
    ed_sha256_hex(hash, key, strlen(key));
    acct_scopes_to_csv(scopes, sizeof(scopes), k->scopes);

    info->user_id = user_id;
    snprintf(info->name, sizeof(info->name), "%s", k->name);
    snprintf(info->env, sizeof(info->env), "%s", k->env);
    plen = strlen("eddy__") + strlen(k->env) + ACCT_KEY_PREFIX_RANDOM;
    snprintf(info->prefix, sizeof(info->prefix), "%.*s", (int)plen, key);
    info->scopes = k->scopes;
    info->created_at = now;
    info->expires_at = k->expires_in_days ? now + k->expires_in_days * 86400000LL : 0;
    info->daily_budget_mcoins = k->daily_budget_mcoins;
    info->rate_limit_per_min = k->rate_limit_per_min;

    if ((err = ed_store_begin(st)) < 0)
        goto fail;
    if ((err = ed_store_prepare(&s, st,
                                "INSERT INTO api_keys (user_id, name, env, prefix, key_sha256, scopes,"
                                " daily_budget_mcoins, rate_limit_per_min, created_at, expires_at)"
                                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")) < 0)
        goto fail;
    sqlite3_bind_int64(s, 1, user_id);
    sqlite3_bind_text(s, 2, info->name, -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 3, info->env, -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 4, info->prefix, -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 5, hash, -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 6, scopes, -1, SQLITE_STATIC);
    if (info->daily_budget_mcoins >= 0)
        sqlite3_bind_int64(s, 7, info->daily_budget_mcoins);
    if (info->rate_limit_per_min > 0)
        sqlite3_bind_int64(s, 8, info->rate_limit_per_min);
    sqlite3_bind_int64(s, 9, now);
    if (info->expires_at)
        sqlite3_bind_int64(s, 10, info->expires_at);
    if ((rc = sqlite3_step(s)) != SQLITE_DONE) {
        err = ed_store_error(ed_store_db(st), rc, "insert API key");
        goto fail;
    }
    info->id = sqlite3_last_insert_rowid(ed_store_db(st));
    snprintf(target, sizeof(target), "key:%lld", (long long)info->id);
    if ((detail = json_pack("{s:I, s:s, s:s, s:s}", "user_id", (json_int_t)user_id, "name",
                            info->name, "env", info->env, "scopes", scopes)) == NULL) {
        err = ed_error_set(ED_ENOMEM, "audit detail");
        goto fail;
    }
    if ((err = acct_audit_append(st, actor, "key.create", target, detail)) < 0 ||
        (err = ed_store_commit(st)) < 0)
        goto fail;
    sqlite3_finalize(s);
    json_decref(detail);
    return 0;
fail:
    sqlite3_finalize(s);
    json_decref(detail);
    ed_store_rollback(st);
    memset(key, 0, ACCT_KEY_MAX_LEN + 1);
    return err;
}

#define KEY_COLS "k.id, k.user_id, k.name, k.env, k.prefix, k.scopes, k.created_at, k.expires_at," \
                 " k.revoked_at, k.last_used_at, k.daily_budget_mcoins, k.rate_limit_per_min"

static void read_key(acct_key_info *k, sqlite3_stmt *s)
{
    const char *scopes = (const char *)sqlite3_column_text(s, 5);

    memset(k, 0, sizeof(*k));
    k->id = sqlite3_column_int64(s, 0);
    k->user_id = sqlite3_column_int64(s, 1);
    snprintf(k->name, sizeof(k->name), "%s", (const char *)sqlite3_column_text(s, 2));
    snprintf(k->env, sizeof(k->env), "%s", (const char *)sqlite3_column_text(s, 3));
    snprintf(k->prefix, sizeof(k->prefix), "%s", (const char *)sqlite3_column_text(s, 4));
    if (acct_scopes_parse_list(&k->scopes, scopes) < 0)
        k->scopes = 0;   /* an unknown name in the row grants nothing */
    k->created_at = sqlite3_column_int64(s, 6);
    k->expires_at = sqlite3_column_int64(s, 7);
    k->revoked_at = sqlite3_column_int64(s, 8);
    k->last_used_at = sqlite3_column_int64(s, 9);
    k->daily_budget_mcoins = sqlite3_column_type(s, 10) == SQLITE_NULL ? -1 : sqlite3_column_int64(s, 10);
    k->rate_limit_per_min = sqlite3_column_int64(s, 11);
}

/* The hot path's statement, prepared once per thread and connection. The
 * cached statement keeps its connection alive (sqlite3_close_v2 leaves a
 * zombie), so a new connection can never reuse the old one's address; the
 * thread-exit destructor finalizes it. */
typedef struct stmt_cache {
    sqlite3      *db;
    sqlite3_stmt *stmt;
} stmt_cache;

static pthread_key_t cache_key;
static pthread_once_t cache_once = PTHREAD_ONCE_INIT;

static void cache_free(void *p)
{
    stmt_cache *c = p;

    if (c) {
        sqlite3_finalize(c->stmt);
        free(c);
    }
}

static void cache_init(void) { pthread_key_create(&cache_key, cache_free); }

static int lookup_stmt(sqlite3_stmt **out, ed_store *st)
{
    sqlite3 *db = ed_store_db(st);
    stmt_cache *c;
    int rc;

    *out = NULL;
    if (db == NULL)
        return ed_error_code();
    pthread_once(&cache_once, cache_init);
    if ((c = pthread_getspecific(cache_key)) == NULL) {
        if ((c = calloc(1, sizeof(*c))) == NULL)
            return ed_error_set(ED_ENOMEM, "statement cache");
        pthread_setspecific(cache_key, c);
    }
    if (c->db != db || c->stmt == NULL) {
        sqlite3_finalize(c->stmt);
        c->stmt = NULL;
        c->db = NULL;
        rc = sqlite3_prepare_v3(db,
                                "SELECT " KEY_COLS ", u.username, u.role, u.tier, u.suspended,"
                                " IFNULL(e.daily_budget_mcoins, -1), IFNULL(e.rate_limit_per_min, 0)"
                                " FROM api_keys k JOIN users u ON u.id = k.user_id"
                                " LEFT JOIN tier_key_envs e ON e.tier = u.tier AND e.env = k.env"
                                " WHERE k.key_sha256 = ?",
                                -1, SQLITE_PREPARE_PERSISTENT, &c->stmt, NULL);
        if (rc != SQLITE_OK)
            return ed_store_error(db, rc, "prepare key lookup");
        c->db = db;
    }
    *out = c->stmt;
    return 0;
}

int acct_key_lookup(acct_key_auth *out, ed_store *st, const char *key)
{
    char hash[65];
    sqlite3_stmt *s;
    int err, rc;

    memset(out, 0, sizeof(*out));
    if ((err = lookup_stmt(&s, st)) < 0)
        return err;
    ed_sha256_hex(hash, key, strlen(key));
    sqlite3_bind_text(s, 1, hash, -1, SQLITE_TRANSIENT);
    rc = sqlite3_step(s);
    if (rc == SQLITE_ROW) {
        read_key(&out->key, s);
        snprintf(out->username, sizeof(out->username), "%s", (const char *)sqlite3_column_text(s, 12));
        snprintf(out->role, sizeof(out->role), "%s", (const char *)sqlite3_column_text(s, 13));
        snprintf(out->tier, sizeof(out->tier), "%s", (const char *)sqlite3_column_text(s, 14));
        out->suspended = sqlite3_column_int(s, 15) != 0;
        out->env_daily_budget_mcoins = sqlite3_column_int64(s, 16);
        out->env_rate_limit_per_min = sqlite3_column_int64(s, 17);
    } else if (rc == SQLITE_DONE) {
        err = ed_error_set(ED_EAUTH, "unknown API key");
    } else {
        err = ed_store_error(ed_store_db(st), rc, "look up API key");
    }
    sqlite3_reset(s);
    sqlite3_clear_bindings(s);
    return err;
}

bool acct_key_env_accepted(const char *key_envs, const char *env)
{
    const char *p = key_envs ? key_envs : "";
    size_t n = env ? strlen(env) : 0;

    if (acct_key_env_check(env) < 0) {
        ed_error_clear();
        return false;
    }
    if (p[0] == '\0')
        return true;                /* not restricted: every env */
    while (*p) {
        size_t len = strcspn(p, ",");
        const char *a = p, *b = p + len;
        while (a < b && *a == ' ')
            a++;
        while (b > a && b[-1] == ' ')
            b--;
        if ((size_t)(b - a) == n && memcmp(a, env, n) == 0)
            return true;
        p += len;
        if (*p == ',')
            p++;
    }
    return false;
}

void acct_key_envs_accepted(char *out, size_t outlen, const char *key_envs)
{
    static const char *const all[] = {"dev", "test", "prod"};
    size_t k = 0;

    out[0] = '\0';
    for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
        if (acct_key_env_accepted(key_envs, all[i]) && k < outlen)
            k += (size_t)snprintf(out + k, outlen - k, "%s%s", k ? ", " : "", all[i]);
}

int acct_key_budget(int64_t *daily_budget_mcoins, ed_store *st, int64_t key_id)
{
    sqlite3_stmt *s = NULL;
    int err, rc;

    *daily_budget_mcoins = -1;
    if ((err = ed_store_prepare(&s, st,
                                "SELECT k.daily_budget_mcoins, IFNULL(e.daily_budget_mcoins, -1)"
                                " FROM api_keys k JOIN users u ON u.id = k.user_id"
                                " LEFT JOIN tier_key_envs e ON e.tier = u.tier AND e.env = k.env"
                                " WHERE k.id = ?")) < 0)
        return err;
    sqlite3_bind_int64(s, 1, key_id);
    rc = sqlite3_step(s);
    if (rc == SQLITE_ROW) {
        int64_t own = sqlite3_column_type(s, 0) == SQLITE_NULL ? -1 : sqlite3_column_int64(s, 0);
        int64_t env = sqlite3_column_int64(s, 1);
        if (own >= 0 && (env < 0 || own <= env))
            *daily_budget_mcoins = own;
        else if (env >= 0)
            *daily_budget_mcoins = env;
    } else if (rc == SQLITE_DONE) {
        err = ed_error_set(ED_ENOTFOUND, "no API key %lld", (long long)key_id);
    } else {
        err = ed_store_error(ed_store_db(st), rc, "read key budget");
    }
    sqlite3_finalize(s);
    return err;
}

int acct_key_touch(ed_store *st, const acct_key_auth *k, int64_t now_ms)
{
    sqlite3_stmt *s = NULL;
    int err, rc;

    if (k->key.last_used_at && now_ms - k->key.last_used_at < 60000)
        return 0;
    if ((err = ed_store_prepare(&s, st, "UPDATE api_keys SET last_used_at = ? WHERE id = ?")) < 0)
        return err;
    sqlite3_bind_int64(s, 1, now_ms);
    sqlite3_bind_int64(s, 2, k->key.id);
    if ((rc = sqlite3_step(s)) != SQLITE_DONE)
        err = ed_store_error(ed_store_db(st), rc, "record key use");
    sqlite3_finalize(s);
    return err;
}

int acct_key_revoke(ed_store *st, const acct_actor *actor, int64_t user_id, int64_t key_id)
{
    char target[32];
    sqlite3_stmt *s = NULL;
    int err, rc;

    if ((err = ed_store_begin(st)) < 0)
        return err;
    if ((err = ed_store_prepare(&s, st,
                                "UPDATE api_keys SET revoked_at = ? WHERE id = ? AND user_id = ?"
                                " AND revoked_at IS NULL")) < 0)
        goto fail;
    sqlite3_bind_int64(s, 1, ed_now_ms());
    sqlite3_bind_int64(s, 2, key_id);
    sqlite3_bind_int64(s, 3, user_id);
    if ((rc = sqlite3_step(s)) != SQLITE_DONE) {
        err = ed_store_error(ed_store_db(st), rc, "revoke API key");
        goto fail;
    }
    if (sqlite3_changes(ed_store_db(st)) == 0) {
        err = ed_error_set(ED_ENOTFOUND, "no active API key %lld", (long long)key_id);
        goto fail;
    }
    snprintf(target, sizeof(target), "key:%lld", (long long)key_id);
    if ((err = acct_audit_append(st, actor, "key.revoke", target, NULL)) < 0 ||
        (err = ed_store_commit(st)) < 0)
        goto fail;
    sqlite3_finalize(s);
    return 0;
fail:
    sqlite3_finalize(s);
    ed_store_rollback(st);
    return err;
}

static json_t *time_or_null(int64_t ms)
{
    char at[ED_RFC3339_LEN];

    return ms ? json_string(ed_time_rfc3339(at, sizeof(at), ms)) : json_null();
}

json_t *acct_key_json(const acct_key_info *k)
{
    json_t *j = json_object();

    if (j == NULL)
        return NULL;
    if (json_object_set_new(j, "id", json_integer(k->id)) < 0 ||
        json_object_set_new(j, "name", json_string(k->name)) < 0 ||
        json_object_set_new(j, "env", json_string(k->env)) < 0 ||
        json_object_set_new(j, "scopes", acct_scopes_json(k->scopes)) < 0 ||
        json_object_set_new(j, "prefix", json_string(k->prefix)) < 0 ||
        json_object_set_new(j, "created_at", time_or_null(k->created_at)) < 0 ||
        json_object_set_new(j, "expires_at", time_or_null(k->expires_at)) < 0 ||
        json_object_set_new(j, "last_used_at", time_or_null(k->last_used_at)) < 0 ||
        json_object_set_new(j, "daily_budget_mcoins", k->daily_budget_mcoins >= 0
                                                          ? json_integer(k->daily_budget_mcoins)
                                                          : json_null()) < 0 ||
        json_object_set_new(j, "rate_limit_per_min", k->rate_limit_per_min > 0
                                                         ? json_integer(k->rate_limit_per_min)
                                                         : json_null()) < 0) {
        json_decref(j);
        return NULL;
    }
    return j;
}

static json_t *key_row_json(int64_t *id, sqlite3_stmt *s, void *payload)
{
    acct_key_info k;

    (void)payload;
    read_key(&k, s);
    *id = k.id;
    return acct_key_json(&k);
}

int acct_key_list(json_t **items, int64_t *next_cursor, ed_store *st, int64_t user_id, int limit,
                  int64_t before_id)
{
    sqlite3_stmt *s = NULL;
    int err;

    *items = NULL;
    *next_cursor = 0;
    if ((err = ed_store_prepare(&s, st,
                                "SELECT " KEY_COLS " FROM api_keys k WHERE k.user_id = ?"
                                " AND k.revoked_at IS NULL AND k.id < ? ORDER BY k.id DESC LIMIT ?")) < 0)
        return err;
    sqlite3_bind_int64(s, 1, user_id);
    sqlite3_bind_int64(s, 2, before_id > 0 ? before_id : INT64_MAX);
    sqlite3_bind_int(s, 3, limit + 1);
    /* *next_cursor: rows with id < it follow */
    return acct__page_rows(items, next_cursor, s, limit, key_row_json, NULL, "key list",
                         "list API keys");
}
