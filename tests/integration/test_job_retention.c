/*
 * Retention of finished jobs' directories (issue 11, item 5): a job's
 * work directory is deleted once it ends while its output stays;
 * job_retention_days after it ended the whole directory goes (output, log,
 * its disk quota image), the job row stays, GET job says when its artifacts
 * expired and GET artifacts answers 404 "... expired on ...".
 * job_retention_days = 0 keeps them forever. The job's end is moved back
 * in the database between restarts, so nothing waits for days; the sweep
 * that runs at start does the work and logs "first sweep".
 *
 * Before the fix job directories stayed forever. Skips (77) where the host
 * offers no disk quota mechanism or the test is not root (the job's tree is
 * a quota tree; without one its tier's limit refuses the job).
 */
#include "harness.h"

#include <check.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static it_server srv;
static char dir[64], data[128];
static char admin_cookie[512], admin_csrf[256];
static it_user ursula;

static const char JOB_PY[] =
    "open('/home/aistudio/output/model.txt', 'w').write('weights')\n"
    "open('/home/aistudio/work/scratch.bin', 'wb').write(b'x' * 100000)\n"
    "print('done', flush=True)\n";

static void start(const char *retention)
{
    char ret[64];
    /* the default setup: served as eddy, the launcher handles the trees */
    const char *env[] = {"EDDY_METER_INTERVAL_MS=1000", "EDDY_STOP_GRACE_MS=1000", ret, NULL};

    snprintf(ret, sizeof(ret), "EDDY_JOB_RETENTION_DAYS=%s", retention);
    ck_assert_int_eq(it_server_start_in(&srv, data, env), 0);
    ck_assert_int_eq(it_login(&srv, IT_ADMIN_USER, IT_ADMIN_PASSWORD, admin_cookie, sizeof(admin_cookie), admin_csrf,
                              sizeof(admin_csrf)),
                     0);
}

/* Wait for the start's first retention sweep (its log line) since `from`. */
static void wait_first_sweep(long from)
{
    static char log[1 << 20];
    for (int i = 0; i < 600; i++) {
        it_slurp(log, sizeof(log), srv.log_path);
        if ((long)strlen(log) > from && strstr(log + from, "first sweep"))
            return;
        usleep(50000);
    }
    ck_abort_msg("no first retention sweep in %s", srv.log_path);
}

static long log_size(void)
{
    struct stat sb;
    return stat(srv.log_path, &sb) == 0 ? (long)sb.st_size : 0;
}

static void backdate(int64_t id, int days)
{
    char dbpath[200], sql[200];
    sqlite3 *db = NULL;

    snprintf(dbpath, sizeof(dbpath), "%s/eddy.db", data);
    ck_assert_int_eq(sqlite3_open(dbpath, &db), SQLITE_OK);
    snprintf(sql, sizeof(sql), "UPDATE jobs SET ended_at = ended_at - %d * 86400000 WHERE id = %lld", days,
             (long long)id);
    ck_assert_int_eq(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
}

static json_t *get_job(int64_t id)
{
    char path[64];
    json_t *j;
    snprintf(path, sizeof(path), "/api/v1/jobs/%lld", (long long)id);
    j = it_get_json(&srv, ursula.hdrs, path);
    ck_assert_msg(j != NULL, "GET %s: not 200 with JSON", path);
    return j;
}

static long get_artifact(int64_t id, char *body, size_t n)
{
    char path[96];
    it_resp r;
    long st;
    snprintf(path, sizeof(path), "/api/v1/jobs/%lld/artifacts/model.txt", (long long)id);
    it_request(&r, &srv, "GET", path, NULL, ursula.hdrs);
    st = r.status;
    snprintf(body, n, "%s", r.body ? r.body : "");
    it_resp_free(&r);
    return st;
}

static void setup(void)
{
    ck_assert_int_eq(it_admin_data_make(dir, sizeof(dir), data, sizeof(data), "ret"), 0);
    start("7");
}

static void teardown(void)
{
    ck_assert_int_eq(it_server_stop(&srv), 0);
    ck_assert_int_eq(it_dir_remove(dir), 0);
}

START_TEST(finished_job_directories_expire_after_retention_and_the_api_says_so)
{
    char pid[64], vid[64], path[256], jdir[300], art[512];
    int64_t id;
    struct stat sb;
    it_resp r;
    json_t *j;
    long from;

    ck_assert_int_eq(it_user_make(&ursula, &srv, admin_cookie, admin_csrf, "ursula", 1000000), 0);
    ck_assert_int_eq(it_project_make(pid, sizeof(pid), &srv, ursula.hdrs, "keep", "job.py", JOB_PY), 0);
    ck_assert_int_eq(it_version_make(vid, sizeof(vid), &srv, ursula.hdrs, pid, "v1"), 0);
    ck_assert_int_eq(it_job_submit(&id, NULL, 0, &srv, ursula.hdrs, pid, vid, "job.py", 60, NULL), 201);
    j = it_job_wait(&srv, ursula.hdrs, id, NULL, 120);
    ck_assert_msg(j != NULL, "job %lld did not end", (long long)id);
    ck_assert_str_eq(json_string_value(json_object_get(j, "status")), "succeeded");
    ck_assert(json_is_null(json_object_get(j, "artifacts_expired_at")));
    json_decref(j);

    /* ended: the work copy goes, the output stays */
    snprintf(jdir, sizeof(jdir), "%s/jobs/%lld/work", data, (long long)id);
    for (int i = 0; i < 300 && lstat(jdir, &sb) == 0; i++)
        usleep(100000);
    ck_assert_msg(lstat(jdir, &sb) != 0, "%s stays after the job ended", jdir);
    ck_assert_int_eq(get_artifact(id, art, sizeof(art)), 200);
    ck_assert_str_eq(art, "weights");

    /* job_retention_days = 0: kept forever, however old */
    ck_assert_int_eq(it_server_stop(&srv), 0);
    backdate(id, 30);
    from = log_size();
    start("0");
    wait_first_sweep(from);
    ck_assert_int_eq(get_artifact(id, art, sizeof(art)), 200);
    ck_assert_str_eq(art, "weights");   /* and its tree was attached again after the restart */

    /* 7 days, ended 30 days ago: the directory goes, the row stays */
    ck_assert_int_eq(it_server_stop(&srv), 0);
    from = log_size();
    start("7");
    wait_first_sweep(from);
    snprintf(jdir, sizeof(jdir), "%s/jobs/%lld", data, (long long)id);
    ck_assert_msg(lstat(jdir, &sb) != 0, "%s stays past retention", jdir);
    snprintf(jdir, sizeof(jdir), "%s/images/%u.img", data, 0x40000000u + (unsigned)id);
    ck_assert_msg(lstat(jdir, &sb) != 0, "%s stays past retention", jdir);
    snprintf(jdir, sizeof(jdir), "%s/launcher/images/%u.img", data, 0x40000000u + (unsigned)id);
    ck_assert_msg(lstat(jdir, &sb) != 0, "%s stays past retention", jdir);
    j = get_job(id);
    ck_assert_str_eq(json_string_value(json_object_get(j, "status")), "succeeded");
    ck_assert_msg(json_is_string(json_object_get(j, "artifacts_expired_at")), "artifacts_expired_at missing");
    json_decref(j);
    ck_assert_int_eq(get_artifact(id, art, sizeof(art)), 404);
    ck_assert_msg(strstr(art, "expired on"), "%s", art);
    snprintf(path, sizeof(path), "/api/v1/jobs/%lld/artifacts", (long long)id);
    it_request(&r, &srv, "GET", path, NULL, ursula.hdrs);
    ck_assert_int_eq(r.status, 404);
    ck_assert_msg(strstr(r.body, "expired on"), "%s", r.body);
    it_resp_free(&r);
}
END_TEST

int main(void)
{
    const TTest *tests[] = {finished_job_directories_expire_after_retention_and_the_api_says_so, NULL};
    char why[1100];

    if (!it_host_disk_quotas(why, sizeof(why))) {
        printf("SKIP: %s\n", why);
        return 77;
    }
    return it_tests_run("job_retention", 240, setup, teardown, tests);
}
