/*
 * The workspace quota (issue 12, item 5) against the real server, sandbox
 * launcher (the default privilege split) and kernels: with the free tier's
 * workspace_bytes at 32 MiB, each project's working tree is a disk-quota
 * tree of 32 MiB.
 *   - the admin tiers API range-checks workspace_bytes (422 naming it) and
 *     GET /api/v1/tiers lists it;
 *   - a REST PUT past the limit is 402 quota_exceeded; another user's write
 *     still succeeds; DELETE frees the space and the same PUT then works;
 *   - a kernel that writes past it gets OSError ENOSPC/EDQUOT in Python,
 *     another user's kernel writes fine meanwhile, and after deleting (in
 *     the kernel) it writes again;
 *   - GET /api/v1/quota shows workspace {used_bytes, limit_bytes, projects};
 *   - files survive a server restart (the tree is attached again);
 *   - with no mechanism (EDDY_DISK_QUOTA=none) a limited tier cannot create
 *     projects nor start kernels (422 naming what is missing); with
 *     workspace_bytes 0 it can.
 * Skips (77) without root or a disk quota mechanism; the kernel part also
 * needs idmapped bind mounts (`eddy sandbox check`).
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
#define MIB (1 << 20)

static it_server srv;
static char dir[256], admin_cookie[600], admin_csrf[300];
static int have_kernels;
static const char *const env[] = {"EDDY_STOP_GRACE_MS=1000", NULL};

static void boot(void)
{
    const char *ah[] = {admin_cookie, admin_csrf, NULL};
    it_resp r;

    ck_assert_int_eq(it_admin_server_start(&srv, dir, sizeof(dir), "wsq", env, admin_cookie, sizeof(admin_cookie),
                                           admin_csrf, sizeof(admin_csrf)),
                     0);
    /* a small workspace for the free tier, set as an operator would */
    it_request(&r, &srv, "PUT", "/api/v1/admin/tiers/free", "{\"workspace_bytes\": 100}", ah);
    ck_assert_msg(r.status == 422 && strstr(r.body, "workspace_bytes"), "%ld %s", r.status, r.body);
    it_resp_free(&r);
    it_request(&r, &srv, "PUT", "/api/v1/admin/tiers/free", "{\"workspace_bytes\": \"big\"}", ah);
    ck_assert_msg(r.status == 422 && strstr(r.body, "workspace_bytes"), "%ld %s", r.status, r.body);
    it_resp_free(&r);
    it_request(&r, &srv, "PUT", "/api/v1/admin/tiers/free", "{\"workspace_bytes\": 33554432}", ah);
    ck_assert_msg(r.status == 200, "%ld %s", r.status, r.body);
    ck_assert_int_eq(json_integer_value(json_object_get(r.json, "workspace_bytes")), LIMIT);
    it_resp_free(&r);
}

static void setup(void) { boot(); }

static void teardown(void)
{
    ck_assert_int_eq(it_server_stop(&srv), 0);
    ck_assert_int_eq(it_dir_remove(dir), 0);
}

/* PUT `mib` MiB of 'z' as `rel`: the status (the error code into code). */
static long put_blob(it_user *u, const char *pid, const char *rel, int mib, char *code, size_t n)
{
    char path[256];
    size_t len = (size_t)mib * MIB;
    char *body = malloc(len + 1);
    it_resp r;
    long st;

    memset(body, 'z', len);
    body[len] = '\0';
    snprintf(path, sizeof(path), "/api/v1/projects/%s/files/%s", pid, rel);
    it_request_n(&r, &srv, "PUT", path, body, len, u->hdrs);
    st = r.status;
    if (code) {
        const json_t *e = json_object_get(r.json, "error");
        snprintf(code, n, "%s", e ? it_json_str(e, "code") : "");
    }
    it_resp_free(&r);
    free(body);
    return st;
}

static json_t *workspace_of(it_user *u)
{
    json_t *q = it_get_json(&srv, u->hdrs, "/api/v1/quota");
    ck_assert_ptr_nonnull(q);
    json_t *ws = json_incref(json_object_get(q, "workspace"));
    json_decref(q);
    ck_assert_msg(json_is_object(ws), "GET /api/v1/quota has no workspace");
    return ws;
}

START_TEST(rest_writes_stop_at_the_limit_and_others_are_unaffected)
{
    it_user alice, bob;
    char pid[64], bpid[64], code[64], path[256], data[256];
    json_t *ws, *tiers;
    bool listed = false;

    ck_assert_int_eq(it_user_make(&alice, &srv, admin_cookie, admin_csrf, "alice", 0), 0);
    ck_assert_int_eq(it_user_make(&bob, &srv, admin_cookie, admin_csrf, "bob", 0), 0);
    ck_assert_int_eq(it_project_make(pid, sizeof(pid), &srv, alice.hdrs, "full", "a.txt", "a"), 0);
    ck_assert_int_eq(it_project_make(bpid, sizeof(bpid), &srv, bob.hdrs, "other", "b.txt", "b"), 0);

    tiers = it_get_json(&srv, alice.hdrs, "/api/v1/tiers");
    ck_assert_ptr_nonnull(tiers);
    for (size_t i = 0; i < json_array_size(json_object_get(tiers, "items")); i++) {
        json_t *t = json_array_get(json_object_get(tiers, "items"), i);
        if (strcmp(it_json_str(t, "name"), "free") == 0) {
            ck_assert_int_eq(json_integer_value(json_object_get(t, "workspace_bytes")), LIMIT);
            listed = true;
        }
    }
    ck_assert(listed);
    json_decref(tiers);

    ck_assert_int_eq(put_blob(&alice, pid, "one.bin", 20, NULL, 0), 201);
    ck_assert_int_eq(put_blob(&alice, pid, "two.bin", 20, code, sizeof(code)), 402);
    ck_assert_str_eq(code, "quota_exceeded");
    /* nothing partial: the refused file does not exist */
    snprintf(path, sizeof(path), "/api/v1/projects/%s/files/two.bin", pid);
    ck_assert_int_eq(it_request_status(&srv, "GET", path, NULL, alice.hdrs), 404);
    /* bob's project is his own tree */
    ck_assert_int_eq(put_blob(&bob, bpid, "big.bin", 20, NULL, 0), 201);

    ws = workspace_of(&alice);
    ck_assert_int_eq(json_integer_value(json_object_get(ws, "limit_bytes")), LIMIT);
    ck_assert_int_ge(json_integer_value(json_object_get(ws, "used_bytes")), 20 * MIB);
    ck_assert_int_le(json_integer_value(json_object_get(ws, "used_bytes")), LIMIT);
    ck_assert_int_eq(json_array_size(json_object_get(ws, "projects")), 1);
    ck_assert_str_eq(it_json_str(json_array_get(json_object_get(ws, "projects"), 0), "id"), pid);
    printf("workspace quota: %s, alice used %lld of %lld bytes\n", it_json_str(ws, "mechanism"),
           (long long)json_integer_value(json_object_get(ws, "used_bytes")), (long long)LIMIT);
    json_decref(ws);

    /* delete to recover */
    snprintf(path, sizeof(path), "/api/v1/projects/%s/files/one.bin", pid);
    ck_assert_int_eq(it_request_status(&srv, "DELETE", path, NULL, alice.hdrs), 204);
    ck_assert_int_eq(put_blob(&alice, pid, "two.bin", 20, NULL, 0), 201);

    /* a restart: the tree is attached again with everything in it */
    snprintf(data, sizeof(data), "%s", srv.data_dir);
    ck_assert_int_eq(it_server_stop(&srv), 0);
    ck_assert_int_eq(it_server_start_in(&srv, data, env), 0);
    snprintf(path, sizeof(path), "/api/v1/projects/%s/files/a.txt", pid);
    {
        it_resp r;
        it_request(&r, &srv, "GET", path, NULL, alice.hdrs);
        ck_assert_msg(r.status == 200 && strcmp(r.body, "a") == 0, "%ld %s", r.status, r.body);
        it_resp_free(&r);
    }
    ck_assert_int_eq(put_blob(&alice, pid, "three.bin", 20, code, sizeof(code)), 402);
}
END_TEST

/* ---- kernels ---------------------------------------------------------------------- */

static const char FILL_PY[] =
    "import errno, os\n"
    "chunk = b'x' * (1 << 20)\n"
    "wrote = 0\n"
    "try:\n"
    "    with open('/home/aistudio/work/fill.bin', 'wb') as f:\n"
    "        for _ in range(64):\n"
    "            f.write(chunk)\n"
    "            f.flush()\n"
    "            wrote += len(chunk)\n"
    "        os.fsync(f.fileno())\n"
    "    out = 'WROTE ALL %d' % wrote\n"
    "except OSError as e:\n"
    "    out = 'OSError %s after %d' % (errno.errorcode.get(e.errno, e.errno), wrote)\n"
    "os.remove('/home/aistudio/work/fill.bin')\n"
    "with open('/home/aistudio/work/after.bin', 'wb') as f:\n"
    "    f.write(chunk * 4)\n"
    "    os.fsync(f.fileno())\n"
    "out += ' recovered'\n";

START_TEST(a_kernel_writing_past_the_limit_gets_enospc)
{
    it_user alice, bob;
    char pid[64], bpid[64], kid[64], bkid[64], *out;

    if (!have_kernels) {
        printf("workspace quota: kernels skipped (no idmapped bind mounts)\n");
        return;
    }
    ck_assert_int_eq(it_user_make(&alice, &srv, admin_cookie, admin_csrf, "alice", 1000000), 0);
    ck_assert_int_eq(it_user_make(&bob, &srv, admin_cookie, admin_csrf, "bob", 1000000), 0);
    ck_assert_int_eq(it_project_make(pid, sizeof(pid), &srv, alice.hdrs, "filler", "a.txt", "a"), 0);
    ck_assert_int_eq(it_project_make(bpid, sizeof(bpid), &srv, bob.hdrs, "calm", "b.txt", "b"), 0);
    it_ck_kernel_start(kid, sizeof(kid), &srv, alice.hdrs, pid);
    it_ck_kernel_start(bkid, sizeof(bkid), &srv, bob.hdrs, bpid);
    out = it_ck_kernel_run(&srv, alice.hdrs, kid, pid, FILL_PY);
    printf("workspace quota, a kernel filling its tree: %s\n", out);
    ck_assert_msg(strstr(out, "OSError ENOSPC after") || strstr(out, "OSError EDQUOT after"), "%s", out);
    ck_assert_msg(atoll(strstr(out, "after ") + 6) <= LIMIT, "%s", out);
    ck_assert_msg(strstr(out, "recovered"), "%s", out);
    free(out);
    /* bob's kernel writes 20 MiB meanwhile */
    out = it_ck_kernel_run(&srv, bob.hdrs, bkid, bpid,
                           "import os\n"
                           "with open('/home/aistudio/work/mine.bin', 'wb') as f:\n"
                           "    f.write(b'y' * (20 << 20))\n"
                           "    os.fsync(f.fileno())\n"
                           "out = str(os.path.getsize('/home/aistudio/work/mine.bin'))\n");
    ck_assert_str_eq(out, "20971520");
    free(out);
    /* what the kernel wrote is the quota's: the API's next 20 MiB... fit */
    ck_assert_int_eq(put_blob(&alice, pid, "api.bin", 20, NULL, 0), 201);
    /* ... and then nothing more does, for the API nor the kernel */
    ck_assert_int_eq(put_blob(&alice, pid, "api2.bin", 20, NULL, 0), 402);

    /* a tree full of what git must store: saving a version is 402 (not a
     * 500), and works again once the kernel deleted some */
    out = it_ck_kernel_run(&srv, alice.hdrs, kid, pid,
                           "import os\n"
                           "os.makedirs('/home/aistudio/work/rnd', exist_ok=True)\n"
                           "n = 0\n"
                           "try:\n"
                           "    while n < 64:\n"
                           "        with open('/home/aistudio/work/rnd/%d.bin' % n, 'wb') as f:\n"
                           "            f.write(os.urandom(1 << 20))\n"
                           "            os.fsync(f.fileno())\n"
                           "        n += 1\n"
                           "except OSError:\n"
                           "    pass\n"
                           "os.remove('/home/aistudio/work/rnd/0.bin')\n"
                           "out = str(n)\n");
    ck_assert_msg(atoi(out) >= 2, "%s", out);
    free(out);
    {
        char path[160];
        it_resp r;
        snprintf(path, sizeof(path), "/api/v1/projects/%s/versions", pid);
        it_request(&r, &srv, "POST", path, "{\"message\":\"full\"}", alice.hdrs);
        ck_assert_msg(r.status == 402 && strstr(r.body, "quota_exceeded") && strstr(r.body, "workspace is full"),
                      "%ld %s", r.status, r.body);
        it_resp_free(&r);
        out = it_ck_kernel_run(&srv, alice.hdrs, kid, pid,
                               "import shutil\nshutil.rmtree('/home/aistudio/work/rnd')\nout = 'gone'\n");
        free(out);
        snprintf(path, sizeof(path), "/api/v1/projects/%s/files/api.bin", pid);
        ck_assert_int_eq(it_request_status(&srv, "DELETE", path, NULL, alice.hdrs), 204);
        snprintf(path, sizeof(path), "/api/v1/projects/%s/versions", pid);
        it_request(&r, &srv, "POST", path, "{\"message\":\"room again\"}", alice.hdrs);
        ck_assert_msg(r.status == 201, "%ld %s", r.status, r.body);
        it_resp_free(&r);
    }
}
END_TEST

START_TEST(without_a_mechanism_a_limited_tier_fails_closed)
{
    static const char *const env_none[] = {"EDDY_STOP_GRACE_MS=1000", "EDDY_DISK_QUOTA=none", NULL};
    const char *ah[] = {admin_cookie, admin_csrf, NULL};
    it_user alice;
    char pid[64], body[160], data[256];
    it_resp r;

    ck_assert_int_eq(it_user_make(&alice, &srv, admin_cookie, admin_csrf, "alice", 1000000), 0);
    ck_assert_int_eq(it_project_make(pid, sizeof(pid), &srv, alice.hdrs, "made with quotas", NULL, NULL), 0);
    snprintf(data, sizeof(data), "%s", srv.data_dir);
    ck_assert_int_eq(it_server_stop(&srv), 0);
    ck_assert_int_eq(it_server_start_in(&srv, data, env_none), 0);
    ck_assert_int_eq(it_login(&srv, IT_ADMIN_USER, IT_ADMIN_PASSWORD, admin_cookie, sizeof(admin_cookie), admin_csrf,
                              sizeof(admin_csrf)),
                     0);
    it_request(&r, &srv, "POST", "/api/v1/projects", "{\"name\":\"refused\",\"visibility\":\"private\"}", alice.hdrs);
    ck_assert_msg(r.status == 422 && strstr(r.body, "no disk quota mechanism") && strstr(r.body, "workspace_bytes"),
                  "%ld %s", r.status, r.body);
    it_resp_free(&r);
    /* a kernel on the project made before: refused, naming the cause */
    snprintf(body, sizeof(body), "{\"project_id\":\"%s\",\"resource\":\"cpu-basic\"}", pid);
    it_request(&r, &srv, "POST", "/api/v1/kernels", body, alice.hdrs);
    ck_assert_msg(r.status == 422 && strstr(r.body, "no disk quota mechanism"), "%ld %s", r.status, r.body);
    it_resp_free(&r);
    /* the operator's way out: no workspace limit for the tier */
    it_request(&r, &srv, "PUT", "/api/v1/admin/tiers/free", "{\"workspace_bytes\": 0}", ah);
    ck_assert_msg(r.status == 200, "%ld %s", r.status, r.body);
    it_resp_free(&r);
    it_request(&r, &srv, "POST", "/api/v1/projects", "{\"name\":\"fine\",\"visibility\":\"private\"}", alice.hdrs);
    ck_assert_msg(r.status == 201, "%ld %s", r.status, r.body);
    it_resp_free(&r);
    {
        json_t *ws = workspace_of(&alice);
        ck_assert(json_is_null(json_object_get(ws, "limit_bytes")));
        ck_assert_str_eq(it_json_str(ws, "mechanism"), "none");
        json_decref(ws);
    }
}
END_TEST

/* Root, a disk quota mechanism; kernels also need idmapped bind mounts. */
static int host_ready(void)
{
    char why[1100];

    if (!it_host_disk_quotas(why, sizeof(why))) {
        printf("SKIP: %s\n", why);
        return 0;
    }
    have_kernels = it_host_idmap(why, sizeof(why));
    if (!have_kernels)
        printf("workspace quota: no kernels: %s\n", why);
    return 1;
}

int main(void)
{
    const TTest *tests[] = {rest_writes_stop_at_the_limit_and_others_are_unaffected,
                            a_kernel_writing_past_the_limit_gets_enospc,
                            without_a_mechanism_a_limited_tier_fails_closed, NULL};

    if (!host_ready())
        return 77;
    return it_tests_run("workspace_quota", 240, setup, teardown, tests);
}
