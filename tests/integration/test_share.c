/* Sharing and export over HTTP against the real `eddy serve`: a public
 * project's page, file list, files and exports answer without signing in; a
 * private one answers 404 to an anonymous caller exactly as to a stranger
 * (never 401, which would say it exists); writes, versions, diffs and forks
 * stay 401 without a credential; anonymous reads are limited per address
 * (429 + Retry-After); GET .../export/{path}?format=py|ipynb gives the
 * percent-format script or the notebook as a download. */
#include "harness.h"

#include <check.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static it_server srv;

typedef struct user {
    char cookie[512];
    char csrf[256];
} user;

static void setup(void) { ck_assert_int_eq(it_server_start(&srv, NULL), 0); }
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

/* One request as `u` (NULL: anonymous, no headers at all). */
static void call(it_resp *r, user *u, const char *method, const char *body, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static void call(it_resp *r, user *u, const char *method, const char *body, const char *fmt, ...)
{
    char path[2048];
    const char *hdrs[] = {u ? u->cookie : NULL, u ? u->csrf : NULL, NULL};
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(path, sizeof(path), fmt, ap);
    va_end(ap);
    ck_assert_int_eq(it_request_n(r, &srv, method, path, body, -1, u ? hdrs : NULL), 0);
}

static void create(char *id, user *u, const char *name, const char *vis)
{
    it_resp r;
    char body[256];

    snprintf(body, sizeof(body), "{\"name\":\"%s\",\"visibility\":\"%s\"}", name, vis);
    call(&r, u, "POST", body, "/api/v1/projects");
    ck_assert_msg(r.status == 201, "create: %ld %s", r.status, r.body);
    snprintf(id, 14, "%s", json_string_value(json_object_get(r.json, "id")));
    it_resp_free(&r);
}

#define NB                                                                                        \
    "{\"nbformat\":4,\"nbformat_minor\":5,\"metadata\":{},\"cells\":["                            \
    "{\"cell_type\":\"markdown\",\"id\":\"m1\",\"metadata\":{},\"source\":\"# Shared notes\"},"   \
    "{\"cell_type\":\"code\",\"id\":\"c1\",\"metadata\":{},\"execution_count\":1,"               \
    "\"source\":[\"%pip install rich\\n\",\"print('hello')\"],"                                   \
    "\"outputs\":[{\"output_type\":\"stream\",\"name\":\"stdout\",\"text\":\"hello-share\\n\"}]}]}"

static void put_nb(user *u, const char *id, const char *path, const char *body)
{
    it_resp r;

    call(&r, u, "PUT", body, "/api/v1/projects/%s/files/%s", id, path);
    ck_assert_msg(r.status == 201 || r.status == 200, "put: %ld %s", r.status, r.body);
    it_resp_free(&r);
}

static void expect(long status, const char *code, user *u, const char *method, const char *body,
                   const char *path)
{
    it_resp r;

    call(&r, u, method, body, "%s", path);
    ck_assert_msg(r.status == status, "%s %s: %ld %s (expected %ld)", method, path, r.status, r.body,
                  status);
    if (code)
        ck_assert_str_eq(it_resp_error_code(&r), code);
    it_resp_free(&r);
}

START_TEST(anonymous_reads_a_public_project_and_gets_404_for_a_private_one)
{
    user alice;
    char pub[14], priv[14], path[256];
    it_resp r;

    sign_in(&alice, "alice");
    create(pub, &alice, "shared", "public");
    create(priv, &alice, "secret", "private");
    put_nb(&alice, pub, "nb/demo.ipynb", NB);
    put_nb(&alice, priv, "nb/demo.ipynb", NB);

    call(&r, NULL, "GET", NULL, "/api/v1/projects/%s", pub);
    ck_assert_msg(r.status == 200, "%ld %s", r.status, r.body);
    ck_assert_str_eq(json_string_value(json_object_get(r.json, "visibility")), "public");
    ck_assert_str_eq(json_string_value(json_object_get(r.json, "owner")), "alice");
    it_resp_free(&r);
    call(&r, NULL, "GET", NULL, "/api/v1/projects/%s/files", pub);
    ck_assert_int_eq(r.status, 200);
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(json_object_get(r.json, "items"), 0),
                                                       "path")), "nb/demo.ipynb");
    it_resp_free(&r);
    call(&r, NULL, "GET", NULL, "/api/v1/projects/%s/files/nb/demo.ipynb", pub);
    ck_assert_int_eq(r.status, 200);
    ck_assert_str_eq(r.body, NB);
    ck_assert_ptr_nonnull(it_resp_header(&r, "ETag"));
    it_resp_free(&r);

    /* private: 404, the same answer as for a project that does not exist */
    snprintf(path, sizeof(path), "/api/v1/projects/%s", priv);
    expect(404, "not_found", NULL, "GET", NULL, path);
    snprintf(path, sizeof(path), "/api/v1/projects/%s/files", priv);
    expect(404, "not_found", NULL, "GET", NULL, path);
    snprintf(path, sizeof(path), "/api/v1/projects/%s/files/nb/demo.ipynb", priv);
    expect(404, "not_found", NULL, "GET", NULL, path);
    snprintf(path, sizeof(path), "/api/v1/projects/%s/export/nb/demo.ipynb?format=py", priv);
    expect(404, "not_found", NULL, "GET", NULL, path);
    expect(404, "not_found", NULL, "GET", NULL, "/api/v1/projects/pAAAAAAAAAAAA");
    /* the listing of projects still needs a sign-in */
    expect(401, "unauthorized", NULL, "GET", NULL, "/api/v1/projects");

    /* a stale session cookie reads as anonymous, not as a failure */
    {
        const char *stale[] = {"Cookie: eddy_session=not-a-session", NULL};
        char p2[128];
        snprintf(p2, sizeof(p2), "/api/v1/projects/%s", pub);
        ck_assert_int_eq(it_request_n(&r, &srv, "GET", p2, NULL, 0, stale), 0);
        ck_assert_msg(r.status == 200, "%ld %s", r.status, r.body);
        it_resp_free(&r);
        snprintf(p2, sizeof(p2), "/api/v1/projects/%s", priv);
        ck_assert_int_eq(it_request_n(&r, &srv, "GET", p2, NULL, 0, stale), 0);
        ck_assert_int_eq(r.status, 404);
        it_resp_free(&r);
    }
    /* a wrong API key is still refused (credentials given are checked) */
    {
        const char *bad[] = {"Authorization: Bearer nope", NULL};
        char p2[128];
        snprintf(p2, sizeof(p2), "/api/v1/projects/%s", pub);
        ck_assert_int_eq(it_request_n(&r, &srv, "GET", p2, NULL, 0, bad), 0);
        ck_assert_int_eq(r.status, 401);
        it_resp_free(&r);
    }
    /* the owner still reads the private one */
    call(&r, &alice, "GET", NULL, "/api/v1/projects/%s/files/nb/demo.ipynb", priv);
    ck_assert_int_eq(r.status, 200);
    it_resp_free(&r);
}
END_TEST

START_TEST(anonymous_writes_versions_diffs_and_forks_are_401)
{
    user alice;
    char pub[14], path[256];
    it_resp r;
    static const struct {
        const char *method, *suffix, *body;
    } cases[] = {
        {"PUT", "/files/nb/demo.ipynb", "{}"},
        {"PUT", "/files/new.txt", "x"},
        {"DELETE", "/files/nb/demo.ipynb", NULL},
        {"POST", "/versions", "{\"message\":\"x\"}"},
        {"GET", "/versions", NULL},
        {"GET", "/diff?path=nb/demo.ipynb&from=working&to=working", NULL},
        {"POST", "/fork", NULL},
        {"PATCH", "", "{\"visibility\":\"private\"}"},
        {"DELETE", "", NULL},
    };

    sign_in(&alice, "alice");
    create(pub, &alice, "shared", "public");
    put_nb(&alice, pub, "nb/demo.ipynb", NB);
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        snprintf(path, sizeof(path), "/api/v1/projects/%s%s", pub, cases[i].suffix);
        expect(401, "unauthorized", NULL, cases[i].method, cases[i].body, path);
    }
    expect(401, "unauthorized", NULL, "POST", "{\"name\":\"x\",\"visibility\":\"public\"}",
           "/api/v1/projects");
    /* nothing changed */
    call(&r, &alice, "GET", NULL, "/api/v1/projects/%s/files/nb/demo.ipynb", pub);
    ck_assert_int_eq(r.status, 200);
    ck_assert_str_eq(r.body, NB);
    it_resp_free(&r);
    call(&r, &alice, "GET", NULL, "/api/v1/projects/%s", pub);
    ck_assert_str_eq(json_string_value(json_object_get(r.json, "visibility")), "public");
    it_resp_free(&r);
}
END_TEST

START_TEST(export_py_and_ipynb_as_downloads)
{
    user alice, bob;
    char pub[14], priv[14], path[256], vid[41];
    const char *cd;
    it_resp r;

    sign_in(&alice, "alice");
    sign_in(&bob, "bob");
    create(pub, &alice, "shared", "public");
    create(priv, &alice, "secret", "private");
    put_nb(&alice, pub, "nb/demo.ipynb", NB);
    put_nb(&alice, priv, "x.ipynb", NB);

    call(&r, NULL, "GET", NULL, "/api/v1/projects/%s/export/nb/demo.ipynb?format=py", pub);
    ck_assert_msg(r.status == 200, "%ld %s", r.status, r.body);
    ck_assert_str_eq(r.body, "# %% [markdown]\n# # Shared notes\n\n# %%\n# %pip install rich\n"
                             "print('hello')\n");
    ck_assert(strstr(it_resp_header(&r, "Content-Type"), "text/x-python") != NULL);
    cd = it_resp_header(&r, "Content-Disposition");
    ck_assert_ptr_nonnull(cd);
    ck_assert_msg(strstr(cd, "attachment; filename=\"demo.py\"") != NULL, "%s", cd);
    it_resp_free(&r);
    call(&r, &bob, "GET", NULL, "/api/v1/projects/%s/export/nb/demo.ipynb?format=ipynb", pub);
    ck_assert_int_eq(r.status, 200);
    ck_assert_str_eq(r.body, NB);
    ck_assert(strstr(it_resp_header(&r, "Content-Disposition"), "filename=\"demo.ipynb\"") != NULL);
    it_resp_free(&r);
    /* the owner exports a private one; a stranger gets 404 */
    call(&r, &alice, "GET", NULL, "/api/v1/projects/%s/export/x.ipynb?format=py", priv);
    ck_assert_int_eq(r.status, 200);
    it_resp_free(&r);
    snprintf(path, sizeof(path), "/api/v1/projects/%s/export/x.ipynb?format=py", priv);
    expect(404, "not_found", &bob, "GET", NULL, path);

    /* bad requests say what to do */
    snprintf(path, sizeof(path), "/api/v1/projects/%s/export/nb/demo.ipynb", pub);
    expect(400, "bad_request", NULL, "GET", NULL, path);
    snprintf(path, sizeof(path), "/api/v1/projects/%s/export/nb/demo.ipynb?format=html", pub);
    call(&r, NULL, "GET", NULL, "%s", path);
    ck_assert_int_eq(r.status, 400);
    ck_assert(strstr(r.body, "web app") != NULL);
    it_resp_free(&r);
    put_nb(&alice, pub, "notes.txt", "plain");
    snprintf(path, sizeof(path), "/api/v1/projects/%s/export/notes.txt?format=py", pub);
    expect(422, "unprocessable", NULL, "GET", NULL, path);
    snprintf(path, sizeof(path), "/api/v1/projects/%s/export/gone.ipynb?format=py", pub);
    expect(404, "not_found", NULL, "GET", NULL, path);

    /* ?version= exports the notebook as it was */
    call(&r, &alice, "POST", "{\"message\":\"v1\"}", "/api/v1/projects/%s/versions", pub);
    ck_assert_int_eq(r.status, 201);
    snprintf(vid, sizeof(vid), "%s", json_string_value(json_object_get(r.json, "id")));
    it_resp_free(&r);
    put_nb(&alice, pub, "nb/demo.ipynb",
           "{\"nbformat\":4,\"nbformat_minor\":4,\"metadata\":{},\"cells\":[{\"cell_type\":\"code\","
           "\"metadata\":{},\"execution_count\":null,\"source\":\"x = 2\",\"outputs\":[]}]}");
    call(&r, NULL, "GET", NULL, "/api/v1/projects/%s/export/nb/demo.ipynb?format=py", pub);
    ck_assert_str_eq(r.body, "# %%\nx = 2\n");
    it_resp_free(&r);
    call(&r, NULL, "GET", NULL, "/api/v1/projects/%s/export/nb/demo.ipynb?format=py&version=%s", pub,
         vid);
    ck_assert_int_eq(r.status, 200);
    ck_assert(strstr(r.body, "# # Shared notes") != NULL);
    it_resp_free(&r);
}
END_TEST

START_TEST(import_refusal_names_the_cell)
{
    user alice;
    char id[14];
    it_resp r;

    sign_in(&alice, "alice");
    create(id, &alice, "imports", "private");
    call(&r, &alice, "PUT",
         "{\"nbformat\":4,\"nbformat_minor\":5,\"metadata\":{},\"cells\":[{\"cell_type\":\"markdown\","
         "\"id\":\"a\",\"metadata\":{},\"source\":\"\"},{\"cell_type\":\"code\",\"id\":\"abc\","
         "\"metadata\":{},\"source\":\"\",\"execution_count\":null,\"outputs\":[{\"output_type\":"
         "\"pdf\"}]}]}",
         "/api/v1/projects/%s/files/bad.ipynb", id);
    ck_assert_int_eq(r.status, 422);
    ck_assert_msg(strstr(r.body, "cell 2 (id abc) at cells[1].outputs[0]: output_type must be one of") != NULL,
                  "%s", r.body);
    it_resp_free(&r);
    call(&r, &alice, "PUT", "{\"nbformat\":3,\"nbformat_minor\":0,\"metadata\":{},\"worksheets\":[]}",
         "/api/v1/projects/%s/files/old.ipynb", id);
    ck_assert_int_eq(r.status, 422);
    ck_assert(strstr(r.body, "jupyter nbconvert --to notebook --nbformat 4") != NULL);
    it_resp_free(&r);
}
END_TEST

START_TEST(anonymous_reads_are_limited_per_address)
{
    user alice;
    char pub[14], path[128];
    it_resp r;
    long last = 0;
    int ok = 0;

    ck_assert_int_eq(it_server_stop(&srv), 0);
    {
        const char *env[] = {"EDDY_DEFAULT_KEY_RATE_PER_MIN=5", NULL};
        ck_assert_int_eq(it_server_start(&srv, env), 0);
    }
    sign_in(&alice, "alice");
    create(pub, &alice, "shared", "public");
    snprintf(path, sizeof(path), "/api/v1/projects/%s", pub);
    for (int i = 0; i < 8 && last != 429; i++) {
        call(&r, NULL, "GET", NULL, "%s", path);
        last = r.status;
        if (last == 200)
            ok++;
        else {
            ck_assert_int_eq(last, 429);
            ck_assert_str_eq(it_resp_error_code(&r), "rate_limited");
            ck_assert_ptr_nonnull(it_resp_header(&r, "Retry-After"));
        }
        it_resp_free(&r);
    }
    ck_assert_int_eq(ok, 5);
    ck_assert_int_eq(last, 429);
    /* signed in, the same address is not limited by it */
    call(&r, &alice, "GET", NULL, "%s", path);
    ck_assert_int_eq(r.status, 200);
    it_resp_free(&r);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("it_share");
    TCase *t = tcase_create("share");
    SRunner *sr;
    int failed;

    tcase_add_checked_fixture(t, setup, teardown);
    tcase_set_timeout(t, 120);
    tcase_add_test(t, anonymous_reads_a_public_project_and_gets_404_for_a_private_one);
    tcase_add_test(t, anonymous_writes_versions_diffs_and_forks_are_401);
    tcase_add_test(t, export_py_and_ipynb_as_downloads);
    tcase_add_test(t, import_refusal_names_the_cell);
    tcase_add_test(t, anonymous_reads_are_limited_per_address);
    suite_add_tcase(s, t);
    sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
