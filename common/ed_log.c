#include "ed_log.h"
#include "ed_time.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

static ed_log_level min_level = ED_LOG_INFO;
static int log_fd = 2;
static _Thread_local char request_id[64];

static const char *const level_names[] = {"debug", "info", "warn", "error"};

void ed_log_set_level(ed_log_level level) { min_level = level; }

/* ---- the line buffer ------------------------------------------------------
 * info and debug lines go to one process-wide buffer (so lines of all threads
 * keep one order) that a flusher thread writes out at most LOG_FLUSH_NS after
 * its first line, or that the logging thread writes itself when it fills
 * (about 15 access-log lines a write instead of one).
 * warn and error lines write the buffer and then themselves at once, and
 * exit() (atexit) writes what is left, so nothing is lost at shutdown; only a
 * crash can lose the last few milliseconds of info lines.
 * A child made by fork() or clone() sees buf_pid != getpid() and writes
 * directly without touching the lock, which another thread of the parent may
 * have held at the fork; the parent's pending lines stay the parent's. */
/* One write of at most PIPE_BUF bytes: atomic on a pipe shared with child
 * processes (journald, docker), so batched lines never interleave with theirs. */
#define LOG_BUF_CAP 4096
#define LOG_FLUSH_NS 5000000L

static pthread_mutex_t buf_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t buf_cv = PTHREAD_COND_INITIALIZER;
static char buf[LOG_BUF_CAP];
static size_t buf_len;
/* 0: not started; the pid of the process whose flusher runs; -1: no flusher
 * could be started (write directly). */
static atomic_int buf_pid;

static void write_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return;   /* nowhere left to report a failed log write */
        p += w;
        n -= (size_t)w;
    }
}

static void flush_locked(void)
{
    if (buf_len > 0)
        write_all(log_fd, buf, buf_len);
    buf_len = 0;
}

static void *flusher_main(void *arg)
{
    const struct timespec delay = {0, LOG_FLUSH_NS};

    (void)arg;
    pthread_mutex_lock(&buf_mu);
    for (;;) {
        while (buf_len == 0)
            pthread_cond_wait(&buf_cv, &buf_mu);
        pthread_mutex_unlock(&buf_mu);
        nanosleep(&delay, NULL);   /* gather the lines of the next few ms */
        pthread_mutex_lock(&buf_mu);
        flush_locked();
    }
    return NULL;
}

static void flush_at_exit(void)
{
    if (atomic_load(&buf_pid) != (int)getpid())
        return;
    pthread_mutex_lock(&buf_mu);
    flush_locked();
    pthread_mutex_unlock(&buf_mu);
}

/* Whether this process buffers: starts the flusher on first use. */
static bool buffering(void)
{
    int me = (int)getpid(), owner = atomic_load(&buf_pid);

    if (owner != 0)
        return owner == me;
    pthread_mutex_lock(&buf_mu);
    if (atomic_load(&buf_pid) == 0) {
        pthread_t t;
        pthread_attr_t attr;
        sigset_t all, old;
        int ok = 0;

        /* the flusher takes no signals: the process may wait for them in one
         * thread (sigwait) with them blocked everywhere else */
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &old);
        if (pthread_attr_init(&attr) == 0) {
            pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
            ok = pthread_create(&t, &attr, flusher_main, NULL) == 0;
            pthread_attr_destroy(&attr);
        }
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        if (ok && atexit(flush_at_exit) != 0)
            ok = 0;   /* the thread idles; lines are written directly */
        atomic_store(&buf_pid, ok ? me : -1);
    }
    pthread_mutex_unlock(&buf_mu);
    return atomic_load(&buf_pid) == me;
}

static void emit(ed_log_level level, const char *line, size_t len)
{
    if (!buffering()) {
        write_all(log_fd, line, len);
        return;
    }
    pthread_mutex_lock(&buf_mu);
    if (level >= ED_LOG_WARN || buf_len + len > sizeof(buf))
        flush_locked();
    if (level >= ED_LOG_WARN || len > sizeof(buf)) {
        write_all(log_fd, line, len);
    } else {
        if (buf_len == 0)
            pthread_cond_signal(&buf_cv);
        memcpy(buf + buf_len, line, len);
        buf_len += len;
    }
    pthread_mutex_unlock(&buf_mu);
}

void ed_log_init(int fd)
{
    const char *env = getenv("EDDY_LOG_LEVEL");

    if (atomic_load(&buf_pid) == (int)getpid()) {
        pthread_mutex_lock(&buf_mu);
        flush_locked();   /* pending lines go where they were meant to */
        log_fd = fd;
        pthread_mutex_unlock(&buf_mu);
    } else {
        log_fd = fd;
    }
    if (env == NULL)
        return;
    for (int i = 0; i < 4; i++)
        if (strcasecmp(env, level_names[i]) == 0)
            min_level = (ed_log_level)i;
}

void ed_log_set_request_id(const char *id)
{
    size_t n = id == NULL ? 0 : strnlen(id, sizeof(request_id) - 1);

    /* same truncation as snprintf, without its cost (several calls a request) */
    memcpy(request_id, id == NULL ? "" : id, n);
    request_id[n] = '\0';
}

/* Append `s` as a JSON string body (no quotes) at `out`, escaping what JSON
 * requires; returns the end. `out` has room for 6 bytes per input byte. */
static char *json_escape(char *out, const char *s)
{
    static const char hex[] = "0123456789abcdef";

    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c >= 0x20 && c != '"' && c != '\\') {
            *out++ = (char)c;
        } else if (c == '"' || c == '\\') {
            *out++ = '\\';
            *out++ = (char)c;
        } else if (c == '\n') {
            *out++ = '\\';
            *out++ = 'n';
        } else {
            memcpy(out, "\\u00", 4);
            out[4] = hex[c >> 4];
            out[5] = hex[c & 15];
            out += 6;
        }
    }
    return out;
}

static char *put(char *out, const char *s, size_t n)
{
    memcpy(out, s, n);
    return out + n;
}
#define PUT_LIT(out, lit) put(out, lit, sizeof(lit) - 1)

/* "YYYY-MM-DDTHH:MM:SS.mmmZ" for now into `out` (ED_RFC3339_LEN bytes); the
 * part up to the seconds is formatted once a second per thread. */
static void now_rfc3339(char out[ED_RFC3339_LEN])
{
    static _Thread_local int64_t cached_sec = INT64_MIN;
    static _Thread_local char cached[ED_RFC3339_LEN];
    int64_t ms = ed_now_ms(), sec = ms / 1000;
    int millis = (int)(ms % 1000);

    if (millis < 0) {
        millis += 1000;
        sec -= 1;
    }
    if (sec != cached_sec) {
        ed_time_rfc3339(cached, sizeof(cached), sec * 1000);
        cached_sec = sec;
    }
    memcpy(out, cached, ED_RFC3339_LEN);
    /* cached ends ".000Z": only the millisecond digits change */
    char *dot = strrchr(out, '.');
    if (dot && strlen(dot) == 5) {
        dot[1] = (char)('0' + millis / 100);
        dot[2] = (char)('0' + millis / 10 % 10);
        dot[3] = (char)('0' + millis % 10);
    } else {
        ed_time_rfc3339(out, ED_RFC3339_LEN, ms);
    }
}

void ed_log(ed_log_level level, const char *event, const char *fmt, ...)
{
    char ts[ED_RFC3339_LEN], msg[2048], stackline[4096];
    char *line = stackline, *p;
    size_t msg_len, need;
    va_list ap;
    int n;

    if (level < min_level)
        return;
    if (level > ED_LOG_ERROR)
        level = ED_LOG_ERROR;
    va_start(ap, fmt);
    n = vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    msg_len = n < 0 ? 0 : (size_t)n >= sizeof(msg) ? sizeof(msg) - 1 : (size_t)n;
    if (n < 0)
        msg[0] = '\0';
    now_rfc3339(ts);
    /* Worst case: every byte of event, request id and msg escaped as \u00XX. */
    need = 128 + strlen(ts) + 6 * (strlen(event) + strlen(request_id) + msg_len);
    if (need > sizeof(stackline) && (line = malloc(need)) == NULL)
        return;   /* out of memory: the line is dropped, nothing else to do */
    p = line;
    p = PUT_LIT(p, "{\"ts\":\"");
    p = put(p, ts, strlen(ts));
    p = PUT_LIT(p, "\",\"level\":\"");
    p = put(p, level_names[level], strlen(level_names[level]));
    p = PUT_LIT(p, "\",\"event\":\"");
    p = json_escape(p, event);
    p = PUT_LIT(p, "\"");
    if (request_id[0]) {
        p = PUT_LIT(p, ",\"request_id\":\"");
        p = json_escape(p, request_id);
        p = PUT_LIT(p, "\"");
    }
    p = PUT_LIT(p, ",\"msg\":\"");
    p = json_escape(p, msg);
    p = PUT_LIT(p, "\"}\n");
    emit(level, line, (size_t)(p - line));
    if (line != stackline)
        free(line);
}
