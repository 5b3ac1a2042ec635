#include "ed_store.h"
#include "ed_error.h"
#include "ed_log.h"

#include <assert.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Every connection of a store is on this list so ed_store_close can close the
 * ones opened by threads that are still alive (libmicrohttpd's pool). */
typedef struct conn {
    struct conn *next;
    sqlite3     *db;
} conn;

struct ed_store {
    char           *path;
    pthread_key_t   key;       /* this thread's conn * */
    pthread_mutex_t lock;      /* guards conns */
    conn           *conns;
};

#define BUSY_TIMEOUT_MS 5000

int ed_store_error(sqlite3 *db, int rc, const char *what)
{
    int primary = rc & 0xff;
    const char *msg = db ? sqlite3_errmsg(db) : sqlite3_errstr(rc);

    if (primary == SQLITE_BUSY || primary == SQLITE_LOCKED)
        return ed_error_set(ED_EBUSY, "%s: database busy (%s)", what, msg);
    if (primary == SQLITE_CONSTRAINT)
        return ed_error_set(ED_EEXISTS, "%s: %s", what, msg);
    return ed_error_set(ED_EIO, "%s: %s", what, msg);
}

static int open_connection(sqlite3 **out, const char *path)
{
    static const char pragmas[] = "PRAGMA journal_mode=WAL;"
                                  "PRAGMA synchronous=FULL;"
                                  "PRAGMA foreign_keys=ON;";
    sqlite3 *db = NULL;
    int rc;

    *out = NULL;
    rc = sqlite3_open_v2(path, &db,
                         SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, NULL);
    if (rc != SQLITE_OK) {
        ed_store_error(db, rc, "open database");
        sqlite3_close(db);
        return ed_error_code();
    }
    sqlite3_busy_timeout(db, BUSY_TIMEOUT_MS);
    sqlite3_extended_result_codes(db, 1);
    if ((rc = sqlite3_exec(db, pragmas, NULL, NULL, NULL)) != SQLITE_OK) {
        ed_store_error(db, rc, "set pragmas");
        sqlite3_close(db);
        return ed_error_code();
    }
    *out = db;
    return 0;
}

static void close_conn_on_thread_exit(void *p)
{
    (void)p; /* connections are closed by ed_store_close, which owns the list */
}

sqlite3 *ed_store_db(ed_store *st)
{
    conn *c = pthread_getspecific(st->key);

    if (c)
        return c->db;
    if ((c = calloc(1, sizeof(*c))) == NULL) {
        ed_error_set(ED_ENOMEM, "store connection");
        return NULL;
    }
    if (open_connection(&c->db, st->path) < 0) {
        free(c);
        return NULL;
    }
    pthread_mutex_lock(&st->lock);
    c->next = st->conns;
    st->conns = c;
    pthread_mutex_unlock(&st->lock);
    pthread_setspecific(st->key, c);
    return c->db;
}

int ed_store_exec(ed_store *st, const char *sql)
{
    sqlite3 *db = ed_store_db(st);
    char *msg = NULL;
    int rc;

    if (db == NULL)
        return ed_error_code();
    if ((rc = sqlite3_exec(db, sql, NULL, NULL, &msg)) != SQLITE_OK) {
        int err = ed_store_error(db, rc, "exec");
        sqlite3_free(msg);
        return err;
    }
    return 0;
}

int ed_store_prepare(sqlite3_stmt **out, ed_store *st, const char *sql)
{
    sqlite3 *db = ed_store_db(st);
    int rc;

    *out = NULL;
    if (db == NULL)
        return ed_error_code();
    if ((rc = sqlite3_prepare_v2(db, sql, -1, out, NULL)) != SQLITE_OK)
        return ed_store_error(db, rc, "prepare");
    return 0;
}

int ed_store_begin(ed_store *st) { return ed_store_exec(st, "BEGIN IMMEDIATE"); }

/* Retry limits: a statement about a second, a transaction about 50 tries.
 * Each connection already waits BUSY_TIMEOUT_MS in SQLite's busy handler;
 * these loops cover the cases that handler does not (a stale WAL snapshot,
 * an unfair wake-up order among many writers). */
#define STEP_TRIES 200
#define TX_TRIES   50

int ed_store_step(sqlite3_stmt *q)
{
    int rc;

    assert(q != NULL);
    for (int attempt = 0;; attempt++) {
        rc = sqlite3_step(q);
        if ((rc != SQLITE_BUSY && rc != SQLITE_LOCKED) || attempt >= STEP_TRIES)
            return rc;
        sqlite3_reset(q);
        usleep(1000u * (unsigned)(1 + attempt % 8));
    }
}

int ed_store_tx(ed_store *st, int (*body)(void *ctx), void *ctx)
{
    int err;

    assert(st != NULL && body != NULL);
    for (int attempt = 0;; attempt++) {
        if ((err = ed_store_begin(st)) == 0) {
            if ((err = body(ctx)) < 0)
                ed_store_rollback(st);
            else if ((err = ed_store_commit(st)) == 0)
                return 0;
        }
        if (err != ED_EBUSY || attempt >= TX_TRIES)
            return err;
        usleep(1000u * (unsigned)(1 + attempt % 10));
    }
}

int ed_store_commit(ed_store *st)
{
    int err = ed_store_exec(st, "COMMIT");

    if (err < 0)
        ed_store_rollback(st);
    return err;
}

void ed_store_rollback(ed_store *st)
{
    sqlite3 *db = ed_store_db(st);

    if (db && !sqlite3_get_autocommit(db))
        sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
}

int ed_store_schema_version(ed_store *st)
{
    sqlite3_stmt *s = NULL;
    int v = -1;

    if (ed_store_prepare(&s, st, "PRAGMA user_version") == 0 && sqlite3_step(s) == SQLITE_ROW)
        v = sqlite3_column_int(s, 0);
    sqlite3_finalize(s);
    return v;
}

/* Apply every migration newer than user_version, each in its own transaction
 * together with the user_version bump, so a crash leaves a consistent schema. */
static int migrate(ed_store *st)
{
    int have = ed_store_schema_version(st), err;
    char bump[64];

    if (have < 0)
        return ed_error_set(ED_EIO, "read schema version: %s", ed_error_last());
    if (have > ed_migrations_count)
        return ed_error_set(ED_EIO, "database schema %d is newer than this eddy (%d)", have,
                            ed_migrations_count);
    for (int i = have; i < ed_migrations_count; i++) {
        if ((err = ed_store_begin(st)) < 0)
            return err;
        snprintf(bump, sizeof(bump), "PRAGMA user_version=%d", i + 1);
        if ((err = ed_store_exec(st, ed_migrations[i].sql)) < 0 ||
            (err = ed_store_exec(st, bump)) < 0) {
            char msg[512];
            snprintf(msg, sizeof(msg), "%s", ed_error_last());
            ed_store_rollback(st);
            return ed_error_set(err, "migration %s: %s", ed_migrations[i].name, msg);
        }
        if ((err = ed_store_commit(st)) < 0)
            return err;
        ed_log_info("store.migrate", "applied %s", ed_migrations[i].name);
    }
    return 0;
}

int ed_store_open(ed_store **out, const char *path)
{
    ed_store *st;
    int err;

    *out = NULL;
    if ((st = calloc(1, sizeof(*st))) == NULL || (st->path = strdup(path)) == NULL) {
        free(st);
        return ed_error_set(ED_ENOMEM, "store");
    }
    pthread_mutex_init(&st->lock, NULL);
    if (pthread_key_create(&st->key, close_conn_on_thread_exit) != 0) {
        free(st->path);
        free(st);
        return ed_error_set(ED_ENOMEM, "store thread key");
    }
    if (ed_store_db(st) == NULL || (err = migrate(st)) < 0) {
        err = ed_error_code();
        ed_store_close(st);
        return err;
    }
    *out = st;
    return 0;
}

void ed_store_close(ed_store *st)
{
    if (st == NULL)
        return;
    pthread_mutex_lock(&st->lock);
    while (st->conns) {
        conn *c = st->conns;
        st->conns = c->next;
        sqlite3_close_v2(c->db);
        free(c);
    }
    pthread_mutex_unlock(&st->lock);
    /* Threads that touched this store keep a dangling specific value; the key
     * is deleted so they never read it again. */
    pthread_key_delete(st->key);
    pthread_mutex_destroy(&st->lock);
    free(st->path);
    free(st);
}
