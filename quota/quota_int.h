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

/* The lowest balance user `user_id`'s coins may reach: minus the overdraft
 * of the user's tier (0 for a tier that is gone), the tier read through the
 * lookup accounts/ installed (floor.c). ED_ENOTFOUND when there is no such
 * user, ED_EINTERNAL when no lookup is installed. */
int quota__user_floor(int64_t *out, ed_store *st, int64_t user_id);

/* quota_verify's floor check: every user's coins at or above its floor. */
int quota__verify_floors(quota_verify_report *r, ed_store *st);

/* Add mismatch `what` to the report (the first 16 are kept in words). */
void quota__verify_note(quota_verify_report *r, const char *what);

/* The hold state machine: "" (no row yet) -> "open" -> "settled", nothing
 * else (a settled hold never reopens; settling twice is ED_ECONFLICT before
 * any write). For asserts: true when `from` may become `to`. */
bool quota__hold_transition_ok(const char *from, const char *to);

#endif
