/* unpack.c - archives in the draft. Placeholder until the unpacker lands
 * (issue 15): it refuses every archive with a clear error. */
#include "ds_int.h"

#include "ed_error.h"

int ds_draft_unpack(int64_t *out_files, ds *d, int64_t user, const char *id, const char *path,
                    const ds_unpack_limits *limits, int64_t quota_bytes)
{
    (void)d; (void)user; (void)id; (void)limits; (void)quota_bytes;
    if (out_files)
        *out_files = 0;
    return ed_error_set(ED_EUNPROC, "cannot unpack %s: unpacking archives is not built yet", path);
}
