/*
 * ds.h - datasets: owners, versions, a content-addressed blob store,
 * resumable uploads and the read-only trees kernels and jobs mount.
 *
 * A dataset has an owner, a slug unique per owner (case-insensitively), a
 * name, a Markdown card, a license, tags and a visibility. Its files are
 * blobs named by their sha256 under DATA/datasets/blobs/ab/<hex> (0444),
 * shared by every version and dataset that holds the same bytes. Files go
 * into the dataset's draft (an upload, or ds_draft_put_fd); publishing turns
 * the draft into version n+1 in one transaction. Versions never change.
 *
 *     ds *d;
 *     ds_dataset *set;
 *     ds_dataset_spec spec = DS_SPEC_KEEP;
 *     spec.name = "MNIST";
 *     spec.visibility = DS_PUBLIC;
 *     if ((err = ds_open(&d, store, "/var/lib/eddy", NULL)) < 0) ...
 *     err = ds_dataset_create(&set, d, user_id, &spec);
 *     err = ds_draft_put_fd(NULL, d, user_id, set->id, "train.csv", fd, NULL, quota);
 *     err = ds_version_publish(&v, d, user_id, set->id, "first", NULL);
 *     err = ds_version_tree(&path, d, user_id, set->id, v->number);
 *
 * Access: every call takes the caller's user id. A private dataset is seen
 * by its owner and the users it is shared with (ED_ENOTFOUND for anyone
 * else, as if it did not exist); an unlisted one by anyone with its id (not
 * listed); a public one by all. Only the owner changes a dataset (ED_EPERM
 * for a reader).
 *
 * Errors are 0 or a negative ED_E* with ed_error_last() set. Everything is
 * thread-safe: one ds handle serves every thread of the server.
 */
#ifndef DS_H
#define DS_H

#include "ed_store.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define DS_ID_LEN       37      /* a uuid and its NUL */
#define DS_SHA256_LEN   65      /* 64 lowercase hex and a NUL */
#define DS_NAME_MAX     100     /* bytes of a name */
#define DS_SLUG_MAX     64      /* bytes of a slug */
#define DS_DESC_MAX     65536   /* bytes of the Markdown card */
#define DS_LICENSE_MAX  100
#define DS_TAG_MAX      40      /* bytes of one tag */
#define DS_TAGS_MAX     20      /* tags on a dataset */
#define DS_MESSAGE_MAX  4000    /* bytes of a version message */
#define DS_SOURCE_MAX   1000    /* bytes of a version's source JSON */
#define DS_PATH_MAX     4096    /* bytes of a file path in a dataset */
#define DS_PATH_DEPTH   32      /* directories a file path may nest */
#define DS_FILES_MAX    100000  /* files in one version */
#define DS_LIST_MAX     500     /* largest page of a list */

typedef struct ds ds;

typedef enum ds_visibility { DS_PRIVATE = 0, DS_UNLISTED = 1, DS_PUBLIC = 2 } ds_visibility;

/* Server settings; a NULL ds_limits to ds_open means DS_LIMITS_DEFAULT. */
typedef struct ds_limits {
    int64_t file_max_bytes;     /* largest single file (upload or put) */
    int64_t upload_ttl_ms;      /* an upload without a chunk for this long is expired by ds_gc */
} ds_limits;
#define DS_LIMITS_DEFAULT ((ds_limits){INT64_C(64) << 30, INT64_C(24) * 3600 * 1000})

/* Open the dataset store under DATA/datasets/ (made if missing) on `store`
 * and recover from a crash (see ds_recover). Caller frees with ds_free().
 * ED_EIO when the directories cannot be made or opened. */
int ds_open(ds **out, ed_store *store, const char *data_dir, const ds_limits *limits);
void ds_free(ds *d);

/* ---- names --------------------------------------------------------------- */

/* A name: 1..DS_NAME_MAX bytes of valid UTF-8, no control characters (NUL,
 * C0, DEL), no '/', not "." or "..", not blank. ED_EINVAL saying why. */
int ds_name_validate(const char *name, size_t len);
/* A slug: 1..DS_SLUG_MAX bytes of [A-Za-z0-9._-], starting with a letter or
 * digit, not ending in '.', no "..". ED_EINVAL saying why. */
int ds_slug_validate(const char *slug, size_t len);
/* A file path in a dataset: relative, '/'-separated, no empty, "." or ".."
 * component, no control characters, at most DS_PATH_MAX bytes and
 * DS_PATH_DEPTH directories deep, components of at most 255 bytes. */
int ds_path_validate(const char *path, size_t len);
/* "private", "unlisted", "public" <-> the enum; ED_EINVAL for another word. */
int ds_visibility_parse(ds_visibility *out, const char *s);
const char *ds_visibility_name(ds_visibility v);

/* ---- datasets (datasets.c) ----------------------------------------------- */

typedef struct ds_dataset {
    char id[DS_ID_LEN];
    int64_t owner_id;
    char *slug, *name, *description, *license;
    char **tags;                /* ntags strings */
    size_t ntags;
    ds_visibility visibility;
    int64_t latest_version;     /* 0: none published */
    int64_t created_at, updated_at;   /* ms */
    bool can_write;             /* the caller is the owner */
} ds_dataset;

/* What to set on create or change on update: NULL strings and a negative
 * visibility keep the current value (for create: the defaults, slug from
 * the name, private). tags with ntags == (size_t)-1 are kept. */
typedef struct ds_dataset_spec {
    const char *name, *slug, *description, *license;
    const char *const *tags;
    size_t ntags;
    int visibility;             /* a ds_visibility, or -1 */
} ds_dataset_spec;
#define DS_SPEC_KEEP ((ds_dataset_spec){NULL, NULL, NULL, NULL, NULL, (size_t)-1, -1})

/* Create a dataset owned by `user`. The slug defaults to the name made
 * lower-case with runs of other characters turned into '-'. ED_EINVAL (a
 * field, naming it), ED_EEXISTS (the owner has that slug already). */
int ds_dataset_create(ds_dataset **out, ds *d, int64_t user, const ds_dataset_spec *spec);
/* One dataset as `user` sees it. ED_ENOTFOUND when missing or not visible. */
int ds_dataset_get(ds_dataset **out, ds *d, int64_t user, const char *id);
/* The dataset whose owner is `owner_id` and slug `slug` (any case). */
int ds_dataset_get_by_slug(ds_dataset **out, ds *d, int64_t user, int64_t owner_id, const char *slug);
/* Change the fields `change` sets (owner only: ED_EPERM for a reader). */
int ds_dataset_update(ds_dataset **out, ds *d, int64_t user, const char *id, const ds_dataset_spec *change);
/* Delete a dataset with its versions, draft, uploads, shares, attachments
 * and trees (owner only). ED_ECONFLICT, naming why, when the in-use hook
 * says a version is used. Blobs are freed by the next ds_gc. */
int ds_dataset_delete(ds *d, int64_t user, const char *id);
void ds_dataset_free(ds_dataset *s);

typedef struct ds_dataset_list {
    ds_dataset **items;
    size_t count;
} ds_dataset_list;

typedef struct ds_list_query {
    const char *q;              /* substring of name, slug or description; NULL: any */
    int64_t owner_id;           /* 0: any */
    const char *tag;            /* NULL: any */
    size_t limit, offset;       /* limit 0: DS_LIST_MAX */
} ds_list_query;
/* Datasets `user` may see and that are listed: own, shared with the user,
 * and public ones (unlisted only the caller's own), newest change first. */
int ds_dataset_list_get(ds_dataset_list **out, ds *d, int64_t user, const ds_list_query *q);
void ds_dataset_list_free(ds_dataset_list *l);

/* Share a private dataset for reading with `other` (owner only), or stop. */
int ds_share_add(ds *d, int64_t user, const char *id, int64_t other);
int ds_share_remove(ds *d, int64_t user, const char *id, int64_t other);

/* ---- files, draft and versions (drafts.c, versions.c) -------------------- */

typedef struct ds_file {
    char *path;
    char sha256[DS_SHA256_LEN];
    int64_t size;
    char media_type[64];
} ds_file;

typedef struct ds_file_list {
    ds_file *items;
    size_t count;
    int64_t size_bytes;         /* sum of sizes */
} ds_file_list;
void ds_file_list_free(ds_file_list *l);

/* Stream what `fd` holds (a regular file or a pipe, from its current offset
 * to its end) into the blob store and put it in the draft at `path`,
 * replacing what was there (owner only). A file from a user's tree must be
 * opened with ed_fs, which refuses FIFOs, sockets and devices. For small files, and for "from a job / a project": the
 * caller opens `fd` beneath the source tree (ed_fs), so the bytes never pass
 * through a client. `media_type` NULL: guessed from the path. ED_ETOOBIG over
 * the file limit, ED_EQUOTA when `quota_bytes` > 0 and the owner's usage
 * would pass it. *out (may be NULL) gets the file. */
int ds_draft_put_fd(ds_file *out, ds *d, int64_t user, const char *id, const char *path, int fd,
                    const char *media_type, int64_t quota_bytes);
/* Remove `path` from the draft. ED_ENOTFOUND when it is not there. */
int ds_draft_remove(ds *d, int64_t user, const char *id, const char *path);
/* The draft's files by path (owner only). */
int ds_draft_list(ds_file_list **out, ds *d, int64_t user, const char *id);

typedef struct ds_version {
    int64_t number;
    char *message;
    char *source;               /* JSON or NULL */
    int64_t size_bytes, file_count;
    int64_t created_by, created_at;
    ds_file_list *files;        /* the manifest, when asked for; else NULL */
} ds_version;
void ds_version_free(ds_version *v);

/* Publish the draft as version latest+1 (owner only): in one transaction the
 * draft's rows become the version's manifest and the version row appears;
 * nobody ever sees part of it. The draft stays as the new version's files
 * (the start of the next one). `source` is JSON naming where it came from
 * ({"job_id":"..."}) or NULL. ED_EUNPROC when the draft is empty or equal to
 * the latest version. *out (may be NULL) gets the version with its files. */
int ds_version_publish(ds_version **out, ds *d, int64_t user, const char *id, const char *message,
                       const char *source);
/* Versions, newest first, without manifests. */
int ds_version_list(ds_version ***out, size_t *out_count, ds *d, int64_t user, const char *id);
void ds_version_list_free(ds_version **v, size_t count);
/* One version with its manifest; number 0 is the latest. */
int ds_version_get(ds_version **out, ds *d, int64_t user, const char *id, int64_t number);
/* Delete one version (owner only). ED_ECONFLICT, with the reason, when the
 * in-use hook says it is used or a project pins it. */
int ds_version_delete(ds *d, int64_t user, const char *id, int64_t number);

/* The absolute path of version `number`'s read-only tree (0: the latest),
 * DATA/datasets/trees/<id>/<n>/: hard links to the blobs (0444), directories
 * 0555, built once (here, when missing) in trees/<id>/.tmp-* and renamed into
 * place, so it is whole or absent. A mount binds it read-only: no copy, no
 * cost per byte. *out is malloc'd. */
int ds_version_tree(char **out, ds *d, int64_t user, const char *id, int64_t number);

/* Open one file of a version for reading (a blob: O_RDONLY, caller closes).
 * *out_file (may be NULL) gets its manifest entry. */
int ds_version_file_open(int *out_fd, ds_file *out_file, ds *d, int64_t user, const char *id,
                         int64_t number, const char *path);

/* Who uses a version: the scheduler (running jobs) and competitions. Return
 * 1 with `why` filled ("running job 42") when version `number` of dataset
 * `id` (number 0: any version) is in use, 0 when not, < 0 on error. */
typedef int (*ds_in_use_fn)(char *why, size_t why_len, const char *id, int64_t number, void *payload);
/* Install the hook (NULL: nothing is ever in use). Set once at start. */
void ds_in_use_fn_set(ds *d, ds_in_use_fn fn, void *payload);

/* ---- what a project mounts (attach.c) ------------------------------------ */

#define DS_ATTACH_MAX 20        /* datasets one project may mount */

typedef struct ds_attachment {
    char dataset_id[DS_ID_LEN];
    int64_t version;            /* a number, or 0: the latest when a kernel or job starts */
} ds_attachment;

/* Replace the list of datasets project `project_id` mounts (at most
 * DS_ATTACH_MAX, no dataset twice). The caller has checked that `user` may
 * change the project (projects/ is not datasets/'s to ask); here each
 * dataset must be visible to `user` (ED_ENOTFOUND names it), have a version
 * (ED_EUNPROC), and a pinned version must exist (ED_ENOTFOUND). One
 * transaction: all or nothing. */
int ds_project_datasets_set(ds *d, int64_t user, const char *project_id, const ds_attachment *items, size_t n);
/* The project's list, in the order it was set. *out is malloc'd (NULL when
 * empty); caller frees. */
int ds_project_datasets_get(ds_attachment **out, size_t *out_count, ds *d, const char *project_id);
/* Forget a deleted project's list (projects/ calls it through the gateway). */
int ds_project_datasets_clear(ds *d, const char *project_id);

typedef struct ds_mount {
    char dataset_id[DS_ID_LEN];
    int64_t owner_id;           /* the mount is /home/aistudio/data/<owner's username>-<slug>/ */
    char *slug;
    int64_t version;            /* resolved: what the kernel or job runs with (record it) */
    char *tree;                 /* absolute path of the read-only tree to bind */
} ds_mount;
/* What a kernel or job of project `project_id` started by `user` mounts:
 * "latest" resolved now, each tree built if missing. A dataset no longer
 * visible to `user` is ED_ENOTFOUND naming it (the start fails with a clear
 * reason rather than running without its data). Caller frees with
 * ds_mounts_free. */
int ds_project_mounts(ds_mount **out, size_t *out_count, ds *d, int64_t user, const char *project_id);
void ds_mounts_free(ds_mount *m, size_t count);

/* ---- uploads (uploads.c) ------------------------------------------------- */

typedef struct ds_upload_chunk ds_upload_chunk;

/* Open a resumable upload of `size` bytes whose sha256 will be `sha256`
 * (64 hex) into the draft of dataset `id` at `path` (owner only). out_id gets
 * its id. ED_ETOOBIG over the file limit, ED_EQUOTA when quota_bytes > 0 and
 * the owner's usage plus size would pass it, ED_EINVAL for a bad field. */
int ds_upload_open(char out_id[DS_ID_LEN], ds *d, int64_t user, const char *id, const char *path,
                   int64_t size, const char *sha256, int64_t quota_bytes);
/* How many bytes are durable (*out_offset) of *out_size. ED_ENOTFOUND for an
 * unknown, finished or expired upload, or another user's. */
int ds_upload_status(int64_t *out_offset, int64_t *out_size, ds *d, int64_t user, const char *upload_id);
/* Begin a chunk at byte `start`: ED_ECONFLICT unless start is the durable
 * offset, or while another chunk of this upload is open. Bytes past the
 * offset (a chunk that was dropped) are cut off. Caller ends the chunk with
 * ds_upload_chunk_end or ds_upload_chunk_abort. */
int ds_upload_chunk_begin(ds_upload_chunk **out, ds *d, int64_t user, const char *upload_id, int64_t start);
/* Append n bytes (any sizes, streamed to disk). ED_ETOOBIG past the declared
 * size (the chunk is then only good for abort). */
int ds_upload_chunk_write(ds_upload_chunk *c, const void *buf, size_t n);
/* Make the chunk durable (fdatasync) and advance the offset; frees c. When
 * the offset reaches the size, the file's sha256 is checked: a mismatch is
 * ED_EINVAL naming both hashes and discards the upload; a match moves it into
 * the blob store and the draft in one step (*out_done true, *out_file its
 * entry; both may be NULL). */
int ds_upload_chunk_end(int64_t *out_offset, bool *out_done, ds_file *out_file, ds_upload_chunk *c);
/* Give up a chunk (a dropped connection): the offset stays. NULL-safe. */
void ds_upload_chunk_abort(ds_upload_chunk *c);
/* Cancel an upload and remove its bytes. */
int ds_upload_cancel(ds *d, int64_t user, const char *upload_id);

/* ---- storage (gc.c) ------------------------------------------------------ */

/* Bytes of distinct blobs the datasets of `user` hold (versions and drafts;
 * a blob used twice counts once): what the tier's quota is checked against. */
int ds_usage_bytes(int64_t *out, ds *d, int64_t user);

typedef struct ds_gc_stats {
    int64_t blobs_freed, bytes_freed, uploads_expired;
} ds_gc_stats;
/* Expire uploads idle past the TTL (as of `now_ms`), then delete the rows of
 * blobs nothing references (one transaction) and their files. out may be
 * NULL. */
int ds_gc(ds_gc_stats *out, ds *d, int64_t now_ms);

typedef struct ds_recover_stats {
    int64_t tmp_removed, orphan_blobs, missing_blobs, orphan_uploads, orphan_trees;
} ds_recover_stats;
/* Start-up recovery (ds_open runs it): empty tmp/, remove trees/<id>/.tmp-*, blob files
 * with no row, upload files with no row, trees of versions that do not exist;
 * rows whose blob file is missing are logged as errors (counted, never
 * dropped). Missing trees are rebuilt lazily by ds_version_tree. */
int ds_recover(ds_recover_stats *out, ds *d);

/* ---- archives in the draft (unpack.c) ------------------------------------ */

/* Limits on unpacking one archive; NULL: DS_UNPACK_LIMITS_DEFAULT. */
typedef struct ds_unpack_limits {
    int64_t total_bytes;        /* sum of the entries' uncompressed sizes */
    int64_t entries;            /* files and directories in the archive */
    int64_t ratio;              /* uncompressed / compressed bytes, over the whole archive */
} ds_unpack_limits;
#define DS_UNPACK_LIMITS_DEFAULT ((ds_unpack_limits){INT64_C(64) << 30, 100000, 200})

/* Replace the archive at `path` in the draft of dataset `id` (.zip, .tar,
 * .tar.gz/.tgz; owner only) by the files it holds, placed beside it (an
 * archive "a/data.zip" holding "x/y.csv" gives "a/x/y.csv"). Every entry is
 * streamed into the blob store first; then one transaction removes the
 * archive from the draft and adds the files, so a failure leaves the draft
 * as it was. Refused with ED_EINVAL naming the entry: absolute paths, "..",
 * symbolic and hard links, devices and FIFOs, a path a file and a directory
 * both claim, a truncated or corrupt archive; ED_ETOOBIG over a limit (a
 * bomb: total, entries, ratio, or a file over the file limit); ED_EQUOTA
 * against quota_bytes (> 0). *out_files (may be NULL) gets how many files. */
int ds_draft_unpack(int64_t *out_files, ds *d, int64_t user, const char *id, const char *path,
                    const ds_unpack_limits *limits, int64_t quota_bytes);

/* ---- previews and stats (preview.c) -------------------------------------- */

/* A preview of one version's file as API.md's JSON object: {kind: "table"|
 * "image"|"text"|"json"|"none", size, media_type, ...}: a table's
 * delimiter, header, columns [{name, type}] (int, float, bool, date,
 * string), first 20 rows and row_count; an image's width, height and
 * thumbnail (data:image/png;base64, at most 256 px a side); the head of a
 * text or JSON file (text, truncated); "none" with binary or error. Computed
 * once per blob by a background worker (ds_preview_get never reads a large
 * file or decodes on the caller's thread): *out_pending is true (and *out
 * NULL) while it is not ready yet, and the blob is queued. *out is a
 * malloc'd JSON text. ED_ENOTFOUND as ds_version_file_open. */
int ds_preview_get(char **out, bool *out_pending, ds *d, int64_t user, const char *id, int64_t number,
                   const char *path);

/* Queue the previews of every file of version `number` (0: the latest) of
 * dataset `id` that has none yet, so they are ready before anyone asks. The
 * gateway's publish route calls it right after ds_version_publish (access
 * was checked there; no user here). Returns at once. */
int ds_previews_enqueue_version(ds *d, const char *id, int64_t number);

/* A version's stats from its manifest (cheap: no file is read) as a JSON
 * text: {version, files, size_bytes, by_type: [{media_type, files, bytes}],
 * by_extension: [{extension, files, bytes}]}, each list largest first
 * (extension "" for none, lower-case). Access as ds_version_get. */
int ds_version_stats(char **out, ds *d, int64_t user, const char *id, int64_t number);

/* For tests only: make the next publishes fail just before COMMIT. */
void ds__fail_publish_before_commit(bool on);

#endif
