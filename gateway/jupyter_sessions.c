/*
 * jupyter_sessions.c - /api/sessions: Jupyter sessions {id, path, name,
 * type, kernel}. They are the kernels module's (kh_session_*, table
 * jupyter_sessions, migration 0008), so they survive a restart; this file
 * speaks HTTP: field limits (413), the per-user cap (429), Jupyter's shapes.
 */
#include "gw_int.h"
#include "jupyter_int.h"
#include "kh.h"

#include "ed_error.h"

#include <stdio.h>
#include <string.h>

/* Each text field is at most KH_SESSION_FIELD_MAX bytes (413) and a user has
 * at most cfg.jupyter_sessions_per_user sessions (429). A kernel shut down
 * takes its sessions (kh_kernel_shutdown). */

/* A session's fields, in the request arena. */
typedef struct sess_view {
    char id[KH_ID_LEN], kernel_id[KH_ID_LEN];
    const char *path, *name, *type;
} sess_view;

/* Copy a session of the kernels module into the request's arena. */
static int view_of(sess_view *v, gw_request *req, const kh_session *s)
{
    snprintf(v->id, sizeof(v->id), "%s", s->id);
    snprintf(v->kernel_id, sizeof(v->kernel_id), "%s", s->kernel_id);
    v->path = ed_arena_strdup(req->arena, s->path);
    v->name = ed_arena_strdup(req->arena, s->name);
    v->type = ed_arena_strdup(req->arena, s->type);
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
    kh_session *s = NULL;
    int err = strcmp(col, "path") == 0 ? kh_session_find_path(&s, req->srv->kernels, req->auth.user_id, value)
                                       : kh_session_find(&s, req->srv->kernels, req->auth.user_id, value);

    if (err == 0)
        err = view_of(v, req, s);
    kh_session_free(s);
    return err;
}

static int session_find(sess_view *v, gw_request *req, const char *id)
{
    return session_find_by(v, req, "id", id);
}

/* The listed sessions, copied into the request's arena. */
typedef struct sess_list {
    gw_request *req;
    sess_view  *vs;
    size_t      n, cap;
} sess_list;

static int add_session(const kh_session *s, void *payload)
{
    sess_list *l = payload;

    if (l->n == l->cap) {
        size_t nc = l->cap ? l->cap * 2 : 8;
        sess_view *nv = ed_arena_alloc(l->req->arena, nc * sizeof(*nv));
        if (nv == NULL)
            return 1;   /* stop: list what we have */
        if (l->n)
            memcpy(nv, l->vs, l->n * sizeof(*nv));
        l->vs = nv;
        l->cap = nc;
    }
    if (view_of(&l->vs[l->n], l->req, s) == 0)
        l->n++;
    return 0;
}

int gw__jupyter_list_sessions(gw_request *req, gw_response *res)
{
    json_t *arr = json_array();
    sess_list l = {req, NULL, 0, 0};
    int err;

    if (arr == NULL)
        return ed_error_set(ED_ENOMEM, "sessions");
    if ((err = kh_session_each(req->srv->kernels, req->auth.user_id, add_session, &l)) < 0) {
        json_decref(arr);
        return err;
    }
    for (size_t i = 0; i < l.n; i++) {
        json_t *m = session_model(req, &l.vs[i]);
        if (m == NULL || json_array_append_new(arr, m) < 0) {
            json_decref(arr);
            return ed_error_set(ED_ENOMEM, "sessions");
        }
    }
    return gw__jupyter_respond(res, 200, arr);
}

/* An optional string field of at most KH_SESSION_FIELD_MAX bytes. */
static int opt_string(const char **out, const json_t *body, const char *key)
{
    const json_t *v = json_object_get(body, key);

    *out = NULL;
    if (v == NULL || json_is_null(v))
        return 0;
    if (!json_is_string(v))
        return ed_error_set(ED_EINVAL, "%s must be a string", key);
    if (json_string_length(v) > KH_SESSION_FIELD_MAX)
        return ed_error_set(ED_ETOOBIG, "session field '%s' is %zu bytes; the limit is %d", key,
                            json_string_length(v), KH_SESSION_FIELD_MAX);
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

int gw__jupyter_create_session(gw_request *req, gw_response *res)
{
    json_t *body;
    const char *path, *name, *type;
    sess_view v;
    char kid[KH_ID_LEN], id[KH_ID_LEN];
    bool started;
    int64_t have = 0;
    int err;

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
            if ((err = session_kernel(kid, &started, req, body)) < 0 ||
                (err = kh_session_update(req->srv->kernels, req->auth.user_id, v.id, NULL, NULL, NULL, kid)) < 0)
                return err;
            snprintf(v.kernel_id, sizeof(v.kernel_id), "%s", kid);
        }
        return gw__jupyter_respond(res, 201, session_model(req, &v));
    }
    if (err != ED_ENOTFOUND)
        return err;
    ed_error_clear();
    if ((err = kh_session_count(&have, req->srv->kernels, req->auth.user_id)) < 0)
        return err;
    if (have >= req->srv->cfg.jupyter_sessions_per_user)
        return kh_session_limit_error(req->srv->cfg.jupyter_sessions_per_user);
    if ((err = session_kernel(kid, &started, req, body)) < 0)
        return err;
    err = kh_session_create(id, req->srv->kernels, req->auth.user_id, kid, path, name, type,
                            req->srv->cfg.jupyter_sessions_per_user);
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
    int err;

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
    if ((err = kh_session_update(req->srv->kernels, req->auth.user_id, req->params[0], path, name, type, kid)) < 0)
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
    int err;

    if ((err = session_find(&v, req, req->params[0])) < 0 ||
        (err = kh_session_delete(req->srv->kernels, req->auth.user_id, v.id)) < 0)
        return err;
    err = kh_kernel_shutdown(req->srv->kernels, req->auth.user_id, v.kernel_id, NULL);
    if (err < 0 && err != ED_ENOTFOUND)
        return err;
    ed_error_clear();
    return gw_respond_empty(res, 204);
}

