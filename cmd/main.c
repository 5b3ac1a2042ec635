/* eddy: one binary for the server, operator commands and (later) the client. */
#include "cmd.h"
#include "ed_crypto.h"
#include "ed_log.h"

#include <stdio.h>
#include <string.h>

static const struct {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *help;
} commands[] = {
    {"serve", cmd_serve, "run the server: eddy serve --data DIR --listen HOST:PORT [--config FILE]"},
    {"admin", cmd_admin, "operator tasks on a data directory: create-user, set-role, set-tier, grant"},
    {"sandbox", cmd_sandbox, "check this host's confinement, or run a command confined"},
    {"login", cmd_client_login, "client: sign in to a server and store an API key"},
    {"logout", cmd_client_logout, "client: revoke the stored API key and forget it"},
    {"whoami", cmd_client_whoami, "client: the signed-in account"},
    {"keys", cmd_client_keys, "client: API keys (list, create, revoke)"},
    {"projects", cmd_client_projects, "client: projects (list, create, show, delete, fork)"},
    {"push", cmd_client_push, "client: upload a directory into a project"},
    {"pull", cmd_client_pull, "client: download a project into a directory"},
    {"files", cmd_client_files, "client: a project's files (ls, cat, put, rm)"},
    {"versions", cmd_client_versions, "client: a project's versions (list, create, restore)"},
    {"quota", cmd_client_quota, "client: balance, free allowance and limits"},
    {"ledger", cmd_client_ledger, "client: A-coin ledger entries"},
    {"tiers", cmd_client_tiers, "client: membership tiers"},
    {"jobs", cmd_client_jobs, "client: batch jobs (submit, list, show, logs, cancel, artifacts)"},
    {"resources", cmd_client_resources, "client: resource classes and their prices"},
    {"kernels", cmd_client_kernels, "client: interactive kernels (start, list, exec, stop)"},
    {"admin-remote", cmd_client_admin, "client: admin over the API (users, grant, verify)"},
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
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
        if (strcmp(argv[1], commands[i].name) == 0)
            return commands[i].run(argc - 1, argv + 1);
    fprintf(stderr, "eddy: unknown command '%s'\n", argv[1]);
    usage(stderr);
    return 2;
}
