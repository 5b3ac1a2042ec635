/* Unit tests for the scheduler service over a real store and the real
 * sandbox: submit validation and tier limits, the persistent queue, queue
 * positions, a job's run to completion, metering and out of funds, timeouts,
 * preemption with requeue, cancel, and reconciliation after a crash. The
 * scheduler thread is off: each test drives sched_tick itself. */
#include "sched.h"
#include "sched_int.h"
#include "quota.h"

#include "ed_crypto.h"
#include "ed_error.h"
#include "ed_store.h"
#include "ed_time.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ledger_fixture.h"
#include "../support/unit_util.h"

static sched *s;
static sched_config cfg;

/* Budgets of the test's API keys (what the accounts module's acct_key_budget answers):
 * key 7 has 2500 mcoins a day, key 9 what key9_budget says, others none. */
static int64_t key9_budget;

static int test_key_budget(int64_t *out, int64_t key_id, void *arg)
{
    (void)arg;
    *out = key_id == 7 ? 2500 : key_id == 9 ? key9_budget : -1;
    return 0;
}

static void open_sched(void)
{
    ck_assert_msg(sched_open(&s, st, &cfg) == 0, "%s", ed_error_last());
}

static void setup(void)
{
    ledger_setup();
    ck_assert_int_eq(sched_config_defaults(&cfg, fixture_dir), 0);
    cfg.start_thread = false;
    cfg.meter_interval_ms = 1000;
    cfg.oof_grace_ms = 1000;
    cfg.stop_grace_ms = 1000;
    cfg.sim_gpus = 2;
    snprintf(cfg.slot_dir, sizeof(cfg.slot_dir), "/run/eddy-sandbox");   /* shared locks: uids stay distinct */
    snprintf(cfg.kernel_bin, sizeof(cfg.kernel_bin), "/nonexistent/eddy-kernel");   /* python3 runs .py */
    cfg.key_budget = test_key_budget;
    key9_budget = -1;
    open_sched();
}

static void teardown(void)
{
    sched_close(s);
    s = NULL;
    ledger_teardown();
}

static const char *script_src;

static int write_script(const char *work, void *payload)
{
    char path[800];
    FILE *f;

    snprintf(path, sizeof(path), "%s/%s", work, (const char *)payload);
    if ((f = fopen(path, "w")) == NULL)
        return ed_error_set(ED_EIO, "write %s", path);
    fputs(script_src, f);
    fclose(f);
    return 0;
}

static int fail_prepare(const char *work, void *payload)
{
    return ed_error_set(ED_ENOTFOUND, "version deadbeef not found");
}

static sched_job_spec spec(int64_t user, const char *tier, const char *resource, const char *src)
{
    sched_job_spec sp = {.user_id = user, .tier = tier, .project_id = "p1", .entry = "train.py",
                         .resource = resource, .max_runtime_ms = 60000, .prepare = write_script,
                         .payload = (void *)"train.py"};
    script_src = src;
    return sp;
}

/* tick until the job leaves queued/running, at most `ms` */
static void run_until_done(sched_job_info *j, int64_t id, int64_t ms)
{
    int64_t end = ed_now_ms() + ms;
    do {
        ck_assert_int_eq(sched_tick(s), 0);
        ck_assert_int_eq(sched_job_get(j, s, 0, id), 0);
        if (strcmp(j->status, "queued") != 0 && strcmp(j->status, "running") != 0)
            return;
        usleep(20000);
    } while (ed_now_ms() < end);
    ck_abort_msg("job %lld still %s after %lld ms", (long long)id, j->status, (long long)ms);
}

static void wait_status(sched_job_info *j, int64_t id, const char *status, int64_t ms)
{
    int64_t end = ed_now_ms() + ms;
    do {
        ck_assert_int_eq(sched_tick(s), 0);
        ck_assert_int_eq(sched_job_get(j, s, 0, id), 0);
        if (strcmp(j->status, status) == 0)
            return;
        usleep(20000);
    } while (ed_now_ms() < end);
    ck_abort_msg("job %lld is %s, not %s", (long long)id, j->status, status);
}

static int64_t scalar(const char *sql)
{
    return unit_store_int(st, sql);
}

static char *read_log(int64_t id)
{
    static char buf[8192];
    char path[200];
    FILE *f;
    size_t n;

    snprintf(path, sizeof(path), "%s/jobs/%lld/log", fixture_dir, (long long)id);
    buf[0] = '\0';
    if ((f = fopen(path, "r")) == NULL)
        return buf;
    n = fread(buf, 1, sizeof(buf) - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

START_TEST(submit_enforces_tier_limits)
{
    int64_t u = add_user("ann", "free");
    sched_job_info j;
    sched_job_spec sp;

    ck_assert_int_eq(quota_grant(NULL, st, u, 1000000, "w", "g", 0), 0);
    sp = spec(u, "free", "gpu-a100-40g", "print(1)\n");       /* pro and premium only */
    ck_assert_int_eq(sched_job_submit(&j, s, &sp), ED_EPERM);
    sp = spec(u, "free", "gpu-v100-16g", "print(1)\n");
    sp.gpus = 2;                                              /* free: 1 GPU per job */
    ck_assert_int_eq(sched_job_submit(&j, s, &sp), ED_EPERM);
    ck_assert_ptr_nonnull(strstr(ed_error_last(), "allows 1 to 1"));
    sp.gpus = 1;
    sp.max_runtime_ms = 100LL * 86400000;                     /* over the max session */
    ck_assert_int_eq(sched_job_submit(&j, s, &sp), ED_EPERM);
    sp = spec(u, "free", "cpu-basic", "print(1)\n");
    sp.gpus = 1;
    ck_assert_int_eq(sched_job_submit(&j, s, &sp), ED_EINVAL);
    sp = spec(u, "free", "nope", "print(1)\n");
    ck_assert_int_eq(sched_job_submit(&j, s, &sp), ED_ENOTFOUND);
    sp = spec(u, "free", "cpu-basic", "print(1)\n");
    sp.entry = "../etc/passwd.py";
    ck_assert_int_eq(sched_job_submit(&j, s, &sp), ED_EINVAL);
    sp.entry = "run.sh";
    ck_assert_int_eq(sched_job_submit(&j, s, &sp), ED_EINVAL);
    sp.entry = "nb.ipynb";                                    /* no eddy-kernel here */
    ck_assert_int_eq(sched_job_submit(&j, s, &sp), ED_EUNPROC);
    sp = spec(u, "free", "cpu-basic", "print(1)\n");
    sp.args_json = "[1, 2]";
    ck_assert_int_eq(sched_job_submit(&j, s, &sp), ED_EINVAL);
    sp = spec(u, "free", "cpu-basic", "print(1)\n");
    sp.prepare = fail_prepare;
    ck_assert_int_eq(sched_job_submit(&j, s, &sp), ED_ENOTFOUND);
    /* nothing half-made is left */
    ck_assert_int_eq(scalar("SELECT COUNT(*) FROM jobs"), 0);
}
END_TEST

START_TEST(gpu_class_without_devices_is_refused_with_numbers)
{
    int64_t u = add_user("bo", "pro");
    sched_job_info j;
    sched_job_spec sp;

    sched_close(s);
    cfg.sim_gpus = 0;
    open_sched();
    ck_assert_int_eq(quota_grant(NULL, st, u, 1000000, "w", "g", 0), 0);
    sp = spec(u, "pro", "gpu-v100-16g", "print(1)\n");
    ck_assert_int_eq(sched_job_submit(&j, s, &sp), ED_EUNPROC);
    ck_assert_ptr_nonnull(strstr(ed_error_last(), "capacity 0"));
}
END_TEST

START_TEST(submit_without_funds_or_allowance_is_quota_error)
{
    int64_t u = add_user("cy", "free");
    sched_job_info j;
    sched_job_spec sp = spec(u, "free", "cpu-basic", "print(1)\n");

    ck_assert_int_eq(sched_allowance_set(s, "free", "cpu-basic", 0), 0);
    ck_assert_int_eq(sched_job_submit(&j, s, &sp), ED_EQUOTA);
    ck_assert_ptr_nonnull(strstr(ed_error_last(), "insufficient funds"));
    /* with the allowance back it is accepted */
    ck_assert_int_eq(sched_allowance_set(s, "free", "cpu-basic", -1), 0);
    ck_assert_int_eq(sched_job_submit(&j, s, &sp), 0);
    ck_assert_str_eq(j.status, "queued");
}
END_TEST

START_TEST(idempotency_key_returns_the_first_job)
{
    int64_t u = add_user("di", "free");
    sched_job_info a, b;
    sched_job_spec sp = spec(u, "free", "cpu-basic", "print(1)\n");

    sp.idem_key = "job-1";
    ck_assert_int_eq(sched_job_submit(&a, s, &sp), 0);
    ck_assert_int_eq(sched_job_submit(&b, s, &sp), 0);
    ck_assert_int_eq(a.id, b.id);
    sp.entry = "other.py";                 /* same key, another job */
    ck_assert_int_eq(sched_job_submit(&b, s, &sp), ED_ECONFLICT);
    ck_assert_int_eq(scalar("SELECT COUNT(*) FROM jobs"), 1);
}
END_TEST

START_TEST(queue_positions_etas_and_persistence_across_restart)
{
    int64_t u1 = add_user("e1", "premium"), u2 = add_user("e2", "premium"), u3 = add_user("e3", "premium");
    sched_job_info a, b, c;
    sched_job_spec sp;
    sched_resource r = {0};

    snprintf(r.name, sizeof(r.name), "cpu-basic");
    r.cpus = r.memory_mb = -1;
    r.price_mcoins_per_hour = -1;
    r.configured_capacity = 1;
    ck_assert_int_eq(sched_resource_put(NULL, s, &r), 0);
    /* no tick runs, so nothing starts: positions 1, 2, 3 with ETAs 0, a's
     * runtime, a's + b's */
    sp = spec(u1, "premium", "cpu-basic", "print(1)\n");
    sp.max_runtime_ms = 600000;
    ck_assert_int_eq(sched_job_submit(&a, s, &sp), 0);
    sp = spec(u2, "premium", "cpu-basic", "print(1)\n");
    sp.max_runtime_ms = 300000;
    ck_assert_int_eq(sched_job_submit(&b, s, &sp), 0);
    /* restart before anything ran: the queue is still there */
    sched_close(s);
    open_sched();
    sp = spec(u3, "premium", "cpu-basic", "print(1)\n");
    ck_assert_int_eq(sched_job_submit(&c, s, &sp), 0);
    ck_assert_int_eq(sched_job_get(&a, s, u1, a.id), 0);
    ck_assert_int_eq(sched_job_get(&b, s, u2, b.id), 0);
    ck_assert_str_eq(a.status, "queued");
    ck_assert_int_eq(a.queue_position, 1);
    ck_assert_int_eq(a.eta_ms, 0);
    ck_assert_int_eq(b.queue_position, 2);
    ck_assert_int_eq(b.eta_ms, 600000);
    ck_assert_int_eq(c.queue_position, 3);
    ck_assert_int_eq(c.eta_ms, 900000);
    /* another user cannot see it */
    ck_assert_int_eq(sched_job_get(&a, s, u2, a.id), ED_ENOTFOUND);
}
END_TEST

START_TEST(job_runs_to_success_with_logs_usage_and_charge)
{
    int64_t u = add_user("fa", "free");
    sched_job_info j;
    sched_job_spec sp = spec(u, "free", "cpu-basic",
                             "import sys, os\n"
                             "print('hello from', os.getcwd(), sys.argv[1:])\n"
                             "open(os.environ['EDDY_OUTPUT_DIR'] + '/model.txt', 'w').write('w=1')\n");
    char path[200];

    ck_assert_int_eq(quota_grant(NULL, st, u, 100000, "w", "g", 0), 0);
    ck_assert_int_eq(sched_allowance_set(s, "free", "cpu-basic", 0), 0);
    sp.args_json = "[\"--epochs\", \"2\"]";
    ck_assert_int_eq(sched_job_submit(&j, s, &sp), 0);
    run_until_done(&j, j.id, 30000);
    ck_assert_str_eq(j.status, "succeeded");
    ck_assert(j.has_exit_code);
    ck_assert_int_eq(j.exit_code, 0);
    ck_assert_str_eq(j.failure_reason, "");
    ck_assert_ptr_nonnull(strstr(read_log(j.id), "hello from /home/aistudio/work ['--epochs', '2']"));
    snprintf(path, sizeof(path), "%s/jobs/%lld/output/model.txt", fixture_dir, (long long)j.id);
    ck_assert_int_eq(access(path, F_OK), 0);
    /* a short job still pays its partial interval at 100 mcoins/h */
    ck_assert_int_eq(j.charged_mcoins, scalar("SELECT -IFNULL(SUM(e.amount_mcoins), 0) FROM ledger_entries e "
                                              "JOIN ledger_transfers t ON t.id = e.transfer_id JOIN ledger_accounts a "
                                              "ON a.id = e.account_id WHERE a.kind = 'user_coins' AND t.kind = 'charge'"));
    ck_assert_int_eq(scalar("SELECT COUNT(*) FROM ledger_holds WHERE status = 'open'"), 0);
    assert_verified();
}
END_TEST

START_TEST(failing_script_is_user_error_with_exit_code)
{
    int64_t u = add_user("ga", "free");
    sched_job_info j;
    sched_job_spec sp = spec(u, "free", "cpu-basic", "import sys\nprint('boom', file=sys.stderr)\nsys.exit(3)\n");

    ck_assert_int_eq(sched_job_submit(&j, s, &sp), 0);
    run_until_done(&j, j.id, 30000);
    ck_assert_str_eq(j.status, "failed");
    ck_assert_str_eq(j.failure_reason, "user_error");
    ck_assert_int_eq(j.exit_code, 3);
    ck_assert_ptr_nonnull(strstr(read_log(j.id), "boom"));
}
END_TEST

START_TEST(max_runtime_stops_the_job_as_timeout)
{
    int64_t u = add_user("ha", "free");
    sched_job_info j;
    sched_job_spec sp = spec(u, "free", "cpu-basic", "import time\ntime.sleep(60)\n");

    sp.max_runtime_ms = 1000;
    ck_assert_int_eq(sched_job_submit(&j, s, &sp), 0);
    run_until_done(&j, j.id, 30000);
    ck_assert_str_eq(j.status, "failed");
    ck_assert_str_eq(j.failure_reason, "timeout");
}
END_TEST

START_TEST(out_of_funds_warns_then_stops_and_settles)
{
    int64_t u = add_user("ia", "free"), coins0;
    sched_job_info j;
    sched_job_spec sp = spec(u, "free", "cpu-basic", "import time\nprint('working', flush=True)\ntime.sleep(60)\n");
    sched_resource r = {0};
    quota_balance b;

    /* 3,600,000 mcoins/h = 1000 a second; the hold (2 s + 1 s grace) takes 3000 */
    snprintf(r.name, sizeof(r.name), "cpu-basic");
    r.cpus = r.memory_mb = -1;
    r.configured_capacity = -2;
    r.price_mcoins_per_hour = 3600000;
    ck_assert_int_eq(sched_resource_put(NULL, s, &r), 0);
    ck_assert_int_eq(sched_allowance_set(s, "free", "cpu-basic", 0), 0);
    ck_assert_int_eq(quota_grant(NULL, st, u, 4500, "w", "g", 0), 0);
    ck_assert_int_eq(sched_job_submit(&j, s, &sp), 0);
    run_until_done(&j, j.id, 60000);
    ck_assert_str_eq(j.status, "failed");
    ck_assert_str_eq(j.failure_reason, "out_of_funds");
    ck_assert_ptr_nonnull(strstr(read_log(j.id), "out of funds"));
    ck_assert_int_eq(quota_balance_get(&b, st, u), 0);
    coins0 = b.coins_mcoins;
    ck_assert_int_ge(coins0, 0);
    ck_assert_int_eq(b.held_mcoins, 0);
    ck_assert_int_eq(j.charged_mcoins, 4500 - coins0);
    ck_assert_int_eq(scalar("SELECT COUNT(*) FROM ledger_holds WHERE status = 'open'"), 0);
    assert_verified();
}
END_TEST

START_TEST(tier_cap_keeps_second_job_queued)
{
    int64_t u = add_user("ja", "free");   /* free: 1 concurrent */
    sched_job_info a, b;
    sched_job_spec sp = spec(u, "free", "cpu-basic", "import time\ntime.sleep(60)\n");

    ck_assert_int_eq(sched_job_submit(&a, s, &sp), 0);
    ck_assert_int_eq(sched_job_submit(&b, s, &sp), 0);
    wait_status(&a, a.id, "running", 10000);
    ck_assert_int_eq(sched_tick(s), 0);
    ck_assert_int_eq(sched_job_get(&b, s, u, b.id), 0);
    ck_assert_str_eq(b.status, "queued");
    ck_assert_int_eq(sched_job_cancel(&a, s, u, a.id), 0);
    wait_status(&a, a.id, "cancelled", 10000);
    ck_assert_str_eq(a.failure_reason, "cancelled");
    wait_status(&b, b.id, "running", 10000);
    ck_assert_int_eq(sched_job_cancel(&b, s, u, b.id), 0);
    wait_status(&b, b.id, "cancelled", 10000);
    ck_assert_int_eq(sched_job_cancel(&b, s, u, b.id), ED_ECONFLICT);
}
END_TEST

START_TEST(higher_tier_preempts_batch_gpu_job_which_is_requeued)
{
    int64_t lo = add_user("ka", "free"), hi = add_user("kb", "premium");
    sched_job_info a, b;
    sched_job_spec sp;

    ck_assert_int_eq(quota_grant(NULL, st, lo, 1000000, "w", "g", 0), 0);
    ck_assert_int_eq(quota_grant(NULL, st, hi, 1000000, "w", "g2", 0), 0);
    sp = spec(lo, "free", "gpu-v100-16g", "import os, time\nprint(os.environ['FLAGS_selected_gpus'], flush=True)\ntime.sleep(60)\n");
    sp.requeue = true;
    ck_assert_int_eq(sched_job_submit(&a, s, &sp), 0);
    wait_status(&a, a.id, "running", 10000);
    /* premium wants both simulated GPUs: the free job is preempted */
    sp = spec(hi, "premium", "gpu-v100-16g",
              "import os\nprint(os.environ['PADDLE_TRAINER_ID'], os.environ['PADDLE_TRAINERS_NUM'], "
              "os.environ['FLAGS_selected_gpus'], os.environ['PADDLE_CURRENT_ENDPOINT'], "
              "os.environ['PADDLE_TRAINER_ENDPOINTS'], flush=True)\n");
    sp.gpus = 2;
    ck_assert_int_eq(sched_job_submit(&b, s, &sp), 0);
    run_until_done(&b, b.id, 30000);
    ck_assert_str_eq(b.status, "succeeded");
    ck_assert_msg(strstr(read_log(b.id), "0 2 0 127.0.0.1:6170 127.0.0.1:6170,127.0.0.1:6171") != NULL,
                  "rank 0 missing from the log:\n%s", read_log(b.id));
    ck_assert_msg(strstr(read_log(b.id), "1 2 1 127.0.0.1:6171 127.0.0.1:6170,127.0.0.1:6171") != NULL,
                  "rank 1 missing from the log:\n%s", read_log(b.id));
    /* the preempted job went back to the queue and runs again */
    wait_status(&a, a.id, "running", 10000);
    ck_assert_int_eq(a.attempt, 2);
    ck_assert_ptr_nonnull(strstr(read_log(a.id), "preempted"));
    ck_assert_int_eq(sched_job_cancel(&a, s, lo, a.id), 0);
    wait_status(&a, a.id, "cancelled", 10000);
    ck_assert_int_eq(scalar("SELECT COUNT(*) FROM ledger_holds WHERE status = 'open'"), 0);
    assert_verified();
}
END_TEST

START_TEST(restart_fails_running_work_with_platform_error_and_refunds)
{
    int64_t u = add_user("la", "free"), before;
    sched_job_info j;
    sched_job_spec sp = spec(u, "free", "cpu-basic", "import time\ntime.sleep(60)\n");
    sched_resource r = {0};
    quota_balance b;
    char sql[256];

    snprintf(r.name, sizeof(r.name), "cpu-basic");
    r.cpus = r.memory_mb = -1;
    r.configured_capacity = -2;
    r.price_mcoins_per_hour = 360000;   /* 100 a second */
    ck_assert_int_eq(sched_resource_put(NULL, s, &r), 0);
    ck_assert_int_eq(sched_allowance_set(s, "free", "cpu-basic", 0), 0);
    ck_assert_int_eq(quota_grant(NULL, st, u, 100000, "w", "g", 0), 0);
    before = 100000;
    ck_assert_int_eq(sched_job_submit(&j, s, &sp), 0);
    wait_status(&j, j.id, "running", 10000);
    /* let it be metered a few times */
    for (int i = 0; i < 40 && scalar("SELECT COUNT(*) FROM quota_meter WHERE status = 'charged'") < 2; i++) {
        ck_assert_int_eq(sched_tick(s), 0);
        usleep(100000);
    }
    ck_assert_int_ge(scalar("SELECT COUNT(*) FROM quota_meter WHERE status = 'charged'"), 2);
    /* a crash: the store says running, a meter decision was left pending, and
     * the process is gone. (sched_close would stop it cleanly; simulate the
     * crash by forgetting the scheduler's memory of it.) */
    snprintf(sql, sizeof(sql),
             "INSERT INTO quota_meter(ref, seq, user_id, resource, day, ms, free_ms, paid_ms, mcoins, status, at) "
             "VALUES ('job:%lld', 99, %lld, 'cpu-basic', 0, 1000, 0, 1000, 100, 'pending', 0)",
             (long long)j.id, (long long)u);
    ck_assert_int_eq(ed_store_exec(st, sql), 0);
    sched_close(s);
    /* sched_close ended it as platform_error already; undo to the crash state */
    snprintf(sql, sizeof(sql), "UPDATE jobs SET status = 'running', failure_reason = NULL WHERE id = %lld",
             (long long)j.id);
    ck_assert_int_eq(ed_store_exec(st, sql), 0);
    open_sched();
    ck_assert_int_eq(sched_job_get(&j, s, u, j.id), 0);
    ck_assert_str_eq(j.status, "failed");
    ck_assert_str_eq(j.failure_reason, "platform_error");
    ck_assert_int_eq(j.charged_mcoins, 0);
    ck_assert_int_eq(quota_balance_get(&b, st, u), 0);
    ck_assert_int_eq(b.coins_mcoins, before);
    ck_assert_int_eq(b.held_mcoins, 0);
    ck_assert_int_eq(scalar("SELECT COUNT(*) FROM ledger_holds WHERE status = 'open'"), 0);
    ck_assert_int_eq(scalar("SELECT COUNT(*) FROM quota_meter WHERE status = 'pending'"), 0);
    /* every meter row's charge is in the ledger exactly once */
    ck_assert_int_eq(scalar("SELECT COUNT(*) FROM quota_meter WHERE status = 'refunded'"),
                     scalar("SELECT COUNT(*) FROM ledger_transfers WHERE idem_key LIKE 'meter:job:%'"));
    assert_verified();
}
END_TEST

START_TEST(reconcile_releases_orphan_holds_and_half_submitted_jobs)
{
    int64_t u = add_user("ma", "free"), hold;
    sched_job_info j;
    sched_job_spec sp = spec(u, "free", "cpu-basic", "print(1)\n");
    quota_balance b;
    char sql[512], path[200];

    ck_assert_int_eq(quota_grant(NULL, st, u, 10000, "w", "g", 0), 0);
    ck_assert_int_eq(sched_job_submit(&j, s, &sp), 0);
    /* a crash between opening a job's hold and marking it running ... */
    ck_assert_int_eq(quota_hold_open(&hold, st, u, 700, "job:1", "hold:job:1:1"), 0);
    /* ... and one in the middle of a submit */
    snprintf(sql, sizeof(sql),
             "INSERT INTO jobs(user_id, project_id, entry, resource, units, max_runtime_ms, status, created_at, "
             "enqueued_at) VALUES (%lld, 'p1', 'x.py', 'cpu-basic', 1, 1000, 'preparing', 0, 0)", (long long)u);
    ck_assert_int_eq(ed_store_exec(st, sql), 0);
    snprintf(path, sizeof(path), "%s/jobs/2", fixture_dir);
    ck_assert_int_eq(mkdir(path, 0700), 0);
    sched_close(s);
    open_sched();
    ck_assert_int_eq(quota_balance_get(&b, st, u), 0);
    ck_assert_int_eq(b.coins_mcoins, 10000);
    ck_assert_int_eq(b.held_mcoins, 0);
    ck_assert_int_eq(scalar("SELECT COUNT(*) FROM jobs WHERE status = 'preparing'"), 0);
    ck_assert_int_ne(access(path, F_OK), 0);
    ck_assert_int_eq(sched_job_get(&j, s, u, 1), 0);
    ck_assert_str_eq(j.status, "queued");           /* the queued job is still queued */
    assert_verified();
}
END_TEST

START_TEST(resources_list_and_edit)
{
    sched_resource *v = NULL, r = {0}, got;
    size_t n = 0;
    int64_t ms;

    ck_assert_int_eq(sched_resource_list(&v, &n, s), 0);
    ck_assert_int_eq(n, 3);
    ck_assert_str_eq(v[0].name, "cpu-basic");
    ck_assert_int_eq(v[0].capacity, 4);
    ck_assert_int_eq(v[2].capacity, 2);   /* simulated devices */
    free(v);
    snprintf(r.name, sizeof(r.name), "gpu-h100-80g");
    r.cpus = 16;
    r.memory_mb = 65536;
    r.gpu = true;
    r.price_mcoins_per_hour = 20000;
    r.configured_capacity = -2;
    snprintf(r.tiers, sizeof(r.tiers), "premium");
    ck_assert_int_eq(sched_resource_put(&got, s, &r), 0);
    ck_assert_int_eq(got.configured_capacity, -1);
    ck_assert(got.gpu);
    snprintf(r.tiers, sizeof(r.tiers), "gold");
    ck_assert_int_eq(sched_resource_put(&got, s, &r), ED_EINVAL);
    snprintf(r.name, sizeof(r.name), "Bad Name");
    ck_assert_int_eq(sched_resource_put(&got, s, &r), ED_EINVAL);
    ck_assert_int_eq(sched_allowance_get(&ms, s, "free", "gpu-v100-16g"), 0);
    ck_assert_int_eq(ms, 28800000);   /* the tier's free GPU hours on the entry class */
    ck_assert_int_eq(sched_allowance_get(&ms, s, "free", "cpu-basic"), 0);
    ck_assert_int_eq(ms, -1);
    ck_assert_int_eq(sched_allowance_set(s, "gold", "cpu-basic", 5), ED_ENOTFOUND);
    ck_assert_int_eq(sched_allowance_set(s, "free", "cpu-basic", -7), ED_EINVAL);
}
END_TEST

/* cpu-basic at 1000 mcoins a second with no free time */
static void expensive_cpu(void)
{
    sched_resource r = {0};

    snprintf(r.name, sizeof(r.name), "cpu-basic");
    r.cpus = r.memory_mb = -1;
    r.configured_capacity = -2;
    r.price_mcoins_per_hour = 3600000;
    ck_assert_int_eq(sched_resource_put(NULL, s, &r), 0);
    ck_assert_int_eq(sched_allowance_set(s, "free", "cpu-basic", 0), 0);
}

START_TEST(key_budget_stops_running_work_then_refuses_its_starts)
{
    int64_t u = add_user("ba", "free"), spent;
    sched_job_info j, other;
    sched_job_spec sp = spec(u, "free", "cpu-basic", "import time\nprint('working', flush=True)\ntime.sleep(60)\n");
    quota_balance b;

    expensive_cpu();
    ck_assert_int_eq(quota_grant(NULL, st, u, 1000000, "w", "g", 0), 0);
    sp.key_id = 7;
    ck_assert_int_eq(sched_job_submit(&j, s, &sp), 0);
    ck_assert_int_eq(j.key_id, 7);
    run_until_done(&j, j.id, 60000);
    /* charged past the key's 2500 a day: warned, then stopped, the hold settled */
    ck_assert_str_eq(j.status, "failed");
    ck_assert_str_eq(j.failure_reason, "key_budget");
    ck_assert_ptr_nonnull(strstr(read_log(j.id), "daily budget of 2500 mcoins is spent"));
    ck_assert_int_eq(quota_budget_spent(&spent, st, 7, ed_now_ms()), 0);
    ck_assert_int_ge(spent, 2500);
    ck_assert_int_eq(j.charged_mcoins, spent);
    ck_assert_int_eq(quota_balance_get(&b, st, u), 0);
    ck_assert_int_eq(b.coins_mcoins, 1000000 - spent);
    ck_assert_int_eq(b.held_mcoins, 0);
    /* the next start with that key is refused, the acting key too */
    ck_assert_int_eq(sched_job_submit(&other, s, &sp), ED_EQUOTA);
    ck_assert_ptr_nonnull(strstr(ed_error_last(), "daily budget"));
    ck_assert_int_eq(sched_key_budget_check(s, 7), ED_EQUOTA);
    sp.key_id = 0;
    sched_acting_key_set(7);
    ck_assert_int_eq(sched_acting_key(), 7);
    ck_assert_int_eq(sched_job_submit(&other, s, &sp), ED_EQUOTA);
    sched_acting_key_set(0);
    /* without a key, or with another key, work still starts */
    ck_assert_int_eq(sched_key_budget_check(s, 0), 0);
    ck_assert_int_eq(sched_job_submit(&other, s, &sp), 0);
    ck_assert_int_eq(other.key_id, 0);
    ck_assert_int_eq(sched_job_cancel(&other, s, u, other.id), 0);
    sp.key_id = 8;
    ck_assert_int_eq(sched_job_submit(&other, s, &sp), 0);
    ck_assert_int_eq(other.key_id, 8);
    wait_status(&other, other.id, "running", 10000);
    ck_assert_int_eq(sched_job_cancel(&other, s, u, other.id), 0);
    wait_status(&other, other.id, "cancelled", 10000);
    ck_assert_int_eq(scalar("SELECT COUNT(*) FROM ledger_holds WHERE status = 'open'"), 0);
    assert_verified();
}
END_TEST

START_TEST(queued_work_of_a_spent_key_fails_at_start)
{
    int64_t u = add_user("bb", "free");
    sched_job_info a, b;
    sched_job_spec sp = spec(u, "free", "cpu-basic", "import time\ntime.sleep(60)\n");

    expensive_cpu();
    ck_assert_int_eq(quota_grant(NULL, st, u, 1000000, "w", "g", 0), 0);
    key9_budget = 1000000;
    sp.key_id = 9;
    ck_assert_int_eq(sched_job_submit(&a, s, &sp), 0);
    ck_assert_int_eq(sched_job_submit(&b, s, &sp), 0);   /* queued behind a: free allows one */
    wait_status(&a, a.id, "running", 10000);
    /* spend something, then the budget drops below it */
    for (int i = 0; i < 100 && scalar("SELECT COUNT(*) FROM quota_meter WHERE status = 'charged'") < 1; i++) {
        ck_assert_int_eq(sched_tick(s), 0);
        usleep(50000);
    }
    key9_budget = 1;
    ck_assert_int_eq(sched_job_cancel(&a, s, u, a.id), 0);
    run_until_done(&b, b.id, 20000);
    ck_assert_str_eq(b.status, "failed");
    ck_assert_str_eq(b.failure_reason, "key_budget");
    ck_assert_int_eq(b.started_at, 0);
    ck_assert_int_eq(scalar("SELECT COUNT(*) FROM ledger_holds WHERE status = 'open'"), 0);
    assert_verified();
}
END_TEST

START_TEST(user_stop_ends_queued_and_running_work_with_the_reason)
{
    int64_t u = add_user("ca", "free"), v = add_user("cb", "free");
    sched_job_info a, b, c, w;
    sched_job_spec sp = spec(u, "free", "cpu-basic", "import time\nprint('working', flush=True)\ntime.sleep(60)\n");
    quota_balance bal;
    char sql[128];
    int n = -1;

    expensive_cpu();
    ck_assert_int_eq(quota_grant(NULL, st, u, 1000000, "w", "g", 0), 0);
    ck_assert_int_eq(quota_grant(NULL, st, v, 1000000, "w", "g2", 0), 0);
    ck_assert_int_eq(sched_job_submit(&a, s, &sp), 0);
    ck_assert_int_eq(sched_job_submit(&b, s, &sp), 0);
    sp.user_id = v;
    ck_assert_int_eq(sched_job_submit(&w, s, &sp), 0);
    wait_status(&a, a.id, "running", 10000);
    wait_status(&w, w.id, "running", 10000);
    for (int i = 0; i < 100 && scalar("SELECT COUNT(*) FROM quota_meter WHERE status = 'charged'") < 2; i++) {
        ck_assert_int_eq(sched_tick(s), 0);
        usleep(50000);
    }
    ck_assert_int_eq(sched_user_stop(&n, s, u, "Suspended"), ED_EINVAL);
    ck_assert_int_eq(sched_user_stop(&n, s, u, ""), ED_EINVAL);
    ck_assert_int_eq(sched_user_stop(&n, s, u, "suspended"), 0);
    ck_assert_int_eq(n, 2);
    /* the queued one ends at once, the running one once it has stopped */
    ck_assert_int_eq(sched_job_get(&b, s, u, b.id), 0);
    ck_assert_str_eq(b.status, "failed");
    ck_assert_str_eq(b.failure_reason, "suspended");
    run_until_done(&a, a.id, 20000);
    ck_assert_str_eq(a.status, "failed");
    ck_assert_str_eq(a.failure_reason, "suspended");
    ck_assert_ptr_nonnull(strstr(read_log(a.id), "stopping this job: suspended"));
    ck_assert_int_gt(a.charged_mcoins, 0);
    ck_assert_int_eq(quota_balance_get(&bal, st, u), 0);
    ck_assert_int_eq(bal.coins_mcoins, 1000000 - a.charged_mcoins);
    ck_assert_int_eq(bal.held_mcoins, 0);
    /* another user's work is untouched */
    ck_assert_int_eq(sched_tick(s), 0);
    ck_assert_int_eq(sched_job_get(&w, s, v, w.id), 0);
    ck_assert_str_eq(w.status, "running");
    /* while suspended nothing starts: a submit is refused, a queued item fails */
    snprintf(sql, sizeof(sql), "UPDATE users SET suspended = 1 WHERE id = %lld", (long long)u);
    ck_assert_int_eq(ed_store_exec(st, sql), 0);
    sp.user_id = u;
    ck_assert_int_eq(sched_job_submit(&c, s, &sp), ED_EPERM);
    snprintf(sql, sizeof(sql), "UPDATE users SET suspended = 0 WHERE id = %lld", (long long)u);
    ck_assert_int_eq(ed_store_exec(st, sql), 0);
    ck_assert_int_eq(sched_job_submit(&c, s, &sp), 0);   /* not ticked: still queued */
    snprintf(sql, sizeof(sql), "UPDATE users SET suspended = 1 WHERE id = %lld", (long long)u);
    ck_assert_int_eq(ed_store_exec(st, sql), 0);
    run_until_done(&c, c.id, 20000);
    ck_assert_str_eq(c.failure_reason, "suspended");
    ck_assert_int_eq(sched_job_cancel(&w, s, v, w.id), 0);
    wait_status(&w, w.id, "cancelled", 10000);
    ck_assert_int_eq(scalar("SELECT COUNT(*) FROM ledger_holds WHERE status = 'open'"), 0);
    assert_verified();
}
END_TEST

/* The invariants asserted in scheduler/ (sched_int.h): the job state machine
 * and the lock's holder. And the asserts themselves must be compiled into the
 * build the tests run in (CMake's Release adds -DNDEBUG; EDDY_ASSERTS strips it). */
START_TEST(asserts_are_on_and_the_job_state_machine_is_closed)
{
#ifdef NDEBUG
    ck_abort_msg("NDEBUG is defined: asserts are off in the test build (configure with EDDY_ASSERTS=ON)");
#endif
    static const char *const legal[][2] = {
        {"preparing", "queued"}, {"queued", "running"},    {"queued", "failed"},
        {"queued", "cancelled"}, {"running", "succeeded"}, {"running", "failed"},
        {"running", "cancelled"}, {"running", "preempted"}, {"running", "queued"},
    };
    static const char *const states[] = {"preparing", "queued", "running", "succeeded",
                                         "failed", "cancelled", "preempted"};
    int n = 0;

    for (size_t i = 0; i < sizeof(legal) / sizeof(legal[0]); i++)
        ck_assert_msg(sched__job_transition_ok(legal[i][0], legal[i][1]), "%s -> %s", legal[i][0], legal[i][1]);
    for (size_t f = 0; f < sizeof(states) / sizeof(states[0]); f++)
        for (size_t t = 0; t < sizeof(states) / sizeof(states[0]); t++)
            n += sched__job_transition_ok(states[f], states[t]);
    ck_assert_int_eq(n, (int)(sizeof(legal) / sizeof(legal[0])));   /* nothing else, ended states final */
    ck_assert(!sched__job_transition_ok("succeeded", "queued"));
    ck_assert(!sched__job_transition_ok("queued", "succeeded"));

    ck_assert(!sched__locked(s));
    sched__lock(s);
    ck_assert(sched__locked(s));
    sched__unlock(s);
    ck_assert(!sched__locked(s));
}
END_TEST

static int count_job(const sched_job_info *j, void *payload)
{
    (void)j;
    (*(int *)payload)++;
    return 0;
}

/* A platform run (a code competition's): uncharged (accepted without funds,
 * no hold, no meter row, no charge), internal (its owner neither reads,
 * lists nor cancels it; user 0 does), listed uncollected by its idem prefix
 * until sched_job_collect, and with network_off in its own network
 * namespace (loopback only) although the tier allows egress. */
START_TEST(platform_run_is_uncharged_internal_sealed_and_collected)
{
    int64_t u = add_user("pr", "pro");
    sched_job_info j, x;
    sched_job_spec sp = spec(u, "pro", "cpu-basic",
                             "print('ifaces', sorted(l.split(':')[0].strip() for l in open('/proc/net/dev').readlines()[2:]))\n");
    int n = 0;

    ck_assert_int_eq(sched_allowance_set(s, "pro", "cpu-basic", 0), 0);
    ck_assert_int_eq(sched_job_submit(&j, s, &sp), ED_EQUOTA);      /* no coins, no allowance */
    sp.uncharged = true;
    sp.internal = true;
    sp.network_off = true;
    sp.idem_key = "comp-code:c1:s1:0";
    ck_assert_int_eq(sched_job_submit(&j, s, &sp), 0);
    ck_assert(j.uncharged && j.internal && j.network_off && !j.collected);
    ck_assert_str_eq(j.idem_key, "comp-code:c1:s1:0");
    ck_assert_int_eq(sched_job_get(&x, s, u, j.id), ED_ENOTFOUND);
    ck_assert_int_eq(sched_job_cancel(&x, s, u, j.id), ED_ENOTFOUND);
    ck_assert_int_eq(sched_job_each(s, u, 0, 10, count_job, &n), 0);
    ck_assert_int_eq(n, 0);
    ck_assert_int_eq(sched_job_collect(s, j.id), ED_ECONFLICT);     /* not ended */
    run_until_done(&j, j.id, 30000);
    ck_assert_str_eq(j.status, "succeeded");
    ck_assert_int_eq(j.charged_mcoins, 0);
    ck_assert_int_eq(scalar("SELECT COUNT(*) FROM ledger_holds"), 0);
    ck_assert_int_eq(scalar("SELECT COUNT(*) FROM quota_meter"), 0);
    ck_assert_msg(strstr(read_log(j.id), "ifaces ['lo']") != NULL, "%s", read_log(j.id));
    n = 0;
    ck_assert_int_eq(sched_job_each_uncollected(s, "comp-code:", count_job, &n), 0);
    ck_assert_int_eq(n, 1);
    n = 0;
    ck_assert_int_eq(sched_job_each_uncollected(s, "other:", count_job, &n), 0);
    ck_assert_int_eq(n, 0);
    ck_assert_int_eq(sched_job_collect(s, j.id), 0);
    n = 0;
    ck_assert_int_eq(sched_job_each_uncollected(s, "comp-code:", count_job, &n), 0);
    ck_assert_int_eq(n, 0);
    /* the same key again is the same run */
    ck_assert_int_eq(sched_job_submit(&x, s, &sp), 0);
    ck_assert_int_eq(x.id, j.id);
    /* an ordinary job of the same user is charged as always (the control) */
    sp = spec(u, "pro", "cpu-basic", "print(1)\n");
    ck_assert_int_eq(sched_job_submit(&x, s, &sp), ED_EQUOTA);
    assert_verified();
}
END_TEST

/* A platform run neither waits for its owner's concurrency cap (free: 1)
 * nor counts against it. */
START_TEST(platform_runs_are_outside_the_owners_cap)
{
    int64_t u = add_user("pc", "free");
    sched_job_info a, b, x;
    sched_job_spec sp = spec(u, "free", "cpu-basic", "import time\ntime.sleep(30)\n");

    ck_assert_int_eq(sched_job_submit(&a, s, &sp), 0);
    wait_status(&a, a.id, "running", 10000);
    sp = spec(u, "free", "cpu-basic", "print('platform run')\n");
    sp.internal = true;
    sp.uncharged = true;
    ck_assert_int_eq(sched_job_submit(&b, s, &sp), 0);
    run_until_done(&b, b.id, 30000);
    ck_assert_str_eq(b.status, "succeeded");
    ck_assert_int_eq(sched_job_get(&x, s, 0, a.id), 0);
    ck_assert_str_eq(x.status, "running");
    ck_assert_int_eq(sched_job_cancel(&x, s, 0, a.id), 0);
    run_until_done(&x, a.id, 10000);
}
END_TEST

int main(void)
{
    const TTest *tests[] = {
        asserts_are_on_and_the_job_state_machine_is_closed,
        submit_enforces_tier_limits,
        gpu_class_without_devices_is_refused_with_numbers,
        submit_without_funds_or_allowance_is_quota_error,
        idempotency_key_returns_the_first_job,
        queue_positions_etas_and_persistence_across_restart,
        resources_list_and_edit,
        reconcile_releases_orphan_holds_and_half_submitted_jobs,
        job_runs_to_success_with_logs_usage_and_charge,
        failing_script_is_user_error_with_exit_code,
        max_runtime_stops_the_job_as_timeout,
        out_of_funds_warns_then_stops_and_settles,
        tier_cap_keeps_second_job_queued,
        higher_tier_preempts_batch_gpu_job_which_is_requeued,
        restart_fails_running_work_with_platform_error_and_refunds,
        key_budget_stops_running_work_then_refuses_its_starts,
        queued_work_of_a_spent_key_fails_at_start,
        user_stop_ends_queued_and_running_work_with_the_reason,
        platform_run_is_uncharged_internal_sealed_and_collected,
        platform_runs_are_outside_the_owners_cap,
        NULL,
    };

    return unit_tests_run("sched_service", 120, setup, teardown, tests);
}
