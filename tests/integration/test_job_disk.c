/*
 * The disk-filling job (issue 11, item 5): with a tier's job_disk_bytes at
 * 32 MiB, a real job that writes 256 MiB into its work directory gets an
 * OSError with errno EDQUOT or ENOSPC in Python (it prints it); the same
 * job's output directory shares the limit; another user's job still runs and
 * succeeds meanwhile, and the server keeps answering. GET job shows the
 * limit and what the job used; once it has ended its work directory is gone
 * while its output stays.
 *
 * Before the fix the job wrote all 256 MiB (3 GiB in the report) past the
 * 1 GiB setting. Skips (77) where the host offers no disk quota mechanism
 * (`eddy sandbox check` says "disk quotas none") or the test is not root.
 */
#include "harness.h"

#include <check.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define LIMIT (32 << 20)

static it_server srv;
static char dir[64], data[128];
static char admin_cookie[512], admin_csrf[256];
/* The default setup: the server drops to the eddy user and its root
 * launcher makes, measures and drops the quota trees (sandbox/README.md
 * "Privilege split"); root_env keeps the server root, which applies them
 * itself. */
static const char *const env[] = {"EDDY_METER_INTERVAL_MS=1000", "EDDY_STOP_GRACE_MS=1000", NULL};
static const char *const root_env[] = {"EDDY_METER_INTERVAL_MS=1000", "EDDY_STOP_GRACE_MS=1000", "EDDY_USER=root",
                                       NULL};

static const char FILL_PY[] =
    "import errno, os\n"
    "chunk = b'x' * (1 << 20)\n"
    "wrote = 0\n"
    "try:\n"
    "    with open('/home/aistudio/work/fill.bin', 'wb') as f:\n"
    "        for _ in range(256):\n"
    "            f.write(chunk)\n"
    "            f.flush()\n"
    "            wrote += len(chunk)\n"
    "        os.fsync(f.fileno())\n"
    "    print('WROTE ALL', wrote, flush=True)\n"
    "except OSError as e:\n"
    "    print('OSError', errno.errorcode.get(e.errno, e.errno), 'after', wrote, flush=True)\n"
    "try:\n"
    "    with open('/home/aistudio/output/more.bin', 'wb') as f:\n"
    "        f.write(chunk * 4)\n"
    "        f.flush()\n"
    "        os.fsync(f.fileno())\n"
    "    print('OUTPUT WROTE ALL', flush=True)\n"
    "except OSError as e:\n"
    "    print('output OSError', errno.errorcode.get(e.errno, e.errno), flush=True)\n"
    "os.remove('/home/aistudio/work/fill.bin')\n"
    "open('/home/aistudio/output/result.txt', 'w').write('kept')\n"
    "print('recovered', flush=True)\n";

static const char SMALL_PY[] =
    "import time\n"
    "time.sleep(2)\n"
    "open('/home/aistudio/output/ok.txt', 'w').write('fine')\n"
    "print('other user ok', flush=True)\n";

typedef struct user {
    char cookie[512], csrf[256];
    const char *hdrs[4];
} user;

static void make_user(user *u, const char *name)
{
    char body[256], path[128], key[64], pw[64];
    const char *ah[] = {admin_cookie, admin_csrf, key, NULL};
    it_resp r;
    int64_t id;

    snprintf(pw, sizeof(pw), "pass-%s-123", name);
    snprintf(body, sizeof(body), "{\"username\":\"%s\",\"email\":\"%s@example.com\",\"password\":\"%s\"}", name,
             name, pw);
    it_request(&r, &srv, "POST", "/api/v1/auth/signup", body, NULL);
    ck_assert_int_eq(r.status, 201);
    id = json_integer_value(json_object_get(r.json, "id"));
    it_resp_free(&r);
    snprintf(path, sizeof(path), "/api/v1/admin/users/%lld/grants", (long long)id);
    snprintf(key, sizeof(key), "Idempotency-Key: grant-%s", name);
    it_request(&r, &srv, "POST", path, "{\"amount_mcoins\": 1000000, \"reason\": \"test\"}", ah);
    ck_assert_int_eq(r.status, 201);
    it_resp_free(&r);
    ck_assert_int_eq(it_login(&srv, name, pw, u->cookie, sizeof(u->cookie), u->csrf, sizeof(u->csrf)), 0);
    u->hdrs[0] = u->cookie;
    u->hdrs[1] = u->csrf;
    u->hdrs[2] = NULL;
}

/* A project holding `src` as main.py, a version of it, and a job running it. */
static int64_t run_job(user *u, const char *name, const char *src)
{
    char pid[64], vid[64], body[512], path[256];
    it_resp r;
    int64_t id;

    snprintf(body, sizeof(body), "{\"name\":\"%s\",\"visibility\":\"private\"}", name);
    it_request(&r, &srv, "POST", "/api/v1/projects", body, u->hdrs);
    ck_assert_int_eq(r.status, 201);
    snprintf(pid, sizeof(pid), "%s", json_string_value(json_object_get(r.json, "id")));
    it_resp_free(&r);
    snprintf(path, sizeof(path), "/api/v1/projects/%s/files/main.py", pid);
    it_request(&r, &srv, "PUT", path, src, u->hdrs);
    ck_assert_int_lt(r.status, 300);
    it_resp_free(&r);
    snprintf(path, sizeof(path), "/api/v1/projects/%s/versions", pid);
    it_request(&r, &srv, "POST", path, "{\"message\":\"v1\"}", u->hdrs);
    ck_assert_int_eq(r.status, 201);
    snprintf(vid, sizeof(vid), "%s", json_string_value(json_object_get(r.json, "id")));
    it_resp_free(&r);
    snprintf(body, sizeof(body),
             "{\"project_id\":\"%s\",\"version\":\"%s\",\"entry\":\"main.py\",\"resource\":\"cpu-basic\","
             "\"max_runtime_s\":120}", pid, vid);
    it_request(&r, &srv, "POST", "/api/v1/jobs", body, u->hdrs);
    ck_assert_msg(r.status == 201, "%ld %s", r.status, r.body);
    id = json_integer_value(json_object_get(r.json, "id"));
    it_resp_free(&r);
    return id;
}

/* GET the job until it has ended; its JSON (caller decrefs). */
static json_t *wait_end(user *u, int64_t id)
{
    char path[64];
    for (int i = 0; i < 1200; i++) {
        it_resp r;
        const char *st;
        snprintf(path, sizeof(path), "/api/v1/jobs/%lld", (long long)id);
        it_request(&r, &srv, "GET", path, NULL, u->hdrs);
        ck_assert_int_eq(r.status, 200);
        st = json_string_value(json_object_get(r.json, "status"));
        if (strcmp(st, "queued") != 0 && strcmp(st, "running") != 0) {
            json_t *j = json_incref(r.json);
            it_resp_free(&r);
            return j;
        }
        it_resp_free(&r);
        usleep(100000);
    }
    ck_abort_msg("job %lld did not end", (long long)id);
    return NULL;
}

static void job_log(char *out, size_t n, user *u, int64_t id)
{
    char path[80];
    it_resp r;
    snprintf(path, sizeof(path), "/api/v1/jobs/%lld/logs?offset=0", (long long)id);
    it_request(&r, &srv, "GET", path, NULL, u->hdrs);
    ck_assert_int_eq(r.status, 200);
    snprintf(out, n, "%s", r.body);
    it_resp_free(&r);
}

static void setup(void)
{
    snprintf(dir, sizeof(dir), "/tmp/eddy-it-disk-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(data, sizeof(data), "%s/data", dir);
    mkdir(data, 0700);
    char *argv[] = {"eddy", "admin", "create-user", "--data", data, "--username", "root",
                    "--email", "root@example.com", "--password", "correct horse battery",
                    "--role", "admin", NULL};
    ck_assert_int_eq(it_eddy_status(argv), 0);
    ck_assert_int_eq(it_server_start_in(&srv, data, env), 0);
    ck_assert_int_eq(it_login(&srv, "root", "correct horse battery", admin_cookie, sizeof(admin_cookie),
                              admin_csrf, sizeof(admin_csrf)), 0);
    {
        /* a small job disk for the free tier, set as an operator would */
        const char *ah[] = {admin_cookie, admin_csrf, NULL};
        it_resp r;
        it_request(&r, &srv, "PUT", "/api/v1/admin/tiers/free", "{\"job_disk_bytes\": 100}", ah);
        ck_assert_msg(r.status == 422 && strstr(r.body, "job_disk_bytes"), "%ld %s", r.status, r.body);
        it_resp_free(&r);
        it_request(&r, &srv, "PUT", "/api/v1/admin/tiers/free", "{\"job_disk_bytes\": -1}", ah);
        ck_assert_msg(r.status == 422 && strstr(r.body, "job_disk_bytes"), "%ld %s", r.status, r.body);
        it_resp_free(&r);
        it_request(&r, &srv, "PUT", "/api/v1/admin/tiers/free", "{\"job_disk_bytes\": 33554432}", ah);
        ck_assert_msg(r.status == 200, "%ld %s", r.status, r.body);
        ck_assert_int_eq(json_integer_value(json_object_get(r.json, "job_disk_bytes")), LIMIT);
        it_resp_free(&r);
    }
}

static void teardown(void)
{
    char cmd[128];
    ck_assert_int_eq(it_server_stop(&srv), 0);
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    ck_assert_int_eq(system(cmd), 0);
}

START_TEST(a_job_writing_past_its_disk_limit_gets_edquot_and_nobody_else_notices)
{
    user alice, bob;
    char logs[8192], path[256], jdir[300];
    int64_t fill, small;
    json_t *j;
    it_resp r;
    struct stat sb;

    make_user(&alice, "alice");
    make_user(&bob, "bob");
    fill = run_job(&alice, "filler", FILL_PY);
    small = run_job(&bob, "small", SMALL_PY);

    /* the server answers while the job fills its disk */
    it_request(&r, &srv, "GET", "/healthz", NULL, NULL);
    ck_assert_int_eq(r.status, 200);
    it_resp_free(&r);

    j = wait_end(&alice, fill);
    job_log(logs, sizeof(logs), &alice, fill);
    ck_assert_msg(strstr(logs, "OSError EDQUOT after") || strstr(logs, "OSError ENOSPC after"),
                  "the job was not stopped at its limit: %s", logs);
    ck_assert_msg(!strstr(logs, "WROTE ALL"), "%s", logs);
    {
        const char *after = strstr(logs, "after ");
        long long wrote = after ? atoll(after + 6) : -1;
        printf("disk-filling job under a %d-byte limit: %.*s\n", LIMIT, (int)strcspn(strstr(logs, "OSError"), "\n"),
               strstr(logs, "OSError"));
        ck_assert_msg(wrote >= 0 && wrote <= LIMIT, "wrote %lld bytes under a %d-byte limit", wrote, LIMIT);
    }
    ck_assert_msg(strstr(logs, "output OSError EDQUOT") || strstr(logs, "output OSError ENOSPC"),
                  "work and output share one limit: %s", logs);
    ck_assert_msg(strstr(logs, "recovered"), "deleting frees the space again: %s", logs);
    ck_assert_str_eq(json_string_value(json_object_get(j, "status")), "succeeded");
    ck_assert_int_eq(json_integer_value(json_object_get(j, "disk_limit_bytes")), LIMIT);
    json_decref(j);

    /* served as eddy (the default split), the tree was the launcher's: its
     * store is root's and 0700 in the eddy-owned data directory */
    ck_assert_int_eq(stat(data, &sb), 0);
    if (sb.st_uid != 0) {
        char store[200];
        snprintf(store, sizeof(store), "%s/launcher", data);
        ck_assert_int_eq(lstat(store, &sb), 0);
        ck_assert_uint_eq(sb.st_uid, 0);
        ck_assert_uint_eq(sb.st_mode & 0777, 0700);
        printf("disk-filling job: served unprivileged, quota through the sandbox launcher\n");
    }

    /* bob's job ran beside it */
    j = wait_end(&bob, small);
    ck_assert_str_eq(json_string_value(json_object_get(j, "status")), "succeeded");
    json_decref(j);
    job_log(logs, sizeof(logs), &bob, small);
    ck_assert_msg(strstr(logs, "other user ok"), "%s", logs);

    /* after the end: the work copy goes, usage is recorded, output stays */
    snprintf(jdir, sizeof(jdir), "%s/jobs/%lld/work", data, (long long)fill);
    for (int i = 0; i < 300 && lstat(jdir, &sb) == 0; i++)
        usleep(100000);
    ck_assert_msg(lstat(jdir, &sb) != 0, "%s is still there", jdir);
    snprintf(path, sizeof(path), "/api/v1/jobs/%lld", (long long)fill);
    for (int i = 0; i < 100; i++) {
        it_request(&r, &srv, "GET", path, NULL, alice.hdrs);
        json_t *u = json_object_get(r.json, "disk_used_bytes");
        if (json_is_integer(u)) {
            ck_assert_int_ge(json_integer_value(u), 1);
            ck_assert_int_le(json_integer_value(u), LIMIT);
            it_resp_free(&r);
            break;
        }
        it_resp_free(&r);
        ck_assert_int_lt(i, 99);
        usleep(100000);
    }
    {
        /* the ended job holds no mount and no quota image: its output was
         * copied out of the tree into a plain directory */
        char mounts[1 << 16], img[300];
        it_slurp(mounts, sizeof(mounts), "/proc/self/mounts");
        snprintf(jdir, sizeof(jdir), " %s/jobs/%lld/", data, (long long)fill);
        ck_assert_msg(strstr(mounts, jdir) == NULL, "still mounted: %s", jdir);
        snprintf(img, sizeof(img), "%s/images/%u.img", data, 0x40000000u + (unsigned)fill);
        ck_assert_msg(lstat(img, &sb) != 0, "%s stays", img);
        snprintf(img, sizeof(img), "%s/launcher/images/%u.img", data, 0x40000000u + (unsigned)fill);
        ck_assert_msg(lstat(img, &sb) != 0, "%s stays", img);
    }
    snprintf(path, sizeof(path), "/api/v1/jobs/%lld/artifacts/result.txt", (long long)fill);
    it_request(&r, &srv, "GET", path, NULL, alice.hdrs);
    ck_assert_msg(r.status == 200 && strcmp(r.body, "kept") == 0, "%ld %s", r.status, r.body);
    it_resp_free(&r);
}
END_TEST

/* The same limit with the server kept root (user = root): it applies the
 * quota itself. */
START_TEST(a_root_server_enforces_the_limit_itself)
{
    user alice;
    char logs[8192];
    int64_t fill;
    json_t *j;

    char rdata[160];
    const char *ah[] = {admin_cookie, admin_csrf, NULL};
    it_resp r;

    /* a data directory of its own: one served as eddy is eddy's (0700),
     * which a root server's sandboxes cannot pass through */
    ck_assert_int_eq(it_server_stop(&srv), 0);
    snprintf(rdata, sizeof(rdata), "%s/rootdata", dir);
    char *argv[] = {"eddy", "admin", "create-user", "--data", rdata, "--username", "root",
                    "--email", "root@example.com", "--password", "correct horse battery",
                    "--role", "admin", NULL};
    ck_assert_int_eq(it_eddy_status(argv), 0);
    ck_assert_int_eq(it_server_start_in(&srv, rdata, root_env), 0);
    ck_assert_int_eq(it_login(&srv, "root", "correct horse battery", admin_cookie, sizeof(admin_cookie),
                              admin_csrf, sizeof(admin_csrf)), 0);
    it_request(&r, &srv, "PUT", "/api/v1/admin/tiers/free", "{\"job_disk_bytes\": 33554432}", ah);
    ck_assert_msg(r.status == 200, "%ld %s", r.status, r.body);
    it_resp_free(&r);
    make_user(&alice, "alice");
    fill = run_job(&alice, "filler", FILL_PY);
    j = wait_end(&alice, fill);
    job_log(logs, sizeof(logs), &alice, fill);
    ck_assert_msg(strstr(logs, "OSError EDQUOT after") || strstr(logs, "OSError ENOSPC after"),
                  "the job was not stopped at its limit: %s", logs);
    ck_assert_msg(strstr(logs, "recovered"), "%s", logs);
    ck_assert_int_eq(json_integer_value(json_object_get(j, "disk_limit_bytes")), LIMIT);
    json_decref(j);
}
END_TEST

/* No mechanism (EDDY_DISK_QUOTA=none stands for a host without loop devices
 * or project quotas): a job whose tier has a disk limit is refused at
 * submit with a message naming what is missing; with the tier's limit at 0
 * the same job runs. */
START_TEST(without_a_quota_mechanism_limited_jobs_fail_closed)
{
    static const char *const env_none[] = {"EDDY_METER_INTERVAL_MS=1000", "EDDY_DISK_QUOTA=none",
                                           NULL};
    const char *ah[] = {admin_cookie, admin_csrf, NULL};
    char pid[64], vid[64], body[512], path[256];
    user alice;
    it_resp r;
    int64_t id;
    json_t *j;

    ck_assert_int_eq(it_server_stop(&srv), 0);
    ck_assert_int_eq(it_server_start_in(&srv, data, env_none), 0);
    ck_assert_int_eq(it_login(&srv, "root", "correct horse battery", admin_cookie, sizeof(admin_cookie),
                              admin_csrf, sizeof(admin_csrf)), 0);
    make_user(&alice, "alice");
    it_request(&r, &srv, "POST", "/api/v1/projects", "{\"name\":\"closed\",\"visibility\":\"private\"}",
               alice.hdrs);
    ck_assert_int_eq(r.status, 201);
    snprintf(pid, sizeof(pid), "%s", json_string_value(json_object_get(r.json, "id")));
    it_resp_free(&r);
    snprintf(path, sizeof(path), "/api/v1/projects/%s/files/main.py", pid);
    it_request(&r, &srv, "PUT", path, SMALL_PY, alice.hdrs);
    it_resp_free(&r);
    snprintf(path, sizeof(path), "/api/v1/projects/%s/versions", pid);
    it_request(&r, &srv, "POST", path, "{\"message\":\"v1\"}", alice.hdrs);
    ck_assert_int_eq(r.status, 201);
    snprintf(vid, sizeof(vid), "%s", json_string_value(json_object_get(r.json, "id")));
    it_resp_free(&r);
    snprintf(body, sizeof(body), "{\"project_id\":\"%s\",\"version\":\"%s\",\"entry\":\"main.py\","
             "\"resource\":\"cpu-basic\",\"max_runtime_s\":60}", pid, vid);
    it_request(&r, &srv, "POST", "/api/v1/jobs", body, alice.hdrs);
    ck_assert_msg(r.status == 422 && strstr(r.body, "no disk quota mechanism") &&
                  strstr(r.body, "EDDY_DISK_QUOTA=none"), "%ld %s", r.status, r.body);
    it_resp_free(&r);
    /* the operator's way out: no limit for the tier */
    it_request(&r, &srv, "PUT", "/api/v1/admin/tiers/free", "{\"job_disk_bytes\": 0}", ah);
    ck_assert_int_eq(r.status, 200);
    it_resp_free(&r);
    it_request(&r, &srv, "POST", "/api/v1/jobs", body, alice.hdrs);
    ck_assert_msg(r.status == 201, "%ld %s", r.status, r.body);
    id = json_integer_value(json_object_get(r.json, "id"));
    it_resp_free(&r);
    j = wait_end(&alice, id);
    ck_assert_str_eq(json_string_value(json_object_get(j, "status")), "succeeded");
    ck_assert(json_is_null(json_object_get(j, "disk_limit_bytes")));
    json_decref(j);
}
END_TEST

/* Skip where the host has no mechanism (or we are not root). */
static int host_has_quotas(char *why, size_t n)
{
    char cmd[512], line[1024];
    FILE *p;
    int found = 0;

    if (geteuid() != 0) {
        snprintf(why, n, "disk quotas need root");
        return 0;
    }
    snprintf(cmd, sizeof(cmd), "%s sandbox check --data /tmp 2>&1", it_eddy_bin());
    if ((p = popen(cmd, "r")) == NULL) {
        snprintf(why, n, "cannot run eddy sandbox check");
        return 0;
    }
    snprintf(why, n, "eddy sandbox check said nothing about disk quotas");
    while (fgets(line, sizeof(line), p)) {
        if (strncmp(line, "disk quotas ", 12) == 0)
            found = strstr(line, " none") == NULL;
        if (strncmp(line, "disk quota detail", 17) == 0)
            snprintf(why, n, "no disk quota mechanism: %s", line);
    }
    pclose(p);
    return found;
}

int main(void)
{
    Suite *s = suite_create("job_disk");
    TCase *tc = tcase_create("disk");
    SRunner *sr;
    char why[1100];
    int failed;

    if (!host_has_quotas(why, sizeof(why))) {
        printf("SKIP: %s\n", why);
        return 77;
    }
    tcase_set_timeout(tc, 240);
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, a_job_writing_past_its_disk_limit_gets_edquot_and_nobody_else_notices);
    tcase_add_test(tc, without_a_quota_mechanism_limited_jobs_fail_closed);
    tcase_add_test(tc, a_root_server_enforces_the_limit_itself);
    suite_add_tcase(s, tc);
    sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
