/*
 * competitions_json.c - competitions' request bodies into comp_spec and
 * comp.h's structs into API.md's JSON (see competitions_int.h). No function
 * here sees a private score: comp_submission has no such field.
 */
#include "competitions_int.h"

#include "ed_error.h"
#include "ed_time.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static json_t *time_json(int64_t ms)
{
    char buf[ED_RFC3339_LEN];

    if (ms <= 0)
        return json_null();
    return json_string(ed_time_rfc3339(buf, sizeof(buf), ms));
}

static const char *mode_name(comp_board_mode m)
{
    return m == COMP_MODE_OWN_SCORE ? "own_score" : m == COMP_MODE_HIDDEN ? "hidden" : "public";
}

/* Digits at s[0..n) as a number; -1 when one is not a digit. */
static int digits(const char *s, int n)
{
    int v = 0;

    for (int i = 0; i < n; i++) {
        if (!isdigit((unsigned char)s[i]))
            return -1;
        v = v * 10 + (s[i] - '0');
    }
    return v;
}

int gw__comp_time_parse(int64_t *out, const char *s, const char *name)
{
    struct tm tm = {0};
    int64_t ms = 0, off_min = 0;
    const char *p;
    time_t t;

    /* YYYY-MM-DDTHH:MM:SS[.fff][Z|+HH:MM|-HH:MM] */
    if (strlen(s) < 20 || s[4] != '-' || s[7] != '-' || (s[10] != 'T' && s[10] != 't' && s[10] != ' ') ||
        s[13] != ':' || s[16] != ':')
        goto bad;
    tm.tm_year = digits(s, 4) - 1900;
    tm.tm_mon = digits(s + 5, 2) - 1;
    tm.tm_mday = digits(s + 8, 2);
    tm.tm_hour = digits(s + 11, 2);
    tm.tm_min = digits(s + 14, 2);
    tm.tm_sec = digits(s + 17, 2);
    if (tm.tm_year < 70 || tm.tm_year > 8000 || tm.tm_mon < 0 || tm.tm_mon > 11 || tm.tm_mday < 1 ||
        tm.tm_mday > 31 || tm.tm_hour < 0 || tm.tm_hour > 23 || tm.tm_min < 0 || tm.tm_min > 59 ||
        tm.tm_sec < 0 || tm.tm_sec > 60)
        goto bad;
    p = s + 19;
    if (*p == '.') {
        int n = 0, scale = 100;
        for (p++; isdigit((unsigned char)*p); p++, n++) {
            ms += (*p - '0') * scale;
            scale /= 10;
        }
        if (n == 0)
            goto bad;
    }
    if (*p == 'Z' || *p == 'z') {
        p++;
    } else if (*p == '+' || *p == '-') {
        int h = digits(p + 1, 2), m = p[3] == ':' ? digits(p + 4, 2) : -1;
        if (h < 0 || h > 23 || m < 0 || m > 59)
            goto bad;
        off_min = (h * 60 + m) * (*p == '-' ? -1 : 1);
        p += 6;
    } else {
        goto bad;
    }
    if (*p != '\0' || (t = timegm(&tm)) == (time_t)-1)
        goto bad;
    *out = ((int64_t)t - off_min * 60) * 1000 + ms;
    return 0;
bad:
    return ed_error_set(ED_EINVAL, "field '%s' must be an RFC 3339 time such as \"2026-12-31T23:59:59Z\"",
                        name);
}

/* An optional time field: absent or null leaves *out. */
static int get_time(int64_t *out, const json_t *body, const char *name, bool required)
{
    const char *s = NULL;
    int err;

    if ((err = ed_json_get_str(&s, body, name, required)) < 0)
        return err;
    return s ? gw__comp_time_parse(out, s, name) : 0;
}

/* An optional integer in [min, max]: absent leaves *out. */
static int get_int(int *out, const json_t *body, const char *name, int64_t min, int64_t max)
{
    int64_t v = *out;
    int err = gw_json_int(&v, body, name, min, max, false);

    if (err == 0)
        *out = (int)v;
    return err;
}

static int get_fraction(double *out, const json_t *body, const char *name)
{
    const json_t *v = json_object_get(body, name);

    if (v == NULL || json_is_null(v))
        return 0;
    if (!json_is_number(v) || json_number_value(v) < 0 || json_number_value(v) > 1)
        return ed_error_set(ED_EUNPROC, "field '%s' must be a number from 0 to 1", name);
    *out = json_number_value(v);
    return 0;
}

static int parse_mode(comp_board_mode *out, const json_t *body)
{
    const char *m = NULL;
    int err;

    if ((err = ed_json_get_str(&m, body, "leaderboard", false)) < 0 || m == NULL)
        return err;
    if (strcmp(m, "public") == 0)
        *out = COMP_MODE_PUBLIC;
    else if (strcmp(m, "own_score") == 0)
        *out = COMP_MODE_OWN_SCORE;
    else if (strcmp(m, "hidden") == 0)
        *out = COMP_MODE_HIDDEN;
    else
        return ed_error_set(ED_EINVAL, "field 'leaderboard' must be \"public\", \"own_score\" or \"hidden\"");
    return 0;
}

static int parse_dataset(comp_spec *spec, const json_t *body)
{
    const json_t *d = json_object_get(body, "dataset");
    int64_t v = 0;
    int err;

    if (d == NULL)
        return 0;
    if (json_is_null(d)) {
        spec->dataset_id = NULL;
        spec->dataset_version = 0;
        return 0;
    }
    if (!json_is_object(d))
        return ed_error_set(ED_EINVAL, "field 'dataset' must be an object {dataset_id, version}");
    if ((err = ed_json_get_str(&spec->dataset_id, d, "dataset_id", true)) < 0)
        return ed_error_set(err, "field 'dataset.dataset_id' is required (a string)");
    if ((err = gw_json_int(&v, d, "version", 1, INT64_MAX, true)) < 0)
        return ed_error_set(err, "field 'dataset.version' must be a version number (1 or more)");
    spec->dataset_version = v;
    return 0;
}

static int parse_targets(comp_spec *spec, gw_request *req, const json_t *body)
{
    const json_t *t = json_object_get(body, "target_columns");
    const char **v;
    size_t n;

    if (t == NULL || json_is_null(t))
        return 0;
    if (json_is_string(t)) {   /* one column given as a string */
        if ((v = ed_arena_alloc(req->arena, sizeof(*v))) == NULL)
            return ed_error_set(ED_ENOMEM, "target columns");
        v[0] = json_string_value(t);
        spec->target_columns = v;
        spec->ntargets = 1;
        return 0;
    }
    if (!json_is_array(t) || (n = json_array_size(t)) == 0 || n > COMP_TARGETS_MAX)
        return ed_error_set(ED_EINVAL, "field 'target_columns' must be a list of 1 to %d column names",
                            COMP_TARGETS_MAX);
    if ((v = ed_arena_calloc(req->arena, n, sizeof(*v))) == NULL)
        return ed_error_set(ED_ENOMEM, "target columns");
    for (size_t i = 0; i < n; i++)
        if ((v[i] = json_string_value(json_array_get(t, i))) == NULL)
            return ed_error_set(ED_EINVAL, "field 'target_columns[%zu]' must be a string", i);
    spec->target_columns = v;
    spec->ntargets = n;
    return 0;
}

static int parse_code(comp_spec *spec, const json_t *body)
{
    const json_t *c = json_object_get(body, "code_competition"), *in;
    int64_t rt = spec->code.max_runtime_s ? spec->code.max_runtime_s : 3600;
    int err;

    if (c == NULL)
        return 0;
    if (json_is_null(c) || json_is_false(c)) {
        spec->code = (comp_code_spec){0};
        return 0;
    }
    if (!json_is_object(c))
        return ed_error_set(ED_EINVAL, "field 'code_competition' must be an object "
                                       "{resource, max_runtime_s, output_path, charged} or null");
    spec->code.enabled = true;
    if ((err = ed_json_get_str(&spec->code.resource, c, "resource", false)) < 0 ||
        (err = ed_json_get_str(&spec->code.output_path, c, "output_path", false)) < 0 ||
        (err = ed_json_get_bool(&spec->code.charged, c, "charged", false)) < 0)
        return ed_error_set(err, "code_competition: %s", ed_error_last());
    if ((err = gw_json_int(&rt, c, "max_runtime_s", 1, 86400, false)) < 0)
        return ed_error_set(err, "field 'code_competition.max_runtime_s' must be an integer from 1 to 86400");
    spec->code.max_runtime_s = rt;
    if (spec->code.output_path == NULL)
        spec->code.output_path = "submission.csv";
    /* "inputs": {dataset_id, version} of the host's, or null (none) */
    if ((in = json_object_get(c, "inputs")) != NULL) {
        int64_t v = 0;
        spec->code.inputs_dataset_id = NULL;
        spec->code.inputs_version = 0;
        if (!json_is_null(in) &&
            (!json_is_object(in) || ed_json_get_str(&spec->code.inputs_dataset_id, in, "dataset_id", true) < 0 ||
             gw_json_int(&v, in, "version", 1, INT64_MAX, true) < 0))
            return ed_error_set(ED_EINVAL, "field 'code_competition.inputs' must be {dataset_id, version} or null");
        spec->code.inputs_version = v;
    }
    return 0;
}

/* "scorer": {direction: "higher"|"lower", timeout_s?, memory_mb?} or null
 * (the built-in metric). The program itself: PUT .../scorer. */
static int parse_scorer(comp_spec *spec, const json_t *body)
{
    const json_t *o = json_object_get(body, "scorer");
    int err;

    if (o == NULL)
        return 0;
    if (json_is_null(o)) {
        spec->scorer = (comp_scorer_spec){0};
        return 0;
    }
    if (!json_is_object(o))
        return ed_error_set(ED_EINVAL, "field 'scorer' must be an object {direction, timeout_s, memory_mb} or null");
    {
        const char *key;
        json_t *v;
        json_object_foreach((json_t *)o, key, v) {
            (void)v;
            if (strcmp(key, "direction") != 0 && strcmp(key, "timeout_s") != 0 && strcmp(key, "memory_mb") != 0 &&
                strcmp(key, "uploaded") != 0)
                return ed_error_set(ED_EINVAL, "unknown field 'scorer.%s'", key);
        }
    }
    if ((err = ed_json_get_str(&spec->scorer.direction, o, "direction", true)) < 0)
        return ed_error_set(err, "field 'scorer.direction' is required: \"higher\" or \"lower\" (is better)");
    if ((err = get_int(&spec->scorer.timeout_s, o, "timeout_s", 1, COMP_SCORER_TIMEOUT_MAX)) < 0 ||
        (err = get_int(&spec->scorer.memory_mb, o, "memory_mb", 64, COMP_SCORER_MEMORY_MAX_MB)) < 0)
        return ed_error_set(err, "scorer: %s", ed_error_last());
    return 0;
}

/* Refuse members this API does not know: a typo must not be silently a
 * default (a cap of 5 instead of the 50 the host meant). */
static int check_members(const json_t *body)
{
    static const char *const known[] = {
        "title", "slug", "overview", "rules", "start_at", "end_at", "merge_deadline",
        "selection_deadline", "dataset", "id_column", "target_columns", "metric", "k",
        "public_fraction", "daily_cap", "total_cap", "invalid_counts", "max_team_size",
        "selection_max", "leaderboard", "code_competition", "scorer", NULL};
    const char *key;
    json_t *v;

    json_object_foreach((json_t *)body, key, v) {
        size_t i = 0;
        (void)v;
        while (known[i] && strcmp(known[i], key) != 0)
            i++;
        if (known[i] == NULL)
            return ed_error_set(ED_EINVAL, "unknown field '%s'", key);
    }
    return 0;
}

int gw__comp_spec_parse(comp_spec *spec, gw_request *req, const json_t *body, const comp_competition *base)
{
    int64_t k;
    int err;

    *spec = COMP_SPEC_INIT;
    if (base) {
        spec->title = base->title;
        spec->slug = base->slug;
        spec->overview = base->overview;
        spec->rules = base->rules;
        spec->start_at = base->start_at;
        spec->end_at = base->end_at;
        spec->merge_deadline = base->merge_deadline;
        spec->selection_deadline = base->selection_deadline;
        spec->dataset_id = base->dataset_id;
        spec->dataset_version = base->dataset_version;
        spec->id_column = base->id_column;
        spec->target_columns = (const char *const *)base->target_columns;
        spec->ntargets = base->ntargets;
        spec->metric = base->metric;
        spec->k = base->k;
        spec->public_fraction = base->public_fraction;
        spec->daily_cap = base->daily_cap;
        spec->total_cap = base->total_cap;
        spec->invalid_counts = base->invalid_counts;
        spec->max_team_size = base->max_team_size;
        spec->selection_max = base->selection_max;
        spec->mode = base->mode;
        spec->code.enabled = base->code_enabled;
        spec->code.resource = base->code_resource;
        spec->code.max_runtime_s = base->code_max_runtime_s;
        spec->code.output_path = base->code_output_path;
        spec->code.charged = base->code_charged;
        spec->code.inputs_dataset_id = base->code_inputs_dataset_id;
        spec->code.inputs_version = base->code_inputs_version;
        if (base->scorer_direction[0]) {
            spec->scorer.direction = base->scorer_direction;
            spec->scorer.timeout_s = base->scorer_timeout_s;
            spec->scorer.memory_mb = base->scorer_memory_mb;
        }
    }
    k = spec->k;
    if ((err = check_members(body)) < 0 ||
        (err = ed_json_get_str(&spec->title, body, "title", base == NULL)) < 0 ||
        (err = ed_json_get_str(&spec->slug, body, "slug", false)) < 0 ||
        (err = ed_json_get_str(&spec->overview, body, "overview", false)) < 0 ||
        (err = ed_json_get_str(&spec->rules, body, "rules", false)) < 0 ||
        (err = get_time(&spec->start_at, body, "start_at", base == NULL)) < 0 ||
        (err = get_time(&spec->end_at, body, "end_at", base == NULL)) < 0 ||
        (err = get_time(&spec->merge_deadline, body, "merge_deadline", false)) < 0 ||
        (err = get_time(&spec->selection_deadline, body, "selection_deadline", false)) < 0 ||
        (err = parse_dataset(spec, body)) < 0 ||
        (err = ed_json_get_str(&spec->id_column, body, "id_column", base == NULL)) < 0 ||
        (err = parse_targets(spec, req, body)) < 0 ||
        (err = ed_json_get_str(&spec->metric, body, "metric", base == NULL)) < 0 ||
        (err = gw_json_int(&k, body, "k", 0, 1000, false)) < 0 ||
        (err = get_fraction(&spec->public_fraction, body, "public_fraction")) < 0 ||
        (err = get_int(&spec->daily_cap, body, "daily_cap", 0, COMP_CAP_MAX)) < 0 ||
        (err = get_int(&spec->total_cap, body, "total_cap", 0, INT32_MAX)) < 0 ||
        (err = ed_json_get_bool(&spec->invalid_counts, body, "invalid_counts", false)) < 0 ||
        (err = get_int(&spec->max_team_size, body, "max_team_size", 0, COMP_TEAM_SIZE_MAX)) < 0 ||
        (err = get_int(&spec->selection_max, body, "selection_max", 0, COMP_SELECT_MAX)) < 0 ||
        (err = parse_mode(&spec->mode, body)) < 0 || (err = parse_code(spec, body)) < 0 ||
        (err = parse_scorer(spec, body)) < 0)
        return err;
    spec->k = (int)k;
    if (base == NULL && spec->ntargets == 0)
        return ed_error_set(ED_EINVAL, "field 'target_columns' is required");
    /* Deadlines left out default to the end (Kaggle's usual: a week before
     * is a host's choice, not ours). */
    if (spec->merge_deadline == 0 || (base && json_object_get(body, "end_at") &&
                                      !json_object_get(body, "merge_deadline") &&
                                      base->merge_deadline == base->end_at))
        spec->merge_deadline = spec->end_at;
    if (spec->selection_deadline == 0 || (base && json_object_get(body, "end_at") &&
                                          !json_object_get(body, "selection_deadline") &&
                                          base->selection_deadline == base->end_at))
        spec->selection_deadline = spec->end_at;
    return 0;
}

json_t *gw__comp_json(gw_request *req, const comp_competition *k)
{
    json_t *o = json_object(), *targets = json_array();
    int64_t now = ed_now_ms();
    const char *phase = now < k->start_at ? "upcoming" : now < k->end_at ? "active" : "ended";

    (void)req;
    if (o == NULL || targets == NULL) {
        json_decref(o);
        json_decref(targets);
        return NULL;
    }
    for (size_t i = 0; i < k->ntargets; i++)
        json_array_append_new(targets, json_string(k->target_columns[i]));
    json_object_set_new(o, "id", json_string(k->id));
    json_object_set_new(o, "slug", json_string(k->slug));
    json_object_set_new(o, "title", json_string(k->title));
    json_object_set_new(o, "overview", json_string(k->overview ? k->overview : ""));
    json_object_set_new(o, "rules", json_string(k->rules ? k->rules : ""));
    json_object_set_new(o, "host_id", json_integer(k->host_id));
    json_object_set_new(o, "host", json_string(k->host_username));
    json_object_set_new(o, "phase", json_string(phase));
    json_object_set_new(o, "start_at", time_json(k->start_at));
    json_object_set_new(o, "end_at", time_json(k->end_at));
    json_object_set_new(o, "merge_deadline", time_json(k->merge_deadline));
    json_object_set_new(o, "selection_deadline", time_json(k->selection_deadline));
    json_object_set_new(o, "dataset", k->dataset_id ? json_pack("{s:s, s:I}", "dataset_id", k->dataset_id,
                                                                "version", (json_int_t)k->dataset_version)
                                                    : json_null());
    json_object_set_new(o, "id_column", json_string(k->id_column));
    json_object_set_new(o, "target_columns", targets);
    json_object_set_new(o, "metric", json_string(k->metric));
    json_object_set_new(o, "k", k->k ? json_integer(k->k) : json_null());
    json_object_set_new(o, "higher_is_better", json_boolean(k->higher_is_better));
    json_object_set_new(o, "public_fraction", json_real(k->public_fraction));
    json_object_set_new(o, "daily_cap", json_integer(k->daily_cap));
    json_object_set_new(o, "total_cap", k->total_cap ? json_integer(k->total_cap) : json_null());
    json_object_set_new(o, "invalid_counts", json_boolean(k->invalid_counts));
    json_object_set_new(o, "max_team_size", json_integer(k->max_team_size));
    json_object_set_new(o, "selection_max", json_integer(k->selection_max));
    json_object_set_new(o, "leaderboard", json_string(mode_name(k->mode)));
    json_object_set_new(o, "code_competition",
                        k->code_enabled
                            ? json_pack("{s:s, s:I, s:s, s:b}", "resource",
                                        k->code_resource ? k->code_resource : "cpu", "max_runtime_s",
                                        (json_int_t)k->code_max_runtime_s, "output_path",
                                        k->code_output_path ? k->code_output_path : "submission.csv",
                                        "charged", k->code_charged)
                            : json_null());
    /* the hidden inputs: the host's to know */
    if (k->code_enabled && k->can_edit && k->code_inputs_dataset_id != NULL)
        json_object_set_new(json_object_get(o, "code_competition"), "inputs",
                            json_pack("{s:s, s:I}", "dataset_id", k->code_inputs_dataset_id, "version",
                                      (json_int_t)k->code_inputs_version));
    json_object_set_new(o, "scorer",
                        k->scorer_direction[0]
                            ? json_pack("{s:s, s:i, s:i, s:b}", "direction", k->scorer_direction, "timeout_s",
                                        k->scorer_timeout_s, "memory_mb", k->scorer_memory_mb, "uploaded",
                                        k->has_scorer)
                            : json_null());
    json_object_set_new(o, "has_truth", json_boolean(k->has_truth));
    json_object_set_new(o, "rows", json_integer(k->truth_rows));
    json_object_set_new(o, "can_edit", json_boolean(k->can_edit));
    json_object_set_new(o, "rules_accepted", json_boolean(k->rules_accepted));
    json_object_set_new(o, "created_at", time_json(k->created_at));
    json_object_set_new(o, "updated_at", time_json(k->updated_at));
    return o;
}

json_t *gw__comp_submission_json(gw_request *req, const comp_submission *s)
{
    json_t *o = json_object();

    (void)req;
    if (o == NULL)
        return NULL;
    json_object_set_new(o, "id", json_string(s->id));
    json_object_set_new(o, "team_id", json_integer(s->team_id));
    json_object_set_new(o, "team_name", json_string(s->team_name));
    json_object_set_new(o, "user_id", json_integer(s->user_id));
    json_object_set_new(o, "username", json_string(s->username));
    json_object_set_new(o, "status", json_string(comp_status_name(s->status)));
    json_object_set_new(o, "kind", json_string(s->code ? "code" : "csv"));
    json_object_set_new(o, "created_at", time_json(s->created_at));
    json_object_set_new(o, "public_score", s->has_public_score ? json_real(s->public_score) : json_null());
    json_object_set_new(o, "metric_version", s->metric_version ? json_integer(s->metric_version) : json_null());
    json_object_set_new(o, "counted", json_boolean(s->counted));
    json_object_set_new(o, "selected", json_boolean(s->selected));
    json_object_set_new(o, "retries", json_integer(s->retries));
    if (s->error_class && s->error_class[0]) {
        json_t *e = json_pack("{s:s, s:s}", "class", s->error_class, "message",
                              s->error_message ? s->error_message : "");
        if (e && s->log_tail && s->log_tail[0])
            json_object_set_new(e, "log_tail", json_string(s->log_tail));
        json_object_set_new(o, "error", e ? e : json_null());
    } else {
        json_object_set_new(o, "error", json_null());
    }
    return o;
}

json_t *gw__comp_team_json(gw_request *req, const comp_team *t)
{
    json_t *members = json_array(), *invited = json_array();

    (void)req;
    if (members == NULL || invited == NULL) {
        json_decref(members);
        json_decref(invited);
        return NULL;
    }
    for (size_t i = 0; i < t->nmembers; i++)
        json_array_append_new(members, json_pack("{s:I, s:s}", "user_id", (json_int_t)t->members[i].user_id,
                                                 "username", t->members[i].username));
    for (size_t i = 0; i < t->ninvited; i++)
        json_array_append_new(invited, json_integer(t->invited[i]));
    return json_pack("{s:I, s:s, s:o, s:o, s:o, s:I, s:I}", "id", (json_int_t)t->id, "name", t->name,
                     "members", members, "invited", invited, "merge_request_to",
                     t->merge_request_to ? json_integer(t->merge_request_to) : json_null(), "submissions",
                     (json_int_t)t->submissions, "submissions_today", (json_int_t)t->submissions_today);
}

json_t *gw__comp_entry_json(gw_request *req, const comp_board_entry *e)
{
    (void)req;
    /* "team" and "team_name" both hold the team's name (API.md names it "team") */
    return json_pack("{s:o, s:I, s:s, s:s, s:f, s:o, s:s}", "rank",
                     e->rank > 0 ? json_integer(e->rank) : json_null(), "team_id", (json_int_t)e->team_id,
                     "team", e->team_name ? e->team_name : "", "team_name", e->team_name ? e->team_name : "",
                     "score", e->score, "submitted_at", time_json(e->submitted_at), "submission_id",
                     e->submission_id);
}
