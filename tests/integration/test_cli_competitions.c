/* `eddy competitions ...` end to end against the real server (issue 16 item
 * 10, the CLI): a host makes a competition over REST; a participant with an
 * API key lists and shows it, downloads its dataset version, accepts the
 * rules, makes a team and invites a user, submits a CSV (waiting for its
 * score) and an invalid one (its error shown, exit 1), lists its
 * submissions, reads the public leaderboard, is refused the private one
 * before the end, cannot leave a team that has submitted, clears the final
 * selection, sees the host's name and cannot put a scoring program. Bad usage
 * exits 2, a refusal 1. */
#include "harness.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static it_server srv;
static char dir[256], admin_cookie[600], admin_csrf[300];
static char url_env[128], key_env[256];

static void setup(void)
{
    ck_assert_int_eq(it_admin_server_start(&srv, dir, sizeof(dir), "clicomp", NULL, admin_cookie,
                                           sizeof(admin_cookie), admin_csrf, sizeof(admin_csrf)),
                     0);
    snprintf(url_env, sizeof(url_env), "EDDY_URL=%s", srv.base_url);
}

static void teardown(void)
{
    ck_assert_int_eq(it_server_stop(&srv), 0);
    ck_assert_int_eq(it_dir_remove(dir), 0);
}

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

static void run(it_run *o, const char *const *argv)
{
    const char *env[] = {url_env, key_env, NULL};

    it_run_eddy(o, dir, dir, NULL, env, argv);
}

#define EDDY(o, ...) run((o), (const char *const[]){"eddy", __VA_ARGS__, NULL})

static void expect(const it_run *o, int status, const char *what)
{
    ck_assert_msg(o->status == status, "%s: exit %d, wanted %d\nstdout: %s\nstderr: %s", what, o->status, status,
                  o->out, o->err);
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");

    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    ck_assert_int_eq(fclose(f), 0);
}

START_TEST(cli_flow)
{
    const char *ah[] = {admin_cookie, admin_csrf, NULL};
    const char *csvh[4];
    it_user host, carol, dave;
    it_key key;
    it_run *o = malloc(sizeof(*o));
    char body[2048], s[64], e[64], dsid[64], cid[64], path[400], truth[4096], good[4096], buf[4096];
    size_t n = 0;
    it_resp r;

    ck_assert_ptr_nonnull(o);
    ck_assert_int_eq(it_user_make(&host, &srv, admin_cookie, admin_csrf, "hoster", 0), 0);
    ck_assert_int_eq(it_user_make(&carol, &srv, admin_cookie, admin_csrf, "carol", 0), 0);
    ck_assert_int_eq(it_user_make(&dave, &srv, admin_cookie, admin_csrf, "dave", 0), 0);
    snprintf(body, sizeof(body), "{\"username\":\"hoster\"}");
    ck_assert_int_eq(it_request_status(&srv, "POST", "/api/v1/admin/hosts", body, ah), 201);

    /* the dataset and the competition, over REST */
    ck_assert_int_eq(it_request(&r, &srv, "POST", "/api/v1/datasets", "{\"name\":\"Iris\",\"visibility\":\"public\"}", host.hdrs), 0);
    ck_assert_int_eq(r.status, 201);
    snprintf(dsid, sizeof(dsid), "%s", it_json_str(r.json, "id"));
    it_resp_free(&r);
    snprintf(path, sizeof(path), "/api/v1/datasets/%s/draft/files/train.csv", dsid);
    ck_assert_int_eq(it_request_status(&srv, "PUT", path, "id,x\n0,1.5\n", host.hdrs), 200);
    snprintf(path, sizeof(path), "/api/v1/datasets/%s/versions", dsid);
    ck_assert_int_eq(it_request_status(&srv, "POST", path, "{\"message\":\"v1\"}", host.hdrs), 201);
    snprintf(body, sizeof(body),
             "{\"title\":\"Iris species\",\"slug\":\"iris\",\"start_at\":\"%s\",\"end_at\":\"%s\","
             "\"dataset\":{\"dataset_id\":\"%s\",\"version\":1},\"id_column\":\"id\","
             "\"target_columns\":[\"species\"],\"metric\":\"accuracy\",\"public_fraction\":0.5,"
             "\"daily_cap\":5,\"max_team_size\":3,\"leaderboard\":\"public\"}",
             at(s, sizeof(s), 3600000), at(e, sizeof(e), 7200000), dsid);
    ck_assert_int_eq(it_request(&r, &srv, "POST", "/api/v1/competitions", body, host.hdrs), 0);
    ck_assert_msg(r.status == 201, "%ld %s", r.status, r.body);
    snprintf(cid, sizeof(cid), "%s", it_json_str(r.json, "id"));
    it_resp_free(&r);
    n += (size_t)snprintf(truth + n, sizeof(truth) - n, "id,species\n");
    for (int i = 0; i < 40; i++)
        n += (size_t)snprintf(truth + n, sizeof(truth) - n, "%d,%s\n", i, i % 2 ? "setosa" : "virginica");
    csvh[0] = "Content-Type: text/csv";
    csvh[1] = host.cookie;
    csvh[2] = host.csrf;
    csvh[3] = NULL;
    snprintf(path, sizeof(path), "/api/v1/competitions/%s/truth", cid);
    ck_assert_int_eq(it_request_status(&srv, "PUT", path, truth, csvh), 200);
    snprintf(path, sizeof(path), "/api/v1/competitions/%s", cid);
    snprintf(body, sizeof(body), "{\"start_at\":\"%s\"}", at(s, sizeof(s), 800));
    ck_assert_int_eq(it_request_status(&srv, "PUT", path, body, host.hdrs), 200);
    usleep(1100 * 1000);

    /* carol's key: the CLI's credential */
    ck_assert_int_eq(it_key_make(&key, &srv, carol.hdrs, "{\"name\":\"cli\",\"env\":\"prod\",\"scopes\":[\"read\",\"write\"]}"),
                     0);
    snprintf(key_env, sizeof(key_env), "EDDY_API_KEY=%s", key.auth + strlen("Authorization: Bearer "));

    EDDY(o, "competitions", "list");
    expect(o, 0, "list");
    ck_assert_ptr_nonnull(strstr(o->out, "iris"));
    ck_assert_ptr_nonnull(strstr(o->out, "active"));
    EDDY(o, "competitions", "show", "iris");
    expect(o, 0, "show");
    ck_assert_ptr_nonnull(strstr(o->out, "Iris species"));
    ck_assert_ptr_nonnull(strstr(o->out, "accuracy"));
    EDDY(o, "competitions", "show", "nope");
    expect(o, 1, "show an unknown competition");
    EDDY(o, "competitions", "frobnicate");
    expect(o, 2, "an unknown command");

    /* the data, as `eddy datasets download` */
    snprintf(path, sizeof(path), "%s/data", dir);
    EDDY(o, "competitions", "download", "iris", "-o", path);
    expect(o, 0, "download");
    snprintf(path, sizeof(path), "%s/data/train.csv", dir);
    it_slurp(buf, sizeof(buf), path);
    ck_assert_str_eq(buf, "id,x\n0,1.5\n");

    /* the rules, a team, an invitation */
    snprintf(path, sizeof(path), "%s/good.csv", dir);
    n = 0;
    n += (size_t)snprintf(good + n, sizeof(good) - n, "id,species\n");
    for (int i = 0; i < 40; i++)
        n += (size_t)snprintf(good + n, sizeof(good) - n, "%d,%s\n", i, i % 2 ? "setosa" : "virginica");
    write_file(path, good);
    EDDY(o, "competitions", "submit", "iris", path);
    expect(o, 1, "submit before the rules");
    ck_assert_ptr_nonnull(strstr(o->err, "rules"));
    EDDY(o, "competitions", "accept-rules", "iris");
    expect(o, 0, "accept-rules");
    EDDY(o, "competitions", "team", "iris", "create", "Petal pushers");
    expect(o, 0, "team create");
    ck_assert_ptr_nonnull(strstr(o->out, "Petal pushers"));
    EDDY(o, "competitions", "team", "iris", "invite", "dave");
    expect(o, 0, "team invite");
    EDDY(o, "competitions", "team", "iris", "show", "--json");
    expect(o, 0, "team show");
    {
        json_t *t = json_loads(o->out, 0, NULL);
        char tid[32], carol_key[256];
        it_key dkey;
        ck_assert_ptr_nonnull(t);
        snprintf(tid, sizeof(tid), "%lld", (long long)json_integer_value(json_object_get(t, "id")));
        json_decref(t);
        /* dave joins with his own key */
        ck_assert_int_eq(it_key_make(&dkey, &srv, dave.hdrs,
                                     "{\"name\":\"cli\",\"env\":\"prod\",\"scopes\":[\"read\",\"write\"]}"),
                         0);
        snprintf(carol_key, sizeof(carol_key), "%s", key_env);
        snprintf(key_env, sizeof(key_env), "EDDY_API_KEY=%s", dkey.auth + strlen("Authorization: Bearer "));
        EDDY(o, "competitions", "team", "iris", "join", tid);
        expect(o, 1, "join before the rules");
        EDDY(o, "competitions", "accept-rules", "iris");
        expect(o, 0, "dave accepts the rules");
        EDDY(o, "competitions", "team", "iris", "join", "x");
        expect(o, 2, "join a team that is not a number");
        EDDY(o, "competitions", "team", "iris", "join", tid);
        expect(o, 0, "join");
        snprintf(key_env, sizeof(key_env), "%s", carol_key);
    }
    EDDY(o, "competitions", "team", "iris", "show");
    expect(o, 0, "team show");
    ck_assert_ptr_nonnull(strstr(o->out, "carol"));
    ck_assert_ptr_nonnull(strstr(o->out, "dave"));

    /* a good CSV, scored; an invalid one, its error shown */
    EDDY(o, "competitions", "submit", "iris", path, "--wait");
    expect(o, 0, "submit");
    ck_assert_ptr_nonnull(strstr(o->out, "scored"));
    ck_assert_ptr_nonnull(strstr(o->out, "public score 1"));
    snprintf(path, sizeof(path), "%s/bad.csv", dir);
    write_file(path, "id,species\n0,setosa\n0,setosa\n");
    EDDY(o, "competitions", "submit", "iris", path, "--wait");
    expect(o, 1, "an invalid submission");
    ck_assert_ptr_nonnull(strstr(o->out, "invalid"));
    EDDY(o, "competitions", "submit", "iris");
    expect(o, 2, "submit without a file");

    EDDY(o, "competitions", "submissions", "iris");
    expect(o, 0, "submissions");
    ck_assert_ptr_nonnull(strstr(o->out, "scored"));
    ck_assert_ptr_nonnull(strstr(o->out, "invalid"));
    EDDY(o, "competitions", "leaderboard", "iris");
    expect(o, 0, "leaderboard");
    ck_assert_ptr_nonnull(strstr(o->out, "Petal pushers"));
    EDDY(o, "competitions", "leaderboard", "iris", "--private");
    expect(o, 1, "the private leaderboard before the end");
    ck_assert_ptr_nonnull(strstr(o->err, "forbidden"));
    EDDY(o, "competitions", "team", "iris", "leave");
    expect(o, 1, "leave a team that submitted");
    EDDY(o, "competitions", "leaderboard", "iris", "--json");
    expect(o, 0, "leaderboard --json");
    ck_assert_ptr_nonnull(strstr(o->out, "\"items\""));
    /* the final selection cleared: the best public ones count */
    EDDY(o, "competitions", "select", "iris", "--clear");
    expect(o, 0, "select --clear");
    ck_assert_ptr_nonnull(strstr(o->out, "cleared"));
    /* the host's name is shown; a scoring program is the host's */
    EDDY(o, "competitions", "show", "iris");
    expect(o, 0, "show the host");
    ck_assert_ptr_nonnull(strstr(o->out, "hoster"));
    snprintf(path, sizeof(path), "%s/scorer.py", dir);
    write_file(path, "print('{\"score\": 1}')\n");
    EDDY(o, "competitions", "scorer", "iris", path);
    expect(o, 1, "a participant puts a scoring program");
    EDDY(o, "competitions", "scorer", "iris");
    expect(o, 2, "scorer without a file");
    free(o);
}
END_TEST

int main(void)
{
    const TTest *tests[] = {cli_flow, NULL};

    return it_tests_run("cli_competitions", 200, setup, teardown, tests);
}
