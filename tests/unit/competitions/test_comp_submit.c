/* Unit tests for competitions/: submissions and caps (20 threads against a
 * cap of 5), scoring through score.h, invalid and failed submissions, the
 * watchdog with refunds through the real ledger, crash recovery, both
 * leaderboards and their visibility, the final selection and secrecy. */
#include "comp.h"
#include "score.h"

#include "acct.h"
#include "ed_error.h"
#include "ed_store.h"
#include "quota.h"

#include <check.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../support/unit_util.h"
#include "comp_fixture.h"

static void accept_all(const char *id)
{
    int64_t users[] = {alice, bob, carol, dave};
    for (int i = 0; i < 4; i++)
        ck_assert_int_eq(comp_rules_accept(cp, users[i], id), 0);
}

static comp_submission *submit_ok(int64_t user, const char *id, const char *text)
{
    comp_submission *x = NULL;
    int err = submit_text(&x, user, id, text);
    if (err != 0)
        ck_abort_msg("submit: %s", ed_error_last());
    return x;
}

static comp_submission *reget(int64_t user, const char *id, const char *sid)
{
    comp_submission *x = NULL;
    int err = comp_submission_get(&x, cp, user, id, sid);
    if (err != 0)
        ck_abort_msg("get: %s", ed_error_last());
    return x;
}

START_TEST(submission_is_scored_and_ranked)
{
    comp_spec s = base_spec();
    char id[COMP_ID_LEN];
    char *perfect = sub_text(100, 100), *half = sub_text(100, 50);
    comp_submission *a, *b, *g;
    comp_board_page *p = NULL;
    comp_board_entry e;
    double priv;

    make_comp(id, &s);
    accept_all(id);
    a = submit_ok(alice, id, perfect);
    ck_assert_int_eq(a->status, COMP_QUEUED);
    ck_assert(a->counted);
    ck_assert_int_gt(a->state_deadline, fake_now);
    fake_now += 1000;
    b = submit_ok(bob, id, half);
    work_all();
    g = reget(alice, id, a->id);
    ck_assert_int_eq(g->status, COMP_SCORED);
    ck_assert(g->has_public_score);
    ck_assert_double_eq_tol(g->public_score, 1.0, 1e-12);
    ck_assert_int_ge(g->metric_version, 1);
    ck_assert_int_eq(g->state_deadline, 0);
    comp_submission_free(g);
    /* another team's submission is not found, even by id */
    ck_assert_int_eq(comp_submission_get(&g, cp, alice, id, b->id), ED_ENOTFOUND);
    ck_assert_int_eq(comp_submission_get(&g, cp, host, id, b->id), 0);   /* the host sees all */
    ck_assert_int_eq(g->status, COMP_SCORED);
    ck_assert(g->public_score < 1.0);
    comp_submission_free(g);
    ck_assert_int_eq(comp_leaderboard_get(&p, cp, carol, id, COMP_BOARD_PUBLIC, 0, 10), 0);
    ck_assert_int_eq(p->total, 2);
    ck_assert_uint_eq(p->count, 2);
    ck_assert_int_eq(p->items[0].rank, 1);
    ck_assert_int_eq(p->items[0].team_id, a->team_id);
    ck_assert_str_eq(p->items[0].team_name, "alice");
    ck_assert_int_eq(p->items[1].team_id, b->team_id);
    comp_board_page_free(p);
    ck_assert_int_eq(comp_leaderboard_rank(&e, cp, carol, id, COMP_BOARD_PUBLIC, b->team_id), 0);
    ck_assert_int_eq(e.rank, 2);
    comp_board_entry_clear(&e);
    ck_assert_int_eq(comp_leaderboard_rank(&e, cp, carol, id, COMP_BOARD_PUBLIC, 4242), ED_ENOTFOUND);
    /* private: nothing before the end, for anyone */
    ck_assert_int_eq(comp_leaderboard_get(&p, cp, host, id, COMP_BOARD_PRIVATE, 0, 10), ED_EPERM);
    ck_assert_int_eq(comp_submission_private_get(&priv, cp, host, id, a->id), ED_EPERM);
    ck_assert_int_eq(comp_submission_private_get(&priv, cp, alice, id, a->id), ED_EPERM);
    fake_now = s.end_at;
    ck_assert_int_eq(comp_submission_private_get(&priv, cp, alice, id, a->id), 0);
    ck_assert_double_eq_tol(priv, 1.0, 1e-12);
    ck_assert_int_eq(comp_submission_private_get(&priv, cp, alice, id, b->id), ED_ENOTFOUND);
    ck_assert_int_eq(comp_leaderboard_get(&p, cp, carol, id, COMP_BOARD_PRIVATE, 0, 10), 0);
    ck_assert_uint_eq(p->count, 2);
    ck_assert_int_eq(p->items[0].team_id, a->team_id);
    ck_assert_double_eq_tol(p->items[0].score, 1.0, 1e-12);
    comp_board_page_free(p);
    /* no more submissions after the end */
    ck_assert_int_eq(submit_text(&g, alice, id, perfect), ED_ECONFLICT);
    comp_submission_free(a);
    comp_submission_free(b);
    free(perfect);
    free(half);
}
END_TEST

START_TEST(bad_submissions_are_refused)
{
    comp_spec s = base_spec();
    comp_competition *k = NULL;
    char id[COMP_ID_LEN];
    char *sub = sub_text(100, 100);
    comp_submission *x = NULL;

    ck_assert_int_eq(comp_competition_create(&k, cp, host, &s), 0);
    snprintf(id, sizeof(id), "%s", k->id);
    comp_competition_free(k);
    ck_assert_int_eq(comp_rules_accept(cp, alice, id), 0);
    ck_assert_int_eq(submit_text(&x, alice, id, sub), ED_ECONFLICT);      /* not started */
    fake_now = s.start_at;
    ck_assert_int_eq(submit_text(&x, alice, id, sub), ED_ECONFLICT);      /* no truth yet */
    ck_assert(strstr(ed_error_last(), "truth") != NULL);
    fake_now = T0;
    put_truth(id, 100);
    fake_now = s.start_at;
    ck_assert_int_eq(submit_text(&x, bob, id, sub), ED_EPERM);            /* rules */
    ck_assert_int_eq(submit_text(&x, alice, "00000000-0000-4000-8000-000000000000", sub), ED_ENOTFOUND);
    ck_assert_int_eq(submit_text(&x, alice, id, ""), ED_EINVAL);          /* empty */
    ck_assert_int_eq(comp_submission_create_code(&x, cp, alice, id, "{}"), ED_EUNPROC);
    comp_submission_list *all = NULL;
    ck_assert_int_eq(comp_submission_list_all(&all, cp, alice, id, 0, 0), ED_EPERM);
    /* nothing was counted or left on disk by the refusals */
    ck_assert_int_eq(unit_store_int(st, "SELECT COUNT(*) FROM comp_submissions"), 0);
    char cmd[256];
    snprintf(cmd, sizeof(cmd), "ls %s/competitions/%s/submissions 2>/dev/null | wc -l", fixture_dir, id);
    ck_assert_int_eq(unit_popen_int(cmd), 0);
    free(sub);
}
END_TEST

START_TEST(invalid_submission_gives_its_slot_back_unless_configured)
{
    comp_spec s = base_spec();
    char id[COMP_ID_LEN], id2[COMP_ID_LEN];
    comp_submission *x, *g;
    comp_team *t = NULL;

    s.daily_cap = 2;
    make_comp(id, &s);
    accept_all(id);
    x = submit_ok(alice, id, "id,label\n0,a\n1,b\n");          /* 2 of 100 rows */
    work_all();
    g = reget(alice, id, x->id);
    ck_assert_int_eq(g->status, COMP_INVALID);
    ck_assert_str_eq(g->error_class, COMP_ERR_INVALID_OUTPUT);
    ck_assert_ptr_nonnull(g->error_message);
    ck_assert(!g->counted);
    ck_assert(!g->has_public_score);
    comp_submission_free(g);
    comp_submission_free(x);
    ck_assert_int_eq(comp_team_mine(&t, cp, alice, id), 0);
    ck_assert_int_eq(t->submissions_today, 0);
    comp_team_free(t);
    /* a competition where invalid submissions count */
    fake_now = T0;
    s.title = "Digits counted";
    s.invalid_counts = true;
    make_comp(id2, &s);
    accept_all(id2);
    x = submit_ok(alice, id2, "id,label\n0,a\n");
    work_all();
    g = reget(alice, id2, x->id);
    ck_assert_int_eq(g->status, COMP_INVALID);
    ck_assert(g->counted);
    comp_submission_free(g);
    comp_submission_free(x);
}
END_TEST

START_TEST(caps_daily_reset_at_midnight_utc_and_total)
{
    comp_spec s = base_spec();
    char id[COMP_ID_LEN];
    char *sub = sub_text(100, 70);
    comp_submission *x = NULL;

    s.daily_cap = 2;
    s.total_cap = 3;
    make_comp(id, &s);
    accept_all(id);
    comp_submission_free(submit_ok(alice, id, sub));
    comp_submission_free(submit_ok(alice, id, sub));
    ck_assert_int_eq(submit_text(&x, alice, id, sub), ED_ELIMIT);
    ck_assert(strstr(ed_error_last(), "00:00 UTC") != NULL);
    comp_submission_free(submit_ok(bob, id, sub));                 /* per team */
    fake_now = (fake_now / DAY + 1) * DAY;                          /* next 00:00 UTC */
    comp_submission_free(submit_ok(alice, id, sub));
    ck_assert_int_eq(submit_text(&x, alice, id, sub), ED_ELIMIT);   /* total 3 */
    ck_assert(strstr(ed_error_last(), "all 3") != NULL);
    ck_assert_int_eq(unit_store_int(st, "SELECT COUNT(*) FROM comp_submissions"), 4);
    free(sub);
}
END_TEST

typedef struct race_arg {
    const char *id;
    const char *text;
    int rc;
} race_arg;

static void *race_one(void *p)
{
    race_arg *a = p;
    comp_submission *x = NULL;
    a->rc = submit_text(&x, alice, a->id, a->text);
    comp_submission_free(x);
    return NULL;
}

START_TEST(twenty_concurrent_submissions_against_cap_five_accept_five)
{
    comp_spec s = base_spec();
    char id[COMP_ID_LEN];
    char *sub = sub_text(100, 80);
    pthread_t th[20];
    race_arg args[20];
    int ok = 0, limited = 0;
    comp_team *t = NULL;

    s.daily_cap = 5;
    make_comp(id, &s);
    accept_all(id);
    ck_assert_int_eq(comp_team_create(&t, cp, alice, id, "racers"), 0);
    comp_team_free(t);
    for (int i = 0; i < 20; i++) {
        args[i] = (race_arg){.id = id, .text = sub};
        ck_assert_int_eq(pthread_create(&th[i], NULL, race_one, &args[i]), 0);
    }
    for (int i = 0; i < 20; i++) {
        pthread_join(th[i], NULL);
        ok += args[i].rc == 0;
        limited += args[i].rc == ED_ELIMIT;
    }
    ck_assert_int_eq(ok, 5);
    ck_assert_int_eq(limited, 15);
    ck_assert_int_eq(unit_store_int(st, "SELECT COUNT(*) FROM comp_submissions WHERE counted = 1"), 5);
    free(sub);
}
END_TEST

/* The refund hook the gateway wires: quota/'s refund (system_refunds ->
 * the user's coins) with the submission's idempotency key. */
static int ledger_refund(void *payload, int64_t user, int64_t mcoins, const char *idem_key)
{
    int64_t transfer;
    (void)payload;
    return quota_refund(&transfer, st, user, mcoins, "competition", "platform_error", idem_key);
}

static int64_t coins_of(int64_t user)
{
    quota_balance b;
    ck_assert_int_eq(quota_balance_get(&b, st, user), 0);
    return b.coins_mcoins;
}

START_TEST(watchdog_retries_once_then_fails_and_refunds_once)
{
    comp_spec s = base_spec();
    char id[COMP_ID_LEN], *source = NULL;
    comp_submission *x, *claimed = NULL, *g;
    comp_watchdog_report r;
    comp_team *t = NULL;
    int64_t before;

    quota_user_tier_fn_set(acct_user_tier);
    comp_free(cp);
    fixture_hooks.refund = ledger_refund;
    fixture_open();
    s.code.enabled = true;
    s.code.max_runtime_s = 60;
    s.code.output_path = "submission.csv";
    s.code.charged = true;
    make_comp(id, &s);
    accept_all(id);
    ck_assert_int_eq(comp_submission_create_code(&x, cp, alice, id, "{\"project_id\":\"p\",\"entry\":\"m.py\"}"), 0);
    ck_assert(x->code);
    ck_assert_int_eq(comp_code_claim(&claimed, &source, cp), 0);
    ck_assert_ptr_nonnull(claimed);
    ck_assert_str_eq(claimed->id, x->id);
    ck_assert_int_eq(claimed->status, COMP_RUNNING);
    ck_assert_str_eq(source, "{\"project_id\":\"p\",\"entry\":\"m.py\"}");
    free(source);
    /* within its limit nothing moves */
    ck_assert_int_eq(comp_watchdog_run(&r, cp), 0);
    ck_assert_int_eq(r.requeued + r.failed, 0);
    /* past it: back to the queue once */
    fake_now = claimed->state_deadline;
    comp_submission_free(claimed);
    ck_assert_int_eq(comp_watchdog_run(&r, cp), 0);
    ck_assert_int_eq(r.requeued, 1);
    g = reget(alice, id, x->id);
    ck_assert_int_eq(g->status, COMP_QUEUED);
    ck_assert_int_eq(g->retries, 1);
    comp_submission_free(g);
    /* the first run's late report is dropped */
    int fd = text_fd("id,label\n");
    ck_assert_int_eq(comp_code_output_fd(cp, x->id, fd, 500), ED_ECONFLICT);
    close(fd);
    /* claimed again, charged, stuck again: failed, slot and charge back */
    ck_assert_int_eq(comp_code_claim(&claimed, &source, cp), 0);
    free(source);
    ck_assert_int_eq(comp_code_output_fd(cp, "nope", 0, 0), ED_ECONFLICT);
    ck_assert_int_eq(ed_store_exec(st, "UPDATE comp_submissions SET charged_mcoins = 700"), 0);
    before = coins_of(alice);
    fake_now = claimed->state_deadline + 1;
    comp_submission_free(claimed);
    ck_assert_int_eq(comp_watchdog_run(&r, cp), 0);
    ck_assert_int_eq(r.failed, 1);
    ck_assert_int_eq(r.refunded, 1);
    ck_assert_int_eq(coins_of(alice), before + 700);
    g = reget(alice, id, x->id);
    ck_assert_int_eq(g->status, COMP_FAILED);
    ck_assert_str_eq(g->error_class, COMP_ERR_PLATFORM);
    ck_assert(!g->counted);
    ck_assert_int_eq(g->state_deadline, 0);
    comp_submission_free(g);
    ck_assert_int_eq(comp_team_mine(&t, cp, alice, id), 0);
    ck_assert_int_eq(t->submissions_today, 0);
    comp_team_free(t);
    /* paid once: a later run, even with the row forced pending again
     * (a crash between the payment and its record), pays nothing more */
    ck_assert_int_eq(comp_watchdog_run(&r, cp), 0);
    ck_assert_int_eq(r.refunded, 0);
    ck_assert_int_eq(ed_store_exec(st, "UPDATE comp_submissions SET refund_state = 1"), 0);
    ck_assert_int_eq(comp_watchdog_run(&r, cp), 0);
    ck_assert_int_eq(coins_of(alice), before + 700);
    ck_assert_int_eq(unit_store_int(st, "SELECT COUNT(*) FROM comp_submissions WHERE refund_key LIKE 'comp-refund-%'"), 1);
    comp_submission_free(x);
    fixture_hooks.refund = NULL;
}
END_TEST

START_TEST(code_failure_classes_give_the_slot_back)
{
    comp_spec s = base_spec();
    char id[COMP_ID_LEN], *source = NULL;
    comp_submission *x, *claimed = NULL, *g;
    char *perfect = sub_text(100, 100);

    s.code.enabled = true;
    s.code.max_runtime_s = 60;
    s.code.output_path = "submission.csv";
    make_comp(id, &s);
    accept_all(id);
    ck_assert_int_eq(comp_submission_create_code(&x, cp, alice, id, "{\"project_id\":\"p\"}"), 0);
    ck_assert_int_eq(comp_code_claim(&claimed, &source, cp), 0);
    free(source);
    ck_assert_int_eq(comp_code_fail(cp, x->id, "oops", "m", NULL, 0), ED_EINVAL);
    ck_assert_int_eq(comp_code_fail(cp, x->id, COMP_ERR_EXCEPTION, "ZeroDivisionError", "Traceback ...\n", 0), 0);
    g = reget(alice, id, x->id);
    ck_assert_int_eq(g->status, COMP_FAILED);
    ck_assert_str_eq(g->error_class, COMP_ERR_EXCEPTION);
    ck_assert_str_eq(g->log_tail, "Traceback ...\n");
    ck_assert(!g->counted);
    comp_submission_free(g);
    comp_submission_free(claimed);
    comp_submission_free(x);
    /* a run whose output scores */
    ck_assert_int_eq(comp_submission_create_code(&x, cp, alice, id, "{\"project_id\":\"p\"}"), 0);
    ck_assert_int_eq(comp_code_claim(&claimed, &source, cp), 0);
    free(source);
    int fd = text_fd(perfect);
    ck_assert_int_eq(comp_code_output_fd(cp, x->id, fd, 0), 0);
    close(fd);
    g = reget(alice, id, x->id);
    ck_assert_int_eq(g->status, COMP_SCORED);
    ck_assert_double_eq_tol(g->public_score, 1.0, 1e-12);
    comp_submission_free(g);
    comp_submission_free(claimed);
    comp_submission_free(x);
    ck_assert_int_eq(comp_code_claim(&claimed, &source, cp), 0);
    ck_assert_ptr_null(claimed);
    free(perfect);
}
END_TEST

START_TEST(after_a_crash_every_inflight_submission_reaches_a_final_state)
{
    comp_spec s = base_spec();
    char id[COMP_ID_LEN];
    char *sub = sub_text(100, 90);
    comp_watchdog_report r;

    s.daily_cap = 20;
    make_comp(id, &s);
    accept_all(id);
    for (int i = 0; i < 8; i++)
        comp_submission_free(submit_ok(i % 2 ? alice : bob, id, sub));
    /* a dead process left them mid-way: 3 validating, 3 scoring, 2 queued */
    ck_assert_int_eq(ed_store_exec(st, "UPDATE comp_submissions SET status = 'validating', attempt = 1 WHERE rowid IN "
                                       "(SELECT rowid FROM comp_submissions ORDER BY rowid LIMIT 3)"), 0);
    ck_assert_int_eq(ed_store_exec(st, "UPDATE comp_submissions SET status = 'scoring', attempt = 1 WHERE rowid IN "
                                       "(SELECT rowid FROM comp_submissions ORDER BY rowid LIMIT 3 OFFSET 3)"), 0);
    comp_free(cp);
    fixture_open();                                  /* the restart */
    ck_assert_int_eq(comp_recover(cp), 0);
    fake_now += 1;
    ck_assert_int_eq(comp_watchdog_run(&r, cp), 0);
    ck_assert_int_eq(r.requeued, 6);
    work_all();                                      /* the worker picks all 8 up again */
    ck_assert_int_eq(unit_store_int(st, "SELECT COUNT(*) FROM comp_submissions WHERE status = 'scored'"), 8);
    /* with no worker at all, a later clock still ends everything */
    for (int i = 0; i < 3; i++)
        comp_submission_free(submit_ok(alice, id, sub));
    ck_assert_int_eq(ed_store_exec(st, "UPDATE comp_submissions SET status = 'running' WHERE status = 'queued' "
                                       "AND rowid = (SELECT MAX(rowid) FROM comp_submissions)"), 0);
    fake_now += DAY;
    ck_assert_int_eq(comp_watchdog_run(&r, cp), 0);
    fake_now += DAY;
    ck_assert_int_eq(comp_watchdog_run(&r, cp), 0);
    ck_assert_int_eq(unit_store_int(st, "SELECT COUNT(*) FROM comp_submissions WHERE status IN "
                                        "('queued', 'validating', 'running', 'scoring')"), 0);
    ck_assert_int_eq(unit_store_int(st, "SELECT COUNT(*) FROM comp_submissions WHERE status = 'failed' AND "
                                        "error_class = 'platform_error' AND counted = 0"), 3);
    free(sub);
}
END_TEST

START_TEST(worker_thread_scores_in_the_background)
{
    comp_spec s = base_spec();
    char id[COMP_ID_LEN];
    char *sub = sub_text(100, 100);
    comp_submission *x, *g = NULL;

    make_comp(id, &s);
    accept_all(id);
    ck_assert_int_eq(comp_worker_start(cp, 50), 0);
    ck_assert_int_eq(comp_worker_start(cp, 50), ED_ECONFLICT);
    x = submit_ok(alice, id, sub);
    for (int i = 0; i < 500; i++) {
        g = reget(alice, id, x->id);
        if (g->status == COMP_SCORED)
            break;
        comp_submission_free(g);
        g = NULL;
        usleep(10000);
    }
    ck_assert_ptr_nonnull(g);
    ck_assert_int_eq(g->status, COMP_SCORED);
    comp_submission_free(g);
    comp_submission_free(x);
    free(sub);
}
END_TEST

START_TEST(board_modes_own_score_and_hidden)
{
    comp_spec s = base_spec();
    char id[COMP_ID_LEN], id2[COMP_ID_LEN];
    char *a = sub_text(100, 90), *b = sub_text(100, 60);
    comp_board_page *p = NULL;
    comp_board_entry e;
    comp_submission *xa, *xb;

    s.mode = COMP_MODE_OWN_SCORE;
    make_comp(id, &s);
    accept_all(id);
    xa = submit_ok(alice, id, a);
    xb = submit_ok(bob, id, b);
    work_all();
    ck_assert_int_eq(comp_leaderboard_get(&p, cp, bob, id, COMP_BOARD_PUBLIC, 0, 10), 0);
    ck_assert_uint_eq(p->count, 1);
    ck_assert_int_eq(p->items[0].team_id, xb->team_id);
    ck_assert_int_eq(p->items[0].rank, 0);              /* a rank would tell on the others */
    comp_board_page_free(p);
    ck_assert_int_eq(comp_leaderboard_rank(&e, cp, bob, id, COMP_BOARD_PUBLIC, xa->team_id), ED_EPERM);
    ck_assert_int_eq(comp_leaderboard_get(&p, cp, carol, id, COMP_BOARD_PUBLIC, 0, 10), 0);   /* no team */
    ck_assert_uint_eq(p->count, 0);
    comp_board_page_free(p);
    ck_assert_int_eq(comp_leaderboard_get(&p, cp, host, id, COMP_BOARD_PUBLIC, 0, 10), 0);
    ck_assert_uint_eq(p->count, 2);
    comp_board_page_free(p);
    comp_submission_free(xa);
    comp_submission_free(xb);
    /* hidden */
    fake_now = T0;
    s.title = "Hidden";
    s.mode = COMP_MODE_HIDDEN;
    make_comp(id2, &s);
    accept_all(id2);
    comp_submission_free(submit_ok(alice, id2, a));
    work_all();
    ck_assert_int_eq(comp_leaderboard_get(&p, cp, alice, id2, COMP_BOARD_PUBLIC, 0, 10), ED_EPERM);
    ck_assert_int_eq(comp_leaderboard_get(&p, cp, host, id2, COMP_BOARD_PUBLIC, 0, 10), 0);
    comp_board_page_free(p);
    fake_now = s.end_at;
    ck_assert_int_eq(comp_leaderboard_get(&p, cp, alice, id2, COMP_BOARD_PUBLIC, 0, 10), 0);
    ck_assert_uint_eq(p->count, 1);
    comp_board_page_free(p);
    free(a);
    free(b);
}
END_TEST

/* Rows 0..99; the split puts some public, some private. A submission right
 * on exactly the public rows (wrong on the private ones) and one right on
 * the private rows: the selection decides the private board. */
static char *split_text(const uint8_t *mask, bool right_on_public)
{
    char *t = malloc(32 + 100 * 16);
    size_t n = (size_t)sprintf(t, "id,label\n");
    for (int i = 0; i < 100; i++) {
        int bb = i % 2;
        if ((mask[i] != 0) != right_on_public)
            bb = !bb;
        n += (size_t)sprintf(t + n, "%d,%s\n", i, bb ? "b" : "a");
    }
    return t;
}

START_TEST(selection_decides_the_private_board)
{
    comp_spec s = base_spec();
    char id[COMP_ID_LEN];
    uint8_t mask[100];
    comp_submission *good_pub, *good_priv, *other;
    comp_board_page *p = NULL;
    const char *sel[1];
    int64_t seed;

    make_comp(id, &s);
    accept_all(id);
    seed = unit_store_int(st, "SELECT split_seed FROM competitions");
    ck_assert_int_eq(comp_split_mask(mask, 100, (uint64_t)seed, 0.5), 0);
    char *pub = split_text(mask, true), *priv = split_text(mask, false), *mid = sub_text(100, 75);
    good_pub = submit_ok(alice, id, pub);
    fake_now += 1000;
    good_priv = submit_ok(alice, id, priv);
    other = submit_ok(bob, id, mid);
    work_all();
    comp_submission *g = reget(alice, id, good_pub->id);
    ck_assert_double_eq_tol(g->public_score, 1.0, 1e-12);
    comp_submission_free(g);
    g = reget(alice, id, good_priv->id);
    ck_assert_double_eq_tol(g->public_score, 0.0, 1e-12);
    comp_submission_free(g);
    /* selection rules */
    sel[0] = other->id;
    ck_assert_int_eq(comp_selection_set(cp, alice, id, sel, 1), ED_EINVAL);   /* not ours */
    const char *three[] = {good_pub->id, good_priv->id, other->id};
    ck_assert_int_eq(comp_selection_set(cp, alice, id, three, 3), ED_EINVAL); /* over K = 2 */
    const char *twice[] = {good_priv->id, good_priv->id};
    ck_assert_int_eq(comp_selection_set(cp, alice, id, twice, 2), ED_EINVAL);
    ck_assert_int_eq(comp_selection_set(cp, carol, id, sel, 1), ED_ENOTFOUND);   /* no team */
    /* choosing the one that looks worst publicly */
    sel[0] = good_priv->id;
    ck_assert_int_eq(comp_selection_set(cp, alice, id, sel, 1), 0);
    fake_now = s.selection_deadline;
    sel[0] = good_pub->id;
    ck_assert_int_eq(comp_selection_set(cp, alice, id, sel, 1), ED_ECONFLICT);
    fake_now = s.end_at;
    ck_assert_int_eq(comp_leaderboard_get(&p, cp, dave, id, COMP_BOARD_PRIVATE, 0, 10), 0);
    ck_assert_uint_eq(p->count, 2);
    ck_assert_int_eq(p->items[0].team_id, good_priv->team_id);
    ck_assert_str_eq(p->items[0].submission_id, good_priv->id);
    ck_assert_double_eq_tol(p->items[0].score, 1.0, 1e-12);
    comp_board_page_free(p);
    comp_submission_free(good_pub);
    comp_submission_free(good_priv);
    comp_submission_free(other);
    free(pub);
    free(priv);
    free(mid);
}
END_TEST

START_TEST(ties_go_to_the_earlier_submission_and_lower_is_better_for_rmse)
{
    static const char *const targets[] = {"y"};
    comp_spec s = base_spec();
    comp_competition *k = NULL;
    char id[COMP_ID_LEN], text[64];
    comp_board_page *p = NULL;
    comp_submission *xa, *xb, *xc;

    s.metric = "rmse";
    s.target_columns = targets;
    ck_assert_int_eq(comp_competition_create(&k, cp, host, &s), 0);
    snprintf(id, sizeof(id), "%s", k->id);
    ck_assert(!k->higher_is_better);
    comp_competition_free(k);
    int fd = text_fd("id,y\n1,1.0\n2,2.0\n3,3.0\n4,4.0\n");
    ck_assert_int_eq(comp_truth_put_fd(cp, host, id, fd), 0);
    close(fd);
    fake_now = s.start_at;
    accept_all(id);
    snprintf(text, sizeof(text), "id,y\n1,1.5\n2,2.5\n3,3.5\n4,4.5\n");
    xb = submit_ok(bob, id, text);            /* earlier, same score */
    fake_now += 1000;
    xa = submit_ok(alice, id, text);
    xc = submit_ok(carol, id, "id,y\n1,1\n2,2\n3,3\n4,4\n");   /* exact: rmse 0, best */
    work_all();
    ck_assert_int_eq(comp_leaderboard_get(&p, cp, dave, id, COMP_BOARD_PUBLIC, 0, 10), 0);
    ck_assert_uint_eq(p->count, 3);
    ck_assert_int_eq(p->items[0].team_id, xc->team_id);
    ck_assert_int_eq(p->items[1].team_id, xb->team_id);
    ck_assert_int_eq(p->items[2].team_id, xa->team_id);
    comp_board_page_free(p);
    /* paging */
    ck_assert_int_eq(comp_leaderboard_get(&p, cp, dave, id, COMP_BOARD_PUBLIC, 2, 1), 0);
    ck_assert_uint_eq(p->count, 1);
    ck_assert_int_eq(p->items[0].rank, 3);
    ck_assert_int_eq(p->total, 3);
    comp_board_page_free(p);
    /* a team's best is kept: a worse later one does not replace it */
    comp_submission_free(submit_ok(carol, id, "id,y\n1,9\n2,9\n3,9\n4,9\n"));
    work_all();
    comp_board_entry e;
    ck_assert_int_eq(comp_leaderboard_rank(&e, cp, dave, id, COMP_BOARD_PUBLIC, xc->team_id), 0);
    ck_assert_int_eq(e.rank, 1);
    ck_assert_str_eq(e.submission_id, xc->id);
    comp_board_entry_clear(&e);
    comp_submission_free(xa);
    comp_submission_free(xb);
    comp_submission_free(xc);
}
END_TEST

/* The participant-facing functions never carry a private score or a
 * truth value: a canary label in the truth never shows in anything a
 * participant gets back before the end. */
START_TEST(canary_in_the_truth_never_reaches_a_participant)
{
    comp_spec s = base_spec();
    comp_competition *k = NULL;
    char id[COMP_ID_LEN];
    const char *canary = "CANARY7f3e";
    char truth[4096], sub[4096];
    size_t n = 0, m = 0;
    comp_submission_list *l = NULL;
    comp_board_page *p = NULL;

    ck_assert_int_eq(comp_competition_create(&k, cp, host, &s), 0);
    snprintf(id, sizeof(id), "%s", k->id);
    comp_competition_free(k);
    n += (size_t)snprintf(truth + n, sizeof(truth) - n, "id,label\n");
    m += (size_t)snprintf(sub + m, sizeof(sub) - m, "id,label\n");
    for (int i = 0; i < 50; i++) {
        n += (size_t)snprintf(truth + n, sizeof(truth) - n, "%d,%s\n", i, i == 7 ? canary : (i % 2 ? "b" : "a"));
        m += (size_t)snprintf(sub + m, sizeof(sub) - m, "%d,%s\n", i, i % 2 ? "b" : "a");
    }
    int fd = text_fd(truth);
    ck_assert_int_eq(comp_truth_put_fd(cp, host, id, fd), 0);
    close(fd);
    fake_now = s.start_at;
    accept_all(id);
    comp_submission_free(submit_ok(alice, id, sub));
    comp_submission_free(submit_ok(alice, id, "id,label\n0,a\n"));            /* invalid: missing rows */
    comp_submission_free(submit_ok(alice, id, "id,label\n0,a\n0,a\n"));       /* duplicate */
    comp_submission_free(submit_ok(alice, id, "id,lbl\n0,a\n"));              /* wrong column */
    work_all();
    ck_assert_int_eq(comp_submission_list_get(&l, cp, alice, id, 0, 0), 0);
    ck_assert_uint_eq(l->count, 4);
    for (size_t i = 0; i < l->count; i++) {
        comp_submission *x = l->items[i];
        if (x->error_message != NULL)
            ck_assert_msg(strstr(x->error_message, canary) == NULL, "canary in '%s'", x->error_message);
        if (x->log_tail != NULL)
            ck_assert(strstr(x->log_tail, canary) == NULL);
    }
    comp_submission_list_free(l);
    ck_assert_int_eq(comp_leaderboard_get(&p, cp, alice, id, COMP_BOARD_PUBLIC, 0, 10), 0);
    for (size_t i = 0; i < p->count; i++)
        ck_assert(strstr(p->items[i].team_name, canary) == NULL);
    comp_board_page_free(p);
    /* the truth file is the server's alone */
    char path[256];
    snprintf(path, sizeof(path), "%s/competitions/%s/truth.csv", fixture_dir, id);
    if (getuid() == 0) {
        pid_t pid = fork();
        if (pid == 0) {
            if (setuid(UNIT_NOBODY) != 0)
                _exit(2);
            _exit(fopen(path, "r") == NULL ? 0 : 1);
        }
        int status;
        waitpid(pid, &status, 0);
        ck_assert_int_eq(WEXITSTATUS(status), 0);
    }
}
END_TEST

/* A hidden board with no public rows: scores are private only, the public
 * board stays empty, the private one ranks the latest selection_max. */
START_TEST(hidden_board_without_public_rows_ranks_only_at_the_end)
{
    comp_spec s = base_spec();
    char id[COMP_ID_LEN];
    char *good = sub_text(100, 100), *bad = sub_text(100, 10);
    comp_submission *xa, *xb, *g;
    comp_board_page *p = NULL;

    s.mode = COMP_MODE_HIDDEN;
    s.public_fraction = 0;
    make_comp(id, &s);
    accept_all(id);
    xa = submit_ok(alice, id, bad);
    xb = submit_ok(bob, id, good);
    work_all();
    g = reget(alice, id, xa->id);
    ck_assert_int_eq(g->status, COMP_SCORED);
    ck_assert(!g->has_public_score);
    comp_submission_free(g);
    ck_assert_int_eq(comp_leaderboard_get(&p, cp, host, id, COMP_BOARD_PUBLIC, 0, 10), 0);
    ck_assert_uint_eq(p->count, 0);
    comp_board_page_free(p);
    fake_now = s.end_at;
    ck_assert_int_eq(comp_leaderboard_get(&p, cp, alice, id, COMP_BOARD_PRIVATE, 0, 10), 0);
    ck_assert_uint_eq(p->count, 2);
    ck_assert_int_eq(p->items[0].team_id, xb->team_id);
    ck_assert_double_eq_tol(p->items[0].score, 1.0, 1e-12);
    comp_board_page_free(p);
    comp_submission_free(xa);
    comp_submission_free(xb);
    free(good);
    free(bad);
}
END_TEST

int main(void)
{
    const TTest *tests[] = {submission_is_scored_and_ranked, bad_submissions_are_refused,
                            invalid_submission_gives_its_slot_back_unless_configured,
                            caps_daily_reset_at_midnight_utc_and_total,
                            twenty_concurrent_submissions_against_cap_five_accept_five,
                            watchdog_retries_once_then_fails_and_refunds_once, code_failure_classes_give_the_slot_back,
                            after_a_crash_every_inflight_submission_reaches_a_final_state,
                            worker_thread_scores_in_the_background, board_modes_own_score_and_hidden,
                            selection_decides_the_private_board,
                            ties_go_to_the_earlier_submission_and_lower_is_better_for_rmse,
                            canary_in_the_truth_never_reaches_a_participant,
                            hidden_board_without_public_rows_ranks_only_at_the_end, NULL};
    return unit_tests_run("competitions_submit", 0, comp_setup, comp_teardown, tests);
}
