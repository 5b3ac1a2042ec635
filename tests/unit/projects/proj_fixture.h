/*
 * proj_fixture.h - what the projects suites (test_projects, test_workspace,
 * test_ws_quota) share: a temporary directory TMP with a real store
 * (TMP/eddy.db, every migration) holding the users alice and bob, the
 * projects root directory TMP/projects, and helpers that create a project
 * and write or read its files with a failing check on any error.
 *
 *   proj_fixture_open("/tmp/eddy-proj-XXXXXX")   TMP, the store, alice, bob
 *   proj_fixture_close()                         frees `root`, closes the
 *                                                store, removes TMP (and
 *                                                unmounts what is beneath it)
 *
 * proj_fixture_setup() also opens `root` (test_ws_quota opens its own, with
 * a disk quota mechanism). Include it once, from one test file; it defines tmp,
 * rootdir, st, root, alice and bob.
 */
#ifndef PROJ_FIXTURE_H
#define PROJ_FIXTURE_H

#include "proj.h"

#include "ed_crypto.h"
#include "ed_error.h"
#include "ed_store.h"

#include "../support/unit_util.h"

#include <check.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char tmp[256];
static char rootdir[300];
static ed_store *st;
static proj_root *root;
static int64_t alice, bob;

/* Insert a user without knowing the accounts schema in detail: fill every
 * NOT NULL column that has no default. */
static int64_t add_user(const char *name)
{
    sqlite3 *db = ed_store_db(st);
    sqlite3_stmt *s;
    char cols[1024] = "", vals[2048] = "", sql[4096];

    ck_assert_int_eq(sqlite3_prepare_v2(db, "PRAGMA table_info(users)", -1, &s, NULL), SQLITE_OK);
    while (sqlite3_step(s) == SQLITE_ROW) {
        const char *col = (const char *)sqlite3_column_text(s, 1);
        const char *type = (const char *)sqlite3_column_text(s, 2);
        int notnull = sqlite3_column_int(s, 3), has_default = sqlite3_column_type(s, 4) != SQLITE_NULL;
        int pk = sqlite3_column_int(s, 5);
        char v[300];
        if (pk || (!notnull && strcmp(col, "username") != 0) || has_default)
            continue;
        if (strcmp(col, "username") == 0)
            snprintf(v, sizeof(v), "'%s'", name);
        else if (type && strcasestr(type, "INT"))
            snprintf(v, sizeof(v), "0");
        else
            snprintf(v, sizeof(v), "'%s-%s'", name, col);
        snprintf(cols + strlen(cols), sizeof(cols) - strlen(cols), "%s%s", cols[0] ? "," : "", col);
        snprintf(vals + strlen(vals), sizeof(vals) - strlen(vals), "%s%s", vals[0] ? "," : "", v);
    }
    sqlite3_finalize(s);
    snprintf(sql, sizeof(sql), "INSERT INTO users (%s) VALUES (%s)", cols, vals);
    ck_assert_msg(ed_store_exec(st, sql) == 0, "%s: %s", sql, ed_error_last());
    return sqlite3_last_insert_rowid(db);
}

/* A fresh TMP from mkdtemp `pattern`, its store, alice and bob; rootdir is
 * named, not opened. */
static void proj_fixture_open(const char *pattern)
{
    char dbpath[300];

    ck_assert_int_eq(ed_crypto_init(), 0);
    snprintf(tmp, sizeof(tmp), "%s", pattern);
    ck_assert_ptr_nonnull(mkdtemp(tmp));
    snprintf(dbpath, sizeof(dbpath), "%s/eddy.db", tmp);
    snprintf(rootdir, sizeof(rootdir), "%s/projects", tmp);
    ck_assert_msg(ed_store_open(&st, dbpath) == 0, "%s", ed_error_last());
    alice = add_user("alice");
    bob = add_user("bob");
}

static void proj_fixture_close(void)
{
    proj_root_free(root);
    root = NULL;
    ed_store_close(st);
    st = NULL;
    unit_remove_tree(tmp);
}

/* The usual Check fixture: proj_fixture_open() and `root` on ROOTDIR with no
 * storage limit; proj_fixture_close() undoes it. */
__attribute__((unused)) static void proj_fixture_setup(void)
{
    proj_fixture_open("/tmp/eddy-proj-XXXXXX");
    ck_assert_msg(proj_root_open(&root, st, rootdir, 0) == 0, "%s", ed_error_last());
}

/* ---- helpers ----------------------------------------------------------------- */

/* A new project of `owner`'s. */
__attribute__((unused)) static proj *make(int64_t owner, const char *name, proj_visibility vis)
{
    proj *p = NULL;
    usleep(2000);   /* distinct created_at, so "newest first" has one answer */
    ck_assert_msg(proj_create(&p, root, owner, name, "test project", vis) == 0, "%s",
                  ed_error_last());
    return p;
}

/* Write a text file as `user`. */
__attribute__((unused)) static void put_as(int64_t user, const char *id, const char *path, const char *text)
{
    ck_assert_msg(proj_file_write(NULL, NULL, root, user, id, path, text, strlen(text)) == 0,
                  "write %s: %s", path, ed_error_last());
}

/* Read a text file as `user` (`version` NULL: the working tree); the caller
 * frees it. */
__attribute__((unused)) static char *get_as(int64_t user, const char *id, const char *path, const char *version)
{
    char *buf = NULL;
    size_t len = 0;
    ck_assert_msg(proj_file_read(&buf, &len, root, user, id, path, version) == 0, "read %s: %s",
                  path, ed_error_last());
    ck_assert_uint_eq(strlen(buf), len);
    return buf;
}

/* The same as alice. */
__attribute__((unused)) static void put(const char *id, const char *path, const char *text)
{
    put_as(alice, id, path, text);
}

__attribute__((unused)) static char *get(const char *id, const char *path, const char *version)
{
    return get_as(alice, id, path, version);
}

/* Fail unless `user` reads exactly `want` from `path` (in `version`;
 * NULL: the working tree). */
__attribute__((unused)) static void file_is_as(int64_t user, const char *id, const char *path, const char *version,
                                               const char *want)
{
    char *got = get_as(user, id, path, version);
    ck_assert_msg(strcmp(got, want) == 0, "%s%s%s: \"%s\", want \"%s\"", path, version ? " in " : "",
                  version ? version : "", got, want);
    free(got);
}

/* The same as alice. */
__attribute__((unused)) static void file_is(const char *id, const char *path, const char *version, const char *want)
{
    file_is_as(alice, id, path, version, want);
}

/* Whether version `v` holds `path` in git. */
__attribute__((unused)) static bool has_file(const proj_version *v, const char *path)
{
    for (size_t i = 0; i < v->nfiles; i++)
        if (strcmp(v->files[i], path) == 0)
            return true;
    return false;
}

/* Whether ROOTDIR/<id>/<rel> exists (a link counts, not followed). */
__attribute__((unused)) static bool exists_in(const char *id, const char *rel)
{
    char path[1024];
    struct stat sb;
    snprintf(path, sizeof(path), "%s/%s/%s", rootdir, id, rel);
    return lstat(path, &sb) == 0;
}

#endif
