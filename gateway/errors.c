/* errors.c - the one table from ED_E* codes to HTTP statuses (API.md), and
 * the error body every failed request gets. */
#include "gw_int.h"

#include "ed_error.h"
#include "ed_log.h"

#include <stdio.h>

static const struct {
    int         code;
    int         status;
    const char *api_code;
} error_table[] = {
    {ED_EINVAL, 400, "bad_request"},
    {ED_EAUTH, 401, "unauthorized"},
    {ED_EQUOTA, 402, "quota_exceeded"},
    {ED_EPERM, 403, "forbidden"},
    {ED_ENOTFOUND, 404, "not_found"},
    {ED_EEXISTS, 409, "conflict"},
    {ED_ECONFLICT, 409, "conflict"},
    {ED_EPRECOND, 412, "precondition_failed"},
    {ED_ETOOBIG, 413, "payload_too_large"},
    {ED_EUNPROC, 422, "unprocessable"},
    {ED_ELIMIT, 429, "rate_limited"},
    {ED_EBUSY, 503, "unavailable"},
};

int gw__status_for(int ed_code, const char **api_code)
{
    for (size_t i = 0; i < sizeof(error_table) / sizeof(error_table[0]); i++) {
        if (error_table[i].code == ed_code) {
            if (api_code)
                *api_code = error_table[i].api_code;
            return error_table[i].status;
        }
    }
    if (api_code)
        *api_code = "internal";
    return 500;
}

int gw__respond_error(gw_response *res, gw_request *req, int ed_code, const char *message)
{
    const char *api_code;
    int status = gw__status_for(ed_code, &api_code);
    json_t *body;

    if (status == 500) {
        /* The details stay in the log: a 500 body must not leak internals. */
        ed_log_error("http.internal", "%s %s: %s (%s)", req->method ? req->method : "?",
                     req->path ? req->path : "?", message && *message ? message : "no message",
                     ed_error_name(ed_code));
        message = "internal error; quote the request id when reporting it";
    }
    if (message == NULL || *message == '\0')
        message = api_code;
    body = json_pack("{s:{s:s,s:s,s:s}}", "error", "code", api_code, "message", message,
                     "request_id", req->request_id ? req->request_id : "");
    if (ed_code == ED_ELIMIT && req->retry_after_s > 0) {
        char v[24];
        snprintf(v, sizeof(v), "%d", req->retry_after_s);
        gw_response_header(res, "Retry-After", v);
    } else if (ed_code == ED_ELIMIT) {
        gw_response_header(res, "Retry-After", "1");
    }
    return gw_respond_json(res, status, body);
}
