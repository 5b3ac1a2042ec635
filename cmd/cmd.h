/*
 * cmd.h - the `eddy` binary's subcommands. Each takes the arguments after its
 * own name (argv[0] is the subcommand) and returns the process exit status:
 * 0 success, 1 failure, 2 bad usage.
 */
#ifndef EDDY_CMD_H
#define EDDY_CMD_H

int cmd_serve(int argc, char **argv);    /* serve.c: eddy serve --data DIR --listen HOST:PORT */
int cmd_admin(int argc, char **argv);    /* admin.c: eddy admin create-user|set-role|set-tier|grant */
int cmd_admin_grant(int argc, char **argv); /* admin_grant.c: eddy admin grant (quota ledger) */
int cmd_sandbox(int argc, char **argv);  /* sandbox.c: eddy sandbox check|run */

#endif
