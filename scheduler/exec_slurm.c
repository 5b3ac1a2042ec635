/*
 * exec_slurm.c - the executor "slurm": jobs run on a Slurm cluster, submitted
 * through slurmrestd's REST API (libcurl), watched by polling, cancelled
 * with DELETE, and taken back after a restart of the server (their Slurm
 * job id is jobs.exec_ref). README.md "Executor slurm" is the user's view.
 *
 * The requests and the parsing of the answers are slurm_api.c's (pure, and
 * contract-tested per API version); this file is the I/O around them.
 *
 * Where things are: the job's directory DATA/jobs/<id> must be the same
 * path on the nodes (a shared file system). Slurm runs the batch script with
 * its working directory DATA/jobs/<id>/work and appends stdout and stderr to
 * DATA/jobs/<id>/log (open_mode append), the file the log routes already
 * stream; the scheduler's own notices are appended to the same file. A job
 * of N ranks runs `srun` with N tasks, each the ranks' supervisor (ranks.c)
 * in "slurm" mode: one rank per task, Paddle's environment derived from
 * SLURM_PROCID / SLURM_NTASKS / SLURM_LOCALID / SLURM_STEP_NODELIST, lines
 * prefixed "[rank i] "; --kill-on-bad-exit ends every rank when one fails.
 * An interactive kernel's job runs eddy-kernel, which dials back to a
 * socket of the kernel's own ("interactive kernels" below).
 *
 * Calls come from the scheduler thread (or a cancel) under s->mu, so one
 * curl handle serves them all; each request is bounded (SLURM_TIMEOUT_MS).
 */
#include "sched.h"
#include "sched_int.h"
#include "slurm_api.h"

#include "ed_crypto.h"
#include "ed_error.h"
#include "ed_json.h"
#include "ed_log.h"
#include "ed_time.h"

#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#define SLURM_TIMEOUT_MS   5000
#define SLURM_POLL_MS      250        /* a running job's state at most this often */
#define SLURM_RESP_MAX     (8 << 20)  /* an answer larger than this is refused */
#define RANK_BASE_PORT     6170
#define KERNEL_TOKEN_LEN   43         /* [A-Za-z0-9]: 256 bits */
#define KERNEL_HELLO_MAX   1024       /* the kernel's first frame (the token) */
#define KERNEL_HELLO_MS    5000       /* a connection has this long to send it */

typedef struct slurm_conn {
    CURL *curl;
    char  base[300];           /* "http://host:port" (or "http://localhost" over a socket) */
    char  sock[256];           /* unix socket path, "" for TCP */
    char  ver[16];             /* the API version in use */
    char  cb_host[256];        /* kernels dial back to this address (EDDY_SLURM_CALLBACK_HOST) */
    const sched_config *cfg;
    sched *s;
} slurm_conn;

typedef struct slurm_run {
    slurm_conn *c;
    int64_t     job_id;
    int64_t     polled_at;     /* ms */
    bool        signalled;     /* Eddy asked it to stop (a CANCELLED end is ours) */
    int         errors;        /* consecutive failed polls */
    /* an interactive kernel: eddy-kernel dials back (kernel_accept) */
    int         lfd;           /* listening socket until it has, else -1 */
    int         cfd;           /* a connection whose first frame is awaited, else -1 */
    int64_t     cfd_until;     /* ms: when that connection is given up */
    size_t      hlen;
    unsigned char hello[4 + KERNEL_HELLO_MAX];
    char        token[KERNEL_TOKEN_LEN + 1];
} slurm_run;

typedef struct buf {
    char  *p;
    size_t n, cap;
    bool   over;
} buf;

static size_t on_data(char *ptr, size_t size, size_t nmemb, void *arg)
{
    buf *b = arg;
    size_t len = size * nmemb;

    if (b->n + len + 1 > SLURM_RESP_MAX) {
        b->over = true;
        return 0;
    }
    if (b->n + len + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        char *np;
        while (cap < b->n + len + 1)
            cap *= 2;
        if ((np = realloc(b->p, cap)) == NULL)
            return 0;
        b->p = np;
        b->cap = cap;
    }
    memcpy(b->p + b->n, ptr, len);
    b->n += len;
    b->p[b->n] = '\0';
    return len;
}

/* One request. *out (malloc'd, NUL-terminated) gets the body whatever the
 * status (slurmrestd explains errors in JSON); ED_EIO when it cannot be
 * reached. */
static int http(char **out, size_t *out_len, long *status, slurm_conn *c, const char *method, const char *path,
                const char *body)
{
    struct curl_slist *h = NULL;
    char url[700], hdr[2200];
    buf b = {0};
    CURLcode rc;

    *out = NULL;
    *out_len = 0;
    *status = 0;
    snprintf(url, sizeof(url), "%s%s", c->base, path);
    curl_easy_reset(c->curl);
    curl_easy_setopt(c->curl, CURLOPT_URL, url);
    curl_easy_setopt(c->curl, CURLOPT_CUSTOMREQUEST, method);
    curl_easy_setopt(c->curl, CURLOPT_TIMEOUT_MS, (long)SLURM_TIMEOUT_MS);
    curl_easy_setopt(c->curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c->curl, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(c->curl, CURLOPT_WRITEDATA, &b);
    curl_easy_setopt(c->curl, CURLOPT_PROTOCOLS_STR, "http,https");
    if (c->sock[0])
        curl_easy_setopt(c->curl, CURLOPT_UNIX_SOCKET_PATH, c->sock);
    if (body) {
        curl_easy_setopt(c->curl, CURLOPT_POSTFIELDS, body);
        h = curl_slist_append(h, "Content-Type: application/json");
    }
    if (c->cfg->slurm_token_file[0]) {
        /* read each time: a token is renewed by rewriting the file */
        char tok[2048] = "";
        FILE *f = fopen(c->cfg->slurm_token_file, "re");
        size_t n = f ? fread(tok, 1, sizeof(tok) - 1, f) : 0;
        if (f)
            fclose(f);
        tok[n] = '\0';
        tok[strcspn(tok, "\r\n")] = '\0';
        if (tok[0] == '\0') {
            curl_slist_free_all(h);
            return ed_error_set(ED_EIO, "the Slurm token file %s is empty or unreadable", c->cfg->slurm_token_file);
        }
        snprintf(hdr, sizeof(hdr), "X-SLURM-USER-TOKEN: %s", tok);
        h = curl_slist_append(h, hdr);
        snprintf(hdr, sizeof(hdr), "X-SLURM-USER-NAME: %s", c->cfg->slurm_user);
        h = curl_slist_append(h, hdr);
    }
    if (h)
        curl_easy_setopt(c->curl, CURLOPT_HTTPHEADER, h);
    rc = curl_easy_perform(c->curl);
    curl_slist_free_all(h);
    if (rc != CURLE_OK) {
        free(b.p);
        return ed_error_set(ED_EIO, "slurmrestd at %s%s%s: %s", c->sock[0] ? "unix:" : "", c->sock[0] ? c->sock : c->base,
                            b.over ? " (answer too large)" : "", curl_easy_strerror(rc));
    }
    curl_easy_getinfo(c->curl, CURLINFO_RESPONSE_CODE, status);
    if (*status == 401 || *status == 403) {
        free(b.p);
        return ed_error_set(ED_EIO, "slurmrestd refused Eddy's credentials (HTTP %ld): check EDDY_SLURM_TOKEN_FILE "
                                    "and EDDY_SLURM_USER, or local auth over its socket", *status);
    }
    if (b.p == NULL && (b.p = strdup("")) == NULL)
        return ed_error_set(ED_ENOMEM, "slurmrestd answer");
    *out = b.p;
    *out_len = b.n;
    return 0;
}

/* "key=value,key=value": the value of `key` into out ("" when absent). */
static void map_lookup(char *out, size_t n, const char *map, const char *key)
{
    size_t klen = strlen(key);

    out[0] = '\0';
    for (const char *p = map; p && *p;) {
        const char *end = strchr(p, ','), *eq;
        size_t len = end ? (size_t)(end - p) : strlen(p);
        while (len && *p == ' ')
            p++, len--;
        eq = memchr(p, '=', len);
        if (eq && (size_t)(eq - p) == klen && strncmp(p, key, klen) == 0) {
            size_t vlen = len - klen - 1;
            snprintf(out, n, "%.*s", (int)(vlen < n ? vlen : n - 1), eq + 1);
            return;
        }
        p = end ? end + 1 : NULL;
    }
}

/* The entry as __main__ with line-buffered output (the log is a file). Not
 * runpy: importing it costs ~20 ms of every job's start here
 * (tests/bench/slurm_latency.sh). */
static const char RUN_PY[] = "import sys\n"
                             "for _eddy in (sys.stdout, sys.stderr):\n"
                             "    _eddy.reconfigure(line_buffering=True, write_through=False)\n"
                             "sys.argv = sys.argv[1:]\n"
                             "__file__ = sys.argv[0]\n"
                             "with open(__file__, 'rb') as _eddy:\n"
                             "    _eddy = compile(_eddy.read(), __file__, 'exec')\n"
                             "del sys\n"
                             "exec(_eddy)\n";

/* ---- interactive kernels: eddy-kernel dials back ----------------------------------
 *
 * A kernel's job runs `eddy-kernel serve --connect HOST:PORT` with a fresh
 * token in EDDY_KERNEL_TOKEN (kernel_runner/README.md "Serve mode"): HOST is
 * EDDY_SLURM_CALLBACK_HOST (an address of this server the nodes reach;
 * default 127.0.0.1, a one-node cluster on this host), PORT a listening
 * socket of this kernel's own. The first connection whose first frame holds
 * the token is handed to the kernel hook, as the local executor hands its
 * socketpair; the listener then closes. Anything else that connects is
 * closed. */

/* A listening TCP socket on `host`, any port, non-blocking: "HOST:PORT"
 * into `addr`. */
static int kernel_listen(int *lfd, char *addr, size_t n, const char *host)
{
    struct addrinfo hints, *ai = NULL;
    struct sockaddr_storage ss;
    socklen_t sl = sizeof(ss);
    char port[16];
    int fd, rc, e;

    memset(&hints, 0, sizeof(hints));
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE;
    if ((rc = getaddrinfo(host, "0", &hints, &ai)) != 0)
        return ed_error_set(ED_EINVAL, "EDDY_SLURM_CALLBACK_HOST '%.200s': %s", host, gai_strerror(rc));
    fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0 || bind(fd, ai->ai_addr, ai->ai_addrlen) < 0 || listen(fd, 4) < 0 ||
        getsockname(fd, (struct sockaddr *)&ss, &sl) < 0 ||
        getnameinfo((struct sockaddr *)&ss, sl, NULL, 0, port, sizeof(port), NI_NUMERICSERV) != 0) {
        e = errno;
        if (fd >= 0)
            close(fd);
        freeaddrinfo(ai);
        return ed_error_set(ED_EIO, "kernel callback socket on %.200s: %s", host, strerror(e));
    }
    freeaddrinfo(ai);
    snprintf(addr, n, strchr(host, ':') ? "[%s]:%s" : "%s:%s", host, port);
    *lfd = fd;
    return 0;
}

static void kernel_drop(slurm_run *sr, sched__running *r, const char *why)
{
    ed_log_warn("sched.slurm", "job %lld: a connection to the kernel's callback port %s: closed", (long long)r->id,
                why);
    close(sr->cfd);
    sr->cfd = -1;
}

/* At each poll until the kernel dialled back: take a connection, read its
 * first frame without blocking (KERNEL_HELLO_MS at most), and hand the
 * socket over when it holds the token. */
static void kernel_accept(slurm_run *sr, sched__running *r)
{
    sched *s = sr->c->s;
    int64_t now = ed_now_ms();
    json_t *h = NULL;
    const char *tok;
    int fl;

    if (sr->cfd < 0) {
        if ((sr->cfd = accept4(sr->lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK)) < 0)
            return;
        sr->hlen = 0;
        sr->cfd_until = now + KERNEL_HELLO_MS;
    }
    for (;;) {
        size_t want = 4;
        ssize_t got;
        if (sr->hlen >= 4) {
            uint32_t len = (uint32_t)sr->hello[0] << 24 | (uint32_t)sr->hello[1] << 16 |
                           (uint32_t)sr->hello[2] << 8 | sr->hello[3];
            if (len == 0 || len > KERNEL_HELLO_MAX) {
                kernel_drop(sr, r, "sent no token frame");
                return;
            }
            want = 4 + len;
            if (sr->hlen == want)
                break;
        }
        got = read(sr->cfd, sr->hello + sr->hlen, want - sr->hlen);
        if (got > 0) {
            sr->hlen += (size_t)got;
            continue;
        }
        if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
            if (now > sr->cfd_until)
                kernel_drop(sr, r, "sent no token in time");
            return;
        }
        kernel_drop(sr, r, "closed before its token");
        return;
    }
    if (ed_json_parse(&h, (const char *)sr->hello + 4, sr->hlen - 4, 2) < 0 || !json_is_object(h) ||
        (tok = json_string_value(json_object_get(h, "token"))) == NULL || strlen(tok) != KERNEL_TOKEN_LEN ||
        !ed_ct_equal(tok, sr->token, KERNEL_TOKEN_LEN)) {
        json_decref(h);
        kernel_drop(sr, r, "without the kernel's token");
        return;
    }
    json_decref(h);
    explicit_bzero(sr->token, sizeof(sr->token));
    close(sr->lfd);
    sr->lfd = -1;
    if ((fl = fcntl(sr->cfd, F_GETFL)) >= 0)
        fcntl(sr->cfd, F_SETFL, fl & ~O_NONBLOCK);    /* as the local executor's socketpair */
    sched__log_notice(r, "the kernel connected back from Slurm job %lld", (long long)sr->job_id);
    if (s->kernel_hook)
        s->kernel_hook(s->kernel_hook_arg, r->id, sr->cfd);   /* takes the fd */
    else
        close(sr->cfd);
    sr->cfd = -1;
}

#define QUOTE(s)                                                                                              \
    do {                                                                                                      \
        if (strlen(script) + 2 >= sizeof(script) || (strcat(script, " "), sched__sh_quote(script, sizeof(script), (s))) < 0) { \
            err = ed_error_set(ED_EINVAL, "the job's command line is too long for a Slurm script");          \
            goto out;                                                                                         \
        }                                                                                                     \
    } while (0)

static int slurm_launch(sched *s, sched__running *r, const sched_job_info *j, const sched_resource *cls,
                        bool egress, const char *job_dir)
{
    slurm_conn *c = s->xstate;
    slurm_run *sr = NULL;
    sched__slurm_req q;
    char script[8192], work[760], output[760], logp[760], entry[1100], paddle[512], partition[64], qos[64];
    char envb[12][800], *env[16], path[64], name[32], *body = NULL, *resp = NULL, *run = NULL, *rk = NULL;
    char kernel[512] = "", tree[760] = "", cb[300] = "", token[KERNEL_TOKEN_LEN + 1] = "";
    bool kmode = strcmp(j->entry, SCHED_KERNEL_ENTRY) == 0;
    int lfd = -1;
    const char *python = s->cfg.slurm_python[0] ? s->cfg.slurm_python : "/usr/bin/python3";
    json_t *args = NULL;
    size_t ne = 0, rlen = 0, nlen = strlen(j->entry), lr, lk;
    long status = 0;
    int64_t job_id = 0;
    int ranks = r->ranks > 0 ? r->ranks : 1, nodes = r->nodes > 0 ? r->nodes : 1, err;

    (void)egress;      /* the cluster's network policy is the cluster's */
    if (kmode) {
        /* eddy-kernel in the project's live tree (the same path on the
         * nodes), dialling back to a socket of this kernel's own */
        size_t n = strlen(j->project_id);
        int tfd;
        sched__kernel_path(kernel, sizeof(kernel), s);
        if (kernel[0] == '\0')
            return ed_error_set(ED_EUNPROC, "interactive kernels need eddy-kernel, which is not installed on "
                                            "this host");
        if (n == 0 || n > 63 ||
            strspn(j->project_id, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789") != n)
            return ed_error_set(ED_EINVAL, "project id '%.64s' is not a project's", j->project_id);
        snprintf(tree, sizeof(tree), "%s/projects/%s", s->cfg.data_dir, j->project_id);
        /* DATA/projects/<id> is the server's (users write beneath it, never
         * it): a link or a non-directory there is refused, not followed */
        if ((tfd = open(tree, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0)
            return ed_error_set(ED_ENOTFOUND, "the working tree of project %s is gone", j->project_id);
        close(tfd);
        if ((err = kernel_listen(&lfd, cb, sizeof(cb), c->cb_host)) < 0)
            return err;
        ed_random_token(token, KERNEL_TOKEN_LEN);
    }
    if (nlen > 6 && strcmp(j->entry + nlen - 6, ".ipynb") == 0)
        return ed_error_set(ED_EUNPROC, "notebook entries do not run on the Slurm executor yet: run a .py entry");
    if (ed_json_parse(&args, j->args_json, strlen(j->args_json), 2) < 0 || !json_is_array(args))
        return ed_error_set(ED_EINVAL, "job arguments are not an array of strings");
    snprintf(work, sizeof(work), "%s/work", job_dir);
    snprintf(output, sizeof(output), "%s/output", job_dir);
    snprintf(logp, sizeof(logp), "%s/log", job_dir);
    snprintf(entry, sizeof(entry), "%s/%s", work, j->entry);
    sched__paddle_dir(paddle, sizeof(paddle));

    /* the batch script: one rank runs the entry itself; several run srun,
     * one supervisor per task (ranks.c, "slurm" mode) */
    snprintf(script, sizeof(script), "#!/bin/sh\n# eddy %s %lld\n", kmode ? "kernel" : "job", (long long)j->id);
    if (kmode) {
        strcat(script, "exec");
        QUOTE(kernel);
        strcat(script, " serve --connect");
        QUOTE(cb);
        strcat(script, "\n");
        goto script_done;
    }
    if (ranks > 1) {
        char n[96];
        snprintf(n, sizeof(n), " --kill-on-bad-exit=1 --ntasks=%d --ntasks-per-node=%d", ranks, ranks / nodes);
        strcat(script, "exec srun");
        strcat(script, n);
        QUOTE(python);
        strcat(script, " -c \"$EDDY_RANKS_PY\" slurm ");
        snprintf(n, sizeof(n), "%d - --", RANK_BASE_PORT);
        strcat(script, n);
    } else {
        strcat(script, "exec");
    }
    QUOTE(python);
    strcat(script, " -c \"$EDDY_RUN_PY\"");
    QUOTE(entry);
    for (size_t i = 0; i < json_array_size(args); i++) {
        const char *a = json_string_value(json_array_get(args, i));
        if (a == NULL) {
            err = ed_error_set(ED_EINVAL, "job arguments are not an array of strings");
            goto out;
        }
        QUOTE(a);
    }
    strcat(script, "\n");
script_done:

#define ENV(...) (snprintf(envb[ne], sizeof(envb[ne]), __VA_ARGS__), env[ne] = envb[ne], ne++)
    ENV("PATH=/usr/local/bin:/usr/bin:/bin");
    ENV("HOME=%s", kmode ? job_dir : work);
    ENV("LANG=C.UTF-8");
    ENV("PYTHONUNBUFFERED=1");
    ENV("EDDY_JOB_ID=%lld", (long long)j->id);
    ENV("EDDY_OUTPUT_DIR=%s", output);
    ENV("EDDY_RUNNER=%s", kmode ? "eddy-kernel" : "python3");
    ENV("EDDY_EXECUTOR=slurm");
    if (paddle[0]) {
        ENV("PYTHONPATH=%s", paddle);
        ENV("EDDY_PYTHONPATH=%s", paddle);
    }
    if (kmode)
        ENV("EDDY_KERNEL_TOKEN=%s", token);    /* eddy-kernel removes it before user code runs */
#undef ENV
    /* the two programs, passed in the environment (no quoting) */
    lr = sizeof("EDDY_RUN_PY=") + sizeof(RUN_PY);
    lk = sizeof("EDDY_RANKS_PY=") + strlen(sched__ranks_py);
    if ((run = malloc(lr)) == NULL || (rk = malloc(lk)) == NULL) {
        err = ed_error_set(ED_ENOMEM, "Slurm job environment");
        goto out;
    }
    snprintf(run, lr, "EDDY_RUN_PY=%s", RUN_PY);
    snprintf(rk, lk, "EDDY_RANKS_PY=%s", sched__ranks_py);
    env[ne++] = run;
    env[ne++] = rk;
    env[ne] = NULL;
    map_lookup(partition, sizeof(partition), s->cfg.slurm_partitions, cls->name);
    map_lookup(qos, sizeof(qos), s->cfg.slurm_qos, r->tier);
    snprintf(name, sizeof(name), "eddy-%lld", (long long)j->id);
    memset(&q, 0, sizeof(q));
    q.name = name;
    q.partition = partition;
    q.qos = qos;
    q.cwd = kmode ? tree : work;
    q.output = logp;
    q.script = script;
    q.env = (const char *const *)env;
    q.tasks = ranks;
    q.nodes = nodes;
    q.cpus_per_task = cls->cpus > 0 ? cls->cpus : 1;
    q.gpus_per_node = cls->gpu ? r->units / nodes : 0;
    q.memory_per_node_mb = (cls->memory_mb > 0 ? cls->memory_mb : 1024) * (cls->gpu ? r->units / nodes : ranks / nodes);
    q.time_limit_min = (int)((r->end_by - r->started_at + s->cfg.stop_grace_ms + 60000 + 59999) / 60000);
    body = sched__slurm_submit_body(c->ver, &q);
    if (body == NULL) {
        err = ed_error_code();
        goto out;
    }
    if (chmod(output, 0755) < 0) {
        err = ed_error_set(ED_EIO, "cannot open %s: %s", output, strerror(errno));
        goto out;
    }
    snprintf(path, sizeof(path), "/slurm/%s/job/submit", c->ver);
    if ((err = http(&resp, &rlen, &status, c, "POST", path, body)) < 0 ||
        (err = sched__slurm_parse_submit(&job_id, c->ver, resp, rlen)) < 0)
        goto out;
    if ((sr = calloc(1, sizeof(*sr))) == NULL) {
        /* it was submitted: do not leave it running without a record */
        char del[96];
        free(resp);
        resp = NULL;
        snprintf(del, sizeof(del), "/slurm/%s/job/%lld?signal=SIGKILL", c->ver, (long long)job_id);
        http(&resp, &rlen, &status, c, "DELETE", del, NULL);
        err = ed_error_set(ED_ENOMEM, "Slurm job state");
        goto out;
    }
    sr->c = c;
    sr->job_id = job_id;
    sr->lfd = lfd;
    sr->cfd = -1;
    lfd = -1;
    memcpy(sr->token, token, sizeof(sr->token));
    r->xdata = sr;
    snprintf(r->exec_ref, sizeof(r->exec_ref), "%lld", (long long)job_id);
    if (kmode)
        sched__log_notice(r, "the kernel will connect back to %s", cb);
    sched__log_notice(r, "submitted to Slurm as job %lld (%d rank%s on %d node%s%s%s)", (long long)job_id, ranks,
                      ranks == 1 ? "" : "s", nodes, nodes == 1 ? "" : "s", partition[0] ? ", partition " : "",
                      partition);
    err = 0;
out:
    if (lfd >= 0)
        close(lfd);
    explicit_bzero(token, sizeof(token));
    explicit_bzero(envb, sizeof(envb));
    json_decref(args);
    free(body);
    free(resp);
    free(run);
    free(rk);
    return err;
}

static int slurm_poll(sched__running *r, sched__outcome *out)
{
    slurm_run *sr = r->xdata;
    sched__slurm_job sj;
    char path[96], *resp = NULL;
    size_t rlen = 0;
    long status = 0;
    int64_t now = ed_now_ms();
    int err;

    memset(out, 0, sizeof(*out));
    if (sr == NULL)
        return 1;
    if (sr->lfd >= 0)
        kernel_accept(sr, r);
    if (now - sr->polled_at < SLURM_POLL_MS)
        return 0;
    sr->polled_at = now;
    snprintf(path, sizeof(path), "/slurm/%s/job/%lld", sr->c->ver, (long long)sr->job_id);
    err = http(&resp, &rlen, &status, sr->c, "GET", path, NULL);
    if (err == 0)
        err = sched__slurm_parse_job(&sj, sr->c->ver, resp, rlen);
    free(resp);
    if (err == ED_ENOTFOUND) {
        /* purged before Eddy saw its end (a long outage): nothing to go by */
        sched__log_notice(r, "Slurm no longer knows job %lld: its outcome is lost", (long long)sr->job_id);
        out->reason = "platform_error";
        out->term_signal = SIGKILL;
        return 1;
    }
    if (err < 0) {
        /* slurmrestd or slurmctld away for a moment: keep the job, say so
         * once in a while (the job's own time limit still applies) */
        if (sr->errors++ % 40 == 0)
            ed_log_warn("sched.slurm", "job %lld (Slurm %lld): %s", (long long)r->id, (long long)sr->job_id,
                        ed_error_last());
        return 0;
    }
    sr->errors = 0;
    if (sched__slurm_outcome(out, &sj) == 0)
        return 0;
    if (sj.restarts > 0) {
        /* requeued by Slurm after a failure under it: this attempt is over;
         * what is left of the job on the cluster goes */
        char del[96], *dr = NULL;
        size_t dl = 0;
        long ds = 0;
        sched__log_notice(r, "Slurm requeued job %lld (%s, restart %d) after a node failure: this attempt failed",
                          (long long)sr->job_id, sj.state, sj.restarts);
        snprintf(del, sizeof(del), "/slurm/%s/job/%lld?signal=SIGKILL", sr->c->ver, (long long)sr->job_id);
        if (http(&dr, &dl, &ds, sr->c, "DELETE", del, NULL) < 0)
            ed_log_warn("sched.slurm", "job %lld: cancel requeued Slurm job %lld: %s", (long long)r->id,
                        (long long)sr->job_id, ed_error_last());
        free(dr);
        return 1;
    }
    if (strcmp(sj.state, "CANCELLED") == 0 && !sr->signalled) {
        /* cancelled on the cluster (an operator's scancel): the platform stopped it */
        out->reason = "platform_error";
    }
    if (out->reason || strcmp(sj.state, "COMPLETED") != 0)
        sched__log_notice(r, "Slurm job %lld ended %s%s%s", (long long)sr->job_id, sj.state,
                          sj.reason[0] && strcmp(sj.reason, "None") != 0 ? ": " : "",
                          sj.reason[0] && strcmp(sj.reason, "None") != 0 ? sj.reason : "");
    return 1;
}

static int slurm_signal(sched__running *r, int sig)
{
    slurm_run *sr = r->xdata;
    char path[128], *resp = NULL;
    size_t rlen = 0;
    long status = 0;
    int err;

    if (sr == NULL)
        return 0;
    sr->signalled = true;
    sr->polled_at = 0;      /* look again at the next tick */
    snprintf(path, sizeof(path), "/slurm/%s/job/%lld?signal=%s", sr->c->ver, (long long)sr->job_id,
             sig == SIGKILL ? "SIGKILL" : sig == SIGINT ? "SIGINT" : "SIGTERM");
    err = http(&resp, &rlen, &status, sr->c, "DELETE", path, NULL);
    if (err == 0 && status >= 300) {
        /* an ended job cannot be signalled: the next poll sees its end */
        ed_log_info("sched.slurm", "job %lld (Slurm %lld): signal: HTTP %ld %.200s", (long long)r->id,
                    (long long)sr->job_id, status, resp ? resp : "");
    }
    free(resp);
    return err == ED_EIO ? err : 0;
}

static void slurm_release(sched__running *r)
{
    slurm_run *sr = r->xdata;

    if (sr && sr->lfd >= 0)
        close(sr->lfd);
    if (sr && sr->cfd >= 0)
        close(sr->cfd);
    free(sr);
    r->xdata = NULL;
}

static int slurm_attach(sched *s, sched__running *r, const sched_job_info *j, const char *job_dir)
{
    slurm_conn *c = s->xstate;
    slurm_run *sr;
    sched__slurm_job sj;
    char path[96], *resp = NULL, *end;
    size_t rlen = 0;
    long status = 0;
    long long id = strtoll(j->exec_ref, &end, 10);
    int err;

    (void)job_dir;
    if (id <= 0 || *end)
        return ed_error_set(ED_ENOTFOUND, "job %lld: '%s' is not a Slurm job id", (long long)j->id, j->exec_ref);
    snprintf(path, sizeof(path), "/slurm/%s/job/%lld", c->ver, id);
    if ((err = http(&resp, &rlen, &status, c, "GET", path, NULL)) == 0)
        err = sched__slurm_parse_job(&sj, c->ver, resp, rlen);
    free(resp);
    if (err < 0)
        return err == ED_ENOTFOUND ? err : ed_error_set(ED_ENOTFOUND, "%s", ed_error_last());
    if (strcmp(j->entry, SCHED_KERNEL_ENTRY) == 0) {
        /* a kernel's connection ended with the server that it dialled */
        snprintf(path, sizeof(path), "/slurm/%s/job/%lld?signal=SIGKILL", c->ver, id);
        if (http(&resp, &rlen, &status, c, "DELETE", path, NULL) == 0)
            free(resp);
        return ed_error_set(ED_ENOTFOUND, "kernel job %lld: its connection ended with the server's restart "
                            "(Slurm job %lld cancelled)", (long long)j->id, id);
    }
    if ((sr = calloc(1, sizeof(*sr))) == NULL)
        return ed_error_set(ED_ENOMEM, "Slurm job state");
    sr->c = c;
    sr->job_id = id;
    sr->lfd = sr->cfd = -1;
    r->xdata = sr;
    return 0;
}

static int slurm_open(sched *s)
{
    slurm_conn *c;
    char *resp = NULL;
    size_t rlen = 0;
    long status = 0;
    const char *url = s->cfg.slurm_url;
    int err;

    if (url[0] == '\0')
        return ed_error_set(ED_EINVAL, "EDDY_EXECUTOR=slurm needs EDDY_SLURM_URL (http://host:port or unix:/path)");
    if (s->cfg.slurm_token_file[0] && s->cfg.slurm_user[0] == '\0')
        return ed_error_set(ED_EINVAL, "EDDY_SLURM_TOKEN_FILE needs EDDY_SLURM_USER (the user the token is for)");
    if ((c = calloc(1, sizeof(*c))) == NULL)
        return ed_error_set(ED_ENOMEM, "Slurm executor");
    c->cfg = &s->cfg;
    c->s = s;
    {
        const char *cb = getenv("EDDY_SLURM_CALLBACK_HOST");
        snprintf(c->cb_host, sizeof(c->cb_host), "%s", cb && cb[0] ? cb : "127.0.0.1");
    }
    if (strncmp(url, "unix:", 5) == 0) {
        snprintf(c->sock, sizeof(c->sock), "%s", url + 5);
        snprintf(c->base, sizeof(c->base), "http://localhost");
    } else if (strncmp(url, "http://", 7) == 0 || strncmp(url, "https://", 8) == 0) {
        snprintf(c->base, sizeof(c->base), "%s", url);
        if (c->base[0] && c->base[strlen(c->base) - 1] == '/')
            c->base[strlen(c->base) - 1] = '\0';
    } else {
        free(c);
        return ed_error_set(ED_EINVAL, "EDDY_SLURM_URL '%.200s' is neither http(s)://host:port nor unix:/path", url);
    }
    curl_global_init(CURL_GLOBAL_DEFAULT);
    if ((c->curl = curl_easy_init()) == NULL) {
        free(c);
        return ed_error_set(ED_ENOMEM, "curl");
    }
    /* which API versions it offers: /openapi/v3 (22.05 on), else /openapi */
    err = http(&resp, &rlen, &status, c, "GET", "/openapi/v3", NULL);
    if (err == 0 && status == 404) {
        free(resp);
        resp = NULL;
        err = http(&resp, &rlen, &status, c, "GET", "/openapi", NULL);
    }
    if (err == 0)
        err = sched__slurm_pick(c->ver, sizeof(c->ver), resp, rlen, s->cfg.slurm_api);
    free(resp);
    if (err < 0) {
        curl_easy_cleanup(c->curl);
        free(c);
        return err;
    }
    s->xstate = c;
    ed_log_info("sched.slurm", "executor slurm: slurmrestd at %s%s, API %s, %s auth", c->sock[0] ? "unix:" : "",
                c->sock[0] ? c->sock : c->base, c->ver, s->cfg.slurm_token_file[0] ? "JWT" : "local");
    return 0;
}

static void slurm_close(sched *s)
{
    slurm_conn *c = s->xstate;

    if (c == NULL)
        return;
    curl_easy_cleanup(c->curl);
    free(c);
    s->xstate = NULL;
}

const sched__executor sched__exec_slurm = {"slurm",       slurm_launch, slurm_poll, slurm_signal, slurm_release,
                                           slurm_attach,  slurm_open,   slurm_close};
