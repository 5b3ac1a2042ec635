/* eddy-kernel run NB.ipynb --out OUT.ipynb: code cells run in order in one
 * namespace, their outputs recorded as nbclient records them, the result a
 * valid nbformat v4 notebook written atomically. The real binary. */
#include "kt_util.h"

#include "kr.h"
#ifdef HAVE_PROJ_NB_VALIDATE
#include "ed_error.h"
#include "proj.h"
#endif

#include <check.h>
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static char *dir;

static void setup(void) { dir = kt_tmpdir(); }
static void teardown(void) { kt_rmrf(dir); free(dir); }

/* Write `cells` as in.ipynb, run it with `extra` flags; returns out.ipynb
 * parsed (NULL when absent). */
static json_t *run_nb(kt_proc *p, const char *const *cells, const char *const *extra)
{
    char *nb = kt_notebook(cells);
    const char *argv[16] = {KERNEL_BIN, "run", "in.ipynb", "--out", "out.ipynb"};
    int n = 5;

    kt_write(dir, "in.ipynb", nb);
    free(nb);
    for (; extra && *extra; extra++)
        argv[n++] = *extra;
    kt_run(p, argv, dir, NULL, 120);
    char *out = kt_read(dir, "out.ipynb");
    if (out == NULL)
        return NULL;
#ifdef HAVE_PROJ_NB_VALIDATE
    ck_assert_msg(proj_nb_validate(out, strlen(out)) == 0, "invalid notebook: %s", ed_error_last());
#endif
    json_t *j = json_loads(out, 0, NULL);
    ck_assert_ptr_nonnull(j);
    free(out);
    return j;
}

static json_t *cell(json_t *nb, size_t i) { return json_array_get(json_object_get(nb, "cells"), i); }
static json_t *outs(json_t *nb, size_t i) { return json_object_get(cell(nb, i), "outputs"); }
static json_t *out(json_t *nb, size_t i, size_t j) { return json_array_get(outs(nb, i), j); }
static const char *str(json_t *o, const char *k) { return json_string_value(json_object_get(o, k)); }
static json_int_t count(json_t *nb, size_t i)
{
    json_t *c = json_object_get(cell(nb, i), "execution_count");
    return json_is_null(c) ? -1 : json_integer_value(c);
}

START_TEST(notebook_outputs_are_recorded_like_nbclient)
{
    kt_proc p;
    json_t *nb = run_nb(&p, (const char *const[]){
        "import sys\nprint('a')\nprint('b')\nprint('warn', file=sys.stderr)\nx = 20\nx + 1",
        "#md Some *markdown*",
        "class Rich:\n    def _repr_html_(self): return '<b>rich</b>'\n"
        "    def _repr_markdown_(self): return '**rich**'\n"
        "display(Rich())\nRich()",
        "import matplotlib.pyplot as plt\nplt.plot([1, 2, 3])\nplt.title('t');",
        "y = x * 2\ny;",
        "y",
        NULL}, NULL);
    ck_assert_msg(p.status == 0, "exit %d: %s", p.status, p.err);
    ck_assert_ptr_nonnull(nb);

    /* Cell 0: consecutive prints coalesce into one stream; stderr apart. */
    ck_assert_int_eq(count(nb, 0), 1);
    ck_assert_uint_eq(json_array_size(outs(nb, 0)), 3);
    ck_assert_str_eq(str(out(nb, 0, 0), "output_type"), "stream");
    ck_assert_str_eq(str(out(nb, 0, 0), "name"), "stdout");
    ck_assert_str_eq(str(out(nb, 0, 0), "text"), "a\nb\n");
    ck_assert_str_eq(str(out(nb, 0, 1), "name"), "stderr");
    ck_assert_str_eq(str(out(nb, 0, 1), "text"), "warn\n");
    ck_assert_str_eq(str(out(nb, 0, 2), "output_type"), "execute_result");
    ck_assert_str_eq(str(json_object_get(out(nb, 0, 2), "data"), "text/plain"), "21");
    ck_assert_int_eq(json_integer_value(json_object_get(out(nb, 0, 2), "execution_count")), 1);

    /* Markdown untouched. */
    ck_assert_str_eq(str(cell(nb, 1), "cell_type"), "markdown");
    ck_assert_str_eq(str(cell(nb, 1), "source"), "Some *markdown*");

    /* Cell 2: display() and the last value, with their rich reprs. */
    ck_assert_int_eq(count(nb, 2), 2);
    ck_assert_str_eq(str(out(nb, 2, 0), "output_type"), "display_data");
    ck_assert_str_eq(str(json_object_get(out(nb, 2, 0), "data"), "text/html"), "<b>rich</b>");
    ck_assert_str_eq(str(json_object_get(out(nb, 2, 0), "data"), "text/markdown"), "**rich**");
    ck_assert_str_eq(str(out(nb, 2, 1), "output_type"), "execute_result");
    ck_assert_str_eq(str(json_object_get(out(nb, 2, 1), "data"), "text/html"), "<b>rich</b>");

    /* Cell 3: the open figure as a PNG when the cell ends; ';' hides the value. */
    ck_assert_uint_eq(json_array_size(outs(nb, 3)), 1);
    ck_assert_str_eq(str(out(nb, 3, 0), "output_type"), "display_data");
    const char *png = str(json_object_get(out(nb, 3, 0), "data"), "image/png");
    ck_assert_ptr_nonnull(png);
    ck_assert_int_eq(strncmp(png, "iVBORw0KGgo", 11), 0);   /* base64 of the PNG magic */

    /* One namespace across cells; ';' suppresses, a bare name displays. */
    ck_assert_uint_eq(json_array_size(outs(nb, 4)), 0);
    ck_assert_str_eq(str(json_object_get(out(nb, 5, 0), "data"), "text/plain"), "40");
    ck_assert_int_eq(count(nb, 5), 5);

    ck_assert_str_eq(str(json_object_get(json_object_get(nb, "metadata"), "language_info"),
                         "name"), "python");
    ck_assert_str_eq(str(json_object_get(json_object_get(nb, "metadata"), "kernelspec"),
                         "name"), "python3");
    json_decref(nb);
    kt_proc_free(&p);
}
END_TEST

START_TEST(notebook_stops_at_first_error_and_still_writes)
{
    kt_proc p;
    json_t *nb = run_nb(&p, (const char *const[]){"print('one')", "def f():\n    return 1/0\nf()",
                                                 "print('never')", NULL}, NULL);
    ck_assert_int_eq(p.status, 1);
    ck_assert_ptr_nonnull(strstr(p.err, "ZeroDivisionError"));
    ck_assert_ptr_nonnull(nb);
    ck_assert_int_eq(count(nb, 1), 2);
    json_t *e = out(nb, 1, 0);
    ck_assert_str_eq(str(e, "output_type"), "error");
    ck_assert_str_eq(str(e, "ename"), "ZeroDivisionError");
    ck_assert_str_eq(str(e, "evalue"), "division by zero");
    /* The traceback names the cell's lines, not eddy-kernel's own code. */
    char *tb = json_dumps(json_object_get(e, "traceback"), 0);
    ck_assert_ptr_nonnull(strstr(tb, "Cell In[2]"));
    ck_assert_ptr_nonnull(strstr(tb, "return 1/0"));
    ck_assert_ptr_null(strstr(tb, "eddy_kernel_support"));
    free(tb);
    ck_assert_int_eq(count(nb, 2), -1);
    ck_assert_uint_eq(json_array_size(outs(nb, 2)), 0);
    json_decref(nb);
    kt_proc_free(&p);
}
END_TEST

START_TEST(notebook_allow_errors_runs_every_cell)
{
    kt_proc p;
    json_t *nb = run_nb(&p, (const char *const[]){"raise KeyError('k')", "print('still')", NULL},
                        (const char *const[]){"--allow-errors", NULL});
    ck_assert_int_eq(p.status, 0);
    ck_assert_str_eq(str(out(nb, 0, 0), "ename"), "KeyError");
    ck_assert_str_eq(str(out(nb, 1, 0), "text"), "still\n");
    ck_assert_int_eq(count(nb, 1), 2);
    json_decref(nb);
    kt_proc_free(&p);
}
END_TEST

START_TEST(notebook_raises_exception_tag_allows_that_cell)
{
    kt_proc p;
    char *nbs = kt_notebook((const char *const[]){"1/0", "print('next')", NULL});
    json_t *nb = json_loads(nbs, 0, NULL);
    free(nbs);
    json_object_set_new(json_object_get(cell(nb, 0), "metadata"), "tags",
                        json_pack("[s]", "raises-exception"));
    char *s = json_dumps(nb, 0);
    kt_write(dir, "in.ipynb", s);
    free(s);
    json_decref(nb);
    kt_run(&p, (const char *[]){KERNEL_BIN, "run", "in.ipynb", "--out", "out.ipynb", NULL}, dir,
           NULL, 60);
    ck_assert_int_eq(p.status, 0);
    char *o = kt_read(dir, "out.ipynb");
    ck_assert_ptr_nonnull(strstr(o, "next\\n"));
    free(o);
    kt_proc_free(&p);
}
END_TEST

START_TEST(notebook_cell_timeout_is_an_error_output)
{
    kt_proc p;
    json_t *nb = run_nb(&p, (const char *const[]){"import time\ntime.sleep(60)", "print('x')", NULL},
                        (const char *const[]){"--timeout", "1", NULL});
    ck_assert_int_eq(p.status, 1);
    ck_assert_ptr_nonnull(nb);
    ck_assert_str_eq(str(out(nb, 0, 0), "ename"), "CellTimeoutError");
    ck_assert_ptr_nonnull(strstr(str(out(nb, 0, 0), "evalue"), "timed out"));
    ck_assert_int_eq(count(nb, 1), -1);
    json_decref(nb);
    kt_proc_free(&p);
}
END_TEST

START_TEST(notebook_magics_supported_and_refused)
{
    kt_proc p;
    json_t *nb = run_nb(&p, (const char *const[]){
        "%matplotlib inline\nv = 3", "!echo from the shell", "%time w = v + 1\nw",
        "%nosuchmagic 1", "r = (10\n     % 3)\nr", NULL},
        (const char *const[]){"--allow-errors", NULL});
    ck_assert_int_eq(p.status, 0);
    ck_assert_uint_eq(json_array_size(outs(nb, 0)), 0);
    ck_assert_str_eq(str(out(nb, 1, 0), "text"), "from the shell\n");
    ck_assert_ptr_nonnull(strstr(str(out(nb, 2, 0), "text"), "Wall time"));
    ck_assert_str_eq(str(json_object_get(out(nb, 2, 1), "data"), "text/plain"), "4");
    ck_assert_str_eq(str(out(nb, 3, 0), "ename"), "UsageError");
    ck_assert_ptr_nonnull(strstr(str(out(nb, 3, 0), "evalue"), "%nosuchmagic"));
    /* '%' continuing an expression inside brackets is Python, not a magic. */
    ck_assert_str_eq(str(json_object_get(out(nb, 4, 0), "data"), "text/plain"), "1");
    json_decref(nb);
    kt_proc_free(&p);
}
END_TEST

START_TEST(notebook_input_is_refused_clearly)
{
    kt_proc p;
    json_t *nb = run_nb(&p, (const char *const[]){"input('name? ')", NULL},
                        (const char *const[]){"--allow-errors", NULL});
    ck_assert_int_eq(p.status, 0);
    ck_assert_str_eq(str(out(nb, 0, 0), "ename"), "StdinNotImplementedError");
    json_decref(nb);
    kt_proc_free(&p);
}
END_TEST

START_TEST(notebook_runs_in_its_own_folder)
{
    kt_proc p;
    char sub[1100];
    snprintf(sub, sizeof(sub), "%s/sub", dir);
    ck_assert_int_eq(mkdir(sub, 0700), 0);
    kt_write(dir, "sub/data.txt", "payload");
    char *nbs = kt_notebook((const char *const[]){"open('data.txt').read()", NULL});
    kt_write(dir, "sub/nb.ipynb", nbs);
    free(nbs);
    kt_run(&p, (const char *[]){KERNEL_BIN, "run", "sub/nb.ipynb", "--out", "res.ipynb", NULL}, dir,
           NULL, 60);
    ck_assert_msg(p.status == 0, "%s", p.err);
    char *o = kt_read(dir, "res.ipynb");   /* --out is relative to where we ran it */
    ck_assert_ptr_nonnull(o);
    ck_assert_ptr_nonnull(strstr(o, "'payload'"));
    free(o);
    kt_proc_free(&p);
}
END_TEST

static int dir_entries(void)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    int n = 0;
    while ((e = readdir(d)) != NULL)
        if (e->d_name[0] != '.')
            n++;
    closedir(d);
    return n;
}

START_TEST(bad_notebooks_exit_2_and_leave_nothing)
{
    const char *bad[] = {"not json at all", "[1, 2]", "{\"nbformat\": 3, \"cells\": []}",
                         "{\"nbformat\": 4, \"cells\": [{\"source\": \"x\"}]}"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        kt_proc p;
        kt_write(dir, "in.ipynb", bad[i]);
        kt_run(&p, (const char *[]){KERNEL_BIN, "run", "in.ipynb", "--out", "out.ipynb", NULL},
               dir, NULL, 60);
        ck_assert_msg(p.status == 2, "case %zu exited %d", i, p.status);
        ck_assert_ptr_nonnull(strstr(p.err, "in.ipynb"));
        ck_assert_int_eq(dir_entries(), 1);   /* only in.ipynb: no output, no temp file */
        kt_proc_free(&p);
    }
}
END_TEST

START_TEST(notebook_run_needs_out_and_valid_flags)
{
    kt_proc p;
    char *nbs = kt_notebook((const char *const[]){"1", NULL});
    kt_write(dir, "in.ipynb", nbs);
    free(nbs);
    kt_run(&p, (const char *[]){KERNEL_BIN, "run", "in.ipynb", NULL}, dir, NULL, 30);
    ck_assert_int_eq(p.status, 2);
    ck_assert_ptr_nonnull(strstr(p.err, "--out"));
    kt_proc_free(&p);
    kt_run(&p, (const char *[]){KERNEL_BIN, "run", "in.ipynb", "--out", "o.ipynb", "--timeout",
                                "-3", NULL}, dir, NULL, 30);
    ck_assert_int_eq(p.status, 2);
    kt_proc_free(&p);
    kt_run(&p, (const char *[]){KERNEL_BIN, "run", "missing.ipynb", "--out", "o.ipynb", NULL}, dir,
           NULL, 30);
    ck_assert_int_eq(p.status, 2);
    ck_assert_ptr_nonnull(strstr(p.err, "missing.ipynb"));
    kt_proc_free(&p);
    ck_assert_int_eq(dir_entries(), 1);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("kernel_notebook");
    TCase *t = tcase_create("notebook");
    tcase_add_checked_fixture(t, setup, teardown);
    tcase_set_timeout(t, 120);
    tcase_add_test(t, notebook_outputs_are_recorded_like_nbclient);
    tcase_add_test(t, notebook_stops_at_first_error_and_still_writes);
    tcase_add_test(t, notebook_allow_errors_runs_every_cell);
    tcase_add_test(t, notebook_raises_exception_tag_allows_that_cell);
    tcase_add_test(t, notebook_cell_timeout_is_an_error_output);
    tcase_add_test(t, notebook_magics_supported_and_refused);
    tcase_add_test(t, notebook_input_is_refused_clearly);
    tcase_add_test(t, notebook_runs_in_its_own_folder);
    tcase_add_test(t, bad_notebooks_exit_2_and_leave_nothing);
    tcase_add_test(t, notebook_run_needs_out_and_valid_flags);
    suite_add_tcase(s, t);
    SRunner *r = srunner_create(s);
    srunner_run_all(r, CK_NORMAL);
    int failed = srunner_ntests_failed(r);
    srunner_free(r);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
