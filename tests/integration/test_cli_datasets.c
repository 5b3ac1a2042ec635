/* `eddy datasets ...` end to end against the real server (issue 15): create,
 * upload a directory holding a 100 MiB file whose upload is killed midway
 * (SIGKILL after 50 MiB: the server keeps the first 32 MiB chunk) and run
 * again (it resumes at the server's offset, checked before and after,
 * instead of starting over), a dropped connection retried within one run,
 * publish, ls, show, versions, download (the whole version unpacked and
 * compared, one file resumed from a partial download, the tar), attach and
 * detach, rm; and bad input: a symbolic link refuses the whole upload before
 * anything is sent, unknown datasets, bad names and versions, with their
 * messages and exit statuses (1 refused, 2 usage). */
#include "harness.h"

#include <check.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define BIG_BYTES (100 * 1024 * 1024)
#define CHUNK     (32 * 1024 * 1024)

static it_server srv;
static char dir[64], url_env[128], key_env[256], state_env[128], auth[300];
static char cookie[512], csrf[256];

static void setup(void)
{
    const char *hdrs[3] = {cookie, csrf, NULL};
    it_resp r;

    snprintf(dir, sizeof(dir), "/tmp/eddy-it-clids-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    ck_assert_int_eq(it_server_start(&srv, NULL), 0);
    it_request(&r, &srv, "POST", "/api/v1/auth/signup",
               "{\"username\":\"carol\",\"email\":\"carol@example.com\",\"password\":\"pass-carol-123\"}", NULL);
    ck_assert_int_eq(r.status, 201);
    it_resp_free(&r);
    ck_assert_int_eq(it_login(&srv, "carol", "pass-carol-123", cookie, sizeof(cookie), csrf, sizeof(csrf)), 0);
    it_request(&r, &srv, "POST", "/api/v1/keys", "{\"name\":\"cli\",\"env\":\"prod\",\"scopes\":[\"read\",\"write\"]}",
               hdrs);
    ck_assert_msg(r.status == 201, "key: %ld %s", r.status, r.body);
    snprintf(key_env, sizeof(key_env), "EDDY_API_KEY=%s", it_json_str(r.json, "key"));
    snprintf(auth, sizeof(auth), "Authorization: Bearer %s", it_json_str(r.json, "key"));
    it_resp_free(&r);
    snprintf(url_env, sizeof(url_env), "EDDY_URL=%s", srv.base_url);
    snprintf(state_env, sizeof(state_env), "XDG_STATE_HOME=%s/state", dir);
}

static void teardown(void)
{
    char cmd[128];

    ck_assert_int_eq(it_server_stop(&srv), 0);
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    ck_assert_int_eq(system(cmd), 0);
}

/* Run eddy as carol with `extra` ("NAME=value", NULL-terminated, may be NULL) set too. */
static void run_env(it_run *o, const char *const *extra, const char *const *argv)
{
    const char *env[8] = {url_env, key_env, state_env, NULL};
    int n = 3;

    for (; extra && *extra && n < 7; extra++)
        env[n++] = *extra;
    env[n] = NULL;
    it_run_eddy(o, dir, dir, NULL, env, argv);
}

#define EDDY(o, ...) run_env((o), NULL, (const char *const[]){"eddy", __VA_ARGS__, NULL})

static void expect(const it_run *o, int status, const char *what)
{
    ck_assert_msg(o->status == status, "%s: exit %d, wanted %d\nstdout: %s\nstderr: %s", what, o->status, status, o->out,
                  o->err);
}

static void write_file(const char *path, const void *data, size_t n)
{
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(data, 1, n, f), n);
    ck_assert_int_eq(fclose(f), 0);
}

static void sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void sh(const char *fmt, ...)
{
    char cmd[1024];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(cmd, sizeof(cmd), fmt, ap);
    va_end(ap);
    ck_assert_msg(system(cmd) == 0, "%s", cmd);
}

/* The one upload id the CLI keeps in its state directory ("" when none). */
static void state_upload_id(char *out, size_t n)
{
    char path[300];
    struct dirent *de;
    DIR *d;

    out[0] = '\0';
    snprintf(path, sizeof(path), "%s/state/eddy/uploads", dir);
    if ((d = opendir(path)) == NULL)
        return;
    while ((de = readdir(d)) != NULL) {
        char file[600], buf[128] = "";
        if (de->d_name[0] == '.')
            continue;
        snprintf(file, sizeof(file), "%s/%s", path, de->d_name);
        it_slurp(buf, sizeof(buf), file);
        buf[strcspn(buf, "\n")] = '\0';
        snprintf(out, n, "%s", buf);
    }
    closedir(d);
}

/* The server's offset of upload `uid` (-404 when it is gone). */
static long long server_offset(const char *uid)
{
    char path[200];
    const char *hdrs[] = {auth, NULL};
    long long off;
    it_resp r;

    snprintf(path, sizeof(path), "/api/v1/uploads/%s", uid);
    it_request(&r, &srv, "GET", path, NULL, hdrs);
    off = r.status == 200 ? (long long)json_integer_value(json_object_get(r.json, "offset")) : -r.status;
    it_resp_free(&r);
    return off;
}

START_TEST(datasets_end_to_end)
{
    char src[200], link[300], path[300], uid[80], pid[64];
    const char *hdrs[3] = {cookie, csrf, NULL};
    unsigned char *big = malloc(BIG_BYTES);
    it_run o;
    it_resp r;

    ck_assert_ptr_nonnull(big);
    for (size_t i = 0; i < BIG_BYTES; i++)
        big[i] = (unsigned char)((i * 2654435761u) >> 13);
    snprintf(src, sizeof(src), "%s/src", dir);
    sh("mkdir -p %s/sub %s/state", src, dir);
    snprintf(path, sizeof(path), "%s/big.bin", src);
    write_file(path, big, BIG_BYTES);
    snprintf(path, sizeof(path), "%s/sub/a.txt", src);
    write_file(path, "alpha\n", 6);
    snprintf(path, sizeof(path), "%s/empty.txt", src);
    write_file(path, "", 0);

    /* create; bad names */
    EDDY(&o, "datasets", "create", "CLI Data");
    expect(&o, 0, "create");
    ck_assert_ptr_nonnull(strstr(o.out, "Created dataset carol/cli-data"));
    EDDY(&o, "datasets", "create", "");
    expect(&o, 1, "create with an empty name");
    ck_assert_ptr_nonnull(strstr(o.err, "bad_request"));
    EDDY(&o, "datasets", "create", "a/b");
    expect(&o, 1, "create with a slash");
    EDDY(&o, "datasets", "create", "CLI Data");
    expect(&o, 1, "create twice");
    ck_assert_ptr_nonnull(strstr(o.err, "conflict"));

    /* a symbolic link refuses the whole upload before anything is sent */
    snprintf(link, sizeof(link), "%s/sub/passwd", src);
    ck_assert_int_eq(symlink("/etc/passwd", link), 0);
    EDDY(&o, "datasets", "upload", "cli-data", src);
    expect(&o, 2, "upload with a link");
    ck_assert_ptr_nonnull(strstr(o.err, "symbolic link"));
    {
        it_resp d;
        char p[200];
        json_t *ds = NULL;
        it_request(&r, &srv, "GET", "/api/v1/datasets?owner=carol", NULL, hdrs);
        ds = json_array_get(json_object_get(r.json, "items"), 0);
        snprintf(p, sizeof(p), "/api/v1/datasets/%s/draft", it_json_str(ds, "id"));
        it_request(&d, &srv, "GET", p, NULL, hdrs);
        ck_assert_int_eq(d.status, 200);
        ck_assert_int_eq(json_integer_value(json_object_get(d.json, "file_count")), 0);
        it_resp_free(&d);
        it_resp_free(&r);
    }
    ck_assert_int_eq(unlink(link), 0);

    /* killed after 50 MiB: the server keeps the first 32 MiB chunk */
    {
        const char *const env[] = {"EDDY_TEST_UPLOAD_DROP_AFTER=52428800", "EDDY_TEST_UPLOAD_DROP_KILL=1", NULL};
        run_env(&o, env, (const char *const[]){"eddy", "datasets", "upload", "cli-data", src, NULL});
    }
    ck_assert_msg(o.status == -1, "the killed upload ended with %d\n%s", o.status, o.err);
    state_upload_id(uid, sizeof(uid));
    ck_assert_msg(uid[0] != '\0', "no upload id kept");
    ck_assert_int_eq(server_offset(uid), CHUNK);
    /* again: it resumes at the server's offset, publishes, and the upload is done */
    EDDY(&o, "datasets", "upload", "cli-data", src, "--publish", "-m", "first version");
    expect(&o, 0, "upload resumed");
    ck_assert_msg(strstr(o.err, "big.bin: resuming the upload at byte 33554432 of 104857600") != NULL, "stderr: %s",
                  o.err);
    ck_assert_ptr_nonnull(strstr(o.out, "Uploaded 3 files"));
    ck_assert_ptr_nonnull(strstr(o.out, "Published version 1 of carol/cli-data: 3 files"));
    ck_assert_int_eq(server_offset(uid), -404);
    state_upload_id(uid, sizeof(uid));
    ck_assert_str_eq(uid, "");

    /* a connection dropped within one run is resumed in that run */
    snprintf(path, sizeof(path), "%s/more.bin", dir);
    write_file(path, big, 10 * 1024 * 1024);
    {
        const char *const env[] = {"EDDY_TEST_UPLOAD_DROP_AFTER=6000000", "EDDY_UPLOAD_CHUNK_BYTES=4194304", NULL};
        run_env(&o, env,
                (const char *const[]){"eddy", "datasets", "upload", "carol/cli-data", path, "--to", "extra",
                                      "--publish", "-m", "more", NULL});
    }
    expect(&o, 0, "upload with a drop");
    ck_assert_msg(strstr(o.err, "resuming from the server's offset") != NULL, "stderr: %s", o.err);
    ck_assert_ptr_nonnull(strstr(o.out, "Published version 2 of carol/cli-data: 4 files"));

    /* ls, show, versions */
    EDDY(&o, "datasets", "ls");
    expect(&o, 0, "ls");
    ck_assert_ptr_nonnull(strstr(o.out, "cli-data"));
    EDDY(&o, "datasets", "show", "cli-data@1");
    expect(&o, 0, "show");
    ck_assert_ptr_nonnull(strstr(o.out, "Version 1: first version (3 files"));
    ck_assert_ptr_nonnull(strstr(o.out, "sub/a.txt"));
    EDDY(&o, "datasets", "versions", "cli-data");
    expect(&o, 0, "versions");
    ck_assert_ptr_nonnull(strstr(o.out, "first version"));
    ck_assert_ptr_nonnull(strstr(o.out, "more"));

    /* the whole version 1, unpacked and compared */
    snprintf(path, sizeof(path), "%s/out1", dir);
    EDDY(&o, "datasets", "download", "cli-data@1", "-o", path);
    expect(&o, 0, "download the version");
    ck_assert_ptr_nonnull(strstr(o.out, "3 files"));
    sh("diff -r %s %s", src, path);
    /* one file, resumed from a partial download */
    snprintf(path, sizeof(path), "%s/big.copy.eddy-part", dir);
    write_file(path, big, 10 * 1024 * 1024);
    snprintf(path, sizeof(path), "%s/big.copy", dir);
    EDDY(&o, "datasets", "download", "cli-data", "big.bin", "-o", path);
    expect(&o, 0, "download one file");
    ck_assert_ptr_nonnull(strstr(o.err, "resuming the download at byte 10485760"));
    snprintf(link, sizeof(link), "%s/big.bin", src);
    sh("cmp %s %s", link, path);
    /* the tar */
    snprintf(path, sizeof(path), "%s/v2.tar", dir);
    EDDY(&o, "datasets", "download", "cli-data@2", "--tar", "-o", path);
    expect(&o, 0, "download the tar");
    sh("tar -tf %s | grep -qx extra/more.bin && test -s %s", path, path);
    /* not in the version */
    EDDY(&o, "datasets", "download", "cli-data@1", "extra/more.bin");
    expect(&o, 1, "download a missing file");
    ck_assert_ptr_nonnull(strstr(o.err, "has no file extra/more.bin"));

    /* attach and detach */
    ck_assert_int_eq(it_project_make(pid, sizeof(pid), &srv, hdrs, "proj", NULL, NULL), 0);
    EDDY(&o, "datasets", "attach", pid, "cli-data@1");
    expect(&o, 0, "attach");
    ck_assert_ptr_nonnull(strstr(o.out, "/home/aistudio/data/carol-cli-data"));
    snprintf(path, sizeof(path), "/api/v1/projects/%s/datasets", pid);
    it_request(&r, &srv, "GET", path, NULL, hdrs);
    ck_assert_int_eq(json_integer_value(json_object_get(json_array_get(json_object_get(r.json, "items"), 0), "version")),
                     1);
    it_resp_free(&r);
    EDDY(&o, "datasets", "attach", pid, "cli-data@latest");
    expect(&o, 0, "attach latest");
    it_request(&r, &srv, "GET", path, NULL, hdrs);
    ck_assert_uint_eq(json_array_size(json_object_get(r.json, "items")), 1);
    ck_assert_str_eq(it_json_str(json_array_get(json_object_get(r.json, "items"), 0), "version"), "latest");
    it_resp_free(&r);
    EDDY(&o, "datasets", "detach", pid, "cli-data");
    expect(&o, 0, "detach");
    it_request(&r, &srv, "GET", path, NULL, hdrs);
    ck_assert_uint_eq(json_array_size(json_object_get(r.json, "items")), 0);
    it_resp_free(&r);
    EDDY(&o, "datasets", "detach", pid, "cli-data");
    expect(&o, 1, "detach again");
    ck_assert_ptr_nonnull(strstr(o.err, "does not mount"));

    /* bad input */
    EDDY(&o, "datasets", "show", "nosuch");
    expect(&o, 1, "unknown dataset");
    ck_assert_ptr_nonnull(strstr(o.err, "no dataset carol/nosuch"));
    EDDY(&o, "datasets", "show", "bad name!");
    expect(&o, 2, "bad dataset name");
    ck_assert_ptr_nonnull(strstr(o.err, "is not a dataset"));
    EDDY(&o, "datasets", "show", "cli-data@9");
    expect(&o, 1, "unknown version");
    EDDY(&o, "datasets", "download", "cli-data@x");
    expect(&o, 2, "bad version");
    EDDY(&o, "datasets", "upload", "cli-data", "/nonexistent/file");
    expect(&o, 2, "missing local file");
    EDDY(&o, "datasets", "upload", "cli-data", src, "--unpack");
    expect(&o, 2, "--unpack without --publish");
    EDDY(&o, "datasets", "frobnicate");
    expect(&o, 2, "unknown subcommand");
    EDDY(&o, "datasets", "versions");
    expect(&o, 2, "versions without a dataset");

    /* rm a version, then the dataset */
    EDDY(&o, "datasets", "rm", "cli-data", "--version", "1");
    expect(&o, 0, "rm a version");
    EDDY(&o, "datasets", "show", "cli-data@1");
    expect(&o, 1, "a deleted version");
    EDDY(&o, "datasets", "rm", "cli-data");
    expect(&o, 0, "rm");
    EDDY(&o, "datasets", "show", "cli-data");
    expect(&o, 1, "a deleted dataset");
    ck_assert_ptr_nonnull(strstr(o.err, "not_found"));
    free(big);
}
END_TEST

int main(void)
{
    const TTest *tests[] = {datasets_end_to_end, NULL};
    return it_tests_run("cli_datasets", 200, setup, teardown, tests);
}
