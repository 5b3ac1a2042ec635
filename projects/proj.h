/*
 * proj.h - git-backed projects: a working tree of files, versions (commits),
 * forks, nbformat v4 validation and a per-user storage limit.
 *
 * A project is a row in the store's `projects` table and a normal git
 * repository with its working tree at <root>/<project id>/ (libgit2). Files
 * are edited in the working tree; a version is a commit of the whole tree.
 *
 *     proj_root *r;
 *     proj *p;
 *     proj_version *v;
 *     if ((err = proj_root_open(&r, st, "/var/lib/eddy/projects", 1 << 30)) < 0) ...
 *     if ((err = proj_create(&p, r, uid, "mnist", NULL, PROJ_PRIVATE)) < 0) ...
 *     if ((err = proj_file_write(NULL, NULL, r, uid, p->id, "train.py", src, n)) < 0) ...
 *     if ((err = proj_version_create(&v, r, uid, p->id, "first try")) < 0) ...
 *     proj_version_free(v);
 *     proj_free(p);
 *     proj_root_free(r);
 *
 * Every call takes the calling user's id and checks access itself:
 *   - another user's private project does not exist for the caller
 *     (ED_ENOTFOUND, never ED_EPERM, so ids cannot be probed);
 *   - a public project can be read and forked by anyone, but changed
 *     (files, versions, restore, update, delete) only by its owner: others get
 *     ED_EPERM.
 * Errors follow ed_error.h: 0 or a negative ED_E* code with a message.
 * File paths are relative, '/'-separated, checked by proj_path_validate().
 * All functions are thread-safe; operations on one project are serialised.
 */
#ifndef PROJ_H
#define PROJ_H

#include "ed_store.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PROJ_ID_LEN      13     /* "p" + 12 base62 characters */
#define PROJ_PATH_MAX    1024   /* bytes in a file path */
#define PROJ_NAME_MAX    100    /* bytes in a project name */
#define PROJ_DESC_MAX    4000   /* bytes in a description */
#define PROJ_MESSAGE_MAX 4000   /* bytes in a version message */
#define PROJ_LIST_MAX    500    /* largest page of a list */
#define PROJ_ETAG_LEN    64     /* a file's ETag: lowercase sha256 hex of its bytes */
#define PROJ_LARGE_FILE_DEFAULT (20 * 1024 * 1024) /* version_large_file_bytes */

typedef struct proj_root proj_root;

typedef enum proj_visibility { PROJ_PRIVATE = 0, PROJ_PUBLIC = 1 } proj_visibility;

typedef struct proj {
    char            id[PROJ_ID_LEN + 1];
    int64_t         owner_id;
    char           *owner;          /* the owner's username */
    char           *name;
    char           *description;    /* "" when none */
    proj_visibility visibility;
    char            forked_from[PROJ_ID_LEN + 1]; /* source project id, "" if none */
    int64_t         size_bytes;     /* working tree + history on disk, counted
                                       against the owner's storage limit */
    int64_t         created_at;     /* ms since the epoch */
    int64_t         updated_at;     /* ms; files, versions and metadata bump it */
} proj;

typedef struct proj_page {
    proj  **items;
    size_t  count;
    char   *next_cursor;    /* pass to the next proj_list; NULL on the last page */
} proj_page;

typedef struct proj_changes {
    const char *name;        /* NULL: unchanged */
    const char *description; /* NULL: unchanged */
    int         visibility;  /* -1: unchanged, else a proj_visibility */
} proj_changes;

typedef struct proj_file {
    char    *path;           /* "src/train.py" */
    int64_t  size;           /* bytes */
    int64_t  modified_at;    /* ms since the epoch */
    char     etag[PROJ_ETAG_LEN + 1]; /* sha256 hex of the bytes; set by writes,
                                         "" in proj_files_list (not computed) */
} proj_file;

typedef struct proj_file_list {
    proj_file *items;        /* sorted by path */
    size_t     count;
} proj_file_list;

/* A working-tree file a version kept out of git: over the large-file
 * threshold, or matched by the tree's .eddyignore. */
typedef struct proj_large_file {
    char    *path;
    int64_t  size;                      /* bytes when the version was made */
    char     sha256[PROJ_ETAG_LEN + 1]; /* of those bytes (= its ETag then) */
    bool     ignored;                   /* .eddyignore matched it (else: large) */
} proj_large_file;

typedef struct proj_version {
    char     id[41];         /* the commit id, 40 hex characters */
    char    *message;
    char    *author;         /* username of the user who made it */
    int64_t  created_at;     /* ms (git keeps seconds) */
    char   **files;          /* every file path in this version (git-tracked), sorted */
    size_t   nfiles;
    proj_large_file *large_files; /* kept out of git, sorted by path */
    size_t   nlarge;
} proj_version;

/* How a restore treats working-tree files the version does not have. */
typedef enum proj_restore_mode {
    PROJ_RESTORE_KEEP_UNTRACKED = 0, /* keep them: only the version's files are written */
    PROJ_RESTORE_EXACT = 1,          /* remove them, except files no version can hold
                                        (large or .eddyignore'd), which are kept */
} proj_restore_mode;

typedef struct proj_version_page {
    proj_version **items;    /* newest first */
    size_t         count;
    char          *next_cursor; /* NULL on the last page */
} proj_version_page;

/* ---- the root --------------------------------------------------------- */

/* Open the projects directory `dir` (created if missing) over the store `st`
 * (borrowed; must outlive the root). `user_storage_bytes` is the limit on the
 * total size_bytes of the projects a user owns (<= 0: unlimited). Leftovers of
 * interrupted creates and deletes are removed. Initialises libgit2 once per
 * process. Caller frees with proj_root_free(). ED_EIO if the directory cannot
 * be made or opened. */
int proj_root_open(proj_root **out, ed_store *st, const char *dir, int64_t user_storage_bytes);

/* Versions keep files larger than `bytes` out of git history (listed in the
 * version's large_files instead). <= 0: PROJ_LARGE_FILE_DEFAULT (20 MiB).
 * Call before the root is shared between threads. */
void proj_root_set_large_file_bytes(proj_root *r, int64_t bytes);

/* Free the root once no call on it is in flight. NULL-safe. */
void proj_root_free(proj_root *r);

/* ---- projects ---------------------------------------------------------- */

/* Create an empty project owned by `user_id`: a row and an initialised
 * repository (no versions yet). `description` may be NULL. Caller frees *out
 * with proj_free(). ED_EINVAL for an empty, too long or control-character name
 * or description; ED_ENOTFOUND if the user does not exist; ED_EIO. On error
 * nothing is left behind. */
int proj_create(proj **out, proj_root *r, int64_t user_id, const char *name,
                const char *description, proj_visibility visibility);

/* The project `id` as `user_id` sees it. ED_ENOTFOUND when it does not exist
 * or is another user's private project. Caller frees with proj_free(). */
int proj_get(proj **out, proj_root *r, int64_t user_id, const char *id);

/* One page of the projects `user_id` can see (their own and every public
 * one), newest first. `limit` 1..PROJ_LIST_MAX; `cursor` NULL for the first
 * page or a next_cursor from before. ED_EINVAL for a bad limit or cursor.
 * Caller frees with proj_page_free(). */
int proj_list(proj_page **out, proj_root *r, int64_t user_id, int limit, const char *cursor);

/* Change name, description and/or visibility (owner only). *out (may be
 * NULL) gets the updated project. ED_EINVAL for bad values, ED_EPERM for a
 * public project of someone else, ED_ENOTFOUND. */
int proj_update(proj **out, proj_root *r, int64_t user_id, const char *id,
                const proj_changes *changes);

/* Delete the project: its row and its repository directory (owner only). The
 * row and the directory go together or not at all. ED_EPERM / ED_ENOTFOUND as
 * for proj_update. */
int proj_delete(proj_root *r, int64_t user_id, const char *id);

/* Fork `id` into a new private project owned by `user_id` with the same
 * history (identical commit ids) and a working tree equal to the source's
 * newest version (uncommitted changes are not copied). Allowed to the owner
 * and, for public projects, to anyone. ED_EQUOTA when the copy would take the
 * caller over the storage limit. Caller frees *out with proj_free(). */
int proj_fork(proj **out, proj_root *r, int64_t user_id, const char *id);

/* Total size_bytes of the projects `user_id` owns. */
int proj_usage(int64_t *out_bytes, proj_root *r, int64_t user_id);

void proj_free(proj *p);
void proj_page_free(proj_page *pg);

/* ---- files in the working tree ------------------------------------------ */

/* Check a file path: ED_EINVAL (with the reason) for an empty or absolute
 * path, empty, "." or ".." segments, a ".git" segment (any case), NUL bytes
 * within `len`, backslashes, control characters, a segment over 255 bytes or a
 * path over PROJ_PATH_MAX bytes. Every file call below applies it. */
int proj_path_validate(const char *path, size_t len);

/* Every regular file in the working tree (symbolic links and .git are not
 * listed). Readable by whoever can see the project. Caller frees with
 * proj_file_list_free(). */
int proj_files_list(proj_file_list **out, proj_root *r, int64_t user_id, const char *id);
/* The project's working tree as an O_DIRECTORY|O_NOFOLLOW descriptor
 * (caller closes), for code that reads a project's files beneath it with
 * ed_fs (a dataset version made from a project). Readable by whoever may
 * read the project: ED_ENOTFOUND otherwise, as proj_get. */
int proj_tree_open(int *out_fd, proj_root *r, int64_t user_id, const char *id);

/* Read a whole file: from the working tree when `version` is NULL, else as it
 * was in that version (a commit id, or an unambiguous prefix of at least 4 hex
 * characters). *out_buf is malloc'd (NUL-terminated for convenience, not
 * counted in *out_len); caller frees. ED_ENOTFOUND for a missing file or
 * version, ED_EINVAL for a bad path or a path through a symbolic link. */
int proj_file_read(char **out_buf, size_t *out_len, proj_root *r, int64_t user_id,
                   const char *id, const char *path, const char *version);

/* proj_file_read, and *out_etag (may be NULL) gets the file's ETag: the
 * lowercase sha256 hex of its bytes (PROJ_ETAG_LEN characters + NUL), the
 * same for a version's copy of a file as for the working tree's. A strong
 * validator: equal ETags mean equal bytes. HTTP sends it quoted. */
int proj_file_read_etag(char **out_buf, size_t *out_len, char out_etag[PROJ_ETAG_LEN + 1],
                        proj_root *r, int64_t user_id, const char *id, const char *path,
                        const char *version);

/* The ETag of a working-tree file without returning its bytes (hashes it).
 * ED_ENOTFOUND / ED_EINVAL as for proj_file_read. */
int proj_file_etag(char out_etag[PROJ_ETAG_LEN + 1], proj_root *r, int64_t user_id,
                   const char *id, const char *path);

/* Write a whole file atomically (temporary file, fsync, rename), creating
 * missing parent directories. A path ending in ".ipynb" must be a valid
 * nbformat v4 notebook (ED_EUNPROC otherwise). *out (may be NULL) gets the
 * file's entry (free with proj_file_free); *out_created (may be NULL) is true
 * when the file did not exist. ED_EQUOTA when the owner's storage limit would
 * be exceeded, ED_EPERM for a non-owner of a public project, ED_ECONFLICT when
 * a parent is a file or the path is a directory. On error nothing is written. */
int proj_file_write(proj_file **out, bool *out_created, proj_root *r, int64_t user_id,
                    const char *id, const char *path, const void *buf, size_t len);

/* proj_file_write with a precondition (compare-and-swap). `if_match`:
 *   NULL            unconditional (same as proj_file_write);
 *   an ETag         the file must exist with exactly this ETag (64 hex
 *                   characters; one pair of surrounding double quotes, as
 *                   HTTP sends it, is accepted);
 *   "*"             the file must exist (any content);
 *   ""              the file must not exist (create only).
 * The check runs under the project's lock right before the rename, so of two
 * writers holding the same ETag exactly one wins: the other gets ED_EPRECOND
 * ("precondition_failed", HTTP 412) and nothing is written. (Code running in a
 * kernel writes the tree without this lock; a kernel write that lands between
 * the check and the rename is replaced, as with any plain rename.) The new
 * ETag is in (*out)->etag. A read-modify-write loop:
 *
 *     for (int try = 0; try < 5; try++) {
 *         char etag[PROJ_ETAG_LEN + 1];
 *         if ((err = proj_file_read_etag(&buf, &len, etag, r, uid, id, path, NULL)) < 0) break;
 *         ...build `out` from buf...
 *         err = proj_file_write_if(NULL, NULL, r, uid, id, path, out, n, etag);
 *         if (err != ED_EPRECOND) break;   // 0: done; ED_EPRECOND: someone wrote, re-read
 *     }
 */
int proj_file_write_if(proj_file **out, bool *out_created, proj_root *r, int64_t user_id,
                       const char *id, const char *path, const void *buf, size_t len,
                       const char *if_match);

/* Write a file from `src_fd`, read until EOF, without holding it in memory
 * (copying job artifacts into the workspace). Same rules as proj_file_write:
 * path checks, the owner's storage limit, atomic rename, ED_EUNPROC for an
 * invalid .ipynb (a notebook is read into memory to validate it). `size` is
 * the size the caller expects (e.g. from fstat; -1 if unknown): it is checked
 * against the storage limit before copying, and the bytes actually copied are
 * checked again before the rename. The copy into a temporary file runs
 * without the project's lock; the check and rename take it. The project
 * being deleted meanwhile gives ED_ENOTFOUND and nothing is written. */
int proj_file_write_fd(proj_file **out, bool *out_created, proj_root *r, int64_t user_id,
                       const char *id, const char *path, int src_fd, int64_t size);

/* Delete a file (owner only); parent directories left empty are removed.
 * ED_ENOTFOUND when there is no such file. */
int proj_file_delete(proj_root *r, int64_t user_id, const char *id, const char *path);

void proj_file_free(proj_file *f);
void proj_file_list_free(proj_file_list *l);

/* ---- tree changes: folders, move and rename (tree_ops.c) ------------------
 * Folders are real directories of the working tree: they may be empty (git
 * keeps no empty folder, so a version does not hold one). Every call below
 * checks its paths with proj_path_validate (ED_EINVAL), is owner-only
 * (ED_EPERM / ED_ENOTFOUND as for writes), runs under the project's lock and
 * acts beneath the project's directory with *at() calls, never following a
 * symbolic link (a link on the way is ED_EINVAL), and recomputes the
 * project's size. */

/* proj_files_list, and *out_dirs gets every folder of the working tree
 * (empty ones too; size 0, modified_at its mtime), sorted by path. Caller
 * frees both with proj_file_list_free(). */
int proj_tree_list(proj_file_list **out_files, proj_file_list **out_dirs, proj_root *r,
                   int64_t user_id, const char *id);

/* Move or rename the file or folder `from` to `to` (one rename(2): ETags,
 * sizes and the bytes are unchanged; a folder moves with everything in it).
 * Missing parents of `to` are made (and removed again on failure). *out (may
 * be NULL) gets the entry at `to` (folders: size 0), *out_dir (may be NULL)
 * whether it is a folder. `from` == `to` changes nothing. ED_ENOTFOUND no
 * such file or folder; ED_EEXISTS `to` exists (never replaced:
 * RENAME_NOREPLACE); ED_EINVAL a folder into itself, a bad path or a link;
 * ED_ECONFLICT a parent of `to` is a file; ED_EUNPROC a file renamed to
 * .ipynb that is not a valid notebook. */
int proj_file_move(proj_file **out, bool *out_dir, proj_root *r, int64_t user_id,
                   const char *id, const char *from, const char *to);

/* Make the empty folder `path` (and missing parents). *out (may be NULL)
 * gets its entry. ED_EEXISTS when anything is at `path`; ED_ECONFLICT a
 * parent is a file; ED_EQUOTA the workspace is full. */
int proj_dir_create(proj_file **out, proj_root *r, int64_t user_id, const char *id,
                    const char *path);

/* Remove the folder `path` and everything in it; links inside are removed
 * as links, never followed. The root cannot be named (ED_EINVAL).
 * ED_ENOTFOUND no such folder (or a file: use proj_file_delete); ED_ECONFLICT
 * something wrote into it while it was being removed (what was removed
 * stays removed); ED_EIO. */
int proj_dir_delete(proj_root *r, int64_t user_id, const char *id, const char *path);

/* ---- versions ------------------------------------------------------------ */

/* Commit the working tree (additions, modifications, deletions) with
 * `message` (1..PROJ_MESSAGE_MAX bytes); author and committer are the user's
 * username. Files over the large-file threshold and files matched by the
 * tree's `.eddyignore` (gitignore syntax; the .eddyignore itself is always
 * committed) are kept out of the commit, and out of it also when an earlier
 * version had them; (*out)->large_files lists each with its size and sha256
 * (the manifest travels inside the commit object). The working tree is not
 * touched. An unchanged tree still makes a version (a checkpoint). Owner
 * only. Never refused for storage. Caller frees *out with proj_version_free(). */
int proj_version_create(proj_version **out, proj_root *r, int64_t user_id, const char *id,
                        const char *message);

/* One page of versions, newest first; `cursor` NULL or a next_cursor. Caller
 * frees with proj_version_page_free(). */
int proj_version_list(proj_version_page **out, proj_root *r, int64_t user_id, const char *id,
                      int limit, const char *cursor);

/* One version by id (or unambiguous prefix of >= 4 hex characters). */
int proj_version_get(proj_version **out, proj_root *r, int64_t user_id, const char *id,
                     const char *version);

/* Write `version`'s files over the working tree (owner only). If the tree
 * holds anything the newest version does not (large and ignored files
 * aside), it is first committed as "Autosave before restoring <short id>",
 * so nothing is lost; *out_autosave (may be NULL) gets that version, or NULL
 * when none was needed. *out_restored (may be NULL) gets the restored
 * version. `mode`:
 *   PROJ_RESTORE_KEEP_UNTRACKED  files the version lacks stay as they are;
 *   PROJ_RESTORE_EXACT           files the version lacks are removed, except
 *                                large and .eddyignore'd ones (by the rules
 *                                in force before the restore): exactly what
 *                                the autosave holds is removed, so it can be
 *                                got back, and what no version can hold is
 *                                never deleted.
 * Files whose bytes already match are not rewritten. ED_ECONFLICT (nothing
 * written in keep_untracked mode) when a directory stands where the version
 * has a file or a file where it needs a directory. HEAD does not move: the
 * next proj_version_create records the restore. ED_EINVAL for another mode. */
int proj_version_restore(proj_version **out_restored, proj_version **out_autosave,
                         proj_root *r, int64_t user_id, const char *id, const char *version,
                         proj_restore_mode mode);

/* "keep_untracked" (or NULL) / "exact" into *out; ED_EINVAL otherwise. */
int proj_restore_mode_parse(proj_restore_mode *out, const char *s);

void proj_version_free(proj_version *v);
void proj_version_page_free(proj_version_page *l);

/* ---- notebooks ------------------------------------------------------------ */

/* Validate `len` bytes as an nbformat v4 notebook: a JSON object with
 * nbformat 4, an integer nbformat_minor, a metadata object and a cells array;
 * each cell a code/markdown/raw cell with source and metadata; code cells with
 * outputs and execution_count; outputs stream/display_data/execute_result/error
 * with their fields; ids required from nbformat_minor 5 on, optional before
 * (4.0-4.4 are taken as they are). 0, or ED_EUNPROC with a message naming
 * the first bad place as a user finds it: the cell as the page counts it
 * (from 1), its id and the JSON path ("cell 3 (id abc) at
 * cells[2].outputs[0]: stream output needs 'text'"); malformed JSON names
 * line and column; nbformat 1-3 says how to convert (nbformat.c). */
int proj_nb_validate(const char *buf, size_t len);

/* The notebook in `buf` (`len` bytes of nbformat v4 JSON) as a script in
 * the percent format (`jupyter nbconvert --to script` / Jupytext / VS Code
 * read it back as cells): "# %%" before each code cell, "# %% [markdown]"
 * and "# %% [raw]" before the others with their lines commented, IPython
 * magics and shell escapes commented out (a cell under a cell magic such as
 * %%bash entirely), cells apart by a blank line, no outputs (export.c).
 * *out_buf is malloc'd and NUL-terminated (caller frees), *out_len (may be
 * NULL) its length. ED_EUNPROC as proj_nb_validate, ED_ENOMEM. */
int proj_nb_export_py(char **out_buf, size_t *out_len, const char *buf, size_t len);

/* ---- diffs ---------------------------------------------------------------- */

#define PROJ_DIFF_MAX_BYTES  (16 * 1024 * 1024)  /* per side */
#define PROJ_DIFF_MAX_LINES  200000               /* per text compared */
#define PROJ_DIFF_MAX_CELLS  5000                 /* per notebook */

/* The diff of `path` between `from` and `to` (each a version id or prefix,
 * or NULL / "working" for the working tree) as a malloc'd JSON document in
 * *out_json (caller frees): {path, status, kind, from:{size,sha256}|null,
 * to:...} and, by kind, "hunks" (text: line hunks [{old_start, old_lines,
 * new_start, new_lines, lines:[{op:" "|"-"|"+", text}]}], unchanged runs
 * folded to 3 lines of context), "cells" and "metadata" (notebook: per cell
 * {status added|removed|modified|unchanged, id, cell_type, from_index,
 * to_index, source:hunks, outputs:{text:hunks, images:[{mime, from_sha256,
 * to_sha256, from_output, to_output, changed}]}, metadata:[{key,from,to}]};
 * never an image's base64), or nothing more (binary). ED_ENOTFOUND for a
 * missing version or a file in neither, ED_ETOOBIG past the PROJ_DIFF_MAX_*
 * bounds, ED_EUNPROC for a .ipynb that is not a notebook. */
int proj_diff(char **out_json, proj_root *r, int64_t user_id, const char *id, const char *path,
              const char *from, const char *to);

/* proj_diff on two buffers (a or b NULL: the file is absent on that side). */
int proj_diff_buffers(char **out_json, const char *path, const char *a, size_t alen,
                      const char *b, size_t blen);

#endif
