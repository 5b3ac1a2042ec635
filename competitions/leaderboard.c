/*
 * leaderboard.c - the public board (a maintained best-per-team table,
 * comp_team_best, ranked by an index) and the private board (computed once
 * after end_at from the final selections into comp_private_best).
 *
 * rank_key ascending is best first: the score, negated when higher is
 * better; ties go to the earlier submission, then the lower team id. A
 * page is an index range scan (LIMIT/OFFSET); a team's rank is a COUNT
 * over the index entries before its own.
 */
#include "comp_int.h"

#include "ed_error.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int comp__best_refresh(comp *c, const char *id, int64_t team)
{
    comp__info k;
    int err;

    if ((err = comp__info_get(&k, c, id)) < 0)
        return err;
    if ((err = comp__exec(c, "DELETE FROM comp_team_best WHERE team_id = ?1", "i", team)) < 0)
        return err;
    return comp__exec(c,
        "INSERT INTO comp_team_best (team_id, comp_id, rank_key, score, created_at, submission_id) "
        "SELECT team_id, comp_id, CASE WHEN ?2 THEN -public_score ELSE public_score END AS rk, public_score, "
        "created_at, id FROM comp_submissions WHERE team_id = ?1 AND status = 'scored' AND public_score IS NOT NULL "
        "ORDER BY rk, created_at, id LIMIT 1", "ii", team, (int64_t)k.higher_is_better);
}

void comp_board_entry_clear(comp_board_entry *e)
{
    if (e == NULL)
        return;
    free(e->team_name);
    memset(e, 0, sizeof(*e));
}

void comp_board_page_free(comp_board_page *p)
{
    if (p == NULL)
        return;
    for (size_t i = 0; i < p->count; i++)
        free(p->items[i].team_name);
    free(p->items);
    free(p);
}

/* The private board, computed when first asked for after end_at; kept for
 * good once no submission of the competition is in flight any more (one
 * still scoring at the end is counted when it finishes). */
static int private_compute(comp *c, const char *id, const comp__info *k)
{
    int64_t done = 0, inflight = 0;
    int err;

    if ((err = comp__int(&done, c, 0, "SELECT 1 FROM comp_private_done WHERE comp_id = ?1", "t", id)) < 0)
        return err;
    if (done == 1)
        return 0;
    if ((err = comp__int(&inflight, c, 0, "SELECT COUNT(*) FROM comp_submissions WHERE comp_id = ?1 AND status IN "
                                          "('queued', 'validating', 'running', 'scoring')", "t", id)) < 0)
        return err;
    if ((err = ed_store_begin(c->st)) < 0)
        return err;
    if ((err = comp__exec(c, "DELETE FROM comp_private_best WHERE comp_id = ?1", "t", id)) < 0)
        goto fail;
    /* Each team's candidates: its selected submissions, or without any,
     * its best selection_max public ones; then its best private score. */
    if ((err = comp__exec(c,
            "WITH cand AS (SELECT team_id, id, created_at, private_score, selected, "
            "  MAX(selected) OVER (PARTITION BY team_id) AS any_sel, "
            "  ROW_NUMBER() OVER (PARTITION BY team_id ORDER BY public_score IS NULL, "
            "    CASE WHEN ?2 THEN -public_score ELSE public_score END, created_at, id) AS pub_rank "
            "  FROM comp_submissions WHERE comp_id = ?1 AND status = 'scored' AND private_score IS NOT NULL), "
            "chosen AS (SELECT * FROM cand WHERE (any_sel = 1 AND selected = 1) OR (any_sel = 0 AND pub_rank <= ?3)), "
            "ranked AS (SELECT team_id, id, created_at, private_score, "
            "  CASE WHEN ?2 THEN -private_score ELSE private_score END AS rk, "
            "  ROW_NUMBER() OVER (PARTITION BY team_id ORDER BY CASE WHEN ?2 THEN -private_score ELSE private_score END, "
            "    created_at, id) AS r FROM chosen) "
            "INSERT INTO comp_private_best (team_id, comp_id, rank_key, score, created_at, submission_id) "
            "SELECT team_id, ?1, rk, private_score, created_at, id FROM ranked WHERE r = 1",
            "tii", id, (int64_t)k->higher_is_better, (int64_t)k->selection_max)) < 0)
        goto fail;
    if (inflight == 0 &&
        (err = comp__exec(c, "INSERT OR IGNORE INTO comp_private_done (comp_id, computed_at) VALUES (?1, ?2)", "ti",
                          id, comp__now(c))) < 0)
        goto fail;
    return ed_store_commit(c->st);
fail:
    ed_store_rollback(c->st);
    return err;
}

/* Who sees what (see comp.h). *own_team: restrict to that team (0: all). */
static int board_access(int64_t *own_team, bool *hide_rank, comp *c, const char *id, const comp__info *k,
                        int64_t user, comp_board board)
{
    int64_t now = comp__now(c);
    int err;

    *own_team = 0;
    *hide_rank = false;
    if (board == COMP_BOARD_PRIVATE) {
        if (now < k->end_at)
            return ed_error_set(ED_EPERM, "the private leaderboard is revealed at the end of the competition");
        return private_compute(c, id, k);
    }
    if (board != COMP_BOARD_PUBLIC)
        return ed_error_set(ED_EINVAL, "board must be public or private");
    if (now >= k->end_at || comp__can_edit(c, k, user) || k->mode == COMP_MODE_PUBLIC)
        return 0;
    if (k->mode == COMP_MODE_HIDDEN)
        return ed_error_set(ED_EPERM, "the leaderboard is hidden until the end of the competition");
    if ((err = comp__team_of(own_team, c, id, user)) < 0)
        return err;
    if (*own_team == 0)
        *own_team = -1;   /* no team: nothing to show */
    *hide_rank = true;    /* own_score: a rank would say how the others do */
    return 0;
}

#define BOARD_SELECT(table) \
    "SELECT b.team_id, t.name, b.score, b.created_at, b.submission_id FROM " table " b " \
    "JOIN comp_teams t ON t.id = b.team_id "

int comp_leaderboard_get(comp_board_page **out, comp *c, int64_t user, const char *id, comp_board board,
                         size_t offset, size_t limit)
{
    const char *table = board == COMP_BOARD_PRIVATE ? "comp_private_best" : "comp_team_best";
    comp_board_page *p = NULL;
    comp__info k;
    sqlite3_stmt *s = NULL;
    int64_t own = 0;
    bool hide_rank = false;
    char sql[512];
    int rc, err;

    *out = NULL;
    if ((err = comp__info_get(&k, c, id)) < 0)
        return err;
    if ((err = board_access(&own, &hide_rank, c, id, &k, user, board)) < 0)
        return err;
    if (limit == 0 || limit > COMP_LIST_MAX)
        limit = COMP_LIST_MAX;
    if ((p = calloc(1, sizeof(*p))) == NULL || (p->items = calloc(limit, sizeof(*p->items))) == NULL) {
        free(p);
        return ed_error_set(ED_ENOMEM, "leaderboard");
    }
    if (own != 0) {
        snprintf(sql, sizeof(sql), BOARD_SELECT("%s") "WHERE b.comp_id = ?1 AND b.team_id = ?4 LIMIT ?2 OFFSET ?3",
                 table);
        p->total = 0;
    } else {
        snprintf(sql, sizeof(sql), "SELECT COUNT(*) FROM %s WHERE comp_id = ?1", table);
        if ((err = comp__int(&p->total, c, 0, sql, "t", id)) < 0)
            goto fail;
        snprintf(sql, sizeof(sql), BOARD_SELECT("%s") "WHERE b.comp_id = ?1 AND ?4 = ?4 "
                 "ORDER BY b.rank_key, b.created_at, b.team_id LIMIT ?2 OFFSET ?3", table);
    }
    if ((err = ed_store_prepare(&s, c->st, sql)) < 0)
        goto fail;
    sqlite3_bind_text(s, 1, id, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(s, 2, (int64_t)limit);
    sqlite3_bind_int64(s, 3, (int64_t)offset);
    sqlite3_bind_int64(s, 4, own);
    while ((rc = ed_store_step(s)) == SQLITE_ROW) {
        comp_board_entry *e = &p->items[p->count];
        e->rank = hide_rank ? 0 : (int64_t)(offset + p->count + 1);
        e->team_id = sqlite3_column_int64(s, 0);
        if ((e->team_name = strdup((const char *)sqlite3_column_text(s, 1))) == NULL) {
            err = ed_error_set(ED_ENOMEM, "leaderboard");
            goto fail;
        }
        e->score = sqlite3_column_double(s, 2);
        e->submitted_at = sqlite3_column_int64(s, 3);
        snprintf(e->submission_id, sizeof(e->submission_id), "%s", (const char *)sqlite3_column_text(s, 4));
        p->count++;
    }
    if (rc != SQLITE_DONE) {
        err = comp__db_error(c, rc, "leaderboard");
        goto fail;
    }
    if (own != 0)
        p->total = (int64_t)p->count;
    sqlite3_finalize(s);
    *out = p;
    return 0;
fail:
    sqlite3_finalize(s);
    comp_board_page_free(p);
    return err;
}

int comp_leaderboard_rank(comp_board_entry *out, comp *c, int64_t user, const char *id, comp_board board,
                          int64_t team)
{
    const char *table = board == COMP_BOARD_PRIVATE ? "comp_private_best" : "comp_team_best";
    comp__info k;
    sqlite3_stmt *s = NULL;
    int64_t own = 0, before = 0, created = 0;
    double key = 0;
    bool hide_rank = false;
    char sql[512];
    int rc, err;

    memset(out, 0, sizeof(*out));
    if ((err = comp__info_get(&k, c, id)) < 0)
        return err;
    if ((err = board_access(&own, &hide_rank, c, id, &k, user, board)) < 0)
        return err;
    if (own != 0 && own != team)
        return ed_error_set(ED_EPERM, "only your own team's score is shown in this competition");
    snprintf(sql, sizeof(sql), "SELECT b.team_id, t.name, b.score, b.created_at, b.submission_id, b.rank_key "
             "FROM %s b JOIN comp_teams t ON t.id = b.team_id WHERE b.comp_id = ?1 AND b.team_id = ?2", table);
    if ((err = ed_store_prepare(&s, c->st, sql)) < 0)
        return err;
    sqlite3_bind_text(s, 1, id, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(s, 2, team);
    rc = ed_store_step(s);
    if (rc == SQLITE_ROW) {
        out->team_id = sqlite3_column_int64(s, 0);
        out->team_name = strdup((const char *)sqlite3_column_text(s, 1));
        out->score = sqlite3_column_double(s, 2);
        out->submitted_at = created = sqlite3_column_int64(s, 3);
        snprintf(out->submission_id, sizeof(out->submission_id), "%s", (const char *)sqlite3_column_text(s, 4));
        key = sqlite3_column_double(s, 5);
    }
    sqlite3_finalize(s);
    if (rc == SQLITE_DONE)
        return ed_error_set(ED_ENOTFOUND, "team %lld has no score on this board", (long long)team);
    if (rc != SQLITE_ROW)
        return comp__db_error(c, rc, "leaderboard rank");
    if (out->team_name == NULL)
        return ed_error_set(ED_ENOMEM, "leaderboard");
    if (hide_rank)
        return 0;
    snprintf(sql, sizeof(sql), "SELECT COUNT(*) FROM %s WHERE comp_id = ?1 AND (rank_key < ?2 OR (rank_key = ?2 AND "
             "(created_at < ?3 OR (created_at = ?3 AND team_id < ?4))))", table);
    if ((err = ed_store_prepare(&s, c->st, sql)) < 0) {
        comp_board_entry_clear(out);
        return err;
    }
    sqlite3_bind_text(s, 1, id, -1, SQLITE_TRANSIENT);
    sqlite3_bind_double(s, 2, key);
    sqlite3_bind_int64(s, 3, created);
    sqlite3_bind_int64(s, 4, team);
    if ((rc = ed_store_step(s)) == SQLITE_ROW)
        before = sqlite3_column_int64(s, 0);
    sqlite3_finalize(s);
    if (rc != SQLITE_ROW) {
        comp_board_entry_clear(out);
        return comp__db_error(c, rc, "leaderboard rank");
    }
    out->rank = before + 1;
    return 0;
}
