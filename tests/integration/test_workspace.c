/* Persistent workspaces (issue 12) against the real server, scheduler,
 * sandbox and eddy-kernel: a kernel's /home/aistudio/work is its project's
 * live working tree. What a kernel writes is listed and served by the REST
 * API at once and after it stops, restarts, the server restarts or is
 * killed with -9 mid-write (every byte it had fsync'd is there); files PUT
 * through the API appear in a running kernel at once and after a restart;
 * two kernels on one project see each other's files; the repository
 * (.git) is an empty read-only mount inside; files a kernel creates belong
 * on disk to the server's uid, never to a slot uid; a host without
 * idmapped bind mounts refuses kernels with 422; a kernel on someone
 * else's public project is refused.
 *
 * Kernel code reports through files: each cell writes its result (or its
 * traceback) to _res/<n>.txt in the tree, which the test reads over REST. */
#include "harness.h"

#include <check.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static it_server srv;
static char dir[256], admin_cookie[600], admin_csrf[300];

static const char *const base_env[] = {"EDDY_STOP_GRACE_MS=1000", NULL};

static void boot(const char *const *env)
{
    ck_assert_int_eq(it_admin_server_start(&srv, dir, sizeof(dir), "ws", env ? env : base_env, admin_cookie,
                                           sizeof(admin_cookie), admin_csrf, sizeof(admin_csrf)),
                     0);
}

static void shutdown_all(void)
{
    ck_assert_int_eq(it_server_stop(&srv), 0);
    ck_assert_int_eq(it_dir_remove(dir), 0);
}

/* User alice with her project "ws" (holding `file`, unless NULL). */
static void alice_project(it_user *u, char *pid, size_t pid_len, const char *file, const char *content)
{
    ck_assert_int_eq(it_user_make(u, &srv, admin_cookie, admin_csrf, "alice", 0), 0);
    ck_assert_int_eq(it_project_make(pid, pid_len, &srv, u->hdrs, "ws", file, content), 0);
}

/* A server, alice's project "ws" (holding `file`, unless NULL) and an idle
 * kernel on it: pid and kid (64 bytes each). */
static void alice_kernel(it_user *u, char *pid, char *kid, const char *file, const char *content)
{
    boot(NULL);
    alice_project(u, pid, 64, file, content);
    it_ck_kernel_start(kid, 64, &srv, u->hdrs, pid);
}

static void kernel_post(it_user *u, const char *kid, const char *what, const char *want_status)
{
    char path[160];
    it_resp r;

    snprintf(path, sizeof(path), "/api/v1/kernels/%s%s%s", kid, what[0] ? "/" : "", what);
    it_request(&r, &srv, what[0] ? "POST" : "DELETE", path, NULL, u->hdrs);
    ck_assert_msg(r.status == 200, "%s: %ld %s", path, r.status, r.body);
    it_resp_free(&r);
    snprintf(path, sizeof(path), "/api/v1/kernels/%s", kid);
    json_t *k = it_status_wait(&srv, u->hdrs, path, want_status, 60);
    ck_assert_msg(k != NULL, "kernel %s never %s", kid, want_status);
    json_decref(k);
}

/* GET a project file: its status, and its bytes into *body (malloc'd). */
static long get_file(it_user *u, const char *pid, const char *rel, char **body, size_t *len)
{
    char path[512];
    it_resp r;
    long st;

    snprintf(path, sizeof(path), "/api/v1/projects/%s/files/%s", pid, rel);
    it_request(&r, &srv, "GET", path, NULL, u->hdrs);
    st = r.status;
    if (body) {
        *body = NULL;
        *len = 0;
        if (st == 200) {
            *body = malloc(r.body_len + 1);
            memcpy(*body, r.body, r.body_len);
            (*body)[r.body_len] = '\0';
            *len = r.body_len;
        }
    }
    it_resp_free(&r);
    return st;
}

static void put_file(it_user *u, const char *pid, const char *rel, const char *content)
{
    char path[512];
    it_resp r;

    snprintf(path, sizeof(path), "/api/v1/projects/%s/files/%s", pid, rel);
    it_request(&r, &srv, "PUT", path, content, u->hdrs);
    ck_assert_msg(r.status >= 200 && r.status < 300, "PUT %s: %ld %s", rel, r.status, r.body);
    it_resp_free(&r);
}

/* Does GET .../files list `rel`? */
static bool listed(it_user *u, const char *pid, const char *rel)
{
    char path[160];
    bool found = false;

    snprintf(path, sizeof(path), "/api/v1/projects/%s/files", pid);
    json_t *j = it_get_json(&srv, u->hdrs, path);
    ck_assert_ptr_nonnull(j);
    json_t *items = json_object_get(j, "items");
    for (size_t i = 0; i < json_array_size(items); i++)
        if (strcmp(it_json_str(json_array_get(items, i), "path"), rel) == 0)
            found = true;
    json_decref(j);
    return found;
}

static void proj_path(char *out, size_t n, const char *pid, const char *rel)
{
    snprintf(out, n, "%s/projects/%s%s%s", srv.data_dir, pid, rel[0] ? "/" : "", rel);
}

/* (a), (e): a checkpoint and a file in a subdirectory written by the
 * kernel, listed and served after it stops; owned on disk by the server. */
START_TEST(kernel_files_persist_after_stop_and_belong_to_the_server)
{
    it_user u;
    char pid[64], kid[64], path[600], *out, *body;
    size_t len;
    struct stat tree, f, sub;

    alice_kernel(&u, pid, kid, "train.py", "print(1)\n");
    out = it_ck_kernel_run(&srv, u.hdrs, kid, pid,
                           "import os\n"
                           "blob = bytes((i * 7) & 255 for i in range(300000))\n"
                           "with open('/home/aistudio/work/model.pdparams', 'wb') as f:\n"
                           "    f.write(blob)\n"
                           "os.makedirs('ckpt/epoch1', exist_ok=True)\n"
                           "open('ckpt/epoch1/opt.pdopt', 'w').write('adam state')\n"
                           "st = os.stat('train.py')\n"
                           "out = '%d %d %s' % (os.getuid(), st.st_uid, open('train.py').read().strip())\n");
    /* inside, the tree's files are aistudio's */
    ck_assert_str_eq(out, "1000 1000 print(1)");
    free(out);
    kernel_post(&u, kid, "", "dead");
    ck_assert(listed(&u, pid, "model.pdparams"));
    ck_assert(listed(&u, pid, "ckpt/epoch1/opt.pdopt"));
    ck_assert_int_eq(get_file(&u, pid, "model.pdparams", &body, &len), 200);
    ck_assert_uint_eq(len, 300000);
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)body[i] != (unsigned char)((i * 7) & 255))
            ck_abort_msg("model.pdparams differs at byte %zu", i);
    free(body);
    ck_assert_int_eq(get_file(&u, pid, "ckpt/epoch1/opt.pdopt", &body, &len), 200);
    ck_assert_str_eq(body, "adam state");
    free(body);
    /* on disk: the server's, like the tree itself, never a slot uid */
    proj_path(path, sizeof(path), pid, "");
    ck_assert_int_eq(stat(path, &tree), 0);
    proj_path(path, sizeof(path), pid, "model.pdparams");
    ck_assert_int_eq(stat(path, &f), 0);
    proj_path(path, sizeof(path), pid, "ckpt/epoch1");
    ck_assert_int_eq(stat(path, &sub), 0);
    ck_assert_uint_eq(f.st_uid, tree.st_uid);
    ck_assert_uint_eq(f.st_gid, tree.st_gid);
    ck_assert_uint_eq(sub.st_uid, tree.st_uid);
    ck_assert_msg(f.st_uid < 100000, "a kernel's file belongs to uid %u (a slot?)", (unsigned)f.st_uid);
    shutdown_all();
}
END_TEST

/* (e): .git is an empty, read-only mount the kernel can neither write,
 * rename nor remove; the repository on disk is untouched. */
START_TEST(git_is_hidden_and_unwritable_inside)
{
    it_user u;
    char pid[64], kid[64], path[600], *out;
    struct stat sb;

    alice_kernel(&u, pid, kid, "a.txt", "a");
    out = it_ck_kernel_run(&srv, u.hdrs, kid, pid,
                           "import os, errno\n"
                           "res = [str(sorted(os.listdir('.git')))]\n"
                           "def attempt(name, fn):\n"
                           "    try:\n"
                           "        fn()\n"
                           "        res.append(name + ':ALLOWED')\n"
                           "    except OSError as e:\n"
                           "        res.append(name + ':' + errno.errorcode[e.errno])\n"
                           "attempt('write', lambda: open('.git/config', 'w').write('[core]\\n\\tfsmonitor = x\\n'))\n"
                           "attempt('mkdir', lambda: os.mkdir('.git/hooks'))\n"
                           "attempt('rename', lambda: os.rename('.git', 'git2'))\n"
                           "attempt('rmdir', lambda: os.rmdir('.git'))\n"
                           "attempt('chmod', lambda: os.chmod('.git', 0o777))\n"
                           "out = ' '.join(res)\n");
    ck_assert_msg(strcmp(out, "[] write:EROFS mkdir:EROFS rename:EBUSY rmdir:EBUSY chmod:EROFS") == 0, "%s", out);
    free(out);
    /* the repository is still there and still works */
    proj_path(path, sizeof(path), pid, ".git/HEAD");
    ck_assert_int_eq(stat(path, &sb), 0);
    char vpath[128];
    snprintf(vpath, sizeof(vpath), "/api/v1/projects/%s/versions", pid);
    ck_assert_int_eq(it_request_status(&srv, "POST", vpath, "{\"message\":\"after a kernel\"}", u.hdrs), 201);
    shutdown_all();
}
END_TEST

/* (b): a PUT while the kernel runs is visible in it at once, and after a
 * restart; a file the kernel writes is listed while it runs. */
START_TEST(rest_writes_appear_in_a_running_kernel_and_after_restart)
{
    it_user u;
    char pid[64], kid[64], *out, *body;
    size_t len;

    alice_kernel(&u, pid, kid, NULL, NULL);
    put_file(&u, pid, "data/train.csv", "x,y\n1,2\n");
    out = it_ck_kernel_run(&srv, u.hdrs, kid, pid, "out = open('data/train.csv').read()\n");
    ck_assert_str_eq(out, "x,y\n1,2\n");
    free(out);
    put_file(&u, pid, "data/train.csv", "x,y\n3,4\n");     /* replaced: seen at once too */
    out = it_ck_kernel_run(&srv, u.hdrs, kid, pid,
                           "open('live.txt', 'w').write('while running')\nout = open('data/train.csv').read()\n");
    ck_assert_str_eq(out, "x,y\n3,4\n");
    free(out);
    ck_assert(listed(&u, pid, "live.txt"));
    ck_assert_int_eq(get_file(&u, pid, "live.txt", &body, &len), 200);
    ck_assert_str_eq(body, "while running");
    free(body);
    kernel_post(&u, kid, "restart", "idle");
    put_file(&u, pid, "after.txt", "after restart");
    out = it_ck_kernel_run(&srv, u.hdrs, kid, pid,
                           "out = open('data/train.csv').read() + open('after.txt').read() + "
                           "open('live.txt').read()\n");
    ck_assert_str_eq(out, "x,y\n3,4\nafter restartwhile running");
    free(out);
    shutdown_all();
}
END_TEST

/* (c): two kernels on one project share the tree. */
START_TEST(two_kernels_on_one_project_see_each_others_files)
{
    it_user u;
    char pid[64], k1[64], k2[64], *out;

    boot(NULL);
    ck_assert_int_eq(it_request_status(&srv, "PUT", "/api/v1/admin/tiers/free", "{\"max_kernels\": 2}",
                                       (const char *const[]){admin_cookie, admin_csrf, NULL}),
                     200);
    alice_project(&u, pid, sizeof(pid), NULL, NULL);
    it_ck_kernel_start(k1, sizeof(k1), &srv, u.hdrs, pid);
    it_ck_kernel_start(k2, sizeof(k2), &srv, u.hdrs, pid);
    out = it_ck_kernel_run(&srv, u.hdrs, k1, pid, "open('from1.txt', 'w').write('one')\nout = 'w'\n");
    free(out);
    out = it_ck_kernel_run(&srv, u.hdrs, k2, pid,
                           "open('from2.txt', 'w').write('two')\nout = open('from1.txt').read()\n");
    ck_assert_str_eq(out, "one");
    free(out);
    out = it_ck_kernel_run(&srv, u.hdrs, k1, pid, "out = open('from2.txt').read()\n");
    ck_assert_str_eq(out, "two");
    free(out);
    shutdown_all();
}
END_TEST

/* (d): written files survive a kernel restart, a clean server restart and
 * kill -9 of the server while a kernel writes and fsyncs in a loop. */
START_TEST(flushed_bytes_survive_restarts_and_kill_9)
{
    it_user u;
    char pid[64], kid[64], data[300], path[600], *out, *body, *prog;
    size_t len, plen;
    struct stat sb;

    alice_kernel(&u, pid, kid, NULL, NULL);
    out = it_ck_kernel_run(&srv, u.hdrs, kid, pid, "open('before.txt', 'w').write('before restarts')\nout = 'w'\n");
    free(out);
    kernel_post(&u, kid, "restart", "idle");
    out = it_ck_kernel_run(&srv, u.hdrs, kid, pid, "out = open('before.txt').read()\n");
    ck_assert_str_eq(out, "before restarts");
    free(out);
    /* a clean stop and start of eddy serve */
    snprintf(data, sizeof(data), "%s", srv.data_dir);
    ck_assert_int_eq(it_server_stop(&srv), 0);
    ck_assert_int_eq(it_server_start_in(&srv, data, base_env), 0);
    ck_assert_int_eq(get_file(&u, pid, "before.txt", &body, &len), 200);
    ck_assert_str_eq(body, "before restarts");
    free(body);
    /* a writer that fsyncs 4 KiB records of a known pattern, then a progress
     * count (fsync'd after the data) */
    it_ck_kernel_start(kid, sizeof(kid), &srv, u.hdrs, pid);
    json_t *b = json_pack("{s:s}", "code",
                          "import os, time\n"
                          "fd = os.open('log.bin', os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)\n"
                          "pf = os.open('progress.txt', os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)\n"
                          "n = 0\n"
                          "while True:\n"
                          "    os.write(fd, bytes([n & 255]) * 4096)\n"
                          "    os.fsync(fd)\n"
                          "    n += 1\n"
                          "    os.pwrite(pf, b'%012d' % n, 0)\n"
                          "    os.fsync(pf)\n"
                          "    time.sleep(0.002)\n");
    char *js = json_dumps(b, 0);
    snprintf(path, sizeof(path), "/api/v1/kernels/%s/execute", kid);
    ck_assert_int_eq(it_request_status(&srv, "POST", path, js, u.hdrs), 202);
    free(js);
    json_decref(b);
    proj_path(path, sizeof(path), pid, "log.bin");
    for (int i = 0; i < 600 && !(stat(path, &sb) == 0 && sb.st_size >= 200 * 4096); i++)
        usleep(100 * 1000);
    ck_assert_msg(sb.st_size >= 200 * 4096, "the writer wrote %lld bytes", (long long)sb.st_size);
    kill(srv.pid, SIGKILL);
    waitpid(srv.pid, NULL, 0);
    ck_assert_int_eq(it_server_start_in(&srv, data, base_env), 0);
    ck_assert_int_eq(get_file(&u, pid, "progress.txt", &prog, &plen), 200);
    long long n = atoll(prog);
    free(prog);
    ck_assert_int_gt(n, 199);
    ck_assert_int_eq(get_file(&u, pid, "log.bin", &body, &len), 200);
    ck_assert_msg((long long)len >= n * 4096, "log.bin has %zu bytes, %lld records were flushed", len, n);
    for (long long i = 0; i < n * 4096; i++)
        if ((unsigned char)body[i] != (unsigned char)((i / 4096) & 255))
            ck_abort_msg("log.bin differs at byte %lld", i);
    free(body);
    printf("workspace: %lld fsync'd records (%lld bytes) all there after kill -9\n", n, n * 4096);
    shutdown_all();
}
END_TEST

/* Fail closed: no idmapped mounts, no kernel (and no copy). */
START_TEST(without_idmapped_mounts_a_kernel_is_422)
{
    static const char *const env[] = {"EDDY_IDMAP=none", "EDDY_STOP_GRACE_MS=1000", NULL};
    it_user u;
    char pid[64], body[160];
    it_resp r;

    boot(env);
    alice_project(&u, pid, sizeof(pid), NULL, NULL);
    snprintf(body, sizeof(body), "{\"project_id\":\"%s\",\"resource\":\"cpu-basic\"}", pid);
    it_request(&r, &srv, "POST", "/api/v1/kernels", body, u.hdrs);
    ck_assert_msg(r.status == 422, "%ld %s", r.status, r.body);
    ck_assert_msg(strstr(r.body, "idmapped") != NULL, "%s", r.body);
    it_resp_free(&r);
    shutdown_all();
}
END_TEST

/* A kernel changes its tree: never on another user's (public) project. */
START_TEST(a_kernel_on_someone_elses_public_project_is_refused)
{
    it_user a, b;
    char body[160];
    const char *pid;
    it_resp r;

    boot(NULL);
    ck_assert_int_eq(it_user_make(&a, &srv, admin_cookie, admin_csrf, "alice", 0), 0);
    ck_assert_int_eq(it_user_make(&b, &srv, admin_cookie, admin_csrf, "bob", 0), 0);
    it_request(&r, &srv, "POST", "/api/v1/projects", "{\"name\":\"pub\",\"visibility\":\"public\"}", a.hdrs);
    ck_assert_int_eq(r.status, 201);
    pid = it_json_str(r.json, "id");
    snprintf(body, sizeof(body), "{\"project_id\":\"%s\",\"resource\":\"cpu-basic\"}", pid);
    it_resp_free(&r);
    it_request(&r, &srv, "POST", "/api/v1/kernels", body, b.hdrs);
    ck_assert_msg(r.status == 403, "%ld %s", r.status, r.body);
    it_resp_free(&r);
    shutdown_all();
}
END_TEST

int main(void)
{
    const TTest *tests[] = {kernel_files_persist_after_stop_and_belong_to_the_server,
                            git_is_hidden_and_unwritable_inside,
                            rest_writes_appear_in_a_running_kernel_and_after_restart,
                            two_kernels_on_one_project_see_each_others_files,
                            flushed_bytes_survive_restarts_and_kill_9,
                            without_idmapped_mounts_a_kernel_is_422,
                            a_kernel_on_someone_elses_public_project_is_refused,
                            NULL};
    char why[600];

    if (!it_host_idmap(why, sizeof(why))) {
        printf("test_workspace: %s; skipped\n", why);
        return 77;
    }
    return it_tests_run("workspace", 240, NULL, NULL, tests);
}
