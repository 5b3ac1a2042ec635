/* Opening files beneath a directory descriptor in trees users can write to
 * (ed_fs.h): openat2 where the kernel has it, an O_NOFOLLOW walk elsewhere. */
#include "ed_fs.h"

#include "ed_error.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "ed_openat2.h"

#define SEGMENT_MAX 255

/* 0 unknown, 1 the kernel has openat2, -1 it does not (ENOSYS, or a seccomp
 * profile refusing it with EPERM). Found once; a race only repeats a probe. */
static atomic_int have_openat2;
static atomic_bool force_fallback;
static _Thread_local bool last_used_openat2;

void ed_fs__force_fallback(bool on) { atomic_store(&force_fallback, on); }
bool ed_fs__used_openat2(void) { return last_used_openat2; }

/* Return `rc` with errno set to `e` (after ed_error_set, which may touch it). */
static int with_errno(int e, int rc)
{
    errno = e;
    return rc;
}

int ed_fs_path_check(const char *rel, size_t len)
{
    size_t seg = 0;

    if (rel == NULL || len == 0)
        return ed_error_set(ED_EINVAL, "path is empty");
    if (len > ED_FS_PATH_MAX)
        return ed_error_set(ED_EINVAL, "path is longer than %d bytes", ED_FS_PATH_MAX);
    if (memchr(rel, '\0', len))
        return ed_error_set(ED_EINVAL, "path contains a NUL byte");
    if (rel[0] == '/')
        return ed_error_set(ED_EINVAL, "path must be relative, not absolute");
    for (size_t i = 0; i <= len; i++) {
        if (i < len && rel[i] != '/')
            continue;
        size_t n = i - seg;
        const char *s = rel + seg;
        if (n == 0)
            return ed_error_set(ED_EINVAL, "path has an empty segment");
        if ((n == 1 && s[0] == '.') || (n == 2 && s[0] == '.' && s[1] == '.'))
            return ed_error_set(ED_EINVAL, "path has a '.' or '..' segment");
        if (n > SEGMENT_MAX)
            return ed_error_set(ED_EINVAL, "path segment longer than %d bytes", SEGMENT_MAX);
        seg = i + 1;
    }
    return 0;
}

int ed_fs_open_dir(int *out_fd, const char *path)
{
    int fd;

    *out_fd = -1;
    if ((fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0) {
        int e = errno;
        if (e == ENOENT || e == ELOOP || e == ENOTDIR)
            return with_errno(e, ed_error_set(ED_ENOTFOUND, "no directory %s", path));
        return with_errno(e, ed_error_set(ED_EIO, "open %s: %s", path, strerror(e)));
    }
    *out_fd = fd;
    return 0;
}

/* Why `name` in `dir` could not be opened as a directory: a link or not a
 * directory (an lstat for the message only; the open already refused it). */
static int refuse_component(int dir, const char *name, const char *rel, size_t upto, int e)
{
    struct stat sb;

    if (e == ENOENT)
        return with_errno(ENOENT, ed_error_set(ED_ENOTFOUND, "no file %s", rel));
    if (e == ELOOP || e == ENOTDIR) {
        if (fstatat(dir, name, &sb, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(sb.st_mode))
            return with_errno(ELOOP, ed_error_set(ED_ENOTFOUND,
                                                  "%.*s is a symbolic link; links are not followed",
                                                  (int)upto, rel));
        return with_errno(ENOTDIR, ed_error_set(ED_ENOTFOUND, "%.*s is not a directory", (int)upto, rel));
    }
    return with_errno(e, ed_error_set(ED_EIO, "open %.*s: %s", (int)upto, rel, strerror(e)));
}

/* The component walk: to the directory holding the last component of `rel`
 * (already checked). Intermediate directories are O_PATH; the one returned
 * is opened with `last_flags` (O_PATH or O_RDONLY). */
static int walk_parent(int *out_dir, const char **out_name, int *created, int root,
                       const char *rel, bool create, mode_t mode, int last_flags)
{
    char comp[SEGMENT_MAX + 1];
    const char *p = rel, *slash;
    int fd = -1;    /* -1: still at root (borrowed) */

    *out_dir = -1;
    if (created)
        *created = 0;
    while ((slash = strchr(p, '/')) != NULL) {
        size_t n = (size_t)(slash - p), upto = (size_t)(slash - rel);
        int at = fd >= 0 ? fd : root, next, oflags;

        memcpy(comp, p, n);
        comp[n] = '\0';
        if (create) {
            struct stat sb;
            if (fstatat(at, comp, &sb, AT_SYMLINK_NOFOLLOW) < 0) {
                int e = errno;
                if (e != ENOENT) {
                    if (fd >= 0)
                        close(fd);
                    return with_errno(e, ed_error_set(ED_EIO, "stat %.*s: %s", (int)upto, rel, strerror(e)));
                }
                if (mkdirat(at, comp, mode) < 0 && errno != EEXIST) {
                    e = errno;
                    if (fd >= 0)
                        close(fd);
                    return with_errno(e, ed_error_set(e == EDQUOT || e == ENOSPC ? ED_EQUOTA : ED_EIO,
                                                      "mkdir %.*s: %s", (int)upto, rel, strerror(e)));
                }
                if (created)
                    (*created)++;
            }
        }
        oflags = strchr(slash + 1, '/') ? O_PATH : last_flags;
        next = openat(at, comp, oflags | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (next < 0) {
            int e = errno, err = refuse_component(at, comp, rel, upto, e);
            e = errno;
            if (fd >= 0)
                close(fd);
            return with_errno(e, err);
        }
        if (fd >= 0)
            close(fd);
        fd = next;
        p = slash + 1;
    }
    if (fd < 0 && (fd = openat(root, ".", last_flags | O_DIRECTORY | O_CLOEXEC)) < 0) {
        int e = errno;
        return with_errno(e, ed_error_set(ED_EIO, "open the tree's root: %s", strerror(e)));
    }
    *out_dir = fd;
    *out_name = p;
    return 0;
}

int ed_fs_open_parent(int *out_dir, const char **out_name, int *out_created, int root_fd,
                      const char *rel, bool create, mode_t mode)
{
    int err;

    *out_dir = -1;
    if (out_created)
        *out_created = 0;
    if ((err = ed_fs_path_check(rel, rel ? strlen(rel) : 0)) < 0)
        return err;
    return walk_parent(out_dir, out_name, out_created, root_fd, rel, create, mode, O_RDONLY);
}

/* Map a failed open of the last component. */
static int refuse_open(int e, const char *rel)
{
    switch (e) {
    case ENOENT:
        return with_errno(e, ed_error_set(ED_ENOTFOUND, "no file %s", rel));
    case ELOOP:
        return with_errno(e, ed_error_set(ED_ENOTFOUND,
                                          "%s: a symbolic link on the way; links are not followed", rel));
    case ENOTDIR:
        return with_errno(e, ed_error_set(ED_ENOTFOUND, "%s: not a directory on the way", rel));
    case EXDEV:
        return with_errno(e, ed_error_set(ED_ENOTFOUND, "%s leads outside the tree", rel));
    case EISDIR:
        return with_errno(e, ed_error_set(ED_ENOTFOUND, "%s is a directory", rel));
    case ENXIO:
        return with_errno(e, ed_error_set(ED_ENOTFOUND, "%s is not a regular file", rel));
    case EEXIST:
        return with_errno(e, ed_error_set(ED_EEXISTS, "%s exists", rel));
    case EDQUOT:
    case ENOSPC:
        return with_errno(e, ed_error_set(ED_EQUOTA, "create %s: %s", rel, strerror(e)));
    default:
        return with_errno(e, ed_error_set(ED_EIO, "open %s: %s", rel, strerror(e)));
    }
}

/* openat2 beneath root: the fd, -1 with errno, or -2 when openat2 is not
 * usable here (the caller walks instead). */
static int try_openat2(int root, const char *rel, int flags, mode_t mode)
{
    struct open_how how;
    long fd;

    if (atomic_load(&force_fallback) || atomic_load(&have_openat2) < 0)
        return -2;
    memset(&how, 0, sizeof(how));
    how.flags = (uint64_t)(unsigned)flags;
    how.mode = (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE ? mode : 0;
    how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
    for (int tries = 0; tries < 8; tries++) {
        fd = syscall(SYS_openat2, root, rel, &how, sizeof(how));
        if (fd >= 0) {
            atomic_store(&have_openat2, 1);
            return (int)fd;
        }
        if (errno == ENOSYS || (errno == EPERM && atomic_load(&have_openat2) == 0)) {
            /* EPERM before any success: a seccomp profile refusing the call */
            atomic_store(&have_openat2, -1);
            return -2;
        }
        if (errno != EAGAIN && errno != EINTR)
            return -1;
    }
    return -2;     /* kept racing with renames: the walk does not need retries */
}

int ed_fs_open_beneath(int *out_fd, int root_fd, const char *rel, int flags, mode_t mode)
{
    bool nonblock = flags & O_NONBLOCK, want_dir = flags & O_DIRECTORY, path_only = flags & O_PATH;
    struct stat sb;
    int fd, err;

    *out_fd = -1;
    last_used_openat2 = false;
    if ((err = ed_fs_path_check(rel, rel ? strlen(rel) : 0)) < 0)
        return err;
    flags |= O_NOFOLLOW | O_CLOEXEC;
    if (!path_only)     /* openat2 refuses O_PATH with any other open flag */
        flags |= O_NOCTTY;
    if (!want_dir && !path_only)
        flags |= O_NONBLOCK;    /* a FIFO must not block the open */
    fd = try_openat2(root_fd, rel, flags, mode);
    if (fd == -1 && errno != ENOTDIR)
        return refuse_open(errno, rel);
    /* ENOTDIR: a file on the way, or a link where O_DIRECTORY wanted a
     * directory; the walk (as safe) finds out which for errno. */
    if (fd >= 0) {
        last_used_openat2 = true;
    } else {
        const char *name;
        int dir;
        if ((err = walk_parent(&dir, &name, NULL, root_fd, rel, false, 0, O_PATH)) < 0)
            return err;
        fd = openat(dir, name, flags, mode);
        if (fd < 0) {
            int e = errno;
            if (e == ELOOP || e == ENOTDIR)
                err = refuse_component(dir, name, rel, strlen(rel), e);
            else
                err = refuse_open(e, rel);
            e = errno;
            close(dir);
            return with_errno(e, err);
        }
        close(dir);
    }
    if (fstat(fd, &sb) < 0) {
        int e = errno;
        close(fd);
        return with_errno(e, ed_error_set(ED_EIO, "stat %s: %s", rel, strerror(e)));
    }
    if (want_dir ? !S_ISDIR(sb.st_mode) : !S_ISREG(sb.st_mode)) {
        int e = S_ISLNK(sb.st_mode) ? ELOOP : S_ISDIR(sb.st_mode) ? EISDIR : want_dir ? ENOTDIR : ENXIO;
        close(fd);
        return refuse_open(e, rel);
    }
    if (!nonblock && !want_dir && !path_only) {
        int fl = fcntl(fd, F_GETFL);
        if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) < 0) {
            int e = errno;
            close(fd);
            return with_errno(e, ed_error_set(ED_EIO, "open %s: %s", rel, strerror(e)));
        }
    }
    *out_fd = fd;
    return 0;
}

int ed_fs_read_fd(char **out_buf, size_t *out_len, int fd, size_t max)
{
    struct stat sb;
    char *buf;
    size_t got = 0, size;

    *out_buf = NULL;
    *out_len = 0;
    if (fstat(fd, &sb) < 0) {
        int e = errno;
        return with_errno(e, ed_error_set(ED_EIO, "stat: %s", strerror(e)));
    }
    if (!S_ISREG(sb.st_mode))
        return with_errno(S_ISDIR(sb.st_mode) ? EISDIR : ENXIO,
                          ed_error_set(ED_ENOTFOUND, "not a regular file"));
    if (sb.st_size < 0 || (uint64_t)sb.st_size > max)
        return ed_error_set(ED_ETOOBIG, "file of %lld bytes is over the %zu-byte limit",
                            (long long)sb.st_size, max);
    size = (size_t)sb.st_size;
    if ((buf = malloc(size + 1)) == NULL)
        return ed_error_set(ED_ENOMEM, "read a file of %zu bytes", size);
    while (got < size) {
        ssize_t n = pread(fd, buf + got, size - got, (off_t)got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            int e = errno;
            free(buf);
            return with_errno(e, ed_error_set(ED_EIO, "read: %s", strerror(e)));
        }
        if (n == 0)
            break;      /* shrank meanwhile: what is there */
        got += (size_t)n;
    }
    buf[got] = '\0';
    *out_buf = buf;
    *out_len = got;
    return 0;
}

int ed_fs_read_beneath(char **out_buf, size_t *out_len, int root_fd, const char *rel,
                       size_t max)
{
    int fd, err;

    *out_buf = NULL;
    *out_len = 0;
    if ((err = ed_fs_open_beneath(&fd, root_fd, rel, O_RDONLY, 0)) < 0)
        return err;
    if ((err = ed_fs_read_fd(out_buf, out_len, fd, max)) < 0) {
        char msg[512];
        int e = errno;
        snprintf(msg, sizeof(msg), "%s", ed_error_last());
        err = with_errno(e, ed_error_set(err, "%s: %s", rel, msg));
    }
    close(fd);
    return err;
}

/* ---- walk ------------------------------------------------------------------- */

typedef struct walker {
    ed_fs_walk_fn fn;
    void         *payload;
    int           max_depth;
    size_t        max_entries, count;
    char          path[ED_FS_PATH_MAX + 1];
} walker;

/* Read the directory open at `dfd` (taken over), whose path is w->path[0, plen). */
static int walk_dir(walker *w, int dfd, size_t plen, int depth)
{
    DIR *d = fdopendir(dfd);
    struct dirent *e;
    int err = 0;

    if (d == NULL) {
        close(dfd);
        return 0;       /* unreadable: skipped */
    }
    while (err == 0 && (e = readdir(d)) != NULL) {
        struct stat sb;
        size_t nlen = strlen(e->d_name), len = plen + (plen ? 1 : 0) + nlen;
        int rc;

        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        if (len > ED_FS_PATH_MAX)
            continue;
        if (fstatat(dirfd(d), e->d_name, &sb, AT_SYMLINK_NOFOLLOW) < 0)
            continue;
        if (!S_ISREG(sb.st_mode) && !S_ISDIR(sb.st_mode))
            continue;   /* links, FIFOs, sockets, devices */
        if (w->count == w->max_entries) {
            err = ed_error_set(ED_ETOOBIG, "more than %zu entries", w->max_entries);
            break;
        }
        if (plen)
            w->path[plen] = '/';
        memcpy(w->path + plen + (plen ? 1 : 0), e->d_name, nlen + 1);
        w->count++;
        rc = w->fn(w->path, &sb, w->payload);
        if (rc < 0) {
            err = rc;
        } else if (S_ISDIR(sb.st_mode) && rc != ED_FS_WALK_SKIP && depth < w->max_depth) {
            /* a directory swapped for a link since the lstat: ELOOP/ENOTDIR, skipped */
            int sub = openat(dirfd(d), e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            if (sub >= 0)
                err = walk_dir(w, sub, len, depth + 1);
        }
        w->path[plen] = '\0';
    }
    closedir(d);
    return err;
}

int ed_fs_walk(int root_fd, int max_depth, size_t max_entries, ed_fs_walk_fn fn, void *payload)
{
    walker *w;
    int dfd, err;

    /* its own open file description: the caller's offset is not moved */
    if ((dfd = openat(root_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
        int e = errno;
        return with_errno(e, ed_error_set(ED_EIO, "read directory: %s", strerror(e)));
    }
    if ((w = calloc(1, sizeof(*w))) == NULL) {
        close(dfd);
        return ed_error_set(ED_ENOMEM, "directory walk");
    }
    w->fn = fn;
    w->payload = payload;
    w->max_depth = max_depth;
    w->max_entries = max_entries;
    err = walk_dir(w, dfd, 0, 0);
    free(w);
    return err;
}
