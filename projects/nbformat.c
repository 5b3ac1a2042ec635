/* nbformat v4 validation: the structure Jupyter's schema requires, checked
 * field by field so the message names the first bad cell or field. */
#include "proj.h"

#include "ed_error.h"
#include "ed_json.h"

#include <stdio.h>
#include <string.h>

/* Notebooks carry arbitrary JSON in outputs (application/json data), so they
 * may nest deeper than request bodies. */
#define NB_MAX_DEPTH 128

static int bad(const char *where, const char *what)
{
    return ed_error_set(ED_EUNPROC, "invalid notebook: %s%s%s", where, where[0] ? ": " : "",
                        what);
}

/* nbformat "multiline_string": a string or an array of strings. */
static bool multiline(const json_t *v)
{
    size_t i;
    json_t *s;

    if (json_is_string(v))
        return true;
    if (!json_is_array(v))
        return false;
    json_array_foreach(v, i, s)
        if (!json_is_string(s))
            return false;
    return true;
}

static bool count_or_null(const json_t *v)
{
    return json_is_null(v) || (json_is_integer(v) && json_integer_value(v) >= 0);
}

static int need_object(const char *where, const json_t *o, const char *key, const char *kind)
{
    char msg[128];

    if (!json_is_object(json_object_get(o, key))) {
        snprintf(msg, sizeof(msg), "%s needs '%s' (an object)", kind, key);
        return bad(where, msg);
    }
    return 0;
}

static int check_output(const char *where, const json_t *o)
{
    const char *type;

    if (!json_is_object(o))
        return bad(where, "output must be an object");
    type = json_string_value(json_object_get(o, "output_type"));
    if (type == NULL)
        return bad(where, "output needs 'output_type' (a string)");
    if (strcmp(type, "stream") == 0) {
        if (!json_is_string(json_object_get(o, "name")))
            return bad(where, "stream output needs 'name' (a string)");
        if (!multiline(json_object_get(o, "text")))
            return bad(where, "stream output needs 'text' (a string or array of strings)");
        return 0;
    }
    if (strcmp(type, "display_data") == 0 || strcmp(type, "execute_result") == 0) {
        int err;
        if ((err = need_object(where, o, "data", type)) < 0 ||
            (err = need_object(where, o, "metadata", type)) < 0)
            return err;
        if (strcmp(type, "execute_result") == 0) {
            json_t *n = json_object_get(o, "execution_count");
            if (n == NULL || !count_or_null(n))
                return bad(where, "execute_result output needs 'execution_count' "
                                  "(an integer or null)");
        }
        return 0;
    }
    if (strcmp(type, "error") == 0) {
        json_t *tb = json_object_get(o, "traceback");
        size_t i;
        json_t *line;
        if (!json_is_string(json_object_get(o, "ename")))
            return bad(where, "error output needs 'ename' (a string)");
        if (!json_is_string(json_object_get(o, "evalue")))
            return bad(where, "error output needs 'evalue' (a string)");
        if (!json_is_array(tb))
            return bad(where, "error output needs 'traceback' (an array of strings)");
        json_array_foreach(tb, i, line)
            if (!json_is_string(line))
                return bad(where, "error output needs 'traceback' (an array of strings)");
        return 0;
    }
    return bad(where, "output_type must be stream, display_data, execute_result or error");
}

/* nbformat 4.5 cell ids: 1-64 characters of [a-zA-Z0-9-_]. */
static bool cell_id_ok(const json_t *v)
{
    const char *s = json_string_value(v);
    size_t n = s ? strlen(s) : 0;

    if (n < 1 || n > 64)
        return false;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
              *s == '-' || *s == '_'))
            return false;
    return true;
}

static int check_cell(size_t idx, const json_t *cell, int64_t minor)
{
    char where[64], owhere[96];
    const char *type;
    json_t *id, *outputs, *o, *n;
    size_t j;
    int err;

    snprintf(where, sizeof(where), "cells[%zu]", idx);
    if (!json_is_object(cell))
        return bad(where, "cell must be an object");
    type = json_string_value(json_object_get(cell, "cell_type"));
    if (type == NULL)
        return bad(where, "cell needs 'cell_type' (a string)");
    if (strcmp(type, "code") != 0 && strcmp(type, "markdown") != 0 && strcmp(type, "raw") != 0)
        return bad(where, "cell_type must be code, markdown or raw");
    id = json_object_get(cell, "id");
    if (id ? !cell_id_ok(id) : minor >= 5)
        return bad(where, "cell needs 'id' (1-64 characters of letters, digits, - and _) "
                          "from nbformat 4.5 on");
    if (!multiline(json_object_get(cell, "source")))
        return bad(where, "cell needs 'source' (a string or array of strings)");
    if ((err = need_object(where, cell, "metadata", "cell")) < 0)
        return err;
    if (strcmp(type, "code") != 0)
        return 0;
    n = json_object_get(cell, "execution_count");
    if (n == NULL || !count_or_null(n))
        return bad(where, "code cell needs 'execution_count' (an integer or null)");
    outputs = json_object_get(cell, "outputs");
    if (!json_is_array(outputs))
        return bad(where, "code cell needs 'outputs' (an array)");
    json_array_foreach(outputs, j, o) {
        snprintf(owhere, sizeof(owhere), "%s.outputs[%zu]", where, j);
        if ((err = check_output(owhere, o)) < 0)
            return err;
    }
    return 0;
}

int proj_nb_validate(const char *buf, size_t len)
{
    json_t *nb = NULL, *v, *cells, *cell;
    int64_t minor;
    size_t i;
    int err = 0;

    if (ed_json_parse(&nb, buf, len, NB_MAX_DEPTH) < 0) {
        char why[256];
        snprintf(why, sizeof(why), "%s", ed_error_last()); /* not the buffer being set */
        return ed_error_set(ED_EUNPROC, "invalid notebook: %s", why);
    }
    if (!json_is_object(nb)) {
        err = bad("", "a notebook is a JSON object");
        goto done;
    }
    v = json_object_get(nb, "nbformat");
    if (!json_is_integer(v) || json_integer_value(v) != 4) {
        err = bad("", "'nbformat' must be 4");
        goto done;
    }
    v = json_object_get(nb, "nbformat_minor");
    if (!json_is_integer(v) || json_integer_value(v) < 0) {
        err = bad("", "'nbformat_minor' must be a non-negative integer");
        goto done;
    }
    minor = json_integer_value(v);
    if ((err = need_object("", nb, "metadata", "notebook")) < 0)
        goto done;
    cells = json_object_get(nb, "cells");
    if (!json_is_array(cells)) {
        err = bad("", "notebook needs 'cells' (an array)");
        goto done;
    }
    json_array_foreach(cells, i, cell)
        if ((err = check_cell(i, cell, minor)) < 0)
            goto done;
done:
    json_decref(nb);
    return err;
}
