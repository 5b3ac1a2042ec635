/*
 * audit.c - audit rows for requests: the actor of a request (user, address,
 * request id) handed to the accounts module's acct_audit_append(), which
 * owns the audit table; and gw__time for times in responses.
 */
#include "auth_int.h"

#include "ed_error.h"
#include "ed_time.h"

#include <stdlib.h>

acct_actor gw__actor_of(const gw_request *req)
{
    acct_actor a = {
        .user_id = req->auth.user_id,
        .ip = req->ip,
        .request_id = req->request_id,
    };
    return a;
}

int gw__audit(gw_request *req, const char *action, const char *target, json_t *detail)
{
    acct_actor a = gw__actor_of(req);

    return acct_audit_append(req->srv->store, &a, action, target, detail);
}

const char *gw__time(gw_request *req, int64_t ms)
{
    char buf[ED_RFC3339_LEN];

    return ed_arena_strdup(req->arena, ed_time_rfc3339(buf, sizeof(buf), ms));
}
