/* Files in a project's working tree: path checks, symlink-safe traversal
 * (one component at a time with O_NOFOLLOW), atomic writes. */
#include "proj_int.h"

#include "ed_crypto.h"
#include "ed_error.h"
#include "ed_fs.h"
#include "ed_log.h"

#include <openssl/evp.h>
#include <sodium.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#define SEGMENT_MAX 255
#define MAX_DEPTH   64

/* Well-formed UTF-8 (no overlongs, surrogates or code points past U+10FFFF):
 * paths appear in JSON and in git trees. */
static bool utf8_ok(const unsigned char *s, size_t n)
{
    size_t i = 0;

    while (i < n) {
        unsigned char c = s[i];
        size_t k;
        uint32_t cp;
        if (c < 0x80) {
            i++;
            continue;
        }
        if (c >= 0xc2 && c <= 0xdf)
            k = 1, cp = c & 0x1f;
        else if (c >= 0xe0 && c <= 0xef)
            k = 2, cp = c & 0x0f;
        else if (c >= 0xf0 && c <= 0xf4)
            k = 3, cp = c & 0x07;
        else
            return false;
        if (i + k >= n)
            return false;   /* truncated sequence */
        for (size_t j = 1; j <= k; j++) {
            if ((s[i + j] & 0xc0) != 0x80)
                return false;
            cp = (cp << 6) | (s[i + j] & 0x3f);
        }
        if ((k == 2 && cp < 0x800) || (k == 3 && (cp < 0x10000 || cp > 0x10ffff)) ||
            (cp >= 0xd800 && cp <= 0xdfff))
            return false;
        i += k + 1;
    }
    return true;
}

int proj_path_validate(const char *path, size_t len)
{
    size_t seg = 0, depth = 1;

    if (path == NULL || len == 0)
        return ed_error_set(ED_EINVAL, "path is empty");
    if (len > PROJ_PATH_MAX)
        return ed_error_set(ED_EINVAL, "path is longer than %d bytes", PROJ_PATH_MAX);
    if (memchr(path, '\0', len))
        return ed_error_set(ED_EINVAL, "path contains a NUL byte");
    if (path[0] == '/')
        return ed_error_set(ED_EINVAL, "path must be relative, not absolute");
    if (!utf8_ok((const unsigned char *)path, len))
        return ed_error_set(ED_EINVAL, "path is not valid UTF-8");
    for (size_t i = 0; i <= len; i++) {
        if (i < len && path[i] != '/') {
            unsigned char c = (unsigned char)path[i];
            if (c == '\\')
                return ed_error_set(ED_EINVAL, "path contains a backslash");
            if (c < 0x20 || c == 0x7f)
                return ed_error_set(ED_EINVAL, "path contains a control character");
            continue;
        }
        /* end of the segment path[seg, i) */
        size_t n = i - seg;
        const char *s = path + seg;
        if (n == 0)
            return ed_error_set(ED_EINVAL, "path has an empty segment");
        if ((n == 1 && s[0] == '.') || (n == 2 && s[0] == '.' && s[1] == '.'))
            return ed_error_set(ED_EINVAL, "path has a '.' or '..' segment");
        if (n == 4 && strncasecmp(s, ".git", 4) == 0)
            return ed_error_set(ED_EINVAL, "paths under .git are not files of the project");
        if (n > SEGMENT_MAX)
            return ed_error_set(ED_EINVAL, "path segment longer than %d bytes", SEGMENT_MAX);
        if (i < len && ++depth > MAX_DEPTH)
            return ed_error_set(ED_EINVAL, "path nested deeper than %d", MAX_DEPTH);
        seg = i + 1;
    }
    return 0;
}

static int check_path(const char *path)
{
    return proj_path_validate(path, path ? strlen(path) : 0);
}

/* Give the thread's last message (from ed_fs) the code `code` instead. */
static int recode(int code)
{
    char msg[1024];

    snprintf(msg, sizeof(msg), "%s", ed_error_last());
    return ed_error_set(code, "%s", msg);
}

/* An ed_fs refusal in this module's codes: a symbolic link anywhere is
 * ED_EINVAL ("links are not followed"); a component that is not a directory
 * is ED_ECONFLICT when writing (`create`), ED_ENOTFOUND otherwise. */
static int fs_error(int err, int why, bool create)
{
    if (err != ED_ENOTFOUND)
        return err;
    if (why == ELOOP)
        return recode(ED_EINVAL);
    if (why == ENOTDIR && create)
        return recode(ED_ECONFLICT);
    return err;
}

/*
 * Walk to the directory holding the last component of `path`, starting at the
 * project directory `base`, never following a symbolic link (ed_fs: one
 * component at a time with O_NOFOLLOW). With `create`, missing directories
 * are made and their count is stored in *created (for undo). *out_fd gets the
 * parent directory, *out_name points into `path` at the last component.
 * ED_ENOTFOUND (a parent is missing and !create), ED_EINVAL (a parent is a
 * link), ED_ECONFLICT (a parent is not a directory).
 */
int proj__open_parent(int *out_fd, const char **out_name, int *created, int base,
                       const char *path, bool create)
{
    int err = ed_fs_open_parent(out_fd, out_name, created, base, path, create, 0755);

    return err < 0 ? fs_error(err, errno, create) : 0;
}

/* Remove the `created` innermost-first directories that open_parent made. */
void proj__undo_mkdirs(int base, const char *path, int created)
{
    char buf[PROJ_PATH_MAX + 1];

    /* once one parent was missing all below it were made: they are the
     * innermost `created` parents */
    snprintf(buf, sizeof(buf), "%s", path);
    for (int i = 0; i < created; i++) {
        char *slash = strrchr(buf, '/');
        if (slash == NULL)
            return;
        *slash = '\0';
        unlinkat(base, buf, AT_REMOVEDIR);
    }
}

/* Remove now-empty parents of `path`, innermost first, stopping at the first
 * that is not empty. */
static void prune_empty_parents(int base, const char *path)
{
    char buf[PROJ_PATH_MAX + 1];
    char *slash;

    snprintf(buf, sizeof(buf), "%s", path);
    while ((slash = strrchr(buf, '/')) != NULL) {
        *slash = '\0';
        if (unlinkat(base, buf, AT_REMOVEDIR) < 0)
            return;
    }
}

static int64_t mtime_ms(const struct stat *sb)
{
    return (int64_t)sb->st_mtim.tv_sec * 1000 + sb->st_mtim.tv_nsec / 1000000;
}

static int file_entry(proj_file **out, const char *path, const struct stat *sb)
{
    proj_file *f = calloc(1, sizeof(*f));

    *out = NULL;
    if (f == NULL || (f->path = strdup(path)) == NULL) {
        free(f);
        return ed_error_set(ED_ENOMEM, "file entry");
    }
    f->size = sb->st_size;
    f->modified_at = mtime_ms(sb);
    *out = f;
    return 0;
}

void proj_file_free(proj_file *f)
{
    if (f == NULL)
        return;
    free(f->path);
    free(f);
}

void proj_file_list_free(proj_file_list *l)
{
    if (l == NULL)
        return;
    for (size_t i = 0; i < l->count; i++)
        free(l->items[i].path);
    free(l->items);
    free(l);
}

/* ---- list ---------------------------------------------------------------- */

typedef struct lister {
    proj_file_list *l;
    size_t          cap;
    proj_file_list *dirs;       /* NULL: folders are not listed */
    size_t          dcap;
} lister;

/* Append `rel` to `l` (capacity *cap). */
static int list_add(proj_file_list *l, size_t *cap, const char *rel, int64_t size,
                    const struct stat *sb)
{
    if (l->count == *cap) {
        size_t ncap = *cap ? *cap * 2 : 32;
        proj_file *items = realloc(l->items, ncap * sizeof(*items));
        if (items == NULL)
            return ed_error_set(ED_ENOMEM, "file list");
        l->items = items;
        *cap = ncap;
    }
    if ((l->items[l->count].path = strdup(rel)) == NULL)
        return ed_error_set(ED_ENOMEM, "file list");
    l->items[l->count].size = size;
    l->items[l->count].modified_at = mtime_ms(sb);
    l->items[l->count].etag[0] = '\0';
    l->count++;
    return 0;
}

/* ed_fs_walk callback: regular files are project files; .git (any case, at
 * any depth) is not part of the tree, nor is a directory deeper than any
 * path a client could name. Links, sockets and devices never reach here. */
static int list_entry(const char *rel, const struct stat *sb, void *payload)
{
    lister *ls = payload;
    const char *name = strrchr(rel, '/') ? strrchr(rel, '/') + 1 : rel;
    int err;

    if (strcasecmp(name, ".git") == 0)
        return ED_FS_WALK_SKIP;
    if (S_ISDIR(sb->st_mode)) {
        if (strlen(rel) + 1 > PROJ_PATH_MAX)
            return ED_FS_WALK_SKIP;
        if (ls->dirs && (err = list_add(ls->dirs, &ls->dcap, rel, 0, sb)) < 0)
            return err;
        return 0;
    }
    return list_add(ls->l, &ls->cap, rel, sb->st_size, sb);
}

static int cmp_file(const void *a, const void *b)
{
    return strcmp(((const proj_file *)a)->path, ((const proj_file *)b)->path);
}

/* The end of an operation under project `id`'s lock: `fd` and `fd2` closed
 * (-1 skipped), the lock released, `p` freed. Returns `err`. */
static int finish(proj_root *r, const char *id, proj *p, int fd, int fd2, int err)
{
    if (fd >= 0)
        close(fd);
    if (fd2 >= 0)
        close(fd2);
    proj__unlock(r, id);
    proj_free(p);
    return err;
}

/* The walk behind proj_files_list and proj_tree_list (`out_dirs` NULL: no
 * folders). */
int proj_tree_open(int *out_fd, proj_root *r, int64_t user_id, const char *id)
{
    proj *p = NULL;
    int err;

    *out_fd = -1;
    proj__lock(r, id);
    if ((err = proj__load(&p, r, user_id, id, PROJ__READ)) == 0)
        err = proj__open_dir(out_fd, r, id);
    proj__unlock(r, id);
    proj_free(p);
    return err;
}

static int list_tree(proj_file_list **out, proj_file_list **out_dirs, proj_root *r,
                     int64_t user_id, const char *id)
{
    lister ls = {0};
    proj *p = NULL;
    int fd = -1, err;

    *out = NULL;
    if (out_dirs)
        *out_dirs = NULL;
    proj__lock(r, id);
    if ((err = proj__load(&p, r, user_id, id, PROJ__READ)) < 0 ||
        (err = proj__open_dir(&fd, r, id)) < 0)
        goto done;
    if ((ls.l = calloc(1, sizeof(*ls.l))) == NULL ||
        (out_dirs && (ls.dirs = calloc(1, sizeof(*ls.dirs))) == NULL)) {
        err = ed_error_set(ED_ENOMEM, "file list");
        goto fail;
    }
    if ((err = ed_fs_walk(fd, MAX_DEPTH, SIZE_MAX, list_entry, &ls)) < 0)
        goto fail;
    if (ls.l->count)
        qsort(ls.l->items, ls.l->count, sizeof(*ls.l->items), cmp_file);
    if (ls.dirs && ls.dirs->count)
        qsort(ls.dirs->items, ls.dirs->count, sizeof(*ls.dirs->items), cmp_file);
    *out = ls.l;
    if (out_dirs)
        *out_dirs = ls.dirs;
    goto done;
fail:
    proj_file_list_free(ls.l);
    proj_file_list_free(ls.dirs);
done:
    return finish(r, id, p, fd, -1, err);
}

int proj_files_list(proj_file_list **out, proj_root *r, int64_t user_id, const char *id)
{
    return list_tree(out, NULL, r, user_id, id);
}

int proj_tree_list(proj_file_list **out_files, proj_file_list **out_dirs, proj_root *r,
                   int64_t user_id, const char *id)
{
    return list_tree(out_files, out_dirs, r, user_id, id);
}

/* ---- read ------------------------------------------------------------------ */

/* 0 when `name` in dir is a regular file (not followed if a link):
 * ED_ENOTFOUND when missing or a directory, ED_EINVAL for a symbolic link. */
static int check_regular(int dir, const char *name, const char *path)
{
    struct stat sb;

    if (fstatat(dir, name, &sb, AT_SYMLINK_NOFOLLOW) < 0)
        return errno == ENOENT ? ed_error_set(ED_ENOTFOUND, "no file %s", path)
                               : ed_error_set(ED_EIO, "stat %s: %s", path, strerror(errno));
    if (S_ISLNK(sb.st_mode))
        return ed_error_set(ED_EINVAL, "%s is a symbolic link; links are not followed", path);
    if (!S_ISREG(sb.st_mode))
        return ed_error_set(ED_ENOTFOUND, "no file %s (it is a directory)", path);
    return 0;
}

static int read_worktree(char **out_buf, size_t *out_len, proj_root *r, const char *id,
                         const char *path)
{
    int base = -1, fd = -1, err;

    if ((err = proj__open_dir(&base, r, id)) < 0)
        return err;
    /* beneath the project's descriptor, no link followed at any component */
    if ((err = ed_fs_open_beneath(&fd, base, path, O_RDONLY, 0)) < 0)
        err = fs_error(err, errno, false);
    else
        err = ed_fs_read_fd(out_buf, out_len, fd, SIZE_MAX / 2);
    if (fd >= 0)
        close(fd);
    close(base);
    return err;
}

static int read_version(char **out_buf, size_t *out_len, proj_root *r, const char *id,
                        const char *path, const char *version)
{
    git_repository *repo = NULL;
    git_commit *commit = NULL;
    git_tree *tree = NULL;
    git_tree_entry *entry = NULL;
    git_blob *blob = NULL;
    int err, rc;

    if ((err = proj__repo_open(&repo, r, id)) < 0 ||
        (err = proj__commit_lookup(&commit, repo, version)) < 0)
        goto done;
    if (git_commit_tree(&tree, commit) < 0) {
        err = proj__git_error("read version tree");
        goto done;
    }
    rc = git_tree_entry_bypath(&entry, tree, path);
    if (rc == GIT_ENOTFOUND) {
        err = ed_error_set(ED_ENOTFOUND, "no file %s in version %.12s", path, version);
        goto done;
    }
    if (rc < 0) {
        err = proj__git_error("find file in version");
        goto done;
    }
    if (git_tree_entry_type(entry) != GIT_OBJECT_BLOB) {
        err = ed_error_set(ED_ENOTFOUND, "no file %s in version %.12s (a directory)", path,
                           version);
        goto done;
    }
    if (git_tree_entry_filemode(entry) == GIT_FILEMODE_LINK) {
        err = ed_error_set(ED_EINVAL, "%s is a symbolic link; links are not followed", path);
        goto done;
    }
    if (git_blob_lookup(&blob, repo, git_tree_entry_id(entry)) < 0) {
        err = proj__git_error("read file in version");
        goto done;
    }
    {
        size_t n = (size_t)git_blob_rawsize(blob);
        char *buf = malloc(n + 1);
        if (buf == NULL) {
            err = ed_error_set(ED_ENOMEM, "read %s (%zu bytes)", path, n);
            goto done;
        }
        memcpy(buf, git_blob_rawcontent(blob), n);
        buf[n] = '\0';
        *out_buf = buf;
        *out_len = n;
    }
done:
    git_blob_free(blob);
    git_tree_entry_free(entry);
    git_tree_free(tree);
    git_commit_free(commit);
    git_repository_free(repo);
    return err;
}

int proj_file_read_etag(char **out_buf, size_t *out_len, char out_etag[PROJ_ETAG_LEN + 1],
                        proj_root *r, int64_t user_id, const char *id, const char *path,
                        const char *version)
{
    proj *p = NULL;
    int err;

    *out_buf = NULL;
    *out_len = 0;
    if (out_etag)
        out_etag[0] = '\0';
    if ((err = check_path(path)) < 0)
        return err;
    proj__lock(r, id);
    if ((err = proj__load(&p, r, user_id, id, PROJ__READ)) < 0)
        goto done;
    if (version)
        err = read_version(out_buf, out_len, r, id, path, version);
    else
        err = read_worktree(out_buf, out_len, r, id, path);
done:
    proj__unlock(r, id);
    proj_free(p);
    /* hashed outside the lock: the bytes are ours now */
    if (err == 0 && out_etag)
        proj__etag_of(out_etag, *out_buf, *out_len);
    return err;
}

int proj_file_read(char **out_buf, size_t *out_len, proj_root *r, int64_t user_id,
                   const char *id, const char *path, const char *version)
{
    return proj_file_read_etag(out_buf, out_len, NULL, r, user_id, id, path, version);
}

/* ---- write ------------------------------------------------------------------- */

static bool ends_with_ipynb(const char *path)
{
    size_t n = strlen(path);
    return n >= 6 && strcasecmp(path + n - 6, ".ipynb") == 0;
}

/* Size of the regular file at `path` now (0 if absent); refuses links and
 * directories at the last component. */
static int existing_size(int64_t *out, bool *exists, int base, const char *path)
{
    const char *name;
    struct stat sb;
    int dir, err;

    *out = 0;
    *exists = false;
    err = proj__open_parent(&dir, &name, NULL, base, path, false);
    if (err == ED_ENOTFOUND)
        return 0;   /* parents will be created */
    if (err < 0)
        return err;
    if (fstatat(dir, name, &sb, AT_SYMLINK_NOFOLLOW) < 0) {
        err = errno == ENOENT ? 0 : ed_error_set(ED_EIO, "stat %s: %s", path, strerror(errno));
    } else if (S_ISLNK(sb.st_mode)) {
        err = ed_error_set(ED_EINVAL, "%s is a symbolic link; links are not written through",
                           path);
    } else if (S_ISDIR(sb.st_mode)) {
        err = ed_error_set(ED_ECONFLICT, "%s is a directory", path);
    } else if (!S_ISREG(sb.st_mode)) {
        err = ed_error_set(ED_EINVAL, "%s is not a regular file", path);
    } else {
        *out = sb.st_size;
        *exists = true;
    }
    close(dir);
    return err;
}

static int write_all(int fd, const void *buf, size_t len)
{
    const char *p = buf;

    while (len > 0) {
        ssize_t n = write(fd, p, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -1;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

/* sha256 with OpenSSL's libcrypto (already a dependency through libcurl):
 * it uses the CPU's SHA extensions, about ten times libsodium's portable
 * code (1.8 GB/s against 0.17 GB/s on the test host), and every write, ETag
 * read and large-file manifest hashes whole files. */
typedef struct hasher {
    EVP_MD_CTX *ctx;
} hasher;

static int hasher_init(hasher *h)
{
    if ((h->ctx = EVP_MD_CTX_new()) == NULL || EVP_DigestInit_ex(h->ctx, EVP_sha256(), NULL) != 1) {
        EVP_MD_CTX_free(h->ctx);
        h->ctx = NULL;
        return ed_error_set(ED_ENOMEM, "sha256");
    }
    return 0;
}

static void hasher_update(hasher *h, const void *buf, size_t len)
{
    EVP_DigestUpdate(h->ctx, buf, len);
}

/* Finish into lowercase hex and free. */
static void hasher_final(hasher *h, char out[PROJ_ETAG_LEN + 1])
{
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int n = 0;

    EVP_DigestFinal_ex(h->ctx, digest, &n);
    EVP_MD_CTX_free(h->ctx);
    h->ctx = NULL;
    sodium_bin2hex(out, PROJ_ETAG_LEN + 1, digest, n > 32 ? 32 : n);
}

static void hasher_discard(hasher *h)
{
    EVP_MD_CTX_free(h->ctx);
    h->ctx = NULL;
}

void proj__etag_of(char out[PROJ_ETAG_LEN + 1], const void *buf, size_t len)
{
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int n = 0;

    if (EVP_Digest(buf, len, digest, &n, EVP_sha256(), NULL) != 1) {
        ed_sha256_hex(out, buf, len);   /* same value, slower */
        return;
    }
    sodium_bin2hex(out, PROJ_ETAG_LEN + 1, digest, n > 32 ? 32 : n);
}

int proj__sha256_fd(char out[PROJ_ETAG_LEN + 1], int64_t *out_size, int fd)
{
    hasher h;
    int64_t total = 0;
    char *chunk = malloc(1 << 20);
    int err;

    if (chunk == NULL)
        return ed_error_set(ED_ENOMEM, "hash buffer");
    if ((err = hasher_init(&h)) < 0) {
        free(chunk);
        return err;
    }
    for (;;) {
        ssize_t n = read(fd, chunk, 1 << 20);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            int e = errno;
            free(chunk);
            hasher_discard(&h);
            return ed_error_set(e == EISDIR ? ED_ENOTFOUND : ED_EIO, "read: %s", strerror(e));
        }
        if (n == 0)
            break;
        hasher_update(&h, chunk, (size_t)n);
        total += n;
    }
    free(chunk);
    hasher_final(&h, out);
    if (out_size)
        *out_size = total;
    return 0;
}

/* The ETag of the regular file `name` in `dir` (not followed if a link). */
static int etag_at(char out[PROJ_ETAG_LEN + 1], int dir, const char *name, const char *path)
{
    int fd, err;

    if ((err = check_regular(dir, name, path)) < 0)
        return err;
    if ((fd = openat(dir, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK)) < 0)
        return errno == ENOENT ? ed_error_set(ED_ENOTFOUND, "no file %s", path)
                               : ed_error_set(ED_EIO, "open %s: %s", path, strerror(errno));
    err = proj__sha256_fd(out, NULL, fd);
    close(fd);
    return err;
}

/* `if_match` without one pair of surrounding quotes, in `buf`. */
static const char *unquote(char buf[PROJ_ETAG_LEN + 3], const char *if_match)
{
    size_t n = strlen(if_match);

    if (n >= 2 && n <= PROJ_ETAG_LEN + 2 && if_match[0] == '"' && if_match[n - 1] == '"') {
        memcpy(buf, if_match + 1, n - 2);
        buf[n - 2] = '\0';
        return buf;
    }
    return if_match;
}

/* The precondition of proj_file_write_if against `name` in `dir` now. */
static int check_if_match(int dir, const char *name, const char *path, const char *if_match)
{
    char cur[PROJ_ETAG_LEN + 1], qbuf[PROJ_ETAG_LEN + 3];
    const char *want;
    struct stat sb;
    bool exists;
    int err;

    if (if_match == NULL)
        return 0;
    if (fstatat(dir, name, &sb, AT_SYMLINK_NOFOLLOW) < 0) {
        if (errno != ENOENT)
            return ed_error_set(ED_EIO, "stat %s: %s", path, strerror(errno));
        exists = false;
    } else {
        exists = true;
    }
    if (if_match[0] == '\0')
        return exists ? ed_error_set(ED_EPRECOND, "%s already exists", path) : 0;
    if (!exists)
        return ed_error_set(ED_EPRECOND, "%s does not exist (it was deleted or never written)",
                            path);
    if (strcmp(if_match, "*") == 0)
        return 0;
    want = unquote(qbuf, if_match);
    if ((err = etag_at(cur, dir, name, path)) < 0)
        return err == ED_ENOTFOUND ? ed_error_set(ED_EPRECOND, "%s does not exist", path) : err;
    if (strlen(want) != PROJ_ETAG_LEN || strcasecmp(want, cur) != 0)
        return ed_error_set(ED_EPRECOND,
                            "%s changed since it was read (its ETag is now \"%s\"); read it "
                            "again and retry",
                            path, cur);
    return 0;
}

/*
 * A staged write: the bytes in a temporary file in .git/ (same filesystem,
 * never part of the working tree, so a crash cannot leave a stray file in the
 * project), fsync'd, with their size and ETag. publish() renames it into place.
 */
typedef struct staged {
    int         git;        /* .git of the project, or -1 */
    char        tmp[40];
    int64_t     size;
    struct stat sb;
    char        etag[PROJ_ETAG_LEN + 1];
} staged;

static void staged_discard(staged *s)
{
    if (s->git >= 0) {
        if (s->tmp[0])
            unlinkat(s->git, s->tmp, 0);
        close(s->git);
    }
    s->git = -1;
    s->tmp[0] = '\0';
}

/* A full disk or the workspace quota (projects/workspace.c) is the user's
 * to fix: ED_EQUOTA (402 quota_exceeded), not an I/O error. */
int proj__io_code(int e) { return e == ENOSPC || e == EDQUOT ? ED_EQUOTA : ED_EIO; }

static int stage_open(staged *s, int base, int *out_fd)
{
    char rnd[17];

    s->git = -1;
    s->tmp[0] = '\0';
    ed_random_token(rnd, 16);
    if ((s->git = openat(base, ".git", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0)
        return ed_error_set(ED_EIO, "open .git: %s", strerror(errno));
    snprintf(s->tmp, sizeof(s->tmp), "eddy-write-%s", rnd);
    if ((*out_fd = openat(s->git, s->tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                          0644)) < 0) {
        int err = ed_error_set(proj__io_code(errno), "create temporary file: %s", strerror(errno));
        s->tmp[0] = '\0';
        staged_discard(s);
        return err;
    }
    return 0;
}

static int stage_close(staged *s, int fd, const char *path)
{
    if (fsync(fd) < 0 || fstat(fd, &s->sb) < 0) {
        int err = ed_error_set(proj__io_code(errno), "write %s: %s", path, strerror(errno));
        close(fd);
        staged_discard(s);
        return err;
    }
    if (close(fd) < 0) {
        int err = ed_error_set(proj__io_code(errno), "write %s: %s", path, strerror(errno));
        staged_discard(s);
        return err;
    }
    return 0;
}

static int stage_buf(staged *s, int base, const char *path, const void *buf, size_t len)
{
    int fd, err;

    if ((err = stage_open(s, base, &fd)) < 0)
        return err;
    if (write_all(fd, buf, len) < 0) {
        err = ed_error_set(proj__io_code(errno), "write %s: %s", path, strerror(errno));
        close(fd);
        staged_discard(s);
        return err;
    }
    s->size = (int64_t)len;
    proj__etag_of(s->etag, buf, len);
    return stage_close(s, fd, path);
}

/* Copy `src` to EOF into a staged file, hashing as it goes. */
static int stage_fd(staged *s, int base, const char *path, int src)
{
    hasher h;
    size_t cap = 1 << 20;
    char *chunk = malloc(cap);
    int fd, err;

    if (chunk == NULL)
        return ed_error_set(ED_ENOMEM, "copy buffer");
    if ((err = stage_open(s, base, &fd)) < 0) {
        free(chunk);
        return err;
    }
    if ((err = hasher_init(&h)) < 0) {
        free(chunk);
        close(fd);
        staged_discard(s);
        return err;
    }
    s->size = 0;
    for (;;) {
        ssize_t n = read(src, chunk, cap);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            err = ed_error_set(ED_EIO, "read the source of %s: %s", path, strerror(errno));
            break;
        }
        if (n == 0)
            break;
        if (write_all(fd, chunk, (size_t)n) < 0) {
            err = ed_error_set(errno == ENOSPC || errno == EDQUOT ? ED_EQUOTA : ED_EIO,
                               "write %s: %s", path, strerror(errno));
            break;
        }
        hasher_update(&h, chunk, (size_t)n);
        s->size += n;
    }
    free(chunk);
    if (err < 0) {
        hasher_discard(&h);
        close(fd);
        staged_discard(s);
        return err;
    }
    hasher_final(&h, s->etag);
    return stage_close(s, fd, path);
}

/* Check `if_match` and rename the staged file to `path` (parents created,
 * and removed again on failure). The staged file is consumed either way. */
static int publish(proj_file **out, staged *s, int base, const char *path, const char *if_match)
{
    const char *name;
    int dir = -1, created = 0, err;

    if ((err = proj__open_parent(&dir, &name, &created, base, path, true)) < 0)
        goto fail;
    /* last thing before the rename, under the project's lock */
    if ((err = check_if_match(dir, name, path, if_match)) < 0)
        goto fail;
    /* rename replaces a link itself rather than its target; existing_size
     * refused links before, this keeps a link planted meanwhile harmless. */
    if (renameat(s->git, s->tmp, dir, name) < 0) {
        err = ed_error_set(errno == EISDIR ? ED_ECONFLICT : ED_EIO, "write %s: %s", path,
                           strerror(errno));
        goto fail;
    }
    s->tmp[0] = '\0';
    staged_discard(s);
    fsync(dir);
    close(dir);
    if (out && (err = file_entry(out, path, &s->sb)) == 0)
        memcpy((*out)->etag, s->etag, sizeof(s->etag));
    return err;
fail:
    staged_discard(s);
    if (dir >= 0)
        close(dir);
    if (created)
        proj__undo_mkdirs(base, path, created);
    return err;
}

static int check_if_match_arg(const char *if_match)
{
    char qbuf[PROJ_ETAG_LEN + 3];
    const char *w;

    if (if_match == NULL || if_match[0] == '\0' || strcmp(if_match, "*") == 0)
        return 0;
    w = unquote(qbuf, if_match);
    if (strlen(w) != PROJ_ETAG_LEN || strspn(w, "0123456789abcdefABCDEF") != PROJ_ETAG_LEN)
        return ed_error_set(ED_EPRECOND, "If-Match %.80s is not an ETag this server made", if_match);
    return 0;
}

/* The start of every write: *out and *out_created cleared (each may be
 * NULL), then `path` checked. */
static int write_begin(proj_file **out, bool *out_created, const char *path)
{
    if (out)
        *out = NULL;
    if (out_created)
        *out_created = false;
    return check_path(path);
}

int proj_file_write_if(proj_file **out, bool *out_created, proj_root *r, int64_t user_id,
                       const char *id, const char *path, const void *buf, size_t len,
                       const char *if_match)
{
    proj *p = NULL;
    staged s = {.git = -1};
    int64_t old = 0;
    bool exists = false;
    int base = -1, err;

    if ((err = write_begin(out, out_created, path)) < 0)
        return err;
    if (buf == NULL && len > 0)
        return ed_error_set(ED_EINVAL, "no bytes to write");
    if (ends_with_ipynb(path) && (err = proj_nb_validate(buf, len)) < 0)
        return err;
    proj__lock(r, id);
    if ((err = proj__load(&p, r, user_id, id, PROJ__WRITE)) < 0 ||
        (err = check_if_match_arg(if_match)) < 0 ||
        (err = proj__open_dir(&base, r, id)) < 0 ||
        (err = existing_size(&old, &exists, base, path)) < 0)
        goto done;
    proj__user_lock(r, p->owner_id);
    if ((err = proj__quota_check(r, p->owner_id, old, (int64_t)len)) == 0 &&
        (err = stage_buf(&s, base, path, buf ? buf : "", len)) == 0 &&
        (err = publish(out, &s, base, path, if_match)) == 0)
        proj__touch(r, id);
    proj__user_unlock(r, p->owner_id);
    if (err == 0 && out_created)
        *out_created = !exists;
done:
    return finish(r, id, p, base, -1, err);
}

int proj_file_write(proj_file **out, bool *out_created, proj_root *r, int64_t user_id,
                    const char *id, const char *path, const void *buf, size_t len)
{
    return proj_file_write_if(out, out_created, r, user_id, id, path, buf, len, NULL);
}

/* Largest notebook proj_file_write_fd reads into memory to validate. */
#define NB_FD_MAX ((size_t)1 << 30)

int proj_file_write_fd(proj_file **out, bool *out_created, proj_root *r, int64_t user_id,
                       const char *id, const char *path, int src_fd, int64_t size)
{
    proj *p = NULL;
    staged s = {.git = -1};
    struct stat before, after;
    int64_t old = 0;
    bool exists = false;
    int base = -1, err;

    if ((err = write_begin(out, out_created, path)) < 0)
        return err;
    if (src_fd < 0)
        return ed_error_set(ED_EINVAL, "no source to copy from");
    if (ends_with_ipynb(path)) {
        /* a notebook is validated whole, like proj_file_write's */
        char *nb = NULL;
        size_t n = 0;
        if ((err = ed_fs_read_fd(&nb, &n, src_fd, NB_FD_MAX)) < 0) {
            if (err == ED_ENOTFOUND) /* a pipe or socket: read to EOF another way */
                err = ed_error_set(ED_EINVAL, "notebook source of %s is not a regular file",
                                   path);
            return err;
        }
        err = proj_file_write_if(out, out_created, r, user_id, id, path, nb, n, NULL);
        free(nb);
        return err;
    }
    /* access and a storage check against the announced size first */
    proj__lock(r, id);
    if ((err = proj__load(&p, r, user_id, id, PROJ__WRITE)) < 0 ||
        (err = proj__open_dir(&base, r, id)) < 0 ||
        (err = existing_size(&old, &exists, base, path)) < 0)
        goto unlock;
    if (size > 0) {
        proj__user_lock(r, p->owner_id);
        err = proj__quota_check(r, p->owner_id, old, size);
        proj__user_unlock(r, p->owner_id);
    }
unlock:
    proj__unlock(r, id);
    proj_free(p);
    p = NULL;
    if (err < 0)
        goto done;
    if (fstat(base, &before) < 0) {
        err = ed_error_set(ED_EIO, "stat project %s: %s", id, strerror(errno));
        goto done;
    }
    /* the copy itself runs unlocked: it may take long */
    if ((err = stage_fd(&s, base, path, src_fd)) < 0)
        goto done;
    close(base);
    base = -1;
    proj__lock(r, id);
    if ((err = proj__load(&p, r, user_id, id, PROJ__WRITE)) < 0 ||
        (err = proj__open_dir(&base, r, id)) < 0)
        goto relock_done;
    if (fstat(base, &after) < 0 || after.st_dev != before.st_dev || after.st_ino != before.st_ino) {
        err = ed_error_set(ED_ENOTFOUND, "project %s was deleted during the copy", id);
        goto relock_done;
    }
    if ((err = existing_size(&old, &exists, base, path)) < 0)
        goto relock_done;
    proj__user_lock(r, p->owner_id);
    if ((err = proj__quota_check(r, p->owner_id, old, s.size)) == 0 &&
        (err = publish(out, &s, base, path, NULL)) == 0)
        proj__touch(r, id);
    proj__user_unlock(r, p->owner_id);
    if (err == 0 && out_created)
        *out_created = !exists;
relock_done:
    proj__unlock(r, id);
done:
    staged_discard(&s);
    if (base >= 0)
        close(base);
    proj_free(p);
    return err;
}

int proj__put(int base, const char *path, const void *buf, size_t len, bool exec)
{
    staged s = {.git = -1};
    int err;

    if ((err = stage_buf(&s, base, path, buf ? buf : "", len)) < 0)
        return err;
    if (exec && fchmodat(s.git, s.tmp, 0755, 0) < 0) {
        err = ed_error_set(ED_EIO, "chmod %s: %s", path, strerror(errno));
        staged_discard(&s);
        return err;
    }
    return publish(NULL, &s, base, path, NULL);
}

int proj__remove(int base, const char *path)
{
    const char *name;
    struct stat sb;
    int dir, err;

    if ((err = proj__open_parent(&dir, &name, NULL, base, path, false)) < 0)
        return err == ED_ENOTFOUND ? 0 : err;
    if (fstatat(dir, name, &sb, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(sb.st_mode) &&
        unlinkat(dir, name, 0) < 0 && errno != ENOENT)
        err = ed_error_set(ED_EIO, "delete %s: %s", path, strerror(errno));
    close(dir);
    if (err == 0)
        prune_empty_parents(base, path);
    return err;
}

int proj_file_etag(char out_etag[PROJ_ETAG_LEN + 1], proj_root *r, int64_t user_id,
                   const char *id, const char *path)
{
    proj *p = NULL;
    const char *name;
    int base = -1, dir = -1, err;

    out_etag[0] = '\0';
    if ((err = check_path(path)) < 0)
        return err;
    proj__lock(r, id);
    if ((err = proj__load(&p, r, user_id, id, PROJ__READ)) == 0 &&
        (err = proj__open_dir(&base, r, id)) == 0 &&
        (err = proj__open_parent(&dir, &name, NULL, base, path, false)) == 0)
        err = etag_at(out_etag, dir, name, path);
    return finish(r, id, p, dir, base, err);
}

/* ---- delete ------------------------------------------------------------------ */

int proj_file_delete(proj_root *r, int64_t user_id, const char *id, const char *path)
{
    proj *p = NULL;
    const char *name;
    int base = -1, dir = -1, err;

    if ((err = check_path(path)) < 0)
        return err;
    proj__lock(r, id);
    if ((err = proj__load(&p, r, user_id, id, PROJ__WRITE)) < 0 ||
        (err = proj__open_dir(&base, r, id)) < 0 ||
        (err = proj__open_parent(&dir, &name, NULL, base, path, false)) < 0)
        goto done;
    if ((err = check_regular(dir, name, path)) < 0)
        goto done;
    if (unlinkat(dir, name, 0) < 0) {
        err = ed_error_set(ED_EIO, "delete %s: %s", path, strerror(errno));
        goto done;
    }
    fsync(dir);
    prune_empty_parents(base, path);
    proj__touch(r, id);
done:
    return finish(r, id, p, dir, base, err);
}
