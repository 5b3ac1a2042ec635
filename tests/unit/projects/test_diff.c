/*
 * test_diff.c - proj_diff / proj_diff_buffers: line hunks with folded
 * context, notebook cells matched by id (modified, added, removed,
 * unchanged), images as sha256 never base64, metadata changes apart,
 * binary files, the bounds, and versions against the working tree.
 */
#include "proj_fixture.h"

#include "ed_json.h"

static json_t *diff_of(const char *path, const char *a, const char *b)
{
    char *s = NULL;
    json_t *j;
    json_error_t je;
    ck_assert_msg(proj_diff_buffers(&s, path, a, a ? strlen(a) : 0, b, b ? strlen(b) : 0) == 0,
                  "%s", ed_error_last());
    j = json_loads(s, 0, &je);
    ck_assert_msg(j != NULL, "not JSON: %s", s);
    free(s);
    return j;
}

static const char *str_at(json_t *j, const char *k)
{
    return json_string_value(json_object_get(j, k));
}

START_TEST(text_hunks_fold_unchanged_lines)
{
    char a[4096] = "", b[4096] = "";
    json_t *d, *hunks, *h, *lines;
    for (int i = 1; i <= 100; i++) {
        char l[32];
        snprintf(l, sizeof l, "line %d\n", i);
        strcat(a, l);
        strcat(b, i == 50 ? "line fifty\n" : l);
    }
    d = diff_of("notes.txt", a, b);
    ck_assert_str_eq(str_at(d, "kind"), "text");
    ck_assert_str_eq(str_at(d, "status"), "modified");
    hunks = json_object_get(d, "hunks");
    ck_assert_uint_eq(json_array_size(hunks), 1);
    h = json_array_get(hunks, 0);
    lines = json_object_get(h, "lines");
    /* 3 context lines each side, one removed, one added: 8, not 100 */
    ck_assert_uint_eq(json_array_size(lines), 8);
    ck_assert_int_eq(json_integer_value(json_object_get(h, "old_start")), 47);
    ck_assert_str_eq(str_at(json_array_get(lines, 3), "op"), "-");
    ck_assert_str_eq(str_at(json_array_get(lines, 3), "text"), "line 50");
    ck_assert_str_eq(str_at(json_array_get(lines, 4), "op"), "+");
    ck_assert_str_eq(str_at(json_array_get(lines, 4), "text"), "line fifty");
    json_decref(d);

    d = diff_of("notes.txt", a, a);
    ck_assert_str_eq(str_at(d, "status"), "unchanged");
    ck_assert_uint_eq(json_array_size(json_object_get(d, "hunks")), 0);
    json_decref(d);
}
END_TEST

#define PNG_A "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
#define PNG_B "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="

static const char *NB_A =
    "{\"nbformat\":4,\"nbformat_minor\":5,\"metadata\":{\"kernelspec\":{\"name\":\"python3\"}},\"cells\":["
    "{\"id\":\"c1\",\"cell_type\":\"code\",\"metadata\":{},\"execution_count\":1,"
    "\"source\":[\"import numpy as np\\n\",\"x = 1\\n\",\"print(x)\"],"
    "\"outputs\":[{\"output_type\":\"stream\",\"name\":\"stdout\",\"text\":[\"1\\n\"]}]},"
    "{\"id\":\"c2\",\"cell_type\":\"code\",\"metadata\":{},\"execution_count\":2,\"source\":\"plot()\","
    "\"outputs\":[{\"output_type\":\"display_data\",\"metadata\":{},\"data\":{\"image/png\":\"" PNG_A
    "\",\"text/plain\":\"<Figure>\"}}]},"
    "{\"id\":\"c3\",\"cell_type\":\"markdown\",\"metadata\":{},\"source\":\"# Title\"},"
    "{\"id\":\"gone\",\"cell_type\":\"markdown\",\"metadata\":{},\"source\":\"bye\"}]}";

static const char *NB_B =
    "{\"nbformat\":4,\"nbformat_minor\":5,\"metadata\":{\"kernelspec\":{\"name\":\"python3\"},\"eddy\":{\"x\":1}},\"cells\":["
    "{\"id\":\"c1\",\"cell_type\":\"code\",\"metadata\":{\"collapsed\":true},\"execution_count\":1,"
    "\"source\":[\"import numpy as np\\n\",\"x = 2\\n\",\"print(x)\"],"
    "\"outputs\":[{\"output_type\":\"stream\",\"name\":\"stdout\",\"text\":[\"2\\n\"]}]},"
    "{\"id\":\"new\",\"cell_type\":\"code\",\"metadata\":{},\"execution_count\":null,\"source\":\"y = 3\",\"outputs\":[]},"
    "{\"id\":\"c2\",\"cell_type\":\"code\",\"metadata\":{},\"execution_count\":2,\"source\":\"plot()\","
    "\"outputs\":[{\"output_type\":\"display_data\",\"metadata\":{},\"data\":{\"image/png\":\"" PNG_B
    "\",\"text/plain\":\"<Figure>\"}}]},"
    "{\"id\":\"c3\",\"cell_type\":\"markdown\",\"metadata\":{},\"source\":\"# Title\"}]}";

START_TEST(notebook_cells_by_id_with_images_as_hashes)
{
    char *s = NULL;
    json_t *d, *cells, *c, *img;
    ck_assert_int_eq(proj_diff_buffers(&s, "nb.ipynb", NB_A, strlen(NB_A), NB_B, strlen(NB_B)), 0);
    /* never the base64 in the diff */
    ck_assert_ptr_null(strstr(s, "iVBORw0KGgo"));
    free(s);
    d = diff_of("nb.ipynb", NB_A, NB_B);
    ck_assert_str_eq(str_at(d, "kind"), "notebook");
    cells = json_object_get(d, "cells");
    ck_assert_uint_eq(json_array_size(cells), 5);
    c = json_array_get(cells, 0);
    ck_assert_str_eq(str_at(c, "id"), "c1");
    ck_assert_str_eq(str_at(c, "status"), "modified");
    ck_assert_uint_eq(json_array_size(json_object_get(c, "source")), 1);
    ck_assert_uint_eq(json_array_size(json_object_get(json_object_get(c, "outputs"), "text")), 1);
    ck_assert_uint_eq(json_array_size(json_object_get(c, "metadata")), 1);
    ck_assert_str_eq(str_at(json_array_get(json_object_get(c, "metadata"), 0), "key"), "collapsed");
    c = json_array_get(cells, 1);
    ck_assert_str_eq(str_at(c, "id"), "new");
    ck_assert_str_eq(str_at(c, "status"), "added");
    ck_assert_int_eq(json_integer_value(json_object_get(c, "to_index")), 1);
    ck_assert_ptr_null(json_object_get(c, "from_index"));
    c = json_array_get(cells, 2);
    ck_assert_str_eq(str_at(c, "id"), "c2");
    ck_assert_str_eq(str_at(c, "status"), "modified");
    ck_assert_uint_eq(json_array_size(json_object_get(c, "source")), 0);
    img = json_array_get(json_object_get(json_object_get(c, "outputs"), "images"), 0);
    ck_assert_str_eq(str_at(img, "mime"), "image/png");
    ck_assert_uint_eq(strlen(str_at(img, "from_sha256")), 64);
    ck_assert_str_ne(str_at(img, "from_sha256"), str_at(img, "to_sha256"));
    ck_assert(json_is_true(json_object_get(img, "changed")));
    ck_assert_int_eq(json_integer_value(json_object_get(img, "to_output")), 0);
    c = json_array_get(cells, 3);
    ck_assert_str_eq(str_at(c, "id"), "c3");
    ck_assert_str_eq(str_at(c, "status"), "unchanged");
    ck_assert_ptr_null(json_object_get(c, "execution_count"));   /* markdown: none either side */
    c = json_array_get(cells, 4);
    ck_assert_str_eq(str_at(c, "id"), "gone");
    ck_assert_str_eq(str_at(c, "status"), "removed");
    ck_assert_int_eq(json_integer_value(json_object_get(c, "from_index")), 3);
    /* notebook metadata: one key added */
    ck_assert_uint_eq(json_array_size(json_object_get(d, "metadata")), 1);
    ck_assert_str_eq(str_at(json_array_get(json_object_get(d, "metadata"), 0), "key"), "eddy");
    json_decref(d);
}
END_TEST

START_TEST(cells_without_ids_match_by_position)
{
    const char *a = "{\"nbformat\":4,\"nbformat_minor\":4,\"metadata\":{},\"cells\":["
                    "{\"cell_type\":\"markdown\",\"metadata\":{},\"source\":\"one\"},"
                    "{\"cell_type\":\"markdown\",\"metadata\":{},\"source\":\"two\"}]}";
    const char *b = "{\"nbformat\":4,\"nbformat_minor\":4,\"metadata\":{},\"cells\":["
                    "{\"cell_type\":\"markdown\",\"metadata\":{},\"source\":\"one\"},"
                    "{\"cell_type\":\"markdown\",\"metadata\":{},\"source\":\"TWO\"},"
                    "{\"cell_type\":\"markdown\",\"metadata\":{},\"source\":\"three\"}]}";
    json_t *d = diff_of("x.ipynb", a, b), *cells = json_object_get(d, "cells");
    ck_assert_uint_eq(json_array_size(cells), 3);
    ck_assert_str_eq(str_at(json_array_get(cells, 0), "status"), "unchanged");
    ck_assert_str_eq(str_at(json_array_get(cells, 1), "status"), "modified");
    ck_assert_str_eq(str_at(json_array_get(cells, 2), "status"), "added");
    json_decref(d);
}
END_TEST

START_TEST(binary_bad_notebooks_and_bounds)
{
    char *s = NULL, *big;
    json_t *d;
    const char bin_a[] = {'a', 0, 'b'}, bin_b[] = {'a', 0, 'c', 'd'};
    ck_assert_int_eq(proj_diff_buffers(&s, "w.bin", bin_a, sizeof bin_a, bin_b, sizeof bin_b), 0);
    d = json_loads(s, 0, NULL);
    free(s);
    ck_assert_str_eq(str_at(d, "kind"), "binary");
    ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(d, "to"), "size")), 4);
    ck_assert_uint_eq(strlen(str_at(json_object_get(d, "to"), "sha256")), 64);
    ck_assert_ptr_null(json_object_get(d, "hunks"));
    json_decref(d);

    /* invalid UTF-8 (an encoded surrogate) is binary too */
    d = diff_of("s.txt", "ok\n", "\xed\xa0\x80\n");
    ck_assert_str_eq(str_at(d, "kind"), "binary");
    json_decref(d);

    ck_assert_int_eq(proj_diff_buffers(&s, "x.ipynb", "{", 1, "{}", 2), ED_EUNPROC);
    ck_assert_ptr_null(s);
    ck_assert_int_eq(proj_diff_buffers(&s, "x.ipynb", "{}", 2, "{}", 2), ED_EUNPROC);
    ck_assert_int_eq(proj_diff_buffers(&s, "x.txt", NULL, 0, NULL, 0), ED_ENOTFOUND);

    /* too many lines: refused, not computed */
    big = malloc(2 * (PROJ_DIFF_MAX_LINES + 10) + 1);
    for (int i = 0; i < PROJ_DIFF_MAX_LINES + 10; i++)
        memcpy(big + 2 * i, "x\n", 2);
    big[2 * (PROJ_DIFF_MAX_LINES + 10)] = 0;
    ck_assert_int_eq(proj_diff_buffers(&s, "x.txt", "x\n", 2, big, strlen(big)), ED_ETOOBIG);
    ck_assert_ptr_nonnull(strstr(ed_error_last(), "lines"));
    free(big);
    /* a one-sided file: added */
    d = diff_of("x.txt", NULL, "hello\n");
    ck_assert_str_eq(str_at(d, "status"), "added");
    ck_assert_uint_eq(json_array_size(json_object_get(d, "hunks")), 1);
    json_decref(d);
}
END_TEST

START_TEST(versions_and_working_tree)
{
    proj *p = make(alice, "diffs", PROJ_PRIVATE);
    proj_version *v1 = NULL, *v2 = NULL;
    char *s = NULL;
    json_t *d;

    put(p->id, "nb.ipynb", NB_A);
    ck_assert_int_eq(proj_version_create(&v1, root, alice, p->id, "v1"), 0);
    put(p->id, "nb.ipynb", NB_B);
    put(p->id, "later.txt", "new\n");
    ck_assert_int_eq(proj_version_create(&v2, root, alice, p->id, "v2"), 0);
    put(p->id, "nb.ipynb", NB_A);

    ck_assert_msg(proj_diff(&s, root, alice, p->id, "nb.ipynb", v1->id, v2->id) == 0, "%s",
                  ed_error_last());
    d = json_loads(s, 0, NULL);
    free(s);
    ck_assert_uint_eq(json_array_size(json_object_get(d, "cells")), 5);
    json_decref(d);
    /* the working tree is back to v1's notebook */
    ck_assert_int_eq(proj_diff(&s, root, alice, p->id, "nb.ipynb", v1->id, "working"), 0);
    d = json_loads(s, 0, NULL);
    free(s);
    ck_assert_str_eq(str_at(d, "status"), "unchanged");
    json_decref(d);
    /* a file the older version lacks: added */
    ck_assert_int_eq(proj_diff(&s, root, alice, p->id, "later.txt", v1->id, NULL), 0);
    d = json_loads(s, 0, NULL);
    free(s);
    ck_assert_str_eq(str_at(d, "status"), "added");
    json_decref(d);
    ck_assert_int_eq(proj_diff(&s, root, alice, p->id, "nb.ipynb", "deadbeef", NULL), ED_ENOTFOUND);
    ck_assert_int_eq(proj_diff(&s, root, alice, p->id, "../x", v1->id, NULL), ED_EINVAL);
    /* bob cannot see alice's private project */
    ck_assert_int_eq(proj_diff(&s, root, bob, p->id, "nb.ipynb", v1->id, v2->id), ED_ENOTFOUND);
    proj_version_free(v1);
    proj_version_free(v2);
    proj_free(p);
}
END_TEST

int main(void)
{
    const TTest *tests[] = {text_hunks_fold_unchanged_lines, notebook_cells_by_id_with_images_as_hashes,
                            cells_without_ids_match_by_position, binary_bad_notebooks_and_bounds,
                            versions_and_working_tree, NULL};

    return unit_tests_run("projects_diff", 120, proj_fixture_setup, proj_fixture_close, tests);
}
