/*
 * teams.c - teams: create, invite, join, leave, merge (see comp.h).
 *
 * The store holds the rules: comp_team_members' primary key (competition,
 * user) is "one team per competition"; every change that checks a count
 * (size, caps) runs in one BEGIN IMMEDIATE transaction with its write.
 */
#include "comp_int.h"

#include "ed_error.h"
#include "ed_time.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int comp__team_of(int64_t *out, comp *c, const char *id, int64_t user)
{
    return comp__int(out, c, 0, "SELECT team_id FROM comp_team_members WHERE comp_id = ?1 AND user_id = ?2",
                     "ti", id, user);
}

int comp__team_insert(int64_t *out, comp *c, const char *id, int64_t user, const char *name)
{
    sqlite3_stmt *s = NULL;
    int64_t now = comp__now(c);
    int rc, err;

    *out = 0;
    if ((err = ed_store_prepare(&s, c->st,
            "INSERT INTO comp_teams (comp_id, name, created_at) VALUES (?1, ?2, ?3)")) < 0)
        return err;
    sqlite3_bind_text(s, 1, id, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(s, 2, name, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(s, 3, now);
    rc = ed_store_step(s);
    sqlite3_finalize(s);
    if (rc == SQLITE_CONSTRAINT)
        return ed_error_set(ED_EEXISTS, "a team named '%s' exists in this competition", name);
    if (rc != SQLITE_DONE)
        return comp__db_error(c, rc, "insert team");
    *out = sqlite3_last_insert_rowid(ed_store_db(c->st));
    if ((err = comp__exec(c, "INSERT INTO comp_team_members (comp_id, user_id, team_id, joined_at) "
                             "VALUES (?1, ?2, ?3, ?4)", "tiii", id, user, *out, now)) < 0)
        return err;
    return 0;
}

static int team_name_check(const char *name)
{
    size_t len = name != NULL ? strlen(name) : 0;

    if (len == 0 || len > COMP_TEAM_NAME_MAX)
        return ed_error_set(ED_EINVAL, "team name must be 1..%d bytes", COMP_TEAM_NAME_MAX);
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)name[i] < 0x20 || name[i] == 0x7f)
            return ed_error_set(ED_EINVAL, "team name must not hold control characters");
    return 0;
}

typedef struct team_ctx {
    comp *c;
    const char *id;
    int64_t user, team, other, invitee;
    const char *name;
    const comp__info *k;
    bool merged;
} team_ctx;

static int create_body(void *p)
{
    team_ctx *x = p;
    int64_t cur = 0;
    int err;

    if ((err = comp__team_of(&cur, x->c, x->id, x->user)) < 0)
        return err;
    if (cur != 0)
        return ed_error_set(ED_ECONFLICT, "you are already in a team of this competition");
    return comp__team_insert(&x->team, x->c, x->id, x->user, x->name);
}

int comp_team_create(comp_team **out, comp *c, int64_t user, const char *id, const char *name)
{
    comp__info k;
    team_ctx x = {.c = c, .id = id, .user = user, .name = name};
    int err;

    if (out != NULL)
        *out = NULL;
    if ((err = comp__info_get(&k, c, id)) < 0)
        return err;
    if ((err = team_name_check(name)) < 0)
        return err;
    if (comp__now(c) >= k.end_at)
        return ed_error_set(ED_ECONFLICT, "the competition has ended");
    if (!comp__rules_ok(c, id, user))
        return ed_error_set(ED_EPERM, "accept the competition's rules first");
    if ((err = ed_store_tx(c->st, create_body, &x)) < 0)
        return err;
    return out != NULL ? comp_team_mine(out, c, user, id) : 0;
}

void comp_team_free(comp_team *t)
{
    if (t == NULL)
        return;
    free(t->name);
    free(t->members);
    free(t->invited);
    free(t);
}

static int team_load(comp_team **out, comp *c, const char *id, int64_t team)
{
    comp_team *t;
    sqlite3_stmt *s = NULL;
    int64_t day = ed_time_day_start_ms(comp__now(c));
    int rc, err;

    *out = NULL;
    if ((t = calloc(1, sizeof(*t))) == NULL)
        return ed_error_set(ED_ENOMEM, "team");
    t->id = team;
    if ((err = ed_store_prepare(&s, c->st,
            "SELECT name, merge_request_to FROM comp_teams WHERE id = ?1 AND comp_id = ?2")) < 0)
        goto fail;
    sqlite3_bind_int64(s, 1, team);
    sqlite3_bind_text(s, 2, id, -1, SQLITE_TRANSIENT);
    if ((rc = ed_store_step(s)) == SQLITE_ROW) {
        t->name = strdup((const char *)sqlite3_column_text(s, 0));
        t->merge_request_to = sqlite3_column_int64(s, 1);
    }
    sqlite3_finalize(s);
    if (rc != SQLITE_ROW) {
        err = rc == SQLITE_DONE ? ed_error_set(ED_ENOTFOUND, "team %lld not found", (long long)team)
                                : comp__db_error(c, rc, "read team");
        goto fail;
    }
    if ((err = ed_store_prepare(&s, c->st,
            "SELECT m.user_id, u.username FROM comp_team_members m JOIN users u ON u.id = m.user_id "
            "WHERE m.team_id = ?1 ORDER BY m.joined_at, m.user_id")) < 0)
        goto fail;
    sqlite3_bind_int64(s, 1, team);
    while ((rc = ed_store_step(s)) == SQLITE_ROW) {
        comp_member *m = realloc(t->members, (t->nmembers + 1) * sizeof(*m));
        if (m == NULL) {
            sqlite3_finalize(s);
            err = ed_error_set(ED_ENOMEM, "team");
            goto fail;
        }
        t->members = m;
        m[t->nmembers].user_id = sqlite3_column_int64(s, 0);
        snprintf(m[t->nmembers].username, sizeof(m->username), "%s", (const char *)sqlite3_column_text(s, 1));
        t->nmembers++;
    }
    sqlite3_finalize(s);
    if ((err = ed_store_prepare(&s, c->st, "SELECT user_id FROM comp_invites WHERE team_id = ?1 ORDER BY created_at")) < 0)
        goto fail;
    sqlite3_bind_int64(s, 1, team);
    while ((rc = ed_store_step(s)) == SQLITE_ROW) {
        int64_t *v = realloc(t->invited, (t->ninvited + 1) * sizeof(*v));
        if (v == NULL) {
            sqlite3_finalize(s);
            err = ed_error_set(ED_ENOMEM, "team");
            goto fail;
        }
        t->invited = v;
        v[t->ninvited++] = sqlite3_column_int64(s, 0);
    }
    sqlite3_finalize(s);
    if ((err = comp__int(&t->submissions, c, 0,
            "SELECT COUNT(*) FROM comp_submissions WHERE team_id = ?1 AND counted = 1", "i", team)) < 0 ||
        (err = comp__int(&t->submissions_today, c, 0,
            "SELECT COUNT(*) FROM comp_submissions WHERE team_id = ?1 AND counted = 1 AND day_start = ?2",
            "ii", team, day)) < 0)
        goto fail;
    if (t->name == NULL) {
        err = ed_error_set(ED_ENOMEM, "team");
        goto fail;
    }
    *out = t;
    return 0;
fail:
    comp_team_free(t);
    return err;
}

int comp_team_mine(comp_team **out, comp *c, int64_t user, const char *id)
{
    comp__info k;
    int64_t team = 0;
    int err;

    *out = NULL;
    if ((err = comp__info_get(&k, c, id)) < 0)
        return err;
    if ((err = comp__team_of(&team, c, id, user)) < 0)
        return err;
    if (team == 0)
        return ed_error_set(ED_ENOTFOUND, "you are not in a team of this competition");
    return team_load(out, c, id, team);
}

/* The caller must be a member of `team` in competition `id`. */
static int member_check(comp *c, const char *id, int64_t user, int64_t team)
{
    int64_t mine = 0;
    int err;

    if ((err = comp__team_of(&mine, c, id, user)) < 0)
        return err;
    if (mine != team)
        return ed_error_set(ED_EPERM, "you are not a member of team %lld", (long long)team);
    return 0;
}

static int64_t team_size(comp *c, int64_t team)
{
    int64_t n = 0;

    comp__int(&n, c, 0, "SELECT COUNT(*) FROM comp_team_members WHERE team_id = ?1", "i", team);
    return n;
}

static int64_t team_subs(comp *c, int64_t team)
{
    int64_t n = 0;

    comp__int(&n, c, 0, "SELECT COUNT(*) FROM comp_submissions WHERE team_id = ?1", "i", team);
    return n;
}

static int invite_body(void *p)
{
    team_ctx *x = p;
    int64_t exists = 0, theirs = 0;
    int err;

    if ((err = member_check(x->c, x->id, x->user, x->team)) < 0)
        return err;
    if ((err = comp__int(&exists, x->c, 0, "SELECT 1 FROM users WHERE id = ?1", "i", x->invitee)) < 0)
        return err;
    if (exists != 1)
        return ed_error_set(ED_ENOTFOUND, "user %lld not found", (long long)x->invitee);
    if ((err = comp__team_of(&theirs, x->c, x->id, x->invitee)) < 0)
        return err;
    if (theirs == x->team)
        return ed_error_set(ED_ECONFLICT, "the user is already in this team");
    if (team_size(x->c, x->team) >= x->k->max_team_size)
        return ed_error_set(ED_ECONFLICT, "the team is full (%d members)", x->k->max_team_size);
    return comp__exec(x->c, "INSERT OR IGNORE INTO comp_invites (team_id, user_id, invited_by, created_at) "
                            "VALUES (?1, ?2, ?3, ?4)", "iiii", x->team, x->invitee, x->user, comp__now(x->c));
}

int comp_team_invite(comp *c, int64_t user, const char *id, int64_t team, int64_t invitee)
{
    comp__info k;
    team_ctx x = {.c = c, .id = id, .user = user, .team = team, .invitee = invitee, .k = &k};
    int err;

    if ((err = comp__info_get(&k, c, id)) < 0)
        return err;
    if (comp__now(c) >= k.merge_deadline)
        return ed_error_set(ED_ECONFLICT, "the team merge deadline has passed");
    return ed_store_tx(c->st, invite_body, &x);
}

static int join_body(void *p)
{
    team_ctx *x = p;
    int64_t invited = 0, cur = 0;
    int err;

    if ((err = comp__int(&invited, x->c, 0, "SELECT 1 FROM comp_invites i JOIN comp_teams t ON t.id = i.team_id "
                                           "WHERE i.team_id = ?1 AND i.user_id = ?2 AND t.comp_id = ?3",
                         "iit", x->team, x->user, x->id)) < 0)
        return err;
    if (invited != 1)
        return ed_error_set(ED_ENOTFOUND, "no invitation to team %lld", (long long)x->team);
    if ((err = comp__team_of(&cur, x->c, x->id, x->user)) < 0)
        return err;
    if (cur == x->team)
        return ed_error_set(ED_ECONFLICT, "you are already in this team");
    if (cur != 0) {
        /* A solo team without submissions dissolves into the new one;
         * anything else is a merge. */
        if (team_size(x->c, cur) > 1 || team_subs(x->c, cur) > 0)
            return ed_error_set(ED_ECONFLICT, "you are in a team with other members or submissions: "
                                "ask for a merge instead");
        if ((err = comp__exec(x->c, "DELETE FROM comp_teams WHERE id = ?1", "i", cur)) < 0)
            return err;
    }
    if (team_size(x->c, x->team) >= x->k->max_team_size)
        return ed_error_set(ED_ECONFLICT, "the team is full (%d members)", x->k->max_team_size);
    if ((err = comp__exec(x->c, "INSERT INTO comp_team_members (comp_id, user_id, team_id, joined_at) "
                                "VALUES (?1, ?2, ?3, ?4)", "tiii", x->id, x->user, x->team, comp__now(x->c))) < 0)
        return err;
    return comp__exec(x->c, "DELETE FROM comp_invites WHERE team_id = ?1 AND user_id = ?2", "ii", x->team, x->user);
}

int comp_team_join(comp *c, int64_t user, const char *id, int64_t team)
{
    comp__info k;
    team_ctx x = {.c = c, .id = id, .user = user, .team = team, .k = &k};
    int err;

    if ((err = comp__info_get(&k, c, id)) < 0)
        return err;
    if (comp__now(c) >= k.merge_deadline)
        return ed_error_set(ED_ECONFLICT, "the team merge deadline has passed");
    if (!comp__rules_ok(c, id, user))
        return ed_error_set(ED_EPERM, "accept the competition's rules first");
    return ed_store_tx(c->st, join_body, &x);
}

static int leave_body(void *p)
{
    team_ctx *x = p;
    int64_t team = 0;
    int err;

    if ((err = comp__team_of(&team, x->c, x->id, x->user)) < 0)
        return err;
    if (team == 0)
        return ed_error_set(ED_ENOTFOUND, "you are not in a team of this competition");
    if (team_subs(x->c, team) > 0)
        return ed_error_set(ED_ECONFLICT, "a team that has submitted cannot be left");
    if ((err = comp__exec(x->c, "DELETE FROM comp_team_members WHERE comp_id = ?1 AND user_id = ?2", "ti",
                          x->id, x->user)) < 0)
        return err;
    if (team_size(x->c, team) == 0)
        return comp__exec(x->c, "DELETE FROM comp_teams WHERE id = ?1", "i", team);
    return 0;
}

int comp_team_leave(comp *c, int64_t user, const char *id)
{
    comp__info k;
    team_ctx x = {.c = c, .id = id, .user = user, .k = &k};
    int err;

    if ((err = comp__info_get(&k, c, id)) < 0)
        return err;
    return ed_store_tx(c->st, leave_body, &x);
}

/* Whether `a` and `b` together fit the size and the caps. */
static int merge_fits(team_ctx *x, int64_t a, int64_t b)
{
    int64_t day = ed_time_day_start_ms(comp__now(x->c)), total = 0, today = 0;
    int err;

    if (team_size(x->c, a) + team_size(x->c, b) > x->k->max_team_size)
        return ed_error_set(ED_ECONFLICT, "together the teams would have more than %d members",
                            x->k->max_team_size);
    if ((err = comp__int(&total, x->c, 0, "SELECT COUNT(*) FROM comp_submissions WHERE team_id IN (?1, ?2) "
                                          "AND counted = 1", "ii", a, b)) < 0 ||
        (err = comp__int(&today, x->c, 0, "SELECT COUNT(*) FROM comp_submissions WHERE team_id IN (?1, ?2) "
                                          "AND counted = 1 AND day_start = ?3", "iii", a, b, day)) < 0)
        return err;
    if (x->k->total_cap > 0 && total > x->k->total_cap)
        return ed_error_set(ED_ECONFLICT, "together the teams have %lld submissions, over the total cap of %d",
                            (long long)total, x->k->total_cap);
    if (today > x->k->daily_cap)
        return ed_error_set(ED_ECONFLICT, "together the teams have %lld submissions today, over the daily "
                            "cap of %d", (long long)today, x->k->daily_cap);
    return 0;
}

static int merge_body(void *p)
{
    team_ctx *x = p;
    int64_t other_comp = 0, asked = 0;
    int err;

    x->merged = false;
    if ((err = member_check(x->c, x->id, x->user, x->team)) < 0)
        return err;
    if ((err = comp__int(&other_comp, x->c, 0, "SELECT 1 FROM comp_teams WHERE id = ?1 AND comp_id = ?2", "it",
                         x->other, x->id)) < 0)
        return err;
    if (other_comp != 1)
        return ed_error_set(ED_ENOTFOUND, "team %lld not found", (long long)x->other);
    if ((err = merge_fits(x, x->team, x->other)) < 0)
        return err;
    if ((err = comp__int(&asked, x->c, 0, "SELECT merge_request_to FROM comp_teams WHERE id = ?1", "i",
                         x->other)) < 0)
        return err;
    if (asked != x->team)   /* ask; the other team accepts by asking back */
        return comp__exec(x->c, "UPDATE comp_teams SET merge_request_to = ?2 WHERE id = ?1", "ii", x->team,
                          x->other);
    /* Accept: the other team's members and submissions move here. The
     * selections of both are cleared: the merged team chooses again. */
    if ((err = comp__exec(x->c, "UPDATE comp_team_members SET team_id = ?1 WHERE team_id = ?2", "ii", x->team,
                          x->other)) < 0 ||
        (err = comp__exec(x->c, "UPDATE comp_submissions SET team_id = ?1 WHERE team_id = ?2", "ii", x->team,
                          x->other)) < 0 ||
        (err = comp__exec(x->c, "UPDATE comp_submissions SET selected = 0 WHERE team_id = ?1", "i", x->team)) < 0 ||
        (err = comp__exec(x->c, "UPDATE comp_teams SET merge_request_to = NULL WHERE merge_request_to IN (?1, ?2)",
                          "ii", x->team, x->other)) < 0 ||
        (err = comp__exec(x->c, "DELETE FROM comp_teams WHERE id = ?1", "i", x->other)) < 0 ||
        (err = comp__best_refresh(x->c, x->id, x->team)) < 0)
        return err;
    x->merged = true;
    return 0;
}

int comp_team_merge(bool *out_merged, comp *c, int64_t user, const char *id, int64_t team, int64_t other)
{
    comp__info k;
    team_ctx x = {.c = c, .id = id, .user = user, .team = team, .other = other, .k = &k};
    int err;

    if (out_merged != NULL)
        *out_merged = false;
    if ((err = comp__info_get(&k, c, id)) < 0)
        return err;
    if (team == other)
        return ed_error_set(ED_EINVAL, "a team cannot merge with itself");
    if (comp__now(c) >= k.merge_deadline)
        return ed_error_set(ED_ECONFLICT, "the team merge deadline has passed");
    if ((err = ed_store_tx(c->st, merge_body, &x)) < 0)
        return err;
    if (out_merged != NULL)
        *out_merged = x.merged;
    return 0;
}
