/*
 * test_previews.c - previews computed by the background worker (CSV/TSV
 * with sniffed delimiters, headers and types, JSON, JSON Lines, text,
 * binary, PNG thumbnails, hostile images) and a version's stats.
 */
#include "ds.h"
#include "ed_error.h"
#include "ed_json.h"
#include "ed_store.h"
#include "unit_util.h"

#include <check.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <stb/stb_image.h>
#include <stb/stb_image_write.h>

#define ALICE 1
#define BOB   2

static char dir[64];
static ed_store *st;
static ds *d;
static ds_dataset *set;

static void setup(void)
{
    char db[256];
    ds_dataset_spec spec = DS_SPEC_KEEP;

    snprintf(dir, sizeof(dir), "/tmp/eddy-preview-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(db, sizeof(db), "%s/eddy.db", dir);
    ck_assert_int_eq(ed_store_open(&st, db), 0);
    ck_assert_int_eq(ed_store_exec(st, "INSERT INTO users (id, username, email, password_hash, created_at, "
                                       "updated_at) VALUES (1, 'alice', 'a@x', 'x', 0, 0), "
                                       "(2, 'bob', 'b@x', 'x', 0, 0)"),
                     0);
    ck_assert_int_eq(ds_open(&d, st, dir, NULL), 0);
    spec.name = "previews";
    ck_assert_msg(ds_dataset_create(&set, d, ALICE, &spec) == 0, "%s", ed_error_last());
}

static void teardown(void)
{
    ds_dataset_free(set);
    ds_free(d);
    ed_store_close(st);
    unit_remove_tree(dir);
}

static void put(const char *path, const void *buf, size_t n)
{
    char tmp[200];
    int fd, err;

    snprintf(tmp, sizeof(tmp), "%s/src-XXXXXX", dir);
    ck_assert_int_ge(fd = mkstemp(tmp), 0);
    unlink(tmp);
    for (size_t done = 0; done < n;) {
        ssize_t k = write(fd, (const char *)buf + done, n - done);
        ck_assert_int_gt(k, 0);
        done += (size_t)k;
    }
    ck_assert_int_eq(lseek(fd, 0, SEEK_SET), 0);
    err = ds_draft_put_fd(NULL, d, ALICE, set->id, path, fd, NULL, 0);
    close(fd);
    ck_assert_msg(err == 0, "put %s: %s", path, ed_error_last());
}

static void put_text(const char *path, const char *text)
{
    put(path, text, strlen(text));
}

static void publish(void)
{
    ck_assert_msg(ds_version_publish(NULL, d, ALICE, set->id, "v", NULL) == 0, "%s", ed_error_last());
}

/* The preview of `path` in the latest version, waiting for the worker
 * (bounded: a minute). The first ask is pending unless `ready`. */
static json_t *preview(const char *path)
{
    char *text = NULL;
    bool pending = true;
    json_t *v = NULL;

    for (int i = 0; i < 3000 && pending; i++) {
        ck_assert_msg(ds_preview_get(&text, &pending, d, ALICE, set->id, 0, path) == 0, "%s: %s", path,
                      ed_error_last());
        if (pending) {
            ck_assert_ptr_null(text);
            usleep(20000);
        }
    }
    ck_assert_msg(!pending, "preview of %s never came", path);
    ck_assert_int_eq(ed_json_parse(&v, text, strlen(text), 64), 0);
    free(text);
    return v;
}

static const char *str(json_t *o, const char *key)
{
    const char *s = json_string_value(json_object_get(o, key));
    ck_assert_msg(s, "no string %s", key);
    return s;
}

static json_int_t num(json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    ck_assert_msg(json_is_integer(v), "no integer %s", key);
    return json_integer_value(v);
}

static const char *col_type(json_t *p, size_t i)
{
    return str(json_array_get(json_object_get(p, "columns"), i), "type");
}

static const char *col_name(json_t *p, size_t i)
{
    return str(json_array_get(json_object_get(p, "columns"), i), "name");
}

static const char *cell(json_t *p, size_t row, size_t col)
{
    return json_string_value(json_array_get(json_array_get(json_object_get(p, "rows"), row), col));
}

START_TEST(csv_and_tsv_get_delimiter_header_types_rows_and_a_streamed_row_count)
{
    /* 5000 rows; quoted fields hold commas, quotes and newlines, which must
     * not be counted as rows; the file is larger than the 1 MiB head */
    size_t cap = 4 << 20, len = 0;
    char *csv = malloc(cap);
    json_t *p;

    len += (size_t)snprintf(csv + len, cap - len, "id,score,ok,day,name\r\n");
    for (int i = 0; i < 5000; i++)
        len += (size_t)snprintf(csv + len, cap - len, "%d,%d.%d,%s,2024-01-%02d,\"Smith, \"\"J\"\"\nline %d %0200d\"\r\n",
                                i, i, i % 10, i % 2 ? "true" : "false", i % 28 + 1, i, 0);
    ck_assert_int_gt(len, 1 << 20);
    put("data/train.csv", csv, len);
    put_text("t.tsv", "a\tb\n1\tx y\n2\tz, w\n");
    put_text("semi.csv", "1;2.5;3\n4;5;6\n7;8;9\n");
    put_text("one.csv", "just\none\ncolumn\n");
    publish();

    p = preview("data/train.csv");
    ck_assert_str_eq(str(p, "kind"), "table");
    ck_assert_str_eq(str(p, "delimiter"), ",");
    ck_assert(json_is_true(json_object_get(p, "header")));
    ck_assert_int_eq(num(p, "row_count"), 5000);
    ck_assert_int_eq(json_array_size(json_object_get(p, "rows")), 20);
    ck_assert_int_eq(json_array_size(json_object_get(p, "columns")), 5);
    ck_assert_str_eq(col_name(p, 0), "id");
    ck_assert_str_eq(col_type(p, 0), "int");
    ck_assert_str_eq(col_type(p, 1), "float");
    ck_assert_str_eq(col_type(p, 2), "bool");
    ck_assert_str_eq(col_type(p, 3), "date");
    ck_assert_str_eq(col_type(p, 4), "string");
    ck_assert_str_eq(cell(p, 1, 0), "1");
    ck_assert_ptr_nonnull(strstr(cell(p, 1, 4), "Smith, \"J\"\nline 1"));
    ck_assert_int_eq(num(p, "size"), (json_int_t)len);
    json_decref(p);

    p = preview("t.tsv");
    ck_assert_str_eq(str(p, "delimiter"), "\t");
    ck_assert_str_eq(col_name(p, 1), "b");
    ck_assert_str_eq(cell(p, 1, 1), "z, w");
    ck_assert_int_eq(num(p, "row_count"), 2);
    json_decref(p);

    p = preview("semi.csv");
    ck_assert_str_eq(str(p, "delimiter"), ";");
    ck_assert(json_is_false(json_object_get(p, "header")));
    ck_assert_str_eq(col_name(p, 0), "column_1");
    ck_assert_str_eq(col_type(p, 1), "float");
    ck_assert_int_eq(num(p, "row_count"), 3);
    ck_assert_str_eq(cell(p, 0, 0), "1");
    json_decref(p);

    p = preview("one.csv");
    ck_assert_str_eq(str(p, "kind"), "table");
    ck_assert_int_eq(json_array_size(json_object_get(p, "columns")), 1);
    json_decref(p);
    free(csv);
}
END_TEST

START_TEST(json_json_lines_text_and_binary)
{
    unsigned char bin[4096];
    json_t *p;

    for (size_t i = 0; i < sizeof(bin); i++)
        bin[i] = (unsigned char)(i * 7);
    put_text("cfg.json", "{\"a\":[1,2,{\"b\":null}],\"c\":\"d\"}");
    put_text("broken.json", "{\"a\": ");
    put_text("rows.jsonl", "{\"x\":1,\"y\":\"a\"}\n{\"x\":2.5,\"z\":true}\n\n{\"x\":3,\"y\":{\"n\":1}}\n");
    put_text("readme.md", "# Title\n\nSome text: caf\xc3\xa9.\n");
    put("blob.bin", bin, sizeof(bin));
    put_text("latin1.txt", "caf\xe9\n");
    publish();

    p = preview("cfg.json");
    ck_assert_str_eq(str(p, "kind"), "json");
    ck_assert_ptr_nonnull(strstr(str(p, "text"), "\n  \"a\": [\n"));
    json_decref(p);
    p = preview("broken.json");
    ck_assert_str_eq(str(p, "kind"), "text");
    ck_assert_str_eq(str(p, "text"), "{\"a\": ");
    json_decref(p);
    p = preview("rows.jsonl");
    ck_assert_str_eq(str(p, "kind"), "table");
    ck_assert_str_eq(col_name(p, 0), "x");
    ck_assert_str_eq(col_type(p, 0), "float");
    ck_assert_str_eq(col_name(p, 1), "y");
    ck_assert_str_eq(col_type(p, 1), "string");
    ck_assert_str_eq(col_type(p, 2), "bool");
    ck_assert_int_eq(num(p, "row_count"), 3);
    ck_assert_str_eq(cell(p, 2, 1), "{\"n\":1}");
    json_decref(p);
    p = preview("readme.md");
    ck_assert_str_eq(str(p, "kind"), "text");
    ck_assert_str_eq(str(p, "text"), "# Title\n\nSome text: caf\xc3\xa9.\n");
    ck_assert(json_is_false(json_object_get(p, "truncated")));
    json_decref(p);
    p = preview("blob.bin");
    ck_assert_str_eq(str(p, "kind"), "none");
    ck_assert(json_is_true(json_object_get(p, "binary")));
    ck_assert_str_eq(str(p, "media_type"), "application/octet-stream");
    json_decref(p);
    p = preview("latin1.txt");
    ck_assert_str_eq(str(p, "kind"), "none");
    json_decref(p);
}
END_TEST

static void png_out(void *ctx, void *data, int size)
{
    FILE *f = ctx;
    fwrite(data, 1, (size_t)size, f);
}

static unsigned char *b64_decode(const char *s, size_t *out_len)
{
    static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    size_t n = strlen(s), o = 0;
    unsigned char *out = malloc(n);
    unsigned v = 0;
    int bits = 0;

    for (size_t i = 0; i < n && s[i] != '='; i++) {
        const char *c = strchr(tab, s[i]);
        ck_assert_ptr_nonnull(c);
        v = v << 6 | (unsigned)(c - tab);
        if ((bits += 6) >= 8) {
            bits -= 8;
            out[o++] = (unsigned char)(v >> bits);
        }
    }
    *out_len = o;
    return out;
}

START_TEST(images_get_a_small_png_thumbnail_and_hostile_ones_are_refused_before_decoding)
{
    int w = 600, h = 300;
    unsigned char *rgb = malloc((size_t)w * h * 3), *png_bytes, *dec;
    char *buf = NULL;
    size_t len = 0, dlen;
    FILE *f = open_memstream(&buf, &len);
    json_t *p;
    const char *url;
    int tw, th, comp;

    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            rgb[(y * w + x) * 3] = (unsigned char)x;
            rgb[(y * w + x) * 3 + 1] = (unsigned char)y;
            rgb[(y * w + x) * 3 + 2] = 128;
        }
    ck_assert(stbi_write_png_to_func(png_out, f, w, h, 3, rgb, w * 3));
    fclose(f);
    put("img/wide.png", buf, len);
    /* a PNG whose header claims 30000 x 30000 pixels, then garbage */
    {
        static const unsigned char huge[] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n', 0, 0, 0, 13, 'I', 'H', 'D',
                                             'R', 0, 0, 0x75, 0x30, 0, 0, 0x75, 0x30, 8, 2, 0, 0, 0, 0x12, 0x34,
                                             0x56, 0x78, 'g', 'a', 'r', 'b', 'a', 'g', 'e'};
        unsigned char big[sizeof(huge)];
        put("img/huge.png", huge, sizeof(huge));
        /* 10000 x 8000: within the decoder's own bounds, over ours (64 Mpixel) */
        memcpy(big, huge, sizeof(huge));
        big[18] = 0x27, big[19] = 0x10, big[22] = 0x1f, big[23] = 0x40;
        put("img/big.png", big, sizeof(big));
    }
    /* a real PNG's first half */
    put("img/cut.png", buf, len / 2);
    /* a JPEG signature and nothing that decodes */
    put_text("img/fake.jpg", "\xff\xd8\xff\xe0 not really a jpeg at all");
    publish();

    p = preview("img/wide.png");
    ck_assert_str_eq(str(p, "kind"), "image");
    ck_assert_int_eq(num(p, "width"), 600);
    ck_assert_int_eq(num(p, "height"), 300);
    url = str(p, "thumbnail");
    ck_assert_int_eq(strncmp(url, "data:image/png;base64,", 22), 0);
    png_bytes = b64_decode(url + 22, &dlen);
    ck_assert_int_eq(memcmp(png_bytes, "\x89PNG\r\n\x1a\n", 8), 0);
    ck_assert(stbi_info_from_memory(png_bytes, (int)dlen, &tw, &th, &comp));
    ck_assert_int_eq(tw, 256);
    ck_assert_int_eq(th, 128);
    dec = stbi_load_from_memory(png_bytes, (int)dlen, &tw, &th, &comp, 3);
    ck_assert_ptr_nonnull(dec);
    /* the gradient survives: blue stays 128, red grows left to right */
    ck_assert_int_eq(dec[2], 128);
    ck_assert_int_lt(dec[0], dec[(255) * 3]);
    stbi_image_free(dec);
    free(png_bytes);
    json_decref(p);

    p = preview("img/huge.png");
    ck_assert_str_eq(str(p, "kind"), "none");
    ck_assert_int_eq(num(p, "width"), 30000);
    ck_assert_ptr_nonnull(strstr(str(p, "error"), "30000x30000: too large for a thumbnail"));
    ck_assert_ptr_null(json_object_get(p, "thumbnail"));
    json_decref(p);
    p = preview("img/big.png");
    ck_assert_str_eq(str(p, "kind"), "none");
    ck_assert_int_eq(num(p, "width"), 10000);
    ck_assert_int_eq(num(p, "height"), 8000);
    ck_assert_ptr_nonnull(strstr(str(p, "error"), "too large for a thumbnail"));
    ck_assert_ptr_null(json_object_get(p, "thumbnail"));
    json_decref(p);
    p = preview("img/cut.png");
    ck_assert_str_eq(str(p, "kind"), "none");
    ck_assert_ptr_nonnull(strstr(str(p, "error"), "decode"));
    json_decref(p);
    p = preview("img/fake.jpg");
    ck_assert_str_eq(str(p, "kind"), "none");
    ck_assert_ptr_nonnull(json_object_get(p, "error"));
    json_decref(p);
    free(buf);
    free(rgb);
}
END_TEST

START_TEST(a_publish_queues_every_preview_and_stats_total_by_type_and_extension)
{
    char *text = NULL;
    bool pending = true;
    json_t *s = NULL, *e;
    int i;

    put_text("a.csv", "x\n1\n");
    put_text("b/c.CSV", "y\n2\n3\n");
    put_text("same.txt", "x\n1\n");    /* the same bytes as a.csv: one preview */
    put_text("readme", "hello");
    publish();
    ck_assert_int_eq(ds_previews_enqueue_version(d, set->id, 0), 0);
    for (i = 0; i < 3000 && unit_store_int(st, "SELECT COUNT(*) FROM dataset_previews") < 3; i++)
        usleep(20000);
    ck_assert_int_eq(unit_store_int(st, "SELECT COUNT(*) FROM dataset_previews"), 3);
    /* ready at the first ask */
    ck_assert_int_eq(ds_preview_get(&text, &pending, d, ALICE, set->id, 1, "b/c.CSV"), 0);
    ck_assert(!pending);
    ck_assert_ptr_nonnull(strstr(text, "\"row_count\":2"));
    free(text);
    /* the same access as the files: a private dataset is not there for bob */
    ck_assert_int_eq(ds_preview_get(&text, &pending, d, BOB, set->id, 1, "a.csv"), ED_ENOTFOUND);
    ck_assert_int_eq(ds_preview_get(&text, &pending, d, ALICE, set->id, 1, "nope.csv"), ED_ENOTFOUND);
    ck_assert_int_eq(ds_preview_get(&text, &pending, d, ALICE, set->id, 7, "a.csv"), ED_ENOTFOUND);

    ck_assert_int_eq(ds_version_stats(&text, d, ALICE, set->id, 0), 0);
    ck_assert_int_eq(ed_json_parse(&s, text, strlen(text), 8), 0);
    free(text);
    ck_assert_int_eq(num(s, "files"), 4);
    ck_assert_int_eq(num(s, "size_bytes"), 4 + 6 + 4 + 5);
    e = json_array_get(json_object_get(s, "by_type"), 0);
    ck_assert_str_eq(str(e, "media_type"), "text/csv");
    ck_assert_int_eq(num(e, "files"), 2);
    ck_assert_int_eq(num(e, "bytes"), 10);
    ck_assert_int_eq(json_array_size(json_object_get(s, "by_extension")), 3);
    e = json_array_get(json_object_get(s, "by_extension"), 0);
    ck_assert_str_eq(str(e, "extension"), "csv");
    ck_assert_int_eq(num(e, "files"), 2);
    json_decref(s);
    ck_assert_int_eq(ds_version_stats(&text, d, BOB, set->id, 0), ED_ENOTFOUND);

    /* gc of a deleted dataset takes its previews with its blobs */
    ck_assert_int_eq(ds_dataset_delete(d, ALICE, set->id), 0);
    ck_assert_int_eq(ds_gc(NULL, d, 0), 0);
    ck_assert_int_eq(unit_store_int(st, "SELECT COUNT(*) FROM dataset_previews"), 0);
}
END_TEST

START_TEST(closing_the_store_stops_a_worker_in_the_middle_of_a_large_count)
{
    /* 64 MiB of one-line records: the count is still running when ds_free
     * asks the worker to stop; ds_free returns and nothing is stored */
    size_t len = 64 << 20;
    char *csv = malloc(len);
    char *text = NULL;
    bool pending = false;

    for (size_t i = 0; i < len; i += 8)
        memcpy(csv + i, "1,2,3,4\n", 8);
    put("big.csv", csv, len);
    free(csv);
    publish();
    ck_assert_int_eq(ds_preview_get(&text, &pending, d, ALICE, set->id, 0, "big.csv"), 0);
    ck_assert(pending);
    ds_free(d);
    d = NULL;
    ck_assert_int_le(unit_store_int(st, "SELECT COUNT(*) FROM dataset_previews"), 1);
    ck_assert_int_eq(ds_open(&d, st, dir, NULL), 0);
}
END_TEST

int main(void)
{
    const TTest *tests[] = {
        csv_and_tsv_get_delimiter_header_types_rows_and_a_streamed_row_count,
        json_json_lines_text_and_binary,
        images_get_a_small_png_thumbnail_and_hostile_ones_are_refused_before_decoding,
        a_publish_queues_every_preview_and_stats_total_by_type_and_extension,
        closing_the_store_stops_a_worker_in_the_middle_of_a_large_count,
        NULL,
    };
    return unit_tests_run("previews", 240, setup, teardown, tests);
}
