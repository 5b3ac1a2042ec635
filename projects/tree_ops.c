/* Changes to the shape of a project's working tree: move or rename a file or
 * folder, make a folder, remove a folder with everything in it (proj.h,
 * "tree changes").
 *
 * The tree is user-writable and hostile: code in a running kernel can swap
 * any directory for a symbolic link at any moment. So, as in files.c, every
 * step starts at the project's directory descriptor and walks one component
 * at a time with O_NOFOLLOW (ed_fs_open_parent); the last step is a single
 * *at() call on the parent's descriptor (renameat2, mkdirat, unlinkat), which
 * acts on the name itself and never follows a link there. A link planted in
 * the path is refused (ED_EINVAL); one planted at the last component after we
 * looked is moved or unlinked as a link, inside the tree. All under the
 * project's lock, as the other file operations. */
#include "proj_int.h"

#include "ed_error.h"
#include "ed_fs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef RENAME_NOREPLACE
#define RENAME_NOREPLACE (1 << 0)
#endif

/* A folder nested deeper than this (only a kernel can make one: paths of the
 * API stop at 64 segments) is not removed: the recursion holds a descriptor
 * per level. */
#define RM_MAX_DEPTH 256

/* Largest notebook read to validate it when a file is renamed to .ipynb. */
#define NB_MOVE_MAX ((size_t)1 << 30)

static int check_path(const char *path)
{
    return proj_path_validate(path, path ? strlen(path) : 0);
}

static bool ends_with_ipynb(const char *path)
{
    size_t n = strlen(path);
    return n >= 6 && strcasecmp(path + n - 6, ".ipynb") == 0;
}

/* `name` in `dir` as an entry for `path` (directories have size 0). */
static int entry_at(proj_file **out, bool *out_dir, int dir, const char *name, const char *path)
{
    struct stat sb;
    proj_file *f;

    if (fstatat(dir, name, &sb, AT_SYMLINK_NOFOLLOW) < 0)
        return ed_error_set(errno == ENOENT ? ED_ENOTFOUND : ED_EIO, "stat %s: %s", path,
                            strerror(errno));
    if (out_dir)
        *out_dir = S_ISDIR(sb.st_mode);
    if (out == NULL)
        return 0;
    if ((f = calloc(1, sizeof(*f))) == NULL || (f->path = strdup(path)) == NULL) {
        free(f);
        return ed_error_set(ED_ENOMEM, "file entry");
    }
    f->size = S_ISREG(sb.st_mode) ? sb.st_size : 0;
    f->modified_at = (int64_t)sb.st_mtim.tv_sec * 1000 + sb.st_mtim.tv_nsec / 1000000;
    *out = f;
    return 0;
}

/* What `name` in `dir` is: 'f' a regular file, 'd' a directory; a link or
 * anything else is refused, a missing one ED_ENOTFOUND. */
static int kind_at(char *out, int dir, const char *name, const char *path)
{
    struct stat sb;

    if (fstatat(dir, name, &sb, AT_SYMLINK_NOFOLLOW) < 0)
        return errno == ENOENT ? ed_error_set(ED_ENOTFOUND, "no file or folder %s", path)
                               : ed_error_set(ED_EIO, "stat %s: %s", path, strerror(errno));
    if (S_ISLNK(sb.st_mode))
        return ed_error_set(ED_EINVAL, "%s is a symbolic link; links are not followed", path);
    if (S_ISREG(sb.st_mode))
        *out = 'f';
    else if (S_ISDIR(sb.st_mode))
        *out = 'd';
    else
        return ed_error_set(ED_EINVAL, "%s is neither a file nor a folder", path);
    return 0;
}

/* A file renamed to .ipynb must be a notebook, as a write there must be. */
static int check_notebook(int dir, const char *name, const char *from, const char *to)
{
    char *buf = NULL;
    size_t len = 0;
    int fd, err;

    if ((fd = openat(dir, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK)) < 0)
        return ed_error_set(errno == ENOENT ? ED_ENOTFOUND : ED_EIO, "open %s: %s", from,
                            strerror(errno));
    err = ed_fs_read_fd(&buf, &len, fd, NB_MOVE_MAX);
    close(fd);
    if (err < 0)
        return err == ED_ENOTFOUND ? ed_error_set(ED_EINVAL, "%s is not a regular file", from)
                                   : err;
    if ((err = proj_nb_validate(buf, len)) < 0) {
        char msg[1024];
        snprintf(msg, sizeof(msg), "%s", ed_error_last());
        err = ed_error_set(ED_EUNPROC, "%s cannot become %s: not a notebook (%s)", from, to, msg);
    }
    free(buf);
    return err;
}

/* renameat2(RENAME_NOREPLACE), or where the filesystem lacks the flag
 * (EINVAL), a check then a plain rename: under the project's lock the API
 * cannot race it, only a kernel could. A folder moved into itself fails with
 * EINVAL either way. 0 or -1 with errno. */
static int rename_noreplace(int fdir, const char *fname, int tdir, const char *tname)
{
    struct stat sb;

    if (renameat2(fdir, fname, tdir, tname, RENAME_NOREPLACE) == 0)
        return 0;
    if (errno != EINVAL)
        return -1;
    if (fstatat(tdir, tname, &sb, AT_SYMLINK_NOFOLLOW) == 0) {
        errno = EEXIST;
        return -1;
    }
    return renameat(fdir, fname, tdir, tname);
}

int proj_file_move(proj_file **out, bool *out_dir, proj_root *r, int64_t user_id,
                   const char *id, const char *from, const char *to)
{
    proj *p = NULL;
    const char *fname, *tname;
    int base = -1, fdir = -1, tdir = -1, created = 0, err;
    size_t n;
    char kind = 0;

    if (out)
        *out = NULL;
    if (out_dir)
        *out_dir = false;
    if ((err = check_path(from)) < 0 || (err = check_path(to)) < 0)
        return err;
    n = strlen(from);
    if (strncmp(to, from, n) == 0 && to[n] == '/')
        return ed_error_set(ED_EINVAL, "cannot move %s into itself", from);
    proj__lock(r, id);
    if ((err = proj__load(&p, r, user_id, id, PROJ__WRITE)) < 0 ||
        (err = proj__open_dir(&base, r, id)) < 0 ||
        (err = proj__open_parent(&fdir, &fname, NULL, base, from, false)) < 0 ||
        (err = kind_at(&kind, fdir, fname, from)) < 0)
        goto done;
    if (strcmp(from, to) == 0) {   /* nothing to move: the entry as it is */
        err = entry_at(out, out_dir, fdir, fname, to);
        goto done;
    }
    if (kind == 'f' && ends_with_ipynb(to) && !ends_with_ipynb(from) &&
        (err = check_notebook(fdir, fname, from, to)) < 0)
        goto done;
    if ((err = proj__open_parent(&tdir, &tname, &created, base, to, true)) < 0)
        goto done;
    if (rename_noreplace(fdir, fname, tdir, tname) < 0) {
        int e = errno;
        if (e == EEXIST || e == ENOTEMPTY)
            err = ed_error_set(ED_EEXISTS, "%s exists", to);
        else if (e == ENOENT)
            err = ed_error_set(ED_ENOTFOUND, "no file or folder %s", from);
        else if (e == EINVAL)
            err = ed_error_set(ED_EINVAL, "cannot move %s into itself", from);
        else if (e == ENOTDIR || e == EISDIR)
            err = ed_error_set(ED_ECONFLICT, "move %s to %s: %s", from, to, strerror(e));
        else
            err = ed_error_set(proj__io_code(e), "move %s to %s: %s", from, to, strerror(e));
        proj__undo_mkdirs(base, to, created);
        goto done;
    }
    fsync(tdir);
    if (tdir != fdir)
        fsync(fdir);
    err = entry_at(out, out_dir, tdir, tname, to);
    proj__touch(r, id);
done:
    if (fdir >= 0)
        close(fdir);
    if (tdir >= 0)
        close(tdir);
    if (base >= 0)
        close(base);
    proj__unlock(r, id);
    proj_free(p);
    return err;
}

int proj_dir_create(proj_file **out, proj_root *r, int64_t user_id, const char *id,
                    const char *path)
{
    proj *p = NULL;
    const char *name;
    int base = -1, dir = -1, created = 0, err;

    if (out)
        *out = NULL;
    if ((err = check_path(path)) < 0)
        return err;
    proj__lock(r, id);
    if ((err = proj__load(&p, r, user_id, id, PROJ__WRITE)) < 0 ||
        (err = proj__open_dir(&base, r, id)) < 0 ||
        (err = proj__open_parent(&dir, &name, &created, base, path, true)) < 0)
        goto done;
    if (mkdirat(dir, name, 0755) < 0) {
        int e = errno;
        err = e == EEXIST ? ed_error_set(ED_EEXISTS, "%s exists", path)
                          : ed_error_set(proj__io_code(e), "make folder %s: %s", path, strerror(e));
        proj__undo_mkdirs(base, path, created);
        goto done;
    }
    fsync(dir);
    err = entry_at(out, NULL, dir, name, path);
    proj__touch(r, id);
done:
    if (dir >= 0)
        close(dir);
    if (base >= 0)
        close(base);
    proj__unlock(r, id);
    proj_free(p);
    return err;
}

/* Remove `name` in `at` and, for a directory, everything below it, never
 * following a link: each level is opened with O_NOFOLLOW from its parent's
 * descriptor, so a directory swapped for a link meanwhile fails to open
 * (ED_EIO) instead of being entered, and a link is unlinked as itself.
 * Goes on after a failure and returns the first. */
static int rm_tree(int at, const char *name, int depth)
{
    struct stat sb;
    struct dirent *e;
    DIR *d;
    int fd, err = 0;

    if (fstatat(at, name, &sb, AT_SYMLINK_NOFOLLOW) < 0)
        return errno == ENOENT ? 0 : ed_error_set(ED_EIO, "stat %s: %s", name, strerror(errno));
    if (!S_ISDIR(sb.st_mode)) {
        if (unlinkat(at, name, 0) < 0 && errno != ENOENT)
            return ed_error_set(ED_EIO, "delete %s: %s", name, strerror(errno));
        return 0;
    }
    if (depth >= RM_MAX_DEPTH)
        return ed_error_set(ED_EIO, "folders nested deeper than %d levels are not removed",
                            RM_MAX_DEPTH);
    if ((fd = openat(at, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0)
        return errno == ENOENT ? 0 : ed_error_set(ED_EIO, "open %s: %s", name, strerror(errno));
    if ((d = fdopendir(fd)) == NULL) {
        close(fd);
        return ed_error_set(ED_EIO, "read %s: %s", name, strerror(errno));
    }
    while ((e = readdir(d)) != NULL) {
        int rc;
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        if ((rc = rm_tree(dirfd(d), e->d_name, depth + 1)) < 0 && err == 0)
            err = rc;
    }
    closedir(d);
    if (err == 0 && unlinkat(at, name, AT_REMOVEDIR) < 0 && errno != ENOENT)
        err = ed_error_set(errno == ENOTEMPTY ? ED_ECONFLICT : ED_EIO,
                           "remove folder %s: %s%s", name, strerror(errno),
                           errno == ENOTEMPTY ? " (something wrote into it meanwhile)" : "");
    return err;
}

int proj_dir_delete(proj_root *r, int64_t user_id, const char *id, const char *path)
{
    proj *p = NULL;
    const char *name;
    int base = -1, dir = -1, err;
    char kind = 0;

    if ((err = check_path(path)) < 0)
        return err;
    proj__lock(r, id);
    if ((err = proj__load(&p, r, user_id, id, PROJ__WRITE)) < 0 ||
        (err = proj__open_dir(&base, r, id)) < 0 ||
        (err = proj__open_parent(&dir, &name, NULL, base, path, false)) < 0 ||
        (err = kind_at(&kind, dir, name, path)) < 0)
        goto done;
    if (kind != 'd') {
        err = ed_error_set(ED_ENOTFOUND, "no folder %s (it is a file)", path);
        goto done;
    }
    err = rm_tree(dir, name, 0);
    fsync(dir);
    proj__touch(r, id);   /* also after a partial removal: the size changed */
done:
    if (dir >= 0)
        close(dir);
    if (base >= 0)
        close(base);
    proj__unlock(r, id);
    proj_free(p);
    return err;
}
