/*
 * competitions_routes.c - competitions over HTTP (API.md "Competitions" and
 * the gaps competitions/README.md lists). The logic, every access check and
 * the secrecy of the private scores live in competitions/ (comp.h); this
 * file parses requests and shapes responses (competitions_json.c).
 *
 * Raw CSV bodies (a truth, a submission) are GW_BODY_STREAM routes: the
 * competition and the caller's right are checked before any byte is read,
 * then the body goes to an unlinked file in DATA/competitions (O_TMPFILE:
 * nothing to clean up after a crash), bounded (COMP_TRUTH_MAX,
 * COMP_SUBMISSION_MAX: 413 past it), and the library reads it from there. A
 * submission's JSON form (a file of a job's output or a project's tree, or
 * a code submission: a project's version and entry) comes through the same
 * route, kept in memory up to JSON_MAX bytes; its file is opened
 * beneath the job's output or the project's tree with ed_fs_open_beneath (a
 * link is refused, never followed).
 *
 * No route adds a private score; GET .../submissions/{sid}/private is
 * comp_submission_private_get's (403 before end_at, for everyone).
 */
#include "competitions_int.h"
#include "acct.h"
#include "proj.h"
#include "sched.h"

#include "ed_error.h"
#include "ed_fs.h"
#include "ed_log.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define JSON_MAX (64 * 1024)   /* bytes of a submission's JSON form */

static comp *comp_of(gw_request *req) { return req->srv->competitions; }

static int respond(gw_response *res, int status, json_t *body)
{
    if (body == NULL)
        return ed_error_set(ED_ENOMEM, "response body");
    return gw_respond_json(res, status, body);
}

static int ready(gw_request *req)
{
    if (comp_of(req) == NULL)
        return ed_error_set(ED_EBUSY, "competitions are not available on this server");
    return 0;
}

/* A non-negative integer query parameter, `dflt` when absent. */
static int query_size(size_t *out, gw_request *req, const char *name, size_t dflt, size_t max)
{
    const char *v = gw_request_query(req, name);
    char *end;
    long long n;

    *out = dflt;
    if (v == NULL)
        return 0;
    errno = 0;
    n = strtoll(v, &end, 10);
    if (*v == '\0' || *end != '\0' || errno != 0 || n < 0 || (unsigned long long)n > max)
        return ed_error_set(ED_EINVAL, "%s must be an integer from 0 to %zu", name, max);
    *out = (size_t)n;
    return 0;
}

/* ?limit= (1..500, default 50) and ?offset= (or ?cursor=, the offset the
 * previous page's next_cursor gave). */
static int query_page(size_t *limit, size_t *offset, gw_request *req)
{
    int err;

    if ((err = query_size(limit, req, "limit", 50, COMP_LIST_MAX)) < 0)
        return err;
    if (*limit == 0)
        return ed_error_set(ED_EINVAL, "limit must be an integer from 1 to %d", COMP_LIST_MAX);
    if (gw_request_query(req, "offset"))
        return query_size(offset, req, "offset", 0, (size_t)1 << 40);
    if ((err = query_size(offset, req, "cursor", 0, (size_t)1 << 40)) < 0)
        return ed_error_set(ED_EINVAL, "cursor '%s' is not one this API gave", gw_request_query(req, "cursor"));
    return 0;
}

/* {items, next_cursor, next_offset} with `more` saying whether a page follows. */
static int respond_list(gw_response *res, json_t *items, bool more, size_t offset, size_t limit)
{
    char next[32];

    if (items == NULL)
        return ed_error_set(ED_ENOMEM, "list");
    if (!more)
        return respond(res, 200, json_pack("{s:o, s:n, s:n}", "items", items, "next_cursor", "next_offset"));
    snprintf(next, sizeof(next), "%zu", offset + limit);
    return respond(res, 200, json_pack("{s:o, s:s, s:I}", "items", items, "next_cursor", next, "next_offset",
                                       (json_int_t)(offset + limit)));
}

static int parse_id64(int64_t *out, const char *s, const char *what)
{
    char *end;
    long long v;

    errno = 0;
    v = strtoll(s, &end, 10);
    if (*s == '\0' || *end != '\0' || errno != 0 || v <= 0)
        return ed_error_set(ED_ENOTFOUND, "no %s '%s'", what, s);
    *out = v;
    return 0;
}

/* The competition's id from an id or slug path parameter (404). */
static int resolve(char id[COMP_ID_LEN], gw_request *req, comp_competition **keep)
{
    comp_competition *k = NULL;
    int err;

    if ((err = ready(req)) < 0 ||
        (err = comp_competition_get(&k, comp_of(req), req->auth.user_id, req->params[0])) < 0)
        return err;
    snprintf(id, COMP_ID_LEN, "%s", k->id);
    if (keep)
        *keep = k;
    else
        comp_competition_free(k);
    return 0;
}

/* ---- competitions ----------------------------------------------------------- */

static int respond_comp(gw_response *res, gw_request *req, int status, comp_competition *k)
{
    json_t *out = gw__comp_json(req, k);

    comp_competition_free(k);
    return respond(res, status, out);
}

/* POST /api/v1/competitions (hosts) -> 201 */
static int create_competition(gw_request *req, gw_response *res)
{
    comp_spec spec;
    comp_competition *k = NULL;
    json_t *body;
    int err;

    if ((err = ready(req)) < 0)
        return err;
    if (!comp_is_host(comp_of(req), req->auth.user_id))
        return ed_error_set(ED_EPERM, "only hosts create competitions (an admin makes a user a host)");
    if ((err = gw_request_json(&body, req)) < 0 || (err = gw__comp_spec_parse(&spec, req, body, NULL)) < 0 ||
        (err = comp_competition_create(&k, comp_of(req), req->auth.user_id, &spec)) < 0)
        return err;
    gw__audit(req, "competition.create", k->id, NULL);
    return respond_comp(res, req, 201, k);
}

/* PUT /api/v1/competitions/{id}: the fields given change, the rest stay
 * (the library refuses changing the fixed ones after start_at, 409). */
static int update_competition(gw_request *req, gw_response *res)
{
    comp_competition *base = NULL, *k = NULL;
    comp_spec spec;
    char id[COMP_ID_LEN];
    json_t *body;
    int err;

    if ((err = resolve(id, req, &base)) < 0)
        return err;
    if (!base->can_edit) {
        comp_competition_free(base);
        return ed_error_set(ED_EPERM, "only the competition's host or an admin edits it");
    }
    if ((err = gw_request_json(&body, req)) < 0 || (err = gw__comp_spec_parse(&spec, req, body, base)) < 0 ||
        (err = comp_competition_update(&k, comp_of(req), req->auth.user_id, id, &spec)) < 0) {
        comp_competition_free(base);
        return err;
    }
    comp_competition_free(base);
    gw__audit(req, "competition.update", k->id, NULL);
    return respond_comp(res, req, 200, k);
}

static int get_competition(gw_request *req, gw_response *res)
{
    comp_competition *k = NULL;
    int err;

    if ((err = ready(req)) < 0 ||
        (err = comp_competition_get(&k, comp_of(req), req->auth.user_id, req->params[0])) < 0)
        return err;
    return respond_comp(res, req, 200, k);
}

static int list_competitions(gw_request *req, gw_response *res)
{
    comp_competition_list *l = NULL;
    size_t limit, offset;
    json_t *items;
    bool more;
    int err;

    if ((err = ready(req)) < 0 || (err = query_page(&limit, &offset, req)) < 0 ||
        (err = comp_competition_list_get(&l, comp_of(req), req->auth.user_id, limit + 1, offset)) < 0)
        return err;
    items = json_array();
    for (size_t i = 0; items && i < l->count && i < limit; i++)
        json_array_append_new(items, gw__comp_json(req, l->items[i]));
    more = l->count > limit;
    comp_competition_list_free(l);
    return respond_list(res, items, more, offset, limit);
}

static int accept_rules(gw_request *req, gw_response *res)
{
    comp_competition *k = NULL;
    char id[COMP_ID_LEN];
    int err;

    if ((err = resolve(id, req, NULL)) < 0 || (err = comp_rules_accept(comp_of(req), req->auth.user_id, id)) < 0 ||
        (err = comp_competition_get(&k, comp_of(req), req->auth.user_id, id)) < 0)
        return err;
    return respond_comp(res, req, 200, k);
}

/* ---- streamed CSV bodies ------------------------------------------------------- */

typedef enum { BODY_TRUTH, BODY_CSV, BODY_JSON, BODY_SCORER } body_kind;

typedef struct body_ctx {
    body_kind kind;
    char id[COMP_ID_LEN];
    int fd;                 /* the unlinked temp file (truth, CSV) */
    char *buf;              /* JSON: the body so far */
    size_t len;
} body_ctx;

static void body_abort(void *ctx)
{
    body_ctx *c = ctx;

    if (c->fd >= 0)
        close(c->fd);
    free(c->buf);
    free(c);
}

static int body_write(void *ctx, gw_request *req, const char *data, size_t n)
{
    body_ctx *c = ctx;

    (void)req;
    if (c->kind == BODY_JSON) {
        char *b;
        if (c->len + n > JSON_MAX)
            return ed_error_set(ED_ETOOBIG, "a submission's JSON body is at most %d bytes", JSON_MAX);
        if ((b = realloc(c->buf, c->len + n + 1)) == NULL)
            return ed_error_set(ED_ENOMEM, "body");
        memcpy(b + c->len, data, n);
        c->buf = b;
        c->len += n;
        c->buf[c->len] = '\0';
        return 0;
    }
    return gw__spool_write(c->fd, data, n);
}

/* An unlinked temp file on the competitions' own file system. */
static int temp_file(int *out, gw_request *req)
{
    char dir[700];

    snprintf(dir, sizeof(dir), "%s/competitions", req->srv->cfg.data_dir);
    return gw__spool_open(out, dir);
}

static int respond_submission(gw_response *res, gw_request *req, int status, comp_submission *s)
{
    json_t *out = gw__comp_submission_json(req, s);

    comp_submission_free(s);
    return respond(res, status, out);
}

/* The file `path` beneath job `job`'s output or project `pid`'s tree, a
 * regular file (422 for anything else). */
static int open_source_file(int *out, gw_request *req, const json_t *body)
{
    const char *path = NULL, *pid = NULL;
    int64_t job = 0;
    int root = -1, err, saved;

    *out = -1;
    if ((err = ed_json_get_str(&path, body, "path", true)) < 0 ||
        (err = gw_json_int(&job, body, "job_id", 1, INT64_MAX, false)) < 0 ||
        (err = ed_json_get_str(&pid, body, "project_id", false)) < 0)
        return err;
    if ((job != 0) == (pid != NULL))
        return ed_error_set(ED_EINVAL, "give job_id or project_id with path, not both");
    if (job != 0) {
        if ((err = gw__job_output_open(&root, req, req->auth.user_id, job)) < 0)
            return err;
    } else if ((err = proj_tree_open(&root, req->srv->projects, req->auth.user_id, pid)) < 0) {
        return err;
    }
    err = ed_fs_open_beneath(out, root, path, O_RDONLY, 0);
    saved = errno;   /* ed_fs sets it: ELOOP for a link on the way */
    close(root);
    if (err < 0 && saved == ELOOP)
        return ed_error_set(ED_EUNPROC, "'%s' in the %s is or passes a symbolic link: not followed", path,
                            job ? "job's output" : "project's tree");
    if (err < 0)
        return ed_error_set(err == ED_ENOTFOUND ? ED_ENOTFOUND : ED_EUNPROC, "cannot open '%s' in the %s: %s",
                            path, job ? "job's output" : "project's tree", ed_error_last());
    return 0;   /* ed_fs_open_beneath opens regular files only */
}

/* A submission's JSON form: a file from a job or project, or code. */
static int submit_json(gw_request *req, gw_response *res, const char *id, const char *buf, size_t len)
{
    comp_submission *s = NULL;
    proj_version *v = NULL;
    json_t *body;
    int fd = -1, err;

    req->body = buf;
    req->body_len = len;
    if ((err = gw_request_json(&body, req)) < 0)
        return err;
    /* a code submission: {project_id, version, entry}; the runner
     * (competitions_runner.c) runs that version as a job */
    if (json_object_get(body, "entry") || json_object_get(body, "version")) {
        const char *pid = NULL, *ver = NULL, *entry = NULL;
        json_t *src;
        char *text;
        if ((err = ed_json_get_str(&pid, body, "project_id", true)) < 0 ||
            (err = ed_json_get_str(&ver, body, "version", true)) < 0 ||
            (err = ed_json_get_str(&entry, body, "entry", true)) < 0)
            return err;
        if ((err = proj_version_get(&v, req->srv->projects, req->auth.user_id, pid, ver)) < 0)
            return err;
        {
            bool found = false;
            for (size_t i = 0; i < v->nfiles && !found; i++)
                found = strcmp(v->files[i], entry) == 0;
            if (!found) {
                proj_version_free(v);
                return ed_error_set(ED_EUNPROC, "entry '%s' is not a file of version %s", entry, ver);
            }
        }
        src = json_pack("{s:s, s:s, s:s, s:s}", "competition_id", id, "project_id", pid, "version", v->id, "entry",
                        entry);
        proj_version_free(v);
        if (src == NULL || (text = ed_json_dumps(src)) == NULL) {
            json_decref(src);
            return ed_error_set(ED_ENOMEM, "source");
        }
        json_decref(src);
        err = comp_submission_create_code(&s, comp_of(req), req->auth.user_id, id, text);
        free(text);
        if (err < 0)
            return err;
        return respond_submission(res, req, 201, s);
    }
    if ((err = open_source_file(&fd, req, body)) < 0)
        return err;
    err = comp_submission_create_csv(&s, comp_of(req), req->auth.user_id, id, fd);
    close(fd);
    if (err < 0)
        return err;
    return respond_submission(res, req, 201, s);
}

static int body_end(void *ctx, gw_request *req, gw_response *res)
{
    body_ctx *c = ctx;
    comp_submission *s = NULL;
    int err = 0;

    if (c->kind != BODY_JSON && lseek(c->fd, 0, SEEK_SET) < 0)
        err = ed_error_set(ED_EIO, "rewinding the file: %s", strerror(errno));
    else if (c->kind == BODY_TRUTH)
        err = comp_truth_put_fd(comp_of(req), req->auth.user_id, c->id, c->fd);
    else if (c->kind == BODY_SCORER)
        err = comp_scorer_put_fd(comp_of(req), req->auth.user_id, c->id, c->fd);
    else if (c->kind == BODY_CSV)
        err = comp_submission_create_csv(&s, comp_of(req), req->auth.user_id, c->id, c->fd);
    else
        err = submit_json(req, res, c->id, c->buf ? c->buf : "", c->len);
    if (err == 0 && c->kind == BODY_TRUTH) {
        comp_competition *k = NULL;
        gw__audit(req, "competition.truth", c->id, NULL);
        if ((err = comp_competition_get(&k, comp_of(req), req->auth.user_id, c->id)) == 0)
            err = respond(res, 200, json_pack("{s:s, s:b, s:I}", "id", k->id, "has_truth", k->has_truth,
                                               "rows", (json_int_t)k->truth_rows));
        comp_competition_free(k);
    } else if (err == 0 && c->kind == BODY_SCORER) {
        comp_competition *k = NULL;
        gw__audit(req, "competition.scorer", c->id, NULL);
        if ((err = comp_competition_get(&k, comp_of(req), req->auth.user_id, c->id)) == 0)
            err = respond_comp(res, req, 200, k);
    } else if (err == 0 && c->kind == BODY_CSV) {
        err = respond_submission(res, req, 201, s);
    }
    /* the JSON body lives in c->buf, which the request's JSON no longer needs */
    if (c->kind == BODY_JSON)
        req->body = NULL, req->body_len = 0;
    body_abort(c);
    return err;
}

static const gw_body_sink body_sink = {body_write, body_end, body_abort};

static int start_body(gw_request *req, body_kind kind, const char *id, int64_t max)
{
    body_ctx *c;
    int err;

    if ((c = calloc(1, sizeof(*c))) == NULL)
        return ed_error_set(ED_ENOMEM, "body");
    c->kind = kind;
    c->fd = -1;
    snprintf(c->id, sizeof(c->id), "%s", id);
    if (kind != BODY_JSON && (err = temp_file(&c->fd, req)) < 0) {
        free(c);
        return err;
    }
    if ((err = gw_request_body_sink(req, &body_sink, c, max)) < 0)
        body_abort(c);
    return err;
}

/* PUT /api/v1/competitions/{id}/truth (raw CSV, streamed; host, before start) */
static int put_truth(gw_request *req, gw_response *res)
{
    comp_competition *k = NULL;
    char id[COMP_ID_LEN];
    int err;

    (void)res;
    if ((err = resolve(id, req, &k)) < 0)
        return err;
    if (!k->can_edit)
        err = ed_error_set(ED_EPERM, "only the competition's host puts its ground truth");
    comp_competition_free(k);
    if (err < 0)
        return err;
    return start_body(req, BODY_TRUTH, id, COMP_TRUTH_MAX);
}

/* PUT /api/v1/competitions/{id}/scorer (a Python file, streamed, at most
 * COMP_SCORER_MAX bytes; host or admin, before start; the competition's
 * scorer.direction set first) -> the competition. */
static int put_scorer(gw_request *req, gw_response *res)
{
    comp_competition *k = NULL;
    char id[COMP_ID_LEN];
    int err = 0;

    (void)res;
    if ((err = resolve(id, req, &k)) < 0)
        return err;
    if (!k->can_edit)
        err = ed_error_set(ED_EPERM, "only the competition's host puts its scoring program");
    else if (!k->scorer_direction[0])
        err = ed_error_set(ED_EUNPROC, "set scorer.direction (\"higher\" or \"lower\" is better) on the "
                                       "competition (PUT /api/v1/competitions/{id}) before uploading a scoring program");
    comp_competition_free(k);
    if (err < 0)
        return err;
    return start_body(req, BODY_SCORER, id, COMP_SCORER_MAX);
}

/* DELETE /api/v1/competitions/{id}/scorer: back to the built-in metric. */
static int delete_scorer(gw_request *req, gw_response *res)
{
    comp_competition *k = NULL;
    char id[COMP_ID_LEN];
    int err;

    if ((err = resolve(id, req, NULL)) < 0 || (err = comp_scorer_delete(comp_of(req), req->auth.user_id, id)) < 0)
        return err;
    gw__audit(req, "competition.scorer_delete", id, NULL);
    if ((err = comp_competition_get(&k, comp_of(req), req->auth.user_id, id)) < 0)
        return err;
    return respond_comp(res, req, 200, k);
}

/* POST /api/v1/competitions/{id}/submissions: a raw CSV body (streamed), or
 * JSON (Content-Type: application/json) {job_id|project_id, path} or
 * {project_id, version, entry}. The rules must be accepted first (403,
 * checked before the body is read; the library checks again). */
static int post_submission(gw_request *req, gw_response *res)
{
    comp_competition *k = NULL;
    const char *ct = gw_request_header(req, "Content-Type");
    char id[COMP_ID_LEN];
    bool json = ct && strncasecmp(ct, "application/json", 16) == 0;
    int err = 0;

    (void)res;
    if ((err = resolve(id, req, &k)) < 0)
        return err;
    if (!k->rules_accepted)
        err = ed_error_set(ED_EPERM, "accept the competition's rules first (POST .../accept-rules)");
    comp_competition_free(k);
    if (err < 0)
        return err;
    return start_body(req, json ? BODY_JSON : BODY_CSV, id, json ? JSON_MAX : COMP_SUBMISSION_MAX);
}

/* ---- submissions ----------------------------------------------------------------- */

/* GET .../submissions (own team; ?all=1: every one, hosts) */
static int list_submissions(gw_request *req, gw_response *res)
{
    comp_submission_list *l = NULL;
    const char *all = gw_request_query(req, "all");
    char id[COMP_ID_LEN];
    size_t limit, offset;
    json_t *items;
    bool more;
    int err;

    if ((err = resolve(id, req, NULL)) < 0 || (err = query_page(&limit, &offset, req)) < 0)
        return err;
    if (all && strcmp(all, "1") != 0 && strcmp(all, "true") != 0 && strcmp(all, "0") != 0 &&
        strcmp(all, "false") != 0)
        return ed_error_set(ED_EINVAL, "all must be 1 or 0");
    if (all && (all[0] == '1' || all[0] == 't'))
        err = comp_submission_list_all(&l, comp_of(req), req->auth.user_id, id, limit + 1, offset);
    else
        err = comp_submission_list_get(&l, comp_of(req), req->auth.user_id, id, limit + 1, offset);
    if (err == ED_ENOTFOUND && !(all && (all[0] == '1' || all[0] == 't'))) {
        ed_error_clear();   /* no team yet: no submissions */
        return respond_list(res, json_array(), false, offset, limit);
    }
    if (err < 0)
        return err;
    items = json_array();
    for (size_t i = 0; items && i < l->count && i < limit; i++)
        json_array_append_new(items, gw__comp_submission_json(req, l->items[i]));
    more = l->count > limit;
    comp_submission_list_free(l);
    return respond_list(res, items, more, offset, limit);
}

static int get_submission(gw_request *req, gw_response *res)
{
    comp_submission *s = NULL;
    char id[COMP_ID_LEN];
    int err;

    if ((err = resolve(id, req, NULL)) < 0 ||
        (err = comp_submission_get(&s, comp_of(req), req->auth.user_id, id, req->params[1])) < 0)
        return err;
    return respond_submission(res, req, 200, s);
}

/* GET .../submissions/{sid}/private: after end_at only (403 before). */
static int get_submission_private(gw_request *req, gw_response *res)
{
    char id[COMP_ID_LEN];
    double score;
    int err;

    if ((err = resolve(id, req, NULL)) < 0 ||
        (err = comp_submission_private_get(&score, comp_of(req), req->auth.user_id, id, req->params[1])) < 0)
        return err;
    return respond(res, 200, json_pack("{s:s, s:f}", "id", req->params[1], "private_score", score));
}

/* POST .../submissions/select {ids: [...]}: 1..selection_max scored
 * submissions of the caller's team. An empty list clears the choice, as
 * unticking every submission does on Kaggle: the team's best public ones
 * count again (the default). */
static int select_submissions(gw_request *req, gw_response *res)
{
    const char *ids[COMP_SELECT_MAX];
    char id[COMP_ID_LEN];
    json_t *body, *arr = NULL;
    size_t n;
    int err;

    if ((err = resolve(id, req, NULL)) < 0 || (err = gw_request_json(&body, req)) < 0 ||
        (err = ed_json_get_array(&arr, body, "ids", true)) < 0)
        return err;
    if ((n = json_array_size(arr)) > COMP_SELECT_MAX)
        return ed_error_set(ED_EINVAL, "field 'ids' must list at most %d submission ids ([] clears the "
                                       "choice: the best public ones count)", COMP_SELECT_MAX);
    for (size_t i = 0; i < n; i++)
        if ((ids[i] = json_string_value(json_array_get(arr, i))) == NULL)
            return ed_error_set(ED_EINVAL, "field 'ids[%zu]' must be a string", i);
    if ((err = comp_selection_set(comp_of(req), req->auth.user_id, id, ids, n)) < 0)
        return err;
    return respond(res, 200, json_pack("{s:O, s:b}", "selected", arr, "default", n == 0));
}

/* ---- leaderboards -------------------------------------------------------------------- */

static int parse_board(comp_board *out, gw_request *req)
{
    const char *b = gw_request_query(req, "board");

    *out = COMP_BOARD_PUBLIC;
    if (b == NULL || strcmp(b, "public") == 0)
        return 0;
    if (strcmp(b, "private") == 0) {
        *out = COMP_BOARD_PRIVATE;
        return 0;
    }
    return ed_error_set(ED_EINVAL, "board must be 'public' or 'private'");
}

/* GET .../leaderboard?board=public|private&limit=&offset= (or &team=<tid>:
 * that team's row) -> {board, items: [{rank, team, team_id, score,
 * submitted_at, submission_id}], total, next_cursor}. */
static int get_leaderboard(gw_request *req, gw_response *res)
{
    comp_board_page *p = NULL;
    comp_board board;
    const char *team = gw_request_query(req, "team");
    char id[COMP_ID_LEN];
    size_t limit, offset;
    json_t *items;
    int err;

    if ((err = resolve(id, req, NULL)) < 0 || (err = parse_board(&board, req)) < 0 ||
        (err = query_page(&limit, &offset, req)) < 0)
        return err;
    if (team) {
        comp_board_entry e = {0};
        int64_t tid = 0;
        json_t *out;
        if ((err = parse_id64(&tid, team, "team")) < 0 ||
            (err = comp_leaderboard_rank(&e, comp_of(req), req->auth.user_id, id, board, tid)) < 0)
            return err;
        out = gw__comp_entry_json(req, &e);
        comp_board_entry_clear(&e);
        return respond(res, 200, out);
    }
    if ((err = comp_leaderboard_get(&p, comp_of(req), req->auth.user_id, id, board, offset, limit)) < 0)
        return err;
    items = json_array();
    for (size_t i = 0; items && i < p->count; i++)
        json_array_append_new(items, gw__comp_entry_json(req, &p->items[i]));
    {
        bool more = (int64_t)(offset + p->count) < p->total;
        char next[32];
        json_t *out;
        snprintf(next, sizeof(next), "%zu", offset + p->count);
        out = json_pack("{s:s, s:o, s:I, s:o}", "board", board == COMP_BOARD_PRIVATE ? "private" : "public",
                        "items", items ? items : json_array(), "total", (json_int_t)p->total, "next_cursor",
                        more ? json_string(next) : json_null());
        comp_board_page_free(p);
        return respond(res, 200, out);
    }
}

/* ---- teams ------------------------------------------------------------------------------ */

static int respond_team(gw_response *res, gw_request *req, int status, comp_team *t)
{
    json_t *out = gw__comp_team_json(req, t);

    comp_team_free(t);
    return respond(res, status, out);
}

static int create_team(gw_request *req, gw_response *res)
{
    comp_team *t = NULL;
    const char *name = NULL;
    char id[COMP_ID_LEN];
    json_t *body;
    int err;

    if ((err = resolve(id, req, NULL)) < 0 || (err = gw_request_json(&body, req)) < 0 ||
        (err = ed_json_get_str(&name, body, "name", true)) < 0 ||
        (err = comp_team_create(&t, comp_of(req), req->auth.user_id, id, name)) < 0)
        return err;
    return respond_team(res, req, 201, t);
}

static int my_team(gw_request *req, gw_response *res)
{
    comp_team *t = NULL;
    char id[COMP_ID_LEN];
    int err;

    if ((err = resolve(id, req, NULL)) < 0 || (err = comp_team_mine(&t, comp_of(req), req->auth.user_id, id)) < 0)
        return err;
    return respond_team(res, req, 200, t);
}

static int leave_team(gw_request *req, gw_response *res)
{
    char id[COMP_ID_LEN];
    int err;

    if ((err = resolve(id, req, NULL)) < 0 || (err = comp_team_leave(comp_of(req), req->auth.user_id, id)) < 0)
        return err;
    return gw_respond_empty(res, 204);
}

static int invite(gw_request *req, gw_response *res)
{
    const char *username = NULL;
    char id[COMP_ID_LEN];
    int64_t tid = 0, uid = 0;
    json_t *body;
    int err;

    if ((err = resolve(id, req, NULL)) < 0 || (err = parse_id64(&tid, req->params[1], "team")) < 0 ||
        (err = gw_request_json(&body, req)) < 0 || (err = ed_json_get_str(&username, body, "username", true)) < 0)
        return err;
    if (acct_user_id(&uid, req->srv->store, username) < 0)
        return ed_error_set(ED_EUNPROC, "no user '%s'", username);
    if ((err = comp_team_invite(comp_of(req), req->auth.user_id, id, tid, uid)) < 0)
        return err;
    return respond(res, 201, json_pack("{s:I, s:s, s:I}", "team_id", (json_int_t)tid, "username", username,
                                       "user_id", (json_int_t)uid));
}

static int join(gw_request *req, gw_response *res)
{
    comp_team *t = NULL;
    char id[COMP_ID_LEN];
    int64_t tid = 0;
    int err;

    if ((err = resolve(id, req, NULL)) < 0 || (err = parse_id64(&tid, req->params[1], "team")) < 0 ||
        (err = comp_team_join(comp_of(req), req->auth.user_id, id, tid)) < 0 ||
        (err = comp_team_mine(&t, comp_of(req), req->auth.user_id, id)) < 0)
        return err;
    return respond_team(res, req, 200, t);
}

static int merge(gw_request *req, gw_response *res)
{
    char id[COMP_ID_LEN];
    int64_t tid = 0, other = 0;
    bool merged = false;
    json_t *body;
    int err;

    if ((err = resolve(id, req, NULL)) < 0 || (err = parse_id64(&tid, req->params[1], "team")) < 0 ||
        (err = gw_request_json(&body, req)) < 0 ||
        (err = gw_json_int(&other, body, "other_team_id", 1, INT64_MAX, true)) < 0 ||
        (err = comp_team_merge(&merged, comp_of(req), req->auth.user_id, id, tid, other)) < 0)
        return err;
    return respond(res, 200, json_pack("{s:b}", "merged", merged));
}

/* ---- hosts (admin) ----------------------------------------------------------------------- */

/* POST /api/v1/admin/hosts {user_id | username} */
static int add_host(gw_request *req, gw_response *res)
{
    const char *username = NULL;
    int64_t uid = 0;
    json_t *body;
    int err;

    if ((err = ready(req)) < 0 || (err = gw_request_json(&body, req)) < 0 ||
        (err = gw_json_int(&uid, body, "user_id", 1, INT64_MAX, false)) < 0 ||
        (err = ed_json_get_str(&username, body, "username", false)) < 0)
        return err;
    if ((uid != 0) == (username != NULL))
        return ed_error_set(ED_EINVAL, "give user_id or username");
    if (username && acct_user_id(&uid, req->srv->store, username) < 0)
        return ed_error_set(ED_EUNPROC, "no user '%s'", username);
    if ((err = comp_host_add(comp_of(req), req->auth.user_id, uid)) < 0)
        return err;
    gw__audit(req, "competition.host_add", ed_arena_printf(req->arena, "user:%" PRId64, uid), NULL);
    return respond(res, 201, json_pack("{s:I, s:b}", "user_id", (json_int_t)uid, "host", 1));
}

static int remove_host(gw_request *req, gw_response *res)
{
    int64_t uid = 0;
    int err;

    if ((err = ready(req)) < 0 || (err = parse_id64(&uid, req->params[0], "user")) < 0 ||
        (err = comp_host_remove(comp_of(req), req->auth.user_id, uid)) < 0)
        return err;
    gw__audit(req, "competition.host_remove", ed_arena_printf(req->arena, "user:%" PRId64, uid), NULL);
    return gw_respond_empty(res, 204);
}

#define R (GW_AUTH | GW_SCOPE_READ)
#define W (GW_AUTH | GW_SCOPE_WRITE)
#define A (GW_AUTH_OPTIONAL | GW_SCOPE_READ)
#define S (GW_AUTH | GW_SCOPE_WRITE | GW_BODY_STREAM)
#define ADMIN (GW_AUTH | GW_SCOPE_ADMIN)

const gw_route gw__routes_competitions[] = {
    {"POST", "/api/v1/competitions", create_competition, W, "Create a competition (hosts)"},
    {"GET", "/api/v1/competitions", list_competitions, A, "Competitions, the latest start first"},
    {"GET", "/api/v1/competitions/{id}", get_competition, A, "A competition (id or slug)"},
    {"PUT", "/api/v1/competitions/{id}", update_competition, W,
     "Change a competition's settings (host; fields left out stay)"},
    {"PUT", "/api/v1/competitions/{id}/truth", put_truth, S,
     "Put the hidden ground truth (raw CSV, streamed; host, before start)"},
    {"PUT", "/api/v1/competitions/{id}/scorer", put_scorer, S,
     "Put a custom scoring program (a Python file; host, before start, scorer.direction set)"},
    {"DELETE", "/api/v1/competitions/{id}/scorer", delete_scorer, W,
     "Remove the scoring program: the built-in metric scores again (host, before start)"},
    {"POST", "/api/v1/competitions/{id}/accept-rules", accept_rules, W, "Accept the rules"},
    {"POST", "/api/v1/competitions/{id}/teams", create_team, W, "Create a team"},
    {"GET", "/api/v1/competitions/{id}/teams/mine", my_team, R, "My team"},
    {"DELETE", "/api/v1/competitions/{id}/teams/mine", leave_team, W,
     "Leave my team (not once it has a submission)"},
    {"POST", "/api/v1/competitions/{id}/teams/{tid}/invites", invite, W, "Invite a user {username}"},
    {"POST", "/api/v1/competitions/{id}/teams/{tid}/join", join, W, "Accept an invitation"},
    {"POST", "/api/v1/competitions/{id}/teams/{tid}/merge", merge, W,
     "Ask to merge with {other_team_id}, or accept its request"},
    {"POST", "/api/v1/competitions/{id}/submissions", post_submission, S,
     "Submit (raw CSV, streamed; or JSON {job_id|project_id, path} or {project_id, version, entry})"},
    {"GET", "/api/v1/competitions/{id}/submissions", list_submissions, R,
     "My team's submissions (?all=1: every one, hosts)"},
    {"POST", "/api/v1/competitions/{id}/submissions/select", select_submissions, W,
     "Choose the final submissions {ids}"},
    {"GET", "/api/v1/competitions/{id}/submissions/{sid}", get_submission, R, "One submission"},
    {"GET", "/api/v1/competitions/{id}/submissions/{sid}/private", get_submission_private, R,
     "A submission's private score (after the end only)"},
    {"GET", "/api/v1/competitions/{id}/leaderboard", get_leaderboard, A,
     "Leaderboard (?board=public|private&limit=&offset=, or &team=<id>)"},
    {"POST", "/api/v1/admin/hosts", add_host, ADMIN, "Make a user a competition host"},
    {"DELETE", "/api/v1/admin/hosts/{user_id}", remove_host, ADMIN, "Stop a user hosting"},
    {NULL, NULL, NULL, 0, NULL},
};
