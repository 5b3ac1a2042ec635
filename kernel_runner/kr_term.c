/*
 * kr_term.c - terminals inside eddy-kernel: a login shell on a pty, in the
 * kernel's own sandbox (same uid, limits and /home/aistudio/work), driven by
 * eddy_terminal_* messages on the kernel's socket (README.md "Terminals").
 *
 * No Python here: the serve reader thread hands messages over
 * (kr__terms_handle) and a relay thread of our own moves bytes between the
 * pty masters and the socket, so a terminal works while a cell runs.
 *
 * Threads and locks: `mu` guards the table. Opening (fork + exec) and input
 * happen on the caller's thread (the serve reader) under mu; everything
 * that ends a terminal (EOF, the shell's exit, a close request) is done by
 * the relay thread, which alone closes masters and reaps shells, so a
 * master is never closed while another thread uses it. Sends happen
 * outside mu (they may wait for the socket's rate limit).
 *
 * Bounds: KR_TERM_MAX terminals; output frames of at most KR_TERM_CHUNK
 * bytes of text (valid UTF-8: invalid bytes become U+FFFD, a character cut
 * by a read waits for its end); pending input at most KR_TERM_INPUT_MAX
 * bytes (more is dropped, as a full tty would); output at most
 * KR_TERM_RATE bytes a second for all terminals together: past it the
 * relay stops reading, the pty fills and the writer blocks, as on a slow
 * serial line.
 */
#include "kr_term.h"

#include "ed_error.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

typedef struct term {
    bool    used;
    bool    closing;                     /* asked to close: the relay ends it */
    char    name[KR_TERM_NAME_MAX + 1];
    int     master;                      /* -1 once closed */
    pid_t   pid;                         /* the shell (session leader, its session's id) */
    bool    reaped;                      /* the shell exited and was waited for */
    int     status;                      /* then: its exit code, or 128 + signal */
    char   *in;                          /* input the pty did not take yet */
    size_t  in_len;
    unsigned char tail[4];               /* a UTF-8 character cut by a read */
    size_t  tail_len;
} term;

struct kr__terms {
    pthread_mutex_t mu;
    term            t[KR_TERM_MAX];
    int             wake[2];             /* self-pipe: the relay re-reads the table */
    pthread_t       thread;
    bool            running, stop;
    char            cwd[PATH_MAX];       /* where shells start */
    kr__term_send_fn send;
    void           *payload;
    double          tokens;              /* output bytes that may leave now */
    int64_t         tokens_ns;
};

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void wake(kr__terms *ts)
{
    char c = 1;
    if (write(ts->wake[1], &c, 1) < 0) {
        /* the pipe is full: the relay wakes anyway */
    }
}

/* ---- UTF-8 ----------------------------------------------------------------------- */

/* The length of the valid UTF-8 character at p (n bytes available): 1-4;
 * 0 when p holds the valid start of a character cut short; -1 when invalid. */
static int utf8_char(const unsigned char *p, size_t n)
{
    unsigned c = p[0];
    int len;
    unsigned lo = 0x80, hi = 0xBF;

    if (c < 0x80)
        return 1;
    if (c >= 0xC2 && c <= 0xDF)
        len = 2;
    else if (c >= 0xE0 && c <= 0xEF) {
        len = 3;
        if (c == 0xE0)
            lo = 0xA0;
        else if (c == 0xED)
            hi = 0x9F;   /* no surrogates */
    } else if (c >= 0xF0 && c <= 0xF4) {
        len = 4;
        if (c == 0xF0)
            lo = 0x90;
        else if (c == 0xF4)
            hi = 0x8F;
    } else
        return -1;
    for (int i = 1; i < len; i++) {
        if ((size_t)i >= n)
            return 0;
        unsigned b = p[i];
        if (i == 1 ? (b < lo || b > hi) : (b & 0xC0) != 0x80)
            return -1;
    }
    return len;
}

size_t kr__utf8_clean(char *out, const unsigned char *in, size_t n, unsigned char *tail, size_t *tail_len)
{
    size_t o = 0, i = 0;

    *tail_len = 0;
    while (i < n) {
        int l = utf8_char(in + i, n - i);
        if (l == 0) {   /* cut: keep for the next read */
            memcpy(tail, in + i, n - i);
            *tail_len = n - i;
            break;
        }
        if (l < 0) {
            memcpy(out + o, "\xEF\xBF\xBD", 3);   /* U+FFFD */
            o += 3;
            i++;
            continue;
        }
        memcpy(out + o, in + i, (size_t)l);
        o += (size_t)l;
        i += (size_t)l;
    }
    return o;
}

/* ---- processes ------------------------------------------------------------------- */

/* Signal every process of session `sid` (the shell's jobs live in their own
 * process groups, but in its session). Reads our PID namespace's /proc. */
static void kill_session(pid_t sid, int sig)
{
    DIR *d = opendir("/proc");
    struct dirent *e;

    kill(-sid, sig);   /* the shell's own group, even without /proc */
    if (d == NULL)
        return;
    while ((e = readdir(d)) != NULL) {
        char path[64], buf[512], *p;
        long pid = strtol(e->d_name, &p, 10);
        int fd;
        ssize_t r;

        if (*p != '\0' || pid <= 0)
            continue;
        snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
        if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
            continue;
        r = read(fd, buf, sizeof(buf) - 1);
        close(fd);
        if (r <= 0)
            continue;
        buf[r] = '\0';
        /* "pid (comm) state ppid pgrp session ..." - comm may hold anything */
        if ((p = strrchr(buf, ')')) == NULL)
            continue;
        char state;
        long ppid, pgrp, session;
        if (sscanf(p + 1, " %c %ld %ld %ld", &state, &ppid, &pgrp, &session) == 4 && session == sid)
            kill((pid_t)pid, sig);
    }
    closedir(d);
}

/* Wait for `pid` for up to `ms`; its status into *st. Whether it was reaped. */
static bool reap_within(pid_t pid, int *st, int ms)
{
    for (int waited = 0;; waited += 10) {
        pid_t r = waitpid(pid, st, WNOHANG);
        if (r == pid || (r < 0 && errno == ECHILD))
            return true;
        if (waited >= ms)
            return false;
        struct timespec d = {0, 10 * 1000 * 1000};
        nanosleep(&d, NULL);
    }
}

/* The exit status as a shell shows it: the code, or 128 + the signal. */
static int shell_status(int st)
{
    if (WIFEXITED(st))
        return WEXITSTATUS(st);
    if (WIFSIGNALED(st))
        return 128 + WTERMSIG(st);
    return -1;
}

/* Start a login shell on a new pty (under mu), with posix_spawn (vfork-like:
 * cheap however much memory the kernel holds, and safe with its threads):
 * a new session (POSIX_SPAWN_SETSID) that opens the pty's other end first,
 * so it becomes the controlling terminal; default signal dispositions and
 * an empty mask (the serve threads block or ignore some). */
static int spawn(term *t, const kr__terms *ts, int cwd_fd, int rows, int cols)
{
    static const char *const shells[][2] = {{"/bin/bash", "SHELL=/bin/bash"}, {"/bin/sh", "SHELL=/bin/sh"}};
    int master = -1, err = 0, rc = ENOENT;
    char pts[64];
    const char *shell = shells[0][0];
    char *argv[3] = {NULL, "-l", NULL};
    size_t nenv = 0, e = 0;
    char **envp = NULL;
    pid_t pid;
    struct winsize ws = {.ws_row = (unsigned short)rows, .ws_col = (unsigned short)cols};
    posix_spawnattr_t at;
    posix_spawn_file_actions_t fa;
    sigset_t all, none;

    if ((master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC)) < 0)
        return ed_error_set(ED_EIO, "no pseudo-terminal: /dev/ptmx: %s", strerror(errno));
    if (grantpt(master) < 0 || unlockpt(master) < 0 || ptsname_r(master, pts, sizeof(pts)) != 0) {
        err = ed_error_set(ED_EIO, "pseudo-terminal: %s", strerror(errno));
        close(master);
        return err;
    }
    ioctl(master, TIOCSWINSZ, &ws);
    for (char **v = environ; v && *v; v++)
        nenv++;
    if ((envp = calloc(nenv + 5, sizeof(*envp))) == NULL) {
        close(master);
        return ed_error_set(ED_ENOMEM, "terminal environment");
    }
    for (char **v = environ; v && *v; v++)
        if (strncmp(*v, "TERM=", 5) != 0 && strncmp(*v, "COLUMNS=", 8) != 0 && strncmp(*v, "LINES=", 6) != 0 &&
            strncmp(*v, "SHELL=", 6) != 0 && strncmp(*v, "MPLBACKEND=", 11) != 0 && strncmp(*v, "PS1=", 4) != 0)
            envp[e++] = *v;
    envp[e++] = "TERM=xterm-256color";
    envp[e++] = "PS1=\\u@\\h:\\w\\$ ";   /* aistudio@eddy-sandbox:~/work$ (the sandbox has no bash.bashrc) */
    envp[e + 1] = NULL;   /* envp[e]: SHELL=, per shell tried */

    sigfillset(&all);
    sigemptyset(&none);
    posix_spawnattr_init(&at);
    posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
    posix_spawnattr_setsigdefault(&at, &all);
    posix_spawnattr_setsigmask(&at, &none);
    posix_spawn_file_actions_init(&fa);
    /* without O_NOCTTY: the session leader's first tty becomes its terminal */
    posix_spawn_file_actions_addopen(&fa, 0, pts, O_RDWR, 0);
    posix_spawn_file_actions_adddup2(&fa, 0, 1);
    posix_spawn_file_actions_adddup2(&fa, 0, 2);
    /* the folder the caller opened (before closefrom closes it), else the start folder */
    if (cwd_fd >= 0)
        posix_spawn_file_actions_addfchdir_np(&fa, cwd_fd);
    else
        posix_spawn_file_actions_addchdir_np(&fa, ts->cwd);
    posix_spawn_file_actions_addclosefrom_np(&fa, 3);   /* what user code left open */
    /* bash where the sandbox has it, else sh: tried, not checked first */
    for (size_t i = 0; i < sizeof(shells) / sizeof(shells[0]) && rc == ENOENT; i++) {
        shell = shells[i][0];
        argv[0] = (char *)shell;
        envp[e] = (char *)shells[i][1];
        rc = posix_spawn(&pid, shell, &fa, &at, argv, envp);
    }
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&at);
    free(envp);
    if (rc != 0) {
        close(master);
        return ed_error_set(ED_EIO, "starting %s: %s", shell, strerror(rc));
    }
    fcntl(master, F_SETFL, fcntl(master, F_GETFL) | O_NONBLOCK);
    t->master = master;
    t->pid = pid;
    return 0;
}

/* ---- the relay ------------------------------------------------------------------- */

/* Send a terminal's last words and forget it. Relay thread, mu not held;
 * `t` is still marked used, so no open takes its place meanwhile. */
static void finish(kr__terms *ts, int idx)
{
    term *t = &ts->t[idx];
    int st = 0, status = -1;
    char name[sizeof(t->name)];

    if (t->pid > 0) {
        kill_session(t->pid, SIGHUP);
        kill_session(t->pid, SIGCONT);   /* a stopped job must see its SIGHUP */
        if (t->reaped) {
            status = t->status;
        } else {
            if (!reap_within(t->pid, &st, 500)) {
                kill_session(t->pid, SIGKILL);
                while (waitpid(t->pid, &st, 0) < 0 && errno == EINTR)
                    ;
            }
            status = shell_status(st);
        }
        kill_session(t->pid, SIGKILL);   /* what ignored SIGHUP */
    }
    pthread_mutex_lock(&ts->mu);
    if (t->master >= 0)
        close(t->master);
    snprintf(name, sizeof(name), "%s", t->name);
    free(t->in);
    memset(t, 0, sizeof(*t));
    t->master = -1;
    pthread_mutex_unlock(&ts->mu);
    ts->send(ts->payload, KR_TERM_EXIT, json_pack("{s:s, s:i}", "name", name, "status", status));
}

/* Write what waits for the pty (under mu). */
static void flush_input(term *t)
{
    while (t->in_len > 0) {
        ssize_t w = write(t->master, t->in, t->in_len);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return;   /* full (EAGAIN) or gone: the relay sees the end */
        memmove(t->in, t->in + w, t->in_len - (size_t)w);
        t->in_len -= (size_t)w;
    }
}

static void *relay_main(void *arg)
{
    kr__terms *ts = arg;
    unsigned char raw[KR_TERM_CHUNK + 4];
    char text[3 * (KR_TERM_CHUNK + 4)];

    for (;;) {
        struct pollfd pfd[KR_TERM_MAX + 1];
        int idx[KR_TERM_MAX + 1], n = 1, timeout = -1;
        bool throttled;

        /* output budget: KR_TERM_RATE a second, one second's burst */
        int64_t now = now_ns();
        ts->tokens += (double)(now - ts->tokens_ns) * KR_TERM_RATE / 1e9;
        if (ts->tokens > KR_TERM_RATE)
            ts->tokens = KR_TERM_RATE;
        ts->tokens_ns = now;
        throttled = ts->tokens <= 0;

        pthread_mutex_lock(&ts->mu);
        if (ts->stop) {
            pthread_mutex_unlock(&ts->mu);
            break;
        }
        pfd[0] = (struct pollfd){ts->wake[0], POLLIN, 0};
        idx[0] = -1;
        for (int i = 0; i < KR_TERM_MAX; i++) {
            term *t = &ts->t[i];
            if (!t->used)
                continue;
            if (t->closing || t->master < 0) {
                timeout = 0;   /* end it now */
                continue;
            }
            pfd[n] = (struct pollfd){t->master, (short)((throttled ? 0 : POLLIN) | (t->in_len ? POLLOUT : 0)), 0};
            idx[n++] = i;
            if (timeout < 0 || timeout > 500)
                timeout = 500;   /* look for shells that exited with the pty still held */
        }
        pthread_mutex_unlock(&ts->mu);
        if (throttled && (timeout < 0 || timeout > 10))
            timeout = 10;

        if (poll(pfd, (nfds_t)n, timeout) < 0 && errno != EINTR)
            break;
        if (pfd[0].revents & POLLIN) {
            char drainbuf[64];
            while (read(ts->wake[0], drainbuf, sizeof(drainbuf)) > 0)
                ;
        }
        for (int j = 1; j < n; j++) {
            term *t = &ts->t[idx[j]];
            size_t got = 0, len = 0;
            bool end = false;
            char name[sizeof(t->name)];

            pthread_mutex_lock(&ts->mu);
            if (!t->used || t->master != pfd[j].fd || t->closing) {
                pthread_mutex_unlock(&ts->mu);
                continue;
            }
            if (pfd[j].revents & POLLOUT)
                flush_input(t);
            if (pfd[j].revents & (POLLIN | POLLHUP | POLLERR)) {
                memcpy(raw, t->tail, t->tail_len);
                got = t->tail_len;
                while (got < KR_TERM_CHUNK) {
                    ssize_t r = read(t->master, raw + got, KR_TERM_CHUNK - got);
                    if (r < 0 && errno == EINTR)
                        continue;
                    if (r < 0 && errno == EAGAIN)
                        break;
                    if (r <= 0) {   /* EIO: every holder of the pty's other end is gone */
                        end = true;
                        break;
                    }
                    got += (size_t)r;
                }
                len = kr__utf8_clean(text, raw, got, t->tail, &t->tail_len);
            }
            if (!end && t->pid > 0 && !t->reaped) {
                int st;
                if (waitpid(t->pid, &st, WNOHANG) == t->pid) {
                    /* the shell exited; what it left running goes with it */
                    end = true;
                    t->reaped = true;
                    t->status = shell_status(st);
                }
            }
            if (end)
                t->closing = true;
            snprintf(name, sizeof(name), "%s", t->name);
            pthread_mutex_unlock(&ts->mu);
            if (len > 0) {
                json_t *s = json_stringn(text, len);
                ts->tokens -= (double)len;
                if (s)
                    ts->send(ts->payload, KR_TERM_OUTPUT, json_pack("{s:s, s:o}", "name", name, "data", s));
            }
        }
        /* end what is closing: the relay alone closes masters and reaps */
        for (int i = 0; i < KR_TERM_MAX; i++) {
            term *t = &ts->t[i];
            bool closing;
            pthread_mutex_lock(&ts->mu);
            closing = t->used && (t->closing || t->master < 0);
            pthread_mutex_unlock(&ts->mu);
            if (!closing)
                continue;
            finish(ts, i);

        }
    }
    return NULL;
}

/* ---- the API --------------------------------------------------------------------- */

int kr__terms_new(kr__terms **out, const char *cwd, kr__term_send_fn send, void *payload)
{
    kr__terms *ts;

    *out = NULL;
    if ((ts = calloc(1, sizeof(*ts))) == NULL)
        return ed_error_set(ED_ENOMEM, "terminals");
    if (pipe2(ts->wake, O_CLOEXEC | O_NONBLOCK) < 0) {
        free(ts);
        return ed_error_set(ED_EIO, "terminals: pipe: %s", strerror(errno));
    }
    pthread_mutex_init(&ts->mu, NULL);
    for (int i = 0; i < KR_TERM_MAX; i++)
        ts->t[i].master = -1;
    if (cwd != NULL)
        snprintf(ts->cwd, sizeof(ts->cwd), "%s", cwd);
    else if (getcwd(ts->cwd, sizeof(ts->cwd)) == NULL)
        snprintf(ts->cwd, sizeof(ts->cwd), "/");
    ts->send = send;
    ts->payload = payload;
    ts->tokens = KR_TERM_RATE;
    ts->tokens_ns = now_ns();
    *out = ts;
    return 0;
}

static term *find(kr__terms *ts, const char *name)
{
    for (int i = 0; i < KR_TERM_MAX; i++)
        if (ts->t[i].used && !ts->t[i].closing && strcmp(ts->t[i].name, name) == 0)
            return &ts->t[i];
    return NULL;
}

static bool name_ok(const char *s)
{
    size_t n = s ? strlen(s) : 0;
    if (n == 0 || n > KR_TERM_NAME_MAX)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= '0' && s[i] <= '9') ||
              s[i] == '-' || s[i] == '_'))
            return false;
    return true;
}

/* rows, cols from content, clamped to what a tty holds. */
static void size_of(const json_t *c, int *rows, int *cols)
{
    json_int_t r = json_integer_value(json_object_get(c, "rows"));
    json_int_t k = json_integer_value(json_object_get(c, "cols"));
    *rows = r >= 1 && r <= 1000 ? (int)r : 24;
    *cols = k >= 1 && k <= 1000 ? (int)k : 80;
}

static int do_open(kr__terms *ts, const char *name, const json_t *c)
{
    const char *cwd = json_string_value(json_object_get(c, "cwd"));
    char dir[PATH_MAX + 8];
    int rows, cols, err, slot = -1, cwd_fd = -1;

    size_of(c, &rows, &cols);
    if (cwd && *cwd) {   /* relative to where shells start; the sandbox bounds it */
        if (strlen(ts->cwd) + strlen(cwd) + 2 > PATH_MAX)
            return ed_error_set(ED_EINVAL, "cwd is too long");
        size_t bl = strlen(ts->cwd);
        memcpy(dir, ts->cwd, bl);
        dir[bl] = '/';
        memcpy(dir + bl + 1, cwd[0] == '/' ? cwd + 1 : cwd, strlen(cwd) + 1 - (cwd[0] == '/'));
        /* opened once and handed to the shell's chdir: no check-then-use */
        if ((cwd_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
            return ed_error_set(ED_ENOTFOUND, "cwd '%s' is not a folder", cwd);
    }
    pthread_mutex_lock(&ts->mu);
    if (find(ts, name)) {
        pthread_mutex_unlock(&ts->mu);
        if (cwd_fd >= 0)
            close(cwd_fd);
        return ed_error_set(ED_EEXISTS, "terminal '%s' is open already", name);
    }
    for (int i = 0; i < KR_TERM_MAX && slot < 0; i++)
        if (!ts->t[i].used)
            slot = i;
    if (slot < 0) {
        pthread_mutex_unlock(&ts->mu);
        if (cwd_fd >= 0)
            close(cwd_fd);
        return ed_error_set(ED_ELIMIT, "a kernel has at most %d terminals", KR_TERM_MAX);
    }
    term *t = &ts->t[slot];
    err = spawn(t, ts, cwd_fd, rows, cols);
    if (cwd_fd >= 0)
        close(cwd_fd);
    if (err == 0) {
        t->used = true;
        snprintf(t->name, sizeof(t->name), "%s", name);
    }
    if (err == 0 && !ts->running) {
        sigset_t all, old;
        sigfillset(&all);
        pthread_sigmask(SIG_BLOCK, &all, &old);   /* signals stay the main thread's */
        if (pthread_create(&ts->thread, NULL, relay_main, ts) == 0)
            ts->running = true;
        else
            err = ed_error_set(ED_EIO, "terminals: cannot start the relay thread");
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        if (err < 0)
            t->closing = true;   /* nobody relays: ended by kr__terms_free */
    }
    pthread_mutex_unlock(&ts->mu);
    wake(ts);
    return err;
}

static int do_input(kr__terms *ts, const char *name, const json_t *c)
{
    const json_t *d = json_object_get(c, "data");
    size_t n = json_string_length(d);
    int err = 0;

    if (!json_is_string(d))
        return ed_error_set(ED_EINVAL, "terminal input needs a data string");
    pthread_mutex_lock(&ts->mu);
    term *t = find(ts, name);
    if (t == NULL) {
        err = ed_error_set(ED_ENOTFOUND, "no terminal '%s'", name);
    } else if (t->in_len + n > KR_TERM_INPUT_MAX) {
        err = ed_error_set(ED_ELIMIT, "terminal '%s' is not reading its input", name);
    } else {
        if (t->in == NULL && (t->in = malloc(KR_TERM_INPUT_MAX)) == NULL) {
            err = ed_error_set(ED_ENOMEM, "terminal input");
        } else {
            memcpy(t->in + t->in_len, json_string_value(d), n);
            t->in_len += n;
            flush_input(t);
        }
    }
    bool more = t && t->in_len > 0;
    pthread_mutex_unlock(&ts->mu);
    if (more)
        wake(ts);   /* the relay writes the rest when the pty takes it */
    return err;
}

static int do_resize(kr__terms *ts, const char *name, const json_t *c)
{
    int rows, cols, err = 0;

    size_of(c, &rows, &cols);
    pthread_mutex_lock(&ts->mu);
    term *t = find(ts, name);
    struct winsize ws = {.ws_row = (unsigned short)rows, .ws_col = (unsigned short)cols};
    if (t == NULL)
        err = ed_error_set(ED_ENOTFOUND, "no terminal '%s'", name);
    else if (ioctl(t->master, TIOCSWINSZ, &ws) < 0)   /* the kernel sends SIGWINCH */
        err = ed_error_set(ED_EIO, "resize: %s", strerror(errno));
    pthread_mutex_unlock(&ts->mu);
    return err;
}

static int do_close(kr__terms *ts, const char *name)
{
    int err = 0;

    pthread_mutex_lock(&ts->mu);
    term *t = find(ts, name);
    if (t == NULL)
        err = ed_error_set(ED_ENOTFOUND, "no terminal '%s'", name);
    else
        t->closing = true;   /* the relay ends it and sends its exit */
    pthread_mutex_unlock(&ts->mu);
    wake(ts);
    return err;
}

int kr__terms_handle(kr__terms *ts, const char *type, const json_t *content)
{
    const char *name = json_string_value(json_object_get(content, "name"));
    int err;

    if (!name_ok(name))
        err = ed_error_set(ED_EINVAL, "a terminal name is 1-%d letters, digits, '-' or '_'", KR_TERM_NAME_MAX);
    else if (strcmp(type, KR_TERM_OPEN) == 0)
        err = do_open(ts, name, content);
    else if (strcmp(type, KR_TERM_INPUT) == 0)
        err = do_input(ts, name, content);
    else if (strcmp(type, KR_TERM_RESIZE) == 0)
        err = do_resize(ts, name, content);
    else if (strcmp(type, KR_TERM_CLOSE) == 0)
        err = do_close(ts, name);
    else
        err = ed_error_set(ED_EINVAL, "unknown terminal message %s", type);
    if (strcmp(type, KR_TERM_OPEN) == 0) {
        /* the opener waits for one answer either way */
        if (err == 0)
            ts->send(ts->payload, KR_TERM_OPENED, json_pack("{s:s}", "name", name));
        else
            ts->send(ts->payload, KR_TERM_ERROR,
                     json_pack("{s:s?, s:s, s:i}", "name", name_ok(name) ? name : NULL, "error", ed_error_last(),
                               "code", err));
    }
    return err;
}

void kr__terms_free(kr__terms *ts)
{
    if (ts == NULL)
        return;
    pthread_mutex_lock(&ts->mu);
    ts->stop = true;
    pthread_mutex_unlock(&ts->mu);
    wake(ts);
    if (ts->running)
        pthread_join(ts->thread, NULL);
    /* every shell and what it started goes: SIGHUP, a moment, SIGKILL */
    for (int i = 0; i < KR_TERM_MAX; i++) {
        term *t = &ts->t[i];
        if (!t->used)
            continue;
        pid_t sid = t->pid;
        int st;
        if (sid > 0) {
            kill_session(sid, SIGHUP);
            kill_session(sid, SIGCONT);
            if (!t->reaped && !reap_within(sid, &st, 200)) {
                kill_session(sid, SIGKILL);
                while (waitpid(sid, &st, 0) < 0 && errno == EINTR)
                    ;
            }
            kill_session(sid, SIGKILL);   /* what ignored SIGHUP */
        }
        if (t->master >= 0)
            close(t->master);
        free(t->in);
    }
    close(ts->wake[0]);
    close(ts->wake[1]);
    pthread_mutex_destroy(&ts->mu);
    free(ts);
}

int kr__terms_count(kr__terms *ts)
{
    int n = 0;
    pthread_mutex_lock(&ts->mu);
    for (int i = 0; i < KR_TERM_MAX; i++)
        n += ts->t[i].used && !ts->t[i].closing;
    pthread_mutex_unlock(&ts->mu);
    return n;
}
