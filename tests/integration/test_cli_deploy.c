/*
 * `eddy deploy ...` and `eddy predict` end to end (issue 19 item 6) against
 * the real server and sandbox: a model saved with paddle.jit.save is put
 * into a project and versioned; the CLI deploys it, waits for a replica,
 * calls it from a JSON file, reads usage and logs, scales, stops and
 * removes it; bad arguments exit 2, refusals exit 1 with the server's
 * message.
 *
 * Replicas run in the sandbox, which needs root here: skips (77) otherwise.
 */
#include "harness.h"

#include <check.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static it_server srv;
static char dir[64], url_env[128], key_env[256], cookie[512], csrf[256];

static const char SAVE_PY[] =
    "import sys, paddle\n"
    "paddle.seed(3)\n"
    "m = paddle.nn.Sequential(paddle.nn.Linear(3, 4), paddle.nn.ReLU(), paddle.nn.Linear(4, 2))\n"
    "paddle.jit.save(m, sys.argv[1] + '/tiny', input_spec=[paddle.static.InputSpec([None, 3], 'float32', 'x')])\n";

static void run(it_run *o, const char *const *argv)
{
    const char *env[] = {url_env, key_env, NULL};
    it_run_eddy(o, dir, dir, NULL, env, argv);
}

#define EDDY(o, ...) run((o), (const char *const[]){"eddy", __VA_ARGS__, NULL})

static void expect(const it_run *o, int status, const char *what)
{
    ck_assert_msg(o->status == status, "%s: exit %d, wanted %d\nstdout: %s\nstderr: %s", what, o->status, status,
                  o->out, o->err);
}

static void put(const char *const *hdrs, const char *pid, const char *path, const char *file)
{
    char url[300];
    FILE *f = fopen(file, "rb");
    static char buf[1 << 20];
    size_t n;
    it_resp r;

    ck_assert_ptr_nonnull(f);
    n = fread(buf, 1, sizeof(buf), f);
    fclose(f);
    snprintf(url, sizeof(url), "/api/v1/projects/%s/files/%s", pid, path);
    it_request_n(&r, &srv, "PUT", url, buf, (long)n, hdrs);
    ck_assert_msg(r.status == 200 || r.status == 201, "PUT %s: %ld %s", path, r.status, r.body);
    it_resp_free(&r);
}

START_TEST(deploy_commands)
{
    const char *hdrs[3] = {cookie, csrf, NULL};
    char pid[64], vid[64], py[200], cmd[900], eddy[400], file[300], name[300];
    it_resp r;
    it_run o;
    FILE *f;
    int ready = 0;

    snprintf(dir, sizeof(dir), "/tmp/eddy-it-clidep-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    ck_assert_int_eq(it_server_start(&srv, (const char *const[]){"EDDY_THREADS=16", NULL}), 0);
    it_request(&r, &srv, "POST", "/api/v1/auth/signup",
               "{\"username\":\"dora\",\"email\":\"dora@example.com\",\"password\":\"pass-dora-123\"}", NULL);
    ck_assert_int_eq(r.status, 201);
    it_resp_free(&r);
    ck_assert_int_eq(it_login(&srv, "dora", "pass-dora-123", cookie, sizeof(cookie), csrf, sizeof(csrf)), 0);
    it_request(&r, &srv, "POST", "/api/v1/keys",
               "{\"name\":\"cli\",\"env\":\"prod\",\"scopes\":[\"read\",\"write\",\"serve\"]}", hdrs);
    ck_assert_msg(r.status == 201, "key: %ld %s", r.status, r.body);
    snprintf(key_env, sizeof(key_env), "EDDY_API_KEY=%s", it_json_str(r.json, "key"));
    it_resp_free(&r);
    snprintf(url_env, sizeof(url_env), "EDDY_URL=%s", srv.base_url);

    /* the model, saved by paddle.jit.save, into a project version */
    snprintf(py, sizeof(py), "%s/save.py", dir);
    f = fopen(py, "w");
    ck_assert_ptr_nonnull(f);
    fputs(SAVE_PY, f);
    fclose(f);
    snprintf(eddy, sizeof(eddy), "%s", it_eddy_bin());
    snprintf(cmd, sizeof(cmd), "PYTHONPATH=%s/../framework/python /usr/bin/python3 %s %s", dirname(eddy), py, dir);
    ck_assert_int_eq(system(cmd), 0);
    ck_assert_int_eq(it_project_make(pid, sizeof(pid), &srv, hdrs, "cliproj", NULL, NULL), 0);
    snprintf(file, sizeof(file), "%s/tiny.pdmodel", dir);
    put(hdrs, pid, "m/tiny.pdmodel", file);
    snprintf(file, sizeof(file), "%s/tiny.pdiparams", dir);
    put(hdrs, pid, "m/tiny.pdiparams", file);
    ck_assert_int_eq(it_version_make(vid, sizeof(vid), &srv, hdrs, pid, "v"), 0);

    /* usage errors */
    EDDY(&o, "deploy");
    expect(&o, 2, "deploy without a command");
    EDDY(&o, "deploy", "create", "x", "--path", "m/tiny");
    expect(&o, 2, "create without a source");
    EDDY(&o, "predict", "x");
    expect(&o, 2, "predict without --input");
    EDDY(&o, "deploy", "scale", "x", "many");
    expect(&o, 2, "scale with a bad count");
    /* refusals */
    EDDY(&o, "deploy", "create", "broken", "--project", pid, "--path", "m/none");
    expect(&o, 1, "create from missing files");
    ck_assert_msg(strstr(o.err, "pdmodel") != NULL, "%s", o.err);

    EDDY(&o, "deploy", "create", "tiny", "--project", "cliproj", "--version", vid, "--path", "m/tiny", "--max-batch",
         "4", "--max-delay-ms", "1");
    expect(&o, 0, "deploy create");
    ck_assert_msg(strstr(o.out, "tiny") && strstr(o.out, "/predict"), "%s", o.out);
    for (int i = 0; i < 300 && !ready; i++) {
        json_t *j;
        EDDY(&o, "deploy", "show", "tiny", "--json");
        expect(&o, 0, "deploy show");
        j = json_loads(o.out, 0, NULL);
        ready = j && json_integer_value(json_object_get(j, "replicas_ready")) >= 1;
        json_decref(j);
        if (!ready)
            usleep(200000);
    }
    ck_assert_msg(ready, "no replica became ready");
    EDDY(&o, "deploy", "ls");
    expect(&o, 0, "deploy ls");
    ck_assert_msg(strstr(o.out, "tiny") && strstr(o.out, "running"), "%s", o.out);

    snprintf(name, sizeof(name), "%s/x.json", dir);
    f = fopen(name, "w");
    fputs("{\"x\": {\"dtype\": \"float32\", \"data\": [[1, 2, 3], [0, 0, 0]]}}", f);
    fclose(f);
    EDDY(&o, "predict", "tiny", "--input", name);
    expect(&o, 0, "predict");
    ck_assert_msg(strstr(o.out, "\"outputs\"") && strstr(o.out, "[2, 2]") == NULL, "%s", o.out);
    ck_assert_msg(strstr(o.out, "\"shape\": [2, 2]") || strstr(o.out, "\"shape\":[2,2]"), "%s", o.out);
    snprintf(name, sizeof(name), "%s/bad.json", dir);
    f = fopen(name, "w");
    fputs("{\"inputs\": {\"x\": {\"dtype\": \"float32\", \"data\": [[1, 2]]}}}", f);
    fclose(f);
    EDDY(&o, "predict", "tiny", "--input", name);
    expect(&o, 1, "predict with a bad shape");
    ck_assert_msg(strstr(o.err, "dimension 1") != NULL, "%s", o.err);

    EDDY(&o, "deploy", "usage", "tiny");
    expect(&o, 0, "deploy usage");
    ck_assert_msg(strstr(o.out, "P95") && strstr(o.out, " 2 "), "%s", o.out);
    EDDY(&o, "deploy", "logs", "tiny", "--limit", "5");
    expect(&o, 0, "deploy logs");
    ck_assert_msg(strstr(o.out, "422") && strstr(o.out, "200"), "%s", o.out);
    EDDY(&o, "deploy", "scale", "tiny", "2");
    expect(&o, 0, "deploy scale");
    ck_assert_msg(strstr(o.out, "Replicas") && strstr(o.out, "2"), "%s", o.out);
    EDDY(&o, "deploy", "stop", "tiny");
    expect(&o, 0, "deploy stop");
    ck_assert_msg(strstr(o.out, "stopped"), "%s", o.out);
    snprintf(name, sizeof(name), "%s/x.json", dir);
    EDDY(&o, "predict", "tiny", "--input", name);
    expect(&o, 1, "predict on a stopped deployment");
    EDDY(&o, "deploy", "rm", "tiny");
    expect(&o, 0, "deploy rm");
    EDDY(&o, "deploy", "show", "tiny");
    expect(&o, 1, "show after rm");

    ck_assert_int_eq(it_server_stop(&srv), 0);
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    ck_assert_int_eq(system(cmd), 0);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("cli_deploy");
    TCase *tc = tcase_create("cli");
    SRunner *sr;
    int failed;

    if (geteuid() != 0) {
        printf("SKIP: replicas run in the sandbox, which needs root here\n");
        return 77;
    }
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, deploy_commands);
    suite_add_tcase(s, tc);
    sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
