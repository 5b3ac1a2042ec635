/*
 * exec_local.c - the executor "local": each job runs in one sandbox
 * (sandbox/) on this host, as an unprivileged uid slot, with the job's tree
 * at /home/aistudio/work and its output directory at /home/aistudio/output.
 *
 * The program is `eddy-kernel run <entry> [args]` when eddy-kernel is
 * configured (EDDY_KERNEL_BIN) or installed next to `eddy`; until then .py
 * entries run with /usr/bin/python3 behind the same interface. A job with
 * N ranks (N GPUs, or `ranks` on a CPU class) runs the ranks' supervisor
 * (ranks.c) in its one sandbox, which starts the N ranks there, each with
 * PADDLE_TRAINER_ID, PADDLE_TRAINERS_NUM, PADDLE_TRAINER_ENDPOINTS,
 * PADDLE_CURRENT_ENDPOINT and FLAGS_selected_gpus as
 * `python -m paddle.distributed.launch` sets them, prefixes their lines with
 * "[rank i] " and ends them all when one fails. One sandbox per job, not per
 * rank: the ranks rendezvous over the sandbox's own loopback (a sandbox has
 * no network to another one), the job's cgroup holds all its units' CPUs and
 * memory and its GPUs, and one slot uid owns the job's tree. An interactive kernel
 * (entry SCHED_KERNEL_ENTRY) runs `eddy-kernel serve --fd N` on one end of
 * a socketpair (kept open in the sandbox at the same number); the other end
 * goes to the kernel hook (kernels.c), or is closed when there is none.
 *
 * A batch job works on its own copy (DATA/jobs/<id>/work, an immutable
 * version's tree), handed to its slot uid. A kernel works in its project's
 * live working tree, DATA/projects/<project id>: bound read-write at
 * /home/aistudio/work through an idmapped mount (SBX_BIND_IDMAP), so nothing
 * is copied or chowned and the files stay the server's on disk (what the
 * kernel writes too), with the repository hidden (SBX_BIND_HIDE_GIT).
 */
#include "sched.h"
#include "sched_int.h"

#include "ed_error.h"
#include "ed_json.h"
#include "sbx.h"

#include <errno.h>
#include <limits.h>
#include <libgen.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

/* Built with AddressSanitizer (GCC's macro, or clang's feature test). */
#if defined(__SANITIZE_ADDRESS__)
#define EXEC_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define EXEC_ASAN 1
#endif
#endif
#ifndef EXEC_ASAN
#define EXEC_ASAN 0
#endif

#define RANK_BASE_PORT 6170
#define MAX_ARGS 80

/* eddy-kernel on the host, or "" when it is not there. */
void sched__kernel_path(char *out, size_t n, const sched *s)
{
    char exe[400], dir[400];
    ssize_t len;

    out[0] = '\0';
    if (s->cfg.kernel_bin[0]) {
        if (access(s->cfg.kernel_bin, X_OK) == 0)
            snprintf(out, n, "%s", s->cfg.kernel_bin);
        return;
    }
    if ((len = readlink("/proc/self/exe", exe, sizeof(exe) - 1)) <= 0)
        return;
    exe[len] = '\0';
    snprintf(dir, sizeof(dir), "%s", dirname(exe));
    snprintf(out, n, "%s/eddy-kernel", dir);
    if (access(out, X_OK) == 0)
        return;
    snprintf(out, n, "%s/../kernel_runner/eddy-kernel", dir);
    if (access(out, X_OK) == 0)
        return;
    out[0] = '\0';
}

/* The `paddle` package's folder on the host (EDDY_PADDLE_DIR, or the build
 * tree's framework/python next to `eddy`), or "" when there is none. */
void sched__paddle_dir(char *out, size_t n)
{
    const char *env = getenv("EDDY_PADDLE_DIR");
    char exe[400], dir[400];
    struct stat sb;
    ssize_t len;

    out[0] = '\0';
    if (env && env[0]) {
        if (stat(env, &sb) == 0 && S_ISDIR(sb.st_mode))
            snprintf(out, n, "%s", env);
        return;
    }
    if ((len = readlink("/proc/self/exe", exe, sizeof(exe) - 1)) <= 0)
        return;
    exe[len] = '\0';
    snprintf(dir, sizeof(dir), "%s", dirname(exe));
    snprintf(out, n, "%s/../framework/python", dir);
    if (stat(out, &sb) != 0 || !S_ISDIR(sb.st_mode))
        out[0] = '\0';
}

/* EDDY_DATASETS=[{"name":"owner/slug","version":3,"path":"/home/aistudio/data/owner-slug"}, ...]
 * (always set, "[]" when none), malloc'd into *out. */
static int datasets_env_make(char **out, const sched_mount *m, size_t n)
{
    json_t *a = json_array();
    char *text;
    size_t len;

    *out = NULL;
    for (size_t i = 0; a && i < n; i++)
        if (json_array_append_new(a, json_pack("{s:s, s:I, s:s}", "name", m[i].name, "version",
                                               (json_int_t)m[i].version, "path", m[i].path)) < 0) {
            json_decref(a);
            a = NULL;
        }
    text = a ? json_dumps(a, JSON_COMPACT) : NULL;
    json_decref(a);
    if (!text)
        return ed_error_set(ED_ENOMEM, "EDDY_DATASETS");
    len = strlen(text) + sizeof("EDDY_DATASETS=");
    if ((*out = malloc(len)) == NULL) {
        free(text);
        return ed_error_set(ED_ENOMEM, "EDDY_DATASETS");
    }
    snprintf(*out, len, "EDDY_DATASETS=%s", text);
    free(text);
    return 0;
}

/* "CUDA_VISIBLE_DEVICES=GPU-<uuid>,..." for the GPUs `r` holds, in their
 * order, into buf: exactly those devices whatever the driver's numbering
 * (CUDA ordinals follow the order listed). false when a UUID is unknown:
 * the sandbox then numbers them 0..n-1 (sbx_launch.c). */
static bool gpu_uuids(char *buf, size_t cap, const sched *s, const sched__running *r)
{
    size_t at = (size_t)snprintf(buf, cap, "CUDA_VISIBLE_DEVICES=");

    for (int k = 0; k < r->units && k < 16; k++) {
        const char *uuid = "";
        for (int g = 0; g < s->ngpus; g++)
            if (s->gpus[g].minor == r->devices[k])
                uuid = s->gpus[g].uuid;
        if (uuid[0] == '\0' || at + strlen(uuid) + 2 >= cap)
            return false;
        at += (size_t)snprintf(buf + at, cap - at, "%s%s", k ? "," : "", uuid);
    }
    return r->units > 0;
}

static int local_launch(sched *s, sched__running *r, const sched_job_info *j, const sched_resource *cls,
                        bool egress, const char *job_dir)
{
    char kernel[512] = "", kdir[512], work[760], output[760], entry_in[300], nb_out[400], paddle[512];
    char tree[760], nranks[16], rport[16], rdevs[128] = "";
    char *argv[MAX_ARGS + 8], *env[26];
    char envbuf[24][700];
    char *datasets_env = NULL;
    json_t *args = NULL;
    sbx_spec sp;
    sbx_bind rw[2], ro[2 + SCHED_MOUNTS_MAX];
    size_t na = 0, ne = 0, nlen = strlen(j->entry);
    bool notebook = nlen > 6 && strcmp(j->entry + nlen - 6, ".ipynb") == 0;
    bool simulated = sched__simulated(s, cls);
    bool kmode = strcmp(j->entry, SCHED_KERNEL_ENTRY) == 0;   /* an interactive kernel */
    int ksock[2] = {-1, -1};
    char kfd[16];
    int err;

    sched__kernel_path(kernel, sizeof(kernel), s);
    if (notebook && kernel[0] == '\0')
        return ed_error_set(ED_EUNPROC, "notebook entries need eddy-kernel, which is not installed on this host");
    if (kmode && kernel[0] == '\0')
        return ed_error_set(ED_EUNPROC, "interactive kernels need eddy-kernel, which is not installed on this host");
    snprintf(work, sizeof(work), "%s/work", job_dir);
    if (kmode) {
        /* the project's live working tree (project ids are 'p' + base62) */
        size_t n = strlen(j->project_id);
        if (n == 0 || n > 63 || strspn(j->project_id, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789") != n)
            return ed_error_set(ED_EINVAL, "project id '%.64s' is not a project's", j->project_id);
        snprintf(tree, sizeof(tree), "%s/projects/%s", s->cfg.data_dir, j->project_id);
        struct stat tst;
        if (lstat(tree, &tst) < 0 || !S_ISDIR(tst.st_mode))
            return ed_error_set(ED_ENOTFOUND, "the working tree of project %s is gone", j->project_id);
    }
    snprintf(output, sizeof(output), "%s/output", job_dir);
    snprintf(entry_in, sizeof(entry_in), "/home/aistudio/work/%s", j->entry);
    if (ed_json_parse(&args, j->args_json, strlen(j->args_json), 2) < 0 || !json_is_array(args) ||
        json_array_size(args) > MAX_ARGS - 8) {
        json_decref(args);
        return ed_error_set(ED_EINVAL, "job arguments are not an array of at most %d strings", MAX_ARGS - 8);
    }
    if (r->ranks > 1 && !kmode) {
        /* the supervisor starts the ranks (ranks.c) */
        snprintf(nranks, sizeof(nranks), "%d", r->ranks);
        snprintf(rport, sizeof(rport), "%d", RANK_BASE_PORT);
        /* FLAGS_selected_gpus: CUDA's ordinals inside (0..n-1: only the
         * allocated GPUs exist there); a simulated class's indices */
        for (int k = 0; cls->gpu && k < r->units && k < 16; k++)
            snprintf(rdevs + strlen(rdevs), sizeof(rdevs) - strlen(rdevs), "%s%d", k ? "," : "",
                     r->gpu_real ? k : r->devices[k]);
        argv[na++] = "/usr/bin/python3";
        argv[na++] = "-c";
        argv[na++] = (char *)sched__ranks_py;
        argv[na++] = nranks;
        argv[na++] = rport;
        argv[na++] = rdevs[0] ? rdevs : "-";
        argv[na++] = "--";
    }
    if (kmode) {
        /* serve over one end of a socketpair; the hook gets the other */
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ksock) < 0) {
            json_decref(args);
            return ed_error_set(ED_EIO, "kernel socket: %s", strerror(errno));
        }
        snprintf(kfd, sizeof(kfd), "%d", ksock[1]);
        argv[na++] = "/opt/eddy/bin/eddy-kernel";
        argv[na++] = "serve";
        argv[na++] = "--fd";
        argv[na++] = kfd;
    } else if (kernel[0]) {
        argv[na++] = "/opt/eddy/bin/eddy-kernel";
        argv[na++] = "run";
    } else {
        /* Line-buffered like eddy-kernel run: ranks sharing a log never
         * interleave within a line, and lines still show up at once. */
        argv[na++] = "/usr/bin/python3";
        argv[na++] = "-c";
        argv[na++] = "import runpy, sys\n"
                     "for s in (sys.stdout, sys.stderr):\n"
                     "    s.reconfigure(line_buffering=True, write_through=False)\n"
                     "sys.argv = sys.argv[1:]\n"
                     "runpy.run_path(sys.argv[0], run_name='__main__')\n";
    }
    if (!kmode)
        argv[na++] = entry_in;
    if (notebook && !kmode) {
        /* the executed notebook is an artifact */
        const char *base = strrchr(j->entry, '/') ? strrchr(j->entry, '/') + 1 : j->entry;
        snprintf(nb_out, sizeof(nb_out), "/home/aistudio/output/%s", base);
        argv[na++] = "--out";
        argv[na++] = nb_out;
    }
    for (size_t i = 0; i < json_array_size(args) && !kmode; i++)
        argv[na++] = (char *)json_string_value(json_array_get(args, i));
    argv[na] = NULL;

#define ENV(...) (snprintf(envbuf[ne], sizeof(envbuf[ne]), __VA_ARGS__), env[ne] = envbuf[ne], ne++)
    ENV("PATH=/usr/local/bin:/usr/bin:/bin");
    ENV("HOME=/home/aistudio");
    ENV("USER=aistudio");
    ENV("LANG=C.UTF-8");
    ENV("PYTHONUNBUFFERED=1");
    ENV("EDDY_JOB_ID=%lld", (long long)j->id);
    ENV("EDDY_OUTPUT_DIR=/home/aistudio/output");
    ENV("EDDY_RUNNER=%s", kernel[0] ? "eddy-kernel" : "python3");
#if EXEC_ASAN
    /* An ASan build's eddy-kernel is ASan too. LeakSanitizer stops the world
     * with ptrace at exit, which the sandbox's seccomp filter denies, so it
     * would end every job with "LeakSanitizer has encountered a fatal error"
     * and exit 1. Leak checking is off inside the sandbox only (the host's
     * ASAN_OPTIONS are not passed in: the job's environment is an explicit
     * list, and host paths such as log_path do not exist in there). */
    ENV("ASAN_OPTIONS=detect_leaks=0");
#endif
    sched__paddle_dir(paddle, sizeof(paddle));
    if (paddle[0]) {
        /* canonical: the launcher accepts binds only beneath its roots, by name */
        char canon[PATH_MAX];
        if (realpath(paddle, canon) && strlen(canon) < sizeof(paddle))
            snprintf(paddle, sizeof(paddle), "%s", canon);
    }
    if (paddle[0]) {
        /* `import paddle` from the read-only package folder */
        ENV("EDDY_PYTHONPATH=/opt/eddy/python");
        ENV("PYTHONPATH=/opt/eddy/python");
    }
    if (cls->gpu && r->ranks <= 1) {
        /* one rank: its environment here (the supervisor sets it for several) */
        ENV("PADDLE_TRAINERS_NUM=1");
        ENV("PADDLE_TRAINER_ENDPOINTS=127.0.0.1:%d", RANK_BASE_PORT);
        ENV("PADDLE_TRAINER_ID=0");
        ENV("PADDLE_CURRENT_ENDPOINT=127.0.0.1:%d", RANK_BASE_PORT);
        ENV("FLAGS_selected_gpus=%d", r->gpu_real ? 0 : r->devices[0]);
    }
    if (cls->gpu && r->gpu_real && gpu_uuids(envbuf[ne], sizeof(envbuf[ne]), s, r))
        env[ne] = envbuf[ne], ne++;
    if (cls->gpu && simulated)
        ENV("EDDY_SIMULATED_GPUS=1");
#undef ENV
    /* the datasets (mounts.c): where they are, and which versions */
    if ((err = datasets_env_make(&datasets_env, r->mounts, r->n_mounts)) < 0)
        goto out;
    env[ne++] = "EDDY_DATA_DIR=" SCHED_DATA_DIR;
    env[ne++] = datasets_env;
    env[ne] = NULL;

    if ((err = sched__disk_job_attach(s, j->id)) < 0)   /* its disk quota tree, again after a restart */
        goto out;
    if ((err = sbx_slot_claim(&r->slot, s->cfg.slot_dir, s->cfg.slot_base, s->cfg.slot_count)) < 0)
        goto out;
    /* The job's trees go to its slot uid (through the launcher when the
     * server runs unprivileged; it gives them back when the job ends). The
     * output's top stays searchable and readable by others (0755): what the
     * job writes there under its umask 022 can then be listed and served
     * while it runs; nobody else reaches it (the data directory is 0700). */
    if (chmod(output, 0755) < 0) {
        err = ed_error_set(ED_EIO, "cannot open %s to the server: %s", output, strerror(errno));
        goto out;
    }
    if ((!kmode && (err = sbx_tree_give(work, sbx_slot_uid(r->slot), sbx_slot_uid(r->slot))) < 0) ||
        (err = sbx_tree_give(output, sbx_slot_uid(r->slot), sbx_slot_uid(r->slot))) < 0)
        goto out;
    sbx_spec_init(&sp);
    sp.argv = argv;
    sp.env = env;
    sp.host_uid = sbx_slot_uid(r->slot);
    sp.host_gid = sbx_slot_uid(r->slot);
    if (kmode)
        rw[0] = (sbx_bind){tree, "/home/aistudio/work", SBX_BIND_IDMAP | SBX_BIND_HIDE_GIT};
    else
        rw[0] = (sbx_bind){work, "/home/aistudio/work", 0};
    rw[1] = (sbx_bind){output, "/home/aistudio/output", 0};
    sp.rw = rw;
    sp.n_rw = 2;
    sp.ro = ro;
    if (paddle[0])
        ro[sp.n_ro++] = (sbx_bind){paddle, "/opt/eddy/python", 0};
    if (kernel[0]) {
        char canon[PATH_MAX], *d;
        snprintf(kdir, sizeof(kdir), "%s", kernel);
        d = dirname(kdir);
        if (realpath(d, canon) && strlen(canon) < sizeof(kdir))
            snprintf(kdir, sizeof(kdir), "%s", canon);
        else if (d != kdir)
            memmove(kdir, d, strlen(d) + 1);
        ro[sp.n_ro++] = (sbx_bind){kdir, "/opt/eddy/bin", 0};
        /* the bound directory must hold it under this name */
        if (strcmp(strrchr(kernel, '/') + 1, "eddy-kernel") != 0) {
            err = ed_error_set(ED_EINVAL, "EDDY_KERNEL_BIN must be a file named eddy-kernel");
            goto out;
        }
    }
    /* each dataset's read-only tree (hard links to 0444 blobs) bound
     * read-only at SCHED_DATA_DIR/<owner>-<slug>: nothing copied, writes
     * fail with EROFS */
    for (size_t i = 0; i < r->n_mounts && i < SCHED_MOUNTS_MAX; i++)
        ro[sp.n_ro++] = (sbx_bind){r->mounts[i].tree, r->mounts[i].path, 0};
    sp.mem_bytes = (int64_t)(cls->memory_mb > 0 ? cls->memory_mb : 1024) * (r->units > 0 ? r->units : 1) << 20;
    sp.cpu_millis = (cls->cpus > 0 ? cls->cpus : 1) * 1000 * (r->units > 0 ? r->units : 1);
    sp.pids = 256 * (r->units > 0 ? r->units : 1) + 16;   /* + the supervisor */
    sp.tmp_bytes = 256LL << 20;
    sp.fsize_bytes = 4LL << 30;     /* no single file (the log included) past 4 GiB */
    sp.wall_ms = (int)((r->end_by - r->started_at) + s->cfg.stop_grace_ms + 2000);
    sp.net = egress ? SBX_NET_HOST : SBX_NET_LOOPBACK;
    if (cls->gpu && r->gpu_real) {
        /* its whole GPUs' nodes, nothing of the others (gpu_alloc.c) */
        for (int k = 0; k < r->units && k < SBX_MAX_GPUS; k++)
            sp.gpus[k] = r->devices[k];
        sp.n_gpus = (size_t)(r->units < SBX_MAX_GPUS ? r->units : SBX_MAX_GPUS);
    }
    sp.stdio[0] = -1;
    sp.stdio[1] = r->log_fd;
    sp.stdio[2] = r->log_fd;
    sp.allow_degraded = getenv("EDDY_SANDBOX_DEGRADED") && strcmp(getenv("EDDY_SANDBOX_DEGRADED"), "1") == 0;
    if (kmode) {
        sp.pass_fds = &ksock[1];
        sp.n_pass_fds = 1;
    }
    err = sbx_launch(&r->job, &sp);
    if (err == 0 && kmode) {
        close(ksock[1]);
        ksock[1] = -1;
        if (s->kernel_hook)
            s->kernel_hook(s->kernel_hook_arg, j->id, ksock[0]);   /* takes the fd */
        else
            close(ksock[0]);
        ksock[0] = -1;
    }
out:
    json_decref(args);
    free(datasets_env);
    if (ksock[0] >= 0)
        close(ksock[0]);
    if (ksock[1] >= 0)
        close(ksock[1]);
    if (err < 0) {
        sbx_slot_free(r->slot);
        r->slot = NULL;
        r->job = NULL;
    }
    return err;
}

static int local_poll(sched__running *r, sched__outcome *out)
{
    sbx_usage u;
    int err;

    memset(out, 0, sizeof(*out));
    if (r->job == NULL)
        return 1;
    if ((err = sbx_job_wait(r->job, 0, &u)) == ED_EBUSY)
        return 0;
    if (err < 0) {
        out->term_signal = SIGKILL;
        return 1;
    }
    out->exited = u.exited != 0;
    out->exit_code = u.exit_code;
    out->term_signal = u.term_signal;
    out->oom = u.limit == SBX_LIMIT_MEMORY;
    out->wall = u.limit == SBX_LIMIT_WALL;
    out->cpu_ms = u.cpu_ms;
    out->peak_mem_bytes = u.peak_mem_bytes;
    return 1;
}

static int local_signal(sched__running *r, int sig)
{
    if (r->job == NULL)
        return 0;
    return sig == SIGKILL ? sbx_job_kill(r->job) : sbx_job_signal(r->job, sig);
}

static void local_release(sched__running *r)
{
    sbx_job_free(r->job);
    r->job = NULL;
    sbx_slot_free(r->slot);
    r->slot = NULL;
}

const sched__executor sched__exec_local = {"local", local_launch, local_poll, local_signal, local_release,
                                           NULL, NULL, NULL};
