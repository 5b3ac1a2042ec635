/*
 * client_deploy.c - `eddy deploy ...` and `eddy predict`: model
 * deployments over the REST API (API.md "Models and deployments").
 *
 *     eddy deploy create mlp --project P --version V --path model/mlp --price 10
 *     eddy predict mlp --input x.json          # {"inputs": {...}} or {name: {...}}
 *
 * DEPLOYMENT on the command line is an id or the caller's deployment name.
 */
#include "cli.h"
#include "cmd.h"

#include "ed_error.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const cli_col dep_cols[] = {
    {"ID", "id", CLI_FMT_TEXT},           {"NAME", "name", CLI_FMT_TEXT},
    {"STATUS", "status", CLI_FMT_TEXT},   {"VERSION", "model_version", CLI_FMT_TEXT},
    {"REPLICAS", "replicas", CLI_FMT_TEXT}, {"READY", "replicas_ready", CLI_FMT_TEXT},
    {"RESOURCE", "resource", CLI_FMT_TEXT}, {"UPDATED", "updated_at", CLI_FMT_TEXT},
};

static const cli_col dep_fields[] = {
    {"ID", "id", CLI_FMT_TEXT},                 {"Name", "name", CLI_FMT_TEXT},
    {"Status", "status", CLI_FMT_TEXT},         {"Model version", "model_version", CLI_FMT_TEXT},
    {"Resource", "resource", CLI_FMT_TEXT},     {"Replicas", "replicas", CLI_FMT_TEXT},
    {"Ready", "replicas_ready", CLI_FMT_TEXT},  {"Max batch", "max_batch", CLI_FMT_TEXT},
    {"Max delay (ms)", "max_delay_ms", CLI_FMT_TEXT}, {"Timeout (ms)", "timeout_ms", CLI_FMT_TEXT},
    {"Price per call", "price_mcoins_per_call", CLI_FMT_COINS}, {"Predict", "predict_url", CLI_FMT_TEXT},
    {"Created", "created_at", CLI_FMT_TEXT},    {"Updated", "updated_at", CLI_FMT_TEXT},
};

static const cli_col replica_cols[] = {
    {"REPLICA", "id", CLI_FMT_TEXT},  {"VERSION", "version", CLI_FMT_TEXT},
    {"STATUS", "status", CLI_FMT_TEXT}, {"METERED", "metered_ms", CLI_FMT_MS},
    {"DETAIL", "detail", CLI_FMT_TEXT},
};

static const cli_col call_cols[] = {
    {"CALL", "id", CLI_FMT_TEXT},         {"KEY", "key_id", CLI_FMT_TEXT},
    {"VERSION", "version", CLI_FMT_TEXT}, {"STATUS", "status", CLI_FMT_TEXT},
    {"MS", "latency_ms", CLI_FMT_TEXT},   {"BATCH", "batch_size", CLI_FMT_TEXT},
    {"COST", "cost_mcoins", CLI_FMT_COINS}, {"ERROR", "error", CLI_FMT_TEXT},
};

static const cli_col usage_cols[] = {
    {"DAY", "day", CLI_FMT_TEXT},       {"CALLS", "calls", CLI_FMT_TEXT},
    {"ERRORS", "errors", CLI_FMT_TEXT}, {"P50 MS", "p50_ms", CLI_FMT_TEXT},
    {"P95 MS", "p95_ms", CLI_FMT_TEXT}, {"P99 MS", "p99_ms", CLI_FMT_TEXT},
    {"COST", "cost_mcoins", CLI_FMT_COINS},
};

#define N(a) (sizeof(a) / sizeof((a)[0]))

static int usage(void)
{
    fprintf(stderr,
            "usage: eddy deploy create NAME (--project P [--version V] | --job ID) --path PREFIX\n"
            "                          [--resource R] [--replicas N] [--max-batch N] [--max-delay-ms N]\n"
            "                          [--timeout-ms N] [--price MCOINS] [--allow-nan]\n"
            "       eddy deploy ls\n"
            "       eddy deploy show DEPLOYMENT\n"
            "       eddy deploy update DEPLOYMENT [(--project P [--version V] | --job ID) --path PREFIX]\n"
            "                          [--replicas N] [--max-batch N] [--max-delay-ms N] [--timeout-ms N] [--price MCOINS]\n"
            "       eddy deploy scale DEPLOYMENT REPLICAS\n"
            "       eddy deploy stop|start|rm DEPLOYMENT\n"
            "       eddy deploy logs DEPLOYMENT [--limit N]\n"
            "       eddy deploy usage DEPLOYMENT [--from YYYY-MM-DD] [--to YYYY-MM-DD]\n"
            "       eddy predict DEPLOYMENT --input FILE   (JSON {\"inputs\": {name: {shape, dtype, data|b64}}}; - = stdin)\n");
    return CLI_EXIT_USAGE;
}

/* "/api/v1/deployments/<escaped ref><suffix>" */
static int dep_path(char *out, size_t n, const char *ref, const char *suffix)
{
    char *e = cli_escape(ref, false);
    if (e == NULL)
        return ed_error_set(ED_ENOMEM, "path");
    snprintf(out, n, "/api/v1/deployments/%.300s%s", e, suffix);
    free(e);
    return 0;
}

/* Options shared by create and update into `body`; 1 when argv[*i] was one,
 * 0 when not, < 0 on a bad value. */
static int take_option(json_t *body, json_t **src, int argc, char **argv, int *i)
{
    static const struct { const char *opt, *field; int64_t min, max; } ints[] = {
        {"--replicas", "replicas", 0, 8},       {"--max-batch", "max_batch", 1, 256},
        {"--max-delay-ms", "max_delay_ms", 0, 10000}, {"--timeout-ms", "timeout_ms", 1, 600000},
        {"--price", "price_mcoins_per_call", 0, 1000000},
    };
    const char *a = argv[*i];
    int64_t v;
    int err;

    for (size_t k = 0; k < N(ints); k++)
        if (strcmp(a, ints[k].opt) == 0) {
            if (*i + 1 >= argc)
                return ed_error_set(CLI_EUSAGE, "%s needs a value", a);
            if ((err = cli_parse_int(&v, argv[++*i], ints[k].min, ints[k].max, ints[k].opt)) < 0)
                return err;
            json_object_set_new(body, ints[k].field, json_integer(v));
            return 1;
        }
    if (strcmp(a, "--allow-nan") == 0) {
        json_object_set_new(body, "allow_nan", json_true());
        return 1;
    }
    if (strcmp(a, "--resource") == 0 && *i + 1 < argc) {
        json_object_set_new(body, "resource", json_string(argv[++*i]));
        return 1;
    }
    if ((strcmp(a, "--project") == 0 || strcmp(a, "--version") == 0 || strcmp(a, "--path") == 0) && *i + 1 < argc) {
        if (*src == NULL)
            *src = json_object();
        json_object_set_new(*src, strcmp(a, "--project") == 0 ? "project_id" : a + 2, json_string(argv[++*i]));
        return 1;
    }
    if (strcmp(a, "--job") == 0 && *i + 1 < argc) {
        if ((err = cli_parse_int(&v, argv[++*i], 1, INT64_MAX, "--job")) < 0)
            return err;
        if (*src == NULL)
            *src = json_object();
        json_object_set_new(*src, "job_id", json_integer(v));
        return 1;
    }
    return 0;
}

/* A project named by name becomes its id. */
static int resolve_source(cli *c, json_t *src)
{
    const char *p = json_string_value(json_object_get(src, "project_id"));
    char id[64];
    int err;

    if (p == NULL)
        return 0;
    if ((err = cli_project_resolve(id, sizeof(id), c, p)) < 0)
        return err;
    json_object_set_new(src, "project_id", json_string(id));
    return 0;
}

static int print_dep(const cli_globals *g, const json_t *j)
{
    if (g->json) {
        cli_print_json(j);
        return 0;
    }
    cli_print_fields(j, dep_fields, N(dep_fields));
    if (json_array_size(json_object_get(j, "replica_list"))) {
        printf("\n");
        cli_print_table(json_object_get(j, "replica_list"), replica_cols, N(replica_cols));
    }
    return 0;
}

static int cmd_create_update(int argc, char **argv, const cli_globals *g, bool create)
{
    json_t *body = json_object(), *src = NULL, *j = NULL;
    cli *c = NULL;
    char path[400];
    int err = 0;

    if (argc < 2) {
        json_decref(body);
        return usage();
    }
    for (int i = 2; i < argc; i++) {
        int r = take_option(body, &src, argc, argv, &i);
        if (r < 0) {
            json_decref(body);
            json_decref(src);
            return cli_report(r);
        }
        if (r == 0) {
            json_decref(body);
            json_decref(src);
            return usage();
        }
    }
    if ((create && src == NULL) ||
        (src && (!json_object_get(src, "path") ||
                 (!json_object_get(src, "project_id") && !json_object_get(src, "job_id"))))) {
        json_decref(body);
        json_decref(src);
        fprintf(stderr, "eddy: a source is --project P [--version V] or --job ID, with --path PREFIX\n");
        return CLI_EXIT_USAGE;
    }
    if ((err = cli_open(&c, g->url, true)) < 0)
        goto out;
    if (src && (err = resolve_source(c, src)) < 0)
        goto out;
    if (src) {
        json_object_set(body, "source", src);
    }
    if (create) {
        json_object_set_new(body, "name", json_string(argv[1]));
        err = cli_call_json(&j, c, "POST", "/api/v1/deployments", body, 0);
    } else if ((err = dep_path(path, sizeof(path), argv[1], "")) == 0) {
        err = cli_call_json(&j, c, "PATCH", path, body, 0);
    }
    if (err == 0)
        print_dep(g, j);
out:
    json_decref(body);
    json_decref(src);
    json_decref(j);
    return cli_done(c, err);
}

static int cmd_ls(int argc, char **argv, const cli_globals *g)
{
    cli *c = NULL;
    json_t *j = NULL;
    int err;

    if (argc != 1)
        return usage();
    if ((err = cli_open(&c, g->url, true)) < 0 ||
        (err = cli_call_json(&j, c, "GET", "/api/v1/deployments?limit=100", NULL, 0)) < 0)
        return cli_done(c, err);
    if (g->json)
        cli_print_json(j);
    else
        cli_print_table(json_object_get(j, "items"), dep_cols, N(dep_cols));
    json_decref(j);
    return cli_done(c, 0);
}

/* show, stop, start, rm, scale, logs, usage: one request on DEPLOYMENT. */
static int cmd_one(int argc, char **argv, const cli_globals *g, const char *what)
{
    cli *c = NULL;
    json_t *j = NULL, *body = NULL;
    char path[600], q[200] = "";
    const char *method = "GET", *suffix = "";
    int err;

    if (argc < 2)
        return usage();
    if (strcmp(what, "scale") == 0) {
        int64_t n;
        if (argc != 3)
            return usage();
        if ((err = cli_parse_int(&n, argv[2], 0, 8, "REPLICAS")) < 0)
            return cli_report(err);
        body = json_pack("{s:I}", "replicas", (json_int_t)n);
        method = "POST";
        suffix = "/scale";
    } else if (strcmp(what, "logs") == 0 || strcmp(what, "usage") == 0) {
        suffix = strcmp(what, "logs") == 0 ? "/logs" : "/usage";
        for (int i = 2; i < argc; i++) {
            size_t l = strlen(q);
            if (i + 1 < argc && (strcmp(argv[i], "--limit") == 0 || strcmp(argv[i], "--from") == 0 ||
                                 strcmp(argv[i], "--to") == 0)) {
                char *e = cli_escape(argv[i + 1], false);
                if (e == NULL)
                    return cli_report(ed_error_set(ED_ENOMEM, "query"));
                snprintf(q + l, sizeof(q) - l, "%s%s=%.60s", l ? "&" : "?", argv[i] + 2, e);
                free(e);
                i++;
            } else {
                return usage();
            }
        }
    } else {
        if (argc != 2)
            return usage();
        if (strcmp(what, "stop") == 0 || strcmp(what, "start") == 0) {
            method = "POST";
            suffix = strcmp(what, "stop") == 0 ? "/stop" : "/start";
        } else if (strcmp(what, "rm") == 0) {
            method = "DELETE";
        }
    }
    if ((err = cli_open(&c, g->url, true)) < 0 || (err = dep_path(path, sizeof(path) - 200, argv[1], suffix)) < 0)
        goto out;
    strncat(path, q, sizeof(path) - strlen(path) - 1);
    if ((err = cli_call_json(&j, c, method, path, body, 0)) < 0)
        goto out;
    if (g->json)
        cli_print_json(j);
    else if (strcmp(what, "rm") == 0)
        printf("deleted %s\n", argv[1]);
    else if (strcmp(what, "usage") == 0)
        cli_print_table(j, usage_cols, N(usage_cols));
    else if (strcmp(what, "logs") == 0) {
        cli_print_table(json_object_get(j, "replicas"), replica_cols, N(replica_cols));
        printf("\n");
        cli_print_table(json_object_get(j, "calls"), call_cols, N(call_cols));
    } else
        print_dep(g, j);
out:
    json_decref(body);
    json_decref(j);
    return cli_done(c, err);
}

int cmd_client_deploy(int argc, char **argv, const cli_globals *g)
{
    const char *sub = argc > 1 ? argv[1] : NULL;

    if (sub == NULL || strcmp(sub, "-h") == 0 || strcmp(sub, "--help") == 0 || strcmp(sub, "help") == 0) {
        usage();
        return sub ? CLI_EXIT_OK : CLI_EXIT_USAGE;
    }
    argc--;
    argv++;
    if (strcmp(sub, "create") == 0)
        return cmd_create_update(argc, argv, g, true);
    if (strcmp(sub, "update") == 0)
        return cmd_create_update(argc, argv, g, false);
    if (strcmp(sub, "ls") == 0 || strcmp(sub, "list") == 0)
        return cmd_ls(argc, argv, g);
    if (strcmp(sub, "show") == 0 || strcmp(sub, "stop") == 0 || strcmp(sub, "start") == 0 ||
        strcmp(sub, "rm") == 0 || strcmp(sub, "scale") == 0 || strcmp(sub, "logs") == 0 ||
        strcmp(sub, "usage") == 0)
        return cmd_one(argc, argv, g, sub);
    fprintf(stderr, "eddy: unknown deploy command '%s'\n", sub);
    return usage();
}

int cmd_client_predict(int argc, char **argv, const cli_globals *g)
{
    const char *dep = NULL, *file = NULL;
    char *text = NULL, path[600];
    size_t len = 0;
    json_t *in = NULL, *body = NULL, *j = NULL;
    cli *c = NULL;
    int err;

    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--input") == 0 && i + 1 < argc)
            file = argv[++i];
        else if (dep == NULL && argv[i][0] != '-')
            dep = argv[i];
        else
            return usage();
    }
    if (dep == NULL || file == NULL)
        return usage();
    if ((err = cli_read_file(&text, &len, strcmp(file, "-") == 0 ? "/dev/stdin" : file)) < 0)
        return cli_report(err);
    in = json_loadb(text, len, 0, NULL);
    free(text);
    if (!json_is_object(in)) {
        json_decref(in);
        fprintf(stderr, "eddy: %s is not a JSON object\n", file);
        return CLI_EXIT_USAGE;
    }
    body = json_object_get(in, "inputs") ? json_incref(in) : json_pack("{s:O}", "inputs", in);
    json_decref(in);
    {
        char *e = cli_escape(dep, false);
        if (e == NULL) {
            json_decref(body);
            return cli_report(ed_error_set(ED_ENOMEM, "path"));
        }
        snprintf(path, sizeof(path), "/serve/%.300s/predict", e);
        free(e);
    }
    if ((err = cli_open(&c, g->url, true)) == 0 && (err = cli_call_json(&j, c, "POST", path, body, 0)) == 0)
        cli_print_json(j);
    json_decref(body);
    json_decref(j);
    return cli_done(c, err);
}
