/* Previews and stats of a version's files over HTTP against the real `eddy
 * serve` (issue 15 item 7, API.md "Datasets"): a CSV, a TSV, a PNG written
 * here, JSON, text and a binary file go into the draft through PUT
 * .../draft/files/{path}; after a publish the previews are polled (202 with
 * Retry-After while the worker computes them) until 200, and their kinds,
 * columns, types, rows, row counts and the thumbnail are checked; stats
 * total the version by media type and extension; another user and an
 * anonymous caller get 404 for a private dataset. */
#include "harness.h"

#include <check.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

static long call(it_resp *r, const user *u, const char *method, const char *body, long len, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));
static long call(it_resp *r, const user *u, const char *method, const char *body, long len, const char *fmt, ...)
{
    char path[4096];
    const char *hdrs[] = {u ? u->cookie : NULL, u ? u->csrf : NULL, NULL};
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(path, sizeof(path), fmt, ap);
    va_end(ap);
    ck_assert_int_eq(it_request_n(r, &srv, method, path, body, len, u ? hdrs : NULL), 0);
    return r->status;
}

static void put_file(const char *id, const char *path, const void *bytes, long len)
{
    it_resp r;

    call(&r, &alice, "PUT", bytes, len, "/api/v1/datasets/%s/draft/files/%s", id, path);
    if (r.status != 200)
        fprintf(stderr, "PUT %s: %ld %s\n", path, r.status, r.body);
    ck_assert_int_eq(r.status, 200);
    it_resp_free(&r);
}

/* ---- a PNG, written by hand (stored deflate blocks) ---------------------- */

static uint32_t crc_update(uint32_t c, const unsigned char *p, size_t n)
{
    c = ~c;
    for (size_t i = 0; i < n; i++) {
        c ^= p[i];
        for (int k = 0; k < 8; k++)
            c = c & 1 ? 0xedb88320u ^ (c >> 1) : c >> 1;
    }
    return ~c;
}

static void be32(unsigned char *p, uint32_t v)
{
    p[0] = (unsigned char)(v >> 24), p[1] = (unsigned char)(v >> 16), p[2] = (unsigned char)(v >> 8),
    p[3] = (unsigned char)v;
}

static void chunk(FILE *f, const char *type, const unsigned char *data, size_t n)
{
    unsigned char hdr[8], crc[4];
    uint32_t c;

    be32(hdr, (uint32_t)n);
    memcpy(hdr + 4, type, 4);
    c = crc_update(0, hdr + 4, 4);
    c = crc_update(c, data, n);
    be32(crc, c);
    fwrite(hdr, 1, 8, f);
    if (n)
        fwrite(data, 1, n, f);
    fwrite(crc, 1, 4, f);
}

/* A w x h RGB gradient as a PNG; *len bytes, malloc'd. */
static unsigned char *png_make(int w, int h, size_t *len)
{
    size_t row = (size_t)w * 3 + 1, raw_n = row * (size_t)h, z_n = 2 + raw_n + 5 * (raw_n / 65535 + 1) + 4;
    unsigned char *raw = malloc(raw_n), *z = malloc(z_n), ihdr[13];
    char *out = NULL;
    size_t zo = 0, outn = 0;
    uint32_t a = 1, b = 0;
    FILE *f = open_memstream(&out, &outn);

    for (int y = 0; y < h; y++) {
        raw[(size_t)y * row] = 0;
        for (int x = 0; x < w; x++) {
            unsigned char *px = raw + (size_t)y * row + 1 + (size_t)x * 3;
            px[0] = (unsigned char)x, px[1] = (unsigned char)y, px[2] = 200;
        }
    }
    z[zo++] = 0x78, z[zo++] = 0x01;
    for (size_t off = 0; off < raw_n;) {
        size_t k = raw_n - off > 65535 ? 65535 : raw_n - off;
        z[zo++] = off + k == raw_n;
        z[zo++] = (unsigned char)k, z[zo++] = (unsigned char)(k >> 8);
        z[zo++] = (unsigned char)~k, z[zo++] = (unsigned char)(~k >> 8);
        memcpy(z + zo, raw + off, k);
        zo += k;
        off += k;
    }
    for (size_t i = 0; i < raw_n; i++) {
        a = (a + raw[i]) % 65521;
        b = (b + a) % 65521;
    }
    be32(z + zo, b << 16 | a);
    zo += 4;
    be32(ihdr, (uint32_t)w);
    be32(ihdr + 4, (uint32_t)h);
    ihdr[8] = 8, ihdr[9] = 2, ihdr[10] = 0, ihdr[11] = 0, ihdr[12] = 0;
    fwrite("\x89PNG\r\n\x1a\n", 1, 8, f);
    chunk(f, "IHDR", ihdr, 13);
    chunk(f, "IDAT", z, zo);
    chunk(f, "IEND", NULL, 0);
    fclose(f);
    free(raw);
    free(z);
    *len = outn;
    return (unsigned char *)out;
}

static unsigned char *b64_decode(const char *s, size_t *out_len)
{
    static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    size_t n = strlen(s), o = 0;
    unsigned char *out = malloc(n + 1);
    unsigned v = 0;
    int bits = 0;

    for (size_t i = 0; i < n && s[i] != '='; i++) {
        const char *c = strchr(tab, s[i]);
        ck_assert_msg(c && *c, "not base64 at %zu", i);
        v = v << 6 | (unsigned)(c - tab);
        if ((bits += 6) >= 8) {
            bits -= 8;
            out[o++] = (unsigned char)(v >> bits);
        }
    }
    *out_len = o;
    return out;
}

/* GET a preview until it is ready (bounded: a minute); the 200's JSON. */
static json_t *preview(const user *u, const char *id, const char *path)
{
    for (int i = 0; i < 600; i++) {
        it_resp r;
        long st = call(&r, u, "GET", NULL, 0, "/api/v1/datasets/%s/versions/1/preview/%s", id, path);
        if (st == 200) {
            json_t *v = json_incref(r.json);
            ck_assert_ptr_nonnull(v);
            it_resp_free(&r);
            return v;
        }
        ck_assert_msg(st == 202, "preview %s: %ld %s", path, st, r.body);
        ck_assert(json_is_true(json_object_get(r.json, "pending")));
        ck_assert_str_eq(it_resp_header(&r, "Retry-After"), "1");
        it_resp_free(&r);
        usleep(100000);
    }
    ck_abort_msg("preview of %s never came", path);
    return NULL;
}

static const char *s_of(json_t *o, const char *k)
{
    const char *s = json_string_value(json_object_get(o, k));
    ck_assert_msg(s, "no string %s", k);
    return s;
}

static long long n_of(json_t *o, const char *k)
{
    ck_assert_msg(json_is_integer(json_object_get(o, k)), "no integer %s", k);
    return json_integer_value(json_object_get(o, k));
}

#define TSV "k\tv\na\t1\nb\t2\n"
#define META "{\"classes\":[\"cat\",\"dog\"],\"n\":2}"
#define README "Read me.\n"

START_TEST(previews_of_a_published_version_and_its_stats)
{
    char id[37], csv[8192], bin[512];
    size_t png_n = 0, tn;
    unsigned char *png = png_make(400, 200, &png_n), *thumb;
    size_t len = 0;
    json_t *p, *cols;
    it_resp r;

    ck_assert_int_eq(call(&r, &alice, "POST", "{\"name\":\"Previews\",\"visibility\":\"private\"}", -1,
                          "/api/v1/datasets"),
                     201);
    snprintf(id, sizeof(id), "%s", json_string_value(json_object_get(r.json, "id")));
    it_resp_free(&r);

    len += (size_t)snprintf(csv, sizeof(csv), "city,pop,area\n");
    for (int i = 0; i < 50; i++)
        len += (size_t)snprintf(csv + len, sizeof(csv) - len, "\"Town %d, North\",%d,%d.5\n", i, 1000 + i, i);
    for (size_t i = 0; i < sizeof(bin); i++)
        bin[i] = (char)(i % 251);
    put_file(id, "tables/cities.csv", csv, (long)len);
    put_file(id, "tables/t.tsv", TSV, -1);
    put_file(id, "img/g.png", png, (long)png_n);
    put_file(id, "meta.json", META, -1);
    put_file(id, "README.txt", README, -1);
    put_file(id, "weights.bin", bin, sizeof(bin));
    ck_assert_int_eq(call(&r, &alice, "POST", "{\"message\":\"first\"}", -1, "/api/v1/datasets/%s/versions", id),
                     201);
    it_resp_free(&r);

    p = preview(&alice, id, "tables/cities.csv");
    ck_assert_str_eq(s_of(p, "kind"), "table");
    cols = json_object_get(p, "columns");
    ck_assert_int_eq(json_array_size(cols), 3);
    ck_assert_str_eq(s_of(json_array_get(cols, 0), "name"), "city");
    ck_assert_str_eq(s_of(json_array_get(cols, 0), "type"), "string");
    ck_assert_str_eq(s_of(json_array_get(cols, 1), "type"), "int");
    ck_assert_str_eq(s_of(json_array_get(cols, 2), "type"), "float");
    ck_assert_int_eq(n_of(p, "row_count"), 50);
    ck_assert_int_eq(json_array_size(json_object_get(p, "rows")), 20);
    ck_assert_str_eq(json_string_value(json_array_get(json_array_get(json_object_get(p, "rows"), 3), 0)),
                     "Town 3, North");
    json_decref(p);

    p = preview(&alice, id, "tables/t.tsv");
    ck_assert_str_eq(s_of(p, "kind"), "table");
    ck_assert_str_eq(s_of(p, "delimiter"), "\t");
    ck_assert_int_eq(n_of(p, "row_count"), 2);
    json_decref(p);

    p = preview(&alice, id, "img/g.png");
    ck_assert_str_eq(s_of(p, "kind"), "image");
    ck_assert_int_eq(n_of(p, "width"), 400);
    ck_assert_int_eq(n_of(p, "height"), 200);
    ck_assert_int_eq(strncmp(s_of(p, "thumbnail"), "data:image/png;base64,", 22), 0);
    thumb = b64_decode(s_of(p, "thumbnail") + 22, &tn);
    ck_assert_int_gt(tn, 24);
    ck_assert_int_eq(memcmp(thumb, "\x89PNG\r\n\x1a\n", 8), 0);
    ck_assert_int_eq(memcmp(thumb + 12, "IHDR", 4), 0);
    /* IHDR: 256 x 128 */
    ck_assert_int_eq(thumb[16] << 24 | thumb[17] << 16 | thumb[18] << 8 | thumb[19], 256);
    ck_assert_int_eq(thumb[20] << 24 | thumb[21] << 16 | thumb[22] << 8 | thumb[23], 128);
    free(thumb);
    json_decref(p);

    p = preview(&alice, id, "meta.json");
    ck_assert_str_eq(s_of(p, "kind"), "json");
    ck_assert_ptr_nonnull(strstr(s_of(p, "text"), "\"classes\": [\n"));
    json_decref(p);
    p = preview(&alice, id, "README.txt");
    ck_assert_str_eq(s_of(p, "kind"), "text");
    ck_assert_str_eq(s_of(p, "text"), "Read me.\n");
    json_decref(p);
    p = preview(&alice, id, "weights.bin");
    ck_assert_str_eq(s_of(p, "kind"), "none");
    ck_assert_int_eq(n_of(p, "size"), (long long)sizeof(bin));
    json_decref(p);

    /* unknown path and version, bad version, another user, nobody */
    ck_assert_int_eq(call(&r, &alice, "GET", NULL, 0, "/api/v1/datasets/%s/versions/1/preview/nope.csv", id), 404);
    it_resp_free(&r);
    ck_assert_int_eq(call(&r, &alice, "GET", NULL, 0, "/api/v1/datasets/%s/versions/9/preview/README.txt", id), 404);
    it_resp_free(&r);
    ck_assert_int_eq(call(&r, &alice, "GET", NULL, 0, "/api/v1/datasets/%s/versions/x1/stats", id), 400);
    it_resp_free(&r);
    ck_assert_int_eq(call(&r, &bob, "GET", NULL, 0, "/api/v1/datasets/%s/versions/1/preview/README.txt", id), 404);
    it_resp_free(&r);
    ck_assert_int_eq(call(&r, NULL, "GET", NULL, 0, "/api/v1/datasets/%s/versions/latest/stats", id), 404);
    it_resp_free(&r);

    /* stats of the latest version */
    ck_assert_int_eq(call(&r, &alice, "GET", NULL, 0, "/api/v1/datasets/%s/versions/latest/stats", id), 200);
    ck_assert_int_eq(n_of(r.json, "files"), 6);
    ck_assert_int_eq(n_of(r.json, "size_bytes"), (long long)(len + strlen(TSV) + png_n + strlen(META) + strlen(README) + sizeof(bin)));
    ck_assert_str_eq(s_of(json_array_get(json_object_get(r.json, "by_type"), 0), "media_type"), "image/png");
    ck_assert_int_eq(json_array_size(json_object_get(r.json, "by_extension")), 6);
    it_resp_free(&r);
    free(png);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("dataset_previews");
    TCase *tc = tcase_create("previews");
    SRunner *sr;
    int failed;

    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 180);
    tcase_add_test(tc, previews_of_a_published_version_and_its_stats);
    suite_add_tcase(s, tc);
    sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
