/* Unit tests for the gateway core: router, configuration, error table. */
#include "gw_int.h"

#include "ed_error.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "../support/unit_util.h"

static int h_dummy(gw_request *req, gw_response *res)
{
    (void)req;
    return gw_respond_empty(res, 204);
}

static const gw_route t_meta[] = {
    {"GET", "/healthz", h_dummy, GW_PUBLIC, "health"},
    {NULL, NULL, NULL, 0, NULL},
};
static const gw_route t_proj[] = {
    {"GET", "/api/v1/projects", h_dummy, GW_AUTH, "list"},
    {"GET", "/api/v1/projects/{id}", h_dummy, GW_AUTH, "get"},
    {"DELETE", "/api/v1/projects/{id}", h_dummy, GW_AUTH, "delete"},
    {"GET", "/api/v1/projects/{id}/files", h_dummy, GW_AUTH, "files"},
    {"GET", "/api/v1/projects/{id}/files/{path*}", h_dummy, GW_AUTH, "read"},
    {"PUT", "/api/v1/projects/{id}/files/{path*}", h_dummy, GW_AUTH, "write"},
    {"POST", "/api/v1/projects/{id}/versions/{vid}/restore", h_dummy, GW_AUTH, "restore"},
    {NULL, NULL, NULL, 0, NULL},
};
static const gw_route *const tables[] = {t_meta, t_proj, NULL};

static ed_arena *arena;

static void setup(void) { arena = ed_arena_new(0); }
static void teardown(void) { ed_arena_free(arena); }

static int match(gw_route_match *m, const char *method, const char *path)
{
    return gw__route_match(m, tables, method, path, arena);
}

/* ---- router ---------------------------------------------------------------- */

START_TEST(router_matches_literal_path)
{
    gw_route_match m;
    ck_assert_int_eq(match(&m, "GET", "/healthz"), 0);
    ck_assert_ptr_eq(m.route, &t_meta[0]);
    ck_assert_int_eq(m.nparams, 0);
}
END_TEST

START_TEST(router_extracts_one_segment_params)
{
    gw_route_match m;
    ck_assert_int_eq(match(&m, "POST", "/api/v1/projects/42/versions/abc123/restore"), 0);
    ck_assert_ptr_eq(m.route, &t_proj[6]);
    ck_assert_int_eq(m.nparams, 2);
    ck_assert_str_eq(m.params[0], "42");
    ck_assert_str_eq(m.params[1], "abc123");
}
END_TEST

START_TEST(router_rest_param_takes_nested_path)
{
    gw_route_match m;
    ck_assert_int_eq(match(&m, "PUT", "/api/v1/projects/7/files/src/nb/a.ipynb"), 0);
    ck_assert_ptr_eq(m.route, &t_proj[5]);
    ck_assert_int_eq(m.nparams, 2);
    ck_assert_str_eq(m.params[0], "7");
    ck_assert_str_eq(m.params[1], "src/nb/a.ipynb");
}
END_TEST

START_TEST(router_percent_decodes_params)
{
    gw_route_match m;
    ck_assert_int_eq(match(&m, "GET", "/api/v1/projects/7/files/my%20dir/caf%C3%A9.py"), 0);
    ck_assert_str_eq(m.params[1], "my dir/caf\xc3\xa9.py");
    /* An encoded slash stays inside its segment: {id} gets "a/b". */
    ck_assert_int_eq(match(&m, "GET", "/api/v1/projects/a%2Fb"), 0);
    ck_assert_ptr_eq(m.route, &t_proj[1]);
    ck_assert_str_eq(m.params[0], "a/b");
    /* '+' is not a space in a path. */
    ck_assert_int_eq(match(&m, "GET", "/api/v1/projects/a+b"), 0);
    ck_assert_str_eq(m.params[0], "a+b");
    /* Literal segments compare decoded. */
    ck_assert_int_eq(match(&m, "GET", "/api/v%31/projects/5"), 0);
    ck_assert_ptr_eq(m.route, &t_proj[1]);
}
END_TEST

START_TEST(router_rejects_bad_escapes)
{
    gw_route_match m;
    ck_assert_int_eq(match(&m, "GET", "/api/v1/projects/%zz"), ED_EINVAL);
    ck_assert_int_eq(match(&m, "GET", "/api/v1/projects/%4"), ED_EINVAL);
    ck_assert_int_eq(match(&m, "GET", "/api/v1/projects/a%00b"), ED_EINVAL);
    ck_assert_int_eq(match(&m, "GET", "healthz"), ED_EINVAL);
}
END_TEST

START_TEST(router_unknown_path_is_404_without_allow)
{
    gw_route_match m;
    ck_assert_int_eq(match(&m, "GET", "/nope"), ED_ENOTFOUND);
    ck_assert_ptr_null(m.route);
    ck_assert_str_eq(m.allow, "");
    ck_assert_int_eq(match(&m, "GET", "/healthz/"), ED_ENOTFOUND);           /* trailing slash */
    ck_assert_int_eq(match(&m, "GET", "/api/v1/projects//files"), ED_ENOTFOUND); /* empty {id} */
    ck_assert_int_eq(match(&m, "GET", "/api/v1/projects/1/files/"), ED_ENOTFOUND); /* empty rest */
    ck_assert_int_eq(match(&m, "GET", "/api/v1/projects/1/extra"), ED_ENOTFOUND);
    ck_assert_str_eq(m.allow, "");
}
END_TEST

START_TEST(router_other_method_is_405_with_allow)
{
    gw_route_match m;
    ck_assert_int_eq(match(&m, "POST", "/healthz"), ED_ENOTFOUND);
    ck_assert_str_eq(m.allow, "GET");
    ck_assert_int_eq(match(&m, "DELETE", "/api/v1/projects/1/files/a.py"), ED_ENOTFOUND);
    ck_assert_str_eq(m.allow, "GET, PUT");
    ck_assert_int_eq(match(&m, "PATCH", "/api/v1/projects/9"), ED_ENOTFOUND);
    ck_assert_str_eq(m.allow, "GET, DELETE");
}
END_TEST

START_TEST(router_head_matches_get)
{
    gw_route_match m;
    ck_assert_int_eq(match(&m, "HEAD", "/api/v1/projects/3"), 0);
    ck_assert_ptr_eq(m.route, &t_proj[1]);
    ck_assert_str_eq(m.params[0], "3");
}
END_TEST

START_TEST(router_real_tables_serve_meta_routes)
{
    gw_route_match m;
    /* gw__routes_meta is not linked here; a table with the same shape is. */
    static const gw_route only[] = {{"GET", "/api/v1/version", h_dummy, 0, "v"},
                                    {NULL, NULL, NULL, 0, NULL}};
    static const gw_route *const t[] = {only, NULL};
    ck_assert_int_eq(gw__route_match(&m, t, "GET", "/api/v1/version", arena), 0);
    ck_assert_int_eq(gw__route_match(&m, t, "GET", "/api/v1/versions", arena), ED_ENOTFOUND);
}
END_TEST

/* ---- configuration ---------------------------------------------------------- */

static char conf_path[64];

static void write_conf(const char *text)
{
    snprintf(conf_path, sizeof(conf_path), "/tmp/eddy-conf-XXXXXX");
    int fd = mkstemp(conf_path);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
}

START_TEST(config_defaults_are_sane)
{
    gw_config c;
    gw_config_defaults(&c);
    ck_assert_str_eq(c.listen_host, "127.0.0.1");
    ck_assert_int_eq(c.listen_port, 8080);
    ck_assert_int_ge(c.threads, 2);
    ck_assert_int_gt(c.max_body_bytes, 0);
    ck_assert_int_ge(c.max_header_bytes, 1024);
    ck_assert(c.signup_open);
    ck_assert_str_eq(c.env_name, "prod");
}
END_TEST

START_TEST(config_file_sets_every_kind_of_value)
{
    gw_config c;
    gw_config_defaults(&c);
    write_conf("# Eddy\n\n"
               "data_dir = /srv/eddy data\n"
               "listen = 0.0.0.0:9090\n"
               "  threads=3  \n"
               "max_body_bytes = 2M\n"
               "signup_open = false\n"
               "env_name = \"test\"\n"
               "session_ttl_ms = 3600000\n");
    ck_assert_int_eq(gw_config_load_file(&c, conf_path), 0);
    unlink(conf_path);
    ck_assert_str_eq(c.data_dir, "/srv/eddy data");
    ck_assert_str_eq(c.listen_host, "0.0.0.0");
    ck_assert_int_eq(c.listen_port, 9090);
    ck_assert_int_eq(c.threads, 3);
    ck_assert_int_eq(c.max_body_bytes, 2 << 20);
    ck_assert(!c.signup_open);
    ck_assert_str_eq(c.env_name, "test");
    ck_assert_int_eq(c.session_ttl_ms, 3600000);
}
END_TEST

START_TEST(config_inline_comments_and_quotes)
{
    gw_config c;
    gw_config_defaults(&c);
    write_conf("threads = 5   # five\n"
               "data_dir = \"/srv/a # b\"  # quoted keeps '#'\n"
               "tls_cert = /etc/x#y.pem\n");
    ck_assert_int_eq(gw_config_load_file(&c, conf_path), 0);
    ck_assert_int_eq(c.threads, 5);
    ck_assert_str_eq(c.data_dir, "/srv/a # b");
    ck_assert_str_eq(c.tls_cert, "/etc/x#y.pem");
    unlink(conf_path);
    write_conf("data_dir = \"/srv/a\n");
    ck_assert_int_eq(gw_config_load_file(&c, conf_path), ED_EINVAL);
    ck_assert_ptr_nonnull(strstr(ed_error_last(), ":1:"));
    unlink(conf_path);
}
END_TEST

START_TEST(config_shipped_example_parses)
{
    gw_config c;
    gw_config_defaults(&c);
    ck_assert_msg(gw_config_load_file(&c, EDDY_SOURCE_DIR "/deploy/eddy.conf.example") == 0, "%s",
                  ed_error_last());
    ck_assert_str_eq(c.data_dir, "/var/lib/eddy");
    ck_assert_int_eq(c.max_body_bytes, INT64_C(64) << 20);
    ck_assert_int_eq(c.max_header_bytes, 16 << 10);
}
END_TEST

START_TEST(config_unknown_key_names_its_line)
{
    gw_config c, before;
    gw_config_defaults(&c);
    write_conf("threads = 4\n# comment\nlisten_prot = 80\n");
    before = c;
    ck_assert_int_eq(gw_config_load_file(&c, conf_path), ED_EINVAL);
    ck_assert_ptr_nonnull(strstr(ed_error_last(), ":3:"));
    ck_assert_ptr_nonnull(strstr(ed_error_last(), "listen_prot"));
    /* All or nothing: line 1 did not apply. */
    ck_assert_int_eq(memcmp(&c, &before, sizeof(c)), 0);
    unlink(conf_path);
}
END_TEST

START_TEST(config_bad_values_name_their_line)
{
    static const char *const bad[] = {"threads = lots\n", "listen_port = 70000\n",
                                      "signup_open = maybe\n", "env_name = staging\n",
                                      "max_body_bytes = 12Q\n", "listen = nohost\n",
                                      "threads 4\n", "max_header_bytes = 10\n"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        gw_config c;
        char text[128];
        gw_config_defaults(&c);
        snprintf(text, sizeof(text), "# first\n%s", bad[i]);
        write_conf(text);
        ck_assert_msg(gw_config_load_file(&c, conf_path) == ED_EINVAL, "accepted %s", bad[i]);
        ck_assert_msg(strstr(ed_error_last(), ":2:") != NULL, "%s -> %s", bad[i], ed_error_last());
        unlink(conf_path);
    }
}
END_TEST

START_TEST(config_missing_file_is_an_error)
{
    gw_config c;
    gw_config_defaults(&c);
    ck_assert_int_eq(gw_config_load_file(&c, "/nonexistent/eddy.conf"), ED_EINVAL);
    ck_assert_ptr_nonnull(strstr(ed_error_last(), "/nonexistent/eddy.conf"));
}
END_TEST

START_TEST(config_env_overrides_file_values)
{
    gw_config c;
    gw_config_defaults(&c);
    write_conf("threads = 4\nsignup_open = true\n");
    ck_assert_int_eq(gw_config_load_file(&c, conf_path), 0);
    unlink(conf_path);
    setenv("EDDY_THREADS", "6", 1);
    setenv("EDDY_SIGNUP_OPEN", "false", 1);
    setenv("EDDY_DATA_DIR", "/var/lib/eddy", 1);
    setenv("EDDY_LISTEN", "10.0.0.1:81", 1);
    setenv("EDDY_USER_STORAGE_BYTES", "1G", 1);
    ck_assert_int_eq(gw_config_apply_env(&c), 0);
    ck_assert_int_eq(c.threads, 6);
    ck_assert(!c.signup_open);
    ck_assert_str_eq(c.data_dir, "/var/lib/eddy");
    ck_assert_str_eq(c.listen_host, "10.0.0.1");
    ck_assert_int_eq(c.listen_port, 81);
    ck_assert_int_eq(c.user_storage_bytes, INT64_C(1) << 30);
    /* EDDY_LISTEN_PORT refines EDDY_LISTEN. */
    setenv("EDDY_LISTEN_PORT", "82", 1);
    ck_assert_int_eq(gw_config_apply_env(&c), 0);
    ck_assert_int_eq(c.listen_port, 82);
}
END_TEST

START_TEST(config_bad_env_names_the_variable)
{
    gw_config c, before;
    gw_config_defaults(&c);
    before = c;
    setenv("EDDY_THREADS", "8", 1);
    setenv("EDDY_MAX_CONNS_PER_IP", "-1", 1);
    ck_assert_int_eq(gw_config_apply_env(&c), ED_EINVAL);
    ck_assert_ptr_nonnull(strstr(ed_error_last(), "EDDY_MAX_CONNS_PER_IP"));
    ck_assert_int_eq(memcmp(&c, &before, sizeof(c)), 0);
    unsetenv("EDDY_MAX_CONNS_PER_IP");
    setenv("EDDY_LISTEN", "localhost", 1);
    ck_assert_int_eq(gw_config_apply_env(&c), ED_EINVAL);
    ck_assert_ptr_nonnull(strstr(ed_error_last(), "EDDY_LISTEN"));
}
END_TEST

START_TEST(config_listen_parses_host_and_port)
{
    gw_config c;
    gw_config_defaults(&c);
    ck_assert_int_eq(gw_config_set_listen(&c, "127.0.0.1:0"), 0);
    ck_assert_int_eq(c.listen_port, 0);
    ck_assert_int_eq(gw_config_set_listen(&c, "[::1]:8443"), 0);
    ck_assert_str_eq(c.listen_host, "::1");
    ck_assert_int_eq(c.listen_port, 8443);
    ck_assert_int_eq(gw_config_set_listen(&c, "example.org:80"), 0);
    ck_assert_str_eq(c.listen_host, "example.org");
    static const char *const bad[] = {"", "nohost", ":80", "h:", "h:99999", "h:8x", "a:b:c",
                                      "[::1]80", "h:-1"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        ck_assert_msg(gw_config_set_listen(&c, bad[i]) == ED_EINVAL, "accepted '%s'", bad[i]);
    ck_assert_str_eq(c.listen_host, "example.org");   /* unchanged by failures */
}
END_TEST

/* ---- errors ------------------------------------------------------------------ */

START_TEST(error_table_maps_codes_to_api_md)
{
    static const struct {
        int code, status;
        const char *name;
    } want[] = {
        {ED_EINVAL, 400, "bad_request"},       {ED_EAUTH, 401, "unauthorized"},
        {ED_EPERM, 403, "forbidden"},          {ED_ENOTFOUND, 404, "not_found"},
        {ED_EEXISTS, 409, "conflict"},         {ED_ECONFLICT, 409, "conflict"},
        {ED_ETOOBIG, 413, "payload_too_large"}, {ED_EUNPROC, 422, "unprocessable"},
        {ED_EQUOTA, 402, "quota_exceeded"},    {ED_ELIMIT, 429, "rate_limited"},
        {ED_EBUSY, 503, "unavailable"},        {ED_EIO, 500, "internal"},
        {ED_ENOMEM, 500, "internal"},          {ED_EINTERNAL, 500, "internal"},
        {-999, 500, "internal"},
    };
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        const char *name = NULL;
        ck_assert_int_eq(gw__status_for(want[i].code, &name), want[i].status);
        ck_assert_str_eq(name, want[i].name);
    }
}
END_TEST

static json_t *error_body(gw_response *res)
{
    json_t *doc = json_loadb(res->body, res->body_len, 0, NULL);
    ck_assert_ptr_nonnull(doc);
    return doc;
}

START_TEST(error_body_has_code_message_and_request_id)
{
    gw_request req = {.arena = arena, .request_id = "rid-12345678", .method = "GET", .path = "/x"};
    gw_response res = {.arena = arena};
    ck_assert_int_eq(gw__respond_error(&res, &req, ED_ENOTFOUND, "no project 9"), 0);
    ck_assert_int_eq(res.status, 404);
    json_t *doc = error_body(&res);
    json_t *e = json_object_get(doc, "error");
    ck_assert_str_eq(json_string_value(json_object_get(e, "code")), "not_found");
    ck_assert_str_eq(json_string_value(json_object_get(e, "message")), "no project 9");
    ck_assert_str_eq(json_string_value(json_object_get(e, "request_id")), "rid-12345678");
    json_decref(doc);
    free(res.body);
}
END_TEST

START_TEST(error_500_body_hides_the_message)
{
    gw_request req = {.arena = arena, .request_id = "rid-abcdefgh", .method = "GET", .path = "/x"};
    gw_response res = {.arena = arena};
    gw__respond_error(&res, &req, ED_EIO, "sqlite: disk I/O error at /secret/path");
    ck_assert_int_eq(res.status, 500);
    ck_assert_ptr_null(strstr(res.body, "/secret/path"));
    ck_assert_ptr_nonnull(strstr(res.body, "\"internal\""));
    free(res.body);
}
END_TEST

START_TEST(error_rate_limit_sets_retry_after)
{
    gw_request req = {.arena = arena, .request_id = "rid-abcdefgh", .retry_after_s = 17};
    gw_response res = {.arena = arena};
    gw__respond_error(&res, &req, ED_ELIMIT, "slow down");
    ck_assert_int_eq(res.status, 429);
    ck_assert_ptr_nonnull(res.headers);
    ck_assert_str_eq(res.headers->name, "Retry-After");
    ck_assert_str_eq(res.headers->value, "17");
    free(res.body);
}
END_TEST

/* ---- request accessors --------------------------------------------------------- */

START_TEST(request_query_decodes_values)
{
    gw_request req = {.arena = arena, .query = "a=1&b=hello+world&c=%2Fx%20y&flag&e="};
    ck_assert_str_eq(gw_request_query(&req, "a"), "1");
    ck_assert_str_eq(gw_request_query(&req, "b"), "hello world");
    ck_assert_str_eq(gw_request_query(&req, "c"), "/x y");
    ck_assert_str_eq(gw_request_query(&req, "flag"), "");
    ck_assert_str_eq(gw_request_query(&req, "e"), "");
    ck_assert_ptr_null(gw_request_query(&req, "missing"));
    gw_request none = {.arena = arena};
    ck_assert_ptr_null(gw_request_query(&none, "a"));
}
END_TEST

START_TEST(request_page_checks_limit_and_cursor)
{
    int limit;
    const char *cursor;
    gw_request d = {.arena = arena};
    ck_assert_int_eq(gw_request_page(&limit, &cursor, &d), 0);
    ck_assert_int_eq(limit, 50);
    ck_assert_ptr_null(cursor);
    gw_request ok = {.arena = arena, .query = "limit=500&cursor=abc"};
    ck_assert_int_eq(gw_request_page(&limit, &cursor, &ok), 0);
    ck_assert_int_eq(limit, 500);
    ck_assert_str_eq(cursor, "abc");
    static const char *const bad[] = {"limit=0", "limit=501", "limit=abc", "limit=", "limit=5x",
                                      "limit=-3"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        gw_request r = {.arena = arena, .query = bad[i]};
        ck_assert_msg(gw_request_page(&limit, &cursor, &r) == ED_EINVAL, "accepted %s", bad[i]);
    }
}
END_TEST

START_TEST(request_json_accepts_objects_only)
{
    json_t *doc;
    static const char good[] = "{\"name\":\"x\",\"n\":[1,2]}";
    gw_request req = {.arena = arena, .body = good, .body_len = sizeof(good) - 1};
    ck_assert_int_eq(gw_request_json(&doc, &req), 0);
    ck_assert_str_eq(json_string_value(json_object_get(doc, "name")), "x");
    /* doc is released with the arena (teardown); ASan/valgrind would see a leak. */
    static const char *const bad[] = {"[1,2]", "\"str\"", "{\"a\":", "{\"a\":1,\"a\":2}", "nul"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        gw_request r = {.arena = arena, .body = bad[i], .body_len = strlen(bad[i])};
        ck_assert_msg(gw_request_json(&doc, &r) == ED_EINVAL, "accepted %s", bad[i]);
        ck_assert_ptr_null(doc);
    }
    gw_request empty = {.arena = arena};
    ck_assert_int_eq(gw_request_json(&doc, &empty), ED_EINVAL);
}
END_TEST

START_TEST(request_json_refuses_deep_nesting)
{
    char deep[256];
    json_t *doc;
    size_t n = 0;
    /* {"a":[[[[...]]]]} nested past ED_JSON_MAX_DEPTH. */
    n += (size_t)snprintf(deep, sizeof(deep), "{\"a\":");
    for (int i = 0; i < ED_JSON_MAX_DEPTH + 2; i++)
        deep[n++] = '[';
    for (int i = 0; i < ED_JSON_MAX_DEPTH + 2; i++)
        deep[n++] = ']';
    deep[n++] = '}';
    deep[n] = '\0';
    gw_request req = {.arena = arena, .body = deep, .body_len = n};
    ck_assert_int_eq(gw_request_json(&doc, &req), ED_EINVAL);
    ck_assert_ptr_nonnull(strstr(ed_error_last(), "deep"));
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("gateway_core");
    TCase *r = tcase_create("router"), *c = tcase_create("config"), *e = tcase_create("errors");

    tcase_add_checked_fixture(r, setup, teardown);
    tcase_add_test(r, router_matches_literal_path);
    tcase_add_test(r, router_extracts_one_segment_params);
    tcase_add_test(r, router_rest_param_takes_nested_path);
    tcase_add_test(r, router_percent_decodes_params);
    tcase_add_test(r, router_rejects_bad_escapes);
    tcase_add_test(r, router_unknown_path_is_404_without_allow);
    tcase_add_test(r, router_other_method_is_405_with_allow);
    tcase_add_test(r, router_head_matches_get);
    tcase_add_test(r, router_real_tables_serve_meta_routes);
    suite_add_tcase(s, r);
    tcase_add_test(c, config_defaults_are_sane);
    tcase_add_test(c, config_file_sets_every_kind_of_value);
    tcase_add_test(c, config_inline_comments_and_quotes);
    tcase_add_test(c, config_shipped_example_parses);
    tcase_add_test(c, config_unknown_key_names_its_line);
    tcase_add_test(c, config_bad_values_name_their_line);
    tcase_add_test(c, config_missing_file_is_an_error);
    tcase_add_test(c, config_env_overrides_file_values);
    tcase_add_test(c, config_bad_env_names_the_variable);
    tcase_add_test(c, config_listen_parses_host_and_port);
    suite_add_tcase(s, c);
    tcase_add_checked_fixture(e, setup, teardown);
    tcase_add_test(e, error_table_maps_codes_to_api_md);
    tcase_add_test(e, error_body_has_code_message_and_request_id);
    tcase_add_test(e, error_500_body_hides_the_message);
    tcase_add_test(e, error_rate_limit_sets_retry_after);
    suite_add_tcase(s, e);
    TCase *q = tcase_create("request");
    tcase_add_checked_fixture(q, setup, teardown);
    tcase_add_test(q, request_query_decodes_values);
    tcase_add_test(q, request_page_checks_limit_and_cursor);
    tcase_add_test(q, request_json_accepts_objects_only);
    tcase_add_test(q, request_json_refuses_deep_nesting);
    suite_add_tcase(s, q);
    return s;
}

int main(void)
{
    return unit_run(suite());
}
