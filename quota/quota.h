/*
 * quota.h - tiers and the double-entry A-coin ledger.
 *
 * Every movement of money is a transfer: two or more entries on ledger
 * accounts that sum to zero, posted in one SQLite transaction together with
 * the accounts' materialised balances, under an idempotency key. A repeat
 * with the same key and the same request returns the first transfer; the
 * same key with a different request is ED_ECONFLICT. Journal rows are never
 * updated or deleted (triggers refuse it).
 *
 * Accounts: per user "user_coins" (spendable) and "user_held" (reserved by
 * open holds); system "system_grants" (source of granted coins),
 * "system_revenue" (what work was charged) and "system_refunds".
 *
 * Money is integer milli-coins (1 A-coin = 1000 mcoins). User coin balances
 * never go below minus the tier's overdraft (0 by default): a charge or hold
 * that would is ED_EQUOTA and posts nothing.
 *
 *     int64_t transfer;
 *     err = quota_grant(&transfer, st, user_id, 5000, "welcome", "grant-abc", admin_id);
 */
#ifndef QUOTA_H
#define QUOTA_H

#include "ed_store.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum {
    QUOTA_KIND_GRANT,
    QUOTA_KIND_CHARGE,
    QUOTA_KIND_REFUND,
    QUOTA_KIND_HOLD,
    QUOTA_KIND_RELEASE,
    QUOTA_KIND_PURCHASE,
} quota_kind;

/* "grant", "charge", ... */
const char *quota_kind_name(quota_kind kind);

/* ---- tiers --------------------------------------------------------------- */

typedef struct quota_tier {
    char    name[32];
    int     max_kernels;
    int     max_gpus_per_job;
    int64_t max_session_ms;
    int64_t idle_timeout_ms;
    int     weight;
    bool    allow_egress;
    int64_t overdraft_mcoins;
    int64_t free_gpu_ms_per_day;
    int64_t job_disk_bytes;     /* what one job may write (work + output dirs); 0: no limit */
    int64_t workspace_bytes;    /* what one project's working tree may hold; 0: no limit */
    int64_t dataset_bytes;      /* what one user's datasets may store (distinct blobs); 0: no limit */
} quota_tier;

/* 1 if a tier of that name exists, 0 if not, negative on a store error. */
int quota_tier_exists(ed_store *st, const char *name);
/* Read one tier. ED_ENOTFOUND if there is none of that name. */
int quota_tier_get(quota_tier *out, ed_store *st, const char *name);
/* A change to a tier's limits: a field < 0 keeps its value (allow_egress:
 * -1 keep, 0 no, 1 yes). Start from QUOTA_TIER_KEEP so a field added later
 * is kept, not set to 0. */
typedef struct quota_tier_change {
    int     max_kernels, max_gpus_per_job, weight, allow_egress;
    int64_t max_session_ms, idle_timeout_ms, overdraft_mcoins, free_gpu_ms_per_day;
    int64_t job_disk_bytes, workspace_bytes, dataset_bytes;
} quota_tier_change;
#define QUOTA_TIER_KEEP                                                                             \
    ((quota_tier_change){.max_kernels = -1, .max_gpus_per_job = -1, .weight = -1, .allow_egress = -1, \
                         .max_session_ms = -1, .idle_timeout_ms = -1, .overdraft_mcoins = -1,         \
                         .free_gpu_ms_per_day = -1, .job_disk_bytes = -1, .workspace_bytes = -1, \
                         .dataset_bytes = -1})
/* Apply `u` to tier `name` in one statement (the tiers table is quota/'s;
 * scheduler/, projects/ and the gateway change it through here).
 * ED_ENOTFOUND for an unknown tier; ED_EINVAL for a limit out of range
 * (weight 1..1000, max_kernels 0..1000, max_gpus_per_job 0..64, times
 * 1 s..30 days, overdraft <= 1e12 mcoins, free_gpu_ms_per_day <= 1 day);
 * ED_EUNPROC naming the field for job_disk_bytes, workspace_bytes or dataset_bytes other
 * than 0 (no limit) or 1 MiB..1 PiB. Nothing is changed on an error. */
int quota_tier_update(ed_store *st, const char *name, const quota_tier_change *u);
/* Call fn for each tier in name order; a non-zero return from fn stops and is
 * returned. */
int quota_tier_each(ed_store *st, int (*fn)(const quota_tier *t, void *payload), void *payload);

/* ---- users -----------------------------------------------------------------
 *
 * Which tier a user is on is accounts/'s (table users), and accounts/ depends
 * on quota/, so the ledger cannot call accounts/ for what it needs of a user:
 * that the user exists, and the tier whose overdraft floors the user's coins.
 * accounts/ installs this lookup as it is loaded (accounts/accounts.c); a
 * program that links quota/ without accounts/ installs its own before any
 * transfer, or transfers fail with ED_EINTERNAL.
 */

/* Copy the tier name of user `user_id` into tier[0..size), NUL-terminated.
 * 0, ED_ENOTFOUND (no such user) or the store's error. Called on the calling
 * thread's connection inside the ledger's write transaction: it only reads. */
typedef int (*quota_user_tier_fn)(char *tier, size_t size, ed_store *st, int64_t user_id);

/* Install the lookup (NULL removes it). Process-wide; safe from any thread. */
void quota_user_tier_fn_set(quota_user_tier_fn fn);

/* ---- transfers ------------------------------------------------------------ */

/* Give a user `mcoins` (> 0) from system_grants. `idem_key` (required,
 * <= 200 bytes) makes a retry safe. *out_transfer gets the transfer id (the
 * first one's on a replay). ED_EINVAL, ED_ENOTFOUND (no such user),
 * ED_ECONFLICT (key reused for another request). */
int quota_grant(int64_t *out_transfer, ed_store *st, int64_t user_id, int64_t mcoins,
                const char *reason, const char *idem_key, int64_t actor_id);

/* Charge a user `mcoins` (> 0) to system_revenue. ED_EQUOTA when the
 * balance (plus the tier's overdraft) does not cover it; nothing is posted. */
int quota_charge(int64_t *out_transfer, ed_store *st, int64_t user_id, int64_t mcoins,
                 const char *ref, const char *reason, const char *idem_key);

/* Refund a user `mcoins` (> 0) from system_refunds (a platform failure). */
int quota_refund(int64_t *out_transfer, ed_store *st, int64_t user_id, int64_t mcoins,
                 const char *ref, const char *reason, const char *idem_key);

/* ---- holds ---------------------------------------------------------------- */

/* Reserve `mcoins` (> 0) of a user's coins (moved to user_held).
 * ED_EQUOTA when the balance does not cover it. A replayed key returns the
 * same hold. */
int quota_hold_open(int64_t *out_hold, ed_store *st, int64_t user_id, int64_t mcoins,
                    const char *ref, const char *idem_key);
/* Resolve an open hold: charge `actual_mcoins` (0..reserved) to revenue and
 * release the rest back to the user's coins. Exactly once: a second settle is
 * ED_ECONFLICT; charging more than was held is ED_EINVAL (the caller charges the
 * excess separately with quota_charge). */
int quota_hold_settle(ed_store *st, int64_t hold_id, int64_t actual_mcoins);

/* A hold as stored (ledger_holds). */
typedef struct quota_hold_info {
    int64_t id, user_id;
    int64_t amount_mcoins;    /* reserved */
    int64_t settled_mcoins;   /* charged at settle; 0 while open */
    bool    open;             /* false: settled */
} quota_hold_info;
/* Read hold `hold_id`. ED_ENOTFOUND if there is none. */
int quota_hold_get(quota_hold_info *out, ed_store *st, int64_t hold_id);
/* The ids of up to `max` open holds whose ref starts with `ref_prefix`
 * ("job:"), oldest first, into ids[0..*n). Settling them and calling again
 * walks them all. */
int quota_holds_open(int64_t *ids, int *n, int max, ed_store *st, const char *ref_prefix);
/* What system_revenue took in (charges, settled holds) since `since_ms`. */
int quota_revenue_since(int64_t *out_mcoins, ed_store *st, int64_t since_ms);

/* ---- reading ---------------------------------------------------------------- */

typedef struct quota_balance {
    int64_t coins_mcoins;   /* spendable */
    int64_t held_mcoins;    /* reserved by open holds */
} quota_balance;

/* A user's balances (zero for a user with no ledger accounts yet). */
int quota_balance_get(quota_balance *out, ed_store *st, int64_t user_id);

typedef struct quota_entry {
    int64_t     id;
    int64_t     at;                     /* ms */
    int64_t     amount_mcoins;          /* + in, - out of the user's coins */
    int64_t     balance_after_mcoins;
    const char *kind;                   /* borrowed for the callback */
    const char *ref;                    /* may be NULL */
    const char *reason;                 /* may be NULL */
} quota_entry;

/* The user's coin-account entries, newest first, with id < before_id
 * (0: from the newest), at most `limit`. fn's non-zero return stops. */
int quota_entries_each(ed_store *st, int64_t user_id, int64_t before_id, int limit,
                       int (*fn)(const quota_entry *e, void *payload), void *payload);

/* The user's coin entry of one transfer (what a grant response shows;
 * identical on every replay since journal rows never change).
 * ED_ENOTFOUND when the transfer has no entry on that user's coins. */
typedef struct quota_posting {
    int64_t transfer_id;
    int64_t at;                   /* ms */
    int64_t amount_mcoins;
    int64_t balance_after_mcoins;
    char    kind[16];
    char    reason[256];
} quota_posting;
int quota_posting_get(quota_posting *out, ed_store *st, int64_t transfer_id, int64_t user_id);

/* ---- invariants -------------------------------------------------------------- */

typedef struct quota_verify_report {
    bool    ok;
    int64_t accounts_checked;
    int64_t transfers_checked;
    int     nmismatches;
    char    mismatches[16][160];   /* the first 16, in words */
} quota_verify_report;

/* Check every invariant: each account's balance equals the sum of its entries
 * and its last balance_after; every transfer sums to zero and has at least two
 * entries; no user coin balance is below its tier's overdraft; every open hold
 * is matched by held coins. */
int quota_verify(quota_verify_report *out, ed_store *st);

/* ---- metering (quota/meter.c) ---------------------------------------------
 *
 * Running work is metered in intervals. Each interval of a piece of work
 * (ref "job:12", seq 1, 2, ...) is decided once: the daily free allowance of
 * the resource class is used first, the rest is charged to the user's coins
 * at the class's price. The decision (table quota_meter) and the free
 * allowance counter are written in one transaction; the charge is a ledger
 * transfer with the key "meter:<ref>:<seq>", so a retry after a crash posts
 * it at most once. quota_meter_recover() finishes decisions whose charge was
 * not confirmed. The free allowance resets at 00:00 UTC.
 *
 *     quota_meter_result r;
 *     err = quota_meter_charge(&r, st, user, "gpu-v100-16g", free_per_day, 2000,
 *                              "job:12", seq, 60000, ed_now_ms());
 *     if (r.out_of_funds) ... warn, then stop after the grace period ...
 */

typedef struct quota_meter_result {
    int64_t free_ms;        /* of this interval, taken from the free allowance */
    int64_t paid_ms;        /* the rest */
    int64_t mcoins;         /* what the paid part costs */
    int64_t charged_mcoins; /* posted to the ledger (== mcoins unless out of funds) */
    bool    out_of_funds;   /* the charge was refused: the work owes `mcoins` */
} quota_meter_result;

/* Meter interval `seq` (>= 1) of `ms` (> 0) milliseconds of work `ref` of
 * `user_id` on `resource`, at time `at_ms` (its UTC day picks the allowance).
 * `free_ms_per_day`: the tier's allowance for the class (-1 unlimited, 0
 * none). The cost is computed on the work's cumulative paid time so rounding
 * never loses or adds a mcoin. A repeated (ref, seq) returns the first
 * result and charges nothing more. ED_EINVAL for bad arguments. */
int quota_meter_charge(quota_meter_result *out, ed_store *st, int64_t user_id, const char *resource,
                       int64_t free_ms_per_day, int64_t price_mcoins_per_hour, const char *ref,
                       int64_t seq, int64_t ms, int64_t at_ms);

/* Free time left today (at `at_ms`) for a user on a class; -1 unlimited. */
int quota_meter_free_left(int64_t *out_ms, ed_store *st, int64_t user_id, const char *resource,
                          int64_t free_ms_per_day, int64_t at_ms);

/* Totals over a work's intervals: what was charged to coins and what is
 * owed (unpaid, out of funds). Either out may be NULL. */
int quota_meter_totals(int64_t *out_charged, int64_t *out_unpaid, ed_store *st, const char *ref);

/* Finish every interval whose charge was not confirmed (after a crash):
 * re-post it under its key (posted at most once) and record the outcome.
 * *out_n (may be NULL) gets how many were finished. */
int quota_meter_recover(int *out_n, ed_store *st);

/* A platform failure: refund everything `ref`'s intervals charged (one
 * refund transfer, key "meter-refund:<ref>", reason "platform failure") and
 * give back the free allowance they used. Idempotent. *out_mcoins (may be
 * NULL) gets the amount refunded by this or an earlier call. */
int quota_meter_refund(int64_t *out_mcoins, ed_store *st, const char *ref);

/* ---- API key budgets (quota/budget.c) --------------------------------------
 *
 * Work started with an API key is metered against the key's daily budget.
 * Whoever owns the work sets its ref to the key before it is metered; every
 * interval then carries the key, and what a key's work was metered on a UTC
 * day is one indexed sum. Which budget applies (the key's own, its env's) is
 * the caller's to say: the gateway owns keys. The scheduler uses this for
 * jobs and kernels; deployments and submissions use the same calls.
 *
 *     quota_budget_ref_set(st, "job:12", key_id);             // at submit
 *     err = quota_budget_check(NULL, st, key_id, budget, ed_now_ms());
 *     if (err == ED_EQUOTA) ... refuse the start, or warn then stop the work ...
 */

/* Meter `ref` against API key `key_id` (> 0), or against no key (0: clears
 * what an earlier use of the ref set). Replaces an earlier setting.
 * ED_EINVAL. */
int quota_budget_ref_set(ed_store *st, const char *ref, int64_t key_id);

/* What work of `key_id` was metered on the UTC day of `at_ms`, mcoins:
 * intervals charged, pending or owed (unpaid); free, refunded and voided ones
 * do not count. 0 for key 0. */
int quota_budget_spent(int64_t *out_mcoins, ed_store *st, int64_t key_id, int64_t at_ms);

/* 0 when `key_id` may start or keep running work under a daily budget of
 * `budget_mcoins` (-1: none; key 0: no key, never limited); ED_EQUOTA
 * ("quota_exceeded") when today's spending has reached it (a budget of 0
 * allows nothing). *out_spent (may be NULL) gets today's spending. */
int quota_budget_check(int64_t *out_spent, ed_store *st, int64_t key_id, int64_t budget_mcoins, int64_t at_ms);

#endif
