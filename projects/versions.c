/* Versions: commits of the working tree, listing, restore. Files above the
 * large-file threshold and files matched by the tree's .eddyignore stay out
 * of the commit; its manifest (path, size, sha256 of each) travels in the
 * commit object itself, in an extra header "eddy-large-files" (README). */
#include "proj_int.h"

#include "ed_error.h"
#include "ed_fs.h"
#include "ed_log.h"
#include "ed_time.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#define MANIFEST_HEADER "eddy-large-files"
#define IGNORE_FILE     ".eddyignore"
#define IGNORE_FILE_MAX (1 << 20)
#define WALK_DEPTH      64

void proj_root_set_large_file_bytes(proj_root *r, int64_t bytes)
{
    r->large_file_bytes = bytes > 0 ? bytes : 0;
}

static int64_t large_threshold(const proj_root *r)
{
    return r->large_file_bytes > 0 ? r->large_file_bytes : PROJ_LARGE_FILE_DEFAULT;
}

static void large_files_free(proj_large_file *l, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(l[i].path);
    free(l);
}

void proj_version_free(proj_version *v)
{
    if (v == NULL)
        return;
    for (size_t i = 0; i < v->nfiles; i++)
        free(v->files[i]);
    free(v->files);
    large_files_free(v->large_files, v->nlarge);
    free(v->message);
    free(v->author);
    free(v);
}

void proj_version_page_free(proj_version_page *l)
{
    if (l == NULL)
        return;
    for (size_t i = 0; i < l->count; i++)
        proj_version_free(l->items[i]);
    free(l->items);
    free(l->next_cursor);
    free(l);
}

typedef struct file_acc {
    proj_version *v;
    size_t        cap;
    int           err;
} file_acc;

static int collect_file(const char *root, const git_tree_entry *e, void *payload)
{
    file_acc *a = payload;
    size_t n;
    char *path;

    if (git_tree_entry_type(e) != GIT_OBJECT_BLOB)
        return 0;
    if (a->v->nfiles == a->cap) {
        size_t cap = a->cap ? a->cap * 2 : 16;
        char **files = realloc(a->v->files, cap * sizeof(*files));
        if (files == NULL)
            goto oom;
        a->v->files = files;
        a->cap = cap;
    }
    n = strlen(root) + strlen(git_tree_entry_name(e)) + 1;
    if ((path = malloc(n)) == NULL)
        goto oom;
    snprintf(path, n, "%s%s", root, git_tree_entry_name(e));
    a->v->files[a->v->nfiles++] = path;
    return 0;
oom:
    a->err = ed_error_set(ED_ENOMEM, "version file list");
    return -1;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The manifest of commit `c` (its "eddy-large-files" header, a JSON array of
 * {path, size, sha256, reason}) into v->large_files. None: 0 entries. */
static int manifest_of(proj_version *v, git_commit *c)
{
    git_buf buf = {0};
    json_t *doc = NULL;
    json_error_t je;
    int rc, err = 0;

    rc = git_commit_header_field(&buf, c, MANIFEST_HEADER);
    if (rc == GIT_ENOTFOUND)
        return 0;
    if (rc < 0)
        return proj__git_error("read version manifest");
    doc = json_loadb(buf.ptr, buf.size, 0, &je);
    git_buf_dispose(&buf);
    if (!json_is_array(doc)) {
        /* not ours to fail a listing over: say so in the log */
        ed_log_warn("projects.manifest", "version %.12s: unreadable manifest", v->id);
        json_decref(doc);
        return 0;
    }
    if (json_array_size(doc) &&
        (v->large_files = calloc(json_array_size(doc), sizeof(*v->large_files))) == NULL) {
        json_decref(doc);
        return ed_error_set(ED_ENOMEM, "version manifest");
    }
    for (size_t i = 0; i < json_array_size(doc); i++) {
        json_t *e = json_array_get(doc, i);
        const char *path = json_string_value(json_object_get(e, "path"));
        const char *sha = json_string_value(json_object_get(e, "sha256"));
        const char *reason = json_string_value(json_object_get(e, "reason"));
        proj_large_file *lf = &v->large_files[v->nlarge];
        if (path == NULL || sha == NULL || strlen(sha) != PROJ_ETAG_LEN)
            continue;
        if ((lf->path = strdup(path)) == NULL) {
            err = ed_error_set(ED_ENOMEM, "version manifest");
            break;
        }
        lf->size = (int64_t)json_integer_value(json_object_get(e, "size"));
        memcpy(lf->sha256, sha, PROJ_ETAG_LEN + 1);
        lf->ignored = reason && strcmp(reason, "eddyignore") == 0;
        v->nlarge++;
    }
    json_decref(doc);
    return err;
}

/* A proj_version for commit `c`, with the paths of its tree and its manifest. */
static int version_of(proj_version **out, git_commit *c)
{
    proj_version *v = calloc(1, sizeof(*v));
    const git_signature *author = git_commit_author(c);
    git_tree *tree = NULL;
    file_acc acc = {0};
    int err = 0;

    *out = NULL;
    if (v == NULL)
        return ed_error_set(ED_ENOMEM, "version");
    git_oid_tostr(v->id, sizeof(v->id), git_commit_id(c));
    v->message = strdup(git_commit_message(c) ? git_commit_message(c) : "");
    v->author = strdup(author && author->name ? author->name : "");
    v->created_at = (int64_t)git_commit_time(c) * 1000;
    if (v->message == NULL || v->author == NULL) {
        err = ed_error_set(ED_ENOMEM, "version");
        goto fail;
    }
    if (git_commit_tree(&tree, c) < 0) {
        err = proj__git_error("read version tree");
        goto fail;
    }
    acc.v = v;
    if (git_tree_walk(tree, GIT_TREEWALK_PRE, collect_file, &acc) < 0) {
        err = acc.err ? acc.err : proj__git_error("walk version tree");
        goto fail;
    }
    if (v->nfiles)
        qsort(v->files, v->nfiles, sizeof(*v->files), cmp_str);
    if ((err = manifest_of(v, c)) < 0)
        goto fail;
    git_tree_free(tree);
    *out = v;
    return 0;
fail:
    git_tree_free(tree);
    proj_version_free(v);
    return err;
}

/* ---- staging: which files a version holds ---------------------------------- */

typedef enum { KEEP_IN = 0, OUT_LARGE, OUT_IGNORED, OUT_UNREACHABLE } keep_kind;

typedef struct out_path {
    char     *path;
    keep_kind kind;
} out_path;

/* What one staging of the working tree found. */
typedef struct stage {
    int           base;        /* the project directory */
    int64_t       threshold;
    proj__ignore *ig;          /* the tree's .eddyignore, NULL if none */
    out_path     *out;         /* kept out of the index (may repeat) */
    size_t        nout, cap;
    int           err;
} stage;

static void stage_free(stage *s)
{
    for (size_t i = 0; i < s->nout; i++)
        free(s->out[i].path);
    free(s->out);
    proj__ignore_free(s->ig);
    memset(s, 0, sizeof(*s));
    s->base = -1;
}

/* Read the tree's .eddyignore (a link or non-file is no rules). */
static int load_ignore(stage *s)
{
    char *buf = NULL;
    size_t len = 0;
    int err = ed_fs_read_beneath(&buf, &len, s->base, IGNORE_FILE, IGNORE_FILE_MAX);

    if (err == ED_ENOTFOUND)
        return 0;
    if (err == ED_ETOOBIG) {
        ed_log_warn("projects.eddyignore", ".eddyignore over %d bytes is not read",
                    IGNORE_FILE_MAX);
        return 0;
    }
    if (err < 0)
        return err;
    err = proj__ignore_parse(&s->ig, buf, len);
    free(buf);
    return err;
}

/* Where `path` of the working tree belongs. A file reached only through a
 * link (or not a regular file) is never read into a version. */
static keep_kind classify(stage *s, const char *path, int64_t *out_size)
{
    struct stat sb;
    int fd;

    bool rules = strcmp(path, IGNORE_FILE) == 0;   /* always versioned, if a file */

    *out_size = 0;
    if (!rules && proj__ignore_match(s->ig, path))
        return OUT_IGNORED;
    if (ed_fs_open_beneath(&fd, s->base, path, O_RDONLY | O_NONBLOCK, 0) < 0)
        return errno == ENOENT ? KEEP_IN /* deleted: git drops it */ : OUT_UNREACHABLE;
    if (fstat(fd, &sb) < 0 || !S_ISREG(sb.st_mode)) {
        close(fd);
        return OUT_UNREACHABLE;
    }
    close(fd);
    *out_size = sb.st_size;
    return !rules && sb.st_size > s->threshold ? OUT_LARGE : KEEP_IN;
}

static int note_out(stage *s, const char *path, keep_kind kind)
{
    if (s->nout == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 16;
        out_path *o = realloc(s->out, cap * sizeof(*o));
        if (o == NULL)
            return s->err = ed_error_set(ED_ENOMEM, "version staging");
        s->out = o;
        s->cap = cap;
    }
    if ((s->out[s->nout].path = strdup(path)) == NULL)
        return s->err = ed_error_set(ED_ENOMEM, "version staging");
    s->out[s->nout++].kind = kind;
    return 0;
}

/* git_index_add_all / update_all callback: 0 stages the path, 1 skips it. */
static int stage_cb(const char *path, const char *matched, void *payload)
{
    stage *s = payload;
    int64_t size;
    keep_kind k = classify(s, path, &size);

    (void)matched;
    if (k == KEEP_IN)
        return 0;
    return note_out(s, path, k) < 0 ? -1 : 1;
}

static int cmp_out(const void *a, const void *b)
{
    return strcmp(((const out_path *)a)->path, ((const out_path *)b)->path);
}

/* "size:mtime_ns:ctime_ns:ino" of a file: when it is unchanged, the hash of
 * the newest version's manifest is reused instead of reading the file again
 * (ctime cannot be set back by a user, so a rewrite always changes it). */
static void stat_key(char out[96], const struct stat *sb)
{
    snprintf(out, 96, "%lld:%lld.%09ld:%lld.%09ld:%llu", (long long)sb->st_size,
             (long long)sb->st_mtim.tv_sec, (long)sb->st_mtim.tv_nsec,
             (long long)sb->st_ctim.tv_sec, (long)sb->st_ctim.tv_nsec,
             (unsigned long long)sb->st_ino);
}

/* HEAD's manifest as {path: entry}, or NULL (no HEAD, none, unreadable). */
static json_t *head_manifest(git_repository *repo)
{
    git_oid oid;
    git_commit *c = NULL;
    git_buf buf = {0};
    json_t *arr, *by_path = NULL;

    if (git_reference_name_to_id(&oid, repo, "HEAD") < 0 || git_commit_lookup(&c, repo, &oid) < 0)
        return NULL;
    if (git_commit_header_field(&buf, c, MANIFEST_HEADER) == 0 &&
        (arr = json_loadb(buf.ptr, buf.size, 0, NULL)) != NULL) {
        if (json_is_array(arr) && (by_path = json_object()) != NULL)
            for (size_t i = 0; i < json_array_size(arr); i++) {
                json_t *e = json_array_get(arr, i);
                const char *path = json_string_value(json_object_get(e, "path"));
                if (path)
                    json_object_set(by_path, path, e);
            }
        json_decref(arr);
    }
    git_buf_dispose(&buf);
    git_commit_free(c);
    return by_path;
}

/* The manifest of what `s` kept out, as compact JSON (malloc'd) or NULL when
 * nothing large or ignored was found. Hashes each file (beneath the tree,
 * no link followed) unless `prev` (HEAD's, may be NULL) has it unchanged. */
static int manifest_json(char **out, stage *s, const json_t *prev)
{
    json_t *arr = json_array();
    int err = 0;

    *out = NULL;
    if (arr == NULL)
        return ed_error_set(ED_ENOMEM, "manifest");
    for (size_t i = 0; i < s->nout; i++) {
        char sha[PROJ_ETAG_LEN + 1], key[96];
        const char *old_key, *old_sha;
        json_t *e, *was;
        struct stat sb;
        int64_t size = 0;
        int fd;
        if (s->out[i].kind == OUT_UNREACHABLE ||
            (i > 0 && strcmp(s->out[i].path, s->out[i - 1].path) == 0))
            continue;
        if (ed_fs_open_beneath(&fd, s->base, s->out[i].path, O_RDONLY | O_NONBLOCK, 0) < 0)
            continue;   /* gone meanwhile */
        if (fstat(fd, &sb) < 0) {
            close(fd);
            continue;
        }
        stat_key(key, &sb);
        was = prev ? json_object_get(prev, s->out[i].path) : NULL;
        old_key = json_string_value(json_object_get(was, "stat"));
        old_sha = json_string_value(json_object_get(was, "sha256"));
        if (old_key && old_sha && strcmp(old_key, key) == 0 && strlen(old_sha) == PROJ_ETAG_LEN) {
            memcpy(sha, old_sha, sizeof(sha));
            size = sb.st_size;
        } else {
            err = proj__sha256_fd(sha, &size, fd);
        }
        close(fd);
        if (err < 0)
            break;
        e = json_pack("{s:s, s:I, s:s, s:s, s:s}", "path", s->out[i].path, "size",
                      (json_int_t)size, "sha256", sha, "reason",
                      s->out[i].kind == OUT_IGNORED ? "eddyignore" : "large", "stat", key);
        if (e == NULL) {
            /* not UTF-8: git could not name it in JSON either */
            ed_log_warn("projects.manifest", "a kept-out path is not UTF-8; not listed");
            continue;
        }
        if (json_array_append_new(arr, e) < 0) {
            err = ed_error_set(ED_ENOMEM, "manifest");
            break;
        }
    }
    if (err == 0 && json_array_size(arr) > 0 &&
        (*out = json_dumps(arr, JSON_COMPACT | JSON_ENSURE_ASCII)) == NULL)
        err = ed_error_set(ED_ENOMEM, "manifest");
    json_decref(arr);
    return err;
}

/* Stage the working tree into the index: add_all picks up new and changed
 * files (FORCE: a .gitignore in the tree must not hide files from a
 * version), update_all drops deleted ones; large, .eddyignore'd and
 * unreachable files are skipped, and removed from the index if an earlier
 * version had them. *tree_id gets the staged tree. */
static int stage_worktree(git_oid *tree_id, stage *s, git_repository *repo)
{
    git_index *idx = NULL;
    int err = 0;

    if ((err = load_ignore(s)) < 0)
        return err;
    if (git_repository_index(&idx, repo) < 0)
        return proj__git_error("open index");
    if (git_index_add_all(idx, NULL, GIT_INDEX_ADD_FORCE, stage_cb, s) < 0 ||
        git_index_update_all(idx, NULL, stage_cb, s) < 0) {
        err = s->err ? s->err : proj__git_error("stage working tree");
        goto done;
    }
    /* entries an earlier version tracked that are now ignored or too big
     * (unchanged files never reached the callbacks) */
    for (size_t i = 0; i < git_index_entrycount(idx); i++) {
        const git_index_entry *e = git_index_get_byindex(idx, i);
        int64_t size;
        keep_kind k;
        if (e == NULL || strcmp(e->path, IGNORE_FILE) == 0)
            continue;
        if (proj__ignore_match(s->ig, e->path))
            k = OUT_IGNORED;
        else if ((int64_t)e->file_size > s->threshold)
            k = classify(s, e->path, &size);
        else
            continue;
        if (k != KEEP_IN && note_out(s, e->path, k) < 0) {
            err = s->err;
            goto done;
        }
    }
    if (s->nout)
        qsort(s->out, s->nout, sizeof(*s->out), cmp_out);
    for (size_t i = 0; i < s->nout; i++) {
        int rc = git_index_remove_bypath(idx, s->out[i].path);
        if (rc < 0 && rc != GIT_ENOTFOUND) {
            err = proj__git_error("unstage a large file");
            goto done;
        }
    }
    if (git_index_write(idx) < 0 || git_index_write_tree(tree_id, idx) < 0)
        err = proj__git_error("stage working tree");
done:
    git_index_free(idx);
    return err;
}

/* Point HEAD's branch (or a detached HEAD) at `oid`. */
static int move_head(git_repository *repo, const git_oid *oid, const char *message)
{
    git_reference *head = NULL, *moved = NULL;
    int err = 0;

    if (git_reference_lookup(&head, repo, "HEAD") < 0)
        return proj__git_error("read HEAD");
    if (git_reference_type(head) == GIT_REFERENCE_SYMBOLIC) {
        if (git_reference_create(&moved, repo, git_reference_symbolic_target(head), oid, 1,
                                 message) < 0)
            err = proj__git_error("move branch");
    } else if (git_reference_set_target(&moved, head, oid, message) < 0) {
        err = proj__git_error("move HEAD");
    }
    git_reference_free(moved);
    git_reference_free(head);
    return err;
}

/* Commit the staged tree `tree_id` on top of HEAD (if any) as `username`,
 * with `manifest` (may be NULL) in the commit's eddy-large-files header. */
static int commit_tree(git_commit **out, git_repository *repo, const git_oid *tree_id,
                       const char *username, const char *message, const char *manifest)
{
    git_tree *tree = NULL;
    git_commit *parent = NULL;
    git_signature *sig = NULL;
    git_buf buf = {0};
    git_oid head_id, commit_id;
    char email[300];
    int rc, err = 0;

    *out = NULL;
    if (git_tree_lookup(&tree, repo, tree_id) < 0) {
        err = proj__git_error("stage working tree");
        goto done;
    }
    rc = git_reference_name_to_id(&head_id, repo, "HEAD");
    if (rc == 0) {
        if (git_commit_lookup(&parent, repo, &head_id) < 0) {
            err = proj__git_error("read newest version");
            goto done;
        }
    } else if (rc != GIT_ENOTFOUND && rc != GIT_EUNBORNBRANCH) {
        err = proj__git_error("read HEAD");
        goto done;
    }
    snprintf(email, sizeof(email), "%s@users.eddy", username);
    if (git_signature_now(&sig, username, email) < 0) {
        err = proj__git_error("author signature");
        goto done;
    }
    if (manifest == NULL) {
        if (git_commit_create(&commit_id, repo, "HEAD", sig, sig, NULL, message, tree,
                              parent ? 1 : 0, (const git_commit **)&parent) < 0) {
            err = proj__git_error("create version");
            goto done;
        }
    } else {
        /* the manifest is an extra header of the commit object: hashed
         * with it, copied by forks, invisible in messages and trees */
        if (git_commit_create_buffer(&buf, repo, sig, sig, NULL, message, tree, parent ? 1 : 0,
                                     (const git_commit **)&parent) < 0 ||
            git_commit_create_with_signature(&commit_id, repo, buf.ptr, manifest,
                                             MANIFEST_HEADER) < 0) {
            err = proj__git_error("create version");
            goto done;
        }
        if ((err = move_head(repo, &commit_id, "commit: eddy version")) < 0)
            goto done;
    }
    if (git_commit_lookup(out, repo, &commit_id) < 0)
        err = proj__git_error("create version");
done:
    git_buf_dispose(&buf);
    git_signature_free(sig);
    git_commit_free(parent);
    git_tree_free(tree);
    return err;
}

/* Stage and commit the whole working tree beneath `base`. `s` keeps what
 * staging found (the caller frees it). */
static int commit_worktree(git_commit **out, stage *s, git_repository *repo,
                           const char *username, const char *message)
{
    git_oid tree_id;
    char *manifest = NULL;
    json_t *prev = NULL;
    int err;

    if ((err = stage_worktree(&tree_id, s, repo)) < 0)
        return err;
    prev = head_manifest(repo);
    err = manifest_json(&manifest, s, prev);
    json_decref(prev);
    if (err < 0)
        return err;
    err = commit_tree(out, repo, &tree_id, username, message, manifest);
    free(manifest);
    return err;
}

static int check_message(const char *message)
{
    size_t n = message ? strlen(message) : 0;

    if (n == 0)
        return ed_error_set(ED_EINVAL, "message must not be empty");
    if (n > PROJ_MESSAGE_MAX)
        return ed_error_set(ED_EINVAL, "message is longer than %d bytes", PROJ_MESSAGE_MAX);
    return 0;
}

int proj_version_create(proj_version **out, proj_root *r, int64_t user_id, const char *id,
                        const char *message)
{
    proj *p = NULL;
    git_repository *repo = NULL;
    git_commit *c = NULL;
    stage s = {.base = -1};
    char *username = NULL;
    int err;

    *out = NULL;
    if ((err = check_message(message)) < 0)
        return err;
    s.threshold = large_threshold(r);
    proj__lock(r, id);
    if ((err = proj__load(&p, r, user_id, id, PROJ__WRITE)) < 0 ||
        (err = proj__username(&username, r, user_id)) < 0 ||
        (err = proj__open_dir(&s.base, r, id)) < 0 ||
        (err = proj__repo_open(&repo, r, id)) < 0 ||
        (err = commit_worktree(&c, &s, repo, username, message)) < 0 ||
        (err = version_of(out, c)) < 0)
        goto done;
    proj__touch(r, id);
    ed_log_info("projects.version", "project %s: version %.12s (%zu files kept out)", id,
                (*out)->id, (*out)->nlarge);
done:
    if (s.base >= 0)
        close(s.base);
    stage_free(&s);
    git_commit_free(c);
    git_repository_free(repo);
    free(username);
    proj__unlock(r, id);
    proj_free(p);
    return err;
}

int proj_version_list(proj_version_page **out, proj_root *r, int64_t user_id, const char *id,
                      int limit, const char *cursor)
{
    proj *p = NULL;
    proj_version_page *l = NULL;
    git_repository *repo = NULL;
    git_revwalk *walk = NULL;
    git_oid oid, after;
    bool skipping = false;
    int err, rc;

    *out = NULL;
    if (limit < 1 || limit > PROJ_LIST_MAX)
        return ed_error_set(ED_EINVAL, "limit must be 1 to %d", PROJ_LIST_MAX);
    if (cursor && cursor[0]) {
        if (strlen(cursor) != GIT_OID_HEXSZ || git_oid_fromstr(&after, cursor) < 0)
            return ed_error_set(ED_EINVAL, "malformed cursor");
        skipping = true;
    }
    if ((l = calloc(1, sizeof(*l))) == NULL ||
        (l->items = calloc((size_t)limit, sizeof(*l->items))) == NULL) {
        free(l);
        return ed_error_set(ED_ENOMEM, "version list");
    }
    proj__lock(r, id);
    if ((err = proj__load(&p, r, user_id, id, PROJ__READ)) < 0 ||
        (err = proj__repo_open(&repo, r, id)) < 0)
        goto done;
    if (git_revwalk_new(&walk, repo) < 0 ||
        git_revwalk_sorting(walk, GIT_SORT_TOPOLOGICAL | GIT_SORT_TIME) < 0) {
        err = proj__git_error("list versions");
        goto done;
    }
    /* push_head reports an unborn branch as a generic error: ask first */
    rc = git_reference_name_to_id(&oid, repo, "HEAD");
    if (rc == GIT_ENOTFOUND || rc == GIT_EUNBORNBRANCH)
        goto done;   /* no versions yet */
    if (rc < 0 || git_revwalk_push(walk, &oid) < 0) {
        err = proj__git_error("list versions");
        goto done;
    }
    while ((rc = git_revwalk_next(&oid, walk)) == 0) {
        git_commit *c = NULL;
        if (skipping) {
            skipping = !git_oid_equal(&oid, &after);
            continue;
        }
        if (l->count == (size_t)limit) {   /* one more exists */
            if ((l->next_cursor = strdup(l->items[l->count - 1]->id)) == NULL)
                err = ed_error_set(ED_ENOMEM, "cursor");
            break;
        }
        if (git_commit_lookup(&c, repo, &oid) < 0) {
            err = proj__git_error("read version");
            break;
        }
        err = version_of(&l->items[l->count], c);
        git_commit_free(c);
        if (err < 0)
            break;
        l->count++;
    }
    if (err == 0 && rc < 0 && rc != GIT_ITEROVER)
        err = proj__git_error("list versions");
done:
    git_revwalk_free(walk);
    git_repository_free(repo);
    proj__unlock(r, id);
    proj_free(p);
    if (err < 0)
        proj_version_page_free(l);
    else
        *out = l;
    return err;
}

int proj_version_get(proj_version **out, proj_root *r, int64_t user_id, const char *id,
                     const char *version)
{
    proj *p = NULL;
    git_repository *repo = NULL;
    git_commit *c = NULL;
    int err;

    *out = NULL;
    proj__lock(r, id);
    if ((err = proj__load(&p, r, user_id, id, PROJ__READ)) == 0 &&
        (err = proj__repo_open(&repo, r, id)) == 0 &&
        (err = proj__commit_lookup(&c, repo, version)) == 0)
        err = version_of(out, c);
    git_commit_free(c);
    git_repository_free(repo);
    proj__unlock(r, id);
    proj_free(p);
    return err;
}

/* ---- restore ------------------------------------------------------------------ */

/* A file of the version being restored. */
typedef struct target_file {
    char        *path;
    git_oid      blob;
    bool         exec;
} target_file;

typedef struct target {
    target_file *items;
    size_t       count, cap;
    int          err;
} target;

static void target_free(target *t)
{
    for (size_t i = 0; i < t->count; i++)
        free(t->items[i].path);
    free(t->items);
}

static int collect_target(const char *root, const git_tree_entry *e, void *payload)
{
    target *t = payload;
    size_t n;

    if (git_tree_entry_type(e) != GIT_OBJECT_BLOB)
        return 0;
    if (t->count == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 32;
        target_file *it = realloc(t->items, cap * sizeof(*it));
        if (it == NULL)
            goto oom;
        t->items = it;
        t->cap = cap;
    }
    n = strlen(root) + strlen(git_tree_entry_name(e)) + 1;
    if ((t->items[t->count].path = malloc(n)) == NULL)
        goto oom;
    snprintf(t->items[t->count].path, n, "%s%s", root, git_tree_entry_name(e));
    git_oid_cpy(&t->items[t->count].blob, git_tree_entry_id(e));
    t->items[t->count].exec = git_tree_entry_filemode(e) == GIT_FILEMODE_BLOB_EXECUTABLE;
    t->count++;
    return 0;
oom:
    t->err = ed_error_set(ED_ENOMEM, "restore file list");
    return -1;
}

static int cmp_target(const void *a, const void *b)
{
    return strcmp(((const target_file *)a)->path, ((const target_file *)b)->path);
}

static bool target_has(const target *t, const char *path)
{
    target_file key = {.path = (char *)path};

    return t->count && bsearch(&key, t->items, t->count, sizeof(key), cmp_target) != NULL;
}

/* Would writing `path` run into the tree as it is (a parent that is not a
 * directory, or a directory where the file goes)? ED_ECONFLICT naming it. */
static int check_obstacle(int base, const char *path)
{
    char buf[PROJ_PATH_MAX + 1];
    struct stat sb;

    snprintf(buf, sizeof(buf), "%s", path);
    for (char *slash = strchr(buf, '/');; slash = strchr(slash + 1, '/')) {
        if (slash)
            *slash = '\0';
        /* every shorter prefix was checked to be a real directory */
        if (fstatat(base, buf, &sb, AT_SYMLINK_NOFOLLOW) < 0)
            return 0;   /* missing: it will be made */
        if (slash == NULL)
            return S_ISDIR(sb.st_mode)
                       ? ed_error_set(ED_ECONFLICT,
                                      "restore needs to write the file %s but a directory is "
                                      "there; move it away first",
                                      path)
                       : 0;
        if (!S_ISDIR(sb.st_mode))
            return ed_error_set(ED_ECONFLICT,
                                "restore needs the directory %s but a file or link is there; "
                                "move it away first",
                                buf);
        *slash = '/';
    }
}

/* Is `path` in the tree already exactly `len` bytes equal to `buf`? */
static bool same_content(int base, const char *path, const void *buf, size_t len)
{
    char *cur = NULL;
    size_t n = 0;
    bool same;

    if (ed_fs_read_beneath(&cur, &n, base, path, len + 1) < 0)
        return false;
    same = n == len && memcmp(cur, buf, len) == 0;
    free(cur);
    return same;
}

/* Write every file of the version over the tree (unchanged ones untouched). */
static int write_target(git_repository *repo, int base, const target *t)
{
    for (size_t i = 0; i < t->count; i++) {
        git_blob *blob = NULL;
        const void *buf;
        size_t len;
        int err = 0;
        if (git_blob_lookup(&blob, repo, &t->items[i].blob) < 0)
            return proj__git_error("read a file of the version");
        buf = git_blob_rawcontent(blob);
        len = (size_t)git_blob_rawsize(blob);
        if (!same_content(base, t->items[i].path, buf, len))
            err = proj__put(base, t->items[i].path, buf, len, t->items[i].exec);
        git_blob_free(blob);
        if (err < 0)
            return err;
    }
    return 0;
}

typedef struct extra {
    const target *t;
    stage        *s;
    char        **paths;    /* working-tree files exact mode removes */
    size_t        count, cap;
} extra;

/* ed_fs_walk callback: collect files the version lacks that a version
 * would hold (what the autosave captured). */
static int collect_extra(const char *rel, const struct stat *sb, void *payload)
{
    extra *x = payload;
    const char *name = strrchr(rel, '/') ? strrchr(rel, '/') + 1 : rel;
    int64_t size;

    if (strcasecmp(name, ".git") == 0)
        return ED_FS_WALK_SKIP;
    if (S_ISDIR(sb->st_mode) || target_has(x->t, rel))
        return 0;
    if (proj_path_validate(rel, strlen(rel)) < 0)
        return 0;   /* not a name the API could have made; leave it */
    if (classify(x->s, rel, &size) != KEEP_IN)
        return 0;   /* large or ignored: no version holds it, never deleted */
    if (x->count == x->cap) {
        size_t cap = x->cap ? x->cap * 2 : 32;
        char **p = realloc(x->paths, cap * sizeof(*p));
        if (p == NULL)
            return ed_error_set(ED_ENOMEM, "restore");
        x->paths = p;
        x->cap = cap;
    }
    if ((x->paths[x->count] = strdup(rel)) == NULL)
        return ed_error_set(ED_ENOMEM, "restore");
    x->count++;
    return 0;
}

int proj_restore_mode_parse(proj_restore_mode *out, const char *s)
{
    if (s == NULL || strcmp(s, "keep_untracked") == 0)
        *out = PROJ_RESTORE_KEEP_UNTRACKED;
    else if (strcmp(s, "exact") == 0)
        *out = PROJ_RESTORE_EXACT;
    else
        return ed_error_set(ED_EINVAL, "mode must be \"keep_untracked\" or \"exact\"");
    return 0;
}

int proj_version_restore(proj_version **out_restored, proj_version **out_autosave,
                         proj_root *r, int64_t user_id, const char *id, const char *version,
                         proj_restore_mode mode)
{
    proj *p = NULL;
    git_repository *repo = NULL;
    git_commit *target_c = NULL, *autosave = NULL, *head = NULL;
    git_tree *ttree = NULL;
    target t = {0};
    extra x = {0};
    stage s = {.base = -1};
    git_oid staged, head_id;
    char *username = NULL;
    char message[80], short_id[8];
    bool dirty = true;
    int err;

    if (out_restored)
        *out_restored = NULL;
    if (out_autosave)
        *out_autosave = NULL;
    if (mode != PROJ_RESTORE_KEEP_UNTRACKED && mode != PROJ_RESTORE_EXACT)
        return ed_error_set(ED_EINVAL, "mode must be \"keep_untracked\" or \"exact\"");
    s.threshold = large_threshold(r);
    proj__lock(r, id);
    if ((err = proj__load(&p, r, user_id, id, PROJ__WRITE)) < 0 ||
        (err = proj__username(&username, r, user_id)) < 0 ||
        (err = proj__open_dir(&s.base, r, id)) < 0 ||
        (err = proj__repo_open(&repo, r, id)) < 0 ||
        (err = proj__commit_lookup(&target_c, repo, version)) < 0)
        goto done;
    git_oid_tostr(short_id, sizeof(short_id), git_commit_id(target_c));
    /* Autosave when the tree differs from the newest version, so nothing a
     * version can hold is lost (large and ignored files are never touched). */
    if ((err = stage_worktree(&staged, &s, repo)) < 0)
        goto done;
    if (git_reference_name_to_id(&head_id, repo, "HEAD") == 0 &&
        git_commit_lookup(&head, repo, &head_id) == 0)
        dirty = !git_oid_equal(git_commit_tree_id(head), &staged);
    if (dirty) {
        char *manifest = NULL;
        json_t *prev = head_manifest(repo);
        snprintf(message, sizeof(message), "Autosave before restoring %s", short_id);
        err = manifest_json(&manifest, &s, prev);
        json_decref(prev);
        if (err < 0)
            goto done;
        err = commit_tree(&autosave, repo, &staged, username, message, manifest);
        free(manifest);
        if (err < 0)
            goto done;
    }
    if (git_commit_tree(&ttree, target_c) < 0) {
        err = proj__git_error("read version tree");
        goto done;
    }
    if (git_tree_walk(ttree, GIT_TREEWALK_PRE, collect_target, &t) < 0) {
        err = t.err ? t.err : proj__git_error("walk version tree");
        goto done;
    }
    if (t.count)
        qsort(t.items, t.count, sizeof(*t.items), cmp_target);
    if (mode == PROJ_RESTORE_EXACT) {
        /* remove what the version lacks, except files no version holds */
        x.t = &t;
        x.s = &s;
        if ((err = ed_fs_walk(s.base, WALK_DEPTH, SIZE_MAX, collect_extra, &x)) < 0)
            goto done;
        for (size_t i = 0; i < x.count; i++)
            if ((err = proj__remove(s.base, x.paths[i])) < 0)
                goto done;
    }
    for (size_t i = 0; i < t.count; i++)
        if ((err = check_obstacle(s.base, t.items[i].path)) < 0)
            goto done;
    if ((err = write_target(repo, s.base, &t)) < 0)
        goto done;
    proj__touch(r, id);
    if (out_autosave && autosave && (err = version_of(out_autosave, autosave)) < 0)
        goto done;
    if (out_restored && (err = version_of(out_restored, target_c)) < 0) {
        if (out_autosave) {
            proj_version_free(*out_autosave);
            *out_autosave = NULL;
        }
        goto done;
    }
    ed_log_info("projects.restore", "project %s: restored %s (%s)%s", id, short_id,
                mode == PROJ_RESTORE_EXACT ? "exact" : "keep_untracked",
                autosave ? " after an autosave" : "");
done:
    for (size_t i = 0; i < x.count; i++)
        free(x.paths[i]);
    free(x.paths);
    target_free(&t);
    git_tree_free(ttree);
    if (s.base >= 0)
        close(s.base);
    stage_free(&s);
    git_commit_free(head);
    git_commit_free(autosave);
    git_commit_free(target_c);
    git_repository_free(repo);
    free(username);
    proj__unlock(r, id);
    proj_free(p);
    return err;
}
