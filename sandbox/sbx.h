/*
 * sbx.h - the sandbox: confinement for every kernel, job and scorer.
 *
 * A spec says what to run and under which limits; sbx_launch() starts it in
 * new user, PID, mount, network, IPC, UTS and cgroup namespaces, on a root of
 * read-only system binds, with no capabilities, no_new_privs, a seccomp
 * allow-list, cgroup limits and rlimits. Every step is checked in the child;
 * if one fails the child reports the step over a close-on-exec pipe, the
 * program never runs, and sbx_launch() returns an error naming the step.
 *
 *     sbx_spec s;
 *     sbx_spec_init(&s);
 *     s.argv = (char *const[]){"/usr/bin/python3", "train.py", NULL};
 *     s.host_uid = s.host_gid = 200000 + slot;
 *     s.mem_bytes = 2LL << 30;
 *     s.rw = (sbx_bind[]){{"/srv/eddy/work/p1", "/home/aistudio/work"}};
 *     s.n_rw = 1;
 *     sbx_job *j;
 *     if (sbx_launch(&j, &s) < 0) ... ed_error_last() names the step ...
 *     sbx_usage u;
 *     sbx_job_wait(j, -1, &u);     // u.exit_code, u.limit, u.cpu_ms, ...
 *     sbx_job_free(j);
 *
 * Inside: uid/gid 1000 ("aistudio"), the host's /usr, /lib*, /bin, /sbin and
 * selected /etc files read-only nosuid nodev, a fresh /proc, a minimal /dev,
 * /tmp and /home/aistudio as size-limited tmpfs, the caller's binds. PID 1 is
 * a small init owned by the sandbox: it forwards SIGTERM/SIGINT/SIGHUP/
 * SIGQUIT/SIGUSR1/SIGUSR2 to the program, reaps orphans, and enforces the
 * wall time; when the program exits, everything else in it is killed.
 *
 * Threads: sbx_launch() may be called from any thread; a job handle belongs
 * to one thread at a time. The child never allocates (everything it needs is
 * prepared before clone), so launching from a threaded server is safe. The
 * job is bound to the launching thread with PR_SET_PDEATHSIG: launch from a
 * long-lived thread. The spec and its strings may be freed once
 * sbx_launch() returns.
 */
#ifndef EDDY_SBX_H
#define EDDY_SBX_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define SBX_INSIDE_UID 1000          /* "aistudio" inside every sandbox */
#define SBX_MAX_GPUS   16

typedef enum {
    SBX_NET_NONE = 0,     /* own network namespace, no interface up */
    SBX_NET_LOOPBACK,     /* own network namespace, lo up (127.0.0.1 is the sandbox's own) */
    SBX_NET_HOST          /* the host's network (tiers with egress) */
} sbx_net;

/* What ended a job, when it was not the program on its own. */
typedef enum {
    SBX_LIMIT_NONE = 0,
    SBX_LIMIT_MEMORY,     /* the cgroup's OOM killer */
    SBX_LIMIT_WALL,       /* wall time: the whole tree was killed */
    SBX_LIMIT_CPU,        /* RLIMIT_CPU (SIGXCPU, then SIGKILL) */
    SBX_LIMIT_FSIZE,      /* RLIMIT_FSIZE (SIGXFSZ) */
    SBX_LIMIT_KILLED      /* sbx_job_kill() */
} sbx_limit;

typedef struct sbx_bind {
    const char *src;      /* host path, absolute, must exist */
    const char *dst;      /* absolute path inside; created */
} sbx_bind;

typedef struct sbx_tmpfs {
    const char *dst;      /* absolute path inside; created */
    int64_t bytes;        /* size limit, > 0 */
} sbx_tmpfs;

typedef struct sbx_spec {
    char *const *argv;            /* argv[0] is an absolute path inside; NULL-terminated */
    char *const *env;             /* NULL: PATH, HOME, LANG, USER only */
    uid_t host_uid;               /* unprivileged, distinct per job, never 0 */
    gid_t host_gid;               /* never 0 */
    const char *cwd;              /* inside; NULL: /home/aistudio/work if bound, else / */
    const sbx_bind *ro;  size_t n_ro;    /* read-only binds (datasets) */
    const sbx_bind *rw;  size_t n_rw;    /* read-write binds (the work tree) */
    const sbx_tmpfs *tmpfs; size_t n_tmpfs;
    int64_t tmp_bytes;            /* /tmp and /dev/shm size each; default 64 MiB */
    int64_t mem_bytes;            /* memory limit (swap 0); 0: none */
    int cpu_millis;               /* CPU quota in thousandths of a CPU; 0: none */
    int pids;                     /* max processes+threads; 0: none */
    int nofile;                   /* RLIMIT_NOFILE; default 1024 */
    int64_t fsize_bytes;          /* RLIMIT_FSIZE; 0: none */
    int wall_ms;                  /* wall time, then the tree is killed; 0: none */
    int cpu_s;                    /* RLIMIT_CPU seconds; 0: none */
    sbx_net net;
    int gpus[SBX_MAX_GPUS]; size_t n_gpus;   /* /dev/nvidia<k> for each */
    int stdio[3];                 /* host fds for the program's 0,1,2; -1: /dev/null */
    const int *pass_fds; size_t n_pass_fds;  /* kept open at the same number */
    int allow_degraded;           /* run with rlimits only when no cgroup is usable */
} sbx_spec;

typedef struct sbx_usage {
    int exited;                   /* 1: exit_code is valid; 0: term_signal is */
    int exit_code;
    int term_signal;
    sbx_limit limit;              /* what ended it, SBX_LIMIT_NONE if the program did */
    int64_t cpu_ms;               /* user + system, whole tree */
    int64_t peak_mem_bytes;       /* cgroup peak, or largest RSS when degraded */
    int pids_limit_hit;           /* a fork failed on the pids limit */
} sbx_usage;

typedef struct sbx_job sbx_job;

/* What this host offers; filled by sbx_check(). */
typedef struct sbx_caps {
    int userns, pidns, mntns, netns, ipcns, utsns, cgroupns;
    int seccomp;                  /* seccomp filters with the actions we use */
    int cgroup_v2;                /* a writable v2 hierarchy with memory, pids, cpu */
    int cgroup_v1;                /* writable v1 memory, pids and cpu controllers */
    int cgroup_v1_devices;        /* the v1 devices controller */
    int gpus;                     /* /dev/nvidia<k> nodes found */
    int launch;                   /* a full sbx_launch of /bin/true worked */
    int degraded_only;            /* launch worked only without cgroup limits */
    char v2_root[256];            /* where jobs' v2 cgroups go */
    char detail[512];             /* what is missing, for people */
} sbx_caps;

/* Defaults: env NULL, uid/gid 0 (must be set), stdio inherited 0/1/2,
 * tmp 64 MiB, nofile 1024, network none, no limits. */
void sbx_spec_init(sbx_spec *spec);

/* Probe the host: which namespaces, seccomp, cgroup versions and GPUs it
 * offers. Runs small confined children; 0, or ED_EIO if probing failed. */
int sbx_check(sbx_caps *out);

/* Validate `spec` and start the program confined; returns once the program
 * has been exec'd (or a step failed). On success *out is a
 * running job (caller frees with sbx_job_free()). Errors: ED_EINVAL (bad
 * spec: uid 0, relative path, missing source), ED_EIO (a step failed:
 * the message names it, e.g. "sandbox step 'mount /usr': Permission
 * denied"), ED_EPERM (no usable cgroup and degraded mode not allowed),
 * ED_ENOMEM. On error nothing is left behind: no process, no cgroup. */
int sbx_launch(sbx_job **out, const sbx_spec *spec);

/* Host pid of the sandbox's init (PID 1 inside). */
pid_t sbx_job_pid(const sbx_job *j);
/* A pidfd for the init (borrowed; poll it for exit). */
int sbx_job_pidfd(const sbx_job *j);
/* The job's cgroup directory ("" when degraded); borrowed. */
const char *sbx_job_cgroup(const sbx_job *j);

/* Wait up to timeout_ms (-1: forever) for the job to end. 0 and *out filled
 * when it ended; ED_EBUSY when still running at the timeout. The wall time
 * is enforced inside the sandbox and also here. */
int sbx_job_wait(sbx_job *j, int timeout_ms, sbx_usage *out);

/* Deliver `sig` to the program (through the init, which forwards TERM, INT,
 * HUP, QUIT, USR1, USR2). SIGKILL kills the whole tree (= sbx_job_kill). */
int sbx_job_signal(sbx_job *j, int sig);

/* Kill every process of the job (cgroup and PID namespace). */
int sbx_job_kill(sbx_job *j);

/* Kill what still runs, reap, remove the cgroup, free. NULL-safe. */
void sbx_job_free(sbx_job *j);

/* A stable lower-case name: "none", "memory", "wall", "cpu", "fsize", "killed". */
const char *sbx_limit_name(sbx_limit l);

/* Job slots: a distinct host uid per concurrent job, from base..base+count-1,
 * held by an flock in `lock_dir` (created 0700) until sbx_slot_free(). */
typedef struct sbx_slot sbx_slot;
int sbx_slot_claim(sbx_slot **out, const char *lock_dir, unsigned base, unsigned count);
unsigned sbx_slot_uid(const sbx_slot *s);
void sbx_slot_free(sbx_slot *s);

#endif
