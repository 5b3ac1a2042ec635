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

#endif
