/*
 * jupyter_sessions.c - /api/sessions: Jupyter sessions {id, path, name,
 * type, kernel}, rows of the store's jupyter_sessions table (migration
 * 0008), so they survive a restart; capped in size and number per user.
 */
#include "gw_int.h"
#include "jupyter_int.h"
#include "kh.h"
#include "proj.h"
#include "sched.h"

#include "ed_crypto.h"
#include "ed_error.h"
#include "ed_log.h"
#include "ed_time.h"

#include <errno.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Sessions live in the store (table jupyter_sessions, migration 0008): they
 * survive a restart and cost no memory. Each text field is at most
 * GW_JUPYTER_SESSION_FIELD_MAX bytes (413) and a user has at most
 * cfg.jupyter_sessions_per_user of them (429). The kernel hub deletes a
 * kernel's sessions when the kernel is shut down. */
#define GW_JUPYTER_SESSION_FIELD_MAX 4096

_Static_assert(KH_ID_LEN == ED_UUID_LEN, "a session id is a UUID like a kernel id");

/* A session's fields, in the request arena. */
typedef struct sess_view {
    char id[KH_ID_LEN], kernel_id[KH_ID_LEN];
    const char *path, *name, *type;
} sess_view;

static const char *col_text(gw_request *req, sqlite3_stmt *q, int i)
{
    const unsigned char *t = sqlite3_column_text(q, i);
    return ed_arena_strdup(req->arena, t ? (const char *)t : "");
}

/* Fill v from a row (id, kernel_id, path, name, type). */
static int view_of_row(sess_view *v, gw_request *req, sqlite3_stmt *q)
{
    snprintf(v->id, sizeof(v->id), "%s", (const char *)sqlite3_column_text(q, 0));
    snprintf(v->kernel_id, sizeof(v->kernel_id), "%s", (const char *)sqlite3_column_text(q, 1));
    v->path = col_text(req, q, 2);
    v->name = col_text(req, q, 3);
    v->type = col_text(req, q, 4);
    if (v->path == NULL || v->name == NULL || v->type == NULL)
        return ed_error_set(ED_ENOMEM, "session");
    return 0;
}

/* Whether the session's kernel is gone (dead, or no longer there). */
static bool session_kernel_gone(gw_request *req, const sess_view *v)
{
    kh_kernel k;

    if (kh_kernel_get(&k, req->srv->kernels, req->auth.user_id, v->kernel_id) < 0) {
        ed_error_clear();
        return true;
    }
    return strcmp(k.status, "dead") == 0;
}

/* A session as Jupyter shows it. A dead kernel (after a server restart, a
 * cull) shows as "kernel": null, which Jupyter clients answer by starting
 * one (PATCH); POSTing the same path does that too. */
static json_t *session_model(gw_request *req, const sess_view *v)
{
    kh_kernel k;
    json_t *km = NULL;

    if (kh_kernel_get(&k, req->srv->kernels, req->auth.user_id, v->kernel_id) == 0 && strcmp(k.status, "dead") != 0)
        km = gw__jupyter_kernel_model(req, &k);
    else
        ed_error_clear();
    return json_pack("{s:s, s:s, s:s, s:s, s:o, s:{s:s, s:s}}", "id", v->id, "path",
                     v->path ? v->path : "", "name", v->name ? v->name : "", "type",
                     v->type ? v->type : "notebook", "kernel", km ? km : json_null(), "notebook",
                     "path", v->path ? v->path : "", "name", v->name ? v->name : "");
}

/* The caller's session whose `col` ("id" or "path") is `value`. ED_ENOTFOUND. */
static int session_find_by(sess_view *v, gw_request *req, const char *col, const char *value)
{
    sqlite3_stmt *q;
    int rc, err;

    if ((err = ed_store_prepare(&q, req->srv->store,
                                strcmp(col, "path") == 0
                                    ? "SELECT id, kernel_id, path, name, type FROM jupyter_sessions "
                                      "WHERE user_id = ?1 AND path = ?2 ORDER BY created_at LIMIT 1"
                                    : "SELECT id, kernel_id, path, name, type FROM jupyter_sessions "
                                      "WHERE user_id = ?1 AND id = ?2")) < 0)
        return err;
    sqlite3_bind_int64(q, 1, req->auth.user_id);
    sqlite3_bind_text(q, 2, value, -1, SQLITE_STATIC);
    if ((rc = sqlite3_step(q)) == SQLITE_ROW)
        err = view_of_row(v, req, q);
    else if (rc == SQLITE_DONE)
        err = ed_error_set(ED_ENOTFOUND, "no session %.64s", value);
    else
        err = ed_store_error(ed_store_db(req->srv->store), rc, "session");
    sqlite3_finalize(q);
    return err;
}

static int session_find(sess_view *v, gw_request *req, const char *id)
{
    return session_find_by(v, req, "id", id);
}

int gw__jupyter_list_sessions(gw_request *req, gw_response *res)
{
    json_t *arr = json_array();
    sess_view *vs = NULL;
    size_t n = 0, cap = 0;
    sqlite3_stmt *q;
    int rc, err;

    if (arr == NULL)
        return ed_error_set(ED_ENOMEM, "sessions");
    if ((err = ed_store_prepare(&q, req->srv->store,
                                "SELECT id, kernel_id, path, name, type FROM jupyter_sessions WHERE user_id = ?1 "
                                "ORDER BY created_at, id")) < 0) {
        json_decref(arr);
        return err;
    }
    sqlite3_bind_int64(q, 1, req->auth.user_id);
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        if (n == cap) {
            size_t nc = cap ? cap * 2 : 8;
            sess_view *nv = ed_arena_alloc(req->arena, nc * sizeof(*nv));
            if (nv == NULL)
                break;
            if (n)
                memcpy(nv, vs, n * sizeof(*nv));
            vs = nv;
            cap = nc;
        }
        if (view_of_row(&vs[n], req, q) == 0)
            n++;
    }
    err = rc == SQLITE_DONE || rc == SQLITE_ROW ? 0 : ed_store_error(ed_store_db(req->srv->store), rc, "sessions");
    sqlite3_finalize(q);
    if (err < 0) {
        json_decref(arr);
        return err;
    }
    for (size_t i = 0; i < n; i++) {
        json_t *m = session_model(req, &vs[i]);
        if (m == NULL || json_array_append_new(arr, m) < 0) {
            json_decref(arr);
            return ed_error_set(ED_ENOMEM, "sessions");
        }
    }
    return gw__jupyter_respond(res, 200, arr);
}

/* An optional string field of at most GW_JUPYTER_SESSION_FIELD_MAX bytes. */
static int opt_string(const char **out, const json_t *body, const char *key)
{
    const json_t *v = json_object_get(body, key);

    *out = NULL;
    if (v == NULL || json_is_null(v))
        return 0;
    if (!json_is_string(v))
        return ed_error_set(ED_EINVAL, "%s must be a string", key);
    if (json_string_length(v) > GW_JUPYTER_SESSION_FIELD_MAX)
        return ed_error_set(ED_ETOOBIG, "session field '%s' is %zu bytes; the limit is %d", key,
                            json_string_length(v), GW_JUPYTER_SESSION_FIELD_MAX);
    if (strlen(json_string_value(v)) != json_string_length(v))
        return ed_error_set(ED_EINVAL, "%s must not contain NUL characters", key);
    *out = json_string_value(v);
    return 0;
}

/* The kernel a session body names: kernel.id (must be the caller's), else a
 * new kernel from kernel.name. *started tells which. */
static int session_kernel(char out[KH_ID_LEN], bool *started, gw_request *req, const json_t *body)
{
    const json_t *kobj = json_object_get(body, "kernel");
    const char *kid = NULL;
    kh_kernel k;
    int err;

    *started = false;
    if (kobj != NULL && !json_is_null(kobj) && !json_is_object(kobj))
        return ed_error_set(ED_EINVAL, "kernel must be an object {id} or {name}");
    if (kobj && (err = opt_string(&kid, kobj, "id")) < 0)
        return err;
    if (kid != NULL) {
        if ((err = kh_kernel_get(&k, req->srv->kernels, req->auth.user_id, kid)) < 0)
            return err;
    } else {
        json_t *start = json_is_object(kobj) ? json_deep_copy(kobj) : json_object();
        if (start == NULL)
            return ed_error_set(ED_ENOMEM, "session");
        if (json_object_get(start, "project_id") == NULL && json_object_get(body, "project_id"))
            json_object_set(start, "project_id", json_object_get(body, "project_id"));
        err = gw__jupyter_kernel_start(&k, req, start);
        json_decref(start);
        if (err < 0)
            return err;
        *started = true;
    }
    snprintf(out, KH_ID_LEN, "%s", k.id);
    return 0;
}

/* The caller's number of sessions. */
static int session_count(int64_t *out, gw_request *req)
{
    sqlite3_stmt *q;
    int rc, err;

    if ((err = ed_store_prepare(&q, req->srv->store, "SELECT count(*) FROM jupyter_sessions WHERE user_id = ?1")) < 0)
        return err;
    sqlite3_bind_int64(q, 1, req->auth.user_id);
    rc = sqlite3_step(q);
    *out = rc == SQLITE_ROW ? sqlite3_column_int64(q, 0) : 0;
    err = rc == SQLITE_ROW ? 0 : ed_store_error(ed_store_db(req->srv->store), rc, "sessions");
    sqlite3_finalize(q);
    return err;
}

static int session_limit_error(gw_request *req)
{
    return ed_error_set(ED_ELIMIT, "you have %d Jupyter sessions, the most allowed; delete one first",
                        req->srv->cfg.jupyter_sessions_per_user);
}

int gw__jupyter_create_session(gw_request *req, gw_response *res)
{
    json_t *body;
    const char *path, *name, *type;
    sess_view v;
    char kid[KH_ID_LEN], id[KH_ID_LEN];
    bool started;
    int64_t have = 0;
    sqlite3_stmt *q;
    int rc, err;

    if ((err = gw_request_json(&body, req)) < 0)
        return err;
    if ((err = opt_string(&path, body, "path")) < 0 || (err = opt_string(&name, body, "name")) < 0 ||
        (err = opt_string(&type, body, "type")) < 0)
        return err;
    if (path == NULL) {
        const json_t *nb = json_object_get(body, "notebook");   /* Jupyter's older shape */
        if (json_is_object(nb) && (err = opt_string(&path, nb, "path")) < 0)
            return err;
    }
    if (path == NULL)
        return ed_error_set(ED_EINVAL, "a session needs a path");
    /* Jupyter answers an existing session for the same path; one whose kernel
     * died gets a new kernel from this body, as Jupyter (which forgets such
     * sessions) would start with a new session. */
    if ((err = session_find_by(&v, req, "path", path)) == 0) {
        if (session_kernel_gone(req, &v)) {
            if ((err = session_kernel(kid, &started, req, body)) < 0)
                return err;
            if ((err = ed_store_prepare(&q, req->srv->store,
                                        "UPDATE jupyter_sessions SET kernel_id = ?3 WHERE id = ?1 AND user_id = ?2")) <
                0)
                return err;
            sqlite3_bind_text(q, 1, v.id, -1, SQLITE_STATIC);
            sqlite3_bind_int64(q, 2, req->auth.user_id);
            sqlite3_bind_text(q, 3, kid, -1, SQLITE_STATIC);
            rc = sqlite3_step(q);
            err = rc == SQLITE_DONE ? 0 : ed_store_error(ed_store_db(req->srv->store), rc, "session");
            sqlite3_finalize(q);
            if (err < 0)
                return err;
            snprintf(v.kernel_id, sizeof(v.kernel_id), "%s", kid);
        }
        return gw__jupyter_respond(res, 201, session_model(req, &v));
    }
    if (err != ED_ENOTFOUND)
        return err;
    ed_error_clear();
    if ((err = session_count(&have, req)) < 0)
        return err;
    if (have >= req->srv->cfg.jupyter_sessions_per_user)
        return session_limit_error(req);
    if ((err = session_kernel(kid, &started, req, body)) < 0)
        return err;
    ed_uuid4(id);
    /* one statement: two concurrent creates cannot both take the last place */
    if ((err = ed_store_prepare(&q, req->srv->store,
                                "INSERT INTO jupyter_sessions(id, user_id, kernel_id, path, name, type, created_at) "
                                "SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7 WHERE (SELECT count(*) FROM jupyter_sessions "
                                "WHERE user_id = ?2) < ?8")) == 0) {
        sqlite3_bind_text(q, 1, id, -1, SQLITE_STATIC);
        sqlite3_bind_int64(q, 2, req->auth.user_id);
        sqlite3_bind_text(q, 3, kid, -1, SQLITE_STATIC);
        sqlite3_bind_text(q, 4, path, -1, SQLITE_STATIC);
        sqlite3_bind_text(q, 5, name ? name : "", -1, SQLITE_STATIC);
        sqlite3_bind_text(q, 6, type ? type : "notebook", -1, SQLITE_STATIC);
        sqlite3_bind_int64(q, 7, ed_now_ms());
        sqlite3_bind_int64(q, 8, req->srv->cfg.jupyter_sessions_per_user);
        rc = sqlite3_step(q);
        if (rc != SQLITE_DONE)
            err = ed_store_error(ed_store_db(req->srv->store), rc, "session");
        else if (sqlite3_changes(ed_store_db(req->srv->store)) != 1)
            err = session_limit_error(req);
        sqlite3_finalize(q);
    }
    if (err < 0) {
        if (started) {   /* the kernel was only for this session */
            char msg[512];
            snprintf(msg, sizeof(msg), "%s", ed_error_last());
            kh_kernel_shutdown(req->srv->kernels, req->auth.user_id, kid, NULL);
            err = ed_error_set(err, "%s", msg);
        }
        return err;
    }
    if ((err = session_find(&v, req, id)) < 0)
        return err;
    gw_response_header(res, "Location", ed_arena_printf(req->arena, "/api/sessions/%s", v.id));
    return gw__jupyter_respond(res, 201, session_model(req, &v));
}

int gw__jupyter_get_session(gw_request *req, gw_response *res)
{
    sess_view v;
    int err;

    if ((err = session_find(&v, req, req->params[0])) < 0)
        return err;
    return gw__jupyter_respond(res, 200, session_model(req, &v));
}

int gw__jupyter_update_session(gw_request *req, gw_response *res)
{
    json_t *body;
    const char *path, *name, *type;
    char kid[KH_ID_LEN] = "", old_kid[KH_ID_LEN] = "";
    bool started = false;
    sess_view v;
    sqlite3_stmt *q;
    int rc, err;

    if ((err = gw_request_json(&body, req)) < 0)
        return err;
    if ((err = opt_string(&path, body, "path")) < 0 || (err = opt_string(&name, body, "name")) < 0 ||
        (err = opt_string(&type, body, "type")) < 0)
        return err;
    if ((err = session_find(&v, req, req->params[0])) < 0)
        return err;
    if (json_object_get(body, "kernel") != NULL && (err = session_kernel(kid, &started, req, body)) < 0)
        return err;
    if (kid[0] && strcmp(kid, v.kernel_id) != 0)
        snprintf(old_kid, sizeof(old_kid), "%s", v.kernel_id);
    if ((err = ed_store_prepare(&q, req->srv->store,
                                "UPDATE jupyter_sessions SET path = coalesce(?3, path), name = coalesce(?4, name), "
                                "type = coalesce(?5, type), kernel_id = coalesce(?6, kernel_id) "
                                "WHERE id = ?1 AND user_id = ?2")) < 0)
        return err;
    sqlite3_bind_text(q, 1, req->params[0], -1, SQLITE_STATIC);
    sqlite3_bind_int64(q, 2, req->auth.user_id);
    if (path)
        sqlite3_bind_text(q, 3, path, -1, SQLITE_STATIC);
    if (name)
        sqlite3_bind_text(q, 4, name, -1, SQLITE_STATIC);
    if (type)
        sqlite3_bind_text(q, 5, type, -1, SQLITE_STATIC);
    if (kid[0])
        sqlite3_bind_text(q, 6, kid, -1, SQLITE_STATIC);
    rc = sqlite3_step(q);
    err = rc == SQLITE_DONE ? 0 : ed_store_error(ed_store_db(req->srv->store), rc, "session");
    sqlite3_finalize(q);
    if (err < 0)
        return err;
    /* A kernel replaced by a new one started by name is shut down, as Jupyter does. */
    if (old_kid[0] && started)
        if (kh_kernel_shutdown(req->srv->kernels, req->auth.user_id, old_kid, NULL) < 0)
            ed_error_clear();
    if ((err = session_find(&v, req, req->params[0])) < 0)
        return err;
    return gw__jupyter_respond(res, 200, session_model(req, &v));
}

int gw__jupyter_delete_session(gw_request *req, gw_response *res)
{
    sess_view v;
    sqlite3_stmt *q;
    int rc, err;

    if ((err = session_find(&v, req, req->params[0])) < 0)
        return err;
    if ((err = ed_store_prepare(&q, req->srv->store,
                                "DELETE FROM jupyter_sessions WHERE id = ?1 AND user_id = ?2")) < 0)
        return err;
    sqlite3_bind_text(q, 1, v.id, -1, SQLITE_STATIC);
    sqlite3_bind_int64(q, 2, req->auth.user_id);
    rc = sqlite3_step(q);
    err = rc == SQLITE_DONE ? 0 : ed_store_error(ed_store_db(req->srv->store), rc, "session");
    sqlite3_finalize(q);
    if (err < 0)
        return err;
    err = kh_kernel_shutdown(req->srv->kernels, req->auth.user_id, v.kernel_id, NULL);
    if (err < 0 && err != ED_ENOTFOUND)
        return err;
    ed_error_clear();
    return gw_respond_empty(res, 204);
}

