/* Unit tests for competitions/: settings, hosts, the ground truth and teams,
 * against a real SQLite store and data directory. */
#include "comp.h"
#include "score.h"

#include "ed_error.h"
#include "ed_store.h"

#include <check.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../support/unit_util.h"
#include "comp_fixture.h"

static void expect_refused(const comp_spec *s, int code, const char *words)
{
    int err = comp_spec_check(s);
    ck_assert_msg(err == code, "got %d (%s), want %d", err, ed_error_last(), code);
    ck_assert_msg(strstr(ed_error_last(), words) != NULL, "'%s' does not name '%s'", ed_error_last(), words);
}

START_TEST(spec_refuses_contradictions_naming_the_fields)
{
    comp_spec s = base_spec();
    static const char *const two[] = {"a", "b"}, *const id_twice[] = {"id"};

    ck_assert_int_eq(comp_spec_check(&s), 0);
    s.public_fraction = 0;
    expect_refused(&s, ED_EUNPROC, "public_fraction");
    s.mode = COMP_MODE_HIDDEN;          /* hidden with no public rows is coherent */
    ck_assert_int_eq(comp_spec_check(&s), 0);
    s = base_spec();
    s.public_fraction = 1;
    expect_refused(&s, ED_EUNPROC, "private");
    s = base_spec();
    s.selection_deadline = s.end_at + 1;
    expect_refused(&s, ED_EUNPROC, "selection_deadline");
    s = base_spec();
    s.merge_deadline = s.start_at;
    expect_refused(&s, ED_EUNPROC, "merge_deadline");
    s = base_spec();
    s.merge_deadline = s.selection_deadline + 1;
    expect_refused(&s, ED_EUNPROC, "merge_deadline");
    s = base_spec();
    s.end_at = s.start_at - 1;
    expect_refused(&s, ED_EUNPROC, "start_at");
    s = base_spec();
    s.daily_cap = 0;
    expect_refused(&s, ED_EINVAL, "daily_cap");
    s = base_spec();
    s.total_cap = 2;
    expect_refused(&s, ED_EUNPROC, "total_cap");
    s = base_spec();
    s.metric = "map@k";
    expect_refused(&s, ED_EUNPROC, "k");
    s.k = 5;
    ck_assert_int_eq(comp_spec_check(&s), 0);
    s.metric = "accuracy";
    expect_refused(&s, ED_EUNPROC, "k is only");
    s = base_spec();
    s.metric = "r2";
    expect_refused(&s, ED_EINVAL, "metric");
    s.metric = "map@5";                 /* the API names it map@k with k apart */
    expect_refused(&s, ED_EINVAL, "metric");
    s = base_spec();
    s.target_columns = two;
    s.ntargets = 2;
    expect_refused(&s, ED_EUNPROC, "target_columns");
    s.target_columns = id_twice;
    s.ntargets = 1;
    expect_refused(&s, ED_EUNPROC, "id_column");
    s = base_spec();
    s.title = "";
    expect_refused(&s, ED_EINVAL, "title");
    s = base_spec();
    s.title = "bad\x01title";
    expect_refused(&s, ED_EINVAL, "title");
    s = base_spec();
    s.max_team_size = 0;
    expect_refused(&s, ED_EINVAL, "max_team_size");
    s = base_spec();
    s.code.charged = true;
    expect_refused(&s, ED_EUNPROC, "code_competition");
    s.code.enabled = true;
    s.code.max_runtime_s = 600;
    s.code.output_path = "../etc/passwd";
    expect_refused(&s, ED_EINVAL, "output_path");
    s.code.output_path = "submission.csv";
    ck_assert_int_eq(comp_spec_check(&s), 0);
}
END_TEST

START_TEST(only_hosts_create_and_slugs_are_unique)
{
    comp_spec s = base_spec();
    comp_competition *k = NULL, *g = NULL;
    comp_competition_list *l = NULL;

    ck_assert_int_eq(comp_competition_create(&k, cp, alice, &s), ED_EPERM);
    ck_assert_int_eq(comp_host_add(cp, alice, alice), ED_EPERM);   /* only an admin makes hosts */
    ck_assert(!comp_is_host(cp, alice));
    ck_assert(comp_is_host(cp, admin));
    ck_assert_int_eq(comp_host_add(cp, admin, 999999), ED_ENOTFOUND);
    ck_assert_int_eq(comp_competition_create(&k, cp, host, &s), 0);
    ck_assert_str_eq(k->slug, "digits");
    ck_assert(k->higher_is_better);
    ck_assert(k->can_edit);
    ck_assert(!k->has_truth);
    ck_assert_int_eq(k->selection_max, 2);
    ck_assert_int_eq(comp_competition_create(&g, cp, host, &s), ED_EEXISTS);
    ck_assert_int_eq(comp_competition_get(&g, cp, alice, "digits"), 0);
    ck_assert_str_eq(g->id, k->id);
    ck_assert(!g->can_edit);
    ck_assert_str_eq(g->target_columns[0], "label");
    comp_competition_free(g);
    ck_assert_int_eq(comp_competition_get(&g, cp, alice, "nope"), ED_ENOTFOUND);
    /* an admin edits any competition, a participant none */
    s.title = "Digits 2";
    ck_assert_int_eq(comp_competition_update(&g, cp, alice, k->id, &s), ED_EPERM);
    ck_assert_int_eq(comp_competition_update(&g, cp, admin, k->id, &s), 0);
    ck_assert_str_eq(g->title, "Digits 2");
    ck_assert_str_eq(g->slug, "digits");
    comp_competition_free(g);
    ck_assert_int_eq(comp_host_remove(cp, admin, host), 0);
    s.slug = "other";
    ck_assert_int_eq(comp_competition_create(&g, cp, host, &s), ED_EPERM);
    ck_assert_int_eq(comp_competition_list_get(&l, cp, alice, 0, 0), 0);
    ck_assert_uint_eq(l->count, 1);
    comp_competition_list_free(l);
    comp_competition_free(k);
}
END_TEST

START_TEST(scoring_fields_are_fixed_once_started)
{
    comp_spec s = base_spec();
    comp_competition *k = NULL, *g = NULL;

    ck_assert_int_eq(comp_competition_create(&k, cp, host, &s), 0);
    s.metric = "f1_macro";
    ck_assert_int_eq(comp_competition_update(&g, cp, host, k->id, &s), 0);
    ck_assert_str_eq(g->metric, "f1_macro");
    comp_competition_free(g);
    fake_now = s.start_at;
    s.metric = "accuracy";
    ck_assert_int_eq(comp_competition_update(&g, cp, host, k->id, &s), ED_ECONFLICT);
    ck_assert(strstr(ed_error_last(), "metric") != NULL);
    s.metric = "f1_macro";
    s.public_fraction = 0.4;
    ck_assert_int_eq(comp_competition_update(&g, cp, host, k->id, &s), ED_ECONFLICT);
    ck_assert(strstr(ed_error_last(), "public_fraction") != NULL);
    s.public_fraction = 0.5;
    s.rules = "New rules.";
    s.daily_cap = 10;
    ck_assert_int_eq(comp_competition_update(&g, cp, host, k->id, &s), 0);
    ck_assert_int_eq(g->daily_cap, 10);
    comp_competition_free(g);
    comp_competition_free(k);
}
END_TEST

static int refuse_dataset(void *payload, int64_t user, const char *dataset_id, int64_t version)
{
    (void)payload;
    (void)user;
    if (strcmp(dataset_id, "good") == 0 && version == 1)
        return 0;
    return ed_error_set(ED_ENOTFOUND, "dataset %s version %lld not found", dataset_id, (long long)version);
}

START_TEST(dataset_version_is_checked)
{
    comp_spec s = base_spec();
    comp_competition *k = NULL;

    comp_free(cp);
    fixture_hooks.dataset_check = refuse_dataset;
    fixture_open();
    s.dataset_id = "missing";
    s.dataset_version = 1;
    ck_assert_int_eq(comp_competition_create(&k, cp, host, &s), ED_ENOTFOUND);
    s.dataset_id = "good";
    s.dataset_version = 0;
    ck_assert_int_eq(comp_competition_create(&k, cp, host, &s), ED_EINVAL);
    s.dataset_version = 1;
    ck_assert_int_eq(comp_competition_create(&k, cp, host, &s), 0);
    ck_assert_str_eq(k->dataset_id, "good");
    /* the version is in use until the competition ends */
    char why[64] = "";
    ck_assert_int_eq(comp_dataset_in_use(why, sizeof(why), "good", 1, cp), 1);
    ck_assert_str_eq(why, "competition 'digits'");
    ck_assert_int_eq(comp_dataset_in_use(why, sizeof(why), "good", 0, cp), 1);
    ck_assert_int_eq(comp_dataset_in_use(why, sizeof(why), "good", 2, cp), 0);
    ck_assert_int_eq(comp_dataset_in_use(why, sizeof(why), "other", 0, cp), 0);
    fake_now = s.end_at;
    ck_assert_int_eq(comp_dataset_in_use(why, sizeof(why), "good", 1, cp), 0);
    comp_competition_free(k);
    fixture_hooks.dataset_check = NULL;
}
END_TEST

START_TEST(truth_is_checked_stored_0400_and_fixed_after_start)
{
    comp_spec s = base_spec();
    comp_competition *k = NULL, *g = NULL;
    char path[256];
    struct stat sb;
    int fd, tfd;

    ck_assert_int_eq(comp_competition_create(&k, cp, host, &s), 0);
    snprintf(path, sizeof(path), "%s/competitions/%s/truth.csv", fixture_dir, k->id);
    fd = text_fd("ident,label\n1,a\n2,b\n");            /* no id column */
    ck_assert_int_eq(comp_truth_put_fd(cp, host, k->id, fd), ED_EINVAL);
    close(fd);
    ck_assert_int_ne(stat(path, &sb), 0);
    fd = text_fd("id,label\n1,a\n1,b\n");               /* duplicate id */
    ck_assert_int_eq(comp_truth_put_fd(cp, host, k->id, fd), ED_EINVAL);
    close(fd);
    fd = text_fd("id,label\n1,a\n2,b\n");
    ck_assert_int_eq(comp_truth_put_fd(cp, alice, k->id, fd), ED_EPERM);
    close(fd);
    ck_assert_int_eq(comp_truth_open(&tfd, cp, k->id), ED_ENOTFOUND);
    put_truth(k->id, 100);
    ck_assert_int_eq(stat(path, &sb), 0);
    ck_assert_int_eq(sb.st_mode & 07777, 0400);
    ck_assert_int_eq(comp_competition_get(&g, cp, alice, k->id), 0);
    ck_assert(g->has_truth);
    ck_assert_int_eq(g->truth_rows, 100);
    comp_competition_free(g);
    ck_assert_int_eq(comp_truth_open(&tfd, cp, k->id), 0);
    close(tfd);
    /* a replacement before the start is fine; after, refused */
    put_truth(k->id, 50);
    fake_now = s.start_at;
    fd = text_fd("id,label\n1,a\n2,b\n");
    ck_assert_int_eq(comp_truth_put_fd(cp, host, k->id, fd), ED_ECONFLICT);
    close(fd);
    ck_assert_int_eq(comp_truth_put_fd(cp, host, "00000000-0000-4000-8000-000000000000", 0), ED_ENOTFOUND);
    comp_competition_free(k);
}
END_TEST

START_TEST(split_is_deterministic_per_seed)
{
    uint8_t a[1000], b[1000];
    size_t pub = 0;

    ck_assert_int_eq(comp_split_mask(a, 1000, 42, 0.3), 0);
    ck_assert_int_eq(comp_split_mask(b, 1000, 42, 0.3), 0);
    ck_assert_mem_eq(a, b, sizeof(a));
    for (size_t i = 0; i < 1000; i++)
        pub += a[i];
    ck_assert_uint_eq(pub, 300);
    ck_assert_int_eq(comp_split_mask(b, 1000, 43, 0.3), 0);
    ck_assert(memcmp(a, b, sizeof(a)) != 0);
}
END_TEST

START_TEST(teams_one_per_user_invite_join_leave)
{
    comp_spec s = base_spec();
    char id[COMP_ID_LEN];
    comp_team *t = NULL, *u = NULL;
    comp_submission *x = NULL;
    char *sub = sub_text(100, 100);

    s.max_team_size = 2;
    make_comp(id, &s);
    ck_assert_int_eq(comp_team_create(&t, cp, alice, id, "A-team"), ED_EPERM);   /* rules first */
    ck_assert_int_eq(comp_rules_accept(cp, alice, id), 0);
    ck_assert_int_eq(comp_rules_accept(cp, alice, id), 0);                       /* idempotent */
    ck_assert_int_eq(comp_rules_accept(cp, alice, "nope"), ED_ENOTFOUND);
    ck_assert_int_eq(comp_team_create(&t, cp, alice, id, ""), ED_EINVAL);
    ck_assert_int_eq(comp_team_create(&t, cp, alice, id, "A-team"), 0);
    ck_assert_uint_eq(t->nmembers, 1);
    ck_assert_str_eq(t->members[0].username, "alice");
    ck_assert_int_eq(comp_team_create(&u, cp, alice, id, "Another"), ED_ECONFLICT);
    ck_assert_int_eq(comp_rules_accept(cp, bob, id), 0);
    ck_assert_int_eq(comp_team_create(&u, cp, bob, id, "A-team"), ED_EEXISTS);
    /* invitations: only members invite; joining needs one */
    ck_assert_int_eq(comp_team_invite(cp, bob, id, t->id, carol), ED_EPERM);
    ck_assert_int_eq(comp_team_join(cp, bob, id, t->id), ED_ENOTFOUND);
    ck_assert_int_eq(comp_team_invite(cp, alice, id, t->id, 999999), ED_ENOTFOUND);
    ck_assert_int_eq(comp_team_invite(cp, alice, id, t->id, bob), 0);
    ck_assert_int_eq(comp_team_invite(cp, alice, id, t->id, carol), 0);
    ck_assert_int_eq(comp_team_join(cp, bob, id, t->id), 0);
    ck_assert_int_eq(comp_rules_accept(cp, carol, id), 0);
    ck_assert_int_eq(comp_team_join(cp, carol, id, t->id), ED_ECONFLICT);         /* full (2) */
    ck_assert(strstr(ed_error_last(), "full") != NULL);
    comp_team_free(t);
    ck_assert_int_eq(comp_team_mine(&t, cp, bob, id), 0);
    ck_assert_uint_eq(t->nmembers, 2);
    /* leaving a team without submissions is fine; with one, refused */
    ck_assert_int_eq(comp_team_leave(cp, bob, id), 0);
    ck_assert_int_eq(comp_team_mine(&u, cp, bob, id), ED_ENOTFOUND);
    ck_assert_int_eq(submit_text(&x, alice, id, sub), 0);
    ck_assert_int_eq(x->team_id, t->id);
    comp_submission_free(x);
    ck_assert_int_eq(comp_team_leave(cp, alice, id), ED_ECONFLICT);
    /* past the merge deadline nobody joins */
    ck_assert_int_eq(comp_team_invite(cp, alice, id, t->id, dave), 0);
    ck_assert_int_eq(comp_rules_accept(cp, dave, id), 0);
    fake_now = s.merge_deadline;
    ck_assert_int_eq(comp_team_join(cp, dave, id, t->id), ED_ECONFLICT);
    ck_assert_int_eq(comp_team_invite(cp, alice, id, t->id, carol), ED_ECONFLICT);
    comp_team_free(t);
    free(sub);
}
END_TEST

START_TEST(merge_needs_both_sides_and_must_fit_the_caps)
{
    comp_spec s = base_spec();
    char id[COMP_ID_LEN];
    comp_team *a = NULL, *b = NULL, *m = NULL;
    comp_submission *x = NULL;
    char *sub = sub_text(100, 60);
    bool merged = false;

    s.daily_cap = 3;
    s.max_team_size = 3;
    make_comp(id, &s);
    int64_t users[] = {alice, bob, carol};
    for (int i = 0; i < 3; i++)
        ck_assert_int_eq(comp_rules_accept(cp, users[i], id), 0);
    ck_assert_int_eq(comp_team_create(&a, cp, alice, id, "A"), 0);
    ck_assert_int_eq(comp_team_create(&b, cp, bob, id, "B"), 0);
    for (int i = 0; i < 2; i++) {
        ck_assert_int_eq(submit_text(&x, alice, id, sub), 0);
        comp_submission_free(x);
        ck_assert_int_eq(submit_text(&x, bob, id, sub), 0);
        comp_submission_free(x);
    }
    /* 4 submissions today together, over the daily cap of 3 */
    ck_assert_int_eq(comp_team_merge(&merged, cp, alice, id, a->id, b->id), ED_ECONFLICT);
    ck_assert(strstr(ed_error_last(), "daily cap") != NULL);
    ck_assert_int_eq(comp_team_merge(&merged, cp, carol, id, a->id, b->id), ED_EPERM);
    ck_assert_int_eq(comp_team_merge(&merged, cp, alice, id, a->id, a->id), ED_EINVAL);
    ck_assert_int_eq(comp_team_merge(&merged, cp, alice, id, a->id, 424242), ED_ENOTFOUND);
    /* the next day the counts fit: A asks, B accepts */
    fake_now += DAY;
    ck_assert_int_eq(comp_team_merge(&merged, cp, alice, id, a->id, b->id), 0);
    ck_assert(!merged);
    ck_assert_int_eq(comp_team_merge(&merged, cp, bob, id, b->id, a->id), 0);
    ck_assert(merged);
    ck_assert_int_eq(comp_team_mine(&m, cp, alice, id), 0);
    ck_assert_uint_eq(m->nmembers, 2);
    ck_assert_int_eq(m->submissions, 4);
    comp_team_free(m);
    ck_assert_int_eq(comp_team_mine(&m, cp, bob, id), 0);
    ck_assert_int_eq(m->id, b->id);
    comp_team_free(m);
    ck_assert_int_eq(comp_team_merge(&merged, cp, bob, id, b->id, a->id), ED_ENOTFOUND);   /* gone */
    /* size: a team of 2 and one of 2 do not fit in 3 */
    ck_assert_int_eq(comp_rules_accept(cp, dave, id), 0);
    comp_team_free(a);
    ck_assert_int_eq(comp_team_create(&a, cp, carol, id, "C"), 0);
    ck_assert_int_eq(comp_team_invite(cp, carol, id, a->id, dave), 0);
    ck_assert_int_eq(comp_team_join(cp, dave, id, a->id), 0);
    ck_assert_int_eq(comp_team_merge(&merged, cp, carol, id, a->id, b->id), ED_ECONFLICT);
    ck_assert(strstr(ed_error_last(), "members") != NULL);
    fake_now = s.merge_deadline;
    ck_assert_int_eq(comp_team_merge(&merged, cp, carol, id, a->id, b->id), ED_ECONFLICT);
    ck_assert(strstr(ed_error_last(), "deadline") != NULL);
    comp_team_free(a);
    comp_team_free(b);
    free(sub);
}
END_TEST

int main(void)
{
    const TTest *tests[] = {spec_refuses_contradictions_naming_the_fields, only_hosts_create_and_slugs_are_unique,
                            scoring_fields_are_fixed_once_started, dataset_version_is_checked,
                            truth_is_checked_stored_0400_and_fixed_after_start, split_is_deterministic_per_seed,
                            teams_one_per_user_invite_join_leave, merge_needs_both_sides_and_must_fit_the_caps, NULL};
    return unit_tests_run("competitions", 0, comp_setup, comp_teardown, tests);
}
