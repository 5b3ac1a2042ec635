/*
 * fuzz_proj_path.c - the path-safety check of projects/ (proj_path_validate),
 * applied to every file path a client names.
 *
 * Input: the path bytes (NULs included, as the API passes a length). An
 * accepted path is re-checked against the rules written in proj.h, so a
 * validator that lets "..", ".git" or an absolute path through aborts.
 */
#include "fuzz.h"

#include "ed_error.h"
#include "proj.h"

#include <strings.h>

/* The header's rules, spelled out independently: 1 when `p` must be refused. */
static int must_refuse(const uint8_t *p, size_t n)
{
    size_t seg = 0;

    if (n == 0 || n > PROJ_PATH_MAX || p[0] == '/')
        return 1;
    for (size_t i = 0; i <= n; i++) {
        if (i == n || p[i] == '/') {
            const uint8_t *s = p + i - seg;
            if (seg == 0 || seg > 255)
                return 1;
            if ((seg == 1 && s[0] == '.') || (seg == 2 && s[0] == '.' && s[1] == '.'))
                return 1;
            if (seg == 4 && strncasecmp((const char *)s, ".git", 4) == 0)
                return 1;
            seg = 0;
            continue;
        }
        if (p[i] == '\0' || p[i] == '\\' || p[i] < 0x20 || p[i] == 0x7f)
            return 1;
        seg++;
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* An exact-size copy so a read past `size` is caught by ASan. */
    char *copy = malloc(size ? size : 1);
    int err;

    if (copy == NULL)
        abort();
    if (size)
        memcpy(copy, data, size);
    err = proj_path_validate(copy, size);
    if (err != 0 && err != ED_EINVAL)
        abort();
    if (err == 0 && must_refuse(data, size)) {
        fprintf(stderr, "proj_path_validate accepted a path its contract refuses\n");
        abort();
    }
    free(copy);
    ed_error_clear();
    return 0;
}
