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

#include <check.h>
#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
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

/* ---- an operator, users, projects and jobs -------------------------------- */

/* The admin it_admin_data_make() creates, as an operator would. */
#define IT_ADMIN_USER     "root"
#define IT_ADMIN_PASSWORD "correct horse battery"

/* Make a fresh temporary directory "/tmp/eddy-it-<tag>-XXXXXX" (its path into
 * `dir`) holding a data directory (its path, dir/data, into `data`) in which
 * `eddy admin create-user` made the admin IT_ADMIN_USER. For a test that
 * starts the server itself (it_server_start_in); remove `dir` with
 * it_dir_remove(). 0, or -1 with the reason on stderr (and nothing left). */
int it_admin_data_make(char *dir, size_t dir_len, char *data, size_t data_len, const char *tag);

/* it_admin_data_make(), then start the server on that data directory with
 * `env` (as it_server_start_in: stopping it keeps the directory) and log the
 * admin in: `cookie_hdr` and `csrf_hdr` as it_login() fills them. On
 * failure a started server is stopped again and `dir` removed. 0, or -1
 * with the reason on stderr. A fixture's pair:
 *     ck_assert_int_eq(it_admin_server_start(&srv, dir, sizeof(dir), "jobs", env, admin_cookie,
 *                                            sizeof(admin_cookie), admin_csrf, sizeof(admin_csrf)), 0);
 *     ...
 *     ck_assert_int_eq(it_server_stop(&srv), 0);
 *     ck_assert_int_eq(it_dir_remove(dir), 0); */
int it_admin_server_start(it_server *s, char *dir, size_t dir_len, const char *tag, const char *const *env,
                          char *cookie_hdr, size_t cookie_len, char *csrf_hdr, size_t csrf_len);

/* Remove `dir` and everything beneath it, unmounting what a killed server
 * left mounted there first. 0 (also when `dir` is already gone), or -1 when
 * something stayed (the reason on stderr). */
int it_dir_remove(const char *dir);

/* A user signed up and logged in through the API. */
typedef struct it_user {
    int64_t id;
    char    name[32], pw[64];     /* pw: "pass-<name>-123" */
    char    cookie[600];          /* "Cookie: eddy_session=..." */
    char    csrf[300];            /* "X-CSRF-Token: ..." */
    const char *hdrs[4];          /* {cookie, csrf, NULL}: room for one more */
} it_user;

/* Sign `name` up (password "pass-<name>-123", email <name>@example.com),
 * then, when `grant_mcoins` > 0, grant that much as the admin whose
 * `admin_cookie` and `admin_csrf` headers are given (as it_login fills
 * them), with the Idempotency-Key "grant-<name>", and log the user in.
 * 0, or -1 with the reason on stderr. */
int it_user_make(it_user *u, it_server *s, const char *admin_cookie, const char *admin_csrf, const char *name,
                 int64_t grant_mcoins);

/* An API key made through the API. */
typedef struct it_key {
    int64_t id;
    char    auth[160];            /* "Authorization: Bearer <key>" */
    const char *hdrs[2];          /* {auth, NULL} */
} it_key;

/* POST /api/v1/keys with the JSON `body` ({"name": ..., "scopes": ...}) as
 * the caller of `hdrs`. 0 when it answered 201, or -1 with the status and
 * body on stderr. */
int it_key_make(it_key *k, it_server *s, const char *const *hdrs, const char *body);

/* Create the private project `name` as the caller of `hdrs` (its id into
 * `pid`) and PUT `content` as its file `file` (none when `file` is NULL).
 * 0, or -1 with the step that failed on stderr. */
int it_project_make(char *pid, size_t pid_len, it_server *s, const char *const *hdrs, const char *name,
                    const char *file, const char *content);

/* The status of one request, the response dropped (0 on a transport error). */
long it_request_status(it_server *s, const char *method, const char *path, const char *body,
                       const char *const *hdrs);

/* GET `path`: its JSON body (a new reference; json_decref it) when the status
 * is 200, else NULL with the status and body on stderr. */
json_t *it_get_json(it_server *s, const char *const *hdrs, const char *path);

/* The string member `key` of `o`, or "" when absent or not a string. */
const char *it_json_str(const json_t *o, const char *key);

/* Poll GET `path` (a job's or a kernel's) every 100 ms, at most 10 * max_s
 * times, until its "status" is `status` or, with `status` NULL, neither
 * "queued" nor "running" (the job ended). A kernel "dead", or a job
 * "succeeded", "failed" or "cancelled", while another status is awaited
 * ends the wait (it will not change again). Its JSON when reached (a new reference),
 * else NULL with the last status (and stop_reason) on stderr. */
json_t *it_status_wait(it_server *s, const char *const *hdrs, const char *path, const char *status, int max_s);

/* ---- jobs and kernels ---------------------------------------------------------- */

/* Whether this host can run jobs under a disk limit: 1 when we are root and
 * `eddy sandbox check` names a disk quota mechanism, else 0 with the reason
 * in `why` (for a test's "SKIP: ..." line and exit 77). */
int it_host_disk_quotas(char *why, size_t n);

/* POST /api/v1/projects/`pid`/versions {"message": `message`} as the caller
 * of `hdrs`: the new version's id into `vid`. 0, or -1 with the status and
 * body on stderr. */
int it_version_make(char *vid, size_t vid_len, it_server *s, const char *const *hdrs, const char *pid,
                    const char *message);

/* POST /api/v1/jobs as the caller of `hdrs` (add an Idempotency-Key there)
 * with {"project_id": pid, "version": vid (left out when NULL), "entry":
 * entry, "resource": "cpu-basic", "max_runtime_s": max_runtime_s} and the
 * members of the JSON object `more` (NULL, or "{\"args\": [\"1\"]}"). The
 * status (0 on a transport error); *id the job's id when 201, else 0 and
 * the error code ("quota_exceeded") into `code` when it is not NULL. */
long it_job_submit(int64_t *id, char *code, size_t code_len, it_server *s, const char *const *hdrs, const char *pid,
                   const char *vid, const char *entry, int max_runtime_s, const char *more);

/* it_status_wait() on GET /api/v1/jobs/`id`: `status` NULL waits for its end. */
json_t *it_job_wait(it_server *s, const char *const *hdrs, int64_t id, const char *status, int max_s);

/* POST `api` ("/api/v1/kernels" or "/api/kernels") {"project_id": pid,
 * "resource": "cpu-basic"} as the caller of `hdrs`: the status; the
 * kernel's id into `kid` when 201 (`kid` may be NULL), else the error code
 * into `code` (may be NULL). */
long it_kernel_post(char *kid, size_t kid_len, char *code, size_t code_len, it_server *s, const char *const *hdrs,
                    const char *api, const char *pid);

/* it_status_wait() on GET /api/v1/kernels/`kid` (a kernel that dies while
 * another status is awaited ends the wait). */
json_t *it_kernel_wait(it_server *s, const char *const *hdrs, const char *kid, const char *status, int max_s);

/* it_kernel_post() on /api/v1/kernels, then wait up to `max_s` for the
 * kernel to be idle (Python ready). 0, or -1 with the reason on stderr. */
int it_kernel_start(char *kid, size_t kid_len, it_server *s, const char *const *hdrs, const char *pid, int max_s);

/* POST /api/v1/kernels/`kid`/execute {"code": code} and the members of the
 * JSON object `extra` (NULL, or "{\"cell_id\": \"c1\", ...}"): the request's
 * msg_id into `msg_id`. 0 when it answered 202 with one, or -1 with the
 * status and body on stderr. */
int it_kernel_execute(char *msg_id, size_t msg_id_len, it_server *s, const char *const *hdrs, const char *kid,
                      const char *code, const char *extra);

/* Where it_kernel_events() stops (`stop`): at the status idle of `parent`
 * (IT_EV_IDLE), at its execute_reply (IT_EV_REPLY) or at its first stream
 * output (IT_EV_STREAM); each also stops at the idle status. */
#define IT_EV_IDLE   0
#define IT_EV_REPLY  1
#define IT_EV_STREAM 2

/* Read GET /api/v1/kernels/`kid`/events?after=`after` (Server-Sent Events)
 * as the caller of `hdrs` until request `parent` got as far as `stop` says,
 * or, with `parent` NULL, until the stream's end; at most `timeout_s`.
 * Every message event in order (a new array: json_decref it); *ended (may
 * be NULL) 1 when the stream's end event came. NULL, with the reason on
 * stderr, when it did not answer 200, the stream stopped first, or an
 * event's id is not its message's seq, increasing. */
json_t *it_kernel_events(it_server *s, const char *const *hdrs, const char *kid, long long after, const char *parent,
                         int stop, long timeout_s, int *ended);

/* A message's header.msg_type and parent_header.msg_id ("" when absent). */
const char *it_msg_type(const json_t *m);
const char *it_msg_parent(const json_t *m);

/* PUT /api/v1/admin/tiers/`tier` {"`field`": `value`} (`value` a JSON
 * value's text: "33554432") as the caller of `hdrs`, as an operator sets a
 * tier's limit. The status; -1 (with the answer on stderr) when a 422 does
 * not name `field` or a 200 does not show `field` as `value`. */
long it_tier_set(it_server *s, const char *const *hdrs, const char *tier, const char *field, const char *value);

/* ---- workspaces: kernels on a project's live tree ---------------------------------- */

/* Whether kernels can run here on their project's tree: 1 when we are root
 * and `eddy sandbox check` says "idmapped bind mounts: yes" on its
 * "workspaces" line, else 0 with the reason in `why` (for a "SKIP: ..."
 * line and exit 77). */
int it_host_idmap(char *why, size_t n);

/* Run Python `code` in kernel `kid` (on project `pid`) as the caller of
 * `hdrs`: `code` is the body of a function that sets `out`; str(out) (or
 * the traceback) goes to _res/<n>.txt in the tree (written aside, then
 * renamed in place) and is read back over REST, for at most `max_s`. The
 * text of `out` (malloc'd), or NULL with the traceback, or why nothing
 * came, on stderr. The cell needs room in the tree for that file.
 *     char *out = it_kernel_run(&srv, u.hdrs, kid, pid, "out = 6 * 7\n", 60);   "42" */
char *it_kernel_run(it_server *s, const char *const *hdrs, const char *kid, const char *pid, const char *code,
                    int max_s);

/* it_kernel_start() and it_kernel_run(), each allowed 60 s, that fail the
 * running Check test when the kernel does not become idle or the cell
 * gives no result (the reason on stderr). */
static inline void it_ck_kernel_start(char *kid, size_t kid_len, it_server *s, const char *const *hdrs,
                                      const char *pid)
{
    ck_assert_msg(it_kernel_start(kid, kid_len, s, hdrs, pid, 60) == 0, "no idle kernel on %s (stderr says why)", pid);
}

static inline char *it_ck_kernel_run(it_server *s, const char *const *hdrs, const char *kid, const char *pid,
                                     const char *code)
{
    char *out = it_kernel_run(s, hdrs, kid, pid, code, 60);
    ck_assert_msg(out != NULL, "the cell gave no result (stderr says why):\n%s", code);
    return out;
}

/* A test that holds many sockets: raise this process's open-file limit
 * (RLIMIT_NOFILE) to its hard limit when it is below `need`. 0 when it is
 * at least `need` then, else -1 with the reason in `why` (for a "SKIP: ..."
 * line and exit 77). */
int it_fds_reserve(unsigned long need, char *why, size_t n);

/* ---- a small WebSocket client (RFC 6455) ----------------------------------------- */

/* One client connection: what came from the server and was not yet read. */
typedef struct it_ws {
    int      fd;              /* -1 when closed */
    uint8_t *buf;             /* received bytes not yet returned as frames */
    size_t   len, cap;        /* cap: the largest frame it can take, and more */
    char     protocol[64];    /* the Sec-WebSocket-Protocol the server chose, or "" */
} it_ws;

/* Connect to `s` from the local address `src` (NULL: any; "127.0.0.2",
 * "127.0.0.3" ... stand for other clients), send the upgrade request for `path`
 * with the key "dGhlIHNhbXBsZSBub25jZQ==" and the NULL-terminated extra
 * header lines `headers` (an Authorization, a Sec-WebSocket-Protocol; may be
 * NULL), and read the answer's head, at most `timeout_ms`. `cap` bounds a
 * frame it can receive. The HTTP status (101: upgraded, and the
 * Sec-WebSocket-Accept is the key's), or -1 with the reason on stderr
 * (nothing or a wrong accept came); close it with it_ws_close() either way. */
long it_ws_open(it_ws *c, it_server *s, const char *src, const char *path, const char *const *headers, size_t cap,
                int timeout_ms);

/* Send one frame whose first byte is `b0` (0x80 | opcode for a whole
 * one), its payload masked unless `mask` is 0 (a client's must be). 0, or
 * -1 when it could not be sent whole. */
int it_ws_send(it_ws *c, int b0, const void *data, size_t len, int mask);

/* The next frame from the server: its opcode, its payload (*data,
 * malloc'd, NUL-terminated; free it) and length. 1; 0 when none came
 * within `timeout_ms`; -1 when the connection closed; -2 (with the reason
 * on stderr) when the server broke the protocol (a masked frame) or sent
 * a frame larger than `cap`. */
int it_ws_recv(it_ws *c, int *opcode, char **data, size_t *len, int timeout_ms);

/* Close the connection (when open) and free what it holds. */
void it_ws_close(it_ws *c);

/* curl_global_init() and curl_global_cleanup(), for a test program's main()
 * (a test file need not include curl.h: its names may clash with the test's). */
void it_curl_global_init(void);
void it_curl_global_cleanup(void);

/* A Check test program's main(): run every test of `s` (CK_NORMAL output)
 * between it_curl_global_init() and it_curl_global_cleanup(); 0 when all
 * passed, else 1. Inline, so that the harness library links no Check.
 *     int main(void) { return it_suite_run(suite()); } */
static inline int it_suite_run(Suite *s)
{
    SRunner *sr;
    int failed;

    it_curl_global_init();
    sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    it_curl_global_cleanup();
    return failed ? 1 : 0;
}

/* A Check test program's main() for one test case: the tests of `tests`
 * (as START_TEST names them, NULL-terminated) in a suite and a test case both
 * named `name`, each limited to `timeout_s` and, when `setup` or `teardown`
 * is not NULL, run between them as a checked fixture (in the test's own
 * process); then as it_suite_run().
 *     const TTest *tests[] = {grant_is_idempotent, grant_refuses_bad_input, NULL};
 *     return it_tests_run("ledger", 120, setup, teardown, tests); */
static inline int it_tests_run(const char *name, double timeout_s, SFun setup, SFun teardown,
                               const TTest *const *tests)
{
    Suite *s = suite_create(name);
    TCase *tc = tcase_create(name);

    if (setup || teardown)
        tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, timeout_s);
    for (; *tests; tests++)
        tcase_add_test(tc, *tests);
    suite_add_tcase(s, tc);
    return it_suite_run(s);
}

#endif
