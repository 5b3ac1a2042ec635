/*
 * sessions.c - browser sessions: a random cookie value whose SHA-256 is the
 * row's key, a CSRF token, an expiry. A leaked database does not give anyone
 * a usable cookie.
 */
#include "acct_int.h"

#include "ed_crypto.h"
#include "ed_error.h"
#include "ed_time.h"

#include <stdio.h>
#include <string.h>

int acct_session_create(char token[ACCT_SESSION_TOKEN_CHARS + 1], acct_session *out, ed_store *st,
                       int64_t user_id, int64_t ttl_ms, const char *ip)
{
    char hash[65];
    sqlite3_stmt *s = NULL;
    int64_t now = ed_now_ms();
    int err, rc;

    memset(out, 0, sizeof(*out));
    token[0] = '\0';
    if (ttl_ms <= 0)
        ttl_ms = ACCT_SESSION_TTL_DEFAULT_MS;
    ed_random_token(token, ACCT_SESSION_TOKEN_CHARS);
    ed_random_token(out->csrf, ACCT_CSRF_TOKEN_CHARS);
    ed_sha256_hex(hash, token, ACCT_SESSION_TOKEN_CHARS);
    if ((err = ed_store_prepare(&s, st,
                                "INSERT INTO sessions (user_id, token_sha256, csrf_token, created_at,"
                                " expires_at, ip) VALUES (?, ?, ?, ?, ?, ?)")) < 0)
        return err;
    sqlite3_bind_int64(s, 1, user_id);
    sqlite3_bind_text(s, 2, hash, -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 3, out->csrf, -1, SQLITE_STATIC);
    sqlite3_bind_int64(s, 4, now);
    sqlite3_bind_int64(s, 5, now + ttl_ms);
    if (ip)
        sqlite3_bind_text(s, 6, ip, -1, SQLITE_STATIC);
    else
        sqlite3_bind_null(s, 6);
    if ((rc = sqlite3_step(s)) != SQLITE_DONE) {
        err = ed_store_error(ed_store_db(st), rc, "create session");
        token[0] = '\0';
    } else {
        out->id = sqlite3_last_insert_rowid(ed_store_db(st));
        out->expires_at = now + ttl_ms;
    }
    sqlite3_finalize(s);
    return err;
}

int acct_session_lookup(acct_session *out, acct_user *u, ed_store *st, const char *token)
{
    char hash[65];
    sqlite3_stmt *s = NULL;
    int err, rc;

    memset(out, 0, sizeof(*out));
    if (token == NULL || strlen(token) != ACCT_SESSION_TOKEN_CHARS)
        return ed_error_set(ED_EAUTH, "session cookie is not valid");
    ed_sha256_hex(hash, token, ACCT_SESSION_TOKEN_CHARS);
    if ((err = ed_store_prepare(&s, st,
                                "SELECT s.id, s.csrf_token, s.expires_at, u.id, u.username, u.email,"
                                " u.role, u.tier, u.suspended, u.created_at"
                                " FROM sessions s JOIN users u ON u.id = s.user_id"
                                " WHERE s.token_sha256 = ?")) < 0)
        return err;
    sqlite3_bind_text(s, 1, hash, -1, SQLITE_STATIC);
    rc = sqlite3_step(s);
    if (rc == SQLITE_ROW) {
        const char *csrf = (const char *)sqlite3_column_text(s, 1);
        out->id = sqlite3_column_int64(s, 0);
        snprintf(out->csrf, sizeof(out->csrf), "%s", csrf ? csrf : "");
        out->expires_at = sqlite3_column_int64(s, 2);
        memset(u, 0, sizeof(*u));
        u->id = sqlite3_column_int64(s, 3);
        snprintf(u->username, sizeof(u->username), "%s", (const char *)sqlite3_column_text(s, 4));
        snprintf(u->email, sizeof(u->email), "%s", (const char *)sqlite3_column_text(s, 5));
        snprintf(u->role, sizeof(u->role), "%s", (const char *)sqlite3_column_text(s, 6));
        snprintf(u->tier, sizeof(u->tier), "%s", (const char *)sqlite3_column_text(s, 7));
        u->suspended = sqlite3_column_int(s, 8) != 0;
        u->created_at = sqlite3_column_int64(s, 9);
    } else if (rc == SQLITE_DONE) {
        err = ed_error_set(ED_EAUTH, "session is not valid (logged out or expired)");
    } else {
        err = ed_store_error(ed_store_db(st), rc, "read session");
    }
    sqlite3_finalize(s);
    if (err < 0)
        return err;
    if (out->expires_at <= ed_now_ms()) {
        acct_session_delete(st, out->id);
        return ed_error_set(ED_EAUTH, "session expired: log in again");
    }
    if (u->suspended)
        return ed_error_set(ED_EAUTH, "account is suspended");
    return 0;
}

static int delete_where(ed_store *st, const char *sql, const char *text, int64_t id)
{
    sqlite3_stmt *s = NULL;
    int err, rc;

    if ((err = ed_store_prepare(&s, st, sql)) < 0)
        return err;
    if (text)
        sqlite3_bind_text(s, 1, text, -1, SQLITE_STATIC);
    else
        sqlite3_bind_int64(s, 1, id);
    if ((rc = sqlite3_step(s)) != SQLITE_DONE)
        err = ed_store_error(ed_store_db(st), rc, "delete session");
    sqlite3_finalize(s);
    return err;
}

int acct_session_delete(ed_store *st, int64_t id)
{
    return delete_where(st, "DELETE FROM sessions WHERE id = ?", NULL, id);
}

int acct_session_delete_token(ed_store *st, const char *token)
{
    char hash[65];

    if (token == NULL)
        return 0;
    ed_sha256_hex(hash, token, strlen(token));
    return delete_where(st, "DELETE FROM sessions WHERE token_sha256 = ?", hash, 0);
}

int acct_session_prune(ed_store *st, int64_t user_id, int64_t now_ms)
{
    sqlite3_stmt *s = NULL;
    int err, rc;

    if ((err = ed_store_prepare(&s, st, "DELETE FROM sessions WHERE user_id = ? AND expires_at <= ?")) < 0)
        return err;
    sqlite3_bind_int64(s, 1, user_id);
    sqlite3_bind_int64(s, 2, now_ms);
    if ((rc = sqlite3_step(s)) != SQLITE_DONE)
        err = ed_store_error(ed_store_db(st), rc, "prune sessions");
    sqlite3_finalize(s);
    return err;
}

int acct_session_csrf(char csrf[ACCT_CSRF_TOKEN_CHARS + 1], ed_store *st, int64_t id)
{
    sqlite3_stmt *s = NULL;
    int err, rc;

    csrf[0] = '\0';
    if ((err = ed_store_prepare(&s, st, "SELECT csrf_token FROM sessions WHERE id = ?")) < 0)
        return err;
    sqlite3_bind_int64(s, 1, id);
    rc = sqlite3_step(s);
    if (rc == SQLITE_ROW)
        snprintf(csrf, ACCT_CSRF_TOKEN_CHARS + 1, "%s", (const char *)sqlite3_column_text(s, 0));
    else if (rc == SQLITE_DONE)
        err = ed_error_set(ED_ENOTFOUND, "session %lld is gone", (long long)id);
    else
        err = ed_store_error(ed_store_db(st), rc, "read session");
    sqlite3_finalize(s);
    return err;
}
