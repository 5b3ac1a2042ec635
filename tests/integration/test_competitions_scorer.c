/* Custom scoring programs (issue 16 item 2) against the real `eddy serve`
 * and the real sandbox: the host (the admin) sets scorer.direction, puts a
 * Python scoring program and a ground truth holding a canary label; a
 * participant's submissions are scored by that program, once on the public
 * rows and once on the private rows. The program checks from the inside
 * what it sees (one part only: 100 of the 200 rows, truth and submission
 * ids the same; no network: the server's own port is unreachable; the
 * inputs read-only) and adds 1000 to its score for each breach. Its
 * behaviour follows the submission's first label: it prints the whole
 * truth before its score ("leak"), the truth as its last line ("leaklast"),
 * NaN, exits 3 after printing the truth to stderr, sleeps past its 3 s
 * limit, or allocates past its 128 MiB; each failure is a `scoring_error`
 * that gives the slot back. The canary is in no response of the test and
 * not in the server's log. And the settings: a program without a
 * direction 422, a participant 403, an oversize program 413, limits
 * without a direction 422, a bad direction 400, clearing the direction
 * while a program is stored 422, DELETE (back to the built-in metric) and
 * no change after the start (409).
 * The sandbox needs root here: skips (77) otherwise. */
#include "harness.h"

#include <check.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define CANARY "CANARY-scorer-3e1d7a52-6b0f-4c1e-9d2a-5ca1ab1efeed"
#define ROWS   200

static it_server srv;
static char dir[256], admin_cookie[600], admin_csrf[300];
static const char *const env[] = {"EDDY_COMP_WATCHDOG_MS=500", NULL};

static char *seen;
static size_t seen_len, seen_cap;

static void remember(const it_resp *r)
{
    if (seen_len + r->body_len + 2 > seen_cap) {
        seen_cap = (seen_len + r->body_len + 2) * 2;
        seen = realloc(seen, seen_cap);
        ck_assert_ptr_nonnull(seen);
    }
    memcpy(seen + seen_len, r->body, r->body_len);
    seen_len += r->body_len;
    seen[seen_len++] = '\n';
}

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
    ck_assert_int_eq(it_admin_server_start(&srv, dir, sizeof(dir), "compscorer", env, admin_cookie,
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

/* The scoring program; %d is the server's port (unreachable from inside). */
static const char SCORER_FMT[] =
    "import csv, json, os, socket, sys, time\n"
    "truth = list(csv.DictReader(open(sys.argv[1])))\n"
    "sub = list(csv.DictReader(open(sys.argv[2])))\n"
    "mode = sub[0]['label'] if sub else ''\n"
    "breach = 0\n"
    "if len(truth) != %d or len(sub) != len(truth):\n"
    "    breach += 1000\n"
    "if set(r['id'] for r in truth) != set(r['id'] for r in sub):\n"
    "    breach += 1000\n"
    "try:\n"
    "    socket.create_connection(('127.0.0.1', %d), timeout=2).close()\n"
    "    breach += 1000\n"
    "except OSError:\n"
    "    pass\n"
    "try:\n"
    "    open('/scoring/written', 'w').write('x')\n"
    "    breach += 1000\n"
    "except OSError:\n"
    "    pass\n"
    "text = open(sys.argv[1]).read()\n"
    "if mode == 'leak':\n"
    "    print(text); print(text, file=sys.stderr)\n"
    "elif mode == 'leaklast':\n"
    "    print(text.replace('\\n', ' '))\n"
    "    sys.exit(0)\n"
    "elif mode == 'nan':\n"
    "    print('{\"score\": NaN}')\n"
    "    sys.exit(0)\n"
    "elif mode == 'exit':\n"
    "    print(text, file=sys.stderr)\n"
    "    sys.exit(3)\n"
    "elif mode == 'sleep':\n"
    "    time.sleep(60)\n"
    "elif mode == 'oom':\n"
    "    hog = b'\\x01' * (1 << 30)\n"
    "want = {r['id']: r['label'] for r in truth}\n"
    "wrong = sum(1 for r in sub if want[r['id']] != r['label'] and r['label'] not in ('leak',))\n"
    "print(json.dumps({'score': wrong / max(len(sub), 1) + breach}))\n";

static char *truth_csv(void)
{
    char *b = malloc(ROWS * 80 + 64);
    size_t n = 0;

    ck_assert_ptr_nonnull(b);
    n += (size_t)sprintf(b, "id,label\n");
    for (int i = 0; i < ROWS; i++)
        n += (size_t)sprintf(b + n, "%d,%s\n", i, i == 17 ? CANARY : (i % 3 ? "cat" : "dog"));
    return b;
}

/* A submission: every label `mode` (a behaviour), or the truth's labels
 * but for the canary row (mode NULL). */
static char *sub_csv(const char *mode)
{
    char *b = malloc(ROWS * 40 + 64);
    size_t n = 0;

    ck_assert_ptr_nonnull(b);
    n += (size_t)sprintf(b, "id,label\n");
    for (int i = 0; i < ROWS; i++)
        n += (size_t)sprintf(b + n, "%d,%s\n", i, mode ? mode : (i % 3 ? "cat" : "dog"));
    return b;
}

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

/* Submit `body` as `u` and wait for its final state. */
static json_t *submit_wait(it_user *u, const char *cid, const char *body)
{
    const char *h[] = {"Content-Type: text/csv", u->cookie, u->csrf, NULL};
    char sid[64];
    it_resp r;

    ck_assert_int_eq(call(&r, h, "POST", body, -1, "/api/v1/competitions/%s/submissions", cid), 201);
    snprintf(sid, sizeof(sid), "%s", it_json_str(r.json, "id"));
    it_resp_free(&r);
    return final_state(u, cid, sid, 120);
}

static void expect_scoring_error(it_user *u, const char *cid, const char *mode, const char *words)
{
    char *body = sub_csv(mode);
    json_t *s = submit_wait(u, cid, body);
    json_t *e = json_object_get(s, "error");

    ck_assert_msg(strcmp(it_json_str(s, "status"), "failed") == 0, "mode %s: status %s", mode,
                  it_json_str(s, "status"));
    ck_assert_str_eq(it_json_str(e, "class"), "scoring_error");
    ck_assert_msg(strstr(it_json_str(e, "message"), words) != NULL, "mode %s: message '%s'", mode,
                  it_json_str(e, "message"));
    ck_assert(json_is_false(json_object_get(s, "counted")));
    ck_assert_ptr_null(json_object_get(e, "log_tail"));
    json_decref(s);
    free(body);
}

START_TEST(scoring_programs)
{
    const char *ah[] = {admin_cookie, admin_csrf, NULL};
    const char *ph[] = {"Content-Type: text/x-python", admin_cookie, admin_csrf, NULL};
    const char *th[] = {"Content-Type: text/csv", admin_cookie, admin_csrf, NULL};
    char body[2048], s[64], e[64], cid[64], scorer[sizeof(SCORER_FMT) + 64], *truth, *good;
    it_user alice;
    it_resp r;
    json_t *sub;

    snprintf(scorer, sizeof(scorer), SCORER_FMT, ROWS / 2, srv.port);
    ck_assert_int_eq(it_user_make(&alice, &srv, admin_cookie, admin_csrf, "alice", 0), 0);

    /* settings that contradict themselves */
    snprintf(body, sizeof(body),
             "{\"title\":\"Scored\",\"start_at\":\"%s\",\"end_at\":\"%s\",\"id_column\":\"id\","
             "\"target_columns\":[\"label\"],\"metric\":\"accuracy\",\"public_fraction\":0.5,"
             "\"daily_cap\":20,\"leaderboard\":\"public\",\"scorer\":{\"direction\":\"sideways\"}}",
             at(s, sizeof(s), 3600 * 1000), at(e, sizeof(e), 7200 * 1000));
    ck_assert_int_eq(call(&r, ah, "POST", body, -1, "/api/v1/competitions"), 400);
    ck_assert_ptr_nonnull(memmem(r.body, r.body_len, "scorer.direction", 16));
    it_resp_free(&r);
    /* no direction: the built-in metric, and no program accepted */
    snprintf(body, sizeof(body),
             "{\"title\":\"Scored\",\"start_at\":\"%s\",\"end_at\":\"%s\",\"id_column\":\"id\","
             "\"target_columns\":[\"label\"],\"metric\":\"accuracy\",\"public_fraction\":0.5,"
             "\"daily_cap\":20,\"leaderboard\":\"public\"}",
             at(s, sizeof(s), 3600 * 1000), at(e, sizeof(e), 7200 * 1000));
    ck_assert_int_eq(call(&r, ah, "POST", body, -1, "/api/v1/competitions"), 201);
    snprintf(cid, sizeof(cid), "%s", it_json_str(r.json, "id"));
    ck_assert(json_is_null(json_object_get(r.json, "scorer")));
    ck_assert(json_is_true(json_object_get(r.json, "higher_is_better")));
    ck_assert_str_eq(it_json_str(r.json, "host"), "root");   /* the harness's admin */
    it_resp_free(&r);
    ck_assert_int_eq(call(&r, ph, "PUT", scorer, -1, "/api/v1/competitions/%s/scorer", cid), 422);
    ck_assert_ptr_nonnull(memmem(r.body, r.body_len, "scorer.direction", 16));
    it_resp_free(&r);
    ck_assert_int_eq(STATUS(ah, "PUT", "{\"scorer\":{\"direction\":\"higher\",\"timeout_s\":0}}", -1,
                            "/api/v1/competitions/%s", cid),
                     422);
    /* lower is better, 3 s and 128 MiB a run */
    ck_assert_int_eq(call(&r, ah, "PUT", "{\"scorer\":{\"direction\":\"lower\",\"timeout_s\":3,\"memory_mb\":128}}",
                          -1, "/api/v1/competitions/%s", cid),
                     200);
    ck_assert(json_is_false(json_object_get(r.json, "higher_is_better")));
    ck_assert_str_eq(it_json_str(json_object_get(r.json, "scorer"), "direction"), "lower");
    ck_assert(json_is_false(json_object_get(json_object_get(r.json, "scorer"), "uploaded")));
    it_resp_free(&r);
    /* only the host puts it; bounded; UTF-8 */
    {
        const char *uh[] = {"Content-Type: text/x-python", alice.cookie, alice.csrf, NULL};
        size_t big = (1 << 20) + 1;
        char *huge = malloc(big);
        ck_assert_ptr_nonnull(huge);
        memset(huge, '#', big);
        ck_assert_int_eq(STATUS(uh, "PUT", scorer, -1, "/api/v1/competitions/%s/scorer", cid), 403);
        ck_assert_int_eq(STATUS(ph, "PUT", huge, (long)big, "/api/v1/competitions/%s/scorer", cid), 413);
        ck_assert_int_eq(STATUS(ph, "PUT", "\xff\xfe", 2, "/api/v1/competitions/%s/scorer", cid), 400);
        ck_assert_int_eq(STATUS(ph, "PUT", "", 0, "/api/v1/competitions/%s/scorer", cid), 400);
        free(huge);
    }
    ck_assert_int_eq(call(&r, ph, "PUT", scorer, -1, "/api/v1/competitions/%s/scorer", cid), 200);
    ck_assert(json_is_true(json_object_get(json_object_get(r.json, "scorer"), "uploaded")));
    it_resp_free(&r);
    /* the direction cannot go while a program is stored; DELETE goes back */
    ck_assert_int_eq(STATUS(ah, "PUT", "{\"scorer\":null}", -1, "/api/v1/competitions/%s", cid), 422);
    ck_assert_int_eq(call(&r, ah, "DELETE", NULL, 0, "/api/v1/competitions/%s/scorer", cid), 200);
    ck_assert(json_is_null(json_object_get(r.json, "scorer")));
    ck_assert(json_is_true(json_object_get(r.json, "higher_is_better")));
    it_resp_free(&r);
    ck_assert_int_eq(STATUS(ah, "DELETE", NULL, 0, "/api/v1/competitions/%s/scorer", cid), 404);
    ck_assert_int_eq(STATUS(ah, "PUT", "{\"scorer\":{\"direction\":\"lower\",\"timeout_s\":3,\"memory_mb\":128}}",
                            -1, "/api/v1/competitions/%s", cid),
                     200);
    ck_assert_int_eq(STATUS(ph, "PUT", scorer, -1, "/api/v1/competitions/%s/scorer", cid), 200);
    truth = truth_csv();
    ck_assert_int_eq(STATUS(th, "PUT", truth, -1, "/api/v1/competitions/%s/truth", cid), 200);

    /* start now */
    snprintf(body, sizeof(body), "{\"start_at\":\"%s\"}", at(s, sizeof(s), 500));
    ck_assert_int_eq(STATUS(ah, "PUT", body, -1, "/api/v1/competitions/%s", cid), 200);
    usleep(900 * 1000);
    ck_assert_int_eq(STATUS(ph, "PUT", scorer, -1, "/api/v1/competitions/%s/scorer", cid), 409);
    ck_assert_int_eq(STATUS(ah, "DELETE", NULL, 0, "/api/v1/competitions/%s/scorer", cid), 409);
    ck_assert_int_eq(STATUS(ah, "PUT", "{\"scorer\":{\"direction\":\"higher\"}}", -1, "/api/v1/competitions/%s", cid),
                     409);
    ck_assert_int_eq(STATUS(alice.hdrs, "POST", "{}", -1, "/api/v1/competitions/%s/accept-rules", cid), 200);

    /* scored by the program: one part at a time, no network, read-only
     * inputs (each breach would add 1000) */
    good = sub_csv(NULL);
    sub = submit_wait(&alice, cid, good);
    ck_assert_str_eq(it_json_str(sub, "status"), "scored");
    ck_assert(json_real_value(json_object_get(sub, "public_score")) < 0.02);
    ck_assert_str_eq(it_json_str(sub, "team_name"), alice.name);
    ck_assert_str_eq(it_json_str(sub, "username"), alice.name);
    json_decref(sub);
    /* a program that prints the truth before its score: only the score passes */
    {
        char *leak = sub_csv("leak");
        sub = submit_wait(&alice, cid, leak);
        ck_assert_str_eq(it_json_str(sub, "status"), "scored");
        ck_assert(json_real_value(json_object_get(sub, "public_score")) < 1000);
        json_decref(sub);
        free(leak);
    }
    expect_scoring_error(&alice, cid, "leaklast", "did not print a JSON score");
    expect_scoring_error(&alice, cid, "nan", "did not print a JSON score");
    expect_scoring_error(&alice, cid, "exit", "exit status 3");
    expect_scoring_error(&alice, cid, "sleep", "time limit of 3 s");
    {
        char *oom = sub_csv("oom");
        sub = submit_wait(&alice, cid, oom);
        ck_assert_str_eq(it_json_str(sub, "status"), "failed");
        ck_assert_str_eq(it_json_str(json_object_get(sub, "error"), "class"), "scoring_error");
        json_decref(sub);
        free(oom);
    }

    /* the board: lower is better, the good submission first */
    ck_assert_int_eq(call(&r, alice.hdrs, "GET", NULL, 0, "/api/v1/competitions/%s/leaderboard", cid), 200);
    ck_assert_int_eq(json_array_size(json_object_get(r.json, "items")), 1);
    ck_assert(json_real_value(json_object_get(json_array_get(json_object_get(r.json, "items"), 0), "score")) < 0.02);
    ck_assert_str_eq(it_json_str(json_array_get(json_object_get(r.json, "items"), 0), "team_name"), alice.name);
    it_resp_free(&r);
    /* the team: only the two scored submissions count */
    ck_assert_int_eq(call(&r, alice.hdrs, "GET", NULL, 0, "/api/v1/competitions/%s/teams/mine", cid), 200);
    ck_assert_int_eq(json_integer_value(json_object_get(r.json, "submissions")), 2);
    it_resp_free(&r);
    /* the final selection: [] clears it (the best public ones count, as on
     * Kaggle); not a list 400 */
    ck_assert_int_eq(call(&r, alice.hdrs, "POST", "{\"ids\":[]}", -1, "/api/v1/competitions/%s/submissions/select",
                          cid),
                     200);
    ck_assert(json_is_true(json_object_get(r.json, "default")));
    it_resp_free(&r);
    ck_assert_int_eq(STATUS(alice.hdrs, "POST", "{\"ids\":\"x\"}", -1, "/api/v1/competitions/%s/submissions/select",
                            cid),
                     400);
    /* the host sees every submission: nothing of the program's output either */
    ck_assert_int_eq(STATUS(ah, "GET", NULL, 0, "/api/v1/competitions/%s/submissions?all=1", cid), 200);

    ck_assert_msg(memmem(seen, seen_len, CANARY, strlen(CANARY)) == NULL, "the canary was in a response");
    ck_assert_msg(!file_has(srv.log_path, CANARY), "the canary is in the server's log");
    free(truth);
    free(good);
}
END_TEST

int main(void)
{
    const TTest *tests[] = {scoring_programs, NULL};

    if (geteuid() != 0) {
        printf("SKIP: scoring programs run in the sandbox, which needs root here\n");
        return 77;
    }
    return it_tests_run("competitions_scorer", 240, setup, teardown, tests);
}
