/*
 * comp_leaderboard.c - the competition leaderboard at 10,000 teams and
 * 100,000 scored submissions (issue 16: a top-100 page and one team's rank
 * in under 10 ms each).
 *
 *     bench_comp_leaderboard [TEAMS] [SUBMISSIONS] [ITERS]   (10000 100000 200)
 *
 * A competition is made through comp.h; the users, teams and scored
 * submissions are written straight into the store in one transaction (what
 * 100,000 scorings would leave behind, without spending minutes scoring),
 * and the best-per-team table is filled by the same statement the scoring
 * path runs per team. Then it times, through comp.h: the public top-100
 * page, one team's rank (the worst team, whose rank counts every entry
 * before it, and a middle one), a page deep in the board, the private board
 * computed once after the end, and its top-100 page. Prints `name value`
 * lines: median and p90 in ms.
 */
#include "comp.h"

#include "ed_crypto.h"
#include "ed_error.h"
#include "ed_store.h"
#include "ed_time.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int64_t now_ms = 1800000000000;
static int64_t clock_fn(void *p)
{
    (void)p;
    return now_ms;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void report(const char *name, double *ms, int n)
{
    qsort(ms, (size_t)n, sizeof(double), cmp_d);
    printf("%s_median_ms %.3f\n%s_p90_ms %.3f\n", name, ms[n / 2], name, ms[n * 9 / 10]);
}

static void die(const char *what)
{
    fprintf(stderr, "bench_comp_leaderboard: %s: %s\n", what, ed_error_last());
    exit(1);
}

#define MS(t0) ((double)(ed_mono_ns() - (t0)) / 1e6)

int main(int argc, char **argv)
{
    int teams = argc > 1 ? atoi(argv[1]) : 10000;
    int subs = argc > 2 ? atoi(argv[2]) : 100000;
    int iters = argc > 3 ? atoi(argv[3]) : 200;
    static const char *const targets[] = {"label"};
    char dir[] = "/tmp/eddy-bench-comp-XXXXXX", path[128], id[COMP_ID_LEN];
    comp_hooks hooks = {.now_ms = clock_fn};
    comp_spec s = COMP_SPEC_INIT;
    comp_competition *k = NULL;
    comp_board_page *p = NULL;
    comp_board_entry e;
    ed_store *st;
    sqlite3_stmt *q;
    comp *c;
    double *ms;
    int64_t t0, admin, worst = 0, mid = 0;

    if (teams < 1 || subs < teams || iters < 1) {
        fprintf(stderr, "usage: bench_comp_leaderboard [TEAMS] [SUBMISSIONS >= TEAMS] [ITERS]\n");
        return 2;
    }
    if (mkdtemp(dir) == NULL || ed_crypto_init() < 0)
        return 1;
    snprintf(path, sizeof(path), "%s/eddy.db", dir);
    if (ed_store_open(&st, path) < 0 || comp_open(&c, st, dir, &hooks, NULL) < 0)
        die("open");
    ed_store_exec(st, "INSERT INTO users(username, email, password_hash, role, created_at, updated_at) "
                      "VALUES ('root', 'root@x', 'x', 'admin', 0, 0)");
    admin = sqlite3_last_insert_rowid(ed_store_db(st));
    s.title = "Bench";
    s.start_at = now_ms + 1;
    s.merge_deadline = now_ms + 1000;
    s.selection_deadline = now_ms + 2000;
    s.end_at = now_ms + 3000;
    s.id_column = "id";
    s.target_columns = targets;
    s.ntargets = 1;
    s.metric = "rmse";
    if (comp_competition_create(&k, c, admin, &s) < 0)
        die("create");
    snprintf(id, sizeof(id), "%s", k->id);
    comp_competition_free(k);

    t0 = ed_mono_ns();
    if (ed_store_begin(st) < 0)
        die("begin");
    /* users 2.., one team each, one member each */
    if (ed_store_prepare(&q, st, "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?1) "
                                 "INSERT INTO users(username, email, password_hash, created_at, updated_at) "
                                 "SELECT 'u' || i, 'u' || i || '@x', 'x', 0, 0 FROM n") < 0)
        die("prepare");
    sqlite3_bind_int(q, 1, teams);
    if (sqlite3_step(q) != SQLITE_DONE)
        die("users");
    sqlite3_finalize(q);
    if (ed_store_prepare(&q, st, "INSERT INTO comp_teams (id, comp_id, name, created_at) "
                                 "SELECT id - 1, ?1, 'team ' || (id - 1), 0 FROM users WHERE id > 1") < 0)
        die("prepare");
    sqlite3_bind_text(q, 1, id, -1, SQLITE_STATIC);
    if (sqlite3_step(q) != SQLITE_DONE)
        die("teams");
    sqlite3_finalize(q);
    if (ed_store_prepare(&q, st, "INSERT INTO comp_team_members (comp_id, user_id, team_id, joined_at) "
                                 "SELECT ?1, id, id - 1, 0 FROM users WHERE id > 1") < 0)
        die("prepare");
    sqlite3_bind_text(q, 1, id, -1, SQLITE_STATIC);
    if (sqlite3_step(q) != SQLITE_DONE)
        die("members");
    sqlite3_finalize(q);
    /* submissions spread over the teams, scores with ties, rmse (lower is better) */
    if (ed_store_prepare(&q, st, "WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < ?2 - 1) "
                                 "INSERT INTO comp_submissions (id, comp_id, team_id, user_id, created_at, day_start, "
                                 "kind, status, public_score, private_score, metric_version, counted) "
                                 "SELECT printf('s%09d', i), ?1, (i % ?3) + 1, (i % ?3) + 2, ?4 + i, 0, 'csv', "
                                 "'scored', ((i * 7919) % 100003) / 1000.0, ((i * 104729) % 100003) / 1000.0, 1, 1 "
                                 "FROM n") < 0)
        die("prepare");
    sqlite3_bind_text(q, 1, id, -1, SQLITE_STATIC);
    sqlite3_bind_int(q, 2, subs);
    sqlite3_bind_int(q, 3, teams);
    sqlite3_bind_int64(q, 4, now_ms);
    if (sqlite3_step(q) != SQLITE_DONE)
        die("submissions");
    sqlite3_finalize(q);
    /* what comp__best_refresh leaves, for every team at once */
    if (ed_store_prepare(&q, st, "INSERT INTO comp_team_best (team_id, comp_id, rank_key, score, created_at, "
                                 "submission_id) SELECT team_id, comp_id, public_score, public_score, created_at, id "
                                 "FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY team_id ORDER BY public_score, "
                                 "created_at, id) AS r FROM comp_submissions WHERE comp_id = ?1) WHERE r = 1") < 0)
        die("prepare");
    sqlite3_bind_text(q, 1, id, -1, SQLITE_STATIC);
    if (sqlite3_step(q) != SQLITE_DONE)
        die("best");
    sqlite3_finalize(q);
    if (ed_store_commit(st) < 0)
        die("commit");
    ed_store_exec(st, "ANALYZE");
    printf("setup_s %.1f\nteams %d\nsubmissions %d\n", MS(t0) / 1000, teams, subs);

    /* the worst team and a middle one */
    if (comp_leaderboard_get(&p, c, admin, id, COMP_BOARD_PUBLIC, (size_t)teams - 1, 1) < 0 || p->count != 1)
        die("last page");
    worst = p->items[0].team_id;
    comp_board_page_free(p);
    if (comp_leaderboard_get(&p, c, admin, id, COMP_BOARD_PUBLIC, (size_t)teams / 2, 1) < 0 || p->count != 1)
        die("middle page");
    mid = p->items[0].team_id;
    comp_board_page_free(p);

    ms = calloc((size_t)iters, sizeof(double));
    for (int i = 0; i < iters; i++) {
        t0 = ed_mono_ns();
        if (comp_leaderboard_get(&p, c, admin, id, COMP_BOARD_PUBLIC, 0, 100) < 0 || p->count != 100)
            die("top 100");
        ms[i] = MS(t0);
        comp_board_page_free(p);
    }
    report("public_top100", ms, iters);
    for (int i = 0; i < iters; i++) {
        t0 = ed_mono_ns();
        if (comp_leaderboard_rank(&e, c, admin, id, COMP_BOARD_PUBLIC, worst) < 0 || e.rank != teams)
            die("rank of the worst team");
        ms[i] = MS(t0);
        comp_board_entry_clear(&e);
    }
    report("public_rank_last", ms, iters);
    for (int i = 0; i < iters; i++) {
        t0 = ed_mono_ns();
        if (comp_leaderboard_rank(&e, c, admin, id, COMP_BOARD_PUBLIC, mid) < 0)
            die("rank of a middle team");
        ms[i] = MS(t0);
        comp_board_entry_clear(&e);
    }
    report("public_rank_middle", ms, iters);
    for (int i = 0; i < iters; i++) {
        t0 = ed_mono_ns();
        if (comp_leaderboard_get(&p, c, admin, id, COMP_BOARD_PUBLIC, (size_t)teams - 100, 100) < 0)
            die("last page");
        ms[i] = MS(t0);
        comp_board_page_free(p);
    }
    report("public_last100", ms, iters);

    now_ms = s.end_at;
    t0 = ed_mono_ns();
    if (comp_leaderboard_get(&p, c, admin, id, COMP_BOARD_PRIVATE, 0, 100) < 0 || p->count != 100)
        die("private board");
    printf("private_compute_once_ms %.1f\n", MS(t0));
    comp_board_page_free(p);
    for (int i = 0; i < iters; i++) {
        t0 = ed_mono_ns();
        if (comp_leaderboard_get(&p, c, admin, id, COMP_BOARD_PRIVATE, 0, 100) < 0 || p->count != 100)
            die("private top 100");
        ms[i] = MS(t0);
        comp_board_page_free(p);
    }
    report("private_top100", ms, iters);
    for (int i = 0; i < iters; i++) {
        t0 = ed_mono_ns();
        if (comp_leaderboard_rank(&e, c, admin, id, COMP_BOARD_PRIVATE, worst) < 0)
            die("private rank");
        ms[i] = MS(t0);
        comp_board_entry_clear(&e);
    }
    report("private_rank", ms, iters);

    free(ms);
    comp_free(c);
    ed_store_close(st);
    snprintf(path, sizeof(path), "rm -rf %s", dir);
    if (system(path) != 0)
        return 1;
    return 0;
}
