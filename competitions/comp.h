/*
 * comp.h - competitions: hosts, a timeline, hidden ground truth, teams,
 * submissions counted against caps, the watchdog and leaderboards.
 *
 * A host (an admin, or a user an admin made a host) creates a competition
 * with a title, Markdown overview and rules, a timeline (all UTC ms:
 * start_at < merge_deadline <= selection_deadline <= end_at), the public
 * dataset version participants mount, the id and target columns, a metric,
 * caps, the team size and the public/private split; then puts the hidden
 * ground truth (DATA/competitions/<id>/truth.csv, 0400, never returned).
 * Participants accept the rules, form teams and submit CSVs; each submission
 * is validated and scored on the public and the private rows (score.h) in
 * one pass. The public board ranks each team's best public score; the
 * private board (after end_at only) each team's selected submissions'
 * private scores.
 *
 *     comp *c;
 *     comp_competition *k;
 *     comp_spec spec = COMP_SPEC_INIT;
 *     spec.title = "Digits"; spec.start_at = t0; ... ;
 *     err = comp_open(&c, store, "/var/lib/eddy", &hooks);
 *     err = comp_competition_create(&k, c, host_id, &spec);
 *     err = comp_truth_put_fd(c, host_id, k->id, fd);
 *     err = comp_rules_accept(c, user_id, k->id);
 *     err = comp_submission_create_csv(&s, c, user_id, k->id, csv_fd);
 *     while (comp_work_once(c) > 0) ;        // or comp_worker_start(c)
 *     err = comp_leaderboard_get(&page, c, user_id, k->id, COMP_BOARD_PUBLIC, 0, 100);
 *
 * Secrecy is structural: no struct this header returns to a participant has
 * a private score field, and the functions that fill them never read the
 * private_score column. The private score is read only by
 * comp_leaderboard_get(COMP_BOARD_PRIVATE) and comp_submission_private_get,
 * both ED_EPERM before end_at for everyone (hosts included). The truth's
 * bytes and ids are never put in an error message.
 *
 * Errors are 0 or a negative ED_E* with ed_error_last() set: ED_EINVAL (a
 * field, naming it), ED_ENOTFOUND (no such competition/team/submission, or
 * not visible), ED_EPERM (not a host, not a member, rules not accepted),
 * ED_ECONFLICT (a state or timeline conflict: past a deadline, already in a
 * team, team full), ED_ELIMIT (a submission cap; the message says which and
 * when it resets), ED_ETOOBIG (a file over its limit), ED_EUNPROC (a
 * configuration that contradicts itself, naming the fields). Thread-safe:
 * one comp serves every thread; the store gives each thread its connection.
 */
#ifndef COMP_H
#define COMP_H

#include "ed_store.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define COMP_ID_LEN         37          /* a uuid and its NUL */
#define COMP_TITLE_MAX      200         /* bytes */
#define COMP_SLUG_MAX       64          /* [a-z0-9-], starts with a letter or digit */
#define COMP_TEXT_MAX       262144      /* bytes of overview or rules (Markdown) */
#define COMP_COLUMN_MAX     128         /* bytes of a column name */
#define COMP_TARGETS_MAX    64          /* target columns */
#define COMP_TEAM_NAME_MAX  100         /* bytes */
#define COMP_SELECT_MAX     10          /* largest K of the final selection */
#define COMP_TEAM_SIZE_MAX  100
#define COMP_CAP_MAX        1000        /* largest daily cap */
#define COMP_LIST_MAX       500         /* largest page */
#define COMP_MESSAGE_MAX    1000        /* bytes of an error message kept on a submission */
#define COMP_LOG_TAIL_MAX   4096        /* bytes of a log tail kept on a submission */
#define COMP_TRUTH_MAX      (INT64_C(1) << 30)  /* bytes of a ground-truth CSV */
#define COMP_SUBMISSION_MAX (INT64_C(256) << 20) /* bytes of a submitted CSV */

typedef struct comp comp;

/* ---- the handle ---------------------------------------------------------- */

/* What the library asks of the rest of the server; any hook may be NULL. */
typedef struct comp_hooks {
    /* 0 when `user` (the host) may use version `version` of dataset
     * `dataset_id` as the competition's public data; else an ED_E* with the
     * message set. The gateway wires ds_version_get; NULL: not checked
     * (tests). comp_ds_check() below is a ready one over a ds handle. */
    int (*dataset_check)(void *payload, int64_t user, const char *dataset_id, int64_t version);
    /* Give `mcoins` back to `user` for a platform-failed submission; the
     * gateway wires quota/'s ledger with `idem_key` ("comp-refund-<sid>")
     * as the idempotency key, so a refund retried after a crash is paid
     * once. 0, or < 0: kept pending and retried by the next watchdog run. */
    int (*refund)(void *payload, int64_t user, int64_t mcoins, const char *idem_key);
    /* The clock, UTC ms; NULL: ed_now_ms. Tests move it. */
    int64_t (*now_ms)(void *payload);
    void *payload;
} comp_hooks;

/* How long a submission may stay in each in-flight state before the
 * watchdog takes it (ms). A NULL comp_limits to comp_open means
 * COMP_LIMITS_DEFAULT. `running` is for code submissions and is the
 * competition's max_runtime_s plus this margin. */
typedef struct comp_limits {
    int64_t queued_ms, validating_ms, running_margin_ms, scoring_ms;
} comp_limits;
#define COMP_LIMITS_DEFAULT ((comp_limits){30 * 60000, 10 * 60000, 5 * 60000, 10 * 60000})

/* Open the competitions store under DATA/competitions/ (made if missing,
 * 0700) on `store`. `hooks` is copied. Caller frees with comp_free() (which
 * stops a worker started with comp_worker_start). ED_EIO. */
int comp_open(comp **out, ed_store *store, const char *data_dir, const comp_hooks *hooks,
              const comp_limits *limits);
void comp_free(comp *c);

/* ---- hosts --------------------------------------------------------------- */

/* Make `user` a host (may create competitions), or stop. `admin` must have
 * role 'admin' (ED_EPERM). ED_ENOTFOUND for an unknown user. */
int comp_host_add(comp *c, int64_t admin, int64_t user);
int comp_host_remove(comp *c, int64_t admin, int64_t user);
/* Whether `user` may create competitions (admin or host). */
bool comp_is_host(comp *c, int64_t user);

/* ---- competitions (competition.c) ---------------------------------------- */

typedef enum comp_board_mode {
    COMP_MODE_PUBLIC = 0,       /* everyone sees the public board */
    COMP_MODE_OWN_SCORE = 1,    /* a participant sees only their team's public score */
    COMP_MODE_HIDDEN = 2        /* no public board for participants until the end */
} comp_board_mode;

/* Code competitions (issue 16 item 5): stored here; the runs go through the
 * scheduler (see comp_submission_create_code). */
typedef struct comp_code_spec {
    bool enabled;
    const char *resource;       /* a scheduler resource name ("cpu", "gpu-1"); NULL: "cpu" */
    int64_t max_runtime_s;      /* 1 .. 86400 */
    const char *output_path;    /* the file the run writes, relative ("submission.csv") */
    bool charged;               /* runs are charged to the participant (refunded on platform_error) */
    const char *inputs_dataset_id;  /* the hidden test inputs: a dataset version the host can read,
                                     * mounted read-only into each run (never the truth); NULL: none */
    int64_t inputs_version;     /* >= 1 with inputs_dataset_id */
} comp_code_spec;

/* A custom scoring program's settings (scorer.c; issue 16 item 2). The
 * program itself is put with comp_scorer_put_fd. direction NULL: the
 * built-in metric scores (timeout_s and memory_mb must then be 0). */
typedef struct comp_scorer_spec {
    const char *direction;      /* NULL, "higher" or "lower" (is better) */
    int timeout_s;              /* one run's wall time, 1 .. COMP_SCORER_TIMEOUT_MAX; 0: 60 */
    int memory_mb;              /* one run's memory, 64 .. COMP_SCORER_MEMORY_MAX_MB; 0: 1024 */
} comp_scorer_spec;

/* A competition as given to create/update. Strings are borrowed. */
typedef struct comp_spec {
    const char *title, *slug;   /* slug NULL: from the title */
    const char *overview, *rules;   /* Markdown; NULL: "" */
    int64_t start_at, end_at, merge_deadline, selection_deadline;  /* UTC ms */
    const char *dataset_id;     /* the public data (NULL: none yet) */
    int64_t dataset_version;    /* >= 1 when dataset_id is set */
    const char *id_column;
    const char *const *target_columns;
    size_t ntargets;            /* 1 (score.h scores one target column: a label, a
                                 * number, a label list, or for logloss/auc the
                                 * class-probability columns named by the classes) */
    const char *metric;         /* "accuracy" "f1_macro" "f1_micro" "rmse" "mae" "logloss" "auc" "map@k" */
    int k;                      /* map@k's k (1..1000); 0 otherwise */
    double public_fraction;     /* of the truth's rows on the public board, 0 .. 1 */
    int daily_cap;              /* per team per UTC day, 1 .. COMP_CAP_MAX */
    int total_cap;              /* per team over the competition; 0: none */
    bool invalid_counts;        /* an invalid submission uses a slot */
    int max_team_size;          /* 1 .. COMP_TEAM_SIZE_MAX */
    int selection_max;          /* K, 1 .. COMP_SELECT_MAX; 0: 2 */
    comp_board_mode mode;
    comp_code_spec code;
    comp_scorer_spec scorer;    /* a custom scoring program (scorer.c) */
} comp_spec;
#define COMP_SPEC_INIT ((comp_spec){.daily_cap = 5, .max_team_size = 5, .selection_max = 2, \
                                    .public_fraction = 0.3})

typedef struct comp_competition {
    char id[COMP_ID_LEN];
    int64_t host_id;
    char *title, *slug, *overview, *rules;
    int64_t start_at, end_at, merge_deadline, selection_deadline;
    char *dataset_id;           /* NULL: none */
    int64_t dataset_version;
    char *id_column;
    char **target_columns;
    size_t ntargets;
    char *metric;
    int k;
    bool higher_is_better;      /* the metric's direction */
    double public_fraction;
    int daily_cap, total_cap;
    bool invalid_counts;
    int max_team_size, selection_max;
    comp_board_mode mode;
    bool code_enabled;
    char *code_resource, *code_output_path;
    int64_t code_max_runtime_s;
    bool code_charged;
    char *code_inputs_dataset_id;   /* NULL: none */
    int64_t code_inputs_version;
    bool has_truth;             /* the ground truth is stored */
    int64_t truth_rows;         /* its rows (the submission's row count); 0 before */
    int64_t created_at, updated_at;
    bool can_edit;              /* the caller is its host or an admin */
    bool rules_accepted;        /* by the caller */
    /* scorer.c: the host's username and the custom scoring program */
    char host_username[40];
    char scorer_direction[8];   /* "" (built-in metric), "higher" or "lower" */
    bool has_scorer;            /* a program is stored */
    int scorer_timeout_s, scorer_memory_mb;
} comp_competition;
void comp_competition_free(comp_competition *k);

/* Check a spec without storing it: 0, ED_EINVAL for one bad field (naming
 * it), ED_EUNPROC for fields that contradict each other, naming them:
 * "start_at must be before merge_deadline", "leaderboard 'public' with
 * public_fraction 0", "selection_deadline after end_at", "map@k needs k",
 * "total_cap below daily_cap". */
int comp_spec_check(const comp_spec *spec);

/* Create a competition hosted by `user` (a host: ED_EPERM otherwise). The
 * split seed is drawn here, once. The dataset is checked with the
 * dataset_check hook. ED_EEXISTS: the slug is taken. */
int comp_competition_create(comp_competition **out, comp *c, int64_t user, const comp_spec *spec);
/* Replace the settings (host or admin). Once start_at has passed, the
 * metric, k, id/target columns, public fraction and start_at are fixed
 * (ED_ECONFLICT naming the field). */
int comp_competition_update(comp_competition **out, comp *c, int64_t user, const char *id,
                            const comp_spec *spec);
/* One competition by id or slug as `user` sees it (everyone sees every
 * competition; there are no private ones yet). ED_ENOTFOUND. */
int comp_competition_get(comp_competition **out, comp *c, int64_t user, const char *id_or_slug);

typedef struct comp_competition_list {
    comp_competition **items;
    size_t count;
} comp_competition_list;
/* Competitions, the latest start first; limit 0: COMP_LIST_MAX. */
int comp_competition_list_get(comp_competition_list **out, comp *c, int64_t user, size_t limit,
                              size_t offset);
void comp_competition_list_free(comp_competition_list *l);

/* Record that `user` accepted the rules (idempotent). Needed before
 * creating or joining a team and before the first submission. */
int comp_rules_accept(comp *c, int64_t user, const char *id);

/* ---- the ground truth (truth.c) ------------------------------------------ */

/* Store the CSV at `fd` (read from its current offset; at most
 * COMP_TRUTH_MAX bytes) as the competition's truth (host only; before
 * start_at, ED_ECONFLICT after). It must have a header with the id column
 * and every target column, at least one row, unique non-empty ids
 * (score.h's comp_truth_load and comp_truth_split check it; their message
 * goes to the host only). Written atomically
 * (a temporary file beneath the competition's directory fd, fsync, 0400,
 * renameat) and its row count recorded. */
int comp_truth_put_fd(comp *c, int64_t user, const char *id, int fd);

/* Open the truth read-only for the scorer (internal callers and the
 * gateway's custom scoring program mount only; never a participant path).
 * *out_fd: caller closes. ED_ENOTFOUND when none is stored. */
int comp_truth_open(int *out_fd, comp *c, const char *id);

/* ---- custom scoring programs (scorer.c) ----------------------------------
 *
 * Codabench-style: the host uploads a Python program that scores a
 * submission. It runs in the sandbox (no network, read-only inputs, the
 * competition's scorer timeout_s and memory_mb, /usr/bin/python3) as
 *     python3 -I /scoring/scorer.py /scoring/truth.csv /scoring/submission.csv
 * once on the public rows and once on the private rows (each run sees one
 * part of the truth and the matching submission rows, header included),
 * after the submission passed the metric's validation (columns, ids, rows,
 * numbers). Its last stdout line must be JSON {"score": <finite number>}.
 * Anything else (no such line, NaN, a non-zero exit, the time or memory
 * limit) fails the submission with class scoring_error and a fixed message;
 * no byte of the program's output reaches anyone. */
#define COMP_SCORER_MAX           (1 << 20)   /* bytes of a scoring program */
#define COMP_SCORER_TIMEOUT_MAX   240         /* seconds of one run */
#define COMP_SCORER_MEMORY_MAX_MB 8192

/* Store the program read from `fd` (its offset on; 1..COMP_SCORER_MAX bytes
 * of UTF-8 text without NUL) as competition `id`'s scorer, atomically
 * beneath its directory (0400), host or admin only (ED_EPERM), before
 * start_at (ED_ECONFLICT). ED_EUNPROC when the competition has no
 * scorer.direction (set it first: the board must know which way is better);
 * ED_ETOOBIG, ED_EINVAL for the bytes. */
int comp_scorer_put_fd(comp *c, int64_t user, const char *id, int fd);
/* Remove the program and the scorer settings: the built-in metric scores
 * again (host/admin, before start_at). ED_ENOTFOUND when none is stored. */
int comp_scorer_delete(comp *c, int64_t user, const char *id);

/* The public/private split is score.h's comp_split_mask over the truth's
 * rows with the competition's stored seed (drawn once at create) and
 * public_fraction: the same rows are public for every submission. */

/* ---- teams (teams.c) ----------------------------------------------------- */

typedef struct comp_member {
    int64_t user_id;
    char username[40];
} comp_member;

typedef struct comp_team {
    int64_t id;
    char *name;
    comp_member *members;
    size_t nmembers;
    int64_t *invited;           /* users invited, not yet joined */
    size_t ninvited;
    int64_t merge_request_to;   /* a team this one asked to merge with; 0: none */
    int64_t submissions;        /* counted against the caps, all time */
    int64_t submissions_today;  /* counted, this UTC day */
} comp_team;
void comp_team_free(comp_team *t);

/* Create a team of one (the caller) named `name` (1..COMP_TEAM_NAME_MAX
 * bytes, unique per competition: ED_EEXISTS). A user is in at most one team
 * per competition (ED_ECONFLICT); rules accepted first (ED_EPERM); before
 * end_at. A user who submits without a team gets one named after them. */
int comp_team_create(comp_team **out, comp *c, int64_t user, const char *id, const char *name);
/* The caller's team, ED_ENOTFOUND when none. */
int comp_team_mine(comp_team **out, comp *c, int64_t user, const char *id);
/* A member invites `invitee` (an existing user not in another team of
 * this competition with submissions), before merge_deadline. ED_ECONFLICT
 * when the team is already full; the size is checked again at join. */
int comp_team_invite(comp *c, int64_t user, const char *id, int64_t team, int64_t invitee);
/* Accept an invitation: the caller (invited, rules accepted, in no team, or
 * alone in a team without submissions, which is then deleted) joins.
 * ED_ECONFLICT when the team is full or past merge_deadline. */
int comp_team_join(comp *c, int64_t user, const char *id, int64_t team);
/* Leave the caller's team. A team that has a submission cannot be left
 * (ED_ECONFLICT): its submissions are the members' together, and leaving
 * would hand a member a fresh cap (Kaggle's rule). The last member leaving
 * a team without submissions deletes it. */
int comp_team_leave(comp *c, int64_t user, const char *id);
/* Merge, before merge_deadline. A member of `team` asks to merge with
 * `other`; when `other` has already asked to merge with `team`, this call
 * accepts: `other`'s members and submissions move into `team` in one
 * transaction and `other` is deleted. Refused (ED_ECONFLICT, naming which)
 * when the combined size passes max_team_size, the combined counted
 * submissions pass total_cap, or today's pass daily_cap. *out_merged (may be
 * NULL) is true when the merge happened. */
int comp_team_merge(bool *out_merged, comp *c, int64_t user, const char *id, int64_t team,
                    int64_t other);

/* ---- submissions (submissions.c, pipeline.c) ----------------------------- */

typedef enum comp_status {
    COMP_QUEUED = 0, COMP_VALIDATING, COMP_RUNNING, COMP_SCORING,
    COMP_SCORED, COMP_INVALID, COMP_FAILED
} comp_status;
const char *comp_status_name(comp_status s);   /* "queued", ... */

/* Failure classes (issue 16 item 5); "" when none. */
#define COMP_ERR_TIMEOUT        "timeout"
#define COMP_ERR_EXCEPTION      "exception"
#define COMP_ERR_MISSING_OUTPUT "missing_output"
#define COMP_ERR_INVALID_OUTPUT "invalid_output"
#define COMP_ERR_SCORING        "scoring_error"
#define COMP_ERR_COMPUTE        "exceeded_compute"
#define COMP_ERR_PLATFORM       "platform_error"

/* A submission as a participant (or host) sees it: no private score. */
typedef struct comp_submission {
    char id[COMP_ID_LEN];
    int64_t team_id, user_id;
    int64_t created_at;         /* ms */
    comp_status status;
    char *error_class, *error_message, *log_tail;  /* NULL when none */
    bool has_public_score;
    double public_score;
    int metric_version;         /* of the scorer that gave the scores */
    bool counted;               /* uses a cap slot */
    bool selected;              /* in the team's final selection */
    int64_t state_deadline;     /* ms; 0 in a final state */
    int retries;
    bool code;                  /* a code submission */
    char team_name[COMP_TEAM_NAME_MAX + 1];    /* the team's name now */
    char username[40];          /* who submitted */
} comp_submission;
void comp_submission_free(comp_submission *s);

typedef struct comp_submission_list {
    comp_submission **items;
    size_t count;
} comp_submission_list;
void comp_submission_list_free(comp_submission_list *l);

/* Submit the CSV at `fd` (from its current offset, at most
 * COMP_SUBMISSION_MAX bytes: ED_ETOOBIG) for the caller's team (made when
 * the caller has none). Between start_at and end_at, rules accepted. The
 * file is stored first; then one transaction counts the team's slots (this
 * UTC day's and all time) and inserts the row as queued and counted, or
 * refuses with ED_ELIMIT (and the file is removed). 20 concurrent calls
 * against a cap of 5 accept exactly 5. */
int comp_submission_create_csv(comp_submission **out, comp *c, int64_t user, const char *id, int fd);
/* A code submission: `source` is the JSON the gateway will run
 * ({"project_id":..,"version":..,"entry":..}); counted like a CSV, queued
 * until the gateway's runner claims it with comp_code_claim. ED_EUNPROC when
 * the competition is not a code competition. */
int comp_submission_create_code(comp_submission **out, comp *c, int64_t user, const char *id,
                                const char *source);
/* The caller's team's submissions, newest first. ED_ENOTFOUND without a team. */
int comp_submission_list_get(comp_submission_list **out, comp *c, int64_t user, const char *id,
                             size_t limit, size_t offset);
/* One submission of the caller's team (the host sees any). */
int comp_submission_get(comp_submission **out, comp *c, int64_t user, const char *id, const char *sid);
/* Every submission (host console: host or admin only), newest first. */
int comp_submission_list_all(comp_submission_list **out, comp *c, int64_t user, const char *id,
                             size_t limit, size_t offset);
/* The private score of a scored submission: after end_at only (ED_EPERM
 * before, for everyone), to its team or the host. */
int comp_submission_private_get(double *out, comp *c, int64_t user, const char *id, const char *sid);

/* Choose the team's final submissions (1..selection_max scored ones of the
 * caller's team), before selection_deadline; replaces the previous choice.
 * Without a choice, the best selection_max public scores count. */
int comp_selection_set(comp *c, int64_t user, const char *id, const char *const *sids, size_t n);

/* The scoring pipeline. One step: claim the oldest queued CSV submission
 * (queued -> validating, with a deadline), validate and score it through
 * score.h, then store scored/invalid/failed. A stale worker (one the
 * watchdog timed out meanwhile) finds its claim gone and drops its result.
 * 1 when a submission was processed, 0 when none was queued, < 0 on a store
 * failure. */
int comp_work_once(comp *c);
/* A thread that runs comp_work_once while there is work and the watchdog
 * every `watchdog_ms`; stopped and joined by comp_free. */
int comp_worker_start(comp *c, int64_t watchdog_ms);

/* Code submissions (the gateway's runner): claim the oldest queued code
 * submission (-> running, deadline max_runtime_s + margin); *out gets it,
 * NULL when none is queued. The runner starts the job, then reports with
 * comp_code_output_fd (the file it wrote: -> scoring and scored/invalid) or
 * comp_code_fail. `charged_mcoins` is what the run was charged (refunded
 * if the platform fails it). Calls for a submission no longer running (the
 * watchdog took it) are ED_ECONFLICT. */
int comp_code_claim(comp_submission **out, char **out_source, comp *c);
int comp_code_output_fd(comp *c, const char *sid, int fd, int64_t charged_mcoins);
int comp_code_fail(comp *c, const char *sid, const char *error_class, const char *message,
                   const char *log_tail, int64_t charged_mcoins);

/* ---- the watchdog (watchdog.c) ------------------------------------------- */

typedef struct comp_watchdog_report {
    int requeued;               /* past their deadline, sent back to queued (first time) */
    int failed;                 /* past their deadline again: failed with platform_error */
    int refunded;               /* refunds paid through the hook this run */
} comp_watchdog_report;

/* Move every submission past its state's deadline: retried once (back to
 * queued, a fresh deadline), then failed with platform_error, its cap slot
 * given back and any charge refunded through the refund hook with the
 * idempotency key "comp-refund-<sid>" recorded on the row (a refund whose
 * hook failed stays pending and is retried by the next run). Run it
 * periodically and at start, after comp_recover. *out may be NULL. */
int comp_watchdog_run(comp_watchdog_report *out, comp *c);
/* At start: submissions left validating or scoring by a dead process are
 * given a deadline of now, so the next watchdog run takes them. */
int comp_recover(comp *c);

/* ---- leaderboards (leaderboard.c) ---------------------------------------- */

typedef enum comp_board { COMP_BOARD_PUBLIC = 0, COMP_BOARD_PRIVATE = 1 } comp_board;

typedef struct comp_board_entry {
    int64_t rank;               /* 1-based */
    int64_t team_id;
    char *team_name;
    double score;
    int64_t submitted_at;       /* ms, of the scoring submission */
    char submission_id[COMP_ID_LEN];
} comp_board_entry;

typedef struct comp_board_page {
    comp_board_entry *items;
    size_t count;
    int64_t total;              /* teams on the board */
} comp_board_page;
void comp_board_page_free(comp_board_page *p);

/* A page of a board, best first (the metric's direction; ties: the earlier
 * submission). Public: each team's best public score; for a participant in
 * mode own_score only their team's row, in mode hidden ED_EPERM until
 * end_at; hosts always see it whole. Private: ED_EPERM before end_at; after,
 * each team's best private score among its selected submissions (or its
 * best selection_max public ones when it chose none). limit 0 or over
 * COMP_LIST_MAX: COMP_LIST_MAX. */
int comp_leaderboard_get(comp_board_page **out, comp *c, int64_t user, const char *id, comp_board board,
                         size_t offset, size_t limit);
/* One team's row on a board (same visibility), ED_ENOTFOUND when the team
 * has no score on it. */
int comp_leaderboard_rank(comp_board_entry *out, comp *c, int64_t user, const char *id, comp_board board,
                          int64_t team);
void comp_board_entry_clear(comp_board_entry *e);

/* ---- metrics (directions; the scorers are score.h's) --------------------- */

/* Whether `metric` is known, and its direction. ED_EINVAL for another name. */
int comp_metric_info(bool *out_higher_is_better, const char *metric);
/* The name score.h parses: "map@<k>" for map@k, else the metric. */
void comp_metric_full_name(char *out, size_t outlen, const char *metric, int k);

/* A ds_in_use_fn (datasets/ds.h) over a comp handle (payload): 1 with `why`
 * ("competition 'digits'") when a competition that has not ended uses
 * version `number` of dataset `id` (0: any version) as its public data, so
 * the version cannot be deleted under its participants; 0 when none; < 0 on
 * a store error. The gateway registers it with gw__dataset_in_use_add. */
int comp_dataset_in_use(char *why, size_t why_len, const char *id, int64_t number, void *payload);

/* A dataset_check hook over a ds handle (datasets/ds.h): payload is the ds. */
int comp_ds_check(void *ds_handle, int64_t user, const char *dataset_id, int64_t version);

#endif
