/*
 * fuzz_nbformat.c - nbformat v4 validation (proj_nb_validate), which every
 * .ipynb write through the API goes through.
 *
 * Input: the notebook file's bytes.
 */
#include "fuzz.h"

#include "ed_error.h"
#include "proj.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int err = proj_nb_validate((const char *)data, size);

    if (err != 0 && err != ED_EUNPROC && err != ED_ENOMEM)
        abort();   /* the contract: 0 or ED_EUNPROC */
    ed_error_clear();
    return 0;
}
