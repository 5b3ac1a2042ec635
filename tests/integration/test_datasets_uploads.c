/* Resumable dataset uploads over HTTP against the real `eddy serve` (issue
 * 15): opening, chunks with Content-Range, status, cancel; bad input (a
 * chunk that overlaps or skips, a malformed or inconsistent Content-Range, a
 * wrong sha256, another user's upload); a request refused before its body
 * is read; a 200 MiB upload in chunks with one chunk cut off mid-way (the
 * connection closed) and resumed; kill -9 of the server after some chunks
 * and in the middle of a chunk, restarted on the same data directory: the
 * offset is what was durable, the upload resumes and finishes with its
 * sha256 checked; kill -9 in the middle of a publish: after the restart no
 * half version is visible and publishing again works. */
#include "harness.h"
#include "it_db.h"

#include "ed_crypto.h"

#include <arpa/inet.h>
#include <check.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
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

typedef struct user {
    char cookie[512];
    char csrf[256];
} user;

static user alice, bob;

static void sign_in(user *u, const char *name)
{
    char *cookie = NULL, *csrf = NULL;

    ck_assert_int_eq(it_signup_login(&srv, name, "correct horse battery", &cookie, &csrf), 0);
    snprintf(u->cookie, sizeof(u->cookie), "Cookie: %s", cookie);
    snprintf(u->csrf, sizeof(u->csrf), "X-CSRF-Token: %s", csrf);
    free(cookie);
    free(csrf);
}

static void setup(void)
{
    ck_assert_int_eq(it_server_start(&srv, NULL), 0);
    sign_in(&alice, "alice");
    sign_in(&bob, "bob");
}

static void teardown(void)
{
    srv.keep_data = 0;
    ck_assert_int_eq(it_server_stop(&srv), 0);
}

/* One request as `u` with an optional extra header. */
static long call(it_resp *r, const user *u, const char *method, const char *body, long len, const char *extra,
                 const char *fmt, ...) __attribute__((format(printf, 7, 8)));
static long call(it_resp *r, const user *u, const char *method, const char *body, long len, const char *extra,
                 const char *fmt, ...)
{
    char path[2048];
    const char *hdrs[] = {u->cookie, u->csrf, extra, NULL};
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(path, sizeof(path), fmt, ap);
    va_end(ap);
    ck_assert_int_eq(it_request_n(r, &srv, method, path, body, len, hdrs), 0);
    return r->status;
}

static const char *str(const it_resp *r, const char *key)
{
    const char *s = r->json ? json_string_value(json_object_get(r->json, key)) : NULL;
    return s ? s : "";
}

static long long num(const it_resp *r, const char *key)
{
    return r->json ? json_integer_value(json_object_get(r->json, key)) : -1;
}

static void make_dataset(char *id, const user *u)
{
    it_resp r;

    ck_assert_int_eq(call(&r, u, "POST", "{\"name\":\"up\"}", -1, NULL, "/api/v1/datasets"), 201);
    snprintf(id, 37, "%s", str(&r, "id"));
    it_resp_free(&r);
}

static void open_upload(char *uid, const user *u, const char *id, const char *path, const void *bytes,
                        size_t n)
{
    char sha[65], body[400];
    it_resp r;

    ed_sha256_hex(sha, bytes, n);
    snprintf(body, sizeof(body), "{\"path\":\"%s\",\"size\":%zu,\"sha256\":\"%s\"}", path, n, sha);
    ck_assert_int_eq(call(&r, u, "POST", body, -1, NULL, "/api/v1/datasets/%s/uploads", id), 201);
    ck_assert_int_eq(num(&r, "offset"), 0);
    ck_assert_int_eq(num(&r, "size"), (long long)n);
    snprintf(uid, 37, "%s", str(&r, "upload_id"));
    it_resp_free(&r);
}

/* PUT bytes [a, a+n) of `total`; the status, r filled. */
static long chunk(it_resp *r, const user *u, const char *uid, const char *bytes, size_t a, size_t n, size_t total)
{
    char range[120];

    snprintf(range, sizeof(range), "Content-Range: bytes %zu-%zu/%zu", a, a + n - 1, total);
    return call(r, u, "PUT", bytes + a, (long)n, range, "/api/v1/uploads/%s", uid);
}

static long long offset_of(const user *u, const char *uid)
{
    it_resp r;
    long long off;

    ck_assert_int_eq(call(&r, u, "GET", NULL, 0, NULL, "/api/v1/uploads/%s", uid), 200);
    off = num(&r, "offset");
    it_resp_free(&r);
    return off;
}

static char *random_bytes(size_t n, unsigned seed)
{
    char *b = malloc(n);
    uint64_t x = 0x9E3779B97F4A7C15ull ^ seed;

    ck_assert_ptr_nonnull(b);
    for (size_t i = 0; i < n; i += 8) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        memcpy(b + i, &x, n - i < 8 ? n - i : 8);
    }
    return b;
}

/* A raw connection to the server: the request line and headers of a chunk
 * PUT announcing `content_length` bytes, then `n` bytes of `body`, not
 * more. The socket (the caller closes it or keeps it). */
static int raw_put(const user *u, const char *uid, const char *range, size_t content_length, const char *body,
                   size_t n)
{
    struct sockaddr_in sa = {0};
    char head[2048];
    int fd = socket(AF_INET, SOCK_STREAM, 0), len;

    ck_assert_int_ge(fd, 0);
    sa.sin_family = AF_INET;
    sa.sin_port = htons((uint16_t)srv.port);
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ck_assert_int_eq(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    len = snprintf(head, sizeof(head),
                   "PUT /api/v1/uploads/%s HTTP/1.1\r\nHost: 127.0.0.1\r\n%s\r\n%s\r\n%s\r\n"
                   "Content-Length: %zu\r\n\r\n",
                   uid, u->cookie, u->csrf, range, content_length);
    ck_assert_int_eq(write(fd, head, (size_t)len), len);
    for (size_t done = 0; done < n;) {
        ssize_t w = write(fd, body + done, n - done);
        ck_assert_int_gt(w, 0);
        done += (size_t)w;
    }
    return fd;
}

/* Bytes of the upload's file on disk (-1 when missing). */
static long long upload_file_size(const char *uid)
{
    char p[600];
    struct stat sb;

    snprintf(p, sizeof(p), "%s/datasets/uploads/%s", srv.data_dir, uid);
    return stat(p, &sb) == 0 ? (long long)sb.st_size : -1;
}

static void kill9_and_restart(void)
{
    char dir[256];

    snprintf(dir, sizeof(dir), "%s", srv.data_dir);
    ck_assert_int_eq(kill(srv.pid, SIGKILL), 0);
    ck_assert_int_eq(waitpid(srv.pid, NULL, 0), srv.pid);
    ck_assert_int_eq(it_server_start_in(&srv, dir, NULL), 0);
    /* sessions are in the store: the cookies still work */
}

START_TEST(upload_flow_and_bad_input)
{
    char id[37], uid[37], range[120];
    size_t n = 300000;
    char *b = random_bytes(n, 1);
    it_resp r;

    make_dataset(id, &alice);
    open_upload(uid, &alice, id, "data/file.bin", b, n);
    /* first chunk */
    ck_assert_int_eq(chunk(&r, &alice, uid, b, 0, 100000, n), 200);
    ck_assert_int_eq(num(&r, "offset"), 100000);
    ck_assert(json_is_false(json_object_get(r.json, "done")));
    it_resp_free(&r);
    /* overlap and skip: 409 naming the offset, nothing changes */
    ck_assert_int_eq(chunk(&r, &alice, uid, b, 50000, 100000, n), 409);
    ck_assert_int_eq(num(&r, "offset"), 100000);
    ck_assert_ptr_nonnull(strstr(r.body, "100000"));
    it_resp_free(&r);
    ck_assert_int_eq(chunk(&r, &alice, uid, b, 150000, 100000, n), 409);
    it_resp_free(&r);
    /* malformed or inconsistent Content-Range: 400 */
    {
        static const char *bad[] = {
            NULL, "Content-Range: bytes 100000-199999", "Content-Range: bytes=100000-199999/300000",
            "Content-Range: bytes 199999-100000/300000", "Content-Range: bytes 100000-199999/300001",
            "Content-Range: bytes 100000-300000/300000", "Content-Range: items 100000-199999/300000",
            "Content-Range: bytes -1-199999/300000", "Content-Range: bytes 100000-199999/300000x",
            "Content-Range: bytes 100000-100009/300000",   /* says 10 bytes, 100000 sent */
        };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
            call(&r, &alice, "PUT", b + 100000, 100000, bad[i], "/api/v1/uploads/%s", uid);
            if (r.status != 400)
                fprintf(stderr, "%s: %ld %s\n", bad[i] ? bad[i] : "(none)", r.status, r.body);
            ck_assert_int_eq(r.status, 400);
            it_resp_free(&r);
        }
    }
    ck_assert_int_eq(offset_of(&alice, uid), 100000);
    /* another user's upload, an unknown one: 404 (also before the body) */
    ck_assert_int_eq(chunk(&r, &bob, uid, b, 100000, 100000, n), 404);
    it_resp_free(&r);
    ck_assert_int_eq(call(&r, &bob, "GET", NULL, 0, NULL, "/api/v1/uploads/%s", uid), 404);
    it_resp_free(&r);
    ck_assert_int_eq(call(&r, &bob, "DELETE", NULL, 0, NULL, "/api/v1/uploads/%s", uid), 404);
    it_resp_free(&r);
    ck_assert_int_eq(call(&r, &alice, "GET", NULL, 0, NULL, "/api/v1/uploads/nope"), 404);
    it_resp_free(&r);
    snprintf(range, sizeof(range), "Content-Range: bytes 0-9/10");
    ck_assert_int_eq(call(&r, &alice, "PUT", b, 10, range, "/api/v1/uploads/nope"), 404);
    it_resp_free(&r);
    /* the rest; the last chunk finishes it into the draft */
    ck_assert_int_eq(chunk(&r, &alice, uid, b, 100000, 100000, n), 200);
    it_resp_free(&r);
    ck_assert_int_eq(chunk(&r, &alice, uid, b, 200000, 100000, n), 200);
    ck_assert(json_is_true(json_object_get(r.json, "done")));
    {
        char sha[65];
        ed_sha256_hex(sha, b, n);
        ck_assert_str_eq(json_string_value(json_object_get(json_object_get(r.json, "file"), "sha256")), sha);
        ck_assert_str_eq(json_string_value(json_object_get(json_object_get(r.json, "file"), "path")),
                         "data/file.bin");
    }
    it_resp_free(&r);
    ck_assert_int_eq(call(&r, &alice, "GET", NULL, 0, NULL, "/api/v1/uploads/%s", uid), 404);   /* finished */
    it_resp_free(&r);
    ck_assert_int_eq(call(&r, &alice, "GET", NULL, 0, NULL, "/api/v1/datasets/%s/draft", id), 200);
    ck_assert_int_eq(num(&r, "file_count"), 1);
    it_resp_free(&r);
    /* a wrong sha256: 400 naming both, the upload discarded */
    {
        char body[300];
        snprintf(body, sizeof(body), "{\"path\":\"w.bin\",\"size\":1000,\"sha256\":\"%064d\"}", 0);
        ck_assert_int_eq(call(&r, &alice, "POST", body, -1, NULL, "/api/v1/datasets/%s/uploads", id), 201);
        snprintf(uid, sizeof(uid), "%s", str(&r, "upload_id"));
        it_resp_free(&r);
        ck_assert_int_eq(chunk(&r, &alice, uid, b, 0, 1000, 1000), 400);
        {
            char sha[65];
            ed_sha256_hex(sha, b, 1000);
            ck_assert_ptr_nonnull(strstr(r.body, sha));
            ck_assert_ptr_nonnull(strstr(r.body, "0000000000000000000000000000000000000000000000000000000000000000"));
        }
        it_resp_free(&r);
        ck_assert_int_eq(call(&r, &alice, "GET", NULL, 0, NULL, "/api/v1/uploads/%s", uid), 404);
        it_resp_free(&r);
    }
    /* bad opens */
    {
#define Z64 "0000000000000000000000000000000000000000000000000000000000000000"
        static const char *bad[] = {
            "{\"path\":\"../x\",\"size\":1,\"sha256\":\"" Z64 "\"}",
            "{\"path\":\"a\\u0000b\",\"size\":1,\"sha256\":\"" Z64 "\"}",
            "{\"path\":\"a\\nb\",\"size\":1,\"sha256\":\"" Z64 "\"}",
            "{\"path\":\"/abs\",\"size\":1,\"sha256\":\"" Z64 "\"}",
            "{\"path\":\"x\",\"size\":1,\"sha256\":\"abc0\"}",
            "{\"path\":\"x\",\"size\":1,\"sha256\":\"" Z64 "0\"}",
            "{\"path\":\"x\",\"size\":\"1\",\"sha256\":\"" Z64 "\"}",
            "{\"path\":\"x\",\"size\":-1,\"sha256\":\"" Z64 "\"}",
            "{\"path\":\"x\",\"sha256\":\"" Z64 "\"}",
        };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
            char body[300];
            snprintf(body, sizeof(body), "%s", bad[i]);
            call(&r, &alice, "POST", body, -1, NULL, "/api/v1/datasets/%s/uploads", id);
            if (r.status != 400 && r.status != 422)
                fprintf(stderr, "%s: %ld %s\n", body, r.status, r.body);
            ck_assert(r.status == 400 || r.status == 422);
            it_resp_free(&r);
        }
        /* another user's private dataset */
        char body[300];
        snprintf(body, sizeof(body), "{\"path\":\"x\",\"size\":1,\"sha256\":\"%064d\"}", 0);
        ck_assert_int_eq(call(&r, &bob, "POST", body, -1, NULL, "/api/v1/datasets/%s/uploads", id), 404);
        it_resp_free(&r);
    }
    /* cancel */
    open_upload(uid, &alice, id, "c.bin", b, 1000);
    ck_assert_int_eq(call(&r, &alice, "DELETE", NULL, 0, NULL, "/api/v1/uploads/%s", uid), 204);
    it_resp_free(&r);
    ck_assert_int_eq(call(&r, &alice, "GET", NULL, 0, NULL, "/api/v1/uploads/%s", uid), 404);
    it_resp_free(&r);
    free(b);
}
END_TEST

/* A refusal comes before the body: the server answers a chunk PUT to
 * another user's upload announcing 1 GiB without waiting for any byte. */
START_TEST(refused_before_the_body)
{
    char id[37], uid[37], resp[4096];
    char *b = random_bytes(1000, 2);
    struct timeval tv = {30, 0};
    ssize_t got;
    int fd;

    make_dataset(id, &alice);
    open_upload(uid, &alice, id, "x.bin", b, 1000);
    fd = raw_put(&bob, uid, "Content-Range: bytes 0-1073741823/1073741824", (size_t)1 << 30, NULL, 0);
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    got = read(fd, resp, sizeof(resp) - 1);
    ck_assert_int_gt(got, 0);
    resp[got] = '\0';
    ck_assert_ptr_nonnull(strstr(resp, "HTTP/1.1 404"));
    close(fd);
    /* and an offset conflict the same way, with the offset in the body */
    fd = raw_put(&alice, uid, "Content-Range: bytes 500-999/1000", 500, NULL, 0);
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    got = read(fd, resp, sizeof(resp) - 1);
    ck_assert_int_gt(got, 0);
    resp[got] = '\0';
    ck_assert_ptr_nonnull(strstr(resp, "HTTP/1.1 409"));
    close(fd);
    /* the server is fine afterwards */
    ck_assert_int_eq(offset_of(&alice, uid), 0);
    free(b);
}
END_TEST

/* Send a chunk, retrying while the server still holds the previous,
 * dropped one open (409 at the same offset until it notices). */
static void chunk_ok(const user *u, const char *uid, const char *b, size_t a, size_t n, size_t total)
{
    it_resp r;

    for (int i = 0; i < 100; i++) {
        long s = chunk(&r, u, uid, b, a, n, total);
        if (s == 200) {
            ck_assert_int_eq(num(&r, "offset"), (long long)(a + n));
            it_resp_free(&r);
            return;
        }
        ck_assert_msg(s == 409 && num(&r, "offset") != (long long)(a + n), "chunk at %zu: %ld %s", a, s, r.body);
        it_resp_free(&r);
        usleep(100000);
    }
    ck_abort_msg("the chunk at %zu was refused for 10 s", a);
}

START_TEST(big_upload_cut_mid_chunk)
{
    const size_t n = (size_t)200 << 20, step = (size_t)32 << 20;
    char id[37], uid[37], sha[65];
    char *b = random_bytes(n, 3);
    size_t a = 0;
    it_resp r;
    int fd;

    make_dataset(id, &alice);
    open_upload(uid, &alice, id, "big.bin", b, n);
    chunk_ok(&alice, uid, b, 0, step, n);
    chunk_ok(&alice, uid, b, step, step, n);
    a = 2 * step;
    /* the third chunk: half of it, then the connection closes */
    {
        char range[120];
        snprintf(range, sizeof(range), "Content-Range: bytes %zu-%zu/%zu", a, a + step - 1, n);
        fd = raw_put(&alice, uid, range, step, b + a, step / 2);
        close(fd);
    }
    ck_assert_int_eq(offset_of(&alice, uid), (long long)a);
    for (; a < n; a += step)
        chunk_ok(&alice, uid, b, a, a + step > n ? n - a : step, n);
    ck_assert_int_eq(call(&r, &alice, "GET", NULL, 0, NULL, "/api/v1/datasets/%s/draft", id), 200);
    ed_sha256_hex(sha, b, n);
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(json_object_get(r.json, "files"), 0), "sha256")),
                     sha);
    it_resp_free(&r);
    free(b);
}
END_TEST

START_TEST(kill9_mid_upload)
{
    const size_t n = (size_t)24 << 20, step = (size_t)8 << 20;
    char id[37], uid[37], sha[65], range[120];
    char *b = random_bytes(n, 4);
    it_resp r;
    int fd;

    make_dataset(id, &alice);
    open_upload(uid, &alice, id, "k.bin", b, n);
    chunk_ok(&alice, uid, b, 0, step, n);
    /* killed between chunks */
    kill9_and_restart();
    ck_assert_int_eq(offset_of(&alice, uid), (long long)step);
    /* the saved hash state went with the offset; without one (a row from
     * before states were saved) the server hashes the durable prefix again */
    ck_assert_int_eq(it_db_int(&srv, "SELECT length(hash_state) > 0 FROM dataset_uploads WHERE id = '%s'", uid), 1);
    {
        sqlite3 *db = it_db_open(&srv);
        char sql[200];
        snprintf(sql, sizeof(sql), "UPDATE dataset_uploads SET hash_state = NULL WHERE id = '%s'", uid);
        ck_assert_int_eq(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
        sqlite3_close(db);
    }
    /* killed in the middle of a chunk: half of it is in the file, not durable */
    snprintf(range, sizeof(range), "Content-Range: bytes %zu-%zu/%zu", step, 2 * step - 1, n);
    fd = raw_put(&alice, uid, range, step, b + step, step / 2);
    for (int i = 0; i < 200 && upload_file_size(uid) < (long long)(step + step / 4); i++)
        usleep(50000);
    ck_assert_int_ge(upload_file_size(uid), (long long)(step + step / 4));
    kill9_and_restart();
    close(fd);
    ck_assert_int_eq(offset_of(&alice, uid), (long long)step);
    /* resume: what the dropped chunk left past the offset is cut off */
    chunk_ok(&alice, uid, b, step, step, n);
    chunk_ok(&alice, uid, b, 2 * step, step, n);
    ck_assert_int_eq(call(&r, &alice, "GET", NULL, 0, NULL, "/api/v1/datasets/%s/draft", id), 200);
    ed_sha256_hex(sha, b, n);
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(json_object_get(r.json, "files"), 0), "sha256")),
                     sha);
    it_resp_free(&r);
    free(b);
}
END_TEST

START_TEST(kill9_mid_publish)
{
    char id[37], dir[256];
    it_resp r;
    pid_t child;
    const char *env[] = {"EDDY_TEST_DS_PUBLISH_SLEEP_MS=3000", NULL};

    /* a server that holds every publish open for 3 s before COMMIT */
    snprintf(dir, sizeof(dir), "%s", srv.data_dir);
    srv.keep_data = 1;
    ck_assert_int_eq(it_server_stop(&srv), 0);
    ck_assert_int_eq(it_server_start_in(&srv, dir, env), 0);
    make_dataset(id, &alice);
    ck_assert_int_eq(call(&r, &alice, "PUT", "one", 3, NULL, "/api/v1/datasets/%s/draft/files/a.txt", id), 200);
    it_resp_free(&r);
    ck_assert_int_eq(call(&r, &alice, "PUT", "two", 3, NULL, "/api/v1/datasets/%s/draft/files/b/c.txt", id), 200);
    it_resp_free(&r);
    /* publish from a child; kill -9 the server while the publish waits */
    child = fork();
    ck_assert_int_ge(child, 0);
    if (child == 0) {
        it_resp cr;
        const char *hdrs[] = {alice.cookie, alice.csrf, NULL};
        char path[200];
        snprintf(path, sizeof(path), "/api/v1/datasets/%s/versions", id);
        it_request_n(&cr, &srv, "POST", path, "{\"message\":\"half\"}", -1, hdrs);
        _exit(cr.status == 201 ? 1 : 0);   /* it must never have answered 201 */
    }
    {
        /* wait until the publish holds its transaction: the server logs the
         * request only at the end, so watch for the version row instead is
         * impossible (uncommitted); give it its 3 s window's first second */
        struct timespec ts = {1, 0};
        nanosleep(&ts, NULL);
    }
    snprintf(dir, sizeof(dir), "%s", srv.data_dir);
    ck_assert_int_eq(kill(srv.pid, SIGKILL), 0);
    ck_assert_int_eq(waitpid(srv.pid, NULL, 0), srv.pid);
    {
        int st = 0;
        ck_assert_int_eq(waitpid(child, &st, 0), child);
        ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    }
    ck_assert_int_eq(it_server_start_in(&srv, dir, NULL), 0);
    ck_assert_int_eq(call(&r, &alice, "GET", NULL, 0, NULL, "/api/v1/datasets/%s", id), 200);
    ck_assert_int_eq(num(&r, "latest_version"), 0);
    it_resp_free(&r);
    ck_assert_int_eq(call(&r, &alice, "GET", NULL, 0, NULL, "/api/v1/datasets/%s/versions", id), 200);
    ck_assert_int_eq(json_array_size(json_object_get(r.json, "items")), 0);
    it_resp_free(&r);
    ck_assert_int_eq(call(&r, &alice, "GET", NULL, 0, NULL, "/api/v1/datasets/%s/versions/1", id), 404);
    it_resp_free(&r);
    /* the draft is whole and publishes */
    ck_assert_int_eq(call(&r, &alice, "POST", "{\"message\":\"again\"}", -1, NULL, "/api/v1/datasets/%s/versions", id),
                     201);
    ck_assert_int_eq(num(&r, "number"), 1);
    ck_assert_int_eq(num(&r, "file_count"), 2);
    it_resp_free(&r);
}
END_TEST

/* A client that stops sending in the middle of a chunk is cut off by the
 * idle timeout like any slow client; the chunk is aborted (the offset
 * stays) and the upload takes the chunk again at once. */
START_TEST(stalled_chunk_times_out)
{
    const size_t n = 1 << 20;
    char id[37], uid[37], dir[256], range[120], buf[256];
    char *b = random_bytes(n, 5);
    const char *env[] = {"EDDY_CONN_TIMEOUT_S=2", NULL};
    struct timeval tv = {60, 0};
    it_resp r;
    ssize_t got;
    int fd;

    snprintf(dir, sizeof(dir), "%s", srv.data_dir);
    srv.keep_data = 1;
    ck_assert_int_eq(it_server_stop(&srv), 0);
    ck_assert_int_eq(it_server_start_in(&srv, dir, env), 0);
    make_dataset(id, &alice);
    open_upload(uid, &alice, id, "s.bin", b, n);
    snprintf(range, sizeof(range), "Content-Range: bytes 0-%zu/%zu", n - 1, n);
    fd = raw_put(&alice, uid, range, n, b, 1000);
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    got = read(fd, buf, sizeof(buf));   /* the server closes: 0 (or a reset) */
    ck_assert_int_le(got, 0);
    close(fd);
    ck_assert_int_eq(offset_of(&alice, uid), 0);
    ck_assert_int_eq(chunk(&r, &alice, uid, b, 0, n, n), 200);
    ck_assert(json_is_true(json_object_get(r.json, "done")));
    it_resp_free(&r);
    free(b);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("dataset uploads");
    TCase *tc = tcase_create("http");

    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 180);
    tcase_add_test(tc, upload_flow_and_bad_input);
    tcase_add_test(tc, refused_before_the_body);
    tcase_add_test(tc, big_upload_cut_mid_chunk);
    tcase_add_test(tc, kill9_mid_upload);
    tcase_add_test(tc, kill9_mid_publish);
    tcase_add_test(tc, stalled_chunk_times_out);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(suite());
    int failed;

    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
