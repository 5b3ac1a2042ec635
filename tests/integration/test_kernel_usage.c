/* Live resource meters over the real server, scheduler, sandbox and
 * eddy-kernel: GET /api/v1/kernels/{id}/usage while a cell keeps a core
 * busy and holds 200 MB (CPU %, memory of the class's limit), only for the
 * kernel's owner (404 to another user, 200 to an admin), nothing live once
 * it is dead; and on a paid class the coins so far grow with the metering.
 *
 * Needs kernels (root, idmapped bind mounts) and cgroup limits (v2 or v1
 * memory, pids and cpu controllers): exit 77 naming what is missing. */
#include "harness.h"

#include <check.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static it_server srv;
static char dir[256], admin_cookie[600], admin_csrf[300];

static void boot(const char *const *env)
{
    ck_assert_int_eq(it_admin_server_start(&srv, dir, sizeof(dir), "usage", env, admin_cookie, sizeof(admin_cookie),
                                           admin_csrf, sizeof(admin_csrf)),
                     0);
}

static void shutdown_all(void)
{
    ck_assert_int_eq(it_server_stop(&srv), 0);
    ck_assert_int_eq(it_dir_remove(dir), 0);
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static double num(const json_t *o, const char *k)
{
    return json_number_value(json_object_get(o, k));
}

/* GET the usage of `kid` as the caller of `hdrs`: its JSON (caller decrefs). */
static json_t *usage(const char *const *hdrs, const char *kid)
{
    char path[128];
    snprintf(path, sizeof(path), "/api/v1/kernels/%s/usage", kid);
    json_t *u = it_get_json(&srv, hdrs, path);
    ck_assert_msg(u != NULL, "GET %s: not 200 with JSON", path);
    return u;
}

static long usage_status(const char *const *hdrs, const char *kid)
{
    char path[128];
    snprintf(path, sizeof(path), "/api/v1/kernels/%s/usage", kid);
    return it_request_status(&srv, "GET", path, NULL, hdrs);
}

/* cpu-basic's memory limit as GET /api/v1/resources lists it, bytes. */
static int64_t class_memory_bytes(const char *const *hdrs, const char *name)
{
    json_t *r = it_get_json(&srv, hdrs, "/api/v1/resources"), *items, *c;
    int64_t mb = -1;
    size_t i;

    ck_assert_ptr_nonnull(r);
    items = json_is_array(r) ? r : json_object_get(r, "items");
    json_array_foreach(items, i, c)
        if (strcmp(it_json_str(c, "name"), name) == 0)
            mb = (int64_t)json_integer_value(json_object_get(c, "memory_mb"));
    json_decref(r);
    ck_assert_msg(mb > 0, "class %s has no memory_mb", name);
    return mb << 20;
}

/* A thread spinning for two minutes and 200 MB of touched memory, kept. */
static const char BUSY_CELL[] = "import threading, time\n"
                                "_hog = b'\\x01' * (200 << 20)\n"
                                "def _spin():\n"
                                "    end = time.time() + 120\n"
                                "    while time.time() < end:\n"
                                "        pass\n"
                                "threading.Thread(target=_spin, daemon=True).start()\n"
                                "print('spinning')\n";

static void run_cell(it_user *u, const char *kid, const char *code)
{
    char mid[64];
    json_t *msgs;

    ck_assert_int_eq(it_kernel_execute(mid, sizeof(mid), &srv, u->hdrs, kid, code, NULL), 0);
    msgs = it_kernel_events(&srv, u->hdrs, kid, 0, mid, IT_EV_IDLE, 60, NULL);
    ck_assert_msg(msgs != NULL, "the cell did not finish");
    json_decref(msgs);
}

START_TEST(meters_show_a_busy_cells_cpu_and_memory_to_its_owner_only)
{
    it_user a, b;
    char pid[64], kid[64], admin_hdr[2][700];
    const char *admin[3] = {admin_hdr[0], admin_hdr[1], NULL};
    json_t *u = NULL;
    int64_t limit;
    bool seen = false;

    boot(NULL);
    snprintf(admin_hdr[0], sizeof(admin_hdr[0]), "%s", admin_cookie);
    snprintf(admin_hdr[1], sizeof(admin_hdr[1]), "%s", admin_csrf);
    ck_assert_int_eq(it_user_make(&a, &srv, admin_cookie, admin_csrf, "alice", 0), 0);
    ck_assert_int_eq(it_user_make(&b, &srv, admin_cookie, admin_csrf, "bob", 0), 0);
    ck_assert_int_eq(it_project_make(pid, sizeof(pid), &srv, a.hdrs, "meters", NULL, NULL), 0);
    it_ck_kernel_start(kid, sizeof(kid), &srv, a.hdrs, pid);
    limit = class_memory_bytes(a.hdrs, "cpu-basic");

    /* idle: every field there, the limits the class's, nothing charged on a free class */
    u = usage(a.hdrs, kid);
    ck_assert_str_eq(it_json_str(u, "kernel_id"), kid);
    ck_assert_msg(json_is_integer(json_object_get(u, "memory_limit_bytes")), "no memory limit: %s",
                  json_dumps(u, 0));
    ck_assert_int_eq((int64_t)num(u, "memory_limit_bytes"), limit);
    ck_assert_msg(num(u, "cpu_limit_cores") == 2.0, "cpu_limit_cores %g", num(u, "cpu_limit_cores"));
    ck_assert_msg(json_is_integer(json_object_get(u, "memory_bytes")) && num(u, "memory_bytes") > 0,
                  "memory_bytes of a live Python");
    ck_assert(json_is_array(json_object_get(u, "gpus")));
    ck_assert_int_eq(json_array_size(json_object_get(u, "gpus")), 0);
    ck_assert(json_is_true(json_object_get(u, "free")));
    ck_assert_int_eq((int64_t)num(u, "mcoins_so_far"), 0);
    ck_assert(num(u, "elapsed_ms") >= 0);
    json_decref(u);

    /* a busy thread and 200 MB: within 30 s a reading shows both */
    run_cell(&a, kid, BUSY_CELL);
    for (int i = 0; i < 30 && !seen; i++) {
        sleep_ms(1100);   /* past the 1 s cache: a new reading each time */
        u = usage(a.hdrs, kid);
        seen = json_is_number(json_object_get(u, "cpu_percent")) && num(u, "cpu_percent") > 30 &&
               num(u, "memory_bytes") > 150e6;
        if (!seen)
            fprintf(stderr, "usage %d: cpu %g%% over %g ms, memory %g\n", i, num(u, "cpu_percent"),
                    num(u, "cpu_window_ms"), num(u, "memory_bytes"));
        else {
            char *text = json_dumps(u, JSON_COMPACT);
            fprintf(stderr, "usage of the busy kernel: %s\n", text);
            free(text);
            ck_assert_int_eq((int64_t)num(u, "memory_limit_bytes"), limit);
        }
        json_decref(u);
    }
    ck_assert_msg(seen, "the meters never showed the busy cell (cpu > 30%%, memory > 150 MB)");

    /* the figures for the README (no assertion on them): a reading that
     * reads the cgroup, then 50 answered from the 1 s cache, over HTTP */
    {
        struct timespec t0, t1, t2;
        sleep_ms(1100);
        clock_gettime(CLOCK_MONOTONIC, &t0);
        ck_assert_int_eq(usage_status(a.hdrs, kid), 200);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        for (int i = 0; i < 50; i++)
            ck_assert_int_eq(usage_status(a.hdrs, kid), 200);
        clock_gettime(CLOCK_MONOTONIC, &t2);
        fprintf(stderr, "GET usage: %.2f ms reading the cgroup, %.2f ms from the cache\n",
                ((t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec)) / 1e6,
                ((t2.tv_sec - t1.tv_sec) * 1e9 + (t2.tv_nsec - t1.tv_nsec)) / 1e6 / 50);
    }

    /* bob: 404 as for any kernel not his; the admin may look; a bad id 404 */
    ck_assert_int_eq(usage_status(b.hdrs, kid), 404);
    u = usage(admin, kid);
    ck_assert_str_eq(it_json_str(u, "kernel_id"), kid);
    json_decref(u);
    ck_assert_int_eq(usage_status(a.hdrs, "00000000-0000-0000-0000-000000000000"), 404);
    ck_assert_int_eq(usage_status(NULL, kid), 401);

    /* dead: nothing live */
    char path[128];
    snprintf(path, sizeof(path), "/api/v1/kernels/%s", kid);
    ck_assert_int_eq(it_request_status(&srv, "DELETE", path, NULL, a.hdrs), 200);
    json_decref(it_kernel_wait(&srv, a.hdrs, kid, "dead", 30));
    sleep_ms(1100);
    u = usage(a.hdrs, kid);
    ck_assert_str_eq(it_json_str(u, "status"), "dead");
    ck_assert(json_is_null(json_object_get(u, "cpu_percent")));
    ck_assert(json_is_null(json_object_get(u, "memory_bytes")));
    json_decref(u);
    shutdown_all();
}
END_TEST

START_TEST(coins_so_far_grow_on_a_paid_class)
{
    static const char *const env[] = {"EDDY_METER_INTERVAL_MS=1000", NULL};
    it_user a;
    char pid[64], kid[64];
    const char *admin[3] = {admin_cookie, admin_csrf, NULL};
    json_t *u;
    int64_t last = 0;

    boot(env);
    /* 1,000 mcoins a second, no free time for the free tier */
    ck_assert_int_eq(it_request_status(&srv, "PUT", "/api/v1/admin/resources/cpu-basic",
                                       "{\"price_mcoins_per_hour\": 3600000}", admin),
                     200);
    ck_assert_int_eq(it_request_status(&srv, "PUT", "/api/v1/admin/tiers/free",
                                       "{\"free_ms_per_day\": {\"cpu-basic\": 0}}", admin),
                     200);
    ck_assert_int_eq(it_user_make(&a, &srv, admin_cookie, admin_csrf, "carol", 100000000), 0);
    ck_assert_int_eq(it_project_make(pid, sizeof(pid), &srv, a.hdrs, "paid", NULL, NULL), 0);
    it_ck_kernel_start(kid, sizeof(kid), &srv, a.hdrs, pid);
    for (int i = 0; i < 20 && last < 2000; i++) {
        sleep_ms(1100);
        u = usage(a.hdrs, kid);
        ck_assert(json_is_false(json_object_get(u, "free")));
        ck_assert_int_eq((int64_t)num(u, "price_mcoins_per_hour"), 3600000);
        ck_assert_int_eq((int64_t)num(u, "meter_interval_ms"), 1000);
        ck_assert_msg((int64_t)num(u, "mcoins_so_far") >= last, "coins so far went down");
        last = (int64_t)num(u, "mcoins_so_far");
        json_decref(u);
    }
    ck_assert_msg(last >= 2000, "after 20 s at 1,000 mcoins/s only %lld charged so far", (long long)last);
    shutdown_all();
}
END_TEST

/* A kernel on a GPU class lists its GPU; a simulated one has no hardware
 * to ask (nor has a host without NVML): its figures are null, not made up. */
START_TEST(a_gpu_kernel_lists_its_gpu_and_unknown_figures_are_null)
{
    static const char *const env[] = {"EDDY_SIM_GPUS=1", NULL};
    it_user a;
    char pid[64], kid[64], body[200];
    json_t *u, *g;

    boot(env);
    ck_assert_int_eq(it_user_make(&a, &srv, admin_cookie, admin_csrf, "dave", 0), 0);
    ck_assert_int_eq(it_project_make(pid, sizeof(pid), &srv, a.hdrs, "gpu", NULL, NULL), 0);
    snprintf(body, sizeof(body), "{\"project_id\":\"%s\",\"resource\":\"gpu-v100-16g\"}", pid);
    it_resp r;
    it_request(&r, &srv, "POST", "/api/v1/kernels", body, a.hdrs);
    ck_assert_msg(r.status == 201, "start on a simulated GPU: %ld %s", r.status, r.body);
    snprintf(kid, sizeof(kid), "%s", it_json_str(r.json, "id"));
    it_resp_free(&r);
    json_decref(it_kernel_wait(&srv, a.hdrs, kid, "idle", 60));
    u = usage(a.hdrs, kid);
    ck_assert_int_eq(json_array_size(json_object_get(u, "gpus")), 1);
    g = json_array_get(json_object_get(u, "gpus"), 0);
    ck_assert_int_eq(json_integer_value(json_object_get(g, "index")), 0);
    ck_assert(json_is_null(json_object_get(g, "util_percent")));
    ck_assert(json_is_null(json_object_get(g, "memory_bytes")));
    ck_assert(json_is_null(json_object_get(g, "memory_total_bytes")));
    /* its class's limits: 4 CPUs, 16 GiB; paid, with the tier's free GPU time first */
    ck_assert_int_eq((int64_t)num(u, "memory_limit_bytes"), class_memory_bytes(a.hdrs, "gpu-v100-16g"));
    ck_assert_msg(num(u, "cpu_limit_cores") == 4.0, "cpu_limit_cores %g", num(u, "cpu_limit_cores"));
    ck_assert(json_is_false(json_object_get(u, "free")));
    ck_assert_int_eq((int64_t)num(u, "price_mcoins_per_hour"), 2000);
    json_decref(u);
    shutdown_all();
}
END_TEST

/* What `eddy sandbox check` says on its "cgroup used" line: "v2", "v1", or
 * something else (none: no limits). */
static int host_cgroups(char *why, size_t n)
{
    static const char *const argv[] = {"eddy", "sandbox", "check", NULL};
    static it_run o;
    const char *line;
    char used[64] = "";

    it_run_eddy(&o, "/tmp", "/tmp", NULL, NULL, (const char *const *)argv);
    if ((line = strstr(o.out, "cgroup used")) != NULL)
        sscanf(line + strlen("cgroup used"), " %63s", used);
    if (strcmp(used, "v2") == 0 || strcmp(used, "v1") == 0)
        return 1;
    const char *v2 = strstr(o.out, "cgroup v2 (memory, pids, cpu)");
    const char *v1 = strstr(o.out, "cgroup v1 (memory, pids, cpu)");
    snprintf(why, n, "no cgroup controllers for kernels (cgroup used: '%s'; %.*s; %.*s)", used,
             v2 ? (int)strcspn(v2, "\n") : 0, v2 ? v2 : "", v1 ? (int)strcspn(v1, "\n") : 0, v1 ? v1 : "");
    return 0;
}

int main(void)
{
    const TTest *tests[] = {meters_show_a_busy_cells_cpu_and_memory_to_its_owner_only,
                            coins_so_far_grow_on_a_paid_class,
                            a_gpu_kernel_lists_its_gpu_and_unknown_figures_are_null, NULL};
    char why[600];

    if (!it_host_idmap(why, sizeof(why))) {
        printf("test_kernel_usage: %s; skipped\n", why);
        return 77;
    }
    if (!host_cgroups(why, sizeof(why))) {
        printf("test_kernel_usage: %s; skipped\n", why);
        return 77;
    }
    return it_tests_run("kernel_usage", 240, NULL, NULL, tests);
}
