/*
 * it_db.h - reading the database of a server started by the harness, for
 * integration tests that assert what was persisted (test_auth.c,
 * test_projects.c). Header-only: the tests link sqlite3 and Check already.
 */
#ifndef IT_DB_H
#define IT_DB_H

#include "harness.h"

#include <check.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdio.h>

/* `s`'s eddy.db, opened read-write with a busy timeout (the server may be
 * writing); close with sqlite3_close(). */
static inline sqlite3 *it_db_open(const it_server *s)
{
    char path[400];
    sqlite3 *db = NULL;

    snprintf(path, sizeof(path), "%s/eddy.db", s->data_dir);
    ck_assert_int_eq(sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
    sqlite3_busy_timeout(db, 5000);
    return db;
}

/* The first column of the first row of a query (printf-style) as an
 * integer, or -1 when it returns no row:
 *     it_db_int(&srv, "SELECT count(*) FROM users WHERE role = '%s'", "admin") */
static inline long long it_db_int(const it_server *s, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static inline long long it_db_int(const it_server *s, const char *fmt, ...)
{
    char sql[1024];
    sqlite3 *db = it_db_open(s);
    sqlite3_stmt *st = NULL;
    long long v = -1;
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(sql, sizeof(sql), fmt, ap);
    va_end(ap);
    ck_assert_int_eq(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
    if (sqlite3_step(st) == SQLITE_ROW)
        v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(db);
    return v;
}

#endif
