/* Reading a dataset version's bytes and publishing versions from a project,
 * against the real `eddy serve` (issue 15, API.md "Datasets"):
 *
 *  - GET .../versions/{n}/files/{path}: the bytes with their media type, an
 *    ETag that is the sha256, Accept-Ranges; one Range (a-b, a-, -n) is 206
 *    with Content-Range, a range past the end 416 "bytes * /size", several
 *    ranges the whole file, If-None-Match 304, If-Range with another
 *    validator the whole file; "latest"; another user's private dataset 404,
 *    a public one readable without signing in; user HTML is an attachment
 *    in a CSP sandbox.
 *  - a 300 MiB file sent through the resumable upload API, read back in
 *    ranges and compared byte for byte, and whole (its sha256).
 *  - GET .../archive: a tar named owner-slug-vN.tar that `tar -t` lists as
 *    the manifest (a path over 100 bytes through a pax header, an empty
 *    file) and whose extracted files have the manifest's sha256.
 *  - POST .../versions/from {project_id}: every file of the working tree but
 *    .git, `paths` and `dest_dir`, source recorded; bad bodies 400, an
 *    unknown path 404, another user's private project 404, a reader of the
 *    dataset 403.
 * Jobs: test_dataset_files_job.c. */
#include "harness.h"

#include "ed_crypto.h"

#include <check.h>
#include <sodium.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
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

static void teardown(void) { ck_assert_int_eq(it_server_stop(&srv), 0); }

/* One request as `u` (NULL: anonymous) with up to two extra header lines. */
static long callh(it_resp *r, const user *u, const char *h1, const char *h2, const char *method, const char *body,
                  long len, const char *fmt, ...) __attribute__((format(printf, 8, 9)));
static long callh(it_resp *r, const user *u, const char *h1, const char *h2, const char *method, const char *body,
                  long len, const char *fmt, ...)
{
    char path[8192];
    const char *hdrs[5] = {0};
    int n = 0;
    va_list ap;

    if (u) {
        hdrs[n++] = u->cookie;
        hdrs[n++] = u->csrf;
    }
    if (h1)
        hdrs[n++] = h1;
    if (h2)
        hdrs[n++] = h2;
    va_start(ap, fmt);
    vsnprintf(path, sizeof(path), fmt, ap);
    va_end(ap);
    it_request_n(r, &srv, method, path, body, len, hdrs);
    return r->status;
}

#define call(r, u, method, body, ...) callh((r), (u), NULL, NULL, (method), (body), -1, __VA_ARGS__)

/* A dataset of `u` named `name`: its id into `id`. */
static void dataset_make(char id[64], const user *u, const char *name, const char *visibility)
{
    char body[256];
    it_resp r;

    snprintf(body, sizeof(body), "{\"name\":\"%s\",\"visibility\":\"%s\"}", name, visibility);
    ck_assert_msg(call(&r, u, "POST", body, "/api/v1/datasets") == 201, "create: %ld %s", r.status, r.body);
    snprintf(id, 64, "%s", it_json_str(r.json, "id"));
    it_resp_free(&r);
}

/* Put `len` bytes at `path` of the draft (the small-file PUT). */
static void draft_put(const user *u, const char *id, const char *path, const char *data, size_t len)
{
    it_resp r;

    ck_assert_msg(callh(&r, u, NULL, NULL, "PUT", data, (long)len, "/api/v1/datasets/%s/draft/files/%s", id, path) ==
                      200 ||
                      r.status == 201,
                  "put %s: %ld %s", path, r.status, r.body);
    it_resp_free(&r);
}

/* Publish the draft; the version's JSON (a new reference). */
static json_t *publish(const user *u, const char *id, const char *message)
{
    char body[256];
    it_resp r;
    json_t *v;

    snprintf(body, sizeof(body), "{\"message\":\"%s\"}", message);
    ck_assert_msg(call(&r, u, "POST", body, "/api/v1/datasets/%s/versions", id) == 201, "publish: %ld %s", r.status,
                  r.body);
    v = json_incref(r.json);
    it_resp_free(&r);
    return v;
}

static void sha_hex(char out[65], const void *data, size_t n) { ed_sha256_hex(out, data, n); }

START_TEST(file_ranges_etag_and_conditionals)
{
    static const char text[] = "0123456789abcdefghij";   /* 20 bytes */
    const char *html = "<script>alert(1)</script>";
    char id[64], sha[65], etag[80], inm[100], ifr[100];
    it_resp r;
    json_t *v;

    dataset_make(id, &alice, "Ranges", "private");
    draft_put(&alice, id, "dir/data.txt", text, 20);
    draft_put(&alice, id, "page.html", html, strlen(html));
    v = publish(&alice, id, "one");
    json_decref(v);
    sha_hex(sha, text, 20);
    snprintf(etag, sizeof(etag), "\"%s\"", sha);

    /* the whole file */
    ck_assert_int_eq(call(&r, &alice, "GET", NULL, "/api/v1/datasets/%s/versions/1/files/dir/data.txt", id), 200);
    ck_assert_uint_eq(r.body_len, 20);
    ck_assert_int_eq(memcmp(r.body, text, 20), 0);
    ck_assert_str_eq(it_resp_header(&r, "ETag"), etag);
    ck_assert_str_eq(it_resp_header(&r, "Accept-Ranges"), "bytes");
    ck_assert_str_eq(it_resp_header(&r, "Content-Type"), "text/plain");
    it_resp_free(&r);
    /* "latest" is the same file */
    ck_assert_int_eq(call(&r, &alice, "GET", NULL, "/api/v1/datasets/%s/versions/latest/files/dir/data.txt", id), 200);
    ck_assert_str_eq(it_resp_header(&r, "ETag"), etag);
    it_resp_free(&r);

    /* bytes=a-b, a-, -n */
    ck_assert_int_eq(callh(&r, &alice, "Range: bytes=2-5", NULL, "GET", NULL, -1,
                           "/api/v1/datasets/%s/versions/1/files/dir/data.txt", id),
                     206);
    ck_assert_uint_eq(r.body_len, 4);
    ck_assert_int_eq(memcmp(r.body, "2345", 4), 0);
    ck_assert_str_eq(it_resp_header(&r, "Content-Range"), "bytes 2-5/20");
    it_resp_free(&r);
    ck_assert_int_eq(callh(&r, &alice, "Range: bytes=15-", NULL, "GET", NULL, -1,
                           "/api/v1/datasets/%s/versions/1/files/dir/data.txt", id),
                     206);
    ck_assert_uint_eq(r.body_len, 5);
    ck_assert_int_eq(memcmp(r.body, "fghij", 5), 0);
    ck_assert_str_eq(it_resp_header(&r, "Content-Range"), "bytes 15-19/20");
    it_resp_free(&r);
    ck_assert_int_eq(callh(&r, &alice, "Range: bytes=-3", NULL, "GET", NULL, -1,
                           "/api/v1/datasets/%s/versions/1/files/dir/data.txt", id),
                     206);
    ck_assert_uint_eq(r.body_len, 3);
    ck_assert_int_eq(memcmp(r.body, "hij", 3), 0);
    it_resp_free(&r);
    /* an end past the file is cut to it */
    ck_assert_int_eq(callh(&r, &alice, "Range: bytes=18-1000", NULL, "GET", NULL, -1,
                           "/api/v1/datasets/%s/versions/1/files/dir/data.txt", id),
                     206);
    ck_assert_str_eq(it_resp_header(&r, "Content-Range"), "bytes 18-19/20");
    it_resp_free(&r);
    /* past the end: 416 with the size */
    ck_assert_int_eq(callh(&r, &alice, "Range: bytes=20-", NULL, "GET", NULL, -1,
                           "/api/v1/datasets/%s/versions/1/files/dir/data.txt", id),
                     416);
    ck_assert_str_eq(it_resp_header(&r, "Content-Range"), "bytes */20");
    it_resp_free(&r);
    ck_assert_int_eq(callh(&r, &alice, "Range: bytes=-0", NULL, "GET", NULL, -1,
                           "/api/v1/datasets/%s/versions/1/files/dir/data.txt", id),
                     416);
    it_resp_free(&r);
    /* several ranges, or nonsense: the whole file */
    ck_assert_int_eq(callh(&r, &alice, "Range: bytes=0-1,5-6", NULL, "GET", NULL, -1,
                           "/api/v1/datasets/%s/versions/1/files/dir/data.txt", id),
                     200);
    ck_assert_uint_eq(r.body_len, 20);
    it_resp_free(&r);
    ck_assert_int_eq(callh(&r, &alice, "Range: lines=1-2", NULL, "GET", NULL, -1,
                           "/api/v1/datasets/%s/versions/1/files/dir/data.txt", id),
                     200);
    it_resp_free(&r);

    /* If-None-Match: 304 without a body; another tag: 200 */
    snprintf(inm, sizeof(inm), "If-None-Match: %s", etag);
    ck_assert_int_eq(callh(&r, &alice, inm, NULL, "GET", NULL, -1, "/api/v1/datasets/%s/versions/1/files/dir/data.txt",
                           id),
                     304);
    ck_assert_uint_eq(r.body_len, 0);
    it_resp_free(&r);
    ck_assert_int_eq(callh(&r, &alice, "If-None-Match: \"nope\"", NULL, "GET", NULL, -1,
                           "/api/v1/datasets/%s/versions/1/files/dir/data.txt", id),
                     200);
    it_resp_free(&r);
    /* If-Range: the range while the copy is this one, else the whole file */
    snprintf(ifr, sizeof(ifr), "If-Range: %s", etag);
    ck_assert_int_eq(callh(&r, &alice, "Range: bytes=0-0", ifr, "GET", NULL, -1,
                           "/api/v1/datasets/%s/versions/1/files/dir/data.txt", id),
                     206);
    it_resp_free(&r);
    ck_assert_int_eq(callh(&r, &alice, "Range: bytes=0-0", "If-Range: \"old\"", "GET", NULL, -1,
                           "/api/v1/datasets/%s/versions/1/files/dir/data.txt", id),
                     200);
    ck_assert_uint_eq(r.body_len, 20);
    it_resp_free(&r);

    /* user HTML never runs as this origin's page */
    ck_assert_int_eq(call(&r, &alice, "GET", NULL, "/api/v1/datasets/%s/versions/1/files/page.html", id), 200);
    ck_assert_ptr_nonnull(strstr(it_resp_header(&r, "Content-Disposition"), "attachment"));
    ck_assert_ptr_nonnull(strstr(it_resp_header(&r, "Content-Security-Policy"), "sandbox"));
    it_resp_free(&r);

    /* unknown file, version, dataset; bad version words */
    ck_assert_int_eq(call(&r, &alice, "GET", NULL, "/api/v1/datasets/%s/versions/1/files/nope.txt", id), 404);
    it_resp_free(&r);
    ck_assert_int_eq(call(&r, &alice, "GET", NULL, "/api/v1/datasets/%s/versions/2/files/dir/data.txt", id), 404);
    it_resp_free(&r);
    ck_assert_int_eq(call(&r, &alice, "GET", NULL, "/api/v1/datasets/%s/versions/0/files/dir/data.txt", id), 404);
    it_resp_free(&r);
    ck_assert_int_eq(call(&r, &alice, "GET", NULL, "/api/v1/datasets/%s/versions/x1/files/dir/data.txt", id), 404);
    it_resp_free(&r);
    ck_assert_int_eq(call(&r, &alice, "GET", NULL,
                          "/api/v1/datasets/00000000-0000-0000-0000-000000000000/versions/1/files/a"),
                     404);
    it_resp_free(&r);
    /* private: another user and a stranger see nothing, archive included */
    ck_assert_int_eq(call(&r, &bob, "GET", NULL, "/api/v1/datasets/%s/versions/1/files/dir/data.txt", id), 404);
    it_resp_free(&r);
    ck_assert_int_eq(call(&r, NULL, "GET", NULL, "/api/v1/datasets/%s/versions/1/files/dir/data.txt", id), 404);
    it_resp_free(&r);
    ck_assert_int_eq(call(&r, &bob, "GET", NULL, "/api/v1/datasets/%s/versions/1/archive", id), 404);
    it_resp_free(&r);
    /* public: anyone reads it */
    ck_assert_int_eq(call(&r, &alice, "PATCH", "{\"visibility\":\"public\"}", "/api/v1/datasets/%s", id), 200);
    it_resp_free(&r);
    ck_assert_int_eq(call(&r, NULL, "GET", NULL, "/api/v1/datasets/%s/versions/1/files/dir/data.txt", id), 200);
    ck_assert_uint_eq(r.body_len, 20);
    it_resp_free(&r);
}
END_TEST

/* ---- 300 MiB through the upload API, read back in ranges ---------------------------- */

#define BIG_SIZE  ((int64_t)300 << 20)
#define BIG_CHUNK ((int64_t)32 << 20)

/* Deterministic bytes: 8-byte words of splitmix64 over the word's index. */
static void gen(unsigned char *out, int64_t off, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        uint64_t w = (uint64_t)(off + (int64_t)i) / 8, z = w + 0x9e3779b97f4a7c15ULL;
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
        z ^= z >> 31;
        out[i] = (unsigned char)(z >> (8 * ((off + (int64_t)i) % 8)));
    }
}

START_TEST(large_file_uploaded_then_read_in_ranges)
{
    unsigned char *buf = malloc((size_t)BIG_CHUNK), *want = malloc((size_t)BIG_CHUNK);
    crypto_hash_sha256_state st, st2;
    unsigned char d[32];
    char id[64], sha[65], sha2[65], body[300], uid[64], cr[100], range[100];
    int64_t ranges[][2] = {{0, 0}, {1, 1000}, {BIG_CHUNK - 5, BIG_CHUNK + 5}, {123456789, 123456789 + (40 << 20)},
                           {BIG_SIZE - 17, BIG_SIZE - 1}};
    it_resp r;
    json_t *v;

    ck_assert_ptr_nonnull(buf);
    ck_assert_ptr_nonnull(want);
    crypto_hash_sha256_init(&st);
    for (int64_t off = 0; off < BIG_SIZE; off += BIG_CHUNK) {
        size_t len = (size_t)(BIG_SIZE - off < BIG_CHUNK ? BIG_SIZE - off : BIG_CHUNK);
        gen(buf, off, len);
        crypto_hash_sha256_update(&st, buf, len);
    }
    crypto_hash_sha256_final(&st, d);
    for (int i = 0; i < 32; i++)
        snprintf(sha + 2 * i, 3, "%02x", d[i]);
    dataset_make(id, &alice, "Big", "private");
    snprintf(body, sizeof(body), "{\"path\":\"big/blob.bin\",\"size\":%lld,\"sha256\":\"%s\"}", (long long)BIG_SIZE,
             sha);
    ck_assert_msg(call(&r, &alice, "POST", body, "/api/v1/datasets/%s/uploads", id) == 201, "%ld %s", r.status, r.body);
    snprintf(uid, sizeof(uid), "%s", it_json_str(r.json, "upload_id"));
    it_resp_free(&r);
    for (int64_t off = 0; off < BIG_SIZE; off += BIG_CHUNK) {
        int64_t len = BIG_SIZE - off < BIG_CHUNK ? BIG_SIZE - off : BIG_CHUNK;
        gen(buf, off, (size_t)len);
        snprintf(cr, sizeof(cr), "Content-Range: bytes %lld-%lld/%lld", (long long)off, (long long)(off + len - 1),
                 (long long)BIG_SIZE);
        ck_assert_msg(callh(&r, &alice, cr, NULL, "PUT", (const char *)buf, (long)len, "/api/v1/uploads/%s", uid) ==
                          200,
                      "chunk at %lld: %ld %s", (long long)off, r.status, r.body);
        ck_assert_int_eq(json_integer_value(json_object_get(r.json, "offset")), off + len);
        it_resp_free(&r);
    }
    v = publish(&alice, id, "big");
    ck_assert_str_eq(it_json_str(json_array_get(json_object_get(v, "files"), 0), "sha256"), sha);
    json_decref(v);

    /* ranges, compared byte for byte */
    for (size_t i = 0; i < sizeof(ranges) / sizeof(ranges[0]); i++) {
        int64_t a = ranges[i][0], b = ranges[i][1];
        unsigned char *w = malloc((size_t)(b - a + 1));
        char expect[100];
        snprintf(range, sizeof(range), "Range: bytes=%lld-%lld", (long long)a, (long long)b);
        ck_assert_int_eq(callh(&r, &alice, range, NULL, "GET", NULL, -1,
                               "/api/v1/datasets/%s/versions/1/files/big/blob.bin", id),
                         206);
        snprintf(expect, sizeof(expect), "bytes %lld-%lld/%lld", (long long)a, (long long)b, (long long)BIG_SIZE);
        ck_assert_str_eq(it_resp_header(&r, "Content-Range"), expect);
        ck_assert_uint_eq(r.body_len, (size_t)(b - a + 1));
        gen(w, a, (size_t)(b - a + 1));
        ck_assert_msg(memcmp(r.body, w, (size_t)(b - a + 1)) == 0, "range %lld-%lld differs", (long long)a,
                      (long long)b);
        free(w);
        it_resp_free(&r);
    }
    /* the whole file in 64 MiB ranges, as a resuming client reads it: its sha256 */
    crypto_hash_sha256_init(&st2);
    for (int64_t a = 0; a < BIG_SIZE; a += (int64_t)64 << 20) {
        int64_t b = a + ((int64_t)64 << 20) - 1 < BIG_SIZE - 1 ? a + ((int64_t)64 << 20) - 1 : BIG_SIZE - 1;
        snprintf(range, sizeof(range), "Range: bytes=%lld-%lld", (long long)a, (long long)b);
        ck_assert_int_eq(callh(&r, &alice, range, NULL, "GET", NULL, -1,
                               "/api/v1/datasets/%s/versions/latest/files/big/blob.bin", id),
                         206);
        ck_assert_uint_eq(r.body_len, (size_t)(b - a + 1));
        crypto_hash_sha256_update(&st2, (unsigned char *)r.body, r.body_len);
        it_resp_free(&r);
    }
    crypto_hash_sha256_final(&st2, d);
    for (int i = 0; i < 32; i++)
        snprintf(sha2 + 2 * i, 3, "%02x", d[i]);
    ck_assert_str_eq(sha2, sha);
    free(buf);
    free(want);
}
END_TEST

/* ---- the archive ------------------------------------------------------------------ */

static char *run_capture(const char *cmd)
{
    FILE *p = popen(cmd, "r");
    char *out = calloc(1, 1 << 20);
    size_t n = 0, k;

    ck_assert_ptr_nonnull(p);
    while ((k = fread(out + n, 1, (1 << 20) - 1 - n, p)) > 0)
        n += k;
    ck_assert_int_eq(pclose(p), 0);
    return out;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

START_TEST(archive_lists_and_extracts_as_the_manifest)
{
    char id[64], tmp[] = "/tmp/eddy-it-dsarch-XXXXXX", path[4400], cmd[4600], expect[200], longp[400];
    size_t big = 1 << 20;
    char *bin = malloc(big), *listing, *names[8], *line;
    it_resp r;
    json_t *v, *files, *e;
    size_t i, n = 0;
    FILE *f;

    ck_assert_ptr_nonnull(mkdtemp(tmp));
    for (size_t k = 0; k < big; k++)
        bin[k] = (char)(k * 31 + 7);
    /* a path of more than 100 bytes needs a pax header */
    snprintf(longp, sizeof(longp), "deep/%s/%s/file-with-a-long-name.csv",
             "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
             "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb");
    ck_assert_uint_gt(strlen(longp), 100);
    dataset_make(id, &alice, "Tarred", "private");
    draft_put(&alice, id, "a.txt", "alpha\n", 6);
    draft_put(&alice, id, "empty.txt", "", 0);
    draft_put(&alice, id, "bin/data.bin", bin, big);
    draft_put(&alice, id, longp, "x,y\n1,2\n", 8);
    v = publish(&alice, id, "tar me");
    files = json_object_get(v, "files");
    ck_assert_int_eq(json_array_size(files), 4);

    ck_assert_int_eq(call(&r, &alice, "GET", NULL, "/api/v1/datasets/%s/versions/1/archive", id), 200);
    ck_assert_str_eq(it_resp_header(&r, "Content-Type"), "application/x-tar");
    ck_assert_str_eq(it_resp_header(&r, "Content-Disposition"), "attachment; filename=\"alice-tarred-v1.tar\"");
    ck_assert_uint_eq(r.body_len % 512, 0);
    snprintf(path, sizeof(path), "%s/v1.tar", tmp);
    f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(r.body, 1, r.body_len, f), r.body_len);
    fclose(f);
    it_resp_free(&r);

    /* tar -t lists exactly the manifest */
    snprintf(cmd, sizeof(cmd), "tar -tf %s | sort", path);
    listing = run_capture(cmd);
    json_array_foreach(files, i, e)
        names[n++] = (char *)it_json_str(e, "path");
    qsort(names, n, sizeof(names[0]), cmp_str);
    line = listing;
    for (i = 0; i < n; i++) {
        size_t len = strcspn(line, "\n");
        ck_assert_msg(len == strlen(names[i]) && strncmp(line, names[i], len) == 0, "tar lists '%.*s', wanted %s",
                      (int)len, line, names[i]);
        line += len + (line[len] == '\n');
    }
    ck_assert_str_eq(line, "");
    free(listing);

    /* extracted, each file has the manifest's sha256 and size */
    snprintf(cmd, sizeof(cmd), "mkdir %s/x && tar -xf %s -C %s/x", tmp, path, tmp);
    ck_assert_int_eq(system(cmd), 0);
    json_array_foreach(files, i, e) {
        char *buf = NULL, hex[65];
        size_t len = 0;
        struct stat sb;
        snprintf(path, sizeof(path), "%s/x/%s", tmp, it_json_str(e, "path"));
        ck_assert_int_eq(stat(path, &sb), 0);
        ck_assert_int_eq(sb.st_size, json_integer_value(json_object_get(e, "size")));
        buf = malloc((size_t)sb.st_size + 1);
        f = fopen(path, "rb");
        len = fread(buf, 1, (size_t)sb.st_size, f);
        fclose(f);
        ck_assert_uint_eq(len, (size_t)sb.st_size);
        sha_hex(hex, buf, len);
        ck_assert_str_eq(hex, it_json_str(e, "sha256"));
        free(buf);
    }
    /* "latest" names the same version */
    ck_assert_int_eq(call(&r, &alice, "GET", NULL, "/api/v1/datasets/%s/versions/latest/archive", id), 200);
    snprintf(expect, sizeof(expect), "attachment; filename=\"alice-tarred-v1.tar\"");
    ck_assert_str_eq(it_resp_header(&r, "Content-Disposition"), expect);
    it_resp_free(&r);
    ck_assert_int_eq(call(&r, &alice, "GET", NULL, "/api/v1/datasets/%s/versions/9/archive", id), 404);
    it_resp_free(&r);
    json_decref(v);
    free(bin);
    snprintf(cmd, sizeof(cmd), "rm -rf %s", tmp);
    ck_assert_int_eq(system(cmd), 0);
}
END_TEST

/* The server's resident memory (VmRSS) in KiB. */
static long server_rss_kib(void)
{
    char path[64], buf[4096], *p;

    snprintf(path, sizeof(path), "/proc/%d/status", (int)srv.pid);
    it_slurp(buf, sizeof(buf), path);
    p = strstr(buf, "VmRSS:");
    return p ? strtol(p + 6, NULL, 10) : -1;
}

/* A client that reads a 160 MiB archive slowly holds the server to a
 * block and a buffer: its memory does not grow by the archive while the
 * reader stalls, and the whole archive still arrives afterwards. */
START_TEST(archive_survives_a_slow_reader)
{
    const size_t n = (size_t)160 << 20;
    char *bin = malloc(n), id[64], req[1400], buf[65536];
    struct sockaddr_in a = {0};
    long before, during;
    long long got = 0;
    ssize_t k;
    int fd;

    ck_assert_ptr_nonnull(bin);
    for (size_t i = 0; i < n; i++)
        bin[i] = (char)(i * 131 + (i >> 20));
    dataset_make(id, &alice, "Slow", "private");
    draft_put(&alice, id, "blob.bin", bin, n);
    free(bin);
    json_decref(publish(&alice, id, "slow"));
    before = server_rss_kib();
    ck_assert_int_gt(before, 0);

    fd = socket(AF_INET, SOCK_STREAM, 0);
    ck_assert_int_ge(fd, 0);
    {
        int small = 4096;   /* a small receive window: the server cannot push the archive into our socket */
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
    }
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)srv.port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ck_assert_int_eq(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    snprintf(req, sizeof(req),
             "GET /api/v1/datasets/%s/versions/1/archive HTTP/1.1\r\nHost: 127.0.0.1\r\n%s\r\nConnection: close\r\n\r\n",
             id, alice.cookie);
    ck_assert_int_eq(write(fd, req, strlen(req)), (ssize_t)strlen(req));
    k = read(fd, buf, sizeof(buf));
    ck_assert_int_gt(k, 0);
    ck_assert_msg(strncmp(buf, "HTTP/1.1 200", 12) == 0, "%.200s", buf);
    got += k;
    /* stall: the server must wait for us, not read ahead into memory */
    for (int i = 0; i < 10; i++)
        usleep(100000);
    during = server_rss_kib();
    printf("slow reader: server RSS %ld KiB before, %ld KiB while the reader stalls\n", before, during);
    ck_assert_msg(during - before < 48 * 1024, "the server grew by %ld KiB while the reader stalled", during - before);
    while ((k = read(fd, buf, sizeof(buf))) > 0)
        got += k;
    close(fd);
    ck_assert_msg(got > (long long)n, "only %lld bytes came", got);
}
END_TEST

/* ---- from a project ------------------------------------------------------------------ */

static void project_make(char pid[64], const user *u, const char *name)
{
    const char *hdrs[] = {u->cookie, u->csrf, NULL};
    ck_assert_int_eq(it_project_make(pid, 64, &srv, hdrs, name, "data/train.csv", "a,b\n1,2\n"), 0);
}

static void project_put(const user *u, const char *pid, const char *path, const char *content)
{
    it_resp r;
    ck_assert_msg(call(&r, u, "PUT", content, "/api/v1/projects/%s/files/%s", pid, path) / 100 == 2, "%ld %s",
                  r.status, r.body);
    it_resp_free(&r);
}

static const json_t *file_named(const json_t *files, const char *path)
{
    size_t i;
    json_t *e;

    json_array_foreach(files, i, e)
        if (strcmp(it_json_str(e, "path"), path) == 0)
            return e;
    return NULL;
}

START_TEST(version_from_a_project)
{
    char id[64], pid[64], bpid[64], body[400], sha[65];
    it_resp r;
    const json_t *files, *f;

    project_make(pid, &alice, "source");
    project_put(&alice, pid, "README.md", "# notes");
    project_put(&alice, pid, "data/test.csv", "a,b\n3,4\n");
    dataset_make(id, &alice, "From project", "private");

    /* everything but .git */
    snprintf(body, sizeof(body), "{\"project_id\":\"%s\",\"message\":\"all of it\"}", pid);
    ck_assert_msg(call(&r, &alice, "POST", body, "/api/v1/datasets/%s/versions/from", id) == 201, "%ld %s", r.status,
                  r.body);
    files = json_object_get(r.json, "files");
    ck_assert_int_eq(json_array_size(files), 3);
    ck_assert_ptr_nonnull(file_named(files, "README.md"));
    ck_assert_ptr_nonnull((f = file_named(files, "data/train.csv")));
    sha_hex(sha, "a,b\n1,2\n", 8);
    ck_assert_str_eq(it_json_str(f, "sha256"), sha);
    ck_assert_int_eq(json_integer_value(json_object_get(r.json, "number")), 1);
    ck_assert_str_eq(it_json_str(json_object_get(r.json, "source"), "project_id"), pid);
    it_resp_free(&r);
    /* the bytes are the project's */
    ck_assert_int_eq(call(&r, &alice, "GET", NULL, "/api/v1/datasets/%s/versions/1/files/data/test.csv", id), 200);
    ck_assert_str_eq(r.body, "a,b\n3,4\n");
    it_resp_free(&r);

    /* paths and dest_dir: version 2 is version 1 plus these */
    project_put(&alice, pid, "data/train.csv", "a,b\n5,6\n");
    snprintf(body, sizeof(body),
             "{\"project_id\":\"%s\",\"message\":\"new train\",\"paths\":[\"data/train.csv\"],\"dest_dir\":\"v2\"}",
             pid);
    ck_assert_msg(call(&r, &alice, "POST", body, "/api/v1/datasets/%s/versions/from", id) == 201, "%ld %s", r.status,
                  r.body);
    ck_assert_int_eq(json_integer_value(json_object_get(r.json, "number")), 2);
    files = json_object_get(r.json, "files");
    ck_assert_int_eq(json_array_size(files), 4);
    ck_assert_ptr_nonnull((f = file_named(files, "v2/data/train.csv")));
    sha_hex(sha, "a,b\n5,6\n", 8);
    ck_assert_str_eq(it_json_str(f, "sha256"), sha);
    it_resp_free(&r);
    /* a folder in paths takes it whole */
    snprintf(body, sizeof(body), "{\"project_id\":\"%s\",\"message\":\"folder\",\"paths\":[\"data\"],\"dest_dir\":\"f\"}",
             pid);
    ck_assert_msg(call(&r, &alice, "POST", body, "/api/v1/datasets/%s/versions/from", id) == 201, "%ld %s", r.status,
                  r.body);
    files = json_object_get(r.json, "files");
    ck_assert_ptr_nonnull(file_named(files, "f/data/train.csv"));
    ck_assert_ptr_nonnull(file_named(files, "f/data/test.csv"));
    it_resp_free(&r);

    /* bad bodies */
    snprintf(body, sizeof(body), "{\"project_id\":\"%s\"}", pid);
    ck_assert_int_eq(call(&r, &alice, "POST", body, "/api/v1/datasets/%s/versions/from", id), 400);
    it_resp_free(&r);
    snprintf(body, sizeof(body), "{\"project_id\":\"%s\",\"job_id\":3,\"message\":\"m\"}", pid);
    ck_assert_int_eq(call(&r, &alice, "POST", body, "/api/v1/datasets/%s/versions/from", id), 400);
    it_resp_free(&r);
    ck_assert_int_eq(call(&r, &alice, "POST", "{\"message\":\"m\"}", "/api/v1/datasets/%s/versions/from", id), 400);
    it_resp_free(&r);
    snprintf(body, sizeof(body), "{\"project_id\":\"%s\",\"message\":\"m\",\"dest_dir\":\"../up\"}", pid);
    ck_assert_int_eq(call(&r, &alice, "POST", body, "/api/v1/datasets/%s/versions/from", id), 400);
    it_resp_free(&r);
    snprintf(body, sizeof(body), "{\"project_id\":\"%s\",\"message\":\"m\",\"paths\":\"data\"}", pid);
    ck_assert_int_eq(call(&r, &alice, "POST", body, "/api/v1/datasets/%s/versions/from", id), 400);
    it_resp_free(&r);
    /* an unknown path, .git */
    snprintf(body, sizeof(body), "{\"project_id\":\"%s\",\"message\":\"m\",\"paths\":[\"nope.txt\"]}", pid);
    ck_assert_int_eq(call(&r, &alice, "POST", body, "/api/v1/datasets/%s/versions/from", id), 404);
    ck_assert_ptr_nonnull(strstr(r.body, "nope.txt"));
    it_resp_free(&r);
    snprintf(body, sizeof(body), "{\"project_id\":\"%s\",\"message\":\"m\",\"paths\":[\".git/config\"]}", pid);
    ck_assert_int_eq(call(&r, &alice, "POST", body, "/api/v1/datasets/%s/versions/from", id), 404);
    it_resp_free(&r);
    /* the same files again: nothing new to publish */
    snprintf(body, sizeof(body), "{\"project_id\":\"%s\",\"message\":\"same\",\"paths\":[\"data\"],\"dest_dir\":\"f\"}",
             pid);
    ck_assert_int_eq(call(&r, &alice, "POST", body, "/api/v1/datasets/%s/versions/from", id), 422);
    it_resp_free(&r);

    /* bob: his own dataset from alice's private project is 404 (no such project) */
    {
        char bid[64];
        dataset_make(bid, &bob, "Bobs", "private");
        snprintf(body, sizeof(body), "{\"project_id\":\"%s\",\"message\":\"steal\"}", pid);
        ck_assert_int_eq(call(&r, &bob, "POST", body, "/api/v1/datasets/%s/versions/from", bid), 404);
        it_resp_free(&r);
        /* bob's project into alice's private dataset: 404 (no such dataset for him) */
        project_make(bpid, &bob, "bobsrc");
        snprintf(body, sizeof(body), "{\"project_id\":\"%s\",\"message\":\"push\"}", bpid);
        ck_assert_int_eq(call(&r, &bob, "POST", body, "/api/v1/datasets/%s/versions/from", id), 404);
        it_resp_free(&r);
        /* public: he may read it, not add to it */
        ck_assert_int_eq(call(&r, &alice, "PATCH", "{\"visibility\":\"public\"}", "/api/v1/datasets/%s", id), 200);
        it_resp_free(&r);
        ck_assert_int_eq(call(&r, &bob, "POST", body, "/api/v1/datasets/%s/versions/from", id), 403);
        it_resp_free(&r);
        /* anonymous: 401 */
        ck_assert_int_eq(call(&r, NULL, "POST", body, "/api/v1/datasets/%s/versions/from", id), 401);
        it_resp_free(&r);
    }
}
END_TEST

int main(void)
{
    const TTest *tests[] = {file_ranges_etag_and_conditionals, large_file_uploaded_then_read_in_ranges,
                            archive_lists_and_extracts_as_the_manifest, archive_survives_a_slow_reader,
                            version_from_a_project, NULL};
    return it_tests_run("dataset_files", 200, setup, teardown, tests);
}
