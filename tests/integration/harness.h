/*
 * harness.h - integration tests drive the real `eddy serve` over HTTP.
 *
 * it_server_start() runs the freshly built eddy on 127.0.0.1 port 0 with a
 * temporary data directory, waits for its "listening on" line, and records the
 * port. it_request() sends one request with libcurl and returns the status,
 * headers and body (parsed as JSON when it is JSON). it_server_stop() sends
 * SIGTERM and checks that the server exits cleanly.
 *
 *     it_server s;
 *     it_server_start(&s, NULL);
 *     it_resp r;
 *     it_request(&r, &s, "GET", "/healthz", NULL, NULL);
 *     ck_assert_int_eq(r.status, 200);
 *     it_resp_free(&r);
 *     it_server_stop(&s);
 */
#ifndef IT_HARNESS_H
#define IT_HARNESS_H

#include <jansson.h>
#include <stddef.h>
#include <sys/types.h>

typedef struct it_server {
    pid_t pid;
    int   port;
    char  data_dir[256];     /* removed by it_server_stop unless keep_data */
    char  base_url[64];      /* "http://127.0.0.1:PORT" */
    char  log_path[300];     /* the server's stderr (JSON logs) */
    int   keep_data;
} it_server;

typedef struct it_resp {
    long    status;
    char   *body;            /* NUL-terminated */
    size_t  body_len;
    json_t *json;            /* parsed body, or NULL when not JSON */
    char   *headers;         /* raw response headers, "Name: value\r\n"... */
} it_resp;

/* Start `eddy serve`. `env` is NULL or a NULL-terminated list of "NAME=value"
 * added to the server's environment (EDDY_SIGNUP_OPEN=false, ...).
 * `data_dir` NULL makes a fresh temporary one. 0 on success, -1 (with a message
 * on stderr) if it did not come up within 10 s. */
int it_server_start_in(it_server *s, const char *data_dir, const char *const *env);
int it_server_start(it_server *s, const char *const *env);
/* SIGTERM, wait up to 10 s; returns the exit status (0 = clean), -1 on
 * timeout (then SIGKILL). Removes the data directory unless s->keep_data. */
int it_server_stop(it_server *s);

/* One request. `body` may be NULL; `len` < 0 means strlen(body). `headers`
 * is NULL or a NULL-terminated list of "Name: value". 0, or -1 on a transport
 * error (the status is then 0). */
int it_request_n(it_resp *r, it_server *s, const char *method, const char *path,
                 const char *body, long len, const char *const *headers);
int it_request(it_resp *r, it_server *s, const char *method, const char *path,
               const char *body, const char *const *headers);
/* A response header's value (case-insensitive name) copied into a static
 * per-call buffer, or NULL. */
const char *it_resp_header(const it_resp *r, const char *name);
/* The error code of an API error body ("not_found"), or NULL. */
const char *it_resp_error_code(const it_resp *r);
void it_resp_free(it_resp *r);

/* Sign up a user and log in. On success *cookie gets "eddy_session=..." and
 * *csrf the CSRF token (both malloc'd; caller frees). 0 or -1. */
int it_signup_login(it_server *s, const char *username, const char *password,
                    char **cookie, char **csrf);

/* What one run of the eddy binary printed and how it ended. */
typedef struct it_run {
    int  status;          /* exit status, -1 when killed by a signal */
    char out[65536];      /* stdout, NUL-terminated (cut to fit) */
    char err[16384];      /* stderr */
} it_run;

/* Run the eddy binary under test as a user would: `argv` (argv[0] "eddy",
 * NULL-terminated), `input` (may be NULL) on stdin, HOME=`home`, no
 * controlling terminal (a prompt cannot hang the test), EDDY_URL,
 * EDDY_API_KEY and XDG_CONFIG_HOME unset, then each "NAME=value" of `env`
 * (NULL-terminated, may be NULL) set. The streams pass through files in the
 * directory `scratch`. */
void it_run_eddy(it_run *o, const char *scratch, const char *home, const char *input,
                 const char *const *env, const char *const *argv);

/* Read at most n-1 bytes of the file at `path` into buf, NUL-terminated
 * ("" when it cannot be read). */
void it_slurp(char *buf, size_t n, const char *path);

/* Log an existing user in. On success `cookie_hdr` gets "Cookie: eddy_session=..."
 * and `csrf_hdr` "X-CSRF-Token: ...", ready for a header list. 0 or -1. */
int it_login(it_server *s, const char *username, const char *password, char *cookie_hdr,
             size_t cookie_len, char *csrf_hdr, size_t csrf_len);

/* Run the eddy binary with `argv` (argv[0] "eddy"), stdout discarded, stderr
 * passed through; its exit status (-1 when killed). For operator commands
 * such as `eddy admin create-user --data DIR ...`. */
int it_eddy_status(char *const argv[]);

/* Started as root, eddy serve drops to the user EDDY_USER names ("eddy"):
 * 0 when that user exists and can reach the binary under test (or we are not
 * root), -1 when not; then it_server_start* serve as root (EDDY_USER=root). */
int it_serve_user_reaches_checkout(void);

/* Started as root, eddy serve works as that user: hand it `path` (a
 * directory a test made for the server, mkdtemp's 0700 root, with everything
 * in it: a web app, TLS files, a data directory's parent) so it can use it.
 * Does nothing when not root or when the server keeps root. */
void it_share_with_server(const char *path);

/* Path of the eddy binary under test. */
const char *it_eddy_bin(void);

#endif
