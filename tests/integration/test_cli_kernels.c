/* `eddy kernels start|list|show|exec|interrupt|restart|stop` against the real
 * server and a real kernel: the CLI's output and exit codes (0 ok, 1 a cell
 * that raised or a refusal, 2 usage), with an API key from the environment. */
#include "harness.h"

#include <check.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static it_server srv;
static char dir[64];
static char url_env[128], key_env[256];

typedef it_run run_out;

/* Run eddy with EDDY_URL and EDDY_API_KEY set, `input` on stdin. */
static void run(run_out *o, const char *input, const char *const *argv)
{
    const char *const env[] = {url_env, key_env, NULL};
    it_run_eddy(o, dir, dir, input, env, argv);
}

#define EDDY(o, ...) run((o), NULL, (const char *const[]){"eddy", __VA_ARGS__, NULL})

static void expect(const run_out *o, int status, const char *what)
{
    ck_assert_msg(o->status == status, "%s: exit %d, wanted %d\nstdout: %s\nstderr: %s", what, o->status, status,
                  o->out, o->err);
}

static void setup(void)
{
    char body[256], cookie[512], csrf[256];
    const char *hdrs[3] = {cookie, csrf, NULL};
    it_resp r;

    snprintf(dir, sizeof(dir), "/tmp/eddy-it-clik-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    ck_assert_int_eq(it_server_start(&srv, NULL), 0);
    it_request(&r, &srv, "POST", "/api/v1/auth/signup",
               "{\"username\":\"carol\",\"email\":\"carol@example.com\",\"password\":\"pass-carol-123\"}", NULL);
    ck_assert_int_eq(r.status, 201);
    it_resp_free(&r);
    it_request(&r, &srv, "POST", "/api/v1/auth/login", "{\"username\":\"carol\",\"password\":\"pass-carol-123\"}",
               NULL);
    ck_assert_int_eq(r.status, 200);
    const char *sc = it_resp_header(&r, "Set-Cookie");
    snprintf(cookie, sizeof(cookie), "Cookie: %.*s", (int)strcspn(sc, ";"), sc);
    snprintf(csrf, sizeof(csrf), "X-CSRF-Token: %s", json_string_value(json_object_get(r.json, "csrf_token")));
    it_resp_free(&r);
    it_request(&r, &srv, "POST", "/api/v1/keys",
               "{\"name\":\"cli\",\"env\":\"prod\",\"scopes\":[\"read\",\"write\",\"run\"]}", hdrs);
    ck_assert_msg(r.status == 201, "key: %ld %s", r.status, r.body);
    snprintf(key_env, sizeof(key_env), "EDDY_API_KEY=%s", json_string_value(json_object_get(r.json, "key")));
    it_resp_free(&r);
    snprintf(url_env, sizeof(url_env), "EDDY_URL=%s", srv.base_url);
    snprintf(body, sizeof(body), "{\"name\":\"kproj\",\"visibility\":\"private\"}");
    it_request(&r, &srv, "POST", "/api/v1/projects", body, hdrs);
    ck_assert_int_eq(r.status, 201);
    it_resp_free(&r);
}

static void teardown(void)
{
    char cmd[128];
    ck_assert_int_eq(it_server_stop(&srv), 0);
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    ck_assert_int_eq(system(cmd), 0);
}

/* The kernel id from `eddy kernels start --json`. */
static void start(char *kid, size_t n)
{
    run_out o;
    EDDY(&o, "kernels", "start", "kproj", "--json");
    expect(&o, 0, "kernels start");
    json_t *j = json_loads(o.out, 0, NULL);
    ck_assert_msg(j != NULL, "not JSON: %s", o.out);
    snprintf(kid, n, "%s", json_string_value(json_object_get(j, "id")));
    json_decref(j);
    ck_assert_int_eq(strlen(kid), 36);
}

static void wait_idle(const char *kid)
{
    run_out o;
    for (int i = 0; i < 300; i++) {
        EDDY(&o, "kernels", "show", kid, "--json");
        expect(&o, 0, "kernels show");
        if (strstr(o.out, "\"status\": \"idle\"") || strstr(o.out, "\"status\":\"idle\""))
            return;
        usleep(100000);
    }
    ck_abort_msg("kernel %s never became idle", kid);
}

START_TEST(cli_starts_a_kernel_runs_code_and_stops_it)
{
    run_out o;
    char kid[64];

    start(kid, sizeof(kid));
    EDDY(&o, "kernels", "list");
    expect(&o, 0, "kernels list");
    ck_assert_ptr_nonnull(strstr(o.out, kid));
    wait_idle(kid);
    EDDY(&o, "kernels", "exec", kid, "x = 20\nprint('hello from eddy')\nx * 2 + 2");
    expect(&o, 0, "kernels exec");
    ck_assert_msg(strstr(o.out, "hello from eddy\n") != NULL, "stdout: %s", o.out);
    ck_assert_msg(strstr(o.out, "42") != NULL, "stdout: %s", o.out);
    /* the namespace persists between execs; code from stdin */
    run(&o, "print(x + 1)\n", (const char *const[]){"eddy", "kernels", "exec", kid, "-", NULL});
    expect(&o, 0, "kernels exec -");
    ck_assert_ptr_nonnull(strstr(o.out, "21"));
    /* a cell that raises: the traceback on stderr, exit 1 */
    EDDY(&o, "kernels", "exec", kid, "raise ValueError('nope')");
    expect(&o, 1, "kernels exec raising");
    ck_assert_msg(strstr(o.err, "ValueError") != NULL, "stderr: %s", o.err);
    EDDY(&o, "kernels", "restart", kid);
    expect(&o, 0, "kernels restart");
    wait_idle(kid);
    EDDY(&o, "kernels", "exec", kid, "print('x' in dir())");
    expect(&o, 0, "kernels exec after restart");
    ck_assert_ptr_nonnull(strstr(o.out, "False"));
    EDDY(&o, "kernels", "stop", kid);
    expect(&o, 0, "kernels stop");
    ck_assert_ptr_nonnull(strstr(o.out, "Stopped kernel"));
    EDDY(&o, "kernels", "show", kid, "--json");
    expect(&o, 0, "kernels show after stop");
    json_t *j = json_loads(o.out, 0, NULL);
    ck_assert_str_eq(json_string_value(json_object_get(j, "status")), "dead");
    ck_assert_str_eq(json_string_value(json_object_get(j, "stop_reason")), "shutdown");
    json_decref(j);
    /* exec on a dead kernel is refused */
    EDDY(&o, "kernels", "exec", kid, "1");
    ck_assert_int_ne(o.status, 0);
}
END_TEST

/* A kernel that dies in the middle of a cell ends the stream with
 * `event: end`: exec stops at once with the reason instead of waiting for a
 * reply that will never come. */
START_TEST(cli_exec_stops_when_the_kernel_dies)
{
    run_out o;
    char kid[64];

    start(kid, sizeof(kid));
    wait_idle(kid);
    EDDY(&o, "kernels", "exec", kid, "import os\nprint('going', flush=True)\nos._exit(3)");
    expect(&o, 1, "kernels exec of a dying cell");
    ck_assert_msg(strstr(o.err, "kernel stopped") != NULL, "stderr: %s", o.err);
}
END_TEST

START_TEST(cli_kernel_errors_are_clear)
{
    run_out o;

    EDDY(&o, "kernels", "show", "00000000-0000-4000-8000-000000000000");
    expect(&o, 1, "show unknown");
    EDDY(&o, "kernels", "start", "no-such-project");
    ck_assert_int_ne(o.status, 0);
    EDDY(&o, "kernels", "exec");
    expect(&o, 2, "exec without id");
    EDDY(&o, "kernels", "exec", "00000000-0000-4000-8000-000000000000", "");
    expect(&o, 2, "exec without code");
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("cli_kernels");
    TCase *tc = tcase_create("cli_kernels");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, cli_starts_a_kernel_runs_code_and_stops_it);
    tcase_add_test(tc, cli_exec_stops_when_the_kernel_dies);
    tcase_add_test(tc, cli_kernel_errors_are_clear);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
