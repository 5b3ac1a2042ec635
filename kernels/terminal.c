/*
 * terminal.c - terminals: a shell inside a kernel's sandbox (eddy-kernel's
 * kr_term.c runs it), seen from the hub. The hub keeps, per terminal, its
 * owner, kernel and process, and the last KH_TERM_RING bytes of its output
 * in a ring: a page that connects gets the last KH_TERM_REPLAY of them (the
 * screen), then follows with a cursor; one more than the ring behind is let go. Nothing of a terminal enters the journal or a
 * notebook.
 *
 * Messages: kh_terminal_open/_input/_resize/_close send eddy_terminal_* on
 * the kernel's control channel (kh_send); the kernel's reader thread hands
 * the "terminal" channel's frames to kh__term_on_frame (opened, error,
 * output, exit), and the end of a kernel process to kh__term_process_ended.
 * Those frames are the kernel's word, so untrusted: only a terminal the hub
 * opened in that very process is touched, and the ring bounds what is kept.
 *
 * Locks: h->tmu guards the terminal list, every terminal and subscription;
 * it is taken alone (never with h->mu or a kernel's wmu held, and nothing is
 * sent to a kernel under it). Subscribers' wakes run under it (they must not
 * block nor call into the hub, as kh_subscribe's).
 */
#include "kh_int.h"

#include "kr.h"

#include "ed_error.h"
#include "ed_time.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define OPEN_WAIT_MS   5000   /* an open waits this long for the kernel's answer */
#define CLOSE_WAIT_MS  2000   /* a close waits this long for the shell's end */

struct kh_term_sub {
    struct kh_term_sub *next;
    kh_hub   *h;
    kh__term *t;
    uint64_t  pos;              /* the next byte of the output it reads */
    void    (*wake)(void *);
    void     *wake_arg;
};

/* ---- the list (under tmu) --------------------------------------------------------- */

static kh__term *find_locked(kh_hub *h, int64_t user_id, const char *name)
{
    assert(kh__held(&h->tmu));
    for (kh__term *t = h->terms; t; t = t->next)
        if (t->user_id == user_id && strcmp(t->name, name) == 0)
            return t;
    return NULL;
}

static void unref_locked(kh_hub *h, kh__term *t)
{
    assert(kh__held(&h->tmu));
    if (--t->refs > 0)
        return;
    free(t->ring);
    free(t);
}

/* Take t off the list (its subscribers keep it until they go). */
static void unlist_locked(kh_hub *h, kh__term *t)
{
    assert(kh__held(&h->tmu));
    for (kh__term **p = &h->terms; *p; p = &(*p)->next)
        if (*p == t) {
            *p = t->next;
            t->next = NULL;
            t->listed = false;
            unref_locked(h, t);
            return;
        }
}

static void wake_locked(kh_hub *h, kh__term *t)
{
    assert(kh__held(&h->tmu));
    for (kh_term_sub *s = t->subs; s; s = s->next)
        if (s->wake)
            s->wake(s->wake_arg);
    pthread_cond_broadcast(&h->tcv);
}

/* The terminal ended (its shell exited, or its kernel's process): off the
 * list, its subscribers told. */
static void end_locked(kh_hub *h, kh__term *t, int status)
{
    assert(kh__held(&h->tmu));
    if (t->state != KH__TERM_ENDED) {
        t->state = KH__TERM_ENDED;
        t->exit_status = status;
    }
    wake_locked(h, t);
    if (t->listed)
        unlist_locked(h, t);
}

static void to_public(kh_terminal *out, const kh__term *t)
{
    memset(out, 0, sizeof(*out));
    snprintf(out->name, sizeof(out->name), "%s", t->name);
    snprintf(out->kernel_id, sizeof(out->kernel_id), "%s", t->kernel_id);
    out->created_at = t->created_at;
    out->last_activity_at = t->last_activity_at;
}

bool kh__term_name_ok(const char *s)
{
    size_t n = s ? strlen(s) : 0;

    if (n == 0 || n > KH_TERM_NAME_MAX)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= '0' && s[i] <= '9') ||
              s[i] == '-' || s[i] == '_'))
            return false;
    return true;
}

int kh__term_add(kh__term **out, kh_hub *h, int64_t user_id, const char *kernel_id, int64_t job_id,
                 const char *name)
{
    kh__term *t;
    char auto_name[16];
    int n = 0, err = 0;

    *out = NULL;
    if (name != NULL && !kh__term_name_ok(name))
        return ed_error_set(ED_EINVAL, "a terminal name is 1-%d letters, digits, '-' or '_'", KH_TERM_NAME_MAX);
    if ((t = calloc(1, sizeof(*t))) == NULL || (t->ring = malloc(KH_TERM_RING)) == NULL) {
        free(t);
        return ed_error_set(ED_ENOMEM, "terminal");
    }
    kh__lock(&h->tmu);
    for (kh__term *o = h->terms; o; o = o->next)
        n += strcmp(o->kernel_id, kernel_id) == 0;
    if (n >= KR_TERM_MAX) {
        err = ed_error_set(ED_ELIMIT, "a kernel has at most %d terminals; close one first", KR_TERM_MAX);
    } else if (name != NULL) {
        if (find_locked(h, user_id, name))
            err = ed_error_set(ED_EEXISTS, "a terminal named '%s' exists already", name);
    } else {
        /* Jupyter's names: the smallest number not taken (by this user) */
        for (int i = 1; name == NULL; i++) {
            snprintf(auto_name, sizeof(auto_name), "%d", i);
            if (find_locked(h, user_id, auto_name) == NULL)
                name = auto_name;
        }
    }
    if (err < 0) {
        kh__unlock(&h->tmu);
        free(t->ring);
        free(t);
        return err;
    }
    snprintf(t->name, sizeof(t->name), "%s", name);
    snprintf(t->kernel_id, sizeof(t->kernel_id), "%s", kernel_id);
    t->user_id = user_id;
    t->job_id = job_id;
    t->created_at = t->last_activity_at = ed_now_ms();
    t->state = KH__TERM_OPENING;
    t->refs = 2;   /* the list's and the caller's (kh__term_release) */
    t->listed = true;
    t->next = h->terms;
    h->terms = t;
    *out = t;
    kh__unlock(&h->tmu);
    return 0;
}

void kh__term_release(kh_hub *h, kh__term *t)
{
    kh__lock(&h->tmu);
    unref_locked(h, t);
    kh__unlock(&h->tmu);
}

/* ---- what the kernel says ---------------------------------------------------------- */

/* Append `n` bytes of output to t's ring (under tmu). */
static void ring_put_locked(kh__term *t, const char *data, size_t n)
{
    if (n > KH_TERM_RING) {   /* only the end can be kept */
        t->total += n - KH_TERM_RING;
        data += n - KH_TERM_RING;
        n = KH_TERM_RING;
    }
    size_t at = (size_t)(t->total % KH_TERM_RING);
    size_t first = n < KH_TERM_RING - at ? n : KH_TERM_RING - at;
    memcpy(t->ring + at, data, first);
    memcpy(t->ring, data + first, n - first);
    t->total += n;
}

void kh__term_on_frame(kh_hub *h, const char *kernel_id, int64_t job_id, const json_t *msg)
{
    const char *type = kr_msg_type(msg);
    const json_t *c = json_object_get(msg, "content");
    const char *name = json_string_value(json_object_get(c, "name"));
    kh__term *t = NULL;

    if (name == NULL)
        return;
    kh__lock(&h->tmu);
    for (kh__term *o = h->terms; o; o = o->next)
        if (o->job_id == job_id && strcmp(o->kernel_id, kernel_id) == 0 && strcmp(o->name, name) == 0)
            t = o;
    if (t == NULL) {
        kh__unlock(&h->tmu);
        return;   /* not one the hub opened in this process */
    }
    if (strcmp(type, KR_TERM_OUTPUT) == 0) {
        const json_t *d = json_object_get(c, "data");
        if (json_is_string(d) && t->state == KH__TERM_OPEN) {
            ring_put_locked(t, json_string_value(d), json_string_length(d));
            t->last_activity_at = ed_now_ms();
            wake_locked(h, t);
        }
    } else if (strcmp(type, KR_TERM_OPENED) == 0) {
        if (t->state == KH__TERM_OPENING)
            t->state = KH__TERM_OPEN;
        pthread_cond_broadcast(&h->tcv);
    } else if (strcmp(type, KR_TERM_ERROR) == 0) {
        if (t->state == KH__TERM_OPENING) {
            const char *e = json_string_value(json_object_get(c, "error"));
            json_int_t code = json_integer_value(json_object_get(c, "code"));
            t->state = KH__TERM_FAILED;
            t->open_err = code == ED_ELIMIT || code == ED_EEXISTS || code == ED_ENOTFOUND || code == ED_EINVAL
                              ? (int)code : ED_ECONFLICT;
            snprintf(t->open_msg, sizeof(t->open_msg), "%s", e ? e : "the kernel could not open a terminal");
            pthread_cond_broadcast(&h->tcv);
        }
    } else if (strcmp(type, KR_TERM_EXIT) == 0) {
        json_int_t st = json_integer_value(json_object_get(c, "status"));
        end_locked(h, t, st >= -1 && st <= 255 ? (int)st : -1);
    }
    kh__unlock(&h->tmu);
}

void kh__term_process_ended(kh_hub *h, const char *kernel_id, int64_t job_id)
{
    kh__lock(&h->tmu);
    for (kh__term *t = h->terms, *next; t; t = next) {
        next = t->next;
        if (t->job_id == job_id && strcmp(t->kernel_id, kernel_id) == 0)
            end_locked(h, t, -1);
    }
    kh__unlock(&h->tmu);
}

/* ---- the API ------------------------------------------------------------------------ */

static int send_to(kh_hub *h, int64_t user_id, const char *kernel_id, const char *type, json_t *content)
{
    json_t *m = NULL;
    int err;

    if ((err = kr_msg_new(&m, "control", type, "eddy-terminal", NULL, content)) < 0)
        return err;
    err = kh_send(h, user_id, kernel_id, m);
    json_decref(m);
    return err;
}

static void deadline(struct timespec *ts, int ms)
{
    clock_gettime(CLOCK_REALTIME, ts);
    ts->tv_sec += ms / 1000;
    ts->tv_nsec += (long)(ms % 1000) * 1000000L;
    if (ts->tv_nsec >= 1000000000L) {
        ts->tv_sec++;
        ts->tv_nsec -= 1000000000L;
    }
}

int kh_terminal_open(kh_terminal *out, kh_hub *h, int64_t user_id, const char *kernel_id, const char *name,
                     const char *cwd, int rows, int cols)
{
    kh_kernel k;
    kh__term *t;
    struct timespec until;
    int err;

    if (h == NULL || kernel_id == NULL)
        return ed_error_set(ED_ENOTFOUND, "no such kernel");
    if (cwd && strlen(cwd) > 1024)
        return ed_error_set(ED_EINVAL, "cwd is over 1024 bytes");
    if (rows < 0 || rows > 1000 || cols < 0 || cols > 1000)
        return ed_error_set(ED_EINVAL, "rows and cols are 1-1000");
    if ((err = kh_kernel_get(&k, h, user_id, kernel_id)) < 0)
        return err;
    if (strcmp(k.status, "idle") != 0 && strcmp(k.status, "busy") != 0)
        return ed_error_set(ED_ECONFLICT, "kernel %s is %s: a terminal needs a running kernel", k.id, k.status);
    if ((err = kh__term_add(&t, h, user_id, k.id, k.job_id, name)) < 0)
        return err;
    char tname[KH_TERM_NAME_MAX + 1];
    snprintf(tname, sizeof(tname), "%s", t->name);   /* immutable; t is ours until released */
    json_t *c = json_pack("{s:s}", "name", tname);
    if (c && rows > 0 && cols > 0) {
        json_object_set_new(c, "rows", json_integer(rows));
        json_object_set_new(c, "cols", json_integer(cols));
    }
    if (c && cwd && *cwd)
        json_object_set_new(c, "cwd", json_string(cwd));
    err = c ? send_to(h, user_id, k.id, KR_TERM_OPEN, c) : ed_error_set(ED_ENOMEM, "terminal");
    kh__lock(&h->tmu);
    deadline(&until, OPEN_WAIT_MS);
    while (err == 0 && t->state == KH__TERM_OPENING)
        if (kh__wait_until(&h->tcv, &h->tmu, &until) == ETIMEDOUT)
            err = ed_error_set(ED_EBUSY, "kernel %s did not open the terminal within %d s", k.id,
                               OPEN_WAIT_MS / 1000);
    if (err == 0 && t->state == KH__TERM_FAILED)
        err = ed_error_set(t->open_err, "the kernel could not open a terminal: %s", t->open_msg);
    else if (err == 0 && t->state == KH__TERM_ENDED)
        err = ed_error_set(ED_ECONFLICT, "kernel %s ended while opening the terminal", k.id);
    if (err == 0)
        to_public(out, t);
    else if (t->listed)
        unlist_locked(h, t);
    unref_locked(h, t);   /* kh__term_add's */
    kh__unlock(&h->tmu);
    if (err < 0 && err != ED_EBUSY)
        return err;
    if (err == ED_EBUSY) {   /* it may still come up: make sure it does not linger */
        char msg[256];
        snprintf(msg, sizeof(msg), "%s", ed_error_last());
        send_to(h, user_id, k.id, KR_TERM_CLOSE, json_pack("{s:s}", "name", tname));
        return ed_error_set(ED_EBUSY, "%s", msg);
    }
    return 0;
}

int kh_terminal_get(kh_terminal *out, kh_hub *h, int64_t user_id, const char *name)
{
    int err = 0;

    if (h == NULL || name == NULL)
        return ed_error_set(ED_ENOTFOUND, "no such terminal");
    kh__lock(&h->tmu);
    kh__term *t = find_locked(h, user_id, name);
    if (t == NULL || t->state != KH__TERM_OPEN)
        err = ed_error_set(ED_ENOTFOUND, "no terminal '%.40s'", name);
    else
        to_public(out, t);
    kh__unlock(&h->tmu);
    return err;
}

int kh_terminal_each(kh_hub *h, int64_t user_id, const char *kernel_id,
                     int (*fn)(const kh_terminal *t, void *payload), void *payload)
{
    kh_terminal *all = NULL;
    size_t n = 0, cap = 0;
    int rc = 0;

    if (h == NULL)
        return 0;
    kh__lock(&h->tmu);
    for (kh__term *t = h->terms; t; t = t->next) {
        if (t->user_id != user_id || t->state != KH__TERM_OPEN ||
            (kernel_id && strcmp(t->kernel_id, kernel_id) != 0))
            continue;
        if (n == cap) {
            kh_terminal *na = realloc(all, (cap = cap ? 2 * cap : 8) * sizeof(*all));
            if (na == NULL) {
                kh__unlock(&h->tmu);
                free(all);
                return ed_error_set(ED_ENOMEM, "terminals");
            }
            all = na;
        }
        to_public(&all[n++], t);
    }
    kh__unlock(&h->tmu);
    /* oldest first, as Jupyter lists them (the list is newest first) */
    for (size_t i = n; i-- > 0 && rc == 0;)
        rc = fn(&all[i], payload);
    free(all);
    return rc < 0 ? rc : 0;
}

/* The kernel and process of the user's open terminal `name`. */
static int lookup(char kid[KH_ID_LEN], kh_hub *h, int64_t user_id, const char *name, bool touch)
{
    int err = 0;

    if (h == NULL || name == NULL)
        return ed_error_set(ED_ENOTFOUND, "no such terminal");
    kh__lock(&h->tmu);
    kh__term *t = find_locked(h, user_id, name);
    if (t == NULL || t->state != KH__TERM_OPEN) {
        err = ed_error_set(ED_ENOTFOUND, "no terminal '%.40s'", name);
    } else {
        snprintf(kid, KH_ID_LEN, "%s", t->kernel_id);
        if (touch)
            t->last_activity_at = ed_now_ms();
    }
    kh__unlock(&h->tmu);
    return err;
}

int kh_terminal_input(kh_hub *h, int64_t user_id, const char *name, const char *data, size_t len)
{
    char kid[KH_ID_LEN];
    json_t *d;
    int err;

    if (len > KH_TERM_INPUT_MAX)
        return ed_error_set(ED_ETOOBIG, "terminal input of %zu bytes is over %d", len, KH_TERM_INPUT_MAX);
    if ((err = lookup(kid, h, user_id, name, true)) < 0)
        return err;
    if ((d = json_stringn(data, len)) == NULL)
        return ed_error_set(ED_EINVAL, "terminal input must be UTF-8 text");
    return send_to(h, user_id, kid, KR_TERM_INPUT, json_pack("{s:s, s:o}", "name", name, "data", d));
}

int kh_terminal_resize(kh_hub *h, int64_t user_id, const char *name, int rows, int cols)
{
    char kid[KH_ID_LEN];
    int err;

    if (rows < 1 || rows > 1000 || cols < 1 || cols > 1000)
        return ed_error_set(ED_EINVAL, "rows and cols are 1-1000");
    if ((err = lookup(kid, h, user_id, name, false)) < 0)
        return err;
    return send_to(h, user_id, kid, KR_TERM_RESIZE, json_pack("{s:s, s:i, s:i}", "name", name, "rows", rows,
                                                              "cols", cols));
}

int kh_terminal_close(kh_hub *h, int64_t user_id, const char *name)
{
    char kid[KH_ID_LEN];
    struct timespec until;
    int err;

    if ((err = lookup(kid, h, user_id, name, false)) < 0)
        return err;
    err = send_to(h, user_id, kid, KR_TERM_CLOSE, json_pack("{s:s}", "name", name));
    kh__lock(&h->tmu);
    kh__term *t = find_locked(h, user_id, name);
    if (t && err == 0) {   /* wait for the shell's end: a list right after shows it gone */
        t->refs++;
        deadline(&until, CLOSE_WAIT_MS);
        while (t->listed && kh__wait_until(&h->tcv, &h->tmu, &until) != ETIMEDOUT)
            ;
        unref_locked(h, t);
        t = find_locked(h, user_id, name);
    }
    if (t)   /* the kernel is gone or did not answer: forget it anyway */
        end_locked(h, t, -1);
    kh__unlock(&h->tmu);
    return 0;
}

/* ---- subscriptions ------------------------------------------------------------------ */

int kh_terminal_subscribe(kh_term_sub **out, kh_hub *h, int64_t user_id, const char *name,
                          void (*wake)(void *wake_arg), void *wake_arg)
{
    kh_term_sub *s;
    int n = 0, err = 0;

    *out = NULL;
    if (h == NULL || name == NULL)
        return ed_error_set(ED_ENOTFOUND, "no such terminal");
    if ((s = calloc(1, sizeof(*s))) == NULL)
        return ed_error_set(ED_ENOMEM, "terminal subscription");
    kh__lock(&h->tmu);
    kh__term *t = find_locked(h, user_id, name);
    if (t)
        for (kh_term_sub *o = t->subs; o; o = o->next)
            n++;
    if (t == NULL || t->state != KH__TERM_OPEN) {
        err = ed_error_set(ED_ENOTFOUND, "no terminal '%.40s'", name);
    } else if (n >= KH_TERM_SUBS_MAX) {
        err = ed_error_set(ED_ELIMIT, "terminal '%s' has %d connections already", name, KH_TERM_SUBS_MAX);
    } else {
        /* replay the last KH_TERM_REPLAY bytes, from a character's start */
        s->pos = t->total > KH_TERM_REPLAY ? t->total - KH_TERM_REPLAY : 0;
        if (s->pos > 0)
            while (s->pos < t->total && ((unsigned char)t->ring[s->pos % KH_TERM_RING] & 0xC0) == 0x80)
                s->pos++;
        s->t = t;
        s->h = h;
        s->wake = wake;
        s->wake_arg = wake_arg;
        s->next = t->subs;
        t->subs = s;
        t->refs++;
    }
    kh__unlock(&h->tmu);
    if (err < 0) {
        free(s);
        return err;
    }
    *out = s;
    return 0;
}

int kh_terminal_sub_next(char **out, size_t *out_len, kh_term_sub *s)
{
    kh_hub *h = s->h;
    int rc = 0;

    *out = NULL;
    *out_len = 0;
    kh__lock(&h->tmu);
    kh__term *t = s->t;
    if (t->total > KH_TERM_RING && s->pos < t->total - KH_TERM_RING) {
        /* the ring moved past what it had not read: a slow reader is let go
         * (its page reconnects and gets the screen from the ring) */
        rc = ed_error_set(ED_ELIMIT, "fell behind terminal '%s' by more than %d bytes", t->name, KH_TERM_RING);
    } else if (s->pos < t->total) {
        size_t n = (size_t)(t->total - s->pos);
        if (n > KH_TERM_CHUNK) {   /* one message at a time, cut between characters */
            n = KH_TERM_CHUNK;
            while (n > 1 && ((unsigned char)t->ring[(s->pos + n) % KH_TERM_RING] & 0xC0) == 0x80)
                n--;
        }
        char *b = malloc(n + 1);
        if (b == NULL) {
            rc = ed_error_set(ED_ENOMEM, "terminal output");
        } else {
            size_t at = (size_t)(s->pos % KH_TERM_RING);
            size_t first = n < KH_TERM_RING - at ? n : KH_TERM_RING - at;
            memcpy(b, t->ring + at, first);
            memcpy(b + first, t->ring, n - first);
            b[n] = '\0';
            s->pos += n;
            *out = b;
            *out_len = n;
            rc = 1;
        }
    } else if (t->state == KH__TERM_ENDED) {
        rc = ed_error_set(ED_ENOTFOUND, "terminal '%s' ended", t->name);
    }
    kh__unlock(&h->tmu);
    return rc;
}

void kh_terminal_unsubscribe(kh_term_sub *s)
{
    kh_hub *h;

    if (s == NULL)
        return;
    h = s->h;
    kh__lock(&h->tmu);
    for (kh_term_sub **p = &s->t->subs; *p; p = &(*p)->next)
        if (*p == s) {
            *p = s->next;
            break;
        }
    unref_locked(h, s->t);
    kh__unlock(&h->tmu);
    free(s);
}
