/* nbformat v4 validation: the structure Jupyter's schema requires, checked
 * field by field so the message names the first bad place the way a user
 * finds it: "cell 3 (id abc) at cells[2].outputs[0]: output_type must be one
 * of ...", "malformed JSON at line 12 column 5: ...", "this is an nbformat 3
 * notebook: convert it with ...".
 *
 * What is accepted is what Jupyter reads without repairing: nbformat 4, any
 * minor version (4.0 through 4.5, and later minors as Jupyter does, with
 * their unknown fields); cell ids are required from 4.5 on (nbformat's
 * schema) and optional before, where the file is taken as it is. */
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

/* A string value quoted for a message, cut to 40 bytes: got 'pdf'. */
static void got(char *out, size_t cap, const json_t *v)
{
    const char *s = json_string_value(v);

    if (s)
        snprintf(out, cap, " (got '%.40s%s')", s, strlen(s) > 40 ? "..." : "");
    else
        snprintf(out, cap, " (got %s)", v == NULL ? "nothing" : json_is_object(v) ? "an object" :
                 json_is_array(v) ? "an array" : json_is_number(v) ? "a number" :
                 json_is_boolean(v) ? "a boolean" : "null");
}

static int check_output(const char *where, const json_t *o)
{
    const char *type;
    char msg[160], g[64];

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
    got(g, sizeof(g), json_object_get(o, "output_type"));
    snprintf(msg, sizeof(msg), "output_type must be one of stream, display_data, execute_result, "
                               "error%s", g);
    return bad(where, msg);
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

/* "cell 3 (id abc) at cells[2]": what a user counts (cells from 1, as they
 * appear on the page), the id when it is a usable one, and the JSON path. */
static void cell_where(char *out, size_t cap, size_t idx, const json_t *cell)
{
    const json_t *id = json_is_object(cell) ? json_object_get(cell, "id") : NULL;

    if (id && cell_id_ok(id))
        snprintf(out, cap, "cell %zu (id %s) at cells[%zu]", idx + 1, json_string_value(id), idx);
    else
        snprintf(out, cap, "cell %zu at cells[%zu]", idx + 1, idx);
}

static int check_cell(size_t idx, const json_t *cell, int64_t minor)
{
    char where[128], owhere[160], msg[160], g[64];
    const char *type;
    json_t *id, *outputs, *o, *n;
    size_t j;
    int err;

    cell_where(where, sizeof(where), idx, cell);
    if (!json_is_object(cell))
        return bad(where, "cell must be an object");
    type = json_string_value(json_object_get(cell, "cell_type"));
    if (type == NULL)
        return bad(where, "cell needs 'cell_type' (a string)");
    if (strcmp(type, "code") != 0 && strcmp(type, "markdown") != 0 && strcmp(type, "raw") != 0) {
        got(g, sizeof(g), json_object_get(cell, "cell_type"));
        snprintf(msg, sizeof(msg), "cell_type must be code, markdown or raw%s", g);
        return bad(where, msg);
    }
    id = json_object_get(cell, "id");
    if (id ? !cell_id_ok(id) : minor >= 5)
        return bad(where, id ? "cell needs 'id' (1-64 characters of letters, digits, - and _)"
                             : "cell needs 'id' (1-64 characters of letters, digits, - and _) "
                               "from nbformat 4.5 on (an older notebook says nbformat_minor 4 "
                               "or less and may leave ids out)");
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

/* Nesting depth of a JSON text, counting brackets outside strings, before
 * jansson parses it (jansson recurses). */
static bool depth_exceeds(const char *buf, size_t len, int max_depth)
{
    int depth = 0;
    bool in_string = false;

    for (size_t i = 0; i < len; i++) {
        char c = buf[i];
        if (in_string) {
            if (c == '\\')
                i++;
            else if (c == '"')
                in_string = false;
        } else if (c == '"') {
            in_string = true;
        } else if (c == '{' || c == '[') {
            if (++depth > max_depth)
                return true;
        } else if (c == '}' || c == ']') {
            depth--;
        }
    }
    return false;
}

/* Parse, with a message that says where the JSON breaks and shows the text
 * there ("malformed JSON at line 12 column 5: ... near '},\n  {'"). */
static int parse(json_t **out, const char *buf, size_t len)
{
    json_error_t jerr;
    char near[64] = "";

    *out = NULL;
    if (buf == NULL || len == 0)
        return ed_error_set(ED_EUNPROC, "invalid notebook: the file is empty (expected nbformat "
                                        "v4 JSON)");
    if (len >= 3 && memcmp(buf, "\xEF\xBB\xBF", 3) == 0)
        return ed_error_set(ED_EUNPROC, "invalid notebook: the file starts with a UTF-8 byte "
                                        "order mark, which JSON does not allow (save it as UTF-8 "
                                        "without BOM)");
    if (depth_exceeds(buf, len, NB_MAX_DEPTH))
        return ed_error_set(ED_EUNPROC, "invalid notebook: JSON nested deeper than %d levels",
                            NB_MAX_DEPTH);
    *out = json_loadb(buf, len, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, &jerr);
    if (*out != NULL)
        return 0;
    if (jerr.position >= 0 && (size_t)jerr.position < len) {
        /* up to 20 bytes from a little before the error, printable ASCII only */
        size_t from = jerr.position > 8 ? (size_t)jerr.position - 8 : 0, k = 0;
        for (size_t i = from; i < len && k < 20; i++, k++)
            near[k] = (buf[i] >= 0x20 && buf[i] < 0x7f && buf[i] != '\'') ? buf[i] : ' ';
        near[k] = '\0';
    }
    return ed_error_set(ED_EUNPROC, "invalid notebook: malformed JSON at line %d column %d: %s%s%s%s",
                        jerr.line, jerr.column, jerr.text, near[0] ? " (near '" : "", near,
                        near[0] ? "')" : "");
}

int proj_nb_validate(const char *buf, size_t len)
{
    json_t *nb = NULL, *v, *cells, *cell;
    int64_t major, minor;
    size_t i;
    int err;

    if ((err = parse(&nb, buf, len)) < 0)
        return err;
    if (!json_is_object(nb)) {
        err = bad("", "a notebook is a JSON object");
        goto done;
    }
    v = json_object_get(nb, "nbformat");
    if (v == NULL) {
        err = bad("", "not a Jupyter notebook: no 'nbformat' field ('nbformat' must be 4)");
        goto done;
    }
    major = json_is_integer(v) ? json_integer_value(v) : -1;
    if (major >= 1 && major <= 3) {
        err = ed_error_set(ED_EUNPROC, "invalid notebook: 'nbformat' must be 4: this is an "
                           "nbformat %lld notebook, which is not supported; convert it with "
                           "`jupyter nbconvert --to notebook --nbformat 4 --output new.ipynb "
                           "old.ipynb` (or open and save it in Jupyter)", (long long)major);
        goto done;
    }
    if (major > 4) {
        err = ed_error_set(ED_EUNPROC, "invalid notebook: 'nbformat' must be 4: nbformat %lld is "
                           "newer than this server reads", (long long)major);
        goto done;
    }
    if (major != 4) {
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
