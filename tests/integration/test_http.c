/* The HTTP core over the real `eddy serve`: meta routes, errors, limits,
 * request ids, metrics, connection caps, shutdown and start-up failures. */
#include "harness.h"

#include <arpa/inet.h>
#include <check.h>
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdbool.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static it_server srv;

static void start(const char *const *env)
{
    ck_assert_msg(it_server_start(&srv, env) == 0, "server did not start");
}

static void stop(void)
{
    ck_assert_int_eq(it_server_stop(&srv), 0);
}

/* ---- raw sockets ------------------------------------------------------------ */

static int raw_connect(int port)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    struct timeval tv = {.tv_sec = 10};
    int fd = socket(AF_INET, SOCK_STREAM, 0);

    ck_assert_int_ge(fd, 0);
    inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
    ck_assert_int_eq(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    return fd;
}

static int send_all(int fd, const char *s, size_t n)
{
    while (n > 0) {
        ssize_t w = send(fd, s, n, MSG_NOSIGNAL);
        if (w <= 0)
            return -1;
        s += w;
        n -= (size_t)w;
    }
    return 0;
}

/* Read until the response head and a Content-Length body are in, or the peer
 * closes / errors. Returns bytes read (0: closed with nothing), -1 on error. */
static ssize_t read_response(int fd, char *buf, size_t cap)
{
    size_t used = 0;

    for (;;) {
        ssize_t n = recv(fd, buf + used, cap - 1 - used, 0);
        if (n < 0)
            return used ? (ssize_t)used : -1;
        if (n == 0)
            break;
        used += (size_t)n;
        buf[used] = '\0';
        char *end = strstr(buf, "\r\n\r\n");
        char *cl = strcasestr(buf, "Content-Length:");
        if (end && cl && cl < end && used >= (size_t)(end + 4 - buf) + (size_t)atol(cl + 15))
            break;
        if (used + 1 >= cap)
            break;
    }
    buf[used] = '\0';
    return (ssize_t)used;
}

/* ---- running eddy directly ---------------------------------------------------- */

/* Run eddy with `args` (NULL-terminated) and extra `env`; stderr goes to
 * `errpath`. Returns the exit status (128+sig when killed), -1 on timeout. */
static int run_eddy(const char *const *args, const char *const *env, const char *errpath)
{
    const char *argv[16];
    int n = 0, status;
    pid_t pid;

    argv[n++] = "eddy";
    for (const char *const *a = args; *a && n < 15; a++)
        argv[n++] = *a;
    argv[n] = NULL;
    pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        int efd = open(errpath, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        int nul = open("/dev/null", O_WRONLY);
        dup2(nul, 1);
        dup2(efd, 2);
        for (const char *const *e = env; e && *e; e++)
            putenv((char *)*e);
        execv(it_eddy_bin(), (char *const *)argv);
        _exit(127);
    }
    for (int i = 0; i < 1000; i++) {
        if (waitpid(pid, &status, WNOHANG) == pid)
            return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        usleep(10000);
    }
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    return -1;
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "r");
    static char buf[8192];
    size_t n = 0;

    buf[0] = '\0';
    if (f) {
        n = fread(buf, 1, sizeof(buf) - 1, f);
        fclose(f);
    }
    buf[n] = '\0';
    return buf;
}

static void make_tmpdir(char *out, size_t cap)
{
    snprintf(out, cap, "/tmp/eddy-it-http-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(out));
    it_share_with_server(out);      /* the server serves as eddy when started as root */
}

static void rm_rf(const char *dir)
{
    char cmd[600];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    ck_assert_int_eq(system(cmd), 0);
}

/* ---- tests ----------------------------------------------------------------------- */

START_TEST(healthz_answers_ok_with_security_headers)
{
    it_resp r;
    start(NULL);
    ck_assert_int_eq(it_request(&r, &srv, "GET", "/healthz", NULL, NULL), 0);
    ck_assert_int_eq(r.status, 200);
    ck_assert_ptr_nonnull(r.json);
    ck_assert_str_eq(json_string_value(json_object_get(r.json, "status")), "ok");
    ck_assert_str_eq(it_resp_header(&r, "X-Content-Type-Options"), "nosniff");
    ck_assert_str_eq(it_resp_header(&r, "Referrer-Policy"), "same-origin");
    ck_assert_ptr_null(it_resp_header(&r, "Cache-Control"));   /* not under /api/ */
    it_resp_free(&r);
    ck_assert_int_eq(it_request(&r, &srv, "GET", "/api/v1/version", NULL, NULL), 0);
    ck_assert_int_eq(r.status, 200);
    ck_assert_str_eq(it_resp_header(&r, "Cache-Control"), "no-store");
    ck_assert_str_eq(json_string_value(json_object_get(r.json, "version")), EDDY_VERSION);
    /* "cuda" is true exactly when nothing is missing (the CUDA plugin is
     * built and NVML sees a GPU); cuda_detail says what is missing. */
    ck_assert(json_is_boolean(json_object_get(r.json, "cuda")));
    ck_assert(json_is_true(json_object_get(r.json, "cuda")) ==
              json_is_null(json_object_get(r.json, "cuda_detail")));
    ck_assert(json_is_boolean(json_object_get(r.json, "cuda_toolkit")));
    ck_assert_ptr_nonnull(json_string_value(json_object_get(r.json, "framework")));
    it_resp_free(&r);
    stop();
}
END_TEST

START_TEST(request_id_is_on_every_response_and_unique)
{
    it_resp r;
    char first[128];
    start(NULL);
    it_request(&r, &srv, "GET", "/healthz", NULL, NULL);
    ck_assert_ptr_nonnull(it_resp_header(&r, "X-Request-Id"));
    snprintf(first, sizeof(first), "%s", it_resp_header(&r, "X-Request-Id"));
    ck_assert_int_ge(strlen(first), 8);
    it_resp_free(&r);
    it_request(&r, &srv, "GET", "/healthz", NULL, NULL);
    ck_assert_ptr_nonnull(it_resp_header(&r, "X-Request-Id"));
    ck_assert_str_ne(it_resp_header(&r, "X-Request-Id"), first);
    it_resp_free(&r);
    /* Errors carry it too, in the header and in the body. */
    it_request(&r, &srv, "DELETE", "/healthz", NULL, NULL);
    ck_assert_ptr_nonnull(it_resp_header(&r, "X-Request-Id"));
    json_t *e = json_object_get(r.json, "error");
    ck_assert_str_eq(json_string_value(json_object_get(e, "request_id")),
                     it_resp_header(&r, "X-Request-Id"));
    it_resp_free(&r);
    stop();
}
END_TEST

START_TEST(unknown_route_is_404_with_error_body)
{
    it_resp r;
    start(NULL);
    ck_assert_int_eq(it_request(&r, &srv, "GET", "/api/v1/no-such-thing", NULL, NULL), 0);
    ck_assert_int_eq(r.status, 404);
    ck_assert_str_eq(it_resp_error_code(&r), "not_found");
    json_t *e = json_object_get(r.json, "error");
    ck_assert_ptr_nonnull(json_string_value(json_object_get(e, "message")));
    ck_assert_str_eq(json_string_value(json_object_get(e, "request_id")),
                     it_resp_header(&r, "X-Request-Id"));
    ck_assert_str_eq(it_resp_header(&r, "Cache-Control"), "no-store");
    it_resp_free(&r);
    /* A malformed escape is a bad request, not a crash or a 404. */
    ck_assert_int_eq(it_request(&r, &srv, "GET", "/api/v1/%zz", NULL, NULL), 0);
    ck_assert_int_eq(r.status, 400);
    ck_assert_str_eq(it_resp_error_code(&r), "bad_request");
    it_resp_free(&r);
    stop();
}
END_TEST

START_TEST(wrong_method_is_405_with_allow)
{
    it_resp r;
    start(NULL);
    ck_assert_int_eq(it_request(&r, &srv, "POST", "/api/v1/version", "{}", NULL), 0);
    ck_assert_int_eq(r.status, 405);
    ck_assert_str_eq(it_resp_header(&r, "Allow"), "GET");
    ck_assert_ptr_nonnull(it_resp_header(&r, "X-Request-Id"));
    ck_assert_ptr_nonnull(it_resp_error_code(&r));
    it_resp_free(&r);
    stop();
}
END_TEST

START_TEST(oversized_headers_are_431)
{
    it_resp r;
    /* Past our limit but within libmicrohttpd's buffer: our JSON answer. */
    static char small[20 * 1024], huge[200 * 1024];
    snprintf(small, sizeof(small), "X-Big: ");
    memset(small + 7, 'a', sizeof(small) - 8);
    snprintf(huge, sizeof(huge), "X-Huge: ");
    memset(huge + 8, 'b', sizeof(huge) - 9);
    const char *h1[] = {small, NULL}, *h2[] = {huge, NULL};

    start(NULL);
    ck_assert_int_eq(it_request(&r, &srv, "GET", "/healthz", NULL, h1), 0);
    ck_assert_int_eq(r.status, 431);
    ck_assert_ptr_nonnull(it_resp_header(&r, "X-Request-Id"));
    ck_assert_str_eq(it_resp_error_code(&r), "request_headers_too_large");
    it_resp_free(&r);
    /* Past libmicrohttpd's buffer: libmicrohttpd answers, still 431. */
    it_request(&r, &srv, "GET", "/healthz", NULL, h2);
    ck_assert_int_eq(r.status, 431);
    it_resp_free(&r);
    /* The server is still fine. */
    it_request(&r, &srv, "GET", "/healthz", NULL, NULL);
    ck_assert_int_eq(r.status, 200);
    it_resp_free(&r);
    stop();
}
END_TEST

START_TEST(declared_oversized_body_is_413)
{
    static const char *const env[] = {"EDDY_MAX_BODY_BYTES=1000", NULL};
    static char body[5000];
    it_resp r;

    memset(body, 'x', sizeof(body));
    start(env);
    ck_assert_int_eq(it_request_n(&r, &srv, "GET", "/api/v1/version", body, sizeof(body), NULL), 0);
    ck_assert_int_eq(r.status, 413);
    ck_assert_str_eq(it_resp_error_code(&r), "payload_too_large");
    ck_assert_ptr_nonnull(it_resp_header(&r, "X-Request-Id"));
    it_resp_free(&r);
    /* Under the limit is fine. */
    ck_assert_int_eq(it_request_n(&r, &srv, "GET", "/api/v1/version", body, 900, NULL), 0);
    ck_assert_int_eq(r.status, 200);
    it_resp_free(&r);
    stop();
}
END_TEST

START_TEST(chunked_body_growing_past_limit_is_413)
{
    static const char *const env[] = {"EDDY_MAX_BODY_BYTES=1000", NULL};
    char buf[4096], chunk[600];
    int fd;

    start(env);
    fd = raw_connect(srv.port);
    static const char head0[] = "GET /api/v1/version HTTP/1.1\r\nHost: t\r\n"
                                "Transfer-Encoding: chunked\r\n\r\n";
    ck_assert_int_eq(send_all(fd, head0, sizeof(head0) - 1), 0);
    memset(chunk, 'y', sizeof(chunk));
    for (int i = 0; i < 4; i++) {
        char head[16];
        snprintf(head, sizeof(head), "%zx\r\n", sizeof(chunk));
        if (send_all(fd, head, strlen(head)) < 0 || send_all(fd, chunk, sizeof(chunk)) < 0 ||
            send_all(fd, "\r\n", 2) < 0)
            break;   /* the server may answer and close early */
    }
    send_all(fd, "0\r\n\r\n", 5);
    ck_assert_int_gt(read_response(fd, buf, sizeof(buf)), 0);
    ck_assert_msg(strncmp(buf, "HTTP/1.1 413", 12) == 0, "got: %.80s", buf);
    ck_assert_ptr_nonnull(strcasestr(buf, "X-Request-Id:"));
    ck_assert_ptr_nonnull(strstr(buf, "payload_too_large"));
    close(fd);
    stop();
}
END_TEST

START_TEST(metrics_count_requests_by_route_pattern)
{
    it_resp r;
    start(NULL);
    for (int i = 0; i < 3; i++) {
        it_request(&r, &srv, "GET", "/api/v1/version", NULL, NULL);
        it_resp_free(&r);
    }
    it_request(&r, &srv, "GET", "/raw/path/xyz", NULL, NULL);
    it_resp_free(&r);
    ck_assert_int_eq(it_request(&r, &srv, "GET", "/metrics", NULL, NULL), 0);
    ck_assert_int_eq(r.status, 200);
    ck_assert_ptr_nonnull(strstr(it_resp_header(&r, "Content-Type"), "text/plain"));
    const char *line = strstr(r.body, "eddy_http_requests_total{method=\"GET\",route=\"/api/v1/version\","
                                      "status=\"200\"} ");
    ck_assert_ptr_nonnull(line);
    ck_assert_int_eq(atoi(strchr(line, '}') + 2), 3);
    ck_assert_ptr_nonnull(strstr(r.body, "eddy_http_request_duration_seconds_count{route=\"/api/v1/version\"} 3"));
    ck_assert_ptr_nonnull(strstr(r.body, "route=\"unmatched\",status=\"404\""));
    ck_assert_ptr_null(strstr(r.body, "/raw/path/xyz"));     /* never the raw path */
    ck_assert_ptr_nonnull(strstr(r.body, "eddy_process_uptime_seconds "));
    it_resp_free(&r);
    stop();
}
END_TEST

START_TEST(openapi_lists_every_meta_route)
{
    it_resp r;
    start(NULL);
    ck_assert_int_eq(it_request(&r, &srv, "GET", "/api/v1/openapi.json", NULL, NULL), 0);
    ck_assert_int_eq(r.status, 200);
    ck_assert_ptr_nonnull(r.json);
    ck_assert_str_eq(json_string_value(json_object_get(r.json, "openapi")), "3.0.3");
    json_t *paths = json_object_get(r.json, "paths");
    ck_assert_ptr_nonnull(json_object_get(json_object_get(paths, "/healthz"), "get"));
    ck_assert_ptr_nonnull(json_object_get(json_object_get(paths, "/api/v1/version"), "get"));
    ck_assert_ptr_nonnull(json_object_get(json_object_get(paths, "/metrics"), "get"));
    json_t *op = json_object_get(json_object_get(paths, "/healthz"), "get");
    ck_assert_int_eq(json_array_size(json_object_get(op, "security")), 0);   /* public */
    ck_assert_ptr_nonnull(json_object_get(json_object_get(op, "responses"), "200"));
    ck_assert_ptr_nonnull(json_object_get(json_object_get(json_object_get(r.json, "components"),
                                                          "schemas"), "Error"));
    it_resp_free(&r);
    stop();
}
END_TEST

START_TEST(per_ip_connection_cap_refuses_the_extra_connection)
{
    static const char *const env[] = {"EDDY_MAX_CONNS_PER_IP=2", NULL};
    static const char req[] = "GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n";
    char buf[2048];
    int fds[3];

    start(env);
    for (int i = 0; i < 2; i++) {
        /* A full request each, so both are accepted and kept alive. */
        fds[i] = raw_connect(srv.port);
        ck_assert_int_eq(send_all(fds[i], req, sizeof(req) - 1), 0);
        ck_assert_int_gt(read_response(fds[i], buf, sizeof(buf)), 0);
        ck_assert_msg(strncmp(buf, "HTTP/1.1 200", 12) == 0, "conn %d: %.60s", i, buf);
    }
    fds[2] = raw_connect(srv.port);   /* the kernel completes the handshake... */
    send_all(fds[2], req, sizeof(req) - 1);
    ssize_t n = read_response(fds[2], buf, sizeof(buf));
    ck_assert_msg(n <= 0, "third connection was served: %.60s", buf); /* ...the server closes it */
    /* The capped ones still work. */
    ck_assert_int_eq(send_all(fds[0], req, sizeof(req) - 1), 0);
    ck_assert_int_gt(read_response(fds[0], buf, sizeof(buf)), 0);
    ck_assert(strncmp(buf, "HTTP/1.1 200", 12) == 0);
    for (int i = 0; i < 3; i++)
        close(fds[i]);
    stop();
}
END_TEST

START_TEST(sigterm_exits_zero_and_leaves_the_database_intact)
{
    char dir[64], data[128], db[160];
    sqlite3 *h;
    sqlite3_stmt *st;
    it_resp r;

    make_tmpdir(dir, sizeof(dir));
    snprintf(data, sizeof(data), "%s/data", dir);
    ck_assert_int_eq(it_server_start_in(&srv, data, NULL), 0);
    for (int i = 0; i < 5; i++) {
        it_request(&r, &srv, "GET", "/healthz", NULL, NULL);
        ck_assert_int_eq(r.status, 200);
        it_resp_free(&r);
    }
    ck_assert_int_eq(it_server_stop(&srv), 0);
    struct stat sb;
    ck_assert_int_eq(stat(data, &sb), 0);
    ck_assert_int_eq(sb.st_mode & 0777, 0700);
    snprintf(db, sizeof(db), "%s/projects", data);
    ck_assert_int_eq(stat(db, &sb), 0);
    snprintf(db, sizeof(db), "%s/eddy.db", data);
    ck_assert_int_eq(sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    ck_assert_int_eq(sqlite3_prepare_v2(h, "PRAGMA integrity_check", -1, &st, NULL), SQLITE_OK);
    ck_assert_int_eq(sqlite3_step(st), SQLITE_ROW);
    ck_assert_str_eq((const char *)sqlite3_column_text(st, 0), "ok");
    sqlite3_finalize(st);
    sqlite3_close(h);
    rm_rf(dir);
}
END_TEST

START_TEST(sigterm_lets_an_in_flight_request_finish)
{
    static const char head[] = "GET /api/v1/version HTTP/1.1\r\nHost: t\r\n"
                               "Content-Length: 10\r\n\r\n12345";
    char buf[4096];
    int fd, st = 0, refused = 0;

    start(NULL);
    fd = raw_connect(srv.port);
    /* Half the body: the request is in flight, its handler not yet run. */
    ck_assert_int_eq(send_all(fd, head, sizeof(head) - 1), 0);
    usleep(100000);
    ck_assert_int_eq(kill(srv.pid, SIGTERM), 0);
    /* Wait until the server stops accepting (a new connection is refused). */
    for (int i = 0; i < 500 && !refused; i++) {
        struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)srv.port)};
        int c = socket(AF_INET, SOCK_STREAM, 0);
        inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
        refused = connect(c, (struct sockaddr *)&a, sizeof(a)) < 0 && errno == ECONNREFUSED;
        close(c);
        if (!refused)
            usleep(10000);
    }
    ck_assert_msg(refused, "server still accepts connections after SIGTERM");
    /* The in-flight request still completes... */
    ck_assert_int_eq(send_all(fd, "67890", 5), 0);
    ck_assert_int_gt(read_response(fd, buf, sizeof(buf)), 0);
    ck_assert_msg(strncmp(buf, "HTTP/1.1 200", 12) == 0, "got: %.80s", buf);
    close(fd);
    /* ...and then the server exits cleanly. */
    ck_assert_int_eq(waitpid(srv.pid, &st, 0), srv.pid);
    ck_assert(WIFEXITED(st));
    ck_assert_int_eq(WEXITSTATUS(st), 0);
    srv.pid = 0;
    it_server_stop(&srv);   /* removes the data directory */
}
END_TEST

START_TEST(garbage_database_fails_start_with_a_clear_message)
{
    char dir[64], data[128], db[160], err[160];
    FILE *f;

    make_tmpdir(dir, sizeof(dir));
    snprintf(data, sizeof(data), "%s/data", dir);
    ck_assert_int_eq(mkdir(data, 0700), 0);
    snprintf(db, sizeof(db), "%s/eddy.db", data);
    ck_assert_ptr_nonnull(f = fopen(db, "w"));
    for (int i = 0; i < 200; i++)
        fputs("this is not an sqlite database, just text. ", f);
    fclose(f);
    snprintf(err, sizeof(err), "%s/stderr", dir);
    const char *args[] = {"serve", "--data", data, "--listen", "127.0.0.1:0", NULL};
    int rc = run_eddy(args, NULL, err);
    ck_assert_msg(rc != 0 && rc != -1, "exit status %d", rc);
    const char *msg = slurp(err);
    ck_assert_msg(strstr(msg, "eddy.db") != NULL, "stderr: %s", msg);
    ck_assert_msg(strstr(msg, "not a database") != NULL, "stderr: %s", msg);
    rm_rf(dir);
}
END_TEST

START_TEST(bad_listen_and_bad_settings_exit_2)
{
    char dir[64], data[128], err[160], conf[160];
    FILE *f;

    make_tmpdir(dir, sizeof(dir));
    snprintf(data, sizeof(data), "%s/data", dir);
    snprintf(err, sizeof(err), "%s/stderr", dir);
    const char *a1[] = {"serve", "--data", data, "--listen", "localhost", NULL};
    ck_assert_int_eq(run_eddy(a1, NULL, err), 2);
    ck_assert_msg(strstr(slurp(err), "listen") != NULL, "stderr: %s", slurp(err));
    const char *a2[] = {"serve", "--data", data, "--listen", "127.0.0.1:70000", NULL};
    ck_assert_int_eq(run_eddy(a2, NULL, err), 2);
    const char *a3[] = {"serve", "--data", data, "--bogus", NULL};
    ck_assert_int_eq(run_eddy(a3, NULL, err), 2);
    /* A config file error names the file and line. */
    snprintf(conf, sizeof(conf), "%s/eddy.conf", dir);
    ck_assert_ptr_nonnull(f = fopen(conf, "w"));
    fputs("# test\nthreads = 2\nmax_conns = many\n", f);
    fclose(f);
    const char *a4[] = {"serve", "--data", data, "--listen", "127.0.0.1:0", "--config", conf, NULL};
    ck_assert_int_eq(run_eddy(a4, NULL, err), 2);
    ck_assert_msg(strstr(slurp(err), "eddy.conf:3:") != NULL, "stderr: %s", slurp(err));
    /* So does a bad environment variable. */
    static const char *const env[] = {"EDDY_THREADS=lots", NULL};
    const char *a5[] = {"serve", "--data", data, "--listen", "127.0.0.1:0", NULL};
    ck_assert_int_eq(run_eddy(a5, env, err), 2);
    ck_assert_msg(strstr(slurp(err), "EDDY_THREADS") != NULL, "stderr: %s", slurp(err));
    /* Nothing was created for a refused start. */
    struct stat sb;
    ck_assert_int_ne(stat(data, &sb), 0);
    rm_rf(dir);
}
END_TEST

/* TLS: a self-signed certificate made now with openssl or certtool. It runs
 * as its own CTest test (`it_test_http tls`), which exits 77 (a reported
 * skip) where neither tool is installed. */
static bool have_tool(const char *name)
{
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "command -v %s >/dev/null 2>&1", name);
    return system(cmd) == 0;
}

START_TEST(tls_serves_https_with_the_configured_certificate)
{
    char dir[64], cmd[1024], cert[160], key[160], data[128], env_cert[200], env_key[200];
    int out[2], port = 0;
    pid_t pid;

    bool have_openssl = have_tool("openssl");
    ck_assert_msg(have_openssl || have_tool("certtool"), "main() checked for openssl or certtool");
    make_tmpdir(dir, sizeof(dir));
    snprintf(cert, sizeof(cert), "%s/cert.pem", dir);
    snprintf(key, sizeof(key), "%s/key.pem", dir);
    snprintf(data, sizeof(data), "%s/data", dir);
    if (have_openssl)
        snprintf(cmd, sizeof(cmd),
                 "openssl req -x509 -newkey rsa:2048 -nodes -keyout %s -out %s -days 1 "
                 "-subj /CN=localhost -addext subjectAltName=IP:127.0.0.1 >/dev/null 2>&1",
                 key, cert);
    else
        snprintf(cmd, sizeof(cmd),
                 "(cd %s && printf 'cn = localhost\\nip_address = 127.0.0.1\\nexpiration_days = 1\\n"
                 "ca\\ntls_www_server\\nsigning_key\\nencryption_key\\n' > tmpl && "
                 "certtool --generate-privkey --outfile %s && certtool --generate-self-signed "
                 "--load-privkey %s --template tmpl --outfile %s) >/dev/null 2>&1",
                 dir, key, key, cert);
    ck_assert_int_eq(system(cmd), 0);
    it_share_with_server(dir);      /* the key is 0600: eddy must read it */
    snprintf(env_cert, sizeof(env_cert), "EDDY_TLS_CERT=%s", cert);
    snprintf(env_key, sizeof(env_key), "EDDY_TLS_KEY=%s", key);
    ck_assert_int_eq(pipe(out), 0);
    pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        int nul = open("/dev/null", O_WRONLY);
        dup2(out[1], 1);
        dup2(nul, 2);
        close(out[0]);
        putenv(env_cert);
        putenv(env_key);
        execl(it_eddy_bin(), "eddy", "serve", "--data", data, "--listen", "127.0.0.1:0",
              (char *)NULL);
        _exit(127);
    }
    close(out[1]);
    {
        char line[256];
        FILE *f = fdopen(out[0], "r");
        if (fgets(line, sizeof(line), f) != NULL) {
            char *p = strstr(line, "listening on https://127.0.0.1:");
            if (p)
                port = atoi(p + strlen("listening on https://127.0.0.1:"));
        }
        fclose(f);
    }
    ck_assert_int_gt(port, 0);

    CURL *c = curl_easy_init();
    char url[64];
    long status = 0;
    snprintf(url, sizeof(url), "https://127.0.0.1:%d/healthz", port);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_CAINFO, cert);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 20L);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, NULL);
    FILE *sink = fopen("/dev/null", "w");
    curl_easy_setopt(c, CURLOPT_WRITEDATA, sink);
    ck_assert_int_eq(curl_easy_perform(c), CURLE_OK);   /* the chain verifies */
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    ck_assert_int_eq(status, 200);
    /* Plain HTTP to the TLS port gets no HTTP answer. */
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/healthz", port);
    curl_easy_setopt(c, CURLOPT_URL, url);
    status = 0;
    curl_easy_perform(c);
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    ck_assert_int_ne(status, 200);
    curl_easy_cleanup(c);
    fclose(sink);

    int st;
    kill(pid, SIGTERM);
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    rm_rf(dir);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("http");
    TCase *t = tcase_create("core");

    tcase_set_timeout(t, 60);
    tcase_add_test(t, healthz_answers_ok_with_security_headers);
    tcase_add_test(t, request_id_is_on_every_response_and_unique);
    tcase_add_test(t, unknown_route_is_404_with_error_body);
    tcase_add_test(t, wrong_method_is_405_with_allow);
    tcase_add_test(t, oversized_headers_are_431);
    tcase_add_test(t, declared_oversized_body_is_413);
    tcase_add_test(t, chunked_body_growing_past_limit_is_413);
    tcase_add_test(t, metrics_count_requests_by_route_pattern);
    tcase_add_test(t, openapi_lists_every_meta_route);
    tcase_add_test(t, per_ip_connection_cap_refuses_the_extra_connection);
    tcase_add_test(t, sigterm_exits_zero_and_leaves_the_database_intact);
    tcase_add_test(t, sigterm_lets_an_in_flight_request_finish);
    tcase_add_test(t, garbage_database_fails_start_with_a_clear_message);
    tcase_add_test(t, bad_listen_and_bad_settings_exit_2);
    suite_add_tcase(s, t);
    return s;
}

/* `it_test_http tls`: only the TLS case, or exit 77 (a skip CTest reports)
 * where no tool can make a certificate. */
static Suite *tls_suite(void)
{
    Suite *s = suite_create("http tls");
    TCase *t = tcase_create("tls");

    tcase_set_timeout(t, 60);
    tcase_add_test(t, tls_serves_https_with_the_configured_certificate);
    suite_add_tcase(s, t);
    return s;
}

int main(int argc, char **argv)
{
    bool tls = argc > 1 && strcmp(argv[1], "tls") == 0;
    SRunner *sr;
    int failed;

    if (tls && !have_tool("openssl") && !have_tool("certtool")) {
        fprintf(stderr, "skipped: neither openssl nor certtool is installed\n");
        return 77;
    }
    sr = srunner_create(tls ? tls_suite() : suite());
    curl_global_init(CURL_GLOBAL_ALL);
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    curl_global_cleanup();
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
