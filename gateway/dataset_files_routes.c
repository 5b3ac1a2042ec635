/*
 * dataset_files_routes.c - reading a dataset version's bytes, and versions
 * made from a job's output or a project's tree (API.md "Datasets"):
 *
 *   GET  /api/v1/datasets/{id}/versions/{n}/files/{path*}  one file (Range, ETag)
 *   GET  /api/v1/datasets/{id}/versions/{n}/archive        the version as a tar
 *   POST /api/v1/datasets/{id}/versions/from               {job_id | project_id, ...}
 *
 * {n} is a version number or "latest". Access is datasets/'s (ds.h): a
 * dataset the caller may not see is 404; reads of public and unlisted
 * datasets need no sign-in (user 0).
 *
 * Bytes are streamed from the blob's descriptor in libmicrohttpd's blocks
 * (gw_respond_stream): a multi-GiB file or archive costs one block of memory
 * per connection, and a slow reader holds no more than that (the connection
 * is only asked for more when the socket takes it).
 */
#include "datasets_int.h"
#include "quota.h"
#include "proj.h"
#include "sched.h"

#include "ed_error.h"
#include "ed_fs.h"
#include "ed_log.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- shared --------------------------------------------------------------- */

/* {n}: a positive version number, or "latest" (0 to ds.h). */
static int parse_version(int64_t *out, const char *s)
{
    char *end;
    long long v;

    if (strcmp(s, "latest") == 0) {
        *out = 0;
        return 0;
    }
    errno = 0;
    v = strtoll(s, &end, 10);
    if (*s < '0' || *s > '9' || *end || v <= 0 || errno)
        return ed_error_set(ED_ENOTFOUND, "version '%s' not found: a version is a number or \"latest\"", s);
    *out = v;
    return 0;
}

/* The dataset's files are ours to read only through ds.h, which checks
 * access; `user` is the caller (0 for a stranger). */
static int64_t caller(gw_request *req) { return req->auth.user_id; }

/* ---- one file: Range and ETag ------------------------------------------------ */

/* A byte range of the file being answered: [start, end] inclusive. */
typedef struct byte_range {
    int64_t start, end;
} byte_range;

enum { RANGE_NONE = 0, RANGE_ONE = 1, RANGE_UNSATISFIABLE = 2 };

/* Parse a Range header against a file of `size` bytes (RFC 9110 14.1.2):
 * "bytes=a-b", "bytes=a-" or "bytes=-n". RANGE_ONE with *r set; RANGE_NONE
 * when the header should be ignored (not bytes, malformed, or several ranges:
 * the whole file is answered, which RFC 9110 allows); RANGE_UNSATISFIABLE
 * when the one range lies past the end (or asks for the last 0 bytes). */
static int parse_range(byte_range *r, const char *h, int64_t size)
{
    const char *p;
    char *end;
    long long a = -1, b = -1;

    while (*h == ' ')
        h++;
    if (strncasecmp(h, "bytes=", 6) != 0)
        return RANGE_NONE;
    p = h + 6;
    while (*p == ' ')
        p++;
    if (strchr(p, ',') != NULL)
        return RANGE_NONE;
    if (*p == '-') {                        /* suffix: the last n bytes */
        p++;
        if (*p < '0' || *p > '9')
            return RANGE_NONE;
        errno = 0;
        b = strtoll(p, &end, 10);
        while (*end == ' ')
            end++;
        if (errno || *end)
            return RANGE_NONE;
        if (b == 0 || size == 0)
            return RANGE_UNSATISFIABLE;
        r->start = b >= size ? 0 : size - b;
        r->end = size - 1;
        return RANGE_ONE;
    }
    if (*p < '0' || *p > '9')
        return RANGE_NONE;
    errno = 0;
    a = strtoll(p, &end, 10);
    if (errno || *end != '-')
        return RANGE_NONE;
    p = end + 1;
    while (*p == ' ')
        p++;
    if (*p != '\0') {
        if (*p < '0' || *p > '9')
            return RANGE_NONE;
        errno = 0;
        b = strtoll(p, &end, 10);
        while (*end == ' ')
            end++;
        if (errno || *end || b < a)
            return RANGE_NONE;
    }
    if (a >= size)
        return RANGE_UNSATISFIABLE;
    r->start = a;
    r->end = (b < 0 || b >= size) ? size - 1 : b;
    return RANGE_ONE;
}

/* Does an If-None-Match list ("*", or comma-separated entity tags, weak or
 * strong) name `quoted` (the ETag as sent, quotes included)? Weak comparison,
 * as RFC 9110 asks for GETs. */
static bool none_match(const char *list, const char *quoted)
{
    size_t n = strlen(quoted);

    for (const char *p = list; *p;) {
        while (*p == ' ' || *p == ',')
            p++;
        if (*p == '*')
            return true;
        if (strncmp(p, "W/", 2) == 0)
            p += 2;
        if (strncmp(p, quoted, n) == 0 && (p[n] == '\0' || p[n] == ',' || p[n] == ' '))
            return true;
        while (*p && *p != ',')
            p++;
    }
    return false;
}

/* Answer bytes [off, off + len) of `fd` (taken: closed on every path):
 * libmicrohttpd sends them from the descriptor (sendfile), never through
 * our memory, with a Content-Length. */
static int respond_fd(gw_response *res, gw_request *req, int status, const char *ctype, int fd, int64_t off,
                      int64_t len)
{
    (void)req;
    return gw_respond_fd(res, status, ctype, fd, (uint64_t)off, (uint64_t)len);
}

/* The last path component, for Content-Disposition: characters a quoted
 * string cannot hold are replaced by '_'. */
static void disposition(char *out, size_t n, const char *path)
{
    const char *base = strrchr(path, '/');
    size_t j = 0;

    base = base ? base + 1 : path;
    j = (size_t)snprintf(out, n, "attachment; filename=\"");
    for (const char *c = base; *c && j + 3 < n; c++)
        out[j++] = (*c == '"' || *c == '\\' || (unsigned char)*c < 0x20 || (unsigned char)*c >= 0x7f) ? '_' : *c;
    if (j + 2 <= n) {
        out[j++] = '"';
        out[j] = '\0';
    }
}

/* GET /api/v1/datasets/{id}/versions/{n}/files/{path*}
 * The blob with its media type, ETag "<sha256>" (a strong validator: a
 * version's files never change), Accept-Ranges: bytes. One Range gives 206
 * with Content-Range, one past the end 416 with "bytes * /size"; several
 * ranges, or a malformed header, the whole file (200). If-None-Match naming
 * the ETag: 304. If-Range with another validator: the whole file.
 * User files are answered as attachments in a CSP sandbox: an HTML file in a
 * dataset must never run as this origin's page. */
static int get_file(gw_request *req, gw_response *res)
{
    const char *id = req->params[0], *path = req->params[2];
    const char *inm = gw_request_header(req, "If-None-Match");
    const char *range = gw_request_header(req, "Range");
    const char *if_range = gw_request_header(req, "If-Range");
    char etag[DS_SHA256_LEN + 2], cd[300], cr[80];
    const char *ctype;
    ds_file file = {0};
    byte_range r = {0, 0};
    struct stat sb;
    int64_t number = 0, size;
    int fd = -1, kind = RANGE_NONE, err;

    if ((err = parse_version(&number, req->params[1])) < 0)
        return err;
    if ((err = ds_version_file_open(&fd, &file, req->srv->datasets, caller(req), id, number, path)) < 0)
        return err;
    size = file.size;
    if (fstat(fd, &sb) < 0 || sb.st_size != size) {
        err = ed_error_set(ED_EIO, "dataset %s file %s: the blob holds %lld bytes, the manifest says %lld", id,
                           path, (long long)sb.st_size, (long long)size);
        goto fail;
    }
    snprintf(etag, sizeof(etag), "\"%s\"", file.sha256);
    disposition(cd, sizeof(cd), path);
    gw_response_header(res, "ETag", etag);
    gw_response_header(res, "Accept-Ranges", "bytes");
    gw_response_header(res, "Cache-Control", "private, no-cache");
    gw_response_header(res, "Content-Disposition", cd);
    gw_response_header(res, "Content-Security-Policy", "sandbox; default-src 'none'");
    if (inm && none_match(inm, etag)) {
        close(fd);
        free(file.path);
        return gw_respond_empty(res, 304);
    }
    /* If-Range: the Range holds only while the client's copy is this one */
    if (range && (if_range == NULL || strcmp(if_range, etag) == 0))
        kind = parse_range(&r, range, size);
    if (kind == RANGE_UNSATISFIABLE) {
        close(fd);
        free(file.path);
        snprintf(cr, sizeof(cr), "bytes */%lld", (long long)size);
        gw_response_header(res, "Content-Range", cr);
        return gw_respond_json(res, 416, json_pack("{s:{s:s, s:s, s:s}}", "error", "code", "range_not_satisfiable",
                                                   "message", "the range starts past the end of the file",
                                                   "request_id", req->request_id ? req->request_id : ""));
    }
    free(file.path);
    file.path = NULL;
    /* the response outlives this frame: its media type lives in the request's arena */
    if ((ctype = ed_arena_strdup(req->arena, file.media_type[0] ? file.media_type : "application/octet-stream")) ==
        NULL) {
        close(fd);
        return ed_error_set(ED_ENOMEM, "content type");
    }
    if (kind == RANGE_ONE) {
        snprintf(cr, sizeof(cr), "bytes %lld-%lld/%lld", (long long)r.start, (long long)r.end, (long long)size);
        gw_response_header(res, "Content-Range", cr);
        return respond_fd(res, req, 206, ctype, fd, r.start, r.end - r.start + 1);
    }
    return respond_fd(res, req, 200, ctype, fd, 0, size);
fail:
    close(fd);
    free(file.path);
    return err;
}

/* ---- the whole version as a tar ---------------------------------------------- */

/* A POSIX tar (ustar, with a pax extended header before an entry whose path
 * does not fit ustar's 100-byte name field or whose size does not fit 11
 * octal digits), produced as the client reads it: one file open at a time,
 * its header and padding in `pend`. */
#define TAR_BLOCK 512
#define TAR_PEND  (TAR_BLOCK * 12)   /* pax header + its records (path <= 4096) + ustar header */

typedef struct tar_stream {
    ds         *d;
    int64_t     user;
    char        id[DS_ID_LEN];
    ds_version *v;              /* with its manifest */
    size_t      next;           /* the next file of the manifest */
    int         fd;             /* the file being sent, or -1 */
    int64_t     left;           /* its bytes still to send */
    char        pend[TAR_PEND]; /* headers or padding to send first */
    size_t      pend_len, pend_off;
    bool        trailer;        /* the two zero blocks are queued */
} tar_stream;

static void tar_octal(char *field, size_t width, uint64_t v)
{
    /* width - 1 octal digits and a NUL, as GNU and BSD tar write them; the
     * callers keep v below 8^(width-1) */
    field[width - 1] = '\0';
    for (size_t i = width - 1; i-- > 0; v >>= 3)
        field[i] = (char)('0' + (v & 7));
}

/* One ustar header block for `name` (<= 100 bytes) of type `type`. */
static void tar_header(char blk[TAR_BLOCK], const char *name, char type, uint64_t size, int64_t mtime_s)
{
    unsigned sum = 0;

    memset(blk, 0, TAR_BLOCK);
    memcpy(blk, name, strnlen(name, 100));
    tar_octal(blk + 100, 8, 0644);
    tar_octal(blk + 108, 8, 0);
    tar_octal(blk + 116, 8, 0);
    tar_octal(blk + 124, 12, size < 077777777777ULL ? size : 0);
    tar_octal(blk + 136, 12, mtime_s > 0 ? (uint64_t)mtime_s : 0);
    blk[156] = type;
    memcpy(blk + 257, "ustar", 6);
    memcpy(blk + 263, "00", 2);
    memcpy(blk + 265, "eddy", 4);
    memcpy(blk + 297, "eddy", 4);
    memset(blk + 148, ' ', 8);
    for (size_t i = 0; i < TAR_BLOCK; i++)
        sum += (unsigned char)blk[i];
    snprintf(blk + 148, 8, "%06o", sum);    /* six digits, NUL, and the space already there */
    blk[155] = ' ';
}

/* Append one pax record "<len> key=value\n" to out; its length counts itself. */
static size_t pax_record(char *out, size_t cap, const char *key, const char *value)
{
    size_t body = strlen(key) + strlen(value) + 3;   /* ' ', '=', '\n' */
    size_t len = body + 1;

    while (len != body + (size_t)snprintf(NULL, 0, "%zu", len))
        len = body + (size_t)snprintf(NULL, 0, "%zu", len);
    if (len >= cap)
        return 0;
    snprintf(out, cap, "%zu %s=%s\n", len, key, value);
    return len;
}

/* Queue the headers of manifest entry `f` in t->pend. */
static int tar_queue_headers(tar_stream *t, const ds_file *f)
{
    int64_t mtime_s = t->v->created_at / 1000;
    bool long_path = strlen(f->path) > 100, big = (uint64_t)f->size >= 077777777777ULL;
    char *p = t->pend;

    t->pend_off = 0;
    t->pend_len = 0;
    if (long_path || big) {
        char rec[DS_PATH_MAX + 64], num[24], name[101];
        size_t n = 0, blocks;

        if (long_path)
            n += pax_record(rec + n, sizeof(rec) - n, "path", f->path);
        if (big) {
            snprintf(num, sizeof(num), "%lld", (long long)f->size);
            n += pax_record(rec + n, sizeof(rec) - n, "size", num);
        }
        blocks = (n + TAR_BLOCK - 1) / TAR_BLOCK;
        if (n == 0 || (blocks + 2) * TAR_BLOCK > sizeof(t->pend))
            return ed_error_set(ED_EINTERNAL, "tar: path %s does not fit a pax header", f->path);
        snprintf(name, sizeof(name), "PaxHeaders/%.89s", strrchr(f->path, '/') ? strrchr(f->path, '/') + 1 : f->path);
        tar_header(p, name, 'x', n, mtime_s);
        memset(p + TAR_BLOCK, 0, blocks * TAR_BLOCK);
        memcpy(p + TAR_BLOCK, rec, n);
        p += (blocks + 1) * TAR_BLOCK;
    }
    /* the ustar name: the whole path when it fits, else its first 100 bytes
     * (readers use the pax path) */
    tar_header(p, f->path, '0', (uint64_t)f->size, mtime_s);
    p += TAR_BLOCK;
    t->pend_len = (size_t)(p - t->pend);
    return 0;
}

static long tar_fill(void *payload, char *buf, size_t max)
{
    tar_stream *t = payload;
    size_t n = 0;

    while (n < max) {
        if (t->pend_off < t->pend_len) {
            size_t k = t->pend_len - t->pend_off < max - n ? t->pend_len - t->pend_off : max - n;
            memcpy(buf + n, t->pend + t->pend_off, k);
            t->pend_off += k;
            n += k;
            continue;
        }
        if (t->fd >= 0 && t->left > 0) {
            size_t want = (size_t)t->left < max - n ? (size_t)t->left : max - n;
            ssize_t r;
            do
                r = read(t->fd, buf + n, want);
            while (r < 0 && errno == EINTR);
            if (r <= 0) {
                ed_log_error("datasets.archive", "dataset %s version %lld: blob read: %s (the archive is cut)",
                             t->id, (long long)t->v->number, r < 0 ? strerror(errno) : "unexpected end of file");
                return -1;  /* the client sees a truncated tar, never a wrong one */
            }
            t->left -= r;
            n += (size_t)r;
            continue;
        }
        if (t->fd >= 0) {               /* the file ended: pad its last block */
            size_t pad = (size_t)((TAR_BLOCK - t->v->files->items[t->next - 1].size % TAR_BLOCK) % TAR_BLOCK);
            close(t->fd);
            t->fd = -1;
            memset(t->pend, 0, pad);
            t->pend_off = 0;
            t->pend_len = pad;
            continue;
        }
        if (t->next < t->v->files->count) {
            const ds_file *f = &t->v->files->items[t->next];
            struct stat sb;
            if (ds_version_file_open(&t->fd, NULL, t->d, t->user, t->id, t->v->number, f->path) < 0 ||
                fstat(t->fd, &sb) < 0 || sb.st_size != f->size || tar_queue_headers(t, f) < 0) {
                ed_log_error("datasets.archive", "dataset %s version %lld: %s: %s (the archive is cut)", t->id,
                             (long long)t->v->number, f->path, ed_error_last());
                return -1;
            }
            t->next++;
            t->left = f->size;
            continue;
        }
        if (!t->trailer) {
            memset(t->pend, 0, 2 * TAR_BLOCK);
            t->pend_off = 0;
            t->pend_len = 2 * TAR_BLOCK;
            t->trailer = true;
            continue;
        }
        break;
    }
    return n > 0 ? (long)n : -1;
}

static void tar_release(void *payload)
{
    tar_stream *t = payload;

    if (t->fd >= 0)
        close(t->fd);
    ds_version_free(t->v);
    free(t);
}

/* GET /api/v1/datasets/{id}/versions/{n}/archive: every file of the version
 * in a tar named <owner>-<slug>-v<n>.tar, streamed as it is produced (never
 * whole in memory nor on disk). Files in manifest (path) order; directories
 * are implied by the paths. A blob that cannot be read cuts the archive
 * (logged): a reader reports a truncated tar rather than taking a wrong one. */
static int get_archive(gw_request *req, gw_response *res)
{
    const char *id = req->params[0];
    ds_dataset *set = NULL;
    tar_stream *t = NULL;
    char owner[40], cd[200];
    int64_t number = 0;
    int err;

    if ((err = parse_version(&number, req->params[1])) < 0 ||
        (err = ds_dataset_get(&set, req->srv->datasets, caller(req), id)) < 0)
        return err;
    if ((t = calloc(1, sizeof(*t))) == NULL) {
        err = ed_error_set(ED_ENOMEM, "archive");
        goto fail;
    }
    t->d = req->srv->datasets;
    t->user = caller(req);
    t->fd = -1;
    snprintf(t->id, sizeof(t->id), "%s", set->id);
    if ((err = ds_version_get(&t->v, req->srv->datasets, caller(req), id, number)) < 0)
        goto fail;
    if (t->v->files == NULL) {
        err = ed_error_set(ED_EINTERNAL, "version %lld came without its manifest", (long long)t->v->number);
        goto fail;
    }
    gw__ds_owner_name(owner, sizeof(owner), req->srv, set->owner_id);
    if (owner[0] == '\0')      /* the owner is gone: still a usable name */
        snprintf(owner, sizeof(owner), "%lld", (long long)set->owner_id);
    snprintf(cd, sizeof(cd), "attachment; filename=\"%s-%s-v%lld.tar\"", owner, set->slug,
             (long long)t->v->number);
    gw_response_header(res, "Content-Disposition", cd);
    ds_dataset_free(set);
    set = NULL;
    if ((err = gw_respond_stream(NULL, res, req, 200, "application/x-tar", 0, tar_fill, tar_release, t)) < 0)
        goto fail;
    return 0;
fail:
    if (t)
        tar_release(t);
    ds_dataset_free(set);
    return err;
}

/* ---- a version from a job's output or a project's tree ---------------------- */

#define FROM_FILES_MAX   10000   /* files one call puts into the draft */
#define FROM_DEPTH_MAX   16      /* directory levels entered */
#define FROM_PATHS_MAX   100     /* entries of `paths` */
#define FROM_SKIPPED_MAX 1000    /* entries listed in `skipped` */

typedef struct from_item {
    char   *rel;        /* beneath the source's root */
    char   *dest;       /* in the dataset */
    int64_t size;       /* at the walk */
} from_item;

typedef struct from_plan {
    const char *prefix;     /* "" or "dir/": the walk's root within the source */
    const char *dest_dir;   /* "" or the dataset folder the files go to */
    bool        skip_git;   /* a project: its .git is not a file of it */
    from_item  *items;
    size_t      n, cap;
    int64_t     bytes;
    json_t     *skipped;
    size_t      nskipped;
} from_plan;

static void plan_skip(from_plan *p, const char *rel, const char *reason)
{
    if (p->nskipped++ < FROM_SKIPPED_MAX)
        json_array_append_new(p->skipped, json_pack("{s:s, s:s}", "path", rel, "reason", reason));
}

static void plan_free(from_plan *p)
{
    for (size_t i = 0; i < p->n; i++) {
        free(p->items[i].rel);
        free(p->items[i].dest);
    }
    free(p->items);
    json_decref(p->skipped);
}

/* Add the regular file `rel` (beneath the source's root) of `size` bytes. */
static int plan_add(from_plan *p, const char *rel, int64_t size)
{
    char dest[DS_PATH_MAX + 2];

    if (p->n >= FROM_FILES_MAX)
        return ed_error_set(ED_EUNPROC, "more than %d files: name fewer with 'paths' (or put an archive in the "
                            "source and upload it)", FROM_FILES_MAX);
    if (snprintf(dest, sizeof(dest), "%s%s%s", p->dest_dir, p->dest_dir[0] ? "/" : "", rel) >= (int)sizeof(dest) ||
        ds_path_validate(dest, strlen(dest)) < 0) {
        char why[300];
        snprintf(why, sizeof(why), "not a path a dataset can hold: %s", ed_error_last());
        plan_skip(p, rel, why);
        return 0;
    }
    for (size_t i = 0; i < p->n; i++)       /* `paths` may name a file twice, or a file and its folder */
        if (strcmp(p->items[i].rel, rel) == 0)
            return 0;
    if (p->n == p->cap) {
        size_t cap = p->cap ? p->cap * 2 : 64;
        from_item *v = realloc(p->items, cap * sizeof(*v));
        if (v == NULL)
            return ed_error_set(ED_ENOMEM, "plan");
        p->items = v;
        p->cap = cap;
    }
    p->items[p->n] = (from_item){strdup(rel), strdup(dest), size};
    if (p->items[p->n].rel == NULL || p->items[p->n].dest == NULL) {
        free(p->items[p->n].rel);
        free(p->items[p->n].dest);
        return ed_error_set(ED_ENOMEM, "plan");
    }
    p->n++;
    p->bytes += size;
    return 0;
}

/* ed_fs_walk callback (beneath a folder the walk was given as p->prefix):
 * regular files are planned; links, FIFOs, sockets and devices are never
 * shown by ed_fs_walk, so never followed nor copied (see note_specials). */
static int plan_entry(const char *rel_in, const struct stat *sb, void *payload)
{
    from_plan *p = payload;
    char rel[ED_FS_PATH_MAX + 2];
    int depth = 0;

    if (snprintf(rel, sizeof(rel), "%s%s", p->prefix, rel_in) >= (int)sizeof(rel))
        return 0;
    for (const char *c = rel; *c; c++)
        depth += *c == '/';
    if (S_ISDIR(sb->st_mode)) {
        if (p->skip_git && depth == 0 && strcasecmp(rel, ".git") == 0)
            return ED_FS_WALK_SKIP;
        if (depth >= FROM_DEPTH_MAX - 1) {
            plan_skip(p, rel, "more than 16 directory levels deep: not entered");
            return ED_FS_WALK_SKIP;
        }
        return 0;
    }
    if (!S_ISREG(sb->st_mode))
        return 0;
    return plan_add(p, rel, (int64_t)sb->st_size);
}

/* List what ed_fs_walk never shows (links, FIFOs, sockets, devices) beneath
 * `root`'s folder `rel` and its subfolders, in `skipped`: informative only,
 * looked at with fstatat(AT_SYMLINK_NOFOLLOW), never opened. */
static void note_specials(from_plan *p, int root, const char *rel, int depth)
{
    struct dirent *de;
    DIR *d;
    int fd;

    if (depth >= FROM_DEPTH_MAX || p->nskipped >= FROM_SKIPPED_MAX)
        return;
    if (rel[0] == '\0')
        fd = fcntl(root, F_DUPFD_CLOEXEC, 0);
    else if (ed_fs_open_beneath(&fd, root, rel, O_RDONLY | O_DIRECTORY, 0) < 0)
        fd = -1;
    if (fd < 0 || (d = fdopendir(fd)) == NULL) {
        if (fd >= 0)
            close(fd);
        return;
    }
    while ((de = readdir(d)) != NULL && p->nskipped < FROM_SKIPPED_MAX) {
        struct stat sb;
        char path[ED_FS_PATH_MAX + 1];

        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0 ||
            (p->skip_git && rel[0] == '\0' && strcasecmp(de->d_name, ".git") == 0))
            continue;
        if (snprintf(path, sizeof(path), "%s%s%s", rel, rel[0] ? "/" : "", de->d_name) >= (int)sizeof(path) ||
            fstatat(dirfd(d), de->d_name, &sb, AT_SYMLINK_NOFOLLOW) < 0 || S_ISREG(sb.st_mode))
            continue;
        if (S_ISDIR(sb.st_mode))
            note_specials(p, root, path, depth + 1);
        else
            plan_skip(p, path, S_ISLNK(sb.st_mode) ? "a symbolic link: links are never followed nor copied"
                                                   : "not a regular file (FIFO, socket or device)");
    }
    closedir(d);
}

/* Plan the whole tree beneath `root`, or the files and folders `paths` names. */
static int plan_make(from_plan *p, int root, const json_t *paths, const char *what)
{
    size_t i;
    json_t *v;
    int err;

    if (paths == NULL || json_array_size(paths) == 0) {
        p->prefix = "";
        if ((err = ed_fs_walk(root, FROM_DEPTH_MAX, 10 * FROM_FILES_MAX, plan_entry, p)) < 0)
            return err == ED_ETOOBIG ? ed_error_set(ED_EUNPROC, "the %s holds too many entries: name fewer with "
                                                    "'paths'", what)
                                     : err;
        note_specials(p, root, "", 0);
        return 0;
    }
    json_array_foreach(paths, i, v) {
        const char *rel = json_string_value(v);
        struct stat sb;
        char prefix[ED_FS_PATH_MAX + 2];
        int fd;

        if (rel == NULL)
            return ed_error_set(ED_EINVAL, "field 'paths' must be an array of paths");
        while (rel[0] == '/')
            rel++;
        if (p->skip_git && (strcasecmp(rel, ".git") == 0 || strncasecmp(rel, ".git/", 5) == 0))
            return ed_error_set(ED_ENOTFOUND, "%s has no file or folder %s", what, rel);
        err = ed_fs_open_beneath(&fd, root, rel, O_RDONLY, 0);
        if (err == ED_ENOTFOUND && errno == EISDIR)
            err = ed_fs_open_beneath(&fd, root, rel, O_RDONLY | O_DIRECTORY, 0);
        if (err == ED_EINVAL || err == ED_ENOTFOUND) {
            if (errno == ELOOP)
                return ed_error_set(ED_EUNPROC, "%s: %s is (or goes through) a symbolic link: links are never "
                                    "followed", what, rel);
            return ed_error_set(ED_ENOTFOUND, "%s has no file or folder %s", what, rel);
        }
        if (err < 0)
            return err;
        if (fstat(fd, &sb) < 0) {
            err = ed_error_set(ED_EIO, "%s: %s", rel, strerror(errno));
            close(fd);
            return err;
        }
        if (S_ISREG(sb.st_mode)) {
            close(fd);
            if ((err = plan_add(p, rel, (int64_t)sb.st_size)) < 0)
                return err;
            continue;
        }
        snprintf(prefix, sizeof(prefix), "%s/", rel);
        p->prefix = prefix;
        err = ed_fs_walk(fd, FROM_DEPTH_MAX, 10 * FROM_FILES_MAX, plan_entry, p);
        p->prefix = "";
        close(fd);
        if (err < 0)
            return err == ED_ETOOBIG ? ed_error_set(ED_EUNPROC, "%s holds too many entries: name fewer", rel) : err;
        note_specials(p, root, rel, 0);
    }
    return 0;
}

/* The project's working tree: the caller must be able to read the project
 * (its own, or a public one); projects/ attaches a workspace tree first.
 * What is beneath it is opened only through ed_fs. */
static int project_tree(int *out_fd, gw_request *req, const char *pid)
{
    return proj_tree_open(out_fd, req->srv->projects, req->auth.user_id, pid);
}

/* The storage limit of the caller's tier for datasets (quota/), 0: none.
 * Only the owner adds versions, so the caller's tier is the owner's. */
static int64_t dataset_quota(gw_request *req)
{
    quota_tier t;

    if (req->auth.tier == NULL || quota_tier_get(&t, req->srv->store, req->auth.tier) < 0) {
        ed_error_clear();
        return 0;
    }
    return t.dataset_bytes;
}

/* POST /api/v1/datasets/{id}/versions/from {job_id | project_id, paths?,
 * message, dest_dir?} -> 201 the new version with its manifest, and
 * `skipped`: [{path, reason}] for what was not taken.
 *
 * Every regular file of the job's output (or project's working tree, .git
 * excluded), or those `paths` names (files, or folders taken whole), is
 * opened beneath the source's directory (ed_fs: a link or a swapped
 * directory is refused at the open, never followed) and streamed into the
 * dataset's draft with ds_draft_put_fd at dest_dir/<its path>: the bytes never
 * pass through the client. Then the draft is published with source
 * {"job_id": N} or {"project_id": "..."}. The draft holds the latest version's
 * files (and whatever was put since), so the new version is that plus (or
 * with replaced) these files; to drop old files, remove them from the draft
 * first. A failure after some files were put leaves them in the draft (the
 * published versions are untouched); the call can simply be repeated.
 *
 * Symbolic links, FIFOs, sockets and devices are skipped (listed in
 * `skipped`); a path in `paths` that is a link is 422. At most
 * FROM_FILES_MAX files; the owner's quota is checked for the total before
 * anything is put. Only the dataset's owner may call it (403 for a reader);
 * a job must be the caller's, a project readable by the caller (404
 * otherwise, as on their own routes). */
static int post_from(gw_request *req, gw_response *res)
{
    const char *id = req->params[0];
    const char *message = NULL, *pid = NULL, *dest_dir = "";
    const json_t *paths = NULL;
    json_t *body, *out = NULL;
    from_plan plan = {0};
    ds_dataset *set = NULL;
    ds_version *v = NULL;
    int64_t job = 0, quota, usage = 0;
    char source[200], what[120];
    int root = -1, err;

    if ((err = gw_request_json(&body, req)) < 0 ||
        (err = gw_json_int(&job, body, "job_id", 1, INT64_MAX, false)) < 0 ||
        (err = ed_json_get_str(&pid, body, "project_id", false)) < 0 ||
        (err = ed_json_get_str(&message, body, "message", false)) < 0 ||
        (err = ed_json_get_str(&dest_dir, body, "dest_dir", false)) < 0)
        return err;
    if (dest_dir == NULL)
        dest_dir = "";
    while (dest_dir[0] == '/')
        dest_dir++;
    if ((job > 0) == (pid != NULL))
        return ed_error_set(ED_EINVAL, "give exactly one of 'job_id' and 'project_id'");
    if (message == NULL || message[0] == '\0')
        return ed_error_set(ED_EINVAL, "field 'message' is required: say what this version holds");
    if (dest_dir[0] && ds_path_validate(dest_dir, strlen(dest_dir)) < 0)
        return ed_error_set(ED_EINVAL, "field 'dest_dir': %s", ed_error_last());
    paths = json_object_get(body, "paths");
    if (paths && !json_is_null(paths) && (!json_is_array(paths) || json_array_size(paths) > FROM_PATHS_MAX))
        return ed_error_set(ED_EINVAL, "field 'paths' must be an array of at most %d paths", FROM_PATHS_MAX);
    if (json_is_null(paths))
        paths = NULL;
    /* the dataset first: a reader learns nothing about the job or project */
    if ((err = ds_dataset_get(&set, req->srv->datasets, req->auth.user_id, id)) < 0)
        return err;
    if (!set->can_write) {
        err = ed_error_set(ED_EPERM, "only the owner of dataset %s can add versions", id);
        goto done;
    }
    if (job > 0) {
        snprintf(what, sizeof(what), "the output of job %" PRId64, job);
        snprintf(source, sizeof(source), "{\"job_id\":%" PRId64 "}", job);
        err = gw__job_output_open(&root, req, req->auth.user_id, job);
    } else {
        snprintf(what, sizeof(what), "project %.64s", pid);
        err = project_tree(&root, req, pid);
        if (err == 0) {
            json_t *s = json_pack("{s:s}", "project_id", pid);
            char *txt = s ? json_dumps(s, JSON_COMPACT) : NULL;
            snprintf(source, sizeof(source), "%s", txt ? txt : "{}");
            free(txt);
            json_decref(s);
        }
    }
    if (err < 0)
        goto done;
    plan.dest_dir = dest_dir;
    plan.skip_git = pid != NULL;
    plan.prefix = "";
    if ((plan.skipped = json_array()) == NULL) {
        err = ed_error_set(ED_ENOMEM, "plan");
        goto done;
    }
    if ((err = plan_make(&plan, root, paths, what)) < 0)
        goto done;
    if (plan.n == 0) {
        err = ed_error_set(ED_EUNPROC, "%s holds no regular file to put in the dataset%s", what,
                           plan.nskipped ? " (everything there was skipped: see the links and special files)" : "");
        goto done;
    }
    quota = dataset_quota(req);
    if (quota > 0 && (err = ds_usage_bytes(&usage, req->srv->datasets, set->owner_id)) == 0 &&
        usage + plan.bytes > quota) {
        err = ed_error_set(ED_EQUOTA, "%lld bytes would take the datasets over their quota (%lld of %lld bytes "
                           "used)", (long long)plan.bytes, (long long)usage, (long long)quota);
        goto done;
    }
    if (err < 0)
        goto done;
    for (size_t i = 0; i < plan.n; i++) {
        const from_item *it = &plan.items[i];
        int fd;

        err = ed_fs_open_beneath(&fd, root, it->rel, O_RDONLY, 0);
        if (err == ED_ENOTFOUND) {      /* gone or swapped for a link since the walk */
            plan_skip(&plan, it->rel, "went away (or became a link) while being read");
            continue;
        }
        if (err < 0)
            goto done;
        err = ds_draft_put_fd(NULL, req->srv->datasets, req->auth.user_id, id, it->dest, fd, NULL, quota);
        close(fd);
        if (err < 0)
            goto done;
    }
    if ((err = ds_version_publish(&v, req->srv->datasets, req->auth.user_id, id, message, source)) < 0)
        goto done;
    ds_previews_enqueue_version(req->srv->datasets, id, v->number);   /* previews ready before anyone asks */
    if ((out = gw__ds_version_json(v)) == NULL) {
        err = ed_error_set(ED_ENOMEM, "version");
        goto done;
    }
    json_object_set(out, "skipped", plan.skipped);
    {
        json_t *detail = json_pack("{s:I, s:I, s:s}", "version", (json_int_t)v->number, "files",
                                   (json_int_t)plan.n, "from", source);
        gw__audit(req, "dataset.version_from", id, detail);
        json_decref(detail);
    }
    err = gw_respond_json(res, 201, out);
done:
    if (root >= 0)
        close(root);
    plan_free(&plan);
    ds_version_free(v);
    ds_dataset_free(set);
    return err;
}

#define R  (GW_AUTH_OPTIONAL | GW_SCOPE_READ)
#define W  (GW_AUTH | GW_SCOPE_WRITE)

const gw_route gw__routes_dataset_files[] = {
    {"GET", "/api/v1/datasets/{id}/versions/{n}/files/{path*}", get_file, R,
     "One file of a dataset version (Range, ETag, If-None-Match)"},
    {"GET", "/api/v1/datasets/{id}/versions/{n}/archive", get_archive, R,
     "A dataset version's files as a tar, streamed"},
    {"POST", "/api/v1/datasets/{id}/versions/from", post_from, W,
     "Publish a version from a job's output or a project's files (no bytes through the client)"},
    {NULL, NULL, NULL, 0, NULL},
};
