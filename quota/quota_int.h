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

/* ed_store_error for this thread's connection. */
int quota__step_error(ed_store *st, int rc, const char *what);

/* Step (ed_store_step: retried while busy) and finalize a write made
 * outside a transaction. 0 or the store's error. */
int quota__step_write(ed_store *st, sqlite3_stmt *s, const char *what);

/* The hold state machine: "" (no row yet) -> "open" -> "settled", nothing
 * else (a settled hold never reopens; settling twice is ED_ECONFLICT before
 * any write). For asserts: true when `from` may become `to`. */
bool quota__hold_transition_ok(const char *from, const char *to);

#endif
