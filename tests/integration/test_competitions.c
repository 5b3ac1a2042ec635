/* Competitions end to end against the real `eddy serve` (issue 16's "Done
 * means", CSV submissions): an admin makes a host; the host makes a dataset
 * version over the datasets routes, creates a competition on it and puts a
 * 2,000,000-row ground truth holding a canary label; two teams accept the
 * rules and submit CSVs (good, invalid: not counted), one from a project's
 * tree; 20 concurrent submissions against a daily cap of 5 accept exactly
 * 5; the server is killed (SIGKILL) while submissions are being scored and
 * restarted: every submission reaches a final state; the host closes the
 * competition (end_at moved through PUT); both leaderboards are checked (the
 * private one refused before the end, then ranking the selected
 * submissions); the canary is in no response body of the whole test and in
 * no server log; the ledger is unchanged (CSV scoring is free). And the bad
 * input: unknown competition 404, non-host create 403, a contradictory
 * configuration 422 naming the fields, a submission before the rules are
 * accepted 403, an oversize body 413. */
#include "harness.h"

#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define CANARY      "CANARY-7f3a9c1e-d00d-4bad-b0b1-c0ffee5eed42"
#define TRUTH_ROWS  2000000
#define CANARY_ROW  777777

static it_server srv;
static char dir[256], admin_cookie[600], admin_csrf[300];
static const char *const env[] = {"EDDY_COMP_WATCHDOG_MS=500", NULL};

/* Every response body of the test, for the canary. */
static pthread_mutex_t seen_mu = PTHREAD_MUTEX_INITIALIZER;
static char *seen;
static size_t seen_len, seen_cap;

static void remember(const it_resp *r)
{
    pthread_mutex_lock(&seen_mu);
    if (seen_len + r->body_len + 2 > seen_cap) {
        seen_cap = (seen_len + r->body_len + 2) * 2;
        seen = realloc(seen, seen_cap);
        ck_assert_ptr_nonnull(seen);
    }
    memcpy(seen + seen_len, r->body, r->body_len);
    seen_len += r->body_len;
    seen[seen_len++] = '\n';
    pthread_mutex_unlock(&seen_mu);
}

/* One request as the caller of `hdrs` (NULL: anonymous); len < 0: strlen.
 * The body is kept for the canary check. */
static long call(it_resp *r, const char *const *hdrs, const char *method, const char *body, long len,
                 const char *fmt, ...) __attribute__((format(printf, 6, 7)));
static long call(it_resp *r, const char *const *hdrs, const char *method, const char *body, long len,
                 const char *fmt, ...)
{
    char path[1024];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(path, sizeof(path), fmt, ap);
    va_end(ap);
    ck_assert_int_eq(it_request_n(r, &srv, method, path, body, len, hdrs), 0);
    remember(r);
    return r->status;
}

#define STATUS(...)                                                                                \
    ({                                                                                             \
        it_resp r_;                                                                                \
        long s_ = call(&r_, __VA_ARGS__);                                                          \
        it_resp_free(&r_);                                                                         \
        s_;                                                                                        \
    })

/* A CSV body's headers for user `u`: Content-Type first (the harness's rule). */
static void csv_hdrs(const char *h[4], const it_user *u)
{
    h[0] = "Content-Type: text/csv";
    h[1] = u->cookie;
    h[2] = u->csrf;
    h[3] = NULL;
}

/* RFC 3339 for now + `ms_ahead`. */
static const char *at(char *buf, size_t n, int64_t ms_ahead)
{
    struct timeval tv;
    struct tm tm;
    int64_t ms;
    time_t t;

    gettimeofday(&tv, NULL);
    ms = (int64_t)tv.tv_sec * 1000 + tv.tv_usec / 1000 + ms_ahead;
    t = (time_t)(ms / 1000);
    gmtime_r(&t, &tm);
    strftime(buf, n, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(buf + strlen(buf), n - strlen(buf), ".%03dZ", (int)(ms % 1000));
    return buf;
}

static void setup(void)
{
    ck_assert_int_eq(it_admin_server_start(&srv, dir, sizeof(dir), "comp", env, admin_cookie,
                                           sizeof(admin_cookie), admin_csrf, sizeof(admin_csrf)),
                     0);
}

static void teardown(void)
{
    ck_assert_int_eq(it_server_stop(&srv), 0);
    ck_assert_int_eq(it_dir_remove(dir), 0);
    free(seen);
    seen = NULL;
    seen_len = seen_cap = 0;
}

/* A CSV of `rows` rows "id,label": label(i) gives each row's label. */
typedef const char *(*label_fn)(long i);

static char *csv(size_t *len, long rows, label_fn label)
{
    size_t cap = (size_t)rows * 24 + 64, n = 0;
    char *b = malloc(cap);

    ck_assert_ptr_nonnull(b);
    n += (size_t)snprintf(b, cap, "id,label\n");
    for (long i = 0; i < rows; i++)
        n += (size_t)snprintf(b + n, cap - n, "%ld,%s\n", i, label(i));
    *len = n;
    return b;
}

static const char *truth_label(long i) { return i == CANARY_ROW ? CANARY : (i % 3 ? "cat" : "dog"); }
static const char *good_label(long i) { return i % 3 ? "cat" : "dog"; }         /* all but the canary row */
static const char *half_label(long i) { return i % 2 ? "cat" : "dog"; }         /* about half right */

/* The host: signed up, made a host by the admin. */
static void make_host(it_user *host)
{
    const char *ah[] = {admin_cookie, admin_csrf, NULL};
    char body[128];

    ck_assert_int_eq(it_user_make(host, &srv, admin_cookie, admin_csrf, "hoster", 0), 0);
    /* not a host yet */
    ck_assert_int_eq(STATUS(host->hdrs, "POST", "{\"title\":\"x\"}", -1, "/api/v1/competitions"), 403);
    /* only an admin makes hosts */
    snprintf(body, sizeof(body), "{\"user_id\":%lld}", (long long)host->id);
    ck_assert_int_eq(STATUS(host->hdrs, "POST", body, -1, "/api/v1/admin/hosts"), 403);
    ck_assert_int_eq(STATUS(ah, "POST", body, -1, "/api/v1/admin/hosts"), 201);
}

/* A dataset with one version, made over the datasets routes: its id. */
static void make_dataset(char *id, size_t n, it_user *host)
{
    const char *sample = "id,pixel0\n0,12\n1,200\n";
    it_resp r;

    ck_assert_int_eq(call(&r, host->hdrs, "POST", "{\"name\":\"Pets data\",\"visibility\":\"public\"}", -1, "/api/v1/datasets"), 201);
    snprintf(id, n, "%s", it_json_str(r.json, "id"));
    it_resp_free(&r);
    ck_assert_int_eq(STATUS(host->hdrs, "PUT", sample, -1, "/api/v1/datasets/%s/draft/files/test.csv", id), 200);
    ck_assert_int_eq(STATUS(host->hdrs, "POST", "{\"message\":\"v1\"}", -1, "/api/v1/datasets/%s/versions", id),
                     201);
}

/* Create a competition as `host`: start far ahead (the truth goes in
 * before the start), its id into `cid`. */
static void make_competition(char *cid, size_t n, it_user *host, const char *slug, const char *dsid, int cap)
{
    char body[2048], s[64], e[64];
    it_resp r;

    snprintf(body, sizeof(body),
             "{\"title\":\"Pets %s\",\"slug\":\"%s\",\"overview\":\"# Pets\",\"rules\":\"Be nice.\","
             "\"start_at\":\"%s\",\"end_at\":\"%s\",\"dataset\":{\"dataset_id\":\"%s\",\"version\":1},"
             "\"id_column\":\"id\",\"target_columns\":[\"label\"],\"metric\":\"accuracy\","
             "\"public_fraction\":0.5,\"daily_cap\":%d,\"total_cap\":50,\"max_team_size\":3,"
             "\"leaderboard\":\"public\"}",
             slug, slug, at(s, sizeof(s), 3600 * 1000), at(e, sizeof(e), 7200 * 1000), dsid, cap);
    ck_assert_int_eq(call(&r, host->hdrs, "POST", body, -1, "/api/v1/competitions"), 201);
    snprintf(cid, n, "%s", it_json_str(r.json, "id"));
    ck_assert_str_eq(it_json_str(r.json, "leaderboard"), "public");
    it_resp_free(&r);
}

/* Move the start to now + `ms` and wait past it. */
static void start_now(it_user *host, const char *cid, int ms)
{
    char body[160], s[64];

    snprintf(body, sizeof(body), "{\"start_at\":\"%s\"}", at(s, sizeof(s), ms));
    ck_assert_int_eq(STATUS(host->hdrs, "PUT", body, -1, "/api/v1/competitions/%s", cid), 200);
    usleep((useconds_t)(ms + 300) * 1000);
}

/* POST a CSV as `u`: the status; the submission's id into `sid` (may be NULL). */
static long submit(char *sid, it_user *u, const char *cid, const char *body, size_t len)
{
    const char *h[4];
    it_resp r;
    long st;

    csv_hdrs(h, u);
    st = call(&r, h, "POST", body, (long)len, "/api/v1/competitions/%s/submissions", cid);
    if (sid)
        snprintf(sid, 40, "%s", st == 201 ? it_json_str(r.json, "id") : "");
    if (st == 201)
        ck_assert_str_eq(it_json_str(r.json, "status"), "queued");
    it_resp_free(&r);
    return st;
}

/* Wait (at most max_s) until submission `sid` is in a final state: it. */
static json_t *final_state(it_user *u, const char *cid, const char *sid, int max_s)
{
    for (int i = 0; i < max_s * 10; i++) {
        it_resp r;
        const char *st;
        ck_assert_int_eq(call(&r, u->hdrs, "GET", NULL, 0, "/api/v1/competitions/%s/submissions/%s", cid, sid),
                         200);
        st = it_json_str(r.json, "status");
        if (strcmp(st, "scored") == 0 || strcmp(st, "invalid") == 0 || strcmp(st, "failed") == 0) {
            json_t *o = json_incref(r.json);
            it_resp_free(&r);
            return o;
        }
        it_resp_free(&r);
        usleep(100000);
    }
    ck_abort_msg("submission %s did not reach a final state within %d s", sid, max_s);
    return NULL;
}

/* ---- 20 concurrent submissions against a daily cap of 5 ---------------- */

typedef struct racer {
    it_user *u;
    const char *cid;
    const char *body;
    size_t len;
    long status;
    char code[32];
} racer;

static void *race(void *arg)
{
    racer *x = arg;
    const char *h[4];
    char path[200];
    it_resp r;

    csv_hdrs(h, x->u);
    snprintf(path, sizeof(path), "/api/v1/competitions/%s/submissions", x->cid);
    if (it_request_n(&r, &srv, "POST", path, x->body, (long)x->len, h) == 0) {
        x->status = r.status;
        snprintf(x->code, sizeof(x->code), "%s", it_resp_error_code(&r) ? it_resp_error_code(&r) : "");
        remember(&r);
        it_resp_free(&r);
    }
    return NULL;
}

/* ---- the canary ---------------------------------------------------------- */

static bool file_has(const char *path, const char *needle)
{
    FILE *f = fopen(path, "rb");
    char *b = NULL;
    size_t n = 0, cap = 0, got;
    bool found;

    if (f == NULL)
        return false;
    do {
        if (n + 65536 > cap) {
            cap = (n + 65536) * 2;
            b = realloc(b, cap);
            ck_assert_ptr_nonnull(b);
        }
        got = fread(b + n, 1, 65536, f);
        n += got;
    } while (got > 0);
    fclose(f);
    found = b != NULL && memmem(b, n, needle, strlen(needle)) != NULL;
    free(b);
    return found;
}

static json_t *ledger_of(it_user *u)
{
    it_resp r;
    json_t *items;

    ck_assert_int_eq(call(&r, u->hdrs, "GET", NULL, 0, "/api/v1/ledger"), 200);
    items = json_incref(json_object_get(r.json, "items"));
    it_resp_free(&r);
    ck_assert_ptr_nonnull(items);
    return items;
}

START_TEST(end_to_end)
{
    it_user host, one, two;
    char dsid[64], cid[64], capid[64], pid[64], g1[40], g2[40], g3[40], h1[40], h2[40], bad[40];
    char body[1024], e[64];
    const char *h[4];
    size_t tlen, glen, hlen;
    char *truth, *good, *half;
    json_t *o, *ledger1, *ledger2, *l;
    it_resp r;

    make_host(&host);
    ck_assert_int_eq(it_user_make(&one, &srv, admin_cookie, admin_csrf, "uno", 5000), 0);
    ck_assert_int_eq(it_user_make(&two, &srv, admin_cookie, admin_csrf, "dos", 5000), 0);
    ledger1 = ledger_of(&one);
    ledger2 = ledger_of(&two);
    make_dataset(dsid, sizeof(dsid), &host);
    make_competition(cid, sizeof(cid), &host, "pets", dsid, 5);

    /* the truth: 2,000,000 rows, one of them the canary's; a participant may not put it */
    truth = csv(&tlen, TRUTH_ROWS, truth_label);
    csv_hdrs(h, &one);
    ck_assert_int_eq(STATUS(h, "PUT", truth, (long)tlen, "/api/v1/competitions/%s/truth", cid), 403);
    csv_hdrs(h, &host);
    ck_assert_int_eq(call(&r, h, "PUT", truth, (long)tlen, "/api/v1/competitions/%s/truth", cid), 200);
    ck_assert_int_eq(json_integer_value(json_object_get(r.json, "rows")), TRUTH_ROWS);
    it_resp_free(&r);
    free(truth);
    start_now(&host, cid, 1500);

    /* the rules first (403), then team one is a named team of one */
    good = csv(&glen, TRUTH_ROWS, good_label);
    half = csv(&hlen, TRUTH_ROWS, half_label);
    ck_assert_int_eq(submit(NULL, &one, cid, good, glen), 403);
    ck_assert_int_eq(STATUS(one.hdrs, "POST", "{\"name\":\"team one\"}", -1, "/api/v1/competitions/%s/teams", cid),
                     403);
    ck_assert_int_eq(STATUS(one.hdrs, "POST", NULL, 0, "/api/v1/competitions/%s/accept-rules", cid), 200);
    ck_assert_int_eq(STATUS(two.hdrs, "POST", NULL, 0, "/api/v1/competitions/%s/accept-rules", cid), 200);
    ck_assert_int_eq(STATUS(one.hdrs, "POST", "{\"name\":\"team one\"}", -1, "/api/v1/competitions/%s/teams", cid),
                     201);

    /* an invalid submission (ids missing) does not count */
    ck_assert_int_eq(submit(bad, &one, cid, "id,label\n1,cat\n", 15), 201);
    o = final_state(&one, cid, bad, 60);
    ck_assert_str_eq(json_string_value(json_object_get(o, "status")), "invalid");
    ck_assert(json_is_false(json_object_get(o, "counted")));
    ck_assert_str_ne(json_string_value(json_object_get(json_object_get(o, "error"), "message")), "");
    json_decref(o);

    /* good ones from both teams, back to back; then kill -9 while they are being scored */
    ck_assert_int_eq(submit(g1, &one, cid, good, glen), 201);
    ck_assert_int_eq(submit(h1, &two, cid, half, hlen), 201);
    ck_assert_int_eq(submit(g2, &one, cid, good, glen), 201);
    ck_assert_int_eq(submit(h2, &two, cid, half, hlen), 201);
    ck_assert_int_eq(submit(g3, &one, cid, good, glen), 201);
    {
        int inflight = 0;
        ck_assert_int_eq(call(&r, host.hdrs, "GET", NULL, 0, "/api/v1/competitions/%s/submissions?all=1", cid), 200);
        l = json_object_get(r.json, "items");
        for (size_t i = 0; i < json_array_size(l); i++) {
            const char *st = it_json_str(json_array_get(l, i), "status");
            inflight += strcmp(st, "queued") == 0 || strcmp(st, "validating") == 0;
        }
        it_resp_free(&r);
        kill(srv.pid, SIGKILL);
        waitpid(srv.pid, NULL, 0);
        srv.pid = 0;
        ck_assert_msg(inflight >= 1, "nothing was in flight at the kill: make the truth larger");
        fprintf(stderr, "killed with %d submissions in flight\n", inflight);
    }
    {
        char data[300];
        snprintf(data, sizeof(data), "%s", srv.data_dir);
        ck_assert_int_eq(it_server_start_in(&srv, data, env), 0);
    }
    /* the sessions live in the store: the same cookies work */
    {
        const char *sids[] = {g1, h1, g2, h2, g3};
        for (int i = 0; i < 5; i++) {
            it_user *u = i == 1 || i == 3 ? &two : &one;
            o = final_state(u, cid, sids[i], 120);
            ck_assert_msg(strcmp(it_json_str(o, "status"), "scored") == 0, "%s is %s", sids[i],
                          it_json_str(o, "status"));
            json_decref(o);
        }
    }

    /* a team counts its submissions: 3 counted (the invalid one is not) */
    ck_assert_int_eq(call(&r, one.hdrs, "GET", NULL, 0, "/api/v1/competitions/%s/teams/mine", cid), 200);
    ck_assert_int_eq(json_integer_value(json_object_get(r.json, "submissions")), 3);
    it_resp_free(&r);

    /* caps: a second competition with a small truth, daily cap 5, 20 at once */
    make_competition(capid, sizeof(capid), &host, "pets-caps", dsid, 5);
    {
        size_t slen, sl2;
        char *small = csv(&slen, 100, good_label), *small_truth = csv(&sl2, 100, truth_label);
        racer x[20];
        pthread_t t[20];
        int ok = 0, limited = 0;
        csv_hdrs(h, &host);
        ck_assert_int_eq(STATUS(h, "PUT", small_truth, (long)sl2, "/api/v1/competitions/%s/truth", capid), 200);
        start_now(&host, capid, 1000);
        ck_assert_int_eq(STATUS(one.hdrs, "POST", NULL, 0, "/api/v1/competitions/%s/accept-rules", capid), 200);
        for (int i = 0; i < 20; i++) {
            x[i] = (racer){.u = &one, .cid = capid, .body = small, .len = slen};
            ck_assert_int_eq(pthread_create(&t[i], NULL, race, &x[i]), 0);
        }
        for (int i = 0; i < 20; i++) {
            pthread_join(t[i], NULL);
            ok += x[i].status == 201;
            limited += x[i].status == 429 && strcmp(x[i].code, "rate_limited") == 0;
        }
        ck_assert_int_eq(ok, 5);
        ck_assert_int_eq(limited, 15);
        /* past the cap: 429 saying when it resets */
        csv_hdrs(h, &one);
        ck_assert_int_eq(call(&r, h, "POST", small, (long)slen, "/api/v1/competitions/%s/submissions", capid), 429);
        ck_assert_ptr_nonnull(strstr(r.body, "00:00 UTC"));
        it_resp_free(&r);

        /* a submission from a file in the participant's project */
        ck_assert_int_eq(STATUS(two.hdrs, "POST", NULL, 0, "/api/v1/competitions/%s/accept-rules", capid), 200);
        small[slen] = '\0';
        ck_assert_int_eq(it_project_make(pid, sizeof(pid), &srv, two.hdrs, "pets-work", "out/sub.csv", small), 0);
        snprintf(body, sizeof(body), "{\"project_id\":\"%s\",\"path\":\"../../sub.csv\"}", pid);
        {
            long st = STATUS(two.hdrs, "POST", body, -1, "/api/v1/competitions/%s/submissions", capid);
            ck_assert_msg(st == 404 || st == 422, "a path out of the tree answered %ld", st);
        }
        snprintf(body, sizeof(body), "{\"project_id\":\"%s\",\"path\":\"out/sub.csv\"}", pid);
        ck_assert_int_eq(call(&r, two.hdrs, "POST", body, -1, "/api/v1/competitions/%s/submissions", capid), 201);
        {
            char psid[40];
            snprintf(psid, sizeof(psid), "%s", it_json_str(r.json, "id"));
            it_resp_free(&r);
            o = final_state(&two, capid, psid, 60);
            ck_assert_str_eq(it_json_str(o, "status"), "scored");
            json_decref(o);
        }
        free(small);
        free(small_truth);
    }

    /* before the end: no private board, no private score, for anyone */
    ck_assert_int_eq(STATUS(one.hdrs, "GET", NULL, 0, "/api/v1/competitions/%s/leaderboard?board=private", cid), 403);
    ck_assert_int_eq(STATUS(host.hdrs, "GET", NULL, 0, "/api/v1/competitions/%s/leaderboard?board=private", cid),
                     403);
    ck_assert_int_eq(STATUS(one.hdrs, "GET", NULL, 0, "/api/v1/competitions/%s/submissions/%s/private", cid, g2), 403);
    ck_assert_int_eq(call(&r, two.hdrs, "GET", NULL, 0, "/api/v1/competitions/%s/leaderboard", cid), 200);
    l = json_object_get(r.json, "items");
    ck_assert_int_eq(json_array_size(l), 2);
    ck_assert_str_eq(it_json_str(json_array_get(l, 0), "team"), "team one");
    ck_assert_int_eq(json_integer_value(json_object_get(json_array_get(l, 0), "rank")), 1);
    it_resp_free(&r);

    /* team one selects its second good submission */
    snprintf(body, sizeof(body), "{\"ids\":[\"%s\"]}", g2);
    ck_assert_int_eq(STATUS(one.hdrs, "POST", body, -1, "/api/v1/competitions/%s/submissions/select", cid), 200);

    /* the host closes the competition */
    snprintf(body, sizeof(body), "{\"end_at\":\"%s\"}", at(e, sizeof(e), 1500));
    ck_assert_int_eq(STATUS(one.hdrs, "PUT", body, -1, "/api/v1/competitions/%s", cid), 403);
    ck_assert_int_eq(STATUS(host.hdrs, "PUT", body, -1, "/api/v1/competitions/%s", cid), 200);
    usleep(1800 * 1000);
    ck_assert_int_eq(submit(NULL, &one, cid, good, glen), 409);

    /* both boards after the end */
    ck_assert_int_eq(call(&r, two.hdrs, "GET", NULL, 0, "/api/v1/competitions/%s/leaderboard?board=private", cid),
                     200);
    l = json_object_get(r.json, "items");
    ck_assert_int_eq(json_array_size(l), 2);
    ck_assert_str_eq(it_json_str(json_array_get(l, 0), "team"), "team one");
    ck_assert_str_eq(it_json_str(json_array_get(l, 0), "submission_id"), g2);
    ck_assert_int_eq(json_integer_value(json_object_get(json_array_get(l, 0), "rank")), 1);
    ck_assert_int_eq(json_integer_value(json_object_get(json_array_get(l, 1), "rank")), 2);
    ck_assert(json_real_value(json_object_get(json_array_get(l, 0), "score")) > 0.99);
    ck_assert(json_real_value(json_object_get(json_array_get(l, 1), "score")) < 0.9);
    it_resp_free(&r);
    ck_assert_int_eq(call(&r, one.hdrs, "GET", NULL, 0, "/api/v1/competitions/%s/leaderboard?board=public&limit=1",
                          cid),
                     200);
    ck_assert_int_eq(json_array_size(json_object_get(r.json, "items")), 1);
    ck_assert_int_eq(json_integer_value(json_object_get(r.json, "total")), 2);
    ck_assert_str_eq(it_json_str(r.json, "next_cursor"), "1");
    it_resp_free(&r);
    ck_assert_int_eq(STATUS(one.hdrs, "GET", NULL, 0, "/api/v1/competitions/%s/submissions/%s/private", cid, g2), 200);

    /* the ledger: free CSV scoring moved nothing */
    {
        json_t *after1 = ledger_of(&one), *after2 = ledger_of(&two);
        ck_assert(json_equal(after1, ledger1));
        ck_assert(json_equal(after2, ledger2));
        json_decref(after1);
        json_decref(after2);
    }
    json_decref(ledger1);
    json_decref(ledger2);

    /* the canary: in no response of the whole test, in no server log */
    pthread_mutex_lock(&seen_mu);
    ck_assert_msg(memmem(seen, seen_len, CANARY, strlen(CANARY)) == NULL, "the canary was in a response");
    ck_assert_msg(seen_len > 10000, "the responses were kept");
    pthread_mutex_unlock(&seen_mu);
    ck_assert_msg(!file_has(srv.log_path, CANARY), "the canary is in the server's log %s", srv.log_path);
    ck_assert_msg(file_has(srv.log_path, "listening on"), "the log was read");
    free(good);
    free(half);
}
END_TEST

/* An HTTP request head with a Content-Length past the limit, over a raw
 * socket (nothing is sent after it): the status line's code. */
static int oversize(const it_user *u, const char *cid, long long len)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)srv.port)};
    char req[2048], resp[512] = "";
    int fd = socket(AF_INET, SOCK_STREAM, 0), code = 0;
    ssize_t n;

    inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    snprintf(req, sizeof(req),
             "POST /api/v1/competitions/%s/submissions HTTP/1.1\r\nHost: 127.0.0.1\r\n%s\r\n%s\r\n"
             "Content-Type: text/csv\r\nContent-Length: %lld\r\n\r\n",
             cid, u->cookie, u->csrf, len);
    ck_assert_int_eq(write(fd, req, strlen(req)), (ssize_t)strlen(req));
    n = read(fd, resp, sizeof(resp) - 1);
    close(fd);
    if (n > 12)
        sscanf(resp, "HTTP/1.%*d %d", &code);
    return code;
}

START_TEST(bad_input)
{
    it_user host, one;
    char dsid[64], cid[64], body[2048], s[40], e[40];
    it_resp r;

    make_host(&host);
    ck_assert_int_eq(it_user_make(&one, &srv, admin_cookie, admin_csrf, "uno", 0), 0);
    make_dataset(dsid, sizeof(dsid), &host);

    /* unknown competition: 404 on every route */
    ck_assert_int_eq(STATUS(one.hdrs, "GET", NULL, 0, "/api/v1/competitions/no-such"), 404);
    ck_assert_int_eq(STATUS(one.hdrs, "GET", NULL, 0, "/api/v1/competitions/no-such/leaderboard"), 404);
    ck_assert_int_eq(STATUS(one.hdrs, "POST", NULL, 0, "/api/v1/competitions/no-such/accept-rules"), 404);
    {
        const char *h[4];
        csv_hdrs(h, &one);
        ck_assert_int_eq(STATUS(h, "POST", "id,label\n", -1, "/api/v1/competitions/no-such/submissions"), 404);
    }
    /* a non-host cannot create */
    ck_assert_int_eq(STATUS(one.hdrs, "POST", "{\"title\":\"x\"}", -1, "/api/v1/competitions"), 403);

    /* a contradictory configuration: 422 naming the fields */
    snprintf(body, sizeof(body),
             "{\"title\":\"Bad\",\"start_at\":\"%s\",\"end_at\":\"%s\",\"id_column\":\"id\","
             "\"target_columns\":[\"label\"],\"metric\":\"accuracy\",\"public_fraction\":0,"
             "\"daily_cap\":5,\"max_team_size\":2,\"leaderboard\":\"public\"}",
             at(s, sizeof(s), 3600000), at(e, sizeof(e), 7200000));
    ck_assert_int_eq(call(&r, host.hdrs, "POST", body, -1, "/api/v1/competitions"), 422);
    ck_assert_str_eq(it_resp_error_code(&r), "unprocessable");
    ck_assert_ptr_nonnull(strstr(r.body, "public_fraction"));
    ck_assert_ptr_nonnull(strstr(r.body, "leaderboard"));
    it_resp_free(&r);
    /* the end before the start */
    snprintf(body, sizeof(body),
             "{\"title\":\"Bad2\",\"start_at\":\"%s\",\"end_at\":\"%s\",\"id_column\":\"id\","
             "\"target_columns\":[\"label\"],\"metric\":\"accuracy\"}",
             at(s, sizeof(s), 7200000), at(e, sizeof(e), 3600000));
    ck_assert_int_eq(call(&r, host.hdrs, "POST", body, -1, "/api/v1/competitions"), 422);
    ck_assert_ptr_nonnull(strstr(r.body, "end_at"));
    it_resp_free(&r);
    /* a typo'd field and a bad time: 400 naming them */
    ck_assert_int_eq(call(&r, host.hdrs, "POST", "{\"title\":\"t\",\"daly_cap\":5}", -1, "/api/v1/competitions"), 400);
    ck_assert_ptr_nonnull(strstr(r.body, "daly_cap"));
    it_resp_free(&r);
    ck_assert_int_eq(call(&r, host.hdrs, "POST",
                          "{\"title\":\"t\",\"start_at\":\"tomorrow\",\"end_at\":\"2030-01-01T00:00:00Z\"}", -1,
                          "/api/v1/competitions"),
                     400);
    ck_assert_ptr_nonnull(strstr(r.body, "start_at"));
    it_resp_free(&r);

    /* a started competition: before the rules 403; an oversize body 413 */
    make_competition(cid, sizeof(cid), &host, "pets", dsid, 5);
    /* its dataset version cannot be deleted under its participants */
    ck_assert_int_eq(call(&r, host.hdrs, "DELETE", NULL, 0, "/api/v1/datasets/%s/versions/1", dsid), 409);
    ck_assert_ptr_nonnull(strstr(r.body, "competition"));
    it_resp_free(&r);
    {
        const char *h[4];
        csv_hdrs(h, &host);
        ck_assert_int_eq(STATUS(h, "PUT", "id,label\n0,cat\n1,dog\n", -1, "/api/v1/competitions/%s/truth", cid), 200);
        /* a truth without the id column is refused, the stored one kept */
        ck_assert_int_eq(STATUS(h, "PUT", "key,label\n0,cat\n", -1, "/api/v1/competitions/%s/truth", cid), 400);
    }
    start_now(&host, cid, 1000);
    ck_assert_int_eq(submit(NULL, &one, cid, "id,label\n0,cat\n1,dog\n", 21), 403);
    ck_assert_int_eq(oversize(&one, cid, 1000), 403);   /* the rules come first, before any byte */
    ck_assert_int_eq(STATUS(one.hdrs, "POST", NULL, 0, "/api/v1/competitions/%s/accept-rules", cid), 200);
    ck_assert_int_eq(oversize(&one, cid, (256LL << 20) + 1), 413);
    /* a JSON body naming nothing to submit */
    ck_assert_int_eq(STATUS(one.hdrs, "POST", "{\"path\":\"x.csv\"}", -1, "/api/v1/competitions/%s/submissions", cid),
                     400);
    /* a code submission naming a project the caller cannot see: 404 */
    ck_assert_int_eq(STATUS(one.hdrs, "POST", "{\"project_id\":\"p1\",\"version\":\"v1\",\"entry\":\"a.py\"}", -1,
                            "/api/v1/competitions/%s/submissions", cid),
                     404);
    /* the truth after the start: 409 */
    {
        const char *h[4];
        csv_hdrs(h, &host);
        ck_assert_int_eq(STATUS(h, "PUT", "id,label\n0,cat\n", -1, "/api/v1/competitions/%s/truth", cid), 409);
    }
    /* an unknown board, a bad page */
    ck_assert_int_eq(STATUS(one.hdrs, "GET", NULL, 0, "/api/v1/competitions/%s/leaderboard?board=secret", cid), 400);
    ck_assert_int_eq(STATUS(one.hdrs, "GET", NULL, 0, "/api/v1/competitions/%s/leaderboard?limit=0", cid), 400);
}
END_TEST

int main(void)
{
    const TTest *tests[] = {end_to_end, bad_input, NULL};

    return it_tests_run("competitions", 280, setup, teardown, tests);
}
