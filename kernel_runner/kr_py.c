/*
 * kr_py.c - the embedded CPython: configuration, sys.path, the builtin
 * `_eddy_kernel` module and the embedded support module.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ed_error.h"
#include "kr_int.h"

#ifndef KR_DEFAULT_PYTHONPATH
#define KR_DEFAULT_PYTHONPATH ""
#endif
#ifndef KR_PYTHON_EXE
#define KR_PYTHON_EXE "/usr/bin/python3"
#endif

#ifdef KR_BUILTIN_PADDLE
/* framework/python/src/module.c, linked in from paddle_C_static */
PyMODINIT_FUNC PyInit__C(void);
#endif

static kr__io g_io;

void kr__py_set_io(const kr__io *io)
{
    if (io)
        g_io = *io;
    else
        memset(&g_io, 0, sizeof(g_io));
}

/* _eddy_kernel.send(channel, msg_type, content_json) */
static PyObject *m_send(PyObject *self, PyObject *args)
{
    const char *channel, *type, *js;
    Py_ssize_t n;
    int rc;

    if (!PyArg_ParseTuple(args, "sss#", &channel, &type, &js, &n))
        return NULL;
    if (g_io.send == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "eddy-kernel: no frontend connection in this mode");
        return NULL;
    }
    rc = g_io.send(g_io.payload, channel, type, js, (size_t)n);
    if (rc == ED_EINVAL || rc == ED_ETOOBIG || rc == ED_ENOMEM) {
        PyErr_Format(rc == ED_ENOMEM ? PyExc_MemoryError : PyExc_ValueError, "eddy-kernel: %s",
                     ed_error_last());
        return NULL;
    }
    Py_RETURN_NONE;   /* ED_EIO: the connection is gone; the serve loop ends */
}

/* _eddy_kernel.input_request(prompt, password=False) -> str */
static PyObject *m_input_request(PyObject *self, PyObject *args)
{
    const char *prompt;
    int password = 0;

    if (!PyArg_ParseTuple(args, "s|p", &prompt, &password))
        return NULL;
    if (g_io.input == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "eddy-kernel: no frontend to ask for input");
        return NULL;
    }
    return g_io.input(g_io.payload, prompt, password);
}

static PyMethodDef m_methods[] = {
    {"send", m_send, METH_VARARGS, "send(channel, msg_type, content_json): frame a message."},
    {"input_request", m_input_request, METH_VARARGS,
     "input_request(prompt, password=False) -> str: ask the frontend for a line."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef m_def = {
    PyModuleDef_HEAD_INIT, "_eddy_kernel", "eddy-kernel's C side.", -1, m_methods,
    NULL, NULL, NULL, NULL,
};

static PyObject *PyInit__eddy_kernel(void)
{
    PyObject *m = PyModule_Create(&m_def);
    if (m && PyModule_AddStringConstant(m, "version", EDDY_VERSION) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}

/* The pending Python exception, taken (none is left set): the name of its
 * type (or the default given) and str() of its value (NULL when that
 * fails). The strings live until exc_release(). */
typedef struct py_exc {
    PyObject *type, *value, *tb, *str;
    const char *name, *msg;
} py_exc;

static void exc_fetch(py_exc *e, const char *default_name)
{
    e->str = NULL;
    e->name = default_name;
    e->msg = NULL;
    PyErr_Fetch(&e->type, &e->value, &e->tb);
    PyErr_NormalizeException(&e->type, &e->value, &e->tb);
    if (e->type)
        e->name = ((PyTypeObject *)e->type)->tp_name;
    if (e->value && (e->str = PyObject_Str(e->value)) != NULL)
        e->msg = PyUnicode_AsUTF8(e->str);
    PyErr_Clear();
}

static void exc_release(py_exc *e)
{
    Py_XDECREF(e->str);
    Py_XDECREF(e->type);
    Py_XDECREF(e->value);
    Py_XDECREF(e->tb);
}

int kr__py_error(int code, const char *what)
{
    py_exc e;

    exc_fetch(&e, "?");
    ed_error_set(code, "%s: %s: %s", what, e.name, e.msg ? e.msg : "");
    exc_release(&e);
    return code;
}

json_t *kr__py_error_json(void)
{
    py_exc e;
    json_t *j;

    exc_fetch(&e, "Exception");
    j = json_pack("{s:s, s:s, s:[s]}", "ename", e.name, "evalue", e.msg ? e.msg : "",
                  "traceback", e.msg ? e.msg : e.name);
    exc_release(&e);
    return j;
}

static int status_fail(PyStatus st, PyConfig *c, const char *what)
{
    PyConfig_Clear(c);
    return ed_error_set(ED_EINTERNAL, "starting Python: %s: %s", what,
                        st.err_msg ? st.err_msg : "failed");
}

/* Insert the ':'-separated entries of `list` at sys.path[*at...], advancing
 * *at. With `dedupe`, an entry already on sys.path is left out. */
static int path_insert(const char *list, Py_ssize_t *at, int dedupe)
{
    PyObject *path = PySys_GetObject("path");   /* borrowed */
    const char *p = list;

    if (path == NULL || !PyList_Check(path))
        return ed_error_set(ED_EINTERNAL, "sys.path is not a list");
    while (*p) {
        const char *e = strchr(p, ':');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        if (n > 0) {
            PyObject *s = PyUnicode_DecodeFSDefaultAndSize(p, (Py_ssize_t)n);
            int have = s && dedupe ? PySequence_Contains(path, s) : 0;
            if (s == NULL || have < 0 || (!have && PyList_Insert(path, (*at)++, s) < 0)) {
                Py_XDECREF(s);
                return kr__py_error(ED_EINTERNAL, "sys.path");
            }
            Py_DECREF(s);
        }
        if (!e)
            break;
        p = e + 1;
    }
    return 0;
}

/* Append to `buf` (':'-separated) the canonical form of <exe dir>/`rel` when
 * that folder holds paddle/__init__.py. Nothing is appended when the binary's
 * path cannot be read, the folder is absent, its name holds ':' or it does
 * not fit. */
static void exe_relative_dir(char *buf, size_t cap, const char *rel)
{
    char exe[PATH_MAX], want[PATH_MAX + 64], canon[PATH_MAX], probe[PATH_MAX + 32];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    char *slash;
    size_t used = strlen(buf);

    if (n <= 0)
        return;
    exe[n] = '\0';
    if ((slash = strrchr(exe, '/')) == NULL)
        return;
    *slash = '\0';
    snprintf(want, sizeof(want), "%s/%s", exe, rel);
    if (realpath(want, canon) == NULL || strchr(canon, ':') != NULL)
        return;   /* absent, or a name the ':'-separated list cannot carry */
    snprintf(probe, sizeof(probe), "%s/paddle/__init__.py", canon);
    if (access(probe, R_OK) != 0)
        return;
    if (used + strlen(canon) + 2 > cap)
        return;
    snprintf(buf + used, cap - used, "%s%s", used ? ":" : "", canon);
}

/* Make built-in modules with dotted names importable. CPython 3.11's
 * BuiltinImporter answers only top-level names (it returns None when a parent
 * package's __path__ is given), so without this `from . import _C` inside
 * paddle/__init__.py would fall through to the path finder and load
 * paddle/_C*.so from disk: a second copy of the extension in this process. */
static const char builtin_finder_py[] =
    "__name__ = '_eddy_kernel'\n"
    "import sys, _imp\n"
    "from _frozen_importlib import BuiltinImporter, ModuleSpec\n"
    "class EddyBuiltinSubmodules:\n"
    "    @staticmethod\n"
    "    def find_spec(name, path=None, target=None):\n"
    "        if '.' in name and _imp.is_builtin(name):\n"
    "            return ModuleSpec(name, BuiltinImporter, origin='built-in')\n"
    "        return None\n"
    "sys.meta_path.insert(0, EddyBuiltinSubmodules)\n";

static int install_builtin_finder(void)
{
    PyObject *g = PyDict_New(), *r = NULL;
    int err = 0;

    if (g == NULL || PyDict_SetItemString(g, "__builtins__", PyEval_GetBuiltins()) < 0 ||
        (r = PyRun_String(builtin_finder_py, Py_file_input, g, g)) == NULL)
        err = kr__py_error(ED_EINTERNAL, "installing the built-in module finder");
    Py_XDECREF(r);
    Py_XDECREF(g);
    return err;
}

int kr__py_init(enum kr__mode mode, int argc, char **argv, const char *run_file,
                const char *run_module)
{
    PyConfig c;
    PyStatus st;
    const char *extra = getenv("EDDY_PYTHONPATH");
    Py_ssize_t at = 0;
    int err;

    if (PyImport_AppendInittab("_eddy_kernel", PyInit__eddy_kernel) < 0)
        return ed_error_set(ED_EINTERNAL, "registering _eddy_kernel");
#ifdef KR_BUILTIN_PADDLE
    /* Built in, not loaded from paddle/_C*.so: see install_builtin_finder. */
    if (PyImport_AppendInittab("paddle._C", PyInit__C) < 0)
        return ed_error_set(ED_EINTERNAL, "registering paddle._C");
#endif
    PyConfig_InitPythonConfig(&c);
    /* Isolated-ish: no PYTHON* variables, no ~/.local site-packages; the
     * system site (Debian's dist-packages: numpy, matplotlib) stays. */
    c.use_environment = 0;
    c.user_site_directory = 0;
    c.install_signal_handlers = 1;   /* SIGINT raises KeyboardInterrupt */
    c.parse_argv = 0;
    c.safe_path = mode == KR__SCRIPT ? 0 : 1;
    st = PyConfig_SetBytesArgv(&c, argc, argv);
    if (PyStatus_Exception(st))
        return status_fail(st, &c, "argv");
    if (run_file) {
        st = PyConfig_SetBytesString(&c, &c.run_filename, run_file);
        if (PyStatus_Exception(st))
            return status_fail(st, &c, "run_filename");
    }
    if (run_module) {
        st = PyConfig_SetBytesString(&c, &c.run_module, run_module);
        if (PyStatus_Exception(st))
            return status_fail(st, &c, "run_module");
    }
    st = Py_InitializeFromConfig(&c);
    PyConfig_Clear(&c);
    if (PyStatus_Exception(st))
        return ed_error_set(ED_EINTERNAL, "starting Python: %s",
                            st.err_msg ? st.err_msg : "failed");

    if ((err = install_builtin_finder()) < 0)
        return err;
    /* Where `import paddle` comes from (README.md, "Python environment"):
     * EDDY_PYTHONPATH when set; otherwise the package beside the binary
     * (<exe>/../framework/python in the build tree, <exe>/../python when
     * installed), then the compiled-in build and source folders. Script
     * mode's sys.path[0] (the script's folder) is put in front later by
     * Py_RunMain. */
    if (extra) {
        if ((err = path_insert(extra, &at, 0)) < 0)
            return err;
    } else {
        char near[2 * PATH_MAX + 2] = "";

        exe_relative_dir(near, sizeof(near), "../framework/python");
        exe_relative_dir(near, sizeof(near), "../python");
        if ((err = path_insert(near, &at, 1)) < 0 ||
            (err = path_insert(KR_DEFAULT_PYTHONPATH, &at, 1)) < 0)
            return err;
    }
    at = 0;
    if (mode != KR__SCRIPT && (err = path_insert(".", &at, 0)) < 0)
        return err;
    /* sys.executable would be eddy-kernel, which cannot stand in for python
     * (subprocess, multiprocessing spawn); point it at Debian's python. */
    if (access(KR_PYTHON_EXE, X_OK) == 0) {
        PyObject *exe = PyUnicode_DecodeFSDefault(KR_PYTHON_EXE);
        if (exe == NULL || PySys_SetObject("executable", exe) < 0) {
            Py_XDECREF(exe);
            return kr__py_error(ED_EINTERNAL, "sys.executable");
        }
        Py_DECREF(exe);
    }
    return 0;
}

int kr__py_start_kernel(PyObject **out, const char *mode, double timeout)
{
    PyObject *code = NULL, *mod = NULL, *k = NULL;

    *out = NULL;
    code = Py_CompileString(kr__support_py, "<eddy_kernel_support>", Py_file_input);
    if (code == NULL)
        return kr__py_error(ED_EINTERNAL, "compiling eddy_kernel_support");
    mod = PyImport_ExecCodeModuleEx("eddy_kernel_support", code, "<eddy_kernel_support>");
    Py_DECREF(code);
    if (mod == NULL)
        return kr__py_error(ED_EINTERNAL, "loading eddy_kernel_support");
    k = PyObject_CallMethod(mod, "start", "sd", mode, timeout);
    Py_DECREF(mod);
    if (k == NULL)
        return kr__py_error(ED_EINTERNAL, "starting the kernel");
    *out = k;
    return 0;
}
