/*
 * kr_int.h - private to kernel_runner/: the embedded interpreter and the
 * three modes. Include after <Python.h> (Python must come first).
 */
#ifndef KR_INT_H
#define KR_INT_H

#include <stddef.h>

#include "kr.h"

/* What the embedded `_eddy_kernel` module calls back into (serve mode sets
 * it; in the other modes send and input raise RuntimeError). */
typedef struct kr__io {
    /* Frame a message of `msg_type` on `channel` whose content is the JSON
     * text `json`, parented to the request being handled. 0, ED_EINVAL (bad
     * JSON: a bug in the caller) or ED_EIO (connection gone: ignored, the
     * kernel exits after the cell). */
    int (*send)(void *payload, const char *channel, const char *msg_type, const char *json,
                size_t len);
    /* Ask the frontend for a line (input_request on stdin) and wait for it.
     * A new str reference, or NULL with a Python exception set
     * (KeyboardInterrupt on interrupt, EOFError when the connection closed). */
    PyObject *(*input)(void *payload, const char *prompt, int password);
    void *payload;
} kr__io;

enum kr__mode { KR__SCRIPT, KR__NOTEBOOK, KR__SERVE };

/* Start CPython for `mode` with sys.argv = argv[0..argc) (bytes, decoded
 * like python does). For KR__SCRIPT, `run_file` or `run_module` is what
 * kr__py_run_main will run. Registers the built-in paddle._C (when linked
 * in) and a finder that resolves it, and puts EDDY_PYTHONPATH (or the
 * package beside the binary, then the build's framework Python folders) in
 * front of sys.path. 0 or ED_EINTERNAL with a message. */
int kr__py_init(enum kr__mode mode, int argc, char **argv, const char *run_file,
                const char *run_module);

/* Load the embedded support module and make this process a kernel
 * (eddy_kernel_support.start). *out is a new reference to the Kernel object.
 * `timeout` in seconds per cell, 0 for none. */
int kr__py_start_kernel(PyObject **out, const char *mode, double timeout);

/* Route _eddy_kernel.send / input_request (NULL: none). */
void kr__py_set_io(const kr__io *io);

/* Take the pending Python exception and set it as the ed_error message
 * "what: Name: value"; returns `code`. */
int kr__py_error(int code, const char *what);

/* The current exception as (ename, evalue) strings into a new JSON object
 * {ename, evalue, traceback: []}; clears it. Never NULL unless out of memory. */
json_t *kr__py_error_json(void);

/* The modes; each returns the process exit status. */
int kr__run_script(int argc, char **argv);
int kr__run_notebook(int argc, char **argv);
int kr__serve(int argc, char **argv);

/* The embedded kernel_runner/py/eddy_kernel_support.py (generated). */
extern const char kr__support_py[];

#endif
