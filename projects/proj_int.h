/*
 * proj_int.h - private to projects/: the root, locking and shared helpers.
 */
#ifndef PROJ_INT_H
#define PROJ_INT_H

#include "proj.h"

#include <dirent.h>
#include <git2.h>
#include <pthread.h>

#define PROJ_LOCK_STRIPES 64
#define PROJ_USER_STRIPES 16

struct proj_root {
    ed_store       *store;        /* borrowed */
    char           *dir;          /* absolute or as given; repositories live below */
    int             dirfd;        /* O_DIRECTORY on dir */
    int64_t         user_limit;   /* bytes per user over owned projects; <= 0 unlimited */
    int64_t         large_file_bytes; /* versions keep bigger files out of git; 0 (root.c's
                                         calloc): PROJ_LARGE_FILE_DEFAULT. Set with
                                         proj_root_set_large_file_bytes (versions.c). */
    /* Git and the working tree are not safe against concurrent writers: every
     * operation on a project holds its stripe (keyed by the project id). */
    pthread_mutex_t proj_locks[PROJ_LOCK_STRIPES];
    /* The storage check (sum over a user's projects) and the write that
     * follows must not interleave with another write of the same user to a
     * different project. Always taken after a project stripe, never before. */
    pthread_mutex_t user_locks[PROJ_USER_STRIPES];
    struct proj_ws *ws;           /* workspace quotas (workspace.c, proj_ws.h); NULL: none */
};

/* Access a caller needs for an operation. */
typedef enum { PROJ__READ, PROJ__WRITE } proj__access;

/* Lock/unlock the stripe of project `id` / of user `user_id`. */
void proj__lock(proj_root *r, const char *id);
void proj__unlock(proj_root *r, const char *id);
void proj__user_lock(proj_root *r, int64_t user_id);
void proj__user_unlock(proj_root *r, int64_t user_id);

/* Load project `id` and check `user_id` may `access` it: ED_ENOTFOUND for
 * missing / invisible, ED_EPERM for writes by a non-owner of a public one.
 * Call with the project's stripe held. Caller frees *out. */
int proj__load(proj **out, proj_root *r, int64_t user_id, const char *id, proj__access access);

/* Open the project's directory (O_DIRECTORY|O_NOFOLLOW). ED_ENOTFOUND if gone. */
int proj__open_dir(int *out_fd, proj_root *r, const char *id);

/* "<root>/<id>" in a malloc'd string for libgit2, or NULL (ED_ENOMEM set). */
char *proj__repo_path(proj_root *r, const char *id);

/* Recompute the project's size from disk and store it with updated_at = now.
 * Failure is logged, not returned: the size is derived and the next change
 * recomputes it. */
void proj__touch(proj_root *r, const char *id);

/* Apparent bytes of every regular file below `fd` (not following links). */
int64_t proj__du(int fd);

/* A directory stream on `fd`, which it takes over: closed when that fails
 * (errno kept); NULL for an `fd` below 0 too. */
DIR *proj__dir_open(int fd);

/* Remove `name` under `dirfd` recursively without following links. 0 or
 * ED_EIO (ENOENT is success). */
int proj__rm_rf(int dirfd, const char *name);

/* Step `s` (prepared and bound; finalized here) for one int64 (its first
 * column) into *out. 1 when a row came, 0 when none did (*out untouched),
 * or an error named `what`. */
int proj__int64_row(int64_t *out, sqlite3_stmt *s, const char *what);

/* ED_EQUOTA unless `user_id`'s usage - `freed` + `added` fits the limit.
 * Call with the user's stripe held. */
int proj__quota_check(proj_root *r, int64_t user_id, int64_t freed, int64_t added);

/* The ETag (sha256 hex) of `len` bytes. */
void proj__etag_of(char out[PROJ_ETAG_LEN + 1], const void *buf, size_t len);

/* sha256 hex of what `fd` yields until EOF; *out_size (may be NULL) gets the
 * byte count. ED_EIO on a read error. */
int proj__sha256_fd(char out[PROJ_ETAG_LEN + 1], int64_t *out_size, int fd);

/* Write `len` bytes to `path` beneath the project directory `base`
 * atomically (as proj_file_write, without access or storage checks; parents
 * made, links never followed; a link at `path` itself is replaced). `exec`
 * sets mode 0755. For restores (versions.c). */
int proj__put(int base, const char *path, const void *buf, size_t len, bool exec);

/* Remove the regular file `path` beneath `base` (links never followed) and
 * parents left empty. ENOENT is success. */
int proj__remove(int base, const char *path);

/* .eddyignore rules (eddyignore.c, gitignore syntax). */
typedef struct proj__ignore proj__ignore;
int proj__ignore_parse(proj__ignore **out, const char *text, size_t len);
/* Is the file `path` ignored (itself or a parent directory)? NULL: no rules. */
bool proj__ignore_match(const proj__ignore *ig, const char *path);
void proj__ignore_free(proj__ignore *ig);

/* Wrap the last libgit2 error as ED_EIO "<what>: <message>". */
int proj__git_error(const char *what);

/* The username of `user_id` (malloc'd). ED_ENOTFOUND if no such user. */
int proj__username(char **out, proj_root *r, int64_t user_id);

/* Walk to the directory holding the last component of `path` beneath the
 * project directory `base`, never following a link (files.c has the whole
 * contract); with `create`, missing parents are made and counted in
 * *created. proj__undo_mkdirs removes those `created` innermost parents. */
int proj__open_parent(int *out_fd, const char **out_name, int *created, int base,
                      const char *path, bool create);
void proj__undo_mkdirs(int base, const char *path, int created);

/* ED_EQUOTA for a full tree (ENOSPC, EDQUOT), else ED_EIO. */
int proj__io_code(int e);

/* Open the project's repository. */
int proj__repo_open(git_repository **out, proj_root *r, const char *id);

/* Make a fresh repository in `path` (which must not exist): initial branch
 * main, core.symlinks off so a checkout never creates a link. */
int proj__repo_init(git_repository **out, const char *path);

/* Resolve a version id (4..40 hex characters) to a commit. ED_EINVAL for a
 * malformed id, ED_ENOTFOUND for none in this repository. */
int proj__commit_lookup(git_commit **out, git_repository *repo, const char *version);

#endif
