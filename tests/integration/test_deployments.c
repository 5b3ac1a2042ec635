/*
 * Model deployments end to end (issue 19 items 4-5), against the real
 * server, sandbox and inference runtime:
 *
 * a tiny MLP is trained in Python (the framework's `paddle`), saved with
 * paddle.jit.save, put into a project and versioned; deployed from that
 * version; called with an API key of scope `serve` as nested lists and as
 * base64 (outputs equal paddle.jit.load's within 1e-5); bad inputs (wrong
 * dtype, shape, a missing or unknown input, NaN, malformed JSON, an
 * oversize body) are 4xx while the replica keeps answering; a truncated
 * model and another user's project or deployment are refused; per-key
 * limits give 429 with Retry-After (requests a minute, concurrency) and
 * 402 (daily budget); a deployment timeout is 504 with code "timeout"; a
 * rolling update to a model a job saved (its artifact) answers every call
 * meanwhile; usage per deployment and per key shows the calls; the ledger
 * holds exactly price x successful calls, also after kill -9 of the server
 * with calls not yet charged.
 *
 * Replicas and jobs run in the sandbox, which needs root here: skips (77)
 * otherwise.
 */
#include "harness.h"

#include <check.h>
#include <libgen.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define PRICE 10

static it_server srv;
static char dir[64], mdir[300];
static char admin_cookie[512], admin_csrf[256];
static const char *env_fast[] = {"EDDY_THREADS=32", "EDDY_METER_INTERVAL_MS=1000", "EDDY_SERVE_FLUSH_MS=200",
                                 "EDDY_STOP_GRACE_MS=1000", "EDDY_MAX_BODY_BYTES=4M", NULL};
static const char *env_noflush[] = {"EDDY_THREADS=32", "EDDY_METER_INTERVAL_MS=1000",
                                    "EDDY_SERVE_FLUSH_MS=3600000", "EDDY_STOP_GRACE_MS=1000",
                                    "EDDY_MAX_BODY_BYTES=4M", NULL};

static const char TRAIN_PY[] =
    "import json, sys\n"
    "import numpy as np\n"
    "import paddle\n"
    "out = sys.argv[1]\n"
    "paddle.seed(7)\n"
    "class MLP(paddle.nn.Layer):\n"
    "    def __init__(self):\n"
    "        super().__init__()\n"
    "        self.l1 = paddle.nn.Linear(4, 8)\n"
    "        self.l2 = paddle.nn.Linear(8, 3)\n"
    "    def forward(self, x):\n"
    "        return self.l2(paddle.nn.functional.relu(self.l1(x)))\n"
    "rng = np.random.RandomState(0)\n"
    "X = rng.randn(64, 4).astype('float32')\n"
    "Y = (X[:, 0] > 0).astype('int64') + (X[:, 1] > 0).astype('int64')\n"
    "xs = rng.randn(5, 4).astype('float32')\n"
    "for tag, steps in (('v1', 20), ('v2', 60)):\n"
    "    m = MLP()\n"
    "    opt = paddle.optimizer.Adam(learning_rate=0.05, parameters=m.parameters())\n"
    "    for _ in range(steps):\n"
    "        loss = paddle.nn.functional.cross_entropy(m(paddle.to_tensor(X)), paddle.to_tensor(Y))\n"
    "        loss.backward(); opt.step(); opt.clear_grad()\n"
    "    spec = [paddle.static.InputSpec([None, 4], 'float32', 'x')]\n"
    "    paddle.jit.save(m, f'{out}/{tag}/mlp', input_spec=spec)\n"
    "    ref = paddle.jit.load(f'{out}/{tag}/mlp')(paddle.to_tensor(xs)).numpy()\n"
    "    json.dump({'x': xs.tolist(), 'ref': ref.tolist()}, open(f'{out}/{tag}/ref.json', 'w'))\n";

/* A job that copies the v2 model (from its project) into its output: the
 * deployment's second source is the job's artifact. */
static const char JOB_PY[] =
    "import os, shutil\n"
    "out = os.environ['EDDY_OUTPUT_DIR']\n"
    "os.makedirs(out + '/export', exist_ok=True)\n"
    "for ext in ('pdmodel', 'pdiparams'):\n"
    "    shutil.copy('model2/mlp.' + ext, out + '/export/mlp.' + ext)\n"
    "print('exported', flush=True)\n";

static json_t *ref1, *ref2;
static it_user alice, bob;
static char pid[64], vid[64];
static int64_t dep_id;
static int successes;   /* calls answered 200 at PRICE */

static char *slurp_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    char *buf;
    long n;

    if (f == NULL)
        return NULL;
    fseek(f, 0, SEEK_END);
    n = ftell(f);
    fseek(f, 0, SEEK_SET);
    buf = malloc((size_t)n + 1);
    if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        buf = NULL;
    }
    if (buf)
        buf[n] = '\0';
    fclose(f);
    *len = (size_t)n;
    return buf;
}

static void put_file(const it_user *u, const char *project, const char *path, const char *data, size_t len)
{
    char url[1000];
    it_resp r;

    snprintf(url, sizeof(url), "/api/v1/projects/%s/files/%s", project, path);
    it_request_n(&r, &srv, "PUT", url, data, (long)len, u->hdrs);
    ck_assert_msg(r.status == 200 || r.status == 201, "PUT %s: %ld %s", path, r.status, r.body);
    it_resp_free(&r);
}

static void upload_model(const it_user *u, const char *project, const char *tag, const char *dest)
{
    char p[800], q[600];
    const char *ext[2] = {"pdmodel", "pdiparams"};

    for (int i = 0; i < 2; i++) {
        size_t len = 0;
        char *buf;
        snprintf(p, sizeof(p), "%s/%s/mlp.%s", mdir, tag, ext[i]);
        buf = slurp_file(p, &len);
        ck_assert_msg(buf != NULL, "read %s", p);
        snprintf(q, sizeof(q), "%s/mlp.%s", dest, ext[i]);
        put_file(u, project, q, buf, len);
        free(buf);
    }
}

static char *inputs_nested(const json_t *ref)
{
    json_t *b = json_pack("{s:{s:{s:s, s:O}}}", "inputs", "x", "dtype", "float32", "data", json_object_get(ref, "x"));
    char *s = json_dumps(b, JSON_COMPACT);
    json_decref(b);
    return s;
}

static void check_outputs(const json_t *resp, const json_t *ref)
{
    json_t *data = json_object_get(json_object_get(json_object_get(resp, "outputs"), "out"), "data");
    json_t *want = json_object_get(ref, "ref");

    if (data == NULL) {   /* the output's name is the model's: take the only one */
        const char *k;
        json_t *v;
        json_object_foreach(json_object_get(resp, "outputs"), k, v) data = json_object_get(v, "data");
    }
    ck_assert_msg(json_array_size(data) == json_array_size(want), "rows: %zu vs %zu", json_array_size(data),
                  json_array_size(want));
    for (size_t i = 0; i < json_array_size(want); i++)
        for (size_t k = 0; k < json_array_size(json_array_get(want, i)); k++) {
            double a = json_number_value(json_array_get(json_array_get(data, i), k));
            double b = json_number_value(json_array_get(json_array_get(want, i), k));
            ck_assert_msg(fabs(a - b) <= 1e-5, "output[%zu][%zu] = %.8g, paddle.jit.load gave %.8g", i, k, a, b);
        }
}

static long predict(it_resp *r, const it_key *k, const char *dep, const char *body)
{
    char url[256];
    snprintf(url, sizeof(url), "/serve/%s/predict", dep);
    it_request(r, &srv, "POST", url, body, k->hdrs);
    return r->status;
}

static void dep_url(char *out, size_t n, const char *suffix)
{
    snprintf(out, n, "/api/v1/deployments/%lld%s", (long long)dep_id, suffix);
}

/* Wait until the deployment has `ready` replicas serving `version`. */
static void wait_ready(int version, int max_s)
{
    char url[96];
    for (int i = 0; i < max_s * 5; i++) {
        json_t *j;
        dep_url(url, sizeof(url), "");
        j = it_get_json(&srv, alice.hdrs, url);
        if (j && json_integer_value(json_object_get(j, "replicas_ready")) >= 1 &&
            json_integer_value(json_object_get(j, "model_version")) == version) {
            json_decref(j);
            return;
        }
        if (i == max_s * 5 - 1)
            ck_abort_msg("deployment not ready: %s", j ? json_dumps(j, 0) : "?");
        json_decref(j);
        usleep(200000);
    }
}

static int64_t ledger_model_charges(const it_user *u)
{
    json_t *j = it_get_json(&srv, u->hdrs, "/api/v1/ledger?limit=500"), *e;
    int64_t sum = 0;
    size_t i;

    ck_assert_ptr_nonnull(j);
    json_array_foreach(json_object_get(j, "items"), i, e) {
        const char *reason = it_json_str(e, "reason");
        if (strcmp(it_json_str(e, "kind"), "charge") == 0 && strncmp(reason, "model calls", 11) == 0)
            sum += -json_integer_value(json_object_get(e, "amount_mcoins"));
    }
    json_decref(j);
    return sum;
}

static int train(void)
{
    char cmd[1200], py[400], eddy[400], *d;
    FILE *f;

    snprintf(mdir, sizeof(mdir), "%s/models", dir);
    snprintf(py, sizeof(py), "%s/train.py", dir);
    if ((f = fopen(py, "w")) == NULL)
        return -1;
    fputs(TRAIN_PY, f);
    fclose(f);
    snprintf(eddy, sizeof(eddy), "%s", it_eddy_bin());
    d = dirname(eddy);
    snprintf(cmd, sizeof(cmd), "PYTHONPATH=%s/../framework/python /usr/bin/python3 %s %s", d, py, mdir);
    return system(cmd) == 0 ? 0 : -1;
}

static json_t *load_ref(const char *tag)
{
    char p[400];
    snprintf(p, sizeof(p), "%s/%s/ref.json", mdir, tag);
    return json_load_file(p, 0, NULL);
}

static void setup(void)
{
    ck_assert_int_eq(it_admin_server_start(&srv, dir, sizeof(dir), "deploy", env_fast, admin_cookie,
                                           sizeof(admin_cookie), admin_csrf, sizeof(admin_csrf)),
                     0);
    ck_assert_msg(train() == 0, "training the model in Python failed");
    ref1 = load_ref("v1");
    ref2 = load_ref("v2");
    ck_assert_ptr_nonnull(ref1);
    ck_assert_ptr_nonnull(ref2);
    ck_assert_int_eq(it_user_make(&alice, &srv, admin_cookie, admin_csrf, "alice", 1000000), 0);
    ck_assert_int_eq(it_user_make(&bob, &srv, admin_cookie, admin_csrf, "bobby", 1000000), 0);
    ck_assert_int_eq(it_project_make(pid, sizeof(pid), &srv, alice.hdrs, "served", "export.py", JOB_PY), 0);
    upload_model(&alice, pid, "v1", "model");
    upload_model(&alice, pid, "v2", "model2");
    ck_assert_int_eq(it_version_make(vid, sizeof(vid), &srv, alice.hdrs, pid, "trained"), 0);
}

static void teardown(void)
{
    json_decref(ref1);
    json_decref(ref2);
    ref1 = ref2 = NULL;
    it_server_stop(&srv);
    it_dir_remove(dir);
}

/* One sequence: each step needs the deployment the earlier ones made. */
START_TEST(deploy_call_limits_usage_and_rolling_update)
{
    char body[1200], url[160], *nested;
    it_key key, key_read, key_rpm, key_budget, key_conc, bobkey;
    it_resp r;

    setup();
    /* a truncated model is refused with the loader's message; nothing is kept */
    put_file(&alice, pid, "bad/m.pdmodel", "{\"format\": \"eddy-graph\", \"vers", 30);
    put_file(&alice, pid, "bad/m.pdiparams", "\0\0\0\0\0\0\0\0", 8);
    snprintf(body, sizeof(body),
             "{\"name\":\"broken\",\"source\":{\"project_id\":\"%s\",\"path\":\"bad/m\"},\"resource\":\"cpu-basic\"}",
             pid);
    it_request(&r, &srv, "POST", "/api/v1/deployments", body, alice.hdrs);
    ck_assert_msg(r.status == 422 && strstr(r.body, "model"), "truncated model: %ld %s", r.status, r.body);
    it_resp_free(&r);
    /* missing files, bad settings */
    snprintf(body, sizeof(body), "{\"name\":\"x\",\"source\":{\"project_id\":\"%s\",\"path\":\"nope/m\"}}", pid);
    ck_assert_int_eq(it_request_status(&srv, "POST", "/api/v1/deployments", body, alice.hdrs), 422);
    snprintf(body, sizeof(body), "{\"name\":\"x\",\"max_batch\":0,\"source\":{\"project_id\":\"%s\",\"path\":\"model/mlp\"}}",
             pid);
    ck_assert_int_eq(it_request_status(&srv, "POST", "/api/v1/deployments", body, alice.hdrs), 422);
    /* bob cannot deploy alice's project */
    snprintf(body, sizeof(body), "{\"name\":\"stolen\",\"source\":{\"project_id\":\"%s\",\"path\":\"model/mlp\"}}", pid);
    ck_assert_int_eq(it_request_status(&srv, "POST", "/api/v1/deployments", body, bob.hdrs), 404);

    /* deploy the version */
    snprintf(body, sizeof(body),
             "{\"name\":\"mlp\",\"source\":{\"project_id\":\"%s\",\"version\":\"%s\",\"path\":\"model/mlp\"},"
             "\"kind\":\"model\",\"resource\":\"cpu-basic\",\"replicas\":1,\"max_batch\":8,\"max_delay_ms\":5,"
             "\"timeout_ms\":20000,\"price_mcoins_per_call\":%d}",
             pid, vid, PRICE);
    it_request(&r, &srv, "POST", "/api/v1/deployments", body, alice.hdrs);
    ck_assert_msg(r.status == 201, "deploy: %ld %s", r.status, r.body);
    dep_id = json_integer_value(json_object_get(r.json, "id"));
    ck_assert_int_eq(json_integer_value(json_object_get(r.json, "model_version")), 1);
    it_resp_free(&r);
    wait_ready(1, 90);

    ck_assert_int_eq(it_key_make(&key, &srv, alice.hdrs, "{\"name\":\"serve\",\"env\":\"prod\",\"scopes\":[\"serve\"]}"), 0);
    ck_assert_int_eq(it_key_make(&key_read, &srv, alice.hdrs, "{\"name\":\"ro\",\"env\":\"prod\",\"scopes\":[\"read\"]}"), 0);
    ck_assert_int_eq(it_key_make(&bobkey, &srv, bob.hdrs, "{\"name\":\"b\",\"env\":\"prod\",\"scopes\":[\"serve\"]}"), 0);

    /* nested lists: outputs equal paddle.jit.load's */
    nested = inputs_nested(ref1);
    ck_assert_int_eq(predict(&r, &key, "mlp", nested), 200);
    check_outputs(r.json, ref1);
    ck_assert_int_eq(json_integer_value(json_object_get(r.json, "model_version")), 1);
    it_resp_free(&r);
    successes++;
    snprintf(url, sizeof(url), "%lld", (long long)dep_id);
    ck_assert_int_eq(predict(&r, &key, url, nested), 200);   /* by id too */
    check_outputs(r.json, ref1);
    it_resp_free(&r);
    successes++;
    /* base64 with shape and dtype */
    {
        float xs[20];
        size_t i, k;
        json_t *row;
        static const char tbl[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        char b64[200];
        unsigned char *p = (unsigned char *)xs;
        size_t o = 0;
        json_array_foreach(json_object_get(ref1, "x"), i, row) for (k = 0; k < 4; k++) xs[i * 4 + k] =
            (float)json_number_value(json_array_get(row, k));
        for (i = 0; i < sizeof(xs); i += 3) {
            unsigned v = (unsigned)p[i] << 16 | (i + 1 < sizeof(xs) ? (unsigned)p[i + 1] << 8 : 0) |
                         (i + 2 < sizeof(xs) ? p[i + 2] : 0);
            b64[o++] = tbl[v >> 18 & 63];
            b64[o++] = tbl[v >> 12 & 63];
            b64[o++] = i + 1 < sizeof(xs) ? tbl[v >> 6 & 63] : '=';
            b64[o++] = i + 2 < sizeof(xs) ? tbl[v & 63] : '=';
        }
        b64[o] = '\0';
        snprintf(body, sizeof(body), "{\"inputs\":{\"x\":{\"shape\":[5,4],\"dtype\":\"float32\",\"b64\":\"%s\"}}}", b64);
        ck_assert_int_eq(predict(&r, &key, "mlp", body), 200);
        check_outputs(r.json, ref1);
        it_resp_free(&r);
        successes++;
        /* NaN through base64 is refused */
        xs[3] = NAN;
        o = 0;
        for (i = 0; i < sizeof(xs); i += 3) {
            unsigned v = (unsigned)p[i] << 16 | (i + 1 < sizeof(xs) ? (unsigned)p[i + 1] << 8 : 0) |
                         (i + 2 < sizeof(xs) ? p[i + 2] : 0);
            b64[o++] = tbl[v >> 18 & 63];
            b64[o++] = tbl[v >> 12 & 63];
            b64[o++] = i + 1 < sizeof(xs) ? tbl[v >> 6 & 63] : '=';
            b64[o++] = i + 2 < sizeof(xs) ? tbl[v & 63] : '=';
        }
        b64[o] = '\0';
        snprintf(body, sizeof(body), "{\"inputs\":{\"x\":{\"shape\":[5,4],\"dtype\":\"float32\",\"b64\":\"%s\"}}}", b64);
        ck_assert_int_eq(predict(&r, &key, "mlp", body), 422);
        ck_assert_msg(strstr(r.body, "NaN") != NULL, "%s", r.body);
        it_resp_free(&r);
    }
    /* bad inputs: 4xx naming the problem, and the replica stays up */
    ck_assert_int_eq(predict(&r, &key, "mlp", "{\"inputs\":{\"x\":{\"dtype\":\"int64\",\"data\":[[1,2,3,4]]}}}"), 422);
    ck_assert_msg(strstr(r.body, "float32") != NULL, "%s", r.body);
    it_resp_free(&r);
    ck_assert_int_eq(predict(&r, &key, "mlp", "{\"inputs\":{\"x\":{\"dtype\":\"float32\",\"data\":[[1,2,3]]}}}"), 422);
    ck_assert_msg(strstr(r.body, "dimension 1") != NULL, "%s", r.body);
    it_resp_free(&r);
    ck_assert_int_eq(predict(&r, &key, "mlp", "{\"inputs\":{\"y\":{\"dtype\":\"float32\",\"data\":[[1,2,3,4]]}}}"), 422);
    it_resp_free(&r);
    ck_assert_int_eq(predict(&r, &key, "mlp", "{\"inputs\":{\"x\":{\"shape\":[2,4],\"data\":[[1,2,3,4]]}}}"), 422);
    it_resp_free(&r);
    ck_assert_int_eq(predict(&r, &key, "mlp", "{\"inputs\":{\"x\":{\"data\":[[1,\"a\",3,4]]}}}"), 422);
    it_resp_free(&r);
    ck_assert_int_eq(predict(&r, &key, "mlp", "{\"inputs\": [1, 2"), 400);
    it_resp_free(&r);
    ck_assert_int_eq(predict(&r, &key, "mlp", "{\"inputs\":{\"x\":{\"shape\":[100000000,4],\"b64\":\"AAAA\"}}}"), 413);
    it_resp_free(&r);
    {
        size_t big = 5u << 20;
        char *huge = malloc(big + 1);
        memset(huge, ' ', big);
        huge[big] = '\0';
        ck_assert_int_eq(predict(&r, &key, "mlp", huge), 413);
        it_resp_free(&r);
        free(huge);
    }
    ck_assert_int_eq(predict(&r, &key, "mlp", nested), 200);   /* still serving */
    check_outputs(r.json, ref1);
    it_resp_free(&r);
    successes++;

    /* scope, ownership */
    ck_assert_int_eq(predict(&r, &key_read, "mlp", nested), 403);
    it_resp_free(&r);
    ck_assert_int_eq(predict(&r, &bobkey, url, nested), 404);
    it_resp_free(&r);
    dep_url(url, sizeof(url), "");
    ck_assert_int_eq(it_request_status(&srv, "GET", url, NULL, bob.hdrs), 404);
    ck_assert_int_eq(it_request_status(&srv, "DELETE", url, NULL, bob.hdrs), 404);

    /* 429: requests a minute, with Retry-After */
    ck_assert_int_eq(it_key_make(&key_rpm, &srv, alice.hdrs, "{\"name\":\"rpm\",\"env\":\"prod\",\"scopes\":[\"serve\"]}"), 0);
    snprintf(url, sizeof(url), "/api/v1/keys/%lld/serve-limits", (long long)key_rpm.id);
    ck_assert_int_eq(it_request_status(&srv, "PUT", url, "{\"requests_per_min\":2}", alice.hdrs), 200);
    ck_assert_int_eq(it_request_status(&srv, "PUT", url, "{\"requests_per_min\":2}", bob.hdrs), 404);
    for (int i = 0; i < 2; i++) {
        ck_assert_int_eq(predict(&r, &key_rpm, "mlp", nested), 200);
        it_resp_free(&r);
        successes++;
    }
    ck_assert_int_eq(predict(&r, &key_rpm, "mlp", nested), 429);
    ck_assert_ptr_nonnull(it_resp_header(&r, "Retry-After"));
    ck_assert_int_ge(atoi(it_resp_header(&r, "Retry-After")), 1);
    it_resp_free(&r);

    /* 402: the key's daily budget */
    ck_assert_int_eq(it_key_make(&key_budget, &srv, alice.hdrs, "{\"name\":\"budget\",\"env\":\"prod\",\"scopes\":[\"serve\"]}"), 0);
    snprintf(url, sizeof(url), "/api/v1/keys/%lld/serve-limits", (long long)key_budget.id);
    snprintf(body, sizeof(body), "{\"daily_budget_mcoins\":%d}", 2 * PRICE);
    ck_assert_int_eq(it_request_status(&srv, "PUT", url, body, alice.hdrs), 200);
    for (int i = 0; i < 2; i++) {
        ck_assert_int_eq(predict(&r, &key_budget, "mlp", nested), 200);
        it_resp_free(&r);
        successes++;
    }
    ck_assert_int_eq(predict(&r, &key_budget, "mlp", nested), 402);
    ck_assert_str_eq(it_resp_error_code(&r), "quota_exceeded");
    it_resp_free(&r);

    /* 504: a batch window longer than the timeout */
    dep_url(url, sizeof(url), "");
    ck_assert_int_eq(it_request_status(&srv, "PATCH", url, "{\"max_batch\":64,\"max_delay_ms\":4000,\"timeout_ms\":300}",
                                       alice.hdrs),
                     200);
    ck_assert_int_eq(predict(&r, &key, "mlp", nested), 504);
    ck_assert_str_eq(it_resp_error_code(&r), "timeout");
    ck_assert_msg(strstr(r.body, "300 ms") != NULL, "%s", r.body);
    it_resp_free(&r);

    /* concurrency: with a limit of one, of two calls sent together one is
     * held by the batch window (5 s) and the other is 429, whichever comes first */
    ck_assert_int_eq(it_request_status(&srv, "PATCH", url, "{\"timeout_ms\":20000,\"max_delay_ms\":5000}", alice.hdrs),
                     200);
    ck_assert_int_eq(it_key_make(&key_conc, &srv, alice.hdrs, "{\"name\":\"conc\",\"env\":\"prod\",\"scopes\":[\"serve\"]}"), 0);
    snprintf(url, sizeof(url), "/api/v1/keys/%lld/serve-limits", (long long)key_conc.id);
    ck_assert_int_eq(it_request_status(&srv, "PUT", url, "{\"concurrency\":1}", alice.hdrs), 200);
    {
        pid_t kids[2];
        int codes[3] = {0, 0, 0};
        for (int i = 0; i < 2; i++) {
            kids[i] = fork();
            ck_assert_int_ge(kids[i], 0);
            if (kids[i] == 0) {
                it_resp cr;
                long s = predict(&cr, &key_conc, "mlp", nested);
                _exit(s == 200 ? 0 : s == 429 && strstr(cr.body, "in flight") && it_resp_header(&cr, "Retry-After") ? 2 : 1);
            }
        }
        for (int i = 0; i < 2; i++) {
            int st;
            ck_assert_int_eq(waitpid(kids[i], &st, 0), kids[i]);
            ck_assert(WIFEXITED(st) && WEXITSTATUS(st) <= 2);
            codes[WEXITSTATUS(st)]++;
        }
        ck_assert_msg(codes[0] == 1 && codes[2] == 1, "200s %d, 429s %d, others %d", codes[0], codes[2], codes[1]);
        successes++;
    }
    dep_url(url, sizeof(url), "");
    ck_assert_int_eq(it_request_status(&srv, "PATCH", url, "{\"max_batch\":8,\"max_delay_ms\":5}", alice.hdrs), 200);

    /* rolling update to a job's artifact while calls keep coming */
    {
        int64_t job = 0;
        char code[64];
        json_t *j;
        pid_t child;
        int st;
        ck_assert_int_eq(it_job_submit(&job, code, sizeof(code), &srv, alice.hdrs, pid, NULL, "export.py", 120, NULL),
                         201);
        j = it_job_wait(&srv, alice.hdrs, job, NULL, 150);
        ck_assert_msg(j && strcmp(it_json_str(j, "status"), "succeeded") == 0, "job: %s", j ? json_dumps(j, 0) : "?");
        json_decref(j);
        /* bob cannot deploy alice's job */
        snprintf(body, sizeof(body), "{\"name\":\"s2\",\"source\":{\"job_id\":%lld,\"path\":\"export/mlp\"}}",
                 (long long)job);
        ck_assert_int_eq(it_request_status(&srv, "POST", "/api/v1/deployments", body, bob.hdrs), 404);
        child = fork();
        ck_assert_int_ge(child, 0);
        if (child == 0) {
            /* call until version 2 answers; every call must succeed */
            for (int i = 0; i < 3000; i++) {
                it_resp cr;
                long s = predict(&cr, &key, "mlp", nested);
                int v = s == 200 ? (int)json_integer_value(json_object_get(cr.json, "model_version")) : 0;
                if (s != 200) {
                    fprintf(stderr, "call during the swap: %ld %s\n", s, cr.body);
                    _exit(100);
                }
                it_resp_free(&cr);
                if (v == 2)
                    _exit(i + 1 > 99 ? 99 : i + 1);
            }
            _exit(101);
        }
        usleep(300000);
        snprintf(body, sizeof(body), "{\"source\":{\"job_id\":%lld,\"path\":\"export/mlp\"}}", (long long)job);
        it_request(&r, &srv, "PATCH", url, body, alice.hdrs);
        ck_assert_msg(r.status == 200, "patch: %ld %s", r.status, r.body);
        ck_assert_int_eq(json_integer_value(json_object_get(r.json, "model_version")), 2);
        it_resp_free(&r);
        ck_assert_int_eq(waitpid(child, &st, 0), child);
        ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) >= 1 && WEXITSTATUS(st) <= 99, "swap caller exit %d",
                      WIFEXITED(st) ? WEXITSTATUS(st) : -1);
        successes += WEXITSTATUS(st) < 99 ? WEXITSTATUS(st) : 0;
        if (WEXITSTATUS(st) == 99)
            ck_abort_msg("the swap took more than 99 calls to count exactly");
    }
    ck_assert_int_eq(predict(&r, &key, "mlp", nested), 200);
    ck_assert_int_eq(json_integer_value(json_object_get(r.json, "model_version")), 2);
    check_outputs(r.json, ref2);
    it_resp_free(&r);
    successes++;

    /* usage and the ledger */
    sleep(1);
    dep_url(url, sizeof(url), "/usage");
    {
        json_t *u = it_get_json(&srv, alice.hdrs, url), *day;
        ck_assert_ptr_nonnull(u);
        ck_assert_int_eq(json_array_size(u), 1);
        day = json_array_get(u, 0);
        ck_assert_int_ge(json_integer_value(json_object_get(day, "calls")), successes);
        ck_assert_int_ge(json_integer_value(json_object_get(day, "errors")), 10);
        ck_assert_int_eq(json_integer_value(json_object_get(day, "cost_mcoins")), (json_int_t)successes * PRICE);
        ck_assert_ptr_nonnull(json_object_get(day, "p99_ms"));
        json_decref(u);
        ck_assert_int_eq(it_request_status(&srv, "GET", url, NULL, bob.hdrs), 404);
    }
    snprintf(url, sizeof(url), "/api/v1/keys/%lld/usage", (long long)key_budget.id);
    {
        json_t *u = it_get_json(&srv, alice.hdrs, url);
        ck_assert_ptr_nonnull(u);
        ck_assert_int_eq(json_integer_value(json_object_get(json_array_get(u, 0), "calls")), 3);
        ck_assert_int_eq(json_integer_value(json_object_get(json_array_get(u, 0), "errors")), 1);
        ck_assert_int_eq(json_integer_value(json_object_get(json_array_get(u, 0), "cost_mcoins")), 2 * PRICE);
        json_decref(u);
        ck_assert_int_eq(it_request_status(&srv, "GET", url, NULL, bob.hdrs), 404);
    }
    ck_assert_int_eq(ledger_model_charges(&alice), (int64_t)successes * PRICE);
    /* the owner's replicas are metered like jobs (EDDY_METER_INTERVAL_MS=1000) */
    {
        json_t *j, *x;
        size_t k;
        int64_t metered = 0;
        dep_url(url, sizeof(url), "");
        j = it_get_json(&srv, alice.hdrs, url);
        ck_assert_ptr_nonnull(j);
        json_array_foreach(json_object_get(j, "replica_list"), k, x) metered += json_integer_value(json_object_get(x, "metered_ms"));
        ck_assert_msg(metered > 0, "no replica time metered: %s", json_dumps(j, 0));
        json_decref(j);
    }

    /* kill -9 with calls logged but not yet charged: after a restart the
     * charges are exact (each batch posted once under its key) */
    {
        int64_t before = ledger_model_charges(&alice);
        char data[300];
        snprintf(data, sizeof(data), "%s/data", dir);
        ck_assert_int_eq(it_server_stop(&srv), 0);
        ck_assert_int_eq(it_server_start_in(&srv, data, env_noflush), 0);
        it_login(&srv, "alice", alice.pw, alice.cookie, sizeof(alice.cookie), alice.csrf, sizeof(alice.csrf));
        wait_ready(2, 90);
        for (int i = 0; i < 5; i++) {
            ck_assert_int_eq(predict(&r, &key, "mlp", nested), 200);
            it_resp_free(&r);
            successes++;
        }
        kill(srv.pid, SIGKILL);
        waitpid(srv.pid, NULL, 0);
        ck_assert_int_eq(it_server_start_in(&srv, data, env_fast), 0);
        it_login(&srv, "alice", alice.pw, alice.cookie, sizeof(alice.cookie), alice.csrf, sizeof(alice.csrf));
        ck_assert_int_eq(ledger_model_charges(&alice) - before, 5 * PRICE);
        ck_assert_int_eq(ledger_model_charges(&alice), (int64_t)successes * PRICE);
        /* a second restart posts nothing twice */
        ck_assert_int_eq(it_server_stop(&srv), 0);
        ck_assert_int_eq(it_server_start_in(&srv, data, env_fast), 0);
        it_login(&srv, "alice", alice.pw, alice.cookie, sizeof(alice.cookie), alice.csrf, sizeof(alice.csrf));
        sleep(1);
        ck_assert_int_eq(ledger_model_charges(&alice), (int64_t)successes * PRICE);
        it_login(&srv, IT_ADMIN_USER, IT_ADMIN_PASSWORD, admin_cookie, sizeof(admin_cookie), admin_csrf,
                 sizeof(admin_csrf));
        {
            const char *ah[] = {admin_cookie, admin_csrf, NULL};
            json_t *v = it_get_json(&srv, ah, "/api/v1/admin/ledger/verify");
            ck_assert_ptr_nonnull(v);
            ck_assert_msg(json_is_true(json_object_get(v, "ok")), "ledger verify: %s", json_dumps(v, 0));
            json_decref(v);
        }
    }
    free(nested);
    teardown();
}
END_TEST


static const char HANDLER_PY[] =
    "import numpy as np\n"
    "import paddle\n"
    "W = None\n"
    "def load():\n"
    "    global W\n"
    "    W = paddle.to_tensor(np.array([[1.0, 2.0], [3.0, 4.0]], dtype='float32'))\n"
    "def predict(inputs):\n"
    "    x = inputs['x']\n"
    "    if x.shape[-1] != 2:\n"
    "        raise ValueError('x must have 2 columns')\n"
    "    y = paddle.matmul(paddle.to_tensor(x), W).numpy()\n"
    "    return {'y': y, 'rows': np.array(x.shape[0], dtype=np.int64)}\n";

static const char BROKEN_PY[] =
    "def load():\n"
    "    raise RuntimeError('weights missing')\n"
    "def predict(inputs):\n"
    "    return inputs\n";

/* kind "python": predict.py with load() and predict(inputs) as a persistent
 * worker in the sandbox (paddle importable); its exceptions are 422 and the
 * worker keeps serving; a handler whose load() fails leaves no replica (503,
 * the reason in the replica list). */
START_TEST(python_handler_serves_and_refuses_cleanly)
{
    char body[600], url[128], hp[64];
    it_key key;
    it_resp r;
    json_t *j = NULL;
    int failed = 0;

    ck_assert_int_eq(it_admin_server_start(&srv, dir, sizeof(dir), "deploypy", env_fast, admin_cookie,
                                           sizeof(admin_cookie), admin_csrf, sizeof(admin_csrf)),
                     0);
    ck_assert_int_eq(it_user_make(&alice, &srv, admin_cookie, admin_csrf, "alice", 1000000), 0);
    ck_assert_int_eq(it_project_make(hp, sizeof(hp), &srv, alice.hdrs, "handler", "serve/predict.py", HANDLER_PY), 0);
    put_file(&alice, hp, "broken/predict.py", BROKEN_PY, strlen(BROKEN_PY));
    ck_assert_int_eq(it_key_make(&key, &srv, alice.hdrs, "{\"name\":\"s\",\"env\":\"prod\",\"scopes\":[\"serve\"]}"), 0);
    /* a python deployment names its handler file */
    snprintf(body, sizeof(body), "{\"name\":\"h\",\"kind\":\"python\",\"source\":{\"project_id\":\"%s\",\"path\":\"serve\"}}",
             hp);
    ck_assert_int_eq(it_request_status(&srv, "POST", "/api/v1/deployments", body, alice.hdrs), 422);
    snprintf(body, sizeof(body),
             "{\"name\":\"h\",\"kind\":\"python\",\"source\":{\"project_id\":\"%s\",\"path\":\"serve/predict.py\"}}", hp);
    it_request(&r, &srv, "POST", "/api/v1/deployments", body, alice.hdrs);
    ck_assert_msg(r.status == 201, "deploy: %ld %s", r.status, r.body);
    dep_id = json_integer_value(json_object_get(r.json, "id"));
    it_resp_free(&r);
    wait_ready(1, 90);
    ck_assert_int_eq(predict(&r, &key, "h", "{\"inputs\":{\"x\":{\"dtype\":\"float32\",\"data\":[[1,1],[2,0]]}}}"), 200);
    {
        json_t *y = json_object_get(json_object_get(r.json, "outputs"), "y");
        json_t *d = json_object_get(y, "data");
        ck_assert_msg(json_number_value(json_array_get(json_array_get(d, 0), 0)) == 4.0 &&
                          json_number_value(json_array_get(json_array_get(d, 0), 1)) == 6.0 &&
                          json_number_value(json_array_get(json_array_get(d, 1), 1)) == 4.0,
                      "%s", r.body);
        json_t *rows = json_object_get(json_object_get(json_object_get(r.json, "outputs"), "rows"), "data");
        ck_assert_msg(json_integer_value(json_is_array(rows) ? json_array_get(rows, 0) : rows) == 2, "%s", r.body);
    }
    it_resp_free(&r);
    ck_assert_int_eq(predict(&r, &key, "h", "{\"inputs\":{\"x\":{\"dtype\":\"float32\",\"data\":[[1,1,1]]}}}"), 422);
    ck_assert_msg(strstr(r.body, "x must have 2 columns") != NULL, "%s", r.body);
    it_resp_free(&r);
    ck_assert_int_eq(predict(&r, &key, "h", "{\"inputs\":{\"x\":{\"dtype\":\"float32\",\"data\":[[0,1]]}}}"), 200);
    it_resp_free(&r);

    /* load() raises: the replica fails with its message, calls are 503 */
    snprintf(body, sizeof(body),
             "{\"name\":\"b\",\"kind\":\"python\",\"source\":{\"project_id\":\"%s\",\"path\":\"broken/predict.py\"}}", hp);
    it_request(&r, &srv, "POST", "/api/v1/deployments", body, alice.hdrs);
    ck_assert_msg(r.status == 201, "deploy: %ld %s", r.status, r.body);
    snprintf(url, sizeof(url), "/api/v1/deployments/%lld", (long long)json_integer_value(json_object_get(r.json, "id")));
    it_resp_free(&r);
    for (int i = 0; i < 300 && !failed; i++) {
        json_t *reps;
        size_t k;
        json_t *x;
        j = it_get_json(&srv, alice.hdrs, url);
        reps = json_object_get(j, "replica_list");
        json_array_foreach(reps, k, x) if (strcmp(it_json_str(x, "status"), "failed") == 0) {
            ck_assert_msg(strstr(it_json_str(x, "detail"), "weights missing") != NULL, "%s", json_dumps(x, 0));
            failed = 1;
        }
        json_decref(j);
        if (!failed)
            usleep(200000);
    }
    ck_assert_msg(failed, "the broken handler's replica never failed");
    ck_assert_int_eq(predict(&r, &key, "b", "{\"inputs\":{\"x\":{\"data\":[[1]]}}}"), 503);
    it_resp_free(&r);
    teardown();
}
END_TEST

int main(void)
{
    Suite *s = suite_create("deployments");
    TCase *tc = tcase_create("e2e");
    SRunner *sr;
    int failed;

    if (geteuid() != 0) {
        printf("SKIP: replicas and jobs run in the sandbox, which needs root here\n");
        return 77;
    }
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, deploy_call_limits_usage_and_rolling_update);
    tcase_add_test(tc, python_handler_serves_and_refuses_cleanly);
    suite_add_tcase(s, tc);
    sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
