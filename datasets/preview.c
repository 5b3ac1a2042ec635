/* preview.c - previews and stats. Placeholder until previews land (issue 15). */
#include "ds_int.h"

#include "ed_error.h"

int ds_preview_get(char **out, bool *out_pending, ds *d, int64_t user, const char *id, int64_t number,
                   const char *path)
{
    (void)d; (void)user; (void)id; (void)number; (void)path;
    *out = NULL;
    *out_pending = false;
    return ed_error_set(ED_EUNPROC, "previews are not built yet");
}

void ds__previews_stop(ds *d)
{
    (void)d;
}
