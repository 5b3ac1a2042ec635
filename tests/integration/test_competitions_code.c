/* Code competitions' runs (issue 16 items 5, 7 and 8) against the real
 * `eddy serve`:
 *   - sealed: a run reads the host's hidden test inputs (a private dataset
 *     version the participant cannot read otherwise) under
 *     /home/aistudio/data, cannot write them, cannot reach the server's TCP
 *     port on 127.0.0.1 nor on the host's address although the
 *     participant's tier allows egress (a plain job of theirs reaches it),
 *     finds no trace of the truth's canary anywhere it can look, and is
 *     never the participant's to list or read (GET /api/v1/jobs);
 *   - the failure classes this host can produce: timeout (max_runtime_s),
 *     exceeded_compute (memory over the class's limit), exception,
 *     missing_output, invalid_output, platform_error (the host deleted the
 *     inputs), scoring_error (the host's scoring program fails on a good
 *     output), each with a bounded log tail where the run failed, none
 *     counted;
 *   - the ledger: a free competition's run is neither reserved nor charged
 *     (no hold, no meter row, the balance unchanged); a charged one is
 *     metered and paid like a job;
 *   - kill -9 of the server while a run runs: after the restart the runner
 *     takes it back, the killed job's charge is refunded (platform_error),
 *     the run is started once more and the submission is scored; every run
 *     ends collected.
 * Runs need the sandbox, which needs root here: skips (77) otherwise. */
#include "harness.h"
#include "it_db.h"

#include <arpa/inet.h>
#include <check.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define CANARY "CANARY-code-7d0c2f4e-1b9a-4c55-8e21-feedc0de0099"
#define ROWS   60

static it_server srv;
static char dir[256], admin_cookie[600], admin_csrf[300];
static const char *const env[] = {"EDDY_METER_INTERVAL_MS=1000", "EDDY_STOP_GRACE_MS=1000", NULL};

static void admin_req(const char *method, const char *path, const char *body, long want)
{
    const char *ah[] = {admin_cookie, admin_csrf, NULL};
    it_resp r;

    it_request(&r, &srv, method, path, body, ah);
    ck_assert_msg(r.status == want, "%s %s: %ld %s", method, path, r.status, r.body);
    it_resp_free(&r);
}

static void setup(void)
{
    ck_assert_int_eq(it_admin_server_start(&srv, dir, sizeof(dir), "compcode", env, admin_cookie,
                                           sizeof(admin_cookie), admin_csrf, sizeof(admin_csrf)),
                     0);
    /* the participants' tier allows egress: a code run must be sealed anyway */
    admin_req("PUT", "/api/v1/admin/tiers/free", "{\"job_disk_bytes\": 0, \"allow_egress\": true}", 200);
}

static void teardown(void)
{
    ck_assert_int_eq(it_server_stop(&srv), 0);
    ck_assert_int_eq(it_dir_remove(dir), 0);
}

static const char *at(char *buf, size_t n, int64_t ms_ahead)
{
    struct timeval tv;
    struct tm tm;
    int64_t ms;
    time_t t;

    gettimeofday(&tv, NULL);
    ms = (int64_t)tv.tv_sec * 1000 + tv.tv_usec / 1000 + ms_ahead;
    t = (time_t)(ms / 1000);
    gmtime_r(&t, &tm);
    strftime(buf, n, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(buf + strlen(buf), n - strlen(buf), ".%03dZ", (int)(ms % 1000));
    return buf;
}

/* A first non-loopback IPv4 address of this host into `out` ("" none). */
static void host_ip(char *out, size_t n)
{
    struct ifaddrs *ifs = NULL;

    out[0] = '\0';
    if (getifaddrs(&ifs) < 0)
        return;
    for (struct ifaddrs *i = ifs; i && !out[0]; i = i->ifa_next)
        if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET) {
            struct in_addr a = ((struct sockaddr_in *)i->ifa_addr)->sin_addr;
            if ((ntohl(a.s_addr) >> 24) != 127)
                inet_ntop(AF_INET, &a, out, (socklen_t)n);
        }
    freeifaddrs(ifs);
}

/* The host's private dataset of test inputs ("id,x": the label is cat when
 * x % 3, else dog), published: its id into `id`. */
static void inputs_make(char *id, it_user *host)
{
    char body[4096], url[200];
    size_t n = 0;
    it_resp r;

    it_request(&r, &srv, "POST", "/api/v1/datasets", "{\"name\":\"pets-test\",\"slug\":\"pets-test\","
               "\"visibility\":\"private\"}", host->hdrs);
    ck_assert_msg(r.status == 201, "dataset: %ld %s", r.status, r.body);
    snprintf(id, 40, "%s", it_json_str(r.json, "id"));
    it_resp_free(&r);
    n += (size_t)snprintf(body + n, sizeof(body) - n, "id,x\n");
    for (int i = 0; i < ROWS; i++)
        n += (size_t)snprintf(body + n, sizeof(body) - n, "%d,%d\n", i, i);
    snprintf(url, sizeof(url), "/api/v1/datasets/%s/draft/files/test.csv", id);
    it_request(&r, &srv, "PUT", url, body, host->hdrs);
    ck_assert_msg(r.status == 200 || r.status == 201, "put: %ld %s", r.status, r.body);
    it_resp_free(&r);
    snprintf(url, sizeof(url), "/api/v1/datasets/%s/versions", id);
    ck_assert_int_eq(it_request_status(&srv, "POST", url, "{\"message\":\"v1\"}", host->hdrs), 201);
}

/* A started code competition hosted by `host` with the truth (a canary in
 * row 7): its id into `cid`. `code` is the code_competition object;
 * `scorer` NULL, or a scoring program (higher is better) put before the start. */
static void comp_make(char *cid, it_user *host, const char *slug, const char *code, const char *scorer)
{
    const char *csvh[4] = {"Content-Type: text/csv", host->cookie, host->csrf, NULL};
    char body[2048], path[300], s[64], e[64], truth[4096];
    size_t n = 0;
    it_resp r;

    snprintf(body, sizeof(body),
             "{\"title\":\"%s\",\"slug\":\"%s\",\"start_at\":\"%s\",\"end_at\":\"%s\",\"id_column\":\"id\","
             "\"target_columns\":[\"label\"],\"metric\":\"accuracy\",\"public_fraction\":0.5,\"daily_cap\":20,"
             "\"max_team_size\":2,\"leaderboard\":\"public\",\"code_competition\":%s}",
             slug, slug, at(s, sizeof(s), 3600000), at(e, sizeof(e), 7200000), code);
    it_request(&r, &srv, "POST", "/api/v1/competitions", body, host->hdrs);
    ck_assert_msg(r.status == 201, "%ld %s", r.status, r.body);
    snprintf(cid, 64, "%s", it_json_str(r.json, "id"));
    it_resp_free(&r);
    n += (size_t)snprintf(truth + n, sizeof(truth) - n, "id,label\n");
    for (int i = 0; i < ROWS; i++)
        n += (size_t)snprintf(truth + n, sizeof(truth) - n, "%d,%s\n", i, i == 7 ? CANARY : i % 3 ? "cat" : "dog");
    snprintf(path, sizeof(path), "/api/v1/competitions/%s/truth", cid);
    ck_assert_int_eq(it_request_status(&srv, "PUT", path, truth, csvh), 200);
    if (scorer != NULL) {
        snprintf(path, sizeof(path), "/api/v1/competitions/%s", cid);
        ck_assert_int_eq(it_request_status(&srv, "PUT", path, "{\"scorer\":{\"direction\":\"higher\",\"timeout_s\":10}}",
                                           host->hdrs), 200);
        snprintf(path, sizeof(path), "/api/v1/competitions/%s/scorer", cid);
        ck_assert_int_eq(it_request_status(&srv, "PUT", path, scorer, host->hdrs), 200);
    }
    snprintf(path, sizeof(path), "/api/v1/competitions/%s", cid);
    snprintf(body, sizeof(body), "{\"start_at\":\"%s\"}", at(s, sizeof(s), 300));
    ck_assert_int_eq(it_request_status(&srv, "PUT", path, body, host->hdrs), 200);
    for (int i = 0; i < 100; i++) {
        json_t *j = it_get_json(&srv, host->hdrs, path);
        bool active = j && strcmp(it_json_str(j, "phase"), "active") == 0;
        json_decref(j);
        if (active)
            return;
        usleep(50000);
    }
    ck_abort_msg("competition %s did not start", cid);
}

static void accept_rules(it_user *u, const char *cid)
{
    char path[200];

    snprintf(path, sizeof(path), "/api/v1/competitions/%s/accept-rules", cid);
    ck_assert_int_eq(it_request_status(&srv, "POST", path, NULL, u->hdrs), 200);
}

/* A code submission of `entry` in version `vid`: its id into `sid`. */
static void submit(char *sid, it_user *u, const char *cid, const char *pid, const char *vid, const char *entry)
{
    char body[400], path[200];
    it_resp r;

    snprintf(path, sizeof(path), "/api/v1/competitions/%s/submissions", cid);
    snprintf(body, sizeof(body), "{\"project_id\":\"%s\",\"version\":\"%s\",\"entry\":\"%s\"}", pid, vid, entry);
    it_request(&r, &srv, "POST", path, body, u->hdrs);
    ck_assert_msg(r.status == 201, "submit %s: %ld %s", entry, r.status, r.body);
    snprintf(sid, 64, "%s", it_json_str(r.json, "id"));
    it_resp_free(&r);
}

/* Wait for a submission's final state: its JSON. */
static json_t *final_of(it_user *u, const char *cid, const char *sid, int max_s)
{
    char path[300];

    snprintf(path, sizeof(path), "/api/v1/competitions/%s/submissions/%s", cid, sid);
    for (int i = 0; i < max_s * 10; i++) {
        json_t *j = it_get_json(&srv, u->hdrs, path);
        const char *st;
        ck_assert_ptr_nonnull(j);
        st = it_json_str(j, "status");
        if (strcmp(st, "scored") == 0 || strcmp(st, "invalid") == 0 || strcmp(st, "failed") == 0)
            return j;
        json_decref(j);
        usleep(100000);
    }
    ck_abort_msg("submission %s did not end", sid);
    return NULL;
}

static int64_t balance(it_user *u)
{
    json_t *q = it_get_json(&srv, u->hdrs, "/api/v1/quota");
    int64_t b;

    ck_assert_ptr_nonnull(q);
    b = json_integer_value(json_object_get(q, "balance_mcoins"));
    json_decref(q);
    return b;
}

/* The job of the latest run of submission `sid` (0: none yet). */
static long long job_of(const char *sid)
{
    return it_db_int(&srv, "SELECT IFNULL(MAX(id), 0) FROM jobs WHERE idem_key LIKE 'comp-code:%%:%s:%%'", sid);
}

/* A run that proves what it reads and where it can connect: the inputs give
 * the predictions; any connection, a writable input or the canary found
 * anywhere fails it. The canary is not spelled whole here (searched too). */
static char *probe_py(const char *ip, int port, bool sealed)
{
    char *s = NULL;
    ck_assert_int_gt(asprintf(&s,
        "import os, socket\n"
        "reach = []\n"
        "for host in ['127.0.0.1', '%s']:\n"
        "    if not host:\n"
        "        continue\n"
        "    try:\n"
        "        socket.create_connection((host, %d), timeout=3).close()\n"
        "        reach.append(host)\n"
        "    except OSError as e:\n"
        "        print('no connection to', host, e, flush=True)\n"
        "print('reached:', reach, flush=True)\n"
        "if not %s:\n"
        "    raise SystemExit(0)\n"
        "d = '/home/aistudio/data/hoster-pets-test'\n"
        "xs = [l.split(',') for l in open(d + '/test.csv').read().split()[1:]]\n"
        "try:\n"
        "    open(d + '/mine.txt', 'w').write('x')\n"
        "    wrote = True\n"
        "except OSError:\n"
        "    wrote = False\n"
        "needle = b'CANARY-' + b'code'\n"
        "hits = []\n"
        "for top in ['/home', '/tmp', '/var', '/srv', '/mnt', '/opt', '/root', '/run']:\n"
        "    for dd, _, fs in os.walk(top):\n"
        "        for f in fs:\n"
        "            try:\n"
        "                if needle in open(os.path.join(dd, f), 'rb').read(1 << 20):\n"
        "                    hits.append(os.path.join(dd, f))\n"
        "            except Exception:\n"
        "                pass\n"
        "print('files with the canary:', hits, flush=True)\n"
        "if reach or hits or wrote:\n"
        "    raise SystemExit('not sealed: %%r %%r %%r' %% (reach, hits, wrote))\n"
        "rows = ['id,label'] + ['%%s,%%s' %% (i, 'cat' if int(x) %% 3 else 'dog') for i, x in xs]\n"
        "open(os.environ['EDDY_OUTPUT_DIR'] + '/submission.csv', 'w').write('\\n'.join(rows) + '\\n')\n",
        ip, port, sealed ? "True" : "False"), 0);
    return s;
}

START_TEST(runs_are_sealed)
{
    const char *ah[] = {admin_cookie, admin_csrf, NULL};
    it_user host, alice;
    char dsid[40], cid[64], pid[64], vid[64], sid[64], code[400], path[300], ip[64], logp[400];
    static char log[1 << 20];
    char *sealed, *open_py;
    int64_t before, job;
    long long run;
    json_t *j;
    it_resp r;

    host_ip(ip, sizeof(ip));
    ck_assert_int_eq(it_user_make(&host, &srv, admin_cookie, admin_csrf, "hoster", 0), 0);
    ck_assert_int_eq(it_user_make(&alice, &srv, admin_cookie, admin_csrf, "alice", 1000000), 0);
    ck_assert_int_eq(it_request_status(&srv, "POST", "/api/v1/admin/hosts", "{\"username\":\"hoster\"}", ah), 201);
    inputs_make(dsid, &host);
    snprintf(path, sizeof(path), "/api/v1/datasets/%s", dsid);
    ck_assert_int_eq(it_request_status(&srv, "GET", path, NULL, alice.hdrs), 404);   /* private to the host */

    /* the inputs: shown to the host only */
    snprintf(code, sizeof(code), "{\"resource\":\"cpu-basic\",\"max_runtime_s\":120,\"charged\":false,"
             "\"inputs\":{\"dataset_id\":\"%s\",\"version\":1}}", dsid);
    comp_make(cid, &host, "pets-sealed", code, NULL);
    snprintf(path, sizeof(path), "/api/v1/competitions/%s", cid);
    j = it_get_json(&srv, host.hdrs, path);
    ck_assert_str_eq(it_json_str(json_object_get(json_object_get(j, "code_competition"), "inputs"), "dataset_id"),
                     dsid);
    json_decref(j);
    j = it_get_json(&srv, alice.hdrs, path);
    ck_assert_ptr_null(json_object_get(json_object_get(j, "code_competition"), "inputs"));
    json_decref(j);

    sealed = probe_py(ip, srv.port, true);
    open_py = probe_py(ip, srv.port, false);
    ck_assert_int_eq(it_project_make(pid, sizeof(pid), &srv, alice.hdrs, "pets-code", "solve.py", sealed), 0);
    snprintf(path, sizeof(path), "/api/v1/projects/%s/files/probe.py", pid);
    ck_assert_int_eq(it_request_status(&srv, "PUT", path, open_py, alice.hdrs), 201);
    ck_assert_int_eq(it_version_make(vid, sizeof(vid), &srv, alice.hdrs, pid, "v1"), 0);

    /* the control: a plain job of alice's (her tier allows egress) reaches the server */
    {
        char jc[64];
        ck_assert_int_eq(it_job_submit(&job, jc, sizeof(jc), &srv, alice.hdrs, pid, vid, "probe.py", 120, NULL), 201);
        j = it_job_wait(&srv, alice.hdrs, job, NULL, 150);
        ck_assert_ptr_nonnull(j);
        ck_assert_str_eq(it_json_str(j, "status"), "succeeded");
        json_decref(j);
        snprintf(logp, sizeof(logp), "%s/jobs/%lld/log", srv.data_dir, (long long)job);
        it_slurp(log, sizeof(log), logp);
        ck_assert_msg(strstr(log, "reached: ['127.0.0.1'") != NULL, "the control job did not connect: %s", log);
    }

    accept_rules(&alice, cid);
    before = balance(&alice);
    submit(sid, &alice, cid, pid, vid, "solve.py");
    j = final_of(&alice, cid, sid, 180);
    run = job_of(sid);
    snprintf(logp, sizeof(logp), "%s/jobs/%lld/log", srv.data_dir, run);
    it_slurp(log, sizeof(log), logp);
    ck_assert_msg(strcmp(it_json_str(j, "status"), "scored") == 0, "%s\nlog: %s", json_dumps(j, 0), log);
    /* 59 of 60 from the inputs: row 7's label is the canary */
    ck_assert(json_real_value(json_object_get(j, "public_score")) > 0.9);
    ck_assert_ptr_null(strstr(json_dumps(j, 0), CANARY));
    json_decref(j);
    ck_assert_msg(strstr(log, "reached: []") != NULL && strstr(log, "files with the canary: []") != NULL, "%s", log);
    ck_assert_ptr_null(strstr(log, CANARY));

    /* the run is the platform's: alice neither lists nor reads it */
    ck_assert_int_gt(run, 0);
    snprintf(path, sizeof(path), "/api/v1/jobs/%lld", run);
    ck_assert_int_eq(it_request_status(&srv, "GET", path, NULL, alice.hdrs), 404);
    snprintf(path, sizeof(path), "/api/v1/jobs/%lld/log", run);
    ck_assert_int_eq(it_request_status(&srv, "GET", path, NULL, alice.hdrs), 404);
    it_request(&r, &srv, "GET", "/api/v1/jobs", NULL, alice.hdrs);
    ck_assert_int_eq(r.status, 200);
    ck_assert_int_eq(json_array_size(json_object_get(r.json, "items")), 1);   /* the control job only */
    it_resp_free(&r);
    snprintf(path, sizeof(path), "/api/v1/jobs/%lld", run);
    j = it_get_json(&srv, ah, path);     /* an admin reads it: what it is */
    ck_assert_ptr_nonnull(j);
    ck_assert(json_is_true(json_object_get(json_object_get(j, "platform_run"), "network_off")));
    ck_assert(json_is_true(json_object_get(json_object_get(j, "platform_run"), "uncharged")));
    json_decref(j);
    ck_assert_int_eq(it_db_int(&srv, "SELECT network_off + internal + uncharged + fixed_mounts + collected "
                                     "FROM jobs WHERE id = %lld", run), 5);

    /* free: never reserved nor charged */
    ck_assert_int_eq(it_db_int(&srv, "SELECT count(*) FROM ledger_holds WHERE ref = 'job:%lld'", run), 0);
    ck_assert_int_eq(it_db_int(&srv, "SELECT count(*) FROM quota_meter WHERE ref = 'job:%lld'", run), 0);
    ck_assert_int_eq(balance(&alice), before);
    free(sealed);
    free(open_py);
}
END_TEST

static const char SLEEP_PY[] = "import time\nprint('thinking', flush=True)\ntime.sleep(120)\n";
static const char HOG_PY[] = "print('allocating', flush=True)\nx = b'x' * (1 << 30)\nprint('allocated', len(x), flush=True)\n";
static const char CRASH_PY[] = "print('about to fail', flush=True)\nraise ValueError('model exploded')\n";
static const char NOTHING_PY[] = "print('writing nothing', flush=True)\n";
static const char BAD_PY[] = "import os\nopen(os.environ['EDDY_OUTPUT_DIR'] + '/submission.csv', 'w')"
                             ".write('id,label\\n0,cat\\n')\nprint('wrote two lines', flush=True)\n";
static const char GOOD_PY[] =
    "import os\n"
    "rows = ['id,label'] + ['%d,%s' % (i, 'cat' if i % 3 else 'dog') for i in range(60)]\n"
    "open(os.environ['EDDY_OUTPUT_DIR'] + '/submission.csv', 'w').write('\\n'.join(rows) + '\\n')\n";

START_TEST(failure_classes)
{
    const char *ah[] = {admin_cookie, admin_csrf, NULL};
    it_user host, alice;
    char dsid[40], cid[64], pid[64], vid[64], sid[64], code[400], path[300];
    static const struct {
        const char *entry, *body, *cls, *tail;
    } cases[] = {
        {"sleep.py", SLEEP_PY, "timeout", "thinking"},
        {"hog.py", HOG_PY, "exceeded_compute", "allocating"},
        {"crash.py", CRASH_PY, "exception", "model exploded"},
        {"nothing.py", NOTHING_PY, "missing_output", "writing nothing"},
        {"bad.py", BAD_PY, "invalid_output", NULL},
    };
    json_t *j;

    ck_assert_int_eq(it_user_make(&host, &srv, admin_cookie, admin_csrf, "hoster", 0), 0);
    ck_assert_int_eq(it_user_make(&alice, &srv, admin_cookie, admin_csrf, "alice", 1000000), 0);
    ck_assert_int_eq(it_request_status(&srv, "POST", "/api/v1/admin/hosts", "{\"username\":\"hoster\"}", ah), 201);
    /* the competition's class: 1 CPU, 256 MiB */
    admin_req("PUT", "/api/v1/admin/resources/cpu-small",
              "{\"cpus\": 1, \"memory_mb\": 256, \"price_mcoins_per_hour\": 100, \"capacity\": 4, "
              "\"tiers\": [\"free\", \"pro\", \"premium\"]}", 200);
    inputs_make(dsid, &host);
    snprintf(code, sizeof(code), "{\"resource\":\"cpu-small\",\"max_runtime_s\":5,\"charged\":false,"
             "\"inputs\":{\"dataset_id\":\"%s\",\"version\":1}}", dsid);
    comp_make(cid, &host, "pets-fail", code, NULL);
    ck_assert_int_eq(it_project_make(pid, sizeof(pid), &srv, alice.hdrs, "pets-fail", "good.py", GOOD_PY), 0);
    for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
        snprintf(path, sizeof(path), "/api/v1/projects/%s/files/%s", pid, cases[k].entry);
        ck_assert_int_eq(it_request_status(&srv, "PUT", path, cases[k].body, alice.hdrs), 201);
    }
    ck_assert_int_eq(it_version_make(vid, sizeof(vid), &srv, alice.hdrs, pid, "all"), 0);
    accept_rules(&alice, cid);

    for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
        json_t *err;
        const char *tail;
        submit(sid, &alice, cid, pid, vid, cases[k].entry);
        j = final_of(&alice, cid, sid, 120);
        err = json_object_get(j, "error");
        ck_assert_msg(strcmp(it_json_str(j, "status"), strcmp(cases[k].cls, "invalid_output") == 0 ? "invalid"
                                                                                                   : "failed") == 0 &&
                          strcmp(it_json_str(err, "class"), cases[k].cls) == 0,
                      "%s: %s", cases[k].entry, json_dumps(j, 0));
        ck_assert(json_is_false(json_object_get(j, "counted")));
        tail = it_json_str(err, "log_tail");
        if (cases[k].tail != NULL)
            ck_assert_msg(tail != NULL && strstr(tail, cases[k].tail) != NULL, "%s: tail %s", cases[k].entry, tail);
        ck_assert_ptr_null(strstr(json_dumps(j, 0), CANARY));
        json_decref(j);
    }

    /* the host's scoring program fails on a good output: scoring_error */
    {
        char scid[64];
        comp_make(scid, &host, "pets-scorer", "{\"resource\":\"cpu-small\",\"max_runtime_s\":30,\"charged\":false}",
                  "import sys\nprint('the scorer broke', file=sys.stderr)\nsys.exit(3)\n");
        accept_rules(&alice, scid);
        submit(sid, &alice, scid, pid, vid, "good.py");
        j = final_of(&alice, scid, sid, 120);
        ck_assert_msg(strcmp(it_json_str(j, "status"), "failed") == 0 &&
                          strcmp(it_json_str(json_object_get(j, "error"), "class"), "scoring_error") == 0,
                      "%s", json_dumps(j, 0));
        ck_assert(json_is_false(json_object_get(j, "counted")));
        ck_assert_ptr_null(strstr(json_dumps(j, 0), CANARY));
        json_decref(j);
    }

    /* the host deletes the inputs: the platform's failure, not the participant's */
    snprintf(path, sizeof(path), "/api/v1/datasets/%s/versions/1", dsid);
    ck_assert_int_eq(it_request_status(&srv, "DELETE", path, NULL, host.hdrs), 204);
    submit(sid, &alice, cid, pid, vid, "good.py");
    j = final_of(&alice, cid, sid, 60);
    ck_assert_str_eq(it_json_str(j, "status"), "failed");
    ck_assert_str_eq(it_json_str(json_object_get(j, "error"), "class"), "platform_error");
    ck_assert(json_is_false(json_object_get(j, "counted")));
    json_decref(j);
    /* every run ended collected, none reserved or charged (a free competition) */
    ck_assert_int_eq(it_db_int(&srv, "SELECT count(*) FROM jobs WHERE internal = 1 AND collected = 0"), 0);
    ck_assert_int_eq(it_db_int(&srv, "SELECT count(*) FROM ledger_holds h JOIN jobs j ON h.ref = 'job:' || j.id "
                                     "WHERE j.internal = 1"), 0);
}
END_TEST

static const char SLOW_PY[] =
    "import os, time\n"
    "print('slow start', flush=True)\n"
    "time.sleep(8)\n"
    "rows = ['id,label'] + ['%d,%s' % (i, 'cat' if i % 3 else 'dog') for i in range(60)]\n"
    "open(os.environ['EDDY_OUTPUT_DIR'] + '/submission.csv', 'w').write('\\n'.join(rows) + '\\n')\n";

START_TEST(charged_runs_and_a_restart)
{
    const char *ah[] = {admin_cookie, admin_csrf, NULL};
    it_user host, alice;
    char paid[64], free_cid[64], pid[64], vid[64], sid[64];
    long long run, first, charged;
    int64_t before;
    json_t *j;

    /* cpu-basic at 1000 mcoins a second, no free CPU time */
    admin_req("PUT", "/api/v1/admin/resources/cpu-basic", "{\"price_mcoins_per_hour\": 3600000}", 200);
    admin_req("PUT", "/api/v1/admin/tiers/free", "{\"free_ms_per_day\": {\"cpu-basic\": 0}}", 200);
    ck_assert_int_eq(it_user_make(&host, &srv, admin_cookie, admin_csrf, "hoster", 0), 0);
    ck_assert_int_eq(it_user_make(&alice, &srv, admin_cookie, admin_csrf, "alice", 1000000), 0);
    ck_assert_int_eq(it_request_status(&srv, "POST", "/api/v1/admin/hosts", "{\"username\":\"hoster\"}", ah), 201);
    comp_make(paid, &host, "pets-paid", "{\"resource\":\"cpu-basic\",\"max_runtime_s\":60,\"charged\":true}", NULL);
    comp_make(free_cid, &host, "pets-free", "{\"resource\":\"cpu-basic\",\"max_runtime_s\":60,\"charged\":false}",
              NULL);
    ck_assert_int_eq(it_project_make(pid, sizeof(pid), &srv, alice.hdrs, "pets-paid", "good.py", GOOD_PY), 0);
    {
        char path[200];
        snprintf(path, sizeof(path), "/api/v1/projects/%s/files/slow.py", pid);
        ck_assert_int_eq(it_request_status(&srv, "PUT", path, SLOW_PY, alice.hdrs), 201);
    }
    ck_assert_int_eq(it_version_make(vid, sizeof(vid), &srv, alice.hdrs, pid, "v1"), 0);
    accept_rules(&alice, paid);
    accept_rules(&alice, free_cid);

    /* charged: metered and paid like a job */
    before = balance(&alice);
    submit(sid, &alice, paid, pid, vid, "good.py");
    j = final_of(&alice, paid, sid, 120);
    ck_assert_str_eq(it_json_str(j, "status"), "scored");
    json_decref(j);
    run = job_of(sid);
    charged = it_db_int(&srv, "SELECT charged_mcoins FROM jobs WHERE id = %lld", run);
    ck_assert_int_gt(charged, 0);
    ck_assert_int_gt(it_db_int(&srv, "SELECT count(*) FROM quota_meter WHERE ref = 'job:%lld'", run), 0);
    ck_assert_int_eq(it_db_int(&srv, "SELECT count(*) FROM ledger_holds WHERE ref = 'job:%lld' AND status = 'open'",
                               run), 0);
    ck_assert_int_eq(balance(&alice), before - charged);

    /* free, at the same prices: nothing reserved, metered or charged */
    before = balance(&alice);
    submit(sid, &alice, free_cid, pid, vid, "good.py");
    j = final_of(&alice, free_cid, sid, 120);
    ck_assert_str_eq(it_json_str(j, "status"), "scored");
    json_decref(j);
    run = job_of(sid);
    ck_assert_int_eq(it_db_int(&srv, "SELECT count(*) FROM ledger_holds WHERE ref = 'job:%lld'", run), 0);
    ck_assert_int_eq(it_db_int(&srv, "SELECT count(*) FROM quota_meter WHERE ref = 'job:%lld'", run), 0);
    ck_assert_int_eq(balance(&alice), before);

    /* kill -9 while a charged run runs */
    before = balance(&alice);
    submit(sid, &alice, paid, pid, vid, "slow.py");
    for (int i = 0; i < 600 && (first = job_of(sid)) == 0; i++)
        usleep(100000);
    ck_assert_int_gt(first, 0);
    for (int i = 0; i < 600 && it_db_int(&srv, "SELECT status = 'running' FROM jobs WHERE id = %lld", first) != 1; i++)
        usleep(100000);
    sleep(2);   /* a metered interval or two */
    kill(srv.pid, SIGKILL);
    waitpid(srv.pid, NULL, 0);
    srv.pid = 0;
    {
        char data[300];
        snprintf(data, sizeof(data), "%s", srv.data_dir);
        ck_assert_int_eq(it_server_start_in(&srv, data, env), 0);
    }
    j = final_of(&alice, paid, sid, 180);
    ck_assert_msg(strcmp(it_json_str(j, "status"), "scored") == 0, "after the restart: %s", json_dumps(j, 0));
    json_decref(j);
    /* the killed run: platform_error, its charge refunded; the rerun paid */
    ck_assert_int_eq(it_db_int(&srv, "SELECT failure_reason = 'platform_error' FROM jobs WHERE id = %lld", first), 1);
    ck_assert_int_eq(it_db_int(&srv, "SELECT charged_mcoins FROM jobs WHERE id = %lld", first), 0);
    run = job_of(sid);
    ck_assert_int_gt(run, first);
    charged = it_db_int(&srv, "SELECT charged_mcoins FROM jobs WHERE id = %lld", run);
    ck_assert_int_gt(charged, 0);
    ck_assert_int_eq(balance(&alice), before - charged);
    ck_assert_int_eq(it_db_int(&srv, "SELECT count(*) FROM jobs WHERE internal = 1 AND collected = 0"), 0);
    ck_assert_int_eq(it_db_int(&srv, "SELECT count(*) FROM ledger_holds WHERE status = 'open'"), 0);
}
END_TEST

int main(void)
{
    const TTest *tests[] = {runs_are_sealed, failure_classes, charged_runs_and_a_restart, NULL};

    if (geteuid() != 0) {
        printf("SKIP: code runs need the sandbox, which needs root here\n");
        return 77;
    }
    return it_tests_run("competitions_code", 400, setup, teardown, tests);
}
