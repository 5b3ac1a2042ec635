/*
 * quota_routes.c - tiers, the caller's quota and ledger, admin grants and the
 * ledger check (API.md "Quota and ledger", "Admin"). The money logic lives in
 * quota/; this file only speaks HTTP.
 */
#include "acct.h"
#include "ds.h"
#include "gw_int.h"
#include "proj_ws.h"
#include "quota.h"
#include "sched.h"

#include "ed_crypto.h"
#include "ed_error.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static json_t *tier_json(const quota_tier *t)
{
    return json_pack("{s:s, s:i, s:i, s:I, s:I, s:i, s:b, s:I, s:I}", "name", t->name, "max_kernels",
                     t->max_kernels, "max_gpus_per_job", t->max_gpus_per_job, "max_session_ms",
                     (json_int_t)t->max_session_ms, "idle_timeout_ms", (json_int_t)t->idle_timeout_ms,
                     "weight", t->weight, "allow_egress", t->allow_egress, "overdraft_mcoins",
                     (json_int_t)t->overdraft_mcoins, "free_gpu_ms_per_day",
                     (json_int_t)t->free_gpu_ms_per_day);
}

/* Used by PUT /api/v1/admin/tiers/{name} (sched_routes.c) before anything changes. */
int gw__tier_key_envs_check(const json_t *spec)
{
    const char *env;
    json_t *v;

    if (!json_is_object(spec))
        return ed_error_set(ED_EUNPROC, "field 'key_envs' must be an object {env: {daily_budget_mcoins?, "
                                        "rate_limit_per_min?}}");
    json_object_foreach((json_t *)spec, env, v) {
        char label[96];
        int64_t n;
        int err;

        if (strcmp(env, "dev") != 0 && strcmp(env, "test") != 0 && strcmp(env, "prod") != 0)
            return ed_error_set(ED_EUNPROC, "key_envs: '%.32s' is not an env (dev, test, prod)", env);
        if (!json_is_object(v))
            return ed_error_set(ED_EUNPROC, "key_envs.%s must be an object", env);
        snprintf(label, sizeof(label), "key_envs.%s.daily_budget_mcoins", env);
        if (json_object_get(v, "daily_budget_mcoins") &&
            (err = gw__json_int_check(&n, json_object_get(v, "daily_budget_mcoins"), label, -1,
                                      INT64_C(1000000000000000))) < 0)
            return err;
        snprintf(label, sizeof(label), "key_envs.%s.rate_limit_per_min", env);
        if (json_object_get(v, "rate_limit_per_min") &&
            (err = gw__json_int_check(&n, json_object_get(v, "rate_limit_per_min"), label, 0,
                                      1000000)) < 0)
            return err;
    }
    return 0;
}

typedef struct tier_list {
    ed_store  *st;
    proj_root *projects;
    json_t    *items;
} tier_list;

/* Each tier with its API key envs' limits (key_envs: {env: {daily_budget_mcoins,
 * rate_limit_per_min}}). */
static int add_tier(const quota_tier *t, void *payload)
{
    tier_list *l = payload;
    json_t *o = tier_json(t), *envs = NULL;
    int err;

    if (o == NULL)
        return ED_ENOMEM;
    if ((err = acct_tier_key_envs_json(&envs, l->st, t->name)) < 0 ||
        json_object_set_new(o, "key_envs", envs) < 0) {
        json_decref(o);
        return err < 0 ? err : ED_ENOMEM;
    }
    /* what one user's datasets may store (ds_usage_bytes); 0: no limit */
    if (json_object_set_new(o, "dataset_bytes", json_integer(t->dataset_bytes)) < 0) {
        json_decref(o);
        return ED_ENOMEM;
    }
    /* what one project's working tree may hold (proj_ws.h); 0: no limit */
    if (l->projects && json_object_set_new(o, "workspace_bytes", json_integer(t->workspace_bytes)) < 0) {
        json_decref(o);
        return ED_ENOMEM;
    }
    return json_array_append_new(l->items, o) == 0 ? 0 : ED_ENOMEM;
}

static int list_tiers(gw_request *req, gw_response *res)
{
    json_t *items = json_array();
    tier_list l = {req->srv->store, req->srv->projects, items};
    int err;

    if ((err = quota_tier_each(req->srv->store, add_tier, &l)) < 0) {
        json_decref(items);
        return err == ED_ENOMEM ? ed_error_set(ED_ENOMEM, "tier list") : err;
    }
    return gw_respond_page(res, items, 0);
}

/* The caller's workspaces (API.md "Workspaces"): {used_bytes, limit_bytes,
 * mechanism, projects: [{id, used_bytes}]}. The limit is per project (each
 * project's working tree is its own quota tree), null when the tier has
 * none; used_bytes is the sum over the caller's own projects. */
static int workspace_json(json_t **out, gw_request *req)
{
    proj_ws_usage *u = NULL;
    json_t *items, *o;
    int err;

    *out = NULL;
    if ((err = proj_workspace_usage(&u, req->srv->projects, req->auth.user_id)) < 0)
        return err;
    if ((items = json_array()) == NULL) {
        proj_ws_usage_free(u);
        return ed_error_set(ED_ENOMEM, "workspace usage");
    }
    for (size_t i = 0; i < u->count; i++)
        json_array_append_new(items, json_pack("{s:s, s:I}", "id", u->items[i].id, "used_bytes",
                                               (json_int_t)u->items[i].used_bytes));
    o = json_pack("{s:I, s:o, s:s, s:o}", "used_bytes", (json_int_t)u->used_bytes, "limit_bytes",
                  u->limit_bytes > 0 ? json_integer(u->limit_bytes) : json_null(), "mechanism",
                  proj_workspace_mechanism(req->srv->projects), "projects", items);
    proj_ws_usage_free(u);
    if (o == NULL)
        return ed_error_set(ED_ENOMEM, "workspace usage");
    *out = o;
    return 0;
}

/* GET /api/v1/quota: what the caller can spend and how fast it is going.
 * The burn rate, free time left and time remaining come from the scheduler
 * (sched_quota_view_get; ms_remaining is null while nothing burns coins). */
static int get_quota(gw_request *req, gw_response *res)
{
    quota_tier t;
    quota_balance b;
    sched_quota_view v = {0, 0, -1};
    json_t *o, *ws = NULL, *dsq = NULL;
    int err;

    if ((err = quota_tier_get(&t, req->srv->store, req->auth.tier)) < 0 ||
        (err = quota_balance_get(&b, req->srv->store, req->auth.user_id)) < 0)
        return err;
    v.free_ms_left_today = t.free_gpu_ms_per_day;
    if (req->srv->sched &&
        (err = sched_quota_view_get(&v, req->srv->sched, req->auth.user_id, req->auth.tier)) < 0)
        return err;
    if (req->srv->projects && (err = workspace_json(&ws, req)) < 0)
        return err;
    if (req->srv->datasets) {
        /* the caller's datasets: distinct blobs of versions and drafts */
        int64_t used = 0;
        if ((err = ds_usage_bytes(&used, req->srv->datasets, req->auth.user_id)) < 0) {
            json_decref(ws);
            return err;
        }
        dsq = json_pack("{s:I, s:o}", "used_bytes", (json_int_t)used, "limit_bytes",
                        t.dataset_bytes > 0 ? json_integer(t.dataset_bytes) : json_null());
    }
    o = json_pack("{s:s, s:I, s:I, s:I, s:I, s:o, s:{s:i, s:i, s:I, s:I}}", "tier", t.name,
                  "balance_mcoins", (json_int_t)b.coins_mcoins, "free_ms_left_today",
                  (json_int_t)v.free_ms_left_today, "held_mcoins", (json_int_t)b.held_mcoins,
                  "burn_mcoins_per_hour", (json_int_t)v.burn_mcoins_per_hour, "ms_remaining",
                  v.ms_remaining >= 0 ? json_integer(v.ms_remaining) : json_null(), "limits", "max_kernels",
                  t.max_kernels, "max_gpus_per_job", t.max_gpus_per_job, "max_session_ms",
                  (json_int_t)t.max_session_ms, "idle_timeout_ms", (json_int_t)t.idle_timeout_ms);
    if (o && ws)
        json_object_set_new(o, "workspace", ws);
    else
        json_decref(ws);
    if (o && dsq)
        json_object_set_new(o, "datasets", dsq);
    else
        json_decref(dsq);
    return gw_respond_json(res, 200, o);
}

typedef struct entry_page {
    gw_request *req;
    json_t     *items;
} entry_page;

static int add_entry(const quota_entry *e, void *payload)
{
    entry_page *p = payload;
    json_t *o = json_pack("{s:I, s:s, s:I, s:I, s:s, s:s?, s:s?}", "id", (json_int_t)e->id, "at",
                          gw__time(p->req, e->at), "amount_mcoins", (json_int_t)e->amount_mcoins,
                          "balance_after_mcoins", (json_int_t)e->balance_after_mcoins, "kind", e->kind,
                          "ref", e->ref, "reason", e->reason);

    return o && json_array_append_new(p->items, o) == 0 ? 0 : ED_ENOMEM;
}

/* GET /api/v1/ledger?limit=&cursor=: the caller's coin entries, newest first.
 * The cursor is the id of the last entry of the previous page. */
static int list_ledger(gw_request *req, gw_response *res)
{
    entry_page page = {req, json_array()};
    int64_t before;
    int limit, err;

    if ((err = gw_request_page_id(&limit, &before, req)) < 0 ||
        (err = quota_entries_each(req->srv->store, req->auth.user_id, before, limit + 1, add_entry, &page)) < 0) {
        json_decref(page.items);
        return err;
    }
    return gw_respond_page(res, page.items, limit);
}

/* POST /api/v1/admin/users/{id}/grants {amount_mcoins, reason}
 * Idempotency-Key makes a retry return the first response. */
static int post_grant(gw_request *req, gw_response *res)
{
    json_t *body;
    int64_t user_id, amount = 0, transfer;
    const char *reason = NULL, *key = gw_request_header(req, "Idempotency-Key");
    char generated[40], target[32], *end;
    quota_posting p;
    int err;

    user_id = strtoll(req->params[0], &end, 10);
    if (*end || user_id <= 0)
        return ed_error_set(ED_ENOTFOUND, "user %s not found", req->params[0]);
    if ((err = gw_request_json(&body, req)) < 0 ||
        (err = gw_json_int(&amount, body, "amount_mcoins", 1, INT64_C(1000000000000000), true)) < 0 ||
        (err = ed_json_get_str(&reason, body, "reason", true)) < 0)
        return err;
    if (strlen(reason) > 200)
        return ed_error_set(ED_EINVAL, "field 'reason' is longer than 200 bytes");
    if (key == NULL) {
        memcpy(generated, "grant-", 6);
        ed_random_token(generated + 6, 24);
        key = generated;
    }
    if ((err = quota_grant(&transfer, req->srv->store, user_id, amount, reason, key,
                           req->auth.user_id)) < 0 ||
        (err = quota_posting_get(&p, req->srv->store, transfer, user_id)) < 0)
        return err;
    snprintf(target, sizeof(target), "user:%" PRId64, user_id);
    json_t *detail = json_pack("{s:I, s:I, s:s}", "amount_mcoins", (json_int_t)amount, "transfer_id",
                               (json_int_t)transfer, "idempotency_key", key);
    gw__audit(req, "ledger.grant", target, detail);   /* borrows detail */
    json_decref(detail);
    return gw_respond_json(
        res, 201,
        json_pack("{s:I, s:I, s:I, s:I, s:s, s:s}", "transfer_id", (json_int_t)p.transfer_id, "user_id",
                  (json_int_t)user_id, "amount_mcoins", (json_int_t)p.amount_mcoins,
                  "balance_after_mcoins", (json_int_t)p.balance_after_mcoins, "reason", p.reason,
                  "created_at", gw__time(req, p.at)));
}

static int get_verify(gw_request *req, gw_response *res)
{
    quota_verify_report r;
    json_t *mismatches = json_array();
    int err;

    if ((err = quota_verify(&r, req->srv->store)) < 0) {
        json_decref(mismatches);
        return err;
    }
    for (int i = 0; i < r.nmismatches && i < (int)(sizeof(r.mismatches) / sizeof(r.mismatches[0])); i++)
        json_array_append_new(mismatches, json_string(r.mismatches[i]));
    return gw_respond_json(res, 200,
                           json_pack("{s:b, s:I, s:I, s:i, s:o}", "ok", r.ok, "accounts_checked",
                                     (json_int_t)r.accounts_checked, "transfers_checked",
                                     (json_int_t)r.transfers_checked, "mismatch_count", r.nmismatches,
                                     "mismatches", mismatches));
}

const gw_route gw__routes_quota[] = {
    {"GET", "/api/v1/tiers", list_tiers, GW_AUTH | GW_SCOPE_READ, "List membership tiers and their limits"},
    {"GET", "/api/v1/quota", get_quota, GW_AUTH | GW_SCOPE_READ, "The caller's balance, allowance and limits"},
    {"GET", "/api/v1/ledger", list_ledger, GW_AUTH | GW_SCOPE_READ, "The caller's ledger entries, newest first"},
    {"POST", "/api/v1/admin/users/{id}/grants", post_grant, GW_AUTH | GW_SCOPE_ADMIN,
     "Grant A-coins to a user (Idempotency-Key)"},
    {"GET", "/api/v1/admin/ledger/verify", get_verify, GW_AUTH | GW_SCOPE_ADMIN,
     "Check every ledger invariant"},
    {NULL, NULL, NULL, 0, NULL},
};
