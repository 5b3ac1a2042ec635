/* Unit tests for the accounts module (users, passwords, sessions, keys,
 * settings, login addresses, audit) against a real temporary SQLite store.
 * The gateway's rate limiter is tested in tests/unit/gateway/test_ratelimit.c. */
#include "acct.h"

#include "ed_crypto.h"
#include "ed_error.h"
#include "ed_store.h"
#include "ed_time.h"
#include "quota.h"

#include <check.h>
#include <sodium.h>
#include <ftw.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "../support/unit_util.h"

/* ---- a temporary store per test ------------------------------------------- */

static char tmpdir[64];
static ed_store *st;

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb; (void)flag; (void)ftw;
    return remove(path);
}

static void store_setup(void)
{
    char path[128];

    ck_assert_int_eq(ed_crypto_init(), 0);
    snprintf(tmpdir, sizeof(tmpdir), "/tmp/eddy-acct-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(tmpdir));
    snprintf(path, sizeof(path), "%s/eddy.db", tmpdir);
    ck_assert_int_eq(ed_store_open(&st, path), 0);
}

static void store_teardown(void)
{
    ed_store_close(st);
    st = NULL;
    nftw(tmpdir, rm_entry, 8, FTW_DEPTH | FTW_PHYS);
}

static int64_t count_rows(const char *sql)
{
    return unit_store_int(st, sql);
}

/* The newest audit row's action, target and detail (static buffers). */
static void last_audit(char action[64], char target[64], char detail[256])
{
    sqlite3_stmt *s = NULL;

    ck_assert_int_eq(ed_store_prepare(&s, st,
                                      "SELECT action, coalesce(target, ''), coalesce(detail, '')"
                                      " FROM audit ORDER BY id DESC LIMIT 1"), 0);
    ck_assert_int_eq(sqlite3_step(s), SQLITE_ROW);
    snprintf(action, 64, "%s", (const char *)sqlite3_column_text(s, 0));
    snprintf(target, 64, "%s", (const char *)sqlite3_column_text(s, 1));
    snprintf(detail, 256, "%s", (const char *)sqlite3_column_text(s, 2));
    sqlite3_finalize(s);
}

/* ---- keys: format and checksum ---------------------------------------------- */

START_TEST(crc32_matches_the_standard_check_value)
{
    ck_assert_uint_eq(acct_key_crc32("123456789", 9), 0xCBF43926u);
    ck_assert_uint_eq(acct_key_crc32("", 0), 0u);
}
END_TEST

START_TEST(key_generated_has_the_documented_shape_and_parses_back)
{
    static const char *const envs[] = {"dev", "test", "prod"};

    ck_assert_int_eq(ed_crypto_init(), 0);
    for (int i = 0; i < 3; i++) {
        char key[ACCT_KEY_MAX_LEN + 1], other[ACCT_KEY_MAX_LEN + 1], env[8];
        size_t head = strlen("eddy__") + strlen(envs[i]);
        ck_assert_int_eq(acct_key_generate(key, envs[i]), 0);
        ck_assert_int_eq(acct_key_generate(other, envs[i]), 0);
        ck_assert_str_ne(key, other);
        ck_assert_uint_eq(strlen(key), head + ACCT_KEY_RANDOM_CHARS + 1 + ACCT_KEY_CHECK_CHARS);
        ck_assert(strncmp(key, "eddy_", 5) == 0);
        ck_assert(strncmp(key + 5, envs[i], strlen(envs[i])) == 0);
        ck_assert_int_eq(key[head - 1], '_');
        ck_assert_int_eq(key[head + ACCT_KEY_RANDOM_CHARS], '_');
        ck_assert_int_eq(acct_key_parse(env, key), 0);
        ck_assert_str_eq(env, envs[i]);
    }
    ck_assert_int_eq(acct_key_generate((char[ACCT_KEY_MAX_LEN + 1]){0}, "staging"), ED_EINVAL);
}
END_TEST

START_TEST(key_with_any_single_character_changed_is_rejected)
{
    char key[ACCT_KEY_MAX_LEN + 1], env[8];
    size_t start = strlen("eddy_dev_");

    ck_assert_int_eq(ed_crypto_init(), 0);
    ck_assert_int_eq(acct_key_generate(key, "dev"), 0);
    for (size_t i = start; key[i]; i++) {
        char saved = key[i];
        if (saved == '_')
            continue;
        key[i] = saved == 'a' ? 'b' : 'a';
        ck_assert_msg(acct_key_parse(env, key) == ED_EAUTH, "tampered position %zu accepted", i);
        key[i] = saved;
    }
    ck_assert_int_eq(acct_key_parse(env, key), 0);
    key[start + 3] = key[start + 3] == 'Q' ? 'R' : 'Q';
    ck_assert_int_eq(acct_key_parse(env, key), ED_EAUTH);
    ck_assert(strstr(ed_error_last(), "checksum") != NULL);
}
END_TEST

START_TEST(key_malformed_shapes_are_rejected_before_any_lookup)
{
    char key[ACCT_KEY_MAX_LEN + 1], buf[128], env[8];

    ck_assert_int_eq(ed_crypto_init(), 0);
    ck_assert_int_eq(acct_key_generate(key, "prod"), 0);
    ck_assert_int_eq(acct_key_parse(env, ""), ED_EAUTH);
    ck_assert_int_eq(acct_key_parse(env, "eddy_"), ED_EAUTH);
    ck_assert_int_eq(acct_key_parse(env, "sk-abcdef"), ED_EAUTH);
    /* truncated by one character */
    snprintf(buf, sizeof(buf), "%.*s", (int)strlen(key) - 1, key);
    ck_assert_int_eq(acct_key_parse(env, buf), ED_EAUTH);
    /* one character too many */
    snprintf(buf, sizeof(buf), "%sA", key);
    ck_assert_int_eq(acct_key_parse(env, buf), ED_EAUTH);
    /* unknown env with an otherwise valid shape */
    snprintf(buf, sizeof(buf), "eddy_qa_%s", key + strlen("eddy_prod_"));
    ck_assert_int_eq(acct_key_parse(env, buf), ED_EAUTH);
    /* a non-base62 character in the random part */
    snprintf(buf, sizeof(buf), "%s", key);
    buf[strlen("eddy_prod_") + 4] = '-';
    ck_assert_int_eq(acct_key_parse(env, buf), ED_EAUTH);
}
END_TEST

START_TEST(scopes_round_trip_and_unknown_names_are_refused)
{
    unsigned bits;
    char csv[64];
    json_t *arr = json_pack("[s,s]", "read", "run");

    ck_assert_int_eq(acct_scopes_from_json(&bits, arr), 0);
    ck_assert_uint_eq(bits, ACCT_SCOPE_READ | ACCT_SCOPE_RUN);
    acct_scopes_to_csv(csv, sizeof(csv), bits);
    ck_assert_str_eq(csv, "read,run");
    ck_assert_int_eq(acct_scopes_parse_list(&bits, csv), 0);
    ck_assert_uint_eq(bits, ACCT_SCOPE_READ | ACCT_SCOPE_RUN);
    json_decref(arr);
    arr = json_pack("[s]", "root");
    ck_assert_int_eq(acct_scopes_from_json(&bits, arr), ED_EINVAL);
    json_decref(arr);
    arr = json_array();
    ck_assert_int_eq(acct_scopes_from_json(&bits, arr), ED_EINVAL);
    json_decref(arr);
    arr = json_pack("[i]", 3);
    ck_assert_int_eq(acct_scopes_from_json(&bits, arr), ED_EINVAL);
    json_decref(arr);
}
END_TEST

/* ---- passwords ------------------------------------------------------------------ */

START_TEST(password_hash_is_argon2id_with_at_least_owasp_parameters)
{
    char hash[ACCT_PWHASH_STRBYTES];
    unsigned v = 0, m = 0, t = 0, p = 0;

    ck_assert_int_eq(ed_crypto_init(), 0);
    ck_assert_int_eq(acct_password_hash(hash, "correct horse battery"), 0);
    ck_assert_int_eq(sscanf(hash, "$argon2id$v=%u$m=%u,t=%u,p=%u$", &v, &m, &t, &p), 4);
    ck_assert_uint_eq(v, 19);
    ck_assert_uint_ge(m, 19456);
    ck_assert_uint_ge(t, 2);
    ck_assert_uint_eq(p, 1);
    ck_assert(acct_password_verify(hash, "correct horse battery"));
    ck_assert(!acct_password_verify(hash, "correct horse batterz"));
    ck_assert(!acct_password_verify(NULL, "correct horse battery"));
}
END_TEST

START_TEST(hashes_made_with_weaker_parameters_need_a_rehash)
{
    char ours[ACCT_PWHASH_STRBYTES], weak[ACCT_PWHASH_STRBYTES];

    ck_assert_int_eq(ed_crypto_init(), 0);
    ck_assert_int_eq(acct_password_hash(ours, "password1"), 0);
    ck_assert(!acct_password_needs_rehash(ours));
    ck_assert_int_eq(crypto_pwhash_str_alg(weak, "password1", 9, 1, 8192 * 1024,
                                           crypto_pwhash_ALG_ARGON2ID13), 0);
    ck_assert(acct_password_needs_rehash(weak));
    ck_assert(acct_password_verify(weak, "password1"));
}
END_TEST

/* ---- validation ------------------------------------------------------------------ */

START_TEST(username_rules)
{
    static const char *const good[] = {"abc", "alice", "a_b-c9", "z23456789012345678901234567890ab"};
    static const char *const bad[] = {"", "ab", "Alice", "1abc", "_abc", "al ice", "al.ice",
                                      "a234567890123456789012345678901234", "ali\xc3\xa9", NULL};

    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
        ck_assert_msg(acct_username_check(good[i]) == 0, "'%s' refused", good[i]);
    for (size_t i = 0; bad[i]; i++)
        ck_assert_msg(acct_username_check(bad[i]) == ED_EINVAL, "'%s' accepted", bad[i]);
    ck_assert_int_eq(acct_username_check(NULL), ED_EINVAL);
}
END_TEST

START_TEST(email_password_role_and_tier_rules)
{
    ck_assert_int_eq(acct_email_check("a@example.com"), 0);
    ck_assert_int_eq(acct_email_check("admin@localhost"), 0);
    ck_assert_int_eq(acct_email_check("First.Last+tag@sub.example.org"), 0);
    ck_assert_int_eq(acct_email_check("no-at-sign"), ED_EINVAL);
    ck_assert_int_eq(acct_email_check("@example.com"), ED_EINVAL);
    ck_assert_int_eq(acct_email_check("a@"), ED_EINVAL);
    ck_assert_int_eq(acct_email_check("a@b@c"), ED_EINVAL);
    ck_assert_int_eq(acct_email_check("a b@example.com"), ED_EINVAL);
    ck_assert_int_eq(acct_email_check("a@example.com."), ED_EINVAL);
    ck_assert_int_eq(acct_email_check(NULL), ED_EINVAL);

    char longpw[1100];
    memset(longpw, 'x', sizeof(longpw) - 1);
    longpw[sizeof(longpw) - 1] = '\0';
    ck_assert_int_eq(acct_password_check("1234567"), ED_EINVAL);
    ck_assert_int_eq(acct_password_check("12345678"), 0);
    longpw[1024] = '\0';
    ck_assert_int_eq(acct_password_check(longpw), 0);
    longpw[1024] = 'x';
    ck_assert_int_eq(acct_password_check(longpw), ED_EINVAL);

    ck_assert_int_eq(acct_role_check("user"), 0);
    ck_assert_int_eq(acct_role_check("admin"), 0);
    ck_assert_int_eq(acct_role_check("root"), ED_EINVAL);
}
END_TEST

START_TEST(tier_names_come_from_the_tiers_table)
{
    ck_assert_int_eq(acct_tier_check(st, "free"), 0);
    ck_assert_int_eq(acct_tier_check(st, "pro"), 0);
    ck_assert_int_eq(acct_tier_check(st, "premium"), 0);
    ck_assert_int_eq(acct_tier_check(st, "gold"), ED_EINVAL);
    ck_assert_int_eq(acct_tier_check(st, NULL), ED_EINVAL);
    /* a tier an admin adds is accepted at once */
    /* (columns named: later migrations add columns with defaults) */
    ck_assert_int_eq(ed_store_exec(st, "INSERT INTO tiers (name, max_kernels, max_gpus_per_job, max_session_ms, "
                                       "idle_timeout_ms, weight, allow_egress, overdraft_mcoins, "
                                       "free_gpu_ms_per_day, updated_at) SELECT 'gold', max_kernels, "
                                       "max_gpus_per_job, max_session_ms, idle_timeout_ms, weight, allow_egress, "
                                       "overdraft_mcoins, free_gpu_ms_per_day, 0 FROM tiers WHERE name = 'pro'"), 0);
    ck_assert_int_eq(acct_tier_check(st, "gold"), 0);
}
END_TEST

/* ---- users, sessions, keys, audit on a real store ------------------------------ */

/* The ledger reads users' tiers through accounts/: installed as the program
 * loads, with nothing for the program to call. */
START_TEST(user_tier_lookup_serves_the_ledger)
{
    int64_t id = 0, t;
    char tier[32];

    ck_assert_int_eq(acct_user_create(&id, st, "tess", "tess@example.com", "password1", NULL, "pro"), 0);
    ck_assert_int_eq(acct_user_tier(tier, sizeof(tier), st, id), 0);
    ck_assert_str_eq(tier, "pro");
    ck_assert_int_eq(acct_user_tier(tier, sizeof(tier), st, id + 100), ED_ENOTFOUND);
    ck_assert_str_eq(tier, "");
    ck_assert_int_eq(acct_user_tier(tier, 3, st, id), ED_EINTERNAL);   /* "pro" needs 4 */
    /* no quota_user_tier_fn_set here: accounts.c installed the lookup */
    ck_assert_int_eq(ed_store_exec(st, "UPDATE tiers SET overdraft_mcoins = 300 WHERE name = 'pro'"), 0);
    ck_assert_int_eq(quota_charge(&t, st, id, 300, NULL, NULL, "c1"), 0);
    ck_assert_int_eq(quota_charge(&t, st, id, 1, NULL, NULL, "c2"), ED_EQUOTA);
    ck_assert_int_eq(quota_grant(&t, st, id + 100, 5, NULL, "g1", 0), ED_ENOTFOUND);
}
END_TEST

START_TEST(user_create_writes_user_and_audit_row)
{
    int64_t id = 0;
    acct_user u;
    char action[64], target[64], detail[256], want[64];

    ck_assert_int_eq(acct_user_create(&id, st, "alice", "alice@example.com", "password1", "admin",
                                    "pro"), 0);
    ck_assert_int_gt(id, 0);
    ck_assert_int_eq(acct_user_get_by_name(&u, st, "alice"), 0);
    ck_assert_int_eq(u.id, id);
    ck_assert_str_eq(u.role, "admin");
    ck_assert_str_eq(u.tier, "pro");
    ck_assert(!u.suspended);
    ck_assert(strncmp(u.password_hash, "$argon2id$", 10) == 0);
    ck_assert(acct_password_verify(u.password_hash, "password1"));
    last_audit(action, target, detail);
    ck_assert_str_eq(action, "user.create");
    snprintf(want, sizeof(want), "user:%lld", (long long)id);
    ck_assert_str_eq(target, want);
    ck_assert(strstr(detail, "\"role\":\"admin\"") != NULL);
    ck_assert_int_eq(count_rows("SELECT count(*) FROM audit WHERE actor_id IS NULL"), 1);
}
END_TEST

START_TEST(user_create_refuses_taken_names_and_bad_fields_without_writing)
{
    int64_t id;

    ck_assert_int_eq(acct_user_create(&id, st, "alice", "alice@example.com", "password1", NULL, NULL), 0);
    ck_assert_int_eq(acct_user_create(&id, st, "alice", "other@example.com", "password1", NULL, NULL),
                     ED_EEXISTS);
    ck_assert(strstr(ed_error_last(), "username") != NULL);
    ck_assert_int_eq(acct_user_create(&id, st, "alice2", "ALICE@example.com", "password1", NULL, NULL),
                     ED_EEXISTS);
    ck_assert(strstr(ed_error_last(), "email") != NULL);
    ck_assert_int_eq(acct_user_create(&id, st, "Bad Name", "b@example.com", "password1", NULL, NULL),
                     ED_EINVAL);
    ck_assert_int_eq(acct_user_create(&id, st, "bob", "not-an-email", "password1", NULL, NULL), ED_EINVAL);
    ck_assert_int_eq(acct_user_create(&id, st, "bob", "b@example.com", "short", NULL, NULL), ED_EINVAL);
    ck_assert_int_eq(acct_user_create(&id, st, "bob", "b@example.com", "password1", "root", NULL),
                     ED_EINVAL);
    ck_assert_int_eq(acct_user_create(&id, st, "bob", "b@example.com", "password1", "user", "gold"),
                     ED_EINVAL);
    ck_assert_int_eq(id, 0);
    ck_assert_int_eq(count_rows("SELECT count(*) FROM users"), 1);
    ck_assert_int_eq(count_rows("SELECT count(*) FROM audit"), 1);
    int64_t n = -1;
    ck_assert_int_eq(acct_user_count(&n, st), 0);   /* what the admin overview shows */
    ck_assert_int_eq(n, 1);
}
END_TEST

START_TEST(set_role_and_set_tier_update_and_audit_changes)
{
    int64_t id;
    acct_user u;
    char action[64], target[64], detail[256];

    ck_assert_int_eq(acct_user_create(&id, st, "carol", "carol@example.com", "password1", NULL, NULL), 0);
    ck_assert_int_eq(acct_user_set_role(st, "carol", "admin"), 0);
    last_audit(action, target, detail);
    ck_assert_str_eq(action, "user.set_role");
    ck_assert_str_eq(detail, "{\"from\":\"user\",\"to\":\"admin\"}");
    ck_assert_int_eq(acct_user_set_tier(st, "carol", "premium"), 0);
    last_audit(action, target, detail);
    ck_assert_str_eq(action, "user.set_tier");
    ck_assert_str_eq(detail, "{\"from\":\"free\",\"to\":\"premium\"}");
    ck_assert_int_eq(acct_user_get(&u, st, id), 0);
    ck_assert_str_eq(u.role, "admin");
    ck_assert_str_eq(u.tier, "premium");
    /* setting the same value again changes nothing and writes no row */
    ck_assert_int_eq(acct_user_set_tier(st, "carol", "premium"), 0);
    ck_assert_int_eq(count_rows("SELECT count(*) FROM audit"), 3);
    /* refused changes write nothing */
    ck_assert_int_eq(acct_user_set_tier(st, "carol", "gold"), ED_EINVAL);
    ck_assert_int_eq(acct_user_set_role(st, "carol", "owner"), ED_EINVAL);
    ck_assert_int_eq(acct_user_set_role(st, "nobody", "admin"), ED_ENOTFOUND);
    ck_assert_int_eq(count_rows("SELECT count(*) FROM audit"), 3);
    ck_assert_int_eq(acct_user_get(&u, st, id), 0);
    ck_assert_str_eq(u.tier, "premium");
}
END_TEST

START_TEST(session_token_is_stored_hashed_and_ends_on_delete)
{
    char token[ACCT_SESSION_TOKEN_CHARS + 1], sql[256];
    acct_session s, s2;
    acct_user u;
    int64_t id;

    ck_assert_int_eq(acct_user_create(&id, st, "dave", "dave@example.com", "password1", NULL, NULL), 0);
    ck_assert_int_eq(acct_session_create(token, &s, st, id, 60000, "127.0.0.1"), 0);
    ck_assert_uint_eq(strlen(token), ACCT_SESSION_TOKEN_CHARS);
    ck_assert_uint_eq(strlen(s.csrf), ACCT_CSRF_TOKEN_CHARS);
    snprintf(sql, sizeof(sql), "SELECT count(*) FROM sessions WHERE token_sha256 = '%s'", token);
    ck_assert_int_eq(count_rows(sql), 0);
    ck_assert_int_eq(acct_session_lookup(&s2, &u, st, token), 0);
    ck_assert_int_eq(s2.id, s.id);
    ck_assert_str_eq(s2.csrf, s.csrf);
    ck_assert_str_eq(u.username, "dave");
    ck_assert_int_eq(acct_session_lookup(&s2, &u, st, "x"), ED_EAUTH);
    ck_assert_int_eq(acct_session_delete_token(st, token), 0);
    ck_assert_int_eq(acct_session_lookup(&s2, &u, st, token), ED_EAUTH);
}
END_TEST

START_TEST(expired_session_is_refused_and_removed)
{
    char token[ACCT_SESSION_TOKEN_CHARS + 1];
    acct_session s;
    acct_user u;
    int64_t id;

    ck_assert_int_eq(acct_user_create(&id, st, "erin", "erin@example.com", "password1", NULL, NULL), 0);
    ck_assert_int_eq(acct_session_create(token, &s, st, id, 60000, NULL), 0);
    ck_assert_int_eq(ed_store_exec(st, "UPDATE sessions SET expires_at = 1"), 0);
    ck_assert_int_eq(acct_session_lookup(&s, &u, st, token), ED_EAUTH);
    ck_assert_int_eq(count_rows("SELECT count(*) FROM sessions"), 0);
    /* pruning at login removes only the user's expired sessions */
    ck_assert_int_eq(acct_session_create(token, &s, st, id, 60000, NULL), 0);
    ck_assert_int_eq(acct_session_create(token, &s, st, id, 60000, NULL), 0);
    ck_assert_int_eq(ed_store_exec(st, "UPDATE sessions SET expires_at = 5 WHERE id = (SELECT min(id) FROM sessions)"), 0);
    ck_assert_int_eq(acct_session_prune(st, id, ed_now_ms()), 0);
    ck_assert_int_eq(count_rows("SELECT count(*) FROM sessions"), 1);
    {
        char csrf[ACCT_CSRF_TOKEN_CHARS + 1];
        ck_assert_int_eq(acct_session_csrf(csrf, st, s.id), 0);
        ck_assert_str_eq(csrf, s.csrf);
        ck_assert_int_eq(acct_session_csrf(csrf, st, s.id + 100), ED_ENOTFOUND);
    }
}
END_TEST

START_TEST(suspending_a_user_ends_sessions_and_is_audited)
{
    char token[ACCT_SESSION_TOKEN_CHARS + 1], action[64], target[64], detail[256];
    acct_user_patch p = {.role = NULL, .tier = NULL, .suspended = 1};
    acct_actor admin = {.user_id = 0, .ip = "10.0.0.1", .request_id = "req-1"};
    acct_session s;
    acct_user u;
    int64_t id;

    ck_assert_int_eq(acct_user_create(&id, st, "frank", "frank@example.com", "password1", NULL, NULL), 0);
    ck_assert_int_eq(acct_session_create(token, &s, st, id, 60000, NULL), 0);
    ck_assert_int_eq(acct_user_update(st, &admin, id, &p), 0);
    last_audit(action, target, detail);
    ck_assert_str_eq(action, "user.suspend");
    ck_assert_int_eq(count_rows("SELECT count(*) FROM audit WHERE ip = '10.0.0.1' AND request_id = 'req-1'"), 1);
    ck_assert_int_eq(count_rows("SELECT count(*) FROM sessions"), 0);
    ck_assert_int_eq(acct_session_lookup(&s, &u, st, token), ED_EAUTH);
    ck_assert_int_eq(acct_user_update(st, &admin, 999, &p), ED_ENOTFOUND);
}
END_TEST

START_TEST(key_create_stores_only_hash_and_revoke_is_audited)
{
    acct_key_new k = {.name = "ci", .env = "test", .scopes = ACCT_SCOPE_READ | ACCT_SCOPE_RUN,
                     .expires_in_days = 30, .daily_budget_mcoins = 5000, .rate_limit_per_min = 0};
    char key[ACCT_KEY_MAX_LEN + 1], sql[256], env[8], action[64], target[64], detail[256];
    acct_actor actor = {.user_id = 0};
    acct_key_info info;
    acct_key_auth a;
    int64_t uid, other;
    json_t *items;
    int64_t next;

    ck_assert_int_eq(acct_user_create(&uid, st, "gina", "gina@example.com", "password1", NULL, "pro"), 0);
    ck_assert_int_eq(acct_user_create(&other, st, "hank", "hank@example.com", "password1", NULL, NULL), 0);
    actor.user_id = uid;
    ck_assert_int_eq(acct_key_create(key, &info, st, &actor, uid, &k), 0);
    ck_assert_int_eq(acct_key_parse(env, key), 0);
    ck_assert_str_eq(env, "test");
    ck_assert(strncmp(info.prefix, key, strlen(info.prefix)) == 0);
    ck_assert_uint_eq(strlen(info.prefix), strlen("eddy_test_") + ACCT_KEY_PREFIX_RANDOM);
    snprintf(sql, sizeof(sql), "SELECT count(*) FROM api_keys WHERE key_sha256 = '%s' OR prefix = '%s'",
             key, key);
    ck_assert_int_eq(count_rows(sql), 0);
    last_audit(action, target, detail);
    ck_assert_str_eq(action, "key.create");

    ck_assert_int_eq(acct_key_lookup(&a, st, key), 0);
    ck_assert_int_eq(a.key.id, info.id);
    ck_assert_int_eq(a.key.user_id, uid);
    ck_assert_uint_eq(a.key.scopes, ACCT_SCOPE_READ | ACCT_SCOPE_RUN);
    ck_assert_str_eq(a.username, "gina");
    ck_assert_str_eq(a.tier, "pro");
    ck_assert_int_gt(a.key.expires_at, ed_now_ms());
    ck_assert_int_eq(a.key.daily_budget_mcoins, 5000);
    ck_assert_int_eq(a.key.revoked_at, 0);
    /* the cached statement is reused */
    ck_assert_int_eq(acct_key_lookup(&a, st, key), 0);

    ck_assert_int_eq(acct_key_list(&items, &next, st, uid, 10, 0), 0);
    ck_assert_uint_eq(json_array_size(items), 1);
    ck_assert_ptr_null(json_object_get(json_array_get(items, 0), "key"));
    ck_assert_int_eq(next, 0);
    json_decref(items);

    ck_assert_int_eq(acct_key_revoke(st, &actor, other, info.id), ED_ENOTFOUND);
    ck_assert_int_eq(acct_key_revoke(st, &actor, uid, info.id), 0);
    last_audit(action, target, detail);
    ck_assert_str_eq(action, "key.revoke");
    snprintf(sql, sizeof(sql), "key:%lld", (long long)info.id);
    ck_assert_str_eq(target, sql);
    ck_assert_int_eq(acct_key_revoke(st, &actor, uid, info.id), ED_ENOTFOUND);
    ck_assert_int_eq(acct_key_lookup(&a, st, key), 0);
    ck_assert_int_gt(a.key.revoked_at, 0);
    key[strlen(key) - 1] ^= 1;
    ck_assert_int_eq(acct_key_lookup(&a, st, key), ED_EAUTH);
}
END_TEST

START_TEST(key_create_refuses_bad_fields_without_writing)
{
    acct_key_new k = {.name = "x", .env = "dev", .scopes = ACCT_SCOPE_READ, .daily_budget_mcoins = -1};
    char key[ACCT_KEY_MAX_LEN + 1];
    acct_key_info info;
    int64_t uid;

    ck_assert_int_eq(acct_user_create(&uid, st, "ivan", "ivan@example.com", "password1", NULL, NULL), 0);
    k.env = "staging";
    ck_assert_int_eq(acct_key_create(key, &info, st, NULL, uid, &k), ED_EINVAL);
    k.env = "dev";
    k.scopes = 0;
    ck_assert_int_eq(acct_key_create(key, &info, st, NULL, uid, &k), ED_EINVAL);
    k.scopes = ACCT_SCOPE_READ;
    k.name = "";
    ck_assert_int_eq(acct_key_create(key, &info, st, NULL, uid, &k), ED_EINVAL);
    k.name = "ok";
    k.expires_in_days = 5000;
    ck_assert_int_eq(acct_key_create(key, &info, st, NULL, uid, &k), ED_EINVAL);
    k.expires_in_days = 0;
    ck_assert_int_lt(acct_key_create(key, &info, st, NULL, 424242, &k), 0);  /* no such user: FK */
    ck_assert_int_eq(count_rows("SELECT count(*) FROM api_keys"), 0);
    ck_assert_int_eq(count_rows("SELECT count(*) FROM audit WHERE action = 'key.create'"), 0);
}
END_TEST

START_TEST(key_touch_writes_at_most_once_a_minute)
{
    acct_key_new k = {.name = "t", .env = "dev", .scopes = ACCT_SCOPE_READ, .daily_budget_mcoins = -1};
    char key[ACCT_KEY_MAX_LEN + 1];
    acct_key_info info;
    acct_key_auth a;
    int64_t uid;

    ck_assert_int_eq(acct_user_create(&uid, st, "judy", "judy@example.com", "password1", NULL, NULL), 0);
    ck_assert_int_eq(acct_key_create(key, &info, st, NULL, uid, &k), 0);
    ck_assert_int_eq(acct_key_lookup(&a, st, key), 0);
    ck_assert_int_eq(acct_key_touch(st, &a, 1000000), 0);
    ck_assert_int_eq(acct_key_lookup(&a, st, key), 0);
    ck_assert_int_eq(a.key.last_used_at, 1000000);
    ck_assert_int_eq(acct_key_touch(st, &a, 1000000 + 59999), 0);
    ck_assert_int_eq(acct_key_lookup(&a, st, key), 0);
    ck_assert_int_eq(a.key.last_used_at, 1000000);
    ck_assert_int_eq(acct_key_touch(st, &a, 1000000 + 60000), 0);
    ck_assert_int_eq(acct_key_lookup(&a, st, key), 0);
    ck_assert_int_eq(a.key.last_used_at, 1060000);
}
END_TEST

START_TEST(users_list_pages_by_id)
{
    char name[16], email[32];
    int64_t id, next = -1, cursor = 0;
    json_t *items;
    int seen = 0;

    for (int i = 0; i < 5; i++) {
        snprintf(name, sizeof(name), "user%d", i);
        snprintf(email, sizeof(email), "u%d@example.com", i);
        ck_assert_int_eq(acct_user_create(&id, st, name, email, "password1", NULL, NULL), 0);
    }
    do {
        ck_assert_int_eq(acct_user_list(&items, &next, st, 2, cursor), 0);
        for (size_t i = 0; i < json_array_size(items); i++) {
            json_t *u = json_array_get(items, i);
            snprintf(name, sizeof(name), "user%d", seen++);
            ck_assert_str_eq(json_string_value(json_object_get(u, "username")), name);
            ck_assert(json_is_false(json_object_get(u, "suspended")));
            ck_assert_ptr_null(json_object_get(u, "password_hash"));
        }
        json_decref(items);
        cursor = next;
    } while (next);
    ck_assert_int_eq(seen, 5);
}
END_TEST

START_TEST(keys_list_pages_newest_first_and_hides_revoked)
{
    acct_key_new k = {.name = "k", .env = "dev", .scopes = ACCT_SCOPE_READ, .daily_budget_mcoins = -1};
    char key[ACCT_KEY_MAX_LEN + 1];
    acct_key_info info[4];
    json_t *items;
    int64_t uid, next;

    ck_assert_int_eq(acct_user_create(&uid, st, "kim", "kim@example.com", "password1", NULL, NULL), 0);
    for (int i = 0; i < 4; i++)
        ck_assert_int_eq(acct_key_create(key, &info[i], st, NULL, uid, &k), 0);
    ck_assert_int_eq(acct_key_revoke(st, NULL, uid, info[1].id), 0);
    ck_assert_int_eq(acct_key_list(&items, &next, st, uid, 2, 0), 0);
    ck_assert_uint_eq(json_array_size(items), 2);
    ck_assert_int_eq(json_integer_value(json_object_get(json_array_get(items, 0), "id")), info[3].id);
    ck_assert_int_eq(json_integer_value(json_object_get(json_array_get(items, 1), "id")), info[2].id);
    ck_assert_int_eq(next, info[2].id);
    json_decref(items);
    ck_assert_int_eq(acct_key_list(&items, &next, st, uid, 2, next), 0);
    ck_assert_uint_eq(json_array_size(items), 1);
    ck_assert_int_eq(json_integer_value(json_object_get(json_array_get(items, 0), "id")), info[0].id);
    ck_assert_int_eq(next, 0);
    json_decref(items);
}
END_TEST

START_TEST(settings_default_then_set_and_audited)
{
    bool open = false;
    char action[64], target[64], detail[256];

    ck_assert_int_eq(acct_setting_get_bool(&open, st, "signup_open", true), 0);
    ck_assert(open);
    ck_assert_int_eq(acct_setting_set(st, NULL, "signup_open", "false"), 0);
    ck_assert_int_eq(acct_setting_get_bool(&open, st, "signup_open", true), 0);
    ck_assert(!open);
    last_audit(action, target, detail);
    ck_assert_str_eq(action, "settings.set");
    ck_assert_str_eq(target, "signup_open");
}
END_TEST

START_TEST(key_envs_accepted_follow_the_key_envs_setting)
{
    char key_envs[32] = "";   /* the server's key_envs setting (gw_config.key_envs) */
    char list[32];

    ck_assert(acct_key_env_accepted(key_envs, "dev") && acct_key_env_accepted(key_envs, "test") && acct_key_env_accepted(key_envs, "prod"));
    ck_assert(!acct_key_env_accepted(key_envs, "staging") && !acct_key_env_accepted(key_envs, "") && !acct_key_env_accepted(key_envs, NULL));
    acct_key_envs_accepted(list, sizeof(list), key_envs);
    ck_assert_str_eq(list, "dev, test, prod");
    snprintf(key_envs, sizeof(key_envs), "prod, dev");
    ck_assert(acct_key_env_accepted(key_envs, "dev") && !acct_key_env_accepted(key_envs, "test") && acct_key_env_accepted(key_envs, "prod"));
    ck_assert(!acct_key_env_accepted(key_envs, "de") && !acct_key_env_accepted(key_envs, "prod,"));
    acct_key_envs_accepted(list, sizeof(list), key_envs);
    ck_assert_str_eq(list, "dev, prod");
}
END_TEST

START_TEST(key_budget_is_the_smaller_of_the_key_and_its_env)
{
    acct_key_new k = {.name = "b", .env = "dev", .scopes = ACCT_SCOPE_RUN, .daily_budget_mcoins = 5000};
    acct_key_new none = {.name = "n", .env = "prod", .scopes = ACCT_SCOPE_RUN, .daily_budget_mcoins = -1};
    char key[ACCT_KEY_MAX_LEN + 1];
    acct_actor actor = {.user_id = 0};
    acct_key_info a, b;
    acct_key_auth ka;
    int64_t uid, budget = 0;
    json_t *spec, *envs = NULL;

    ck_assert_int_eq(acct_user_create(&uid, st, "bud", "bud@example.com", "password1", NULL, "free"), 0);
    ck_assert_int_eq(acct_key_create(key, &a, st, &actor, uid, &k), 0);
    /* seeded: no env caps */
    ck_assert_int_eq(acct_key_budget(&budget, st, a.id), 0);
    ck_assert_int_eq(budget, 5000);
    ck_assert_int_eq(acct_key_lookup(&ka, st, key), 0);
    ck_assert_int_eq(ka.env_daily_budget_mcoins, -1);
    ck_assert_int_eq(ka.env_rate_limit_per_min, 0);
    ck_assert_int_eq(acct_key_create(key, &b, st, &actor, uid, &none), 0);
    ck_assert_int_eq(acct_key_budget(&budget, st, b.id), 0);
    ck_assert_int_eq(budget, -1);
    /* the env caps dev at 2000 for tier free: the key's 5000 is capped */
    spec = json_pack("{s:{s:I, s:i}}", "dev", "daily_budget_mcoins", (json_int_t)2000, "rate_limit_per_min", 7);
    ck_assert_int_eq(acct_tier_key_envs_put(st, "free", spec), 0);
    json_decref(spec);
    ck_assert_int_eq(acct_key_budget(&budget, st, a.id), 0);
    ck_assert_int_eq(budget, 2000);
    ck_assert_int_eq(acct_key_budget(&budget, st, b.id), 0);
    ck_assert_int_eq(budget, -1);   /* prod is not capped */
    ck_assert_int_eq(acct_key_lookup(&ka, st, key), 0);   /* `key` is b's (prod) now */
    ck_assert_int_eq(ka.env_rate_limit_per_min, 0);
    /* a cap above the key's own leaves the key's */
    spec = json_pack("{s:{s:I}}", "dev", "daily_budget_mcoins", (json_int_t)9000);
    ck_assert_int_eq(acct_tier_key_envs_put(st, "free", spec), 0);
    json_decref(spec);
    ck_assert_int_eq(acct_key_budget(&budget, st, a.id), 0);
    ck_assert_int_eq(budget, 5000);
    ck_assert_int_eq(acct_tier_key_envs_json(&envs, st, "free"), 0);
    ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(envs, "dev"), "rate_limit_per_min")), 7);
    ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(envs, "dev"), "daily_budget_mcoins")), 9000);
    json_decref(envs);
    ck_assert_int_eq(acct_key_budget(&budget, st, 999999), ED_ENOTFOUND);
}
END_TEST

START_TEST(login_addresses_are_remembered_recent_and_few)
{
    int64_t uid, now = INT64_C(1700000000000);
    bool known = true;
    char ip[32];

    ck_assert_int_eq(acct_user_create(&uid, st, "lia", "lia@example.com", "password1", NULL, NULL), 0);
    ck_assert_int_eq(acct_login_address_known(&known, st, uid, "192.0.2.1", now), 0);
    ck_assert(!known);
    ck_assert_int_eq(acct_login_address_remember(st, uid, "192.0.2.1", now), 0);
    ck_assert_int_eq(acct_login_address_known(&known, st, uid, "192.0.2.1", now + 1000), 0);
    ck_assert(known);
    ck_assert_int_eq(acct_login_address_known(&known, st, uid, "192.0.2.2", now + 1000), 0);
    ck_assert(!known);
    /* older than 90 days: no longer known */
    ck_assert_int_eq(acct_login_address_known(&known, st, uid, "192.0.2.1", now + INT64_C(91) * 86400000), 0);
    ck_assert(!known);
    /* only the 16 most recent are kept */
    for (int i = 0; i < 20; i++) {
        snprintf(ip, sizeof(ip), "198.51.100.%d", i);
        ck_assert_int_eq(acct_login_address_remember(st, uid, ip, now + 10 + i), 0);
    }
    ck_assert_int_eq(count_rows("SELECT count(*) FROM login_addresses"), 16);
    ck_assert_int_eq(acct_login_address_known(&known, st, uid, "198.51.100.19", now + 100), 0);
    ck_assert(known);
    ck_assert_int_eq(acct_login_address_known(&known, st, uid, "192.0.2.1", now + 100), 0);
    ck_assert(!known);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("accounts");
    TCase *pure = tcase_create("pure");
    TCase *store = tcase_create("store");

    tcase_add_test(pure, crc32_matches_the_standard_check_value);
    tcase_add_test(pure, key_generated_has_the_documented_shape_and_parses_back);
    tcase_add_test(pure, key_with_any_single_character_changed_is_rejected);
    tcase_add_test(pure, key_malformed_shapes_are_rejected_before_any_lookup);
    tcase_add_test(pure, scopes_round_trip_and_unknown_names_are_refused);
    tcase_add_test(pure, password_hash_is_argon2id_with_at_least_owasp_parameters);
    tcase_add_test(pure, hashes_made_with_weaker_parameters_need_a_rehash);
    tcase_add_test(pure, username_rules);
    tcase_add_test(pure, email_password_role_and_tier_rules);
    tcase_add_test(pure, key_envs_accepted_follow_the_key_envs_setting);
    suite_add_tcase(s, pure);

    tcase_add_checked_fixture(store, store_setup, store_teardown);
    tcase_add_test(store, user_create_writes_user_and_audit_row);
    tcase_add_test(store, user_tier_lookup_serves_the_ledger);
    tcase_add_test(store, user_create_refuses_taken_names_and_bad_fields_without_writing);
    tcase_add_test(store, set_role_and_set_tier_update_and_audit_changes);
    tcase_add_test(store, tier_names_come_from_the_tiers_table);
    tcase_add_test(store, session_token_is_stored_hashed_and_ends_on_delete);
    tcase_add_test(store, expired_session_is_refused_and_removed);
    tcase_add_test(store, suspending_a_user_ends_sessions_and_is_audited);
    tcase_add_test(store, key_create_stores_only_hash_and_revoke_is_audited);
    tcase_add_test(store, key_create_refuses_bad_fields_without_writing);
    tcase_add_test(store, key_touch_writes_at_most_once_a_minute);
    tcase_add_test(store, settings_default_then_set_and_audited);
    tcase_add_test(store, users_list_pages_by_id);
    tcase_add_test(store, keys_list_pages_newest_first_and_hides_revoked);
    tcase_add_test(store, key_budget_is_the_smaller_of_the_key_and_its_env);
    tcase_add_test(store, login_addresses_are_remembered_recent_and_few);
    suite_add_tcase(s, store);
    return s;
}

int main(void)
{
    return unit_run(suite());
}
