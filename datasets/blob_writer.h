/*
 * blob_writer.h - a blob written piece by piece (private to datasets/).
 *
 * ds__blob_from_fd reads an fd to its end; an archive's entry or anything
 * else produced in pieces goes through this instead: bytes are appended to
 * DATA/datasets/tmp/<prefix>-<uuid>, hashed on the way, then placed as a
 * blob (fsync, 0444, linkat: see blobs.c). The caller holds blob_lock shared
 * from ds__blobw_finish until the blob's row is committed.
 *
 *     ds_blobw *w;
 *     if ((err = ds__blobw_open(&w, d, "unpack")) < 0) return err;
 *     while (...) if ((err = ds__blobw_write(w, buf, n)) < 0) break;
 *     err = err < 0 ? (ds__blobw_abort(w), err) : ds__blobw_finish(sha, &size, w);
 */
#ifndef DS_BLOB_WRITER_H
#define DS_BLOB_WRITER_H

#include "ds_int.h"

typedef struct ds_blobw ds_blobw;

/* A new temporary file in DATA/datasets/tmp/. ED_EIO, ED_ENOMEM. */
int ds__blobw_open(ds_blobw **out, ds *d, const char *prefix);
/* Append n bytes. ED_EQUOTA when the disk is full, ED_EIO. */
int ds__blobw_write(ds_blobw *w, const void *buf, size_t n);
/* Bytes written so far. */
int64_t ds__blobw_size(const ds_blobw *w);
/* Hash, fsync and place the blob; frees w whatever the outcome. */
int ds__blobw_finish(char out_sha[DS_SHA256_LEN], int64_t *out_size, ds_blobw *w);
/* Remove the temporary file and free w. NULL-safe. */
void ds__blobw_abort(ds_blobw *w);

#endif
