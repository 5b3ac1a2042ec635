/* comp_int.h - private to competitions/. */
#ifndef COMP_INT_H
#define COMP_INT_H

#include "comp.h"

#include <pthread.h>
#include <sqlite3.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct comp {
    ed_store *st;
    int dir_fd;                 /* DATA/competitions, O_DIRECTORY */
    char data_dir[4096];        /* DATA, canonical (the scorer's sandbox binds beneath it) */
    comp_hooks hooks;
    comp_limits limits;
    /* the worker thread (comp_worker_start) */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pthread_t worker;
    bool worker_running, stop;
    int64_t watchdog_ms;
    /* loaded truths (truth.c), under mu */
    struct comp__truth_entry *truths;
};

/* The settings a step needs, read in one query. */
typedef struct comp__info {
    int64_t host_id;
    int64_t start_at, end_at, merge_deadline, selection_deadline;
    int daily_cap, total_cap, max_team_size, selection_max;
    bool invalid_counts, higher_is_better, code_enabled, code_charged;
    int64_t code_max_runtime_s;
    comp_board_mode mode;
    int64_t truth_rows;
    uint64_t split_seed;
    double public_fraction;
    char metric[32];
    int k;
    char scorer_direction[8];   /* "" (built-in metric), "higher", "lower" */
    bool has_scorer;
    int scorer_timeout_s, scorer_memory_mb;
} comp__info;

int64_t comp__now(comp *c);

/* Read competition `id`'s settings. ED_ENOTFOUND naming the id. */
int comp__info_get(comp__info *out, comp *c, const char *id);

/* Whether `user` is an admin, or the competition's host (or an admin). */
bool comp__is_admin(comp *c, int64_t user);
bool comp__can_edit(comp *c, const comp__info *k, int64_t user);

/* ed_store_error on this thread's connection. */
int comp__db_error(comp *c, int rc, const char *what);
/* Step a write and finalize it. 0 or the store's error. */
int comp__step_done(comp *c, sqlite3_stmt *s, const char *what);
/* A query with one integer answer (bind: up to 3 text/int args given as a
 * format string of 't' and 'i'). *out gets it, or `dflt` without a row. */
int comp__int(int64_t *out, comp *c, int64_t dflt, const char *sql, const char *fmt, ...);

/* Run one write with bound arguments: fmt has 't' (text, NULL binds NULL),
 * 'i' (int64_t) or 'd' (double) per argument. 0 or the store's error. */
int comp__exec(comp *c, const char *sql, const char *fmt, ...);

/* The user's team in a competition; 0 when none. */
int comp__team_of(int64_t *out, comp *c, const char *id, int64_t user);
/* Create a team of one for `user` (inside a transaction). */
int comp__team_insert(int64_t *out, comp *c, const char *id, int64_t user, const char *name);
/* Recompute a team's row of comp_team_best (inside a transaction). */
int comp__best_refresh(comp *c, const char *id, int64_t team);

/* Rows as structs. */
int comp__submission_row(comp_submission **out, sqlite3_stmt *s);
#define COMP__SUB_COLS "id, team_id, user_id, created_at, status, error_class, error_message, log_tail, " \
                       "public_score, metric_version, counted, selected, state_deadline, retries, kind, " \
                       "(SELECT name FROM comp_teams WHERE comp_teams.id = comp_submissions.team_id), " \
                       "(SELECT username FROM users WHERE users.id = comp_submissions.user_id)"

comp_status comp__status_parse(const char *s);

/* The mode names "public", "own_score", "hidden". */
const char *comp__mode_name(comp_board_mode m);

/* Whether a rules acceptance is recorded. */
bool comp__rules_ok(comp *c, const char *id, int64_t user);

/* A submission's file beneath the competition directory:
 * <id>/submissions/<sid>.csv */
int comp__sub_dir(int *out_fd, comp *c, const char *id, bool create);



#include "score.h"

/* The competition's directory DATA/competitions/<id> (made with `create`).
 * *out_fd: caller closes. */
int comp__comp_dir(int *out_fd, comp *c, const char *id, bool create);

/* The loaded, split truth of a competition for scoring: borrowed, valid
 * until comp_free (a replaced truth is kept until then; truths change only
 * before start_at). ED_ENOTFOUND when none is stored. */
int comp__truth_get(const comp_truth **out, comp *c, const char *id);
void comp__truths_free(comp *c);

/* scorer.c: custom scoring programs. */
/* comp_spec_check's part for spec->scorer. */
int comp__scorer_spec_check(const comp_spec *sp);
/* An update from `cur` to `sp`: the direction fixed after start, and not
 * cleared while a program is stored. */
int comp__scorer_update_check(const comp_competition *cur, const comp_spec *sp, bool started);
/* Store spec->scorer's settings (after the competition's row is written). */
int comp__scorer_spec_save(comp *c, const char *id, const comp_spec *sp);
/* Fill k's host_username and scorer fields (row_to_competition). */
void comp__competition_fill(comp *c, comp_competition *k);
/* Remove what runs of a dead process left (comp_open). */
void comp__scorer_runs_clear(comp *c);
/* Score the validated submission at sub_fd (from sub_off) with the stored
 * program: r's public and private scores. 0 with *fail NULL: scored; 0 with
 * *fail set: a scoring_error (a fixed message, in msg or static); < 0: a
 * platform error. */
int comp__scorer_score(comp_score_result *r, const char **fail, char *msg, size_t msglen, comp *c,
                       const char *id, const comp__info *k, const comp_truth *t, int sub_fd, off_t sub_off);

/* Stop and join the worker thread, if running (comp_free). */
void comp__worker_stop(comp *c);
#endif
