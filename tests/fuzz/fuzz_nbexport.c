/*
 * fuzz_nbexport.c - the notebook's percent-format export
 * (proj_nb_export_py), which GET .../export/{path}?format=py runs on any
 * stored .ipynb, public ones for anonymous callers too.
 *
 * Input: the notebook file's bytes (the nbformat corpus). Contract: 0 with a
 * NUL-terminated script of exactly *out_len bytes whose every cell starts
 * with "# %%", or ED_EUNPROC (not a notebook) / ED_ENOMEM with no output.
 */
#include "fuzz.h"

#include "ed_error.h"
#include "proj.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *py = NULL;
    size_t len = 0;
    int err = proj_nb_export_py(&py, &len, (const char *)data, size);

    if (err == 0) {
        if (py == NULL || strlen(py) != len || (len > 0 && strncmp(py, "# %%", 4) != 0))
            abort();
    } else if ((err != ED_EUNPROC && err != ED_ENOMEM) || py != NULL) {
        abort();
    }
    free(py);
    ed_error_clear();
    return 0;
}
