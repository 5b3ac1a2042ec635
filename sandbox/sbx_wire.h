/*
 * sbx_wire.h - private to sandbox/: the launcher's request and reply format.
 *
 * One request or reply is one SOCK_SEQPACKET message: a 16-byte header and a
 * payload, all integers little-endian, descriptors (stdio, passed fds, the
 * job's pidfd) beside it as SCM_RIGHTS.
 *
 *   header   u32 magic "EDLR" | u16 version | u16 op | u32 seq | u32 payload length
 *   string   u32 length (0xffffffff: NULL) | bytes (no NUL inside)
 *   list     u32 count (0xffffffff: NULL) | items
 *
 * Requests (payload):
 *   LAUNCH      list argv | list env | u32 uid | u32 gid | string cwd |
 *               list ro (string src, string dst, u32 flags) | list rw (same) |
 *               list tmpfs (string dst, i64 bytes) | i64 tmp_bytes |
 *               i64 mem_bytes | i32 cpu_millis | i32 pids | i32 nofile |
 *               i64 fsize_bytes | i32 wall_ms | i32 cpu_s | u32 net |
 *               list gpus (i32) | i32 stdio[3] (index into the passed
 *               descriptors, -1: /dev/null) | list pass (i32 index, i32
 *               number inside) | u32 allow_degraded
 *   WAIT, KILL, FREE, SLOT_FREE   u32 handle
 *   SIGNAL      u32 handle | i32 signal
 *   SLOT_CLAIM  (empty)
 *   TREE_GIVE   string path | u32 uid
 *   DISK_PROBE  i64 volume_bytes | u32 flags
 *   DISK_INIT   list paths (string) | u32 projid | i64 limit_bytes
 *   DISK_USAGE  string path | u32 projid
 *   DISK_EXISTS u32 projid
 *   DISK_CLEAR, DISK_FREEZE   string path
 *   DISK_REMOVE list paths (string, may be empty) | u32 projid
 *   DISK_DETACH (empty)
 *   IDMAP_PROBE (empty: the launcher probes its own data directory)
 * Bind flags are SBX_BIND_* (sbx.h); any other bit is refused.
 * Replies: the request's header with op | SBX_OP_REPLY, then i32 status;
 * when negative a string message follows, else:
 *   LAUNCH      u32 handle | i32 pid | string cgroup   (+ the pidfd as SCM_RIGHTS)
 *   WAIT        u32 done | (done: i32 exited, exit_code, term_signal, limit |
 *               i64 cpu_ms, peak_mem_bytes | i32 pids_limit_hit)
 *   SLOT_CLAIM  u32 handle | u32 uid
 *   DISK_PROBE  u32 mech | string detail
 *   DISK_USAGE  i64 bytes | i64 inodes
 *   DISK_EXISTS u32 exists (0 or 1)
 *   IDMAP_PROBE u32 supported (0 or 1) | string why (empty when supported)
 *   others      nothing
 *
 * The parser accepts exactly one well-formed message: the length in the
 * header equals what arrived, every count and string is bounded, nothing is
 * left over, and strings hold no NUL. It checks shape only; what a request
 * may do (roots, uids) is the launcher's policy (sbx_launcher.c).
 */
#ifndef EDDY_SBX_WIRE_H
#define EDDY_SBX_WIRE_H

#include "sbx.h"

#include <stddef.h>
#include <stdint.h>

#define SBX_WIRE_MAGIC   0x524c4445u   /* "EDLR" little-endian */
#define SBX_WIRE_VERSION 2             /* 2: bind flags (SBX_BIND_*), IDMAP_PROBE */
#define SBX_WIRE_HDR     16
#define SBX_WIRE_MAX     (128 * 1024)  /* largest message, header included */
#define SBX_WIRE_STR_MAX 8192          /* longest string (EDDY_DATASETS of 20 mounts: 5.4 KiB at most) */
#define SBX_WIRE_ARGS    256           /* argv, env entries */
#define SBX_WIRE_BINDS   64            /* ro, rw binds each */
#define SBX_WIRE_TMPFS   16
#define SBX_WIRE_FDS     8             /* descriptors with one request */
#define SBX_WIRE_TREE    8             /* directories of one disk tree */

enum sbx_wire_op {
    SBX_OP_LAUNCH = 1,
    SBX_OP_WAIT,
    SBX_OP_SIGNAL,
    SBX_OP_KILL,
    SBX_OP_FREE,
    SBX_OP_SLOT_CLAIM,
    SBX_OP_SLOT_FREE,
    SBX_OP_TREE_GIVE,
    SBX_OP_DISK_PROBE,
    SBX_OP_DISK_INIT,
    SBX_OP_DISK_USAGE,
    SBX_OP_DISK_EXISTS,
    SBX_OP_DISK_CLEAR,
    SBX_OP_DISK_FREEZE,
    SBX_OP_DISK_REMOVE,
    SBX_OP_DISK_DETACH,
    SBX_OP_IDMAP_PROBE,
    SBX_OP_MAX_ = SBX_OP_IDMAP_PROBE,
    SBX_OP_REPLY = 0x8000
};

/* A decoded request. Strings point into `text`; arrays are fixed. */
typedef struct sbx_wire_req {
    unsigned op;
    uint32_t seq;
    uint32_t handle;                      /* WAIT, SIGNAL, KILL, FREE, SLOT_FREE */
    int32_t sig;                          /* SIGNAL */
    uint32_t uid;                         /* TREE_GIVE */
    const char *path;                     /* TREE_GIVE, DISK_USAGE, DISK_CLEAR, DISK_FREEZE */
    const char *paths[SBX_WIRE_TREE];     /* DISK_INIT, DISK_REMOVE */
    size_t n_paths;
    uint32_t projid;                      /* DISK_INIT, _USAGE, _EXISTS, _REMOVE */
    int64_t bytes;                        /* DISK_INIT: limit; DISK_PROBE: volume size */
    uint32_t flags;                       /* DISK_PROBE */
    /* LAUNCH: the spec, with stdio[] and pass_fds[] as indexes into the
     * descriptors that came with the message (the launcher maps them). */
    sbx_spec spec;
    char *argv[SBX_WIRE_ARGS + 1];
    char *env[SBX_WIRE_ARGS + 1];
    sbx_bind ro[SBX_WIRE_BINDS], rw[SBX_WIRE_BINDS];
    sbx_tmpfs tmpfs[SBX_WIRE_TMPFS];
    int pass_idx[SBX_WIRE_FDS];           /* index of each passed descriptor */
    int pass_at[SBX_WIRE_FDS];            /* its number inside the sandbox */
    size_t n_pass;
    char text[SBX_WIRE_MAX + 2 * (2 * SBX_WIRE_ARGS + 4 * SBX_WIRE_BINDS + SBX_WIRE_TMPFS + 4)];
    size_t text_used;
} sbx_wire_req;

/* A decoded reply. */
typedef struct sbx_wire_reply {
    unsigned op;                          /* without SBX_OP_REPLY */
    uint32_t seq;
    int32_t status;                       /* 0 or a negative ED_E* code */
    char message[512];                    /* with a negative status */
    uint32_t handle;                      /* LAUNCH, SLOT_CLAIM */
    int32_t pid;                          /* LAUNCH */
    char cgroup[512];                     /* LAUNCH */
    uint32_t uid;                         /* SLOT_CLAIM */
    uint32_t done;                        /* WAIT; DISK_EXISTS: exists; IDMAP_PROBE: supported */
    sbx_usage usage;                      /* WAIT, when done */
    uint32_t mech;                        /* DISK_PROBE */
    char detail[768];                     /* DISK_PROBE; IDMAP_PROBE: why not */
    int64_t bytes, inodes;                /* DISK_USAGE */
} sbx_wire_reply;

/* A growing message being encoded. */
typedef struct sbx_wire_buf {
    unsigned char *data;
    size_t len, cap;
    int failed;                           /* out of memory or over SBX_WIRE_MAX */
} sbx_wire_buf;

/* Encoding: start a message (header written, length patched by _finish),
 * append fields, finish. 0, or ED_ETOOBIG / ED_ENOMEM (then free the buf). */
void sbx__wire_begin(sbx_wire_buf *b, unsigned op, uint32_t seq);
void sbx__wire_u32(sbx_wire_buf *b, uint32_t v);
void sbx__wire_i32(sbx_wire_buf *b, int32_t v);
void sbx__wire_i64(sbx_wire_buf *b, int64_t v);
void sbx__wire_str(sbx_wire_buf *b, const char *s);
int sbx__wire_finish(sbx_wire_buf *b);
void sbx__wire_buf_free(sbx_wire_buf *b);

/* A LAUNCH request for `spec`. fds[] receives the host descriptors to send
 * (stdio first, then pass_fds), *n_fds their number. ED_EINVAL when the spec
 * does not fit the format's bounds. */
int sbx__wire_encode_launch(sbx_wire_buf *b, uint32_t seq, const sbx_spec *spec, int *fds,
                            size_t *n_fds);

/* Decode one request of `len` bytes that came with `n_fds` descriptors.
 * 0, or ED_EINVAL with a message saying what is wrong (version, length,
 * count, string). `r` is filled only as far as the parse got. */
int sbx__wire_parse_request(sbx_wire_req *r, const void *data, size_t len, size_t n_fds);

/* Decode one reply to a request of op `op` and sequence `seq`. */
int sbx__wire_parse_reply(sbx_wire_reply *r, const void *data, size_t len, unsigned op, uint32_t seq);

/* ---- transport (sbx_wire.c) ---- */
/* Send one message with up to SBX_WIRE_FDS descriptors (SCM_RIGHTS).
 * 0, or -errno. */
int sbx__wire_send(int sock, const void *data, size_t len, const int *fds, size_t n_fds);
/* Receive one message into `buf` (`cap` bytes): *len, the descriptors that
 * came with it (close-on-exec; at most SBX_WIRE_FDS) and, when the socket
 * has SO_PASSCRED, the sender's pid and uid as the kernel saw them (else
 * 0 and (uid_t)-1). 1: a message; 0: the peer closed; -EMSGSIZE: a
 * truncated message or too many descriptors (all closed); -errno. */
int sbx__wire_recv(int sock, void *buf, size_t cap, size_t *len, int *fds, size_t *n_fds,
                   pid_t *pid, uid_t *uid);

/* ---- sbx_remote.c: the serving process's side, called by sbx_launch.c and
 * sbx_slot.c when sbx_launcher_use() is set ---- */
int sbx__remote_on(void);
int sbx__remote_launch(const sbx_spec *spec, uint32_t *handle, pid_t *pid, int *pidfd, char *cgroup,
                       size_t cgroup_len);
/* 0 and *out when the job ended; ED_EBUSY while it runs at the timeout. */
int sbx__remote_wait(uint32_t handle, int pidfd, int timeout_ms, sbx_usage *out);
int sbx__remote_signal(uint32_t handle, int sig);
int sbx__remote_kill(uint32_t handle);
void sbx__remote_free(uint32_t handle);
int sbx__remote_slot_claim(uint32_t *handle, unsigned *uid);
void sbx__remote_slot_free(uint32_t handle);
/* ...and by sbx_disk.c: the disk quota calls, same contracts as sbx.h's */
int sbx__remote_disk_probe(sbx_disk *out, const char *data_dir, int64_t volume_bytes, unsigned flags);
int sbx__remote_disk_tree_init(const sbx_disk *d, const char *const *paths, size_t n, uint32_t projid,
                               int64_t limit_bytes);
int sbx__remote_disk_tree_usage(const sbx_disk *d, const char *path, uint32_t projid, int64_t *out_bytes,
                                int64_t *out_inodes);
int sbx__remote_disk_tree_exists(uint32_t projid);
int sbx__remote_disk_path(unsigned op, const char *path);     /* DISK_CLEAR, DISK_FREEZE */
int sbx__remote_disk_tree_remove(const char *const *paths, size_t n, uint32_t projid);
int sbx__remote_disk_detach(void);
/* ...and by sbx_idmap.c: sbx_idmap_probe's contract, for the launcher's data directory */
int sbx__remote_idmap_probe(char *why, size_t cap);

/* ---- sbx_launcher.c ---- */
/* Change the owner of the directory open at `dirfd` and everything beneath
 * it to uid/gid, never following a symbolic link (fchownat with
 * AT_SYMLINK_NOFOLLOW, directories entered with O_NOFOLLOW from their
 * parent). With `cfg`, only entries now owned by cfg->server_uid or a uid of
 * its slot range change hands (a root-owned file linked in stays root's).
 * Depth is bounded; 0 or ED_EIO (the first failure). */
int sbx__tree_chown(int dirfd, uid_t uid, gid_t gid, const sbx_launcher_config *cfg);

#endif
