/* body_spool.c - a streamed request body (GW_BODY_STREAM) spooled to an
 * unnamed file: the dataset draft PUT and the competitions' CSV bodies. */
#include "gw_int.h"

#include "ed_error.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

int gw__spool_open(int *out_fd, const char *dir)
{
    /* O_TMPFILE: unnamed, so nothing is left to clean up after a crash */
    if ((*out_fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600)) < 0)
        return ed_error_set(ED_EIO, "cannot make a temporary file in %s: %s", dir, strerror(errno));
    return 0;
}

int gw__spool_write(int fd, const char *data, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, data, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0)
            return ed_error_set(errno == ENOSPC || errno == EDQUOT ? ED_EQUOTA : ED_EIO, "writing the file: %s",
                                strerror(errno));
        data += w;
        n -= (size_t)w;
    }
    return 0;
}
