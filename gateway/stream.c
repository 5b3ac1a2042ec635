/*
 * stream.c - streaming responses (Server-Sent Events) for the gateway core.
 *
 * A handler calls gw_respond_stream() with a producer; the core answers with
 * MHD_create_response_from_callback (chunked). When the producer has nothing
 * to send, the connection is suspended (MHD_suspend_connection, from within
 * the content reader as libmicrohttpd allows), so no worker thread waits;
 * gw_stream_wake() resumes it. One ticker thread wakes suspended streams for
 * a heartbeat (": hb" comment) every heartbeat interval: that keeps proxies
 * from timing out and is how a client that went away is noticed (the write
 * fails, libmicrohttpd closes the connection and calls release).
 *
 * Lifetime: the gw_stream lives in a global list from gw_respond_stream until
 * libmicrohttpd frees the response (free_cb): release(payload) runs first,
 * then the stream leaves the list under the list lock, so a wake that took
 * the lock before either finds it whole or not at all.
 */
#include "gw_int.h"

#include "ed_error.h"
#include "ed_log.h"
#include "ed_time.h"

#include <microhttpd.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define HEARTBEAT_DEFAULT_MS 15000
#define TICK_MS 50

struct gw_stream {
    struct gw_stream      *next;
    struct MHD_Connection *conn;
    gw_stream_fill         fill;
    void                 (*release)(void *payload);
    void                  *payload;
    int64_t                hb_ns, last_ns;
    int64_t                poll_ns, susp_ns;   /* re-ask the producer every poll_ns while suspended */
    bool                   suspended, woken, done, released;
};

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static gw_stream *g_list;
static bool g_ticker;

static void resume_locked(gw_stream *st)
{
    st->woken = true;
    if (st->suspended) {
        st->suspended = false;
        MHD_resume_connection(st->conn);
    }
}

static void *ticker(void *arg)
{
    (void)arg;
    for (;;) {
        usleep(TICK_MS * 1000);
        int64_t now = ed_mono_ns();
        pthread_mutex_lock(&g_mu);
        for (gw_stream *st = g_list; st; st = st->next)
            if (st->suspended && (now - st->last_ns >= st->hb_ns || (st->poll_ns && now - st->susp_ns >= st->poll_ns)))
                resume_locked(st);
        pthread_mutex_unlock(&g_mu);
    }
    return NULL;
}

static ssize_t reader(void *cls, uint64_t pos, char *buf, size_t max)
{
    static const char hb[] = ": hb\n\n";
    gw_stream *st = cls;
    bool done;
    long n;

    (void)pos;
    pthread_mutex_lock(&g_mu);
    st->woken = false;
    done = st->done;
    pthread_mutex_unlock(&g_mu);
    if (done)
        return MHD_CONTENT_READER_END_OF_STREAM;
    n = st->fill(st->payload, buf, max);
    if (n < 0)
        return MHD_CONTENT_READER_END_OF_STREAM;
    if (n > 0) {
        st->last_ns = ed_mono_ns();
        return (ssize_t)n;
    }
    if (ed_mono_ns() - st->last_ns >= st->hb_ns && max >= sizeof(hb) - 1) {
        memcpy(buf, hb, sizeof(hb) - 1);
        st->last_ns = ed_mono_ns();
        return (ssize_t)(sizeof(hb) - 1);
    }
    pthread_mutex_lock(&g_mu);
    if (!st->woken && !st->done) {
        st->suspended = true;
        st->susp_ns = ed_mono_ns();
        MHD_suspend_connection(st->conn);
    }
    pthread_mutex_unlock(&g_mu);
    return 0;
}

static void free_cb(void *cls)
{
    gw_stream *st = cls;

    if (!st->released && st->release)
        st->release(st->payload);   /* no more wakes after this returns */
    pthread_mutex_lock(&g_mu);
    for (gw_stream **pp = &g_list; *pp; pp = &(*pp)->next)
        if (*pp == st) {
            *pp = st->next;
            break;
        }
    pthread_mutex_unlock(&g_mu);
    free(st);
}

int gw_respond_stream(gw_stream **out, gw_response *res, gw_request *req, int status,
                      const char *content_type, int heartbeat_ms, gw_stream_fill fill,
                      void (*release)(void *payload), void *payload)
{
    gw_stream *st;

    if (out)
        *out = NULL;
    if (fill == NULL || req->conn == NULL)
        return ed_error_set(ED_EINVAL, "stream without a producer or a connection");
    if ((st = calloc(1, sizeof(*st))) == NULL)
        return ed_error_set(ED_ENOMEM, "stream");
    st->conn = req->conn;
    st->fill = fill;
    st->release = release;
    st->payload = payload;
    st->hb_ns = (int64_t)(heartbeat_ms > 0 ? heartbeat_ms : HEARTBEAT_DEFAULT_MS) * 1000000;
    st->last_ns = ed_mono_ns();
    pthread_mutex_lock(&g_mu);
    if (!g_ticker) {
        pthread_t t;
        if (pthread_create(&t, NULL, ticker, NULL) != 0) {
            pthread_mutex_unlock(&g_mu);
            free(st);
            return ed_error_set(ED_ENOMEM, "stream ticker thread");
        }
        pthread_detach(t);
        g_ticker = true;
    }
    st->next = g_list;
    g_list = st;
    pthread_mutex_unlock(&g_mu);
    res->status = status;
    res->content_type = content_type;
    res->stream = st;
    if (out)
        *out = st;
    return 0;
}

void gw_stream_set_poll(gw_stream *st, int poll_ms)
{
    if (st == NULL)
        return;
    pthread_mutex_lock(&g_mu);
    st->poll_ns = poll_ms > 0 ? (int64_t)poll_ms * 1000000 : 0;
    pthread_mutex_unlock(&g_mu);
}

void gw_stream_wake(gw_stream *st)
{
    if (st == NULL)
        return;
    pthread_mutex_lock(&g_mu);
    resume_locked(st);
    pthread_mutex_unlock(&g_mu);
}

struct MHD_Response *gw__stream_mhd_response(gw_response *res)
{
    gw_stream *st = res->stream;
    struct MHD_Response *mr;

    mr = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16384, reader, st, free_cb);
    if (mr == NULL) {
        /* never queued: release the producer and forget the stream */
        free_cb(st);
    }
    res->stream = NULL;
    return mr;
}

void gw__stream_stop_all(void)
{
    pthread_mutex_lock(&g_mu);
    for (gw_stream *st = g_list; st; st = st->next) {
        st->done = true;
        resume_locked(st);
    }
    pthread_mutex_unlock(&g_mu);
}
