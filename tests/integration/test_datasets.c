/* Datasets over HTTP against the real `eddy serve` (issue 15, API.md
 * "Datasets"): create, list, get, change and delete datasets; the draft
 * (a streamed PUT, remove); publishing, listing, reading and deleting
 * versions; shares; what a project mounts; the dataset quota; and the bad
 * input of the issue that reaches these routes: names with '/', "..", NUL
 * or control characters, unknown datasets and versions, another user's
 * private dataset (404), an oversize file. Uploads: test_datasets_uploads.c. */
#include "harness.h"
#include "it_db.h"

#include "ed_crypto.h"

#include <check.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* One request as `u` (NULL: anonymous); len < 0: strlen(body). */
static long call(it_resp *r, const user *u, const char *method, const char *body, long len,
                 const char *fmt, ...) __attribute__((format(printf, 6, 7)));
static long call(it_resp *r, const user *u, const char *method, const char *body, long len,
                 const char *fmt, ...)
{
    char path[8192];
    const char *hdrs[] = {u ? u->cookie : NULL, u ? u->csrf : NULL, NULL};
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(path, sizeof(path), fmt, ap);
    va_end(ap);
    ck_assert_int_eq(it_request_n(r, &srv, method, path, body, len, u ? hdrs : NULL), 0);
    return r->status;
}

/* call() that only wants the status. */
#define STATUS(...)                                                                                \
    ({                                                                                             \
        it_resp r_;                                                                                \
        long s_ = call(&r_, __VA_ARGS__);                                                          \
        if (s_ >= 400)                                                                             \
            fprintf(stderr, "  %ld %s\n", s_, r_.body);                                            \
        it_resp_free(&r_);                                                                         \
        s_;                                                                                        \
    })

static const char *str(const it_resp *r, const char *key)
{
    const char *s = r->json ? json_string_value(json_object_get(r->json, key)) : NULL;
    return s ? s : "";
}

static long long num(const it_resp *r, const char *key)
{
    return r->json ? json_integer_value(json_object_get(r->json, key)) : -1;
}

/* Create a dataset as `u` from a JSON body; its id into id (37 bytes). */
static void make(char *id, const user *u, const char *body)
{
    it_resp r;

    ck_assert_int_eq(call(&r, u, "POST", body, -1, "/api/v1/datasets"), 201);
    snprintf(id, 37, "%s", str(&r, "id"));
    ck_assert_uint_eq(strlen(id), 36);
    it_resp_free(&r);
}

static void put_file(const user *u, const char *id, const char *path, const char *bytes, long len,
                     long want)
{
    it_resp r;

    call(&r, u, "PUT", bytes, len, "/api/v1/datasets/%s/draft/files/%s", id, path);
    if (r.status != want)
        fprintf(stderr, "PUT %s: %ld %s\n", path, r.status, r.body);
    ck_assert_int_eq(r.status, want);
    if (want == 200) {
        char sha[65];
        ed_sha256_hex(sha, bytes, (size_t)(len < 0 ? (long)strlen(bytes) : len));
        ck_assert_str_eq(str(&r, "sha256"), sha);
        ck_assert_int_eq(num(&r, "size"), len < 0 ? (long)strlen(bytes) : len);
    }
    it_resp_free(&r);
}

START_TEST(crud_and_listing)
{
    char id[37], id2[37];
    it_resp r;
    json_t *tags;

    make(id, &alice, "{\"name\":\"MNIST Digits\",\"description\":\"# card\",\"license\":\"CC-BY-4.0\","
                     "\"tags\":[\"vision\",\"small\"],\"visibility\":\"public\"}");
    ck_assert_int_eq(call(&r, &alice, "GET", NULL, 0, "/api/v1/datasets/%s", id), 200);
    ck_assert_str_eq(str(&r, "owner"), "alice");
    ck_assert_str_eq(str(&r, "slug"), "mnist-digits");
    ck_assert_str_eq(str(&r, "name"), "MNIST Digits");
    ck_assert_str_eq(str(&r, "license"), "CC-BY-4.0");
    ck_assert_str_eq(str(&r, "visibility"), "public");
    ck_assert_int_eq(num(&r, "latest_version"), 0);
    ck_assert(json_is_true(json_object_get(r.json, "can_write")));
    ck_assert_int_eq(strlen(str(&r, "created_at")), 24);   /* 2026-01-01T00:00:00.000Z */
    tags = json_object_get(r.json, "tags");
    ck_assert_int_eq(json_array_size(tags), 2);
    it_resp_free(&r);
    /* bob reads it, cannot change it */
    ck_assert_int_eq(call(&r, &bob, "GET", NULL, 0, "/api/v1/datasets/%s", id), 200);
    ck_assert(json_is_false(json_object_get(r.json, "can_write")));
    it_resp_free(&r);
    ck_assert_int_eq(STATUS(&bob, "PATCH", "{\"name\":\"x\"}", -1, "/api/v1/datasets/%s", id), 403);
    ck_assert_int_eq(STATUS(&bob, "DELETE", NULL, 0, "/api/v1/datasets/%s", id), 403);
    /* anonymous reads a public dataset, writes need a sign-in */
    ck_assert_int_eq(STATUS(NULL, "GET", NULL, 0, "/api/v1/datasets/%s", id), 200);
    ck_assert_int_eq(STATUS(NULL, "POST", "{\"name\":\"x\"}", -1, "/api/v1/datasets"), 401);
    /* PATCH changes what it names */
    ck_assert_int_eq(call(&r, &alice, "PATCH", "{\"description\":\"new card\",\"tags\":[\"digits\"]}", -1,
                          "/api/v1/datasets/%s", id), 200);
    ck_assert_str_eq(str(&r, "description"), "new card");
    ck_assert_str_eq(str(&r, "name"), "MNIST Digits");
    ck_assert_int_eq(json_array_size(json_object_get(r.json, "tags")), 1);
    it_resp_free(&r);
    /* the slug is unique per owner */
    ck_assert_int_eq(STATUS(&alice, "POST", "{\"name\":\"MNIST digits\"}", -1, "/api/v1/datasets"), 409);
    make(id2, &bob, "{\"name\":\"MNIST Digits\"}");   /* another owner: fine; private */
    /* listing: q, owner, tag, limit/offset */
    ck_assert_int_eq(call(&r, &alice, "GET", NULL, 0, "/api/v1/datasets?q=mnist"), 200);
    ck_assert_int_eq(json_array_size(json_object_get(r.json, "items")), 1);   /* bob's is private */
    it_resp_free(&r);
    ck_assert_int_eq(call(&r, &bob, "GET", NULL, 0, "/api/v1/datasets?q=mnist"), 200);
    ck_assert_int_eq(json_array_size(json_object_get(r.json, "items")), 2);
    it_resp_free(&r);
    ck_assert_int_eq(call(&r, &bob, "GET", NULL, 0, "/api/v1/datasets?owner=alice"), 200);
    ck_assert_int_eq(json_array_size(json_object_get(r.json, "items")), 1);
    it_resp_free(&r);
    ck_assert_int_eq(call(&r, &bob, "GET", NULL, 0, "/api/v1/datasets?owner=nobody"), 200);
    ck_assert_int_eq(json_array_size(json_object_get(r.json, "items")), 0);
    it_resp_free(&r);
    ck_assert_int_eq(call(&r, &bob, "GET", NULL, 0, "/api/v1/datasets?tag=digits"), 200);
    ck_assert_int_eq(json_array_size(json_object_get(r.json, "items")), 1);
    it_resp_free(&r);
    ck_assert_int_eq(call(&r, &bob, "GET", NULL, 0, "/api/v1/datasets?limit=1"), 200);
    ck_assert_int_eq(json_array_size(json_object_get(r.json, "items")), 1);
    ck_assert_int_eq(num(&r, "next_offset"), 1);
    it_resp_free(&r);
    ck_assert_int_eq(call(&r, &bob, "GET", NULL, 0, "/api/v1/datasets?limit=1&offset=1"), 200);
    ck_assert_int_eq(json_array_size(json_object_get(r.json, "items")), 1);
    ck_assert(json_is_null(json_object_get(r.json, "next_offset")));
    it_resp_free(&r);
    ck_assert_int_eq(STATUS(&bob, "GET", NULL, 0, "/api/v1/datasets?limit=0"), 400);
    ck_assert_int_eq(STATUS(&bob, "GET", NULL, 0, "/api/v1/datasets?limit=9999"), 400);
    ck_assert_int_eq(STATUS(&bob, "GET", NULL, 0, "/api/v1/datasets?offset=-1"), 400);
    /* delete */
    ck_assert_int_eq(STATUS(&alice, "DELETE", NULL, 0, "/api/v1/datasets/%s", id), 204);
    ck_assert_int_eq(STATUS(&alice, "GET", NULL, 0, "/api/v1/datasets/%s", id), 404);
    ck_assert_int_eq(STATUS(&alice, "DELETE", NULL, 0, "/api/v1/datasets/%s", id), 404);
}
END_TEST

START_TEST(bad_names_and_bodies)
{
    static const char *bad[] = {
        "{\"name\":\"a/b\"}",         "{\"name\":\"..\"}",          "{\"name\":\".\"}",
        "{\"name\":\"a\\u0000b\"}",   "{\"name\":\"tab\\there\"}",  "{\"name\":\"\\u007f\"}",
        "{\"name\":\"   \"}",         "{\"name\":\"\"}",            "{\"name\":\"ok\",\"slug\":\"a/b\"}",
        "{\"name\":\"ok\",\"slug\":\"..\"}", "{\"name\":\"ok\",\"slug\":\"-x\"}",
        "{\"name\":\"ok\",\"visibility\":\"secret\"}", "{\"name\":\"ok\",\"tags\":\"x\"}",
        "{\"name\":\"ok\",\"tags\":[1]}", "{\"name\":7}", "{}", "[1]", "not json",
    };
    char id[37], big[300];

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        long s = STATUS(&alice, "POST", bad[i], -1, "/api/v1/datasets");
        if (s != 400)
            fprintf(stderr, "body %s: %ld\n", bad[i], s);
        ck_assert_int_eq(s, 400);
    }
    memset(big, 'a', sizeof(big) - 30);
    snprintf(big + sizeof(big) - 30, 30, "\"}");
    memmove(big + 9, big, strlen(big) + 1);
    memcpy(big, "{\"name\":\"", 9);
    ck_assert_int_eq(STATUS(&alice, "POST", big, -1, "/api/v1/datasets"), 400);   /* > 100 bytes */
    make(id, &alice, "{\"name\":\"d\"}");
    ck_assert_int_eq(STATUS(&alice, "PATCH", "{\"name\":\"x/y\"}", -1, "/api/v1/datasets/%s", id), 400);
    ck_assert_int_eq(STATUS(&alice, "PATCH", "{\"visibility\":1}", -1, "/api/v1/datasets/%s", id), 400);
    /* unknown datasets and versions */
    ck_assert_int_eq(STATUS(&alice, "GET", NULL, 0, "/api/v1/datasets/nope"), 404);
    ck_assert_int_eq(STATUS(&alice, "GET", NULL, 0, "/api/v1/datasets/%s/versions/1", id), 404);
    ck_assert_int_eq(STATUS(&alice, "GET", NULL, 0, "/api/v1/datasets/%s/versions/latest", id), 404);
    ck_assert_int_eq(STATUS(&alice, "GET", NULL, 0, "/api/v1/datasets/%s/versions/0", id), 400);
    ck_assert_int_eq(STATUS(&alice, "GET", NULL, 0, "/api/v1/datasets/%s/versions/x1", id), 400);
    ck_assert_int_eq(STATUS(&alice, "DELETE", NULL, 0, "/api/v1/datasets/%s/versions/3", id), 404);
    ck_assert_int_eq(STATUS(&alice, "POST", "{\"message\":\"empty\"}", -1, "/api/v1/datasets/%s/versions", id),
                     422);   /* nothing in the draft */
    ck_assert_int_eq(STATUS(&alice, "POST", "{\"message\":\"m\"}", -1, "/api/v1/datasets/nope/versions"), 404);
}
END_TEST

START_TEST(draft_paths)
{
    /* dots percent-encoded: curl would resolve a literal "a/../b" itself */
    static const char *bad[] = {"%2E%2E", "a/%2E%2E/b", "a/%2E/b", "a//b", "%00x", "a%0Ab", "a%01b",
                                "a%7F", "a/", "%2E/a", "a/%2E%2E"};
    char id[37];
    it_resp r;

    make(id, &alice, "{\"name\":\"paths\"}");
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        long s = STATUS(&alice, "PUT", "x", 1, "/api/v1/datasets/%s/draft/files/%s", id, bad[i]);
        if (s != 400 && s != 404)
            fprintf(stderr, "path %s: %ld\n", bad[i], s);
        ck_assert(s == 400 || s == 404);   /* the router refuses some before the route */
    }
    put_file(&alice, id, "train/x.csv", "a,b\n1,2\n", -1, 200);
    put_file(&alice, id, "train/y.csv", "", 0, 200);             /* empty file */
    put_file(&alice, id, "sp%20ace%2Fslash.txt", "q", -1, 200);  /* %2F is part of one segment */
    put_file(&alice, id, "train/x.csv/deeper", "z", -1, 409);    /* a file where a directory would go */
    ck_assert_int_eq(call(&r, &alice, "GET", NULL, 0, "/api/v1/datasets/%s/draft", id), 200);
    ck_assert_int_eq(num(&r, "file_count"), 3);
    ck_assert_int_eq(num(&r, "size_bytes"), 9);
    it_resp_free(&r);
    /* replace, remove */
    put_file(&alice, id, "train/x.csv", "a,b\n3,4\n5,6\n", -1, 200);
    ck_assert_int_eq(STATUS(&alice, "DELETE", NULL, 0, "/api/v1/datasets/%s/draft/files/train/y.csv", id), 204);
    ck_assert_int_eq(STATUS(&alice, "DELETE", NULL, 0, "/api/v1/datasets/%s/draft/files/train/y.csv", id), 404);
    /* another user: 404 (private), before any byte of the body */
    ck_assert_int_eq(STATUS(&bob, "PUT", "x", 1, "/api/v1/datasets/%s/draft/files/a", id), 404);
    ck_assert_int_eq(STATUS(&bob, "GET", NULL, 0, "/api/v1/datasets/%s/draft", id), 404);
    ck_assert_int_eq(STATUS(&bob, "DELETE", NULL, 0, "/api/v1/datasets/%s/draft/files/train/x.csv", id), 404);
    ck_assert_int_eq(STATUS(&alice, "PUT", "x", 1, "/api/v1/datasets/nope/draft/files/a"), 404);
    /* a PUT without a credential never reaches the sink */
    ck_assert_int_eq(STATUS(NULL, "PUT", "x", 1, "/api/v1/datasets/%s/draft/files/a", id), 401);
}
END_TEST

/* A draft PUT larger than max_body_bytes (the server's 1 MiB here) goes
 * through: the body streams, it is never buffered whole. */
START_TEST(draft_put_streams_past_max_body)
{
    it_server_stop(&srv);
    const char *env[] = {"EDDY_MAX_BODY_BYTES=1048576", NULL};
    ck_assert_int_eq(it_server_start(&srv, env), 0);
    sign_in(&alice, "alice");
    char id[37];
    size_t n = 5u << 20;
    char *buf = malloc(n);
    ck_assert_ptr_nonnull(buf);
    for (size_t i = 0; i < n; i++)
        buf[i] = (char)(i * 2654435761u >> 13);
    make(id, &alice, "{\"name\":\"big\"}");
    put_file(&alice, id, "big.bin", buf, (long)n, 200);
    free(buf);
}
END_TEST

START_TEST(versions_and_visibility)
{
    char id[37];
    it_resp r;
    json_t *files;

    make(id, &alice, "{\"name\":\"ver\"}");
    put_file(&alice, id, "a.txt", "one", -1, 200);
    put_file(&alice, id, "d/b.csv", "x,y\n1,2\n", -1, 200);
    ck_assert_int_eq(call(&r, &alice, "POST", "{\"message\":\"first\"}", -1, "/api/v1/datasets/%s/versions", id),
                     201);
    ck_assert_int_eq(num(&r, "number"), 1);
    ck_assert_str_eq(str(&r, "message"), "first");
    ck_assert_int_eq(num(&r, "size_bytes"), 11);
    ck_assert_int_eq(num(&r, "file_count"), 2);
    files = json_object_get(r.json, "files");
    ck_assert_int_eq(json_array_size(files), 2);
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(files, 1), "media_type")), "text/csv");
    it_resp_free(&r);
    /* publishing the same draft again: nothing changed */
    ck_assert_int_eq(STATUS(&alice, "POST", "{\"message\":\"same\"}", -1, "/api/v1/datasets/%s/versions", id), 422);
    put_file(&alice, id, "a.txt", "two", -1, 200);
    ck_assert_int_eq(call(&r, &alice, "POST", "{\"message\":\"second\"}", -1, "/api/v1/datasets/%s/versions", id),
                     201);
    ck_assert_int_eq(num(&r, "number"), 2);
    it_resp_free(&r);
    ck_assert_int_eq(call(&r, &alice, "GET", NULL, 0, "/api/v1/datasets/%s/versions", id), 200);
    ck_assert_int_eq(json_array_size(json_object_get(r.json, "items")), 2);
    ck_assert_int_eq(json_integer_value(json_object_get(json_array_get(json_object_get(r.json, "items"), 0),
                                                        "number")), 2);
    ck_assert_ptr_null(json_object_get(json_array_get(json_object_get(r.json, "items"), 0), "files"));
    it_resp_free(&r);
    ck_assert_int_eq(call(&r, &alice, "GET", NULL, 0, "/api/v1/datasets/%s/versions/1", id), 200);
    ck_assert_int_eq(json_array_size(json_object_get(r.json, "files")), 2);
    it_resp_free(&r);
    ck_assert_int_eq(call(&r, &alice, "GET", NULL, 0, "/api/v1/datasets/%s/versions/latest", id), 200);
    ck_assert_int_eq(num(&r, "number"), 2);
    it_resp_free(&r);
    /* another user's private dataset is 404 everywhere; a share opens it */
    ck_assert_int_eq(STATUS(&bob, "GET", NULL, 0, "/api/v1/datasets/%s", id), 404);
    ck_assert_int_eq(STATUS(&bob, "GET", NULL, 0, "/api/v1/datasets/%s/versions", id), 404);
    ck_assert_int_eq(STATUS(&bob, "GET", NULL, 0, "/api/v1/datasets/%s/versions/1", id), 404);
    ck_assert_int_eq(STATUS(&bob, "POST", "{\"message\":\"m\"}", -1, "/api/v1/datasets/%s/versions", id), 404);
    ck_assert_int_eq(STATUS(&bob, "DELETE", NULL, 0, "/api/v1/datasets/%s/versions/1", id), 404);
    ck_assert_int_eq(STATUS(NULL, "GET", NULL, 0, "/api/v1/datasets/%s", id), 404);
    ck_assert_int_eq(STATUS(&bob, "POST", NULL, 0, "/api/v1/datasets/%s/shares/alice", id), 404);
    ck_assert_int_eq(STATUS(&alice, "POST", NULL, 0, "/api/v1/datasets/%s/shares/nobody", id), 404);
    ck_assert_int_eq(STATUS(&alice, "POST", NULL, 0, "/api/v1/datasets/%s/shares/bob", id), 204);
    ck_assert_int_eq(STATUS(&bob, "GET", NULL, 0, "/api/v1/datasets/%s/versions/1", id), 200);
    ck_assert_int_eq(STATUS(&bob, "DELETE", NULL, 0, "/api/v1/datasets/%s/versions/1", id), 403);
    ck_assert_int_eq(STATUS(&alice, "DELETE", NULL, 0, "/api/v1/datasets/%s/shares/bob", id), 204);
    ck_assert_int_eq(STATUS(&bob, "GET", NULL, 0, "/api/v1/datasets/%s", id), 404);
    /* unlisted: readable by id, not listed */
    ck_assert_int_eq(STATUS(&alice, "PATCH", "{\"visibility\":\"unlisted\"}", -1, "/api/v1/datasets/%s", id), 200);
    ck_assert_int_eq(STATUS(&bob, "GET", NULL, 0, "/api/v1/datasets/%s", id), 200);
    ck_assert_int_eq(call(&r, &bob, "GET", NULL, 0, "/api/v1/datasets?owner=alice"), 200);
    ck_assert_int_eq(json_array_size(json_object_get(r.json, "items")), 0);
    it_resp_free(&r);
    /* delete a version */
    ck_assert_int_eq(STATUS(&alice, "DELETE", NULL, 0, "/api/v1/datasets/%s/versions/1", id), 204);
    ck_assert_int_eq(STATUS(&alice, "GET", NULL, 0, "/api/v1/datasets/%s/versions/1", id), 404);
    ck_assert_int_eq(STATUS(&alice, "GET", NULL, 0, "/api/v1/datasets/%s/versions/2", id), 200);
    /* unpack of an archive not in the draft is refused; nothing is published */
    put_file(&alice, id, "a.txt", "three", -1, 200);
    ck_assert_int_ge(STATUS(&alice, "POST", "{\"message\":\"m\",\"unpack\":[\"none.zip\"]}", -1,
                            "/api/v1/datasets/%s/versions", id), 400);
    ck_assert_int_eq(STATUS(&alice, "POST", "{\"message\":\"m\",\"unpack\":[7]}", -1,
                            "/api/v1/datasets/%s/versions", id), 400);
    ck_assert_int_eq(call(&r, &alice, "GET", NULL, 0, "/api/v1/datasets/%s", id), 200);
    ck_assert_int_eq(num(&r, "latest_version"), 2);
    it_resp_free(&r);
}
END_TEST

START_TEST(project_attachments)
{
    char id[37], id2[37], pid[64], body[300];
    it_resp r;
    json_t *items, *it;
    const char *hdrs[] = {alice.cookie, alice.csrf, NULL};

    ck_assert_int_eq(it_project_make(pid, sizeof(pid), &srv, hdrs, "proj", NULL, NULL), 0);
    make(id, &alice, "{\"name\":\"Att One\"}");
    make(id2, &bob, "{\"name\":\"Bobs\",\"visibility\":\"public\"}");
    /* no version yet: 422 */
    snprintf(body, sizeof(body), "{\"items\":[{\"dataset_id\":\"%s\",\"version\":\"latest\"}]}", id);
    ck_assert_int_eq(STATUS(&alice, "PUT", body, -1, "/api/v1/projects/%s/datasets", pid), 422);
    put_file(&alice, id, "a", "1", -1, 200);
    ck_assert_int_eq(STATUS(&alice, "POST", "{\"message\":\"v\"}", -1, "/api/v1/datasets/%s/versions", id), 201);
    put_file(&bob, id2, "b", "2", -1, 200);
    ck_assert_int_eq(STATUS(&bob, "POST", "{\"message\":\"v\"}", -1, "/api/v1/datasets/%s/versions", id2), 201);
    snprintf(body, sizeof(body),
             "{\"items\":[{\"dataset_id\":\"%s\",\"version\":\"latest\"},{\"dataset_id\":\"%s\",\"version\":1}]}",
             id, id2);
    ck_assert_int_eq(call(&r, &alice, "PUT", body, -1, "/api/v1/projects/%s/datasets", pid), 200);
    it_resp_free(&r);
    ck_assert_int_eq(call(&r, &alice, "GET", NULL, 0, "/api/v1/projects/%s/datasets", pid), 200);
    items = json_object_get(r.json, "items");
    ck_assert_int_eq(json_array_size(items), 2);
    it = json_array_get(items, 0);
    ck_assert_str_eq(json_string_value(json_object_get(it, "version")), "latest");
    ck_assert_str_eq(json_string_value(json_object_get(it, "mount_path")), "/home/aistudio/data/alice-att-one");
    ck_assert_str_eq(json_string_value(json_object_get(it, "owner")), "alice");
    it = json_array_get(items, 1);
    ck_assert_int_eq(json_integer_value(json_object_get(it, "version")), 1);
    ck_assert_str_eq(json_string_value(json_object_get(it, "mount_path")), "/home/aistudio/data/bob-bobs");
    it_resp_free(&r);
    /* bad input: a pinned version that does not exist, an unknown dataset,
     * a private one of another user, twice the same, not a number */
    snprintf(body, sizeof(body), "{\"items\":[{\"dataset_id\":\"%s\",\"version\":9}]}", id);
    ck_assert_int_eq(STATUS(&alice, "PUT", body, -1, "/api/v1/projects/%s/datasets", pid), 404);
    ck_assert_int_eq(STATUS(&alice, "PUT", "{\"items\":[{\"dataset_id\":\"nope\"}]}", -1,
                            "/api/v1/projects/%s/datasets", pid), 404);
    snprintf(body, sizeof(body), "{\"items\":[{\"dataset_id\":\"%s\",\"version\":1.5}]}", id);
    ck_assert_int_ge(STATUS(&alice, "PUT", body, -1, "/api/v1/projects/%s/datasets", pid), 400);
    snprintf(body, sizeof(body), "{\"items\":[{\"dataset_id\":\"%s\"},{\"dataset_id\":\"%s\"}]}", id, id);
    ck_assert_int_ge(STATUS(&alice, "PUT", body, -1, "/api/v1/projects/%s/datasets", pid), 400);
    ck_assert_int_eq(STATUS(&alice, "PUT", "{\"items\":7}", -1, "/api/v1/projects/%s/datasets", pid), 400);
    /* bob cannot see alice's private project, nor attach alice's private dataset to his */
    snprintf(body, sizeof(body), "{\"items\":[{\"dataset_id\":\"%s\"}]}", id2);
    ck_assert_int_eq(STATUS(&bob, "PUT", body, -1, "/api/v1/projects/%s/datasets", pid), 404);
    ck_assert_int_eq(STATUS(&bob, "GET", NULL, 0, "/api/v1/projects/%s/datasets", pid), 404);
    /* the list is unchanged after the failures */
    ck_assert_int_eq(call(&r, &alice, "GET", NULL, 0, "/api/v1/projects/%s/datasets", pid), 200);
    ck_assert_int_eq(json_array_size(json_object_get(r.json, "items")), 2);
    it_resp_free(&r);
    /* a pinned version cannot be deleted */
    ck_assert_int_eq(STATUS(&bob, "DELETE", NULL, 0, "/api/v1/datasets/%s/versions/1", id2), 409);
    ck_assert_int_eq(STATUS(&alice, "PUT", "{\"items\":[]}", -1, "/api/v1/projects/%s/datasets", pid), 200);
    ck_assert_int_eq(STATUS(&bob, "DELETE", NULL, 0, "/api/v1/datasets/%s/versions/1", id2), 204);
}
END_TEST

START_TEST(quota_and_file_limit)
{
    char id[37];
    it_resp r;
    json_t *d;
    sqlite3 *db;

    make(id, &alice, "{\"name\":\"q\"}");
    ck_assert_int_eq(call(&r, &alice, "GET", NULL, 0, "/api/v1/quota"), 200);
    d = json_object_get(r.json, "datasets");
    ck_assert_ptr_nonnull(d);
    ck_assert_int_eq(json_integer_value(json_object_get(d, "used_bytes")), 0);
    ck_assert_int_eq(json_integer_value(json_object_get(d, "limit_bytes")), INT64_C(20) << 30);  /* free */
    it_resp_free(&r);
    /* the operator lowers the free tier to 1 MiB */
    db = it_db_open(&srv);
    ck_assert_int_eq(sqlite3_exec(db, "UPDATE tiers SET dataset_bytes = 1048576 WHERE name = 'free'", NULL, NULL,
                                  NULL), SQLITE_OK);
    sqlite3_close(db);
    {
        size_t n = 700000;
        char *buf = malloc(n);
        ck_assert_ptr_nonnull(buf);
        memset(buf, 'a', n);
        put_file(&alice, id, "one", buf, (long)n, 200);
        put_file(&alice, id, "same", buf, (long)n, 200);   /* the same bytes count once */
        buf[0] = 'b';
        put_file(&alice, id, "two", buf, (long)n, 402);
        free(buf);
    }
    ck_assert_int_eq(call(&r, &alice, "GET", NULL, 0, "/api/v1/quota"), 200);
    d = json_object_get(r.json, "datasets");
    ck_assert_int_eq(json_integer_value(json_object_get(d, "used_bytes")), 700000);
    ck_assert_int_eq(json_integer_value(json_object_get(d, "limit_bytes")), 1048576);
    it_resp_free(&r);
    /* an upload is refused at open */
    ck_assert_int_eq(call(&r, &alice, "POST",
                          "{\"path\":\"u\",\"size\":600000,\"sha256\":"
                          "\"0000000000000000000000000000000000000000000000000000000000000000\"}",
                          -1, "/api/v1/datasets/%s/uploads", id), 402);
    ck_assert_str_eq(it_resp_error_code(&r), "quota_exceeded");
    it_resp_free(&r);
    /* over the file limit (64 GiB): 413 at open */
    ck_assert_int_eq(STATUS(&alice, "POST",
                            "{\"path\":\"u\",\"size\":68719476737,\"sha256\":"
                            "\"0000000000000000000000000000000000000000000000000000000000000000\"}",
                            -1, "/api/v1/datasets/%s/uploads", id), 413);
    /* the admin's tier list shows the limit */
    ck_assert_int_eq(call(&r, &alice, "GET", NULL, 0, "/api/v1/tiers"), 200);
    {
        json_t *items = json_object_get(r.json, "items");
        bool seen = false;
        for (size_t i = 0; i < json_array_size(items); i++)
            if (strcmp(json_string_value(json_object_get(json_array_get(items, i), "name")), "free") == 0) {
                ck_assert_int_eq(json_integer_value(json_object_get(json_array_get(items, i), "dataset_bytes")),
                                 1048576);
                seen = true;
            }
        ck_assert(seen);
    }
    it_resp_free(&r);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("datasets");
    TCase *tc = tcase_create("http");

    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, crud_and_listing);
    tcase_add_test(tc, bad_names_and_bodies);
    tcase_add_test(tc, draft_paths);
    tcase_add_test(tc, draft_put_streams_past_max_body);
    tcase_add_test(tc, versions_and_visibility);
    tcase_add_test(tc, project_attachments);
    tcase_add_test(tc, quota_and_file_limit);
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
