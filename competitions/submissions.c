/*
 * submissions.c - submissions: create (counted against the caps in one
 * transaction), read, the final selection (see comp.h).
 *
 * Secrecy: every participant-facing read selects COMP__SUB_COLS, which
 * does not name private_score; comp_submission has no field for it. The
 * only reads of the column are comp_submission_private_get and the private
 * board, both refused before end_at.
 */
#include "comp_int.h"

#include "ed_crypto.h"
#include "ed_error.h"
#include "ed_time.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int comp__sub_dir(int *out_fd, comp *c, const char *id, bool create)
{
    int dir = -1, fd;
    int err;

    *out_fd = -1;
    if ((err = comp__comp_dir(&dir, c, id, create)) < 0)
        return err;
    if (create && mkdirat(dir, "submissions", 0700) < 0 && errno != EEXIST) {
        close(dir);
        return ed_error_set(ED_EIO, "mkdir submissions: %s", strerror(errno));
    }
    fd = openat(dir, "submissions", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    close(dir);
    if (fd < 0)
        return ed_error_set(errno == ENOENT ? ED_ENOTFOUND : ED_EIO, "open submissions: %s", strerror(errno));
    *out_fd = fd;
    return 0;
}

static char *col_dup(sqlite3_stmt *s, int i)
{
    const unsigned char *t = sqlite3_column_text(s, i);

    return t != NULL ? strdup((const char *)t) : NULL;
}

int comp__submission_row(comp_submission **out, sqlite3_stmt *s)
{
    comp_submission *x;

    *out = NULL;
    if ((x = calloc(1, sizeof(*x))) == NULL)
        return ed_error_set(ED_ENOMEM, "submission");
    snprintf(x->id, sizeof(x->id), "%s", (const char *)sqlite3_column_text(s, 0));
    x->team_id = sqlite3_column_int64(s, 1);
    x->user_id = sqlite3_column_int64(s, 2);
    x->created_at = sqlite3_column_int64(s, 3);
    x->status = comp__status_parse((const char *)sqlite3_column_text(s, 4));
    x->error_class = col_dup(s, 5);
    x->error_message = col_dup(s, 6);
    x->log_tail = col_dup(s, 7);
    x->has_public_score = sqlite3_column_type(s, 8) != SQLITE_NULL;
    x->public_score = x->has_public_score ? sqlite3_column_double(s, 8) : NAN;
    x->metric_version = sqlite3_column_int(s, 9);
    x->counted = sqlite3_column_int(s, 10) != 0;
    x->selected = sqlite3_column_int(s, 11) != 0;
    x->state_deadline = sqlite3_column_int64(s, 12);
    x->retries = sqlite3_column_int(s, 13);
    x->code = strcmp((const char *)sqlite3_column_text(s, 14), "code") == 0;
    if (sqlite3_column_text(s, 15) != NULL)
        snprintf(x->team_name, sizeof(x->team_name), "%s", (const char *)sqlite3_column_text(s, 15));
    if (sqlite3_column_text(s, 16) != NULL)
        snprintf(x->username, sizeof(x->username), "%s", (const char *)sqlite3_column_text(s, 16));
    *out = x;
    return 0;
}

void comp_submission_free(comp_submission *s)
{
    if (s == NULL)
        return;
    free(s->error_class);
    free(s->error_message);
    free(s->log_tail);
    free(s);
}

void comp_submission_list_free(comp_submission_list *l)
{
    if (l == NULL)
        return;
    for (size_t i = 0; i < l->count; i++)
        comp_submission_free(l->items[i]);
    free(l->items);
    free(l);
}

typedef struct create_ctx {
    comp *c;
    const char *id;
    const comp__info *k;
    int64_t user;
    const char *sid;
    const char *kind, *source;
    int64_t team;
} create_ctx;

/* A team of one for a user who submits without one: named after them. */
static int solo_team(create_ctx *x)
{
    char name[COMP_TEAM_NAME_MAX + 1];
    sqlite3_stmt *s = NULL;
    int err;

    if ((err = ed_store_prepare(&s, x->c->st, "SELECT username FROM users WHERE id = ?1")) < 0)
        return err;
    sqlite3_bind_int64(s, 1, x->user);
    if (ed_store_step(s) == SQLITE_ROW)
        snprintf(name, sizeof(name), "%s", (const char *)sqlite3_column_text(s, 0));
    else
        snprintf(name, sizeof(name), "user-%lld", (long long)x->user);
    sqlite3_finalize(s);
    if ((err = comp__team_insert(&x->team, x->c, x->id, x->user, name)) == ED_EEXISTS) {
        char other[COMP_TEAM_NAME_MAX + 1];
        snprintf(other, sizeof(other), "%.60s-%lld", name, (long long)x->user);
        err = comp__team_insert(&x->team, x->c, x->id, x->user, other);
    }
    return err;
}

static int create_body(void *p)
{
    create_ctx *x = p;
    int64_t now = comp__now(x->c), day = ed_time_day_start_ms(now), today = 0, total = 0;
    int err;

    x->team = 0;
    if ((err = comp__team_of(&x->team, x->c, x->id, x->user)) < 0)
        return err;
    if (x->team == 0 && (err = solo_team(x)) < 0)
        return err;
    /* Counted inside BEGIN IMMEDIATE: no other writer runs between the
     * count and the insert, so the caps hold under any concurrency. */
    if ((err = comp__int(&today, x->c, 0, "SELECT COUNT(*) FROM comp_submissions WHERE team_id = ?1 "
                                          "AND counted = 1 AND day_start = ?2", "ii", x->team, day)) < 0 ||
        (err = comp__int(&total, x->c, 0, "SELECT COUNT(*) FROM comp_submissions WHERE team_id = ?1 "
                                          "AND counted = 1", "i", x->team)) < 0)
        return err;
    if (today >= x->k->daily_cap)
        return ed_error_set(ED_ELIMIT, "your team has used its %d submissions for today; the cap resets at "
                            "00:00 UTC", x->k->daily_cap);
    if (x->k->total_cap > 0 && total >= x->k->total_cap)
        return ed_error_set(ED_ELIMIT, "your team has used all %d submissions of this competition",
                            x->k->total_cap);
    return comp__exec(x->c, "INSERT INTO comp_submissions (id, comp_id, team_id, user_id, created_at, day_start, "
                            "kind, source, status, counted, state_deadline) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, "
                            "?8, 'queued', 1, ?9)", "ttiiiitti", x->sid, x->id, x->team, x->user, now, day,
                      x->kind, x->source, now + x->c->limits.queued_ms);
}

static int open_check(comp__info *k, comp *c, int64_t user, const char *id)
{
    int64_t now = comp__now(c);
    int err;

    if ((err = comp__info_get(k, c, id)) < 0)
        return err;
    if (now < k->start_at)
        return ed_error_set(ED_ECONFLICT, "the competition has not started");
    if (now >= k->end_at)
        return ed_error_set(ED_ECONFLICT, "the competition has ended");
    if (!comp__rules_ok(c, id, user))
        return ed_error_set(ED_EPERM, "accept the competition's rules before submitting");
    if (k->truth_rows == 0)
        return ed_error_set(ED_ECONFLICT, "the competition is not ready: its host has not put the ground truth");
    return 0;
}

static int write_file(int dir, const char *name, int in)
{
    char *buf;
    int out, err = 0;
    int64_t total = 0;
    ssize_t n;

    if ((out = openat(dir, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600)) < 0)
        return ed_error_set(ED_EIO, "create submission file: %s", strerror(errno));
    if ((buf = malloc(1 << 20)) == NULL) {
        close(out);
        return ed_error_set(ED_ENOMEM, "copy buffer");
    }
    while ((n = read(in, buf, 1 << 20)) != 0) {
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            err = ed_error_set(ED_EIO, "read the submission: %s", strerror(errno));
            break;
        }
        if ((total += n) > COMP_SUBMISSION_MAX) {
            err = ed_error_set(ED_ETOOBIG, "the submission is over %lld bytes", (long long)COMP_SUBMISSION_MAX);
            break;
        }
        for (ssize_t off = 0; off < n && err == 0;) {
            ssize_t w = write(out, buf + off, (size_t)(n - off));
            if (w < 0 && errno != EINTR)
                err = ed_error_set(ED_EIO, "write the submission: %s", strerror(errno));
            else if (w > 0)
                off += w;
        }
        if (err < 0)
            break;
    }
    free(buf);
    if (err == 0 && total == 0)
        err = ed_error_set(ED_EINVAL, "the submission is empty");
    if (err == 0 && fsync(out) < 0)
        err = ed_error_set(ED_EIO, "sync the submission: %s", strerror(errno));
    close(out);
    if (err < 0)
        unlinkat(dir, name, 0);
    return err;
}

static int get_own(comp_submission **out, comp *c, const char *sid)
{
    sqlite3_stmt *s = NULL;
    int rc, err;

    if ((err = ed_store_prepare(&s, c->st, "SELECT " COMP__SUB_COLS " FROM comp_submissions WHERE id = ?1")) < 0)
        return err;
    sqlite3_bind_text(s, 1, sid, -1, SQLITE_TRANSIENT);
    rc = ed_store_step(s);
    err = rc == SQLITE_ROW    ? comp__submission_row(out, s)
          : rc == SQLITE_DONE ? ed_error_set(ED_ENOTFOUND, "submission not found")
                              : comp__db_error(c, rc, "read submission");
    sqlite3_finalize(s);
    return err;
}

int comp_submission_create_csv(comp_submission **out, comp *c, int64_t user, const char *id, int fd)
{
    comp__info k;
    create_ctx x = {.c = c, .id = id, .k = &k, .user = user, .kind = "csv"};
    char sid[COMP_ID_LEN], name[64];
    int dir = -1, err;

    if (out != NULL)
        *out = NULL;
    if ((err = open_check(&k, c, user, id)) < 0)
        return err;
    ed_uuid4(sid);
    x.sid = sid;
    snprintf(name, sizeof(name), "%s.csv", sid);
    if ((err = comp__sub_dir(&dir, c, id, true)) < 0)
        return err;
    /* The file first, then the row: a file without a row (a crash between)
     * is never scored; a refused submission's file is removed. */
    if ((err = write_file(dir, name, fd)) < 0)
        goto done;
    if ((err = ed_store_tx(c->st, create_body, &x)) < 0) {
        unlinkat(dir, name, 0);
        goto done;
    }
    pthread_mutex_lock(&c->mu);
    pthread_cond_signal(&c->cv);
    pthread_mutex_unlock(&c->mu);
    err = out != NULL ? get_own(out, c, sid) : 0;
done:
    close(dir);
    return err;
}

int comp_submission_create_code(comp_submission **out, comp *c, int64_t user, const char *id,
                                const char *source)
{
    comp__info k;
    create_ctx x = {.c = c, .id = id, .k = &k, .user = user, .kind = "code", .source = source};
    char sid[COMP_ID_LEN];
    int err;

    if (out != NULL)
        *out = NULL;
    if ((err = open_check(&k, c, user, id)) < 0)
        return err;
    if (!k.code_enabled)
        return ed_error_set(ED_EUNPROC, "this competition takes CSV submissions, not code");
    if (source == NULL || source[0] == '\0' || strlen(source) > 4096)
        return ed_error_set(ED_EINVAL, "a code submission needs its source (at most 4096 bytes)");
    ed_uuid4(sid);
    x.sid = sid;
    if ((err = ed_store_tx(c->st, create_body, &x)) < 0)
        return err;
    return out != NULL ? get_own(out, c, sid) : 0;
}

static int list_query(comp_submission_list **out, comp *c, const char *sql, const char *id, int64_t team,
                      size_t limit, size_t offset)
{
    comp_submission_list *l;
    sqlite3_stmt *s = NULL;
    int rc, err;

    *out = NULL;
    if (limit == 0 || limit > COMP_LIST_MAX)
        limit = COMP_LIST_MAX;
    if ((l = calloc(1, sizeof(*l))) == NULL || (l->items = calloc(limit, sizeof(*l->items))) == NULL) {
        free(l);
        return ed_error_set(ED_ENOMEM, "submissions");
    }
    if ((err = ed_store_prepare(&s, c->st, sql)) < 0)
        goto fail;
    sqlite3_bind_text(s, 1, id, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(s, 2, team);
    sqlite3_bind_int64(s, 3, (int64_t)limit);
    sqlite3_bind_int64(s, 4, (int64_t)offset);
    while ((rc = ed_store_step(s)) == SQLITE_ROW) {
        if ((err = comp__submission_row(&l->items[l->count], s)) < 0)
            goto fail;
        l->count++;
    }
    if (rc != SQLITE_DONE) {
        err = comp__db_error(c, rc, "list submissions");
        goto fail;
    }
    sqlite3_finalize(s);
    *out = l;
    return 0;
fail:
    sqlite3_finalize(s);
    comp_submission_list_free(l);
    return err;
}

int comp_submission_list_get(comp_submission_list **out, comp *c, int64_t user, const char *id, size_t limit,
                             size_t offset)
{
    comp__info k;
    int64_t team = 0;
    int err;

    *out = NULL;
    if ((err = comp__info_get(&k, c, id)) < 0 || (err = comp__team_of(&team, c, id, user)) < 0)
        return err;
    if (team == 0)
        return ed_error_set(ED_ENOTFOUND, "you are not in a team of this competition");
    return list_query(out, c, "SELECT " COMP__SUB_COLS " FROM comp_submissions WHERE comp_id = ?1 AND team_id = ?2 "
                              "ORDER BY created_at DESC, id LIMIT ?3 OFFSET ?4", id, team, limit, offset);
}

int comp_submission_list_all(comp_submission_list **out, comp *c, int64_t user, const char *id, size_t limit,
                             size_t offset)
{
    comp__info k;
    int err;

    *out = NULL;
    if ((err = comp__info_get(&k, c, id)) < 0)
        return err;
    if (!comp__can_edit(c, &k, user))
        return ed_error_set(ED_EPERM, "only the competition's host or an admin sees every submission");
    return list_query(out, c, "SELECT " COMP__SUB_COLS " FROM comp_submissions WHERE comp_id = ?1 AND ?2 = ?2 "
                              "ORDER BY created_at DESC, id LIMIT ?3 OFFSET ?4", id, 0, limit, offset);
}

int comp_submission_get(comp_submission **out, comp *c, int64_t user, const char *id, const char *sid)
{
    comp__info k;
    comp_submission *x = NULL;
    int64_t team = 0, in_comp = 0;
    int err;

    *out = NULL;
    if ((err = comp__info_get(&k, c, id)) < 0)
        return err;
    if (sid == NULL || strlen(sid) >= COMP_ID_LEN)
        return ed_error_set(ED_ENOTFOUND, "submission not found");
    if ((err = comp__int(&in_comp, c, 0, "SELECT 1 FROM comp_submissions WHERE id = ?1 AND comp_id = ?2", "tt",
                         sid, id)) < 0)
        return err;
    if (in_comp != 1)
        return ed_error_set(ED_ENOTFOUND, "submission not found");
    if ((err = get_own(&x, c, sid)) < 0)
        return err;
    if (!comp__can_edit(c, &k, user)) {
        if ((err = comp__team_of(&team, c, id, user)) < 0 || team != x->team_id) {
            comp_submission_free(x);
            return err < 0 ? err : ed_error_set(ED_ENOTFOUND, "submission not found");
        }
    }
    *out = x;
    return 0;
}

int comp_submission_private_get(double *out, comp *c, int64_t user, const char *id, const char *sid)
{
    comp__info k;
    comp_submission *x = NULL;
    sqlite3_stmt *s = NULL;
    int rc, err;

    *out = NAN;
    if ((err = comp__info_get(&k, c, id)) < 0)
        return err;
    if (comp__now(c) < k.end_at)
        return ed_error_set(ED_EPERM, "private scores are revealed at the end of the competition");
    if ((err = comp_submission_get(&x, c, user, id, sid)) < 0)
        return err;
    comp_submission_free(x);
    if ((err = ed_store_prepare(&s, c->st,
            "SELECT private_score FROM comp_submissions WHERE id = ?1 AND status = 'scored'")) < 0)
        return err;
    sqlite3_bind_text(s, 1, sid, -1, SQLITE_TRANSIENT);
    rc = ed_store_step(s);
    if (rc == SQLITE_ROW && sqlite3_column_type(s, 0) != SQLITE_NULL)
        *out = sqlite3_column_double(s, 0);
    sqlite3_finalize(s);
    if (rc == SQLITE_DONE)
        return ed_error_set(ED_ENOTFOUND, "the submission has no score");
    if (rc != SQLITE_ROW)
        return comp__db_error(c, rc, "read private score");
    return 0;
}

typedef struct select_ctx {
    comp *c;
    int64_t team;
    const char *const *sids;
    size_t n;
} select_ctx;

static int select_body(void *p)
{
    select_ctx *x = p;
    int64_t ok = 0;
    int err;

    if ((err = comp__exec(x->c, "UPDATE comp_submissions SET selected = 0 WHERE team_id = ?1", "i", x->team)) < 0)
        return err;
    for (size_t i = 0; i < x->n; i++) {
        if ((err = comp__int(&ok, x->c, 0, "SELECT 1 FROM comp_submissions WHERE id = ?1 AND team_id = ?2 "
                                           "AND status = 'scored'", "ti", x->sids[i], x->team)) < 0)
            return err;
        if (ok != 1)
            return ed_error_set(ED_EINVAL, "submission %.40s is not a scored submission of your team", x->sids[i]);
        if ((err = comp__exec(x->c, "UPDATE comp_submissions SET selected = 1 WHERE id = ?1", "t", x->sids[i])) < 0)
            return err;
    }
    return 0;
}

int comp_selection_set(comp *c, int64_t user, const char *id, const char *const *sids, size_t n)
{
    comp__info k;
    select_ctx x = {.c = c, .sids = sids, .n = n};
    int err;

    if ((err = comp__info_get(&k, c, id)) < 0)
        return err;
    if (comp__now(c) >= k.selection_deadline)
        return ed_error_set(ED_ECONFLICT, "the final selection deadline has passed");
    if (n > (size_t)k.selection_max)
        return ed_error_set(ED_EINVAL, "at most %d submissions may be selected", k.selection_max);
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < i; j++)
            if (strcmp(sids[i], sids[j]) == 0)
                return ed_error_set(ED_EINVAL, "submission %.40s is selected twice", sids[i]);
    if ((err = comp__team_of(&x.team, c, id, user)) < 0)
        return err;
    if (x.team == 0)
        return ed_error_set(ED_ENOTFOUND, "you are not in a team of this competition");
    return ed_store_tx(c->st, select_body, &x);
}
