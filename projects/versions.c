/* Versions: commits of the whole working tree, listing, restore. */
#include "proj_int.h"

#include "ed_error.h"
#include "ed_log.h"
#include "ed_time.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void proj_version_free(proj_version *v)
{
    if (v == NULL)
        return;
    for (size_t i = 0; i < v->nfiles; i++)
        free(v->files[i]);
    free(v->files);
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

/* A proj_version for commit `c`, with the paths of its tree. */
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
    git_tree_free(tree);
    *out = v;
    return 0;
fail:
    git_tree_free(tree);
    proj_version_free(v);
    return err;
}

/* Commit the whole working tree on top of HEAD (if any) as `username`. */
static int commit_worktree(git_commit **out, git_repository *repo, const char *username,
                           const char *message)
{
    git_index *idx = NULL;
    git_tree *tree = NULL;
    git_commit *parent = NULL;
    git_signature *sig = NULL;
    git_oid tree_id, head_id, commit_id;
    char email[300];
    int rc, err = 0;

    *out = NULL;
    /* add_all picks up new and changed files (FORCE: a .gitignore in the tree
     * must not hide files from a version); update_all drops deleted ones. */
    if (git_repository_index(&idx, repo) < 0 ||
        git_index_add_all(idx, NULL, GIT_INDEX_ADD_FORCE, NULL, NULL) < 0 ||
        git_index_update_all(idx, NULL, NULL, NULL) < 0 || git_index_write(idx) < 0 ||
        git_index_write_tree(&tree_id, idx) < 0 || git_tree_lookup(&tree, repo, &tree_id) < 0) {
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
    if (git_commit_create(&commit_id, repo, "HEAD", sig, sig, NULL, message, tree,
                          parent ? 1 : 0, (const git_commit **)&parent) < 0 ||
        git_commit_lookup(out, repo, &commit_id) < 0) {
        err = proj__git_error("create version");
        goto done;
    }
done:
    git_signature_free(sig);
    git_commit_free(parent);
    git_tree_free(tree);
    git_index_free(idx);
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
    char *username = NULL;
    int err;

    *out = NULL;
    if ((err = check_message(message)) < 0)
        return err;
    proj__lock(r, id);
    if ((err = proj__load(&p, r, user_id, id, PROJ__WRITE)) < 0 ||
        (err = proj__username(&username, r, user_id)) < 0 ||
        (err = proj__repo_open(&repo, r, id)) < 0 ||
        (err = commit_worktree(&c, repo, username, message)) < 0 ||
        (err = version_of(out, c)) < 0)
        goto done;
    proj__touch(r, id);
    ed_log_info("projects.version", "project %s: version %.12s", id, (*out)->id);
done:
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

/* Does the working tree differ from HEAD (changed, new or deleted files,
 * ignored ones included since versions include them)? */
static int worktree_dirty(bool *out, git_repository *repo)
{
    git_status_options so;
    git_status_list *sl = NULL;

    *out = false;
    git_status_options_init(&so, GIT_STATUS_OPTIONS_VERSION);
    so.show = GIT_STATUS_SHOW_INDEX_AND_WORKDIR;
    so.flags = GIT_STATUS_OPT_INCLUDE_UNTRACKED | GIT_STATUS_OPT_RECURSE_UNTRACKED_DIRS |
               GIT_STATUS_OPT_INCLUDE_IGNORED | GIT_STATUS_OPT_RECURSE_IGNORED_DIRS;
    if (git_status_list_new(&sl, repo, &so) < 0)
        return proj__git_error("compare working tree");
    *out = git_status_list_entrycount(sl) > 0;
    git_status_list_free(sl);
    return 0;
}

int proj_version_restore(proj_version **out_restored, proj_version **out_autosave,
                         proj_root *r, int64_t user_id, const char *id, const char *version)
{
    proj *p = NULL;
    git_repository *repo = NULL;
    git_commit *target = NULL, *autosave = NULL;
    git_checkout_options co;
    char *username = NULL;
    char message[80], short_id[8];
    bool dirty = false;
    int err;

    if (out_restored)
        *out_restored = NULL;
    if (out_autosave)
        *out_autosave = NULL;
    git_checkout_options_init(&co, GIT_CHECKOUT_OPTIONS_VERSION);
    proj__lock(r, id);
    if ((err = proj__load(&p, r, user_id, id, PROJ__WRITE)) < 0 ||
        (err = proj__username(&username, r, user_id)) < 0 ||
        (err = proj__repo_open(&repo, r, id)) < 0 ||
        (err = proj__commit_lookup(&target, repo, version)) < 0 ||
        (err = worktree_dirty(&dirty, repo)) < 0)
        goto done;
    git_oid_tostr(short_id, sizeof(short_id), git_commit_id(target));
    if (dirty) {
        snprintf(message, sizeof(message), "Autosave before restoring %s", short_id);
        if ((err = commit_worktree(&autosave, repo, username, message)) < 0)
            goto done;
    }
    /* HEAD stays; the working tree and index become the version's tree, with
     * files it does not have removed. */
    co.checkout_strategy =
        GIT_CHECKOUT_FORCE | GIT_CHECKOUT_REMOVE_UNTRACKED | GIT_CHECKOUT_REMOVE_IGNORED;
    if (git_checkout_tree(repo, (const git_object *)target, &co) < 0) {
        err = proj__git_error("restore version");
        goto done;
    }
    proj__touch(r, id);
    if (out_autosave && autosave && (err = version_of(out_autosave, autosave)) < 0)
        goto done;
    if (out_restored && (err = version_of(out_restored, target)) < 0) {
        if (out_autosave) {
            proj_version_free(*out_autosave);
            *out_autosave = NULL;
        }
        goto done;
    }
    ed_log_info("projects.restore", "project %s: restored %s%s", id, short_id,
                autosave ? " after an autosave" : "");
done:
    git_commit_free(autosave);
    git_commit_free(target);
    git_repository_free(repo);
    free(username);
    proj__unlock(r, id);
    proj_free(p);
    return err;
}
