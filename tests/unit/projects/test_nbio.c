/*
 * test_nbio.c - notebook import and export without a store: the messages
 * proj_nb_validate gives for what users upload (they name the cell as the
 * page counts it, its id and the JSON path; malformed JSON names the line
 * and column; nbformat 3 says how to convert), the notebooks Jupyter, Colab
 * and Kaggle write (nbformat 4.0-4.5, ids optional before 4.5), and
 * proj_nb_export_py's percent-format script.
 */
#include "proj.h"

#include "ed_error.h"

#include "../support/unit_util.h"

#include <check.h>
#include <string.h>

/* JSON with ' for " so the cases stay readable. */
static char *q(const char *s)
{
    char *d = strdup(s);
    for (char *p = d; *p; p++)
        if (*p == '\'')
            *p = '"';
    return d;
}

static void refused_with(const char *nb_sq, const char *msg)
{
    char *nb = q(nb_sq);
    ck_assert_msg(proj_nb_validate(nb, strlen(nb)) == ED_EUNPROC, "accepted: %s", nb);
    ck_assert_msg(strstr(ed_error_last(), msg) != NULL, "'%s' lacks '%s'", ed_error_last(), msg);
    free(nb);
}

static void accepted(const char *nb_sq)
{
    char *nb = q(nb_sq);
    ck_assert_msg(proj_nb_validate(nb, strlen(nb)) == 0, "%s: %s", ed_error_last(), nb);
    free(nb);
}

#define NB(minor, cells) "{'nbformat':4,'nbformat_minor':" #minor ",'metadata':{},'cells':[" cells "]}"
#define MD(id) "{'cell_type':'markdown','id':'" id "','metadata':{},'source':'# t'}"
#define CODE(id, outputs)                                                                  \
    "{'cell_type':'code','id':'" id "','metadata':{},'source':'x','execution_count':1,"   \
    "'outputs':[" outputs "]}"

START_TEST(message_names_cell_number_id_and_path)
{
    refused_with(NB(5, MD("a") "," MD("b") "," CODE("abc", "{'output_type':'pdf'}")),
                 "cell 3 (id abc) at cells[2].outputs[0]: output_type must be one of stream, "
                 "display_data, execute_result, error (got 'pdf')");
    refused_with(NB(5, CODE("c1", "{'output_type':'stream','name':'stdout','text':'ok'},"
                                  "{'output_type':'stream','name':'stdout'}")),
                 "cell 1 (id c1) at cells[0].outputs[1]: stream output needs 'text'");
    refused_with(NB(5, MD("a") "," "{'cell_type':'python','id':'zz','metadata':{},'source':''}"),
                 "cell 2 (id zz) at cells[1]: cell_type must be code, markdown or raw (got 'python')");
    /* a bad id is not repeated back as if it were one */
    refused_with(NB(5, "{'cell_type':'markdown','id':'a b','metadata':{},'source':''}"),
                 "cell 1 at cells[0]: cell needs 'id'");
}
END_TEST

START_TEST(malformed_json_names_line_and_column)
{
    refused_with("{\n 'nbformat': 4,\n 'cells': [\n  {'a': 1}\n  {'b': 2}\n ]\n}",
                 "malformed JSON at line 5 column");
    refused_with("{'nbformat': 4,", "malformed JSON at line 1");
    refused_with("", "the file is empty");
    refused_with("\xEF\xBB\xBF{}", "byte order mark");
}
END_TEST

START_TEST(old_and_new_major_versions_say_what_to_do)
{
    refused_with("{'nbformat':3,'nbformat_minor':0,'metadata':{},'worksheets':[]}",
                 "this is an nbformat 3 notebook, which is not supported; convert it with "
                 "`jupyter nbconvert --to notebook --nbformat 4");
    refused_with("{'nbformat':5,'nbformat_minor':0,'metadata':{},'cells':[]}",
                 "nbformat 5 is newer than this server reads");
    refused_with("{'metadata':{},'cells':[]}", "not a Jupyter notebook: no 'nbformat' field");
    refused_with("{'nbformat':'4','nbformat_minor':0,'metadata':{},'cells':[]}", "'nbformat' must be 4");
}
END_TEST

START_TEST(every_v4_minor_jupyter_colab_kaggle_write_is_accepted)
{
    /* 4.0-4.4: cells without ids, taken as they are */
    accepted("{'nbformat':4,'nbformat_minor':0,'metadata':{'colab':{'name':'x.ipynb'}},'cells':["
             "{'cell_type':'markdown','metadata':{'id':'Xy_1'},'source':['# Title\\n','text']},"
             "{'cell_type':'code','metadata':{},'source':[],'execution_count':null,'outputs':[]}]}");
    accepted("{'nbformat':4,'nbformat_minor':2,'metadata':{},'cells':["
             "{'cell_type':'raw','metadata':{},'source':''},"
             "{'cell_type':'code','metadata':{'trusted':true},'source':'1+1','execution_count':3,"
             "'outputs':[{'output_type':'execute_result','execution_count':3,'data':{'text/plain':['2']},"
             "'metadata':{}},{'output_type':'display_data','data':{'image/png':'iVBO'},'metadata':"
             "{'needs_background':'light'}},{'output_type':'error','ename':'E','evalue':'v',"
             "'traceback':['a','b']}]}]}");
    accepted("{'nbformat':4,'nbformat_minor':4,'metadata':{'kernelspec':{'name':'python3','language':"
             "'python','display_name':'Python 3'}},'cells':[{'cell_type':'markdown','metadata':{},"
             "'source':'x','attachments':{'a.png':{'image/png':'iVBO'}}}]}");
    /* 4.5 with ids, and an unknown future minor as Jupyter reads it */
    accepted(NB(5, MD("a") "," CODE("b-_9", "{'output_type':'stream','name':'stderr','text':['x\\n']}")));
    accepted(NB(6, MD("a")));
    accepted(NB(5, ""));
    /* 4.5 needs ids: the message says what an older file may do */
    refused_with(NB(5, "{'cell_type':'markdown','metadata':{},'source':''}"),
                 "cell 1 at cells[0]: cell needs 'id' (1-64 characters of letters, digits, - and _) "
                 "from nbformat 4.5 on");
}
END_TEST

static char *export(const char *nb_sq)
{
    char *nb = q(nb_sq), *out = NULL;
    size_t n = 0;
    ck_assert_msg(proj_nb_export_py(&out, &n, nb, strlen(nb)) == 0, "%s", ed_error_last());
    ck_assert_uint_eq(n, strlen(out));
    free(nb);
    return out;
}

START_TEST(export_py_is_percent_format_with_comments_and_magics)
{
    char *py = export(
        "{'nbformat':4,'nbformat_minor':5,'metadata':{},'cells':["
        "{'cell_type':'markdown','id':'m','metadata':{},'source':['# Training\\n','\\n','Data from x.']},"
        "{'cell_type':'code','id':'c','metadata':{},'execution_count':1,'source':["
        "'%matplotlib inline\\n','import os\\n','  !ls -l\\n','print(100 % 7)'],"
        "'outputs':[{'output_type':'stream','name':'stdout','text':'SECRET-OUTPUT'}]},"
        "{'cell_type':'code','id':'d','metadata':{},'execution_count':null,'source':'%%bash\\necho hi\\n',"
        "'outputs':[]},"
        "{'cell_type':'raw','id':'r','metadata':{},'source':'raw text'}]}");
    ck_assert_str_eq(py, "# %% [markdown]\n"
                         "# # Training\n"
                         "#\n"
                         "# Data from x.\n"
                         "\n"
                         "# %%\n"
                         "# %matplotlib inline\n"
                         "import os\n"
                         "#   !ls -l\n"
                         "print(100 % 7)\n"
                         "\n"
                         "# %%\n"
                         "# %%bash\n"
                         "# echo hi\n"
                         "\n"
                         "# %% [raw]\n"
                         "# raw text\n");
    ck_assert(strstr(py, "SECRET-OUTPUT") == NULL);
    free(py);
}
END_TEST

START_TEST(export_py_edge_cases)
{
    char *py = export(NB(5, ""));
    ck_assert_str_eq(py, "");
    free(py);
    /* an empty code cell still marks a cell; a source already ending in a
     * newline gets no second one */
    py = export("{'nbformat':4,'nbformat_minor':4,'metadata':{},'cells':["
                "{'cell_type':'code','metadata':{},'source':'','execution_count':null,'outputs':[]},"
                "{'cell_type':'code','metadata':{},'source':'a = 1\\n','execution_count':null,'outputs':[]}]}");
    ck_assert_str_eq(py, "# %%\n\n# %%\na = 1\n");
    free(py);
    /* not a notebook: refused with the validator's message */
    {
        char *out = (char *)1;
        ck_assert_int_eq(proj_nb_export_py(&out, NULL, "{}", 2), ED_EUNPROC);
        ck_assert_ptr_null(out);
        ck_assert(strstr(ed_error_last(), "nbformat") != NULL);
    }
}
END_TEST

int main(void)
{
    const TTest *tests[] = {message_names_cell_number_id_and_path, malformed_json_names_line_and_column,
                            old_and_new_major_versions_say_what_to_do,
                            every_v4_minor_jupyter_colab_kaggle_write_is_accepted,
                            export_py_is_percent_format_with_comments_and_magics, export_py_edge_cases,
                            NULL};

    return unit_tests_run("projects_nbio", 60, NULL, NULL, tests);
}
