/*
 * test_privileges - the privilege split (sandbox/README.md "Privilege
 * split"), with the real server started as root:
 *   - the serving process runs as the `eddy` user with no capabilities and
 *     no_new_privs, its launcher as root, and the data directory is eddy's;
 *   - a job still runs, its artifacts are still served (its trees came back
 *     to the server), also while it runs (what it writes under umask 022), and from inside it the launcher cannot be reached
 *     (no socket among its descriptors, not in its PID namespace);
 *   - killing the launcher stops the server with status 1 and a log line;
 *   - killing the server makes the launcher kill the job and exit;
 *   - a --data directory that is not Eddy's (not empty, no eddy.db) is
 *     refused, not handed to the eddy user.
 * Skips (77) when not root, without the `eddy` user, or when the checkout is
 * not reachable by that user (the harness then serves as root).
 */
#include "harness.h"

#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static it_server srv;
static char dir[64], data[128];
static char admin_cookie[512], admin_csrf[256];
static it_user alice;
static const char *const *hdrs = alice.hdrs;
static uid_t eddy_uid;
static gid_t eddy_gid;

static const char PROBE_PY[] =
    "import os, stat, sys, time\n"
    "socks = []\n"
    "for fd in os.listdir('/proc/self/fd'):\n"
    "    try:\n"
    "        if stat.S_ISSOCK(os.fstat(int(fd)).st_mode): socks.append(fd)\n"
    "    except OSError: pass\n"
    "names = []\n"
    "for p in os.listdir('/proc'):\n"
    "    if p.isdigit():\n"
    "        try: names.append(open('/proc/%s/comm' % p).read().strip())\n"
    "        except OSError: pass\n"
    "try:\n"
    "    os.kill(int(sys.argv[1]), 0); reach = 'signalled'\n"
    "except ProcessLookupError: reach = 'no such process'\n"
    "except PermissionError: reach = 'not permitted'\n"
    "unix = [l for l in open('/proc/net/unix').read().splitlines()[1:] if l.strip()]\n"
    "out = 'sockets=%s launcher_visible=%s kill=%s unix=%d uid=%d\\n' % (\n"
    "    socks, 'eddy-launcher' in names, reach, len(unix), os.getuid())\n"
    "os.makedirs('/home/aistudio/output', exist_ok=True)\n"
    "open('/home/aistudio/output/probe.txt', 'w').write(out)\n"
    "print(out, flush=True)\n"
    "if len(sys.argv) > 2: time.sleep(float(sys.argv[2]))\n";

/* One "Name:\tvalue" line of /proc/<pid>/status, or "". */
static void status_field(char *out, size_t n, pid_t pid, const char *name)
{
    char path[64], buf[4096];
    snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
    it_slurp(buf, sizeof(buf), path);
    out[0] = '\0';
    size_t len = strlen(name);
    for (char *line = strtok(buf, "\n"); line; line = strtok(NULL, "\n"))
        if (strncmp(line, name, len) == 0 && line[len] == ':') {
            const char *v = line + len + 1;
            while (*v == ' ' || *v == '\t')
                v++;
            snprintf(out, n, "%s", v);
            return;
        }
}

/* The child of `parent` called `comm`, or 0. */
static pid_t child_named(pid_t parent, const char *comm)
{
    DIR *d = opendir("/proc");
    struct dirent *e;
    pid_t found = 0;
    char v[64], want[32];

    snprintf(want, sizeof(want), "%d", (int)parent);
    while (d && (e = readdir(d)) != NULL && !found) {
        pid_t p = (pid_t)atoi(e->d_name);
        if (p <= 0)
            continue;
        status_field(v, sizeof(v), p, "PPid");
        if (strcmp(v, want) != 0)
            continue;
        status_field(v, sizeof(v), p, "Name");
        if (!comm || strcmp(v, comm) == 0)
            found = p;
    }
    if (d)
        closedir(d);
    return found;
}

static bool alive(pid_t pid)
{
    char path[64], st[32];
    snprintf(path, sizeof(path), "/proc/%d", (int)pid);
    if (access(path, F_OK) != 0)
        return false;
    status_field(st, sizeof(st), pid, "State");
    return st[0] != 'Z' && st[0] != '\0';
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static void setup(void)
{
    ck_assert_int_eq(it_admin_server_start(&srv, dir, sizeof(dir), "priv", NULL, admin_cookie, sizeof(admin_cookie),
                                           admin_csrf, sizeof(admin_csrf)),
                     0);
    snprintf(data, sizeof(data), "%s/data", dir);
    /* a user with coins */
    ck_assert_int_eq(it_user_make(&alice, &srv, admin_cookie, admin_csrf, "alice", 1000000), 0);
}

static void teardown(void)
{
    it_server_stop(&srv);
    ck_assert_int_eq(it_dir_remove(dir), 0);
}

/* Submit probe.py with `args` (a JSON array) as alice with the
 * Idempotency-Key `key`; the job id. */
static long long submit(const char *args, const char *key)
{
    char pid[64], vid[64], idem[64], more[128];
    const char *h[] = {alice.cookie, alice.csrf, idem, NULL};
    int64_t id;

    ck_assert_int_eq(it_project_make(pid, sizeof(pid), &srv, hdrs, "probe", "probe.py", PROBE_PY), 0);
    ck_assert_int_eq(it_version_make(vid, sizeof(vid), &srv, hdrs, pid, "v1"), 0);
    snprintf(idem, sizeof(idem), "Idempotency-Key: %s", key);
    snprintf(more, sizeof(more), "{\"args\": %s}", args);
    ck_assert_int_eq(it_job_submit(&id, NULL, 0, &srv, h, pid, vid, "probe.py", 300, more), 201);
    return (long long)id;
}

/* Poll the job until its status is `status` (NULL: until it has ended);
 * that status into `out`. */
static void wait_status(char *out, size_t n, long long id, const char *status)
{
    json_t *j = it_job_wait(&srv, hdrs, id, status, 120);
    ck_assert_msg(j != NULL, "job %lld never became %s", id, status ? status : "ended");
    snprintf(out, n, "%s", it_json_str(j, "status"));
    json_decref(j);
}

START_TEST(server_is_eddy_launcher_is_root_and_data_is_eddys)
{
    char v[128], want[128];
    struct stat sb;
    pid_t l;

    snprintf(want, sizeof(want), "%u\t%u\t%u\t%u", (unsigned)eddy_uid, (unsigned)eddy_uid, (unsigned)eddy_uid,
             (unsigned)eddy_uid);
    status_field(v, sizeof(v), srv.pid, "Uid");
    ck_assert_str_eq(v, want);
    snprintf(want, sizeof(want), "%u\t%u\t%u\t%u", (unsigned)eddy_gid, (unsigned)eddy_gid, (unsigned)eddy_gid,
             (unsigned)eddy_gid);
    status_field(v, sizeof(v), srv.pid, "Gid");
    ck_assert_str_eq(v, want);
    status_field(v, sizeof(v), srv.pid, "CapEff");
    ck_assert_str_eq(v, "0000000000000000");
    status_field(v, sizeof(v), srv.pid, "CapPrm");
    ck_assert_str_eq(v, "0000000000000000");
    status_field(v, sizeof(v), srv.pid, "CapBnd");
    ck_assert_str_eq(v, "0000000000000000");
    status_field(v, sizeof(v), srv.pid, "NoNewPrivs");
    ck_assert_str_eq(v, "1");
    status_field(v, sizeof(v), srv.pid, "Groups");
    ck_assert_ptr_null(strstr(v, "0 "));
    ck_assert_int_gt(l = child_named(srv.pid, "eddy-launcher"), 0);
    status_field(v, sizeof(v), l, "Uid");
    ck_assert_str_eq(v, "0\t0\t0\t0");
    char db[200];
    snprintf(db, sizeof(db), "%s/eddy.db", data);
    ck_assert_int_eq(stat(data, &sb), 0);
    ck_assert_uint_eq(sb.st_uid, eddy_uid);
    ck_assert_int_eq(stat(db, &sb), 0);
    ck_assert_uint_eq(sb.st_uid, eddy_uid);
    /* an operator command as root meanwhile keeps the files the server's */
    char *argv[] = {"eddy", "admin", "set-tier", "--data", data, "--username", "alice", "--tier", "pro", NULL};
    ck_assert_int_eq(it_eddy_status(argv), 0);
    const char *files[] = {"eddy.db", "eddy.db-wal", "eddy.db-shm"};
    for (size_t i = 0; i < 3; i++) {
        snprintf(db, sizeof(db), "%s/%s", data, files[i]);
        if (stat(db, &sb) == 0)
            ck_assert_msg(sb.st_uid == eddy_uid, "%s is owned by %u", db, (unsigned)sb.st_uid);
    }
    it_resp r;
    it_request(&r, &srv, "GET", "/api/v1/me", NULL, hdrs);
    ck_assert_msg(r.status == 200, "%ld %s", r.status, r.body);
    it_resp_free(&r);
}
END_TEST

START_TEST(job_runs_artifacts_are_served_and_the_launcher_is_out_of_reach)
{
    char st[32], path[200], args[64];
    pid_t l = child_named(srv.pid, "eddy-launcher");
    it_resp r;
    struct stat sb;

    ck_assert_int_gt(l, 0);
    snprintf(args, sizeof(args), "[\"%d\"]", (int)l);
    long long id = submit(args, "probe-1");
    wait_status(st, sizeof(st), id, NULL);
    snprintf(path, sizeof(path), "/api/v1/jobs/%lld/logs?offset=0", id);
    it_request(&r, &srv, "GET", path, NULL, hdrs);
    ck_assert_msg(strcmp(st, "succeeded") == 0, "job %s: %s", st, r.body);
    it_resp_free(&r);
    snprintf(path, sizeof(path), "/api/v1/jobs/%lld/artifacts", id);
    it_request(&r, &srv, "GET", path, NULL, hdrs);
    ck_assert_int_eq(r.status, 200);
    ck_assert_ptr_nonnull(strstr(r.body, "probe.txt"));
    it_resp_free(&r);
    snprintf(path, sizeof(path), "/api/v1/jobs/%lld/artifacts/probe.txt", id);
    it_request(&r, &srv, "GET", path, NULL, hdrs);
    ck_assert_int_eq(r.status, 200);
    /* no socket among the job's descriptors, the launcher not in its PID
     * namespace and not signalable by pid, an empty unix socket table */
    ck_assert_msg(strstr(r.body, "sockets=[] launcher_visible=False kill=no such process unix=0") != NULL,
                  "%s", r.body);
    it_resp_free(&r);
    /* the job's trees came back to the server */
    snprintf(path, sizeof(path), "%s/jobs/%lld/output/probe.txt", data, id);
    ck_assert_int_eq(lstat(path, &sb), 0);
    ck_assert_uint_eq(sb.st_uid, eddy_uid);
}
END_TEST

/* While a job runs its output belongs to its slot uid; what it writes there
 * under its umask (022) is readable by the server, so the artifacts are
 * listed and served during the run, not only once it has ended (before:
 * 404 until the end). A file the job keeps to itself (0600) is not. */
START_TEST(a_running_jobs_artifacts_are_listed_and_served)
{
    char st[32], path[200], args[64], file[240];
    pid_t l = child_named(srv.pid, "eddy-launcher");
    struct stat sb;
    it_resp r;
    int seen = 0;

    ck_assert_int_gt(l, 0);
    snprintf(args, sizeof(args), "[\"%d\", \"60\"]", (int)l);
    long long id = submit(args, "probe-running");
    wait_status(st, sizeof(st), id, "running");
    snprintf(file, sizeof(file), "%s/jobs/%lld/output/probe.txt", data, id);
    snprintf(path, sizeof(path), "/api/v1/jobs/%lld/artifacts", id);
    for (int i = 0; i < 300 && !seen; i++) {
        it_request(&r, &srv, "GET", path, NULL, hdrs);
        ck_assert_msg(r.status == 200, "listing a running job's artifacts: %ld %s", r.status, r.body);
        seen = strstr(r.body, "probe.txt") != NULL;
        it_resp_free(&r);
        if (!seen)
            sleep_ms(100);
    }
    ck_assert_msg(seen, "probe.txt was never listed while the job ran");
    snprintf(path, sizeof(path), "/api/v1/jobs/%lld/artifacts/probe.txt", id);
    it_request(&r, &srv, "GET", path, NULL, hdrs);
    ck_assert_msg(r.status == 200 && strstr(r.body, "sockets=[]"), "%ld %s", r.status, r.body);
    it_resp_free(&r);
    /* it was the job's (a slot uid's) file, served during the run */
    ck_assert_int_eq(lstat(file, &sb), 0);
    ck_assert_uint_ne(sb.st_uid, eddy_uid);
    ck_assert_uint_eq(sb.st_mode & 0777, 0644);
    snprintf(path, sizeof(path), "/api/v1/jobs/%lld", id);
    it_request(&r, &srv, "GET", path, NULL, hdrs);
    ck_assert_str_eq(json_string_value(json_object_get(r.json, "status")), "running");
    it_resp_free(&r);
    /* the output's top: the slot's, searchable by the server, nothing more */
    snprintf(file, sizeof(file), "%s/jobs/%lld/output", data, id);
    ck_assert_int_eq(lstat(file, &sb), 0);
    ck_assert_uint_eq(sb.st_mode & 0777, 0755);
    it_request(&r, &srv, "DELETE", path, NULL, hdrs);
    ck_assert_int_lt(r.status, 300);
    it_resp_free(&r);
    wait_status(st, sizeof(st), id, NULL);
}
END_TEST

START_TEST(a_dead_launcher_stops_the_server_loudly)
{
    pid_t l = child_named(srv.pid, "eddy-launcher");
    int status = 0;
    pid_t w = 0;
    char log[65536];

    ck_assert_int_gt(l, 0);
    ck_assert_int_eq(kill(l, SIGKILL), 0);
    for (int i = 0; i < 300 && w == 0; i++) {
        w = waitpid(srv.pid, &status, WNOHANG);
        if (w == 0)
            sleep_ms(50);
    }
    ck_assert_msg(w == srv.pid, "the server kept running without its launcher");
    srv.pid = 0;
    ck_assert(WIFEXITED(status));
    ck_assert_int_eq(WEXITSTATUS(status), 1);
    it_slurp(log, sizeof(log), srv.log_path);
    ck_assert_msg(strstr(log, "sandbox launcher") != NULL, "%s", log);
}
END_TEST

START_TEST(a_dead_server_takes_its_launcher_and_jobs_along)
{
    char st[32];
    pid_t l = child_named(srv.pid, "eddy-launcher"), job = 0;

    ck_assert_int_gt(l, 0);
    long long id = submit("[\"1\", \"300\"]", "sleeper");
    wait_status(st, sizeof(st), id, "running");
    for (int i = 0; i < 200 && !job; i++) {
        job = child_named(l, NULL);
        if (!job)
            sleep_ms(50);
    }
    ck_assert_int_gt(job, 0);
    ck_assert_int_eq(kill(srv.pid, SIGKILL), 0);
    ck_assert_int_eq(waitpid(srv.pid, NULL, 0), srv.pid);
    srv.pid = 0;
    for (int i = 0; i < 200 && (alive(l) || alive(job)); i++)
        sleep_ms(50);
    ck_assert_msg(!alive(job), "the job outlived the server");
    ck_assert_msg(!alive(l), "the launcher outlived the server");
}
END_TEST

START_TEST(a_directory_that_is_not_eddys_is_not_handed_over)
{
    char junk[64], file[128];
    struct stat sb;
    int st = 0;

    snprintf(junk, sizeof(junk), "/tmp/eddy-it-junk-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(junk));
    snprintf(file, sizeof(file), "%s/passwd", junk);
    FILE *f = fopen(file, "w");
    ck_assert_ptr_nonnull(f);
    fputs("root:x:0:0::/root:/bin/sh\n", f);
    fclose(f);
    pid_t pid = fork();
    if (pid == 0) {
        int nul = open("/dev/null", O_WRONLY);
        dup2(nul, 1);
        dup2(nul, 2);
        execl(it_eddy_bin(), "eddy", "serve", "--data", junk, "--listen", "127.0.0.1:0", (char *)NULL);
        _exit(127);
    }
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    ck_assert(WIFEXITED(st));
    ck_assert_int_eq(WEXITSTATUS(st), 2);
    ck_assert_int_eq(stat(file, &sb), 0);
    ck_assert_uint_eq(sb.st_uid, 0);
    ck_assert_int_eq(stat(junk, &sb), 0);
    ck_assert_uint_eq(sb.st_uid, 0);
    ck_assert_int_eq(it_dir_remove(junk), 0);
}
END_TEST

int main(void)
{
    struct passwd *pw;
    const char *user = getenv("EDDY_USER") ? getenv("EDDY_USER") : "eddy";

    if (geteuid() != 0) {
        fprintf(stderr, "skipped: the privilege split happens only when eddy serve starts as root\n");
        return 77;
    }
    if ((pw = getpwnam(user)) == NULL) {
        fprintf(stderr, "skipped: no user '%s' (deploy/install-deps.sh creates it)\n", user);
        return 77;
    }
    eddy_uid = pw->pw_uid;
    eddy_gid = pw->pw_gid;
    if (it_serve_user_reaches_checkout() != 0) {
        fprintf(stderr, "skipped: user '%s' cannot reach %s, so the harness serves as root\n", user,
                it_eddy_bin());
        return 77;
    }
    Suite *s = suite_create("privileges");
    TCase *t = tcase_create("split");
    tcase_add_checked_fixture(t, setup, teardown);
    tcase_set_timeout(t, 180);
    tcase_add_test(t, server_is_eddy_launcher_is_root_and_data_is_eddys);
    tcase_add_test(t, job_runs_artifacts_are_served_and_the_launcher_is_out_of_reach);
    tcase_add_test(t, a_running_jobs_artifacts_are_listed_and_served);
    tcase_add_test(t, a_dead_launcher_stops_the_server_loudly);
    tcase_add_test(t, a_dead_server_takes_its_launcher_and_jobs_along);
    suite_add_tcase(s, t);
    TCase *g = tcase_create("guard");
    tcase_add_test(g, a_directory_that_is_not_eddys_is_not_handed_over);
    suite_add_tcase(s, g);
    return it_suite_run(s);
}
