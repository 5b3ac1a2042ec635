/* eddy-kernel serve: Jupyter messaging 5.3 over a real socketpair (and a
 * dialed UNIX socket) with the real binary: message order, execution
 * counts, errors, interrupts, input(), matplotlib, rich display, the
 * completion/inspection/is_complete requests, shutdown. */
#include "kt_util.h"

#include "kr.h"

#include <check.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

static kt_kernel k;

static void setup(void) { kt_kernel_start(&k); }
static void teardown(void) { kt_kernel_stop(&k); }

static json_t *content(json_t *m) { return json_object_get(m, "content"); }
static const char *cstr(json_t *m, const char *key)
{
    const char *s = json_string_value(json_object_get(content(m), key));
    return s ? s : "";
}
static json_int_t cint(json_t *m, const char *key)
{
    return json_integer_value(json_object_get(content(m), key));
}
static const char *parent_id(json_t *m)
{
    const char *s = json_string_value(json_object_get(json_object_get(m, "parent_header"),
                                                      "msg_id"));
    return s ? s : "";
}

START_TEST(kernel_info_reply_names_protocol_and_language)
{
    char *id = kt_send(&k, "shell", "kernel_info_request", NULL);
    json_t *msgs = kt_until_idle(&k, id);
    ck_assert_uint_eq(json_array_size(msgs), 3);
    json_t *r = json_array_get(msgs, 1);
    ck_assert_str_eq(kr_msg_type(json_array_get(msgs, 0)), "status");
    ck_assert_str_eq(kr_msg_type(r), "kernel_info_reply");
    ck_assert_str_eq(kr_msg_channel(r), "shell");
    ck_assert_str_eq(parent_id(r), id);
    ck_assert_str_eq(cstr(r, "status"), "ok");
    ck_assert_str_eq(cstr(r, "protocol_version"), "5.3");
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(content(r), "language_info"),
                                                       "name")), "python");
    json_decref(msgs);
    free(id);
}
END_TEST

START_TEST(execute_messages_come_in_jupyter_order)
{
    char *id = kt_send(&k, "shell", "execute_request",
                       json_pack("{s:s, s:b}", "code", "print('hello')\n6 * 7", "silent", 0));
    json_t *msgs = kt_until_idle(&k, id);
    const char *want[][2] = {{"iopub", "status"},   {"iopub", "execute_input"},
                             {"iopub", "stream"},   {"iopub", "execute_result"},
                             {"shell", "execute_reply"}, {"iopub", "status"}};
    ck_assert_uint_eq(json_array_size(msgs), 6);
    for (size_t i = 0; i < 6; i++) {
        json_t *m = json_array_get(msgs, i);
        ck_assert_str_eq(kr_msg_channel(m), want[i][0]);
        ck_assert_str_eq(kr_msg_type(m), want[i][1]);
        ck_assert_str_eq(parent_id(m), id);
        ck_assert_str_eq(json_string_value(json_object_get(json_object_get(m, "header"), "version")),
                         "5.3");
    }
    ck_assert_str_eq(cstr(json_array_get(msgs, 0), "execution_state"), "busy");
    ck_assert_str_eq(cstr(json_array_get(msgs, 1), "code"), "print('hello')\n6 * 7");
    ck_assert_int_eq(cint(json_array_get(msgs, 1), "execution_count"), 1);
    ck_assert_str_eq(cstr(json_array_get(msgs, 2), "name"), "stdout");
    ck_assert_str_eq(cstr(json_array_get(msgs, 2), "text"), "hello\n");
    json_t *res = json_array_get(msgs, 3);
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(content(res), "data"),
                                                       "text/plain")), "42");
    ck_assert_int_eq(cint(res, "execution_count"), 1);
    ck_assert_str_eq(cstr(json_array_get(msgs, 4), "status"), "ok");
    ck_assert_int_eq(cint(json_array_get(msgs, 4), "execution_count"), 1);
    ck_assert_str_eq(cstr(json_array_get(msgs, 5), "execution_state"), "idle");
    json_decref(msgs);
    free(id);
}
END_TEST

START_TEST(execution_count_increments_but_not_when_silent)
{
    json_decref(kt_execute(&k, "a = 1"));
    json_t *msgs = kt_execute(&k, "a += 1");
    ck_assert_int_eq(cint(kt_find(msgs, "execute_reply", 0), "execution_count"), 2);
    json_decref(msgs);
    char *id = kt_send(&k, "shell", "execute_request",
                       json_pack("{s:s, s:b}", "code", "a += 1\na", "silent", 1));
    msgs = kt_until_idle(&k, id);
    ck_assert_ptr_null(kt_find(msgs, "execute_input", 0));    /* silent: nothing on iopub */
    ck_assert_ptr_null(kt_find(msgs, "execute_result", 0));
    ck_assert_str_eq(cstr(kt_find(msgs, "execute_reply", 0), "status"), "ok");
    json_decref(msgs);
    free(id);
    msgs = kt_execute(&k, "a");
    ck_assert_int_eq(cint(kt_find(msgs, "execute_reply", 0), "execution_count"), 3);
    ck_assert_str_eq(json_string_value(json_object_get(
                         json_object_get(content(kt_find(msgs, "execute_result", 0)), "data"),
                         "text/plain")), "3");
    json_decref(msgs);
}
END_TEST

START_TEST(error_sends_traceback_and_error_reply)
{
    json_t *msgs = kt_execute(&k, "def g(n):\n    return {}[n]\ng('missing')");
    json_t *e = kt_find(msgs, "error", 0);
    ck_assert_ptr_nonnull(e);
    ck_assert_str_eq(kr_msg_channel(e), "iopub");
    ck_assert_str_eq(cstr(e, "ename"), "KeyError");
    ck_assert_str_eq(cstr(e, "evalue"), "'missing'");
    char *tb = json_dumps(json_object_get(content(e), "traceback"), 0);
    ck_assert_ptr_nonnull(strstr(tb, "Cell In[1]"));
    ck_assert_ptr_nonnull(strstr(tb, "return {}[n]"));
    ck_assert_ptr_nonnull(strstr(tb, "KeyError"));
    free(tb);
    json_t *r = kt_find(msgs, "execute_reply", 0);
    ck_assert_str_eq(cstr(r, "status"), "error");
    ck_assert_str_eq(cstr(r, "ename"), "KeyError");
    /* error comes before the reply */
    size_t ie = 0, ir = 0, i;
    json_t *m;
    json_array_foreach(msgs, i, m) {
        if (m == e) ie = i;
        if (m == r) ir = i;
    }
    ck_assert_uint_lt(ie, ir);
    json_decref(msgs);
}
END_TEST

/* Start `code`, wait until it runs, interrupt it with `how`, and check the
 * KeyboardInterrupt error and that the namespace survived. `code` prints
 * "started" first: the interrupt goes out only once the cell's own code runs
 * (execute_input comes before that, while the kernel still prepares it). */
static void interrupt_case(const char *code, int by_signal)
{
    json_decref(kt_execute(&k, "kept = 41"));
    char *id = kt_send(&k, "shell", "execute_request", json_pack("{s:s}", "code", code));
    json_t *m;
    for (;;) {
        m = kt_recv(&k, 60);
        bool started = strcmp(kr_msg_type(m), "stream") == 0 &&
                       strcmp(parent_id(m), id) == 0 && strstr(cstr(m, "text"), "started") != NULL;
        json_decref(m);
        if (started)
            break;
    }
    if (by_signal) {
        ck_assert_int_eq(kill(k.pid, SIGINT), 0);
    } else {
        char *iid = kt_send(&k, "control", "interrupt_request", NULL);
        free(iid);
    }
    json_t *msgs = kt_until_idle(&k, id);
    json_t *e = kt_find(msgs, "error", 0);
    ck_assert_ptr_nonnull(e);
    ck_assert_str_eq(cstr(e, "ename"), "KeyboardInterrupt");
    ck_assert_str_eq(cstr(kt_find(msgs, "execute_reply", 0), "status"), "error");
    if (!by_signal) {
        json_t *ir = kt_find(msgs, "interrupt_reply", 0);
        ck_assert_ptr_nonnull(ir);
        ck_assert_str_eq(kr_msg_channel(ir), "control");
    }
    json_decref(msgs);
    free(id);
    msgs = kt_execute(&k, "kept + 1");
    ck_assert_str_eq(json_string_value(json_object_get(
                         json_object_get(content(kt_find(msgs, "execute_result", 0)), "data"),
                         "text/plain")), "42");
    json_decref(msgs);
}

START_TEST(sigint_interrupts_busy_loop_and_kernel_lives)
{
    interrupt_case("print('started', flush=True)\nwhile True: pass", 1);
}
END_TEST

START_TEST(interrupt_request_interrupts_sleeping_cell)
{
    interrupt_case("import time\nprint('started', flush=True)\nwhile True:\n    time.sleep(0.05)", 0);
}
END_TEST

/* An interrupt sent the moment execute_input arrives may land before the
 * cell's first statement runs, or inside it: either way the client gets a
 * KeyboardInterrupt error on iopub and an error reply, and the kernel lives. */
START_TEST(interrupt_right_after_execute_input_is_reported)
{
    for (int round = 0; round < 5; round++) {
        char *id = kt_send(&k, "shell", "execute_request",
                           json_pack("{s:s}", "code", "import time\nwhile True:\n    time.sleep(0.01)"));
        for (;;) {
            json_t *m = kt_recv(&k, 60);
            bool input = strcmp(kr_msg_type(m), "execute_input") == 0 && strcmp(parent_id(m), id) == 0;
            json_decref(m);
            if (input)
                break;
        }
        char *iid = kt_send(&k, "control", "interrupt_request", NULL);
        free(iid);
        json_t *msgs = kt_until_idle(&k, id);
        json_t *e = kt_find(msgs, "error", 0);
        ck_assert_msg(e != NULL, "round %d: no error message on iopub", round);
        ck_assert_str_eq(kr_msg_channel(e), "iopub");
        ck_assert_str_eq(cstr(e, "ename"), "KeyboardInterrupt");
        ck_assert_str_eq(cstr(kt_find(msgs, "execute_reply", 0), "status"), "error");
        json_decref(msgs);
        free(id);
    }
    json_t *msgs = kt_execute(&k, "6 * 7");
    ck_assert_ptr_nonnull(kt_find(msgs, "execute_result", 0));
    json_decref(msgs);
}
END_TEST

START_TEST(matplotlib_figure_arrives_as_png)
{
    json_t *msgs = kt_execute(&k, "import matplotlib.pyplot as plt\nfig = plt.figure()\n"
                                  "plt.plot([0, 1], [1, 0])\nNone");
    json_t *d = kt_find(msgs, "display_data", 0);
    ck_assert_ptr_nonnull(d);
    const char *png = json_string_value(json_object_get(json_object_get(content(d), "data"),
                                                        "image/png"));
    ck_assert_ptr_nonnull(png);
    ck_assert_int_eq(strncmp(png, "iVBORw0KGgo", 11), 0);
    ck_assert_uint_gt(strlen(png), 1000);
    json_decref(msgs);
    /* Shown figures are closed: the next cell emits none. */
    msgs = kt_execute(&k, "len(plt.get_fignums())");
    ck_assert_ptr_null(kt_find(msgs, "display_data", 0));
    ck_assert_str_eq(json_string_value(json_object_get(
                         json_object_get(content(kt_find(msgs, "execute_result", 0)), "data"),
                         "text/plain")), "0");
    json_decref(msgs);
}
END_TEST

START_TEST(input_goes_through_stdin_channel)
{
    char *id = kt_send(&k, "shell", "execute_request",
                       json_pack("{s:s, s:b}", "code", "name = input('Name? ')\nprint('hi', name)",
                                 "allow_stdin", 1));
    json_t *m;
    while (strcmp(kr_msg_type(m = kt_recv(&k, 60)), "input_request") != 0)
        json_decref(m);
    ck_assert_str_eq(kr_msg_channel(m), "stdin");
    ck_assert_str_eq(cstr(m, "prompt"), "Name? ");
    ck_assert(json_is_false(json_object_get(content(m), "password")));
    ck_assert_str_eq(parent_id(m), id);
    json_decref(m);
    free(kt_send(&k, "stdin", "input_reply", json_pack("{s:s}", "value", "Ada")));
    json_t *msgs = kt_until_idle(&k, id);
    ck_assert_str_eq(cstr(kt_find(msgs, "stream", 0), "text"), "hi Ada\n");
    ck_assert_str_eq(cstr(kt_find(msgs, "execute_reply", 0), "status"), "ok");
    json_decref(msgs);
    free(id);
}
END_TEST

START_TEST(interrupt_while_waiting_for_input)
{
    char *id = kt_send(&k, "shell", "execute_request",
                       json_pack("{s:s, s:b}", "code", "input('never answered: ')", "allow_stdin", 1));
    json_t *m;
    while (strcmp(kr_msg_type(m = kt_recv(&k, 60)), "input_request") != 0)
        json_decref(m);
    json_decref(m);
    free(kt_send(&k, "control", "interrupt_request", NULL));
    json_t *msgs = kt_until_idle(&k, id);
    ck_assert_str_eq(cstr(kt_find(msgs, "error", 0), "ename"), "KeyboardInterrupt");
    json_decref(msgs);
    free(id);
}
END_TEST

START_TEST(input_without_allow_stdin_raises)
{
    char *id = kt_send(&k, "shell", "execute_request",
                       json_pack("{s:s, s:b}", "code", "input()", "allow_stdin", 0));
    json_t *msgs = kt_until_idle(&k, id);
    ck_assert_str_eq(cstr(kt_find(msgs, "error", 0), "ename"), "StdinNotImplementedError");
    json_decref(msgs);
    free(id);
}
END_TEST

START_TEST(each_printed_line_streams_separately)
{
    json_t *msgs = kt_execute(&k, "import time\nfor i in range(3):\n    print('line', i)\n"
                                  "    time.sleep(0.2)");
    ck_assert_str_eq(cstr(kt_find(msgs, "stream", 0), "text"), "line 0\n");
    ck_assert_str_eq(cstr(kt_find(msgs, "stream", 1), "text"), "line 1\n");
    ck_assert_str_eq(cstr(kt_find(msgs, "stream", 2), "text"), "line 2\n");
    json_decref(msgs);
}
END_TEST

START_TEST(forked_child_output_stays_off_the_socket)
{
    json_t *msgs = kt_execute(&k, "import os\npid = os.fork()\nif pid == 0:\n"
                                  "    print('from child')\n    os._exit(0)\n"
                                  "os.waitpid(pid, 0)\nprint('from parent')");
    ck_assert_str_eq(cstr(kt_find(msgs, "execute_reply", 0), "status"), "ok");
    ck_assert_str_eq(cstr(kt_find(msgs, "stream", 0), "text"), "from parent\n");
    ck_assert_ptr_null(kt_find(msgs, "stream", 1));
    json_decref(msgs);
    /* and the stream of frames is intact */
    msgs = kt_execute(&k, "'ok'");
    ck_assert_str_eq(cstr(kt_find(msgs, "execute_reply", 0), "status"), "ok");
    json_decref(msgs);
}
END_TEST

START_TEST(rich_reprs_and_display_become_mime_bundles)
{
    json_t *msgs = kt_execute(&k,
        "class R:\n"
        "    def _repr_html_(self): return '<i>r</i>'\n"
        "    def _repr_markdown_(self): return '*r*'\n"
        "    def _repr_svg_(self): return '<svg/>'\n"
        "    def _repr_png_(self): return b'\\x89PNG\\r\\n\\x1a\\n'\n"
        "    def __repr__(self): return 'R()'\n"
        "display(R(), R())\nR()");
    json_t *d = kt_find(msgs, "display_data", 1);
    ck_assert_ptr_nonnull(d);
    json_t *data = json_object_get(content(d), "data");
    ck_assert_str_eq(json_string_value(json_object_get(data, "text/html")), "<i>r</i>");
    ck_assert_str_eq(json_string_value(json_object_get(data, "text/markdown")), "*r*");
    ck_assert_str_eq(json_string_value(json_object_get(data, "image/svg+xml")), "<svg/>");
    ck_assert_str_eq(json_string_value(json_object_get(data, "image/png")), "iVBORw0KGgo=");
    ck_assert_str_eq(json_string_value(json_object_get(data, "text/plain")), "R()");
    data = json_object_get(content(kt_find(msgs, "execute_result", 0)), "data");
    ck_assert_str_eq(json_string_value(json_object_get(data, "text/html")), "<i>r</i>");
    json_decref(msgs);
}
END_TEST

START_TEST(complete_inspect_and_is_complete_answer)
{
    json_decref(kt_execute(&k, "import os\nmy_variable = 1"));
    char *id = kt_send(&k, "shell", "complete_request",
                       json_pack("{s:s, s:i}", "code", "x = os.pa", "cursor_pos", 9));
    json_t *msgs = kt_until_idle(&k, id);
    json_t *r = kt_find(msgs, "complete_reply", 0);
    ck_assert_str_eq(cstr(r, "status"), "ok");
    ck_assert_int_eq(cint(r, "cursor_start"), 4);
    ck_assert_int_eq(cint(r, "cursor_end"), 9);
    char *matches = json_dumps(json_object_get(content(r), "matches"), 0);
    ck_assert_ptr_nonnull(strstr(matches, "\"os.path\""));
    free(matches);
    json_decref(msgs);
    free(id);

    id = kt_send(&k, "shell", "complete_request", json_pack("{s:s, s:i}", "code", "my_v",
                                                          "cursor_pos", 4));
    msgs = kt_until_idle(&k, id);
    matches = json_dumps(json_object_get(content(kt_find(msgs, "complete_reply", 0)), "matches"), 0);
    ck_assert_ptr_nonnull(strstr(matches, "\"my_variable\""));
    free(matches);
    json_decref(msgs);
    free(id);

    id = kt_send(&k, "shell", "inspect_request",
                 json_pack("{s:s, s:i, s:i}", "code", "os.path.join", "cursor_pos", 12,
                           "detail_level", 0));
    msgs = kt_until_idle(&k, id);
    r = kt_find(msgs, "inspect_reply", 0);
    ck_assert(json_is_true(json_object_get(content(r), "found")));
    ck_assert_ptr_nonnull(strstr(json_string_value(json_object_get(
                                     json_object_get(content(r), "data"), "text/plain")),
                                 "join"));
    json_decref(msgs);
    free(id);

    const char *codes[][2] = {{"x = 1", "complete"}, {"for i in range(3):", "incomplete"},
                              {"x = (1,", "incomplete"}, {"x = )", "invalid"}};
    for (size_t i = 0; i < 4; i++) {
        id = kt_send(&k, "shell", "is_complete_request", json_pack("{s:s}", "code", codes[i][0]));
        msgs = kt_until_idle(&k, id);
        ck_assert_str_eq(cstr(kt_find(msgs, "is_complete_reply", 0), "status"), codes[i][1]);
        json_decref(msgs);
        free(id);
    }
}
END_TEST

START_TEST(unknown_request_gets_an_error_reply)
{
    char *id = kt_send(&k, "shell", "frobnicate_request", NULL);
    json_t *msgs = kt_until_idle(&k, id);
    json_t *r = kt_find(msgs, "frobnicate_reply", 0);
    ck_assert_ptr_nonnull(r);
    ck_assert_str_eq(cstr(r, "status"), "error");
    json_decref(msgs);
    free(id);
    /* and the kernel still works */
    msgs = kt_execute(&k, "1");
    ck_assert_str_eq(cstr(kt_find(msgs, "execute_reply", 0), "status"), "ok");
    json_decref(msgs);
}
END_TEST

START_TEST(garbage_frame_is_dropped_and_kernel_continues)
{
    ck_assert_int_eq(kr_frame_write(k.fd, "{not json", 9), 0);
    json_t *msgs = kt_execute(&k, "2 + 2");
    ck_assert_str_eq(cstr(kt_find(msgs, "execute_reply", 0), "status"), "ok");
    json_decref(msgs);
}
END_TEST

START_TEST(shutdown_request_replies_and_exits_0)
{
    char *id = kt_send(&k, "control", "shutdown_request", json_pack("{s:b}", "restart", 0));
    json_t *msgs = kt_until_idle(&k, id);
    json_t *r = kt_find(msgs, "shutdown_reply", 0);
    ck_assert_ptr_nonnull(r);
    ck_assert_str_eq(kr_msg_channel(r), "control");
    ck_assert(json_is_false(json_object_get(content(r), "restart")));
    ck_assert_int_eq(kt_kernel_wait(&k, 30), 0);
    json_decref(msgs);
    free(id);
}
END_TEST

START_TEST(closing_the_socket_ends_the_kernel)
{
    close(k.fd);
    k.fd = -1;
    ck_assert_int_eq(kt_kernel_wait(&k, 30), 0);
}
END_TEST

START_TEST(closing_the_socket_stops_a_running_cell)
{
    char *id = kt_send(&k, "shell", "execute_request", json_pack("{s:s}", "code", "while True: pass"));
    json_t *m;
    while (strcmp(kr_msg_type(m = kt_recv(&k, 60)), "execute_input") != 0)
        json_decref(m);
    json_decref(m);
    free(id);
    close(k.fd);
    k.fd = -1;
    ck_assert_int_eq(kt_kernel_wait(&k, 30), 0);
}
END_TEST

/* --connect: the kernel dials a UNIX socket and sends its token first. */
START_TEST(connect_dials_back_with_token_first)
{
    char *dir = kt_tmpdir();
    char path[200], addr[220];
    snprintf(path, sizeof(path), "%s/k.sock", dir);
    snprintf(addr, sizeof(addr), "unix:%s", path);
    int ls = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    strcpy(sa.sun_path, path);
    ck_assert_int_eq(bind(ls, (struct sockaddr *)&sa, sizeof(sa)), 0);
    ck_assert_int_eq(listen(ls, 1), 0);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        setenv("EDDY_KERNEL_TOKEN", "s3cret-token", 1);
        execl(KERNEL_BIN, KERNEL_BIN, "serve", "--connect", addr, (char *)NULL);
        _exit(127);
    }
    kt_kernel c = {.pid = pid, .fd = accept(ls, NULL, NULL)};
    ck_assert_int_ge(c.fd, 0);
    char *hello;
    size_t n;
    ck_assert_int_eq(kr_frame_read(&hello, &n, c.fd, KR_FRAME_MAX), 0);
    json_t *h = json_loads(hello, 0, NULL);
    ck_assert_str_eq(json_string_value(json_object_get(h, "token")), "s3cret-token");
    ck_assert_int_eq(json_integer_value(json_object_get(h, "pid")), pid);
    json_decref(h);
    free(hello);
    json_t *m = kt_recv(&c, 60);   /* status: starting */
    json_decref(m);
    /* The token is gone from the kernel's environment. */
    json_t *msgs = kt_execute(&c, "import os\nos.environ.get('EDDY_KERNEL_TOKEN', 'absent')");
    ck_assert_str_eq(json_string_value(json_object_get(
                         json_object_get(content(kt_find(msgs, "execute_result", 0)), "data"),
                         "text/plain")), "'absent'");
    json_decref(msgs);
    kt_kernel_stop(&c);
    close(ls);
    kt_rmrf(dir);
    free(dir);
}
END_TEST

START_TEST(serve_rejects_bad_connections)
{
    kt_proc p;
    kt_run(&p, (const char *[]){KERNEL_BIN, "serve", "--fd", "57", NULL}, NULL, NULL, 30);
    ck_assert_int_eq(p.status, 2);
    ck_assert_ptr_nonnull(strstr(p.err, "not an open socket"));
    kt_proc_free(&p);
    kt_run(&p, (const char *[]){KERNEL_BIN, "serve", "--connect", "unix:/nonexistent/k.sock",
                                "--token", "t", NULL}, NULL, NULL, 30);
    ck_assert_int_eq(p.status, 1);
    ck_assert_ptr_nonnull(strstr(p.err, "connect"));
    kt_proc_free(&p);
    kt_run(&p, (const char *[]){KERNEL_BIN, "serve", "--connect", "127.0.0.1:1", NULL}, NULL,
           (const char *[]){"EDDY_KERNEL_TOKEN=", NULL}, 30);
    ck_assert_int_eq(p.status, 2);
    ck_assert_ptr_nonnull(strstr(p.err, "token"));
    kt_proc_free(&p);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("kernel_serve");
    TCase *t = tcase_create("serve");
    tcase_add_checked_fixture(t, setup, teardown);
    tcase_set_timeout(t, 120);
    tcase_add_test(t, kernel_info_reply_names_protocol_and_language);
    tcase_add_test(t, execute_messages_come_in_jupyter_order);
    tcase_add_test(t, execution_count_increments_but_not_when_silent);
    tcase_add_test(t, error_sends_traceback_and_error_reply);
    tcase_add_test(t, sigint_interrupts_busy_loop_and_kernel_lives);
    tcase_add_test(t, interrupt_request_interrupts_sleeping_cell);
    tcase_add_test(t, interrupt_right_after_execute_input_is_reported);
    tcase_add_test(t, matplotlib_figure_arrives_as_png);
    tcase_add_test(t, input_goes_through_stdin_channel);
    tcase_add_test(t, input_without_allow_stdin_raises);
    tcase_add_test(t, interrupt_while_waiting_for_input);
    tcase_add_test(t, each_printed_line_streams_separately);
    tcase_add_test(t, rich_reprs_and_display_become_mime_bundles);
    tcase_add_test(t, forked_child_output_stays_off_the_socket);
    tcase_add_test(t, complete_inspect_and_is_complete_answer);
    tcase_add_test(t, unknown_request_gets_an_error_reply);
    tcase_add_test(t, garbage_frame_is_dropped_and_kernel_continues);
    tcase_add_test(t, shutdown_request_replies_and_exits_0);
    tcase_add_test(t, closing_the_socket_ends_the_kernel);
    tcase_add_test(t, closing_the_socket_stops_a_running_cell);
    suite_add_tcase(s, t);
    TCase *c = tcase_create("connect");
    tcase_set_timeout(c, 120);
    tcase_add_test(c, connect_dials_back_with_token_first);
    tcase_add_test(c, serve_rejects_bad_connections);
    suite_add_tcase(s, c);
    SRunner *r = srunner_create(s);
    srunner_run_all(r, CK_NORMAL);
    int failed = srunner_ntests_failed(r);
    srunner_free(r);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
