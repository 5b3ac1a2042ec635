/* The file browser's tree routes over the real `eddy serve`
 * (gateway/files_routes.c): PATCH .../files/{path} (move or rename a file or
 * a folder), POST and DELETE .../dirs/{path} (folders), GET .../files?dirs=1
 * (empty folders listed, ETag and 304), each error they answer, access by
 * other users, what is on disk afterwards, and Jupyter's contents API making,
 * renaming and deleting real folders through them. */
#include "harness.h"

#include <check.h>
#include <dirent.h>
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

static user alice, bob;

static void sign_in(user *u, const char *name)
{
    char *cookie = NULL, *csrf = NULL;

    ck_assert_int_eq(it_signup_login(&srv, name, "correct horse battery", &cookie, &csrf), 0);
    snprintf(u->cookie, sizeof(u->cookie), "Cookie: %s", cookie);
    snprintf(u->csrf, sizeof(u->csrf), "X-CSRF-Token: %s", csrf);
    free(cookie);
    free(csrf);
}

static void setup(void)
{
    ck_assert_int_eq(it_server_start(&srv, NULL), 0);
    sign_in(&alice, "alice");
    sign_in(&bob, "bob");
}

static void teardown(void) { ck_assert_int_eq(it_server_stop(&srv), 0); }

/* One request as `u` with one extra header (may be NULL); the path is
 * printf-formatted. Returns the status. */
static long callh(it_resp *r, user *u, const char *extra, const char *method, const char *body,
                  const char *fmt, ...) __attribute__((format(printf, 6, 7)));
static long callh(it_resp *r, user *u, const char *extra, const char *method, const char *body,
                  const char *fmt, ...)
{
    char path[4096];
    const char *hdrs[] = {u->cookie, u->csrf, extra, NULL};
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(path, sizeof(path), fmt, ap);
    va_end(ap);
    ck_assert_int_eq(it_request_n(r, &srv, method, path, body, body ? -1 : 0, hdrs), 0);
    return r->status;
}

#define call(r, u, method, body, ...) callh(r, u, NULL, method, body, __VA_ARGS__)

/* The status alone. */
static long status(user *u, const char *method, const char *body, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static long status(user *u, const char *method, const char *body, const char *fmt, ...)
{
    char path[4096];
    it_resp r;
    long st;
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(path, sizeof(path), fmt, ap);
    va_end(ap);
    st = call(&r, u, method, body, "%s", path);
    it_resp_free(&r);
    return st;
}

static const char *str(const it_resp *r, const char *key)
{
    return r->json ? json_string_value(json_object_get(r->json, key)) : NULL;
}

static void create(char *id, user *u, const char *name, const char *vis)
{
    it_resp r;
    char body[256];

    snprintf(body, sizeof(body), "{\"name\":\"%s\",\"visibility\":\"%s\"}", name, vis);
    ck_assert_int_eq(call(&r, u, "POST", body, "/api/v1/projects"), 201);
    snprintf(id, 14, "%s", str(&r, "id"));
    it_resp_free(&r);
}

static void put(user *u, const char *id, const char *path, const char *text)
{
    long st = status(u, "PUT", text, "/api/v1/projects/%s/files/%s", id, path);
    ck_assert_msg(st == 201 || st == 200, "PUT %s: %ld", path, st);
}

/* The item of a file list with `path`, or NULL. */
static json_t *item(const it_resp *r, const char *path)
{
    json_t *items = json_object_get(r->json, "items"), *it;
    size_t i;

    json_array_foreach(items, i, it)
        if (strcmp(json_string_value(json_object_get(it, "path")), path) == 0)
            return it;
    return NULL;
}

static const char *on_disk(const char *id, const char *rel)
{
    static char buf[1024];
    snprintf(buf, sizeof(buf), "%s/projects/%s/%s", srv.data_dir, id, rel);
    return buf;
}

static bool is_dir(const char *path)
{
    struct stat sb;
    return lstat(path, &sb) == 0 && S_ISDIR(sb.st_mode);
}

static bool exists(const char *path)
{
    struct stat sb;
    return lstat(path, &sb) == 0;
}

/* The error code of r must be `code`. */
static void error_is(const it_resp *r, long st, const char *code)
{
    ck_assert_msg(r->status == st, "status %ld, want %ld: %s", r->status, st, r->body);
    ck_assert_str_eq(it_resp_error_code(r), code);
}

START_TEST(folders_are_made_listed_and_removed)
{
    char id[14];
    it_resp r;

    create(id, &alice, "tree", "private");
    put(&alice, id, "a.txt", "hello");
    ck_assert_int_eq(call(&r, &alice, "POST", NULL, "/api/v1/projects/%s/dirs/data/raw", id), 201);
    ck_assert_str_eq(str(&r, "path"), "data/raw");
    ck_assert_str_eq(str(&r, "type"), "directory");
    it_resp_free(&r);
    ck_assert(is_dir(on_disk(id, "data/raw")));
    ck_assert(!exists(on_disk(id, "data/raw/.keep")));
    /* again: 409; a file's name: 409; under a file: 409 */
    call(&r, &alice, "POST", NULL, "/api/v1/projects/%s/dirs/data/raw", id);
    error_is(&r, 409, "conflict");
    it_resp_free(&r);
    ck_assert_int_eq(status(&alice, "POST", NULL, "/api/v1/projects/%s/dirs/a.txt", id), 409);
    ck_assert_int_eq(status(&alice, "POST", NULL, "/api/v1/projects/%s/dirs/a.txt/x", id), 409);
    /* bad paths: 422 */
    call(&r, &alice, "POST", NULL, "/api/v1/projects/%s/dirs/x/..%%2F..%%2Fy", id);
    ck_assert_msg(r.status == 422 || r.status == 400, "%ld %s", r.status, r.body);
    it_resp_free(&r);
    call(&r, &alice, "POST", NULL, "/api/v1/projects/%s/dirs/.git/hooks2", id);
    error_is(&r, 422, "unprocessable");
    it_resp_free(&r);

    /* the list: folders with ?dirs=1 only, each item typed */
    ck_assert_int_eq(call(&r, &alice, "GET", NULL, "/api/v1/projects/%s/files?dirs=1", id), 200);
    ck_assert_ptr_nonnull(item(&r, "data/raw"));
    ck_assert_str_eq(json_string_value(json_object_get(item(&r, "data/raw"), "type")), "directory");
    ck_assert_str_eq(json_string_value(json_object_get(item(&r, "a.txt"), "type")), "file");
    ck_assert_int_eq(json_integer_value(json_object_get(item(&r, "a.txt"), "size")), 5);
    ck_assert_ptr_null(item(&r, ".git"));
    it_resp_free(&r);
    ck_assert_int_eq(call(&r, &alice, "GET", NULL, "/api/v1/projects/%s/files", id), 200);
    ck_assert_ptr_null(item(&r, "data/raw"));
    ck_assert_ptr_nonnull(item(&r, "a.txt"));
    it_resp_free(&r);

    /* delete: recursive; then 404; a file is not a folder; the root: 422 */
    put(&alice, id, "data/raw/x.csv", "1,2");
    ck_assert_int_eq(status(&alice, "DELETE", NULL, "/api/v1/projects/%s/dirs/data", id), 204);
    ck_assert(!exists(on_disk(id, "data")));
    ck_assert_int_eq(status(&alice, "GET", NULL, "/api/v1/projects/%s/files/data/raw/x.csv", id),
                     404);
    ck_assert_int_eq(status(&alice, "DELETE", NULL, "/api/v1/projects/%s/dirs/data", id), 404);
    ck_assert_int_eq(status(&alice, "DELETE", NULL, "/api/v1/projects/%s/dirs/a.txt", id), 404);
    call(&r, &alice, "DELETE", NULL, "/api/v1/projects/%s/dirs", id);
    error_is(&r, 422, "unprocessable");
    it_resp_free(&r);
    ck_assert(is_dir(on_disk(id, ".git")));
    ck_assert(exists(on_disk(id, "a.txt")));
}
END_TEST

START_TEST(patch_moves_files_and_folders)
{
    char id[14];
    it_resp r;

    create(id, &alice, "mv", "private");
    put(&alice, id, "a.txt", "hello");
    put(&alice, id, "c.txt", "c");
    ck_assert_int_eq(call(&r, &alice, "PATCH", "{\"path\":\"data/b.txt\"}",
                          "/api/v1/projects/%s/files/a.txt", id), 200);
    ck_assert_str_eq(str(&r, "path"), "data/b.txt");
    ck_assert_str_eq(str(&r, "type"), "file");
    ck_assert_int_eq(json_integer_value(json_object_get(r.json, "size")), 5);
    it_resp_free(&r);
    ck_assert_int_eq(call(&r, &alice, "GET", NULL, "/api/v1/projects/%s/files/data/b.txt", id), 200);
    ck_assert_str_eq(r.body, "hello");
    it_resp_free(&r);
    ck_assert_int_eq(status(&alice, "GET", NULL, "/api/v1/projects/%s/files/a.txt", id), 404);

    /* errors: missing 404, target exists 409 (nothing replaced), bad target
     * 422, into itself 422, not JSON / no path 400, not a notebook 422 */
    call(&r, &alice, "PATCH", "{\"path\":\"z.txt\"}", "/api/v1/projects/%s/files/nope.txt", id);
    error_is(&r, 404, "not_found");
    it_resp_free(&r);
    call(&r, &alice, "PATCH", "{\"path\":\"data/b.txt\"}", "/api/v1/projects/%s/files/c.txt", id);
    error_is(&r, 409, "conflict");
    it_resp_free(&r);
    ck_assert_int_eq(call(&r, &alice, "GET", NULL, "/api/v1/projects/%s/files/data/b.txt", id), 200);
    ck_assert_str_eq(r.body, "hello");
    it_resp_free(&r);
    call(&r, &alice, "PATCH", "{\"path\":\"../escape.txt\"}", "/api/v1/projects/%s/files/c.txt", id);
    error_is(&r, 422, "unprocessable");
    it_resp_free(&r);
    call(&r, &alice, "PATCH", "{\"path\":\"/etc/x\"}", "/api/v1/projects/%s/files/c.txt", id);
    error_is(&r, 422, "unprocessable");
    it_resp_free(&r);
    call(&r, &alice, "PATCH", "{\"path\":\"data/inner/deeper\"}", "/api/v1/projects/%s/files/data",
         id);
    error_is(&r, 422, "unprocessable");
    it_resp_free(&r);
    ck_assert_int_eq(status(&alice, "PATCH", "not json", "/api/v1/projects/%s/files/c.txt", id), 400);
    ck_assert_int_eq(status(&alice, "PATCH", "{}", "/api/v1/projects/%s/files/c.txt", id), 400);
    ck_assert_int_eq(status(&alice, "PATCH", "{\"path\":7}", "/api/v1/projects/%s/files/c.txt", id),
                     400);
    call(&r, &alice, "PATCH", "{\"path\":\"c.ipynb\"}", "/api/v1/projects/%s/files/c.txt", id);
    error_is(&r, 422, "unprocessable");
    it_resp_free(&r);
    ck_assert(exists(on_disk(id, "c.txt")));
    ck_assert(!exists(on_disk(id, "c.ipynb")));
    ck_assert(!exists(on_disk(id, "data/inner")));

    /* a folder moves with everything in it */
    ck_assert_int_eq(call(&r, &alice, "PATCH", "{\"path\":\"moved/data2\"}",
                          "/api/v1/projects/%s/files/data", id), 200);
    ck_assert_str_eq(str(&r, "type"), "directory");
    it_resp_free(&r);
    ck_assert_int_eq(call(&r, &alice, "GET", NULL, "/api/v1/projects/%s/files/moved/data2/b.txt",
                          id), 200);
    ck_assert_str_eq(r.body, "hello");
    it_resp_free(&r);
    ck_assert(!exists(on_disk(id, "data")));
}
END_TEST

START_TEST(list_has_an_etag_and_answers_304)
{
    char id[14], etag[128], inm[160];
    it_resp r;

    create(id, &alice, "etag", "private");
    put(&alice, id, "a.txt", "a");
    ck_assert_int_eq(call(&r, &alice, "GET", NULL, "/api/v1/projects/%s/files?dirs=1", id), 200);
    ck_assert_ptr_nonnull(it_resp_header(&r, "ETag"));
    snprintf(etag, sizeof(etag), "%s", it_resp_header(&r, "ETag"));
    it_resp_free(&r);
    snprintf(inm, sizeof(inm), "If-None-Match: %s", etag);
    ck_assert_int_eq(callh(&r, &alice, inm, "GET", NULL, "/api/v1/projects/%s/files?dirs=1", id),
                     304);
    it_resp_free(&r);
    /* a new empty folder changes the list */
    ck_assert_int_eq(status(&alice, "POST", NULL, "/api/v1/projects/%s/dirs/new", id), 201);
    ck_assert_int_eq(callh(&r, &alice, inm, "GET", NULL, "/api/v1/projects/%s/files?dirs=1", id),
                     200);
    ck_assert_ptr_nonnull(item(&r, "new"));
    ck_assert_str_ne(it_resp_header(&r, "ETag"), etag);
    it_resp_free(&r);
}
END_TEST

START_TEST(other_users_cannot_change_the_tree)
{
    char priv[14], pub[14];

    create(priv, &alice, "priv", "private");
    create(pub, &alice, "pub", "public");
    put(&alice, priv, "a.txt", "a");
    put(&alice, pub, "a.txt", "a");
    ck_assert_int_eq(status(&bob, "PATCH", "{\"path\":\"b.txt\"}", "/api/v1/projects/%s/files/a.txt",
                            priv), 404);
    ck_assert_int_eq(status(&bob, "POST", NULL, "/api/v1/projects/%s/dirs/d", priv), 404);
    ck_assert_int_eq(status(&bob, "GET", NULL, "/api/v1/projects/%s/files?dirs=1", priv), 404);
    ck_assert_int_eq(status(&bob, "PATCH", "{\"path\":\"b.txt\"}", "/api/v1/projects/%s/files/a.txt",
                            pub), 403);
    ck_assert_int_eq(status(&bob, "POST", NULL, "/api/v1/projects/%s/dirs/d", pub), 403);
    ck_assert_int_eq(status(&bob, "DELETE", NULL, "/api/v1/projects/%s/dirs/d", pub), 403);
    ck_assert_int_eq(status(&bob, "GET", NULL, "/api/v1/projects/%s/files?dirs=1", pub), 200);
    ck_assert(exists(on_disk(pub, "a.txt")));
    ck_assert(!exists(on_disk(pub, "d")));
    ck_assert(!exists(on_disk(pub, "b.txt")));
}
END_TEST

/* Jupyter's contents API: a new folder is a real (empty) directory, a
 * folder rename is one move, a folder delete removes it. */
START_TEST(jupyter_contents_uses_real_folders)
{
    it_resp r;
    char id[14] = "";
    json_t *content, *it;
    size_t i;
    bool seen = false;

    ck_assert_int_eq(call(&r, &alice, "PUT", "{\"type\":\"directory\"}", "/api/contents/work"), 201);
    it_resp_free(&r);
    ck_assert_int_eq(call(&r, &alice, "GET", NULL, "/api/contents"), 200);
    content = json_object_get(r.json, "content");
    json_array_foreach(content, i, it)
        if (strcmp(json_string_value(json_object_get(it, "path")), "work") == 0) {
            ck_assert_str_eq(json_string_value(json_object_get(it, "type")), "directory");
            seen = true;
        }
    it_resp_free(&r);
    ck_assert(seen);
    /* the default project holds it as an empty directory */
    ck_assert_int_eq(call(&r, &alice, "GET", NULL, "/api/v1/projects"), 200);
    json_array_foreach(json_object_get(r.json, "items"), i, it)
        if (strcmp(json_string_value(json_object_get(it, "name")), "default") == 0)
            snprintf(id, sizeof(id), "%s", json_string_value(json_object_get(it, "id")));
    it_resp_free(&r);
    ck_assert_str_ne(id, "");
    ck_assert(is_dir(on_disk(id, "work")));
    ck_assert(!exists(on_disk(id, "work/.keep")));
    /* PUT of an existing folder: 200 */
    ck_assert_int_eq(status(&alice, "PUT", "{\"type\":\"directory\"}", "/api/contents/work"), 200);
    /* rename the folder with a file in it */
    put(&alice, id, "work/n.txt", "n");
    ck_assert_int_eq(call(&r, &alice, "PATCH", "{\"path\":\"renamed\"}", "/api/contents/work"), 200);
    ck_assert_str_eq(str(&r, "type"), "directory");
    it_resp_free(&r);
    ck_assert(!exists(on_disk(id, "work")));
    ck_assert(exists(on_disk(id, "renamed/n.txt")));
    ck_assert_int_eq(status(&alice, "DELETE", NULL, "/api/contents/renamed"), 204);
    ck_assert(!exists(on_disk(id, "renamed")));
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("tree_routes");
    TCase *tc = tcase_create("tree_routes");

    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, folders_are_made_listed_and_removed);
    tcase_add_test(tc, patch_moves_files_and_folders);
    tcase_add_test(tc, list_has_an_etag_and_answers_304);
    tcase_add_test(tc, other_users_cannot_change_the_tree);
    tcase_add_test(tc, jupyter_contents_uses_real_folders);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(suite());
    int failed;

    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
