/*
 * test_job_ranks.c - a job of several ranks on the local executor, end to
 * end: the real server, the real sandbox, the build's paddle package.
 *
 * A job with `ranks: 2` trains a small MLP with paddle.distributed's
 * DataParallel (each rank half of every batch): it succeeds, every line of
 * the log carries its rank and no two ranks' lines are mixed, and its
 * parameters equal those of the same script run as one process on the
 * whole batches (a `ranks: 1` job) within 1e-5. Both are metered per
 * allocated slot: the ledger charges the 2-rank job twice the class's price
 * for the time it ran (from the meter's own rows, no timing assumed). A job
 * whose rank 1 exits 3 fails `user_error` with exit code 3, the log names
 * the rank, and rank 0 is stopped.
 *
 * Jobs need the sandbox, which needs root here: skips (77) otherwise.
 */
#include "harness.h"
#include "it_db.h"

#include <check.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static it_server srv;
static char dir[64], admin_cookie[512], admin_csrf[256];
static const char *const env[] = {"EDDY_METER_INTERVAL_MS=1000", "EDDY_OOF_GRACE_MS=1000",
                                  "EDDY_STOP_GRACE_MS=1000", NULL};

#define NPARAMS (6 * 16 + 16 + 16 * 3 + 3)

/* One program for every case: PADDLE_TRAINERS_NUM (set by the ranks'
 * supervisor) says how many ranks share each batch. "fail" makes rank 1
 * exit 3 after the ranks met. */
static const char TRAIN_PY[] =
    "import os, sys, time\n"
    "import numpy as np\n"
    "import paddle\n"
    "import paddle.distributed as dist\n"
    "import paddle.nn as nn\n"
    "import paddle.nn.functional as F\n"
    "n = int(os.environ.get('PADDLE_TRAINERS_NUM', '1'))\n"
    "if n > 1:\n"
    "    dist.init_parallel_env()\n"
    "rank = dist.get_rank() if n > 1 else 0\n"
    "print('rank', rank, 'of', n, 'endpoint', os.environ.get('PADDLE_CURRENT_ENDPOINT', '-'), flush=True)\n"
    "if 'fail' in sys.argv and rank == 1:\n"
    "    print('rank 1 gives up', flush=True)\n"
    "    sys.exit(3)\n"
    "# many lines in large writes from both ranks at once: the log keeps them apart\n"
    "sys.stdout.write(''.join('line rank=%d i=%d %s end\\n' % (rank, i, 'x' * 120) for i in range(300)))\n"
    "sys.stdout.flush()\n"
    "paddle.seed(7)\n"
    "net = nn.Sequential(nn.Linear(6, 16), nn.Tanh(), nn.Linear(16, 3))\n"
    "model = paddle.DataParallel(net) if n > 1 else net\n"
    "opt = paddle.optimizer.Momentum(learning_rate=0.1, momentum=0.9, parameters=model.parameters())\n"
    "B = 8\n"
    "for step in range(6):\n"
    "    rs = np.random.RandomState(100 + step)\n"
    "    x = rs.randn(B, 6).astype('float32')\n"
    "    y = rs.randint(0, 3, size=(B,)).astype('int64')\n"
    "    b = B // n\n"
    "    x, y = x[rank * b:(rank + 1) * b], y[rank * b:(rank + 1) * b]\n"
    "    loss = F.cross_entropy(model(paddle.to_tensor(x)), paddle.to_tensor(y))\n"
    "    loss.backward()\n"
    "    opt.step()\n"
    "    opt.clear_grad()\n"
    "    if 'fail' in sys.argv:\n"
    "        time.sleep(1)\n"
    "flat = np.concatenate([p.numpy().ravel() for p in net.parameters()])\n"
    "print('CHECKSUM %.7f' % float(flat.astype('float64').sum()), flush=True)\n"
    "if rank == 0:\n"
    "    print('PARAMS ' + ' '.join('%.9e' % v for v in flat), flush=True)\n"
    "time.sleep(1.5)   # metered for more than one interval\n"
    "print('done rank', rank, flush=True)\n";

static void setup(void)
{
    const char *ah[] = {admin_cookie, admin_csrf, NULL};

    ck_assert_int_eq(it_admin_server_start(&srv, dir, sizeof(dir), "ranks", env, admin_cookie, sizeof(admin_cookie),
                                           admin_csrf, sizeof(admin_csrf)),
                     0);
    /* paid time, 100 mcoins a second per slot, no free allowance: the
     * charge per rank shows */
    ck_assert_int_eq(it_request_status(&srv, "PUT", "/api/v1/admin/resources/cpu-basic",
                                       "{\"cpus\": 1, \"memory_mb\": 1024, \"price_mcoins_per_hour\": 360000}", ah),
                     200);
    ck_assert_int_eq(it_request_status(&srv, "PUT", "/api/v1/admin/tiers/free",
                                       "{\"free_ms_per_day\": {\"cpu-basic\": 0}}", ah),
                     200);
}

static void teardown(void)
{
    ck_assert_int_eq(it_server_stop(&srv), 0);
    ck_assert_int_eq(it_dir_remove(dir), 0);
}

static int64_t submit(it_user *u, const char *pid, const char *more)
{
    int64_t id = 0;
    char code[64];
    long st = it_job_submit(&id, code, sizeof(code), &srv, u->hdrs, pid, NULL, "train.py", 300, more);

    ck_assert_msg(st == 201, "submit %s: %ld %s", more, st, code);
    return id;
}

/* The job's log (plain text), malloc'd. */
static char *job_log(it_user *u, int64_t id)
{
    char path[80];
    it_resp r;
    char *s;

    snprintf(path, sizeof(path), "/api/v1/jobs/%lld/logs?offset=0", (long long)id);
    it_request(&r, &srv, "GET", path, NULL, u->hdrs);
    ck_assert_int_eq(r.status, 200);
    s = strdup(r.body ? r.body : "");
    it_resp_free(&r);
    ck_assert_ptr_nonnull(s);
    return s;
}

/* The numbers after "PARAMS " in the log. */
static void params_of(double *v, const char *log)
{
    const char *p = strstr(log, "PARAMS ");
    char *end;

    ck_assert_msg(p != NULL, "no PARAMS line:\n%s", log);
    p += 7;
    for (int i = 0; i < NPARAMS; i++) {
        v[i] = strtod(p, &end);
        ck_assert_msg(end != p, "PARAMS: value %d missing", i);
        p = end;
    }
}

/* What the meter recorded for job `id`: paid ms and mcoins, summed. */
static void metered(long long *paid_ms, long long *mcoins, int64_t id)
{
    *paid_ms = it_db_int(&srv, "SELECT IFNULL(SUM(paid_ms), 0) FROM quota_meter WHERE ref = 'job:%lld'", (long long)id);
    *mcoins = it_db_int(&srv, "SELECT IFNULL(SUM(mcoins), 0) FROM quota_meter WHERE ref = 'job:%lld'", (long long)id);
}

START_TEST(two_ranks_train_like_one_process_with_logs_apart_and_every_slot_charged)
{
    it_user u;
    char pid[64];
    double dp[NPARAMS], one[NPARAMS], worst = 0;
    int64_t id2, id1;
    json_t *j2, *j1;
    char *log2, *log1, *line, *save = NULL;
    int lines[2] = {0, 0};
    char tail[130] = " ";
    long long paid2, mc2, paid1, mc1;

    ck_assert_int_eq(it_user_make(&u, &srv, admin_cookie, admin_csrf, "alice", 1000000), 0);
    ck_assert_int_eq(it_project_make(pid, sizeof(pid), &srv, u.hdrs, "dp", "train.py", TRAIN_PY), 0);
    id2 = submit(&u, pid, "{\"ranks\": 2}");
    id1 = submit(&u, pid, "{\"ranks\": 1}");
    j2 = it_job_wait(&srv, u.hdrs, id2, NULL, 180);
    j1 = it_job_wait(&srv, u.hdrs, id1, NULL, 180);
    ck_assert_ptr_nonnull(j2);
    ck_assert_ptr_nonnull(j1);
    log2 = job_log(&u, id2);
    log1 = job_log(&u, id1);
    ck_assert_msg(strcmp(it_json_str(j2, "status"), "succeeded") == 0, "2 ranks: %s %s\n%s", it_json_str(j2, "status"),
                  it_json_str(j2, "failure_reason"), log2);
    ck_assert_msg(strcmp(it_json_str(j1, "status"), "succeeded") == 0, "1 rank: %s %s\n%s", it_json_str(j1, "status"),
                  it_json_str(j1, "failure_reason"), log1);
    ck_assert_int_eq(json_integer_value(json_object_get(j2, "ranks")), 2);
    ck_assert_str_eq(it_json_str(j2, "executor"), "local");

    /* the same parameters as one process on the whole batches */
    params_of(dp, log2);
    params_of(one, log1);
    for (int i = 0; i < NPARAMS; i++)
        if (fabs(dp[i] - one[i]) > worst)
            worst = fabs(dp[i] - one[i]);
    ck_assert_msg(worst <= 1e-5, "2 ranks vs 1 process: max |diff| %g", worst);
    ck_assert_msg(strstr(log2, "[rank 0] PARAMS ") != NULL, "%s", log2);

    memset(tail + 1, 'x', 120);
    snprintf(tail + 121, sizeof(tail) - 121, " end");
    /* every line a rank printed carries its rank, whole: "[rank R] line rank=R i=K x... end" */
    ck_assert_msg(strstr(log2, "[rank 0] rank 0 of 2 endpoint 127.0.0.1:") &&
                      strstr(log2, "[rank 1] rank 1 of 2 endpoint 127.0.0.1:"),
                  "%s", log2);
    for (line = strtok_r(log2, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        int r, r2, i;
        const char *body = strstr(line, "line rank=");
        if (body == NULL)
            continue;
        ck_assert_msg(sscanf(line, "[rank %d] line rank=%d i=%d ", &r, &r2, &i) == 3, "mixed line: %s", line);
        ck_assert_msg(r == r2 && (r == 0 || r == 1), "a line of rank %d marked rank %d: %s", r2, r, line);
        ck_assert_msg(strlen(line) > strlen(tail) && strcmp(line + strlen(line) - strlen(tail), tail) == 0 &&
                          line[strlen(line) - strlen(tail) - 1] >= '0' && line[strlen(line) - strlen(tail) - 1] <= '9',
                      "a broken line: %s", line);
        lines[r]++;
    }
    ck_assert_int_eq(lines[0], 300);
    ck_assert_int_eq(lines[1], 300);

    /* charged per allocated slot: the meter's own rows say what time it
     * charged; the 2-rank job pays 2 x 100 mcoins/s of it, the 1-rank 1 x */
    metered(&paid2, &mc2, id2);
    metered(&paid1, &mc1, id1);
    ck_assert_int_gt(paid2, 1000);
    ck_assert_int_gt(paid1, 1000);
    ck_assert_msg(llabs(mc2 - paid2 * 200 / 1000) <= 1, "2 ranks: %lld mcoins for %lld ms", mc2, paid2);
    ck_assert_msg(llabs(mc1 - paid1 * 100 / 1000) <= 1, "1 rank: %lld mcoins for %lld ms", mc1, paid1);
    ck_assert_int_eq(json_integer_value(json_object_get(j2, "charged_mcoins")), mc2);
    ck_assert_int_eq(json_integer_value(json_object_get(j1, "charged_mcoins")), mc1);
    free(log2);
    free(log1);
    json_decref(j2);
    json_decref(j1);
}
END_TEST

START_TEST(a_failing_rank_fails_the_job_naming_the_rank)
{
    it_user u;
    char pid[64];
    int64_t id;
    json_t *j;
    char *log;

    ck_assert_int_eq(it_user_make(&u, &srv, admin_cookie, admin_csrf, "bob", 1000000), 0);
    ck_assert_int_eq(it_project_make(pid, sizeof(pid), &srv, u.hdrs, "dp", "train.py", TRAIN_PY), 0);
    id = submit(&u, pid, "{\"ranks\": 2, \"args\": [\"fail\"]}");
    j = it_job_wait(&srv, u.hdrs, id, NULL, 180);
    ck_assert_ptr_nonnull(j);
    log = job_log(&u, id);
    ck_assert_msg(strcmp(it_json_str(j, "status"), "failed") == 0, "%s\n%s", it_json_str(j, "status"), log);
    ck_assert_str_eq(it_json_str(j, "failure_reason"), "user_error");
    ck_assert_int_eq(json_integer_value(json_object_get(j, "exit_code")), 3);
    ck_assert_msg(strstr(log, "[rank 1] rank 1 gives up") && strstr(log, "[eddy] rank 1 exited with status 3"),
                  "%s", log);
    /* rank 0 was stopped: it never finished */
    ck_assert_msg(strstr(log, "done rank 0") == NULL, "%s", log);
    ck_assert_int_gt(json_integer_value(json_object_get(j, "charged_mcoins")), 0);
    free(log);
    json_decref(j);
}
END_TEST

int main(void)
{
    const TTest *tests[] = {two_ranks_train_like_one_process_with_logs_apart_and_every_slot_charged,
                            a_failing_rank_fails_the_job_naming_the_rank, NULL};

    if (geteuid() != 0) {
        printf("SKIP: jobs run in the sandbox, which needs root on this host\n");
        return 77;
    }
    return it_tests_run("job_ranks", 280, setup, teardown, tests);
}
