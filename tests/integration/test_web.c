/* The web app's static files (gateway/static.c) over the real `eddy serve`,
 * from a small built-app fixture given with EDDY_WEB_DIR: index.html for the
 * app's routes with a CSP, hashed assets cached for a year with the right
 * content type, gzip copies when accepted, no way out of the directory, and
 * /api/ paths untouched. */
#include "harness.h"

#include <check.h>
#include <curl/curl.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static it_server srv;
static char web[256];
static char env_web[300];

static void put(const char *rel, const char *data, size_t n)
{
    char path[512];
    FILE *f;

    snprintf(path, sizeof(path), "%s/%s", web, rel);
    ck_assert_ptr_nonnull(f = fopen(path, "wb"));
    ck_assert_uint_eq(fwrite(data, 1, n, f), n);
    fclose(f);
}

/* A fixture like `npm run build` writes: index.html, hashed assets with .gz
 * copies, an icon, plus things that must never be served. */
static void start_with_app(void)
{
    static const char gz[] = "\x1f\x8b\x08\x00gzip-bytes";
    char p[512];

    snprintf(web, sizeof(web), "/tmp/eddy-web-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(web));
    snprintf(p, sizeof(p), "%s/assets", web);
    ck_assert_int_eq(mkdir(p, 0755), 0);
    put("index.html", "<!doctype html><title>Eddy</title>", 35);
    put("assets/index-AbC123.js", "console.log(1)", 14);
    put("assets/index-AbC123.js.gz", gz, sizeof(gz) - 1);
    put("assets/index-AbC123.css", "body{}", 6);
    put("assets/.secret", "hidden", 6);
    put("favicon.svg", "<svg/>", 6);
    snprintf(p, sizeof(p), "%s/assets/link.js", web);
    ck_assert_int_eq(symlink("/etc/passwd", p), 0);
    snprintf(env_web, sizeof(env_web), "EDDY_WEB_DIR=%s", web);
    it_share_with_server(web);      /* the server serves as eddy when started as root */
    const char *env[] = {env_web, NULL};
    ck_assert_msg(it_server_start(&srv, env) == 0, "server did not start");
}

static void stop(void)
{
    char cmd[300];

    ck_assert_int_eq(it_server_stop(&srv), 0);
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", web);
    ck_assert_int_eq(system(cmd), 0);
}

static long status_of(const char *method, const char *path, const char *const *hdrs)
{
    it_resp r;
    long st;

    ck_assert_int_eq(it_request(&r, &srv, method, path, NULL, hdrs), 0);
    st = r.status;
    it_resp_free(&r);
    return st;
}

START_TEST(app_routes_answer_index_html_with_csp_and_no_cache)
{
    static const char *const paths[] = {"/", "/login", "/signup", "/projects", "/projects/p1/notebook/a.ipynb",
                                        "/account", "/admin", "/jobs", "/jobs/7", "/datasets",
                                        "/datasets/alice/mnist"};
    it_resp r;

    start_with_app();
    for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
        ck_assert_int_eq(it_request(&r, &srv, "GET", paths[i], NULL, NULL), 0);
        ck_assert_msg(r.status == 200, "%s: %ld", paths[i], r.status);
        ck_assert_str_eq(r.body, "<!doctype html><title>Eddy</title>");
        ck_assert_str_eq(it_resp_header(&r, "Content-Type"), "text/html; charset=utf-8");
        ck_assert_str_eq(it_resp_header(&r, "Cache-Control"), "no-cache");
        const char *csp = it_resp_header(&r, "Content-Security-Policy");
        ck_assert_ptr_nonnull(csp);
        ck_assert_ptr_nonnull(strstr(csp, "script-src 'self'"));
        ck_assert_ptr_nonnull(strstr(csp, "object-src 'none'"));
        ck_assert_ptr_nonnull(strstr(csp, "frame-ancestors 'none'"));
        it_resp_free(&r);
    }
    stop();
}
END_TEST

START_TEST(hashed_assets_are_cached_for_a_year_with_their_type)
{
    it_resp r;

    start_with_app();
    ck_assert_int_eq(it_request(&r, &srv, "GET", "/assets/index-AbC123.js", NULL, NULL), 0);
    ck_assert_int_eq(r.status, 200);
    ck_assert_str_eq(r.body, "console.log(1)");
    ck_assert_str_eq(it_resp_header(&r, "Content-Type"), "text/javascript; charset=utf-8");
    ck_assert_str_eq(it_resp_header(&r, "Cache-Control"), "public, max-age=31536000, immutable");
    ck_assert_ptr_null(it_resp_header(&r, "Content-Security-Policy"));
    ck_assert_ptr_null(it_resp_header(&r, "Content-Encoding"));
    it_resp_free(&r);
    ck_assert_int_eq(it_request(&r, &srv, "GET", "/assets/index-AbC123.css", NULL, NULL), 0);
    ck_assert_str_eq(it_resp_header(&r, "Content-Type"), "text/css; charset=utf-8");
    it_resp_free(&r);
    ck_assert_int_eq(it_request(&r, &srv, "GET", "/favicon.svg", NULL, NULL), 0);
    ck_assert_int_eq(r.status, 200);
    ck_assert_str_eq(it_resp_header(&r, "Content-Type"), "image/svg+xml");
    it_resp_free(&r);
    stop();
}
END_TEST

START_TEST(gzip_copy_is_sent_only_when_accepted)
{
    const char *const hdrs[] = {"Accept-Encoding: gzip, deflate", NULL};
    it_resp r;

    start_with_app();
    ck_assert_int_eq(it_request(&r, &srv, "GET", "/assets/index-AbC123.js", NULL, hdrs), 0);
    ck_assert_int_eq(r.status, 200);
    ck_assert_str_eq(it_resp_header(&r, "Content-Encoding"), "gzip");
    ck_assert_str_eq(it_resp_header(&r, "Vary"), "Accept-Encoding");
    ck_assert_int_eq((unsigned char)r.body[0], 0x1f);
    ck_assert_int_eq((unsigned char)r.body[1], 0x8b);
    it_resp_free(&r);
    /* No .gz next to the CSS: the plain file even when gzip is accepted. */
    ck_assert_int_eq(it_request(&r, &srv, "GET", "/assets/index-AbC123.css", NULL, hdrs), 0);
    ck_assert_ptr_null(it_resp_header(&r, "Content-Encoding"));
    ck_assert_str_eq(r.body, "body{}");
    it_resp_free(&r);
    stop();
}
END_TEST

START_TEST(nothing_outside_the_app_or_hidden_is_served)
{
    static const char *const bad[] = {
        "/assets/%2e%2e/index.html", "/assets/%2E%2E/%2E%2E/etc/passwd", "/assets/..%2findex.html",
        "/assets/.secret", "/assets/link.js", "/assets/nope.js", "/assets/a%5cb.js", "/assets/index-AbC123.js/x",
    };
    it_resp r;

    start_with_app();
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        ck_assert_int_eq(it_request(&r, &srv, "GET", bad[i], NULL, NULL), 0);
        ck_assert_msg(r.status == 404, "%s: %ld", bad[i], r.status);
        ck_assert_str_eq(it_resp_error_code(&r), "not_found");
        ck_assert_ptr_null(strstr(r.body, "root:"));
        it_resp_free(&r);
    }
    stop();
}
END_TEST

START_TEST(api_paths_and_other_methods_are_untouched)
{
    it_resp r;

    start_with_app();
    ck_assert_int_eq(it_request(&r, &srv, "GET", "/api/v1/no-such-thing", NULL, NULL), 0);
    ck_assert_int_eq(r.status, 404);
    ck_assert_str_eq(it_resp_error_code(&r), "not_found");
    it_resp_free(&r);
    ck_assert_int_eq(status_of("GET", "/no-such-page", NULL), 404);
    ck_assert_int_eq(status_of("POST", "/api/v1/no-such-thing", NULL), 404);
    ck_assert_int_eq(it_request(&r, &srv, "POST", "/projects", "{}", NULL), 0);
    ck_assert_int_eq(r.status, 405);
    ck_assert_str_eq(it_resp_header(&r, "Allow"), "GET");
    it_resp_free(&r);
    ck_assert_int_eq(status_of("GET", "/api/v1/version", NULL), 200);
    stop();
}
END_TEST

START_TEST(missing_build_is_a_clear_503)
{
    it_resp r;
    const char *env[] = {"EDDY_WEB_DIR=/nonexistent/eddy-web-dist", NULL};

    ck_assert_msg(it_server_start(&srv, env) == 0, "server did not start");
    ck_assert_int_eq(it_request(&r, &srv, "GET", "/projects", NULL, NULL), 0);
    ck_assert_int_eq(r.status, 503);
    ck_assert_str_eq(it_resp_error_code(&r), "unavailable");
    ck_assert_ptr_nonnull(strstr(r.body, "not built"));
    it_resp_free(&r);
    ck_assert_int_eq(status_of("GET", "/assets/index-AbC123.js", NULL), 404);
    ck_assert_int_eq(it_server_stop(&srv), 0);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("web");
    TCase *t = tcase_create("static");

    tcase_set_timeout(t, 60);
    tcase_add_test(t, app_routes_answer_index_html_with_csp_and_no_cache);
    tcase_add_test(t, hashed_assets_are_cached_for_a_year_with_their_type);
    tcase_add_test(t, gzip_copy_is_sent_only_when_accepted);
    tcase_add_test(t, nothing_outside_the_app_or_hidden_is_served);
    tcase_add_test(t, api_paths_and_other_methods_are_untouched);
    tcase_add_test(t, missing_build_is_a_clear_503);
    suite_add_tcase(s, t);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(suite());
    int failed;

    curl_global_init(CURL_GLOBAL_ALL);
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    curl_global_cleanup();
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
