/*
 * cmd.h - the `eddy` binary's subcommands. Each takes the arguments after its
 * own name (argv[0] is the subcommand) and returns the process exit status:
 * 0 success, 1 failure, 2 bad usage.
 */
#ifndef EDDY_CMD_H
#define EDDY_CMD_H

#include "cli.h"

int cmd_serve(int argc, char **argv);    /* serve.c: eddy serve --data DIR --listen HOST:PORT */
int cmd_admin(int argc, char **argv);    /* admin.c: eddy admin create-user|set-role|set-tier|grant */
int cmd_admin_grant(int argc, char **argv); /* admin_grant.c: eddy admin grant (quota ledger) */
int cmd_sandbox(int argc, char **argv);  /* sandbox.c: eddy sandbox check|run */
/* serve.c: run as root on a data directory an unprivileged user owns, become
 * that user (what the command creates there stays the server's). 0, or 1
 * with a message printed. */
int cmd_become_data_owner(const char *data);

/* client_*.c: the command-line client over the REST API (cli/cli.h). main.c
 * takes the global options (--url, --json; cli_globals_take) out of argv
 * once, for every client command, before calling it. Exit status 0 ok, 1 the
 * server said no, 2 bad usage or input, 3 the server could not be reached. */
int cmd_client_login(int argc, char **argv, const cli_globals *g);     /* client_auth.c */
int cmd_client_logout(int argc, char **argv, const cli_globals *g);
int cmd_client_whoami(int argc, char **argv, const cli_globals *g);
int cmd_client_keys(int argc, char **argv, const cli_globals *g);
int cmd_client_projects(int argc, char **argv, const cli_globals *g);  /* client_projects.c */
int cmd_client_push(int argc, char **argv, const cli_globals *g);
int cmd_client_pull(int argc, char **argv, const cli_globals *g);
int cmd_client_files(int argc, char **argv, const cli_globals *g);
int cmd_client_versions(int argc, char **argv, const cli_globals *g);
int cmd_client_quota(int argc, char **argv, const cli_globals *g);     /* client_quota.c */
int cmd_client_ledger(int argc, char **argv, const cli_globals *g);
int cmd_client_tiers(int argc, char **argv, const cli_globals *g);
int cmd_client_jobs(int argc, char **argv, const cli_globals *g);      /* client_jobs.c */
int cmd_client_resources(int argc, char **argv, const cli_globals *g);
int cmd_client_kernels(int argc, char **argv, const cli_globals *g);   /* client_kernels.c */
int cmd_client_admin(int argc, char **argv, const cli_globals *g);     /* client_admin.c: eddy admin-remote */
int cmd_client_datasets(int argc, char **argv, const cli_globals *g);  /* client_datasets.c */
int cmd_client_deploy(int argc, char **argv, const cli_globals *g);    /* client_deploy.c */
int cmd_client_predict(int argc, char **argv, const cli_globals *g);   /* client_deploy.c */
int cmd_client_competitions(int argc, char **argv, const cli_globals *g); /* client_competitions.c */

#endif
