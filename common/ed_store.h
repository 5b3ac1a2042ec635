/*
 * ed_store.h - the SQLite store: one database file, a connection per thread.
 *
 * ed_store_open() opens DATA/eddy.db, applies the ordered migrations in
 * common/migrations/ (embedded at build time, tracked with PRAGMA
 * user_version) and returns a handle shared by every thread. Each thread that
 * calls ed_store_db() gets its own connection, opened on first use with WAL,
 * synchronous=FULL, foreign_keys=ON and a busy timeout, so readers never wait
 * for writers and a transaction never spans threads.
 *
 * Money is integer milli-coins, time integer milliseconds (UTC).
 *
 * Behind this header so a PostgreSQL backend can replace SQLite later; until
 * then callers use the sqlite3 API on the connection they are given.
 *
 *     sqlite3 *db = ed_store_db(st);
 *     if ((err = ed_store_begin(st)) < 0) return err;
 *     ... statements ...
 *     if ((err = ed_store_commit(st)) < 0) return err;  // rolls back on failure
 *
 * or, retried as a whole while the database is busy:
 *
 *     err = ed_store_tx(st, body, &ctx);     // body runs the statements
 */
#ifndef ED_STORE_H
#define ED_STORE_H

#include <sqlite3.h>
#include <stdint.h>

typedef struct ed_store ed_store;

/* Open (creating if needed) the database at `path` and migrate it to the
 * newest schema. Caller frees with ed_store_close(). ED_EIO names the failing
 * step or migration. */
int ed_store_open(ed_store **out, const char *path);

/* Close every thread's connection (after in-flight work has finished) and free
 * the handle. NULL-safe. */
void ed_store_close(ed_store *st);

/* This thread's connection (borrowed; closed by ed_store_close or when the
 * thread exits). NULL if it could not be opened; ed_error_last() says why. */
sqlite3 *ed_store_db(ed_store *st);

/* The schema version after migrations (PRAGMA user_version). */
int ed_store_schema_version(ed_store *st);

/* BEGIN IMMEDIATE / COMMIT / ROLLBACK on this thread's connection. A failed
 * commit rolls back. 0 or ED_EIO (ED_EBUSY when the database stayed locked). */
int ed_store_begin(ed_store *st);
int ed_store_commit(ed_store *st);
void ed_store_rollback(ed_store *st);

/* sqlite3_step, retried while the answer is SQLITE_BUSY or SQLITE_LOCKED
 * (another writer, or a WAL snapshot gone stale, which SQLite's busy handler
 * does not wait for): the statement is reset and stepped again, up to about a
 * second (200 tries, 1-8 ms apart). Returns SQLite's code; the caller
 * finalizes. For writes outside an explicit transaction.
 *
 *     if ((rc = ed_store_step(q)) != SQLITE_DONE)
 *         err = ed_store_error(ed_store_db(st), rc, "update job");
 */
int ed_store_step(sqlite3_stmt *q);

/* Run body(ctx) inside BEGIN IMMEDIATE ... COMMIT on this thread's
 * connection. A body that returns < 0 is rolled back and its code returned.
 * When BEGIN, the body or COMMIT answers ED_EBUSY (SQLite's busy handler is
 * not fair under a burst of writers), the whole transaction is retried, up to
 * 50 times 1-10 ms apart, so the body must not keep state between calls
 * except through `ctx` it resets itself. 0, the body's code, or ED_EBUSY/
 * ED_EIO from the store. */
int ed_store_tx(ed_store *st, int (*body)(void *ctx), void *ctx);

/* Run SQL with no results. 0 or ED_EIO with SQLite's message. */
int ed_store_exec(ed_store *st, const char *sql);

/* Prepare `sql` on this thread's connection. Caller finalizes.
 * 0 or ED_EIO with SQLite's message. */
int ed_store_prepare(sqlite3_stmt **out, ed_store *st, const char *sql);

/* Turn a SQLite failure into an ed_error: ED_EBUSY for SQLITE_BUSY/LOCKED,
 * ED_EEXISTS for constraint violations (UNIQUE), ED_EIO otherwise, with
 * "<what>: <sqlite message>". Returns the code. */
int ed_store_error(sqlite3 *db, int rc, const char *what);

/* The migrations compiled in (generated from common/migrations/ *.sql). */
typedef struct ed_migration {
    const char *name;   /* file name, "0001_core.sql" */
    const char *sql;
} ed_migration;
extern const ed_migration ed_migrations[];
extern const int ed_migrations_count;

#endif
