/*
 * serving/ without replicas: the hub <-> replica frames (every truncation
 * refused, never read past), a model the runtime refuses leaves nothing
 * behind, call charges posted once per batch key (also when a crash left a
 * batch unposted, or posted but unmarked), per-key admission (requests a
 * minute, concurrency, daily budget with calls in flight, the caller's
 * balance), and usage percentiles per day.
 */
#include "serve_int.h"
#include "serve_wire.h"

#include "ed_error.h"
#include "ed_time.h"

#include <check.h>
#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ledger_fixture.h"
#include "unit_util.h"

static serve_hub *hub;

static void setup(void)
{
    serve_config cfg;

    ledger_setup();
    ck_assert_int_eq(serve_config_defaults(&cfg, fixture_dir), 0);
    snprintf(cfg.replica_bin, sizeof(cfg.replica_bin), "/nonexistent/eddy-serve-replica");
    ck_assert_int_eq(serve_hub_open(&hub, st, NULL, &cfg), 0);
}

static void teardown(void)
{
    serve_hub_free(hub);
    hub = NULL;
    ledger_teardown();
}

/* ---- frames ---------------------------------------------------------------- */

START_TEST(tensors_round_trip_and_every_truncation_is_refused)
{
    float a[6] = {1, 2, 3, 4, 5, 6};
    int64_t b[2] = {7, -8};
    serve_tensor in[2] = {{.name = "x", .dtype = FW_FLOAT32, .ndim = 2, .shape = {2, 3}, .data = a, .nbytes = 24},
                          {.name = "ids", .dtype = FW_INT64, .ndim = 1, .shape = {2}, .data = b, .nbytes = 16}};
    serve_tensor out[SERVE_MAX_TENSORS];
    serve_wbuf w = {0};
    char err[128];
    size_t off = 0;
    int n = 0;

    serve__wbuf_tensors(&w, in, 2);
    ck_assert(!w.oom);
    ck_assert_int_eq(serve__decode_tensors(out, &n, SERVE_MAX_TENSORS, w.p, w.len, &off, err, sizeof(err)), 0);
    ck_assert_int_eq(n, 2);
    ck_assert_uint_eq(off, w.len);
    ck_assert_str_eq(out[1].name, "ids");
    ck_assert_int_eq(out[0].shape[1], 3);
    ck_assert_mem_eq(out[0].data, a, sizeof(a));
    ck_assert_mem_eq(out[1].data, b, sizeof(b));
    for (int i = 0; i < n; i++)
        free(out[i].data);
    for (size_t cut = 0; cut < w.len; cut++) {
        off = 0;
        ck_assert_int_eq(serve__decode_tensors(out, &n, SERVE_MAX_TENSORS, w.p, cut, &off, err, sizeof(err)), -1);
        ck_assert_int_eq(n, 0);
    }
    /* more tensors than allowed, and a byte count that disagrees with the shape */
    off = 0;
    ck_assert_int_eq(serve__decode_tensors(out, &n, 1, w.p, w.len, &off, err, sizeof(err)), -1);
    w.p[4 + 2 + 1 + 1 + 1 + 16] ^= 1;   /* x's nbytes */
    off = 0;
    ck_assert_int_eq(serve__decode_tensors(out, &n, SERVE_MAX_TENSORS, w.p, w.len, &off, err, sizeof(err)), -1);
    free(w.p);
}
END_TEST

START_TEST(tensor_sizes_refuse_overflow)
{
    int64_t huge[3] = {1LL << 40, 1LL << 40, 4};
    int64_t neg[1] = {-1};
    int bad;

    ck_assert_uint_eq(serve_tensor_bytes(FW_FLOAT32, 2, (int64_t[]){5, 4}, 1 << 20, &bad), 80);
    ck_assert_int_eq(bad, 0);
    serve_tensor_bytes(FW_FLOAT32, 3, huge, SIZE_MAX, &bad);
    ck_assert_int_eq(bad, 1);
    serve_tensor_bytes(FW_FLOAT32, 1, neg, 1 << 20, &bad);
    ck_assert_int_eq(bad, 1);
    serve_tensor_bytes(FW_FLOAT64, 1, (int64_t[]){1 << 20}, 1 << 20, &bad);
    ck_assert_int_eq(bad, 1);
}
END_TEST

/* ---- models ------------------------------------------------------------------- */

static const char MODEL[] =
    "{\"format\": \"eddy-graph\", \"version\": 1,"
    " \"inputs\": [{\"name\": \"x\", \"dtype\": \"float32\", \"shape\": [-1, 2]}],"
    " \"outputs\": [{\"name\": \"out\", \"value\": \"t0\"}],"
    " \"values\": {\"x\": {\"dtype\": \"float32\", \"shape\": [-1, 2]},"
    "  \"w\": {\"dtype\": \"float32\", \"shape\": [2, 1]}, \"b\": {\"dtype\": \"float32\", \"shape\": [1]},"
    "  \"t0\": {\"dtype\": \"float32\", \"shape\": [-1, 1]}},"
    " \"nodes\": [{\"op\": \"linear\", \"inputs\": [\"x\", \"w\", \"b\"], \"outputs\": [\"t0\"], \"attrs\": {},"
    " \"loc\": \"m.py:1\"}]}";

/* safetensors with b = [0.5], w = [[1], [2]] */
static size_t params(char *out)
{
    const char hdr[] = "{\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
                       "\"w\":{\"dtype\":\"F32\",\"shape\":[2,1],\"data_offsets\":[4,12]}}";
    size_t hl = strlen(hdr), pad = (8 - hl % 8) % 8, n = 0;
    uint64_t len = hl + pad;
    float v[3] = {0.5f, 1.0f, 2.0f};

    memcpy(out, &len, 8);
    n = 8;
    memcpy(out + n, hdr, hl);
    n += hl;
    memset(out + n, ' ', pad);
    n += pad;
    memcpy(out + n, v, sizeof(v));
    return n + sizeof(v);
}

static serve_spec spec(int64_t user, const char *name)
{
    serve_spec s = {.user_id = user, .tier = "free", .name = name, .resource = "cpu-basic", .replicas = 0,
                    .max_batch = 4, .max_delay_ms = 0, .timeout_ms = 1000, .price_mcoins_per_call = 3,
                    .source_json = "{\"project_id\": \"p\", \"path\": \"m\"}"};
    return s;
}

static int models_entries(void)
{
    char path[200];
    DIR *d;
    struct dirent *e;
    int n = 0;

    snprintf(path, sizeof(path), "%s/models", fixture_dir);
    if ((d = opendir(path)) == NULL)
        return 0;
    while ((e = readdir(d)) != NULL)
        n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

START_TEST(a_model_is_validated_and_its_spec_recorded)
{
    int64_t u = add_user("ann", "free");
    char p[256];
    size_t pl = params(p);
    serve_deployment d;
    serve_spec s = spec(u, "lin");

    ck_assert_int_eq(serve_deployment_create(&d, hub, &s, MODEL, strlen(MODEL), p, pl), 0);
    ck_assert_int_eq(d.version, 1);
    ck_assert_str_eq(d.status, "running");
    ck_assert_ptr_nonnull(strstr(d.inputs_json, "[-1,2]"));
    ck_assert_int_eq(models_entries(), 1);
    /* same name again: 409 */
    ck_assert_int_eq(serve_deployment_create(&d, hub, &s, MODEL, strlen(MODEL), p, pl), ED_EEXISTS);
    /* another user cannot see it */
    ck_assert_int_eq(serve_deployment_get(&d, hub, u + 1000, "lin"), ED_ENOTFOUND);
    ck_assert_int_eq(serve_deployment_get(&d, hub, u, "lin"), 0);
}
END_TEST

START_TEST(a_truncated_or_crafted_model_is_refused_and_nothing_is_kept)
{
    int64_t u = add_user("bob", "free");
    char p[256];
    size_t pl = params(p);
    serve_deployment d;
    serve_spec s = spec(u, "bad");
    size_t steps[] = {1, 10, 60, strlen(MODEL) / 2, strlen(MODEL) - 1};

    for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
        ck_assert_int_eq(serve_deployment_create(&d, hub, &s, MODEL, steps[i], p, pl), ED_EUNPROC);
        ck_assert_ptr_nonnull(strstr(ed_error_last(), "model"));
    }
    for (size_t cut = 0; cut < pl; cut += 7)
        ck_assert_int_eq(serve_deployment_create(&d, hub, &s, MODEL, strlen(MODEL), p, cut), ED_EUNPROC);
    /* an op the runtime does not have */
    {
        char crafted[sizeof(MODEL) + 8];
        char *at;
        snprintf(crafted, sizeof(crafted), "%s", MODEL);
        at = strstr(crafted, "\"linear\"");
        memcpy(at, "\"lineaz\"", 8);
        ck_assert_int_eq(serve_deployment_create(&d, hub, &s, crafted, strlen(crafted), p, pl), ED_EUNPROC);
    }
    ck_assert_int_eq(models_entries(), 0);
    ck_assert_int_eq(unit_store_int(st, "SELECT COUNT(*) FROM deployments"), 0);
    /* bad settings */
    s.max_batch = 0;
    ck_assert_int_eq(serve_deployment_create(&d, hub, &s, MODEL, strlen(MODEL), p, pl), ED_EUNPROC);
    s = spec(u, "12");
    ck_assert_int_eq(serve_deployment_create(&d, hub, &s, MODEL, strlen(MODEL), p, pl), ED_EUNPROC);
    s = spec(u, "ok");
    s.kind = "python";
    ck_assert_int_eq(serve_deployment_create(&d, hub, &s, MODEL, strlen(MODEL), p, pl), ED_EUNPROC);
}
END_TEST

/* ---- money ---------------------------------------------------------------------- */

static void log_calls(int64_t dep, int64_t key, int64_t user, int n, int64_t cost)
{
    for (int i = 0; i < n; i++) {
        serve_call_record r = {dep, key, user, 1, 200, 1, 5 + i, cost, NULL};
        ck_assert_int_eq(serve_call_log(hub, &r), 0);
    }
}

static int64_t charged(int64_t user)
{
    char sql[200];
    quota_balance b;
    (void)sql;
    ck_assert_int_eq(quota_balance_get(&b, st, user), 0);
    return 100000 - b.coins_mcoins;
}

START_TEST(calls_are_charged_once_per_batch)
{
    int64_t a = add_user("cat", "free"), b = add_user("dan", "free");
    int posted = 0;

    ck_assert_int_eq(quota_grant(NULL, st, a, 100000, "w", "ga", 0), 0);
    ck_assert_int_eq(quota_grant(NULL, st, b, 100000, "w", "gb", 0), 0);
    log_calls(1, 7, a, 5, 3);
    log_calls(1, 8, b, 2, 3);
    log_calls(1, 8, b, 4, 0);      /* free calls: logged, never batched */
    ck_assert_int_eq(serve_charges_flush(hub, &posted), 0);
    ck_assert_int_eq(posted, 2);
    ck_assert_int_eq(charged(a), 15);
    ck_assert_int_eq(charged(b), 6);
    ck_assert_int_eq(serve_charges_flush(hub, &posted), 0);
    ck_assert_int_eq(posted, 0);
    ck_assert_int_eq(charged(a), 15);
    ck_assert_int_eq(unit_store_int(st, "SELECT COUNT(*) FROM serve_calls WHERE batch_id IS NULL AND cost_mcoins > 0"), 0);

    /* a crash after the charge was posted but before the batch was marked:
     * posting again under the same key charges nothing more */
    ck_assert_int_eq(ed_store_exec(st, "UPDATE serve_batches SET posted_at = NULL, transfer_id = NULL"), 0);
    ck_assert_int_eq(serve_charges_flush(hub, &posted), 0);
    ck_assert_int_eq(posted, 2);
    ck_assert_int_eq(charged(a), 15);
    ck_assert_int_eq(charged(b), 6);
    /* a crash after the batch row, before its charge: posted once, at the next flush */
    log_calls(1, 7, a, 3, 3);
    ck_assert_int_eq(ed_store_exec(st, "INSERT INTO serve_batches (user_id, amount_mcoins, calls, created_at) "
                                       "SELECT user_id, SUM(cost_mcoins), COUNT(*), 0 FROM serve_calls WHERE batch_id IS NULL "
                                       "AND cost_mcoins > 0 GROUP BY user_id"), 0);
    ck_assert_int_eq(ed_store_exec(st, "UPDATE serve_calls SET batch_id = (SELECT MAX(id) FROM serve_batches) "
                                       "WHERE batch_id IS NULL AND cost_mcoins > 0"), 0);
    ck_assert_int_eq(serve_charges_flush(hub, &posted), 0);
    ck_assert_int_eq(posted, 1);
    ck_assert_int_eq(charged(a), 24);
    assert_verified();
}
END_TEST

START_TEST(a_charge_the_balance_cannot_pay_is_kept_and_retried)
{
    int64_t a = add_user("eve", "free");
    int posted = 0;

    log_calls(1, 0, a, 2, 3);
    ck_assert_int_eq(serve_charges_flush(hub, &posted), 0);
    ck_assert_int_eq(posted, 0);
    ck_assert_int_eq(unit_store_int(st, "SELECT COUNT(*) FROM serve_batches WHERE posted_at IS NULL AND last_error IS NOT NULL"), 1);
    ck_assert_int_eq(quota_grant(NULL, st, a, 100000, "w", "ge", 0), 0);
    ck_assert_int_eq(serve_charges_flush(hub, &posted), 0);
    ck_assert_int_eq(posted, 1);
    ck_assert_int_eq(charged(a), 6);
}
END_TEST

/* ---- admission -------------------------------------------------------------------- */

START_TEST(key_limits_requests_a_minute_and_concurrency)
{
    int64_t u = add_user("fay", "free");
    serve_key_limits l = {2, 1, -1};
    int retry = 0;

    ck_assert_int_eq(serve_key_limits_put(hub, 5, u, &l), 0);
    ck_assert_int_eq(serve_call_admit(hub, 5, u, -1, 0, &retry), 0);
    /* one in flight: the second waits */
    ck_assert_int_eq(serve_call_admit(hub, 5, u, -1, 0, &retry), ED_ELIMIT);
    ck_assert_int_eq(retry, 1);
    serve_call_release(hub, 5, u, 0);
    ck_assert_int_eq(serve_call_admit(hub, 5, u, -1, 0, &retry), 0);
    serve_call_release(hub, 5, u, 0);
    /* two a minute */
    ck_assert_int_eq(serve_call_admit(hub, 5, u, -1, 0, &retry), ED_ELIMIT);
    ck_assert_int_ge(retry, 1);
    ck_assert_int_le(retry, 60);
    /* a session (key 0) has no key limits */
    ck_assert_int_eq(serve_call_admit(hub, 0, u, -1, 0, &retry), 0);
}
END_TEST

START_TEST(daily_budget_counts_calls_in_flight_and_logged)
{
    int64_t u = add_user("gil", "free");
    int retry = 0;

    ck_assert_int_eq(quota_grant(NULL, st, u, 100000, "w", "gg", 0), 0);
    /* budget 10 from accounts, price 4: two fit, the third does not, even in flight */
    ck_assert_int_eq(serve_call_admit(hub, 9, u, 10, 4, &retry), 0);
    ck_assert_int_eq(serve_call_admit(hub, 9, u, 10, 4, &retry), 0);
    ck_assert_int_eq(serve_call_admit(hub, 9, u, 10, 4, &retry), ED_EQUOTA);
    log_calls(1, 9, u, 1, 4);
    serve_call_release(hub, 9, u, 4);
    ck_assert_int_eq(serve_call_admit(hub, 9, u, 10, 4, &retry), ED_EQUOTA);
    serve_call_release(hub, 9, u, 4);
    /* a serve limit smaller than the key's budget binds; 0 allows nothing */
    {
        serve_key_limits l = {0, 0, 0};
        ck_assert_int_eq(serve_key_limits_put(hub, 10, u, &l), 0);
        ck_assert_int_eq(serve_call_admit(hub, 10, u, -1, 0, &retry), ED_EQUOTA);
    }
}
END_TEST

START_TEST(the_balance_must_pay_the_call)
{
    int64_t u = add_user("hal", "free");
    int retry = 0;

    ck_assert_int_eq(serve_call_admit(hub, 0, u, -1, 5, &retry), ED_EQUOTA);
    ck_assert_int_eq(serve_call_admit(hub, 0, u, -1, 0, &retry), 0);   /* free calls need no coins */
}
END_TEST


/* ---- replicas (as root: in-process sandbox launches) ---------------------------- */

typedef struct caller {
    serve_hub *h;
    int64_t dep;
    float x;
    int err, batch;
    float y;
} caller;

static void *call_main(void *arg)
{
    caller *c = arg;
    serve_call call;
    float *x = malloc(2 * sizeof(float));

    serve_call_init(&call);
    x[0] = x[1] = c->x;
    call.deployment_id = c->dep;
    call.n_in = 1;
    call.in[0] = (serve_tensor){.name = "x", .dtype = FW_FLOAT32, .ndim = 2, .shape = {1, 2}, .data = x, .nbytes = 8};
    c->err = serve_predict(c->h, &call);
    if (c->err == 0) {
        c->y = ((float *)call.out[0].data)[0];
        c->batch = call.batch_size;
    }
    serve_call_done(&call);
    return NULL;
}

static int wait_ready(int64_t user, const char *name, int version)
{
    serve_deployment d;
    for (int i = 0; i < 300; i++) {
        if (serve_deployment_get(&d, hub, user, name) == 0 && d.replicas_ready >= 1 && d.version == version) {
            /* the old version's replicas drain on the supervisor's next tick */
            return 0;
        }
        usleep(100000);
    }
    return -1;
}

START_TEST(replicas_batch_concurrent_calls_and_roll_to_a_new_version)
{
    int64_t u = add_user("joe", "free");
    char p[256];
    size_t pl = params(p);
    serve_deployment d;
    serve_spec s = spec(u, "live");
    serve_change c;
    caller cs[6];
    pthread_t th[6];
    serve_config cfg;

    if (geteuid() != 0) {
        fprintf(stderr, "SKIP replicas_batch_concurrent_calls_and_roll_to_a_new_version: the sandbox needs root\n");
        return;
    }
    serve_hub_free(hub);
    ck_assert_int_eq(serve_config_defaults(&cfg, fixture_dir), 0);
    snprintf(cfg.replica_bin, sizeof(cfg.replica_bin), "%s", SERVE_REPLICA_BIN);
    ck_assert_int_eq(serve_hub_open(&hub, st, NULL, &cfg), 0);
    s.replicas = 1;
    s.max_batch = 8;
    s.max_delay_ms = 200;
    s.timeout_ms = 20000;
    ck_assert_int_eq(serve_deployment_create(&d, hub, &s, MODEL, strlen(MODEL), p, pl), 0);
    ck_assert_msg(wait_ready(u, "live", 1) == 0, "no replica became ready");
    for (int i = 0; i < 6; i++) {
        cs[i] = (caller){hub, d.id, (float)i, 0, 0, 0};
        ck_assert_int_eq(pthread_create(&th[i], NULL, call_main, &cs[i]), 0);
    }
    for (int i = 0; i < 6; i++) {
        pthread_join(th[i], NULL);
        ck_assert_int_eq(cs[i].err, 0);
        ck_assert_msg(cs[i].y == 3.0f * (float)i + 0.5f, "call %d: %g", i, cs[i].y);   /* x.w + b */
        ck_assert_int_ge(cs[i].batch, 1);
    }
    /* a wrong shape is refused before the replica; the replica still answers */
    {
        serve_call call;
        float *x = malloc(3 * sizeof(float));
        serve_call_init(&call);
        call.deployment_id = d.id;
        call.n_in = 1;
        call.in[0] = (serve_tensor){.name = "x", .dtype = FW_FLOAT32, .ndim = 2, .shape = {1, 3}, .data = x, .nbytes = 12};
        ck_assert_int_eq(serve_predict(hub, &call), ED_EUNPROC);
        serve_call_done(&call);
    }
    /* a new version (b = 1.5): rolled, then answering with it */
    memset(&c, 0, sizeof(c));
    c.replicas = c.max_batch = c.max_delay_ms = c.timeout_ms = -1;
    c.price_mcoins_per_call = -1;
    c.allow_nan = -1;
    {
        float b2 = 1.5f;
        memcpy(p + pl - 12, &b2, 4);
    }
    c.model = MODEL;
    c.model_len = strlen(MODEL);
    c.params = p;
    c.params_len = pl;
    ck_assert_int_eq(serve_deployment_update(&d, hub, u, d.id, &c), 0);
    ck_assert_int_eq(d.version, 2);
    ck_assert_msg(wait_ready(u, "live", 2) == 0, "version 2 never became ready");
    for (int tries = 0; tries < 100; tries++) {
        cs[0] = (caller){hub, d.id, 1.0f, 0, 0, 0};
        call_main(&cs[0]);
        ck_assert_int_eq(cs[0].err, 0);
        if (cs[0].y == 4.5f)
            break;
        ck_assert_msg(cs[0].y == 3.5f, "%g", cs[0].y);
        usleep(100000);
    }
    ck_assert_msg(cs[0].y == 4.5f, "version 2 never answered");
}
END_TEST

/* ---- usage ------------------------------------------------------------------------- */

START_TEST(usage_percentiles_per_day)
{
    int64_t u = add_user("ivy", "free");
    char p[256];
    size_t pl = params(p);
    serve_deployment d;
    serve_spec s = spec(u, "use");
    json_t *a = NULL, *day;

    ck_assert_int_eq(serve_deployment_create(&d, hub, &s, MODEL, strlen(MODEL), p, pl), 0);
    for (int i = 1; i <= 100; i++) {
        serve_call_record r = {d.id, 3, u, 1, i % 10 == 0 ? 422 : 200, 1, i, i % 10 == 0 ? 0 : 2, NULL};
        ck_assert_int_eq(serve_call_log(hub, &r), 0);
    }
    /* refusals are queued without waiting: an answered call after them waits for all (FIFO) */
    {
        serve_call_record r = {d.id + 1000, 0, u, 1, 200, 1, 1, 0, NULL};
        ck_assert_int_eq(serve_call_log(hub, &r), 0);
    }
    ck_assert_int_eq(serve_usage_deployment(&a, hub, u, d.id, 0, ed_now_ms() + 1), 0);
    ck_assert_int_eq(json_array_size(a), 1);
    day = json_array_get(a, 0);
    ck_assert_int_eq(json_integer_value(json_object_get(day, "calls")), 100);
    ck_assert_int_eq(json_integer_value(json_object_get(day, "errors")), 10);
    ck_assert_int_eq(json_integer_value(json_object_get(day, "p50_ms")), 50);
    ck_assert_int_eq(json_integer_value(json_object_get(day, "p95_ms")), 95);
    ck_assert_int_eq(json_integer_value(json_object_get(day, "p99_ms")), 99);
    ck_assert_int_eq(json_integer_value(json_object_get(day, "cost_mcoins")), 180);
    json_decref(a);
    ck_assert_int_eq(serve_usage_deployment(&a, hub, u + 1, d.id, 0, ed_now_ms() + 1), ED_ENOTFOUND);
    ck_assert_int_eq(serve_usage_key(&a, hub, 3, 0, ed_now_ms() + 1), 0);
    ck_assert_int_eq(json_integer_value(json_object_get(json_array_get(a, 0), "calls")), 100);
    json_decref(a);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("serving");
    TCase *tc = tcase_create("core");
    SRunner *sr;
    int failed;

    tcase_set_timeout(tc, 120);
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, tensors_round_trip_and_every_truncation_is_refused);
    tcase_add_test(tc, tensor_sizes_refuse_overflow);
    tcase_add_test(tc, a_model_is_validated_and_its_spec_recorded);
    tcase_add_test(tc, a_truncated_or_crafted_model_is_refused_and_nothing_is_kept);
    tcase_add_test(tc, calls_are_charged_once_per_batch);
    tcase_add_test(tc, a_charge_the_balance_cannot_pay_is_kept_and_retried);
    tcase_add_test(tc, key_limits_requests_a_minute_and_concurrency);
    tcase_add_test(tc, daily_budget_counts_calls_in_flight_and_logged);
    tcase_add_test(tc, the_balance_must_pay_the_call);
    tcase_add_test(tc, usage_percentiles_per_day);
    tcase_add_test(tc, replicas_batch_concurrent_calls_and_roll_to_a_new_version);
    suite_add_tcase(s, tc);
    sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
