/* A dataset version from a job's output (POST
 * /api/v1/datasets/{id}/versions/from {job_id}, issue 15) against the real
 * server and sandbox: a job writes files (one in a subdirectory, a 3 MiB
 * one), a symbolic link to /etc/passwd and one to /etc; the version holds
 * the regular files with the job's bytes (read back through the file
 * route), lists the links in `skipped` and holds neither, and records
 * source {"job_id": N}. `paths` takes one folder; a link named in `paths`
 * is 422; another user's job is 404 (as on the job's own routes), and so is
 * a job that does not exist. `eddy datasets from-job --create` makes the
 * dataset and its version in one command.
 *
 * Jobs need the sandbox, which needs root here: skips (77) otherwise. */
#include "harness.h"

#include "ed_crypto.h"

#include <check.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define BIG (3 * 1024 * 1024)

static it_server srv;
static char dir[64];
static char admin_cookie[512], admin_csrf[256];
static const char *const env[] = {"EDDY_METER_INTERVAL_MS=1000", "EDDY_STOP_GRACE_MS=1000", NULL};

static const char JOB_PY[] =
    "import os\n"
    "out = os.environ['EDDY_OUTPUT_DIR']\n"
    "os.makedirs(out + '/ckpt/deep', exist_ok=True)\n"
    "open(out + '/a.txt', 'w').write('alpha')\n"
    "open(out + '/ckpt/deep/model.txt', 'w').write('1.0 -2.0 0.5')\n"
    "block = bytes(range(251))\n"
    "open(out + '/big.bin', 'wb').write((block * (3 * 1024 * 1024 // 251 + 1))[:3 * 1024 * 1024])\n"
    "os.symlink('/etc/passwd', out + '/passwd')\n"
    "os.symlink('/etc', out + '/ckpt/etc')\n"
    "print('done', flush=True)\n";

static void setup(void)
{
    const char *ah[] = {admin_cookie, admin_csrf, NULL};

    ck_assert_int_eq(it_admin_server_start(&srv, dir, sizeof(dir), "dsjob", env, admin_cookie, sizeof(admin_cookie),
                                           admin_csrf, sizeof(admin_csrf)),
                     0);
    ck_assert_int_eq(it_request_status(&srv, "PUT", "/api/v1/admin/tiers/free", "{\"job_disk_bytes\": 0}", ah), 200);
}

static void teardown(void)
{
    ck_assert_int_eq(it_server_stop(&srv), 0);
    ck_assert_int_eq(it_dir_remove(dir), 0);
}

static int64_t run_job(it_user *u, const char *pid)
{
    char body[256];
    it_resp r;
    int64_t id;
    json_t *j;
    char path[64];

    snprintf(body, sizeof(body),
             "{\"project_id\":\"%s\",\"entry\":\"job.py\",\"resource\":\"cpu-basic\",\"max_runtime_s\":180}", pid);
    it_request(&r, &srv, "POST", "/api/v1/jobs", body, u->hdrs);
    ck_assert_msg(r.status == 201, "submit: %ld %s", r.status, r.body);
    id = json_integer_value(json_object_get(r.json, "id"));
    it_resp_free(&r);
    snprintf(path, sizeof(path), "/api/v1/jobs/%lld", (long long)id);
    j = it_status_wait(&srv, u->hdrs, path, NULL, 150);
    ck_assert_msg(j != NULL, "job %lld did not end", (long long)id);
    ck_assert_msg(strcmp(it_json_str(j, "status"), "succeeded") == 0, "job %lld: %s", (long long)id,
                  it_json_str(j, "status"));
    json_decref(j);
    return id;
}

static const json_t *file_named(const json_t *files, const char *path)
{
    size_t i;
    json_t *e;

    json_array_foreach(files, i, e)
        if (strcmp(it_json_str(e, "path"), path) == 0)
            return e;
    return NULL;
}

static bool skipped_has(const json_t *skipped, const char *path)
{
    size_t i;
    json_t *e;

    json_array_foreach(skipped, i, e)
        if (strcmp(it_json_str(e, "path"), path) == 0 && strstr(it_json_str(e, "reason"), "symbolic link"))
            return true;
    return false;
}

START_TEST(version_from_a_jobs_output)
{
    it_user alice, bob;
    char pid[64], id[64], bid[64], body[300], path[300], sha[65];
    unsigned char *big = malloc(BIG);
    int64_t job;
    it_resp r;
    const json_t *files, *f;

    ck_assert_int_eq(it_user_make(&alice, &srv, admin_cookie, admin_csrf, "alice", 1000000), 0);
    ck_assert_int_eq(it_user_make(&bob, &srv, admin_cookie, admin_csrf, "bobby", 1000000), 0);
    ck_assert_int_eq(it_project_make(pid, sizeof(pid), &srv, alice.hdrs, "jobsrc", "job.py", JOB_PY), 0);
    job = run_job(&alice, pid);

    it_request(&r, &srv, "POST", "/api/v1/datasets", "{\"name\":\"Job out\",\"visibility\":\"private\"}", alice.hdrs);
    ck_assert_int_eq(r.status, 201);
    snprintf(id, sizeof(id), "%s", it_json_str(r.json, "id"));
    it_resp_free(&r);

    snprintf(path, sizeof(path), "/api/v1/datasets/%s/versions/from", id);
    snprintf(body, sizeof(body), "{\"job_id\":%lld,\"message\":\"run 1\"}", (long long)job);
    it_request(&r, &srv, "POST", path, body, alice.hdrs);
    ck_assert_msg(r.status == 201, "from job: %ld %s", r.status, r.body);
    files = json_object_get(r.json, "files");
    ck_assert_int_eq(json_array_size(files), 3);
    ck_assert_ptr_nonnull(file_named(files, "a.txt"));
    ck_assert_ptr_nonnull(file_named(files, "ckpt/deep/model.txt"));
    ck_assert_ptr_nonnull((f = file_named(files, "big.bin")));
    for (size_t i = 0; i < BIG; i++)
        big[i] = (unsigned char)(i % 251);
    ed_sha256_hex(sha, big, BIG);
    ck_assert_str_eq(it_json_str(f, "sha256"), sha);
    ck_assert_ptr_null(file_named(files, "passwd"));
    ck_assert_msg(skipped_has(json_object_get(r.json, "skipped"), "passwd"), "skipped: %s", r.body);
    ck_assert_msg(skipped_has(json_object_get(r.json, "skipped"), "ckpt/etc"), "skipped: %s", r.body);
    ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(r.json, "source"), "job_id")), job);
    it_resp_free(&r);
    /* the bytes are the job's */
    snprintf(path, sizeof(path), "/api/v1/datasets/%s/versions/1/files/ckpt/deep/model.txt", id);
    it_request(&r, &srv, "GET", path, NULL, alice.hdrs);
    ck_assert_int_eq(r.status, 200);
    ck_assert_str_eq(r.body, "1.0 -2.0 0.5");
    it_resp_free(&r);

    /* one folder, to another place */
    snprintf(path, sizeof(path), "/api/v1/datasets/%s/versions/from", id);
    snprintf(body, sizeof(body), "{\"job_id\":%lld,\"message\":\"ckpt\",\"paths\":[\"ckpt\"],\"dest_dir\":\"run1\"}",
             (long long)job);
    it_request(&r, &srv, "POST", path, body, alice.hdrs);
    ck_assert_msg(r.status == 201, "from job: %ld %s", r.status, r.body);
    ck_assert_ptr_nonnull(file_named(json_object_get(r.json, "files"), "run1/ckpt/deep/model.txt"));
    ck_assert_ptr_null(file_named(json_object_get(r.json, "files"), "run1/a.txt"));
    it_resp_free(&r);
    /* a link named in paths */
    snprintf(body, sizeof(body), "{\"job_id\":%lld,\"message\":\"x\",\"paths\":[\"passwd\"]}", (long long)job);
    it_request(&r, &srv, "POST", path, body, alice.hdrs);
    ck_assert_msg(r.status == 422, "link in paths: %ld %s", r.status, r.body);
    it_resp_free(&r);
    snprintf(body, sizeof(body), "{\"job_id\":%lld,\"message\":\"x\",\"paths\":[\"ckpt/etc/passwd\"]}", (long long)job);
    it_request(&r, &srv, "POST", path, body, alice.hdrs);
    ck_assert_msg(r.status == 422 || r.status == 404, "through a link: %ld %s", r.status, r.body);
    it_resp_free(&r);
    /* no such job */
    it_request(&r, &srv, "POST", path, "{\"job_id\":999999,\"message\":\"x\"}", alice.hdrs);
    ck_assert_int_eq(r.status, 404);
    it_resp_free(&r);

    /* bob cannot take alice's job into his own dataset */
    it_request(&r, &srv, "POST", "/api/v1/datasets", "{\"name\":\"Bobs\",\"visibility\":\"private\"}", bob.hdrs);
    ck_assert_int_eq(r.status, 201);
    snprintf(bid, sizeof(bid), "%s", it_json_str(r.json, "id"));
    it_resp_free(&r);
    snprintf(path, sizeof(path), "/api/v1/datasets/%s/versions/from", bid);
    snprintf(body, sizeof(body), "{\"job_id\":%lld,\"message\":\"steal\"}", (long long)job);
    it_request(&r, &srv, "POST", path, body, bob.hdrs);
    ck_assert_msg(r.status == 404, "another user's job: %ld %s", r.status, r.body);
    it_resp_free(&r);

    /* the CLI: a new dataset from the job in one command */
    {
        it_key k;
        char url_env[128], key_env[256], jobs[32], scratch[] = "/tmp/eddy-it-dsjobcli-XXXXXX", cmd[100];
        it_run o;

        ck_assert_int_eq(it_key_make(&k, &srv, alice.hdrs,
                                     "{\"name\":\"cli\",\"env\":\"prod\",\"scopes\":[\"read\",\"write\"]}"),
                         0);
        snprintf(url_env, sizeof(url_env), "EDDY_URL=%s", srv.base_url);
        snprintf(key_env, sizeof(key_env), "EDDY_API_KEY=%s", k.auth + strlen("Authorization: Bearer "));
        snprintf(jobs, sizeof(jobs), "%lld", (long long)job);
        ck_assert_ptr_nonnull(mkdtemp(scratch));
        {
            const char *const e[] = {url_env, key_env, NULL};
            const char *const argv[] = {"eddy", "datasets", "from-job", jobs, "model-out", "--create", "Model output",
                                        "--paths", "ckpt,a.txt", "-m", "from the CLI", NULL};
            it_run_eddy(&o, scratch, scratch, NULL, e, argv);
        }
        ck_assert_msg(o.status == 0, "from-job: %d\n%s\n%s", o.status, o.out, o.err);
        ck_assert_ptr_nonnull(strstr(o.out, "Created dataset alice/model-out"));
        ck_assert_ptr_nonnull(strstr(o.out, "Published version 1 of alice/model-out: 2 files"));
        ck_assert_ptr_nonnull(strstr(o.err, "skipped ckpt/etc"));
        {
            const char *const e[] = {url_env, key_env, NULL};
            const char *const argv[] = {"eddy", "datasets", "from-job", "999999", "model-out", "-m", "x", NULL};
            it_run_eddy(&o, scratch, scratch, NULL, e, argv);
        }
        ck_assert_msg(o.status == 1 && strstr(o.err, "not_found"), "unknown job: %d %s", o.status, o.err);
        snprintf(cmd, sizeof(cmd), "rm -rf %s", scratch);
        ck_assert_int_eq(system(cmd), 0);
    }
    free(big);
}
END_TEST

int main(void)
{
    const TTest *tests[] = {version_from_a_jobs_output, NULL};

    if (geteuid() != 0) {
        printf("SKIP: jobs need the sandbox, which needs root here\n");
        return 77;
    }
    return it_tests_run("dataset_files_job", 240, setup, teardown, tests);
}
