/*
 * uploads.c - resumable uploads: DATA/datasets/uploads/<id> and a row whose
 * durable_offset says how many bytes are safely on disk.
 *
 * A chunk must start at the durable offset (anything else is ED_ECONFLICT:
 * it would overlap or leave a hole). Beginning it cuts off whatever a
 * dropped chunk left past the offset; its bytes are streamed with pwrite;
 * ending it fdatasyncs and only then moves the offset, so the offset never
 * promises bytes a crash could lose. One chunk per upload at a time (an
 * in-memory set; the server is one process). When the offset reaches the
 * declared size the file's sha256 is checked and the file becomes a blob
 * and a draft file in one transaction, which also deletes the upload's row.
 *
 * Speed (tests/bench/dataset_upload.sh): the sha256 is computed as the bytes
 * arrive, and its state (OpenSSL's SHA256_CTX, a plain struct) is saved in
 * the row with the offset it belongs to, in the same UPDATE; so finishing
 * never reads the file again, and a restart resumes the hash where the
 * durable bytes end (a state that is missing or does not fit is rebuilt by
 * hashing the file's durable prefix once). While a chunk streams in, its
 * written pages are handed to writeback every DS_WRITEBACK_BYTES
 * (sync_file_range, not waiting), so the fdatasync at its end waits for the
 * tail only instead of the whole chunk.
 */
/* SHA256_Init/Update/Final: deprecated in OpenSSL 3 for EVP, whose context
 * cannot be saved; the struct is what makes the hash resumable. */
#define OPENSSL_SUPPRESS_DEPRECATED 1
#include "ds_int.h"

#include "ed_crypto.h"
#include "ed_error.h"
#include "ed_time.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <openssl/sha.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define DS_UPLOADS_PER_DATASET 1000     /* open uploads one dataset may have */
#define DS_WRITEBACK_BYTES (8 << 20)    /* start writeback of a chunk's pages this often */
#define DS_HASH_STATE_TAG 0x53483235u   /* "SH25": a saved state starts with it */

/* What dataset_uploads.hash_state holds: the tag, the offset the state has
 * hashed to, OpenSSL's context. */
typedef struct hash_state {
    uint32_t tag, ctx_size;
    int64_t offset;
    SHA256_CTX ctx;
} hash_state;

struct ds_upload_chunk {
    ds *d;
    char id[DS_ID_LEN];
    char dataset_id[DS_ID_LEN];
    char *path;
    char sha256[DS_SHA256_LEN];         /* declared */
    int64_t size, start, written;
    int64_t kicked;                     /* bytes of this chunk handed to writeback */
    int fd;
    bool broken;                        /* a write failed or overran: only abort is left */
    bool hash_ok;                       /* upload_load found a saved state for the offset */
    SHA256_CTX sha;                     /* of bytes [0, start + written) */
};

/* ---- the set of uploads with a chunk open -------------------------------- */

static int mark_open(ds *d, const char *id)
{
    struct ds_open_upload *u;

    pthread_mutex_lock(&d->mu);
    for (u = d->open_uploads; u; u = u->next)
        if (strcmp(u->id, id) == 0) {
            pthread_mutex_unlock(&d->mu);
            return ed_error_set(ED_ECONFLICT, "a chunk of upload %s is being written", id);
        }
    if ((u = calloc(1, sizeof(*u))) == NULL) {
        pthread_mutex_unlock(&d->mu);
        return ed_error_set(ED_ENOMEM, "upload");
    }
    snprintf(u->id, sizeof(u->id), "%s", id);
    u->next = d->open_uploads;
    d->open_uploads = u;
    pthread_mutex_unlock(&d->mu);
    return 0;
}

static void mark_closed(ds *d, const char *id)
{
    pthread_mutex_lock(&d->mu);
    for (struct ds_open_upload **p = &d->open_uploads; *p; p = &(*p)->next)
        if (strcmp((*p)->id, id) == 0) {
            struct ds_open_upload *u = *p;
            *p = u->next;
            free(u);
            break;
        }
    pthread_mutex_unlock(&d->mu);
}

/* ---- open, status, cancel ------------------------------------------------ */

static int sha_check(char out[DS_SHA256_LEN], const char *s)
{
    if (!s || strlen(s) != 64)
        return ed_error_set(ED_EINVAL, "sha256 must be 64 hexadecimal digits");
    for (int i = 0; i < 64; i++) {
        if (!isxdigit((unsigned char)s[i]))
            return ed_error_set(ED_EINVAL, "sha256 must be 64 hexadecimal digits");
        out[i] = (char)tolower((unsigned char)s[i]);
    }
    out[64] = '\0';
    return 0;
}

int ds_upload_open(char out_id[DS_ID_LEN], ds *d, int64_t user, const char *id, const char *path, int64_t size,
                   const char *sha256, int64_t quota_bytes)
{
    char sha[DS_SHA256_LEN], uid[ED_UUID_LEN];
    sqlite3_stmt *q = NULL;
    int64_t owner, now = ed_now_ms();
    int fd, rc, err;

    out_id[0] = '\0';
    if ((err = ds__access(d, user, id, true, &owner)) < 0 || (err = ds_path_validate(path, strlen(path))) < 0 ||
        (err = sha_check(sha, sha256)) < 0)
        return err;
    if (size < 0)
        return ed_error_set(ED_EINVAL, "size %lld is negative", (long long)size);
    if (size > d->lim.file_max_bytes)
        return ed_error_set(ED_ETOOBIG, "a file of %lld bytes is larger than the limit of %lld bytes",
                            (long long)size, (long long)d->lim.file_max_bytes);
    if ((err = ds__quota_check_blob(d, owner, sha, size, quota_bytes)) < 0)
        return err;
    if ((err = ed_store_prepare(&q, d->st, "SELECT COUNT(*) FROM dataset_uploads WHERE dataset_id = ?")) < 0)
        return err;
    sqlite3_bind_text(q, 1, id, -1, SQLITE_STATIC);
    rc = sqlite3_step(q);
    if (rc == SQLITE_ROW && sqlite3_column_int64(q, 0) >= DS_UPLOADS_PER_DATASET)
        err = ed_error_set(ED_ELIMIT, "dataset %s has %d uploads open: finish or cancel some", id,
                           DS_UPLOADS_PER_DATASET);
    sqlite3_finalize(q);
    if (err < 0)
        return err;
    ed_uuid4(uid);
    /* the file first: a file without a row is removed at the next start */
    if ((fd = openat(d->uploads_fd, uid, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600)) < 0)
        return ed_error_set(ED_EIO, "create upload file: %s", strerror(errno));
    close(fd);
    if ((err = ed_store_prepare(&q, d->st,
                                "INSERT INTO dataset_uploads (id, dataset_id, user_id, path, size, sha256, "
                                "durable_offset, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, 0, ?, ?)")) < 0)
        goto fail;
    sqlite3_bind_text(q, 1, uid, -1, SQLITE_STATIC);
    sqlite3_bind_text(q, 2, id, -1, SQLITE_STATIC);
    sqlite3_bind_int64(q, 3, user);
    sqlite3_bind_text(q, 4, path, -1, SQLITE_STATIC);
    sqlite3_bind_int64(q, 5, size);
    sqlite3_bind_text(q, 6, sha, -1, SQLITE_STATIC);
    sqlite3_bind_int64(q, 7, now);
    sqlite3_bind_int64(q, 8, now);
    rc = ed_store_step(q);
    sqlite3_finalize(q);
    if (rc != SQLITE_DONE) {
        err = ed_store_error(ed_store_db(d->st), rc, "open upload");
        goto fail;
    }
    memcpy(out_id, uid, DS_ID_LEN);
    return 0;
fail:
    unlinkat(d->uploads_fd, uid, 0);
    return err;
}

/* The upload's row, when it is `user`'s. */
static int upload_load(ds_upload_chunk *c, ds *d, int64_t user, const char *upload_id, int64_t *out_offset)
{
    sqlite3_stmt *q = NULL;
    int rc, err;

    if (!upload_id || strlen(upload_id) >= DS_ID_LEN)
        return ed_error_set(ED_ENOTFOUND, "no upload %.40s", upload_id ? upload_id : "");
    if ((err = ed_store_prepare(&q, d->st,
                                "SELECT dataset_id, path, size, sha256, durable_offset, hash_state "
                                "FROM dataset_uploads WHERE id = ? AND user_id = ?")) < 0)
        return err;
    sqlite3_bind_text(q, 1, upload_id, -1, SQLITE_STATIC);
    sqlite3_bind_int64(q, 2, user);
    rc = sqlite3_step(q);
    if (rc == SQLITE_ROW) {
        snprintf(c->id, sizeof(c->id), "%s", upload_id);
        snprintf(c->dataset_id, sizeof(c->dataset_id), "%s", (const char *)sqlite3_column_text(q, 0));
        if ((c->path = strdup((const char *)sqlite3_column_text(q, 1))) == NULL)
            err = ed_error_set(ED_ENOMEM, "upload");
        c->size = sqlite3_column_int64(q, 2);
        snprintf(c->sha256, sizeof(c->sha256), "%s", (const char *)sqlite3_column_text(q, 3));
        *out_offset = sqlite3_column_int64(q, 4);
        {
            /* the saved hash, when it is whole and belongs to this offset */
            hash_state hs;
            const void *blob = sqlite3_column_blob(q, 5);
            c->hash_ok = false;
            if (blob && sqlite3_column_bytes(q, 5) == (int)sizeof(hs)) {
                memcpy(&hs, blob, sizeof(hs));
                if (hs.tag == DS_HASH_STATE_TAG && hs.ctx_size == sizeof(SHA256_CTX) &&
                    hs.offset == *out_offset) {
                    c->sha = hs.ctx;
                    c->hash_ok = true;
                }
            }
        }
    } else if (rc == SQLITE_DONE) {
        err = ed_error_set(ED_ENOTFOUND, "no upload %s (finished, cancelled or expired?)", upload_id);
    } else {
        err = ed_store_error(ed_store_db(d->st), rc, "upload");
    }
    sqlite3_finalize(q);
    return err;
}

int ds_upload_status(int64_t *out_offset, int64_t *out_size, ds *d, int64_t user, const char *upload_id)
{
    ds_upload_chunk c = {0};
    int err = upload_load(&c, d, user, upload_id, out_offset);

    if (err == 0 && out_size)
        *out_size = c.size;
    free(c.path);
    return err;
}

/* Delete the upload's row and file (cancel, a wrong hash). */
static int upload_discard(ds *d, const char *upload_id)
{
    sqlite3_stmt *q = NULL;
    int rc, err;

    if ((err = ed_store_prepare(&q, d->st, "DELETE FROM dataset_uploads WHERE id = ?")) < 0)
        return err;
    sqlite3_bind_text(q, 1, upload_id, -1, SQLITE_STATIC);
    rc = ed_store_step(q);
    sqlite3_finalize(q);
    if (rc != SQLITE_DONE)
        return ed_store_error(ed_store_db(d->st), rc, "discard upload");
    unlinkat(d->uploads_fd, upload_id, 0);
    return 0;
}

int ds_upload_cancel(ds *d, int64_t user, const char *upload_id)
{
    ds_upload_chunk c = {0};
    int64_t off;
    int err;

    if ((err = upload_load(&c, d, user, upload_id, &off)) < 0) {
        free(c.path);
        return err;
    }
    free(c.path);
    if ((err = mark_open(d, upload_id)) < 0)
        return err;
    err = upload_discard(d, upload_id);
    mark_closed(d, upload_id);
    return err;
}

/* ---- chunks -------------------------------------------------------------- */

static void chunk_free(ds_upload_chunk *c)
{
    if (c->fd >= 0)
        close(c->fd);
    mark_closed(c->d, c->id);
    free(c->path);
    free(c);
}

/* No saved hash state for the durable offset (a row from before states were
 * saved): hash the file's first `off` bytes once. */
static int hash_prefix(ds_upload_chunk *c, int64_t off)
{
    enum { BUF = 1 << 20 };
    char *buf = malloc(BUF);
    int64_t at = 0;
    int rfd, err = 0;

    if (buf == NULL)
        return ed_error_set(ED_ENOMEM, "hash");
    if ((rfd = openat(c->d->uploads_fd, c->id, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)) < 0) {
        free(buf);
        return ed_error_set(ED_EIO, "reopen upload: %s", strerror(errno));
    }
    SHA256_Init(&c->sha);
    while (at < off) {
        ssize_t n = pread(rfd, buf, (size_t)(off - at < BUF ? off - at : BUF), at);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            err = ed_error_set(ED_EIO, "read upload %s for its hash: %s", c->id,
                               n < 0 ? strerror(errno) : "shorter than its offset");
            break;
        }
        SHA256_Update(&c->sha, buf, (size_t)n);
        at += n;
    }
    close(rfd);
    free(buf);
    return err;
}

int ds_upload_chunk_begin(ds_upload_chunk **out, ds *d, int64_t user, const char *upload_id, int64_t start)
{
    ds_upload_chunk *c;
    int64_t off;
    struct stat sb;
    int err;

    *out = NULL;
    if ((c = calloc(1, sizeof(*c))) == NULL)
        return ed_error_set(ED_ENOMEM, "chunk");
    c->d = d;
    c->fd = -1;
    if ((err = upload_load(c, d, user, upload_id, &off)) < 0) {
        free(c->path);
        free(c);
        return err;
    }
    if ((err = mark_open(d, c->id)) < 0) {
        free(c->path);
        free(c);
        return err;
    }
    if (start != off) {
        err = ed_error_set(ED_ECONFLICT, "the chunk starts at byte %lld but upload %s has %lld bytes: continue from %lld",
                           (long long)start, c->id, (long long)off, (long long)off);
        goto fail;
    }
    if ((c->fd = openat(d->uploads_fd, c->id, O_WRONLY | O_NOFOLLOW | O_CLOEXEC)) < 0 || fstat(c->fd, &sb) < 0) {
        err = ed_error_set(ED_EIO, "upload %s lost its file: %s; cancel it and upload again", c->id, strerror(errno));
        goto fail;
    }
    if (sb.st_size < off) {
        err = ed_error_set(ED_EIO, "upload %s holds %lld bytes, fewer than the %lld recorded", c->id,
                           (long long)sb.st_size, (long long)off);
        goto fail;
    }
    /* what a dropped chunk wrote past the durable offset goes */
    if (sb.st_size > off && ftruncate(c->fd, off) < 0) {
        err = ed_error_set(ED_EIO, "truncate upload: %s", strerror(errno));
        goto fail;
    }
    if (!c->hash_ok && (err = hash_prefix(c, off)) < 0)
        goto fail;
    c->start = off;
    *out = c;
    return 0;
fail:
    chunk_free(c);
    return err;
}

int ds_upload_chunk_write(ds_upload_chunk *c, const void *buf, size_t n)
{
    const char *p = buf;

    if (c->broken)
        return ed_error_set(ED_EINVAL, "the chunk failed before: abort it");
    if ((int64_t)n > c->size - c->start - c->written) {
        c->broken = true;
        return ed_error_set(ED_ETOOBIG, "the chunk goes past the declared size of %lld bytes", (long long)c->size);
    }
    while (n > 0) {
        ssize_t k = pwrite(c->fd, p, n, c->start + c->written);
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0) {
            c->broken = true;
            return ed_error_set(errno == ENOSPC || errno == EDQUOT ? ED_EQUOTA : ED_EIO, "write upload: %s",
                                strerror(errno));
        }
        SHA256_Update(&c->sha, p, (size_t)k);
        p += k;
        n -= (size_t)k;
        c->written += k;
    }
    if (c->written - c->kicked >= DS_WRITEBACK_BYTES) {
        /* start writing these pages out now; the chunk's fdatasync then
         * waits for the tail, not for the whole chunk (advisory: an error
         * here is caught by that fdatasync) */
        sync_file_range(c->fd, c->start + c->kicked, c->written - c->kicked, SYNC_FILE_RANGE_WRITE);
        c->kicked = c->written;
    }
    return 0;
}

void ds_upload_chunk_abort(ds_upload_chunk *c)
{
    if (c)
        chunk_free(c);
}

/* The whole file arrived: check it and turn it into a blob in the draft. */
static int finish(ds_file *out_file, ds_upload_chunk *c)
{
    ds *d = c->d;
    static const char digits[] = "0123456789abcdef";
    char sha[DS_SHA256_LEN];
    unsigned char md[SHA256_DIGEST_LENGTH];
    SHA256_CTX ctx = c->sha;    /* a copy: a failure below leaves c's state as it was */
    struct stat sb;
    int64_t size;
    const char *mt = ds__media_type(c->path);
    int err;

    /* the hash of every byte, computed as they came (no second read) */
    SHA256_Final(md, &ctx);
    for (int i = 0; i < SHA256_DIGEST_LENGTH; i++) {
        sha[2 * i] = digits[md[i] >> 4];
        sha[2 * i + 1] = digits[md[i] & 15];
    }
    sha[64] = '\0';
    if (fstat(c->fd, &sb) < 0)
        return ed_error_set(ED_EIO, "stat upload: %s", strerror(errno));
    size = (int64_t)sb.st_size;
    if (strcmp(sha, c->sha256) != 0 || size != c->size) {
        upload_discard(d, c->id);
        return ed_error_set(ED_EINVAL, "the upload's sha256 is %s but %s was declared: the upload is discarded", sha,
                            c->sha256);
    }
    pthread_rwlock_rdlock(&d->blob_lock);
    if ((err = ds__blob_place(d, d->uploads_fd, c->id, sha, true)) == 0)
        err = ds__draft_commit(d, c->dataset_id, c->path, sha, size, mt, c->id);
    pthread_rwlock_unlock(&d->blob_lock);
    if (err < 0)
        return err;         /* the upload stays whole: a zero-byte chunk at its end retries */
    unlinkat(d->uploads_fd, c->id, 0);
    if (out_file) {
        memset(out_file, 0, sizeof(*out_file));
        if ((out_file->path = strdup(c->path)) == NULL)
            return ed_error_set(ED_ENOMEM, "file");
        memcpy(out_file->sha256, sha, sizeof(sha));
        out_file->size = size;
        snprintf(out_file->media_type, sizeof(out_file->media_type), "%s", mt);
    }
    return 0;
}

int ds_upload_chunk_end(int64_t *out_offset, bool *out_done, ds_file *out_file, ds_upload_chunk *c)
{
    ds *d = c->d;
    sqlite3_stmt *q = NULL;
    int64_t off = c->start + c->written;
    int rc, err;

    if (out_done)
        *out_done = false;
    if (c->broken) {
        err = ed_error_set(ED_EINVAL, "the chunk failed: begin again at byte %lld", (long long)c->start);
        goto done;
    }
    /* durable first, then the offset that promises it */
    if (c->written > 0 && fdatasync(c->fd) < 0) {
        err = ed_error_set(ED_EIO, "fdatasync upload: %s", strerror(errno));
        goto done;
    }
    if ((err = ed_store_prepare(&q, d->st,
                                "UPDATE dataset_uploads SET durable_offset = ?, updated_at = ?, hash_state = ? "
                                "WHERE id = ? AND durable_offset = ?")) < 0)
        goto done;
    {
        /* the hash state moves with the offset it covers, in one statement */
        hash_state hs;
        memset(&hs, 0, sizeof(hs));
        hs.tag = DS_HASH_STATE_TAG;
        hs.ctx_size = (uint32_t)sizeof(SHA256_CTX);
        hs.offset = off;
        hs.ctx = c->sha;
        sqlite3_bind_blob(q, 3, &hs, (int)sizeof(hs), SQLITE_TRANSIENT);
    }
    sqlite3_bind_int64(q, 1, off);
    sqlite3_bind_int64(q, 2, ed_now_ms());
    sqlite3_bind_text(q, 4, c->id, -1, SQLITE_STATIC);
    sqlite3_bind_int64(q, 5, c->start);
    rc = ed_store_step(q);
    sqlite3_finalize(q);
    if (rc != SQLITE_DONE) {
        err = ed_store_error(ed_store_db(d->st), rc, "upload offset");
        goto done;
    }
    if (sqlite3_changes(ed_store_db(d->st)) != 1) {
        err = ed_error_set(ED_ENOTFOUND, "upload %s was cancelled or expired", c->id);
        goto done;
    }
    if (out_offset)
        *out_offset = off;
    if (off == c->size) {
        if ((err = finish(out_file, c)) == 0 && out_done)
            *out_done = true;
    }
done:
    chunk_free(c);
    return err;
}
