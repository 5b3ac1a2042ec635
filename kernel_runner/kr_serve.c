/*
 * kr_serve.c - `eddy-kernel serve`: a Jupyter kernel over one framed socket.
 *
 * Threads: the main thread runs Python (it holds the GIL except while it
 * waits for the next request or an input reply). A reader thread, which
 * never touches Python objects, reads frames: interrupt_request (control)
 * and input_reply (stdin) are acted on at once; everything else is queued
 * for the main thread in arrival order. Writes from either thread go under
 * `wlock`, so frames never interleave. The reader runs with every signal
 * blocked so SIGINT always lands on the main thread, where Python turns it
 * into KeyboardInterrupt; the reader interrupts by pthread_kill(SIGINT) of
 * the main thread.
 *
 * Output limits: stream text is coalesced (at most one stream message per
 * STREAM_GAP_MS per run of text, as ipykernel's flush interval does; a
 * flusher thread sends what waits), cut into pieces of at most
 * STREAM_CHUNK bytes, and no frame over KR_OUT_FRAME_MAX leaves (the gateway
 * stops a kernel that sends one): a larger display becomes a notice on
 * stderr, a larger reply an error reply.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "ed_error.h"
#include "kr_int.h"
#include "kr_term.h"

typedef struct qitem {
    json_t *msg;
    struct qitem *next;
} qitem;

#define STREAM_GAP_MS 50               /* at most one stream message per this, per run of text */
#define STREAM_CHUNK  (1024 * 1024)    /* text bytes per stream message: JSON-escaped, still < KR_OUT_FRAME_MAX */

typedef struct kr_serve {
    int fd;
    pid_t pid;                    /* the kernel's; forked children do not send */
    pthread_t main_thread;        /* where Python runs and SIGINT must land */
    char session[33];
    pthread_mutex_t wlock;        /* one frame at a time on fd; the stream text below */
    pthread_cond_t scond;         /* stream text waits (for the flusher) */
    char *sbuf;                   /* stream text not sent yet */
    size_t slen, scap;
    char sname[8];                /* its stream: stdout | stderr */
    json_t *sparent;              /* its parent header */
    int64_t last_stream_ns;       /* when the last stream message left */
    double out_tokens;            /* bytes that may leave now (KR_OUT_RATE_MAX bucket) */
    int64_t out_ns;               /* when out_tokens was last filled */
    int flusher_stop;
    pthread_mutex_t lock;         /* everything below */
    pthread_cond_t cond;
    qitem *head, *tail;           /* requests for the main thread */
    int closed;                   /* the reader saw EOF or an error */
    int busy;                     /* the main thread is running a request */
    int input_waiting;            /* an input_request is out */
    char *input_value;            /* its answer, once it came */
    kr__terms *terms;             /* the terminals (kr_term.c): the reader thread hands them messages */
    /* main thread only (or with the GIL held): */
    json_t *parent;               /* header of the request being handled */
    PyObject *kernel;
    int shutdown;
} kr_serve;

static int64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Frame one message (under wlock). Over KR_OUT_FRAME_MAX it is replaced:
 * iopub output by a stderr notice, anything else by the same msg_type with
 * an error content, so no client waits for a reply that never comes. */
static int frame_locked(kr_serve *k, const char *channel, const char *type, const json_t *parent,
                        json_t *content)
{
    json_t *m;
    char *s;
    size_t len;
    int err;

    if ((err = kr_msg_new(&m, channel, type, k->session, parent, content)) < 0)
        return err;
    s = json_dumps(m, JSON_COMPACT);
    json_decref(m);
    if (s == NULL)
        return ed_error_set(ED_ENOMEM, "serialising message %s", type);
    len = strlen(s);
    if (len > KR_OUT_FRAME_MAX) {
        char text[300];
        free(s);
        fprintf(stderr, "eddy-kernel: a %s message of %zu bytes is over the %u-byte limit; not sent\n", type, len,
                KR_OUT_FRAME_MAX);
        snprintf(text, sizeof(text),
                 "[eddy-kernel] a %s message of %zu bytes is over the limit of %u MiB and was not sent.\n", type,
                 len, KR_OUT_FRAME_MAX >> 20);
        if (strcmp(channel, "iopub") == 0)
            content = json_pack("{s:s, s:s}", "name", "stderr", "text", text), type = "stream";
        else
            content = json_pack("{s:s, s:s, s:s, s:[s]}", "status", "error", "ename", "OutputTooLarge", "evalue",
                                text, "traceback", text);
        if ((err = kr_msg_new(&m, channel, type, k->session, parent, content)) < 0)
            return err;
        s = json_dumps(m, JSON_COMPACT);
        json_decref(m);
        if (s == NULL)
            return ed_error_set(ED_ENOMEM, "serialising message %s", type);
        len = strlen(s);
    }
    /* at most KR_OUT_RATE_MAX bytes a second beyond a one-second burst:
     * a cell that prints without end waits here, as on a slow terminal */
    int64_t now = mono_ns();
    k->out_tokens += (double)(now - k->out_ns) * KR_OUT_RATE_MAX / 1e9;
    if (k->out_tokens > KR_OUT_RATE_MAX)
        k->out_tokens = KR_OUT_RATE_MAX;
    k->out_ns = now;
    if (k->out_tokens < 0) {
        double wait = -k->out_tokens / KR_OUT_RATE_MAX;
        struct timespec ts = {(time_t)wait, (long)((wait - (double)(time_t)wait) * 1e9)};
        nanosleep(&ts, NULL);
    }
    k->out_tokens -= (double)(len + KR_FRAME_HDR);
    err = kr_frame_write(k->fd, s, len);
    free(s);
    return err;
}

/* Send the waiting stream text (under wlock), in pieces of at most
 * STREAM_CHUNK bytes cut between UTF-8 characters. */
static int stream_flush_locked(kr_serve *k)
{
    size_t off = 0;
    int err = 0;

    while (off < k->slen && err == 0) {
        size_t n = k->slen - off;
        if (n > STREAM_CHUNK) {
            n = STREAM_CHUNK;
            while (n > 1 && ((unsigned char)k->sbuf[off + n] & 0xC0) == 0x80)
                n--;   /* not inside a character */
        }
        json_t *text = json_stringn(k->sbuf + off, n);
        err = text ? frame_locked(k, "iopub", "stream", k->sparent,
                                  json_pack("{s:s, s:o}", "name", k->sname, "text", text))
                   : ed_error_set(ED_EINVAL, "stream text is not UTF-8");
        off += n;
    }
    k->slen = 0;
    json_decref(k->sparent);
    k->sparent = NULL;
    k->last_stream_ns = mono_ns();
    if (k->scap > 4 * STREAM_CHUNK) {   /* do not keep a huge buffer */
        free(k->sbuf);
        k->sbuf = NULL;
        k->scap = 0;
    }
    return err;
}

static int same_parent(const json_t *a, const json_t *b)
{
    const char *x = json_string_value(json_object_get(a, "msg_id"));
    const char *y = json_string_value(json_object_get(b, "msg_id"));
    return (x == NULL && y == NULL) || (x && y && strcmp(x, y) == 0);
}

/* Stream text joins what waits, or goes at once when nothing went out for
 * STREAM_GAP_MS. `content` is taken. */
static int stream_add(kr_serve *k, const json_t *parent, json_t *content)
{
    const char *name = json_string_value(json_object_get(content, "name"));
    const json_t *t = json_object_get(content, "text");
    size_t n = json_string_length(t);
    int err = 0;

    if (name == NULL || strlen(name) >= sizeof(k->sname) || !json_is_string(t)) {
        err = ed_error_set(ED_EINVAL, "a stream needs a name (stdout, stderr) and a text");
        json_decref(content);
        return err;
    }
    pthread_mutex_lock(&k->wlock);
    if (k->slen > 0 && (strcmp(k->sname, name) != 0 || !same_parent(k->sparent, parent)))
        err = stream_flush_locked(k);
    if (k->slen + n > k->scap) {
        size_t cap = k->scap ? k->scap : 4096;
        while (cap < k->slen + n)
            cap *= 2;
        char *nb = realloc(k->sbuf, cap);
        if (nb == NULL) {
            pthread_mutex_unlock(&k->wlock);
            json_decref(content);
            return ed_error_set(ED_ENOMEM, "stream text");
        }
        k->sbuf = nb;
        k->scap = cap;
    }
    if (k->slen == 0) {
        snprintf(k->sname, sizeof(k->sname), "%s", name);
        k->sparent = parent ? json_deep_copy(parent) : NULL;
    }
    memcpy(k->sbuf + k->slen, json_string_value(t), n);
    k->slen += n;
    if (mono_ns() - k->last_stream_ns >= (int64_t)STREAM_GAP_MS * 1000000 || k->slen >= STREAM_CHUNK)
        err = stream_flush_locked(k);
    else
        pthread_cond_signal(&k->scond);
    pthread_mutex_unlock(&k->wlock);
    json_decref(content);
    return err;
}

static int send_msg(kr_serve *k, const char *channel, const char *type, const json_t *parent,
                    json_t *content)
{
    int err = 0;

    if (strcmp(channel, "iopub") == 0 && strcmp(type, "stream") == 0)
        return stream_add(k, parent, content);
    pthread_mutex_lock(&k->wlock);
    if (k->slen > 0)
        err = stream_flush_locked(k);   /* output keeps its order */
    if (err == 0)
        err = frame_locked(k, channel, type, parent, content);
    else
        json_decref(content);
    pthread_mutex_unlock(&k->wlock);
    return err;
}

/* Sends stream text that waited STREAM_GAP_MS. All signals blocked. */
static void *flusher_main(void *arg)
{
    kr_serve *k = arg;

    pthread_mutex_lock(&k->wlock);
    while (!k->flusher_stop) {
        if (k->slen == 0) {
            pthread_cond_wait(&k->scond, &k->wlock);
            continue;
        }
        int64_t wait = k->last_stream_ns + (int64_t)STREAM_GAP_MS * 1000000 - mono_ns();
        if (wait <= 0) {
            stream_flush_locked(k);
            continue;
        }
        pthread_mutex_unlock(&k->wlock);
        struct timespec ts = {0, (long)wait};
        nanosleep(&ts, NULL);
        pthread_mutex_lock(&k->wlock);
    }
    if (k->slen > 0)
        stream_flush_locked(k);
    pthread_mutex_unlock(&k->wlock);
    return NULL;
}

static void send_status(kr_serve *k, const char *state)
{
    send_msg(k, "iopub", "status", k->parent, json_pack("{s:s}", "execution_state", state));
}

/* ---- the hooks Python calls ------------------------------------------------------ */

static int io_send(void *payload, const char *channel, const char *msg_type, const char *js,
                   size_t len)
{
    kr_serve *k = payload;
    json_error_t je;
    json_t *content = json_loadb(js, len, 0, &je);

    if (content == NULL)
        return ed_error_set(ED_EINVAL, "%s content is not JSON: %s", msg_type, je.text);
    if (getpid() != k->pid) {   /* a forked child: the socket is the parent's */
        json_decref(content);
        return ed_error_set(ED_EIO, "not the kernel process");
    }
    return send_msg(k, channel, msg_type, k->parent, content);
}

static PyObject *io_input(void *payload, const char *prompt, int password)
{
    kr_serve *k = payload;
    char *value = NULL;
    int closed = 0;

    pthread_mutex_lock(&k->lock);
    free(k->input_value);
    k->input_value = NULL;
    k->input_waiting = 1;
    pthread_mutex_unlock(&k->lock);
    send_msg(k, "stdin", "input_request", k->parent,
             json_pack("{s:s, s:b}", "prompt", prompt, "password", password));
    for (;;) {
        Py_BEGIN_ALLOW_THREADS
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 100 * 1000 * 1000;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        pthread_mutex_lock(&k->lock);
        if (k->input_value == NULL && !k->closed)
            pthread_cond_timedwait(&k->cond, &k->lock, &ts);
        value = k->input_value;
        k->input_value = NULL;
        closed = k->closed;
        if (value || closed)
            k->input_waiting = 0;
        pthread_mutex_unlock(&k->lock);
        Py_END_ALLOW_THREADS
        if (value || closed)
            break;
        if (PyErr_CheckSignals() < 0) {   /* interrupted: KeyboardInterrupt */
            pthread_mutex_lock(&k->lock);
            k->input_waiting = 0;
            pthread_mutex_unlock(&k->lock);
            return NULL;
        }
    }
    if (value == NULL) {
        PyErr_SetString(PyExc_EOFError, "the frontend disconnected while waiting for input");
        return NULL;
    }
    PyObject *s = PyUnicode_DecodeUTF8(value, (Py_ssize_t)strlen(value), "replace");
    free(value);
    return s;
}

/* kr_term.c's sends: from its relay thread and from the reader. */
static int term_send(void *payload, const char *msg_type, json_t *content)
{
    if (content == NULL)
        return ed_error_set(ED_ENOMEM, "%s", msg_type);
    return send_msg(payload, KR_TERM_CHANNEL, msg_type, NULL, content);
}

/* ---- the reader thread ------------------------------------------------------------- */

static void interrupt_main(kr_serve *k)
{
    /* Caller holds k->lock. Only while a request runs: an interrupt of an
     * idle kernel must not hit the next cell. A real SIGINT to the main
     * thread, not PyErr_SetInterruptEx: called from this thread, CPython
     * 3.11 records the signal but does not wake the main thread's eval
     * loop, so a busy `while True: pass` would never see it. The signal
     * also breaks the main thread out of a blocking call (sleep, read). */
    if (k->busy || k->input_waiting)
        pthread_kill(k->main_thread, SIGINT);
}

static void *reader_main(void *arg)
{
    kr_serve *k = arg;

    for (;;) {
        json_t *m;
        int err = kr_msg_recv(&m, k->fd, KR_FRAME_MAX);

        if (err == ED_EINVAL) {
            fprintf(stderr, "eddy-kernel: dropped a frame: %s\n", ed_error_last());
            continue;
        }
        if (err < 0) {
            if (err != ED_ENOTFOUND)
                fprintf(stderr, "eddy-kernel: connection: %s\n", ed_error_last());
            pthread_mutex_lock(&k->lock);
            k->closed = 1;
            interrupt_main(k);   /* nobody is listening: stop the cell */
            pthread_cond_broadcast(&k->cond);
            pthread_mutex_unlock(&k->lock);
            return NULL;
        }
        const char *type = kr_msg_type(m), *channel = kr_msg_channel(m);
        if (strncmp(type, KR_TERM_PREFIX, strlen(KR_TERM_PREFIX)) == 0) {
            /* terminals never wait for Python */
            if (k->terms == NULL || kr__terms_handle(k->terms, type, json_object_get(m, "content")) < 0)
                fprintf(stderr, "eddy-kernel: %s: %s\n", type, k->terms ? ed_error_last() : "no terminals");
            json_decref(m);
            continue;
        }
        if (strcmp(type, "interrupt_request") == 0) {
            pthread_mutex_lock(&k->lock);
            interrupt_main(k);
            pthread_mutex_unlock(&k->lock);
            send_msg(k, channel, "interrupt_reply", json_object_get(m, "header"),
                     json_pack("{s:s}", "status", "ok"));
            json_decref(m);
            continue;
        }
        if (strcmp(type, "input_reply") == 0) {
            const char *v = json_string_value(json_object_get(json_object_get(m, "content"),
                                                              "value"));
            pthread_mutex_lock(&k->lock);
            if (k->input_waiting) {
                free(k->input_value);
                k->input_value = strdup(v ? v : "");
                pthread_cond_broadcast(&k->cond);
            }
            pthread_mutex_unlock(&k->lock);
            json_decref(m);
            continue;
        }
        qitem *q = calloc(1, sizeof(*q));
        if (q == NULL) {
            fprintf(stderr, "eddy-kernel: out of memory queueing %s\n", type);
            json_decref(m);
            continue;
        }
        q->msg = m;
        pthread_mutex_lock(&k->lock);
        if (strcmp(type, "shutdown_request") == 0)
            interrupt_main(k);   /* a shutdown does not wait for the cell */
        if (k->tail)
            k->tail->next = q;
        else
            k->head = q;
        k->tail = q;
        pthread_cond_broadcast(&k->cond);
        pthread_mutex_unlock(&k->lock);
    }
}

/* Next request, or NULL once the connection closed and the queue is empty.
 * Called without the GIL. */
static json_t *queue_pop(kr_serve *k)
{
    json_t *m = NULL;

    pthread_mutex_lock(&k->lock);
    while (k->head == NULL && !k->closed)
        pthread_cond_wait(&k->cond, &k->lock);
    if (k->head) {
        qitem *q = k->head;
        k->head = q->next;
        if (k->head == NULL)
            k->tail = NULL;
        m = q->msg;
        free(q);
    }
    pthread_mutex_unlock(&k->lock);
    return m;
}

/* ---- handling one request ------------------------------------------------------------ */

static void set_busy(kr_serve *k, int busy)
{
    pthread_mutex_lock(&k->lock);
    k->busy = busy;
    pthread_mutex_unlock(&k->lock);
    /* An interrupt that arrived as the request ended is dropped here rather
     * than raised in whatever runs next. */
    if (PyErr_CheckSignals() < 0)
        PyErr_Clear();
}

/* "execute_request" -> "execute_reply" into `out` (64 bytes). */
static int reply_type(char *out, size_t n, const char *type)
{
    size_t len = strlen(type);
    if (len < 8 || strcmp(type + len - 8, "_request") != 0 || len - 8 + 7 >= n)
        return 0;
    snprintf(out, n, "%.*s_reply", (int)(len - 8), type);
    return 1;
}

static void handle(kr_serve *k, json_t *msg)
{
    const char *type = kr_msg_type(msg), *channel = kr_msg_channel(msg);
    json_t *content = json_object_get(msg, "content");
    char rtype[64];
    char *cjs;
    PyObject *r;

    json_decref(k->parent);
    k->parent = json_incref(json_object_get(msg, "header"));
    send_status(k, "busy");
    if (strcmp(type, "shutdown_request") == 0) {
        int restart = json_is_true(json_object_get(content, "restart"));
        send_msg(k, channel, "shutdown_reply", k->parent,
                 json_pack("{s:s, s:b}", "status", "ok", "restart", restart));
        k->shutdown = 1;
        send_status(k, "idle");
        return;
    }
    cjs = json_dumps(json_is_object(content) ? content : json_object(), JSON_COMPACT);
    if (cjs == NULL) {
        fprintf(stderr, "eddy-kernel: out of memory handling %s\n", type);
        send_status(k, "idle");
        return;
    }
    set_busy(k, 1);
    r = PyObject_CallMethod(k->kernel, "dispatch", "ss", type, cjs);
    free(cjs);
    if (r == NULL) {
        /* The support code itself failed (or an interrupt hit between the
         * cell and the reply): answer anyway so the client does not hang. */
        json_t *e = kr__py_error_json();
        /* The client of an execute must see the error on iopub too (an
         * interrupt that lands before the cell's first statement), not only
         * a bare error reply. */
        if (e && strcmp(type, "execute_request") == 0)
            send_msg(k, "iopub", "error", k->parent, json_deep_copy(e));
        if (reply_type(rtype, sizeof(rtype), type) && e) {
            json_object_set_new(e, "status", json_string("error"));
            send_msg(k, channel, rtype, k->parent, e);
        } else {
            json_decref(e);
        }
    } else {
        PyObject *rt = NULL, *rj = NULL;
        if (PyTuple_Check(r) && PyTuple_GET_SIZE(r) == 2) {
            rt = PyTuple_GET_ITEM(r, 0);
            rj = PyTuple_GET_ITEM(r, 1);
        }
        if (rt && PyUnicode_Check(rt) && rj && PyUnicode_Check(rj)) {
            Py_ssize_t n;
            const char *s = PyUnicode_AsUTF8AndSize(rj, &n);
            const char *t = PyUnicode_AsUTF8(rt);
            json_error_t je;
            json_t *c = s ? json_loadb(s, (size_t)n, 0, &je) : NULL;
            if (c && t) {
                send_msg(k, channel, t, k->parent, c);
            } else {
                json_decref(c);
                fprintf(stderr, "eddy-kernel: bad reply to %s\n", type);
            }
            PyErr_Clear();
        } else if (reply_type(rtype, sizeof(rtype), type)) {
            send_msg(k, channel, rtype, k->parent,
                     json_pack("{s:s, s:s, s:s, s:[]}", "status", "error", "ename",
                               "UnsupportedRequest", "evalue", type, "traceback"));
        } else {
            fprintf(stderr, "eddy-kernel: ignoring a %s message\n", type);
        }
        Py_DECREF(r);
    }
    set_busy(k, 0);
    send_status(k, "idle");
}

/* ---- connecting -------------------------------------------------------------------- */

static int serve_usage(void)
{
    fprintf(stderr, "usage: eddy-kernel serve --fd N\n"
                    "       eddy-kernel serve --connect unix:PATH|HOST:PORT [--token T]\n"
                    "       (the token may instead come in EDDY_KERNEL_TOKEN)\n");
    return 2;
}

static int dial(int *out, const char *addr)
{
    int fd = -1;

    *out = -1;
    if (strncmp(addr, "unix:", 5) == 0) {
        struct sockaddr_un sa = {.sun_family = AF_UNIX};
        if (strlen(addr + 5) == 0 || strlen(addr + 5) >= sizeof(sa.sun_path))
            return ed_error_set(ED_EINVAL, "bad UNIX socket path in '%s'", addr);
        strcpy(sa.sun_path, addr + 5);
        if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0)
            return ed_error_set(ED_EIO, "socket: %s", strerror(errno));
        if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
            int e = errno;
            close(fd);
            return ed_error_set(ED_EIO, "connect %s: %s", addr, strerror(e));
        }
        *out = fd;
        return 0;
    }
    char host[256];
    const char *colon = strrchr(addr, ':');
    const char *h = addr;
    size_t hl;
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *ai = NULL, *p;
    int rc;

    if (colon == NULL || colon[1] == '\0')
        return ed_error_set(ED_EINVAL, "address '%s' is neither unix:PATH nor HOST:PORT", addr);
    hl = (size_t)(colon - addr);
    if (hl >= 2 && h[0] == '[' && h[hl - 1] == ']') {
        h++;
        hl -= 2;
    }
    if (hl == 0 || hl >= sizeof(host))
        return ed_error_set(ED_EINVAL, "bad host in '%s'", addr);
    memcpy(host, h, hl);
    host[hl] = '\0';
    if ((rc = getaddrinfo(host, colon + 1, &hints, &ai)) != 0)
        return ed_error_set(ED_EIO, "resolve %s: %s", addr, gai_strerror(rc));
    for (p = ai; p; p = p->ai_next) {
        if ((fd = socket(p->ai_family, p->ai_socktype | SOCK_CLOEXEC, p->ai_protocol)) < 0)
            continue;
        if (connect(fd, p->ai_addr, p->ai_addrlen) == 0)
            break;
        close(fd);
        fd = -1;
    }
    freeaddrinfo(ai);
    if (fd < 0)
        return ed_error_set(ED_EIO, "connect %s: %s", addr, strerror(errno));
    *out = fd;
    return 0;
}

/* argv: --fd N | --connect ADDR [--token T] */
int kr__serve(int argc, char **argv)
{
    kr_serve k = {.fd = -1};
    const char *addr = NULL, *token = NULL;
    char *token_copy = NULL;
    long fdn = -1;
    pthread_t reader, flusher;
    sigset_t all, old;
    int rc = 0, have_reader = 0, have_flusher = 0;
    char *sargv[1] = {"eddy-kernel"};

    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "--fd") == 0 && i + 1 < argc) {
            char *end;
            fdn = strtol(argv[++i], &end, 10);
            if (*end || end == argv[i] || fdn < 0 || fdn > 1 << 20) {
                fprintf(stderr, "eddy-kernel: --fd needs a file descriptor number\n");
                return 2;
            }
        } else if (strcmp(argv[i], "--connect") == 0 && i + 1 < argc) {
            addr = argv[++i];
        } else if (strcmp(argv[i], "--token") == 0 && i + 1 < argc) {
            token = argv[++i];
        } else {
            fprintf(stderr, "eddy-kernel: unexpected argument '%s'\n", argv[i]);
            return serve_usage();
        }
    }
    if ((fdn >= 0) == (addr != NULL)) {
        fprintf(stderr, "eddy-kernel: serve needs exactly one of --fd and --connect\n");
        return serve_usage();
    }
    if (fdn >= 0) {
        struct stat st;
        if (fstat((int)fdn, &st) < 0 || !S_ISSOCK(st.st_mode)) {
            fprintf(stderr, "eddy-kernel: --fd %ld is not an open socket\n", fdn);
            return 2;
        }
        k.fd = (int)fdn;
    } else {
        if (token == NULL)
            token = getenv("EDDY_KERNEL_TOKEN");
        if (token == NULL || *token == '\0') {
            fprintf(stderr, "eddy-kernel: --connect needs a token (--token or EDDY_KERNEL_TOKEN)\n");
            return 2;
        }
        token_copy = strdup(token);
        unsetenv("EDDY_KERNEL_TOKEN");   /* user code must not read it */
        if (token_copy == NULL || dial(&k.fd, addr) < 0) {
            fprintf(stderr, "eddy-kernel: %s\n", token_copy ? ed_error_last() : "out of memory");
            free(token_copy);
            return 1;
        }
        json_t *hello = json_pack("{s:s, s:s, s:s, s:I}", "token", token_copy, "protocol_version",
                                  KR_PROTOCOL_VERSION, "implementation", "eddy-kernel", "pid",
                                  (json_int_t)getpid());
        char *s = hello ? json_dumps(hello, JSON_COMPACT) : NULL;
        int err = s ? kr_frame_write(k.fd, s, strlen(s)) : ED_ENOMEM;
        explicit_bzero(token_copy, strlen(token_copy));
        free(token_copy);
        json_decref(hello);
        free(s);
        if (err < 0) {
            fprintf(stderr, "eddy-kernel: sending the token: %s\n", ed_error_last());
            close(k.fd);
            return 1;
        }
    }
    /* Out of the way: a high descriptor, close-on-exec (cells' subprocesses
     * must not hold it). User code runs in this process and can still find
     * it in /proc/self/fd; the gateway treats whatever arrives on it as
     * untrusted (frame limit, protocol checks, rate limits). */
    {
        int hi = fcntl(k.fd, F_DUPFD_CLOEXEC, KR_SOCKET_FD_MIN);
        if (hi >= 0) {
            close(k.fd);
            k.fd = hi;
        } else {
            fcntl(k.fd, F_SETFD, FD_CLOEXEC);   /* a low descriptor limit: keep it where it is */
        }
    }
    signal(SIGPIPE, SIG_IGN);
    kr_msg_new_id(k.session);
    k.pid = getpid();
    k.main_thread = pthread_self();
    pthread_mutex_init(&k.wlock, NULL);
    pthread_mutex_init(&k.lock, NULL);
    pthread_cond_init(&k.cond, NULL);
    pthread_cond_init(&k.scond, NULL);

    if (kr__py_init(KR__SERVE, 1, sargv, NULL, NULL) < 0 ||
        kr__py_start_kernel(&k.kernel, "serve", 0) < 0) {
        fprintf(stderr, "eddy-kernel: %s\n", ed_error_last());
        rc = 1;
        goto done;
    }
    if (kr__terms_new(&k.terms, NULL, term_send, &k) < 0)
        fprintf(stderr, "eddy-kernel: no terminals: %s\n", ed_error_last());
    kr__io io = {.send = io_send, .input = io_input, .payload = &k};
    kr__py_set_io(&io);

    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    if (pthread_create(&reader, NULL, reader_main, &k) != 0) {
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        fprintf(stderr, "eddy-kernel: cannot start the reader thread\n");
        rc = 1;
        goto done;
    }
    have_reader = 1;
    if (pthread_create(&flusher, NULL, flusher_main, &k) != 0) {
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        fprintf(stderr, "eddy-kernel: cannot start the output thread\n");
        rc = 1;
        goto done;
    }
    have_flusher = 1;
    pthread_sigmask(SIG_SETMASK, &old, NULL);

    send_status(&k, "starting");
    while (!k.shutdown) {
        json_t *m;
        Py_BEGIN_ALLOW_THREADS
        m = queue_pop(&k);
        Py_END_ALLOW_THREADS
        if (m == NULL)
            break;   /* the frontend went away */
        handle(&k, m);
        json_decref(m);
    }
done:
    kr__py_set_io(NULL);
    if (have_flusher) {
        pthread_mutex_lock(&k.wlock);
        k.flusher_stop = 1;   /* it sends what still waits, then ends */
        pthread_cond_signal(&k.scond);
        pthread_mutex_unlock(&k.wlock);
        Py_BEGIN_ALLOW_THREADS
        pthread_join(flusher, NULL);
        Py_END_ALLOW_THREADS
    }
    if (k.fd >= 0)
        shutdown(k.fd, SHUT_RDWR);   /* wakes the reader */
    if (have_reader) {
        Py_BEGIN_ALLOW_THREADS
        pthread_join(reader, NULL);
        Py_END_ALLOW_THREADS
    }
    /* after the reader (which hands terminals messages): every shell and
     * what it started goes with the kernel */
    if (k.terms) {
        Py_BEGIN_ALLOW_THREADS
        kr__terms_free(k.terms);
        Py_END_ALLOW_THREADS
        k.terms = NULL;
    }
    for (qitem *q = k.head, *n; q; q = n) {
        n = q->next;
        json_decref(q->msg);
        free(q);
    }
    json_decref(k.parent);
    json_decref(k.sparent);
    free(k.sbuf);
    free(k.input_value);
    Py_XDECREF(k.kernel);
    if (Py_IsInitialized())
        Py_FinalizeEx();
    if (k.fd >= 0)
        close(k.fd);
    return rc;
}
