/*
 * ed_fs.h - opening files inside trees that users can write to.
 *
 * A job's output directory, a kernel's work directory, a project's working
 * tree: user code may create, rename and swap anything in them, at any
 * moment, while the server reads them. Checking a path first (realpath,
 * stat, string prefixes) and then opening it by name loses that race: a
 * directory swapped for a symbolic link in between sends the open anywhere
 * on the host. So everything here starts at a directory descriptor the
 * caller opened (the root of the tree) and walks beneath it with the kernel
 * enforcing the rules at the moment of the open:
 *
 *   - openat2() with RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
 *     RESOLVE_NO_MAGICLINKS where the kernel has it (Linux 5.6+);
 *   - elsewhere (ENOSYS, or a seccomp profile that refuses it) one
 *     component at a time with openat(O_NOFOLLOW), never "..".
 *
 * A symbolic link anywhere on the way, a component that is not a directory,
 * or a last component of the wrong type is ED_ENOTFOUND: to a client it is
 * simply not there. errno then says why (for callers that word errors
 * differently, such as projects/): ELOOP a symbolic link, ENOENT missing,
 * ENOTDIR a component (or an O_DIRECTORY leaf) that is not a directory,
 * EISDIR a directory where a file was wanted, ENXIO neither a regular file
 * nor a directory (FIFO, socket, device). A malformed relative path
 * (ed_fs_path_check) is ED_EINVAL; any other failure is ED_EIO.
 *
 *     int dir, fd;
 *     if ((err = ed_fs_open_dir(&dir, "/var/lib/eddy/jobs/7/output")) < 0)
 *         return err;
 *     err = ed_fs_open_beneath(&fd, dir, "ckpt/model.txt", O_RDONLY, 0);
 *
 * Every descriptor returned is O_CLOEXEC and owned by the caller (close it).
 * All functions are thread-safe.
 */
#ifndef ED_FS_H
#define ED_FS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>
#include <sys/types.h>

#define ED_FS_PATH_MAX 4096     /* bytes of a relative path, NUL excluded */
#define ED_FS_WALK_SKIP 1       /* from an ed_fs_walk callback: do not enter this directory */

/* 0 when `rel` (len bytes) is a relative path the walk accepts: not empty,
 * not absolute, no NUL, no empty, "." or ".." component, at most
 * ED_FS_PATH_MAX bytes, components of at most 255 bytes. ED_EINVAL otherwise.
 * This keeps paths canonical; it is not the defence (the walk is). */
int ed_fs_path_check(const char *rel, size_t len);

/* Open the directory at the trusted path `path` (its parents are the
 * server's own: data directory, job directory), refusing a symbolic link as
 * its last component: O_RDONLY | O_DIRECTORY | O_NOFOLLOW. *out_fd gets it.
 * ED_ENOTFOUND (missing, a link, not a directory), ED_EIO. */
int ed_fs_open_dir(int *out_fd, const char *path);

/* Open `rel` beneath the directory `root_fd` with open(2) `flags` (O_RDONLY,
 * O_WRONLY | O_CREAT | O_EXCL, O_DIRECTORY, ...) and `mode` (used with
 * O_CREAT). O_NOFOLLOW and O_CLOEXEC are always added. The result is a
 * regular file, or a directory when `flags` has O_DIRECTORY; anything else is
 * closed again and refused, and opening it cannot block (a FIFO is opened
 * non-blocking for the check). O_NONBLOCK stays on only if the caller asked.
 * ED_EINVAL (malformed `rel`), ED_ENOTFOUND (errno as in the header
 * comment), ED_EIO. */
int ed_fs_open_beneath(int *out_fd, int root_fd, const char *rel, int flags, mode_t mode);

/* Walk beneath `root_fd` to the directory holding the last component of
 * `rel`: *out_dir gets that directory (root_fd itself duplicated when `rel`
 * has one component), *out_name points into `rel` at the last component.
 * With `create`, missing directories are made with `mode` and their number
 * is stored in *out_created (may be NULL); they are always the innermost
 * ones, so a caller can remove them again. The walk is always one component
 * at a time with O_NOFOLLOW; the last component is not looked at.
 * ED_EINVAL (malformed), ED_ENOTFOUND (errno as above), ED_EIO. */
int ed_fs_open_parent(int *out_dir, const char **out_name, int *out_created, int root_fd,
                      const char *rel, bool create, mode_t mode);

/* Read the whole regular file open at `fd` (from offset 0) into a malloc'd,
 * NUL-terminated buffer: *out_buf (caller frees), *out_len bytes. The size
 * comes from fstat on the descriptor; a file that shrinks meanwhile gives
 * what is there, one that grows is cut at the size it had. ED_ENOTFOUND
 * (not a regular file, errno EISDIR or ENXIO), ED_ETOOBIG (over `max`
 * bytes), ED_ENOMEM, ED_EIO. */
int ed_fs_read_fd(char **out_buf, size_t *out_len, int fd, size_t max);

/* ed_fs_open_beneath(O_RDONLY) then ed_fs_read_fd. */
int ed_fs_read_beneath(char **out_buf, size_t *out_len, int root_fd, const char *rel,
                       size_t max);

/* Called for each regular file and directory found by ed_fs_walk, with its
 * path relative to the walk's root ("a/b.txt") and its lstat. Return 0 to go
 * on, ED_FS_WALK_SKIP for a directory not to be entered, or a negative ED_E*
 * code to stop the walk (ed_fs_walk returns it). */
typedef int (*ed_fs_walk_fn)(const char *rel, const struct stat *sb, void *payload);

/* List the tree beneath the directory `root_fd`, depth first, in directory
 * order: `fn` sees every regular file and directory; symbolic links, FIFOs,
 * sockets and devices are never reported nor followed. Directories are
 * opened with openat(O_DIRECTORY | O_NOFOLLOW) from their parent's
 * descriptor, so a directory swapped for a link meanwhile is skipped, never
 * followed. The root's entries are at depth 0; a directory at depth d is
 * entered only when d < max_depth. Entries whose path would pass
 * ED_FS_PATH_MAX are skipped. After `max_entries` calls of `fn` the walk
 * stops and returns ED_ETOOBIG. Unreadable subdirectories are skipped.
 * 0, ED_ETOOBIG, ED_EIO (the root cannot be read), or `fn`'s code. */
int ed_fs_walk(int root_fd, int max_depth, size_t max_entries, ed_fs_walk_fn fn, void *payload);

/* For tests only: with `on`, ed_fs_open_beneath walks one component at a
 * time as on a kernel without openat2. Process-wide. */
void ed_fs__force_fallback(bool on);

/* For tests only: whether the last ed_fs_open_beneath on this thread used
 * openat2. */
bool ed_fs__used_openat2(void);

#endif
