/* Interactive kernels over HTTP against the real server, scheduler, sandbox
 * and eddy-kernel: /api/v1/kernels start, execute and the events stream
 * (Server-Sent Events with sequence numbers, replayed from the journal);
 * interrupt, restart, tracebacks, a matplotlib PNG, the journal with no
 * client attached folded into the notebook, idle culling, maximum session,
 * kernels dying with the server, and another user's kernel answering 404. */
#include "harness.h"

#include <check.h>
#include <curl/curl.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static it_server srv;

typedef struct user {
    char cookie[512], csrf[256];
    const char *hdrs[4];
} user;

static void boot(const char *const *env)
{
    ck_assert_int_eq(it_server_start(&srv, env), 0);
}

static void make_user(user *u, const char *name)
{
    char body[256], pw[64];
    it_resp r;

    snprintf(pw, sizeof(pw), "pass-%s-123", name);
    snprintf(body, sizeof(body), "{\"username\":\"%s\",\"email\":\"%s@example.com\",\"password\":\"%s\"}", name,
             name, pw);
    it_request(&r, &srv, "POST", "/api/v1/auth/signup", body, NULL);
    ck_assert_msg(r.status == 201, "signup: %ld %s", r.status, r.body);
    it_resp_free(&r);
    snprintf(body, sizeof(body), "{\"username\":\"%s\",\"password\":\"%s\"}", name, pw);
    ck_assert_int_eq(it_request(&r, &srv, "POST", "/api/v1/auth/login", body, NULL), 0);
    ck_assert_int_eq(r.status, 200);
    const char *sc = it_resp_header(&r, "Set-Cookie");
    ck_assert_ptr_nonnull(sc);
    snprintf(u->cookie, sizeof(u->cookie), "Cookie: %.*s", (int)strcspn(sc, ";"), sc);
    snprintf(u->csrf, sizeof(u->csrf), "X-CSRF-Token: %s", json_string_value(json_object_get(r.json, "csrf_token")));
    it_resp_free(&r);
    u->hdrs[0] = u->cookie;
    u->hdrs[1] = u->csrf;
    u->hdrs[2] = NULL;
}

static void make_project(char *pid, size_t n, user *u)
{
    it_resp r;
    it_request(&r, &srv, "POST", "/api/v1/projects", "{\"name\":\"nb\",\"visibility\":\"private\"}", u->hdrs);
    ck_assert_int_eq(r.status, 201);
    snprintf(pid, n, "%s", json_string_value(json_object_get(r.json, "id")));
    it_resp_free(&r);
}

static json_t *get_json(user *u, const char *path, long *status)
{
    it_resp r;
    json_t *j;
    it_request(&r, &srv, "GET", path, NULL, u->hdrs);
    *status = r.status;
    j = json_incref(r.json);
    it_resp_free(&r);
    return j;
}

static const char *jstr(const json_t *o, const char *k)
{
    return json_string_value(json_object_get(o, k));
}

/* Start a kernel and wait until it is idle (Python ready). */
static void start_kernel(char *kid, size_t n, user *u, const char *pid)
{
    char body[256], path[128];
    it_resp r;
    long st;

    snprintf(body, sizeof(body), "{\"project_id\":\"%s\",\"resource\":\"cpu-basic\"}", pid);
    it_request(&r, &srv, "POST", "/api/v1/kernels", body, u->hdrs);
    ck_assert_msg(r.status == 201, "start: %ld %s", r.status, r.body);
    snprintf(kid, n, "%s", jstr(r.json, "id"));
    ck_assert_int_eq(strlen(kid), 36);   /* a UUID, as Jupyter clients expect */
    ck_assert_ptr_nonnull(json_object_get(r.json, "queue_position"));
    ck_assert_ptr_nonnull(json_object_get(r.json, "eta_s"));
    it_resp_free(&r);
    snprintf(path, sizeof(path), "/api/v1/kernels/%s", kid);
    for (int i = 0; i < 300; i++) {
        json_t *k = get_json(u, path, &st);
        ck_assert_int_eq(st, 200);
        bool idle = strcmp(jstr(k, "status"), "idle") == 0;
        ck_assert_msg(strcmp(jstr(k, "status"), "dead") != 0, "kernel died at start: %s", jstr(k, "stop_reason"));
        json_decref(k);
        if (idle)
            return;
        usleep(100000);
    }
    ck_abort_msg("kernel %s never became idle", kid);
}

static void execute(char *msg_id, size_t n, user *u, const char *kid, const char *code, const char *extra)
{
    char path[128];
    json_t *b = json_pack("{s:s}", "code", code);
    if (extra) {
        json_t *x = json_loads(extra, 0, NULL);
        json_object_update(b, x);
        json_decref(x);
    }
    char *body = json_dumps(b, 0);
    it_resp r;

    snprintf(path, sizeof(path), "/api/v1/kernels/%s/execute", kid);
    it_request(&r, &srv, "POST", path, body, u->hdrs);
    ck_assert_msg(r.status == 202, "execute: %ld %s", r.status, r.body);
    snprintf(msg_id, n, "%s", jstr(r.json, "msg_id"));
    ck_assert_int_gt(strlen(msg_id), 0);
    it_resp_free(&r);
    free(body);
    json_decref(b);
}

/* ---- a Server-Sent Events reader ----------------------------------------------- */

typedef struct sse {
    char    *buf;
    size_t   len, cap;
    json_t  *msgs;           /* every message event, in order */
    const char *until_parent; /* stop at status idle with this parent */
    bool     stop_at_reply;  /* stop at the execute_reply instead */
    bool     stop_at_stream; /* stop at the first stream output instead */
    bool     done, ended;
    long long last_id;
    bool     ids_match;      /* each `id:` equals the message's seq */
} sse;

static const char *parent_of(const json_t *m)
{
    return jstr(json_object_get(m, "parent_header"), "msg_id");
}

static const char *type_of(const json_t *m)
{
    return jstr(json_object_get(m, "header"), "msg_type");
}

static void sse_event(sse *s, const char *ev)
{
    char event[32] = "message";
    const char *data = NULL;
    long long id = -1;

    for (const char *line = ev; line && *line;) {
        const char *nl = strchr(line, '\n');
        size_t ll = nl ? (size_t)(nl - line) : strlen(line);
        if (ll > 4 && strncmp(line, "id: ", 4) == 0)
            id = atoll(line + 4);
        else if (ll > 7 && strncmp(line, "event: ", 7) == 0)
            snprintf(event, sizeof(event), "%.*s", (int)(ll - 7), line + 7);
        else if (ll > 6 && strncmp(line, "data: ", 6) == 0)
            data = line + 6;
        line = nl ? nl + 1 : NULL;
    }
    if (strcmp(event, "end") == 0) {
        s->ended = s->done = true;
        return;
    }
    if (data == NULL)
        return;   /* a comment (heartbeat) */
    json_t *m = json_loadb(data, strcspn(data, "\n"), 0, NULL);
    ck_assert_ptr_nonnull(m);
    if (json_integer_value(json_object_get(m, "seq")) != id)
        s->ids_match = false;
    if (id <= s->last_id)
        s->ids_match = false;
    s->last_id = id;
    json_array_append_new(s->msgs, m);
    if (s->until_parent && parent_of(m) && strcmp(parent_of(m), s->until_parent) == 0) {
        const char *t = type_of(m);
        if (s->stop_at_reply && strcmp(t, "execute_reply") == 0)
            s->done = true;
        if (s->stop_at_stream && strcmp(t, "stream") == 0)
            s->done = true;
        if (strcmp(t, "status") == 0 &&
            strcmp(jstr(json_object_get(m, "content"), "execution_state") ?: "", "idle") == 0)
            s->done = true;
    }
}

static size_t sse_write(char *p, size_t sz, size_t nm, void *ud)
{
    sse *s = ud;
    size_t n = sz * nm;
    char *end;

    if (s->len + n + 1 > s->cap) {
        s->cap = (s->len + n + 1) * 2;
        s->buf = realloc(s->buf, s->cap);
    }
    memcpy(s->buf + s->len, p, n);
    s->len += n;
    s->buf[s->len] = '\0';
    while (!s->done && (end = strstr(s->buf, "\n\n")) != NULL) {
        *end = '\0';
        sse_event(s, s->buf);
        size_t used = (size_t)(end + 2 - s->buf);
        memmove(s->buf, end + 2, s->len - used + 1);
        s->len -= used;
    }
    return s->done ? 0 : n;   /* 0 aborts the transfer: we have what we wanted */
}

/* Read /events?after=AFTER until the idle status of `parent` (or the end of
 * the stream); returns the messages. Fails after 60 s. */
static json_t *sse_collect_to(user *u, const char *kid, long long after, const char *parent, bool stop_at_reply,
                              bool stop_at_stream, bool *ended)
{
    char url[256];
    sse s = {.msgs = json_array(), .until_parent = parent, .stop_at_reply = stop_at_reply,
             .stop_at_stream = stop_at_stream, .last_id = after, .ids_match = true};
    struct curl_slist *h = NULL;
    CURL *c = curl_easy_init();

    snprintf(url, sizeof(url), "%s/api/v1/kernels/%s/events?after=%lld", srv.base_url, kid, after);
    h = curl_slist_append(h, u->cookie);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, sse_write);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &s);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 60L);
    CURLcode rc = curl_easy_perform(c);
    long status = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    curl_slist_free_all(h);
    curl_easy_cleanup(c);
    ck_assert_msg(status == 200, "events: status %ld", status);
    ck_assert_msg(s.done, "events stream ended early (curl %d) after %zu messages", (int)rc, json_array_size(s.msgs));
    ck_assert_msg(s.ids_match, "event ids are not the increasing seq of each message");
    if (ended)
        *ended = s.ended;
    free(s.buf);
    return s.msgs;
}

static json_t *sse_collect(user *u, const char *kid, long long after, const char *parent, bool stop_at_reply,
                           bool *ended)
{
    return sse_collect_to(u, kid, after, parent, stop_at_reply, false, ended);
}

/* The messages of one request, in order, as "type" or "type:detail". */
static void trace(char *out, size_t n, json_t *msgs, const char *parent)
{
    size_t i;
    json_t *m;
    out[0] = '\0';
    json_array_foreach(msgs, i, m) {
        const char *p = parent_of(m);
        if (p == NULL || strcmp(p, parent) != 0)
            continue;
        const char *t = type_of(m);
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
        if (parent_of(m) && strcmp(parent_of(m), parent) == 0 && strcmp(type_of(m), type) == 0)
            return m;
    return NULL;
}

static json_t *wait_status(user *u, const char *kid, const char *status)
{
    char path[128];
    long st;
    snprintf(path, sizeof(path), "/api/v1/kernels/%s", kid);
    for (int i = 0; i < 600; i++) {
        json_t *k = get_json(u, path, &st);
        ck_assert_int_eq(st, 200);
        if (strcmp(jstr(k, "status"), status) == 0)
            return k;
        json_decref(k);
        usleep(100000);
    }
    ck_abort_msg("kernel %s never became %s", kid, status);
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

    boot(NULL);
    make_user(&u, "alice");
    make_project(pid, sizeof(pid), &u);
    start_kernel(kid, sizeof(kid), &u, pid);
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

    boot(NULL);
    make_user(&u, "alice");
    make_project(pid, sizeof(pid), &u);
    start_kernel(kid, sizeof(kid), &u, pid);
    execute(mid, sizeof(mid), &u, kid, "def f():\n    return 1/0\nf()", NULL);
    json_t *msgs = sse_collect(&u, kid, 0, mid, false, NULL);
    json_t *err = find_type(msgs, mid, "error");
    ck_assert_ptr_nonnull(err);
    const json_t *c = json_object_get(err, "content");
    ck_assert_str_eq(jstr(c, "ename"), "ZeroDivisionError");
    ck_assert_int_gt(json_array_size(json_object_get(c, "traceback")), 1);
    ck_assert_str_eq(jstr(json_object_get(find_type(msgs, mid, "execute_reply"), "content"), "status"), "error");
    json_decref(msgs);

    execute(mid, sizeof(mid), &u, kid,
            "import matplotlib.pyplot as plt\nplt.plot([1, 2, 3], [1, 4, 9])\nplt.show()", NULL);
    msgs = sse_collect(&u, kid, 0, mid, false, NULL);
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

    boot(NULL);
    make_user(&u, "alice");
    make_project(pid, sizeof(pid), &u);
    start_kernel(kid, sizeof(kid), &u, pid);
    execute(mid, sizeof(mid), &u, kid, "x = 5\nprint('started', flush=True)\nwhile True:\n    pass", NULL);
    /* interrupt once the cell's own code runs: "busy" comes before that */
    json_decref(sse_collect_to(&u, kid, 0, mid, false, true, NULL));
    post_ok(&u, kid, "interrupt", 200);
    json_t *msgs = sse_collect(&u, kid, 0, mid, false, NULL);
    json_t *err = find_type(msgs, mid, "error");
    ck_assert_ptr_nonnull(err);
    ck_assert_str_eq(jstr(json_object_get(err, "content"), "ename"), "KeyboardInterrupt");
    json_decref(msgs);
    execute(mid2, sizeof(mid2), &u, kid, "x + 1", NULL);
    msgs = sse_collect(&u, kid, 0, mid2, false, NULL);
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
    long st;

    boot(NULL);
    make_user(&u, "alice");
    make_project(pid, sizeof(pid), &u);
    start_kernel(kid, sizeof(kid), &u, pid);
    execute(mid, sizeof(mid), &u, kid, "secret = 41", NULL);
    json_decref(sse_collect(&u, kid, 0, mid, false, NULL));
    post_ok(&u, kid, "restart", 200);
    json_decref(wait_status(&u, kid, "idle"));
    snprintf(path, sizeof(path), "/api/v1/kernels/%s", kid);
    json_t *k = get_json(&u, path, &st);
    ck_assert_str_eq(jstr(k, "id"), kid);
    json_decref(k);
    execute(mid, sizeof(mid), &u, kid, "secret + 1", NULL);
    json_t *msgs = sse_collect(&u, kid, 0, mid, false, NULL);
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
        if (parent_of(m) && strcmp(parent_of(m), mid) == 0 && strcmp(type_of(m), "stream") == 0) {
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

    boot(NULL);
    make_user(&u, "alice");
    make_project(pid, sizeof(pid), &u);
    start_kernel(kid, sizeof(kid), &u, pid);
    execute(mid, sizeof(mid), &u, kid, "for i in range(3000):\n    print(i)", NULL);
    json_t *msgs = sse_collect(&u, kid, 0, mid, false, NULL);
    json_array_foreach(msgs, i, m) {
        if (!parent_of(m) || strcmp(parent_of(m), mid) != 0 || strcmp(type_of(m), "stream") != 0)
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
    char dir[64], data[128], cmd[200], body[256], path[160];
    user root, a, b, c;
    char pa[64], pb[64], pc[64], ka[64], kb[64], kc[64];
    it_resp r;
    pid_t pid;
    int st;

    snprintf(dir, sizeof(dir), "/tmp/eddy-it-kq-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(data, sizeof(data), "%s/data", dir);
    mkdir(data, 0700);
    if ((pid = fork()) == 0) {
        int null = open("/dev/null", O_WRONLY);
        dup2(null, 1);
        execl(it_eddy_bin(), "eddy", "admin", "create-user", "--data", data, "--username", "root", "--email",
              "root@example.com", "--password", "correct horse battery", "--role", "admin", (char *)NULL);
        _exit(127);
    }
    waitpid(pid, &st, 0);
    ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    ck_assert_int_eq(it_server_start_in(&srv, data, NULL), 0);
    /* log root in */
    it_request(&r, &srv, "POST", "/api/v1/auth/login", "{\"username\":\"root\",\"password\":\"correct horse battery\"}",
               NULL);
    ck_assert_int_eq(r.status, 200);
    const char *sc = it_resp_header(&r, "Set-Cookie");
    snprintf(root.cookie, sizeof(root.cookie), "Cookie: %.*s", (int)strcspn(sc, ";"), sc);
    snprintf(root.csrf, sizeof(root.csrf), "X-CSRF-Token: %s", jstr(r.json, "csrf_token"));
    root.hdrs[0] = root.cookie, root.hdrs[1] = root.csrf, root.hdrs[2] = NULL;
    it_resp_free(&r);
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
    long status;
    json_t *k = get_json(&c, path, &status);
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
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    ck_assert_int_eq(system(cmd), 0);
}
END_TEST

START_TEST(busy_kernel_outlives_its_idle_timeout_and_an_idle_one_is_culled)
{
    static const char *const env[] = {"EDDY_KERNEL_IDLE_MS=1500", NULL};
    user u;
    char pid[64], kid[64], mid[64], path[128];
    long st;

    boot(env);
    make_user(&u, "alice");
    make_project(pid, sizeof(pid), &u);
    start_kernel(kid, sizeof(kid), &u, pid);
    execute(mid, sizeof(mid), &u, kid, "import time\ntime.sleep(6)\n'slept'", NULL);
    json_decref(wait_status(&u, kid, "busy"));
    /* twice the idle timeout later, it still runs */
    sleep(3);
    snprintf(path, sizeof(path), "/api/v1/kernels/%s", kid);
    json_t *k = get_json(&u, path, &st);
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
        if (strcmp(type_of(m), "status") == 0 &&
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

    boot(env);
    make_user(&u, "alice");
    make_project(pid, sizeof(pid), &u);
    start_kernel(kid, sizeof(kid), &u, pid);
    json_t *k = wait_status(&u, kid, "dead");
    ck_assert_str_eq(jstr(k, "stop_reason"), "max_session");
    json_decref(k);
    json_t *msgs = sse_collect(&u, kid, 0, NULL, false, &ended);
    ck_assert(ended);
    json_array_foreach(msgs, i, m)
        if (strcmp(type_of(m), "stream") == 0 &&
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

    boot(NULL);
    make_user(&a, "alice");
    make_user(&b, "bob");
    make_project(pid, sizeof(pid), &a);
    start_kernel(kid, sizeof(kid), &a, pid);
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
    long st;

    boot(NULL);
    make_user(&u, "alice");
    make_project(pid, sizeof(pid), &u);
    start_kernel(kid, sizeof(kid), &u, pid);
    snprintf(data, sizeof(data), "%s", srv.data_dir);
    srv.keep_data = 1;
    /* kill -9: nothing gets to mark the kernel */
    kill(srv.pid, SIGKILL);
    waitpid(srv.pid, NULL, 0);
    ck_assert_int_eq(it_server_start_in(&srv, data, NULL), 0);
    srv.keep_data = 0;
    /* the session survives in the store */
    snprintf(path, sizeof(path), "/api/v1/kernels/%s", kid);
    json_t *k = get_json(&u, path, &st);
    ck_assert_int_eq(st, 200);
    ck_assert_str_eq(jstr(k, "status"), "dead");
    ck_assert_str_eq(jstr(k, "stop_reason"), "server_restart");
    json_decref(k);
    /* its job failed as a platform error and was refunded */
    json_t *jobs = get_json(&u, "/api/v1/jobs", &st);
    ck_assert_int_eq(st, 200);
    json_t *job = json_array_get(json_object_get(jobs, "items"), 0);
    ck_assert_str_eq(jstr(job, "entry"), "@kernel");
    ck_assert_str_eq(jstr(job, "failure_reason"), "platform_error");
    ck_assert_int_eq(json_integer_value(json_object_get(job, "charged_mcoins")), 0);
    json_decref(jobs);
    ck_assert_int_eq(it_server_stop(&srv), 0);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("kernels");
    TCase *tc = tcase_create("kernels");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, execute_streams_busy_input_outputs_reply_idle_in_order);
    tcase_add_test(tc, traceback_of_a_raising_cell_and_a_matplotlib_png);
    tcase_add_test(tc, interrupt_stops_a_busy_loop_and_the_kernel_survives);
    tcase_add_test(tc, restart_keeps_the_id_and_clears_the_namespace);
    tcase_add_test(tc, journal_keeps_every_line_with_no_client_and_folds_into_the_notebook);
    tcase_add_test(tc, a_burst_larger_than_memory_is_replayed_in_order_from_the_journal);
    tcase_add_test(tc, kernels_queue_for_a_slot_with_their_position);
    tcase_add_test(tc, busy_kernel_outlives_its_idle_timeout_and_an_idle_one_is_culled);
    tcase_add_test(tc, kernel_past_its_max_session_is_warned_then_stopped);
    tcase_add_test(tc, another_users_kernel_answers_404);
    tcase_add_test(tc, kernels_die_with_the_server_and_say_why_after_a_restart);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
    SRunner *sr = srunner_create(suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    curl_global_cleanup();
    return failed ? 1 : 0;
}
