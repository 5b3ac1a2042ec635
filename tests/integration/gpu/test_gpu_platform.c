/*
 * test_gpu_platform.c - GPUs in the platform, on a host without one: the
 * real `eddy serve` finds two GPUs through the fake NVML (fake_nvml.c,
 * EDDY_NVML_LIB) and hands out device nodes made with mknod in a directory
 * (EDDY_GPU_DEV_DIR: nvidia0, nvidia1, nvidiactl, nvidia-uvm, each with
 * /dev/null's numbers). Checked through the API and from inside the jobs:
 * - whole GPUs: a job holds its GPU alone, also against another GPU class
 *   (the classes share the host's devices), and the next job gets the one
 *   that is free; a job that needs a held GPU waits in the queue;
 * - the sandbox: a job given GPU 1 sees /dev/nvidia1, nvidiactl and
 *   nvidia-uvm only (no nvidia0: absent, not just refused), a CPU job no
 *   nvidia node at all; CUDA_VISIBLE_DEVICES names exactly its GPUs (UUIDs)
 *   and FLAGS_selected_gpus counts from 0 (CUDA's numbering inside);
 * - figures: GET /api/v1/jobs/{id} (and a kernel's GET where kernels run
 *   here) carry each GPU's name, utilisation and memory from NVML; the
 *   admin overview lists every GPU with who holds it;
 * - kill -9 of the server with GPU jobs running, then a restart: no GPU
 *   stays held by the dead jobs, and a two-GPU job gets both.
 * Needs root (the sandbox, mknod): exits 77 otherwise.
 */
#include "harness.h"

#include <check.h>
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

static it_server srv;
static char dir[64], data[128], devdir[64], devenv[128];
static char admin_cookie[512], admin_csrf[256];
static const char *env[] = {"EDDY_NVML_LIB=" FAKE_NVML_LIB, "FAKE_NVML_GPUS=2", "FAKE_NVML_UTIL=37",
                            "FAKE_NVML_MEM_USED_MB=1024", "FAKE_NVML_MEM_TOTAL_MB=16384",
                            "EDDY_STOP_GRACE_MS=1000", devenv, NULL};

#define UUID0 "GPU-00000000-0000-0000-0000-000000000000"
#define UUID1 "GPU-00000000-0000-0000-0000-000000000001"

/* Prints what the job sees of the GPUs; "sleep" keeps it running. */
static const char PROBE_PY[] =
    "import os, sys, time\n"
    "nv = sorted(e for e in os.listdir('/dev') if e.startswith('nvidia'))\n"
    "for n in nv:\n"
    "    os.close(os.open('/dev/' + n, os.O_RDWR))   # the device filter lets them open\n"
    "print('probe', ','.join(nv) or '-', os.environ.get('CUDA_VISIBLE_DEVICES', '-'),\n"
    "      os.environ.get('FLAGS_selected_gpus', '-'), 'end', flush=True)\n"
    "if sys.argv[1:] == ['sleep']:\n"
    "    time.sleep(300)\n";

static const char *const *admin_hdrs(void)
{
    static const char *h[3];
    h[0] = admin_cookie;
    h[1] = admin_csrf;
    h[2] = NULL;
    return h;
}

static void setup(void)
{
    ck_assert_int_eq(it_admin_server_start(&srv, dir, sizeof(dir), "gpu", env, admin_cookie, sizeof(admin_cookie),
                                           admin_csrf, sizeof(admin_csrf)),
                     0);
    snprintf(data, sizeof(data), "%s/data", dir);
    /* both GPU classes open to the free tier, two GPUs a job, eight at once
     * (max_kernels: the concurrency cap), no disk limit */
    ck_assert_int_eq(it_request_status(&srv, "PUT", "/api/v1/admin/resources/gpu-a100-40g",
                                       "{\"tiers\": [\"free\", \"pro\", \"premium\"]}", admin_hdrs()),
                     200);
    ck_assert_int_eq(it_request_status(&srv, "PUT", "/api/v1/admin/tiers/free",
                                       "{\"max_gpus_per_job\": 2, \"max_kernels\": 8, \"job_disk_bytes\": 0}",
                                       admin_hdrs()),
                     200);
}

static void teardown(void)
{
    ck_assert_int_eq(it_server_stop(&srv), 0);
    ck_assert_int_eq(it_dir_remove(dir), 0);
}

/* Submit probe.py of project `pid` on `resource` with `gpus`. */
static int64_t submit(it_user *u, const char *pid, const char *vid, const char *resource, int gpus, bool sleep_)
{
    char more[256], code[64];
    int64_t id = 0;
    long st;

    if (gpus > 0)
        snprintf(more, sizeof(more), "{\"resource\": \"%s\", \"gpus\": %d%s}", resource, gpus,
                 sleep_ ? ", \"args\": [\"sleep\"]" : "");
    else
        snprintf(more, sizeof(more), "{\"resource\": \"%s\"%s}", resource, sleep_ ? ", \"args\": [\"sleep\"]" : "");
    st = it_job_submit(&id, code, sizeof(code), &srv, u->hdrs, pid, vid, "probe.py", 600, more);
    ck_assert_msg(st == 201, "submit on %s: %ld %s", resource, st, code);
    return id;
}

/* The job's "probe ... end" line (waits for it), into out. */
static void probe_line(char *out, size_t n, it_user *u, int64_t id)
{
    char path[96], last[2048] = "";
    it_resp r;

    snprintf(path, sizeof(path), "/api/v1/jobs/%lld/logs", (long long)id);
    for (int i = 0; i < 600; i++) {
        const char *p, *e;
        ck_assert_int_eq(it_request(&r, &srv, "GET", path, NULL, u->hdrs), 0);
        if (r.status == 200 && r.body && (p = strstr(r.body, "probe ")) && (e = strstr(p, " end"))) {
            snprintf(out, n, "%.*s", (int)(e - p), p);
            it_resp_free(&r);
            return;
        }
        snprintf(last, sizeof(last), "%ld %s", r.status, r.body ? r.body : "");
        it_resp_free(&r);
        usleep(100000);
    }
    ck_abort_msg("job %lld printed no probe line: %s", (long long)id, last);
}

static json_t *job_get(it_user *u, int64_t id);

/* Wait for job `id` to run (the reason on stderr when it does not). */
static void wait_running(it_user *u, int64_t id)
{
    json_t *j = it_job_wait(&srv, u->hdrs, id, "running", 60);
    ck_assert_msg(j != NULL, "job %lld is not running (stderr says why)", (long long)id);
    json_decref(j);
}

static json_t *job_get(it_user *u, int64_t id)
{
    char path[64];
    snprintf(path, sizeof(path), "/api/v1/jobs/%lld", (long long)id);
    return it_get_json(&srv, u->hdrs, path);
}

static void assert_gpu_figures(const json_t *g, int index, const char *name)
{
    ck_assert_int_eq(json_integer_value(json_object_get(g, "index")), index);
    ck_assert_str_eq(it_json_str(g, "name"), name);
    ck_assert_int_eq(json_integer_value(json_object_get(g, "utilization_pct")), 37);
    ck_assert_int_eq(json_integer_value(json_object_get(g, "memory_used_mb")), 1024);
    ck_assert_int_eq(json_integer_value(json_object_get(g, "memory_total_mb")), 16384);
}

/* The job's GET: exactly the GPUs `index` (-1: none), with NVML's figures. */
static void assert_job_gpus(it_user *u, int64_t id, int index)
{
    json_t *j = job_get(u, id), *gpus;

    ck_assert_ptr_nonnull(j);
    gpus = json_object_get(j, "gpus");
    ck_assert_msg(json_is_array(gpus), "job %lld has no gpus array", (long long)id);
    ck_assert_int_eq(json_array_size(gpus), index < 0 ? 0 : 1);
    if (index >= 0) {
        char name[32];
        snprintf(name, sizeof(name), "Fake GPU %d", index);
        assert_gpu_figures(json_array_get(gpus, 0), index, name);
    }
    json_decref(j);
}

/* The overview's GPU `index`: the job holding it (0: free). */
static int64_t holder(int index)
{
    json_t *o = it_get_json(&srv, admin_hdrs(), "/api/v1/admin/overview"), *g, *h;
    int64_t id;

    ck_assert_ptr_nonnull(o);
    ck_assert_int_eq(json_array_size(json_object_get(o, "gpus")), 2);
    ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(o, "devices"), "gpus_found")), 2);
    g = json_array_get(json_object_get(o, "gpus"), (size_t)index);
    assert_gpu_figures(g, index, index ? "Fake GPU 1" : "Fake GPU 0");
    ck_assert_str_eq(it_json_str(g, "uuid"), index ? UUID1 : UUID0);
    h = json_object_get(g, "held_by");
    id = json_is_object(h) ? json_integer_value(json_object_get(h, "job_id")) : 0;
    if (id)
        ck_assert_str_eq(it_json_str(h, "kind"), "job");
    else
        ck_assert(json_is_null(h));
    json_decref(o);
    return id;
}

static const char *status_of(it_user *u, int64_t id, char *buf, size_t n)
{
    json_t *j = job_get(u, id);
    snprintf(buf, n, "%s", it_json_str(j, "status"));
    json_decref(j);
    return buf;
}

START_TEST(whole_gpus_isolated_in_the_sandbox_reported_and_freed_after_a_crash)
{
    it_user u;
    char pid[64], vid[64], line[512], st[32];
    int64_t a, b, c, cpu, d;
    json_t *j;
    int status;

    ck_assert_int_eq(it_user_make(&u, &srv, admin_cookie, admin_csrf, "gina", 10000000), 0);
    ck_assert_int_eq(it_project_make(pid, sizeof(pid), &srv, u.hdrs, "gpu-probe", "probe.py", PROBE_PY), 0);
    ck_assert_int_eq(it_version_make(vid, sizeof(vid), &srv, u.hdrs, pid, "probe"), 0);
    ck_assert_int_eq(holder(0), 0);
    ck_assert_int_eq(holder(1), 0);

    /* A: one GPU of the V100 class: GPU 0, its nodes only */
    a = submit(&u, pid, vid, "gpu-v100-16g", 1, true);
    wait_running(&u, a);
    probe_line(line, sizeof(line), &u, a);
    ck_assert_str_eq(line, "probe nvidia-uvm,nvidia0,nvidiactl " UUID0 " 0");
    assert_job_gpus(&u, a, 0);
    ck_assert_int_eq(holder(0), a);

    /* B: the A100 class draws on the same devices: GPU 1, never GPU 0 */
    b = submit(&u, pid, vid, "gpu-a100-40g", 1, true);
    wait_running(&u, b);
    probe_line(line, sizeof(line), &u, b);
    ck_assert_str_eq(line, "probe nvidia-uvm,nvidia1,nvidiactl " UUID1 " 0");
    assert_job_gpus(&u, b, 1);
    ck_assert_int_eq(holder(0), a);
    ck_assert_int_eq(holder(1), b);

    /* C: both GPUs are held: it waits (the scheduler ticks every 100 ms;
     * a double allocation would have started it by now) */
    c = submit(&u, pid, vid, "gpu-v100-16g", 1, true);
    for (int i = 0; i < 20; i++) {
        ck_assert_str_eq(status_of(&u, c, st, sizeof(st)), "queued");
        usleep(100000);
    }
    assert_job_gpus(&u, c, -1);
    /* B ends: C gets the GPU it freed */
    {
        char path[64];
        snprintf(path, sizeof(path), "/api/v1/jobs/%lld", (long long)b);
        ck_assert_int_eq(it_request_status(&srv, "DELETE", path, NULL, u.hdrs), 200);
    }
    json_decref(it_job_wait(&srv, u.hdrs, b, NULL, 60));
    assert_job_gpus(&u, b, -1);   /* ended: holds nothing */
    wait_running(&u, c);
    probe_line(line, sizeof(line), &u, c);
    ck_assert_str_eq(line, "probe nvidia-uvm,nvidia1,nvidiactl " UUID1 " 0");
    ck_assert_int_eq(holder(1), c);

    /* a CPU job sees no GPU node and no CUDA variable */
    cpu = submit(&u, pid, vid, "cpu-basic", 0, false);
    j = it_job_wait(&srv, u.hdrs, cpu, NULL, 60);
    ck_assert_str_eq(it_json_str(j, "status"), "succeeded");
    json_decref(j);
    probe_line(line, sizeof(line), &u, cpu);
    ck_assert_str_eq(line, "probe - - -");
    assert_job_gpus(&u, cpu, -1);

    /* kill -9 with A and C running, then a restart */
    ck_assert_int_eq(kill(srv.pid, SIGKILL), 0);
    ck_assert_int_eq(waitpid(srv.pid, &status, 0), srv.pid);
    srv.keep_data = 1;
    ck_assert_int_eq(it_server_start_in(&srv, data, env), 0);
    ck_assert_int_eq(it_login(&srv, IT_ADMIN_USER, IT_ADMIN_PASSWORD, admin_cookie, sizeof(admin_cookie), admin_csrf,
                              sizeof(admin_csrf)),
                     0);
    ck_assert_int_eq(it_login(&srv, u.name, u.pw, u.cookie, sizeof(u.cookie), u.csrf, sizeof(u.csrf)), 0);
    ck_assert_str_eq(status_of(&u, a, st, sizeof(st)), "failed");
    ck_assert_str_eq(status_of(&u, c, st, sizeof(st)), "failed");
    ck_assert_int_eq(holder(0), 0);
    ck_assert_int_eq(holder(1), 0);
    /* D: both GPUs, one rank each, numbered from 0 inside */
    d = submit(&u, pid, vid, "gpu-v100-16g", 2, false);
    j = it_job_wait(&srv, u.hdrs, d, NULL, 90);
    ck_assert_msg(strcmp(it_json_str(j, "status"), "succeeded") == 0, "D: %s", it_json_str(j, "status"));
    json_decref(j);
    {
        char path[96];
        it_resp r;
        snprintf(path, sizeof(path), "/api/v1/jobs/%lld/logs", (long long)d);
        ck_assert_int_eq(it_request(&r, &srv, "GET", path, NULL, u.hdrs), 0);
        ck_assert_msg(strstr(r.body, "[rank 0] probe nvidia-uvm,nvidia0,nvidia1,nvidiactl " UUID0 "," UUID1 " 0 end"),
                      "%s", r.body);
        ck_assert_msg(strstr(r.body, "[rank 1] probe nvidia-uvm,nvidia0,nvidia1,nvidiactl " UUID0 "," UUID1 " 1 end"),
                      "%s", r.body);
        it_resp_free(&r);
    }
}
END_TEST

/* A kernel on a GPU class (where kernels run here: idmapped mounts): its
 * GET carries its GPU's figures and the overview names it as a kernel. */
START_TEST(a_gpu_kernel_reports_its_gpu)
{
    char why[256], pid[64], kid[64], body[256], path[96];
    it_user u;
    it_resp r;
    json_t *k, *g, *o;

    if (!it_host_idmap(why, sizeof(why))) {
        printf("SKIP (kernel part): %s\n", why);
        return;
    }
    ck_assert_int_eq(it_user_make(&u, &srv, admin_cookie, admin_csrf, "kim", 10000000), 0);
    ck_assert_int_eq(it_project_make(pid, sizeof(pid), &srv, u.hdrs, "gpu-nb", "probe.py", PROBE_PY), 0);
    snprintf(body, sizeof(body), "{\"project_id\": \"%s\", \"resource\": \"gpu-v100-16g\"}", pid);
    ck_assert_int_eq(it_request(&r, &srv, "POST", "/api/v1/kernels", body, u.hdrs), 0);
    ck_assert_msg(r.status == 201, "%ld %s", r.status, r.body);
    snprintf(kid, sizeof(kid), "%s", it_json_str(r.json, "id"));
    it_resp_free(&r);
    k = it_kernel_wait(&srv, u.hdrs, kid, "idle", 60);
    ck_assert_ptr_nonnull(k);
    json_decref(k);
    snprintf(path, sizeof(path), "/api/v1/kernels/%s", kid);
    k = it_get_json(&srv, u.hdrs, path);
    ck_assert_int_eq(json_array_size(json_object_get(k, "gpus")), 1);
    g = json_array_get(json_object_get(k, "gpus"), 0);
    assert_gpu_figures(g, 0, "Fake GPU 0");
    json_decref(k);
    /* the live meters name it too */
    snprintf(path, sizeof(path), "/api/v1/kernels/%s/usage", kid);
    k = it_get_json(&srv, u.hdrs, path);
    g = json_array_get(json_object_get(k, "gpus"), 0);
    ck_assert_str_eq(it_json_str(g, "name"), "Fake GPU 0");
    ck_assert_int_eq(json_integer_value(json_object_get(g, "util_percent")), 37);
    json_decref(k);
    snprintf(path, sizeof(path), "/api/v1/kernels/%s", kid);
    o = it_get_json(&srv, admin_hdrs(), "/api/v1/admin/overview");
    ck_assert_str_eq(it_json_str(json_object_get(json_array_get(json_object_get(o, "gpus"), 0), "held_by"), "kind"),
                     "kernel");
    json_decref(o);
    ck_assert_int_eq(it_request_status(&srv, "DELETE", path, NULL, u.hdrs), 200);
}
END_TEST

int main(void)
{
    const TTest *tests[] = {whole_gpus_isolated_in_the_sandbox_reported_and_freed_after_a_crash,
                            a_gpu_kernel_reports_its_gpu, NULL};
    static const char *const nodes[] = {"nvidia0", "nvidia1", "nvidiactl", "nvidia-uvm"};
    char path[128];
    int rc;

    if (geteuid() != 0) {
        printf("SKIP: jobs run in the sandbox and fake GPU nodes need mknod, both root on this host\n");
        return 77;
    }
    snprintf(devdir, sizeof(devdir), "/tmp/eddy-it-gpudev-XXXXXX");
    if (mkdtemp(devdir) == NULL || chmod(devdir, 0755) < 0)
        return 1;
    for (size_t i = 0; i < sizeof(nodes) / sizeof(nodes[0]); i++) {
        snprintf(path, sizeof(path), "%s/%s", devdir, nodes[i]);
        if (mknod(path, S_IFCHR | 0666, makedev(1, 3)) < 0 || chmod(path, 0666) < 0) {
            printf("SKIP: mknod %s: %s (fake GPU nodes cannot be made here)\n", path, strerror(errno));
            it_dir_remove(devdir);
            return 77;
        }
    }
    snprintf(devenv, sizeof(devenv), "EDDY_GPU_DEV_DIR=%s", devdir);
    rc = it_tests_run("gpu_platform", 500, setup, teardown, tests);
    it_dir_remove(devdir);
    return rc;
}
