/*
 * reader.c - a kernel's socket: the scheduler's hook that hands it over, the
 * reader thread (one per kernel process) that reads frames, holds output to
 * the rate limits and journals bursts, protocol errors, and writes to the
 * kernel (README.md "Limits").
 */
#include "kh_int.h"

#include "kr.h"
#include "sched.h"

#include "ed_error.h"
#include "ed_json.h"
#include "ed_log.h"
#include "ed_time.h"

#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define BATCH_MAX 256            /* frames journaled in one transaction */
#define BATCH_BYTES (1024 * 1024) /* bytes of frames held for one transaction */
#define DRAIN_MIN (64 * 1024)    /* while dropping output, larger output frames are read past unparsed */
#define EXEMPT_MAX (64 * 1024)   /* replies and status up to this size pass the output rate limits */
#define SEND_TIMEOUT_MS 5000     /* a caller waits at most this for a kernel to take a message */

typedef struct reader_arg {
    kh_hub *h;
    kh__k  *k;
    int     fd;
    int64_t job_id;
} reader_arg;

/* ---- the reader --------------------------------------------------------------------- */

static const char *reason_from_job(kh_hub *h, int64_t job_id, int64_t user_id)
{
    sched_job_info j;

    for (int i = 0; i < 40; i++) {
        if (sched_job_get(&j, h->cfg.sched, user_id, job_id) < 0)
            return "died";
        if (strcmp(j.status, "running") != 0 && strcmp(j.status, "queued") != 0)
            break;
        usleep(50000);
    }
    if (strcmp(j.failure_reason, "timeout") == 0)
        return "max_session";
    static const char *const passed[] = {"out_of_funds", "out_of_memory", "preempted", "platform_error",
                                         "key_budget", "suspended"};
    for (size_t i = 0; i < sizeof(passed) / sizeof(passed[0]); i++)
        if (strcmp(j.failure_reason, passed[i]) == 0)
            return passed[i];
    if (strcmp(j.status, "succeeded") == 0)
        return "shutdown";
    return "died";
}

/* Read exactly `len` bytes: 0, 1 at a clean end before the first byte, or
 * ED_EIO (a read error, or the connection closed inside a frame). */
static int read_exact(int fd, void *buf, size_t len)
{
    char *p = buf;
    size_t got = 0;

    while (got < len) {
        ssize_t r = read(fd, p + got, len - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return ed_error_set(ED_EIO, "kernel socket: %s", strerror(errno));
        if (r == 0)
            return got == 0 ? 1 : ed_error_set(ED_EIO, "kernel socket closed inside a frame");
        got += (size_t)r;
    }
    return 0;
}

/* Move k's rate window to `now_ms`, forgetting the slices that left it. */
static void rate_advance(kh__rate *r, int64_t now_ms, int window_ms)
{
    int64_t slice = window_ms / KH_RL_BUCKETS > 0 ? window_ms / KH_RL_BUCKETS : 1;
    int64_t b = now_ms / slice;

    if (b - r->bucket >= KH_RL_BUCKETS || b < r->bucket) {
        memset(r->msgs, 0, sizeof(r->msgs));
        memset(r->bytes, 0, sizeof(r->bytes));
        memset(r->raw, 0, sizeof(r->raw));
        r->sum_msgs = r->sum_bytes = r->sum_raw = 0;
    } else {
        for (int64_t i = r->bucket + 1; i <= b; i++) {
            int s = (int)(i % KH_RL_BUCKETS);
            r->sum_msgs -= r->msgs[s];
            r->sum_bytes -= r->bytes[s];
            r->sum_raw -= r->raw[s];
            r->msgs[s] = r->bytes[s] = r->raw[s] = 0;
        }
    }
    if (b > r->bucket)
        r->bucket = b;
}

/* Whether a message of `len` bytes goes out, Jupyter Server's way
 * (iopub_msg_rate_limit, iopub_data_rate_limit, rate_limit_window): iopub
 * output past either rate over the window is dropped until the rate falls
 * below 80% of the limit; status, execute_input, comm_open and every other
 * channel pass when at most EXEMPT_MAX bytes (and count), unless the window
 * holds ten times the limits. One difference: a message is let through
 * while the window's bytes before it are under the limit, so one large
 * image after some text still shows. When dropping starts, `notice` gets
 * the text telling the user (else ""). */
static bool rate_admit(kh_hub *h, kh__rate *r, const char *channel, const char *type, const char *parent, size_t len,
                       char *notice, size_t nn)
{
    const kh_config *c = &h->cfg;
    int w = c->output_window_ms > 0 ? c->output_window_ms : 3000;
    int64_t msg_allow = (int64_t)c->output_msgs_per_s * w / 1000;
    int64_t byte_allow = c->output_bytes_per_s * w / 1000;
    bool was = r->msgs_over || r->bytes_over;
    int slot = 0;

    notice[0] = '\0';
    rate_advance(r, ed_mono_ns() / 1000000, w);
    slot = (int)(r->bucket % KH_RL_BUCKETS);
    if (len <= EXEMPT_MAX && (strcmp(channel, "iopub") != 0 || strcmp(type, "status") == 0 ||
                              strcmp(type, "execute_input") == 0 || strcmp(type, "comm_open") == 0)) {
        /* Replies and status always pass (clients wait for them), and count:
         * only a kernel sending ten times the limits in them loses them. */
        if ((c->output_msgs_per_s > 0 && r->sum_msgs >= 10 * msg_allow) ||
            (c->output_bytes_per_s > 0 && r->sum_bytes >= 10 * byte_allow))
            return false;
        r->msgs[slot]++;
        r->bytes[slot] += (int64_t)len;
        r->sum_msgs++;
        r->sum_bytes += (int64_t)len;
        return true;
    }
    if (c->output_msgs_per_s > 0 && r->sum_msgs + 1 > msg_allow)
        r->msgs_over = true;
    else if (r->msgs_over && (r->sum_msgs + 1) * 10 < msg_allow * 8)
        r->msgs_over = false;
    if (c->output_bytes_per_s > 0 && r->sum_bytes > byte_allow)
        r->bytes_over = true;
    else if (r->bytes_over && r->sum_bytes * 10 < byte_allow * 8)
        r->bytes_over = false;
    if (r->msgs_over || r->bytes_over) {
        /* say so once when dropping starts, and once more for each new
         * request, at most once per window (parents are the kernel's word) */
        int64_t now_ms = ed_mono_ns() / 1000000;
        if ((!was || strcmp(r->noticed, parent ? parent : "") != 0) &&
            (r->noticed_ms == 0 || now_ms - r->noticed_ms >= w)) {
            snprintf(r->noticed, sizeof(r->noticed), "%s", parent ? parent : "");
            r->noticed_ms = now_ms;
            if (r->bytes_over)
                snprintf(notice, nn,
                         "[eddy] output dropped: this kernel sent more than %lld bytes of output a second (over "
                         "%d s), so its output is dropped until the rate falls. The server's operator can raise "
                         "the limit: kernel_output_bytes_per_s in the gateway config "
                         "(EDDY_KERNEL_OUTPUT_BYTES_PER_S).\n",
                         (long long)c->output_bytes_per_s, (w + 999) / 1000);
            else
                snprintf(notice, nn,
                         "[eddy] output dropped: this kernel sent more than %d output messages a second (over %d "
                         "s), so its output is dropped until the rate falls. The server's operator can raise the "
                         "limit: kernel_output_msgs_per_s in the gateway config (EDDY_KERNEL_OUTPUT_MSGS_PER_S).\n",
                         c->output_msgs_per_s, (w + 999) / 1000);
        }
        return false;
    }
    r->msgs[slot]++;
    r->bytes[slot] += (int64_t)len;
    r->sum_msgs++;
    r->sum_bytes += (int64_t)len;
    return true;
}

/* Read and discard `len` bytes. 0 or as read_exact. */
static int drain(int fd, size_t len)
{
    char buf[65536];
    int err = 0;

    while (len > 0 && err == 0) {
        size_t n = len < sizeof(buf) ? len : sizeof(buf);
        err = read_exact(fd, buf, n);
        if (err == 1)
            err = ed_error_set(ED_EIO, "kernel socket closed inside a frame");
        len -= n;
    }
    return err;
}

/* The kernel broke the protocol (or flooded the gateway): tell the user,
 * stop its process with reason protocol_error. The caller then closes the
 * socket. */
static void protocol_error(kh_hub *h, kh__k *k, int64_t job_id, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void protocol_error(kh_hub *h, kh__k *k, int64_t job_id, const char *fmt, ...)
{
    char why[256], text[400];
    va_list ap;
    bool mine;
    int64_t user;

    va_start(ap, fmt);
    vsnprintf(why, sizeof(why), fmt, ap);
    va_end(ap);
    kh__lock(&h->mu);
    mine = k->job_id == job_id && kh__alive(k) && !h->stopping;
    if (mine && k->stop_reason[0] == '\0')
        snprintf(k->stop_reason, sizeof(k->stop_reason), "protocol_error");
    if (mine)
        k->stopping = true;
    user = k->user_id;
    kh__unlock(&h->mu);
    ed_log_warn("kernel.protocol", "kernel %s (job %lld): %s; stopping it", k->id, (long long)job_id, why);
    if (!mine)
        return;
    snprintf(text, sizeof(text), "[eddy] this kernel was stopped (protocol_error): %s.\n", why);
    kh__journal_notice(h, k, NULL, text);
    if (kh__stop_job(h, user, job_id) < 0)
        ed_log_error("kernel.stop", "kernel %s: %s", k->id, ed_error_last());
}

/* Journal and publish the burst held in msgs/parsed, then prune. */
static void burst_flush(kh_hub *h, kh__k *k, char **msgs, json_t **parsed, int *n, size_t *nbytes)
{
    if (*n == 0)
        return;
    kh__lock(&k->jmu);
    kh__journal_publish(h, k, msgs, parsed, *n);
    kh__journal_prune(h, k);
    kh__unlock(&k->jmu);
    for (int i = 0; i < *n; i++)
        json_decref(parsed[i]);
    *n = 0;
    *nbytes = 0;
}

/* One reader per kernel process. It holds at most BATCH_BYTES of small
 * frames, or one frame of up to KR_OUT_FRAME_MAX bytes, and no lock while it
 * reads; a burst is journaled in one short transaction. */
static void *reader_main(void *p)
{
    reader_arg a = *(reader_arg *)p;
    kh_hub *h = a.h;
    kh__k *k = a.k;
    char *msgs[BATCH_MAX];
    json_t *parsed[BATCH_MAX];
    int n = 0, err = 0;
    size_t nbytes = 0;
    bool mine, died = false;
    kh__rate rl = {0};
    const kh_config *cfg = &h->cfg;
    int window = cfg->output_window_ms > 0 ? cfg->output_window_ms : 3000;
    /* never below twice what eddy-kernel itself may send (KR_OUT_RATE_MAX) */
    int64_t flood_rate = cfg->flood_bytes_per_s > 2 * (int64_t)KR_OUT_RATE_MAX ? cfg->flood_bytes_per_s
                                                                                     : 2 * (int64_t)KR_OUT_RATE_MAX;
    int64_t flood = cfg->flood_bytes_per_s > 0 ? flood_rate * window / 1000 : 0;

    free(p);
    /* ask for kernel_info: the kernel goes busy then idle once Python is
     * ready, which is when the hub reports it idle */
    json_t *info = NULL;
    if (kr_msg_new(&info, "shell", "kernel_info_request", "eddy-hub", NULL, NULL) == 0)
        kh__send_msg(h, k, info);
    json_decref(info);
    for (;;) {
        unsigned char hdr[KR_FRAME_HDR];
        char *buf = NULL, notice[512], pre[1024];
        size_t npre = 0;
        bool counted = false;   /* rate_admit let it through already */
        uint32_t len;
        json_t *m = NULL;
        struct pollfd pfd = {a.fd, POLLIN, 0};

        if (n > 0 && (nbytes >= BATCH_BYTES || poll(&pfd, 1, 0) <= 0)) {
            /* nothing more is waiting (or enough is held): journal and publish the burst */
            burst_flush(h, k, msgs, parsed, &n, &nbytes);
            kh__folds_flush(h, k, false);
            continue;
        }
        if (n == 0) {
            /* a fold waits to be written (its cell went quiet, or a write
             * failed): wake for it while no output comes */
            int due = kh__folds_due_ms(h, k, false);
            if (due >= 0 && poll(&pfd, 1, due) == 0) {
                kh__folds_flush(h, k, false);
                continue;
            }
        }
        if ((err = read_exact(a.fd, hdr, sizeof(hdr))) != 0)
            break;
        len = kr_frame_length(hdr);
        if (len > KR_OUT_FRAME_MAX) {
            protocol_error(h, k, a.job_id, "it sent a frame of %u bytes, over the limit of %u", len,
                           KR_OUT_FRAME_MAX);
            break;
        }
        rate_advance(&rl, ed_mono_ns() / 1000000, window);
        rl.raw[rl.bucket % KH_RL_BUCKETS] += (int64_t)len + KR_FRAME_HDR;
        rl.sum_raw += (int64_t)len + KR_FRAME_HDR;
        if (flood > 0 && rl.sum_raw > flood) {
            protocol_error(h, k, a.job_id, "it sent more than %lld MiB within %d s (the limit is %lld MiB/s)",
                           (long long)(flood >> 20), (window + 999) / 1000, (long long)(flood_rate >> 20));
            break;
        }
        if (n > 0 && nbytes + len > BATCH_BYTES)
            burst_flush(h, k, msgs, parsed, &n, &nbytes);   /* a large frame is journaled alone */
        if (len > DRAIN_MIN && (rl.msgs_over || rl.bytes_over)) {
            /* Output is being dropped: a large output frame is read past,
             * unparsed, at the speed of a copy (eddy-kernel's frames name
             * their channel and type first). */
            char ch[16], type[64], parent[64];
            if ((err = read_exact(a.fd, pre, sizeof(pre))) != 0)
                break;
            kr_frame_peek(ch, sizeof(ch), pre, sizeof(pre), NULL, "channel");
            kr_frame_peek(type, sizeof(type), pre, sizeof(pre), "\"header\"", "msg_type");
            kr_frame_peek(parent, sizeof(parent), pre, sizeof(pre), "\"parent_header\"", "msg_id");
            if (ch[0] && type[0] && !(counted = rate_admit(h, &rl, ch, type, parent, len, notice, sizeof(notice)))) {
                if ((err = drain(a.fd, len - sizeof(pre))) != 0)
                    break;
                if (notice[0]) {
                    json_t *ph = parent[0] ? json_pack("{s:s}", "msg_id", parent) : NULL;
                    burst_flush(h, k, msgs, parsed, &n, &nbytes);
                    kh__journal_notice(h, k, ph, notice);
                    json_decref(ph);
                }
                continue;
            }
            npre = sizeof(pre);   /* not dropped: read it whole after all */
        }
        if ((buf = malloc((size_t)len + 1)) == NULL) {
            ed_log_error("kernel.frame", "kernel %s: no memory for a frame of %u bytes", k->id, len);
            break;
        }
        memcpy(buf, pre, npre);
        if ((err = read_exact(a.fd, buf + npre, len - npre)) != 0) {
            free(buf);
            break;
        }
        buf[len] = '\0';
        if (ed_json_parse_object(&m, buf, len) < 0 || !json_is_object(json_object_get(m, "header")) ||
            !json_is_string(json_object_get(json_object_get(m, "header"), "msg_type"))) {
            json_decref(m);
            free(buf);
            protocol_error(h, k, a.job_id, "it sent a frame that is not a Jupyter message");
            break;
        }
        if (strcmp(kr_msg_channel(m), KR_TERM_CHANNEL) == 0) {
            /* a terminal's (terminal.c): never journaled; bounded there */
            burst_flush(h, k, msgs, parsed, &n, &nbytes);   /* keep the order with what came before */
            kh__term_on_frame(h, k->id, a.job_id, m);
            json_decref(m);
            free(buf);
            continue;
        }
        if (!counted && !rate_admit(h, &rl, kr_msg_channel(m), kr_msg_type(m),
                        json_string_value(json_object_get(json_object_get(m, "parent_header"), "msg_id")), len,
                        notice, sizeof(notice))) {
            if (notice[0]) {
                burst_flush(h, k, msgs, parsed, &n, &nbytes);   /* the notice after what came before */
                kh__journal_notice(h, k, json_object_get(m, "parent_header"), notice);
                ed_log_info("kernel.output", "kernel %s: over its output rate; dropping output", k->id);
            }
            json_decref(m);
            free(buf);
            continue;
        }
        msgs[n] = buf;
        parsed[n] = m;
        nbytes += len;
        if (++n == BATCH_MAX)
            burst_flush(h, k, msgs, parsed, &n, &nbytes);
    }
    burst_flush(h, k, msgs, parsed, &n, &nbytes);
    kh__term_process_ended(h, k->id, a.job_id);   /* its terminals went with it */
    kh__folds_drain(h, k);
    /* the process ended (or the hub is stopping): close our end */
    kh__lock(&k->wmu);
    if (k->fd == a.fd && k->fd_job == a.job_id)
        k->fd = -1;
    close(a.fd);
    kh__unlock(&k->wmu);

    kh__lock(&h->mu);
    mine = k->job_id == a.job_id && kh__alive(k);
    bool requested = k->stop_reason[0] != '\0';
    kh__unlock(&h->mu);
    const char *reason = mine && !requested && !h->stopping ? reason_from_job(h, a.job_id, k->user_id) : "";
    if (mine && !h->stopping)
        kh__journal_status(h, k, "dead");   /* before subscribers see the end */
    char id[KH_ID_LEN], why[32];
    int64_t at = 0;
    kh__lock(&h->mu);
    if (mine && k->job_id == a.job_id && (died = kh__set_dead_locked(h, k, reason[0] ? reason : "died"))) {
        snprintf(id, sizeof(id), "%s", k->id);
        snprintf(why, sizeof(why), "%s", k->stop_reason);
        at = k->ended_at;
    }
    kh__unlock(&h->mu);
    if (died) {
        kh__persist_dead(h, id, why, at);
        ed_log_info("kernel.dead", "kernel %s: %s", id, why);
    }
    kh__lock(&h->mu);
    k->readers--;
    kh__unref_locked(h, k);
    h->nthreads--;
    pthread_cond_broadcast(&h->cv);
    kh__unlock(&h->mu);
    return NULL;
}

/* Give k the socket of job `job_id` and start its reader. Under mu. */
static void attach_locked(kh_hub *h, kh__k *k, int64_t job_id, int fd)
{
    reader_arg *a;
    pthread_t t;

    assert(kh__held(&h->mu));
    a = malloc(sizeof(*a));
    if (a == NULL) {
        close(fd);
        return;
    }
    *a = (reader_arg){h, k, fd, job_id};
    kh__lock(&k->wmu);
    k->fd = fd;
    k->fd_job = job_id;
    k->stuck = false;
    kh__unlock(&k->wmu);
    if (strcmp(k->state, "queued") == 0 || strcmp(k->state, "starting") == 0)
        kh__set_state_locked(k, "starting");
    if (k->started_at == 0)
        k->started_at = ed_now_ms();
    k->last_activity_at = ed_now_ms();
    k->refs++;
    k->readers++;
    h->nthreads++;
    if (pthread_create(&t, NULL, reader_main, a) != 0) {
        free(a);
        k->refs--;
        k->readers--;
        h->nthreads--;
        kh__lock(&k->wmu);
        k->fd = -1;
        close(fd);
        kh__unlock(&k->wmu);
        ed_log_error("kernel.reader", "kernel %s: cannot start its reader thread", k->id);
        return;
    }
    pthread_detach(t);
}

/* The scheduler's hook (on its thread, under its lock). */
void kh__on_socket(void *arg, int64_t job_id, int fd)
{
    kh_hub *h = arg;
    kh__k *k;

    kh__lock(&h->mu);
    for (k = h->list; k; k = k->next)
        if (k->job_id == job_id && kh__alive(k))
            break;
    if (k && !h->stopping) {
        attach_locked(h, k, job_id, fd);
    } else if (!h->stopping && h->npend < KH_MAX_PENDING) {
        h->pend[h->npend++] = (kh__pending_fd){job_id, fd};   /* its kernel row is being made */
    } else {
        close(fd);
    }
    kh__unlock(&h->mu);
}

/* k now runs job `job_id`: take a socket that came before. Under mu. */
void kh__claim_pending_locked(kh_hub *h, kh__k *k)
{
    assert(kh__held(&h->mu));
    for (int i = 0; i < h->npend; i++)
        if (h->pend[i].job_id == k->job_id) {
            int fd = h->pend[i].fd;
            h->pend[i] = h->pend[--h->npend];
            attach_locked(h, k, k->job_id, fd);
            return;
        }
}

/* Write one message to k's socket. No caller waits longer than
 * SEND_TIMEOUT_MS, for the socket or for another sender: a process that
 * does not take the message by then (eddy-kernel's reader thread always
 * reads at once; a stopped or hijacked process does not) is stopped as a
 * protocol error. */
int kh__send_msg(kh_hub *h, kh__k *k, const json_t *msg)
{
    char *s = json_dumps(msg, JSON_COMPACT);
    unsigned char hdr[KR_FRAME_HDR];
    size_t len, off = 0;
    int64_t deadline = ed_mono_ns() + (int64_t)SEND_TIMEOUT_MS * 1000000, stuck_job = 0;
    int err = 0;

    if (s == NULL)
        return ed_error_set(ED_ENOMEM, "message");
    len = strlen(s);
    if (len > KR_FRAME_MAX) {
        free(s);
        return ed_error_set(ED_ETOOBIG, "a message of %zu bytes is over the kernel's limit", len);
    }
    kr_frame_header(hdr, (uint32_t)len);
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += SEND_TIMEOUT_MS / 1000;
    if (kh__lock_until(&k->wmu, &until) != 0) {
        free(s);
        return ed_error_set(ED_EBUSY, "kernel %s is not taking messages", k->id);
    }
    if (k->fd < 0) {
        err = ed_error_set(ED_ECONFLICT, "kernel %s is not running yet", k->id);
    } else if (k->stuck) {
        err = ed_error_set(ED_ECONFLICT, "kernel %s stopped reading its messages", k->id);
    } else {
        const char *parts[2] = {(const char *)hdr, s};
        size_t lens[2] = {KR_FRAME_HDR, len};
        for (int i = 0; i < 2 && err == 0; i++) {
            for (off = 0; off < lens[i];) {
                ssize_t w = send(k->fd, parts[i] + off, lens[i] - off, MSG_NOSIGNAL | MSG_DONTWAIT);
                if (w < 0 && errno == EINTR)
                    continue;
                if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
                    int64_t left_ms = (deadline - ed_mono_ns()) / 1000000;
                    struct pollfd pfd = {k->fd, POLLOUT, 0};
                    if (left_ms > 0 && poll(&pfd, 1, (int)left_ms) >= 0)
                        continue;
                    /* half a frame may be out: the stream is unusable */
                    k->stuck = true;
                    stuck_job = k->fd_job;
                    shutdown(k->fd, SHUT_RDWR);   /* its reader ends */
                    err = ed_error_set(ED_ECONFLICT, "kernel %s stopped reading its messages", k->id);
                    break;
                }
                if (w <= 0) {
                    err = ed_error_set(ED_ECONFLICT, "kernel %s is not running", k->id);
                    break;
                }
                off += (size_t)w;
            }
        }
    }
    kh__unlock(&k->wmu);
    free(s);
    if (stuck_job > 0) {
        char msg_copy[256];
        snprintf(msg_copy, sizeof(msg_copy), "%s", ed_error_last());
        protocol_error(h, k, stuck_job, "it did not read its messages for %d s", SEND_TIMEOUT_MS / 1000);
        err = ed_error_set(err, "%s", msg_copy);
    }
    return err;
}

