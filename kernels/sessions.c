/*
 * sessions.c - Jupyter sessions (/api/sessions): rows of the store's
 * jupyter_sessions table (migration 0008), owned here with the kernels they
 * point to, so they survive a restart and cost no memory. The gateway's
 * jupyter_sessions.c speaks HTTP over these calls; a kernel shut down takes
 * its sessions (lifecycle.c), and a dead kernel's go with its journal
 * (cull.c).
 */
#include "kh_int.h"

#include "ed_crypto.h"
#include "ed_error.h"
#include "ed_time.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

_Static_assert(KH_ID_LEN == ED_UUID_LEN, "a session id is a UUID like a kernel id");

#define SESSION_COLUMNS "id, kernel_id, path, name, type"

static const char *col(sqlite3_stmt *q, int i)
{
    const unsigned char *t = sqlite3_column_text(q, i);
    return t ? (const char *)t : "";
}

/* A session of the row (SESSION_COLUMNS) in one allocation. */
static int session_of_row(kh_session **out, sqlite3_stmt *q)
{
    const char *path = col(q, 2), *name = col(q, 3), *type = col(q, 4);
    size_t lp = strlen(path) + 1, ln = strlen(name) + 1, lt = strlen(type) + 1;
    kh_session *s = malloc(sizeof(*s) + lp + ln + lt);
    char *p;

    if (s == NULL)
        return ed_error_set(ED_ENOMEM, "session");
    p = (char *)(s + 1);
    snprintf(s->id, sizeof(s->id), "%s", col(q, 0));
    snprintf(s->kernel_id, sizeof(s->kernel_id), "%s", col(q, 1));
    s->path = memcpy(p, path, lp);
    s->name = memcpy(p + lp, name, ln);
    s->type = memcpy(p + lp + ln, type, lt);
    *out = s;
    return 0;
}

void kh_session_free(kh_session *s)
{
    free(s);
}

static int find_by(kh_session **out, kh_hub *h, int64_t user_id, bool by_path, const char *value)
{
    sqlite3_stmt *q;
    int rc, err;

    *out = NULL;
    if (h == NULL || value == NULL)
        return ed_error_set(ED_ENOTFOUND, "no session %.64s", value ? value : "");
    if ((err = ed_store_prepare(&q, h->cfg.store,
                                by_path ? "SELECT " SESSION_COLUMNS " FROM jupyter_sessions "
                                          "WHERE user_id = ?1 AND path = ?2 ORDER BY created_at LIMIT 1"
                                        : "SELECT " SESSION_COLUMNS " FROM jupyter_sessions "
                                          "WHERE user_id = ?1 AND id = ?2")) < 0)
        return err;
    sqlite3_bind_int64(q, 1, user_id);
    sqlite3_bind_text(q, 2, value, -1, SQLITE_STATIC);
    if ((rc = sqlite3_step(q)) == SQLITE_ROW)
        err = session_of_row(out, q);
    else if (rc == SQLITE_DONE)
        err = ed_error_set(ED_ENOTFOUND, "no session %.64s", value);
    else
        err = ed_store_error(ed_store_db(h->cfg.store), rc, "session");
    sqlite3_finalize(q);
    return err;
}

int kh_session_find(kh_session **out, kh_hub *h, int64_t user_id, const char *id)
{
    return find_by(out, h, user_id, false, id);
}

int kh_session_find_path(kh_session **out, kh_hub *h, int64_t user_id, const char *path)
{
    return find_by(out, h, user_id, true, path);
}

int kh_session_each(kh_hub *h, int64_t user_id, int (*fn)(const kh_session *s, void *payload), void *payload)
{
    sqlite3_stmt *q;
    int rc, err;

    if (h == NULL)
        return 0;
    if ((err = ed_store_prepare(&q, h->cfg.store,
                                "SELECT " SESSION_COLUMNS " FROM jupyter_sessions WHERE user_id = ?1 "
                                "ORDER BY created_at, id")) < 0)
        return err;
    sqlite3_bind_int64(q, 1, user_id);
    err = 0;
    while (err == 0 && (rc = sqlite3_step(q)) == SQLITE_ROW) {
        kh_session *s;
        if ((err = session_of_row(&s, q)) < 0)
            break;
        err = fn(s, payload);
        kh_session_free(s);
    }
    if (err == 0 && rc != SQLITE_DONE)
        err = ed_store_error(ed_store_db(h->cfg.store), rc, "sessions");
    sqlite3_finalize(q);
    return err < 0 ? err : 0;
}

int kh_session_count(int64_t *out, kh_hub *h, int64_t user_id)
{
    sqlite3_stmt *q;
    int rc, err;

    *out = 0;
    if (h == NULL)
        return 0;
    if ((err = ed_store_prepare(&q, h->cfg.store, "SELECT count(*) FROM jupyter_sessions WHERE user_id = ?1")) < 0)
        return err;
    sqlite3_bind_int64(q, 1, user_id);
    rc = sqlite3_step(q);
    *out = rc == SQLITE_ROW ? sqlite3_column_int64(q, 0) : 0;
    err = rc == SQLITE_ROW ? 0 : ed_store_error(ed_store_db(h->cfg.store), rc, "sessions");
    sqlite3_finalize(q);
    return err;
}

int kh_session_limit_error(int max_per_user)
{
    return ed_error_set(ED_ELIMIT, "you have %d Jupyter sessions, the most allowed; delete one first", max_per_user);
}

int kh_session_create(char out_id[KH_ID_LEN], kh_hub *h, int64_t user_id, const char *kernel_id, const char *path,
                      const char *name, const char *type, int max_per_user)
{
    sqlite3_stmt *q;
    int rc, err;

    out_id[0] = '\0';
    if (h == NULL)
        return ed_error_set(ED_EUNPROC, "interactive kernels are not available on this server");
    if (kernel_id == NULL || path == NULL)
        return ed_error_set(ED_EINVAL, "a session needs a kernel and a path");
    ed_uuid4(out_id);
    /* one statement: two concurrent creates cannot both take the last place */
    if ((err = ed_store_prepare(&q, h->cfg.store,
                                "INSERT INTO jupyter_sessions(id, user_id, kernel_id, path, name, type, created_at) "
                                "SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7 WHERE (SELECT count(*) FROM jupyter_sessions "
                                "WHERE user_id = ?2) < ?8")) < 0)
        return err;
    sqlite3_bind_text(q, 1, out_id, -1, SQLITE_STATIC);
    sqlite3_bind_int64(q, 2, user_id);
    sqlite3_bind_text(q, 3, kernel_id, -1, SQLITE_STATIC);
    sqlite3_bind_text(q, 4, path, -1, SQLITE_STATIC);
    sqlite3_bind_text(q, 5, name ? name : "", -1, SQLITE_STATIC);
    sqlite3_bind_text(q, 6, type ? type : "notebook", -1, SQLITE_STATIC);
    sqlite3_bind_int64(q, 7, ed_now_ms());
    sqlite3_bind_int64(q, 8, max_per_user);
    rc = sqlite3_step(q);
    if (rc != SQLITE_DONE)
        err = ed_store_error(ed_store_db(h->cfg.store), rc, "session");
    else if (sqlite3_changes(ed_store_db(h->cfg.store)) != 1)
        err = kh_session_limit_error(max_per_user);
    sqlite3_finalize(q);
    if (err < 0)
        out_id[0] = '\0';
    return err;
}

int kh_session_update(kh_hub *h, int64_t user_id, const char *id, const char *path, const char *name,
                      const char *type, const char *kernel_id)
{
    sqlite3_stmt *q;
    int rc, err;

    if (h == NULL)
        return ed_error_set(ED_ENOTFOUND, "no session %.64s", id ? id : "");
    if ((err = ed_store_prepare(&q, h->cfg.store,
                                "UPDATE jupyter_sessions SET path = coalesce(?3, path), name = coalesce(?4, name), "
                                "type = coalesce(?5, type), kernel_id = coalesce(?6, kernel_id) "
                                "WHERE id = ?1 AND user_id = ?2")) < 0)
        return err;
    sqlite3_bind_text(q, 1, id, -1, SQLITE_STATIC);
    sqlite3_bind_int64(q, 2, user_id);
    if (path)
        sqlite3_bind_text(q, 3, path, -1, SQLITE_STATIC);
    if (name)
        sqlite3_bind_text(q, 4, name, -1, SQLITE_STATIC);
    if (type)
        sqlite3_bind_text(q, 5, type, -1, SQLITE_STATIC);
    if (kernel_id && kernel_id[0])
        sqlite3_bind_text(q, 6, kernel_id, -1, SQLITE_STATIC);
    rc = sqlite3_step(q);
    err = rc == SQLITE_DONE ? 0 : ed_store_error(ed_store_db(h->cfg.store), rc, "session");
    sqlite3_finalize(q);
    return err;
}

int kh_session_delete(kh_hub *h, int64_t user_id, const char *id)
{
    sqlite3_stmt *q;
    int rc, err;

    if (h == NULL)
        return ed_error_set(ED_ENOTFOUND, "no session %.64s", id ? id : "");
    if ((err = ed_store_prepare(&q, h->cfg.store, "DELETE FROM jupyter_sessions WHERE id = ?1 AND user_id = ?2")) < 0)
        return err;
    sqlite3_bind_text(q, 1, id, -1, SQLITE_STATIC);
    sqlite3_bind_int64(q, 2, user_id);
    rc = sqlite3_step(q);
    err = rc == SQLITE_DONE ? 0 : ed_store_error(ed_store_db(h->cfg.store), rc, "session");
    sqlite3_finalize(q);
    return err;
}
