/*
 * blob_writer.c - a blob written piece by piece (blob_writer.h).
 */
#include "blob_writer.h"

#include "ed_crypto.h"
#include "ed_error.h"

#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct ds_blobw {
    ds *d;
    EVP_MD_CTX *ctx;
    int fd;
    int64_t size;
    char name[48 + ED_UUID_LEN];
};

int ds__blobw_open(ds_blobw **out, ds *d, const char *prefix)
{
    ds_blobw *w;
    char uuid[ED_UUID_LEN];

    *out = NULL;
    if ((w = calloc(1, sizeof(*w))) == NULL || (w->ctx = EVP_MD_CTX_new()) == NULL ||
        EVP_DigestInit_ex(w->ctx, EVP_sha256(), NULL) != 1) {
        if (w)
            EVP_MD_CTX_free(w->ctx);
        free(w);
        return ed_error_set(ED_ENOMEM, "blob");
    }
    w->d = d;
    ed_uuid4(uuid);
    snprintf(w->name, sizeof(w->name), "%.32s-%s", prefix, uuid);
    if ((w->fd = openat(d->tmp_fd, w->name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600)) < 0) {
        int e = errno;
        EVP_MD_CTX_free(w->ctx);
        free(w);
        return ed_error_set(ED_EIO, "create datasets/tmp/%s-*: %s", prefix, strerror(e));
    }
    *out = w;
    return 0;
}

int ds__blobw_write(ds_blobw *w, const void *buf, size_t n)
{
    const char *p = buf;

    for (size_t done = 0; done < n;) {
        ssize_t k = write(w->fd, p + done, n - done);
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0)
            return ed_error_set(errno == ENOSPC || errno == EDQUOT ? ED_EQUOTA : ED_EIO, "write datasets/tmp: %s",
                                strerror(errno));
        done += (size_t)k;
    }
    EVP_DigestUpdate(w->ctx, buf, n);
    w->size += (int64_t)n;
    return 0;
}

int64_t ds__blobw_size(const ds_blobw *w)
{
    return w->size;
}

void ds__blobw_abort(ds_blobw *w)
{
    if (!w)
        return;
    if (w->fd >= 0)
        close(w->fd);
    unlinkat(w->d->tmp_fd, w->name, 0);
    EVP_MD_CTX_free(w->ctx);
    free(w);
}

int ds__blobw_finish(char out_sha[DS_SHA256_LEN], int64_t *out_size, ds_blobw *w)
{
    static const char digits[] = "0123456789abcdef";
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned mdlen = 0;
    int err;

    EVP_DigestFinal_ex(w->ctx, md, &mdlen);
    for (int i = 0; i < 32; i++) {
        out_sha[2 * i] = digits[md[i] >> 4];
        out_sha[2 * i + 1] = digits[md[i] & 15];
    }
    out_sha[64] = '\0';
    close(w->fd);
    w->fd = -1;
    /* ds__blob_place fsyncs, makes it 0444, links it and unlinks the name */
    if ((err = ds__blob_place(w->d, w->d->tmp_fd, w->name, out_sha, false)) == 0)
        *out_size = w->size;
    ds__blobw_abort(w);         /* the name is gone already on success: unlink is a no-op */
    return err;
}
