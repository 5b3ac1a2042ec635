/*
 * comp.c - the competitions handle, hosts, metric directions and the small
 * helpers the other files share (see comp.h, comp_int.h).
 */
#include "comp_int.h"

#include "ds.h"
#include "ed_error.h"
#include "ed_fs.h"
#include "ed_time.h"
#include "score.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int64_t comp__now(comp *c)
{
    return c->hooks.now_ms != NULL ? c->hooks.now_ms(c->hooks.payload) : ed_now_ms();
}

int comp_open(comp **out, ed_store *store, const char *data_dir, const comp_hooks *hooks,
              const comp_limits *limits)
{
    comp *c;
    char path[4096];
    int err, data_fd = -1;

    *out = NULL;
    if ((c = calloc(1, sizeof(*c))) == NULL)
        return ed_error_set(ED_ENOMEM, "competitions");
    c->st = store;
    c->dir_fd = -1;
    if (hooks != NULL)
        c->hooks = *hooks;
    c->limits = limits != NULL ? *limits : COMP_LIMITS_DEFAULT;
    pthread_mutex_init(&c->mu, NULL);
    pthread_cond_init(&c->cv, NULL);
    if ((err = ed_fs_open_dir(&data_fd, data_dir)) < 0)
        goto fail;
    if (mkdirat(data_fd, "competitions", 0700) < 0 && errno != EEXIST) {
        err = ed_error_set(ED_EIO, "mkdir %s/competitions: %s", data_dir, strerror(errno));
        goto fail;
    }
    snprintf(path, sizeof(path), "%s/competitions", data_dir);
    if ((err = ed_fs_open_dir(&c->dir_fd, path)) < 0)
        goto fail;
    if (realpath(data_dir, path) == NULL || strlen(path) >= sizeof(c->data_dir)) {
        err = ed_error_set(ED_EIO, "resolve %s: %s", data_dir, strerror(errno));
        goto fail;
    }
    snprintf(c->data_dir, sizeof(c->data_dir), "%s", path);
    comp__scorer_runs_clear(c);
    close(data_fd);
    *out = c;
    return 0;
fail:
    if (data_fd >= 0)
        close(data_fd);
    comp_free(c);
    return err;
}

void comp_free(comp *c)
{
    if (c == NULL)
        return;
    comp__worker_stop(c);
    comp__truths_free(c);
    if (c->dir_fd >= 0)
        close(c->dir_fd);
    pthread_cond_destroy(&c->cv);
    pthread_mutex_destroy(&c->mu);
    free(c);
}

/* ---- store helpers ------------------------------------------------------- */

int comp__db_error(comp *c, int rc, const char *what)
{
    return ed_store_error(ed_store_db(c->st), rc, what);
}

int comp__step_done(comp *c, sqlite3_stmt *s, const char *what)
{
    int rc = ed_store_step(s);

    sqlite3_finalize(s);
    return rc == SQLITE_DONE ? 0 : comp__db_error(c, rc, what);
}

int comp__int(int64_t *out, comp *c, int64_t dflt, const char *sql, const char *fmt, ...)
{
    sqlite3_stmt *s = NULL;
    va_list ap;
    int rc, err;

    *out = dflt;
    if ((err = ed_store_prepare(&s, c->st, sql)) < 0)
        return err;
    va_start(ap, fmt);
    for (int i = 0; fmt[i] != '\0'; i++) {
        if (fmt[i] == 't')
            sqlite3_bind_text(s, i + 1, va_arg(ap, const char *), -1, SQLITE_TRANSIENT);
        else
            sqlite3_bind_int64(s, i + 1, va_arg(ap, int64_t));
    }
    va_end(ap);
    rc = ed_store_step(s);
    if (rc == SQLITE_ROW && sqlite3_column_type(s, 0) != SQLITE_NULL)
        *out = sqlite3_column_int64(s, 0);
    sqlite3_finalize(s);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE)
        return comp__db_error(c, rc, "query");
    return 0;
}

const char *comp__mode_name(comp_board_mode m)
{
    switch (m) {
    case COMP_MODE_OWN_SCORE: return "own_score";
    case COMP_MODE_HIDDEN: return "hidden";
    default: return "public";
    }
}

static comp_board_mode mode_parse(const char *s)
{
    if (s != NULL && strcmp(s, "own_score") == 0)
        return COMP_MODE_OWN_SCORE;
    if (s != NULL && strcmp(s, "hidden") == 0)
        return COMP_MODE_HIDDEN;
    return COMP_MODE_PUBLIC;
}

int comp__info_get(comp__info *out, comp *c, const char *id)
{
    sqlite3_stmt *s = NULL;
    int rc, err;

    memset(out, 0, sizeof(*out));
    if (id == NULL)
        return ed_error_set(ED_ENOTFOUND, "competition not found");
    if ((err = ed_store_prepare(&s, c->st,
            "SELECT host_id, start_at, end_at, merge_deadline, selection_deadline, daily_cap, total_cap, "
            "max_team_size, selection_max, invalid_counts, higher_is_better, code_enabled, code_charged, "
            "code_max_runtime_s, mode, truth_rows, split_seed, public_fraction, metric, k, "
            "scorer_direction, scorer_token IS NOT NULL, scorer_timeout_s, scorer_memory_mb "
            "FROM competitions WHERE id = ?1")) < 0)
        return err;
    sqlite3_bind_text(s, 1, id, -1, SQLITE_TRANSIENT);
    rc = ed_store_step(s);
    if (rc == SQLITE_ROW) {
        out->host_id = sqlite3_column_int64(s, 0);
        out->start_at = sqlite3_column_int64(s, 1);
        out->end_at = sqlite3_column_int64(s, 2);
        out->merge_deadline = sqlite3_column_int64(s, 3);
        out->selection_deadline = sqlite3_column_int64(s, 4);
        out->daily_cap = sqlite3_column_int(s, 5);
        out->total_cap = sqlite3_column_int(s, 6);
        out->max_team_size = sqlite3_column_int(s, 7);
        out->selection_max = sqlite3_column_int(s, 8);
        out->invalid_counts = sqlite3_column_int(s, 9) != 0;
        out->higher_is_better = sqlite3_column_int(s, 10) != 0;
        out->code_enabled = sqlite3_column_int(s, 11) != 0;
        out->code_charged = sqlite3_column_int(s, 12) != 0;
        out->code_max_runtime_s = sqlite3_column_int64(s, 13);
        out->mode = mode_parse((const char *)sqlite3_column_text(s, 14));
        out->truth_rows = sqlite3_column_int64(s, 15);
        out->split_seed = (uint64_t)sqlite3_column_int64(s, 16);
        out->public_fraction = sqlite3_column_double(s, 17);
        snprintf(out->metric, sizeof(out->metric), "%s", (const char *)sqlite3_column_text(s, 18));
        out->k = sqlite3_column_int(s, 19);
        if (sqlite3_column_text(s, 20) != NULL)
            snprintf(out->scorer_direction, sizeof(out->scorer_direction), "%s",
                     (const char *)sqlite3_column_text(s, 20));
        out->has_scorer = sqlite3_column_int(s, 21) != 0;
        out->scorer_timeout_s = sqlite3_column_int(s, 22);
        out->scorer_memory_mb = sqlite3_column_int(s, 23);
    }
    sqlite3_finalize(s);
    if (rc == SQLITE_DONE)
        return ed_error_set(ED_ENOTFOUND, "competition %.40s not found", id);
    if (rc != SQLITE_ROW)
        return comp__db_error(c, rc, "read competition");
    return 0;
}

/* ---- hosts --------------------------------------------------------------- */

bool comp__is_admin(comp *c, int64_t user)
{
    int64_t n = 0;

    return comp__int(&n, c, 0, "SELECT 1 FROM users WHERE id = ?1 AND role = 'admin'", "i", user) == 0 &&
           n == 1;
}

bool comp__can_edit(comp *c, const comp__info *k, int64_t user)
{
    return k->host_id == user || comp__is_admin(c, user);
}

bool comp_is_host(comp *c, int64_t user)
{
    int64_t n = 0;

    if (comp__is_admin(c, user))
        return true;
    return comp__int(&n, c, 0, "SELECT 1 FROM comp_hosts WHERE user_id = ?1", "i", user) == 0 && n == 1;
}

int comp_host_add(comp *c, int64_t admin, int64_t user)
{
    sqlite3_stmt *s = NULL;
    int64_t exists = 0;
    int err;

    if (!comp__is_admin(c, admin))
        return ed_error_set(ED_EPERM, "only an admin makes hosts");
    if ((err = comp__int(&exists, c, 0, "SELECT 1 FROM users WHERE id = ?1", "i", user)) < 0)
        return err;
    if (exists != 1)
        return ed_error_set(ED_ENOTFOUND, "user %lld not found", (long long)user);
    if ((err = ed_store_prepare(&s, c->st,
            "INSERT OR IGNORE INTO comp_hosts (user_id, added_by, added_at) VALUES (?1, ?2, ?3)")) < 0)
        return err;
    sqlite3_bind_int64(s, 1, user);
    sqlite3_bind_int64(s, 2, admin);
    sqlite3_bind_int64(s, 3, comp__now(c));
    return comp__step_done(c, s, "add host");
}

int comp_host_remove(comp *c, int64_t admin, int64_t user)
{
    sqlite3_stmt *s = NULL;
    int err;

    if (!comp__is_admin(c, admin))
        return ed_error_set(ED_EPERM, "only an admin removes hosts");
    if ((err = ed_store_prepare(&s, c->st, "DELETE FROM comp_hosts WHERE user_id = ?1")) < 0)
        return err;
    sqlite3_bind_int64(s, 1, user);
    return comp__step_done(c, s, "remove host");
}

/* ---- names --------------------------------------------------------------- */

static const char *const status_names[] = {"queued", "validating", "running", "scoring",
                                           "scored", "invalid", "failed"};

const char *comp_status_name(comp_status s)
{
    return (unsigned)s < sizeof(status_names) / sizeof(status_names[0]) ? status_names[s] : "unknown";
}

comp_status comp__status_parse(const char *s)
{
    for (size_t i = 0; s != NULL && i < sizeof(status_names) / sizeof(status_names[0]); i++)
        if (strcmp(s, status_names[i]) == 0)
            return (comp_status)i;
    return COMP_FAILED;
}

int comp_metric_info(bool *out_higher_is_better, const char *metric)
{
    comp_metric_kind kind;
    int err;

    /* "map@k" is the API's name (k apart); score.h reads "map@<k>". */
    if (metric != NULL && strcmp(metric, "map@k") == 0)
        metric = "map@1";
    else if (metric == NULL || strchr(metric, '@') != NULL)
        return ed_error_set(ED_EINVAL, "metric must be one of accuracy, f1_macro, f1_micro, rmse, mae, "
                            "logloss, auc, map@k");
    if ((err = comp_metric_parse(&kind, NULL, metric)) < 0)
        return err;
    if (out_higher_is_better != NULL)
        *out_higher_is_better = comp_metric_higher_is_better(kind) != 0;
    return 0;
}

void comp_metric_full_name(char *out, size_t outlen, const char *metric, int k)
{
    if (strcmp(metric, "map@k") == 0)
        snprintf(out, outlen, "map@%d", k);
    else
        snprintf(out, outlen, "%s", metric);
}

int comp_ds_check(void *ds_handle, int64_t user, const char *dataset_id, int64_t version)
{
    ds_version *v = NULL;
    int err;

    if ((err = ds_version_get(&v, ds_handle, user, dataset_id, version)) < 0)
        return err;
    ds_version_free(v);
    return 0;
}

int comp__exec(comp *c, const char *sql, const char *fmt, ...)
{
    sqlite3_stmt *s = NULL;
    va_list ap;
    int err;

    if ((err = ed_store_prepare(&s, c->st, sql)) < 0)
        return err;
    va_start(ap, fmt);
    for (int i = 0; fmt[i] != '\0'; i++) {
        if (fmt[i] == 't') {
            const char *t = va_arg(ap, const char *);
            if (t != NULL)
                sqlite3_bind_text(s, i + 1, t, -1, SQLITE_TRANSIENT);
        } else if (fmt[i] == 'd') {
            sqlite3_bind_double(s, i + 1, va_arg(ap, double));
        } else {
            sqlite3_bind_int64(s, i + 1, va_arg(ap, int64_t));
        }
    }
    va_end(ap);
    return comp__step_done(c, s, "write");
}

int comp_dataset_in_use(char *why, size_t why_len, const char *id, int64_t number, void *payload)
{
    comp *c = payload;
    sqlite3_stmt *s = NULL;
    int rc, err;

    if ((err = ed_store_prepare(&s, c->st,
            "SELECT slug FROM competitions WHERE dataset_id = ?1 AND (?2 = 0 OR dataset_version = ?2) "
            "AND end_at > ?3 LIMIT 1")) < 0)
        return err;
    sqlite3_bind_text(s, 1, id, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(s, 2, number);
    sqlite3_bind_int64(s, 3, comp__now(c));
    rc = ed_store_step(s);
    if (rc == SQLITE_ROW && why != NULL && why_len > 0)
        snprintf(why, why_len, "competition '%s'", (const char *)sqlite3_column_text(s, 0));
    sqlite3_finalize(s);
    if (rc == SQLITE_ROW)
        return 1;
    return rc == SQLITE_DONE ? 0 : comp__db_error(c, rc, "dataset in use");
}
