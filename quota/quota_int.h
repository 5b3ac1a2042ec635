/* quota_int.h - private to quota/. */
#ifndef QUOTA_INT_H
#define QUOTA_INT_H

#include "quota.h"

#include <stdbool.h>
#include <stdint.h>

/* One leg of a transfer: `amount` (signed mcoins) onto `account`; when
 * has_floor, the account's balance after must stay >= floor. */
typedef struct quota__leg {
    int64_t account;
    int64_t amount;
    bool    has_floor;
    int64_t floor;
} quota__leg;

/* Run body(ctx) inside BEGIN IMMEDIATE ... COMMIT, rolling back on error and
 * retrying the whole transaction when the database stays busy. */
int quota__with_retry(ed_store *st, int (*body)(void *ctx), void *ctx);

/* ed_store_error for this thread's connection. */
int quota__step_error(ed_store *st, int rc, const char *what);

/* Step and finalize a write made outside a transaction: a busy answer
 * (another writer, or a stale WAL snapshot the busy handler does not wait
 * for) is retried, up to about a second. 0 or the store's error. */
int quota__step_write(ed_store *st, sqlite3_stmt *s, const char *what);

#endif
