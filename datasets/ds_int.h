/*
 * ds_int.h - what the files of datasets/ share. Not for other modules.
 */
#ifndef DS_INT_H
#define DS_INT_H

#include "ds.h"

#include <pthread.h>
#include <stdbool.h>

struct ds {
    ed_store *st;
    char *root;                 /* DATA/datasets, absolute */
    int root_fd, blobs_fd, tmp_fd, uploads_fd, trees_fd;
    ds_limits lim;
    /* Blob files and rows: a writer (a put, an upload finishing) holds it
     * shared from placing the file until its row is committed; ds_gc holds
     * it exclusive, so gc never deletes the row of a blob that a writer has
     * just deduplicated against and is about to reference. */
    pthread_rwlock_t blob_lock;
    pthread_mutex_t mu;         /* guards the fields below */
    struct ds_open_upload *open_uploads;   /* uploads with a chunk in progress */
    pthread_mutex_t tree_mu;    /* one tree build at a time */
    ds_in_use_fn in_use;
    void *in_use_payload;
    struct ds_previews *previews;   /* preview.c: the background preview worker, started lazily */
};

/* preview.c: stop the preview worker and free its queue (ds_free). */
void ds__previews_stop(ds *d);

struct ds_open_upload {
    char id[DS_ID_LEN];
    struct ds_open_upload *next;
};

/* The dataset `id` as `user` may use it: ED_ENOTFOUND when it is missing or
 * not visible, ED_EPERM when `write` and the caller is not the owner.
 * *out_owner (may be NULL) gets the owner. */
int ds__access(ds *d, int64_t user, const char *id, bool write, int64_t *out_owner);

/* Stream `fd` (to its end) into DATA/datasets/tmp/, hashing it, then place
 * it as a blob: *out_size bytes, sha256 in out_sha. ED_ETOOBIG past max.
 * The caller holds blob_lock shared until the blob's row is committed. */
int ds__blob_from_fd(char out_sha[DS_SHA256_LEN], int64_t *out_size, ds *d, int fd, int64_t max);
/* Move the finished file `name` in directory `dir_fd` (the same file system)
 * to blobs/ab/<sha>: made 0444 and fsync'd, linked in place (an existing
 * blob means the same bytes are stored already), then unlinked from `dir_fd`
 * unless `keep` (the caller unlinks it once the blob's row is committed). */
int ds__blob_place(ds *d, int dir_fd, const char *name, const char *sha, bool keep);
/* The sha256 (hex) of what `fd` holds from offset 0, and its size. */
int ds__sha256_fd(char out[DS_SHA256_LEN], int64_t *out_size, int fd);

/* In one transaction: the blob's row (if new), the draft row for `path`
 * (replacing), and, when upload_id is not NULL, the upload's row deleted. */
int ds__draft_commit(ds *d, const char *id, const char *path, const char *sha, int64_t size,
                     const char *media_type, const char *upload_id);

/* A media type guessed from a path's extension ("text/csv"); never NULL. */
const char *ds__media_type(const char *path);

/* Distinct blob bytes of the datasets `owner` holds. */
int ds__usage(int64_t *out, ds *d, int64_t owner);
/* ED_EQUOTA when quota > 0 and usage + add > quota. */
int ds__quota_check(ds *d, int64_t owner, int64_t add, int64_t quota);
/* ds__quota_check for one blob: nothing is added when the owner's datasets
 * hold blob `sha` already (usage counts distinct blobs). */
int ds__quota_check_blob(ds *d, int64_t owner, const char *sha, int64_t size, int64_t quota);

/* Remove `name` beneath `dir_fd` whatever it is, making read-only
 * directories writable on the way (trees are 0555). Missing is fine. */
int ds__remove_all(int dir_fd, const char *name);

/* 1 with why filled when the hook says version `number` (0: any) is in use. */
int ds__in_use(ds *d, const char *id, int64_t number, char *why, size_t why_len);

/* The manifest of version `number` of `id`, or of the draft when number is 0. */
int ds__files_load(ds_file_list **out, ds *d, const char *id, int64_t number);

/* The number `number` stands for (0: the latest) in dataset `id`, whose
 * access the caller checked. ED_ENOTFOUND when there is none. */
int ds__version_resolve(int64_t *out, ds *d, const char *id, int64_t number);

/* Remove trees/<id>/<number> (number 0: the whole trees/<id>). */
int ds__tree_remove(ds *d, const char *id, int64_t number);

/* 0 when s (len bytes) is valid UTF-8 without control characters (C0, DEL,
 * C1), newlines and tabs allowed when `newlines`; else ED_EINVAL naming field. */
int ds__text_check(const char *s, size_t len, const char *field, bool newlines);

#endif
