/*
 * kr_run.c - `eddy-kernel run`: a script like python would run it, or a
 * notebook executed cell by cell like nbclient, written back atomically.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ed_buf.h"
#include "ed_error.h"
#include "kr_int.h"

#define NB_MAX_BYTES (512u * 1024u * 1024u)

/* ---- scripts ---------------------------------------------------------------- */

/* argv: FILE.py [ARGS...] or -m MODULE [ARGS...] */
int kr__run_script(int argc, char **argv)
{
    const char *file = NULL, *module = NULL;

    if (argc >= 2 && strcmp(argv[0], "-m") == 0) {
        module = argv[1];
        argv++;
        argc--;       /* sys.argv[0] becomes the module name, then its path */
    } else {
        file = argv[0];
    }
    /* Kernels have no display; scripts that plot save their figures. */
    setenv("MPLBACKEND", "Agg", 0);
    if (kr__py_init(KR__SCRIPT, argc, argv, file, module) < 0) {
        fprintf(stderr, "eddy-kernel: %s\n", ed_error_last());
        return 1;
    }
    /* Line-buffered text streams (even when PYTHONUNBUFFERED is set, as the
     * scheduler does for live logs): each line reaches the fd in one write(),
     * so the ranks of a multi-GPU job sharing one log never interleave
     * within a line, and a print() still shows up as soon as it ends. */
    if (PyRun_SimpleString("import sys\n"
                           "for _s in (sys.stdout, sys.stderr):\n"
                           "    if _s is not None and hasattr(_s, 'reconfigure'):\n"
                           "        _s.reconfigure(line_buffering=True, write_through=False)\n"
                           "del _s\n") != 0)
        fprintf(stderr, "eddy-kernel: could not line-buffer stdout/stderr\n");
    return Py_RunMain();   /* python's own semantics: exit code, traceback, finalize */
}

/* ---- notebooks -------------------------------------------------------------- */

typedef struct nb_run {
    const char *in;          /* as given */
    const char *out;
    int allow_errors;
    double timeout;          /* seconds per cell, 0: none */
    char *in_abs;            /* absolute paths, since we chdir to the notebook's folder */
    char *out_abs;
    char *tmp;               /* the temp file next to out_abs, until renamed */
    int tmp_fd;
} nb_run;

static int nb_usage(void)
{
    fprintf(stderr, "usage: eddy-kernel run NB.ipynb --out OUT.ipynb [--allow-errors] "
                    "[--timeout SECONDS]\n");
    return 2;
}

static char *abs_path(const char *p)
{
    char cwd[4096];
    ed_buf b = {0};

    if (p[0] == '/')
        return strdup(p);
    if (getcwd(cwd, sizeof(cwd)) == NULL)
        return NULL;
    if (ed_buf_printf(&b, "%s/%s", cwd, p) < 0)
        return NULL;
    return ed_buf_steal(&b);
}

static int read_file(char **out, size_t *out_len, const char *path)
{
    FILE *f;
    ed_buf b = {0};
    char chunk[65536];
    size_t n;

    *out = NULL;
    if ((f = fopen(path, "rb")) == NULL)
        return ed_error_set(ED_ENOTFOUND, "%s: %s", path, strerror(errno));
    while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0) {
        if (b.len + n > NB_MAX_BYTES) {
            fclose(f);
            ed_buf_free(&b);
            return ed_error_set(ED_ETOOBIG, "%s: over %u bytes", path, NB_MAX_BYTES);
        }
        if (ed_buf_append(&b, chunk, n) < 0) {
            fclose(f);
            ed_buf_free(&b);
            return ed_error_set(ED_ENOMEM, "%s", path);
        }
    }
    if (ferror(f)) {
        fclose(f);
        ed_buf_free(&b);
        return ed_error_set(ED_EIO, "%s: read error", path);
    }
    fclose(f);
    *out_len = b.len;
    *out = b.data ? ed_buf_steal(&b) : strdup("");
    return *out ? 0 : ed_error_set(ED_ENOMEM, "%s", path);
}

/* The notebook must be nbformat 4 with a cells array of objects that have a
 * cell_type; the rest we leave as we found it. */
static int nb_check(const json_t *nb, const char *path)
{
    size_t i;
    json_t *cell;
    json_t *cells = json_object_get(nb, "cells");

    if (!json_is_object(nb))
        return ed_error_set(ED_EUNPROC, "%s: not a notebook (a JSON object)", path);
    if (json_integer_value(json_object_get(nb, "nbformat")) != 4)
        return ed_error_set(ED_EUNPROC, "%s: not an nbformat 4 notebook", path);
    if (!json_is_array(cells))
        return ed_error_set(ED_EUNPROC, "%s: 'cells' must be an array", path);
    json_array_foreach(cells, i, cell) {
        json_t *src = json_object_get(cell, "source");
        if (!json_is_object(cell) || !json_is_string(json_object_get(cell, "cell_type")))
            return ed_error_set(ED_EUNPROC, "%s: cells[%zu] needs a cell_type", path, i);
        if (!json_is_string(src) && !json_is_array(src))
            return ed_error_set(ED_EUNPROC, "%s: cells[%zu] needs a source", path, i);
    }
    return 0;
}

/* A cell's source, joined when it is a list of lines. Caller frees. */
static char *cell_source(const json_t *cell)
{
    const json_t *src = json_object_get(cell, "source");
    ed_buf b = {0};
    size_t i;
    json_t *line;

    if (json_is_string(src))
        return strdup(json_string_value(src));
    json_array_foreach(src, i, line) {
        if (json_is_string(line) && ed_buf_puts(&b, json_string_value(line)) < 0) {
            ed_buf_free(&b);
            return NULL;
        }
    }
    return b.data ? ed_buf_steal(&b) : strdup("");
}

static int cell_has_tag(const json_t *cell, const char *tag)
{
    const json_t *tags = json_object_get(json_object_get(cell, "metadata"), "tags");
    size_t i;
    json_t *t;

    json_array_foreach(tags, i, t) {
        if (json_is_string(t) && strcmp(json_string_value(t), tag) == 0)
            return 1;
    }
    return 0;
}

static int blank(const char *s)
{
    for (; *s; s++)
        if (*s != ' ' && *s != '\t' && *s != '\n' && *s != '\r')
            return 0;
    return 1;
}

/* Open the temp file beside the output first, so a notebook we cannot write
 * fails before running anything. */
static int nb_open_tmp(nb_run *r)
{
    ed_buf b = {0};

    if (ed_buf_printf(&b, "%s.tmp-XXXXXX", r->out_abs) < 0)
        return ed_error_set(ED_ENOMEM, "temp name");
    r->tmp = ed_buf_steal(&b);
    if ((r->tmp_fd = mkstemp(r->tmp)) < 0) {
        int e = errno;
        free(r->tmp);
        r->tmp = NULL;
        return ed_error_set(ED_EIO, "%s: cannot write beside it: %s", r->out, strerror(e));
    }
    return 0;
}

static void nb_drop_tmp(nb_run *r)
{
    if (r->tmp_fd >= 0)
        close(r->tmp_fd);
    r->tmp_fd = -1;
    if (r->tmp)
        unlink(r->tmp);
    free(r->tmp);
    r->tmp = NULL;
}

static int nb_write(nb_run *r, const json_t *nb)
{
    char *s = json_dumps(nb, JSON_INDENT(1) | JSON_SORT_KEYS);
    size_t len, off = 0;

    if (s == NULL)
        return ed_error_set(ED_ENOMEM, "serialising the notebook");
    len = strlen(s);
    s[len] = '\n';   /* json_dumps' terminator becomes the final newline */
    len++;
    while (off < len) {
        ssize_t n = write(r->tmp_fd, s + off, len - off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            free(s);
            return ed_error_set(ED_EIO, "%s: %s", r->tmp, strerror(errno));
        }
        off += (size_t)n;
    }
    free(s);
    fchmod(r->tmp_fd, 0644);
    if (fsync(r->tmp_fd) < 0 || close(r->tmp_fd) < 0) {
        r->tmp_fd = -1;
        return ed_error_set(ED_EIO, "%s: %s", r->tmp, strerror(errno));
    }
    r->tmp_fd = -1;
    if (rename(r->tmp, r->out_abs) < 0)
        return ed_error_set(ED_EIO, "%s: %s", r->out, strerror(errno));
    free(r->tmp);
    r->tmp = NULL;
    return 0;
}

/* Print what nbclient's CellExecutionError prints. */
static void report_cell_error(const char *src, const json_t *outputs, int index)
{
    size_t i;
    json_t *o, *line;

    fprintf(stderr, "eddy-kernel: an error occurred while executing cell %d:\n"
                    "------------------\n%s\n------------------\n\n", index, src);
    json_array_foreach(outputs, i, o) {
        if (strcmp(json_string_value(json_object_get(o, "output_type")) ?: "", "error") != 0)
            continue;
        size_t j;
        json_array_foreach(json_object_get(o, "traceback"), j, line)
            fprintf(stderr, "%s\n", json_string_value(line) ?: "");
    }
}

/* nbformat 4.5 wants a cell id; nbformat's normalisation adds missing ones. */
static void nb_ids(json_t *nb)
{
    size_t i;
    json_t *cell;

    if (json_integer_value(json_object_get(nb, "nbformat_minor")) < 5)
        return;
    json_array_foreach(json_object_get(nb, "cells"), i, cell) {
        if (!json_is_string(json_object_get(cell, "id"))) {
            char id[33];
            kr_msg_new_id(id);
            id[8] = '\0';
            json_object_set_new(cell, "id", json_string(id));
        }
    }
}

/* Execute the code cells of `nb` in order; 1 when a cell failed and errors
 * are not allowed (the run stopped there), 0, or a negative code. */
static int nb_execute(nb_run *r, json_t *nb, PyObject *kernel)
{
    json_t *cells = json_object_get(nb, "cells");
    size_t i;
    json_t *cell;
    int count = 0;

    json_array_foreach(cells, i, cell) {
        char *src;
        PyObject *res;
        int ok;
        const char *outs_s;
        Py_ssize_t outs_n;
        json_t *outs;
        json_error_t je;

        if (strcmp(json_string_value(json_object_get(cell, "cell_type")), "code") != 0)
            continue;
        if ((src = cell_source(cell)) == NULL)
            return ed_error_set(ED_ENOMEM, "cell source");
        if (blank(src) || cell_has_tag(cell, "skip-execution")) {
            free(src);
            continue;
        }
        count++;
        res = PyObject_CallMethod(kernel, "nb_run_cell", "si", src, count);
        if (res == NULL || !PyArg_ParseTuple(res, "ps#", &ok, &outs_s, &outs_n)) {
            Py_XDECREF(res);
            free(src);
            return kr__py_error(ED_EINTERNAL, "running a cell");
        }
        outs = json_loadb(outs_s, (size_t)outs_n, 0, &je);
        Py_DECREF(res);
        if (outs == NULL) {
            free(src);
            return ed_error_set(ED_EINTERNAL, "cell %zu outputs: %s", i, je.text);
        }
        if (json_object_set_new(cell, "outputs", outs) < 0 ||
            json_object_set_new(cell, "execution_count", json_integer(count)) < 0) {
            free(src);
            return ed_error_set(ED_ENOMEM, "cell outputs");
        }
        if (!ok && !r->allow_errors && !cell_has_tag(cell, "raises-exception")) {
            report_cell_error(src, outs, (int)i);
            free(src);
            return 1;
        }
        free(src);
    }
    return 0;
}

static void nb_language_info(json_t *nb)
{
    json_t *md = json_object_get(nb, "metadata");
    char v[32];

    if (!json_is_object(md)) {
        md = json_object();
        json_object_set_new(nb, "metadata", md);
    }
    snprintf(v, sizeof(v), "%d.%d.%d", PY_MAJOR_VERSION, PY_MINOR_VERSION, PY_MICRO_VERSION);
    json_object_set_new(md, "language_info",
                        json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:{s:s, s:i}}", "name", "python",
                                  "version", v, "mimetype", "text/x-python", "file_extension",
                                  ".py", "pygments_lexer", "ipython3", "nbconvert_exporter",
                                  "python", "codemirror_mode", "name", "ipython", "version", 3));
}

/* argv: NB.ipynb --out OUT.ipynb [--allow-errors] [--timeout S] */
int kr__run_notebook(int argc, char **argv)
{
    nb_run r = {.tmp_fd = -1};
    char *buf = NULL, *dir = NULL, *nbargv[1];
    size_t len;
    json_t *nb = NULL;
    json_error_t je;
    PyObject *kernel = NULL;
    int rc = 2, err;

    r.in = argv[0];
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--out") == 0 && i + 1 < argc) {
            r.out = argv[++i];
        } else if (strcmp(argv[i], "--allow-errors") == 0) {
            r.allow_errors = 1;
        } else if (strcmp(argv[i], "--timeout") == 0 && i + 1 < argc) {
            char *end;
            r.timeout = strtod(argv[++i], &end);
            if (*end || end == argv[i] || !(r.timeout > 0) || r.timeout > 1e7) {
                fprintf(stderr, "eddy-kernel: --timeout needs a positive number of seconds, "
                                "not '%s'\n", argv[i]);
                return 2;
            }
        } else {
            fprintf(stderr, "eddy-kernel: unexpected argument '%s'\n", argv[i]);
            return nb_usage();
        }
    }
    if (r.out == NULL) {
        fprintf(stderr, "eddy-kernel: a notebook run needs --out OUT.ipynb\n");
        return nb_usage();
    }
    if ((r.in_abs = abs_path(r.in)) == NULL || (r.out_abs = abs_path(r.out)) == NULL ||
        (dir = strdup(r.in_abs)) == NULL) {
        fprintf(stderr, "eddy-kernel: out of memory\n");
        goto done;
    }
    if ((err = read_file(&buf, &len, r.in)) < 0) {
        fprintf(stderr, "eddy-kernel: %s\n", ed_error_last());
        goto done;
    }
    if ((nb = json_loadb(buf, len, 0, &je)) == NULL) {
        fprintf(stderr, "eddy-kernel: %s: not JSON: %s (line %d)\n", r.in, je.text, je.line);
        goto done;
    }
    if (nb_check(nb, r.in) < 0 || nb_open_tmp(&r) < 0) {
        fprintf(stderr, "eddy-kernel: %s\n", ed_error_last());
        goto done;
    }
    /* Like nbclient: the kernel's working directory is the notebook's folder. */
    if (chdir(dirname(dir)) < 0) {
        fprintf(stderr, "eddy-kernel: %s: %s\n", dir, strerror(errno));
        goto done;
    }
    nbargv[0] = r.in_abs;
    if (kr__py_init(KR__NOTEBOOK, 1, nbargv, NULL, NULL) < 0 ||
        kr__py_start_kernel(&kernel, "notebook", r.timeout) < 0) {
        fprintf(stderr, "eddy-kernel: %s\n", ed_error_last());
        rc = 1;
        goto done;
    }
    err = nb_execute(&r, nb, kernel);
    if (err < 0) {
        fprintf(stderr, "eddy-kernel: %s\n", ed_error_last());
        rc = 1;
        goto done;
    }
    nb_language_info(nb);
    nb_ids(nb);
    if (nb_write(&r, nb) < 0) {
        fprintf(stderr, "eddy-kernel: %s\n", ed_error_last());
        rc = 1;
        goto done;
    }
    rc = err == 1 ? 1 : 0;
done:
    nb_drop_tmp(&r);
    Py_XDECREF(kernel);
    if (Py_IsInitialized() && Py_FinalizeEx() < 0 && rc == 0)
        rc = 120;
    json_decref(nb);
    free(buf);
    free(dir);
    free(r.in_abs);
    free(r.out_abs);
    return rc;
}
