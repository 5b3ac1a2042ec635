/* Jupyter Server API compatibility against the real `eddy serve`: /api,
 * /api/status, kernelspecs, contents over the default project (notebooks as
 * JSON models, untitled, rename, checkpoints as versions, refusals), sessions,
 * and the kernel channels WebSocket with a small RFC 6455 client written here:
 * handshake refusals, ping/pong, a malformed frame closed with 1002, message
 * order busy -> execute_input -> stream -> execute_reply -> idle in the JSON
 * framing and in v1.kernel.websocket.jupyter.org, tracebacks, interrupt,
 * restart keeping the id, ?token= auth on the upgrade only, and another
 * user's kernel answering 404. */
#include "harness.h"

#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define V1 "v1.kernel.websocket.jupyter.org"

static it_server S;
static char key_a[160], key_b[160];
static char hdr_a[200], hdr_b[200];
static const char *hdrs_a[3], *hdrs_b[3];

static char cookie_a[600], csrf_a[300];   /* alice's session: "Cookie: ..." and the token */

/* Sign `user` up and make them an API key with scopes read, write, run: the
 * key into `key` (160 bytes). Alice's cookie and CSRF token are kept. */
static void make_key(char *key, const char *user)
{
    it_user u;
    it_key k;

    ck_assert_int_eq(it_user_make(&u, &S, NULL, NULL, user, 0), 0);
    ck_assert_int_eq(
        it_key_make(&k, &S, u.hdrs, "{\"name\":\"jupyter\",\"env\":\"prod\",\"scopes\":[\"read\",\"write\",\"run\"]}"),
        0);
    snprintf(key, 160, "%s", k.auth + strlen("Authorization: Bearer "));
    if (strcmp(user, "alice") == 0) {
        snprintf(cookie_a, sizeof(cookie_a), "%s", u.cookie);
        snprintf(csrf_a, sizeof(csrf_a), "%.280s", u.csrf + strlen("X-CSRF-Token: "));
    }
}

static void setup(void)
{
    ck_assert_int_eq(it_server_start(&S, NULL), 0);
    make_key(key_a, "alice");
    make_key(key_b, "bob");
    snprintf(hdr_a, sizeof(hdr_a), "Authorization: token %s", key_a);
    snprintf(hdr_b, sizeof(hdr_b), "Authorization: Bearer %s", key_b);
    hdrs_a[0] = hdr_a;
    hdrs_a[1] = "Content-Type: application/json";
    hdrs_b[0] = hdr_b;
    hdrs_b[1] = "Content-Type: application/json";
}

static void teardown(void)
{
    ck_assert_int_eq(it_server_stop(&S), 0);
}

static long status_of(const char *method, const char *path, const char *body, const char *const *h)
{
    it_resp r;
    long st;
    it_request(&r, &S, method, path, body, h);
    st = r.status;
    it_resp_free(&r);
    return st;
}

/* ---- meta, kernelspecs ------------------------------------------------------ */

START_TEST(api_version_status_and_kernelspecs)
{
    it_resp r;

    ck_assert_int_eq(it_request(&r, &S, "GET", "/api", NULL, NULL), 0);
    ck_assert_int_eq(r.status, 200);
    ck_assert_ptr_nonnull(json_string_value(json_object_get(r.json, "version")));
    it_resp_free(&r);

    ck_assert_int_eq(status_of("GET", "/api/kernelspecs", NULL, NULL), 401);
    ck_assert_int_eq(it_request(&r, &S, "GET", "/api/kernelspecs", NULL, hdrs_a), 0);
    ck_assert_int_eq(r.status, 200);
    ck_assert_str_eq(json_string_value(json_object_get(r.json, "default")), "python3");
    {
        json_t *spec = json_object_get(json_object_get(r.json, "kernelspecs"), "python3");
        ck_assert_str_eq(json_string_value(json_object_get(spec, "name")), "python3");
        ck_assert_str_eq(json_string_value(json_object_get(json_object_get(spec, "spec"), "language")),
                         "python");
    }
    it_resp_free(&r);
    ck_assert_int_eq(status_of("GET", "/api/kernelspecs/python3", NULL, hdrs_a), 200);
    ck_assert_int_eq(status_of("GET", "/api/kernelspecs/julia", NULL, hdrs_a), 404);

    ck_assert_int_eq(it_request(&r, &S, "GET", "/api/me", NULL, hdrs_a), 0);
    ck_assert_int_eq(r.status, 200);
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(r.json, "identity"), "username")),
                     "alice");
    it_resp_free(&r);

    ck_assert_int_eq(it_request(&r, &S, "GET", "/api/status", NULL, hdrs_a), 0);
    ck_assert_int_eq(r.status, 200);
    ck_assert(json_is_integer(json_object_get(r.json, "kernels")));
    ck_assert(json_is_string(json_object_get(r.json, "started")));
    it_resp_free(&r);
}
END_TEST

START_TEST(api_token_query_param_is_refused_outside_the_websocket)
{
    char path[300];
    snprintf(path, sizeof(path), "/api/kernelspecs?token=%s", key_a);
    ck_assert_int_eq(status_of("GET", path, NULL, NULL), 401);
}
END_TEST

/* ---- contents ------------------------------------------------------------------ */

static const char NB[] =
    "{\"type\":\"notebook\",\"content\":{\"cells\":[{\"cell_type\":\"code\",\"id\":\"c1\","
    "\"source\":\"print(1)\",\"metadata\":{},\"outputs\":[],\"execution_count\":null}],"
    "\"metadata\":{},\"nbformat\":4,\"nbformat_minor\":5}}";

START_TEST(contents_notebooks_files_and_directories_round_trip)
{
    it_resp r;
    json_t *c;

    ck_assert_int_eq(it_request(&r, &S, "GET", "/api/contents", NULL, hdrs_a), 0);
    ck_assert_int_eq(r.status, 200);
    ck_assert_str_eq(json_string_value(json_object_get(r.json, "type")), "directory");
    ck_assert(json_is_array(json_object_get(r.json, "content")));
    it_resp_free(&r);

    ck_assert_int_eq(it_request(&r, &S, "PUT", "/api/contents/work/a.ipynb", NB, hdrs_a), 0);
    ck_assert_msg(r.status == 201, "%ld %s", r.status, r.body);
    ck_assert_str_eq(json_string_value(json_object_get(r.json, "type")), "notebook");
    ck_assert_str_eq(json_string_value(json_object_get(r.json, "path")), "work/a.ipynb");
    it_resp_free(&r);
    /* Saving again is 200. */
    ck_assert_int_eq(status_of("PUT", "/api/contents/work/a.ipynb", NB, hdrs_a), 200);

    ck_assert_int_eq(it_request(&r, &S, "GET", "/api/contents/work/a.ipynb", NULL, hdrs_a), 0);
    ck_assert_int_eq(r.status, 200);
    ck_assert_str_eq(json_string_value(json_object_get(r.json, "format")), "json");
    c = json_object_get(r.json, "content");
    ck_assert_int_eq(json_integer_value(json_object_get(c, "nbformat")), 4);
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(json_object_get(c, "cells"), 0),
                                                       "source")),
                     "print(1)");
    it_resp_free(&r);

    ck_assert_int_eq(status_of("PUT", "/api/contents/work/notes.txt",
                               "{\"type\":\"file\",\"format\":\"text\",\"content\":\"hello\\n\"}", hdrs_a),
                     201);
    ck_assert_int_eq(it_request(&r, &S, "GET", "/api/contents/work/notes.txt", NULL, hdrs_a), 0);
    ck_assert_str_eq(json_string_value(json_object_get(r.json, "content")), "hello\n");
    ck_assert_str_eq(json_string_value(json_object_get(r.json, "format")), "text");
    it_resp_free(&r);
    /* ?hash=1: sha256 of the bytes (jupyter_server 2.11+), with or without content */
    ck_assert_int_eq(it_request(&r, &S, "GET", "/api/contents/work/notes.txt?hash=1&content=0", NULL, hdrs_a), 0);
    ck_assert_str_eq(json_string_value(json_object_get(r.json, "hash_algorithm")), "sha256");
    ck_assert_str_eq(json_string_value(json_object_get(r.json, "hash")),
                     "5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03");
    it_resp_free(&r);
    ck_assert_int_eq(it_request(&r, &S, "GET", "/api/contents/work/notes.txt?hash=1", NULL, hdrs_a), 0);
    ck_assert_str_eq(json_string_value(json_object_get(r.json, "hash")),
                     "5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03");
    it_resp_free(&r);
    /* Binary content comes back as base64. */
    ck_assert_int_eq(status_of("PUT", "/api/contents/work/b.bin",
                               "{\"type\":\"file\",\"format\":\"base64\",\"content\":\"AP8A\"}", hdrs_a),
                     201);
    ck_assert_int_eq(it_request(&r, &S, "GET", "/api/contents/work/b.bin", NULL, hdrs_a), 0);
    ck_assert_str_eq(json_string_value(json_object_get(r.json, "format")), "base64");
    ck_assert_str_eq(json_string_value(json_object_get(r.json, "content")), "AP8A");
    it_resp_free(&r);

    /* The directory lists its children without content; content=0 omits them. */
    ck_assert_int_eq(it_request(&r, &S, "GET", "/api/contents/work", NULL, hdrs_a), 0);
    ck_assert_int_eq(r.status, 200);
    ck_assert_uint_eq(json_array_size(json_object_get(r.json, "content")), 3);
    it_resp_free(&r);
    ck_assert_int_eq(it_request(&r, &S, "GET", "/api/contents/work?content=0", NULL, hdrs_a), 0);
    ck_assert(json_is_null(json_object_get(r.json, "content")));
    it_resp_free(&r);

    ck_assert_int_eq(status_of("GET", "/api/contents/nope.txt", NULL, hdrs_a), 404);
    ck_assert_int_eq(status_of("GET", "/api/contents/work/a.ipynb?type=directory", NULL, hdrs_a), 400);
    /* Another user does not see alice's tree. */
    ck_assert_int_eq(status_of("GET", "/api/contents/work/a.ipynb", NULL, hdrs_b), 404);
}
END_TEST

START_TEST(cookie_callers_may_send_the_csrf_token_as_x_xsrftoken_on_jupyter_routes_only)
{
    char xsrf[400], xcsrf[400];
    const char *with_xsrf[4] = {cookie_a, xsrf, "Content-Type: application/json", NULL};
    const char *with_csrf[4] = {cookie_a, xcsrf, "Content-Type: application/json", NULL};
    const char *bare[3] = {cookie_a, "Content-Type: application/json", NULL};

    snprintf(xsrf, sizeof(xsrf), "X-XSRFToken: %s", csrf_a);
    snprintf(xcsrf, sizeof(xcsrf), "X-CSRF-Token: %s", csrf_a);
    ck_assert_int_eq(status_of("POST", "/api/contents", "{\"type\":\"file\"}", with_xsrf), 201);
    ck_assert_int_eq(status_of("POST", "/api/contents", "{\"type\":\"file\"}", with_csrf), 201);
    ck_assert_int_eq(status_of("POST", "/api/contents", "{\"type\":\"file\"}", bare), 403);
    /* The REST API keeps its own header. */
    ck_assert_int_eq(status_of("POST", "/api/v1/projects", "{\"name\":\"x\",\"visibility\":\"private\"}",
                               with_xsrf),
                     403);
    snprintf(xsrf, sizeof(xsrf), "X-XSRFToken: %s", "wrong-token");
    ck_assert_int_eq(status_of("POST", "/api/contents", "{\"type\":\"file\"}", with_xsrf), 403);
}
END_TEST

START_TEST(contents_refuses_bad_notebooks_and_paths_writing_nothing)
{
    ck_assert_int_eq(status_of("PUT", "/api/contents/bad.ipynb",
                               "{\"type\":\"notebook\",\"content\":{\"cells\":3}}", hdrs_a),
                     422);
    ck_assert_int_eq(status_of("GET", "/api/contents/bad.ipynb", NULL, hdrs_a), 404);
    ck_assert_int_eq(status_of("PUT", "/api/contents/..%2Fescape.txt",
                               "{\"type\":\"file\",\"format\":\"text\",\"content\":\"x\"}", hdrs_a),
                     400);
    ck_assert_int_eq(status_of("PUT", "/api/contents/x.txt", "{\"type\":\"file\"}", hdrs_a), 400);
    ck_assert_int_eq(status_of("PUT", "/api/contents/x.txt",
                               "{\"type\":\"file\",\"format\":\"base64\",\"content\":\"***\"}", hdrs_a),
                     400);
    ck_assert_int_eq(status_of("GET", "/api/contents/x.txt", NULL, hdrs_a), 404);
}
END_TEST

START_TEST(contents_untitled_rename_delete_and_checkpoints)
{
    it_resp r;
    char cid[64], path[160];

    ck_assert_int_eq(it_request(&r, &S, "POST", "/api/contents", "{\"type\":\"notebook\"}", hdrs_a), 0);
    ck_assert_msg(r.status == 201, "%ld %s", r.status, r.body);
    ck_assert_str_eq(json_string_value(json_object_get(r.json, "path")), "Untitled.ipynb");
    it_resp_free(&r);
    ck_assert_int_eq(it_request(&r, &S, "POST", "/api/contents", "{\"type\":\"notebook\"}", hdrs_a), 0);
    ck_assert_str_eq(json_string_value(json_object_get(r.json, "path")), "Untitled1.ipynb");
    it_resp_free(&r);
    ck_assert_int_eq(it_request(&r, &S, "POST", "/api/contents", "{\"type\":\"directory\"}", hdrs_a), 0);
    ck_assert_int_eq(r.status, 201);
    ck_assert_str_eq(json_string_value(json_object_get(r.json, "path")), "Untitled Folder");
    it_resp_free(&r);
    ck_assert_int_eq(status_of("GET", "/api/contents/Untitled%20Folder", NULL, hdrs_a), 200);

    /* Rename; the old name is gone; a taken name is 409. */
    ck_assert_int_eq(status_of("PATCH", "/api/contents/Untitled.ipynb", "{\"path\":\"renamed.ipynb\"}",
                               hdrs_a),
                     200);
    ck_assert_int_eq(status_of("GET", "/api/contents/Untitled.ipynb", NULL, hdrs_a), 404);
    ck_assert_int_eq(status_of("GET", "/api/contents/renamed.ipynb", NULL, hdrs_a), 200);
    ck_assert_int_eq(status_of("PATCH", "/api/contents/renamed.ipynb", "{\"path\":\"Untitled1.ipynb\"}",
                               hdrs_a),
                     409);

    /* Checkpoint = version; change the file; restore brings it back. */
    ck_assert_int_eq(status_of("PUT", "/api/contents/ck.txt",
                               "{\"type\":\"file\",\"format\":\"text\",\"content\":\"one\"}", hdrs_a),
                     201);
    ck_assert_int_eq(it_request(&r, &S, "POST", "/api/contents/ck.txt/checkpoints", NULL, hdrs_a), 0);
    ck_assert_msg(r.status == 201, "%ld %s", r.status, r.body);
    snprintf(cid, sizeof(cid), "%s", json_string_value(json_object_get(r.json, "id")));
    ck_assert_uint_eq(strlen(cid), 40);
    it_resp_free(&r);
    ck_assert_int_eq(it_request(&r, &S, "GET", "/api/contents/ck.txt/checkpoints", NULL, hdrs_a), 0);
    ck_assert_int_eq(r.status, 200);
    ck_assert_uint_ge(json_array_size(r.json), 1);
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(r.json, 0), "id")), cid);
    it_resp_free(&r);
    ck_assert_int_eq(status_of("PUT", "/api/contents/ck.txt",
                               "{\"type\":\"file\",\"format\":\"text\",\"content\":\"two\"}", hdrs_a),
                     200);
    snprintf(path, sizeof(path), "/api/contents/ck.txt/checkpoints/%s", cid);
    ck_assert_int_eq(status_of("POST", path, NULL, hdrs_a), 204);
    ck_assert_int_eq(it_request(&r, &S, "GET", "/api/contents/ck.txt", NULL, hdrs_a), 0);
    ck_assert_str_eq(json_string_value(json_object_get(r.json, "content")), "one");
    it_resp_free(&r);
    ck_assert_int_eq(status_of("DELETE", path, NULL, hdrs_a), 409);
    ck_assert_int_eq(status_of("POST", "/api/contents/ck.txt/checkpoints/0000000000", NULL, hdrs_a),
                     404);

    ck_assert_int_eq(status_of("DELETE", "/api/contents/ck.txt", NULL, hdrs_a), 204);
    ck_assert_int_eq(status_of("GET", "/api/contents/ck.txt", NULL, hdrs_a), 404);
    ck_assert_int_eq(status_of("DELETE", "/api/contents/ck.txt", NULL, hdrs_a), 404);
}
END_TEST

/* ---- a small WebSocket client ----------------------------------------------------- */

typedef it_ws wsc;

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Connect and send the handshake with the header line `auth` and the
 * subprotocols `proto` (each may be NULL); returns the HTTP status (101 on
 * success, with the Sec-WebSocket-Accept checked). */
static long ws_open(wsc *c, const char *path, const char *auth, const char *proto)
{
    char ph[128];
    const char *h[3] = {NULL, NULL, NULL};
    int n = 0;

    if (auth)
        h[n++] = auth;
    if (proto) {
        snprintf(ph, sizeof(ph), "Sec-WebSocket-Protocol: %s", proto);
        h[n++] = ph;
    }
    return it_ws_open(c, &S, NULL, path, h, 1 << 20, 20000);
}

static void ws_send_raw(wsc *c, int b0, const void *data, size_t len, bool mask)
{
    ck_assert_int_eq(it_ws_send(c, b0, data, len, mask), 0);
}

static void ws_send(wsc *c, int opcode, const void *data, size_t len)
{
    ws_send_raw(c, 0x80 | opcode, data, len, true);
}

/* One frame from the server into *data (malloc'd, NUL-terminated). 1, 0 on
 * timeout, -1 when the connection closed; a masked or oversized frame
 * fails the test. */
static int ws_recv(wsc *c, int *opcode, char **data, size_t *len, int timeout_ms)
{
    int rc = it_ws_recv(c, opcode, data, len, timeout_ms);
    ck_assert_msg(rc != -2, "the server broke the WebSocket protocol");
    return rc;
}

static void ws_close_fd(wsc *c)
{
    it_ws_close(c);
}

START_TEST(websocket_handshake_refusals)
{
    wsc c;
    char auth[200];

    snprintf(auth, sizeof(auth), "Authorization: token %s", key_a);
    /* No credentials: 401 before any upgrade. */
    ck_assert_int_eq(ws_open(&c, "/api/kernels/00000000-0000-4000-8000-000000000000/channels", NULL,
                             NULL),
                     401);
    ws_close_fd(&c);
    /* An unknown kernel: 404. */
    ck_assert_int_eq(ws_open(&c, "/api/kernels/00000000-0000-4000-8000-000000000000/channels", auth,
                             NULL),
                     404);
    ws_close_fd(&c);
    /* A plain GET on the channels of an unknown kernel is 404, too. */
    ck_assert_int_eq(status_of("GET", "/api/kernels/00000000-0000-4000-8000-000000000000/channels",
                               NULL, hdrs_a),
                     404);
}
END_TEST

/* ---- kernels -------------------------------------------------------------------------- */

/* Shut down every kernel of alice and bob: the free tier allows one each,
 * and a failed test may have left one running. */
static void cleanup_kernels(void)
{
    const char *const *hs[2] = {hdrs_a, hdrs_b};
    for (int u = 0; u < 2; u++) {
        it_resp r;
        ck_assert_int_eq(it_request(&r, &S, "GET", "/api/kernels", NULL, hs[u]), 0);
        for (size_t i = 0; i < json_array_size(r.json); i++) {
            char path[128];
            snprintf(path, sizeof(path), "/api/kernels/%s",
                     json_string_value(json_object_get(json_array_get(r.json, i), "id")));
            status_of("DELETE", path, NULL, hs[u]);
        }
        it_resp_free(&r);
    }
    /* A deleted kernel holds its slot of the tier's kernel cap until its
     * process has exited: wait for both lists to empty before starting more. */
    for (int u = 0; u < 2; u++) {
        int64_t deadline = now_ms() + 30000;
        size_t live;
        do {
            it_resp r;
            ck_assert_int_eq(it_request(&r, &S, "GET", "/api/kernels", NULL, hs[u]), 0);
            live = json_array_size(r.json);
            it_resp_free(&r);
            if (live)
                usleep(50000);
        } while (live && now_ms() < deadline);
        ck_assert_msg(live == 0, "%zu kernels still running 30 s after their delete", live);
    }
}

static char *start_kernel(const char *const *h)
{
    it_resp r;
    char *id;

    cleanup_kernels();

    ck_assert_int_eq(it_request(&r, &S, "POST", "/api/kernels", "{\"name\":\"python3\"}", h), 0);
    ck_assert_msg(r.status == 201, "start: %ld %s", r.status, r.body);
    id = strdup(json_string_value(json_object_get(r.json, "id")));
    ck_assert_str_eq(json_string_value(json_object_get(r.json, "name")), "python3");
    it_resp_free(&r);
    return id;
}

static void delete_kernel(const char *id)
{
    char path[128];
    snprintf(path, sizeof(path), "/api/kernels/%s", id);
    ck_assert_int_eq(status_of("DELETE", path, NULL, hdrs_a), 204);
}

/* Poll the kernel until its execution_state is `want` (60 s at most). */
static void wait_state(const char *id, const char *want)
{
    char path[128];
    int64_t deadline = now_ms() + 60000;

    snprintf(path, sizeof(path), "/api/kernels/%s", id);
    for (;;) {
        it_resp r;
        bool ok;
        ck_assert_int_eq(it_request(&r, &S, "GET", path, NULL, hdrs_a), 0);
        ok = r.status == 200 &&
             strcmp(json_string_value(json_object_get(r.json, "execution_state")), want) == 0;
        if (!ok && now_ms() > deadline)
            ck_abort_msg("kernel %s never became %s: %s", id, want, r.body);
        it_resp_free(&r);
        if (ok)
            return;
        usleep(100000);
    }
}

static long ws_open_kernel(wsc *c, const char *id, const char *proto)
{
    char path[160], auth[200];
    snprintf(path, sizeof(path), "/api/kernels/%s/channels?session_id=test", id);
    snprintf(auth, sizeof(auth), "Authorization: token %s", key_a);
    return ws_open(c, path, auth, proto);
}

static char *request_msg(const char *channel, const char *type, const char *msg_id, json_t *content)
{
    json_t *m = json_pack("{s:s, s:{s:s, s:s, s:s, s:s, s:s, s:s}, s:{}, s:{}, s:o}", "channel",
                          channel, "header", "msg_id", msg_id, "msg_type", type, "session", "test",
                          "username", "alice", "version", "5.3", "date", "2026-01-01T00:00:00Z",
                          "parent_header", "metadata", "content", content);
    char *s = json_dumps(m, JSON_COMPACT);
    json_decref(m);
    return s;
}

static char *execute_msg(const char *msg_id, const char *code)
{
    return request_msg("shell", "execute_request", msg_id,
                       json_pack("{s:s, s:b, s:b, s:{}, s:b, s:b}", "code", code, "silent", 0,
                                 "store_history", 1, "user_expressions", "allow_stdin", 0,
                                 "stop_on_error", 1));
}

/* v1 framing of a JSON message (as @jupyterlab/services does it). */
static uint8_t *v1_frame(size_t *out_len, const char *json)
{
    static const char *const parts[] = {"header", "parent_header", "metadata", "content"};
    json_t *m = json_loads(json, 0, NULL);
    const char *ch = json_string_value(json_object_get(m, "channel"));
    char *p[4];
    size_t off = 8 * 7, total = off + strlen(ch);
    uint8_t *b;

    for (int i = 0; i < 4; i++) {
        p[i] = json_dumps(json_object_get(m, parts[i]), JSON_COMPACT);
        total += strlen(p[i]);
    }
    b = malloc(total);
    for (int i = 0; i < 8; i++)
        b[i] = (uint8_t)((uint64_t)6 >> (8 * i));
    {
        size_t pos = off, offs[6];
        offs[0] = pos;
        memcpy(b + pos, ch, strlen(ch));
        pos += strlen(ch);
        for (int i = 0; i < 4; i++) {
            offs[1 + i] = pos;
            memcpy(b + pos, p[i], strlen(p[i]));
            pos += strlen(p[i]);
            free(p[i]);
        }
        offs[5] = pos;
        for (int k = 0; k < 6; k++)
            for (int i = 0; i < 8; i++)
                b[8 * (1 + k) + i] = (uint8_t)((uint64_t)offs[k] >> (8 * i));
    }
    json_decref(m);
    *out_len = total;
    return b;
}

static uint64_t le64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

/* A v1 frame from the server back into {channel, header, parent_header, metadata, content}. */
static json_t *v1_parse(const uint8_t *b, size_t len)
{
    static const char *const parts[] = {"header", "parent_header", "metadata", "content"};
    uint64_t n = le64(b), off[16];
    json_t *m = json_object();

    ck_assert_uint_ge(n, 6);
    ck_assert_uint_le(n, 16);
    for (uint64_t i = 0; i < n; i++)
        off[i] = le64(b + 8 * (1 + i));
    ck_assert_uint_le(off[n - 1], len);
    json_object_set_new(m, "channel", json_stringn((const char *)b + off[0], off[1] - off[0]));
    for (int i = 0; i < 4; i++) {
        json_t *v = json_loadb((const char *)b + off[1 + i], off[2 + i] - off[1 + i], 0, NULL);
        ck_assert_ptr_nonnull(v);
        json_object_set_new(m, parts[i], v);
    }
    return m;
}

/* What came back for one request, in order. */
typedef struct trace {
    char  events[64][48];   /* "iopub:status:busy", "shell:execute_reply:ok", ... */
    int   n;
    char  stdout_text[4096];
    char  ename[64];
    int   traceback_lines;
    char  reply_status[16];
} trace;

static int find(const trace *t, const char *ev)
{
    for (int i = 0; i < t->n; i++)
        if (strcmp(t->events[i], ev) == 0)
            return i;
    return -1;
}

static void note(trace *t, json_t *m, const char *msg_id)
{
    const char *pid = json_string_value(json_object_get(json_object_get(m, "parent_header"), "msg_id"));
    const char *ch = json_string_value(json_object_get(m, "channel"));
    const char *type = json_string_value(json_object_get(json_object_get(m, "header"), "msg_type"));
    json_t *content = json_object_get(m, "content");
    char ev[48];

    if (pid == NULL || strcmp(pid, msg_id) != 0 || ch == NULL || type == NULL || t->n >= 64)
        return;
    if (strcmp(type, "status") == 0)
        snprintf(ev, sizeof(ev), "%s:status:%s", ch,
                 json_string_value(json_object_get(content, "execution_state")));
    else
        snprintf(ev, sizeof(ev), "%s:%s", ch, type);
    snprintf(t->events[t->n++], sizeof(t->events[0]), "%s", ev);
    if (strcmp(type, "stream") == 0) {
        const char *txt = json_string_value(json_object_get(content, "text"));
        if (txt)
            strncat(t->stdout_text, txt, sizeof(t->stdout_text) - strlen(t->stdout_text) - 1);
    } else if (strcmp(type, "error") == 0) {
        snprintf(t->ename, sizeof(t->ename), "%s", json_string_value(json_object_get(content, "ename")));
        t->traceback_lines = (int)json_array_size(json_object_get(content, "traceback"));
    } else if (strcmp(type, "execute_reply") == 0) {
        snprintf(t->reply_status, sizeof(t->reply_status), "%s",
                 json_string_value(json_object_get(content, "status")));
    }
}

/* Read until the idle status and the reply for `msg_id` both arrived. */
static void collect(trace *t, wsc *c, const char *msg_id, int timeout_ms)
{
    int64_t deadline = now_ms() + timeout_ms;

    memset(t, 0, sizeof(*t));
    while (now_ms() < deadline) {
        int op;
        char *data;
        size_t len;
        json_t *m;
        int rc = ws_recv(c, &op, &data, &len, (int)(deadline - now_ms()));
        if (rc <= 0)
            break;
        if (op == 0x2)
            m = v1_parse((uint8_t *)data, len);
        else if (op == 0x1)
            m = json_loads(data, 0, NULL);
        else
            m = NULL;
        free(data);
        if (m == NULL)
            continue;
        note(t, m, msg_id);
        json_decref(m);
        if (find(t, "iopub:status:idle") >= 0 && find(t, "shell:execute_reply") >= 0)
            return;
    }
    ck_abort_msg("no idle+reply for %s within %d ms (%d events)", msg_id, timeout_ms, t->n);
}

static void execute(trace *t, wsc *c, const char *msg_id, const char *code, bool v1)
{
    char *m = execute_msg(msg_id, code);
    if (v1) {
        size_t n;
        uint8_t *b = v1_frame(&n, m);
        ws_send(c, 0x2, b, n);
        free(b);
    } else {
        ws_send(c, 0x1, m, strlen(m));
    }
    free(m);
    collect(t, c, msg_id, 90000);
}

static void assert_order(const trace *t)
{
    int busy = find(t, "iopub:status:busy"), input = find(t, "iopub:execute_input"),
        stream = find(t, "iopub:stream"), reply = find(t, "shell:execute_reply"),
        idle = find(t, "iopub:status:idle");
    ck_assert_msg(busy >= 0 && input > busy && stream > input && reply > stream && idle > stream,
                  "order busy %d input %d stream %d reply %d idle %d", busy, input, stream, reply, idle);
}

START_TEST(kernel_over_json_channels_runs_code_in_order_with_tracebacks_and_ping)
{
    char *id = start_kernel(hdrs_a);
    wsc *c = malloc(sizeof(*c));
    trace t;
    int op;
    char *data;
    size_t len;

    ck_assert_int_eq(ws_open_kernel(c, id, NULL), 101);
    ck_assert_str_eq(c->protocol, "");

    execute(&t, c, "m1", "print(6*7)", false);
    assert_order(&t);
    ck_assert_str_eq(t.stdout_text, "42\n");
    ck_assert_str_eq(t.reply_status, "ok");

    /* A second connection with ?after=0 replays the journal: m1's output. */
    {
        wsc *c2 = malloc(sizeof(*c2));
        char path[200], auth[200];
        trace t2;
        snprintf(path, sizeof(path), "/api/kernels/%s/channels?after=0", id);
        snprintf(auth, sizeof(auth), "Authorization: token %s", key_a);
        ck_assert_int_eq(ws_open(c2, path, auth, NULL), 101);
        collect(&t2, c2, "m1", 30000);
        ck_assert_str_eq(t2.stdout_text, "42\n");
        assert_order(&t2);
        ws_close_fd(c2);
        free(c2);
    }

    /* A traceback comes back as an error message and an error reply. */
    execute(&t, c, "m2", "def f():\n    return 1/0\nf()", false);
    ck_assert_str_eq(t.ename, "ZeroDivisionError");
    ck_assert_int_ge(t.traceback_lines, 2);
    ck_assert_str_eq(t.reply_status, "error");

    /* Ping with a payload: the pong echoes it (kernel output may come first). */
    ws_send(c, 0x9, "are you there", 13);
    for (;;) {
        ck_assert_int_eq(ws_recv(c, &op, &data, &len, 10000), 1);
        if (op == 0xA)
            break;
        free(data);
    }
    ck_assert_uint_eq(len, 13);
    ck_assert_str_eq(data, "are you there");
    free(data);

    /* Close handshake: the server answers with a close frame. */
    ws_send(c, 0x8, "\x03\xe8", 2);
    for (;;) {
        int rc = ws_recv(c, &op, &data, &len, 10000);
        ck_assert_int_eq(rc, 1);
        if (op == 0x8) {
            ck_assert_uint_ge(len, 2);
            ck_assert_int_eq(((uint8_t)data[0] << 8) | (uint8_t)data[1], 1000);
            free(data);
            break;
        }
        free(data);
    }
    ws_close_fd(c);
    free(c);
    delete_kernel(id);
    free(id);
}
END_TEST

START_TEST(kernel_over_v1_subprotocol_and_query_token)
{
    char *id = start_kernel(hdrs_a);
    wsc *c = malloc(sizeof(*c));
    char path[300];
    trace t;

    /* ?token= is accepted on the upgrade (browsers cannot set headers). */
    snprintf(path, sizeof(path), "/api/kernels/%s/channels?token=%s", id, key_a);
    ck_assert_int_eq(ws_open(c, path, NULL, "other.protocol, " V1), 101);
    ck_assert_str_eq(c->protocol, V1);
    execute(&t, c, "v1-1", "print(6*7)", true);
    assert_order(&t);
    ck_assert_str_eq(t.stdout_text, "42\n");
    ws_close_fd(c);
    free(c);
    delete_kernel(id);
    free(id);
}
END_TEST

START_TEST(kernel_interrupt_and_restart_keep_the_id)
{
    char *id = start_kernel(hdrs_a), path[160];
    wsc *c = malloc(sizeof(*c));
    char *m;
    trace t;
    it_resp r;

    ck_assert_int_eq(ws_open_kernel(c, id, NULL), 101);
    execute(&t, c, "set", "x = 5\nprint(x)", false);
    ck_assert_str_eq(t.stdout_text, "5\n");

    /* Interrupt a busy loop over REST: the cell ends with KeyboardInterrupt. */
    m = execute_msg("loop", "import time\nprint('start', flush=True)\nwhile True:\n    time.sleep(0.01)");
    ws_send(c, 0x1, m, strlen(m));
    free(m);
    {
        /* Wait until it is running (its first line), then interrupt. */
        int64_t deadline = now_ms() + 60000;
        bool started = false;
        while (!started && now_ms() < deadline) {
            int op;
            char *data;
            size_t len;
            if (ws_recv(c, &op, &data, &len, 1000) == 1) {
                /* the stream text "start\n", not execute_input's code */
                started = strstr(data, "\"start\\n\"") != NULL;
                free(data);
            }
        }
        ck_assert(started);
    }
    snprintf(path, sizeof(path), "/api/kernels/%s/interrupt", id);
    ck_assert_int_eq(status_of("POST", path, NULL, hdrs_a), 204);
    collect(&t, c, "loop", 30000);
    ck_assert_str_eq(t.ename, "KeyboardInterrupt");
    ck_assert_str_eq(t.reply_status, "error");

    /* Restart: same id, a fresh namespace. */
    snprintf(path, sizeof(path), "/api/kernels/%s/restart", id);
    ck_assert_int_eq(it_request(&r, &S, "POST", path, NULL, hdrs_a), 0);
    ck_assert_msg(r.status == 200, "%ld %s", r.status, r.body);
    ck_assert_str_eq(json_string_value(json_object_get(r.json, "id")), id);
    it_resp_free(&r);
    wait_state(id, "idle");
    execute(&t, c, "after", "print('x' in globals())", false);
    ck_assert_str_eq(t.stdout_text, "False\n");
    ws_close_fd(c);
    free(c);
    delete_kernel(id);
    free(id);
}
END_TEST

START_TEST(another_users_kernel_and_session_answer_404)
{
    char *id = start_kernel(hdrs_a), path[200];
    wsc c;
    char auth[200];
    it_resp r;

    snprintf(path, sizeof(path), "/api/kernels/%s", id);
    ck_assert_int_eq(status_of("GET", path, NULL, hdrs_b), 404);
    ck_assert_int_eq(status_of("DELETE", path, NULL, hdrs_b), 404);
    snprintf(path, sizeof(path), "/api/kernels/%s/interrupt", id);
    ck_assert_int_eq(status_of("POST", path, NULL, hdrs_b), 404);
    snprintf(path, sizeof(path), "/api/kernels/%s/restart", id);
    ck_assert_int_eq(status_of("POST", path, NULL, hdrs_b), 404);
    snprintf(path, sizeof(path), "/api/kernels/%s/channels", id);
    snprintf(auth, sizeof(auth), "Authorization: Bearer %s", key_b);
    ck_assert_int_eq(ws_open(&c, path, auth, NULL), 404);
    ws_close_fd(&c);
    /* bob's list does not show it; alice's does. */
    ck_assert_int_eq(it_request(&r, &S, "GET", "/api/kernels", NULL, hdrs_b), 0);
    ck_assert_uint_eq(json_array_size(r.json), 0);
    it_resp_free(&r);
    ck_assert_int_eq(it_request(&r, &S, "GET", "/api/kernels", NULL, hdrs_a), 0);
    ck_assert_uint_ge(json_array_size(r.json), 1);
    it_resp_free(&r);
    /* bob cannot attach a session to it. */
    snprintf(path, sizeof(path), "{\"path\":\"x.ipynb\",\"type\":\"notebook\",\"kernel\":{\"id\":\"%s\"}}", id);
    ck_assert_int_eq(status_of("POST", "/api/sessions", path, hdrs_b), 404);
    delete_kernel(id);
    free(id);
}
END_TEST

START_TEST(sessions_create_reuse_rename_and_delete_with_their_kernel)
{
    it_resp r;
    char sid[64], kid[64], path[160];

    cleanup_kernels();

    ck_assert_int_eq(it_request(&r, &S, "POST", "/api/sessions",
                                "{\"path\":\"s.ipynb\",\"name\":\"s.ipynb\",\"type\":\"notebook\","
                                "\"kernel\":{\"name\":\"python3\"}}",
                                hdrs_a), 0);
    ck_assert_msg(r.status == 201, "%ld %s", r.status, r.body);
    snprintf(sid, sizeof(sid), "%s", json_string_value(json_object_get(r.json, "id")));
    snprintf(kid, sizeof(kid), "%s",
             json_string_value(json_object_get(json_object_get(r.json, "kernel"), "id")));
    ck_assert_str_eq(json_string_value(json_object_get(r.json, "path")), "s.ipynb");
    it_resp_free(&r);
    /* The same path answers the same session. */
    ck_assert_int_eq(it_request(&r, &S, "POST", "/api/sessions",
                                "{\"path\":\"s.ipynb\",\"type\":\"notebook\",\"kernel\":{\"name\":\"python3\"}}",
                                hdrs_a), 0);
    ck_assert_str_eq(json_string_value(json_object_get(r.json, "id")), sid);
    it_resp_free(&r);
    snprintf(path, sizeof(path), "/api/sessions/%s", sid);
    ck_assert_int_eq(it_request(&r, &S, "PATCH", path, "{\"path\":\"t.ipynb\"}", hdrs_a), 0);
    ck_assert_int_eq(r.status, 200);
    ck_assert_str_eq(json_string_value(json_object_get(r.json, "path")), "t.ipynb");
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(r.json, "kernel"), "id")), kid);
    it_resp_free(&r);
    ck_assert_int_eq(status_of("GET", path, NULL, hdrs_b), 404);
    ck_assert_int_eq(it_request(&r, &S, "GET", "/api/sessions", NULL, hdrs_a), 0);
    ck_assert_uint_eq(json_array_size(r.json), 1);
    it_resp_free(&r);
    ck_assert_int_eq(status_of("POST", "/api/sessions", "{\"type\":\"notebook\"}", hdrs_a), 400);
    ck_assert_int_eq(status_of("DELETE", path, NULL, hdrs_a), 204);
    ck_assert_int_eq(status_of("GET", path, NULL, hdrs_a), 404);
    /* Its kernel was shut down with it (a starting kernel stops once it is up). */
    snprintf(path, sizeof(path), "/api/kernels/%s", kid);
    for (int64_t deadline = now_ms() + 60000;;) {
        bool gone;
        ck_assert_int_eq(it_request(&r, &S, "GET", path, NULL, hdrs_a), 0);
        gone = r.status == 404 ||
               strcmp(json_string_value(json_object_get(r.json, "execution_state")), "dead") == 0;
        if (!gone && now_ms() > deadline)
            ck_abort_msg("kernel after session delete: %ld %s", r.status, r.body);
        it_resp_free(&r);
        if (gone)
            break;
        usleep(200000);
    }
}
END_TEST

START_TEST(malformed_frames_close_the_connection_with_1002)
{
    char *id = start_kernel(hdrs_a);
    wsc *c = malloc(sizeof(*c));
    int op;
    char *data;
    size_t len;

    ck_assert_int_eq(ws_open_kernel(c, id, NULL), 101);
    ws_send_raw(c, 0x81, "{}", 2, false);   /* a client frame must be masked */
    for (;;) {
        int rc = ws_recv(c, &op, &data, &len, 10000);
        ck_assert_int_eq(rc, 1);
        if (op == 0x8)
            break;
        free(data);
    }
    ck_assert_uint_ge(len, 2);
    ck_assert_int_eq(((uint8_t)data[0] << 8) | (uint8_t)data[1], 1002);
    free(data);
    /* The server then ends the connection. */
    while (ws_recv(c, &op, &data, &len, 10000) == 1)
        free(data);
    ws_close_fd(c);

    ck_assert_int_eq(ws_open_kernel(c, id, NULL), 101);
    ws_send_raw(c, 0x09, "x", 1, true);     /* a fragmented ping */
    for (;;) {
        ck_assert_int_eq(ws_recv(c, &op, &data, &len, 10000), 1);
        if (op == 0x8)
            break;
        free(data);
    }
    ck_assert_int_eq(((uint8_t)data[0] << 8) | (uint8_t)data[1], 1002);
    free(data);
    ws_close_fd(c);
    free(c);
    delete_kernel(id);
    free(id);
}
END_TEST

START_TEST(server_stop_closes_open_websockets_with_1001)
{
    char *id;
    setup();   /* this test's own server: it stops it itself */
    id = start_kernel(hdrs_a);
    wsc *c = malloc(sizeof(*c));
    int op = 0;
    char *data = NULL;
    size_t len = 0;
    int rc;

    ck_assert_int_eq(ws_open_kernel(c, id, NULL), 101);
    free(id);
    ck_assert_int_eq(it_server_stop(&S), 0);   /* a clean exit with a WebSocket open */
    while ((rc = ws_recv(c, &op, &data, &len, 10000)) == 1 && op != 0x8)
        free(data);
    ck_assert_int_eq(rc, 1);
    ck_assert_int_eq(((uint8_t)data[0] << 8) | (uint8_t)data[1], 1001);
    free(data);
    ws_close_fd(c);
    free(c);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("jupyter");
    TCase *a = tcase_create("api");
    TCase *k = tcase_create("kernels");

    tcase_add_unchecked_fixture(a, setup, teardown);
    tcase_add_test(a, api_version_status_and_kernelspecs);
    tcase_add_test(a, api_token_query_param_is_refused_outside_the_websocket);
    tcase_add_test(a, contents_notebooks_files_and_directories_round_trip);
    tcase_add_test(a, contents_refuses_bad_notebooks_and_paths_writing_nothing);
    tcase_add_test(a, cookie_callers_may_send_the_csrf_token_as_x_xsrftoken_on_jupyter_routes_only);
    tcase_add_test(a, contents_untitled_rename_delete_and_checkpoints);
    tcase_add_test(a, websocket_handshake_refusals);
    suite_add_tcase(s, a);

    tcase_add_unchecked_fixture(k, setup, teardown);
    tcase_set_timeout(k, 240);
    tcase_add_test(k, kernel_over_json_channels_runs_code_in_order_with_tracebacks_and_ping);
    tcase_add_test(k, kernel_over_v1_subprotocol_and_query_token);
    tcase_add_test(k, kernel_interrupt_and_restart_keep_the_id);
    tcase_add_test(k, another_users_kernel_and_session_answer_404);
    tcase_add_test(k, sessions_create_reuse_rename_and_delete_with_their_kernel);
    tcase_add_test(k, malformed_frames_close_the_connection_with_1002);
    suite_add_tcase(s, k);

    TCase *d = tcase_create("shutdown");
    tcase_set_timeout(d, 120);
    tcase_add_test(d, server_stop_closes_open_websockets_with_1001);
    suite_add_tcase(s, d);
    return s;
}

int main(void)
{
    return it_suite_run(suite());
}
