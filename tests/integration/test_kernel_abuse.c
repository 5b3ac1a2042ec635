/* Abuse from inside a kernel and through the Jupyter API, against the real
 * server, scheduler, sandbox and eddy-kernel (issue 11, items 4-6):
 *
 *  - frame flood: a cell finds the kernel's socket in /proc/self/fd and
 *    writes 60 MiB frames of garbage, then (a second kernel) well-formed
 *    7 MiB messages in a loop: each kernel is stopped with stop reason
 *    protocol_error, the gateway's RSS stays within RSS_BOUND_MIB of what it
 *    was before (it reached 1.1 GiB before the limits), and another user's
 *    kernel answers print() meanwhile. The socket sits at a high,
 *    close-on-exec descriptor; a kernel that stops reading its socket is
 *    stopped too, and holds no server thread for longer than 5 s;
 *  - print flood: a cell printing without end for 10 s grows eddy.db (+WAL)
 *    by less than DB_BOUND_MIB (157-198 MiB before) and the user sees the
 *    "output dropped" notice;
 *  - journal cap and retention: a kernel's journal stays under its cap with
 *    the latest output kept, and a dead kernel's journal is deleted after
 *    the retention time;
 *  - eddy-kernel's own large output: a 20 MiB line arrives whole in pieces
 *    under the frame limit, a 9 MiB result becomes a notice, a notebook
 *    cell's folded outputs stop at 8 MiB with a note;
 *  - session flood: oversized session fields are refused (413), sessions are
 *    capped per user (429), persist across a restart and go with their
 *    kernel. */
#include "harness.h"
#include "it_db.h"

#include <check.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define RSS_BOUND_MIB 192   /* growth of the gateway's VmRSS during both frame floods */
#define DB_BOUND_MIB  40    /* growth of eddy.db + eddy.db-wal during a 10 s print flood */

static it_server srv;

typedef it_user user;

static void make_user(user *u, const char *name)
{
    ck_assert_int_eq(it_user_make(u, &srv, NULL, NULL, name, 0), 0);
}

static json_t *get_kernel(user *u, const char *kid)
{
    char path[128];
    json_t *j;

    snprintf(path, sizeof(path), "/api/v1/kernels/%s", kid);
    j = it_get_json(&srv, u->hdrs, path);
    ck_assert_msg(j != NULL, "kernel %s: not 200 with JSON", kid);
    return j;
}

/* Wait (up to 120 s) for the kernel to reach `status`; returns its JSON. */
static json_t *wait_status(user *u, const char *kid, const char *status)
{
    json_t *k = it_kernel_wait(&srv, u->hdrs, kid, status, 120);
    ck_assert_msg(k != NULL, "kernel %s never became %s", kid, status);
    return k;
}

static void start_kernel(char *kid, size_t n, user *u, const char *pid)
{
    ck_assert_msg(it_kernel_start(kid, n, &srv, u->hdrs, pid, 120) == 0, "kernel %s never became idle", kid);
}

static void execute(char *msg_id, size_t n, user *u, const char *kid, const char *code)
{
    ck_assert_int_eq(it_kernel_execute(msg_id, n, &srv, u->hdrs, kid, code, NULL), 0);
}

/* `name` signed up, a project of theirs (its id into `pid`, 64 bytes) and a
 * kernel in it (its id into `kid`, 64 bytes), idle. */
static void user_with_kernel(user *u, const char *name, char *pid, char *kid)
{
    make_user(u, name);
    ck_assert_int_eq(it_project_make(pid, 64, &srv, u->hdrs, "abuse", NULL, NULL), 0);
    start_kernel(kid, 64, u, pid);
}

/* The messages of request `parent` up to its idle status (parent NULL: every
 * message until the stream ends). Fails after `timeout_s`. */
static json_t *collect(user *u, const char *kid, const char *parent, long timeout_s)
{
    json_t *msgs = it_kernel_events(&srv, u->hdrs, kid, 0, parent, IT_EV_IDLE, timeout_s, NULL);
    ck_assert_msg(msgs != NULL, "events of %s ended early", kid);
    return msgs;
}

/* Whether `m` is a stream output of request `parent` (of any, when NULL). */
static bool is_stream(const json_t *m, const char *parent)
{
    return strcmp(it_msg_type(m), "stream") == 0 && (!parent || strcmp(it_msg_parent(m), parent) == 0);
}

/* All stream text of `msgs` (of request `parent` only, when not NULL),
 * concatenated (malloc'd). */
static char *stream_text(json_t *msgs, const char *parent)
{
    size_t i, n = 0;
    json_t *m;
    char *out = calloc(1, 1);

    json_array_foreach(msgs, i, m) {
        if (!is_stream(m, parent))
            continue;
        const char *t = it_json_str(json_object_get(m, "content"), "text");
        size_t l = strlen(t);
        out = realloc(out, n + l + 1);
        memcpy(out + n, t, l + 1);
        n += l;
    }
    return out;
}

/* Run `code` in the kernel and return its stream output (malloc'd). */
static char *run(user *u, const char *kid, const char *code)
{
    char mid[64];
    execute(mid, sizeof(mid), u, kid, code);
    json_t *msgs = collect(u, kid, mid, 60);
    char *text = stream_text(msgs, mid);
    json_decref(msgs);
    return text;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* ---- the gateway's memory --------------------------------------------------- */

static long rss_kib(pid_t pid)
{
    char path[64], buf[4096];
    snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
    it_slurp(buf, sizeof(buf), path);
    const char *p = strstr(buf, "VmRSS:");
    return p ? atol(p + 6) : -1;
}

typedef struct sampler {
    pthread_t   t;
    atomic_bool stop;
    atomic_long max_kib;
} sampler;

static void *sample_main(void *arg)
{
    sampler *s = arg;
    while (!atomic_load(&s->stop)) {
        long v = rss_kib(srv.pid);
        if (v > atomic_load(&s->max_kib))
            atomic_store(&s->max_kib, v);
        usleep(20000);
    }
    return NULL;
}

/* ---- tests ------------------------------------------------------------------------- */

/* Finds the kernel's socket as an attacker would. */
#define FIND_SOCKET                                                                 \
    "import os, struct\n"                                                           \
    "fds = []\n"                                                                    \
    "for n in os.listdir('/proc/self/fd'):\n"                                       \
    "    try:\n"                                                                    \
    "        if os.readlink('/proc/self/fd/' + n).startswith('socket:'):\n"         \
    "            fds.append(int(n))\n"                                              \
    "    except OSError:\n"                                                         \
    "        pass\n"                                                                \
    "fd = max(fds)\n"                                                               \
    "def put(frame):\n"                                                             \
    "    v = memoryview(frame)\n"                                                   \
    "    while v:\n"                                                                \
    "        v = v[os.write(fd, v):]\n"

static const char GARBAGE_FLOOD[] = FIND_SOCKET
    "body = b'x' * (60 << 20)\n"
    "frame = struct.pack('>I', len(body)) + body\n"
    "for i in range(20):\n"
    "    put(frame)\n";

static const char MESSAGE_FLOOD[] = FIND_SOCKET
    "import json\n"
    "msg = json.dumps({'channel': 'iopub', 'header': {'msg_id': 'f', 'msg_type': 'display_data'},\n"
    "                  'parent_header': {}, 'metadata': {},\n"
    "                  'content': {'data': {'text/plain': 'y' * (7 << 20)}, 'metadata': {}}}).encode()\n"
    "frame = struct.pack('>I', len(msg)) + msg\n"
    "for i in range(200):\n"
    "    put(frame)\n";

/* While alice's kernel floods, bob's kernel runs print() again and again
 * until alice's is dead; every answer must come. Returns the slowest one's
 * seconds and sets *rounds. */
static double bob_meanwhile(user *bob, const char *kb, user *alice, const char *ka, int *rounds)
{
    double worst = 0;

    *rounds = 0;
    for (;;) {
        char code[64], want[64];
        json_t *k = get_kernel(alice, ka);
        bool dead = strcmp(it_json_str(k, "status"), "dead") == 0;
        json_decref(k);
        if (dead && *rounds > 0)
            return worst;
        ck_assert_int_lt(*rounds, 2000);
        snprintf(code, sizeof(code), "print(%d)", *rounds);
        snprintf(want, sizeof(want), "%d\n", *rounds);
        double t0 = now_s();
        char *out = run(bob, kb, code);
        double took = now_s() - t0;
        ck_assert_str_eq(out, want);
        free(out);
        if (took > worst)
            worst = took;
        (*rounds)++;
    }
}

START_TEST(frame_flood_stops_the_kernel_and_leaves_the_gateway_bounded)
{
    user alice, bob;
    char pa[64], pb[64], ka[64], kb[64], mid[64];
    sampler smp = {0};

    ck_assert_int_eq(it_server_start(&srv, NULL), 0);
    user_with_kernel(&bob, "bob", pb, kb);
    user_with_kernel(&alice, "alice", pa, ka);

    /* the socket sits high and close-on-exec, the only socket there */
    char *out = run(&bob, kb,
                    "import os, fcntl\n"
                    "def link(n):\n"
                    "    try:\n"
                    "        return os.readlink('/proc/self/fd/' + n)\n"
                    "    except OSError:\n"
                    "        return ''\n"
                    "s = [int(n) for n in os.listdir('/proc/self/fd') if link(n).startswith('socket:')]\n"
                    "print('sockets', len(s), 'fd', min(s), 'cloexec', fcntl.fcntl(min(s), fcntl.F_GETFD) & 1)\n");
    int nsock = 0, fd = 0, cloexec = 0;
    ck_assert_msg(sscanf(out, "sockets %d fd %d cloexec %d", &nsock, &fd, &cloexec) == 3, "got: %s", out);
    ck_assert_int_eq(nsock, 1);
    ck_assert_int_ge(fd, 900);
    ck_assert_int_eq(cloexec, 1);
    free(out);

    long rss0 = rss_kib(srv.pid);
    ck_assert_int_gt(rss0, 0);
    atomic_store(&smp.max_kib, rss0);
    ck_assert_int_eq(pthread_create(&smp.t, NULL, sample_main, &smp), 0);

    /* 1: 60 MiB frames of garbage */
    int n_garbage, n_messages;
    execute(mid, sizeof(mid), &alice, ka, GARBAGE_FLOOD);
    double t_garbage = bob_meanwhile(&bob, kb, &alice, ka, &n_garbage);
    json_t *k = get_kernel(&alice, ka);
    ck_assert_str_eq(it_json_str(k, "stop_reason"), "protocol_error");
    json_decref(k);
    /* alice is told why */
    json_t *msgs = collect(&alice, ka, NULL, 60);
    out = stream_text(msgs, NULL);
    ck_assert_msg(strstr(out, "protocol_error") && strstr(out, "over the limit"), "alice saw: %.300s", out);
    free(out);
    json_decref(msgs);

    /* 2: well-formed 7 MiB messages, as fast as the socket takes them */
    start_kernel(ka, sizeof(ka), &alice, pa);
    execute(mid, sizeof(mid), &alice, ka, MESSAGE_FLOOD);
    double t_messages = bob_meanwhile(&bob, kb, &alice, ka, &n_messages);
    k = get_kernel(&alice, ka);
    ck_assert_str_eq(it_json_str(k, "stop_reason"), "protocol_error");
    json_decref(k);
    out = run(&bob, kb, "print(3)");
    ck_assert_str_eq(out, "3\n");
    free(out);

    atomic_store(&smp.stop, true);
    pthread_join(smp.t, NULL);
    long grew = (atomic_load(&smp.max_kib) - rss0) / 1024;
    fprintf(stderr,
            "frame flood: gateway VmRSS %ld MiB before, peak %ld MiB (+%ld MiB); bob's print() at worst %.0f ms "
            "(%d runs) during the 60 MiB frames, %.0f ms (%d runs) during the 7 MiB messages\n",
            rss0 / 1024, atomic_load(&smp.max_kib) / 1024, grew, t_garbage * 1000, n_garbage, t_messages * 1000,
            n_messages);
    ck_assert_msg(grew < RSS_BOUND_MIB, "the gateway grew by %ld MiB (bound %d)", grew, RSS_BOUND_MIB);
    ck_assert_int_eq(it_server_stop(&srv), 0);
}
END_TEST

typedef struct poster {
    pthread_t   t;
    user       *u;
    const char *kid;
    long        status;
} poster;

static void *post_main(void *arg)
{
    poster *p = arg;
    char path[128];
    size_t n = 256 << 10;
    char *body = malloc(n + 64);
    it_resp r;

    snprintf(path, sizeof(path), "/api/v1/kernels/%s/execute", p->kid);
    int o = snprintf(body, 64, "{\"code\": \"x = '");
    memset(body + o, 'a', n);
    memcpy(body + o + n, "'\"}", 4);
    it_request(&r, &srv, "POST", path, body, p->u->hdrs);
    p->status = r.status;
    it_resp_free(&r);
    free(body);
    return NULL;
}

/* A kernel process that stops reading its socket (here: it stops itself)
 * holds no gateway thread for long: senders give up after 5 s, the kernel is
 * stopped (protocol_error), and the server and another user's kernel answer
 * meanwhile. Before, every request for it blocked its server thread for
 * good. */
START_TEST(a_kernel_that_stops_reading_is_stopped_and_holds_no_thread)
{
    user alice, bob;
    char pa[64], pb[64], ka[64], kb[64], mid[64];
    poster ps[8];
    it_resp r;

    ck_assert_int_eq(it_server_start(&srv, NULL), 0);
    user_with_kernel(&bob, "bob", pb, kb);
    user_with_kernel(&alice, "alice", pa, ka);
    execute(mid, sizeof(mid), &alice, ka, "import os, signal\nos.kill(os.getpid(), signal.SIGSTOP)");
    usleep(500000);
    for (int i = 0; i < 8; i++) {
        ps[i] = (poster){.u = &alice, .kid = ka};
        ck_assert_int_eq(pthread_create(&ps[i].t, NULL, post_main, &ps[i]), 0);
    }
    usleep(500000);
    it_request(&r, &srv, "GET", "/healthz", NULL, NULL);
    ck_assert_int_eq(r.status, 200);
    it_resp_free(&r);
    char *out = run(&bob, kb, "print('bob')");
    ck_assert_str_eq(out, "bob\n");
    free(out);
    int refused = 0;
    for (int i = 0; i < 8; i++) {
        pthread_join(ps[i].t, NULL);
        ck_assert_msg(ps[i].status == 202 || ps[i].status == 409 || ps[i].status == 503, "execute %d: %ld", i,
                      ps[i].status);
        refused += ps[i].status != 202;
    }
    ck_assert_int_gt(refused, 0);
    json_t *k = wait_status(&alice, ka, "dead");
    ck_assert_str_eq(it_json_str(k, "stop_reason"), "protocol_error");
    json_decref(k);
    ck_assert_int_eq(it_server_stop(&srv), 0);
}
END_TEST

static long long file_size(const char *dir, const char *name)
{
    char path[400];
    struct stat st;
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    return stat(path, &st) == 0 ? (long long)st.st_size : 0;
}

START_TEST(print_flood_is_dropped_with_a_notice_and_the_database_stays_small)
{
    user alice;
    char pa[64], ka[64], mid[64];

    ck_assert_int_eq(it_server_start(&srv, NULL), 0);
    user_with_kernel(&alice, "alice", pa, ka);
    long long db0 = file_size(srv.data_dir, "eddy.db") + file_size(srv.data_dir, "eddy.db-wal");
    execute(mid, sizeof(mid), &alice, ka,
            "import time\n"
            "t = time.time()\n"
            "i = 0\n"
            "while time.time() - t < 10:\n"
            "    print(i, 'x' * 200)\n"
            "    i += 1\n");
    json_t *msgs = collect(&alice, ka, mid, 120);
    long long db1 = file_size(srv.data_dir, "eddy.db") + file_size(srv.data_dir, "eddy.db-wal");
    char *out = stream_text(msgs, mid);
    ck_assert_msg(strstr(out, "output dropped") && strstr(out, "kernel_output_bytes_per_s"),
                  "no notice in %zu bytes of output", strlen(out));
    fprintf(stderr, "print flood: %zu bytes of output shown, eddy.db+wal grew by %lld KiB\n", strlen(out),
            (db1 - db0) / 1024);
    ck_assert_msg(db1 - db0 < (long long)DB_BOUND_MIB << 20, "eddy.db+wal grew by %lld MiB (bound %d)",
                  (db1 - db0) >> 20, DB_BOUND_MIB);
    free(out);
    json_decref(msgs);
    /* the kernel lives on, and prints again once its rate fell */
    out = run(&alice, ka, "import time\ntime.sleep(3)\nprint('still here')");
    ck_assert_str_eq(out, "still here\n");
    free(out);
    ck_assert_str_eq(it_json_str(get_kernel(&alice, ka), "status"), "idle");
    ck_assert_int_eq(it_server_stop(&srv), 0);
}
END_TEST

/* The rows of kernel `kid`'s journal once they are gone, or after 30 s. */
static long long journal_rows_once_swept(const char *kid)
{
    long long rows = -1;
    for (int i = 0; i < 300 && rows != 0; i++) {
        rows = it_db_int(&srv, "SELECT count(*) FROM kernel_journal WHERE kernel_id = '%s'", kid);
        if (rows != 0)
            usleep(100000);
    }
    return rows;
}

START_TEST(journal_is_capped_and_a_dead_kernels_journal_expires)
{
    static const char *const env[] = {"EDDY_KERNEL_JOURNAL_MAX_BYTES=1M", "EDDY_KERNEL_OUTPUT_BYTES_PER_S=0",
                                      "EDDY_KERNEL_OUTPUT_MSGS_PER_S=0", "EDDY_KERNEL_JOURNAL_RETENTION_MS=2000",
                                      NULL};
    user alice;
    char pa[64], ka[64], path[128];
    it_resp r;

    ck_assert_int_eq(it_server_start(&srv, env), 0);
    user_with_kernel(&alice, "alice", pa, ka);
    /* about 6 MB of output into a 1 MiB journal */
    char *out = run(&alice, ka, "for i in range(30):\n    print(str(i % 10) * 200000)\n");
    free(out);
    out = run(&alice, ka, "print('the latest')");
    ck_assert_str_eq(out, "the latest\n");
    free(out);
    long long bytes =
        it_db_int(&srv, "SELECT sum(length(CAST(msg AS BLOB))) FROM kernel_journal WHERE kernel_id = '%s'", ka);
    long long first = it_db_int(&srv, "SELECT min(seq) FROM kernel_journal WHERE kernel_id = '%s'", ka);
    ck_assert_msg(bytes <= 1 << 20, "journal holds %lld bytes (cap 1 MiB)", bytes);
    ck_assert_int_gt(first, 1);   /* the oldest went */
    /* a dead kernel's journal goes after the retention time; its row stays */
    snprintf(path, sizeof(path), "/api/v1/kernels/%s", ka);
    it_request(&r, &srv, "DELETE", path, NULL, alice.hdrs);
    ck_assert_int_eq(r.status, 200);
    it_resp_free(&r);
    ck_assert_int_eq(journal_rows_once_swept(ka), 0);
    json_t *k = get_kernel(&alice, ka);
    ck_assert_str_eq(it_json_str(k, "status"), "dead");
    json_decref(k);
    ck_assert_int_eq(it_server_stop(&srv), 0);
}
END_TEST

/* eddy-kernel keeps its own frames under the limit: a 20 MiB line arrives
 * whole in pieces, a 9 MiB result is replaced by a notice, the kernel lives. */
START_TEST(large_output_is_split_or_replaced_and_the_kernel_lives)
{
    static const char *const env[] = {"EDDY_KERNEL_OUTPUT_BYTES_PER_S=0", "EDDY_KERNEL_OUTPUT_MSGS_PER_S=0", NULL};
    user alice;
    char pa[64], ka[64], mid[64];

    ck_assert_int_eq(it_server_start(&srv, env), 0);
    user_with_kernel(&alice, "alice", pa, ka);
    execute(mid, sizeof(mid), &alice, ka, "print('z' * (20 << 20))");
    json_t *msgs = collect(&alice, ka, mid, 120);
    char *out = stream_text(msgs, mid);
    size_t pieces = 0, i;
    json_t *m;
    json_array_foreach(msgs, i, m)
        pieces += is_stream(m, mid);
    ck_assert_uint_eq(strlen(out), ((size_t)20 << 20) + 1);
    ck_assert_uint_ge(pieces, 20);
    free(out);
    json_decref(msgs);
    out = run(&alice, ka,
              "class Big:\n"
              "    def _repr_html_(self):\n"
              "        return 'h' * (9 << 20)\n"
              "Big()\n");
    ck_assert_msg(strstr(out, "over the limit of 8 MiB"), "got: %.300s", out);
    free(out);
    out = run(&alice, ka, "print('alive')");
    ck_assert_str_eq(out, "alive\n");
    free(out);

    /* folded into a notebook, a cell's outputs stop at 8 MiB with a note */
    char path[160];
    it_resp r;
    snprintf(path, sizeof(path), "/api/v1/projects/%s/files/big.ipynb", pa);
    it_request(&r, &srv, "PUT", path,
               "{\"nbformat\": 4, \"nbformat_minor\": 5, \"metadata\": {}, \"cells\": [{\"id\": \"c1\", "
               "\"cell_type\": \"code\", \"metadata\": {}, \"execution_count\": null, \"outputs\": [], "
               "\"source\": \"\"}]}",
               alice.hdrs);
    ck_assert_msg(r.status < 300, "%ld %s", r.status, r.body);
    it_resp_free(&r);
    char xpath[128];
    snprintf(xpath, sizeof(xpath), "/api/v1/kernels/%s/execute", ka);
    it_request(&r, &srv, "POST", xpath,
               "{\"code\": \"for i in range(12):\\n    print('w' * (1 << 20))\", \"cell_id\": \"c1\", "
               "\"notebook_path\": \"big.ipynb\"}",
               alice.hdrs);
    ck_assert_msg(r.status == 202, "%ld %s", r.status, r.body);
    it_resp_free(&r);
    bool folded = false;
    for (int tries = 0; tries < 600 && !folded; tries++) {
        it_request(&r, &srv, "GET", path, NULL, alice.hdrs);
        ck_assert_int_eq(r.status, 200);
        json_t *nb = json_loadb(r.body, r.body_len, 0, NULL);
        json_t *cell = json_array_get(json_object_get(nb, "cells"), 0);
        json_t *outs = json_object_get(cell, "outputs");
        size_t total = 0, j;
        json_t *o;
        json_array_foreach(outs, j, o) {
            const char *t = it_json_str(o, "text");
            total += t ? strlen(t) : 0;
            folded |= t && strstr(t, "not saved in the notebook") != NULL;
        }
        if (folded) {
            ck_assert_uint_le(total, (size_t)9 << 20);
            ck_assert_uint_ge(total, (size_t)6 << 20);
        }
        json_decref(nb);
        it_resp_free(&r);
        if (!folded)
            usleep(100000);
    }
    ck_assert_msg(folded, "the notebook never got the cell's outputs with the note");
    ck_assert_int_eq(it_server_stop(&srv), 0);
}
END_TEST


/* Past a user's newest kernel_dead_journals_per_user dead kernels, older
 * ones' journals go even with no retention time. */
START_TEST(a_user_keeps_the_journals_of_their_newest_dead_kernels_only)
{
    static const char *const env[] = {"EDDY_KERNEL_JOURNAL_RETENTION_MS=0", "EDDY_KERNEL_DEAD_JOURNALS_PER_USER=1",
                                      "EDDY_KERNEL_SWEEP_MS=300", NULL};
    user alice;
    char pa[64], ka[64], kb[64], path[128];
    char *out;

    ck_assert_int_eq(it_server_start(&srv, env), 0);
    user_with_kernel(&alice, "alice", pa, ka);
    out = run(&alice, ka, "print('first')");
    free(out);
    snprintf(path, sizeof(path), "/api/v1/kernels/%s", ka);
    ck_assert_int_eq(it_request_status(&srv, "DELETE", path, NULL, alice.hdrs), 200);
    json_decref(wait_status(&alice, ka, "dead"));
    start_kernel(kb, sizeof(kb), &alice, pa);
    out = run(&alice, kb, "print('second')");
    free(out);
    snprintf(path, sizeof(path), "/api/v1/kernels/%s", kb);
    ck_assert_int_eq(it_request_status(&srv, "DELETE", path, NULL, alice.hdrs), 200);
    json_decref(wait_status(&alice, kb, "dead"));
    ck_assert_int_eq(journal_rows_once_swept(ka), 0);
    ck_assert_int_gt(it_db_int(&srv, "SELECT count(*) FROM kernel_journal WHERE kernel_id = '%s'", kb), 0);
    ck_assert_int_eq(it_server_stop(&srv), 0);
}
END_TEST

static size_t session_count(user *u)
{
    it_resp r;
    it_request(&r, &srv, "GET", "/api/sessions", NULL, u->hdrs);
    ck_assert_int_eq(r.status, 200);
    size_t n = json_array_size(r.json);
    it_resp_free(&r);
    return n;
}

START_TEST(session_flood_is_refused_capped_persisted_and_deleted_with_the_kernel)
{
    user alice;
    char kid[64], body[512], path[128];
    it_resp r;

    ck_assert_int_eq(it_server_start(&srv, NULL), 0);
    srv.keep_data = 1;
    make_user(&alice, "alice");
    it_request(&r, &srv, "POST", "/api/kernels", "{\"name\":\"python3\"}", alice.hdrs);
    ck_assert_msg(r.status == 201, "kernel: %ld %s", r.status, r.body);
    snprintf(kid, sizeof(kid), "%s", it_json_str(r.json, "id"));
    it_resp_free(&r);

    /* a 40 MiB path, and 5000-byte name and type, are refused */
    size_t big = (size_t)40 << 20;
    char *huge = malloc(big + 256);
    int n = snprintf(huge, 256, "{\"type\":\"notebook\",\"kernel\":{\"id\":\"%s\"},\"path\":\"", kid);
    memset(huge + n, 'a', big);
    memcpy(huge + n + big, "\"}", 3);
    long rss0 = rss_kib(srv.pid);
    for (int i = 0; i < 6; i++) {
        it_request(&r, &srv, "POST", "/api/sessions", huge, alice.hdrs);
        ck_assert_msg(r.status == 413, "40 MiB path: %ld %.200s", r.status, r.body);
        ck_assert_ptr_nonnull(strstr(r.body, "path"));
        it_resp_free(&r);
    }
    long rss1 = rss_kib(srv.pid);
    for (int i = 0; i < 6; i++)
        ck_assert_int_eq(it_request_status(&srv, "POST", "/api/sessions", huge, alice.hdrs), 413);
    long rss2 = rss_kib(srv.pid);
    free(huge);
    fprintf(stderr,
            "session flood: gateway VmRSS %ld MiB before six 40 MiB paths, %ld MiB after, %ld MiB after six more\n",
            rss0 / 1024, rss1 / 1024, rss2 / 1024);
    /* Nothing of them is kept (six took it +273 MiB before): what remains is
     * the request bodies, freed but cached by malloc's arenas. */
    ck_assert_msg(rss2 - rss0 < 256 * 1024, "the gateway grew by %ld MiB over twelve refused sessions",
                  (rss2 - rss0) / 1024);
    char field[5001];
    memset(field, 'n', 5000);
    field[5000] = '\0';
    snprintf(body, sizeof(body), "{\"path\":\"x.ipynb\",\"kernel\":{\"id\":\"%s\"},\"name\":\"", kid);
    char *nb = malloc(strlen(body) + 5100);
    sprintf(nb, "%s%s\"}", body, field);
    ck_assert_int_eq(it_request_status(&srv, "POST", "/api/sessions", nb, alice.hdrs), 413);
    sprintf(nb, "{\"path\":\"x.ipynb\",\"kernel\":{\"id\":\"%s\"},\"type\":\"%s\"}", kid, field);
    ck_assert_int_eq(it_request_status(&srv, "POST", "/api/sessions", nb, alice.hdrs), 413);
    ck_assert_uint_eq(session_count(&alice), 0);

    /* 64 sessions, then 429 */
    char first[64] = "";
    for (int i = 0; i < 64; i++) {
        snprintf(body, sizeof(body), "{\"path\":\"nb-%d.ipynb\",\"type\":\"notebook\",\"kernel\":{\"id\":\"%s\"}}", i,
                 kid);
        it_request(&r, &srv, "POST", "/api/sessions", body, alice.hdrs);
        ck_assert_msg(r.status == 201, "session %d: %ld %s", i, r.status, r.body);
        if (i == 0)
            snprintf(first, sizeof(first), "%s", it_json_str(r.json, "id"));
        it_resp_free(&r);
    }
    snprintf(body, sizeof(body), "{\"path\":\"one-more.ipynb\",\"kernel\":{\"id\":\"%s\"}}", kid);
    it_request(&r, &srv, "POST", "/api/sessions", body, alice.hdrs);
    ck_assert_int_eq(r.status, 429);
    ck_assert_msg(strstr(r.body, "64"), "%s", r.body);
    it_resp_free(&r);
    ck_assert_uint_eq(session_count(&alice), 64);
    /* renaming to an oversized path is refused too */
    snprintf(path, sizeof(path), "/api/sessions/%s", first);
    sprintf(nb, "{\"path\":\"%s\"}", field);
    ck_assert_int_eq(it_request_status(&srv, "PATCH", path, nb, alice.hdrs), 413);
    free(nb);

    /* they survive a restart (their kernel died with the server) */
    char data[256];
    snprintf(data, sizeof(data), "%s", srv.data_dir);
    ck_assert_int_eq(it_server_stop(&srv), 0);
    ck_assert_int_eq(it_server_start_in(&srv, data, NULL), 0);
    srv.keep_data = 0;
    ck_assert_uint_eq(session_count(&alice), 64);
    it_request(&r, &srv, "GET", path, NULL, alice.hdrs);
    ck_assert_int_eq(r.status, 200);
    ck_assert_str_eq(it_json_str(r.json, "path"), "nb-0.ipynb");
    ck_assert(json_is_null(json_object_get(r.json, "kernel")));   /* died with the server: clients start one */
    it_resp_free(&r);
    /* opening one of them again gets it a new kernel, as Jupyter would */
    it_request(&r, &srv, "POST", "/api/sessions", "{\"path\":\"nb-1.ipynb\",\"kernel\":{\"name\":\"python3\"}}",
               alice.hdrs);
    ck_assert_msg(r.status == 201, "%ld %s", r.status, r.body);
    char k2[64];
    snprintf(k2, sizeof(k2), "%s", it_json_str(json_object_get(r.json, "kernel"), "id") ?: "");
    it_resp_free(&r);
    ck_assert_uint_eq(strlen(k2), 36);
    ck_assert_str_ne(k2, kid);
    ck_assert_uint_eq(session_count(&alice), 64);
    /* and they go with their kernel: the dead one through /api/kernels, */
    snprintf(path, sizeof(path), "/api/kernels/%s", kid);
    ck_assert_int_eq(it_request_status(&srv, "DELETE", path, NULL, alice.hdrs), 204);
    ck_assert_uint_eq(session_count(&alice), 1);
    /* the live one through /api/v1/kernels */
    snprintf(path, sizeof(path), "/api/v1/kernels/%s", k2);
    ck_assert_int_eq(it_request_status(&srv, "DELETE", path, NULL, alice.hdrs), 200);
    ck_assert_uint_eq(session_count(&alice), 0);
    ck_assert_int_eq(it_db_int(&srv, "SELECT count(*) FROM jupyter_sessions"), 0);
    ck_assert_int_eq(it_server_stop(&srv), 0);
}
END_TEST

int main(void)
{
    const TTest *tests[] = {frame_flood_stops_the_kernel_and_leaves_the_gateway_bounded,
                            a_kernel_that_stops_reading_is_stopped_and_holds_no_thread,
                            print_flood_is_dropped_with_a_notice_and_the_database_stays_small,
                            journal_is_capped_and_a_dead_kernels_journal_expires,
                            large_output_is_split_or_replaced_and_the_kernel_lives,
                            a_user_keeps_the_journals_of_their_newest_dead_kernels_only,
                            session_flood_is_refused_capped_persisted_and_deleted_with_the_kernel, NULL};
    return it_tests_run("kernel_abuse", 240, NULL, NULL, tests);
}
