/* Unit tests for the scheduling policy (scheduler/policy.c): order, caps,
 * backfill, preemption choice, queue positions and ETAs. */
#include "sched.h"

#include "ed_error.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define NOW 1000000000LL
#define MIN 60000LL

static sched_item item(int64_t id, int64_t user, int weight, int cls, int units, int64_t usage, int64_t enq,
                       int64_t est)
{
    sched_item it = {id, user, weight, cls, units, 0, usage, enq, est};
    return it;
}

static sched_run run(int64_t id, int64_t user, int weight, int cls, int units, int64_t started, int64_t end_by,
                     bool preemptible)
{
    sched_run r = {id, user, weight, cls, units, started, end_by, preemptible, false};
    return r;
}

typedef struct plan_out {
    int64_t start[64], preempt[64];
    sched_decision d;
} plan_out;

static int plan(plan_out *p, const sched_item *q, size_t nq, const sched_run *r, size_t nr,
                const sched_pool *pools, int ncls)
{
    p->d.start = p->start;
    p->d.preempt = p->preempt;
    return sched_plan(&p->d, q, nq, r, nr, pools, ncls, NOW);
}

START_TEST(order_is_weight_then_fair_share_then_age)
{
    sched_pool pools[1] = {{10, false}};
    sched_item q[] = {
        item(1, 1, 1, 0, 1, 0, 100, MIN),        /* low tier, oldest */
        item(2, 2, 4, 0, 1, 5000, 300, MIN),     /* premium, more usage */
        item(3, 3, 4, 0, 1, 1000, 400, MIN),     /* premium, less usage */
        item(4, 4, 4, 0, 1, 1000, 200, MIN),     /* premium, less usage, older */
        item(5, 5, 2, 0, 1, 0, 50, MIN),
    };
    plan_out p;

    ck_assert_int_eq(plan(&p, q, 5, NULL, 0, pools, 1), 0);
    ck_assert_int_eq(p.d.nstart, 5);
    ck_assert_int_eq(p.start[0], 4);
    ck_assert_int_eq(p.start[1], 3);
    ck_assert_int_eq(p.start[2], 2);
    ck_assert_int_eq(p.start[3], 5);
    ck_assert_int_eq(p.start[4], 1);
    ck_assert_int_eq(p.d.npreempt, 0);
}
END_TEST

START_TEST(capacity_limits_how_many_start)
{
    sched_pool pools[1] = {{2, false}};
    sched_item q[] = {item(1, 1, 1, 0, 1, 0, 1, MIN), item(2, 2, 1, 0, 1, 0, 2, MIN), item(3, 3, 1, 0, 1, 0, 3, MIN)};
    sched_run r[] = {run(9, 9, 1, 0, 1, NOW - MIN, NOW + MIN, true)};
    plan_out p;

    ck_assert_int_eq(plan(&p, q, 3, r, 1, pools, 1), 0);
    ck_assert_int_eq(p.d.nstart, 1);
    ck_assert_int_eq(p.start[0], 1);
}
END_TEST

START_TEST(user_at_tier_cap_is_skipped_and_others_start)
{
    sched_pool pools[1] = {{4, false}};
    sched_item q[] = {item(1, 7, 1, 0, 1, 0, 1, MIN), item(2, 7, 1, 0, 1, 0, 2, MIN), item(3, 8, 1, 0, 1, 0, 3, MIN)};
    sched_run r[] = {run(9, 7, 1, 0, 1, NOW - MIN, NOW + MIN, true)};
    plan_out p;

    q[0].user_cap = q[1].user_cap = 2;   /* user 7 runs one: one more may start */
    q[2].user_cap = 1;
    ck_assert_int_eq(plan(&p, q, 3, r, 1, pools, 1), 0);
    ck_assert_int_eq(p.d.nstart, 2);
    ck_assert_int_eq(p.start[0], 1);
    ck_assert_int_eq(p.start[1], 3);
}
END_TEST

START_TEST(backfill_starts_short_item_that_ends_before_the_reservation)
{
    /* 2 GPUs: one busy until NOW+10min. A wants 2 (reserved at +10min);
     * B is short (5 min) and may use the free GPU; C is long and may not. */
    sched_pool pools[1] = {{2, true}};
    sched_item q[] = {item(1, 1, 4, 0, 2, 0, 1, 60 * MIN), item(2, 2, 1, 0, 1, 0, 2, 5 * MIN),
                      item(3, 3, 1, 0, 1, 0, 3, 60 * MIN)};
    sched_run r[] = {run(9, 9, 4, 0, 1, NOW - MIN, NOW + 10 * MIN, false)};
    plan_out p;

    ck_assert_int_eq(plan(&p, q, 3, r, 1, pools, 1), 0);
    ck_assert_int_eq(p.d.nstart, 1);
    ck_assert_int_eq(p.start[0], 2);
    /* reorder: the long one first in age; still not started */
    q[1].enqueued_at = 9;
    ck_assert_int_eq(plan(&p, q, 3, r, 1, pools, 1), 0);
    ck_assert_int_eq(p.d.nstart, 1);
    ck_assert_int_eq(p.start[0], 2);
}
END_TEST

START_TEST(backfill_uses_units_the_reservation_does_not_need)
{
    /* 4 GPUs, 2 busy until +10min; A wants 3 -> at +10min 4 free, 1 spare.
     * B (long, 1 unit) fits in the spare; C (long, 1 unit) then does not. */
    sched_pool pools[1] = {{4, true}};
    sched_item q[] = {item(1, 1, 4, 0, 3, 0, 1, 60 * MIN), item(2, 2, 1, 0, 1, 0, 2, 60 * MIN),
                      item(3, 3, 1, 0, 1, 0, 3, 60 * MIN)};
    sched_run r[] = {run(9, 9, 4, 0, 2, NOW - MIN, NOW + 10 * MIN, false)};
    plan_out p;

    ck_assert_int_eq(plan(&p, q, 3, r, 1, pools, 1), 0);
    ck_assert_int_eq(p.d.nstart, 1);
    ck_assert_int_eq(p.start[0], 2);
}
END_TEST

START_TEST(preemption_picks_lowest_weight_then_most_recent)
{
    sched_pool pools[1] = {{3, true}};
    sched_item q[] = {item(1, 1, 4, 0, 1, 0, 1, MIN)};
    sched_run r[] = {
        run(10, 2, 1, 0, 1, NOW - 50 * MIN, NOW + MIN, true),   /* free tier, older */
        run(11, 3, 2, 0, 1, NOW - 1 * MIN, NOW + MIN, true),    /* pro tier */
        run(12, 4, 1, 0, 1, NOW - 5 * MIN, NOW + MIN, true),    /* free tier, newest */
    };
    plan_out p;

    ck_assert_int_eq(plan(&p, q, 1, r, 3, pools, 1), 0);
    ck_assert_int_eq(p.d.nstart, 0);
    ck_assert_int_eq(p.d.npreempt, 1);
    ck_assert_int_eq(p.preempt[0], 12);
    /* wanting 3 GPUs takes all lower tiers in that order */
    q[0].units = 3;
    ck_assert_int_eq(plan(&p, q, 1, r, 3, pools, 1), 0);
    ck_assert_int_eq(p.d.npreempt, 3);
    ck_assert_int_eq(p.preempt[0], 12);
    ck_assert_int_eq(p.preempt[1], 10);
    ck_assert_int_eq(p.preempt[2], 11);
}
END_TEST

START_TEST(preemption_spares_equal_tiers_interactive_work_and_cpu_classes)
{
    sched_pool pools[2] = {{1, true}, {1, false}};
    sched_item q[] = {item(1, 1, 2, 0, 1, 0, 1, MIN)};
    sched_run same[] = {run(10, 2, 2, 0, 1, NOW - MIN, NOW + MIN, true)};
    sched_run inter[] = {run(10, 2, 1, 0, 1, NOW - MIN, NOW + MIN, false)};
    sched_run cpu[] = {run(10, 2, 1, 1, 1, NOW - MIN, NOW + MIN, true)};
    plan_out p;

    ck_assert_int_eq(plan(&p, q, 1, same, 1, pools, 2), 0);
    ck_assert_int_eq(p.d.npreempt, 0);
    ck_assert_int_eq(plan(&p, q, 1, inter, 1, pools, 2), 0);
    ck_assert_int_eq(p.d.npreempt, 0);
    q[0].cls = 1;
    ck_assert_int_eq(plan(&p, q, 1, cpu, 1, pools, 2), 0);
    ck_assert_int_eq(p.d.npreempt, 0);
}
END_TEST

START_TEST(preemption_waits_for_victims_already_stopping)
{
    sched_pool pools[1] = {{2, true}};
    sched_item q[] = {item(1, 1, 4, 0, 1, 0, 1, MIN)};
    sched_run r[] = {run(10, 2, 1, 0, 1, NOW - MIN, NOW + MIN, true), run(11, 3, 1, 0, 1, NOW - MIN, NOW + MIN, true)};
    plan_out p;

    r[0].stopping = true;
    ck_assert_int_eq(plan(&p, q, 1, r, 2, pools, 1), 0);
    ck_assert_int_eq(p.d.npreempt, 0);
    ck_assert_int_eq(p.d.nstart, 0);
}
END_TEST

START_TEST(item_larger_than_its_class_never_starts_nor_blocks)
{
    sched_pool pools[1] = {{2, true}};
    sched_item q[] = {item(1, 1, 4, 0, 3, 0, 1, MIN), item(2, 2, 1, 0, 1, 0, 2, MIN)};
    plan_out p;

    ck_assert_int_eq(plan(&p, q, 2, NULL, 0, pools, 1), 0);
    ck_assert_int_eq(p.d.nstart, 1);
    ck_assert_int_eq(p.start[0], 2);
}
END_TEST

START_TEST(plan_rejects_a_class_out_of_range)
{
    sched_pool pools[1] = {{2, true}};
    sched_item q[] = {item(1, 1, 4, 3, 1, 0, 1, MIN)};
    plan_out p;

    ck_assert_int_eq(plan(&p, q, 1, NULL, 0, pools, 1), ED_EINVAL);
    ck_assert_int_eq(plan(&p, q, 0, NULL, 0, pools, 0), ED_EINVAL);
}
END_TEST

START_TEST(queue_position_and_eta_follow_the_queue)
{
    /* class 0: 1 slot busy until +10 min; A (60 min) then B (30 min) wait.
     * class 1: empty, C starts at once. */
    sched_pool pools[2] = {{1, false}, {1, false}};
    sched_item q[] = {item(1, 1, 1, 0, 1, 0, 1, 60 * MIN), item(2, 2, 1, 0, 1, 0, 2, 30 * MIN),
                      item(3, 3, 1, 1, 1, 0, 3, 5 * MIN), item(4, 4, 1, 0, 2, 0, 4, 5 * MIN)};
    sched_run r[] = {run(9, 9, 1, 0, 1, NOW - MIN, NOW + 10 * MIN, true)};
    int pos[4];
    int64_t eta[4];

    ck_assert_int_eq(sched_eta(pos, eta, q, 4, r, 1, pools, 2, NOW), 0);
    ck_assert_int_eq(pos[0], 1);
    ck_assert_int_eq(eta[0], 10 * MIN);
    ck_assert_int_eq(pos[1], 2);
    ck_assert_int_eq(eta[1], 70 * MIN);
    ck_assert_int_eq(pos[2], 1);
    ck_assert_int_eq(eta[2], 0);
    ck_assert_int_eq(pos[3], 3);
    ck_assert_int_eq(eta[3], -1);   /* wants 2 of a class of 1 */
    /* a premium item jumps the queue */
    q[1].weight = 4;
    ck_assert_int_eq(sched_eta(pos, eta, q, 4, r, 1, pools, 2, NOW), 0);
    ck_assert_int_eq(pos[1], 1);
    ck_assert_int_eq(eta[1], 10 * MIN);
    ck_assert_int_eq(pos[0], 2);
    ck_assert_int_eq(eta[0], 40 * MIN);
}
END_TEST

START_TEST(plan_handles_ten_thousand_items_and_starts_in_order)
{
    size_t n = 10000;
    sched_item *q = malloc(n * sizeof(*q));
    int64_t *start = malloc(n * sizeof(*start)), pre[1];
    sched_pool pools[2] = {{100, false}, {8, true}};
    sched_decision d = {start, 0, pre, 0};

    ck_assert_ptr_nonnull(q);
    srand(7);
    for (size_t i = 0; i < n; i++)
        q[i] = item((int64_t)i + 1, rand() % 500 + 1, 1 << (rand() % 3), rand() % 2, 1, rand() % 100000, rand(), MIN);
    ck_assert_int_eq(sched_plan(&d, q, n, NULL, 0, pools, 2, NOW), 0);
    ck_assert_int_eq(d.nstart, 108);
    /* what started is in queue order */
    for (size_t i = 1; i < d.nstart; i++) {
        const sched_item *a = &q[start[i - 1] - 1], *b = &q[start[i] - 1];
        if (a->cls == b->cls)
            ck_assert_int_lt(sched_item_cmp(a, b), 0);
    }
    free(q);
    free(start);
}
END_TEST

/* Random scenarios (EDDY_TEST_SEED replays): whatever the plan, no class
 * goes over capacity, no user over its cap, victims are preemptible running
 * work of lower weight on preemption classes, and positions are 1..n per
 * class. */
START_TEST(random_plans_respect_capacity_caps_and_preemption_rules)
{
    const char *env = getenv("EDDY_TEST_SEED");
    unsigned seed = env ? (unsigned)strtoul(env, NULL, 10) : (unsigned)time(NULL);
    sched_item q[200];
    sched_run r[60];
    int64_t start[200], pre[60], eta[200];
    int pos[200];

    fprintf(stderr, "random_plans: seed %u (EDDY_TEST_SEED=%u replays)\n", seed, seed);
    srand(seed);
    for (int round = 0; round < 300; round++) {
        int ncls = 1 + rand() % 4, nq = rand() % 200, nr = 0, used[4] = {0}, users = 1 + rand() % 20;
        int caps[21];
        sched_pool pools[4];
        sched_decision d = {start, 0, pre, 0};

        for (int u = 0; u <= users; u++)
            caps[u] = rand() % 4;               /* 0: unlimited */
        for (int c = 0; c < ncls; c++)
            pools[c] = (sched_pool){rand() % 9, rand() % 2 == 0};
        for (int i = 0; i < 60; i++) {
            int c = rand() % ncls, units = 1 + rand() % 3;
            if (used[c] + units > pools[c].capacity)
                continue;
            used[c] += units;
            r[nr] = run(1000 + i, 1 + rand() % users, 1 << (rand() % 3), c, units, NOW - rand() % 3600000,
                        NOW + rand() % 3600000, rand() % 2 == 0);
            r[nr].stopping = rand() % 8 == 0;
            nr++;
        }
        for (int i = 0; i < nq; i++) {
            q[i] = item(i + 1, 1 + rand() % users, 1 << (rand() % 3), rand() % ncls, 1 + rand() % 3,
                        rand() % 100000, rand() % 100000, 1000 + rand() % 3600000);
            q[i].user_cap = caps[q[i].user_id];
        }
        ck_assert_int_eq(sched_plan(&d, q, (size_t)nq, r, (size_t)nr, pools, ncls, NOW), 0);
        int load[4] = {0}, count[21] = {0};
        for (int i = 0; i < nr; i++) {
            load[r[i].cls] += r[i].units;
            count[r[i].user_id]++;
        }
        for (size_t k = 0; k < d.nstart; k++) {
            const sched_item *it = &q[start[k] - 1];
            load[it->cls] += it->units;
            count[it->user_id]++;
            if (it->user_cap > 0)
                ck_assert_int_le(count[it->user_id], it->user_cap);
        }
        for (int c = 0; c < ncls; c++)
            ck_assert_int_le(load[c], pools[c].capacity);
        for (size_t k = 0; k < d.npreempt; k++) {
            const sched_run *v = NULL;
            for (int i = 0; i < nr; i++)
                if (r[i].id == pre[k])
                    v = &r[i];
            ck_assert_ptr_nonnull(v);
            ck_assert(v->preemptible && !v->stopping && pools[v->cls].preemption);
            bool someone_higher = false;
            for (int i = 0; i < nq; i++)
                if (q[i].cls == v->cls && q[i].weight > v->weight)
                    someone_higher = true;
            ck_assert(someone_higher);
        }
        ck_assert_int_eq(sched_eta(pos, eta, q, (size_t)nq, r, (size_t)nr, pools, ncls, NOW), 0);
        for (int c = 0; c < ncls; c++) {
            int n = 0;
            bool seen[201] = {false};
            for (int i = 0; i < nq; i++)
                if (q[i].cls == c) {
                    n++;
                    ck_assert_int_ge(pos[i], 1);
                    ck_assert(!seen[pos[i]]);
                    seen[pos[i]] = true;
                    ck_assert(eta[i] >= 0 || q[i].units > pools[c].capacity);
                }
            for (int p = 1; p <= n; p++)
                ck_assert(seen[p]);
        }
    }
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("sched_policy");
    TCase *t = tcase_create("policy");

    tcase_add_test(t, order_is_weight_then_fair_share_then_age);
    tcase_add_test(t, capacity_limits_how_many_start);
    tcase_add_test(t, user_at_tier_cap_is_skipped_and_others_start);
    tcase_add_test(t, backfill_starts_short_item_that_ends_before_the_reservation);
    tcase_add_test(t, backfill_uses_units_the_reservation_does_not_need);
    tcase_add_test(t, preemption_picks_lowest_weight_then_most_recent);
    tcase_add_test(t, preemption_spares_equal_tiers_interactive_work_and_cpu_classes);
    tcase_add_test(t, preemption_waits_for_victims_already_stopping);
    tcase_add_test(t, item_larger_than_its_class_never_starts_nor_blocks);
    tcase_add_test(t, plan_rejects_a_class_out_of_range);
    tcase_add_test(t, queue_position_and_eta_follow_the_queue);
    tcase_add_test(t, plan_handles_ten_thousand_items_and_starts_in_order);
    tcase_add_test(t, random_plans_respect_capacity_caps_and_preemption_rules);
    suite_add_tcase(s, t);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(suite());
    int failed;

    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
