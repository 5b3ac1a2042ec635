/* eddy: one binary for the server, operator commands and the client. */
#include "cli.h"
#include "cmd.h"
#include "ed_crypto.h"
#include "ed_log.h"

#include <stdio.h>
#include <string.h>

/* A command is either run with its arguments as they are (`run`: the
 * server and operator commands), or is a client command (`client`): main
 * takes the global options --url and --json out of its arguments first
 * (cli_globals_take, up to a "--"), for every client command in one place. */
static const struct {
    const char *name;
    int (*run)(int argc, char **argv);
    int (*client)(int argc, char **argv, const cli_globals *g);
    const char *help;
} commands[] = {
    {"serve", cmd_serve, NULL, "run the server: eddy serve --data DIR --listen HOST:PORT [--config FILE]"},
    {"admin", cmd_admin, NULL, "operator tasks on a data directory: create-user, set-role, set-tier, grant"},
    {"sandbox", cmd_sandbox, NULL, "check this host's confinement, or run a command confined"},
    {"login", NULL, cmd_client_login, "client: sign in to a server and store an API key"},
    {"logout", NULL, cmd_client_logout, "client: revoke the stored API key and forget it"},
    {"whoami", NULL, cmd_client_whoami, "client: the signed-in account"},
    {"keys", NULL, cmd_client_keys, "client: API keys (list, create, revoke)"},
    {"projects", NULL, cmd_client_projects, "client: projects (list, create, show, delete, fork)"},
    {"push", NULL, cmd_client_push, "client: upload a directory into a project"},
    {"pull", NULL, cmd_client_pull, "client: download a project into a directory"},
    {"files", NULL, cmd_client_files, "client: a project's files (ls, cat, put, rm)"},
    {"versions", NULL, cmd_client_versions, "client: a project's versions (list, create, restore)"},
    {"quota", NULL, cmd_client_quota, "client: balance, free allowance and limits"},
    {"ledger", NULL, cmd_client_ledger, "client: A-coin ledger entries"},
    {"tiers", NULL, cmd_client_tiers, "client: membership tiers"},
    {"jobs", NULL, cmd_client_jobs, "client: batch jobs (submit, list, show, logs, cancel, artifacts)"},
    {"resources", NULL, cmd_client_resources, "client: resource classes and their prices"},
    {"kernels", NULL, cmd_client_kernels, "client: interactive kernels (start, list, exec, stop)"},
    {"admin-remote", NULL, cmd_client_admin, "client: admin over the API (users, grant, verify)"},
    {"datasets", NULL, cmd_client_datasets, "client: datasets (create, ls, upload, download, from-job, attach, rm)"},
    {"deploy", NULL, cmd_client_deploy, "client: model deployments (create, ls, show, update, scale, stop, logs, usage)"},
    {"predict", NULL, cmd_client_predict, "client: call a deployed model with a JSON input file"},
    {"competitions", NULL, cmd_client_competitions,
     "client: competitions (list, show, download, submit, submissions, leaderboard, team)"},
};

static void usage(FILE *f)
{
    fprintf(f, "usage: eddy <command> [options]\n\ncommands:\n");
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
        fprintf(f, "  %-13s %s\n", commands[i].name, commands[i].help);
    fprintf(f, "  %-13s %s\n", "version", "print the version");
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "help") == 0) {
        usage(stdout);
        return 0;
    }
    if (strcmp(argv[1], "version") == 0 || strcmp(argv[1], "--version") == 0) {
        printf("eddy %s\n", EDDY_VERSION);
        return 0;
    }
    ed_log_init(2);
    if (ed_crypto_init() < 0) {
        fprintf(stderr, "eddy: cannot initialise libsodium\n");
        return 1;
    }
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
        cli_globals g;
        int err;

        if (strcmp(argv[1], commands[i].name) != 0)
            continue;
        if (commands[i].run)
            return commands[i].run(argc - 1, argv + 1);
        argc--;
        argv++;
        if ((err = cli_globals_take(&g, &argc, argv)) < 0)
            return cli_report(err);
        return commands[i].client(argc, argv, &g);
    }
    fprintf(stderr, "eddy: unknown command '%s'\n", argv[1]);
    usage(stderr);
    return 2;
}
