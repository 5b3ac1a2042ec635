/*
 * unpack.c - an archive in the draft replaced by the files it holds.
 *
 * libarchive reads the archive's blob (zip, tar in its ustar/pax/gnu forms,
 * compressed with gzip, bzip2 or xz). Each regular entry is streamed into the
 * blob store (blob_writer.h) while its bytes are counted: a header's sizes
 * are never trusted, so a bomb is stopped by what it actually expands to.
 * Nothing reaches the draft until every entry is stored and checked; then one
 * transaction removes the archive's row and adds the files' rows, so a
 * failure anywhere leaves the draft as it was (the blobs already placed have
 * no row: ds_gc or the next start removes them).
 *
 * Names: leading "./" is dropped (tar -C dir -c .), a directory's trailing
 * '/' too; absolute names, "..", links, devices, FIFOs and sockets are
 * refused, so are two entries with one name and a name that is a file for
 * one entry and a directory for another (or for a file already in the draft).
 */
#include "blob_writer.h"
#include "ds_int.h"

#include "ed_error.h"
#include "ed_time.h"

#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The ratio is checked once this much has come out: a small archive of a
 * text file compresses 1000:1 honestly, and costs nothing to unpack. */
#define RATIO_FLOOR (INT64_C(8) << 20)

/* ---- a set of strings (the names seen) ----------------------------------- */

typedef struct strset {
    char **slot;
    size_t cap, count;
} strset;

static uint64_t fnv(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

/* 1 when s was there, 0 when added (s copied), < 0 out of memory. */
static int strset_add(strset *set, const char *s)
{
    size_t i;

    if ((set->count + 1) * 2 > set->cap) {
        size_t ncap = set->cap ? set->cap * 2 : 64;
        char **ns = calloc(ncap, sizeof(*ns));
        if (!ns)
            return ed_error_set(ED_ENOMEM, "names");
        for (size_t k = 0; k < set->cap; k++) {
            if (!set->slot[k])
                continue;
            for (i = fnv(set->slot[k]) & (ncap - 1); ns[i]; i = (i + 1) & (ncap - 1))
                ;
            ns[i] = set->slot[k];
        }
        free(set->slot);
        set->slot = ns;
        set->cap = ncap;
    }
    for (i = fnv(s) & (set->cap - 1); set->slot[i]; i = (i + 1) & (set->cap - 1))
        if (strcmp(set->slot[i], s) == 0)
            return 1;
    if ((set->slot[i] = strdup(s)) == NULL)
        return ed_error_set(ED_ENOMEM, "names");
    set->count++;
    return 0;
}

static bool strset_has(const strset *set, const char *s)
{
    if (!set->cap)
        return false;
    for (size_t i = fnv(s) & (set->cap - 1); set->slot[i]; i = (i + 1) & (set->cap - 1))
        if (strcmp(set->slot[i], s) == 0)
            return true;
    return false;
}

static void strset_free(strset *set)
{
    for (size_t i = 0; i < set->cap; i++)
        free(set->slot[i]);
    free(set->slot);
}

/* ---- the unpacking ------------------------------------------------------- */

typedef struct entry {
    char *path;                 /* joined onto the archive's directory */
    char sha[DS_SHA256_LEN];
    int64_t size;
} entry;

typedef struct unpack {
    ds *d;
    const char *id, *archive_path, *archive_sha;
    ds_unpack_limits lim;
    int64_t archive_size, quota, used;  /* used: the owner's usage before */
    entry *files;
    size_t count, cap;
    strset names, dirs;         /* files; directories (named or implied) */
    int64_t total, entries;
    char dir[DS_PATH_MAX + 1];  /* the archive's directory with its '/', or "" */
} unpack;

static int too_big(unpack *u, const char *entry_name)
{
    if (u->lim.ratio > 0 && u->total > RATIO_FLOOR && u->total / u->lim.ratio > u->archive_size)
        return ed_error_set(ED_ETOOBIG,
                            "archive expands more than %lld times its size (%lld bytes) at '%.200s': "
                            "refused as an archive bomb",
                            (long long)u->lim.ratio, (long long)u->archive_size, entry_name);
    if (u->total > u->lim.total_bytes)
        return ed_error_set(ED_ETOOBIG, "archive holds more than the limit of %lld bytes (at '%.200s')",
                            (long long)u->lim.total_bytes, entry_name);
    if (u->quota > 0 && u->used + u->total > u->quota)
        return ed_error_set(ED_EQUOTA, "unpacking would pass the quota of %lld bytes (%lld used, at '%.200s')",
                            (long long)u->quota, (long long)u->used, entry_name);
    return 0;
}

/* The entry's name as a draft path: "./" and a trailing '/' dropped, joined
 * onto the archive's directory, validated. *out malloc'd; NULL (and 0) for
 * the archive's root itself ("./"). */
static int entry_path(char **out, unpack *u, const char *name)
{
    size_t n;
    char *p;

    *out = NULL;
    if (name[0] == '/')
        return ed_error_set(ED_EINVAL, "archive entry '%.200s' has an absolute path", name);
    while (name[0] == '.' && name[1] == '/')
        for (name += 2; *name == '/'; name++)
            ;
    n = strlen(name);
    while (n > 0 && name[n - 1] == '/')
        n--;
    if (n == 0 || (n == 1 && name[0] == '.'))
        return 0;
    for (const char *s = name; s < name + n;) {
        const char *e = memchr(s, '/', (size_t)(name + n - s));
        size_t k = e ? (size_t)(e - s) : (size_t)(name + n - s);
        if (k == 2 && s[0] == '.' && s[1] == '.')
            return ed_error_set(ED_EINVAL, "archive entry '%.200s' climbs out of its directory with '..'", name);
        s += k + 1;
    }
    if (asprintf(&p, "%s%.*s", u->dir, (int)n, name) < 0)
        return ed_error_set(ED_ENOMEM, "path");
    if (ds_path_validate(p, strlen(p)) < 0) {
        char why[300];
        snprintf(why, sizeof(why), "%s", ed_error_last());
        free(p);
        return ed_error_set(ED_EINVAL, "archive entry '%.200s': %s", name, why);
    }
    *out = p;
    return 0;
}

/* Every directory above `path` is a directory. */
static int add_parents(unpack *u, const char *path)
{
    char buf[DS_PATH_MAX + 1];
    int err;

    snprintf(buf, sizeof(buf), "%s", path);
    for (char *s = strrchr(buf, '/'); s; s = strrchr(buf, '/')) {
        *s = '\0';
        if ((err = strset_add(&u->dirs, buf)) != 0)
            return err < 0 ? err : 0;   /* there already: so are its parents */
    }
    return 0;
}

static int store_entry(unpack *u, struct archive *a, const char *name, char *path)
{
    ds_blobw *w = NULL;
    entry *f;
    int err;

    if (u->count == u->cap) {
        void *p = realloc(u->files, (u->cap = u->cap ? u->cap * 2 : 64) * sizeof(*u->files));
        if (!p)
            return ed_error_set(ED_ENOMEM, "files");
        u->files = p;
    }
    if ((err = ds__blobw_open(&w, u->d, "unpack")) < 0)
        return err;
    for (;;) {
        const void *buf;
        size_t n;
        la_int64_t off;
        int r = archive_read_data_block(a, &buf, &n, &off);
        if (r == ARCHIVE_EOF)
            break;
        if (r < ARCHIVE_WARN) {
            err = ed_error_set(ED_EINVAL, "archive is truncated or corrupt: %s (in '%.200s')",
                               archive_error_string(a) ? archive_error_string(a) : "read failed", name);
            goto fail;
        }
        /* a sparse entry's holes: fill with zeros up to off (counted too) */
        while (ds__blobw_size(w) < off) {
            static const char zeros[65536];
            int64_t gap = off - ds__blobw_size(w);
            size_t k = gap < (int64_t)sizeof(zeros) ? (size_t)gap : sizeof(zeros);
            u->total += (int64_t)k;
            if (ds__blobw_size(w) + (int64_t)k > u->d->lim.file_max_bytes || (err = too_big(u, name)) < 0 ||
                (err = ds__blobw_write(w, zeros, k)) < 0)
                goto limit;
        }
        u->total += (int64_t)n;
        if (ds__blobw_size(w) + (int64_t)n > u->d->lim.file_max_bytes || (err = too_big(u, name)) < 0 ||
            (err = ds__blobw_write(w, buf, n)) < 0)
            goto limit;
    }
    f = &u->files[u->count];
    if ((err = ds__blobw_finish(f->sha, &f->size, w)) < 0)
        return err;
    f->path = path;
    u->count++;
    return 0;
limit:
    if (err == 0)
        err = ed_error_set(ED_ETOOBIG, "archive entry '%.200s' is larger than the file limit of %lld bytes", name,
                           (long long)u->d->lim.file_max_bytes);
fail:
    ds__blobw_abort(w);
    return err;
}

static int read_entries(unpack *u, struct archive *a)
{
    struct archive_entry *e;
    int r, err;

    for (;;) {
        const char *name;
        char *path = NULL;
        mode_t type;

        r = archive_read_next_header(a, &e);
        if (r == ARCHIVE_EOF)
            return 0;
        if (r < ARCHIVE_WARN)
            return ed_error_set(ED_EINVAL, "archive is truncated or corrupt: %s",
                                archive_error_string(a) ? archive_error_string(a) : "unreadable header");
        if ((name = archive_entry_pathname_utf8(e)) == NULL && (name = archive_entry_pathname(e)) == NULL)
            return ed_error_set(ED_EINVAL, "archive entry %lld has no readable name", (long long)u->entries + 1);
        if (++u->entries > u->lim.entries)
            return ed_error_set(ED_ETOOBIG, "archive holds more than the limit of %lld entries",
                                (long long)u->lim.entries);
        type = archive_entry_filetype(e);
        if (archive_entry_hardlink(e))
            return ed_error_set(ED_EINVAL, "archive entry '%.200s' is a hard link (to '%.200s'): links are refused",
                                name, archive_entry_hardlink(e));
        if (type == AE_IFLNK || archive_entry_symlink(e))
            return ed_error_set(ED_EINVAL, "archive entry '%.200s' is a symbolic link: links are refused", name);
        if (type != AE_IFREG && type != AE_IFDIR)
            return ed_error_set(ED_EINVAL, "archive entry '%.200s' is a device, FIFO or socket: refused", name);
        if ((err = entry_path(&path, u, name)) < 0)
            return err;
        if (!path)
            continue;           /* "./" */
        if ((err = add_parents(u, path)) < 0) {
            free(path);
            return err;
        }
        if (type == AE_IFDIR) {
            err = strset_add(&u->dirs, path);
            free(path);
            if (err < 0)
                return err;
            continue;
        }
        if ((err = strset_add(&u->names, path)) != 0) {
            free(path);
            return err < 0 ? err : ed_error_set(ED_EINVAL, "archive holds '%.200s' twice", name);
        }
        if (u->count >= DS_FILES_MAX) {
            free(path);
            return ed_error_set(ED_ETOOBIG, "a version holds at most %d files", DS_FILES_MAX);
        }
        if ((err = store_entry(u, a, name, path)) < 0) {
            free(path);
            return err;
        }
    }
}

/* A name both a file and a directory, among the entries and the draft's
 * other files (`draft`, the archive excluded). */
static int clashes(unpack *u, const ds_file_list *draft)
{
    for (size_t i = 0; i < u->count; i++)
        if (strset_has(&u->dirs, u->files[i].path))
            return ed_error_set(ED_EINVAL, "archive holds '%.200s' both as a file and as a directory",
                                u->files[i].path);
    for (size_t i = 0; i < draft->count; i++) {
        const char *p = draft->items[i].path;
        char buf[DS_PATH_MAX + 1];
        if (strcmp(p, u->archive_path) == 0)
            continue;
        if (strset_has(&u->names, p))
            return ed_error_set(ED_EINVAL, "archive entry '%.200s' would replace a file already in the draft", p);
        if (strset_has(&u->dirs, p))
            return ed_error_set(ED_EINVAL, "the archive makes '%.200s' a directory, but it is a file of the draft", p);
        snprintf(buf, sizeof(buf), "%s", p);
        for (char *s = strrchr(buf, '/'); s; s = strrchr(buf, '/')) {
            *s = '\0';
            if (strset_has(&u->names, buf))
                return ed_error_set(ED_EINVAL, "archive entry '%.200s' is a directory of the draft (it holds '%.200s')",
                                    buf, p);
        }
    }
    return 0;
}

static int step(ds *d, sqlite3_stmt *q, const char *what)
{
    int rc = sqlite3_step(q);
    sqlite3_reset(q);
    return rc == SQLITE_DONE ? 0 : ed_store_error(ed_store_db(d->st), rc, what);
}

/* One transaction: the archive's row out, the files' (and new blobs') rows
 * in. Retried whole by ed_store_tx: no state kept but in `u`, unchanged. */
static int commit_body(void *p)
{
    unpack *u = p;
    ds *d = u->d;
    ds_file_list *draft = NULL;
    sqlite3_stmt *del = NULL, *blob = NULL, *file = NULL;
    int64_t now = ed_now_ms();
    bool found = false;
    int err;

    if ((err = ds__files_load(&draft, d, u->id, 0)) < 0)
        return err;
    for (size_t i = 0; i < draft->count && !found; i++)
        found = strcmp(draft->items[i].path, u->archive_path) == 0 &&
                strcmp(draft->items[i].sha256, u->archive_sha) == 0;
    if (!found) {
        err = ed_error_set(ED_ECONFLICT, "'%.200s' changed in the draft while it was unpacked", u->archive_path);
        goto done;
    }
    if ((err = clashes(u, draft)) < 0)
        goto done;
    if (draft->count - 1 + u->count > DS_FILES_MAX) {
        err = ed_error_set(ED_ETOOBIG, "a version holds at most %d files", DS_FILES_MAX);
        goto done;
    }
    if ((err = ed_store_prepare(&del, d->st, "DELETE FROM dataset_draft_files WHERE dataset_id = ?1 AND path = ?2")) <
            0 ||
        (err = ed_store_prepare(&blob, d->st,
                                "INSERT OR IGNORE INTO dataset_blobs (sha256, size, media_type, created_at) "
                                "VALUES (?1, ?2, ?3, ?4)")) < 0 ||
        (err = ed_store_prepare(&file, d->st,
                                "INSERT INTO dataset_draft_files (dataset_id, path, sha256, size, media_type, "
                                "updated_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6)")) < 0)
        goto done;
    sqlite3_bind_text(del, 1, u->id, -1, SQLITE_STATIC);
    sqlite3_bind_text(del, 2, u->archive_path, -1, SQLITE_STATIC);
    if ((err = step(d, del, "remove the archive")) < 0)
        goto done;
    for (size_t i = 0; i < u->count; i++) {
        const entry *f = &u->files[i];
        const char *mt = ds__media_type(f->path);
        sqlite3_bind_text(blob, 1, f->sha, -1, SQLITE_STATIC);
        sqlite3_bind_int64(blob, 2, f->size);
        sqlite3_bind_text(blob, 3, mt, -1, SQLITE_STATIC);
        sqlite3_bind_int64(blob, 4, now);
        if ((err = step(d, blob, "blob")) < 0)
            goto done;
        sqlite3_bind_text(file, 1, u->id, -1, SQLITE_STATIC);
        sqlite3_bind_text(file, 2, f->path, -1, SQLITE_STATIC);
        sqlite3_bind_text(file, 3, f->sha, -1, SQLITE_STATIC);
        sqlite3_bind_int64(file, 4, f->size);
        sqlite3_bind_text(file, 5, mt, -1, SQLITE_STATIC);
        sqlite3_bind_int64(file, 6, now);
        if ((err = step(d, file, "draft file")) < 0)
            goto done;
    }
done:
    sqlite3_finalize(del);
    sqlite3_finalize(blob);
    sqlite3_finalize(file);
    ds_file_list_free(draft);
    return err;
}

/* The draft's row for `path`: its blob's sha256 and size. */
static int archive_row(char sha[DS_SHA256_LEN], int64_t *size, ds *d, const char *id, const char *path)
{
    sqlite3_stmt *q = NULL;
    int rc, err;

    if ((err = ed_store_prepare(&q, d->st,
                                "SELECT sha256, size FROM dataset_draft_files WHERE dataset_id = ?1 AND path = ?2")) < 0)
        return err;
    sqlite3_bind_text(q, 1, id, -1, SQLITE_STATIC);
    sqlite3_bind_text(q, 2, path, -1, SQLITE_STATIC);
    if ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        snprintf(sha, DS_SHA256_LEN, "%s", (const char *)sqlite3_column_text(q, 0));
        *size = sqlite3_column_int64(q, 1);
    } else if (rc == SQLITE_DONE) {
        err = ed_error_set(ED_ENOTFOUND, "no file '%.200s' in the draft", path);
    } else {
        err = ed_store_error(ed_store_db(d->st), rc, "draft file");
    }
    sqlite3_finalize(q);
    return err;
}

int ds_draft_unpack(int64_t *out_files, ds *d, int64_t user, const char *id, const char *path,
                    const ds_unpack_limits *limits, int64_t quota_bytes)
{
    unpack u = {.d = d, .id = id, .archive_path = path, .quota = quota_bytes};
    char sha[DS_SHA256_LEN], blob[DS_SHA256_LEN + 4];
    struct archive *a = NULL;
    const char *slash;
    int64_t owner;
    int fd = -1, err;

    if (out_files)
        *out_files = 0;
    u.lim = limits ? *limits : DS_UNPACK_LIMITS_DEFAULT;
    if ((err = ds__access(d, user, id, true, &owner)) < 0 || (err = ds_path_validate(path, strlen(path))) < 0 ||
        (err = archive_row(sha, &u.archive_size, d, id, path)) < 0)
        return err;
    u.archive_sha = sha;
    if ((slash = strrchr(path, '/')) != NULL)
        snprintf(u.dir, sizeof(u.dir), "%.*s/", (int)(slash - path), path);
    if (quota_bytes > 0 && (err = ds__usage(&u.used, d, owner)) < 0)
        return err;
    snprintf(blob, sizeof(blob), "%.2s/%s", sha, sha);
    if ((fd = openat(d->blobs_fd, blob, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)) < 0)
        return ed_error_set(ED_EIO, "open blob %s of '%.200s': %s", sha, path, strerror(errno));
    if ((a = archive_read_new()) == NULL) {
        close(fd);
        return ed_error_set(ED_ENOMEM, "archive reader");
    }
    /* exactly the formats promised; never "raw", "all" or external programs */
    archive_read_support_filter_gzip(a);
    archive_read_support_filter_bzip2(a);
    archive_read_support_filter_xz(a);
    archive_read_support_format_zip(a);
    archive_read_support_format_tar(a);
    if (archive_read_open_fd(a, fd, 1 << 20) != ARCHIVE_OK) {
        err = ed_error_set(ED_EINVAL, "'%.200s' is not a zip or tar archive (or is truncated or corrupt): %s", path,
                           archive_error_string(a) ? archive_error_string(a) : "unknown format");
        goto done;
    }
    /* placed blobs must keep their rows' promise until the commit: gc waits */
    pthread_rwlock_rdlock(&d->blob_lock);
    if ((err = read_entries(&u, a)) == 0)
        err = ed_store_tx(d->st, commit_body, &u);
    pthread_rwlock_unlock(&d->blob_lock);
    if (err == 0 && out_files)
        *out_files = (int64_t)u.count;
done:
    archive_read_free(a);
    close(fd);
    for (size_t i = 0; i < u.count; i++)
        free(u.files[i].path);
    free(u.files);
    strset_free(&u.names);
    strset_free(&u.dirs);
    return err;
}
