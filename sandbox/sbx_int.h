/*
 * sbx_int.h - private to sandbox/: the seccomp filter, cgroups and the
 * launch plan shared between the parent and the cloned child.
 */
#ifndef EDDY_SBX_INT_H
#define EDDY_SBX_INT_H

#include "sbx.h"

#include <linux/filter.h>
#include <stdint.h>

/* The allow-list as a classic BPF program, built with libseccomp in the
 * parent so the child only has to hand it to the kernel. Caller frees
 * prog->filter with free(). */
int sbx__seccomp_build(struct sock_fprog *prog);
/* The same program, built once per process and shared (never freed). */
int sbx__seccomp_program(struct sock_fprog *prog);

/* cgroups: one directory per controller (v1) or one (v2). */
typedef struct sbx_cgroup {
    int version;                  /* 2, 1, or 0 (degraded: none) */
    char v2[512];                 /* v2 job directory */
    char mem[512], pids[512], cpu[512], acct[512], dev[512];   /* v1 job directories ("" if absent) */
} sbx_cgroup;

/* Create the job's cgroup(s) named `name` and write the limits of `spec`.
 * ED_EPERM when no writable hierarchy exists. On error nothing is left. */
int sbx__cgroup_create(sbx_cgroup *cg, const char *name, const sbx_spec *spec,
                       const dev_t *gpu_devs, size_t n_gpu_devs);
/* Attach a cgroup v2 device filter (BPF) to `dir` allowing only null, zero,
 * full, random, urandom, tty and the `extra` character devices. */
int sbx__cgroup_v2_devices(const char *dir, const dev_t *extra, size_t n_extra);
/* Put `pid` into the job's cgroup(s). */
int sbx__cgroup_attach(const sbx_cgroup *cg, pid_t pid);
/* SIGKILL every process in the cgroup(s), until they are empty or 2 s pass. */
void sbx__cgroup_kill(const sbx_cgroup *cg);
/* CPU ms, peak memory, OOM kills and pids-limit hits. Absent values stay -1/0. */
void sbx__cgroup_usage(const sbx_cgroup *cg, int64_t *cpu_ms, int64_t *peak,
                       int *oom_kills, int *pids_hit);
/* Remove the directories (after kill). */
void sbx__cgroup_destroy(sbx_cgroup *cg);
/* Which hierarchy this host offers; fills caps' cgroup fields. */
void sbx__cgroup_probe(sbx_caps *caps);

/* ---- the launch plan: built by the parent (sbx_launch.c), read by the
 * cloned child (sbx_child.c), which never allocates ---- */

#include <stdint.h>

/* The child runs on its own clone stack; ASan would warn at every noreturn
 * call there ("ignoring __asan_handle_no_return"), so those functions are not
 * instrumented. */
#if defined(__SANITIZE_ADDRESS__)
#define SBX_CHILD_SIDE __attribute__((no_sanitize_address))
#else
#define SBX_CHILD_SIDE
#endif

#define SBX_STAGE "/tmp"            /* the new root is built here, in the child's own mount namespace */
#define SBX_MAX_MOPS 128

enum sbx_mop_kind {
    SBX_MOP_BIND_RO,      /* host src, read-only nosuid nodev */
    SBX_MOP_BIND_RW,      /* host src, read-write nosuid nodev */
    SBX_MOP_DEV,          /* host device node, bound as is */
    SBX_MOP_TMPFS,        /* size-limited tmpfs, nosuid nodev */
    SBX_MOP_SYMLINK,      /* dst -> src */
    SBX_MOP_FILE,         /* dst written with text */
    SBX_MOP_PROC,         /* fresh proc */
    SBX_MOP_DIR,          /* an empty directory */
    SBX_MOP_RDONLY,       /* remount dst (a tmpfs we made) read-only */
    SBX_MOP_MASK          /* an empty read-only tmpfs over dst (SBX_BIND_HIDE_GIT) */
};

typedef struct sbx_mop {
    enum sbx_mop_kind kind;
    const char *src;          /* host path, link target, or file text */
    char *dst;                /* absolute inside */
    int is_dir;               /* for binds: directory or file */
    int optional;             /* a missing source is skipped, not an error */
    int64_t bytes;            /* tmpfs size */
    int mode;                 /* tmpfs mode */
    int fd;                   /* O_PATH of src, opened in the child */
    int owned;                /* src was allocated for the sbx_plan */
    int check_id;             /* caller binds: what the child opens must be */
    dev_t dev;                /*   this file (st_dev, st_ino as the parent saw it), */
    ino_t ino;                /*   or it was swapped meanwhile */
    int detached;             /* src is /proc/self/fd/N of a detached mount (open_tree
                               * OPEN_TREE_CLONE, sbx_launcher.c): moved into place
                               * with move_mount, as a bind from a foreign mount
                               * namespace is refused */
    int tree_fd;              /* the detached idmapped mount src names, made by the
                               * parent (SBX_BIND_IDMAP in process); closed with the plan */
} sbx_mop;

/* Everything the child needs; built by the parent, read-only in the child. */
typedef struct sbx_plan {
    const sbx_spec *spec;     /* limits and fds only: its strings may live in memory the
                               * child scrubs (the launcher's argv), so they are copied */
    char **argv;
    char **envp;
    char *cwd_copy;
    sbx_mop mops[SBX_MAX_MOPS];
    size_t n_mops;
    struct sock_fprog bpf;
    int go_r, go_w, err_r, err_w, st_r, st_w;
    const char *cwd;
    int degraded;
} sbx_plan;

/* What the child writes to the step pipe when a step fails. */
struct sbx_step_msg {
    char step[160];           /* "mount /usr", "exec /bin/x", ... */
    int err;                  /* errno */
};

/* ---- disk quotas through descriptors (sbx_disk.c), for the launcher:
 * nothing beneath the data directory is looked up by a name the serving
 * process could swap. The sbx_disk's data_dir is the launcher's store
 * (/proc/self/fd/N of its root-only directory), where images and the
 * volume live. ---- */

#include <sys/stat.h>

/* sbx_disk_tree_init on directories open at dirs[] (O_RDONLY|O_DIRECTORY,
 * opened beneath the data directory without following links; a directory
 * that is a mount root already counts as attached). paths[] only name them
 * in messages; names[] are their names inside the tree. Directories made
 * inside the tree go to owner/group. */
int sbx__disk_tree_init_at(const sbx_disk *d, const int *dirs, const char *const *paths,
                           const char *const *names, size_t n, uint32_t projid, int64_t limit_bytes,
                           uid_t owner, gid_t group);
/* sbx_disk_tree_usage for the tree directory open at `dir`. */
int sbx__disk_tree_usage_at(const sbx_disk *d, int dir, uint32_t projid, int64_t *out_bytes,
                            int64_t *out_inodes);
/* sbx_disk_path_clear / sbx_disk_path_freeze for `name` (one component) in
 * the directory open at `parent`; never entering or emptying the directory
 * `keep_out` (the launcher's store, if renamed in). */
int sbx__disk_path_clear_at(int parent, const char *name, const struct stat *keep_out);
int sbx__disk_path_freeze_at(int parent, const char *name, const struct stat *keep_out);
/* Unmount (lazily) the mount whose root is open at `fd`. -1 and errno. */
int sbx__disk_umount_fd(int fd);
/* Mount points strictly beneath `dir` (absolute), deepest first; caller
 * frees each and the list. */
int sbx__disk_mounts_beneath(const char *dir, char ***out, size_t *n);

/* ---- idmapped bind mounts (sbx_idmap.c; SBX_BIND_IDMAP) ---- */

/* Idmap the detached mount `tree_fd` (open_tree OPEN_TREE_CLONE, not yet
 * attached): files of disk_uid/disk_gid appear as host_uid/host_gid, and
 * what host_uid creates is stored as disk_uid/disk_gid. 0, ED_EINVAL (a
 * host id 0), ED_EUNPROC (the kernel or filesystem cannot), ED_EIO. */
int sbx__idmap_apply(int tree_fd, uid_t disk_uid, gid_t disk_gid, uid_t host_uid, gid_t host_gid);
/* A detached, idmapped copy of the mount at the directory open at `dirfd`:
 * its descriptor (close-on-exec), or a negative code as above. */
int sbx__idmap_clone(int dirfd, uid_t disk_uid, gid_t disk_gid, uid_t host_uid, gid_t host_gid);
/* sbx_idmap_probe for the directory open at `dirfd`. */
int sbx__idmap_probe_fd(int dirfd, char *why, size_t cap);

/* The child: from clone to the sandbox's init. `arg` is the plan (the
 * child's own copy). Never returns. */
int sbx__child_main(void *arg);

#endif
