/*
 * test_safetensors.c - safetensors round trips for every dtype (and views,
 * scalars, empty tensors, metadata), the on-disk layout, and one test per
 * kind of malformed file.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fw/ops.h"
#include "fw/random.h"
#include "fw/safetensors.h"

static char tmpdir[64];

static void setup(void)
{
    strcpy(tmpdir, "/tmp/fw_st_XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(tmpdir));
}

static void teardown(void)
{
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", tmpdir);
    ck_assert_int_eq(system(cmd), 0);
}

static void path_of(char *buf, size_t n, const char *name)
{
    snprintf(buf, n, "%s/%s", tmpdir, name);
}

/* A file image: 8-byte length, the JSON, then `datalen` bytes 0..255. */
static uint8_t *image(const char *json, size_t datalen, size_t *len)
{
    size_t hl = strlen(json);
    uint8_t *b = malloc(8 + hl + datalen + 1);
    for (int i = 0; i < 8; i++)
        b[i] = (uint8_t)((uint64_t)hl >> (8 * i));
    memcpy(b + 8, json, hl);
    for (size_t i = 0; i < datalen; i++)
        b[8 + hl + i] = (uint8_t)i;
    *len = 8 + hl + datalen;
    return b;
}

/* Open an image built from json; expect failure with code and kind. */
static void expect_bad(const char *json, size_t datalen, int code, fw_st_error kind,
                       const char *msg_part)
{
    size_t len;
    uint8_t *b = image(json, datalen, &len);
    fw_safetensors *f = (fw_safetensors *)1;
    int err = fw_safetensors_open_memory(&f, b, len);
    ck_assert_msg(err == code, "%s: code %d want %d (%s)", json, err, code, fw_error_last());
    ck_assert_msg(fw_safetensors_error_kind() == kind, "%s: kind %d want %d (%s)", json,
                  (int)fw_safetensors_error_kind(), (int)kind, fw_error_last());
    ck_assert_ptr_null(f);
    if (msg_part)
        ck_assert_msg(strstr(fw_error_last(), msg_part) != NULL, "message '%s' lacks '%s'",
                      fw_error_last(), msg_part);
    free(b);
}

static fw_tensor *tensor_bytes(fw_dtype dt, const int64_t *shape, int nd, uint8_t seed)
{
    int64_t n = 1;
    for (int i = 0; i < nd; i++)
        n *= shape[i];
    size_t bytes = (size_t)n * fw_dtype_size(dt);
    uint8_t *buf = malloc(bytes + 1);
    for (size_t i = 0; i < bytes; i++)
        buf[i] = (uint8_t)(seed + i * 7);
    if (dt == FW_BOOL)
        for (size_t i = 0; i < bytes; i++)
            buf[i] &= 1;
    fw_tensor *t = NULL;
    ck_assert_int_eq(fw_tensor_from_data(&t, buf, dt, shape, nd), 0);
    free(buf);
    return t;
}

START_TEST(round_trip_every_dtype_with_metadata)
{
    const fw_dtype dts[] = { FW_FLOAT64, FW_FLOAT32, FW_FLOAT16, FW_BFLOAT16,
                             FW_INT64,   FW_INT32,   FW_UINT8,   FW_BOOL };
    const char *names[10] = { "f64", "f32", "f16", "bf16", "i64", "i32", "u8", "bool",
                              "scalar", "empty" };
    fw_tensor *ts[10];
    const int64_t shape[3] = { 2, 3, 5 };
    for (int i = 0; i < 8; i++)
        ts[i] = tensor_bytes(dts[i], shape, 3 - (i % 3), (uint8_t)(i * 31));
    ts[8] = tensor_bytes(FW_FLOAT32, NULL, 0, 9);                  /* shape [] */
    const int64_t eshape[2] = { 0, 4 };
    ts[9] = tensor_bytes(FW_INT32, eshape, 2, 0);                  /* no bytes */
    const char *mk[2] = { "format", "note" }, *mv[2] = { "pt", "quote \" and \\ and \n" };
    char path[128];
    path_of(path, sizeof(path), "all.safetensors");
    ck_assert_int_eq(fw_safetensors_save(path, names, ts, 10, mk, mv, 2), 0);

    fw_safetensors *f = NULL;
    ck_assert_int_eq(fw_safetensors_open(&f, path), 0);
    ck_assert_uint_eq(fw_safetensors_count(f), 10);
    ck_assert_uint_eq(fw_safetensors_metadata_count(f), 2);
    ck_assert_str_eq(fw_safetensors_metadata_get(f, "format"), "pt");
    ck_assert_str_eq(fw_safetensors_metadata_get(f, "note"), mv[1]);
    ck_assert_ptr_null(fw_safetensors_metadata_get(f, "nope"));
    for (int i = 0; i < 10; i++) {
        int64_t k = fw_safetensors_find(f, names[i]);
        ck_assert_int_ge(k, 0);
        ck_assert_int_eq(fw_safetensors_dtype(f, (size_t)k), fw_tensor_dtype(ts[i]));
        ck_assert_int_eq(fw_safetensors_ndim(f, (size_t)k), fw_tensor_ndim(ts[i]));
        for (int d = 0; d < fw_tensor_ndim(ts[i]); d++)
            ck_assert_int_eq(fw_safetensors_shape(f, (size_t)k)[d], fw_tensor_shape(ts[i])[d]);
        size_t nb;
        const void *raw = fw_safetensors_data(f, (size_t)k, &nb);
        size_t want = (size_t)fw_tensor_numel(ts[i]) * fw_dtype_size(fw_tensor_dtype(ts[i]));
        ck_assert_uint_eq(nb, want);
        ck_assert(nb == 0 || memcmp(raw, fw_tensor_data(ts[i]), nb) == 0);
        fw_tensor *back = NULL;
        ck_assert_int_eq(fw_safetensors_get(&back, f, names[i]), 0);
        ck_assert_int_eq(fw_tensor_dtype(back), fw_tensor_dtype(ts[i]));
        ck_assert_int_eq(fw_tensor_numel(back), fw_tensor_numel(ts[i]));
        ck_assert(want == 0 || memcmp(fw_tensor_data(back), fw_tensor_data(ts[i]), want) == 0);
        fw_tensor_unref(back);
    }
    fw_tensor *none = NULL;
    ck_assert_int_eq(fw_safetensors_get(&none, f, "missing"), FW_ERANGE);
    ck_assert_ptr_nonnull(strstr(fw_error_last(), "missing"));
    fw_safetensors_close(f);
    for (int i = 0; i < 10; i++)
        fw_tensor_unref(ts[i]);
}
END_TEST

START_TEST(saved_layout_is_aligned_and_views_are_written_in_c_order)
{
    double v[6] = { 0, 1, 2, 3, 4, 5 };
    int64_t shape[2] = { 2, 3 };
    fw_tensor *t = NULL, *tt = NULL;
    ck_assert_int_eq(fw_tensor_from_data(&t, v, FW_FLOAT64, shape, 2), 0);
    int perm[2] = { 1, 0 };
    ck_assert_int_eq(fw_transpose(&tt, t, perm, 2), 0);     /* [3, 2] view */
    ck_assert(!fw_tensor_is_contiguous(tt));
    char path[128];
    path_of(path, sizeof(path), "view.safetensors");
    const char *name = "w";
    ck_assert_int_eq(fw_safetensors_save(path, &name, &tt, 1, NULL, NULL, 0), 0);

    FILE *fp = fopen(path, "rb");
    uint8_t buf[512];
    size_t n = fread(buf, 1, sizeof(buf), fp);
    fclose(fp);
    uint64_t hl = 0;
    for (int i = 7; i >= 0; i--)
        hl = (hl << 8) | buf[i];
    ck_assert_uint_eq(hl % 8, 0);
    ck_assert_uint_eq(n, 8 + hl + 6 * sizeof(double));
    ck_assert_int_eq(buf[8], '{');
    const double want[6] = { 0, 3, 1, 4, 2, 5 };
    ck_assert(memcmp(buf + 8 + hl, want, sizeof(want)) == 0);
    fw_tensor_unref(t);
    fw_tensor_unref(tt);
}
END_TEST

START_TEST(reads_a_file_written_by_another_implementation)
{
    /* unordered keys, spaces, padding, escapes, unknown extra field */
    const char *json = "{ \"b\" : {\"shape\":[2],\"dtype\":\"I32\",\"data_offsets\":[4,12]},"
                       "\"a\\u00e9\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[0,4],"
                       "\"extra\":[1,{\"x\":null}]},"
                       "\"__metadata__\":{\"k\":\"v\"}}    ";
    size_t len;
    uint8_t *b = image(json, 12, &len);
    fw_safetensors *f = NULL;
    ck_assert_int_eq(fw_safetensors_open_memory(&f, b, len), 0);
    ck_assert_uint_eq(fw_safetensors_count(f), 2);
    ck_assert_int_ge(fw_safetensors_find(f, "a\xc3\xa9"), 0);
    fw_tensor *t = NULL;
    ck_assert_int_eq(fw_safetensors_get(&t, f, "b"), 0);
    const int32_t *p = fw_tensor_data(t);
    int32_t want0;
    uint8_t w[4] = { 4, 5, 6, 7 };
    memcpy(&want0, w, 4);
    ck_assert_int_eq(p[0], want0);
    fw_tensor_unref(t);
    fw_safetensors_close(f);
    free(b);
}
END_TEST

START_TEST(empty_file_and_short_length_are_truncated)
{
    fw_safetensors *f = NULL;
    uint8_t four[4] = { 1, 0, 0, 0 };
    ck_assert_int_eq(fw_safetensors_open_memory(&f, four, 4), FW_EFORMAT);
    ck_assert_int_eq(fw_safetensors_error_kind(), FW_ST_ETRUNCATED);
    /* header length 100 in a 20-byte file */
    uint8_t b[20] = { 100 };
    memcpy(b + 8, "{}", 2);
    ck_assert_int_eq(fw_safetensors_open_memory(&f, b, sizeof(b)), FW_EFORMAT);
    ck_assert_int_eq(fw_safetensors_error_kind(), FW_ST_ETRUNCATED);
    ck_assert_ptr_nonnull(strstr(fw_error_last(), "runs past the end"));
    /* the same through a real file */
    char path[128];
    path_of(path, sizeof(path), "short.safetensors");
    FILE *fp = fopen(path, "wb");
    fwrite(b, 1, sizeof(b), fp);
    fclose(fp);
    ck_assert_int_eq(fw_safetensors_open(&f, path), FW_EFORMAT);
    ck_assert_int_eq(fw_safetensors_error_kind(), FW_ST_ETRUNCATED);
    ck_assert_ptr_null(f);
}
END_TEST

START_TEST(header_length_over_the_bound_is_refused)
{
    uint8_t b[16] = { 0 };
    uint64_t big = FW_SAFETENSORS_MAX_HEADER + 1;
    for (int i = 0; i < 8; i++)
        b[i] = (uint8_t)(big >> (8 * i));
    fw_safetensors *f = NULL;
    ck_assert_int_eq(fw_safetensors_open_memory(&f, b, sizeof(b)), FW_EFORMAT);
    ck_assert_int_eq(fw_safetensors_error_kind(), FW_ST_EHEADER_TOO_LARGE);
    ck_assert_ptr_nonnull(strstr(fw_error_last(), "over the limit"));
}
END_TEST

START_TEST(header_that_is_not_utf8_is_refused)
{
    expect_bad("{\"a\xff\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]}}", 1,
               FW_EFORMAT, FW_ST_EUTF8, "UTF-8");
    /* overlong encoding of '/' */
    expect_bad("{\"a\xc0\xaf\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]}}", 1,
               FW_EFORMAT, FW_ST_EUTF8, NULL);
}
END_TEST

START_TEST(invalid_json_is_refused)
{
    expect_bad("{\"a\":{\"dtype\":\"U8\",", 0, FW_EFORMAT, FW_ST_EJSON, "not valid JSON");
    expect_bad("[1, 2]", 0, FW_EFORMAT, FW_ST_EJSON, "object");
    expect_bad("{} x", 0, FW_EFORMAT, FW_ST_EJSON, "trailing");
    expect_bad("{\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1],}}", 1,
               FW_EFORMAT, FW_ST_EJSON, NULL);
    expect_bad("{\"a\\q\":1}", 0, FW_EFORMAT, FW_ST_EJSON, "escape");
    expect_bad("", 0, FW_EFORMAT, FW_ST_EJSON, NULL);
}
END_TEST

START_TEST(entry_without_required_fields_is_refused)
{
    expect_bad("{\"a\":{\"dtype\":\"U8\",\"shape\":[1]}}", 1, FW_EFORMAT, FW_ST_EENTRY,
               "data_offsets");
    expect_bad("{\"a\":{\"dtype\":\"U8\",\"shape\":[1.5],\"data_offsets\":[0,1]}}", 1,
               FW_EFORMAT, FW_ST_EENTRY, "'a'");
    expect_bad("{\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0]}}", 1, FW_EFORMAT,
               FW_ST_EENTRY, NULL);
    expect_bad("{\"a\":7}", 0, FW_EFORMAT, FW_ST_EENTRY, NULL);
}
END_TEST

START_TEST(duplicate_name_is_refused)
{
    expect_bad("{\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]},"
               "\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[1,2]}}",
               2, FW_EFORMAT, FW_ST_EDUPLICATE, "'a' appears twice");
}
END_TEST

START_TEST(unknown_and_unsupported_dtypes_are_refused_distinctly)
{
    expect_bad("{\"a\":{\"dtype\":\"F33\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4,
               FW_EFORMAT, FW_ST_EDTYPE, "unknown dtype 'F33'");
    expect_bad("{\"a\":{\"dtype\":\"F8_E4M3\",\"shape\":[1],\"data_offsets\":[0,1]}}", 1,
               FW_EUNSUPPORTED, FW_ST_EDTYPE, "unsupported dtype 'F8_E4M3'");
}
END_TEST

START_TEST(shape_that_disagrees_with_offsets_is_refused)
{
    expect_bad("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,4]}}", 4,
               FW_EFORMAT, FW_ST_ESHAPE, "needs 8 bytes");
    expect_bad("{\"a\":{\"dtype\":\"F64\",\"shape\":[4294967296,4294967296],"
               "\"data_offsets\":[0,8]}}", 8, FW_EFORMAT, FW_ST_ESHAPE, "overflow");
}
END_TEST

START_TEST(offsets_beyond_the_data_are_refused)
{
    expect_bad("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 4,
               FW_EFORMAT, FW_ST_EBOUNDS, "beyond");
}
END_TEST

START_TEST(overlapping_gapped_or_uncovering_offsets_are_refused)
{
    expect_bad("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
               "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}",
               12, FW_EFORMAT, FW_ST_EOFFSETS, "overlap");
    expect_bad("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
               "\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[8,12]}}",
               12, FW_EFORMAT, FW_ST_EOFFSETS, "gap");
    expect_bad("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 8,
               FW_EFORMAT, FW_ST_EOFFSETS, "cover 4 bytes of the 8-byte");
    expect_bad("{\"a\":{\"dtype\":\"U8\",\"shape\":[0],\"data_offsets\":[4,0]}}", 4,
               FW_EFORMAT, FW_ST_EOFFSETS, "end before begin");
}
END_TEST

START_TEST(metadata_must_map_strings_to_strings)
{
    expect_bad("{\"__metadata__\":{\"k\":1}}", 0, FW_EFORMAT, FW_ST_EMETADATA, NULL);
    expect_bad("{\"__metadata__\":[\"k\"]}", 0, FW_EFORMAT, FW_ST_EMETADATA, NULL);
}
END_TEST

START_TEST(missing_file_is_an_io_error)
{
    fw_safetensors *f = NULL;
    char path[128];
    path_of(path, sizeof(path), "nope.safetensors");
    ck_assert_int_eq(fw_safetensors_open(&f, path), FW_EIO);
    ck_assert_int_eq(fw_safetensors_error_kind(), FW_ST_EIO);
    ck_assert_ptr_nonnull(strstr(fw_error_last(), "nope.safetensors"));
}
END_TEST

START_TEST(save_refuses_bad_names_and_leaves_no_file)
{
    int64_t s = 2;
    fw_tensor *t = NULL;
    ck_assert_int_eq(fw_zeros(&t, FW_FLOAT32, &s, 1), 0);
    fw_tensor *ts[2] = { t, t };
    const char *dup[2] = { "x", "x" }, *meta[1] = { "__metadata__" }, *empty[1] = { "" };
    char path[128];
    path_of(path, sizeof(path), "bad.safetensors");
    ck_assert_int_eq(fw_safetensors_save(path, dup, ts, 2, NULL, NULL, 0), FW_EINVAL);
    ck_assert_ptr_nonnull(strstr(fw_error_last(), "'x' repeats"));
    ck_assert_int_eq(fw_safetensors_save(path, meta, ts, 1, NULL, NULL, 0), FW_EINVAL);
    ck_assert_int_eq(fw_safetensors_save(path, empty, ts, 1, NULL, NULL, 0), FW_EINVAL);
    const char *latin1[1] = { "caf\xe9" };
    ck_assert_int_eq(fw_safetensors_save(path, latin1, ts, 1, NULL, NULL, 0), FW_EINVAL);
    ck_assert_ptr_nonnull(strstr(fw_error_last(), "UTF-8"));
    ck_assert_int_ne(access(path, F_OK), 0);
    /* a directory that does not exist */
    const char *ok[1] = { "x" };
    ck_assert_int_eq(fw_safetensors_save("/nonexistent-dir/x.safetensors", ok, ts, 1, NULL,
                                         NULL, 0), FW_EIO);
    fw_tensor_unref(t);
}
END_TEST

START_TEST(views_borrow_the_mapping_and_outlive_close)
{
    double v[6] = { 1, 2, 3, 4, 5, 6 };
    int64_t shape[2] = { 2, 3 };
    fw_tensor *t = NULL;
    ck_assert_int_eq(fw_tensor_from_data(&t, v, FW_FLOAT64, shape, 2), 0);
    char path[128];
    path_of(path, sizeof(path), "view.safetensors");
    const char *name = "w";
    ck_assert_int_eq(fw_safetensors_save(path, &name, &t, 1, NULL, NULL, 0), 0);

    fw_safetensors *f = NULL;
    fw_tensor *a = NULL, *b = NULL;
    ck_assert_int_eq(fw_safetensors_open(&f, path), 0);
    ck_assert_int_eq(fw_safetensors_tensor_view(&a, f, 0), 0);
    ck_assert_int_eq(fw_safetensors_tensor_view(&b, f, 0), 0);
    size_t nb;
    ck_assert_ptr_eq(fw_tensor_data(a), fw_safetensors_data(f, 0, &nb));  /* no copy */
    ck_assert_ptr_eq(fw_tensor_data(a), fw_tensor_data(b));
    fw_tensor *none = NULL;
    ck_assert_int_eq(fw_safetensors_tensor_view(&none, f, 3), FW_ERANGE);
    ck_assert_ptr_null(none);
    fw_tensor_unref(b);
    fw_safetensors_close(f);                       /* views keep the mapping */
    const double *p = fw_tensor_data(a);
    for (int i = 0; i < 6; i++)
        ck_assert(p[i] == v[i]);
    ck_assert_int_eq(fw_tensor_fill(a, 9.0), 0);   /* private: the file is untouched */
    fw_tensor_unref(a);

    fw_tensor *c = NULL;
    ck_assert_int_eq(fw_safetensors_open(&f, path), 0);
    ck_assert_int_eq(fw_safetensors_get(&c, f, "w"), 0);
    ck_assert(((double *)fw_tensor_data(c))[0] == 1.0);
    fw_tensor_unref(c);
    fw_safetensors_close(f);
    fw_tensor_unref(t);
}
END_TEST

/* Random corruptions of a valid file (byte flips, truncation, length
 * changes): every open either succeeds with every tensor inside the buffer
 * or fails with a kind and a message; never a crash or an overread (run
 * under ASan, each image is an exact-size heap block). */
START_TEST(random_corruptions_never_crash_and_always_explain)
{
    const char *json = "{\"__metadata__\":{\"k\":\"v\"},"
                       "\"a\":{\"dtype\":\"F32\",\"shape\":[2,2],\"data_offsets\":[0,16]},"
                       "\"b\":{\"dtype\":\"I64\",\"shape\":[1],\"data_offsets\":[16,24]},"
                       "\"c\":{\"dtype\":\"BOOL\",\"shape\":[],\"data_offsets\":[24,25]}}";
    size_t len;
    uint8_t *good = image(json, 25, &len);
    fw_generator *g;
    ck_assert_int_eq(fw_generator_new(&g, 31337), 0);
    int ok = 0, bad = 0;
    for (int iter = 0; iter < 3000; iter++) {
        int64_t r[4];
        ck_assert_int_eq(fw_random_randint_i64(g, r, 4, 0, 1 << 30), 0);
        size_t n = len;
        if (r[0] % 5 == 0)
            n = (size_t)(r[1] % (int64_t)len);               /* truncate */
        uint8_t *b = malloc(n ? n : 1);
        memcpy(b, good, n);
        int flips = (int)(r[2] % 4);
        for (int k = 0; k < flips && n > 0; k++) {
            int64_t pos_val[2];
            ck_assert_int_eq(fw_random_randint_i64(g, pos_val, 2, 0, 1 << 30), 0);
            b[pos_val[0] % (int64_t)n] = (uint8_t)pos_val[1];
        }
        if (r[3] % 7 == 0 && n >= 8)
            b[0] = (uint8_t)(b[0] + (r[3] % 3) - 1);          /* header length +-1 */
        fw_safetensors *f = NULL;
        if (fw_safetensors_open_memory(&f, b, n) == 0) {
            ok++;
            for (size_t i = 0; i < fw_safetensors_count(f); i++) {
                size_t nb;
                const uint8_t *d = fw_safetensors_data(f, i, &nb);
                ck_assert(d >= b && d + nb <= b + n);
            }
            fw_safetensors_close(f);
        } else {
            bad++;
            ck_assert_int_ne(fw_safetensors_error_kind(), FW_ST_OK);
            ck_assert_ptr_nonnull(strstr(fw_error_last(), "safetensors: "));
            ck_assert_ptr_null(f);
        }
        free(b);
    }
    ck_assert_int_gt(ok, 0);
    ck_assert_int_gt(bad, 0);
    fw_generator_free(g);
    free(good);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("fw_safetensors");
    TCase *tc = tcase_create("safetensors");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, round_trip_every_dtype_with_metadata);
    tcase_add_test(tc, saved_layout_is_aligned_and_views_are_written_in_c_order);
    tcase_add_test(tc, reads_a_file_written_by_another_implementation);
    tcase_add_test(tc, empty_file_and_short_length_are_truncated);
    tcase_add_test(tc, header_length_over_the_bound_is_refused);
    tcase_add_test(tc, header_that_is_not_utf8_is_refused);
    tcase_add_test(tc, invalid_json_is_refused);
    tcase_add_test(tc, entry_without_required_fields_is_refused);
    tcase_add_test(tc, duplicate_name_is_refused);
    tcase_add_test(tc, unknown_and_unsupported_dtypes_are_refused_distinctly);
    tcase_add_test(tc, shape_that_disagrees_with_offsets_is_refused);
    tcase_add_test(tc, offsets_beyond_the_data_are_refused);
    tcase_add_test(tc, overlapping_gapped_or_uncovering_offsets_are_refused);
    tcase_add_test(tc, metadata_must_map_strings_to_strings);
    tcase_add_test(tc, missing_file_is_an_io_error);
    tcase_add_test(tc, save_refuses_bad_names_and_leaves_no_file);
    tcase_add_test(tc, random_corruptions_never_crash_and_always_explain);
    tcase_add_test(tc, views_borrow_the_mapping_and_outlive_close);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
