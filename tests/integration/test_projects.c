/* Projects over HTTP against the real `eddy serve`: the notebook flow of
 * issue 2 (save, version, change, version, read old, restore, fork), and bad
 * input: traversal, absolute paths, invalid notebooks, other users' private
 * projects, non-owners of public ones, malformed bodies, the storage limit.
 * What the server persisted is checked on disk with libgit2 and SQLite. */
#include "harness.h"
#include "it_db.h"

#include "ed_crypto.h"

#include <check.h>
#include <git2.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static it_server srv;

typedef struct user {
    char cookie[512];   /* "Cookie: eddy_session=..." */
    char csrf[256];     /* "X-CSRF-Token: ..." */
} user;

static void start(const char *const *env)
{
    ck_assert_int_eq(it_server_start(&srv, env), 0);
}

static void setup(void) { start(NULL); }

static void teardown(void) { ck_assert_int_eq(it_server_stop(&srv), 0); }

static void sign_in(user *u, const char *name)
{
    char *cookie = NULL, *csrf = NULL;

    ck_assert_int_eq(it_signup_login(&srv, name, "correct horse battery", &cookie, &csrf), 0);
    snprintf(u->cookie, sizeof(u->cookie), "Cookie: %s", cookie);
    snprintf(u->csrf, sizeof(u->csrf), "X-CSRF-Token: %s", csrf);
    free(cookie);
    free(csrf);
}

/* One request as `u`; `len` < 0: strlen(body). The path is printf-formatted. */
static void call(it_resp *r, user *u, const char *method, const char *body, long len,
                 const char *fmt, ...) __attribute__((format(printf, 6, 7)));
static void call(it_resp *r, user *u, const char *method, const char *body, long len,
                 const char *fmt, ...)
{
    char path[4096];
    const char *hdrs[] = {u->cookie, u->csrf, NULL};
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(path, sizeof(path), fmt, ap);
    va_end(ap);
    ck_assert_int_eq(it_request_n(r, &srv, method, path, body, len, hdrs), 0);
}

static const char *str(const it_resp *r, const char *key)
{
    return r->json ? json_string_value(json_object_get(r->json, key)) : NULL;
}

/* Create a project and copy its id into `id` (14 bytes). */
static void create(char *id, user *u, const char *name, const char *vis)
{
    it_resp r;
    char body[256];

    snprintf(body, sizeof(body), "{\"name\":\"%s\",\"visibility\":\"%s\"}", name, vis);
    call(&r, u, "POST", body, -1, "/api/v1/projects");
    ck_assert_msg(r.status == 201, "create: %ld %s", r.status, r.body);
    ck_assert_ptr_nonnull(str(&r, "id"));
    snprintf(id, 14, "%s", str(&r, "id"));
    it_resp_free(&r);
}

static long status_of(user *u, const char *method, const char *body, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static long status_of(user *u, const char *method, const char *body, const char *fmt, ...)
{
    char path[4096];
    const char *hdrs[] = {u->cookie, u->csrf, NULL};
    it_resp r;
    va_list ap;
    long s;

    va_start(ap, fmt);
    vsnprintf(path, sizeof(path), fmt, ap);
    va_end(ap);
    ck_assert_int_eq(it_request_n(&r, &srv, method, path, body, -1, hdrs), 0);
    s = r.status;
    it_resp_free(&r);
    return s;
}

#define NB_V1                                                                                  \
    "{\"nbformat\":4,\"nbformat_minor\":5,\"metadata\":{\"kernelspec\":{\"name\":\"python3\","   \
    "\"display_name\":\"Python 3\",\"language\":\"python\"}},\"cells\":[{\"cell_type\":"           \
    "\"code\",\"id\":\"c1\",\"metadata\":{},\"execution_count\":1,\"source\":\"print(1)\","        \
    "\"outputs\":[{\"output_type\":\"stream\",\"name\":\"stdout\",\"text\":\"1\\n\"}]}]}"
#define NB_V2                                                                                  \
    "{\"nbformat\":4,\"nbformat_minor\":5,\"metadata\":{},\"cells\":[{\"cell_type\":\"markdown\"," \
    "\"id\":\"m1\",\"metadata\":{},\"source\":[\"# v2\"]},{\"cell_type\":\"code\",\"id\":\"c1\","  \
    "\"metadata\":{},\"execution_count\":null,\"source\":\"print(2)\",\"outputs\":[]}]}"

/* HEAD of a project's repository as the server left it on disk. */
static void disk_head(char out[41], const char *id)
{
    char path[512];
    git_repository *repo = NULL;
    git_oid oid;

    snprintf(path, sizeof(path), "%s/projects/%s", srv.data_dir, id);
    git_libgit2_init();
    /* the repository is the server's user's (eddy), not ours (root) */
    git_libgit2_opts(GIT_OPT_SET_OWNER_VALIDATION, 0);
    ck_assert_int_eq(git_repository_open(&repo, path), 0);
    ck_assert_int_eq(git_reference_name_to_id(&oid, repo, "HEAD"), 0);
    git_oid_tostr(out, 41, &oid);
    git_repository_free(repo);
    git_libgit2_shutdown();
}

START_TEST(notebook_flow_save_version_change_read_old_restore_fork)
{
    user alice, bob;
    char id[14], v1[41], v2[41], fork_id[14], head[41];
    it_resp r;

    sign_in(&alice, "alice");
    sign_in(&bob, "bob");
    create(id, &alice, "mnist", "private");

    /* save a notebook, make a version */
    call(&r, &alice, "PUT", NB_V1, -1, "/api/v1/projects/%s/files/notebooks/train.ipynb", id);
    ck_assert_msg(r.status == 201, "%ld %s", r.status, r.body);
    ck_assert_str_eq(str(&r, "path"), "notebooks/train.ipynb");
    ck_assert_int_eq(json_integer_value(json_object_get(r.json, "size")), (json_int_t)strlen(NB_V1));
    it_resp_free(&r);
    call(&r, &alice, "POST", "{\"message\":\"first run\"}", -1, "/api/v1/projects/%s/versions", id);
    ck_assert_msg(r.status == 201, "%ld %s", r.status, r.body);
    ck_assert_str_eq(str(&r, "message"), "first run");
    ck_assert_ptr_nonnull(str(&r, "created_at"));
    ck_assert_str_eq(json_string_value(json_array_get(json_object_get(r.json, "files"), 0)),
                     "notebooks/train.ipynb");
    snprintf(v1, sizeof(v1), "%s", str(&r, "id"));
    ck_assert_uint_eq(strlen(v1), 40);
    it_resp_free(&r);

    /* change it (replace: 200), make another */
    call(&r, &alice, "PUT", NB_V2, -1, "/api/v1/projects/%s/files/notebooks/train.ipynb", id);
    ck_assert_int_eq(r.status, 200);
    it_resp_free(&r);
    call(&r, &alice, "POST", "{\"message\":\"second\"}", -1, "/api/v1/projects/%s/versions", id);
    ck_assert_int_eq(r.status, 201);
    snprintf(v2, sizeof(v2), "%s", str(&r, "id"));
    it_resp_free(&r);
    disk_head(head, id);
    ck_assert_str_eq(head, v2);   /* persisted as a real commit */

    call(&r, &alice, "GET", NULL, 0, "/api/v1/projects/%s/versions", id);
    ck_assert_int_eq(r.status, 200);
    ck_assert_int_eq(json_array_size(json_object_get(r.json, "items")), 2);
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(json_object_get(r.json, "items"), 0), "id")), v2);
    it_resp_free(&r);

    /* read the old version, and the current file */
    call(&r, &alice, "GET", NULL, 0, "/api/v1/projects/%s/files/notebooks/train.ipynb?version=%s", id, v1);
    ck_assert_int_eq(r.status, 200);
    ck_assert_str_eq(r.body, NB_V1);
    ck_assert_ptr_nonnull(it_resp_header(&r, "Content-Type"));
    ck_assert(strstr(it_resp_header(&r, "Content-Type"), "ipynb") != NULL);
    it_resp_free(&r);
    call(&r, &alice, "GET", NULL, 0, "/api/v1/projects/%s/files/notebooks/train.ipynb", id);
    ck_assert_str_eq(r.body, NB_V2);
    it_resp_free(&r);

    /* restore v1: the tree matches v2 (HEAD), so no autosave is needed */
    call(&r, &alice, "POST", NULL, 0, "/api/v1/projects/%s/versions/%s/restore", id, v1);
    ck_assert_msg(r.status == 200, "%ld %s", r.status, r.body);
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(r.json, "restored"), "id")), v1);
    ck_assert(json_is_null(json_object_get(r.json, "autosave")));
    it_resp_free(&r);
    call(&r, &alice, "GET", NULL, 0, "/api/v1/projects/%s/files/notebooks/train.ipynb", id);
    ck_assert_str_eq(r.body, NB_V1);
    it_resp_free(&r);

    /* unsaved work before a restore is autosaved */
    call(&r, &alice, "PUT", "scratch", -1, "/api/v1/projects/%s/files/scratch.txt", id);
    ck_assert_int_eq(r.status, 201);
    it_resp_free(&r);
    call(&r, &alice, "POST", "{\"mode\":\"exact\"}", -1, "/api/v1/projects/%s/versions/%s/restore",
         id, v2);
    ck_assert_int_eq(r.status, 200);
    ck_assert_str_eq(str(&r, "mode"), "exact");
    ck_assert(strncmp(json_string_value(json_object_get(json_object_get(r.json, "autosave"), "message")),
                      "Autosave before restoring ", 26) == 0);
    it_resp_free(&r);
    call(&r, &alice, "GET", NULL, 0, "/api/v1/projects/%s/files/scratch.txt", id);
    ck_assert_int_eq(r.status, 404);   /* exact: v2 has no scratch.txt ... */
    it_resp_free(&r);
    call(&r, &alice, "GET", NULL, 0, "/api/v1/projects/%s/versions?limit=1", id);
    {
        json_t *latest = json_array_get(json_object_get(r.json, "items"), 0);
        const char *autosave_id = json_string_value(json_object_get(latest, "id"));
        it_resp r2;
        ck_assert_ptr_nonnull(str(&r, "next_cursor"));
        call(&r2, &alice, "GET", NULL, 0, "/api/v1/projects/%s/files/scratch.txt?version=%s", id, autosave_id);
        ck_assert_int_eq(r2.status, 200);   /* ... but the autosave kept it */
        ck_assert_str_eq(r2.body, "scratch");
        it_resp_free(&r2);
    }
    it_resp_free(&r);

    /* fork: make it public, bob forks it with the same history */
    call(&r, &alice, "PATCH", "{\"visibility\":\"public\"}", -1, "/api/v1/projects/%s", id);
    ck_assert_int_eq(r.status, 200);
    ck_assert_str_eq(str(&r, "visibility"), "public");
    it_resp_free(&r);
    /* can_write: what the web app decides editor or read-only page by */
    call(&r, &bob, "GET", NULL, 0, "/api/v1/projects/%s", id);
    ck_assert_int_eq(r.status, 200);
    ck_assert(json_is_false(json_object_get(r.json, "can_write")));
    it_resp_free(&r);
    call(&r, &alice, "GET", NULL, 0, "/api/v1/projects/%s", id);
    ck_assert(json_is_true(json_object_get(r.json, "can_write")));
    it_resp_free(&r);
    call(&r, &bob, "POST", NULL, 0, "/api/v1/projects/%s/fork", id);
    ck_assert_msg(r.status == 201, "%ld %s", r.status, r.body);
    ck_assert_str_eq(str(&r, "owner"), "bob");
    ck_assert_str_eq(str(&r, "visibility"), "private");
    ck_assert_str_eq(str(&r, "forked_from"), id);
    snprintf(fork_id, sizeof(fork_id), "%s", str(&r, "id"));
    it_resp_free(&r);
    {
        char a[41], b[41];
        disk_head(a, id);
        disk_head(b, fork_id);
        ck_assert_str_eq(a, b);
    }
    call(&r, &bob, "GET", NULL, 0, "/api/v1/projects/%s/files/notebooks/train.ipynb?version=%s", fork_id, v1);
    ck_assert_int_eq(r.status, 200);
    ck_assert_str_eq(r.body, NB_V1);
    it_resp_free(&r);
    ck_assert_int_eq(status_of(&alice, "GET", NULL, "/api/v1/projects/%s", fork_id), 404);

    /* the rows: sizes tracked, the fork recorded */
    ck_assert_int_gt(it_db_int(&srv, "SELECT size_bytes FROM projects WHERE id = '%s'", id), 0);
    ck_assert_int_eq(it_db_int(&srv, "SELECT count(*) FROM projects WHERE forked_from = '%s'", id), 1);

    /* list: bob sees his fork and alice's public project */
    call(&r, &bob, "GET", NULL, 0, "/api/v1/projects");
    ck_assert_int_eq(r.status, 200);
    ck_assert_int_eq(json_array_size(json_object_get(r.json, "items")), 2);
    ck_assert(json_is_null(json_object_get(r.json, "next_cursor")));
    it_resp_free(&r);

    /* delete: 204, the directory and row are gone */
    ck_assert_int_eq(status_of(&bob, "DELETE", NULL, "/api/v1/projects/%s", fork_id), 204);
    ck_assert_int_eq(status_of(&bob, "GET", NULL, "/api/v1/projects/%s", fork_id), 404);
    {
        char path[512];
        struct stat sb;
        snprintf(path, sizeof(path), "%s/projects/%s", srv.data_dir, fork_id);
        ck_assert_int_ne(stat(path, &sb), 0);
    }
    ck_assert_int_eq(it_db_int(&srv, "SELECT count(*) FROM projects WHERE id = '%s'", fork_id), 0);
}
END_TEST

START_TEST(traversal_and_absolute_paths_are_refused)
{
    user alice;
    char id[14];
    static const char *encoded[] = {
        "..%2F..%2F..%2Fescape.txt", "a%2F..%2F..%2Fescape.txt", "%2E%2E/escape.txt",
        "%2Fetc%2Fpasswd", "%2Ftmp%2Fescape.txt", "a//b.txt", ".git/config", ".git%2Fhooks%2Fpost-commit",
        "dir%5C..%5Cescape.txt", "a%00b", NULL,
    };
    it_resp r;
    struct stat sb;
    char path[512];

    sign_in(&alice, "alice");
    create(id, &alice, "safe", "private");
    for (int i = 0; encoded[i]; i++) {
        call(&r, &alice, "PUT", "x", 1, "/api/v1/projects/%s/files/%s", id, encoded[i]);
        ck_assert_msg(r.status == 400, "PUT %s -> %ld %s", encoded[i], r.status, r.body);
        ck_assert_str_eq(it_resp_error_code(&r), "bad_request");
        it_resp_free(&r);
        call(&r, &alice, "GET", NULL, 0, "/api/v1/projects/%s/files/%s", id, encoded[i]);
        ck_assert_msg(r.status == 400, "GET %s -> %ld", encoded[i], r.status);
        it_resp_free(&r);
        call(&r, &alice, "DELETE", NULL, 0, "/api/v1/projects/%s/files/%s", id, encoded[i]);
        ck_assert_msg(r.status == 400, "DELETE %s -> %ld", encoded[i], r.status);
        it_resp_free(&r);
    }
    /* plain dot segments: libcurl resolves them before sending, so the request
     * never names a file of the project; whatever route it lands on, nothing
     * may be written outside the tree */
    call(&r, &alice, "PUT", "x", 1, "/api/v1/projects/%s/files/../../../escape.txt", id);
    ck_assert_msg(r.status == 400 || r.status == 404 || r.status == 405, "plain ..: %ld", r.status);
    it_resp_free(&r);
    snprintf(path, sizeof(path), "%s/escape.txt", srv.data_dir);
    ck_assert_int_ne(stat(path, &sb), 0);
    snprintf(path, sizeof(path), "%s/projects/escape.txt", srv.data_dir);
    ck_assert_int_ne(stat(path, &sb), 0);
    ck_assert_int_ne(stat("/tmp/escape.txt", &sb), 0);

    /* nothing was written into the project either */
    call(&r, &alice, "GET", NULL, 0, "/api/v1/projects/%s/files", id);
    ck_assert_int_eq(r.status, 200);
    ck_assert_int_eq(json_array_size(json_object_get(r.json, "items")), 0);
    it_resp_free(&r);
}
END_TEST

START_TEST(invalid_notebook_is_422_and_not_written)
{
    user alice;
    char id[14];
    it_resp r;

    sign_in(&alice, "alice");
    create(id, &alice, "nb", "private");
    call(&r, &alice, "PUT", "{\"nbformat\":4,\"nbformat_minor\":5,\"metadata\":{},\"cells\":"
                            "[{\"cell_type\":\"code\",\"id\":\"a\",\"metadata\":{},\"source\":\"x\"}]}",
         -1, "/api/v1/projects/%s/files/bad.ipynb", id);
    ck_assert_int_eq(r.status, 422);
    ck_assert_str_eq(it_resp_error_code(&r), "unprocessable");
    ck_assert(strstr(r.body, "cells[0]") != NULL);
    it_resp_free(&r);
    call(&r, &alice, "PUT", "not json", -1, "/api/v1/projects/%s/files/worse.ipynb", id);
    ck_assert_int_eq(r.status, 422);
    it_resp_free(&r);
    call(&r, &alice, "GET", NULL, 0, "/api/v1/projects/%s/files/bad.ipynb", id);
    ck_assert_int_eq(r.status, 404);
    it_resp_free(&r);
    call(&r, &alice, "GET", NULL, 0, "/api/v1/projects/%s/files", id);
    ck_assert_int_eq(json_array_size(json_object_get(r.json, "items")), 0);
    it_resp_free(&r);
}
END_TEST

START_TEST(another_users_private_project_is_404_everywhere)
{
    user alice, bob;
    char id[14], v[41];
    it_resp r;
    static const struct {
        const char *method, *fmt, *body;
    } routes[] = {
        {"GET", "/api/v1/projects/%s%s", NULL},
        {"PATCH", "/api/v1/projects/%s%s", "{\"name\":\"mine\"}"},
        {"DELETE", "/api/v1/projects/%s%s", NULL},
        {"GET", "/api/v1/projects/%s/files%s", NULL},
        {"GET", "/api/v1/projects/%s/files/a.txt%s", NULL},
        {"PUT", "/api/v1/projects/%s/files/b.txt%s", "x"},
        {"DELETE", "/api/v1/projects/%s/files/a.txt%s", NULL},
        {"POST", "/api/v1/projects/%s/versions%s", "{\"message\":\"m\"}"},
        {"GET", "/api/v1/projects/%s/versions%s", NULL},
        {"POST", "/api/v1/projects/%s/fork%s", NULL},
    };

    sign_in(&alice, "alice");
    sign_in(&bob, "bob");
    create(id, &alice, "secret", "private");
    call(&r, &alice, "PUT", "secret", -1, "/api/v1/projects/%s/files/a.txt", id);
    it_resp_free(&r);
    call(&r, &alice, "POST", "{\"message\":\"m\"}", -1, "/api/v1/projects/%s/versions", id);
    snprintf(v, sizeof(v), "%s", str(&r, "id"));
    it_resp_free(&r);

    for (size_t i = 0; i < sizeof(routes) / sizeof(routes[0]); i++) {
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral" /* the table's patterns are literals */
        call(&r, &bob, routes[i].method, routes[i].body, -1, routes[i].fmt, id, "");
#pragma GCC diagnostic pop
        ck_assert_msg(r.status == 404, "%s %s -> %ld", routes[i].method, routes[i].fmt, r.status);
        ck_assert_str_eq(it_resp_error_code(&r), "not_found");
        it_resp_free(&r);
    }
    call(&r, &bob, "GET", NULL, 0, "/api/v1/projects/%s/files/a.txt?version=%s", id, v);
    ck_assert_int_eq(r.status, 404);
    it_resp_free(&r);
    call(&r, &bob, "POST", NULL, 0, "/api/v1/projects/%s/versions/%s/restore", id, v);
    ck_assert_int_eq(r.status, 404);
    it_resp_free(&r);
    /* an id that never existed answers the same */
    ck_assert_int_eq(status_of(&bob, "GET", NULL, "/api/v1/projects/%s", "pAAAAAAAAAAAA"), 404);
    /* and alice's project is untouched */
    call(&r, &alice, "GET", NULL, 0, "/api/v1/projects/%s/files/a.txt", id);
    ck_assert_str_eq(r.body, "secret");
    it_resp_free(&r);
    ck_assert_int_eq(status_of(&alice, "GET", NULL, "/api/v1/projects/%s/files/b.txt", id), 404);
}
END_TEST

START_TEST(non_owner_changes_to_a_public_project_are_403)
{
    user alice, bob;
    char id[14], v[41];
    it_resp r;

    sign_in(&alice, "alice");
    sign_in(&bob, "bob");
    create(id, &alice, "open", "public");
    call(&r, &alice, "PUT", "hello", -1, "/api/v1/projects/%s/files/a.txt", id);
    it_resp_free(&r);
    call(&r, &alice, "POST", "{\"message\":\"m\"}", -1, "/api/v1/projects/%s/versions", id);
    snprintf(v, sizeof(v), "%s", str(&r, "id"));
    it_resp_free(&r);

    ck_assert_int_eq(status_of(&bob, "PATCH", "{\"name\":\"mine\"}", "/api/v1/projects/%s", id), 403);
    ck_assert_int_eq(status_of(&bob, "DELETE", NULL, "/api/v1/projects/%s", id), 403);
    ck_assert_int_eq(status_of(&bob, "PUT", "x", "/api/v1/projects/%s/files/b.txt", id), 403);
    ck_assert_int_eq(status_of(&bob, "DELETE", NULL, "/api/v1/projects/%s/files/a.txt", id), 403);
    ck_assert_int_eq(status_of(&bob, "POST", "{\"message\":\"m\"}", "/api/v1/projects/%s/versions", id), 403);
    {
        char p[128];
        snprintf(p, sizeof(p), "/versions/%s/restore", v);
        ck_assert_int_eq(status_of(&bob, "POST", NULL, "/api/v1/projects/%s%s", id, p), 403);
    }
    /* reading is fine */
    ck_assert_int_eq(status_of(&bob, "GET", NULL, "/api/v1/projects/%s", id), 200);
    ck_assert_int_eq(status_of(&bob, "GET", NULL, "/api/v1/projects/%s/files/a.txt", id), 200);
    ck_assert_int_eq(status_of(&bob, "GET", NULL, "/api/v1/projects/%s/versions", id), 200);
    /* nothing changed */
    call(&r, &alice, "GET", NULL, 0, "/api/v1/projects/%s", id);
    ck_assert_str_eq(str(&r, "name"), "open");
    it_resp_free(&r);
    ck_assert_int_eq(status_of(&alice, "GET", NULL, "/api/v1/projects/%s/files/b.txt", id), 404);
    ck_assert_int_eq(status_of(&alice, "GET", NULL, "/api/v1/projects/%s/files/a.txt", id), 200);
}
END_TEST

START_TEST(missing_and_wrong_typed_fields_are_400)
{
    user alice;
    char id[14];
    static const char *bad_create[] = {
        "{\"visibility\":\"private\"}",              /* no name */
        "{\"name\":5,\"visibility\":\"private\"}",   /* wrong type */
        "{\"name\":\"\",\"visibility\":\"private\"}",
        "{\"name\":\"x\"}",                          /* no visibility */
        "{\"name\":\"x\",\"visibility\":\"secret\"}",
        "{\"name\":\"x\",\"visibility\":true}",
        "{\"name\":\"x\",\"visibility\":\"public\",\"description\":[]}",
        "[\"name\"]", "not json", "",
        NULL,
    };

    sign_in(&alice, "alice");
    for (int i = 0; bad_create[i]; i++) {
        it_resp r;
        call(&r, &alice, "POST", bad_create[i], -1, "/api/v1/projects");
        ck_assert_msg(r.status == 400, "create %s -> %ld %s", bad_create[i], r.status, r.body);
        ck_assert_str_eq(it_resp_error_code(&r), "bad_request");
        it_resp_free(&r);
    }
    ck_assert_int_eq(it_db_int(&srv, "SELECT count(*) FROM projects"), 0);
    create(id, &alice, "ok", "private");
    ck_assert_int_eq(status_of(&alice, "PATCH", "{\"name\":5}", "/api/v1/projects/%s", id), 400);
    ck_assert_int_eq(status_of(&alice, "PATCH", "{\"visibility\":\"everyone\"}", "/api/v1/projects/%s", id), 400);
    ck_assert_int_eq(status_of(&alice, "POST", "{}", "/api/v1/projects/%s/versions", id), 400);
    ck_assert_int_eq(status_of(&alice, "POST", "{\"message\":7}", "/api/v1/projects/%s/versions", id), 400);
    ck_assert_int_eq(status_of(&alice, "POST", "{\"message\":\"\"}", "/api/v1/projects/%s/versions", id), 400);
    ck_assert_int_eq(status_of(&alice, "GET", NULL, "/api/v1/projects%s%s", "", "?limit=0"), 400);
    ck_assert_int_eq(status_of(&alice, "GET", NULL, "/api/v1/projects%s%s", "", "?cursor=bogus"), 400);
    ck_assert_int_eq(status_of(&alice, "POST", NULL, "/api/v1/projects/%s/versions/%s/restore", id, "nothex!"), 400);
    ck_assert_int_eq(status_of(&alice, "GET", NULL, "/api/v1/projects/%s/files/a.txt%s", id, "?version=zz"), 400);
    ck_assert_int_eq(status_of(&alice, "GET", NULL, "/api/v1/projects/%s/versions%s", id, "?cursor=nope"), 400);
    ck_assert_int_eq(status_of(&alice, "GET", NULL, "/api/v1/projects/%s/versions%s", id, ""), 200);
}
END_TEST

START_TEST(storage_limit_answers_402_and_writes_nothing)
{
    static const char *env[] = {"EDDY_USER_STORAGE_BYTES=20000", NULL};
    user alice;
    char id[14], other[14], *big = malloc(15001);
    it_resp r;

    teardown();       /* replace the default server with one with a small limit */
    start(env);
    memset(big, 'a', 15000);
    big[15000] = '\0';
    sign_in(&alice, "alice");
    create(id, &alice, "one", "private");
    create(other, &alice, "two", "private");
    call(&r, &alice, "PUT", big, 15000, "/api/v1/projects/%s/files/data.bin", id);
    ck_assert_msg(r.status == 201, "%ld %s", r.status, r.body);
    it_resp_free(&r);
    /* the limit is per user across projects */
    call(&r, &alice, "PUT", big, 10000, "/api/v1/projects/%s/files/more.bin", other);
    ck_assert_int_eq(r.status, 402);
    ck_assert_str_eq(it_resp_error_code(&r), "quota_exceeded");
    it_resp_free(&r);
    ck_assert_int_eq(status_of(&alice, "GET", NULL, "/api/v1/projects/%s/files/more.bin", other), 404);
    call(&r, &alice, "PUT", big, 4000, "/api/v1/projects/%s/files/small.bin", other);
    ck_assert_int_eq(r.status, 201);
    it_resp_free(&r);
    ck_assert_int_eq(it_db_int(&srv, "SELECT size_bytes FROM projects WHERE id = '%s'", id), 15000);
    ck_assert_int_eq(it_db_int(&srv, "SELECT size_bytes FROM projects WHERE id = '%s'", other), 4000);
    free(big);
}
END_TEST

/* One request as `u` with one extra header (NULL: none). */
static void call_h(it_resp *r, user *u, const char *method, const char *body, long len,
                   const char *extra, const char *path)
{
    const char *hdrs[] = {u->cookie, u->csrf, extra, NULL};

    ck_assert_int_eq(it_request_n(r, &srv, method, path, body, len, hdrs), 0);
}

START_TEST(etags_304_and_412_on_a_stale_write)
{
    user alice;
    char id[14], path[128], hdr[200], etag1[70], etag2[70], want[65];
    it_resp r;

    sign_in(&alice, "alice");
    create(id, &alice, "cas", "private");
    snprintf(path, sizeof(path), "/api/v1/projects/%s/files/nb/a.txt", id);
    call_h(&r, &alice, "PUT", "first", -1, NULL, path);
    ck_assert_int_eq(r.status, 201);
    ck_assert_ptr_nonnull(it_resp_header(&r, "ETag"));
    snprintf(etag1, sizeof(etag1), "%s", it_resp_header(&r, "ETag"));
    ed_sha256_hex(want, "first", 5);
    ck_assert_str_eq(str(&r, "etag"), want);
    snprintf(hdr, sizeof(hdr), "\"%s\"", want);
    ck_assert_str_eq(etag1, hdr);
    it_resp_free(&r);

    /* reads send it; If-None-Match with it answers 304 */
    call_h(&r, &alice, "GET", NULL, 0, NULL, path);
    ck_assert_int_eq(r.status, 200);
    ck_assert_str_eq(it_resp_header(&r, "ETag"), etag1);
    it_resp_free(&r);
    snprintf(hdr, sizeof(hdr), "If-None-Match: %s", etag1);
    call_h(&r, &alice, "GET", NULL, 0, hdr, path);
    ck_assert_int_eq(r.status, 304);
    ck_assert_uint_eq(r.body_len, 0);
    it_resp_free(&r);
    call_h(&r, &alice, "GET", NULL, 0, "If-None-Match: \"0000\", W/\"abc\"", path);
    ck_assert_int_eq(r.status, 200);
    ck_assert_str_eq(r.body, "first");
    it_resp_free(&r);

    /* a conditional write with the current ETag wins and answers the new one */
    snprintf(hdr, sizeof(hdr), "If-Match: %s", etag1);
    call_h(&r, &alice, "PUT", "second", -1, hdr, path);
    ck_assert_msg(r.status == 200, "%ld %s", r.status, r.body);
    snprintf(etag2, sizeof(etag2), "%s", it_resp_header(&r, "ETag"));
    ck_assert_str_ne(etag2, etag1);
    it_resp_free(&r);
    /* the same (now stale) ETag again: 412 with the current one, nothing written */
    call_h(&r, &alice, "PUT", "third", -1, hdr, path);
    ck_assert_msg(r.status == 412, "%ld %s", r.status, r.body);
    ck_assert_str_eq(it_resp_error_code(&r), "precondition_failed");
    ck_assert_str_eq(it_resp_header(&r, "ETag"), etag2);
    it_resp_free(&r);
    call_h(&r, &alice, "GET", NULL, 0, NULL, path);
    ck_assert_str_eq(r.body, "second");
    it_resp_free(&r);

    /* If-None-Match: * creates only; If-Match on a missing file is 412 */
    call_h(&r, &alice, "PUT", "x", -1, "If-None-Match: *", path);
    ck_assert_int_eq(r.status, 412);
    it_resp_free(&r);
    snprintf(path, sizeof(path), "/api/v1/projects/%s/files/new.txt", id);
    call_h(&r, &alice, "PUT", "x", -1, "If-None-Match: *", path);
    ck_assert_int_eq(r.status, 201);
    it_resp_free(&r);
    snprintf(path, sizeof(path), "/api/v1/projects/%s/files/missing.txt", id);
    call_h(&r, &alice, "PUT", "x", -1, hdr, path);
    ck_assert_int_eq(r.status, 412);
    it_resp_free(&r);
    ck_assert_int_eq(status_of(&alice, "GET", NULL, "/api/v1/projects/%s/files/missing.txt", id), 404);
    call_h(&r, &alice, "PUT", "x", -1, "If-Match: \"a\", \"b\"", path);
    ck_assert_int_eq(r.status, 400);
    it_resp_free(&r);
}
END_TEST

static json_t *large_entry(json_t *version, const char *path)
{
    json_t *l = json_object_get(version, "large_files");
    for (size_t i = 0; i < json_array_size(l); i++)
        if (strcmp(json_string_value(json_object_get(json_array_get(l, i), "path")), path) == 0)
            return json_array_get(l, i);
    return NULL;
}

static bool lists_file(json_t *version, const char *path)
{
    json_t *f = json_object_get(version, "files");
    for (size_t i = 0; i < json_array_size(f); i++)
        if (strcmp(json_string_value(json_array_get(f, i)), path) == 0)
            return true;
    return false;
}

START_TEST(versions_keep_large_and_ignored_files_out_and_restore_modes)
{
    user alice;
    char id[14], v1[41], want[65];
    size_t n = 21u << 20;
    char *big = malloc(n);
    json_t *e;
    it_resp r;

    ck_assert_int_eq(ed_crypto_init(), 0);
    for (size_t i = 0; i < n; i++)
        big[i] = (char)(i * 31 + (i >> 12));
    ed_sha256_hex(want, big, n);
    sign_in(&alice, "alice");
    create(id, &alice, "big", "private");
    call(&r, &alice, "PUT", big, (long)n, "/api/v1/projects/%s/files/ckpt/model.bin", id);
    ck_assert_msg(r.status == 201, "%ld %s", r.status, r.body);
    it_resp_free(&r);
    ck_assert_int_eq(status_of(&alice, "PUT", "*.tmp\n", "/api/v1/projects/%s/files/.eddyignore", id), 201);
    ck_assert_int_eq(status_of(&alice, "PUT", "scratch", "/api/v1/projects/%s/files/scratch.tmp", id), 201);
    ck_assert_int_eq(status_of(&alice, "PUT", "print(1)", "/api/v1/projects/%s/files/train.py", id), 201);
    call(&r, &alice, "POST", "{\"message\":\"with a checkpoint\"}", -1, "/api/v1/projects/%s/versions", id);
    ck_assert_msg(r.status == 201, "%ld %s", r.status, r.body);
    snprintf(v1, sizeof(v1), "%s", str(&r, "id"));
    ck_assert(lists_file(r.json, "train.py") && lists_file(r.json, ".eddyignore"));
    ck_assert(!lists_file(r.json, "ckpt/model.bin") && !lists_file(r.json, "scratch.tmp"));
    ck_assert_ptr_nonnull(e = large_entry(r.json, "ckpt/model.bin"));
    ck_assert_int_eq(json_integer_value(json_object_get(e, "size")), (json_int_t)n);
    ck_assert_str_eq(json_string_value(json_object_get(e, "sha256")), want);
    ck_assert_str_eq(json_string_value(json_object_get(e, "reason")), "large");
    ck_assert_ptr_nonnull(e = large_entry(r.json, "scratch.tmp"));
    ck_assert_str_eq(json_string_value(json_object_get(e, "reason")), "eddyignore");
    ck_assert_int_eq(json_integer_value(json_object_get(e, "size")), 7);
    it_resp_free(&r);
    /* the list shows the same manifest; no blob of the checkpoint in the version */
    call(&r, &alice, "GET", NULL, 0, "/api/v1/projects/%s/versions", id);
    ck_assert_ptr_nonnull(large_entry(json_array_get(json_object_get(r.json, "items"), 0), "ckpt/model.bin"));
    it_resp_free(&r);
    ck_assert_int_eq(status_of(&alice, "GET", NULL, "/api/v1/projects/%s/files/ckpt/model.bin?version=%s", id, v1), 404);
    {
        /* git itself finds the commit (with its manifest header) sound */
        char cmd[1024];
        snprintf(cmd, sizeof(cmd),
                 "git -c safe.directory='*' -C %s/projects/%s fsck --strict >/dev/null 2>&1",
                 srv.data_dir, id);
        ck_assert_msg(system(cmd) == 0, "git fsck failed on %s", id);
    }

    /* keep_untracked (the default) leaves files the version lacks */
    ck_assert_int_eq(status_of(&alice, "PUT", "later", "/api/v1/projects/%s/files/later.txt", id), 201);
    ck_assert_int_eq(status_of(&alice, "PUT", "print(2)", "/api/v1/projects/%s/files/train.py", id), 200);
    call(&r, &alice, "POST", "{}", -1, "/api/v1/projects/%s/versions/%s/restore", id, v1);
    ck_assert_msg(r.status == 200, "%ld %s", r.status, r.body);
    ck_assert_str_eq(str(&r, "mode"), "keep_untracked");
    ck_assert_ptr_nonnull(large_entry(json_object_get(r.json, "autosave"), "ckpt/model.bin"));
    it_resp_free(&r);
    call(&r, &alice, "GET", NULL, 0, "/api/v1/projects/%s/files/train.py", id);
    ck_assert_str_eq(r.body, "print(1)");
    it_resp_free(&r);
    ck_assert_int_eq(status_of(&alice, "GET", NULL, "/api/v1/projects/%s/files/later.txt", id), 200);

    /* exact removes it (the autosave holds it) but never large or ignored files */
    call(&r, &alice, "POST", "{\"mode\":\"exact\"}", -1, "/api/v1/projects/%s/versions/%s/restore", id, v1);
    ck_assert_msg(r.status == 200, "%ld %s", r.status, r.body);
    it_resp_free(&r);
    ck_assert_int_eq(status_of(&alice, "GET", NULL, "/api/v1/projects/%s/files/later.txt", id), 404);
    ck_assert_int_eq(status_of(&alice, "GET", NULL, "/api/v1/projects/%s/files/scratch.tmp", id), 200);
    call(&r, &alice, "GET", NULL, 0, "/api/v1/projects/%s/files/ckpt/model.bin", id);
    ck_assert_int_eq(r.status, 200);
    ck_assert_uint_eq(r.body_len, n);
    it_resp_free(&r);

    /* an unknown mode is a clear 400 */
    call(&r, &alice, "POST", "{\"mode\":\"wipe\"}", -1, "/api/v1/projects/%s/versions/%s/restore", id, v1);
    ck_assert_int_eq(r.status, 400);
    ck_assert_ptr_nonnull(strstr(r.body, "keep_untracked"));
    it_resp_free(&r);
    free(big);
}
END_TEST


/* Issue 14 item 10: names are unique per owner (case-insensitive): a second
 * project or a rename to a name the owner has is 409 with a clear message;
 * another user may use the name; forking one's own project picks a new name. */
START_TEST(project_names_are_unique_per_owner)
{
    user alice, bob;
    char a1[14], a2[14], b1[14];
    it_resp r;

    sign_in(&alice, "alice");
    sign_in(&bob, "bob");
    create(a1, &alice, "Cats", "private");
    call(&r, &alice, "POST", "{\"name\":\"cats\",\"visibility\":\"private\"}", -1, "/api/v1/projects");
    ck_assert_msg(r.status == 409, "same name again: %ld %s", r.status, r.body);
    ck_assert_ptr_nonnull(strstr(r.body, "\"conflict\""));
    ck_assert_msg(strstr(r.body, "already have a project named") != NULL, "message: %s", r.body);
    it_resp_free(&r);
    create(b1, &bob, "Cats", "private");   /* another owner: fine */
    create(a2, &alice, "Dogs", "private");
    call(&r, &alice, "PATCH", "{\"name\":\"CATS\"}", -1, "/api/v1/projects/%s", a2);
    ck_assert_msg(r.status == 409, "rename onto a taken name: %ld %s", r.status, r.body);
    it_resp_free(&r);
    call(&r, &alice, "GET", NULL, 0, "/api/v1/projects/%s", a2);
    ck_assert_str_eq(str(&r, "name"), "Dogs");   /* nothing changed */
    it_resp_free(&r);
    call(&r, &alice, "PATCH", "{\"name\":\"dogs\"}", -1, "/api/v1/projects/%s", a2);
    ck_assert_msg(r.status == 200, "renaming a project to itself in another case: %ld %s", r.status, r.body);
    it_resp_free(&r);
    call(&r, &alice, "POST", NULL, 0, "/api/v1/projects/%s/fork", a1);
    ck_assert_msg(r.status == 201, "fork of one's own project: %ld %s", r.status, r.body);
    ck_assert_str_eq(str(&r, "name"), "Cats (fork)");
    it_resp_free(&r);
    (void)b1;
}
END_TEST


/* GET /projects/{id}/diff: notebook-aware between two versions and the
 * working tree; a file one version lacks is "added"; bad parameters 400,
 * missing versions 404, another user's private project 404. */
START_TEST(diff_between_versions_is_notebook_aware)
{
    user alice, bob;
    char id[14], v1[41], v2[41];
    it_resp r;
    json_t *cells;

    sign_in(&alice, "alice");
    sign_in(&bob, "bob");
    create(id, &alice, "diffs", "private");
    call(&r, &alice, "PUT", NB_V1, -1, "/api/v1/projects/%s/files/nb.ipynb", id);
    it_resp_free(&r);
    call(&r, &alice, "POST", "{\"message\":\"one\"}", -1, "/api/v1/projects/%s/versions", id);
    snprintf(v1, sizeof(v1), "%s", str(&r, "id"));
    it_resp_free(&r);
    call(&r, &alice, "PUT", NB_V2, -1, "/api/v1/projects/%s/files/nb.ipynb", id);
    it_resp_free(&r);
    call(&r, &alice, "POST", "{\"message\":\"two\"}", -1, "/api/v1/projects/%s/versions", id);
    snprintf(v2, sizeof(v2), "%s", str(&r, "id"));
    it_resp_free(&r);

    call(&r, &alice, "GET", NULL, 0, "/api/v1/projects/%s/diff?path=nb.ipynb&from=%s&to=%s", id, v1, v2);
    ck_assert_msg(r.status == 200, "%ld %s", r.status, r.body);
    ck_assert_str_eq(str(&r, "kind"), "notebook");
    cells = json_object_get(r.json, "cells");
    ck_assert_uint_eq(json_array_size(cells), 2);
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(cells, 0), "status")), "added");
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(cells, 1), "status")), "modified");
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(cells, 1), "id")), "c1");
    it_resp_free(&r);
    /* the working tree equals v2 */
    call(&r, &alice, "GET", NULL, 0, "/api/v1/projects/%s/diff?path=nb.ipynb&from=%s&to=working", id, v2);
    ck_assert_int_eq(r.status, 200);
    ck_assert_str_eq(str(&r, "status"), "unchanged");
    it_resp_free(&r);

    ck_assert_int_eq(status_of(&alice, "GET", NULL, "/api/v1/projects/%s/diff?from=%s&to=working", id, v1), 400);
    ck_assert_int_eq(status_of(&alice, "GET", NULL, "/api/v1/projects/%s/diff?path=nb.ipynb&to=working", id), 400);
    ck_assert_int_eq(status_of(&alice, "GET", NULL, "/api/v1/projects/%s/diff?path=nb.ipynb&from=abcdef12&to=working", id), 404);
    ck_assert_int_eq(status_of(&alice, "GET", NULL, "/api/v1/projects/%s/diff?path=../etc&from=%s&to=working", id, v1), 400);
    ck_assert_int_eq(status_of(&bob, "GET", NULL, "/api/v1/projects/%s/diff?path=nb.ipynb&from=%s&to=%s", id, v1, v2), 404);
    call(&r, &alice, "PUT", "not json", -1, "/api/v1/projects/%s/files/bad.txt", id);
    it_resp_free(&r);
    call(&r, &alice, "GET", NULL, 0, "/api/v1/projects/%s/diff?path=bad.txt&from=%s&to=working", id, v1);
    ck_assert_int_eq(r.status, 200);
    ck_assert_str_eq(str(&r, "status"), "added");
    ck_assert_str_eq(str(&r, "kind"), "text");
    it_resp_free(&r);
    /* past the line bound: 413 naming it, nothing computed */
    {
        size_t n = 2 * 200001;
        char *big = malloc(n + 1);
        for (size_t i = 0; i < n; i += 2)
            memcpy(big + i, "x\n", 2);
        big[n] = 0;
        call(&r, &alice, "PUT", big, (long)n, "/api/v1/projects/%s/files/big.txt", id);
        ck_assert_msg(r.status == 201, "%ld %s", r.status, r.body);
        it_resp_free(&r);
        free(big);
    }
    call(&r, &alice, "GET", NULL, 0, "/api/v1/projects/%s/diff?path=big.txt&from=%s&to=working", id, v1);
    ck_assert_msg(r.status == 413, "%ld %s", r.status, r.body);
    ck_assert_str_eq(it_resp_error_code(&r), "payload_too_large");
    ck_assert_ptr_nonnull(strstr(r.body, "lines"));
    it_resp_free(&r);
}
END_TEST

static Suite *projects_suite(void)
{
    Suite *s = suite_create("it_projects");
    TCase *t = tcase_create("projects");

    tcase_add_checked_fixture(t, setup, teardown);
    tcase_set_timeout(t, 120);
    tcase_add_test(t, notebook_flow_save_version_change_read_old_restore_fork);
    tcase_add_test(t, traversal_and_absolute_paths_are_refused);
    tcase_add_test(t, invalid_notebook_is_422_and_not_written);
    tcase_add_test(t, another_users_private_project_is_404_everywhere);
    tcase_add_test(t, non_owner_changes_to_a_public_project_are_403);
    tcase_add_test(t, missing_and_wrong_typed_fields_are_400);
    tcase_add_test(t, storage_limit_answers_402_and_writes_nothing);
    tcase_add_test(t, etags_304_and_412_on_a_stale_write);
    tcase_add_test(t, versions_keep_large_and_ignored_files_out_and_restore_modes);
    tcase_add_test(t, project_names_are_unique_per_owner);
    tcase_add_test(t, diff_between_versions_is_notebook_aware);
    suite_add_tcase(s, t);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(projects_suite());
    int failed;

    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
