/*
 * Copying a job's artifacts into a project's working tree (issue 12, item 7):
 * POST /api/v1/jobs/{id}/artifacts/copy and `eddy jobs artifacts
 * --to-project`, against the real server, sandbox and projects.
 *
 * A job writes files (one in a subdirectory, a 5 MiB one, a valid and an
 * invalid notebook), a symbolic link to /etc/passwd and one to /etc, and a
 * .git directory into its output. The copy puts the regular files under
 * jobs/<id>/ with the same bytes (read back through the project's file
 * API), reports the links, the invalid notebook and the .git path as
 * skipped and copies none of them; a second copy is 409 without overwrite;
 * dest_dir is honoured; over the storage limit it is 402 and nothing of that
 * copy is left. Another user can neither copy my job nor write into my
 * project; bad dest_dir values are 400; a running job's output is copied as
 * it is now. Before the route existed every copy was 404/405.
 *
 * Jobs need the sandbox, which needs root here: skips (77) otherwise.
 */
#include "harness.h"

#include <check.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define BIG (5 * 1024 * 1024)

static it_server srv;
static char dir[64];
static char admin_cookie[512], admin_csrf[256];
/* two 5 MiB copies fit, a third does not */
static const char *const env[] = {"EDDY_METER_INTERVAL_MS=1000", "EDDY_STOP_GRACE_MS=1000",
                                  "EDDY_USER_STORAGE_BYTES=12M", NULL};

static const char JOB_PY[] =
    "import os\n"
    "out = os.environ['EDDY_OUTPUT_DIR']\n"
    "os.makedirs(out + '/ckpt/deep', exist_ok=True)\n"
    "open(out + '/a.txt', 'w').write('alpha')\n"
    "open(out + '/ckpt/deep/model.txt', 'w').write('1.0 -2.0 0.5')\n"
    "block = bytes(range(251))\n"
    "open(out + '/big.bin', 'wb').write((block * (5 * 1024 * 1024 // 251 + 1))[:5 * 1024 * 1024])\n"
    "open(out + '/good.ipynb', 'w').write('{\"nbformat\": 4, \"nbformat_minor\": 5, \"metadata\": {}, \"cells\": []}')\n"
    "open(out + '/bad.ipynb', 'w').write('{\"not\": \"a notebook\"}')\n"
    "os.symlink('/etc/passwd', out + '/passwd')\n"
    "os.symlink('/etc', out + '/ckpt/etc')\n"
    "os.makedirs(out + '/.git', exist_ok=True)\n"
    "open(out + '/.git/config', 'w').write('[core]\\n')\n"
    "print('done', flush=True)\n";

/* writes one file, then waits to be cancelled */
static const char SLOW_PY[] =
    "import os, time\n"
    "open(os.environ['EDDY_OUTPUT_DIR'] + '/first.txt', 'w').write('so far')\n"
    "print('wrote', flush=True)\n"
    "time.sleep(120)\n";

static void setup(void)
{
    const char *ah[] = {admin_cookie, admin_csrf, NULL};

    ck_assert_int_eq(it_admin_server_start(&srv, dir, sizeof(dir), "artcopy", env, admin_cookie,
                                           sizeof(admin_cookie), admin_csrf, sizeof(admin_csrf)),
                     0);
    /* no per-job disk limit: the copy, not the job's quota tree, is tested */
    ck_assert_int_eq(it_request_status(&srv, "PUT", "/api/v1/admin/tiers/free", "{\"job_disk_bytes\": 0}", ah),
                     200);
}

static void teardown(void)
{
    ck_assert_int_eq(it_server_stop(&srv), 0);
    ck_assert_int_eq(it_dir_remove(dir), 0);
}

static void make_user(it_user *u, const char *name)
{
    ck_assert_int_eq(it_user_make(u, &srv, admin_cookie, admin_csrf, name, 1000000), 0);
}

/* Submit `entry` of project `pid` (its working tree) as `u`. */
static int64_t submit(it_user *u, const char *pid, const char *entry)
{
    char body[256];
    it_resp r;
    int64_t id;

    snprintf(body, sizeof(body),
             "{\"project_id\":\"%s\",\"entry\":\"%s\",\"resource\":\"cpu-basic\",\"max_runtime_s\":180}", pid,
             entry);
    it_request(&r, &srv, "POST", "/api/v1/jobs", body, u->hdrs);
    ck_assert_msg(r.status == 201, "submit: %ld %s", r.status, r.body);
    id = json_integer_value(json_object_get(r.json, "id"));
    it_resp_free(&r);
    return id;
}

static void wait_succeeded(it_user *u, int64_t id)
{
    char path[64];
    json_t *j;

    snprintf(path, sizeof(path), "/api/v1/jobs/%lld", (long long)id);
    j = it_status_wait(&srv, u->hdrs, path, NULL, 150);
    ck_assert_msg(j != NULL, "job %lld did not end", (long long)id);
    ck_assert_msg(strcmp(it_json_str(j, "status"), "succeeded") == 0, "job %lld: %s (%s)", (long long)id,
                  it_json_str(j, "status"), json_dumps(j, 0));
    json_decref(j);
}

/* POST the copy of job `id` with the JSON `body` as the caller of `hdrs`. */
static void copy(it_resp *r, const char *const *hdrs, int64_t id, const char *body)
{
    char path[96];
    snprintf(path, sizeof(path), "/api/v1/jobs/%lld/artifacts/copy", (long long)id);
    it_request(r, &srv, "POST", path, body, hdrs);
}

/* copy() as the caller of `hdrs` with {"project_id": pid} and the members
 * `more` ("" or ",\"overwrite\":true"): the status (the answer on stderr
 * when it is not 2xx). */
static long copy_status(const char *const *hdrs, int64_t id, const char *pid, const char *more)
{
    char body[512];
    it_resp r;
    long st;

    snprintf(body, sizeof(body), "{\"project_id\":\"%s\"%s}", pid, more);
    copy(&r, hdrs, id, body);
    st = r.status;
    if (st < 200 || st >= 300)
        fprintf(stderr, "copy %s: %ld %s\n", body, st, r.body);
    it_resp_free(&r);
    return st;
}

static const json_t *find(const json_t *items, const char *key, const char *value)
{
    size_t i;
    json_t *e;
    json_array_foreach(items, i, e)
        if (strcmp(it_json_str(e, key), value) == 0)
            return e;
    return NULL;
}

/* The project's files whose path starts with `prefix`. */
static size_t files_under(it_user *u, const char *pid, const char *prefix)
{
    char path[128];
    json_t *j, *e, *items;
    size_t i, n = 0;

    snprintf(path, sizeof(path), "/api/v1/projects/%s/files", pid);
    j = it_get_json(&srv, u->hdrs, path);
    ck_assert_ptr_nonnull(j);
    items = json_is_array(j) ? j : json_object_get(j, "items");
    json_array_foreach(items, i, e)
        n += strncmp(it_json_str(e, "path"), prefix, strlen(prefix)) == 0;
    json_decref(j);
    return n;
}

/* GET a project file: its status, body into *r (caller frees). */
static long get_file(it_resp *r, it_user *u, const char *pid, const char *file)
{
    char path[512];
    snprintf(path, sizeof(path), "/api/v1/projects/%s/files/%s", pid, file);
    it_request(r, &srv, "GET", path, NULL, u->hdrs);
    return r->status;
}

static void expect_file(it_user *u, const char *pid, const char *file, const char *bytes, size_t len)
{
    it_resp r;
    ck_assert_msg(get_file(&r, u, pid, file) == 200, "GET %s: %ld %s", file, r.status, r.body);
    ck_assert_msg(r.body_len == len, "%s: %zu bytes, not %zu", file, r.body_len, len);
    ck_assert_msg(memcmp(r.body, bytes, len) == 0, "%s: other bytes", file);
    it_resp_free(&r);
}

START_TEST(copy_puts_regular_files_in_the_project_skips_links_and_is_all_or_nothing)
{
    it_user u;
    it_key k;
    it_run o;
    char pid[64], path[256], f[256], prefix[64], *big = malloc(BIG), scratch[] = "/tmp/eddy-it-artcopy-cli-XXXXXX";
    char url_env[128], key_env[256];
    const json_t *e;
    json_t *files, *skipped;
    int64_t id;
    it_resp r;

    for (size_t i = 0; i < BIG; i++)
        big[i] = (char)(i % 251);
    make_user(&u, "alice");
    ck_assert_int_eq(it_project_make(pid, sizeof(pid), &srv, u.hdrs, "work", "job.py", JOB_PY), 0);
    id = submit(&u, pid, "job.py");
    wait_succeeded(&u, id);

    /* the default destination: jobs/<id>/ */
    copy(&r, u.hdrs, id, NULL);
    ck_assert_int_eq(r.status, 400);        /* no body: project_id is required */
    it_resp_free(&r);
    snprintf(path, sizeof(path), "{\"project_id\":\"%s\"}", pid);
    copy(&r, u.hdrs, id, path);
    ck_assert_msg(r.status == 201, "copy: %ld %s", r.status, r.body);
    snprintf(prefix, sizeof(prefix), "jobs/%lld", (long long)id);
    ck_assert_str_eq(it_json_str(r.json, "dest_dir"), prefix);
    files = json_object_get(r.json, "files");
    skipped = json_object_get(r.json, "skipped");
    ck_assert_msg(json_array_size(files) == 4, "files: %s", r.body);
    snprintf(f, sizeof(f), "%s/big.bin", prefix);
    ck_assert_ptr_nonnull(e = find(files, "path", f));
    ck_assert_int_eq(json_integer_value(json_object_get(e, "size")), BIG);
    ck_assert_str_eq(it_json_str(e, "artifact"), "big.bin");
    snprintf(f, sizeof(f), "%s/ckpt/deep/model.txt", prefix);
    ck_assert_ptr_nonnull(find(files, "path", f));
    /* links, the invalid notebook and .git are skipped, each with a reason */
    ck_assert_msg((e = find(skipped, "path", "passwd")) && strstr(it_json_str(e, "reason"), "symbolic link"),
                  "skipped: %s", r.body);
    ck_assert_msg((e = find(skipped, "path", "ckpt/etc")) && strstr(it_json_str(e, "reason"), "symbolic link"),
                  "skipped: %s", r.body);
    ck_assert_msg((e = find(skipped, "path", "bad.ipynb")) && strstr(it_json_str(e, "reason"), "notebook"),
                  "skipped: %s", r.body);
    ck_assert_msg(find(skipped, "path", ".git/config") != NULL, "skipped: %s", r.body);
    it_resp_free(&r);

    /* the bytes, through the project's file API */
    snprintf(f, sizeof(f), "%s/a.txt", prefix);
    expect_file(&u, pid, f, "alpha", 5);
    snprintf(f, sizeof(f), "%s/ckpt/deep/model.txt", prefix);
    expect_file(&u, pid, f, "1.0 -2.0 0.5", 12);
    snprintf(f, sizeof(f), "%s/big.bin", prefix);
    expect_file(&u, pid, f, big, BIG);
    snprintf(f, sizeof(f), "%s/passwd", prefix);
    ck_assert_int_eq(get_file(&r, &u, pid, f), 404);
    it_resp_free(&r);
    snprintf(f, sizeof(f), "%s/bad.ipynb", prefix);
    ck_assert_int_eq(get_file(&r, &u, pid, f), 404);
    it_resp_free(&r);
    ck_assert_int_eq(files_under(&u, pid, prefix), 4);

    /* again: 409 without overwrite, 201 with it */
    ck_assert_int_eq(copy_status(u.hdrs, id, pid, ""), 409);
    ck_assert_int_eq(copy_status(u.hdrs, id, pid, ",\"overwrite\":true"), 201);

    /* dest_dir, a trailing slash dropped */
    snprintf(path, sizeof(path), "{\"project_id\":\"%s\",\"dest_dir\":\"out/run1/\"}", pid);
    copy(&r, u.hdrs, id, path);
    ck_assert_msg(r.status == 201, "dest_dir: %ld %s", r.status, r.body);
    ck_assert_str_eq(it_json_str(r.json, "dest_dir"), "out/run1");
    it_resp_free(&r);
    expect_file(&u, pid, "out/run1/a.txt", "alpha", 5);

    /* a third 5 MiB copy passes the 12 MiB storage limit: 402, and the
     * small files copied before big.bin are removed again */
    snprintf(path, sizeof(path), "{\"project_id\":\"%s\",\"dest_dir\":\"again\"}", pid);
    copy(&r, u.hdrs, id, path);
    ck_assert_msg(r.status == 402, "over the limit: %ld %s", r.status, r.body);
    ck_assert_str_eq(it_resp_error_code(&r), "quota_exceeded");
    it_resp_free(&r);
    ck_assert_int_eq(files_under(&u, pid, "again/"), 0);
    ck_assert_int_eq(get_file(&r, &u, pid, "again/a.txt"), 404);
    it_resp_free(&r);

    /* the CLI: eddy jobs artifacts ID --to-project P --dest DIR */
    ck_assert_int_eq(it_key_make(&k, &srv, u.hdrs, "{\"name\":\"cli\",\"env\":\"prod\",\"scopes\":[\"read\",\"write\",\"run\"]}"), 0);
    ck_assert_ptr_nonnull(mkdtemp(scratch));
    snprintf(url_env, sizeof(url_env), "EDDY_URL=%s", srv.base_url);
    snprintf(key_env, sizeof(key_env), "EDDY_API_KEY=%s", strstr(k.auth, "Bearer ") + 7);
    {
        const char *cenv[] = {url_env, key_env, NULL};
        char jid[32];
        snprintf(jid, sizeof(jid), "%lld", (long long)id);
        /* the small files only fit now: delete both big copies first */
        snprintf(f, sizeof(f), "/api/v1/projects/%s/files/%s/big.bin", pid, prefix);
        ck_assert_int_eq(it_request_status(&srv, "DELETE", f, NULL, u.hdrs), 204);
        snprintf(f, sizeof(f), "/api/v1/projects/%s/files/out/run1/big.bin", pid);
        ck_assert_int_eq(it_request_status(&srv, "DELETE", f, NULL, u.hdrs), 204);
        {
            const char *argv[] = {"eddy", "jobs", "artifacts", jid, "--to-project", "work", "--dest", "cli-out", NULL};
            it_run_eddy(&o, scratch, scratch, NULL, cenv, argv);
        }
        ck_assert_msg(o.status == 0, "eddy jobs artifacts --to-project: %d\n%s\n%s", o.status, o.out, o.err);
        ck_assert_msg(strstr(o.out, "Copied 4 files") && strstr(o.out, "cli-out/") && strstr(o.out, "passwd"),
                      "%s", o.out);
        expect_file(&u, pid, "cli-out/big.bin", big, BIG);
        /* the same again: refused (exists), a clear message, exit status not 0 */
        {
            const char *argv[] = {"eddy", "jobs", "artifacts", jid, "--to-project", pid, "--dest", "cli-out", NULL};
            it_run_eddy(&o, scratch, scratch, NULL, cenv, argv);
        }
        ck_assert_msg(o.status != 0 && strstr(o.err, "already exists"), "%d\n%s\n%s", o.status, o.out, o.err);
        {
            const char *argv[] = {"eddy", "jobs", "artifacts", jid, "--dest", "x", NULL};
            it_run_eddy(&o, scratch, scratch, NULL, cenv, argv);
        }
        ck_assert_msg(o.status == 2 && strstr(o.err, "--to-project"), "%d\n%s", o.status, o.err);
    }
    ck_assert_int_eq(it_dir_remove(scratch), 0);
    free(big);
}
END_TEST

START_TEST(others_cannot_copy_bad_destinations_are_refused_and_running_jobs_copy_what_is_there)
{
    it_user u, b;
    char pid[64], bpid[64], pubpid[64], path[256], body[256];
    const char *ah[] = {admin_cookie, admin_csrf, NULL};
    static const char *const bad[] = {"../x", "/etc", "a/../b", ".git", "a/.GIT/b", "", "a//b", "tab\\there"};
    long st;
    json_t *j;
    int64_t id;
    it_resp r;

    make_user(&u, "alice");
    make_user(&b, "bob");
    ck_assert_int_eq(it_project_make(pid, sizeof(pid), &srv, u.hdrs, "work", "slow.py", SLOW_PY), 0);
    ck_assert_int_eq(it_project_make(bpid, sizeof(bpid), &srv, b.hdrs, "bobs", "x.txt", "x"), 0);
    ck_assert_int_eq(it_project_make(pubpid, sizeof(pubpid), &srv, b.hdrs, "bobs-public", "x.txt", "x"), 0);
    snprintf(path, sizeof(path), "/api/v1/projects/%s", pubpid);
    ck_assert_int_eq(it_request_status(&srv, "PATCH", path, "{\"visibility\":\"public\"}", b.hdrs), 200);

    /* a running job: what it has written so far */
    id = submit(&u, pid, "slow.py");
    snprintf(path, sizeof(path), "/api/v1/jobs/%lld/artifacts", (long long)id);
    for (int i = 0;; i++) {
        j = it_get_json(&srv, u.hdrs, path);
        if (j && find(json_object_get(j, "items"), "path", "first.txt")) {
            json_decref(j);
            break;
        }
        json_decref(j);
        ck_assert_msg(i < 1500, "the job never wrote first.txt");
        usleep(100000);
    }
    snprintf(body, sizeof(body), "{\"project_id\":\"%s\",\"dest_dir\":\"live\"}", pid);
    copy(&r, u.hdrs, id, body);
    ck_assert_msg(r.status == 201, "running job: %ld %s", r.status, r.body);
    ck_assert_int_eq(json_array_size(json_object_get(r.json, "files")), 1);
    it_resp_free(&r);
    {
        it_resp g;
        ck_assert_int_eq(get_file(&g, &u, pid, "live/first.txt"), 200);
        ck_assert_str_eq(g.body, "so far");
        it_resp_free(&g);
    }

    /* bob: alice's job is not there for him, whatever the project */
    ck_assert_int_eq(copy_status(b.hdrs, id, bpid, ""), 404);
    /* nor for the admin: copying is the owner's act */
    ck_assert_int_eq(copy_status(ah, id, pid, ""), 404);
    /* alice into bob's private project: 404; into his public one: 403 */
    ck_assert_int_eq(copy_status(u.hdrs, id, bpid, ""), 404);
    ck_assert_int_eq(copy_status(u.hdrs, id, pubpid, ""), 403);
    ck_assert_int_eq(files_under(&b, bpid, "jobs/"), 0);
    ck_assert_int_eq(files_under(&b, pubpid, "jobs/"), 0);
    /* no such job */
    ck_assert_int_eq(copy_status(u.hdrs, id + 1000, pubpid, ""), 404);

    /* bad destinations and bodies: 400, nothing written */
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        snprintf(body, sizeof(body), ",\"dest_dir\":\"%s\"", bad[i]);
        ck_assert_msg(copy_status(u.hdrs, id, pid, body) == 400, "dest_dir '%s'", bad[i]);
    }
    st = copy_status(u.hdrs, id, pid, ",\"dest_dir\":7");
    ck_assert_msg(st == 400 || st == 422, "dest_dir 7: %ld", st);
    copy(&r, u.hdrs, id, "{\"dest_dir\":\"x\"}");
    ck_assert_msg(r.status == 400, "no project_id: %ld %s", r.status, r.body);
    it_resp_free(&r);
    st = copy_status(u.hdrs, id, pid, ",\"overwrite\":\"yes\"");
    ck_assert_msg(st == 400 || st == 422, "overwrite \"yes\": %ld", st);
    ck_assert_int_eq(files_under(&u, pid, "jobs/"), 0);
    ck_assert_int_eq(files_under(&u, pid, "live/"), 1);

    snprintf(path, sizeof(path), "/api/v1/jobs/%lld", (long long)id);
    ck_assert_int_eq(it_request_status(&srv, "DELETE", path, NULL, u.hdrs), 200);
    json_decref(it_status_wait(&srv, u.hdrs, path, NULL, 60));
}
END_TEST

int main(void)
{
    const TTest *tests[] = {copy_puts_regular_files_in_the_project_skips_links_and_is_all_or_nothing,
                            others_cannot_copy_bad_destinations_are_refused_and_running_jobs_copy_what_is_there,
                            NULL};

    if (geteuid() != 0) {
        printf("SKIP: jobs run in the sandbox, which needs root on this host\n");
        return 77;
    }
    return it_tests_run("artifacts_copy", 280, setup, teardown, tests);
}
