/* kt_util.c - see kt_util.h. */
#include "kt_util.h"

#include "kr.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef KERNEL_BIN
#define KERNEL_BIN "eddy-kernel"
#endif

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void append(char **buf, size_t *len, const char *p, size_t n)
{
    *buf = realloc(*buf, *len + n + 1);
    ck_assert_ptr_nonnull(*buf);
    memcpy(*buf + *len, p, n);
    *len += n;
    (*buf)[*len] = '\0';
}

static int decode_status(int st)
{
    if (WIFEXITED(st))
        return WEXITSTATUS(st);
    return 128 + WTERMSIG(st);
}

void kt_run(kt_proc *p, const char *const *argv, const char *cwd, const char *const *env,
            double timeout_s)
{
    int o[2], e[2], st;
    size_t olen = 0, elen = 0;
    double deadline = now_s() + timeout_s;

    memset(p, 0, sizeof(*p));
    ck_assert_int_eq(pipe2(o, O_CLOEXEC), 0);
    ck_assert_int_eq(pipe2(e, O_CLOEXEC), 0);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        dup2(o[1], 1);
        dup2(e[1], 2);
        int devnull = open("/dev/null", O_RDONLY);
        dup2(devnull, 0);
        if (cwd && chdir(cwd) < 0)
            _exit(126);
        for (; env && *env; env++)
            putenv((char *)*env);
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    close(o[1]);
    close(e[1]);
    append(&p->out, &olen, "", 0);
    append(&p->err, &elen, "", 0);
    struct pollfd pf[2] = {{.fd = o[0], .events = POLLIN}, {.fd = e[0], .events = POLLIN}};
    int open_fds = 2;
    while (open_fds > 0) {
        int left = (int)((deadline - now_s()) * 1000);
        if (left <= 0) {
            kill(pid, SIGKILL);
            break;
        }
        if (poll(pf, 2, left) < 0 && errno != EINTR)
            break;
        for (int i = 0; i < 2; i++) {
            if (pf[i].fd < 0 || !(pf[i].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            char buf[8192];
            ssize_t n = read(pf[i].fd, buf, sizeof(buf));
            if (n <= 0) {
                close(pf[i].fd);
                pf[i].fd = -1;
                open_fds--;
            } else if (i == 0) {
                append(&p->out, &olen, buf, (size_t)n);
            } else {
                append(&p->err, &elen, buf, (size_t)n);
            }
        }
    }
    for (int i = 0; i < 2; i++)
        if (pf[i].fd >= 0)
            close(pf[i].fd);
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    p->status = decode_status(st);
}

void kt_proc_free(kt_proc *p)
{
    free(p->out);
    free(p->err);
    memset(p, 0, sizeof(*p));
}

char *kt_tmpdir(void)
{
    char tmpl[] = "/tmp/eddy-kt-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(tmpl));
    return strdup(tmpl);
}

static int rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    return remove(path);
}

void kt_rmrf(const char *dir)
{
    if (dir)
        nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

void kt_write(const char *dir, const char *name, const char *text)
{
    char path[1024];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    ck_assert_msg(f != NULL, "%s: %s", path, strerror(errno));
    fputs(text, f);
    ck_assert_int_eq(fclose(f), 0);
}

char *kt_read(const char *dir, const char *name)
{
    char path[1024];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return NULL;
    char *buf = NULL;
    size_t len = 0, n;
    char chunk[8192];
    append(&buf, &len, "", 0);
    while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
        append(&buf, &len, chunk, n);
    fclose(f);
    return buf;
}

char *kt_notebook(const char *const *cells)
{
    json_t *arr = json_array();
    int i = 0;
    for (; *cells; cells++, i++) {
        char id[16];
        snprintf(id, sizeof(id), "cell%d", i);
        if (strncmp(*cells, "#md ", 4) == 0)
            json_array_append_new(arr, json_pack("{s:s, s:s, s:{}, s:s}", "id", id, "cell_type",
                                                 "markdown", "metadata", "source", *cells + 4));
        else
            json_array_append_new(arr, json_pack("{s:s, s:s, s:{}, s:s, s:[], s:n}", "id", id,
                                                 "cell_type", "code", "metadata", "source",
                                                 *cells, "outputs", "execution_count"));
    }
    json_t *nb = json_pack("{s:i, s:i, s:{s:{s:s, s:s, s:s}}, s:o}", "nbformat", 4,
                           "nbformat_minor", 5, "metadata", "kernelspec", "name", "python3",
                           "display_name", "Python 3", "language", "python", "cells", arr);
    char *s = json_dumps(nb, JSON_INDENT(1));
    json_decref(nb);
    return s;
}

/* ---- serve ---- */

void kt_kernel_start(kt_kernel *k)
{
    int sv[2];
    char fdarg[16];

    signal(SIGPIPE, SIG_IGN);
    ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
    k->pid = fork();
    ck_assert_int_ge(k->pid, 0);
    if (k->pid == 0) {
        int fd = dup(sv[1]);   /* without CLOEXEC: the kernel inherits it */
        snprintf(fdarg, sizeof(fdarg), "%d", fd);
        execl(KERNEL_BIN, KERNEL_BIN, "serve", "--fd", fdarg, (char *)NULL);
        _exit(127);
    }
    close(sv[1]);
    k->fd = sv[0];
    json_t *m = kt_recv(k, 60);
    ck_assert_str_eq(kr_msg_type(m), "status");
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(m, "content"),
                                                       "execution_state")), "starting");
    json_decref(m);
}

char *kt_send(kt_kernel *k, const char *channel, const char *type, json_t *content)
{
    json_t *m;
    ck_assert_int_eq(kr_msg_new(&m, channel, type, "test-session", NULL, content), 0);
    ck_assert_int_eq(kr_msg_send(k->fd, m), 0);
    char *id = strdup(kr_msg_id(m));
    json_decref(m);
    return id;
}

json_t *kt_recv(kt_kernel *k, double timeout_s)
{
    struct pollfd pf = {.fd = k->fd, .events = POLLIN};
    int rc = poll(&pf, 1, (int)(timeout_s * 1000));
    ck_assert_msg(rc == 1, "no message from the kernel within %.0f s", timeout_s);
    json_t *m;
    ck_assert_int_eq(kr_msg_recv(&m, k->fd, KR_FRAME_MAX), 0);
    return m;
}

static const char *parent_id(json_t *m)
{
    const char *s = json_string_value(json_object_get(json_object_get(m, "parent_header"),
                                                      "msg_id"));
    return s ? s : "";
}

json_t *kt_until_idle(kt_kernel *k, const char *id)
{
    json_t *all = json_array();
    for (;;) {
        json_t *m = kt_recv(k, 60);
        json_array_append(all, m);
        int done = strcmp(kr_msg_type(m), "status") == 0 &&
                   strcmp(json_string_value(json_object_get(json_object_get(m, "content"),
                                                            "execution_state")), "idle") == 0 &&
                   strcmp(parent_id(m), id) == 0;
        json_decref(m);
        if (done)
            return all;
    }
}

json_t *kt_execute(kt_kernel *k, const char *code)
{
    char *id = kt_send(k, "shell", "execute_request",
                       json_pack("{s:s, s:b, s:b, s:{}, s:b}", "code", code, "silent", 0,
                                 "store_history", 1, "user_expressions", "allow_stdin", 1));
    json_t *all = kt_until_idle(k, id);
    free(id);
    return all;
}

json_t *kt_find(json_t *msgs, const char *type, int nth)
{
    size_t i;
    json_t *m;
    json_array_foreach(msgs, i, m) {
        if (strcmp(kr_msg_type(m), type) == 0 && nth-- == 0)
            return m;
    }
    return NULL;
}

int kt_kernel_wait(kt_kernel *k, double timeout_s)
{
    double deadline = now_s() + timeout_s;
    int st;
    for (;;) {
        pid_t r = waitpid(k->pid, &st, WNOHANG);
        if (r == k->pid) {
            k->pid = 0;
            return decode_status(st);
        }
        if (now_s() > deadline) {
            kill(k->pid, SIGKILL);
            waitpid(k->pid, &st, 0);
            k->pid = 0;
            return -1;
        }
        usleep(20000);
    }
}

void kt_kernel_stop(kt_kernel *k)
{
    if (k->fd >= 0)
        close(k->fd);
    k->fd = -1;
    if (k->pid > 0)
        kt_kernel_wait(k, 10);
}
