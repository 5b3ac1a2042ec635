/* The kernel-output fold and the editor's autosave never lose a cell or an
 * output (issue 12 item 6), against the real server, sandbox and
 * eddy-kernel.
 *
 * A cell prints a numbered line every 20 ms for 3 s with cell_id and
 * notebook_path, so the hub folds its outputs into the working-tree
 * notebook; meanwhile an editor, as the web app's autosave does, GETs the
 * notebook with its ETag, adds cells and edits the sources of others, and
 * PUTs it with If-Match; on 412 it GETs again and reapplies its edits onto
 * what the server has (the web app's merge: the server's outputs, our
 * sources). It goes on a little after the cell ends, to meet the fold's
 * final write. After a settle the notebook must hold every cell the editor
 * added or edited with the editor's source, and the streaming cell's
 * outputs must be exactly what the kernel's event stream delivered, every
 * line in order.
 *
 * Second case: the streaming cell itself rewrites the notebook in place
 * (open(..., 'w'), a copy with one more cell, written in two halves with a
 * pause between, so the fold and the editor meet a half-written file).
 * After settling, the kernel's cell, every editor cell and every output are
 * there. (Kernel code writes the tree without the project's lock: a kernel
 * write landing between a fold's ETag check and its rename, a window of one
 * rename, is replaced; kernels/README.md says so. Writes of the editor and
 * of the kernel made in whole before or after it are never lost.)
 *
 * Third: the kernel is stopped while a cell runs; the outputs it printed
 * before the stop are in the notebook (the last flush writes every fold,
 * due or not). */
#include "harness.h"

#include <check.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static it_server srv;
static char dir[256], admin_cookie[600], admin_csrf[300];

static const char *const base_env[] = {"EDDY_STOP_GRACE_MS=1000", NULL};

static const char NOTEBOOK[] =
    "{\"nbformat\": 4, \"nbformat_minor\": 5, \"metadata\": {}, \"cells\": ["
    "{\"id\": \"intro\", \"cell_type\": \"markdown\", \"metadata\": {}, \"source\": \"# fold\"},"
    "{\"id\": \"a\", \"cell_type\": \"code\", \"metadata\": {}, \"execution_count\": null, \"outputs\": [],"
    " \"source\": \"x = 0\"},"
    "{\"id\": \"stream\", \"cell_type\": \"code\", \"metadata\": {}, \"execution_count\": null, \"outputs\": [],"
    " \"source\": \"for i in range(150): ...\"},"
    "{\"id\": \"b\", \"cell_type\": \"code\", \"metadata\": {}, \"execution_count\": null, \"outputs\": [],"
    " \"source\": \"y = 0\"},"
    "{\"id\": \"notes\", \"cell_type\": \"markdown\", \"metadata\": {}, \"source\": \"notes\"}]}";

/* 150 lines, 20 ms apart. */
static const char STREAM_CODE[] = "import time\n"
                                  "for i in range(150):\n"
                                  "    print(f'line {i:03d}', flush=True)\n"
                                  "    time.sleep(0.02)\n";

/* The same, and kernel code rewrites the notebook in place with one more
 * cell, in two halves 0.4 s apart: once mid-stream, and once from a thread
 * started 0.1 s before the cell ends, so that the cell's last outputs
 * arrive while the notebook is half written. */
static const char STREAM_REWRITE_CODE[] =
    "import time, json, threading\n"
    "def rewrite(cid):\n"
    "    p = '/home/aistudio/work/nb.ipynb'\n"
    "    with open(p) as f:\n"
    "        nb = json.load(f)\n"
    "    nb['cells'].append({'id': cid, 'cell_type': 'code', 'metadata': {},\n"
    "                        'execution_count': None, 'outputs': [], 'source': '# from the kernel'})\n"
    "    s = json.dumps(nb, indent=1)\n"
    "    with open(p, 'w') as f:\n"
    "        f.write(s[:len(s) // 2])\n"
    "        f.flush()\n"
    "        time.sleep(0.4)\n"
    "        f.write(s[len(s) // 2:])\n"
    "for i in range(150):\n"
    "    print(f'line {i:03d}', flush=True)\n"
    "    if i == 75:\n"
    "        rewrite('kernel-cell')\n"
    "    if i == 145:\n"
    "        threading.Thread(target=rewrite, args=('kernel-cell-2',)).start()\n"
    "    time.sleep(0.02)\n";

static void boot(void)
{
    ck_assert_int_eq(it_admin_server_start(&srv, dir, sizeof(dir), "fold", base_env, admin_cookie,
                                           sizeof(admin_cookie), admin_csrf, sizeof(admin_csrf)),
                     0);
}

static void shutdown_all(void)
{
    ck_assert_int_eq(it_server_stop(&srv), 0);
    ck_assert_int_eq(it_dir_remove(dir), 0);
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* ---- the editor -------------------------------------------------------------------- */

#define MAX_ADDED 400

/* What the editor wants in the notebook: cells it added (after cell "b"),
 * and the sources of cells "a" and "b". */
typedef struct editor {
    const it_user *u;
    char  path[256];             /* /api/v1/projects/<pid>/files/nb.ipynb */
    int   nadded;
    char  added[MAX_ADDED][16];
    char  a_src[32], b_src[32];
    int   puts, conflicts, torn;  /* PUTs that won; 412s; GETs of a notebook being rewritten */
} editor;

static json_t *cell_by_id(const json_t *nb, const char *id)
{
    size_t i;
    json_t *c;

    json_array_foreach(json_object_get(nb, "cells"), i, c)
        if (strcmp(it_json_str(c, "id"), id) == 0)
            return c;
    return NULL;
}

static size_t cell_index(const json_t *nb, const char *id)
{
    size_t i;
    json_t *c;

    json_array_foreach(json_object_get(nb, "cells"), i, c)
        if (strcmp(it_json_str(c, "id"), id) == 0)
            return i;
    return (size_t)-1;
}

/* Our edits onto the server's notebook: our sources, its outputs. */
static void apply_edits(const editor *e, json_t *nb)
{
    json_t *cells = json_object_get(nb, "cells");
    json_t *c;

    if ((c = cell_by_id(nb, "a")) != NULL)
        json_object_set_new(c, "source", json_string(e->a_src));
    if ((c = cell_by_id(nb, "b")) != NULL)
        json_object_set_new(c, "source", json_string(e->b_src));
    for (int i = 0; i < e->nadded; i++) {
        char src[64];
        snprintf(src, sizeof(src), "# editor %s", e->added[i]);
        if ((c = cell_by_id(nb, e->added[i])) != NULL) {
            json_object_set_new(c, "source", json_string(src));
            continue;
        }
        size_t at = cell_index(nb, "b");
        at = at == (size_t)-1 ? json_array_size(cells) : at + 1;
        json_array_insert_new(cells, at,
                              json_pack("{s:s, s:s, s:{}, s:s}", "id", e->added[i], "cell_type", "markdown",
                                        "metadata", "source", src));
    }
}

/* One autosave: GET with its ETag, our edits, PUT with If-Match; on 412 (or a
 * notebook half-written by kernel code) again. */
static void editor_save(editor *e)
{
    for (int attempt = 0; attempt < 200; attempt++) {
        it_resp r;
        char etag[128], ifm[160];

        it_request(&r, &srv, "GET", e->path, NULL, e->u->hdrs);
        ck_assert_msg(r.status == 200, "GET notebook: %ld %s", r.status, r.body);
        snprintf(etag, sizeof(etag), "%s", it_resp_header(&r, "ETag") ?: "");
        ck_assert_msg(etag[0], "GET notebook: no ETag");
        json_t *nb = json_loadb(r.body, r.body_len, 0, NULL);
        it_resp_free(&r);
        if (nb == NULL) {
            e->torn++;   /* kernel code is rewriting it in place */
            sleep_ms(10);
            continue;
        }
        apply_edits(e, nb);
        char *text = json_dumps(nb, JSON_INDENT(1) | JSON_PRESERVE_ORDER);
        json_decref(nb);
        snprintf(ifm, sizeof(ifm), "If-Match: %s", etag);
        const char *hdrs[] = {e->u->hdrs[0], e->u->hdrs[1], ifm, NULL};
        it_request(&r, &srv, "PUT", e->path, text, hdrs);
        free(text);
        long st = r.status;
        it_resp_free(&r);
        if (st == 412) {
            e->conflicts++;
            continue;
        }
        ck_assert_msg(st == 200 || st == 201, "PUT notebook: %ld", st);
        e->puts++;
        return;
    }
    ck_abort_msg("the editor could not save in 200 tries");
}

/* One round of editing: new sources for "a" and "b", every 4th round a new
 * cell, saved. */
static void editor_round(editor *e, int round)
{
    if (round % 4 == 1 && e->nadded < MAX_ADDED)
        snprintf(e->added[e->nadded++], sizeof(e->added[0]), "ed-%d", round);
    snprintf(e->a_src, sizeof(e->a_src), "x = %d", round);
    snprintf(e->b_src, sizeof(e->b_src), "y = %d", round);
    editor_save(e);
}

/* ---- the kernel's event stream, read on a thread ------------------------------------ */

typedef struct collector {
    const it_user *u;
    const char *kid, *mid;
    json_t *msgs;
    volatile int done;
} collector;

static void *collect_main(void *p)
{
    collector *c = p;
    c->msgs = it_kernel_events(&srv, c->u->hdrs, c->kid, 0, c->mid, IT_EV_IDLE, 60, NULL);
    __atomic_store_n(&c->done, 1, __ATOMIC_SEQ_CST);
    return NULL;
}

/* The stdout the event stream delivered for request `mid`, concatenated. */
static char *stream_text(const json_t *msgs, const char *mid)
{
    size_t i, len = 0;
    json_t *m;
    char *out = calloc(1, 1);

    json_array_foreach(msgs, i, m) {
        const json_t *content = json_object_get(m, "content");
        if (strcmp(it_msg_type(m), "stream") != 0 || strcmp(it_msg_parent(m), mid) != 0 ||
            strcmp(it_json_str(content, "name"), "stdout") != 0)
            continue;
        const char *t = it_json_str(content, "text");
        size_t n = strlen(t);
        out = realloc(out, len + n + 1);
        memcpy(out + len, t, n + 1);
        len += n;
    }
    return out;
}

/* The stdout folded into cell `id` of `nb`, concatenated ("" none). */
static char *folded_text(const json_t *nb, const char *id)
{
    const json_t *c = cell_by_id(nb, id);
    size_t i, len = 0;
    json_t *o;
    char *out = calloc(1, 1);

    json_array_foreach(json_object_get(c, "outputs"), i, o) {
        if (strcmp(it_json_str(o, "output_type"), "stream") != 0 || strcmp(it_json_str(o, "name"), "stdout") != 0)
            continue;
        const json_t *text = json_object_get(o, "text");
        /* nbformat allows a list of strings too */
        for (size_t k = 0; k < (json_is_array(text) ? json_array_size(text) : 1); k++) {
            const char *t = json_string_value(json_is_array(text) ? json_array_get(text, k) : text) ?: "";
            size_t n = strlen(t);
            out = realloc(out, len + n + 1);
            memcpy(out + len, t, n + 1);
            len += n;
        }
    }
    return out;
}

static json_t *get_notebook(const editor *e)
{
    it_resp r;
    json_t *nb;

    it_request(&r, &srv, "GET", e->path, NULL, e->u->hdrs);
    ck_assert_msg(r.status == 200, "GET notebook: %ld %s", r.status, r.body);
    nb = json_loadb(r.body, r.body_len, 0, NULL);
    it_resp_free(&r);
    return nb;
}

static void start_kernel(char *kid, size_t n, const it_user *u, const char *pid)
{
    ck_assert_int_eq(it_kernel_start(kid, n, &srv, u->hdrs, pid, 60), 0);
}

/* Run `code` as cell "stream" while the editor edits; then compare. */
static void edit_while_streaming(const char *code, bool kernel_rewrites)
{
    it_user u;
    char pid[64], kid[64], mid[64];
    editor *e = calloc(1, sizeof(*e));
    collector c = {0};
    pthread_t t;
    int round = 0;

    boot();
    ck_assert_int_eq(it_user_make(&u, &srv, admin_cookie, admin_csrf, "alice", 0), 0);
    ck_assert_int_eq(it_project_make(pid, sizeof(pid), &srv, u.hdrs, "fold", "nb.ipynb", NOTEBOOK), 0);
    start_kernel(kid, sizeof(kid), &u, pid);
    e->u = &u;
    snprintf(e->path, sizeof(e->path), "/api/v1/projects/%s/files/nb.ipynb", pid);
    snprintf(e->a_src, sizeof(e->a_src), "x = 0");
    snprintf(e->b_src, sizeof(e->b_src), "y = 0");

    ck_assert_int_eq(it_kernel_execute(mid, sizeof(mid), &srv, u.hdrs, kid, code,
                                       "{\"cell_id\": \"stream\", \"notebook_path\": \"nb.ipynb\"}"),
                     0);
    c.u = &u;
    c.kid = kid;
    c.mid = mid;
    ck_assert_int_eq(pthread_create(&t, NULL, collect_main, &c), 0);

    /* edit as fast as an eager autosave while the cell streams, and on for
     * 20 rounds after it ended (its final write meets them) */
    int after = 0;
    while (after < 20 && round < 4 * MAX_ADDED) {
        editor_round(e, ++round);
        if (__atomic_load_n(&c.done, __ATOMIC_SEQ_CST))
            after++;
        sleep_ms(5);
    }
    pthread_join(t, NULL);
    ck_assert_msg(c.msgs != NULL, "the event stream of the cell did not reach idle");
    char *want = stream_text(c.msgs, mid);
    for (int i = 0; i < 150; i++) {
        char line[32];
        snprintf(line, sizeof(line), "line %03d\n", i);
        ck_assert_msg(strstr(want, line), "the event stream lacks %s", line);
    }

    /* settle: the fold's last write may still be trying (backoff) */
    json_t *nb = NULL;
    char *got = NULL;
    for (int i = 0; i < 150; i++) {
        json_decref(nb);
        free(got);
        nb = get_notebook(e);
        got = nb ? folded_text(nb, "stream") : strdup("");
        if (nb && strcmp(got, want) == 0 &&
            json_is_integer(json_object_get(cell_by_id(nb, "stream"), "execution_count")))
            break;
        sleep_ms(100);
    }
    ck_assert_msg(nb != NULL, "the notebook is not valid JSON after settling");
    printf("fold: %d editor rounds, %d PUTs won, %d 412s, %d torn reads\n", round, e->puts, e->conflicts, e->torn);
    ck_assert_msg(strcmp(got, want) == 0, "the folded outputs (%zu bytes) are not what the kernel printed (%zu bytes)",
                  strlen(got), strlen(want));
    ck_assert(json_is_integer(json_object_get(cell_by_id(nb, "stream"), "execution_count")));
    /* every cell the editor added or edited, with its source */
    for (int i = 0; i < e->nadded; i++) {
        char src[64];
        json_t *cell = cell_by_id(nb, e->added[i]);
        snprintf(src, sizeof(src), "# editor %s", e->added[i]);
        ck_assert_msg(cell != NULL, "the editor's cell %s is lost", e->added[i]);
        ck_assert_str_eq(it_json_str(cell, "source"), src);
    }
    ck_assert_str_eq(it_json_str(cell_by_id(nb, "a"), "source"), e->a_src);
    ck_assert_str_eq(it_json_str(cell_by_id(nb, "b"), "source"), e->b_src);
    ck_assert_str_eq(it_json_str(cell_by_id(nb, "intro"), "source"), "# fold");
    ck_assert_str_eq(it_json_str(cell_by_id(nb, "notes"), "source"), "notes");
    if (kernel_rewrites) {
        for (int i = 0; i < 2; i++) {
            json_t *kc = cell_by_id(nb, i ? "kernel-cell-2" : "kernel-cell");
            ck_assert_msg(kc != NULL, "the cell %d kernel code added is lost", i + 1);
            ck_assert_str_eq(it_json_str(kc, "source"), "# from the kernel");
        }
    }
    json_decref(nb);
    free(got);
    free(want);
    json_decref(c.msgs);
    free(e);
    shutdown_all();
}

START_TEST(editor_autosave_and_fold_lose_no_cell_and_no_output)
{
    edit_while_streaming(STREAM_CODE, false);
}
END_TEST

START_TEST(kernel_code_rewriting_the_notebook_in_place_loses_nothing)
{
    edit_while_streaming(STREAM_REWRITE_CODE, true);
}
END_TEST

/* A kernel stopped mid-cell: what the cell printed before is folded. */
START_TEST(outputs_printed_before_a_stop_are_folded)
{
    it_user u;
    char pid[64], kid[64], mid[64], path[256], kpath[160];
    it_resp r;

    boot();
    ck_assert_int_eq(it_user_make(&u, &srv, admin_cookie, admin_csrf, "alice", 0), 0);
    ck_assert_int_eq(it_project_make(pid, sizeof(pid), &srv, u.hdrs, "fold", "nb.ipynb", NOTEBOOK), 0);
    start_kernel(kid, sizeof(kid), &u, pid);
    ck_assert_int_eq(it_kernel_execute(mid, sizeof(mid), &srv, u.hdrs, kid,
                                       "import time\nprint('first', flush=True)\ntime.sleep(0.1)\n"
                                       "print('second', flush=True)\ntime.sleep(600)\n",
                                       "{\"cell_id\": \"stream\", \"notebook_path\": \"nb.ipynb\"}"),
                     0);
    /* "first" came (folded at once: the first write of a fold is due);
     * "second" comes 0.1 s later, within FOLD_WRITE_MS: stop then */
    json_t *msgs = it_kernel_events(&srv, u.hdrs, kid, 0, mid, IT_EV_STREAM, 60, NULL);
    ck_assert_ptr_nonnull(msgs);
    json_decref(msgs);
    sleep_ms(300);
    snprintf(kpath, sizeof(kpath), "/api/v1/kernels/%s", kid);
    it_request(&r, &srv, "DELETE", kpath, NULL, u.hdrs);
    ck_assert_msg(r.status == 200, "stop: %ld %s", r.status, r.body);
    it_resp_free(&r);
    json_t *k = it_status_wait(&srv, u.hdrs, kpath, "dead", 60);
    ck_assert_ptr_nonnull(k);
    json_decref(k);
    /* the stop waits for the reader, which flushed: no settle needed, but
     * allow the write a moment */
    snprintf(path, sizeof(path), "/api/v1/projects/%s/files/nb.ipynb", pid);
    editor e = {.u = &u};
    snprintf(e.path, sizeof(e.path), "%s", path);
    char *got = NULL;
    for (int i = 0; i < 50; i++) {
        free(got);
        json_t *nb = get_notebook(&e);
        ck_assert_ptr_nonnull(nb);
        got = folded_text(nb, "stream");
        json_decref(nb);
        if (strstr(got, "second"))
            break;
        sleep_ms(100);
    }
    ck_assert_msg(strcmp(got, "first\nsecond\n") == 0, "folded: '%s'", got);
    free(got);
    shutdown_all();
}
END_TEST

/* Root with idmapped bind mounts on this host's /tmp (kernels need them), or skip (77). */
static int host_ready(void)
{
    char cmd[600], line[512];
    FILE *f;
    int yes = 0;

    if (geteuid() != 0) {
        printf("test_workspace_fold: needs root (real sandboxes); skipped\n");
        return 0;
    }
    snprintf(cmd, sizeof(cmd), "%s sandbox check --data /tmp 2>&1", it_eddy_bin());
    if ((f = popen(cmd, "r")) == NULL)
        return 0;
    while (fgets(line, sizeof(line), f))
        if (strncmp(line, "workspaces", 10) == 0) {
            yes = strstr(line, "idmapped bind mounts: yes") != NULL;
            if (!yes)
                printf("test_workspace_fold: %s", line);
        }
    pclose(f);
    if (!yes)
        printf("test_workspace_fold: this host cannot idmap bind mounts; skipped\n");
    return yes;
}

int main(void)
{
    const TTest *tests[] = {editor_autosave_and_fold_lose_no_cell_and_no_output,
                            kernel_code_rewriting_the_notebook_in_place_loses_nothing,
                            outputs_printed_before_a_stop_are_folded, NULL};
    if (!host_ready())
        return 77;
    return it_tests_run("workspace_fold", 240, NULL, NULL, tests);
}
