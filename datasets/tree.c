/*
 * tree.c - a version's read-only tree, DATA/datasets/trees/<id>/<n>/, for
 * kernels and jobs to bind-mount: hard links to the blobs (0444, so a byte
 * is never copied), directories 0555. Built in trees/<id>/.tmp-<uuid> and
 * renamed into place, so a tree is whole or absent; one build at a time.
 */
#include "ds_int.h"

#include "ed_crypto.h"
#include "ed_error.h"
#include "ed_fs.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int ds__tree_remove(ds *d, const char *id, int64_t number)
{
    char n[24];
    int fd, err;

    if (number == 0)
        return ds__remove_all(d->trees_fd, id);
    if ((fd = openat(d->trees_fd, id, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0)
        return 0;
    snprintf(n, sizeof(n), "%lld", (long long)number);
    fchmodat(fd, n, 0755, 0);
    err = ds__remove_all(fd, n);
    close(fd);
    return err;
}

static int seal_dir(const char *rel, const struct stat *sb, void *payload)
{
    int root = *(int *)payload;

    if (S_ISDIR(sb->st_mode) && fchmodat(root, rel, 0555, 0) < 0)
        return ed_error_set(ED_EIO, "chmod %s: %s", rel, strerror(errno));
    return 0;
}

/* Link every file of `files` beneath the directory tmp_fd. */
static int populate(ds *d, int tmp_fd, const ds_file_list *files)
{
    for (size_t i = 0; i < files->count; i++) {
        const ds_file *f = &files->items[i];
        char blob[4 + DS_SHA256_LEN];
        const char *name;
        int dir, err;

        /* paths were checked when they entered the draft; checked again
         * here, and the walk below cannot leave tmp_fd whatever they hold */
        if ((err = ds_path_validate(f->path, strlen(f->path))) < 0)
            return err;
        if ((err = ed_fs_open_parent(&dir, &name, NULL, tmp_fd, f->path, true, 0755)) < 0)
            return ed_error_set(err == ED_ENOTFOUND ? ED_EINVAL : err, "tree: '%.200s': %s", f->path,
                                errno == ENOTDIR ? "a file of the same name is in the way" : ed_error_last());
        snprintf(blob, sizeof(blob), "%.2s/%s", f->sha256, f->sha256);
        if (linkat(d->blobs_fd, blob, dir, name, 0) < 0) {
            err = ed_error_set(ED_EIO, "tree: link '%.200s' to blob %s: %s", f->path, f->sha256, strerror(errno));
            close(dir);
            return err;
        }
        close(dir);
    }
    return 0;
}

/* Build version n of `id` as trees/<id>/<n>. The temporary tree is made in
 * trees/<id>/ itself: renaming a directory to another parent needs write
 * permission on the directory (its ".." changes), which a sealed 0555 tree
 * does not give an unprivileged server; within one parent it needs none. */
static int build(ds *d, const char *id, int64_t n)
{
    char tmp[16 + ED_UUID_LEN], uuid[ED_UUID_LEN], num[24];
    ds_file_list *files = NULL;
    int dir_fd = -1, tmp_fd = -1, err;

    ed_uuid4(uuid);
    snprintf(tmp, sizeof(tmp), ".tmp-%s", uuid);
    snprintf(num, sizeof(num), "%lld", (long long)n);
    if ((err = ds__files_load(&files, d, id, n)) < 0)
        return err;
    if ((mkdirat(d->trees_fd, id, 0755) < 0 && errno != EEXIST) ||
        (dir_fd = openat(d->trees_fd, id, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0) {
        err = ed_error_set(ED_EIO, "tree: mkdir %s: %s", id, strerror(errno));
        goto done;
    }
    if (mkdirat(dir_fd, tmp, 0755) < 0 ||
        (tmp_fd = openat(dir_fd, tmp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0) {
        err = ed_error_set(ED_EIO, "tree: mkdir: %s", strerror(errno));
        goto done;
    }
    if ((err = populate(d, tmp_fd, files)) < 0)
        goto done;
    if ((err = ed_fs_walk(tmp_fd, DS_PATH_DEPTH + 1, (size_t)DS_FILES_MAX * (DS_PATH_DEPTH + 1), seal_dir,
                          &tmp_fd)) < 0)
        goto done;
    if (fchmod(tmp_fd, 0555) < 0 || syncfs(tmp_fd) < 0) {
        err = ed_error_set(ED_EIO, "tree: seal: %s", strerror(errno));
        goto done;
    }
    if (renameat(dir_fd, tmp, dir_fd, num) < 0) {
        err = ed_error_set(ED_EIO, "tree: rename into %s/%s: %s", id, num, strerror(errno));
        goto done;
    }
    fsync(dir_fd);
done:
    if (tmp_fd >= 0)
        close(tmp_fd);
    if (err < 0 && dir_fd >= 0)
        ds__remove_all(dir_fd, tmp);
    if (dir_fd >= 0)
        close(dir_fd);
    ds_file_list_free(files);
    return err;
}

int ds_version_tree(char **out, ds *d, int64_t user, const char *id, int64_t number)
{
    char rel[DS_ID_LEN + 24];
    struct stat sb;
    int64_t n;
    int err;

    *out = NULL;
    /* access, and the number `number` stands for (0: the latest) */
    if ((err = ds__access(d, user, id, false, NULL)) < 0 || (err = ds__version_resolve(&n, d, id, number)) < 0)
        return err;
    snprintf(rel, sizeof(rel), "%s/%lld", id, (long long)n);
    pthread_mutex_lock(&d->tree_mu);
    if (fstatat(d->trees_fd, rel, &sb, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(sb.st_mode))
        err = build(d, id, n);
    pthread_mutex_unlock(&d->tree_mu);
    if (err < 0)
        return err;
    if (asprintf(out, "%s/trees/%s", d->root, rel) < 0) {
        *out = NULL;
        return ed_error_set(ED_ENOMEM, "tree path");
    }
    return 0;
}
