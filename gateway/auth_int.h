/*
 * auth_int.h - private to the gateway's auth files: ratelimit.c, audit.c,
 * auth.c, auth_routes.c (and their unit tests).
 *
 * Layering: users, sessions, keys, settings and the audit trail are the
 * accounts module's (accounts/acct.h: over an ed_store, no HTTP); ratelimit.c
 * works in memory; auth.c (gw__auth_authenticate) and auth_routes.c (the
 * handlers) sit on top and speak gw_request/gw_response.
 */
#ifndef GW_AUTH_INT_H
#define GW_AUTH_INT_H

#include "acct.h"
#include "gw_int.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The actor of an HTTP request, for audit rows (borrows req's strings). */
acct_actor gw__actor_of(const gw_request *req);

/* ---- rate limiting (ratelimit.c) -------------------------------------------
 * Keyed fixed windows of one minute that open at a key's first hit: at most
 * `limit` hits per window. Thread-safe. Keys are namespaced by the caller
 * ("login:user:alice", "login:ip:1.2.3.4", "key:12"). */
#define GW_RATELIMIT_WINDOW_MS 60000

/* Count a hit for `key` at `now_ms` (monotonic ms). 0 while within the limit;
 * ED_ELIMIT with *retry_after_s (>= 1) when the window is already full (the
 * refused hit is not counted). ED_ENOMEM. */
int gw__ratelimit_hit(struct gw_ratelimit *rl, const char *key, int limit, int64_t now_ms,
                      int *retry_after_s);
/* Like gw__ratelimit_hit without counting: ED_ELIMIT when `limit` hits are
 * already in the window. */
int gw__ratelimit_check(struct gw_ratelimit *rl, const char *key, int limit, int64_t now_ms,
                        int *retry_after_s);
/* Milliseconds on the monotonic clock, for the calls above. */
int64_t gw__ratelimit_now_ms(void);

/* Backoff after failures (login): `key` is refused (ED_ELIMIT with
 * *retry_after_s) while locked. gw__backoff_fail counts a failure at now_ms:
 * from the `free_failures`-th on, the key is locked for a minute, doubled by
 * each later failure up to GW_BACKOFF_MAX_MS; failures older than
 * GW_BACKOFF_FORGET_MS are forgotten. gw__backoff_reset clears the key. */
#define GW_BACKOFF_MAX_MS    ((int64_t)15 * 60 * 1000)
#define GW_BACKOFF_FORGET_MS ((int64_t)60 * 60 * 1000)
int  gw__backoff_check(struct gw_ratelimit *rl, const char *key, int64_t now_ms, int *retry_after_s);
int  gw__backoff_fail(struct gw_ratelimit *rl, const char *key, int free_failures, int64_t now_ms);
void gw__backoff_reset(struct gw_ratelimit *rl, const char *key);

/* Upper bounds of integer fields in request bodies. */
#define GW_MAX_MCOINS   INT64_C(1000000000000000)  /* 10^12 A-coins */
#define GW_MAX_KEY_RATE 1000000                    /* requests a minute */

/* Defaults when the configuration leaves a value at 0. */
#define GW_DEFAULT_LOGIN_ATTEMPTS 10
#define GW_DEFAULT_KEY_RATE       600

#define GW_SESSION_COOKIE "eddy_session"
#define GW_CSRF_HEADER    "X-CSRF-Token"

#endif
