/* Every integer field of every route is range-checked by one reader
 * (gw_json_int): a value below the minimum or above the maximum, 2^32 + 2
 * (which a cast to int used to store as 2), 1e12 and 1.5 (reals), "7" (a
 * string), true, and an integer too large for 64 bits are all 422 naming the
 * field, and nothing changes. Issue 11 item 10:
 * PUT /api/v1/admin/tiers/free {"max_kernels":4294967298} answered 200 and
 * stored 2. */
#include "harness.h"
#include "it_db.h"

#include <check.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static it_server S;
static char admin_cookie[512], admin_csrf[256];

static void start(void)
{
    char dir[64];

    ck_assert_int_eq(it_admin_server_start(&S, dir, sizeof(dir), "ranges", NULL, admin_cookie, sizeof(admin_cookie),
                                           admin_csrf, sizeof(admin_csrf)),
                     0);
    S.keep_data = 0;   /* it_server_stop removes the temporary parent */
}

/* One integer field of one route: the body is `prefix` + "\"field\": VALUE" + `suffix`. */
typedef struct field_case {
    const char *method, *path;
    const char *prefix, *suffix;   /* around the member, e.g. "{\"reason\":\"x\", " and "}" */
    const char *field;             /* its name as the 422 message gives it */
    int64_t     min, max;
} field_case;

static long send(const char *method, const char *path, const char *body, char **msg)
{
    const char *h[] = {admin_cookie, admin_csrf, NULL};
    it_resp r;
    long st;

    it_request(&r, &S, method, path, body, h);
    st = r.status;
    if (msg)
        *msg = strdup(r.body ? r.body : "");
    it_resp_free(&r);
    return st;
}

static void check_field(const field_case *c)
{
    char vals[8][48];
    int nv = 0;
    char body[512], *msg;

    snprintf(vals[nv++], sizeof(vals[0]), "%" PRId64, c->min - 1);
    if (c->max < INT64_MAX)
        snprintf(vals[nv++], sizeof(vals[0]), "%" PRId64, c->max + 1);
    if (c->max < INT64_C(4294967298))
        snprintf(vals[nv++], sizeof(vals[0]), "4294967298");                    /* 2^32 + 2 */
    snprintf(vals[nv++], sizeof(vals[0]), "1e12");
    snprintf(vals[nv++], sizeof(vals[0]), "1.5");
    snprintf(vals[nv++], sizeof(vals[0]), "\"7\"");
    snprintf(vals[nv++], sizeof(vals[0]), "true");
    snprintf(vals[nv++], sizeof(vals[0]), "123456789012345678901234567890");   /* beyond 64 bits */
    for (int i = 0; i < nv; i++) {
        const char *leaf = strrchr(c->field, '.') ? strrchr(c->field, '.') + 1 : c->field;
        long st;
        snprintf(body, sizeof(body), "%s\"%s\": %s%s", c->prefix, leaf, vals[i], c->suffix);
        st = send(c->method, c->path, body, &msg);
        ck_assert_msg(st == 422, "%s %s %s: %ld %s", c->method, c->path, body, st, msg);
        ck_assert_msg(strstr(msg, "unprocessable") != NULL, "%s: %s", body, msg);
        ck_assert_msg(strstr(msg, leaf) != NULL, "%s: the message names the field: %s", body, msg);
        free(msg);
    }
}

static long long tier_int(const char *tier, const char *field)
{
    const char *h[] = {admin_cookie, NULL};
    long long v = -1;
    it_resp r;

    it_request(&r, &S, "GET", "/api/v1/tiers", NULL, h);
    ck_assert_int_eq(r.status, 200);
    json_t *items = json_object_get(r.json, "items");
    for (size_t i = 0; i < json_array_size(items); i++)
        if (strcmp(json_string_value(json_object_get(json_array_get(items, i), "name")), tier) == 0)
            v = json_integer_value(json_object_get(json_array_get(items, i), field));
    it_resp_free(&r);
    return v;
}

START_TEST(max_kernels_beyond_int_is_422_and_stores_nothing)
{
    char *msg;

    start();
    ck_assert_int_eq(tier_int("free", "max_kernels"), 1);
    /* the report: 200 and 2 stored */
    ck_assert_int_eq(send("PUT", "/api/v1/admin/tiers/free", "{\"max_kernels\":4294967298}", &msg), 422);
    ck_assert_ptr_nonnull(strstr(msg, "max_kernels"));
    free(msg);
    /* the report: 10^12 silently ignored */
    ck_assert_int_eq(send("PUT", "/api/v1/admin/tiers/free", "{\"max_kernels\":1000000000000}", NULL), 422);
    ck_assert_int_eq(tier_int("free", "max_kernels"), 1);
    /* one bad field refuses the whole body: the good one is not applied */
    ck_assert_int_eq(send("PUT", "/api/v1/admin/tiers/free", "{\"max_kernels\":3, \"weight\":0}", NULL), 422);
    ck_assert_int_eq(tier_int("free", "max_kernels"), 1);
    /* in range: stored as sent */
    ck_assert_int_eq(send("PUT", "/api/v1/admin/tiers/free", "{\"max_kernels\":1000}", NULL), 200);
    ck_assert_int_eq(tier_int("free", "max_kernels"), 1000);
    ck_assert_int_eq(send("PUT", "/api/v1/admin/tiers/free", "{\"max_kernels\":0}", NULL), 200);
    ck_assert_int_eq(tier_int("free", "max_kernels"), 0);
    ck_assert_int_eq(it_server_stop(&S), 0);
}
END_TEST

START_TEST(every_integer_field_of_every_route_is_range_checked)
{
    static const char key_pre[] = "{\"name\":\"k\",\"env\":\"prod\",\"scopes\":[\"read\"], ";
    static const char job_pre[] = "{\"project_id\":\"p1\",\"entry\":\"train.py\",\"resource\":\"cpu-basic\", ";
    char grants[64];
    int64_t uid;

    start();
    uid = it_db_int(&S, "SELECT id FROM users WHERE username = 'root'");
    snprintf(grants, sizeof(grants), "/api/v1/admin/users/%lld/grants", (long long)uid);
    const field_case cases[] = {
        {"PUT", "/api/v1/admin/tiers/free", "{", "}", "max_kernels", 0, 1000},
        {"PUT", "/api/v1/admin/tiers/free", "{", "}", "max_gpus_per_job", 0, 64},
        {"PUT", "/api/v1/admin/tiers/free", "{", "}", "weight", 1, 1000},
        {"PUT", "/api/v1/admin/tiers/free", "{", "}", "max_session_ms", 1000, INT64_C(2592000000)},
        {"PUT", "/api/v1/admin/tiers/free", "{", "}", "idle_timeout_ms", 1000, INT64_C(2592000000)},
        {"PUT", "/api/v1/admin/tiers/free", "{", "}", "overdraft_mcoins", 0, INT64_C(1000000000000)},
        {"PUT", "/api/v1/admin/tiers/free", "{", "}", "free_gpu_ms_per_day", 0, 86400000},
        {"PUT", "/api/v1/admin/tiers/free", "{\"free_ms_per_day\":{", "}}", "free_ms_per_day.cpu-basic", -1,
         86400000},
        {"PUT", "/api/v1/admin/tiers/free", "{\"key_envs\":{\"dev\":{", "}}}", "key_envs.dev.rate_limit_per_min",
         0, 1000000},
        {"PUT", "/api/v1/admin/tiers/free", "{\"key_envs\":{\"prod\":{", "}}}",
         "key_envs.prod.daily_budget_mcoins", -1, INT64_C(1000000000000000)},
        {"PUT", "/api/v1/admin/resources/cpu-basic", "{", "}", "cpus", 0, 1024},
        {"PUT", "/api/v1/admin/resources/cpu-basic", "{", "}", "memory_mb", 0, 16 * 1024 * 1024},
        {"PUT", "/api/v1/admin/resources/cpu-basic", "{", "}", "price_mcoins_per_hour", 0, 1000000000},
        {"PUT", "/api/v1/admin/resources/cpu-basic", "{", "}", "capacity", 0, 100000},
        {"PUT", "/api/v1/admin/resources/cpu-basic", "{", "}", "gpus", 0, 1},
        {"POST", grants, "{\"reason\":\"x\", ", "}", "amount_mcoins", 1, INT64_C(1000000000000000)},
        {"POST", "/api/v1/keys", key_pre, "}", "expires_in_days", 1, 3650},
        {"POST", "/api/v1/keys", key_pre, "}", "daily_budget_mcoins", 0, INT64_C(1000000000000000)},
        {"POST", "/api/v1/keys", key_pre, "}", "rate_limit_per_min", 1, 1000000},
        {"POST", "/api/v1/jobs", job_pre, "}", "gpus", 0, 64},
        {"POST", "/api/v1/jobs", job_pre, "}", "max_runtime_s", 0, 2592000},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        check_field(&cases[i]);
    /* nothing was written by any of them */
    ck_assert_int_eq(it_db_int(&S, "SELECT count(*) FROM api_keys"), 0);
    ck_assert_int_eq(it_db_int(&S, "SELECT count(*) FROM ledger_transfers WHERE kind = 'grant'"), 0);
    ck_assert_int_eq(it_db_int(&S, "SELECT count(*) FROM jobs"), 0);
    ck_assert_int_eq(it_db_int(&S, "SELECT max_kernels FROM tiers WHERE name = 'free'"), 1);
    ck_assert_int_eq(it_db_int(&S, "SELECT rate_limit_per_min FROM tier_key_envs WHERE tier = 'free' AND env = 'dev'"),
                     0);
    ck_assert_int_eq(it_db_int(&S, "SELECT price_mcoins_per_hour > 0 FROM sched_resources WHERE name = 'cpu-basic'"), 1);
    ck_assert_int_eq(it_db_int(&S, "SELECT count(*) FROM audit WHERE action IN ('tier.update', 'resource.update')"),
                     0);
    ck_assert_int_eq(it_server_stop(&S), 0);
}
END_TEST

int main(void)
{
    const TTest *tests[] = {max_kernels_beyond_int_is_422_and_stores_nothing,
                            every_integer_field_of_every_route_is_range_checked, NULL};
    return it_tests_run("ranges", 120, NULL, NULL, tests);
}
