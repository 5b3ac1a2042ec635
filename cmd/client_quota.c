/*
 * client_quota.c - eddy quota | ledger [--limit N] | tiers
 * Amounts print as A-coins (the API's *_mcoins / 1000); `eddy quota` also
 * prints the workspace quota (used, limit per project, each project).
 */
#include "cli.h"
#include "cmd.h"

#include "ed_error.h"

#include <stdio.h>
#include <string.h>

#define N(a) (sizeof(a) / sizeof((a)[0]))

static const cli_col quota_fields[] = {
    {"Tier:", "tier", CLI_FMT_TEXT},
    {"Balance (A-coins):", "balance_mcoins", CLI_FMT_COINS},
    {"Held (A-coins):", "held_mcoins", CLI_FMT_COINS},
    {"Free time left today:", "free_ms_left_today", CLI_FMT_MS},
    {"Burn (A-coins/hour):", "burn_mcoins_per_hour", CLI_FMT_COINS},
    {"Time remaining:", "ms_remaining", CLI_FMT_MS},
    {"Max kernels:", "limits.max_kernels", CLI_FMT_TEXT},
    {"Max GPUs per job:", "limits.max_gpus_per_job", CLI_FMT_TEXT},
    {"Max session:", "limits.max_session_ms", CLI_FMT_MS},
    {"Idle timeout:", "limits.idle_timeout_ms", CLI_FMT_MS},
};

static const cli_col ledger_cols[] = {
    {"ID", "id", CLI_FMT_TEXT},          {"AT", "at", CLI_FMT_TEXT},
    {"KIND", "kind", CLI_FMT_TEXT},      {"AMOUNT", "amount_mcoins", CLI_FMT_COINS},
    {"BALANCE", "balance_after_mcoins", CLI_FMT_COINS}, {"REF", "ref", CLI_FMT_TEXT},
    {"REASON", "reason", CLI_FMT_TEXT},
};

static const cli_col tier_cols[] = {
    {"NAME", "name", CLI_FMT_TEXT},
    {"KERNELS", "max_kernels", CLI_FMT_TEXT},
    {"GPUS/JOB", "max_gpus_per_job", CLI_FMT_TEXT},
    {"SESSION", "max_session_ms", CLI_FMT_MS},
    {"IDLE", "idle_timeout_ms", CLI_FMT_MS},
    {"FREE GPU/DAY", "free_gpu_ms_per_day", CLI_FMT_MS},
    {"OVERDRAFT", "overdraft_mcoins", CLI_FMT_COINS},
    {"EGRESS", "allow_egress", CLI_FMT_TEXT},
    {"WORKSPACE", "workspace_bytes", CLI_FMT_BYTES},
};

/* GET /api/v1/quota's "workspace": {used_bytes, limit_bytes (null: none),
 * mechanism, projects: [{id, used_bytes}]}. */
static void print_workspace(const json_t *ws)
{
    char used[64], limit[64];
    const json_t *items = json_object_get(ws, "projects"), *it;
    size_t i;

    if (!json_is_object(ws))
        return;
    cli_format(used, sizeof(used), json_object_get(ws, "used_bytes"), CLI_FMT_BYTES);
    if (json_is_integer(json_object_get(ws, "limit_bytes")))
        cli_format(limit, sizeof(limit), json_object_get(ws, "limit_bytes"), CLI_FMT_BYTES);
    else
        snprintf(limit, sizeof(limit), "unlimited");
    printf("%-23s %s\n", "Workspace used:", used);
    printf("%-23s %s per project\n", "Workspace limit:", limit);
    json_array_foreach(items, i, it) {
        char b[64];
        cli_format(b, sizeof(b), json_object_get(it, "used_bytes"), CLI_FMT_BYTES);
        printf("  %-22s %s of %s\n", json_string_value(json_object_get(it, "id")) ?
               json_string_value(json_object_get(it, "id")) : "?", b, limit);
    }
}

static int get_and_print(const cli_globals *g, const char *path, const cli_col *cols, size_t n,
                         bool table)
{
    cli *c = NULL;
    cli_resp r = {0};
    int err;

    if ((err = cli_open(&c, g->url, true)) == 0 && (err = cli_call(&r, c, "GET", path, NULL, 0, NULL, 0)) == 0) {
        if (g->json)
            cli_print_raw(&r);
        else if (table)
            cli_print_table(json_object_get(r.json, "items"), cols, n);
        else
            cli_print_fields(r.json, cols, n);
    }
    cli_resp_free(&r);
    return cli_done(c, err);
}

int cmd_client_quota(int argc, char **argv, const cli_globals *g)
{
    cli *c = NULL;
    cli_resp r = {0};
    int err;

    (void)argv;
    if (argc != 1) {
        fprintf(stderr, "usage: eddy quota [--json]\n");
        return CLI_EXIT_USAGE;
    }
    if ((err = cli_open(&c, g->url, true)) == 0 &&
        (err = cli_call(&r, c, "GET", "/api/v1/quota", NULL, 0, NULL, 0)) == 0) {
        if (g->json) {
            cli_print_raw(&r);
        } else {
            cli_print_fields(r.json, quota_fields, N(quota_fields));
            print_workspace(json_object_get(r.json, "workspace"));
        }
    }
    cli_resp_free(&r);
    return cli_done(c, err);
}

int cmd_client_ledger(int argc, char **argv, const cli_globals *g)
{
    int64_t limit = 50;
    char path[64];
    int err;

    if (argc == 3 && strcmp(argv[1], "--limit") == 0) {
        if ((err = cli_parse_int(&limit, argv[2], 1, 500, "--limit")) < 0)
            return cli_report(err);
    } else if (argc != 1) {
        fprintf(stderr, "usage: eddy ledger [--limit N] [--json]\n");
        return CLI_EXIT_USAGE;
    }
    snprintf(path, sizeof(path), "/api/v1/ledger?limit=%lld", (long long)limit);
    return get_and_print(g, path, ledger_cols, N(ledger_cols), true);
}

int cmd_client_tiers(int argc, char **argv, const cli_globals *g)
{
    (void)argv;
    if (argc != 1) {
        fprintf(stderr, "usage: eddy tiers [--json]\n");
        return CLI_EXIT_USAGE;
    }
    return get_and_print(g, "/api/v1/tiers", tier_cols, N(tier_cols), true);
}
