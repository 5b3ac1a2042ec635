/*
 * kr_main.c - eddy-kernel's command line.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdio.h>
#include <string.h>

#include "kr_int.h"

static int usage(FILE *f)
{
    fprintf(f,
            "usage: eddy-kernel run FILE.py [ARGS...]\n"
            "       eddy-kernel run -m MODULE [ARGS...]\n"
            "       eddy-kernel run NB.ipynb --out OUT.ipynb [--allow-errors] [--timeout S]\n"
            "       eddy-kernel serve --fd N\n"
            "       eddy-kernel serve --connect unix:PATH|HOST:PORT [--token T]\n"
            "       eddy-kernel --version\n");
    return f == stdout ? 0 : 2;
}

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

int kr_main(int argc, char **argv)
{
    if (argc < 2)
        return usage(stderr);
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)
        return usage(stdout);
    if (strcmp(argv[1], "--version") == 0) {
        printf("eddy-kernel %s (Python %s, Jupyter messaging %s)\n", EDDY_VERSION, PY_VERSION,
               KR_PROTOCOL_VERSION);
        return 0;
    }
    if (strcmp(argv[1], "run") == 0) {
        if (argc < 3) {
            fprintf(stderr, "eddy-kernel: run needs a script or a notebook\n");
            return usage(stderr);
        }
        if (strcmp(argv[2], "-m") == 0 && argc < 4) {
            fprintf(stderr, "eddy-kernel: run -m needs a module name\n");
            return usage(stderr);
        }
        if (ends_with(argv[2], ".ipynb"))
            return kr__run_notebook(argc - 2, argv + 2);
        return kr__run_script(argc - 2, argv + 2);
    }
    if (strcmp(argv[1], "serve") == 0)
        return kr__serve(argc - 2, argv + 2);
    fprintf(stderr, "eddy-kernel: unknown command '%s'\n", argv[1]);
    return usage(stderr);
}
