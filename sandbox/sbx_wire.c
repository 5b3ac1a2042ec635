/*
 * sbx_wire.c - encoding and parsing of the launcher's messages (sbx_wire.h).
 *
 * The parser is the launcher's first line of defence against a compromised
 * serving process: it reads only within the message, bounds every count and
 * string, and refuses anything left over. Fuzzed by tests/fuzz/fuzz_launcher.c.
 */
#include "sbx_wire.h"

#include "ed_error.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define NONE 0xffffffffu

/* ---- encoding ---- */

static void put(sbx_wire_buf *b, const void *p, size_t n)
{
    if (b->failed)
        return;
    if (b->len + n > SBX_WIRE_MAX) {
        b->failed = ED_ETOOBIG;
        return;
    }
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap : 512;
        while (cap < b->len + n)
            cap *= 2;
        unsigned char *d = realloc(b->data, cap);
        if (!d) {
            b->failed = ED_ENOMEM;
            return;
        }
        b->data = d;
        b->cap = cap;
    }
    memcpy(b->data + b->len, p, n);
    b->len += n;
}

void sbx__wire_u32(sbx_wire_buf *b, uint32_t v)
{
    unsigned char c[4] = {(unsigned char)v, (unsigned char)(v >> 8), (unsigned char)(v >> 16),
                          (unsigned char)(v >> 24)};
    put(b, c, 4);
}

void sbx__wire_i32(sbx_wire_buf *b, int32_t v)
{
    sbx__wire_u32(b, (uint32_t)v);
}

void sbx__wire_i64(sbx_wire_buf *b, int64_t v)
{
    sbx__wire_u32(b, (uint32_t)((uint64_t)v & 0xffffffffu));
    sbx__wire_u32(b, (uint32_t)((uint64_t)v >> 32));
}

void sbx__wire_str(sbx_wire_buf *b, const char *s)
{
    if (!s) {
        sbx__wire_u32(b, NONE);
        return;
    }
    size_t n = strlen(s);
    if (n > SBX_WIRE_STR_MAX) {
        if (!b->failed)
            b->failed = ED_ETOOBIG;
        return;
    }
    sbx__wire_u32(b, (uint32_t)n);
    put(b, s, n);
}

void sbx__wire_begin(sbx_wire_buf *b, unsigned op, uint32_t seq)
{
    memset(b, 0, sizeof(*b));
    sbx__wire_u32(b, SBX_WIRE_MAGIC);
    sbx__wire_u32(b, (uint32_t)SBX_WIRE_VERSION | ((uint32_t)op << 16));
    sbx__wire_u32(b, seq);
    sbx__wire_u32(b, 0);
}

int sbx__wire_finish(sbx_wire_buf *b)
{
    if (b->failed == ED_ENOMEM)
        return ed_error_set(ED_ENOMEM, "sandbox launcher message");
    if (b->failed)
        return ed_error_set(ED_ETOOBIG, "sandbox launcher message over %d bytes or a string over %d",
                            SBX_WIRE_MAX, SBX_WIRE_STR_MAX);
    uint32_t n = (uint32_t)(b->len - SBX_WIRE_HDR);
    b->data[12] = (unsigned char)n;
    b->data[13] = (unsigned char)(n >> 8);
    b->data[14] = (unsigned char)(n >> 16);
    b->data[15] = (unsigned char)(n >> 24);
    return 0;
}

void sbx__wire_buf_free(sbx_wire_buf *b)
{
    free(b->data);
    memset(b, 0, sizeof(*b));
}

static void put_list(sbx_wire_buf *b, char *const *v)
{
    size_t n = 0;
    if (!v) {
        sbx__wire_u32(b, NONE);
        return;
    }
    while (v[n])
        n++;
    sbx__wire_u32(b, (uint32_t)n);
    for (size_t i = 0; i < n; i++)
        sbx__wire_str(b, v[i]);
}

int sbx__wire_encode_launch(sbx_wire_buf *b, uint32_t seq, const sbx_spec *s, int *fds, size_t *n_fds)
{
    size_t nargv = 0, nenv = 0, nf = 0;

    *n_fds = 0;
    memset(b, 0, sizeof(*b));
    if (s->argv)
        while (s->argv[nargv])
            nargv++;
    if (s->env)
        while (s->env[nenv])
            nenv++;
    if (nargv > SBX_WIRE_ARGS || nenv > SBX_WIRE_ARGS || s->n_ro > SBX_WIRE_BINDS ||
        s->n_rw > SBX_WIRE_BINDS || s->n_tmpfs > SBX_WIRE_TMPFS || s->n_gpus > SBX_MAX_GPUS ||
        s->n_pass_fds + 3 > SBX_WIRE_FDS)
        return ed_error_set(ED_EINVAL, "sandbox launcher: the spec has more entries than the "
                            "launcher accepts");
    sbx__wire_begin(b, SBX_OP_LAUNCH, seq);
    put_list(b, s->argv);
    put_list(b, s->env);
    sbx__wire_u32(b, (uint32_t)s->host_uid);
    sbx__wire_u32(b, (uint32_t)s->host_gid);
    sbx__wire_str(b, s->cwd);
    const sbx_bind *lists[2] = {s->ro, s->rw};
    size_t counts[2] = {s->n_ro, s->n_rw};
    for (int k = 0; k < 2; k++) {
        sbx__wire_u32(b, (uint32_t)counts[k]);
        for (size_t i = 0; i < counts[k]; i++) {
            sbx__wire_str(b, lists[k][i].src);
            sbx__wire_str(b, lists[k][i].dst);
            sbx__wire_u32(b, lists[k][i].flags);
        }
    }
    sbx__wire_u32(b, (uint32_t)s->n_tmpfs);
    for (size_t i = 0; i < s->n_tmpfs; i++) {
        sbx__wire_str(b, s->tmpfs[i].dst);
        sbx__wire_i64(b, s->tmpfs[i].bytes);
    }
    sbx__wire_i64(b, s->tmp_bytes);
    sbx__wire_i64(b, s->mem_bytes);
    sbx__wire_i32(b, s->cpu_millis);
    sbx__wire_i32(b, s->pids);
    sbx__wire_i32(b, s->nofile);
    sbx__wire_i64(b, s->fsize_bytes);
    sbx__wire_i32(b, s->wall_ms);
    sbx__wire_i32(b, s->cpu_s);
    sbx__wire_u32(b, (uint32_t)s->net);
    sbx__wire_u32(b, (uint32_t)s->n_gpus);
    for (size_t i = 0; i < s->n_gpus; i++)
        sbx__wire_i32(b, s->gpus[i]);
    for (int i = 0; i < 3; i++) {
        if (s->stdio[i] < 0) {
            sbx__wire_i32(b, -1);
            continue;
        }
        fds[nf] = s->stdio[i];
        sbx__wire_i32(b, (int32_t)nf++);
    }
    sbx__wire_u32(b, (uint32_t)s->n_pass_fds);
    for (size_t i = 0; i < s->n_pass_fds; i++) {
        fds[nf] = s->pass_fds[i];
        sbx__wire_i32(b, (int32_t)nf++);
        sbx__wire_i32(b, s->pass_fds[i]);
    }
    sbx__wire_u32(b, s->allow_degraded ? 1 : 0);
    *n_fds = nf;
    return sbx__wire_finish(b);
}

/* ---- parsing ---- */

typedef struct rd {
    const unsigned char *p;
    size_t left;
    const char *bad;          /* first problem, for the message */
} rd;

static int get_u32(rd *r, uint32_t *v)
{
    if (r->bad)
        return -1;
    if (r->left < 4) {
        r->bad = "message ends early";
        return -1;
    }
    *v = (uint32_t)r->p[0] | (uint32_t)r->p[1] << 8 | (uint32_t)r->p[2] << 16 | (uint32_t)r->p[3] << 24;
    r->p += 4;
    r->left -= 4;
    return 0;
}

static int get_i32(rd *r, int32_t *v)
{
    uint32_t u = 0;
    int rc = get_u32(r, &u);
    *v = (int32_t)u;
    return rc;
}

static int get_i64(rd *r, int64_t *v)
{
    uint32_t lo = 0, hi = 0;
    if (get_u32(r, &lo) < 0 || get_u32(r, &hi) < 0)
        return -1;
    *v = (int64_t)((uint64_t)hi << 32 | lo);
    return 0;
}

static int get_int(rd *r, int *v)
{
    int32_t x = 0;
    int rc = get_i32(r, &x);
    *v = x;
    return rc;
}

/* A string copied into text (NUL-terminated); NULL for the NONE length
 * when `nullable`. */
static int get_str(rd *r, char *text, size_t cap, size_t *used, const char **out, int nullable)
{
    uint32_t n;

    *out = NULL;
    if (get_u32(r, &n) < 0)
        return -1;
    if (n == NONE) {
        if (nullable)
            return 0;
        r->bad = "missing string";
        return -1;
    }
    if (n > SBX_WIRE_STR_MAX) {
        r->bad = "string too long";
        return -1;
    }
    if (n > r->left) {
        r->bad = "string past the end";
        return -1;
    }
    if (memchr(r->p, '\0', n)) {
        r->bad = "NUL inside a string";
        return -1;
    }
    if (*used + n + 1 > cap) {
        r->bad = "strings too long in all";
        return -1;
    }
    char *d = text + *used;
    memcpy(d, r->p, n);
    d[n] = '\0';
    *used += n + 1;
    r->p += n;
    r->left -= n;
    *out = d;
    return 0;
}

/* get_str() into the request's own text. */
static int get_req_str(rd *r, sbx_wire_req *q, const char **out, int nullable)
{
    return get_str(r, q->text, sizeof(q->text), &q->text_used, out, nullable);
}

static int get_count(rd *r, uint32_t *n, uint32_t max, int nullable)
{
    if (get_u32(r, n) < 0)
        return -1;
    if (*n == NONE && nullable)
        return 0;
    if (*n > max) {
        r->bad = "too many entries";
        return -1;
    }
    return 0;
}

static int get_list(rd *r, sbx_wire_req *q, char **dst, char *const **out)
{
    uint32_t n;
    const char *s;

    if (get_count(r, &n, SBX_WIRE_ARGS, 1) < 0)
        return -1;
    if (n == NONE) {
        *out = NULL;
        return 0;
    }
    for (uint32_t i = 0; i < n; i++) {
        if (get_req_str(r, q, &s, 0) < 0)
            return -1;
        dst[i] = (char *)s;
    }
    dst[n] = NULL;
    *out = dst;
    return 0;
}

static int parse_header(rd *r, unsigned *op, uint32_t *seq, const void *data, size_t len)
{
    uint32_t magic, vo, plen;

    r->p = data;
    r->left = len;
    r->bad = NULL;
    if (len > SBX_WIRE_MAX) {
        r->bad = "message too long";
        return -1;
    }
    if (get_u32(r, &magic) < 0 || get_u32(r, &vo) < 0 || get_u32(r, seq) < 0 || get_u32(r, &plen) < 0)
        return -1;
    if (magic != SBX_WIRE_MAGIC) {
        r->bad = "bad magic";
        return -1;
    }
    if ((vo & 0xffff) != SBX_WIRE_VERSION) {
        r->bad = "unsupported version";
        return -1;
    }
    if (plen != r->left) {
        r->bad = "length does not match the message";
        return -1;
    }
    *op = vo >> 16;
    return 0;
}

static int parse_launch(rd *r, sbx_wire_req *q, size_t n_fds)
{
    sbx_spec *s = &q->spec;
    uint32_t n, u;
    const char *a, *b;
    uint32_t fl;
    sbx_bind *lists[2] = {q->ro, q->rw};
    size_t *counts[2] = {&s->n_ro, &s->n_rw};
    int used[SBX_WIRE_FDS] = {0};

    sbx_spec_init(s);
    if (get_list(r, q, q->argv, &s->argv) < 0 || get_list(r, q, q->env, &s->env) < 0)
        return -1;
    if (!s->argv) {
        r->bad = "no argv";
        return -1;
    }
    if (get_u32(r, &u) < 0)
        return -1;
    s->host_uid = (uid_t)u;
    if (get_u32(r, &u) < 0)
        return -1;
    s->host_gid = (gid_t)u;
    if (get_req_str(r, q, &s->cwd, 1) < 0)
        return -1;
    for (int k = 0; k < 2; k++) {
        if (get_count(r, &n, SBX_WIRE_BINDS, 0) < 0)
            return -1;
        for (uint32_t i = 0; i < n; i++) {
            if (get_req_str(r, q, &a, 0) < 0 ||
                get_req_str(r, q, &b, 0) < 0 || get_u32(r, &fl) < 0)
                return -1;
            if (fl & ~SBX_BIND_FLAGS) {
                r->bad = "unknown bind flags";
                return -1;
            }
            lists[k][i] = (sbx_bind){a, b, fl};
        }
        *counts[k] = n;
    }
    s->ro = q->ro;
    s->rw = q->rw;
    if (get_count(r, &n, SBX_WIRE_TMPFS, 0) < 0)
        return -1;
    for (uint32_t i = 0; i < n; i++)
        if (get_req_str(r, q, &q->tmpfs[i].dst, 0) < 0 ||
            get_i64(r, &q->tmpfs[i].bytes) < 0)
            return -1;
    s->tmpfs = q->tmpfs;
    s->n_tmpfs = n;
    if (get_i64(r, &s->tmp_bytes) < 0 || get_i64(r, &s->mem_bytes) < 0 || get_int(r, &s->cpu_millis) < 0 ||
        get_int(r, &s->pids) < 0 || get_int(r, &s->nofile) < 0 || get_i64(r, &s->fsize_bytes) < 0 ||
        get_int(r, &s->wall_ms) < 0 || get_int(r, &s->cpu_s) < 0 || get_u32(r, &u) < 0)
        return -1;
    if (u > SBX_NET_HOST) {
        r->bad = "unknown network mode";
        return -1;
    }
    s->net = (sbx_net)u;
    if (get_count(r, &n, SBX_MAX_GPUS, 0) < 0)
        return -1;
    for (uint32_t i = 0; i < n; i++)
        if (get_int(r, &s->gpus[i]) < 0)
            return -1;
    s->n_gpus = n;
    for (int i = 0; i < 3; i++) {
        if (get_int(r, &s->stdio[i]) < 0)
            return -1;
        if (s->stdio[i] < -1 || s->stdio[i] >= (int)n_fds || (s->stdio[i] >= 0 && used[s->stdio[i]]++)) {
            r->bad = "stdio names no descriptor that came with the message";
            return -1;
        }
    }
    if (get_count(r, &n, SBX_WIRE_FDS, 0) < 0)
        return -1;
    for (uint32_t i = 0; i < n; i++) {
        if (get_int(r, &q->pass_idx[i]) < 0 || get_int(r, &q->pass_at[i]) < 0)
            return -1;
        if (q->pass_idx[i] < 0 || q->pass_idx[i] >= (int)n_fds || used[q->pass_idx[i]]++) {
            r->bad = "a passed descriptor names none that came with the message";
            return -1;
        }
        if (q->pass_at[i] < 3 || q->pass_at[i] > 1023) {
            r->bad = "a passed descriptor's number inside is outside 3..1023";
            return -1;
        }
        for (uint32_t k = 0; k < i; k++)
            if (q->pass_at[k] == q->pass_at[i]) {
                r->bad = "two passed descriptors at one number";
                return -1;
            }
    }
    q->n_pass = n;
    if (get_u32(r, &u) < 0)
        return -1;
    if (u > 1) {
        r->bad = "bad flag";
        return -1;
    }
    s->allow_degraded = (int)u;
    return 0;
}

int sbx__wire_parse_request(sbx_wire_req *q, const void *data, size_t len, size_t n_fds)
{
    rd r;
    int32_t x;

    memset(q, 0, offsetof(sbx_wire_req, text));
    q->text_used = 0;
    if (n_fds > SBX_WIRE_FDS)
        return ed_error_set(ED_EINVAL, "sandbox launcher: more than %d descriptors", SBX_WIRE_FDS);
    if (parse_header(&r, &q->op, &q->seq, data, len) < 0)
        goto bad;
    if (q->op != SBX_OP_LAUNCH && n_fds) {
        r.bad = "descriptors with a request that takes none";
        goto bad;
    }
    switch (q->op) {
    case SBX_OP_LAUNCH:
        if (parse_launch(&r, q, n_fds) < 0)
            goto bad;
        break;
    case SBX_OP_WAIT:
    case SBX_OP_KILL:
    case SBX_OP_FREE:
    case SBX_OP_SLOT_FREE:
        if (get_u32(&r, &q->handle) < 0)
            goto bad;
        break;
    case SBX_OP_SIGNAL:
        if (get_u32(&r, &q->handle) < 0 || get_i32(&r, &x) < 0)
            goto bad;
        q->sig = x;
        break;
    case SBX_OP_SLOT_CLAIM:
        break;
    case SBX_OP_TREE_GIVE:
        if (get_req_str(&r, q, &q->path, 0) < 0 ||
            get_u32(&r, &q->uid) < 0)
            goto bad;
        break;
    case SBX_OP_DISK_PROBE:
        if (get_i64(&r, &q->bytes) < 0 || get_u32(&r, &q->flags) < 0)
            goto bad;
        break;
    case SBX_OP_DISK_INIT:
    case SBX_OP_DISK_REMOVE: {
        uint32_t n;
        if (get_count(&r, &n, SBX_WIRE_TREE, 0) < 0)
            goto bad;
        for (uint32_t i = 0; i < n; i++)
            if (get_req_str(&r, q, &q->paths[i], 0) < 0)
                goto bad;
        q->n_paths = n;
        if (get_u32(&r, &q->projid) < 0 || (q->op == SBX_OP_DISK_INIT && get_i64(&r, &q->bytes) < 0))
            goto bad;
        break;
    }
    case SBX_OP_DISK_USAGE:
        if (get_req_str(&r, q, &q->path, 0) < 0 ||
            get_u32(&r, &q->projid) < 0)
            goto bad;
        break;
    case SBX_OP_DISK_EXISTS:
        if (get_u32(&r, &q->projid) < 0)
            goto bad;
        break;
    case SBX_OP_DISK_CLEAR:
    case SBX_OP_DISK_FREEZE:
        if (get_req_str(&r, q, &q->path, 0) < 0)
            goto bad;
        break;
    case SBX_OP_DISK_DETACH:
    case SBX_OP_IDMAP_PROBE:
        break;
    default:
        r.bad = "unknown request";
        goto bad;
    }
    if (r.left != 0) {
        r.bad = "bytes left over";
        goto bad;
    }
    return 0;
bad:
    return ed_error_set(ED_EINVAL, "sandbox launcher: malformed request: %s", r.bad ? r.bad : "?");
}

int sbx__wire_parse_reply(sbx_wire_reply *q, const void *data, size_t len, unsigned op, uint32_t seq)
{
    rd r;
    unsigned got;
    char text[SBX_WIRE_STR_MAX + 1];
    size_t used = 0;
    const char *s;
    uint32_t u;

    memset(q, 0, sizeof(*q));
    if (parse_header(&r, &got, &q->seq, data, len) < 0)
        goto bad;
    if (got != (op | SBX_OP_REPLY) || q->seq != seq) {
        r.bad = "reply to another request";
        goto bad;
    }
    q->op = op;
    if (get_i32(&r, &q->status) < 0)
        goto bad;
    if (q->status > 0) {
        r.bad = "positive status";
        goto bad;
    }
    if (q->status < 0) {
        if (get_str(&r, text, sizeof(text), &used, &s, 0) < 0)
            goto bad;
        snprintf(q->message, sizeof(q->message), "%s", s);
    } else if (op == SBX_OP_LAUNCH) {
        if (get_u32(&r, &q->handle) < 0 || get_i32(&r, &q->pid) < 0 ||
            get_str(&r, text, sizeof(text), &used, &s, 0) < 0)
            goto bad;
        snprintf(q->cgroup, sizeof(q->cgroup), "%s", s);
    } else if (op == SBX_OP_WAIT) {
        if (get_u32(&r, &q->done) < 0)
            goto bad;
        if (q->done) {
            sbx_usage *us = &q->usage;
            if (get_int(&r, &us->exited) < 0 || get_int(&r, &us->exit_code) < 0 ||
                get_int(&r, &us->term_signal) < 0 || get_u32(&r, &u) < 0 || get_i64(&r, &us->cpu_ms) < 0 ||
                get_i64(&r, &us->peak_mem_bytes) < 0 || get_int(&r, &us->pids_limit_hit) < 0)
                goto bad;
            if (u > SBX_LIMIT_KILLED) {
                r.bad = "unknown limit";
                goto bad;
            }
            us->limit = (sbx_limit)u;
        }
    } else if (op == SBX_OP_SLOT_CLAIM) {
        if (get_u32(&r, &q->handle) < 0 || get_u32(&r, &q->uid) < 0)
            goto bad;
    } else if (op == SBX_OP_DISK_PROBE) {
        if (get_u32(&r, &q->mech) < 0 || get_str(&r, text, sizeof(text), &used, &s, 0) < 0)
            goto bad;
        if (q->mech > SBX_DISK_IMAGES) {
            r.bad = "unknown disk quota mechanism";
            goto bad;
        }
        snprintf(q->detail, sizeof(q->detail), "%s", s);
    } else if (op == SBX_OP_DISK_USAGE) {
        if (get_i64(&r, &q->bytes) < 0 || get_i64(&r, &q->inodes) < 0)
            goto bad;
    } else if (op == SBX_OP_DISK_EXISTS) {
        if (get_u32(&r, &q->done) < 0)
            goto bad;
        if (q->done > 1) {
            r.bad = "bad flag";
            goto bad;
        }
    } else if (op == SBX_OP_IDMAP_PROBE) {
        if (get_u32(&r, &q->done) < 0 || get_str(&r, text, sizeof(text), &used, &s, 0) < 0)
            goto bad;
        if (q->done > 1) {
            r.bad = "bad flag";
            goto bad;
        }
        snprintf(q->detail, sizeof(q->detail), "%s", s);
    }
    if (r.left != 0) {
        r.bad = "bytes left over";
        goto bad;
    }
    return 0;
bad:
    return ed_error_set(ED_EIO, "sandbox launcher: malformed reply: %s", r.bad ? r.bad : "?");
}

/* ---- transport ---- */

int sbx__wire_send(int sock, const void *data, size_t len, const int *fds, size_t n_fds)
{
    union {
        char buf[CMSG_SPACE(sizeof(int) * SBX_WIRE_FDS)];
        struct cmsghdr align;
    } ctl;
    struct iovec iov = {(void *)data, len};
    struct msghdr m = {0};

    if (n_fds > SBX_WIRE_FDS)
        return -EINVAL;
    m.msg_iov = &iov;
    m.msg_iovlen = 1;
    if (n_fds) {
        memset(&ctl, 0, sizeof(ctl));
        m.msg_control = ctl.buf;
        m.msg_controllen = CMSG_SPACE(sizeof(int) * n_fds);
        struct cmsghdr *c = CMSG_FIRSTHDR(&m);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int) * n_fds);
        memcpy(CMSG_DATA(c), fds, sizeof(int) * n_fds);
    }
    for (;;) {
        ssize_t n = sendmsg(sock, &m, MSG_NOSIGNAL);
        if (n == (ssize_t)len)
            return 0;
        if (n >= 0)
            return -EMSGSIZE;
        if (errno != EINTR)
            return -errno;
    }
}

int sbx__wire_recv(int sock, void *buf, size_t cap, size_t *len, int *fds, size_t *n_fds, pid_t *pid,
                   uid_t *uid)
{
    union {
        char buf[CMSG_SPACE(sizeof(int) * SBX_WIRE_FDS) + CMSG_SPACE(sizeof(struct ucred))];
        struct cmsghdr align;
    } ctl;
    struct iovec iov = {buf, cap};
    struct msghdr m = {0};
    ssize_t n;
    int bad = 0;

    *len = 0;
    *n_fds = 0;
    *pid = 0;
    *uid = (uid_t)-1;
    m.msg_iov = &iov;
    m.msg_iovlen = 1;
    m.msg_control = ctl.buf;
    m.msg_controllen = sizeof(ctl.buf);
    while ((n = recvmsg(sock, &m, MSG_CMSG_CLOEXEC)) < 0 && errno == EINTR)
        ;
    if (n < 0)
        return -errno;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c)) {
        if (c->cmsg_level != SOL_SOCKET)
            continue;
        if (c->cmsg_type == SCM_RIGHTS) {
            size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
            int got[SBX_WIRE_FDS + 2];
            if (k > SBX_WIRE_FDS + 2)
                k = SBX_WIRE_FDS + 2;
            memcpy(got, CMSG_DATA(c), k * sizeof(int));
            for (size_t i = 0; i < k; i++) {
                if (*n_fds < SBX_WIRE_FDS)
                    fds[(*n_fds)++] = got[i];
                else {
                    close(got[i]);
                    bad = 1;
                }
            }
        } else if (c->cmsg_type == SCM_CREDENTIALS && c->cmsg_len >= CMSG_LEN(sizeof(struct ucred))) {
            struct ucred cr;
            memcpy(&cr, CMSG_DATA(c), sizeof(cr));
            *pid = cr.pid;
            *uid = cr.uid;
        }
    }
    if (bad || (m.msg_flags & (MSG_TRUNC | MSG_CTRUNC))) {
        for (size_t i = 0; i < *n_fds; i++)
            close(fds[i]);
        *n_fds = 0;
        return -EMSGSIZE;
    }
    if (n == 0 && *n_fds == 0)
        return 0;
    *len = (size_t)n;
    return 1;
}
