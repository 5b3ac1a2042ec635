/* eddy-kernel: see kr.h and README.md. */
#include "kr.h"

/* Under AddressSanitizer: CPython and its extension modules keep memory
 * alive past Py_FinalizeEx by design; LeakSanitizer should report only ours.
 * Without ASan nothing calls this. */
const char *__lsan_default_suppressions(void);
__attribute__((used, visibility("default"))) const char *__lsan_default_suppressions(void)
{
    return "leak:libpython3\n"
           "leak:/usr/lib/python3/\n";
}

/* ...and quietly, since scripts' stderr is the user's. */
const char *__lsan_default_options(void);
__attribute__((used, visibility("default"))) const char *__lsan_default_options(void)
{
    return "print_suppressions=0";
}

int main(int argc, char **argv)
{
    return kr_main(argc, argv);
}
