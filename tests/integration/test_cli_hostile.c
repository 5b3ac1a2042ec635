/* The `eddy` client against servers the real one never is: a hostile server
 * naming paths outside the target directory, a proxy answering HTML, a
 * redirect, a dropped connection, a rate limit, and a kernel event stream
 * that drops before the cell's reply (the client resumes it with after=).
 * The kernels API itself runs against the real server in test_cli_kernels.c.
 * A small HTTP responder
 * (a child process on 127.0.0.1:0) answers from a fixed table and records
 * every request it saw, so the tests can check what the client sent. */
#include "harness.h"

#include <arpa/inet.h>
#include <check.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

typedef struct route {
    const char *request;    /* "GET /api/v1/me" (method and target, exact) */
    const char *response;   /* the whole response, or "DROP" to close without one */
} route;

static char dir[64], home[128], work[128], log_path[200], url_env[80];
static const char key_env[] = "EDDY_API_KEY=eddy_test_notarealkey_0000";
static pid_t fake_pid;

#define JSON_OK(status, body)                                                                   \
    "HTTP/1.1 " status "\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n" body
#define PROJECT_ROUTE                                                                           \
    {"GET /api/v1/projects/pAAAAAAAAAAAA",                                                       \
     JSON_OK("200 OK", "{\"id\":\"pAAAAAAAAAAAA\",\"name\":\"x\",\"owner\":\"me\"}")}
#define NOT_FOUND JSON_OK("404 Not Found", "{\"error\":{\"code\":\"not_found\",\"message\":\"no route\"}}")

static void serve_one(int c, const route *routes)
{
    char req[65536];
    size_t used = 0;
    char *end = NULL;
    long body = 0;
    FILE *log;

    while (used < sizeof(req) - 1) {
        ssize_t n = read(c, req + used, sizeof(req) - 1 - used);
        if (n <= 0)
            break;
        used += (size_t)n;
        req[used] = '\0';
        if (end == NULL && (end = strstr(req, "\r\n\r\n")) != NULL) {
            const char *cl = strcasestr(req, "\r\nContent-Length:");
            body = cl && cl < end ? atol(cl + 17) : 0;
        }
        if (end && used >= (size_t)(end + 4 - req) + (size_t)body)
            break;
    }
    req[used] = '\0';
    if ((log = fopen(log_path, "a")) != NULL) {
        fprintf(log, "%s\n----\n", req);
        fclose(log);
    }
    char line[2048];
    snprintf(line, sizeof(line), "%.*s", (int)strcspn(req, "\r\n"), req);
    char *sp = strrchr(line, ' ');   /* cut " HTTP/1.1" */
    if (sp)
        *sp = '\0';
    const char *resp = NOT_FOUND;
    for (const route *r = routes; r->request; r++)
        if (strcmp(r->request, line) == 0) {
            resp = r->response;
            break;
        }
    if (strcmp(resp, "DROP") != 0) {
        size_t n = strlen(resp), off = 0;
        while (off < n) {
            ssize_t w = write(c, resp + off, n - off);
            if (w <= 0)
                break;
            off += (size_t)w;
        }
    }
    close(c);
}

static void fake_start(const route *routes)
{
    struct sockaddr_in a = {.sin_family = AF_INET};
    socklen_t al = sizeof(a);
    int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;

    ck_assert_int_ge(s, 0);
    setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ck_assert_int_eq(bind(s, (struct sockaddr *)&a, sizeof(a)), 0);
    ck_assert_int_eq(listen(s, 16), 0);
    ck_assert_int_eq(getsockname(s, (struct sockaddr *)&a, &al), 0);
    snprintf(url_env, sizeof(url_env), "EDDY_URL=http://127.0.0.1:%d", ntohs(a.sin_port));
    unlink(log_path);
    fake_pid = fork();
    ck_assert_int_ge(fake_pid, 0);
    if (fake_pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);   /* never outlive a failed test */
        alarm(120);
        for (;;) {
            int c = accept(s, NULL, NULL);
            if (c >= 0)
                serve_one(c, routes);
        }
    }
    close(s);
}

static void fake_stop(void)
{
    if (fake_pid > 0) {
        kill(fake_pid, SIGKILL);
        waitpid(fake_pid, NULL, 0);
        fake_pid = 0;
    }
}

typedef it_run run_out;

/* Run eddy against the fake server with the fake key, stdin empty. */
static void eddy(run_out *o, const char *const *argv)
{
    const char *const env[] = {url_env, key_env, NULL};
    it_run_eddy(o, dir, home, NULL, env, argv);
}

#define EDDY(o, ...) eddy((o), (const char *const[]){"eddy", __VA_ARGS__, NULL})

static void expect(const run_out *o, int status, const char *what)
{
    ck_assert_msg(o->status == status, "%s: exit %d, wanted %d\nstdout: %s\nstderr: %s", what, o->status, status,
                  o->out, o->err);
}

/* How many recorded requests contain `s`. */
static int seen(const char *s)
{
    static char buf[262144];
    int n = 0;
    it_slurp(buf, sizeof(buf), log_path);
    for (const char *p = buf; (p = strstr(p, s)) != NULL; p++)
        n++;
    return n;
}

static void setup(void)
{
    snprintf(dir, sizeof(dir), "/tmp/eddy-it-clih-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(home, sizeof(home), "%s/home", dir);
    snprintf(work, sizeof(work), "%s/work", dir);
    snprintf(log_path, sizeof(log_path), "%s/requests.log", dir);
    mkdir(home, 0700);
    mkdir(work, 0700);
}

static void teardown(void)
{
    char cmd[128];
    fake_stop();
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    ck_assert_int_eq(system(cmd), 0);
}

static const char *const unsafe_lists[] = {
    "[{\"path\":\"ok.txt\"},{\"path\":\"../escape.txt\"}]",
    "[{\"path\":\"ok.txt\"},{\"path\":\"/tmp/eddy-cli-abs.txt\"}]",
    "[{\"path\":\"ok.txt\"},{\"path\":\"a/../../escape.txt\"}]",
    "[{\"path\":\"ok.txt\"},{\"path\":\"a//b\"}]",
    "[{\"path\":\"ok.txt\"},{\"path\":\"a\\\\..\\\\b\"}]",
    "[{\"path\":\"ok.txt\"},{\"path\":\"./ok2.txt\"}]",
    "[{\"path\":\"ok.txt\"},{\"path\":\"dir/\"}]",
    "[{\"path\":\"ok.txt\"},{\"path\":\"bad\\nname\"}]",
    "[{\"path\":\"ok.txt\"},{\"path\":\"\"}]",
    "[{\"path\":\"ok.txt\"},{\"path\":42}]",
};

START_TEST(pull_refuses_every_unsafe_path_before_writing_anything)
{
    char list[512], out[200], probe[300];
    run_out o;

    for (size_t i = 0; i < sizeof(unsafe_lists) / sizeof(unsafe_lists[0]); i++) {
        snprintf(list, sizeof(list), JSON_OK("200 OK", "{\"items\":%s,\"next_cursor\":null}"), unsafe_lists[i]);
        const route routes[] = {
            PROJECT_ROUTE,
            {"GET /api/v1/projects/pAAAAAAAAAAAA/files", list},
            {"GET /api/v1/projects/pAAAAAAAAAAAA/files/ok.txt",
             "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\nok"},
            {"GET /api/v1/jobs/7/artifacts", list},
            {NULL, NULL},
        };
        fake_start(routes);
        snprintf(out, sizeof(out), "%s/out%zu", work, i);
        EDDY(&o, "pull", "pAAAAAAAAAAAA", out);
        expect(&o, 1, unsafe_lists[i]);
        ck_assert_msg(strstr(o.err, "unsafe path") != NULL, "%s: %s", unsafe_lists[i], o.err);
        /* nothing at all was written, not even the safe file */
        snprintf(probe, sizeof(probe), "%s/ok.txt", out);
        ck_assert_int_ne(access(probe, F_OK), 0);
        ck_assert_int_eq(seen("GET /api/v1/projects/pAAAAAAAAAAAA/files/"), 0);
        snprintf(out, sizeof(out), "%s/arts%zu", work, i);
        EDDY(&o, "jobs", "artifacts", "7", "--download", out);
        expect(&o, 1, unsafe_lists[i]);
        ck_assert_ptr_nonnull(strstr(o.err, "unsafe artifact path"));
        fake_stop();
    }
    snprintf(probe, sizeof(probe), "%s/escape.txt", work);
    ck_assert_int_ne(access(probe, F_OK), 0);
    ck_assert_int_ne(access("/tmp/eddy-cli-abs.txt", F_OK), 0);
}
END_TEST

START_TEST(broken_servers_map_to_clear_messages_and_exit_codes)
{
    static const route routes[] = {
        {"GET /api/v1/me", "HTTP/1.1 502 Bad Gateway\r\nContent-Type: text/html\r\nConnection: close\r\n\r\n"
                           "<html>upstream gone</html>"},
        {"GET /api/v1/projects?limit=500", "HTTP/1.1 302 Found\r\nLocation: /steal\r\nConnection: close\r\n\r\n"},
        {"GET /api/v1/quota", "DROP"},
        {"GET /api/v1/tiers", "HTTP/1.1 429 Too Many Requests\r\nRetry-After: 7\r\nContent-Type: application/json\r\n"
                              "Connection: close\r\n\r\n{\"error\":{\"code\":\"rate_limited\",\"message\":\"slow "
                              "down\"}}"},
        {"POST /api/v1/jobs", "DROP"},
        PROJECT_ROUTE,
        {NULL, NULL},
    };
    run_out o;

    fake_start(routes);
    EDDY(&o, "whoami");
    expect(&o, 1, "a proxy's 502");
    ck_assert_ptr_nonnull(strstr(o.err, "HTTP 502"));
    ck_assert_ptr_nonnull(strstr(o.err, "upstream gone"));

    EDDY(&o, "projects", "list");
    expect(&o, 1, "a redirect");
    ck_assert_ptr_nonnull(strstr(o.err, "HTTP 302"));
    ck_assert_int_eq(seen("/steal"), 0);   /* not followed: the key stays here */
    ck_assert_int_ge(seen("Authorization: Bearer eddy_test_notarealkey_0000"), 1);

    EDDY(&o, "quota");
    expect(&o, 3, "a dropped connection");
    ck_assert_ptr_nonnull(strstr(o.err, "cannot reach"));
    ck_assert_int_eq(seen("GET /api/v1/quota"), 3);   /* a GET is retried twice */

    EDDY(&o, "tiers");
    expect(&o, 1, "rate limited");
    ck_assert_ptr_nonnull(strstr(o.err, "rate_limited: slow down (retry after 7 s)"));

    /* a job submission is retried with the same Idempotency-Key, never a new one */
    EDDY(&o, "jobs", "submit", "pAAAAAAAAAAAA", "train.py");
    expect(&o, 3, "submit over a dropped connection");
    ck_assert_int_eq(seen("POST /api/v1/jobs"), 3);
    {
        static char buf[262144];
        char first[128];
        const char *k;
        it_slurp(buf, sizeof(buf), log_path);
        k = strstr(buf, "Idempotency-Key: ");
        ck_assert_ptr_nonnull(k);
        snprintf(first, sizeof(first), "%.*s", (int)strcspn(k, "\r\n"), k);
        ck_assert_int_eq(seen(first), 3);
        ck_assert_int_eq(seen("Idempotency-Key: "), 3);
    }
    /* the key never shows up in what the client printed */
    ck_assert_ptr_null(strstr(o.err, "notarealkey"));
    ck_assert_ptr_null(strstr(o.out, "notarealkey"));
}
END_TEST

#define SSE_HEAD "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n"

/* The real server keeps a cell's event stream open until its reply; a proxy
 * or a restart may cut it earlier. `eddy kernels exec` then resumes after the
 * last seq it printed, so nothing is lost or shown twice. */
START_TEST(kernels_exec_resumes_a_dropped_event_stream)
{
    static const route routes[] = {
        {"POST /api/v1/kernels/k1/execute", JSON_OK("202 Accepted", "{\"msg_id\":\"m1\"}")},
        /* the first stream ends before the reply: the client reconnects after seq 3 */
        {"GET /api/v1/kernels/k1/events?after=0",
         SSE_HEAD
         "id: 1\ndata: {\"seq\":1,\"header\":{\"msg_type\":\"status\"},\"parent_header\":{\"msg_id\":\"m0\"},"
         "\"content\":{\"execution_state\":\"busy\"}}\n\n"
         "id: 2\ndata: {\"seq\":2,\"header\":{\"msg_type\":\"stream\"},\"parent_header\":{\"msg_id\":\"m1\"},"
         "\"content\":{\"name\":\"stdout\",\"text\":\"hello\\n\"}}\n\n"
         ": keep-alive\n\n"
         "id: 3\ndata: {\"seq\":3,\"header\":{\"msg_type\":\"execute_result\"},\"parent_header\":{\"msg_id\":\"m1\"},"
         "\"content\":{\"data\":{\"text/plain\":\"42\"}}}\n\n"},
        {"GET /api/v1/kernels/k1/events?after=3",
         SSE_HEAD
         "id: 4\ndata: {\"seq\":4,\"header\":{\"msg_type\":\"execute_reply\"},\"parent_header\":{\"msg_id\":\"m1\"},"
         "\"content\":{\"status\":\"ok\"}}\n\n"},
        {NULL, NULL},
    };
    run_out o;

    fake_start(routes);
    EDDY(&o, "kernels", "exec", "k1", "print('hello'); 42");
    expect(&o, 0, "kernels exec");
    ck_assert_str_eq(o.out, "hello\n42\n");
    ck_assert_int_eq(seen("{\"code\":\"print('hello'); 42\"}"), 1);
    ck_assert_int_eq(seen("GET /api/v1/kernels/k1/events?after=3"), 1);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("cli_hostile");
    TCase *tc = tcase_create("cli_hostile");
    SRunner *sr;
    int failed;

    signal(SIGPIPE, SIG_IGN);
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, pull_refuses_every_unsafe_path_before_writing_anything);
    tcase_add_test(tc, broken_servers_map_to_clear_messages_and_exit_codes);
    tcase_add_test(tc, kernels_exec_resumes_a_dropped_event_stream);
    suite_add_tcase(s, tc);
    sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? 0 : 1;
}
