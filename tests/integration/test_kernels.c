/* Interactive kernels over HTTP against the real server, scheduler, sandbox
 * and eddy-kernel: /api/v1/kernels start, execute and the events stream
 * (Server-Sent Events with sequence numbers, replayed from the journal);
 * interrupt, restart, tracebacks, a matplotlib PNG, the journal with no
 * client attached folded into the notebook, idle culling, maximum session,
 * kernels dying with the server, and another user's kernel answering 404. */
#include "harness.h"

#include <check.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static it_server srv;

typedef it_user user;

static void boot(const char *const *env)
{
    ck_assert_int_eq(it_server_start(&srv, env), 0);
}

static void make_user(user *u, const char *name)
{
    ck_assert_int_eq(it_user_make(u, &srv, NULL, NULL, name, 0), 0);
}

static void make_project(char *pid, size_t n, user *u)
{
    ck_assert_int_eq(it_project_make(pid, n, &srv, u->hdrs, "nb", NULL, NULL), 0);
}

static json_t *get_json(user *u, const char *path)
{
    json_t *j = it_get_json(&srv, u->hdrs, path);
    ck_assert_msg(j != NULL, "GET %s: not 200 with JSON", path);
    return j;
}

static const char *jstr(const json_t *o, const char *k)
{
    return json_string_value(json_object_get(o, k));
}

static json_t *wait_status(user *u, const char *kid, const char *status)
{
    json_t *k = it_kernel_wait(&srv, u->hdrs, kid, status, 60);
    ck_assert_msg(k != NULL, "kernel %s never became %s", kid, status);
    return k;
}

/* Start a kernel and wait until it is idle (Python ready). */
static void start_kernel(char *kid, size_t n, user *u, const char *pid)
{
    char body[256];
    it_resp r;

    snprintf(body, sizeof(body), "{\"project_id\":\"%s\",\"resource\":\"cpu-basic\"}", pid);
    it_request(&r, &srv, "POST", "/api/v1/kernels", body, u->hdrs);
    ck_assert_msg(r.status == 201, "start: %ld %s", r.status, r.body);
    snprintf(kid, n, "%s", jstr(r.json, "id"));
    ck_assert_int_eq(strlen(kid), 36);   /* a UUID, as Jupyter clients expect */
    ck_assert_ptr_nonnull(json_object_get(r.json, "queue_position"));
    ck_assert_ptr_nonnull(json_object_get(r.json, "eta_s"));
    it_resp_free(&r);
    json_decref(wait_status(u, kid, "idle"));
}

static void execute(char *msg_id, size_t n, user *u, const char *kid, const char *code, const char *extra)
{
    ck_assert_int_eq(it_kernel_execute(msg_id, n, &srv, u->hdrs, kid, code, extra), 0);
}

/* Read /events?after=AFTER until `parent` got as far as `stop` (IT_EV_*)
 * says, or with `parent` NULL the end of the stream; returns the messages.
 * Fails after 60 s, or when the event ids are not each message's seq. */
static json_t *sse_collect_to(user *u, const char *kid, long long after, const char *parent, int stop, bool *ended)
{
    int end = 0;
    json_t *msgs = it_kernel_events(&srv, u->hdrs, kid, after, parent, stop, 60, &end);

    ck_assert_msg(msgs != NULL, "events of %s: not 200, ended early or ids not the seq", kid);
    if (ended)
        *ended = end;
    return msgs;
}

static json_t *sse_collect(user *u, const char *kid, long long after, const char *parent, bool stop_at_reply,
                           bool *ended)
{
    return sse_collect_to(u, kid, after, parent, stop_at_reply ? IT_EV_REPLY : IT_EV_IDLE, ended);
}

/* Run `code` in the kernel (its msg_id into `mid`) and read the events up to
 * its idle status. */
static json_t *cell(char *mid, size_t n, user *u, const char *kid, const char *code)
{
    execute(mid, n, u, kid, code, NULL);
    return sse_collect(u, kid, 0, mid, false, NULL);
}

/* A fresh server with `env`, alice, a project of hers (its id into `pid`,
 * 64 bytes) and a kernel in it (`kid`, 64 bytes), idle. */
static void boot_alice(const char *const *env, user *u, char *pid, char *kid)
{
    boot(env);
    make_user(u, "alice");
    make_project(pid, 64, u);
    start_kernel(kid, 64, u, pid);
}

/* The messages of one request, in order, as "type" or "type:detail". */
static void trace(char *out, size_t n, json_t *msgs, const char *parent)
{
    size_t i;
    json_t *m;
    out[0] = '\0';
    json_array_foreach(msgs, i, m) {
        if (strcmp(it_msg_parent(m), parent) != 0)
            continue;
        const char *t = it_msg_type(m);
        const json_t *c = json_object_get(m, "content");
        char item[128];
        if (strcmp(t, "status") == 0)
            snprintf(item, sizeof(item), "status:%s", jstr(c, "execution_state"));
        else if (strcmp(t, "stream") == 0)
            snprintf(item, sizeof(item), "stream:%s", jstr(c, "name"));
        else if (strcmp(t, "execute_reply") == 0)
            snprintf(item, sizeof(item), "execute_reply:%s", jstr(c, "status"));
        else
            snprintf(item, sizeof(item), "%s", t);
        snprintf(out + strlen(out), n - strlen(out), "%s%s", out[0] ? " " : "", item);
    }
}

static json_t *find_type(json_t *msgs, const char *parent, const char *type)
{
    size_t i;
    json_t *m;
    json_array_foreach(msgs, i, m)
        if (strcmp(it_msg_parent(m), parent) == 0 && strcmp(it_msg_type(m), type) == 0)
            return m;
    return NULL;
}

static void post_ok(user *u, const char *kid, const char *what, long want)
{
    char path[160];
    it_resp r;
    snprintf(path, sizeof(path), "/api/v1/kernels/%s%s%s", kid, what[0] ? "/" : "", what);
    it_request(&r, &srv, what[0] ? "POST" : "DELETE", path, NULL, u->hdrs);
    ck_assert_msg(r.status == want, "%s: %ld %s", path, r.status, r.body);
    it_resp_free(&r);
}

/* ---- tests ------------------------------------------------------------------------- */

START_TEST(execute_streams_busy_input_outputs_reply_idle_in_order)
{
    user u;
    char pid[64], kid[64], mid[64], tr[1024];
    bool ended;

    boot_alice(NULL, &u, pid, kid);
    execute(mid, sizeof(mid), &u, kid, "print('hello')\n6*7", NULL);
    json_t *msgs = sse_collect(&u, kid, 0, mid, false, &ended);
    trace(tr, sizeof(tr), msgs, mid);
    ck_assert_str_eq(tr, "status:busy execute_input stream:stdout execute_result execute_reply:ok status:idle");
    ck_assert_str_eq(jstr(json_object_get(find_type(msgs, mid, "stream"), "content"), "text"), "hello\n");
    ck_assert_str_eq(jstr(json_object_get(json_object_get(find_type(msgs, mid, "execute_result"), "content"), "data"),
                          "text/plain"),
                     "42");
    ck_assert_str_eq(jstr(find_type(msgs, mid, "stream"), "channel"), "iopub");
    ck_assert_str_eq(jstr(find_type(msgs, mid, "execute_reply"), "channel"), "shell");
    /* a reconnect after the execute_input's seq gets only what follows */
    long long seq_input = json_integer_value(json_object_get(find_type(msgs, mid, "execute_input"), "seq"));
    json_t *again = sse_collect(&u, kid, seq_input, mid, false, NULL);
    trace(tr, sizeof(tr), again, mid);
    ck_assert_str_eq(tr, "stream:stdout execute_result execute_reply:ok status:idle");
    json_decref(again);
    json_decref(msgs);
    post_ok(&u, kid, "", 200);
    json_t *k = wait_status(&u, kid, "dead");
    ck_assert_str_eq(jstr(k, "stop_reason"), "shutdown");
    json_decref(k);
    ck_assert_int_eq(it_server_stop(&srv), 0);
}
END_TEST

START_TEST(traceback_of_a_raising_cell_and_a_matplotlib_png)
{
    user u;
    char pid[64], kid[64], mid[64];

    boot_alice(NULL, &u, pid, kid);
    json_t *msgs = cell(mid, sizeof(mid), &u, kid, "def f():\n    return 1/0\nf()");
    json_t *err = find_type(msgs, mid, "error");
    ck_assert_ptr_nonnull(err);
    const json_t *c = json_object_get(err, "content");
    ck_assert_str_eq(jstr(c, "ename"), "ZeroDivisionError");
    ck_assert_int_gt(json_array_size(json_object_get(c, "traceback")), 1);
    ck_assert_str_eq(jstr(json_object_get(find_type(msgs, mid, "execute_reply"), "content"), "status"), "error");
    json_decref(msgs);

    msgs = cell(mid, sizeof(mid), &u, kid,
                "import matplotlib.pyplot as plt\nplt.plot([1, 2, 3], [1, 4, 9])\nplt.show()");
    json_t *dd = find_type(msgs, mid, "display_data");
    ck_assert_msg(dd != NULL, "no display_data");
    const char *png = jstr(json_object_get(json_object_get(dd, "content"), "data"), "image/png");
    ck_assert_ptr_nonnull(png);
    ck_assert_msg(strncmp(png, "iVBORw0KGgo", 11) == 0, "not a PNG: %.16s", png);
    json_decref(msgs);
    ck_assert_int_eq(it_server_stop(&srv), 0);
}
END_TEST

START_TEST(interrupt_stops_a_busy_loop_and_the_kernel_survives)
{
    user u;
    char pid[64], kid[64], mid[64], mid2[64];

    boot_alice(NULL, &u, pid, kid);
    execute(mid, sizeof(mid), &u, kid, "x = 5\nprint('started', flush=True)\nwhile True:\n    pass", NULL);
    /* interrupt once the cell's own code runs: "busy" comes before that */
    json_decref(sse_collect_to(&u, kid, 0, mid, IT_EV_STREAM, NULL));
    post_ok(&u, kid, "interrupt", 200);
    json_t *msgs = sse_collect(&u, kid, 0, mid, false, NULL);
    json_t *err = find_type(msgs, mid, "error");
    ck_assert_ptr_nonnull(err);
    ck_assert_str_eq(jstr(json_object_get(err, "content"), "ename"), "KeyboardInterrupt");
    json_decref(msgs);
    msgs = cell(mid2, sizeof(mid2), &u, kid, "x + 1");
    ck_assert_str_eq(
        jstr(json_object_get(json_object_get(find_type(msgs, mid2, "execute_result"), "content"), "data"), "text/plain"),
        "6");
    json_decref(msgs);
    ck_assert_int_eq(it_server_stop(&srv), 0);
}
END_TEST

START_TEST(restart_keeps_the_id_and_clears_the_namespace)
{
    user u;
    char pid[64], kid[64], mid[64], path[128];

    boot_alice(NULL, &u, pid, kid);
    json_decref(cell(mid, sizeof(mid), &u, kid, "secret = 41"));
    post_ok(&u, kid, "restart", 200);
    json_decref(wait_status(&u, kid, "idle"));
    snprintf(path, sizeof(path), "/api/v1/kernels/%s", kid);
    json_t *k = get_json(&u, path);
    ck_assert_str_eq(jstr(k, "id"), kid);
    json_decref(k);
    json_t *msgs = cell(mid, sizeof(mid), &u, kid, "secret + 1");
    json_t *err = find_type(msgs, mid, "error");
    ck_assert_ptr_nonnull(err);
    ck_assert_str_eq(jstr(json_object_get(err, "content"), "ename"), "NameError");
    json_decref(msgs);
    /* the tier allows one kernel: the restarted one is still that one */
    it_resp r;
    char body[160];
    snprintf(body, sizeof(body), "{\"project_id\":\"%s\",\"resource\":\"cpu-basic\"}", pid);
    it_request(&r, &srv, "POST", "/api/v1/kernels", body, u.hdrs);
    ck_assert_int_eq(r.status, 429);
    it_resp_free(&r);
    ck_assert_int_eq(it_server_stop(&srv), 0);
}
END_TEST

static const char NOTEBOOK[] =
    "{\"nbformat\": 4, \"nbformat_minor\": 5, \"metadata\": {}, \"cells\": ["
    "{\"id\": \"intro\", \"cell_type\": \"markdown\", \"metadata\": {}, \"source\": \"# lines\"},"
    "{\"id\": \"c1\", \"cell_type\": \"code\", \"metadata\": {}, \"execution_count\": null, \"outputs\": [],"
    " \"source\": \"for i in range(15): ...\"}]}";

START_TEST(journal_keeps_every_line_with_no_client_and_folds_into_the_notebook)
{
    user u;
    char pid[64], kid[64], mid[64], path[160], want[32];
    it_resp r;
    bool folded = false;

    boot(NULL);
    make_user(&u, "alice");
    make_project(pid, sizeof(pid), &u);
    snprintf(path, sizeof(path), "/api/v1/projects/%s/files/work/lines.ipynb", pid);
    it_request(&r, &srv, "PUT", path, NOTEBOOK, u.hdrs);
    ck_assert_msg(r.status < 300, "%ld %s", r.status, r.body);
    it_resp_free(&r);
    start_kernel(kid, sizeof(kid), &u, pid);
    /* no client attached while it runs */
    execute(mid, sizeof(mid), &u, kid,
            "import time\nfor i in range(15):\n    print(f'line {i}', flush=True)\n    time.sleep(0.2)\n'done'",
            "{\"cell_id\": \"c1\", \"notebook_path\": \"work/lines.ipynb\"}");
    /* the working-tree notebook gets the whole cell, with nobody connected */
    for (int i = 0; i < 300 && !folded; i++) {
        it_request(&r, &srv, "GET", path, NULL, u.hdrs);
        ck_assert_int_eq(r.status, 200);
        json_t *nb = json_loadb(r.body, r.body_len, 0, NULL);
        json_t *cell = json_array_get(json_object_get(nb, "cells"), 1);
        if (json_is_integer(json_object_get(cell, "execution_count")) &&
            json_array_size(json_object_get(cell, "outputs")) == 2) {
            json_t *o0 = json_array_get(json_object_get(cell, "outputs"), 0);
            json_t *o1 = json_array_get(json_object_get(cell, "outputs"), 1);
            ck_assert_str_eq(jstr(o0, "output_type"), "stream");
            for (int l = 0; l < 15; l++) {
                snprintf(want, sizeof(want), "line %d\n", l);
                ck_assert_msg(strstr(jstr(o0, "text"), want), "notebook lacks %s", want);
            }
            ck_assert_str_eq(jstr(o1, "output_type"), "execute_result");
            ck_assert_str_eq(jstr(json_object_get(o1, "data"), "text/plain"), "'done'");
            ck_assert_int_gt(json_integer_value(json_object_get(cell, "execution_count")), 0);
            /* the other cell is untouched */
            ck_assert_str_eq(jstr(json_array_get(json_object_get(nb, "cells"), 0), "source"), "# lines");
            folded = true;
        }
        json_decref(nb);
        it_resp_free(&r);
        if (!folded)
            usleep(100000);
    }
    ck_assert_msg(folded, "the notebook never got the cell's outputs");
    /* a client that connects afterwards gets every line from the journal */
    json_t *msgs = sse_collect(&u, kid, 0, mid, false, NULL);
    size_t i;
    json_t *m;
    int next = 0;
    json_array_foreach(msgs, i, m) {
        if (strcmp(it_msg_parent(m), mid) == 0 && strcmp(it_msg_type(m), "stream") == 0) {
            const char *text = jstr(json_object_get(m, "content"), "text");
            for (const char *p = text; (p = strstr(p, "line ")) != NULL; p += 5) {
                ck_assert_int_eq(atoi(p + 5), next);
                next++;
            }
        }
    }
    ck_assert_int_eq(next, 15);
    json_decref(msgs);
    ck_assert_int_eq(it_server_stop(&srv), 0);
}
END_TEST

START_TEST(a_burst_larger_than_memory_is_replayed_in_order_from_the_journal)
{
    user u;
    char pid[64], kid[64], mid[64];
    size_t i;
    json_t *m;
    int next = 0;

    boot_alice(NULL, &u, pid, kid);
    json_t *msgs = cell(mid, sizeof(mid), &u, kid, "for i in range(3000):\n    print(i)");
    json_array_foreach(msgs, i, m) {
        if (strcmp(it_msg_parent(m), mid) != 0 || strcmp(it_msg_type(m), "stream") != 0)
            continue;
        const char *p = jstr(json_object_get(m, "content"), "text");
        while (*p) {
            ck_assert_int_eq(atoi(p), next);
            next++;
            p = strchr(p, '\n');
            ck_assert_ptr_nonnull(p);
            p++;
        }
    }
    ck_assert_int_eq(next, 3000);
    json_decref(msgs);
    ck_assert_int_eq(it_server_stop(&srv), 0);
}
END_TEST

/* Without a free slot a kernel waits in the scheduler's queue with its
 * position; a queued kernel can be shut down; it starts when a slot frees. */
START_TEST(kernels_queue_for_a_slot_with_their_position)
{
    char dir[64], body[256], path[160];
    user root, a, b, c;
    char pa[64], pb[64], pc[64], ka[64], kb[64], kc[64];
    it_resp r;

    ck_assert_int_eq(it_admin_server_start(&srv, dir, sizeof(dir), "kq", NULL, root.cookie, sizeof(root.cookie),
                                           root.csrf, sizeof(root.csrf)),
                     0);
    root.hdrs[0] = root.cookie, root.hdrs[1] = root.csrf, root.hdrs[2] = NULL;
    it_request(&r, &srv, "PUT", "/api/v1/admin/resources/cpu-basic", "{\"capacity\": 1}", root.hdrs);
    ck_assert_msg(r.status == 200, "%ld %s", r.status, r.body);
    it_resp_free(&r);

    make_user(&a, "alice");
    make_user(&b, "bob");
    make_user(&c, "carol");
    make_project(pa, sizeof(pa), &a);
    make_project(pb, sizeof(pb), &b);
    make_project(pc, sizeof(pc), &c);
    start_kernel(ka, sizeof(ka), &a, pa);
    snprintf(body, sizeof(body), "{\"project_id\":\"%s\",\"resource\":\"cpu-basic\"}", pb);
    it_request(&r, &srv, "POST", "/api/v1/kernels", body, b.hdrs);
    ck_assert_int_eq(r.status, 201);
    ck_assert_str_eq(jstr(r.json, "status"), "queued");
    ck_assert_int_eq(json_integer_value(json_object_get(r.json, "queue_position")), 1);
    snprintf(kb, sizeof(kb), "%s", jstr(r.json, "id"));
    it_resp_free(&r);
    snprintf(body, sizeof(body), "{\"project_id\":\"%s\",\"resource\":\"cpu-basic\"}", pc);
    it_request(&r, &srv, "POST", "/api/v1/kernels", body, c.hdrs);
    ck_assert_int_eq(r.status, 201);
    snprintf(kc, sizeof(kc), "%s", jstr(r.json, "id"));
    it_resp_free(&r);
    snprintf(path, sizeof(path), "/api/v1/kernels/%s", kc);
    json_t *k = get_json(&c, path);
    ck_assert_str_eq(jstr(k, "status"), "queued");
    ck_assert_int_eq(json_integer_value(json_object_get(k, "queue_position")), 2);
    json_decref(k);
    /* executing on a queued kernel is a conflict */
    snprintf(path, sizeof(path), "/api/v1/kernels/%s/execute", kc);
    it_request(&r, &srv, "POST", path, "{\"code\":\"1\"}", c.hdrs);
    ck_assert_int_eq(r.status, 409);
    it_resp_free(&r);
    /* carol gives up while queued */
    post_ok(&c, kc, "", 200);
    k = wait_status(&c, kc, "dead");
    ck_assert_str_eq(jstr(k, "stop_reason"), "shutdown");
    json_decref(k);
    /* alice stops: bob's kernel starts */
    post_ok(&a, ka, "", 200);
    json_decref(wait_status(&b, kb, "idle"));
    ck_assert_int_eq(it_server_stop(&srv), 0);
    ck_assert_int_eq(it_dir_remove(dir), 0);
}
END_TEST

START_TEST(busy_kernel_outlives_its_idle_timeout_and_an_idle_one_is_culled)
{
    static const char *const env[] = {"EDDY_KERNEL_IDLE_MS=1500", NULL};
    user u;
    char pid[64], kid[64], mid[64], path[128];

    boot_alice(env, &u, pid, kid);
    execute(mid, sizeof(mid), &u, kid, "import time\ntime.sleep(6)\n'slept'", NULL);
    json_decref(wait_status(&u, kid, "busy"));
    /* twice the idle timeout later, it still runs */
    sleep(3);
    snprintf(path, sizeof(path), "/api/v1/kernels/%s", kid);
    json_t *k = get_json(&u, path);
    ck_assert_str_eq(jstr(k, "status"), "busy");
    json_decref(k);
    json_t *msgs = sse_collect(&u, kid, 0, mid, false, NULL);
    ck_assert_str_eq(
        jstr(json_object_get(json_object_get(find_type(msgs, mid, "execute_result"), "content"), "data"), "text/plain"),
        "'slept'");
    json_decref(msgs);
    /* then, idle with nobody connected, it is culled with its reason */
    k = wait_status(&u, kid, "dead");
    ck_assert_str_eq(jstr(k, "stop_reason"), "idle_timeout");
    json_decref(k);
    /* its events say so (an iopub status dead, as Jupyter Server sends), then end */
    bool ended = false, dead = false;
    size_t i;
    json_t *m;
    msgs = sse_collect(&u, kid, 0, NULL, false, &ended);
    ck_assert(ended);
    json_array_foreach(msgs, i, m)
        if (strcmp(it_msg_type(m), "status") == 0 &&
            strcmp(jstr(json_object_get(m, "content"), "execution_state"), "dead") == 0)
            dead = true;
    ck_assert(dead);
    json_decref(msgs);
    ck_assert_int_eq(it_server_stop(&srv), 0);
}
END_TEST

START_TEST(kernel_past_its_max_session_is_warned_then_stopped)
{
    static const char *const env[] = {"EDDY_KERNEL_MAX_SESSION_MS=6000", NULL};
    user u;
    char pid[64], kid[64];
    bool ended = false, warned = false;
    size_t i;
    json_t *m;

    boot_alice(env, &u, pid, kid);
    json_t *k = wait_status(&u, kid, "dead");
    ck_assert_str_eq(jstr(k, "stop_reason"), "max_session");
    json_decref(k);
    json_t *msgs = sse_collect(&u, kid, 0, NULL, false, &ended);
    ck_assert(ended);
    json_array_foreach(msgs, i, m)
        if (strcmp(it_msg_type(m), "stream") == 0 &&
            strstr(jstr(json_object_get(m, "content"), "text"), "maximum session length"))
            warned = true;
    ck_assert_msg(warned, "no warning before the stop");
    json_decref(msgs);
    ck_assert_int_eq(it_server_stop(&srv), 0);
}
END_TEST

START_TEST(another_users_kernel_answers_404)
{
    user a, b;
    char pid[64], kid[64], path[200];
    it_resp r;
    static const char *const what[][2] = {{"GET", ""},           {"DELETE", ""},         {"POST", "/interrupt"},
                                          {"POST", "/restart"}, {"GET", "/events"},     {"POST", "/execute"}};

    boot_alice(NULL, &a, pid, kid);
    make_user(&b, "bob");
    for (size_t i = 0; i < sizeof(what) / sizeof(what[0]); i++) {
        snprintf(path, sizeof(path), "/api/v1/kernels/%s%s", kid, what[i][1]);
        it_request(&r, &srv, what[i][0], path, strcmp(what[i][1], "/execute") == 0 ? "{\"code\":\"1\"}" : NULL,
                   b.hdrs);
        ck_assert_msg(r.status == 404, "%s %s: %ld", what[i][0], path, r.status);
        it_resp_free(&r);
    }
    /* bob's list does not show it; bob cannot start one in alice's project */
    it_request(&r, &srv, "GET", "/api/v1/kernels", NULL, b.hdrs);
    ck_assert_int_eq(json_array_size(json_object_get(r.json, "items")), 0);
    it_resp_free(&r);
    snprintf(path, sizeof(path), "{\"project_id\":\"%s\",\"resource\":\"cpu-basic\"}", pid);
    it_request(&r, &srv, "POST", "/api/v1/kernels", path, b.hdrs);
    ck_assert_int_eq(r.status, 404);
    it_resp_free(&r);
    /* alice's list does */
    it_request(&r, &srv, "GET", "/api/v1/kernels", NULL, a.hdrs);
    ck_assert_int_eq(json_array_size(json_object_get(r.json, "items")), 1);
    ck_assert_str_eq(jstr(json_array_get(json_object_get(r.json, "items"), 0), "id"), kid);
    it_resp_free(&r);
    /* bad input */
    it_request(&r, &srv, "POST", "/api/v1/kernels", "{\"resource\":\"cpu-basic\"}", a.hdrs);
    ck_assert_int_eq(r.status, 400);
    it_resp_free(&r);
    snprintf(path, sizeof(path), "/api/v1/kernels/%s/events?after=-3", kid);
    it_request(&r, &srv, "GET", path, NULL, a.hdrs);
    ck_assert_int_eq(r.status, 400);
    it_resp_free(&r);
    snprintf(path, sizeof(path), "/api/v1/kernels/%s/execute", kid);
    it_request(&r, &srv, "POST", path, "{\"code\":\"1\",\"cell_id\":\"c1\"}", a.hdrs);
    ck_assert_int_eq(r.status, 400);
    it_resp_free(&r);
    it_request(&r, &srv, "POST", path, "{\"code\":\"1\",\"cell_id\":\"c1\",\"notebook_path\":\"none.ipynb\"}",
               a.hdrs);
    ck_assert_int_eq(r.status, 404);
    it_resp_free(&r);
    it_request(&r, &srv, "POST", path, "{\"code\":\"1\",\"cell_id\":\"c1\",\"notebook_path\":\"../x.ipynb\"}",
               a.hdrs);
    ck_assert_int_eq(r.status, 400);
    it_resp_free(&r);
    it_request(&r, &srv, "POST", path, "{\"code\": 5}", a.hdrs);
    ck_assert_int_eq(r.status, 400);
    it_resp_free(&r);
    it_request(&r, &srv, "POST", "/api/v1/kernels/not-a-kernel", NULL, a.hdrs);
    ck_assert_int_eq(r.status, 405);
    it_resp_free(&r);
    it_request(&r, &srv, "GET", "/api/v1/kernels/not-a-kernel", NULL, a.hdrs);
    ck_assert_int_eq(r.status, 404);
    it_resp_free(&r);
    ck_assert_int_eq(it_server_stop(&srv), 0);
}
END_TEST

START_TEST(kernels_die_with_the_server_and_say_why_after_a_restart)
{
    user u;
    char pid[64], kid[64], path[128], data[256];

    boot_alice(NULL, &u, pid, kid);
    snprintf(data, sizeof(data), "%s", srv.data_dir);
    srv.keep_data = 1;
    /* kill -9: nothing gets to mark the kernel */
    kill(srv.pid, SIGKILL);
    waitpid(srv.pid, NULL, 0);
    ck_assert_int_eq(it_server_start_in(&srv, data, NULL), 0);
    srv.keep_data = 0;
    /* the session survives in the store */
    snprintf(path, sizeof(path), "/api/v1/kernels/%s", kid);
    json_t *k = get_json(&u, path);
    ck_assert_str_eq(jstr(k, "status"), "dead");
    ck_assert_str_eq(jstr(k, "stop_reason"), "server_restart");
    json_decref(k);
    /* its job failed as a platform error and was refunded */
    json_t *jobs = get_json(&u, "/api/v1/jobs");
    json_t *job = json_array_get(json_object_get(jobs, "items"), 0);
    ck_assert_str_eq(jstr(job, "entry"), "@kernel");
    ck_assert_str_eq(jstr(job, "failure_reason"), "platform_error");
    ck_assert_int_eq(json_integer_value(json_object_get(job, "charged_mcoins")), 0);
    json_decref(jobs);
    ck_assert_int_eq(it_server_stop(&srv), 0);
}
END_TEST

int main(void)
{
    const TTest *tests[] = {execute_streams_busy_input_outputs_reply_idle_in_order,
                            traceback_of_a_raising_cell_and_a_matplotlib_png,
                            interrupt_stops_a_busy_loop_and_the_kernel_survives,
                            restart_keeps_the_id_and_clears_the_namespace,
                            journal_keeps_every_line_with_no_client_and_folds_into_the_notebook,
                            a_burst_larger_than_memory_is_replayed_in_order_from_the_journal,
                            kernels_queue_for_a_slot_with_their_position,
                            busy_kernel_outlives_its_idle_timeout_and_an_idle_one_is_culled,
                            kernel_past_its_max_session_is_warned_then_stopped,
                            another_users_kernel_answers_404,
                            kernels_die_with_the_server_and_say_why_after_a_restart, NULL};
    return it_tests_run("kernels", 120, NULL, NULL, tests);
}
