/* Projects: rows in the store and their repositories (create, get, list,
 * update, delete, fork). */
#include "proj_int.h"
#include "proj_ws.h"

#include "acct.h"
#include "ed_crypto.h"
#include "ed_error.h"
#include "ed_log.h"
#include "ed_time.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The owner's name is accounts/'s: row_to_proj reads it with acct_user_get. */
#define PROJ_COLS                                                                              \
    "p.id, p.owner_id, p.name, p.description, p.visibility, "                                 \
    "COALESCE(p.forked_from, ''), p.size_bytes, p.created_at, p.updated_at "                  \
    "FROM projects p "

void proj_free(proj *p)
{
    if (p == NULL)
        return;
    free(p->owner);
    free(p->name);
    free(p->description);
    free(p);
}

void proj_page_free(proj_page *pg)
{
    if (pg == NULL)
        return;
    for (size_t i = 0; i < pg->count; i++)
        proj_free(pg->items[i]);
    free(pg->items);
    free(pg->next_cursor);
    free(pg);
}

/* Ids are "p" + 12 base62 characters; anything else cannot exist. */
static bool id_ok(const char *id)
{
    if (id == NULL || strlen(id) != PROJ_ID_LEN || id[0] != 'p')
        return false;
    for (int i = 1; i < PROJ_ID_LEN; i++) {
        char c = id[i];
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')))
            return false;
    }
    return true;
}

static char *dup_col(sqlite3_stmt *s, int col)
{
    const char *t = (const char *)sqlite3_column_text(s, col);
    return strdup(t ? t : "");
}

/* A project row (PROJ_COLS) with its owner's name ("" when the owner is
 * gone). */
static int row_to_proj(proj **out, proj_root *r, sqlite3_stmt *s)
{
    proj *p = calloc(1, sizeof(*p));
    const char *vis;
    acct_user u;
    int err;

    *out = NULL;
    if (p == NULL)
        return ed_error_set(ED_ENOMEM, "project");
    snprintf(p->id, sizeof(p->id), "%s", (const char *)sqlite3_column_text(s, 0));
    p->owner_id = sqlite3_column_int64(s, 1);
    p->name = dup_col(s, 2);
    p->description = dup_col(s, 3);
    vis = (const char *)sqlite3_column_text(s, 4);
    p->visibility = vis && strcmp(vis, "public") == 0 ? PROJ_PUBLIC : PROJ_PRIVATE;
    snprintf(p->forked_from, sizeof(p->forked_from), "%s", (const char *)sqlite3_column_text(s, 5));
    p->size_bytes = sqlite3_column_int64(s, 6);
    p->created_at = sqlite3_column_int64(s, 7);
    p->updated_at = sqlite3_column_int64(s, 8);
    if ((err = acct_user_get(&u, r->store, p->owner_id)) < 0 && err != ED_ENOTFOUND) {
        proj_free(p);
        return err;
    }
    p->owner = strdup(err == 0 ? u.username : "");
    if (p->owner == NULL || p->name == NULL || p->description == NULL) {
        proj_free(p);
        return ed_error_set(ED_ENOMEM, "project");
    }
    *out = p;
    return 0;
}

/* The row, unchecked. ED_ENOTFOUND when there is none. */
static int load_row(proj **out, proj_root *r, const char *id)
{
    sqlite3_stmt *s = NULL;
    int err, rc;

    *out = NULL;
    if (!id_ok(id))
        return ed_error_set(ED_ENOTFOUND, "no such project");
    if ((err = ed_store_prepare(&s, r->store, "SELECT " PROJ_COLS "WHERE p.id = ?1")) < 0)
        return err;
    sqlite3_bind_text(s, 1, id, -1, SQLITE_STATIC);
    rc = sqlite3_step(s);
    if (rc == SQLITE_ROW)
        err = row_to_proj(out, r, s);
    else if (rc == SQLITE_DONE)
        err = ed_error_set(ED_ENOTFOUND, "no project %s", id);
    else
        err = ed_store_error(sqlite3_db_handle(s), rc, "load project");
    sqlite3_finalize(s);
    return err;
}

int proj__load(proj **out, proj_root *r, int64_t user_id, const char *id, proj__access access)
{
    proj *p = NULL;
    int err;

    *out = NULL;
    if ((err = load_row(&p, r, id)) < 0)
        return err;
    if (p->owner_id != user_id) {
        /* Someone else's private project does not exist for this caller. */
        if (p->visibility != PROJ_PUBLIC) {
            proj_free(p);
            return ed_error_set(ED_ENOTFOUND, "no project %s", id);
        }
        if (access == PROJ__WRITE) {
            proj_free(p);
            return ed_error_set(ED_EPERM, "only the owner can change project %s", id);
        }
    }
    *out = p;
    return 0;
}

/* Names and descriptions: UTF-8 text without control characters (tab and
 * newline are allowed in descriptions). */
static int check_text(const char *what, const char *s, size_t min, size_t max, bool multiline)
{
    size_t n = strlen(s);

    if (n < min)
        return ed_error_set(ED_EINVAL, "%s must not be empty", what);
    if (n > max)
        return ed_error_set(ED_EINVAL, "%s is longer than %zu bytes", what, max);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == 0x7f || (*p < 0x20 && !(multiline && (*p == '\n' || *p == '\t' || *p == '\r'))))
            return ed_error_set(ED_EINVAL, "%s contains a control character", what);
    }
    return 0;
}

static int check_name(const char *name)
{
    int err;

    if (name == NULL)
        return ed_error_set(ED_EINVAL, "name is required");
    if ((err = check_text("name", name, 1, PROJ_NAME_MAX, false)) < 0)
        return err;
    if (name[0] == ' ' || name[strlen(name) - 1] == ' ')
        return ed_error_set(ED_EINVAL, "name must not start or end with a space");
    return 0;
}

static const char *vis_name(proj_visibility v) { return v == PROJ_PUBLIC ? "public" : "private"; }

/* Whether the owner has another project named `name` (names are unique per
 * owner, compared case-insensitively for ASCII): 1, 0 or an error. `except`
 * is a project id not to count (the one being renamed), or NULL. */
static int name_taken(proj_root *r, int64_t owner_id, const char *name, const char *except)
{
    sqlite3_stmt *s = NULL;
    int err, rc;

    if ((err = ed_store_prepare(&s, r->store,
                                "SELECT 1 FROM projects WHERE owner_id = ?1"
                                " AND name = ?2 COLLATE NOCASE AND id IS NOT ?3 LIMIT 1")) < 0)
        return err;
    sqlite3_bind_int64(s, 1, owner_id);
    sqlite3_bind_text(s, 2, name, -1, SQLITE_STATIC);
    if (except)
        sqlite3_bind_text(s, 3, except, -1, SQLITE_STATIC);
    else
        sqlite3_bind_null(s, 3);
    rc = sqlite3_step(s);
    if (rc == SQLITE_ROW)
        err = 1;
    else if (rc == SQLITE_DONE)
        err = 0;
    else
        err = ed_store_error(sqlite3_db_handle(s), rc, "check project name");
    sqlite3_finalize(s);
    return err;
}

static int name_conflict(const char *name)
{
    return ed_error_set(ED_EEXISTS, "you already have a project named \"%s\"; choose another name",
                        name);
}

/* A fork's name: the source's, else "<name> (fork)", "<name> (fork 2)", ...
 * whichever the owner does not have yet (inside publish's transaction). */
static int fork_name(char out[PROJ_NAME_MAX + 1], proj_root *r, int64_t owner_id, const char *name)
{
    for (int i = 0; i < 100; i++) {
        char suffix[32] = "";
        size_t keep = strlen(name), room;
        int err;

        if (i == 1)
            snprintf(suffix, sizeof(suffix), " (fork)");
        else if (i > 1)
            snprintf(suffix, sizeof(suffix), " (fork %d)", i);
        room = PROJ_NAME_MAX - strlen(suffix);
        if (keep > room) {
            keep = room;
            while (keep > 0 && ((unsigned char)name[keep] & 0xC0) == 0x80)
                keep--;   /* never cut a UTF-8 sequence */
        }
        snprintf(out, PROJ_NAME_MAX + 1, "%.*s%s", (int)keep, name, suffix);
        if ((err = name_taken(r, owner_id, out, NULL)) <= 0)
            return err;
    }
    return name_conflict(name);
}

/* Insert the row for a repository prepared in place at <root>/<id>
 * (proj__ws_prepare: a workspaces row, the directory, its quota tree), both
 * or neither: on failure the directory, its tree and workspaces row are
 * removed. A crash before the commit leaves a workspaces row without a
 * project, which the next start removes (proj_root_set_disk). */
static int publish(proj_root *r, const proj *p)
{
    char name[PROJ_NAME_MAX + 1];
    sqlite3_stmt *s = NULL;
    int err, rc, fd;
    int64_t size = 0;

    if ((fd = openat(r->dirfd, p->id, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) >= 0) {
        size = proj__du(fd);
        fsync(fd);
        close(fd);
    }
    if ((err = ed_store_begin(r->store)) < 0)
        goto fail;
    if (p->forked_from[0]) {
        if ((err = fork_name(name, r, p->owner_id, p->name)) < 0)
            goto fail_tx;
    } else if ((err = name_taken(r, p->owner_id, p->name, NULL)) != 0) {
        if (err > 0)
            err = name_conflict(p->name);
        goto fail_tx;
    }
    if ((err = ed_store_prepare(&s, r->store,
                                "INSERT INTO projects (id, owner_id, name, description, visibility,"
                                " forked_from, size_bytes, created_at, updated_at)"
                                " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?8)")) < 0)
        goto fail_tx;
    sqlite3_bind_text(s, 1, p->id, -1, SQLITE_STATIC);
    sqlite3_bind_int64(s, 2, p->owner_id);
    sqlite3_bind_text(s, 3, p->forked_from[0] ? name : p->name, -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 4, p->description, -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 5, vis_name(p->visibility), -1, SQLITE_STATIC);
    if (p->forked_from[0])
        sqlite3_bind_text(s, 6, p->forked_from, -1, SQLITE_STATIC);
    else
        sqlite3_bind_null(s, 6);
    sqlite3_bind_int64(s, 7, size);
    sqlite3_bind_int64(s, 8, p->created_at);
    if ((rc = sqlite3_step(s)) != SQLITE_DONE) {
        err = ed_store_error(sqlite3_db_handle(s), rc, "insert project");
        goto fail_tx;
    }
    sqlite3_finalize(s);
    s = NULL;
    if ((err = ed_store_commit(r->store)) < 0)
        goto fail;
    return 0;
fail_tx:
    sqlite3_finalize(s);
    ed_store_rollback(r->store);
fail:
    {
        char msg[512];
        snprintf(msg, sizeof(msg), "%s", ed_error_last());
        proj__ws_remove(r, p->id);
        ed_error_set(err, "%s", msg); /* the cleanup must not replace the cause */
    }
    return err;
}

static void new_id(char id[PROJ_ID_LEN + 1])
{
    id[0] = 'p';
    ed_random_token(id + 1, PROJ_ID_LEN - 1);
}

int proj_create(proj **out, proj_root *r, int64_t user_id, const char *name,
                const char *description, proj_visibility visibility)
{
    proj p = {0};
    git_repository *repo = NULL;
    char *username = NULL, *path = NULL;
    int64_t disk_id;
    int err;

    *out = NULL;
    if ((err = check_name(name)) < 0)
        return err;
    if (description && (err = check_text("description", description, 0, PROJ_DESC_MAX, true)) < 0)
        return err;
    if (visibility != PROJ_PRIVATE && visibility != PROJ_PUBLIC)
        return ed_error_set(ED_EINVAL, "visibility must be private or public");
    if ((err = proj__username(&username, r, user_id)) < 0)
        return err;
    free(username);

    new_id(p.id);
    p.owner_id = user_id;
    p.name = (char *)name;
    p.description = (char *)(description ? description : "");
    p.visibility = visibility;
    p.created_at = ed_now_ms();
    /* the directory is made in place (a quota tree's mount cannot be
     * renamed), then the repository in it, then the row */
    if ((err = proj__ws_prepare(r, user_id, p.id, &disk_id)) < 0)
        return err;
    if ((path = proj__repo_path(r, p.id)) == NULL) {
        proj__ws_remove(r, p.id);
        return ED_ENOMEM;
    }
    err = proj__repo_init(&repo, path);
    git_repository_free(repo);
    free(path);
    if (err < 0) {
        char msg[512];
        snprintf(msg, sizeof(msg), "%s", ed_error_last());
        proj__ws_remove(r, p.id);
        return ed_error_set(err, "%s", msg);
    }
    if ((err = publish(r, &p)) < 0)
        return err;
    ed_log_info("projects.create", "user %lld created project %s", (long long)user_id, p.id);
    return load_row(out, r, p.id);
}

int proj_get(proj **out, proj_root *r, int64_t user_id, const char *id)
{
    return proj__load(out, r, user_id, id, PROJ__READ);
}

/* Cursors are "<created_at>.<id>" of the last item returned. */
static int parse_cursor(int64_t *at, char id[PROJ_ID_LEN + 1], const char *cursor)
{
    char *end = NULL;

    errno = 0;
    *at = strtoll(cursor, &end, 10);
    if (errno || end == cursor || *end != '.' || !id_ok(end + 1))
        return ed_error_set(ED_EINVAL, "malformed cursor");
    snprintf(id, PROJ_ID_LEN + 1, "%s", end + 1);
    return 0;
}

int proj_list(proj_page **out, proj_root *r, int64_t user_id, int limit, const char *cursor)
{
    proj_page *pg = NULL;
    sqlite3_stmt *s = NULL;
    int64_t at = 0;
    char after[PROJ_ID_LEN + 1] = "";
    int err, rc;

    *out = NULL;
    if (limit < 1 || limit > PROJ_LIST_MAX)
        return ed_error_set(ED_EINVAL, "limit must be 1 to %d", PROJ_LIST_MAX);
    if (cursor && cursor[0] && (err = parse_cursor(&at, after, cursor)) < 0)
        return err;
    if ((pg = calloc(1, sizeof(*pg))) == NULL ||
        (pg->items = calloc((size_t)limit + 1, sizeof(*pg->items))) == NULL) {
        free(pg);
        return ed_error_set(ED_ENOMEM, "project list");
    }
    if ((err = ed_store_prepare(&s, r->store,
                                "SELECT " PROJ_COLS
                                "WHERE (p.owner_id = ?1 OR p.visibility = 'public')"
                                " AND (?2 = '' OR p.created_at < ?3"
                                "      OR (p.created_at = ?3 AND p.id < ?2))"
                                " ORDER BY p.created_at DESC, p.id DESC LIMIT ?4")) < 0)
        goto fail;
    sqlite3_bind_int64(s, 1, user_id);
    sqlite3_bind_text(s, 2, after, -1, SQLITE_STATIC);
    sqlite3_bind_int64(s, 3, at);
    sqlite3_bind_int(s, 4, limit + 1);
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        if (pg->count == (size_t)limit) {   /* one more exists: there is a next page */
            proj *last = pg->items[pg->count - 1];
            char buf[64];
            snprintf(buf, sizeof(buf), "%" PRId64 ".%s", last->created_at, last->id);
            if ((pg->next_cursor = strdup(buf)) == NULL) {
                err = ed_error_set(ED_ENOMEM, "cursor");
                goto fail;
            }
            break;
        }
        if ((err = row_to_proj(&pg->items[pg->count], r, s)) < 0)
            goto fail;
        pg->count++;
    }
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
        err = ed_store_error(sqlite3_db_handle(s), rc, "list projects");
        goto fail;
    }
    sqlite3_finalize(s);
    *out = pg;
    return 0;
fail:
    sqlite3_finalize(s);
    proj_page_free(pg);
    return err;
}

int proj_update(proj **out, proj_root *r, int64_t user_id, const char *id,
                const proj_changes *ch)
{
    proj *p = NULL;
    sqlite3_stmt *s = NULL;
    bool in_tx = false;
    int err, rc;

    if (out)
        *out = NULL;
    if (ch == NULL)
        return ed_error_set(ED_EINVAL, "no changes given");
    if (ch->name && (err = check_name(ch->name)) < 0)
        return err;
    if (ch->description &&
        (err = check_text("description", ch->description, 0, PROJ_DESC_MAX, true)) < 0)
        return err;
    if (ch->visibility != -1 && ch->visibility != PROJ_PRIVATE && ch->visibility != PROJ_PUBLIC)
        return ed_error_set(ED_EINVAL, "visibility must be private or public");
    proj__lock(r, id);
    if ((err = proj__load(&p, r, user_id, id, PROJ__WRITE)) < 0)
        goto done;
    if ((err = ed_store_begin(r->store)) < 0)
        goto done;
    in_tx = true;
    if (ch->name && (err = name_taken(r, p->owner_id, ch->name, id)) != 0) {
        if (err > 0)
            err = name_conflict(ch->name);
        goto done;
    }
    if ((err = ed_store_prepare(&s, r->store,
                                "UPDATE projects SET name = COALESCE(?1, name),"
                                " description = COALESCE(?2, description),"
                                " visibility = COALESCE(?3, visibility), updated_at = ?4"
                                " WHERE id = ?5")) < 0)
        goto done;
    sqlite3_bind_text(s, 1, ch->name, -1, SQLITE_STATIC);             /* NULL binds NULL */
    sqlite3_bind_text(s, 2, ch->description, -1, SQLITE_STATIC);
    if (ch->visibility == -1)
        sqlite3_bind_null(s, 3);
    else
        sqlite3_bind_text(s, 3, vis_name((proj_visibility)ch->visibility), -1, SQLITE_STATIC);
    sqlite3_bind_int64(s, 4, ed_now_ms());
    sqlite3_bind_text(s, 5, id, -1, SQLITE_STATIC);
    if ((rc = sqlite3_step(s)) != SQLITE_DONE) {
        err = ed_store_error(sqlite3_db_handle(s), rc, "update project");
        goto done;
    }
    sqlite3_finalize(s);
    s = NULL;
    in_tx = false;
    if ((err = ed_store_commit(r->store)) < 0)
        goto done;
    proj_free(p);
    p = NULL;
    if (out)
        err = load_row(out, r, id);
done:
    sqlite3_finalize(s);
    if (in_tx)
        ed_store_rollback(r->store);
    proj__unlock(r, id);
    proj_free(p);
    return err;
}

int proj_delete(proj_root *r, int64_t user_id, const char *id)
{
    proj *p = NULL;
    sqlite3_stmt *s = NULL;
    int err, rc;

    proj__lock(r, id);
    if ((err = proj__load(&p, r, user_id, id, PROJ__WRITE)) < 0)
        goto done;
    /* The row goes first, with a workspaces row left behind (one exists
     * unless the project predates workspace quotas); the directory and its
     * quota tree (a mount cannot be renamed aside) go after the commit. A
     * crash between leaves that workspaces row, and the next start removes
     * what it names. */
    if ((err = ed_store_begin(r->store)) < 0)
        goto done;
    if ((err = ed_store_prepare(&s, r->store, "DELETE FROM projects WHERE id = ?1")) < 0)
        goto rollback;
    sqlite3_bind_text(s, 1, id, -1, SQLITE_STATIC);
    if ((rc = sqlite3_step(s)) != SQLITE_DONE) {
        err = ed_store_error(sqlite3_db_handle(s), rc, "delete project");
        goto rollback;
    }
    if ((err = proj__ws_mark(r, id)) < 0)
        goto rollback;
    if ((err = ed_store_commit(r->store)) < 0)
        goto done;
    proj__ws_remove(r, id);
    ed_log_info("projects.delete", "user %lld deleted project %s", (long long)user_id, id);
    goto done;
rollback:
    ed_store_rollback(r->store);
done:
    sqlite3_finalize(s);
    proj__unlock(r, id);
    proj_free(p);
    return err;
}

typedef struct copy_ctx {
    git_odb *src, *dst;
} copy_ctx;

static int copy_object(const git_oid *oid, void *payload)
{
    copy_ctx *c = payload;
    git_odb_object *obj = NULL;
    git_oid written;
    int rc;

    if ((rc = git_odb_read(&obj, c->src, oid)) < 0)
        return rc;
    rc = git_odb_write(&written, c->dst, git_odb_object_data(obj), git_odb_object_size(obj),
                       git_odb_object_type(obj));
    git_odb_object_free(obj);
    return rc;
}

/* Copy every object of `src` into the fresh repository `dst`, point its main
 * branch at src's HEAD and check it out. An empty source stays empty. */
static int copy_history(git_repository *dst, git_repository *src)
{
    copy_ctx c = {0};
    git_oid head;
    git_reference *ref = NULL;
    git_checkout_options co;
    int rc, err = 0;

    git_checkout_options_init(&co, GIT_CHECKOUT_OPTIONS_VERSION);

    rc = git_reference_name_to_id(&head, src, "HEAD");
    if (rc == GIT_ENOTFOUND || rc == GIT_EUNBORNBRANCH)
        return 0;
    if (rc < 0)
        return proj__git_error("read source HEAD");
    if (git_repository_odb(&c.src, src) < 0 || git_repository_odb(&c.dst, dst) < 0) {
        err = proj__git_error("open object database");
        goto done;
    }
    if (git_odb_foreach(c.src, copy_object, &c) < 0) {
        err = proj__git_error("copy history");
        goto done;
    }
    if (git_reference_create(&ref, dst, "refs/heads/main", &head, 1, "fork") < 0) {
        err = proj__git_error("set fork branch");
        goto done;
    }
    co.checkout_strategy = GIT_CHECKOUT_FORCE;
    if (git_checkout_head(dst, &co) < 0)
        err = proj__git_error("check out fork");
done:
    git_reference_free(ref);
    git_odb_free(c.src);
    git_odb_free(c.dst);
    return err;
}

int proj_fork(proj **out, proj_root *r, int64_t user_id, const char *id)
{
    proj *src = NULL, p = {0};
    git_repository *from = NULL, *to = NULL;
    char *username = NULL, *path = NULL;
    int64_t disk_id;
    int err;

    *out = NULL;
    proj__lock(r, id);
    if ((err = proj__load(&src, r, user_id, id, PROJ__READ)) < 0)
        goto unlock;
    if ((err = proj__username(&username, r, user_id)) < 0)
        goto unlock;
    proj__user_lock(r, user_id);
    if ((err = proj__quota_check(r, user_id, 0, src->size_bytes)) < 0)
        goto unlock_user;
    new_id(p.id);
    p.owner_id = user_id;
    p.name = src->name;
    p.description = src->description;
    p.visibility = PROJ_PRIVATE;
    snprintf(p.forked_from, sizeof(p.forked_from), "%s", src->id);
    p.created_at = ed_now_ms();
    if ((err = proj__repo_open(&from, r, id)) < 0)
        goto unlock_user;
    /* in place, as proj_create: the fork's tree (its owner's limit) first,
     * so the checkout counts toward it */
    if ((err = proj__ws_prepare(r, user_id, p.id, &disk_id)) < 0)
        goto unlock_user;
    if ((path = proj__repo_path(r, p.id)) == NULL) {
        proj__ws_remove(r, p.id);
        err = ED_ENOMEM;
        goto unlock_user;
    }
    if ((err = proj__repo_init(&to, path)) < 0 || (err = copy_history(to, from)) < 0) {
        char msg[512];
        snprintf(msg, sizeof(msg), "%s", ed_error_last());
        git_repository_free(to);
        to = NULL;
        proj__ws_remove(r, p.id);
        ed_error_set(err, "%s", msg);
        goto unlock_user;
    }
    git_repository_free(to);
    to = NULL;
    if ((err = publish(r, &p)) < 0)
        goto unlock_user;
    ed_log_info("projects.fork", "user %lld forked %s into %s", (long long)user_id, id, p.id);
    err = load_row(out, r, p.id);
unlock_user:
    proj__user_unlock(r, user_id);
unlock:
    proj__unlock(r, id);
    git_repository_free(from);
    free(path);
    free(username);
    proj_free(src);
    return err;
}
