/* Notebook export: a notebook as a script in the "percent" format that
 * `jupyter nbconvert --to script` users and Jupytext/VS Code/Spyder/PyCharm
 * read back as cells:
 *
 *     # %% [markdown]
 *     # # Training
 *     # The data comes from ...
 *
 *     # %%
 *     # !pip install rich
 *     import paddle
 *
 * Markdown and raw cells become comments; IPython syntax that is not Python
 * (line magics `%time`, shell escapes `!ls`, whole cells under a cell magic
 * such as `%%bash`) is commented out, as Jupytext does, so the file runs
 * with plain `python`. Outputs are left out. */
#include "proj.h"

#include "ed_buf.h"
#include "ed_error.h"
#include "ed_json.h"

#include <stdlib.h>
#include <string.h>

/* The cell's source as one string (nbformat: a string or a list of strings). */
static int source_of(ed_buf *out, const json_t *src)
{
    size_t i;
    json_t *s;

    ed_buf_reset(out);
    if (json_is_string(src))
        return ed_buf_append(out, json_string_value(src), json_string_length(src));
    json_array_foreach(src, i, s) {
        int err = ed_buf_append(out, json_string_value(s), json_string_length(s));
        if (err < 0)
            return err;
    }
    return 0;
}

/* IPython-only syntax on a line: a line magic or a shell escape. */
static bool is_magic(const char *line, size_t n)
{
    size_t i = 0;

    while (i < n && (line[i] == ' ' || line[i] == '\t'))
        i++;
    return i < n && (line[i] == '%' || line[i] == '!');
}

/* Append `text` line by line: every line commented ("# " + line, "#" for an
 * empty one) when `all`, else only the magic lines. A final newline is
 * added when the text lacks one. */
static int put_lines(ed_buf *b, const char *text, size_t len, bool all)
{
    size_t pos = 0;
    int err = 0;

    while (pos < len && err == 0) {
        const char *nl = memchr(text + pos, '\n', len - pos);
        size_t n = nl ? (size_t)(nl - (text + pos)) : len - pos;
        const char *line = text + pos;
        bool blank = n == 0 || (n == 1 && line[0] == '\r');

        if (all)
            err = ed_buf_puts(b, blank ? "#" : "# ");
        else if (is_magic(line, n))
            err = ed_buf_puts(b, "# ");
        if (err == 0)
            err = ed_buf_append(b, line, n);
        if (err == 0)
            err = ed_buf_puts(b, "\n");
        pos += n + 1;
    }
    return err;
}

int proj_nb_export_py(char **out_buf, size_t *out_len, const char *buf, size_t len)
{
    json_t *nb = NULL, *cell;
    ed_buf b = {0}, src = {0};
    size_t i, ncells = 0;
    int err;

    *out_buf = NULL;
    if (out_len)
        *out_len = 0;
    if ((err = proj_nb_validate(buf, len)) < 0)
        return err;           /* ED_EUNPROC naming the bad place */
    if ((err = ed_json_parse(&nb, buf, len, 128)) < 0)
        return ed_error_set(ED_EUNPROC, "invalid notebook: %s", ed_error_last());
    json_array_foreach(json_object_get(nb, "cells"), i, cell) {
        const char *type = json_string_value(json_object_get(cell, "cell_type"));
        bool code = strcmp(type, "code") == 0;

        if ((err = source_of(&src, json_object_get(cell, "source"))) < 0)
            goto done;
        if (ncells++ > 0 && (err = ed_buf_puts(&b, "\n")) < 0)
            goto done;
        if ((err = ed_buf_puts(&b, code ? "# %%\n" : strcmp(type, "markdown") == 0
                                                         ? "# %% [markdown]\n"
                                                         : "# %% [raw]\n")) < 0)
            goto done;
        /* A cell magic (%%bash, %%time, ...) makes the whole cell IPython's. */
        if ((err = put_lines(&b, src.data ? src.data : "", src.len,
                             !code || (src.len >= 2 && memcmp(src.data, "%%", 2) == 0))) < 0)
            goto done;
    }
    if (out_len)
        *out_len = b.len;
    if ((*out_buf = ed_buf_steal(&b)) == NULL)
        err = ed_error_set(ED_ENOMEM, "exporting the notebook");
done:
    json_decref(nb);
    ed_buf_free(&b);
    ed_buf_free(&src);
    return err;
}
