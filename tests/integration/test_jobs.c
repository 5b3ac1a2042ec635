/* Jobs over HTTP against the real server, sandbox and ledger: a training-like
 * script from a project version, its logs followed as Server-Sent Events, an
 * artifact downloaded, the charge in the ledger and the ledger verified;
 * resources and admin editing; tier and capacity refusals; cancel; and
 * kill -9 of `eddy serve` during metering, then restart and reconcile:
 * nothing lost, nothing doubled, no hold left open.
 *
 * The training script is Paddle code: nn.Linear, SGD and paddle.save, run
 * by eddy-kernel inside the sandbox with the build's paddle package. */
#include "harness.h"

#include <check.h>
#include <fcntl.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static it_server srv;
static char dir[64], data[128];
static char admin_cookie[512], admin_csrf[256];
static const char *const env[] = {"EDDY_METER_INTERVAL_MS=1000", "EDDY_OOF_GRACE_MS=1000",
                                  "EDDY_STOP_GRACE_MS=1000", NULL};

static const char TRAIN_PY[] =
    "import os, sys, time\n"
    "import numpy as np\n"
    "import paddle\n"
    "print('runner:', os.environ['EDDY_RUNNER'], flush=True)\n"
    "print('framework: paddle', paddle.__version__, flush=True)\n"
    "epochs = int(sys.argv[sys.argv.index('--epochs') + 1])\n"
    "paddle.seed(0)\n"
    "rng = np.random.default_rng(0)\n"
    "x = rng.normal(size=(256, 4)).astype('float32')\n"
    "y = (x @ np.array([1.0, -2.0, 0.5, 3.0], dtype='float32') + 0.01 * rng.normal(size=256)).astype('float32')\n"
    "xt, yt = paddle.to_tensor(x), paddle.to_tensor(y.reshape(-1, 1))\n"
    "model = paddle.nn.Linear(4, 1)\n"
    "opt = paddle.optimizer.SGD(learning_rate=0.05, parameters=model.parameters())\n"
    "loss_fn = paddle.nn.MSELoss()\n"
    "for epoch in range(1, epochs + 1):\n"
    "    for _ in range(50):\n"
    "        loss = loss_fn(model(xt), yt)\n"
    "        loss.backward()\n"
    "        opt.step()\n"
    "        opt.clear_grad()\n"
    "    print(f'epoch {epoch} loss {float(loss):.6f}', flush=True)\n"
    "    time.sleep(0.8)\n"
    "out = os.environ['EDDY_OUTPUT_DIR']\n"
    "os.makedirs(out + '/ckpt', exist_ok=True)\n"
    "paddle.save(model.state_dict(), out + '/ckpt/model.pdparams')\n"
    "w = model.weight.numpy().reshape(-1)\n"
    "open(out + '/ckpt/model.txt', 'w').write(' '.join(f'{v:.1f}' for v in w))\n"
    "print('saved', flush=True)\n";


static void login(const char *user, const char *pw, char *cookie_hdr, size_t cl, char *csrf_hdr, size_t sl)
{
    ck_assert_int_eq(it_login(&srv, user, pw, cookie_hdr, cl, csrf_hdr, sl), 0);
}

static void setup(void)
{
    ck_assert_int_eq(it_admin_server_start(&srv, dir, sizeof(dir), "jobs", env, admin_cookie, sizeof(admin_cookie),
                                           admin_csrf, sizeof(admin_csrf)),
                     0);
    snprintf(data, sizeof(data), "%s/data", dir);   /* for the restart */
}

static void teardown(void)
{
    ck_assert_int_eq(it_server_stop(&srv), 0);
    ck_assert_int_eq(it_dir_remove(dir), 0);
}

static void make_user(it_user *u, const char *name, int64_t grant)
{
    ck_assert_int_eq(it_user_make(u, &srv, admin_cookie, admin_csrf, name, grant), 0);
}

static void admin_put(const char *path, const char *body)
{
    const char *ah[] = {admin_cookie, admin_csrf, NULL};
    it_resp r;
    it_request(&r, &srv, "PUT", path, body, ah);
    ck_assert_msg(r.status == 200, "PUT %s: %ld %s", path, r.status, r.body);
    it_resp_free(&r);
}

/* A project with train.py committed as a version; returns the version id. */
static void make_project(char *pid, size_t pl, char *vid, size_t vl, it_user *u, const char *src)
{
    it_resp r;
    char path[256];

    ck_assert_int_eq(it_project_make(pid, pl, &srv, u->hdrs, "mnist", "train.py", src), 0);
    snprintf(path, sizeof(path), "/api/v1/projects/%s/versions", pid);
    it_request(&r, &srv, "POST", path, "{\"message\":\"v1\"}", u->hdrs);
    ck_assert_int_eq(r.status, 201);
    snprintf(vid, vl, "%s", json_string_value(json_object_get(r.json, "id")));
    it_resp_free(&r);
}

static json_t *get_json(it_user *u, const char *path)
{
    json_t *j = it_get_json(&srv, u->hdrs, path);
    ck_assert_msg(j != NULL, "GET %s: not 200 with JSON", path);
    return j;
}

static int64_t jint(json_t *o, const char *k)
{
    return json_integer_value(json_object_get(o, k));
}

START_TEST(training_job_round_trip_logs_artifact_charge_and_verify)
{
    it_user u;
    char pid[64], vid[64], body[512], path[256], logs[16384] = "", last[32] = "0";
    const char *hdrs[5];
    it_resp r, r2;
    int64_t id, charged;
    json_t *j;
    bool ended = false;

    make_user(&u, "alice", 100000);
    /* cpu-basic at 100 mcoins a second, and no free CPU time for the free tier */
    admin_put("/api/v1/admin/resources/cpu-basic", "{\"price_mcoins_per_hour\": 360000}");
    admin_put("/api/v1/admin/tiers/free", "{\"free_ms_per_day\": {\"cpu-basic\": 0}}");
    make_project(pid, sizeof(pid), vid, sizeof(vid), &u, TRAIN_PY);
    /* the working tree changes after the version: the job runs the version */
    snprintf(path, sizeof(path), "/api/v1/projects/%s/files/train.py", pid);
    it_request(&r, &srv, "PUT", path, "raise SystemExit('not the version')\n", u.hdrs);
    it_resp_free(&r);

    snprintf(body, sizeof(body),
             "{\"project_id\":\"%s\",\"version\":\"%s\",\"entry\":\"train.py\",\"args\":[\"--epochs\",\"3\"],"
             "\"resource\":\"cpu-basic\",\"max_runtime_s\":120}", pid, vid);
    hdrs[0] = u.cookie, hdrs[1] = u.csrf, hdrs[2] = "Idempotency-Key: train-1", hdrs[3] = NULL;
    it_request(&r, &srv, "POST", "/api/v1/jobs", body, hdrs);
    ck_assert_msg(r.status == 201, "%ld %s", r.status, r.body);
    id = jint(r.json, "id");
    ck_assert_ptr_nonnull(json_object_get(r.json, "queue_position"));
    ck_assert_ptr_nonnull(json_object_get(r.json, "eta_s"));
    /* a retry with the same key is the same job */
    it_request(&r2, &srv, "POST", "/api/v1/jobs", body, hdrs);
    ck_assert_int_eq(r2.status, 201);
    ck_assert_int_eq(jint(r2.json, "id"), id);
    it_resp_free(&r);
    it_resp_free(&r2);

    /* follow the logs as Server-Sent Events, resuming with Last-Event-ID */
    for (int i = 0; i < 120 && !ended; i++) {
        char lh[64];
        snprintf(path, sizeof(path), "/api/v1/jobs/%lld/logs?follow=1", (long long)id);
        snprintf(lh, sizeof(lh), "Last-Event-ID: %s", last);
        hdrs[0] = u.cookie, hdrs[1] = lh, hdrs[2] = NULL;
        it_request(&r, &srv, "GET", path, NULL, hdrs);
        ck_assert_int_eq(r.status, 200);
        ck_assert_ptr_nonnull(strstr(it_resp_header(&r, "Content-Type"), "text/event-stream"));
        for (char *line = strtok(r.body, "\n"); line; line = strtok(NULL, "\n")) {
            if (strncmp(line, "id: ", 4) == 0)
                snprintf(last, sizeof(last), "%s", line + 4);
            else if (strncmp(line, "data: ", 6) == 0 && strlen(logs) + strlen(line) + 2 < sizeof(logs)) {
                strcat(logs, line + 6);
                strcat(logs, "\n");
            } else if (strcmp(line, "event: end") == 0)
                ended = true;
        }
        it_resp_free(&r);
    }
    ck_assert_msg(ended, "logs never ended: %s", logs);
    ck_assert_ptr_nonnull(strstr(logs, "framework: paddle"));
    ck_assert_ptr_nonnull(strstr(logs, "runner: "));
    ck_assert_ptr_nonnull(strstr(logs, "epoch 1 loss"));
    ck_assert_ptr_nonnull(strstr(logs, "epoch 3 loss"));
    ck_assert_ptr_nonnull(strstr(logs, "saved"));
    ck_assert_ptr_null(strstr(logs, "not the version"));
    /* plain text from an offset */
    snprintf(path, sizeof(path), "/api/v1/jobs/%lld/logs?offset=0", (long long)id);
    it_request(&r, &srv, "GET", path, NULL, u.hdrs);
    ck_assert_int_eq(r.status, 200);
    ck_assert_ptr_nonnull(strstr(r.body, "epoch 2 loss"));
    ck_assert_int_eq(atoll(it_resp_header(&r, "X-Log-Offset")), (long long)r.body_len);
    it_resp_free(&r);

    snprintf(path, sizeof(path), "/api/v1/jobs/%lld", (long long)id);
    j = get_json(&u, path);
    ck_assert_str_eq(json_string_value(json_object_get(j, "status")), "succeeded");
    ck_assert_int_eq(jint(j, "exit_code"), 0);
    ck_assert(json_is_null(json_object_get(j, "failure_reason")));
    charged = jint(j, "charged_mcoins");
    ck_assert_int_ge(charged, 200);          /* ran >= 2.4 s at 100 mcoins/s */
    json_decref(j);

    /* the artifact */
    snprintf(path, sizeof(path), "/api/v1/jobs/%lld/artifacts", (long long)id);
    j = get_json(&u, path);
    ck_assert_int_eq(json_array_size(json_object_get(j, "items")), 2);
    {
        bool have_txt = false, have_params = false;
        for (size_t i = 0; i < 2; i++) {
            const char *p = json_string_value(json_object_get(json_array_get(json_object_get(j, "items"), i), "path"));
            have_txt |= p && strcmp(p, "ckpt/model.txt") == 0;
            have_params |= p && strcmp(p, "ckpt/model.pdparams") == 0;
        }
        ck_assert_msg(have_txt && have_params, "artifacts: %s", json_dumps(j, 0));
    }
    json_decref(j);
    snprintf(path, sizeof(path), "/api/v1/jobs/%lld/artifacts/ckpt/model.txt", (long long)id);
    it_request(&r, &srv, "GET", path, NULL, u.hdrs);
    ck_assert_int_eq(r.status, 200);
    ck_assert_str_eq(r.body, "1.0 -2.0 0.5 3.0");
    it_resp_free(&r);
    snprintf(path, sizeof(path), "/api/v1/jobs/%lld/artifacts/../log", (long long)id);
    it_request(&r, &srv, "GET", path, NULL, u.hdrs);
    ck_assert_int_eq(r.status, 404);
    it_resp_free(&r);

    /* the charge in the ledger: balance = grant - charged, nothing held */
    j = get_json(&u, "/api/v1/quota");
    ck_assert_int_eq(jint(j, "balance_mcoins"), 100000 - charged);
    ck_assert_int_eq(jint(j, "held_mcoins"), 0);
    ck_assert_int_eq(jint(j, "burn_mcoins_per_hour"), 0);
    ck_assert(json_is_null(json_object_get(j, "ms_remaining")));
    ck_assert_int_eq(jint(j, "free_ms_left_today"), 28800000);
    json_decref(j);
    j = get_json(&u, "/api/v1/ledger");
    {
        int64_t charges = 0;
        json_t *items = json_object_get(j, "items");
        for (size_t i = 0; i < json_array_size(items); i++) {
            json_t *e = json_array_get(items, i);
            if (strcmp(json_string_value(json_object_get(e, "kind")), "grant") != 0)
                charges += jint(e, "amount_mcoins");
        }
        ck_assert_int_eq(charges, -charged);
    }
    json_decref(j);
    {
        it_user admin = {0};
        snprintf(admin.cookie, sizeof(admin.cookie), "%s", admin_cookie);
        admin.hdrs[0] = admin.cookie;
        j = get_json(&admin, "/api/v1/admin/ledger/verify");
        ck_assert(json_is_true(json_object_get(j, "ok")));
        json_decref(j);
        j = get_json(&admin, "/api/v1/admin/overview");
        ck_assert_int_ge(jint(j, "charged_today_mcoins"), charged);
        ck_assert_int_eq(jint(json_object_get(j, "jobs"), "running"), 0);
        ck_assert_int_ge(jint(j, "users"), 2);
        json_decref(j);
    }
}
END_TEST

START_TEST(resources_refusals_cancel_and_admin_only_editing)
{
    it_user u, v;
    char pid[64], vid[64], body[512], path[256];
    it_resp r;
    json_t *j;
    int64_t id;

    make_user(&u, "bob", 50000);
    make_user(&v, "carol", 0);
    make_project(pid, sizeof(pid), vid, sizeof(vid), &u, "import time\nprint('tick', flush=True)\ntime.sleep(60)\n");

    j = get_json(&u, "/api/v1/resources");
    ck_assert_int_eq(json_array_size(json_object_get(j, "items")), 3);
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(json_object_get(j, "items"), 0), "name")),
                     "cpu-basic");
    /* a CPU host: GPU classes have capacity 0 */
    ck_assert_int_eq(jint(json_array_get(json_object_get(j, "items"), 2), "capacity"), 0);
    json_decref(j);

    /* refusals, each with its status */
    snprintf(body, sizeof(body), "{\"project_id\":\"%s\",\"entry\":\"train.py\",\"resource\":\"gpu-v100-16g\"}", pid);
    it_request(&r, &srv, "POST", "/api/v1/jobs", body, u.hdrs);
    ck_assert_int_eq(r.status, 422);
    ck_assert_ptr_nonnull(strstr(r.body, "capacity 0"));
    it_resp_free(&r);
    snprintf(body, sizeof(body), "{\"project_id\":\"%s\",\"entry\":\"train.py\",\"resource\":\"gpu-a100-40g\"}", pid);
    it_request(&r, &srv, "POST", "/api/v1/jobs", body, u.hdrs);
    ck_assert_int_eq(r.status, 403);
    it_resp_free(&r);
    snprintf(body, sizeof(body), "{\"project_id\":\"%s\",\"entry\":\"missing.py\",\"resource\":\"cpu-basic\"}", pid);
    it_request(&r, &srv, "POST", "/api/v1/jobs", body, u.hdrs);
    ck_assert_int_eq(r.status, 422);
    it_resp_free(&r);
    snprintf(body, sizeof(body), "{\"project_id\":\"%s\",\"entry\":\"train.py\",\"resource\":\"cpu-basic\"}", pid);
    it_request(&r, &srv, "POST", "/api/v1/jobs", body, v.hdrs);   /* not carol's project */
    ck_assert_int_eq(r.status, 404);
    it_resp_free(&r);
    it_request(&r, &srv, "POST", "/api/v1/jobs", "{\"entry\": 5}", u.hdrs);
    ck_assert_int_eq(r.status, 400);
    it_resp_free(&r);
    it_request(&r, &srv, "PUT", "/api/v1/admin/resources/cpu-basic", "{\"price_mcoins_per_hour\": 1}", u.hdrs);
    ck_assert_int_eq(r.status, 403);
    it_resp_free(&r);
    it_request(&r, &srv, "PUT", "/api/v1/admin/tiers/free", "{\"max_kernels\": 9}", u.hdrs);
    ck_assert_int_eq(r.status, 403);
    it_resp_free(&r);

    /* admins edit tiers and classes; bad values change nothing */
    {
        const char *ah[] = {admin_cookie, admin_csrf, NULL};
        it_request(&r, &srv, "PUT", "/api/v1/admin/tiers/gold", "{\"max_kernels\": 2}", ah);
        ck_assert_int_eq(r.status, 404);
        it_resp_free(&r);
        it_request(&r, &srv, "PUT", "/api/v1/admin/tiers/free", "{\"weight\": 0}", ah);
        ck_assert_int_eq(r.status, 422);   /* out of range: 422 naming the field (test_ranges.c) */
        it_resp_free(&r);
        it_request(&r, &srv, "PUT", "/api/v1/admin/tiers/free",
                   "{\"max_kernels\": 2, \"free_ms_per_day\": {\"no-such-class\": 5}}", ah);
        ck_assert_int_eq(r.status, 404);
        it_resp_free(&r);
        it_request(&r, &srv, "PUT", "/api/v1/admin/tiers/free", "{\"max_kernels\": 2, \"allow_egress\": false}", ah);
        ck_assert_int_eq(r.status, 200);
        ck_assert_int_eq(jint(r.json, "max_kernels"), 2);
        it_resp_free(&r);
        /* the datasets storage limit: 0 (none) or at least 1 MiB */
        it_request(&r, &srv, "PUT", "/api/v1/admin/tiers/free", "{\"dataset_bytes\": 100}", ah);
        ck_assert_msg(r.status == 422 && strstr(r.body, "dataset_bytes"), "%ld %s", r.status, r.body);
        it_resp_free(&r);
        it_request(&r, &srv, "PUT", "/api/v1/admin/tiers/free", "{\"dataset_bytes\": 2097152}", ah);
        ck_assert_int_eq(r.status, 200);
        ck_assert_int_eq(jint(r.json, "dataset_bytes"), 2097152);
        it_resp_free(&r);
        it_request(&r, &srv, "PUT", "/api/v1/admin/resources/gpu-h100-80g",
                   "{\"cpus\": 16, \"memory_mb\": 65536, \"gpus\": 1, \"price_mcoins_per_hour\": 20000, "
                   "\"tiers\": [\"premium\"], \"capacity\": null}", ah);
        ck_assert_int_eq(r.status, 200);
        ck_assert_int_eq(jint(r.json, "gpus"), 1);
        it_resp_free(&r);
        it_request(&r, &srv, "PUT", "/api/v1/admin/resources/cpu-basic", "{\"price_mcoins_per_hour\": -5}", ah);
        ck_assert_int_eq(r.status, 422);
        it_resp_free(&r);
        it_request(&r, &srv, "PUT", "/api/v1/admin/resources/cpu-basic", "{\"tiers\": [\"gold\"]}", ah);
        ck_assert_int_eq(r.status, 400);
        it_resp_free(&r);
    }
    j = get_json(&u, "/api/v1/tiers");
    {
        json_t *items = json_object_get(j, "items");
        for (size_t i = 0; i < json_array_size(items); i++)
            if (strcmp(json_string_value(json_object_get(json_array_get(items, i), "name")), "free") == 0)
                ck_assert_int_eq(jint(json_array_get(items, i), "max_kernels"), 2);
    }
    json_decref(j);
    j = get_json(&u, "/api/v1/resources");
    ck_assert_int_eq(json_array_size(json_object_get(j, "items")), 4);
    ck_assert_int_eq(jint(json_array_get(json_object_get(j, "items"), 0), "price_mcoins_per_hour"), 100);
    json_decref(j);

    /* run, then cancel */
    it_request(&r, &srv, "POST", "/api/v1/jobs", body, u.hdrs);
    ck_assert_int_eq(r.status, 201);
    id = jint(r.json, "id");
    it_resp_free(&r);
    snprintf(path, sizeof(path), "/api/v1/jobs/%lld", (long long)id);
    it_request(&r, &srv, "GET", path, NULL, v.hdrs);     /* invisible to others */
    ck_assert_int_eq(r.status, 404);
    it_resp_free(&r);
    for (int i = 0; i < 100; i++) {
        j = get_json(&u, path);
        bool running = strcmp(json_string_value(json_object_get(j, "status")), "running") == 0;
        json_decref(j);
        if (running)
            break;
        usleep(100000);
    }
    it_request(&r, &srv, "DELETE", path, NULL, u.hdrs);
    ck_assert_int_eq(r.status, 200);
    it_resp_free(&r);
    for (int i = 0; i < 100; i++) {
        j = get_json(&u, path);
        bool done = strcmp(json_string_value(json_object_get(j, "status")), "cancelled") == 0;
        if (done)
            ck_assert_str_eq(json_string_value(json_object_get(j, "failure_reason")), "cancelled");
        json_decref(j);
        if (done)
            break;
        ck_assert_int_lt(i, 99);
        usleep(100000);
    }
    it_request(&r, &srv, "DELETE", path, NULL, u.hdrs);
    ck_assert_int_eq(r.status, 409);
    it_resp_free(&r);
    j = get_json(&u, "/api/v1/jobs");
    ck_assert_int_eq(json_array_size(json_object_get(j, "items")), 1);
    json_decref(j);
}
END_TEST

static int64_t db_int(const char *dbpath, const char *sql)
{
    sqlite3 *db;
    sqlite3_stmt *s;
    int64_t v = -1;

    ck_assert_int_eq(sqlite3_open_v2(dbpath, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    ck_assert_int_eq(sqlite3_prepare_v2(db, sql, -1, &s, NULL), SQLITE_OK);
    if (sqlite3_step(s) == SQLITE_ROW)
        v = sqlite3_column_int64(s, 0);
    sqlite3_finalize(s);
    sqlite3_close(db);
    return v;
}

START_TEST(kill_9_during_metering_then_restart_loses_and_doubles_nothing)
{
    it_user u;
    char pid[64], vid[64], body[512], path[256], dbpath[256], sql[512];
    it_resp r;
    json_t *j;
    int64_t id, charged = 0;
    int status;

    make_user(&u, "dave", 100000);
    admin_put("/api/v1/admin/resources/cpu-basic", "{\"price_mcoins_per_hour\": 360000}");
    admin_put("/api/v1/admin/tiers/free", "{\"free_ms_per_day\": {\"cpu-basic\": 0}}");
    make_project(pid, sizeof(pid), vid, sizeof(vid), &u,
                 "import time\nfor i in range(600):\n    print('step', i, flush=True)\n    time.sleep(0.1)\n");
    snprintf(body, sizeof(body), "{\"project_id\":\"%s\",\"entry\":\"train.py\",\"resource\":\"cpu-basic\"}", pid);
    it_request(&r, &srv, "POST", "/api/v1/jobs", body, u.hdrs);
    ck_assert_int_eq(r.status, 201);
    id = jint(r.json, "id");
    it_resp_free(&r);
    snprintf(path, sizeof(path), "/api/v1/jobs/%lld", (long long)id);
    for (int i = 0; i < 200 && charged < 300; i++) {
        j = get_json(&u, path);
        charged = jint(j, "charged_mcoins");
        json_decref(j);
        usleep(50000);
    }
    ck_assert_int_ge(charged, 300);                  /* metered at least 3 intervals */
    j = get_json(&u, "/api/v1/quota");
    ck_assert_int_eq(jint(j, "burn_mcoins_per_hour"), 360000);
    ck_assert(json_is_integer(json_object_get(j, "ms_remaining")));
    ck_assert_int_gt(jint(j, "held_mcoins"), 0);
    json_decref(j);

    /* kill -9 in the middle of metering */
    ck_assert_int_eq(kill(srv.pid, SIGKILL), 0);
    ck_assert_int_eq(waitpid(srv.pid, &status, 0), srv.pid);
    srv.keep_data = 1;
    ck_assert_int_eq(it_server_start_in(&srv, data, env), 0);
    login(u.name, u.pw, u.cookie, sizeof(u.cookie), u.csrf, sizeof(u.csrf));
    login(IT_ADMIN_USER, IT_ADMIN_PASSWORD, admin_cookie, sizeof(admin_cookie), admin_csrf, sizeof(admin_csrf));

    j = get_json(&u, path);
    ck_assert_str_eq(json_string_value(json_object_get(j, "status")), "failed");
    ck_assert_str_eq(json_string_value(json_object_get(j, "failure_reason")), "platform_error");
    ck_assert_int_eq(jint(j, "charged_mcoins"), 0);
    json_decref(j);
    j = get_json(&u, "/api/v1/quota");
    ck_assert_int_eq(jint(j, "balance_mcoins"), 100000);     /* refunded to the mcoin */
    ck_assert_int_eq(jint(j, "held_mcoins"), 0);
    json_decref(j);

    /* 0 lost, 0 doubled: every metered interval is one ledger charge, the
     * refund is their sum, and no hold is open */
    snprintf(dbpath, sizeof(dbpath), "%s/eddy.db", data);
    snprintf(sql, sizeof(sql), "SELECT COUNT(*) FROM quota_meter WHERE ref = 'job:%lld' AND mcoins > 0",
             (long long)id);
    int64_t intervals = db_int(dbpath, sql);
    snprintf(sql, sizeof(sql), "SELECT COUNT(*) FROM ledger_transfers WHERE idem_key LIKE 'meter:job:%lld:%%'",
             (long long)id);
    ck_assert_int_eq(db_int(dbpath, sql), intervals);
    ck_assert_int_ge(intervals, 3);
    snprintf(sql, sizeof(sql),
             "SELECT (SELECT IFNULL(SUM(e.amount_mcoins), 0) FROM ledger_entries e JOIN ledger_transfers t "
             " ON t.id = e.transfer_id JOIN ledger_accounts a ON a.id = e.account_id "
             " WHERE a.kind = 'system_revenue' AND t.ref = 'job:%lld') - "
             "(SELECT IFNULL(SUM(mcoins), 0) FROM quota_meter WHERE ref = 'job:%lld')", (long long)id, (long long)id);
    ck_assert_int_eq(db_int(dbpath, sql), 0);
    snprintf(sql, sizeof(sql),
             "SELECT COUNT(*) FROM ledger_transfers WHERE kind = 'refund' AND ref = 'job:%lld'", (long long)id);
    ck_assert_int_eq(db_int(dbpath, sql), 1);
    ck_assert_int_eq(db_int(dbpath, "SELECT COUNT(*) FROM ledger_holds WHERE status = 'open'"), 0);
    ck_assert_int_eq(db_int(dbpath, "SELECT COUNT(*) FROM quota_meter WHERE status = 'pending'"), 0);
    {
        it_user admin = {0};
        snprintf(admin.cookie, sizeof(admin.cookie), "%s", admin_cookie);
        admin.hdrs[0] = admin.cookie;
        j = get_json(&admin, "/api/v1/admin/ledger/verify");
        ck_assert(json_is_true(json_object_get(j, "ok")));
        json_decref(j);
    }
    /* the log says what happened */
    snprintf(path, sizeof(path), "/api/v1/jobs/%lld/logs", (long long)id);
    it_request(&r, &srv, "GET", path, NULL, u.hdrs);
    ck_assert_ptr_nonnull(strstr(r.body, "platform_error"));
    it_resp_free(&r);
    srv.keep_data = 0;
}
END_TEST

int main(void)
{
    const TTest *tests[] = {training_job_round_trip_logs_artifact_charge_and_verify,
                            resources_refusals_cancel_and_admin_only_editing,
                            kill_9_during_metering_then_restart_loses_and_doubles_nothing, NULL};
    return it_tests_run("jobs", 180, setup, teardown, tests);
}
