/*
 * jupyter_channels.c - /api/kernels/{id}/channels: a kernel's channels as a
 * WebSocket (ws.c), in Jupyter's default JSON framing or, when the client
 * offers it, v1.kernel.websocket.jupyter.org.
 *
 * A channels connection has no thread of its own: ws.c's event loop turns
 * client frames into kh_send calls (on_message) and, woken by the hub when
 * output arrives, drains the subscription into frames (on_wake), pausing
 * while the socket's queue is long. The subscription starts from the
 * kernel's last sequence number at connect, or ?after=<seq> to resume.
 * Messages sent while the kernel is still queued or starting are held and
 * delivered once it runs.
 */
#include "gw_int.h"
#include "jupyter_int.h"
#include "kh.h"

#include "ed_error.h"
#include "ed_log.h"

#include <errno.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GW_JUPYTER_SUBPROTOCOL "v1.kernel.websocket.jupyter.org"
#define GW_JUPYTER_PENDING_MAX 256   /* client messages held while a kernel starts */

typedef struct chan {
    gw_server      *srv;
    int64_t         user_id;
    char            kid[KH_ID_LEN];
    int64_t         after;          /* subscribe after this sequence number */
    bool            v1;             /* v1.kernel.websocket.jupyter.org framing */
    gw_ws          *ws;
    kh_sub         *sub;
    bool            done;           /* closing: on_wake has nothing more to do */
    json_t         *pending;        /* array of messages held while the kernel starts */
} chan;

/* Frames one on_wake call sends before it yields the loop to other
 * connections, and the queued bytes past which it waits for the socket. */
enum { CHAN_BATCH = 256, CHAN_QUEUE_PAUSE = 1 << 20, CHAN_RETRY_MS = 50 };

/* v1 framing (jupyter_server's serialize_msg_to_ws_v1): u64le count of
 * offsets, the offsets (u64le), then channel, header, parent_header,
 * metadata, content and any buffers; each offset is where a part starts and
 * the last is where the final part ends. */
static int v1_encode(uint8_t **out, size_t *out_len, const json_t *msg)
{
    static const char *const parts[] = {"header", "parent_header", "metadata", "content"};
    const char *channel = json_string_value(json_object_get(msg, "channel"));
    const json_t *bufs = json_object_get(msg, "buffers");
    size_t nbufs = json_is_array(bufs) ? json_array_size(bufs) : 0;
    size_t nparts = 1 + 4 + nbufs, noff = nparts + 1, total, pos;
    char *text[4] = {0};
    uint8_t *b = NULL;
    size_t lens[4];
    int err = 0;

    *out = NULL;
    *out_len = 0;
    if (channel == NULL)
        channel = "iopub";
    total = 8 * (1 + noff) + strlen(channel);
    for (int i = 0; i < 4; i++) {
        const json_t *v = json_object_get(msg, parts[i]);
        json_t *empty = NULL;
        if (v == NULL)
            v = empty = json_object();
        text[i] = v ? json_dumps(v, JSON_COMPACT) : NULL;
        json_decref(empty);
        if (text[i] == NULL) {
            err = ed_error_set(ED_ENOMEM, "v1 frame");
            goto out;
        }
        lens[i] = strlen(text[i]);
        total += lens[i];
    }
    for (size_t i = 0; i < nbufs; i++) {
        const char *s = json_string_value(json_array_get(bufs, i));
        total += s ? strlen(s) : 0;   /* decoded is shorter */
    }
    if ((b = malloc(total)) == NULL) {
        err = ed_error_set(ED_ENOMEM, "v1 frame");
        goto out;
    }
    pos = 8 * (1 + noff);
#define PUT64(at, v) do { uint64_t _v = (uint64_t)(v); for (int _i = 0; _i < 8; _i++) b[(at) + (size_t)_i] = (uint8_t)(_v >> (8 * _i)); } while (0)
    PUT64(0, noff);
    PUT64(8, pos);
    memcpy(b + pos, channel, strlen(channel));
    pos += strlen(channel);
    for (int i = 0; i < 4; i++) {
        PUT64(8 * (2 + (size_t)i), pos);
        memcpy(b + pos, text[i], lens[i]);
        pos += lens[i];
    }
    for (size_t i = 0; i < nbufs; i++) {
        const char *s = json_string_value(json_array_get(bufs, i));
        size_t bin = 0;
        PUT64(8 * (6 + i), pos);
        if (s && sodium_base642bin(b + pos, total - pos, s, strlen(s), NULL, &bin, NULL,
                                   sodium_base64_VARIANT_ORIGINAL) != 0)
            bin = 0;
        pos += bin;
    }
    PUT64(8 * noff, pos);
#undef PUT64
    *out = b;
    *out_len = pos;
    b = NULL;
out:
    for (int i = 0; i < 4; i++)
        free(text[i]);
    free(b);
    return err;
}

static uint64_t get64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

/* The inverse: a v1 binary frame into a message object (new reference). */
int gw__jupyter_v1_decode(json_t **out, const uint8_t *b, size_t len)
{
    static const char *const parts[] = {"header", "parent_header", "metadata", "content"};
    uint64_t noff, off[64];
    json_t *msg = NULL, *bufs = NULL;
    int err;

    *out = NULL;
    if (len < 8 || (noff = get64(b)) < 6 || noff > 64 || len < 8 * (1 + noff))
        return ed_error_set(ED_EINVAL, "v1 frame: bad offset table");
    for (uint64_t i = 0; i < noff; i++) {
        off[i] = get64(b + 8 * (1 + i));
        if (off[i] > len || (i > 0 && off[i] < off[i - 1]) || off[i] < 8 * (1 + noff))
            return ed_error_set(ED_EINVAL, "v1 frame: offset %llu out of order or range",
                                (unsigned long long)i);
    }
    if ((msg = json_object()) == NULL || (bufs = json_array()) == NULL) {
        err = ed_error_set(ED_ENOMEM, "v1 frame");
        goto fail;
    }
    if (json_object_set_new(msg, "channel",
                            json_stringn((const char *)b + off[0], (size_t)(off[1] - off[0]))) < 0) {
        err = ed_error_set(ED_EINVAL, "v1 frame: channel is not UTF-8");
        goto fail;
    }
    for (int i = 0; i < 4; i++) {
        json_error_t je;
        json_t *v = json_loadb((const char *)b + off[1 + i], (size_t)(off[2 + i] - off[1 + i]),
                               JSON_REJECT_DUPLICATES, &je);
        if (v == NULL) {
            err = ed_error_set(ED_EINVAL, "v1 frame: %s is not JSON: %s", parts[i], je.text);
            goto fail;
        }
        json_object_set_new(msg, parts[i], v);
    }
    for (uint64_t i = 5; i + 1 < noff; i++) {
        size_t n = (size_t)(off[i + 1] - off[i]);
        char *enc = malloc(sodium_base64_ENCODED_LEN(n, sodium_base64_VARIANT_ORIGINAL));
        if (enc == NULL) {
            err = ed_error_set(ED_ENOMEM, "v1 frame");
            goto fail;
        }
        sodium_bin2base64(enc, sodium_base64_ENCODED_LEN(n, sodium_base64_VARIANT_ORIGINAL),
                          b + off[i], n, sodium_base64_VARIANT_ORIGINAL);
        json_array_append_new(bufs, json_string(enc));
        free(enc);
    }
    json_object_set_new(msg, "buffers", bufs);
    *out = msg;
    return 0;
fail:
    json_decref(bufs);
    json_decref(msg);
    return err;
}

static int chan_send_msg(chan *c, json_t *msg)
{
    int err;

    if (c->v1) {
        uint8_t *b;
        size_t n;
        if ((err = v1_encode(&b, &n, msg)) < 0)
            return err;
        err = gw_ws_send(c->ws, GW_WS_BINARY, b, n);
        free(b);
    } else {
        char *s;
        json_object_del(msg, "seq");
        if ((s = json_dumps(msg, JSON_COMPACT)) == NULL)
            return ed_error_set(ED_ENOMEM, "message");
        err = gw_ws_send(c->ws, GW_WS_TEXT, s, strlen(s));
        free(s);
    }
    return err;
}

/* Deliver held client messages once the kernel runs; drop them if it died.
 * True while some are still held (the kernel is still starting). */
static bool flush_pending(chan *c)
{
    while (json_array_size(c->pending) > 0) {
        json_t *m = json_incref(json_array_get(c->pending, 0));
        int err = kh_send(c->srv->kernels, c->user_id, c->kid, m);
        json_decref(m);
        if (err == ED_ECONFLICT) {
            kh_kernel k;
            if (kh_kernel_get(&k, c->srv->kernels, c->user_id, c->kid) == 0 &&
                (strcmp(k.status, "queued") == 0 || strcmp(k.status, "starting") == 0))
                return true;   /* still starting: keep it */
        }
        if (err < 0)
            ed_log_warn("jupyter.channels", "kernel %s: message dropped: %s", c->kid,
                        ed_error_last());
        json_array_remove(c->pending, 0);
    }
    return false;
}

/* From the hub's threads: new output or the kernel ended. */
static void chan_output_ready(void *arg)
{
    chan *c = arg;

    gw_ws_wake(c->ws);
}

/* The process ended: a restart goes on under the same id, so follow the new
 * one from where we are; a dead kernel ends the connection. */
static void chan_follow_restart(gw_ws *ws, chan *c)
{
    kh_kernel k;
    kh_sub *ns = NULL;

    if (kh_kernel_get(&k, c->srv->kernels, c->user_id, c->kid) == 0 && strcmp(k.status, "dead") != 0 &&
        kh_subscribe(&ns, c->srv->kernels, c->user_id, c->kid, c->after, chan_output_ready, c) == 0) {
        kh_unsubscribe(c->sub);
        c->sub = ns;
        gw_ws_wake_after(ws, CHAN_RETRY_MS);
        return;
    }
    c->done = true;
    gw_ws_close(ws, 1000, "kernel ended");
}

/* On the connection's loop: hand held messages on, then send what the
 * kernel wrote, a batch at a time and never faster than the peer reads. */
static void chan_wake(gw_ws *ws, void *payload)
{
    chan *c = payload;

    if (c->done)
        return;
    if (flush_pending(c))
        gw_ws_wake_after(ws, CHAN_RETRY_MS);
    for (int n = 0; n < CHAN_BATCH; n++) {
        json_t *m = NULL;
        int64_t seq = 0;
        int rc;

        if (gw_ws_queued(ws) > CHAN_QUEUE_PAUSE)
            return;   /* on_wake runs again once the queue is written out */
        rc = kh_sub_next(&m, &seq, c->sub, 0);
        if (rc == 0)
            return;
        if (rc == ED_ENOTFOUND) {
            chan_follow_restart(ws, c);
            return;
        }
        if (rc < 0) {
            ed_log_warn("jupyter.channels", "kernel %s: %s", c->kid, ed_error_last());
            c->done = true;
            gw_ws_close(ws, 1011, "kernel output unavailable");
            return;
        }
        c->after = seq;
        rc = chan_send_msg(c, m);
        json_decref(m);
        if (rc < 0) {
            c->done = true;
            return;
        }
    }
    gw_ws_wake_after(ws, 0);   /* more waiting: after the other connections had a turn */
}

static int chan_open(gw_ws *ws, void *payload)
{
    chan *c = payload;
    int err;

    c->ws = ws;
    gw_ws_set_on_wake(ws, chan_wake);
    if ((err = kh_subscribe(&c->sub, c->srv->kernels, c->user_id, c->kid, c->after, chan_output_ready, c)) < 0)
        return err;
    gw_ws_wake(ws);   /* replay what the journal holds */
    return 0;
}

static int chan_message(gw_ws *ws, int opcode, const uint8_t *data, size_t len, void *payload)
{
    chan *c = payload;
    json_t *msg = NULL;
    json_error_t je;
    int err;

    if (opcode == GW_WS_BINARY) {
        if ((err = gw__jupyter_v1_decode(&msg, data, len)) < 0)
            return err;
    } else if ((msg = json_loadb((const char *)data, len, JSON_REJECT_DUPLICATES, &je)) == NULL ||
               !json_is_object(msg)) {
        json_decref(msg);
        return ed_error_set(ED_EINVAL, "channels: a message must be a JSON object");
    }
    if (json_object_get(msg, "channel") == NULL) {
        json_decref(msg);
        return ed_error_set(ED_EINVAL, "channels: message without a channel");
    }
    if (json_array_size(c->pending) > 0) {
        /* Keep the order: behind what is already held. */
        err = json_array_size(c->pending) < GW_JUPYTER_PENDING_MAX ? json_array_append(c->pending, msg)
                                                            : ed_error_set(ED_ELIMIT, "too many held messages");
        json_decref(msg);
        return err < 0 ? ED_ELIMIT : 0;
    }
    err = kh_send(c->srv->kernels, c->user_id, c->kid, msg);
    if (err == ED_ECONFLICT) {
        kh_kernel k;
        if (kh_kernel_get(&k, c->srv->kernels, c->user_id, c->kid) == 0 &&
            (strcmp(k.status, "queued") == 0 || strcmp(k.status, "starting") == 0)) {
            json_array_append(c->pending, msg);
            gw_ws_wake_after(ws, CHAN_RETRY_MS);   /* chan_wake hands it on once the kernel runs */
            err = 0;
        }
    }
    json_decref(msg);
    if (err == ED_EINVAL) {
        ed_log_warn("jupyter.channels", "kernel %s: refused a message: %s", c->kid, ed_error_last());
        return 0;   /* one bad message does not end the connection */
    }
    if (err == ED_ECONFLICT) {
        ed_log_warn("jupyter.channels", "kernel %s is not running: %s", c->kid, ed_error_last());
        return 0;
    }
    return err;
}

static void chan_close(gw_ws *ws, void *payload)
{
    chan *c = payload;

    (void)ws;
    kh_unsubscribe(c->sub);   /* under the hub's lock: no chan_output_ready after it */
    json_decref(c->pending);
    free(c);
}

static const gw_ws_handler chan_handler = {chan_open, chan_message, chan_close};

int gw__jupyter_kernel_channels(gw_request *req, gw_response *res)
{
    static const char *const protos[] = {GW_JUPYTER_SUBPROTOCOL, NULL};
    const char *after = gw_request_query(req, "after");
    const char *chosen;
    kh_kernel k;
    chan *c;
    int err;

    if ((err = kh_kernel_get(&k, req->srv->kernels, req->auth.user_id, req->params[0])) < 0)
        return err;
    if ((c = calloc(1, sizeof(*c))) == NULL || (c->pending = json_array()) == NULL) {
        free(c);
        return ed_error_set(ED_ENOMEM, "channels");
    }
    c->srv = req->srv;
    c->user_id = req->auth.user_id;
    snprintf(c->kid, sizeof(c->kid), "%s", k.id);
    c->after = k.last_seq;
    if (after != NULL) {
        char *end;
        long long v;
        errno = 0;
        v = strtoll(after, &end, 10);
        if (*after == '\0' || *end != '\0' || errno || v < 0) {
            json_decref(c->pending);
            free(c);
            return ed_error_set(ED_EINVAL, "after must be a sequence number");
        }
        c->after = v;
    }
    if ((err = gw_ws_accept(&chosen, req, res, protos, &chan_handler, c)) < 0) {
        json_decref(c->pending);
        free(c);
        return err;
    }
    c->v1 = chosen != NULL;
    return 0;
}

