/*
 * competition.c - a competition's settings: checking a spec, create, update,
 * get, list, and the rules acceptance (see comp.h).
 */
#include "comp_int.h"

#include "ed_crypto.h"
#include "ed_error.h"

#include <ctype.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Valid UTF-8 without control characters other than tab, CR and LF (those
 * only when `multiline`). */
static bool text_ok(const char *s, size_t len, bool multiline)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0;

    while (i < len) {
        unsigned char b = p[i];
        size_t n;
        if (b < 0x80) {
            if ((b < 0x20 && !(multiline && (b == '\t' || b == '\n' || b == '\r'))) || b == 0x7f)
                return false;
            i++;
            continue;
        }
        n = (b & 0xe0) == 0xc0 ? 2 : (b & 0xf0) == 0xe0 ? 3 : (b & 0xf8) == 0xf0 ? 4 : 0;
        if (n == 0 || i + n > len || (n == 2 && b < 0xc2) || (n == 4 && b > 0xf4))
            return false;
        for (size_t j = 1; j < n; j++)
            if ((p[i + j] & 0xc0) != 0x80)
                return false;
        i += n;
    }
    return true;
}

static int check_name(const char *field, const char *s, size_t max, bool multiline, bool required)
{
    size_t len;

    if (s == NULL) {
        if (required)
            return ed_error_set(ED_EINVAL, "%s is required", field);
        return 0;
    }
    len = strlen(s);
    if (required && len == 0)
        return ed_error_set(ED_EINVAL, "%s must not be empty", field);
    if (len > max)
        return ed_error_set(ED_ETOOBIG, "%s is %zu bytes, at most %zu", field, len, max);
    if (!text_ok(s, len, multiline))
        return ed_error_set(ED_EINVAL, "%s must be UTF-8 without control characters", field);
    return 0;
}

static int check_slug(const char *s)
{
    size_t len = strlen(s);

    if (len == 0 || len > COMP_SLUG_MAX)
        return ed_error_set(ED_EINVAL, "slug must be 1..%d characters", COMP_SLUG_MAX);
    if (!isalnum((unsigned char)s[0]))
        return ed_error_set(ED_EINVAL, "slug must start with a letter or digit");
    for (size_t i = 0; i < len; i++)
        if (!(islower((unsigned char)s[i]) || isdigit((unsigned char)s[i]) || s[i] == '-'))
            return ed_error_set(ED_EINVAL, "slug may hold only a-z, 0-9 and '-'");
    return 0;
}

/* The title made lower-case with runs of other characters turned into '-'. */
static void slug_from(char *out, size_t outlen, const char *title)
{
    size_t n = 0;
    bool dash = false;

    for (const char *p = title; *p != '\0' && n + 1 < outlen && n < COMP_SLUG_MAX; p++) {
        unsigned char ch = (unsigned char)*p;
        if (isalnum(ch) && ch < 0x80) {
            if (dash && n > 0)
                out[n++] = '-';
            if (n + 1 < outlen && n < COMP_SLUG_MAX)
                out[n++] = (char)tolower(ch);
            dash = false;
        } else {
            dash = true;
        }
    }
    out[n] = '\0';
    if (n == 0)
        snprintf(out, outlen, "competition");
}

static int check_column(const char *field, const char *s)
{
    int err;

    if ((err = check_name(field, s, COMP_COLUMN_MAX, false, true)) < 0)
        return err;
    if (strpbrk(s, ",\"") != NULL)
        return ed_error_set(ED_EINVAL, "%s must not hold a comma or a quote", field);
    return 0;
}

int comp_spec_check(const comp_spec *sp)
{
    bool higher;
    int err;

    if ((err = check_name("title", sp->title, COMP_TITLE_MAX, false, true)) < 0 ||
        (err = check_name("overview", sp->overview, COMP_TEXT_MAX, true, false)) < 0 ||
        (err = check_name("rules", sp->rules, COMP_TEXT_MAX, true, false)) < 0)
        return err;
    if (sp->slug != NULL && (err = check_slug(sp->slug)) < 0)
        return err;
    if ((err = check_column("id_column", sp->id_column)) < 0)
        return err;
    if (sp->ntargets == 0 || sp->target_columns == NULL)
        return ed_error_set(ED_EINVAL, "target_columns must name at least one column");
    if (sp->ntargets > 1)
        return ed_error_set(ED_EUNPROC, "target_columns: the scorer takes one target column (class "
                            "probabilities for logloss/auc are columns named by the classes), not %zu",
                            sp->ntargets);
    for (size_t i = 0; i < sp->ntargets; i++) {
        if ((err = check_column("target_columns", sp->target_columns[i])) < 0)
            return err;
        if (strcmp(sp->target_columns[i], sp->id_column) == 0)
            return ed_error_set(ED_EUNPROC, "target_columns holds id_column '%s'", sp->id_column);
        for (size_t j = 0; j < i; j++)
            if (strcmp(sp->target_columns[i], sp->target_columns[j]) == 0)
                return ed_error_set(ED_EUNPROC, "target_columns names '%s' twice", sp->target_columns[i]);
    }
    if ((err = comp_metric_info(&higher, sp->metric)) < 0)
        return err;
    if (strcmp(sp->metric, "map@k") == 0 && (sp->k < 1 || sp->k > 1000))
        return ed_error_set(ED_EUNPROC, "metric map@k needs k between 1 and 1000, not %d", sp->k);
    if (strcmp(sp->metric, "map@k") != 0 && sp->k != 0)
        return ed_error_set(ED_EUNPROC, "k is only for metric map@k, not %s", sp->metric);
    if (!isfinite(sp->public_fraction) || sp->public_fraction < 0 || sp->public_fraction > 1)
        return ed_error_set(ED_EINVAL, "public_fraction must be between 0 and 1");
    if (sp->daily_cap < 1 || sp->daily_cap > COMP_CAP_MAX)
        return ed_error_set(ED_EINVAL, "daily_cap must be 1..%d, not %d", COMP_CAP_MAX, sp->daily_cap);
    if (sp->total_cap < 0 || sp->total_cap > 1000000)
        return ed_error_set(ED_EINVAL, "total_cap must be 0 (none) or a positive number, not %d",
                            sp->total_cap);
    if (sp->total_cap > 0 && sp->total_cap < sp->daily_cap)
        return ed_error_set(ED_EUNPROC, "total_cap %d is below daily_cap %d", sp->total_cap, sp->daily_cap);
    if (sp->max_team_size < 1 || sp->max_team_size > COMP_TEAM_SIZE_MAX)
        return ed_error_set(ED_EINVAL, "max_team_size must be 1..%d", COMP_TEAM_SIZE_MAX);
    if (sp->selection_max < 0 || sp->selection_max > COMP_SELECT_MAX)
        return ed_error_set(ED_EINVAL, "selection_max must be 1..%d", COMP_SELECT_MAX);
    if ((unsigned)sp->mode > COMP_MODE_HIDDEN)
        return ed_error_set(ED_EINVAL, "leaderboard must be public, own_score or hidden");
    if ((err = comp__scorer_spec_check(sp)) < 0)   /* a custom scoring program (scorer.c) */
        return err;
    /* The timeline, as Kaggle's: start < merge <= selection <= end. */
    if (sp->start_at <= 0 || sp->end_at <= 0 || sp->merge_deadline <= 0 || sp->selection_deadline <= 0)
        return ed_error_set(ED_EINVAL, "start_at, end_at, merge_deadline and selection_deadline are required");
    if (sp->start_at >= sp->end_at)
        return ed_error_set(ED_EUNPROC, "start_at must be before end_at");
    if (sp->merge_deadline <= sp->start_at)
        return ed_error_set(ED_EUNPROC, "merge_deadline must be after start_at");
    if (sp->merge_deadline > sp->selection_deadline)
        return ed_error_set(ED_EUNPROC, "merge_deadline must not be after selection_deadline");
    if (sp->selection_deadline > sp->end_at)
        return ed_error_set(ED_EUNPROC, "selection_deadline must not be after end_at");
    /* A board that can show nothing. */
    if (sp->mode != COMP_MODE_HIDDEN && sp->public_fraction == 0)
        return ed_error_set(ED_EUNPROC, "leaderboard '%s' with public_fraction 0 shows no score; "
                            "use leaderboard 'hidden' or a public_fraction above 0", comp__mode_name(sp->mode));
    if (sp->public_fraction == 1)
        return ed_error_set(ED_EUNPROC, "public_fraction 1 leaves no private rows for the final board");
    if (sp->dataset_id != NULL && (strlen(sp->dataset_id) >= COMP_ID_LEN || sp->dataset_version < 1))
        return ed_error_set(ED_EINVAL, "dataset needs a dataset_id and a version >= 1");
    if (sp->dataset_id == NULL && sp->dataset_version != 0)
        return ed_error_set(ED_EUNPROC, "dataset version given without a dataset_id");
    if (sp->code.enabled) {
        if (sp->code.max_runtime_s < 1 || sp->code.max_runtime_s > 86400)
            return ed_error_set(ED_EINVAL, "code_competition.max_runtime_s must be 1..86400");
        if (sp->code.output_path == NULL || sp->code.output_path[0] == '\0' || sp->code.output_path[0] == '/' ||
            strstr(sp->code.output_path, "..") != NULL || strlen(sp->code.output_path) > 255)
            return ed_error_set(ED_EINVAL, "code_competition.output_path must be a relative path");
        if ((err = check_name("code_competition.resource", sp->code.resource, 64, false, false)) < 0)
            return err;
    } else if (sp->code.charged) {
        return ed_error_set(ED_EUNPROC, "code_competition.charged without a code competition");
    }
    if (sp->code.inputs_dataset_id != NULL &&
        (!sp->code.enabled || sp->code.inputs_dataset_id[0] == '\0' ||
         strlen(sp->code.inputs_dataset_id) >= COMP_ID_LEN || sp->code.inputs_version < 1))
        return ed_error_set(ED_EINVAL, "code_competition.inputs needs a code competition, a dataset_id and a "
                                       "version >= 1");
    return 0;
}

static char *targets_json(const comp_spec *sp)
{
    json_t *a = json_array();
    char *s;

    for (size_t i = 0; a != NULL && i < sp->ntargets; i++)
        json_array_append_new(a, json_string(sp->target_columns[i]));
    s = a != NULL ? json_dumps(a, JSON_COMPACT) : NULL;
    json_decref(a);
    return s;
}

typedef struct save_ctx {
    comp *c;
    const comp_spec *sp;
    const char *id;
    int64_t user;
    bool create;
    char slug[COMP_SLUG_MAX + 1];
    char *targets;
} save_ctx;

/* Bind the settings shared by INSERT and UPDATE at ?3.. */
static void bind_spec(sqlite3_stmt *s, const save_ctx *x, int64_t now)
{
    const comp_spec *sp = x->sp;
    bool higher = true;

    comp_metric_info(&higher, sp->metric);
    if (sp->scorer.direction != NULL)   /* a custom scoring program's direction (scorer.c) */
        higher = strcmp(sp->scorer.direction, "higher") == 0;
    sqlite3_bind_text(s, 3, sp->title, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(s, 4, x->slug, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(s, 5, sp->overview != NULL ? sp->overview : "", -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(s, 6, sp->rules != NULL ? sp->rules : "", -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(s, 7, sp->start_at);
    sqlite3_bind_int64(s, 8, sp->end_at);
    sqlite3_bind_int64(s, 9, sp->merge_deadline);
    sqlite3_bind_int64(s, 10, sp->selection_deadline);
    if (sp->dataset_id != NULL)
        sqlite3_bind_text(s, 11, sp->dataset_id, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(s, 12, sp->dataset_version);
    sqlite3_bind_text(s, 13, sp->id_column, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(s, 14, x->targets, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(s, 15, sp->metric, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int(s, 16, sp->k);
    sqlite3_bind_int(s, 17, higher);
    sqlite3_bind_double(s, 18, sp->public_fraction);
    sqlite3_bind_int(s, 19, sp->daily_cap);
    sqlite3_bind_int(s, 20, sp->total_cap);
    sqlite3_bind_int(s, 21, sp->invalid_counts);
    sqlite3_bind_int(s, 22, sp->max_team_size);
    sqlite3_bind_int(s, 23, sp->selection_max > 0 ? sp->selection_max : 2);
    sqlite3_bind_text(s, 24, comp__mode_name(sp->mode), -1, SQLITE_STATIC);
    sqlite3_bind_int(s, 25, sp->code.enabled);
    if (sp->code.enabled) {
        sqlite3_bind_text(s, 26, sp->code.resource != NULL ? sp->code.resource : "cpu", -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(s, 27, sp->code.output_path, -1, SQLITE_TRANSIENT);
    }
    sqlite3_bind_int64(s, 28, sp->code.enabled ? sp->code.max_runtime_s : 0);
    sqlite3_bind_int(s, 29, sp->code.charged);
    sqlite3_bind_int64(s, 30, now);
}

/* A code competition's hidden inputs (migration 0020), kept apart from the
 * settings' one statement. */
static int code_inputs_save(comp *c, const char *id, const comp_spec *sp)
{
    const char *ds = sp->code.enabled ? sp->code.inputs_dataset_id : NULL;

    return comp__exec(c, "UPDATE competitions SET code_inputs_dataset_id = ?2, code_inputs_version = ?3 "
                         "WHERE id = ?1", "tti", id, ds, ds != NULL ? sp->code.inputs_version : (int64_t)0);
}

static void code_inputs_load(comp *c, comp_competition *k)
{
    sqlite3_stmt *s = NULL;

    if (ed_store_prepare(&s, c->st, "SELECT code_inputs_dataset_id, code_inputs_version FROM competitions "
                                    "WHERE id = ?1 AND code_inputs_dataset_id IS NOT NULL") < 0) {
        ed_error_clear();
        return;
    }
    sqlite3_bind_text(s, 1, k->id, -1, SQLITE_TRANSIENT);
    if (ed_store_step(s) == SQLITE_ROW) {
        k->code_inputs_dataset_id = strdup((const char *)sqlite3_column_text(s, 0));
        k->code_inputs_version = sqlite3_column_int64(s, 1);
    }
    sqlite3_finalize(s);
}

int comp_competition_create(comp_competition **out, comp *c, int64_t user, const comp_spec *sp)
{
    save_ctx x = {.c = c, .sp = sp, .user = user, .create = true};
    sqlite3_stmt *s = NULL;
    char id[COMP_ID_LEN];
    int err, rc;

    if (out != NULL)
        *out = NULL;
    if (!comp_is_host(c, user))
        return ed_error_set(ED_EPERM, "only a host creates competitions");
    if ((err = comp_spec_check(sp)) < 0)
        return err;
    if (sp->dataset_id != NULL && c->hooks.dataset_check != NULL &&
        (err = c->hooks.dataset_check(c->hooks.payload, user, sp->dataset_id, sp->dataset_version)) < 0)
        return err;
    if (sp->code.inputs_dataset_id != NULL && c->hooks.dataset_check != NULL &&   /* the host reads them */
        (err = c->hooks.dataset_check(c->hooks.payload, user, sp->code.inputs_dataset_id,
                                      sp->code.inputs_version)) < 0)
        return err;
    if (sp->slug != NULL)
        snprintf(x.slug, sizeof(x.slug), "%s", sp->slug);
    else
        slug_from(x.slug, sizeof(x.slug), sp->title);
    if ((x.targets = targets_json(sp)) == NULL)
        return ed_error_set(ED_ENOMEM, "target columns");
    ed_uuid4(id);
    if ((err = ed_store_prepare(&s, c->st,
            "INSERT INTO competitions (id, host_id, title, slug, overview, rules, start_at, end_at, "
            "merge_deadline, selection_deadline, dataset_id, dataset_version, id_column, target_columns, "
            "metric, k, higher_is_better, public_fraction, daily_cap, total_cap, invalid_counts, "
            "max_team_size, selection_max, mode, code_enabled, code_resource, code_output_path, "
            "code_max_runtime_s, code_charged, created_at, updated_at, split_seed) VALUES (?1, ?2, ?3, ?4, "
            "?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21, ?22, ?23, ?24, "
            "?25, ?26, ?27, ?28, ?29, ?30, ?30, ?31)")) < 0)
        goto done;
    sqlite3_bind_text(s, 1, id, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(s, 2, user);
    bind_spec(s, &x, comp__now(c));
    /* The split seed, drawn once: the public/private split never changes. */
    sqlite3_bind_int64(s, 31, (int64_t)(ed_random_u64() >> 1));
    rc = ed_store_step(s);
    sqlite3_finalize(s);
    if (rc == SQLITE_CONSTRAINT) {
        err = ed_error_set(ED_EEXISTS, "a competition with slug '%s' exists", x.slug);
        goto done;
    }
    if (rc != SQLITE_DONE) {
        err = comp__db_error(c, rc, "insert competition");
        goto done;
    }
    if ((err = code_inputs_save(c, id, sp)) < 0)
        goto done;
    if ((err = comp__scorer_spec_save(c, id, sp)) == 0)   /* scorer.c */
        err = out != NULL ? comp_competition_get(out, c, user, id) : 0;
done:
    free(x.targets);
    return err;
}

int comp_competition_update(comp_competition **out, comp *c, int64_t user, const char *id,
                             const comp_spec *sp)
{
    save_ctx x = {.c = c, .sp = sp, .user = user, .id = id};
    comp_competition *cur = NULL;
    comp__info k;
    sqlite3_stmt *s = NULL;
    int err, rc;

    if (out != NULL)
        *out = NULL;
    if ((err = comp__info_get(&k, c, id)) < 0)
        return err;
    if (!comp__can_edit(c, &k, user))
        return ed_error_set(ED_EPERM, "only the competition's host or an admin changes it");
    if ((err = comp_spec_check(sp)) < 0)
        return err;
    if ((err = comp_competition_get(&cur, c, user, id)) < 0)
        return err;
    if ((err = comp__scorer_update_check(cur, sp, comp__now(c) >= k.start_at)) < 0) {   /* scorer.c */
        comp_competition_free(cur);
        return err;
    }
    if (comp__now(c) >= k.start_at) {
        /* What scores mean is fixed once submissions may exist. */
        bool same_targets = cur->ntargets == sp->ntargets;
        for (size_t i = 0; same_targets && i < sp->ntargets; i++)
            same_targets = strcmp(cur->target_columns[i], sp->target_columns[i]) == 0;
        const char *field = strcmp(cur->metric, sp->metric) != 0 ? "metric"
                            : cur->k != sp->k ? "k"
                            : strcmp(cur->id_column, sp->id_column) != 0 ? "id_column"
                            : !same_targets ? "target_columns"
                            : cur->public_fraction != sp->public_fraction ? "public_fraction"
                            : cur->start_at != sp->start_at ? "start_at"
                            : NULL;
        if (field != NULL) {
            comp_competition_free(cur);
            return ed_error_set(ED_ECONFLICT, "%s cannot change once the competition has started", field);
        }
    }
    snprintf(x.slug, sizeof(x.slug), "%s", sp->slug != NULL ? sp->slug : cur->slug);
    comp_competition_free(cur);
    if (sp->dataset_id != NULL && c->hooks.dataset_check != NULL &&
        (err = c->hooks.dataset_check(c->hooks.payload, user, sp->dataset_id, sp->dataset_version)) < 0)
        return err;
    if (sp->code.inputs_dataset_id != NULL && c->hooks.dataset_check != NULL &&   /* the host reads them */
        (err = c->hooks.dataset_check(c->hooks.payload, user, sp->code.inputs_dataset_id,
                                      sp->code.inputs_version)) < 0)
        return err;
    if ((x.targets = targets_json(sp)) == NULL)
        return ed_error_set(ED_ENOMEM, "target columns");
    if ((err = ed_store_prepare(&s, c->st,
            "UPDATE competitions SET title = ?3, slug = ?4, overview = ?5, rules = ?6, start_at = ?7, "
            "end_at = ?8, merge_deadline = ?9, selection_deadline = ?10, dataset_id = ?11, "
            "dataset_version = ?12, id_column = ?13, target_columns = ?14, metric = ?15, k = ?16, "
            "higher_is_better = ?17, public_fraction = ?18, daily_cap = ?19, total_cap = ?20, "
            "invalid_counts = ?21, max_team_size = ?22, selection_max = ?23, mode = ?24, code_enabled = ?25, "
            "code_resource = ?26, code_output_path = ?27, code_max_runtime_s = ?28, code_charged = ?29, "
            "updated_at = ?30 WHERE id = ?1 AND ?2 = ?2")) < 0)
        goto done;
    sqlite3_bind_text(s, 1, id, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(s, 2, user);
    bind_spec(s, &x, comp__now(c));
    rc = ed_store_step(s);
    sqlite3_finalize(s);
    if (rc == SQLITE_CONSTRAINT) {
        err = ed_error_set(ED_EEXISTS, "a competition with slug '%s' exists", x.slug);
        goto done;
    }
    if (rc != SQLITE_DONE) {
        err = comp__db_error(c, rc, "update competition");
        goto done;
    }
    if ((err = code_inputs_save(c, id, sp)) < 0)
        goto done;
    if ((err = comp__scorer_spec_save(c, id, sp)) == 0)   /* scorer.c */
        err = out != NULL ? comp_competition_get(out, c, user, id) : 0;
done:
    free(x.targets);
    return err;
}

void comp_competition_free(comp_competition *k)
{
    if (k == NULL)
        return;
    free(k->title);
    free(k->slug);
    free(k->overview);
    free(k->rules);
    free(k->dataset_id);
    free(k->id_column);
    for (size_t i = 0; i < k->ntargets; i++)
        free(k->target_columns[i]);
    free(k->target_columns);
    free(k->metric);
    free(k->code_resource);
    free(k->code_output_path);
    free(k->code_inputs_dataset_id);
    free(k);
}

#define COMP_COLS "id, host_id, title, slug, overview, rules, start_at, end_at, merge_deadline, " \
    "selection_deadline, dataset_id, dataset_version, id_column, target_columns, metric, k, higher_is_better, " \
    "public_fraction, daily_cap, total_cap, invalid_counts, max_team_size, selection_max, mode, code_enabled, " \
    "code_resource, code_output_path, code_max_runtime_s, code_charged, truth_rows, created_at, updated_at"

static char *col_dup(sqlite3_stmt *s, int i)
{
    const unsigned char *t = sqlite3_column_text(s, i);

    return t != NULL ? strdup((const char *)t) : NULL;
}

static int row_to_competition(comp_competition **out, comp *c, sqlite3_stmt *s, int64_t user)
{
    comp_competition *k;
    json_t *targets = NULL;
    const char *mode;
    int64_t n = 0;

    *out = NULL;
    if ((k = calloc(1, sizeof(*k))) == NULL)
        return ed_error_set(ED_ENOMEM, "competition");
    snprintf(k->id, sizeof(k->id), "%s", (const char *)sqlite3_column_text(s, 0));
    k->host_id = sqlite3_column_int64(s, 1);
    k->title = col_dup(s, 2);
    k->slug = col_dup(s, 3);
    k->overview = col_dup(s, 4);
    k->rules = col_dup(s, 5);
    k->start_at = sqlite3_column_int64(s, 6);
    k->end_at = sqlite3_column_int64(s, 7);
    k->merge_deadline = sqlite3_column_int64(s, 8);
    k->selection_deadline = sqlite3_column_int64(s, 9);
    k->dataset_id = col_dup(s, 10);
    k->dataset_version = sqlite3_column_int64(s, 11);
    k->id_column = col_dup(s, 12);
    targets = json_loads((const char *)sqlite3_column_text(s, 13), 0, NULL);
    if (json_is_array(targets) && (k->target_columns = calloc(json_array_size(targets) + 1, sizeof(char *)))) {
        for (size_t i = 0; i < json_array_size(targets); i++)
            k->target_columns[k->ntargets++] = strdup(json_string_value(json_array_get(targets, i)));
    }
    json_decref(targets);
    k->metric = col_dup(s, 14);
    k->k = sqlite3_column_int(s, 15);
    k->higher_is_better = sqlite3_column_int(s, 16) != 0;
    k->public_fraction = sqlite3_column_double(s, 17);
    k->daily_cap = sqlite3_column_int(s, 18);
    k->total_cap = sqlite3_column_int(s, 19);
    k->invalid_counts = sqlite3_column_int(s, 20) != 0;
    k->max_team_size = sqlite3_column_int(s, 21);
    k->selection_max = sqlite3_column_int(s, 22);
    mode = (const char *)sqlite3_column_text(s, 23);
    k->mode = strcmp(mode, "own_score") == 0 ? COMP_MODE_OWN_SCORE
              : strcmp(mode, "hidden") == 0 ? COMP_MODE_HIDDEN : COMP_MODE_PUBLIC;
    k->code_enabled = sqlite3_column_int(s, 24) != 0;
    k->code_resource = col_dup(s, 25);
    k->code_output_path = col_dup(s, 26);
    k->code_max_runtime_s = sqlite3_column_int64(s, 27);
    k->code_charged = sqlite3_column_int(s, 28) != 0;
    code_inputs_load(c, k);
    k->truth_rows = sqlite3_column_int64(s, 29);
    k->has_truth = k->truth_rows > 0;
    k->created_at = sqlite3_column_int64(s, 30);
    k->updated_at = sqlite3_column_int64(s, 31);
    if (k->title == NULL || k->slug == NULL || k->id_column == NULL || k->metric == NULL ||
        k->target_columns == NULL) {
        comp_competition_free(k);
        return ed_error_set(ED_ENOMEM, "competition");
    }
    k->can_edit = k->host_id == user || comp__is_admin(c, user);
    k->rules_accepted = comp__int(&n, c, 0,
        "SELECT 1 FROM comp_rules_accepted WHERE comp_id = ?1 AND user_id = ?2", "ti", k->id, user) == 0 &&
        n == 1;
    comp__competition_fill(c, k);   /* the host's username, the scoring program (scorer.c) */
    *out = k;
    return 0;
}

int comp_competition_get(comp_competition **out, comp *c, int64_t user, const char *id_or_slug)
{
    sqlite3_stmt *s = NULL;
    int rc, err;

    *out = NULL;
    if (id_or_slug == NULL || strlen(id_or_slug) > COMP_SLUG_MAX + COMP_ID_LEN)
        return ed_error_set(ED_ENOTFOUND, "competition not found");
    if ((err = ed_store_prepare(&s, c->st,
            "SELECT " COMP_COLS " FROM competitions WHERE id = ?1 OR slug = ?1 LIMIT 1")) < 0)
        return err;
    sqlite3_bind_text(s, 1, id_or_slug, -1, SQLITE_TRANSIENT);
    rc = ed_store_step(s);
    if (rc == SQLITE_ROW)
        err = row_to_competition(out, c, s, user);
    else if (rc == SQLITE_DONE)
        err = ed_error_set(ED_ENOTFOUND, "competition %.100s not found", id_or_slug);
    else
        err = comp__db_error(c, rc, "read competition");
    sqlite3_finalize(s);
    return err;
}

int comp_competition_list_get(comp_competition_list **out, comp *c, int64_t user, size_t limit,
                              size_t offset)
{
    comp_competition_list *l;
    sqlite3_stmt *s = NULL;
    int rc, err;

    *out = NULL;
    if (limit == 0 || limit > COMP_LIST_MAX)
        limit = COMP_LIST_MAX;
    if ((l = calloc(1, sizeof(*l))) == NULL || (l->items = calloc(limit, sizeof(*l->items))) == NULL) {
        free(l);
        return ed_error_set(ED_ENOMEM, "competition list");
    }
    if ((err = ed_store_prepare(&s, c->st,
            "SELECT " COMP_COLS " FROM competitions ORDER BY start_at DESC, id LIMIT ?1 OFFSET ?2")) < 0)
        goto fail;
    sqlite3_bind_int64(s, 1, (int64_t)limit);
    sqlite3_bind_int64(s, 2, (int64_t)offset);
    while ((rc = ed_store_step(s)) == SQLITE_ROW)
        if ((err = row_to_competition(&l->items[l->count], c, s, user)) < 0)
            goto fail;
        else
            l->count++;
    if (rc != SQLITE_DONE) {
        err = comp__db_error(c, rc, "list competitions");
        goto fail;
    }
    sqlite3_finalize(s);
    *out = l;
    return 0;
fail:
    sqlite3_finalize(s);
    comp_competition_list_free(l);
    return err;
}

void comp_competition_list_free(comp_competition_list *l)
{
    if (l == NULL)
        return;
    for (size_t i = 0; i < l->count; i++)
        comp_competition_free(l->items[i]);
    free(l->items);
    free(l);
}

bool comp__rules_ok(comp *c, const char *id, int64_t user)
{
    int64_t n = 0;

    return comp__int(&n, c, 0, "SELECT 1 FROM comp_rules_accepted WHERE comp_id = ?1 AND user_id = ?2",
                     "ti", id, user) == 0 && n == 1;
}

int comp_rules_accept(comp *c, int64_t user, const char *id)
{
    sqlite3_stmt *s = NULL;
    comp__info k;
    int err;

    if ((err = comp__info_get(&k, c, id)) < 0)
        return err;
    if ((err = ed_store_prepare(&s, c->st,
            "INSERT OR IGNORE INTO comp_rules_accepted (comp_id, user_id, accepted_at) VALUES (?1, ?2, ?3)")) < 0)
        return err;
    sqlite3_bind_text(s, 1, id, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(s, 2, user);
    sqlite3_bind_int64(s, 3, comp__now(c));
    return comp__step_done(c, s, "accept rules");
}
