/*
 * acct_int.h - private to accounts/ (and its unit tests).
 */
#ifndef ACCT_INT_H
#define ACCT_INT_H

#include "acct.h"

/* Builds the JSON of the row `s` stands on and sets *id to the row's id;
 * NULL when out of memory. */
typedef json_t *(*acct__row_json_fn)(int64_t *id, sqlite3_stmt *s, void *payload);

/* One page of a keyset listing: steps `s` (prepared and bound by the caller
 * to return at most limit + 1 rows in cursor order) and appends row()'s JSON
 * for the first `limit` rows to a new array in *items (caller owns it).
 * *next_cursor: the id of the last row returned when another row follows,
 * else 0. Finalizes s in every case. ED_ENOMEM ("<what>"), or ED_EIO
 * ("<action>: <sqlite message>"); *items stays NULL on failure. */
int acct__page_rows(json_t **items, int64_t *next_cursor, sqlite3_stmt *s, int limit,
                    acct__row_json_fn row, void *payload, const char *what, const char *action);

#endif
