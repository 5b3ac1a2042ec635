/*
 * sbx_slot.c - job slots: a distinct unprivileged host uid per concurrent
 * job, held by an flock on <lock_dir>/slot-<uid> until released (a crashed
 * holder releases it by dying).
 */
#include "sbx.h"
#include "sbx_wire.h"
#include "ed_error.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

struct sbx_slot {
    int fd;
    unsigned uid;
    uint32_t remote;          /* the launcher's handle (sbx_remote.c); 0: held here */
};

int sbx_slot_claim(sbx_slot **out, const char *lock_dir, unsigned base, unsigned count)
{
    char path[PATH_MAX];
    sbx_slot *s;

    *out = NULL;
    if (sbx__remote_on()) {
        /* The launcher holds the lock in its own directory and range. */
        if ((s = calloc(1, sizeof(*s))) == NULL)
            return ed_error_set(ED_ENOMEM, "sandbox slot");
        s->fd = -1;
        int err = sbx__remote_slot_claim(&s->remote, &s->uid);
        if (err < 0) {
            free(s);
            return err;
        }
        *out = s;
        return 0;
    }
    if (!lock_dir || lock_dir[0] != '/' || base == 0 || count == 0 || base + count < base)
        return ed_error_set(ED_EINVAL, "sandbox slots: need an absolute lock dir and base > 0");
    if (mkdir(lock_dir, 0700) < 0 && errno != EEXIST)
        return ed_error_set(ED_EIO, "sandbox slots: %s: %s", lock_dir, strerror(errno));
    for (unsigned i = 0; i < count; i++) {
        snprintf(path, sizeof(path), "%s/slot-%u", lock_dir, base + i);
        int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
        if (fd < 0)
            return ed_error_set(ED_EIO, "sandbox slots: %s: %s", path, strerror(errno));
        if (flock(fd, LOCK_EX | LOCK_NB) == 0) {
            if ((s = malloc(sizeof(*s))) == NULL) {
                close(fd);
                return ed_error_set(ED_ENOMEM, "sandbox slot");
            }
            s->fd = fd;
            s->uid = base + i;
            s->remote = 0;
            *out = s;
            return 0;
        }
        close(fd);
    }
    return ed_error_set(ED_EBUSY, "sandbox slots: all %u in use", count);
}

unsigned sbx_slot_uid(const sbx_slot *s)
{
    return s->uid;
}

void sbx_slot_free(sbx_slot *s)
{
    if (!s)
        return;
    if (s->remote)
        sbx__remote_slot_free(s->remote);
    if (s->fd >= 0)
        close(s->fd);
    free(s);
}
