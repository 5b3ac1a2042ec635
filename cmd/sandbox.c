/*
 * eddy sandbox check | run - the sandbox for operators and tests.
 *
 *   eddy sandbox check [--data DIR]     (also: the disk quota mechanism for DIR,
 *                                       default $EDDY_DATA_DIR or ./data)
 *   eddy sandbox run [--mem MB] [--cpus N] [--pids N] [--wall S]
 *                    [--net none|loopback|host] [--ro SRC:DST] [--rw SRC:DST]
 *                    [--tmpfs DST:MB] [--gpu K] [--nofile N] [--fsize MB]
 *                    [--cpu-time S] [--cwd DIR] [--env K=V] [--uid N]
 *                    [--allow-degraded] -- CMD [ARGS...]
 *
 * run exits with the program's status (128+N when signal N killed it), 124
 * with a message when a limit ended it, 125 when the sandbox could not start
 * it, 2 on bad usage. Without --uid the job's host uid is a free slot from
 * $EDDY_SBX_UID_BASE (200000) + 0..999, locked in $EDDY_SBX_SLOT_DIR
 * (/run/eddy-sandbox).
 */
#include "cmd.h"
#include "ed_error.h"
#include "sbx.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXIT_LIMIT   124
#define EXIT_SANDBOX 125
#define MAX_LIST     32

static const char run_usage[] =
    "usage: eddy sandbox run [--mem MB] [--cpus N] [--pids N] [--wall S]\n"
    "         [--net none|loopback|host] [--ro SRC:DST] [--rw SRC:DST] [--tmpfs DST:MB]\n"
    "         [--gpu K] [--nofile N] [--fsize MB] [--cpu-time S] [--cwd DIR] [--env K=V]\n"
    "         [--uid N] [--allow-degraded] -- CMD [ARGS...]\n";

static volatile sig_atomic_t pending_sig;

static void on_signal(int sig)
{
    pending_sig = sig;
}

static int parse_num(const char *s, double lo, double hi, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

/* SRC:DST -> two strings pointing into `arg` (which is modified). */
static int split_pair(char *arg, const char **a, const char **b)
{
    char *colon = strrchr(arg, ':');
    if (!colon || colon == arg || !colon[1])
        return -1;
    *colon = '\0';
    *a = arg;
    *b = colon + 1;
    return 0;
}

/* Which disk quota mechanism a server with this data directory would use
 * (sbx_disk_probe without making the loop volume). */
static void check_disk(const char *data_dir)
{
    char abs[PATH_MAX];
    const char *dir = data_dir;
    sbx_disk d;

    if (realpath(data_dir, abs) != NULL) {
        dir = abs;
    } else {
        printf("%-32s %s does not exist; probed /var/tmp instead\n", "disk quota data directory", data_dir);
        dir = "/var/tmp";
    }
    if (sbx_disk_probe(&d, dir, 0, 0) < 0) {
        printf("%-32s none (%s)\n", "disk quotas", ed_error_last());
        return;
    }
    printf("%-32s %s\n", "disk quotas", sbx_disk_mech_name(d.mech));
    printf("%-32s %s\n", "disk quota detail", d.detail);
    if (d.mech == SBX_DISK_NONE)
        printf("%-32s %s\n", "disk quota verdict",
               "jobs of tiers with a job_disk_bytes limit will not start, and projects of tiers with a "
               "workspace_bytes limit cannot be created nor run kernels (fail closed)");
    /* each project's working tree is one tree of the same mechanism
     * (projects/README.md "Workspace quota") */
    printf("%-32s %s: %s\n", "workspace quotas", sbx_disk_mech_name(d.mech),
           d.mech == SBX_DISK_PRJQUOTA ? "each project's directory gets a project id and its tier's limit "
                                         "(workspace_bytes enforced)"
           : d.mech == SBX_DISK_VOLUME ? "each project is a directory of the loop volume with a project quota, "
                                         "bind-mounted onto DATA/projects/<id> (workspace_bytes enforced)"
           : d.mech == SBX_DISK_IMAGES ? "each project is an ext4 image of its tier's size, loop-mounted onto "
                                         "DATA/projects/<id> at first use (workspace_bytes enforced)"
                                       : "cannot be enforced: set every tier's workspace_bytes to 0");
    char why[256];
    int idmap = sbx_idmap_probe(dir, why, sizeof(why));
    printf("%-32s idmapped bind mounts: %s%s%s%s\n", "workspaces", idmap ? "yes" : "no", idmap ? "" : " (",
           idmap ? "" : why, idmap ? "" : "; kernels will not start)");
}

static int do_check(const char *data_dir)
{
    sbx_caps c;
    if (sbx_check(&c) < 0) {
        fprintf(stderr, "eddy sandbox check: %s\n", ed_error_last());
        return 1;
    }
    const struct { const char *name; int ok; } rows[] = {
        {"user namespace", c.userns}, {"pid namespace", c.pidns},
        {"mount namespace", c.mntns}, {"network namespace", c.netns},
        {"ipc namespace", c.ipcns}, {"uts namespace", c.utsns},
        {"cgroup namespace", c.cgroupns}, {"seccomp filter", c.seccomp},
        {"cgroup v2 (memory, pids, cpu)", c.cgroup_v2},
        {"cgroup v1 (memory, pids, cpu)", c.cgroup_v1},
        {"cgroup v1 devices", c.cgroup_v1_devices},
    };
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
        printf("%-32s %s\n", rows[i].name, rows[i].ok ? "yes" : "no");
    printf("%-32s %d\n", "gpu device nodes", c.gpus);
    printf("%-32s %s\n", "cgroup used",
           c.cgroup_v2 ? (c.v2_root[0] ? c.v2_root : "v2") : c.cgroup_v1 ? "v1" : "none");
    printf("%-32s %s\n", "test launch", c.launch ? "ok" : "failed");
    const char *verdict = !c.launch ? "unavailable" : c.degraded_only
                          ? "degraded (no cgroup limits; needs --allow-degraded)" : "full";
    printf("%-32s %s\n", "confinement", verdict);
    if (c.detail[0])
        printf("%-32s %s\n", "detail", c.detail);
    check_disk(data_dir);
    return c.launch && !c.degraded_only ? 0 : 1;
}

static int do_run(int argc, char **argv)
{
    sbx_spec s;
    sbx_bind ro[MAX_LIST], rw[MAX_LIST];
    sbx_tmpfs tmpfs[MAX_LIST];
    char *env[MAX_LIST + 1];
    size_t n_env = 0;
    sbx_slot *slot = NULL;
    sbx_job *j = NULL;
    sbx_usage u;
    unsigned uid = 0;
    double v;
    int i, rc;

    sbx_spec_init(&s);
    s.ro = ro;
    s.rw = rw;
    s.tmpfs = tmpfs;
    for (i = 1; i < argc; i++) {
        const char *o = argv[i];
        if (strcmp(o, "--") == 0) {
            i++;
            break;
        }
        if (strcmp(o, "--allow-degraded") == 0) {
            s.allow_degraded = 1;
            continue;
        }
        if (o[0] != '-' || o[1] != '-')
            break;
        if (i + 1 >= argc) {
            fprintf(stderr, "eddy sandbox run: %s needs a value\n%s", o, run_usage);
            return 2;
        }
        char *val = argv[++i];
        const char *a, *b;
        if (strcmp(o, "--mem") == 0 && parse_num(val, 4, 1 << 24, &v) == 0) {
            s.mem_bytes = (int64_t)(v * 1024 * 1024);
        } else if (strcmp(o, "--cpus") == 0 && parse_num(val, 0.01, 4096, &v) == 0) {
            s.cpu_millis = (int)(v * 1000);
        } else if (strcmp(o, "--pids") == 0 && parse_num(val, 1, 1 << 22, &v) == 0) {
            s.pids = (int)v;
        } else if (strcmp(o, "--wall") == 0 && parse_num(val, 0.001, 1e6, &v) == 0) {
            s.wall_ms = (int)(v * 1000);
        } else if (strcmp(o, "--nofile") == 0 && parse_num(val, 4, 1 << 20, &v) == 0) {
            s.nofile = (int)v;
        } else if (strcmp(o, "--fsize") == 0 && parse_num(val, 0.001, 1 << 24, &v) == 0) {
            s.fsize_bytes = (int64_t)(v * 1024 * 1024);
        } else if (strcmp(o, "--cpu-time") == 0 && parse_num(val, 1, 1e6, &v) == 0) {
            s.cpu_s = (int)v;
        } else if (strcmp(o, "--uid") == 0 && parse_num(val, 1, 4e9, &v) == 0) {
            uid = (unsigned)v;
        } else if (strcmp(o, "--cwd") == 0) {
            s.cwd = val;
        } else if (strcmp(o, "--env") == 0 && strchr(val, '=') && n_env < MAX_LIST) {
            env[n_env++] = val;
        } else if (strcmp(o, "--net") == 0 &&
                   (strcmp(val, "none") == 0 || strcmp(val, "loopback") == 0 ||
                    strcmp(val, "host") == 0)) {
            s.net = val[0] == 'n' ? SBX_NET_NONE : val[0] == 'l' ? SBX_NET_LOOPBACK : SBX_NET_HOST;
        } else if ((strcmp(o, "--ro") == 0 || strcmp(o, "--rw") == 0) &&
                   split_pair(val, &a, &b) == 0) {
            sbx_bind *list = o[3] == 'o' ? ro : rw;
            size_t *n = o[3] == 'o' ? &s.n_ro : &s.n_rw;
            if (*n >= MAX_LIST) {
                fprintf(stderr, "eddy sandbox run: too many %s\n", o);
                return 2;
            }
            list[*n].src = a;
            list[*n].flags = 0;
            list[(*n)++].dst = b;
        } else if (strcmp(o, "--tmpfs") == 0 && split_pair(val, &a, &b) == 0 &&
                   parse_num(b, 0.001, 1 << 20, &v) == 0 && s.n_tmpfs < MAX_LIST) {
            tmpfs[s.n_tmpfs].dst = a;
            tmpfs[s.n_tmpfs++].bytes = (int64_t)(v * 1024 * 1024);
        } else if (strcmp(o, "--gpu") == 0 && parse_num(val, 0, 255, &v) == 0 &&
                   s.n_gpus < SBX_MAX_GPUS) {
            s.gpus[s.n_gpus++] = (int)v;
        } else {
            fprintf(stderr, "eddy sandbox run: bad option or value: %s %s\n%s", o, val, run_usage);
            return 2;
        }
    }
    if (i >= argc) {
        fprintf(stderr, "eddy sandbox run: no command\n%s", run_usage);
        return 2;
    }
    s.argv = argv + i;
    if (n_env) {
        env[n_env] = NULL;
        s.env = env;
    }
    if (uid == 0) {
        /* The same range and lock directory as the scheduler's, so CLI jobs
         * never share a uid with running ones. */
        const char *base = getenv("EDDY_SBX_UID_BASE"), *dir = getenv("EDDY_SBX_SLOT_DIR");
        unsigned b = base ? (unsigned)strtoul(base, NULL, 10) : 200000;
        if (sbx_slot_claim(&slot, dir && dir[0] == '/' ? dir : "/run/eddy-sandbox", b ? b : 200000,
                           1000) < 0) {
            fprintf(stderr, "eddy sandbox run: %s\n", ed_error_last());
            return EXIT_SANDBOX;
        }
        uid = sbx_slot_uid(slot);
    }
    s.host_uid = uid;
    s.host_gid = uid;

    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);

    if (sbx_launch(&j, &s) < 0) {
        fprintf(stderr, "eddy sandbox run: %s\n", ed_error_last());
        sbx_slot_free(slot);
        return EXIT_SANDBOX;
    }
    for (;;) {
        rc = sbx_job_wait(j, 200, &u);
        if (rc == 0)
            break;
        if (rc != ED_EBUSY) {
            fprintf(stderr, "eddy sandbox run: %s\n", ed_error_last());
            sbx_job_free(j);
            sbx_slot_free(slot);
            return EXIT_SANDBOX;
        }
        if (pending_sig) {
            sbx_job_signal(j, pending_sig);
            pending_sig = 0;
        }
    }
    sbx_job_free(j);
    sbx_slot_free(slot);
    if (u.limit != SBX_LIMIT_NONE) {
        fprintf(stderr, "eddy sandbox run: ended by the %s limit%s (cpu %lld ms, peak memory %lld bytes)\n",
                sbx_limit_name(u.limit), u.limit == SBX_LIMIT_MEMORY ? " (out of memory)" : "",
                (long long)u.cpu_ms, (long long)u.peak_mem_bytes);
        return EXIT_LIMIT;
    }
    return u.exited ? u.exit_code : 128 + u.term_signal;
}

int cmd_sandbox(int argc, char **argv)
{
    if (argc >= 2 && strcmp(argv[1], "check") == 0) {
        const char *data = getenv("EDDY_DATA_DIR") ? getenv("EDDY_DATA_DIR") : "./data";
        if (argc == 4 && strcmp(argv[2], "--data") == 0)
            data = argv[3];
        else if (argc != 2) {
            fprintf(stderr, "usage: eddy sandbox check [--data DIR]\n");
            return 2;
        }
        return do_check(data);
    }
    if (argc >= 2 && strcmp(argv[1], "run") == 0)
        return do_run(argc - 1, argv + 1);
    fprintf(stderr, "usage: eddy sandbox check [--data DIR]\n%s", run_usage);
    return 2;
}
