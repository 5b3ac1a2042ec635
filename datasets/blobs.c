/*
 * blobs.c - the content-addressed store: DATA/datasets/blobs/ab/<sha256>.
 *
 * A blob is written to DATA/datasets/tmp/ (or is an upload's finished file),
 * fsync'd, made 0444 and linked into place with linkat(), which never
 * replaces: EEXIST means the same bytes are stored already (dedup), and the
 * temporary name is simply unlinked. The blob's row is written afterwards by
 * the caller, in the transaction that references it, so a file without a row
 * is what a crash left and ds_recover removes it.
 */
#include "ds_int.h"

#include "ed_crypto.h"
#include "ed_error.h"
#include "ed_log.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define IO_BUF (1 << 20)

static void hex(char out[DS_SHA256_LEN], const unsigned char *md)
{
    static const char digits[] = "0123456789abcdef";
    for (int i = 0; i < 32; i++) {
        out[2 * i] = digits[md[i] >> 4];
        out[2 * i + 1] = digits[md[i] & 15];
    }
    out[64] = '\0';
}

int ds__sha256_fd(char out[DS_SHA256_LEN], int64_t *out_size, int fd)
{
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned mdlen;
    char *buf = malloc(IO_BUF);
    int64_t size = 0, off = 0;
    int err = 0;

    if (!ctx || !buf || EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) != 1) {
        err = ed_error_set(ED_ENOMEM, "sha256");
        goto done;
    }
    for (;;) {
        ssize_t n = pread(fd, buf, IO_BUF, off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            err = ed_error_set(ED_EIO, "read for sha256: %s", strerror(errno));
            goto done;
        }
        if (n == 0)
            break;
        EVP_DigestUpdate(ctx, buf, (size_t)n);
        off += n;
        size += n;
    }
    EVP_DigestFinal_ex(ctx, md, &mdlen);
    hex(out, md);
    if (out_size)
        *out_size = size;
done:
    EVP_MD_CTX_free(ctx);
    free(buf);
    return err;
}

int ds__blob_place(ds *d, int dir_fd, const char *name, const char *sha, bool keep)
{
    char sub[3] = {sha[0], sha[1], '\0'};
    int fd = -1, sub_fd = -1, err = 0;

    if ((fd = openat(dir_fd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)) < 0)
        return ed_error_set(ED_EIO, "open %s: %s", name, strerror(errno));
    /* durable bytes before the name that promises them */
    if (fchmod(fd, 0444) < 0 || fsync(fd) < 0) {
        err = ed_error_set(ED_EIO, "fsync blob %s: %s", sha, strerror(errno));
        goto done;
    }
    if (mkdirat(d->blobs_fd, sub, 0755) < 0 && errno != EEXIST) {
        err = ed_error_set(ED_EIO, "mkdir blobs/%s: %s", sub, strerror(errno));
        goto done;
    }
    if ((sub_fd = openat(d->blobs_fd, sub, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0) {
        err = ed_error_set(ED_EIO, "open blobs/%s: %s", sub, strerror(errno));
        goto done;
    }
    if (linkat(dir_fd, name, sub_fd, sha, 0) < 0) {
        if (errno != EEXIST) {
            err = ed_error_set(ED_EIO, "link blob %s: %s", sha, strerror(errno));
            goto done;
        }
        /* stored already: the same bytes, by their hash */
    } else if (fsync(sub_fd) < 0) {
        err = ed_error_set(ED_EIO, "fsync blobs/%s: %s", sub, strerror(errno));
        goto done;
    }
    if (!keep)
        unlinkat(dir_fd, name, 0);
done:
    if (sub_fd >= 0)
        close(sub_fd);
    close(fd);
    return err;
}

int ds__blob_from_fd(char out_sha[DS_SHA256_LEN], int64_t *out_size, ds *d, int src, int64_t max)
{
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned mdlen;
    char name[16 + ED_UUID_LEN];
    char uuid[ED_UUID_LEN];
    char *buf = malloc(IO_BUF);
    int64_t size = 0;
    int fd = -1, err = 0;

    ed_uuid4(uuid);
    snprintf(name, sizeof(name), "put-%s", uuid);
    if (!ctx || !buf || EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) != 1) {
        err = ed_error_set(ED_ENOMEM, "blob");
        goto done;
    }
    if ((fd = openat(d->tmp_fd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600)) < 0) {
        err = ed_error_set(ED_EIO, "create datasets/tmp/%s: %s", name, strerror(errno));
        goto done;
    }
    for (;;) {
        ssize_t n = read(src, buf, IO_BUF);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            err = ed_error_set(ED_EIO, "read: %s", strerror(errno));
            goto done;
        }
        if (n == 0)
            break;
        if (size + n > max) {
            err = ed_error_set(ED_ETOOBIG, "file is larger than the limit of %lld bytes", (long long)max);
            goto done;
        }
        for (ssize_t w = 0; w < n;) {
            ssize_t k = write(fd, buf + w, (size_t)(n - w));
            if (k < 0 && errno == EINTR)
                continue;
            if (k < 0) {
                err = ed_error_set(errno == ENOSPC || errno == EDQUOT ? ED_EQUOTA : ED_EIO,
                                   "write datasets/tmp: %s", strerror(errno));
                goto done;
            }
            w += k;
        }
        EVP_DigestUpdate(ctx, buf, (size_t)n);
        size += n;
    }
    EVP_DigestFinal_ex(ctx, md, &mdlen);
    hex(out_sha, md);
    close(fd);
    fd = -1;
    if ((err = ds__blob_place(d, d->tmp_fd, name, out_sha, false)) < 0)
        goto done;
    *out_size = size;
done:
    if (fd >= 0)
        close(fd);
    if (err < 0)
        unlinkat(d->tmp_fd, name, 0);
    EVP_MD_CTX_free(ctx);
    free(buf);
    return err;
}

/* ---- media types --------------------------------------------------------- */

const char *ds__media_type(const char *path)
{
    static const struct {
        const char *ext, *type;
    } table[] = {
        {"csv", "text/csv"},          {"tsv", "text/tab-separated-values"},
        {"txt", "text/plain"},        {"md", "text/markdown"},
        {"json", "application/json"}, {"jsonl", "application/x-ndjson"},
        {"parquet", "application/vnd.apache.parquet"},
        {"png", "image/png"},         {"jpg", "image/jpeg"},
        {"jpeg", "image/jpeg"},       {"gif", "image/gif"},
        {"webp", "image/webp"},       {"bmp", "image/bmp"},
        {"zip", "application/zip"},   {"tar", "application/x-tar"},
        {"gz", "application/gzip"},   {"npy", "application/x-npy"},
        {"npz", "application/x-npz"}, {"safetensors", "application/x-safetensors"},
        {"pdparams", "application/octet-stream"},
        {"py", "text/x-python"},      {"ipynb", "application/x-ipynb+json"},
        {"xml", "application/xml"},   {"html", "text/html"},
        {"wav", "audio/wav"},         {"mp3", "audio/mpeg"},
        {"mp4", "video/mp4"},         {"yaml", "application/yaml"},
        {"yml", "application/yaml"},
    };
    const char *slash = strrchr(path, '/');
    const char *dot = strrchr(slash ? slash + 1 : path, '.');

    if (dot && dot[1])
        for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++)
            if (strcasecmp(dot + 1, table[i].ext) == 0)
                return table[i].type;
    return "application/octet-stream";
}

/* ---- removing trees ------------------------------------------------------ */

static int remove_dir_contents(int fd, int depth)
{
    DIR *dir;
    struct dirent *e;
    int err = 0;

    if (depth > 2 * DS_PATH_DEPTH + 8) {
        close(fd);
        return ed_error_set(ED_EIO, "tree too deep to remove");
    }
    if ((dir = fdopendir(fd)) == NULL) {
        close(fd);
        return ed_error_set(ED_EIO, "opendir: %s", strerror(errno));
    }
    while ((e = readdir(dir)) != NULL) {
        struct stat sb;
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        if (fstatat(fd, e->d_name, &sb, AT_SYMLINK_NOFOLLOW) < 0)
            continue;
        if (S_ISDIR(sb.st_mode)) {
            int sub;
            fchmodat(fd, e->d_name, 0755, 0);
            if ((sub = openat(fd, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) >= 0) {
                int r = remove_dir_contents(sub, depth + 1);
                if (r < 0 && err == 0)
                    err = r;
            }
            if (unlinkat(fd, e->d_name, AT_REMOVEDIR) < 0 && err == 0)
                err = ed_error_set(ED_EIO, "rmdir %s: %s", e->d_name, strerror(errno));
        } else if (unlinkat(fd, e->d_name, 0) < 0 && err == 0) {
            err = ed_error_set(ED_EIO, "unlink %s: %s", e->d_name, strerror(errno));
        }
    }
    closedir(dir);
    return err;
}

int ds__remove_all(int dir_fd, const char *name)
{
    struct stat sb;
    int fd, err;

    if (fstatat(dir_fd, name, &sb, AT_SYMLINK_NOFOLLOW) < 0)
        return errno == ENOENT ? 0 : ed_error_set(ED_EIO, "stat %s: %s", name, strerror(errno));
    if (!S_ISDIR(sb.st_mode)) {
        if (unlinkat(dir_fd, name, 0) < 0 && errno != ENOENT)
            return ed_error_set(ED_EIO, "unlink %s: %s", name, strerror(errno));
        return 0;
    }
    fchmodat(dir_fd, name, 0755, 0);
    if ((fd = openat(dir_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0)
        return ed_error_set(ED_EIO, "open %s: %s", name, strerror(errno));
    err = remove_dir_contents(fd, 0);
    if (unlinkat(dir_fd, name, AT_REMOVEDIR) < 0 && errno != ENOENT && err == 0)
        err = ed_error_set(ED_EIO, "rmdir %s: %s", name, strerror(errno));
    return err;
}
