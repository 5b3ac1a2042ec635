/* Acceptance: Jupyter's own clients drive kernels on Eddy.
 *
 * 1. @jupyterlab/services (npm, tests/integration/jupyter/, installed with
 *    `npm ci` from the committed lockfile when node_modules is missing)
 *    starts a kernel on `eddy serve`, executes print(6*7) over the channels
 *    WebSocket and receives 42.
 * 2. Debian's jupyter-server 1.23 started with --gateway-url pointing at Eddy
 *    (and --GatewayClient.auth_token=<an Eddy API key>): the same client
 *    script talks to the local jupyter-server, which starts the kernel on Eddy
 *    and relays its channels; Eddy's /api/kernels/{id} knows the kernel.
 *
 * Needs node/npm (deploy installs them) and python3-jupyter-server. */
#include "harness.h"

#include <arpa/inet.h>
#include <check.h>
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static it_server S;
static char key[128], auth_hdr[200];
static const char *hdrs[2];
static char client_dir[PATH_MAX];

static void setup(void)
{
    char *cookie = NULL, *csrf = NULL, ch[600], xh[300];
    const char *h[3];
    it_resp r;
    char *slash;

    /* This file's folder + /jupyter holds the node client. */
    snprintf(client_dir, sizeof(client_dir), "%s", __FILE__);
    slash = strrchr(client_dir, '/');
    ck_assert_ptr_nonnull(slash);
    snprintf(slash, sizeof(client_dir) - (size_t)(slash - client_dir), "/jupyter");

    ck_assert_int_eq(it_server_start(&S, NULL), 0);
    ck_assert_int_eq(it_signup_login(&S, "carol", "correct horse 1", &cookie, &csrf), 0);
    snprintf(ch, sizeof(ch), "Cookie: %s", cookie);
    snprintf(xh, sizeof(xh), "X-CSRF-Token: %s", csrf);
    h[0] = ch;
    h[1] = xh;
    h[2] = NULL;
    ck_assert_int_eq(it_request(&r, &S, "POST", "/api/v1/keys",
                                "{\"name\":\"jupyter\",\"env\":\"prod\",\"scopes\":[\"read\",\"write\",\"run\"]}",
                                h), 0);
    ck_assert_int_eq(r.status, 201);
    snprintf(key, sizeof(key), "%s", json_string_value(json_object_get(r.json, "key")));
    it_resp_free(&r);
    free(cookie);
    free(csrf);
    snprintf(auth_hdr, sizeof(auth_hdr), "Authorization: token %s", key);
    hdrs[0] = auth_hdr;
    hdrs[1] = NULL;
}

static void teardown(void)
{
    ck_assert_int_eq(it_server_stop(&S), 0);
}

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Run argv in `dir` with extra env entries; stdout+stderr into out. Exit code, or -1. */
static int run(char *out, size_t outlen, const char *dir, char *const argv[], char *const env[],
               int timeout_s)
{
    int p[2];
    pid_t pid;
    size_t n = 0;
    int status = 0;
    int64_t deadline = now_ms() + (int64_t)timeout_s * 1000;

    ck_assert_int_eq(pipe(p), 0);
    if ((pid = fork()) == 0) {
        dup2(p[1], 1);
        dup2(p[1], 2);
        close(p[0]);
        if (dir && chdir(dir) != 0)
            _exit(126);
        for (int i = 0; env && env[i]; i++)
            putenv(env[i]);
        execvp(argv[0], argv);
        _exit(127);
    }
    close(p[1]);
    out[0] = 0;
    for (;;) {
        struct pollfd pf = {.fd = p[0], .events = POLLIN};
        int64_t left = deadline - now_ms();
        ssize_t got;
        if (left <= 0) {
            kill(pid, SIGKILL);
            break;
        }
        if (poll(&pf, 1, (int)left) <= 0)
            continue;
        if (n + 1 >= outlen) {
            char sink[4096];
            got = read(p[0], sink, sizeof(sink));
        } else {
            got = read(p[0], out + n, outlen - n - 1);
            if (got > 0)
                n += (size_t)got;
        }
        if (got <= 0)
            break;
        out[n] = 0;
    }
    close(p[0]);
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static void ensure_node_modules(void)
{
    char path[PATH_MAX + 64], out[8192];
    char *argv[] = {"npm", "ci", "--no-audit", "--no-fund", NULL};
    struct stat st;

    snprintf(path, sizeof(path), "%s/node_modules/@jupyterlab/services/package.json", client_dir);
    if (stat(path, &st) == 0)
        return;
    ck_assert_msg(run(out, sizeof(out), client_dir, argv, NULL, 300) == 0, "npm ci failed:\n%s", out);
}

/* Run the services client against base_url; returns the kernel id it used
 * and the WebSocket subprotocol the client settled on ("" for JSON framing). */
static void run_client(char kernel_id[64], char protocol[64], const char *base_url, const char *token)
{
    char out[16384], e1[300], e2[300];
    char *argv[] = {"node", "services_exec.mjs", NULL};
    char *env[] = {e1, e2, NULL};
    const char *k;
    int rc;

    snprintf(e1, sizeof(e1), "JUP_BASE_URL=%s", base_url);
    snprintf(e2, sizeof(e2), "JUP_TOKEN=%s", token);
    rc = run(out, sizeof(out), client_dir, argv, env, 150);
    ck_assert_msg(rc == 0, "client exited %d:\n%s", rc, out);
    ck_assert_msg(strstr(out, "\"stdout\":\"42\\n\"") != NULL, "no 42 in:\n%s", out);
    k = strstr(out, "\"kernel_id\":\"");
    ck_assert_ptr_nonnull(k);
    sscanf(k + 13, "%63[^\"]", kernel_id);
    protocol[0] = '\0';
    if ((k = strstr(out, "\"protocol\":\"")) != NULL)
        sscanf(k + 12, "%63[^\"]", protocol);
}

START_TEST(jupyterlab_services_runs_print_6x7_on_eddy)
{
    char kid[64], path[128], proto[64];
    it_resp r;

    ensure_node_modules();
    run_client(kid, proto, S.base_url, key);
    /* Eddy offers the binary protocol and Jupyter's client takes it. */
    ck_assert_str_eq(proto, "v1.kernel.websocket.jupyter.org");
    snprintf(path, sizeof(path), "/api/kernels/%s", kid);
    ck_assert_int_eq(it_request(&r, &S, "GET", path, NULL, hdrs), 0);
    ck_assert_msg(r.status == 200, "%ld %s", r.status, r.body);
    it_resp_free(&r);
}
END_TEST

static int free_port(void)
{
    struct sockaddr_in a = {.sin_family = AF_INET};
    socklen_t al = sizeof(a);
    int fd = socket(AF_INET, SOCK_STREAM, 0), port;

    inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
    ck_assert_int_eq(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&a, &al), 0);
    port = ntohs(a.sin_port);
    close(fd);
    return port;
}

static size_t discard(char *p, size_t s, size_t n, void *u)
{
    (void)p;
    (void)u;
    return s * n;
}

static long http_status(const char *url)
{
    CURL *c = curl_easy_init();
    long st = 0;

    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 5L);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, discard);
    if (curl_easy_perform(c) == CURLE_OK)
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &st);
    curl_easy_cleanup(c);
    return st;
}

START_TEST(jupyter_server_with_gateway_url_runs_its_kernels_on_eddy)
{
    char tmp[] = "/tmp/eddy-jupgw-XXXXXX", gw[128], tokarg[200], portarg[32], rootarg[300],
         base[64], url[256], kid[64], path[128], logpath[400], proto[64];
    const char *token = "local-jupyter-token";
    int port = free_port(), status = 0;
    pid_t pid;
    it_resp r;
    bool up = false;

    ensure_node_modules();
    ck_assert_ptr_nonnull(mkdtemp(tmp));
    snprintf(gw, sizeof(gw), "--gateway-url=%s", S.base_url);
    snprintf(tokarg, sizeof(tokarg), "--GatewayClient.auth_token=%s", key);
    snprintf(portarg, sizeof(portarg), "--port=%d", port);
    snprintf(rootarg, sizeof(rootarg), "--ServerApp.root_dir=%s", tmp);
    snprintf(logpath, sizeof(logpath), "%s/jupyter.log", tmp);
    if ((pid = fork()) == 0) {
        char home[300], st[300];
        int fd = open(logpath, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        char *argv[] = {"/usr/bin/python3", "-m", "jupyter_server", gw, tokarg, portarg, rootarg,
                        "--ServerApp.token=local-jupyter-token", "--ServerApp.ip=127.0.0.1",
                        "--ServerApp.open_browser=False", "--allow-root",
                        "--ServerApp.port_retries=0", NULL};
        dup2(fd, 1);
        dup2(fd, 2);
        snprintf(home, sizeof(home), "HOME=%s", tmp);
        putenv(home);
        snprintf(st, sizeof(st), "JUPYTER_RUNTIME_DIR=%s/rt", tmp);
        putenv(st);
        execv(argv[0], argv);
        _exit(127);
    }
    snprintf(base, sizeof(base), "http://127.0.0.1:%d", port);
    snprintf(url, sizeof(url), "%s/api/kernelspecs?token=%s", base, token);
    for (int64_t deadline = now_ms() + 60000; now_ms() < deadline && !up;) {
        /* kernelspecs come from Eddy through the gateway: 200 means both are up. */
        up = http_status(url) == 200;
        if (!up)
            usleep(250000);
    }
    if (up)
        run_client(kid, proto, base, token);
    kill(pid, SIGTERM);
    waitpid(pid, &status, 0);
    if (!up) {
        char log[8192] = "", *argv[] = {"tail", "-n", "40", logpath, NULL};
        run(log, sizeof(log), NULL, argv, NULL, 10);
        ck_abort_msg("jupyter-server did not come up against Eddy:\n%s", log);
    }
    /* The kernel jupyter-server used is Eddy's. */
    snprintf(path, sizeof(path), "/api/kernels/%s", kid);
    ck_assert_int_eq(it_request(&r, &S, "GET", path, NULL, hdrs), 0);
    ck_assert_msg(r.status == 200, "%ld %s", r.status, r.body);
    it_resp_free(&r);
    {
        char *argv[] = {"rm", "-rf", tmp, NULL}, out[256];
        run(out, sizeof(out), NULL, argv, NULL, 30);
    }
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("jupyter_clients");
    TCase *c = tcase_create("clients");

    tcase_add_unchecked_fixture(c, setup, teardown);
    tcase_set_timeout(c, 400);
    tcase_add_test(c, jupyterlab_services_runs_print_6x7_on_eddy);
    tcase_add_test(c, jupyter_server_with_gateway_url_runs_its_kernels_on_eddy);
    suite_add_tcase(s, c);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(suite());
    int failed;

    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
