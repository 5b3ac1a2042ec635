/*
 * client_datasets.c - `eddy datasets ...`: datasets over the REST API
 * (API.md "Datasets"): create, ls, show, versions, upload (resumable),
 * download (resumable, or the whole version unpacked safely), from-job,
 * from-project, attach, detach, rm.
 *
 * DATASET on the command line is an id, OWNER/SLUG, or a slug of the
 * caller's own; DATASET@N (or @latest) names a version.
 *
 * Uploads: each file's sha256 is computed first, then it goes through the
 * resumable upload API in chunks of 32 MiB (Content-Range). A dropped
 * connection or a 5xx is retried from the server's durable offset, a few
 * times with backoff. The upload's id is kept in a small state file
 * (~/.local/state/eddy/uploads/, keyed by server, dataset, path, size and
 * hash) until the file is done, so running the same upload again after a
 * crash or Ctrl-C continues where the server is instead of starting over.
 */
#include "cli.h"
#include "cmd.h"

#include "ed_error.h"
#include "ed_fs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define CHUNK_DEFAULT   ((int64_t)32 << 20)   /* bytes of one upload chunk */
#define UPLOAD_RETRIES  5                     /* tries of one chunk after a failure */
#define UPLOAD_FILES_MAX 100000               /* files one upload takes (a version's limit) */
#define DIR_DEPTH_MAX   32
#define DL_RETRIES      5
#define LS_PAGES        100                   /* pages of 500 `datasets ls` reads */

static const cli_col dataset_cols[] = {
    {"ID", "id", CLI_FMT_TEXT},           {"OWNER", "owner", CLI_FMT_TEXT},
    {"SLUG", "slug", CLI_FMT_TEXT},       {"NAME", "name", CLI_FMT_TEXT},
    {"VISIBILITY", "visibility", CLI_FMT_TEXT}, {"LATEST", "latest_version", CLI_FMT_TEXT},
    {"UPDATED", "updated_at", CLI_FMT_TEXT},
};

static const cli_col dataset_fields[] = {
    {"ID", "id", CLI_FMT_TEXT},           {"Owner", "owner", CLI_FMT_TEXT},
    {"Slug", "slug", CLI_FMT_TEXT},       {"Name", "name", CLI_FMT_TEXT},
    {"Visibility", "visibility", CLI_FMT_TEXT}, {"License", "license", CLI_FMT_TEXT},
    {"Tags", "tags", CLI_FMT_LIST},       {"Latest version", "latest_version", CLI_FMT_TEXT},
    {"Created", "created_at", CLI_FMT_TEXT}, {"Updated", "updated_at", CLI_FMT_TEXT},
};

static const cli_col version_cols[] = {
    {"VERSION", "number", CLI_FMT_TEXT},  {"FILES", "file_count", CLI_FMT_TEXT},
    {"SIZE", "size_bytes", CLI_FMT_BYTES}, {"CREATED", "created_at", CLI_FMT_TEXT},
    {"MESSAGE", "message", CLI_FMT_TEXT},
};

static const cli_col file_cols[] = {
    {"PATH", "path", CLI_FMT_TEXT}, {"SIZE", "size", CLI_FMT_BYTES},
    {"TYPE", "media_type", CLI_FMT_TEXT}, {"SHA256", "sha256", CLI_FMT_TEXT},
};

static const cli_col attach_cols[] = {
    {"DATASET", "dataset_id", CLI_FMT_TEXT}, {"OWNER", "owner", CLI_FMT_TEXT},
    {"SLUG", "slug", CLI_FMT_TEXT},          {"VERSION", "version", CLI_FMT_TEXT},
    {"MOUNT", "mount_path", CLI_FMT_TEXT},
};

static int usage(void)
{
    fprintf(stderr,
            "usage: eddy datasets create NAME [--slug SLUG] [--description TEXT] [--license L] [--tag T]...\n"
            "                            [--visibility private|unlisted|public]\n"
            "       eddy datasets ls [--mine | --owner USER] [-q TEXT] [--tag T]\n"
            "       eddy datasets show DATASET[@N]\n"
            "       eddy datasets versions DATASET\n"
            "       eddy datasets upload DATASET PATH... [--to DIR] [--publish -m MESSAGE] [--unpack]\n"
            "       eddy datasets download DATASET[@N] [PATH] [-o OUT] [--tar]\n"
            "       eddy datasets from-job JOB_ID DATASET [--create NAME] [--paths P1,P2] [--to DIR] -m MESSAGE\n"
            "       eddy datasets from-project PROJECT DATASET [--create NAME] [--paths P1,P2] [--to DIR] -m MESSAGE\n"
            "       eddy datasets attach PROJECT DATASET[@N|@latest]\n"
            "       eddy datasets detach PROJECT DATASET\n"
            "       eddy datasets rm DATASET [--version N]\n"
            "DATASET is an id, OWNER/SLUG, or the slug of one of your datasets.\n");
    return CLI_EXIT_USAGE;
}

/* ---- naming a dataset ---------------------------------------------------------- */

static bool is_uuid(const char *s)
{
    if (strlen(s) != 36)
        return false;
    for (int i = 0; i < 36; i++) {
        bool dash = i == 8 || i == 13 || i == 18 || i == 23;
        if (dash ? s[i] != '-' : !((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
            return false;
    }
    return true;
}

/* What the server accepts as a slug or username here: [A-Za-z0-9._-], 1..64. */
static bool is_word(const char *s, size_t max)
{
    size_t n = strlen(s);

    if (n == 0 || n > max)
        return false;
    for (const char *p = s; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '.' ||
              *p == '_' || *p == '-'))
            return false;
    return true;
}

/* Split "REF@N" / "REF@latest": *version 0 for latest or none given. */
static int split_version(char *ref, size_t n, int64_t *version, bool *given, const char *arg)
{
    const char *at = strrchr(arg, '@');

    *version = 0;
    *given = false;
    if (at == NULL) {
        snprintf(ref, n, "%s", arg);
        return 0;
    }
    if ((size_t)(at - arg) >= n)
        return ed_error_set(CLI_EUSAGE, "dataset '%.60s...' is too long", arg);
    snprintf(ref, n, "%.*s", (int)(at - arg), arg);
    *given = true;
    if (strcmp(at + 1, "latest") == 0)
        return 0;
    return cli_parse_int(version, at + 1, 1, INT64_MAX, "the version after '@' (a number or latest)");
}

/* The caller's username (GET /api/v1/me). */
static int my_name(char *out, size_t n, cli *c)
{
    json_t *me = NULL;
    int err;

    if ((err = cli_call_json(&me, c, "GET", "/api/v1/me", NULL, 0)) < 0)
        return err;
    snprintf(out, n, "%s", json_string_value(json_object_get(me, "username")) ?: "");
    json_decref(me);
    return out[0] ? 0 : ed_error_set(ED_EIO, "GET /api/v1/me named no user");
}

/* The dataset `ref` names (an id, OWNER/SLUG, or a slug of the caller's):
 * its JSON into *out (a new reference). ED_ENOTFOUND with the name. */
static int resolve(json_t **out, cli *c, const char *ref)
{
    char owner[80], slug[80], path[400];
    const char *slash;
    json_t *j = NULL, *e;
    size_t i;
    int err;

    *out = NULL;
    if (ref == NULL || ref[0] == '\0')
        return ed_error_set(CLI_EUSAGE, "a dataset is needed (an id, OWNER/SLUG or one of your slugs)");
    if (is_uuid(ref)) {
        snprintf(path, sizeof(path), "/api/v1/datasets/%s", ref);
        return cli_call_json(out, c, "GET", path, NULL, 0);
    }
    if ((slash = strchr(ref, '/')) != NULL) {
        if ((size_t)(slash - ref) >= sizeof(owner) || !is_word(slash + 1, 64))
            return ed_error_set(CLI_EUSAGE, "'%.100s' is not a dataset: give an id, OWNER/SLUG or a slug", ref);
        snprintf(owner, sizeof(owner), "%.*s", (int)(slash - ref), ref);
        snprintf(slug, sizeof(slug), "%s", slash + 1);
        if (!is_word(owner, 32))
            return ed_error_set(CLI_EUSAGE, "'%.100s' is not a dataset: give an id, OWNER/SLUG or a slug", ref);
    } else {
        if (!is_word(ref, 64))
            return ed_error_set(CLI_EUSAGE, "'%.100s' is not a dataset: give an id, OWNER/SLUG or a slug", ref);
        if ((err = my_name(owner, sizeof(owner), c)) < 0)
            return err;
        snprintf(slug, sizeof(slug), "%s", ref);
    }
    /* the owner's datasets whose text holds the slug; then the exact slug */
    {
        char *eo = cli_escape(owner, false), *es = cli_escape(slug, false);
        if (eo == NULL || es == NULL) {
            free(eo);
            free(es);
            return ed_error_set(ED_ENOMEM, "dataset");
        }
        snprintf(path, sizeof(path), "/api/v1/datasets?owner=%s&q=%s&limit=500", eo, es);
        free(eo);
        free(es);
    }
    if ((err = cli_call_json(&j, c, "GET", path, NULL, 0)) < 0)
        return err;
    json_array_foreach(json_object_get(j, "items"), i, e) {
        const char *s = json_string_value(json_object_get(e, "slug"));
        if (s && strcasecmp(s, slug) == 0) {
            *out = json_incref(e);
            break;
        }
    }
    json_decref(j);
    if (*out == NULL)
        return ed_error_set(ED_ENOTFOUND, "not_found: no dataset %s/%s (or it is not visible to you)", owner, slug);
    return 0;
}

static const char *id_of(const json_t *d) { return json_string_value(json_object_get(d, "id")) ?: ""; }

/* "owner/slug" of a dataset's JSON. */
static void label_of(char *out, size_t n, const json_t *d)
{
    snprintf(out, n, "%s/%s", json_string_value(json_object_get(d, "owner")) ?: "?",
             json_string_value(json_object_get(d, "slug")) ?: "?");
}

/* GET a version (0: latest) with its manifest. */
static int version_get(json_t **out, cli *c, const char *id, int64_t number)
{
    char path[200];

    if (number > 0)
        snprintf(path, sizeof(path), "/api/v1/datasets/%s/versions/%lld", id, (long long)number);
    else
        snprintf(path, sizeof(path), "/api/v1/datasets/%s/versions/latest", id);
    return cli_call_json(out, c, "GET", path, NULL, 0);
}

/* ---- progress on a terminal ------------------------------------------------------ */

typedef struct progress {
    bool        tty;
    const char *what;
    int64_t     done, total;
    time_t      last;
} progress;

static void fmt_bytes(char *out, size_t n, int64_t v)
{
    json_t *j = json_integer(v);

    cli_format(out, n, j, CLI_FMT_BYTES);
    json_decref(j);
}

static void progress_show(progress *p, bool force)
{
    time_t now = time(NULL);
    char a[32], b[32];

    if (!p->tty || (!force && now == p->last))
        return;
    p->last = now;
    fmt_bytes(a, sizeof(a), p->done);
    fmt_bytes(b, sizeof(b), p->total);
    fprintf(stderr, "\r%.50s  %s / %s (%d%%)   ", p->what, a, b,
            p->total > 0 ? (int)(p->done * 100 / p->total) : 100);
    fflush(stderr);
}

static void progress_end(progress *p)
{
    if (p->tty) {
        progress_show(p, true);
        fputc('\n', stderr);
    }
}

/* ---- sha256 of a local file ---------------------------------------------------------- */

static int file_sha256(char hex[65], int fd, const char *name)
{
    crypto_hash_sha256_state st;
    unsigned char d[crypto_hash_sha256_BYTES];
    static char buf[1 << 20];
    off_t off = 0;
    ssize_t n;

    crypto_hash_sha256_init(&st);
    for (;;) {
        n = pread(fd, buf, sizeof(buf), off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return ed_error_set(ED_EIO, "cannot read %s: %s", name, strerror(errno));
        if (n == 0)
            break;
        crypto_hash_sha256_update(&st, (unsigned char *)buf, (size_t)n);
        off += n;
    }
    crypto_hash_sha256_final(&st, d);
    sodium_bin2hex(hex, 65, d, sizeof(d));
    return 0;
}

/* ---- upload state: the upload id of a file not yet finished --------------------- */

static int state_path(char *out, size_t n, cli *c, const char *id, const char *dest, int64_t size, const char *sha)
{
    const char *st = getenv("XDG_STATE_HOME"), *home = getenv("HOME");
    char key[8192], hex[65], dir[4096];
    unsigned char d[crypto_hash_sha256_BYTES];

    if (st && st[0])
        snprintf(dir, sizeof(dir), "%s/eddy/uploads", st);
    else if (home && home[0])
        snprintf(dir, sizeof(dir), "%s/.local/state/eddy/uploads", home);
    else
        return -1;
    snprintf(key, sizeof(key), "%s\n%s\n%s\n%lld\n%s", cli_url(c), id, dest, (long long)size, sha);
    crypto_hash_sha256(d, (unsigned char *)key, strlen(key));
    sodium_bin2hex(hex, sizeof(hex), d, sizeof(d));
    if (snprintf(out, n, "%s/%s", dir, hex) >= (int)n)
        return -1;
    /* make the directories, 0700 (an upload id is a capability of sorts) */
    for (char *p = out + 1; *p; p++)
        if (*p == '/') {
            *p = '\0';
            mkdir(out, 0700);
            *p = '/';
        }
    return 0;
}

static void state_load(char *uid, size_t n, const char *path)
{
    char buf[128] = "";
    FILE *f = fopen(path, "r");

    uid[0] = '\0';
    if (f == NULL)
        return;
    if (fgets(buf, sizeof(buf), f))
        buf[strcspn(buf, "\r\n")] = '\0';
    fclose(f);
    if (strlen(buf) > 0 && strlen(buf) < n && strspn(buf, "0123456789abcdef-") == strlen(buf))
        snprintf(uid, n, "%s", buf);
}

static void state_save(const char *path, const char *uid)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);

    if (fd < 0)
        return;     /* no resume across runs, the upload itself still works */
    dprintf(fd, "%s\n", uid);
    close(fd);
}

/* ---- upload ------------------------------------------------------------------------ */

typedef struct up_item {
    char       *local;  /* path on this machine, for messages */
    char       *dest;   /* path in the dataset */
    const char *root;   /* the directory named on the command line (argv), or NULL for a file named there */
    char       *rel;    /* beneath root: what is opened (an O_NOFOLLOW walk), or NULL */
} up_item;

typedef struct up_list {
    up_item *v;
    size_t   n, cap;
} up_list;

static void up_list_free(up_list *l)
{
    for (size_t i = 0; i < l->n; i++) {
        free(l->v[i].local);
        free(l->v[i].dest);
        free(l->v[i].rel);
    }
    free(l->v);
}

static int up_add(up_list *l, const char *local, const char *dest, const char *root, const char *rel)
{
    if (l->n >= UPLOAD_FILES_MAX)
        return ed_error_set(CLI_EUSAGE, "more than %d files: a version holds at most that many", UPLOAD_FILES_MAX);
    for (size_t i = 0; i < l->n; i++)
        if (strcmp(l->v[i].dest, dest) == 0)
            return ed_error_set(CLI_EUSAGE, "%s and %s would both be %s in the dataset", l->v[i].local, local,
                                dest);
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 64;
        up_item *v = realloc(l->v, cap * sizeof(*v));
        if (v == NULL)
            return ed_error_set(ED_ENOMEM, "file list");
        l->v = v;
        l->cap = cap;
    }
    l->v[l->n].local = strdup(local);
    l->v[l->n].dest = strdup(dest);
    l->v[l->n].root = root;
    l->v[l->n].rel = rel ? strdup(rel) : NULL;
    if (l->v[l->n].local == NULL || l->v[l->n].dest == NULL || (rel && l->v[l->n].rel == NULL)) {
        free(l->v[l->n].local);
        free(l->v[l->n].dest);
        free(l->v[l->n].rel);
        return ed_error_set(ED_ENOMEM, "file list");
    }
    l->n++;
    return 0;
}

static int name_order(const void *a, const void *b)
{
    return strcoll(*(char *const *)a, *(char *const *)b);
}

/* The names in the directory open at `dfd` but "." and "..", sorted (as
 * scandir with alphasort). *out and each name malloc'd; *out_n of them. */
static int dir_names(char ***out, size_t *out_n, int dfd, const char *path)
{
    char **v = NULL;
    size_t n = 0, cap = 0;
    int fd = dup(dfd);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    struct dirent *e;
    int err = 0;

    if (d == NULL) {
        if (fd >= 0)
            close(fd);
        return ed_error_set(CLI_EUSAGE, "cannot read directory %s: %s", path, strerror(errno));
    }
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        if (n == cap) {
            char **nv = realloc(v, (cap = cap ? cap * 2 : 32) * sizeof(*v));
            if (nv == NULL) {
                err = ed_error_set(ED_ENOMEM, "directory %s", path);
                break;
            }
            v = nv;
        }
        if ((v[n] = strdup(e->d_name)) == NULL) {
            err = ed_error_set(ED_ENOMEM, "directory %s", path);
            break;
        }
        n++;
    }
    closedir(d);
    if (err < 0) {
        while (n > 0)
            free(v[--n]);
        free(v);
        return err;
    }
    if (n > 1)
        qsort(v, n, sizeof(*v), name_order);
    *out = v;
    *out_n = n;
    return 0;
}

/* Every regular file beneath the directory open at `dfd` (`root`/`rel`),
 * sorted; a symbolic link or a special file anywhere refuses the whole
 * upload (nothing is sent yet). Entries are looked at and directories
 * entered from their parent's descriptor without following links, and the
 * files are opened the same way when they are sent (ed_fs_open_beneath), so
 * a directory swapped for a link meanwhile is never followed. */
static int collect(up_list *l, int dfd, const char *root, const char *rel, const char *to, int depth)
{
    char path[8192], sub[4200], dest[4400];
    char **names = NULL;
    size_t n = 0;
    int err;

    if (depth > DIR_DEPTH_MAX)
        return ed_error_set(CLI_EUSAGE, "%s/%s is nested more than %d directories deep", root, rel, DIR_DEPTH_MAX);
    snprintf(path, sizeof(path), "%s%s%s", root, rel[0] ? "/" : "", rel);
    if ((err = dir_names(&names, &n, dfd, path)) < 0)
        return err;
    for (size_t i = 0; i < n && err == 0; i++) {
        const char *name = names[i];
        struct stat sb;

        if (snprintf(sub, sizeof(sub), "%s%s%s", rel, rel[0] ? "/" : "", name) >= 4096) {
            err = ed_error_set(CLI_EUSAGE, "path %.80s... is too long", sub);
            break;
        }
        snprintf(path, sizeof(path), "%s/%s", root, sub);
        if (fstatat(dfd, name, &sb, AT_SYMLINK_NOFOLLOW) < 0) {
            err = ed_error_set(CLI_EUSAGE, "cannot stat %s: %s", path, strerror(errno));
        } else if (S_ISLNK(sb.st_mode)) {
            err = ed_error_set(CLI_EUSAGE, "refusing the symbolic link %s: upload takes regular files only "
                                           "(nothing was uploaded)", path);
        } else if (S_ISDIR(sb.st_mode)) {
            int sub_fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            if (sub_fd < 0) {
                err = ed_error_set(CLI_EUSAGE, "cannot read directory %s: %s", path, strerror(errno));
            } else {
                err = collect(l, sub_fd, root, sub, to, depth + 1);
                close(sub_fd);
            }
        } else if (!S_ISREG(sb.st_mode)) {
            err = ed_error_set(CLI_EUSAGE, "refusing %s: not a regular file (nothing was uploaded)", path);
        } else {
            snprintf(dest, sizeof(dest), "%s%s%s", to, to[0] ? "/" : "", sub);
            err = up_add(l, path, dest, root, sub);
        }
    }
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
    return err;
}

/* Open an item for reading: a file named on the command line itself
 * (O_NOFOLLOW), one found in a directory beneath that directory, one
 * component at a time without following links. */
static int open_item(int *out_fd, const up_item *it)
{
    int root_fd, err;

    *out_fd = -1;
    if (it->rel == NULL) {
        if ((*out_fd = open(it->local, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)) < 0)
            return ed_error_set(CLI_EUSAGE, "cannot open %s: %s", it->local, strerror(errno));
        return 0;
    }
    if ((root_fd = open(it->root, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0)
        return ed_error_set(CLI_EUSAGE, "cannot open %s: %s", it->root, strerror(errno));
    err = ed_fs_open_beneath(out_fd, root_fd, it->rel, O_RDONLY, 0);
    close(root_fd);
    if (err < 0)
        return ed_error_set(CLI_EUSAGE, "cannot open %s: %s", it->local, ed_error_last());
    return 0;
}

static int64_t chunk_bytes(void)
{
    const char *s = getenv("EDDY_UPLOAD_CHUNK_BYTES");
    long long v = s ? atoll(s) : 0;

    return v >= 4096 ? v : CHUNK_DEFAULT;
}

/* The server's durable offset of an upload. */
static int upload_offset(int64_t *out, cli *c, const char *uid)
{
    char path[200];
    json_t *j = NULL;
    int err;

    snprintf(path, sizeof(path), "/api/v1/uploads/%s", uid);
    if ((err = cli_call_json(&j, c, "GET", path, NULL, 0)) < 0)
        return err;
    *out = json_integer_value(json_object_get(j, "offset"));
    json_decref(j);
    return 0;
}

/* Upload one local file to `dest` of dataset `id` through the resumable API. */
static int upload_one(cli *c, const char *id, const up_item *it, bool tty)
{
    char sha[65], uid[80] = "", state[4300] = "", cr[128], upath[200];
    const char *hdrs[2] = {cr, NULL};
    progress pg = {tty, it->dest, 0, 0, 0};
    struct stat sb;
    int64_t off = 0, size, chunk = chunk_bytes();
    bool done = false, have_state;
    int fd, err = 0, tries = 0;

    if ((err = open_item(&fd, it)) < 0)
        return err;
    if (fstat(fd, &sb) < 0 || !S_ISREG(sb.st_mode)) {
        close(fd);
        return ed_error_set(CLI_EUSAGE, "%s is not a regular file", it->local);
    }
    size = sb.st_size;
    pg.total = size;
    if ((err = file_sha256(sha, fd, it->local)) < 0)
        goto out;
    have_state = state_path(state, sizeof(state), c, id, it->dest, size, sha) == 0;
    if (have_state)
        state_load(uid, sizeof(uid), state);
    if (uid[0]) {
        err = upload_offset(&off, c, uid);
        if (err == ED_ENOTFOUND) {      /* finished, expired or cancelled: start again */
            uid[0] = '\0';
            off = 0;
            err = 0;
        } else if (err < 0) {
            goto out;
        } else if (off > 0) {
            fprintf(stderr, "eddy: %s: resuming the upload at byte %lld of %lld\n", it->dest, (long long)off,
                    (long long)size);
        }
    }
    if (uid[0] == '\0') {
        json_t *body = json_pack("{s:s, s:I, s:s}", "path", it->dest, "size", (json_int_t)size, "sha256", sha), *j = NULL;
        char path[200];
        if (body == NULL) {
            err = ed_error_set(ED_ENOMEM, "upload");
            goto out;
        }
        snprintf(path, sizeof(path), "/api/v1/datasets/%s/uploads", id);
        err = cli_call_json(&j, c, "POST", path, body, 0);
        json_decref(body);
        if (err < 0)
            goto out;
        snprintf(uid, sizeof(uid), "%s", json_string_value(json_object_get(j, "upload_id")) ?: "");
        off = json_integer_value(json_object_get(j, "offset"));
        json_decref(j);
        if (uid[0] == '\0') {
            err = ed_error_set(ED_EIO, "the server opened an upload without an id");
            goto out;
        }
        if (have_state)
            state_save(state, uid);
    }
    snprintf(upath, sizeof(upath), "/api/v1/uploads/%s", uid);
    while (!done) {
        int64_t len = size - off < chunk ? size - off : chunk;
        cli_resp r;

        if (size == 0)
            snprintf(cr, sizeof(cr), "Content-Range: bytes */0");
        else
            snprintf(cr, sizeof(cr), "Content-Range: bytes %lld-%lld/%lld", (long long)off, (long long)(off + len - 1),
                     (long long)size);
        pg.done = off;
        progress_show(&pg, false);
        err = cli_stream(&r, c, "PUT", upath, hdrs, fd, off, len, NULL, NULL);
        if (err == 0) {
            off = json_integer_value(json_object_get(r.json, "offset"));
            done = json_is_true(json_object_get(r.json, "done")) || (off >= size && size > 0);
            cli_resp_free(&r);
            tries = 0;
            continue;
        }
        if (err != CLI_ETRANSPORT && r.status < 500 && r.status != 409) {
            cli_resp_free(&r);
            if (err == ED_EINVAL && have_state)
                unlink(state);      /* a hash mismatch discards the upload on the server */
            goto out;
        }
        cli_resp_free(&r);
        if (++tries > UPLOAD_RETRIES) {
            fprintf(stderr, "\neddy: %s: giving up after %d tries (run the same upload again to resume)\n",
                    it->dest, UPLOAD_RETRIES);
            goto out;
        }
        if (pg.tty)
            fputc('\n', stderr);
        fprintf(stderr, "eddy: %s: %s; resuming from the server's offset\n", it->dest, ed_error_last());
        usleep(250000u << (tries - 1));
        if ((err = upload_offset(&off, c, uid)) < 0)
            goto out;
    }
    pg.done = size;
    progress_end(&pg);
    if (have_state)
        unlink(state);
    err = 0;
out:
    close(fd);
    return err;
}

static bool is_archive(const char *p)
{
    size_t n = strlen(p);

    return (n > 4 && strcasecmp(p + n - 4, ".zip") == 0) || (n > 4 && strcasecmp(p + n - 4, ".tar") == 0) ||
           (n > 7 && strcasecmp(p + n - 7, ".tar.gz") == 0) || (n > 4 && strcasecmp(p + n - 4, ".tgz") == 0);
}

static int publish(json_t **out, cli *c, const char *id, const char *message, const json_t *unpack)
{
    char path[200];
    json_t *body = json_pack("{s:s}", "message", message);
    int err;

    if (body == NULL)
        return ed_error_set(ED_ENOMEM, "publish");
    if (unpack && json_array_size(unpack) > 0)
        json_object_set(body, "unpack", (json_t *)unpack);
    snprintf(path, sizeof(path), "/api/v1/datasets/%s/versions", id);
    err = cli_call_json(out, c, "POST", path, body, 0);
    json_decref(body);
    return err;
}

static void print_version_line(const json_t *v, const char *label)
{
    char size[32];

    cli_format(size, sizeof(size), json_object_get(v, "size_bytes"), CLI_FMT_BYTES);
    printf("Published version %lld of %s: %lld files, %s.\n", (long long)json_integer_value(json_object_get(v, "number")),
           label, (long long)json_integer_value(json_object_get(v, "file_count")), size);
}

static int cmd_upload(int argc, char **argv, const cli_globals *g)
{
    const char *ref = NULL, *to = "", *message = NULL;
    const char **paths = NULL;
    bool pub = false, unpack = false, tty = isatty(2);
    size_t npaths = 0;
    up_list l = {0};
    cli *c = NULL;
    json_t *set = NULL, *version = NULL, *arch = NULL;
    char label[200];
    int err = 0;

    if ((paths = calloc((size_t)argc, sizeof(*paths))) == NULL)
        return cli_report(ed_error_set(ED_ENOMEM, "arguments"));
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--to") == 0 && i + 1 < argc)
            to = argv[++i];
        else if ((strcmp(argv[i], "-m") == 0 || strcmp(argv[i], "--message") == 0) && i + 1 < argc)
            message = argv[++i], pub = true;
        else if (strcmp(argv[i], "--publish") == 0)
            pub = true;
        else if (strcmp(argv[i], "--unpack") == 0)
            unpack = true;
        else if (argv[i][0] == '-' && argv[i][1] != '\0') {
            free(paths);
            return usage();
        } else if (ref == NULL)
            ref = argv[i];
        else
            paths[npaths++] = argv[i];
    }
    if (ref == NULL || npaths == 0) {
        free(paths);
        return usage();
    }
    if (pub && (message == NULL || message[0] == '\0')) {
        free(paths);
        return cli_report(ed_error_set(CLI_EUSAGE, "--publish needs -m MESSAGE: say what this version holds"));
    }
    if (unpack && !pub) {
        free(paths);
        return cli_report(ed_error_set(CLI_EUSAGE, "--unpack happens when the version is published: add --publish -m MESSAGE"));
    }
    while (to[0] == '/')
        to++;
    /* everything local is checked before the first request */
    for (size_t i = 0; i < npaths && err == 0; i++) {
        struct stat sb;
        char dest[4400];
        const char *base = strrchr(paths[i], '/');
        /* O_PATH: the name itself, looked at once (a link is the link) */
        int pfd = open(paths[i], O_PATH | O_NOFOLLOW | O_CLOEXEC);
        if (pfd < 0 || fstat(pfd, &sb) < 0) {
            err = ed_error_set(CLI_EUSAGE, "cannot read %s: %s", paths[i], strerror(errno));
        } else if (S_ISLNK(sb.st_mode)) {
            err = ed_error_set(CLI_EUSAGE, "refusing the symbolic link %s: upload takes regular files only", paths[i]);
        } else if (S_ISDIR(sb.st_mode)) {
            int dfd = openat(pfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
            if (dfd < 0) {
                err = ed_error_set(CLI_EUSAGE, "cannot read directory %s: %s", paths[i], strerror(errno));
            } else {
                err = collect(&l, dfd, paths[i], "", to, 0);
                close(dfd);
            }
        } else if (S_ISREG(sb.st_mode)) {
            base = base && base[1] ? base + 1 : paths[i];
            snprintf(dest, sizeof(dest), "%s%s%s", to, to[0] ? "/" : "", base);
            err = up_add(&l, paths[i], dest, NULL, NULL);
        } else {
            err = ed_error_set(CLI_EUSAGE, "refusing %s: not a regular file", paths[i]);
        }
        if (pfd >= 0)
            close(pfd);
    }
    if (err == 0 && l.n == 0)
        err = ed_error_set(CLI_EUSAGE, "nothing to upload: the directories are empty");
    if (err < 0)
        goto out;
    if ((err = cli_open(&c, g->url, true)) < 0 || (err = resolve(&set, c, ref)) < 0)
        goto out;
    label_of(label, sizeof(label), set);
    if ((arch = json_array()) == NULL) {
        err = ed_error_set(ED_ENOMEM, "upload");
        goto out;
    }
    for (size_t i = 0; i < l.n; i++) {
        if ((err = upload_one(c, id_of(set), &l.v[i], tty)) < 0) {
            fprintf(stderr, "eddy: %s: %s\n", l.v[i].local, ed_error_last());
            fprintf(stderr, "eddy: uploaded %zu of %zu files before the error\n", i, l.n);
            goto out;
        }
        if (unpack && is_archive(l.v[i].dest))
            json_array_append_new(arch, json_string(l.v[i].dest));
    }
    if (pub && (err = publish(&version, c, id_of(set), message, arch)) < 0)
        goto out;
    if (g->json)
        cli_print_json(version ? version : json_object_get(set, "id"));
    else {
        printf("Uploaded %zu files to the draft of %s.\n", l.n, label);
        if (version)
            print_version_line(version, label);
    }
out:
    free(paths);
    up_list_free(&l);
    json_decref(set);
    json_decref(version);
    json_decref(arch);
    return cli_done(c, err);
}

/* ---- download ---------------------------------------------------------------------- */

typedef struct dl_file {
    int      fd;
    int64_t  written;
    progress pg;
} dl_file;

static int dl_sink(const char *buf, size_t n, void *payload)
{
    dl_file *d = payload;
    size_t left = n;

    while (left > 0) {
        ssize_t w = write(d->fd, buf, left);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return ed_error_set(ED_EIO, "cannot write the download: %s", strerror(errno));
        buf += w;
        left -= (size_t)w;
    }
    d->written += (int64_t)n;
    d->pg.done += (int64_t)n;
    progress_show(&d->pg, false);
    return 0;
}

/* Download one file of version `number` to the local path `out`, resuming
 * from `out`.eddy-part when it is there (Range from its size, If-Range the
 * ETag: a changed file starts over); the whole file's sha256 must be the
 * manifest's before it is renamed to `out`. */
static int download_file(cli *c, const char *id, int64_t number, const json_t *file, const char *out, bool tty)
{
    const char *rel = json_string_value(json_object_get(file, "path"));
    const char *sha = json_string_value(json_object_get(file, "sha256"));
    int64_t size = json_integer_value(json_object_get(file, "size"));
    char part[4200], path[4700], range[80], ifr[100], hex[65], etag[100];
    const char *hdrs[3] = {range, ifr, NULL};
    dl_file d = {-1, 0, {tty, rel, 0, size, 0}};
    struct stat sb;
    char *esc;
    int err = 0, tries = 0;

    if (rel == NULL || sha == NULL)
        return ed_error_set(ED_EIO, "the manifest's entry has no path or sha256");
    if (snprintf(part, sizeof(part), "%s.eddy-part", out) >= (int)sizeof(part))
        return ed_error_set(CLI_EUSAGE, "%s: the name is too long", out);
    if ((esc = cli_escape(rel, true)) == NULL)
        return ed_error_set(ED_ENOMEM, "path");
    snprintf(path, sizeof(path), "/api/v1/datasets/%s/versions/%lld/files/%s", id, (long long)number, esc);
    free(esc);
    if ((d.fd = open(part, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644)) < 0)
        return ed_error_set(CLI_EUSAGE, "cannot write %s: %s", part, strerror(errno));
    if (fstat(d.fd, &sb) < 0 || !S_ISREG(sb.st_mode)) {
        close(d.fd);
        return ed_error_set(CLI_EUSAGE, "%s is not a regular file", part);
    }
    if (sb.st_size > size && ftruncate(d.fd, 0) < 0) {
        err = ed_error_set(ED_EIO, "%s: %s", part, strerror(errno));
        goto out;
    }
    for (;;) {
        cli_resp r;
        int64_t have = lseek(d.fd, 0, SEEK_END);

        if (have < 0) {
            err = ed_error_set(ED_EIO, "%s: %s", part, strerror(errno));
            goto out;
        }
        if (have >= size)
            break;
        if (have > 0 && tries == 0)
            fprintf(stderr, "eddy: %s: resuming the download at byte %lld of %lld\n", rel, (long long)have,
                    (long long)size);
        snprintf(range, sizeof(range), "Range: bytes=%lld-", (long long)have);
        snprintf(ifr, sizeof(ifr), "If-Range: \"%s\"", sha);
        d.pg.done = have;
        err = cli_stream(&r, c, "GET", path, have > 0 ? hdrs : NULL, -1, 0, 0, dl_sink, &d);
        if (err == 0 && r.status == 200 && have > 0) {
            /* the whole file came after the bytes we had (the server did not take the Range): start over */
            cli_resp_free(&r);
            if (ftruncate(d.fd, 0) < 0) {
                err = ed_error_set(ED_EIO, "%s: %s", part, strerror(errno));
                goto out;
            }
            if (++tries > DL_RETRIES) {
                err = ed_error_set(ED_EIO, "the server does not answer ranges of %s", rel);
                goto out;
            }
            continue;
        }
        if (err == 0 && cli_resp_header(etag, sizeof(etag), &r, "ETag") == 0 &&
            (strlen(etag) != 66 || strncmp(etag + 1, sha, 64) != 0)) {
            cli_resp_free(&r);
            err = ed_error_set(ED_EIO, "the server's ETag %s is not the manifest's sha256 %s", etag, sha);
            goto out;
        }
        cli_resp_free(&r);
        if (err == 0)
            continue;
        if (err != CLI_ETRANSPORT && err != ED_EBUSY && err != ED_EINTERNAL)
            goto out;
        if (++tries > DL_RETRIES)
            goto out;
        fprintf(stderr, "%seddy: %s: %s; resuming\n", tty ? "\n" : "", rel, ed_error_last());
        usleep(250000u << (tries - 1));
    }
    progress_end(&d.pg);
    if ((err = file_sha256(hex, d.fd, part)) < 0)
        goto out;
    if (strcmp(hex, sha) != 0) {
        err = ed_error_set(ED_EIO, "%s: the bytes have sha256 %s, the manifest says %s (%s removed: download "
                           "again)", rel, hex, sha, part);
        unlink(part);
        goto out;
    }
    close(d.fd);
    d.fd = -1;
    if (rename(part, out) < 0)
        err = ed_error_set(ED_EIO, "cannot rename %s to %s: %s", part, out, strerror(errno));
out:
    if (d.fd >= 0)
        close(d.fd);
    return err;
}

typedef struct tar_sink {
    int      fd;
    progress pg;
} tar_sink;

static int tar_to_fd(const char *buf, size_t n, void *payload)
{
    tar_sink *t = payload;
    dl_file d = {t->fd, 0, t->pg};
    int err = dl_sink(buf, n, &d);

    t->pg = d.pg;
    return err;
}

typedef struct untar_sink {
    cli_untar *u;
    progress   pg;
} untar_sink;

static int untar_feed(const char *buf, size_t n, void *payload)
{
    untar_sink *s = payload;

    s->pg.done += (int64_t)n;
    progress_show(&s->pg, false);
    return cli_untar_feed(buf, n, s->u);
}

static int cmd_download(int argc, char **argv, const cli_globals *g)
{
    const char *arg = NULL, *rel = NULL, *out = NULL;
    char ref[300], path[300], outbuf[4400], label[200];
    bool tar = false, given, tty = isatty(2);
    int64_t number;
    cli *c = NULL;
    json_t *set = NULL, *v = NULL, *e, *match = NULL;
    size_t i;
    int err;

    for (int k = 1; k < argc; k++) {
        if ((strcmp(argv[k], "-o") == 0 || strcmp(argv[k], "--output") == 0) && k + 1 < argc)
            out = argv[++k];
        else if (strcmp(argv[k], "--tar") == 0)
            tar = true;
        else if (argv[k][0] == '-')
            return usage();
        else if (arg == NULL)
            arg = argv[k];
        else if (rel == NULL)
            rel = argv[k];
        else
            return usage();
    }
    if (arg == NULL)
        return usage();
    if (rel && tar)
        return cli_report(ed_error_set(CLI_EUSAGE, "--tar is for the whole version: leave out PATH"));
    if ((err = split_version(ref, sizeof(ref), &number, &given, arg)) < 0)
        return cli_report(err);
    if ((err = cli_open(&c, g->url, true)) < 0 || (err = resolve(&set, c, ref)) < 0 ||
        (err = version_get(&v, c, id_of(set), number)) < 0)
        goto out;
    number = json_integer_value(json_object_get(v, "number"));
    label_of(label, sizeof(label), set);
    if (rel) {
        while (rel[0] == '/')
            rel++;
        json_array_foreach(json_object_get(v, "files"), i, e)
            if (strcmp(json_string_value(json_object_get(e, "path")) ?: "", rel) == 0)
                match = e;
        if (match == NULL) {
            err = ed_error_set(ED_ENOTFOUND, "not_found: version %lld of %s has no file %s", (long long)number,
                               label, rel);
            goto out;
        }
        if (out == NULL) {
            const char *base = strrchr(rel, '/');
            out = base ? base + 1 : rel;
        } else {
            /* -o DIR: the file keeps its name inside DIR (as cp does) */
            const char *base = strrchr(rel, '/');
            int od = open(out, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
            if (od >= 0) {
                close(od);
                snprintf(outbuf, sizeof(outbuf), "%s/%s", out, base ? base + 1 : rel);
                out = outbuf;
            }
        }
        if ((err = download_file(c, id_of(set), number, match, out, tty)) < 0)
            goto out;
        if (!g->json)
            printf("Downloaded %s (%lld bytes, sha256 checked) of version %lld of %s to %s.\n", rel,
                   (long long)json_integer_value(json_object_get(match, "size")), (long long)number, label, out);
        else
            cli_print_json(match);
        goto out;
    }
    snprintf(path, sizeof(path), "/api/v1/datasets/%s/versions/%lld/archive", id_of(set), (long long)number);
    if (tar) {
        char part[4500];
        tar_sink t = {-1, {tty, "archive", 0, 0, 0}};
        cli_resp r;
        if (out == NULL) {
            snprintf(outbuf, sizeof(outbuf), "%s-%s-v%lld.tar", json_string_value(json_object_get(set, "owner")) ?: "x",
                     json_string_value(json_object_get(set, "slug")) ?: "x", (long long)number);
            out = outbuf;
        }
        snprintf(part, sizeof(part), "%s.eddy-part", out);
        if ((t.fd = open(part, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644)) < 0) {
            err = ed_error_set(CLI_EUSAGE, "cannot write %s: %s", part, strerror(errno));
            goto out;
        }
        err = cli_stream(&r, c, "GET", path, NULL, -1, 0, 0, tar_to_fd, &t);
        cli_resp_free(&r);
        if (close(t.fd) < 0 && err == 0)
            err = ed_error_set(ED_EIO, "cannot write %s: %s", part, strerror(errno));
        if (err == 0 && rename(part, out) < 0)
            err = ed_error_set(ED_EIO, "cannot rename %s: %s", part, strerror(errno));
        if (err < 0) {
            unlink(part);
            goto out;
        }
        progress_end(&t.pg);
        if (!g->json)
            printf("Saved version %lld of %s as %s (%lld bytes).\n", (long long)number, label, out,
                   (long long)t.pg.done);
        else
            cli_print_json(v);
    } else {
        untar_sink s = {NULL, {tty, "archive", 0, json_integer_value(json_object_get(v, "size_bytes")), 0}};
        cli_resp r;
        if (out == NULL) {
            snprintf(outbuf, sizeof(outbuf), "%s-v%lld", json_string_value(json_object_get(set, "slug")) ?: "dataset",
                     (long long)number);
            out = outbuf;
        }
        if (mkdir(out, 0755) < 0 && errno != EEXIST) {
            err = ed_error_set(CLI_EUSAGE, "cannot create %s: %s", out, strerror(errno));
            goto out;
        }
        int od = open(out, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (od < 0) {
            err = ed_error_set(CLI_EUSAGE, "%s exists and is not a directory", out);
            goto out;
        }
        close(od);
        if ((err = cli_untar_new(&s.u, out, json_object_get(v, "files"))) < 0)
            goto out;
        err = cli_stream(&r, c, "GET", path, NULL, -1, 0, 0, untar_feed, &s);
        cli_resp_free(&r);
        if (err == 0)
            err = cli_untar_finish(s.u);
        if (err == 0) {
            progress_end(&s.pg);
            if (!g->json)
                printf("Downloaded version %lld of %s into %s: %zu files, %lld bytes (sha256 checked).\n",
                       (long long)number, label, out, cli_untar_files(s.u), (long long)cli_untar_bytes(s.u));
            else
                cli_print_json(v);
        }
        cli_untar_free(s.u);
    }
out:
    json_decref(set);
    json_decref(v);
    return cli_done(c, err);
}

/* ---- create, ls, show, versions, rm ------------------------------------------------- */

static int cmd_create(int argc, char **argv, const cli_globals *g)
{
    json_t *body = json_object(), *tags = json_array(), *out = NULL;
    const char *name = NULL;
    cli *c = NULL;
    int err = 0;

    if (body == NULL || tags == NULL) {
        json_decref(body);
        json_decref(tags);
        return cli_report(ed_error_set(ED_ENOMEM, "create"));
    }
    for (int i = 1; i < argc && err == 0; i++) {
        const char *key = NULL;
        if (strcmp(argv[i], "--slug") == 0)
            key = "slug";
        else if (strcmp(argv[i], "--description") == 0)
            key = "description";
        else if (strcmp(argv[i], "--license") == 0)
            key = "license";
        else if (strcmp(argv[i], "--visibility") == 0)
            key = "visibility";
        if ((key || strcmp(argv[i], "--tag") == 0) && i + 1 < argc) {
            if (key)
                json_object_set_new(body, key, json_string(argv[++i]));
            else
                json_array_append_new(tags, json_string(argv[++i]));
        } else if (argv[i][0] == '-' || name != NULL) {
            json_decref(body);
            json_decref(tags);
            return usage();
        } else {
            name = argv[i];
        }
    }
    if (name == NULL) {
        json_decref(body);
        json_decref(tags);
        return usage();
    }
    json_object_set_new(body, "name", json_string(name));
    if (json_object_get(body, "visibility") == NULL)
        json_object_set_new(body, "visibility", json_string("private"));
    if (json_array_size(tags) > 0)
        json_object_set(body, "tags", tags);
    if ((err = cli_open(&c, g->url, true)) == 0 &&
        (err = cli_call_json(&out, c, "POST", "/api/v1/datasets", body, 0)) == 0) {
        if (g->json)
            cli_print_json(out);
        else {
            char label[200];
            label_of(label, sizeof(label), out);
            printf("Created dataset %s (%s).\n", label, id_of(out));
        }
    }
    json_decref(out);
    json_decref(body);
    json_decref(tags);
    return cli_done(c, err);
}

static int cmd_ls(int argc, char **argv, const cli_globals *g)
{
    const char *owner = NULL, *q = NULL, *tag = NULL;
    bool mine = false;
    char path[1200], me[80];
    cli *c = NULL;
    json_t *j = NULL;
    int err;

    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--owner") == 0 && i + 1 < argc)
            owner = argv[++i];
        else if ((strcmp(argv[i], "-q") == 0 || strcmp(argv[i], "--query") == 0) && i + 1 < argc)
            q = argv[++i];
        else if (strcmp(argv[i], "--tag") == 0 && i + 1 < argc)
            tag = argv[++i];
        else if (strcmp(argv[i], "--mine") == 0)
            mine = true;
        else
            return usage();
    }
    if ((err = cli_open(&c, g->url, true)) < 0)
        return cli_done(c, err);
    if (mine) {
        if ((err = my_name(me, sizeof(me), c)) < 0)
            return cli_done(c, err);
        owner = me;
    }
    {
        char *eo = cli_escape(owner ? owner : "", false), *eq = cli_escape(q ? q : "", false),
             *et = cli_escape(tag ? tag : "", false);
        if (eo && eq && et)
            snprintf(path, sizeof(path), "/api/v1/datasets?limit=500&owner=%.200s&q=%.300s&tag=%.200s", eo, eq, et);
        free(eo);
        free(eq);
        free(et);
        if (!(eo && eq && et))
            return cli_done(c, ed_error_set(ED_ENOMEM, "query"));
    }
    /* every page (next_offset), at most LS_PAGES of 500 */
    {
        json_t *all = json_array();
        long long next = 0;
        char page[1300];
        if (all == NULL)
            return cli_done(c, ed_error_set(ED_ENOMEM, "list"));
        for (int pages = 0; pages < LS_PAGES; pages++) {
            json_t *nx;
            snprintf(page, sizeof(page), "%s&offset=%lld", path, next);
            if ((err = cli_call_json(&j, c, "GET", page, NULL, 0)) < 0)
                break;
            json_array_extend(all, json_object_get(j, "items"));
            nx = json_object_get(j, "next_offset");
            next = json_is_integer(nx) ? (long long)json_integer_value(nx) : -1;
            json_decref(j);
            j = NULL;
            if (next <= 0)
                break;
        }
        if (err == 0) {
            if (g->json) {
                json_t *o = json_pack("{s:O}", "items", all);
                cli_print_json(o);
                json_decref(o);
            } else {
                cli_print_table(all, dataset_cols, sizeof(dataset_cols) / sizeof(dataset_cols[0]));
            }
        }
        json_decref(all);
    }
    return cli_done(c, err);
}

static int cmd_show(int argc, char **argv, const cli_globals *g)
{
    char ref[300];
    int64_t number;
    bool given;
    cli *c = NULL;
    json_t *set = NULL, *v = NULL;
    int err;

    if (argc != 2 || argv[1][0] == '-')
        return usage();
    if ((err = split_version(ref, sizeof(ref), &number, &given, argv[1])) < 0)
        return cli_report(err);
    if ((err = cli_open(&c, g->url, true)) < 0 || (err = resolve(&set, c, ref)) < 0)
        goto out;
    if (json_integer_value(json_object_get(set, "latest_version")) > 0 || given)
        if ((err = version_get(&v, c, id_of(set), number)) < 0)
            goto out;
    if (g->json) {
        if (v)
            json_object_set(set, "version", v);
        cli_print_json(set);
        goto out;
    }
    cli_print_fields(set, dataset_fields, sizeof(dataset_fields) / sizeof(dataset_fields[0]));
    if (v) {
        char size[32];
        cli_format(size, sizeof(size), json_object_get(v, "size_bytes"), CLI_FMT_BYTES);
        printf("\nVersion %lld: %s (%lld files, %s)\n", (long long)json_integer_value(json_object_get(v, "number")),
               json_string_value(json_object_get(v, "message")) ?: "",
               (long long)json_integer_value(json_object_get(v, "file_count")), size);
        cli_print_table(json_object_get(v, "files"), file_cols, sizeof(file_cols) / sizeof(file_cols[0]));
    } else {
        printf("\nNo version published yet.\n");
    }
out:
    json_decref(set);
    json_decref(v);
    return cli_done(c, err);
}

static int cmd_versions(int argc, char **argv, const cli_globals *g)
{
    char path[200];
    cli *c = NULL;
    json_t *set = NULL, *j = NULL;
    int err;

    if (argc != 2 || argv[1][0] == '-')
        return usage();
    if ((err = cli_open(&c, g->url, true)) < 0 || (err = resolve(&set, c, argv[1])) < 0)
        goto out;
    snprintf(path, sizeof(path), "/api/v1/datasets/%s/versions", id_of(set));
    if ((err = cli_call_json(&j, c, "GET", path, NULL, 0)) < 0)
        goto out;
    if (g->json)
        cli_print_json(j);
    else
        cli_print_table(json_object_get(j, "items"), version_cols, sizeof(version_cols) / sizeof(version_cols[0]));
out:
    json_decref(set);
    json_decref(j);
    return cli_done(c, err);
}

static int cmd_rm(int argc, char **argv, const cli_globals *g)
{
    const char *ref = NULL;
    int64_t version = 0;
    char path[200], label[200];
    cli *c = NULL;
    json_t *set = NULL, *j = NULL;
    int err;

    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--version") == 0 && i + 1 < argc) {
            if ((err = cli_parse_int(&version, argv[++i], 1, INT64_MAX, "--version")) < 0)
                return cli_report(err);
        } else if (argv[i][0] == '-' || ref) {
            return usage();
        } else {
            ref = argv[i];
        }
    }
    if (ref == NULL)
        return usage();
    if ((err = cli_open(&c, g->url, true)) < 0 || (err = resolve(&set, c, ref)) < 0)
        goto out;
    label_of(label, sizeof(label), set);
    if (version > 0)
        snprintf(path, sizeof(path), "/api/v1/datasets/%s/versions/%lld", id_of(set), (long long)version);
    else
        snprintf(path, sizeof(path), "/api/v1/datasets/%s", id_of(set));
    if ((err = cli_call_json(&j, c, "DELETE", path, NULL, 0)) < 0)
        goto out;
    if (version > 0)
        printf("Deleted version %lld of %s.\n", (long long)version, label);
    else
        printf("Deleted dataset %s.\n", label);
out:
    json_decref(set);
    json_decref(j);
    return cli_done(c, err);
}

/* ---- from a job or a project --------------------------------------------------------- */

static int cmd_from(int argc, char **argv, const cli_globals *g, bool job)
{
    const char *src = NULL, *ref = NULL, *create = NULL, *paths = NULL, *to = NULL, *message = NULL;
    char path[200], label[200], pid[64];
    int64_t job_id = 0;
    cli *c = NULL;
    json_t *set = NULL, *body = NULL, *v = NULL, *e;
    size_t i;
    int err;

    for (int k = 1; k < argc; k++) {
        if (strcmp(argv[k], "--create") == 0 && k + 1 < argc)
            create = argv[++k];
        else if (strcmp(argv[k], "--paths") == 0 && k + 1 < argc)
            paths = argv[++k];
        else if (strcmp(argv[k], "--to") == 0 && k + 1 < argc)
            to = argv[++k];
        else if ((strcmp(argv[k], "-m") == 0 || strcmp(argv[k], "--message") == 0) && k + 1 < argc)
            message = argv[++k];
        else if (argv[k][0] == '-')
            return usage();
        else if (src == NULL)
            src = argv[k];
        else if (ref == NULL)
            ref = argv[k];
        else
            return usage();
    }
    if (src == NULL || ref == NULL)
        return usage();
    if (message == NULL || message[0] == '\0')
        return cli_report(ed_error_set(CLI_EUSAGE, "-m MESSAGE is needed: say what this version holds"));
    if (job && (err = cli_parse_int(&job_id, src, 1, INT64_MAX, "JOB_ID")) < 0)
        return cli_report(err);
    if (create && !is_word(ref, 64))
        return cli_report(ed_error_set(CLI_EUSAGE, "with --create, DATASET is the new dataset's slug: "
                                                   "1 to 64 of A-Z a-z 0-9 . _ -, not '%.80s'", ref));
    if ((body = json_pack("{s:s}", "message", message)) == NULL)
        return cli_report(ed_error_set(ED_ENOMEM, "request"));
    if (paths) {
        json_t *a = json_array();
        char *copy = strdup(paths), *save = NULL;
        for (char *t = copy ? strtok_r(copy, ",", &save) : NULL; t; t = strtok_r(NULL, ",", &save))
            if (*t)
                json_array_append_new(a, json_string(t));
        free(copy);
        json_object_set_new(body, "paths", a);
    }
    if (to)
        json_object_set_new(body, "dest_dir", json_string(to));
    if ((err = cli_open(&c, g->url, true)) < 0)
        goto out;
    if (job)
        json_object_set_new(body, "job_id", json_integer(job_id));
    else {
        if ((err = cli_project_resolve(pid, sizeof(pid), c, src)) < 0)
            goto out;
        json_object_set_new(body, "project_id", json_string(pid));
    }
    if (create) {
        json_t *cb = json_pack("{s:s, s:s, s:s}", "name", create, "slug", ref, "visibility", "private");
        err = cb ? cli_call_json(&set, c, "POST", "/api/v1/datasets", cb, 0) : ed_error_set(ED_ENOMEM, "create");
        json_decref(cb);
        if (err < 0)
            goto out;
    } else if ((err = resolve(&set, c, ref)) < 0) {
        goto out;
    }
    label_of(label, sizeof(label), set);
    snprintf(path, sizeof(path), "/api/v1/datasets/%s/versions/from", id_of(set));
    if ((err = cli_call_json(&v, c, "POST", path, body, 0)) < 0) {
        if (create)
            fprintf(stderr, "eddy: dataset %s was created (%s) but has no version yet\n", label, id_of(set));
        goto out;
    }
    if (g->json) {
        cli_print_json(v);
        goto out;
    }
    if (create)
        printf("Created dataset %s (%s).\n", label, id_of(set));
    print_version_line(v, label);
    json_array_foreach(json_object_get(v, "skipped"), i, e)
        fprintf(stderr, "eddy: skipped %s: %s\n", json_string_value(json_object_get(e, "path")) ?: "?",
                json_string_value(json_object_get(e, "reason")) ?: "?");
out:
    json_decref(set);
    json_decref(body);
    json_decref(v);
    return cli_done(c, err);
}

/* ---- attach, detach ---------------------------------------------------------------- */

/* Read-modify-write of the project's list: `set` NULL removes `id`, else
 * adds or replaces it with `version` (0: latest). */
static int attach_change(cli *c, const cli_globals *g, const char *project, const char *id, const char *label,
                         bool add, int64_t version)
{
    char pid[64], path[200];
    json_t *cur = NULL, *items = NULL, *out = NULL, *e, *body;
    bool found = false;
    size_t i;
    int err;

    if ((err = cli_project_resolve(pid, sizeof(pid), c, project)) < 0)
        return err;
    snprintf(path, sizeof(path), "/api/v1/projects/%s/datasets", pid);
    if ((err = cli_call_json(&cur, c, "GET", path, NULL, 0)) < 0)
        return err;
    if ((items = json_array()) == NULL) {
        json_decref(cur);
        return ed_error_set(ED_ENOMEM, "attachments");
    }
    json_array_foreach(json_object_get(cur, "items"), i, e) {
        const char *did = json_string_value(json_object_get(e, "dataset_id"));
        json_t *ver = json_object_get(e, "version");
        if (did == NULL)
            continue;
        if (strcmp(did, id) == 0) {
            found = true;
            if (!add)
                continue;
            ver = NULL;
        }
        ver = ver ? json_incref(ver) : version > 0 ? json_integer(version) : json_string("latest");
        json_array_append_new(items, json_pack("{s:s, s:o}", "dataset_id", did, "version", ver));
    }
    json_decref(cur);
    if (!add && !found) {
        json_decref(items);
        return ed_error_set(ED_ENOTFOUND, "not_found: project %s does not mount %s", project, label);
    }
    if (add && !found)
        json_array_append_new(items, json_pack("{s:s, s:o}", "dataset_id", id, "version",
                                               version > 0 ? json_integer(version) : json_string("latest")));
    body = json_pack("{s:o}", "items", items);
    err = body ? cli_call_json(&out, c, "PUT", path, body, 0) : ed_error_set(ED_ENOMEM, "attachments");
    json_decref(body);
    if (err == 0) {
        if (g->json)
            cli_print_json(out);
        else {
            printf("%s %s %s project %s.\n", add ? "Attached" : "Detached", label, add ? "to" : "from", project);
            cli_print_table(json_object_get(out, "items"), attach_cols, sizeof(attach_cols) / sizeof(attach_cols[0]));
        }
    }
    json_decref(out);
    return err;
}

static int cmd_attach(int argc, char **argv, const cli_globals *g, bool add)
{
    char ref[300], label[200];
    int64_t version;
    bool given;
    cli *c = NULL;
    json_t *set = NULL;
    int err;

    if (argc != 3 || argv[1][0] == '-' || argv[2][0] == '-')
        return usage();
    if ((err = split_version(ref, sizeof(ref), &version, &given, argv[2])) < 0)
        return cli_report(err);
    if (!add && given)
        return cli_report(ed_error_set(CLI_EUSAGE, "detach takes DATASET without a version"));
    if ((err = cli_open(&c, g->url, true)) < 0 || (err = resolve(&set, c, ref)) < 0)
        goto out;
    label_of(label, sizeof(label), set);
    err = attach_change(c, g, argv[1], id_of(set), label, add, version);
out:
    json_decref(set);
    return cli_done(c, err);
}

int cmd_client_datasets(int argc, char **argv, const cli_globals *g)
{
    const char *sub = argc > 1 ? argv[1] : NULL;

    if (sub == NULL || strcmp(sub, "-h") == 0 || strcmp(sub, "--help") == 0 || strcmp(sub, "help") == 0) {
        usage();
        return sub ? CLI_EXIT_OK : CLI_EXIT_USAGE;
    }
    argc--;
    argv++;
    if (strcmp(sub, "create") == 0)
        return cmd_create(argc, argv, g);
    if (strcmp(sub, "ls") == 0 || strcmp(sub, "list") == 0)
        return cmd_ls(argc, argv, g);
    if (strcmp(sub, "show") == 0)
        return cmd_show(argc, argv, g);
    if (strcmp(sub, "versions") == 0)
        return cmd_versions(argc, argv, g);
    if (strcmp(sub, "upload") == 0)
        return cmd_upload(argc, argv, g);
    if (strcmp(sub, "download") == 0)
        return cmd_download(argc, argv, g);
    if (strcmp(sub, "from-job") == 0)
        return cmd_from(argc, argv, g, true);
    if (strcmp(sub, "from-project") == 0)
        return cmd_from(argc, argv, g, false);
    if (strcmp(sub, "attach") == 0)
        return cmd_attach(argc, argv, g, true);
    if (strcmp(sub, "detach") == 0)
        return cmd_attach(argc, argv, g, false);
    if (strcmp(sub, "rm") == 0 || strcmp(sub, "delete") == 0)
        return cmd_rm(argc, argv, g);
    fprintf(stderr, "eddy: unknown datasets command '%s'\n", sub);
    return usage();
}
