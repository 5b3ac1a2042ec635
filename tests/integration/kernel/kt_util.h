/*
 * kt_util.h - helpers for the eddy-kernel integration tests: run the real
 * binary with pipes, temp folders, and a framed-socket client (kr.h).
 */
#ifndef KT_UTIL_H
#define KT_UTIL_H

#include <jansson.h>
#include <sys/types.h>

typedef struct kt_proc {
    int status;     /* exit code, or 128+signal */
    char *out;      /* all of stdout (malloc'd) */
    char *err;      /* all of stderr */
} kt_proc;

/* Run argv (argv[0] a path) in `cwd` (NULL: ours) with `env` (NULL or a
 * NULL-terminated list of NAME=VALUE added to ours); kill it after
 * `timeout_s`. Fails the test on setup errors. */
void kt_run(kt_proc *p, const char *const *argv, const char *cwd, const char *const *env,
            double timeout_s);
void kt_proc_free(kt_proc *p);

/* A fresh temp folder (static buffer per call site is the caller's job). */
char *kt_tmpdir(void);
void kt_rmrf(const char *dir);
void kt_write(const char *dir, const char *name, const char *text);
char *kt_read(const char *dir, const char *name);      /* NULL when absent */

/* A notebook (nbformat 4.5 JSON text) whose code cells are `cells`
 * (NULL-terminated); a cell starting with "#md " is a markdown cell. */
char *kt_notebook(const char *const *cells);

/* ---- serve mode ---- */
typedef struct kt_kernel {
    pid_t pid;
    int fd;
} kt_kernel;

/* Start `eddy-kernel serve --fd N` on a socketpair and wait for its
 * "starting" status. */
void kt_kernel_start(kt_kernel *k);
/* Send a request; returns its msg_id (malloc'd). */
char *kt_send(kt_kernel *k, const char *channel, const char *type, json_t *content);
/* Next message (new reference), failing the test after `timeout_s`. */
json_t *kt_recv(kt_kernel *k, double timeout_s);
/* Receive until the iopub idle status parented to `id`; returns every
 * message received (array, new reference), the idle included. */
json_t *kt_until_idle(kt_kernel *k, const char *id);
/* execute_request for `code` and kt_until_idle. */
json_t *kt_execute(kt_kernel *k, const char *code);
/* The first message of `type` in `msgs` (borrowed) or NULL; `nth` skips. */
json_t *kt_find(json_t *msgs, const char *type, int nth);
/* Exit status after waiting at most timeout_s (kills it after that). */
int kt_kernel_wait(kt_kernel *k, double timeout_s);
void kt_kernel_stop(kt_kernel *k);

#endif
