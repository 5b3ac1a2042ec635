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
    unsigned flags;       /* SBX_BIND_*; 0 for a plain bind */
} sbx_bind;

/* A read-write directory bind seen through an idmapped mount
 * (mount_setattr MOUNT_ATTR_IDMAP on a detached open_tree clone): files the
 * tree's owner on disk (spec tree_uid/tree_gid) owns appear as the job's
 * host uid (aistudio inside), and what the job creates is stored as that
 * owner, never as the job's uid. Fails the launch where the kernel or the
 * filesystem cannot (sbx_idmap_probe says why). A project's live working
 * tree at /home/aistudio/work. */
#define SBX_BIND_IDMAP    1u
/* Mount an empty, read-only, nosuid, nodev, noexec tmpfs over `dst`/.git
 * (created if missing): the job sees the tree but not its repository. */
#define SBX_BIND_HIDE_GIT 2u
#define SBX_BIND_FLAGS    (SBX_BIND_IDMAP | SBX_BIND_HIDE_GIT)

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
    uid_t tree_uid;               /* who owns SBX_BIND_IDMAP trees on disk; (uid_t)-1 */
    gid_t tree_gid;               /*   (sbx_spec_init): this process's effective ids.
                                   *   Not sent to the launcher: it uses the server's */
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
    int idmap;                    /* idmapped bind mounts of /var/tmp work (sbx_idmap_probe) */
    char idmap_detail[256];       /* why not, when idmap is 0 */
} sbx_caps;

/* Defaults: env NULL, uid/gid 0 (must be set), stdio inherited 0/1/2,
 * tmp 64 MiB, nofile 1024, network none, no limits. */
void sbx_spec_init(sbx_spec *spec);

/* Probe the host: which namespaces, seccomp, cgroup versions and GPUs it
 * offers. Runs small confined children; 0, or ED_EIO if probing failed. */
int sbx_check(sbx_caps *out);

/* 1 when a detached bind mount of the directory `dir` can be idmapped
 * (SBX_BIND_IDMAP: Linux >= 5.12, a filesystem that allows it, root); else
 * 0 and `why` (cap bytes) names what is missing. While sbx_launcher_use()
 * is set the launcher answers for its own data directory and `dir` is not
 * used. Never an error: a failed probe is a 0 with its reason. */
int sbx_idmap_probe(const char *dir, char *why, size_t cap);

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

/* ---- live usage of a running job (sbx_cgroup.c) ---------------------------
 *
 * What a job's cgroup says now, for live meters. The directory is the one
 * sbx_job_cgroup() names (v2: the job's; v1: its memory controller's, whose
 * cpuacct and cpu siblings are found under the same job name). Those files
 * are world-readable, so the serving process reads them itself, also when it
 * runs unprivileged beside the launcher: no round trip, nothing written.
 *
 *     sbx_live l;
 *     if (sbx_cgroup_live(&l, sbx_job_cgroup(j)) == 0)
 *         ... l.cpu_usec (take two readings for a rate), l.mem_bytes of l.mem_limit_bytes ...
 */
typedef struct sbx_live {
    int64_t cpu_usec;             /* CPU time of the whole tree since it started (user +
                                   * system), microseconds; -1 unknown */
    int64_t mem_bytes;            /* memory charged now (memory.current; v1 usage_in_bytes); -1 */
    int64_t mem_limit_bytes;      /* memory.max (v1 limit_in_bytes); -1 none or unknown */
    int64_t mem_peak_bytes;       /* memory.peak (v1 max_usage_in_bytes); -1 when the
                                   * kernel keeps none (v2 before Linux 5.19) */
    int     cpu_limit_millis;     /* cpu.max (v1 cfs quota / period), thousandths of a CPU;
                                   * -1 none or unknown */
} sbx_live;

/* Read the job cgroup `dir` now. Fields it cannot read stay -1. 0;
 * ED_ENOTFOUND when `dir` is "" (a degraded job has no cgroup) or names no
 * cgroup of a job (gone: the job ended); ED_EINVAL for a relative path. */
int sbx_cgroup_live(sbx_live *out, const char *dir);

/* Parse `text`, the content of the cgroup file `file`, into its field of
 * `out` (the others are left alone): "cpu.stat" (usage_usec),
 * "cpuacct.usage" (ns), "memory.current" and "memory.usage_in_bytes",
 * "memory.max" and "memory.limit_in_bytes" ("max", or v1's page-rounded
 * 2^63: none), "memory.peak" and "memory.max_usage_in_bytes", "cpu.max"
 * ("QUOTA PERIOD" or "max PERIOD"; v1's cfs_quota_us and cfs_period_us
 * joined so, quota -1 as "max"). 0, or ED_EINVAL (unknown file, or text
 * that is not what the file holds: the field stays as it was). */
int sbx_cgroup_parse(sbx_live *out, const char *file, const char *text);

/* ---- disk quotas (sbx_disk.c) ---------------------------------------------
 *
 * A tree is one or more directories (a job's work and output, a project's
 * workspace) that share one limit on the bytes written into them from inside
 * a sandbox: a write past it fails with EDQUOT or ENOSPC. Mechanisms, probed
 * at start in this order (README.md "Disk quotas"):
 *   SBX_DISK_PRJQUOTA  the data directory's filesystem has project quotas on
 *                      (ext4 -O quota,project mounted prjquota; XFS pquota)
 *   SBX_DISK_VOLUME    DATA/volume.img: a sparse ext4 image with project
 *                      quotas, loop-mounted at DATA/volume (made at start)
 *   SBX_DISK_IMAGES    a sparse ext4 image per tree in DATA/images/ (kernels
 *                      without quota formats, e.g. no CONFIG_QFMT_V2)
 * Every function takes what it needs as arguments and keeps no state; all
 * need root except the probe's read-only part and sbx_disk_tree_usage on
 * images. While sbx_launcher_use() is set each goes to the launcher, which
 * accepts only job trees (DATA/jobs/<id>/work, /output) and workspace trees
 * (DATA/projects/<id>, never frozen) and keeps images and
 * the volume in DATA/launcher, root's (README.md "Privilege split").
 *
 *     sbx_disk d;
 *     sbx_disk_probe(&d, "/srv/eddy", 0, SBX_DISK_SETUP);
 *     if (d.mech == SBX_DISK_NONE) ... fail closed: d.detail says what is missing ...
 *     const char *dirs[] = {"/srv/eddy/jobs/7/work", "/srv/eddy/jobs/7/output"};
 *     sbx_disk_tree_init(&d, dirs, 2, SBX_DISK_PROJID_JOBS + 7, 1LL << 30);
 *     ... the job runs; writes past 1 GiB fail with EDQUOT/ENOSPC ...
 *     sbx_disk_path_clear(dirs[0]);                     // work goes at the end
 *     sbx_disk_tree_remove(&d, dirs + 1, 1, SBX_DISK_PROJID_JOBS + 7);  // retention
 */
typedef enum {
    SBX_DISK_NONE = 0,
    SBX_DISK_PRJQUOTA,
    SBX_DISK_VOLUME,
    SBX_DISK_IMAGES
} sbx_disk_mech;

/* Project ids: jobs use SBX_DISK_PROJID_JOBS + (job id mod 2^30); project
 * workspaces SBX_DISK_PROJID_PROJECTS + their store's disk id (below 2^29;
 * projects/root.c); ids below that are left to the host. 0 is never a tree. */
#define SBX_DISK_PROJID_JOBS     0x40000000u
#define SBX_DISK_PROJID_PROJECTS 0x20000000u

#define SBX_DISK_SETUP        1u   /* probe: make and mount the loop volume if needed */
#define SBX_DISK_NO_PRJQUOTA  2u   /* probe: skip the data directory's own quotas */
#define SBX_DISK_NO_VOLUME    4u   /* probe: skip the loop volume (tests; volume_bytes < 0 too) */

typedef struct sbx_disk {
    sbx_disk_mech mech;
    char data_dir[400];           /* absolute */
    char detail[768];             /* what is used, or what was tried and why it failed */
} sbx_disk;

/* "prjquota", "loop volume", "loop images", "none". */
const char *sbx_disk_mech_name(sbx_disk_mech m);

/* Find the best mechanism for trees under `data_dir` (absolute). With
 * SBX_DISK_SETUP the loop volume DATA/volume.img of `volume_bytes` (0: half
 * the data filesystem, sparse; < 0: no volume) is created if missing and
 * mounted (again) at DATA/volume; without it the probe only tries small
 * images in the data directory. mech NONE with `detail` naming what is
 * missing when nothing works (that is not an error: the caller fails closed
 * when a quota is configured). A volume image that exists but cannot be
 * mounted gives NONE, never a fallback. 0, or ED_EINVAL. */
int sbx_disk_probe(sbx_disk *out, const char *data_dir, int64_t volume_bytes, unsigned flags);

/* Create (mkfs.ext4, with `project_quota`: -O quota,project) the sparse
 * image `image` of `bytes` if it does not exist, and loop-mount it at `mnt`
 * (prjquota when project_quota) unless something is mounted there already.
 * 0, ED_EINVAL, ED_EIO (the message names the step). */
int sbx_disk_volume_mount(const char *image, const char *mnt, int64_t bytes, int project_quota);

/* Make `paths` (absolute, 1..8, distinct last components; created 0700 when
 * missing) one tree with project id `projid` and a limit of `limit_bytes`,
 * or attach an existing tree of that id again (after a restart: remount its
 * image or volume directory; set the limit again). Content already in a
 * directory counts under "prjquota"; under the loop mechanisms a directory
 * becomes a mount and what was in it is hidden, so initialise empty
 * directories. Idempotent. ED_EINVAL, ED_EIO, ED_EUNPROC (mech NONE). */
int sbx_disk_tree_init(const sbx_disk *d, const char *const *paths, size_t n, uint32_t projid,
                       int64_t limit_bytes);

/* Bytes and inodes the tree holding `path` uses now. ED_ENOTFOUND when the
 * tree is not attached, ED_EIO. */
int sbx_disk_tree_usage(const sbx_disk *d, const char *path, uint32_t projid, int64_t *out_bytes,
                        int64_t *out_inodes);

/* Delete one directory of a tree and what is in it (without following
 * symbolic links or leaving its filesystem), unmounting it if it is a
 * mount; the tree's other directories and limit stay. ENOENT is success. */
int sbx_disk_path_clear(const char *path);

/* When a tree's writer is done for good (a job ended): if `path` is a mount
 * (the loop mechanisms), copy what is in it to a plain directory on the
 * parent's filesystem (no link followed; symbolic links copied as links,
 * hard links as links, holes as holes, owners, modes and times kept; fifos,
 * sockets and devices dropped), unmount it and put the copy in its place,
 * so the tree's image or volume directory can go and no mount is kept per
 * finished tree. A plain directory is left as it is. Safe to repeat after a
 * crash at any step (the copy restarts). 0, ED_EINVAL, ED_EIO. */
int sbx_disk_path_freeze(const char *path);

/* 1 if the tree `projid` has an image or a volume directory (it was made
 * under a loop mechanism and not removed), else 0. */
int sbx_disk_tree_exists(const sbx_disk *d, uint32_t projid);

/* Delete a whole tree: its directories (unmounted; n may be 0 when they
 * were frozen or deleted already), its image or volume directory, and its
 * limit. 0, ED_EINVAL, ED_EIO. */
int sbx_disk_tree_remove(const sbx_disk *d, const char *const *paths, size_t n, uint32_t projid);

/* At shutdown: unmount (lazily) every tree and the loop volume mounted
 * beneath `dir` (the data directory); images and volume stay on disk and
 * sbx_disk_probe / sbx_disk_tree_init attach them again. 0, ED_EIO. */
int sbx_disk_detach(const char *dir);

/* ---- the privileged launcher (sbx_launcher.c, sbx_remote.c, sbx_wire.c) ----
 *
 * `eddy serve` started as root forks a launcher that keeps root, then drops
 * itself to an unprivileged user. The two share a SOCK_SEQPACKET socketpair;
 * the serving process asks the launcher for everything above that needs
 * privileges (sbx_launch, sbx_job_*, sbx_slot_*, sbx_tree_give), over a
 * narrow, versioned, length-checked binary format (sbx_wire.h). The launcher
 * treats every request as hostile: bind sources only beneath its roots,
 * opened without following symbolic links; uids only from slots it handed
 * out; descriptors only as sent. See README.md "Privilege split".
 *
 *     int sv[2];  socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv);
 *     if (fork() == 0) { close(sv[0]); _exit(sbx_launcher_serve(sv[1], &cfg) < 0); }
 *     close(sv[1]);  ... drop to the unprivileged user ...
 *     sbx_launcher_use(sv[0], launcher_pid);   // sbx_launch() etc. now ask it
 */

/* What the launcher allows. Paths are absolute and canonical; they are
 * opened once by sbx_launcher_serve (as root) and used as directory fds. */
typedef struct sbx_launcher_config {
    const char *data_dir;         /* read-write and read-only binds and trees beneath it */
    const char *ro_roots[8];      /* read-only binds beneath these (paddle, eddy-kernel) */
    size_t n_ro_roots;
    uid_t server_uid;             /* the serving process: requests must come from it, */
    gid_t server_gid;             /*   and trees go back to it when a job ends */
    pid_t server_pid;             /* 0: any process of server_uid */
    const char *slot_dir;         /* uid slots (sbx_slot_claim) */
    unsigned slot_base, slot_count;
    int allow_degraded;           /* jobs may run without cgroup limits if they ask */
} sbx_launcher_config;

/* Serve requests on `fd` (one end of a SOCK_SEQPACKET socketpair) until the
 * peer closes it or the parent dies (PR_SET_PDEATHSIG), then kill and free
 * every job, free every slot, and return 0. ED_EINVAL for a bad config,
 * ED_EIO when a root cannot be opened. Meant for a process of its own. */
int sbx_launcher_serve(int fd, const sbx_launcher_config *cfg);

/* From now on send sbx_launch, sbx_job_*, sbx_slot_claim/free,
 * sbx_tree_give and sbx_disk_* to the launcher on `fd` (takes fd; its replies must come
 * from `launcher_pid`). fd -1 closes it and returns to in-process launches.
 * When the launcher is gone every request fails with ED_EIO "the sandbox
 * launcher is gone". 0, or ED_EINVAL. */
int sbx_launcher_use(int fd, pid_t launcher_pid);

/* 1 while requests go to a launcher. */
int sbx_launcher_active(void);

/* Hand the tree at `path` (a directory) to uid/gid, without following
 * symbolic links and without leaving the tree: what a job needs before it
 * runs as its slot uid. Through the launcher: `path` must lie beneath its
 * data directory and uid be a slot it handed out (gid the same), or the
 * serving process's own uid; only entries owned by the server or a slot uid
 * change hands, and the launcher gives a job's trees back to the server when
 * the job ends. In process: everything beneath `path`. 0, ED_EINVAL,
 * ED_EPERM, ED_EIO. */
int sbx_tree_give(const char *path, uid_t uid, gid_t gid);

#endif
