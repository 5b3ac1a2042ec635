/*
 * audit.c - the append-only audit trail (table audit, 0001_core.sql).
 *
 * acct_audit_append() writes on whatever connection the thread has, so a
 * caller that opened a transaction gets the audit row committed (or rolled
 * back) together with the change it records.
 */
#include "acct_int.h"

#include "ed_error.h"
#include "ed_time.h"

#include <stdlib.h>

static int bind_text_or_null(sqlite3_stmt *s, int i, const char *v)
{
    return v ? sqlite3_bind_text(s, i, v, -1, SQLITE_TRANSIENT) : sqlite3_bind_null(s, i);
}

int acct_audit_append(ed_store *st, const acct_actor *actor, const char *action,
                      const char *target, json_t *detail)
{
    sqlite3_stmt *s = NULL;
    char *detail_text = NULL;
    int err, rc;

    if (detail && (detail_text = ed_json_dumps(detail)) == NULL)
        return ed_error_set(ED_ENOMEM, "audit detail");
    if ((err = ed_store_prepare(&s, st,
                                "INSERT INTO audit (at, actor_id, action, target, ip, request_id, detail)"
                                " VALUES (?, ?, ?, ?, ?, ?, ?)")) < 0)
        goto done;
    sqlite3_bind_int64(s, 1, ed_now_ms());
    if (actor && actor->user_id > 0)
        sqlite3_bind_int64(s, 2, actor->user_id);
    else
        sqlite3_bind_null(s, 2);
    sqlite3_bind_text(s, 3, action, -1, SQLITE_STATIC);
    bind_text_or_null(s, 4, target);
    bind_text_or_null(s, 5, actor ? actor->ip : NULL);
    bind_text_or_null(s, 6, actor ? actor->request_id : NULL);
    bind_text_or_null(s, 7, detail_text);
    if ((rc = sqlite3_step(s)) != SQLITE_DONE)
        err = ed_store_error(ed_store_db(st), rc, "write audit row");
done:
    sqlite3_finalize(s);
    free(detail_text);
    return err;
}

static json_t *text_or_null(sqlite3_stmt *s, int col)
{
    const unsigned char *v = sqlite3_column_text(s, col);

    return v ? json_string((const char *)v) : json_null();
}

/* An audit row as the API shows it (API.md "Admin"). */
static json_t *audit_row_json(int64_t *id, sqlite3_stmt *s, void *payload)
{
    char at[ED_RFC3339_LEN];
    const char *detail = (const char *)sqlite3_column_text(s, 7);
    json_t *d = NULL;

    (void)payload;
    *id = sqlite3_column_int64(s, 0);
    if (detail)
        d = json_loads(detail, 0, NULL);
    return json_pack("{s:I, s:s, s:o, s:s, s:o, s:o, s:o, s:o}", "id", (json_int_t)*id, "at",
                     ed_time_rfc3339(at, sizeof(at), sqlite3_column_int64(s, 1)), "actor_id",
                     sqlite3_column_type(s, 2) == SQLITE_NULL
                         ? json_null()
                         : json_integer(sqlite3_column_int64(s, 2)),
                     "action", (const char *)sqlite3_column_text(s, 3), "target", text_or_null(s, 4),
                     "ip", text_or_null(s, 5), "request_id", text_or_null(s, 6),
                     "detail", d ? d : json_null());
}

int acct_audit_list(json_t **items, int64_t *next_cursor, ed_store *st, int limit, int64_t before_id)
{
    sqlite3_stmt *s = NULL;
    int err;

    *items = NULL;
    *next_cursor = 0;
    if ((err = ed_store_prepare(&s, st,
                                "SELECT id, at, actor_id, action, target, ip, request_id, detail"
                                " FROM audit WHERE id < ? ORDER BY id DESC LIMIT ?")) < 0)
        return err;
    sqlite3_bind_int64(s, 1, before_id > 0 ? before_id : INT64_MAX);
    sqlite3_bind_int(s, 2, limit + 1);
    return acct__page_rows(items, next_cursor, s, limit, audit_row_json, NULL, "audit list",
                           "list audit");
}
