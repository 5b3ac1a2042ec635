/* Terminals (issue 14) against the real server, sandbox and eddy-kernel: a
 * shell inside a kernel's sandbox over Jupyter Server's /api/terminals and
 * Eddy's /api/v1/kernels/{id}/terminals, with terminado's WebSocket
 * protocol. The shell computes (echo hi $((6*7)) -> hi 42), runs as the
 * kernel's uid, sees the project's files in /home/aistudio/work and not
 * the host's, follows set_size; another user gets 404 everywhere; DELETE
 * ends it (["disconnect", 1]); stopping the kernel ends its terminals;
 * without a running kernel POST /api/terminals is 409. Then Jupyter's own
 * client library, @jupyterlab/services (tests/integration/jupyter/
 * services_terminal.mjs), opens, uses, lists and shuts down a terminal as
 * JupyterLab does. Skips (77) where
 * kernels cannot run on their project's tree (not root, no idmapped
 * mounts). */
#include "harness.h"

#include <check.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static it_server srv;
static char dir[256], admin_cookie[600], admin_csrf[300];
static const char *const base_env[] = {"EDDY_STOP_GRACE_MS=1000", NULL};

static void boot(void)
{
    ck_assert_int_eq(it_admin_server_start(&srv, dir, sizeof(dir), "term", base_env, admin_cookie,
                                           sizeof(admin_cookie), admin_csrf, sizeof(admin_csrf)),
                     0);
}

static void shutdown_all(void)
{
    ck_assert_int_eq(it_server_stop(&srv), 0);
    ck_assert_int_eq(it_dir_remove(dir), 0);
}

/* A terminal's WebSocket and all the text it printed so far. */
typedef struct term {
    it_ws ws;
    char *out;
    size_t len;
    bool  disconnected;   /* ["disconnect", 1] came */
    bool  closed;
} term;

static void term_open(term *t, const it_user *u, const char *path)
{
    memset(t, 0, sizeof(*t));
    t->out = calloc(1, 1);
    ck_assert_int_eq(it_ws_open(&t->ws, &srv, NULL, path, u->hdrs, 1 << 20, 20000), 101);
}

static void term_free(term *t)
{
    it_ws_close(&t->ws);
    free(t->out);
}

/* Read frames for up to `ms`: stop early when the output holds `want`
 * (NULL: when the terminal disconnects or the socket closes). */
static bool term_read_until(term *t, const char *want, int ms)
{
    struct timespec t0, now;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        if (want && strstr(t->out, want))
            return true;
        if (!want && (t->disconnected || t->closed))
            return true;
        clock_gettime(CLOCK_MONOTONIC, &now);
        long left = ms - ((now.tv_sec - t0.tv_sec) * 1000 + (now.tv_nsec - t0.tv_nsec) / 1000000);
        if (left <= 0 || t->closed)
            break;
        int op;
        char *data;
        size_t n;
        int rc = it_ws_recv(&t->ws, &op, &data, &n, (int)left);
        if (rc < 0) {
            t->closed = true;
            continue;
        }
        if (rc == 0)
            continue;
        if (op == 1) {
            json_t *a = json_loadb(data, n, 0, NULL);
            const char *kind = json_string_value(json_array_get(a, 0));
            ck_assert_msg(kind != NULL, "not a terminado message: %s", data);
            if (strcmp(kind, "stdout") == 0) {
                const char *s = json_string_value(json_array_get(a, 1));
                t->out = realloc(t->out, t->len + strlen(s) + 1);
                memcpy(t->out + t->len, s, strlen(s) + 1);
                t->len += strlen(s);
                if (t->len > 256 * 1024) {   /* a flood: keep the end */
                    memmove(t->out, t->out + t->len - 64 * 1024, 64 * 1024 + 1);
                    t->len = 64 * 1024;
                }
            } else if (strcmp(kind, "disconnect") == 0) {
                t->disconnected = true;
            }
            json_decref(a);
        } else if (op == 8) {
            t->closed = true;
        }
        free(data);
    }
    if (want)
        fprintf(stderr, "the terminal never printed '%s'; it printed:\n%s\n", want, t->out);
    return false;
}

static void term_send(term *t, json_t *msg)
{
    char *s = json_dumps(msg, JSON_COMPACT);
    json_decref(msg);
    ck_assert_int_eq(it_ws_send(&t->ws, 0x81, s, strlen(s), 1), 0);
    free(s);
}

static void term_type(term *t, const char *line)
{
    term_send(t, json_pack("[s, s]", "stdin", line));
}

START_TEST(a_shell_in_the_kernels_sandbox)
{
    it_user alice, bob;
    char pid[64], kid[64], path[300], cmd[600], want[300];
    it_resp r;
    term t;

    boot();
    ck_assert_int_eq(it_user_make(&alice, &srv, admin_cookie, admin_csrf, "alice", 0), 0);
    ck_assert_int_eq(it_user_make(&bob, &srv, admin_cookie, admin_csrf, "bob", 0), 0);
    ck_assert_int_eq(it_project_make(pid, sizeof(pid), &srv, alice.hdrs, "term", "hello-from-project.txt", "hi\n"),
                     0);

    /* no kernel yet: Jupyter's POST says to start one */
    it_request(&r, &srv, "POST", "/api/terminals", NULL, alice.hdrs);
    ck_assert_int_eq(r.status, 409);
    ck_assert_msg(strstr(r.body, "start a kernel first") != NULL, "%s", r.body);
    it_resp_free(&r);

    it_ck_kernel_start(kid, sizeof(kid), &srv, alice.hdrs, pid);
    char *uid = it_ck_kernel_run(&srv, alice.hdrs, kid, pid, "import os\nout = os.getuid()\n");

    it_request(&r, &srv, "POST", "/api/terminals", NULL, alice.hdrs);
    ck_assert_msg(r.status == 200, "%ld %s", r.status, r.body);
    char name[40];
    snprintf(name, sizeof(name), "%s", it_json_str(r.json, "name"));
    ck_assert_str_eq(name, "1");
    ck_assert_str_eq(it_json_str(json_object_get(r.json, "eddy"), "kernel_id"), kid);
    it_resp_free(&r);

    snprintf(path, sizeof(path), "/terminals/websocket/%s", name);
    term_open(&t, &alice, path);
    term_type(&t, "echo hi $((6*7))\r");
    ck_assert(term_read_until(&t, "hi 42", 20000));
    /* the kernel's uid, the project's tree, not the host's files */
    snprintf(cmd, sizeof(cmd),
             "echo \"U\"\"ID=$(id -u)\"; ls /home/aistudio/work; "
             "test -e '%s' && echo HOST\"\"SEEN || echo HOST\"\"HIDDEN\r",
             srv.data_dir);
    term_type(&t, cmd);
    snprintf(want, sizeof(want), "UID=%s", uid);
    ck_assert(term_read_until(&t, want, 20000));
    ck_assert(term_read_until(&t, "hello-from-project.txt", 20000));
    ck_assert(term_read_until(&t, "HOSTHIDDEN", 20000));
    ck_assert_ptr_null(strstr(t.out, "HOSTSEEN"));
    /* the size follows the page */
    term_send(&t, json_pack("[s, i, i, i, i]", "set_size", 40, 120, 600, 900));
    term_type(&t, "stty size\r");
    ck_assert(term_read_until(&t, "40 120", 20000));
    free(uid);

    /* a flood of output (8 MB, paced by the kernel) while nobody reads it:
     * the kernel still runs cells, and a new connection sees the end */
    term_type(&t, "head -c 8000000 /dev/zero | tr '\\0' x; echo; echo flood-done-$((1+1))\r");
    char *v = it_ck_kernel_run(&srv, alice.hdrs, kid, pid, "out = 6 * 7\n");
    ck_assert_str_eq(v, "42");
    free(v);
    term_free(&t);   /* it read nothing: the server may have let it go */
    /* a page reconnects until it sees the end (a loaded host may let a
     * reader go again while the flood lasts: it reconnects, as the web
     * app does) */
    bool seen = false;
    for (int i = 0; i < 10 && !seen; i++) {
        term_open(&t, &alice, path);
        seen = term_read_until(&t, "flood-done-2", 30000);
        if (!seen)
            term_free(&t);
    }
    ck_assert(seen);

    /* listed in both APIs */
    json_t *list = it_get_json(&srv, alice.hdrs, "/api/terminals");
    ck_assert_ptr_nonnull(list);
    ck_assert_int_eq(json_array_size(list), 1);
    ck_assert_str_eq(it_json_str(json_array_get(list, 0), "name"), name);
    json_decref(list);
    snprintf(path, sizeof(path), "/api/v1/kernels/%s/terminals", kid);
    list = it_get_json(&srv, alice.hdrs, path);
    ck_assert_ptr_nonnull(list);
    ck_assert_int_eq(json_array_size(json_object_get(list, "items")), 1);
    json_decref(list);

    /* another user reaches none of it */
    snprintf(path, sizeof(path), "/api/terminals/%s", name);
    ck_assert_int_eq(it_request_status(&srv, "GET", path, NULL, bob.hdrs), 404);
    ck_assert_int_eq(it_request_status(&srv, "DELETE", path, NULL, bob.hdrs), 404);
    snprintf(path, sizeof(path), "/api/v1/kernels/%s/terminals", kid);
    ck_assert_int_eq(it_request_status(&srv, "GET", path, NULL, bob.hdrs), 404);
    ck_assert_int_eq(it_request_status(&srv, "POST", path, "{}", bob.hdrs), 404);
    list = it_get_json(&srv, bob.hdrs, "/api/terminals");
    ck_assert_int_eq(json_array_size(list), 0);
    json_decref(list);
    it_ws bws;
    snprintf(path, sizeof(path), "/terminals/websocket/%s", name);
    ck_assert_int_eq(it_ws_open(&bws, &srv, NULL, path, bob.hdrs, 1 << 16, 20000), 404);
    it_ws_close(&bws);

    /* a reconnecting page gets the screen back (the ring's last 64 KiB) */
    term again;
    term_open(&again, &alice, path);
    ck_assert(term_read_until(&again, "flood-done-2", 20000));
    term_free(&again);

    /* DELETE ends the shell: the page is told */
    snprintf(path, sizeof(path), "/api/terminals/%s", name);
    ck_assert_int_eq(it_request_status(&srv, "DELETE", path, NULL, alice.hdrs), 204);
    ck_assert(term_read_until(&t, NULL, 20000));
    ck_assert(t.disconnected);
    ck_assert_int_eq(it_request_status(&srv, "GET", path, NULL, alice.hdrs), 404);
    term_free(&t);

    /* Eddy's API, then the kernel stops: its terminals end with it */
    snprintf(path, sizeof(path), "/api/v1/kernels/%s/terminals", kid);
    it_request(&r, &srv, "POST", path, "{\"name\": \"work\", \"rows\": 30, \"cols\": 100}", alice.hdrs);
    ck_assert_msg(r.status == 201, "%ld %s", r.status, r.body);
    ck_assert_str_eq(it_json_str(r.json, "name"), "work");
    snprintf(path, sizeof(path), "%s", it_json_str(r.json, "ws_url"));
    it_resp_free(&r);
    term_open(&t, &alice, path);
    term_type(&t, "sleep 1000 & stty size\r");
    ck_assert(term_read_until(&t, "30 100", 20000));
    snprintf(path, sizeof(path), "/api/v1/kernels/%s", kid);
    ck_assert_int_eq(it_request_status(&srv, "DELETE", path, NULL, alice.hdrs), 200);
    ck_assert(term_read_until(&t, NULL, 30000));
    ck_assert(t.disconnected);
    list = it_get_json(&srv, alice.hdrs, "/api/terminals");
    ck_assert_int_eq(json_array_size(list), 0);
    json_decref(list);
    term_free(&t);
    shutdown_all();
}
END_TEST

/* Run argv in `cwd` with `env` added, stdout and stderr into `out`, for at
 * most `timeout_s`: the exit status (-1 killed). */
static int run(char *out, size_t outlen, const char *cwd, char *const argv[], char *const env[], int timeout_s)
{
    int p[2], status = 0;
    size_t n = 0;
    pid_t pid;
    struct timespec t0, now;

    ck_assert_int_eq(pipe(p), 0);
    if ((pid = fork()) == 0) {
        dup2(p[1], 1);
        dup2(p[1], 2);
        close(p[0]);
        if (chdir(cwd) != 0)
            _exit(126);
        for (int i = 0; env && env[i]; i++)
            putenv(env[i]);
        execvp(argv[0], argv);
        _exit(127);
    }
    close(p[1]);
    out[0] = '\0';
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        struct pollfd pf = {.fd = p[0], .events = POLLIN};
        clock_gettime(CLOCK_MONOTONIC, &now);
        long left = timeout_s * 1000L - ((now.tv_sec - t0.tv_sec) * 1000 + (now.tv_nsec - t0.tv_nsec) / 1000000);
        if (left <= 0) {
            kill(pid, SIGKILL);
            break;
        }
        if (poll(&pf, 1, (int)left) <= 0)
            continue;
        char sink[4096];
        ssize_t got = n + 1 < outlen ? read(p[0], out + n, outlen - n - 1) : read(p[0], sink, sizeof(sink));
        if (got <= 0)
            break;
        if (n + 1 < outlen) {
            n += (size_t)got;
            out[n] = '\0';
        }
    }
    close(p[0]);
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

START_TEST(jupyterlab_services_opens_a_terminal)
{
    char client_dir[PATH_MAX], path[PATH_MAX + 64], out[16384], e1[300], e2[300], *slash;
    char *npm[] = {"npm", "ci", "--no-audit", "--no-fund", NULL};
    char *node[] = {"node", "services_terminal.mjs", NULL};
    char *env[] = {e1, e2, NULL};
    struct stat st;
    it_user carol;
    it_key key;
    char pid[64];

    snprintf(client_dir, sizeof(client_dir), "%s", __FILE__);   /* this folder + /jupyter */
    slash = strrchr(client_dir, '/');
    ck_assert_ptr_nonnull(slash);
    snprintf(slash, sizeof(client_dir) - (size_t)(slash - client_dir), "/jupyter");
    snprintf(path, sizeof(path), "%s/node_modules/@jupyterlab/services/package.json", client_dir);
    if (stat(path, &st) != 0)
        ck_assert_msg(run(out, sizeof(out), client_dir, npm, NULL, 300) == 0, "npm ci failed:\n%s", out);
    boot();
    ck_assert_int_eq(it_user_make(&carol, &srv, admin_cookie, admin_csrf, "carol", 0), 0);
    /* Jupyter's kernels start in the caller's default project */
    ck_assert_int_eq(it_project_make(pid, sizeof(pid), &srv, carol.hdrs, "default", NULL, NULL), 0);
    ck_assert_int_eq(it_key_make(&key, &srv, carol.hdrs,
                                 "{\"name\":\"lab\",\"env\":\"prod\",\"scopes\":[\"read\",\"write\",\"run\"]}"),
                     0);
    snprintf(e1, sizeof(e1), "JUP_BASE_URL=%s", srv.base_url);
    snprintf(e2, sizeof(e2), "JUP_TOKEN=%s", key.auth + strlen("Authorization: Bearer "));
    int rc = run(out, sizeof(out), client_dir, node, env, 150);
    ck_assert_msg(rc == 0, "the JupyterLab client exited %d:\n%s", rc, out);
    ck_assert_msg(strstr(out, "\"ok\":true") && strstr(out, "\"size\":true") && strstr(out, "\"left\":0"), "%s", out);
    shutdown_all();
}
END_TEST

int main(void)
{
    const TTest *tests[] = {a_shell_in_the_kernels_sandbox, jupyterlab_services_opens_a_terminal, NULL};
    char why[600];

    if (!it_host_idmap(why, sizeof(why))) {
        printf("SKIP: kernels cannot run on their project's tree here: %s\n", why);
        return 77;
    }
    return it_tests_run("terminals", 240, NULL, NULL, tests);
}
