/*
 * fuzz_launcher.c - the privileged launcher's request and reply parsers
 * (sandbox/sbx_wire.c): what the root launcher reads from the serving
 * process, which it must treat as compromised, and what that process reads
 * back.
 *
 * Input: byte 0 = how many descriptors "came with" the message (mod 9), the
 * rest = the message. Checked against sbx_wire.h's contract: only 0 or
 * ED_EINVAL; a request that parses has an op in range, strings that are
 * NUL-terminated inside the copy, argv non-NULL, stdio and passed descriptor
 * indexes below the count, numbers inside 3..1023, counts within the bounds;
 * a LAUNCH that parses re-encodes and parses again to the same spec shape.
 * DISK_* requests that parse have their paths (at most SBX_WIRE_TREE) inside
 * the copy; binds carry only SBX_BIND_* flags, which survive the round trip.
 * Replies are parsed for every op; only 0 or ED_EIO (IDMAP_PROBE's flag is
 * 0 or 1).
 */
#include "fuzz.h"

#include "ed_error.h"
#include "sbx_wire.h"

static sbx_wire_req req, again;

static void check_str(const sbx_wire_req *q, const char *s)
{
    if (s == NULL)
        return;
    if (s < q->text || s >= q->text + sizeof(q->text) || strlen(s) > SBX_WIRE_STR_MAX)
        abort();
}

static void check_launch(const sbx_wire_req *q, size_t n_fds)
{
    const sbx_spec *s = &q->spec;
    size_t n = 0;

    if (!s->argv)
        abort();
    for (n = 0; s->argv[n]; n++)
        check_str(q, s->argv[n]);
    if (n > SBX_WIRE_ARGS)
        abort();
    for (n = 0; s->env && s->env[n]; n++)
        check_str(q, s->env[n]);
    if (n > SBX_WIRE_ARGS || s->n_ro > SBX_WIRE_BINDS || s->n_rw > SBX_WIRE_BINDS ||
        s->n_tmpfs > SBX_WIRE_TMPFS || s->n_gpus > SBX_MAX_GPUS || q->n_pass > SBX_WIRE_FDS ||
        (unsigned)s->net > SBX_NET_HOST)
        abort();
    for (size_t i = 0; i < s->n_ro; i++) {
        check_str(q, s->ro[i].src);
        check_str(q, s->ro[i].dst);
        if (s->ro[i].flags & ~SBX_BIND_FLAGS)
            abort();
    }
    for (size_t i = 0; i < s->n_rw; i++) {
        check_str(q, s->rw[i].src);
        check_str(q, s->rw[i].dst);
        if (s->rw[i].flags & ~SBX_BIND_FLAGS)
            abort();
    }
    check_str(q, s->cwd);
    for (int i = 0; i < 3; i++)
        if (s->stdio[i] < -1 || s->stdio[i] >= (int)n_fds)
            abort();
    for (size_t i = 0; i < q->n_pass; i++)
        if (q->pass_idx[i] < 0 || q->pass_idx[i] >= (int)n_fds || q->pass_at[i] < 3 || q->pass_at[i] > 1023)
            abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    size_t n_fds;
    int err;

    if (size < 1)
        return 0;
    n_fds = data[0] % (SBX_WIRE_FDS + 1);
    data++;
    size--;

    err = sbx__wire_parse_request(&req, data, size, n_fds);
    if (err != 0 && err != ED_EINVAL)
        abort();
    if (err == 0) {
        if (req.op < SBX_OP_LAUNCH || req.op > SBX_OP_MAX_)
            abort();
        if (req.op == SBX_OP_TREE_GIVE || req.op == SBX_OP_DISK_USAGE || req.op == SBX_OP_DISK_CLEAR ||
            req.op == SBX_OP_DISK_FREEZE) {
            if (req.path == NULL)
                abort();
            check_str(&req, req.path);
        }
        if (req.op == SBX_OP_DISK_INIT || req.op == SBX_OP_DISK_REMOVE) {
            if (req.n_paths > SBX_WIRE_TREE)
                abort();
            for (size_t i = 0; i < req.n_paths; i++) {
                if (req.paths[i] == NULL)
                    abort();
                check_str(&req, req.paths[i]);
            }
        }
        if (req.op == SBX_OP_LAUNCH) {
            check_launch(&req, n_fds);
            /* round trip: what the server would send for this spec parses */
            sbx_spec s = req.spec;
            int fds[SBX_WIRE_FDS], pass[SBX_WIRE_FDS];
            size_t nf = 0;
            for (size_t i = 0; i < req.n_pass; i++)
                pass[i] = req.pass_at[i];
            s.pass_fds = pass;
            s.n_pass_fds = req.n_pass;
            sbx_wire_buf b;
            if (req.n_pass + 3 <= SBX_WIRE_FDS && sbx__wire_encode_launch(&b, req.seq, &s, fds, &nf) == 0) {
                if (sbx__wire_parse_request(&again, b.data, b.len, nf) != 0 ||
                    again.spec.n_ro != s.n_ro || again.spec.n_rw != s.n_rw || again.n_pass != req.n_pass ||
                    again.spec.mem_bytes != s.mem_bytes || again.spec.host_uid != s.host_uid)
                    abort();
                for (size_t i = 0; i < s.n_rw; i++)
                    if (again.spec.rw[i].flags != s.rw[i].flags)
                        abort();
                for (size_t i = 0; i < s.n_ro; i++)
                    if (again.spec.ro[i].flags != s.ro[i].flags)
                        abort();
            }
            sbx__wire_buf_free(&b);
        }
    }
    for (unsigned op = SBX_OP_LAUNCH; op <= SBX_OP_MAX_; op++) {
        sbx_wire_reply r;
        uint32_t seq = size >= 12 ? (uint32_t)data[8] | (uint32_t)data[9] << 8 | (uint32_t)data[10] << 16 |
                                        (uint32_t)data[11] << 24
                                  : 0;
        err = sbx__wire_parse_reply(&r, data, size, op, seq);
        if (err != 0 && err != ED_EIO)
            abort();
        if (err == 0 && (r.status > 0 || strnlen(r.message, sizeof(r.message)) >= sizeof(r.message) ||
                         strnlen(r.cgroup, sizeof(r.cgroup)) >= sizeof(r.cgroup) ||
                         strnlen(r.detail, sizeof(r.detail)) >= sizeof(r.detail) || r.mech > SBX_DISK_IMAGES ||
                         (op == SBX_OP_IDMAP_PROBE && r.done > 1)))
            abort();
    }
    return 0;
}
