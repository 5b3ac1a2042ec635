/*
 * audit.c - the append-only audit trail (table audit, 0001_core.sql).
 *
 * gw__audit_store() writes on whatever connection the thread has, so a caller
 * that opened a transaction gets the audit row committed (or rolled back)
 * together with the change it records.
 */
#include "auth_int.h"

#include "ed_error.h"
#include "ed_time.h"

#include <stdlib.h>

gw__actor gw__actor_of(const gw_request *req)
{
    gw__actor a = {
        .user_id = req->auth.user_id,
        .ip = req->ip,
        .request_id = req->request_id,
    };
    return a;
}

static int bind_text_or_null(sqlite3_stmt *s, int i, const char *v)
{
    return v ? sqlite3_bind_text(s, i, v, -1, SQLITE_TRANSIENT) : sqlite3_bind_null(s, i);
}

int gw__audit_store(ed_store *st, const gw__actor *actor, const char *action,
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

int gw__audit(gw_request *req, const char *action, const char *target, json_t *detail)
{
    gw__actor a = gw__actor_of(req);

    return gw__audit_store(req->srv->store, &a, action, target, detail);
}

const char *gw__time(gw_request *req, int64_t ms)
{
    char buf[ED_RFC3339_LEN];

    return ed_arena_strdup(req->arena, ed_time_rfc3339(buf, sizeof(buf), ms));
}
